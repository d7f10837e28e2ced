//! Schema pieces the Dev* types share: `schema_with` targets for the Kubernetes types they embed
//! (whose derived schemas lack the markers upstream's CRDs carry) and the validation patterns.
//!
//! The doc comment of the field that uses one still becomes the description.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

/// A Go duration as `metav1.Duration` parses it (`time.ParseDuration`): `0`, or a sequence of
/// decimal numbers each with a unit, as in `10s`, `1m30s`, `1.5h` or `300ms`. Negative durations
/// are refused: a provisioning step cannot take less than no time.
pub(crate) const GO_DURATION: &str = r"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$";

/// A non-negative decimal number, as Go's `strconv.ParseFloat` reads `startupJitter`.
pub(crate) const DECIMAL: &str = r"^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$";

/// A resource quantity (`resource.Quantity`).
pub(crate) const QUANTITY: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// A CamelCase condition reason.
const CONDITION_REASON: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// A condition type: an optional DNS-subdomain prefix and a name.
const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// For `skip_serializing_if`: structs whose fields are all optional are embedded by value, as
/// upstream does with `omitzero`, and left out when empty.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `corev1.LocalObjectReference`, atomic, with the defaulted name upstream's schema carries.
pub(crate) fn local_object_reference(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "properties": {
            "name": {
                "description": "Name of the referent.",
                "type": "string",
                "default": "",
            },
        },
        "x-kubernetes-map-type": "atomic",
    })
}

/// `corev1.ResourceList`: resource names to quantities.
pub(crate) fn resource_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "anyOf": [{ "type": "integer" }, { "type": "string" }],
            "pattern": QUANTITY,
            "x-kubernetes-int-or-string": true,
        },
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

/// Container transform for a backend: Corral simulates the in-memory backend only, so a docker
/// backend is refused at admission with a message that says what to use instead, rather than
/// accepted and left to fail later.
pub(crate) fn refuse_docker_backend(schema: &mut Schema) {
    add_rule(
        schema,
        "!has(self.docker)",
        "backend.docker is not supported by Corral's in-memory provider; use backend.inMemory",
    );
    add_rule(
        schema,
        "has(self.inMemory) || has(self.docker)",
        "backend.inMemory is required",
    );
}

/// Adds an `x-kubernetes-validations` rule to a schema.
pub(crate) fn add_rule(schema: &mut Schema, rule: &str, message: &str) {
    let entry = json!({ "rule": rule, "message": message });
    match schema.get_mut("x-kubernetes-validations") {
        Some(Value::Array(rules)) => rules.push(entry),
        _ => {
            schema.insert("x-kubernetes-validations".into(), json!([entry]));
        }
    }
}
