//! What the collector does with one object from the queue (kube-controller-manager's
//! attemptToDeleteItem, processDeletingDependentsItem and orphanDependents). Every decision
//! starts from the object as stored now; every write goes through `rest.rs` with the object's
//! uid as a precondition, so the collector never touches a newer object of the same name.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::object;
use crate::registry::ResourceInfo;
use crate::rest::{self, Change, DeleteOptions, Target};
use crate::server::ApiState;

use super::Shared;
use super::graph::{self, ObjectRef, OwnerLocation, OwnerRef};
use super::policy::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER, PropagationPolicy};

/// How processing an object ended, when it did not fail.
pub enum Outcome {
    Done,
    /// An ownerReference names a kind no served resource has: wait for new resources.
    UnknownKind,
    /// The index may not hold every dependent yet: try again shortly.
    IndexBehind,
}

pub async fn process(
    state: &Arc<ApiState>,
    shared: &Arc<Shared>,
    item: &ObjectRef,
) -> Result<Outcome, ApiError> {
    let resource = &item.resource;
    let Some(resource) = state.registry.get(&resource.group, &resource.plural) else {
        return Ok(Outcome::Done);
    };
    let Some(kv) = state.store.get(&item.key(), None).await? else {
        return Ok(Outcome::Done);
    };
    let current = object::decode_stored(&kv)?;
    if object::uid(&current) != Some(item.uid.as_str()) {
        return Ok(Outcome::Done);
    }
    let finalizers = object::finalizers(&current);
    let being_deleted = object::deletion_timestamp(&current).is_some();
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    if being_deleted && has(ORPHAN_FINALIZER) {
        return orphan_dependents(state, shared, &resource, item).await;
    }
    if being_deleted && has(FOREGROUND_FINALIZER) {
        return finish_foreground_deletion(state, shared, &resource, item).await;
    }
    if being_deleted {
        // On its way out already; its dependents are looked at when it is gone.
        return Ok(Outcome::Done);
    }
    let owners = graph::owner_references(&current);
    if owners.is_empty() {
        return Ok(Outcome::Done);
    }
    collect_if_ownerless(state, shared, &resource, item, &finalizers, &owners).await
}

enum OwnerState {
    /// Exists and is not deleting its dependents.
    Solid,
    /// Does not exist, or another object (another uid) has its name.
    Gone,
    /// Exists, being deleted in the foreground: waits for its dependents.
    Waiting,
}

