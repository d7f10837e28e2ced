//! Test support for crates that talk to a management plane through `kube::Client` (the
//! controllers, the CLI): a real Corral API server in-process on a free loopback port, over a
//! fresh in-memory store, with a client for it.
//!
//! Controllers never depend on the API server; their tests do, through this crate, so that the
//! same tests could run against a real kube-apiserver by swapping the client.
//!
//! # Map of the crate
//!
//! Test support for crates that talk to a management plane through `kube::Client`: a real API
//! server in-process on a free port over a fresh store, a client for it, CRD installation.

use std::future::Future;
use std::time::Duration;

use corral_apiserver::{Server, ServerConfig};
use corral_store::testing::TestStore;
use serde_json::Value;

/// A running API server and a client for it. Dropping it stops the server.
pub struct TestEnv {
    pub client: kube::Client,
    pub server: Server,
    _store: TestStore,
}

impl TestEnv {
    /// A server over a fresh in-memory store.
    pub async fn start() -> TestEnv {
        Self::with_store(corral_store::testing::memory().await).await
    }

    /// A server over the given store.
    pub async fn with_store(store: TestStore) -> TestEnv {
        Self::with_config(store, ServerConfig::default()).await
    }

    /// A server over a fresh in-memory store that admits the given kinds as their rules say
    /// (`ServerConfig::admission`).
    pub async fn with_admission(rules: corral_admission::RuleSet) -> TestEnv {
        let config = ServerConfig {
            admission: rules,
            ..ServerConfig::default()
        };
        Self::with_config(corral_store::testing::memory().await, config).await
    }

    /// A server over the given store with the given settings.
    pub async fn with_config(store: TestStore, config: ServerConfig) -> TestEnv {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free loopback port");
        let server = Server::start(listener, store.store.clone(), config)
            .await
            .expect("the API server starts");
        let config = kube::Config::new(server.url().parse().expect("a valid URL"));
        let client = kube::Client::try_from(config).expect("a client");
        TestEnv {
            client,
            server,
            _store: store,
        }
    }

    /// The server's base URL, e.g. for a kubeconfig.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Creates CRDs (as JSON objects) and waits until each is served.
    pub async fn install_crds(&self, crds: &[Value]) {
        use kube::api::{Api, DynamicObject, PostParams};
        let resource = kube::api::ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        };
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        for crd in crds {
            let object: DynamicObject =
                serde_json::from_value(crd.clone()).expect("a CRD is an object");
            api.create(&PostParams::default(), &object)
                .await
                .expect("the CRD is accepted");
        }
    }
}

/// Polls `check` until it returns `Some`, failing the test after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
