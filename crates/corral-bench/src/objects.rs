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
