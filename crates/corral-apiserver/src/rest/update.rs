//! Updates and patches: one optimistic-concurrency attempt from the watch cache's copy or the store, the status
//! subresource, preserved server-owned metadata, finalizer checks.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use corral_store::Revision;
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};
use crate::object;
use crate::query::Query;
use crate::server::ApiState;

use super::*;

/// A function from the current object to the new one (a patch, an apply).
pub type Edit = Box<dyn Fn(&Value) -> Result<Value, ApiError> + Send + Sync>;

/// How an update request turns the current object into the new one.
pub enum Change {
    /// PUT: the body is the new object.
    Replace(Value),
    /// PATCH: a function of the current object.
    Patch(Edit),
    /// Server-side apply: like `Patch`, but the function also computes managedFields (see
    /// `apply/`), so no `Update` operation is recorded for it.
    Apply(Edit),
}

/// Applies an update or patch, retrying on a concurrent write unless the client set a
/// resourceVersion precondition. Returns the object as stored (or as it would be, with
/// dryRun).
///
/// The first attempt starts from the resource's watch cache when it holds the object (no
/// store read, no decode), as kube-apiserver's `GuaranteedUpdate` starts from its watch
/// cache's object. The cache may lag the store, so only a write conditional on the cached
/// modification revision that succeeds is answered from it; every other outcome (an error, a
/// write that changes nothing, a lost race) is computed again from the store, so a client
/// gets exactly the answer it would get without the cache.
pub async fn update(
    state: &ApiState,
    target: &Target,
    name: &str,
    query: &Query,
    change: Change,
) -> Result<Response, ApiError> {
    let key = target.key(name);
    // A PUT names the revision it expects: a cached object of another revision would only
    // fail, and be read again.
    let expected = match &change {
        Change::Replace(body) => {
            object::resource_version(body).and_then(|raw| object::parse_resource_version(raw).ok())
        }
        Change::Patch(_) | Change::Apply(_) => None,
    };
    let mut cached = cached_current(state, target, &key, query.dry_run)
        .filter(|current| expected.is_none_or(|expected| expected == current.mod_revision));
    for _attempt in 0..16 {
        let from_cache = cached.is_some();
        let base = read_base(state, target, &key, name, cached.take()).await?;
        match update_once(state, target, name, query, &change, &key, base, from_cache).await {
            Ok(Attempt::Done(response)) => return Ok(response),
            // Another write came first (or the cached object was not current): start over
            // from the store; a resourceVersion the client sent is checked against the new
            // state then.
            Ok(Attempt::Again) => continue,
            // Computed from a cached object, which may not be the current one: the store
            // decides (kube-apiserver's `GuaranteedUpdate` does the same).
            Err(_) if from_cache => continue,
            Err(error) => return Err(error),
        }
    }
    Err(ApiError::conflict(
        target.subject(name),
        "too many concurrent writes; try again",
    ))
}

/// After the store acknowledged `object` (admitted, in storage form) at `revision`: stamps
/// the revision, runs the resource's strategy, hands the object to the resource's watch cache (whose
/// feed then need not decode the write's event, and whose next update of it can start from
/// it) and returns the answer's JSON, in the request's version. When that version is the
/// stored form, the answer and the cache share one object and one serialization of it.
pub(super) async fn written(
    state: &ApiState,
    target: &Target,
    key: &str,
    revision: Revision,
    encoded: object::Encoded,
    mut object: Value,
) -> bytes::Bytes {
    object::set_resource_version(&mut object, revision);
    let object = Arc::new(object);
    // What `admitted_to_request_version` would change: nothing, in the storage version of
    // a resource that is not converted.
    let as_stored = target.version == target.resource.storage_version()
        && !crate::conversion::converts(&target.resource);
    let answer = if as_stored {
        encoded
            .with_resource_version(revision)
            .unwrap_or_else(|| to_json(&object))
    } else {
        let mut answer = Value::clone(&object);
        target.admitted_to_request_version(&mut answer);
        to_json(&answer)
    };
    if let Some(cacher) = state.hub.running(&target.resource.key_prefix()) {
        let current = crate::watch_cache::Current {
            mod_revision: revision,
            value: encoded.bytes,
            object: object.clone(),
            // Admitted in the storage version: pruned and defaulted as a read would.
            shaped: as_stored.then(|| target.resource.clone()),
        };
        let served = as_stored.then(|| crate::watch_cache::Served {
            resource: target.resource.clone(),
            version: target.version.clone(),
            json: answer.clone(),
        });
        cacher.record_write(key, current, served);
    }
    // After the record: the watch cache's feed may be waiting for it (`begin_write`).
    crate::strategy::after_write(state, target, &object);
    answer
}

