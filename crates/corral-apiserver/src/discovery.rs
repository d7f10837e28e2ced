//! Discovery: legacy (`/api`, `/apis`, `/api/v1`, `/apis/G/V`) and aggregated v2, plus
//! `/version`.
//!
//! kubectl takes the aggregated answer only when the response Content-Type is exactly
//! [`AGGREGATED_CONTENT_TYPE`]; anything else makes it parse the body as legacy discovery and
//! silently find no resources.

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceInfo};

pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether the client asked for aggregated discovery (v2) in its Accept header.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"v=v2")
            && params.contains(&"as=APIGroupDiscoveryList")
    })
}

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn subresource_names(resource: &ResourceInfo) -> Vec<&'static str> {
    let mut names = Vec::new();
    if resource.status_subresource {
        names.push("status");
    }
    if resource.scale.is_some() {
        names.push("scale");
    }
    if resource.builtin && resource.group.is_empty() && resource.plural == "namespaces" {
        names.push("finalize");
    }
    names
}

/// An `APIResourceList` for one group-version.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for resource in registry.all() {
        if resource.group != group || resource.version(version).is_none() {
            continue;
        }
        resources.push(json!({
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": VERBS,
            "shortNames": resource.short_names,
            "categories": resource.categories,
        }));
        for subresource in subresource_names(&resource) {
            let (kind, group, version, verbs) = match subresource {
                "scale" => ("Scale", "autoscaling", "v1", vec!["get", "patch", "update"]),
                "finalize" => (resource.kind.as_str(), "", "", vec!["update"]),
                _ => (
                    resource.kind.as_str(),
                    "",
                    "",
                    vec!["get", "patch", "update"],
                ),
            };
            let mut entry = json!({
                "name": format!("{}/{subresource}", resource.plural),
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            if !group.is_empty() {
                entry["group"] = json!(group);
                entry["version"] = json!(version);
            }
            resources.push(entry);
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// Legacy `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// Legacy `/apis`.
pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .into_iter()
        .filter(|(group, _)| !group.is_empty())
        .map(|(group, versions)| group_entry(&group, &versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// Legacy `/apis/G`.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let (group, versions) = registry
        .groups()
        .into_iter()
        .find(|(group, _)| group == name && !name.is_empty())?;
    let mut entry = group_entry(&group, &versions);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

fn aggregated_resource(resource: &ResourceInfo, version: &str) -> Value {
    let response_kind = json!({"group": resource.group, "version": version, "kind": resource.kind});
    let subresources: Vec<Value> = subresource_names(resource)
        .into_iter()
        .map(|subresource| match subresource {
            "scale" => json!({
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"],
            }),
            "finalize" => json!({
                "subresource": "finalize",
                "responseKind": response_kind,
                "verbs": ["update"],
            }),
            other => json!({
                "subresource": other,
                "responseKind": response_kind,
                "verbs": ["get", "patch", "update"],
            }),
        })
        .collect();
    let mut entry = json!({
        "resource": resource.plural,
        "responseKind": response_kind,
        "scope": if resource.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": resource.singular,
        "verbs": VERBS,
    });
    if !resource.short_names.is_empty() {
        entry["shortNames"] = json!(resource.short_names);
    }
    if !resource.categories.is_empty() {
        entry["categories"] = json!(resource.categories);
    }
    if !subresources.is_empty() {
        entry["subresources"] = json!(subresources);
    }
    entry
}

/// Aggregated discovery for the core group (`core = true`, `/api`) or every other group
/// (`/apis`).
pub fn aggregated(registry: &Registry, core: bool) -> Value {
    let resources = registry.all();
    let mut items = Vec::new();
    for (group, versions) in registry.groups() {
        if group.is_empty() != core {
            continue;
        }
        let versions: Vec<Value> = versions
            .iter()
            .map(|version| {
                let served: Vec<Value> = resources
                    .iter()
                    .filter(|r| r.group == group && r.version(version).is_some())
                    .map(|r| aggregated_resource(r, version))
                    .collect();
                json!({"version": version, "resources": served, "freshness": "Current"})
            })
            .collect();
        items.push(json!({"metadata": {"name": group}, "versions": versions}));
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// `/version`: the Kubernetes API level this server speaks.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": concat!("v1.32.0+corral-", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => other,
        }),
    })
}
