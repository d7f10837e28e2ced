//! The providers' APIs: `bootstrap.cluster.x-k8s.io/v1beta2` KubeadmConfig and
//! KubeadmConfigTemplate (`bootstrap`), `controlplane.cluster.x-k8s.io/v1beta2`
//! KubeadmControlPlane and KubeadmControlPlaneTemplate (`controlplane`), in upstream's shape
//! (upstream `api/bootstrap/kubeadm/v1beta2`, `api/controlplane/kubeadm/v1beta2`), and their
//! CRDs (`crds()`).
//!
//! Field names, optionality, enums and bounds follow upstream's CRDs, so manifests written for
//! upstream apply unchanged; a test compares the generated schemas with upstream's and lists every
//! difference it tolerates. Upstream's admission webhooks are `admission` (run by Corral's API
//! server), except the KubeadmControlPlane defaults a schema can say (replicas, the rollout
//! strategy), which `crd.rs` adds to the schema.

pub mod admission;
pub mod bootstrap;
pub mod controlplane;
mod crd;
mod schema;

pub use crd::crds;

/// The API group of KubeadmConfig and KubeadmConfigTemplate.
pub const BOOTSTRAP_GROUP: &str = "bootstrap.cluster.x-k8s.io";

/// The API group of KubeadmControlPlane and KubeadmControlPlaneTemplate.
pub const CONTROL_PLANE_GROUP: &str = "controlplane.cluster.x-k8s.io";

/// The API version of the types in this module.
pub const VERSION: &str = "v1beta2";

/// The value of the `cluster.x-k8s.io/provider` label on the bootstrap CRDs, as clusterctl
/// writes it: `<type>-<name>`.
pub const BOOTSTRAP_PROVIDER_LABEL_VALUE: &str = "bootstrap-kubeadm";

/// The value of the `cluster.x-k8s.io/provider` label on the control plane CRDs.
pub const CONTROL_PLANE_PROVIDER_LABEL_VALUE: &str = "control-plane-kubeadm";
