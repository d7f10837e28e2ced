//! What a controller has just written and is waiting to see in its cache, so that it never acts
//! twice on the same state (upstream's `DeferNextReconcileUntilCacheUpToDate`, and the
//! expectations of the Kubernetes ReplicaSet controller).
//!
//! A MachineSet reads its Machines from a watch cache. Right after it creates three Machines,
//! the cache may not hold them yet; a reconcile then would count too few and create three more.
//! So each write is recorded here: a name created is expected to appear, a name deleted to be
//! marked for deletion or gone, an object updated to show a resourceVersion other than the one
//! it had. Until all of an owner's expectations are met the owner does not act; the watch events
//! that meet them bring the next reconcile.
//!
//! Expectations live in memory only. After a restart there are none, and none are needed: a
//! controller does not reconcile before its caches have been filled by a complete list, which
//! shows every write that finished before the restart.
//!
//! An expectation that is never met (an object created and deleted by someone else before the
//! cache saw it) is dropped [`EXPECTATION_TIMEOUT`] after the owner's last write.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an owner waits for its writes to show before acting anyway.
pub const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(30);

/// An object as the cache shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen<'a> {
    /// Not in the cache.
    Absent,
    /// In the cache, with this resourceVersion, and being deleted or not.
    Present {
        /// Its resourceVersion.
        resource_version: &'a str,
        /// Whether it has a deletion timestamp.
        deleting: bool,
    },
}

#[derive(Debug)]
struct Pending {
    created: HashSet<String>,
    deleted: HashSet<String>,
    /// Name → the resourceVersion it had before the write.
    updated: HashMap<String, String>,
    deadline: Instant,
}

impl Pending {
    fn new() -> Self {
        Pending {
            created: HashSet::new(),
            deleted: HashSet::new(),
            updated: HashMap::new(),
            deadline: Instant::now() + EXPECTATION_TIMEOUT,
        }
    }

    fn is_empty(&self) -> bool {
        self.created.is_empty() && self.deleted.is_empty() && self.updated.is_empty()
    }
}

/// Pending writes per owner.
#[derive(Debug)]
pub struct Expectations<K> {
    pending: Mutex<HashMap<K, Pending>>,
}

impl<K: Hash + Eq + Clone> Default for Expectations<K> {
    fn default() -> Self {
        Expectations {
            pending: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone> Expectations<K> {
    fn record(&self, owner: &K, change: impl FnOnce(&mut Pending)) {
        let mut pending = self.pending.lock().expect("expectations lock");
        let entry = pending.entry(owner.clone()).or_insert_with(Pending::new);
        entry.deadline = Instant::now() + EXPECTATION_TIMEOUT;
        change(entry);
    }

    /// `owner` created `name`: it must appear.
    pub fn created(&self, owner: &K, name: &str) {
        self.record(owner, |pending| {
            pending.created.insert(name.to_owned());
        });
    }

    /// `owner` deleted `name`: it must be marked for deletion, or be gone.
    pub fn deleted(&self, owner: &K, name: &str) {
        self.record(owner, |pending| {
            pending.deleted.insert(name.to_owned());
        });
    }

    /// `owner` updated `name`, which had `resource_version`: another must show.
    pub fn updated(&self, owner: &K, name: &str, resource_version: &str) {
        self.record(owner, |pending| {
            pending
                .updated
                .entry(name.to_owned())
                .or_insert_with(|| resource_version.to_owned());
        });
    }

    /// Forgets what `owner` waits for, once it is gone.
    pub fn forget(&self, owner: &K) {
        self.pending
            .lock()
            .expect("expectations lock")
            .remove(owner);
    }

    /// Whether the cache, as `seen` reports it, shows all of `owner`'s writes. Met
    /// expectations are dropped. `None` when all are met (or timed out); otherwise how long
    /// until they time out, for a requeue.
    pub fn unmet<'a>(&self, owner: &K, seen: impl Fn(&str) -> Seen<'a>) -> Option<Duration> {
        self.unmet_at(owner, seen, Instant::now())
    }

    fn unmet_at<'a>(
        &self,
        owner: &K,
        seen: impl Fn(&str) -> Seen<'a>,
        now: Instant,
    ) -> Option<Duration> {
        let mut all = self.pending.lock().expect("expectations lock");
        let pending = all.get_mut(owner)?;
        pending
            .created
            .retain(|name| matches!(seen(name), Seen::Absent));
        pending.deleted.retain(|name| {
            matches!(
                seen(name),
                Seen::Present {
                    deleting: false,
                    ..
                }
            )
        });
        pending.updated.retain(|name, before| match seen(name) {
            Seen::Absent => false,
            Seen::Present {
                resource_version, ..
            } => resource_version == before,
        });
        if pending.is_empty() {
            all.remove(owner);
            return None;
        }
        if now >= pending.deadline {
            tracing::warn!(
                created = ?pending.created,
                deleted = ?pending.deleted,
                updated = ?pending.updated.keys().collect::<Vec<_>>(),
                "Writes not seen in the cache in time, acting anyway"
            );
            all.remove(owner);
            return None;
        }
        Some(pending.deadline - now)
    }
}

#[cfg(test)]
mod tests;
