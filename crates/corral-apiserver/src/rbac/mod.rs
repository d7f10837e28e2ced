//! Authorization: RBAC with kube-apiserver's semantics (`plugin/pkg/auth/authorizer/rbac`,
//! `pkg/registry/rbac`), on when [`ServerConfig::rbac`](crate::ServerConfig::rbac) is set.
//!
//! - Role, ClusterRole, RoleBinding and ClusterRoleBinding (`rbac.authorization.k8s.io/v1`)
//!   are built-in resources; their strategy (`strategy/kinds.rs`) defaults and validates them (`validate.rs`), refuses
//!   writes that would grant what the writer does not hold (`escalation.rs`) and tells the
//!   [`index`] about every stored change; a watch of each kind keeps the index in step with
//!   other servers sharing the store.
//! - Every request is authorized after authentication and impersonation ([`authorize`]):
//!   `system:masters` may do anything; anyone else what a rule of a role bound to their name
//!   or one of their groups grants, cluster-wide or in the request's namespace. A refusal is
//!   kube-apiserver's 403 `Status` (`secrets is forbidden: User "alice" cannot list resource
//!   "secrets" in API group "" in the namespace "b"`). A decision is hash lookups in the
//!   index's current snapshot; nothing reads the store per request.
//! - At start, the bootstrap policy is created where missing (`bootstrap.rs`) and ClusterRoles
//!   with an `aggregationRule` get the rules of the ClusterRoles they select
//!   (`aggregation.rs`).
//! - A node identity may modify only its own Node and Lease (`node_restriction.rs`, kube's
//!   NodeRestriction), checked before RBAC.
//! - `review.rs` answers SelfSubjectAccessReview, SubjectAccessReview and
//!   SelfSubjectRulesReview (`kubectl auth can-i`); `impersonation.rs` handles the
//!   `Impersonate-User` / `Impersonate-Group` headers.
//!
//! Writes the server makes for itself (garbage collection, namespace cleanup, aggregation)
//! run outside any request and are not authorized; the user of the request being served is
//! [`requester`] (a task-local set around each request), for the escalation checks.

mod aggregation;
mod bootstrap;
mod escalation;
mod impersonation;
mod index;
mod node_restriction;
pub mod openapi;
pub mod review;
pub mod rules;
mod validate;

use std::collections::HashSet;
use std::sync::Arc;

use corral_store::{EventKind, RangeRequest, Revision};
use serde_json::Value;

use crate::auth::{MASTERS_GROUP, UserInfo};
use crate::error::ApiError;
use crate::rest::Target;
use crate::server::ApiState;
use crate::{object, watch_cache};

pub use impersonation::impersonate;
pub use rules::Attributes;

/// The API group of the RBAC kinds.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// The four RBAC kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Role,
        Kind::ClusterRole,
        Kind::RoleBinding,
        Kind::ClusterRoleBinding,
    ];

    pub fn plural(self) -> &'static str {
        match self {
            Kind::Role => "roles",
            Kind::ClusterRole => "clusterroles",
            Kind::RoleBinding => "rolebindings",
            Kind::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Kind::Role => "Role",
            Kind::ClusterRole => "ClusterRole",
            Kind::RoleBinding => "RoleBinding",
            Kind::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    pub fn namespaced(self) -> bool {
        matches!(self, Kind::Role | Kind::RoleBinding)
    }

    fn from_plural(plural: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.plural() == plural)
    }

    fn key_prefix(self) -> String {
        format!("/registry/{GROUP}/{}/", self.plural())
    }
}

/// Which RBAC resource a request addresses, if any.
pub fn kind_of(target: &Target) -> Option<Kind> {
    let resource = &target.resource;
    if resource.builtin && resource.group == GROUP {
        Kind::from_plural(&resource.plural)
    } else {
        None
    }
}

/// A request's target for a cluster-scoped RBAC kind, for the server's own writes.
fn cluster_target(state: &ApiState, kind: Kind) -> Target {
    Target {
        resource: state
            .registry
            .get(GROUP, kind.plural())
            .expect("the RBAC kinds are built in"),
        version: "v1".into(),
        namespace: None,
        name: None,
        subresource: None,
    }
}

