//! What is particular to a built-in resource, called by the generic verbs in `rest.rs`:
//! namespaces have a lifecycle and finalizers in their spec, CRDs define served resources,
//! Secrets carry base64 data, CertificateSigningRequests record their requester.

use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::rest::Target;
use crate::server::ApiState;
use crate::{crd, namespaces, object};

fn is(target: &Target, group: &str, plural: &str) -> bool {
    target.resource.builtin && target.resource.group == group && target.resource.plural == plural
}

pub fn is_namespaces(target: &Target) -> bool {
    is(target, "", "namespaces")
}

pub fn is_crds(target: &Target) -> bool {
    is(target, "apiextensions.k8s.io", "customresourcedefinitions")
}

/// Server-set fields of a new object.
pub fn prepare_create(target: &Target, object: &mut Value) -> Result<(), ApiError> {
    if is_namespaces(target) {
        let map = object.as_object_mut().unwrap();
        map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
        map.insert("status".into(), json!({"phase": "Active"}));
    } else if is_crds(target) {
        crd::prepare(object, None);
        let metadata = object::metadata_mut(object);
        let finalizers = metadata.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut() {
            if !list.iter().any(|f| f == crd::CLEANUP_FINALIZER) {
                list.push(json!(crd::CLEANUP_FINALIZER));
            }
        }
    } else if let Some(kind) = crate::webhook::configuration_kind(target) {
        crate::webhook::prepare(kind, object);
    } else if let Some(kind) = crate::rbac::kind_of(target) {
        crate::rbac::prepare(kind, object);
    } else if crate::certificates::is_csr(target) {
        crate::certificates::prepare_create(object, crate::rbac::requester().as_deref());
    } else if is(target, "", "secrets") {
        merge_string_data(object);
        let map = object.as_object_mut().unwrap();
        let empty_type = map
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if empty_type {
            map.insert("type".into(), json!("Opaque"));
        }
    }
    Ok(())
}

/// A Secret's `stringData` is write-only: its entries are base64-encoded into `data` (taking
/// precedence over `data` entries of the same key) and the field is dropped, as kube-apiserver
/// does.
fn merge_string_data(secret: &mut Value) {
    use base64::Engine;
    let Some(map) = secret.as_object_mut() else {
        return;
    };
    let Some(string_data) = map.remove("stringData") else {
        return;
    };
    let Some(entries) = string_data.as_object() else {
        return;
    };
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    let data = data.as_object_mut().expect("just made an object");
    for (key, value) in entries {
        let text = match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        data.insert(
            key.clone(),
            json!(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
}

/// Server-set fields of an updated object.
pub fn prepare_update(target: &Target, current: &Value, new: &mut Value) -> Result<(), ApiError> {
    if is_namespaces(target) {
        // The phase is the server's; spec.finalizers may only shrink through /finalize.
        let phase = current
            .pointer("/status/phase")
            .cloned()
            .unwrap_or(json!("Active"));
        let map = new.as_object_mut().unwrap();
        let status = map.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert("phase".into(), phase);
        }
        if target.subresource.as_deref() != Some("finalize") {
            let spec = current.get("spec").cloned().unwrap_or(json!({}));
            map.insert("spec".into(), spec);
        }
    } else if is_crds(target) {
        crd::prepare(new, Some(current));
    } else if let Some(kind) = crate::webhook::configuration_kind(target) {
        crate::webhook::prepare(kind, new);
    } else if let Some(kind) = crate::rbac::kind_of(target) {
        crate::rbac::prepare(kind, new);
    } else if crate::certificates::is_csr(target) {
        crate::certificates::prepare_update(target.subresource.as_deref(), current, new);
    } else if is(target, "", "secrets") {
        merge_string_data(new);
        let old_type = current.get("type").cloned();
        let map = new.as_object_mut().unwrap();
        if map
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            if let Some(old_type) = old_type {
                map.insert("type".into(), old_type);
            }
        }
    }
    Ok(())
}

/// Validation beyond metadata for built-in kinds. `old` is set for updates.
pub fn validate(
    state: &ApiState,
    target: &Target,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    if is_crds(target) {
        causes.extend(crd::validate(object));
        if let Some(old) = old {
            causes.extend(crd::validate_update(old, object));
        }
    } else if let Some(kind) = crate::webhook::configuration_kind(target) {
        causes.extend(crate::webhook::validate_configuration(kind, object));
    } else if let Some(kind) = crate::rbac::kind_of(target) {
        crate::rbac::admit(state, kind, target, object, old)?;
    } else if crate::certificates::is_csr(target) {
        causes.extend(crate::certificates::validate(object));
    } else if is(target, "", "secrets") {
        use base64::Engine;
        if let Some(data) = object.get("data") {
            match data.as_object() {
                Some(map) => {
                    for (key, value) in map {
                        let valid = value.as_str().is_some_and(|s| {
                            base64::engine::general_purpose::STANDARD.decode(s).is_ok()
                        });
                        if !valid {
                            causes.push(Cause {
                                reason: "FieldValueInvalid".into(),
                                message: "Invalid value: must be a base64-encoded string".into(),
                                field: format!("data[{key}]"),
                            });
                        }
                    }
                }
                None if data.is_null() => {}
                None => causes.push(Cause {
                    reason: "FieldValueTypeInvalid".into(),
                    message: "Invalid value: must be a map of base64-encoded strings".into(),
                    field: "data".into(),
                }),
            }
        }
        if let (Some(old), Some(new_type)) = (old, object.get("type")) {
            if old.get("type").is_some_and(|t| t != new_type) {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: "Invalid value: field is immutable".into(),
                    field: "type".into(),
                });
            }
        }
    } else if is(target, "", "configmaps") {
        for field in ["data", "binaryData"] {
            if let Some(data) = object.get(field) {
                let valid = data.is_null()
                    || data
                        .as_object()
                        .is_some_and(|map| map.values().all(Value::is_string));
                if !valid {
                    causes.push(Cause {
                        reason: "FieldValueTypeInvalid".into(),
                        message: "Invalid value: must be a map of strings".into(),
                        field: field.into(),
                    });
                }
            }
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        let name = object::name(object).unwrap_or("");
        Err(ApiError::invalid(
            target.subject(name),
            &target.resource.kind,
            causes,
        ))
    }
}

