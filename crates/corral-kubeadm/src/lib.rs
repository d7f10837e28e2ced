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

/// Runs the providers' controllers until `shutdown` completes: the KubeadmConfig controller
/// ([`bootstrap::run`]) and the KubeadmControlPlane controller ([`controlplane::run`], with its
/// default settings).
pub async fn run(
    client: kube::Client,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use futures::FutureExt;
    let shutdown = shutdown.boxed().shared();
    futures::join!(
        bootstrap::run(client.clone(), shutdown.clone()),
        controlplane::run(client, controlplane::Config::default(), shutdown),
    );
}
