//! The MachineSet controller (upstream `core/reconcilers/machineset/machineset_controller.go`).
//!
//! It owns the MachineSet's finalizer (`cluster.x-k8s.io/machineset`), its cluster-name label,
//! the cluster-name label of its selector and template, its adoption by its Cluster when no
//! MachineDeployment owns it, and the Cluster owner reference of the templates it clones. It
//! keeps `spec.replicas` Machines (`machines.rs`): it adopts orphan Machines its selector
//! matches, creates Machines named from `spec.machineNaming` with their bootstrap config and
//! infrastructure machine cloned from the templates and named like the Machine, deletes the
//! Machines [`deletion_order`] picks first when there are too many, replaces the Machines a
//! MachineHealthCheck marked `OwnerRemediated` False (within the MachineDeployment's
//! `remediation.maxInFlight`), and propagates the fields that change in place (labels,
//! annotations, readiness gates, deletion timeouts, minReadySeconds, taints) and, for a
//! MachineDeployment's Machines, the UpToDate condition. Its status (`status.rs`) counts the
//! Machines and aggregates their conditions. Deletion deletes every Machine, then drops the
//! finalizer.
//!
//! `cluster.x-k8s.io/disable-machine-create: "true"` stops it creating Machines; a paused
//! Cluster or the `cluster.x-k8s.io/paused` annotation stops it altogether.
//!
//! # Guarantees
//!
//! The Machines are read from a watch cache. A reconcile never starts before the caches hold a
//! complete list, and [`expectations`] hold back a MachineSet whose own creations and
//! deletions the cache does not show yet; so neither a restart nor a slow watch makes it create
//! or delete more Machines than asked.
//!
//! # Differences from upstream
//!
//! - No preflight checks (upstream's MachineSetPreflightChecks): Corral has no control plane
//!   provider of its own to check yet.
//! - No in-place updates (an alpha feature upstream): Machines are never moved between
//!   MachineSets.
//! - Labels and annotations are propagated to existing Machines with merge patches: added and
//!   changed ones reach the Machines, removed ones stay (upstream's server-side apply removes
//!   them). Bootstrap configs and infrastructure machines keep the labels they were created
//!   with.
//! - Machines are created in batches of growing size (1, 2, 4, … as the Kubernetes ReplicaSet
//!   controller does), several at once, and a batch that fails stops the scale-up; one event
//!   per reconcile says which Machines were created or deleted.

pub mod deletion_order;
pub mod expectations;
pub(crate) mod in_sync;
mod machines;
pub mod status;
pub mod templates;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_api::labels::{CLUSTER_NAME, MACHINE_DEPLOYMENT_NAME, MACHINE_SET_NAME};
use corral_api::{Cluster, GROUP, Machine, MachineDeployment, MachineSet, VERSION};
use futures::StreamExt;
use futures::stream::SelectAll;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::ResourceExt;
use kube::api::Api;
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::{Action, trigger_with};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};

use corral_runtime::changes::Fingerprints;
use corral_runtime::cluster_cache::ClusterKey;
use corral_runtime::coalesce::Window;
use corral_runtime::external::api_group_of;
use corral_runtime::index::key;
use corral_runtime::shared::SharedCache;
use corral_runtime::shared::trigger_own_coalesced_with;
use corral_runtime::{self as runtime, Context, Queue, Shutdown, naming};

use corral_runtime::patch::write_unobserved;
use expectations::{Expectations, Seen};

