//! The audit log, as kube-apiserver's `--audit-policy-file` and `--audit-log-path`: every
//! request the policy (`policy.rs`) gives a level above `None` is written as `audit.k8s.io/v1`
//! `Event`s, one JSON line each (`writer.rs`, off the request's path): `RequestReceived` once
//! the user is known, `ResponseStarted` for a watch when its headers go out, and
//! `ResponseComplete` (for a watch, when it ends). `Metadata` records who did what to which
//! object and the answer's status; `Request` adds the request's body, `RequestResponse` the
//! answer's body too (never a watch's stream). A Secret at `Metadata` is recorded without its
//! data, which is in no field of the event.
//!
//! `server::handle` drives it: [`Auditor::begin`] before authentication, then
//! [`Pending::authenticated`], [`Pending::capture_request`] and [`Pending::finish`].

use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::auth::UserInfo;
use crate::rbac::rules::Attributes;

pub mod policy;
#[cfg(test)]
mod tests;
mod writer;

pub use policy::{Decision, Level, Policy, PolicyError, Stage};
pub use writer::Rotation;

/// The policy and the log of a server.
pub struct Auditor {
    policy: Policy,
    writer: writer::Writer,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor").finish_non_exhaustive()
    }
}

impl Auditor {
    /// Events of `policy` written to `log_path` (`-` is standard output), rotated as
    /// `rotation` says.
    pub fn new(policy: Policy, log_path: &Path, rotation: Rotation) -> std::io::Result<Auditor> {
        Ok(Auditor {
            policy,
            writer: writer::Writer::open(log_path, rotation)?,
        })
    }

    /// Starts the record of one request: what is known before authentication.
    pub(crate) fn begin(self: &Arc<Self>, request: &axum::extract::Request) -> Pending {
        let attributes = Attributes::from_request(request.method(), request.uri());
        let headers = request.headers();
        let mut source_ips: Vec<String> = Vec::new();
        if let Some(forwarded) = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok()) {
            source_ips.extend(
                forwarded
                    .split(',')
                    .map(str::trim)
                    .filter(|ip| ip.parse::<std::net::IpAddr>().is_ok())
                    .map(str::to_string),
            );
        }
        if let Some(real) = headers
            .get("x-real-ip")
            .and_then(|v| v.to_str().ok())
            .filter(|ip| ip.parse::<std::net::IpAddr>().is_ok())
        {
            source_ips.push(real.to_string());
        }
        if let Some(axum::extract::ConnectInfo(peer)) =
            request
                .extensions()
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        {
            source_ips.push(peer.ip().to_string());
        }
        source_ips.dedup();
        let mut event = Map::new();
        event.insert("kind".into(), "Event".into());
        event.insert("apiVersion".into(), "audit.k8s.io/v1".into());
        event.insert("level".into(), "None".into());
        event.insert("auditID".into(), uuid::Uuid::new_v4().to_string().into());
        event.insert("stage".into(), "RequestReceived".into());
        event.insert(
            "requestURI".into(),
            request
                .uri()
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .into(),
        );
        event.insert("verb".into(), attributes.verb.clone().into());
        event.insert("user".into(), json!({}));
        event.insert("sourceIPs".into(), source_ips.into());
        if let Some(agent) = headers
            .get(http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
        {
            event.insert("userAgent".into(), agent.into());
        }
        if attributes.resource_request {
            let mut object_ref = Map::new();
            for (field, value) in [
                ("resource", &attributes.resource),
                ("namespace", &attributes.namespace),
                ("name", &attributes.name),
                ("apiGroup", &attributes.group),
                ("apiVersion", &attributes.version),
                ("subresource", &attributes.subresource),
            ] {
                if !value.is_empty() {
                    object_ref.insert(field.into(), value.clone().into());
                }
            }
            event.insert("objectRef".into(), object_ref.into());
        }
        event.insert("requestReceivedTimestamp".into(), now().into());
        Pending {
            auditor: self.clone(),
            long_running: attributes.verb == "watch"
                || (attributes.subresource == "log"
                    && request
                        .uri()
                        .query()
                        .is_some_and(|q| q.contains("follow=true"))),
            attributes,
            event,
            decision: None,
        }
    }

