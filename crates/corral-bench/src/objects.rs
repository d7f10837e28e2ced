//! The ConfigMaps the benchmark writes, and the few fields it reads back from answers.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The namespace of the create, update and get runs.
pub const NAMESPACE: &str = "bench";
/// The namespace the list runs fill and read.
pub const LIST_NAMESPACE: &str = "bench-list";
/// The namespace the watch run writes to and watches.
pub const WATCH_NAMESPACE: &str = "bench-watch";

pub fn collection_path(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps")
}

pub fn object_path(namespace: &str, name: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps/{name}")
}

/// `bytes` characters of filler: the "about 1 KiB of data" of every ConfigMap.
pub fn payload(bytes: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..bytes)
        .map(|i| ALPHABET[(i * 7 + i / 36) % ALPHABET.len()] as char)
        .collect()
}

/// A ConfigMap body: `data.blob` is the payload, `extra` adds string fields to `data`, and
/// `resource_version` makes a PUT conditional.
pub fn configmap(
    name: &str,
    blob: &str,
    resource_version: Option<&str>,
    extra: &[(&str, String)],
) -> Bytes {
    let mut data = Map::new();
    data.insert("blob".into(), Value::String(blob.to_string()));
    for (key, value) in extra {
        data.insert((*key).to_string(), Value::String(value.clone()));
    }
    let mut metadata = json!({"name": name});
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = Value::String(rv.to_string());
    }
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": data,
    });
    Bytes::from(serde_json::to_vec(&object).expect("JSON values serialize"))
}

/// The body of [`configmap`] without `resource_version` and `extra`, serialized once: each
/// create only splices its name in. The raw etcd puts it is compared with send a value made
/// once too, so the clients of both sides cost the same per request apart from the protocol.
pub struct ConfigMapTemplate {
    /// The JSON up to the name, and from after the name to the end.
    before: Vec<u8>,
    after: Vec<u8>,
}

impl ConfigMapTemplate {
    /// Names made by the caller go in as they are: they must need no JSON escaping (the
    /// benchmark's names are DNS-1123 labels).
    const NAME_MARK: &'static str = "NAME-MARK";

    pub fn new(blob: &str) -> ConfigMapTemplate {
        let whole = configmap(Self::NAME_MARK, blob, None, &[]);
        let mark = format!("\"{}\"", Self::NAME_MARK);
        let at = whole
            .windows(mark.len())
            .position(|window| window == mark.as_bytes())
            .expect("the name is in the body");
        ConfigMapTemplate {
            before: whole[..at + 1].to_vec(),
            after: whole[at + mark.len() - 1..].to_vec(),
        }
    }

    /// The body of a ConfigMap called `name` (which must need no escaping).
    pub fn body(&self, name: &str) -> Bytes {
        debug_assert!(!name.contains(['"', '\\']), "{name:?} needs escaping");
        let mut body = Vec::with_capacity(self.before.len() + name.len() + self.after.len());
        body.extend_from_slice(&self.before);
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(&self.after);
        Bytes::from(body)
    }
}

pub fn namespace(name: &str) -> Bytes {
    let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    Bytes::from(serde_json::to_vec(&object).expect("JSON values serialize"))
}

/// An object's or a list's resourceVersion.
#[derive(Deserialize)]
pub struct Versioned {
    pub metadata: VersionedMeta,
}

#[derive(Deserialize)]
pub struct VersionedMeta {
    #[serde(rename = "resourceVersion")]
    pub resource_version: String,
}

