//! The simulated cloud over HTTP: [`RemoteCloud`], a [`Cloud`] whose calls go to a cloud served
//! by another process ([`super::remote_server`]), as a real provider reaches its cloud through
//! an SDK.
//!
//! A cloud in its own process outlives the management planes that use it, and several planes
//! can reach it in turn: this is what `corral move` between management planes needs, since the
//! VMs and workload clusters must stay where they are while their objects move. The workload
//! cluster endpoints it hands out are listeners of the cloud's process.
//!
//! # Protocol
//!
//! JSON over HTTP/1.1, one request per trait call, keyed by the same names as the trait:
//!
//! | call | request | answer |
//! |---|---|---|
//! | `ensure_cluster` | `PUT /v1/namespaces/{ns}/clusters/{name}`, body `{"port": 20000}` or `{"port": null}` | `200` [`WorkloadEndpoint`] |
//! | `delete_cluster` | `DELETE /v1/namespaces/{ns}/clusters/{name}` | `204` |
//! | `ensure_vm` | `PUT /v1/namespaces/{ns}/clusters/{name}/vms/{vm}`, body [`VmSpec`] | `200` [`Vm`] |
//! | `get_vm` | `GET /v1/namespaces/{ns}/clusters/{name}/vms/{vm}` | `200` [`Vm`], or `200` `null` when there is no such VM |
//! | `delete_vm` | `DELETE /v1/namespaces/{ns}/clusters/{name}/vms/{vm}` | `204` |
//!
//! `GET /healthz` answers `200 ok` once the cloud serves. A missing VM is `null` rather than a
//! `404`, so that an absent VM cannot be confused with a wrong URL.
//!
//! A failed call answers `4xx`/`5xx` with a [`WireError`], which carries the [`CloudError`]
//! variant and its fields, so that the client returns the error the cloud raised: the same
//! variant, the same cluster, and for a workload cluster's refusal the same Kubernetes
//! `Status`. Only what cannot cross a process boundary is rebuilt: an I/O error keeps its kind
//! and message, any other source keeps its message.
//!
//! Names are Kubernetes object names (lowercase alphanumerics, `-` and `.`), so they go into
//! paths as they are; the client refuses any other name rather than escape it.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Cloud, CloudError, ClusterKey, Vm, VmKey, VmSpec, WorkloadEndpoint};

/// How long a call may take before the client gives up. Starting a workload cluster's API
/// server is the slowest call, well under a second on a loaded machine.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A [`Cloud`] served by another process, at `url`. See the [module docs](self).
#[derive(Clone)]
pub struct RemoteCloud {
    url: String,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl std::fmt::Debug for RemoteCloud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteCloud")
            .field("url", &self.url)
            .finish()
    }
}

impl RemoteCloud {
    /// A client of the cloud at `url` (`http://host:port`). Nothing is sent yet; see
    /// [`RemoteCloud::check`].
    pub fn new(url: &str) -> Result<RemoteCloud, CloudError> {
        let trimmed = url.trim_end_matches('/');
        let parsed: http::Uri = trimmed.parse().map_err(|error| CloudError::Unreachable {
            url: url.to_string(),
            source: format!("not a URL: {error}").into(),
        })?;
        if parsed.scheme_str() != Some("http") || parsed.authority().is_none() {
            return Err(CloudError::Unreachable {
                url: url.to_string(),
                source: "the simulated cloud's URL must be http://HOST:PORT".into(),
            });
        }
        let http = Client::builder(TokioExecutor::new()).build_http();
        Ok(RemoteCloud {
            url: trimmed.to_string(),
            http,
        })
    }

    /// The cloud's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Asks the cloud whether it serves (`GET /healthz`), so that a wrong `--cloud` URL is
    /// reported when a management plane starts rather than at the first reconcile.
    pub async fn check(&self) -> Result<(), CloudError> {
        self.call::<()>(Method::GET, "/healthz".to_string(), None)
            .await
            .map(|_| ())
    }

    fn cluster_path(&self, cluster: &ClusterKey) -> Result<String, CloudError> {
        check_name("namespace", &cluster.namespace)?;
        check_name("cluster name", &cluster.name)?;
        Ok(format!(
            "/v1/namespaces/{}/clusters/{}",
            cluster.namespace, cluster.name
        ))
    }

