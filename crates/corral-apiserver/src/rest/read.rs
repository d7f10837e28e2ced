//! Reads: get and list (continue tokens, field and label filters, the revision a list reads at).

use std::sync::Arc;

use base64::Engine;
use corral_store::{RangeRequest, Revision};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::query::Query;
use crate::registry::ResourceInfo;
use crate::server::ApiState;
use crate::{object, selector};

use super::*;

pub async fn get(state: &ApiState, target: &Target, name: &str) -> Result<Value, ApiError> {
    let kv = state
        .store
        .get(&target.key(name), None)
        .await?
        .ok_or_else(|| ApiError::not_found(target.subject(name)))?;
    let mut object = object::decode_stored(&kv)?;
    target.to_request_version(&mut object);
    Ok(object)
}

/// A continue token, as kube-apiserver encodes it: base64 of
/// `{"v":"meta.k8s.io/v1","rv":<list revision>,"start":"<next key, relative to the prefix>"}`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct ContinueToken {
    v: String,
    rv: Revision,
    start: String,
}

pub(super) fn encode_continue(revision: Revision, start: &str) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv: revision,
        start: start.to_string(),
    };
    // fields_text: a continue token.
    base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&token).unwrap())
}

pub(super) fn decode_continue(raw: &str) -> Result<ContinueToken, ApiError> {
    let invalid = || ApiError::bad_request(format!("invalid continue token: {raw:?}"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(raw))
        .map_err(|_| invalid())?;
    let token: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if token.v != "meta.k8s.io/v1" || token.rv <= 0 || token.start.contains("..") {
        return Err(invalid());
    }
    Ok(token)
}

/// The list and watch filters of a request.
pub struct Filter {
    pub labels: Option<selector::LabelSelector>,
    pub fields: Option<selector::FieldSelector>,
    pub resource: Arc<ResourceInfo>,
}

impl Filter {
    pub fn from_query(query: &Query, resource: &Arc<ResourceInfo>) -> Result<Filter, ApiError> {
        let labels = match query.label_selector.as_deref() {
            Some(raw) if !raw.trim().is_empty() => Some(
                selector::LabelSelector::parse(raw)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?,
            ),
            _ => None,
        };
        let fields = match query.field_selector.as_deref() {
            Some(raw) if !raw.trim().is_empty() => {
                let parsed = selector::FieldSelector::parse(raw)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                for field in parsed.fields() {
                    if !field_supported(resource, field) {
                        return Err(ApiError::bad_request(format!(
                            "field label not supported: {field}"
                        )));
                    }
                }
                Some(parsed)
            }
            _ => None,
        };
        Ok(Filter {
            labels,
            fields,
            resource: resource.clone(),
        })
    }

    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    pub fn matches(&self, object: &Value) -> bool {
        if let Some(labels) = &self.labels
            && !labels.matches_object(object)
        {
            return false;
        }
        if let Some(fields) = &self.fields
            && !fields.matches(|field| field_value(&self.resource, object, field))
        {
            return false;
        }
        true
    }
}

pub(super) fn is_core_event(resource: &ResourceInfo) -> bool {
    resource.group.is_empty() && resource.plural == "events"
}

pub(super) fn field_supported(resource: &ResourceInfo, field: &str) -> bool {
    match field {
        "metadata.name" => true,
        "metadata.namespace" => resource.namespaced,
        "type" if resource.plural == "secrets" && resource.group.is_empty() => true,
        "status.phase" if resource.plural == "namespaces" && resource.group.is_empty() => true,
        "spec.nodeName"
        | "status.phase"
        | "spec.restartPolicy"
        | "spec.schedulerName"
        | "spec.serviceAccountName"
        | "status.podIP"
        | "status.nominatedNodeName"
            if resource.plural == "pods" && resource.group.is_empty() =>
        {
            true
        }
        "spec.unschedulable" if resource.plural == "nodes" && resource.group.is_empty() => true,
        _ if is_core_event(resource) => matches!(
            field,
            "involvedObject.kind"
                | "involvedObject.namespace"
                | "involvedObject.name"
                | "involvedObject.uid"
                | "involvedObject.apiVersion"
                | "involvedObject.resourceVersion"
                | "involvedObject.fieldPath"
                | "reason"
                | "reportingComponent"
                | "source"
                | "type"
        ),
        _ => false,
    }
}

pub(super) fn field_value(resource: &ResourceInfo, object: &Value, field: &str) -> Option<String> {
    let string_at = |path: &[&str]| -> Option<String> {
        let mut node = object;
        for segment in path {
            node = node.get(*segment)?;
        }
        node.as_str().map(str::to_string)
    };
    match field {
        "metadata.name" => Some(object::name(object).unwrap_or("").to_string()),
        "metadata.namespace" => Some(object::namespace(object).unwrap_or("").to_string()),
        "source" if is_core_event(resource) => {
            Some(string_at(&["source", "component"]).unwrap_or_default())
        }
        other => Some(string_at(&other.split('.').collect::<Vec<_>>()).unwrap_or_default()),
    }
}

pub async fn list(state: &ApiState, target: &Target, query: &Query) -> Result<Value, ApiError> {
    let filter = Filter::from_query(query, &target.resource)?;
    let prefix = target.collection_prefix();
    let (revision, mut start) = match &query.continue_token {
        Some(raw) => {
            let token = decode_continue(raw)?;
            (Some(token.rv), Some(format!("{prefix}{}", token.start)))
        }
        None => (list_revision(state, query).await?, None),
    };
    let limit = query.limit.unwrap_or(0);
    let mut items = Vec::new();
    let mut served_at = revision;
    let mut continue_from = None;
    'pages: loop {
        let page = state
            .store
            .range(RangeRequest {
                prefix: prefix.clone(),
                start: start.clone(),
                limit: if limit > 0 { limit + 1 } else { 0 },
                revision: served_at,
            })
            .await
            .map_err(|e| match e {
                corral_store::Error::Compacted { .. } if query.continue_token.is_some() => {
                    ApiError::gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
                }
                other => other.into(),
            })?;
        served_at = Some(page.revision);
        let count = page.kvs.len();
        for (index, kv) in page.kvs.iter().enumerate() {
            if limit > 0 && items.len() == limit {
                continue_from = Some(kv.key.clone());
                break 'pages;
            }
            // Labels first, from the stored bytes: most objects of a label-selected list are
            // not selected, and skipping their full decode is most of the list's cost.
            let unselected = filter.labels.as_ref().is_some_and(|labels| {
                object::stored_labels(&kv.value).is_some_and(|stored| !labels.matches(&stored))
            });
            if !unselected {
                let mut object = object::decode_stored(kv)?;
                if filter.matches(&object) {
                    target.to_request_version(&mut object);
                    items.push(object);
                }
            }
            if index + 1 == count && !page.more {
                break 'pages;
            }
        }
        match page.kvs.last() {
            Some(last) if page.more => start = Some(format!("{}\0", last.key)),
            _ => break,
        }
    }
    let revision = served_at.expect("at least one page was read");
    // Keep the list revision the client asked for when it is newer than what the store saw
    // (a NotOlderThan read is served at the current revision, which is at least that).
    let mut metadata = Map::new();
    metadata.insert("resourceVersion".into(), json!(revision.to_string()));
    if let Some(next) = continue_from {
        let relative = next.strip_prefix(&prefix).unwrap_or(&next);
        metadata.insert(
            "continue".into(),
            json!(encode_continue(revision, relative)),
        );
    }
    Ok(json!({
        "kind": target.resource.list_kind,
        "apiVersion": target.resource.api_version(&target.version),
        "metadata": metadata,
        "items": items,
    }))
}

/// The revision a list without a continue token reads at (`None`: the current one), after
/// kube-apiserver's resourceVersion / resourceVersionMatch rules.
pub(super) async fn list_revision(
    state: &ApiState,
    query: &Query,
) -> Result<Option<Revision>, ApiError> {
    let requested = match query.resource_version.as_deref() {
        None => {
            if query.resource_version_match.is_some() {
                return Err(ApiError::bad_request(
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            return Ok(None);
        }
        Some(raw) => object::parse_resource_version(raw)?,
    };
    match query.resource_version_match.as_deref() {
        Some("Exact") => {
            if requested == 0 {
                return Err(ApiError::bad_request(
                    "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
            Ok(Some(requested))
        }
        None | Some("NotOlderThan") => {
            if requested > 0 {
                let current = state.store.current_revision().await?;
                if requested > current {
                    return Err(ApiError::timeout(format!(
                        "Too large resource version: {requested}, current: {current}"
                    )));
                }
            }
            Ok(None)
        }
        Some(other) => Err(ApiError::bad_request(format!(
            "resourceVersionMatch {other:?} is invalid: must be Exact or NotOlderThan"
        ))),
    }
}
