//! [`Client`]: how Corral calls a provider, over the transport its endpoint's scheme names
//! (`grpc://`, `grpcs://`, `http://`, `https://`), every call bounded by the deadline of the
//! [`ClientConfig`]. Failures are [`CallError`]s that say which call failed and how: the
//! provider's own error, no connection, no answer in time, or an answer that is not the
//! contract's message.

use std::net::IpAddr;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tonic::transport::{Channel, ClientTlsConfig};

use crate::v1::infrastructure_provider_client::InfrastructureProviderClient;
use crate::{ProviderError, v1};

/// The largest answer read from an HTTP provider.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// The default deadline of a call (a ProviderPlugin's `spec.timeoutSeconds` default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to reach a provider.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// `grpc://host:port`, `grpcs://host:port`, `http://host:port[/prefix]` or `https://…`.
    pub endpoint: String,
    /// PEM certificates (base64-encoded, as a ProviderPlugin's `spec.caBundle`) to trust for
    /// `grpcs` and `https`; `None`: the system's roots.
    pub ca_bundle: Option<String>,
    /// The deadline of each call.
    pub timeout: Duration,
    /// Allows plain `grpc://` and `http://` to a host that is not loopback.
    pub insecure: bool,
}

impl ClientConfig {
    pub fn new(endpoint: impl Into<String>) -> Self {
        ClientConfig {
            endpoint: endpoint.into(),
            ca_bundle: None,
            timeout: DEFAULT_TIMEOUT,
            insecure: false,
        }
    }
}

/// The transport an endpoint's scheme chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Grpc,
    Grpcs,
    Http,
    Https,
}

impl Transport {
    /// The scheme's name, as `corral get providers` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Grpc => "grpc",
            Transport::Grpcs => "grpcs",
            Transport::Http => "http",
            Transport::Https => "https",
        }
    }

    fn encrypted(self) -> bool {
        matches!(self, Transport::Grpcs | Transport::Https)
    }
}

/// An endpoint Corral does not call.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EndpointError {
    #[error("endpoint {0:?} is not a URL with a host")]
    Malformed(String),
    #[error("endpoint {0:?} has scheme {1:?}; use grpc, grpcs, http or https")]
    Scheme(String, String),
    #[error(
        "endpoint {0:?} is plain {1} to a host that is not loopback; use {1}s, or set insecure: true"
    )]
    Insecure(String, &'static str),
    #[error("caBundle is unusable: {0}")]
    CaBundle(String),
}

/// A client of one provider. Cheap to clone; clones share connections.
#[derive(Clone)]
pub struct Client {
    transport: Transport,
    timeout: Duration,
    inner: Inner,
}

#[derive(Clone)]
enum Inner {
    Grpc(InfrastructureProviderClient<Channel>),
    Http {
        base: String,
        client: HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
    },
}

/// A call that failed.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{method}: {failure}")]
pub struct CallError {
    /// The call, by its name in the contract (`CreateMachine`).
    pub method: &'static str,
    pub failure: CallFailure,
}

/// How a call failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CallFailure {
    /// The provider answered with an error.
    #[error("{0}")]
    Provider(ProviderError),
    /// No connection, or it broke.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// No answer within the deadline.
    #[error("no answer within {}s", .0.as_secs_f64())]
    Timeout(Duration),
    /// An answer that is not the contract's message.
    #[error("answered garbage: {0}")]
    Garbage(String),
}

impl CallError {
    /// The wait the provider asked for before the next call.
    pub fn retry_after(&self) -> Option<Duration> {
        match &self.failure {
            CallFailure::Provider(error) => error.retry_after,
            _ => None,
        }
    }

    /// Whether the provider said `NOT_FOUND`.
    pub fn is_not_found(&self) -> bool {
        matches!(&self.failure, CallFailure::Provider(error) if error.code == v1::ErrorCode::NotFound)
    }
}

