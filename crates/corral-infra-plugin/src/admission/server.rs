//! The webhook over HTTPS, and its registration.
//!
//! [`WebhookServer::start`] serves `POST /validate-config` with a certificate it issues
//! itself at start (a CA of its own, ECDSA P-256, `corral_apiserver::pki`), for the host the
//! API server calls it at; [`register`] then writes that URL and CA into the webhook of the
//! ValidatingWebhookConfiguration [`CONFIGURATION`], which `corral init` created empty
//! ([`install_configuration`]), so the process needs only `patch` on that one object. A
//! restarted process issues a new certificate and registers again.
//!
//! Each replica of `corral controllers` serves and registers (the last one to start wins the
//! registration), each with a CA of its own: behind one Service, replicas would present
//! certificates the registered CA did not issue. Not done yet: a CA shared by the replicas (a
//! Secret), and renewal of the certificate within a process's life (one year).
//!
//! The webhook's `failurePolicy` is `Fail`: while no process serves it, Plugin* objects are
//! neither created nor changed (their status still is: the status subresource is not sent),
//! as with upstream providers' webhooks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::ConfigWebhook;
use crate::api::{GROUP, VERSION};

/// The ValidatingWebhookConfiguration that sends Plugin* writes to the webhook.
pub const CONFIGURATION: &str = "corral-plugin-config";

/// The webhook's name within it.
pub const WEBHOOK: &str = "config.infrastructure.corral.dev";

/// The path the webhook is served at.
const PATH: &str = "/validate-config";

/// How long the serving certificate is valid; a process runs with one certificate.
const CERTIFICATE_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);

/// What the field manager of the registration is called.
const FIELD_MANAGER: &str = "corral-plugin-webhook";

/// A running webhook server.
pub struct WebhookServer {
    /// `https://<host>:<port>/validate-config`.
    pub url: String,
    /// The PEM of the CA that issued its certificate, for `clientConfig.caBundle`.
    pub ca_pem: String,
    pub task: tokio::task::JoinHandle<()>,
}

/// Why the webhook does not serve.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot issue the webhook's certificate: {0}")]
    Certificate(String),
    #[error("cannot listen on {0}: {1}")]
    Listen(SocketAddr, std::io::Error),
    #[error("cannot register the webhook in ValidatingWebhookConfiguration {CONFIGURATION}")]
    Register(#[source] kube::Error),
}

impl WebhookServer {
    /// Serves the webhook on `listen` until `shutdown`, reading ProviderPlugins with
    /// `client`; `host` is the name or address the API server calls it at (the certificate
    /// is issued for it).
    pub async fn start(
        client: kube::Client,
        listen: SocketAddr,
        host: &str,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<WebhookServer, Error> {
        use corral_apiserver::pki;
        let certificate = |e: pki::Error| Error::Certificate(e.to_string());
        let ca = pki::generate_ca("corral-plugin-webhook-ca").map_err(certificate)?;
        let serving = pki::issue_serving(&ca, &[host.to_owned()], CERTIFICATE_VALIDITY)
            .map_err(certificate)?;
        let chain = pki::parse_certificates(serving.certificate_pem.as_bytes(), "certificate")
            .map_err(certificate)?;
        let key = pki::parse_private_key(serving.private_key_pem.as_bytes(), "key")
            .map_err(certificate)?;
        let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Certificate(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| Error::Certificate(e.to_string()))?;
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| Error::Listen(listen, e))?;
        let port = listener
            .local_addr()
            .map_err(|e| Error::Listen(listen, e))?
            .port();
        let host_in_url = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let app = axum::Router::new()
            .route(PATH, post(review))
            .with_state(Arc::new(ConfigWebhook::new(client)));
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let task = tokio::spawn(serve(listener, acceptor, app, shutdown));
        Ok(WebhookServer {
            url: format!("https://{host_in_url}:{port}{PATH}"),
            ca_pem: ca.certificate_pem,
            task,
        })
    }
}

async fn review(
    State(webhook): State<Arc<ConfigWebhook>>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let Ok(review) = serde_json::from_slice::<Value>(&body) else {
        return (
            http::StatusCode::BAD_REQUEST,
            "the body is not an AdmissionReview",
        )
            .into_response();
    };
    let answer = serde_json::to_vec(&webhook.review(&review).await).unwrap_or_default();
    ([(http::header::CONTENT_TYPE, "application/json")], answer).into_response()
}

async fn serve(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "Accepting a webhook connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        let builder = builder.clone();
        tokio::spawn(async move {
            let Ok(Ok(stream)) =
                tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
            else {
                return;
            };
            let service =
                hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    tower_service::Service::call(&mut app.clone(), request)
                });
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Creates the configuration [`CONFIGURATION`] without webhooks, for the serving process to
/// [`register`] in (`corral init`, as an administrator). Leaves its webhooks as they are.
pub async fn install_configuration(client: &kube::Client, manager: &str) -> kube::Result<()> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {
            "name": CONFIGURATION,
            "labels": { corral_api::labels::PROVIDER_NAME: crate::api::PROVIDER_LABEL_VALUE },
        },
    });
    api.patch(
        CONFIGURATION,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(&configuration),
    )
    .await?;
    Ok(())
}

/// Points the webhook of [`CONFIGURATION`] at `url`, trusting `ca_pem`: Plugin* creates and
/// updates go to it from then on.
pub async fn register(client: &kube::Client, url: &str, ca_pem: &str) -> Result<(), Error> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": { "name": CONFIGURATION },
        "webhooks": [{
            "name": WEBHOOK,
            "clientConfig": { "url": url, "caBundle": ca_bundle },
            "rules": [{
                "apiGroups": [GROUP],
                "apiVersions": [VERSION],
                "operations": ["CREATE", "UPDATE"],
                "resources": [
                    "pluginclusters", "pluginclustertemplates",
                    "pluginmachines", "pluginmachinetemplates",
                ],
                "scope": "Namespaced",
            }],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 15,
        }],
    });
    api.patch(
        CONFIGURATION,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&configuration),
    )
    .await
    .map_err(Error::Register)?;
    Ok(())
}
