//! Corral's generated CRDs against upstream's (`tests/upstream/`, copied from
//! kubernetes-sigs/cluster-api at ae7ff047db49, `test/infrastructure/docker/config/crd/bases`).
//!
//! Every v1beta2 schema node is compared attribute by attribute (type, format, enum, default,
//! required, bounds, pattern, list and map markers, int-or-string, CEL rules, ...); only
//! descriptions are ignored, and so are the CRD's names, scope, subresources and printer columns
//! where they match. Every difference must be in [`tolerated`], with its reason; any other fails
//! the test, and so does an entry of [`tolerated`] that no longer matches a difference. The
//! comparison is corral-api's (`crates/corral-api/tests/it/upstream.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde_json::{Value, json};

/// The kinds compared, by plural.
const KINDS: [&str; 4] = [
    "devclusters",
    "devclustertemplates",
    "devmachines",
    "devmachinetemplates",
];

/// What Corral did to an attribute of upstream's schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    /// Corral has it, upstream does not.
    Added,
    /// Upstream has it, Corral does not.
    Removed,
    /// Both have it, with different values.
    Changed,
}

/// A difference Corral means to have.
#[allow(dead_code, reason = "the reason is for readers of the allow-list")]
struct Tolerated {
    /// The plural of the kind.
    kind: &'static str,
    /// The schema node, as `.spec.deletion`; `(crd)` for CRD-level fields.
    path: String,
    /// The attribute: `default`, `x-kubernetes-validations`, ...
    attribute: &'static str,
    change: Change,
    reason: &'static str,
}

/// The only allow-list. Keep it short: every entry is a place where Corral's API differs from
/// upstream's. Each reason says why.
fn tolerated() -> Vec<Tolerated> {
    use Change::*;
    let entry = |kind, path: &str, attribute, change, reason| Tolerated {
        kind,
        path: path.to_owned(),
        attribute,
        change,
        reason,
    };
    let mut entries = Vec::new();
    for kind in KINDS {
        entries.push(entry(
            kind,
            ".",
            "required",
            Added,
            "kube's derive requires spec; upstream's spec.backend is required, so an object \
             without spec is not a usable one either",
        ));
    }
    for (kind, spec) in [
        ("devclusters", ".spec"),
        ("devclustertemplates", ".spec.template.spec"),
        ("devmachines", ".spec"),
        ("devmachinetemplates", ".spec.template.spec"),
    ] {
        entries.push(entry(
            kind,
            &format!("{spec}.backend"),
            "x-kubernetes-validations",
            Added,
            "Corral simulates the in-memory backend only: backend.docker is refused with a \
             message that says to use backend.inMemory, and one backend must be set",
        ));
    }
    for (kind, spec) in [
        ("devclusters", ".spec"),
        ("devclustertemplates", ".spec.template.spec"),
    ] {
        for field in [
            "",
            "[]",
            "[].attributes",
            "[].attributes{}",
            "[].controlPlane",
            "[].name",
        ] {
            entries.push(entry(
                kind,
                &format!("{spec}.backend.inMemory.failureDomains{field}"),
                "(field)",
                Added,
                "extension: failure domains of the simulated infrastructure, in the shape of the \
                 docker backend's, so that core's spreading over failure domains can be tested",
            ));
        }
    }
    for (kind, spec) in [
        ("devmachines", ".spec"),
        ("devmachinetemplates", ".spec.template.spec"),
    ] {
        for step in ["apiServer", "etcd", "node", "vm"] {
            let settings = format!("{spec}.backend.inMemory.{step}.provisioning");
            entries.push(entry(
                kind,
                &format!("{settings}.startupDuration"),
                "pattern",
                Added,
                "a duration that does not parse is refused at create time, not found by the \
                 controller later; upstream's controller fails on it (time.ParseDuration)",
            ));
            entries.push(entry(
                kind,
                &format!("{settings}.startupJitter"),
                "pattern",
                Added,
                "a jitter that does not parse is refused at create time, not found by the \
                 controller later; upstream's controller fails on it (strconv.ParseFloat)",
            ));
        }
    }
    entries
}

/// One difference between upstream's CRD and Corral's.
#[derive(Debug)]
struct Difference {
    kind: String,
    path: String,
    attribute: String,
    upstream: Option<Value>,
    corral: Option<Value>,
}

impl Difference {
    fn change(&self) -> Change {
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
    for (attribute, value) in schema.as_object().unwrap() {
        match attribute.as_str() {
            "description" | "properties" | "items" => {}
            "additionalProperties" if value.is_object() => {}
            "required" => {
                let mut required: Vec<_> = value.as_array().unwrap().clone();
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
fn compare_schemas(
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
fn crd_fields(crd: &Value) -> Node {
    let versions = crd["spec"]["versions"].as_array().unwrap();
    let version = versions
        .iter()
        .find(|version| version["name"] == "v1beta2")
        .unwrap();
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

fn upstream_crd(plural: &str) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstream")
        .join(format!("infrastructure.cluster.x-k8s.io_{plural}.yaml"));
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    super::normalize_numbers(serde_yaml::from_str(&text).unwrap())
}

fn differences() -> Vec<Difference> {
    let generated: BTreeMap<String, Value> = super::generated_crds().into_iter().collect();
    let mut differences = Vec::new();
    for kind in KINDS {
        let upstream = upstream_crd(kind);
        let corral = &generated[&format!("infrastructure.cluster.x-k8s.io_{kind}.yaml")];
        let (upstream_fields, corral_fields) = (crd_fields(&upstream), crd_fields(corral));
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
            super::schema_of(&upstream, "v1beta2"),
            super::schema_of(corral, "v1beta2"),
            &mut differences,
        );
    }
    differences
}

#[test]
fn generated_crds_match_upstream_except_the_tolerated_differences() {
    let tolerated = tolerated();
    let mut used = vec![false; tolerated.len()];
    let mut unexplained = Vec::new();
    for difference in differences() {
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
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "differences from upstream's CRDs that are not tolerated:\n  {}\n\
         tolerated differences that no longer occur (remove them):\n  {}",
        unexplained.join("\n  "),
        stale.join("\n  "),
    );
}
