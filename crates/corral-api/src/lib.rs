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
//!
//! # Map of the crate
//!
//! The Cluster API `cluster.x-k8s.io/v1beta2` types as kube `CustomResource`s, one module per kind
//! (`cluster.rs` with the topology types, `machine.rs`, `machine_set.rs`, `machine_deployment.rs`,
//! `machine_health_check.rs`) and `common.rs` for what they share; pure data, no I/O. `crds()`
//! (`crd.rs`) generates the CRDs from the types, finishing the derive's output as upstream serves
//! it (`crd::finish`; `crd::finish_provider` does the same with the contract and clusterctl labels
//! for the providers' CRDs, and `schema.rs`'s patterns and `schema_with` helpers are public for
//! their types too); the copies in `crates/corral-api/crds/` are regenerated with
//! `CORRAL_UPDATE_CRDS=1 cargo test -p corral-api`, and a test fails while they are stale. Where
//! upstream defaults in a webhook and a schema can say the same, the schema says it (`default`),
//! next to the field it concerns; upstream's webhook rules are `admission/` (one module per kind,
//! `corral_admission::KindRules` over the object's JSON), which the API server runs. `labels`,
//! `annotations`, `finalizers`, `conditions` and `field_managers` hold upstream's well-known names.
//! `naming` renders upstream's Machine naming templates (`machineNaming.template`), for the
//! controllers that name Machines and the admission rules that check a template alike.
//! `contract.rs` is the provider contract: views over a provider object's JSON
//! (`InfrastructureCluster`, `InfrastructureMachine`, `BootstrapConfig`, `ControlPlane`) that read
//! and write the fields core uses, for the v1beta2 and v1beta1 contracts, and
//! `ContractVersion::from_crd_labels`. `tests/it/upstream.rs` compares the generated schemas with
//! upstream's (`tests/upstream/`) attribute by attribute, with one allow-list of the differences
//! Corral means; the comparison itself is `testing` (feature `testing`), which the provider crates'
//! tests use too, as they use its check of the checked-in CRDs (`check_checked_in_crds`);
//! `tests/it/cel.rs` runs the rules and defaults.

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
pub mod naming;
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
