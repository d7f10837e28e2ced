//! The Cluster API core controllers: Cluster, Machine, MachineSet, MachineDeployment and
//! MachineHealthCheck, as kube-runtime reconcilers.
//!
//! Controllers talk to the management plane only through `kube::Client`: they never import the
//! API server or the store, so they run unchanged against a real kube-apiserver. They read
//! provider objects (infrastructure, bootstrap, control plane) through the contract accessors
//! of `corral_api::contract` over unstructured objects ([`external`]), never through a
//! provider's types. Reconcilers are level-triggered and idempotent and are not told why they
//! run.
//!
//! [`runtime`] holds what the controllers share: the [`Context`], the runner (watches, error
//! backoff, one tracing span per reconcile) and [`run`], which starts them all. [`cluster_cache`]
//! reaches workload clusters. [`conditions`] sets and derives v1beta2 conditions as upstream
//! does.
//!
//! Each controller is a module split by concern, as upstream does: `mod.rs` (wiring and
//! reconcile), `phases.rs` (the provider objects), pure planners (`compute_*`) tested by
//! simulation, `status.rs` (pure functions that compute conditions), and `delete.rs`.

pub mod cluster;
pub mod cluster_cache;
pub mod conditions;
pub mod external;
pub mod machine;
pub mod machine_deployment;
pub mod machine_health_check;
pub mod machine_set;
pub mod runtime;

pub use runtime::{Config, Context, RunError, run, run_with_caches};
