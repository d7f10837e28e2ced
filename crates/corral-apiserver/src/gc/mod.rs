//! Garbage collection: what kube-controller-manager's garbage collector does, run inside the
//! API server. It deletes objects whose ownerReferences all point to owners that are gone,
//! and carries out the `Foreground` and `Orphan` deletion policies that `rest::delete` records
//! as finalizers (see `policy.rs`).
//!
//! An owner is identified by uid: an object of the same kind and name with another uid is
//! another object, and the owner counts as gone. A namespaced owner is looked up in the
//! dependent's namespace; a namespaced dependent may have cluster-scoped owners, but a
//! cluster-scoped object naming a namespaced owner is never collected. An ownerReference to a
//! kind that no served resource has decides nothing until such a resource appears.
//!
//! How it works:
//! - **Index** (`graph.rs`): one subscription per stored resource to its watch cache
//!   (`WatchHub::cacher`), built-ins and CRD-defined ones, the latter added when their CRD is
//!   seen. Each subscription lists its resource once, then applies events. The index keeps
//!   only objects with ownerReferences or a collector finalizer, owner uid → dependents, and
//!   a bounded set of objects recently seen written (a new dependent of one of those needs no
//!   read of its owner); its upkeep costs O(1) per event and nothing while nothing changes.
//! - **Queue** (`queue.rs`): changes in the index queue the objects that may need work (a new
//!   ownerReference, an owner deleted, an owner starting a foreground or orphan deletion, a
//!   blocking dependent gone). Workers take them one uid at a time; failures come back with
//!   exponential backoff.
//! - **Work** (`process.rs`): decisions are taken on the object as stored now, owners are read
//!   from the store by key, and writes go through the REST verbs with a uid precondition.
//!
//! Level-triggered: at start every resource is listed and the index rebuilt; an object whose
//! owner was not in any of those listings is queued, and owners found being deleted in the
//! foreground or with the orphan policy are queued, so work interrupted by a restart
//! finishes. A subscription that is dropped (slow, compaction) relists its resource.
//!
//! Caveat, as upstream: "no dependent blocks this owner" and "these are all its dependents"
//! are answered by the index. Before acting on them the collector waits until every
//! subscription has applied everything its watch cache has published, and until the owner's
//! deletion has been known for `SETTLE`, for writes still on their way from the store to a
//! watch cache; a dependent written after that is handled as one whose owner is gone.

mod graph;
mod policy;
mod process;
mod queue;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use corral_store::{EventKind, RangeRequest, Revision};
use tokio::sync::watch;
use tracing::Instrument;

use crate::error::ApiError;
use crate::registry::ResourceInfo;
use crate::server::ApiState;
use crate::watch_cache::{CachedEvent, Cacher, Subscription};
use crate::{crd, object};

use graph::{BoundedSet, Graph, ObjectRef, OwnerLocation, OwnerRef, identity_hash};
use process::Outcome;
use queue::Queue;

pub use policy::{
    FOREGROUND_FINALIZER, ORPHAN_FINALIZER, PropagationPolicy, finalizers_after_delete,
    parse_policy, validate_finalizers,
};

/// Objects processed at the same time.
const WORKERS: usize = 4;
/// Keys per page when a resource is listed.
const LIST_PAGE: usize = 500;
/// Owners remembered as gone, to spare a read per dependent of a deleted owner.
const ABSENT_OWNERS: usize = 4096;
/// How long an owner's foreground or orphan deletion must have been known before the index
/// is trusted to hold all its dependents (see the caveat above).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

/// The collector of one API server, held by its `ApiState`. It stops with the server, or
/// when the state is dropped.
pub struct Collector {
    shared: Arc<Shared>,
}

impl Collector {
    pub(crate) fn new() -> Collector {
        let (stop, stopped) = watch::channel(false);
        Collector {
            shared: Arc::new(Shared {
                graph: Mutex::new(Graph::default()),
                queue: Queue::new(stopped),
                feeds: Mutex::new(HashMap::new()),
                unknown_kinds: Mutex::new(HashMap::new()),
                absent: Mutex::new(BoundedSet::new(ABSENT_OWNERS)),
                startup: Mutex::new(None),
                stop,
            }),
        }
    }

