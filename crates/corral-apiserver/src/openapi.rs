//! OpenAPI v3: the index at `/openapi/v3` and one document per group-version
//! (`/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`), generated from the registry.
//!
//! kubectl needs them for its defaults: `apply` and `create` check that the PATCH operation of
//! the kind's path carries an `x-kubernetes-group-version-kind` object and a `fieldValidation`
//! query parameter, and then leave validation to the server (`fieldValidation=Strict`);
//! without that they fail with "failed to download openapi". `explain` finds the kind through
//! the GVK of an operation and then the component schema whose GVK list contains it.
//! Client-side apply of a built-in kind computes its strategic merge patch from the component
//! schemas when the PATCH operation accepts `application/strategic-merge-patch+json`.
//!
//! Custom resources get their version's `openAPIV3Schema` plus `apiVersion`, `kind` and a
//! `metadata` reference, named like kube-apiserver names them (`com.example.v1.Widget`).
//! Built-in kinds get the hand-written schemas of `schemas.rs`.
//!
//! `/openapi/v2` is a Swagger 2.0 document without paths or definitions ([`v2`]). kubectl
//! asks for it in one case: validating a document whose kind has no `fieldValidation` in v3,
//! such as the `List` of `kubectl get ... -o json | kubectl replace -f -`; without it that
//! fails ("the server could not find the requested resource"). client-go reads it only as
//! protobuf (gnostic's `openapi.v2.Document`, no JSON fallback), so it is served as protobuf
//! when asked for and as JSON otherwise. With no definitions kubectl finds no schema for a
//! List's items and leaves them to the server's own validation, as it does for a kind it
//! does not know.
//!
//! The index links each document with `?hash=<etag>`, the document's content hash, so the
//! link changes when a CRD changes; a hashed URL is served as immutable. Documents are built
//! once per registry state and kept until a resource is added, changed or removed.

pub(crate) mod schemas;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::registry::{ResourceInfo, VersionInfo};
use crate::server::ApiState;

use schemas::{META, schema_ref};

/// The documents of one registry state.
struct Built {
    /// The registry's resources the documents were built from. Holding them keeps their
    /// addresses from being reused, so pointer equality says whether anything changed.
    resources: Vec<Arc<ResourceInfo>>,
    index: Bytes,
    index_etag: String,
    /// By path, such as `apis/example.com/v1`.
    documents: BTreeMap<String, (Bytes, String)>,
}

/// The documents of the current registry state, rebuilt when it changes.
#[derive(Default)]
pub struct Cache {
    built: Mutex<Option<Arc<Built>>>,
}

fn current(state: &ApiState) -> Arc<Built> {
    let resources = state.registry.all();
    let mut cached = state.openapi.built.lock().unwrap();
    if let Some(built) = cached.as_ref() {
        let unchanged = built.resources.len() == resources.len()
            && built
                .resources
                .iter()
                .zip(&resources)
                .all(|(a, b)| Arc::ptr_eq(a, b));
        if unchanged {
            return built.clone();
        }
    }
    let built = Arc::new(build(resources));
    *cached = Some(built.clone());
    built
}

/// FNV-1a, 128 bits: a content hash that is the same on every server and every run.
fn content_hash(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let mut hash = OFFSET;
    for byte in bytes {
        hash ^= u128::from(*byte);
        hash = hash.wrapping_mul(PRIME);
    }
    format!("{hash:032X}")
}

/// `api/v1` or `apis/<group>/<version>`.
fn document_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn build(resources: Vec<Arc<ResourceInfo>>) -> Built {
    let mut by_path: BTreeMap<String, (String, Vec<Arc<ResourceInfo>>)> = BTreeMap::new();
    for resource in &resources {
        for version in resource.versions.iter().filter(|v| v.served) {
            by_path
                .entry(document_path(&resource.group, &version.name))
                .or_insert_with(|| (version.name.clone(), Vec::new()))
                .1
                .push(resource.clone());
        }
    }
    let mut documents = BTreeMap::new();
    let mut index = Map::new();
    for (path, (version, served)) in by_path {
        let document = group_version_document(&version, &served);
        // fields_text: an OpenAPI document.
        let bytes = Bytes::from(serde_json::to_vec(&document).expect("JSON values serialize"));
        let etag = content_hash(&bytes);
        index.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={etag}")}),
        );
        documents.insert(path, (bytes, etag));
    }
    let index =
        // fields_text: an OpenAPI index.
        Bytes::from(serde_json::to_vec(&json!({"paths": index})).expect("JSON values serialize"));
    let index_etag = content_hash(&index);
    Built {
        resources,
        index,
        index_etag,
        documents,
    }
}

