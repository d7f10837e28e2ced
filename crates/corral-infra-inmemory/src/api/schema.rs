//! Schema pieces the Dev* types share: `schema_with` targets for the Kubernetes types they embed
//! (whose derived schemas lack the markers upstream's CRDs carry) and the validation patterns.
//!
//! The doc comment of the field that uses one still becomes the description.

use schemars::{Schema, SchemaGenerator, json_schema};

// What the Dev* types share with the core types: corral-api's helpers.
pub(crate) use corral_api::schema::{add_rule, conditions, is_default};

/// A Go duration as `metav1.Duration` parses it (`time.ParseDuration`): `0`, or a sequence of
/// decimal numbers each with a unit, as in `10s`, `1m30s`, `1.5h` or `300ms`. Negative durations
/// are refused: a provisioning step cannot take less than no time.
pub(crate) const GO_DURATION: &str = r"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$";

/// A non-negative decimal number, as Go's `strconv.ParseFloat` reads `startupJitter`.
pub(crate) const DECIMAL: &str = r"^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$";

/// A resource quantity (`resource.Quantity`).
pub(crate) const QUANTITY: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

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
