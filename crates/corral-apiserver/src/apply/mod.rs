//! Server-side apply and `metadata.managedFields`, with the semantics of kube-apiserver's
//! field manager (k8s.io/apimachinery `managedfields`) over structured-merge-diff.
//!
//! Every write records who owns which fields. A create, PUT or non-apply PATCH is an
//! `Update` operation of its field manager (`?fieldManager=`, else the User-Agent's program
//! name, else `unknown`): it takes ownership of every field it changed, away from everyone
//! else. An apply (`PATCH` with `application/apply-patch+yaml`) is an `Apply` operation: its
//! manager owns exactly the fields of its configuration, fields it applied before and no
//! longer applies are removed unless someone else owns them, and changing a value another
//! manager owns is a conflict (409) unless `force=true`, which takes the field over. An
//! apply to an absent object creates it.
//!
//! The hooks called by `rest.rs` are [`track`] (every create and update, after admission) and
//! [`patch`] (apply requests, which use `rest::update` with [`crate::rest::Change::Apply`]
//! and `rest::create_applied`). `schema.rs` reads list and map semantics from a CRD's schema,
//! `merge.rs` holds the typed merge, comparison and pruning, `managed.rs` the ownership
//! bookkeeping, `fieldset.rs` the field sets and their `FieldsV1` wire form.
//!
//! Differences from kube-apiserver: fields are tracked in the shape of the request's
//! version without conversion between the entries of different versions (CRD versions here
//! only differ in `apiVersion`); fields a schema does not declare are tracked as untyped
//! instead of refused; an apply that empties a map removes it instead of leaving `null`; a
//! configuration that does not fit the schema is a 400 rather than a 500.

mod fields_v1;
mod fieldset;
mod managed;
mod merge;
mod schema;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use axum::response::Response;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Value, json};

use crate::error::{ApiError, Cause, Subject};
use crate::object;
use crate::query::Query;
use crate::registry::ResourceInfo;
use crate::rest::{self, Change, Target};
use crate::server::ApiState;

use fieldset::path_string;
pub use managed::Operation;
use managed::{ApplyError, Context, Managed, ManagerId};
use schema::Schema;

/// The content type of apply patches.
pub const APPLY_CONTENT_TYPE: &str = "application/apply-patch+yaml";

/// kube-apiserver's `FieldManagerMaxLength`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The manager of writes the server makes itself (initial namespaces, namespace cleanup).
const INTERNAL_MANAGER: &str = "corral-apiserver";

/// Checks `fieldManager` and `force` of a create, update or patch like kube-apiserver's
/// Create/Update/PatchOptions validation, and names the manager of a non-apply write after
/// the User-Agent's program name when the request names none (`kubectl/v1.32.0 (...)` →
/// `kubectl`).
pub fn request_options(
    method: &Method,
    headers: &HeaderMap,
    mut query: Query,
) -> Result<Query, ApiError> {
    let options = match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        _ => return Ok(query),
    };
    let apply =
        *method == Method::PATCH && crate::body::content_type(headers) == APPLY_CONTENT_TYPE;
    let manager = query.field_manager.clone().unwrap_or_default();
    let mut causes = Vec::new();
    if apply && manager.is_empty() {
        causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: is required for apply patch".into(),
            field: "fieldManager".into(),
        });
    }
    if *method == Method::PATCH && !apply && query.force.is_some() {
        causes.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: may not be specified for non-apply patch".into(),
            field: "force".into(),
        });
    }
    if manager.len() > FIELD_MANAGER_MAX_LENGTH {
        causes.push(Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
            field: "fieldManager".into(),
        });
    }
    if let Some((offset, _)) = manager.char_indices().find(|(_, c)| !is_printable(*c)) {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {manager:?}: invalid characters at offset {offset}"),
            field: "fieldManager".into(),
        });
    }
    if !causes.is_empty() {
        let mut error = ApiError::invalid(
            Subject {
                resource: "",
                group: "meta.k8s.io",
                name: "",
            },
            &format!("{options}.meta.k8s.io"),
            causes,
        );
        error.kind = Some(options.to_string());
        return Err(error);
    }
    if !apply && manager.is_empty() {
        let user_agent = headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        query.field_manager = Some(manager_from_user_agent(user_agent));
    }
    Ok(query)
}

