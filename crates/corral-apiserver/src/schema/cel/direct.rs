//! Direct evaluation of CEL rules over the request's JSON, for the expression forms that
//! dominate real CRDs: field selection and `has()`, literals, comparisons, `&&`/`||`/`!`,
//! `?:`, integer and double arithmetic, `in`, indexing, `size()`, `startsWith`/`endsWith`/
//! `contains`/`matches` on strings, and the comprehension macros (`all`, `exists`,
//! `exists_one`) over lists and maps.
//!
//! The interpreter converts a node's value into its own representation before each
//! evaluation (and `size(self)` or `all()` convert again); here values stay borrowed from the
//! object, typed by their schema as [`super::to_val`] types them. The interpreter stays the
//! reference: a rule that uses anything else is never evaluated here ([`Direct::compile`]
//! says so once per CRD), and an evaluation that would fail, or reaches a case whose
//! semantics are subtle (mixed numeric types, formatted strings, resource metadata), is
//! [`Defer`]red to the interpreter as a whole, which then answers with its own result or
//! error message. The tests (`direct/tests.rs`) check the two against each other over the
//! rules of the upstream Cluster API CRDs and a corpus, on generated values.

use std::cmp::Ordering;

use kube_cel::cel::common::ast::{Expr, LiteralValue, operators};
use regex::Regex;
use serde_json::{Map, Value};

use super::{Expression, RESERVED, escape};
use crate::schema::structural::Schema;

#[cfg(test)]
mod tests;

/// What a rule can be evaluated directly with: the regexes of its `matches` calls, compiled
/// once (their patterns are literals).
pub struct Direct {
    regexes: Vec<(String, Regex)>,
}

/// The interpreter must answer: the evaluation would fail, or reaches a case not handled here.
#[derive(Debug)]
pub struct Defer;

/// A value as a rule sees it, borrowed from the object (or the rule's literals).
#[derive(Clone, Copy)]
enum V<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(&'a str),
    /// A list and the schema of the list node (its `items` types the elements).
    List(&'a [Value], Option<&'a Schema>),
    /// An object and its schema; `true` for the root or an embedded resource, whose
    /// `metadata` the interpreter projects (left to it).
    Map(&'a Map<String, Value>, Option<&'a Schema>, bool),
}

type Eval<'a> = Result<V<'a>, Defer>;

impl Direct {
    /// `None` when the expression uses a form that is not evaluated here.
    pub fn compile(expression: &Expression) -> Option<Direct> {
        let mut direct = Direct {
            regexes: Vec::new(),
        };
        direct.supports(expression).then_some(direct)
    }

