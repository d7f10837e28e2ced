//! The DevCluster and DevMachine controllers against a real management plane (a Corral API
//! server with the core and Dev* CRDs), with the in-process cloud.
//!
//! The core controllers are not running: each test plays their part where the provider
//! depends on it (owner references, the Cluster's `infrastructureProvisioned`, the Machine's
//! bootstrap data), so these tests exercise the provider's side of the contract only.

use std::sync::Arc;

use corral_cloud::{Cloud, InProcessCloud};
use corral_infra_inmemory::api::{DevCluster, DevMachine};
use corral_testenv::TestEnv;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use super::{eventually, node_ready};

const NAMESPACE: &str = "default";

/// A management plane with the CRDs installed and the provider's controllers running.
struct Plane {
    env: TestEnv,
    cloud: Arc<InProcessCloud>,
    controllers: Controllers,
}

/// The provider's controllers, running until stopped or dropped.
struct Controllers {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Controllers {
    fn start(client: kube::Client, cloud: Arc<InProcessCloud>) -> Controllers {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(corral_infra_inmemory::run(client, cloud, async move {
            let _ = stopped.await;
        }));
        Controllers { stop, task }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

impl Plane {
    async fn start() -> Plane {
        Plane::with_cloud(Arc::new(InProcessCloud::new())).await
    }

    /// A management plane using `cloud`, which other planes may use too.
    async fn with_cloud(cloud: Arc<InProcessCloud>) -> Plane {
        let env = TestEnv::start().await;
        let crds: Vec<Value> = corral_api::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).unwrap())
            .chain(
                corral_infra_inmemory::crds()
                    .into_iter()
                    .map(|crd| serde_json::to_value(crd).unwrap()),
            )
            .collect();
        env.install_crds(&crds).await;
        let controllers = Controllers::start(env.client.clone(), cloud.clone());
        Plane {
            env,
            cloud,
            controllers,
        }
    }

    /// Stops the controllers and starts them again with `cloud`, as a restart of the
    /// management plane with its cloud does.
    async fn restart(self, cloud: Arc<InProcessCloud>) -> Plane {
        self.controllers.stop().await;
        let controllers = Controllers::start(self.env.client.clone(), cloud.clone());
        Plane {
            env: self.env,
            cloud,
            controllers,
        }
    }

    fn api(&self, kind: &str) -> Api<DynamicObject> {
        let (group, version, plural) = match kind {
            "Cluster" => ("cluster.x-k8s.io", "v1beta2", "clusters"),
            "Machine" => ("cluster.x-k8s.io", "v1beta2", "machines"),
            "DevCluster" => ("infrastructure.cluster.x-k8s.io", "v1beta2", "devclusters"),
            "DevMachine" => ("infrastructure.cluster.x-k8s.io", "v1beta2", "devmachines"),
            other => panic!("no API for {other}"),
        };
        let resource = kube::api::ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind: kind.into(),
            plural: plural.into(),
        };
        Api::namespaced_with(self.env.client.clone(), NAMESPACE, &resource)
    }