// ---------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------

fn etag_matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(http::header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/").trim_matches('"'))
        .any(|v| v == etag || v == "*")
}

fn not_modified(etag: &str) -> Response {
    (
        StatusCode::NOT_MODIFIED,
        [(http::header::ETAG, format!("\"{etag}\""))],
    )
        .into_response()
}

/// `GET /openapi/v3`: the index of group-version documents.
/// `GET /openapi/v2`: see the module docs.
pub fn v2(headers: &HeaderMap) -> Response {
    // What client-go asks for (not a valid media type: `@`), and the name kube-apiserver
    // answers with, which Go's `mime` parses.
    const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    const PROTOBUF_ANSWER: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
    let version = crate::discovery::version()["gitVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let wants_protobuf = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|media| media.split(';').next().unwrap_or("").trim())
        .take_while(|media| *media != "application/json")
        .any(|media| media == PROTOBUF || media == PROTOBUF_ANSWER);
    if wants_protobuf {
        // openapi.v2.Document: swagger (1), info (2: title 1, version 2), paths (8) and
        // definitions (9), both empty.
        let mut info = Vec::new();
        length_delimited(&mut info, 1, b"Kubernetes");
        length_delimited(&mut info, 2, version.as_bytes());
        let mut document = Vec::new();
        length_delimited(&mut document, 1, b"2.0");
        length_delimited(&mut document, 2, &info);
        length_delimited(&mut document, 8, &[]);
        length_delimited(&mut document, 9, &[]);
        return (
            StatusCode::OK,
            [(http::header::CONTENT_TYPE, PROTOBUF_ANSWER)],
            document,
        )
            .into_response();
    }
    crate::rest::json_response(
        StatusCode::OK,
        &json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": version},
            "paths": {},
            "definitions": {},
        }),
    )
}

/// Appends a protobuf field of wire type 2 (bytes, string, message).
fn length_delimited(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub fn index(state: &ApiState, headers: &HeaderMap) -> Response {
    let built = current(state);
    if etag_matches(headers, &built.index_etag) {
        return not_modified(&built.index_etag);
    }
    (
        StatusCode::OK,
        [
            (http::header::CONTENT_TYPE, "application/json".to_string()),
            (http::header::ETAG, format!("\"{}\"", built.index_etag)),
        ],
        built.index.clone(),
    )
        .into_response()
}

/// Whether the Accept header allows JSON (absent means anything).
fn accepts_json(headers: &HeaderMap) -> bool {
    let mut any = false;
    for value in headers.get_all(http::header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for clause in value.split(',') {
            any = true;
            let media_type = clause.split(';').next().unwrap_or("").trim();
            if matches!(
                media_type,
                "application/json" | "application/*" | "*/*" | ""
            ) {
                return true;
            }
        }
    }
    !any
}

/// `GET /openapi/v3/<path>`: one group-version document. With `?hash=` of the current
/// content it may be cached forever; with a stale hash the client is sent to the current one.
pub fn document(
    state: &ApiState,
    path: &str,
    raw_query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let built = current(state);
    let (bytes, etag) = built.documents.get(path).ok_or_else(ApiError::no_route)?;
    if !accepts_json(headers) {
        return Err(ApiError::not_acceptable(
            "only application/json is supported for OpenAPI v3 documents",
        ));
    }
    let hash = raw_query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == "hash")
        .map(|(_, value)| value);
    if let Some(hash) = hash
        && hash != etag
    {
        return Ok((
            StatusCode::MOVED_PERMANENTLY,
            [(
                http::header::LOCATION,
                format!("/openapi/v3/{path}?hash={etag}"),
            )],
        )
            .into_response());
    }
    if etag_matches(headers, etag) {
        return Ok(not_modified(etag));
    }
    let mut response = (
        StatusCode::OK,
        [
            (http::header::CONTENT_TYPE, "application/json".to_string()),
            (http::header::ETAG, format!("\"{etag}\"")),
            (http::header::VARY, "Accept".to_string()),
        ],
        bytes.clone(),
    )
        .into_response();
    if hash.is_some() {
        let headers = response.headers_mut();
        headers.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("public, immutable"),
        );
        let expires = (chrono::Utc::now() + chrono::Duration::days(365))
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        if let Ok(value) = http::HeaderValue::from_str(&expires) {
            headers.insert(http::header::EXPIRES, value);
        }
    }
    Ok(response)
}

