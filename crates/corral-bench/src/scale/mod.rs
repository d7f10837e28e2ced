//! `corral-bench scale` and `corral-bench rollout`: many clusters, or one very large
//! MachineDeployment, on the in-memory provider, with the whole management plane in this
//! process (see [`plane`]). See `BENCHMARKS.md` for the commands and results.
//!
//! `scale` creates N clusters through the API, waits until every Cluster is Available and every
//! Machine Running, optionally lets them idle to measure the steady state, then deletes every
//! Cluster and waits until every object is gone. `rollout` creates one cluster whose
//! MachineDeployment has R replicas, waits until they run, then rolls it to a new
//! DevMachineTemplate and watches every Machine change, recording the most Machines that
//! existed at once. Each phase reports wall time, CPU time, API writes (store writes of the
//! management plane) and reconciles per controller; memory is the process's peak RSS.

pub mod objects;
pub mod plane;
mod report;
mod tracked;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use corral_api::{Cluster, MachineDeployment};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use self::objects::Shape;
use self::plane::{Delta, ManagementPlane};
pub use self::report::{PhaseResult, RolloutReport, ScaleReport};
use self::tracked::{TrackedCluster, TrackedMachine};

/// The namespace every benchmark object lives in.
pub const NAMESPACE: &str = "scale";

/// What `scale` does.
#[derive(Clone, Debug)]
pub struct ScaleConfig {
    pub clusters: usize,
    pub control_plane_machines: usize,
    pub workers: usize,
    /// How long each simulated VM takes to boot (zero: at once).
    pub provisioning_delay: Duration,
    /// Concurrent clients creating and deleting clusters.
    pub clients: usize,
    /// How long to measure the steady state of the created clusters (`None`: not at all).
    pub idle: Option<Duration>,
    /// How long each phase may take before the benchmark gives up.
    pub timeout: Duration,
    /// Where the SQLite file goes (default: the temp dir, unless it is tmpfs; then target/).
    pub data_root: Option<PathBuf>,
    /// The controllers' settings (concurrency and so on).
    pub controllers: corral_controllers::Config,
    /// Events each of the management API server's watch caches keeps (`None`: the server's
    /// default).
    pub watch_history: Option<usize>,
    /// Bytes of history each of the management API server's watch caches keeps (`None`: the
    /// server's default).
    pub watch_history_bytes: Option<usize>,
    /// Progress lines on stderr.
    pub progress: bool,
}

impl ScaleConfig {
    pub fn new(clusters: usize, control_plane_machines: usize, workers: usize) -> ScaleConfig {
        ScaleConfig {
            clusters,
            control_plane_machines,
            workers,
            provisioning_delay: Duration::ZERO,
            clients: 16,
            idle: None,
            timeout: Duration::from_secs(600),
            data_root: None,
            controllers: corral_controllers::Config::default(),
            watch_history: None,
            watch_history_bytes: None,
            progress: true,
        }
    }

    fn shape(&self) -> Shape {
        Shape {
            control_plane_machines: self.control_plane_machines,
            workers: self.workers,
            provisioning_delay: self.provisioning_delay,
            rollout: None,
        }
    }

    pub fn machines(&self) -> usize {
        self.clusters * (self.control_plane_machines + self.workers)
    }
}

/// The name of the `index`th benchmark cluster.
pub fn cluster_name(index: usize) -> String {
    format!("c-{index:05}")
}

/// Runs `scale`: see the module docs.
pub async fn run_scale(config: &ScaleConfig) -> anyhow::Result<ScaleReport> {
    let dir = data_dir(config.data_root.clone())?;
    let plane = ManagementPlane::start(
        dir.path(),
        config.controllers.clone(),
        server_config(config.watch_history, config.watch_history_bytes),
    )
    .await?;
    let mut report = ScaleReport::new(config.clone(), crate::env::describe_dir(dir.path()));
    let result = scale_phases(config, &plane, &mut report).await;
    report.peak_rss = plane::memory().map(|(peak, _)| peak);
    plane.stop().await;
    if let Err(error) = result {
        report.error = Some(format!("{error:#}"));
    }
    Ok(report)
}