/// Go's `unicode.IsPrint`, closely enough: no control characters, no whitespace but space.
fn is_printable(c: char) -> bool {
    c == ' ' || !(c.is_control() || c.is_whitespace())
}

/// The program name of a User-Agent: what precedes the first `/`, printable characters
/// only, at most 128 bytes.
fn manager_from_user_agent(user_agent: &str) -> String {
    let program = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in program.chars().filter(|c| is_printable(*c)) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Records the field ownership of a create (`current` is `None`) or update, after admission
/// and before the write: for an `Update` operation, what the request's manager changed; for
/// both, a write that changes nothing but managedFields timestamps keeps the old timestamps,
/// so that it stays a no-op (no new resourceVersion, no watch event). `new` is in the
/// storage shape, `current` in the request's.
///
pub fn track(
    target: &Target,
    query: &Query,
    current: Option<&Value>,
    new: &mut Value,
    operation: Operation,
) {
    // What the request brought in tree form is held as text from here on, as stored
    // objects hold it (see `object::fields_text`).
    crate::object::fields_text::capture(new);
    // Objects that differ in more than managedFields are no no-op: their timestamps move.
    let differ = operation == Operation::Update && record_update(target, query, current, new);
    if let Some(current) = current
        && !differ
    {
        keep_timestamps_of_no_op(target, current, new);
    }
}

/// Where an update's ownership starts from.
enum Base {
    /// The current object's managedFields (none for a create).
    Current,
    /// Ownership the request set.
    Requested(Managed),
}

/// Records what an `Update` operation changed; returns whether `current` and `new` differ in
/// more than managedFields (`false` when not compared).
fn record_update(target: &Target, query: &Query, current: Option<&Value>, new: &mut Value) -> bool {
    let resource = &target.resource;
    let api_version = resource.api_version(&target.version);
    let subresource = target.subresource.as_deref();
    let manager = match query.field_manager.as_deref() {
        None => INTERNAL_MANAGER,
        Some("") => "unknown",
        Some(manager) => manager,
    };
    fn current_list<'a>(current: &Option<&'a Value>) -> Option<&'a Value> {
        current.and_then(managed_fields)
    }
    // The request's managedFields are used when they are valid and non-empty (clients may
    // edit ownership directly); `[]` or `[{}]` resets ownership; a subresource never
    // changes it. A request that sends the current ones back (a PUT of what was read, any
    // merge patch) starts from the current ones.
    let sends_current = current.is_some_and(|_| {
        new_managed_fields(new).is_some_and(|requested| current_list(&current) == Some(requested))
    });
    let base = match (subresource, new_managed_fields(new)) {
        (Some(_), _) | (None, None) => Base::Current,
        (None, Some(requested)) if is_reset(requested) => Base::Requested(Managed::default()),
        (None, Some(_)) if sends_current => Base::Current,
        (None, Some(requested)) => match Managed::decode(Some(requested)) {
            Ok(managed) if !managed.is_empty() => Base::Requested(managed),
            _ => Base::Current,
        },
    };
    let untracked = match &base {
        Base::Current => {
            matches!(current_list(&current), None | Some(Value::Null))
                || current_list(&current)
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
        }
        Base::Requested(managed) => managed.is_empty(),
    };
    if untracked && current.is_some() {
        // Objects nobody tracks yet (written before this server tracked ownership) start
        // being tracked at their first apply, as in kube-apiserver.
        object::metadata_mut(new).remove("managedFields");
        return false;
    }

    // The request's copy of the current list (a merge patch's or a status write's) becomes
    // the new list, updated in place, instead of being dropped for a copy of the current one.
    let sent_list = match sends_current && matches!(base, Base::Current) {
        true => object::metadata_mut(new).remove("managedFields"),
        false => None,
    };

    let reset = ResetFields::of(resource, subresource);
    let keep = |field: &str| reset.keeps(field);
    let now = object::now_rfc3339();
    let cx = Context {
        schema: Schema::for_resource(resource, &target.version),
        keep: &keep,
        api_version: &api_version,
        now: &now,
    };
    let writer = ManagerId::new(manager, Operation::Update, &api_version, subresource);
    if current.is_none() && matches!(base, Base::Current) {
        // A create that brings no managedFields: its writer owns what it sets, written
        // straight in `FieldsV1` form (equal to comparing against the empty object,
        // recording and encoding, which remains the way for anything else).
        let list = as_compared(new, resource, &api_version, |new_view| {
            managed::record_create(new_view, &["apiVersion", "kind"], &cx, &writer)
        });
        if let Some(list) = list {
            let metadata = object::metadata_mut(new);
            if list.as_array().is_some_and(Vec::is_empty) {
                metadata.remove("managedFields");
            } else {
                metadata.insert("managedFields".into(), list);
            }
            return true;
        }
    }
    let changes = as_compared(new, resource, &api_version, |new_view| {
        let Some(current) = current else {
            let empty = empty_object(resource, &api_version);
            return managed::UpdateChanges::between(&empty, new_view, &cx);
        };
        // `current` as `without_server_fields` shows it, read in place.
        let hidden_metadata = ["resourceVersion", "managedFields"];
        match merge::compare_without(
            current,
            new_view,
            cx.schema,
            &["apiVersion", "kind"],
            &hidden_metadata,
            cx.keep,
        ) {
            Some(comparison) => managed::UpdateChanges::of(comparison, &cx),
            None => {
                let old_view = without_server_fields(current.clone(), resource, &api_version);
                managed::UpdateChanges::between(&old_view, new_view, &cx)
            }
        }
    });
    let differ = changes.differ;
    let managed = match base {
        Base::Requested(managed) => managed,
        Base::Current => {
            let list = current_list(&current);
            let entries = match (sent_list, list) {
                (Some(Value::Array(sent)), _) => Some(sent),
                (_, Some(Value::Array(entries))) => Some(entries.clone()),
                _ => None,
            };
            if let Some(entries) = entries
                && let Some(result) = managed::record_changes_in_place(
                    entries,
                    &changes.changed,
                    &changes.removed,
                    &cx,
                    &writer,
                )
            {
                let metadata = object::metadata_mut(new);
                if result.as_array().is_some_and(Vec::is_empty) {
                    metadata.remove("managedFields");
                } else {
                    metadata.insert("managedFields".into(), result);
                }
                return differ;
            }
            let managed = decode_or_empty(list);
            if managed.is_empty() && current.is_some() {
                object::metadata_mut(new).remove("managedFields");
                return differ;
            }
            managed
        }
    };
    let mut managed =
        managed::record_changes(managed, changes.changed, &changes.removed, &cx, &writer);
    managed.cap_update_managers(managed::MAX_UPDATE_MANAGERS);
    set_managed_fields(new, &managed);
    differ
}

