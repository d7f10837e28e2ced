//! The DevCluster and DevMachine controllers: kube-runtime reconcilers that reach the management
//! plane only through `kube::Client` and the simulated cloud only through [`Cloud`].
//!
//! They follow upstream's dev provider (`test/infrastructure/docker/internal/controllers/
//! {devcluster,devmachine}_controller.go` and `backends/inmemory/*_backend.go`): an object is
//! reconciled once its owner (Cluster, Machine) is set, a finalizer guards what the cloud holds,
//! a paused Cluster or object is left alone with a `Paused` condition, and the contract fields
//! (`status.initialization.provisioned`, `spec.controlPlaneEndpoint`, `spec.providerID`,
//! `status.addresses`, `status.failureDomain(s)`) are written as the simulation progresses.
//! Reconcilers are level-triggered: each run reads the objects and the cloud and writes what
//! should be, whatever triggered it.

mod conditions;
mod dev_cluster;
mod dev_machine;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use corral_runtime::Recorder;
use corral_runtime::own_writes::OwnWrites;
use futures::{FutureExt, StreamExt};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{EventType, Reporter};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::cloud::{Cloud, CloudError};
use corral_runtime::shared::Caches;

/// Reconciles run and failed so far, per controller, for benchmarks (see [`reconcile_counts`]).
static DEV_CLUSTER_RECONCILES: ReconcileCounter = ReconcileCounter::new();
static DEV_MACHINE_RECONCILES: ReconcileCounter = ReconcileCounter::new();

/// Finished and failed reconciles of one controller.
struct ReconcileCounter {
    reconciles: std::sync::atomic::AtomicU64,
    failures: std::sync::atomic::AtomicU64,
}

impl ReconcileCounter {
    const fn new() -> Self {
        ReconcileCounter {
            reconciles: std::sync::atomic::AtomicU64::new(0),
            failures: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn record<T, E>(&self, result: &Result<T, E>) {
        use std::sync::atomic::Ordering::Relaxed;
        self.reconciles.fetch_add(1, Relaxed);
        if result.is_err() {
            self.failures.fetch_add(1, Relaxed);
        }
    }

    fn read(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.reconciles.load(Relaxed), self.failures.load(Relaxed))
    }
}

/// Reconciles run so far by each controller of this provider in this process, as
/// `(controller, reconciles, failed reconciles)`; for benchmarks.
pub fn reconcile_counts() -> Vec<(&'static str, u64, u64)> {
    [
        ("devcluster", DEV_CLUSTER_RECONCILES.read()),
        ("devmachine", DEV_MACHINE_RECONCILES.read()),
    ]
    .into_iter()
    .map(|(name, (reconciles, failures))| (name, reconciles, failures))
    .collect()
}

/// The name the controllers report as, in Events.
const CONTROLLER_NAME: &str = "corral-infra-inmemory";

/// How often an object is reconciled when nothing changes: what the controllers keep in place
/// outside the management plane (the cloud's VMs and endpoints, the kubeconfig Secret) is
/// checked at least this often, as upstream's controllers resync every 10 minutes.
const RESYNC: Duration = Duration::from_secs(600);

/// How long to wait before reconciling an object whose reconcile failed.
const ERROR_REQUEUE: Duration = Duration::from_secs(2);

/// How long to wait before reconciling an object whose write lost a race (HTTP 409) again. The
/// race means the watch has not shown the newer version yet; its event triggers the next
/// reconcile (also when it arrives during this one), so this is only a safety net. Retrying
/// sooner would re-read the same stale copy and lose again, many times over on a busy machine.
const CONFLICT_REQUEUE: Duration = Duration::from_secs(1);

/// How many objects of one kind are reconciled at once: enough to overlap the round trips of
/// many clusters' reconciles, bounded so that a burst of events does not start thousands of
/// tasks at once.
const CONCURRENCY: u16 = 64;

/// A provider object's Cluster, for the shared caches' index: its cluster-name label (which
/// the core controllers set when they create it from a template).
pub(crate) fn cluster_label<K: Resource>(object: &K) -> &str {
    object
        .meta()
        .labels
        .as_ref()
        .and_then(|labels| labels.get(corral_api::labels::CLUSTER_NAME))
        .map(String::as_str)
        .unwrap_or_default()
}

/// Runs a reconciler over `queue` until `shutdown`, as kube-runtime's Controller does, with
/// [`CONCURRENCY`], each reconcile in its own task, and counts each reconcile in `counter`.
async fn run_applier<K, F, Fut>(
    store: kube::runtime::reflector::Store<K>,
    queue: futures::stream::BoxStream<
        'static,
        Result<kube::runtime::controller::ReconcileRequest<K>, kube::runtime::watcher::Error>,
    >,
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    counter: &'static ReconcileCounter,
    reconcile: F,
) where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<Context>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<kube::runtime::controller::Action, Error>> + Send + 'static,
{
    // Each reconcile in its own task, so that reconciles run on every worker thread rather
    // than inside the applier's one task.
    let reconciler = move |object: Arc<K>, context: Arc<Context>| {
        let future = reconcile(object, context);
        kube::runtime::utils::CancelableJoinHandle::spawn(
            async move {
                let result = future.await;
                counter.record(&result);
                result
            },
            &tokio::runtime::Handle::current(),
        )
    };
    let settings = kube::runtime::controller::Config::default().concurrency(CONCURRENCY);
    drain(kube::runtime::applier(
        reconciler,
        error_policy,
        context,
        store,
        queue.take_until(shutdown),
        settings,
    ))
    .await;
}

/// Runs the DevCluster and DevMachine controllers until `shutdown` completes.
///
/// The CRDs of [`crate::crds`] and the `cluster.x-k8s.io` CRDs must be installed; until they
/// are, the controllers' watches fail and retry.
pub async fn run(
    client: kube::Client,
    cloud: Arc<dyn Cloud>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let caches = Caches::new(client.clone());
    run_with_caches(client, cloud, caches, shutdown).await;
}

/// [`run`], reading through `caches`, which the core controllers may share (one watch of
/// Machines and Clusters for all).
pub async fn run_with_caches(
    client: kube::Client,
    cloud: Arc<dyn Cloud>,
    caches: Caches,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let context = Arc::new(Context {
        caches,
        client: client.clone(),
        cloud,
        recorder: Recorder::new(client, Reporter::from(CONTROLLER_NAME)),
        own_writes: OwnWrites::new(),
    });
    let shutdown = shutdown.shared();
    futures::join!(
        dev_cluster::run(context.clone(), shutdown.clone()),
        dev_machine::run(context, shutdown),
    );
}

/// What every reconcile shares.
pub(crate) struct Context {
    pub client: kube::Client,
    /// The watches of every kind the controllers read, shared.
    pub caches: Caches,
    pub cloud: Arc<dyn Cloud>,
    pub recorder: Recorder,
    /// This provider's writes, to skip reconciles of a copy one of them replaced.
    pub own_writes: OwnWrites,
}

impl Context {
    /// Publishes an Event about `object`. Events are for people; failing to publish one does not
    /// fail the reconcile.
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        self.recorder.note(object, type_, reason, note).await
    }
}