    fn vm_path(&self, vm: &VmKey) -> Result<String, CloudError> {
        check_name("VM name", &vm.name)?;
        Ok(format!(
            "{}/vms/{}",
            self.cluster_path(&vm.cluster)?,
            vm.name
        ))
    }

    /// Sends one call and decodes its answer: `Ok(None)` for an empty (`204`) answer.
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: String,
        body: Option<Vec<u8>>,
    ) -> Result<Option<T>, CloudError> {
        let url = format!("{}{path}", self.url);
        let unreachable =
            |source: Box<dyn std::error::Error + Send + Sync>| CloudError::Unreachable {
                url: url.clone(),
                source,
            };
        let mut request = Request::builder().method(method).uri(&url);
        if body.is_some() {
            request = request.header(http::header::CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|error| unreachable(error.into()))?;
        let exchange = async {
            let response = self.http.request(request).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>((status, body))
        };
        let (status, body) = match tokio::time::timeout(CALL_TIMEOUT, exchange).await {
            Ok(result) => result.map_err(unreachable)?,
            Err(_) => {
                return Err(unreachable(
                    format!("no answer within {} s", CALL_TIMEOUT.as_secs()).into(),
                ));
            }
        };
        if status == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        if status.is_success() {
            if path == "/healthz" {
                return Ok(None);
            }
            return serde_json::from_slice(&body).map_err(|error| CloudError::Protocol {
                url: url.clone(),
                status: status.as_u16(),
                message: format!("the answer is not what the protocol says: {error}"),
            });
        }
        match serde_json::from_slice::<WireError>(&body) {
            Ok(error) => Err(error.into_cloud_error(&url, status)),
            Err(_) => Err(CloudError::Protocol {
                url,
                status: status.as_u16(),
                message: String::from_utf8_lossy(&body).chars().take(200).collect(),
            }),
        }
    }
}

#[async_trait::async_trait]
impl Cloud for RemoteCloud {
    async fn ensure_cluster(
        &self,
        cluster: &ClusterKey,
        port: Option<u16>,
    ) -> Result<WorkloadEndpoint, CloudError> {
        let path = self.cluster_path(cluster)?;
        let body = serde_json::to_vec(&EnsureCluster { port }).expect("serializable");
        self.call(Method::PUT, path.clone(), Some(body))
            .await?
            .ok_or_else(|| self.empty_answer(&path))
    }

    async fn delete_cluster(&self, cluster: &ClusterKey) -> Result<(), CloudError> {
        let path = self.cluster_path(cluster)?;
        self.call::<()>(Method::DELETE, path, None).await?;
        Ok(())
    }

    async fn ensure_vm(&self, vm: &VmKey, spec: &VmSpec) -> Result<Vm, CloudError> {
        let path = self.vm_path(vm)?;
        let body = serde_json::to_vec(spec).expect("serializable");
        self.call(Method::PUT, path.clone(), Some(body))
            .await?
            .ok_or_else(|| self.empty_answer(&path))
    }

    async fn get_vm(&self, vm: &VmKey) -> Result<Option<Vm>, CloudError> {
        let path = self.vm_path(vm)?;
        // `null` decodes to `None`.
        Ok(self
            .call::<Option<Vm>>(Method::GET, path, None)
            .await?
            .flatten())
    }

    async fn delete_vm(&self, vm: &VmKey) -> Result<(), CloudError> {
        let path = self.vm_path(vm)?;
        self.call::<()>(Method::DELETE, path, None).await?;
        Ok(())
    }
}

impl RemoteCloud {
    fn empty_answer(&self, path: &str) -> CloudError {
        CloudError::Protocol {
            url: format!("{}{path}", self.url),
            status: StatusCode::NO_CONTENT.as_u16(),
            message: "an empty answer where the protocol says there is one".into(),
        }
    }
}

/// Refuses a name that is not a Kubernetes object name, which could not go into a path as is.
fn check_name(what: &str, name: &str) -> Result<(), CloudError> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.bytes().all(|byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"-.".contains(&byte)
        });
    if valid {
        Ok(())
    } else {
        Err(CloudError::InvalidName {
            field: what.to_string(),
            name: name.to_string(),
        })
    }
}

/// The body of `ensure_cluster`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct EnsureCluster {
    pub port: Option<u16>,
}

