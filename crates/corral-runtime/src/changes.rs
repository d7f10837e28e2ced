//! Watch events filtered by what a controller reads of the watched object: "reconcile only
//! when what I read changed" (controller-runtime's predicates), the one facility for it.
//!
//! A controller woken by another kind's events often reads only part of those objects: the
//! Cluster controller rewrites a Cluster's conditions and counters, and the Machine controller a
//! Machine's conditions, on every change in the cluster; each such write would wake every
//! controller that maps Clusters or Machines to its own objects, for nothing. A
//! [`Fingerprints`] remembers a hash of what the controller reads of each object (its
//! "fingerprint") and lets an event through only when it changed.
//!
//! # The deletion rule
//!
//! - Whether the object is being deleted is part of every fingerprint, whatever the controller
//!   reads: the start of a deletion always passes, once.
//! - An object's entry is dropped when its cache reports it deleted ([`SharedCache`]'s
//!   [`applied_changed`](SharedCache::applied_changed) and
//!   [`touched_changed`](SharedCache::touched_changed) do it in the order of the events), so
//!   nothing is left behind and an object created again under the same name starts afresh.
//! - While an object is being deleted, its events pass only when the fingerprint changed, as
//!   any other.
//!
//! The copies this replaces disagreed: the core's maps and the in-memory provider's kept an
//! entry per object for the life of the process (a deleted object's too), and the kubeadm
//! providers let every event of an object being deleted pass and forgot it (no leak, but a
//! reconcile per write of a deleting object, for each controller that reads it — with the
//! Machines of a Cluster mapped from it, O(Machines) per Cluster write during its deletion).
//! Forgetting on the deletion event keeps the first's cost and the second's memory.
//!
//! [`SharedCache`]: crate::shared::SharedCache

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash};
use std::sync::Mutex;

use kube::Resource;

#[cfg(test)]
mod tests;

/// The last fingerprint of each object of one kind, by namespace and name.
#[derive(Debug, Default)]
pub struct Fingerprints {
    seen: Mutex<HashMap<(String, String), u64>>,
}

impl Fingerprints {
    /// No object seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `read` (what the controller reads of `object`) or whether the object is being
    /// deleted differs from when the object was last seen, or it was never seen; remembers it.
    pub fn changed<K: Resource>(&self, object: &K, read: impl Hash) -> bool {
        let meta = object.meta();
        let fingerprint = BuildHasherDefault::<DefaultHasher>::default()
            .hash_one((meta.deletion_timestamp.is_some(), read));
        let key = (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        );
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        seen.insert(key, fingerprint) != Some(fingerprint)
    }

    /// Forgets an object: its next event passes.
    pub fn forget(&self, namespace: &str, name: &str) {
        self.seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// Forgets an object that is gone.
    pub fn deleted<K: Resource>(&self, object: &K) {
        let meta = object.meta();
        self.forget(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        );
    }

    /// How many objects are remembered.
    pub fn len(&self) -> usize {
        self.seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .len()
    }

    /// Whether no object is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