    async fn create(&self, object: Value) -> DynamicObject {
        let kind = object["kind"].as_str().unwrap().to_string();
        let object: DynamicObject = serde_json::from_value(object).unwrap();
        self.api(&kind)
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|error| panic!("creating a {kind}: {error}"))
    }

    async fn patch(&self, kind: &str, name: &str, patch: Value) {
        self.api(kind)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    async fn patch_status(&self, kind: &str, name: &str, patch: Value) {
        self.api(kind)
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    fn dev_clusters(&self) -> Api<DevCluster> {
        Api::namespaced(self.env.client.clone(), NAMESPACE)
    }

    fn dev_machines(&self) -> Api<DevMachine> {
        Api::namespaced(self.env.client.clone(), NAMESPACE)
    }

    /// A Cluster and its DevCluster, owned by it as the Cluster controller would make it.
    async fn cluster(&self, name: &str, in_memory: Value) {
        let cluster = self
            .create(json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "Cluster",
                "metadata": { "name": name },
                "spec": {
                    "infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "DevCluster",
                        "name": name,
                    },
                },
            }))
            .await;
        self.create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "DevCluster",
            "metadata": {
                "name": name,
                "labels": { "cluster.x-k8s.io/cluster-name": name },
                "ownerReferences": [owner(&cluster, "Cluster")],
            },
            "spec": { "backend": { "inMemory": in_memory } },
        }))
        .await;
    }

    /// Waits for the DevCluster to be provisioned, then marks the Cluster's infrastructure
    /// provisioned, as the Cluster controller would.
    async fn provisioned_cluster(&self, name: &str) -> DevCluster {
        let dev_cluster = eventually("the DevCluster to be provisioned", || async {
            let dev_cluster = self.dev_clusters().get(name).await.unwrap();
            let provisioned = dev_cluster.status.as_ref()?.initialization.provisioned;
            (provisioned == Some(true)).then_some(dev_cluster)
        })
        .await;
        self.patch_status(
            "Cluster",
            name,
            json!({ "status": { "initialization": { "infrastructureProvisioned": true } } }),
        )
        .await;
        dev_cluster
    }

    /// A Machine of the cluster and its DevMachine, owned by it as the Machine controller would
    /// make it.
    async fn machine(&self, cluster: &str, name: &str, options: MachineOptions) {
        let mut labels = json!({ "cluster.x-k8s.io/cluster-name": cluster });
        if options.control_plane {
            labels["cluster.x-k8s.io/control-plane"] = json!("");
        }
        let mut bootstrap = json!({ "dataSecretName": format!("{name}-bootstrap") });
        if !options.bootstrap_data {
            bootstrap = json!({
                "configRef": {
                    "apiGroup": "bootstrap.cluster.x-k8s.io",
                    "kind": "KubeadmConfig",
                    "name": name,
                },
            });
        }
        let mut spec = json!({
            "clusterName": cluster,
            "version": "v1.36.0",
            "bootstrap": bootstrap,
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "DevMachine",
                "name": name,
            },
        });
        if let Some(failure_domain) = &options.failure_domain {
            spec["failureDomain"] = json!(failure_domain);
        }
        let machine = self
            .create(json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "Machine",
                "metadata": { "name": name, "labels": labels },
                "spec": spec,
            }))
            .await;
        self.create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "DevMachine",
            "metadata": {
                "name": name,
                "labels": { "cluster.x-k8s.io/cluster-name": cluster },
                "annotations": options.annotations,
                "ownerReferences": [owner(&machine, "Machine")],
            },
            "spec": { "backend": { "inMemory": options.in_memory } },
        }))
        .await;
    }

    /// A client for the workload cluster, from its kubeconfig Secret.
    async fn workload_client(&self, cluster: &str) -> kube::Client {
        let secrets: Api<Secret> = Api::namespaced(self.env.client.clone(), NAMESPACE);
        let name = format!("{cluster}-kubeconfig");
        let secret = eventually("the kubeconfig Secret", || async {
            secrets.get_opt(&name).await.unwrap()
        })
        .await;
        let value = &secret.data.unwrap()["value"].0;
        let kubeconfig = Kubeconfig::from_yaml(std::str::from_utf8(value).unwrap()).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        kube::Client::try_from(config).unwrap()
    }
}

struct MachineOptions {
    control_plane: bool,
    bootstrap_data: bool,
    failure_domain: Option<String>,
    annotations: Value,
    in_memory: Value,
}

impl Default for MachineOptions {
    fn default() -> Self {
        MachineOptions {
            control_plane: false,
            bootstrap_data: true,
            failure_domain: None,
            annotations: json!({}),
            in_memory: json!({}),
        }
    }
}

