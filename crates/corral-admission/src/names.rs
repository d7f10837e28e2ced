//! Syntax checks for Kubernetes names, label keys and label values.
//!
//! Every check answers like its counterpart in `k8s.io/apimachinery/pkg/util/validation`
//! (Kubernetes 1.32): `Ok(())` for a valid value, otherwise the list of messages apimachinery
//! would report, word for word, so that the server's `422 Invalid` answers read the same as a
//! real kube-apiserver's. Callers wrap each message into a field error themselves
//! (`metadata.name: Invalid value: "Foo": <message>`).
//!
//! Lengths are counted in bytes, as Go's `len(string)` does; every valid value is ASCII, so the
//! difference only shows in which message an invalid non-ASCII value gets.
//!
//! The module also owns the `generateName` rules: how long the base may be before the server
//! appends its random suffix ([`generated_name_base`]) and how a `generateName` prefix is
//! validated ([`name_is_dns_subdomain`] with `prefix: true`). Drawing the random suffix is the
//! caller's job; this module does no I/O and holds no randomness.

#[cfg(test)]
mod tests;

/// The longest DNS-1123 label (namespace names, many resource names).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// The longest DNS-1123 subdomain (most resource names).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// The longest DNS-1035 label (service names).
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// The longest name part of a qualified name (a label key without its prefix).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// The longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// How many random characters the server appends to a `generateName` base.
pub const GENERATED_NAME_SUFFIX_LENGTH: usize = 5;
/// The longest `generateName` base the server keeps, so that base plus suffix fits a
/// DNS-1123 label (63 - 5), as kube-apiserver's `names.SimpleNameGenerator` does.
pub const MAX_GENERATED_NAME_BASE_LENGTH: usize =
    DNS1123_LABEL_MAX_LENGTH - GENERATED_NAME_SUFFIX_LENGTH;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Checks a DNS-1123 label: at most 63 characters, lowercase alphanumerics and `-`, starting
/// and ending with an alphanumeric. Namespaces and many other names must be one.
pub fn is_dns1123_label(value: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        // A valid subdomain that is not a valid label can only be at fault for its dots,
        // and apimachinery says so instead of printing the regex.
        if matches_dns1123_subdomain(value) {
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    into_result(errors)
}

/// Checks a DNS-1123 subdomain: at most 253 characters, dot-separated DNS-1123 labels (no
/// per-label length limit). Most resource names must be one.
pub fn is_dns1123_subdomain(value: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    into_result(errors)
}

/// Checks a DNS-1035 label: like a DNS-1123 label but starting with a letter. Service names
/// must be one.
pub fn is_dns1035_label(value: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errors.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    let starts_with_letter = value.bytes().next().is_some_and(|b| b.is_ascii_lowercase());
    if !(starts_with_letter && matches_dns1123_label(value)) {
        errors.push(regex_error(
            DNS1035_LABEL_ERR_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    into_result(errors)
}

/// Checks a qualified name, the syntax of label keys, annotation keys and finalizers: an
/// optional DNS-1123 subdomain prefix and `/`, then a name of at most 63 characters made of
/// alphanumerics, `-`, `_` and `.` that starts and ends with an alphanumeric.
pub fn is_qualified_name(value: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else if let Err(messages) = is_dns1123_subdomain(prefix) {
                errors.extend(messages.into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            return Err(vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )]);
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errors.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name_part(name) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    into_result(errors)
}

/// Checks a label value: empty, or at most 63 characters of the qualified-name alphabet
/// starting and ending with an alphanumeric.
pub fn is_valid_label_value(value: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errors.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !(value.is_empty() || matches_qualified_name_part(value)) {
        errors.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    into_result(errors)
}

/// Checks that a name can be used as one segment of a URL path or a storage key: it must not
/// be `.` or `..` and must not contain `/` or `%`. Like apimachinery, it accepts the empty
/// string and imposes no length limit; those are the name validators' business.
pub fn is_valid_path_segment_name(name: &str) -> Result<(), Vec<String>> {
    if name == "." || name == ".." {
        return Err(vec![format!("may not be '{name}'")]);
    }
    is_valid_path_segment_prefix(name)
}

/// Checks that a name can start a path segment once something is appended to it: only the
/// forbidden characters count, since `.` followed by a suffix is fine.
pub fn is_valid_path_segment_prefix(name: &str) -> Result<(), Vec<String>> {
    let errors: Vec<String> = ["/", "%"]
        .into_iter()
        .filter(|forbidden| name.contains(forbidden))
        .map(|forbidden| format!("may not contain '{forbidden}'"))
        .collect();
    into_result(errors)
}

/// The path-segment rule as a name validator: `prefix` says the value is a `generateName`
/// that will get a suffix.
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Result<(), Vec<String>> {
    if prefix {
        is_valid_path_segment_prefix(name)
    } else {
        is_valid_path_segment_name(name)
    }
}

/// The name rule of most resources: a DNS-1123 subdomain. With `prefix: true` the value is a
/// `generateName`, which may end in `-` because the random suffix follows it.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Result<(), Vec<String>> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// The name rule of namespaces and other label-named resources: a DNS-1123 label. With
/// `prefix: true` the value is a `generateName`, which may end in `-`.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Result<(), Vec<String>> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// The part of a `generateName` that the server keeps before appending the random suffix:
/// the first 58 bytes, so that base and suffix fit in 63 characters. Kubernetes cuts at a
/// byte offset; this cuts at the last character boundary at or before it, because a Rust
/// string cannot hold half a character (such a name fails validation either way).
pub fn generated_name_base(generate_name: &str) -> &str {
    if generate_name.len() <= MAX_GENERATED_NAME_BASE_LENGTH {
        return generate_name;
    }
    let mut end = MAX_GENERATED_NAME_BASE_LENGTH;
    while !generate_name.is_char_boundary(end) {
        end -= 1;
    }
    &generate_name[..end]
}

/// apimachinery's "too long" message.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// apimachinery's "does not match the pattern" message, examples included.
pub fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{regex}')");
    }
    // The doubled space before "or" is apimachinery's and is kept so messages compare equal.
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{regex}')",
        examples.join(" or ")
    )
}

/// Lets a `generateName` end in `-` by validating it as if its end were alphanumeric. This
/// mirrors apimachinery exactly, which drops the last two bytes and appends `a` (so `ab-`
/// is checked as `aa`); only the validity verdict matters here.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        // Go would cut a multi-byte character in half and fail the check on the broken byte;
        // keeping the whole character fails it just the same.
        let mut end = name.len() - 2;
        while !name.is_char_boundary(end) {
            end += 1;
        }
        format!("{}a", &name[..end])
    } else {
        name.to_string()
    }
}

fn into_result(errors: Vec<String>) -> Result<(), Vec<String>> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, the whole string.
fn matches_dns1123_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    let is_alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            is_alphanumeric(first)
                && is_alphanumeric(last)
                && bytes.iter().all(|b| is_alphanumeric(b) || *b == b'-')
        }
        _ => false,
    }
}

/// A DNS-1123 label followed by any number of `.label`, the whole string.
fn matches_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(matches_dns1123_label)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the whole string.
fn matches_qualified_name_part(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}