impl Client {
    /// A client for `config.endpoint`; no connection is made until the first call. Called
    /// within a Tokio runtime.
    pub fn new(config: &ClientConfig) -> Result<Client, EndpointError> {
        let endpoint = config.endpoint.trim_end_matches('/');
        let uri: http::Uri = endpoint
            .parse()
            .map_err(|_| EndpointError::Malformed(config.endpoint.clone()))?;
        let host = uri
            .host()
            .filter(|host| !host.is_empty())
            .ok_or_else(|| EndpointError::Malformed(config.endpoint.clone()))?;
        let transport = match uri.scheme_str() {
            Some("grpc") => Transport::Grpc,
            Some("grpcs") => Transport::Grpcs,
            Some("http") => Transport::Http,
            Some("https") => Transport::Https,
            other => {
                return Err(EndpointError::Scheme(
                    config.endpoint.clone(),
                    other.unwrap_or_default().to_string(),
                ));
            }
        };
        if !transport.encrypted() && !config.insecure && !is_loopback(host) {
            return Err(EndpointError::Insecure(
                config.endpoint.clone(),
                transport.as_str(),
            ));
        }
        let roots = if transport.encrypted() {
            Some(roots(config.ca_bundle.as_deref())?)
        } else {
            None
        };
        // What follows the scheme, for the HTTP/2 or HTTP/1.1 URL underneath.
        let rest = &endpoint[endpoint.find("://").map_or(0, |at| at + 3)..];
        let inner = match transport {
            Transport::Grpc | Transport::Grpcs => {
                let scheme = if transport.encrypted() {
                    "https"
                } else {
                    "http"
                };
                let mut channel = Channel::from_shared(format!("{scheme}://{rest}"))
                    .map_err(|_| EndpointError::Malformed(config.endpoint.clone()))?
                    .connect_timeout(config.timeout);
                if transport.encrypted() {
                    let mut tls = ClientTlsConfig::new().domain_name(host.to_string());
                    tls = match config
                        .ca_bundle
                        .as_deref()
                        .filter(|bundle| !bundle.is_empty())
                    {
                        Some(bundle) => tls.ca_certificate(
                            tonic::transport::Certificate::from_pem(decode_bundle(bundle)?),
                        ),
                        None => tls.with_native_roots(),
                    };
                    channel = channel
                        .tls_config(tls)
                        .map_err(|error| EndpointError::CaBundle(error.to_string()))?;
                }
                Inner::Grpc(InfrastructureProviderClient::new(channel.connect_lazy()))
            }
            Transport::Http | Transport::Https => {
                let roots = roots.unwrap_or_else(|| Arc::new(RootCertStore::empty()));
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let tls = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|error| EndpointError::CaBundle(error.to_string()))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                let connector = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(tls)
                    .https_or_http()
                    .enable_http1()
                    .build();
                let scheme = transport.as_str();
                Inner::Http {
                    base: format!("{scheme}://{rest}"),
                    client: HyperClient::builder(TokioExecutor::new()).build(connector),
                }
            }
        };
        Ok(Client {
            transport,
            timeout: config.timeout,
            inner,
        })
    }

    /// The transport the endpoint's scheme chose.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    async fn http_call<Req, Resp>(
        &self,
        method: &'static str,
        base: &str,
        client: &HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
        request: &Req,
    ) -> Result<Resp, CallFailure>
    where
        Req: serde::Serialize,
        Resp: serde::de::DeserializeOwned,
    {
        let body = serde_json::to_vec(request).expect("a message serializes");
        let http_request = http::Request::post(format!("{base}/{method}"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(crate::TIMEOUT_HEADER, self.timeout.as_secs().max(1))
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| CallFailure::Unreachable(error.to_string()))?;
        let exchange = async {
            let response = client
                .request(http_request)
                .await
                .map_err(|error| CallFailure::Unreachable(describe(&error)))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|error| CallFailure::Unreachable(format!("reading the answer: {error}")))?
                .to_bytes();
            Ok::<_, CallFailure>((status, body))
        };
        let (status, body) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CallFailure::Timeout(self.timeout))??;
        if !status.is_success() {
            return Err(CallFailure::Provider(ProviderError::from_http(
                status, &body,
            )));
        }
        serde_json::from_slice(&body).map_err(|error| {
            let text = String::from_utf8_lossy(&body[..body.len().min(100)]).into_owned();
            CallFailure::Garbage(format!("{error} in {text:?}"))
        })
    }
}

