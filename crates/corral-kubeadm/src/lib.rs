//! Corral's kubeadm providers: the bootstrap provider (KubeadmConfig, upstream's CABPK) and the
//! control plane provider (KubeadmControlPlane, upstream's KCP), against the v1beta2 contracts.
//!
//! - `api` holds the types of `bootstrap.cluster.x-k8s.io/v1beta2` and
//!   `controlplane.cluster.x-k8s.io/v1beta2` and their CRDs ([`crds()`]).
//! - `bootstrap` is the KubeadmConfig controller, `controlplane` the KubeadmControlPlane
//!   controller.
//! - `certs` and `kubeconfig` hold a cluster's certificates and admin kubeconfig, for both
//!   providers.
//! - `changes` filters the watch events that wake both controllers by what they read.

pub mod api;
pub mod bootstrap;
pub mod certs;
mod changes;
pub mod controlplane;
pub mod kubeconfig;

pub use api::crds;
use corral_runtime::shared::Caches;
use corral_runtime::shared::SharedCache;

/// Runs the providers' controllers until `shutdown` completes: the KubeadmConfig controller
/// ([`bootstrap::run`]) and the KubeadmControlPlane controller ([`controlplane::run`], with its
/// default settings), over caches of their own (see [`run_with_caches`]), watching the
/// kubeconfig Secrets for their connections to workload clusters themselves.
pub async fn run(
    client: kube::Client,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use futures::FutureExt;
    let shutdown = shutdown.boxed().shared();
    let caches = Caches::new(client.clone());
    let cache_task = tokio::spawn(
        caches
            .cluster_cache(&controlplane::Config::default().cluster_cache)
            .run(shutdown.clone()),
    );
    run_with_caches(client, caches, shutdown).await;
    let _ = cache_task.await;
}

/// [`run`], both controllers reading Machines, Clusters and KubeadmConfigs through `caches`,
/// which the core controllers and the infrastructure provider of the process may share: one
/// watch of each kind and one connection per workload cluster for all of them (the core
/// controllers run the kubeconfig Secret watch of the caches' `ClusterCache`).
pub async fn run_with_caches(
    client: kube::Client,
    caches: Caches,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use futures::FutureExt;
    let shutdown = shutdown.boxed().shared();
    futures::join!(
        bootstrap::run_with_caches(client.clone(), caches.clone(), shutdown.clone()),
        controlplane::run_with_caches(client, controlplane::Config::default(), caches, shutdown),
    );
}

/// The shared cache of KubeadmConfigs, indexed by their `cluster.x-k8s.io/cluster-name` label
/// (a KubeadmConfig names no Cluster in its spec). Both controllers read it: the KubeadmConfig
/// controller reconciles from it, the KubeadmControlPlane controller reads its Machines'.
fn kubeadm_configs(caches: &Caches) -> SharedCache<api::bootstrap::KubeadmConfig> {
    caches.get(|config: &api::bootstrap::KubeadmConfig| {
        config
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(corral_api::labels::CLUSTER_NAME))
            .map(String::as_str)
            .unwrap_or_default()
    })
}

// The parts of the providers' objects a write compares (see
// `corral_runtime::patch::write`): metadata and spec compared as typed values,
// and only the part that changed serialized. A KubeadmControlPlane's spec holds the whole
// kubeadm configuration, which serializing twice per status write cost more than comparing.
corral_runtime::spec_and_status_parts!(
    api::controlplane::KubeadmControlPlane =>
        api::controlplane::KubeadmControlPlaneSpec, api::controlplane::KubeadmControlPlaneStatus;
    api::bootstrap::KubeadmConfig => api::bootstrap::KubeadmConfigSpec, api::bootstrap::KubeadmConfigStatus;
);
