//! Unknown fields of built-in kinds: what kube-apiserver's strict decoding reports for typed
//! objects. Custom resources get the same treatment from their schemas (`schema/`); built-ins
//! have no schema here, so their known fields are listed.
//!
//! `fieldValidation=Strict` refuses an object with unknown fields (400, every field named),
//! `Warn` (the default when the parameter is absent, as in kube-apiserver) drops them with a
//! `Warning` each, `Ignore` drops them silently.

use serde_json::Value;

use crate::admission::Request;
use crate::error::ApiError;

/// Fields of `metadata` (ObjectMeta) on every object.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Top-level fields (besides apiVersion, kind, metadata) of the built-in kinds this server
/// knows, in their storage shape; `None` for kinds it does not check.
fn known_fields(group: &str, plural: &str) -> Option<&'static [&'static str]> {
    Some(match (group, plural) {
        ("", "configmaps") => &["data", "binaryData", "immutable"],
        ("", "secrets") => &["data", "stringData", "type", "immutable"],
        ("", "namespaces") => &["spec", "status"],
        // Both Event APIs are stored as core Events.
        ("", "events") | ("events.k8s.io", "events") => &[
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        ],
        ("coordination.k8s.io", "leases") => &["spec"],
        ("apiextensions.k8s.io", "customresourcedefinitions") => &["spec", "status"],
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
        | ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => &["webhooks"],
        _ => return None,
    })
}

/// Drops (and reports) unknown fields of a built-in object, per `fieldValidation`.
pub fn admit(request: &Request<'_>, object: &mut Value) -> Result<Vec<String>, ApiError> {
    let resource = &request.target.resource;
    if !resource.builtin {
        return Ok(Vec::new());
    }
    let Some(known) = known_fields(&resource.group, &resource.plural) else {
        return Ok(Vec::new());
    };
    let mut unknown = Vec::new();
    if let Some(map) = object.as_object_mut() {
        let extra: Vec<String> = map
            .keys()
            .filter(|k| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            .filter(|k| !known.contains(&k.as_str()))
            .cloned()
            .collect();
        for field in extra {
            map.remove(&field);
            unknown.push(field);
        }
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            let extra: Vec<String> = metadata
                .keys()
                .filter(|k| !OBJECT_META.contains(&k.as_str()))
                .cloned()
                .collect();
            for field in extra {
                metadata.remove(&field);
                unknown.push(format!("metadata.{field}"));
            }
        }
    }
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    unknown.sort();
    let described: Vec<String> = unknown
        .iter()
        .map(|path| format!("unknown field \"{path}\""))
        .collect();
    match request.query.field_validation.as_deref() {
        Some("Strict") => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            described.join(", "),
            kind = resource.kind,
            version = request.target.version,
        ))),
        Some("Ignore") => Ok(Vec::new()),
        _ => Ok(described),
    }
}
