//! Validation of a custom resource against its structural schema, as apiextensions does it:
//! kube-openapi's schema validator (its checks, their order, its messages and field paths),
//! then `x-kubernetes-list-type` uniqueness, then embedded resources' type and metadata.
//!
//! On updates, validation ratchets like upstream: a value equal to the value it replaces
//! (correlated through object keys and the keys of map lists) is not checked again, so an
//! object stored before a schema got stricter can still be updated elsewhere.

use serde_json::{Map, Value};

use super::field::{ErrorType, FieldError, Path, go_float, go_quote};
use super::structural::{Additional, Schema, seek};
use crate::names;

/// Where kube-openapi's validator is in the object, as a chain of borrowed segments on the
/// stack: walking a valid object allocates nothing for it, and the dotted name is rendered
/// only when an error is reported.
#[derive(Clone, Copy)]
pub enum Name<'a> {
    Root,
    /// A declared property: `a.b`, or `b` under the root.
    Property(&'a Name<'a>, &'a str),
    /// A key under `additionalProperties`: always `<parent>.<key>` (`.key` under the root).
    Additional(&'a Name<'a>, &'a str),
    /// An array item: `a[3]`.
    Item(&'a Name<'a>, usize),
}

impl Name<'_> {
    /// kube-openapi's dotted name (empty for the root).
    fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        use std::fmt::Write as _;
        match self {
            Name::Root => {}
            Name::Property(parent, name) => {
                parent.write(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Name::Additional(parent, key) => {
                parent.write(out);
                out.push('.');
                out.push_str(key);
            }
            Name::Item(parent, index) => {
                parent.write(out);
                let _ = write!(out, "[{index}]");
            }
        }
    }

    /// The field an error names: the dotted name without a leading dot, or `<nil>` for the
    /// root.
    fn field(&self) -> String {
        openapi_field(&self.render())
    }

    fn is_root(&self) -> bool {
        matches!(self, Name::Root)
    }
}

/// The field an error of kube-openapi names: its dotted name without the leading dot, or
/// `<nil>` for the root.
fn openapi_field(name: &str) -> String {
    let name = name.strip_prefix('.').unwrap_or(name);
    if name.is_empty() {
        "<nil>".to_string()
    } else {
        name.to_string()
    }
}

/// An error kube-openapi reports without a field (its composite errors, range checks): the
/// root, with an empty value.
fn root_error(detail: String) -> FieldError {
    FieldError::invalid("<nil>", "", detail)
}

fn json_type(value: &Value) -> (&'static str, &'static str) {
    match value {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("null", ""),
    }
}

/// A number that fits `i64`, as Kubernetes decodes JSON integers; anything else is a float.
fn as_int(value: &Value) -> Option<i64> {
    value.as_i64()
}

fn is_json_integer(f: f64) -> bool {
    f.is_finite() && f == f.trunc() && f.abs() <= 9_007_199_254_740_992.0
}

/// The old value correlated with a new list item: only map lists correlate, by their keys.
pub fn correlate_item<'a>(
    schema: &Schema,
    old: Option<&'a Value>,
    item: &Value,
) -> Option<&'a Value> {
    if !schema.is_list_map() || schema.list_map_keys.is_empty() {
        return None;
    }
    let old_items = old?.as_array()?;
    let item = item.as_object()?;
    old_items.iter().find(|candidate| {
        candidate.as_object().is_some_and(|candidate| {
            schema
                .list_map_keys
                .iter()
                .all(|key| candidate.get(key) == item.get(key))
        })
    })
}

/// The old value correlated with a field of an object: the same key, when both are objects.
pub fn correlate_field<'a>(old: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    old?.as_object()?.get(key)
}

/// kube-openapi's schema validator.
pub struct OpenApi {
    pub errors: Vec<FieldError>,
}

impl OpenApi {
    pub fn new() -> OpenApi {
        OpenApi { errors: Vec::new() }
    }

