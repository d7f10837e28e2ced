//! The Cluster API core controllers: Cluster, Machine, MachineSet, MachineDeployment and
//! MachineHealthCheck, as kube-runtime reconcilers.
//!
//! Controllers talk to the management plane only through `kube::Client`: they never import the
//! API server or the store, so they run unchanged against a real kube-apiserver. They read
//! provider objects (infrastructure, bootstrap, control plane) through the contract accessors
//! of `corral_api::contract` over unstructured objects (`corral_runtime::external`), never
//! through a provider's types. Reconcilers are level-triggered and idempotent and are not told
//! why they run.
//!
//! They are written on `corral_runtime` (the [`Context`], shared caches, the runner, patching,
//! events, conditions, the workload-cluster cache), as the providers are; [`run`] starts them
//! all.
//!
//! Each controller is a module split by concern, as upstream does: `mod.rs` (wiring and
//! reconcile), `phases.rs` (the provider objects), pure planners (`compute_*`) tested by
//! simulation, `status.rs` (pure functions that compute conditions), and `delete.rs`.
//!
//! # Map of the crate
//!
//! The Cluster API core controllers, kube-runtime reconcilers over a `kube::Client`, written on
//! `corral-runtime`; `run` (`lib.rs`) starts every controller until shutdown, over its own `Caches`
//! or, with `run_with_caches`, ones the providers of the process share. Each controller is a module
//! split by concern, as upstream's (a Cluster is woken by its control plane and standalone
//! Machines, MachineDeployments, and deletions while it is itself being deleted; a MachineSet's
//! Machines and a MachineDeployment's MachineSets reach it through their owner's status):
//! `cluster/` and `machine/` (`mod.rs` wiring and reconcile, `phases.rs` provider objects,
//! `status.rs` pure status, `delete.rs` deletion order; `machine/node_ref.rs`, `machine/drain.rs`,
//! `machine/up_to_date.rs` the UpToDate condition of a MachineDeployment's Machines, as upstream
//! computes it in the Machine controller), `machine_set/` (`machines.rs` adoption, creation from
//! templates, scale-down through the pure `deletion_order.rs`, remediation of `OwnerRemediated`
//! Machines and in-place propagation; `in_sync.rs` remembers, per cache `Arc`, which Machines were
//! found in sync with the template and which matched the selector; `expectations.rs` holds back a
//! reconcile until the cache shows its own writes), `machine_deployment/` (`rollout_planner.rs`
//! plans each step purely, checked by simulation against golden traces; `sync.rs` writes a plan to
//! MachineSets; `rollback.rs` is Corral's `rollback-to-revision` and `revision-history-limit`
//! annotations), and `machine_health_check/` (pure planners `target_health.rs` and
//! `remediation_allowed.rs` judge each Machine and the `triggerIf` bound; unhealthy Machines are
//! handed to their owner through `OwnerRemediated`, or to an external remediator through a request
//! created from a template; its timeouts are judged by `corral_runtime::Clock`, which tests move
//! forward instead of sleeping). `tests/it` runs the controllers against an in-process API server
//! with generic test provider kinds, the test playing the provider, and more API servers as
//! workload clusters.

pub mod cluster;
pub mod machine;
pub mod machine_deployment;
pub mod machine_health_check;
pub mod machine_set;

use std::future::Future;

use futures::FutureExt;
use kube::Client;
use kube::api::{Api, ListParams};

pub use corral_runtime::{Config, Context};
use corral_runtime::{Shutdown, shared};

/// Why the controllers could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The management plane does not serve the Cluster API kinds.
    #[error(
        "the management plane does not serve cluster.x-k8s.io/v1beta2 Clusters; install the Cluster API CRDs first"
    )]
    CheckCrds(#[source] kube::Error),
}

/// Starts every controller and runs them until `shutdown` resolves, then lets the reconciles
/// under way finish. Fails at once when the management plane does not serve the Cluster API
/// kinds.
pub async fn run(
    client: Client,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let caches = shared::Caches::new(client.clone());
    run_with_caches(client, config, caches, shutdown).await
}

/// [`run`], reading through `caches`, which other controllers of the process (providers) may
/// share: one watch per kind for all of them.
pub async fn run_with_caches(
    client: Client,
    config: Config,
    caches: shared::Caches,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let clusters: Api<corral_api::Cluster> = Api::all(client.clone());
    clusters
        .list_metadata(&ListParams::default().limit(1))
        .await
        .map_err(RunError::CheckCrds)?;
    let context = Context::with_caches(client, config, caches);
    let shutdown: Shutdown = shutdown.boxed().shared();
    let cache = context.cluster_cache().clone().run(shutdown.clone());
    let clusters = crate::cluster::run(context.clone(), shutdown.clone());
    let machines = crate::machine::run(context.clone(), shutdown.clone());
    let health_checks = crate::machine_health_check::run(context.clone(), shutdown.clone());
    let machine_sets = crate::machine_set::run(context.clone(), shutdown.clone());
    let machine_deployments = crate::machine_deployment::run(context.clone(), shutdown.clone());
    tracing::info!("Controllers started");
    futures::join!(
        cache,
        clusters,
        machines,
        health_checks,
        machine_sets,
        machine_deployments
    );
    tracing::info!("Controllers stopped");
    Ok(())
}
