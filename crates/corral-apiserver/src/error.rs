//! Every failure becomes a Kubernetes `Status`: handlers return `Result<_, ApiError>` and
//! `ApiError` renders the status body with the right code, reason and field causes.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

/// One field-level cause of an `Invalid` or `BadRequest` status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

/// A failed API request, as kube-apiserver would answer it.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub code: StatusCode,
    pub reason: &'static str,
    pub message: String,
    /// `details` of the Status: the object the request was about.
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: Option<u32>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code.as_u16(),
            self.reason,
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

/// Which object an error is about: (plural resource, group, name).
#[derive(Clone, Copy, Debug)]
pub struct Subject<'a> {
    pub resource: &'a str,
    pub group: &'a str,
    pub name: &'a str,
}

impl Subject<'_> {
    /// `widgets.example.com` for a grouped resource, `configmaps` for the core group.
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

impl ApiError {
    pub fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after_seconds: None,
        }
    }

    fn about(mut self, subject: Subject<'_>) -> Self {
        self.name = Some(subject.name.to_string());
        self.group = Some(subject.group.to_string());
        self.kind = Some(subject.resource.to_string());
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    pub fn not_found(subject: Subject<'_>) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!(
                "{} \"{}\" not found",
                subject.qualified_resource(),
                subject.name
            ),
        )
        .about(subject)
    }

    /// A path that names no resource at all.
    pub fn no_route() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn already_exists(subject: Subject<'_>) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!(
                "{} \"{}\" already exists",
                subject.qualified_resource(),
                subject.name
            ),
        )
        .about(subject)
    }

    pub fn conflict(subject: Subject<'_>, why: &str) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {why}",
                subject.qualified_resource(),
                subject.name
            ),
        )
        .about(subject)
    }

    /// The optimistic-concurrency failure clients retry on.
    pub fn stale(subject: Subject<'_>) -> Self {
        Self::conflict(
            subject,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn invalid(subject: Subject<'_>, kind: &str, causes: Vec<Cause>) -> Self {
        let details = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect::<Vec<_>>();
        // The message names the group kind, as `apierrors.NewInvalid` prints a `GroupKind`
        // (`Widget.example.com`, `ConfigMap`); a kind already qualified is left as it is.
        let qualified = if subject.group.is_empty() || kind.contains('.') {
            kind.to_string()
        } else {
            format!("{kind}.{}", subject.group)
        };
        let message = if details.len() == 1 {
            format!(
                "{qualified} \"{}\" is invalid: {}",
                subject.name, details[0]
            )
        } else {
            format!(
                "{qualified} \"{}\" is invalid: [{}]",
                subject.name,
                details.join(", ")
            )
        };
        let mut error =
            Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", message).about(subject);
        // kube-apiserver puts the kind, not the resource, into the details of Invalid.
        error.kind = Some(kind.to_string());
        error.causes = causes;
        error
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            message,
        )
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_ACCEPTABLE, "NotAcceptable", message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            message,
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "Expired", message)
    }

    pub fn forbidden(subject: Subject<'_>, why: &str) -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!(
                "{} \"{}\" is forbidden: {why}",
                subject.qualified_resource(),
                subject.name
            ),
        )
        .about(subject)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GATEWAY_TIMEOUT, "Timeout", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        let mut error = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            message,
        );
        error.retry_after_seconds = Some(1);
        error
    }

    /// The `Status` object (also used as the object of a watch `ERROR` event).
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code.as_u16(),
        });
        let mut details = serde_json::Map::new();
        if let Some(name) = &self.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = &self.group {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &self.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !self.causes.is_empty() {
            details.insert(
                "causes".into(),
                self.causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect(),
            );
        }
        if let Some(seconds) = self.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(seconds));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // fields_text: a Status.
        let body = serde_json::to_vec(&self.status()).unwrap_or_default();
        let mut response = (
            self.code,
            [(http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        if let Some(seconds) = self.retry_after_seconds {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

impl From<corral_store::Error> for ApiError {
    fn from(error: corral_store::Error) -> Self {
        use corral_store::Error as E;
        match &error {
            E::Compacted { .. } => {
                ApiError::gone("The resourceVersion for the provided list is too old.")
            }
            E::FutureRevision { requested, .. } => {
                ApiError::timeout(format!("Too large resource version: {requested}"))
            }
            E::ValueTooLarge { .. } => ApiError::too_large(error.to_string()),
            E::Closed => ApiError::unavailable("the storage is shutting down"),
            // The remaining variants are caught by the callers (they know the object); one
            // reaching here is a server bug or a backend failure. Log the chain, answer 500.
            _ => {
                tracing::error!(error = %error, source = ?std::error::Error::source(&error), "Storage failed");
                ApiError::internal(format!("storage failed: {error}"))
            }
        }
    }
}
