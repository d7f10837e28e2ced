//! The Cluster controller (upstream `core/reconcilers/cluster`).
//!
//! It owns the Cluster's finalizer (`cluster.cluster.x-k8s.io`), its `Paused` condition, the
//! ownership and reading of its infrastructure cluster and control plane (`phases.rs`), its
//! status (`status.rs`: phase, `status.initialization`, replica counters, v1beta2 conditions)
//! and its deletion in order (`delete.rs`). It does not generate the `<cluster>-kubeconfig`
//! Secret for Clusters without a control plane provider, as upstream does from the cluster CA.
//!
//! It is fed by the Clusters, by their Machines, MachineSets and MachineDeployments (by
//! `spec.clusterName`), by their provider objects (watches started as references resolve), and
//! by the cluster cache when a workload cluster's connection comes up or goes down.

mod delete;
mod phases;
pub mod status;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use corral_api::{Cluster, Machine, MachineDeployment, MachineSet};
use futures::stream::SelectAll;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::Api;
use kube::runtime::controller::{Action, ReconcileRequest, trigger_with};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use corral_runtime::cluster_cache::ClusterKey;
use corral_runtime::coalesce::Window;
use corral_runtime::conditions;
use corral_runtime::external::ExternalObject;
use corral_runtime::index;
use corral_runtime::patch;
use corral_runtime::shared::{SharedCache, trigger_own_coalesced_with};
use corral_runtime::triggers::{ExternalWatches, Triggers};
use corral_runtime::{self as runtime, Context, Queue, Shutdown};

use status::{Descendants, Observed};

