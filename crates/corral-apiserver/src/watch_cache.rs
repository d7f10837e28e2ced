//! One in-memory fan-out per resource: a single store watch feeds every API watcher.
//!
//! A `Cacher` is created the first time a resource is watched. It opens one store watch on the
//! resource's key prefix, decodes each change once, keeps a bounded history of recent events
//! (so that clients can resume from a recent resourceVersion) and hands every event to every
//! registered watcher through a bounded channel.
//!
//! The history is bounded by bytes as well as by events, and keeps each change in its stored
//! form (the object's and its previous state's stored bytes), not decoded: a decoded object is
//! several times the size of its JSON, and a busy resource's history of 10,000 decoded events
//! held hundreds of MB. A watcher that resumes from the history gets its backlog decoded again
//! when it registers; live events are decoded once and shared. A watch that resumes from a
//! revision the history no longer holds gets 410 Expired, as after a compaction, and relists. A watcher whose channel is full is dropped —
//! its HTTP stream ends and the client resumes from its last resourceVersion — so one slow
//! client never holds up the others.
//!
//! Registration and fan-out happen under the cacher's lock, so a watcher gets exactly the
//! history after its resourceVersion followed by every later event: no gap, no duplicate.
//!
//! A cacher also keeps the **current state** of every key it has seen change (its stored
//! bytes, its modification revision and the decoded object the event shared with watchers),
//! so that an update need not read and decode the object again (`rest::update`). The map is
//! exact as of the latest event the cacher saw, for the keys it holds; a key it does not hold
//! (unchanged since the cacher started, or written after its latest event) is read from the
//! store. It may lag the store, never lead it: a caller uses it only to compute a write that
//! is conditional on the cached modification revision (see [`Current`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use corral_store::{DynStore, EventKind, Revision};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::object;

#[cfg(test)]
mod tests;

/// One change to an object, decoded once and shared by every watcher.
#[derive(Debug)]
pub struct CachedEvent {
    pub revision: Revision,
    pub kind: EventKind,
    /// The object after the change; for a delete, its last state. Its resourceVersion is
    /// the event's revision. Shared with the cacher's current state of its key.
    pub object: Arc<Value>,
    /// `object` serialized, so that watchers of the storage version need not serialize again.
    pub object_json: Bytes,
    /// The object before the change (`None` for a create), for watchers whose filter it
    /// matched. Its resourceVersion is its own (the revision of the write that made it): it
    /// is the cacher's current copy of the key before the change, shared, when the cacher
    /// holds it, else decoded from its stored bytes by the first watcher that asks (most
    /// watchers have no filter and only ask whether there was one). A watcher that sends it
    /// stamps the event's revision, as kube-apiserver does.
    pub prev: Option<Previous>,
    /// `object` as the first watcher that needed it converted (read-time defaulting, another
    /// version) served it, for the next watchers of the same resource definition and version:
    /// a CRD with defaults converts every event, and each watcher of it did so again.
    pub served: std::sync::OnceLock<Served>,
    /// The definition whose read-time shaping `object` already has ([`Current::shaped`]).
    pub shaped: Option<Arc<crate::registry::ResourceInfo>>,
}

/// The state of a key before a change: decoded when the event is published if the cacher
/// holds it, else on first use.
#[derive(Debug)]
pub struct Previous {
    /// Its stored form, while not yet decoded.
    stored: Option<corral_store::KeyValue>,
    decoded: std::sync::OnceLock<Option<Arc<Value>>>,
}

impl Previous {
    /// A previous state already decoded.
    pub fn decoded(object: Arc<Value>) -> Self {
        Previous {
            stored: None,
            decoded: std::sync::OnceLock::from(Some(object)),
        }
    }

    /// A previous state decoded from `kv` when first needed.
    pub fn stored(kv: corral_store::KeyValue) -> Self {
        Previous {
            stored: Some(kv),
            decoded: std::sync::OnceLock::new(),
        }
    }

    /// The decoded state, with its own resourceVersion; `None` when its stored bytes do not
    /// decode (logged once): a watcher then treats the object as new to its filter.
    pub fn get(&self) -> Option<&Value> {
        self.decoded
            .get_or_init(|| {
                let kv = self.stored.as_ref()?;
                match object::decode_stored(kv) {
                    Ok(object) => Some(Arc::new(object)),
                    Err(error) => {
                        tracing::error!(key = kv.key, %error, "Previous state does not decode");
                        None
                    }
                }
            })
            .as_deref()
    }

