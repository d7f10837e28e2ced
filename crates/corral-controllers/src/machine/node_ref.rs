//! The Machine's Node in the workload cluster (upstream
//! `core/reconcilers/machine/machine_controller_noderef.go`): found by `spec.providerID`
//! through the cluster cache, recorded in `status.nodeRef` and `status.nodeInfo`, and kept
//! labelled and annotated from the Machine.

use std::collections::{BTreeMap, BTreeSet};

use corral_api::Machine;
use corral_api::annotations as names;
use corral_api::labels;
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::EventType;
use serde_json::{Map, Value, json};

use super::status::NodeReadError;
use super::{Error, MachineController, Scope};
use corral_runtime::cluster_cache;

/// The taint a bootstrap provider may put on a new Node, removed once its labels are synced.
pub const NODE_UNINITIALIZED_TAINT: &str = "node.cluster.x-k8s.io/uninitialized";

/// The annotations every Node of a Machine gets (upstream `CommonNodeAnnotations`).
const COMMON_NODE_ANNOTATIONS: [&str; 5] = [
    names::NODE_CLUSTER_NAME,
    names::NODE_CLUSTER_NAMESPACE,
    names::NODE_MACHINE,
    names::NODE_OWNER_KIND,
    names::NODE_OWNER_NAME,
];

fn in_domain(key: &str, domain: &str) -> bool {
    let prefix = key.split('/').next().unwrap_or_default();
    prefix == domain || prefix.ends_with(&format!(".{domain}"))
}

