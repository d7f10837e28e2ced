//! The provider's API: `infrastructure.cluster.x-k8s.io/v1beta2` DevCluster,
//! DevClusterTemplate, DevMachine and DevMachineTemplate in upstream's shape (upstream
//! `test/infrastructure/docker/api/v1beta2`), their CRDs, and the names the provider uses on
//! objects (finalizers, annotations, conditions).
//!
//! Upstream's kinds have two backends, `docker` and `inMemory`. Corral simulates `inMemory`
//! only; the `docker` fields stay in the schema, so that an upstream manifest using them is
//! understood, and a CEL rule refuses them with a message that says to use `backend.inMemory`.
//! One Corral extension: `spec.backend.inMemory.failureDomains` on a DevCluster (upstream has
//! failure domains on the docker backend only), so that core's spreading over failure domains
//! can be exercised with simulated infrastructure.

pub mod admission;
mod crd;
pub mod dev_cluster;
pub mod dev_machine;
mod schema;

pub use crd::crds;
pub use dev_cluster::*;
pub use dev_machine::*;

/// The API group of the Dev* kinds.
pub const GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// The API version of the types in this module.
pub const VERSION: &str = "v1beta2";

/// The provider's name, for the CLI, clusterctl's inventory and templates.
pub const PROVIDER_NAME: &str = "in-memory";

/// The value of the `cluster.x-k8s.io/provider` label on the provider's CRDs, as clusterctl
/// writes it: `<type>-<name>`.
pub const PROVIDER_LABEL_VALUE: &str = "infrastructure-in-memory";

/// The providerID of the Machine a DevMachine provides, and of its Node: the simulated cloud's.
pub use corral_cloud::provider_id;

/// Finalizers, upstream's names (`devcluster_types.go`, `devmachine_types.go`), so that objects
/// moved between Corral and upstream keep their meaning.
pub mod finalizers {
    /// Held by a DevCluster until its simulated endpoint is gone.
    pub const DEV_CLUSTER: &str = "dockercluster.infrastructure.cluster.x-k8s.io";
    /// Held by a DevMachine until its simulated VM and Node are gone.
    pub const DEV_MACHINE: &str = "dockermachine.infrastructure.cluster.x-k8s.io";
}

/// Annotations on a DevMachine that inject failures into its simulation. They are read on every
/// reconcile, so adding or removing one changes the simulation from then on.
pub mod annotations {
    /// `"true"`: the VM never finishes booting. The VMProvisioned condition turns False with
    /// reason `BootFailed` and the machine is never provisioned, as a VM stuck in its cloud
    /// would be; the annotation is meant for tests of machine health checks and of
    /// remediation. Removing it lets the VM boot again from the start. It has no effect on a
    /// VM that has already booted.
    pub const FAIL_BOOT: &str = "inmemory.infrastructure.cluster.x-k8s.io/fail-boot";
    /// `"true"`: the machine's Node reports `Ready=False` (reason `KubeletNotReady`), as a Node
    /// whose kubelet stopped would. Removing it makes the Node Ready again.
    pub const NODE_NOT_READY: &str = "inmemory.infrastructure.cluster.x-k8s.io/node-not-ready";
    /// Marks the `<cluster>-kubeconfig` Secret this provider wrote for a simulated workload
    /// cluster (see the DevCluster controller), so that it keeps it pointing at the endpoint.
    pub const SIMULATED_KUBECONFIG: &str =
        "inmemory.infrastructure.cluster.x-k8s.io/simulated-kubeconfig";
}

/// Condition types and reasons of the Dev* kinds (upstream `devmachine_types.go`,
/// `devcluster_types.go` and core's `v1beta2_condition_consts.go`).
pub mod conditions {
    /// Ready: DevCluster provisioned, or DevMachine with all its steps provisioned.
    pub const READY: &str = "Ready";
    /// Paused: the Cluster or the object is paused.
    pub const PAUSED: &str = "Paused";
    /// The VM is provisioned.
    pub const VM_PROVISIONED: &str = "VMProvisioned";
    /// The Node is provisioned (registered and Ready in the workload cluster).
    pub const NODE_PROVISIONED: &str = "NodeProvisioned";
    /// The etcd member of a control plane machine is provisioned.
    pub const ETCD_PROVISIONED: &str = "EtcdProvisioned";
    /// The API server of a control plane machine is provisioned.
    pub const API_SERVER_PROVISIONED: &str = "APIServerProvisioned";

    /// Reasons.
    pub mod reasons {
        pub const READY: &str = "Ready";
        pub const NOT_READY: &str = "NotReady";
        pub const PAUSED: &str = "Paused";
        pub const NOT_PAUSED: &str = "NotPaused";
        pub const PROVISIONED: &str = "Provisioned";
        pub const DELETING: &str = "Deleting";
        pub const INTERNAL_ERROR: &str = "InternalError";
        pub const WAITING_FOR_CLUSTER_INFRASTRUCTURE: &str = "WaitingForClusterInfrastructureReady";
        pub const WAITING_FOR_CONTROL_PLANE_INITIALIZED: &str = "WaitingForControlPlaneInitialized";
        pub const WAITING_FOR_BOOTSTRAP_DATA: &str = "WaitingForBootstrapData";
        pub const WAITING_FOR_STARTUP_TIMEOUT: &str = "WaitingForStartupTimeout";
        pub const WAITING_FOR_VM_PROVISIONED: &str = "WaitingForVMProvisioned";
        pub const WAITING_FOR_NODE_PROVISIONED: &str = "WaitingForNodeProvisioned";
        /// Corral's: the boot was made to fail by the fail-boot annotation.
        pub const BOOT_FAILED: &str = "BootFailed";
        /// Corral's: the provisioning settings do not parse.
        pub const INVALID_PROVISIONING: &str = "InvalidProvisioning";
        /// Corral's: the simulated cloud could not be reached or refused a request.
        pub const CLOUD_ERROR: &str = "CloudError";
    }
}
