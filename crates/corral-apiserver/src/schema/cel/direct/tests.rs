//! Direct evaluation against the interpreter: the rules of the upstream Cluster API CRDs
//! (copied into the provider crates' `tests/upstream/`) and a corpus of rules written for the
//! forms [`super::Direct`] handles and the ones it defers, each evaluated over values
//! generated from its node's schema. Wherever direct evaluation answers, the interpreter must
//! answer the same.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::super::{Expression, scope, to_val_reading};
use crate::schema::structural::Schema;
use kube_cel::cel;

/// A small deterministic generator (xorshift), so that failures reproduce.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

/// Few distinct strings and numbers, so that equal names, duplicates and bounds come up.
const STRINGS: [&str; 10] = [
    "",
    "a",
    "ab",
    "b",
    "é",
    "TCP",
    "Ready",
    "Linux",
    "x{{ .random }}",
    "cluster-1",
];
const INTEGERS: [i64; 7] = [-1, 0, 1, 2, 5, 1024, i64::MAX];
const KEYS: [&str; 4] = ["a", "b", "cluster.x-k8s.io/cluster-name", "x__y"];

/// A value the schema allows in shape (types, enums), mostly; sometimes a wrong type.
fn generate(schema: &Schema, random: &mut Random, depth: usize) -> Value {
    if let Some(values) = schema.enumeration.as_ref().filter(|v| !v.is_empty())
        && random.chance(80)
    {
        return random.pick(values);
    }
    if random.chance(3) {
        return json!(null);
    }
    let type_ = if schema.int_or_string {
        if random.chance(50) {
            "integer"
        } else {
            "string"
        }
    } else {
        schema.type_.as_deref().unwrap_or("string")
    };
    match type_ {
        "object" if depth < 6 => {
            let mut map = Map::new();
            for (name, property) in &schema.properties {
                if random.chance(75) {
                    map.insert(name.clone(), generate(property, random, depth + 1));
                }
            }
            let extra = schema.additional_schema();
            if extra.is_some() || (schema.properties.is_empty() && random.chance(30)) {
                for _ in 0..random.below(4) {
                    let value = match extra {
                        Some(extra) => generate(extra, random, depth + 1),
                        None => json!(random.pick(&STRINGS)),
                    };
                    map.insert(random.pick(&KEYS).to_string(), value);
                }
            }
            Value::Object(map)
        }
        "array" if depth < 6 => {
            let count = random.below(5);
            let items = (0..count)
                .map(|_| match schema.items.as_deref() {
                    Some(items) => generate(items, random, depth + 1),
                    None => json!(random.pick(&STRINGS)),
                })
                .collect();
            Value::Array(items)
        }
        "integer" => json!(random.pick(&INTEGERS)),
        "number" => random.pick(&[json!(0.5), json!(1.0), json!(-2.5), json!(3)]),
        "boolean" => json!(random.chance(50)),
        "string" if schema.format.as_deref() == Some("date-time") => {
            json!(random.pick(&["2024-01-01T00:00:00Z", "2019-05-01T10:00:00Z", "yesterday"]))
        }
        _ => json!(random.pick(&STRINGS)),
    }
}

/// The interpreter's verdict on a rule, as production builds its scope.
fn interpret(
    program: &Expression,
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    resource: bool,
) -> Result<bool, String> {
    let reads = schema.rule_reads.as_ref();
    let this = to_val_reading(value, schema, resource, reads);
    let context = match old {
        Some(old) => scope([
            ("self", this),
            ("oldSelf", to_val_reading(old, schema, resource, reads)),
        ]),
        None => scope([("self", this)]),
    };
    match cel::Value::resolve(program, &context) {
        Ok(cel::Value::Bool(passed)) => Ok(passed),
        Ok(other) => Err(format!("not a bool: {other:?}")),
        Err(error) => Err(error.to_string()),
    }
}

/// Every node of `schema` with rules, and whether it is a resource (root or embedded).
fn rule_nodes<'a>(schema: &'a Schema, resource: bool, nodes: &mut Vec<(&'a Schema, bool)>) {
    if !schema.rules_within {
        return;
    }
    if !schema.rules.is_empty() {
        nodes.push((schema, resource));
    }
    for property in schema.properties.values() {
        rule_nodes(property, property.embedded_resource, nodes);
    }
    if let Some(extra) = schema.additional_schema() {
        rule_nodes(extra, false, nodes);
    }
    if let Some(items) = schema.items.as_deref() {
        rule_nodes(items, false, nodes);
    }
}

