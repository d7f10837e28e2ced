//! The watch verb: newline-delimited JSON events over a streaming HTTP response, fed by the
//! resource's `Cacher`.
//!
//! Semantics of kube-apiserver: without a resourceVersion (or with "0") the watch starts with
//! a synthetic ADDED event per existing object; with `sendInitialEvents=true` those are
//! followed by a bookmark annotated `k8s.io/initial-events-end`; with a resourceVersion it
//! resumes after it, and one the cache no longer has is answered in-band with an ERROR event
//! carrying a 410 Expired `Status` (never an HTTP 410, which clients would retry forever).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use corral_store::{EventKind, RangeRequest, Revision};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::object;
use crate::query::Query;
use crate::rest::{Filter, Target};
use crate::server::ApiState;
use crate::watch_cache::{CachedEvent, Served, Subscription};

/// Where a watch starts.
enum Start {
    /// Replay the current state as ADDED events, then follow.
    Initial { end_bookmark: bool },
    /// Follow changes after this revision.
    After(Revision),
}

fn start_of(query: &Query) -> Result<Start, ApiError> {
    let rv = match query.resource_version.as_deref() {
        None => None,
        Some(raw) => Some(object::parse_resource_version(raw)?),
    };
    match query.send_initial_events {
        Some(true) => {
            if query.resource_version_match.as_deref() != Some("NotOlderThan") {
                return Err(ApiError::bad_request(
                    "sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
                ));
            }
            if !query.allow_watch_bookmarks {
                return Err(ApiError::bad_request(
                    "sendInitialEvents requires allowWatchBookmarks=true",
                ));
            }
            Ok(Start::Initial { end_bookmark: true })
        }
        Some(false) => Ok(Start::After(rv.unwrap_or(-1))),
        None => match rv {
            None | Some(0) => Ok(Start::Initial {
                end_bookmark: false,
            }),
            Some(rv) => Ok(Start::After(rv)),
        },
    }
}

/// The bookmark interval and the default watch length, as in kube-apiserver.
#[derive(Clone, Debug)]
pub struct WatchTimings {
    pub bookmark_interval: Duration,
    /// A watch without timeoutSeconds lasts a random time in [min, 2×min).
    pub min_request_timeout: Duration,
}

impl Default for WatchTimings {
    fn default() -> Self {
        WatchTimings {
            bookmark_interval: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
        }
    }
}

/// `encoder` renders event objects as Tables or `PartialObjectMetadata` (see `render.rs`);
/// `None` sends them as they are.
pub async fn watch(
    state: Arc<ApiState>,
    target: Target,
    query: Query,
    encoder: Option<crate::render::EventEncoder>,
) -> Result<Response, ApiError> {
    let filter = Filter::from_query(&query, &target.resource)?;
    let start = start_of(&query)?;
    let cacher = state.hub.cacher(&target.resource.key_prefix()).await?;
    let timeout = match query.timeout_seconds {
        Some(seconds) => Duration::from_secs(seconds),
        None => {
            let min = state.config.watch.min_request_timeout;
            min + min.mul_f64(rand::random::<f64>())
        }
    };

    let (initial, after, end_bookmark) = match start {
        Start::Initial { end_bookmark } => {
            let (objects, revision) = current_state(&state, &target, &filter).await?;
            (objects, revision, end_bookmark)
        }
        Start::After(-1) => (Vec::new(), cacher.latest(), false),
        Start::After(revision) => (Vec::new(), revision, false),
    };
    let subscription = cacher.subscribe(after);

    let (sender, receiver) = mpsc::channel::<Result<Bytes, Infallible>>(64);
    let writer = Writer {
        target,
        filter,
        allow_bookmarks: query.allow_watch_bookmarks,
        sender,
        encoder,
    };
    let bookmark_interval = state.config.watch.bookmark_interval;
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let subscription = match subscription {
            Ok(subscription) => subscription,
            Err(too_old) => {
                let error = ApiError::gone(format!(
                    "too old resource version: {} ({})",
                    too_old.requested, too_old.oldest
                ));
                let _ = writer.send_raw("ERROR", &error.status()).await;
                return;
            }
        };
        let _ = writer
            .run(
                subscription,
                initial,
                after,
                end_bookmark,
                deadline,
                bookmark_interval,
            )
            .await;
    });

    let stream = tokio_stream::wrappers::ReceiverStream::new(receiver);
    Ok(Response::builder()
        .status(http::StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(stream))
        .expect("a valid response"))
}

/// The current objects matching the filter, and the revision they were read at.
async fn current_state(
    state: &ApiState,
    target: &Target,
    filter: &Filter,
) -> Result<(Vec<Value>, Revision), ApiError> {
    let page = state
        .store
        .range(RangeRequest {
            prefix: target.collection_prefix(),
            ..Default::default()
        })
        .await?;
    let mut objects = Vec::new();
    for kv in &page.kvs {
        let object = object::decode_stored(kv)?;
        if filter.matches(&object) {
            objects.push(object);
        }
    }
    Ok((objects, page.revision))
}

/// The client went away.
struct Closed;

struct Writer {
    target: Target,
    filter: Filter,
    allow_bookmarks: bool,
    sender: mpsc::Sender<Result<Bytes, Infallible>>,
    encoder: Option<crate::render::EventEncoder>,
}

impl Writer {
    async fn send_line(&self, event_type: &str, object_json: &[u8]) -> Result<(), Closed> {
        let mut line = BytesMut::with_capacity(object_json.len() + 32);
        line.put_slice(b"{\"type\":\"");
        line.put_slice(event_type.as_bytes());
        line.put_slice(b"\",\"object\":");
        line.put_slice(object_json);
        line.put_slice(b"}\n");
        self.sender
            .send(Ok(line.freeze()))
            .await
            .map_err(|_| Closed)
    }

