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
                let mut result = current.clone();
                json_patch::patch(&mut result, patch).map_err(|e| {
                    ApiError::new(
                        http::StatusCode::UNPROCESSABLE_ENTITY,
                        "Invalid",
                        format!("the JSON patch could not be applied: {e}"),
                    )
                })?;
                Ok(result)
            }
            Patch::Merge(patch) => {
                let mut result = current.clone();
                json_patch::merge(&mut result, patch);
                Ok(result)
            }
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
