//! The RBAC objects of a server, compiled into an index the authorizer reads on every request:
//! a user's bindings are found by name and by group (cluster-wide, then in the request's
//! namespace) and their roles by name, all hash lookups; nothing reads the store per request.
//!
//! The index is an immutable [`Snapshot`] replaced as a whole when an object changes (writes of
//! RBAC objects are rare, reads are every request), built from the last seen state of every
//! object with the revision it was seen at, so that older news of an object never replaces
//! newer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use corral_store::Revision;
use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef, Subject};
use serde_json::Value;

use super::Kind;
use crate::auth::UserInfo;

/// The role a binding grants: a ClusterRole, or a Role of the binding's namespace.
#[derive(Clone, Debug)]
enum Granted {
    ClusterRole(Arc<str>),
    Role(Arc<str>),
}

/// One binding of a subject.
#[derive(Clone, Debug)]
struct Grant {
    role: Granted,
}

/// Bindings by the user names and group names they bind.
#[derive(Default)]
struct Bindings {
    users: HashMap<String, Vec<Grant>>,
    groups: HashMap<String, Vec<Grant>>,
}

impl Bindings {
    fn add(&mut self, binding_namespace: &str, subject: &Subject, grant: Grant) {
        match subject.kind.as_str() {
            "User" => self
                .users
                .entry(subject.name.clone())
                .or_default()
                .push(grant),
            "Group" => self
                .groups
                .entry(subject.name.clone())
                .or_default()
                .push(grant),
            "ServiceAccount" => {
                let namespace = subject
                    .namespace
                    .as_deref()
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or(binding_namespace);
                self.users
                    .entry(format!(
                        "system:serviceaccount:{namespace}:{}",
                        subject.name
                    ))
                    .or_default()
                    .push(grant)
            }
            _ => {}
        }
    }

    /// The grants to `user` (by name or by any of its groups).
    fn of<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = &'a Grant> + 'a {
        let by_name = self.users.get(&user.name).into_iter().flatten();
        let by_group = user
            .groups
            .iter()
            .filter_map(|group| self.groups.get(group))
            .flatten();
        by_name.chain(by_group)
    }
}

/// The index at one point in time.
#[derive(Default)]
pub struct Snapshot {
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    /// Roles by namespace, then name.
    roles: HashMap<String, HashMap<String, Arc<[PolicyRule]>>>,
    cluster_bindings: Bindings,
    /// RoleBindings by namespace.
    namespace_bindings: HashMap<String, Bindings>,
}

impl Snapshot {
    fn rules_of(&self, namespace: &str, role: &Granted) -> Option<&[PolicyRule]> {
        match role {
            Granted::ClusterRole(name) => self.cluster_roles.get(&**name).map(|r| &**r),
            Granted::Role(name) => self
                .roles
                .get(namespace)
                .and_then(|roles| roles.get(&**name))
                .map(|r| &**r),
        }
    }

    /// Calls `visit` with every rule granted to `user` that applies in `namespace` (empty:
    /// cluster-wide only), ClusterRoleBindings first, until it returns true; returns whether
    /// one did (kube's `VisitRulesFor`).
    pub fn any_rule(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&PolicyRule) -> bool,
    ) -> bool {
        for grant in self.cluster_bindings.of(user) {
            if let Some(rules) = self.rules_of("", &grant.role)
                && rules.iter().any(&mut visit)
            {
                return true;
            }
        }
        if namespace.is_empty() {
            return false;
        }
        let Some(bindings) = self.namespace_bindings.get(namespace) else {
            return false;
        };
        for grant in bindings.of(user) {
            if let Some(rules) = self.rules_of(namespace, &grant.role)
                && rules.iter().any(&mut visit)
            {
                return true;
            }
        }
        false
    }

    /// Every rule granted to `user` in `namespace` (kube's `RulesFor`).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<PolicyRule> {
        let mut rules = Vec::new();
        self.any_rule(user, namespace, |rule| {
            rules.push(rule.clone());
            false
        });
        rules
    }

    /// The rules of the role a binding in `namespace` (empty for a ClusterRoleBinding) refers
    /// to; `None` when it does not exist.
    pub fn role_rules(&self, namespace: &str, role_ref: &RoleRef) -> Option<Vec<PolicyRule>> {
        let role = match role_ref.kind.as_str() {
            "ClusterRole" => Granted::ClusterRole(role_ref.name.as_str().into()),
            _ => Granted::Role(role_ref.name.as_str().into()),
        };
        self.rules_of(namespace, &role).map(<[PolicyRule]>::to_vec)
    }
}

