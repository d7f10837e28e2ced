//! Applying manifests, as `kubectl apply --server-side` does: every document of a YAML stream,
//! its resource found through discovery, written with server-side apply.

use std::collections::BTreeMap;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::discovery::Scope;
use serde::Deserialize;
use serde_json::Value;

use crate::{Connection, Error, FIELD_MANAGER};

/// Applies every object of `yaml`; returns kubectl's lines (`kind.group/name applied`).
pub async fn apply_yaml(connection: &Connection, yaml: &str) -> Result<Vec<String>, Error> {
    let mut documents = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let value = Value::deserialize(document).map_err(|error| {
            Error::Invalid(format!("document {} is not valid YAML: {error}", index + 1))
        })?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    let mut resources: BTreeMap<(String, String), (ApiResource, Scope)> = BTreeMap::new();
    let mut lines = Vec::new();
    for object in documents {
        let api_version = object["apiVersion"].as_str().unwrap_or("").to_string();
        let kind = object["kind"].as_str().unwrap_or("").to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if api_version.is_empty() || kind.is_empty() || name.is_empty() {
            return Err(Error::Invalid(format!(
                "an object without apiVersion, kind or metadata.name: {}",
                truncate(&object.to_string(), 120)
            )));
        }
        let key = (api_version.clone(), kind.clone());
        if !resources.contains_key(&key) {
            let (group, version) = match api_version.split_once('/') {
                Some((group, version)) => (group.to_string(), version.to_string()),
                None => (String::new(), api_version.clone()),
            };
            let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &kind);
            let found = kube::discovery::pinned_kind(&connection.client, &gvk)
                .await
                .map_err(|error| match error {
                    kube::Error::Api(_) | kube::Error::Discovery(_) => Error::Invalid(format!(
                        "the server does not serve {kind} in {api_version}; is its provider installed (`corral init`)?"
                    )),
                    other => connection.fail(format!("discovering {kind}"), other),
                })?;
            resources.insert(key.clone(), (found.0, found.1.scope));
        }
        let (resource, scope) = &resources[&key];
        let api: Api<DynamicObject> = match scope {
            Scope::Namespaced => {
                let namespace = object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default")
                    .to_string();
                Api::namespaced_with(connection.client.clone(), &namespace, resource)
            }
            Scope::Cluster => Api::all_with(connection.client.clone(), resource),
        };
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .map_err(|error| connection.fail(format!("applying {kind} {name}"), error))?;
        let qualified = if resource.group.is_empty() {
            kind.to_lowercase()
        } else {
            format!("{}.{}", kind.to_lowercase(), resource.group)
        };
        lines.push(format!("{qualified}/{name} applied"));
    }
    Ok(lines)
}

fn truncate(text: &str, length: usize) -> String {
    if text.chars().count() <= length {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(length).collect::<String>())
    }
}
