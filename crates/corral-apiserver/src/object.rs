//! Objects as the server handles them: untyped JSON with typed access to `metadata`.
//!
//! The server stores objects without `metadata.resourceVersion`: the version is the store's
//! `mod_revision`, set on every read. That keeps a no-op write byte-identical to what is stored.

use bytes::Bytes;
use corral_store::{KeyValue, Revision};
use serde_json::{Map, Value};

use crate::error::ApiError;

pub mod fields_text;
#[cfg(test)]
mod tests;

/// The current time as Kubernetes writes `metav1.Time`: RFC 3339, second precision, UTC.
///
/// Formatted once per second per thread: every write asks (creationTimestamp, managedFields
/// times), and chrono's formatting showed up in profiles of the create path.
pub fn now_rfc3339() -> String {
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> =
            const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let now = chrono::Utc::now();
    let second = now.timestamp();
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != second {
            *last = (second, now.format("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        last.1.clone()
    })
}

pub fn metadata(object: &Value) -> Option<&Map<String, Value>> {
    object.get("metadata")?.as_object()
}

/// `metadata` as a mutable map, created when missing or not an object.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    let object = object
        .as_object_mut()
        .expect("objects are JSON objects (checked at decode)");
    let entry = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("just made an object")
}

pub fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    metadata(object)?.get(field)?.as_str()
}

pub fn name(object: &Value) -> Option<&str> {
    meta_str(object, "name").filter(|n| !n.is_empty())
}

pub fn namespace(object: &Value) -> Option<&str> {
    meta_str(object, "namespace").filter(|n| !n.is_empty())
}

pub fn uid(object: &Value) -> Option<&str> {
    meta_str(object, "uid")
}

pub fn resource_version(object: &Value) -> Option<&str> {
    meta_str(object, "resourceVersion").filter(|v| !v.is_empty())
}

pub fn deletion_timestamp(object: &Value) -> Option<&str> {
    meta_str(object, "deletionTimestamp")
}

