//! The scale subresource of custom resources whose CRD declares `subresources.scale`: an
//! `autoscaling/v1` `Scale` view of the object (`kubectl scale`, autoscalers).
//!
//! A read maps `specReplicasPath`, `statusReplicasPath` and `labelSelectorPath` into the
//! Scale. A write (PUT of a Scale, or a JSON or merge patch of the current Scale) changes
//! nothing but the spec replicas path of the object, and goes through `rest::update` like any
//! other write: admission, generation, no-op detection and optimistic concurrency apply. A
//! `metadata.resourceVersion` in the Scale is a precondition on the object, as in
//! kube-apiserver.

#[cfg(test)]
mod tests;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{Map, Value, json};

use corral_admission::FieldError;

use crate::error::ApiError;
use crate::patch::{Patch, PatchType};
use crate::query::Query;
use crate::registry::ScalePaths;
use crate::rest::{self, Change, Target, json_response};
use crate::server::ApiState;
use crate::{body, object};

/// Serves `GET`, `PUT` and `PATCH` on `.../{name}/scale`.
pub async fn serve(
    state: &ApiState,
    target: &Target,
    name: &str,
    method: &Method,
    headers: &HeaderMap,
    query: &Query,
    request_body: Body,
) -> Result<Response, ApiError> {
    let paths = target
        .resource
        .scale
        .clone()
        .ok_or_else(ApiError::no_route)?;
    let update = match *method {
        Method::GET => {
            let object = rest::get(state, target, name).await?;
            let scale = scale_of(&object, &paths)?;
            if scale.pointer("/spec/replicas").is_none() {
                return Err(ApiError::internal(format!(
                    "the spec replicas field {:?} does not exist",
                    paths.spec_replicas
                )));
            }
            return Ok(json_response(StatusCode::OK, &scale));
        }
        Method::PUT => {
            let bytes = body::read(request_body).await?;
            let scale = body::decode_object(&body::content_type(headers), &bytes)?;
            Update::Replace(scale)
        }
        Method::PATCH => {
            let content_type = body::content_type(headers);
            let patch_type =
                PatchType::from_content_type(&content_type, &target.resource, &target.version)?;
            if patch_type == PatchType::Apply {
                return Err(ApiError::unsupported_media_type(
                    "application/apply-patch+yaml is not supported on the scale subresource; use a merge or JSON patch",
                ));
            }
            let bytes = body::read(request_body).await?;
            Update::Patch(Patch::decode(patch_type, &bytes)?)
        }
        _ => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
    };
    let url_name = name.to_string();
    let subject_resource = target.resource.plural.clone();
    let subject_group = target.resource.group.clone();
    let change_paths = paths.clone();
    let change = Change::Patch(Box::new(move |current: &Value| {
        let subject = crate::error::Subject {
            resource: &subject_resource,
            group: &subject_group,
            name: &url_name,
        };
        apply_scale(current, &change_paths, &update, subject)
    }));
    let response = rest::update(state, target, name, query, change).await?;

    // The answer is the Scale of the object as written.
    let (parts, written) = response.into_parts();
    let bytes = axum::body::to_bytes(written, usize::MAX)
        .await
        .map_err(|e| ApiError::internal(format!("reading the written object failed: {e}")))?;
    let object: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::internal(format!("the written object is not JSON: {e}")))?;
    let mut answer = json_response(parts.status, &scale_of(&object, &paths)?);
    for warning in parts.headers.get_all(http::header::WARNING) {
        answer
            .headers_mut()
            .append(http::header::WARNING, warning.clone());
    }
    Ok(answer)
}

/// A scale write, before it meets the current object.
enum Update {
    /// PUT: the new Scale.
    Replace(Value),
    /// PATCH: applied to the current Scale.
    Patch(Patch),
}

fn split_path(path: &str) -> Vec<&str> {
    path.trim_start_matches('.').split('.').collect()
}

/// The integer at `path`: `None` when absent; an error when it is not an integer.
fn int_at(object: &Value, path: &str) -> Result<Option<i64>, ApiError> {
    let mut node = object;
    for segment in split_path(path) {
        match node.get(segment) {
            Some(next) => node = next,
            None => return Ok(None),
        }
    }
    match node {
        Value::Null => Ok(None),
        value => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| ApiError::internal(format!("{path} is {value}, not an integer"))),
    }
}

fn string_at(object: &Value, path: &str) -> Result<String, ApiError> {
    let mut node = object;
    for segment in split_path(path) {
        match node.get(segment) {
            Some(next) => node = next,
            None => return Ok(String::new()),
        }
    }
    match node {
        Value::Null => Ok(String::new()),
        Value::String(text) => Ok(text.clone()),
        value => Err(ApiError::internal(format!(
            "{path} is {value}, not a string"
        ))),
    }
}

/// The `autoscaling/v1` Scale of an object. `spec.replicas` is absent when the object has
/// no value at the spec replicas path.
pub fn scale_of(object: &Value, paths: &ScalePaths) -> Result<Value, ApiError> {
    let spec_replicas = int_at(object, &paths.spec_replicas)?;
    let status_replicas = int_at(object, &paths.status_replicas)?.unwrap_or(0);
    let selector = match &paths.label_selector {
        Some(path) => string_at(object, path)?,
        None => String::new(),
    };
    let mut metadata = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = object::meta_str(object, field).filter(|v| !v.is_empty()) {
            metadata.insert(field.into(), json!(value));
        }
    }
    let mut spec = Map::new();
    if let Some(replicas) = spec_replicas {
        spec.insert("replicas".into(), json!(replicas));
    }
    let mut status = Map::new();
    status.insert("replicas".into(), json!(status_replicas));
    if !selector.is_empty() {
        status.insert("selector".into(), json!(selector));
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }))
}