    /// Stops every task of the collector; work in flight finishes its current write.
    pub fn stop(&self) {
        self.shared.stop.send_replace(true);
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the tasks of a collector share.
pub(crate) struct Shared {
    graph: Mutex<Graph>,
    queue: Queue,
    /// One per stored resource, by key prefix.
    feeds: Mutex<HashMap<String, Arc<Feed>>>,
    /// Objects whose owner's kind is not served, by uid; queued again when a resource appears.
    unknown_kinds: Mutex<HashMap<String, ObjectRef>>,
    /// Owners known to be gone, by `identity_hash`, to spare a read per dependent of a
    /// deleted owner. A uid is never reused, so an entry never goes stale.
    absent: Mutex<BoundedSet>,
    /// Until every resource served at start has been listed.
    startup: Mutex<Option<Startup>>,
    stop: watch::Sender<bool>,
}

/// The first listing of every resource. Objects whose owners all appear in it (and were not
/// deleted since) need no read of their owners, so a restart costs no read per object.
struct Startup {
    /// `identity_hash` of every listed object not seen deleted since.
    seen: HashSet<u64>,
    /// Resources not listed yet.
    pending: usize,
}

/// The subscription of the index to one resource's watch cache.
struct Feed {
    resource: Arc<ResourceInfo>,
    /// The revision of the last listing; events up to it are in the listing already.
    listed_at: AtomicI64,
    /// The revision of the last event applied to the index.
    processed: AtomicI64,
    /// Listed and subscribed.
    synced: AtomicBool,
    cacher: Mutex<Weak<Cacher>>,
}

impl Feed {
    /// Whether everything the watch cache has published is in the index.
    fn caught_up(&self) -> bool {
        if !self.synced.load(Ordering::SeqCst) {
            return false;
        }
        let processed = self.processed.load(Ordering::SeqCst);
        let cacher = self.cacher.lock().unwrap().upgrade();
        cacher.is_some_and(|cacher| processed >= cacher.latest())
    }
}

/// The storage key of a dependent's owner, if its kind is served.
fn owner_key(state: &ApiState, dependent: &ObjectRef, owner: &OwnerRef) -> Option<String> {
    match graph::locate_owner(&state.registry, dependent, owner) {
        OwnerLocation::Found { key } => Some(key),
        _ => None,
    }
}

/// The resources whose objects the collector watches: every served one, except those stored
/// as another (their objects are watched through that one).
fn collected_resources(state: &ApiState) -> Vec<Arc<ResourceInfo>> {
    state
        .registry
        .all()
        .into_iter()
        .filter(|resource| resource.stored_as.is_none())
        .collect()
}

fn is_crds(resource: &ResourceInfo) -> bool {
    resource.builtin
        && resource.group == "apiextensions.k8s.io"
        && resource.plural == "customresourcedefinitions"
}

/// Starts the collector of `state`: the subscriptions and the workers.
pub(crate) fn start(state: &Arc<ApiState>) {
    let shared = state.gc.shared.clone();
    let resources = collected_resources(state);
    *shared.startup.lock().unwrap() = Some(Startup {
        seen: HashSet::new(),
        pending: resources.len(),
    });
    for resource in resources {
        ensure_feed(&shared, state, resource, true);
    }
    for _ in 0..WORKERS {
        tokio::spawn(work(Arc::downgrade(state), shared.clone()));
    }
}

/// Subscribes the index to a resource, unless it is already.
fn ensure_feed(
    shared: &Arc<Shared>,
    state: &Arc<ApiState>,
    resource: Arc<ResourceInfo>,
    initial: bool,
) {
    let prefix = resource.key_prefix();
    let feed = {
        let mut feeds = shared.feeds.lock().unwrap();
        if feeds.contains_key(&prefix) {
            return;
        }
        let feed = Arc::new(Feed {
            resource,
            listed_at: AtomicI64::new(0),
            processed: AtomicI64::new(0),
            synced: AtomicBool::new(false),
            cacher: Mutex::new(Weak::new()),
        });
        feeds.insert(prefix, feed.clone());
        feed
    };
    tokio::spawn(run_feed(
        Arc::downgrade(state),
        shared.clone(),
        feed,
        initial,
    ));
}

/// Lists a resource and applies its events, relisting when the subscription ends, until the
/// resource is no longer served or the collector stops.
async fn run_feed(state: Weak<ApiState>, shared: Arc<Shared>, feed: Arc<Feed>, mut initial: bool) {
    let resource = feed.resource.clone();
    let prefix = resource.key_prefix();
    let mut stop = shared.stop.subscribe();
    let mut failures = 0;
    loop {
        if *stop.borrow() {
            return;
        }
        let Some(strong) = state.upgrade() else {
            return;
        };
        if !is_served(&strong, &resource).await {
            shared.forget_feed(&strong, &feed, initial);
            return;
        }
        let synced = sync(&strong, &shared, &feed, initial).await;
        // The resource may have gone while it was being listed; a watch cache opened for it
        // then would serve nobody.
        if synced.is_ok() && !is_served(&strong, &resource).await {
            strong.hub.remove(&prefix);
            shared.forget_feed(&strong, &feed, initial);
            return;
        }
        drop(strong);
        let mut subscription = match synced {
            Ok(subscription) => subscription,
            Err(error) => {
                failures += 1;
                tracing::warn!(
                    resource = resource.qualified_name(),
                    %error,
                    "Listing a resource for garbage collection failed; retrying"
                );
                tokio::select! {
                    _ = tokio::time::sleep(queue::backoff(failures)) => {}
                    _ = stop.wait_for(|stopped| *stopped) => return,
                }
                continue;
            }
        };
        failures = 0;
        if let Some(strong) = state.upgrade() {
            if initial {
                shared.initial_listing_done(&strong);
            } else {
                shared.retry_unknown_kinds();
            }
        }
        initial = false;
        loop {
            let event = tokio::select! {
                event = subscription.receiver.recv() => event,
                _ = stop.wait_for(|stopped| *stopped) => return,
            };
            let Some(event) = event else { break };
            shared.apply(&state, &feed, &event);
        }
        // Dropped by the watch cache (too slow, compaction) or the resource went away.
        feed.synced.store(false, Ordering::SeqCst);
    }
}

/// Whether a resource is served, or about to be: the registry learns of a new CRD just after
/// the CRD's event.
async fn is_served(state: &ApiState, resource: &ResourceInfo) -> bool {
    if state
        .registry
        .get(&resource.group, &resource.plural)
        .is_some()
    {
        return true;
    }
    let crds = state
        .registry
        .get("apiextensions.k8s.io", "customresourcedefinitions");
    let Some(crds) = crds.filter(|_| !resource.builtin) else {
        return false;
    };
    match state
        .store
        .get(&crds.key(None, &resource.qualified_name()), None)
        .await
    {
        Ok(Some(kv)) => {
            object::decode_stored(&kv).is_ok_and(|crd| object::deletion_timestamp(&crd).is_none())
        }
        Ok(None) => false,
        // Cannot tell: go on; the question comes again when the subscription ends.
        Err(_) => true,
    }
}

/// Lists the resource into the index at one revision and subscribes to the events after it.
async fn sync(
    state: &Arc<ApiState>,
    shared: &Arc<Shared>,
    feed: &Feed,
    initial: bool,
) -> Result<Subscription, ApiError> {
    let resource = &feed.resource;
    let prefix = resource.key_prefix();
    let cacher = state.hub.cacher(&prefix).await?;
    *feed.cacher.lock().unwrap() = Arc::downgrade(&cacher);
    let mut revision: Option<Revision> = None;
    let mut start = None;
    let mut listed = HashSet::new();
    loop {
        let page = state
            .store
            .range(RangeRequest {
                prefix: prefix.clone(),
                start: start.take(),
                limit: LIST_PAGE,
                revision,
            })
            .await?;
        revision = Some(page.revision);
        // Decoded before the index is locked, which the other subscriptions wait for.
        let mut objects = Vec::with_capacity(page.kvs.len());
        let mut seen = Vec::new();
        for kv in &page.kvs {
            let object = match object::decode_stored(kv) {
                Ok(object) => object,
                Err(error) => {
                    tracing::error!(key = kv.key, %error, "Skipping an undecodable stored object");
                    continue;
                }
            };
            if let Some(uid) = object::uid(&object) {
                if initial {
                    seen.push(identity_hash(uid, &kv.key));
                } else {
                    listed.insert(uid.to_string());
                }
            }
            objects.push(object);
        }
        let locate = |dependent: &ObjectRef, owner: &OwnerRef| owner_key(state, dependent, owner);
        let check = (!initial).then_some(&locate as graph::OwnerKey<'_>);
        let work: Vec<ObjectRef> = {
            let mut graph = shared.graph.lock().unwrap();
            objects
                .iter()
                .flat_map(|object| graph.observe(resource, object, check))
                .collect()
        };
        if let Some(startup) = shared.startup.lock().unwrap().as_mut() {
            startup.seen.extend(seen);
        }
        shared.queue.add_all(work);
        match page.kvs.last() {
            Some(last) if page.more => start = Some(format!("{}\0", last.key)),
            _ => break,
        }
    }
    let listed_at = revision.expect("at least one page was read");
    if !initial {
        let work = shared
            .graph
            .lock()
            .unwrap()
            .reconcile_listing(resource, &listed);
        shared.queue.add_all(work);
    }
    let subscription = cacher.subscribe(listed_at).map_err(|too_old| {
        ApiError::gone(format!(
            "too old resource version: {} ({})",
            too_old.requested, too_old.oldest
        ))
    })?;
    feed.listed_at.store(listed_at, Ordering::SeqCst);
    feed.processed.store(listed_at, Ordering::SeqCst);
    let weak = Arc::downgrade(state);
    for event in &subscription.backlog {
        shared.apply(&weak, feed, event);
    }
    feed.synced.store(true, Ordering::SeqCst);
    Ok(subscription)
}

/// Takes objects from the queue until the collector stops.
async fn work(state: Weak<ApiState>, shared: Arc<Shared>) {
    while let Some(item) = shared.queue.next().await {
        let Some(strong) = state.upgrade() else {
            return;
        };
        let span = tracing::debug_span!("garbage_collection", object = %item);
        let outcome = process::process(&strong, &shared, &item)
            .instrument(span)
            .await;
        drop(strong);
        let failed = match outcome {
            Ok(Outcome::Done) => false,
            Ok(Outcome::UnknownKind) => {
                shared
                    .unknown_kinds
                    .lock()
                    .unwrap()
                    .insert(item.uid.clone(), item.clone());
                false
            }
            Ok(Outcome::IndexBehind) => true,
            Err(error) if error.code == http::StatusCode::CONFLICT => {
                tracing::debug!(object = %item, %error, "Collecting garbage met a concurrent write; retrying");
                true
            }
            Err(error) => {
                tracing::warn!(object = %item, %error, "Collecting garbage failed; retrying");
                true
            }
        };
        if let Some(delay) = shared.queue.done(&item, failed) {
            let shared = shared.clone();
            let mut stop = shared.stop.subscribe();
            tokio::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => shared.queue.add(item),
                    _ = stop.wait_for(|stopped| *stopped) => {}
                }
            });
        }
    }
}