fn owner(object: &DynamicObject, kind: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": kind,
        "name": object.metadata.name,
        "uid": object.metadata.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The (status, reason) of a condition.
fn condition(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> Option<(String, String)> {
    conditions
        .iter()
        .find(|condition| condition.type_ == type_)
        .map(|condition| (condition.status.clone(), condition.reason.clone()))
}

fn machine_condition(dev_machine: &DevMachine, type_: &str) -> Option<(String, String)> {
    condition(&dev_machine.status.as_ref()?.conditions, type_)
}

fn is(status: &str, reason: &str) -> Option<(String, String)> {
    Some((status.to_string(), reason.to_string()))
}

#[tokio::test]
async fn a_dev_cluster_gets_a_simulated_endpoint_and_a_kubeconfig_secret_that_reaches_it() {
    let plane = Plane::start().await;
    plane
        .cluster(
            "dev",
            json!({ "failureDomains": [{ "name": "zone-a", "controlPlane": true }, { "name": "zone-b" }] }),
        )
        .await;
    let dev_cluster = plane.provisioned_cluster("dev").await;

    let endpoint = eventually("the control plane endpoint", || async {
        let dev_cluster = plane.dev_clusters().get("dev").await.unwrap();
        dev_cluster
            .spec
            .control_plane_endpoint
            .is_valid()
            .then_some(dev_cluster.spec.control_plane_endpoint)
    })
    .await;
    assert_eq!(endpoint.host.as_deref(), Some("127.0.0.1"));
    let status = dev_cluster.status.unwrap();
    assert_eq!(condition(&status.conditions, "Ready"), is("True", "Ready"));
    assert_eq!(
        condition(&status.conditions, "Paused"),
        is("False", "NotPaused")
    );
    let domains: Vec<&str> = status
        .failure_domains
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(domains, ["zone-a", "zone-b"]);
    assert!(
        dev_cluster
            .metadata
            .finalizers
            .unwrap()
            .contains(&"dockercluster.infrastructure.cluster.x-k8s.io".to_string())
    );

    // The kubeconfig Secret, in upstream's form, reaches the simulated workload cluster.
    let client = plane.workload_client("dev").await;
    let secret = Api::<Secret>::namespaced(plane.env.client.clone(), NAMESPACE)
        .get("dev-kubeconfig")
        .await
        .unwrap();
    assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
    assert_eq!(
        secret.metadata.labels.unwrap()["cluster.x-k8s.io/cluster-name"],
        "dev"
    );
    let owner = &secret.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Cluster", "dev")
    );
    let kubeconfig = String::from_utf8(secret.data.unwrap()["value"].0.clone()).unwrap();
    assert!(
        kubeconfig.contains(&format!(
            "server: http://127.0.0.1:{}",
            endpoint.port.unwrap()
        )),
        "{kubeconfig}"
    );
    let nodes: Api<Node> = Api::all(client);
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(
        plane.cloud.get_vm(&vm_key("dev", "none")).await.unwrap(),
        None
    );
}

fn vm_key(cluster: &str, name: &str) -> corral_cloud::VmKey {
    corral_cloud::VmKey {
        cluster: corral_cloud::ClusterKey {
            namespace: NAMESPACE.into(),
            name: cluster.into(),
        },
        name: name.into(),
    }
}

#[tokio::test]
async fn a_dev_machine_boots_and_its_node_registers_ready_with_its_provider_id() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    // Startup durations are honoured: the steps take time, and complete (no timing asserts).
    let step = json!({ "provisioning": { "startupDuration": "300ms", "startupJitter": "0.2" } });
    plane
        .machine(
            "dev",
            "worker-0",
            MachineOptions {
                failure_domain: Some("zone-b".into()),
                in_memory: json!({ "vm": step, "node": step }),
                ..Default::default()
            },
        )
        .await;

    let dev_machine = eventually("the DevMachine to be Ready", || async {
        let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
        (machine_condition(&dev_machine, "Ready") == is("True", "Ready")).then_some(dev_machine)
    })
    .await;
    assert_eq!(
        dev_machine.spec.provider_id.as_deref(),
        Some("in-memory://worker-0")
    );
    let status = dev_machine.status.as_ref().unwrap();
    assert_eq!(status.initialization.provisioned, Some(true));
    assert_eq!(status.failure_domain.as_deref(), Some("zone-b"));
    let address_types: Vec<String> = status
        .addresses
        .iter()
        .map(|address| {
            serde_json::to_value(address.type_)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(address_types, ["InternalIP", "Hostname"]);
    assert_eq!(
        machine_condition(&dev_machine, "VMProvisioned"),
        is("True", "Provisioned")
    );
    assert_eq!(
        machine_condition(&dev_machine, "NodeProvisioned"),
        is("True", "Provisioned")
    );
    assert_eq!(machine_condition(&dev_machine, "EtcdProvisioned"), None);

    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    let node = nodes.get("worker-0").await.unwrap();
    assert_eq!(
        node.spec.as_ref().unwrap().provider_id.as_deref(),
        Some("in-memory://worker-0")
    );
    assert_eq!(node_ready(&node).as_deref(), Some("True"));
}

#[tokio::test]
async fn control_plane_machines_also_start_etcd_and_the_api_server() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    plane
        .machine(
            "dev",
            "cp-0",
            MachineOptions {
                control_plane: true,
                ..Default::default()
            },
        )
        .await;
    let dev_machine = eventually("the DevMachine to be Ready", || async {
        let dev_machine = plane.dev_machines().get("cp-0").await.unwrap();
        (machine_condition(&dev_machine, "Ready") == is("True", "Ready")).then_some(dev_machine)
    })
    .await;
    assert_eq!(
        machine_condition(&dev_machine, "EtcdProvisioned"),
        is("True", "Provisioned")
    );
    assert_eq!(
        machine_condition(&dev_machine, "APIServerProvisioned"),
        is("True", "Provisioned")
    );
    let client = plane.workload_client("dev").await;
    let node = Api::<Node>::all(client.clone()).get("cp-0").await.unwrap();
    assert!(
        node.metadata
            .labels
            .unwrap()
            .contains_key("node-role.kubernetes.io/control-plane")
    );
    let pods: Api<Pod> = Api::namespaced(client, "kube-system");
    let names: Vec<String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|pod| pod.metadata.name.unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "etcd-cp-0",
            "kube-apiserver-cp-0",
            "kube-controller-manager-cp-0",
            "kube-scheduler-cp-0"
        ]
    );
}

