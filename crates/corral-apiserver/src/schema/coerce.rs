//! What apiextensions does to a custom resource while decoding it, on requests and on reads
//! from storage: pruning fields the schema does not know, dropping nulls the schema does not
//! allow, and filling in defaults.

use serde_json::{Map, Value};

use super::structural::{Additional, Schema, seek};

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

/// Where pruning is in the object, as a chain of borrowed segments on the stack: walking an
/// object allocates nothing for it, and a path is rendered only for an unknown field.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    /// Upstream's rendering: `spec.a.b`, `spec.list[2].c` (a key is dotted only after
    /// something).
    fn write(&self, out: &mut String) {
        match self {
            At::Root => {}
            At::Key(parent, key) => {
                parent.write(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            At::Index(parent, index) => {
                use std::fmt::Write as _;
                parent.write(out);
                let _ = write!(out, "[{index}]");
            }
        }
    }
}

/// Unknown field paths as upstream's pruning records them: `spec.a.b`, `spec.list[2].c`.
struct Pruner {
    track: bool,
    unknown: Vec<String>,
}

impl Pruner {
    /// Records the unknown field `key` of the map at `at`.
    fn record(&mut self, at: &At<'_>, key: &str) {
        if !self.track {
            return;
        }
        let mut path = String::new();
        At::Key(at, key).write(&mut path);
        self.unknown.push(path);
    }

    /// Prunes `value` and drops the nulls its schema does not allow ([`prune_nulls`]), in one
    /// walk. `embedded`: the node is a resource, so its apiVersion, kind and metadata stay.
    fn prune(&mut self, value: &mut Value, schema: Option<&Schema>, embedded: bool, at: &At<'_>) {
        if let Some(schema) = schema
            && schema.preserve_unknown_fields
        {
            self.skip_prune(value, schema, embedded, at);
            return;
        }
        match value {
            Value::Object(map) => {
                let Some(schema) = schema else {
                    for key in map.keys() {
                        self.record(at, key);
                    }
                    map.clear();
                    return;
                };
                let embedded = embedded || schema.embedded_resource;
                // Most objects lose nothing: one pass walks them (the map's sorted keys beside
                // the schema's sorted properties), and only one that loses a member is walked
                // again to remove it.
                let mut properties = schema.properties.iter().peekable();
                let mut removes = false;
                for (key, child) in map.iter_mut() {
                    let property = seek(&mut properties, key);
                    let field = property.or_else(|| schema.additional_schema());
                    if drops_null(child, field) {
                        removes = true;
                        continue;
                    }
                    match member(schema, property, key, embedded) {
                        Member::TypeMeta => prune_nulls(child, field),
                        Member::Known(child_schema) => {
                            self.prune(child, child_schema, false, &At::Key(at, key));
                        }
                        Member::Unknown => {
                            if !TYPE_AND_META.contains(&key.as_str()) || !is_root(at) {
                                self.record(at, key);
                            }
                            removes = true;
                        }
                    }
                }
                if removes {
                    map.retain(|key, child| {
                        let property = schema.properties.get(key);
                        !drops_null(child, schema.field(key))
                            && !matches!(member(schema, property, key, embedded), Member::Unknown)
                    });
                }
            }
            Value::Array(items) => {
                let item_schema = schema.and_then(|s| s.items.as_deref());
                for (index, item) in items.iter_mut().enumerate() {
                    self.prune(item, item_schema, false, &At::Index(at, index));
                }
            }
            _ => {}
        }
    }

    /// Under `x-kubernetes-preserve-unknown-fields`: unknown fields stay, known ones are
    /// pruned by their own schemas (and dropped when null where their schema does not allow
    /// it).
    fn skip_prune(&mut self, value: &mut Value, schema: &Schema, embedded: bool, at: &At<'_>) {
        match value {
            Value::Object(map) => {
                let embedded = embedded || schema.embedded_resource;
                let mut properties = schema.properties.iter().peekable();
                let mut removes = false;
                for (key, child) in map.iter_mut() {
                    let property = seek(&mut properties, key);
                    let field = property.or_else(|| schema.additional_schema());
                    if drops_null(child, field) {
                        removes = true;
                        continue;
                    }
                    match member(schema, property, key, embedded) {
                        Member::Known(child_schema) => {
                            self.prune(child, child_schema, false, &At::Key(at, key));
                        }
                        Member::TypeMeta | Member::Unknown => prune_nulls(child, field),
                    }
                }
                if removes {
                    map.retain(|key, child| !drops_null(child, schema.field(key)));
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.items.as_deref() {
                    for (index, item) in items.iter_mut().enumerate() {
                        self.skip_prune(item, item_schema, false, &At::Index(at, index));
                    }
                }
            }
            _ => {}
        }
    }
}

/// What pruning does with a member of a map, by the map's schema.
enum Member<'s> {
    /// `apiVersion`, `kind` or `metadata` of a resource: kept as they are.
    TypeMeta,
    /// Declared (or allowed by `additionalProperties`), with its schema if it has one.
    Known(Option<&'s Schema>),
    /// Dropped.
    Unknown,
}

/// The member `key` of a map whose schema is `schema`; `property` is `key`'s declared schema.
fn member<'s>(
    schema: &'s Schema,
    property: Option<&'s Schema>,
    key: &str,
    embedded: bool,
) -> Member<'s> {
    if embedded && TYPE_AND_META.contains(&key) {
        return Member::TypeMeta;
    }
    if let Some(property) = property {
        return Member::Known(Some(property));
    }
    match &schema.additional_properties {
        Some(Additional::Schema(additional)) => Member::Known(Some(&**additional)),
        Some(Additional::Allows(_)) => Member::Known(None),
        None => Member::Unknown,
    }
}

