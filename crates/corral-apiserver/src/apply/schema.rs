//! What merging needs to know about an object's type, read from a CRD version's
//! openAPIV3Schema or from what this module knows of the built-in kinds: which maps are
//! granular, which lists are associative and by what, and which struct fields are declared.
//!
//! The rules are kube-apiserver's (structured-merge-diff over the CRD schema): objects are
//! granular unless `x-kubernetes-map-type: atomic`; lists are atomic unless
//! `x-kubernetes-list-type` is `set` (items by value) or `map` (items by
//! `x-kubernetes-list-map-keys`); what a schema does not describe is "deduced": maps
//! granular, lists atomic. `metadata` is always ObjectMeta, with its own list semantics.

use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::registry::ResourceInfo;

/// The type of one node of an object.
#[derive(Clone, Copy, Debug)]
pub enum Schema<'a> {
    /// Not described: maps are granular, lists atomic.
    Deduced,
    /// A node of an OpenAPI v3 schema.
    Node(&'a Value),
    /// The top of an object: `apiVersion`, `kind` and `metadata` (ObjectMeta) are known, the
    /// rest is described by the node.
    Root(&'a Value),
}

/// How a value is merged, compared and owned, given its schema.
#[derive(Clone, Debug)]
pub enum Shape<'a> {
    /// Owned and replaced as a whole: scalars, atomic maps and lists, and values whose type
    /// does not match the schema.
    Leaf,
    /// A granular map: every entry is owned on its own.
    Map(Schema<'a>),
    /// A list of scalars identified by value.
    Set,
    /// A list of objects identified by their key fields.
    Keyed {
        keys: Vec<&'a str>,
        items: Schema<'a>,
    },
}

impl<'a> Schema<'a> {
    /// The schema of the objects of a resource in the given version.
    pub fn for_resource(resource: &'a ResourceInfo, version: &str) -> Schema<'a> {
        let crd_schema = resource
            .version(version)
            .or_else(|| resource.versions.first())
            .and_then(|v| v.schema.as_ref());
        match crd_schema {
            Some(schema) if !resource.builtin => Schema::Root(schema),
            _ => Schema::Root(builtin_root(resource)),
        }
    }

    pub fn shape(self, value: &Value) -> Shape<'a> {
        match value {
            Value::Object(_) => match self {
                Schema::Deduced | Schema::Root(_) => Shape::Map(self),
                Schema::Node(node) => {
                    let atomic =
                        node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
                    if is_scalar_schema(node) || declared_type(node) == Some("array") || atomic {
                        Shape::Leaf
                    } else {
                        Shape::Map(self)
                    }
                }
            },
            Value::Array(_) => match self {
                Schema::Deduced | Schema::Root(_) => Shape::Leaf,
                Schema::Node(node) => {
                    if is_scalar_schema(node) || declared_type(node) == Some("object") {
                        return Shape::Leaf;
                    }
                    match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
                        Some("set") => Shape::Set,
                        Some("map") => {
                            let keys: Vec<&str> = node
                                .get("x-kubernetes-list-map-keys")
                                .and_then(Value::as_array)
                                .map(|keys| keys.iter().filter_map(Value::as_str).collect())
                                .unwrap_or_default();
                            if keys.is_empty() {
                                Shape::Leaf
                            } else {
                                Shape::Keyed {
                                    keys,
                                    items: self.items(),
                                }
                            }
                        }
                        _ => Shape::Leaf,
                    }
                }
            },
            _ => Shape::Leaf,
        }
    }

    /// The schema of a map entry, and whether it is a declared field of a struct (which
    /// structured-merge-diff treats differently from a map key).
    pub fn field(self, name: &str) -> (Schema<'a>, bool) {
        match self {
            Schema::Deduced => (Schema::Deduced, false),
            Schema::Root(node) => match name {
                "apiVersion" | "kind" => (Schema::Node(&STRING), true),
                "metadata" => (Schema::Node(&OBJECT_META), true),
                _ => Schema::Node(node).field(name),
            },
            Schema::Node(node) => {
                if let Some(property) = node.get("properties").and_then(|p| p.get(name)) {
                    return (Schema::Node(property), true);
                }
                if is_embedded_resource(node) && matches!(name, "apiVersion" | "kind" | "metadata")
                {
                    return Schema::Root(node).field(name);
                }
                match node.get("additionalProperties") {
                    Some(additional @ Value::Object(_)) => (Schema::Node(additional), false),
                    _ => (Schema::Deduced, false),
                }
            }
        }
    }

    /// Whether a map may hold `name`. A structural schema declares its fields (kube-apiserver
    /// refuses an apply configuration with others: "field not declared in schema") unless it
    /// preserves unknown fields or describes a map with `additionalProperties`.
    pub fn allows(self, name: &str) -> bool {
        match self {
            Schema::Deduced => true,
            Schema::Root(node) => {
                matches!(name, "apiVersion" | "kind" | "metadata")
                    || Schema::Node(node).allows(name)
            }
            Schema::Node(node) => {
                let declared = node
                    .get("properties")
                    .is_some_and(|p| p.get(name).is_some());
                let open = node.get("x-kubernetes-preserve-unknown-fields")
                    == Some(&Value::Bool(true))
                    || matches!(
                        node.get("additionalProperties"),
                        Some(Value::Object(_) | Value::Bool(true))
                    );
                let untyped = node.get("type").is_none() && node.get("properties").is_none();
                let embedded = is_embedded_resource(node)
                    && matches!(name, "apiVersion" | "kind" | "metadata");
                declared || open || untyped || embedded
            }
        }
    }

    /// The schema of the items of a list.
    pub fn items(self) -> Schema<'a> {
        match self {
            Schema::Node(node) => match node.get("items") {
                Some(items @ Value::Object(_)) => Schema::Node(items),
                _ => Schema::Deduced,
            },
            _ => Schema::Deduced,
        }
    }

    /// The default of a key field of list items (a key may be omitted when it has one).
    pub fn key_default(self, key: &str) -> Option<&'a Value> {
        match self {
            Schema::Node(node) => node.get("properties")?.get(key)?.get("default"),
            _ => None,
        }
    }
}

