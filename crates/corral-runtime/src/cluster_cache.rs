//! Connections to workload clusters (upstream `controllers/clustercache`): one
//! `kube::Client` per Cluster, built from its `<cluster>-kubeconfig` Secret (data key `value`),
//! shared by the controllers, health-probed, and rebuilt when the Secret changes.
//!
//! A cluster is tracked from the first time a controller asks for it ([`ClusterCache::client`])
//! until [`ClusterCache::forget`]. Each tracked cluster has its own task, which connects,
//! probes the API server every [`ClusterCacheConfig::probe_interval`] (each probe bounded by
//! [`ClusterCacheConfig::probe_timeout`]), drops the connection after
//! [`ClusterCacheConfig::failure_threshold`] failures in a row and tries again; so a cluster
//! that cannot be reached never holds up another, nor a reconcile: callers get
//! [`Error::NotConnected`] at once and turn it into a condition.
//!
//! While connected, the task also keeps a cache of the cluster's Nodes (a reflector), which
//! answers [`ClusterCache::node_by_provider_id`] without a request, and tells subscribers
//! ([`ClusterCache::subscribe_nodes`]) about every Node change, so that Machines waiting for
//! their Node are reconciled when it appears. Connection changes go to
//! [`ClusterCache::subscribe_connections`].
//!
//! [`ClusterCache::run`] watches kubeconfig Secrets (those labelled
//! `cluster.x-k8s.io/cluster-name`, as the contract requires) and keeps the ones named
//! `<cluster>-kubeconfig`: once it has listed them, a connection attempt reads the kubeconfig
//! from there instead of a GET, a cluster whose Secret does not exist yet waits for it (its task
//! is woken when the Secret appears, and looks again with a GET only every
//! [`MISSING_SECRET_RETRY`], for a Secret without the label), and a connection is rebuilt when
//! its Secret changes. Without the watch (or before its first list) every attempt GETs the
//! Secret and a missing one is retried every probe interval.
//!
//! The same watch keeps each Cluster's certificate and kubeconfig Secrets whole
//! (`<cluster>-<purpose>` for the purposes of [`CLUSTER_SECRET_PURPOSES`]), so that the control
//! plane and bootstrap providers read them with [`ClusterCache::cluster_secret`] instead of a
//! GET per reconcile (upstream's kubeadm providers read them through a client whose cache
//! holds Secrets).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::Notify;

use crate::Shutdown;
use crate::lean::Lean;
use crate::triggers::AbortOnDrop;

/// The suffix of a Cluster's kubeconfig Secret: `<cluster>-kubeconfig`.
pub const KUBECONFIG_SECRET_SUFFIX: &str = "-kubeconfig";

/// The data key of the kubeconfig in its Secret.
pub const KUBECONFIG_DATA_KEY: &str = "value";

/// The purposes of the Secrets [`ClusterCache::cluster_secret`] serves, named
/// `<cluster>-<purpose>` and labelled with the cluster's name (upstream `util/secret`): the
/// cluster CA, the etcd CA, the front-proxy CA, the service-account key pair and the admin
/// kubeconfig. Bootstrap data and other labelled Secrets are not kept.
pub const CLUSTER_SECRET_PURPOSES: [&str; 5] = ["ca", "etcd", "proxy", "sa", "kubeconfig"];

/// Connection attempts to a cluster never reached after which it counts as failing rather
/// than not connected yet (upstream's RemoteConnectionProbe and Node conditions use 5).
pub const FIRST_CONNECTION_ATTEMPTS: u32 = 5;

/// How often a tracked cluster whose kubeconfig Secret the watch has not seen is looked for
/// with a GET (a labelled Secret wakes it at once; this finds one without the label, as
/// upstream's ClusterCache, which GETs the Secret, would).
pub const MISSING_SECRET_RETRY: Duration = Duration::from_secs(30);

/// How workload clusters are reached and checked (upstream ClusterCache options).
#[derive(Clone, Debug)]
pub struct ClusterCacheConfig {
    /// How often a connected cluster is probed, and a disconnected one retried.
    pub probe_interval: Duration,
    /// How long a probe, or a connection attempt, may take.
    pub probe_timeout: Duration,
    /// Failed probes in a row after which the connection is dropped.
    pub failure_threshold: u32,
}

impl Default for ClusterCacheConfig {
    fn default() -> Self {
        ClusterCacheConfig {
            probe_interval: Duration::from_secs(10),
            probe_timeout: Duration::from_secs(5),
            failure_threshold: 5,
        }
    }
}

/// A Cluster: namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterKey {
    /// The Cluster's namespace.
    pub namespace: String,
    /// The Cluster's name.
    pub name: String,
}

