//! The built-in resources' strategies: namespaces have a lifecycle and finalizers in their
//! spec, CRDs define served resources, Secrets carry base64 data, ConfigMaps string maps,
//! webhook configurations and RBAC objects are compiled for the server's own use,
//! CertificateSigningRequests record their requester.

use serde_json::{Value, json};

use super::Strategy;
use crate::error::{ApiError, Cause};
use crate::rest::Target;
use crate::server::ApiState;
use crate::{crd, namespaces, object};

// ---------------------------------------------------------------------------------------
// Namespaces
// ---------------------------------------------------------------------------------------

pub static NAMESPACES: Namespaces = Namespaces;

pub struct Namespaces;

impl Strategy for Namespaces {
    fn name(&self) -> &'static str {
        "namespaces"
    }

    fn prepare_create(&self, _target: &Target, object: &mut Value) {
        let map = object.as_object_mut().unwrap();
        map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
        map.insert("status".into(), json!({"phase": "Active"}));
    }

    fn prepare_update(&self, target: &Target, current: &Value, new: &mut Value) {
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
    }

    fn extra_finalizers(&self, object: &Value, finalizers: &mut Vec<String>) {
        if let Some(list) = object.pointer("/spec/finalizers").and_then(Value::as_array) {
            finalizers.extend(list.iter().filter_map(|f| f.as_str().map(str::to_string)));
        }
    }

    fn prepare_delete(&self, object: &mut Value) {
        let map = object.as_object_mut().unwrap();
        let status = map.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.insert("phase".into(), json!("Terminating"));
        }
    }

    fn after_write(&self, state: &ApiState, object: &Value) {
        state.namespace_cache.record(object);
        let Some(name) = object::name(object) else {
            return;
        };
        if object::deletion_timestamp(object).is_some() {
            namespaces::start_cleanup(state.self_handle(), name.to_string());
        } else if issues_service_account_tokens(state) {
            // kube-controller-manager's serviceaccounts controller: every namespace has a
            // `default` account.
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

    fn after_delete(&self, state: &ApiState, object: &Value) {
        if let Some(name) = object::name(object) {
            state.namespace_cache.forget(name);
        }
    }
}

fn issues_service_account_tokens(state: &ApiState) -> bool {
    state
        .config
        .authentication
        .as_ref()
        .is_some_and(|authentication| authentication.service_accounts.is_some())
}

// ---------------------------------------------------------------------------------------
// CustomResourceDefinitions
// ---------------------------------------------------------------------------------------

pub static CRDS: Crds = Crds;

pub struct Crds;

impl Strategy for Crds {
    fn name(&self) -> &'static str {
        "customresourcedefinitions"
    }

    fn prepare_create(&self, _target: &Target, object: &mut Value) {
        crd::prepare(object, None);
        let metadata = object::metadata_mut(object);
        let finalizers = metadata.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == crd::CLEANUP_FINALIZER)
        {
            list.push(json!(crd::CLEANUP_FINALIZER));
        }
    }

    fn prepare_update(&self, _target: &Target, current: &Value, new: &mut Value) {
        crd::prepare(new, Some(current));
    }

    fn validate(
        &self,
        _state: &ApiState,
        _target: &Target,
        object: &Value,
        old: Option<&Value>,
        causes: &mut Vec<Cause>,
    ) -> Result<(), ApiError> {
        causes.extend(crd::validate(object));
        if let Some(old) = old {
            causes.extend(crd::validate_update(old, object));
        }
        Ok(())
    }

    fn after_write(&self, state: &ApiState, object: &Value) {
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
    }

    fn after_delete(&self, state: &ApiState, object: &Value) {
        let group = object.pointer("/spec/group").and_then(Value::as_str);
        let plural = object.pointer("/spec/names/plural").and_then(Value::as_str);
        let (Some(group), Some(plural)) = (group, plural) else {
            return;
        };
        // Normally the cleanup finalizer has already emptied it; a CRD deleted without that
        // finalizer (removed by hand) is cleaned up now.
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

// ---------------------------------------------------------------------------------------
// Secrets and ConfigMaps
// ---------------------------------------------------------------------------------------

pub static SECRETS: Secrets = Secrets;

pub struct Secrets;

impl Strategy for Secrets {
    fn name(&self) -> &'static str {
        "secrets"
    }

    fn prepare_create(&self, _target: &Target, object: &mut Value) {
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

    fn prepare_update(&self, _target: &Target, current: &Value, new: &mut Value) {
        merge_string_data(new);
        let old_type = current.get("type").cloned();
        let map = new.as_object_mut().unwrap();
        if map
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && let Some(old_type) = old_type
        {
            map.insert("type".into(), old_type);
        }
    }

    fn validate(
        &self,
        _state: &ApiState,
        _target: &Target,
        object: &Value,
        old: Option<&Value>,
        causes: &mut Vec<Cause>,
    ) -> Result<(), ApiError> {
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
        if let (Some(old), Some(new_type)) = (old, object.get("type"))
            && old.get("type").is_some_and(|t| t != new_type)
        {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: field is immutable".into(),
                field: "type".into(),
            });
        }
        Ok(())
    }
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