    /// Whether its labels match `labels`: from the decoded state when some watcher already
    /// decoded it, else from its stored bytes' labels alone (a watch with a label selector
    /// asks this of every event, and almost always the object stays in or out of it; only
    /// one that leaves needs the whole previous state). `None` when it does not decode.
    pub fn labels_match(&self, labels: &crate::selector::LabelSelector) -> Option<bool> {
        if self.decoded.get().is_none()
            && let Some(stored) = self
                .stored
                .as_ref()
                .and_then(|kv| object::stored_labels(&kv.value))
        {
            return Some(labels.matches(&stored));
        }
        self.get().map(|object| labels.matches_object(object))
    }
}

/// An event's object converted for watchers of one resource definition and version.
#[derive(Clone, Debug)]
pub struct Served {
    /// The definition it was converted with (a changed CRD is another `Arc`).
    pub resource: Arc<crate::registry::ResourceInfo>,
    /// The version it was converted to.
    pub version: String,
    /// The converted object, serialized.
    pub json: Bytes,
}

/// Tuning of the watch caches.
#[derive(Clone, Debug)]
pub struct WatchCacheConfig {
    /// At most this many events kept per resource for watches that resume from an older
    /// resourceVersion.
    pub history_events: usize,
    /// At most about this many bytes of history per resource: the stored size of each event's
    /// object and previous state, and its keys, plus a fixed overhead per event
    /// ([`HISTORY_EVENT_OVERHEAD`]). Whichever bound is reached first evicts the oldest events.
    pub history_bytes: usize,
    /// Events a watcher may have queued before it is dropped as too slow.
    pub watcher_buffer: usize,
    /// At most about this many stored bytes (values and keys) of current copies kept per
    /// resource for updates (see [`Current`]); the copies least recently written are
    /// forgotten first. A decoded copy takes several times its stored size, and copies of
    /// objects that are never written again only cost memory (and the page faults of ever
    /// more of it), so the bound keeps the recently written ones, which are the ones written
    /// again.
    pub current_bytes: usize,
}

/// What one history event costs besides its keys and values: the queue slot, the event's
/// fields and the allocations' headers, rounded up.
pub const HISTORY_EVENT_OVERHEAD: usize = 160;

impl Default for WatchCacheConfig {
    /// A management server's: 10,000 events or 8 MiB per resource, whichever is less. 8 MiB
    /// holds about 500 changes of a Machine with its managedFields (8 KB stored, twice for its
    /// previous state), several seconds of a busy resource at a thousand clusters; a watch that
    /// resumes from further back relists.
    ///
    /// Current copies: 64 MiB of stored bytes per resource, about 10,000 Machines. A write
    /// whose object is not among them reads and decodes it from the store; deleting a
    /// thousand clusters, or the old Machines of a rollout of 10,000, touches objects last
    /// written long before, and with 8 MiB it cost a fifth more CPU (BENCHMARKS.md, session 15).
    fn default() -> Self {
        WatchCacheConfig {
            history_events: 10_000,
            history_bytes: 8 << 20,
            watcher_buffer: 4_096,
            current_bytes: 64 << 20,
        }
    }
}

impl WatchCacheConfig {
    /// A simulated workload cluster's: it holds a handful of Nodes and Pods that change a
    /// few times, and its watchers (the management plane's caches of it) stay connected, so
    /// 256 KiB per resource is plenty, and a thousand such servers stay small.
    pub fn small() -> Self {
        WatchCacheConfig {
            history_events: 1_000,
            history_bytes: 256 << 10,
            watcher_buffer: 1_024,
            current_bytes: 256 << 10,
        }
    }
}

