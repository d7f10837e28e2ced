//! PATCH bodies: JSON merge patch and JSON patch for everything, strategic merge patch for
//! built-in kinds (custom resources answer 415, as in kube-apiserver). Apply patches are
//! recognised here and answered by `apply/`.

use serde_json::Value;

use crate::error::ApiError;
use crate::registry::ResourceInfo;
use crate::strategic_merge;

/// The patch formats this server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    StrategicMerge,
    Apply,
}

impl PatchType {
    pub fn from_content_type(
        content_type: &str,
        resource: &ResourceInfo,
        version: &str,
    ) -> Result<PatchType, ApiError> {
        let accepted = if resource.builtin {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        };
        let unsupported = || {
            // kubectl prefixes this with "<type> is not supported by <group-version-kind>".
            let _ = (resource.api_version(version), content_type);
            ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: {accepted}"
            ))
        };
        match content_type {
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/strategic-merge-patch+json" if resource.builtin => {
                Ok(PatchType::StrategicMerge)
            }
            "application/apply-patch+yaml" => Ok(PatchType::Apply),
            _ => Err(unsupported()),
        }
    }
}

/// A decoded patch, ready to apply to the current object.
#[derive(Clone, Debug)]
pub enum Patch {
    Json(json_patch::Patch),
    Merge(Value),
    StrategicMerge(Value),
}

impl Patch {
    pub fn decode(patch_type: PatchType, body: &[u8]) -> Result<Patch, ApiError> {
        match patch_type {
            PatchType::Json => {
                let value = crate::body::decode_json(body)?;
                let patch: json_patch::Patch = serde_json::from_value(value).map_err(|e| {
                    ApiError::bad_request(format!("the JSON patch is invalid: {e}"))
                })?;
                Ok(Patch::Json(patch))
            }
            PatchType::Merge => {
                let value = crate::body::decode_json(body)?;
                if !value.is_object() {
                    // The Python client labels JSON patches (lists) as merge patches.
                    return Err(ApiError::bad_request(
                        "the merge patch must be a JSON object (a JSON patch needs Content-Type application/json-patch+json)",
                    ));
                }
                Ok(Patch::Merge(value))
            }
            PatchType::StrategicMerge => {
                let value = crate::body::decode_json(body)?;
                if !value.is_object() {
                    return Err(ApiError::bad_request(
                        "the strategic merge patch must be a JSON object",
                    ));
                }
                Ok(Patch::StrategicMerge(value))
            }
            // Server-side apply merges with ownership, not with a patch (see `apply/`).
            PatchType::Apply => Err(ApiError::internal(
                "apply patches are answered by the apply module",
            )),
        }
    }

    pub fn apply(&self, current: &Value) -> Result<Value, ApiError> {
        match self {
            Patch::Json(patch) => {
                // Operations inside managedFields see `fieldsV1` as the trees clients see.
                let mut result = match touches_managed_fields(patch) {
                    true => crate::object::fields_text::expanded(current),
                    false => current.clone(),
                };
                json_patch::patch(&mut result, patch).map_err(|e| {
                    ApiError::new(
                        http::StatusCode::UNPROCESSABLE_ENTITY,
                        "Invalid",
                        format!("the JSON patch could not be applied: {e}"),
                    )
                })?;
                Ok(result)
            }
            Patch::Merge(patch) => Ok(merged(current, patch)),
            Patch::StrategicMerge(patch) => {
                strategic_merge::apply(current, patch, &strategic_merge::BuiltinPatchMeta).map_err(
                    |e| match e.http_status() {
                        422 => ApiError::new(
                            http::StatusCode::UNPROCESSABLE_ENTITY,
                            "Invalid",
                            e.to_string(),
                        ),
                        // kube-apiserver answers 500 for these; they are the client's fault, so
                        // a 400 says so more usefully.
                        _ => ApiError::bad_request(e.to_string()),
                    },
                )
            }
        }
    }
}