    /// Validates `value` at `path` (kube-openapi's dotted name). `old` is the correlated old
    /// value on updates; an unchanged value is not validated again.
    pub fn validate(
        &mut self,
        schema: &Schema,
        value: &Value,
        path: &Name<'_>,
        old: Option<&Value>,
    ) {
        if old.is_some_and(|old| old == value) {
            return;
        }
        if value.is_null() {
            self.check_type(schema, value, path);
            self.check_enum(schema, value, path);
            return;
        }
        self.check_type(schema, value, path);
        self.check_junctions(schema, value, path, old);
        if let Value::String(s) = value {
            self.check_string(schema, s, path);
            self.check_format(schema, s, path);
        }
        if value.is_number() {
            self.check_number(schema, value, path);
        }
        if let Value::Array(items) = value {
            self.check_array(schema, items, path, old);
        }
        self.check_enum(schema, value, path);
        if let Value::Object(map) = value {
            self.check_object(schema, map, path, old);
        }
    }

    fn invalid_type(&mut self, path: &Name<'_>, type_name: &str, data: &str) {
        let path = path.render();
        self.errors.push(FieldError::new(
            ErrorType::TypeInvalid,
            openapi_field(&path),
            Some(Value::String(data.to_string())),
            format!(
                "{path} in body must be of type {type_name}: {}",
                go_quote(data)
            ),
        ));
    }

    fn check_type(&mut self, schema: &Schema, value: &Value, path: &Name<'_>) {
        let types = schema.types();
        let format = schema.validation_format().unwrap_or("");
        if types.is_empty() && format.is_empty() {
            return;
        }
        let allows = |type_name: &str| types.iter().any(|t| t == type_name);
        if value.is_null() {
            if !types.is_empty() && !allows("null") && !schema.nullable {
                self.invalid_type(path, &types.join(","), "null");
            }
            return;
        }
        let (data_type, data_format) = json_type(value);
        let is_float_int = data_type == "number"
            && value.as_f64().is_some_and(is_json_integer)
            && allows("integer");
        let is_int_float = data_type == "integer" && allows("number");
        let type_matches = allows(data_type) || is_float_int || is_int_float;
        let numeric = allows("number") || allows("integer");
        // Strings and arrays skip the format comparison; a formatted non-numeric type accepts
        // them whatever its type (kube-openapi's order of checks, quirks included).
        let stringish = value.is_string() || value.is_array();
        if !stringish && !format.is_empty() && !type_matches && data_format != format {
            self.invalid_type(path, format, data_format);
            return;
        }
        if stringish && !format.is_empty() && !numeric {
            return;
        }
        if !type_matches {
            self.invalid_type(path, &types.join(","), data_type);
        }
    }

    /// Validates against a sub-schema at the same place, collecting its errors apart.
    fn sub(
        schema: &Schema,
        value: &Value,
        path: &Name<'_>,
        old: Option<&Value>,
    ) -> Vec<FieldError> {
        let mut sub = OpenApi::new();
        sub.validate(schema, value, path, old);
        sub.errors
    }