/// How many evaluations were answered directly and how many deferred, over all rules.
#[derive(Default, Debug)]
struct Tally {
    direct: usize,
    /// Of `direct`, those where the rule failed.
    failed: usize,
    deferred: usize,
    not_direct: usize,
    rules: usize,
    direct_rules: usize,
}

/// Evaluates every rule of every rule node of `root` over `rounds` generated values, created
/// and updated, both ways; panics on the first disagreement.
fn compare(root: &Schema, rounds: usize, seed: u64, tally: &mut Tally) {
    let mut random = Random(seed);
    let mut nodes = Vec::new();
    rule_nodes(root, true, &mut nodes);
    for (schema, resource) in nodes {
        for rule in &schema.rules {
            let compiled = &rule.compiled;
            let Ok(program) = &compiled.program else {
                continue;
            };
            tally.rules += 1;
            if rule.optional_old_self {
                continue;
            }
            let Some(direct) = &compiled.direct else {
                tally.not_direct += rounds;
                continue;
            };
            tally.direct_rules += 1;
            for _ in 0..rounds {
                let value = generate(schema, &mut random, 0);
                let old = match random.below(3) {
                    0 => None,
                    1 => Some(value.clone()),
                    _ => Some(generate(schema, &mut random, 0)),
                };
                if compiled.uses_old_self && old.is_none() {
                    continue;
                }
                match direct.evaluate(program, schema, &value, old.as_ref(), resource) {
                    Ok(passed) => {
                        tally.direct += 1;
                        tally.failed += usize::from(!passed);
                        let interpreted =
                            interpret(program, schema, &value, old.as_ref(), resource);
                        assert_eq!(
                            interpreted,
                            Ok(passed),
                            "rule {:?} over {value} (old {old:?})",
                            rule.rule
                        );
                    }
                    Err(_) => tally.deferred += 1,
                }
            }
        }
    }
}

fn upstream_schemas() -> Vec<(String, Schema)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut schemas = Vec::new();
    for krate in ["corral-api", "corral-kubeadm", "corral-infra-inmemory"] {
        let directory = crates.join(krate).join("tests/upstream");
        let mut files: Vec<_> = std::fs::read_dir(&directory)
            .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let crd: Value = serde_saphyr::from_str(&text).unwrap();
            for version in crd["spec"]["versions"].as_array().unwrap() {
                let schema = &version["schema"]["openAPIV3Schema"];
                let name = format!("{} {}", file.display(), version["name"]);
                schemas.push((name, Schema::parse(schema)));
            }
        }
    }
    schemas
}

#[test]
fn direct_evaluation_agrees_with_the_interpreter_on_upstream_rules() {
    let schemas = upstream_schemas();
    assert!(schemas.len() >= 13, "{} schemas", schemas.len());
    let mut tally = Tally::default();
    for (index, (_, schema)) in schemas.iter().enumerate() {
        compare(schema, 200, 0x9e37_79b9 + index as u64, &mut tally);
    }
    // The upstream rules are nearly all in forms evaluated directly (`[...].filter(...)`
    // is the exception), and most evaluations over generated values are answered directly.
    assert!(tally.rules >= 40, "{tally:?}");
    assert!(tally.direct_rules * 10 >= tally.rules * 8, "{tally:?}");
    assert!(tally.direct >= tally.deferred, "{tally:?}");
    assert!(tally.failed > 0, "{tally:?}");
    println!("{tally:?}");
}

