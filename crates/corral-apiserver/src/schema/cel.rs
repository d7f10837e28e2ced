//! `x-kubernetes-validations`: CEL rules on schema nodes, evaluated as apiextensions does,
//! with the `cel` crate and the Kubernetes CEL libraries of `kube-cel`.
//!
//! `self` is the node's value, typed by its schema (integers, doubles, timestamps for
//! `date`/`date-time`, durations, bytes; property names escaped as upstream escapes them).
//! Transition rules (those that use `oldSelf`) run on updates only, when the old value
//! correlates; with `optionalOldSelf` they also run without one, `oldSelf` being an optional.
//! A failed rule becomes a field error at the node (or its `fieldPath`); on an update, the
//! failure of a rule that does not use `oldSelf` on an unchanged value is only a warning.
//! No runtime cost budget is enforced: rules run to completion.

mod direct;

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use kube_cel::KubeCelExt;
use kube_cel::cel;
use kube_cel::cel::common::types::{
    CelBool, CelBytes, CelDouble, CelDuration, CelInt, CelList, CelMap, CelMapKey, CelNull,
    CelOptional, CelString, CelTimestamp,
};
use kube_cel::cel::common::value::Val;
use serde_json::Value;

use super::field::{ErrorType, FieldError, Path};
use super::structural::{Rule, Schema};
use super::validate::{correlate_field, correlate_item};

type Expression = cel::parser::Expression;

/// The upstream limit on an evaluated `messageExpression`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The functions every evaluation sees: CEL's standard library and Kubernetes' extensions,
/// with `size` as the CEL specification has it for strings.
static ROOT: LazyLock<cel::Context<'static>> = LazyLock::new(|| {
    let mut context = cel::Context::default().with_all();
    context.add_function("size", size);
    context
});

/// CEL's `size`: the number of code points of a string (the `cel` crate counts UTF-8 bytes,
/// so `'é'.size()` would be 2 where Kubernetes says 1, and a rule bounding a name's length
/// would refuse non-ASCII names that kube-apiserver accepts); elements of a list or map,
/// bytes of bytes.
fn size(
    ftx: &cel::FunctionContext,
    cel::extractors::This(this): cel::extractors::This<cel::Value>,
) -> Result<i64, cel::ExecutionError> {
    let size = match this {
        cel::Value::String(s) => s.chars().count(),
        cel::Value::List(l) => l.len(),
        cel::Value::Map(m) => m.map.len(),
        cel::Value::Bytes(b) => b.len(),
        value => return Err(ftx.error(format!("cannot determine the size of {value:?}"))),
    };
    Ok(size as i64)
}

/// A rule parsed once, when its CRD was.
pub struct CompiledRule {
    program: Result<Expression, String>,
    message_expression: Option<Expression>,
    uses_old_self: bool,
    /// `fieldPath` resolved against the schema, rendered as a path suffix (`.a[b]`).
    field_path: Option<String>,
    /// The fields of `self` and `oldSelf` that the rule and its `messageExpression` read,
    /// when they read them only as `self.<field>` (or `has(self.<field>)`); `None` when they
    /// use the whole value (`size(self)`, `self.all(...)`, `self == oldSelf`, ...).
    reads: Option<BTreeSet<String>>,
    /// The rule evaluated over the JSON itself, when it only uses the forms
    /// [`direct::Direct`] knows.
    direct: Option<direct::Direct>,
}

fn parse(source: &str) -> Result<Expression, String> {
    cel::parser::Parser::new()
        .enable_optional_syntax(true)
        .parse(source)
        .map_err(|e| e.to_string())
}

impl CompiledRule {
    pub fn compile(
        schema: &Schema,
        rule: &str,
        message_expression: Option<&str>,
        field_path: Option<&str>,
    ) -> CompiledRule {
        let program = parse(rule);
        let uses_old_self = program
            .as_ref()
            .is_ok_and(|p| p.references().has_variable("oldSelf"));
        let message_expression = message_expression.and_then(|m| parse(m).ok());
        let reads = match &program {
            Ok(program) => {
                let mut reads = Some(BTreeSet::new());
                fields_read(program, &mut reads);
                if let Some(message) = &message_expression {
                    fields_read(message, &mut reads);
                }
                reads
            }
            Err(_) => None,
        };
        CompiledRule {
            direct: program.as_ref().ok().and_then(direct::Direct::compile),
            program,
            message_expression,
            uses_old_self,
            field_path: field_path.and_then(|p| resolve_field_path(schema, p)),
            reads,
        }
    }
}

