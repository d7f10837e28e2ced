//! The structural schema of one CRD version: the `openAPIV3Schema` parsed once into a tree
//! that pruning, defaulting, validation and CEL walk without looking at JSON again.
//!
//! Parsing is lenient: this server does not (yet) refuse non-structural schemas when a CRD is
//! written, so anything it does not understand is ignored rather than fatal. A node without
//! `type` checks no type, as upstream does under `x-kubernetes-int-or-string` and
//! `x-kubernetes-preserve-unknown-fields`.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

/// A CRD version's schema, compiled. Two compiled schemas are equal when their sources are.
pub struct CompiledSchema {
    source: Value,
    pub(super) root: Schema,
    /// Whether reading a stored object can change it (pruning, defaulting, dropping nulls).
    pub(super) affects_reads: bool,
    /// Whether any node carries `x-kubernetes-validations`.
    pub(super) has_rules: bool,
}

impl CompiledSchema {
    /// Compiles an `openAPIV3Schema`, including the CEL rules it carries.
    pub fn new(source: &Value) -> CompiledSchema {
        let root = Schema::parse(source);
        let affects_reads = !root.is_opaque();
        let has_rules = root.has_rules();
        CompiledSchema {
            source: source.clone(),
            root,
            affects_reads,
            has_rules,
        }
    }

    /// The schema as the CRD wrote it.
    pub fn source(&self) -> &Value {
        &self.source
    }
}