    fn supports(&mut self, expression: &Expression) -> bool {
        match &expression.expr {
            Expr::Literal(literal) => matches!(
                literal,
                LiteralValue::Boolean(_)
                    | LiteralValue::Int(_)
                    | LiteralValue::Double(_)
                    | LiteralValue::String(_)
                    | LiteralValue::Null
            ),
            Expr::Ident(_) => true,
            Expr::Select(select) => plain_field(&select.field) && self.supports(&select.operand),
            Expr::Call(call) => {
                let arity = (call.target.is_some(), call.args.len());
                let known = match call.func_name.as_str() {
                    operators::CONDITIONAL => arity == (false, 3),
                    operators::LOGICAL_NOT | operators::NOT_STRICTLY_FALSE | operators::NEGATE => {
                        arity == (false, 1)
                    }
                    operators::LOGICAL_AND
                    | operators::LOGICAL_OR
                    | operators::EQUALS
                    | operators::NOT_EQUALS
                    | operators::LESS
                    | operators::LESS_EQUALS
                    | operators::GREATER
                    | operators::GREATER_EQUALS
                    | operators::ADD
                    | operators::SUBSTRACT
                    | operators::MULTIPLY
                    | operators::INDEX => arity == (false, 2),
                    operators::IN => {
                        if arity != (false, 2) {
                            return false;
                        }
                        return self.supports(&call.args[0])
                            && match &call.args[1].expr {
                                Expr::List(list) => {
                                    list.optional_indices.is_empty()
                                        && list.elements.iter().all(|e| self.supports(e))
                                }
                                _ => self.supports(&call.args[1]),
                            };
                    }
                    "size" => arity == (false, 1) || arity == (true, 0),
                    "startsWith" | "endsWith" | "contains" => arity == (true, 1),
                    "matches" => {
                        if arity != (true, 1) {
                            return false;
                        }
                        let Expr::Literal(LiteralValue::String(pattern)) = &call.args[0].expr
                        else {
                            return false;
                        };
                        let Ok(regex) = Regex::new(pattern.inner()) else {
                            return false;
                        };
                        self.regexes.push((pattern.inner().to_string(), regex));
                        true
                    }
                    _ => false,
                };
                known
                    && call.target.as_deref().is_none_or(|t| self.supports(t))
                    && call.args.iter().all(|a| self.supports(a))
            }
            Expr::Comprehension(comprehension) => {
                comprehension.iter_var2.is_none()
                    && matches!(
                        comprehension.accu_init.expr,
                        Expr::Literal(LiteralValue::Boolean(_) | LiteralValue::Int(_))
                    )
                    && [
                        &comprehension.iter_range,
                        &comprehension.loop_cond,
                        &comprehension.loop_step,
                        &comprehension.result,
                    ]
                    .into_iter()
                    .all(|part| self.supports(part))
            }
            Expr::List(_) | Expr::Map(_) | Expr::Struct(_) | Expr::Unspecified => false,
        }
    }

    /// Evaluates the rule over `value` (and `old`, as `oldSelf`), typed by `schema`;
    /// `resource`: the node is the root or an embedded resource. A result that is not a
    /// bool is deferred too (the interpreter words that error).
    pub fn evaluate(
        &self,
        expression: &Expression,
        schema: &Schema,
        value: &Value,
        old: Option<&Value>,
        resource: bool,
    ) -> Result<bool, Defer> {
        let mut evaluator = Evaluator {
            regexes: &self.regexes,
            variables: Vec::with_capacity(4),
        };
        evaluator
            .variables
            .push(("self", typed(value, Some(schema), resource)?));
        if let Some(old) = old {
            let old = typed(old, Some(schema), resource)?;
            evaluator.variables.push(("oldSelf", old));
        }
        match evaluator.eval(expression)? {
            V::Bool(passed) => Ok(passed),
            _ => Err(Defer),
        }
    }
}

/// A field name that names the same JSON key in CEL: no escaping applies to it.
fn plain_field(field: &str) -> bool {
    !field.contains("__") && !RESERVED.contains(&field)
}

/// `value` typed as [`super::to_val`] types it; strings of the formats that become bytes,
/// durations or timestamps are deferred.
fn typed<'a>(value: &'a Value, schema: Option<&'a Schema>, resource: bool) -> Eval<'a> {
    let type_ = super::schema_type(schema);
    Ok(match value {
        Value::Null => V::Null,
        Value::Bool(b) => V::Bool(*b),
        Value::Number(n) => match super::number(n, type_) {
            Ok(i) => V::Int(i),
            Err(f) => V::Double(f),
        },
        Value::String(s) => {
            let format = schema.and_then(|s| s.format.as_deref());
            if type_ == Some("string")
                && matches!(
                    format,
                    Some("byte" | "duration" | "date" | "date-time" | "datetime")
                )
            {
                return Err(Defer);
            }
            V::Str(s)
        }
        Value::Array(items) => V::List(items, schema),
        Value::Object(map) => V::Map(map, schema, resource),
    })
}

/// The schema of an object's field: its property, else `additionalProperties`; and whether
/// it is an embedded resource.
fn field_schema<'a>(schema: Option<&'a Schema>, name: &str) -> (Option<&'a Schema>, bool) {
    match schema.and_then(|s| s.properties.get(name)) {
        Some(property) => (Some(property), property.embedded_resource),
        None => (schema.and_then(Schema::additional_schema), false),
    }
}