/// The variables whose fields [`fields_read`] tracks.
const RULE_VARIABLES: [&str; 2] = ["self", "oldSelf"];

/// Adds to `reads` the fields that `expression` selects from `self` or `oldSelf`, or sets it
/// to `None` when the expression uses either variable in any other way (or declares a
/// variable of the same name, which would shadow it).
fn fields_read(expression: &Expression, reads: &mut Option<BTreeSet<String>>) {
    use cel::common::ast::{EntryExpr, Expr};
    if reads.is_none() {
        return;
    }
    match &expression.expr {
        Expr::Select(select) => match &select.operand.expr {
            Expr::Ident(name) if RULE_VARIABLES.contains(&name.as_str()) => {
                if let Some(fields) = reads {
                    fields.insert(select.field.clone());
                }
            }
            _ => fields_read(&select.operand, reads),
        },
        Expr::Ident(name) => {
            if RULE_VARIABLES.contains(&name.as_str()) {
                *reads = None;
            }
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                fields_read(target, reads);
            }
            for argument in &call.args {
                fields_read(argument, reads);
            }
        }
        Expr::Comprehension(comprehension) => {
            let shadows = |name: &str| RULE_VARIABLES.contains(&name);
            if shadows(&comprehension.iter_var)
                || comprehension.iter_var2.as_deref().is_some_and(shadows)
                || shadows(&comprehension.accu_var)
            {
                *reads = None;
                return;
            }
            for part in [
                &comprehension.iter_range,
                &comprehension.accu_init,
                &comprehension.loop_cond,
                &comprehension.loop_step,
                &comprehension.result,
            ] {
                fields_read(part, reads);
            }
        }
        Expr::List(list) => {
            for element in &list.elements {
                fields_read(element, reads);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                match &entry.expr {
                    EntryExpr::StructField(field) => fields_read(&field.value, reads),
                    EntryExpr::MapEntry(entry) => {
                        fields_read(&entry.key, reads);
                        fields_read(&entry.value, reads);
                    }
                }
            }
        }
        Expr::Struct(structure) => {
            for entry in &structure.entries {
                match &entry.expr {
                    EntryExpr::StructField(field) => fields_read(&field.value, reads),
                    EntryExpr::MapEntry(entry) => {
                        fields_read(&entry.key, reads);
                        fields_read(&entry.value, reads);
                    }
                }
            }
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Resolves a rule's `fieldPath` (`.a.b`, `.a['b.c']`) against the schema the rule sits
/// on: property names are children, additional properties keys.
fn resolve_field_path(schema: &Schema, path: &str) -> Option<String> {
    let mut node = schema;
    let mut rendered = String::new();
    let mut rest = path;
    while !rest.is_empty() {
        let name;
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            name = after[..end].to_string();
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            name = after[..end].replace("\\'", "'").replace("\\\\", "\\");
            rest = &after[end + 2..];
        } else {
            return None;
        }
        if name.is_empty() {
            return None;
        }
        if !node.properties.is_empty() {
            node = node.properties.get(&name)?;
            rendered.push('.');
            rendered.push_str(&name);
        } else if let Some(additional) = node.additional_schema() {
            node = additional;
            rendered.push_str(&format!("[{name}]"));
        } else {
            return None;
        }
    }
    Some(rendered)
}

/// Evaluates every rule of the schema over `object`, with `old` on updates.
pub fn validate(
    schema: &Schema,
    object: &Value,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
    warnings: &mut Vec<String>,
) {
    let mut walker = Walker {
        errors,
        warnings,
        updating: old.is_some(),
    };
    let unchanged = old.is_some_and(|old| old == object);
    walker.walk(schema, object, old, &Path::root(), true, unchanged);
}

struct Walker<'a> {
    errors: &'a mut Vec<FieldError>,
    warnings: &'a mut Vec<String>,
    updating: bool,
}