/// A node with fields of every kind, and rules over them: handled forms, and forms, values
/// or failures that must be deferred.
fn corpus() -> Schema {
    let rules = [
        "self.i < self.j",
        "self.i + self.j <= 10",
        "self.i * 1000000000000 > 0",
        "self.i - self.j == -1",
        "-self.i < 0",
        "self.d > 0.5",
        "self.d == 1.0",
        "self.d + self.d * 2.0 - 1.0 > self.d",
        "self.i == self.d",
        "self.s.startsWith('a')",
        "self.s.endsWith(self.t)",
        "self.s.contains('b')",
        "self.s.matches('^[a-c]+$')",
        "size(self.s) == 2",
        "self.s.size() < self.i",
        "self.s < self.t",
        "self.s >= 'b'",
        "self.b",
        "!self.b || self.i > 0",
        "self.b ? self.i > 1 : self.j > 1",
        "self.s in ['a', 'ab', 'é']",
        "self.s in self.names",
        "'a' in self.labels",
        "self.labels['a'] == 'x'",
        "self.names[0] == 'a'",
        "self.names[1] == self.s",
        "self.items.all(p, p.port >= 1024 || p.protocol == 'TCP')",
        "self.items.exists(p, p.name == 'a')",
        "self.items.exists_one(p, p.name == 'a')",
        "self.items.all(x, self.items.exists_one(y, x.name == y.name))",
        "self.items.all(x, self.items.exists_one(y, x == y))",
        "self.labels.all(k, k.startsWith('a'))",
        "self.labels.exists(k, self.labels[k] == 'ab')",
        "size(self.labels) <= 2",
        "size(self.items) <= 2 && self.items.all(p, has(p.protocol))",
        "has(self.nested) && has(self.nested.x)",
        "self.nested.x > 0",
        "self.nested == oldSelf.nested",
        "self == oldSelf",
        "self.names == oldSelf.names",
        "self.labels == oldSelf.labels",
        "self.items == oldSelf.items",
        "!has(oldSelf.s) || has(self.s)",
        "self.ios == 1",
        "self.ios == '1'",
        "self.when == oldSelf.when",
        "self.i",
        "self.missing == 1",
        "has(self.s) || self.missing",
        "self.missing || true",
        "self.missing && false",
        "self.i > 2 && self.missing",
        "self.s == 1",
        "self.i / 2 == 1",
        "self.items.map(p, p.port).all(x, x > 0)",
        "self.names.filter(n, n == 'a').size() <= 1",
        "[has(self.s), has(self.t)].filter(x, x == true).size() == 1",
        "self.s == null",
        "self.opt == null || self.opt.size() > 0",
        "self.labels.x__y == 'a'",
        "self.i > 0 ? 'yes' : false",
    ];
    let validations: Vec<Value> = rules.iter().map(|rule| json!({"rule": rule})).collect();
    Schema::parse(&json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": validations,
            "properties": {
                "i": {"type": "integer"},
                "j": {"type": "integer"},
                "d": {"type": "number"},
                "s": {"type": "string"},
                "t": {"type": "string"},
                "b": {"type": "boolean"},
                "opt": {"type": "string", "nullable": true},
                "names": {"type": "array", "items": {"type": "string"}},
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "port": {"type": "integer"},
                        "protocol": {"type": "string", "enum": ["TCP", "UDP"]}
                    }
                }},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "ios": {"x-kubernetes-int-or-string": true},
                "when": {"type": "string", "format": "date-time"},
                "nested": {"type": "object", "properties": {
                    "x": {"type": "integer"}, "y": {"type": "string"}
                }}
            }
        }}
    }))
}

#[test]
fn direct_evaluation_agrees_with_the_interpreter_on_a_corpus() {
    let mut tally = Tally::default();
    compare(&corpus(), 400, 0x5eed, &mut tally);
    // The forms that are not handled (`map`, `filter`, list literals outside `in`, `/`,
    // escaped names) are never evaluated directly; the rest mostly are, passing and failing.
    assert_eq!(tally.rules - tally.direct_rules, 5, "{tally:?}");
    assert!(tally.direct >= tally.deferred, "{tally:?}");
    assert!(tally.failed * 4 >= tally.direct, "{tally:?}");
    println!("{tally:?}");
}

#[test]
fn direct_evaluation_handles_the_benchmark_rules_without_the_interpreter() {
    let schema = Schema::parse(&json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "!has(self.minReplicas) || self.minReplicas <= self.replicas"}
        ],
        "properties": {
            "replicas": {"type": "integer"},
            "minReplicas": {"type": "integer"},
            "ports": {
                "type": "array",
                "x-kubernetes-validations": [
                    {"rule": "size(self) <= 16 && self.all(p, p.port >= 1024 || p.protocol == 'TCP')"}
                ],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer"},
                    "protocol": {"type": "string"}
                }}
            }
        }
    }));
    let spec = json!({
        "replicas": 3, "minReplicas": 1,
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "dns", "port": 5353, "protocol": "UDP"}]
    });
    let evaluate = |schema: &Schema, value: &Value| {
        let rule = &schema.rules[0].compiled;
        let program = rule.program.as_ref().unwrap();
        rule.direct
            .as_ref()
            .expect("evaluated directly")
            .evaluate(program, schema, value, None, false)
            .ok()
    };
    assert_eq!(evaluate(&schema, &spec), Some(true));
    assert_eq!(
        evaluate(&schema, &json!({"replicas": 1, "minReplicas": 2})),
        Some(false)
    );
    let ports = &schema.properties["ports"];
    assert_eq!(evaluate(ports, &spec["ports"]), Some(true));
    assert_eq!(
        evaluate(
            ports,
            &json!([{"name": "dns", "port": 53, "protocol": "UDP"}])
        ),
        Some(false)
    );
}