/// A failed reconcile. Each variant names the operation that failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("cannot read {kind} {name}")]
    Get {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot patch {kind} {name}")]
    Patch {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write the kubeconfig Secret {name}")]
    WriteKubeconfig {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("the simulated cloud failed")]
    Cloud(#[source] CloudError),
}

impl Error {
    /// Whether the error is a write whose resourceVersion precondition failed.
    fn is_conflict(&self) -> bool {
        match self {
            Error::Get { source, .. }
            | Error::Patch { source, .. }
            | Error::WriteKubeconfig { source, .. } => {
                matches!(source, kube::Error::Api(status) if status.code == 409)
            }
            Error::Cloud(_) => false,
        }
    }
}

/// Logs a failed reconcile and tries again shortly (at once after a lost write race); the reconcile has already set a condition
/// where a person should see the failure.
fn error_policy<K: ResourceExt>(
    object: Arc<K>,
    error: &Error,
    _: Arc<Context>,
) -> kube::runtime::controller::Action {
    let object = format!(
        "{}/{}",
        object.namespace().unwrap_or_default(),
        object.name_any()
    );
    if error.is_conflict() {
        tracing::debug!(%object, error = %error_chain(error), "Reconcile lost a write race");
        return kube::runtime::controller::Action::requeue(CONFLICT_REQUEUE);
    }
    tracing::warn!(%object, error = %error_chain(error), "Reconcile failed");
    kube::runtime::controller::Action::requeue(ERROR_REQUEUE)
}

/// An error and its sources, as one line.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Logs the outcome of each reconcile of a controller's stream.
async fn drain<T: std::fmt::Debug, E: std::fmt::Display>(
    stream: impl futures::Stream<Item = Result<T, E>>,
) {
    stream
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "Controller event");
            }
        })
        .await;
}

/// Adds or removes `finalizer` with a merge patch conditional on the object's resourceVersion,
/// so that a concurrent change of the finalizers is not lost (the patch then fails and the
/// reconcile runs again). An added finalizer is remembered as an own write; removing it lets
/// the object go, and the object is forgotten.
async fn set_finalizer<K>(
    context: &Context,
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    present: bool,
) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut finalizers = object.finalizers().to_vec();
    let has = finalizers.iter().any(|existing| existing == finalizer);
    if has == present {
        return Ok(());
    }
    if present {
        finalizers.push(finalizer.to_string());
    } else {
        finalizers.retain(|existing| existing != finalizer);
    }
    let patch = json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": object.resource_version(),
        }
    });
    let written = api
        .patch(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(|source| Error::Patch {
            kind: K::kind(&()).to_string(),
            name: object.name_any(),
            source,
        })?;
    if present {
        if let Some(replaced) = object.resource_version() {
            context.own_writes.remember(written.meta(), replaced);
        }
    } else {
        context.own_writes.forget(object);
    }
    Ok(())
}

