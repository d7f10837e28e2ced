//! How read responses are rendered for the client's Accept header: the object as JSON, a
//! `Table` with the resource's printer columns (`kubectl get`), or `PartialObjectMetadata`
//! (kube-rs metadata-only APIs and watchers).
//!
//! The Accept header lists alternatives in order; the first one this server produces wins.
//! kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io`, then the v1beta1 Table,
//! then plain JSON. An Accept header naming nothing this server produces gets plain JSON
//! (kube-apiserver would answer 406), which every client here accepts.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::object::fields_text;
use crate::query::Query;
use crate::rest::{Target, json_response};
use crate::table::Printer;

/// What a read request is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rendering {
    Json,
    /// A `meta.k8s.io` Table of this version (`v1` or `v1beta1`).
    Table(&'static str),
    /// `PartialObjectMetadata(List)` of this `meta.k8s.io` version.
    Metadata(&'static str),
}

/// What is being read: the shape decides which `as=` alternatives apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Object,
    List,
    Watch,
}

fn meta_version(params: &[(String, String)]) -> Option<&'static str> {
    let param = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if param("g") != Some("meta.k8s.io") {
        return None;
    }
    match param("v") {
        Some("v1") => Some("v1"),
        Some("v1beta1") => Some("v1beta1"),
        _ => None,
    }
}

fn negotiate(headers: &HeaderMap, shape: Shape) -> Rendering {
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for clause in value.split(',') {
            let mut parts = clause.split(';').map(str::trim);
            let media_type = parts.next().unwrap_or("").to_ascii_lowercase();
            let params: Vec<(String, String)> = parts
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| {
                    (
                        k.trim().to_ascii_lowercase(),
                        v.trim().trim_matches('"').to_string(),
                    )
                })
                .collect();
            let as_kind = params
                .iter()
                .find(|(k, _)| k == "as")
                .map(|(_, v)| v.as_str());
            match (media_type.as_str(), as_kind) {
                ("application/json" | "application/*" | "*/*", None) => return Rendering::Json,
                ("application/json", Some("Table")) => {
                    if let Some(version) = meta_version(&params) {
                        return Rendering::Table(version);
                    }
                }
                ("application/json", Some("PartialObjectMetadata")) if shape != Shape::List => {
                    if let Some(version) = meta_version(&params) {
                        return Rendering::Metadata(version);
                    }
                }
                ("application/json", Some("PartialObjectMetadataList"))
                    if shape != Shape::Object =>
                {
                    if let Some(version) = meta_version(&params) {
                        return Rendering::Metadata(version);
                    }
                }
                _ => {}
            }
        }
    }
    Rendering::Json
}

/// What the rows of a Table carry in `object` (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IncludeObject {
    None,
    Metadata,
    Object,
}

fn include_object(query: &Query) -> Result<IncludeObject, ApiError> {
    match query.include_object.as_deref() {
        None | Some("Metadata") => Ok(IncludeObject::Metadata),
        Some("None") => Ok(IncludeObject::None),
        Some("Object") => Ok(IncludeObject::Object),
        Some(other) => Err(ApiError::bad_request(format!(
            "includeObject {other:?} is invalid: must be one of None, Metadata, Object"
        ))),
    }
}

fn with_content_type(value: &Value, content_type: String) -> Response {
    let body = crate::object::fields_text::to_vec(value);
    (
        StatusCode::OK,
        [(http::header::CONTENT_TYPE, content_type)],
        body,
    )
        .into_response()
}

/// `PartialObjectMetadata` of an object: its kind, and its metadata unchanged.
fn partial(object: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// [`partial`] serialized, borrowing the metadata instead of copying it.
fn partial_json(object: &Value, version: &str) -> Vec<u8> {
    /// `partial`'s value, borrowed; its fields in the order a `serde_json::Map` keeps.
    #[derive(serde::Serialize)]
    struct Partial<'a> {
        #[serde(rename = "apiVersion")]
        api_version: String,
        kind: &'static str,
        metadata: fields_text::Json<'a>,
    }
    let empty = Value::Object(Map::new());
    let partial = Partial {
        api_version: format!("meta.k8s.io/{version}"),
        kind: "PartialObjectMetadata",
        metadata: fields_text::Json(object.get("metadata").unwrap_or(&empty)),
    };
    // fields_text: `Partial` writes metadata through `Json`.
    serde_json::to_vec(&partial).expect("JSON values serialize")
}

/// A Table of `objects`. `metadata` is the list's (resourceVersion, continue) or, for one
/// object, its resourceVersion.
fn table(
    printer: &Printer,
    objects: &[Value],
    metadata: Map<String, Value>,
    version: &str,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let now = chrono::Utc::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let mut row = json!({"cells": printer.cells(object, now)});
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => row["object"] = partial(object, version),
                IncludeObject::Object => row["object"] = object.clone(),
            }
            row
        })
        .collect();
    let mut table = json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
    });
    if with_columns {
        table["columnDefinitions"] = printer.column_definitions();
    }
    table["rows"] = Value::Array(rows);
    table
}