impl Shared {
    /// Applies one event of a resource to the index and queues what it calls for.
    fn apply(self: &Arc<Self>, state: &Weak<ApiState>, feed: &Feed, event: &CachedEvent) {
        // A subscription can deliver events the listing already holds.
        if event.revision <= feed.listed_at.load(Ordering::SeqCst) {
            return;
        }
        let resource = &feed.resource;
        let work = {
            let mut graph = self.graph.lock().unwrap();
            if event.kind == EventKind::Delete {
                if let Some(uid) = object::uid(&event.object) {
                    let key = object::name(&event.object)
                        .map(|name| resource.key(object::namespace(&event.object), name));
                    if let Some(key) = key {
                        if graph.has_dependents(uid) {
                            self.absent.lock().unwrap().insert(identity_hash(uid, &key));
                        }
                        if let Some(startup) = self.startup.lock().unwrap().as_mut() {
                            startup.seen.remove(&identity_hash(uid, &key));
                        }
                    }
                }
                graph.observe_deleted(resource, &event.object)
            } else {
                let state = state.upgrade();
                let locate = |dependent: &ObjectRef, owner: &OwnerRef| {
                    state
                        .as_ref()
                        .and_then(|state| owner_key(state, dependent, owner))
                };
                graph.observe(resource, &event.object, Some(&locate))
            }
        };
        feed.processed.store(event.revision, Ordering::SeqCst);
        self.queue.add_all(work);
        // A new CRD: its resource is subscribed to at once (the registry may learn of it
        // only after this event).
        if is_crds(resource)
            && event.kind == EventKind::Put
            && object::deletion_timestamp(&event.object).is_none()
            && let Some(info) = crd::resource_info(&event.object)
            && let Some(state) = state.upgrade()
        {
            ensure_feed(self, &state, Arc::new(info), false);
        }
    }

