//! The HTTP client side: hyper's pooled client over loopback, one connection per request in
//! flight (HTTP/1.1, keep-alive), as a Kubernetes client library would use it.

use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A pooled HTTP/1.1 client bound to one server. Cheap to clone; clones share the pool, and
/// the pool opens as many connections as there are requests in flight.
#[derive(Clone)]
pub struct Http {
    client: Client<HttpConnector, Full<Bytes>>,
    base: String,
}

impl Http {
    /// A client of the server at `base` (`http://127.0.0.1:port`).
    pub fn new(base: &str) -> Http {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(300))
            .build(connector);
        Http {
            client,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    fn request(&self, method: Method, path: &str, body: Option<Bytes>) -> Request<Full<Bytes>> {
        self.typed_request(method, path, body, "application/json")
    }

    fn typed_request(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
    ) -> Request<Full<Bytes>> {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header(header::ACCEPT, "application/json");
        if body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        builder
            .body(Full::new(body.unwrap_or_default()))
            .expect("a valid request")
    }

    /// Sends a request and reads the whole answer.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let response = self
            .client
            .request(self.request(method.clone(), path, body))
            .await
            .with_context(|| format!("{method} {path}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .with_context(|| format!("reading the answer to {method} {path}"))?
            .to_bytes();
        Ok((status, body))
    }

    /// Sends a request whose body has this content type (a patch), and returns the answer's
    /// body when the status is the expected one.
    pub async fn expect_typed(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        content_type: &str,
        expected: StatusCode,
    ) -> anyhow::Result<Bytes> {
        let response = self
            .client
            .request(self.typed_request(method.clone(), path, Some(body), content_type))
            .await
            .with_context(|| format!("{method} {path}"))?;
        let status = response.status();
        let answer = response
            .into_body()
            .collect()
            .await
            .with_context(|| format!("reading the answer to {method} {path}"))?
            .to_bytes();
        if status != expected {
            bail!(
                "{method} {path} ({content_type}): {status} (expected {expected}): {}",
                snippet(&answer)
            );
        }
        Ok(answer)
    }

    /// Sends a request and returns its body when the status is the expected one.
    pub async fn expect(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        expected: StatusCode,
    ) -> anyhow::Result<Bytes> {
        let (status, answer) = self.send(method.clone(), path, body).await?;
        if status != expected {
            bail!(
                "{method} {path}: {status} (expected {expected}): {}",
                snippet(&answer)
            );
        }
        Ok(answer)
    }

    /// Starts a GET whose body is read as it arrives (a watch).
    pub async fn stream(&self, path: &str) -> anyhow::Result<http::Response<Incoming>> {
        let response = self
            .client
            .request(self.request(Method::GET, path, None))
            .await
            .with_context(|| format!("GET {path}"))?;
        if response.status() != StatusCode::OK {
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            bail!("GET {path}: {status}: {}", snippet(&body));
        }
        Ok(response)
    }
}

/// The start of a body, for an error message.
pub fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
    text.trim().to_string()
}

/// Percent-encodes a query parameter value (continue tokens are base64, with `+`, `/`, `=`).
pub fn query_value(raw: &str) -> String {
    let mut encoded = String::with_capacity(raw.len() + 8);
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}