impl PartialEq for CompiledSchema {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// What `additionalProperties` says.
pub(super) enum Additional {
    /// `true` or `false`.
    Allows(bool),
    Schema(Box<Schema>),
}

/// A `pattern`, with the regex compiled (or why it does not compile).
pub(super) struct Pattern {
    pub source: String,
    pub regex: Result<Regex, String>,
}

/// One `x-kubernetes-validations` entry (its `messageExpression` and `fieldPath` live in
/// the compiled form).
#[cfg_attr(not(feature = "cel"), allow(dead_code))]
pub(super) struct Rule {
    pub rule: String,
    pub message: Option<String>,
    pub reason: Option<String>,
    pub optional_old_self: bool,
    #[cfg(feature = "cel")]
    pub compiled: super::cel::CompiledRule,
}

/// One node of a structural schema (and of the value validations under `allOf`, `anyOf`,
/// `oneOf` and `not`, which have the same shape).
#[derive(Default)]
pub(super) struct Schema {
    pub type_: Option<String>,
    pub format: Option<String>,
    pub nullable: bool,
    pub default: Option<Value>,
    pub properties: BTreeMap<String, Schema>,
    pub additional_properties: Option<Additional>,
    pub items: Option<Box<Schema>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub pattern: Option<Pattern>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub rules: Vec<Rule>,
    /// The fields of `self` and `oldSelf` that this node's rules read, when they read only
    /// fields (`None`: the whole value); computed once so that evaluation converts only those.
    #[cfg(feature = "cel")]
    pub rule_reads: Option<std::collections::BTreeSet<String>>,
    /// Whether this node or one below it (through properties, additional properties or
    /// items) carries rules, so that rule evaluation can skip the subtrees that have none.
    pub rules_within: bool,
    /// Whether this node or one below it has an `x-kubernetes-list-type` of `set` or `map`,
    /// so that the list uniqueness checks can skip the subtrees that have none.
    pub lists_within: bool,
    /// Whether this node or one below it is an `x-kubernetes-embedded-resource`.
    pub embedded_within: bool,
    /// Whether this node or one below it (through properties, additional properties or
    /// items) has a `default`, so that defaulting can skip the subtrees that have none.
    pub defaults_within: bool,
    /// What [`Schema::types`] returns, computed once.
    validation_types: Vec<String>,
}

fn string(node: &Value, key: &str) -> Option<String> {
    node.get(key).and_then(Value::as_str).map(str::to_string)
}

fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn number(node: &Value, key: &str) -> Option<f64> {
    node.get(key).and_then(Value::as_f64)
}

fn integer(node: &Value, key: &str) -> Option<i64> {
    let value = node.get(key)?;
    value.as_i64().or_else(|| value.as_f64().map(|f| f as i64))
}

fn schemas(node: &Value, key: &str) -> Vec<Schema> {
    node.get(key)
        .and_then(Value::as_array)
        .map(|list| list.iter().map(Schema::parse).collect())
        .unwrap_or_default()
}

impl Schema {
    pub fn parse(node: &Value) -> Schema {
        let properties = node
            .get("properties")
            .and_then(Value::as_object)
            .map(|map| {
                map.iter()
                    .map(|(name, schema)| (name.clone(), Schema::parse(schema)))
                    .collect()
            })
            .unwrap_or_default();
        let additional_properties = match node.get("additionalProperties") {
            Some(Value::Bool(allows)) => Some(Additional::Allows(*allows)),
            Some(schema @ Value::Object(_)) => {
                Some(Additional::Schema(Box::new(Schema::parse(schema))))
            }
            _ => None,
        };
        let items = match node.get("items") {
            Some(schema @ Value::Object(_)) => Some(Box::new(Schema::parse(schema))),
            _ => None,
        };
        let pattern = string(node, "pattern").map(|source| Pattern {
            regex: Regex::new(&source).map_err(|e| e.to_string()),
            source,
        });
        let mut schema = Schema {
            type_: string(node, "type"),
            format: string(node, "format"),
            nullable: flag(node, "nullable"),
            default: node.get("default").cloned(),
            properties,
            additional_properties,
            items,
            required: node
                .get("required")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            enumeration: node.get("enum").and_then(Value::as_array).cloned(),
            pattern,
            maximum: number(node, "maximum"),
            exclusive_maximum: flag(node, "exclusiveMaximum"),
            minimum: number(node, "minimum"),
            exclusive_minimum: flag(node, "exclusiveMinimum"),
            multiple_of: number(node, "multipleOf"),
            max_length: integer(node, "maxLength"),
            min_length: integer(node, "minLength"),
            max_items: integer(node, "maxItems"),
            min_items: integer(node, "minItems"),
            unique_items: flag(node, "uniqueItems"),
            max_properties: integer(node, "maxProperties"),
            min_properties: integer(node, "minProperties"),
            all_of: schemas(node, "allOf"),
            any_of: schemas(node, "anyOf"),
            one_of: schemas(node, "oneOf"),
            not: node
                .get("not")
                .filter(|n| n.is_object())
                .map(|n| Box::new(Schema::parse(n))),
            preserve_unknown_fields: flag(node, "x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag(node, "x-kubernetes-embedded-resource"),
            int_or_string: flag(node, "x-kubernetes-int-or-string"),
            list_type: string(node, "x-kubernetes-list-type"),
            list_map_keys: node
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            rules: Vec::new(),
            #[cfg(feature = "cel")]
            rule_reads: None,
            rules_within: false,
            lists_within: false,
            embedded_within: false,
            defaults_within: false,
            validation_types: Vec::new(),
        };
        schema.validation_types = if schema.int_or_string {
            vec!["integer".to_string(), "string".to_string()]
        } else {
            schema.type_.iter().cloned().collect()
        };
        schema.lists_within = matches!(schema.list_type.as_deref(), Some("set" | "map"))
            || schema.any_child(|child| child.lists_within);
        schema.embedded_within =
            schema.embedded_resource || schema.any_child(|child| child.embedded_within);
        schema.defaults_within =
            schema.default.is_some() || schema.any_child(|child| child.defaults_within);
        let rules = node
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(|r| schema.parse_rule(r)).collect())
            .unwrap_or_default();
        schema.rules = rules;
        #[cfg(feature = "cel")]
        {
            schema.rule_reads = super::cel::fields_read_by(&schema.rules);
        }
        schema.rules_within = schema.has_rules();
        schema
    }