/// kube-apiserver's `IgnoreManagedFieldsTimestampsTransformer`: when the only change of an
/// update is in managedFields timestamps, the old timestamps are kept.
fn keep_timestamps_of_no_op(target: &Target, current: &Value, new: &mut Value) {
    let (Some(Value::Array(old_entries)), Some(Value::Array(new_entries))) =
        (managed_fields(current), new_managed_fields(new))
    else {
        return;
    };
    if old_entries.len() != new_entries.len() || new_entries.is_empty() {
        return;
    }
    // Equal but for `time`, compared in place.
    let same_but_time = |old: &Value, new: &Value| match (old.as_object(), new.as_object()) {
        (Some(old), Some(new)) => {
            let others = |map: &serde_json::Map<String, Value>| {
                map.keys().filter(|key| *key != "time").count()
            };
            others(old) == others(new)
                && old
                    .iter()
                    .filter(|(key, _)| *key != "time")
                    .all(|(key, value)| new.get(key) == Some(value))
        }
        _ => old == new,
    };
    let times_differ = old_entries
        .iter()
        .zip(new_entries)
        .any(|(old, new)| old.get("time") != new.get("time"));
    let same_otherwise = old_entries
        .iter()
        .zip(new_entries)
        .all(|(old, new)| same_but_time(old, new));
    if !times_differ || !same_otherwise {
        return;
    }
    // `current` is in the request's shape with its resourceVersion; `new` is stored as is.
    let mut old_stored = current.clone();
    crate::conversion::to_storage(&target.resource, &mut old_stored);
    let (api_version, kind) = crate::conversion::storage_type(&target.resource);
    if let Some(map) = old_stored.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    let strip = |object: &Value| {
        let mut object = object.clone();
        let metadata = object::metadata_mut(&mut object);
        metadata.remove("managedFields");
        metadata.remove("resourceVersion");
        object
    };
    if strip(&old_stored) == strip(new) {
        let old_entries = Value::Array(old_entries.clone());
        object::metadata_mut(new).insert("managedFields".into(), old_entries);
    }
}

