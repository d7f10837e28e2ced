//! The REST verbs on resources: get, list, create, update, patch, delete, deletecollection
//! (watch is in `watch.rs`), with kube-apiserver's semantics for metadata the server owns,
//! optimistic concurrency, finalizers and the status subresource.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use base64::Engine;
use corral_store::{RangeRequest, Revision};
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause, Subject};
use crate::query::Query;
use crate::registry::ResourceInfo;
use crate::server::ApiState;
use crate::{names, object, selector};

/// What a resource request addresses, parsed from its path.
#[derive(Clone, Debug)]
pub struct Target {
    pub resource: Arc<ResourceInfo>,
    /// The version the client asked for (responses are in this version).
    pub version: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl Target {
    pub fn subject<'a>(&'a self, name: &'a str) -> Subject<'a> {
        Subject {
            resource: &self.resource.plural,
            group: &self.resource.group,
            name,
        }
    }

    fn key(&self, name: &str) -> String {
        self.resource.key(self.namespace.as_deref(), name)
    }

    /// The key prefix of a collection: the resource, narrowed to the namespace if any.
    pub fn collection_prefix(&self) -> String {
        match &self.namespace {
            Some(namespace) if self.resource.namespaced => {
                format!("{}{namespace}/", self.resource.key_prefix())
            }
            _ => self.resource.key_prefix(),
        }
    }

    /// Rewrites an object read from storage into the requested version (conversion
    /// strategy None: only `apiVersion` changes).
    pub fn to_request_version(&self, object: &mut Value) {
        crate::conversion::from_storage(&self.resource, object);
        crate::schema::on_read(&self.resource, &self.version, object);
        self.set_request_type(object);
    }

    /// [`Self::to_request_version`] of an object this request has just admitted. When the
    /// request is in the storage version, admission pruned and defaulted the object with the
    /// very schema a read applies, so the read's pruning and defaulting (a walk of the whole
    /// object) would change nothing and is skipped.
    pub fn admitted_to_request_version(&self, object: &mut Value) {
        if self.version != self.resource.storage_version() {
            return self.to_request_version(object);
        }
        crate::conversion::from_storage(&self.resource, object);
        self.set_request_type(object);
    }

    fn set_request_type(&self, object: &mut Value) {
        if let Some(map) = object.as_object_mut() {
            map.insert(
                "apiVersion".into(),
                Value::String(self.resource.api_version(&self.version)),
            );
            map.insert("kind".into(), Value::String(self.resource.kind.clone()));
        }
    }

    /// Whether objects read from storage must be converted for this request (otherwise
    /// stored bytes can be sent as they are).
    pub fn needs_conversion(&self) -> bool {
        self.version != self.resource.storage_version()
            || crate::conversion::converts(&self.resource)
            || crate::schema::changes_reads(&self.resource)
    }
}

pub fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = crate::object::fields_text::to_vec(value);
    (
        code,
        [(http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

// ---------------------------------------------------------------------------------------
// Reads
// ---------------------------------------------------------------------------------------

pub async fn get(state: &ApiState, target: &Target, name: &str) -> Result<Value, ApiError> {
    let kv = state
        .store
        .get(&target.key(name), None)
        .await?
        .ok_or_else(|| ApiError::not_found(target.subject(name)))?;
    let mut object = object::decode_stored(&kv)?;
    target.to_request_version(&mut object);
    Ok(object)
}

/// A continue token, as kube-apiserver encodes it: base64 of
/// `{"v":"meta.k8s.io/v1","rv":<list revision>,"start":"<next key, relative to the prefix>"}`.
#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: Revision,
    start: String,
}

fn encode_continue(revision: Revision, start: &str) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv: revision,
        start: start.to_string(),
    };
    // fields_text: a continue token.
    base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&token).unwrap())
}

