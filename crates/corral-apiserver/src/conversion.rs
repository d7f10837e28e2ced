//! Resources served in one shape and stored in another.
//!
//! `events.k8s.io/v1` Events are stored as core `v1` Events, as in kube-apiserver, so that an
//! event recorded through either API (kube-rs' recorder uses events.k8s.io, `kubectl describe`
//! reads core/v1) is seen through both. The field mapping is upstream's
//! (kubernetes `pkg/apis/events/v1/conversion.go`).

use serde_json::{Map, Value};

use crate::registry::ResourceInfo;

/// (events.k8s.io/v1 field, core/v1 field) pairs whose names differ.
const EVENT_FIELDS: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

fn is_events_v1(resource: &ResourceInfo) -> bool {
    resource.builtin && resource.group == "events.k8s.io" && resource.plural == "events"
}

/// Whether objects of this resource are stored in another resource's shape.
pub fn converts(resource: &ResourceInfo) -> bool {
    is_events_v1(resource)
}

fn rename(object: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = object.remove(from) {
        object.insert(to.to_string(), value);
    }
}

/// A stored object in the shape the resource is served in.
pub fn from_storage(resource: &ResourceInfo, object: &mut Value) {
    if !is_events_v1(resource) {
        return;
    }
    if let Some(map) = object.as_object_mut() {
        for (served, stored) in EVENT_FIELDS {
            rename(map, stored, served);
        }
    }
}

/// A request body in the shape it is stored in.
pub fn to_storage(resource: &ResourceInfo, object: &mut Value) {
    if !is_events_v1(resource) {
        return;
    }
    if let Some(map) = object.as_object_mut() {
        for (served, stored) in EVENT_FIELDS {
            rename(map, served, stored);
        }
    }
}

/// `apiVersion` and `kind` of stored objects of this resource.
pub fn storage_type(resource: &ResourceInfo) -> (String, String) {
    if is_events_v1(resource) {
        return ("v1".into(), "Event".into());
    }
    (
        resource.api_version(resource.storage_version()),
        resource.kind.clone(),
    )
}
