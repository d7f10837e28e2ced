//! The JSONPath subset that printer columns use: `.a.b`, `.a[0].b`, `.a[*].b`, `.a['b.c']`,
//! and filters such as `.a[?(@.type=="Ready")].status`, with or without the `{}` around
//! the expression that kubectl's templates carry.
//!
//! kube-apiserver evaluates a CRD's `additionalPrinterColumns` with client-go's JSONPath and
//! takes the first result; a path this subset cannot parse gives empty cells, as a path that
//! matches nothing does.

use serde_json::Value;

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// A map key.
    Field(String),
    /// A list index; negative counts from the end.
    Index(i64),
    /// Every list item or map value.
    Wildcard,
    /// The list items for which the condition holds.
    Filter(Condition),
}

/// `@.path`, `@.path == literal` or `@.path != literal`.
#[derive(Clone, Debug, PartialEq)]
struct Condition {
    path: Vec<Step>,
    test: Test,
}

#[derive(Clone, Debug, PartialEq)]
enum Test {
    Exists,
    Equal(Value),
    NotEqual(Value),
}

/// A parsed path.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    steps: Vec<Step>,
}

impl Path {
    /// Parses `expression`, or says why it is outside the subset.
    pub fn parse(expression: &str) -> Result<Path, String> {
        let mut text = expression.trim();
        if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            text = inner.trim();
        }
        if let Some(rest) = text.strip_prefix('$') {
            text = rest;
        }
        let steps = parse_steps(text, false)?;
        Ok(Path { steps })
    }

    /// The first value the path selects.
    pub fn first<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        evaluate(&self.steps, value).into_iter().next()
    }
}

/// Parses a sequence of steps. In a filter (`nested`), parsing stops before an operator or
/// the closing parenthesis; the rest is returned to the caller through `parse_condition`.
fn parse_steps(text: &str, nested: bool) -> Result<Vec<Step>, String> {
    let (steps, rest) = parse_steps_prefix(text, nested)?;
    if !rest.trim().is_empty() {
        return Err(format!("unexpected {rest:?}"));
    }
    Ok(steps)
}

fn parse_steps_prefix(text: &str, nested: bool) -> Result<(Vec<Step>, &str), String> {
    let mut steps = Vec::new();
    let mut rest = text;
    let mut first = true;
    loop {
        if nested {
            rest = rest.trim_start();
        }
        let Some(c) = rest.chars().next() else { break };
        match c {
            '.' => {
                rest = &rest[1..];
                if rest.starts_with('.') {
                    return Err("recursive descent (..) is not supported".into());
                }
                if let Some(after) = rest.strip_prefix('*') {
                    steps.push(Step::Wildcard);
                    rest = after;
                    continue;
                }
                let (name, after) = read_name(rest);
                if name.is_empty() {
                    // A lone `.` selects the value itself.
                    if after.is_empty() && steps.is_empty() {
                        break;
                    }
                    return Err("empty field name".into());
                }
                steps.push(Step::Field(name));
                rest = after;
            }
            '[' => {
                let (step, after) = parse_bracket(&rest[1..])?;
                steps.push(step);
                rest = after;
            }
            _ if nested => break,
            // A path may start with a bare name (`spec.replicas`).
            _ if first => {
                let (name, after) = read_name(rest);
                if name.is_empty() {
                    return Err(format!("unexpected {rest:?}"));
                }
                steps.push(Step::Field(name));
                rest = after;
            }
            _ => return Err(format!("unexpected {rest:?}")),
        }
        first = false;
    }
    Ok((steps, rest))
}

/// A field name up to the next `.` or `[` (or, in a filter, operator or parenthesis);
/// `\.` is a literal dot.
fn read_name(text: &str) -> (String, &str) {
    let mut name = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    name.push(escaped);
                }
            }
            '.' | '[' | ' ' | '=' | '!' | ')' | '<' | '>' => return (name, &text[index..]),
            other => name.push(other),
        }
    }
    (name, "")
}

