//! Test support (feature `testing`): the comparison of a generated CRD with upstream's, shared by
//! every crate that generates CRDs in upstream's shape.
//!
//! Every schema node of a version is compared attribute by attribute (type, format, enum,
//! default, required, bounds, pattern, list and map markers, int-or-string, CEL rules, ...);
//! only descriptions are ignored. The CRD-level fields users see (names, scope, the version's
//! flags, subresources and printer columns) are compared too. A caller lists the differences it
//! means to have, each with its reason, and [`check`] fails on any other difference and on any
//! listed one that no longer occurs.
//!
//! [`check_checked_in_crds`] is the other half every such crate shares: its `crds/` directory
//! holds exactly the CRDs it generates.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Value, json};

/// What Corral did to an attribute of upstream's schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Corral has it, upstream does not.
    Added,
    /// Upstream has it, Corral does not.
    Removed,
    /// Both have it, with different values.
    Changed,
}

/// A difference a crate means to have.
#[derive(Clone, Debug)]
pub struct Tolerated {
    /// The plural of the kind.
    pub kind: String,
    /// The schema node, as `.spec.deletion`; `(crd)` for CRD-level fields.
    pub path: String,
    /// The attribute: `default`, `x-kubernetes-validations`, ...; `(field)` for a whole node.
    pub attribute: String,
    pub change: Change,
    /// Why Corral differs, for readers of the allow-list.
    pub reason: String,
}

impl Tolerated {
    pub fn new(kind: &str, path: &str, attribute: &str, change: Change, reason: &str) -> Self {
        Tolerated {
            kind: kind.to_owned(),
            path: path.to_owned(),
            attribute: attribute.to_owned(),
            change,
            reason: reason.to_owned(),
        }
    }
}

/// One difference between upstream's CRD and Corral's.
#[derive(Debug)]
pub struct Difference {
    pub kind: String,
    pub path: String,
    pub attribute: String,
    pub upstream: Option<Value>,
    pub corral: Option<Value>,
}

impl Difference {
    pub fn change(&self) -> Change {
        match (&self.upstream, &self.corral) {
            (None, Some(_)) => Change::Added,
            (Some(_), None) => Change::Removed,
            _ => Change::Changed,
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |value: &Option<Value>| {
            value
                .as_ref()
                .map_or("(absent)".to_owned(), Value::to_string)
        };
        write!(
            f,
            "{} {} {}: upstream {} / corral {}",
            self.kind,
            self.path,
            self.attribute,
            show(&self.upstream),
            show(&self.corral)
        )
    }
}

/// Attributes of a schema node, by name; child schemas are separate nodes.
type Node = BTreeMap<String, Value>;

/// Every schema node by path: `.spec.taints[]` for list items, `.spec.labels{}` for map values.
fn flatten(schema: &Value, path: String, nodes: &mut BTreeMap<String, Node>) {
    let mut node = Node::new();
    for (attribute, value) in schema.as_object().expect("a schema is an object") {
        match attribute.as_str() {
            "description" | "properties" | "items" => {}
            "additionalProperties" if value.is_object() => {}
            "required" => {
                let mut required: Vec<_> = value.as_array().expect("required is a list").clone();
                required.sort_by_key(Value::to_string);
                node.insert(attribute.clone(), Value::Array(required));
            }
            _ => {
                node.insert(attribute.clone(), value.clone());
            }
        }
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            flatten(
                property,
                format!("{}.{name}", path.trim_end_matches('.')),
                nodes,
            );
        }
    }
    if let Some(items) = schema.get("items") {
        flatten(items, format!("{path}[]"), nodes);
    }
    if let Some(values) = schema
        .get("additionalProperties")
        .filter(|values| values.is_object())
    {
        flatten(values, format!("{path}{{}}"), nodes);
    }
    nodes.insert(path, node);
}