impl ClusterKey {
    /// The key of a Cluster.
    pub fn new(namespace: &str, name: &str) -> Self {
        ClusterKey {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// A stand-in for this Cluster once it is gone, so that an object outliving it (being
    /// deleted itself) can still finish its deletion: only the name, namespace and
    /// `deletion_timestamp` are set.
    pub fn stand_in(
        &self,
        deletion_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    ) -> Arc<corral_api::Cluster> {
        Arc::new(corral_api::Cluster {
            metadata: kube::api::ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                deletion_timestamp,
                ..Default::default()
            },
            spec: Default::default(),
            status: None,
        })
    }
}

impl std::fmt::Display for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// How probing a workload cluster has gone (upstream `HealthCheckingState`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HealthCheckingState {
    /// When the cluster was last probed or connected to.
    pub last_probe_time: Option<Timestamp>,
    /// When a probe last succeeded.
    pub last_probe_success_time: Option<Timestamp>,
    /// Failed probes or connection attempts since the last success.
    pub consecutive_failures: u32,
}

/// A change of a Node of a workload cluster.
#[derive(Clone, Debug)]
pub struct NodeEvent {
    /// The cluster.
    pub cluster: ClusterKey,
    /// The Node as it now is (or was, when deleted).
    pub node: Node,
}

