//! A cache's objects by Cluster, and within a Cluster by a few keys (controller, control-plane
//! label, provider ID), so that a reconcile reads the Machines of one Cluster, or of one
//! MachineSet, without scanning every Machine.
//!
//! A kube-runtime [`Store`] only answers "this object" or "all objects". A MachineSet that
//! scans all Machines to find its own does work that grows with the number of clusters on
//! every reconcile: at a thousand clusters, most of a reconcile. Within one Cluster the same
//! holds for the number of Machines: a MachineDeployment of 10,000 replicas has every Machine
//! reconcile that deletes one count the Cluster's control plane Machines, and every new Node
//! look for its Machine by provider ID. [`ClusterIndex`] keeps, for each Cluster (namespace and
//! `spec.clusterName`), its objects sorted by name, and for each (Cluster, key) the objects
//! that have that key ([`IndexKeys`]). It holds the store's own `Arc`s: the objects are in
//! memory once.
//!
//! # Consistency with the store
//!
//! The index is fed by the same watch as the store, right after the store applied each event
//! (see [`super::shared`]): the store is never behind the index, and everything the index
//! shows the store shows too (or showed a moment ago). A reader that checks its expectations
//! ("the Machine I created is in the cache") must check them against the index
//! ([`ClusterIndex::contains`], [`ClusterIndex::get`]), not the store: the store may already
//! show an object the index does not list yet, and a count read from the index right after
//! would miss it.
//!
//! During a relist the index goes on showing what it showed before; when the list is complete
//! it takes the store's new contents at once. It is ready ([`ClusterIndex::ready`]) once it
//! holds a complete list, like the store; a controller waits for both before its first
//! reconcile.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use crate::cluster_cache::ClusterKey;

/// How an object names its Cluster (`spec.clusterName` for Cluster API's objects).
pub type ClusterOf<K> = fn(&K) -> &str;

/// The keys an object is found by within its Cluster, besides its name (see [`key`]).
pub type KeysOf<K> = fn(&K, &mut Vec<String>);

/// How a cache's objects are indexed: by Cluster, then by keys.
pub struct IndexKeys<K> {
    /// The object's Cluster.
    pub cluster_of: ClusterOf<K>,
    /// The object's keys within its Cluster.
    pub keys_of: KeysOf<K>,
}

impl<K> Clone for IndexKeys<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for IndexKeys<K> {}

impl<K: Resource> IndexKeys<K> {
    /// By Cluster, then by the keys every object has: its controller ([`key::controller`])
    /// and whether it is labelled a control plane object ([`key::CONTROL_PLANE`]).
    pub fn by_metadata(cluster_of: ClusterOf<K>) -> Self {
        IndexKeys {
            cluster_of,
            keys_of: key::metadata_keys::<K>,
        }
    }
}

/// The keys of [`IndexKeys`].
pub mod key {
    use kube::Resource;

    /// Objects labelled `cluster.x-k8s.io/control-plane`.
    pub const CONTROL_PLANE: &str = "control-plane";

    /// Objects labelled `cluster.x-k8s.io/pool-name` (Machines of a MachinePool).
    pub const MACHINE_POOL: &str = "machine-pool";

    /// Objects whose controller owner has `uid`; `None`: objects without a controller.
    pub fn controller(uid: Option<&str>) -> String {
        format!("controller/{}", uid.unwrap_or_default())
    }

    /// Objects (Machines) with `spec.providerID` equal to `provider_id`.
    pub fn provider_id(provider_id: &str) -> String {
        format!("provider-id/{provider_id}")
    }

    /// The controller, control-plane and machine-pool keys of any object.
    pub fn metadata_keys<K: Resource>(object: &K, keys: &mut Vec<String>) {
        let meta = object.meta();
        let uid = meta
            .owner_references
            .iter()
            .flatten()
            .find(|owner| owner.controller == Some(true))
            .map(|owner| owner.uid.as_str());
        keys.push(controller(uid));
        if let Some(labels) = &meta.labels {
            if labels.contains_key(corral_api::labels::CONTROL_PLANE) {
                keys.push(CONTROL_PLANE.to_owned());
            }
            if labels.contains_key(corral_api::labels::MACHINE_POOL_NAME) {
                keys.push(MACHINE_POOL.to_owned());
            }
        }
    }
}