#[tokio::test]
async fn a_dev_machine_waits_for_the_cluster_infrastructure_and_the_bootstrap_data() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane
        .machine(
            "dev",
            "worker-0",
            MachineOptions {
                bootstrap_data: false,
                ..Default::default()
            },
        )
        .await;
    let waiting_for = |reason: &'static str| {
        let plane = &plane;
        move || async move {
            let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
            (machine_condition(&dev_machine, "VMProvisioned") == is("False", reason))
                .then_some(dev_machine)
        }
    };
    let waiting = eventually(
        "the DevMachine to wait for the cluster's infrastructure",
        waiting_for("WaitingForClusterInfrastructureReady"),
    )
    .await;
    assert_eq!(machine_condition(&waiting, "Ready").unwrap().0, "False");
    // Nothing exists in the cloud yet, so nothing for a finalizer to guard.
    assert_eq!(waiting.finalizers(), &[] as &[String]);

    plane.provisioned_cluster("dev").await;
    // A worker without bootstrap data waits for the control plane first (upstream's reason).
    eventually(
        "the DevMachine to wait for the control plane",
        waiting_for("WaitingForControlPlaneInitialized"),
    )
    .await;
    plane
        .patch_status(
            "Cluster",
            "dev",
            json!({ "status": { "initialization": { "controlPlaneInitialized": true } } }),
        )
        .await;
    eventually(
        "the DevMachine to wait for bootstrap data",
        waiting_for("WaitingForBootstrapData"),
    )
    .await;
    assert!(
        plane
            .cloud
            .get_vm(&vm_key("dev", "worker-0"))
            .await
            .unwrap()
            .is_none()
    );

    plane
        .patch(
            "Machine",
            "worker-0",
            json!({ "spec": { "bootstrap": { "dataSecretName": "worker-0-bootstrap" } } }),
        )
        .await;
    eventually("the DevMachine to be provisioned", || async {
        let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
        (dev_machine.status?.initialization.provisioned == Some(true)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn fail_boot_holds_the_vm_down_until_the_annotation_goes() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    plane
        .machine(
            "dev",
            "worker-0",
            MachineOptions {
                annotations: json!({ "inmemory.infrastructure.cluster.x-k8s.io/fail-boot": "true" }),
                ..Default::default()
            },
        )
        .await;
    let failed = eventually("the VM to fail to boot", || async {
        let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
        (machine_condition(&dev_machine, "VMProvisioned") == is("False", "BootFailed"))
            .then_some(dev_machine)
    })
    .await;
    let status = failed.status.as_ref().unwrap();
    assert_eq!(status.initialization.provisioned, None);
    assert_eq!(failed.spec.provider_id, None);
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "False");
    assert!(ready.message.contains("fail-boot"), "{}", ready.message);
    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    assert!(nodes.get_opt("worker-0").await.unwrap().is_none());

    plane
        .patch(
            "DevMachine",
            "worker-0",
            json!({ "metadata": { "annotations": { "inmemory.infrastructure.cluster.x-k8s.io/fail-boot": null } } }),
        )
        .await;
    eventually("the Node to register", || async {
        let node = nodes.get_opt("worker-0").await.unwrap()?;
        (node_ready(&node)? == "True").then_some(())
    })
    .await;
}

#[tokio::test]
async fn node_not_ready_turns_the_node_not_ready_until_the_annotation_goes() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    plane
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    let ready_is = |status: &'static str| {
        let nodes = &nodes;
        move || async move {
            let node = nodes.get_opt("worker-0").await.unwrap()?;
            (node_ready(&node)? == status).then_some(())
        }
    };
    eventually("the Node to be Ready", ready_is("True")).await;

    let annotation = "inmemory.infrastructure.cluster.x-k8s.io/node-not-ready";
    plane
        .patch(
            "DevMachine",
            "worker-0",
            json!({ "metadata": { "annotations": { annotation: "true" } } }),
        )
        .await;
    eventually("the Node to be NotReady", ready_is("False")).await;
    plane
        .patch(
            "DevMachine",
            "worker-0",
            json!({ "metadata": { "annotations": { annotation: null } } }),
        )
        .await;
    eventually("the Node to be Ready again", ready_is("True")).await;
}

