//! What a kubelet does that Cluster API watches: register the machine's Node (providerID,
//! addresses, capacity, the control plane's role label and taint, `Ready`), then heartbeat —
//! renew the Node's Lease in `kube-node-lease` every quarter of the lease's duration (40 s by
//! default, `nodeLeaseDurationSeconds`) and post the Node's status every minute
//! (`nodeStatusReportFrequency`), or at the next renewal when it does not read `Ready=True`
//! (marked Unknown while the machine was cut off) — until the agent stops.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeSpec, NodeStatus, NodeSystemInfo, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::Options;
use crate::control_plane::{ControlPlane, KubeadmFacts};

const LEASE_NAMESPACE: &str = "kube-node-lease";
const STATUS_REPORT: Duration = Duration::from_secs(60);
const FIELD_MANAGER: &str = "kubelet";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot register Node {node}: {source}")]
    Register {
        node: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write the bootstrap sentinel {path}: {source}")]
    Sentinel {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Registers the Node, writes the bootstrap sentinel, then heartbeats until the process ends.
/// `client` is the kubelet's client of the cluster, as its Node (`system:node:<name>`); a
/// control plane machine also publishes what kubeadm leaves and runs the controller manager's
/// parts, with its admin client.
pub async fn run(
    options: &Options,
    facts: &KubeadmFacts,
    client: kube::Client,
    control_plane: Option<ControlPlane>,
) -> Result<(), Error> {
    let node_name = facts.node_name.clone();
    let version = facts.kubernetes_version.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    let register = |source| Error::Register {
        node: node_name.clone(),
        source,
    };
    // What kubeadm init leaves comes first: the binding that lets `system:nodes` write their
    // Nodes is among it.
    if let Some(control_plane) = &control_plane {
        publish_control_plane(options, control_plane)
            .await
            .map_err(register)?;
    }
    let node = node(options, &node_name, version.as_deref(), facts.control_plane);
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(register(error)),
    }
    post_status(&nodes, &node_name, &node)
        .await
        .map_err(register)?;
    renew_lease(&client, &node_name, options.node_lease_duration)
        .await
        .map_err(register)?;
    let sentinel = crate::cloud_config::under_root(
        &options.root,
        corral_kubeadm::bootstrap::cloud_init::SENTINEL_PATH,
    )
    .expect("the sentinel's path is under the root");
    let write_sentinel = || -> std::io::Result<()> {
        std::fs::create_dir_all(sentinel.parent().expect("the sentinel has a directory"))?;
        std::fs::write(&sentinel, "success\n")
    };
    write_sentinel().map_err(|source| Error::Sentinel {
        path: sentinel.clone(),
        source,
    })?;
    tracing::info!(node = %node_name, "Node registered; heartbeating");
    // The control plane's controller manager, as far as Cluster API and joining machines
    // need it.
    let _controller_manager = control_plane.as_ref().map(|control_plane| {
        (
            tokio_util::task::AbortOnDropHandle::new(tokio::spawn(crate::node_lifecycle::run(
                control_plane.client.clone(),
                options.node_monitor_grace_period,
            ))),
            tokio_util::task::AbortOnDropHandle::new(tokio::spawn(crate::controller_manager::run(
                control_plane.client.clone(),
                control_plane.cluster_ca.clone(),
            ))),
        )
    });

    let lease_duration = options.node_lease_duration;
    let mut lease_timer = tokio::time::interval(lease_duration / 4);
    let mut status_timer = tokio::time::interval(STATUS_REPORT);
    loop {
        tokio::select! {
            _ = lease_timer.tick() => {
                if let Err(error) = renew_lease(&client, &node_name, lease_duration).await {
                    tracing::warn!(%error, "Renewing the Node's Lease failed");
                }
                let ready = nodes.get(&node_name).await.ok().and_then(|node| {
                    node.status?.conditions?.into_iter().find(|c| c.type_ == "Ready")
                });
                if ready.is_none_or(|ready| ready.status != "True")
                    && let Err(error) = post_status(&nodes, &node_name, &node).await
                {
                    tracing::warn!(%error, "Posting the Node's status failed");
                }
            }
            _ = status_timer.tick() => {
                if let Err(error) = post_status(&nodes, &node_name, &node).await {
                    tracing::warn!(%error, "Posting the Node's status failed");
                }
            }
        }
    }
}

/// What kubeadm leaves in the cluster (`corral_workload`): this machine's control plane
/// static Pods, running and Ready (the agent supervises etcd and the API server; the
/// controller manager's and scheduler's parts it needs are its own); and, on the machine that
/// initialized the cluster, kubeadm-config, kubelet-config, kube-proxy and CoreDNS. Objects
/// already there are left as they are.
async fn publish_control_plane(
    options: &Options,
    control_plane: &ControlPlane,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    let client = &control_plane.client;
    let facts = &control_plane.facts;
    let version = facts.kubernetes_version.as_deref();
    let namespace = corral_workload::KUBE_SYSTEM;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for component in corral_workload::COMPONENTS {
        // kubeadm's annotations saying where the member and the API server are reached.
        let annotations = match component {
            "etcd" => BTreeMap::from([(
                corral_workload::ETCD_ADVERTISE_CLIENT_URLS.to_owned(),
                format!(
                    "https://{}:2379",
                    crate::control_plane::url_host(options.address)
                ),
            )]),
            "kube-apiserver" => BTreeMap::from([(
                corral_workload::APISERVER_ADVERTISE_ADDRESS.to_owned(),
                format!(
                    "{}:{}",
                    crate::control_plane::url_host(options.address),
                    facts.bind_port
                ),
            )]),
            _ => BTreeMap::new(),
        };
        let pod =
            corral_workload::static_pod(component, &facts.node_name, version, true, annotations);
        create_or_keep(&pods, &pod).await?;
        // A Pod's status is not taken on create.
        pods.patch_status(
            &corral_workload::static_pod_name(component, &facts.node_name),
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "status": pod.status })),
        )
        .await?;
    }
    if !control_plane.initialized {
        return Ok(());
    }
    let endpoint = facts
        .control_plane_endpoint
        .clone()
        .unwrap_or_else(|| format!("{}:{}", options.address, facts.bind_port));
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    for config_map in [
        crate::control_plane::kubeadm_config(facts, &endpoint),
        corral_workload::kubelet_config(),
        corral_workload::kube_proxy_config(),
        corral_workload::coredns_config(),
    ] {
        create_or_keep(&config_maps, &config_map).await?;
    }
    let daemon_sets: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    create_or_keep(&daemon_sets, &corral_workload::kube_proxy(version)).await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    create_or_keep(&deployments, &corral_workload::coredns()).await?;
    publish_join_objects(
        client,
        &format!("https://{endpoint}"),
        &control_plane.cluster_ca.certificate_pem,
    )
    .await
}

