//! The management plane of the KubeadmControlPlane tests (`control_plane.rs`, `adoption.rs`,
//! `addons.rs`): a real Corral API server with the core, Dev* and kubeadm CRDs, the core
//! controllers, the in-memory provider with its simulated workload clusters, and both kubeadm
//! controllers. The tests write only what a user writes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_api::Machine;
use corral_cloud::InProcessCloud;
use corral_kubeadm::api::controlplane::KubeadmControlPlane;
use corral_runtime::cluster_cache::ClusterCacheConfig;
use corral_testenv::TestEnv;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;
use tokio::task::JoinHandle;

pub const NAMESPACE: &str = "default";
pub const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";
const TIMEOUT: Duration = Duration::from_secs(120);

pub async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    corral_testenv::eventually(TIMEOUT, what, check).await
}

/// The controllers' requests to the management API server, by controller group (`core`,
/// `infra`, `kcp`, `kubeadm` for the KubeadmConfig controller), verb and resource (e.g.
/// `kcp PATCH machines/status`), for the benchmark.
pub type RequestCounts = Arc<Mutex<BTreeMap<String, u64>>>;

/// What a Secret's name says it is: one of a cluster's certificate or kubeconfig Secrets
/// (`-ca`, `-etcd`, `-proxy`, `-sa`, `-kubeconfig`), or another (bootstrap data).
fn secret_kind(name: &str) -> &'static str {
    ["-ca", "-etcd", "-proxy", "-sa", "-kubeconfig"]
        .into_iter()
        .find(|suffix| name.ends_with(suffix))
        .unwrap_or("(other)")
}

/// `LIST machines`, `WATCH clusters`, `PATCH kubeadmcontrolplanes/status`, `GET secrets -ca`,
/// ... of a request.
fn request_key(method: &http::Method, uri: &http::Uri) -> String {
    let parts: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let skip = match parts.iter().position(|part| *part == "namespaces") {
        Some(at) if parts.len() > at + 2 => at + 2,
        _ if parts.first() == Some(&"api") => 2,
        _ => 3,
    };
    let rest = parts.get(skip..).unwrap_or_default();
    let resource = rest.first().copied().unwrap_or("?");
    let watch = uri.query().is_some_and(|q| q.contains("watch=true"));
    let verb = match (method.as_str(), rest.len()) {
        ("GET", 1) if watch => "WATCH",
        ("GET", 1) => "LIST",
        (method, _) => method,
    };
    match (rest.get(2), rest.get(1)) {
        (Some(subresource), _) => format!("{verb} {resource}/{subresource}"),
        (None, Some(name)) if resource == "secrets" => {
            format!("{verb} {resource} {}", secret_kind(name))
        }
        _ => format!("{verb} {resource}"),
    }
}

/// Counts each request under `<group> <request key>`, and each answered with a conflict (HTTP
/// 409) again under the same key with ` (409)` appended.
#[derive(Clone)]
struct Counting<S> {
    inner: S,
    group: &'static str,
    counts: RequestCounts,
}

impl<S, B> tower::Service<http::Request<kube::client::Body>> for Counting<S>
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let key = format!(
            "{} {}",
            self.group,
            request_key(request.method(), request.uri())
        );
        *self.counts.lock().unwrap().entry(key.clone()).or_default() += 1;
        let counts = self.counts.clone();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            if response.status() == http::StatusCode::CONFLICT {
                *counts
                    .lock()
                    .unwrap()
                    .entry(format!("{key} (409)"))
                    .or_default() += 1;
            }
            Ok(response)
        })
    }
}