async fn scale_phases(
    config: &ScaleConfig,
    plane: &ManagementPlane,
    report: &mut ScaleReport,
) -> anyhow::Result<()> {
    let client = &plane.client;
    create_namespace(client).await?;
    let tracker = Tracker::start(client.clone());
    let machines = config.machines();
    let shape = config.shape();

    let start = plane.sample();
    let created = create_clusters(client, config.clusters, &shape, config.clients).await?;
    report.creates_done = Some(created.duration_since(start.at));
    let ready = wait(plane, &tracker, "create", config, start.at, |counts| {
        counts.clusters == config.clusters
            && counts.available == config.clusters
            && counts.machines == machines
            && counts.running == machines
    })
    .await;
    report.create = Some(PhaseResult::new(start.until(&plane.sample())));
    report.created = Some(tracker.counts());
    ready?;

    if let Some(idle) = config.idle {
        // Settle first: the last writes of the create phase (status roll-ups) trail the
        // moment everything is Available.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let before = plane.sample();
        progress(config.progress, format_args!("idle for {idle:?}"));
        tokio::time::sleep(idle).await;
        report.idle = Some(PhaseResult::new(before.until(&plane.sample())));
    }

    let start = plane.sample();
    delete_clusters(client, config.clusters, config.clients).await?;
    let gone = wait(plane, &tracker, "delete", config, start.at, |counts| {
        counts.clusters == 0 && counts.machines == 0
    })
    .await;
    let leftovers = if gone.is_ok() {
        delete_leftovers(client).await?
    } else {
        Vec::new()
    };
    report.delete = Some(PhaseResult::new(start.until(&plane.sample())));
    report.deleted = Some(tracker.counts());
    gone?;
    report.leftovers = leftovers;
    Ok(())
}

/// What `rollout` does.
#[derive(Clone, Debug)]
pub struct RolloutConfig {
    pub replicas: usize,
    pub max_surge: &'static str,
    pub max_unavailable: &'static str,
    pub timeout: Duration,
    pub data_root: Option<PathBuf>,
    pub controllers: corral_controllers::Config,
    /// As [`ScaleConfig::watch_history`].
    pub watch_history: Option<usize>,
    /// As [`ScaleConfig::watch_history_bytes`].
    pub watch_history_bytes: Option<usize>,
    pub progress: bool,
}

/// Runs `rollout`: see the module docs.
pub async fn run_rollout(config: &RolloutConfig) -> anyhow::Result<RolloutReport> {
    let dir = data_dir(config.data_root.clone())?;
    let plane = ManagementPlane::start(
        dir.path(),
        config.controllers.clone(),
        server_config(config.watch_history, config.watch_history_bytes),
    )
    .await?;
    let mut report = RolloutReport::new(config.clone(), crate::env::describe_dir(dir.path()));
    let result = rollout_phases(config, &plane, &mut report).await;
    report.peak_rss = plane::memory().map(|(peak, _)| peak);
    plane.stop().await;
    if let Err(error) = result {
        report.error = Some(format!("{error:#}"));
    }
    Ok(report)
}

