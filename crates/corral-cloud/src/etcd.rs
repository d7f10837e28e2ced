//! The simulated etcd's membership, written where a machine's etcd starts.
//!
//! A control plane provider manages a stacked etcd through a few calls (list the members,
//! remove one, move leadership, read alarms; upstream KubeadmControlPlane's
//! `controlplane/kubeadm/pkg/etcd`). For simulated workload clusters, Corral's KubeadmControlPlane
//! answers them itself (`corral_kubeadm::controlplane::etcd`) from the workload cluster's
//! Kubernetes API alone, as upstream's in-memory backend serves etcd's gRPC calls from the same
//! objects. This module is the other side: it writes a new member when a control plane
//! machine's etcd step completes ([`member_pod_annotations`]); the member goes with its Pod
//! when the machine is deleted.
//!
//! # The protocol
//!
//! As upstream's in-memory backend (`test/infrastructure/inmemory/pkg/server/etcd`), membership
//! lives in annotations on the etcd static Pods (`kube-system/etcd-<node>`, labelled
//! `component=etcd`); `corral_kubeadm::controlplane::etcd` documents the same names:
//!
//! - [`MEMBER_ID`] and [`CLUSTER_ID`]: the member's and the etcd cluster's ids, 16 hex digits,
//!   as `etcdctl` prints them; a Pod without a member id is not a member.
//! - [`LEADER_FROM`]: when the member became leader (RFC 3339). The leader is the member that
//!   became leader last; when no member carries the annotation (the leader left), the member
//!   with the lowest id leads, as if it had won the election.
//! - [`MEMBER_REMOVED`]: when the member was removed (RFC 3339); the Pod stays until its
//!   machine goes, as a removed member's process does, but it is no longer a member.
//! - [`ALARMS`] (Corral's, not upstream's): the member's raised alarms, comma-separated
//!   (`NOSPACE`, `CORRUPT`), to simulate an unhealthy etcd.
//!
//! A member is healthy when its Pod is Ready and it has no alarm; the simulation turns the
//! Pods of a machine whose Node is not ready not Ready too, which is how an unreachable member
//! looks to a client.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

#[cfg(test)]
mod tests;

/// The member id of the etcd member an etcd Pod runs (upstream's in-memory annotation).
pub const MEMBER_ID: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/member-id";
/// The id of the etcd cluster the member belongs to (upstream's in-memory annotation).
pub const CLUSTER_ID: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/cluster-id";
/// When the member became leader (upstream's in-memory annotation).
pub const LEADER_FROM: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/leader-from";
/// When the member was removed from the cluster (upstream's in-memory annotation).
pub const MEMBER_REMOVED: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/member-removed";
/// The member's raised alarms, comma-separated (Corral's addition).
pub const ALARMS: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/alarms";

/// The etcd cluster id of the first current member among `existing` etcd Pods (one whose
/// ids parse and that was not removed).
fn current_cluster_id(existing: &[Pod]) -> Option<u64> {
    existing.iter().find_map(|pod| {
        let annotations = pod.metadata.annotations.as_ref()?;
        parse_id(annotations.get(MEMBER_ID)?)?;
        if annotations.contains_key(MEMBER_REMOVED) {
            return None;
        }
        parse_id(annotations.get(CLUSTER_ID)?)
    })
}

fn parse_id(value: &str) -> Option<u64> {
    if value.is_empty() || value.len() > 16 {
        return None;
    }
    u64::from_str_radix(value, 16).ok()
}

/// Formats an id as the annotations hold it.
fn format_id(id: u64) -> String {
    format!("{id:016x}")
}

/// The annotations of a new member's etcd Pod, given the Pods of the members so far: it joins
/// their etcd cluster, or starts a new one (and leads it) when there is none.
pub(crate) fn member_pod_annotations(
    existing: &[Pod],
    member_id: u64,
    new_cluster_id: u64,
    now: Timestamp,
) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::from([(MEMBER_ID.to_string(), format_id(member_id))]);
    match current_cluster_id(existing) {
        Some(cluster_id) => {
            annotations.insert(CLUSTER_ID.to_string(), format_id(cluster_id));
        }
        None => {
            annotations.insert(CLUSTER_ID.to_string(), format_id(new_cluster_id));
            annotations.insert(LEADER_FROM.to_string(), now.to_string());
        }
    }
    annotations
}
