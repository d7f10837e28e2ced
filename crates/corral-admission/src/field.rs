//! Field errors as apimachinery's `field.Error` words them: a type (the cause's reason), a
//! field path, the bad value and a detail. The value is printed the way Go's `%v`, `%q` and
//! `json.Marshal` print it, because clients match on these messages.

use serde_json::Value;

/// The kinds of field error a schema produces; the reason of the cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    TypeInvalid,
    NotSupported,
    Duplicate,
    Forbidden,
    TooLong,
    TooMany,
    InternalError,
}

impl ErrorType {
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::InternalError => "InternalError",
        }
    }

    fn text(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::InternalError => "Internal error",
        }
    }

    /// Errors after which CEL rules are not evaluated (upstream's "blocking" errors).
    pub fn blocks_rules(self) -> bool {
        matches!(
            self,
            ErrorType::NotSupported
                | ErrorType::Required
                | ErrorType::TooLong
                | ErrorType::TooMany
                | ErrorType::TypeInvalid
        )
    }
}

/// A list of field errors, as `field.ErrorList`.
pub type ErrorList = Vec<FieldError>;

/// One field error. `field` is already rendered (`spec.items[2].name`, or `<nil>` for an
/// error about no particular field, as apimachinery prints a nil path).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub type_: ErrorType,
    pub field: String,
    /// `None`: the value is omitted from the message.
    pub value: Option<Value>,
    pub detail: String,
}

impl FieldError {
    pub fn new(
        type_: ErrorType,
        field: impl Into<String>,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError {
            type_,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError::new(ErrorType::Required, field, None, detail)
    }

    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> FieldError {
        FieldError::new(ErrorType::Invalid, field, Some(value.into()), detail)
    }

    /// `field.Forbidden`: the value is never shown.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError::new(ErrorType::Forbidden, field, None, detail)
    }

    /// `field.Duplicate`: the value repeated.
    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> FieldError {
        FieldError::new(ErrorType::Duplicate, field, Some(value.into()), "")
    }

    /// `field.InternalError`: something the validation could not do, such as parse a stored
    /// value; the value is never shown.
    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> FieldError {
        FieldError::new(ErrorType::InternalError, field, None, detail)
    }

    /// `field.TooLong`: the value is never shown.
    pub fn too_long(field: impl Into<String>, max: i64) -> FieldError {
        let unit = if max == 1 { "byte" } else { "bytes" };
        FieldError::new(
            ErrorType::TooLong,
            field,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// `field.TooMany`.
    pub fn too_many(field: impl Into<String>, actual: i64, max: i64) -> FieldError {
        let unit = if max == 1 { "item" } else { "items" };
        FieldError::new(
            ErrorType::TooMany,
            field,
            Some(Value::from(actual)),
            format!("must have at most {max} {unit}"),
        )
    }

    /// `field.NotSupported`: the supported values, each quoted.
    pub fn not_supported(
        field: impl Into<String>,
        value: Value,
        supported: &[String],
    ) -> FieldError {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError::new(ErrorType::NotSupported, field, Some(value), detail)
    }

    /// The message without the field, as in a cause (`ErrorBody` upstream).
    pub fn body(&self) -> String {
        let mut body = match (self.type_, &self.value) {
            (ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong, _) | (_, None) => {
                self.type_.text().to_string()
            }
            (_, Some(value)) => format!("{}: {}", self.type_.text(), go_value(value)),
        };
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }

    /// `<field>: <body>`, as in aggregated messages and warnings.
    pub fn message(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }
}

/// A field path built the way apimachinery's `field.Path` renders: `a.b`, `a[3]`, `a[key]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    pub fn root() -> Path {
        Path(String::new())
    }

    /// `field.NewPath(first, rest...)`.
    pub fn new(segments: &[&str]) -> Path {
        segments
            .iter()
            .fold(Path::root(), |path, segment| path.child(segment))
    }

    pub fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    pub fn index(&self, index: usize) -> Path {
        Path(format!("{}[{index}]", self.0))
    }

    pub fn key(&self, key: &str) -> Path {
        Path(format!("{}[{key}]", self.0))
    }

    /// The rendered path; the root (a nil path upstream) prints as `<nil>`.
    pub fn render(&self) -> String {
        if self.0.is_empty() {
            "<nil>".to_string()
        } else {
            self.0.clone()
        }
    }
}

/// A value as apimachinery prints a bad value: Go `%v` for numbers and booleans, `%q` for
/// strings, JSON (keys sorted) for everything else.
pub fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n),
        Value::Bool(b) => b.to_string(),
        other => go_json(other),
    }
}

/// A JSON number as Go prints an `int64` or a `float64` with `%v`.
pub fn go_number(number: &serde_json::Number) -> String {
    match number.as_i64() {
        Some(i) => i.to_string(),
        None => go_float(number.as_f64().unwrap_or(0.0)),
    }
}

/// Go's `%v` for a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest
/// representation, in exponent form when the exponent is below -4 or at least 6, so that a
/// million prints as `1e+06`.
pub fn go_float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        format!("{value}")
    }
}

/// Go's `strconv.Quote`: double quotes, backslash escapes for quotes, backslashes and
/// control characters; printable characters as they are.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => {
                let code = c as u32;
                if code <= 0xffff {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Compact JSON with object keys sorted, as Go's `json.Marshal` writes a map.
pub fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_json(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

impl From<Path> for String {
    fn from(path: Path) -> String {
        path.render()
    }
}

impl From<&Path> for String {
    fn from(path: &Path) -> String {
        path.render()
    }
}