pub fn generation(object: &Value) -> i64 {
    metadata(object)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

pub fn finalizers(object: &Value) -> Vec<String> {
    metadata(object)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn labels(object: &Value) -> Option<&Map<String, Value>> {
    metadata(object)?.get("labels")?.as_object()
}

/// Decodes a stored value and stamps its resourceVersion.
pub fn decode_stored(kv: &KeyValue) -> Result<Value, ApiError> {
    let mut object = fields_text::from_slice(&kv.value).map_err(|e| {
        ApiError::internal(format!("stored object {:?} does not decode: {e}", kv.key))
    })?;
    if !object.is_object() {
        return Err(ApiError::internal(format!(
            "stored object {:?} is not a JSON object",
            kv.key
        )));
    }
    set_resource_version(&mut object, kv.mod_revision);
    Ok(object)
}

/// The `metadata.labels` of a stored value, read without decoding the rest of the object
/// (serde skips every other field without building it), or `None` when the value is not an
/// object of that shape; the caller then decodes it fully, which reports the error.
///
/// A list with a label selector matches each stored object's labels before its full decode:
/// decoding every Machine of a namespace to return one cluster's three made each such list cost
/// as much as a list of all of them.
pub fn stored_labels(value: &[u8]) -> Option<Map<String, Value>> {
    #[derive(serde::Deserialize)]
    struct Stored {
        #[serde(default)]
        metadata: Option<Metadata>,
    }
    #[derive(serde::Deserialize)]
    struct Metadata {
        #[serde(default)]
        labels: Option<Map<String, Value>>,
    }
    let stored: Stored = serde_json::from_slice(value).ok()?;
    Some(stored.metadata.and_then(|m| m.labels).unwrap_or_default())
}

pub fn set_resource_version(object: &mut Value, revision: Revision) {
    metadata_mut(object).insert(
        "resourceVersion".into(),
        Value::String(revision.to_string()),
    );
}

/// The bytes to store: the object without its resourceVersion.
///
/// Serialized through a view that skips the field, rather than from a copy without it: every
/// write goes through here, and copying a whole object only to drop one string showed up in
/// profiles of the create path.
pub fn encode_for_storage(object: &Value) -> Bytes {
    let mut out = Vec::with_capacity(1024);
    // fields_text: the view writes values through `Json`.
    serde_json::to_writer(&mut out, &StorageView(object)).expect("JSON values serialize");
    Bytes::from(out)
}

/// An object's stored bytes, with where its resourceVersion goes in the answer.
///
/// A write's answer is the stored object with the new resourceVersion, known only once the
/// store took the bytes. Serializing the object a second time for it cost as much as the
/// first; the answer is the stored bytes with the field inserted where serializing the
/// object with it would put it (metadata's keys are sorted).
pub struct Encoded {
    pub bytes: Bytes,
    slot: Option<Slot>,
}

/// Where `"resourceVersion":"N"` goes into the stored bytes, and which commas it brings.
struct Slot {
    offset: usize,
    comma_before: bool,
    comma_after: bool,
}

impl Encoded {
    /// The object as [`encode_for_storage`] writes it, noting the resourceVersion's place.
    pub fn new(object: &Value) -> Encoded {
        let Value::Object(map) = object else {
            return Encoded {
                bytes: encode_for_storage(object),
                slot: None,
            };
        };
        let mut out = Vec::with_capacity(1024);
        let mut slot = None;
        out.push(b'{');
        for (index, (key, value)) in map.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_json(&mut out, key);
            out.push(b':');
            match value {
                Value::Object(metadata) if key == "metadata" => {
                    out.push(b'{');
                    let mut first = true;
                    for (key, value) in metadata.iter().filter(|(k, _)| *k != "resourceVersion") {
                        if slot.is_none() && key.as_str() > "resourceVersion" {
                            slot = Some(Slot {
                                offset: out.len(),
                                comma_before: !first,
                                comma_after: first,
                            });
                        }
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        write_json(&mut out, key);
                        out.push(b':');
                        fields_text::to_writer(&mut out, value);
                    }
                    if slot.is_none() {
                        slot = Some(Slot {
                            offset: out.len(),
                            comma_before: !first,
                            comma_after: false,
                        });
                    }
                    out.push(b'}');
                }
                _ => fields_text::to_writer(&mut out, value),
            }
        }
        out.push(b'}');
        Encoded {
            bytes: Bytes::from(out),
            slot,
        }
    }

    /// The JSON of the object with `metadata.resourceVersion` set to `revision`: what
    /// serializing it after [`set_resource_version`] gives. `None` without a `metadata`
    /// object to put it in.
    pub fn with_resource_version(&self, revision: Revision) -> Option<Bytes> {
        let slot = self.slot.as_ref()?;
        let field = format!("\"resourceVersion\":\"{revision}\"");
        let mut out = Vec::with_capacity(self.bytes.len() + field.len() + 2);
        out.extend_from_slice(&self.bytes[..slot.offset]);
        if slot.comma_before {
            out.push(b',');
        }
        out.extend_from_slice(field.as_bytes());
        if slot.comma_after {
            out.push(b',');
        }
        out.extend_from_slice(&self.bytes[slot.offset..]);
        Some(Bytes::from(out))
    }
}

fn write_json(out: &mut Vec<u8>, value: &str) {
    // fields_text: a string.
    serde_json::to_writer(out, value).expect("strings serialize");
}

/// An object as stored: serializes like the object, without `metadata.resourceVersion`.
struct StorageView<'a>(&'a Value);

impl serde::Serialize for StorageView<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(object) = self.0 else {
            return fields_text::Json(self.0).serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(object.len()))?;
        for (key, value) in object {
            match value {
                Value::Object(metadata) if key == "metadata" => {
                    map.serialize_entry(key, &WithoutResourceVersion(metadata))?
                }
                _ => map.serialize_entry(key, &fields_text::Json(value))?,
            }
        }
        map.end()
    }
}

struct WithoutResourceVersion<'a>(&'a Map<String, Value>);

impl serde::Serialize for WithoutResourceVersion<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            self.0
                .iter()
                .filter(|(key, _)| *key != "resourceVersion")
                .map(|(key, value)| (key, fields_text::Json(value))),
        )
    }
}

/// Parses a resourceVersion parameter (an opaque string to clients, a revision here).
pub fn parse_resource_version(raw: &str) -> Result<Revision, ApiError> {
    raw.parse::<Revision>()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {raw:?}")))
}

fn is_non_spec_field(field: &str) -> bool {
    matches!(field, "metadata" | "status" | "apiVersion" | "kind")
}

/// Whether two objects are the same in everything but `metadata`, `status`, `apiVersion` and
/// `kind` — what `generation` tracks. Compared in place: every update asks.
pub fn same_spec_part(a: &Value, b: &Value) -> bool {
    let empty = Map::new();
    let a = a.as_object().unwrap_or(&empty);
    let b = b.as_object().unwrap_or(&empty);
    let count = |map: &Map<String, Value>| map.keys().filter(|k| !is_non_spec_field(k)).count();
    count(a) == count(b)
        && a.iter()
            .filter(|(k, _)| !is_non_spec_field(k))
            .all(|(k, v)| b.get(k) == Some(v))
}
