//! Admission: what happens to an object between decoding and storing it, in kube-apiserver's
//! order — mutating admission, then schema defaulting, pruning and validation (for custom
//! resources), then validating admission. Every write (create, update, patch, apply) passes
//! through [`admit`] once per attempt, with the object in its storage shape.

use serde_json::Value;

use crate::error::ApiError;
use crate::query::Query;
use crate::rest::Target;
use crate::server::ApiState;

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
}

impl Operation {
    /// The name used in AdmissionReview requests and webhook rules.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
        }
    }
}

/// One write as admission sees it.
pub struct Request<'a> {
    pub operation: Operation,
    pub target: &'a Target,
    pub query: &'a Query,
    /// The stored object, for updates.
    pub old: Option<&'a Value>,
}

/// Admits `object` (possibly changing it) or refuses the write. Returns the warnings to send
/// back in `Warning` headers.
pub async fn admit(
    state: &ApiState,
    request: &Request<'_>,
    object: &mut Value,
) -> Result<Vec<String>, ApiError> {
    let mut warnings = crate::webhook::mutate(state, request, object).await?;
    warnings.extend(crate::schema::admit(request, object)?);
    warnings.extend(crate::builtin_fields::admit(request, object)?);
    warnings.extend(crate::webhook::validate(state, request, object).await?);
    Ok(warnings)
}

/// Adds `Warning: 299 - "<text>"` headers, as kube-apiserver does.
pub fn with_warnings(
    mut response: axum::response::Response,
    warnings: &[String],
) -> axum::response::Response {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = http::HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}
