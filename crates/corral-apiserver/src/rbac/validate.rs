//! Defaults and validation of the RBAC kinds, as kube-apiserver's `rbac/v1` defaults and
//! `pkg/apis/rbac/validation`.

use serde_json::{Value, json};

use super::{GROUP, Kind};
use crate::error::Cause;
use crate::schema::field::{FieldError, Path, go_quote, to_cause};

/// `roleRef.apiGroup` and a User's or Group's `apiGroup` default to the RBAC group.
pub fn set_defaults(kind: Kind, object: &mut Value) {
    if !matches!(kind, Kind::RoleBinding | Kind::ClusterRoleBinding) {
        return;
    }
    if let Some(role_ref) = object.get_mut("roleRef").and_then(Value::as_object_mut) {
        let empty = role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if empty {
            role_ref.insert("apiGroup".into(), json!(GROUP));
        }
    }
    if let Some(subjects) = object.get_mut("subjects").and_then(Value::as_array_mut) {
        for subject in subjects.iter_mut().filter_map(Value::as_object_mut) {
            let empty = subject
                .get("apiGroup")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            let kind = subject.get("kind").and_then(Value::as_str);
            if empty && matches!(kind, Some("User" | "Group")) {
                subject.insert("apiGroup".into(), json!(GROUP));
            }
        }
    }
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The field errors of an RBAC object being written (`old` for updates).
pub fn validate(kind: Kind, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut errors = Vec::new();
    match kind {
        Kind::Role | Kind::ClusterRole => {
            let rules_path = Path::root().child("rules");
            let rules = object.get("rules").and_then(Value::as_array);
            for (index, rule) in rules.into_iter().flatten().enumerate() {
                validate_rule(rule, &rules_path.index(index), &mut errors);
            }
            if kind == Kind::ClusterRole
                && let Some(aggregation) = object.get("aggregationRule").filter(|a| !a.is_null())
            {
                let selectors = aggregation
                    .get("clusterRoleSelectors")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                if selectors == 0 {
                    errors.push(FieldError::required(
                        "aggregationRule.clusterRoleSelectors",
                        "at least one clusterRoleSelector required if aggregationRule is non-nil",
                    ));
                }
            }
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => {
            validate_binding(kind, object, &mut errors);
        }
    }
    let mut causes: Vec<Cause> = errors.iter().map(to_cause).collect();
    // Values Go prints with `%#v`, which the generic field errors do not know.
    for (index, rule) in object
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let urls = strings(rule.get("nonResourceURLs"));
        if urls.is_empty() {
            continue;
        }
        let quoted: Vec<String> = urls.iter().map(|u| go_quote(u)).collect();
        let value = format!("[]string{{{}}}", quoted.join(", "));
        let mut invalid = |detail: &str| {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {value}: {detail}"),
                field: format!("rules[{index}].nonResourceURLs"),
            })
        };
        if kind == Kind::Role {
            invalid("namespaced rules cannot apply to non-resource URLs");
        }
        let with_resources = ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|field| !strings(rule.get(*field)).is_empty());
        if with_resources {
            invalid("rules cannot apply to both regular resources and non-resource URLs");
        }
    }
    if let Some(old) = old
        && matches!(kind, Kind::RoleBinding | Kind::ClusterRoleBinding)
        && old.get("roleRef") != object.get("roleRef")
    {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: cannot change roleRef",
                role_ref_go(object.get("roleRef"))
            ),
            field: "roleRef".into(),
        });
    }
    causes
}

/// Go's `%v` of a `RoleRef`, as the message of an immutable roleRef prints it.
fn role_ref_go(role_ref: Option<&Value>) -> String {
    let field = |name: &str| {
        role_ref
            .and_then(|r| r.get(name))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        go_quote(&field("apiGroup")),
        go_quote(&field("kind")),
        go_quote(&field("name"))
    )
}

fn validate_rule(rule: &Value, path: &Path, errors: &mut Vec<FieldError>) {
    if strings(rule.get("verbs")).is_empty() {
        errors.push(FieldError::required(
            path.child("verbs").render(),
            "verbs must contain at least one value",
        ));
    }
    if !strings(rule.get("nonResourceURLs")).is_empty() {
        // Checked by the caller, which prints the URLs as Go does.
        return;
    }
    if strings(rule.get("apiGroups")).is_empty() {
        errors.push(FieldError::required(
            path.child("apiGroups").render(),
            "resource rules must supply at least one api group",
        ));
    }
    if strings(rule.get("resources")).is_empty() {
        errors.push(FieldError::required(
            path.child("resources").render(),
            "resource rules must supply at least one resource",
        ));
    }
}

fn validate_binding(kind: Kind, object: &Value, errors: &mut Vec<FieldError>) {
    let role_ref = object.get("roleRef");
    let field = |name: &str| {
        role_ref
            .and_then(|r| r.get(name))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let supported = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
    if field("apiGroup") != GROUP {
        errors.push(FieldError::not_supported(
            "roleRef.apiGroup",
            json!(field("apiGroup")),
            &supported(&[GROUP]),
        ));
    }
    let kinds: &[&str] = if kind == Kind::RoleBinding {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&field("kind")) {
        errors.push(FieldError::not_supported(
            "roleRef.kind",
            json!(field("kind")),
            &supported(kinds),
        ));
    }
    let role_name = field("name");
    if role_name.is_empty() {
        errors.push(FieldError::required("roleRef.name", ""));
    } else if let Err(messages) = crate::names::validate_path_segment_name(role_name, false) {
        for message in messages {
            errors.push(FieldError::invalid("roleRef.name", role_name, message));
        }
    }
    let subjects_path = Path::root().child("subjects");
    let subjects = object.get("subjects").and_then(Value::as_array);
    for (index, subject) in subjects.into_iter().flatten().enumerate() {
        let path = subjects_path.index(index);
        let get = |name: &str| subject.get(name).and_then(Value::as_str).unwrap_or("");
        if get("name").is_empty() {
            errors.push(FieldError::required(path.child("name").render(), ""));
        }
        match get("kind") {
            "ServiceAccount" => {
                if !get("apiGroup").is_empty() {
                    errors.push(FieldError::not_supported(
                        path.child("apiGroup").render(),
                        json!(get("apiGroup")),
                        &supported(&[""]),
                    ));
                }
                if kind == Kind::ClusterRoleBinding && get("namespace").is_empty() {
                    errors.push(FieldError::required(path.child("namespace").render(), ""));
                }
            }
            "User" | "Group" => {
                if get("apiGroup") != GROUP {
                    errors.push(FieldError::not_supported(
                        path.child("apiGroup").render(),
                        json!(get("apiGroup")),
                        &supported(&[GROUP]),
                    ));
                }
            }
            other => errors.push(FieldError::not_supported(
                path.child("kind").render(),
                json!(other),
                &supported(&["ServiceAccount", "User", "Group"]),
            )),
        }
    }
}
