//! What every Corral controller and provider is written on, core and providers alike: the
//! [`Context`] (management-plane client, event recorder, provider-object resolver,
//! workload-cluster cache, configuration), the shared caches ([`shared::Caches`], one watch per
//! kind, with the per-Cluster [`index::ClusterIndex`]), and [`run_controller`], which feeds a
//! reconciler from watches with an exponential-backoff error policy and one tracing span per
//! reconcile. [`cluster_cache`] reaches workload clusters, [`external`] reads and writes
//! provider objects, [`conditions`] sets and derives v1beta2 conditions as upstream does.
//!
//! It knows no controller: it depends on `corral-api` and kube only, and what is particular to
//! one controller (a field manager, a kind's index keys) is passed in or named in `corral-api`.
//!
//! # Guarantees
//!
//! - A reconciler is never called twice at once for the same object (kube-runtime's applier),
//!   and up to [`Config::concurrency`] objects of one kind are reconciled at once, each in its
//!   own task.
//! - A failed reconcile is retried after [`Config::backoff_initial`], doubling with each failure
//!   in a row up to [`Config::backoff_max`]; a successful one resets the count.
//! - Reconcilers return `Action::await_change()` when they wait on something that produces a
//!   watch event, and a delayed requeue only for what does not (a timeout, a grace period).
//!   Writes happen only when something changed ([`patch`]), so a reconcile of an unchanged
//!   object causes no write and no new event: controllers do not feed themselves.
//!
//! # Adding a controller
//!
//! A controller module exposes `async fn run(ctx: Arc<Context>, shutdown: Shutdown)` that
//! builds its queue (its own objects through a shared cache or a reflector, plus mapped
//! watches) and calls [`run_controller`]; the crate that owns it starts it (the core's
//! `corral_controllers::run`, a provider's own `run`).
//!
//! # Map of the crate
//!
//! What every controller and provider is written on, core and providers alike; it depends on
//! `corral-api` and kube only, and knows no controller (what is particular to one, such as the
//! MachineSet's field manager, is passed in or named in `corral-api`). The crate root holds the
//! `Context` (client, event recorder reporting as `corral`, provider-object resolver, cluster
//! cache, shared caches, settings: `Config`) and `run_controller` (kube-runtime's applier fed by
//! the controller's kind plus mapped watches, one task and one tracing span per reconcile, failures
//! retried with per-object exponential backoff (`backoff.rs`), lost write races within a second;
//! reconciles of a copy an own write replaced are skipped). `shared.rs` is `Caches`: one watch,
//! store and `index.rs` `ClusterIndex` (a kind's objects per Cluster, and within a Cluster per key:
//! controller owner, control-plane label, MachinePool label, provider ID; the store's own `Arc`s)
//! per kind for all controllers of a process, providers included; each controller subscribes to a
//! stream of the store's own `Arc`s, a snapshot then every change; objects are cached without
//! managedFields — the Machine cache keeps the MachineSet's entry, which it reads —
//! `trim_managed_fields`; `lean.rs` decodes watched objects with only that entry's tree built, the
//! others parsed and skipped. `changes.rs` is "reconcile only when what I read changed":
//! `Fingerprints` of what a controller reads of another kind's objects, applied to a cache's stream
//! by `SharedCache::applied_changed` / `touched_changed`; the start of a deletion always passes
//! once, and a deleted object's entry is dropped on its deletion event. `coalesce.rs` holds back
//! reconciles asked for by other objects' changes and by a controller's own status writes coming
//! back for 200 ms and joins them, longer for objects that sum up thousands of Machines
//! (`Window::scaled`, up to 1 s, one window for an object's own writes and its descendants'
//! changes); a user's change is reconciled at once. `patch.rs` writes merge patches of what
//! changed, with the read resourceVersion as precondition; equal objects are not encoded, and
//! `patch::write` compares metadata+spec and status typed (`Parts`) so that only the part that
//! changed is encoded; its answers are decoded for five metadata fields only. `own_writes.rs` is
//! "skip a copy my own write replaced": the chain of versions own writes replaced, per uid,
//! process-wide for every write through `patch` (and so for `run_controller`), or per controller
//! for one that writes otherwise (the in-memory provider). `events.rs` is the Event recorder of
//! every controller, core and providers: client-go's `events` semantics, the first repeat starts a
//! series and later repeats are counted in memory and written by a flusher at most every 10 s,
//! without kube-runtime's scan of every recent Event per publish; `Recorder::note` is how a
//! controller says something (a failure to publish is logged, never fails a reconcile). `ready.rs`
//! is `CachesReady`, one shared wait for a controller's reflector stores (kube-runtime 5's
//! `Store::wait_until_ready` wakes only the last of concurrent waiters); `triggers.rs` starts
//! watches of provider kinds as references resolve; `metrics.rs` counts reconciles per controller;
//! `clock.rs` is the `Clock` timeouts are judged by, which tests move forward instead of sleeping;
//! `naming.rs` makes up Machine names from `machineNaming` templates, random suffixes and label
//! values (MachineSet, MachineDeployment, KubeadmControlPlane). `external.rs` reads and writes
//! provider objects from `ContractVersionedObjectReference`s: the resource by API discovery, the
//! version from the CRD's contract label, ownership, deletion (read through the kind's cache; the
//! API server is asked only when the cache does not show the object; `list_cached` selects from the
//! cache by namespace and labels), and objects cloned from `<Kind>Template`s. `cluster_cache.rs`
//! holds one client per workload cluster from its `<cluster>-kubeconfig` Secret (read from its
//! watch of kubeconfig Secrets, which also wakes a cluster waiting for its Secret, and serves each
//! Cluster's certificate and kubeconfig Secrets to the kubeadm providers: `cluster_secret`),
//! health-probed by a task per cluster, with a Node cache indexed by provider ID; the controllers
//! of one `Caches` (core and providers) share one (`Caches::cluster_cache`). `conditions/` sets and
//! derives v1beta2 conditions (mirror, summary, aggregate) as upstream's `util/conditions`. Its
//! tests run against an in-process API server (`corral-testenv`, a dev-dependency); the
//! `ClusterCache` against real workload API servers is tested in corral-controllers'
//! `tests/it/cluster_cache.rs`.