/// The differences between two schemas. CEL rules are compared one by one: each upstream rule
/// Corral lacks is a difference, and so are, together, the rules Corral adds at a node.
pub fn compare_schemas(
    kind: &str,
    upstream: &Value,
    corral: &Value,
    differences: &mut Vec<Difference>,
) {
    let (mut upstream_nodes, mut corral_nodes) = (BTreeMap::new(), BTreeMap::new());
    flatten(upstream, ".".into(), &mut upstream_nodes);
    flatten(corral, ".".into(), &mut corral_nodes);
    let paths: BTreeSet<&String> = upstream_nodes.keys().chain(corral_nodes.keys()).collect();
    for path in paths {
        let difference =
            |attribute: &str, upstream: Option<Value>, corral: Option<Value>| Difference {
                kind: kind.to_owned(),
                path: path.clone(),
                attribute: attribute.to_owned(),
                upstream,
                corral,
            };
        let (upstream_node, corral_node) = match (upstream_nodes.get(path), corral_nodes.get(path))
        {
            (Some(upstream), Some(corral)) => (upstream, corral),
            (upstream, corral) => {
                let node = |node: Option<&Node>| node.map(|node| json!(node));
                differences.push(difference("(field)", node(upstream), node(corral)));
                continue;
            }
        };
        let attributes: BTreeSet<&String> =
            upstream_node.keys().chain(corral_node.keys()).collect();
        for attribute in attributes {
            let (upstream_value, corral_value) =
                (upstream_node.get(attribute), corral_node.get(attribute));
            if attribute == "x-kubernetes-validations" {
                let rules = |value: Option<&Value>| {
                    value.and_then(Value::as_array).cloned().unwrap_or_default()
                };
                let (upstream_rules, corral_rules) = (rules(upstream_value), rules(corral_value));
                for rule in upstream_rules
                    .iter()
                    .filter(|rule| !corral_rules.contains(rule))
                {
                    differences.push(difference(attribute, Some(rule.clone()), None));
                }
                let added: Vec<Value> = corral_rules
                    .into_iter()
                    .filter(|rule| !upstream_rules.contains(rule))
                    .collect();
                if !added.is_empty() {
                    differences.push(difference(attribute, None, Some(Value::Array(added))));
                }
            } else if upstream_value != corral_value {
                differences.push(difference(
                    attribute,
                    upstream_value.cloned(),
                    corral_value.cloned(),
                ));
            }
        }
    }
}

/// The CRD-level fields users see: names, scope, the version's flags, subresources and printer
/// columns.
fn crd_fields(crd: &Value, version: &str) -> Node {
    let version = version_of(crd, version);
    let mut fields = Node::new();
    fields.insert("names".into(), crd["spec"]["names"].clone());
    fields.insert("scope".into(), crd["spec"]["scope"].clone());
    for field in [
        "served",
        "storage",
        "deprecated",
        "subresources",
        "additionalPrinterColumns",
    ] {
        fields.insert(
            field.into(),
            version.get(field).cloned().unwrap_or(Value::Null),
        );
    }
    fields
}

fn version_of<'a>(crd: &'a Value, version: &str) -> &'a Value {
    crd["spec"]["versions"]
        .as_array()
        .expect("a CRD has versions")
        .iter()
        .find(|candidate| candidate["name"] == version)
        .unwrap_or_else(|| panic!("the CRD has no version {version}"))
}

/// The `openAPIV3Schema` of a CRD's version.
pub fn schema_of<'a>(crd: &'a Value, version: &str) -> &'a Value {
    &version_of(crd, version)["schema"]["openAPIV3Schema"]
}

/// The differences between two CRDs of a kind at one version: the CRD-level fields, then the
/// schema.
pub fn crd_differences(
    kind: &str,
    upstream: &Value,
    corral: &Value,
    version: &str,
) -> Vec<Difference> {
    let (upstream, corral) = (
        normalize_numbers(upstream.clone()),
        normalize_numbers(corral.clone()),
    );
    let mut differences = Vec::new();
    let (upstream_fields, corral_fields) =
        (crd_fields(&upstream, version), crd_fields(&corral, version));
    for (field, upstream_value) in &upstream_fields {
        if corral_fields[field] != *upstream_value {
            differences.push(Difference {
                kind: kind.to_owned(),
                path: "(crd)".to_owned(),
                attribute: field.clone(),
                upstream: Some(upstream_value.clone()),
                corral: Some(corral_fields[field].clone()),
            });
        }
    }
    compare_schemas(
        kind,
        schema_of(&upstream, version),
        schema_of(&corral, version),
        &mut differences,
    );
    differences
}