/// Whether the interpreter's map of this object has exactly the object's keys, unescaped:
/// no declared properties (whose names it escapes) and no resource metadata projection.
fn raw_keys(schema: Option<&Schema>, resource: bool) -> bool {
    !resource && schema.is_none_or(|s| s.properties.is_empty())
}

struct Evaluator<'a, 'r> {
    regexes: &'r [(String, Regex)],
    /// Variables in scope, innermost last.
    variables: Vec<(&'a str, V<'a>)>,
}

impl<'a> Evaluator<'a, '_> {
    fn eval(&mut self, expression: &'a Expression) -> Eval<'a> {
        match &expression.expr {
            Expr::Literal(literal) => Ok(match literal {
                LiteralValue::Boolean(b) => V::Bool(*b.inner()),
                LiteralValue::Int(i) => V::Int(*i.inner()),
                LiteralValue::Double(d) => V::Double(*d.inner()),
                LiteralValue::String(s) => V::Str(s.inner()),
                LiteralValue::Null => V::Null,
                _ => return Err(Defer),
            }),
            Expr::Ident(name) => self
                .variables
                .iter()
                .rev()
                .find(|(variable, _)| *variable == name.as_str())
                .map(|(_, value)| *value)
                .ok_or(Defer),
            Expr::Select(select) => {
                let V::Map(map, schema, resource) = self.eval(&select.operand)? else {
                    return Err(Defer);
                };
                if resource && select.field == "metadata" {
                    return Err(Defer);
                }
                match map.get(&select.field) {
                    None if select.test => Ok(V::Bool(false)),
                    None => Err(Defer),
                    Some(_) if select.test => Ok(V::Bool(true)),
                    Some(child) => {
                        let (child_schema, embedded) = field_schema(schema, &select.field);
                        typed(child, child_schema, embedded)
                    }
                }
            }
            Expr::Call(call) => self.call(call),
            Expr::Comprehension(comprehension) => {
                let range = self.eval(&comprehension.iter_range)?;
                let accu = self.eval(&comprehension.accu_init)?;
                let depth = self.variables.len();
                self.variables.push((&comprehension.accu_var, accu));
                self.variables.push((&comprehension.iter_var, V::Null));
                match range {
                    V::List(items, schema) => {
                        let item_schema = schema.and_then(|s| s.items.as_deref());
                        for item in items {
                            if !self.step(comprehension, depth, typed(item, item_schema, false)?)? {
                                break;
                            }
                        }
                    }
                    V::Map(map, schema, resource) if raw_keys(schema, resource) => {
                        for key in map.keys() {
                            if !self.step(comprehension, depth, V::Str(key))? {
                                break;
                            }
                        }
                    }
                    _ => return Err(Defer),
                }
                let result = self.eval(&comprehension.result);
                self.variables.truncate(depth);
                result
            }
            Expr::List(_) | Expr::Map(_) | Expr::Struct(_) | Expr::Unspecified => Err(Defer),
        }
    }

    /// One iteration of a comprehension, as the interpreter runs it: the loop condition, then
    /// the step with the item bound. `false` when the condition ends the loop.
    fn step(
        &mut self,
        comprehension: &'a kube_cel::cel::common::ast::ComprehensionExpr,
        depth: usize,
        item: V<'a>,
    ) -> Result<bool, Defer> {
        let V::Bool(go_on) = self.eval(&comprehension.loop_cond)? else {
            return Err(Defer);
        };
        if !go_on {
            return Ok(false);
        }
        self.variables[depth + 1].1 = item;
        self.variables[depth].1 = self.eval(&comprehension.loop_step)?;
        Ok(true)
    }

    fn bool(&mut self, expression: &'a Expression) -> Result<bool, Defer> {
        match self.eval(expression)? {
            V::Bool(b) => Ok(b),
            _ => Err(Defer),
        }
    }

    fn call(&mut self, call: &'a kube_cel::cel::common::ast::CallExpr) -> Eval<'a> {
        let args = &call.args;
        let name = call.func_name.as_str();
        match name {
            operators::CONDITIONAL => {
                let branch = if self.bool(&args[0])? { 1 } else { 2 };
                self.eval(&args[branch])
            }
            // The interpreter's `&&` and `||`: the left side decides when it can; otherwise
            // a right side of `false` (`true`) decides even over a failed left side.
            operators::LOGICAL_AND | operators::LOGICAL_OR => {
                let decisive = name == operators::LOGICAL_OR;
                let left = self.bool(&args[0]);
                if matches!(left, Ok(b) if b == decisive) {
                    return Ok(V::Bool(decisive));
                }
                let right = self.bool(&args[1])?;
                match left {
                    _ if right == decisive => Ok(V::Bool(decisive)),
                    Ok(_) => Ok(V::Bool(right)),
                    Err(defer) => Err(defer),
                }
            }
            operators::LOGICAL_NOT => Ok(V::Bool(!self.bool(&args[0])?)),
            operators::NOT_STRICTLY_FALSE => Ok(V::Bool(self.bool(&args[0])?)),
            operators::EQUALS | operators::NOT_EQUALS => {
                let left = self.eval(&args[0])?;
                let right = self.eval(&args[1])?;
                let equal = equals(left, right)?;
                Ok(V::Bool(equal == (name == operators::EQUALS)))
            }
            operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS => {
                let left = self.eval(&args[0])?;
                let right = self.eval(&args[1])?;
                let ordering = compare(left, right)?;
                Ok(V::Bool(match name {
                    operators::LESS => ordering == Ordering::Less,
                    operators::LESS_EQUALS => ordering != Ordering::Greater,
                    operators::GREATER => ordering == Ordering::Greater,
                    _ => ordering != Ordering::Less,
                }))
            }
            operators::ADD | operators::SUBSTRACT | operators::MULTIPLY => {
                let left = self.eval(&args[0])?;
                let right = self.eval(&args[1])?;
                arithmetic(name, left, right)
            }
            operators::NEGATE => match self.eval(&args[0])? {
                V::Int(i) => i.checked_neg().map(V::Int).ok_or(Defer),
                V::Double(d) => Ok(V::Double(-d)),
                _ => Err(Defer),
            },
            operators::INDEX => {
                let container = self.eval(&args[0])?;
                let index = self.eval(&args[1])?;
                match (container, index) {
                    (V::List(items, schema), V::Int(i)) => {
                        let item = usize::try_from(i).ok().and_then(|i| items.get(i));
                        let item_schema = schema.and_then(|s| s.items.as_deref());
                        typed(item.ok_or(Defer)?, item_schema, false)
                    }
                    (V::Map(map, schema, resource), V::Str(key)) if raw_keys(schema, resource) => {
                        let child = map.get(key).ok_or(Defer)?;
                        typed(child, schema.and_then(Schema::additional_schema), false)
                    }
                    _ => Err(Defer),
                }
            }
            operators::IN => {
                let needle = self.eval(&args[0])?;
                if let Expr::List(list) = &args[1].expr {
                    // The interpreter evaluates the whole list first.
                    let mut found = false;
                    for element in &list.elements {
                        let element = self.eval(element)?;
                        found = found || equals(element, needle)?;
                    }
                    return Ok(V::Bool(found));
                }
                match self.eval(&args[1])? {
                    V::List(items, schema) => {
                        let item_schema = schema.and_then(|s| s.items.as_deref());
                        for item in items {
                            if equals(typed(item, item_schema, false)?, needle)? {
                                return Ok(V::Bool(true));
                            }
                        }
                        Ok(V::Bool(false))
                    }
                    V::Map(map, schema, resource) if raw_keys(schema, resource) => match needle {
                        V::Str(key) => Ok(V::Bool(map.contains_key(key))),
                        _ => Err(Defer),
                    },
                    _ => Err(Defer),
                }
            }
            "size" => {
                let target = match &call.target {
                    Some(target) => self.eval(target)?,
                    None => self.eval(&args[0])?,
                };
                let size = match target {
                    V::Str(s) => s.chars().count(),
                    V::List(items, _) => items.len(),
                    V::Map(map, schema, resource) if raw_keys(schema, resource) => map.len(),
                    _ => return Err(Defer),
                };
                Ok(V::Int(size as i64))
            }
            "startsWith" | "endsWith" | "contains" | "matches" => {
                let target = call.target.as_deref().ok_or(Defer)?;
                let (V::Str(text), V::Str(argument)) = (self.eval(target)?, self.eval(&args[0])?)
                else {
                    return Err(Defer);
                };
                Ok(V::Bool(match name {
                    "startsWith" => text.starts_with(argument),
                    "endsWith" => text.ends_with(argument),
                    "contains" => text.contains(argument),
                    _ => {
                        let (_, regex) = self
                            .regexes
                            .iter()
                            .find(|(pattern, _)| pattern == argument)
                            .ok_or(Defer)?;
                        regex.is_match(text)
                    }
                }))
            }
            _ => Err(Defer),
        }
    }
}

/// CEL equality where both sides have the same type; values of different types (which the
/// interpreter compares by its own rules) are deferred.
fn equals(left: V<'_>, right: V<'_>) -> Result<bool, Defer> {
    let same_schema = |a: Option<&Schema>, b: Option<&Schema>| match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        (None, None) => true,
        _ => false,
    };
    match (left, right) {
        (V::Null, V::Null) => Ok(true),
        (V::Bool(a), V::Bool(b)) => Ok(a == b),
        (V::Int(a), V::Int(b)) => Ok(a == b),
        (V::Double(a), V::Double(b)) => Ok(a == b),
        (V::Str(a), V::Str(b)) => Ok(a == b),
        (V::List(a, schema_a), V::List(b, schema_b)) if same_schema(schema_a, schema_b) => {
            // Equal JSON under the same schema converts to equal CEL values.
            if a == b {
                return Ok(true);
            }
            if a.len() != b.len() {
                return Ok(false);
            }
            let item_schema = schema_a.and_then(|s| s.items.as_deref());
            for (a, b) in a.iter().zip(b) {
                if !equals(typed(a, item_schema, false)?, typed(b, item_schema, false)?)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        (V::Map(a, schema_a, resource_a), V::Map(b, schema_b, resource_b))
            if same_schema(schema_a, schema_b) && resource_a == resource_b =>
        {
            if a == b {
                return Ok(true);
            }
            // The interpreter's maps escape declared property names (and leave out those it
            // cannot name): compared here only when no key needs escaping.
            let escaped = |map: &Map<String, Value>| {
                map.keys()
                    .any(|key| escape(key).is_none_or(|escaped| escaped != *key))
            };
            if resource_a || escaped(a) || escaped(b) {
                return Err(Defer);
            }
            if a.len() != b.len() {
                return Ok(false);
            }
            for (key, a) in a {
                let Some(b) = b.get(key) else {
                    return Ok(false);
                };
                let (child_schema, embedded) = field_schema(schema_a, key);
                let equal = equals(
                    typed(a, child_schema, embedded)?,
                    typed(b, child_schema, embedded)?,
                )?;
                if !equal {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        _ => Err(Defer),
    }
}

fn compare(left: V<'_>, right: V<'_>) -> Result<Ordering, Defer> {
    match (left, right) {
        (V::Int(a), V::Int(b)) => Ok(a.cmp(&b)),
        (V::Double(a), V::Double(b)) => a.partial_cmp(&b).ok_or(Defer),
        (V::Str(a), V::Str(b)) => Ok(a.cmp(b)),
        _ => Err(Defer),
    }
}

fn arithmetic<'a>(operator: &str, left: V<'a>, right: V<'a>) -> Eval<'a> {
    match (left, right) {
        (V::Int(a), V::Int(b)) => match operator {
            operators::ADD => a.checked_add(b),
            operators::SUBSTRACT => a.checked_sub(b),
            _ => a.checked_mul(b),
        }
        .map(V::Int)
        .ok_or(Defer),
        (V::Double(a), V::Double(b)) => Ok(V::Double(match operator {
            operators::ADD => a + b,
            operators::SUBSTRACT => a - b,
            _ => a * b,
        })),
        _ => Err(Defer),
    }
}