fn table_content_type(version: &str) -> String {
    format!("application/json;as=Table;v={version};g=meta.k8s.io")
}

fn object_metadata(object: &Value) -> Map<String, Value> {
    let mut metadata = Map::new();
    if let Some(rv) = crate::object::resource_version(object) {
        metadata.insert("resourceVersion".into(), json!(rv));
    }
    metadata
}

/// A single object (GET).
pub fn object(target: &Target, headers: &HeaderMap, query: &Query, value: &Value) -> Response {
    match negotiate(headers, Shape::Object) {
        Rendering::Json => json_response(StatusCode::OK, value),
        Rendering::Table(version) => {
            let include = match include_object(query) {
                Ok(include) => include,
                Err(error) => return error.into_response(),
            };
            let printer = Printer::for_resource(&target.resource, &target.version);
            let table = table(
                &printer,
                std::slice::from_ref(value),
                object_metadata(value),
                version,
                include,
                true,
            );
            with_content_type(&table, table_content_type(version))
        }
        Rendering::Metadata(version) => with_content_type(
            &partial(value, version),
            format!("application/json;as=PartialObjectMetadata;v={version};g=meta.k8s.io"),
        ),
    }
}

/// A list (GET on a collection).
pub fn list(target: &Target, headers: &HeaderMap, query: &Query, value: &Value) -> Response {
    let items = || {
        value
            .get("items")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let metadata = || {
        value
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    match negotiate(headers, Shape::List) {
        Rendering::Json => json_response(StatusCode::OK, value),
        Rendering::Table(version) => {
            let include = match include_object(query) {
                Ok(include) => include,
                Err(error) => return error.into_response(),
            };
            let printer = Printer::for_resource(&target.resource, &target.version);
            let table = table(&printer, items(), metadata(), version, include, true);
            with_content_type(&table, table_content_type(version))
        }
        Rendering::Metadata(version) => {
            let list = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": format!("meta.k8s.io/{version}"),
                "metadata": metadata(),
                "items": items().iter().map(|item| partial(item, version)).collect::<Vec<_>>(),
            });
            with_content_type(
                &list,
                format!("application/json;as=PartialObjectMetadataList;v={version};g=meta.k8s.io"),
            )
        }
    }
}

/// Encodes the objects of watch events when the client asked for Tables or
/// `PartialObjectMetadata`. Like kube-apiserver, only the first Table carries the column
/// definitions.
pub struct EventEncoder {
    rendering: Rendering,
    printer: Printer,
    include: IncludeObject,
    columns_sent: AtomicBool,
}

impl EventEncoder {
    /// The serialized event object of a metadata-only watch: the same bytes as serializing
    /// [`Self::encode`]'s value, without copying the metadata (managedFields and all) first.
    /// `None` for other renderings.
    pub fn metadata_json(&self, object: &Value) -> Option<Vec<u8>> {
        let Rendering::Metadata(version) = self.rendering else {
            return None;
        };
        Some(partial_json(object, version))
    }

    /// The event object for `object` (already in the requested version).
    pub fn encode(&self, object: &Value) -> Value {
        match self.rendering {
            Rendering::Json => object.clone(),
            Rendering::Metadata(version) => partial(object, version),
            Rendering::Table(version) => {
                let with_columns = !self.columns_sent.swap(true, Ordering::Relaxed);
                table(
                    &self.printer,
                    std::slice::from_ref(object),
                    object_metadata(object),
                    version,
                    self.include,
                    with_columns,
                )
            }
        }
    }
}

/// The encoder of a watch's events; `None` for plain JSON.
pub fn watch_encoder(
    target: &Target,
    headers: &HeaderMap,
    query: &Query,
) -> Result<Option<EventEncoder>, ApiError> {
    let rendering = negotiate(headers, Shape::Watch);
    if rendering == Rendering::Json {
        return Ok(None);
    }
    Ok(Some(EventEncoder {
        rendering,
        printer: Printer::for_resource(&target.resource, &target.version),
        include: include_object(query)?,
        columns_sent: AtomicBool::new(false),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_json_is_the_serialized_partial() {
        let objects = [
            json!({"kind": "Machine", "metadata": {"name": "m", "labels": {"a": "b"},
                "managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}]}, "spec": {}}),
            json!({"kind": "Machine"}),
        ];
        for object in &objects {
            for version in ["v1", "v1beta1"] {
                assert_eq!(
                    partial_json(object, version),
                    serde_json::to_vec(&partial(object, version)).unwrap()
                );
            }
        }
    }
}
