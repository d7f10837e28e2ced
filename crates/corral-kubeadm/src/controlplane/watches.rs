//! What the controller watches in workload clusters, so that a control plane waiting on its
//! workload cluster is reconciled when that changes rather than polled: per connected cluster,
//! a cache (reflector) of the control plane static Pods (`kube-system`, `tier=control-plane`,
//! which also carry the etcd membership, see [`super::etcd`]) and of the `kube-system`
//! ConfigMaps (`kubeadm-config` says the control plane is initialized). A change of either
//! triggers the cluster's KubeadmControlPlane [`TRIGGER_DELAY`] later, with every change that
//! came meanwhile: a machine's boot changes its Pods in a row (created, then each one Ready),
//! and one reconcile, with one write of the Machine's conditions, sees them all. A reconcile
//! reads both caches instead of sending requests.
//!
//! A cluster's watches start at its control plane's first reconcile with a connection, and are
//! dropped when its connection changes (the cluster cache rebuilt or lost it: the next
//! reconcile starts them again on the new client) or the control plane is deleted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_runtime::cluster_cache::ClusterKey;
use corral_runtime::ready::CachesReady;
use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

use super::etcd;
use super::workload::WorkloadState;
use crate::api::controlplane::KubeadmControlPlane;

/// The namespace of the control plane's static Pods and of `kubeadm-config`.
const KUBE_SYSTEM: &str = "kube-system";

/// How long after a workload change its control plane is triggered: long enough for the
/// changes a machine's boot makes in a row to arrive together, short against a machine's boot.
const TRIGGER_DELAY: Duration = Duration::from_millis(100);

/// The KubeadmControlPlane a workload cluster's changes wake.
type KcpRef = ObjectRef<KubeadmControlPlane>;

/// Aborts a watch task when its cluster's watches are dropped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The watches of one workload cluster.
struct Watched {
    pods: Store<Pod>,
    config_maps: Store<ConfigMap>,
    /// Both caches filled once. Every reconcile waits on this shared future rather than on
    /// `Store::wait_until_ready`, which wakes only the last of concurrent waiters (see
    /// [`CachesReady`]).
    ready: CachesReady,
    _tasks: [AbortOnDrop; 2],
}

/// The workload clusters' watches of one controller; cheap to clone.
#[derive(Clone)]
pub(super) struct WorkloadWatches {
    inner: Arc<Inner>,
}

struct Inner {
    /// The control plane of each cluster, as its last reconcile named it.
    kcps: Mutex<HashMap<ClusterKey, Arc<Mutex<KcpRef>>>>,
    watched: Mutex<HashMap<ClusterKey, Arc<Watched>>>,
    triggers: mpsc::UnboundedSender<KcpRef>,
    /// How long the first list of a new watch may take.
    ready_timeout: Duration,
}

impl WorkloadWatches {
    /// Watches that send the KubeadmControlPlane to reconcile to the returned receiver.
    pub(super) fn new(ready_timeout: Duration) -> (Self, mpsc::UnboundedReceiver<KcpRef>) {
        let (triggers, receiver) = mpsc::unbounded();
        let watches = WorkloadWatches {
            inner: Arc::new(Inner {
                kcps: Mutex::new(HashMap::new()),
                watched: Mutex::new(HashMap::new()),
                triggers,
                ready_timeout,
            }),
        };
        (watches, receiver)
    }

    /// Records which KubeadmControlPlane the cluster's changes wake.
    pub(super) fn remember(&self, cluster: &ClusterKey, kcp: KcpRef) {
        let mut kcps = self.inner.kcps.lock().expect("kcps lock");
        match kcps.get(cluster) {
            Some(current) => *current.lock().expect("kcp lock") = kcp,
            None => {
                kcps.insert(cluster.clone(), Arc::new(Mutex::new(kcp)));
            }
        }
    }

    /// The KubeadmControlPlane of the cluster, if a reconcile named it.
    pub(super) fn kcp_of(&self, cluster: &ClusterKey) -> Option<KcpRef> {
        let kcps = self.inner.kcps.lock().expect("kcps lock");
        let kcp = kcps.get(cluster)?;
        Some(kcp.lock().expect("kcp lock").clone())
    }

    /// The connection to the cluster changed: drops its watches (the next reconcile starts
    /// them on the new client) and reconciles its control plane.
    pub(super) fn connection_changed(&self, cluster: &ClusterKey) {
        self.inner
            .watched
            .lock()
            .expect("watched lock")
            .remove(cluster);
        let kcp = self
            .inner
            .kcps
            .lock()
            .expect("kcps lock")
            .get(cluster)
            .cloned();
        if let Some(kcp) = kcp {
            let kcp = kcp.lock().expect("kcp lock").clone();
            let _ = self.inner.triggers.unbounded_send(kcp);
        }
    }

    /// Forgets the cluster (its control plane is gone).
    pub(super) fn forget(&self, cluster: &ClusterKey) {
        self.inner
            .watched
            .lock()
            .expect("watched lock")
            .remove(cluster);
        self.inner.kcps.lock().expect("kcps lock").remove(cluster);
    }