/// Answers an apply patch: creates the object when it is absent (201), else merges the
/// configuration into it (200). Expects `request_options` to have checked the options.
pub async fn patch(
    state: &ApiState,
    target: &Target,
    name: &str,
    query: &Query,
    body: &[u8],
) -> Result<Response, ApiError> {
    let config = Arc::new(decode_config(target, body)?);
    let manager = query.field_manager.clone().unwrap_or_default();
    let applier = ManagerId::new(
        &manager,
        Operation::Apply,
        "",
        target.subresource.as_deref(),
    );
    let force = query.force.unwrap_or(false);
    for _attempt in 0..8 {
        let change = {
            let resource = target.resource.clone();
            let version = target.version.clone();
            let subresource = target.subresource.clone();
            let config = config.clone();
            let applier = applier.clone();
            Change::Apply(Box::new(move |current: &Value| {
                apply_to(
                    &resource,
                    &version,
                    subresource.as_deref(),
                    Some(current),
                    &config,
                    &applier,
                    force,
                )
            }))
        };
        match rest::update(state, target, name, query, change).await {
            // A subresource is never created by an apply.
            Err(error) if is_absent(&error, name) && target.subresource.is_none() => {}
            result => return result,
        }
        let object = new_object(target, name, &config, &applier, force)?;
        match rest::create_applied(state, target, query, object).await {
            // Created concurrently: merge into it instead.
            Err(error) if error.reason == "AlreadyExists" => continue,
            result => return result,
        }
    }
    Err(ApiError::conflict(
        target.subject(name),
        "too many concurrent writes; try again",
    ))
}

fn is_absent(error: &ApiError, name: &str) -> bool {
    error.code == StatusCode::NOT_FOUND && error.name.as_deref() == Some(name)
}

/// The applied configuration: YAML or JSON, of the resource's type, without managedFields.
fn decode_config(target: &Target, body: &[u8]) -> Result<Value, ApiError> {
    let config = crate::body::decode_yaml(body)?;
    if !config.is_object() {
        return Err(ApiError::bad_request(
            "error decoding patch: an apply configuration must be an object",
        ));
    }
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != target.resource.api_version(&target.version) || kind != target.resource.kind {
        let group_version = if api_version.contains('/') {
            api_version.to_string()
        } else {
            format!("/{api_version}")
        };
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group_version}, Kind={kind}"
        )));
    }
    if managed_fields(&config).is_some_and(|m| !m.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(config)
}

/// The object an apply creates, checked like kube-apiserver checks a patched object.
fn new_object(
    target: &Target,
    name: &str,
    config: &Value,
    applier: &ManagerId,
    force: bool,
) -> Result<Value, ApiError> {
    let object = apply_to(
        &target.resource,
        &target.version,
        target.subresource.as_deref(),
        None,
        config,
        applier,
        force,
    )?;
    match object::name(&object) {
        None => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name} based on URL) was undeterminable: name must be provided"
            )));
        }
        Some(given) if given != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({given}) does not match the name on the URL ({name})"
            )));
        }
        Some(_) => {}
    }
    if let Some(uid) = object::uid(&object).filter(|uid| !uid.is_empty()) {
        return Err(ApiError::conflict(
            target.subject(name),
            &format!(
                "uid mismatch: the provided object specified uid {uid}, and no existing object was found"
            ),
        ));
    }
    Ok(object)
}