/// The state of one key as the cacher last saw it change.
///
/// It is the key's state as of [`Cacher::latest`] at the time it was read, which may be older
/// than the store's: the store may have changed or deleted the key since. What makes serving
/// writes from it safe is that `mod_revision` names exactly one write, so a store write
/// conditional on it succeeds only if these are still the key's current bytes; a caller that
/// computed anything other than a successful conditional write from it (an error, a no-op, a
/// dry run) must compute it again from the store, as kube-apiserver does with its watch
/// cache's object in `GuaranteedUpdate`.
#[derive(Clone, Debug)]
pub struct Current {
    pub mod_revision: Revision,
    /// The stored bytes.
    pub value: Bytes,
    /// Decoded, with `mod_revision` as its resourceVersion.
    pub object: Arc<Value>,
    /// The resource definition whose read-time pruning and defaulting (`schema::on_read` in
    /// its storage version) `object` already has, if known: a write of this server in the
    /// storage version, which admission pruned and defaulted with that very schema. An update
    /// of that definition then starts from `object` as it is, without the copy and the walk
    /// of the whole object a read's shaping costs; a changed CRD is another `Arc`. `None` for
    /// an object decoded from the store.
    pub shaped: Option<Arc<crate::registry::ResourceInfo>>,
}

/// How many writes of one key the cacher keeps recorded for its feed. A feed that lags (it is
/// one task, and on a busy server it gets the CPU late) may still be at a key's write when the
/// key's writer has been answered and written again; with only the newest write recorded, the
/// feed decoded and serialized the older event's object again, for about half of the writes of
/// 64 clients each updating its own object (`corral-bench apiserver --only machine`).
const RECORDS_PER_KEY: usize = 8;

/// A write of this server as [`Cacher::record_write`] recorded it, for the feed.
struct Recorded {
    object: Arc<Value>,
    served: Option<Served>,
    shaped: Option<Arc<crate::registry::ResourceInfo>>,
}

/// The current states a cacher keeps.
#[derive(Default)]
struct Objects {
    /// Every key seen changing, as of `fed`; deleted keys are removed.
    current: HashMap<String, Current>,
    /// Writes made through this server after `fed` (see [`Cacher::record_write`]), per key
    /// oldest first, at most [`RECORDS_PER_KEY`]; each is removed when the feed delivers its
    /// revision or a later one of its key. With the object's JSON as the writer answered it,
    /// when it had it.
    written: HashMap<String, VecDeque<(Current, Option<Served>)>>,
    /// The revision of the last event applied to `current`.
    fed: Revision,
    /// The keys of `current` in the order their copies were recorded, with the revision of
    /// each; an entry whose revision is no longer its key's copy is skipped (and dropped when
    /// stale entries outnumber the live ones).
    order: VecDeque<(String, Revision)>,
    /// The stored size of `current`: its values and keys.
    bytes: usize,
}

impl Objects {
    fn insert(&mut self, key: &str, current: Current, limit: usize) {
        let revision = current.mod_revision;
        self.bytes += key.len() + current.value.len();
        if let Some(old) = self.current.insert(key.to_string(), current) {
            self.bytes -= key.len() + old.value.len();
        }
        self.order.push_back((key.to_string(), revision));
        while self.bytes > limit {
            let Some((oldest, revision)) = self.order.pop_front() else {
                break;
            };
            if self
                .current
                .get(&oldest)
                .is_some_and(|c| c.mod_revision == revision)
            {
                self.remove(&oldest);
            }
        }
        if self.order.len() > 2 * self.current.len() + 1_024 {
            let current = &self.current;
            self.order.retain(|(key, revision)| {
                current
                    .get(key)
                    .is_some_and(|c| c.mod_revision == *revision)
            });
        }
    }

    fn remove(&mut self, key: &str) {
        if let Some(old) = self.current.remove(key) {
            self.bytes -= key.len() + old.value.len();
        }
    }

    fn clear(&mut self) {
        self.current.clear();
        self.written.clear();
        self.order.clear();
        self.bytes = 0;
    }
}

/// A resourceVersion older than the cache can serve.
#[derive(Debug)]
pub struct TooOld {
    pub requested: Revision,
    pub oldest: Revision,
}

struct Watcher {
    id: u64,
    sender: mpsc::Sender<Arc<CachedEvent>>,
}

/// A change as the store reported it, kept for watches that resume from its revision.
struct HistoryEvent {
    event: corral_store::Event,
    /// What it counts against [`WatchCacheConfig::history_bytes`].
    bytes: usize,
}

impl HistoryEvent {
    fn new(event: corral_store::Event) -> HistoryEvent {
        let kv_bytes = |kv: &corral_store::KeyValue| kv.key.len() + kv.value.len();
        let bytes =
            HISTORY_EVENT_OVERHEAD + kv_bytes(&event.kv) + event.prev.as_ref().map_or(0, kv_bytes);
        HistoryEvent { event, bytes }
    }

