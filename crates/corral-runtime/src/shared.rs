//! One watch per kind for all the controllers of a [`super::Context`] (controller-runtime's
//! shared informers).
//!
//! Every core controller reads Machines; with a watch each, every Machine change crossed the
//! wire, was decoded and was copied into a cache five times, and five caches held every
//! Machine. A [`SharedCache`] watches a kind once: one store, one [`ClusterIndex`], and a
//! stream of changed objects for each controller that subscribes ([`SharedCache::applied`],
//! [`SharedCache::touched`]). The objects handed out are the store's own `Arc`s.
//!
//! # Guarantees
//!
//! - A subscriber sees every object of the store at the time it subscribes, then every change
//!   after, in order, each at least once (a change applied while it subscribes may come
//!   twice): subscribing late loses nothing.
//! - The store is updated before the index, and both before a change reaches a subscriber, so
//!   a reconcile a change asks for reads at least that change.
//! - Subscribers' streams are unbounded: a slow controller delays no other, and no change is
//!   dropped for it.
//! - The watch stops when the last handle of the [`Caches`] that made it is dropped.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};

use super::changes::Fingerprints;
use super::index::{ClusterIndex, ClusterOf, IndexKeys};
use super::lean::{self, Lean};
use super::triggers::AbortOnDrop;

/// A change a subscriber is told of.
#[derive(Debug)]
struct Change<K> {
    object: Arc<K>,
    deleted: bool,
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        Change {
            object: self.object.clone(),
            deleted: self.deleted,
        }
    }
}

type Subscribers<K> = Arc<Mutex<Vec<mpsc::UnboundedSender<Change<K>>>>>;

/// The shared watch of one kind: its store, its index by Cluster, its subscribers.
pub struct SharedCache<K: Resource<DynamicType = ()> + 'static> {
    store: Store<K>,
    index: ClusterIndex<K>,
    subscribers: Subscribers<K>,
}

impl<K: Resource<DynamicType = ()> + 'static> Clone for SharedCache<K> {
    fn clone(&self) -> Self {
        SharedCache {
            store: self.store.clone(),
            index: self.index.clone(),
            subscribers: self.subscribers.clone(),
        }
    }
}

/// What a shared cache can hold: a kind served by the API, decoded from JSON.
pub trait Cached:
    Resource<DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + serde::de::DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Cached for K where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// Drops the managedFields entries of every field manager but those in `keep`.
///
/// No controller reads them, except the MachineSet its own (the labels and annotations it
/// propagated); they are a good part of every cached object (an entry per manager, with a tree
/// of every field it set), so a cache without them holds, copies and diffs far less
/// (controller-runtime caches offer the same transform, `TransformStripManagedFields`). The
/// API server keeps them; the controllers' merge patches never send them.
pub fn trim_managed_fields<K: Resource>(object: &mut K, keep: &[&str]) {
    let metadata = object.meta_mut();
    if let Some(entries) = &mut metadata.managed_fields {
        entries.retain(|entry| {
            entry
                .manager
                .as_deref()
                .is_some_and(|manager| keep.contains(&manager))
        });
        if entries.is_empty() {
            metadata.managed_fields = None;
        }
    }
}

