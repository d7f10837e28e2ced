//! Watch events filtered by what a controller reads of the watched object.
//!
//! The KubeadmConfig and KubeadmControlPlane controllers are woken by their Clusters' (and the
//! KubeadmConfig controller by its Machines') watch events, but read only some of those
//! objects: the Cluster controller rewrites a Cluster's conditions and replica counters, and
//! the Machine controller a Machine's conditions, on every change in the cluster, and each of
//! those writes woke the providers' controllers for nothing (a reconcile each, and the
//! KubeadmConfig controller's reads of its Machine and Cluster). A [`Fingerprints`] remembers
//! a hash of what the controller reads of each object and lets an event through only when it
//! changed (as controller-runtime's predicates).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use corral_api::{Cluster, Machine};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

#[cfg(test)]
mod tests;

/// The last fingerprint of each object, by namespace and name.
#[derive(Default)]
pub(crate) struct Fingerprints(Mutex<HashMap<(String, String), u64>>);

impl Fingerprints {
    /// Whether `read` (what the controller reads of `object`) differs from when the object was
    /// last seen, or it was never seen; remembers it. An object being deleted always passes
    /// and is forgotten, so that deleted objects leave nothing behind (the objects watched
    /// here carry finalizers, so their last event shows the deletion).
    pub(crate) fn changed<K: Resource>(&self, object: &K, read: &Value) -> bool {
        let key = (object.namespace().unwrap_or_default(), object.name_any());
        let mut seen = self.0.lock().expect("fingerprints lock");
        if object.meta().deletion_timestamp.is_some() {
            seen.remove(&key);
            return true;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        serde_json::to_vec(read)
            .expect("JSON values serialize")
            .hash(&mut hasher);
        let fingerprint = hasher.finish();
        seen.insert(key, fingerprint) != Some(fingerprint)
    }

    /// Forgets an object (its next event passes).
    pub(crate) fn forget(&self, namespace: &str, name: &str) {
        self.0
            .lock()
            .expect("fingerprints lock")
            .remove(&(namespace.to_string(), name.to_string()));
    }
}

/// What the providers read of a Cluster: its identity, labels and annotations, spec, and of
/// its status the initialization flags and failure domains (not the conditions, replica
/// counters or phase, which the Cluster controller rewrites as machines change).
pub(crate) fn read_of_cluster(cluster: &Cluster) -> Value {
    let status = cluster.status.as_ref();
    json!({
        "metadata": metadata(cluster),
        "spec": cluster.spec,
        "initialization": status.map(|s| &s.initialization),
        "failureDomains": status.map(|s| &s.failure_domains),
    })
}

/// What the KubeadmConfig controller reads of a Machine: its identity, labels and
/// annotations, spec, and whether it has a Node (its join token is kept valid until then).
pub(crate) fn read_of_machine(machine: &Machine) -> Value {
    json!({
        "metadata": metadata(machine),
        "spec": machine.spec,
        "nodeRef": machine.status.as_ref().map(|s| &s.node_ref),
    })
}

fn metadata<K: Resource>(object: &K) -> Value {
    let meta = object.meta();
    json!({
        "uid": meta.uid,
        "labels": meta.labels,
        "annotations": meta.annotations,
        "ownerReferences": meta.owner_references,
        "deletionTimestamp": meta.deletion_timestamp,
    })
}