fn decode_continue(raw: &str) -> Result<ContinueToken, ApiError> {
    let invalid = || ApiError::bad_request(format!("invalid continue token: {raw:?}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(raw))
        .map_err(|_| invalid())?;
    let token: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if token.v != "meta.k8s.io/v1" || token.rv <= 0 || token.start.contains("..") {
        return Err(invalid());
    }
    Ok(token)
}

/// The list and watch filters of a request.
pub struct Filter {
    pub labels: Option<selector::LabelSelector>,
    pub fields: Option<selector::FieldSelector>,
    pub resource: Arc<ResourceInfo>,
}

impl Filter {
    pub fn from_query(query: &Query, resource: &Arc<ResourceInfo>) -> Result<Filter, ApiError> {
        let labels = match query.label_selector.as_deref() {
            Some(raw) if !raw.trim().is_empty() => Some(
                selector::LabelSelector::parse(raw)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?,
            ),
            _ => None,
        };
        let fields = match query.field_selector.as_deref() {
            Some(raw) if !raw.trim().is_empty() => {
                let parsed = selector::FieldSelector::parse(raw)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                for field in parsed.fields() {
                    if !field_supported(resource, field) {
                        return Err(ApiError::bad_request(format!(
                            "field label not supported: {field}"
                        )));
                    }
                }
                Some(parsed)
            }
            _ => None,
        };
        Ok(Filter {
            labels,
            fields,
            resource: resource.clone(),
        })
    }

    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    pub fn matches(&self, object: &Value) -> bool {
        if let Some(labels) = &self.labels {
            if !labels.matches_object(object) {
                return false;
            }
        }
        if let Some(fields) = &self.fields {
            if !fields.matches(|field| field_value(&self.resource, object, field)) {
                return false;
            }
        }
        true
    }
}

fn is_core_event(resource: &ResourceInfo) -> bool {
    resource.group.is_empty() && resource.plural == "events"
}

fn field_supported(resource: &ResourceInfo, field: &str) -> bool {
    match field {
        "metadata.name" => true,
        "metadata.namespace" => resource.namespaced,
        "type" if resource.plural == "secrets" && resource.group.is_empty() => true,
        "status.phase" if resource.plural == "namespaces" && resource.group.is_empty() => true,
        "spec.nodeName"
        | "status.phase"
        | "spec.restartPolicy"
        | "spec.schedulerName"
        | "spec.serviceAccountName"
        | "status.podIP"
        | "status.nominatedNodeName"
            if resource.plural == "pods" && resource.group.is_empty() =>
        {
            true
        }
        "spec.unschedulable" if resource.plural == "nodes" && resource.group.is_empty() => true,
        _ if is_core_event(resource) => matches!(
            field,
            "involvedObject.kind"
                | "involvedObject.namespace"
                | "involvedObject.name"
                | "involvedObject.uid"
                | "involvedObject.apiVersion"
                | "involvedObject.resourceVersion"
                | "involvedObject.fieldPath"
                | "reason"
                | "reportingComponent"
                | "source"
                | "type"
        ),
        _ => false,
    }
}

fn field_value(resource: &ResourceInfo, object: &Value, field: &str) -> Option<String> {
    let string_at = |path: &[&str]| -> Option<String> {
        let mut node = object;
        for segment in path {
            node = node.get(*segment)?;
        }
        node.as_str().map(str::to_string)
    };
    match field {
        "metadata.name" => Some(object::name(object).unwrap_or("").to_string()),
        "metadata.namespace" => Some(object::namespace(object).unwrap_or("").to_string()),
        "source" if is_core_event(resource) => {
            Some(string_at(&["source", "component"]).unwrap_or_default())
        }
        other => Some(string_at(&other.split('.').collect::<Vec<_>>()).unwrap_or_default()),
    }
}

pub async fn list(state: &ApiState, target: &Target, query: &Query) -> Result<Value, ApiError> {
    let filter = Filter::from_query(query, &target.resource)?;
    let prefix = target.collection_prefix();
    let (revision, mut start) = match &query.continue_token {
        Some(raw) => {
            let token = decode_continue(raw)?;
            (Some(token.rv), Some(format!("{prefix}{}", token.start)))
        }
        None => (list_revision(state, query).await?, None),
    };
    let limit = query.limit.unwrap_or(0);
    let mut items = Vec::new();
    let mut served_at = revision;
    let mut continue_from = None;
    'pages: loop {
        let page = state
            .store
            .range(RangeRequest {
                prefix: prefix.clone(),
                start: start.clone(),
                limit: if limit > 0 { limit + 1 } else { 0 },
                revision: served_at,
            })
            .await
            .map_err(|e| match e {
                corral_store::Error::Compacted { .. } if query.continue_token.is_some() => {
                    ApiError::gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
                }
                other => other.into(),
            })?;
        served_at = Some(page.revision);
        let count = page.kvs.len();
        for (index, kv) in page.kvs.iter().enumerate() {
            if limit > 0 && items.len() == limit {
                continue_from = Some(kv.key.clone());
                break 'pages;
            }
            // Labels first, from the stored bytes: most objects of a label-selected list are
            // not selected, and skipping their full decode is most of the list's cost.
            let unselected = filter.labels.as_ref().is_some_and(|labels| {
                object::stored_labels(&kv.value).is_some_and(|stored| !labels.matches(&stored))
            });
            if !unselected {
                let mut object = object::decode_stored(kv)?;
                if filter.matches(&object) {
                    target.to_request_version(&mut object);
                    items.push(object);
                }
            }
            if index + 1 == count && !page.more {
                break 'pages;
            }
        }
        match page.kvs.last() {
            Some(last) if page.more => start = Some(format!("{}\0", last.key)),
            _ => break,
        }
    }
    let revision = served_at.expect("at least one page was read");
    // Keep the list revision the client asked for when it is newer than what the store saw
    // (a NotOlderThan read is served at the current revision, which is at least that).
    let mut metadata = Map::new();
    metadata.insert("resourceVersion".into(), json!(revision.to_string()));
    if let Some(next) = continue_from {
        let relative = next.strip_prefix(&prefix).unwrap_or(&next);
        metadata.insert(
            "continue".into(),
            json!(encode_continue(revision, relative)),
        );
    }
    Ok(json!({
        "kind": target.resource.list_kind,
        "apiVersion": target.resource.api_version(&target.version),
        "metadata": metadata,
        "items": items,
    }))
}

/// The revision a list without a continue token reads at (`None`: the current one), after
/// kube-apiserver's resourceVersion / resourceVersionMatch rules.
async fn list_revision(state: &ApiState, query: &Query) -> Result<Option<Revision>, ApiError> {
    let requested = match query.resource_version.as_deref() {
        None => {
            if query.resource_version_match.is_some() {
                return Err(ApiError::bad_request(
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            return Ok(None);
        }
        Some(raw) => object::parse_resource_version(raw)?,
    };
    match query.resource_version_match.as_deref() {
        Some("Exact") => {
            if requested == 0 {
                return Err(ApiError::bad_request(
                    "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
            Ok(Some(requested))
        }
        None | Some("NotOlderThan") => {
            if requested > 0 {
                let current = state.store.current_revision().await?;
                if requested > current {
                    return Err(ApiError::timeout(format!(
                        "Too large resource version: {requested}, current: {current}"
                    )));
                }
            }
            Ok(None)
        }
        Some(other) => Err(ApiError::bad_request(format!(
            "resourceVersionMatch {other:?} is invalid: must be Exact or NotOlderThan"
        ))),
    }
}

// ---------------------------------------------------------------------------------------
// Writes
// ---------------------------------------------------------------------------------------

fn require_string_map(metadata: &Map<String, Value>, field: &str, causes: &mut Vec<Cause>) {
    match metadata.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (key, value) in map {
                if !value.is_string() {
                    causes.push(Cause {
                        reason: "FieldValueTypeInvalid".into(),
                        message: format!("Invalid value: {value}: must be a string"),
                        field: format!("metadata.{field}.{key}"),
                    });
                }
            }
        }
        Some(other) => causes.push(Cause {
            reason: "FieldValueTypeInvalid".into(),
            message: format!("Invalid value: {other}: must be a map of strings"),
            field: format!("metadata.{field}"),
        }),
    }
}

/// Checks what every object must satisfy: a valid name, string-valued labels and annotations
/// with valid label syntax.
fn validate_metadata(target: &Target, object: &Value) -> Result<(), ApiError> {
    let name = object::name(object).unwrap_or("").to_string();
    let mut causes = Vec::new();
    let Some(metadata) = object::metadata(object) else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    for field in [
        "name",
        "namespace",
        "generateName",
        "uid",
        "resourceVersion",
    ] {
        if let Some(value) = metadata.get(field) {
            if !value.is_string() && !value.is_null() {
                causes.push(Cause {
                    reason: "FieldValueTypeInvalid".into(),
                    message: format!("Invalid value: {value}: must be a string"),
                    field: format!("metadata.{field}"),
                });
            }
        }
    }
    let name_errors = if target.resource.plural == "namespaces" && target.resource.group.is_empty()
    {
        names::is_dns1123_label(&name)
    } else if crate::rbac::kind_of(target).is_some() {
        // RBAC names need only be path segments (`system:discovery`), as kube's
        // `ValidateRBACName`; the check below.
        Ok(())
    } else {
        names::is_dns1123_subdomain(&name)
    };
    if let Err(messages) = name_errors {
        for message in messages {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {name:?}: {message}"),
                field: "metadata.name".into(),
            });
        }
    }
    if let Err(messages) = names::validate_path_segment_name(&name, false) {
        for message in messages {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {name:?}: {message}"),
                field: "metadata.name".into(),
            });
        }
    }
    require_string_map(metadata, "labels", &mut causes);
    require_string_map(metadata, "annotations", &mut causes);
    if let Some(labels) = metadata.get("labels").and_then(Value::as_object) {
        for (key, value) in labels {
            if let Err(messages) = names::is_qualified_name(key) {
                for message in messages {
                    causes.push(Cause {
                        reason: "FieldValueInvalid".into(),
                        message: format!("Invalid value: {key:?}: {message}"),
                        field: "metadata.labels".into(),
                    });
                }
            }
            if let Some(value) = value.as_str() {
                if let Err(messages) = names::is_valid_label_value(value) {
                    for message in messages {
                        causes.push(Cause {
                            reason: "FieldValueInvalid".into(),
                            message: format!("Invalid value: {value:?}: {message}"),
                            field: format!("metadata.labels.{key}"),
                        });
                    }
                }
            }
        }
    }
    if let Some(finalizers) = metadata.get("finalizers") {
        let valid = finalizers
            .as_array()
            .is_some_and(|list| list.iter().all(Value::is_string));
        if !valid && !finalizers.is_null() {
            causes.push(Cause {
                reason: "FieldValueTypeInvalid".into(),
                message: "Invalid value: must be a list of strings".into(),
                field: "metadata.finalizers".into(),
            });
        }
        causes.extend(crate::gc::validate_finalizers(&object::finalizers(object)));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(
            target.subject(&name),
            &target.resource.kind,
            causes,
        ))
    }
}