/// A failure to reach a workload cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig Secret could not be read.
    #[error("cannot read the kubeconfig Secret {namespace}/{name}")]
    GetKubeconfigSecret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The kubeconfig Secret does not exist (yet).
    #[error("the kubeconfig Secret {namespace}/{name} does not exist")]
    FindKubeconfigSecret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// The kubeconfig Secret has no usable `value`.
    #[error("the kubeconfig Secret {namespace}/{name} has no UTF-8 data key value")]
    ReadKubeconfigSecret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// The kubeconfig does not parse.
    #[error("the kubeconfig in Secret {namespace}/{name} is not valid")]
    ParseKubeconfig {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// What is wrong.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No client could be built from the kubeconfig.
    #[error("cannot build a client from the kubeconfig in Secret {namespace}/{name}")]
    BuildClient {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// What went wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The workload cluster's API server did not answer a probe.
    #[error("the API server of workload cluster {cluster} did not answer")]
    Probe {
        /// The cluster.
        cluster: ClusterKey,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The workload cluster's API server did not answer in time.
    #[error("the API server of workload cluster {cluster} did not answer within {timeout:?}")]
    ProbeTimeout {
        /// The cluster.
        cluster: ClusterKey,
        /// The limit.
        timeout: Duration,
    },
    /// The workload cluster is not connected; the last attempt failed as `reason` says.
    #[error("workload cluster {cluster} is not connected: {reason}")]
    NotConnected {
        /// The cluster.
        cluster: ClusterKey,
        /// Why the last connection attempt or probe failed.
        reason: String,
    },
    /// The Node cache of the workload cluster did not fill in time.
    #[error("the Nodes of workload cluster {cluster} could not be listed within {timeout:?}")]
    ListNodes {
        /// The cluster.
        cluster: ClusterKey,
        /// The limit.
        timeout: Duration,
    },
}

/// Clients for workload clusters; cheap to clone.
#[derive(Clone)]
pub struct ClusterCache {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    config: ClusterCacheConfig,
    clusters: Mutex<HashMap<ClusterKey, Arc<Tracked>>>,
    kubeconfigs: Mutex<Kubeconfigs>,
    node_subscribers: Mutex<Vec<mpsc::UnboundedSender<NodeEvent>>>,
    connection_subscribers: Mutex<Vec<mpsc::UnboundedSender<ClusterKey>>>,
}

/// A tracked cluster.
struct Tracked {
    key: ClusterKey,
    state: Mutex<State>,
    /// Serializes connection attempts, so that callers wait for the one under way.
    connecting: tokio::sync::Mutex<()>,
    /// Wakes the cluster's task: its Secret changed.
    wake: Notify,
    task: Mutex<Option<AbortOnDrop>>,
}

#[derive(Default)]
struct State {
    connection: Option<Connection>,
    health: HealthCheckingState,
    last_error: Option<String>,
    attempted: bool,
    /// The Secret changed since the connection was built.
    stale: bool,
    /// The last attempt found no kubeconfig Secret.
    secret_missing: bool,
}

/// The kubeconfig Secrets seen by [`ClusterCache::run`]'s watch, by Cluster.
#[derive(Default)]
struct Kubeconfigs {
    /// The watch has listed every Secret: a Cluster missing from `secrets` has no labelled
    /// kubeconfig Secret, and its task waits for one instead of looking every probe interval.
    synced: bool,
    secrets: HashMap<ClusterKey, KubeconfigSecret>,
    /// The Secrets of a relist under way, which replace `secrets` when it ends.
    relist: Option<HashMap<ClusterKey, KubeconfigSecret>>,
    /// The Clusters' certificate and kubeconfig Secrets, whole, by namespace and name (see
    /// [`ClusterCache::cluster_secret`]).
    cluster_secrets: HashMap<(String, String), Arc<Secret>>,
    /// The same of a relist under way.
    cluster_relist: Option<HashMap<(String, String), Arc<Secret>>>,
}

/// The namespace and name of a Secret that is one of a Cluster's certificate or kubeconfig
/// Secrets ([`CLUSTER_SECRET_PURPOSES`]): named `<cluster>-<purpose>` after its
/// cluster-name label. `None` for any other Secret.
fn cluster_secret_key(secret: &Secret) -> Option<(String, String)> {
    let name = secret.metadata.name.as_deref()?;
    let cluster = secret
        .metadata
        .labels
        .as_ref()?
        .get(corral_api::labels::CLUSTER_NAME)?;
    let purpose = name.strip_prefix(cluster.as_str())?.strip_prefix('-')?;
    CLUSTER_SECRET_PURPOSES.contains(&purpose).then(|| {
        (
            secret.metadata.namespace.clone().unwrap_or_default(),
            name.to_owned(),
        )
    })
}

/// What a connection needs of a kubeconfig Secret.
#[derive(Clone)]
struct KubeconfigSecret {
    /// The kubeconfig (data key `value`), when present and UTF-8.
    value: Option<String>,
    resource_version: String,
}

impl KubeconfigSecret {
    /// The Cluster a Secret named `<cluster>-kubeconfig` belongs to, and what a connection
    /// needs of it; `None` for any other Secret.
    fn of(secret: &Secret) -> Option<(ClusterKey, KubeconfigSecret)> {
        let name = secret.metadata.name.as_deref()?;
        let cluster = name.strip_suffix(KUBECONFIG_SECRET_SUFFIX)?;
        let key = ClusterKey::new(secret.metadata.namespace.as_deref()?, cluster);
        Some((
            key,
            KubeconfigSecret {
                value: secret
                    .data
                    .as_ref()
                    .and_then(|data| data.get(KUBECONFIG_DATA_KEY))
                    .and_then(|value| std::str::from_utf8(&value.0).ok())
                    .map(str::to_owned),
                resource_version: secret.resource_version().unwrap_or_default(),
            },
        ))
    }
}

struct Connection {
    client: Client,
    nodes: Nodes,
    secret_version: String,
    _node_watch: AbortOnDrop,
}

/// A workload cluster's Nodes: the reflector's store and the Node name of each provider ID
/// (upstream indexes its Node cache by `spec.providerID` the same way), so that finding a
/// Machine's Node costs a lookup, not a scan of every Node of the cluster.
#[derive(Clone)]
struct Nodes {
    store: Store<Node>,
    provider_ids: Arc<Mutex<HashMap<String, String>>>,
}

fn provider_id_of(node: &Node) -> Option<&str> {
    node.spec
        .as_ref()
        .and_then(|spec| spec.provider_id.as_deref())
        .filter(|id| !id.is_empty())
}

impl Nodes {
    /// The Node with `spec.providerID` equal to `provider_id`. The index only points at a
    /// name; the store's Node is checked, so an entry left by a Node whose provider ID
    /// changed never answers for another.
    fn by_provider_id(&self, provider_id: &str) -> Option<Arc<Node>> {
        let name = self
            .provider_ids
            .lock()
            .expect("node index lock")
            .get(provider_id)?
            .clone();
        self.store
            .get(&reflector::ObjectRef::new(&name))
            .filter(|node| provider_id_of(node) == Some(provider_id))
    }

    /// Files a Node the store has just applied.
    fn file(&self, node: &Node) {
        if let (Some(id), Some(name)) = (provider_id_of(node), node.metadata.name.as_deref()) {
            let mut index = self.provider_ids.lock().expect("node index lock");
            if index.get(id).map(String::as_str) != Some(name) {
                index.insert(id.to_owned(), name.to_owned());
            }
        }
    }

    /// Forgets a deleted Node, unless its provider ID already points at another Node.
    fn unfile(&self, node: &Node) {
        if let (Some(id), Some(name)) = (provider_id_of(node), node.metadata.name.as_deref()) {
            let mut index = self.provider_ids.lock().expect("node index lock");
            if index.get(id).map(String::as_str) == Some(name) {
                index.remove(id);
            }
        }
    }

    /// Rebuilds the index from the store once a relist has replaced it.
    fn refile_all(&self) {
        let index: HashMap<String, String> = self
            .store
            .state()
            .iter()
            .filter_map(|node| {
                Some((
                    provider_id_of(node)?.to_owned(),
                    node.metadata.name.clone()?,
                ))
            })
            .collect();
        *self.provider_ids.lock().expect("node index lock") = index;
    }
}

impl ClusterCache {
    /// A cache reading kubeconfig Secrets through `client`.
    pub fn new(client: Client, config: ClusterCacheConfig) -> Self {
        ClusterCache {
            inner: Arc::new(Inner {
                client,
                config,
                clusters: Mutex::new(HashMap::new()),
                kubeconfigs: Mutex::new(Kubeconfigs::default()),
                node_subscribers: Mutex::new(Vec::new()),
                connection_subscribers: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Node changes of every connected cluster.
    pub fn subscribe_nodes(&self) -> mpsc::UnboundedReceiver<NodeEvent> {
        let (sender, receiver) = mpsc::unbounded();
        self.inner
            .node_subscribers
            .lock()
            .expect("subscribers lock")
            .push(sender);
        receiver
    }

    /// Clusters whose connection came up or went down.
    pub fn subscribe_connections(&self) -> mpsc::UnboundedReceiver<ClusterKey> {
        let (sender, receiver) = mpsc::unbounded();
        self.inner
            .connection_subscribers
            .lock()
            .expect("subscribers lock")
            .push(sender);
        receiver
    }

    /// A client for the workload cluster. The first call for a cluster connects (within the
    /// probe timeout); later calls answer at once, with [`Error::NotConnected`] while the
    /// cluster cannot be reached.
    pub async fn client(&self, cluster: &ClusterKey) -> Result<Client, Error> {
        let tracked = self.track(cluster);
        if let Some(client) = tracked.connected_client() {
            return Ok(client);
        }
        if !tracked.state.lock().expect("state lock").attempted {
            self.inner.connect(&tracked, true).await;
            if let Some(client) = tracked.connected_client() {
                return Ok(client);
            }
        }
        Err(tracked.not_connected())
    }

    /// The Node whose `spec.providerID` is `provider_id`, from the cluster's Node cache.
    pub async fn node_by_provider_id(
        &self,
        cluster: &ClusterKey,
        provider_id: &str,
    ) -> Result<Option<Arc<Node>>, Error> {
        Ok(self.nodes(cluster).await?.by_provider_id(provider_id))
    }

    /// The Node named `name`, from the cluster's Node cache.
    pub async fn node(&self, cluster: &ClusterKey, name: &str) -> Result<Option<Arc<Node>>, Error> {
        let nodes = self.nodes(cluster).await?;
        Ok(nodes.store.get(&reflector::ObjectRef::new(name)))
    }

    async fn nodes(&self, cluster: &ClusterKey) -> Result<Nodes, Error> {
        self.client(cluster).await?;
        let tracked = self.track(cluster);
        let store = {
            let state = tracked.state.lock().expect("state lock");
            match &state.connection {
                Some(connection) => connection.nodes.clone(),
                None => return Err(tracked.not_connected()),
            }
        };
        let timeout = self.inner.config.probe_timeout;
        match tokio::time::timeout(timeout, store.store.wait_until_ready()).await {
            Ok(Ok(())) => Ok(store),
            _ => Err(Error::ListNodes {
                cluster: cluster.clone(),
                timeout,
            }),
        }
    }

    /// How probing the cluster has gone; the default when it is not tracked.
    pub fn health_checking_state(&self, cluster: &ClusterKey) -> HealthCheckingState {
        let clusters = self.inner.clusters.lock().expect("clusters lock");
        clusters
            .get(cluster)
            .map(|tracked| tracked.state.lock().expect("state lock").health.clone())
            .unwrap_or_default()
    }

    /// Whether [`ClusterCache::run`]'s watch has listed the kubeconfig Secrets, so that
    /// connection attempts read them from it and a cluster without one waits for it.
    pub fn kubeconfig_secrets_listed(&self) -> bool {
        self.inner
            .kubeconfigs
            .lock()
            .expect("kubeconfigs lock")
            .synced
    }

    /// One of a Cluster's certificate or kubeconfig Secrets ([`CLUSTER_SECRET_PURPOSES`]) as
    /// [`ClusterCache::run`]'s watch last saw it; `None` when the watch has not seen it (it
    /// has not listed yet or is not running, the Secret does not exist, lacks the cluster-name
    /// label, or was written a moment ago): a caller then GETs it. The watch is a little
    /// behind the API server, like any cache: a write based on what this returns must carry
    /// its resourceVersion.
    pub fn cluster_secret(&self, namespace: &str, name: &str) -> Option<Arc<Secret>> {
        self.inner
            .kubeconfigs
            .lock()
            .expect("kubeconfigs lock")
            .cluster_secrets
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Stops tracking a cluster (it was deleted) and drops its connection.
    pub fn forget(&self, cluster: &ClusterKey) {
        let removed = self
            .inner
            .clusters
            .lock()
            .expect("clusters lock")
            .remove(cluster);
        if let Some(tracked) = removed {
            tracked.task.lock().expect("task lock").take();
            tracked.state.lock().expect("state lock").connection = None;
        }
    }

    /// Starts tracking a cluster, connecting in the background, unless already tracked (the
    /// Cluster controller does so once the Cluster's infrastructure is provisioned, as
    /// upstream's ClusterCache does).
    pub fn track_cluster(&self, cluster: &ClusterKey) {
        self.track(cluster);
    }

    fn track(&self, cluster: &ClusterKey) -> Arc<Tracked> {
        let mut clusters = self.inner.clusters.lock().expect("clusters lock");
        if let Some(tracked) = clusters.get(cluster) {
            return tracked.clone();
        }
        let tracked = Arc::new(Tracked {
            key: cluster.clone(),
            state: Mutex::new(State::default()),
            connecting: tokio::sync::Mutex::new(()),
            wake: Notify::new(),
            task: Mutex::new(None),
        });
        let inner = self.inner.clone();
        let weak = Arc::downgrade(&tracked);
        let task = tokio::spawn(async move {
            // Holding the cluster while waiting is fine: `forget` aborts this task.
            let mut first = true;
            loop {
                let Some(tracked) = weak.upgrade() else {
                    return;
                };
                if first {
                    // Unless a caller of `client` has just made the first attempt.
                    inner.connect(&tracked, true).await;
                    first = false;
                } else {
                    inner.check(&tracked).await;
                }
                let wait = inner.next_check(&tracked);
                let notified = tracked.wake.notified();
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = notified => {}
                }
            }
        });
        *tracked.task.lock().expect("task lock") = Some(AbortOnDrop(task));
        clusters.insert(cluster.clone(), tracked.clone());
        tracked
    }

    /// Watches kubeconfig Secrets until `shutdown`: keeps them for connection attempts,
    /// connects a tracked cluster as soon as its Secret appears and rebuilds a connection when
    /// its Secret changes.
    pub async fn run(self, shutdown: Shutdown) {
        let secrets: Api<Secret> = Api::all(self.inner.client.clone());
        let config = watcher::Config::default().labels(corral_api::labels::CLUSTER_NAME);
        let mut events = watcher(secrets, config)
            .default_backoff()
            .take_until(shutdown)
            .boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Init) => {
                    let mut kubeconfigs = self.inner.kubeconfigs.lock().expect("kubeconfigs lock");
                    kubeconfigs.relist = Some(HashMap::new());
                    kubeconfigs.cluster_relist = Some(HashMap::new());
                }
                Ok(watcher::Event::InitApply(secret)) => {
                    let mut kubeconfigs = self.inner.kubeconfigs.lock().expect("kubeconfigs lock");
                    if let Some((key, kubeconfig)) = KubeconfigSecret::of(&secret) {
                        kubeconfigs
                            .relist
                            .get_or_insert_with(HashMap::new)
                            .insert(key, kubeconfig);
                    }
                    if let Some(key) = cluster_secret_key(&secret) {
                        kubeconfigs
                            .cluster_relist
                            .get_or_insert_with(HashMap::new)
                            .insert(key, Arc::new(secret));
                    }
                }
                Ok(watcher::Event::InitDone) => {
                    let listed: Vec<(ClusterKey, String)> = {
                        let mut kubeconfigs =
                            self.inner.kubeconfigs.lock().expect("kubeconfigs lock");
                        kubeconfigs.secrets = kubeconfigs.relist.take().unwrap_or_default();
                        kubeconfigs.cluster_secrets =
                            kubeconfigs.cluster_relist.take().unwrap_or_default();
                        kubeconfigs.synced = true;
                        kubeconfigs
                            .secrets
                            .iter()
                            .map(|(key, secret)| (key.clone(), secret.resource_version.clone()))
                            .collect()
                    };
                    for (key, version) in listed {
                        self.inner.secret_seen(&key, &version);
                    }
                }
                Ok(watcher::Event::Apply(secret)) => {
                    let seen = {
                        let mut kubeconfigs =
                            self.inner.kubeconfigs.lock().expect("kubeconfigs lock");
                        let seen = KubeconfigSecret::of(&secret).map(|(key, kubeconfig)| {
                            let version = kubeconfig.resource_version.clone();
                            kubeconfigs.secrets.insert(key.clone(), kubeconfig);
                            (key, version)
                        });
                        if let Some(key) = cluster_secret_key(&secret) {
                            kubeconfigs.cluster_secrets.insert(key, Arc::new(secret));
                        }
                        seen
                    };
                    if let Some((key, version)) = seen {
                        self.inner.secret_seen(&key, &version);
                    }
                }
                Ok(watcher::Event::Delete(secret)) => {
                    let mut kubeconfigs = self.inner.kubeconfigs.lock().expect("kubeconfigs lock");
                    if let Some(key) = cluster_secret_key(&secret) {
                        kubeconfigs.cluster_secrets.remove(&key);
                    }
                    // The connection stays while probes succeed (as upstream's): only the
                    // next attempt, if any, misses the Secret.
                    if let Some((key, _)) = KubeconfigSecret::of(&secret) {
                        kubeconfigs.secrets.remove(&key);
                    }
                }
                Err(error) => {
                    tracing::debug!(%error, "Kubeconfig Secret watch failed, retrying");
                }
            }
        }
    }
}

impl Tracked {
    fn connected_client(&self) -> Option<Client> {
        let state = self.state.lock().expect("state lock");
        state.connection.as_ref().map(|c| c.client.clone())
    }

    fn not_connected(&self) -> Error {
        let state = self.state.lock().expect("state lock");
        Error::NotConnected {
            cluster: self.key.clone(),
            reason: state
                .last_error
                .clone()
                .unwrap_or_else(|| "no connection attempted yet".to_owned()),
        }
    }
}

impl Inner {
    /// Wakes a tracked cluster whose kubeconfig Secret is now at `version`: to connect, when
    /// it is not connected, or to rebuild a connection built from another version.
    fn secret_seen(&self, cluster: &ClusterKey, version: &str) {
        let tracked = self
            .clusters
            .lock()
            .expect("clusters lock")
            .get(cluster)
            .cloned();
        let Some(tracked) = tracked else { return };
        let changed = {
            let mut state = tracked.state.lock().expect("state lock");
            match &state.connection {
                Some(connection) if connection.secret_version == version => false,
                Some(_) => {
                    state.stale = true;
                    true
                }
                None => true,
            }
        };
        if changed {
            tracing::info!(cluster = %cluster, "Kubeconfig Secret changed, reconnecting to the workload cluster");
            tracked.wake.notify_one();
        }
    }

    /// How long the cluster's task waits for its next round (a wake-up ends the wait early):
    /// the probe interval, or [`MISSING_SECRET_RETRY`] when the last attempt found no
    /// kubeconfig Secret and the Secret watch, which wakes the task when it appears, has
    /// listed them.
    fn next_check(&self, tracked: &Tracked) -> Duration {
        let waiting_for_secret = {
            let state = tracked.state.lock().expect("state lock");
            state.connection.is_none() && state.secret_missing
        };
        if waiting_for_secret && self.kubeconfigs.lock().expect("kubeconfigs lock").synced {
            MISSING_SECRET_RETRY.max(self.config.probe_interval)
        } else {
            self.config.probe_interval
        }
    }

    /// One round of the cluster's task: probe when connected, connect otherwise.
    async fn check(&self, tracked: &Arc<Tracked>) {
        let (client, stale) = {
            let state = tracked.state.lock().expect("state lock");
            (
                state.connection.as_ref().map(|c| c.client.clone()),
                state.stale,
            )
        };
        match client {
            Some(_) if stale => {
                tracked.state.lock().expect("state lock").connection = None;
                self.connect(tracked, false).await;
            }
            Some(client) => {
                let result = self.probe(&tracked.key, &client).await;
                let dropped = {
                    let mut state = tracked.state.lock().expect("state lock");
                    record_probe(&mut state, &result, self.config.failure_threshold)
                };
                if dropped {
                    tracing::info!(cluster = %tracked.key, "Disconnected from the workload cluster after failed probes");
                    self.notify_connection(&tracked.key);
                }
            }
            None => self.connect(tracked, false).await,
        }
    }

    /// Builds a connection from the kubeconfig Secret and probes it; with `first_only`, only
    /// if no attempt was made yet (a caller waiting for the first one).
    async fn connect(&self, tracked: &Arc<Tracked>, first_only: bool) {
        let _attempt = tracked.connecting.lock().await;
        {
            let state = tracked.state.lock().expect("state lock");
            if (state.connection.is_some() && !state.stale) || (first_only && state.attempted) {
                return;
            }
        }
        let result = self.build_connection(&tracked.key).await;
        let connected = {
            let mut state = tracked.state.lock().expect("state lock");
            state.attempted = true;
            state.stale = false;
            state.secret_missing = matches!(result, Err(Error::FindKubeconfigSecret { .. }));
            state.health.last_probe_time = Some(Timestamp::now());
            match result {
                Ok((client, secret_version)) => {
                    state.health.last_probe_success_time = state.health.last_probe_time;
                    state.health.consecutive_failures = 0;
                    state.last_error = None;
                    let (nodes, node_watch) = self.watch_nodes(&tracked.key, client.clone());
                    state.connection = Some(Connection {
                        client,
                        nodes,
                        secret_version,
                        _node_watch: node_watch,
                    });
                    true
                }
                Err(error) => {
                    state.health.consecutive_failures += 1;
                    state.last_error = Some(crate::error_chain(&error));
                    state.connection = None;
                    false
                }
            }
        };
        if connected {
            tracing::info!(cluster = %tracked.key, "Connected to the workload cluster");
            self.notify_connection(&tracked.key);
        } else if self.gave_up_first_connection(tracked) {
            // Enough attempts for the Cluster to say the connection failed, rather than that
            // it is not established yet.
            self.notify_connection(&tracked.key);
        }
    }

    async fn build_connection(&self, cluster: &ClusterKey) -> Result<(Client, String), Error> {
        let name = format!("{}{KUBECONFIG_SECRET_SUFFIX}", cluster.name);
        let namespace = cluster.namespace.clone();
        let secret = self.kubeconfig_secret(cluster, &namespace, &name).await?;
        let text = secret.value.ok_or_else(|| Error::ReadKubeconfigSecret {
            namespace: namespace.clone(),
            name: name.clone(),
        })?;
        let kubeconfig = Kubeconfig::from_yaml(&text).map_err(|source| Error::ParseKubeconfig {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
        let build_error = |source: Box<dyn std::error::Error + Send + Sync>| Error::BuildClient {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        };
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|source| build_error(Box::new(source)))?;
        config.connect_timeout = Some(self.config.probe_timeout);
        // A plain-HTTP server (a simulated cluster's) needs no trust roots; given none,
        // kube-client reads the system's certificate store for every client it builds, which
        // for a thousand clusters was a few percent of all the controllers' CPU.
        if config.cluster_url.scheme_str() == Some("http") && config.root_cert.is_none() {
            config.root_cert = Some(Vec::new());
        }
        let client = Client::try_from(config).map_err(|source| build_error(Box::new(source)))?;
        self.probe(cluster, &client).await?;
        Ok((client, secret.resource_version))
    }

    /// The cluster's kubeconfig Secret: from the Secret watch when it has it, else a GET (the
    /// watch has not listed yet, is not running, or the Secret lacks the label it selects).
    async fn kubeconfig_secret(
        &self,
        cluster: &ClusterKey,
        namespace: &str,
        name: &str,
    ) -> Result<KubeconfigSecret, Error> {
        let watched = self
            .kubeconfigs
            .lock()
            .expect("kubeconfigs lock")
            .secrets
            .get(cluster)
            .cloned();
        if let Some(secret) = watched {
            return Ok(secret);
        }
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let secret = secrets
            .get_opt(name)
            .await
            .map_err(|source| Error::GetKubeconfigSecret {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                source,
            })?
            .ok_or_else(|| Error::FindKubeconfigSecret {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })?;
        Ok(KubeconfigSecret::of(&secret)
            .map(|(_, secret)| secret)
            .unwrap_or(KubeconfigSecret {
                value: None,
                resource_version: secret.resource_version().unwrap_or_default(),
            }))
    }

    async fn probe(&self, cluster: &ClusterKey, client: &Client) -> Result<(), Error> {
        let timeout = self.config.probe_timeout;
        match tokio::time::timeout(timeout, client.apiserver_version()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(source)) => Err(Error::Probe {
                cluster: cluster.clone(),
                source,
            }),
            Err(_) => Err(Error::ProbeTimeout {
                cluster: cluster.clone(),
                timeout,
            }),
        }
    }

    fn watch_nodes(&self, cluster: &ClusterKey, client: Client) -> (Nodes, AbortOnDrop) {
        let (store, writer) = reflector::store();
        let nodes = Nodes {
            store,
            provider_ids: Arc::new(Mutex::new(HashMap::new())),
        };
        // Decoded without managedFields, which nothing here reads (see `lean`).
        let api: Api<Lean<Node>> = Api::all(client);
        let subscribers: Vec<_> = self
            .node_subscribers
            .lock()
            .expect("subscribers lock")
            .clone();
        let cluster = cluster.clone();
        let index = nodes.clone();
        let task = tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .map_ok(crate::lean::unwrap_event)
                .reflect(writer)
                .boxed();
            while let Some(event) = events.next().await {
                let node = match event {
                    Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node)) => {
                        index.file(&node);
                        node
                    }
                    Ok(watcher::Event::Delete(node)) => {
                        index.unfile(&node);
                        node
                    }
                    Ok(watcher::Event::InitDone) => {
                        index.refile_all();
                        continue;
                    }
                    Ok(watcher::Event::Init) => continue,
                    Err(error) => {
                        tracing::debug!(%error, cluster = %cluster, "Node watch failed, retrying");
                        continue;
                    }
                };
                for subscriber in &subscribers {
                    let _ = subscriber.unbounded_send(NodeEvent {
                        cluster: cluster.clone(),
                        node: node.clone(),
                    });
                }
            }
        });
        (nodes, AbortOnDrop(task))
    }

    /// Whether the attempt just made is the one after which a cluster never reached counts as
    /// failing ([`FIRST_CONNECTION_ATTEMPTS`]).
    fn gave_up_first_connection(&self, tracked: &Tracked) -> bool {
        let state = tracked.state.lock().expect("state lock");
        state.health.last_probe_success_time.is_none()
            && state.health.consecutive_failures == FIRST_CONNECTION_ATTEMPTS
    }

    fn notify_connection(&self, cluster: &ClusterKey) {
        let mut subscribers = self
            .connection_subscribers
            .lock()
            .expect("subscribers lock");
        subscribers.retain(|subscriber| subscriber.unbounded_send(cluster.clone()).is_ok());
    }
}

