//! Creates: metadata validation, the type and namespace checks every write makes, generated names.

use axum::response::Response;
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause, Subject};
use crate::query::Query;
use crate::server::ApiState;
use crate::{names, object};

use super::*;

pub(super) fn require_string_map(
    metadata: &Map<String, Value>,
    field: &str,
    causes: &mut Vec<Cause>,
) {
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
pub(super) fn validate_metadata(target: &Target, object: &Value) -> Result<(), ApiError> {
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
        if let Some(value) = metadata.get(field)
            && !value.is_string()
            && !value.is_null()
        {
            causes.push(Cause {
                reason: "FieldValueTypeInvalid".into(),
                message: format!("Invalid value: {value}: must be a string"),
                field: format!("metadata.{field}"),
            });
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
            if let Some(value) = value.as_str()
                && let Err(messages) = names::is_valid_label_value(value)
            {
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
pub(super) fn check_type(target: &Target, object: &mut Value) -> Result<(), ApiError> {
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
pub(super) async fn check_namespace(
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
pub(super) async fn namespace_terminating_in_store(
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

pub(super) fn random_suffix() -> String {
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

pub(super) async fn create_as(
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
    crate::strategy::prepare_create(target, &mut object);
    let mut attempts = 0;
    loop {
        if let Some(base) = &generate_name
            && (object::name(&object).is_none() || attempts > 0)
        {
            let name = format!("{}{}", names::generated_name_base(base), random_suffix());
            object::metadata_mut(&mut object).insert("name".into(), json!(name));
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
        crate::strategy::validate(state, target, &object, None)?;
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
