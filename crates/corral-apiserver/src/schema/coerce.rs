//! What apiextensions does to a custom resource while decoding it, on requests and on reads
//! from storage: pruning fields the schema does not know, dropping nulls the schema does not
//! allow, and filling in defaults.

use serde_json::{Map, Value};

use super::structural::{Additional, Schema};

/// The fields an object's root (and every embedded resource) keeps without the schema
/// declaring them.
const TYPE_AND_META: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The fields of `ObjectMeta`; anything else in `metadata` is unknown.
const OBJECT_META_FIELDS: [&str; 15] = [
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

/// Unknown field paths as upstream's pruning records them: `spec.a.b`, `spec.list[2].c`.
struct Pruner {
    track: bool,
    path: String,
    unknown: Vec<String>,
}

impl Pruner {
    fn record(&mut self, key: &str) {
        if !self.track {
            return;
        }
        if self.path.is_empty() {
            self.unknown.push(key.to_string());
        } else {
            self.unknown.push(format!("{}.{key}", self.path));
        }
    }

    fn push_key(&mut self, key: &str) -> usize {
        let length = self.path.len();
        if self.track {
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(key);
        }
        length
    }

    fn push_index(&mut self, index: usize) -> usize {
        let length = self.path.len();
        if self.track {
            self.path.push_str(&format!("[{index}]"));
        }
        length
    }

    /// `embedded`: the node is a resource, so its apiVersion, kind and metadata stay.
    fn prune(&mut self, value: &mut Value, schema: Option<&Schema>, embedded: bool) {
        if let Some(schema) = schema
            && schema.preserve_unknown_fields
        {
            self.skip_prune(value, schema, embedded);
            return;
        }
        match value {
            Value::Object(map) => {
                let Some(schema) = schema else {
                    for key in map.keys() {
                        self.record(key);
                    }
                    map.clear();
                    return;
                };
                let embedded = embedded || schema.embedded_resource;
                map.retain(|key, child| {
                    if embedded && TYPE_AND_META.contains(&key.as_str()) {
                        return true;
                    }
                    let child_schema = if let Some(property) = schema.properties.get(key) {
                        Some(Some(property))
                    } else {
                        match &schema.additional_properties {
                            Some(Additional::Schema(additional)) => Some(Some(&**additional)),
                            Some(Additional::Allows(_)) => Some(None),
                            None => None,
                        }
                    };
                    match child_schema {
                        Some(child_schema) => {
                            let length = self.push_key(key);
                            self.prune(child, child_schema, false);
                            self.path.truncate(length);
                            true
                        }
                        None => {
                            if !TYPE_AND_META.contains(&key.as_str()) || !self.path.is_empty() {
                                self.record(key);
                            }
                            false
                        }
                    }
                });
            }
            Value::Array(items) => {
                let item_schema = schema.and_then(|s| s.items.as_deref());
                for (index, item) in items.iter_mut().enumerate() {
                    let length = self.push_index(index);
                    self.prune(item, item_schema, false);
                    self.path.truncate(length);
                }
            }
            _ => {}
        }
    }

    /// Under `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are
    /// pruned by their own schemas.
    fn skip_prune(&mut self, value: &mut Value, schema: &Schema, embedded: bool) {
        match value {
            Value::Object(map) => {
                let embedded = embedded || schema.embedded_resource;
                for (key, child) in map.iter_mut() {
                    if embedded && TYPE_AND_META.contains(&key.as_str()) {
                        continue;
                    }
                    let child_schema = if let Some(property) = schema.properties.get(key) {
                        Some(Some(property))
                    } else {
                        match &schema.additional_properties {
                            Some(Additional::Schema(additional)) => Some(Some(&**additional)),
                            Some(Additional::Allows(_)) => Some(None),
                            None => None,
                        }
                    };
                    if let Some(child_schema) = child_schema {
                        let length = self.push_key(key);
                        self.prune(child, child_schema, false);
                        self.path.truncate(length);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.items.as_deref() {
                    for (index, item) in items.iter_mut().enumerate() {
                        let length = self.push_index(index);
                        self.skip_prune(item, item_schema, false);
                        self.path.truncate(length);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Drops the fields `schema` does not know (the root is a resource: apiVersion, kind and
/// metadata stay). With `track`, returns the dropped paths, sorted.
pub fn prune(object: &mut Value, schema: &Schema, track: bool) -> Vec<String> {
    let mut pruner = Pruner {
        track,
        path: String::new(),
        unknown: Vec::new(),
    };
    pruner.prune(object, Some(schema), true);
    pruner.unknown.sort();
    pruner.unknown
}

/// Drops `null` values of fields that are neither nullable nor defaulted, as decoding into a
/// Go struct would.
pub fn prune_nulls(value: &mut Value, schema: Option<&Schema>) {
    match value {
        Value::Object(map) => {
            map.retain(|key, child| {
                let child_schema = schema.and_then(|s| s.field(key));
                if child.is_null()
                    && child_schema.is_some_and(|s| !s.nullable && s.default.is_none())
                {
                    return false;
                }
                prune_nulls(child, child_schema);
                true
            });
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            for item in items {
                prune_nulls(item, item_schema);
            }
        }
        _ => {}
    }
}

fn non_nullable_null(value: &Value, schema: &Schema) -> bool {
    value.is_null() && !schema.nullable
}

/// Fills in `default`s: absent fields, and nulls where null is not allowed, recursively
/// through properties, additional properties and list items.
pub fn default(value: &mut Value, schema: &Schema) {
    match value {
        Value::Object(map) => {
            for (name, property) in &schema.properties {
                let Some(default) = &property.default else {
                    continue;
                };
                let missing = match map.get(name) {
                    None => true,
                    Some(current) => non_nullable_null(current, property),
                };
                if missing {
                    map.insert(name.clone(), default.clone());
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    default(child, property);
                } else if let Some(additional) = schema.additional_schema() {
                    if non_nullable_null(child, additional) {
                        *child = additional.default.clone().unwrap_or(Value::Null);
                    }
                    default(child, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for item in items {
                    if non_nullable_null(item, item_schema) {
                        *item = item_schema.default.clone().unwrap_or(Value::Null);
                    }
                    default(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

fn prune_object_meta(metadata: &mut Map<String, Value>, prefix: &str, unknown: &mut Vec<String>) {
    metadata.retain(|key, _| {
        let known = OBJECT_META_FIELDS.contains(&key.as_str());
        if !known {
            unknown.push(format!("{prefix}.{key}"));
        }
        known
    });
}

/// Drops unknown `metadata` fields of the object and of every embedded resource in it,
/// returning their paths: the root's, and the embedded resources' (sorted).
pub fn prune_metadata(object: &mut Value, schema: &Schema) -> (Vec<String>, Vec<String>) {
    let mut root = Vec::new();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        prune_object_meta(metadata, "metadata", &mut root);
    }
    let mut embedded = Vec::new();
    prune_embedded_metadata(
        object,
        Some(schema),
        &super::field::Path::root(),
        &mut embedded,
    );
    embedded.sort();
    (root, embedded)
}

fn prune_embedded_metadata(
    value: &mut Value,
    schema: Option<&Schema>,
    path: &super::field::Path,
    unknown: &mut Vec<String>,
) {
    let Some(schema) = schema.filter(|schema| schema.embedded_within) else {
        return;
    };
    match value {
        Value::Object(map) => {
            if schema.embedded_resource
                && let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut)
            {
                prune_object_meta(metadata, &path.child("metadata").render(), unknown);
            }
            for (key, child) in map.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    prune_embedded_metadata(child, Some(property), &path.child(key), unknown);
                } else if let Some(additional) = schema.additional_schema() {
                    prune_embedded_metadata(child, Some(additional), &path.key(key), unknown);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                prune_embedded_metadata(item, schema.items.as_deref(), &path.index(index), unknown);
            }
        }
        _ => {}
    }
}
