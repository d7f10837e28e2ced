//! The management plane the scale benchmark measures, in this process: the API server over the
//! SQLite store (crate defaults, on disk), the Cluster API and in-memory provider CRDs, the core
//! controllers and the in-memory provider with its simulated cloud — what `corral up` runs —
//! plus what the benchmark reads from it: store writes per resource, reconciles per controller,
//! CPU time and memory of the process.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use corral_apiserver::{Server, ServerConfig};
use corral_cloud::InProcessCloud;
use corral_store::{
    DynStore, KeyValue, RangeRequest, RangeResponse, Result as StoreResult, Revision, Store,
    WatchStream,
};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};

/// A running management plane. [`ManagementPlane::stop`] ends it.
pub struct ManagementPlane {
    pub client: kube::Client,
    pub server: Server,
    pub store: Arc<CountingStore>,
    cloud: Arc<InProcessCloud>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    controllers: Option<tokio::task::JoinHandle<()>>,
}

impl ManagementPlane {
    /// Opens a SQLite store in `dir`, starts the API server on a free loopback port, installs
    /// the CRDs and starts the controllers with `config`.
    pub async fn start(
        dir: &Path,
        config: corral_controllers::Config,
        server_config: ServerConfig,
    ) -> anyhow::Result<ManagementPlane> {
        let sqlite = corral_store::sqlite::SqliteStore::open(&dir.join("corral.db"))
            .context("opening the SQLite store")?;
        let store = Arc::new(CountingStore::new(Arc::new(sqlite)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding a loopback port")?;
        let dyn_store: DynStore = store.clone();
        let server = Server::start(listener, dyn_store, server_config)
            .await
            .map_err(|error| anyhow::anyhow!("starting the API server: {error}"))?;
        // In-process, as `corral up` connects its controllers to its own server.
        let client = kube::Client::new(server.in_process(), "default");
        install_crds(&client).await?;

        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown: Shared<BoxFuture<'static, ()>> = stopped.map(|_| ()).boxed().shared();
        let cloud = Arc::new(InProcessCloud::new());
        // The provider and the core controllers share one watch per kind, as in `corral`.
        let caches = corral_runtime::Caches::new(client.clone());
        let provider = corral_infra_inmemory::run_with_caches(
            client.clone(),
            cloud.clone(),
            caches.clone(),
            shutdown.clone(),
        );
        let core = corral_controllers::run_with_caches(client.clone(), config, caches, shutdown);
        let controllers = tokio::spawn(async move {
            let (_, result) = tokio::join!(provider, core);
            if let Err(error) = result {
                eprintln!("the controllers stopped: {error}");
            }
        });
        Ok(ManagementPlane {
            client,
            server,
            store,
            cloud,
            stop: Some(stop),
            controllers: Some(controllers),
        })
    }

    /// Stops the controllers (letting reconciles under way finish), the simulated workload
    /// clusters and the API server.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(controllers) = self.controllers.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), controllers).await;
        }
        self.cloud.shutdown().await;
        self.server.shutdown().await;
    }

    /// What the process and the store have done so far.
    pub fn sample(&self) -> Sample {
        Sample {
            at: Instant::now(),
            cpu: crate::cpu::process_cpu(None),
            writes: self.store.writes(),
            reconciles: reconcile_counts(),
        }
    }
}

/// Creates the Cluster API and in-memory provider CRDs, then waits until each is served.
async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    let resource = ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let crds = corral_api::crds()
        .into_iter()
        .chain(corral_infra_inmemory::crds());
    for crd in crds {
        let mut value = serde_json::to_value(&crd).context("serializing a CRD")?;
        value["apiVersion"] = "apiextensions.k8s.io/v1".into();
        value["kind"] = "CustomResourceDefinition".into();
        let object: DynamicObject = serde_json::from_value(value).context("a CRD as an object")?;
        let name = object.metadata.name.clone().unwrap_or_default();
        api.create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("installing the CRD {name}"))?;
    }
    Ok(())
}

/// Reconciles so far per controller, core and provider: `(controller, reconciles, failures)`.
pub fn reconcile_counts() -> BTreeMap<String, (u64, u64)> {
    let mut counts = BTreeMap::new();
    for count in corral_runtime::metrics::reconcile_counts() {
        counts.insert(
            count.controller.to_string(),
            (count.reconciles, count.failures),
        );
    }
    for (controller, reconciles, failures) in corral_infra_inmemory::reconcile_counts() {
        counts.insert(controller.to_string(), (reconciles, failures));
    }
    counts
}