/// The result of applying `config` to `current` (an absent object when `None`), with its
/// managedFields.
fn apply_to(
    resource: &ResourceInfo,
    version: &str,
    subresource: Option<&str>,
    current: Option<&Value>,
    config: &Value,
    applier: &ManagerId,
    force: bool,
) -> Result<Value, ApiError> {
    let api_version = resource.api_version(version);
    let empty = empty_object(resource, &api_version);
    let live = match current {
        Some(current) => without_server_fields(current.clone(), resource, &api_version),
        None => empty.clone(),
    };
    let mut managed = decode_or_empty(current.and_then(managed_fields));
    let reset = ResetFields::of(resource, subresource);
    let keep = |field: &str| reset.keeps(field);
    let now = object::now_rfc3339();
    let cx = Context {
        schema: Schema::for_resource(resource, version),
        keep: &keep,
        api_version: &api_version,
        now: &now,
    };
    if managed.is_empty() && current.is_some() {
        // An object nobody tracked: what it holds belongs to "before-first-apply", so that
        // the first apply conflicts with values it would change.
        let before = ManagerId::new(
            "before-first-apply",
            Operation::Update,
            &api_version,
            subresource,
        );
        managed = managed::record_update(managed, &empty, &live, &cx, &before);
    }
    let applied = match managed::apply(&live, config, managed.clone(), &cx, applier, force) {
        Err(ApplyError::Conflicts(conflicts)) if applier.manager == "kubectl" => {
            // kubectl moving from client-side to server-side apply may take over the fields
            // its last-applied-configuration still describes.
            let allowed = managed::last_applied_fields(&live, cx.schema, &api_version);
            let remaining: Vec<_> = match &allowed {
                Some(allowed) => conflicts
                    .iter()
                    .filter(|(_, path)| !allowed.has(path))
                    .cloned()
                    .collect(),
                None => conflicts.clone(),
            };
            if remaining.is_empty() {
                managed::apply(&live, config, managed, &cx, applier, true)
            } else {
                Err(ApplyError::Conflicts(remaining))
            }
        }
        other => other,
    };
    let (mut merged, mut managed) = match applied {
        Ok(result) => result,
        Err(ApplyError::Conflicts(conflicts)) => return Err(conflict_error(&conflicts)),
        Err(ApplyError::Invalid(error)) => {
            let name = object::name(config).unwrap_or("");
            let namespace = object::namespace(config).unwrap_or("");
            return Err(ApiError::bad_request(format!(
                "failed to create typed patch object ({namespace}/{name}; {api_version}, Kind={}): {error}",
                resource.kind
            )));
        }
    };
    if applier.manager == "kubectl" {
        sync_last_applied(&mut merged, config);
    }
    managed.cap_update_managers(managed::MAX_UPDATE_MANAGERS);
    set_managed_fields(&mut merged, &managed);
    Ok(merged)
}

/// kubectl's server-side apply keeps an existing last-applied-configuration annotation in
/// step with what it applies, so that a later client-side apply computes the right patch.
fn sync_last_applied(object: &mut Value, config: &Value) {
    let has_annotation = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(managed::LAST_APPLIED))
        .and_then(Value::as_str)
        .is_some_and(|text| !text.is_empty());
    if !has_annotation {
        return;
    }
    let mut last_applied = config.clone();
    if let Some(annotations) = last_applied
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(managed::LAST_APPLIED);
        if annotations.is_empty() {
            object::metadata_mut(&mut last_applied).remove("annotations");
        }
    }
    // fields_text: an apply configuration.
    let text = serde_json::to_string(&last_applied).expect("JSON values serialize");
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.insert(managed::LAST_APPLIED.into(), Value::String(text));
    }
}

/// The 409 of an apply that would change fields other managers own, worded like
/// kube-apiserver's (`NewConflictError`).
fn conflict_error(conflicts: &[(ManagerId, fieldset::Path)]) -> ApiError {
    let causes = conflicts
        .iter()
        .map(|(manager, path)| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", manager.describe()),
            field: path_string(path),
        })
        .collect();
    let message = match conflicts {
        [(manager, path)] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            manager.describe(),
            path_string(path)
        ),
        _ => {
            let mut lines = Vec::new();
            let mut previous: Option<&ManagerId> = None;
            for (manager, path) in conflicts {
                if previous != Some(manager) {
                    lines.push(format!("conflicts with {}:", manager.describe()));
                    previous = Some(manager);
                }
                lines.push(format!("- {}", path_string(path)));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                lines.join("\n")
            )
        }
    };
    let mut error = ApiError::new(StatusCode::CONFLICT, "Conflict", message);
    error.causes = causes;
    error
}