/// A [`CloudError`] on the wire: its variant (`reason`) and fields, sources reduced to what can
/// cross a process boundary.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all_fields = "camelCase")]
pub enum WireError {
    ClusterNotFound {
        cluster: ClusterKey,
    },
    Listen {
        cluster: ClusterKey,
        address: String,
        /// `std::io::ErrorKind` in its Debug spelling (`AddrInUse`).
        io_kind: String,
        message: String,
    },
    StartApiServer {
        cluster: ClusterKey,
        message: String,
    },
    Workload {
        cluster: ClusterKey,
        operation: String,
        /// The workload API server's answer, when it answered.
        status: Option<Box<kube::core::Status>>,
        message: String,
    },
    InvalidName {
        field: String,
        name: String,
    },
    /// The request itself was wrong (a body that does not decode); `message` names the field.
    BadRequest {
        message: String,
    },
    /// A cloud behind this one failed in a way this protocol has no variant for.
    Other {
        message: String,
    },
}

impl WireError {
    /// The wire form of `error`, and the HTTP status to answer it with.
    pub fn from_cloud_error(error: &CloudError) -> (StatusCode, WireError) {
        match error {
            CloudError::ClusterNotFound(cluster) => (
                StatusCode::NOT_FOUND,
                WireError::ClusterNotFound {
                    cluster: cluster.clone(),
                },
            ),
            CloudError::Listen {
                cluster,
                address,
                source,
            } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                WireError::Listen {
                    cluster: cluster.clone(),
                    address: address.clone(),
                    io_kind: format!("{:?}", source.kind()),
                    message: source.to_string(),
                },
            ),
            CloudError::StartApiServer { cluster, message } => (
                StatusCode::INTERNAL_SERVER_ERROR,
                WireError::StartApiServer {
                    cluster: cluster.clone(),
                    message: message.clone(),
                },
            ),
            CloudError::Workload {
                cluster,
                operation,
                source,
            } => (
                StatusCode::BAD_GATEWAY,
                WireError::Workload {
                    cluster: cluster.clone(),
                    operation: operation.clone(),
                    status: match source {
                        kube::Error::Api(status) => Some(status.clone()),
                        _ => None,
                    },
                    message: source.to_string(),
                },
            ),
            CloudError::InvalidName { field, name } => (
                StatusCode::BAD_REQUEST,
                WireError::InvalidName {
                    field: field.clone(),
                    name: name.clone(),
                },
            ),
            // A cloud served from a cloud: its transport errors are this cloud's failures.
            CloudError::Unreachable { .. } | CloudError::Protocol { .. } => (
                StatusCode::BAD_GATEWAY,
                WireError::Other {
                    message: error_chain(error),
                },
            ),
        }
    }

    /// The [`CloudError`] this wire error stands for; `url` and `status` name the call, for
    /// errors the protocol does not know.
    fn into_cloud_error(self, url: &str, status: StatusCode) -> CloudError {
        match self {
            WireError::ClusterNotFound { cluster } => CloudError::ClusterNotFound(cluster),
            WireError::Listen {
                cluster,
                address,
                io_kind,
                message,
            } => CloudError::Listen {
                cluster,
                address,
                source: std::io::Error::new(io_error_kind(&io_kind), message),
            },
            WireError::StartApiServer { cluster, message } => {
                CloudError::StartApiServer { cluster, message }
            }
            WireError::Workload {
                cluster,
                operation,
                status,
                message,
            } => CloudError::Workload {
                cluster,
                operation,
                source: match status {
                    Some(status) => kube::Error::Api(status),
                    None => kube::Error::Service(message.into()),
                },
            },
            WireError::InvalidName { field, name } => CloudError::InvalidName { field, name },
            WireError::BadRequest { message } | WireError::Other { message } => {
                CloudError::Protocol {
                    url: url.to_string(),
                    status: status.as_u16(),
                    message,
                }
            }
        }
    }
}

/// The I/O error kinds a listener reports, from their Debug spelling; any other is `Other`.
fn io_error_kind(name: &str) -> std::io::ErrorKind {
    use std::io::ErrorKind;
    [
        ErrorKind::AddrInUse,
        ErrorKind::AddrNotAvailable,
        ErrorKind::PermissionDenied,
        ErrorKind::InvalidInput,
        ErrorKind::ConnectionRefused,
        ErrorKind::TimedOut,
    ]
    .into_iter()
    .find(|kind| format!("{kind:?}") == name)
    .unwrap_or(ErrorKind::Other)
}

/// `error` and its sources, joined with `: `.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