/// Whether `value` is a null its schema neither allows nor defaults.
fn drops_null(value: &Value, schema: Option<&Schema>) -> bool {
    value.is_null() && schema.is_some_and(|s| !s.nullable && s.default.is_none())
}

/// Whether pruning is at the object's top: what upstream's pruning tells apart by an empty
/// path (a key `""` at the top leaves it empty too).
fn is_root(at: &At<'_>) -> bool {
    match at {
        At::Root => true,
        At::Key(parent, key) => key.is_empty() && is_root(parent),
        At::Index(..) => false,
    }
}

/// Drops the fields `schema` does not know (the root is a resource: apiVersion, kind and
/// metadata stay) and the nulls it does not allow ([`prune_nulls`]). With `track`, returns
/// the dropped fields' paths, sorted.
pub fn prune(object: &mut Value, schema: &Schema, track: bool) -> Vec<String> {
    let mut pruner = Pruner {
        track,
        unknown: Vec::new(),
    };
    pruner.prune(object, Some(schema), true, &At::Root);
    pruner.unknown.sort();
    pruner.unknown
}

/// Drops `null` values of fields that are neither nullable nor defaulted, as decoding into a
/// Go struct would. [`prune`] does it too; this is for what pruning keeps without walking
/// (a resource's type fields, what `x-kubernetes-preserve-unknown-fields` keeps).
fn prune_nulls(value: &mut Value, schema: Option<&Schema>) {
    match value {
        Value::Object(map) => {
            map.retain(|key, child| {
                let child_schema = schema.and_then(|s| s.field(key));
                if drops_null(child, child_schema) {
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
/// through properties, additional properties and list items. Subtrees whose schemas have no
/// default are not walked (a null there would be replaced by null).
pub fn default(value: &mut Value, schema: &Schema) {
    if !schema.defaults_within {
        return;
    }
    match value {
        Value::Object(map) => {
            for (name, property) in &schema.properties {
                if !property.defaults_within {
                    continue;
                }
                if let Some(default) = &property.default {
                    let missing = match map.get(name) {
                        None => true,
                        Some(current) => non_nullable_null(current, property),
                    };
                    if missing {
                        map.insert(name.clone(), default.clone());
                    }
                }
                if let Some(child) = map.get_mut(name) {
                    self::default(child, property);
                }
            }
            if let Some(additional) = schema.additional_schema()
                && additional.defaults_within
            {
                for (key, child) in map.iter_mut() {
                    if schema.properties.contains_key(key) {
                        continue;
                    }
                    if non_nullable_null(child, additional) {
                        *child = additional.default.clone().unwrap_or(Value::Null);
                    }
                    self::default(child, additional);
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
