//! The KubeadmConfig controller (upstream `bootstrap/kubeadm/reconcilers/kubeadmconfig/`):
//! turns a Machine's KubeadmConfig into its bootstrap data, a cloud-config (or an Ignition
//! config, [`ignition`]) that runs `kubeadm init` on the first control plane machine and
//! `kubeadm join` on every other machine.
//!
//! A reconcile, for a KubeadmConfig owned by a Machine:
//!
//! 1. A paused Cluster (or a paused KubeadmConfig) is left alone, with a `Paused` condition.
//! 2. Nothing is done until the Cluster's infrastructure is provisioned.
//! 3. Once the data Secret exists, the only work left is the join token: it is kept valid while
//!    the Machine has no Node (see [`token`]).
//! 4. While the Cluster's control plane is not initialized, only a control plane Machine
//!    proceeds, and only the one holding the init lock ([`lock`]), whatever its configuration
//!    says (as upstream's v1beta2; kubeadm's defaults make a valid init); it gets the cluster certificates (generated here when the Cluster has no
//!    control plane provider, otherwise the provider's) and an init cloud-config.
//! 5. Afterwards every Machine joins: a bootstrap token is created in the workload cluster and
//!    recorded in `spec.joinConfiguration.discovery.bootstrapToken.token`, as upstream does, and
//!    a control plane Machine also gets the certificates.
//!
//! The data Secret is named like the KubeadmConfig, type `cluster.x-k8s.io/secret`, keys `value`
//! (the cloud-config, or the Ignition JSON of [`ignition`] with `spec.format: ignition`) and
//! `format` (`cloud-config` or `ignition`), label `cluster.x-k8s.io/cluster-name`, controlled by the
//! KubeadmConfig. Status: `initialization.dataSecretCreated`, `dataSecretName`, and the
//! conditions `Ready`, `DataSecretAvailable`, `CertificatesAvailable` and `Paused`.
//!
//! Corral differs from upstream in two places, both documented where they happen: generated
//! certificate Secrets are owned by the Cluster rather than by the first KubeadmConfig (so that
//! deleting the first control plane machine cannot delete the cluster's CAs), and
//! `contentFormat: Template` and, with `format: ignition`, `ignition.containerLinuxConfig.additionalConfig`
//! are refused with a condition rather than rendered.

