//! Writes that happen only when something changed.
//!
//! A reconciler works on a copy of the object it read, then writes the difference as a JSON
//! merge patch (RFC 7386) carrying the resourceVersion it read, so that a write never undoes
//! another writer's change: on a conflict the reconcile fails, and the watch event of the other
//! write brings a fresh one. No difference, no request.

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The merge patch that turns `from` into `to`, or `None` when they are equal. Lists are
/// replaced whole, as merge patches do; a field present in `from` and absent from `to` is
/// removed with `null`.
pub fn merge_patch(from: &Value, to: &Value) -> Option<Value> {
    if from == to {
        return None;
    }
    match (from, to) {
        (Value::Object(from), Value::Object(to)) => {
            let mut patch = Map::new();
            for (key, new) in to {
                match from.get(key) {
                    Some(old) => {
                        if let Some(change) = merge_patch(old, new) {
                            patch.insert(key.clone(), change);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), new.clone());
                    }
                }
            }
            for key in from.keys() {
                if !to.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        // A null in a merge patch removes the field; an object replacing something else must
        // not be read as a patch of it, so it goes whole.
        _ => Some(to.clone()),
    }
}

/// Which part of an object a write changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Metadata and spec, through the main resource.
    Main,
    /// The status subresource.
    Status,
}

/// The part of an object's JSON a write of `part` compares.
fn comparable(object: &Value, part: Part) -> Value {
    let mut object = object.clone();
    let Value::Object(fields) = &mut object else {
        return object;
    };
    match part {
        Part::Main => {
            fields.remove("status");
            if let Some(Value::Object(metadata)) = fields.get_mut("metadata") {
                // Server-owned; never ours to change.
                for key in ["resourceVersion", "managedFields", "generation", "uid"] {
                    metadata.remove(key);
                }
            }
            object
        }
        Part::Status => {
            let status = fields.remove("status").unwrap_or(Value::Null);
            serde_json::json!({ "status": status })
        }
    }
}

/// The merge patch turning `before` into `after` for `part`, with `before`'s resourceVersion as
/// a precondition, or `None` when that part is unchanged.
pub fn object_patch<K: Serialize + Resource>(before: &K, after: &K, part: Part) -> Option<Value> {
    let from = comparable(&serde_json::to_value(before).ok()?, part);
    let to = comparable(&serde_json::to_value(after).ok()?, part);
    let mut patch = merge_patch(&from, &to)?;
    if let (Value::Object(fields), Some(version)) = (&mut patch, before.resource_version()) {
        let metadata = fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(metadata) = metadata {
            metadata.insert("resourceVersion".into(), Value::String(version));
        }
    }
    Some(patch)
}

/// Writes `part` of `after` when it differs from `before`; returns the object as stored, or
/// `None` when there was nothing to write.
pub async fn patch_if_changed<K>(
    api: &Api<K>,
    before: &K,
    after: &K,
    part: Part,
) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let Some(patch) = object_patch(before, after, part) else {
        return Ok(None);
    };
    let name = before.name_any();
    let params = PatchParams::default();
    let patched = match part {
        Part::Main => api.patch(&name, &params, &Patch::Merge(&patch)).await?,
        Part::Status => {
            api.patch_status(&name, &params, &Patch::Merge(&patch))
                .await?
        }
    };
    Ok(Some(patched))
}

/// Writes an object's metadata and spec, then its status, each only when changed. When the
/// first write removed the last finalizer of an object being deleted, the object is gone and
/// its status is not written.
pub async fn write<K>(api: &Api<K>, before: &K, after: &K) -> Result<(), kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let mut base = before.clone();
    if let Some(written) = patch_if_changed(api, before, after, Part::Main).await? {
        if written.meta().deletion_timestamp.is_some() && written.finalizers().is_empty() {
            return Ok(());
        }
        base.meta_mut().resource_version = written.meta().resource_version.clone();
    }
    patch_if_changed(api, &base, after, Part::Status).await?;
    Ok(())
}