    fn revision(&self) -> Revision {
        self.event.revision()
    }
}

struct CacherState {
    history: VecDeque<HistoryEvent>,
    /// The sum of the history's [`HistoryEvent::bytes`].
    history_bytes: usize,
    /// Watches that resume after this revision or later can be served.
    oldest: Revision,
    /// The latest revision known to be complete for this resource.
    latest: Revision,
    watchers: Vec<Watcher>,
    next_id: u64,
}

/// The fan-out of one resource. See the module docs.
pub struct Cacher {
    state: Mutex<CacherState>,
    /// The current state of every key seen changing. A lock of its own, so that updates
    /// reading it do not wait for a fan-out to watchers.
    objects: Mutex<Objects>,
    config: WatchCacheConfig,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Keys with a write of this server in flight (between its store call and its
    /// [`Cacher::record_write`]), with how many: the feed waits for their records rather than
    /// decode their events (see [`Cacher::begin_write`]).
    in_flight: Mutex<HashMap<String, usize>>,
    /// Woken when a write in flight ends.
    write_ended: tokio::sync::Notify,
}

/// A write of this server in flight on one key, from before its store call until it is
/// recorded or failed (dropped).
pub struct InFlight {
    cacher: Arc<Cacher>,
    key: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut in_flight = self.cacher.in_flight.lock().unwrap();
        if let Some(count) = in_flight.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                in_flight.remove(&self.key);
            }
        }
        drop(in_flight);
        self.cacher.write_ended.notify_waiters();
    }
}

/// How long the feed waits at most for a write in flight to be recorded before it decodes
/// the write's event itself.
const IN_FLIGHT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

impl Drop for Cacher {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap().take() {
            task.abort();
        }
    }
}

/// A registered watcher: the events after its resourceVersion, then live ones.
pub struct Subscription {
    pub backlog: Vec<Arc<CachedEvent>>,
    pub receiver: mpsc::Receiver<Arc<CachedEvent>>,
    /// The latest revision the cacher had seen when the watcher registered.
    pub latest: Revision,
}

impl Cacher {
    fn new(config: WatchCacheConfig, start_after: Revision) -> Arc<Cacher> {
        Arc::new(Cacher {
            state: Mutex::new(CacherState {
                history: VecDeque::new(),
                history_bytes: 0,
                oldest: start_after,
                latest: start_after,
                watchers: Vec::new(),
                next_id: 0,
            }),
            objects: Mutex::new(Objects::default()),
            config,
            task: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            write_ended: tokio::sync::Notify::new(),
        })
    }

    /// Marks a write of this server on `key` in flight, before its store call; the write
    /// ends when the returned guard is dropped, after [`Cacher::record_write`] or a failure.
    /// The feed may get a write's event before the writer has heard back and recorded it
    /// (etcd's watch may deliver before the put's answer; SQLite's sync thread answers and
    /// broadcasts together, and the feed may run first); meanwhile the feed waits for the
    /// writer's record of the object (decoded, and serialized in its answer) instead of
    /// decoding and serializing the event again. A wait is short and bounded
    /// ([`IN_FLIGHT_WAIT`]).
    pub fn begin_write(self: &Arc<Self>, key: &str) -> InFlight {
        *self
            .in_flight
            .lock()
            .unwrap()
            .entry(key.to_string())
            .or_default() += 1;
        InFlight {
            cacher: self.clone(),
            key: key.to_string(),
        }
    }

    /// The record of the write at `revision` of `key` ([`Self::written`]), waiting for it at
    /// most [`IN_FLIGHT_WAIT`] while a write of this server on `key` is in flight.
    async fn await_record(&self, key: &str, revision: Revision) -> Option<Recorded> {
        let deadline = tokio::time::Instant::now() + IN_FLIGHT_WAIT;
        loop {
            let ended = self.write_ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let recorded = self.written(key, revision);
            if recorded.is_some() || !self.in_flight.lock().unwrap().contains_key(key) {
                return recorded;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.written(key, revision);
            }
        }
    }