/// A cache's objects by Cluster and key; cheap to clone (shared).
pub struct ClusterIndex<K> {
    state: Arc<RwLock<State<K>>>,
    ready: tokio::sync::watch::Receiver<bool>,
    ready_tx: Arc<tokio::sync::watch::Sender<bool>>,
    keys: IndexKeys<K>,
}

impl<K> Clone for ClusterIndex<K> {
    fn clone(&self) -> Self {
        ClusterIndex {
            state: self.state.clone(),
            ready: self.ready.clone(),
            ready_tx: self.ready_tx.clone(),
            keys: self.keys,
        }
    }
}

type Objects<K> = BTreeMap<String, Arc<K>>;

/// One Cluster's objects: all of them, and those of each key.
struct Filing<K> {
    all: Objects<K>,
    by_key: HashMap<String, Objects<K>>,
}

impl<K> Default for Filing<K> {
    fn default() -> Self {
        Filing {
            all: BTreeMap::new(),
            by_key: HashMap::new(),
        }
    }
}

/// Where an object is filed, to move or remove it.
struct Filed {
    cluster: ClusterKey,
    keys: Vec<String>,
}

struct State<K> {
    by_cluster: HashMap<ClusterKey, Filing<K>>,
    /// Object (namespace, name) → where it is filed.
    filed: HashMap<(String, String), Filed>,
}

impl<K> Default for State<K> {
    fn default() -> Self {
        State {
            by_cluster: HashMap::new(),
            filed: HashMap::new(),
        }
    }
}

impl<K> State<K> {
    fn insert(&mut self, cluster: ClusterKey, keys: Vec<String>, name: String, object: Arc<K>) {
        let at = (cluster.namespace.clone(), name);
        if let Some(filed) = self.filed.get(&at)
            && filed.cluster == cluster
            && filed.keys == keys
        {
            // Filed the same way as before (the common case: a status change): only the
            // `Arc`s change.
            let filing = self.by_cluster.entry(cluster).or_default();
            for key in &keys {
                if let Some(slot) = filing
                    .by_key
                    .get_mut(key)
                    .and_then(|objects| objects.get_mut(&at.1))
                {
                    *slot = object.clone();
                }
            }
            if let Some(slot) = filing.all.get_mut(&at.1) {
                *slot = object;
            }
            return;
        }
        self.remove(&at.0, &at.1);
        let filing = self.by_cluster.entry(cluster.clone()).or_default();
        for key in &keys {
            filing
                .by_key
                .entry(key.clone())
                .or_default()
                .insert(at.1.clone(), object.clone());
        }
        filing.all.insert(at.1.clone(), object);
        self.filed.insert(at, Filed { cluster, keys });
    }

    fn remove(&mut self, namespace: &str, name: &str) {
        let Some(filed) = self.filed.remove(&(namespace.to_owned(), name.to_owned())) else {
            return;
        };
        let Some(filing) = self.by_cluster.get_mut(&filed.cluster) else {
            return;
        };
        for key in &filed.keys {
            if let Some(objects) = filing.by_key.get_mut(key) {
                objects.remove(name);
                if objects.is_empty() {
                    filing.by_key.remove(key);
                }
            }
        }
        filing.all.remove(name);
        if filing.all.is_empty() {
            self.by_cluster.remove(&filed.cluster);
        }
    }
}

