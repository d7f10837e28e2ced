//! The MachineDeployment controller (upstream
//! `core/reconcilers/machinedeployment/machinedeployment_controller.go`).
//!
//! It owns the MachineDeployment's finalizer (`cluster.x-k8s.io/machinedeployment`), its
//! cluster-name label and Cluster owner reference, the defaults upstream's webhook gives it
//! (the cluster-name label in selector and template, the deployment-name label when the
//! selector is empty, `spec.replicas`), the Cluster owner reference of its templates, and its
//! MachineSets: it adopts orphans its selector matches, plans each step with
//! [`rollout_planner::compute_rollout_plan`] (RollingUpdate, OnDelete, `spec.rollout.after`,
//! and proportional scaling while `spec.paused`), and writes the plan (`sync.rs`): the current
//! MachineSet, named `<name>-<five random characters>` and labelled
//! `machine-template-hash: <hash of the template>-<the same characters>`, is created when
//! missing; every MachineSet gets the labels, annotations, replicas, revision and the template
//! fields that change in place; old MachineSets without Machines go once the rollout is
//! complete. Its status (`status.rs`) sums the MachineSets' counters and aggregates the
//! Machines' conditions. Deletion deletes every MachineSet, then drops the finalizer.
//!
//! # Rollback and revision history (Corral only)
//!
//! Upstream removed both in v1.11; their users asked for them back. Corral offers them through
//! two annotations on the MachineDeployment, so that the API stays upstream's:
//!
//! - [`ROLLBACK_TO_REVISION`] (`machinedeployment.clusters.x-k8s.io/rollback-to-revision`):
//!   `"previous"` (or `"0"`) or a revision number. The controller consumes it: the template of
//!   the MachineSet with that revision becomes the MachineDeployment's template (its spec; the
//!   template's labels and annotations stay), the annotation is removed, and an event says
//!   what happened (`RollbackDone`, or a Warning `RollbackFailed` naming why, such as a
//!   revision whose MachineSet was cleaned up). The rollout back is an ordinary rollout under
//!   the MachineDeployment's strategy; the MachineSet returned to gets the next revision.
//! - [`REVISION_HISTORY_LIMIT`] (`machinedeployment.clusters.x-k8s.io/revision-history-limit`):
//!   how many old MachineSets without Machines to keep once a rollout completes, the most
//!   recent revisions first. Without it Corral does as upstream and keeps none, so a rollback
//!   is only possible while the old MachineSet still exists (during a rollout).
//!
//! # Guarantees
//!
//! MachineSets are read from a watch cache. A reconcile never starts before the caches hold a
//! complete list, and the MachineSets a MachineDeployment created, changed or deleted are
//! waited for ([`crate::machine_set::expectations`]) before it plans again; so a restart
//! creates no second MachineSet and no step is taken on a stale view of its own writes.
//!
//! # Differences from upstream
//!
//! - No in-place updates (an alpha feature upstream) and no MachineSet preflight checks.
//! - Labels and annotations are propagated with merge patches: removed ones stay on existing
//!   MachineSets (upstream's server-side apply removes them).

pub mod int_or_percent;
mod rollback;
pub mod rollout_planner;
pub mod status;
mod sync;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use corral_api::annotations::{AUTOSCALER_MAX_SIZE, AUTOSCALER_MIN_SIZE};
use corral_api::labels::{CLUSTER_NAME, MACHINE_DEPLOYMENT_NAME};
use corral_api::{Cluster, GROUP, Machine, MachineDeployment, MachineSet, VERSION};
use futures::StreamExt;
use futures::stream::SelectAll;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::{Action, trigger_with};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::machine_set::expectations::{Expectations, Seen};
use crate::machine_set::in_sync::SelectedMemo;
use crate::machine_set::templates::{self, TemplateFailure};
use corral_runtime::changes::Fingerprints;
use corral_runtime::cluster_cache::ClusterKey;
use corral_runtime::coalesce::Window;
use corral_runtime::external::api_group_of;
use corral_runtime::naming::random_suffix;
use corral_runtime::patch::write_unobserved;
use corral_runtime::shared::SharedCache;
use corral_runtime::shared::trigger_own_coalesced_with;
use corral_runtime::{self as runtime, Context, Queue, Shutdown, error_chain, patch};

