//! The HTTP/JSON server: `POST /<Method>` with the request message as canonical JSON, the
//! answer as canonical JSON, an error as a non-2xx answer with `{"code", "message",
//! "retryAfterSeconds"}` (axum).

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tokio::net::TcpListener;

use super::ServeError;
use crate::{Provider, ProviderError};

/// The largest request body read: bootstrap data is tens of kilobytes.
const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// Serves `provider` over HTTP/JSON on `listener` until `shutdown` resolves.
pub async fn serve_http<P: Provider>(
    provider: Arc<P>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    axum::serve(listener, router(provider))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServeError::Http)
}

/// The routes of [`serve_http`], to mount under a prefix of a larger server.
pub fn router<P: Provider>(provider: Arc<P>) -> Router {
    Router::new()
        .route("/{method}", post(call::<P>))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .with_state(provider)
}

/// Decodes the body as the method's request, calls the provider, encodes its answer.
macro_rules! dispatch {
    ($provider:expr, $method:expr, $body:expr, { $($name:literal => $call:ident,)* }) => {
        match $method {
            $(
                $name => match decode($name, $body) {
                    Ok(request) => answer($provider.$call(request).await),
                    Err(error) => error_response(&error),
                },
            )*
            other => {
                let error = ProviderError::internal(format!(
                    "no method {other:?} in corral.provider.v1.InfrastructureProvider"
                ));
                let mut response = error_response(&error);
                *response.status_mut() = http::StatusCode::NOT_IMPLEMENTED;
                response
            }
        }
    };
}

async fn call<P: Provider>(
    State(provider): State<Arc<P>>,
    Path(method): Path<String>,
    body: Bytes,
) -> Response {
    dispatch!(provider, method.as_str(), &body, {
        "GetInfo" => get_info,
        "ValidateConfig" => validate_config,
        "ReconcileCluster" => reconcile_cluster,
        "DeleteCluster" => delete_cluster,
        "CreateMachine" => create_machine,
        "GetMachine" => get_machine,
        "DeleteMachine" => delete_machine,
        "ListMachines" => list_machines,
        "RebootMachine" => reboot_machine,
    })
}

/// A request message from its JSON; an empty body is the empty message.
fn decode<T: serde::de::DeserializeOwned>(method: &str, body: &[u8]) -> Result<T, ProviderError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|error| {
        ProviderError::internal(format!("the body is not a {method} request: {error}"))
    })
}

fn answer<T: serde::Serialize>(result: Result<T, ProviderError>) -> Response {
    match result {
        Ok(message) => json_response(http::StatusCode::OK, &message),
        Err(error) => error_response(&error),
    }
}

fn error_response(error: &ProviderError) -> Response {
    json_response(error.http_status(), &error.to_message())
}

fn json_response<T: serde::Serialize>(status: http::StatusCode, message: &T) -> Response {
    let body = serde_json::to_vec(message).expect("a message serializes");
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}