pub mod backoff;
pub mod changes;
pub mod clock;
pub mod cluster_cache;
pub mod coalesce;
pub mod conditions;
pub mod events;
pub mod external;
pub mod index;
pub mod lean;
pub mod metrics;
pub mod naming;
pub mod own_writes;
pub mod patch;
pub mod ready;
pub mod shared;
pub mod triggers;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::future::{BoxFuture, Shared};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::controller::{self, Action, ReconcileRequest};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::runtime::reflector::Store;
use kube::runtime::utils::CancelableJoinHandle;
use kube::runtime::{applier, watcher};
use kube::{Client, Resource, ResourceExt};
use tracing::Instrument;

pub use events::Recorder;

use crate::cluster_cache::{ClusterCache, ClusterCacheConfig};
use crate::external::ExternalObjects;

pub use backoff::Backoff;
pub use clock::Clock;
pub use index::ClusterIndex;
pub use shared::{Caches, SharedCache};

/// The longest wait before retrying a reconcile that lost a write race (HTTP 409), however many
/// it lost in a row.
pub const CONFLICT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The default [`Config::coalesce_window`]: short beside what a person notices, long beside
/// the milliseconds between the changes of a cluster coming up.
pub const DEFAULT_COALESCE_WINDOW: Duration = Duration::from_millis(200);

/// The name controllers report events under (`reportingController`).
pub const REPORTING_CONTROLLER: &str = "corral";

