//! The versions of objects that this provider's own writes replaced, so that a reconcile of such
//! a copy is skipped.
//!
//! A reflector shows the controllers' own writes a little later than they land. Meanwhile a
//! Machine or Cluster event, or a requeue, can start a reconcile of the copy a write replaced:
//! it could only lose a write race (HTTP 409, a failed reconcile) or write again what was just
//! written, with a new transition time. The write's own watch event brings the next reconcile,
//! so skipping is safe. Only versions a write is known to have replaced are remembered (the
//! write returned another version); seeing any other version of the object forgets them.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::Resource;

/// The most versions remembered per object: a chain of own writes (the finalizer, then the
/// providerID, then the status) that the cache has not caught up with; a longer one keeps the
/// newest.
const MAX_REPLACED: usize = 4;

/// Object uid → the versions own writes replaced, oldest first, and the version the last own
/// write produced.
#[derive(Default)]
pub(crate) struct OwnWrites {
    objects: Mutex<HashMap<String, Chain>>,
}

#[derive(Default)]
struct Chain {
    replaced: Vec<String>,
    latest: String,
}

impl OwnWrites {
    /// Remembers that a write replaced version `replaced` of an object with `written`, the
    /// object the API server returned. A write that changed nothing (same version) is not
    /// remembered: no watch event would follow it.
    pub fn remember<K: Resource>(&self, written: &K, replaced: Option<&str>) {
        let (Some(uid), Some(replaced), Some(version)) = (
            written.meta().uid.as_deref(),
            replaced,
            written.meta().resource_version.as_deref(),
        ) else {
            return;
        };
        if replaced == version {
            return;
        }
        let mut objects = self
            .objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let chain = objects.entry(uid.to_string()).or_default();
        // A write on top of the last own write extends the chain; one on top of another
        // writer's version starts a new one.
        if chain.latest != replaced {
            chain.replaced.clear();
        }
        if chain.replaced.len() == MAX_REPLACED {
            chain.replaced.remove(0);
        }
        chain.replaced.push(replaced.to_string());
        chain.latest = version.to_string();
    }

    /// Whether `object` is a copy that an own write replaced. Any other version forgets the
    /// object's chain.
    pub fn is_replaced<K: Resource>(&self, object: &K) -> bool {
        let Some(uid) = object.meta().uid.as_deref() else {
            return false;
        };
        let mut objects = self
            .objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(chain) = objects.get(uid) else {
            return false;
        };
        let version = object
            .meta()
            .resource_version
            .as_deref()
            .unwrap_or_default();
        if chain.replaced.iter().any(|replaced| replaced == version) {
            return true;
        }
        objects.remove(uid);
        false
    }

    /// Forgets an object, once it is gone.
    pub fn forget<K: Resource>(&self, object: &K) {
        if let Some(uid) = object.meta().uid.as_deref() {
            self.objects
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .remove(uid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DevMachine;

    fn version(resource_version: &str) -> DevMachine {
        let mut dev_machine = DevMachine::new("worker-0", Default::default());
        dev_machine.metadata.uid = Some("uid-1".into());
        dev_machine.metadata.resource_version = Some(resource_version.into());
        dev_machine
    }

    #[test]
    fn a_chain_of_own_writes_skips_every_version_it_replaced_until_another_is_seen() {
        let writes = OwnWrites::default();
        writes.remember(&version("6"), Some("5"));
        writes.remember(&version("7"), Some("6"));
        assert!(writes.is_replaced(&version("5")));
        assert!(writes.is_replaced(&version("6")));
        assert!(!writes.is_replaced(&version("7")));
        // Seeing the written version forgot the chain.
        assert!(!writes.is_replaced(&version("5")));
    }

    #[test]
    fn a_write_that_changed_nothing_or_started_from_another_writers_version_is_not_chained() {
        let writes = OwnWrites::default();
        writes.remember(&version("5"), Some("5"));
        assert!(!writes.is_replaced(&version("5")));
        writes.remember(&version("6"), Some("5"));
        writes.remember(&version("9"), Some("8"));
        assert!(writes.is_replaced(&version("8")));
        writes.forget(&version("8"));
        assert!(!writes.is_replaced(&version("8")));
        assert!(!writes.is_replaced(&version("5")));
    }
}