/// Whether a JSON patch has an operation whose path (or a move's or copy's source) is in
/// `managedFields` or holds it (`/metadata`, the root).
fn touches_managed_fields(patch: &json_patch::Patch) -> bool {
    const MANAGED: &str = "/metadata/managedFields";
    let concerns = |pointer: &str| pointer.starts_with(MANAGED) || MANAGED.starts_with(pointer);
    patch.0.iter().any(|operation| {
        let from = match operation {
            json_patch::PatchOperation::Move(op) => Some(op.from.as_str()),
            json_patch::PatchOperation::Copy(op) => Some(op.from.as_str()),
            _ => None,
        };
        concerns(operation.path().as_str()) || from.is_some_and(concerns)
    })
}

/// `target` with the JSON merge patch `patch` applied (RFC 7386), built from both by
/// reference: what the patch replaces or removes is not copied from `target` first, as a copy
/// of the whole object followed by `json_patch::merge` would (a status patch replaces every
/// condition of the list it sends).
fn merged(target: &Value, patch: &Value) -> Value {
    let Value::Object(changes) = patch else {
        return patch.clone();
    };
    let mut result: serde_json::Map<String, Value> = match target {
        Value::Object(map) => map
            .iter()
            .filter(|(key, _)| !changes.contains_key(key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        _ => serde_json::Map::new(),
    };
    for (key, change) in changes {
        if change.is_null() {
            continue;
        }
        let base = target.get(key).unwrap_or(&Value::Null);
        result.insert(key.clone(), merged(base, change));
    }
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The same results as `json_patch::merge` on a copy (RFC 7386's examples and more).
    #[test]
    fn merged_is_a_merge_patch() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"b": "c"})),
            (json!({"a": "b"}), json!({"a": null})),
            (json!({"a": "b", "b": "c"}), json!({"a": null})),
            (json!({"a": ["b"]}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
            ),
            (json!({"a": [{"b": "c"}]}), json!({"a": [1]})),
            (json!(["a", "b"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"])),
            (json!({"a": "foo"}), json!(null)),
            (json!({"a": "foo"}), json!("bar")),
            (json!({"e": null}), json!({"a": 1})),
            (json!([1, 2]), json!({"a": "b", "c": null})),
            (json!({}), json!({"a": {"bb": {"ccc": null}}})),
            (
                json!({"metadata": {"name": "m", "labels": {"x": "1", "y": "2"}},
                       "spec": {"n": 1}, "status": {"conditions": [{"type": "A"}], "phase": "P"}}),
                json!({"metadata": {"resourceVersion": "7", "labels": {"y": null, "z": "3"}},
                       "status": {"conditions": [{"type": "B"}]}}),
            ),
        ];
        for (target, patch) in cases {
            let mut expected = target.clone();
            json_patch::merge(&mut expected, &patch);
            assert_eq!(
                super::merged(&target, &patch),
                expected,
                "{target} + {patch}"
            );
        }
    }

    /// JSON patches that reach into managedFields, or test or move what holds them, see
    /// `fieldsV1` as clients see it; others leave it as the server holds it.
    #[test]
    fn json_patches_see_fields_v1_as_clients_do() {
        use crate::object::fields_text;
        let tree = json!({"metadata": {"name": "a", "managedFields": [
            {"manager": "m", "fieldsV1": {"f:spec": {}}}]}, "spec": {}});
        let current = fields_text::from_slice(&serde_json::to_vec(&tree).unwrap()).unwrap();
        let apply = |ops: serde_json::Value| {
            let patch = serde_json::from_value(ops).unwrap();
            super::Patch::Json(patch).apply(&current)
        };
        let metadata = tree["metadata"].clone();
        assert!(apply(json!([{"op": "test", "path": "/metadata", "value": metadata}])).is_ok());
        let inside = apply(json!([
            {"op": "remove", "path": "/metadata/managedFields/0/fieldsV1/f:spec"}]))
        .unwrap();
        assert_eq!(
            inside["metadata"]["managedFields"][0]["fieldsV1"],
            json!({})
        );
        let copied =
            apply(json!([{"op": "copy", "from": "/metadata/managedFields", "path": "/spec/m"}]))
                .unwrap();
        assert_eq!(copied["spec"]["m"], tree["metadata"]["managedFields"]);
        let elsewhere = apply(json!([{"op": "add", "path": "/spec/x", "value": 1}])).unwrap();
        assert!(
            fields_text::text(&elsewhere["metadata"]["managedFields"][0]["fieldsV1"]).is_some()
        );
    }
}