/// Marks a write on `key` in flight for the resource's watch cache, if it runs (see
/// `watch_cache::Cacher::begin_write`); the write ends when the guard is dropped.
pub(super) fn in_flight(
    state: &ApiState,
    target: &Target,
    key: &str,
) -> Option<crate::watch_cache::InFlight> {
    state
        .hub
        .running(&target.resource.key_prefix())
        .map(|cacher| cacher.begin_write(key))
}

pub(super) fn to_json(value: &Value) -> bytes::Bytes {
    bytes::Bytes::from(crate::object::fields_text::to_vec(value))
}

/// A JSON answer already serialized.
pub(super) fn json_bytes_response(code: StatusCode, body: bytes::Bytes) -> Response {
    (
        code,
        [(http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The watch cache's copy of the object at `key`, if its resource's cacher runs and holds it;
/// never for a dry run, which writes nothing that would check the copy against the store.
pub(super) fn cached_current(
    state: &ApiState,
    target: &Target,
    key: &str,
    dry_run: bool,
) -> Option<crate::watch_cache::Current> {
    if dry_run {
        return None;
    }
    state
        .hub
        .running(&target.resource.key_prefix())?
        .current(key)
}

/// The state a write attempt starts from: `cached` if given, else read from the store.
pub(super) async fn read_base(
    state: &ApiState,
    target: &Target,
    key: &str,
    name: &str,
    cached: Option<crate::watch_cache::Current>,
) -> Result<Base, ApiError> {
    let (mod_revision, value, mut object, shaped) = match cached {
        Some(current) => (
            current.mod_revision,
            current.value,
            current.object,
            current.shaped,
        ),
        None => {
            let kv = state
                .store
                .get(key, None)
                .await?
                .ok_or_else(|| ApiError::not_found(target.subject(name)))?;
            let object = object::decode_stored(&kv)?;
            (kv.mod_revision, kv.value, Arc::new(object), None)
        }
    };
    // The cache's object is shared with watchers: copied only when the request's version
    // shows it differently.
    if !in_request_version(target, shaped.as_ref(), &object) {
        target.to_request_version(Arc::make_mut(&mut object));
    }
    Ok(Base {
        mod_revision,
        value,
        object,
    })
}

/// Whether `to_request_version` would leave `object` as it is: the storage version of a
/// resource that is not converted, its type already the request's, and no read-time pruning
/// or defaulting to do — the resource has none, or `object` already has that of the request's
/// definition (`shaped`, see `watch_cache::Current::shaped`).
pub(super) fn in_request_version(
    target: &Target,
    shaped: Option<&Arc<crate::registry::ResourceInfo>>,
    object: &Value,
) -> bool {
    let resource = &target.resource;
    target.version == resource.storage_version()
        && !crate::conversion::converts(resource)
        && (shaped.is_some_and(|shaped| Arc::ptr_eq(shaped, resource))
            || !crate::schema::changes_reads(resource))
        && object.get("apiVersion").and_then(Value::as_str)
            == Some(target.resource.api_version(&target.version).as_str())
        && object.get("kind").and_then(Value::as_str) == Some(target.resource.kind.as_str())
}

/// The state a write attempt starts from.
pub(super) struct Base {
    pub(super) mod_revision: Revision,
    /// The stored bytes.
    pub(super) value: bytes::Bytes,
    /// Decoded, in the request's version.
    pub(super) object: Arc<Value>,
}

/// How an update attempt ended, short of an error.
pub(super) enum Attempt {
    Done(Response),
    /// Start over from the store.
    Again,
}

/// One attempt of [`update`] from `base`; `from_cache`: `base` came from the watch cache and
/// may be stale, so only a successful conditional write is answered from it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn update_once(
    state: &ApiState,
    target: &Target,
    name: &str,
    query: &Query,
    change: &Change,
    key: &str,
    base: Base,
    from_cache: bool,
) -> Result<Attempt, ApiError> {
    // `/approval` (CertificateSigningRequests) writes conditions in the status, as `/status`.
    let status_only = matches!(target.subresource.as_deref(), Some("status" | "approval"));
    let Base {
        mod_revision,
        value: stored,
        object: current,
    } = base;
    let mut new = match change {
        Change::Replace(body) => body.clone(),
        Change::Patch(apply) | Change::Apply(apply) => apply(&current)?,
    };
    if !new.is_object() {
        return Err(ApiError::bad_request("the result must be a JSON object"));
    }
    check_type(target, &mut new)?;
    check_namespace(state, target, &mut new, false).await?;
    match object::name(&new) {
        None => {
            object::metadata_mut(&mut new).insert("name".into(), json!(name));
        }
        Some(given) if given == name => {}
        Some(given) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({given}) does not match the name on the URL ({name})"
            )));
        }
    }
    let precondition = object::resource_version(&new).map(str::to_string);
    if let Some(expected) = &precondition
        && object::parse_resource_version(expected)? != mod_revision
    {
        return Err(ApiError::stale(target.subject(name)));
    }
    if let Some(uid) = object::uid(&new)
        && !uid.is_empty()
        && Some(uid) != object::uid(&current)
    {
        return Err(ApiError::conflict(
            target.subject(name),
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                object::uid(&current).unwrap_or("")
            ),
        ));
    }
    let mut new = if status_only {
        status_update(&current, new)
    } else {
        main_update(target, &current, new)
    };
    preserve_server_metadata(target, &current, &mut new);
    crate::strategy::prepare_update(target, &current, &mut new);
    let warnings = crate::admission::admit(
        state,
        &crate::admission::Request {
            operation: crate::admission::Operation::Update,
            target,
            query,
            old: Some(&current),
        },
        &mut new,
    )
    .await?;
    let operation = match change {
        Change::Apply(_) => crate::apply::Operation::Apply,
        Change::Replace(_) | Change::Patch(_) => crate::apply::Operation::Update,
    };
    crate::apply::track(target, query, Some(&current), &mut new, operation);
    let respond = |object: &Value| {
        crate::admission::with_warnings(json_response(StatusCode::OK, object), &warnings)
    };
    validate_metadata(target, &new)?;
    check_finalizers(target, &current, &new)?;
    crate::strategy::validate(state, target, &new, Some(&current))?;

    // The last finalizer of a deleted object is gone: delete it for real.
    if object::deletion_timestamp(&new).is_some()
        && crate::strategy::finalizers_on_delete(target, &new).is_empty()
    {
        if query.dry_run {
            return Ok(Attempt::Done(respond(&new)));
        }
        return match state.store.delete(key, mod_revision).await {
            Ok((revision, _)) => {
                object::set_resource_version(&mut new, revision);
                crate::strategy::after_delete(state, target, &new);
                Ok(Attempt::Done(respond(&new)))
            }
            Err(corral_store::Error::Conflict { .. }) => Ok(Attempt::Again),
            Err(corral_store::Error::NotFound { .. }) => {
                Err(ApiError::not_found(target.subject(name)))
            }
            Err(other) => Err(other.into()),
        };
    }

    let encoded = object::Encoded::new(&new);
    // A value stored with an older encryption key is rewritten even when unchanged.
    let stale = (state.config.encryption.as_ref())
        .is_some_and(|encryption| encryption.is_stale(key, mod_revision));
    if encoded.bytes == stored && !stale {
        if from_cache {
            // Whether nothing changed is known only against the current object.
            return Ok(Attempt::Again);
        }
        // Nothing changed: no new revision, no watch event.
        return Ok(Attempt::Done(respond(&current)));
    }
    if query.dry_run {
        // As in kube-apiserver, a dry-run update answers with the stored resourceVersion
        // (`kubectl diff --server-side` shows no resourceVersion change).
        object::set_resource_version(&mut new, mod_revision);
        target.admitted_to_request_version(&mut new);
        return Ok(Attempt::Done(respond(&new)));
    }
    let _in_flight = in_flight(state, target, key);
    match state
        .store
        .update(key, encoded.bytes.clone(), mod_revision)
        .await
    {
        Ok(revision) => {
            let answer = written(state, target, key, revision, encoded, new).await;
            Ok(Attempt::Done(crate::admission::with_warnings(
                json_bytes_response(StatusCode::OK, answer),
                &warnings,
            )))
        }
        Err(corral_store::Error::Conflict { .. }) => Ok(Attempt::Again),
        Err(corral_store::Error::NotFound { .. }) => Err(ApiError::not_found(target.subject(name))),
        Err(other) => Err(other.into()),
    }
}