#[tokio::test]
async fn deleting_a_dev_machine_removes_its_vm_and_node() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    plane
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    eventually("the Node to register", || async {
        nodes.get_opt("worker-0").await.unwrap()
    })
    .await;
    let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
    assert!(
        dev_machine
            .metadata
            .finalizers
            .unwrap()
            .contains(&"dockermachine.infrastructure.cluster.x-k8s.io".to_string())
    );

    plane
        .dev_machines()
        .delete("worker-0", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the DevMachine to be gone", || async {
        plane
            .dev_machines()
            .get_opt("worker-0")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(nodes.get_opt("worker-0").await.unwrap().is_none());
    assert!(
        plane
            .cloud
            .get_vm(&vm_key("dev", "worker-0"))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_dev_machine_deleted_by_a_move_keeps_its_vm_and_node() {
    // `corral move` marks what it deletes at the source with delete-for-move: the VM and its
    // Node stay, for the target management plane to take over.
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    plane
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    eventually("the Node to register", || async {
        nodes.get_opt("worker-0").await.unwrap()
    })
    .await;
    plane
        .patch(
            "DevMachine",
            "worker-0",
            json!({ "metadata": { "annotations": {
                "clusterctl.cluster.x-k8s.io/delete-for-move": ""
            } } }),
        )
        .await;
    plane
        .dev_machines()
        .delete("worker-0", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the DevMachine to be gone", || async {
        plane
            .dev_machines()
            .get_opt("worker-0")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(nodes.get_opt("worker-0").await.unwrap().is_some());
    assert!(
        plane
            .cloud
            .get_vm(&vm_key("dev", "worker-0"))
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn deleting_a_dev_cluster_stops_its_workload_cluster() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    nodes.list(&ListParams::default()).await.unwrap();

    plane
        .dev_clusters()
        .delete("dev", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the DevCluster to be gone", || async {
        plane
            .dev_clusters()
            .get_opt("dev")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        nodes.list(&ListParams::default()).await.is_err(),
        "the simulated endpoint no longer answers"
    );
}

#[tokio::test]
async fn a_paused_cluster_is_left_alone_until_it_resumes() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    plane
        .patch("Cluster", "dev", json!({ "spec": { "paused": true } }))
        .await;
    plane
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    let paused = eventually("the DevMachine to be paused", || async {
        let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
        (machine_condition(&dev_machine, "Paused") == is("True", "Paused")).then_some(dev_machine)
    })
    .await;
    let status = paused.status.unwrap();
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Paused")
        .unwrap();
    assert_eq!(condition.message, "Cluster spec.paused is set to true");
    assert!(
        plane
            .cloud
            .get_vm(&vm_key("dev", "worker-0"))
            .await
            .unwrap()
            .is_none()
    );

    plane
        .patch("Cluster", "dev", json!({ "spec": { "paused": null } }))
        .await;
    eventually("the DevMachine to be provisioned", || async {
        let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
        let status = dev_machine.status.as_ref()?;
        (status.initialization.provisioned == Some(true)
            && machine_condition(&dev_machine, "Paused") == is("False", "NotPaused"))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_second_management_plane_takes_over_the_same_vms_as_a_move_needs() {
    // Two management planes share one cloud, as after `corral move`: the target's objects find
    // the endpoint and VMs the source created, by name, and nothing boots again.
    let cloud = Arc::new(InProcessCloud::new());
    let source = Plane::with_cloud(cloud.clone()).await;
    source.cluster("dev", json!({})).await;
    source.provisioned_cluster("dev").await;
    source
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    let nodes: Api<Node> = Api::all(source.workload_client("dev").await);
    let node = eventually("the Node to register", || async {
        nodes.get_opt("worker-0").await.unwrap()
    })
    .await;
    let booted = cloud
        .get_vm(&vm_key("dev", "worker-0"))
        .await
        .unwrap()
        .unwrap();
    let endpoint = source
        .dev_clusters()
        .get("dev")
        .await
        .unwrap()
        .spec
        .control_plane_endpoint;
    // The source stops reconciling before the target starts (clusterctl pauses the Cluster).
    source
        .patch("Cluster", "dev", json!({ "spec": { "paused": true } }))
        .await;

    let target = Plane::with_cloud(cloud.clone()).await;
    target.cluster("dev", json!({})).await;
    target
        .patch(
            "DevCluster",
            "dev",
            json!({ "spec": { "controlPlaneEndpoint": { "host": endpoint.host, "port": endpoint.port } } }),
        )
        .await;
    target.provisioned_cluster("dev").await;
    target
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    eventually("the moved DevMachine to be Ready", || async {
        let dev_machine = target.dev_machines().get("worker-0").await.unwrap();
        (machine_condition(&dev_machine, "Ready") == is("True", "Ready")).then_some(())
    })
    .await;
    let moved = target
        .dev_clusters()
        .get("dev")
        .await
        .unwrap()
        .spec
        .control_plane_endpoint;
    assert_eq!(moved, endpoint);
    let after = cloud
        .get_vm(&vm_key("dev", "worker-0"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after, booted, "the VM was not recreated");
    let nodes: Api<Node> = Api::all(target.workload_client("dev").await);
    let still = nodes.get("worker-0").await.unwrap();
    assert_eq!(
        still.metadata.uid, node.metadata.uid,
        "the Node was not registered again"
    );
}

#[tokio::test]
async fn after_a_restart_endpoints_come_back_where_they_were_and_vms_boot_again() {
    // The in-process cloud dies with the management plane; on restart the DevClusters' endpoints
    // are recreated on their recorded ports (before a new DevCluster could take one), and the
    // DevMachines' VMs are created and boot again, without duplicates.
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    plane
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    eventually("the Node to register", || async {
        nodes.get_opt("worker-0").await.unwrap()
    })
    .await;
    let endpoint = plane
        .dev_clusters()
        .get("dev")
        .await
        .unwrap()
        .spec
        .control_plane_endpoint;
    plane.cloud.shutdown().await;
    assert!(
        nodes.list(&ListParams::default()).await.is_err(),
        "the old cloud is gone"
    );

    let plane = plane.restart(Arc::new(InProcessCloud::new())).await;
    eventually("the Node to register again", || async {
        nodes.get_opt("worker-0").await.ok()?
    })
    .await;
    let after = plane
        .dev_clusters()
        .get("dev")
        .await
        .unwrap()
        .spec
        .control_plane_endpoint;
    assert_eq!(after, endpoint);
    let all = nodes.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(all.len(), 1);
    // The status is written once the boot has settled, the Node included: it may land just
    // after the Node.
    eventually("the DevMachine to be provisioned", || async {
        let dev_machine = plane.dev_machines().get("worker-0").await.unwrap();
        (dev_machine.status?.initialization.provisioned == Some(true)).then_some(())
    })
    .await;
}

/// Every version of the DevMachine `name` the API server stores from the moment of the call,
/// as its watch delivers them: one per write.
struct Versions {
    name: String,
    stream: futures::stream::BoxStream<'static, kube::Result<kube::api::WatchEvent<DevMachine>>>,
    seen: Vec<DevMachine>,
}

impl Versions {
    async fn watch(plane: &Plane, name: &str) -> Versions {
        use futures::StreamExt;
        let api = plane.dev_machines();
        let version = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let stream = api
            .watch(&kube::api::WatchParams::default(), &version)
            .await
            .unwrap()
            .boxed();
        Versions {
            name: name.into(),
            stream,
            seen: Vec::new(),
        }
    }

    /// Waits for a version for which `done` holds, and returns it.
    async fn until(&mut self, what: &str, done: impl Fn(&DevMachine) -> bool) -> DevMachine {
        use futures::StreamExt;
        use kube::api::WatchEvent;
        let wait = async {
            while let Some(event) = self.stream.next().await {
                let dev_machine = match event.unwrap() {
                    WatchEvent::Added(object) | WatchEvent::Modified(object) => object,
                    WatchEvent::Deleted(_) | WatchEvent::Bookmark(_) => continue,
                    WatchEvent::Error(error) => panic!("watching DevMachines: {error}"),
                };
                if dev_machine.metadata.name.as_deref() != Some(self.name.as_str()) {
                    continue;
                }
                self.seen.push(dev_machine.clone());
                if done(&dev_machine) {
                    return dev_machine;
                }
            }
            panic!("the DevMachine watch ended while waiting for {what}");
        };
        tokio::time::timeout(super::PATIENCE, wait)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "timed out waiting for {what}; versions: {}",
                    self.describe()
                )
            })
    }

    /// Waits for the DevMachine's deletion, and returns its last state.
    async fn until_deleted(&mut self) -> DevMachine {
        use futures::StreamExt;
        use kube::api::WatchEvent;
        let wait = async {
            while let Some(event) = self.stream.next().await {
                match event.unwrap() {
                    WatchEvent::Added(object) | WatchEvent::Modified(object)
                        if object.metadata.name.as_deref() == Some(self.name.as_str()) =>
                    {
                        self.seen.push(object);
                    }
                    WatchEvent::Deleted(object)
                        if object.metadata.name.as_deref() == Some(self.name.as_str()) =>
                    {
                        return object;
                    }
                    WatchEvent::Error(error) => panic!("watching DevMachines: {error}"),
                    _ => {}
                }
            }
            panic!("the DevMachine watch ended before its deletion");
        };
        tokio::time::timeout(super::PATIENCE, wait)
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "timed out waiting for the deletion; versions: {}",
                    self.describe()
                )
            })
    }

    /// The versions seen after the first (the test's create): the provider's writes.
    fn writes(&self) -> usize {
        self.seen.len().saturating_sub(1)
    }

    /// One line per version seen: what changed, for failure messages.
    fn describe(&self) -> String {
        self.seen
            .iter()
            .map(|dev_machine| {
                let status = dev_machine.status.clone().unwrap_or_default();
                let conditions: Vec<String> = status
                    .conditions
                    .iter()
                    .map(|c| format!("{}={}/{}@{:?}", c.type_, c.status, c.reason, c.observed_generation))
                    .collect();
                format!(
                    "\n  generation {:?} finalizers {:?} providerID {:?} provisioned {:?} addresses {} [{}]",
                    dev_machine.metadata.generation,
                    dev_machine.metadata.finalizers,
                    dev_machine.spec.provider_id,
                    status.initialization.provisioned,
                    status.addresses.len(),
                    conditions.join(" "),
                )
            })
            .collect()
    }
}

/// Whether a DevMachine's status is complete: provisioned with its providerID and addresses,
/// Ready, and every condition observed at the current generation (so a reconcile of this
/// version has nothing left to write).
fn complete(dev_machine: &DevMachine) -> bool {
    let Some(status) = dev_machine.status.as_ref() else {
        return false;
    };
    status.initialization.provisioned == Some(true)
        && dev_machine.spec.provider_id.is_some()
        && !status.addresses.is_empty()
        && machine_condition(dev_machine, "Ready") == is("True", "Ready")
        && status
            .conditions
            .iter()
            .all(|c| c.observed_generation == dev_machine.metadata.generation)
}

#[tokio::test]
async fn at_zero_delay_a_worker_dev_machine_is_provisioned_in_two_writes() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    let mut versions = Versions::watch(&plane, "worker-0").await;
    plane
        .machine(
            "dev",
            "worker-0",
            MachineOptions {
                failure_domain: Some("zone-a".into()),
                ..Default::default()
            },
        )
        .await;
    let done = versions.until("a complete status", complete).await;
    eprintln!("{} writes:{}", versions.writes(), versions.describe());

    // The finalizer with the providerID (spec and metadata are one endpoint); one status
    // write with everything already true.
    assert!(
        versions.writes() <= 2,
        "{} writes:{}",
        versions.writes(),
        versions.describe()
    );
    let first = &versions.seen[1];
    assert_eq!(
        first.spec.provider_id.as_deref(),
        Some("in-memory://worker-0"),
        "the finalizer's write carries the providerID:{}",
        versions.describe()
    );
    assert!(
        first
            .finalizers()
            .iter()
            .any(|f| f.starts_with("dockermachine"))
    );
    let status = done.status.as_ref().unwrap();
    assert_eq!(
        done.spec.provider_id.as_deref(),
        Some("in-memory://worker-0")
    );
    assert_eq!(status.failure_domain.as_deref(), Some("zone-a"));
    assert_eq!(status.addresses.len(), 2);
    assert_eq!(machine_condition(&done, "Paused"), is("False", "NotPaused"));
    assert_eq!(
        machine_condition(&done, "VMProvisioned"),
        is("True", "Provisioned")
    );
    assert_eq!(
        machine_condition(&done, "NodeProvisioned"),
        is("True", "Provisioned")
    );
    assert_eq!(machine_condition(&done, "EtcdProvisioned"), None);
    let nodes: Api<Node> = Api::all(plane.workload_client("dev").await);
    let node = nodes.get("worker-0").await.unwrap();
    assert_eq!(node_ready(&node).as_deref(), Some("True"));
}

