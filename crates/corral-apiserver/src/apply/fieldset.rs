//! Field sets: which parts of an object a manager owns, as a trie of path elements, and its
//! wire form `FieldsV1` (structured-merge-diff's JSON encoding: `f:<field>`, `k:{...}`,
//! `v:<value>`, `i:<index>`, and `.` for "this node itself is a member").

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// One step into an object.
///
/// The derived order (fields, then keys, then values, then indices) is structured-merge-diff's.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of a map or struct: `f:<name>`.
    Field(String),
    /// An item of a list with `x-kubernetes-list-type: map`, by its key fields: pairs of
    /// (name, value as JSON text), sorted by name. `k:{"name":"nginx"}`.
    Key(Vec<(String, String)>),
    /// An item of a list with `x-kubernetes-list-type: set`, by its value as JSON text:
    /// `v:"a"`.
    Value(String),
    /// An item by position: `i:<n>`. Never produced here (no list type of a CRD or of the
    /// built-ins served uses it) but accepted in managedFields.
    Index(usize),
}

impl PathElement {
    #[cfg(test)]
    pub fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    /// The key of a `FieldsV1` object.
    pub fn fields_v1_key(&self) -> String {
        self.to_fields_v1_key()
    }

    fn to_fields_v1_key(&self) -> String {
        let prefixed = |prefix: &str, rest: &str| {
            let mut key = String::with_capacity(prefix.len() + rest.len());
            key.push_str(prefix);
            key.push_str(rest);
            key
        };
        match self {
            PathElement::Field(name) => prefixed("f:", name),
            PathElement::Key(fields) => {
                let mut key = String::from("k:");
                write_key_json(fields, &mut key);
                key
            }
            PathElement::Value(json) => prefixed("v:", json),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    fn from_fields_v1_key(raw: &str) -> Result<PathElement, String> {
        let invalid = |why: &str| format!("invalid path element {raw:?}: {why}");
        let (prefix, rest) = raw
            .split_once(':')
            .ok_or_else(|| invalid("missing prefix"))?;
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "k" => {
                let Ok(Value::Object(map)) = serde_json::from_str::<Value>(rest) else {
                    return Err(invalid("a key must be a JSON object"));
                };
                if map.is_empty() {
                    return Err(invalid("a key must have at least one field"));
                }
                Ok(PathElement::Key(key_fields(
                    map.iter().map(|(name, value)| (name.as_str(), value)),
                )))
            }
            "v" => {
                let value: Value =
                    serde_json::from_str(rest).map_err(|_| invalid("a value must be JSON"))?;
                Ok(PathElement::Value(value.to_string()))
            }
            "i" => rest
                .parse()
                .map(PathElement::Index)
                .map_err(|_| invalid("an index must be a number")),
            _ => Err(invalid("unknown prefix")),
        }
    }
}

/// Key fields in canonical form: sorted by name, values as JSON text.
pub fn key_fields<'v>(
    fields: impl IntoIterator<Item = (&'v str, &'v Value)>,
) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = fields
        .into_iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    fields.sort();
    fields
}

/// `{"name":"nginx","port":80}`: the key fields as one JSON object, appended to `out`.
fn write_key_json(fields: &[(String, String)], out: &mut String) {
    out.push('{');
    for (index, (name, value)) in fields.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        // fields_text: a string.
        out.push_str(&serde_json::to_string(name).expect("strings serialize"));
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
}

/// As structured-merge-diff prints a path element: `.name`, `[name="nginx"]`, `[="a"]`, `[0]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let inner: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={value}"))
                    .collect();
                write!(f, "[{}]", inner.join(","))
            }
            PathElement::Value(json) => write!(f, "[={json}]"),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

pub type Path = Vec<PathElement>;

