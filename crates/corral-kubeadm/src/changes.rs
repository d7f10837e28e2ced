//! What the kubeadm providers read of the objects whose watch events wake them, for
//! `corral_runtime::changes::Fingerprints` (through `SharedCache::applied_changed` and
//! `touched_changed`).
//!
//! The KubeadmConfig and KubeadmControlPlane controllers are woken by their Clusters' (and the
//! KubeadmConfig controller by its Machines') watch events, but read only some of those
//! objects: the Cluster controller rewrites a Cluster's conditions and replica counters, and
//! the Machine controller a Machine's conditions, on every change in the cluster, and each of
//! those writes woke the providers' controllers for nothing (a reconcile each, and the
//! KubeadmConfig controller's reads of its Machine and Cluster). The fingerprint of what they
//! read lets an event through only when it changed (as controller-runtime's predicates); the
//! rule for deletions is the runtime's.

use corral_api::{Cluster, Machine};
use kube::Resource;
use serde_json::{Value, json};

#[cfg(test)]
mod tests;

/// What the providers read of a Cluster, as JSON: its identity, labels and annotations, spec, and of
/// its status the initialization flags and failure domains (not the conditions, replica
/// counters or phase, which the Cluster controller rewrites as machines change).
pub(crate) fn read_of_cluster(cluster: &Cluster) -> String {
    let status = cluster.status.as_ref();
    json!({
        "metadata": metadata(cluster),
        "spec": cluster.spec,
        "initialization": status.map(|s| &s.initialization),
        "failureDomains": status.map(|s| &s.failure_domains),
    })
    .to_string()
}

/// What the KubeadmConfig controller reads of a Machine, as JSON: its identity, labels and
/// annotations, spec, and whether it has a Node (its join token is kept valid until then).
pub(crate) fn read_of_machine(machine: &Machine) -> String {
    json!({
        "metadata": metadata(machine),
        "spec": machine.spec,
        "nodeRef": machine.status.as_ref().map(|s| &s.node_ref),
    })
    .to_string()
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