use rollback::RollbackOutcome;
use rollout_planner::{MachineSetState, RolloutInput, RolloutPlanError, RolloutStrategy};

/// On a MachineDeployment: roll back to a revision, `"previous"` or a number; the controller
/// removes it once followed. Corral only (see the module docs).
pub const ROLLBACK_TO_REVISION: &str = "machinedeployment.clusters.x-k8s.io/rollback-to-revision";

/// On a MachineDeployment: how many old MachineSets without Machines to keep for rollbacks;
/// none when absent, as upstream. Corral only (see the module docs).
pub const REVISION_HISTORY_LIMIT: &str =
    "machinedeployment.clusters.x-k8s.io/revision-history-limit";

/// A failed step of reconciling a MachineDeployment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the MachineDeployment's Cluster failed.
    #[error("cannot get Cluster {cluster}")]
    GetCluster {
        /// The Cluster.
        cluster: ClusterKey,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The MachineDeployment's Cluster does not exist.
    #[error("Cluster {cluster} does not exist")]
    FindCluster {
        /// The Cluster.
        cluster: ClusterKey,
    },
    /// Writing the MachineDeployment failed.
    #[error("cannot write MachineDeployment {machine_deployment}")]
    PatchMachineDeployment {
        /// The MachineDeployment, as `namespace/name`.
        machine_deployment: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// `spec.selector` is not a valid label selector.
    #[error("cannot parse spec.selector")]
    ParseSelector(#[source] kube::core::ParseExpressionError),
    /// A template could not be read or owned.
    #[error("cannot reconcile the template {kind} {name}")]
    ReconcileTemplate {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::external::Error,
    },
    /// A template does not exist.
    #[error("{kind} {name} does not exist")]
    FindTemplate {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// A MachineSet is needed, but its templates are missing.
    #[error("cannot create a MachineSet while its templates do not exist")]
    TemplatesMissing,
    /// The rollout could not be planned.
    #[error("cannot plan the rollout")]
    PlanRollout(#[source] RolloutPlanError),
    /// `spec.replicas` is negative.
    #[error("spec.replicas is {replicas}; it must not be negative")]
    NegativeReplicas {
        /// The value.
        replicas: i32,
    },
    /// maxSurge or maxUnavailable resolves to a negative number (the schema takes `-1` and
    /// `-10%`, as upstream's webhook does).
    #[error("spec.rollout.strategy.rollingUpdate.{field} is {value}; it must not be negative")]
    NegativeRolloutBound {
        /// `maxSurge` or `maxUnavailable`.
        field: &'static str,
        /// The value as written.
        value: String,
    },
    /// Adopting a MachineSet failed.
    #[error("cannot adopt MachineSet {machine_set}")]
    AdoptMachineSet {
        /// The MachineSet.
        machine_set: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Creating a MachineSet failed.
    #[error("cannot create MachineSet {machine_set}")]
    CreateMachineSet {
        /// The MachineSet.
        machine_set: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Writing a MachineSet failed.
    #[error("cannot patch MachineSet {machine_set}")]
    PatchMachineSet {
        /// The MachineSet.
        machine_set: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Deleting a MachineSet failed.
    #[error("cannot delete MachineSet {machine_set}")]
    DeleteMachineSet {
        /// The MachineSet.
        machine_set: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
}

/// The MachineDeployment controller's state, shared by its reconciles.
pub(crate) struct MachineDeploymentController {
    ctx: Arc<Context>,
    /// The MachineSets, read per Cluster (reads and expectations go through its index).
    machine_sets: SharedCache<MachineSet>,
    /// The Machines, read per Cluster.
    machines: SharedCache<Machine>,
    clusters: Store<Cluster>,
    /// The MachineDeployment cache and the three above filled (see [`runtime::ready`]).
    ready: runtime::ready::CachesReady,
    /// MachineSets each MachineDeployment created, changed or deleted that the cache does not
    /// show yet.
    expectations: Expectations<ObjectRef<MachineDeployment>>,
    /// Which Machines (by cache `Arc`) matched each MachineDeployment's selector.
    selected: SelectedMemo<MachineDeployment>,
}

/// What one reconcile works on. Fields are valid from the start unless their doc says when
/// they are set.
pub(crate) struct Scope {
    /// The MachineDeployment as read.
    pub before: Arc<MachineDeployment>,
    /// The MachineDeployment as it should be; written back at the end.
    pub machine_deployment: MachineDeployment,
    /// Its Cluster.
    pub cluster: Arc<Cluster>,
    /// Its MachineSets, once adopted.
    pub machine_sets: Vec<Arc<MachineSet>>,
    /// Its Machines: those its selector matches.
    pub machines: Vec<Arc<Machine>>,
    /// Why a MachineSet cannot be created now (missing templates, kinds not installed).
    pub blockers: Vec<String>,
    /// The current MachineSet, once a plan says which (`Some(None)`: none matches).
    pub current: Option<Option<String>>,
    /// A timed requeue, for waits that produce no event.
    pub requeue_after: Option<Duration>,
    /// Events to publish once the MachineDeployment is written: type, reason, note.
    pub events: Vec<(EventType, &'static str, String)>,
    /// The time of this reconcile.
    pub now: Time,
}

impl Scope {
    fn event(&mut self, type_: EventType, reason: &'static str, note: String) {
        self.events.push((type_, reason, note));
    }

    fn requeue(&mut self, after: Duration) {
        self.requeue_after = runtime::sooner(self.requeue_after, Some(after));
    }

    fn namespace(&self) -> String {
        self.machine_deployment.namespace().unwrap_or_default()
    }
}

fn controller_of(owners: &[OwnerReference]) -> Option<&OwnerReference> {
    owners.iter().find(|owner| owner.controller == Some(true))
}

/// What about a Cluster its MachineDeployments depend on: paused, and deletion.
fn cluster_signature(cluster: &Cluster) -> String {
    format!(
        "{:?}/{}/{}",
        cluster.spec.paused,
        runtime::has_paused_annotation(cluster),
        cluster.metadata.deletion_timestamp.is_some()
    )
}

/// Starts the MachineDeployment controller; returns at shutdown.
pub(crate) async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    let caches = ctx.caches();
    let machine_deployment_cache = caches.machine_deployments();
    let machine_deployment_store = machine_deployment_cache.store();
    let machine_deployments = machine_deployment_cache.applied();
    let machine_set_cache = caches.machine_sets();
    let machine_sets = machine_set_cache.touched();
    // Machines only feed the cache (conditions are aggregated from them); their changes reach
    // the MachineDeployment through its MachineSets' status.
    let machine_cache = caches.machines();
    let cluster_cache = caches.clusters();
    // Only what a MachineDeployment's reconcile reads of its Cluster wakes it.
    let clusters = cluster_cache.applied_changed(Arc::new(Fingerprints::new()), |cluster| {
        Some(cluster_signature(cluster))
    });

    let mut queue: SelectAll<Queue<MachineDeployment>> = SelectAll::new();
    // MachineSet status changes and the MachineDeployment's own status writes are held back
    // and joined (see `runtime::coalesce`).
    // A MachineDeployment in a Cluster of thousands of Machines is held back longer
    // (`Window::scaled`): each reconcile sums up its Machines.
    let (store, index) = (
        machine_deployment_store.clone(),
        machine_cache.index().clone(),
    );
    let window = Window::scaled(ctx.config().coalesce_window, move |key| {
        store.get(key).map_or(0, |md| {
            index.count(&ClusterKey::new(
                &md.namespace().unwrap_or_default(),
                &md.spec.cluster_name,
            ))
        })
    });
    let cache = machine_deployment_cache.clone();
    queue.push(trigger_own_coalesced_with(
        machine_deployments,
        trigger_with(machine_sets, move |machine_set: Arc<MachineSet>| {
            machine_set_to_machine_deployments(&cache, &machine_set)
        }),
        window,
    ));
    let cache = machine_deployment_cache.clone();
    queue.push(
        trigger_with(clusters, move |cluster: Arc<Cluster>| {
            let key = ClusterKey::new(
                &cluster.namespace().unwrap_or_default(),
                &cluster.name_any(),
            );
            cache
                .of_cluster(&key)
                .iter()
                .map(|md| ObjectRef::from_obj(md.as_ref()))
                .collect::<Vec<_>>()
        })
        .boxed(),
    );

    let ready = runtime::ready::CachesReady::new(vec![
        machine_deployment_cache.ready(),
        machine_set_cache.ready(),
        machine_cache.ready(),
        cluster_cache.ready(),
    ]);
    let controller = Arc::new(MachineDeploymentController {
        ctx: ctx.clone(),
        ready,
        machine_sets: machine_set_cache,
        machines: machine_cache,
        clusters: cluster_cache.store(),
        expectations: Expectations::default(),
        selected: SelectedMemo::default(),
    });
    runtime::run_controller(
        "machinedeployment",
        controller,
        ctx.config(),
        machine_deployment_store,
        queue.boxed(),
        shutdown,
        reconcile,
    )
    .await;
}

/// The MachineDeployments a MachineSet event concerns: its controller, or (an orphan) those
/// of its Cluster whose selector matches it (upstream `MachineSetToDeployments`).
fn machine_set_to_machine_deployments(
    machine_deployments: &SharedCache<MachineDeployment>,
    machine_set: &MachineSet,
) -> Vec<ObjectRef<MachineDeployment>> {
    let namespace = machine_set.namespace().unwrap_or_default();
    if let Some(owner) = controller_of(machine_set.owner_references()) {
        if owner.kind == "MachineDeployment" && api_group_of(&owner.api_version) == GROUP {
            return vec![ObjectRef::new(&owner.name).within(&namespace)];
        }
        return Vec::new();
    }
    machine_deployments
        .of_cluster(&ClusterKey::new(&namespace, &machine_set.spec.cluster_name))
        .iter()
        .filter(|md| {
            Selector::try_from(md.spec.selector.clone()).is_ok_and(|selector| {
                !selector.selects_all() && selector.matches(machine_set.labels())
            })
        })
        .map(|md| ObjectRef::from_obj(md.as_ref()))
        .collect()
}

impl MachineDeploymentController {
    async fn caches_ready(&self) {
        // Not `Store::wait_until_ready` in each reconcile: it wakes only one of the reconciles
        // waiting at once, and the others would wait forever.
        self.ready.wait().await;
    }

    async fn cluster(&self, key: &ClusterKey) -> Result<Option<Arc<Cluster>>, Error> {
        if let Some(cluster) = self
            .clusters
            .get(&ObjectRef::new(&key.name).within(&key.namespace))
        {
            return Ok(Some(cluster));
        }
        let api: Api<Cluster> = Api::namespaced(self.ctx.client().clone(), &key.namespace);
        api.get_opt(&key.name)
            .await
            .map(|cluster| cluster.map(Arc::new))
            .map_err(|source| Error::GetCluster {
                cluster: key.clone(),
                source,
            })
    }

    /// Whether the cache shows every MachineSet write of this MachineDeployment. Presence is
    /// read from the index, which the MachineSets are read through next (see
    /// [`corral_runtime::index::ClusterIndex`] on why not the store).
    fn unmet_expectations(
        &self,
        key: &ObjectRef<MachineDeployment>,
        cluster: &ClusterKey,
    ) -> Option<Duration> {
        let cached: HashMap<String, Arc<MachineSet>> = self
            .machine_sets
            .of_cluster(cluster)
            .into_iter()
            .map(|ms| (ms.name_any(), ms))
            .collect();
        self.expectations.unmet(key, |name| match cached.get(name) {
            None => Seen::Absent,
            Some(machine_set) => Seen::Present {
                resource_version: machine_set
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap_or_default(),
                deleting: machine_set.metadata.deletion_timestamp.is_some(),
            },
        })
    }
}

/// `spec.replicas` when unset, as upstream's webhook defaults it for a new object: the
/// autoscaler's min size when both of its annotations are set, else 1.
pub fn default_replicas(annotations: &std::collections::BTreeMap<String, String>) -> i32 {
    let parse = |key: &str| {
        annotations
            .get(key)
            .and_then(|v| v.trim().parse::<i32>().ok())
    };
    match (parse(AUTOSCALER_MIN_SIZE), parse(AUTOSCALER_MAX_SIZE)) {
        (Some(min), Some(_)) => min,
        _ => 1,
    }
}

/// What upstream's webhook and `reconcile` put on a MachineDeployment: the cluster-name label,
/// the Cluster as owner, `spec.replicas`, and selector and template labels (the deployment name
/// when the selector is empty, the cluster name always).
fn apply_defaults(machine_deployment: &mut MachineDeployment, cluster: &Cluster) {
    let cluster_name = machine_deployment.spec.cluster_name.clone();
    let name = machine_deployment.name_any();
    machine_deployment
        .labels_mut()
        .insert(CLUSTER_NAME.to_owned(), cluster_name.clone());
    if let Some(uid) = cluster.uid() {
        let owners = machine_deployment
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new);
        if !owners.iter().any(|owner| owner.uid == uid) {
            owners.push(OwnerReference {
                api_version: format!("{GROUP}/{VERSION}"),
                kind: "Cluster".into(),
                name: cluster.name_any(),
                uid,
                controller: None,
                block_owner_deletion: None,
            });
        }
    }
    if machine_deployment.spec.replicas.is_none() {
        machine_deployment.spec.replicas = Some(default_replicas(machine_deployment.annotations()));
    }
    let spec = &mut machine_deployment.spec;
    let empty = spec
        .selector
        .match_labels
        .as_ref()
        .is_none_or(|m| m.is_empty())
        && spec
            .selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    let match_labels = spec
        .selector
        .match_labels
        .get_or_insert_with(Default::default);
    let template_labels = &mut spec.template.metadata.labels;
    if empty {
        match_labels.insert(MACHINE_DEPLOYMENT_NAME.to_owned(), name.clone());
        template_labels.insert(MACHINE_DEPLOYMENT_NAME.to_owned(), name);
    }
    match_labels.insert(CLUSTER_NAME.to_owned(), cluster_name.clone());
    template_labels.insert(CLUSTER_NAME.to_owned(), cluster_name);
}

async fn reconcile(
    machine_deployment: Arc<MachineDeployment>,
    controller: Arc<MachineDeploymentController>,
) -> Result<Action, Error> {
    controller.caches_ready().await;
    let object_ref = ObjectRef::from_obj(machine_deployment.as_ref());
    let ctx = &controller.ctx;
    let namespace = machine_deployment.namespace().unwrap_or_default();
    let api: Api<MachineDeployment> = Api::namespaced(ctx.client().clone(), &namespace);
    let key = runtime::object_key(machine_deployment.as_ref());
    let write_error = |source| Error::PatchMachineDeployment {
        machine_deployment: key.clone(),
        source,
    };
    let finalizer = corral_api::finalizers::MACHINE_DEPLOYMENT;
    let has_finalizer = machine_deployment
        .finalizers()
        .iter()
        .any(|f| f == finalizer);
    let deleting = machine_deployment.metadata.deletion_timestamp.is_some();
    if deleting && !has_finalizer {
        controller.expectations.forget(&object_ref);
        controller.selected.forget(&object_ref);
        return Ok(Action::await_change());
    }

    let cluster_key = ClusterKey::new(&namespace, &machine_deployment.spec.cluster_name);
    let cluster = match controller.cluster(&cluster_key).await? {
        Some(cluster) => cluster,
        None if deleting => cluster_key.stand_in(None),
        None => {
            return Err(Error::FindCluster {
                cluster: cluster_key,
            });
        }
    };

    if !deleting && !has_finalizer {
        let mut with_finalizer = (*machine_deployment).clone();
        with_finalizer.finalizers_mut().push(finalizer.to_owned());
        write_unobserved(&api, &machine_deployment, &with_finalizer)
            .await
            .map_err(write_error)?;
        return Ok(Action::await_change());
    }

    let now = corral_runtime::conditions::now();
    let mut desired = (*machine_deployment).clone();
    if status::set_paused_condition(&mut desired, &cluster, &now) {
        tracing::debug!("Reconciliation is paused");
        write_unobserved(&api, &machine_deployment, &desired)
            .await
            .map_err(write_error)?;
        return Ok(Action::await_change());
    }
    if !deleting {
        apply_defaults(&mut desired, &cluster);
    }
    let selector =
        Selector::try_from(desired.spec.selector.clone()).map_err(Error::ParseSelector)?;

    let mut scope = Scope {
        machine_deployment: desired,
        before: machine_deployment.clone(),
        cluster,
        machine_sets: Vec::new(),
        machines: Vec::new(),
        blockers: Vec::new(),
        current: None,
        requeue_after: None,
        events: Vec::new(),
        now,
    };
    // Expectations are checked before the MachineSets are read from the cache, so that what
    // is read shows every write they waited for (see the MachineSet controller).
    if let Some(wait) = controller.unmet_expectations(&object_ref, &cluster_key) {
        tracing::debug!(
            ?wait,
            "Waiting for the cache to show the MachineSets written"
        );
        return Ok(Action::requeue(wait));
    }
    let mut result = reconcile_templates(&controller, &mut scope).await;
    adopt_machine_sets(&controller, &mut scope, &selector).await?;
    scope.machines = machines_of(&controller, &scope, &selector);

    let mut keep = |step: Result<(), Error>| {
        if result.is_ok() {
            result = step;
        }
    };
    if deleting {
        keep(reconcile_delete(&controller, &mut scope).await);
    } else {
        let machine_sets: Vec<Arc<MachineSet>> = scope.machine_sets.clone();
        let refs: Vec<&MachineSet> = machine_sets.iter().map(AsRef::as_ref).collect();
        if let Some(outcome) = rollback::apply_rollback(&mut scope.machine_deployment, &refs) {
            record_rollback(&mut scope, outcome);
            // The new template is planned by the reconcile the write brings, with a new
            // generation.
            write_unobserved(&api, &machine_deployment, &scope.machine_deployment)
                .await
                .map_err(write_error)?;
            publish_events(ctx, &machine_deployment, &mut scope).await;
            return Ok(Action::await_change());
        }
        keep(reconcile_rollout(&controller, &mut scope).await);
    }

    update_status(&mut scope);
    if result.is_ok() {
        scope
            .machine_deployment
            .status
            .get_or_insert_with(Default::default)
            .observed_generation = scope.machine_deployment.metadata.generation;
    }
    write_unobserved(&api, &machine_deployment, &scope.machine_deployment)
        .await
        .map_err(write_error)?;
    publish_events(ctx, &machine_deployment, &mut scope).await;
    result?;
    Ok(runtime::action(scope.requeue_after))
}

async fn publish_events(ctx: &Context, machine_deployment: &MachineDeployment, scope: &mut Scope) {
    for (type_, reason, note) in std::mem::take(&mut scope.events) {
        ctx.publish_event(machine_deployment, type_, reason, "Reconcile", note)
            .await;
    }
}

fn record_rollback(scope: &mut Scope, outcome: RollbackOutcome) {
    match outcome {
        RollbackOutcome::RolledBack {
            revision,
            machine_set,
        } => {
            tracing::info!(revision, machine_set = %machine_set, "Rolling back to revision {revision}");
            scope.event(
                EventType::Normal,
                "RollbackDone",
                format!(
                    "Rolled back to revision {revision}: the template of MachineSet {machine_set}"
                ),
            );
        }
        RollbackOutcome::AlreadyCurrent { revision } => scope.event(
            EventType::Normal,
            "RollbackDone",
            format!("Revision {revision} is already the current one; nothing to roll back"),
        ),
        RollbackOutcome::Refused(message) => {
            tracing::warn!(%message, "Rollback refused");
            scope.event(EventType::Warning, "RollbackFailed", message);
        }
    }
}

/// The templates must exist, and get the Cluster as an owner (upstream
/// `getTemplatesAndSetOwner`); what is missing goes to the blockers of ScalingUp.
async fn reconcile_templates(
    controller: &MachineDeploymentController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let (blockers, failure) = templates::check_templates(
        controller.ctx.external(),
        &scope.machine_deployment.spec.template.spec,
        &scope.namespace(),
        &scope.cluster,
    )
    .await;
    scope.blockers.extend(blockers);
    match failure {
        None => Ok(()),
        Some((reference, TemplateFailure::Missing)) => Err(Error::FindTemplate {
            kind: reference.kind,
            name: reference.name,
        }),
        Some((reference, TemplateFailure::Error(source))) => Err(Error::ReconcileTemplate {
            kind: reference.kind,
            name: reference.name,
            source,
        }),
    }
}

/// The MachineSets of the MachineDeployment (upstream `getAndAdoptMachineSetsForDeployment`):
/// those it controls, and orphans its selector matches, which it adopts.
async fn adopt_machine_sets(
    controller: &MachineDeploymentController,
    scope: &mut Scope,
    selector: &Selector,
) -> Result<(), Error> {
    let namespace = scope.namespace();
    let uid = scope.before.uid();
    let api: Api<MachineSet> = Api::namespaced(controller.ctx.client().clone(), &namespace);
    // A MachineSet of another Cluster is never this MachineDeployment's (upstream's webhook
    // keeps the cluster-name label of both selectors equal to `spec.clusterName`).
    let cluster = ClusterKey::new(&namespace, &scope.machine_deployment.spec.cluster_name);
    let candidates = controller.machine_sets.of_cluster(&cluster);
    let mut machine_sets = Vec::new();
    for machine_set in candidates {
        let controlled = controller_of(machine_set.owner_references())
            .is_some_and(|owner| Some(&owner.uid) == uid.as_ref());
        if controlled {
            machine_sets.push(machine_set);
            continue;
        }
        let matches = !selector.selects_all() && selector.matches(machine_set.labels());
        if !matches || controller_of(machine_set.owner_references()).is_some() {
            continue;
        }
        let name = machine_set.name_any();
        let mut adopted = (*machine_set).clone();
        adopted
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(OwnerReference {
                api_version: format!("{GROUP}/{VERSION}"),
                kind: "MachineDeployment".into(),
                name: scope.before.name_any(),
                uid: uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            });
        tracing::info!(machine_set = %name, "Adopting MachineSet {name}");
        match patch::patch_if_changed(&api, &machine_set, &adopted, patch::Part::Main).await {
            Ok(written) => {
                scope.event(
                    EventType::Normal,
                    "SuccessfulAdopt",
                    format!("Adopted MachineSet {name:?}"),
                );
                controller.expectations.updated(
                    &ObjectRef::from_obj(scope.before.as_ref()),
                    &name,
                    &machine_set.resource_version().unwrap_or_default(),
                );
                machine_sets.push(Arc::new(written.unwrap_or(adopted)));
            }
            Err(source) => {
                scope.event(
                    EventType::Warning,
                    "FailedAdopt",
                    format!(
                        "Failed to adopt MachineSet {name:?}: {}",
                        error_chain(&source)
                    ),
                );
                return Err(Error::AdoptMachineSet {
                    machine_set: name,
                    source,
                });
            }
        }
    }
    machine_sets.sort_by_key(|ms| ms.name_any());
    scope.machine_sets = machine_sets;
    Ok(())
}

/// The Machines of the MachineDeployment's Cluster its selector matches, sorted by name.
fn machines_of(
    controller: &MachineDeploymentController,
    scope: &Scope,
    selector: &Selector,
) -> Vec<Arc<Machine>> {
    let cluster = ClusterKey::new(
        &scope.namespace(),
        &scope.machine_deployment.spec.cluster_name,
    );
    if selector.selects_all() {
        return Vec::new();
    }
    let mut machines = controller.machines.of_cluster(&cluster);
    controller.selected.retain_matching(
        ObjectRef::from_obj(scope.before.as_ref()),
        selector,
        &mut machines,
    );
    machines
}

/// Deletes every MachineSet, then lets the MachineDeployment go (upstream `reconcileDelete`).
async fn reconcile_delete(
    controller: &MachineDeploymentController,
    scope: &mut Scope,
) -> Result<(), Error> {
    if scope.machine_sets.is_empty() {
        controller
            .expectations
            .forget(&ObjectRef::from_obj(scope.before.as_ref()));
        scope
            .machine_deployment
            .finalizers_mut()
            .retain(|f| f != corral_api::finalizers::MACHINE_DEPLOYMENT);
        return Ok(());
    }
    let namespace = scope.namespace();
    let api: Api<MachineSet> = Api::namespaced(controller.ctx.client().clone(), &namespace);
    for machine_set in scope.machine_sets.clone() {
        if machine_set.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = machine_set.name_any();
        tracing::info!(machine_set = %name, "Deleting MachineSet {namespace}/{name} (MachineDeployment deleting)");
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: machine_set.uid(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => controller
                .expectations
                .deleted(&ObjectRef::from_obj(scope.before.as_ref()), &name),
            Err(kube::Error::Api(status)) if status.is_not_found() => {}
            Err(source) => {
                return Err(Error::DeleteMachineSet {
                    machine_set: name,
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Plans and writes one step of the rollout.
async fn reconcile_rollout(
    controller: &MachineDeploymentController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let machine_deployment = &scope.machine_deployment;
    let replicas = status::desired_replicas(machine_deployment);
    if replicas < 0 {
        scope.blockers.push(format!(
            "spec.replicas is {replicas}; it must not be negative"
        ));
        return Err(Error::NegativeReplicas { replicas });
    }
    let history_limit = match rollback::revision_history_limit(machine_deployment) {
        Ok(limit) => limit,
        Err(message) => {
            tracing::warn!(%message, "Ignoring the revision history limit");
            0
        }
    };
    let strategy = RolloutStrategy::from_spec(&machine_deployment.spec.rollout);
    if let RolloutStrategy::RollingUpdate {
        max_surge,
        max_unavailable,
    } = &strategy
    {
        for (field, value) in [("maxSurge", max_surge), ("maxUnavailable", max_unavailable)] {
            // A bound that does not resolve at all is the planner's error.
            if int_or_percent::scaled_value(value, replicas.max(1), false).is_ok_and(|v| v < 0) {
                let error = Error::NegativeRolloutBound {
                    field,
                    value: int_or_percent::display(value),
                };
                scope.blockers.push(error.to_string());
                return Err(error);
            }
        }
    }
    let states: Vec<MachineSetState> = scope
        .machine_sets
        .iter()
        .map(|ms| MachineSetState::from_machine_set(ms, &machine_deployment.spec.template))
        .collect();
    let now: Timestamp = scope.now.0;
    let rollout_after = machine_deployment.spec.rollout.after.as_ref().map(|t| t.0);
    let mut base = format!("{}-", machine_deployment.name_any());
    if base.len() > 58 {
        let mut cut = 58;
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base.truncate(cut);
    }
    let new_machine_set_name = format!("{base}{}", random_suffix());
    let generation_observed = machine_deployment
        .status
        .as_ref()
        .and_then(|status| status.observed_generation)
        .unwrap_or(0)
        >= machine_deployment.metadata.generation.unwrap_or(0);
    let input = RolloutInput {
        replicas,
        strategy: &strategy,
        paused: machine_deployment.spec.paused.unwrap_or(false),
        rollout_after,
        now,
        machine_sets: &states,
        new_machine_set_name: &new_machine_set_name,
        revision_history_limit: history_limit,
        generation_observed,
    };
    let plan = rollout_planner::compute_rollout_plan(&input).map_err(Error::PlanRollout)?;
    scope.current = Some(plan.current.clone());
    if let Some(after) = rollout_after.filter(|after| *after > now) {
        // Nothing announces the time passing.
        let wait: Duration = (after - now).try_into().unwrap_or_default();
        scope.requeue(wait + Duration::from_secs(1));
    }
    sync::apply_plan(controller, scope, &plan).await
}

fn update_status(scope: &mut Scope) {
    let now = scope.now.clone();
    let machine_sets: Vec<Arc<MachineSet>> = scope.machine_sets.clone();
    let machine_sets: Vec<&MachineSet> = machine_sets.iter().map(AsRef::as_ref).collect();
    let machines: Vec<Arc<Machine>> = scope.machines.clone();
    let machines: Vec<&Machine> = machines.iter().map(AsRef::as_ref).collect();
    let strategy = RolloutStrategy::from_spec(&scope.machine_deployment.spec.rollout);
    let machine_deployment = &mut scope.machine_deployment;
    match crate::machine_set::status::selector_string(&machine_deployment.spec.selector) {
        Ok(selector) => {
            machine_deployment
                .status
                .get_or_insert_with(Default::default)
                .selector = Some(selector).filter(|s| !s.is_empty())
        }
        Err(error) => tracing::warn!(%error, "Cannot render spec.selector for status.selector"),
    }
    let current = scope.current.as_ref().map(|current| current.as_deref());
    status::set_replicas(machine_deployment, &machine_sets, current);
    status::set_phase(machine_deployment, &machine_sets);
    status::set_available_condition(machine_deployment, &strategy, &now);
    status::set_rolling_out_condition(machine_deployment, &machines, &now);
    status::set_scaling_up_condition(machine_deployment, &machine_sets, &scope.blockers, &now);
    status::set_scaling_down_condition(machine_deployment, &machine_sets, &machines, &now);
    status::set_machines_ready_condition(machine_deployment, &machines, &now);
    if let Some(after) =
        status::set_machines_up_to_date_condition(machine_deployment, &machines, &now)
    {
        scope.requeue_after = runtime::sooner(scope.requeue_after, Some(after));
    }
    status::set_remediating_condition(machine_deployment, &machines, &now);
    status::set_deleting_condition(machine_deployment, &machine_sets, &machines, &now);
}