    fn check_junctions(
        &mut self,
        schema: &Schema,
        value: &Value,
        path: &Name<'_>,
        old: Option<&Value>,
    ) {
        if !schema.any_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut succeeded = false;
            for alternative in &schema.any_of {
                let errors = Self::sub(alternative, value, path, old);
                if errors.is_empty() {
                    succeeded = true;
                    best = None;
                    break;
                }
                // Upstream keeps the failure that passed the most checks; fewest errors is
                // the closest measure available here.
                if best.as_ref().is_none_or(|b| errors.len() < b.len()) {
                    best = Some(errors);
                }
            }
            if !succeeded {
                self.errors.push(root_error(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(&path.render())
                )));
            }
            self.errors.extend(best.unwrap_or_default());
        }
        if !schema.one_of.is_empty() {
            let mut best: Option<Vec<FieldError>> = None;
            let mut validated = 0;
            for alternative in &schema.one_of {
                let errors = Self::sub(alternative, value, path, old);
                if errors.is_empty() {
                    validated += 1;
                    best = None;
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| errors.len() < b.len()) {
                    best = Some(errors);
                }
            }
            if validated != 1 {
                let found = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                self.errors.push(root_error(format!(
                    "{} must validate one and only one schema (oneOf). {found}",
                    go_quote(&path.render())
                )));
                self.errors.extend(best.unwrap_or_default());
            }
        }
        if !schema.all_of.is_empty() {
            let mut validated = 0;
            for part in &schema.all_of {
                let errors = Self::sub(part, value, path, old);
                if errors.is_empty() {
                    validated += 1;
                }
                self.errors.extend(errors);
            }
            if validated != schema.all_of.len() {
                let none = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                self.errors.push(root_error(format!(
                    "{} must validate all the schemas (allOf){none}",
                    go_quote(&path.render())
                )));
            }
        }
        if let Some(not) = &schema.not
            && Self::sub(not, value, path, old).is_empty()
        {
            self.errors.push(root_error(format!(
                "{} must not validate the schema (not)",
                go_quote(&path.render())
            )));
        }
    }

    fn check_string(&mut self, schema: &Schema, data: &str, path: &Name<'_>) {
        // Code points are counted only when the byte length (at least the count, at most
        // four times it) cannot decide.
        let bytes = data.len() as i64;
        let max_undecided = schema
            .max_length
            .is_some_and(|m| bytes > m && bytes / 4 <= m);
        let min_undecided = schema
            .min_length
            .is_some_and(|m| bytes >= m && bytes / 4 < m);
        let length = if max_undecided || min_undecided {
            data.chars().count() as i64
        } else {
            bytes
        };
        if let Some(max) = schema.max_length
            && length > max
        {
            self.errors.push(FieldError::too_long(path.field(), max));
            return;
        }
        if let Some(min) = schema.min_length
            && length < min
        {
            let path = path.render();
            self.errors.push(FieldError::invalid(
                openapi_field(&path),
                data,
                format!("{path} in body should be at least {min} chars long"),
            ));
            return;
        }
        if let Some(pattern) = &schema.pattern {
            let matches = pattern
                .regex
                .as_ref()
                .is_ok_and(|regex| regex.is_match(data));
            if !matches {
                let shown = match &pattern.regex {
                    Ok(_) => pattern.source.clone(),
                    Err(error) => format!("{}, but pattern is invalid: {error}", pattern.source),
                };
                let path = path.render();
                self.errors.push(FieldError::invalid(
                    openapi_field(&path),
                    data,
                    format!("{path} in body should match '{shown}'"),
                ));
            }
        }
    }

    fn check_format(&mut self, schema: &Schema, data: &str, path: &Name<'_>) {
        let Some(format) = schema.validation_format() else {
            return;
        };
        if !super::format::is_supported(format) || super::format::is_valid(format, data) {
            return;
        }
        let path = path.render();
        self.errors.push(FieldError::new(
            ErrorType::TypeInvalid,
            openapi_field(&path),
            Some(Value::String(data.to_string())),
            format!(
                "{path} in body must be of type {format}: {}",
                go_quote(data)
            ),
        ));
    }

    fn check_number(&mut self, schema: &Schema, value: &Value, path: &Name<'_>) {
        let (type_name, format) = match schema.types() {
            [only] if only == "integer" => (
                "integer",
                schema
                    .validation_format()
                    .filter(|f| matches!(*f, "int32" | "int64")),
            ),
            [only] if only == "number" => (
                "number",
                schema
                    .validation_format()
                    .filter(|f| matches!(*f, "float" | "double")),
            ),
            _ => ("", None),
        };
        let format = format.unwrap_or("");
        let float = value.as_f64().unwrap_or(0.0);
        // The value itself must fit the format (`IsValueValidAgainstRange`).
        if !in_range(float, as_int(value).is_some(), type_name, format) {
            let described = if format.is_empty() {
                format!("{type_name} (default format)")
            } else {
                format!("{type_name} with format {format}")
            };
            self.errors.push(root_error(format!(
                "Checked value must be of type {described} in {}",
                path.render()
            )));
        }
        let int = as_int(value);
        if let Some(factor) = schema.multiple_of {
            // Integers are checked as integers when the factor fits the type, as upstream
            // does (`MultipleOfNativeType`); everything else as floats.
            let (factor_value, shown, positive, multiple) =
                match (int, in_range(factor, false, type_name, format)) {
                    (Some(data), true) => {
                        let factor = factor as i64;
                        let multiple = factor > 0 && data % factor == 0;
                        (
                            Value::from(factor),
                            factor.to_string(),
                            factor > 0,
                            multiple,
                        )
                    }
                    _ => {
                        let quotient = if factor < 1.0 {
                            1.0 / factor * float
                        } else {
                            float / factor
                        };
                        let multiple = factor > 0.0 && is_json_integer(quotient);
                        (
                            Value::from(factor),
                            go_float(factor),
                            factor > 0.0,
                            multiple,
                        )
                    }
                };
            let path = path.render();
            if !positive {
                self.errors.push(FieldError::invalid(
                    openapi_field(&path),
                    factor_value,
                    format!("factor MultipleOf declared for {path} must be positive: {shown}"),
                ));
            } else if !multiple {
                self.errors.push(FieldError::invalid(
                    openapi_field(&path),
                    value.clone(),
                    format!("{path} in body should be a multiple of {shown}"),
                ));
            }
        }
        let bounds = [
            (schema.minimum, schema.exclusive_minimum, false),
            (schema.maximum, schema.exclusive_maximum, true),
        ];
        for (bound, exclusive, upper) in bounds {
            let Some(bound) = bound else {
                continue;
            };
            // As for multipleOf: integers against the bound cut to an integer, if it fits.
            let as_int = int.filter(|_| in_range(bound, false, type_name, format));
            let ordering = match as_int {
                Some(data) => data.cmp(&(bound as i64)),
                None => float
                    .partial_cmp(&bound)
                    .unwrap_or(std::cmp::Ordering::Equal),
            };
            let beyond = if upper {
                ordering == std::cmp::Ordering::Greater
            } else {
                ordering == std::cmp::Ordering::Less
            };
            let fails = beyond || (exclusive && ordering == std::cmp::Ordering::Equal);
            if fails {
                let relation = match (upper, exclusive) {
                    (false, true) => "greater than",
                    (false, false) => "greater than or equal to",
                    (true, true) => "less than",
                    (true, false) => "less than or equal to",
                };
                // Rendered only for an error: most values pass.
                let shown = match as_int {
                    Some(_) => (bound as i64).to_string(),
                    None => go_float(bound),
                };
                let path = path.render();
                self.errors.push(FieldError::invalid(
                    openapi_field(&path),
                    value.clone(),
                    format!("{path} in body should be {relation} {shown}"),
                ));
            }
        }
    }

    fn check_array(
        &mut self,
        schema: &Schema,
        items: &[Value],
        path: &Name<'_>,
        old: Option<&Value>,
    ) {
        if let Some(item_schema) = schema.items.as_deref() {
            for (index, item) in items.iter().enumerate() {
                let item_old = correlate_item(schema, old, item);
                self.validate(item_schema, item, &Name::Item(path, index), item_old);
            }
        }
        let size = items.len() as i64;
        if let Some(min) = schema.min_items
            && size < min
        {
            let path = path.render();
            self.errors.push(FieldError::invalid(
                openapi_field(&path),
                size,
                format!("{path} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = schema.max_items
            && size > max
        {
            self.errors
                .push(FieldError::too_many(path.field(), size, max));
        }
        if schema.unique_items {
            let duplicated = items
                .iter()
                .enumerate()
                .any(|(i, item)| items[..i].contains(item));
            if duplicated {
                let path = path.render();
                self.errors.push(FieldError::invalid(
                    openapi_field(&path),
                    "",
                    format!("{path} in body shouldn't contain duplicates"),
                ));
            }
        }
    }

    fn check_enum(&mut self, schema: &Schema, value: &Value, path: &Name<'_>) {
        let Some(allowed) = &schema.enumeration else {
            return;
        };
        if allowed.is_empty() || allowed.iter().any(|a| enum_matches(value, a)) {
            return;
        }
        let supported: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => s.clone(),
                other => super::field::go_json(other),
            })
            .collect();
        self.errors.push(FieldError::not_supported(
            path.field(),
            value.clone(),
            &supported,
        ));
    }

    fn check_object(
        &mut self,
        schema: &Schema,
        map: &Map<String, Value>,
        path: &Name<'_>,
        old: Option<&Value>,
    ) {
        let count = map.len() as i64;
        if let Some(min) = schema.min_properties
            && count < min
        {
            let path = path.render();
            self.errors.push(FieldError::invalid(
                openapi_field(&path),
                count,
                format!("{path} in body should have at least {min} properties"),
            ));
        }
        if let Some(max) = schema.max_properties
            && count > max
        {
            self.errors
                .push(FieldError::too_many(path.field(), count, max));
        }
        match &schema.additional_properties {
            Some(Additional::Allows(false)) => {
                for key in map.keys() {
                    if !schema.properties.contains_key(key) {
                        let path = path.render();
                        self.errors.push(FieldError::invalid(
                            openapi_field(&path),
                            key.as_str(),
                            format!("{path}.{key} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Some(Additional::Schema(additional)) => {
                for (key, child) in map {
                    if !schema.properties.contains_key(key) {
                        self.validate(
                            additional,
                            child,
                            &Name::Additional(path, key),
                            correlate_field(old, key),
                        );
                    }
                }
            }
            _ => {}
        }
        let mut members = map.iter().peekable();
        for (name, property) in &schema.properties {
            if let Some(child) = seek(&mut members, name) {
                // The root's type fields are always checked (upstream does not ratchet them).
                let type_meta = path.is_root() && matches!(name.as_str(), "apiVersion" | "kind");
                let child_old = if type_meta {
                    None
                } else {
                    correlate_field(old, name)
                };
                self.validate(property, child, &Name::Property(path, name), child_old);
            }
        }
        for name in &schema.required {
            if !map.contains_key(name) {
                self.errors
                    .push(FieldError::required(Name::Property(path, name).field(), ""));
            }
        }
    }
}

/// Whether a number (the value, or a bound when `is_int` is false and it came from the
/// schema) fits the type and format, as kube-openapi's `IsValueValidAgainstRange` decides.
fn in_range(value: f64, is_int: bool, type_name: &str, format: &str) -> bool {
    match type_name {
        "integer" => {
            if !is_int && !is_json_integer(value) {
                return false;
            }
            match format {
                "int32" => value >= f64::from(i32::MIN) && value <= f64::from(i32::MAX),
                _ => true,
            }
        }
        _ => match format {
            "float" => value.abs() <= f64::from(f32::MAX),
            _ => true,
        },
    }
}

/// Enum membership as Go's reflection decides it: equal values, numbers converted to the
/// enum value's type first.
fn enum_matches(value: &Value, allowed: &Value) -> bool {
    match (value, allowed) {
        (Value::Number(v), Value::Number(a)) => match (v.as_i64(), a.as_i64()) {
            (Some(v), Some(a)) => v == a,
            (None, Some(a)) => v.as_f64().is_some_and(|v| v as i64 == a),
            (Some(v), None) => a.as_f64() == Some(v as f64),
            (None, None) => v.as_f64() == a.as_f64(),
        },
        (Value::Null, _) => false,
        (v, a) => v == a,
    }
}

/// `x-kubernetes-list-type` set and map uniqueness, with apimachinery field paths.
pub fn list_errors(schema: &Schema, object: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !schema.lists_within {
        return errors;
    }
    if let Value::Object(map) = object {
        list_map_fields(schema, map, &Path::root(), &mut errors);
    }
    errors
}

fn list_map_fields(
    schema: &Schema,
    map: &Map<String, Value>,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    if let Some(additional) = schema.additional_schema().filter(|s| s.lists_within) {
        for (key, child) in map {
            list_value(additional, child, &path.key(key), errors);
        }
    }
    // Only the properties with lists below them are looked up (in key order, as the map's
    // own order would visit them), not every field of the object.
    for (key, property) in &schema.properties {
        if property.lists_within
            && let Some(child) = map.get(key)
        {
            list_value(property, child, &path.child(key), errors);
        }
    }
}

fn list_value(schema: &Schema, value: &Value, path: &Path, errors: &mut Vec<FieldError>) {
    if !schema.lists_within {
        return;
    }
    match value {
        Value::Array(items) => {
            match schema.list_type.as_deref() {
                Some("set") => {
                    for index in second_occurrences(items) {
                        errors.push(FieldError::new(
                            ErrorType::Duplicate,
                            path.index(index).render(),
                            Some(items[index].clone()),
                            "",
                        ));
                    }
                }
                Some("map") => list_map_errors(schema, items, path, errors),
                _ => {}
            }
            if let Some(item_schema) = schema.items.as_deref().filter(|s| s.lists_within) {
                for (index, item) in items.iter().enumerate() {
                    list_value(item_schema, item, &path.index(index), errors);
                }
            }
        }
        Value::Object(map) => list_map_fields(schema, map, path, errors),
        _ => {}
    }
}

/// The indices of values seen for the second time (a third occurrence is not reported).
fn second_occurrences(values: &[Value]) -> Vec<usize> {
    second_occurrences_by(values, set_equal)
}

/// [`second_occurrences`] with the equality given.
fn second_occurrences_by<T>(values: &[T], equal: impl Fn(&T, &T) -> bool) -> Vec<usize> {
    let mut seen: Vec<(&T, usize)> = Vec::new();
    let mut repeated = Vec::new();
    for (index, value) in values.iter().enumerate() {
        match seen.iter_mut().find(|(v, _)| equal(v, value)) {
            Some((_, times)) => {
                if *times == 1 {
                    repeated.push(index);
                }
                *times += 1;
            }
            None => seen.push((value, 1)),
        }
    }
    repeated
}

/// Set equality as upstream computes it: scalars by value and Go type (an integer never
/// equals a float), compound values by their JSON.
fn set_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.is_i64() == y.is_i64() && x.as_f64() == y.as_f64() && x.as_i64() == y.as_i64()
        }
        _ => a == b,
    }
}

fn list_map_errors(schema: &Schema, items: &[Value], path: &Path, errors: &mut Vec<FieldError>) {
    for (index, item) in items.iter().enumerate() {
        if !item.is_object() && !item.is_null() {
            errors.push(FieldError::invalid(
                path.index(index).render(),
                item.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    // A missing key (or a null item) is a value of its own, equal only to another missing one.
    // Keys are compared borrowed; the key object is built only for an error.
    let keys: Vec<Vec<Option<&Value>>> = items
        .iter()
        .map(|item| {
            schema
                .list_map_keys
                .iter()
                .map(|name| item.as_object().and_then(|item| item.get(name)))
                .collect()
        })
        .collect();
    for index in second_occurrences_by(&keys, |a, b| a == b) {
        let key: Map<String, Value> = schema
            .list_map_keys
            .iter()
            .zip(&keys[index])
            .filter_map(|(name, value)| Some((name.clone(), (*value)?.clone())))
            .collect();
        errors.push(FieldError::new(
            ErrorType::Duplicate,
            path.index(index).render(),
            Some(Value::Object(key)),
            "",
        ));
    }
}

/// The type and metadata checks of embedded resources (`x-kubernetes-embedded-resource`).
pub fn embedded_errors(schema: &Schema, object: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !schema.embedded_within {
        return errors;
    }
    embedded_walk(Some(schema), object, &Path::root(), &mut errors);
    errors
}

fn embedded_walk(
    schema: Option<&Schema>,
    value: &Value,
    path: &Path,
    errors: &mut Vec<FieldError>,
) {
    let Some(schema) = schema.filter(|schema| schema.embedded_within) else {
        return;
    };
    match value {
        Value::Object(map) => {
            if schema.embedded_resource {
                check_embedded_resource(map, path, errors);
            }
            for (key, child) in map {
                if let Some(property) = schema.properties.get(key) {
                    embedded_walk(Some(property), child, &path.child(key), errors);
                } else if let Some(additional) = schema.additional_schema() {
                    embedded_walk(Some(additional), child, &path.key(key), errors);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                embedded_walk(schema.items.as_deref(), item, &path.index(index), errors);
            }
        }
        _ => {}
    }
}

fn check_embedded_resource(map: &Map<String, Value>, path: &Path, errors: &mut Vec<FieldError>) {
    for field in ["apiVersion", "kind"] {
        if !map.contains_key(field) {
            errors.push(FieldError::required(path.child(field).render(), ""));
        }
    }
    if let Some(api_version) = map.get("apiVersion") {
        let field = path.child("apiVersion").render();
        match api_version.as_str() {
            None => errors.push(FieldError::invalid(
                field,
                api_version.clone(),
                "must be a string",
            )),
            Some("") => errors.push(FieldError::invalid(field, "", "must not be empty")),
            Some(s) if s.matches('/').count() > 1 => errors.push(FieldError::invalid(
                field,
                s,
                format!("unexpected GroupVersion string: {s}"),
            )),
            Some(_) => {}
        }
    }
    if let Some(kind) = map.get("kind") {
        let field = path.child("kind").render();
        match kind.as_str() {
            None => errors.push(FieldError::invalid(field, kind.clone(), "must be a string")),
            Some("") => errors.push(FieldError::invalid(field, "", "must not be empty")),
            Some(s) => {
                if let Err(messages) = names::is_dns1035_label(&s.to_lowercase()) {
                    errors.push(FieldError::invalid(
                        field,
                        s,
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            messages.join(",")
                        ),
                    ));
                }
            }
        }
    }
    if let Some(metadata) = map.get("metadata") {
        check_embedded_metadata(metadata, &path.child("metadata"), errors);
    }
}

/// The parts of ObjectMeta validation that apply to an embedded resource's metadata: names
/// as path segments, the namespace, label and annotation syntax.
fn check_embedded_metadata(metadata: &Value, path: &Path, errors: &mut Vec<FieldError>) {
    let Some(map) = metadata.as_object() else {
        if !metadata.is_null() {
            errors.push(FieldError::invalid(
                path.render(),
                metadata.clone(),
                "must be an object",
            ));
        }
        return;
    };
    let string_field = |name: &str| map.get(name).and_then(Value::as_str).unwrap_or("");
    let generate_name = string_field("generateName");
    if !generate_name.is_empty()
        && let Err(messages) = names::validate_path_segment_name(generate_name, true)
    {
        for message in messages {
            errors.push(FieldError::invalid(
                path.child("generateName").render(),
                generate_name,
                message,
            ));
        }
    }
    let name = string_field("name");
    if !name.is_empty()
        && let Err(messages) = names::validate_path_segment_name(name, false)
    {
        for message in messages {
            errors.push(FieldError::invalid(
                path.child("name").render(),
                name,
                message,
            ));
        }
    }
    let namespace = string_field("namespace");
    if !namespace.is_empty()
        && let Err(messages) = names::is_dns1123_label(namespace)
    {
        for message in messages {
            errors.push(FieldError::invalid(
                path.child("namespace").render(),
                namespace,
                message,
            ));
        }
    }
    if let Some(labels) = map.get("labels").and_then(Value::as_object) {
        for (key, value) in labels {
            if let Err(messages) = names::is_qualified_name(key) {
                for message in messages {
                    errors.push(FieldError::invalid(
                        path.child("labels").render(),
                        key.as_str(),
                        message,
                    ));
                }
            }
            if let Some(value) = value.as_str()
                && let Err(messages) = names::is_valid_label_value(value)
            {
                for message in messages {
                    errors.push(FieldError::invalid(
                        path.child("labels").render(),
                        value,
                        message,
                    ));
                }
            }
        }
    }
    if let Some(annotations) = map.get("annotations").and_then(Value::as_object) {
        for key in annotations.keys() {
            if let Err(messages) = names::is_qualified_name(&key.to_lowercase()) {
                for message in messages {
                    errors.push(FieldError::invalid(
                        path.child("annotations").render(),
                        key.as_str(),
                        message,
                    ));
                }
            }
        }
    }
}
