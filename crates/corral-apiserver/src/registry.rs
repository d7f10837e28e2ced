//! The resource registry: which resources are served, under which group-versions, and how.
//!
//! Built-in resources are registered at start; a resource defined by a CRD is added when the
//! CRD is written and removed when it is deleted (see `crd.rs`). Handlers look a resource up
//! by (group, version, plural) once per request and hold an `Arc` to it.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::strategy::{self, StrategyRef};

/// How the scale subresource maps onto the object (from a CRD's `subresources.scale`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// An additional printer column (used by Table output in a later stage).
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// One served version of a resource.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionInfo {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
    pub printer_columns: Vec<PrinterColumn>,
    /// The version's openAPIV3Schema, when it came from a CRD.
    pub schema: Option<Value>,
    /// The same schema, compiled for pruning, defaulting and validation (see `schema/`).
    pub compiled_schema: Option<Arc<crate::schema::CompiledSchema>>,
}

/// Everything the handlers need to know about one resource.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceInfo {
    /// API group; empty for the core group.
    pub group: String,
    /// Versions in preference order (the first served one is preferred).
    pub versions: Vec<VersionInfo>,
    /// Plural lower-case name, as in the URL.
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    pub scale: Option<ScalePaths>,
    /// Built-in kinds accept strategic merge patch; custom resources answer 415.
    pub builtin: bool,
    /// Custom resources track `metadata.generation`; most built-ins here do not.
    pub tracks_generation: bool,
    /// Objects are stored under another resource, (group, plural), in its shape (see
    /// `conversion.rs`).
    pub stored_as: Option<(String, String)>,
    /// What is particular to the resource on writes (see `strategy/`).
    pub strategy: crate::strategy::StrategyRef,
}

impl ResourceInfo {
    /// The storage key prefix shared by every version: `/registry/<group>/<plural>/`.
    pub fn key_prefix(&self) -> String {
        let (group, plural) = match &self.stored_as {
            Some((group, plural)) => (group.as_str(), plural.as_str()),
            None => (self.group.as_str(), self.plural.as_str()),
        };
        let group = if group.is_empty() { "core" } else { group };
        format!("/registry/{group}/{plural}/")
    }

    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(namespace) if self.namespaced => {
                format!("{}{namespace}/{name}", self.key_prefix())
            }
            _ => format!("{}{name}", self.key_prefix()),
        }
    }

    /// `apiVersion` for a version of this resource: `v1` or `group/v1`.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    pub fn version(&self, name: &str) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.name == name && v.served)
    }

    pub fn storage_version(&self) -> &str {
        self.versions
            .iter()
            .find(|v| v.storage)
            .or(self.versions.first())
            .map(|v| v.name.as_str())
            .unwrap_or("v1")
    }

    /// `widgets.example.com`, or `configmaps` in the core group.
    pub fn qualified_name(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The set of served resources, shared by all requests.
#[derive(Default)]
pub struct Registry {
    /// Keyed by (group, plural).
    resources: RwLock<BTreeMap<(String, String), Arc<ResourceInfo>>>,
}

impl Registry {
    pub fn with_builtins() -> Self {
        let registry = Registry::default();
        for resource in builtins() {
            registry.insert(resource);
        }
        registry
    }

    pub fn insert(&self, resource: ResourceInfo) {
        let key = (resource.group.clone(), resource.plural.clone());
        self.resources
            .write()
            .unwrap()
            .insert(key, Arc::new(resource));
    }

    pub fn remove(&self, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.resources
            .write()
            .unwrap()
            .remove(&(group.to_string(), plural.to_string()))
    }

    /// The resource served at `group/version/plural`, if that version is served.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        let resources = self.resources.read().unwrap();
        let resource = resources.get(&(group.to_string(), plural.to_string()))?;
        resource.version(version)?;
        Some(resource.clone())
    }

    pub fn get(&self, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.resources
            .read()
            .unwrap()
            .get(&(group.to_string(), plural.to_string()))
            .cloned()
    }

    /// The resource of a group and kind, whichever version (what an ownerReference names).
    pub fn find_kind(&self, group: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let resources = self.resources.read().unwrap();
        resources
            .values()
            .find(|r| r.group == group && r.kind == kind)
            .cloned()
    }

    /// Every resource, ordered by group then plural.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.resources.read().unwrap().values().cloned().collect()
    }

    /// Served groups with their served versions, core group first, in a stable order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for resource in self.all() {
            let versions = groups.entry(resource.group.clone()).or_default();
            for version in resource.versions.iter().filter(|v| v.served) {
                if !versions.contains(&version.name) {
                    versions.push(version.name.clone());
                }
            }
        }
        for versions in groups.values_mut() {
            sort_versions(versions);
        }
        groups.into_iter().collect()
    }
}

/// Kubernetes version priority: GA before beta before alpha, higher numbers first, then
/// anything that does not look like a Kubernetes version, alphabetically.
pub fn sort_versions(versions: &mut [String]) {
    fn rank(version: &str) -> (u8, i64, i64, String) {
        let parse = || -> Option<(u8, i64, i64)> {
            let rest = version.strip_prefix('v')?;
            let digits_end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let major: i64 = rest[..digits_end].parse().ok()?;
            let tail = &rest[digits_end..];
            if tail.is_empty() {
                return Some((0, -major, 0));
            }
            let (stage, number) = if let Some(n) = tail.strip_prefix("beta") {
                (1, n)
            } else if let Some(n) = tail.strip_prefix("alpha") {
                (2, n)
            } else {
                return None;
            };
            Some((stage, -major, -number.parse::<i64>().ok()?))
        };
        match parse() {
            Some((stage, major, minor)) => (stage, major, minor, String::new()),
            None => (3, 0, 0, version.to_string()),
        }
    }
    versions.sort_by_key(|v| rank(v));
}

fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short_names: &[&str],
) -> ResourceInfo {
    ResourceInfo {
        group: group.to_string(),
        versions: vec![VersionInfo {
            name: version.to_string(),
            served: true,
            storage: true,
            deprecated: false,
            deprecation_warning: None,
            printer_columns: Vec::new(),
            schema: None,
            compiled_schema: None,
        }],
        plural: plural.to_string(),
        singular: kind.to_lowercase(),
        kind: kind.to_string(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: Vec::new(),
        status_subresource: false,
        scale: None,
        builtin: true,
        tracks_generation: false,
        stored_as: None,
        strategy: Default::default(),
    }
}

/// The built-in resources of this server.
pub fn builtins() -> Vec<ResourceInfo> {
    let mut namespaces = builtin("", "v1", "namespaces", "Namespace", false, &["ns"]);
    namespaces.status_subresource = true;
    namespaces.strategy = StrategyRef(&strategy::NAMESPACES);
    let mut crds = builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
    );
    crds.status_subresource = true;
    crds.strategy = StrategyRef(&strategy::CRDS);
    crds.tracks_generation = true;
    crds.categories = vec!["api-extensions".to_string()];
    vec![
        namespaces,
        ResourceInfo {
            strategy: StrategyRef(&strategy::CONFIG_MAPS),
            ..builtin("", "v1", "configmaps", "ConfigMap", true, &["cm"])
        },
        // Nodes and Pods are served so that a Corral API server can stand in for a workload
        // cluster's (simulated clusters register Nodes; drain lists Pods by node).
        ResourceInfo {
            status_subresource: true,
            ..builtin("", "v1", "nodes", "Node", false, &["no"])
        },
        ResourceInfo {
            status_subresource: true,
            categories: vec!["all".to_string()],
            ..builtin("", "v1", "pods", "Pod", true, &["po"])
        },
        ResourceInfo {
            strategy: StrategyRef(&strategy::SECRETS),
            ..builtin("", "v1", "secrets", "Secret", true, &[])
        },
        builtin("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"]),
        builtin("", "v1", "events", "Event", true, &["ev"]),
        ResourceInfo {
            stored_as: Some((String::new(), "events".to_string())),
            ..builtin("events.k8s.io", "v1", "events", "Event", true, &[])
        },
        builtin("coordination.k8s.io", "v1", "leases", "Lease", true, &[]),
        crds,
        ResourceInfo {
            strategy: StrategyRef(&strategy::MUTATING_WEBHOOKS),
            ..builtin(
                "admissionregistration.k8s.io",
                "v1",
                "mutatingwebhookconfigurations",
                "MutatingWebhookConfiguration",
                false,
                &[],
            )
        },
        ResourceInfo {
            strategy: StrategyRef(&strategy::VALIDATING_WEBHOOKS),
            ..builtin(
                "admissionregistration.k8s.io",
                "v1",
                "validatingwebhookconfigurations",
                "ValidatingWebhookConfiguration",
                false,
                &[],
            )
        },
        ResourceInfo {
            status_subresource: true,
            strategy: StrategyRef(&strategy::CSRS),
            ..builtin(
                crate::certificates::GROUP,
                "v1",
                "certificatesigningrequests",
                "CertificateSigningRequest",
                false,
                &["csr"],
            )
        },
        ResourceInfo {
            strategy: StrategyRef(&strategy::RBAC[0]),
            ..builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "roles",
                "Role",
                true,
                &[],
            )
        },
        ResourceInfo {
            strategy: StrategyRef(&strategy::RBAC[1]),
            ..builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "clusterroles",
                "ClusterRole",
                false,
                &[],
            )
        },
        ResourceInfo {
            strategy: StrategyRef(&strategy::RBAC[2]),
            ..builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "rolebindings",
                "RoleBinding",
                true,
                &[],
            )
        },
        ResourceInfo {
            strategy: StrategyRef(&strategy::RBAC[3]),
            ..builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "clusterrolebindings",
                "ClusterRoleBinding",
                false,
                &[],
            )
        },
    ]
}

/// Deployments and DaemonSets (`apps/v1`), which a workload cluster's API server serves beside
/// the built-ins: a management plane has no use for them, so Corral's API server does not
/// serve them by default, but a workload cluster has CoreDNS and kube-proxy, which control
/// plane providers read and update. Served as built-in resources without a schema, like
/// ConfigMaps. Used by the in-memory provider's simulated workload clusters and by
/// `corral apiserver --workload-cluster` on real machines.
pub fn workload_cluster_resources() -> Vec<ResourceInfo> {
    let base = builtins()
        .into_iter()
        .find(|resource| resource.group.is_empty() && resource.plural == "configmaps")
        .expect("ConfigMaps are built in");
    let apps = |plural: &str, kind: &str, short_name: &str| ResourceInfo {
        group: "apps".into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        namespaced: true,
        short_names: vec![short_name.into()],
        categories: vec!["all".into()],
        status_subresource: true,
        strategy: Default::default(),
        ..base.clone()
    };
    vec![
        apps("deployments", "Deployment", "deploy"),
        apps("daemonsets", "DaemonSet", "ds"),
    ]
}
