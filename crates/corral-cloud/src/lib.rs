//! The simulated cloud of the in-memory infrastructure provider (`corral-infra-inmemory`): VMs
//! that boot in simulated time, and one simulated workload cluster per DevCluster, where the
//! Nodes of the cluster's VMs register. It is its own crate because it runs Corral API servers
//! (the workload clusters) over memory stores, which the provider's controllers must not
//! depend on: they reach the cloud only through the [`Cloud`] trait.
//!
//! The controllers reach the cloud only through the [`Cloud`] trait, as a real provider reaches
//! its cloud through an SDK. [`InProcessCloud`] runs it inside the management plane; because
//! every request and answer is plain serializable data keyed by names the user chose (never
//! handles or process-local ids), the same trait is served over HTTP by a cloud in its own
//! process ([`CloudServer`], `corral cloud`) and reached through [`RemoteCloud`] by several
//! management planes in turn, which is what `corral move` between management planes needs. A management plane that restarts, or that an object moves to, finds
//! the VMs and endpoints by the same keys.
//!
//! # Workload clusters
//!
//! Each workload cluster is a Corral API server over an in-memory store, on its own loopback
//! port: `http://127.0.0.1:<port>`, the port being the DevCluster's `controlPlaneEndpoint`. It
//! is a *simulation*: a Kubernetes API with Nodes and Pods that nothing runs. Upstream's
//! in-memory backend likewise gives each workload cluster its own port (its
//! `WorkloadClustersMux`, from 20000). A port per cluster, rather than paths under one listener,
//! keeps `controlPlaneEndpoint` (a host and a port, no path) a complete address, which is what
//! core and control plane providers build kubeconfigs from. The simulation itself (the VMs'
//! kubelets, static Pods and etcd members) writes to it in-process (`Server::in_process`);
//! the management plane reaches it over HTTP with its kubeconfig, as it would a real cluster.
//!
//! # VMs
//!
//! A VM is created in a workload cluster under its DevMachine's name, and boots through the
//! steps of upstream's in-memory backend, each taking its startup duration plus jitter: the VM
//! powers on; its Node registers with `spec.providerID: in-memory://<name>` and `Ready=True`;
//! on a control plane machine, etcd starts and joins the cluster's etcd ([`etcd`]), and the API
//! server, controller manager and scheduler start, all as static Pods in `kube-system`, with
//! the cluster-wide objects of `kubeadm init` ([`control_plane`]). Zero durations complete at
//! once. Deleting the VM removes its Node and Pods, and so its etcd member.
//!
//! Faults ([`Faults`]) are part of the VM's desired state: the fail-boot fault holds the VM down,
//! the node-not-ready fault turns its Node's Ready condition False.
//!
//! # Durability
//!
//! [`InProcessCloud`] keeps everything in memory: when the process ends, the VMs and workload
//! clusters are gone, as if the cloud were reset. The controllers converge on their next
//! reconcile: a DevCluster's endpoint is recreated on the same port, a DevMachine's VM is
//! created again and boots again, and its Node registers again.
//!
//! # Map of the crate
//!
//! The simulated cloud sits behind the `Cloud` trait, whose calls are idempotent and carry only
//! serializable data keyed by names, so that it can be served over HTTP to several management
//! planes: `remote_server.rs`'s `CloudServer` serves any `Cloud` (JSON, one request per trait call,
//! errors carried as their `CloudError` variant) and `remote.rs`'s `RemoteCloud` is the `Cloud`
//! client of it (`corral cloud`, `--cloud URL`). `InProcessCloud` runs one workload cluster per
//! DevCluster (a Corral API server over a memory store on its own loopback port, the
//! `controlPlaneEndpoint`, serving Nodes and Pods) and VMs whose driver tasks move a pure boot
//! timeline (`boot.rs`: VM, Node, then etcd and API server on control plane machines, each after
//! its startup duration and jitter) and write its effects into the workload cluster (in-process,
//! through `Server::in_process`; the management plane reaches it over HTTP). What a control plane
//! consists of (per machine the etcd, kube-apiserver, kube-controller-manager and kube-scheduler
//! static Pods; per cluster `kubeadm init`'s kubeadm-config, kubelet-config, kube-proxy and
//! CoreDNS, for which workload clusters also serve Deployments and DaemonSets) is
//! `corral-workload`'s, shared with the node agent on real machines; `etcd.rs` writes a machine's
//! etcd membership as annotations on its etcd Pod, as upstream's in-memory backend does (the
//! protocol whose reading side, `EtcdAdmin` and `SimulatedEtcd`, is the control plane provider's:
//! `corral-kubeadm`'s `controlplane/etcd.rs`; `controlplane/real_etcd.rs`'s `RealEtcd` answers the
//! same `EtcdAdmin` over a real etcd, chosen for a workload cluster whose etcd Pods carry kubeadm's
//! advertise annotation instead of the simulated member annotations: the local provider's
//! machines).

mod boot;
pub use corral_workload as control_plane;
pub mod etcd;
mod in_process;
pub mod remote;
pub mod remote_server;
mod workload;

use std::fmt;
use std::time::Duration;

use corral_api::MachineAddress;
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

pub use in_process::InProcessCloud;
pub use remote::{RemoteCloud, WireError};
pub use remote_server::{CloudServer, serve};

