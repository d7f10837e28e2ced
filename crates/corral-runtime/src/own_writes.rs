//! The versions of objects that this process's own writes replaced, so that a reconcile of such
//! a copy is skipped: the one facility for "skip a copy my own write replaced", used by every
//! write through [`crate::patch`] (and so by [`crate::run_controller`]) and by controllers that
//! write without it (the in-memory provider's).
//!
//! A cache shows a controller's own write a little later than it lands. Meanwhile another
//! object's event, or a requeue, can start a reconcile of the copy the write replaced: it could
//! only lose a write race (HTTP 409, a failed reconcile) or write again what was just written.
//! The write's own watch event brings the next reconcile, so skipping is safe.
//!
//! Only versions a write is known to have replaced are remembered (the write returned another
//! version); a chain of own writes (a metadata write, then a status write) replaces several,
//! and the cache may show any of them. Seeing any version not in the chain forgets the object:
//! the cache has caught up, or another writer came between.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::Resource;
use kube::api::ObjectMeta;

#[cfg(test)]
mod tests;

/// The most versions remembered per object; a longer chain of own writes without the cache
/// catching up keeps the newest.
pub const MAX_REPLACED: usize = 8;

/// The versions of one object that own writes replaced, since a reconcile last saw a version
/// they did not produce.
#[derive(Debug, Default)]
struct Chain {
    /// Versions replaced by a chain of own writes, oldest first.
    versions: Vec<String>,
    /// The version the last own write produced.
    latest: String,
}

/// Object uid (unique across kinds) → the versions own writes replaced.
#[derive(Debug, Default)]
pub struct OwnWrites {
    // An `Option` so that the process-wide instance can be a `static` (`HashMap::new` is not
    // `const`).
    objects: Mutex<Option<HashMap<String, Chain>>>,
}

impl OwnWrites {
    /// No writes remembered.
    pub const fn new() -> Self {
        OwnWrites {
            objects: Mutex::new(None),
        }
    }

    /// Remembers that a write replaced version `replaced` of an object with the object `written`
    /// (the metadata the API server returned). A write that changed nothing (same version) is
    /// not remembered: no watch event follows it.
    pub fn remember(&self, written: &ObjectMeta, replaced: String) {
        let (Some(uid), Some(version)) =
            (written.uid.as_deref(), written.resource_version.as_deref())
        else {
            return;
        };
        if replaced == version {
            return;
        }
        let mut objects = self
            .objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let chain = objects
            .get_or_insert_with(HashMap::new)
            .entry(uid.to_owned())
            .or_default();
        // A write on top of the previous own write extends the chain; one on top of another
        // writer's version starts a new one.
        if chain.latest != replaced {
            chain.versions.clear();
        }
        if chain.versions.len() == MAX_REPLACED {
            chain.versions.remove(0);
        }
        chain.versions.push(replaced);
        chain.latest = version.to_owned();
    }

    /// Whether `object` is a copy that an own write has replaced, i.e. a cache that has not
    /// caught up yet (any version of a chain of own writes but the last). Seeing any other
    /// version forgets the object.
    pub fn is_replaced<K: Resource>(&self, object: &K) -> bool {
        let Some(uid) = object.meta().uid.as_deref() else {
            return false;
        };
        let mut objects = self
            .objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(objects) = objects.as_mut() else {
            return false;
        };
        if objects.is_empty() {
            return false;
        }
        let Some(chain) = objects.get(uid) else {
            return false;
        };
        let version = object
            .meta()
            .resource_version
            .as_deref()
            .unwrap_or_default();
        if chain.versions.iter().any(|replaced| replaced == version) {
            return true;
        }
        objects.remove(uid);
        false
    }

    /// Whether `object` is the version the last own write of it produced: its watch event is
    /// this process's own write coming back.
    pub fn is_own_write<K: Resource>(&self, object: &K) -> bool {
        let (Some(uid), Some(version)) = (
            object.meta().uid.as_deref(),
            object.meta().resource_version.as_deref(),
        ) else {
            return false;
        };
        let objects = self
            .objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        objects
            .as_ref()
            .and_then(|objects| objects.get(uid))
            .is_some_and(|chain| chain.latest == version)
    }

    /// Forgets an object, once it is gone.
    pub fn forget<K: Resource>(&self, object: &K) {
        if let Some(uid) = object.meta().uid.as_deref()
            && let Some(objects) = self
                .objects
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_mut()
        {
            objects.remove(uid);
        }
    }
}