/// The authorizer's state of a server.
#[derive(Default)]
pub struct Rbac {
    index: index::Index,
    /// Woken when a ClusterRole changes, for the aggregation controller.
    cluster_roles_changed: Arc<tokio::sync::Notify>,
}

tokio::task_local! {
    static REQUESTER: Arc<UserInfo>;
}

/// Runs `future` as serving a request of `user` (see [`requester`]).
pub async fn serving<F: std::future::Future>(user: Arc<UserInfo>, future: F) -> F::Output {
    REQUESTER.scope(user, future).await
}

/// The user of the request being served; `None` for the server's own work.
pub fn requester() -> Option<Arc<UserInfo>> {
    REQUESTER.try_with(Arc::clone).ok()
}

/// Whether RBAC lets `user` do what `attributes` say.
pub fn authorize(state: &ApiState, user: &UserInfo, attributes: &Attributes) -> bool {
    if !state.config.rbac || user.groups.iter().any(|g| g == MASTERS_GROUP) {
        return true;
    }
    state
        .rbac
        .index
        .snapshot()
        .any_rule(user, &attributes.namespace, |rule| {
            rules::rule_allows(attributes, rule)
        })
}

/// Authorizes a request; `Err` is kube-apiserver's 403.
pub fn authorize_request<B>(
    state: &ApiState,
    user: &UserInfo,
    request: &http::Request<B>,
) -> Result<(), ApiError> {
    if !state.config.rbac {
        return Ok(());
    }
    let attributes = Attributes::from_request(request.method(), request.uri());
    if let Some(why) = node_restriction::refusal(user, &attributes) {
        return Err(forbidden_about(
            &attributes.group,
            &attributes.resource,
            &attributes.name,
            why,
        ));
    }
    if authorize(state, user, &attributes) {
        Ok(())
    } else {
        tracing::debug!(
            user = user.name,
            verb = attributes.verb,
            resource = attributes.resource,
            namespace = attributes.namespace,
            path = attributes.path,
            "Request forbidden"
        );
        Err(forbidden(user, &attributes, ""))
    }
}

/// kube-apiserver's `responsewriters.Forbidden`: `<resource> "<name>" is forbidden: <message>`
/// with the resource and name in the details (a non-resource request has neither).
pub fn forbidden(user: &UserInfo, attributes: &Attributes, reason: &str) -> ApiError {
    let mut message = attributes.forbidden_message(user);
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    forbidden_about(
        &attributes.group,
        &attributes.resource,
        &attributes.name,
        message,
    )
}

/// apimachinery's `NewForbidden(groupResource, name, err)`.
pub fn forbidden_about(group: &str, resource: &str, name: &str, why: String) -> ApiError {
    let qualified = match (resource, group) {
        ("", _) => String::new(),
        (resource, "") => resource.to_string(),
        (resource, group) => format!("{resource}.{group}"),
    };
    let message = match (qualified.as_str(), name) {
        ("", _) => format!("forbidden: {why}"),
        (qualified, "") => format!("{qualified} is forbidden: {why}"),
        (qualified, name) => format!("{qualified} {name:?} is forbidden: {why}"),
    };
    let mut error = ApiError::new(http::StatusCode::FORBIDDEN, "Forbidden", message);
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    error.group = non_empty(group);
    error.kind = non_empty(resource);
    error.name = non_empty(name);
    error
}

/// Loads the stored RBAC objects, follows their changes, and (with RBAC on) creates the
/// bootstrap policy and starts the aggregation controller.
pub async fn start(state: &Arc<ApiState>) -> Result<(), ApiError> {
    for kind in Kind::ALL {
        let subscription = load(state, kind).await?;
        tokio::spawn(crate::follow::follow(
            Arc::downgrade(state),
            "RBAC objects",
            subscription,
            move |state, event| {
                let object = (event.kind == EventKind::Put).then_some(&*event.object);
                observe(state, kind, &event.object, event.revision, object);
            },
            Box::new(move |state| Box::pin(async move { load(&state, kind).await })),
        ));
    }
    if state.config.rbac {
        bootstrap::ensure(state).await?;
        aggregation::start(state);
    }
    Ok(())
}