/// Deletes an object whose owners are all gone or waiting for it, or drops its references to
/// such owners when another owner still exists.
async fn collect_if_ownerless(
    state: &Arc<ApiState>,
    shared: &Arc<Shared>,
    resource: &Arc<ResourceInfo>,
    item: &ObjectRef,
    finalizers: &[String],
    owners: &[OwnerRef],
) -> Result<Outcome, ApiError> {
    let mut solid = false;
    let mut waiting = false;
    let mut to_drop = Vec::new();
    for owner in owners {
        let location = graph::locate_owner(&state.registry, item, owner);
        let key = match location {
            OwnerLocation::Found { key } => key,
            OwnerLocation::UnknownKind => {
                tracing::debug!(owner = %owner.kind, "Waiting for the kind of an owner to be served");
                return Ok(Outcome::UnknownKind);
            }
            OwnerLocation::NamespacedOwnerOfClusterScoped => {
                // kube-controller-manager reports this and never collects the object.
                tracing::debug!(owner = %owner.kind, "Ignoring a cluster-scoped object that names a namespaced owner");
                return Ok(Outcome::Done);
            }
        };
        match owner_state(state, shared, owner, &key).await? {
            OwnerState::Solid => solid = true,
            OwnerState::Gone => to_drop.push(owner.uid.clone()),
            OwnerState::Waiting => {
                waiting = true;
                to_drop.push(owner.uid.clone());
            }
        }
    }
    if solid {
        if to_drop.is_empty() {
            return Ok(Outcome::Done);
        }
        // A reference to an owner deleting its dependents would keep that owner waiting.
        tracing::debug!(
            "Removing ownerReferences to owners that are gone or deleting their dependents"
        );
        patch_metadata(state, resource, item, move |metadata| {
            remove_owner_references(metadata, &to_drop)
        })
        .await?;
        return Ok(Outcome::Done);
    }
    let (has_dependents, cycle) = {
        let graph = shared.graph.lock().unwrap();
        let dependents = graph.dependents_of(&item.uid);
        let cycle = dependents.iter().any(|d| d.deleting_dependents);
        (graph.has_dependents(&item.uid), cycle)
    };
    let policy = if waiting && has_dependents {
        if cycle {
            // A dependent of this object waits for it while its owner waits for this one:
            // stop blocking the owner, so the wait cannot go round in a circle.
            tracing::debug!("Unblocking the owners of an object in a deletion cycle");
            patch_metadata(state, resource, item, unblock_owner_references).await?;
        }
        PropagationPolicy::Foreground
    } else if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
        PropagationPolicy::Orphan
    } else if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
        PropagationPolicy::Foreground
    } else {
        PropagationPolicy::Background
    };
    tracing::debug!(
        policy = policy.as_str(),
        "Deleting an object whose owners are gone or wait for its deletion"
    );
    let options = DeleteOptions {
        uid: Some(item.uid.clone()),
        propagation_policy: Some(policy),
        ..Default::default()
    };
    match rest::delete(state, &target(resource, item), &item.name, &options).await {
        Ok(_) => Ok(Outcome::Done),
        Err(error) if error.code == StatusCode::NOT_FOUND => Ok(Outcome::Done),
        Err(error) => Err(error),
    }
}

/// Reads an owner from the store (or the cache of owners known to be gone).
async fn owner_state(
    state: &ApiState,
    shared: &Arc<Shared>,
    owner: &OwnerRef,
    key: &str,
) -> Result<OwnerState, ApiError> {
    let identity = graph::identity_hash(&owner.uid, key);
    if shared.absent.lock().unwrap().contains(identity) {
        return Ok(OwnerState::Gone);
    }
    let found = match state.store.get(key, None).await? {
        Some(kv) => object::decode_stored(&kv)?,
        None => {
            shared.absent.lock().unwrap().insert(identity);
            return Ok(OwnerState::Gone);
        }
    };
    if object::uid(&found) != Some(owner.uid.as_str()) {
        shared.absent.lock().unwrap().insert(identity);
        return Ok(OwnerState::Gone);
    }
    let waiting = object::deletion_timestamp(&found).is_some()
        && object::finalizers(&found)
            .iter()
            .any(|f| f == FOREGROUND_FINALIZER);
    Ok(if waiting {
        OwnerState::Waiting
    } else {
        OwnerState::Solid
    })
}

/// An owner deleted in the foreground: its dependents are being deleted (queued when the
/// deletion started); once none that blocks it is left, its finalizer goes and so does it.
async fn finish_foreground_deletion(
    state: &Arc<ApiState>,
    shared: &Arc<Shared>,
    resource: &Arc<ResourceInfo>,
    item: &ObjectRef,
) -> Result<Outcome, ApiError> {
    if !shared.caught_up(state, &item.uid) {
        return Ok(Outcome::IndexBehind);
    }
    let blocking: Vec<_> = shared
        .graph
        .lock()
        .unwrap()
        .dependents_of(&item.uid)
        .into_iter()
        .filter(|d| d.blocks)
        .collect();
    if blocking.is_empty() {
        tracing::debug!(
            "Removing the foregroundDeletion finalizer: no dependent blocks the deletion any more"
        );
        patch_metadata(state, resource, item, |metadata| {
            remove_finalizer(metadata, FOREGROUND_FINALIZER)
        })
        .await?;
        return Ok(Outcome::Done);
    }
    // The owner comes back to the queue when one of these goes or stops blocking.
    for dependent in blocking {
        if !dependent.deleting_dependents {
            shared.queue.add(dependent.object);
        }
    }
    Ok(Outcome::Done)
}

