//! Deletes: options and preconditions, finalizers and graceful propagation, delete-collection.

use std::sync::Arc;

use axum::response::Response;
use http::StatusCode;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::object;
use crate::query::Query;
use crate::server::ApiState;

use super::*;

/// `DeleteOptions` from a DELETE body and the query string.
#[derive(Default)]
pub struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
    /// What happens to the dependents (see `gc.rs`); `None` keeps what the object asks for.
    pub propagation_policy: Option<crate::gc::PropagationPolicy>,
    /// The deprecated form of the orphan policy.
    pub orphan_dependents: Option<bool>,
}

impl DeleteOptions {
    pub fn parse(
        query: &Query,
        content_type: &str,
        body: &[u8],
    ) -> Result<DeleteOptions, ApiError> {
        let mut options = DeleteOptions {
            dry_run: query.dry_run,
            ..Default::default()
        };
        // As in kube-apiserver, the query string counts only when there is no body.
        if body.iter().all(u8::is_ascii_whitespace) {
            let policy = query
                .propagation_policy
                .as_deref()
                .filter(|p| !p.is_empty());
            options.propagation_policy = crate::gc::parse_policy(policy, query.orphan_dependents)?;
            options.orphan_dependents = query.orphan_dependents;
            return Ok(options);
        }
        let value = crate::body::decode_object(content_type, body)?;
        if !value.is_object() {
            return Err(ApiError::bad_request("DeleteOptions must be a JSON object"));
        }
        if let Some(preconditions) = value.get("preconditions").and_then(Value::as_object) {
            options.uid = preconditions
                .get("uid")
                .and_then(Value::as_str)
                .map(str::to_string);
            options.resource_version = preconditions
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(dry_run) = value.get("dryRun").and_then(Value::as_array) {
            options.dry_run |= dry_run.iter().any(|v| v == "All");
        }
        let policy = value.get("propagationPolicy").and_then(Value::as_str);
        let orphan_dependents = value.get("orphanDependents").and_then(Value::as_bool);
        options.propagation_policy = crate::gc::parse_policy(policy, orphan_dependents)?;
        options.orphan_dependents = orphan_dependents;
        Ok(options)
    }
}

pub enum Deleted {
    /// The object is gone; this is its last state.
    Gone(Value),
    /// The object has finalizers: it is marked for deletion and still exists.
    Marked(Value),
}

pub async fn delete(
    state: &ApiState,
    target: &Target,
    name: &str,
    options: &DeleteOptions,
) -> Result<Deleted, ApiError> {
    let key = target.key(name);
    // As in `update`: the first attempt starts from the watch cache's copy, and only a
    // conditional write that succeeds is answered from it.
    let expected = options.resource_version.as_deref();
    let mut cached = cached_current(state, target, &key, options.dry_run).filter(|current| {
        expected
            .is_none_or(|rv| object::parse_resource_version(rv).ok() == Some(current.mod_revision))
    });
    for _attempt in 0..16 {
        let from_cache = cached.is_some();
        let base = read_base(state, target, &key, name, cached.take()).await?;
        match delete_once(state, target, name, options, &key, base, from_cache).await {
            Ok(Some(deleted)) => return Ok(deleted),
            // Another write came first, or the copy was not current: start over from the store.
            Ok(None) => continue,
            Err(_) if from_cache => continue,
            Err(error) => return Err(error),
        }
    }
    Err(ApiError::conflict(
        target.subject(name),
        "too many concurrent writes; try again",
    ))
}

/// One attempt of [`delete`] from `base`; `None`: start over from the store. `from_cache`:
/// `base` is the watch cache's copy, so only a successful conditional write is answered.
pub(super) async fn delete_once(
    state: &ApiState,
    target: &Target,
    name: &str,
    options: &DeleteOptions,
    key: &str,
    base: Base,
    from_cache: bool,
) -> Result<Option<Deleted>, ApiError> {
    let Base {
        mod_revision,
        object: current,
        ..
    } = base;
    let mut current = Arc::unwrap_or_clone(current);
    if let Some(uid) = &options.uid
        && Some(uid.as_str()) != object::uid(&current)
    {
        return Err(ApiError::conflict(
            target.subject(name),
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                object::uid(&current).unwrap_or("")
            ),
        ));
    }
    if let Some(rv) = &options.resource_version
        && object::parse_resource_version(rv)? != mod_revision
    {
        return Err(ApiError::conflict(
            target.subject(name),
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {mod_revision}"
            ),
        ));
    }
    crate::webhook::admit_delete(state, target, name, &current, options).await?;
    // The garbage collector's finalizers follow the propagation policy, also on an
    // object already being deleted.
    let collector_finalizers = crate::gc::finalizers_after_delete(
        &object::finalizers(&current),
        options.propagation_policy,
        options.orphan_dependents,
    );
    let mut marked = current.clone();
    if let Some(list) = &collector_finalizers {
        let metadata = object::metadata_mut(&mut marked);
        if list.is_empty() {
            metadata.remove("finalizers");
        } else {
            metadata.insert("finalizers".into(), json!(list));
        }
    }
    // A write conditional on the client's resourceVersion lost to another one: stale, unless
    // the copy it started from was the cache's, which the store decides about.
    let lost_race = || match from_cache {
        true => Ok(None),
        false => Err(ApiError::stale(target.subject(name))),
    };
    let finalizers = crate::strategy::finalizers_on_delete(target, &marked);
    if !finalizers.is_empty() {
        let already_deleting = object::deletion_timestamp(&current).is_some();
        if already_deleting && collector_finalizers.is_none() {
            // Nothing to write: the answer is only as good as the copy it comes from.
            return Ok((!from_cache).then_some(Deleted::Marked(current)));
        }
        if !already_deleting {
            let metadata = object::metadata_mut(&mut marked);
            metadata.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
            metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
            if target.resource.tracks_generation {
                let generation = object::generation(&current);
                metadata.insert("generation".into(), json!(generation + 1));
            }
        }
        crate::strategy::prepare_delete(target, &mut marked);
        if options.dry_run {
            return Ok(Some(Deleted::Marked(marked)));
        }
        return match state
            .store
            .update(key, object::encode_for_storage(&marked), mod_revision)
            .await
        {
            Ok(revision) => {
                object::set_resource_version(&mut marked, revision);
                crate::strategy::after_write(state, target, &marked);
                Ok(Some(Deleted::Marked(marked)))
            }
            Err(corral_store::Error::Conflict { .. }) if options.resource_version.is_none() => {
                Ok(None)
            }
            Err(corral_store::Error::Conflict { .. }) => lost_race(),
            Err(corral_store::Error::NotFound { .. }) => {
                Err(ApiError::not_found(target.subject(name)))
            }
            Err(other) => Err(other.into()),
        };
    }
    if options.dry_run {
        return Ok(Some(Deleted::Gone(current)));
    }
    match state.store.delete(key, mod_revision).await {
        Ok((revision, _)) => {
            object::set_resource_version(&mut current, revision);
            crate::strategy::after_delete(state, target, &current);
            Ok(Some(Deleted::Gone(current)))
        }
        Err(corral_store::Error::Conflict { .. }) if options.resource_version.is_none() => Ok(None),
        Err(corral_store::Error::Conflict { .. }) => lost_race(),
        Err(corral_store::Error::NotFound { .. }) => Err(ApiError::not_found(target.subject(name))),
        Err(other) => Err(other.into()),
    }
}