/// Records a probe of a connected cluster; returns whether the connection is dropped
/// (`threshold` failures in a row).
fn record_probe(state: &mut State, result: &Result<(), Error>, threshold: u32) -> bool {
    let now = Timestamp::now();
    state.health.last_probe_time = Some(now);
    match result {
        Ok(()) => {
            state.health.last_probe_success_time = Some(now);
            state.health.consecutive_failures = 0;
            false
        }
        Err(error) => {
            state.health.consecutive_failures += 1;
            state.last_error = Some(crate::error_chain(error));
            if state.health.consecutive_failures >= threshold {
                state.connection = None;
                true
            } else {
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeSpec;
    use kube::runtime::reflector::store::Writer;

    fn node(name: &str, provider_id: &str) -> Node {
        Node {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                provider_id: Some(provider_id.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn nodes() -> (Nodes, Writer<Node>) {
        let (store, writer) = reflector::store();
        let nodes = Nodes {
            store,
            provider_ids: Arc::new(Mutex::new(HashMap::new())),
        };
        (nodes, writer)
    }

    fn apply(nodes: &Nodes, writer: &mut Writer<Node>, node: Node) {
        writer.apply_watcher_event(&watcher::Event::Apply(node.clone()));
        nodes.file(&node);
    }

    fn name_for(nodes: &Nodes, provider_id: &str) -> Option<String> {
        nodes
            .by_provider_id(provider_id)
            .map(|node| node.name_any())
    }

    #[test]
    fn nodes_are_found_by_provider_id_through_changes_deletes_and_relists() {
        let (nodes, mut writer) = nodes();
        apply(&nodes, &mut writer, node("a", "mem://a"));
        apply(&nodes, &mut writer, node("b", "mem://b"));
        assert_eq!(name_for(&nodes, "mem://a").as_deref(), Some("a"));
        assert_eq!(name_for(&nodes, "mem://b").as_deref(), Some("b"));
        assert_eq!(name_for(&nodes, "mem://c"), None);

        // A Node whose provider ID changes answers for the new one only.
        apply(&nodes, &mut writer, node("a", "mem://a2"));
        assert_eq!(name_for(&nodes, "mem://a"), None);
        assert_eq!(name_for(&nodes, "mem://a2").as_deref(), Some("a"));

        // A deleted Node is gone; deleting an old holder keeps the new one's entry.
        apply(&nodes, &mut writer, node("c", "mem://b"));
        let b = node("b", "mem://b");
        writer.apply_watcher_event(&watcher::Event::Delete(b.clone()));
        nodes.unfile(&b);
        assert_eq!(name_for(&nodes, "mem://b").as_deref(), Some("c"));
        let c = node("c", "mem://b");
        writer.apply_watcher_event(&watcher::Event::Delete(c.clone()));
        nodes.unfile(&c);
        assert_eq!(name_for(&nodes, "mem://b"), None);

        // A relist replaces everything: the index follows the store.
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(node("d", "mem://d")));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        nodes.refile_all();
        assert_eq!(name_for(&nodes, "mem://a2"), None);
        assert_eq!(name_for(&nodes, "mem://d").as_deref(), Some("d"));
    }
}
