//! Schema pieces shared by the API types: upstream's validation patterns, schemas for the
//! Kubernetes types we embed (whose own schemas lack the list and map markers upstream's CRDs
//! carry), and the `skip_serializing_if` helpers.
//!
//! The functions here are `schema_with` targets; the doc comment of the field that uses one still
//! becomes the description. They are public for the providers' API types (`corral-kubeadm`,
//! `corral-infra-inmemory`), which embed the same Kubernetes types and follow the same
//! conventions.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

/// A DNS-1123 subdomain: object names and API groups.
pub const DNS1123_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A DNS-1123 label: namespaces.
pub const DNS1123_LABEL: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// A Kind, in CamelCase.
pub const KIND: &str = r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$";

/// `group/version` of an API.
pub const API_VERSION: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[a-z]([-a-z0-9]*[a-z0-9])?$";

/// A qualified name such as a condition type: an optional DNS-subdomain prefix and a name.
pub const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// A taint key: a qualified name.
pub const TAINT_KEY: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";

/// A taint value: a label value.
pub const TAINT_VALUE: &str = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

/// A CamelCase condition reason.
pub const CONDITION_REASON: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// `[min-max]`, the range of unhealthy machines in which a health check may remediate.
pub const UNHEALTHY_RANGE: &str = r"^\[[0-9]+-[0-9]+\]$";

/// CEL: an int-or-string value that is an integer or a percentage, the values upstream's webhooks
/// accept for maxSurge, maxUnavailable, maxInFlight and unhealthyLessThanOrEqualTo
/// (`intstr.GetScaledValueFromIntOrPercent`).
///
/// An integer never equals its string form (CEL equality across types is false), so integers
/// pass the first test and strings must match. `type(self) == int` would say the same, but
/// client-side CEL evaluators (kube-cel, which the tests use) lack `type()`.
pub const INT_OR_PERCENT_RULE: &str = "self != string(self) || self.matches('^[-+]?[0-9]+%$')";

/// The message for [`INT_OR_PERCENT_RULE`].
pub const INT_OR_PERCENT_MESSAGE: &str = "must be either an int or a percentage";

/// For `skip_serializing_if`: structs whose fields are all optional are embedded by value, as
/// upstream does with `omitzero`, and left out when empty (their schemas have `minProperties: 1`).
pub fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `metav1.Time`.
pub fn time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "date-time" })
}

/// `intstr.IntOrString`, in the form controller-gen writes it.
pub fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{ "type": "integer" }, { "type": "string" }],
        "x-kubernetes-int-or-string": true,
    })
}

/// An int-or-string that must be an integer or a percentage. Only for fields that are not in
/// lists: the regular expression over an unbounded value is costly in the API server's CEL
/// budget, which multiplies a rule's cost by the number of times it can run.
pub fn int_or_percent(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = int_or_string(generator);
    add_rule(&mut schema, INT_OR_PERCENT_RULE, INT_OR_PERCENT_MESSAGE);
    schema
}

/// Any JSON value, kept as given (ClusterClass variable values).
pub fn any_json(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// `metav1.LabelSelector`: atomic, as upstream marks it.
pub fn label_selector(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "properties": {
            "matchExpressions": {
                "description": "matchExpressions are requirements on labels; all must hold.",
                "type": "array",
                "items": {
                    "description": "A requirement on one label.",
                    "type": "object",
                    "properties": {
                        "key": {
                            "description": "key of the label.",
                            "type": "string",
                        },
                        "operator": {
                            "description": "operator: In, NotIn, Exists or DoesNotExist.",
                            "type": "string",
                        },
                        "values": {
                            "description": "values for In and NotIn; empty for Exists and DoesNotExist.",
                            "type": "array",
                            "items": { "type": "string" },
                            "x-kubernetes-list-type": "atomic",
                        },
                    },
                    "required": ["key", "operator"],
                },
                "x-kubernetes-list-type": "atomic",
            },
            "matchLabels": {
                "description": "matchLabels are labels that must have exactly these values; all must hold.",
                "type": "object",
                "additionalProperties": { "type": "string" },
            },
        },
        "x-kubernetes-map-type": "atomic",
    })
}

/// The v1beta2 `status.conditions`: `metav1.Condition`s keyed by type.
pub fn conditions(_: &mut SchemaGenerator) -> Schema {
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

/// `corev1.NodeSystemInfo` as upstream's CRDs carry it.
///
/// Newer Kubernetes versions add fields (`runningInUserNamespace`); upstream's schema predates
/// them, so the API server prunes them, and so does Corral's.
pub fn node_system_info(_: &mut SchemaGenerator) -> Schema {
    let string = |description: &str| json!({ "description": description, "type": "string" });
    json_schema!({
        "type": "object",
        "properties": {
            "architecture": string("CPU architecture of the Node, such as amd64."),
            "bootID": string("ID of the Node's current boot."),
            "containerRuntimeVersion": string("Container runtime and its version, such as containerd://2.0.0."),
            "kernelVersion": string("Kernel version, as `uname -r` prints it."),
            "kubeProxyVersion": string("Deprecated: the kube-proxy version the Node reports."),
            "kubeletVersion": string("Kubelet version."),
            "machineID": string("Machine ID of the host."),
            "operatingSystem": string("Operating system, such as linux."),
            "osImage": string("Operating system image, from /etc/os-release."),
            "swap": {
                "description": "Swap of the Node.",
                "type": "object",
                "properties": {
                    "capacity": {
                        "description": "Swap size in bytes.",
                        "type": "integer",
                        "format": "int64",
                    },
                },
            },
            "systemUUID": string("System UUID of the host."),
        },
        "required": [
            "architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
            "kubeletVersion", "machineID", "operatingSystem", "osImage", "systemUUID",
        ],
    })
}

/// Adds an `x-kubernetes-validations` rule to a schema.
pub fn add_rule(schema: &mut Schema, rule: &str, message: &str) {
    let entry = json!({ "rule": rule, "message": message });
    match schema.get_mut("x-kubernetes-validations") {
        Some(Value::Array(rules)) => rules.push(entry),
        _ => {
            schema.insert("x-kubernetes-validations".into(), json!([entry]));
        }
    }
}

/// The schema of a property of an object schema, for transforms that adjust nested fields.
pub fn property<'a>(schema: &'a mut Schema, name: &str) -> &'a mut Schema {
    schema
        .get_mut("properties")
        .and_then(|properties| properties.get_mut(name))
        .and_then(|property| <&mut Schema>::try_from(property).ok())
        .unwrap_or_else(|| panic!("schema has no property {name:?}"))
}

/// Container transform for enums. Their doc comments document the Rust type; in a CRD the
/// field's description should win, and kube's rewrite of `Option<enum>` would let the type's
/// description replace it.
pub fn drop_description(schema: &mut Schema) {
    schema.remove("description");
}