fn is_embedded_resource(node: &Value) -> bool {
    node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true))
}

fn declared_type(node: &Value) -> Option<&str> {
    node.get("type").and_then(Value::as_str)
}

fn is_scalar_schema(node: &Value) -> bool {
    node.get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
        || matches!(
            declared_type(node),
            Some("string" | "integer" | "number" | "boolean")
        )
}

static STRING: LazyLock<Value> = LazyLock::new(|| json!({"type": "string"}));

fn string_map() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}})
}

/// ObjectMeta as the field manager sees it (k8s.io/apimachinery `ObjectMeta`: finalizers are
/// a set, ownerReferences a map keyed by uid, labels and annotations granular maps).
static OBJECT_META: LazyLock<Value> = LazyLock::new(|| {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "generateName": {"type": "string"},
            "namespace": {"type": "string"},
            "selfLink": {"type": "string"},
            "uid": {"type": "string"},
            "resourceVersion": {"type": "string"},
            "generation": {"type": "integer"},
            "creationTimestamp": {"type": "string"},
            "deletionTimestamp": {"type": "string"},
            "deletionGracePeriodSeconds": {"type": "integer"},
            "labels": string_map(),
            "annotations": string_map(),
            "finalizers": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-list-type": "set",
            },
            "ownerReferences": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["uid"],
                "items": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "name": {"type": "string"},
                        "uid": {"type": "string"},
                        "controller": {"type": "boolean"},
                        "blockOwnerDeletion": {"type": "boolean"},
                    },
                },
            },
            "managedFields": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {"type": "object"},
            },
        },
    })
});

fn conditions() -> Value {
    json!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    })
}

/// The top-level fields of the built-in kinds served here; anything else is deduced.
static BUILTIN_ROOTS: LazyLock<Vec<(&'static str, &'static str, Value)>> = LazyLock::new(|| {
    let open = |properties: Value| {
        json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": properties,
        })
    };
    vec![
        (
            "",
            "configmaps",
            open(json!({
                "data": string_map(),
                "binaryData": string_map(),
                "immutable": {"type": "boolean"},
            })),
        ),
        (
            "",
            "secrets",
            open(json!({
                "data": string_map(),
                "stringData": string_map(),
                "type": {"type": "string"},
                "immutable": {"type": "boolean"},
            })),
        ),
        (
            "",
            "namespaces",
            open(json!({
                "spec": {
                    "type": "object",
                    "properties": {"finalizers": {"type": "array", "items": {"type": "string"}}},
                },
                "status": {
                    "type": "object",
                    "properties": {"phase": {"type": "string"}, "conditions": conditions()},
                },
            })),
        ),
        (
            "coordination.k8s.io",
            "leases",
            open(json!({
                "spec": {
                    "type": "object",
                    "properties": {
                        "holderIdentity": {"type": "string"},
                        "leaseDurationSeconds": {"type": "integer"},
                        "acquireTime": {"type": "string"},
                        "renewTime": {"type": "string"},
                        "leaseTransitions": {"type": "integer"},
                        "strategy": {"type": "string"},
                        "preferredHolder": {"type": "string"},
                    },
                },
            })),
        ),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            open(json!({
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "status": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"conditions": conditions()},
                },
            })),
        ),
    ]
});

static DEDUCED_ROOT: LazyLock<Value> =
    LazyLock::new(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));

fn builtin_root(resource: &ResourceInfo) -> &'static Value {
    BUILTIN_ROOTS
        .iter()
        .find(|(group, plural, _)| *group == resource.group && *plural == resource.plural)
        .map(|(_, _, root)| root)
        .unwrap_or(&DEDUCED_ROOT)
}