async fn rollout_phases(
    config: &RolloutConfig,
    plane: &ManagementPlane,
    report: &mut RolloutReport,
) -> anyhow::Result<()> {
    let client = &plane.client;
    create_namespace(client).await?;
    let cluster = cluster_name(0);
    let cluster = cluster.as_str();
    let shape = Shape {
        control_plane_machines: 1,
        workers: config.replicas,
        provisioning_delay: Duration::ZERO,
        rollout: Some((config.max_surge, config.max_unavailable)),
    };
    let md_name = objects::machine_deployment_name(cluster);
    let census = Census::start(client.clone(), &md_name);
    let scale = ScaleConfig {
        timeout: config.timeout,
        progress: config.progress,
        watch_history: config.watch_history,
        watch_history_bytes: config.watch_history_bytes,
        ..ScaleConfig::new(1, 1, config.replicas)
    };
    let tracker = Tracker::start(client.clone());

    let start = plane.sample();
    create_clusters(client, 1, &shape, 1).await?;
    let machines = config.replicas + 1;
    let ready = wait(plane, &tracker, "scale-up", &scale, start.at, |counts| {
        counts.machines == machines && counts.running == machines
    })
    .await;
    report.scale_up = Some(PhaseResult::new(start.until(&plane.sample())));
    ready?;
    // The rollout is followed through the MachineDeployment's status and the census: a
    // tracker decoding every Machine in full (managedFields and all) would only load the
    // process whose cost the rollout reports.
    drop(tracker);

    // The new template, then the MachineDeployment pointed at it.
    let new_template = format!("{md_name}-v2");
    let (resource, template) = objects::dev_machine_template(cluster, &new_template, &shape);
    let templates: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);
    templates
        .create(&PostParams::default(), &serde_json::from_value(template)?)
        .await
        .context("creating the new DevMachineTemplate")?;
    census.reset_max();
    let start = plane.sample();
    let deployments: Api<MachineDeployment> = Api::namespaced(client.clone(), NAMESPACE);
    let patch =
        json!({"spec": {"template": {"spec": {"infrastructureRef": {"name": new_template}}}}});
    deployments
        .patch(&md_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .context("pointing the MachineDeployment at the new template")?;
    let generation = deployments.get(&md_name).await?.metadata.generation;
    let replicas = config.replicas as i32;
    let deadline = start.at + config.timeout;
    let mut last_progress = Instant::now();
    let rolled = loop {
        let deployment = deployments.get(&md_name).await?;
        let status = deployment.status.clone().unwrap_or_default();
        let census_now = census.now();
        let done = status.observed_generation >= generation
            && status.up_to_date_replicas == Some(replicas)
            && status.available_replicas == Some(replicas)
            && status.replicas == Some(replicas)
            && census_now.existing == config.replicas
            && census_now.deleting == 0;
        if done {
            break Ok(());
        }
        if config.progress && last_progress.elapsed() >= Duration::from_secs(2) {
            last_progress = Instant::now();
            progress(
                true,
                format_args!(
                    "rollout {:>6.1} s: up to date {:?}, available {:?}, replicas {:?}; machines {} ({} deleting), max {} / {} not deleting",
                    start.at.elapsed().as_secs_f64(),
                    status.up_to_date_replicas,
                    status.available_replicas,
                    status.replicas,
                    census_now.existing,
                    census_now.deleting,
                    census_now.max_existing,
                    census_now.max_not_deleting,
                ),
            );
        }
        if Instant::now() > deadline {
            break Err(anyhow::anyhow!(
                "the rollout was not done after {:?}: {status:?}",
                config.timeout
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    report.rollout = Some(PhaseResult::new(start.until(&plane.sample())));
    let census_now = census.now();
    report.max_existing = census_now.max_existing;
    report.max_not_deleting = census_now.max_not_deleting;
    report.worst = census.worst();
    rolled
}

/// The management API server's settings: its defaults, with at most `watch_history` events
/// and `watch_history_bytes` bytes kept per watch cache when given.
fn server_config(
    watch_history: Option<usize>,
    watch_history_bytes: Option<usize>,
) -> corral_apiserver::ServerConfig {
    // The kinds' admission rules, as the binary's server runs them (the kubeadm providers'
    // too would need corral-kubeadm, which the scale planes do not run).
    let mut config = corral_apiserver::ServerConfig {
        admission: corral_api::admission::rules()
            .extend(corral_infra_inmemory::api::admission::rules()),
        ..corral_apiserver::ServerConfig::default()
    };
    if let Some(events) = watch_history {
        config.watch_cache.history_events = events.max(1);
    }
    if let Some(bytes) = watch_history_bytes {
        config.watch_cache.history_bytes = bytes;
    }
    config
}

fn data_dir(root: Option<PathBuf>) -> anyhow::Result<tempfile::TempDir> {
    let root = root.unwrap_or_else(crate::env::default_data_root);
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    tempfile::Builder::new()
        .prefix("corral-bench-scale-")
        .tempdir_in(&root)
        .with_context(|| format!("creating a data dir under {}", root.display()))
}

fn progress(enabled: bool, line: std::fmt::Arguments<'_>) {
    if enabled {
        eprintln!("{line}");
    }
}

async fn create_namespace(client: &kube::Client) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .context("creating the benchmark namespace")?;
    Ok(())
}

/// Creates clusters `0..count`, `clients` at a time, each cluster's objects in order; returns
/// when the last create was answered.
async fn create_clusters(
    client: &kube::Client,
    count: usize,
    shape: &Shape,
    clients: usize,
) -> anyhow::Result<Instant> {
    futures::stream::iter(0..count)
        .map(Ok)
        .try_for_each_concurrent(clients.max(1), |index| async move {
            let name = cluster_name(index);
            for (resource, object) in objects::cluster_objects(&name, shape) {
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), NAMESPACE, &resource);
                let object: DynamicObject = serde_json::from_value(object)?;
                api.create(&PostParams::default(), &object)
                    .await
                    .with_context(|| {
                        format!(
                            "creating {} {}",
                            resource.kind,
                            object.metadata.name.unwrap_or_default()
                        )
                    })?;
            }
            anyhow::Ok(())
        })
        .await?;
    Ok(Instant::now())
}

/// Deletes Clusters `0..count`, `clients` at a time.
async fn delete_clusters(
    client: &kube::Client,
    count: usize,
    clients: usize,
) -> anyhow::Result<()> {
    let clusters: Api<Cluster> = Api::namespaced(client.clone(), NAMESPACE);
    futures::stream::iter(0..count)
        .map(Ok)
        .try_for_each_concurrent(clients.max(1), |index| {
            let clusters = clusters.clone();
            async move {
                let name = cluster_name(index);
                clusters
                    .delete(&name, &DeleteParams::default())
                    .await
                    .with_context(|| format!("deleting Cluster {name}"))?;
                anyhow::Ok(())
            }
        })
        .await
}

/// After every Cluster is gone: deletes what the benchmark created outside the Clusters'
/// ownership (bootstrap Secrets, DevMachineTemplates), then lists what remains of every kind a
/// Cluster's deletion should have removed; returns `kind: count` for each non-empty one.
async fn delete_leftovers(client: &kube::Client) -> anyhow::Result<Vec<String>> {
    let labelled = ListParams::default().labels(corral_api::labels::CLUSTER_NAME);
    for resource in [objects::secrets(), objects::dev_machine_templates()] {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);
        api.delete_collection(&DeleteParams::default(), &labelled)
            .await
            .with_context(|| format!("deleting the benchmark's {}", resource.plural))?;
    }
    let mut leftovers = Vec::new();
    for resource in [
        objects::dev_clusters(),
        objects::dev_machines(),
        objects::machine_sets(),
        objects::machine_deployments(),
        objects::secrets(),
        objects::dev_machine_templates(),
    ] {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);
        let remaining = api
            .list_metadata(&ListParams::default())
            .await
            .with_context(|| format!("listing {}", resource.plural))?
            .items
            .len();
        if remaining > 0 {
            leftovers.push(format!("{}: {remaining}", resource.kind));
        }
    }
    Ok(leftovers)
}