/// The top-level fields a write may change, after kube-apiserver's reset fields: the main
/// resource leaves `status` alone when there is a status subresource, `/status` changes only
/// `status`, a namespace's `/finalize` only `spec`.
struct ResetFields {
    only: Option<&'static str>,
    except: &'static [&'static str],
}

impl ResetFields {
    fn of(resource: &ResourceInfo, subresource: Option<&str>) -> ResetFields {
        let namespaces =
            resource.builtin && resource.group.is_empty() && resource.plural == "namespaces";
        match subresource {
            Some("status") => ResetFields {
                only: Some("status"),
                except: &[],
            },
            Some("finalize") => ResetFields {
                only: Some("spec"),
                except: &[],
            },
            // A namespace's spec.finalizers are set by the server and changed through
            // /finalize only.
            None if namespaces => ResetFields {
                only: None,
                except: &["spec", "status"],
            },
            None if resource.status_subresource => ResetFields {
                only: None,
                except: &["status"],
            },
            _ => ResetFields {
                only: None,
                except: &[],
            },
        }
    }

    fn keeps(&self, field: &str) -> bool {
        match self.only {
            Some(only) => field == only,
            None => !self.except.contains(&field),
        }
    }
}

fn empty_object(resource: &ResourceInfo, api_version: &str) -> Value {
    json!({"apiVersion": api_version, "kind": resource.kind})
}

/// An object as the field manager compares it: in the request's version, without
/// managedFields and resourceVersion.
fn without_server_fields(mut object: Value, resource: &ResourceInfo, api_version: &str) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(resource.kind));
    }
    let metadata = object::metadata_mut(&mut object);
    metadata.remove("managedFields");
    metadata.remove("resourceVersion");
    object
}

/// Runs `f` on `object` as `without_server_fields` shows it, in the request's version. When
/// the resource's stored shape is its served shape, this edits `object` in place and puts it
/// back afterwards (all but managedFields, which the caller replaces), instead of copying the
/// whole object for every write.
fn as_compared<R>(
    object: &mut Value,
    resource: &ResourceInfo,
    api_version: &str,
    f: impl FnOnce(&Value) -> R,
) -> R {
    if crate::conversion::converts(resource) || !object.is_object() {
        let mut view = object.clone();
        crate::conversion::from_storage(resource, &mut view);
        return f(&without_server_fields(view, resource, api_version));
    }
    let map = object.as_object_mut().expect("checked above");
    let api_version = map.insert("apiVersion".into(), json!(api_version));
    let kind = map.insert("kind".into(), json!(resource.kind));
    let resource_version = object::metadata_mut(object).remove("resourceVersion");
    object::metadata_mut(object).remove("managedFields");
    let result = f(object);
    let map = object.as_object_mut().expect("checked above");
    for (field, value) in [("apiVersion", api_version), ("kind", kind)] {
        match value {
            Some(value) => map.insert(field.into(), value),
            None => map.remove(field),
        };
    }
    if let Some(resource_version) = resource_version {
        object::metadata_mut(object).insert("resourceVersion".into(), resource_version);
    }
    result
}

fn managed_fields(object: &Value) -> Option<&Value> {
    object::metadata(object)?.get("managedFields")
}

fn new_managed_fields(object: &Value) -> Option<&Value> {
    managed_fields(object).filter(|m| !m.is_null())
}

fn decode_or_empty(list: Option<&Value>) -> Managed {
    Managed::decode(list).unwrap_or_default()
}

/// `[]` and `[{}]` in a request reset ownership.
fn is_reset(list: &Value) -> bool {
    match list.as_array().map(Vec::as_slice) {
        Some([]) => true,
        Some([only]) => only.as_object().is_some_and(|entry| entry.is_empty()),
        _ => false,
    }
}

fn set_managed_fields(object: &mut Value, managed: &Managed) {
    let metadata = object::metadata_mut(object);
    if managed.is_empty() {
        metadata.remove("managedFields");
    } else {
        metadata.insert("managedFields".into(), managed.encode());
    }
}