impl<K: Cached> SharedCache<K> {
    /// Starts watching every `K`; the returned task runs the watch until dropped. Objects are
    /// kept with the managedFields of the managers in `keep` only ([`trim_managed_fields`]).
    fn start(
        client: Client,
        keys: IndexKeys<K>,
        keep: &'static [&'static str],
    ) -> (Self, AbortOnDrop) {
        let (store, mut writer) = reflector::store();
        let index = ClusterIndex::new(keys);
        let subscribers: Subscribers<K> = Arc::new(Mutex::new(Vec::new()));
        let cache = SharedCache {
            store: store.clone(),
            index: index.clone(),
            subscribers: subscribers.clone(),
        };
        let kind = K::kind(&());
        let task = tokio::spawn(async move {
            // Decoded without the managedFields entries no controller reads (see `lean`).
            let events =
                watcher(Api::<Lean<K>>::all(client), watcher::Config::default()).default_backoff();
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                let mut event = match event {
                    Ok(event) => lean::unwrap_event(event),
                    Err(error) => {
                        tracing::warn!(%kind, %error, "Watch failed; retrying");
                        continue;
                    }
                };
                if let watcher::Event::Apply(object)
                | watcher::Event::InitApply(object)
                | watcher::Event::Delete(object) = &mut event
                {
                    trim_managed_fields(object, keep);
                }
                writer.apply_watcher_event(&event);
                let change = match event {
                    watcher::Event::Apply(object) => {
                        // The store's own copy, not a second one.
                        let object = store
                            .get(&ObjectRef::from_obj(&object))
                            .unwrap_or_else(|| Arc::new(object));
                        index.insert(object.clone());
                        Some(Change {
                            object,
                            deleted: false,
                        })
                    }
                    event => {
                        index.apply(&event, &store);
                        match event {
                            watcher::Event::InitApply(object) => Some(Change {
                                object: Arc::new(object),
                                deleted: false,
                            }),
                            watcher::Event::Delete(object) => Some(Change {
                                object: Arc::new(object),
                                deleted: true,
                            }),
                            watcher::Event::Apply(_)
                            | watcher::Event::Init
                            | watcher::Event::InitDone => None,
                        }
                    }
                };
                if let Some(change) = change {
                    let mut subscribers = subscribers.lock().expect("subscribers lock");
                    subscribers
                        .retain(|subscriber| subscriber.unbounded_send(change.clone()).is_ok());
                }
            }
        });
        (cache, AbortOnDrop(task))
    }

    /// The store.
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// The index by Cluster.
    pub fn index(&self) -> &ClusterIndex<K> {
        &self.index
    }

    /// The object `key` names, if cached.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        self.store.get(key)
    }

    /// `cluster`'s objects, sorted by name.
    pub fn of_cluster(&self, cluster: &crate::cluster_cache::ClusterKey) -> Vec<Arc<K>> {
        self.index.objects(cluster)
    }

    /// `cluster`'s objects with `key` ([`super::index::key`]), sorted by name.
    pub fn with_key(&self, cluster: &crate::cluster_cache::ClusterKey, key: &str) -> Vec<Arc<K>> {
        self.index.with_key(cluster, key)
    }

    /// Resolves once the store and the index hold a complete list.
    pub fn ready(&self) -> BoxFuture<'static, ()> {
        let store = super::ready::CachesReady::store(&self.store);
        let index = self.index.ready();
        async move {
            futures::join!(store, index);
        }
        .boxed()
    }

    fn subscribe(&self) -> mpsc::UnboundedReceiver<Change<K>> {
        let (sender, receiver) = mpsc::unbounded();
        let mut subscribers = self.subscribers.lock().expect("subscribers lock");
        // What the store holds now, then (registered under the same lock the watch sends
        // under) every change after.
        for object in self.store.state() {
            let _ = sender.unbounded_send(Change {
                object,
                deleted: false,
            });
        }
        subscribers.push(sender);
        receiver
    }

    /// Objects created or changed (as kube-runtime's `applied_objects`).
    pub fn applied(&self) -> impl Stream<Item = Result<Arc<K>, watcher::Error>> + Send + use<K> {
        self.subscribe().filter_map(|change| {
            futures::future::ready((!change.deleted).then_some(Ok(change.object)))
        })
    }

    /// Objects created, changed or deleted (as kube-runtime's `touched_objects`).
    pub fn touched(&self) -> impl Stream<Item = Result<Arc<K>, watcher::Error>> + Send + use<K> {
        self.subscribe().map(|change| Ok(change.object))
    }

    /// [`SharedCache::applied`], only for objects whose fingerprint in `fingerprints` changed
    /// (see [`crate::changes`] for the rule): `read` says what the subscriber reads of an
    /// object, `None` for an object it does not read at all (no entry is kept for it). A
    /// deleted object's entry is forgotten.
    pub fn applied_changed<H, F>(
        &self,
        fingerprints: Arc<Fingerprints>,
        read: F,
    ) -> impl Stream<Item = Result<Arc<K>, watcher::Error>> + Send + use<K, H, F>
    where
        H: Hash,
        F: Fn(&K) -> Option<H> + Send + 'static,
    {
        self.subscribe().filter_map(move |change| {
            futures::future::ready(if change.deleted {
                fingerprints.deleted(change.object.as_ref());
                None
            } else {
                read(&change.object)
                    .is_some_and(|read| fingerprints.changed(change.object.as_ref(), read))
                    .then_some(Ok(change.object))
            })
        })
    }

    /// [`SharedCache::applied_changed`], and every deletion (its entry forgotten), as
    /// [`SharedCache::touched`].
    pub fn touched_changed<H, F>(
        &self,
        fingerprints: Arc<Fingerprints>,
        read: F,
    ) -> impl Stream<Item = Result<Arc<K>, watcher::Error>> + Send + use<K, H, F>
    where
        H: Hash,
        F: Fn(&K) -> Option<H> + Send + 'static,
    {
        self.subscribe().filter_map(move |change| {
            futures::future::ready(if change.deleted {
                fingerprints.deleted(change.object.as_ref());
                Some(Ok(change.object))
            } else {
                read(&change.object)
                    .is_some_and(|read| fingerprints.changed(change.object.as_ref(), read))
                    .then_some(Ok(change.object))
            })
        })
    }
}