/// The answer to a DELETE: the object while it is still there (finalizers), or a success
/// `Status` naming what was deleted. Like kube-apiserver, a kept object is 202 Accepted only
/// when the client set `orphanDependents: false`.
pub fn delete_response(target: &Target, deleted: Deleted, options: &DeleteOptions) -> Response {
    match deleted {
        Deleted::Marked(object) if options.orphan_dependents == Some(false) => {
            json_response(StatusCode::ACCEPTED, &object)
        }
        Deleted::Marked(object) => json_response(StatusCode::OK, &object),
        Deleted::Gone(object) if target.resource.plural == "namespaces" => {
            json_response(StatusCode::OK, &object)
        }
        Deleted::Gone(object) => {
            let name = object::name(&object).unwrap_or("");
            let status = json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {
                    "name": name,
                    "group": target.resource.group,
                    "kind": target.resource.plural,
                    "uid": object::uid(&object).unwrap_or(""),
                },
            });
            json_response(StatusCode::OK, &status)
        }
    }
}

/// DELETE on a collection: deletes every object the selectors match and answers with the
/// list of what was deleted or marked.
pub async fn delete_collection(
    state: &ApiState,
    target: &Target,
    query: &Query,
    options: &DeleteOptions,
) -> Result<Value, ApiError> {
    let mut list_query = query.clone();
    list_query.limit = None;
    list_query.continue_token = None;
    let listed = list(state, target, &list_query).await?;
    let mut items = Vec::new();
    for item in listed["items"].as_array().cloned().unwrap_or_default() {
        let Some(name) = object::name(&item) else {
            continue;
        };
        let mut item_target = target.clone();
        if target.resource.namespaced {
            item_target.namespace = object::namespace(&item).map(str::to_string);
        }
        match delete(state, &item_target, name, options).await {
            Ok(Deleted::Gone(object)) | Ok(Deleted::Marked(object)) => items.push(object),
            // Deleted by someone else in the meantime: that is what was asked.
            Err(error) if error.code == StatusCode::NOT_FOUND => {}
            Err(error) => return Err(error),
        }
    }
    Ok(json!({
        "kind": target.resource.list_kind,
        "apiVersion": target.resource.api_version(&target.version),
        "metadata": {"resourceVersion": listed["metadata"]["resourceVersion"]},
        "items": items,
    }))
}