// ---------------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------------

/// The component name kube-apiserver gives a custom kind: the group reversed, the version
/// and the kind (`example.com`, `v1`, `Widget` → `com.example.v1.Widget`).
pub fn custom_model_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The schema of a custom kind: the CRD's schema, with `apiVersion`, `kind` and a reference
/// to `ObjectMeta` (replacing whatever the CRD said about `metadata`).
fn custom_kind_schema(resource: &ResourceInfo, version: &VersionInfo) -> Value {
    let mut schema = version
        .schema
        .clone()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"type": "object"}));
    let map = schema.as_object_mut().expect("checked above");
    map.entry("type").or_insert_with(|| json!("object"));
    let properties = map.entry("properties").or_insert_with(|| json!({}));
    if !properties.is_object() {
        *properties = json!({});
    }
    let properties = properties.as_object_mut().expect("just made an object");
    properties.insert(
        "apiVersion".into(),
        json!({"type": "string", "description": schemas::API_VERSION_DESCRIPTION}),
    );
    properties.insert(
        "kind".into(),
        json!({"type": "string", "description": schemas::KIND_DESCRIPTION}),
    );
    properties.insert(
        "metadata".into(),
        schemas::reference(&format!("{META}.ObjectMeta"), schemas::METADATA_DESCRIPTION),
    );
    map.insert(
        "x-kubernetes-group-version-kind".into(),
        schemas::group_version_kinds(&resource.group, &version.name, &resource.kind),
    );
    schema
}

/// The component names of a resource's kind and list in `version`, with their schemas.
fn models(resource: &ResourceInfo, version: &str) -> (String, String, Value, Value) {
    if resource.builtin
        && let Some((kind, list)) = schemas::builtin_models(&resource.group, &resource.plural)
        && let (Some(kind_schema), Some(list_schema)) =
            (schemas::library().get(&kind), schemas::library().get(&list))
    {
        return (kind, list, kind_schema.clone(), list_schema.clone());
    }
    let kind = custom_model_name(&resource.group, version, &resource.kind);
    let list = custom_model_name(&resource.group, version, &resource.list_kind);
    let version_info = resource.versions.iter().find(|v| v.name == version);
    let kind_schema = match version_info {
        Some(info) => custom_kind_schema(resource, info),
        None => json!({"type": "object"}),
    };
    let list_schema = schemas::list(
        &kind,
        &resource.group,
        version,
        &resource.list_kind,
        &resource.kind,
    );
    (kind, list, kind_schema, list_schema)
}

fn group_version_document(version: &str, resources: &[Arc<ResourceInfo>]) -> Value {
    let mut paths = Map::new();
    let mut components = BTreeMap::new();
    for resource in resources {
        let (kind, list, kind_schema, list_schema) = models(resource, version);
        add_paths(&mut paths, resource, version, &kind, &list);
        components.insert(kind, kind_schema);
        components.insert(list, list_schema);
    }
    // Every schema the paths and kinds refer to, and what those refer to.
    let mut pending: Vec<String> = Vec::new();
    collect_refs(&Value::Object(paths.clone()), &mut pending);
    for schema in components.values() {
        collect_refs(schema, &mut pending);
    }
    while let Some(name) = pending.pop() {
        if components.contains_key(&name) {
            continue;
        }
        if let Some(schema) = schemas::library().get(&name) {
            collect_refs(schema, &mut pending);
            components.insert(name, schema.clone());
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::discovery::version()["gitVersion"]},
        "paths": paths,
        "components": {"schemas": components},
    })
}

fn collect_refs(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref" {
                    if let Some(name) = value
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/components/schemas/"))
                    {
                        names.push(name.to_string());
                    }
                } else {
                    collect_refs(value, names);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, names)),
        _ => {}
    }
}

fn parameter(name: &str, location: &str, type_: &str, description: &str) -> Value {
    let mut parameter = json!({
        "name": name,
        "in": location,
        "description": description,
        "schema": {"type": type_, "uniqueItems": true},
    });
    if location == "path" {
        parameter["required"] = json!(true);
    }
    parameter
}

fn query(name: &str, type_: &str, description: &str) -> Value {
    parameter(name, "query", type_, description)
}