    fn emit(&self, event: &Map<String, Value>, stage: Stage) {
        let mut event = event.clone();
        event.insert("stage".into(), stage.name().into());
        event.insert("stageTimestamp".into(), now().into());
        let mut line = crate::object::fields_text::to_vec(&Value::Object(event));
        line.push(b'\n');
        self.writer.write(line);
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn user_json(user: &UserInfo) -> Value {
    let mut map = Map::new();
    map.insert("username".into(), user.name.clone().into());
    if !user.uid.is_empty() {
        map.insert("uid".into(), user.uid.clone().into());
    }
    if !user.groups.is_empty() {
        map.insert("groups".into(), user.groups.clone().into());
    }
    map.into()
}

/// One request's record while it is served.
pub(crate) struct Pending {
    auditor: Arc<Auditor>,
    attributes: Attributes,
    long_running: bool,
    event: Map<String, Value>,
    /// Known once the user is.
    decision: Option<Decision>,
}

impl Pending {
    /// The user is known (`impersonated` is whom it acts as, if anyone): the policy decides
    /// the level, and `RequestReceived` is written.
    pub(crate) fn authenticated(&mut self, user: &UserInfo, impersonated: Option<&UserInfo>) {
        let decision = self.auditor.policy.decide(user, &self.attributes);
        self.event.insert("user".into(), user_json(user));
        if let Some(impersonated) = impersonated {
            self.event
                .insert("impersonatedUser".into(), user_json(impersonated));
        }
        self.event
            .insert("level".into(), decision.level.name().into());
        if decision.records(Stage::RequestReceived) {
            self.auditor.emit(&self.event, Stage::RequestReceived);
        }
        self.decision = Some(decision);
    }

    /// RBAC's answer, as kube's `authorization.k8s.io/decision` annotation.
    pub(crate) fn authorized(&mut self, allowed: bool) {
        self.event.insert(
            "annotations".into(),
            json!({ "authorization.k8s.io/decision": if allowed { "allow" } else { "forbid" } }),
        );
    }

    fn level(&self) -> Level {
        self.decision.as_ref().map_or(Level::None, |d| d.level)
    }

    /// At `Request` level and above, reads the body to record it and gives the request back
    /// with it; a body over the limit is kube's 413.
    pub(crate) async fn capture_request(
        &mut self,
        request: axum::extract::Request,
    ) -> Result<axum::extract::Request, Response> {
        if self.level() < Level::Request {
            return Ok(request);
        }
        let (parts, body) = request.into_parts();
        let bytes = crate::body::read(body)
            .await
            .map_err(IntoResponse::into_response)?;
        let content_type = crate::body::content_type(&parts.headers);
        if let Some(object) = self.object(&content_type, &bytes) {
            self.name_object(&object);
            self.event.insert("requestObject".into(), object);
        }
        Ok(axum::extract::Request::from_parts(parts, Body::from(bytes)))
    }

    /// A body as JSON: an object in any media type the server reads, or a JSON patch.
    fn object(&self, content_type: &str, bytes: &[u8]) -> Option<Value> {
        let mut value = match crate::body::decode_object(content_type, bytes) {
            Ok(value) => value,
            Err(_) if content_type.ends_with("yaml") => crate::body::decode_yaml(bytes).ok()?,
            Err(_) => serde_json::from_slice(bytes).ok()?,
        };
        if self
            .decision
            .as_ref()
            .is_some_and(|d| d.omit_managed_fields)
        {
            strip_managed_fields(&mut value);
        }
        Some(value)
    }

    /// A create names its object in the body only (kube fills `objectRef.name` from it).
    fn name_object(&mut self, object: &Value) {
        let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) else {
            return;
        };
        if let Some(object_ref) = self
            .event
            .get_mut("objectRef")
            .and_then(Value::as_object_mut)
            && !object_ref.contains_key("name")
            && self.attributes.verb == "create"
        {
            object_ref.insert("name".into(), name.into());
        }
    }

    /// Records the answer (`ResponseComplete`; for a watch `ResponseStarted` now and
    /// `ResponseComplete` when its stream ends) and gives it back.
    pub(crate) async fn finish(mut self, response: Response) -> Response {
        let decision = match self.decision.take() {
            Some(decision) => decision,
            // Not authenticated: the policy sees no user.
            None => {
                let decision = self.auditor.policy.decide(
                    &UserInfo {
                        name: String::new(),
                        uid: String::new(),
                        groups: Vec::new(),
                    },
                    &self.attributes,
                );
                self.event
                    .insert("level".into(), decision.level.name().into());
                decision
            }
        };
        if decision.level == Level::None {
            return response;
        }
        let code = response.status().as_u16();
        let mut status = json!({ "metadata": {}, "code": code });
        let content_type = crate::body::content_type(response.headers());
        let decodable = matches!(
            content_type.as_str(),
            "application/json" | "application/vnd.kubernetes.protobuf"
        );
        let wants_body = !self.long_running
            && decodable
            && (code >= 400 || decision.level == Level::RequestResponse);
        let response = if wants_body {
            let (parts, body) = response.into_parts();
            let bytes = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default();
            if let Some(object) = self.object(&content_type, &bytes) {
                self.name_object(&object);
                if code >= 400 && object.get("kind") == Some(&Value::from("Status")) {
                    for field in ["status", "message", "reason", "details"] {
                        if let Some(value) = object.get(field) {
                            status[field] = value.clone();
                        }
                    }
                }
                if decision.level == Level::RequestResponse {
                    self.event.insert("responseObject".into(), object);
                }
            }
            Response::from_parts(parts, Body::from(bytes))
        } else {
            response
        };
        self.event.insert("responseStatus".into(), status);
        if !self.long_running {
            if decision.records(Stage::ResponseComplete) {
                self.auditor.emit(&self.event, Stage::ResponseComplete);
            }
            return response;
        }
        if decision.records(Stage::ResponseStarted) {
            self.auditor.emit(&self.event, Stage::ResponseStarted);
        }
        if !decision.records(Stage::ResponseComplete) {
            return response;
        }
        // The watch's end is when its body is dropped.
        let complete = Complete {
            auditor: self.auditor,
            event: self.event,
        };
        let (parts, body) = response.into_parts();
        let stream = body.into_data_stream().map(move |chunk| {
            let _ = &complete;
            chunk
        });
        Response::from_parts(parts, Body::from_stream(stream))
    }
}

/// Writes `ResponseComplete` when dropped.
struct Complete {
    auditor: Arc<Auditor>,
    event: Map<String, Value>,
}

impl Drop for Complete {
    fn drop(&mut self) {
        self.auditor.emit(&self.event, Stage::ResponseComplete);
    }
}

fn strip_managed_fields(value: &mut Value) {
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            strip_managed_fields(item);
        }
    }
}
