//! A server per test, on a free loopback port, with a kube-rs client and raw HTTP helpers.

use std::future::Future;
use std::time::Duration;

use corral_apiserver::{Server, ServerConfig};
use corral_store::testing::{self, TestStore};
use serde_json::Value;

pub enum Backend {
    Memory,
    Sqlite,
    Etcd,
}

pub struct TestServer {
    pub server: Server,
    pub client: kube::Client,
    _store: TestStore,
}

pub async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(TestServer) -> Fut,
    Fut: Future<Output = ()>,
{
    let store = match backend {
        Backend::Memory => testing::memory().await,
        Backend::Sqlite => testing::sqlite().await,
        Backend::Etcd => match testing::etcd().await {
            Some(store) => store,
            None => return,
        },
    };
    let server = start(store, ServerConfig::default()).await;
    test(server).await;
}

pub async fn start(store: TestStore, config: ServerConfig) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::start(listener, store.store.clone(), config)
        .await
        .expect("server starts");
    let config = kube::Config::new(server.url().parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    TestServer {
        server,
        client,
        _store: store,
    }
}

/// A raw HTTP response: status, headers and body.
pub struct Raw {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl Raw {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "response is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

impl TestServer {
    /// Sends a request exactly as given (no client-side validation) and returns the answer.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: impl Into<Vec<u8>>,
    ) -> Raw {
        let mut request = http::Request::builder().method(method).uri(path);
        if let Some(content_type) = content_type {
            request = request.header(http::header::CONTENT_TYPE, content_type);
        }
        let request = request.body(body.into()).unwrap();
        let response = self.client.send(request.map(Into::into)).await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        Raw {
            status,
            headers,
            body,
        }
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let raw = self.raw("GET", path, None, Vec::new()).await;
        assert_eq!(
            raw.status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&raw.body)
        );
        raw.json()
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Raw {
        self.raw(
            "POST",
            path,
            Some("application/json"),
            serde_json::to_vec(body).unwrap(),
        )
        .await
    }

    /// Creates a namespace and returns its name.
    pub async fn namespace(&self, name: &str) -> String {
        let raw = self
            .post_json(
                "/api/v1/namespaces",
                &serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
            )
            .await;
        assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
        name.to_string()
    }

    /// Creates the `widgets.example.com` CRD (namespaced, status subresource, two versions)
    /// and waits until it is served.
    pub async fn widget_crd(&self) {
        let crd = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                          "shortNames": ["wd"], "categories": ["all"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                    {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                     "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
                ]
            }
        });
        let raw = self
            .post_json(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                &crd,
            )
            .await;
        assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
        let raw = self
            .raw("GET", "/apis/example.com/v1/widgets", None, Vec::new())
            .await;
        assert_eq!(
            raw.status, 200,
            "the CRD is served as soon as it is created"
        );
    }
}

pub fn widget_resource(version: &str) -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "example.com".into(),
        version: version.into(),
        api_version: format!("example.com/{version}"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

/// Polls `check` until it returns `Some`, failing after `seconds`.
pub async fn eventually<T, F, Fut>(seconds: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