fn dry_run() -> Value {
    query(
        "dryRun",
        "string",
        "When present, the request is checked (admission and validation) but not persisted. The only valid value is All.",
    )
}

fn field_manager() -> Value {
    query(
        "fieldManager",
        "string",
        "The name of the actor making the change, recorded in managedFields. Required for apply patches.",
    )
}

fn field_validation() -> Value {
    query(
        "fieldValidation",
        "string",
        "How the server treats unknown and duplicate fields in the body: Ignore drops them, Warn drops them with a warning, Strict fails the request.",
    )
}

fn list_parameters() -> Vec<Value> {
    vec![
        query(
            "allowWatchBookmarks",
            "boolean",
            "Ask a watch for BOOKMARK events, which carry only a resourceVersion.",
        ),
        query(
            "continue",
            "string",
            "The continue token of the previous page of this list.",
        ),
        query(
            "fieldSelector",
            "string",
            "Only objects whose fields match, such as metadata.name=w1.",
        ),
        query(
            "labelSelector",
            "string",
            "Only objects whose labels match, such as app=demo,tier!=web.",
        ),
        query(
            "limit",
            "integer",
            "The most items to return; the rest follow through metadata.continue.",
        ),
        query(
            "resourceVersion",
            "string",
            "The resourceVersion to list at or watch from; see resourceVersionMatch.",
        ),
        query(
            "resourceVersionMatch",
            "string",
            "Exact or NotOlderThan: how resourceVersion constrains a list.",
        ),
        query(
            "sendInitialEvents",
            "boolean",
            "Start a watch with the current objects as ADDED events, then a bookmark; requires resourceVersionMatch=NotOlderThan.",
        ),
        query(
            "timeoutSeconds",
            "integer",
            "How long a list or watch call may last.",
        ),
        query(
            "watch",
            "boolean",
            "Watch for changes instead of listing: a stream of ADDED, MODIFIED and DELETED events.",
        ),
    ]
}

fn delete_parameters() -> Vec<Value> {
    vec![
        dry_run(),
        query(
            "gracePeriodSeconds",
            "integer",
            "Seconds the object is given before it is deleted; zero deletes immediately.",
        ),
        query(
            "propagationPolicy",
            "string",
            "How dependents are garbage collected: Orphan, Background or Foreground.",
        ),
    ]
}

