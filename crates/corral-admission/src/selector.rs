//! Label and field selectors, as clients send them in `labelSelector` and `fieldSelector`.
//!
//! [`LabelSelector`] follows `k8s.io/apimachinery/pkg/labels`: the string grammar
//! (`app=web,tier!=db,env in (prod,staging),!canary,release`), the `metav1.LabelSelector`
//! object form (`matchLabels`, `matchExpressions`) that specs and controllers use, matching,
//! and printing back. [`FieldSelector`] follows `k8s.io/apimachinery/pkg/fields`:
//! `field=value`, `field==value` and `field!=value` terms joined by commas, with `\`, `,` and
//! `=` escaped by a backslash inside values.
//!
//! Error messages are apimachinery's, so a `400 BadRequest` from Corral reads like one from
//! kube-apiserver (`unable to parse requirement: ...`, `found ',', expected: ...`,
//! `invalid selector: ...`).
//!
//! The module only parses and matches. Which fields a resource supports in a field selector
//! is the server's decision: it asks [`FieldSelector::fields`] and answers
//! `field label not supported: <field>` itself, and it supplies field values to
//! [`FieldSelector::matches`].

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::names;

/// Why a selector could not be parsed or built. The messages are apimachinery's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The label selector string breaks the grammar between requirements.
    #[error("{message}")]
    ParseLabelSelector { message: String },
    /// One requirement of a label selector string is malformed or invalid.
    #[error("unable to parse requirement: {message}")]
    ParseRequirement { message: String },
    /// A requirement built from parts (the object form, or [`Requirement::new`]) is invalid.
    #[error("{message}")]
    InvalidRequirement { message: String },
    /// A `matchExpressions` entry names an operator other than In, NotIn, Exists and
    /// DoesNotExist.
    #[error("{} is not a valid label selector operator", go_quote(operator))]
    InvalidLabelSelectorOperator { operator: String },
    /// The object form is not shaped like a `metav1.LabelSelector`.
    #[error("invalid label selector: {field} must be {expected}")]
    MalformedLabelSelector {
        field: String,
        expected: &'static str,
    },
    /// A field selector term has no `=`, `==` or `!=`.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    ParseFieldSelector { selector: String, term: String },
    /// A field selector value has a backslash before something other than `\`, `,` or `=`,
    /// or ends in a backslash.
    #[error("invalid field selector: invalid escape sequence: {sequence}")]
    InvalidEscapeSequence { sequence: String },
    /// A field selector value holds a bare `,` or `=`. apimachinery prints the character's
    /// code point, and so does this message.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*character))]
    UnescapedCharacter { character: char },
}

/// How a label requirement relates its key to its values. The string forms are
/// apimachinery's `selection.Operator` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`
    Equals,
    /// `key==value`, the same test as `=`, kept apart to print back as written.
    DoubleEquals,
    /// `key!=value`; also true when the label is absent.
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`; also true when the label is absent.
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>5`, comparing integers.
    GreaterThan,
    /// `key<5`, comparing integers.
    LessThan,
}