/// The shared caches of one set of controllers, one per kind, made on first use.
#[derive(Clone)]
pub struct Caches {
    client: Client,
    inner: Arc<Mutex<CachesInner>>,
}

#[derive(Default)]
struct CachesInner {
    caches: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    tasks: Vec<AbortOnDrop>,
    cluster_cache: Option<crate::cluster_cache::ClusterCache>,
}

impl Caches {
    /// No caches yet; each is made, and its watch started, by the first [`Caches::get`].
    pub fn new(client: Client) -> Self {
        Caches {
            client,
            inner: Arc::new(Mutex::new(CachesInner::default())),
        }
    }

    /// The shared cache of `K`, indexed by the Cluster `cluster_of` names and by the keys of
    /// [`IndexKeys::by_metadata`].
    pub fn get<K: Cached>(&self, cluster_of: ClusterOf<K>) -> SharedCache<K> {
        self.get_keyed(IndexKeys::by_metadata(cluster_of))
    }

    /// The shared cache of `K`, indexed as `keys` says. The first call for a kind decides
    /// (the helpers below are the one place each kind's keys are chosen).
    pub fn get_keyed<K: Cached>(&self, keys: IndexKeys<K>) -> SharedCache<K> {
        self.get_trimmed(keys, &[])
    }

    /// [`Caches::get_keyed`], keeping the managedFields entries of the managers in `keep`.
    fn get_trimmed<K: Cached>(
        &self,
        keys: IndexKeys<K>,
        keep: &'static [&'static str],
    ) -> SharedCache<K> {
        let mut inner = self.inner.lock().expect("caches lock");
        if let Some(cache) = inner
            .caches
            .get(&TypeId::of::<K>())
            .and_then(|cache| cache.downcast_ref::<SharedCache<K>>())
        {
            return cache.clone();
        }
        let (cache, task) = SharedCache::start(self.client.clone(), keys, keep);
        inner
            .caches
            .insert(TypeId::of::<K>(), Box::new(cache.clone()));
        inner.tasks.push(task);
        cache
    }

    /// The connections to workload clusters of the controllers sharing these caches, made by
    /// the first call with its `config` (later calls get the same, whatever they pass): one
    /// connection, Node watch and health probe per workload cluster for all of them. Its
    /// kubeconfig Secret watch ([`crate::cluster_cache::ClusterCache::run`]) is run by the core
    /// controllers (`corral_controllers::run_with_caches`).
    pub fn cluster_cache(
        &self,
        config: &crate::cluster_cache::ClusterCacheConfig,
    ) -> crate::cluster_cache::ClusterCache {
        let mut inner = self.inner.lock().expect("caches lock");
        inner
            .cluster_cache
            .get_or_insert_with(|| {
                crate::cluster_cache::ClusterCache::new(self.client.clone(), config.clone())
            })
            .clone()
    }
}