    /// Registers a watcher for every event after `after`.
    ///
    /// The backlog is decoded from the history after the lock is released: the watcher is
    /// registered under the lock, so its live events are exactly those after the backlog's.
    pub fn subscribe(&self, after: Revision) -> Result<Subscription, TooOld> {
        let (stored, receiver, latest) = {
            let mut state = self.state.lock().unwrap();
            if after < state.oldest {
                return Err(TooOld {
                    requested: after,
                    oldest: state.oldest,
                });
            }
            let start = state.history.partition_point(|e| e.revision() <= after);
            let stored: Vec<corral_store::Event> = state
                .history
                .range(start..)
                .map(|e| e.event.clone())
                .collect();
            let (sender, receiver) = mpsc::channel(self.config.watcher_buffer);
            let id = state.next_id;
            state.next_id += 1;
            state.watchers.push(Watcher { id, sender });
            (stored, receiver, state.latest)
        };
        // Only events that decoded when they were published are in the history, and decoding
        // is deterministic, so none is skipped here.
        let backlog = stored
            .iter()
            .filter_map(|event| decode_event(event).ok())
            .map(Arc::new)
            .collect();
        Ok(Subscription {
            backlog,
            receiver,
            latest,
        })
    }

    /// The latest revision known to be complete for this resource.
    pub fn latest(&self) -> Revision {
        self.state.lock().unwrap().latest
    }

    /// The key's state as of the latest event seen, if the cacher has seen it change and it
    /// was not deleted since. See [`Current`] for what it may be used for.
    pub fn current(&self, key: &str) -> Option<Current> {
        let objects = self.objects.lock().unwrap();
        let seen = objects.current.get(key);
        match objects.written.get(key).and_then(VecDeque::back) {
            Some((written, _))
                if seen.is_none_or(|seen| seen.mod_revision < written.mod_revision) =>
            {
                Some(written.clone())
            }
            _ => seen.cloned(),
        }
    }

    /// Records a write this server made and the store acknowledged at `current.mod_revision`,
    /// before its event arrives: the event is then not decoded again (the feed takes this
    /// object), and an update that follows it at once starts from it. Ignored when the feed
    /// has already delivered that revision. `served`: the answer the writer sent, if it is
    /// the stored object as written in the storage version. The feed then need not serialize
    /// it, and the event's watchers of that definition and version need not convert it: the
    /// writer's admission pruned and defaulted it with the very schema a read applies, so a
    /// read's conversion would give the same JSON.
    pub fn record_write(&self, key: &str, current: Current, served: Option<Served>) {
        let mut objects = self.objects.lock().unwrap();
        if current.mod_revision <= objects.fed {
            return;
        }
        let records = objects.written.entry(key.to_string()).or_default();
        let newer = records
            .back()
            .is_none_or(|(written, _)| written.mod_revision < current.mod_revision);
        if newer {
            if records.len() == RECORDS_PER_KEY {
                records.pop_front();
            }
            records.push_back((current, served));
        }
    }

    /// The object (and its answer, if recorded) of a write recorded by
    /// [`Self::record_write`] at `revision`, if any.
    fn written(&self, key: &str, revision: Revision) -> Option<Recorded> {
        let objects = self.objects.lock().unwrap();
        let (written, served) = objects
            .written
            .get(key)?
            .iter()
            .find(|(written, _)| written.mod_revision == revision)?;
        Some(Recorded {
            object: written.object.clone(),
            served: served.clone(),
            shaped: written.shaped.clone(),
        })
    }