impl Walker<'_> {
    /// `resource`: the node is the root or an embedded resource. `unchanged`: the value
    /// equals its correlated old value (or, without one, the nearest correlated ancestor's
    /// did), so failures of non-transition rules only warn.
    fn walk(
        &mut self,
        schema: &Schema,
        value: &Value,
        old: Option<&Value>,
        path: &Path,
        resource: bool,
        unchanged: bool,
    ) {
        if value.is_null() || !schema.rules_within {
            return;
        }
        if !schema.rules.is_empty() {
            self.evaluate(schema, value, old, path, resource, unchanged);
        }
        let updating = self.updating;
        let child_unchanged = |child_old: Option<&Value>, child: &Value| match child_old {
            Some(child_old) => updating && child_old == child,
            None => unchanged,
        };
        match value {
            Value::Array(items) => {
                if let Some(item_schema) = schema.items.as_deref().filter(|s| s.rules_within) {
                    for (index, item) in items.iter().enumerate() {
                        let item_old = correlate_item(schema, old, item);
                        let same = child_unchanged(item_old, item);
                        self.walk(item_schema, item, item_old, &path.index(index), false, same);
                    }
                }
            }
            Value::Object(map) => {
                if let Some(additional) = schema.additional_schema().filter(|s| s.rules_within) {
                    for (key, child) in map {
                        let child_old = correlate_field(old, key);
                        let same = child_unchanged(child_old, child);
                        self.walk(additional, child, child_old, &path.key(key), false, same);
                    }
                }
                // Only the properties with rules below them are looked up (in key order, as
                // the map's own order would visit them).
                for (key, property) in &schema.properties {
                    if property.rules_within
                        && let Some(child) = map.get(key)
                    {
                        let child_old = correlate_field(old, key);
                        let same = child_unchanged(child_old, child);
                        let embedded = property.embedded_resource;
                        self.walk(property, child, child_old, &path.child(key), embedded, same);
                    }
                }
            }
            _ => {}
        }
    }

    fn evaluate(
        &mut self,
        schema: &Schema,
        value: &Value,
        old: Option<&Value>,
        path: &Path,
        resource: bool,
        unchanged: bool,
    ) {
        let type_name = || Value::String(schema.type_.clone().unwrap_or_default());
        // Only the fields the node's rules read are converted, straight into the values the
        // CEL interpreter works on, and once for all of the node's rules.
        let reads = schema.rule_reads.as_ref();
        let self_val = || to_val_reading(value, schema, resource, reads);
        let old_val = || old.map(|old| to_val_reading(old, schema, resource, reads));
        let mut plain_context = None;
        let mut optional_context = None;
        for rule in &schema.rules {
            let compiled = &rule.compiled;
            let program = match &compiled.program {
                Ok(program) => program,
                Err(error) => {
                    self.errors.push(FieldError::invalid(
                        path.render(),
                        type_name(),
                        format!("rule compile error: {error}"),
                    ));
                    continue;
                }
            };
            if compiled.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            // Most rules are decided over the JSON directly; the interpreter answers the
            // others, the failures and the messages.
            let direct = match &compiled.direct {
                Some(direct) if !rule.optional_old_self => {
                    direct.evaluate(program, schema, value, old, resource).ok()
                }
                _ => None,
            };
            if direct == Some(true) {
                continue;
            }
            let context: &cel::Context<'_> = if rule.optional_old_self {
                optional_context.get_or_insert_with(|| {
                    let optional = match old_val() {
                        Some(old) => CelOptional::of(old),
                        None => CelOptional::none(),
                    };
                    scope([("self", self_val()), ("oldSelf", Box::new(optional))])
                })
            } else {
                plain_context.get_or_insert_with(|| match old_val() {
                    Some(old) => scope([("self", self_val()), ("oldSelf", old)]),
                    None => scope([("self", self_val())]),
                })
            };
            let resolved = match direct {
                Some(passed) => Ok(cel::Value::Bool(passed)),
                None => cel::Value::resolve(program, context),
            };
            let passed = match resolved {
                Ok(cel::Value::Bool(passed)) => passed,
                Ok(_) => {
                    self.errors.push(FieldError::invalid(
                        path.render(),
                        type_name(),
                        format!(
                            "rule compile error: rule must evaluate to a bool: {}",
                            rule_text(rule)
                        ),
                    ));
                    continue;
                }
                Err(cel::ExecutionError::NoSuchOverload) => {
                    self.errors.push(FieldError::invalid(
                        path.render(),
                        type_name(),
                        format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule_text(rule)
                        ),
                    ));
                    continue;
                }
                Err(error) => {
                    self.errors.push(FieldError::invalid(
                        path.render(),
                        type_name(),
                        format!(
                            "{} evaluating rule: {}",
                            error_text(&error),
                            rule_text(rule)
                        ),
                    ));
                    continue;
                }
            };
            if passed {
                continue;
            }
            let field = match &compiled.field_path {
                Some(suffix) if path.render() == "<nil>" => {
                    suffix.strip_prefix('.').unwrap_or(suffix).to_string()
                }
                Some(suffix) => format!("{}{suffix}", path.render()),
                None => path.render(),
            };
            let detail = compiled
                .message_expression
                .as_ref()
                .and_then(|expression| evaluate_message(expression, context))
                .unwrap_or_else(|| default_message(rule));
            let shown = match schema.type_.as_deref() {
                Some("object") | Some("array") => None,
                _ => Some(value.clone()),
            };
            let error = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => {
                    FieldError::new(ErrorType::Forbidden, field, None, detail)
                }
                Some("FieldValueRequired") => FieldError::required(field, detail),
                Some("FieldValueDuplicate") => {
                    FieldError::new(ErrorType::Duplicate, field, shown, "")
                }
                _ => FieldError::new(ErrorType::Invalid, field, shown, detail),
            };
            if !compiled.uses_old_self && unchanged {
                self.warnings.push(error.message());
            } else {
                self.errors.push(error);
            }
        }
    }
}