/// Settings shared by the controllers.
#[derive(Clone, Debug)]
pub struct Config {
    /// How many objects of one kind are reconciled at once (upstream's `--*-concurrency`
    /// flags, default 10).
    pub concurrency: u16,
    /// The wait before retrying a failed reconcile.
    pub backoff_initial: Duration,
    /// The longest wait between retries of a reconcile that keeps failing.
    pub backoff_max: Duration,
    /// How long a workload cluster may fail its health probes before the Cluster's
    /// RemoteConnectionProbe condition goes False (upstream `--remote-connection-grace-period`,
    /// 50 s).
    pub remote_connection_grace_period: Duration,
    /// How long a workload cluster may be unreachable before the conditions read from it (a
    /// Machine's NodeReady, NodeHealthy) go Unknown (upstream `--remote-conditions-grace-period`,
    /// 5 min).
    pub remote_conditions_grace_period: Duration,
    /// Connections to workload clusters.
    pub cluster_cache: ClusterCacheConfig,
    /// The time timeouts are judged by (MachineHealthCheck timeouts); tests move it forward.
    pub clock: Clock,
    /// How long a reconcile asked for by another object's change (a Machine's, for its
    /// MachineSet and Cluster) is held back so that the changes of a burst are reconciled
    /// together ([`coalesce`]); zero reconciles at once.
    pub coalesce_window: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            concurrency: 10,
            backoff_initial: Duration::from_millis(5),
            backoff_max: Duration::from_secs(300),
            remote_connection_grace_period: Duration::from_secs(50),
            remote_conditions_grace_period: Duration::from_secs(300),
            cluster_cache: ClusterCacheConfig::default(),
            clock: Clock::default(),
            coalesce_window: DEFAULT_COALESCE_WINDOW,
        }
    }
}

/// What the controllers share.
pub struct Context {
    client: Client,
    config: Config,
    recorder: Recorder,
    external: Arc<ExternalObjects>,
    cluster_cache: ClusterCache,
    caches: shared::Caches,
}

impl Context {
    /// A context over the management plane `client`.
    pub fn new(client: Client, config: Config) -> Arc<Context> {
        let caches = shared::Caches::new(client.clone());
        Self::with_caches(client, config, caches)
    }

    /// A context whose controllers read through `caches`.
    pub fn with_caches(client: Client, config: Config, caches: shared::Caches) -> Arc<Context> {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: REPORTING_CONTROLLER.into(),
                instance: None,
            },
        );
        Arc::new(Context {
            external: Arc::new(ExternalObjects::new(client.clone())),
            // Shared with the providers' controllers on the same caches.
            cluster_cache: caches.cluster_cache(&config.cluster_cache),
            caches,
            recorder,
            client,
            config,
        })
    }

    /// The management plane client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The caches the controllers of this context share, one watch per kind.
    pub fn caches(&self) -> &shared::Caches {
        &self.caches
    }

    /// An event recorder reporting as [`REPORTING_CONTROLLER`].
    pub fn recorder(&self) -> Recorder {
        self.recorder.clone()
    }

    /// Reads and writes provider objects.
    pub fn external(&self) -> &Arc<ExternalObjects> {
        &self.external
    }

    /// Clients for workload clusters.
    pub fn cluster_cache(&self) -> &ClusterCache {
        &self.cluster_cache
    }

    /// Publishes an event about `object`. A failure is logged, never returned: an event is
    /// a courtesy, and the condition it accompanies is what counts.
    pub async fn publish_event<K>(
        &self,
        object: &K,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) where
        K: Resource<DynamicType = ()>,
    {
        let reference: ObjectReference = object.object_ref(&());
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: action.into(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &reference).await {
            tracing::warn!(%error, reason, "Failed to publish event");
        }
    }
}

/// A future that resolves when the controllers should stop; cheap to clone.
pub type Shutdown = Shared<BoxFuture<'static, ()>>;

/// Objects that belong to a Cluster, for the span of their reconciles.
pub trait ClusterObject {
    /// The name of the Cluster the object belongs to.
    fn cluster_name(&self) -> &str;
}

impl ClusterObject for corral_api::Cluster {
    fn cluster_name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

impl ClusterObject for corral_api::Machine {
    fn cluster_name(&self) -> &str {
        &self.spec.cluster_name
    }
}

impl ClusterObject for corral_api::MachineSet {
    fn cluster_name(&self) -> &str {
        &self.spec.cluster_name
    }
}

impl ClusterObject for corral_api::MachineDeployment {
    fn cluster_name(&self) -> &str {
        &self.spec.cluster_name
    }
}

impl ClusterObject for corral_api::MachineHealthCheck {
    fn cluster_name(&self) -> &str {
        &self.spec.cluster_name
    }
}

/// `namespace/name`, for logs and backoff keys.
pub fn object_key<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}

/// A stream of requests for a controller's queue.
pub type Queue<K> = Pin<Box<dyn Stream<Item = Result<ReconcileRequest<K>, watcher::Error>> + Send>>;

