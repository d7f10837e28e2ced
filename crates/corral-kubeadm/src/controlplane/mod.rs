//! The KubeadmControlPlane controller (upstream
//! `controlplane/kubeadm/reconcilers/kubeadmcontrolplane/kubeadmcontrolplane_controller.go`):
//! a control plane of Machines bootstrapped with kubeadm, with stacked etcd.
//!
//! Each reconcile, in upstream's order: the admin kubeconfig Secret `<cluster>-kubeconfig`
//! (the control plane provider owns it) → read the workload cluster (through the shared
//! [`ClusterCache`]: `kubeadm-config`, the control plane static Pods, the etcd members through an
//! [`EtcdAdmin`]) → remove etcd members whose machine is gone → create the first machine
//! (`kubeadm init`) → remediate a machine a MachineHealthCheck marked (`OwnerRemediated`
//! False) when etcd keeps quorum → roll out machines that are not up to date (maxSurge 1: scale
//! up, then down; maxSurge 0: down, then up) → scale up or down to `spec.replicas` → status.
//!
//! One operation at a time (`preflight.go`): scaling waits while a machine is being deleted,
//! while a machine has no Node, and while a control plane component or an etcd member is
//! unhealthy. Before a machine is deleted, etcd leadership moves off it; its etcd member is
//! removed in the `kcp-cleanup` pre-terminate hook, once the Machine controller has drained
//! its Node and waits on the hook ([`pre_terminate`]). The decisions themselves are pure
//! functions in [`planner`].
//!
//! Validation (replicas odd with stacked etcd, maxSurge 0 or 1, maxSurge 0 with at least 3
//! replicas, no minor version skipped) is upstream's webhook, `api/admission.rs`, which the API
//! server runs, so invalid specs never reach the controller.
//!
//! In Cluster API v1beta2 the Cluster takes `controlPlaneEndpoint` from the infrastructure
//! cluster, so the KubeadmControlPlane does not set it.

mod addons;
mod adopt;
mod delete;
pub mod etcd;
mod machines;
pub mod planner;
mod pre_terminate;
pub mod real_etcd;
mod remediation;
mod scale;
mod status;
mod watches;
mod workload;

use delete::*;
use remediation::*;
use scale::*;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corral_api::annotations::{KCP_REMEDIATION_FOR, KCP_REMEDIATION_IN_PROGRESS};
use corral_api::conditions::machine::{HEALTH_CHECK_SUCCEEDED, OWNER_REMEDIATED};
use corral_api::labels::{CLUSTER_NAME, CONTROL_PLANE};
use corral_api::{Cluster, Machine};
use corral_runtime::Queue;
use corral_runtime::Recorder;
use corral_runtime::changes::Fingerprints;
use corral_runtime::cluster_cache::{ClusterCache, ClusterCacheConfig, ClusterKey};
use corral_runtime::conditions;
use corral_runtime::external::ExternalObjects;
use corral_runtime::ready::CachesReady;
use corral_runtime::shared::{Caches, SharedCache};
use futures::stream::SelectAll;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, ReconcileRequest, trigger_self, trigger_with};
use kube::runtime::events::{EventType, Reporter};
use kube::runtime::reflector;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::api::bootstrap::KubeadmConfig;
use crate::api::controlplane::{KubeadmControlPlane, LastRemediationStatus};
use etcd::{EtcdAdmin, EtcdError, SimulatedEtcd};
use planner::{MachineView, PreviousRemediation, RetryDecision, RolloutStep};
use watches::WorkloadWatches;
use workload::WorkloadState;

/// The finalizer the controller puts on every KubeadmControlPlane.
pub const FINALIZER: &str = corral_api::finalizers::KUBEADM_CONTROL_PLANE;

/// Settings of the controller.
#[derive(Clone, Debug)]
pub struct Config {
    /// How workload clusters are reached, when the controller is the first of the caches'
    /// controllers to ask for their [`ClusterCache`] (the core controllers' settings hold
    /// otherwise).
    pub cluster_cache: ClusterCacheConfig,
    /// How often a control plane that is waiting for something is looked at again anyway (a
    /// safety net: the controller is woken by changes of its Machines, its Cluster, the workload
    /// cluster's control plane Pods, etcd members and `kubeadm-config`, and its connection).
    pub poll_interval: Duration,
    /// How many KubeadmControlPlanes are reconciled at once.
    pub concurrency: u16,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cluster_cache: ClusterCacheConfig::default(),
            poll_interval: Duration::from_secs(60),
            concurrency: 10,
        }
    }
}

