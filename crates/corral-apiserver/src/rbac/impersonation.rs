//! User impersonation (kube-apiserver's `WithImpersonation`): a request with
//! `Impersonate-User` (and optionally `Impersonate-Group`, repeated) is served as that user
//! if its sender may `impersonate` the user (`users`, or `serviceaccounts` in the account's
//! namespace for `system:serviceaccount:NS:NAME`) and every group (`groups`). The impersonated
//! user is in `system:authenticated` unless a group given says otherwise; a ServiceAccount
//! given no groups is in `system:serviceaccounts` and `system:serviceaccounts:NS`.
//!
//! Differences from kube-apiserver: `Impersonate-Extra-*` headers are ignored (users carry no
//! extra here), and groups or a uid without a user are a 400, not a 500.

use std::sync::Arc;

use super::rules::Attributes;
use crate::auth::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, UserInfo};
use crate::error::ApiError;
use crate::server::ApiState;

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";

/// The user a request acts as: `user` itself without impersonation headers.
pub fn impersonate(
    state: &ApiState,
    user: Arc<UserInfo>,
    headers: &http::HeaderMap,
) -> Result<Arc<UserInfo>, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    let names = values(USER_HEADER);
    let groups = values(GROUP_HEADER);
    let uids = values(UID_HEADER);
    let Some(name) = names.first().filter(|n| !n.is_empty()) else {
        if groups.is_empty() && uids.is_empty() {
            return Ok(user);
        }
        return Err(ApiError::bad_request(
            "requested impersonation of groups or a uid without impersonating a user",
        ));
    };
    let acting_as = |resource: &str, namespace: &str, name: &str| Attributes {
        verb: "impersonate".into(),
        resource_request: true,
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        version: "v1".into(),
        ..Default::default()
    };
    let mut checks = Vec::new();
    let service_account = name
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'));
    match service_account {
        Some((namespace, account)) => {
            checks.push(acting_as("serviceaccounts", namespace, account));
        }
        None => checks.push(acting_as("users", "", name)),
    }
    for group in &groups {
        checks.push(acting_as("groups", "", group));
    }
    for uid in &uids {
        let mut check = acting_as("uids", "", uid);
        check.group = "authentication.k8s.io".into();
        checks.push(check);
    }
    for check in &checks {
        if !super::authorize(state, &user, check) {
            return Err(super::forbidden(&user, check, ""));
        }
    }
    let mut groups = groups;
    if let Some((namespace, _)) = service_account
        && groups.is_empty()
    {
        // A ServiceAccount's groups are known: kube adds them when none are given.
        groups = vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ];
    }
    if name != ANONYMOUS_USER {
        let says_otherwise = groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
        if !says_otherwise {
            groups.push(AUTHENTICATED_GROUP.into());
        }
    } else if !groups.iter().any(|g| g == UNAUTHENTICATED_GROUP) {
        groups.push(UNAUTHENTICATED_GROUP.into());
    }
    Ok(Arc::new(UserInfo {
        name: name.clone(),
        uid: uids.first().cloned().unwrap_or_default(),
        groups,
    }))
}