/// Parses what follows `[` up to and including the matching `]`.
fn parse_bracket(text: &str) -> Result<(Step, &str), String> {
    let text = text.trim_start();
    if let Some(rest) = text.strip_prefix('?') {
        let rest = rest
            .trim_start()
            .strip_prefix('(')
            .ok_or("a filter must be written [?(...)]")?;
        let (condition, rest) = parse_condition(rest)?;
        let rest = rest
            .trim_start()
            .strip_prefix(')')
            .ok_or("unclosed filter")?;
        let rest = rest.trim_start().strip_prefix(']').ok_or("unclosed [")?;
        return Ok((Step::Filter(condition), rest));
    }
    if let Some(quote) = text.chars().next().filter(|c| *c == '\'' || *c == '"') {
        let (literal, rest) = read_quoted(text, quote)?;
        let rest = rest.trim_start().strip_prefix(']').ok_or("unclosed [")?;
        return Ok((Step::Field(literal), rest));
    }
    let end = text.find(']').ok_or("unclosed [")?;
    let inner = text[..end].trim();
    let rest = &text[end + 1..];
    if inner == "*" {
        return Ok((Step::Wildcard, rest));
    }
    let index: i64 = inner
        .parse()
        .map_err(|_| format!("unsupported subscript [{inner}]"))?;
    Ok((Step::Index(index), rest))
}

fn read_quoted(text: &str, quote: char) -> Result<(String, &str), String> {
    let mut value = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((index, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            c if c == quote => return Ok((value, &text[index + c.len_utf8()..])),
            other => value.push(other),
        }
    }
    Err("unterminated string".into())
}

fn parse_condition(text: &str) -> Result<(Condition, &str), String> {
    let text = text.trim_start();
    let rest = text.strip_prefix('@').ok_or("a filter must start with @")?;
    let (path, rest) = parse_steps_prefix(rest, true)?;
    let rest = rest.trim_start();
    let (test, rest) = if let Some(after) = rest.strip_prefix("==") {
        let (literal, after) = parse_literal(after)?;
        (Test::Equal(literal), after)
    } else if let Some(after) = rest.strip_prefix("!=") {
        let (literal, after) = parse_literal(after)?;
        (Test::NotEqual(literal), after)
    } else {
        (Test::Exists, rest)
    };
    Ok((Condition { path, test }, rest))
}

fn parse_literal(text: &str) -> Result<(Value, &str), String> {
    let text = text.trim_start();
    if let Some(quote) = text.chars().next().filter(|c| *c == '\'' || *c == '"') {
        let (literal, rest) = read_quoted(text, quote)?;
        return Ok((Value::String(literal), rest));
    }
    let end = text
        .find(|c: char| c == ')' || c.is_whitespace())
        .unwrap_or(text.len());
    let token = &text[..end];
    let value = match token {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        number => serde_json::from_str::<serde_json::Number>(number)
            .map(Value::Number)
            .map_err(|_| format!("unsupported literal {number:?}"))?,
    };
    Ok((value, &text[end..]))
}

fn evaluate<'a>(steps: &[Step], value: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![value];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => {
                    if let Some(found) = value.get(name.as_str()) {
                        next.push(found);
                    }
                }
                Step::Index(index) => {
                    if let Some(list) = value.as_array() {
                        let position = if *index < 0 {
                            list.len() as i64 + index
                        } else {
                            *index
                        };
                        if let Some(found) =
                            usize::try_from(position).ok().and_then(|p| list.get(p))
                        {
                            next.push(found);
                        }
                    }
                }
                Step::Wildcard => match value {
                    Value::Array(list) => next.extend(list.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Filter(condition) => {
                    if let Some(list) = value.as_array() {
                        next.extend(list.iter().filter(|item| condition.holds(item)));
                    }
                }
            }
        }
        current = next;
    }
    current
}

impl Condition {
    fn holds(&self, item: &Value) -> bool {
        let found = evaluate(&self.path, item).into_iter().next();
        match &self.test {
            Test::Exists => found.is_some_and(|v| !v.is_null() && *v != Value::Bool(false)),
            Test::Equal(literal) => found.is_some_and(|v| same(v, literal)),
            Test::NotEqual(literal) => !found.is_some_and(|v| same(v, literal)),
        }
    }
}

/// Equality of a value and a literal; numbers compare by value (`1` equals `1.0`).
fn same(value: &Value, literal: &Value) -> bool {
    match (value, literal) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}