/// Checks `apiVersion` and `kind` of a body against the URL, and fills them in when absent.
fn check_type(target: &Target, object: &mut Value) -> Result<(), ApiError> {
    let expected_version = target.resource.api_version(&target.version);
    let map = object.as_object_mut().expect("bodies are objects");
    match map.get("apiVersion") {
        None | Some(Value::Null) => {}
        Some(Value::String(version)) if *version == expected_version => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({expected_version})",
                other.as_str().unwrap_or(&other.to_string())
            )));
        }
    }
    match map.get("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(kind)) if *kind == target.resource.kind => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({}) does not match the expected kind ({})",
                other.as_str().unwrap_or(&other.to_string()),
                target.resource.kind
            )));
        }
    }
    // Stored objects carry the storage version, in the storage shape.
    crate::conversion::to_storage(&target.resource, object);
    let (api_version, kind) = crate::conversion::storage_type(&target.resource);
    let map = object.as_object_mut().expect("bodies are objects");
    map.insert("apiVersion".into(), Value::String(api_version));
    map.insert("kind".into(), Value::String(kind));
    Ok(())
}

/// Checks the namespace of the body against the URL and that the namespace can take a new
/// object.
async fn check_namespace(
    state: &ApiState,
    target: &Target,
    object: &mut Value,
    creating: bool,
) -> Result<(), ApiError> {
    let metadata = object::metadata_mut(object);
    if !target.resource.namespaced {
        metadata.remove("namespace");
        return Ok(());
    }
    let namespace = target.namespace.clone().ok_or_else(|| {
        ApiError::bad_request("a namespace is required for a namespaced resource")
    })?;
    match metadata.get("namespace").and_then(Value::as_str) {
        None | Some("") => {
            metadata.insert("namespace".into(), Value::String(namespace.clone()));
        }
        Some(given) if given == namespace => {}
        Some(_) => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    if creating {
        let terminating = match state.namespace_cache.lookup(&namespace) {
            Some(terminating) => terminating,
            None => namespace_terminating_in_store(state, &namespace).await?,
        };
        if terminating {
            let name = object::name(object).unwrap_or("").to_string();
            return Err(ApiError::forbidden(
                target.subject(&name),
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            ));
        }
    }
    Ok(())
}

/// Whether a namespace the cache does not know is terminating, read from the store; a
/// missing namespace is a 404.
async fn namespace_terminating_in_store(
    state: &ApiState,
    namespace: &str,
) -> Result<bool, ApiError> {
    let Some(kv) = state
        .store
        .get(&crate::namespaces::key(namespace), None)
        .await?
    else {
        return Err(ApiError::not_found(Subject {
            resource: "namespaces",
            group: "",
            name: namespace,
        }));
    };
    let stored = object::decode_stored(&kv)?;
    state.namespace_cache.record(&stored);
    Ok(object::deletion_timestamp(&stored).is_some())
}

fn random_suffix() -> String {
    use rand::Rng;
    // kube-apiserver's alphabet: no vowels and no characters that look alike.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

pub async fn create(
    state: &ApiState,
    target: &Target,
    query: &Query,
    object: Value,
) -> Result<Response, ApiError> {
    create_as(
        state,
        target,
        query,
        object,
        crate::apply::Operation::Update,
    )
    .await
}

/// Creates an object made by server-side apply, whose managedFields are already computed.
pub async fn create_applied(
    state: &ApiState,
    target: &Target,
    query: &Query,
    object: Value,
) -> Result<Response, ApiError> {
    create_as(state, target, query, object, crate::apply::Operation::Apply).await
}

async fn create_as(
    state: &ApiState,
    target: &Target,
    query: &Query,
    mut object: Value,
    operation: crate::apply::Operation,
) -> Result<Response, ApiError> {
    check_type(target, &mut object)?;
    check_namespace(state, target, &mut object, true).await?;
    let generate_name = object::meta_str(&object, "generateName")
        .filter(|g| !g.is_empty())
        .map(str::to_string);
    if object::name(&object).is_none() && generate_name.is_none() {
        return Err(ApiError::invalid(
            target.subject(""),
            &target.resource.kind,
            vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: name or generateName is required".into(),
                field: "metadata.name".into(),
            }],
        ));
    }
    {
        let metadata = object::metadata_mut(&mut object);
        for server_owned in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            metadata.remove(server_owned);
        }
        metadata.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        metadata.insert("creationTimestamp".into(), json!(object::now_rfc3339()));
        if target.resource.tracks_generation {
            metadata.insert("generation".into(), json!(1));
        } else {
            metadata.remove("generation");
        }
    }
    if target.resource.status_subresource && !target.resource.builtin {
        // A custom resource's status is written through /status only.
        object.as_object_mut().unwrap().remove("status");
    }
    crate::hooks::prepare_create(target, &mut object)?;
    let mut attempts = 0;
    loop {
        if let Some(base) = &generate_name {
            if object::name(&object).is_none() || attempts > 0 {
                let name = format!("{}{}", names::generated_name_base(base), random_suffix());
                object::metadata_mut(&mut object).insert("name".into(), json!(name));
            }
        }
        // A generated name may clash, and the retry starts again from the object as it was
        // before admission; otherwise there is no retry, and no copy to keep.
        let mut admitted = if generate_name.is_some() {
            object.clone()
        } else {
            std::mem::take(&mut object)
        };
        let warnings = crate::admission::admit(
            state,
            &crate::admission::Request {
                operation: crate::admission::Operation::Create,
                target,
                query,
                old: None,
            },
            &mut admitted,
        )
        .await?;
        let mut object = admitted;
        crate::apply::track(target, query, None, &mut object, operation);
        validate_metadata(target, &object)?;
        crate::hooks::validate(state, target, &object, None)?;
        let name = object::name(&object).unwrap_or("").to_string();
        let respond = |code: StatusCode, object: &Value| {
            crate::admission::with_warnings(json_response(code, object), &warnings)
        };
        if query.dry_run {
            target.admitted_to_request_version(&mut object);
            return Ok(respond(StatusCode::CREATED, &object));
        }
        let key = target.key(&name);
        let encoded = object::Encoded::new(&object);
        let _in_flight = in_flight(state, target, &key);
        match state.store.create(&key, encoded.bytes.clone()).await {
            Ok(revision) => {
                let answer = written(state, target, &key, revision, encoded, object).await;
                return Ok(crate::admission::with_warnings(
                    json_bytes_response(StatusCode::CREATED, answer),
                    &warnings,
                ));
            }
            Err(corral_store::Error::AlreadyExists { .. })
                if generate_name.is_some() && attempts < 8 =>
            {
                attempts += 1;
            }
            Err(corral_store::Error::AlreadyExists { .. }) => {
                return Err(ApiError::already_exists(target.subject(&name)));
            }
            Err(other) => return Err(other.into()),
        }
    }
}

