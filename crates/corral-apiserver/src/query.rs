//! Query-string parameters of API requests.
//!
//! Clients differ in how they build query strings: kube-rs sends `?&limit=500`, kubectl
//! percent-encodes `=` and `,`, and some repeat keys. Empty pairs are ignored; for a repeated
//! key the first value wins, as in Go's `url.Values.Get`.

use crate::error::ApiError;

/// The parameters this server understands. Unknown parameters are ignored, like
/// kube-apiserver does for most of them.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pub watch: bool,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub field_validation: Option<String>,
    pub force: Option<bool>,
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub grace_period_seconds: Option<i64>,
    pub pretty: bool,
    /// What the rows of a Table carry: None, Metadata (the default) or Object.
    pub include_object: Option<String>,
}

fn parse_bool(key: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "true" | "1" | "True" | "TRUE" | "t" | "T" => Ok(true),
        "false" | "0" | "False" | "FALSE" | "f" | "F" | "" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "invalid value for {key}: {value:?} is not a boolean"
        ))),
    }
}

fn parse_number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, ApiError> {
    value.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid value for {key}: {value:?} is not a number"
        ))
    })
}

impl Query {
    pub fn parse(raw: Option<&str>) -> Result<Query, ApiError> {
        let mut query = Query::default();
        let mut seen = std::collections::HashSet::new();
        for pair in raw.unwrap_or("").split('&') {
            if pair.is_empty() {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = decode(key)?;
            if !seen.insert(key.clone()) {
                continue;
            }
            let value = decode(value)?;
            let value = value.as_str();
            match key.as_str() {
                "watch" => query.watch = parse_bool(&key, value)?,
                "labelSelector" => query.label_selector = Some(value.to_string()),
                "fieldSelector" => query.field_selector = Some(value.to_string()),
                "limit" => {
                    let limit: i64 = parse_number(&key, value)?;
                    query.limit = (limit > 0).then_some(limit as usize);
                }
                "continue" => query.continue_token = (!value.is_empty()).then(|| value.to_string()),
                "resourceVersion" => {
                    query.resource_version = (!value.is_empty()).then(|| value.to_string())
                }
                "resourceVersionMatch" => {
                    query.resource_version_match = (!value.is_empty()).then(|| value.to_string())
                }
                "timeoutSeconds" => query.timeout_seconds = Some(parse_number(&key, value)?),
                "allowWatchBookmarks" => query.allow_watch_bookmarks = parse_bool(&key, value)?,
                "sendInitialEvents" => query.send_initial_events = Some(parse_bool(&key, value)?),
                "dryRun" => match value {
                    "All" => query.dry_run = true,
                    "" => {}
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "invalid dry run value {other:?}: the only supported value is \"All\""
                        )));
                    }
                },
                "fieldManager" => query.field_manager = Some(value.to_string()),
                "fieldValidation" => match value {
                    "Strict" | "Warn" | "Ignore" | "" => {
                        query.field_validation = (!value.is_empty()).then(|| value.to_string())
                    }
                    other => {
                        return Err(ApiError::bad_request(format!(
                            "fieldValidation {other:?} is invalid: must be one of Strict, Warn, Ignore"
                        )));
                    }
                },
                "force" => query.force = Some(parse_bool(&key, value)?),
                "propagationPolicy" => query.propagation_policy = Some(value.to_string()),
                "orphanDependents" => query.orphan_dependents = Some(parse_bool(&key, value)?),
                "gracePeriodSeconds" => {
                    query.grace_period_seconds = Some(parse_number(&key, value)?)
                }
                "pretty" => query.pretty = parse_bool(&key, value)?,
                "includeObject" => {
                    query.include_object = (!value.is_empty()).then(|| value.to_string())
                }
                _ => {}
            }
        }
        Ok(query)
    }
}

/// Percent-decoding with `+` as space, as in `application/x-www-form-urlencoded`.
fn decode(raw: &str) -> Result<String, ApiError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "malformed percent-encoding in query {raw:?}"
                        ))
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .map_err(|_| ApiError::bad_request(format!("query {raw:?} is not valid UTF-8")))
}
