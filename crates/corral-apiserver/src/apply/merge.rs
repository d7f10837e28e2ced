//! The typed operations on objects that server-side apply is built from, with
//! structured-merge-diff's semantics: the field set of an applied configuration, the
//! comparison of two objects, merging a configuration into a live object, removing items,
//! and pruning what an applier stopped applying.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, Path, PathElement, key_fields, path_string};
use super::schema::{Schema, Shape};

/// A configuration that cannot be read with its schema (e.g. a list item without its keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for TypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A value as the algorithms walk it.
enum Node<'v, 'a> {
    Leaf(&'v Value),
    Map(&'v Map<String, Value>, Schema<'a>),
    /// An associative list: its items with their path elements, in order.
    List {
        items: Vec<(PathElement, &'v Value)>,
        item_schema: Schema<'a>,
        set: bool,
    },
}

impl Node<'_, '_> {
    fn is_empty_container(&self) -> bool {
        match self {
            Node::Leaf(_) => false,
            Node::Map(map, _) => map.is_empty(),
            Node::List { items, .. } => items.is_empty(),
        }
    }

    fn same_kind(&self, other: &Node<'_, '_>) -> bool {
        match (self, other) {
            (Node::Map(..), Node::Map(..)) => true,
            (Node::List { set: a, .. }, Node::List { set: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// Reads `value` with `schema`. With `strict`, list items that cannot be identified are an
/// error (an applied configuration); otherwise such a list is treated as atomic (a live
/// object written before, or by another path).
fn node<'v, 'a>(
    value: &'v Value,
    schema: Schema<'a>,
    strict: bool,
    path: &[PathElement],
) -> Result<Node<'v, 'a>, TypeError> {
    let shape = schema.shape(value);
    let items = match (&shape, value) {
        (Shape::Leaf, _) => return Ok(Node::Leaf(value)),
        (Shape::Map(schema), Value::Object(map)) => {
            if strict && let Some(unknown) = map.keys().find(|key| !schema.allows(key)) {
                let mut path = path.to_vec();
                path.push(PathElement::Field(unknown.clone()));
                return Err(TypeError {
                    path: path_string(&path),
                    message: "field not declared in schema".into(),
                });
            }
            return Ok(Node::Map(map, *schema));
        }
        (Shape::Set | Shape::Keyed { .. }, Value::Array(items)) => items,
        _ => return Ok(Node::Leaf(value)),
    };
    match list_elements(items, &shape) {
        Ok(elements) => Ok(Node::List {
            items: elements.into_iter().zip(items.iter()).collect(),
            item_schema: match shape {
                Shape::Keyed { items, .. } => items,
                _ => Schema::Deduced,
            },
            set: matches!(shape, Shape::Set),
        }),
        Err(message) if strict => Err(TypeError {
            path: path_string(path),
            message,
        }),
        Err(_) => Ok(Node::Leaf(value)),
    }
}

/// Reads a value that may not fit its schema (a live object): lists whose items cannot be
/// identified are atomic.
fn lenient<'v, 'a>(value: &'v Value, schema: Schema<'a>) -> Node<'v, 'a> {
    node(value, schema, false, &[]).expect("lenient reads do not fail")
}

/// Up to this many items, [`list_elements`] finds duplicates by comparing each item with those
/// before it.
const SCANNED_LIST: usize = 16;

/// The path elements of the items of an associative list; duplicates are an error.
fn list_elements(items: &[Value], shape: &Shape<'_>) -> Result<Vec<PathElement>, String> {
    let mut seen = BTreeSet::new();
    let mut elements = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let element = match shape {
            Shape::Set => match item {
                Value::Object(_) => {
                    return Err(format!(
                        "element {index}: associative list without keys has an element that's a map type"
                    ));
                }
                Value::Array(_) => {
                    return Err(format!(
                        "element {index}: not supported: associative list with lists as elements"
                    ));
                }
                Value::Null => {
                    return Err(format!(
                        "element {index}: associative list without keys has an element that's an explicit null"
                    ));
                }
                scalar => PathElement::Value(scalar.to_string()),
            },
            Shape::Keyed { keys, items } => {
                let Value::Object(map) = item else {
                    return Err(if item.is_null() {
                        format!(
                            "element {index}: associative list with keys may not have a null element"
                        )
                    } else {
                        format!(
                            "element {index}: associative list with keys may not have non-map elements"
                        )
                    });
                };
                let mut fields = Vec::new();
                for key in keys {
                    if let Some(value) = map.get(*key) {
                        fields.push((*key, value));
                    } else if let Some(default) = items.key_default(key) {
                        fields.push((*key, default));
                    }
                }
                if fields.is_empty() {
                    return Err(format!(
                        "element {index}: associative list with keys has an element that omits all key fields {keys:?} (and doesn't have default values for any key fields)"
                    ));
                }
                PathElement::Key(key_fields(fields))
            }
            Shape::Leaf | Shape::Map(_) => unreachable!("only lists have items"),
        };
        // Short lists (conditions, ports) are checked by a scan, without a copy of each
        // element in a set.
        let duplicate = match items.len() <= SCANNED_LIST {
            true => elements.contains(&element),
            false => !seen.insert(element.clone()),
        };
        if duplicate {
            return Err(format!("duplicate entries for key {element}"));
        }
        elements.push(element);
    }
    Ok(elements)
}

// ---------------------------------------------------------------------------------------
// Field sets
// ---------------------------------------------------------------------------------------

/// The fields a value sets: leaves, associative list items, map keys that are not declared
/// struct fields, and empty or null entries. What an applier owns is the field set of its
/// configuration.
pub fn field_set(value: &Value, schema: Schema<'_>, strict: bool) -> Result<FieldSet, TypeError> {
    let mut set = FieldSet::new();
    collect_field_set(value, schema, strict, &mut Vec::new(), &mut set)?;
    Ok(set)
}

fn collect_field_set(
    value: &Value,
    schema: Schema<'_>,
    strict: bool,
    path: &mut Path,
    set: &mut FieldSet,
) -> Result<(), TypeError> {
    match node(value, schema, strict, path)? {
        Node::Leaf(_) => set.insert(path),
        Node::Map(map, schema) => {
            for (key, child) in map {
                let (child_schema, declared) = schema.field(key);
                path.push(PathElement::Field(key.clone()));
                collect_field_set(child, child_schema, strict, path, set)?;
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Node::List {
            items, item_schema, ..
        } => {
            for (element, item) in items {
                path.push(element);
                collect_field_set(item, item_schema, strict, path, set)?;
                set.insert(path);
                path.pop();
            }
        }
    }
    Ok(())
}

/// Adds to `set` the declared struct fields on the way to its members (structured-merge-diff's
/// `EnsureNamedFieldsAreMembers`), so that pruning can remove a struct field an applier
/// no longer sets at all.
pub fn ensure_named_fields(set: &FieldSet, schema: Schema<'_>) -> FieldSet {
    let mut out = FieldSet::new();
    for member in set.members() {
        out.insert_member(member.clone());
    }
    for (element, child) in set.children() {
        let child_schema = match element {
            PathElement::Field(name) => {
                let (child_schema, declared) = schema.field(name);
                if declared {
                    out.insert_member(element.clone());
                }
                child_schema
            }
            _ => schema.items(),
        };
        out.insert_child(element.clone(), ensure_named_fields(child, child_schema));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------

/// What changed between two objects, as field sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Modified or added: what a writer takes ownership of.
    pub fn changed(&self) -> FieldSet {
        self.modified.union(&self.added)
    }

    /// [`Self::changed`], taking the sets: `removed` is what is left.
    pub fn into_changed(self) -> (FieldSet, FieldSet) {
        let Comparison {
            mut added,
            modified,
            removed,
        } = self;
        added.add(&modified);
        (added, removed)
    }

    pub fn retain_top_level(mut self, keep: &dyn Fn(&str) -> bool) -> Comparison {
        self.added.keep_top_level(keep);
        self.modified.keep_top_level(keep);
        self.removed.keep_top_level(keep);
        self
    }
}

pub fn compare(old: &Value, new: &Value, schema: Schema<'_>) -> Comparison {
    let mut comparison = Comparison::default();
    compare_values(
        Some(old),
        Some(new),
        schema,
        &mut Vec::new(),
        &mut comparison,
    );
    comparison
}

/// [`compare`] of two objects as they look without the top-level fields `hidden` and the
/// `metadata` fields `hidden_metadata`, read in place: the field manager compares objects
/// without their type, resourceVersion and managedFields, and copying a whole object to
/// drop those for every update cost more than the comparison. `None` when either object or
/// its `metadata` is not a map; the caller then compares copies. Top-level fields `keep`
/// refuses are not compared at all: the result is the full comparison's
/// [`Comparison::retain_top_level`] (a `/status` write compares the status, not the rest of a
/// Machine that the server copied from the current object).
pub fn compare_without(
    old: &Value,
    new: &Value,
    schema: Schema<'_>,
    hidden: &[&str],
    hidden_metadata: &[&str],
    keep: &dyn Fn(&str) -> bool,
) -> Option<Comparison> {
    let (Value::Object(old_map), Value::Object(new_map)) = (old, new) else {
        return None;
    };
    let (Shape::Map(root), Shape::Map(_)) = (schema.shape(old), schema.shape(new)) else {
        return None;
    };
    let mut out = Comparison::default();
    let mut path = Vec::new();
    for (key, old_child, new_child) in union(Some(old_map), Some(new_map)) {
        let key = key.as_str();
        if hidden.contains(&key) || !keep(key) {
            continue;
        }
        if key != "metadata" && unchanged(old_child, new_child) {
            continue;
        }
        let (child_schema, _) = root.field(key);
        path.push(PathElement::Field(key.to_string()));
        if key == "metadata" {
            let (Some(Value::Object(old_meta)), Some(Value::Object(new_meta))) =
                (old_child, new_child)
            else {
                return None;
            };
            let Shape::Map(meta_schema) = child_schema.shape(old_child.expect("matched")) else {
                return None;
            };
            for (meta_key, old_field, new_field) in union(Some(old_meta), Some(new_meta)) {
                let meta_key = meta_key.as_str();
                if hidden_metadata.contains(&meta_key) || unchanged(old_field, new_field) {
                    continue;
                }
                let (field_schema, _) = meta_schema.field(meta_key);
                path.push(PathElement::Field(meta_key.to_string()));
                compare_differing(old_field, new_field, field_schema, &mut path, &mut out);
                path.pop();
            }
        } else {
            compare_differing(old_child, new_child, child_schema, &mut path, &mut out);
        }
        path.pop();
    }
    Some(out)
}

/// What [`compare`] of an object without fields against `new` finds added, in `FieldsV1`
/// form, written as its JSON text straight from `new`: every field and list item below the
/// root, each of them a member, keys in the order a `FieldsV1` map sorts them. Only the
/// top-level fields `top` admits are written. `metadata` is written without its own
/// membership and without the membership of each of its fields that `metadata_field` does not
/// admit (their children stay; a field left with nothing goes, and so does `metadata`): the
/// fields nobody owns, as the field manager strips them from a writer's set. A create's
/// managedFields entry is this text; building it as a field set (a path element per node,
/// cloned into a trie, list-map keys as pairs of strings), or even as a `FieldsV1` tree, and
/// encoding that was what tracking a validated create's granular `ports` list cost. `None`
/// when `new` is not a map; `{}` when nothing is left.
pub fn created_fields_v1(
    new: &Value,
    schema: Schema<'_>,
    top: &dyn Fn(&str) -> bool,
    metadata_field: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let (Value::Object(map), Shape::Map(schema)) = (new, schema.shape(new)) else {
        return None;
    };
    let mut out = Vec::with_capacity(512);
    let mut key = String::new();
    out.push(b'{');
    let mut first = true;
    for (name, child) in map {
        if !top(name) {
            continue;
        }
        let start = out.len();
        if !first {
            out.push(b',');
        }
        field_key(name, &mut key);
        write_key(&mut out, &key);
        if name == "metadata" {
            if !write_created_metadata(child, schema.field(name).0, metadata_field, &mut out) {
                out.truncate(start);
                continue;
            }
        } else {
            write_created_child(child, schema, name, &mut out);
        }
        first = false;
    }
    out.push(b'}');
    Some(String::from_utf8(out).expect("JSON is UTF-8"))
}

/// `metadata`'s node for [`created_fields_v1`], onto `out`: `false` (and nothing written)
/// when nothing is left of it.
fn write_created_metadata(
    value: &Value,
    schema: Schema<'_>,
    admit: &dyn Fn(&str) -> bool,
    out: &mut Vec<u8>,
) -> bool {
    let (Value::Object(map), Shape::Map(schema)) = (value, schema.shape(value)) else {
        return false;
    };
    let open = out.len();
    out.push(b'{');
    let mut first = true;
    let mut key = String::new();
    for (name, child) in map {
        let start = out.len();
        if !first {
            out.push(b',');
        }
        field_key(name, &mut key);
        write_key(out, &key);
        let node = out.len();
        write_created_child(child, schema, name, out);
        if !admit(name) {
            // Its membership goes: a leaf with it, a node its `.` (always its first key).
            if out[node..] == *b"{}" {
                out.truncate(start);
                continue;
            }
            out.drain(node + 1..node + 1 + MEMBER.len());
        }
        first = false;
    }
    if first {
        out.truncate(open);
        return false;
    }
    out.push(b'}');
    true
}

/// The `.` member key and the comma after it, as a node with children starts.
const MEMBER: &[u8] = br#"".":{},"#;

/// A string as JSON and a colon: a `FieldsV1` key, a list-map key field's name.
fn write_key(out: &mut Vec<u8>, key: &str) {
    // fields_text: a FieldsV1 key.
    serde_json::to_writer(&mut *out, key).expect("strings serialize");
    out.push(b':');
}

/// `f:<name>`, written into `out` (cleared first).
fn field_key(name: &str, out: &mut String) {
    out.clear();
    out.reserve(name.len() + 2);
    out.push_str("f:");
    out.push_str(name);
}

/// [`write_created_member`] of the field `name` of a map whose schema is `parent`. A scalar
/// is a leaf whatever its schema says, so its schema is not looked up (most members of an
/// object are scalars, and each lookup reads the schema's JSON).
fn write_created_child(value: &Value, parent: Schema<'_>, name: &str, out: &mut Vec<u8>) {
    match value {
        Value::Object(_) | Value::Array(_) => {
            write_created_member(value, parent.field(name).0, out)
        }
        _ => out.extend_from_slice(b"{}"),
    }
}

/// The `FieldsV1` node of a member added by a create, onto `out`: `{}` for a leaf (or an
/// empty or atomic container), else `.` and its children. Lists whose items cannot be
/// identified (an item without a key, two items with the same) are atomic, as [`lenient`]
/// reads them.
fn write_created_member(value: &Value, schema: Schema<'_>, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            if let Shape::Map(schema) = schema.shape(value) {
                out.extend_from_slice(br#"{".":{}"#);
                let mut key = String::new();
                for (name, child) in map {
                    out.push(b',');
                    field_key(name, &mut key);
                    write_key(out, &key);
                    write_created_child(child, schema, name, out);
                }
                out.push(b'}');
                return;
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let members: Option<Vec<(String, Vec<u8>)>> = match schema.shape(value) {
                Shape::Set => items
                    .iter()
                    .map(|item| match item {
                        Value::Object(_) | Value::Array(_) | Value::Null => None,
                        scalar => Some((format!("v:{scalar}"), b"{}".to_vec())),
                    })
                    .collect(),
                Shape::Keyed {
                    keys,
                    items: item_schema,
                } => items
                    .iter()
                    .map(|item| {
                        let key = list_map_key(item, &keys, item_schema)?;
                        let mut node = Vec::new();
                        write_created_member(item, item_schema, &mut node);
                        Some((key, node))
                    })
                    .collect(),
                _ => None,
            };
            if let Some(mut members) = members {
                // A `FieldsV1` map's order; a key twice makes the list atomic.
                members.sort_by(|a, b| a.0.cmp(&b.0));
                if !members.windows(2).any(|pair| pair[0].0 == pair[1].0) {
                    out.extend_from_slice(br#"{".":{}"#);
                    for (key, node) in members {
                        out.push(b',');
                        write_key(out, &key);
                        out.extend_from_slice(&node);
                    }
                    out.push(b'}');
                    return;
                }
            }
        }
        _ => {}
    }
    out.extend_from_slice(b"{}");
}

/// `k:{"name":"http"}`: the `FieldsV1` key of a list-map item, written straight from the item
/// (the key fields sorted by name, values as JSON text, a missing key field by its default),
/// equal to the key of [`list_elements`]'s path element. `None` when the item is no object or
/// has none of the key fields.
fn list_map_key(item: &Value, keys: &[&str], item_schema: Schema<'_>) -> Option<String> {
    let Value::Object(map) = item else {
        return None;
    };
    let mut fields: Vec<(&str, &Value)> = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(value) = map.get(*key).or_else(|| item_schema.key_default(key)) {
            fields.push((key, value));
        }
    }
    if fields.is_empty() {
        return None;
    }
    fields.sort_by(|a, b| a.0.cmp(b.0));
    if fields.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        // The same key field named twice: the element's own sort decides the order.
        let element = PathElement::Key(key_fields(fields));
        return Some(element.fields_v1_key());
    }
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(b"k:{");
    for (index, (name, value)) in fields.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_key(&mut out, name);
        // fields_text: a list item's key field.
        serde_json::to_writer(&mut out, value).expect("JSON values serialize");
    }
    out.push(b'}');
    Some(String::from_utf8(out).expect("JSON is UTF-8"))
}

/// The keys of two maps in order, each with its value in either: serde_json's maps are
/// sorted by key (see `schema::tests::json_maps_iterate_in_key_order`), so their union is a
/// merge of the two, without a set of keys built and each key looked up again.
fn union<'m>(
    old: Option<&'m Map<String, Value>>,
    new: Option<&'m Map<String, Value>>,
) -> impl Iterator<Item = (&'m String, Option<&'m Value>, Option<&'m Value>)> {
    let mut old = old.into_iter().flatten().peekable();
    let mut new = new.into_iter().flatten().peekable();
    std::iter::from_fn(move || {
        let order = match (old.peek(), new.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((a, _)), Some((b, _))) => a.cmp(b),
        };
        Some(match order {
            std::cmp::Ordering::Less => {
                let (key, value) = old.next().expect("peeked");
                (key, Some(value), None)
            }
            std::cmp::Ordering::Greater => {
                let (key, value) = new.next().expect("peeked");
                (key, None, Some(value))
            }
            std::cmp::Ordering::Equal => {
                let (key, old_value) = old.next().expect("peeked");
                let (_, new_value) = new.next().expect("peeked");
                (key, Some(old_value), Some(new_value))
            }
        })
    })
}

fn compare_values(
    old: Option<&Value>,
    new: Option<&Value>,
    schema: Schema<'_>,
    path: &mut Path,
    out: &mut Comparison,
) {
    if !unchanged(old, new) {
        compare_differing(old, new, schema, path, out);
    }
}

/// Equal values have no changes below them: most of an update (all but a few status fields)
/// is checked in one comparison instead of field by field, and without a path element made
/// for each of them.
fn unchanged(old: Option<&Value>, new: Option<&Value>) -> bool {
    matches!((old, new), (Some(a), Some(b)) if a == b)
}

/// [`compare_values`] of values known not to be equal.
fn compare_differing(
    old: Option<&Value>,
    new: Option<&Value>,
    schema: Schema<'_>,
    path: &mut Path,
    out: &mut Comparison,
) {
    let old_node = old.map(|value| lenient(value, schema));
    let new_node = new.map(|value| lenient(value, schema));
    let containers =
        |node: &Option<Node<'_, '_>>| node.as_ref().is_none_or(|n| !matches!(n, Node::Leaf(_)));
    let both_empty = old_node.as_ref().is_none_or(Node::is_empty_container)
        && new_node.as_ref().is_none_or(Node::is_empty_container);
    let same_kind = match (&old_node, &new_node) {
        (Some(a), Some(b)) => a.same_kind(b),
        _ => true,
    };
    if containers(&old_node) && containers(&new_node) && !both_empty && same_kind {
        compare_children(old_node.as_ref(), new_node.as_ref(), path, out);
        if old.is_none() {
            out.added.insert(path);
        } else if new.is_none() {
            out.removed.insert(path);
        }
        return;
    }
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(a), Some(b)) if a != b => {
            // A value that changed kind (a map became a string): what was below it is gone,
            // what is below it now is new.
            if let Some(old_node) = &old_node
                && !matches!(old_node, Node::Leaf(_))
            {
                let mut gone = Comparison::default();
                compare_children(Some(old_node), None, path, &mut gone);
                out.removed.add(&gone.removed);
            }
            if let Some(new_node) = &new_node
                && !matches!(new_node, Node::Leaf(_))
            {
                let mut fresh = Comparison::default();
                compare_children(None, Some(new_node), path, &mut fresh);
                out.added.add(&fresh.added);
            }
            out.modified.insert(path);
        }
        _ => {}
    }
}

fn compare_children(
    old: Option<&Node<'_, '_>>,
    new: Option<&Node<'_, '_>>,
    path: &mut Path,
    out: &mut Comparison,
) {
    match (old, new) {
        (Some(Node::Map(..)) | None, Some(Node::Map(..)) | None) => {
            let old_map = match old {
                Some(Node::Map(map, _)) => Some(*map),
                _ => None,
            };
            let new_map = match new {
                Some(Node::Map(map, _)) => Some(*map),
                _ => None,
            };
            let schema = match (old, new) {
                (Some(Node::Map(_, schema)), _) | (_, Some(Node::Map(_, schema))) => *schema,
                _ => return,
            };
            for (key, old_child, new_child) in union(old_map, new_map) {
                if unchanged(old_child, new_child) {
                    continue;
                }
                let (child_schema, _) = schema.field(key);
                path.push(PathElement::Field(key.clone()));
                compare_differing(old_child, new_child, child_schema, path, out);
                path.pop();
            }
        }
        _ => {
            let (old_items, new_items, item_schema) = match (old, new) {
                (
                    Some(Node::List {
                        items, item_schema, ..
                    }),
                    other,
                ) => (
                    Some(items),
                    match other {
                        Some(Node::List { items, .. }) => Some(items),
                        _ => None,
                    },
                    *item_schema,
                ),
                (
                    None,
                    Some(Node::List {
                        items, item_schema, ..
                    }),
                ) => (None, Some(items), *item_schema),
                _ => return,
            };
            if let (Some(old_items), Some(new_items)) = (old_items, new_items)
                && old_items.len() == new_items.len()
                && old_items
                    .iter()
                    .zip(new_items.iter())
                    .all(|((old, _), (new, _))| old == new)
            {
                // The same items in the same order (a status write's conditions): paired by
                // position, without indexing either list.
                for ((element, old_item), (_, new_item)) in old_items.iter().zip(new_items) {
                    if unchanged(Some(old_item), Some(new_item)) {
                        continue;
                    }
                    path.push(element.clone());
                    compare_differing(Some(old_item), Some(new_item), item_schema, path, out);
                    path.pop();
                }
                return;
            }
            let old_index: BTreeMap<&PathElement, &Value> = old_items
                .into_iter()
                .flatten()
                .map(|(e, v)| (e, *v))
                .collect();
            let new_index: BTreeMap<&PathElement, &Value> = new_items
                .into_iter()
                .flatten()
                .map(|(e, v)| (e, *v))
                .collect();
            let elements: BTreeSet<&PathElement> =
                old_index.keys().chain(new_index.keys()).copied().collect();
            for element in elements {
                let (old_item, new_item) = (
                    old_index.get(element).copied(),
                    new_index.get(element).copied(),
                );
                if unchanged(old_item, new_item) {
                    continue;
                }
                path.push(element.clone());
                compare_differing(old_item, new_item, item_schema, path, out);
                path.pop();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------------------

/// Merges an applied configuration into the live object: scalars and atomic values from the
/// configuration win, granular maps merge by key, associative lists by item (keeping the
/// live order for items only the live object has and the configuration's order for its
/// items). A `null` in the configuration removes a scalar.
pub fn merge(live: &Value, config: &Value, schema: Schema<'_>) -> Result<Value, TypeError> {
    Ok(merge_values(Some(live), config, schema, &mut Vec::new())?
        .unwrap_or_else(|| Value::Object(Map::new())))
}

fn merge_values(
    live: Option<&Value>,
    config: &Value,
    schema: Schema<'_>,
    path: &mut Path,
) -> Result<Option<Value>, TypeError> {
    let config_node = node(config, schema, true, path)?;
    let live_node = match live {
        Some(live) => Some(node(live, schema, false, path)?),
        None => None,
    };
    match (&live_node, &config_node) {
        (Some(Node::Map(..) | Node::List { .. }), Node::Leaf(Value::Null)) => {
            // structured-merge-diff keeps a granular value that the configuration nulls.
            Ok(live.cloned())
        }
        (_, Node::Leaf(Value::Null)) => Ok(None),
        (_, Node::Leaf(value)) => Ok(Some((*value).clone())),
        (live_node, Node::Map(config_map, map_schema)) => {
            let mut out = match live_node {
                Some(Node::Map(live_map, _)) => (*live_map).clone(),
                _ => Map::new(),
            };
            for (key, config_value) in *config_map {
                let (child_schema, _) = map_schema.field(key);
                path.push(PathElement::Field(key.clone()));
                let merged = merge_values(out.get(key), config_value, child_schema, path)?;
                path.pop();
                match merged {
                    Some(value) => {
                        out.insert(key.clone(), value);
                    }
                    None => {
                        out.remove(key);
                    }
                }
            }
            Ok(Some(Value::Object(out)))
        }
        (
            live_node,
            Node::List {
                items: config_items,
                item_schema,
                ..
            },
        ) => {
            let live_items: &[(PathElement, &Value)] = match live_node {
                Some(live_node @ Node::List { items, .. }) if live_node.same_kind(&config_node) => {
                    items
                }
                _ => &[],
            };
            merge_lists(live_items, config_items, *item_schema, path).map(Some)
        }
    }
}

/// structured-merge-diff's list order: walk both lists; items only the live list has stay
/// where they are, items of the configuration come in its order, and a shared item is
/// emitted where the configuration puts it.
fn merge_lists(
    live: &[(PathElement, &Value)],
    config: &[(PathElement, &Value)],
    item_schema: Schema<'_>,
    path: &mut Path,
) -> Result<Value, TypeError> {
    let live_index: BTreeMap<&PathElement, &Value> = live.iter().map(|(e, v)| (e, *v)).collect();
    let config_index: BTreeSet<&PathElement> = config.iter().map(|(e, _)| e).collect();
    let mut shared = config
        .iter()
        .map(|(e, _)| e)
        .filter(|e| live_index.contains_key(e))
        .peekable();
    let mut emitted: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(live.len().max(config.len()));
    let mut merge_item = |element: &PathElement,
                          config_item: &Value,
                          out: &mut Vec<Value>|
     -> Result<(), TypeError> {
        path.push(element.clone());
        let merged = merge_values(
            live_index.get(element).copied(),
            config_item,
            item_schema,
            path,
        )?;
        path.pop();
        out.extend(merged);
        Ok(())
    };
    let (mut l, mut c) = (0, 0);
    while l < live.len() || c < config.len() {
        if l < live.len() && c < config.len() {
            let live_element = &live[l].0;
            if *live_element == config[c].0 {
                merge_item(live_element, config[c].1, &mut out)?;
                emitted.insert(live_element);
                if shared.peek() == Some(&live_element) {
                    shared.next();
                }
                l += 1;
                c += 1;
                continue;
            }
            let waiting_for_another = shared.peek().is_some_and(|next| *next != live_element);
            if config_index.contains(live_element) && waiting_for_another {
                // Shared, but the configuration places it later: emitted when reached there.
                l += 1;
                continue;
            }
        }
        if l < live.len() {
            let live_element = &live[l].0;
            if !config_index.contains(live_element) {
                out.push(live[l].1.clone());
                l += 1;
                continue;
            }
            if emitted.contains(live_element) {
                l += 1;
            }
        }
        if c < config.len() {
            let element = &config[c].0;
            merge_item(element, config[c].1, &mut out)?;
            emitted.insert(element);
            if shared.peek() == Some(&element) {
                shared.next();
            }
            c += 1;
        }
    }
    Ok(Value::Array(out))
}

// ---------------------------------------------------------------------------------------
// Removal and pruning
// ---------------------------------------------------------------------------------------

/// Removes every member of `set` (with what is below it) from `value`. A map or list that
/// loses its last entry this way is removed too (structured-merge-diff leaves a null, which
/// kube-apiserver's defaulting then drops for non-nullable fields).
pub fn remove_items(value: &Value, set: &FieldSet, schema: Schema<'_>) -> Value {
    remove_below(value, set, schema).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_below(value: &Value, set: &FieldSet, schema: Schema<'_>) -> Option<Value> {
    match lenient(value, schema) {
        Node::Leaf(_) => Some(value.clone()),
        Node::Map(map, schema) => {
            let mut out = Map::new();
            for (key, child) in map {
                let element = PathElement::Field(key.clone());
                if set.is_member(&element) {
                    continue;
                }
                let kept = match set.child(&element) {
                    Some(below) => remove_below(child, below, schema.field(key).0),
                    None => Some(child.clone()),
                };
                if let Some(kept) = kept {
                    out.insert(key.clone(), kept);
                }
            }
            (!out.is_empty() || map.is_empty()).then_some(Value::Object(out))
        }
        Node::List {
            items, item_schema, ..
        } => {
            let mut out = Vec::new();
            for (element, item) in &items {
                if set.is_member(element) {
                    continue;
                }
                let kept = match set.child(element) {
                    Some(below) => remove_below(item, below, item_schema),
                    None => Some((*item).clone()),
                };
                out.extend(kept);
            }
            (!out.is_empty() || items.is_empty()).then_some(Value::Array(out))
        }
    }
}

/// Removes what the applier owned last time (`last`), no longer applies, and nobody else
/// owns (`owned`: every manager's set after this apply, the applier's new one included).
/// structured-merge-diff's `prune`: remove everything last owned, add back what is owned,
/// then keep what was removed only as a side effect.
pub fn prune(merged: &Value, last: &FieldSet, owned: &FieldSet, schema: Schema<'_>) -> Value {
    if last.is_empty() {
        return merged.clone();
    }
    let ensure = |set: &FieldSet| ensure_named_fields(set, schema);
    let set_of = |value: &Value| {
        ensure(&field_set(value, schema, false).expect("lenient reads do not fail"))
    };
    let last = ensure(last);
    let merged_set = set_of(merged);

    let pruned = remove_items(merged, &last, schema);
    let keep = set_of(&pruned).union(&ensure(owned));
    let pruned = remove_items(merged, &merged_set.difference(&keep), schema);

    let removed = merged_set.difference(&set_of(&pruned));
    remove_items(merged, &removed.intersection(&last), schema)
}
