//! Limits against overload and slow or greedy clients, as kube-apiserver sets them:
//! in-flight requests (`--max-requests-inflight`, `--max-mutating-requests-inflight`: beyond
//! them kube's 429 `TooManyRequests` with `Retry-After: 1`; long-running requests, watches and
//! followed logs, are not counted, nor are `system:masters`' requests), watches per user, and
//! the time a connection may take to send a request's headers or to go on with its body.
//! The request body's size limit is `body.rs`'s. Only authenticated requests over the network
//! are counted: in-process clients are the server's own controllers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::rbac::rules::Attributes;

/// The settings; `0` means no limit for the counts, as kube's flags.
#[derive(Clone, Debug)]
pub struct LimitsConfig {
    /// kube-apiserver's `--max-requests-inflight` (default 400).
    pub max_requests_inflight: usize,
    /// kube-apiserver's `--max-mutating-requests-inflight` (default 200).
    pub max_mutating_requests_inflight: usize,
    /// Open watches per user.
    pub max_watches_per_user: usize,
    /// How long a connection may take to send a request's headers, and may stay idle between
    /// requests (HTTPS; kube-apiserver's `ReadHeaderTimeout` is 32 s).
    pub header_read_timeout: Duration,
    /// The longest pause within a request's body before the request fails.
    pub body_idle_timeout: Duration,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            max_watches_per_user: 1000,
            header_read_timeout: Duration::from_secs(32),
            body_idle_timeout: Duration::from_secs(60),
        }
    }
}

/// The counters of a server.
pub(crate) struct Limits {
    config: LimitsConfig,
    read_only: Arc<Semaphore>,
    mutating: Arc<Semaphore>,
    watches: Arc<Mutex<HashMap<String, usize>>>,
}

/// What a request holds while it is served.
pub(crate) enum Slot {
    None,
    InFlight(#[allow(dead_code)] OwnedSemaphorePermit),
    Watch(WatchSlot),
}

pub(crate) struct WatchSlot {
    user: String,
    watches: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut watches = self.watches.lock().unwrap();
        if let Some(count) = watches.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                watches.remove(&self.user);
            }
        }
    }
}

/// kube-apiserver's `tooManyRequests`.
fn too_many_requests() -> ApiError {
    let mut error = ApiError::new(
        http::StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "Too many requests, please try again later.",
    );
    error.retry_after_seconds = Some(1);
    error
}

fn permits(limit: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(if limit == 0 {
        Semaphore::MAX_PERMITS
    } else {
        limit
    }))
}

impl Limits {
    pub(crate) fn new(config: LimitsConfig) -> Limits {
        Limits {
            read_only: permits(config.max_requests_inflight),
            mutating: permits(config.max_mutating_requests_inflight),
            watches: Default::default(),
            config,
        }
    }

    /// Takes the request's slot, or refuses it with kube's 429.
    pub(crate) fn admit<B>(
        &self,
        user: &UserInfo,
        request: &http::Request<B>,
    ) -> Result<Slot, ApiError> {
        if user
            .groups
            .iter()
            .any(|group| group == crate::auth::MASTERS_GROUP)
        {
            return Ok(Slot::None);
        }
        let attributes = &Attributes::from_request(request.method(), request.uri());
        let query = request.uri().query();
        if attributes.verb == "watch" {
            let limit = self.config.max_watches_per_user;
            let mut watches = self.watches.lock().unwrap();
            let count = watches.entry(user.name.clone()).or_default();
            if limit != 0 && *count >= limit {
                return Err(too_many_requests());
            }
            *count += 1;
            return Ok(Slot::Watch(WatchSlot {
                user: user.name.clone(),
                watches: self.watches.clone(),
            }));
        }
        if is_long_running(attributes, query) {
            return Ok(Slot::None);
        }
        let pool = match attributes.verb.as_str() {
            "create" | "update" | "patch" | "delete" | "deletecollection" => &self.mutating,
            _ => &self.read_only,
        };
        match pool.clone().try_acquire_owned() {
            Ok(permit) => Ok(Slot::InFlight(permit)),
            Err(_) => Err(too_many_requests()),
        }
    }

    /// The request's body, failing when it pauses longer than the body timeout.
    pub(crate) fn limit_body(&self, request: axum::extract::Request) -> axum::extract::Request {
        if matches!(
            *request.method(),
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        ) {
            return request;
        }
        let timeout = self.config.body_idle_timeout;
        let (parts, body) = request.into_parts();
        let stream =
            tokio_stream::StreamExt::timeout(body.into_data_stream(), timeout).map(move |item| {
                match item {
                    Ok(chunk) => chunk.map_err(axum::Error::new),
                    Err(_) => Err(axum::Error::new(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no data for {timeout:?}"),
                    ))),
                }
            });
        axum::extract::Request::from_parts(parts, Body::from_stream(stream))
    }

    pub(crate) fn header_read_timeout(&self) -> Duration {
        self.config.header_read_timeout
    }
}

/// kube's long-running requests: watches, followed logs, proxy, exec, attach, port-forward.
fn is_long_running(attributes: &Attributes, query: Option<&str>) -> bool {
    matches!(attributes.verb.as_str(), "watch" | "proxy")
        || matches!(
            attributes.subresource.as_str(),
            "proxy" | "exec" | "attach" | "portforward"
        )
        || (attributes.subresource == "log"
            && query.is_some_and(|query| query.split('&').any(|p| p == "follow=true")))
}

/// A watch's slot is given back when its stream ends; other slots when the answer is ready.
pub(crate) fn hold(slot: Slot, response: Response) -> Response {
    match slot {
        Slot::Watch(slot) => {
            let (parts, body) = response.into_parts();
            let stream = body.into_data_stream().map(move |chunk| {
                let _ = &slot;
                chunk
            });
            Response::from_parts(parts, Body::from_stream(stream))
        }
        Slot::None | Slot::InFlight(_) => response,
    }
}