#[tokio::test]
async fn at_zero_delay_a_control_plane_dev_machine_is_provisioned_in_two_writes() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    let mut versions = Versions::watch(&plane, "cp-0").await;
    plane
        .machine(
            "dev",
            "cp-0",
            MachineOptions {
                control_plane: true,
                ..Default::default()
            },
        )
        .await;
    let done = versions.until("a complete status", complete).await;
    eprintln!("{} writes:{}", versions.writes(), versions.describe());

    assert!(
        versions.writes() <= 2,
        "{} writes:{}",
        versions.writes(),
        versions.describe()
    );
    for step in [
        "VMProvisioned",
        "NodeProvisioned",
        "EtcdProvisioned",
        "APIServerProvisioned",
    ] {
        assert_eq!(
            machine_condition(&done, step),
            is("True", "Provisioned"),
            "{step}"
        );
    }
    let pods: Api<Pod> = Api::namespaced(plane.workload_client("dev").await, "kube-system");
    assert!(pods.get_opt("kube-apiserver-cp-0").await.unwrap().is_some());
}

#[tokio::test]
async fn with_startup_durations_each_step_a_user_can_observe_is_one_write() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    let mut versions = Versions::watch(&plane, "worker-0").await;
    let step = json!({ "provisioning": { "startupDuration": "300ms" } });
    plane
        .machine(
            "dev",
            "worker-0",
            MachineOptions {
                in_memory: json!({ "vm": step, "node": step }),
                ..Default::default()
            },
        )
        .await;
    // The VM boots: the status says so before it is up, without a providerID yet.
    let booting = versions
        .until("the VM to boot", |dev_machine| {
            machine_condition(dev_machine, "VMProvisioned")
                == is("False", "WaitingForStartupTimeout")
        })
        .await;
    assert_eq!(booting.spec.provider_id, None);
    assert_eq!(
        machine_condition(&booting, "NodeProvisioned"),
        is("False", "WaitingForVMProvisioned")
    );
    versions.until("a complete status", complete).await;
    eprintln!("{} writes:{}", versions.writes(), versions.describe());

    // Finalizer (without the providerID: the VM is not up); VM booting; providerID and VM up
    // with the Node starting; Node up. A reconcile that comes late sees two steps at once and
    // writes less.
    assert!(
        versions.writes() <= 5,
        "{} writes:{}",
        versions.writes(),
        versions.describe()
    );
}

#[tokio::test]
async fn deleting_a_provisioned_dev_machine_costs_the_provider_one_write() {
    let plane = Plane::start().await;
    plane.cluster("dev", json!({})).await;
    plane.provisioned_cluster("dev").await;
    let mut versions = Versions::watch(&plane, "worker-0").await;
    plane
        .machine("dev", "worker-0", MachineOptions::default())
        .await;
    versions.until("a complete status", complete).await;
    let before = versions.seen.len();

    plane
        .dev_machines()
        .delete("worker-0", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = versions.until_deleted().await;
    eprintln!("{} versions:{}", versions.seen.len(), versions.describe());
    // The test's delete (the deletionTimestamp), then the provider's removal of its finalizer,
    // which deletes the object: no status write on the way out.
    assert_eq!(
        versions.seen.len(),
        before + 1,
        "versions after the delete:{}",
        versions.describe()
    );
    assert!(deleted.metadata.deletion_timestamp.is_some());
    assert!(
        plane
            .cloud
            .get_vm(&vm_key("dev", "worker-0"))
            .await
            .unwrap()
            .is_none()
    );
}