/// The process's peak and current resident memory (`VmHWM`, `VmRSS` of `/proc/self/status`).
pub fn memory() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|line| line.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

/// What had happened at one moment; two samples make a [`Delta`].
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Instant,
    pub cpu: Option<Duration>,
    /// Store writes per resource (`group/resource`).
    pub writes: BTreeMap<String, u64>,
    pub reconciles: BTreeMap<String, (u64, u64)>,
}

/// What happened between two samples.
#[derive(Clone, Debug, Default)]
pub struct Delta {
    pub wall: Duration,
    pub cpu: Option<Duration>,
    pub writes: BTreeMap<String, u64>,
    pub reconciles: BTreeMap<String, (u64, u64)>,
}

impl Sample {
    pub fn until(&self, later: &Sample) -> Delta {
        let writes = later
            .writes
            .iter()
            .map(|(resource, &count)| {
                let before = self.writes.get(resource).copied().unwrap_or(0);
                (resource.clone(), count - before)
            })
            .filter(|(_, count)| *count > 0)
            .collect();
        let reconciles = later
            .reconciles
            .iter()
            .map(|(controller, &(reconciles, failures))| {
                let (before, failed_before) =
                    self.reconciles.get(controller).copied().unwrap_or((0, 0));
                (
                    controller.clone(),
                    (reconciles - before, failures - failed_before),
                )
            })
            .collect();
        let cpu = match (self.cpu, later.cpu) {
            (Some(before), Some(after)) => Some(after.saturating_sub(before)),
            _ => None,
        };
        Delta {
            wall: later.at - self.at,
            cpu,
            writes,
            reconciles,
        }
    }
}

impl Delta {
    /// Every store write of the management plane.
    pub fn total_writes(&self) -> u64 {
        self.writes.values().sum()
    }
}

/// A store that counts the writes (creates, updates, deletes) per resource of the one it
/// wraps: the API server's writes, whoever asked for them (controllers, garbage collector,
/// the benchmark itself). The simulated workload clusters have stores of their own, not
/// counted here.
pub struct CountingStore {
    inner: DynStore,
    writes: Mutex<BTreeMap<String, u64>>,
}

impl CountingStore {
    pub fn new(inner: DynStore) -> CountingStore {
        CountingStore {
            inner,
            writes: Mutex::new(BTreeMap::new()),
        }
    }

    /// Writes so far per resource.
    pub fn writes(&self) -> BTreeMap<String, u64> {
        self.writes.lock().unwrap().clone()
    }

    fn count(&self, key: &str) {
        // Keys are `/registry/<group>/<resource>/...`.
        let mut parts = key.split('/').skip(2);
        let resource = match (parts.next(), parts.next()) {
            (Some(group), Some(resource)) => format!("{group}/{resource}"),
            _ => key.to_string(),
        };
        let mut writes = self.writes.lock().unwrap();
        match writes.get_mut(&resource) {
            Some(count) => *count += 1,
            None => {
                writes.insert(resource, 1);
            }
        }
    }
}

#[async_trait::async_trait]
impl Store for CountingStore {
    async fn current_revision(&self) -> StoreResult<Revision> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> StoreResult<Option<KeyValue>> {
        self.inner.get(key, revision).await
    }

    async fn range(&self, request: RangeRequest) -> StoreResult<RangeResponse> {
        self.inner.range(request).await
    }

    async fn create(&self, key: &str, value: Bytes) -> StoreResult<Revision> {
        let result = self.inner.create(key, value).await;
        if result.is_ok() {
            self.count(key);
        }
        result
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> StoreResult<Revision> {
        let result = self.inner.update(key, value, expected).await;
        if result.is_ok() {
            self.count(key);
        }
        result
    }

    async fn delete(&self, key: &str, expected: Revision) -> StoreResult<(Revision, KeyValue)> {
        let result = self.inner.delete(key, expected).await;
        if result.is_ok() {
            self.count(key);
        }
        result
    }

    async fn watch(&self, prefix: &str, after: Revision) -> StoreResult<WatchStream> {
        self.inner.watch(prefix, after).await
    }

    async fn compact(&self, revision: Revision) -> StoreResult<()> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> StoreResult<Revision> {
        self.inner.compacted_revision().await
    }
}