impl Operator {
    /// apimachinery's name for the operator (`selection.Operator`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Read access to a set of labels, so that selectors can match `metadata.labels` as JSON or
/// labels held in an ordinary map.
pub trait LabelSet {
    /// The value of the label `key`, if the set has it.
    fn label(&self, key: &str) -> Option<&str>;
}

/// `metadata.labels` as JSON. A value that is not a string counts as an absent label;
/// validation keeps such values out of stored objects.
impl LabelSet for Map<String, Value> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

impl LabelSet for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: std::hash::BuildHasher> LabelSet for HashMap<String, String, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// One condition of a label selector. All requirements of a selector must hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement and validates it like apimachinery's `labels.NewRequirement`:
    /// the key must be a qualified name; `in` and `notin` need at least one value; `=`, `==`
    /// and `!=` exactly one; `exists` and `!` none; `gt` and `lt` exactly one integer; every
    /// value must be a valid label value. All problems are reported together.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Requirement, SelectorError> {
        let key = key.into();
        let mut problems = Vec::new();
        if let Err(messages) = names::is_qualified_name(&key) {
            problems.push(invalid_value_error("key", &go_quote(&key), &messages));
        }
        let values_as_json = || {
            if values.is_empty() {
                // apimachinery receives a nil slice here, which JSON-encodes as null.
                "null".to_string()
            } else {
                // fields_text: selector values.
                serde_json::to_string(&values).unwrap_or_default()
            }
        };
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                problems.push(format!(
                    "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                    values_as_json()
                ));
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                problems.push(format!(
                    "values: Invalid value: {}: exact-match compatibility requires one single value",
                    values_as_json()
                ));
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                problems.push(format!(
                    "values: Invalid value: {}: values set must be empty for exists and does not exist",
                    values_as_json()
                ));
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    problems.push(format!(
                        "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        values_as_json()
                    ));
                }
                for (index, value) in values.iter().enumerate() {
                    if value.parse::<i64>().is_err() {
                        problems.push(format!(
                            "values[{index}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                            go_quote(value)
                        ));
                    }
                }
            }
            _ => {}
        }
        for (index, value) in values.iter().enumerate() {
            if let Err(messages) = names::is_valid_label_value(value) {
                problems.push(invalid_value_error(
                    &format!("values[{index}][{key}]"),
                    &go_quote(value),
                    &messages,
                ));
            }
        }
        if problems.is_empty() {
            Ok(Requirement {
                key,
                operator,
                values,
            })
        } else {
            Err(SelectorError::InvalidRequirement {
                message: aggregate(problems),
            })
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given (sorted and without duplicates when parsed from a
    /// string, because the grammar treats `in (...)` as a set).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether the labels satisfy this requirement. `!=` and `notin` hold when the label is
    /// absent; `gt` and `lt` fail when the label's value is not an integer.
    pub fn matches<L: LabelSet + ?Sized>(&self, labels: &L) -> bool {
        let actual = labels.label(&self.key);
        match self.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In => {
                actual.is_some_and(|value| self.has_value(value))
            }
            Operator::NotEquals | Operator::NotIn => {
                actual.is_none_or(|value| !self.has_value(value))
            }
            Operator::Exists => actual.is_some(),
            Operator::DoesNotExist => actual.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [bound]) = (actual, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(actual), Ok(bound)) = (actual.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|candidate| candidate == value)
    }
}

impl fmt::Display for Requirement {
    /// Prints the requirement in the string grammar; several values are sorted so that equal
    /// requirements print alike.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let operator = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(operator)?;
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        let values = values.join(",");
        if matches!(self.operator, Operator::In | Operator::NotIn) {
            write!(f, "({values})")
        } else {
            f.write_str(&values)
        }
    }
}