/// The finalizers that keep an object from being deleted at once.
pub fn finalizers_on_delete(target: &Target, object: &Value) -> Vec<String> {
    let mut finalizers = object::finalizers(object);
    if is_namespaces(target) {
        if let Some(list) = object.pointer("/spec/finalizers").and_then(Value::as_array) {
            finalizers.extend(list.iter().filter_map(|f| f.as_str().map(str::to_string)));
        }
    }
    finalizers
}

/// Changes to an object that is being marked for deletion.
pub fn prepare_delete(target: &Target, object: &mut Value) {
    if is_namespaces(target) {
        let map = object.as_object_mut().unwrap();
        let status = map.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert("phase".into(), json!("Terminating"));
        }
    }
}

/// Effects of a successful write on the server itself.
pub async fn after_write(state: &ApiState, target: &Target, object: &Value) {
    if is_crds(target) {
        if object::deletion_timestamp(object).is_some() {
            let cleaning_up = object::finalizers(object)
                .iter()
                .any(|f| f == crd::CLEANUP_FINALIZER);
            if cleaning_up {
                crd::start_cleanup(state.self_handle(), object.clone());
            }
            return;
        }
        if let Some(resource) = crd::resource_info(object) {
            state.registry.insert(resource);
        }
    } else if is_namespaces(target) {
        state.namespace_cache.record(object);
        if object::deletion_timestamp(object).is_some() {
            if let Some(name) = object::name(object) {
                namespaces::start_cleanup(state.self_handle(), name.to_string());
            }
        } else if issues_service_account_tokens(state) {
            // kube-controller-manager's serviceaccounts controller: every namespace has a
            // `default` account.
            if let Some(name) = object::name(object) {
                let state = state.self_handle();
                let name = name.to_string();
                tokio::spawn(async move {
                    if let Err(error) =
                        crate::auth::service_account::ensure_default(&state, &name).await
                    {
                        tracing::warn!(namespace = %name, %error, "Cannot create the default ServiceAccount");
                    }
                });
            }
        }
    } else if let Some(kind) = crate::webhook::configuration_kind(target) {
        crate::webhook::after_write(state, kind, object);
    } else if let Some(kind) = crate::rbac::kind_of(target) {
        crate::rbac::after_write(state, kind, object);
    }
}

fn issues_service_account_tokens(state: &ApiState) -> bool {
    state
        .config
        .authentication
        .as_ref()
        .is_some_and(|authentication| authentication.service_accounts.is_some())
}

/// Effects of a successful delete on the server itself.
pub async fn after_delete(state: &ApiState, target: &Target, object: &Value) {
    if is_namespaces(target) {
        if let Some(name) = object::name(object) {
            state.namespace_cache.forget(name);
        }
    }
    if let Some(kind) = crate::webhook::configuration_kind(target) {
        crate::webhook::after_delete(state, kind, object);
    }
    if let Some(kind) = crate::rbac::kind_of(target) {
        crate::rbac::after_delete(state, kind, object);
    }
    if is_crds(target) {
        let group = object.pointer("/spec/group").and_then(Value::as_str);
        let plural = object.pointer("/spec/names/plural").and_then(Value::as_str);
        if let (Some(group), Some(plural)) = (group, plural) {
            // Normally the cleanup finalizer has already emptied it; a CRD deleted without
            // that finalizer (removed by hand) is cleaned up now.
            if let Some(resource) = state.registry.remove(group, plural) {
                let prefix = resource.key_prefix();
                state.hub.remove(&prefix);
                let store = state.store.clone();
                tokio::spawn(async move {
                    if let Err(error) = crd::delete_instances(&store, &prefix).await {
                        tracing::warn!(prefix, %error, "Deleting the instances of a deleted CRD failed");
                    }
                });
            }
        }
    }
}