/// An owner deleted with the orphan policy: its dependents lose their ownerReference to it,
/// then its finalizer goes and so does it.
async fn orphan_dependents(
    state: &Arc<ApiState>,
    shared: &Arc<Shared>,
    resource: &Arc<ResourceInfo>,
    item: &ObjectRef,
) -> Result<Outcome, ApiError> {
    if !shared.caught_up(state, &item.uid) {
        return Ok(Outcome::IndexBehind);
    }
    let dependents = shared.graph.lock().unwrap().dependents_of(&item.uid);
    for dependent in dependents {
        let dependent = dependent.object;
        let dependent_resource = &dependent.resource;
        let Some(dependent_resource) = state
            .registry
            .get(&dependent_resource.group, &dependent_resource.plural)
        else {
            continue;
        };
        tracing::debug!(%dependent, "Orphaning a dependent");
        let owner_uid = vec![item.uid.clone()];
        patch_metadata(state, &dependent_resource, &dependent, move |metadata| {
            remove_owner_references(metadata, &owner_uid)
        })
        .await?;
    }
    tracing::debug!("Removing the orphan finalizer: the dependents are orphaned");
    patch_metadata(state, resource, item, |metadata| {
        remove_finalizer(metadata, ORPHAN_FINALIZER)
    })
    .await?;
    Ok(Outcome::Done)
}

fn target(resource: &Arc<ResourceInfo>, item: &ObjectRef) -> Target {
    Target {
        resource: resource.clone(),
        version: resource.storage_version().to_string(),
        namespace: item.namespace.clone(),
        name: Some(item.name.clone()),
        subresource: None,
    }
}

/// Changes the metadata of `item` through the update verb, so that removing the last
/// finalizer of a deleted object deletes it. Nothing happens when the object is gone or has
/// another uid.
async fn patch_metadata(
    state: &ApiState,
    resource: &Arc<ResourceInfo>,
    item: &ObjectRef,
    edit: impl Fn(&mut Map<String, Value>) + Send + Sync + 'static,
) -> Result<(), ApiError> {
    let uid = item.uid.clone();
    let change = Change::Patch(Box::new(move |current: &Value| {
        let mut new = current.clone();
        let metadata = object::metadata_mut(&mut new);
        // The update verb refuses the change with a conflict if the uid differs.
        metadata.insert("uid".into(), Value::String(uid.clone()));
        metadata.remove("resourceVersion");
        edit(metadata);
        Ok(new)
    }));
    let target = target(resource, item);
    match rest::update(state, &target, &item.name, &Default::default(), change).await {
        Ok(_) => Ok(()),
        Err(error) if error.code == StatusCode::NOT_FOUND => Ok(()),
        Err(error) => Err(error),
    }
}

fn remove_owner_references(metadata: &mut Map<String, Value>, uids: &[String]) {
    let Some(list) = metadata
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    list.retain(|reference| {
        let uid = reference.get("uid").and_then(Value::as_str).unwrap_or("");
        !uids.iter().any(|u| u == uid)
    });
    if list.is_empty() {
        metadata.remove("ownerReferences");
    }
}

fn unblock_owner_references(metadata: &mut Map<String, Value>) {
    let Some(list) = metadata
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for reference in list.iter_mut().filter_map(Value::as_object_mut) {
        if reference.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
            reference.insert("blockOwnerDeletion".into(), Value::Bool(false));
        }
    }
}

fn remove_finalizer(metadata: &mut Map<String, Value>, finalizer: &str) {
    let Some(list) = metadata.get_mut("finalizers").and_then(Value::as_array_mut) else {
        return;
    };
    list.retain(|f| f != finalizer);
    if list.is_empty() {
        metadata.remove("finalizers");
    }
}