/// A label selector: requirements that must all hold.
///
/// Two selectors match without requirements: [`LabelSelector::everything`] (the empty string,
/// an empty `metav1.LabelSelector`) matches every object, and [`LabelSelector::nothing`] (a
/// null `metav1.LabelSelector`) matches none. Both print as the empty string, as in
/// apimachinery.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    matches_nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every object.
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// The selector that matches no object.
    pub fn nothing() -> LabelSelector {
        LabelSelector {
            requirements: Vec::new(),
            matches_nothing: true,
        }
    }

    /// Parses the string form used by `?labelSelector=` and `kubectl -l`. The empty string
    /// (or only whitespace) selects everything. Requirements are kept sorted by key.
    pub fn parse(selector: &str) -> Result<LabelSelector, SelectorError> {
        let requirements = LabelParser::new(selector).parse()?;
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// Builds a selector from requirements, which must all hold.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> LabelSelector {
        // A stable sort by key, as apimachinery sorts, so printing is deterministic.
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            matches_nothing: false,
        }
    }

    /// The selector that requires every given label to have the given value (apimachinery's
    /// `SelectorFromSet`). Like there, keys and values are not validated; an empty set
    /// selects everything.
    pub fn from_labels<K, V>(labels: impl IntoIterator<Item = (K, V)>) -> LabelSelector
    where
        K: Into<String>,
        V: Into<String>,
    {
        let requirements = labels
            .into_iter()
            .map(|(key, value)| Requirement {
                key: key.into(),
                operator: Operator::Equals,
                values: vec![value.into()],
            })
            .collect();
        LabelSelector::from_requirements(requirements)
    }

    /// Converts a `metav1.LabelSelector` object (`{"matchLabels": {...}, "matchExpressions":
    /// [{"key", "operator", "values"}]}`), as apimachinery's `LabelSelectorAsSelector` does:
    /// `null` selects nothing, an object without labels or expressions selects everything,
    /// and every entry is validated like [`Requirement::new`].
    pub fn from_label_selector_json(selector: &Value) -> Result<LabelSelector, SelectorError> {
        let fields = match selector {
            Value::Null => return Ok(LabelSelector::nothing()),
            Value::Object(fields) => fields,
            _ => return Err(malformed("labelSelector", "an object")),
        };
        let match_labels = match fields.get("matchLabels") {
            None | Some(Value::Null) => None,
            Some(Value::Object(labels)) => Some(labels),
            Some(_) => return Err(malformed("matchLabels", "an object")),
        };
        let match_expressions = match fields.get("matchExpressions") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(expressions)) => expressions.as_slice(),
            Some(_) => return Err(malformed("matchExpressions", "an array")),
        };

        let mut requirements = Vec::new();
        for (key, value) in match_labels.into_iter().flatten() {
            let Some(value) = value.as_str() else {
                return Err(malformed(&format!("matchLabels[{key}]"), "a string"));
            };
            requirements.push(Requirement::new(
                key.as_str(),
                Operator::Equals,
                vec![value.to_string()],
            )?);
        }
        for (index, expression) in match_expressions.iter().enumerate() {
            requirements.push(requirement_from_expression(index, expression)?);
        }
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the selector matches every object.
    pub fn is_everything(&self) -> bool {
        !self.matches_nothing && self.requirements.is_empty()
    }

    /// Whether the selector matches no object because it came from a null
    /// `metav1.LabelSelector`.
    pub fn is_nothing(&self) -> bool {
        self.matches_nothing
    }

    /// Whether every requirement holds for the labels.
    pub fn matches<L: LabelSet + ?Sized>(&self, labels: &L) -> bool {
        !self.matches_nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the selector matches an object's `metadata.labels`; an object without labels
    /// is matched as having none.
    pub fn matches_object(&self, object: &Value) -> bool {
        let no_labels = Map::new();
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .unwrap_or(&no_labels);
        self.matches(labels)
    }

    /// The single value the selector demands for `key`, if its first requirement on that key
    /// is `=`, `==` or an `in` with one value; lets the server look objects up by label
    /// instead of scanning.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let requirement = self.requirements.iter().find(|r| r.key == key)?;
        match (requirement.operator, requirement.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;

    fn from_str(selector: &str) -> Result<LabelSelector, SelectorError> {
        LabelSelector::parse(selector)
    }
}

fn requirement_from_expression(
    index: usize,
    expression: &Value,
) -> Result<Requirement, SelectorError> {
    let field = |name: &str| format!("matchExpressions[{index}].{name}");
    let Some(expression) = expression.as_object() else {
        return Err(malformed(
            &format!("matchExpressions[{index}]"),
            "an object",
        ));
    };
    let key = match expression.get("key") {
        None | Some(Value::Null) => "",
        Some(Value::String(key)) => key.as_str(),
        Some(_) => return Err(malformed(&field("key"), "a string")),
    };
    let operator = match expression.get("operator") {
        None | Some(Value::Null) => "",
        Some(Value::String(operator)) => operator.as_str(),
        Some(_) => return Err(malformed(&field("operator"), "a string")),
    };
    let operator = match operator {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::InvalidLabelSelectorOperator {
                operator: other.to_string(),
            });
        }
    };
    let values = match expression.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|value| value.as_str().map(str::to_string))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| malformed(&field("values"), "an array of strings"))?,
        Some(_) => return Err(malformed(&field("values"), "an array of strings")),
    };
    Requirement::new(key, operator, values)
}

fn malformed(field: &str, expected: &'static str) -> SelectorError {
    SelectorError::MalformedLabelSelector {
        field: field.to_string(),
        expected,
    }
}

