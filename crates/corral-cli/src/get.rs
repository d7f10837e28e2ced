//! `corral get clusters | kubeconfig NAME | providers | orphans`.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};

use crate::describe::tree::human_duration;
use crate::{Connection, Error};

/// Left-aligned columns two spaces apart, as kubectl prints tables.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in rows {
        for (index, cell) in row.iter().enumerate() {
            widths[index] = widths[index].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (index, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if index + 1 < row.len() {
                line.push_str(&" ".repeat(widths[index] - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn age(
    created: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    now: Timestamp,
) -> String {
    created
        .map(|time| human_duration(now.as_second() - time.0.as_second()))
        .unwrap_or_else(|| "<unknown>".into())
}

/// The clusters of `namespace` (all namespaces when `None`): name, availability, control
/// plane and worker machines (available/desired), phase, age and version.
pub async fn clusters(
    connection: &Connection,
    namespace: Option<&str>,
    now: Timestamp,
) -> Result<String, Error> {
    let api: Api<corral_api::Cluster> = match namespace {
        Some(namespace) => Api::namespaced(connection.client.clone(), namespace),
        None => Api::all(connection.client.clone()),
    };
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| not_installed_or(connection, "listing Clusters", e))?;
    if list.items.is_empty() {
        return Ok(match namespace {
            Some(namespace) => format!("No clusters found in namespace {namespace}.\n"),
            None => "No clusters found.\n".into(),
        });
    }
    let mut header = vec![
        "NAME",
        "AVAILABLE",
        "CONTROL PLANE",
        "WORKERS",
        "PHASE",
        "AGE",
        "VERSION",
    ];
    if namespace.is_none() {
        header.insert(0, "NAMESPACE");
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    let mut reader = crate::describe::Reader::new(connection, namespace.unwrap_or("default"));
    for cluster in &list.items {
        let value = serde_json::to_value(cluster).unwrap_or_default();
        let status = &value["status"];
        let available = status["conditions"]
            .as_array()
            .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Available"))
            .and_then(|c| c["status"].as_str())
            .unwrap_or("")
            .to_string();
        let machines = |part: &str| {
            let part = &status[part];
            match part["desiredReplicas"].as_i64() {
                Some(desired) => format!(
                    "{}/{desired}",
                    part["availableReplicas"].as_i64().unwrap_or(0)
                ),
                None => String::new(),
            }
        };
        let control_plane = if value["spec"]["topology"]["version"].is_string() {
            None
        } else {
            reader.set_namespace(cluster.metadata.namespace.as_deref().unwrap_or("default"));
            reader.referenced(&value["spec"]["controlPlaneRef"]).await?
        };
        let version = cluster_version(&value, control_plane.as_ref());
        let mut row = vec![
            cluster.metadata.name.clone().unwrap_or_default(),
            available,
            machines("controlPlane"),
            machines("workers"),
            status["phase"].as_str().unwrap_or("").to_string(),
            age(cluster.metadata.creation_timestamp.as_ref(), now),
            version,
        ];
        if namespace.is_none() {
            row.insert(0, cluster.metadata.namespace.clone().unwrap_or_default());
        }
        rows.push(row);
    }
    Ok(table(&rows))
}

/// A cluster's Kubernetes version: its topology's when it has one, else its control plane's
/// (`spec.version`, the version it is or is rolling out to, as `kubectl get kcp` shows it;
/// `status.version` when the spec names none); empty when neither says.
pub fn cluster_version(
    cluster: &serde_json::Value,
    control_plane: Option<&serde_json::Value>,
) -> String {
    cluster["spec"]["topology"]["version"]
        .as_str()
        .or_else(|| {
            control_plane.and_then(|cp| {
                cp["spec"]["version"]
                    .as_str()
                    .or_else(|| cp["status"]["version"].as_str())
            })
        })
        .unwrap_or("")
        .to_string()
}

/// The kubeconfig of a workload cluster: the `value` of its `<name>-kubeconfig` Secret, as
/// `clusterctl get kubeconfig` prints it.
pub async fn kubeconfig(
    connection: &Connection,
    namespace: &str,
    name: &str,
) -> Result<String, Error> {
    let clusters: Api<corral_api::Cluster> = Api::namespaced(connection.client.clone(), namespace);
    let cluster = clusters
        .get_opt(name)
        .await
        .map_err(|e| not_installed_or(connection, format!("reading Cluster {name}"), e))?;
    if cluster.is_none() {
        return Err(Error::NotFound {
            kind: "Cluster".into(),
            name: name.into(),
            namespace: namespace.into(),
            hint: "; `corral get clusters -A` lists the clusters".into(),
        });
    }
    let secrets: Api<Secret> = Api::namespaced(connection.client.clone(), namespace);
    let secret_name = format!("{name}-kubeconfig");
    let secret = secrets
        .get_opt(&secret_name)
        .await
        .map_err(|e| connection.fail(format!("reading Secret {secret_name}"), e))?;
    let value = secret
        .and_then(|secret| secret.data)
        .and_then(|mut data| data.remove("value"));
    match value {
        Some(bytes) => String::from_utf8(bytes.0).map_err(|_| {
            Error::Invalid(format!(
                "the Secret {namespace}/{secret_name} holds no text kubeconfig"
            ))
        }),
        None => Err(Error::Invalid(format!(
            "cluster {name} has no kubeconfig yet (no Secret {namespace}/{secret_name} with a value); it appears once the control plane is initialized, see `corral describe cluster {name}`"
        ))),
    }
}

/// The providers: the inventory of the built-in ones, as `kubectl get providers -A` shows
/// it, then every ProviderPlugin with what its GetInfo said, its transport, its health (its
/// Ready condition's reason) and its last error.
pub async fn providers(connection: &Connection, now: Timestamp) -> Result<String, Error> {
    let api: Api<corral_api::clusterctl::Provider> = Api::all(connection.client.clone());
    let list = match api.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(kube::Error::Api(status)) if status.code == 404 => {
            return Err(Error::Invalid(format!(
                "no provider inventory at {}; run `corral init` first",
                connection.server
            )));
        }
        Err(error) => return Err(connection.fail("listing the provider inventory", error)),
    };
    let mut rows = vec![
        [
            "NAMESPACE",
            "NAME",
            "TYPE",
            "PROVIDER",
            "VERSION",
            "CONTRACT",
            "TRANSPORT",
            "HEALTH",
            "AGE",
            "MESSAGE",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for provider in &list.items {
        let type_ = provider
            .type_
            .map(|t| {
                serde_json::to_value(t)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        rows.push(vec![
            provider.metadata.namespace.clone().unwrap_or_default(),
            provider.metadata.name.clone().unwrap_or_default(),
            type_,
            provider.provider_name.clone().unwrap_or_default(),
            provider.version.clone().unwrap_or_default(),
            corral_api::contract::ContractVersion::V1Beta2.to_string(),
            "in-process".into(),
            "-".into(),
            age(provider.metadata.creation_timestamp.as_ref(), now),
            String::new(),
        ]);
    }
    let plugins: Api<corral_infra_plugin::api::ProviderPlugin> =
        Api::all(connection.client.clone());
    let plugins = match plugins.list(&ListParams::default()).await {
        Ok(list) => list.items,
        // The plugin provider's CRDs are not installed: no plugins.
        Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
        Err(error) => return Err(connection.fail("listing the ProviderPlugins", error)),
    };
    for plugin in &plugins {
        let status = plugin.status.clone().unwrap_or_default();
        let info = status.info.clone().unwrap_or_default();
        let ready = corral_runtime::conditions::get(
            &status.conditions,
            corral_infra_plugin::api::conditions::READY,
        );
        let (health, message) = match ready {
            Some(ready) if ready.status == "True" => ("Ready".to_owned(), String::new()),
            Some(ready) => (ready.reason.clone(), ready.message.clone()),
            None => ("Unknown".to_owned(), "not probed yet".to_owned()),
        };
        rows.push(vec![
            String::new(),
            plugin.metadata.name.clone().unwrap_or_default(),
            "InfrastructureProvider".into(),
            format!(
                "{}:{}",
                corral_infra_plugin::api::PROVIDER_NAME,
                if info.name.is_empty() {
                    "-"
                } else {
                    &info.name
                }
            ),
            info.version.clone(),
            info.contract_versions.join(","),
            status.transport.clone().unwrap_or_default(),
            health,
            age(plugin.metadata.creation_timestamp.as_ref(), now),
            message,
        ]);
    }
    Ok(table(&rows))
}

/// The orphans: machines that provider plugins hold and no PluginMachine claims, as each
/// ProviderPlugin's last probe found them (`status.orphans`), with how long they have been
/// unclaimed and what `spec.orphanPolicy` does with them.
pub async fn orphans(connection: &Connection, now: Timestamp) -> Result<String, Error> {
    use corral_infra_plugin::api::{
        DEFAULT_ORPHAN_GRACE_PERIOD_SECONDS, OrphanPolicy, ProviderPlugin,
    };
    let plugins: Api<ProviderPlugin> = Api::all(connection.client.clone());
    let plugins = match plugins.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
        Err(error) => return Err(connection.fail("listing the ProviderPlugins", error)),
    };
    let mut rows = vec![
        [
            "PLUGIN",
            "PROVIDER ID",
            "MACHINE UID",
            "CLUSTER",
            "UNCLAIMED",
            "POLICY",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for plugin in &plugins {
        let policy = match plugin.spec.orphan_policy.unwrap_or_default() {
            OrphanPolicy::Report => "Report".to_owned(),
            OrphanPolicy::Delete => format!(
                "Delete after {}s",
                plugin
                    .spec
                    .orphan_grace_period_seconds
                    .unwrap_or(DEFAULT_ORPHAN_GRACE_PERIOD_SECONDS)
            ),
        };
        for orphan in plugin.status.iter().flat_map(|status| &status.orphans) {
            let or_dash = |value: &str| {
                if value.is_empty() {
                    "-".to_owned()
                } else {
                    value.to_owned()
                }
            };
            rows.push(vec![
                plugin.metadata.name.clone().unwrap_or_default(),
                or_dash(&orphan.provider_id),
                or_dash(&orphan.machine_uid),
                or_dash(&orphan.cluster_name),
                age(Some(&orphan.first_seen), now),
                policy.clone(),
            ]);
        }
    }
    if rows.len() == 1 {
        return Ok("No orphaned machines found.\n".to_owned());
    }
    Ok(table(&rows))
}

/// A 404 on a list or a read of a Cluster API kind means its CRD is missing (a missing object
/// is `None` from `get_opt`): say to run `corral init`.
pub(crate) fn not_installed_or(
    connection: &Connection,
    doing: impl Into<String>,
    error: kube::Error,
) -> Error {
    match &error {
        kube::Error::Api(status) if status.code == 404 => Error::Invalid(format!(
            "the Cluster API CRDs are not installed at {}; run `corral init` first",
            connection.server
        )),
        _ => connection.fail(doing, error),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::cluster_version;

    #[test]
    fn the_version_comes_from_the_topology_else_the_control_plane() {
        let classy = json!({"spec": {"topology": {"version": "v1.33.0"}}});
        let kcp = json!({"spec": {"version": "v1.32.0"}, "status": {"version": "v1.31.0"}});
        assert_eq!(cluster_version(&classy, Some(&kcp)), "v1.33.0");
        let plain = json!({"spec": {"controlPlaneRef": {"kind": "KubeadmControlPlane"}}});
        assert_eq!(cluster_version(&plain, Some(&kcp)), "v1.32.0");
        let status_only = json!({"status": {"version": "v1.31.0"}});
        assert_eq!(cluster_version(&plain, Some(&status_only)), "v1.31.0");
        assert_eq!(cluster_version(&plain, None), "");
    }
}