/// Clusters and Machines as a watch shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub clusters: usize,
    pub available: usize,
    pub machines: usize,
    pub running: usize,
}

/// Reflectors of the benchmark's Clusters and Machines, as a client of the management plane
/// would watch them; each event decoded only as far as the counts read ([`tracked`]).
struct Tracker {
    clusters: Store<TrackedCluster>,
    machines: Store<TrackedMachine>,
    _tasks: Vec<AbortOnDrop>,
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn reflect<K>(api: Api<K>) -> (Store<K>, AbortOnDrop)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .for_each(|_| async {});
    (store, AbortOnDrop(tokio::spawn(stream)))
}

impl Tracker {
    fn start(client: kube::Client) -> Tracker {
        let (clusters, cluster_task) = reflect(Api::namespaced(client.clone(), NAMESPACE));
        let (machines, machine_task) = reflect(Api::namespaced(client, NAMESPACE));
        Tracker {
            clusters,
            machines,
            _tasks: vec![cluster_task, machine_task],
        }
    }

    fn counts(&self) -> Counts {
        let clusters = self.clusters.state();
        let machines = self.machines.state();
        Counts {
            clusters: clusters.len(),
            available: clusters.iter().filter(|c| c.is_available()).count(),
            machines: machines.len(),
            running: machines.iter().filter(|m| m.is_running()).count(),
        }
    }
}