/// kubeadm's bootstrap-token phase: cluster-info and the bindings joining machines use
/// ([`crate::cluster_info`]).
async fn publish_join_objects(
    client: &kube::Client,
    server: &str,
    ca_pem: &str,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
    fn parse<K: serde::de::DeserializeOwned>(object: serde_json::Value) -> K {
        serde_json::from_value(object).expect("cluster_info's objects are valid")
    }
    for object in crate::cluster_info::objects(server, ca_pem) {
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match object["kind"].as_str() {
            Some("ConfigMap") => {
                create_or_keep(
                    &Api::<ConfigMap>::namespaced(client.clone(), &namespace),
                    &parse(object),
                )
                .await?
            }
            Some("Role") => {
                create_or_keep(
                    &Api::<Role>::namespaced(client.clone(), &namespace),
                    &parse(object),
                )
                .await?
            }
            Some("RoleBinding") => {
                create_or_keep(
                    &Api::<RoleBinding>::namespaced(client.clone(), &namespace),
                    &parse(object),
                )
                .await?
            }
            Some("ClusterRoleBinding") => {
                create_or_keep(
                    &Api::<ClusterRoleBinding>::all(client.clone()),
                    &parse(object),
                )
                .await?
            }
            other => unreachable!("cluster_info::objects has no {other:?}"),
        }
    }
    Ok(())
}

async fn create_or_keep<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

/// The Node as the kubelet registers it.
fn node(options: &Options, name: &str, version: Option<&str>, control_plane: bool) -> Node {
    let mut labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_owned(), name.to_owned()),
        ("kubernetes.io/os".to_owned(), "linux".to_owned()),
        (
            "kubernetes.io/arch".to_owned(),
            kubernetes_arch().to_owned(),
        ),
    ]);
    let mut taints = Vec::new();
    if control_plane {
        labels.insert(
            "node-role.kubernetes.io/control-plane".into(),
            String::new(),
        );
        taints.push(Taint {
            key: "node-role.kubernetes.io/control-plane".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        });
    }
    let capacity = BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpus().to_string())),
        ("memory".to_owned(), Quantity(format!("{}Ki", memory_kib()))),
        ("pods".to_owned(), Quantity("110".into())),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            provider_id: Some(options.provider_id.clone()),
            taints: Some(taints),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".into(),
                    address: options.address.to_string(),
                },
                NodeAddress {
                    type_: "Hostname".into(),
                    address: name.to_owned(),
                },
            ]),
            allocatable: Some(capacity.clone()),
            capacity: Some(capacity),
            node_info: Some(NodeSystemInfo {
                architecture: kubernetes_arch().into(),
                kubelet_version: version.unwrap_or_default().into(),
                kube_proxy_version: version.unwrap_or_default().into(),
                operating_system: "linux".into(),
                os_image: "Corral local machine".into(),
                container_runtime_version: "corral://".into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

/// Posts the Node's status with `Ready` heartbeating now.
async fn post_status(nodes: &Api<Node>, name: &str, node: &Node) -> Result<(), kube::Error> {
    let mut status = node.status.clone().unwrap_or_default();
    status.conditions = Some(corral_workload::node_conditions(None));
    let patch = serde_json::json!({ "status": status });
    nodes
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(serde_json::json!({
                "apiVersion": "v1",
                "kind": "Node",
                "status": patch["status"],
            })),
        )
        .await
        .map(drop)
}

async fn renew_lease(
    client: &kube::Client,
    node: &str,
    duration: Duration,
) -> Result<(), kube::Error> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(node.to_owned()),
            namespace: Some(LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node.to_owned()),
            lease_duration_seconds: Some(duration.as_secs().try_into().unwrap_or(i32::MAX)),
            renew_time: Some(MicroTime(now())),
            ..Default::default()
        }),
    };
    leases
        .patch(
            node,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(lease),
        )
        .await
        .map(drop)
}

fn now() -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::now()
}

fn kubernetes_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// MemTotal of /proc/meminfo, in KiB.
fn memory_kib() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}