/// A failed reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot list the control plane Machines")]
    ListMachines(#[source] kube::Error),
    #[error("cannot read the infrastructure object of Machine {machine}")]
    GetInfrastructure {
        machine: String,
        #[source]
        source: Box<corral_runtime::external::Error>,
    },
    #[error(transparent)]
    MachineName {
        #[from]
        source: corral_runtime::naming::NamingError,
    },
    #[error("cannot make the Cluster an owner of the infrastructure template")]
    OwnInfrastructureTemplate {
        #[source]
        source: Box<corral_runtime::external::Error>,
    },
    #[error("cannot create the infrastructure object of Machine {machine}")]
    CreateInfrastructure {
        machine: String,
        #[source]
        source: Box<corral_runtime::external::Error>,
    },
    #[error("cannot create the KubeadmConfig of Machine {machine}")]
    CreateKubeadmConfig {
        machine: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot create Machine {machine}")]
    CreateMachine {
        machine: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot delete Machine {machine}")]
    DeleteMachine {
        machine: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot read or create the cluster certificates")]
    Certificates(#[from] crate::certs::Error),
    #[error("cannot write the kubeconfig Secret")]
    Kubeconfig(#[from] crate::kubeconfig::Error),
    #[error("cannot {operation} of etcd member {member}")]
    Etcd {
        operation: &'static str,
        member: String,
        /// Boxed: an etcd error holds a kube error and more, which would make every
        /// `Result` of the controller as large.
        #[source]
        source: Box<EtcdError>,
    },
    #[error(transparent)]
    Adopt(#[from] adopt::AdoptError),
    #[error(transparent)]
    Addons(#[from] addons::AddonsError),
    #[error("cannot remove the pre-terminate hook of Machine {machine}")]
    RemoveHook {
        machine: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot add the pre-terminate hook to Machine {machine}")]
    AddHook {
        machine: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot patch the KubeadmControlPlane")]
    Patch(#[source] kube::Error),
    #[error("cannot patch the status of the KubeadmControlPlane")]
    PatchStatus(#[source] kube::Error),
    #[error("cannot patch the conditions of Machine {machine}")]
    PatchMachineStatus {
        machine: String,
        #[source]
        source: kube::Error,
    },
}

struct Context {
    client: Client,
    config: Config,
    cache: ClusterCache,
    /// The cluster certificate and kubeconfig Secrets, from `cache`'s Secret watch.
    secrets: crate::certs::SecretReader,
    /// The administration of each workload cluster whose etcd runs for real, with when it was
    /// made (see `real_etcd_of`).
    real_etcd: Mutex<HashMap<ClusterKey, (Instant, Arc<real_etcd::RealEtcd>)>>,
    external: ExternalObjects,
    recorder: Recorder,
    /// The Clusters (the shared cache of the process's controllers).
    clusters: SharedCache<Cluster>,
    /// The Machines, by Cluster (the shared cache and its index): a reconcile reads its
    /// Cluster's instead of listing them (a list decodes every Machine of the namespace on the
    /// server, and a scan of all Machines grows with the number of clusters too).
    /// [`Context::expected`] covers what the cache may not show yet.
    machines: SharedCache<Machine>,
    /// Machines this controller created or deleted that the Machine cache may not show yet.
    expected: Expected,
    /// The caches above filled once: until then a control plane would look as if it had no
    /// Machines, and get a second first machine.
    ready: CachesReady,
    /// The KubeadmConfigs (the shared cache the KubeadmConfig controller reads too); their
    /// spec is set when they are created, so a cache a little behind is good enough to tell
    /// whether one is outdated.
    configs: SharedCache<KubeadmConfig>,
    watches: WorkloadWatches,
    /// When each control plane's certificates and kubeconfig were last found in order (by
    /// KubeadmControlPlane uid; the flag: with the kubeconfig), so that reconciles woken by
    /// the workload cluster do not read and parse five Secrets each time.
    certificates_checked: Mutex<HashMap<String, (Instant, bool)>>,
    /// The `cloned-from` template of each Machine's infrastructure object, by Machine uid: it
    /// is set when the object is created and never changes, so it is read once.
    infrastructure_cloned_from: Mutex<HashMap<String, Option<String>>>,
    /// What kube-proxy and CoreDNS were last brought to, per control plane ([`addons`]).
    addons: addons::Applied,
    /// What the control plane reads of each Cluster, as last seen by the Cluster trigger: a
    /// Cluster event wakes the control plane only when that changed ([`crate::changes`]).
    cluster_facts: Arc<Fingerprints>,
}

/// The name the controller reports Events under.
const CONTROLLER_NAME: &str = "kubeadm-control-plane";

/// A change of a Machine the controller made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Created,
    Deleted,
}

/// The Machine changes each control plane made that the Machine cache has not shown yet
/// (upstream defers the next reconcile until the cache is up to date, as ReplicaSets keep
/// expectations): a reconcile that read the cache before it showed a Machine just created
/// would create another one, breaking "one operation at a time". Each change is expected for
/// at most the safety requeue interval, so that a Machine deleted by someone else before the
/// cache saw it does not block the control plane for ever.
#[derive(Default)]
struct Expected(Mutex<HashMap<String, Vec<Expectation>>>);

/// One Machine change a control plane expects its cache to show.
struct Expectation {
    machine: String,
    change: Change,
    since: Instant,
    ttl: Duration,
}

impl Expected {
    fn record(&self, kcp: &KubeadmControlPlane, change: Change, machine: &str, ttl: Duration) {
        self.0
            .lock()
            .expect("expected lock")
            .entry(kcp.uid().unwrap_or_default())
            .or_default()
            .push(Expectation {
                machine: machine.to_string(),
                change,
                since: Instant::now(),
                ttl,
            });
    }

    /// Whether the cached Machines of the control plane show every change it made; the
    /// changes they show are forgotten.
    fn satisfied(&self, kcp: &KubeadmControlPlane, cached: &[Arc<Machine>]) -> bool {
        let mut expected = self.0.lock().expect("expected lock");
        let uid = kcp.uid().unwrap_or_default();
        let Some(changes) = expected.get_mut(&uid) else {
            return true;
        };
        changes.retain(|expectation| {
            let machine = cached
                .iter()
                .find(|m| m.metadata.name.as_deref() == Some(expectation.machine.as_str()));
            let shown = match expectation.change {
                Change::Created => machine.is_some(),
                Change::Deleted => machine.is_none_or(|m| m.metadata.deletion_timestamp.is_some()),
            };
            !shown && expectation.since.elapsed() < expectation.ttl
        });
        let satisfied = changes.is_empty();
        if satisfied {
            expected.remove(&uid);
        }
        satisfied
    }

    fn forget(&self, kcp: &KubeadmControlPlane) {
        self.0
            .lock()
            .expect("expected lock")
            .remove(&kcp.uid().unwrap_or_default());
    }
}

impl Context {
    /// Publishes an Event about the KubeadmControlPlane; a failure to publish is only logged.
    async fn event(&self, kcp: &KubeadmControlPlane, type_: EventType, reason: &str, note: String) {
        self.recorder.note(kcp, type_, reason, note).await
    }

    /// Creates a Machine (see [`machines::create_machine`]) and says so in an Event, or why
    /// not in a Warning.
    async fn create_machine(&self, new: machines::NewMachine<'_>) -> Result<(), Error> {
        let kcp = new.kcp;
        match machines::create_machine(&self.client, &self.external, new).await {
            Ok(name) => {
                self.expected
                    .record(kcp, Change::Created, &name, self.config.poll_interval);
                self.event(
                    kcp,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created control plane Machine {name}"),
                )
                .await;
                Ok(())
            }
            Err(error) => {
                self.event(
                    kcp,
                    EventType::Warning,
                    "FailedScaleUp",
                    format!(
                        "Failed to create a control plane Machine: {}",
                        corral_runtime::error_chain(&error)
                    ),
                )
                .await;
                Err(error)
            }
        }
    }
}

/// Runs the KubeadmControlPlane controller until `shutdown` resolves, with caches of its own
/// (see [`run_with_caches`]).
pub async fn run(
    client: Client,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let shutdown: corral_runtime::Shutdown = shutdown.boxed().shared();
    let caches = Caches::new(client.clone());
    // No core controllers share these caches to watch the kubeconfig Secrets.
    let cache_task = tokio::spawn(
        caches
            .cluster_cache(&config.cluster_cache)
            .run(shutdown.clone()),
    );
    run_with_caches(client, config, caches, shutdown).await;
    let _ = cache_task.await;
}

/// [`run`], reading Machines, Clusters and KubeadmConfigs through `caches`, which the core
/// controllers, the infrastructure provider and the KubeadmConfig controller of the process
/// share: one watch of each kind for all of them, and the Machines indexed by Cluster. The
/// workload clusters are reached through the caches' [`ClusterCache`] (one connection, Node
/// watch and probe per cluster for every controller), whose kubeconfig Secret watch the core
/// controllers on the same caches run.
pub async fn run_with_caches(
    client: Client,
    config: Config,
    caches: Caches,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let shutdown: corral_runtime::Shutdown = shutdown.boxed().shared();
    let cache = caches.cluster_cache(&config.cluster_cache);
    let (watches, workload_changes) = WorkloadWatches::new(config.cluster_cache.probe_timeout);
    // A connection that came up, went down or was rebuilt: restart the cluster's watches.
    let mut connections = cache.subscribe_connections();
    let connection_watches = watches.clone();
    let worker_watches = watches.clone();
    let connection_task = tokio::spawn(async move {
        while let Some(cluster) = connections.next().await {
            connection_watches.connection_changed(&cluster);
        }
    });
    let machines = caches.machines();
    let clusters = caches.clusters();
    let configs = crate::kubeadm_configs(&caches);
    let ready = CachesReady::new(vec![machines.ready(), clusters.ready(), configs.ready()]);
    let machine_events = machines.touched();
    // Cluster events wake a control plane only when what it reads of its Cluster changed.
    let cluster_facts = Arc::new(Fingerprints::new());
    let cluster_events = clusters.applied_changed(cluster_facts.clone(), |cluster| {
        Some(crate::changes::read_of_cluster(cluster))
    });
    let context = Arc::new(Context {
        clusters,
        configs,
        machines,
        expected: Expected::default(),
        ready,
        watches,
        certificates_checked: Default::default(),
        infrastructure_cloned_from: Default::default(),
        addons: Default::default(),
        cluster_facts,
        recorder: Recorder::new(client.clone(), Reporter::from(CONTROLLER_NAME)),
        external: ExternalObjects::new(client.clone()),
        secrets: crate::certs::SecretReader::cached(client.clone(), cache.clone()),
        real_etcd: Default::default(),
        client: client.clone(),
        cache,
        config: config.clone(),
    });
    let (kcp_store, writer) = reflector::store();
    let kcp_events = reflector::reflector(
        writer,
        watcher(
            Api::<KubeadmControlPlane>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
    )
    .applied_objects();

    let mut queue: SelectAll<Queue<KubeadmControlPlane>> = SelectAll::new();
    queue.push(trigger_self(kcp_events, ()).boxed());
    // Its Machines (owner references), and worker Machines going away: a control plane being
    // deleted waits for them.
    queue.push(
        trigger_with(machine_events, move |machine: Arc<Machine>| {
            let mut requests: Vec<ReconcileRequest<KubeadmControlPlane>> = Vec::new();
            let namespace = machine.namespace().unwrap_or_default();
            if machine.labels().contains_key(CONTROL_PLANE) {
                requests.extend(
                    machine
                        .owner_references()
                        .iter()
                        .filter(|owner| {
                            owner.kind == "KubeadmControlPlane"
                                && owner
                                    .api_version
                                    .starts_with(&format!("{}/", crate::api::CONTROL_PLANE_GROUP))
                        })
                        .map(|owner| ObjectRef::new(&owner.name).within(&namespace).into()),
                );
            } else if machine.metadata.deletion_timestamp.is_some()
                && let Some(cluster) = machine.labels().get(CLUSTER_NAME)
                && let Some(kcp) = worker_watches.kcp_of(&ClusterKey::new(&namespace, cluster))
            {
                requests.push(kcp.into());
            }
            requests
        })
        .boxed(),
    );
    queue.push(
        trigger_with(cluster_events, |cluster: Arc<Cluster>| {
            let reference = cluster.spec.control_plane_ref.as_ref()?;
            (reference.kind == "KubeadmControlPlane"
                && reference.api_group == crate::api::CONTROL_PLANE_GROUP)
                .then(|| {
                    ObjectRef::new(&reference.name).within(&cluster.namespace().unwrap_or_default())
                })
        })
        .boxed(),
    );
    // The workload clusters' control plane Pods, etcd members and kubeadm-config.
    queue.push(
        workload_changes
            .map(|kcp| Ok(ReconcileRequest::from(kcp)))
            .boxed(),
    );
    let controllers_config = corral_runtime::Config {
        concurrency: config.concurrency,
        ..Default::default()
    };
    tracing::info!("KubeadmControlPlane controller started");
    corral_runtime::run_controller(
        CONTROLLER_NAME,
        context,
        &controllers_config,
        kcp_store,
        queue.boxed(),
        shutdown.clone(),
        reconcile,
    )
    .await;
    connection_task.abort();
    tracing::info!("KubeadmControlPlane controller stopped");
}

impl corral_runtime::ClusterObject for KubeadmControlPlane {
    fn cluster_name(&self) -> &str {
        self.labels()
            .get(CLUSTER_NAME)
            .map(String::as_str)
            .unwrap_or_default()
    }
}

/// The Cluster a KubeadmControlPlane belongs to: its owner, or its cluster-name label.
fn cluster_name(kcp: &KubeadmControlPlane) -> Option<String> {
    kcp.owner_references()
        .iter()
        .find(|owner| owner.kind == "Cluster" && owner.api_version.starts_with("cluster.x-k8s.io/"))
        .map(|owner| owner.name.clone())
        .or_else(|| kcp.labels().get(CLUSTER_NAME).cloned())
}

fn is_paused(kcp: &KubeadmControlPlane, cluster: &Cluster) -> bool {
    cluster.spec.paused == Some(true)
        || kcp
            .annotations()
            .contains_key(corral_api::annotations::PAUSED)
}

fn machine_node(machine: &Machine) -> Option<String> {
    Some(machine.status.as_ref()?.node_ref.as_ref()?.name.clone())
}

/// The administration of a workload cluster's real etcd ([`real_etcd::RealEtcd`]) at the
/// endpoints its etcd Pods advertise, with a client certificate from the cluster's etcd CA.
/// Kept per cluster while the endpoints stay the same (its client certificate is valid for an
/// hour; one is issued again after half of it), so a reconcile reuses its connections instead
/// of issuing a certificate and connecting again.
async fn real_etcd_of(
    context: &Context,
    namespace: &str,
    cluster: &str,
    state: &WorkloadState,
) -> Result<Arc<real_etcd::RealEtcd>, String> {
    let key = ClusterKey::new(namespace, cluster);
    if let Some((made, kept)) = context.real_etcd.lock().expect("real etcd lock").get(&key)
        && kept.endpoints() == state.etcd_endpoints.as_slice()
        && made.elapsed() < Duration::from_secs(30 * 60)
    {
        return Ok(kept.clone());
    }
    let etcd_ca = crate::certs::lookup_etcd_ca(&context.secrets, namespace, cluster)
        .await
        .map_err(|error| corral_runtime::error_chain(&error))?
        .ok_or_else(|| format!("the etcd CA Secret {cluster}-etcd does not exist"))?;
    let made = Arc::new(
        real_etcd::RealEtcd::new(state.etcd_endpoints.clone(), &etcd_ca)
            .map_err(|error| error.to_string())?,
    );
    context
        .real_etcd
        .lock()
        .expect("real etcd lock")
        .insert(key, (Instant::now(), made.clone()));
    Ok(made)
}

/// What one reconcile observed.
struct Scope {
    kcp: Arc<KubeadmControlPlane>,
    cluster: Arc<Cluster>,
    namespace: String,
    /// The control plane Machines, oldest first (the cache's own, not copies).
    machines: Vec<Arc<Machine>>,
    views: Vec<MachineView>,
    /// Why each Machine is not up to date (empty when it is), by name.
    outdated: BTreeMap<String, Vec<String>>,
    workload: Option<WorkloadState>,
    workload_error: Option<String>,
    etcd: Option<Arc<dyn EtcdAdmin>>,
    failure_domains: Vec<String>,
}

impl Scope {
    fn desired(&self) -> i32 {
        self.kcp.spec.replicas.unwrap_or(1)
    }

    fn max_surge(&self) -> i32 {
        use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
        match self
            .kcp
            .spec
            .rollout
            .strategy
            .as_ref()
            .and_then(|s| s.rolling_update.max_surge.as_ref())
        {
            Some(IntOrString::Int(surge)) => *surge,
            Some(IntOrString::String(surge)) => {
                surge.trim_end_matches('%').parse().unwrap_or(1).min(1)
            }
            None => 1,
        }
    }

    fn machine(&self, name: &str) -> Option<&Machine> {
        self.machines
            .iter()
            .map(AsRef::as_ref)
            .find(|m| m.metadata.name.as_deref() == Some(name))
    }

    /// Why an operation must wait (upstream `preflightChecks`), ignoring `except` (the machine
    /// a scale down is about to remove).
    fn preflight(&self, except: Option<&str>) -> Option<String> {
        let checked = || {
            self.views
                .iter()
                .filter(move |v| Some(v.name.as_str()) != except)
        };
        if let Some(deleting) = self.views.iter().find(|v| v.deleting) {
            return Some(format!(
                "Waiting for Machine {} to be deleted",
                deleting.name
            ));
        }
        if let Some(error) = &self.workload_error {
            return Some(format!("Cannot check the workload cluster: {error}"));
        }
        if let Some(view) = checked().find(|v| !v.has_node) {
            return Some(format!("Waiting for Machine {} to have a Node", view.name));
        }
        if let Some(view) = checked().find(|v| v.components_unhealthy) {
            return Some(format!(
                "Waiting for the control plane components of Machine {} to be healthy",
                view.name
            ));
        }
        if let Some(view) = checked().find(|v| v.etcd_unhealthy) {
            return Some(format!(
                "Waiting for the etcd member of Machine {} to be healthy",
                view.name
            ));
        }
        None
    }
}

async fn reconcile(kcp: Arc<KubeadmControlPlane>, context: Arc<Context>) -> Result<Action, Error> {
    let namespace = kcp.namespace().unwrap_or_default();
    let Some(cluster_name) = cluster_name(&kcp) else {
        tracing::debug!("Waiting for the Cluster controller to set the owner");
        return Ok(Action::await_change());
    };
    let cluster = context
        .clusters
        .get(&ObjectRef::new(&cluster_name).within(&namespace));
    let kcps: Api<KubeadmControlPlane> = Api::namespaced(context.client.clone(), &namespace);
    if kcp.metadata.deletion_timestamp.is_some() {
        let machines = list_machines(&context, &kcp, &namespace, &cluster_name).await?;
        return reconcile_delete(&context, &kcp, &cluster_name, machines).await;
    }
    context.ready.wait().await;
    let machines = cached_machines(&context, &kcp, &namespace, &cluster_name);
    if !context.expected.satisfied(&kcp, &machines) {
        // The Machine's watch event reconciles again once the cache shows it.
        tracing::debug!("Waiting for the Machine cache to show the last Machine change");
        return Ok(Action::requeue(context.config.poll_interval));
    }
    let Some(cluster) = cluster else {
        return Ok(Action::requeue(context.config.poll_interval));
    };
    if !kcp.finalizers().iter().any(|f| f == FINALIZER) {
        add_finalizer(&kcps, &kcp).await?;
        return Ok(Action::await_change());
    }

    let paused = is_paused(&kcp, &cluster);
    if !paused {
        // Upstream's `reconcileExternalReference`: the infrastructure template the control
        // plane clones goes with the Cluster (and an owner reference stripped from it comes
        // back here). A missing template is reported when a Machine is to be created from it.
        let reference = &kcp.spec.machine_template.spec.infrastructure_ref;
        if reference.kind.ends_with("Template") {
            context
                .external
                .ensure_cluster_owner(reference, &namespace, &cluster)
                .await
                .map_err(|source| Error::OwnInfrastructureTemplate {
                    source: Box::new(source),
                })?;
        }
    }
    let cluster_status = cluster.status.clone().unwrap_or_default();
    let infrastructure_ready = cluster_status.initialization.infrastructure_provisioned
        == Some(true)
        && cluster
            .spec
            .control_plane_endpoint
            .host
            .as_ref()
            .is_some_and(|host| !host.is_empty());
    if !paused
        && infrastructure_ready
        && let Some(action) = adopt::adopt_machines(&context, &kcp, &cluster, &machines).await?
    {
        return Ok(action);
    }

    let certificates = if paused {
        Err("Reconciliation is paused".to_string())
    } else {
        certificates_unless_checked(&context, &kcp, &cluster, infrastructure_ready).await
    };

    // The workload cluster.
    let key = ClusterKey::new(&namespace, &cluster_name);
    context
        .watches
        .remember(&key, ObjectRef::from_obj(kcp.as_ref()));
    let (workload, workload_error, etcd) = if infrastructure_ready && !paused {
        match observe_workload(&context, &key).await {
            Ok((state, etcd)) => (Some(state), None, Some(etcd)),
            Err(error) => (None, Some(error), None),
        }
    } else {
        (
            None,
            Some("the workload cluster is not provisioned yet".into()),
            None,
        )
    };

    let (views, outdated) =
        machine_views(&context, &kcp, &namespace, &machines, workload.as_ref()).await?;
    let failure_domains: Vec<String> = cluster_status
        .failure_domains
        .iter()
        .filter(|fd| fd.control_plane == Some(true))
        .map(|fd| fd.name.clone())
        .collect();
    let scope = Scope {
        kcp: kcp.clone(),
        cluster,
        namespace: namespace.clone(),
        machines,
        views,
        outdated,
        workload,
        workload_error,
        etcd,
        failure_domains,
    };
    let initialized = kcp
        .status
        .as_ref()
        .is_some_and(|s| s.initialization.control_plane_initialized == Some(true))
        || scope.workload.as_ref().is_some_and(|w| w.kubeadm_config);

    let mut outcome = Outcome::default();
    if !paused && infrastructure_ready {
        reconcile_machines(&context, &scope, initialized, &mut outcome).await?;
    }

    if !paused {
        sync_machine_conditions(&context, &scope, outcome.owner_remediated.as_ref()).await?;
    }

    write_status(
        &kcps,
        &scope,
        &outcome,
        &cluster_name,
        certificates,
        initialized,
        paused,
    )
    .await?;
    if paused {
        return Ok(Action::await_change());
    }
    // Changes wake the controller (see `Config::poll_interval`); this is the safety net, and
    // the clock for what nothing announces (remediation retry periods).
    Ok(Action::requeue(context.config.poll_interval))
}

/// Computes the status from what this reconcile observed and did, and writes it when it
/// changed, on top of this reconcile's own metadata write if it made one.
async fn write_status(
    kcps: &Api<KubeadmControlPlane>,
    scope: &Scope,
    outcome: &Outcome,
    cluster_name: &str,
    certificates: Result<(), String>,
    initialized: bool,
    paused: bool,
) -> Result<(), Error> {
    let kcp = &scope.kcp;
    let remediating: Vec<String> = scope
        .machines
        .iter()
        .filter(|m| is_marked_for_remediation(m) && m.metadata.deletion_timestamp.is_none())
        .map(|m| m.name_any())
        .collect();
    let previous = kcp.status.clone().unwrap_or_default();
    let observed = status::Observed {
        kcp,
        machines: &scope.machines,
        views: &scope.views,
        workload: scope.workload.as_ref(),
        workload_error: scope.workload_error.clone(),
        initialized,
        certificates,
        selector: machines::selector(kcp, cluster_name),
        remediating,
        remediation_blocked: outcome.remediation_blocked.clone(),
        deleting: false,
        paused,
    };
    let now = conditions::now();
    let mut new_status = status::compute_status(&previous, &observed, &now);
    if let Some(last) = outcome.last_remediation.clone() {
        new_status.last_remediation = Some(last);
    }
    if new_status != previous {
        let written = outcome.written.as_ref().unwrap_or(kcp.as_ref());
        patch_status(kcps, written, &new_status).await?;
    }
    Ok(())
}

/// Puts the controller's finalizer on the KubeadmControlPlane, conditional on the version read.
async fn add_finalizer(
    kcps: &Api<KubeadmControlPlane>,
    kcp: &KubeadmControlPlane,
) -> Result<(), Error> {
    let mut finalizers = kcp.finalizers().to_vec();
    finalizers.push(FINALIZER.to_string());
    write_finalizers(kcps, kcp, finalizers).await
}

/// Writes the KubeadmControlPlane's finalizers, conditional on the version read.
async fn write_finalizers(
    kcps: &Api<KubeadmControlPlane>,
    kcp: &KubeadmControlPlane,
    finalizers: Vec<String>,
) -> Result<(), Error> {
    let patch = json!({ "metadata": {
        "finalizers": finalizers,
        "resourceVersion": kcp.resource_version(),
    }});
    kcps.patch(
        &kcp.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map_err(Error::Patch)?;
    Ok(())
}

/// The cluster certificates, then the kubeconfig Secret once the endpoint is known
/// ([`reconcile_certificates`]), skipped when they were found current less than a poll
/// interval ago with the same endpoint state; the error as the status reports it.
async fn certificates_unless_checked(
    context: &Context,
    kcp: &KubeadmControlPlane,
    cluster: &Cluster,
    infrastructure_ready: bool,
) -> Result<(), String> {
    let uid = kcp.uid().unwrap_or_default();
    let recently_checked = context
        .certificates_checked
        .lock()
        .expect("certificates lock")
        .get(&uid)
        .is_some_and(|(when, with_kubeconfig)| {
            *with_kubeconfig == infrastructure_ready
                && when.elapsed() < context.config.poll_interval
        });
    if recently_checked {
        return Ok(());
    }
    let result = reconcile_certificates(context, kcp, cluster, infrastructure_ready)
        .await
        .map_err(|error| corral_runtime::error_chain(&error));
    let mut checked = context
        .certificates_checked
        .lock()
        .expect("certificates lock");
    if result.is_ok() {
        checked.insert(uid, (Instant::now(), infrastructure_ready));
    } else {
        checked.remove(&uid);
    }
    result
}

/// The workload cluster's state (through its watches) and the administration of its etcd:
/// simulated (membership as Pod annotations) or, when its etcd Pods advertise endpoints, the
/// real etcd, whose members are asked of it through the cluster's etcd CA.
async fn observe_workload(
    context: &Context,
    key: &ClusterKey,
) -> Result<(WorkloadState, Arc<dyn EtcdAdmin>), String> {
    let client = context
        .cache
        .client(key)
        .await
        .map_err(|error| error.to_string())?;
    let mut state = context.watches.observe(key, &client).await?;
    if state.etcd_endpoints.is_empty() {
        return Ok((state, Arc::new(SimulatedEtcd::new(client))));
    }
    let real = real_etcd_of(context, &key.namespace, &key.name, &state).await;
    state.members = match &real {
        Ok(real) => real.members().await.map_err(|error| error.to_string()),
        Err(error) => Err(error.clone()),
    };
    let etcd: Arc<dyn EtcdAdmin> = match real {
        Ok(real) => real,
        Err(_) => Arc::new(SimulatedEtcd::new(client)),
    };
    Ok((state, etcd))
}

/// Looks up the cluster certificates (`<cluster>-ca`, `-etcd`, `-proxy`, `-sa`), generating
/// missing ones owned by the KubeadmControlPlane, then, once the Cluster has its endpoint, makes
/// the admin kubeconfig Secret current (upstream `reconcile`: certificates, then
/// `reconcileKubeconfig`). Keys are generated only when their Secret is missing.
async fn reconcile_certificates(
    context: &Context,
    kcp: &KubeadmControlPlane,
    cluster: &Cluster,
    endpoint_known: bool,
) -> Result<(), Error> {
    let algorithm = crate::certs::KeyAlgorithm::from_encryption_algorithm(
        kcp.spec
            .kubeadm_config_spec
            .cluster_configuration
            .encryption_algorithm,
    )?;
    let owner = machines::owner_reference(kcp);
    let certificates = crate::certs::lookup_or_generate(
        &context.secrets,
        &kcp.namespace().unwrap_or_default(),
        &cluster.name_any(),
        algorithm,
        Some(owner.clone()),
    )
    .await?;
    if endpoint_known {
        crate::kubeconfig::ensure(&context.secrets, cluster, &certificates.cluster_ca, owner)
            .await?;
    }
    Ok(())
}

/// What the machine reconciliation did, for the status and the requeue.
#[derive(Default)]
struct Outcome {
    /// Something is under way or waiting on the workload cluster.
    waiting: bool,
    remediation_blocked: Option<String>,
    /// The OwnerRemediated condition to set on a Machine whose remediation is blocked.
    owner_remediated: Option<(String, conditions::NewCondition)>,
    last_remediation: Option<LastRemediationStatus>,
    /// The KubeadmControlPlane as stored after a write of its metadata (the remediation
    /// annotation): the status write's resourceVersion precondition is this one's.
    written: Option<KubeadmControlPlane>,
}

/// Writes what changed of the status, guarded by the resourceVersion read: a reconcile of a
/// copy this write replaced (the KubeadmControlPlane cache a little behind) is skipped rather
/// than writing the same status again, and the write's own watch event reconciles next (see
/// `corral_runtime::patch`).
async fn patch_status(
    kcps: &Api<KubeadmControlPlane>,
    kcp: &KubeadmControlPlane,
    status: &crate::api::controlplane::KubeadmControlPlaneStatus,
) -> Result<(), Error> {
    let mut updated = kcp.clone();
    updated.status = Some(status.clone());
    corral_runtime::patch::write(kcps, kcp, &updated)
        .await
        .map(|_| ())
        .map_err(Error::PatchStatus)
}

/// The control plane's Machines from the cache, oldest first (see [`list_machines`]): the
/// Cluster's Machines (the index) that carry the control plane label and are owned by `kcp`.
fn cached_machines(
    context: &Context,
    kcp: &KubeadmControlPlane,
    namespace: &str,
    cluster: &str,
) -> Vec<Arc<Machine>> {
    let uid = kcp.uid().unwrap_or_default();
    let mut owned: Vec<Arc<Machine>> = context
        .machines
        .of_cluster(&ClusterKey::new(namespace, cluster))
        .into_iter()
        .filter(|m| {
            m.labels().contains_key(CONTROL_PLANE)
                && m.owner_references().iter().any(|o| o.uid == uid)
        })
        .collect();
    sort_oldest_first(&mut owned);
    owned
}

fn sort_oldest_first(machines: &mut [Arc<Machine>]) {
    machines.sort_by(|a, b| {
        (
            a.metadata.creation_timestamp.as_ref().map(|t| t.0),
            a.name_any(),
        )
            .cmp(&(
                b.metadata.creation_timestamp.as_ref().map(|t| t.0),
                b.name_any(),
            ))
    });
}

/// The control plane's Machines, listed (the deletion path: rare, and it must not wait on
/// the cache), oldest first.
async fn list_machines(
    context: &Context,
    kcp: &KubeadmControlPlane,
    namespace: &str,
    cluster: &str,
) -> Result<Vec<Arc<Machine>>, Error> {
    let machines: Api<Machine> = Api::namespaced(context.client.clone(), namespace);
    let uid = kcp.uid().unwrap_or_default();
    let mut owned: Vec<Arc<Machine>> = machines
        .list(&ListParams::default().labels(&format!("{CLUSTER_NAME}={cluster},{CONTROL_PLANE}")))
        .await
        .map_err(Error::ListMachines)?
        .items
        .into_iter()
        .filter(|m| m.owner_references().iter().any(|o| o.uid == uid))
        .map(Arc::new)
        .collect();
    sort_oldest_first(&mut owned);
    Ok(owned)
}

async fn machine_views(
    context: &Context,
    kcp: &KubeadmControlPlane,
    namespace: &str,
    machines: &[Arc<Machine>],
    workload: Option<&WorkloadState>,
) -> Result<(Vec<MachineView>, BTreeMap<String, Vec<String>>), Error> {
    let configs: BTreeMap<String, Arc<KubeadmConfig>> = machines
        .iter()
        .filter_map(|machine| machine.spec.bootstrap.config_ref.as_ref())
        .filter_map(|reference| {
            let config = context
                .configs
                .get(&ObjectRef::new(&reference.name).within(namespace))?;
            Some((reference.name.clone(), config))
        })
        .collect();
    let now = Timestamp::now();
    let mut views = Vec::new();
    let mut all_outdated = BTreeMap::new();
    for machine in machines {
        let name = machine.name_any();
        let uid = machine.uid().unwrap_or_default();
        let known = context
            .infrastructure_cloned_from
            .lock()
            .expect("cloned-from lock")
            .get(&uid)
            .cloned();
        let cloned_from = match known {
            Some(cloned_from) => cloned_from,
            None => {
                let infra = context
                    .external
                    .get(&machine.spec.infrastructure_ref, namespace)
                    .await
                    .map_err(|source| Error::GetInfrastructure {
                        machine: name.clone(),
                        source: Box::new(source),
                    })?;
                let cloned_from = infra.as_ref().and_then(|infra| {
                    machines::cloned_from(infra.object.annotations()).map(str::to_string)
                });
                // Remembered once the object exists (a missing one may yet be created).
                if infra.is_some() {
                    context
                        .infrastructure_cloned_from
                        .lock()
                        .expect("cloned-from lock")
                        .insert(uid, cloned_from.clone());
                }
                cloned_from
            }
        };
        let config = machine
            .spec
            .bootstrap
            .config_ref
            .as_ref()
            .and_then(|r| configs.get(&r.name))
            .map(AsRef::as_ref);
        let outdated =
            machines::outdated_reasons(kcp, machine, cloned_from.as_deref(), config, now);
        let node = machine_node(machine);
        let (etcd_unhealthy, components_unhealthy) = match (workload, &node) {
            (Some(workload), Some(node)) => (
                !workload.member(node).is_some_and(|m| m.healthy),
                !workload.unhealthy_components(node).is_empty(),
            ),
            _ => (true, true),
        };
        let annotations = machine.annotations();
        let up_to_date = outdated.is_empty();
        all_outdated.insert(name.clone(), outdated);
        views.push(MachineView {
            name,
            created: machine.metadata.creation_timestamp.as_ref().map(|t| t.0),
            failure_domain: machine.spec.failure_domain.clone(),
            up_to_date,
            deleting: machine.metadata.deletion_timestamp.is_some(),
            delete_annotation: annotations.contains_key(corral_api::annotations::DELETE_MACHINE),
            remediate_annotation: annotations
                .contains_key(corral_api::annotations::REMEDIATE_MACHINE),
            has_node: node.is_some(),
            etcd_unhealthy,
            components_unhealthy,
        });
    }
    Ok((views, all_outdated))
}

/// Sets the conditions the control plane owns on each of its Machines (UpToDate and the
/// health of the static Pods and etcd member, see [`status::machine_conditions`]), writing
/// only the Machines whose conditions change, as a status merge patch guarded by the
/// resourceVersion read.
///
/// The conditions are computed on the Machine cache's newest copy, not the reconcile's (a few
/// events old by now while the Machine controller writes the booting Machine), so that fewer
/// writes lose the race with the Machine controller (HTTP 409). A conflict is left alone: that
/// write's watch event reconciles the control plane again, which then writes what changed
/// since, once. (A server-side apply of the owned condition types cannot conflict, but then
/// every reconcile's view is written, also one the Machine has moved past: measured at 100
/// clusters, 11.8 successful writes per cluster instead of 6.0 + 4.5 conflicts, and more
/// Machine controller writes after them; a successful write costs the API server, the watches
/// and the reconciles it wakes far more than a refused one.)
async fn sync_machine_conditions(
    context: &Context,
    scope: &Scope,
    owner_remediated: Option<&(String, conditions::NewCondition)>,
) -> Result<(), Error> {
    let api: Api<Machine> = Api::namespaced(context.client.clone(), &scope.namespace);
    let now = conditions::now();
    let no_reasons = Vec::new();
    for read in &scope.machines {
        if read.metadata.deletion_timestamp.is_some() {
            context
                .infrastructure_cloned_from
                .lock()
                .expect("cloned-from lock")
                .remove(&read.uid().unwrap_or_default());
            continue;
        }
        let name = read.name_any();
        let machine = context
            .machines
            .get(&ObjectRef::new(&name).within(&scope.namespace))
            .filter(|fresh| fresh.uid() == read.uid())
            .unwrap_or_else(|| read.clone());
        if machine.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let outdated = scope.outdated.get(&name).unwrap_or(&no_reasons);
        let generation = machine.metadata.generation;
        let current = machine.status.as_ref().map(|status| &status.conditions);
        let mut conditions = current.cloned().unwrap_or_default();
        for condition in status::machine_conditions(
            &machine,
            outdated,
            scope.workload.as_ref(),
            scope.workload_error.as_deref(),
        ) {
            conditions::set(&mut conditions, condition, generation, &now);
        }
        if let Some((_, condition)) = owner_remediated.filter(|(machine, _)| *machine == name) {
            conditions::set(&mut conditions, condition.clone(), generation, &now);
        }
        // Most reconciles change no condition: nothing to compare as JSON, nothing to write.
        if current == Some(&conditions) {
            continue;
        }
        let mut updated = machine.as_ref().clone();
        updated
            .status
            .get_or_insert_with(Default::default)
            .conditions = conditions;
        match corral_runtime::patch::write(&api, machine.as_ref(), &updated).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {}
            Err(source) => {
                return Err(Error::PatchMachineStatus {
                    machine: name,
                    source,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod expected_tests {
    use super::*;

    fn kcp() -> KubeadmControlPlane {
        let mut kcp: KubeadmControlPlane = serde_json::from_value(json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
            "kind": "KubeadmControlPlane",
            "metadata": { "name": "cp", "namespace": "default", "uid": "kcp-uid" },
            "spec": { "version": "v1.35.0", "machineTemplate": { "spec": { "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "t",
            } } } },
        }))
        .expect("a KubeadmControlPlane");
        kcp.metadata.uid = Some("kcp-uid".into());
        kcp
    }

    fn machine(name: &str, deleting: bool) -> Arc<Machine> {
        let mut machine = Machine::new(name, corral_api::MachineSpec::default());
        if deleting {
            machine.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        }
        Arc::new(machine)
    }

    /// A reconcile waits until the cache shows the Machine it created, then the expectation
    /// is forgotten.
    #[test]
    fn a_created_machine_is_expected_until_the_cache_shows_it() {
        let expected = Expected::default();
        let kcp = kcp();
        assert!(expected.satisfied(&kcp, &[]), "nothing expected");
        expected.record(&kcp, Change::Created, "m1", Duration::from_secs(60));
        assert!(!expected.satisfied(&kcp, &[]));
        assert!(!expected.satisfied(&kcp, &[machine("m0", false)]));
        assert!(expected.satisfied(&kcp, &[machine("m1", false)]));
        assert!(expected.satisfied(&kcp, &[]), "forgotten once shown");
    }

    /// A deleted Machine is shown by its deletion timestamp or its absence.
    #[test]
    fn a_deleted_machine_is_expected_until_the_cache_shows_it_deleting_or_gone() {
        let expected = Expected::default();
        let kcp = kcp();
        expected.record(&kcp, Change::Deleted, "m1", Duration::from_secs(60));
        assert!(!expected.satisfied(&kcp, &[machine("m1", false)]));
        assert!(expected.satisfied(&kcp, &[machine("m1", true)]));
        expected.record(&kcp, Change::Deleted, "m2", Duration::from_secs(60));
        assert!(expected.satisfied(&kcp, &[]));
    }

    /// A change the cache never shows (the Machine was deleted by someone else before the
    /// cache saw it) stops being expected after its time.
    #[test]
    fn an_expectation_expires() {
        let expected = Expected::default();
        let kcp = kcp();
        expected.record(&kcp, Change::Created, "m1", Duration::ZERO);
        assert!(expected.satisfied(&kcp, &[]));
    }
}