/// Runs a reconciler over `queue` until it ends (shutdown ends it): each reconcile in its own
/// task inside a span with the object and its cluster, failures retried with `backoff`.
pub async fn run_controller<K, C, E, F, Fut>(
    name: &'static str,
    context: Arc<C>,
    config: &Config,
    store: Store<K>,
    queue: Queue<K>,
    shutdown: Shutdown,
    reconcile: F,
) where
    K: Resource<DynamicType = ()> + ClusterObject + Clone + Send + Sync + std::fmt::Debug + 'static,
    C: Send + Sync + 'static,
    E: std::error::Error + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
{
    let backoff = Arc::new(Backoff::new(config.backoff_initial, config.backoff_max));
    let reconcile_backoff = backoff.clone();
    let counter = metrics::counter(name);
    let reconciler = move |object: Arc<K>, context: Arc<C>| {
        let key = object_key(object.as_ref());
        let span = tracing::info_span!(
            "reconcile",
            controller = name,
            object = %key,
            cluster = %object.cluster_name(),
        );
        let backoff = reconcile_backoff.clone();
        let counter = counter.clone();
        let object_ref = object.clone();
        let future = reconcile(object, context);
        // A copy that a write of this process replaced: the write's watch event brings the
        // next reconcile (see `patch`).
        let stale = patch::is_replaced(object_ref.as_ref());
        CancelableJoinHandle::spawn(
            async move {
                if stale {
                    tracing::debug!("Skipping a reconcile of a copy replaced by an own write");
                    return Ok(Action::await_change());
                }
                tracing::debug!("Reconciling");
                let result = future.await;
                counter.record(result.is_ok());
                if result.is_ok() {
                    backoff.succeed(&key);
                }
                result
            }
            .instrument(span),
            &tokio::runtime::Handle::current(),
        )
    };
    let error_policy = move |object: Arc<K>, error: &E, _: Arc<C>| {
        let key = object_key(object.as_ref());
        let delay = backoff.fail(&key);
        let conflict = is_conflict(error);
        // A lost race is not a fault that waiting out helps: the object has a newer version
        // whose event is on its way. Retrying soon keeps a burst of races from growing the
        // wait to minutes.
        let delay = if conflict {
            delay.min(CONFLICT_BACKOFF_MAX)
        } else {
            delay
        };
        if conflict {
            // Another writer came first, from a cache a little behind; the retry reads anew.
            tracing::debug!(
                controller = name,
                object = %key,
                cluster = %object.cluster_name(),
                error = %error_chain(error),
                retry_in = ?delay,
                "Reconcile lost a write race"
            );
        } else {
            tracing::warn!(
                controller = name,
                object = %key,
                cluster = %object.cluster_name(),
                error = %error_chain(error),
                retry_in = ?delay,
                "Reconcile failed"
            );
        }
        Action::requeue(delay)
    };
    let settings = controller::Config::default().concurrency(config.concurrency);
    applier(
        reconciler,
        error_policy,
        context,
        store,
        queue.take_until(shutdown),
        settings,
    )
    .for_each(|result| async move {
        match result {
            Ok(_) | Err(controller::Error::ReconcilerFailed(..)) => {}
            // A request for an object deleted since: nothing to do.
            Err(controller::Error::ObjectNotFound(_)) => {}
            Err(error) => tracing::warn!(controller = name, %error, "Controller queue error"),
        }
    })
    .await;
}

/// Whether an error comes from a write whose resourceVersion precondition failed (HTTP 409).
pub fn is_conflict(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>()
            && status.is_conflict()
        {
            return true;
        }
        current = error.source();
    }
    false
}

/// An error with its sources, `: `-separated, for a log line or a condition message.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some errors repeat their source in their own message; say it once.
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The requeue to ask for: the sooner of two waits, `None` meaning no timed requeue.
pub fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The action for an optional timed requeue.
pub fn action(requeue_after: Option<Duration>) -> Action {
    match requeue_after {
        Some(delay) => Action::requeue(delay),
        None => Action::await_change(),
    }
}

/// Whether `object` carries the `cluster.x-k8s.io/paused` annotation.
pub fn has_paused_annotation<K: Resource>(object: &K) -> bool {
    object
        .annotations()
        .contains_key(corral_api::annotations::PAUSED)
}
