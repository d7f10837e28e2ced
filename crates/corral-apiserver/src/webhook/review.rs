//! AdmissionReview `admission.k8s.io/v1`: the request a webhook is sent, the checks on its
//! answer (upstream's `VerifyAdmissionResponse`), and the error a denial becomes (upstream's
//! `ToStatusErr`).

use base64::Engine;
use http::StatusCode;
use serde_json::{Value, json};

use crate::error::{ApiError, Cause};

pub const API_VERSION: &str = "admission.k8s.io/v1";

/// Who the request is from. Corral has no authentication yet: every client is the admin of
/// the admin kubeconfig.
pub fn user_info() -> Value {
    json!({
        "username": "system:admin",
        "groups": ["system:masters", "system:authenticated"],
    })
}

/// A webhook's answer, checked.
#[derive(Debug)]
pub struct Answer {
    pub allowed: bool,
    /// `response.status`, for a denial.
    pub status: Option<Value>,
    /// The decoded JSON patch (mutating webhooks only).
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
}

/// Checks a response body against the request's uid. The error is the reason the answer is
/// unusable, ready to follow `failed calling webhook "<name>": `.
pub fn verify(uid: &str, mutating: bool, body: &[u8]) -> Result<Answer, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| {
        format!("failed to call webhook: the response is not an AdmissionReview: {e}")
    })?;
    let invalid = |detail: &str| format!("received invalid webhook response: {detail}");
    let Some(review_map) = review.as_object() else {
        return Err(
            "failed to call webhook: the response is not an AdmissionReview: not a JSON object"
                .into(),
        );
    };
    let response = match review_map.get("response") {
        Some(Value::Object(response)) => response,
        _ => return Err(invalid("webhook response was absent")),
    };
    let response_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if response_uid != uid {
        return Err(invalid(&format!(
            "expected response.uid={uid:?}, got {response_uid:?}"
        )));
    }
    let api_version = review_map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = review_map.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != API_VERSION || kind != "AdmissionReview" {
        let shown = match api_version.split_once('/') {
            Some(_) => api_version.to_string(),
            None => format!("/{api_version}"),
        };
        return Err(invalid(&format!(
            "expected webhook response of {API_VERSION}, Kind=AdmissionReview, got {shown}, Kind={kind}"
        )));
    }
    let patch = match response.get("patch") {
        None | Some(Value::Null) => None,
        Some(Value::String(encoded)) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|e| {
                    format!("failed to call webhook: response.patch is not base64: {e}")
                })?,
        )
        .filter(|bytes: &Vec<u8>| !bytes.is_empty()),
        Some(_) => {
            return Err(
                "failed to call webhook: response.patch is not a base64 string".to_string(),
            );
        }
    };
    let patch_type = match response.get("patchType") {
        None | Some(Value::Null) => None,
        Some(Value::String(patch_type)) => Some(patch_type.as_str()),
        Some(_) => return Err(invalid("response.patchType is not a string")),
    };
    if mutating {
        match (&patch, patch_type) {
            (Some(_), None) => {
                return Err(invalid(
                    "webhook returned response.patch but not response.patchType",
                ));
            }
            (None, Some(_)) => {
                return Err(invalid(
                    "webhook returned response.patchType but not response.patch",
                ));
            }
            (_, Some("")) => {
                return Err(invalid(
                    "webhook returned invalid response.patchType of \"\"",
                ));
            }
            (Some(_), Some(other)) if other != "JSONPatch" => {
                return Err(format!("unsupported patch type {other:?}"));
            }
            _ => {}
        }
    } else {
        if patch.is_some() {
            return Err(invalid("validating webhook may not return response.patch"));
        }
        if patch_type.is_some() {
            return Err(invalid(
                "validating webhook may not return response.patchType",
            ));
        }
    }
    let warnings = match response.get("warnings") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|w| w.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| invalid("response.warnings is not a list of strings"))?,
        Some(_) => return Err(invalid("response.warnings is not a list of strings")),
    };
    Ok(Answer {
        allowed: response
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        warnings,
    })
}

/// The reasons of `metav1.StatusReason`; a webhook's reason outside them is dropped.
const REASONS: [&str; 19] = [
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// The refusal a denial becomes, as upstream's `ToStatusErr` makes it: the webhook's status
/// with a code of at least 400 and the message `admission webhook "<name>" denied the
/// request: <message or reason>`.
pub fn denial(webhook: &str, status: Option<&Value>) -> ApiError {
    let empty = json!({});
    let status = status.unwrap_or(&empty);
    let text = |field: &str| status.get(field).and_then(Value::as_str).unwrap_or("");
    let denied_by = format!("admission webhook \"{webhook}\" denied the request");
    let message = match (text("message"), text("reason")) {
        (message, _) if !message.is_empty() => format!("{denied_by}: {message}"),
        (_, reason) if !reason.is_empty() => format!("{denied_by}: {reason}"),
        _ => format!("{denied_by} without explanation"),
    };
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| *code >= 400)
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or(StatusCode::BAD_REQUEST);
    let reason = REASONS
        .iter()
        .find(|r| **r == text("reason"))
        .copied()
        .unwrap_or("");
    let mut error = ApiError::new(code, reason, message);
    if let Some(details) = status.get("details").and_then(Value::as_object) {
        let text = |field: &str| {
            details
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        error.name = text("name");
        error.group = text("group");
        error.kind = text("kind");
        error.retry_after_seconds = details
            .get("retryAfterSeconds")
            .and_then(Value::as_u64)
            .and_then(|s| u32::try_from(s).ok());
        if let Some(causes) = details.get("causes").and_then(Value::as_array) {
            error.causes = causes
                .iter()
                .map(|cause| {
                    let text = |field: &str| {
                        cause
                            .get(field)
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    Cause {
                        reason: text("reason"),
                        message: text("message"),
                        field: text("field"),
                    }
                })
                .collect();
        }
    }
    error
}
