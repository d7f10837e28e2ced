//! Cluster API `cluster.x-k8s.io/v1beta2` in Rust: the types, the CRDs generated from them, the
//! well-known labels, annotations, finalizers and condition names, and typed access to provider
//! objects (the contract). Pure data: nothing here does I/O.
//!
//! The types follow upstream's field names, optionality, enums and validation (upstream
//! `api/core/v1beta2`), so manifests written for upstream apply unchanged. Upstream's admission
//! webhooks are [`admission`], rules Corral's API server runs on every write; the defaults a
//! schema can say are schema defaults, each naming the webhook it stands for. A test compares
//! the generated schemas with upstream's and lists every difference it tolerates.
//!
//! Install the CRDs from [`crds()`]: kube's `Kind::crd()` gives the derive's raw output, without
//! the finishing [`crds()`] applies (no nullable fields, explicit `listKind`, the Machine's
//! webhook-equivalent rules).
//!
//! Conventions in the types: optional scalars are `Option`s; optional structs whose fields are
//! all optional are embedded by value and left out when empty (upstream's `omitzero`); optional
//! lists and maps are left out when empty.

pub mod admission;
pub mod annotations;
pub mod cluster;
pub mod clusterctl;
pub mod common;
pub mod conditions;
pub mod contract;
pub mod crd;
pub mod field_managers;
pub mod finalizers;
pub mod labels;
pub mod machine;
pub mod machine_deployment;
pub mod machine_health_check;
pub mod machine_set;
pub mod schema;
#[cfg(feature = "testing")]
pub mod testing;

pub use cluster::*;
pub use common::*;
pub use crd::crds;
pub use machine::*;
pub use machine_deployment::*;
pub use machine_health_check::*;
pub use machine_set::*;

/// The API group of the core kinds.
pub const GROUP: &str = "cluster.x-k8s.io";

/// The API version of the types in this crate.
pub const VERSION: &str = "v1beta2";

/// The type of the Secrets core and the providers create for a cluster (kubeconfig,
/// certificates, bootstrap data).
pub const CLUSTER_SECRET_TYPE: &str = "cluster.x-k8s.io/secret";