    fn parse_rule(&self, node: &Value) -> Option<Rule> {
        let rule = string(node, "rule")?;
        Some(Rule {
            #[cfg(feature = "cel")]
            compiled: super::cel::CompiledRule::compile(
                self,
                &rule,
                string(node, "messageExpression")
                    .filter(|m| !m.is_empty())
                    .as_deref(),
                string(node, "fieldPath")
                    .filter(|p| !p.is_empty())
                    .as_deref(),
            ),
            rule,
            message: string(node, "message").filter(|m| !m.is_empty()),
            reason: string(node, "reason"),
            optional_old_self: flag(node, "optionalOldSelf"),
        })
    }

    /// The types a value may have, for validation: none (any), one, or integer and string
    /// for `x-kubernetes-int-or-string`.
    pub fn types(&self) -> &[String] {
        &self.validation_types
    }

    /// Whether `test` holds for a schema of a property, of additional properties or of items
    /// (whose flags are set: children are parsed first).
    fn any_child(&self, test: impl Fn(&Schema) -> bool) -> bool {
        self.properties.values().any(&test)
            || self.additional_schema().is_some_and(&test)
            || self.items.as_deref().is_some_and(&test)
    }

    /// The format validation uses: formats apiextensions does not support for the type are
    /// ignored, as upstream strips them before validating.
    pub fn validation_format(&self) -> Option<&str> {
        let format = self.format.as_deref().filter(|f| !f.is_empty())?;
        let type_ = if self.int_or_string {
            None
        } else {
            self.type_.as_deref()
        };
        let supported = match type_ {
            None | Some("string") => super::format::is_supported(format),
            Some("integer") => matches!(format, "int32" | "int64"),
            Some("number") => matches!(format, "float" | "double"),
            Some(_) => false,
        };
        supported.then_some(format)
    }

    /// The schema of property `name`, or of every additional property.
    pub fn field(&self, name: &str) -> Option<&Schema> {
        self.properties
            .get(name)
            .or(match &self.additional_properties {
                Some(Additional::Schema(schema)) => Some(schema),
                _ => None,
            })
    }

    pub fn additional_schema(&self) -> Option<&Schema> {
        match &self.additional_properties {
            Some(Additional::Schema(schema)) => Some(schema),
            _ => None,
        }
    }

    /// A node that keeps whatever it holds and defines nothing below it: reads cannot change
    /// what is stored under it.
    fn is_opaque(&self) -> bool {
        self.preserve_unknown_fields
            && self.properties.is_empty()
            && self.additional_properties.is_none()
            && self.items.is_none()
    }

    /// Whether this node or one below it carries rules (children were parsed first, so their
    /// `rules_within` is set).
    fn has_rules(&self) -> bool {
        !self.rules.is_empty() || self.any_child(|child| child.rules_within)
    }

    pub fn is_list_map(&self) -> bool {
        self.list_type.as_deref() == Some("map")
    }
}

/// The value of `key` among a sorted map's `entries` (a `BTreeMap`'s or a JSON map's, both in
/// ascending key order), for keys asked for in ascending order: each lookup moves on from
/// where the last stopped, so walking a map's keys beside a schema's properties compares each
/// key about once instead of searching from the top for every key.
pub fn seek<'a, V: 'a, I>(entries: &mut std::iter::Peekable<I>, key: &str) -> Option<&'a V>
where
    I: Iterator<Item = (&'a String, &'a V)>,
{
    while let Some((name, _)) = entries.peek() {
        match name.as_str().cmp(key) {
            std::cmp::Ordering::Less => {
                entries.next();
            }
            std::cmp::Ordering::Equal => return entries.next().map(|(_, value)| value),
            std::cmp::Ordering::Greater => return None,
        }
    }
    None
}