/// Waits until `done` holds for the tracker's counts, printing progress every two seconds.
async fn wait(
    plane: &ManagementPlane,
    tracker: &Tracker,
    phase: &str,
    config: &ScaleConfig,
    started: Instant,
    done: impl Fn(&Counts) -> bool,
) -> anyhow::Result<()> {
    let mut last_progress = Instant::now();
    let first = plane.sample();
    loop {
        let counts = tracker.counts();
        if done(&counts) {
            return Ok(());
        }
        if config.progress && last_progress.elapsed() >= Duration::from_secs(2) {
            last_progress = Instant::now();
            let delta = first.until(&plane.sample());
            let rss = plane::memory().map(|(_, rss)| rss >> 20).unwrap_or(0);
            progress(
                true,
                format_args!(
                    "{phase} {:>6.1} s: clusters {}/{} available, machines {}/{} running (of {}); {} writes, CPU {:.1} s, RSS {rss} MiB",
                    started.elapsed().as_secs_f64(),
                    counts.available,
                    counts.clusters,
                    counts.running,
                    config.machines(),
                    counts.machines,
                    delta.total_writes(),
                    delta.cpu.unwrap_or_default().as_secs_f64(),
                ),
            );
        }
        if started.elapsed() > config.timeout {
            anyhow::bail!("{phase}: not done after {:?}: {counts:?}", config.timeout);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Machines of one MachineDeployment, counted at every watch event: how many exist, how
/// many of them are being deleted, and the most seen at once.
struct Census {
    state: Arc<std::sync::Mutex<CensusState>>,
    _task: AbortOnDrop,
}

#[derive(Clone, Copy, Debug, Default)]
struct CensusNow {
    existing: usize,
    deleting: usize,
    max_existing: usize,
    max_not_deleting: usize,
}

/// What the census knows of one Machine.
#[derive(Clone, Debug)]
struct Counted {
    deleting: bool,
    /// The MachineSet it belongs to (its set-name label).
    machine_set: String,
}

/// What the census decodes of a Machine: the metadata it reads (the rest of each watch event
/// is parsed, not built), so that the benchmark's own bookkeeping costs little of the CPU it
/// measures.
type CensusMachine = TrackedMachine;

impl Counted {
    fn of(machine: &CensusMachine) -> Counted {
        Counted {
            deleting: machine.metadata.deletion_timestamp.is_some(),
            machine_set: machine
                .metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(corral_api::labels::MACHINE_SET_NAME))
                .cloned()
                .unwrap_or_default(),
        }
    }
}

#[derive(Default)]
struct CensusState {
    /// Machine name → what is known of it.
    machines: HashMap<String, Counted>,
    /// How many of `machines` are being deleted.
    deleting: usize,
    /// How many of `machines` are not being deleted, per MachineSet.
    not_deleting: HashMap<String, usize>,
    now: CensusNow,
    /// Machines not being deleted per MachineSet when the most were seen.
    worst: Vec<(String, usize)>,
}

impl CensusState {
    fn apply(&mut self, machine: &CensusMachine, present: bool) {
        let name = machine.metadata.name.clone().unwrap_or_default();
        let replaced = if present {
            let counted = Counted::of(machine);
            self.count(&counted, true);
            self.machines.insert(name, counted)
        } else {
            self.machines.remove(&name)
        };
        if let Some(old) = replaced {
            self.count(&old, false);
        }
        self.recount();
    }

    /// Counts `machine` in (`add`) or out of the totals.
    fn count(&mut self, machine: &Counted, add: bool) {
        let count = if machine.deleting {
            &mut self.deleting
        } else {
            self.not_deleting
                .entry(machine.machine_set.clone())
                .or_default()
        };
        if add {
            *count += 1;
        } else {
            *count -= 1;
            self.not_deleting.retain(|_, count| *count > 0);
        }
    }

    /// Replaces every Machine known (after a relist).
    fn relisted(&mut self, machines: HashMap<String, Counted>) {
        self.deleting = 0;
        self.not_deleting.clear();
        for machine in machines.values() {
            self.count(machine, true);
        }
        self.machines = machines;
        self.recount();
    }

    fn recount(&mut self) {
        let existing = self.machines.len();
        let deleting = self.deleting;
        let now = &mut self.now;
        now.existing = existing;
        now.deleting = deleting;
        now.max_existing = now.max_existing.max(existing);
        if existing - deleting > now.max_not_deleting {
            now.max_not_deleting = existing - deleting;
            self.worst = self.per_machine_set();
        }
    }

    /// Machines not being deleted, per MachineSet.
    fn per_machine_set(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = self
            .not_deleting
            .iter()
            .map(|(name, count)| (name.clone(), *count))
            .collect();
        counts.sort();
        counts
    }
}

impl Census {
    fn start(client: kube::Client, machine_deployment: &str) -> Census {
        let api: Api<CensusMachine> = Api::namespaced(client, NAMESPACE);
        let config = watcher::Config::default().labels(&format!(
            "{}={machine_deployment}",
            corral_api::labels::MACHINE_DEPLOYMENT_NAME
        ));
        let state = Arc::new(std::sync::Mutex::new(CensusState::default()));
        let task_state = state.clone();
        let task = tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, config).default_backoff());
            let mut relist: Option<HashMap<String, Counted>> = None;
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                let mut state = task_state.lock().unwrap();
                match event {
                    watcher::Event::Apply(machine) => state.apply(&machine, true),
                    watcher::Event::Delete(machine) => state.apply(&machine, false),
                    watcher::Event::Init => relist = Some(HashMap::new()),
                    watcher::Event::InitApply(machine) => {
                        if let Some(relist) = relist.as_mut() {
                            relist.insert(
                                machine.metadata.name.clone().unwrap_or_default(),
                                Counted::of(&machine),
                            );
                        }
                    }
                    watcher::Event::InitDone => {
                        if let Some(machines) = relist.take() {
                            state.relisted(machines);
                        }
                    }
                }
            }
        });
        Census {
            state,
            _task: AbortOnDrop(task),
        }
    }

    fn now(&self) -> CensusNow {
        self.state.lock().unwrap().now
    }

    /// Forgets the maxima so far (those of the scale-up).
    fn reset_max(&self) {
        let mut state = self.state.lock().unwrap();
        state.now.max_existing = state.now.existing;
        state.now.max_not_deleting = state.now.existing - state.now.deleting;
        state.worst = state.per_machine_set();
    }

    /// Machines not being deleted per MachineSet when the most were seen.
    fn worst(&self) -> Vec<(String, usize)> {
        self.state.lock().unwrap().worst.clone()
    }
}

/// A phase's numbers, for the report.
impl PhaseResult {
    fn new(delta: Delta) -> PhaseResult {
        PhaseResult { delta }
    }
}