/// Reads every object of a kind into the index and subscribes to the changes after that read.
async fn load(state: &ApiState, kind: Kind) -> Result<Option<watch_cache::Subscription>, ApiError> {
    let prefix = kind.key_prefix();
    // The cacher first: it replays history from before the read.
    let cacher = state.hub.cacher(&prefix).await?;
    let page = state
        .store
        .range(RangeRequest {
            prefix: prefix.clone(),
            ..Default::default()
        })
        .await?;
    let mut objects = Vec::with_capacity(page.kvs.len());
    for kv in &page.kvs {
        objects.push((object::decode_stored(kv)?, kv.mod_revision));
    }
    let listed: HashSet<(String, String)> = objects
        .iter()
        .map(|(o, _)| (namespace_of(o).to_string(), name_of(o).to_string()))
        .collect();
    let gone: Vec<(String, String)> = state
        .rbac
        .index
        .names(kind)
        .into_iter()
        .filter(|key| !listed.contains(key))
        .collect();
    state.rbac.index.observe_all(
        objects
            .iter()
            .map(|(o, revision)| (kind, namespace_of(o), name_of(o), *revision, Some(o)))
            .chain(
                gone.iter()
                    .map(|(ns, name)| (kind, ns.as_str(), name.as_str(), page.revision, None)),
            ),
    );
    if kind == Kind::ClusterRole {
        state.rbac.cluster_roles_changed.notify_one();
    }
    match cacher.subscribe(page.revision) {
        Ok(subscription) => Ok(Some(subscription)),
        Err(error) => {
            tracing::warn!(
                prefix,
                requested = error.requested,
                oldest = error.oldest,
                "Subscribing to RBAC changes failed"
            );
            Ok(None)
        }
    }
}

fn namespace_of(object: &Value) -> &str {
    object::namespace(object).unwrap_or("")
}

fn name_of(object: &Value) -> &str {
    object::name(object).unwrap_or("")
}

fn observe(
    state: &ApiState,
    kind: Kind,
    key_of: &Value,
    revision: Revision,
    object: Option<&Value>,
) {
    state.rbac.index.observe_all([(
        kind,
        namespace_of(key_of),
        name_of(key_of),
        revision,
        object,
    )]);
    if kind == Kind::ClusterRole {
        state.rbac.cluster_roles_changed.notify_one();
    }
}

fn revision_of(object: &Value) -> Revision {
    object::resource_version(object)
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// The RBAC resources (called by their strategy, `strategy/kinds.rs`)
// ---------------------------------------------------------------------------------------

/// Sets kube-apiserver's defaults on an object being written.
pub fn prepare(kind: Kind, object: &mut Value) {
    validate::set_defaults(kind, object);
}

/// Refuses a write that grants more than its requester holds, then validates the object
/// (422 naming the kind with its group, as kube-apiserver's `NewInvalid`).
pub fn admit(
    state: &ApiState,
    kind: Kind,
    target: &Target,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if let Some(user) = requester() {
        escalation::check(state, &user, kind, target, object, old)?;
    }
    let causes = validate::validate(kind, object, old);
    if causes.is_empty() {
        return Ok(());
    }
    let qualified = format!("{}.{GROUP}", kind.kind());
    let mut error = ApiError::invalid(target.subject(name_of(object)), &qualified, causes);
    error.kind = Some(kind.kind().to_string());
    Err(error)
}

/// An object was stored (created, updated, marked for deletion).
pub fn after_write(state: &ApiState, kind: Kind, object: &Value) {
    observe(state, kind, object, revision_of(object), Some(object));
}

/// An object was deleted.
pub fn after_delete(state: &ApiState, kind: Kind, object: &Value) {
    observe(state, kind, object, revision_of(object), None);
}

#[cfg(test)]
mod tests;