/// The Machine labels synced to its Node (upstream `labels.GetManagedLabels`): those under
/// `node-role.kubernetes.io`, and under `node-restriction.kubernetes.io` and
/// `node.cluster.x-k8s.io` or their subdomains.
pub fn managed_labels(machine: &Machine) -> BTreeMap<String, String> {
    machine
        .labels()
        .iter()
        .filter(|(key, _)| {
            key.split('/').next() == Some(labels::NODE_ROLE_PREFIX)
                || in_domain(key, labels::NODE_RESTRICTION_DOMAIN)
                || in_domain(key, labels::MANAGED_NODE_DOMAIN)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The annotations the Machine controller sets on the Node (upstream
/// `annotations.GetManagedAnnotations`): the cluster, namespace, Machine and the Machine's
/// controller, plus the Machine's annotations under `node.cluster.x-k8s.io`.
pub fn managed_annotations(machine: &Machine) -> BTreeMap<String, String> {
    let mut annotations = BTreeMap::new();
    annotations.insert(
        names::NODE_CLUSTER_NAME.to_owned(),
        machine.spec.cluster_name.clone(),
    );
    annotations.insert(
        names::NODE_CLUSTER_NAMESPACE.to_owned(),
        machine.namespace().unwrap_or_default(),
    );
    annotations.insert(names::NODE_MACHINE.to_owned(), machine.name_any());
    if let Some(owner) = machine
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
    {
        annotations.insert(names::NODE_OWNER_KIND.to_owned(), owner.kind.clone());
        annotations.insert(names::NODE_OWNER_NAME.to_owned(), owner.name.clone());
    }
    for (key, value) in machine.annotations() {
        if in_domain(key, labels::MANAGED_NODE_DOMAIN) {
            annotations.insert(key.clone(), value.clone());
        }
    }
    annotations
}

/// The merge patch that syncs a Node with its Machine (upstream `patchNode`), or `None` when
/// it is in sync: managed labels and annotations set; those set from the Machine before and
/// gone from it removed (tracked in the labels-from-machine and annotations-from-machine
/// annotations); the uninitialized taint removed.
pub fn compute_node_patch(
    node: &Node,
    desired_labels: &BTreeMap<String, String>,
    desired_annotations: &BTreeMap<String, String>,
) -> Option<Value> {
    let current_labels = node.labels();
    let current_annotations = node.annotations();
    let previous = |key: &str| -> BTreeSet<String> {
        current_annotations
            .get(key)
            .map(|list| {
                list.split(',')
                    .filter(|k| !k.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };

    let mut label_changes = Map::new();
    for (key, value) in desired_labels {
        if current_labels.get(key) != Some(value) {
            label_changes.insert(key.clone(), Value::String(value.clone()));
        }
    }
    for key in previous(names::NODE_LABELS_FROM_MACHINE) {
        if !desired_labels.contains_key(&key) && current_labels.contains_key(&key) {
            label_changes.insert(key, Value::Null);
        }
    }

    let mut annotation_changes = Map::new();
    for (key, value) in desired_annotations {
        if current_annotations.get(key) != Some(value) {
            annotation_changes.insert(key.clone(), Value::String(value.clone()));
        }
    }
    let mut previously_synced = previous(names::NODE_ANNOTATIONS_FROM_MACHINE);
    previously_synced.extend(COMMON_NODE_ANNOTATIONS.iter().map(|k| (*k).to_owned()));
    for key in previously_synced {
        if key != names::NODE_ANNOTATIONS_FROM_MACHINE
            && !desired_annotations.contains_key(&key)
            && current_annotations.contains_key(&key)
        {
            annotation_changes.insert(key, Value::Null);
        }
    }
    let labels_list = desired_labels.keys().cloned().collect::<Vec<_>>().join(",");
    let annotations_list = desired_annotations
        .keys()
        .filter(|k| !COMMON_NODE_ANNOTATIONS.contains(&k.as_str()))
        .cloned()
        .collect::<Vec<_>>()
        .join(",");
    for (key, value) in [
        (names::NODE_LABELS_FROM_MACHINE, labels_list),
        (names::NODE_ANNOTATIONS_FROM_MACHINE, annotations_list),
    ] {
        if current_annotations.get(key) != Some(&value) {
            annotation_changes.insert(key.to_owned(), Value::String(value));
        }
    }

    let taints: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|spec| spec.taints.clone())
        .unwrap_or_default();
    let kept: Vec<&Taint> = taints
        .iter()
        .filter(|taint| !(taint.key == NODE_UNINITIALIZED_TAINT && taint.effect == "NoSchedule"))
        .collect();

    let mut metadata = Map::new();
    if !label_changes.is_empty() {
        metadata.insert("labels".into(), Value::Object(label_changes));
    }
    if !annotation_changes.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotation_changes));
    }
    let mut patch = Map::new();
    if !metadata.is_empty() {
        patch.insert("metadata".into(), Value::Object(metadata));
    }
    if kept.len() != taints.len() {
        patch.insert("spec".into(), json!({ "taints": kept }));
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

/// Finds the Machine's Node and keeps it in sync (upstream `reconcileNode`). Without a
/// provider ID there is nothing to look for yet; a Node that does not exist yet is waited for
/// (Node events bring the next reconcile).
pub(super) async fn reconcile_node(
    controller: &MachineController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let Some(provider_id) = scope.machine.spec.provider_id.clone() else {
        return Ok(());
    };
    let cache = controller.ctx.cluster_cache();
    let node = match cache
        .node_by_provider_id(&scope.cluster_key, &provider_id)
        .await
    {
        Ok(node) => node,
        // The cluster cache reconciles the Machines of a cluster when it connects: no retry
        // needed (upstream requeues after a minute on ErrClusterNotConnected, without error).
        Err(cluster_cache::Error::NotConnected { reason, .. }) => {
            tracing::debug!(%reason, "Waiting for the workload cluster to be reachable to look up the Node");
            scope.node_error = Some(NodeReadError::NotConnected);
            return Ok(());
        }
        Err(error) => {
            scope.node_error = Some(NodeReadError::Other(error.to_string()));
            return Err(Error::GetNode(error));
        }
    };
    let Some(node) = node else {
        let deleting = scope.machine.metadata.deletion_timestamp.is_some();
        let node_ref = scope
            .machine
            .status
            .as_ref()
            .and_then(|s| s.node_ref.as_ref())
            .map(|r| r.name.clone());
        return match node_ref {
            Some(node) if !deleting => Err(Error::FindNode { provider_id, node }),
            _ => Ok(()),
        };
    };
    let status = scope.machine.status.get_or_insert_with(Default::default);
    if status.node_ref.is_none() {
        let name = node.name_any();
        tracing::info!(node = %name, %provider_id, "Infrastructure provider reporting spec.providerID, Kubernetes Node is now available");
        status.node_ref = Some(corral_api::MachineNodeReference { name: name.clone() });
        scope.event(EventType::Normal, "SuccessfulSetNodeRef", name);
    }
    let status = scope.machine.status.get_or_insert_with(Default::default);
    status.node_info = node.status.as_ref().and_then(|s| s.node_info.clone());

    let desired_labels = managed_labels(&scope.machine);
    let desired_annotations = managed_annotations(&scope.machine);
    if let Some(patch) = compute_node_patch(&node, &desired_labels, &desired_annotations) {
        let client = cache
            .client(&scope.cluster_key)
            .await
            .map_err(Error::GetNode)?;
        let nodes: Api<Node> = Api::all(client);
        nodes
            .patch(
                &node.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|source| Error::PatchNode {
                node: node.name_any(),
                source,
            })?;
    }
    scope.node = Some(node);
    Ok(())
}
