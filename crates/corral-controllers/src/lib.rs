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