pub static CONFIG_MAPS: ConfigMaps = ConfigMaps;

pub struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn name(&self) -> &'static str {
        "configmaps"
    }

    fn validate(
        &self,
        _state: &ApiState,
        _target: &Target,
        object: &Value,
        _old: Option<&Value>,
        causes: &mut Vec<Cause>,
    ) -> Result<(), ApiError> {
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
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Admission webhook configurations
// ---------------------------------------------------------------------------------------

pub static MUTATING_WEBHOOKS: WebhookConfigurations =
    WebhookConfigurations(crate::webhook::config::Kind::Mutating);
pub static VALIDATING_WEBHOOKS: WebhookConfigurations =
    WebhookConfigurations(crate::webhook::config::Kind::Validating);

pub struct WebhookConfigurations(crate::webhook::config::Kind);

impl Strategy for WebhookConfigurations {
    fn name(&self) -> &'static str {
        match self.0 {
            crate::webhook::config::Kind::Mutating => "mutatingwebhookconfigurations",
            crate::webhook::config::Kind::Validating => "validatingwebhookconfigurations",
        }
    }

    fn prepare_create(&self, _target: &Target, object: &mut Value) {
        crate::webhook::prepare(self.0, object);
    }

    fn prepare_update(&self, _target: &Target, _current: &Value, new: &mut Value) {
        crate::webhook::prepare(self.0, new);
    }

    fn validate(
        &self,
        _state: &ApiState,
        _target: &Target,
        object: &Value,
        _old: Option<&Value>,
        causes: &mut Vec<Cause>,
    ) -> Result<(), ApiError> {
        causes.extend(crate::webhook::validate_configuration(self.0, object));
        Ok(())
    }

    fn after_write(&self, state: &ApiState, object: &Value) {
        crate::webhook::after_write(state, self.0, object);
    }

    fn after_delete(&self, state: &ApiState, object: &Value) {
        crate::webhook::after_delete(state, self.0, object);
    }
}

// ---------------------------------------------------------------------------------------
// RBAC
// ---------------------------------------------------------------------------------------

/// The four RBAC kinds' strategies, in the order of `rbac::Kind::ALL`.
pub static RBAC: [Rbac; 4] = [
    Rbac(crate::rbac::Kind::Role),
    Rbac(crate::rbac::Kind::ClusterRole),
    Rbac(crate::rbac::Kind::RoleBinding),
    Rbac(crate::rbac::Kind::ClusterRoleBinding),
];

pub struct Rbac(crate::rbac::Kind);

impl Strategy for Rbac {
    fn name(&self) -> &'static str {
        self.0.plural()
    }

    fn prepare_create(&self, _target: &Target, object: &mut Value) {
        crate::rbac::prepare(self.0, object);
    }

    fn prepare_update(&self, _target: &Target, _current: &Value, new: &mut Value) {
        crate::rbac::prepare(self.0, new);
    }

    fn validate(
        &self,
        state: &ApiState,
        target: &Target,
        object: &Value,
        old: Option<&Value>,
        _causes: &mut Vec<Cause>,
    ) -> Result<(), ApiError> {
        crate::rbac::admit(state, self.0, target, object, old)
    }

    fn after_write(&self, state: &ApiState, object: &Value) {
        crate::rbac::after_write(state, self.0, object);
    }

    fn after_delete(&self, state: &ApiState, object: &Value) {
        crate::rbac::after_delete(state, self.0, object);
    }
}

// ---------------------------------------------------------------------------------------
// CertificateSigningRequests
// ---------------------------------------------------------------------------------------

pub static CSRS: Csrs = Csrs;

pub struct Csrs;

impl Strategy for Csrs {
    fn name(&self) -> &'static str {
        "certificatesigningrequests"
    }

    fn prepare_create(&self, _target: &Target, object: &mut Value) {
        crate::certificates::prepare_create(object, crate::rbac::requester().as_deref());
    }

    fn prepare_update(&self, target: &Target, current: &Value, new: &mut Value) {
        crate::certificates::prepare_update(target.subresource.as_deref(), current, new);
    }

    fn validate(
        &self,
        _state: &ApiState,
        _target: &Target,
        object: &Value,
        _old: Option<&Value>,
        causes: &mut Vec<Cause>,
    ) -> Result<(), ApiError> {
        causes.extend(crate::certificates::validate(object));
        Ok(())
    }
}