pub mod cloud_init;
pub mod ignition;
pub mod kubeadm_yaml;
pub mod lock;
mod status;
pub mod token;

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_api::{Cluster, Machine};
use corral_runtime::Recorder;
use corral_runtime::changes::Fingerprints;
use corral_runtime::cluster_cache::{ClusterCache, ClusterCacheConfig, ClusterKey};
use corral_runtime::ready::CachesReady;
use corral_runtime::shared::{self, Caches, SharedCache};
use corral_runtime::{Queue, patch};
use futures::stream::SelectAll;
use futures::{FutureExt, StreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, trigger_with};
use kube::runtime::events::{EventType, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use serde_json::json;
use time::OffsetDateTime;
use tracing::Instrument;

use crate::api::bootstrap::{FileContentFormat, Format, KubeadmConfig, KubeadmConfigStatus, User};
use crate::certs::{self, ClusterCertificates, KeyAlgorithm, KeyMaterial, Purpose};
use cloud_init::{CloudConfig, KubeadmCommand, WriteFile};
use kubeadm_yaml::ClusterFacts;
use status::{Conditions, condition_types, reasons};
use token::BootstrapToken;

/// The name the controller reports as, in Events.
const CONTROLLER_NAME: &str = "corral-kubeadm-bootstrap";

/// How long to wait before looking again at what produces no watch event here: a lock held by
/// another machine, Secrets the configuration refers to, a workload cluster to be reachable.
const RETRY: Duration = Duration::from_secs(30);

/// How long to wait before looking again for missing cluster certificate Secrets: their
/// creation (by the control plane provider or a user) produces no watch event here, and a
/// machine's bootstrap waits on nothing else, so sooner than [`RETRY`] (upstream returns an
/// error, which its rate limiter retries from 5 ms on).
const CERTIFICATES_RETRY: Duration = Duration::from_secs(5);

/// How long to wait before reconciling a KubeadmConfig whose reconcile failed.
const ERROR_REQUEUE: Duration = Duration::from_secs(5);

/// The key of the bootstrap data's format in its Secret.
pub const FORMAT_KEY: &str = "format";

/// The `format` of cloud-init bootstrap data.
pub const CLOUD_CONFIG_FORMAT: &str = "cloud-config";

/// The `format` of Ignition bootstrap data.
pub const IGNITION_FORMAT: &str = "ignition";

/// The key of the bootstrap data in its Secret (the bootstrap contract's).
pub const VALUE_KEY: &str = "value";

/// The cluster certificates a machine's bootstrap data needs: all four for a control plane
/// machine, the cluster CA alone for a worker.
enum Found {
    All(ClusterCertificates),
    ClusterCa(KeyMaterial),
}

impl Found {
    fn cluster_ca(&self) -> &KeyMaterial {
        match self {
            Found::All(certificates) => &certificates.cluster_ca,
            Found::ClusterCa(ca) => ca,
        }
    }
}

/// What every reconcile shares.
struct Context {
    client: kube::Client,
    recorder: Recorder,
    /// The workload clusters' clients, for join tokens: the process's shared connections
    /// (built from the `<cluster>-kubeconfig` Secret once, not read per token).
    cluster_cache: ClusterCache,
    /// The cluster certificate Secrets, from `cluster_cache`'s Secret watch (a GET each per
    /// bootstrap data otherwise: one for a worker, four for a control plane machine).
    secrets: certs::SecretReader,
    /// The Machines and Clusters (the process's shared caches, whose watches wake the
    /// controller), read instead of a GET of the KubeadmConfig's Machine and Cluster per
    /// reconcile (two requests of every reconcile, a fifth of the controllers' requests in the
    /// KCP benchmark), as upstream reads them from its cache.
    machines: SharedCache<Machine>,
    clusters: SharedCache<Cluster>,
    /// The caches above filled once (an empty cache would only make a reconcile wait).
    ready: CachesReady,
    /// The Clusters (by uid) whose init lock this controller released once their control
    /// plane was initialized: nothing takes it again then (only an uninitialized control plane
    /// does), so the joins that follow need not delete it again (upstream reads the lock from
    /// its cache first; a DELETE per join reconcile was 7 requests per cluster).
    released_locks: Mutex<HashSet<String>>,
}

impl Context {
    async fn event(&self, config: &KubeadmConfig, type_: EventType, reason: &str, note: String) {
        self.recorder.note(config, type_, reason, note).await
    }
}

/// A failed reconcile. Each variant names the operation that failed.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("cannot read {kind} {name}")]
    Get {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write the status of KubeadmConfig {name}")]
    PatchStatus {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot record the join token in KubeadmConfig {name}")]
    PatchSpec {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write the bootstrap data Secret {name}")]
    WriteData {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot use the init lock of cluster {cluster}")]
    Lock {
        cluster: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot manage the bootstrap token in the workload cluster of {cluster}")]
    Token {
        cluster: String,
        #[source]
        source: kube::Error,
    },
}

/// Runs the KubeadmConfig controller until `shutdown` completes, with caches of its own (see
/// [`run_with_caches`]).
///
/// The CRDs of [`crate::crds`] and the `cluster.x-k8s.io` CRDs must be installed; until they
/// are, the watches fail and retry.
pub async fn run(client: kube::Client, shutdown: impl Future<Output = ()> + Send + 'static) {
    let shutdown: corral_runtime::Shutdown = shutdown.boxed().shared();
    let caches = Caches::new(client.clone());
    // No core controllers share these caches to watch the kubeconfig Secrets.
    let cache_task = tokio::spawn(
        caches
            .cluster_cache(&ClusterCacheConfig::default())
            .run(shutdown.clone()),
    );
    run_with_caches(client, caches, shutdown).await;
    let _ = cache_task.await;
}

/// [`run`], reading KubeadmConfigs, Machines and Clusters through `caches`, which the other
/// controllers of the process may share: one watch of each kind for all of them. Workload
/// clusters are reached through the caches' `ClusterCache` (its default settings hold when
/// this controller is the first to ask for it), whose kubeconfig Secret watch the core
/// controllers on the same caches run.
pub async fn run_with_caches(
    client: kube::Client,
    caches: Caches,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let shutdown: corral_runtime::Shutdown = shutdown.boxed().shared();
    let configs = crate::kubeadm_configs(&caches);
    let machines = caches.machines();
    let clusters = caches.clusters();
    let config_events = configs.applied();
    // Machine and Cluster events wake a KubeadmConfig only when what it reads of them changed
    // (not for their conditions, which their controllers rewrite as the cluster comes up).
    let machine_events = machines.touched_changed(Arc::new(Fingerprints::new()), |machine| {
        machine.spec.bootstrap.config_ref.as_ref()?;
        Some(crate::changes::read_of_machine(machine))
    });
    let cluster_events = clusters.touched_changed(Arc::new(Fingerprints::new()), |cluster| {
        Some(crate::changes::read_of_cluster(cluster))
    });
    let cluster_cache = caches.cluster_cache(&ClusterCacheConfig::default());
    let connections = cluster_cache.subscribe_connections();
    let context = Arc::new(Context {
        client: client.clone(),
        recorder: Recorder::new(client.clone(), Reporter::from(CONTROLLER_NAME)),
        secrets: certs::SecretReader::cached(client.clone(), cluster_cache.clone()),
        cluster_cache,
        ready: CachesReady::new(vec![machines.ready(), clusters.ready()]),
        released_locks: Mutex::default(),
        machines,
        clusters,
    });
    let mut queue: SelectAll<Queue<KubeadmConfig>> = SelectAll::new();
    queue.push(shared::trigger_own(config_events).boxed());
    queue.push(
        trigger_with(machine_events, move |machine: Arc<Machine>| {
            let reference = machine.spec.bootstrap.config_ref.as_ref()?;
            (reference.kind == "KubeadmConfig"
                && reference.api_group == crate::api::BOOTSTRAP_GROUP)
                .then(|| {
                    ObjectRef::new(&reference.name).within(&machine.namespace().unwrap_or_default())
                })
        })
        .boxed(),
    );
    let cluster_configs = configs.clone();
    queue.push(
        trigger_with(cluster_events, move |cluster: Arc<Cluster>| {
            // The Cluster's KubeadmConfigs (by their cluster-name label, the index).
            let key = ClusterKey::new(
                &cluster.namespace().unwrap_or_default(),
                &cluster.name_any(),
            );
            cluster_configs
                .of_cluster(&key)
                .into_iter()
                .map(|config| ObjectRef::from_obj(config.as_ref()))
                .collect::<Vec<_>>()
        })
        .boxed(),
    );
    // A workload cluster connected (or lost): its KubeadmConfigs waiting to create or refresh
    // a join token go on at once rather than at their next retry.
    let connection_configs = configs.clone();
    queue.push(
        connections
            .flat_map(move |cluster: ClusterKey| {
                let waiting: Vec<_> = connection_configs
                    .of_cluster(&cluster)
                    .into_iter()
                    .filter(|config| waits_on_workload_cluster(config))
                    .map(|config| Ok(ObjectRef::from_obj(config.as_ref()).into()))
                    .collect();
                futures::stream::iter(waiting)
            })
            .boxed(),
    );
    // A failed reconcile is retried after ERROR_REQUEUE, every time.
    let controllers_config = corral_runtime::Config {
        backoff_initial: ERROR_REQUEUE,
        backoff_max: ERROR_REQUEUE,
        ..Default::default()
    };
    corral_runtime::run_controller(
        "kubeadm-config",
        context,
        &controllers_config,
        configs.store(),
        queue.boxed(),
        shutdown,
        reconcile,
    )
    .await;
}

impl corral_runtime::ClusterObject for KubeadmConfig {
    fn cluster_name(&self) -> &str {
        self.labels()
            .get(corral_api::labels::CLUSTER_NAME)
            .map(String::as_str)
            .unwrap_or_default()
    }
}

/// An error and its sources, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Whether a KubeadmConfig may need its workload cluster: for a join token, until its data
/// Secret is written, or to refresh the token it recorded (which a Machine with a Node no longer
/// needs, but the KubeadmConfig does not tell).
fn waits_on_workload_cluster(config: &KubeadmConfig) -> bool {
    let written = config
        .status
        .as_ref()
        .is_some_and(|status| status.initialization.data_secret_created == Some(true));
    !written
        || config
            .spec
            .join_configuration
            .discovery
            .bootstrap_token
            .token
            .is_some()
}

/// The name of the Machine that owns a KubeadmConfig.
fn owner_machine(config: &KubeadmConfig) -> Option<String> {
    config
        .owner_references()
        .iter()
        .find(|owner| owner.kind == "Machine" && owner.api_version.starts_with("cluster.x-k8s.io/"))
        .map(|owner| owner.name.clone())
}

/// Whether reconciliation is paused, and why, as upstream's `util/paused` says it.
fn paused(cluster: &Cluster, config: &KubeadmConfig) -> Option<String> {
    let mut reasons = Vec::new();
    if cluster.spec.paused == Some(true) {
        reasons.push("Cluster spec.paused is set to true".to_string());
    }
    if config
        .annotations()
        .contains_key(corral_api::annotations::PAUSED)
    {
        reasons.push("KubeadmConfig has the cluster.x-k8s.io/paused annotation".to_string());
    }
    (!reasons.is_empty()).then(|| reasons.join(", "))
}

async fn get_opt<K>(api: &Api<K>, kind: &'static str, name: &str) -> Result<Option<K>, Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.map_err(|source| Error::Get {
        kind,
        name: name.to_string(),
        source,
    })
}

async fn reconcile(config: Arc<KubeadmConfig>, context: Arc<Context>) -> Result<Action, Error> {
    let span = tracing::info_span!(
        "reconcile",
        kubeadmconfig = %format!("{}/{}", config.namespace().unwrap_or_default(), config.name_any()),
        cluster = tracing::field::Empty,
    );
    reconcile_config(config, context).instrument(span).await
}

async fn reconcile_config(
    config: Arc<KubeadmConfig>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    let namespace = config.namespace().unwrap_or_default();
    let name = config.name_any();
    if config.meta().deletion_timestamp.is_some() {
        // The data Secret is the KubeadmConfig's dependent; the garbage collector removes it.
        return Ok(Action::await_change());
    }
    let Some(machine_name) = owner_machine(&config) else {
        tracing::debug!(config = %name, "Waiting for the KubeadmConfig's owner Machine");
        return Ok(Action::await_change());
    };
    // From the caches: a Machine or Cluster they do not show yet wakes this KubeadmConfig
    // with its watch event.
    context.ready.wait().await;
    let Some(machine) = context
        .machines
        .get(&ObjectRef::new(&machine_name).within(&namespace))
    else {
        return Ok(Action::await_change());
    };
    let cluster_name = config
        .labels()
        .get(corral_api::labels::CLUSTER_NAME)
        .cloned()
        .unwrap_or_else(|| machine.spec.cluster_name.clone());
    let Some(cluster) = context
        .clusters
        .get(&ObjectRef::new(&cluster_name).within(&namespace))
    else {
        return Ok(Action::await_change());
    };
    tracing::Span::current().record("cluster", cluster_name.as_str());

    let mut status = config.status.clone().unwrap_or_default();
    let paused = paused(&cluster, &config);
    Conditions::new(&mut status.conditions, config.metadata.generation).set(
        condition_types::PAUSED,
        paused.is_some(),
        if paused.is_some() {
            reasons::PAUSED
        } else {
            reasons::NOT_PAUSED
        },
        paused.as_deref().unwrap_or_default(),
    );
    if paused.is_some() {
        write_status(&context, &config, status).await?;
        return Ok(Action::await_change());
    }

    let mut scope = Scope {
        context: &context,
        config: &config,
        machine: &machine,
        cluster: &cluster,
        status,
        recorded: None,
    };
    let action = scope.reconcile_phases().await;
    let Scope {
        mut status,
        recorded,
        ..
    } = scope;
    // After recording a join token the status is written on top of that spec write: what it
    // says was computed with the token, so it has observed the new generation (otherwise the
    // next reconcile would write again only to move observedGeneration).
    let written = recorded.as_ref().unwrap_or(&config);
    let generation = written.metadata.generation;
    if generation != config.metadata.generation {
        for condition in &mut status.conditions {
            if condition.observed_generation == config.metadata.generation {
                condition.observed_generation = generation;
            }
        }
    }
    status::set_ready(&mut status, generation);
    status.observed_generation = generation;
    write_status(&context, written, status).await?;
    action
}

/// One reconcile's objects; `status` is what will be written.
struct Scope<'a> {
    context: &'a Context,
    config: &'a KubeadmConfig,
    machine: &'a Machine,
    cluster: &'a Cluster,
    status: KubeadmConfigStatus,
    /// The KubeadmConfig as stored after this reconcile recorded a join token in its spec.
    recorded: Option<KubeadmConfig>,
}

/// A reason not to write bootstrap data yet, for the DataSecretAvailable condition.
struct NotAvailable {
    message: String,
    retry: Option<Duration>,
}

impl Scope<'_> {
    fn conditions(&mut self) -> Conditions<'_> {
        Conditions::new(&mut self.status.conditions, self.config.metadata.generation)
    }

    fn data_not_available(&mut self, message: &str) {
        self.conditions().set(
            condition_types::DATA_SECRET_AVAILABLE,
            false,
            reasons::NOT_AVAILABLE,
            message,
        );
    }

    async fn reconcile_phases(&mut self) -> Result<Action, Error> {
        let cluster_status = self.cluster.status.clone().unwrap_or_default();
        if cluster_status.initialization.infrastructure_provisioned != Some(true) {
            self.data_not_available("Waiting for Cluster status.infrastructureReady to be true");
            return Ok(Action::await_change());
        }
        let data_secret_name = self.config.name_any();
        if self.status.initialization.data_secret_created == Some(true) {
            self.status.data_secret_name = Some(data_secret_name);
            self.conditions().set(
                condition_types::DATA_SECRET_AVAILABLE,
                true,
                reasons::AVAILABLE,
                "",
            );
            self.conditions().set(
                condition_types::CERTIFICATES_AVAILABLE,
                true,
                reasons::AVAILABLE,
                "",
            );
            return self.refresh_token().await;
        }
        let control_plane_initialized =
            cluster_status.initialization.control_plane_initialized == Some(true);
        let result = if control_plane_initialized {
            let uid = self.cluster.uid().unwrap_or_default();
            let released = self
                .context
                .released_locks
                .lock()
                .expect("released locks lock")
                .contains(&uid);
            if !released {
                lock::release(&self.context.client, self.cluster)
                    .await
                    .map_err(|source| Error::Lock {
                        cluster: self.cluster.name_any(),
                        source,
                    })?;
                self.context
                    .released_locks
                    .lock()
                    .expect("released locks lock")
                    .insert(uid);
            }
            self.join().await?
        } else {
            self.init().await?
        };
        match result {
            Ok(action) => Ok(action),
            Err(not_available) => {
                self.data_not_available(&not_available.message);
                Ok(not_available
                    .retry
                    .map_or_else(Action::await_change, Action::requeue))
            }
        }
    }

    fn is_control_plane(&self) -> bool {
        self.machine
            .labels()
            .contains_key(corral_api::labels::CONTROL_PLANE)
    }

    /// The first control plane machine: `kubeadm init`.
    async fn init(&mut self) -> Result<Result<Action, NotAvailable>, Error> {
        let spec = &self.config.spec;
        let waiting = |message: &str, retry| {
            Ok(Err(NotAvailable {
                message: message.into(),
                retry,
            }))
        };
        if !self.is_control_plane() {
            return waiting("Waiting for Cluster control plane to be initialized", None);
        }
        let cluster_name = self.cluster.name_any();
        let lock_error = |source| Error::Lock {
            cluster: cluster_name.clone(),
            source,
        };
        match lock::acquire(&self.context.client, self.cluster, &self.machine.name_any())
            .await
            .map_err(lock_error)?
        {
            lock::Acquired::Held => {}
            lock::Acquired::HeldBy(holder) => {
                return waiting(
                    &format!(
                        "Waiting for Cluster control plane to be initialized (Machine {holder} is initializing it)"
                    ),
                    Some(RETRY),
                );
            }
            lock::Acquired::StaleRemoved(_) => {
                return waiting(
                    "Waiting for Cluster control plane to be initialized",
                    Some(Duration::from_secs(1)),
                );
            }
        }
        let Some(Found::All(certificates)) = self.certificates(true, true).await else {
            return waiting(
                "Waiting for the cluster certificates",
                Some(CERTIFICATES_RETRY),
            );
        };
        let facts = ClusterFacts::of(self.cluster, self.machine);
        let documents = [
            kubeadm_yaml::cluster_configuration(&spec.cluster_configuration, &facts),
            kubeadm_yaml::init_configuration(&spec.init_configuration),
        ];
        let kubeadm = WriteFile::root(
            cloud_init::INIT_CONFIG_PATH,
            kubeadm_yaml::to_yaml(&documents),
        );
        self.write_bootstrap_data(KubeadmCommand::Init, Some(&certificates), kubeadm)
            .await
    }

    /// Every other machine: `kubeadm join`.
    async fn join(&mut self) -> Result<Result<Action, NotAvailable>, Error> {
        let control_plane = self.is_control_plane();
        let waiting = |message: String| {
            Ok(Err(NotAvailable {
                message,
                retry: Some(RETRY),
            }))
        };
        let Some(certificates) = self.certificates(false, control_plane).await else {
            return Ok(Err(NotAvailable {
                message: "Waiting for the cluster certificates".into(),
                retry: Some(CERTIFICATES_RETRY),
            }));
        };
        let mut join = self.config.spec.join_configuration.clone();
        if control_plane && join.control_plane.is_none() {
            join.control_plane = Some(Default::default());
        }
        if !control_plane && join.control_plane.is_some() {
            return waiting(
                "Machine is a worker, but spec.joinConfiguration.controlPlane is set".into(),
            );
        }
        // Discovery: a bootstrap token unless the user configured file discovery.
        let mut ttl_requeue = None;
        if join.discovery.file.is_none() {
            let discovery = &mut join.discovery.bootstrap_token;
            if discovery.api_server_endpoint.is_none() {
                let endpoint = &self.cluster.spec.control_plane_endpoint;
                if !endpoint.is_valid() {
                    return waiting("Waiting for Cluster spec.controlPlaneEndpoint".into());
                }
                discovery.api_server_endpoint = Some(format!(
                    "{}:{}",
                    endpoint.host.as_deref().unwrap_or_default(),
                    endpoint.port.unwrap_or_default()
                ));
            }
            if discovery.ca_cert_hashes.is_empty()
                && discovery.unsafe_skip_ca_verification != Some(true)
            {
                match certs::ca_cert_hash(&certificates.cluster_ca().certificate_pem) {
                    Ok(hash) => discovery.ca_cert_hashes = vec![hash],
                    Err(reason) => {
                        return waiting(format!("The cluster CA cannot be hashed: {reason}"));
                    }
                }
            }
            if discovery.token.is_none() {
                let workload = match self.workload_client().await {
                    Ok(client) => client,
                    Err(reason) => {
                        return waiting(format!("Waiting for the workload cluster: {reason}"));
                    }
                };
                let token = BootstrapToken::generate();
                token::create(&workload, &token, OffsetDateTime::now_utc())
                    .await
                    .map_err(|source| Error::Token {
                        cluster: self.cluster.name_any(),
                        source,
                    })?;
                self.record_token(&token).await?;
                discovery.token = Some(token.to_string());
            }
            ttl_requeue = Some(std::time::Duration::from_secs(
                token::REFRESH_INTERVAL.whole_seconds() as u64,
            ));
        }
        if !control_plane {
            add_uninitialized_taint(&mut join.node_registration);
        }
        let document = match kubeadm_yaml::join_configuration(&join) {
            Ok(document) => document,
            Err(unsupported) => return waiting(unsupported.to_string()),
        };
        let kubeadm = WriteFile::root(
            cloud_init::JOIN_CONFIG_PATH,
            kubeadm_yaml::to_yaml(&[document]),
        );
        let certificates = match &certificates {
            Found::All(certificates) if control_plane => Some(certificates),
            _ => None,
        };
        let result = self
            .write_bootstrap_data(KubeadmCommand::Join, certificates, kubeadm)
            .await?;
        Ok(result.map(|action| match ttl_requeue {
            Some(interval) => Action::requeue(interval),
            None => action,
        }))
    }

    /// The cluster certificates, or `None` with the CertificatesAvailable condition saying why.
    /// With `generate`, missing ones are created (the first control plane machine of a Cluster
    /// without a control plane provider).
    /// Without `all`, only the cluster CA is read (a worker's join needs its hash alone).
    async fn certificates(&mut self, generate: bool, all: bool) -> Option<Found> {
        let secrets = &self.context.secrets;
        let namespace = self.cluster.namespace().unwrap_or_default();
        let cluster_name = self.cluster.name_any();
        let generate = generate && self.cluster.spec.control_plane_ref.is_none();
        let result = if !all {
            certs::lookup_cluster_ca(secrets, &namespace, &cluster_name)
                .await
                .map(|ca| ca.map(Found::ClusterCa))
        } else if generate {
            let algorithm = KeyAlgorithm::from_encryption_algorithm(
                self.config.spec.cluster_configuration.encryption_algorithm,
            );
            match algorithm {
                Ok(algorithm) => {
                    // Owned by the Cluster: they live as long as it does (upstream makes the
                    // first KubeadmConfig their controller, which ties the cluster's CAs to one
                    // machine).
                    let owner = OwnerReference {
                        api_version: Cluster::api_version(&()).to_string(),
                        kind: Cluster::kind(&()).to_string(),
                        name: cluster_name.clone(),
                        uid: self.cluster.uid().unwrap_or_default(),
                        ..Default::default()
                    };
                    certs::lookup_or_generate(
                        secrets,
                        &namespace,
                        &cluster_name,
                        algorithm,
                        Some(owner),
                    )
                    .await
                    .map(|all| Some(Found::All(all)))
                }
                Err(error) => Err(error),
            }
        } else {
            certs::lookup(secrets, &namespace, &cluster_name)
                .await
                .map(|all| all.map(Found::All))
        };
        match result {
            Ok(Some(certificates)) => {
                self.conditions().set(
                    condition_types::CERTIFICATES_AVAILABLE,
                    true,
                    reasons::AVAILABLE,
                    "",
                );
                Some(certificates)
            }
            Ok(None) => {
                let wanted: &[Purpose] = if all {
                    &Purpose::ALL
                } else {
                    &[Purpose::ClusterCa]
                };
                let message = format!(
                    "Waiting for the cluster certificate Secrets ({})",
                    wanted
                        .iter()
                        .map(|purpose| purpose.secret_name(&cluster_name))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                self.conditions().set(
                    condition_types::CERTIFICATES_AVAILABLE,
                    false,
                    reasons::NOT_AVAILABLE,
                    &message,
                );
                None
            }
            Err(error) => {
                let message = error_chain(&error);
                let changed = self.conditions().set(
                    condition_types::CERTIFICATES_AVAILABLE,
                    false,
                    reasons::INTERNAL_ERROR,
                    &message,
                );
                if changed {
                    self.context
                        .event(
                            self.config,
                            EventType::Warning,
                            "CertificatesUnavailable",
                            message,
                        )
                        .await;
                }
                None
            }
        }
    }

    /// A client of the workload cluster from the shared cluster cache, or why there is none
    /// (its kubeconfig Secret is missing or unusable, or the cluster does not answer); the
    /// cache's connection event reconciles again once there is.
    async fn workload_client(&self) -> Result<kube::Client, String> {
        let key = ClusterKey::new(
            &self.cluster.namespace().unwrap_or_default(),
            &self.cluster.name_any(),
        );
        self.context
            .cluster_cache
            .client(&key)
            .await
            .map_err(|error| corral_runtime::error_chain(&error))
    }

    /// Records a join token in the KubeadmConfig's spec, as upstream does, so that later
    /// reconciles find it to refresh it. The write carries the resourceVersion read; a copy
    /// it replaced is not reconciled (see `corral_runtime::patch`).
    async fn record_token(&mut self, token: &BootstrapToken) -> Result<(), Error> {
        let configs: Api<KubeadmConfig> = Api::namespaced(
            self.context.client.clone(),
            &self.config.namespace().unwrap_or_default(),
        );
        let mut updated = self.config.clone();
        updated
            .spec
            .join_configuration
            .discovery
            .bootstrap_token
            .token = Some(token.to_string());
        self.recorded = patch::patch_if_changed(&configs, self.config, &updated, patch::Part::Main)
            .await
            .map_err(|source| Error::PatchSpec {
                name: self.config.name_any(),
                source,
            })?;
        Ok(())
    }

    /// Keeps the join token of a machine that has not joined yet valid.
    async fn refresh_token(&mut self) -> Result<Action, Error> {
        let Some(token) = self
            .config
            .spec
            .join_configuration
            .discovery
            .bootstrap_token
            .token
            .as_deref()
            .and_then(BootstrapToken::parse)
        else {
            return Ok(Action::await_change());
        };
        let joined = self
            .machine
            .status
            .as_ref()
            .is_some_and(|status| status.node_ref.is_some());
        if joined {
            return Ok(Action::await_change());
        }
        let workload = match self.workload_client().await {
            Ok(client) => client,
            Err(reason) => {
                tracing::debug!(%reason, "Waiting for the workload cluster to refresh the join token");
                return Ok(Action::requeue(RETRY));
            }
        };
        let refresh = token::ensure_fresh(&workload, &token, OffsetDateTime::now_utc())
            .await
            .map_err(|source| Error::Token {
                cluster: self.cluster.name_any(),
                source,
            })?;
        if refresh != token::Refresh::Fresh {
            tracing::info!(token = %token.id, ?refresh, "Refreshing the join token until the machine joins");
        }
        Ok(Action::requeue(std::time::Duration::from_secs(
            token::REFRESH_INTERVAL.whole_seconds() as u64,
        )))
    }

    /// Renders the cloud-config (or, with `spec.format: ignition`, the Ignition config) and
    /// writes the data Secret.
    async fn write_bootstrap_data(
        &mut self,
        command: KubeadmCommand,
        certificates: Option<&ClusterCertificates>,
        kubeadm: WriteFile,
    ) -> Result<Result<Action, NotAvailable>, Error> {
        let spec = &self.config.spec;
        let not_available = |message: String| {
            Ok(Err(NotAvailable {
                message,
                retry: Some(RETRY),
            }))
        };
        let is_ignition = spec.format == Some(Format::Ignition);
        if let Some(message) = ignition::refusal(spec) {
            return not_available(message);
        }
        let mut files = match self.resolve_files().await? {
            Ok(files) => files,
            Err(message) => return not_available(message),
        };
        if let Some(certificates) = certificates {
            for purpose in Purpose::ALL {
                let material = certificates.get(purpose);
                let (certificate_path, key_path) = purpose.host_paths();
                files.push(WriteFile::root(
                    certificate_path,
                    material.certificate_pem.clone(),
                ));
                let mut key = WriteFile::root(key_path, material.private_key_pem.clone());
                key.permissions = "0600".into();
                files.push(key);
            }
        }
        let users = match self.resolve_users().await? {
            Ok(users) => users,
            Err(message) => return not_available(message),
        };
        let default = crate::api::bootstrap::KubeadmConfigSpec::default();
        let ntp = (spec.ntp != default.ntp).then_some(&spec.ntp);
        let disk_setup = (spec.disk_setup != default.disk_setup).then_some(&spec.disk_setup);
        let (value, format) = if is_ignition {
            let config = ignition::IgnitionConfig {
                files,
                pre_kubeadm_commands: &spec.pre_kubeadm_commands,
                post_kubeadm_commands: &spec.post_kubeadm_commands,
                users,
                ntp,
                disk_setup,
                mounts: &spec.mounts,
                verbosity: spec.verbosity,
                kubeadm_config: kubeadm.content,
            };
            match ignition::render(&config, command) {
                Ok(value) => (value, IGNITION_FORMAT),
                Err(message) => return not_available(format!("spec.files: {message}")),
            }
        } else {
            files.push(kubeadm);
            let cloud_config = CloudConfig {
                files,
                boot_commands: &spec.boot_commands,
                pre_kubeadm_commands: &spec.pre_kubeadm_commands,
                post_kubeadm_commands: &spec.post_kubeadm_commands,
                users,
                ntp,
                disk_setup,
                mounts: &spec.mounts,
                verbosity: spec.verbosity,
            };
            (
                cloud_init::render(&cloud_config, command),
                CLOUD_CONFIG_FORMAT,
            )
        };
        self.store(value, format).await?;
        let kind = match (command, certificates.is_some()) {
            (KubeadmCommand::Init, _) => "the first control plane machine (kubeadm init)",
            (KubeadmCommand::Join, true) => "a joining control plane machine (kubeadm join)",
            (KubeadmCommand::Join, false) => "a joining worker machine (kubeadm join)",
        };
        self.context
            .event(
                self.config,
                EventType::Normal,
                "DataSecretCreated",
                format!(
                    "Wrote bootstrap data Secret {} for {kind}",
                    self.config.name_any()
                ),
            )
            .await;
        self.status.initialization.data_secret_created = Some(true);
        self.status.data_secret_name = Some(self.config.name_any());
        self.conditions().set(
            condition_types::DATA_SECRET_AVAILABLE,
            true,
            reasons::AVAILABLE,
            "",
        );
        Ok(Ok(Action::await_change()))
    }

    /// The data Secret, created or (when a previous attempt wrote it but not the status)
    /// replaced.
    async fn store(&self, value: String, format: &str) -> Result<(), Error> {
        let namespace = self.config.namespace().unwrap_or_default();
        let name = self.config.name_any();
        let secrets: Api<Secret> = Api::namespaced(self.context.client.clone(), &namespace);
        let data = BTreeMap::from([
            (VALUE_KEY.to_string(), ByteString(value.into_bytes())),
            (
                FORMAT_KEY.to_string(),
                ByteString(format.as_bytes().to_vec()),
            ),
        ]);
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace),
                labels: Some(BTreeMap::from([(
                    corral_api::labels::CLUSTER_NAME.to_string(),
                    self.cluster.name_any(),
                )])),
                owner_references: Some(vec![OwnerReference {
                    api_version: KubeadmConfig::api_version(&()).to_string(),
                    kind: KubeadmConfig::kind(&()).to_string(),
                    name: name.clone(),
                    uid: self.config.uid().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                ..Default::default()
            },
            type_: Some(corral_api::CLUSTER_SECRET_TYPE.to_string()),
            data: Some(data.clone()),
            ..Default::default()
        };
        let write_error = |source| Error::WriteData {
            name: name.clone(),
            source,
        };
        tracing::info!(secret = %name, "Writing the bootstrap data Secret");
        match secrets.create(&PostParams::default(), &secret).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let patch = json!({ "data": data });
                secrets
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
                    .map_err(write_error)
            }
            Err(source) => Err(write_error(source)),
        }
    }

    /// `spec.files` with contents from Secrets read, or why they cannot be.
    async fn resolve_files(&self) -> Result<Result<Vec<WriteFile>, String>, Error> {
        let mut files = Vec::new();
        for (index, file) in self.config.spec.files.iter().enumerate() {
            if file.content_format == Some(FileContentFormat::Template) {
                return Ok(Err(format!(
                    "spec.files[{index}].contentFormat Template is not supported by Corral; use Raw"
                )));
            }
            let content = match &file.content_from {
                Some(source) => {
                    let field = format!("spec.files[{index}].contentFrom.secret");
                    match self
                        .secret_value(&source.secret.name, &source.secret.key, &field)
                        .await?
                    {
                        Ok(content) => content,
                        Err(message) => return Ok(Err(message)),
                    }
                }
                None => file.content.clone().unwrap_or_default(),
            };
            files.push(WriteFile {
                path: file.path.clone(),
                owner: file.owner.clone().unwrap_or_else(|| "root:root".into()),
                permissions: file.permissions.clone().unwrap_or_else(|| "0644".into()),
                encoding: file.encoding,
                append: file.append == Some(true),
                content,
            });
        }
        Ok(Ok(files))
    }

    /// `spec.users` with passwords from Secrets read, or why they cannot be.
    async fn resolve_users(&self) -> Result<Result<Vec<User>, String>, Error> {
        let mut users = Vec::new();
        for (index, user) in self.config.spec.users.iter().enumerate() {
            let mut user = user.clone();
            if let Some(source) = user.passwd_from.take() {
                let field = format!("spec.users[{index}].passwdFrom.secret");
                match self
                    .secret_value(&source.secret.name, &source.secret.key, &field)
                    .await?
                {
                    Ok(password) => user.passwd = Some(password),
                    Err(message) => return Ok(Err(message)),
                }
            }
            users.push(user);
        }
        Ok(Ok(users))
    }

    /// A key of a Secret in the KubeadmConfig's namespace, as text, or why it cannot be read.
    async fn secret_value(
        &self,
        name: &str,
        key: &str,
        field: &str,
    ) -> Result<Result<String, String>, Error> {
        let namespace = self.config.namespace().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(self.context.client.clone(), &namespace);
        let Some(secret) = get_opt(&secrets, "Secret", name).await? else {
            return Ok(Err(format!("{field}: Secret {namespace}/{name} not found")));
        };
        let Some(value) = secret.data.as_ref().and_then(|data| data.get(key)) else {
            return Ok(Err(format!(
                "{field}: Secret {namespace}/{name} has no key {key:?}"
            )));
        };
        match String::from_utf8(value.0.clone()) {
            Ok(text) => Ok(Ok(text)),
            Err(_) => Ok(Err(format!(
                "{field}: key {key:?} of Secret {namespace}/{name} is not text"
            ))),
        }
    }
}

