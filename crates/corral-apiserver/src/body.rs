//! Request bodies: size limit, content types, JSON and YAML decoding.

use axum::body::Body;
use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;

use crate::error::ApiError;

/// kube-apiserver's `MaxRequestBodyBytes`.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The media type of a request body, without parameters, lower-cased.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

pub async fn read(body: Body) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            // `to_bytes` reports the limit through a `LengthLimitError` in the source chain.
            let mut source: Option<&dyn std::error::Error> = Some(&e);
            while let Some(error) = source {
                if error.is::<http_body_util::LengthLimitError>() {
                    return ApiError::too_large(format!(
                        "the request body is larger than the limit of {MAX_BODY_BYTES} bytes"
                    ));
                }
                source = error.source();
            }
            ApiError::bad_request(format!("reading the request body failed: {e}"))
        })
}

/// Decodes an object body of a create or update. An empty content type means JSON, as in
/// kube-apiserver (the Python client sends none).
pub fn decode_object(content_type: &str, bytes: &[u8]) -> Result<Value, ApiError> {
    let value = match content_type {
        "" | "application/json" | "*/*" => decode_json(bytes)?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => decode_yaml(bytes)?,
        // client-go's typed clients send built-in kinds as protobuf.
        "application/vnd.kubernetes.protobuf" => {
            crate::protobuf::decode(bytes).map_err(|e| match e {
                crate::protobuf::ProtobufError::UnsupportedKind { .. } => {
                    ApiError::unsupported_media_type(e.to_string())
                }
                _ => ApiError::bad_request(format!(
                    "the request body is not valid kubernetes protobuf: {e}"
                )),
            })?
        }
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {other})"
            )));
        }
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    Ok(value)
}

pub fn decode_json(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

pub fn decode_yaml(bytes: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::bad_request("the request body is not valid UTF-8"))?;
    if text.trim().is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    // JSON is YAML; parse it as JSON first so that JSON bodies get JSON's error messages
    // and nesting limit.
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let value: Value = serde_saphyr::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid YAML: {e}")))?;
    check_depth(&value, 0)?;
    Ok(value)
}

/// serde_json stops at 128 levels; YAML input gets the same limit.
fn check_depth(value: &Value, depth: usize) -> Result<(), ApiError> {
    if depth > 128 {
        return Err(ApiError::bad_request(
            "the request body is nested too deeply (more than 128 levels)",
        ));
    }
    match value {
        Value::Array(items) => items.iter().try_for_each(|v| check_depth(v, depth + 1)),
        Value::Object(map) => map.values().try_for_each(|v| check_depth(v, depth + 1)),
        _ => Ok(()),
    }
}
