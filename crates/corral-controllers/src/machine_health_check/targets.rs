//! Which Machines a MachineHealthCheck checks, and their Nodes (upstream `getTargetsFromMHC`,
//! `getMachinesFromMHC` and `getNodeFromMachine` in
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_targets.go`).
//!
//! The targets are the Machines in the MachineHealthCheck's namespace labelled with its
//! Cluster's name and matching its selector, except those paused or asking to be skipped
//! ([`skip_reason`]). Machines being deleted stay targets: they are never healthy, so they
//! count against `triggerIf` until they are gone.

use std::sync::Arc;

use corral_api::labels::CLUSTER_NAME;
use corral_api::{Cluster, Machine, MachineHealthCheck};
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use kube::core::{ParseExpressionError, Selector, SelectorExt};
use kube::runtime::reflector::Store;

use super::Error;
use super::target_health::{TargetNode, skip_reason};
use corral_runtime::cluster_cache::{ClusterCache, ClusterKey};
use corral_runtime::conditions;

#[cfg(test)]
mod tests;

/// What was found of a target's Node.
#[derive(Clone, Debug)]
pub(crate) enum NodeLookup {
    /// No `status.nodeRef`, or the workload cluster is not looked at yet.
    NotYet,
    /// `status.nodeRef` names a Node the workload cluster does not have.
    Deleted,
    /// The Node.
    Found(Arc<Node>),
}

impl NodeLookup {
    /// The view [`super::target_health::compute_health`] judges.
    pub(crate) fn as_target_node(&self) -> TargetNode<'_> {
        match self {
            NodeLookup::NotYet => TargetNode::NotYet,
            NodeLookup::Deleted => TargetNode::Deleted,
            NodeLookup::Found(node) => TargetNode::Found(node),
        }
    }
}

/// One Machine to check and its Node.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub machine: Arc<Machine>,
    pub node: NodeLookup,
}

/// The selector a MachineHealthCheck's targets match: its own plus its Cluster's name label
/// (upstream `CloneSelectorAndAddLabel`).
pub(crate) fn target_selector(
    check: &MachineHealthCheck,
) -> Result<Selector, ParseExpressionError> {
    let mut selector = check.spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(CLUSTER_NAME.to_owned(), check.spec.cluster_name.clone());
    Selector::try_from(selector)
}

/// Whether the MachineHealthCheck selects the Machine (skipped Machines included).
pub(crate) fn selects(check: &MachineHealthCheck, selector: &Selector, machine: &Machine) -> bool {
    machine.metadata.namespace == check.metadata.namespace && selector.matches(machine.labels())
}

/// The Machines the MachineHealthCheck checks, sorted by name.
pub(crate) fn select_machines(
    check: &MachineHealthCheck,
    machines: &Store<Machine>,
) -> Result<Vec<Arc<Machine>>, ParseExpressionError> {
    let selector = target_selector(check)?;
    let mut selected: Vec<Arc<Machine>> = machines
        .state()
        .into_iter()
        .filter(|machine| selects(check, &selector, machine))
        .filter(|machine| match skip_reason(machine) {
            Some(reason) => {
                tracing::debug!(machine = %machine.name_any(), %reason, "Skipping remediation");
                false
            }
            None => true,
        })
        .collect();
    selected.sort_by_key(|machine| machine.name_any());
    Ok(selected)
}

/// The Machines with their Nodes, read from the workload cluster's Node cache. Until the
/// control plane is initialized the workload cluster is not looked at (as upstream, which only
/// gets a client then), and every Machine counts as having no Node yet.
pub(crate) async fn find_nodes(
    cache: &ClusterCache,
    cluster_key: &ClusterKey,
    cluster: &Cluster,
    machines: Vec<Arc<Machine>>,
) -> Result<Vec<Target>, Error> {
    let initialized = cluster.status.as_ref().is_some_and(|status| {
        conditions::is_true(
            &status.conditions,
            corral_api::conditions::cluster::CONTROL_PLANE_INITIALIZED,
        )
    });
    let mut targets = Vec::with_capacity(machines.len());
    for machine in machines {
        let node_name = machine
            .status
            .as_ref()
            .and_then(|status| status.node_ref.as_ref())
            .map(|node_ref| node_ref.name.clone())
            .filter(|name| !name.is_empty());
        let node = match node_name {
            Some(name) if initialized => match cache.node(cluster_key, &name).await {
                Ok(Some(node)) => NodeLookup::Found(node),
                Ok(None) => NodeLookup::Deleted,
                Err(source) => {
                    return Err(Error::GetNode {
                        machine: machine.name_any(),
                        node: name,
                        source,
                    });
                }
            },
            _ => NodeLookup::NotYet,
        };
        targets.push(Target { machine, node });
    }
    Ok(targets)
}
