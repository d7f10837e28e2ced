//! The `authorization.k8s.io/v1` reviews, create-only and never stored, as kube-apiserver
//! answers them: `SelfSubjectAccessReview` (may I?), `SubjectAccessReview` (may they?),
//! `LocalSubjectAccessReview` (may they, in this namespace?) and `SelfSubjectRulesReview`
//! (what may I in this namespace?), which `kubectl auth can-i [--list]` sends. The request to
//! create a review is itself authorized first (`system:basic-user` lets everyone
//! authenticated create the self reviews).

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, NonResourceRule, ResourceAttributes, ResourceRule,
    SubjectAccessReviewStatus, SubjectRulesReviewStatus,
};
use serde_json::{Value, json};

use super::rules::Attributes;
use crate::auth::{MASTERS_GROUP, UserInfo};
use crate::error::{ApiError, Cause};
use crate::rest::json_response;
use crate::server::ApiState;

/// The API group of the reviews.
pub const GROUP: &str = "authorization.k8s.io";

/// Answers `POST /apis/authorization.k8s.io/v1/[namespaces/NS/]RESOURCE`; `None` when the
/// path names no review.
pub async fn serve(
    state: &ApiState,
    user: &UserInfo,
    rest: &[&str],
    headers: &http::HeaderMap,
    body: Body,
) -> Option<Result<Response, ApiError>> {
    let (namespace, resource) = match rest {
        [resource] => (None, *resource),
        ["namespaces", namespace, resource] => (Some(*namespace), *resource),
        _ => return None,
    };
    let kind = match (namespace, resource) {
        (None, "selfsubjectaccessreviews") => "SelfSubjectAccessReview",
        (None, "subjectaccessreviews") => "SubjectAccessReview",
        (None, "selfsubjectrulesreviews") => "SelfSubjectRulesReview",
        (Some(_), "localsubjectaccessreviews") => "LocalSubjectAccessReview",
        _ => return None,
    };
    Some(answer(state, user, kind, namespace, headers, body).await)
}

async fn answer(
    state: &ApiState,
    user: &UserInfo,
    kind: &str,
    namespace: Option<&str>,
    headers: &http::HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = crate::body::read(body).await?;
    let mut review = crate::body::decode_object(&crate::body::content_type(headers), &bytes)?;
    let spec = review.get("spec").cloned().unwrap_or(json!({}));
    let status = match kind {
        "SelfSubjectRulesReview" => {
            let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
            to_value(&rules_review(state, user, namespace))
        }
        "SelfSubjectAccessReview" => {
            let attributes = attributes(kind, &spec, None)?;
            to_value(&access_review(state, user, &attributes))
        }
        _ => {
            let subject = subject(kind, &spec)?;
            let attributes = attributes(kind, &spec, namespace)?;
            to_value(&access_review(state, &subject, &attributes))
        }
    };
    let object = review.as_object_mut().expect("checked above");
    object.insert("apiVersion".into(), json!(format!("{GROUP}/v1")));
    object.insert("kind".into(), json!(kind));
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.insert("creationTimestamp".into(), Value::Null);
    }
    object.insert("status".into(), status);
    Ok(json_response(StatusCode::CREATED, &review))
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("review statuses serialize")
}

fn invalid(kind: &str, message: &str, field: &str) -> ApiError {
    let causes = vec![Cause {
        reason: "FieldValueInvalid".into(),
        message: message.into(),
        field: field.into(),
    }];
    ApiError::invalid(
        crate::error::Subject {
            resource: "",
            group: GROUP,
            name: "",
        },
        kind,
        causes,
    )
}

/// The user a SubjectAccessReview asks about (its groups as given: no
/// `system:authenticated` is added).
fn subject(kind: &str, spec: &Value) -> Result<UserInfo, ApiError> {
    let name = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let groups: Vec<String> = spec
        .get("groups")
        .and_then(|g| serde_json::from_value(g.clone()).ok())
        .unwrap_or_default();
    if name.is_empty() && groups.is_empty() {
        return Err(invalid(
            kind,
            "Invalid value: \"\": at least one of user or group must be specified",
            "spec.user",
        ));
    }
    Ok(UserInfo {
        name: name.into(),
        uid: spec.get("uid").and_then(Value::as_str).unwrap_or("").into(),
        groups,
    })
}

/// The attributes a review asks about; a LocalSubjectAccessReview's namespace is its path's.
fn attributes(kind: &str, spec: &Value, namespace: Option<&str>) -> Result<Attributes, ApiError> {
    let resource: Option<ResourceAttributes> = spec
        .get("resourceAttributes")
        .and_then(|r| serde_json::from_value(r.clone()).ok());
    let non_resource: Option<NonResourceAttributes> = spec
        .get("nonResourceAttributes")
        .and_then(|r| serde_json::from_value(r.clone()).ok());
    match (resource, non_resource) {
        (Some(resource), None) => {
            let text = |field: Option<String>| field.unwrap_or_default();
            let resource_namespace = text(resource.namespace);
            if let Some(namespace) = namespace
                && !resource_namespace.is_empty()
                && resource_namespace != namespace
            {
                return Err(invalid(
                    kind,
                    &format!(
                        "Invalid value: {resource_namespace:?}: must match metadata.namespace"
                    ),
                    "spec.resourceAttributes.namespace",
                ));
            }
            Ok(Attributes {
                verb: text(resource.verb),
                resource_request: true,
                group: text(resource.group),
                version: text(resource.version),
                resource: text(resource.resource),
                subresource: text(resource.subresource),
                namespace: namespace.map_or(resource_namespace, str::to_string),
                name: text(resource.name),
                ..Default::default()
            })
        }
        (None, Some(non_resource)) => Ok(Attributes {
            verb: non_resource.verb.unwrap_or_default(),
            path: non_resource.path.unwrap_or_default(),
            ..Default::default()
        }),
        _ => Err(invalid(
            kind,
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
            "spec.resourceAttributes",
        )),
    }
}

fn access_review(
    state: &ApiState,
    user: &UserInfo,
    attributes: &Attributes,
) -> SubjectAccessReviewStatus {
    SubjectAccessReviewStatus {
        allowed: super::authorize(state, user, attributes),
        ..Default::default()
    }
}

/// What `user` may do in `namespace`: the rules of its bindings there and cluster-wide,
/// split into resource and non-resource rules (kube's `RulesFor`); `system:masters` may do
/// everything.
fn rules_review(state: &ApiState, user: &UserInfo, namespace: &str) -> SubjectRulesReviewStatus {
    let mut status = SubjectRulesReviewStatus::default();
    let mut rules = state.rbac.index.snapshot().rules_for(user, namespace);
    if !state.config.rbac || user.groups.iter().any(|g| g == MASTERS_GROUP) {
        let everything = json!([
            {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
            {"verbs": ["*"], "nonResourceURLs": ["*"]},
        ]);
        rules.splice(
            0..0,
            serde_json::from_value::<Vec<_>>(everything).unwrap_or_default(),
        );
    }
    for rule in rules {
        if rule
            .non_resource_urls
            .as_ref()
            .is_some_and(|u| !u.is_empty())
        {
            status.non_resource_rules.push(NonResourceRule {
                verbs: rule.verbs,
                non_resource_urls: rule.non_resource_urls,
            });
        } else {
            status.resource_rules.push(ResourceRule {
                verbs: rule.verbs,
                api_groups: rule.api_groups,
                resources: rule.resources,
                resource_names: rule.resource_names,
            });
        }
    }
    status
}