/// `ExampleCom` for `example.com`, `Core` for the core group, `Coordination` for
/// `coordination.k8s.io`: the group as it appears in operation IDs.
fn group_words(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let group = group.strip_suffix(".k8s.io").unwrap_or(group);
    group
        .split(['.', '-'])
        .map(capitalize)
        .collect::<Vec<_>>()
        .join("")
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn lower_first(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// What the operations of one resource share.
struct Operations<'a> {
    resource: &'a ResourceInfo,
    version: &'a str,
    /// `CoreV1`, `ExampleComV1`.
    id_prefix: String,
    tag: String,
}

/// One operation.
struct Operation<'a> {
    /// The HTTP method, lower case.
    method: &'static str,
    /// `x-kubernetes-action`.
    action: &'static str,
    /// The operation ID's verb: list, read, create, replace, patch, delete, deletecollection.
    verb: &'static str,
    /// The operation ID's tail after the kind: Status, Scale, ForAllNamespaces.
    suffix: &'a str,
    description: String,
    parameters: Vec<Value>,
    /// Accepted body content types and the body schema.
    body: Option<(Vec<&'static str>, String)>,
    /// (code, description) of the responses, all with `response` as schema.
    responses: Vec<(&'static str, &'static str)>,
    response: String,
    /// `x-kubernetes-group-version-kind`.
    gvk: (&'a str, &'a str, &'a str),
}

impl Operations<'_> {
    fn render(&self, operation: Operation<'_>) -> (String, Value) {
        let namespaced = if self.resource.namespaced && operation.suffix != "ForAllNamespaces" {
            "Namespaced"
        } else {
            ""
        };
        let verb = match operation.verb {
            "deletecollection" => "deleteCollection",
            verb => verb,
        };
        let operation_id = format!(
            "{verb}{}{namespaced}{}{}",
            self.id_prefix, self.resource.kind, operation.suffix
        );
        let content = |schema: &str| {
            json!({
                "application/json": {"schema": {"$ref": schema_ref(schema)}},
                "application/yaml": {"schema": {"$ref": schema_ref(schema)}},
            })
        };
        let mut responses = Map::new();
        for (code, description) in &operation.responses {
            responses.insert(
                code.to_string(),
                json!({"description": description, "content": content(&operation.response)}),
            );
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        let mut rendered = json!({
            "description": operation.description,
            "operationId": operation_id,
            "tags": [self.tag],
            "parameters": operation.parameters,
            "responses": responses,
            "x-kubernetes-action": operation.action,
            "x-kubernetes-group-version-kind": {
                "group": operation.gvk.0,
                "version": operation.gvk.1,
                "kind": operation.gvk.2,
            },
        });
        if let Some((types, schema)) = operation.body {
            let content: Map<String, Value> = types
                .into_iter()
                .map(|t| {
                    (
                        t.to_string(),
                        json!({"schema": {"$ref": schema_ref(&schema)}}),
                    )
                })
                .collect();
            rendered["requestBody"] =
                json!({"content": content, "required": operation.method != "delete"});
        }
        (operation.method.to_string(), rendered)
    }
}

fn path_item(common: Vec<Value>, operations: Vec<(String, Value)>) -> Value {
    let mut item = Map::new();
    for (method, operation) in operations {
        item.insert(method, operation);
    }
    item.insert("parameters".into(), Value::Array(common));
    Value::Object(item)
}

fn add_paths(
    paths: &mut Map<String, Value>,
    resource: &ResourceInfo,
    version: &str,
    kind_model: &str,
    list_model: &str,
) {
    let ops = Operations {
        resource,
        version,
        id_prefix: format!("{}{}", group_words(&resource.group), capitalize(version)),
        tag: format!("{}_{version}", lower_first(&group_words(&resource.group))),
    };
    let kind = resource.kind.as_str();
    let gvk = (resource.group.as_str(), ops.version, kind);
    let status_model = format!("{META}.Status");
    let delete_options = format!("{META}.DeleteOptions");
    let patch_model = format!("{META}.Patch");
    // Built-in kinds take strategic merge patches, which kubectl computes from the schemas.
    // The CRD kind is left out: its schema field is a map of schemas, which kubectl's
    // schema lookup cannot walk, so kubectl uses a JSON merge patch for it instead.
    let strategic = resource.builtin && resource.plural != "customresourcedefinitions";
    let mut patch_types = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if strategic {
        patch_types.push("application/strategic-merge-patch+json");
    }
    let write_types = vec!["application/json", "application/yaml"];

    let prefix = format!("/{}", document_path(&resource.group, version));
    let namespace = parameter(
        "namespace",
        "path",
        "string",
        "The namespace of the objects.",
    );
    let pretty = query("pretty", "string", "If 'true', the output is indented.");
    let name = parameter(
        "name",
        "path",
        "string",
        &format!("The name of the {kind}."),
    );
    let (collection, mut collection_common) = if resource.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", resource.plural),
            vec![namespace.clone()],
        )
    } else {
        (format!("{prefix}/{}", resource.plural), Vec::new())
    };
    collection_common.push(pretty.clone());
    let mut item_common = vec![name.clone()];
    if resource.namespaced {
        item_common.push(namespace.clone());
    }
    item_common.push(pretty.clone());

    let mut deletecollection_parameters = list_parameters();
    deletecollection_parameters.extend(delete_parameters());
    paths.insert(
        collection.clone(),
        path_item(
            collection_common,
            vec![
                ops.render(Operation {
                    method: "get",
                    action: "list",
                    verb: "list",
                    suffix: "",
                    description: format!("list or watch objects of kind {kind}"),
                    parameters: list_parameters(),
                    body: None,
                    responses: vec![("200", "OK")],
                    response: list_model.to_string(),
                    gvk,
                }),
                ops.render(Operation {
                    method: "post",
                    action: "post",
                    verb: "create",
                    suffix: "",
                    description: format!("create a {kind}"),
                    parameters: vec![dry_run(), field_manager(), field_validation()],
                    body: Some((write_types.clone(), kind_model.to_string())),
                    responses: vec![("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                    response: kind_model.to_string(),
                    gvk,
                }),
                ops.render(Operation {
                    method: "delete",
                    action: "deletecollection",
                    verb: "deletecollection",
                    suffix: "",
                    description: format!("delete collection of {kind}"),
                    parameters: deletecollection_parameters,
                    body: Some((write_types.clone(), delete_options.clone())),
                    responses: vec![("200", "OK")],
                    response: status_model.clone(),
                    gvk,
                }),
            ],
        ),
    );

    let item = format!("{collection}/{{name}}");
    let read = |suffix: &'static str, description: String| Operation {
        method: "get",
        action: "get",
        verb: "read",
        suffix,
        description,
        parameters: Vec::new(),
        body: None,
        responses: vec![("200", "OK")],
        response: kind_model.to_string(),
        gvk,
    };
    let replace = |suffix: &'static str, description: String| Operation {
        method: "put",
        action: "put",
        verb: "replace",
        suffix,
        description,
        parameters: vec![dry_run(), field_manager(), field_validation()],
        body: Some((write_types.clone(), kind_model.to_string())),
        responses: vec![("200", "OK"), ("201", "Created")],
        response: kind_model.to_string(),
        gvk,
    };
    let patch = |suffix: &'static str, description: String| Operation {
        method: "patch",
        action: "patch",
        verb: "patch",
        suffix,
        description,
        parameters: vec![
            dry_run(),
            field_manager(),
            field_validation(),
            query(
                "force",
                "boolean",
                "For apply patches: take over fields other managers own instead of failing with a conflict.",
            ),
        ],
        body: Some((patch_types.clone(), patch_model.clone())),
        responses: vec![("200", "OK"), ("201", "Created")],
        response: kind_model.to_string(),
        gvk,
    };
    paths.insert(
        item.clone(),
        path_item(
            item_common.clone(),
            vec![
                ops.render(read("", format!("read the specified {kind}"))),
                ops.render(replace("", format!("replace the specified {kind}"))),
                ops.render(patch("", format!("partially update the specified {kind}"))),
                ops.render(Operation {
                    method: "delete",
                    action: "delete",
                    verb: "delete",
                    suffix: "",
                    description: format!("delete a {kind}"),
                    parameters: delete_parameters(),
                    body: Some((write_types.clone(), delete_options.clone())),
                    responses: vec![("200", "OK"), ("202", "Accepted")],
                    response: status_model.clone(),
                    gvk,
                }),
            ],
        ),
    );

    if resource.status_subresource {
        paths.insert(
            format!("{item}/status"),
            path_item(
                item_common.clone(),
                vec![
                    ops.render(read(
                        "Status",
                        format!("read status of the specified {kind}"),
                    )),
                    ops.render(replace(
                        "Status",
                        format!("replace status of the specified {kind}"),
                    )),
                    ops.render(patch(
                        "Status",
                        format!("partially update status of the specified {kind}"),
                    )),
                ],
            ),
        );
    }

    if resource.scale.is_some() {
        let scale_model = format!("{}.Scale", schemas::AUTOSCALING);
        let scale_gvk = ("autoscaling", "v1", "Scale");
        let mut read_scale = read("Scale", format!("read scale of the specified {kind}"));
        let mut replace_scale = replace("Scale", format!("replace scale of the specified {kind}"));
        replace_scale.body = Some((write_types.clone(), scale_model.clone()));
        let mut patch_scale = patch(
            "Scale",
            format!("partially update scale of the specified {kind}"),
        );
        patch_scale.body = Some((
            vec![
                "application/json-patch+json",
                "application/merge-patch+json",
            ],
            patch_model.clone(),
        ));
        for operation in [&mut read_scale, &mut replace_scale, &mut patch_scale] {
            operation.gvk = scale_gvk;
            operation.response = scale_model.clone();
        }
        paths.insert(
            format!("{item}/scale"),
            path_item(
                item_common.clone(),
                vec![
                    ops.render(read_scale),
                    ops.render(replace_scale),
                    ops.render(patch_scale),
                ],
            ),
        );
    }

    if resource.builtin && resource.group.is_empty() && resource.plural == "namespaces" {
        paths.insert(
            format!("{item}/finalize"),
            path_item(
                item_common.clone(),
                vec![ops.render(replace(
                    "Finalize",
                    format!("replace finalize of the specified {kind}"),
                ))],
            ),
        );
    }

    if resource.namespaced {
        paths.insert(
            format!("{prefix}/{}", resource.plural),
            path_item(
                vec![pretty],
                vec![ops.render(Operation {
                    method: "get",
                    action: "list",
                    verb: "list",
                    suffix: "ForAllNamespaces",
                    description: format!("list or watch objects of kind {kind}"),
                    parameters: list_parameters(),
                    body: None,
                    responses: vec![("200", "OK")],
                    response: list_model.to_string(),
                    gvk,
                })],
            ),
        );
    }
}