/// A list page: how many items, and where the next page starts.
#[derive(Deserialize)]
pub struct ListPage {
    pub metadata: ListMeta,
    pub items: Vec<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
pub struct ListMeta {
    #[serde(default, rename = "continue")]
    pub continue_token: Option<String>,
}

/// One line of a watch stream, with what the watch run reads: the object's name and the
/// send time the writer put in `data.t`.
#[derive(Deserialize)]
pub struct WatchLine {
    #[serde(rename = "type")]
    pub kind: String,
    pub object: WatchObject,
}

#[derive(Deserialize)]
pub struct WatchObject {
    #[serde(default)]
    pub metadata: WatchMeta,
    #[serde(default)]
    pub data: WatchData,
}

#[derive(Deserialize, Default)]
pub struct WatchMeta {
    #[serde(default)]
    pub name: String,
}

#[derive(Deserialize, Default)]
pub struct WatchData {
    #[serde(default)]
    pub t: Option<String>,
}

/// The path of the Machines of `namespace` (Cluster API v1beta2).
pub fn machines_path(namespace: &str) -> String {
    format!("/apis/cluster.x-k8s.io/v1beta2/namespaces/{namespace}/machines")
}

/// The conditions of a Machine's status, as the Machine controller writes them; `seq` is
/// in the message of the last one, so that every write changes it.
fn machine_conditions(seq: u64) -> Value {
    let condition = |kind: &str, status: &str, reason: &str, message: String| {
        json!({
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-11-30T08:00:00Z",
            "observedGeneration": 1,
        })
    };
    json!([
        condition("Available", "True", "Available", String::new()),
        condition("Ready", "True", "Ready", String::new()),
        condition("UpToDate", "True", "UpToDate", String::new()),
        condition("BootstrapConfigReady", "True", "Ready", String::new()),
        condition("InfrastructureReady", "True", "Ready", String::new()),
        condition("NodeReady", "True", "NodeReady", String::new()),
        condition("NodeHealthy", "True", "NodeHealthy", String::new()),
        condition("Deleting", "False", "NotDeleting", String::new()),
        condition("Paused", "False", "NotPaused", String::new()),
        condition(
            "HealthCheckSucceeded",
            "True",
            "HealthCheckSucceeded",
            format!("Health check passed, round {seq}"),
        ),
    ])
}

/// A Machine of a MachineSet as Cluster API's controllers leave it once it runs: labels,
/// annotations, an owner, a finalizer, references, and a status with ten conditions; about
/// 4 KiB stored, with its managedFields.
pub fn machine(name: &str) -> Bytes {
    let set = "md-0-7c9f8b5d4x";
    let object = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "labels": {
                "cluster.x-k8s.io/cluster-name": "bench",
                "cluster.x-k8s.io/deployment-name": "md-0",
                "cluster.x-k8s.io/set-name": set,
                "machine-template-hash": "3817594362",
                "topology.cluster.x-k8s.io/owned": "",
            },
            "annotations": {
                "machinedeployment.clusters.x-k8s.io/revision": "2",
                "controlplane.cluster.x-k8s.io/kubeadm-cluster-configuration": "{\"etcd\":{},\"networking\":{},\"apiServer\":{},\"controllerManager\":{},\"scheduler\":{},\"dns\":{}}",
            },
            "ownerReferences": [{
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "MachineSet",
                "name": set,
                "uid": "6f1b0a8e-2f4c-4a53-9d7e-0b8c1f2e3d4a",
                "controller": true,
                "blockOwnerDeletion": true,
            }],
            "finalizers": ["machine.cluster.x-k8s.io"],
        },
        "spec": {
            "clusterName": "bench",
            "bootstrap": {
                "configRef": {
                    "apiGroup": "bootstrap.cluster.x-k8s.io",
                    "kind": "KubeadmConfig",
                    "name": name,
                },
                "dataSecretName": name,
            },
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "DevMachine",
                "name": name,
            },
            "version": "v1.32.0",
            "providerID": format!("in-memory://{name}"),
            "failureDomain": "fd-1",
        },
    });
    Bytes::from(serde_json::to_vec(&object).expect("JSON values serialize"))
}

/// A merge patch of a Machine's status, conditional on `resource_version`, as a controller
/// writes it: every status field, one condition's message changed by `seq`.
pub fn machine_status_patch(resource_version: &str, seq: u64) -> Bytes {
    let patch = json!({
        "metadata": {"resourceVersion": resource_version},
        "status": {
            "conditions": machine_conditions(seq),
            "initialization": {
                "infrastructureProvisioned": true,
                "bootstrapDataSecretCreated": true,
            },
            "nodeRef": {"name": "node-of-a-bench-machine"},
            "nodeInfo": {
                "machineID": "2f0e7b1c9a4d4e6f8b3a5c7d9e1f2a3b",
                "systemUUID": "2f0e7b1c-9a4d-4e6f-8b3a-5c7d9e1f2a3b",
                "bootID": "8d2c4e6f-1a3b-4c5d-9e7f-0a1b2c3d4e5f",
                "kernelVersion": "6.8.0-45-generic",
                "osImage": "Ubuntu 24.04.1 LTS",
                "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.32.0",
                "kubeProxyVersion": "v1.32.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.17"},
                {"type": "Hostname", "address": "node-of-a-bench-machine"},
            ],
            "phase": "Running",
            "observedGeneration": 1,
        },
    });
    Bytes::from(serde_json::to_vec(&patch).expect("JSON values serialize"))
}

/// A merge patch of a Machine's metadata (a label a controller sets), conditional on
/// `resource_version`.
pub fn machine_label_patch(resource_version: &str, seq: u64) -> Bytes {
    let patch = json!({
        "metadata": {
            "resourceVersion": resource_version,
            "labels": {"bench.corral.dev/round": seq.to_string()},
        },
    });
    Bytes::from(serde_json::to_vec(&patch).expect("JSON values serialize"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_body_is_the_configmap_body() {
        let blob = payload(1024);
        let template = ConfigMapTemplate::new(&blob);
        for name in ["create-r0-12-345", "a", "NAME-MARK-2"] {
            assert_eq!(template.body(name), configmap(name, &blob, None, &[]));
        }
    }
}