    /// The workload cluster's control plane state, from the caches, starting the watches on
    /// `client` if they are not running.
    pub(super) async fn observe(
        &self,
        cluster: &ClusterKey,
        client: &kube::Client,
    ) -> Result<WorkloadState, String> {
        let watched = self.watched(cluster, client);
        let timeout = self.inner.ready_timeout;
        if tokio::time::timeout(timeout, watched.ready.wait())
            .await
            .is_err()
        {
            return Err(format!(
                "the control plane Pods of workload cluster {cluster} could not be listed within {timeout:?}"
            ));
        }
        let kubeadm_config = watched
            .config_maps
            .get(&ObjectRef::new("kubeadm-config").within(KUBE_SYSTEM))
            .is_some();
        let pods = watched.pods.state();
        let members = etcd::members_of_pods(pods.iter().map(AsRef::as_ref))
            .map_err(|error| error.to_string());
        let etcd_endpoints = etcd::advertised_endpoints(pods.iter().map(AsRef::as_ref));
        let pods = pods
            .iter()
            .map(|pod| (pod.metadata.name.clone().unwrap_or_default(), is_ready(pod)))
            .collect();
        Ok(WorkloadState {
            kubeadm_config,
            pods,
            members,
            etcd_endpoints,
        })
    }

    fn watched(&self, cluster: &ClusterKey, client: &kube::Client) -> Arc<Watched> {
        let mut watched = self.inner.watched.lock().expect("watched lock");
        if let Some(existing) = watched.get(cluster) {
            return existing.clone();
        }
        let kcp = self
            .inner
            .kcps
            .lock()
            .expect("kcps lock")
            .get(cluster)
            .cloned();
        let pods: Api<Pod> = Api::namespaced(client.clone(), KUBE_SYSTEM);
        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), KUBE_SYSTEM);
        let trigger = Trigger {
            kcp,
            pending: Arc::new(AtomicBool::new(false)),
            triggers: self.inner.triggers.clone(),
        };
        let (pod_store, pod_task) = self.watch(
            cluster,
            pods,
            watcher::Config::default().labels("tier=control-plane"),
            trigger.clone(),
        );
        let (config_map_store, config_map_task) =
            self.watch(cluster, config_maps, watcher::Config::default(), trigger);
        let ready = CachesReady::new(vec![
            CachesReady::store(&pod_store),
            CachesReady::store(&config_map_store),
        ]);
        let new = Arc::new(Watched {
            pods: pod_store,
            config_maps: config_map_store,
            ready,
            _tasks: [pod_task, config_map_task],
        });
        watched.insert(cluster.clone(), new.clone());
        new
    }

    /// A reflector of `api`, triggering the cluster's control plane after every change.
    fn watch<K>(
        &self,
        cluster: &ClusterKey,
        api: Api<K>,
        config: watcher::Config,
        trigger: Trigger,
    ) -> (Store<K>, AbortOnDrop)
    where
        K: kube::Resource<DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        let (store, writer) = reflector::store();
        let cluster = cluster.clone();
        let task = tokio::spawn(async move {
            let mut events = watcher(api, config)
                .default_backoff()
                .reflect(writer)
                .touched_objects()
                .boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(_) => {
                        trigger.soon();
                    }
                    Err(error) => {
                        tracing::debug!(%error, cluster = %cluster, "Workload cluster watch failed, retrying");
                    }
                }
            }
        });
        (store, AbortOnDrop(task))
    }
}

/// Triggers a cluster's control plane [`TRIGGER_DELAY`] after a change, once for all the
/// changes of its watches until then.
#[derive(Clone)]
struct Trigger {
    kcp: Option<Arc<Mutex<KcpRef>>>,
    /// A trigger is scheduled.
    pending: Arc<AtomicBool>,
    triggers: mpsc::UnboundedSender<KcpRef>,
}

impl Trigger {
    /// Schedules a trigger unless one is; returns whether this call did.
    fn soon(&self) -> bool {
        let Some(kcp) = self.kcp.clone() else {
            return false;
        };
        if self.pending.swap(true, Ordering::AcqRel) {
            return false;
        }
        let (pending, triggers) = (self.pending.clone(), self.triggers.clone());
        tokio::spawn(async move {
            tokio::time::sleep(TRIGGER_DELAY).await;
            // Cleared before the control plane reads the caches: a change after this point
            // schedules another trigger.
            pending.store(false, Ordering::Release);
            let kcp = kcp.lock().expect("kcp lock").clone();
            let _ = triggers.unbounded_send(kcp);
        });
        true
    }
}

/// Whether the Pod's Ready condition is True.
pub(super) fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn changes_in_a_row_trigger_the_control_plane_once() {
        let (triggers, mut received) = mpsc::unbounded();
        let kcp = ObjectRef::<KubeadmControlPlane>::new("kcp").within("default");
        let trigger = Trigger {
            kcp: Some(Arc::new(Mutex::new(kcp.clone()))),
            pending: Arc::new(AtomicBool::new(false)),
            triggers,
        };
        assert!(trigger.soon(), "the first change schedules a trigger");
        for _ in 0..3 {
            assert!(!trigger.soon(), "the next ones join it");
        }
        assert_eq!(received.next().await, Some(kcp.clone()));
        assert!(
            received.try_recv().is_err(),
            "one trigger for the four changes"
        );

        // A change after the trigger was sent schedules another.
        assert!(trigger.soon());
        assert_eq!(received.next().await, Some(kcp));

        // A cluster with no control plane known triggers nothing.
        let (triggers, _received) = mpsc::unbounded();
        let orphan = Trigger {
            kcp: None,
            pending: Arc::new(AtomicBool::new(false)),
            triggers,
        };
        assert!(!orphan.soon());
    }
}