/// An object as the index keeps it.
#[derive(Clone)]
enum Compiled {
    Role(Arc<[PolicyRule]>),
    Binding {
        role_ref: RoleRef,
        subjects: Vec<Subject>,
    },
}

fn compile(kind: Kind, object: &Value) -> Compiled {
    match kind {
        Kind::Role | Kind::ClusterRole => {
            let rules: Vec<PolicyRule> = object
                .get("rules")
                .and_then(|rules| serde_json::from_value(rules.clone()).ok())
                .unwrap_or_default();
            Compiled::Role(rules.into())
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => Compiled::Binding {
            role_ref: object
                .get("roleRef")
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default(),
            subjects: object
                .get("subjects")
                .and_then(|s| serde_json::from_value(s.clone()).ok())
                .unwrap_or_default(),
        },
    }
}

/// (kind, namespace, name).
type Key = (Kind, String, String);

#[derive(Default)]
struct Inner {
    /// Every object as last seen (`None`: deleted then).
    objects: BTreeMap<Key, (Revision, Option<Compiled>)>,
    snapshot: Arc<Snapshot>,
}

/// The compiled RBAC objects of a server, kept in step with the store by `rbac::start`.
#[derive(Default)]
pub struct Index {
    inner: RwLock<Inner>,
}

impl Index {
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.read().unwrap().snapshot.clone()
    }

    /// The objects of a kind that currently exist, as (namespace, name).
    pub fn names(&self, kind: Kind) -> Vec<(String, String)> {
        let inner = self.inner.read().unwrap();
        inner
            .objects
            .iter()
            .filter(|((k, _, _), (_, compiled))| *k == kind && compiled.is_some())
            .map(|((_, namespace, name), _)| (namespace.clone(), name.clone()))
            .collect()
    }

    /// Records the state of objects at their revisions (`None`: deleted) and publishes a new
    /// snapshot if any was news.
    pub fn observe_all<'a>(
        &self,
        changes: impl IntoIterator<Item = (Kind, &'a str, &'a str, Revision, Option<&'a Value>)>,
    ) {
        let mut inner = self.inner.write().unwrap();
        let mut changed = false;
        for (kind, namespace, name, revision, object) in changes {
            let key = (kind, namespace.to_string(), name.to_string());
            if let Some((seen, _)) = inner.objects.get(&key)
                && *seen >= revision
            {
                continue;
            }
            let compiled = object.map(|object| compile(kind, object));
            inner.objects.insert(key, (revision, compiled));
            changed = true;
        }
        if changed {
            inner.snapshot = Arc::new(build(&inner.objects));
        }
    }
}

fn build(objects: &BTreeMap<Key, (Revision, Option<Compiled>)>) -> Snapshot {
    let mut snapshot = Snapshot::default();
    for ((kind, namespace, name), (_, compiled)) in objects {
        match (kind, compiled) {
            (_, None) => {}
            (Kind::ClusterRole, Some(Compiled::Role(rules))) => {
                snapshot.cluster_roles.insert(name.clone(), rules.clone());
            }
            (Kind::Role, Some(Compiled::Role(rules))) => {
                snapshot
                    .roles
                    .entry(namespace.clone())
                    .or_default()
                    .insert(name.clone(), rules.clone());
            }
            (kind, Some(Compiled::Binding { role_ref, subjects })) => {
                let role = match (kind, role_ref.kind.as_str()) {
                    (_, "ClusterRole") => Granted::ClusterRole(role_ref.name.as_str().into()),
                    (Kind::RoleBinding, "Role") => Granted::Role(role_ref.name.as_str().into()),
                    _ => continue,
                };
                let bindings = if *kind == Kind::ClusterRoleBinding {
                    &mut snapshot.cluster_bindings
                } else {
                    snapshot
                        .namespace_bindings
                        .entry(namespace.clone())
                        .or_default()
                };
                for subject in subjects {
                    bindings.add(namespace, subject, Grant { role: role.clone() });
                }
            }
            _ => {}
        }
    }
    snapshot
}