/// A failed step of reconciling a Cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing the Cluster failed.
    #[error("cannot write Cluster {cluster}")]
    PatchCluster {
        /// The Cluster.
        cluster: ClusterKey,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The infrastructure cluster could not be read or written.
    #[error("cannot reconcile the infrastructure {kind} {name}")]
    ReconcileInfrastructure {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::external::Error,
    },
    /// The infrastructure cluster does not follow the contract.
    #[error("cannot read the infrastructure {kind} {name}")]
    ReadInfrastructure {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What is wrong.
        #[source]
        source: corral_api::contract::ContractError,
    },
    /// The infrastructure cluster went missing after it was provisioned.
    #[error("the infrastructure {kind} {name} has been deleted after being provisioned")]
    FindInfrastructure {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// The control plane could not be read or written.
    #[error("cannot reconcile the control plane {kind} {name}")]
    ReconcileControlPlane {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::external::Error,
    },
    /// The control plane does not follow the contract.
    #[error("cannot read the control plane {kind} {name}")]
    ReadControlPlane {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What is wrong.
        #[source]
        source: corral_api::contract::ContractError,
    },
    /// The control plane went missing after it was initialized.
    #[error("the control plane {kind} {name} has been deleted after being initialized")]
    FindControlPlane {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// Deleting a MachineDeployment, MachineSet or Machine of the Cluster failed.
    #[error("cannot delete {kind} {name}")]
    DeleteDescendant {
        /// Its kind.
        kind: &'static str,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Deleting the control plane failed.
    #[error("cannot delete the control plane {kind} {name}")]
    DeleteControlPlane {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::external::Error,
    },
    /// Deleting the infrastructure cluster failed.
    #[error("cannot delete the infrastructure {kind} {name}")]
    DeleteInfrastructure {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::external::Error,
    },
}

/// The Cluster controller's state, shared by its reconciles.
pub(crate) struct ClusterController {
    ctx: Arc<Context>,
    external: ExternalWatches<Cluster>,
    machines: SharedCache<Machine>,
    machine_deployments: SharedCache<MachineDeployment>,
    machine_sets: SharedCache<MachineSet>,
    /// The caches above filled (see [`runtime::ready`]).
    ready: runtime::ready::CachesReady,
}

/// What one reconcile works on. Fields are valid from the start unless their doc says when
/// they are set.
pub(crate) struct Scope {
    /// The Cluster as read.
    pub before: Arc<Cluster>,
    /// The Cluster as it should be; written back at the end.
    pub cluster: Cluster,
    /// Its namespace and name.
    pub key: ClusterKey,
    /// Its descendants.
    pub descendants: Descendants,
    /// The infrastructure cluster, once `reconcile_infrastructure` has read it.
    pub infra_cluster: Option<ExternalObject>,
    /// What `reconcile_infrastructure` observed; `None` without an infrastructureRef.
    pub infra_observed: Option<Observed>,
    /// The control plane, once `reconcile_control_plane` has read it.
    pub control_plane: Option<ExternalObject>,
    /// What `reconcile_control_plane` observed; `None` without a controlPlaneRef.
    pub control_plane_observed: Option<Observed>,
    /// Whether the control plane reports itself initialized; set by `reconcile_control_plane`.
    pub control_plane_initialized: bool,
    /// What deletion waits on, set by `reconcile_delete`: reason and message.
    pub deleting: Option<(String, String)>,
    /// A timed requeue, for waits that produce no event.
    pub requeue_after: Option<Duration>,
    /// Events to publish once the Cluster is written: type, reason, note.
    pub events: Vec<(EventType, &'static str, String)>,
}

impl Scope {
    fn event(&mut self, type_: EventType, reason: &'static str, note: String) {
        self.events.push((type_, reason, note));
    }

    /// The owner reference to the Cluster.
    fn owner_reference(&self, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: format!("{}/{}", corral_api::GROUP, corral_api::VERSION),
            kind: "Cluster".into(),
            name: self.key.name.clone(),
            uid: self.before.uid().unwrap_or_default(),
            controller: Some(controller),
            block_owner_deletion: controller.then_some(true),
        }
    }
}

/// Starts the Cluster controller; returns at shutdown.
pub(crate) async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    let caches = ctx.caches();
    let cluster_cache = caches.clusters();
    let cluster_store = cluster_cache.store();
    let clusters = cluster_cache.applied();
    let machine_cache = caches.machines();
    let machines = machine_cache.touched();
    let machine_deployment_cache = caches.machine_deployments();
    let machine_deployments = machine_deployment_cache.touched();
    let machine_set_cache = caches.machine_sets();
    let machine_sets = machine_set_cache.touched();

    let (triggers, requests) = Triggers::new();
    let connections = ctx.cluster_cache().subscribe_connections();

    let mut queue: SelectAll<Queue<Cluster>> = SelectAll::new();
    // A Cluster's own status writes come back as watch events: held back with its
    // descendants' changes. Any other change of the Cluster is reconciled at once.
    // A Cluster of thousands of Machines is held back longer (`Window::scaled`): each
    // reconcile sums up all its Machines.
    let index = machine_cache.index().clone();
    let window = Window::scaled(
        ctx.config().coalesce_window,
        move |key: &ObjectRef<Cluster>| {
            index.count(&ClusterKey::new(
                key.namespace.as_deref().unwrap_or_default(),
                &key.name,
            ))
        },
    );
    // A deleting Cluster waits for its descendants to go: their deletions wake it.
    let deleting = {
        let clusters = cluster_store.clone();
        move |cluster: &ObjectRef<Cluster>| {
            clusters
                .get(cluster)
                .is_none_or(|cluster| cluster.metadata.deletion_timestamp.is_some())
        }
    };
    let machine_wakes = deleting.clone();
    // One window for the Cluster's own writes and all its descendants' changes: a burst of
    // both becomes one reconcile.
    let descendants = futures::stream::select_all([
        trigger_with(machines, move |machine: Arc<Machine>| {
            let cluster = cluster_ref(machine.as_ref(), &machine.spec.cluster_name);
            wakes_cluster(machine.as_ref(), "MachineSet", || machine_wakes(&cluster))
                .then_some(cluster)
        })
        .boxed(),
        trigger_with(machine_deployments, |md: Arc<MachineDeployment>| {
            Some(cluster_ref(md.as_ref(), &md.spec.cluster_name))
        })
        .boxed(),
        trigger_with(machine_sets, move |ms: Arc<MachineSet>| {
            let cluster = cluster_ref(ms.as_ref(), &ms.spec.cluster_name);
            wakes_cluster(ms.as_ref(), "MachineDeployment", || deleting(&cluster))
                .then_some(cluster)
        })
        .boxed(),
    ]);
    queue.push(trigger_own_coalesced_with(clusters, descendants, window));
    queue.push(requests.map(|r| Ok(ReconcileRequest::from(r))).boxed());
    queue.push(
        connections
            .map(|key| {
                Ok(ReconcileRequest::from(
                    ObjectRef::new(&key.name).within(&key.namespace),
                ))
            })
            .boxed(),
    );

    let ready = runtime::ready::CachesReady::new(vec![
        machine_cache.ready(),
        machine_deployment_cache.ready(),
        machine_set_cache.ready(),
    ]);
    let controller = Arc::new(ClusterController {
        external: ExternalWatches::new(ctx.external().clone(), triggers),
        ready,
        machines: machine_cache,
        machine_deployments: machine_deployment_cache,
        machine_sets: machine_set_cache,
        ctx: ctx.clone(),
    });
    runtime::run_controller(
        "cluster",
        controller,
        ctx.config(),
        cluster_store,
        queue.map_err(|e| e).boxed(),
        shutdown,
        reconcile,
    )
    .await;
}

/// Whether a change of a descendant wakes its Cluster directly: unless a `summarized_by`
/// (MachineSet, MachineDeployment) controls it, and it is not the deletion of a descendant of
/// a Cluster being deleted (`cluster_deleting`). Control plane Machines always do (their
/// provider's status need not sum them up). The replaced Machines of a rollout are deleted
/// while their Cluster is not: their MachineSet's status counts them.
fn wakes_cluster<K: Resource>(
    object: &K,
    summarized_by: &str,
    cluster_deleting: impl FnOnce() -> bool,
) -> bool {
    let meta = object.meta();
    let summarized = meta.owner_references.iter().flatten().any(|owner| {
        owner.controller == Some(true)
            && owner.kind == summarized_by
            && owner.api_version.starts_with(corral_api::GROUP)
    });
    let control_plane = meta
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(corral_api::labels::CONTROL_PLANE));
    !summarized || control_plane || (meta.deletion_timestamp.is_some() && cluster_deleting())
}

fn cluster_ref<K: Resource>(object: &K, cluster_name: &str) -> ObjectRef<Cluster> {
    ObjectRef::new(cluster_name).within(object.meta().namespace.as_deref().unwrap_or_default())
}

impl ClusterController {
    /// The Cluster's descendants from the caches, matched by `spec.clusterName` in its
    /// namespace (upstream lists them by the cluster-name label, which its webhooks set from
    /// `spec.clusterName`).
    fn descendants(&self, key: &ClusterKey) -> Descendants {
        // Control plane Machines, and workers: neither control plane nor a MachinePool's; the
        // index lists them sorted by name.
        let (control_plane_machines, worker_machines) =
            self.machines
                .index()
                .split(key, index::key::CONTROL_PLANE, index::key::MACHINE_POOL);
        Descendants {
            machine_deployments: self.machine_deployments.of_cluster(key),
            machine_sets: self.machine_sets.of_cluster(key),
            control_plane_machines,
            worker_machines,
        }
    }
}

async fn reconcile(
    cluster: Arc<Cluster>,
    controller: Arc<ClusterController>,
) -> Result<Action, Error> {
    let ctx = &controller.ctx;
    let namespace = cluster.namespace().unwrap_or_default();
    let key = ClusterKey::new(&namespace, &cluster.name_any());
    let api: Api<Cluster> = Api::namespaced(ctx.client().clone(), &namespace);
    let finalizer = corral_api::finalizers::CLUSTER;

    // The finalizer goes on first, so that a deletion never races the first reconcile.
    let has_finalizer = cluster.finalizers().iter().any(|f| f == finalizer);
    if cluster.metadata.deletion_timestamp.is_none() && !has_finalizer {
        let mut with_finalizer = (*cluster).clone();
        with_finalizer.finalizers_mut().push(finalizer.to_owned());
        write(&api, &key, &cluster, &with_finalizer).await?;
        return Ok(Action::await_change());
    }
    if cluster.metadata.deletion_timestamp.is_some() && !has_finalizer {
        return Ok(Action::await_change());
    }

    // Descendants come from caches: deciding (above all, deleting) on a cache not filled yet
    // would act on part of the picture.
    // Not `Store::wait_until_ready` here: it wakes only one of the reconciles waiting at once.
    controller.ready.wait().await;
    let now = conditions::now();
    let mut scope = Scope {
        cluster: (*cluster).clone(),
        descendants: controller.descendants(&key),
        before: cluster.clone(),
        key: key.clone(),
        infra_cluster: None,
        infra_observed: None,
        control_plane: None,
        control_plane_observed: None,
        control_plane_initialized: false,
        deleting: None,
        requeue_after: None,
        events: Vec::new(),
    };

    if status::set_paused_condition(&mut scope.cluster, &now) {
        tracing::debug!("Reconciliation is paused");
        write(&api, &key, &cluster, &scope.cluster).await?;
        return Ok(Action::await_change());
    }

    let result = if scope.cluster.metadata.deletion_timestamp.is_some() {
        delete::reconcile_delete(&controller, &mut scope).await
    } else {
        reconcile_normal(&controller, &mut scope).await
    };

    update_status(&controller, &mut scope, &now);
    if result.is_ok() {
        scope
            .cluster
            .status
            .get_or_insert_with(Default::default)
            .observed_generation = scope.cluster.metadata.generation;
    }
    write(&api, &key, &cluster, &scope.cluster).await?;
    for (type_, reason, note) in std::mem::take(&mut scope.events) {
        ctx.publish_event(cluster.as_ref(), type_, reason, "Reconcile", note)
            .await;
    }
    // A failure reaches people as a condition and an Event, not only a log line; retries of
    // the same failure add to one Event's count.
    if let Err(error) = &result
        && !runtime::is_conflict(error)
    {
        let note = runtime::error_chain(error);
        ctx.publish_event(
            cluster.as_ref(),
            EventType::Warning,
            "ReconcileError",
            "Reconcile",
            note,
        )
        .await;
    }
    result?;
    Ok(runtime::action(scope.requeue_after))
}

async fn reconcile_normal(controller: &ClusterController, scope: &mut Scope) -> Result<(), Error> {
    let infrastructure = phases::reconcile_infrastructure(controller, scope).await;
    let control_plane = phases::reconcile_control_plane(controller, scope).await;
    phases::reconcile_control_plane_initialized(scope);
    if scope
        .cluster
        .status
        .as_ref()
        .and_then(|s| s.initialization.infrastructure_provisioned)
        == Some(true)
    {
        controller.ctx.cluster_cache().track_cluster(&scope.key);
    }
    infrastructure.and(control_plane)
}

/// Everything in the status that follows from what the reconcile observed.
fn update_status(
    controller: &ClusterController,
    scope: &mut Scope,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) {
    let config = controller.ctx.config();
    let cluster = &mut scope.cluster;
    if status::set_phase(cluster) {
        let phase = cluster
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .map(|p| p.as_str())
            .unwrap_or_default();
        let note = format!("Cluster {} is {phase}", scope.key.name);
        scope
            .events
            .push((EventType::Normal, phase_reason(phase), note));
    }
    let from_control_plane = scope
        .control_plane
        .as_ref()
        .map(phases::control_plane_replicas);
    status::set_control_plane_replicas(
        cluster,
        from_control_plane,
        &scope.descendants.control_plane_machines,
    );
    status::set_workers_replicas(cluster, &scope.descendants);
    let health = controller
        .ctx
        .cluster_cache()
        .health_checking_state(&scope.key);
    let probe_requeue = status::set_remote_connection_probe_condition(
        cluster,
        &health,
        config.remote_connection_grace_period,
        now,
    );
    status::set_infrastructure_ready_condition(cluster, scope.infra_observed.as_ref(), now);
    status::set_control_plane_available_condition(
        cluster,
        scope.control_plane_observed.as_ref(),
        now,
    );
    status::set_control_plane_initialized_condition(
        cluster,
        scope.control_plane_observed.as_ref(),
        scope.control_plane_initialized,
        &scope.descendants.control_plane_machines,
        now,
    );
    status::set_workers_available_condition(cluster, &scope.descendants.machine_deployments, now);
    let machines_requeue = status::set_machines_conditions(cluster, &scope.descendants, now);
    let cp_conditions = scope
        .control_plane
        .as_ref()
        .map(|cp| (cp.kind.resource.kind.clone(), cp.name(), cp.conditions()));
    status::set_rollout_and_scaling_conditions(
        cluster,
        cp_conditions
            .as_ref()
            .map(|(kind, name, conditions)| (kind.as_str(), name.as_str(), conditions.as_slice())),
        &scope.descendants,
        now,
    );
    status::set_remediating_condition(cluster, &scope.descendants, now);
    status::set_deleting_condition(
        cluster,
        scope
            .deleting
            .as_ref()
            .map(|(reason, message)| (reason.as_str(), message.as_str())),
        now,
    );
    status::set_available_condition(cluster, now);
    scope.requeue_after = runtime::sooner(
        scope.requeue_after,
        runtime::sooner(probe_requeue, machines_requeue),
    );
}

fn phase_reason(phase: &str) -> &'static str {
    match phase {
        "Pending" => "Pending",
        "Provisioning" => "Provisioning",
        "Provisioned" => "Provisioned",
        "Deleting" => "Deleting",
        "Failed" => "Failed",
        _ => "Unknown",
    }
}

/// Writes the Cluster's metadata and spec, then its status, each only when changed.
async fn write(
    api: &Api<Cluster>,
    key: &ClusterKey,
    before: &Cluster,
    after: &Cluster,
) -> Result<(), Error> {
    patch::write(api, before, after)
        .await
        .map(drop)
        .map_err(|source| Error::PatchCluster {
            cluster: key.clone(),
            source,
        })
}