/// The VMs and workload clusters of the simulated cloud.
///
/// Every call is idempotent and says what should be, not what to do: `ensure_*` creates what is
/// missing and returns what exists, `delete_*` succeeds when the thing is already gone.
#[async_trait::async_trait]
pub trait Cloud: Send + Sync + 'static {
    /// Makes sure the workload cluster exists and answers, and returns its endpoint. A new
    /// cluster listens on `port` when given (the port the DevCluster recorded earlier, so that
    /// a recreated cluster keeps its address), on a free port otherwise.
    async fn ensure_cluster(
        &self,
        cluster: &ClusterKey,
        port: Option<u16>,
    ) -> Result<WorkloadEndpoint, CloudError>;

    /// Removes the workload cluster and every VM in it.
    async fn delete_cluster(&self, cluster: &ClusterKey) -> Result<(), CloudError>;

    /// Makes sure the VM exists, creating it with `spec` if it does not; an existing VM takes
    /// the faults of `spec` (its timings and role were fixed at creation). Returns where its
    /// boot stands.
    async fn ensure_vm(&self, vm: &VmKey, spec: &VmSpec) -> Result<Vm, CloudError>;

    /// The VM, if it exists.
    async fn get_vm(&self, vm: &VmKey) -> Result<Option<Vm>, CloudError>;

    /// Removes the VM, its Node and its control plane Pods from the workload cluster.
    async fn delete_vm(&self, vm: &VmKey) -> Result<(), CloudError>;
}

/// A workload cluster, named after its Cluster object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClusterKey {
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for ClusterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A VM: its workload cluster and its name, the DevMachine's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct VmKey {
    pub cluster: ClusterKey,
    pub name: String,
}

impl fmt::Display for VmKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in workload cluster {}", self.name, self.cluster)
    }
}

/// Where a workload cluster's API server answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadEndpoint {
    pub host: String,
    pub port: u16,
    /// A kubeconfig for the cluster's admin, in upstream's naming (cluster `<name>`, user
    /// `<name>-admin`, context `<name>-admin@<name>`).
    pub kubeconfig: String,
}

impl WorkloadEndpoint {
    /// The server URL: `http://<host>:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }
}

/// What a VM is to be.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmSpec {
    /// A control plane machine also runs etcd and an API server, and its Node carries the
    /// control plane role label and taint.
    pub control_plane: bool,
    /// The Kubernetes version its kubelet reports, from the Machine.
    pub version: Option<String>,
    pub timings: StepTimings,
    pub faults: Faults,
}

/// How long each boot step takes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTimings {
    pub vm: StepTiming,
    pub node: StepTiming,
    pub etcd: StepTiming,
    pub api_server: StepTiming,
}

/// How long a step takes: `startup` plus a uniformly random share of up to `jitter` of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTiming {
    pub startup: Duration,
    pub jitter: f64,
}

/// Failures to simulate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    /// The VM does not finish booting while set; lifting it restarts the boot.
    pub fail_boot: bool,
    /// The Node reports `Ready=False`.
    pub node_not_ready: bool,
}

/// A VM and where its boot stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Vm {
    pub key: VmKey,
    /// `in-memory://<name>`, on the Node too.
    pub provider_id: String,
    pub addresses: Vec<MachineAddress>,
    pub vm: StepStatus,
    pub node: StepStatus,
    /// Control plane machines only.
    pub etcd: Option<StepStatus>,
    /// Control plane machines only.
    pub api_server: Option<StepStatus>,
    /// The Ready status of the registered Node, once it is registered.
    pub node_ready: Option<bool>,
}

impl Vm {
    /// When the next step is due, if one is under way: when to look again.
    pub fn next_change(&self) -> Option<Timestamp> {
        [
            Some(&self.vm),
            Some(&self.node),
            self.etcd.as_ref(),
            self.api_server.as_ref(),
        ]
        .into_iter()
        .flatten()
        .filter_map(|step| match step {
            StepStatus::InProgress { until } => Some(*until),
            _ => None,
        })
        .min()
    }
}

/// Where a boot step stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepStatus {
    /// The step before it has not completed.
    Waiting,
    /// Under way; it completes at `until`, or soon after if its effect (say, registering the
    /// Node) takes retries.
    InProgress { until: Timestamp },
    /// Completed at `at`.
    Done { at: Timestamp },
    /// It will not complete; `message` says why.
    Failed { message: String },
}

impl StepStatus {
    pub fn is_done(&self) -> bool {
        matches!(self, StepStatus::Done { .. })
    }
}

/// A failed request to the cloud.
#[derive(Debug, thiserror::Error)]
pub enum CloudError {
    #[error("workload cluster {0} does not exist")]
    ClusterNotFound(ClusterKey),
    #[error("cannot listen on {address} for workload cluster {cluster}")]
    Listen {
        cluster: ClusterKey,
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the API server of workload cluster {cluster}: {message}")]
    StartApiServer {
        cluster: ClusterKey,
        message: String,
    },
    #[error("cannot {operation} in workload cluster {cluster}")]
    Workload {
        cluster: ClusterKey,
        operation: String,
        #[source]
        source: kube::Error,
    },
    #[error("{field} {name:?} is not a Kubernetes object name")]
    InvalidName { field: String, name: String },
    /// A [`RemoteCloud`] could not reach its cloud, or got no answer.
    #[error("cannot reach the simulated cloud at {url}")]
    Unreachable {
        url: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A [`RemoteCloud`] got an answer outside the protocol (not a simulated cloud at `url`?).
    #[error("the simulated cloud at {url} answered {status}: {message}")]
    Protocol {
        url: String,
        status: u16,
        message: String,
    },
}

/// The providerID of the Machine a DevMachine provides, and of its VM's Node (upstream
/// `calculateProviderID` in `backends/inmemory/inmemorymachine_backend.go`).
pub fn provider_id(dev_machine_name: &str) -> String {
    format!("in-memory://{dev_machine_name}")
}
