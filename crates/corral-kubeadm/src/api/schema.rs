//! Schema pieces the kubeadm types share: `schema_with` targets for the Kubernetes types they
//! embed (whose derived schemas lack the markers upstream's CRDs carry) and the
//! `skip_serializing_if` helper.
//!
//! The doc comment of the field that uses one still becomes the description.

use schemars::{Schema, SchemaGenerator, json_schema};

// What the kubeadm types share with the core types: corral-api's helpers.
pub(crate) use corral_api::schema::{
    conditions, drop_description, int_or_string, is_default, time,
};

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