/// A failed step of reconciling a MachineSet.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the MachineSet's Cluster failed.
    #[error("cannot get Cluster {cluster}")]
    GetCluster {
        /// The Cluster.
        cluster: ClusterKey,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The MachineSet's Cluster does not exist.
    #[error("Cluster {cluster} does not exist")]
    FindCluster {
        /// The Cluster.
        cluster: ClusterKey,
    },
    /// Writing the MachineSet failed.
    #[error("cannot write MachineSet {machine_set}")]
    PatchMachineSet {
        /// The MachineSet, as `namespace/name`.
        machine_set: String,
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
    /// A template does not exist, so no Machine can be created.
    #[error("{kind} {name} does not exist")]
    FindTemplate {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// A template is not a template (no `spec.template`, or a kind not ending in `Template`).
    #[error("cannot clone {kind} {name}: it has no spec.template")]
    ReadTemplate {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
    },
    /// A Machine name could not be made.
    #[error("cannot name a new Machine")]
    NameMachine(#[source] naming::NamingError),
    /// Creating a provider object from a template failed.
    #[error("cannot create {kind} {name} from its template")]
    CloneTemplate {
        /// The kind created.
        kind: String,
        /// The name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Creating a Machine failed.
    #[error("cannot create Machine {machine}")]
    CreateMachine {
        /// The Machine.
        machine: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Deleting a Machine failed.
    #[error("cannot delete Machine {machine}")]
    DeleteMachine {
        /// The Machine.
        machine: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Writing a Machine (adoption, propagated fields, conditions) failed.
    #[error("cannot patch Machine {machine}")]
    PatchMachine {
        /// The Machine.
        machine: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Listing or deleting provider objects left without a Machine failed.
    #[error("cannot clean up {kind} objects left without a Machine")]
    CleanupOrphans {
        /// Their kind.
        kind: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// `remediation.maxInFlight` of the MachineDeployment does not resolve.
    #[error("cannot resolve remediation.maxInFlight")]
    ResolveMaxInFlight(#[source] crate::machine_deployment::int_or_percent::IntOrPercentError),
    /// `spec.replicas` is negative.
    #[error("spec.replicas is {replicas}; it must not be negative")]
    NegativeReplicas {
        /// The value.
        replicas: i32,
    },
}

/// The MachineSet controller's state, shared by its reconciles.
pub(crate) struct MachineSetController {
    ctx: Arc<Context>,
    /// The Machines, read per Cluster (reads and expectations go through its index).
    machines: SharedCache<Machine>,
    clusters: Store<Cluster>,
    machine_deployments: Store<MachineDeployment>,
    /// The MachineSet cache and the three above filled (see [`runtime::ready`]).
    ready: runtime::ready::CachesReady,
    /// Creations and deletions of Machines, per MachineSet, the cache does not show yet.
    expectations: Expectations<ObjectRef<MachineSet>>,
    /// The Machines each MachineSet last found in sync with its template.
    in_sync: in_sync::InSyncMemo,
    /// Which Machines matched the selector, per MachineSet.
    selected: in_sync::SelectedMemo,
    /// MachineSets (by uid) whose provider objects left without a Machine by an interrupted
    /// creation were cleaned up since this process started.
    orphans_checked: Mutex<HashSet<String>>,
}

/// What one reconcile works on. Fields are valid from the start unless their doc says when
/// they are set.
pub(crate) struct Scope {
    /// The MachineSet as read.
    pub before: Arc<MachineSet>,
    /// The MachineSet as it should be; written back at the end.
    pub machine_set: MachineSet,
    /// Its Cluster.
    pub cluster: Arc<Cluster>,
    /// The MachineDeployment that owns it, if any and if it exists.
    pub machine_deployment: Option<Arc<MachineDeployment>>,
    /// `spec.selector`, parsed.
    pub selector: Selector,
    /// Its Machines, once adopted: those its selector matches that no one else controls,
    /// including those being deleted.
    pub machines: Vec<Arc<Machine>>,
    /// Why Machines cannot be created now (missing templates, kinds not installed), for
    /// ScalingUp; filled by `reconcile_templates`.
    pub blockers: Vec<String>,
    /// A timed requeue, for waits that produce no event.
    pub requeue_after: Option<Duration>,
    /// Events to publish once the MachineSet is written: type, reason, note.
    pub events: Vec<(EventType, &'static str, String)>,
    /// The time of this reconcile.
    pub now: Time,
}

impl Scope {
    fn event(&mut self, type_: EventType, reason: &'static str, note: String) {
        self.events.push((type_, reason, note));
    }

    fn namespace(&self) -> String {
        self.machine_set.namespace().unwrap_or_default()
    }

    fn name(&self) -> String {
        self.machine_set.name_any()
    }

    /// The owner reference that makes the MachineSet a Machine's controller.
    fn controller_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: format!("{GROUP}/{VERSION}"),
            kind: "MachineSet".into(),
            name: self.name(),
            uid: self.machine_set.uid().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// Whether `owner` names an object of `kind` in Cluster API's group.
fn is_kind(owner: &OwnerReference, kind: &str) -> bool {
    owner.kind == kind && api_group_of(&owner.api_version) == GROUP
}

/// The controller reference of an object, if any.
fn controller_of(owners: &[OwnerReference]) -> Option<&OwnerReference> {
    owners.iter().find(|owner| owner.controller == Some(true))
}

/// Whether a MachineSet belongs to a MachineDeployment (upstream `isDeploymentChild`).
pub fn is_deployment_child(machine_set: &MachineSet) -> bool {
    machine_set.labels().contains_key(MACHINE_DEPLOYMENT_NAME)
}

/// What about a Cluster its MachineSets depend on: paused, and deletion.
fn cluster_signature(cluster: &Cluster) -> String {
    format!(
        "{:?}/{}/{}",
        cluster.spec.paused,
        runtime::has_paused_annotation(cluster),
        cluster.metadata.deletion_timestamp.is_some()
    )
}

/// What about a MachineDeployment its MachineSets depend on: its spec (template, rollout,
/// remediation) and its revision.
fn machine_deployment_signature(machine_deployment: &MachineDeployment) -> String {
    format!(
        "{:?}/{:?}",
        machine_deployment.metadata.generation,
        machine_deployment
            .annotations()
            .get(corral_api::annotations::REVISION)
    )
}

/// Starts the MachineSet controller; returns at shutdown.
pub(crate) async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    let caches = ctx.caches();
    let machine_set_cache = caches.machine_sets();
    let machine_set_store = machine_set_cache.store();
    let machine_sets = machine_set_cache.applied();
    let machine_cache = caches.machines();
    let machines = machine_cache.touched();
    let cluster_cache = caches.clusters();
    // Only what a MachineSet's reconcile reads of its Cluster wakes it.
    let clusters = cluster_cache.applied_changed(Arc::new(Fingerprints::new()), |cluster| {
        Some(cluster_signature(cluster))
    });
    let machine_deployment_cache = caches.machine_deployments();
    let machine_deployments = machine_deployment_cache
        .applied_changed(Arc::new(Fingerprints::new()), |md| {
            Some(machine_deployment_signature(md))
        });

    let mut queue: SelectAll<Queue<MachineSet>> = SelectAll::new();
    // Machines change many times while they come up, and each MachineSet status write comes
    // back as a watch event: both are held back and joined (see `runtime::coalesce`).
    // A MachineSet of thousands is held back longer (`Window::scaled`): each reconcile sums
    // up all its Machines.
    let (store, index) = (machine_set_store.clone(), machine_cache.index().clone());
    let window = Window::scaled(ctx.config().coalesce_window, move |key| {
        store.get(key).map_or(0, |ms| {
            let cluster =
                ClusterKey::new(&ms.namespace().unwrap_or_default(), &ms.spec.cluster_name);
            index.count_with_key(&cluster, &key::controller(ms.uid().as_deref()))
        })
    });
    let cache = machine_set_cache.clone();
    queue.push(trigger_own_coalesced_with(
        machine_sets,
        trigger_with(machines, move |machine: Arc<Machine>| {
            machine_to_machine_sets(&cache, &machine)
        }),
        window,
    ));
    let cache = machine_set_cache.clone();
    queue.push(
        trigger_with(clusters, move |cluster: Arc<Cluster>| {
            let key = ClusterKey::new(
                &cluster.namespace().unwrap_or_default(),
                &cluster.name_any(),
            );
            cache
                .of_cluster(&key)
                .iter()
                .map(|ms| ObjectRef::from_obj(ms.as_ref()))
                .collect::<Vec<_>>()
        })
        .boxed(),
    );
    let cache = machine_set_cache.clone();
    queue.push(
        trigger_with(machine_deployments, move |md: Arc<MachineDeployment>| {
            let uid = md.uid();
            let cluster =
                ClusterKey::new(&md.namespace().unwrap_or_default(), &md.spec.cluster_name);
            cache
                .of_cluster(&cluster)
                .iter()
                .filter(|ms| {
                    ms.labels().get(MACHINE_DEPLOYMENT_NAME) == Some(&md.name_any())
                        || controller_of(ms.owner_references())
                            .is_some_and(|owner| Some(&owner.uid) == uid.as_ref())
                })
                .map(|ms| ObjectRef::from_obj(ms.as_ref()))
                .collect::<Vec<_>>()
        })
        .boxed(),
    );

    let ready = runtime::ready::CachesReady::new(vec![
        machine_set_cache.ready(),
        machine_cache.ready(),
        cluster_cache.ready(),
        machine_deployment_cache.ready(),
    ]);
    let controller = Arc::new(MachineSetController {
        ctx: ctx.clone(),
        ready,
        machines: machine_cache,
        clusters: cluster_cache.store(),
        machine_deployments: machine_deployment_cache.store(),
        expectations: Expectations::default(),
        in_sync: Default::default(),
        selected: Default::default(),
        orphans_checked: Mutex::new(HashSet::new()),
    });
    runtime::run_controller(
        "machineset",
        controller,
        ctx.config(),
        machine_set_store,
        queue.boxed(),
        shutdown,
        reconcile,
    )
    .await;
}

/// The MachineSets a Machine event concerns: its controller if that is a MachineSet, else
/// (an orphan) those of its Cluster whose selector matches it, which may adopt it (upstream
/// `MachineToMachineSets`, which lists the MachineSets of the Machine's Cluster). Looked up
/// by Cluster, not among every MachineSet: an orphan's every change would otherwise cost a
/// pass over all of them.
fn machine_to_machine_sets(
    machine_sets: &SharedCache<MachineSet>,
    machine: &Machine,
) -> Vec<ObjectRef<MachineSet>> {
    let namespace = machine.namespace().unwrap_or_default();
    if let Some(owner) = controller_of(machine.owner_references()) {
        if is_kind(owner, "MachineSet") {
            return vec![ObjectRef::new(&owner.name).within(&namespace)];
        }
        return Vec::new();
    }
    machine_sets
        .of_cluster(&ClusterKey::new(&namespace, &machine.spec.cluster_name))
        .iter()
        .filter(|ms| {
            Selector::try_from(ms.spec.selector.clone())
                .is_ok_and(|selector| !selector.selects_all() && selector.matches(machine.labels()))
        })
        .map(|ms| ObjectRef::from_obj(ms.as_ref()))
        .collect()
}

impl MachineSetController {
    /// Waits until every cache holds a complete list, so that nothing is counted missing that
    /// merely has not been listed yet.
    async fn caches_ready(&self) {
        // Not `Store::wait_until_ready` in each reconcile: it wakes only one of the reconciles
        // waiting at once, and the others would wait forever.
        self.ready.wait().await;
    }

    /// The MachineSet's Cluster, from the cache or, when the cache does not have it yet, the API.
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

    /// The MachineDeployment a MachineSet belongs to (upstream `getOwnerMachineDeployment`):
    /// named by its deployment-name label.
    fn machine_deployment_of(&self, machine_set: &MachineSet) -> Option<Arc<MachineDeployment>> {
        let name = machine_set.labels().get(MACHINE_DEPLOYMENT_NAME)?;
        self.machine_deployments
            .get(&ObjectRef::new(name).within(&machine_set.namespace().unwrap_or_default()))
    }

    /// The Machines of the MachineSet's Cluster the selector matches, other than those
    /// another object controls, sorted by name (upstream `getAndAdoptMachinesForMachineSet`
    /// before adoption, which lists by selector in the namespace; the selector always carries
    /// the cluster-name label, which upstream's webhook keeps equal to `spec.clusterName`).
    fn candidate_machines(
        &self,
        machine_set: &MachineSet,
        selector: &Selector,
    ) -> Vec<Arc<Machine>> {
        let uid = machine_set.uid();
        let cluster = ClusterKey::new(
            &machine_set.namespace().unwrap_or_default(),
            &machine_set.spec.cluster_name,
        );
        // Its own Machines and those without a controller; never another's.
        let mut machines = self.machines.with_key(&cluster, &key::controller(None));
        if let Some(uid) = uid.as_deref() {
            machines.extend(
                self.machines
                    .with_key(&cluster, &key::controller(Some(uid))),
            );
        }
        self.selected
            .retain_matching(ObjectRef::from_obj(machine_set), selector, &mut machines);
        machines.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        machines
    }

    /// Whether the cache shows every Machine this MachineSet created or deleted; if not, how
    /// long to wait at most. Presence is read from the index, which the Machines are read
    /// through next (see [`corral_runtime::index::ClusterIndex`] on why not the store).
    fn unmet_expectations(
        &self,
        key: &ObjectRef<MachineSet>,
        cluster: &ClusterKey,
    ) -> Option<Duration> {
        self.expectations.unmet(key, |name| {
            match self.machines.index().get(cluster, name) {
                None => Seen::Absent,
                // Machines are only created and deleted, never waited on for an update, so
                // their resourceVersion does not matter here.
                Some(machine) => Seen::Present {
                    resource_version: "",
                    deleting: machine.metadata.deletion_timestamp.is_some(),
                },
            }
        })
    }
}

async fn reconcile(
    machine_set: Arc<MachineSet>,
    controller: Arc<MachineSetController>,
) -> Result<Action, Error> {
    controller.caches_ready().await;
    let object_ref = ObjectRef::from_obj(machine_set.as_ref());
    let ctx = &controller.ctx;
    let namespace = machine_set.namespace().unwrap_or_default();
    let api: Api<MachineSet> = Api::namespaced(ctx.client().clone(), &namespace);
    let key = runtime::object_key(machine_set.as_ref());
    let write_error = |source| Error::PatchMachineSet {
        machine_set: key.clone(),
        source,
    };
    let finalizer = corral_api::finalizers::MACHINE_SET;
    let has_finalizer = machine_set.finalizers().iter().any(|f| f == finalizer);
    let deleting = machine_set.metadata.deletion_timestamp.is_some();
    if deleting && !has_finalizer {
        controller.expectations.forget(&object_ref);
        controller.in_sync.forget(&object_ref);
        controller.selected.forget(&object_ref);
        return Ok(Action::await_change());
    }

    let cluster_key = ClusterKey::new(&namespace, &machine_set.spec.cluster_name);
    let cluster = match controller.cluster(&cluster_key).await? {
        Some(cluster) => cluster,
        // A MachineSet outliving its Cluster can still delete its Machines.
        None if deleting => cluster_key.stand_in(None),
        None => {
            return Err(Error::FindCluster {
                cluster: cluster_key,
            });
        }
    };

    // The finalizer goes on first, so that a deletion never races the first reconcile.
    if !deleting && !has_finalizer {
        let mut with_finalizer = (*machine_set).clone();
        with_finalizer.finalizers_mut().push(finalizer.to_owned());
        write_unobserved(&api, &machine_set, &with_finalizer)
            .await
            .map_err(write_error)?;
        return Ok(Action::await_change());
    }

    let now = corral_runtime::conditions::now();
    let mut paused = (*machine_set).clone();
    if status::set_paused_condition(&mut paused, &cluster, &now) {
        tracing::debug!("Reconciliation is paused");
        write_unobserved(&api, &machine_set, &paused)
            .await
            .map_err(write_error)?;
        return Ok(Action::await_change());
    }

    let mut machine_set_now = paused;
    reconcile_owner_and_labels(&mut machine_set_now, &cluster);
    let selector =
        Selector::try_from(machine_set_now.spec.selector.clone()).map_err(Error::ParseSelector)?;
    let mut scope = Scope {
        machine_deployment: controller.machine_deployment_of(&machine_set_now),
        machine_set: machine_set_now,
        before: machine_set.clone(),
        cluster,
        selector,
        machines: Vec::new(),
        blockers: Vec::new(),
        requeue_after: None,
        events: Vec::new(),
        now,
    };

    // Every step runs, as upstream's `doReconcile` does, unless one says to stop; the first
    // failure is returned once the MachineSet is written.
    // Expectations are checked before the Machines are read from the cache: a Machine that
    // reached the cache between a read and a later check would meet its expectation and still
    // be missing from what was read, and be created a second time.
    if let Some(wait) = controller.unmet_expectations(&object_ref, &cluster_key) {
        tracing::debug!(?wait, "Waiting for the cache to show the Machines written");
        return Ok(Action::requeue(wait));
    }
    let mut result = machines::reconcile_templates(&controller, &mut scope).await;
    machines::adopt_machines(&controller, &mut scope).await;
    let mut keep = |step: Result<(), Error>| {
        if result.is_ok() {
            result = step;
        }
    };
    if deleting {
        keep(machines::reconcile_delete(&controller, &mut scope).await);
    } else {
        keep(machines::reconcile_unhealthy_machines(&controller, &mut scope).await);
        keep(machines::sync_machines(&controller, &mut scope).await);
        keep(machines::sync_replicas(&controller, &mut scope).await);
    }

    update_status(&mut scope);
    if result.is_ok() {
        scope
            .machine_set
            .status
            .get_or_insert_with(Default::default)
            .observed_generation = scope.machine_set.metadata.generation;
    }
    write_unobserved(&api, &machine_set, &scope.machine_set)
        .await
        .map_err(write_error)?;
    for (type_, reason, note) in std::mem::take(&mut scope.events) {
        ctx.publish_event(machine_set.as_ref(), type_, reason, "Reconcile", note)
            .await;
    }
    result?;
    Ok(runtime::action(scope.requeue_after))
}

/// The cluster-name label on the MachineSet, its selector and its template, what upstream's
/// webhook defaults (`spec.replicas`, and the set-name label as selector when there is none),
/// and a Cluster owner reference when no MachineDeployment owns it (upstream
/// `reconcileMachineSetOwnerAndLabels`).
fn reconcile_owner_and_labels(machine_set: &mut MachineSet, cluster: &Cluster) {
    if machine_set.spec.replicas.is_none() {
        machine_set.spec.replicas = Some(crate::machine_deployment::default_replicas(
            machine_set.annotations(),
        ));
    }
    let cluster_name = machine_set.spec.cluster_name.clone();
    machine_set
        .labels_mut()
        .insert(CLUSTER_NAME.to_owned(), cluster_name.clone());
    if should_adopt(machine_set) && cluster.uid().is_some() {
        machine_set
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(OwnerReference {
                api_version: format!("{GROUP}/{VERSION}"),
                kind: "Cluster".into(),
                name: cluster.name_any(),
                uid: cluster.uid().unwrap_or_default(),
                controller: None,
                block_owner_deletion: None,
            });
    }
    let selector = &mut machine_set.spec.selector;
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    let name_label =
        naming::format_label_value(&machine_set.metadata.name.clone().unwrap_or_default());
    let match_labels = machine_set
        .spec
        .selector
        .match_labels
        .get_or_insert_with(Default::default);
    if empty {
        match_labels.insert(MACHINE_SET_NAME.to_owned(), name_label.clone());
    }
    match_labels.insert(CLUSTER_NAME.to_owned(), cluster_name.clone());
    let template_labels = &mut machine_set.spec.template.metadata.labels;
    if empty {
        template_labels.insert(MACHINE_SET_NAME.to_owned(), name_label);
    }
    template_labels.insert(CLUSTER_NAME.to_owned(), cluster_name);
}

/// Whether a MachineSet should be owned by its Cluster (upstream `shouldAdopt`): nothing owns
/// it yet, and no label says a MachineDeployment made it (after a restore from backup the
/// MachineDeployment comes back to claim it).
fn should_adopt(machine_set: &MachineSet) -> bool {
    let owned = machine_set
        .owner_references()
        .iter()
        .any(|owner| is_kind(owner, "MachineDeployment") || is_kind(owner, "Cluster"));
    !owned && !is_deployment_child(machine_set)
}

fn update_status(scope: &mut Scope) {
    let now = scope.now.clone();
    let machines: Vec<Arc<Machine>> = scope.machines.clone();
    let machines: Vec<&Machine> = machines.iter().map(AsRef::as_ref).collect();
    let machine_set = &mut scope.machine_set;
    match status::selector_string(&machine_set.spec.selector) {
        Ok(selector) => {
            machine_set
                .status
                .get_or_insert_with(Default::default)
                .selector = Some(selector).filter(|s| !s.is_empty())
        }
        Err(error) => tracing::warn!(%error, "Cannot render spec.selector for status.selector"),
    }
    status::set_replicas(machine_set, &machines);
    status::set_scaling_up_condition(machine_set, &machines, &scope.blockers, &now);
    status::set_scaling_down_condition(machine_set, &machines, &now);
    status::set_machines_ready_condition(machine_set, &machines, &now);
    if let Some(after) = status::set_machines_up_to_date_condition(machine_set, &machines, &now) {
        scope.requeue_after = runtime::sooner(scope.requeue_after, Some(after));
    }
    status::set_remediating_condition(machine_set, &machines, &now);
    status::set_deleting_condition(machine_set, &machines, &now);
}