/// One method per call of the contract: over gRPC, the generated client's method with the
/// deadline; over HTTP, `POST <endpoint>/<Method>`.
macro_rules! calls {
    ($($(#[$doc:meta])* $method:ident($name:literal, $request:ty) -> $response:ty;)*) => {
        impl Client {
            $(
                $(#[$doc])*
                pub async fn $method(&self, request: $request) -> Result<$response, CallError> {
                    let result = match &self.inner {
                        Inner::Grpc(client) => {
                            let mut call = tonic::Request::new(request);
                            call.set_timeout(self.timeout);
                            let mut client = client.clone();
                            match tokio::time::timeout(self.timeout, client.$method(call)).await {
                                Err(_) => Err(CallFailure::Timeout(self.timeout)),
                                Ok(Ok(answer)) => Ok(answer.into_inner()),
                                Ok(Err(status)) => Err(grpc_failure(&status, self.timeout)),
                            }
                        }
                        Inner::Http { base, client } => {
                            self.http_call($name, base, client, &request).await
                        }
                    };
                    result.map_err(|failure| CallError { method: $name, failure })
                }
            )*
        }
    };
}

calls! {
    /// `GetInfo`.
    get_info("GetInfo", v1::GetInfoRequest) -> v1::GetInfoResponse;
    /// `ValidateConfig`.
    validate_config("ValidateConfig", v1::ValidateConfigRequest) -> v1::ValidateConfigResponse;
    /// `ReconcileCluster`.
    reconcile_cluster("ReconcileCluster", v1::ReconcileClusterRequest) -> v1::ReconcileClusterResponse;
    /// `DeleteCluster`.
    delete_cluster("DeleteCluster", v1::DeleteClusterRequest) -> v1::DeleteClusterResponse;
    /// `CreateMachine`.
    create_machine("CreateMachine", v1::CreateMachineRequest) -> v1::Machine;
    /// `GetMachine`.
    get_machine("GetMachine", v1::GetMachineRequest) -> v1::Machine;
    /// `DeleteMachine`.
    delete_machine("DeleteMachine", v1::DeleteMachineRequest) -> v1::DeleteMachineResponse;
    /// `ListMachines`.
    list_machines("ListMachines", v1::ListMachinesRequest) -> v1::ListMachinesResponse;
    /// `RebootMachine`.
    reboot_machine("RebootMachine", v1::RebootMachineRequest) -> v1::RebootMachineResponse;
}

/// What a gRPC status says about a call: a transport failure (tonic's statuses that carry a
/// source error), the deadline, an answer that did not decode, or the provider's own error.
fn grpc_failure(status: &tonic::Status, timeout: Duration) -> CallFailure {
    use std::error::Error;
    if status.code() == tonic::Code::DeadlineExceeded {
        return CallFailure::Timeout(timeout);
    }
    if let Some(source) = status.source() {
        // tonic's own deadline (the request's `grpc-timeout`) is a source error too.
        let mut cause = Some(source);
        while let Some(error) = cause {
            if error.is::<tonic::TimeoutExpired>() {
                return CallFailure::Timeout(timeout);
            }
            cause = error.source();
        }
        return CallFailure::Unreachable(describe(source));
    }
    if status.code() == tonic::Code::Internal && status.message().contains("decode") {
        return CallFailure::Garbage(status.message().to_string());
    }
    CallFailure::Provider(ProviderError::from_status(status))
}

/// Whether `host` is a loopback address or `localhost`.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The system's trust roots, loaded once, when a provider without a caBundle first needs them.
static SYSTEM_ROOTS: LazyLock<Arc<RootCertStore>> = LazyLock::new(|| {
    let loaded = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(loaded.certs);
    Arc::new(roots)
});

/// The roots to trust: a base64-encoded PEM bundle, or the system's.
fn roots(ca_bundle: Option<&str>) -> Result<Arc<RootCertStore>, EndpointError> {
    let Some(bundle) = ca_bundle.filter(|bundle| !bundle.is_empty()) else {
        return Ok(SYSTEM_ROOTS.clone());
    };
    let pem = decode_bundle(bundle)?;
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        let certificate =
            certificate.map_err(|error| EndpointError::CaBundle(error.to_string()))?;
        roots
            .add(certificate)
            .map_err(|error| EndpointError::CaBundle(error.to_string()))?;
    }
    if roots.is_empty() {
        return Err(EndpointError::CaBundle("no PEM certificate in it".into()));
    }
    Ok(Arc::new(roots))
}

/// A ProviderPlugin's `caBundle`: base64 of PEM certificates.
fn decode_bundle(bundle: &str) -> Result<Vec<u8>, EndpointError> {
    base64::engine::general_purpose::STANDARD
        .decode(bundle.trim())
        .map_err(|error| EndpointError::CaBundle(format!("not base64: {error}")))
}

/// Every message of an error's chain, once each.
fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}
