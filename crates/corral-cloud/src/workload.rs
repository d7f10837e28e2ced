//! A simulated workload cluster: a Corral API server over an in-memory store on a loopback
//! port, serving Nodes, Pods, Deployments and DaemonSets besides Corral's built-in resources,
//! and the writes the simulation makes to it (the kubelet's Node, the control plane's static
//! Pods and etcd members, the objects `kubeadm init` creates; see `control_plane.rs`).

use std::sync::Arc;

use corral_apiserver::registry::workload_cluster_resources;
use corral_apiserver::{Server, ServerConfig, WatchCacheConfig};
use corral_store::memory::MemoryStore;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{
    ConfigMap, Node, NodeAddress, NodeSpec, NodeStatus, NodeSystemInfo, Pod, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::control_plane::{
    self, COMPONENTS, KUBE_SYSTEM, pod_ready_condition, static_pod, static_pod_name,
};
use super::{CloudError, ClusterKey, WorkloadEndpoint, etcd};

/// The host every workload cluster listens on.
const HOST: &str = "127.0.0.1";

/// The role label and taint of control plane Nodes (kubeadm's, which upstream's in-memory
/// backend copies).
const CONTROL_PLANE_ROLE: &str = "node-role.kubernetes.io/control-plane";

/// A running workload cluster.
pub(super) struct WorkloadCluster {
    pub key: ClusterKey,
    pub endpoint: WorkloadEndpoint,
    pub client: kube::Client,
    server: tokio::sync::Mutex<Option<Server>>,
    /// Held while a member joins etcd, so that machines starting etcd at the same moment join
    /// one etcd cluster rather than each starting its own.
    etcd_join: tokio::sync::Mutex<()>,
}

impl WorkloadCluster {
    /// Starts the cluster's API server on `port`, or on a free port. The simulation (its
    /// kubelets, etcd members and static pods) writes to it in-process
    /// (`Server::in_process`); the management plane reaches it over HTTP, with the kubeconfig,
    /// as it would a real cluster.
    pub async fn start(key: ClusterKey, port: Option<u16>) -> Result<WorkloadCluster, CloudError> {
        let address = format!("{HOST}:{}", port.unwrap_or(0));
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .map_err(|source| CloudError::Listen {
                cluster: key.clone(),
                address: address.clone(),
                source,
            })?;
        let store: corral_store::DynStore = Arc::new(MemoryStore::new());
        let server = Server::start(listener, store, server_config())
            .await
            .map_err(|error| CloudError::StartApiServer {
                cluster: key.clone(),
                message: error.to_string(),
            })?;
        for resource in workload_cluster_resources() {
            server.state().registry.insert(resource);
        }
        let port = server.local_addr().port();
        let endpoint = WorkloadEndpoint {
            host: HOST.to_string(),
            port,
            kubeconfig: kubeconfig(&key.name, &format!("http://{HOST}:{port}")),
        };
        let client = kube::Client::new(server.in_process(), "default");
        Ok(WorkloadCluster {
            key,
            endpoint,
            client,
            server: tokio::sync::Mutex::new(Some(server)),
            etcd_join: tokio::sync::Mutex::new(()),
        })
    }

    /// Stops the API server; its store goes with it.
    pub async fn shutdown(&self) {
        if let Some(server) = self.server.lock().await.take() {
            server.shutdown().await;
        }
    }

    fn error(&self, operation: String) -> impl FnOnce(kube::Error) -> CloudError + '_ {
        move |source| CloudError::Workload {
            cluster: self.key.clone(),
            operation,
            source,
        }
    }

    /// Registers the Node of a VM, as its kubelet would, or brings its Ready condition to
    /// `ready` if it exists.
    pub async fn register_node(&self, node: &SimulatedNode, ready: bool) -> Result<(), CloudError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        match nodes
            .create(&PostParams::default(), &node.object(ready))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                self.set_node_ready(&node.name, ready).await
            }
            Err(error) => Err(self.error(format!("register Node {}", node.name))(error)),
        }
    }

    /// Sets the Ready condition of a Node (and the conditions that go with it), and the Ready
    /// condition of the control plane Pods on it: a simulated control plane machine whose Node
    /// is not ready looks to a client as if its components did not answer.
    pub async fn set_node_ready(&self, name: &str, ready: bool) -> Result<(), CloudError> {
        // The Pods first: once the Node shows the change, the Pods show it too.
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), KUBE_SYSTEM);
        let patch = json!({ "status": { "conditions": [pod_ready_condition(ready)] } });
        for component in COMPONENTS {
            let pod = static_pod_name(component, name);
            ignore_not_found(
                pods.patch_status(&pod, &PatchParams::default(), &Patch::Merge(&patch))
                    .await,
            )
            .map_err(self.error(format!("set the Ready condition of Pod kube-system/{pod}")))?;
        }
        let nodes: Api<Node> = Api::all(self.client.clone());
        let patch = json!({ "status": { "conditions": corral_workload::node_conditions((!ready).then_some(NOT_READY_MESSAGE)) } });
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(self.error(format!("set the Ready condition of Node {name}")))
    }

    /// Starts etcd on a control plane Node: its static Pod, carrying the annotations that make
    /// it a member of the cluster's etcd (see [`super::etcd`]); the first member starts the
    /// etcd cluster and leads it. A Pod that exists already is left as it is.
    pub async fn start_etcd_member(
        &self,
        node: &SimulatedNode,
        ready: bool,
    ) -> Result<(), CloudError> {
        let _joining = self.etcd_join.lock().await;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), KUBE_SYSTEM);
        let existing = pods
            .list(&ListParams::default().labels("component=etcd"))
            .await
            .map_err(self.error("list the etcd Pods".into()))?
            .items;
        let name = static_pod_name("etcd", &node.name);
        if existing
            .iter()
            .any(|pod| pod.metadata.name.as_deref() == Some(name.as_str()))
        {
            return Ok(());
        }
        let annotations = etcd::member_pod_annotations(
            &existing,
            rand::random::<u64>(),
            rand::random::<u64>(),
            k8s_openapi::jiff::Timestamp::now(),
        );
        let pod = static_pod(
            "etcd",
            &node.name,
            node.version.as_deref(),
            ready,
            annotations,
        );
        self.create_if_absent(&pods, &pod, format!("create Pod kube-system/{name}"))
            .await
    }

    /// Starts the API server, controller manager and scheduler on a control plane Node, and
    /// the cluster-wide objects `kubeadm init` creates, if the cluster lacks them.
    pub async fn start_control_plane_components(
        &self,
        node: &SimulatedNode,
        ready: bool,
    ) -> Result<(), CloudError> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), KUBE_SYSTEM);
        let version = node.version.as_deref();
        for component in &COMPONENTS[1..] {
            let pod = static_pod(component, &node.name, version, ready, Default::default());
            let name = static_pod_name(component, &node.name);
            self.create_if_absent(&pods, &pod, format!("create Pod kube-system/{name}"))
                .await?;
        }
        let config_maps: Api<ConfigMap> = Api::namespaced(self.client.clone(), KUBE_SYSTEM);
        let endpoint = format!("{}:{}", self.endpoint.host, self.endpoint.port);
        for config_map in [
            control_plane::kubeadm_config(&self.key.name, &endpoint, version),
            control_plane::kubelet_config(),
            control_plane::kube_proxy_config(),
            control_plane::coredns_config(),
        ] {
            let name = config_map.metadata.name.clone().unwrap_or_default();
            self.create_if_absent(
                &config_maps,
                &config_map,
                format!("create ConfigMap kube-system/{name}"),
            )
            .await?;
        }
        let daemon_sets: Api<DaemonSet> = Api::namespaced(self.client.clone(), KUBE_SYSTEM);
        self.create_if_absent(
            &daemon_sets,
            &control_plane::kube_proxy(version),
            "create DaemonSet kube-system/kube-proxy".into(),
        )
        .await?;
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), KUBE_SYSTEM);
        self.create_if_absent(
            &deployments,
            &control_plane::coredns(),
            "create Deployment kube-system/coredns".into(),
        )
        .await
    }

    async fn create_if_absent<K>(
        &self,
        api: &Api<K>,
        object: &K,
        operation: String,
    ) -> Result<(), CloudError>
    where
        K: kube::Resource
            + Clone
            + serde::Serialize
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        match api.create(&PostParams::default(), object).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(error) => Err(self.error(operation)(error)),
        }
    }

    /// Removes a VM's Node and control plane Pods; its etcd member goes with its Pod.
    pub async fn remove_machine(&self, node: &str) -> Result<(), CloudError> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), KUBE_SYSTEM);
        for component in COMPONENTS {
            let name = static_pod_name(component, node);
            ignore_not_found(pods.delete(&name, &DeleteParams::default()).await)
                .map_err(self.error(format!("delete Pod kube-system/{name}")))?;
        }
        let nodes: Api<Node> = Api::all(self.client.clone());
        ignore_not_found(nodes.delete(node, &DeleteParams::default()).await)
            .map_err(self.error(format!("delete Node {node}")))
    }
}

fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// The settings of a workload cluster's API server: small watch caches (it holds a handful of
/// objects that change a few times; see [`WatchCacheConfig::small`]), as a management plane
/// may run a thousand of them.
fn server_config() -> ServerConfig {
    ServerConfig {
        watch_cache: WatchCacheConfig::small(),
        ..ServerConfig::default()
    }
}

/// The admin kubeconfig of a workload cluster, named as upstream names it. The simulated API
/// server has no authentication, so the user has no credentials.
fn kubeconfig(cluster: &str, server: &str) -> String {
    let user = format!("{cluster}-admin");
    let context = format!("{user}@{cluster}");
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {cluster}
  cluster:
    server: {server}
users:
- name: {user}
  user: {{}}
contexts:
- name: {context}
  context:
    cluster: {cluster}
    user: {user}
current-context: {context}
preferences: {{}}
"
    )
}

/// What a simulated kubelet registers.
#[derive(Clone, Debug)]
pub(super) struct SimulatedNode {
    pub name: String,
    pub provider_id: String,
    pub internal_ip: String,
    pub control_plane: bool,
    pub version: Option<String>,
}

impl SimulatedNode {
    fn object(&self, ready: bool) -> Node {
        let mut labels = std::collections::BTreeMap::from([
            ("kubernetes.io/hostname".to_string(), self.name.clone()),
            ("kubernetes.io/os".to_string(), "linux".to_string()),
            ("kubernetes.io/arch".to_string(), "amd64".to_string()),
        ]);
        let mut taints = Vec::new();
        if self.control_plane {
            labels.insert(CONTROL_PLANE_ROLE.to_string(), String::new());
            taints.push(Taint {
                key: CONTROL_PLANE_ROLE.to_string(),
                effect: "NoSchedule".to_string(),
                ..Default::default()
            });
        }
        Node {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(labels),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                provider_id: Some(self.provider_id.clone()),
                taints: (!taints.is_empty()).then_some(taints),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(corral_workload::node_conditions(
                    (!ready).then_some(NOT_READY_MESSAGE),
                )),
                addresses: Some(vec![
                    NodeAddress {
                        type_: "InternalIP".into(),
                        address: self.internal_ip.clone(),
                    },
                    NodeAddress {
                        type_: "Hostname".into(),
                        address: self.name.clone(),
                    },
                ]),
                node_info: Some(NodeSystemInfo {
                    architecture: "amd64".into(),
                    operating_system: "linux".into(),
                    os_image: "Corral in-memory simulation".into(),
                    kubelet_version: self.version.clone().unwrap_or_default(),
                    kube_proxy_version: self.version.clone().unwrap_or_default(),
                    machine_id: self.name.clone(),
                    system_uuid: self.name.clone(),
                    boot_id: self.name.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
        }
    }
}

/// Why a simulated Node is not Ready.
const NOT_READY_MESSAGE: &str = "simulated: the DevMachine has the inmemory.infrastructure.cluster.x-k8s.io/node-not-ready annotation";
