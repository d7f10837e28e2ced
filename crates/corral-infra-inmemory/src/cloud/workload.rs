//! A simulated workload cluster: a Corral API server over an in-memory store on a loopback
//! port, serving Nodes and Pods besides Corral's built-in resources, and the writes the
//! simulation makes to it (the kubelet's Node, the control plane's static Pods).

use std::sync::Arc;

use corral_apiserver::registry::{ResourceInfo, builtins};
use corral_apiserver::{Server, ServerConfig};
use corral_store::memory::MemoryStore;
use k8s_openapi::api::core::v1::{
    Container, Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, Pod,
    PodCondition, PodSpec, PodStatus, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::{CloudError, ClusterKey, WorkloadEndpoint};

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
}

impl WorkloadCluster {
    /// Starts the cluster's API server on `port`, or on a free port.
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
        let server = Server::start(listener, store, ServerConfig::default())
            .await
            .map_err(|error| CloudError::StartApiServer {
                cluster: key.clone(),
                message: error.to_string(),
            })?;
        for resource in simulated_resources() {
            server.state().registry.insert(resource);
        }
        let port = server.local_addr().port();
        let endpoint = WorkloadEndpoint {
            host: HOST.to_string(),
            port,
            kubeconfig: kubeconfig(&key.name, &format!("http://{HOST}:{port}")),
        };
        let url = endpoint.url().parse().expect("a loopback URL parses");
        let client = kube::Client::try_from(kube::Config::new(url)).map_err(|source| {
            CloudError::Workload {
                cluster: key.clone(),
                operation: "build a client".into(),
                source,
            }
        })?;
        Ok(WorkloadCluster {
            key,
            endpoint,
            client,
            server: tokio::sync::Mutex::new(Some(server)),
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

    /// Sets the Ready condition of a Node (and the conditions that go with it).
    pub async fn set_node_ready(&self, name: &str, ready: bool) -> Result<(), CloudError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let patch = json!({ "status": { "conditions": node_conditions(ready) } });
        nodes
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(self.error(format!("set the Ready condition of Node {name}")))
    }

    /// Creates a control plane component's static Pod on a Node, running and ready.
    pub async fn start_static_pod(&self, component: &str, node: &str) -> Result<(), CloudError> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), "kube-system");
        match pods
            .create(&PostParams::default(), &static_pod(component, node))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(error) => Err(self.error(format!("create the {component} Pod of {node}"))(
                error,
            )),
        }
    }

    /// Removes a VM's Node and control plane Pods.
    pub async fn remove_machine(&self, node: &str) -> Result<(), CloudError> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), "kube-system");
        for component in ["etcd", "kube-apiserver"] {
            let name = format!("{component}-{node}");
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

/// Nodes and Pods: Corral's API server does not serve them itself (a management plane has no
/// Nodes), so each workload cluster registers them, as built-in resources without a schema.
fn simulated_resources() -> Vec<ResourceInfo> {
    let base = builtins()
        .into_iter()
        .find(|resource| resource.group.is_empty() && resource.plural == "configmaps")
        .expect("ConfigMaps are built in");
    vec![
        ResourceInfo {
            plural: "nodes".into(),
            singular: "node".into(),
            kind: "Node".into(),
            list_kind: "NodeList".into(),
            namespaced: false,
            short_names: vec!["no".into()],
            status_subresource: true,
            ..base.clone()
        },
        ResourceInfo {
            plural: "pods".into(),
            singular: "pod".into(),
            kind: "Pod".into(),
            list_kind: "PodList".into(),
            namespaced: true,
            short_names: vec!["po".into()],
            categories: vec!["all".into()],
            status_subresource: true,
            ..base
        },
    ]
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
                conditions: Some(node_conditions(ready)),
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

/// The conditions a kubelet reports: Ready, and no pressure (upstream's in-memory backend
/// reports the same set).
fn node_conditions(ready: bool) -> Vec<NodeCondition> {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let condition = |type_: &str, status: &str, reason: &str, message: &str| NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    };
    let ready = if ready {
        condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        )
    } else {
        condition(
            "Ready",
            "False",
            "KubeletNotReady",
            "simulated: the DevMachine has the inmemory.infrastructure.cluster.x-k8s.io/node-not-ready annotation",
        )
    };
    vec![
        ready,
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    ]
}

/// A control plane component's static Pod (`etcd`, `kube-apiserver`), as kubeadm names and
/// labels them.
fn static_pod(component: &str, node: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{component}-{node}")),
            namespace: Some("kube-system".into()),
            labels: Some(
                [("component", component), ("tier", "control-plane")]
                    .into_iter()
                    .map(|(key, value)| (key.to_string(), value.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            containers: vec![Container {
                name: component.into(),
                image: Some(format!("registry.k8s.io/{component}")),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}