/// Adds `node.cluster.x-k8s.io/uninitialized:NoSchedule` to a worker's registration taints,
/// as upstream does: core removes it once it has synced the Machine's labels onto the Node, so
/// no workload lands on a Node before its labels say what it is. Unset taints become the list
/// with only this one (kubeadm's default for workers is none).
fn add_uninitialized_taint(registration: &mut crate::api::bootstrap::NodeRegistrationOptions) {
    let key = "node.cluster.x-k8s.io/uninitialized";
    let taints = registration.taints.get_or_insert_with(Vec::new);
    if !taints
        .iter()
        .any(|taint| taint.key == key && taint.effect == "NoSchedule")
    {
        taints.push(crate::api::bootstrap::Taint {
            key: key.into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        });
    }
}

/// Writes the status when it changed, as a merge patch of what changed guarded by the
/// resourceVersion of `config` (a lost race is retried from a fresh copy; a copy this write
/// replaced is not reconciled, see `corral_runtime::patch`).
async fn write_status(
    context: &Context,
    config: &KubeadmConfig,
    status: KubeadmConfigStatus,
) -> Result<(), Error> {
    if config.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let configs: Api<KubeadmConfig> = Api::namespaced(
        context.client.clone(),
        &config.namespace().unwrap_or_default(),
    );
    let mut updated = config.clone();
    updated.status = Some(status);
    patch::write(&configs, config, &updated)
        .await
        .map_err(|source| Error::PatchStatus {
            name: config.name_any(),
            source,
        })?;
    Ok(())
}