/// A write to the main resource: with a status subresource, `status` is kept as it is.
pub(super) fn main_update(target: &Target, current: &Value, mut new: Value) -> Value {
    if target.resource.status_subresource {
        let map = new.as_object_mut().unwrap();
        match current.get("status") {
            Some(status) => {
                map.insert("status".into(), status.clone());
            }
            None => {
                map.remove("status");
            }
        }
    }
    new
}

/// A write to `/status`: only `status` changes (kube-apiserver's status strategy discards
/// everything else for custom resources).
///
/// Built from `new`, which is mostly `current` already (a patch of it, or a PUT of what was
/// read): only what differs from `current` is copied from it, not the whole object.
pub(super) fn status_update(current: &Value, mut new: Value) -> Value {
    let (Some(current_map), Some(new_map)) = (current.as_object(), new.as_object_mut()) else {
        return status_update_by_copy(current, new);
    };
    let status = new_map.remove("status");
    // managedFields track the status write itself (server-side apply computes them in `new`).
    let managed_fields = new_map
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|metadata| metadata.remove("managedFields"));
    new_map.retain(|key, _| key != "status" && current_map.contains_key(key));
    for (key, value) in current_map {
        match key.as_str() {
            "status" => {}
            "metadata" => {
                let same = match (
                    value.as_object(),
                    new_map.get(key).and_then(Value::as_object),
                ) {
                    (Some(current), Some(new)) => same_but_managed_fields(current, new),
                    _ => false,
                };
                if !same {
                    let mut metadata = value.clone();
                    if let Some(map) = metadata.as_object_mut() {
                        map.remove("managedFields");
                    }
                    new_map.insert(key.clone(), metadata);
                }
            }
            _ => {
                if new_map.get(key) != Some(value) {
                    new_map.insert(key.clone(), value.clone());
                }
            }
        }
    }
    if let Some(status) = status {
        new_map.insert("status".into(), status);
    }
    let metadata = object::metadata_mut(&mut new);
    match managed_fields {
        Some(managed_fields) => {
            metadata.insert("managedFields".into(), managed_fields);
        }
        None => {
            metadata.remove("managedFields");
        }
    }
    new
}

