//! Draining a Node before its Machine goes (upstream `core/reconcilers/machine/drain`):
//! cordon it, then evict its Pods through the Eviction API (which respects
//! PodDisruptionBudgets), skipping DaemonSet and mirror Pods, finished Pods and Pods labelled
//! `cluster.x-k8s.io/drain: skip`, and waiting for Pods labelled `wait-completed` to finish.
//! On an unreachable Node, Pods deleted more than a second ago are ignored: their kubelet will
//! never confirm it.
//!
//! A workload cluster that serves no Pods (a simulated one) is drained once cordoned.

use std::time::Duration;

use corral_api::labels::{DRAIN_SKIP, DRAIN_WAIT_COMPLETED, POD_DRAIN};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;

/// How often a drain that is not done is checked again (upstream `drainRetryInterval`).
pub const DRAIN_RETRY_INTERVAL: Duration = Duration::from_secs(20);

/// A failed step of draining a Node.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the Node failed.
    #[error("cannot read Node {node}")]
    GetNode {
        /// The Node.
        node: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Marking the Node unschedulable failed.
    #[error("cannot cordon Node {node}")]
    CordonNode {
        /// The Node.
        node: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Listing the Node's Pods failed.
    #[error("cannot list the Pods of Node {node}")]
    ListPods {
        /// The Node.
        node: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
}

/// How far a drain got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing is left to evict or wait for (or the Node is gone).
    Drained,
    /// Pods remain; the message says which and why.
    Waiting(String),
}

/// What to do with a Pod of a Node being drained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodAction {
    /// Leave it: DaemonSet or mirror Pod, finished, or labelled to skip.
    Skip,
    /// Wait for it to complete (labelled `wait-completed`).
    WaitCompleted,
    /// Wait for it to go: it is already being deleted.
    WaitDeleted,
    /// Evict it.
    Evict,
}

/// Decides what draining does with a Pod (upstream `drain.GetPodsForEviction` filters).
pub fn pod_action(pod: &Pod, node_unreachable: bool, now: Timestamp) -> PodAction {
    if pod
        .annotations()
        .contains_key("kubernetes.io/config.mirror")
    {
        return PodAction::Skip;
    }
    if pod
        .owner_references()
        .iter()
        .any(|owner| owner.controller == Some(true) && owner.kind == "DaemonSet")
    {
        return PodAction::Skip;
    }
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return PodAction::Skip;
    }
    match pod.labels().get(POD_DRAIN).map(String::as_str) {
        Some(DRAIN_SKIP) => return PodAction::Skip,
        Some(DRAIN_WAIT_COMPLETED) => return PodAction::WaitCompleted,
        _ => {}
    }
    if let Some(deleted) = &pod.metadata.deletion_timestamp {
        let age = now.duration_since(deleted.0);
        if node_unreachable && age > k8s_openapi::jiff::SignedDuration::from_secs(1) {
            return PodAction::Skip;
        }
        return PodAction::WaitDeleted;
    }
    PodAction::Evict
}

fn is_unreachable(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|conditions| conditions.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|ready| ready.status == "Unknown")
}

/// Cordons the Node and evicts what must go; [`Outcome::Waiting`] until nothing is left.
pub async fn drain_node(client: &Client, node_name: &str) -> Result<Outcome, Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let Some(node) = nodes
        .get_opt(node_name)
        .await
        .map_err(|source| Error::GetNode {
            node: node_name.to_owned(),
            source,
        })?
    else {
        // Deleted by someone else: nothing to drain.
        return Ok(Outcome::Drained);
    };
    let cordoned = node
        .spec
        .as_ref()
        .and_then(|spec| spec.unschedulable)
        .unwrap_or(false);
    if !cordoned {
        tracing::info!(node = node_name, "Cordoning Node");
        nodes
            .patch(
                node_name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "unschedulable": true } })),
            )
            .await
            .map_err(|source| Error::CordonNode {
                node: node_name.to_owned(),
                source,
            })?;
    }
    let pods: Api<Pod> = Api::all(client.clone());
    let params = ListParams::default().fields(&format!("spec.nodeName={node_name}"));
    let list = match pods.list(&params).await {
        Ok(list) => list,
        // The workload cluster serves no Pods: nothing runs there to evict.
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(Outcome::Drained),
        Err(source) => {
            return Err(Error::ListPods {
                node: node_name.to_owned(),
                source,
            });
        }
    };
    let unreachable = is_unreachable(&node);
    let now = Timestamp::now();
    let mut waiting_deleted = Vec::new();
    let mut waiting_completed = Vec::new();
    let mut failed = Vec::new();
    let mut evicted = Vec::new();
    for pod in &list.items {
        let name = format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any());
        match pod_action(pod, unreachable, now) {
            PodAction::Skip => {}
            PodAction::WaitCompleted => waiting_completed.push(name),
            PodAction::WaitDeleted => waiting_deleted.push(name),
            PodAction::Evict => {
                let api: Api<Pod> =
                    Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
                match api.evict(&pod.name_any(), &EvictParams::default()).await {
                    Ok(_) => evicted.push(name),
                    Err(kube::Error::Api(status)) if status.is_not_found() => {}
                    Err(error) => failed.push(format!("{name}: {error}")),
                }
            }
        }
    }
    if waiting_deleted.is_empty()
        && waiting_completed.is_empty()
        && failed.is_empty()
        && evicted.is_empty()
    {
        return Ok(Outcome::Drained);
    }
    let mut lines = Vec::new();
    if !evicted.is_empty() {
        lines.push(format!(
            "* Pods evicted, waiting for them to go: {}",
            evicted.join(", ")
        ));
    }
    if !failed.is_empty() {
        lines.push(format!(
            "* Pods that failed eviction: {}",
            failed.join("; ")
        ));
    }
    if !waiting_deleted.is_empty() {
        lines.push(format!(
            "* Pods with deletionTimestamp that still exist: {}",
            waiting_deleted.join(", ")
        ));
    }
    if !waiting_completed.is_empty() {
        lines.push(format!(
            "* Pods waiting for completion: {}",
            waiting_completed.join(", ")
        ));
    }
    Ok(Outcome::Waiting(lines.join("\n")))
}
