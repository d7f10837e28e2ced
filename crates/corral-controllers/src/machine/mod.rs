//! The Machine controller (upstream `core/reconcilers/machine`).
//!
//! It owns the Machine's finalizer (`machine.cluster.x-k8s.io`), its `Paused` condition, its
//! cluster-name label and adoption by its Cluster, its bootstrap config and infrastructure
//! machine (`phases.rs`: ownership, `dataSecretName`, `providerID`, addresses, failure domain),
//! its Node in the workload cluster (`node_ref.rs`: found by provider ID through the cluster
//! cache, `status.nodeRef`, `status.nodeInfo`, managed labels and annotations on the Node), its
//! status (`status.rs`) and its deletion (`delete.rs`: hooks, drain in `drain.rs`,
//! infrastructure, bootstrap, Node, finalizer last).
//!
//! It also sets the UpToDate condition of a MachineDeployment's Machines (`up_to_date.rs`).
//!
//! It is fed by the Machines, by changes of their Clusters that matter to them (paused,
//! infrastructure provisioned, control plane initialized, deletion), by changes of their
//! MachineSets' and MachineDeployments' templates, by their provider objects, and by the
//! cluster cache (Node changes, connection changes).

mod delete;
mod drain;
mod node_ref;
mod phases;
pub mod status;
mod up_to_date;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use corral_api::{Cluster, Machine, MachineDeployment, MachineSet};
use futures::StreamExt;
use futures::stream::SelectAll;
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, ReconcileRequest, trigger_with};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};

use corral_runtime::changes::Fingerprints;
use corral_runtime::cluster_cache::{ClusterKey, NodeEvent};
use corral_runtime::conditions;
use corral_runtime::external::{ExternalObject, Observed};
use corral_runtime::shared::SharedCache;
use corral_runtime::shared::trigger_own;
use corral_runtime::triggers::{ExternalWatches, Triggers};
use corral_runtime::{self as runtime, Context, Queue, Shutdown, patch};

use status::NodeReadError;

