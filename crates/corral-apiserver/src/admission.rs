//! Admission: what happens to an object between decoding and storing it, in kube-apiserver's
//! order — mutating admission, then schema defaulting, pruning and validation (for custom
//! resources), then validating admission. Every write (create, update, patch, apply) passes
//! through [`admit`] once per attempt, with the object in its storage shape.
//!
//! A kind with rules in [`ServerConfig::admission`](crate::ServerConfig) (Cluster API's kinds,
//! whose upstream admission is webhooks in the providers) is admitted as those webhooks would:
//! its defaulting after the schema's defaults and before schema validation, its validation
//! after schema validation, on writes of the object itself (upstream registers them for the
//! resource, not its `status` or `scale` subresources); a write of the `scale` subresource runs
//! the kind's scale validation instead (upstream's KubeadmControlPlane `ScaleValidator`), whose
//! refusal is a webhook's denial. Its field errors are one 422 `Invalid`
//! `Status`, as a webhook answering `apierrors.NewInvalid` gives. For every custom resource with
//! a scale subresource, a negative value (or one above the int32 range) at `specReplicasPath` is
//! refused, as apiextensions' `ValidateScaleSpec` does on every write but status ones.

use serde_json::Value;

use corral_admission::{ErrorList, KindRules};

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
    let target = request.target;
    let rules = match target.subresource {
        None => state
            .config
            .admission
            .get(&target.resource.group, &target.resource.kind),
        Some(_) => None,
    };
    let default = |object: &mut Value| -> Result<(), ApiError> {
        let rules = rules.expect("called only with rules");
        rules
            .default(object, request.old)
            .map_err(|message| denial(request, "default", &message))
    };
    let mutate: Option<crate::schema::Mutate<'_>> = match rules {
        Some(_) => Some(&default),
        None => None,
    };
    warnings.extend(crate::schema::admit(request, object, mutate)?);
    if target.subresource.as_deref() != Some("status")
        && let Some(paths) = &target.resource.scale
        && let Some(error) = crate::scale::validate_spec_replicas(object, paths)
    {
        return Err(invalid(request, object, vec![error]));
    }
    if target.subresource.as_deref() == Some("scale")
        && let Some(rules) = state
            .config
            .admission
            .get(&target.resource.group, &target.resource.kind)
        && let Err(message) = rules.validate_scale(object)
    {
        return Err(denial(request, "validation-scale", &message));
    }
    if let Some(rules) = rules {
        let errors = validate(rules, request, object);
        if !errors.is_empty() {
            return Err(invalid(request, object, errors));
        }
    }
    warnings.extend(crate::builtin_fields::admit(request, object)?);
    warnings.extend(crate::webhook::validate(state, request, object).await?);
    Ok(warnings)
}

fn validate(rules: &dyn KindRules, request: &Request<'_>, object: &Value) -> ErrorList {
    match request.old {
        Some(old) => rules.validate_update(old, object),
        None => rules.validate_create(object),
    }
}

/// The 422 of field errors about `object`.
fn invalid(request: &Request<'_>, object: &Value, errors: ErrorList) -> ApiError {
    let name = crate::object::name(object).unwrap_or("");
    ApiError::invalid(
        request.target.subject(name),
        &request.target.resource.kind,
        errors.iter().map(crate::schema::field::to_cause).collect(),
    )
}

/// A kind's defaulting that refuses the write, as controller-runtime answers for a defaulting
/// webhook's error: 403, in the words kube-apiserver uses for a webhook's denial, the webhook
/// named as upstream names it (`default.machinedeployment.cluster.x-k8s.io`).
fn denial(request: &Request<'_>, verb: &str, message: &str) -> ApiError {
    let resource = &request.target.resource;
    let webhook = format!("{verb}.{}.{}", resource.kind.to_lowercase(), resource.group);
    ApiError::new(
        http::StatusCode::FORBIDDEN,
        "Forbidden",
        format!("admission webhook \"{webhook}\" denied the request: {message}"),
    )
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