/// Checks that a body (or patch result) is a Scale for this object.
fn check_scale(scale: &Value, name: &str) -> Result<(), ApiError> {
    if !scale.is_object() {
        return Err(ApiError::bad_request("the Scale must be a JSON object"));
    }
    match scale.get("apiVersion") {
        None | Some(Value::Null) => {}
        Some(Value::String(version)) if version == "autoscaling/v1" => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version (autoscaling/v1)",
                other.as_str().unwrap_or(&other.to_string())
            )));
        }
    }
    match scale.get("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if kind == "Scale" => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({}) does not match the expected kind (Scale)",
                other.as_str().unwrap_or(&other.to_string())
            )));
        }
    }
    match object::name(scale) {
        None => Ok(()),
        Some(given) if given == name => Ok(()),
        Some(given) => Err(ApiError::bad_request(format!(
            "the name of the object ({given}) does not match the name on the URL ({name})"
        ))),
    }
}

/// The object after a scale write: `current` with the new spec replicas, and the Scale's
/// resourceVersion as precondition when the client gave one.
fn apply_scale(
    current: &Value,
    paths: &ScalePaths,
    update: &Update,
    subject: crate::error::Subject<'_>,
) -> Result<Value, ApiError> {
    let (scale, precondition) = match update {
        Update::Replace(scale) => (
            scale.clone(),
            object::resource_version(scale).map(str::to_string),
        ),
        Update::Patch(patch) => {
            let current_scale = scale_of(current, paths)?;
            let patched = patch.apply(&current_scale)?;
            // The current Scale carries the current resourceVersion; only a patch that
            // changes it sets a precondition (which then fails, as it is stale). The patch is
            // applied anew on every attempt, so a concurrent write is retried, not refused.
            let precondition = object::resource_version(&patched)
                .filter(|rv| Some(*rv) != object::resource_version(&current_scale))
                .map(str::to_string);
            (patched, precondition)
        }
    };
    finish(current, paths, &scale, precondition.as_deref(), subject)
}

fn finish(
    current: &Value,
    paths: &ScalePaths,
    scale: &Value,
    precondition: Option<&str>,
    subject: crate::error::Subject<'_>,
) -> Result<Value, ApiError> {
    check_scale(scale, subject.name)?;
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => {
            if scale.pointer("/spec").is_some_and(|s| !s.is_object() && !s.is_null()) {
                return Err(ApiError::bad_request("spec of a Scale must be an object"));
            }
            if int_at(current, &paths.spec_replicas)?.is_none() {
                return Err(ApiError::bad_request(format!(
                    "the spec replicas field {:?} cannot be empty",
                    paths.spec_replicas
                )));
            }
            // An omitted replicas field is zero, as in the Go type.
            0
        }
        Some(value) => value.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "Scale.autoscaling \"{}\" cannot be decoded: spec.replicas must be an integer, not {value}",
                subject.name
            ))
        })?,
    };
    // A negative count is refused by admission (`validate_spec_replicas`), which every write
    // of the object passes through, this one included.
    let mut new = current.clone();
    set_int(&mut new, &paths.spec_replicas, replicas)?;
    let metadata = object::metadata_mut(&mut new);
    match precondition {
        Some(rv) => {
            metadata.insert("resourceVersion".into(), json!(rv));
        }
        None => {
            metadata.remove("resourceVersion");
        }
    }
    Ok(new)
}

/// apiextensions' `ValidateScaleSpec`: the value at `specReplicasPath` of an object being
/// written is a non-negative int32. The field is the path as the CRD writes it
/// (`.spec.replicas`), as kube-apiserver names it.
pub fn validate_spec_replicas(object: &Value, paths: &ScalePaths) -> Option<FieldError> {
    let replicas = int_at(object, &paths.spec_replicas).ok()??;
    let detail = if replicas < 0 {
        "should be a non-negative integer".to_string()
    } else if replicas > i64::from(i32::MAX) {
        format!("should be less than or equal to {}", i32::MAX)
    } else {
        return None;
    };
    Some(FieldError::invalid(
        paths.spec_replicas.clone(),
        replicas,
        detail,
    ))
}

fn set_int(object: &mut Value, path: &str, value: i64) -> Result<(), ApiError> {
    let segments = split_path(path);
    let (last, parents) = segments
        .split_last()
        .ok_or_else(|| ApiError::internal("the spec replicas path is empty"))?;
    let mut node = object;
    for segment in parents {
        let map = node.as_object_mut().ok_or_else(|| {
            ApiError::internal(format!("{path} cannot be set: a parent is not an object"))
        })?;
        node = map
            .entry(segment.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if node.is_null() {
            *node = Value::Object(Map::new());
        }
    }
    let map = node.as_object_mut().ok_or_else(|| {
        ApiError::internal(format!("{path} cannot be set: a parent is not an object"))
    })?;
    map.insert(last.to_string(), json!(value));
    Ok(())
}
