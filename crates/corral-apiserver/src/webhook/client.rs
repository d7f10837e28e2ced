//! HTTPS calls to webhooks: one pooled HTTP/1.1 client per webhook, over rustls, trusting the
//! webhook's `caBundle` or else the system's roots.
//!
//! `clientConfig.url` is called as given. `clientConfig.service` is mapped the way
//! kube-apiserver's default resolver maps it, to `https://<name>.<namespace>.svc:<port><path>`;
//! Corral has no Services, so that name must resolve through DNS (as it does when Corral runs
//! inside a cluster), and a call that cannot connect says so.
//!
//! Failures are described in the words kube-apiserver's REST client uses where a client may
//! match on them (`Post "<url>": context deadline exceeded`).

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
use serde_json::Value;

use super::config::ClientConfigSpec;

/// The largest webhook response read; kube-apiserver's request limit is 3 MiB, and a patch
/// of an object that size is about as large.
const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

type Https = HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// How to reach one webhook.
pub struct Client {
    /// The URL requests go to, without the `timeout` parameter.
    url: String,
    /// `<namespace>/<name>` when the URL came from a service reference.
    service: Option<String>,
    /// The HTTP client, or why there is none (an unusable caBundle).
    transport: Result<Https, String>,
}

/// The system's trust roots, loaded once, when a webhook without a caBundle first needs
/// them.
static SYSTEM_ROOTS: LazyLock<Arc<RootCertStore>> = LazyLock::new(|| {
    let loaded = rustls_native_certs::load_native_certs();
    for error in &loaded.errors {
        tracing::warn!(%error, "Loading a system trust root failed");
    }
    let mut roots = RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(loaded.certs);
    tracing::debug!(added, ignored, "Loaded the system trust roots for webhooks");
    Arc::new(roots)
});

fn roots(ca_bundle: Option<&str>) -> Result<Arc<RootCertStore>, String> {
    let Some(bundle) = ca_bundle.filter(|b| !b.is_empty()) else {
        return Ok(SYSTEM_ROOTS.clone());
    };
    let pem = base64::engine::general_purpose::STANDARD
        .decode(bundle)
        .map_err(|e| format!("unable to load root certificates: caBundle is not base64: {e}"))?;
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        let certificate =
            certificate.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots
            .add(certificate)
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
    }
    if roots.is_empty() {
        return Err(
            "unable to load root certificates: unable to parse bytes as PEM block".to_string(),
        );
    }
    Ok(Arc::new(roots))
}

fn https(ca_bundle: Option<&str>) -> Result<Https, String> {
    let roots = roots(ca_bundle)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("unable to configure TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .build();
    Ok(HyperClient::builder(TokioExecutor::new()).build(connector))
}

/// Every message of an error's chain, joined as Go joins wrapped errors.
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

impl Client {
    pub fn new(config: &ClientConfigSpec) -> Client {
        let (url, service) = match (&config.url, &config.service) {
            (Some(url), _) => (url.clone(), None),
            (None, Some(service)) => {
                let name = service.name.clone().unwrap_or_default();
                let namespace = service.namespace.clone().unwrap_or_default();
                let port = service.port.unwrap_or(443);
                let path = service.path.clone().unwrap_or_default();
                (
                    format!("https://{name}.{namespace}.svc:{port}{path}"),
                    Some(format!("{namespace}/{name}")),
                )
            }
            (None, None) => (String::new(), None),
        };
        Client {
            url,
            service,
            transport: https(config.ca_bundle.as_deref()),
        }
    }

    /// The URL a call with this timeout posts to: kube-apiserver tells the webhook its
    /// deadline in whole seconds.
    pub fn url_with_timeout(&self, timeout: Duration) -> String {
        let seconds = timeout.as_secs_f64().ceil() as u64;
        format!("{}?timeout={seconds}s", self.url)
    }

    /// Posts `body` and returns the response body of a 2xx answer. The error is the reason
    /// the call failed, ready to follow `failed calling webhook "<name>": `.
    pub async fn post(&self, body: Bytes, timeout: Duration) -> Result<Bytes, String> {
        let transport = self
            .transport
            .as_ref()
            .map_err(|e| format!("could not get REST client: {e}"))?;
        let url = self.url_with_timeout(timeout);
        let failed = |detail: String| format!("failed to call webhook: Post \"{url}\": {detail}");
        let request = http::Request::post(&url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(body))
            .map_err(|e| failed(e.to_string()))?;
        let exchange = async {
            let response = transport.request(request).await.map_err(|error| {
                let mut detail = describe(&error);
                if let Some(service) = &self.service
                    && error.is_connect()
                {
                    detail.push_str(&format!(
                        " (service {service}: Corral has no Services, so this name must resolve through DNS; use clientConfig.url otherwise)"
                    ));
                }
                failed(detail)
            })?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| failed(format!("reading the response failed: {e}")))?
                .to_bytes();
            if !status.is_success() {
                return Err(format!(
                    "failed to call webhook: {}",
                    unsuccessful(status, &body)
                ));
            }
            Ok(body)
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(failed("context deadline exceeded".to_string())),
        }
    }
}

/// What client-go says about a non-2xx answer: the message of a `Status` body, or the code.
fn unsuccessful(status: http::StatusCode, body: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|value| {
            (value.get("kind").and_then(Value::as_str) == Some("Status"))
                .then(|| value.get("message")?.as_str().map(str::to_string))
                .flatten()
        });
    match message {
        Some(message) if !message.is_empty() => message,
        _ => format!(
            "the server responded with the status code {} but did not return more information",
            status.as_u16()
        ),
    }
}
