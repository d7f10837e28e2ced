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
//!
//! # Map of the crate
//!
//! The kubeadm providers: bootstrap (KubeadmConfig, upstream's CABPK) and control plane
//! (KubeadmControlPlane, upstream's KCP). `api/` holds `bootstrap.cluster.x-k8s.io/v1beta2`
//! KubeadmConfig and KubeadmConfigTemplate (`bootstrap/`: the spec, with the kubeadm v1beta4-shaped
//! configurations in `kubeadm.rs` and the host side, files, users, NTP, disks, in `host.rs`) and
//! `controlplane.cluster.x-k8s.io/v1beta2` KubeadmControlPlane and KubeadmControlPlaneTemplate
//! (`controlplane.rs`, with the scale subresource), and the CRDs generated from them (checked in
//! under `crds/`, with the contract and clusterctl labels). Upstream's kubeadm webhooks are
//! `api/admission.rs` (files and users of a KubeadmConfigSpec, Ignition, KCP replicas, maxSurge,
//! version skew, the fields an update may change), run by the API server; the KCP defaults a schema
//! can say are in `api/crd.rs`. `tests/it` compares the CRDs with upstream's through
//! `corral_api::testing` (feature `testing`, the comparison corral-api's own test uses) and checks
//! the rules through a real API server. `certs.rs` is a cluster's certificates (`<cluster>-ca`,
//! `-etcd`, `-proxy`, `-sa`: looked up, or generated once with ECDSA P-256 and created; user
//! Secrets checked, never replaced; read through `SecretReader`, the ClusterCache's Secret watch
//! first, a GET otherwise) and `kubeconfig.rs` the admin kubeconfig Secret (client certificate
//! signed by the cluster CA, one year, renewed with less than six months left), both used by the
//! two controllers; `changes.rs` says what they read of a Cluster (and the KubeadmConfig controller
//! of a Machine), so that a watch event wakes them only when that changed
//! (`corral_runtime::changes`), not for conditions and counters. Both controllers are written on
//! `corral-runtime`, never on `corral-controllers`. `bootstrap/` is the KubeadmConfig controller:
//! `mod.rs` reconciles (paused, infrastructure, the init lock of `lock.rs`, init for the first
//! control plane machine, join with a bootstrap token for every other, the data Secret, conditions
//! in `status.rs`); `cloud_init.rs` and `kubeadm_yaml.rs` render the cloud-config and kubeadm's
//! v1beta4 files purely, `ignition.rs` the Ignition v2.3 config upstream emits for `format:
//! ignition` (what it cannot render, such as a Container Linux Config to merge, is refused with the
//! field named); `token.rs` keeps join tokens in the workload cluster's `kube-system`, refreshed
//! until the Machine has a Node; it reads KubeadmConfigs, Machines and Clusters through the
//! process's shared caches (`run_with_caches`; `corral` and the KCP benchmark pass the
//! `corral_runtime::Caches` the core controllers run on), and reaches workload clusters through
//! their `ClusterCache` (as the KubeadmControlPlane controller does). Its `tests/it/bootstrap.rs`
//! brings a machine-based control plane and workers up with the core controllers and the in-memory
//! provider; `tests/it/certs.rs` checks the certificates with x509-parser; `tests/it/timeline.rs`
//! records each cluster's bring-up steps for the KCP benchmark. `controlplane/` is the
//! KubeadmControlPlane controller: `mod.rs` reconciles in upstream's order (certificates and
//! kubeconfig, workload state, etcd member cleanup, pre-terminate hook, init, remediation, rollout,
//! scaling, one operation at a time behind preflight checks, then the Machines' UpToDate and static
//! Pod / etcd member health conditions), woken by changes only (its queue: KubeadmControlPlanes,
//! Machines, Clusters and the workload watches; a 60 s safety requeue), reading its Cluster's
//! Machines from the shared caches' per-Cluster index (as the cache's `Arc`s), guarded by
//! expectations of its own creates and deletes, `remediation.rs`, `scale.rs` (rollout and scaling)
//! and `delete.rs` are those steps; `pre_terminate.rs` is the `kcp-cleanup` pre-terminate hook
//! every control plane Machine carries (once the Machine controller waits on it: etcd leadership
//! moved, the member removed, the hook removed), `watches.rs` keeps per workload cluster a
//! reflector of the control plane static Pods (which carry the etcd membership) and of
//! `kube-system` ConfigMaps and triggers the cluster's control plane 100 ms after a change, once
//! for the changes in a row, `adopt.rs` adopts the Cluster's standalone control plane Machines (and
//! the Secrets their KubeadmConfig controls) within one minor version, `addons.rs` brings the
//! workload cluster's kube-proxy and CoreDNS to the control plane's version and DNS image once
//! nothing is left to roll out or scale, `etcd.rs` is the `EtcdAdmin` interface (members, remove,
//! move leader, alarms) and `SimulatedEtcd` (etcd membership as annotations on the etcd Pods, the
//! protocol the in-memory provider writes), `machines.rs` creates Machines with their cloned
//! infrastructure and KubeadmConfig and judges them up to date, `status.rs` computes the status,
//! the v1beta2 conditions and the Machine conditions, `workload.rs` is the observed workload state,
//! and `planner.rs` holds the pure decisions (failure domain for a scale up, scale-down victim,
//! rollout step, etcd quorum, remediation target and retries) with upstream's table vectors. Its
//! `tests/it/control_plane.rs` runs it end to end with the core controllers, the in-memory provider
//! and the KubeadmConfig controller; `tests/it/adoption.rs`, `addons.rs` and `ignition.rs` do the
//! same for adoption, kube-proxy/CoreDNS and Ignition. All of them share the management plane of
//! `tests/it/plane.rs`.

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
