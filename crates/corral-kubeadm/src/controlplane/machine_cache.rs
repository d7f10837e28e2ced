//! The control plane Machines of each Cluster, kept from the controller's Machine watch.
//!
//! Every reconcile reads its control plane's Machines, and every Machine event of any cluster
//! wakes a reconcile: scanning a cache of all Machines for one cluster's three made a
//! reconcile's cost grow with the number of clusters (seen in profiles of the 100-cluster
//! benchmark). This cache files each control plane Machine (label
//! `cluster.x-k8s.io/control-plane`) under its Cluster (namespace and
//! `cluster.x-k8s.io/cluster-name` label), so a reconcile reads only its own. It applies the
//! watch's events as kube's reflector store does: a relist (`Init` .. `InitDone`) replaces the
//! whole content at its end, so Machines deleted while the watch was down disappear, and the
//! content stays the last complete one meanwhile.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use corral_api::Machine;
use corral_api::labels::{CLUSTER_NAME, CONTROL_PLANE};
use corral_controllers::cluster_cache::ClusterKey;
use futures::FutureExt;
use futures::future::BoxFuture;
use kube::ResourceExt;
use kube::runtime::watcher::Event;

#[cfg(test)]
mod tests;

/// The control plane Machines of each Cluster (cheap to clone: a handle).
#[derive(Clone)]
pub(super) struct MachineCache(Arc<Inner>);

struct Inner {
    state: Mutex<State>,
    /// True once a first complete list was applied.
    filled: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    current: Filed,
    /// What a relist has brought so far; replaces `current` at `InitDone`.
    relisting: Option<Filed>,
}

/// Machines filed by Cluster.
#[derive(Default)]
struct Filed {
    by_cluster: HashMap<ClusterKey, BTreeMap<String, Arc<Machine>>>,
    /// Where each filed Machine is, by namespace and name: a Machine whose labels change moves.
    clusters: HashMap<(String, String), ClusterKey>,
}

impl Filed {
    fn apply(&mut self, machine: &Arc<Machine>) {
        let id = (machine.namespace().unwrap_or_default(), machine.name_any());
        self.remove(&id);
        let labels = machine.labels();
        let Some(cluster) = labels.get(CLUSTER_NAME) else {
            return;
        };
        if !labels.contains_key(CONTROL_PLANE) {
            return;
        }
        let key = ClusterKey::new(&id.0, cluster);
        self.by_cluster
            .entry(key.clone())
            .or_default()
            .insert(id.1.clone(), machine.clone());
        self.clusters.insert(id, key);
    }

    fn remove(&mut self, id: &(String, String)) {
        let Some(key) = self.clusters.remove(id) else {
            return;
        };
        if let Some(machines) = self.by_cluster.get_mut(&key) {
            machines.remove(&id.1);
            if machines.is_empty() {
                self.by_cluster.remove(&key);
            }
        }
    }
}

impl MachineCache {
    pub(super) fn new() -> Self {
        let (filled, _) = tokio::sync::watch::channel(false);
        MachineCache(Arc::new(Inner {
            state: Mutex::default(),
            filled,
        }))
    }

    /// Applies one event of the Machine watch; returns the Machine it touched (as kube's
    /// `touched_objects`: applied, deleted, or listed), for the controller's triggers.
    pub(super) fn apply(&self, event: Event<Machine>) -> Option<Arc<Machine>> {
        let mut state = self.0.state.lock().expect("machine cache lock");
        match event {
            Event::Apply(machine) => {
                let machine = Arc::new(machine);
                state.current.apply(&machine);
                Some(machine)
            }
            Event::Delete(machine) => {
                let machine = Arc::new(machine);
                state
                    .current
                    .remove(&(machine.namespace().unwrap_or_default(), machine.name_any()));
                Some(machine)
            }
            Event::Init => {
                state.relisting = Some(Filed::default());
                None
            }
            Event::InitApply(machine) => {
                let machine = Arc::new(machine);
                state
                    .relisting
                    .get_or_insert_with(Filed::default)
                    .apply(&machine);
                Some(machine)
            }
            Event::InitDone => {
                state.current = state.relisting.take().unwrap_or_default();
                drop(state);
                self.0.filled.send_replace(true);
                None
            }
        }
    }

    /// The control plane Machines of the Cluster, whatever controls them, in name order.
    pub(super) fn control_plane_machines(&self, cluster: &ClusterKey) -> Vec<Arc<Machine>> {
        let state = self.0.state.lock().expect("machine cache lock");
        state
            .current
            .by_cluster
            .get(cluster)
            .map(|machines| machines.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Resolves once the cache holds a first complete list (for `CachesReady`): before that a
    /// control plane would look as if it had no Machines.
    pub(super) fn filled(&self) -> BoxFuture<'static, ()> {
        let mut filled = self.0.filled.subscribe();
        async move {
            let _ = filled.wait_for(|filled| *filled).await;
        }
        .boxed()
    }
}