/// The message of a failed rule: its `message`, or `failed rule: <rule>`.
fn default_message(rule: &Rule) -> String {
    match &rule.message {
        Some(message) => message.trim().to_string(),
        None => format!("failed rule: {}", rule.rule.trim()),
    }
}

/// How upstream names a rule in errors: its message if it has one, else its text.
fn rule_text(rule: &Rule) -> String {
    match &rule.message {
        Some(message) => message.trim().to_string(),
        None => rule.rule.trim().to_string(),
    }
}

fn error_text(error: &cel::ExecutionError) -> String {
    match error {
        cel::ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        other => other.to_string(),
    }
}

/// A `messageExpression`'s result, when it is a usable message (a non-empty string on one
/// line, at most 5 KiB); otherwise the rule's message is used.
fn evaluate_message(expression: &Expression, context: &cel::Context<'_>) -> Option<String> {
    match cel::Value::resolve(expression, context) {
        Ok(cel::Value::String(message)) => {
            let message = message.trim();
            (!message.is_empty() && !message.contains('\n') && message.len() <= MAX_MESSAGE_BYTES)
                .then(|| message.to_string())
        }
        _ => None,
    }
}

/// CEL's reserved words, which property names escape as `__<word>__`.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as CEL sees it (upstream's `Escape`); `None` when it cannot be named.
fn escape(name: &str) -> Option<String> {
    let first = name.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut escaped = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                escaped.push_str("__underscores__");
            }
            '.' => escaped.push_str("__dot__"),
            '-' => escaped.push_str("__dash__"),
            '/' => escaped.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => escaped.push(c),
            _ => return None,
        }
    }
    Some(escaped)
}

/// A scope for a node's rules: the interpreter's functions and the given variables.
fn scope<const N: usize>(variables: [(&str, Box<dyn Val>); N]) -> cel::Context<'static> {
    cel::Context::Child {
        parent: &ROOT,
        variables: variables
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
        resolver: None,
    }
}

/// The fields of `self` and `oldSelf` that a node's rules read (see
/// [`CompiledRule::reads`]); `None` when one of them uses the whole value.
pub fn fields_read_by(rules: &[Rule]) -> Option<BTreeSet<String>> {
    let mut reads = BTreeSet::new();
    for rule in rules {
        reads.extend(rule.compiled.reads.as_ref()?.iter().cloned());
    }
    Some(reads)
}

/// [`to_val`] of a node's value, keeping only the fields in `reads` (as CEL names them) when
/// the value is an object and the node's rules read nothing else.
fn to_val_reading(
    value: &Value,
    schema: &Schema,
    resource: bool,
    reads: Option<&BTreeSet<String>>,
) -> Box<dyn Val> {
    match (value, reads) {
        (Value::Object(map), Some(reads)) => {
            object_to_val(map, Some(schema), resource, Some(reads))
        }
        _ => to_val(value, Some(schema), resource),
    }
}

