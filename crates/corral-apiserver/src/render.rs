//! How read responses are rendered for the client's Accept header: the object as JSON, or
//! (to come) a `Table` with the resource's printer columns, or `PartialObjectMetadata`.

use axum::response::Response;
use http::{HeaderMap, StatusCode};
use serde_json::Value;

use crate::query::Query;
use crate::rest::{Target, json_response};

/// A single object (GET).
pub fn object(_target: &Target, _headers: &HeaderMap, _query: &Query, value: &Value) -> Response {
    json_response(StatusCode::OK, value)
}

/// A list (GET on a collection).
pub fn list(_target: &Target, _headers: &HeaderMap, _query: &Query, value: &Value) -> Response {
    json_response(StatusCode::OK, value)
}