/// The tokens of the label selector grammar, as apimachinery's lexer cuts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// Where the parser is: `in` and `notin` are operators right after a key and plain words
/// everywhere else, so that `in in (in)` is a valid selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct LabelParser<'a> {
    tokens: Vec<(Token, &'a str)>,
    position: usize,
}

impl<'a> LabelParser<'a> {
    fn new(selector: &'a str) -> LabelParser<'a> {
        LabelParser {
            tokens: lex(selector),
            position: 0,
        }
    }

    fn peek(&self, context: Context) -> (Token, &'a str) {
        let (token, literal) = self
            .tokens
            .get(self.position)
            .copied()
            .unwrap_or((Token::EndOfString, ""));
        match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn next(&mut self, context: Context) -> (Token, &'a str) {
        let item = self.peek(context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.peek(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .parse_requirement()
                        .map_err(|message| SelectorError::ParseRequirement { message })?;
                    requirements.push(requirement);
                    let (token, literal) = self.next(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (token, literal) = self.peek(Context::Values);
                            if token != Token::Identifier && token != Token::DoesNotExist {
                                return Err(syntax_error(format!(
                                    "found '{literal}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(syntax_error(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(syntax_error(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    /// Parses one requirement; the error is the message that follows
    /// `unable to parse requirement: `.
    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(operator) = inferred {
            return Requirement::new(key, operator, Vec::new()).map_err(|e| e.to_string());
        }
        let operator = self.parse_operator()?;
        let mut values = match operator {
            Operator::In | Operator::NotIn => self.parse_value_set()?,
            _ => vec![self.parse_exact_value()?],
        };
        // The grammar's value lists are sets; apimachinery keeps them sorted.
        values.sort_unstable();
        values.dedup();
        Requirement::new(key, operator, values).map_err(|e| e.to_string())
    }

    /// Reads `key` or `!key`. The operator is known already for `!key`, and for `key` when
    /// the requirement ends right after it.
    fn parse_key_and_infer_operator(&mut self) -> Result<(&'a str, Option<Operator>), String> {
        let (mut token, mut literal) = self.next(Context::Values);
        let negated = token == Token::DoesNotExist;
        if negated {
            (token, literal) = self.next(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Err(messages) = names::is_qualified_name(literal) {
            // apimachinery validates the key here without a field path, hence "<nil>".
            return Err(invalid_value_error("<nil>", &go_quote(literal), &messages));
        }
        if negated {
            return Ok((literal, Some(Operator::DoesNotExist)));
        }
        let (following, _) = self.peek(Context::Values);
        if matches!(following, Token::EndOfString | Token::Comma) {
            return Ok((literal, Some(Operator::Exists)));
        }
        Ok((literal, None))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.next(Context::KeyAndOperator);
        match token {
            Token::In => Ok(Operator::In),
            Token::Equals => Ok(Operator::Equals),
            Token::DoubleEquals => Ok(Operator::DoubleEquals),
            Token::GreaterThan => Ok(Operator::GreaterThan),
            Token::LessThan => Ok(Operator::LessThan),
            Token::NotIn => Ok(Operator::NotIn),
            Token::NotEquals => Ok(Operator::NotEquals),
            _ => Err(format!(
                "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
            )),
        }
    }

    /// Reads `(a,b,...)`. Empty entries are empty-string values: `()` is `{""}` and
    /// `(a,,b)` is `{"", a, b}`.
    fn parse_value_set(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.next(Context::Values);
        if token != Token::OpenPar {
            // apimachinery has no comma after the quote in this one message.
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.peek(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifier_list()?;
                let (token, _) = self.next(Context::Values);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.next(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!(
                "found '{literal}', expected: ',', ')' or identifier"
            )),
        }
    }

    /// Reads the entries of a value set up to, not including, the closing parenthesis.
    fn parse_identifier_list(&mut self) -> Result<Vec<String>, String> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (token, literal) = self.next(Context::Values);
            match token {
                Token::Identifier => {
                    values.push(literal.to_string());
                    let (following, following_literal) = self.peek(Context::Values);
                    match following {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => {
                            return Err(format!(
                                "found '{following_literal}', expected: ',' or ')'"
                            ));
                        }
                    }
                }
                Token::Comma => {
                    // A comma with nothing before it, or nothing after it, separates an
                    // empty value.
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (following, _) = self.peek(Context::Values);
                    if following == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if following == Token::Comma {
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// Reads the value after `=`, `==`, `!=`, `>` or `<`; a missing value is the empty
    /// string (`tier=` selects objects whose `tier` label is empty).
    fn parse_exact_value(&mut self) -> Result<String, String> {
        let (following, _) = self.peek(Context::Values);
        if matches!(following, Token::EndOfString | Token::Comma) {
            return Ok(String::new());
        }
        let (token, literal) = self.next(Context::Values);
        if token == Token::Identifier {
            Ok(literal.to_string())
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

fn syntax_error(message: String) -> SelectorError {
    SelectorError::ParseLabelSelector { message }
}

/// Cuts a label selector into tokens. Whitespace separates tokens; `=`, `!`, `(`, `)`, `,`,
/// `>` and `<` are tokens of their own (`==` and `!=` of two characters); any other run of
/// characters is a word, and the words `in` and `notin` are keywords.
fn lex(selector: &str) -> Vec<(Token, &str)> {
    let bytes = selector.as_bytes();
    let is_whitespace = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let is_special = |b: u8| matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<');
    let mut tokens = Vec::new();
    let mut position = 0;
    loop {
        while position < bytes.len() && is_whitespace(bytes[position]) {
            position += 1;
        }
        let Some(&first) = bytes.get(position) else {
            tokens.push((Token::EndOfString, ""));
            return tokens;
        };
        let start = position;
        if is_special(first) {
            let two_character = matches!(
                (first, bytes.get(position + 1)),
                (b'=', Some(b'=')) | (b'!', Some(b'='))
            );
            position += if two_character { 2 } else { 1 };
            let literal = &selector[start..position];
            let token = match literal {
                "==" => Token::DoubleEquals,
                "!=" => Token::NotEquals,
                "=" => Token::Equals,
                "!" => Token::DoesNotExist,
                "(" => Token::OpenPar,
                ")" => Token::ClosedPar,
                "," => Token::Comma,
                ">" => Token::GreaterThan,
                _ => Token::LessThan,
            };
            tokens.push((token, literal));
        } else {
            while position < bytes.len()
                && !is_whitespace(bytes[position])
                && !is_special(bytes[position])
            {
                position += 1;
            }
            // Token boundaries are ASCII bytes, so the slice is on character boundaries.
            let literal = &selector[start..position];
            let token = match literal {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier,
            };
            tokens.push((token, literal));
        }
    }
}

/// How a field selector term compares a field with its value. `==` is the same as `=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value` or `field==value`
    Equals,
    /// `field!=value`
    NotEquals,
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path as written, e.g. `metadata.name` (not trimmed: apimachinery keeps
    /// spaces, so `metadata.name =x` names the unsupported field `metadata.name `).
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The value, unescaped.
    pub value: String,
}

impl FieldRequirement {
    /// Whether the field's value satisfies the term; an absent field has the value `""`.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operator = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(
            f,
            "{}{operator}{}",
            self.field,
            escape_field_value(&self.value)
        )
    }
}

/// A field selector: terms that must all hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches every object.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// Parses the string form used by `?fieldSelector=`. Terms are split on unescaped
    /// commas and sorted (as apimachinery does); empty terms, and terms with neither field
    /// nor value (`=`), are ignored; nothing is trimmed.
    pub fn parse(selector: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = split_field_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::new();
        for term in terms.into_iter().filter(|term| !term.is_empty()) {
            let Some((field, operator, raw_value)) = split_field_term(term) else {
                return Err(SelectorError::ParseFieldSelector {
                    selector: selector.to_string(),
                    term: term.to_string(),
                });
            };
            let value = unescape_field_value(raw_value)?;
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// The terms, in parsed (sorted) order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector matches every object.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The fields the selector names, once each per term, so the server can reject those it
    /// does not support with `field label not supported: <field>`.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    /// The first term on `field`, if any; lets the server turn `metadata.name=x` into a
    /// single-key read.
    pub fn requirement_for(&self, field: &str) -> Option<&FieldRequirement> {
        self.requirements.iter().find(|r| r.field == field)
    }

    /// The value `field` must equal, if some `=` term on it says so (apimachinery's
    /// `RequiresExactMatch`).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Whether every term holds. `get` returns a field's value for the object being
    /// matched; a field it does not know (`None`) has the value `""`, as in apimachinery's
    /// `fields.Set`.
    pub fn matches<F, S>(&self, get: F) -> bool
    where
        F: Fn(&str) -> Option<S>,
        S: AsRef<str>,
    {
        self.requirements.iter().all(|requirement| {
            let actual = get(&requirement.field);
            requirement.matches(actual.as_ref().map(AsRef::as_ref))
        })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(selector: &str) -> Result<FieldSelector, SelectorError> {
        FieldSelector::parse(selector)
    }
}

/// Escapes `\`, `,` and `=` in a field selector value.
pub fn escape_field_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for character in value.chars() {
        if matches!(character, '\\' | ',' | '=') {
            escaped.push('\\');
        }
        escaped.push(character);
    }
    escaped
}

/// Undoes [`escape_field_value`]; a bare `,` or `=`, or a backslash before anything else,
/// is an error.
pub fn unescape_field_value(value: &str) -> Result<String, SelectorError> {
    let mut unescaped = String::with_capacity(value.len());
    let mut characters = value.chars();
    while let Some(character) = characters.next() {
        match character {
            '\\' => match characters.next() {
                Some(escaped @ ('\\' | ',' | '=')) => unescaped.push(escaped),
                Some(other) => {
                    return Err(SelectorError::InvalidEscapeSequence {
                        sequence: format!("\\{other}"),
                    });
                }
                None => {
                    return Err(SelectorError::InvalidEscapeSequence {
                        sequence: "\\".to_string(),
                    });
                }
            },
            ',' | '=' => return Err(SelectorError::UnescapedCharacter { character }),
            other => unescaped.push(other),
        }
    }
    Ok(unescaped)
}

/// Splits a field selector on commas that are not escaped; a backslash escapes whatever
/// follows it here, the value check comes later.
fn split_field_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (index, character) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if character == '\\' {
            escaped = true;
        } else if character == ',' {
            terms.push(&selector[start..index]);
            start = index + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits a term at its first operator; at each position `!=` is tried before `==` before
/// `=`, so `a!=b` is a `!=` term and `a==b` an `==` term.
fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (index, _) in term.char_indices() {
        let rest = &term[index..];
        for (operator, kind) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(operator) {
                return Some((&term[..index], kind, value));
            }
        }
    }
    None
}

/// Renders a field error the way apimachinery's `field.Invalid(...).Error()` does.
fn invalid_value_error(path: &str, quoted_value: &str, messages: &[String]) -> String {
    format!(
        "{path}: Invalid value: {quoted_value}: {}",
        messages.join("; ")
    )
}

/// Joins several errors the way apimachinery's aggregate error prints them: one error as
/// itself, several as `[a, b]` with repeats dropped.
fn aggregate(mut messages: Vec<String>) -> String {
    let mut seen = std::collections::HashSet::new();
    messages.retain(|message| seen.insert(message.clone()));
    if messages.len() == 1 {
        messages.remove(0)
    } else {
        format!("[{}]", messages.join(", "))
    }
}

/// Quotes a string the way Go's `%q` does, so that messages quote values like
/// apimachinery's.
pub fn go_quote(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for character in value.chars() {
        match character {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\u{07}' => quoted.push_str("\\a"),
            '\u{08}' => quoted.push_str("\\b"),
            '\u{0c}' => quoted.push_str("\\f"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            '\u{0b}' => quoted.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                quoted.push_str(&format!("\\x{:02x}", c as u32));
            }
            // Go escapes what Unicode does not call printable; control characters and
            // whitespace other than the space are the part of that Rust can tell.
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) <= 0xffff {
                    quoted.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    quoted.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}