/// How an update request turns the current object into the new one.
pub enum Change {
    /// PUT: the body is the new object.
    Replace(Value),
    /// PATCH: a function of the current object.
    Patch(Box<dyn Fn(&Value) -> Result<Value, ApiError> + Send + Sync>),
    /// Server-side apply: like `Patch`, but the function also computes managedFields (see
    /// `apply/`), so no `Update` operation is recorded for it.
    Apply(Box<dyn Fn(&Value) -> Result<Value, ApiError> + Send + Sync>),
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
/// the revision, runs the kind's hooks, hands the object to the resource's watch cache (whose
/// feed then need not decode the write's event, and whose next update of it can start from
/// it) and returns the answer's JSON, in the request's version. When that version is the
/// stored form, the answer and the cache share one object and one serialization of it.
async fn written(
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
    crate::hooks::after_write(state, target, &object).await;
    answer
}

/// Marks a write on `key` in flight for the resource's watch cache, if it runs (see
/// `watch_cache::Cacher::begin_write`); the write ends when the guard is dropped.
fn in_flight(state: &ApiState, target: &Target, key: &str) -> Option<crate::watch_cache::InFlight> {
    state
        .hub
        .running(&target.resource.key_prefix())
        .map(|cacher| cacher.begin_write(key))
}

fn to_json(value: &Value) -> bytes::Bytes {
    bytes::Bytes::from(crate::object::fields_text::to_vec(value))
}

/// A JSON answer already serialized.
fn json_bytes_response(code: StatusCode, body: bytes::Bytes) -> Response {
    (
        code,
        [(http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The watch cache's copy of the object at `key`, if its resource's cacher runs and holds it;
/// never for a dry run, which writes nothing that would check the copy against the store.
fn cached_current(
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
async fn read_base(
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
fn in_request_version(
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
struct Base {
    mod_revision: Revision,
    /// The stored bytes.
    value: bytes::Bytes,
    /// Decoded, in the request's version.
    object: Arc<Value>,
}

/// How an update attempt ended, short of an error.
enum Attempt {
    Done(Response),
    /// Start over from the store.
    Again,
}

/// One attempt of [`update`] from `base`; `from_cache`: `base` came from the watch cache and
/// may be stale, so only a successful conditional write is answered from it.
#[allow(clippy::too_many_arguments)]
async fn update_once(
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
    if let Some(expected) = &precondition {
        if object::parse_resource_version(expected)? != mod_revision {
            return Err(ApiError::stale(target.subject(name)));
        }
    }
    if let Some(uid) = object::uid(&new) {
        if !uid.is_empty() && Some(uid) != object::uid(&current) {
            return Err(ApiError::conflict(
                target.subject(name),
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    object::uid(&current).unwrap_or("")
                ),
            ));
        }
    }
    let mut new = if status_only {
        status_update(&current, new)
    } else {
        main_update(target, &current, new)
    };
    preserve_server_metadata(target, &current, &mut new);
    crate::hooks::prepare_update(target, &current, &mut new)?;
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
    crate::hooks::validate(state, target, &new, Some(&current))?;

    // The last finalizer of a deleted object is gone: delete it for real.
    if object::deletion_timestamp(&new).is_some()
        && crate::hooks::finalizers_on_delete(target, &new).is_empty()
    {
        if query.dry_run {
            return Ok(Attempt::Done(respond(&new)));
        }
        return match state.store.delete(key, mod_revision).await {
            Ok((revision, _)) => {
                object::set_resource_version(&mut new, revision);
                crate::hooks::after_delete(state, target, &new).await;
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
    if encoded.bytes == stored {
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
fn main_update(target: &Target, current: &Value, mut new: Value) -> Value {
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
fn status_update(current: &Value, mut new: Value) -> Value {
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
fn same_but_managed_fields(current: &Map<String, Value>, new: &Map<String, Value>) -> bool {
    let others = current.keys().filter(|key| *key != "managedFields").count();
    others == new.len()
        && current
            .iter()
            .filter(|(key, _)| *key != "managedFields")
            .all(|(key, value)| new.get(key) == Some(value))
}

/// [`status_update`] of objects that are not JSON objects: `current` with `new`'s status
/// and managedFields.
fn status_update_by_copy(current: &Value, new: Value) -> Value {
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
fn preserve_server_metadata(target: &Target, current: &Value, new: &mut Value) {
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

fn check_finalizers(target: &Target, current: &Value, new: &Value) -> Result<(), ApiError> {
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
async fn delete_once(
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
    if let Some(uid) = &options.uid {
        if Some(uid.as_str()) != object::uid(&current) {
            return Err(ApiError::conflict(
                target.subject(name),
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    object::uid(&current).unwrap_or("")
                ),
            ));
        }
    }
    if let Some(rv) = &options.resource_version {
        if object::parse_resource_version(rv)? != mod_revision {
            return Err(ApiError::conflict(
                target.subject(name),
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {mod_revision}"
                ),
            ));
        }
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
    let finalizers = crate::hooks::finalizers_on_delete(target, &marked);
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
        crate::hooks::prepare_delete(target, &mut marked);
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
                crate::hooks::after_write(state, target, &marked).await;
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
            crate::hooks::after_delete(state, target, &current).await;
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A status write built from the request's object gives what copying the current object
    /// and taking only status and managedFields from the request gives.
    #[test]
    fn status_update_keeps_everything_but_status_and_managed_fields() {
        let current = json!({
            "apiVersion": "x/v1", "kind": "K",
            "metadata": {"name": "a", "labels": {"l": "1"}, "managedFields": [{"manager": "m"}]},
            "spec": {"size": 1},
            "status": {"ready": false},
        });
        let requests = [
            json!({"apiVersion": "x/v1", "kind": "K",
                   "metadata": {"name": "a", "labels": {"l": "1"}, "managedFields": [{"manager": "n"}]},
                   "spec": {"size": 1}, "status": {"ready": true}}),
            json!({"apiVersion": "x/v1", "kind": "K",
                   "metadata": {"name": "a", "labels": {"l": "2"}},
                   "spec": {"size": 9}, "extra": 1}),
            json!({"kind": "K", "metadata": "odd", "status": {"ready": true}}),
            json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "labels": {"l": "1"}},
                   "status": {"ready": true}}),
        ];
        for request in requests {
            assert_eq!(
                super::status_update(&current, request.clone()),
                super::status_update_by_copy(&current, request.clone()),
                "{request}"
            );
        }
    }
}
