//! The simulated cloud served over HTTP, for [`super::RemoteCloud`] clients in other processes
//! (`corral cloud`). The protocol is in [`super::remote`]'s docs.
//!
//! The server holds no state of its own: it turns each request into one call of the [`Cloud`]
//! it serves (an [`super::InProcessCloud`] in `corral cloud`) and its result into the answer, so
//! that the guarantees of the trait (idempotent calls, keys chosen by the caller) hold over the
//! wire too. This is a simulation's API standing in for a real cloud's, not a Kubernetes API,
//! which is why it is here and not in the API server.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::remote::{EnsureCluster, WireError};
use super::{Cloud, CloudError, ClusterKey, VmKey, VmSpec};

/// A cloud served on a listener until [`CloudServer::shutdown`] or drop.
pub struct CloudServer {
    local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl CloudServer {
    /// Serves `cloud` on `listener` in a background task.
    pub fn start(listener: TcpListener, cloud: Arc<dyn Cloud>) -> std::io::Result<CloudServer> {
        let local_addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, cloud, async move {
            let _ = stopped.await;
        }));
        Ok(CloudServer {
            local_addr,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The URL for [`super::RemoteCloud::new`]: `http://<address>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Stops accepting requests and waits until those under way are answered. The cloud
    /// itself (its VMs and workload clusters) is the caller's to shut down.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for CloudServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Serves `cloud` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    cloud: Arc<dyn Cloud>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(cloud))
        .with_graceful_shutdown(shutdown)
        .await
}

fn router(cloud: Arc<dyn Cloud>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/v1/namespaces/{namespace}/clusters/{name}",
            put(ensure_cluster).delete(delete_cluster),
        )
        .route(
            "/v1/namespaces/{namespace}/clusters/{name}/vms/{vm}",
            put(ensure_vm).get(get_vm).delete(delete_vm),
        )
        .fallback(|| async {
            failure(
                StatusCode::NOT_FOUND,
                WireError::BadRequest {
                    message: "no such path in the simulated cloud's protocol".into(),
                },
            )
        })
        .with_state(cloud)
}

type CloudState = State<Arc<dyn Cloud>>;

async fn ensure_cluster(
    State(cloud): CloudState,
    Path((namespace, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let request: EnsureCluster = match decode(&body) {
        Ok(request) => request,
        Err(response) => return response,
    };
    let cluster = ClusterKey { namespace, name };
    answer(cloud.ensure_cluster(&cluster, request.port).await)
}

async fn delete_cluster(
    State(cloud): CloudState,
    Path((namespace, name)): Path<(String, String)>,
) -> Response {
    let cluster = ClusterKey { namespace, name };
    answer_empty(cloud.delete_cluster(&cluster).await)
}

async fn ensure_vm(
    State(cloud): CloudState,
    Path((namespace, name, vm)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let spec: VmSpec = match decode(&body) {
        Ok(spec) => spec,
        Err(response) => return response,
    };
    answer(cloud.ensure_vm(&vm_key(namespace, name, vm), &spec).await)
}

async fn get_vm(
    State(cloud): CloudState,
    Path((namespace, name, vm)): Path<(String, String, String)>,
) -> Response {
    answer(cloud.get_vm(&vm_key(namespace, name, vm)).await)
}

async fn delete_vm(
    State(cloud): CloudState,
    Path((namespace, name, vm)): Path<(String, String, String)>,
) -> Response {
    answer_empty(cloud.delete_vm(&vm_key(namespace, name, vm)).await)
}

fn vm_key(namespace: String, cluster: String, name: String) -> VmKey {
    VmKey {
        cluster: ClusterKey {
            namespace,
            name: cluster,
        },
        name,
    }
}

/// Decodes a JSON body; a body that does not decode is a `400` naming the field.
fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, Response> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let message = if path == "." {
            format!("the request body does not decode: {}", error.inner())
        } else {
            format!(
                "the request body does not decode at {path}: {}",
                error.inner()
            )
        };
        failure(StatusCode::BAD_REQUEST, WireError::BadRequest { message })
    })
}

fn answer<T: Serialize>(result: Result<T, CloudError>) -> Response {
    match result {
        Ok(value) => json(StatusCode::OK, &value),
        Err(error) => cloud_failure(&error),
    }
}

fn answer_empty(result: Result<(), CloudError>) -> Response {
    match result {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => cloud_failure(&error),
    }
}

fn cloud_failure(error: &CloudError) -> Response {
    let (status, wire) = WireError::from_cloud_error(error);
    if status.is_server_error() {
        tracing::warn!(error = %error, "Simulated cloud call failed");
    }
    failure(status, wire)
}

fn failure(status: StatusCode, error: WireError) -> Response {
    json(status, &error)
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    let body = serde_json::to_vec(value).expect("the cloud's types serialize");
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
