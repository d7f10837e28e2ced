//! Schema pieces the kubeadm types share: `schema_with` targets for the Kubernetes types they
//! embed (whose derived schemas lack the markers upstream's CRDs carry) and the
//! `skip_serializing_if` helper.
//!
//! The doc comment of the field that uses one still becomes the description.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

/// A CamelCase condition reason.
const CONDITION_REASON: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// A condition type: an optional DNS-subdomain prefix and a name.
const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// For `skip_serializing_if`: structs whose fields are all optional are embedded by value, as
/// upstream does with `omitzero`, and left out when empty.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `metav1.Time`.
pub(crate) fn time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "date-time" })
}

/// `intstr.IntOrString`, in the form controller-gen writes it.
pub(crate) fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{ "type": "integer" }, { "type": "string" }],
        "x-kubernetes-int-or-string": true,
    })
}

/// A resource quantity (`resource.Quantity`).
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{ "type": "integer" }, { "type": "string" }],
        "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
        "x-kubernetes-int-or-string": true,
    })
}

/// `spec.mounts`: cloud-init mount entries, each a list of the fields of an fstab line.
pub(crate) fn mounts(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "description": "A mount point: the fields of an fstab line, device first.",
            "type": "array",
            "items": { "type": "string", "minLength": 1, "maxLength": 512 },
            "minItems": 1,
            "maxItems": 100,
        },
        "minItems": 1,
        "maxItems": 100,
        "x-kubernetes-list-type": "atomic",
    })
}

/// The v1beta2 `status.conditions`: `metav1.Condition`s keyed by type.
pub(crate) fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {
            "description": "One aspect of the object's state.",
            "type": "object",
            "properties": {
                "lastTransitionTime": {
                    "description": "lastTransitionTime is when the status last changed.",
                    "type": "string",
                    "format": "date-time",
                },
                "message": {
                    "description": "message about the condition, for people; may be empty.",
                    "type": "string",
                    "maxLength": 32768,
                },
                "observedGeneration": {
                    "description": "observedGeneration is the metadata.generation the condition was computed for.",
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                },
                "reason": {
                    "description": "reason for the condition's status, in CamelCase.",
                    "type": "string",
                    "maxLength": 1024,
                    "minLength": 1,
                    "pattern": CONDITION_REASON,
                },
                "status": {
                    "description": "status of the condition: True, False or Unknown.",
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                },
                "type": {
                    "description": "type of the condition, in CamelCase, optionally prefixed by a domain and a slash.",
                    "type": "string",
                    "maxLength": 316,
                    "pattern": QUALIFIED_NAME,
                },
            },
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        },
        "maxItems": 32,
        "x-kubernetes-list-map-keys": ["type"],
        "x-kubernetes-list-type": "map",
    })
}

/// Container transform for enums. Their doc comments document the Rust type; in a CRD the
/// field's description should win.
pub(crate) fn drop_description(schema: &mut Schema) {
    schema.remove("description");
}

/// Adds an `x-kubernetes-validations` rule to a JSON schema.
pub(crate) fn add_rule(schema: &mut Value, rule: &str, message: &str) {
    let rules = schema
        .as_object_mut()
        .expect("rules go on object schemas")
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    rules
        .as_array_mut()
        .expect("x-kubernetes-validations is a list")
        .push(json!({ "rule": rule, "message": message }));
}