/// A failed step of reconciling a Machine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the Machine's Cluster failed.
    #[error("cannot get Cluster {cluster}")]
    GetCluster {
        /// The Cluster.
        cluster: ClusterKey,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The Machine's Cluster does not exist.
    #[error("Cluster {cluster} does not exist")]
    FindCluster {
        /// The Cluster.
        cluster: ClusterKey,
    },
    /// Writing the Machine failed.
    #[error("cannot write Machine {machine}")]
    PatchMachine {
        /// The Machine, as `namespace/name`.
        machine: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The bootstrap config could not be read or written.
    #[error("cannot reconcile the bootstrap {kind} {name}")]
    ReconcileBootstrap {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::external::Error,
    },
    /// The bootstrap config does not follow the contract.
    #[error("cannot read the bootstrap {kind} {name}")]
    ReadBootstrap {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What is wrong.
        #[source]
        source: corral_api::contract::ContractError,
    },
    /// The bootstrap config says its Secret exists but does not name it.
    #[error(
        "the bootstrap {kind} {name} reports its data Secret created but status.dataSecretName is empty"
    )]
    ReadDataSecretName {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// The infrastructure machine could not be read or written.
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
    /// The infrastructure machine does not follow the contract.
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
    /// The infrastructure machine went missing after it was provisioned.
    #[error("the infrastructure {kind} {name} has been deleted after being provisioned")]
    FindInfrastructure {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// The Node could not be looked up.
    #[error("cannot look up the Node of the Machine")]
    GetNode(#[source] corral_runtime::cluster_cache::Error),
    /// The Node was deleted while the Machine exists.
    #[error("no Node has spec.providerID {provider_id} any more (it was {node})")]
    FindNode {
        /// The provider ID.
        provider_id: String,
        /// The Node it was.
        node: String,
    },
    /// Writing labels, annotations or taints of the Node failed.
    #[error("cannot patch Node {node}")]
    PatchNode {
        /// The Node.
        node: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The certificates-expiry annotation does not hold an RFC 3339 time.
    #[error("cannot parse the {annotation} annotation {value:?} as an RFC 3339 time")]
    ParseCertificatesExpiry {
        /// The annotation.
        annotation: &'static str,
        /// Its value.
        value: String,
    },
    /// The control plane could not be read to decide whether the Node may be deleted.
    #[error("cannot tell whether the Node may be deleted")]
    CheckDeleteNodeAllowed(#[source] corral_runtime::external::Error),
    /// Cordoning or draining the Node failed.
    #[error("cannot drain Node {node}")]
    DrainNode {
        /// The Node.
        node: String,
        /// What went wrong.
        #[source]
        source: drain::Error,
    },
    /// Reading the Node's volumes failed.
    #[error("cannot check the volumes of Node {node}")]
    GetNodeVolumes {
        /// The Node.
        node: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::cluster_cache::Error,
    },
    /// Deleting the Node failed (and the node deletion timeout has not passed).
    #[error("cannot delete Node {node}")]
    DeleteNode {
        /// The Node.
        node: String,
        /// What went wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Deleting the infrastructure machine failed.
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
    /// Deleting the bootstrap config failed.
    #[error("cannot delete the bootstrap {kind} {name}")]
    DeleteBootstrap {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::external::Error,
    },
}

/// The Machine controller's state, shared by its reconciles.
pub(crate) struct MachineController {
    ctx: Arc<Context>,
    external: ExternalWatches<Machine>,
    clusters: Store<Cluster>,
    machines: SharedCache<Machine>,
    machine_sets: Store<MachineSet>,
    machine_deployments: Store<MachineDeployment>,
}

/// What one reconcile works on. Fields are valid from the start unless their doc says when
/// they are set.
pub(crate) struct Scope {
    /// The Machine as read.
    pub before: Arc<Machine>,
    /// The Machine as it should be; written back at the end.
    pub machine: Machine,
    /// Its Cluster.
    pub cluster: Arc<Cluster>,
    /// The Cluster's namespace and name.
    pub cluster_key: ClusterKey,
    /// The bootstrap config, once `reconcile_bootstrap` has read it.
    pub bootstrap_config: Option<ExternalObject>,
    /// What `reconcile_bootstrap` observed; `None` without a configRef.
    pub bootstrap_observed: Option<Observed>,
    /// The infrastructure machine, once `reconcile_infrastructure` has read it.
    pub infra_machine: Option<ExternalObject>,
    /// What `reconcile_infrastructure` observed.
    pub infra_observed: Option<Observed>,
    /// The Node, once `reconcile_node` has found it.
    pub node: Option<Arc<Node>>,
    /// Why `reconcile_node` could not read the Node.
    pub node_error: Option<NodeReadError>,
    /// What deletion waits on, set by `reconcile_delete`: reason and message.
    pub deleting: Option<(String, String)>,
    /// A timed requeue, for waits that produce no event.
    pub requeue_after: Option<Duration>,
    /// Events to publish once the Machine is written: type, reason, note.
    pub events: Vec<(EventType, &'static str, String)>,
}

impl Scope {
    fn event(&mut self, type_: EventType, reason: &'static str, note: String) {
        self.events.push((type_, reason, note));
    }

    fn requeue(&mut self, after: Duration) {
        self.requeue_after = runtime::sooner(self.requeue_after, Some(after));
    }

    fn namespace(&self) -> String {
        self.machine.namespace().unwrap_or_default()
    }
}

/// Machines of a cluster, from the cache.
fn machines_of(machines: &SharedCache<Machine>, cluster: &ClusterKey) -> Vec<Arc<Machine>> {
    machines.of_cluster(cluster)
}

/// What about a Cluster its Machines' reconciles depend on (upstream's Cluster predicates:
/// paused transitions, infrastructure provisioned, control plane initialized), plus deletion.
fn cluster_signature(cluster: &Cluster) -> String {
    let status = cluster.status.as_ref();
    let initialized = status
        .and_then(|s| {
            conditions::get(
                &s.conditions,
                corral_api::conditions::cluster::CONTROL_PLANE_INITIALIZED,
            )
        })
        .map(|c| c.status.clone())
        .unwrap_or_default();
    format!(
        "{:?}/{}/{:?}/{initialized}/{}",
        cluster.spec.paused,
        runtime::has_paused_annotation(cluster),
        status.and_then(|s| s.initialization.infrastructure_provisioned),
        cluster.metadata.deletion_timestamp.is_some(),
    )
}

/// Starts the Machine controller; returns at shutdown.
pub(crate) async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    let caches = ctx.caches();
    let shared_machines = caches.machines();
    let machine_store = shared_machines.store();
    let machines = shared_machines.applied();
    let cluster_cache = caches.clusters();
    let cluster_store = cluster_cache.store();
    // Only what a Machine's reconcile reads of its Cluster wakes it (see `cluster_signature`).
    let clusters = cluster_cache.applied_changed(Arc::new(Fingerprints::new()), |cluster| {
        Some(cluster_signature(cluster))
    });
    let machine_set_cache = caches.machine_sets();
    let machine_set_store = machine_set_cache.store();
    // Only template changes matter to the Machines (their UpToDate condition); MachineSets
    // and MachineDeployments write their status far more often than that.
    let machine_sets = machine_set_cache.applied_changed(Arc::new(Fingerprints::new()), |ms| {
        Some(up_to_date::machine_set_signature(ms))
    });
    let machine_deployment_cache = caches.machine_deployments();
    let machine_deployment_store = machine_deployment_cache.store();
    let machine_deployments = machine_deployment_cache
        .applied_changed(Arc::new(Fingerprints::new()), |md| {
            Some(up_to_date::machine_deployment_signature(md))
        });

    let (triggers, requests) = Triggers::new();
    let nodes = ctx.cluster_cache().subscribe_nodes();
    let connections = ctx.cluster_cache().subscribe_connections();

    let mut queue: SelectAll<Queue<Machine>> = SelectAll::new();
    queue.push(trigger_own(machines).boxed());
    let cache = shared_machines.clone();
    let store = cache.clone();
    queue.push(
        trigger_with(clusters, move |cluster: Arc<Cluster>| {
            let key = ClusterKey::new(
                &cluster.namespace().unwrap_or_default(),
                &cluster.name_any(),
            );
            machines_of(&store, &key)
                .iter()
                .map(|m| ObjectRef::from_obj(m.as_ref()))
                .collect::<Vec<_>>()
        })
        .boxed(),
    );
    let store = cache.clone();
    queue.push(
        trigger_with(machine_sets, move |machine_set: Arc<MachineSet>| {
            up_to_date::machines_of_machine_set(&store, &machine_set)
        })
        .boxed(),
    );
    let store = cache.clone();
    queue.push(
        trigger_with(machine_deployments, move |md: Arc<MachineDeployment>| {
            up_to_date::machines_of_machine_deployment(&store, &md)
        })
        .boxed(),
    );
    queue.push(requests.map(|r| Ok(ReconcileRequest::from(r))).boxed());
    let store = cache.clone();
    queue.push(
        nodes
            .flat_map(move |event| futures::stream::iter(node_to_machines(&store, &event)))
            .map(|r| Ok(ReconcileRequest::from(r)))
            .boxed(),
    );
    let store = cache.clone();
    queue.push(
        connections
            .flat_map(move |key| {
                let refs: Vec<ObjectRef<Machine>> = machines_of(&store, &key)
                    .iter()
                    .map(|m| ObjectRef::from_obj(m.as_ref()))
                    .collect();
                futures::stream::iter(refs)
            })
            .map(|r| Ok(ReconcileRequest::from(r)))
            .boxed(),
    );

    let controller = Arc::new(MachineController {
        external: ExternalWatches::new(ctx.external().clone(), triggers),
        clusters: cluster_store,
        machines: cache,
        machine_sets: machine_set_store,
        machine_deployments: machine_deployment_store,
        ctx: ctx.clone(),
    });
    runtime::run_controller(
        "machine",
        controller,
        ctx.config(),
        machine_store,
        queue.boxed(),
        shutdown,
        reconcile,
    )
    .await;
}

/// The Machines a Node event concerns: the one named in the Node's annotations, or those of
/// the cluster with the Node's provider ID (a new Node, not annotated yet).
fn node_to_machines(machines: &SharedCache<Machine>, event: &NodeEvent) -> Vec<ObjectRef<Machine>> {
    let annotations = event.node.annotations();
    if let (Some(name), Some(namespace)) = (
        annotations.get(corral_api::annotations::NODE_MACHINE),
        annotations.get(corral_api::annotations::NODE_CLUSTER_NAMESPACE),
    ) {
        return vec![ObjectRef::new(name).within(namespace)];
    }
    let Some(provider_id) = event
        .node
        .spec
        .as_ref()
        .and_then(|spec| spec.provider_id.as_deref())
    else {
        return Vec::new();
    };
    machines
        .with_key(
            &event.cluster,
            &corral_runtime::index::key::provider_id(provider_id),
        )
        .iter()
        .filter(|m| m.spec.provider_id.as_deref() == Some(provider_id))
        .map(|m| ObjectRef::from_obj(m.as_ref()))
        .collect()
}

impl MachineController {
    /// The Machine's Cluster, from the cache or, when the cache does not have it yet, the API.
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
}

async fn reconcile(
    machine: Arc<Machine>,
    controller: Arc<MachineController>,
) -> Result<Action, Error> {
    let ctx = &controller.ctx;
    let namespace = machine.namespace().unwrap_or_default();
    let api: Api<Machine> = Api::namespaced(ctx.client().clone(), &namespace);
    let key = runtime::object_key(machine.as_ref());
    let write_error = |source| Error::PatchMachine {
        machine: key.clone(),
        source,
    };
    let finalizer = corral_api::finalizers::MACHINE;
    let has_finalizer = machine.finalizers().iter().any(|f| f == finalizer);
    let deleting = machine.metadata.deletion_timestamp.is_some();
    if deleting && !has_finalizer {
        return Ok(Action::await_change());
    }

    let cluster_key = ClusterKey::new(&namespace, &machine.spec.cluster_name);
    let cluster = match controller.cluster(&cluster_key).await? {
        Some(cluster) => cluster,
        // A Machine outliving its Cluster can still go: as for a Cluster being deleted, its
        // Node is left alone.
        None if deleting => cluster_key.stand_in(machine.metadata.deletion_timestamp.clone()),
        None => {
            return Err(Error::FindCluster {
                cluster: cluster_key,
            });
        }
    };

    // The finalizer goes on first, so that a deletion never races the first reconcile.
    if !deleting && !has_finalizer {
        let mut with_finalizer = (*machine).clone();
        with_finalizer.finalizers_mut().push(finalizer.to_owned());
        patch::write(&api, &machine, &with_finalizer)
            .await
            .map_err(write_error)?;
        return Ok(Action::await_change());
    }

    let now = conditions::now();
    let mut scope = Scope {
        machine: (*machine).clone(),
        before: machine.clone(),
        cluster,
        cluster_key,
        bootstrap_config: None,
        bootstrap_observed: None,
        infra_machine: None,
        infra_observed: None,
        node: None,
        node_error: None,
        deleting: None,
        requeue_after: None,
        events: Vec::new(),
    };
    if status::set_paused_condition(&mut scope.machine, &scope.cluster, &now) {
        tracing::debug!("Reconciliation is paused");
        patch::write(&api, &machine, &scope.machine)
            .await
            .map_err(write_error)?;
        return Ok(Action::await_change());
    }

    // Every step runs, as upstream's `doReconcile` does; the first failure is returned.
    let mut result = Ok(());
    let keep = |result: &mut Result<(), Error>, step: Result<(), Error>| {
        if result.is_ok() {
            *result = step;
        }
    };
    phases::reconcile_owner_and_labels(&mut scope);
    keep(
        &mut result,
        phases::reconcile_bootstrap(&controller, &mut scope).await,
    );
    keep(
        &mut result,
        phases::reconcile_infrastructure(&controller, &mut scope).await,
    );
    keep(
        &mut result,
        node_ref::reconcile_node(&controller, &mut scope).await,
    );
    keep(
        &mut result,
        phases::reconcile_certificates_expiry(&mut scope).map_err(|e| *e),
    );
    // Deletion decides on what the steps above read (is the infrastructure there, is there a
    // Node): after a lost write race, retry with a fresh read rather than decide on a partial
    // one.
    let lost_race = result
        .as_ref()
        .err()
        .is_some_and(|error| runtime::is_conflict(error));
    if deleting && !lost_race {
        keep(
            &mut result,
            delete::reconcile_delete(&controller, &mut scope).await,
        );
    }

    update_status(&controller, &mut scope, &now);
    if result.is_ok() {
        scope
            .machine
            .status
            .get_or_insert_with(Default::default)
            .observed_generation = scope.machine.metadata.generation;
    }
    patch::write(&api, &machine, &scope.machine)
        .await
        .map_err(write_error)?;
    for (type_, reason, note) in std::mem::take(&mut scope.events) {
        ctx.publish_event(machine.as_ref(), type_, reason, "Reconcile", note)
            .await;
    }
    // A failure reaches people as a condition and an Event, not only a log line; retries of
    // the same failure add to one Event's count.
    if let Err(error) = &result
        && !runtime::is_conflict(error)
    {
        let note = runtime::error_chain(error);
        ctx.publish_event(
            machine.as_ref(),
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

fn update_status(
    controller: &MachineController,
    scope: &mut Scope,
    now: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
) {
    let config = controller.ctx.config();
    let health = controller
        .ctx
        .cluster_cache()
        .health_checking_state(&scope.cluster_key);
    let machine = &mut scope.machine;
    status::set_bootstrap_ready_condition(machine, scope.bootstrap_observed.as_ref(), now);
    status::set_infrastructure_ready_condition(machine, scope.infra_observed.as_ref(), now);
    status::set_node_healthy_and_ready_conditions(
        machine,
        &scope.cluster,
        &status::NodeObservation {
            node: scope.node.as_deref(),
            error: scope.node_error.as_ref(),
            health: &health,
            grace_period: config.remote_conditions_grace_period,
        },
        now,
    );
    status::set_deleting_condition(
        machine,
        scope
            .deleting
            .as_ref()
            .map(|(reason, message)| (reason.as_str(), message.as_str())),
        now,
    );
    if let Some((machine_set, machine_deployment)) = up_to_date::owners(
        machine,
        &controller.machine_sets,
        &controller.machine_deployments,
    ) && let Some(after) =
        up_to_date::set_up_to_date_condition(machine, &machine_set, &machine_deployment, now)
    {
        scope.requeue_after = runtime::sooner(scope.requeue_after, Some(after));
    }
    status::set_updating_condition(machine, now);
    status::set_ready_condition(machine, now);
    // No Event for a phase change: upstream's Machine controller records the phase and its
    // `lastUpdated` only (`machine_controller_phases.go`), and leaves phase Events to the
    // Cluster. The Events a user acts on stay: the Node found (SuccessfulSetNodeRef), drain
    // and volume detach outcomes, Node deletion failures and reconcile errors. One Event per
    // phase was four to five writes per Machine, more than the Machine's own status writes.
    status::set_phase(machine, now);
    if let Some(after) = status::set_available_condition(machine, now) {
        scope.requeue_after = runtime::sooner(scope.requeue_after, Some(after));
    }
}