impl Caches {
    /// Machines, by `spec.clusterName`, controller, control-plane and pool-name labels and
    /// `spec.providerID`; with the MachineSet's managedFields entry, which says what it
    /// propagated.
    pub fn machines(&self) -> SharedCache<corral_api::Machine> {
        self.get_trimmed(
            IndexKeys {
                cluster_of: |machine: &corral_api::Machine| machine.spec.cluster_name.as_str(),
                keys_of: |machine, keys| {
                    super::index::key::metadata_keys(machine, keys);
                    if let Some(id) = machine.spec.provider_id.as_deref() {
                        keys.push(super::index::key::provider_id(id));
                    }
                },
            },
            &[corral_api::field_managers::MACHINE_SET],
        )
    }

    /// MachineSets, by `spec.clusterName`.
    pub fn machine_sets(&self) -> SharedCache<corral_api::MachineSet> {
        self.get(|ms: &corral_api::MachineSet| ms.spec.cluster_name.as_str())
    }

    /// MachineDeployments, by `spec.clusterName`.
    pub fn machine_deployments(&self) -> SharedCache<corral_api::MachineDeployment> {
        self.get(|md: &corral_api::MachineDeployment| md.spec.cluster_name.as_str())
    }

    /// MachineHealthChecks, by `spec.clusterName`.
    pub fn machine_health_checks(&self) -> SharedCache<corral_api::MachineHealthCheck> {
        self.get(|check: &corral_api::MachineHealthCheck| check.spec.cluster_name.as_str())
    }

    /// Clusters, each its own.
    pub fn clusters(&self) -> SharedCache<corral_api::Cluster> {
        self.get(|cluster: &corral_api::Cluster| {
            cluster.metadata.name.as_deref().unwrap_or_default()
        })
    }
}

/// Reconcile requests for the objects of a stream of changed objects (kube-runtime's
/// `trigger_self` for shared objects).
pub fn trigger_own<K, S>(
    objects: S,
) -> impl Stream<Item = Result<kube::runtime::controller::ReconcileRequest<K>, watcher::Error>>
+ Send
+ use<K, S>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
    S: Stream<Item = Result<Arc<K>, watcher::Error>> + Send,
{
    objects.map(|object| object.map(|object| ObjectRef::from_obj(object.as_ref()).into()))
}

/// [`trigger_own`] with the watch events of this process's own writes held back by `window`
/// and joined with the other held requests of the same object
/// ([`super::coalesce::coalesce_marked`]); any other change is reconciled at once.
pub fn trigger_own_coalesced<K, S>(
    objects: S,
    window: impl Into<super::coalesce::Window<K>>,
) -> super::Queue<K>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
    S: Stream<Item = Result<Arc<K>, watcher::Error>> + Send + 'static,
{
    super::coalesce::coalesce_marked(
        objects.map(|object| {
            object.map(|object| {
                (
                    ObjectRef::from_obj(object.as_ref()).into(),
                    super::patch::is_own_write(object.as_ref()),
                )
            })
        }),
        window,
    )
}

/// [`trigger_own_coalesced`] joined with `related`: requests mapped from other objects'
/// changes, held back by the same window and joined with the held requests of the same
/// object. Separate windows for the two would each end in a reconcile: a MachineSet of
/// thousands whose Machines change while its own status write comes back was reconciled
/// twice per window, each reconcile summing up every Machine.
pub fn trigger_own_coalesced_with<K, S, R>(
    objects: S,
    related: R,
    window: impl Into<super::coalesce::Window<K>>,
) -> super::Queue<K>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
    S: Stream<Item = Result<Arc<K>, watcher::Error>> + Send + 'static,
    R: Stream<Item = Result<kube::runtime::controller::ReconcileRequest<K>, watcher::Error>>
        + Send
        + 'static,
{
    let own = objects.map(|object| {
        object.map(|object| {
            (
                ObjectRef::from_obj(object.as_ref()).into(),
                super::patch::is_own_write(object.as_ref()),
            )
        })
    });
    let related = related.map(|request| request.map(|request| (request, true)));
    super::coalesce::coalesce_marked(futures::stream::select(own, related), window)
}

#[cfg(test)]
mod tests;
