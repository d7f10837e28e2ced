//! [`ProviderError`]: a failed call as the contract describes it, and its two wire forms (a
//! gRPC status, an HTTP answer).

use std::time::Duration;

use crate::v1::ErrorCode;

/// A call the provider refused or failed, with the contract's class of failure.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{}: {message}", code.as_str_name())]
pub struct ProviderError {
    pub code: ErrorCode,
    pub message: String,
    /// How long the caller should wait before calling again; `None`: its own backoff.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ProviderError {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// `INVALID_CONFIG`: the configuration is wrong; the same call will fail again.
    pub fn invalid_config(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidConfig, message)
    }

    /// `NOT_FOUND`: no such machine (or cluster).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// `UNAVAILABLE`: try again later.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unavailable, message)
    }

    /// `INTERNAL`: anything else.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// The same error, asking the caller to wait `after` before calling again.
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// The answer to an optional method the provider does not implement.
    pub(crate) fn unimplemented(method: &str) -> Self {
        Self::internal(format!("the provider does not implement {method}"))
    }

    /// The gRPC status of the error (see the table in `docs/provider-protocol.md`).
    pub fn to_status(&self) -> tonic::Status {
        let code = match self.code {
            ErrorCode::InvalidConfig => tonic::Code::InvalidArgument,
            ErrorCode::NotFound => tonic::Code::NotFound,
            ErrorCode::Unavailable => tonic::Code::Unavailable,
            ErrorCode::Internal | ErrorCode::Unspecified => tonic::Code::Internal,
        };
        let mut status = tonic::Status::new(code, self.message.clone());
        if let Some(after) = self.retry_after
            && let Ok(value) = after.as_secs().to_string().parse()
        {
            status
                .metadata_mut()
                .insert(crate::RETRY_AFTER_METADATA, value);
        }
        status
    }

    /// The error a provider's gRPC status stands for.
    pub fn from_status(status: &tonic::Status) -> Self {
        let code = match status.code() {
            tonic::Code::InvalidArgument => ErrorCode::InvalidConfig,
            tonic::Code::NotFound => ErrorCode::NotFound,
            tonic::Code::Unavailable => ErrorCode::Unavailable,
            _ => ErrorCode::Internal,
        };
        let retry_after = status
            .metadata()
            .get(crate::RETRY_AFTER_METADATA)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .filter(|seconds| *seconds > 0)
            .map(Duration::from_secs);
        ProviderError {
            code,
            message: status.message().to_string(),
            retry_after,
        }
    }

    /// The HTTP status the SDK's server answers the error with.
    pub fn http_status(&self) -> http::StatusCode {
        match self.code {
            ErrorCode::InvalidConfig => http::StatusCode::BAD_REQUEST,
            ErrorCode::NotFound => http::StatusCode::NOT_FOUND,
            ErrorCode::Unavailable => http::StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Internal | ErrorCode::Unspecified => http::StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The body of the error's HTTP answer.
    pub fn to_message(&self) -> crate::v1::Error {
        crate::v1::Error {
            code: self.code as i32,
            message: self.message.clone(),
            retry_after_seconds: self
                .retry_after
                .map(|after| i32::try_from(after.as_secs()).unwrap_or(i32::MAX))
                .unwrap_or_default(),
        }
    }

    /// The error a non-2xx HTTP answer stands for: its body when that is the contract's error
    /// message, else a class chosen by the HTTP status.
    pub fn from_http(status: http::StatusCode, body: &[u8]) -> Self {
        if let Ok(error) = serde_json::from_slice::<crate::v1::Error>(body)
            && let Ok(code) = ErrorCode::try_from(error.code)
            && code != ErrorCode::Unspecified
        {
            return ProviderError {
                code,
                message: error.message,
                retry_after: (error.retry_after_seconds > 0)
                    .then(|| Duration::from_secs(error.retry_after_seconds as u64)),
            };
        }
        let code = match status {
            http::StatusCode::BAD_GATEWAY
            | http::StatusCode::SERVICE_UNAVAILABLE
            | http::StatusCode::GATEWAY_TIMEOUT => ErrorCode::Unavailable,
            _ => ErrorCode::Internal,
        };
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        Self::new(code, format!("HTTP {status}: {text}"))
    }
}
