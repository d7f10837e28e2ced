//! clusterctl's variable substitution in templates, with the semantics of the library it uses
//! (drone/envsubst, through `cmd/clusterctl/client/yamlprocessor/simple_processor.go`):
//!
//! - `${NAME}`: the value of NAME;
//! - `${NAME:=default}` and `${NAME:-default}`: the value, or `default` when NAME is unset or
//!   empty;
//! - `${NAME=default}` and `${NAME-default}`: the value, or `default` when NAME is unset.
//!
//! A default is taken literally, quotes included (`${SERVICE_DOMAIN:="cluster.local"}` gives
//! `"cluster.local"`). Text that is not a variable reference (a `$` alone, `${` with no valid
//! name) is left as it is. clusterctl refuses to render while a variable without a default
//! has no value, and so does [`substitute`].

/// How a reference falls back to its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// `:=` and `:-`: when unset or empty.
    UnsetOrEmpty,
    /// `=` and `-`: when unset.
    Unset,
}

/// One `${...}` in a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    pub name: String,
    pub default: Option<(Fallback, String)>,
    /// Byte range of the whole `${...}` in the template.
    range: std::ops::Range<usize>,
}

/// Every variable reference of `template`, in order of appearance.
pub fn references(template: &str) -> Vec<Reference> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = template[from..].find("${") {
        let start = from + offset;
        match parse_reference(template, start) {
            Some(reference) => {
                from = reference.range.end;
                found.push(reference);
            }
            None => from = start + 2,
        }
    }
    found
}

/// Parses the reference starting at `start` (which holds `${`).
fn parse_reference(template: &str, start: usize) -> Option<Reference> {
    let body_start = start + 2;
    let close = template[body_start..].find('}')? + body_start;
    let body = &template[body_start..close];
    let name_end = body
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map(|(index, _)| index)
        .unwrap_or(body.len());
    let name = &body[..name_end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = &body[name_end..];
    let default = if rest.is_empty() {
        None
    } else if let Some(value) = rest.strip_prefix(":=").or_else(|| rest.strip_prefix(":-")) {
        Some((Fallback::UnsetOrEmpty, value.to_string()))
    } else if let Some(value) = rest.strip_prefix('=').or_else(|| rest.strip_prefix('-')) {
        Some((Fallback::Unset, value.to_string()))
    } else {
        return None;
    };
    Some(Reference {
        name: name.to_string(),
        default,
        range: start..close + 1,
    })
}

/// The variables of a template: those it needs a value for, and those with a default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Variables {
    /// Referenced at least once without a default, sorted.
    pub required: Vec<String>,
    /// Always referenced with a default: name and the first default, sorted by name.
    pub optional: Vec<(String, String)>,
}

/// The variables of `template` (what `clusterctl generate cluster --list-variables` lists).
pub fn variables(template: &str) -> Variables {
    let mut required = std::collections::BTreeSet::new();
    let mut optional = std::collections::BTreeMap::new();
    for reference in references(template) {
        match reference.default {
            None => {
                required.insert(reference.name);
            }
            Some((_, default)) => {
                optional.entry(reference.name).or_insert(default);
            }
        }
    }
    optional.retain(|name, _| !required.contains(name));
    Variables {
        required: required.into_iter().collect(),
        optional: optional.into_iter().collect(),
    }
}

/// `template` with every reference replaced, looking values up with `value`; the names of the
/// variables that have neither a value nor a default when any has none (sorted, once each).
pub fn substitute(
    template: &str,
    value: impl Fn(&str) -> Option<String>,
) -> Result<String, Vec<String>> {
    let mut output = String::with_capacity(template.len());
    let mut missing = std::collections::BTreeSet::new();
    let mut copied = 0;
    for reference in references(template) {
        output.push_str(&template[copied..reference.range.start]);
        copied = reference.range.end;
        let found = value(&reference.name);
        let replacement = match (&reference.default, found) {
            (Some((Fallback::UnsetOrEmpty, default)), Some(found)) if found.is_empty() => {
                default.clone()
            }
            (_, Some(found)) => found,
            (Some((_, default)), None) => default.clone(),
            (None, None) => {
                missing.insert(reference.name.clone());
                String::new()
            }
        };
        output.push_str(&replacement);
    }
    output.push_str(&template[copied..]);
    if missing.is_empty() {
        Ok(output)
    } else {
        Err(missing.into_iter().collect())
    }
}

#[cfg(test)]
mod tests;