/// Whether two metadata maps are equal, `current` without its managedFields (which `new`
/// no longer has).
pub(super) fn same_but_managed_fields(
    current: &Map<String, Value>,
    new: &Map<String, Value>,
) -> bool {
    let others = current.keys().filter(|key| *key != "managedFields").count();
    others == new.len()
        && current
            .iter()
            .filter(|(key, _)| *key != "managedFields")
            .all(|(key, value)| new.get(key) == Some(value))
}

/// [`status_update`] of objects that are not JSON objects: `current` with `new`'s status
/// and managedFields.
pub(super) fn status_update_by_copy(current: &Value, new: Value) -> Value {
    let mut result = current.clone();
    let Some(map) = result.as_object_mut() else {
        return result;
    };
    match new.get("status") {
        Some(status) => {
            map.insert("status".into(), status.clone());
        }
        None => {
            map.remove("status");
        }
    }
    let metadata = object::metadata_mut(&mut result);
    match object::metadata(&new).and_then(|m| m.get("managedFields")) {
        Some(managed_fields) => {
            metadata.insert("managedFields".into(), managed_fields.clone());
        }
        None => {
            metadata.remove("managedFields");
        }
    }
    result
}

/// Keeps the metadata only the server may set, and bumps `generation` when the spec changed.
pub(super) fn preserve_server_metadata(target: &Target, current: &Value, new: &mut Value) {
    let empty = Map::new();
    let current_meta = object::metadata(current).unwrap_or(&empty);
    let spec_changed = !object::same_spec_part(current, new);
    let metadata = object::metadata_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match current_meta.get(field) {
            Some(value) => {
                metadata.insert(field.into(), value.clone());
            }
            None => {
                metadata.remove(field);
            }
        }
    }
    metadata.remove("resourceVersion");
    metadata.remove("selfLink");
    if target.resource.tracks_generation && spec_changed {
        let generation = current_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        metadata.insert("generation".into(), json!(generation + 1));
    }
}

pub(super) fn check_finalizers(
    target: &Target,
    current: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if object::deletion_timestamp(current).is_none() {
        return Ok(());
    }
    let before = object::finalizers(current);
    let added: Vec<_> = object::finalizers(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let name = object::name(current).unwrap_or("");
    Err(ApiError::invalid(
        target.subject(name),
        &target.resource.kind,
        vec![Cause {
            reason: "FieldValueForbidden".into(),
            message: format!(
                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
            ),
            field: "metadata.finalizers".into(),
        }],
    ))
}
