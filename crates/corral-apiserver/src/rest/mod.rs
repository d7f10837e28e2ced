//! The REST verbs on resources: get, list, create, update, patch, delete, deletecollection
//! (watch is in `watch.rs`), with kube-apiserver's semantics for metadata the server owns,
//! optimistic concurrency, finalizers and the status subresource.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::Value;

use crate::error::Subject;
use crate::registry::ResourceInfo;

/// What a resource request addresses, parsed from its path.
#[derive(Clone, Debug)]
pub struct Target {
    pub resource: Arc<ResourceInfo>,
    /// The version the client asked for (responses are in this version).
    pub version: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl Target {
    pub fn subject<'a>(&'a self, name: &'a str) -> Subject<'a> {
        Subject {
            resource: &self.resource.plural,
            group: &self.resource.group,
            name,
        }
    }

    fn key(&self, name: &str) -> String {
        self.resource.key(self.namespace.as_deref(), name)
    }

    /// The key prefix of a collection: the resource, narrowed to the namespace if any.
    pub fn collection_prefix(&self) -> String {
        match &self.namespace {
            Some(namespace) if self.resource.namespaced => {
                format!("{}{namespace}/", self.resource.key_prefix())
            }
            _ => self.resource.key_prefix(),
        }
    }

    /// Rewrites an object read from storage into the requested version (conversion
    /// strategy None: only `apiVersion` changes).
    pub fn to_request_version(&self, object: &mut Value) {
        crate::conversion::from_storage(&self.resource, object);
        crate::schema::on_read(&self.resource, &self.version, object);
        self.set_request_type(object);
    }

    /// [`Self::to_request_version`] of an object this request has just admitted. When the
    /// request is in the storage version, admission pruned and defaulted the object with the
    /// very schema a read applies, so the read's pruning and defaulting (a walk of the whole
    /// object) would change nothing and is skipped.
    pub fn admitted_to_request_version(&self, object: &mut Value) {
        if self.version != self.resource.storage_version() {
            return self.to_request_version(object);
        }
        crate::conversion::from_storage(&self.resource, object);
        self.set_request_type(object);
    }

    fn set_request_type(&self, object: &mut Value) {
        if let Some(map) = object.as_object_mut() {
            map.insert(
                "apiVersion".into(),
                Value::String(self.resource.api_version(&self.version)),
            );
            map.insert("kind".into(), Value::String(self.resource.kind.clone()));
        }
    }

    /// Whether objects read from storage must be converted for this request (otherwise
    /// stored bytes can be sent as they are).
    pub fn needs_conversion(&self) -> bool {
        self.version != self.resource.storage_version()
            || crate::conversion::converts(&self.resource)
            || crate::schema::changes_reads(&self.resource)
    }
}

pub fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = crate::object::fields_text::to_vec(value);
    (
        code,
        [(http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

mod create;
mod delete;
mod read;
mod update;

pub use create::*;
pub use delete::*;
pub use read::*;
pub use update::*;

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A status write built from the request's object gives what copying the current object
    /// and taking only status and managedFields from the request gives.
    #[test]
    fn status_update_keeps_everything_but_status_and_managed_fields() {
        let current = json!({
            "apiVersion": "x/v1", "kind": "K",
            "metadata": {"name": "a", "labels": {"l": "1"}, "managedFields": [{"manager": "m"}]},
            "spec": {"size": 1},
            "status": {"ready": false},
        });
        let requests = [
            json!({"apiVersion": "x/v1", "kind": "K",
                   "metadata": {"name": "a", "labels": {"l": "1"}, "managedFields": [{"manager": "n"}]},
                   "spec": {"size": 1}, "status": {"ready": true}}),
            json!({"apiVersion": "x/v1", "kind": "K",
                   "metadata": {"name": "a", "labels": {"l": "2"}},
                   "spec": {"size": 9}, "extra": 1}),
            json!({"kind": "K", "metadata": "odd", "status": {"ready": true}}),
            json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a", "labels": {"l": "1"}},
                   "status": {"ready": true}}),
        ];
        for request in requests {
            assert_eq!(
                super::status_update(&current, request.clone()),
                super::status_update_by_copy(&current, request.clone()),
                "{request}"
            );
        }
    }
}