    /// Whether the index can be trusted with the dependents of `owner`: it holds everything
    /// the watch caches have published, for every served resource, and the owner's deletion
    /// has settled. Subscribes to served resources it has no subscription for.
    fn caught_up(self: &Arc<Self>, state: &Arc<ApiState>, owner: &str) -> bool {
        let settled = self
            .graph
            .lock()
            .unwrap()
            .deletion_seen_before(owner, SETTLE);
        let mut caught_up = settled;
        for resource in collected_resources(state) {
            let feed = self
                .feeds
                .lock()
                .unwrap()
                .get(&resource.key_prefix())
                .cloned();
            match feed {
                Some(feed) => caught_up &= feed.caught_up(),
                None => {
                    ensure_feed(self, state, resource, false);
                    caught_up = false;
                }
            }
        }
        caught_up
    }

    /// Ends the subscription to a resource that is no longer served: its objects are gone.
    fn forget_feed(&self, state: &ApiState, feed: &Arc<Feed>, initial: bool) {
        let resource = &feed.resource;
        tracing::debug!(
            resource = resource.qualified_name(),
            "Forgetting a resource that is no longer served"
        );
        let prefix = resource.key_prefix();
        let work = self.graph.lock().unwrap().forget_resource(&prefix);
        self.queue.add_all(work);
        {
            let mut feeds = self.feeds.lock().unwrap();
            if feeds.get(&prefix).is_some_and(|f| Arc::ptr_eq(f, feed)) {
                feeds.remove(&prefix);
            }
        }
        if initial {
            self.initial_listing_done(state);
        }
    }

    fn retry_unknown_kinds(&self) {
        let waiting = std::mem::take(&mut *self.unknown_kinds.lock().unwrap());
        self.queue.add_all(waiting.into_values());
    }

    /// One more resource of those served at start is listed. After the last one, queues the
    /// objects with an owner that none of the listings held.
    fn initial_listing_done(&self, state: &ApiState) {
        let startup = {
            let mut startup = self.startup.lock().unwrap();
            let Some(pending) = startup.as_mut().map(|s| {
                s.pending -= 1;
                s.pending
            }) else {
                return;
            };
            if pending > 0 {
                return;
            }
            startup.take().expect("checked above")
        };
        let (nodes, candidates) = {
            let graph = self.graph.lock().unwrap();
            (graph.len(), graph.dependents_with_owners())
        };
        let mut queued = 0;
        for (object, owners) in candidates {
            let listed = owners.iter().all(|owner| {
                owner_key(state, &object, owner)
                    .is_some_and(|key| startup.seen.contains(&identity_hash(&owner.uid, &key)))
            });
            if !listed {
                self.queue.add(object);
                queued += 1;
            }
        }
        tracing::debug!(nodes, queued, "Built the garbage collector's index");
        self.retry_unknown_kinds();
    }
}
