//! CustomResourceDefinitions: validating them, turning them into served resources, and the
//! status kube-apiserver reports for them (`Established`, `NamesAccepted`).

use serde_json::{Value, json};

use crate::error::Cause;
use crate::names;
use crate::registry::{PrinterColumn, ResourceInfo, ScalePaths, VersionInfo};

fn cause(field: &str, reason: &str, message: impl Into<String>) -> Cause {
    Cause {
        reason: reason.into(),
        message: message.into(),
        field: field.into(),
    }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut node = value;
    for segment in path {
        node = node.get(*segment)?;
    }
    node.as_str()
}

fn strings_at(value: &Value, path: &[&str]) -> Vec<String> {
    let mut node = value;
    for segment in path {
        match node.get(*segment) {
            Some(next) => node = next,
            None => return Vec::new(),
        }
    }
    node.as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks a CRD the way kube-apiserver's apiextensions validation does (the parts that decide
/// whether the resource can be served), returning every problem at once.
pub fn validate(crd: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = crate::object::name(crd).unwrap_or("");
    let group = str_at(crd, &["spec", "group"]).unwrap_or("");
    let plural = str_at(crd, &["spec", "names", "plural"]).unwrap_or("");
    if group.is_empty() {
        causes.push(cause("spec.group", "FieldValueRequired", "Required value"));
    } else {
        if let Err(messages) = names::is_dns1123_subdomain(group) {
            for message in messages {
                causes.push(cause(
                    "spec.group",
                    "FieldValueInvalid",
                    format!("Invalid value: {group:?}: {message}"),
                ));
            }
        }
        if !group.contains('.') {
            causes.push(cause(
                "spec.group",
                "FieldValueInvalid",
                format!("Invalid value: {group:?}: should be a domain with at least one dot"),
            ));
        }
    }
    if plural.is_empty() {
        causes.push(cause(
            "spec.names.plural",
            "FieldValueRequired",
            "Required value",
        ));
    } else if let Err(messages) = names::is_dns1123_label(plural) {
        for message in messages {
            causes.push(cause(
                "spec.names.plural",
                "FieldValueInvalid",
                format!("Invalid value: {plural:?}: {message}"),
            ));
        }
    }
    if !plural.is_empty() && !group.is_empty() && name != format!("{plural}.{group}") {
        causes.push(cause(
            "metadata.name",
            "FieldValueInvalid",
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let kind = str_at(crd, &["spec", "names", "kind"]).unwrap_or("");
    if kind.is_empty() {
        causes.push(cause(
            "spec.names.kind",
            "FieldValueRequired",
            "Required value",
        ));
    } else if !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        causes.push(cause(
            "spec.names.kind",
            "FieldValueInvalid",
            format!("Invalid value: {kind:?}: may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?"),
        ));
    }
    if let Some(list_kind) = str_at(crd, &["spec", "names", "listKind"])
        && list_kind == kind
    {
        causes.push(cause(
            "spec.names.listKind",
            "FieldValueInvalid",
            format!("Invalid value: {list_kind:?}: kind and listKind may not be the same"),
        ));
    }
    match str_at(crd, &["spec", "scope"]) {
        Some("Namespaced") | Some("Cluster") => {}
        Some(other) => causes.push(cause(
            "spec.scope",
            "FieldValueNotSupported",
            format!("Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""),
        )),
        None => causes.push(cause("spec.scope", "FieldValueRequired", "Required value")),
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push(cause(
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    let mut storage = 0;
    let mut served = 0;
    let mut seen = std::collections::HashSet::new();
    for (index, version) in versions.iter().enumerate() {
        let field = format!("spec.versions[{index}]");
        let version_name = version.get("name").and_then(Value::as_str).unwrap_or("");
        if let Err(messages) = names::is_dns1123_label(version_name) {
            for message in messages {
                causes.push(cause(
                    &format!("{field}.name"),
                    "FieldValueInvalid",
                    format!("Invalid value: {version_name:?}: {message}"),
                ));
            }
        }
        if !seen.insert(version_name.to_string()) {
            causes.push(cause(
                &format!("{field}.name"),
                "FieldValueInvalid",
                format!("Invalid value: {version_name:?}: must be unique"),
            ));
        }
        if version.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        if version.get("served").and_then(Value::as_bool) == Some(true) {
            served += 1;
        }
    }
    if !versions.is_empty() && storage != 1 {
        causes.push(cause(
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    if !versions.is_empty() && served == 0 {
        causes.push(cause(
            "spec.versions",
            "FieldValueInvalid",
            "Invalid value: must have at least one version marked as served",
        ));
    }
    causes
}

/// Fields a CRD update may not change (kube-apiserver: the names that identify the resource).
pub fn validate_update(old: &Value, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (path, field) in [
        (&["spec", "group"][..], "spec.group"),
        (&["spec", "names", "plural"][..], "spec.names.plural"),
    ] {
        if str_at(old, path) != str_at(new, path) {
            causes.push(cause(
                field,
                "FieldValueInvalid",
                "Invalid value: field is immutable",
            ));
        }
    }
    causes
}

/// The served resource a (valid) CRD defines.
pub fn resource_info(crd: &Value) -> Option<ResourceInfo> {
    let spec = crd.get("spec")?;
    let group = str_at(spec, &["group"])?.to_string();
    let names = spec.get("names")?;
    let plural = str_at(names, &["plural"])?.to_string();
    let kind = str_at(names, &["kind"])?.to_string();
    let mut versions = Vec::new();
    let mut status_subresource = false;
    let mut scale = None;
    for version in spec.get("versions")?.as_array()? {
        let subresources = version.get("subresources");
        if subresources.and_then(|s| s.get("status")).is_some() {
            status_subresource = true;
        }
        if let Some(s) = subresources.and_then(|s| s.get("scale")) {
            scale = Some(ScalePaths {
                spec_replicas: str_at(s, &["specReplicasPath"])
                    .unwrap_or(".spec.replicas")
                    .into(),
                status_replicas: str_at(s, &["statusReplicasPath"])
                    .unwrap_or(".status.replicas")
                    .into(),
                label_selector: str_at(s, &["labelSelectorPath"]).map(str::to_string),
            });
        }
        let printer_columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| PrinterColumn {
                        name: str_at(c, &["name"]).unwrap_or("").into(),
                        type_: str_at(c, &["type"]).unwrap_or("string").into(),
                        format: str_at(c, &["format"]).unwrap_or("").into(),
                        description: str_at(c, &["description"]).unwrap_or("").into(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: str_at(c, &["jsonPath"]).unwrap_or("").into(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        versions.push(VersionInfo {
            name: str_at(version, &["name"])?.to_string(),
            served: version
                .get("served")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            storage: version
                .get("storage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            deprecated: version
                .get("deprecated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            deprecation_warning: str_at(version, &["deprecationWarning"]).map(str::to_string),
            printer_columns,
            schema: version.pointer("/schema/openAPIV3Schema").cloned(),
            compiled_schema: version
                .pointer("/schema/openAPIV3Schema")
                .map(|schema| std::sync::Arc::new(crate::schema::CompiledSchema::new(schema))),
        });
    }
    let mut ordered: Vec<String> = versions.iter().map(|v| v.name.clone()).collect();
    crate::registry::sort_versions(&mut ordered);
    versions.sort_by_key(|v| ordered.iter().position(|n| *n == v.name));
    Some(ResourceInfo {
        group,
        versions,
        singular: str_at(names, &["singular"])
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase()),
        list_kind: str_at(names, &["listKind"])
            .map(str::to_string)
            .unwrap_or_else(|| format!("{kind}List")),
        kind,
        plural,
        namespaced: str_at(spec, &["scope"]) == Some("Namespaced"),
        short_names: strings_at(names, &["shortNames"]),
        categories: strings_at(names, &["categories"]),
        status_subresource,
        scale,
        builtin: false,
        tracks_generation: true,
        stored_as: None,
        strategy: Default::default(),
    })
}

/// Fills in the defaults and the status kube-apiserver reports for an accepted CRD.
pub fn prepare(crd: &mut Value, previous: Option<&Value>) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        names
            .entry("singular")
            .or_insert_with(|| json!(kind.to_lowercase()));
        names
            .entry("listKind")
            .or_insert_with(|| json!(format!("{kind}List")));
    }
    spec.entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    let names = spec.get("names").cloned().unwrap_or(json!({}));
    let storage_version = spec
        .get("versions")
        .and_then(Value::as_array)
        .and_then(|versions| {
            versions
                .iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut stored_versions: Vec<String> = previous
        .map(|p| strings_at(p, &["status", "storedVersions"]))
        .unwrap_or_default();
    if !storage_version.is_empty() && !stored_versions.contains(&storage_version) {
        stored_versions.push(storage_version);
    }
    let now = crate::object::now_rfc3339();
    let since = |type_: &str| -> String {
        previous
            .and_then(|p| p.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .and_then(|conditions| {
                conditions
                    .iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
            })
            .and_then(|c| c.get("lastTransitionTime"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| now.clone())
    };
    crd.as_object_mut().unwrap().insert(
        "status".into(),
        json!({
            "acceptedNames": names,
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": since("Established")},
            ],
            "storedVersions": stored_versions,
        }),
    );
}

/// The finalizer that keeps a deleted CRD until its instances are gone (kube-apiserver's name).
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Deletes every stored instance of a resource. The resource is no longer served, so nobody
/// could remove the instances' own finalizers: they are deleted from the store directly.
pub async fn delete_instances(
    store: &corral_store::DynStore,
    prefix: &str,
) -> Result<(), corral_store::Error> {
    loop {
        let page = store
            .range(corral_store::RangeRequest {
                prefix: prefix.to_string(),
                limit: 500,
                ..Default::default()
            })
            .await?;
        if page.kvs.is_empty() {
            return Ok(());
        }
        for kv in page.kvs {
            // A concurrent write wins; the next pass sees the key again.
            match store.delete(&kv.key, kv.mod_revision).await {
                Ok(_)
                | Err(
                    corral_store::Error::Conflict { .. } | corral_store::Error::NotFound { .. },
                ) => {}
                Err(error) => return Err(error),
            }
        }
    }
}

/// Stops serving a deleted CRD's resource, deletes its instances, then removes the cleanup
/// finalizer so that the CRD goes away (until then its name cannot be reused, so a new CRD
/// never sees the old instances). Runs in the background; retried until done.
pub fn start_cleanup(state: std::sync::Arc<crate::server::ApiState>, crd: serde_json::Value) {
    let Some(resource) = resource_info(&crd) else {
        return;
    };
    let Some(name) = crate::object::name(&crd).map(str::to_string) else {
        return;
    };
    state.registry.remove(&resource.group, &resource.plural);
    let prefix = resource.key_prefix();
    state.hub.remove(&prefix);
    tokio::spawn(async move {
        let mut delay = std::time::Duration::from_millis(50);
        loop {
            match cleanup_pass(&state, &prefix, &name).await {
                Ok(()) => return,
                Err(error) => {
                    tracing::warn!(crd = name, %error, "Cleaning up a deleted CRD failed; retrying");
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(std::time::Duration::from_secs(5));
        }
    });
}

async fn cleanup_pass(
    state: &crate::server::ApiState,
    prefix: &str,
    name: &str,
) -> Result<(), crate::error::ApiError> {
    delete_instances(&state.store, prefix).await?;
    let target = crate::rest::Target {
        resource: state
            .registry
            .get("apiextensions.k8s.io", "customresourcedefinitions")
            .expect("CRDs are built in"),
        version: "v1".into(),
        namespace: None,
        name: None,
        subresource: None,
    };
    let finalize = crate::rest::Change::Patch(Box::new(|current: &serde_json::Value| {
        let mut new = current.clone();
        if let Some(list) = new
            .pointer_mut("/metadata/finalizers")
            .and_then(serde_json::Value::as_array_mut)
        {
            list.retain(|f| f != CLEANUP_FINALIZER);
        }
        Ok(new)
    }));
    match crate::rest::update(state, &target, name, &Default::default(), finalize).await {
        Ok(_) => Ok(()),
        Err(error) if error.code == http::StatusCode::NOT_FOUND => Ok(()),
        Err(error) => Err(error),
    }
}
