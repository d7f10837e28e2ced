//! A cache's objects by Cluster, so that a reconcile reads the Machines (or MachineSets, or
//! MachineDeployments) of one Cluster without scanning every Cluster's.
//!
//! A kube-runtime [`Store`] only answers "this object" or "all objects". A MachineSet that
//! scans all Machines to find its own does work that grows with the number of clusters on
//! every reconcile: at a thousand clusters, most of a reconcile. [`ClusterIndex`] keeps, for
//! each Cluster (namespace and `spec.clusterName`), the names of its objects in the cache;
//! the objects themselves stay in the store, once.
//!
//! # Consistency with the store
//!
//! The index is fed by the same watch as the store, right after the store applied each event
//! (see [`super::shared`]): the store is never behind the index. So a name read from the
//! index always finds its object in the store unless the object is gone since, and whatever
//! the index shows, the store shows too. A reader that checks its expectations ("the Machine I
//! created is in the cache") must check them against the index
//! ([`ClusterIndex::contains`]), not the store: the store may already show an object the index
//! does not list yet, and a count read from the index right after would miss it.
//!
//! The index is ready ([`ClusterIndex::ready`]) once it has applied the watch's first complete
//! list, like the store; a controller waits for both before its first reconcile.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use crate::cluster_cache::ClusterKey;

/// How an object names its Cluster (`spec.clusterName` for Cluster API's objects).
pub type ClusterOf<K> = fn(&K) -> &str;

/// Names of a cache's objects per Cluster; cheap to clone (shared).
pub struct ClusterIndex<K> {
    state: Arc<RwLock<State>>,
    ready: tokio::sync::watch::Receiver<bool>,
    ready_tx: Arc<tokio::sync::watch::Sender<bool>>,
    cluster_of: ClusterOf<K>,
}

impl<K> Clone for ClusterIndex<K> {
    fn clone(&self) -> Self {
        ClusterIndex {
            state: self.state.clone(),
            ready: self.ready.clone(),
            ready_tx: self.ready_tx.clone(),
            cluster_of: self.cluster_of,
        }
    }
}

#[derive(Default)]
struct State {
    /// Cluster → names of its objects, sorted.
    by_cluster: HashMap<ClusterKey, BTreeSet<String>>,
    /// Object (namespace, name) → its Cluster, to move or remove it.
    cluster_of_object: HashMap<(String, String), ClusterKey>,
    /// A relist in progress: the objects listed so far, swapped in when it is complete.
    relist: Option<Vec<(ClusterKey, String)>>,
}

impl State {
    fn insert(&mut self, cluster: ClusterKey, name: String) {
        let key = (cluster.namespace.clone(), name.clone());
        match self.cluster_of_object.get(&key) {
            Some(previous) if *previous == cluster => return,
            Some(previous) => {
                let previous = previous.clone();
                self.remove_from(&previous, &name);
            }
            None => {}
        }
        self.by_cluster
            .entry(cluster.clone())
            .or_default()
            .insert(name);
        self.cluster_of_object.insert(key, cluster);
    }

    fn remove(&mut self, namespace: &str, name: &str) {
        if let Some(cluster) = self
            .cluster_of_object
            .remove(&(namespace.to_owned(), name.to_owned()))
        {
            self.remove_from(&cluster, name);
        }
    }

    fn remove_from(&mut self, cluster: &ClusterKey, name: &str) {
        if let Some(names) = self.by_cluster.get_mut(cluster) {
            names.remove(name);
            if names.is_empty() {
                self.by_cluster.remove(cluster);
            }
        }
    }
}

impl<K> ClusterIndex<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    /// An empty index of objects whose Cluster `cluster_of` names.
    pub fn new(cluster_of: ClusterOf<K>) -> Self {
        let (ready_tx, ready) = tokio::sync::watch::channel(false);
        ClusterIndex {
            state: Arc::new(RwLock::new(State::default())),
            ready,
            ready_tx: Arc::new(ready_tx),
            cluster_of,
        }
    }

    fn key_of(&self, object: &K) -> ClusterKey {
        ClusterKey::new(
            &object.namespace().unwrap_or_default(),
            (self.cluster_of)(object),
        )
    }

    /// Applies one watch event, as the store did just before.
    pub fn apply(&self, event: &watcher::Event<K>) {
        let mut state = self.state.write().expect("index lock");
        match event {
            watcher::Event::Apply(object) => {
                let cluster = self.key_of(object);
                state.insert(cluster, object.name_any());
            }
            watcher::Event::Delete(object) => {
                state.remove(&object.namespace().unwrap_or_default(), &object.name_any());
            }
            watcher::Event::Init => state.relist = Some(Vec::new()),
            watcher::Event::InitApply(object) => {
                let cluster = self.key_of(object);
                if let Some(relist) = state.relist.as_mut() {
                    relist.push((cluster, object.name_any()));
                }
            }
            watcher::Event::InitDone => {
                let listed = state.relist.take().unwrap_or_default();
                state.by_cluster.clear();
                state.cluster_of_object.clear();
                for (cluster, name) in listed {
                    state.insert(cluster, name);
                }
                drop(state);
                self.ready_tx.send_replace(true);
            }
        }
    }

    /// Resolves once the index holds a complete list (or its watch is gone: waiting longer is
    /// pointless then).
    pub fn ready(&self) -> BoxFuture<'static, ()> {
        let mut ready = self.ready.clone();
        async move {
            let _ = ready.wait_for(|ready| *ready).await;
        }
        .boxed()
    }

    /// Whether the index lists the object `name` of `cluster`.
    pub fn contains(&self, cluster: &ClusterKey, name: &str) -> bool {
        self.state
            .read()
            .expect("index lock")
            .by_cluster
            .get(cluster)
            .is_some_and(|names| names.contains(name))
    }

    /// The names of `cluster`'s objects, sorted.
    pub fn names(&self, cluster: &ClusterKey) -> Vec<String> {
        self.state
            .read()
            .expect("index lock")
            .by_cluster
            .get(cluster)
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// `cluster`'s objects from `store`, sorted by name; those gone from the store since the
    /// index listed them are left out.
    pub fn objects(&self, store: &Store<K>, cluster: &ClusterKey) -> Vec<Arc<K>> {
        self.names(cluster)
            .into_iter()
            .filter_map(|name| store.get(&ObjectRef::new(&name).within(&cluster.namespace)))
            .collect()
    }
}

#[cfg(test)]
mod tests;