    async fn send_raw(&self, event_type: &str, object: &Value) -> Result<(), Closed> {
        let json = crate::object::fields_text::to_vec(object);
        self.send_line(event_type, &json).await
    }

    /// Sends an object of the store, converted to the requested version.
    async fn send_object(&self, event_type: &str, object: &Value) -> Result<(), Closed> {
        self.send_line(event_type, &self.converted_json(object))
            .await
    }

    /// An object of the store converted to the requested version (and encoding), serialized.
    fn converted_json(&self, object: &Value) -> Vec<u8> {
        if let Some(json) = self
            .encoder
            .as_ref()
            .and_then(|encoder| encoder.metadata_json(object))
        {
            return json;
        }
        let mut object = object.clone();
        self.target.to_request_version(&mut object);
        let object = match &self.encoder {
            Some(encoder) => encoder.encode(&object),
            None => object,
        };
        crate::object::fields_text::to_vec(&object)
    }

    async fn send_bookmark(&self, revision: Revision, initial_end: bool) -> Result<(), Closed> {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let bookmark = json!({
            "kind": self.target.resource.kind,
            "apiVersion": self.target.resource.api_version(&self.target.version),
            "metadata": metadata,
        });
        self.send_raw("BOOKMARK", &bookmark).await
    }

    fn in_scope(&self, object: &Value) -> bool {
        match &self.target.namespace {
            Some(namespace) if self.target.resource.namespaced => {
                object::namespace(object) == Some(namespace.as_str())
            }
            _ => true,
        }
    }

    fn passes(&self, object: &Value) -> bool {
        self.in_scope(object) && self.filter.matches(object)
    }

    /// Sends one cached event as the client's filter sees it: an object that starts or stops
    /// matching is ADDED or DELETED.
    async fn send_event(&self, event: &CachedEvent) -> Result<(), Closed> {
        let now = self.passes(&event.object);
        if event.kind == EventKind::Delete {
            // A delete's object is its last state: the same as its previous state.
            if now {
                return self.send_cached("DELETED", event).await;
            }
            return Ok(());
        }
        let Some(prev) = &event.prev else {
            if now {
                return self.send_cached("ADDED", event).await;
            }
            return Ok(());
        };
        // Without a label or field filter the previous state passes exactly when the object
        // does (a namespace never changes): only a filtering watcher needs it decoded, and
        // one with labels alone only its labels.
        let before = || match (&self.filter.labels, &self.filter.fields) {
            (None, None) => now,
            (Some(labels), None) => {
                self.in_scope(&event.object) && prev.labels_match(labels).unwrap_or(false)
            }
            _ => prev.get().is_some_and(|prev| self.passes(prev)),
        };
        if now {
            let event_type = if before() { "MODIFIED" } else { "ADDED" };
            return self.send_cached(event_type, event).await;
        }
        if before()
            && let Some(prev) = prev.get()
        {
            // It left the filter: its last state that matched, at the event's revision.
            let mut prev = Value::clone(prev);
            object::set_resource_version(&mut prev, event.revision);
            return self.send_object("DELETED", &prev).await;
        }
        Ok(())
    }

    /// Sends `event`'s object as `event_type`: its stored JSON when this watcher reads the
    /// storage version unconverted, else converted once per event for every watcher of this
    /// definition and version.
    async fn send_cached(&self, event_type: &str, event: &CachedEvent) -> Result<(), Closed> {
        if self.encoder.is_some() {
            return self.send_object(event_type, &event.object).await;
        }
        if !self.target.needs_conversion() {
            return self.send_line(event_type, &event.object_json).await;
        }
        let json = match event.served.get() {
            Some(served)
                if Arc::ptr_eq(&served.resource, &self.target.resource)
                    && served.version == self.target.version =>
            {
                served.json.clone()
            }
            _ => {
                let json = Bytes::from(self.converted_json(&event.object));
                let _ = event.served.set(Served {
                    resource: self.target.resource.clone(),
                    version: self.target.version.clone(),
                    json: json.clone(),
                });
                json
            }
        };
        self.send_line(event_type, &json).await
    }

    async fn run(
        &self,
        subscription: Subscription,
        initial: Vec<Value>,
        after: Revision,
        end_bookmark: bool,
        deadline: tokio::time::Instant,
        bookmark_interval: Duration,
    ) -> Result<(), Closed> {
        let Subscription {
            backlog,
            mut receiver,
            latest,
        } = subscription;
        for object in &initial {
            self.send_object("ADDED", object).await?;
        }
        if end_bookmark {
            self.send_bookmark(after, true).await?;
        }
        let mut progress = after;
        for event in &backlog {
            progress = progress.max(event.revision);
            self.send_event(event).await?;
        }
        progress = progress.max(latest);
        let mut next_bookmark = tokio::time::Instant::now() + bookmark_interval;
        loop {
            tokio::select! {
                event = receiver.recv() => {
                    let Some(event) = event else {
                        // Dropped as too slow, or the resource is no longer served.
                        return Ok(());
                    };
                    if event.revision <= progress {
                        continue;
                    }
                    progress = event.revision;
                    self.send_event(&event).await?;
                }
                _ = tokio::time::sleep_until(next_bookmark), if self.allow_bookmarks => {
                    self.send_bookmark(progress, false).await?;
                    next_bookmark = tokio::time::Instant::now() + bookmark_interval;
                }
                _ = tokio::time::sleep_until(deadline) => {
                    if self.allow_bookmarks {
                        self.send_bookmark(progress, false).await?;
                    }
                    return Ok(());
                }
                _ = self.sender.closed() => return Err(Closed),
            }
        }
    }
}