/// `.spec.ports[name="http"].port`
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths, stored as a trie: a path is a member when its last element is in
/// `members` of the node its prefix leads to. A node can have children without being a
/// member itself (`f:spec` over `f:spec.f:color`). Child nodes are never empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds `path`; the empty path (the object itself) is never a member. Elements already
    /// in the trie are not copied again (a set is built one path at a time, and most of each
    /// path's elements are there already).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                if !self.members.contains(last) {
                    self.members.insert(last.clone());
                }
            }
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert(rest),
                None => self.children.entry(first.clone()).or_default().insert(rest),
            },
        }
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    pub fn is_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element`, relative to it.
    pub fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut result = self.clone();
        result.add(other);
        result
    }

    /// Adds every path of `other`, in place: [`Self::union`] without copying `self`.
    pub fn add(&mut self, other: &FieldSet) {
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        for member in &other.members {
            if !self.members.contains(member) {
                self.members.insert(member.clone());
            }
        }
        for (element, child) in &other.children {
            match self.children.get_mut(element) {
                Some(existing) => existing.add(child),
                None => {
                    self.children.insert(element.clone(), child.clone());
                }
            }
        }
    }

    /// The paths of `self` that are not paths of `other` (paths, not subtrees: removing
    /// `.spec` keeps `.spec.color`).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(other_child) => child.difference(other_child),
                None => child.clone(),
            };
            if !rest.is_empty() {
                children.insert(element.clone(), rest);
            }
        }
        FieldSet { members, children }
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, child) in &self.children {
            if let Some(other_child) = other.children.get(element) {
                let common = child.intersection(other_child);
                if !common.is_empty() {
                    children.insert(element.clone(), common);
                }
            }
        }
        FieldSet { members, children }
    }

    /// Keeps only the paths under the top-level fields `keep` accepts (the reset-fields
    /// filter of kube-apiserver's strategies, e.g. everything but `status` on the main
    /// resource).
    pub fn keep_top_level(&mut self, keep: impl Fn(&str) -> bool) {
        let accepted = |element: &PathElement| match element {
            PathElement::Field(name) => keep(name),
            _ => true,
        };
        self.members.retain(|e| accepted(e));
        self.children.retain(|e, _| accepted(e));
    }

    /// Removes the given members of the top level (kube-apiserver's strip set is paths, not
    /// subtrees, so this never touches children).
    pub fn remove_paths(&mut self, paths: &[&[&str]]) {
        for path in paths {
            self.remove_fields(path);
        }
    }

    /// Removes the member at a path of field names, looked up without building the path.
    fn remove_fields(&mut self, path: &[&str]) {
        fn is(element: &PathElement, name: &str) -> bool {
            matches!(element, PathElement::Field(field) if field == name)
        }
        match path {
            [] => {}
            [last] => self.members.retain(|element| !is(element, last)),
            [first, rest @ ..] => {
                let Some(element) = self.children.keys().find(|e| is(e, first)).cloned() else {
                    return;
                };
                let child = self.children.get_mut(&element).expect("just found");
                child.remove_fields(rest);
                if child.is_empty() {
                    self.children.remove(&element);
                }
            }
        }
    }

    /// Every member, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        // Members and children interleaved in element order, a member before its children.
        let elements: BTreeSet<&PathElement> =
            self.members.iter().chain(self.children.keys()).collect();
        for element in elements {
            prefix.push(element.clone());
            if self.members.contains(element) {
                out.push(prefix.clone());
            }
            if let Some(child) = self.children.get(element) {
                child.collect_paths(prefix, out);
            }
            prefix.pop();
        }
    }

    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    pub(crate) fn insert_member(&mut self, element: PathElement) {
        self.members.insert(element);
    }

    pub(crate) fn insert_child(&mut self, element: PathElement, child: FieldSet) {
        if !child.is_empty() {
            self.children.insert(element, child);
        }
    }

    /// The `fieldsV1` object of a managedFields entry.
    pub fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        for element in &self.members {
            if !self.children.contains_key(element) {
                out.insert(element.to_fields_v1_key(), Value::Object(Map::new()));
            }
        }
        for (element, child) in &self.children {
            let mut node = match child.to_fields_v1() {
                Value::Object(map) => map,
                _ => unreachable!("to_fields_v1 returns an object"),
            };
            if self.members.contains(element) {
                node.insert(".".into(), Value::Object(Map::new()));
            }
            out.insert(element.to_fields_v1_key(), Value::Object(node));
        }
        Value::Object(out)
    }

    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = value else {
            return Err("fieldsV1 must be a JSON object".into());
        };
        let mut set = FieldSet::new();
        for (raw, node) in map {
            if raw == "." {
                // Membership of this node is recorded by the parent.
                continue;
            }
            let element = PathElement::from_fields_v1_key(raw)?;
            let Value::Object(node_map) = node else {
                return Err(format!("the value of {raw:?} must be a JSON object"));
            };
            let child = FieldSet::from_fields_v1(node)?;
            if node_map.is_empty() || node_map.contains_key(".") {
                set.members.insert(element.clone());
            }
            if !child.is_empty() {
                set.children.insert(element, child);
            }
        }
        Ok(set)
    }
}