/// A JSON value as the CEL value of the type its schema gives it, built directly in the
/// interpreter's representation. `resource`: the root or an embedded resource, whose
/// metadata shows only `name` and `generateName`.
fn to_val(value: &Value, schema: Option<&Schema>, resource: bool) -> Box<dyn Val> {
    let type_ = schema_type(schema);
    match value {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match number(n, type_) {
            Ok(i) => Box::new(CelInt::from(i)),
            Err(f) => Box::new(CelDouble::from(f)),
        },
        Value::String(s) => string_to_val(s, schema.filter(|_| type_ == Some("string"))),
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.items.as_deref());
            let items: Vec<Box<dyn Val>> = items
                .iter()
                .map(|item| to_val(item, item_schema, false))
                .collect();
            Box::new(CelList::from(items))
        }
        Value::Object(map) => object_to_val(map, schema, resource, None),
    }
}

/// The `type` that decides how a value converts (none under `x-kubernetes-int-or-string`).
fn schema_type(schema: Option<&Schema>) -> Option<&str> {
    schema
        .filter(|s| !s.int_or_string)
        .and_then(|s| s.type_.as_deref())
}

/// A JSON number as CEL sees it under its schema's `type`: `Ok` an int, `Err` a double.
fn number(n: &serde_json::Number, type_: Option<&str>) -> Result<i64, f64> {
    match (type_, n.as_i64()) {
        (Some("number"), _) | (_, None) => match (type_, n.as_f64()) {
            (Some("integer"), Some(f)) if f == f.trunc() => Ok(f as i64),
            (_, f) => Err(f.unwrap_or(0.0)),
        },
        (_, Some(i)) => Ok(i),
    }
}

/// An object as a CEL map: declared properties under their escaped names (those that cannot
/// be named are left out), other keys as they are; with `reads`, only the fields named there.
fn object_to_val(
    map: &serde_json::Map<String, Value>,
    schema: Option<&Schema>,
    resource: bool,
    reads: Option<&BTreeSet<String>>,
) -> Box<dyn Val> {
    let wanted = |name: &str| reads.is_none_or(|reads| reads.contains(name));
    let mut entries: HashMap<CelMapKey, Box<dyn Val>> = HashMap::with_capacity(map.len());
    for (name, child) in map {
        if resource && name == "metadata" {
            if wanted("metadata") {
                let mut metadata: HashMap<CelMapKey, Box<dyn Val>> = HashMap::new();
                for field in ["name", "generateName"] {
                    if let Some(v) = child.get(field) {
                        metadata.insert(CelMapKey::from(field), to_val(v, None, false));
                    }
                }
                entries.insert(
                    CelMapKey::from("metadata"),
                    Box::new(CelMap::from(metadata)),
                );
            }
            continue;
        }
        let declared = schema.and_then(|s| s.properties.get(name));
        match (declared, schema.and_then(|s| s.additional_schema())) {
            (Some(property), _) => {
                if let Some(escaped) = escape(name).filter(|escaped| wanted(escaped)) {
                    let child = to_val(child, Some(property), property.embedded_resource);
                    entries.insert(CelMapKey::from(escaped), child);
                }
            }
            (None, additional) if wanted(name) => {
                entries.insert(
                    CelMapKey::from(name.as_str()),
                    to_val(child, additional, false),
                );
            }
            (None, _) => {}
        }
    }
    Box::new(CelMap::from(entries))
}

/// Strings with a `byte`, `duration`, `date` or `date-time` format are bytes, durations and
/// timestamps in CEL; a value that does not parse stays a string.
fn string_to_val(s: &str, schema: Option<&Schema>) -> Box<dyn Val> {
    let text = || -> Box<dyn Val> { Box::new(CelString::from(s)) };
    let Some(format) = schema.and_then(|s| s.format.as_deref()) else {
        return text();
    };
    match format {
        "byte" => {
            use base64::Engine;
            match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(bytes) => Box::new(CelBytes::from(bytes)),
                Err(_) => text(),
            }
        }
        "duration" => match super::format::parse_duration(s) {
            Some(nanos) => match i64::try_from(nanos) {
                Ok(nanos) => Box::new(CelDuration::from(chrono::Duration::nanoseconds(nanos))),
                Err(_) => text(),
            },
            None => text(),
        },
        "date" => match super::format::parse_date(s).and_then(|d| d.and_hms_opt(0, 0, 0)) {
            Some(midnight) => Box::new(CelTimestamp::from(midnight.and_utc().fixed_offset())),
            None => text(),
        },
        "date-time" | "datetime" => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(timestamp) => Box::new(CelTimestamp::from(timestamp)),
            Err(_) => text(),
        },
        _ => text(),
    }
}