    /// Hands `event`, decoded from `stored`, to every watcher and keeps `stored` in the
    /// history, evicting the oldest events beyond the history's bounds.
    fn publish(&self, event: CachedEvent, stored: corral_store::Event) {
        {
            let mut objects = self.objects.lock().unwrap();
            let key = &stored.kv.key;
            objects.fed = event.revision;
            if let Some(records) = objects.written.get_mut(key) {
                records.retain(|(written, _)| written.mod_revision > event.revision);
                if records.is_empty() {
                    objects.written.remove(key);
                }
            }
            match event.kind {
                EventKind::Put => {
                    let current = Current {
                        mod_revision: event.revision,
                        value: stored.kv.value.clone(),
                        object: event.object.clone(),
                        shaped: event.shaped.clone(),
                    };
                    objects.insert(key, current, self.config.current_bytes);
                }
                EventKind::Delete => {
                    objects.remove(key);
                }
            }
        }
        let event = Arc::new(event);
        let stored = HistoryEvent::new(stored);
        let mut state = self.state.lock().unwrap();
        state.latest = event.revision;
        state.history_bytes += stored.bytes;
        state.history.push_back(stored);
        while state.history.len() > self.config.history_events
            || state.history_bytes > self.config.history_bytes
        {
            let Some(dropped) = state.history.pop_front() else {
                break;
            };
            state.history_bytes -= dropped.bytes;
            state.oldest = dropped.revision();
        }
        state
            .watchers
            .retain(|watcher| match watcher.sender.try_send(event.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(
                        watcher = watcher.id,
                        "Dropping a watcher that does not keep up"
                    );
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
    }

    /// Forgets the current state of a key (its change could not be decoded).
    fn forget(&self, key: &str) {
        let mut objects = self.objects.lock().unwrap();
        objects.remove(key);
        objects.written.remove(key);
    }

    /// [`Self::expire`] after the store watch lost events (it fell behind a compaction): the
    /// current states may miss changes and deletes too, so they are forgotten.
    fn lost_events(&self, revision: Revision) {
        self.objects.lock().unwrap().clear();
        self.expire(revision);
    }

    /// Forgets history up to `revision` and ends every watch, as a store compaction does:
    /// clients that resume from an older resourceVersion get 410 Expired and relist. The
    /// current states stay: a compaction changes no key's current state.
    fn expire(&self, revision: Revision) {
        let mut state = self.state.lock().unwrap();
        state.history.retain(|e| e.revision() > revision);
        state.history_bytes = state.history.iter().map(|e| e.bytes).sum();
        state.oldest = state.oldest.max(revision);
        state.latest = state.latest.max(revision);
        state.watchers.clear();
    }
}

/// All cachers of a server, keyed by the resource's key prefix.
pub struct WatchHub {
    store: DynStore,
    config: WatchCacheConfig,
    cachers: Mutex<HashMap<String, Arc<Cacher>>>,
}

impl WatchHub {
    pub fn new(store: DynStore, config: WatchCacheConfig) -> Self {
        WatchHub {
            store,
            config,
            cachers: Mutex::new(HashMap::new()),
        }
    }

    /// The cacher of a key prefix, started on first use. It replays the store's recent
    /// history (as far back as compaction and the history size allow), so that a client that
    /// listed before the cacher existed can still resume from its list's resourceVersion.
    pub async fn cacher(&self, prefix: &str) -> Result<Arc<Cacher>, corral_store::Error> {
        if let Some(cacher) = self.cachers.lock().unwrap().get(prefix) {
            return Ok(cacher.clone());
        }
        let current = self.store.current_revision().await?;
        let compacted = self.store.compacted_revision().await?;
        let start_after = compacted
            .max(current - self.config.history_events as Revision)
            .max(0);
        let mut cachers = self.cachers.lock().unwrap();
        if let Some(cacher) = cachers.get(prefix) {
            return Ok(cacher.clone());
        }
        let cacher = Cacher::new(self.config.clone(), start_after);
        let task = tokio::spawn(feed(
            self.store.clone(),
            prefix.to_string(),
            Arc::downgrade(&cacher),
            start_after,
        ));
        *cacher.task.lock().unwrap() = Some(task);
        cachers.insert(prefix.to_string(), cacher.clone());
        Ok(cacher)
    }

    /// The cacher of a key prefix if it is running (without starting one).
    pub fn running(&self, prefix: &str) -> Option<Arc<Cacher>> {
        self.cachers.lock().unwrap().get(prefix).cloned()
    }

    /// Stops the cacher of a prefix (its resource is no longer served); its watchers end.
    pub fn remove(&self, prefix: &str) {
        self.cachers.lock().unwrap().remove(prefix);
    }

    /// Ends every open watch (at shutdown).
    pub fn close_all(&self) {
        for cacher in self.cachers.lock().unwrap().values() {
            cacher.state.lock().unwrap().watchers.clear();
        }
    }

    /// Expires every cache up to `revision`; see [`Cacher::expire`].
    pub fn expire(&self, revision: Revision) {
        for cacher in self.cachers.lock().unwrap().values() {
            cacher.expire(revision);
        }
    }
}

/// Feeds a cacher from its store watch until the cacher is dropped, reopening the store watch
/// after a failure from the last revision it delivered.
async fn feed(
    store: DynStore,
    prefix: String,
    cacher: std::sync::Weak<Cacher>,
    mut after: Revision,
) {
    let mut backoff = std::time::Duration::from_millis(50);
    loop {
        let mut stream = match store.watch(&prefix, after).await {
            Ok(stream) => stream,
            Err(corral_store::Error::Compacted { .. }) => {
                // Events were lost: expire the cache so every watcher relists.
                let Some(cacher) = cacher.upgrade() else {
                    return;
                };
                let current = store.current_revision().await.unwrap_or(after);
                tracing::warn!(
                    prefix,
                    after,
                    current,
                    "Watch cache fell behind a compaction; expiring it"
                );
                cacher.lost_events(current);
                after = current;
                continue;
            }
            Err(error) => {
                tracing::warn!(prefix, %error, "Opening the store watch failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
                if cacher.strong_count() == 0 {
                    return;
                }
                continue;
            }
        };
        backoff = std::time::Duration::from_millis(50);
        while let Some(item) = stream.next().await {
            let Some(cacher) = cacher.upgrade() else {
                return;
            };
            match item {
                Ok(event) => {
                    after = event.revision();
                    // The state before the change is the cacher's copy of the key, if it has
                    // that very revision of it.
                    let previous = event.prev.as_ref().and_then(|prev| {
                        cacher
                            .current(&prev.key)
                            .filter(|current| current.mod_revision == prev.mod_revision)
                            .map(|current| current.object)
                    });
                    // Only a put can have been recorded.
                    let written = match event.kind {
                        EventKind::Put => {
                            cacher.await_record(&event.kv.key, event.revision()).await
                        }
                        EventKind::Delete => None,
                    };
                    match decode_event_after(&event, previous, written) {
                        Ok(cached) => cacher.publish(cached, event),
                        Err(error) => {
                            cacher.forget(&event.kv.key);
                            tracing::error!(key = event.kv.key, %error, "Skipping an undecodable stored object")
                        }
                    }
                }
                Err(corral_store::Error::Compacted { .. }) => {
                    let current = store.current_revision().await.unwrap_or(after);
                    cacher.lost_events(current);
                    after = current;
                    break;
                }
                Err(error) => {
                    tracing::warn!(prefix, %error, "Store watch failed; reopening");
                    break;
                }
            }
        }
        if cacher.strong_count() == 0 {
            return;
        }
    }
}

fn decode_event(event: &corral_store::Event) -> Result<CachedEvent, crate::error::ApiError> {
    decode_event_after(event, None, None)
}

/// Decodes `event`; `previous`: its previous state, already decoded; `written`: the object
/// after it (and the answer it was written with), as the server that wrote it recorded it
/// (see [`Cacher::record_write`]).
fn decode_event_after(
    event: &corral_store::Event,
    previous: Option<Arc<Value>>,
    written: Option<Recorded>,
) -> Result<CachedEvent, crate::error::ApiError> {
    let revision = event.revision();
    let (object, served, shaped) = match written {
        Some(written) if event.kind == EventKind::Put => {
            (written.object, written.served, written.shaped)
        }
        _ => {
            // A delete's object is the key's last state: the cacher's decoded copy of it when
            // it has one, copied rather than parsed again.
            let mut object = match (&previous, event.kind) {
                (Some(previous), EventKind::Delete) => Value::clone(previous),
                _ => object::decode_stored(&event.kv)?,
            };
            object::set_resource_version(&mut object, revision);
            (Arc::new(object), None, None)
        }
    };
    let prev = match (&event.prev, previous) {
        (Some(_), Some(previous)) => Some(Previous::decoded(previous)),
        (Some(prev), None) => Some(Previous::stored(prev.clone())),
        (None, _) => None,
    };
    let object_json = match &served {
        Some(served) => served.json.clone(),
        None => Bytes::from(object::fields_text::to_vec(&object)),
    };
    let served = match served {
        Some(served) => std::sync::OnceLock::from(served),
        None => std::sync::OnceLock::new(),
    };
    Ok(CachedEvent {
        revision,
        kind: event.kind,
        object,
        object_json,
        prev,
        served,
        shaped,
    })
}
