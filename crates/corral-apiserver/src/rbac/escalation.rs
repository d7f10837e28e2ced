//! Escalation prevention, as kube-apiserver's RBAC registry (`pkg/registry/rbac`): nobody
//! writes a role granting what they do not hold, or binds a role they do not hold, unless they
//! are in `system:masters` or allowed to `escalate` (roles) or `bind` (bindings) that role.

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};
use serde_json::Value;

use super::rules::{self, Attributes};
use super::{GROUP, Kind};
use crate::auth::{MASTERS_GROUP, UserInfo};
use crate::error::ApiError;
use crate::rest::Target;
use crate::server::ApiState;

/// Refuses the write of `object` by `user` if it escalates (403, or 404 for a binding to a
/// role that does not exist).
pub fn check(
    state: &ApiState,
    user: &UserInfo,
    kind: Kind,
    target: &Target,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if !state.config.rbac || user.groups.iter().any(|g| g == MASTERS_GROUP) {
        return Ok(());
    }
    let namespace = target.namespace.as_deref().unwrap_or("");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let resource = kind.plural();
    match kind {
        Kind::Role | Kind::ClusterRole => {
            // Only the permissions matter: a write that keeps them (labels, finalizers) passes.
            if old.is_some_and(|old| {
                old.get("rules") == object.get("rules")
                    && old.get("aggregationRule") == object.get("aggregationRule")
            }) {
                return Ok(());
            }
            if allowed(state, user, "escalate", resource, namespace, name) {
                return Ok(());
            }
            let has_aggregation = object
                .get("aggregationRule")
                .is_some_and(|rule| !rule.is_null());
            if kind == Kind::ClusterRole && has_aggregation {
                let everything = vec![
                    PolicyRule {
                        verbs: vec!["*".into()],
                        api_groups: Some(vec!["*".into()]),
                        resources: Some(vec!["*".into()]),
                        ..Default::default()
                    },
                    PolicyRule {
                        verbs: vec!["*".into()],
                        non_resource_urls: Some(vec!["*".into()]),
                        ..Default::default()
                    },
                ];
                if confirm_no_escalation(state, user, "", &everything).is_err() {
                    return Err(super::forbidden_about(
                        GROUP,
                        resource,
                        name,
                        "must have cluster-admin privileges to use the aggregationRule".into(),
                    ));
                }
            }
            let granted: Vec<PolicyRule> = object
                .get("rules")
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default();
            confirm_no_escalation(state, user, namespace, &granted)
                .map_err(|why| super::forbidden_about(GROUP, resource, name, why))
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => {
            if old.is_some_and(|old| {
                old.get("roleRef") == object.get("roleRef")
                    && old.get("subjects") == object.get("subjects")
            }) {
                return Ok(());
            }
            let role_ref: RoleRef = object
                .get("roleRef")
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default();
            let role_resource = match role_ref.kind.as_str() {
                "ClusterRole" => "clusterroles",
                _ => "roles",
            };
            if allowed(
                state,
                user,
                "bind",
                role_resource,
                namespace,
                &role_ref.name,
            ) {
                return Ok(());
            }
            let granted = state
                .rbac
                .index
                .snapshot()
                .role_rules(namespace, &role_ref)
                .ok_or_else(|| {
                    ApiError::not_found(crate::error::Subject {
                        resource: role_resource,
                        group: GROUP,
                        name: &role_ref.name,
                    })
                })?;
            confirm_no_escalation(state, user, namespace, &granted)
                .map_err(|why| super::forbidden_about(GROUP, resource, name, why))
        }
    }
}

/// Whether `user` may `verb` the named RBAC resource (`escalate`, `bind`).
fn allowed(
    state: &ApiState,
    user: &UserInfo,
    verb: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> bool {
    let attributes = Attributes {
        verb: verb.into(),
        resource_request: true,
        group: GROUP.into(),
        version: "v1".into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    };
    super::authorize(state, user, &attributes)
}

/// `ConfirmNoEscalation`: `Err` lists the rules of `granted` that `user` does not hold in
/// `namespace`.
fn confirm_no_escalation(
    state: &ApiState,
    user: &UserInfo,
    namespace: &str,
    granted: &[PolicyRule],
) -> Result<(), String> {
    let held = state.rbac.index.snapshot().rules_for(user, namespace);
    let missing = rules::uncovered(&held, granted);
    if missing.is_empty() {
        return Ok(());
    }
    let mut descriptions: Vec<String> = rules::compact(missing)
        .iter()
        .map(rules::compact_string)
        .collect();
    descriptions.sort();
    descriptions.dedup();
    let groups: Vec<String> = user
        .groups
        .iter()
        .map(|g| crate::schema::field::go_quote(g))
        .collect();
    Err(format!(
        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        groups.join(" "),
        descriptions.join("\n")
    ))
}