/// Writes `status` as the object's status when it differs from `current`, the status of the
/// copy `object` the reconcile started from, as a JSON merge patch of the difference. `base` is
/// the version the write replaces: the copy's, or the one an earlier write of the same
/// reconcile produced. Returns whether it wrote.
async fn write_status<K, S>(
    context: &Context,
    api: &Api<K>,
    object: &K,
    current: Option<&S>,
    status: &S,
    base: Option<&str>,
) -> Result<bool, Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    S: serde::Serialize + PartialEq,
{
    if current == Some(status) {
        return Ok(false);
    }
    let old = serde_json::to_value(current).expect("a status serializes");
    let new = serde_json::to_value(status).expect("a status serializes");
    let patch = json!({ "status": merge_patch(&old, &new) });
    let written = api
        .patch_status(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(|source| Error::Patch {
            kind: K::kind(&()).to_string(),
            name: object.name_any(),
            source,
        })?;
    if let Some(base) = base {
        context.own_writes.remember(written.meta(), base.to_owned());
    }
    Ok(true)
}

/// Writes `patch` (a JSON merge patch of the spec or metadata) to the object, and returns what
/// the API server stored, remembered as an own write that replaced `base` (the copy's version,
/// or the one an earlier write of the same reconcile produced).
async fn write_spec<K>(
    context: &Context,
    api: &Api<K>,
    object: &K,
    patch: serde_json::Value,
    base: Option<&str>,
) -> Result<K, Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let written = api
        .patch(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(|source| Error::Patch {
            kind: K::kind(&()).to_string(),
            name: object.name_any(),
            source,
        })?;
    if let Some(base) = base {
        context.own_writes.remember(written.meta(), base.to_owned());
    }
    Ok(written)
}

/// Whether a reconcile of `object` is to be skipped: a copy an own write replaced (see
/// `corral_runtime::own_writes`); the write's watch event brings the next reconcile.
fn replaced_by_own_write<K: Resource>(context: &Context, object: &K) -> bool {
    let replaced = context.own_writes.is_replaced(object);
    if replaced {
        tracing::debug!("Skipping a copy that an own write replaced");
    }
    replaced
}

/// Whether reconciliation is paused, by the Cluster's `spec.paused` or the object's
/// `cluster.x-k8s.io/paused` annotation, and the message upstream's `util/paused` writes.
fn paused(
    cluster: Option<&corral_api::Cluster>,
    object: &impl ResourceExt,
    kind: &str,
) -> Option<String> {
    let mut reasons = Vec::new();
    if cluster.is_some_and(|cluster| cluster.spec.paused == Some(true)) {
        reasons.push("Cluster spec.paused is set to true".to_string());
    }
    if object
        .annotations()
        .contains_key(corral_api::annotations::PAUSED)
    {
        reasons.push(format!("{kind} has the cluster.x-k8s.io/paused annotation"));
    }
    (!reasons.is_empty()).then(|| reasons.join(", "))
}

/// The owner reference of the given kind in the `cluster.x-k8s.io` group, by name.
fn owner_named(object: &impl ResourceExt, kind: &str) -> Option<String> {
    object
        .owner_references()
        .iter()
        .find(|owner| {
            owner.kind == kind && owner.api_version.split('/').next() == Some(corral_api::GROUP)
        })
        .map(|owner| owner.name.clone())
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`: changed and added fields, and
/// null for removed ones, so that a field the controller stops setting is cleared.
pub(crate) fn merge_patch(old: &serde_json::Value, new: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = serde_json::Map::new();
            for (key, value) in new {
                match old.get(key) {
                    Some(existing) if existing == value => {}
                    Some(existing) if existing.is_object() && value.is_object() => {
                        patch.insert(key.clone(), merge_patch(existing, value));
                    }
                    _ => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in old.keys().filter(|key| !new.contains_key(*key)) {
                patch.insert(key.clone(), Value::Null);
            }
            Value::Object(patch)
        }
        (_, new) => new.clone(),
    }
}

/// Reads an object that may not exist.
async fn get_opt<K>(api: &Api<K>, name: &str) -> Result<Option<K>, Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.map_err(|source| Error::Get {
        kind: K::kind(&()).to_string(),
        name: name.to_string(),
        source,
    })
}