pub struct Plane {
    pub env: TestEnv,
    /// The controllers' requests, when started with [`Plane::start_counting`].
    pub requests: Option<RequestCounts>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Plane {
    pub async fn start() -> Plane {
        Self::start_with(false).await
    }

    /// A plane whose controllers' requests are counted (see [`Plane::requests`]).
    pub async fn start_counting() -> Plane {
        Self::start_with(true).await
    }

    async fn start_with(counting: bool) -> Plane {
        let env = TestEnv::start().await;
        let crds: Vec<Value> = corral_api::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).unwrap())
            .chain(
                corral_infra_inmemory::crds()
                    .into_iter()
                    .map(|crd| serde_json::to_value(crd).unwrap()),
            )
            .chain(
                corral_kubeadm::crds()
                    .into_iter()
                    .map(|crd| serde_json::to_value(crd).unwrap()),
            )
            .collect();
        env.install_crds(&crds).await;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        }
        .shared();
        let requests = counting.then(RequestCounts::default);
        // With counting, each group of controllers has a client of its own, whose requests
        // are counted under its name.
        let client_of = |group: &'static str| match &requests {
            None => env.client.clone(),
            Some(counts) => {
                let counts = counts.clone();
                let config = kube::Config::new(env.url().parse().unwrap());
                kube::client::ClientBuilder::try_from(config)
                    .unwrap()
                    .with_layer(&tower::layer::layer_fn(move |inner| Counting {
                        inner,
                        group,
                        counts: counts.clone(),
                    }))
                    .build()
            }
        };
        let (core_client, infra_client, kcp_client, kubeadm_client) = (
            client_of("core"),
            client_of("infra"),
            client_of("kcp"),
            client_of("kubeadm"),
        );
        let cache = ClusterCacheConfig {
            probe_interval: Duration::from_millis(500),
            probe_timeout: Duration::from_secs(2),
            failure_threshold: 3,
        };
        let core_config = corral_controllers::Config {
            backoff_max: Duration::from_secs(1),
            cluster_cache: cache.clone(),
            ..Default::default()
        };
        let kcp_config = corral_kubeadm::controlplane::Config {
            cluster_cache: cache,
            poll_interval: Duration::from_secs(30),
            concurrency: 10,
        };
        let task = tokio::spawn(async move {
            let cloud = Arc::new(InProcessCloud::new());
            // One watch per kind for every controller, as `corral` runs them (the shared
            // watches' requests count as the core controllers').
            let caches = corral_runtime::Caches::new(core_client.clone());
            // One connection per workload cluster for every controller, with the harness's
            // settings whoever asks first.
            caches.cluster_cache(&kcp_config.cluster_cache);
            let provider = corral_infra_inmemory::run_with_caches(
                infra_client,
                cloud,
                caches.clone(),
                shutdown.clone(),
            );
            let core = corral_controllers::run_with_caches(
                core_client,
                core_config,
                caches.clone(),
                shutdown.clone(),
            );
            let control_plane = corral_kubeadm::controlplane::run_with_caches(
                kcp_client,
                kcp_config,
                caches.clone(),
                shutdown.clone(),
            );
            let bootstrap =
                corral_kubeadm::bootstrap::run_with_caches(kubeadm_client, caches, shutdown);
            let ((), result, (), ()) = tokio::join!(provider, core, control_plane, bootstrap);
            result.expect("the core controllers start");
        });
        Plane {
            env,
            requests,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("the controllers do not panic");
        }
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.env.client.clone(), NAMESPACE)
    }

    /// Creates any namespaced object given as JSON (the plural is the lowercased kind + `s`).
    pub async fn create(&self, object: Value) {
        let api_version = object["apiVersion"].as_str().unwrap();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let kind = object["kind"].as_str().unwrap();
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.env.client.clone(), NAMESPACE, &resource);
        let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|error| panic!("creating a {kind}: {error}"));
    }

    pub async fn kcp(&self, name: &str) -> KubeadmControlPlane {
        self.api::<KubeadmControlPlane>().get(name).await.unwrap()
    }

    /// The control plane Machines of every cluster, by name.
    pub async fn control_plane_machines(&self) -> Vec<Machine> {
        let mut machines = self
            .api::<Machine>()
            .list(&ListParams::default().labels("cluster.x-k8s.io/control-plane"))
            .await
            .unwrap()
            .items;
        machines.sort_by_key(|m| m.name_any());
        machines
    }

    /// A client of the workload cluster, from its kubeconfig Secret.
    pub async fn workload_client(&self, cluster: &str) -> kube::Client {
        let secrets: Api<Secret> = self.api();
        let name = format!("{cluster}-kubeconfig");
        let secret = eventually("the kubeconfig Secret", || async {
            secrets.get_opt(&name).await.unwrap()
        })
        .await;
        let value = &secret.data.unwrap()["value"].0;
        let kubeconfig = Kubeconfig::from_yaml(std::str::from_utf8(value).unwrap()).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        kube::Client::try_from(config).unwrap()
    }
}

/// The status of a condition.
pub fn condition(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> Option<String> {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}