/// Fails, listing them, on differences not in `tolerated` and on entries of `tolerated` that
/// match no difference.
pub fn check(differences: Vec<Difference>, tolerated: &[Tolerated]) -> Result<(), String> {
    let mut used = vec![false; tolerated.len()];
    let mut unexplained = Vec::new();
    for difference in differences {
        let matching = tolerated.iter().position(|entry| {
            entry.kind == difference.kind
                && entry.path == difference.path
                && entry.attribute == difference.attribute
                && entry.change == difference.change()
        });
        match matching {
            Some(index) => used[index] = true,
            None => unexplained.push(difference.to_string()),
        }
    }
    let stale: Vec<String> = tolerated
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(entry, _)| {
            format!(
                "{} {} {} {:?}",
                entry.kind, entry.path, entry.attribute, entry.change
            )
        })
        .collect();
    if unexplained.is_empty() && stale.is_empty() {
        return Ok(());
    }
    Err(format!(
        "differences from upstream's CRDs that are not tolerated:\n  {}\n\
         tolerated differences that no longer occur (remove them):\n  {}",
        unexplained.join("\n  "),
        stale.join("\n  "),
    ))
}

/// Turns floats without a fraction into integers. Kubernetes' Go types hold `minimum` and
/// `maximum` as floats, so a CRD object carries `0.0` where upstream's YAML says `0`.
pub fn normalize_numbers(value: Value) -> Value {
    match value {
        Value::Number(number) => match number.as_f64() {
            Some(float) if number.is_f64() && float.fract() == 0.0 && float.abs() < 1e15 => {
                Value::from(float as i64)
            }
            _ => Value::Number(number),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(normalize_numbers).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key, normalize_numbers(value)))
                .collect(),
        ),
        other => other,
    }
}

/// The environment variable under which [`check_checked_in_crds`] writes the CRDs instead of
/// checking them.
pub const UPDATE_CRDS: &str = "CORRAL_UPDATE_CRDS";

/// Checks that `<manifest_dir>/crds/` holds exactly `crds`, one `<group>_<plural>.yaml` each
/// (whole numbers as integers, [`normalize_numbers`]); with [`UPDATE_CRDS`] set, writes them
/// instead and removes the files no longer generated. Panics naming the stale files and
/// `regenerate`, the test command to run with [`UPDATE_CRDS`] set.
pub fn check_checked_in_crds(
    manifest_dir: &str,
    crds: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
    regenerate: &str,
) {
    use std::fs;
    let dir = std::path::Path::new(manifest_dir).join("crds");
    let expected: BTreeMap<String, String> = crds
        .into_iter()
        .map(|crd| {
            let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
            let crd = normalize_numbers(serde_json::to_value(crd).expect("a CRD serializes"));
            let yaml = serde_yaml::to_string(&crd).expect("a CRD is YAML");
            (file, format!("---\n{yaml}"))
        })
        .collect();
    let present: Vec<String> = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if std::env::var_os(UPDATE_CRDS).is_some() {
        fs::create_dir_all(&dir).unwrap();
        for file in present.iter().filter(|file| !expected.contains_key(*file)) {
            fs::remove_file(dir.join(file)).unwrap();
        }
        for (file, content) in &expected {
            fs::write(dir.join(file), content).unwrap();
        }
        return;
    }
    let mut stale: Vec<&str> = expected
        .iter()
        .filter(|(file, content)| {
            fs::read_to_string(dir.join(file)).ok().as_ref() != Some(*content)
        })
        .map(|(file, _)| file.as_str())
        .collect();
    stale.extend(
        present
            .iter()
            .filter(|file| !expected.contains_key(*file))
            .map(String::as_str),
    );
    assert!(
        stale.is_empty(),
        "the CRDs in {} differ from the ones the Rust types generate: {}\n\
         regenerate them with `{UPDATE_CRDS}=1 {regenerate}` and commit the result",
        dir.display(),
        stale.join(", ")
    );
}