impl<K> ClusterIndex<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    /// An empty index of objects filed as `keys` says.
    pub fn new(keys: IndexKeys<K>) -> Self {
        let (ready_tx, ready) = tokio::sync::watch::channel(false);
        ClusterIndex {
            state: Arc::new(RwLock::new(State::default())),
            ready,
            ready_tx: Arc::new(ready_tx),
            keys,
        }
    }

    fn file(&self, state: &mut State<K>, object: Arc<K>) {
        let cluster = ClusterKey::new(
            &object.namespace().unwrap_or_default(),
            (self.keys.cluster_of)(&object),
        );
        let mut keys = Vec::new();
        (self.keys.keys_of)(&object, &mut keys);
        state.insert(cluster, keys, object.name_any(), object);
    }

    /// Applies one watch event, as `store` did just before; the index holds the store's
    /// `Arc`s where the store has them.
    pub fn apply(&self, event: &watcher::Event<K>, store: &Store<K>) {
        match event {
            watcher::Event::Apply(object) => {
                let object = store
                    .get(&kube::runtime::reflector::ObjectRef::from_obj(object))
                    .unwrap_or_else(|| Arc::new(object.clone()));
                self.insert(object);
            }
            watcher::Event::Delete(object) => {
                self.state
                    .write()
                    .expect("index lock")
                    .remove(&object.namespace().unwrap_or_default(), &object.name_any());
            }
            // The store swaps in the new list at its end; so does the index.
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
            watcher::Event::InitDone => self.replace(store.state()),
        }
    }

    /// Files one created or changed object.
    pub fn insert(&self, object: Arc<K>) {
        let mut state = self.state.write().expect("index lock");
        self.file(&mut state, object);
    }

    /// Replaces everything with a complete list, and makes the index ready.
    pub fn replace(&self, objects: impl IntoIterator<Item = Arc<K>>) {
        let mut fresh = State::default();
        for object in objects {
            self.file(&mut fresh, object);
        }
        *self.state.write().expect("index lock") = fresh;
        self.ready_tx.send_replace(true);
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
        self.get(cluster, name).is_some()
    }

    /// `read` of `cluster`'s filing, if it has objects.
    fn read_cluster<T>(
        &self,
        cluster: &ClusterKey,
        read: impl FnOnce(&Filing<K>) -> T,
    ) -> Option<T> {
        self.state
            .read()
            .expect("index lock")
            .by_cluster
            .get(cluster)
            .map(read)
    }

    /// `read` of `cluster`'s objects with `key`, if there are any.
    fn read_key<T>(
        &self,
        cluster: &ClusterKey,
        key: &str,
        read: impl FnOnce(&Objects<K>) -> T,
    ) -> Option<T> {
        self.state
            .read()
            .expect("index lock")
            .by_cluster
            .get(cluster)
            .and_then(|filing| filing.by_key.get(key))
            .map(read)
    }

    /// The object `name` of `cluster`, as the index lists it.
    pub fn get(&self, cluster: &ClusterKey, name: &str) -> Option<Arc<K>> {
        self.read_cluster(cluster, |filing| filing.all.get(name).cloned())
            .flatten()
    }

    /// The names of `cluster`'s objects, sorted.
    pub fn names(&self, cluster: &ClusterKey) -> Vec<String> {
        self.read_cluster(cluster, |filing| filing.all.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// `cluster`'s objects, sorted by name.
    pub fn objects(&self, cluster: &ClusterKey) -> Vec<Arc<K>> {
        self.read_cluster(cluster, |filing| filing.all.values().cloned().collect())
            .unwrap_or_default()
    }

    /// How many objects `cluster` has.
    pub fn count(&self, cluster: &ClusterKey) -> usize {
        self.read_cluster(cluster, |filing| filing.all.len())
            .unwrap_or_default()
    }

    /// How many objects of `cluster` have `key`.
    pub fn count_with_key(&self, cluster: &ClusterKey, key: &str) -> usize {
        self.read_key(cluster, key, BTreeMap::len)
            .unwrap_or_default()
    }

    /// `cluster`'s objects with key `with`, and those with neither `with` nor `without`, each
    /// sorted by name. Read from the filing's keys: a Cluster of 10,000 Machines splits its
    /// control plane from its workers without reading any Machine's labels.
    pub fn split(
        &self,
        cluster: &ClusterKey,
        with: &str,
        without: &str,
    ) -> (Vec<Arc<K>>, Vec<Arc<K>>) {
        self.read_cluster(cluster, |filing| {
            let (with, without) = (filing.by_key.get(with), filing.by_key.get(without));
            let selected = with
                .map(|objects| objects.values().cloned().collect())
                .unwrap_or_default();
            let filed_in = |objects: Option<&Objects<K>>, name: &str| {
                objects.is_some_and(|objects| objects.contains_key(name))
            };
            let rest = filing
                .all
                .iter()
                .filter(|(name, _)| !filed_in(with, name) && !filed_in(without, name))
                .map(|(_, object)| object.clone())
                .collect();
            (selected, rest)
        })
        .unwrap_or_default()
    }

    /// `cluster`'s objects with `key` (see [`key`]), sorted by name.
    pub fn with_key(&self, cluster: &ClusterKey, key: &str) -> Vec<Arc<K>> {
        self.read_key(cluster, key, |objects| objects.values().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
