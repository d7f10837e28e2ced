//! The DevMachine controller: one simulated VM per DevMachine (upstream
//! `devmachine_controller.go` and `backends/inmemory/inmemorymachine_backend.go`).
//!
//! Once a Machine owns the DevMachine, the controller waits, as upstream does, for the Cluster's
//! infrastructure to be provisioned and for the Machine's bootstrap data
//! (`spec.bootstrap.dataSecretName`; the data is not used, the wait keeps the order of a real
//! provisioning). Then it makes sure the cloud runs the VM and reports its boot: the step
//! conditions, and once the VM is up, `spec.providerID`, `status.addresses`,
//! `status.failureDomain` (the Machine's) and `status.initialization.provisioned`. Deleting the
//! DevMachine deletes the VM, and with it the Node, before the finalizer goes.
//!
//! Every write costs the API server, the store and each watcher, so the controller writes what a
//! person can observe and no more: a status per wait reason; the finalizer just before the VM
//! is created (nothing needs guarding before); a status per boot step that takes time; and once
//! the VM is up, the providerID (spec) and then one status with everything already true. A VM
//! that boots at once gets its providerID with the finalizer, and a step that is due is given
//! a moment to complete in the cloud before the status is written ([`status::settling`]), so at
//! zero delay a DevMachine is provisioned in two writes (finalizer with providerID, status)
//! and deleted in one (the finalizer's removal); no Events but warnings, as upstream.

mod status;

use std::sync::Arc;

use corral_api::{Cluster, Machine};
use corral_runtime::changes::Fingerprints;
use corral_runtime::shared::{SharedCache, trigger_own};
use futures::StreamExt;
use futures::future::Shared;
use futures::stream::SelectAll;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, trigger_with};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::json;

use self::status::Wait;
use super::conditions::{self, Desired};
use super::{
    Context, Error, get_opt, owner_named, paused, replaced_by_own_write, set_finalizer, write_spec,
    write_status,
};
use crate::api::annotations::{FAIL_BOOT, NODE_NOT_READY};
use crate::api::conditions::{
    API_SERVER_PROVISIONED, ETCD_PROVISIONED, NODE_PROVISIONED, PAUSED, READY, VM_PROVISIONED,
    reasons,
};
use crate::api::{
    DevCluster, DevMachine, DevMachineStatus, GROUP, InMemoryMachineBackendSpec,
    InvalidProvisioning, finalizers, provider_id,
};
use crate::cloud::{ClusterKey, Faults, StepTiming, StepTimings, VmKey, VmSpec};

/// What the DevMachine controller reads from watches instead of the API server.
pub(super) struct Caches {
    machines: Store<Machine>,
    clusters: Store<Cluster>,
    dev_clusters: Store<DevCluster>,
}

pub(super) async fn run(
    context: Arc<Context>,
    shutdown: Shared<impl std::future::Future<Output = ()> + Send + 'static>,
) {
    let shared = &context.caches;
    let dev_machine_cache = shared.get(super::cluster_label::<DevMachine>);
    let dev_machine_store = dev_machine_cache.store();
    let dev_machines = dev_machine_cache.applied();
    let machine_cache = shared.machines();
    // Machine status changes many times while it comes up, and its spec takes the providerID
    // this controller wrote; what a DevMachine reads of its Machine is a few fields.
    let machines = machine_cache.touched_changed(Arc::new(Fingerprints::new()), |machine| {
        Some((
            machine.metadata.uid.clone(),
            machine.metadata.labels.clone(),
            machine.metadata.deletion_timestamp.is_some(),
            machine.spec.cluster_name.clone(),
            machine.spec.bootstrap.data_secret_name.clone(),
            machine.spec.version.clone(),
            machine.spec.failure_domain.clone(),
        ))
    });
    let cluster_cache = shared.clusters();
    let clusters = cluster_cache.applied_changed(Arc::new(Fingerprints::new()), |cluster| {
        Some(cluster_signature(cluster))
    });
    let dev_cluster_cache = shared.get(super::cluster_label::<DevCluster>);

    let mut queue = SelectAll::new();
    queue.push(trigger_own(dev_machines).boxed());
    queue.push(
        trigger_with(machines, move |machine: Arc<Machine>| {
            machine_to_dev_machine(&machine)
        })
        .boxed(),
    );
    let by_cluster = dev_machine_cache.clone();
    queue.push(
        trigger_with(clusters, move |cluster: Arc<Cluster>| {
            cluster_to_dev_machines(&by_cluster, &cluster)
        })
        .boxed(),
    );
    // The DevCluster cache is only read (a reconcile checks that the DevCluster exists); the
    // Cluster's infrastructure becoming provisioned is what starts a DevMachine.
    let caches = Arc::new(Caches {
        machines: machine_cache.store(),
        clusters: cluster_cache.store(),
        dev_clusters: dev_cluster_cache.store(),
    });
    super::run_applier(
        dev_machine_store,
        queue.boxed(),
        context,
        shutdown,
        &super::DEV_MACHINE_RECONCILES,
        move |dev_machine, context| reconcile(dev_machine, context, caches.clone()),
    )
    .await;
}

/// What of a Cluster a DevMachine depends on: paused, the infrastructure, the control plane's
/// initialization, deletion.
fn cluster_signature(cluster: &Cluster) -> impl std::hash::Hash + use<> {
    let status = cluster.status.as_ref();
    (
        cluster.metadata.uid.clone(),
        cluster.spec.paused,
        cluster
            .annotations()
            .contains_key(corral_api::annotations::PAUSED),
        cluster
            .spec
            .infrastructure_ref
            .as_ref()
            .map(|reference| reference.name.clone()),
        status.and_then(|status| status.initialization.infrastructure_provisioned),
        control_plane_initialized(cluster),
        cluster.metadata.deletion_timestamp.is_some(),
    )
}

/// A Machine's change concerns its DevMachine (upstream `util.MachineToInfrastructureMapFunc`).
fn machine_to_dev_machine(machine: &Machine) -> Option<ObjectRef<DevMachine>> {
    let reference = &machine.spec.infrastructure_ref;
    (reference.api_group == GROUP && reference.kind == "DevMachine")
        .then(|| ObjectRef::new(&reference.name).within(&machine.namespace().unwrap_or_default()))
}

/// A Cluster's change (paused, infrastructure provisioned) concerns the DevMachines labelled
/// with its name (upstream `util.ClusterToTypedObjectsMapper`), which the shared cache's index
/// files under the Cluster: a lookup, not a scan of every Cluster's DevMachines.
fn cluster_to_dev_machines(
    dev_machines: &SharedCache<DevMachine>,
    cluster: &Cluster,
) -> Vec<ObjectRef<DevMachine>> {
    let key = corral_runtime::cluster_cache::ClusterKey::new(
        &cluster.namespace().unwrap_or_default(),
        &cluster.name_any(),
    );
    dev_machines
        .of_cluster(&key)
        .iter()
        .map(|dev_machine| ObjectRef::from_obj(dev_machine.as_ref()))
        .collect()
}

/// What every step of one reconcile works on: the context, the DevMachine and its API.
struct Scope<'a> {
    context: &'a Context,
    api: Api<DevMachine>,
    dev_machine: &'a DevMachine,
}

/// Reconciles one DevMachine (upstream `DevMachineReconciler.Reconcile`): reads its Machine
/// and Cluster, then reports pause, deletes, waits or provisions, each a step below.
#[tracing::instrument(skip_all, fields(dev_machine = %dev_machine.name_any(), namespace = dev_machine.namespace(), cluster = tracing::field::Empty))]
async fn reconcile(
    dev_machine: Arc<DevMachine>,
    context: Arc<Context>,
    caches: Arc<Caches>,
) -> Result<Action, Error> {
    if replaced_by_own_write(&context, dev_machine.as_ref()) {
        return Ok(Action::await_change());
    }
    let namespace = dev_machine.namespace().unwrap_or_default();
    let scope = Scope {
        context: &context,
        api: Api::namespaced(context.client.clone(), &namespace),
        dev_machine: dev_machine.as_ref(),
    };
    let deleting = dev_machine.metadata.deletion_timestamp.is_some();

    let machines: Api<Machine> = Api::namespaced(context.client.clone(), &namespace);
    let machine = match owner_named(dev_machine.as_ref(), "Machine") {
        Some(machine_name) => cached_or_get(&caches.machines, &machines, &machine_name).await?,
        None => None,
    };
    let key = vm_key(&dev_machine, machine.as_deref(), namespace);

    // `clusterctl move` marks what it deletes at the source: the VM lives on, managed from the
    // target (upstream providers skip cleaning external resources for these).
    let moving = dev_machine
        .annotations()
        .contains_key(corral_api::annotations::CLUSTERCTL_DELETE_FOR_MOVE);
    let Some(machine) = machine else {
        if deleting {
            return reconcile_delete_without_machine(&scope, &caches, key.as_ref(), moving).await;
        }
        tracing::info!("Waiting for the Machine controller to set the owner reference");
        return Ok(Action::await_change());
    };
    let Some(key) = key else {
        tracing::info!(
            "The owner Machine names no cluster: it needs the cluster.x-k8s.io/cluster-name label or spec.clusterName"
        );
        return Ok(Action::await_change());
    };
    let clusters: Api<Cluster> = Api::namespaced(context.client.clone(), &key.cluster.namespace);
    let cluster = cached_or_get(&caches.clusters, &clusters, &key.cluster.name).await?;

    let mut status = dev_machine.status.clone().unwrap_or_default();
    let generation = dev_machine.metadata.generation;
    if let Some(message) = paused(cluster.as_deref(), dev_machine.as_ref(), "DevMachine") {
        conditions::set(
            &mut status.conditions,
            &Desired::new(PAUSED, true, reasons::PAUSED).with_message(message),
            generation,
        );
        patch_status(&scope, &status).await?;
        return Ok(Action::await_change());
    }
    conditions::set(
        &mut status.conditions,
        &Desired::new(PAUSED, false, reasons::NOT_PAUSED),
        generation,
    );

    if deleting {
        return reconcile_delete(&scope, Some(&key), moving).await;
    }
    let Some(cluster) = cluster else {
        tracing::info!(cluster = %key.cluster, "Waiting for the Cluster to exist");
        return Ok(Action::await_change());
    };
    if !dev_cluster_exists(&scope, &caches, &cluster).await? {
        return Ok(Action::await_change());
    }
    reconcile_normal(&scope, &key, &machine, &cluster, status).await
}

/// The VM's key: the cluster is the Machine's label, then its spec; without a Machine, the
/// DevMachine's own label, for the deletion of a DevMachine whose Machine is already gone.
/// Records the cluster in the reconcile's span.
fn vm_key(dev_machine: &DevMachine, machine: Option<&Machine>, namespace: String) -> Option<VmKey> {
    let cluster_name = machine
        .and_then(|machine| {
            machine
                .labels()
                .get(corral_api::labels::CLUSTER_NAME)
                .cloned()
                .or_else(|| Some(machine.spec.cluster_name.clone()))
        })
        .or_else(|| {
            dev_machine
                .labels()
                .get(corral_api::labels::CLUSTER_NAME)
                .cloned()
        })
        .filter(|name| !name.is_empty())?;
    tracing::Span::current().record("cluster", cluster_name.as_str());
    Some(VmKey {
        cluster: ClusterKey {
            namespace,
            name: cluster_name,
        },
        name: dev_machine.name_any(),
    })
}

/// Deletes the VM (unless the DevMachine is moving) and removes the finalizer of a DevMachine
/// whose Machine is gone, unless its Cluster or itself is paused.
async fn reconcile_delete_without_machine(
    scope: &Scope<'_>,
    caches: &Caches,
    key: Option<&VmKey>,
    moving: bool,
) -> Result<Action, Error> {
    if let Some(key) = key {
        // A paused Cluster (or DevMachine) is left alone, deletion included.
        let clusters: Api<Cluster> =
            Api::namespaced(scope.context.client.clone(), &key.cluster.namespace);
        let cluster = cached_or_get(&caches.clusters, &clusters, &key.cluster.name).await?;
        if paused(cluster.as_deref(), scope.dev_machine, "DevMachine").is_some() {
            return Ok(Action::await_change());
        }
    }
    reconcile_delete(scope, key, moving).await
}

/// Deletes the VM, when its key is known and the DevMachine is not moving, then removes the
/// finalizer.
async fn reconcile_delete(
    scope: &Scope<'_>,
    key: Option<&VmKey>,
    moving: bool,
) -> Result<Action, Error> {
    if let Some(key) = key
        && !moving
    {
        delete_vm(scope.context, key).await?;
    }
    let Scope {
        context,
        api,
        dev_machine,
    } = scope;
    set_finalizer(context, api, *dev_machine, finalizers::DEV_MACHINE, false).await?;
    Ok(Action::await_change())
}

/// Whether the Cluster names its infrastructure and that DevCluster exists; logs the wait when
/// not.
async fn dev_cluster_exists(
    scope: &Scope<'_>,
    caches: &Caches,
    cluster: &Cluster,
) -> Result<bool, Error> {
    let Some(infrastructure) = cluster.spec.infrastructure_ref.as_ref() else {
        tracing::info!("Waiting for the Cluster's infrastructureRef");
        return Ok(false);
    };
    let namespace = scope.api.namespace().unwrap_or_default();
    let dev_clusters: Api<DevCluster> = Api::namespaced(scope.context.client.clone(), namespace);
    if cached_or_get(&caches.dev_clusters, &dev_clusters, &infrastructure.name)
        .await?
        .is_none()
    {
        tracing::info!(dev_cluster = %infrastructure.name, "Waiting for the DevCluster to exist");
        return Ok(false);
    }
    Ok(true)
}

/// Provisions the VM of a DevMachine whose Machine, Cluster and DevCluster exist: checks the
/// backend, waits as upstream's backend does, adds the finalizer, ensures the VM and reports
/// its boot.
async fn reconcile_normal(
    scope: &Scope<'_>,
    key: &VmKey,
    machine: &Machine,
    cluster: &Cluster,
    mut status: DevMachineStatus,
) -> Result<Action, Error> {
    let dev_machine = scope.dev_machine;
    let generation = dev_machine.metadata.generation;
    let control_plane = machine
        .labels()
        .contains_key(corral_api::labels::CONTROL_PLANE);
    let Some(timings) = read_timings(scope, &mut status).await? else {
        return Ok(Action::await_change());
    };

    // Wait as upstream's backend does; the Cluster and Machine watches bring the next reconcile.
    if let Some(wait) = compute_wait(cluster, machine, control_plane) {
        tracing::info!(?wait, "Waiting before creating the VM");
        let waiting = status::compute_waiting_conditions(wait, control_plane);
        set_step_conditions(&mut status, &waiting, generation);
        patch_status(scope, &status).await?;
        return Ok(Action::await_change());
    }

    let spec = VmSpec {
        control_plane,
        version: machine.spec.version.clone(),
        timings,
        faults: Faults {
            fail_boot: annotation_is_true(dev_machine, FAIL_BOOT),
            node_not_ready: annotation_is_true(dev_machine, NODE_NOT_READY),
        },
    };
    let mut written = ensure_finalizer(scope, &spec, &mut status).await?;
    let vm = ensure_vm(scope, key, &spec, &mut status, &written).await?;

    // A step whose time has come is completing its effect in the cloud (registering the Node,
    // starting etcd) and normally done moments later: look again then rather than write a
    // state that is about to change. At zero delay every step lands in one write.
    let now = k8s_openapi::jiff::Timestamp::now();
    if let Some(after) = status::settling(&vm, now) {
        return Ok(Action::requeue(after));
    }
    report_boot(scope, key, machine, &vm, status, &mut written).await?;
    Ok(match status::compute_requeue(&vm, now) {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

/// The step timings of `spec.backend.inMemory`, or `None` once a missing backend or an
/// invalid timing is reported in the status (and, for a timing, a Warning Event).
async fn read_timings(
    scope: &Scope<'_>,
    status: &mut DevMachineStatus,
) -> Result<Option<StepTimings>, Error> {
    let dev_machine = scope.dev_machine;
    let generation = dev_machine.metadata.generation;
    let Some(in_memory) = dev_machine.spec.backend.in_memory.as_ref() else {
        // The schema refuses such objects; one stored before it did is reported, not acted on.
        let ready = Desired::new(READY, false, reasons::NOT_READY).with_message(
            "spec.backend.inMemory is not set; Corral's in-memory provider supports no other backend",
        );
        conditions::set(&mut status.conditions, &ready, generation);
        patch_status(scope, status).await?;
        return Ok(None);
    };
    match compute_timings(in_memory) {
        Ok(timings) => Ok(Some(timings)),
        Err(InvalidProvisioning(message)) => {
            let invalid = Desired::new(VM_PROVISIONED, false, reasons::INVALID_PROVISIONING)
                .with_message(message.clone());
            set_step_conditions(status, &[invalid], generation);
            patch_status(scope, status).await?;
            scope
                .context
                .event(
                    dev_machine,
                    EventType::Warning,
                    reasons::INVALID_PROVISIONING,
                    message,
                )
                .await;
            Ok(None)
        }
    }
}

/// What the VM waits for before it is created, as upstream's backend: the Cluster's
/// infrastructure, then the bootstrap data (of a worker, after the control plane's
/// initialization).
fn compute_wait(cluster: &Cluster, machine: &Machine, control_plane: bool) -> Option<Wait> {
    if cluster
        .status
        .as_ref()
        .and_then(|status| status.initialization.infrastructure_provisioned)
        != Some(true)
    {
        Some(Wait::ClusterInfrastructure)
    } else if machine.spec.bootstrap.data_secret_name.is_none() {
        if !control_plane && !control_plane_initialized(cluster) {
            Some(Wait::ControlPlaneInitialized)
        } else {
            Some(Wait::BootstrapData)
        }
    } else {
        None
    }
}

/// Where the DevMachine stands after the finalizer's write, if any: the resourceVersion the
/// next writes are conditional on, the providerID the spec holds and the generation.
struct Written {
    base: Option<String>,
    provider_id: Option<String>,
    generation: Option<i64>,
}

/// Adds the finalizer unless present. The finalizer guards the VM, so it is in place before
/// the VM is created (upstream adds it first of all; until the VM exists there is nothing to
/// clean, so the waits need none). A VM that boots at once is up moments later: its
/// providerID, which is known beforehand, goes in the same write.
async fn ensure_finalizer(
    scope: &Scope<'_>,
    spec: &VmSpec,
    status: &mut DevMachineStatus,
) -> Result<Written, Error> {
    let dev_machine = scope.dev_machine;
    if dev_machine
        .finalizers()
        .iter()
        .any(|f| f == finalizers::DEV_MACHINE)
    {
        return Ok(Written {
            base: dev_machine.resource_version(),
            provider_id: dev_machine.spec.provider_id.clone(),
            generation: dev_machine.metadata.generation,
        });
    }
    let instant = spec.timings.vm.startup.is_zero() && !spec.faults.fail_boot;
    let written = add_finalizer(scope.context, &scope.api, dev_machine, instant).await?;
    if written.metadata.generation != dev_machine.metadata.generation {
        conditions::observe(&mut status.conditions, written.metadata.generation);
    }
    Ok(Written {
        base: written.resource_version(),
        provider_id: written.spec.provider_id,
        generation: written.metadata.generation,
    })
}

/// Makes sure the cloud runs the VM; a cloud error is reported in the status and a Warning
/// Event, and returned.
async fn ensure_vm(
    scope: &Scope<'_>,
    key: &VmKey,
    spec: &VmSpec,
    status: &mut DevMachineStatus,
    written: &Written,
) -> Result<crate::cloud::Vm, Error> {
    let error = match scope.context.cloud.ensure_vm(key, spec).await {
        Ok(vm) => return Ok(vm),
        Err(error) => error,
    };
    let dev_machine = scope.dev_machine;
    let message = super::error_chain(&error);
    let failed =
        Desired::new(VM_PROVISIONED, false, reasons::CLOUD_ERROR).with_message(message.clone());
    set_step_conditions(status, &[failed], written.generation);
    write_status(
        scope.context,
        &scope.api,
        dev_machine,
        dev_machine.status.as_ref(),
        status,
        written.base.as_deref(),
    )
    .await?;
    scope
        .context
        .event(
            dev_machine,
            EventType::Warning,
            reasons::CLOUD_ERROR,
            message,
        )
        .await;
    Err(Error::Cloud(error))
}

/// Writes the boot's step conditions and, once the VM is up, the contract: providerID, then
/// provisioned, which never goes back to false. The providerID is in the spec, the rest in the
/// status: two writes (unless the finalizer's carried the providerID), the status one against
/// the generation the first produced. Events follow the status that reports them, so that a
/// failed write does not repeat them.
async fn report_boot(
    scope: &Scope<'_>,
    key: &VmKey,
    machine: &Machine,
    vm: &crate::cloud::Vm,
    mut status: DevMachineStatus,
    written: &mut Written,
) -> Result<(), Error> {
    let Scope {
        context,
        api,
        dev_machine,
    } = scope;
    let steps = status::compute_step_conditions(vm);
    let boot_failed_before = has_reason(&status, VM_PROVISIONED, reasons::BOOT_FAILED);
    set_step_conditions(&mut status, &steps, written.generation);
    let boot_failed_now =
        has_reason(&status, VM_PROVISIONED, reasons::BOOT_FAILED) && !boot_failed_before;

    let mut provisioned_now = false;
    if vm.vm.is_done() {
        let provider_id = provider_id(&key.name);
        if written.provider_id.as_deref() != Some(provider_id.as_str()) {
            tracing::info!(%provider_id, "Setting the providerID");
            let patch = json!({ "spec": { "providerID": provider_id } });
            let spec_written =
                write_spec(context, api, *dev_machine, patch, written.base.as_deref()).await?;
            conditions::observe(&mut status.conditions, spec_written.metadata.generation);
            written.base = spec_written.resource_version();
        }
        status.addresses = vm.addresses.clone();
        status.failure_domain = machine.spec.failure_domain.clone();
        provisioned_now = status.initialization.provisioned != Some(true);
        status.initialization.provisioned = Some(true);
    }
    write_status(
        context,
        api,
        *dev_machine,
        dev_machine.status.as_ref(),
        &status,
        written.base.as_deref(),
    )
    .await?;
    // A failure is a Warning every time it starts.
    if boot_failed_now {
        let name = &key.name;
        context
            .event(
                *dev_machine,
                EventType::Warning,
                reasons::BOOT_FAILED,
                format!("The simulated VM {name} does not boot: the DevMachine has the {FAIL_BOOT} annotation"),
            )
            .await;
    }
    if provisioned_now {
        // No Event: upstream's provider records none, the conditions and
        // `status.initialization.provisioned` say it, and an Event is a write per Machine.
        tracing::info!(cluster = %key.cluster, "The simulated VM is up");
    }
    Ok(())
}

/// Adds the DevMachine's finalizer, with a merge patch conditional on the copy's
/// resourceVersion so that a concurrent change of the finalizers is not lost, and with
/// `spec.providerID` when `with_provider_id`. Returns what the API server stored.
async fn add_finalizer(
    context: &Context,
    api: &Api<DevMachine>,
    dev_machine: &DevMachine,
    with_provider_id: bool,
) -> Result<DevMachine, Error> {
    let mut finalizers = dev_machine.finalizers().to_vec();
    finalizers.push(finalizers::DEV_MACHINE.to_string());
    let mut patch = json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": dev_machine.resource_version(),
        }
    });
    if with_provider_id {
        let provider_id = provider_id(&dev_machine.name_any());
        tracing::info!(%provider_id, "Adding the finalizer and setting the providerID");
        patch["spec"] = json!({ "providerID": provider_id });
    }
    let base = dev_machine.resource_version();
    write_spec(context, api, dev_machine, patch, base.as_deref()).await
}

/// An object from a watch cache (the cache's own copy, not a clone), or from the API server
/// when the cache does not have it (yet): a DevMachine can name its Machine before the Machine
/// watch shows it.
async fn cached_or_get<K>(
    cache: &Store<K>,
    api: &Api<K>,
    name: &str,
) -> Result<Option<Arc<K>>, Error>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let namespace = api.namespace().unwrap_or_default();
    match cache.get(&ObjectRef::new(name).within(namespace)) {
        Some(object) => Ok(Some(object)),
        None => Ok(get_opt(api, name).await?.map(Arc::new)),
    }
}

async fn delete_vm(context: &Context, key: &VmKey) -> Result<(), Error> {
    tracing::info!(vm = %key, "Deleting the simulated VM and its Node");
    context.cloud.delete_vm(key).await.map_err(Error::Cloud)
}

/// Whether the Cluster's control plane is initialized (upstream checks the
/// ControlPlaneInitialized condition; its status field says the same).
fn control_plane_initialized(cluster: &Cluster) -> bool {
    let Some(status) = cluster.status.as_ref() else {
        return false;
    };
    status.initialization.control_plane_initialized == Some(true)
        || status.conditions.iter().any(|condition| {
            condition.type_ == corral_api::conditions::cluster::CONTROL_PLANE_INITIALIZED
                && condition.status == "True"
        })
}

fn annotation_is_true(dev_machine: &DevMachine, annotation: &str) -> bool {
    dev_machine
        .annotations()
        .get(annotation)
        .is_some_and(|value| value.eq_ignore_ascii_case("true"))
}

fn has_reason(status: &DevMachineStatus, type_: &str, reason: &str) -> bool {
    status
        .conditions
        .iter()
        .any(|condition| condition.type_ == type_ && condition.reason == reason)
}

/// The step timings of the in-memory backend; steps left out take no time.
fn compute_timings(
    in_memory: &InMemoryMachineBackendSpec,
) -> Result<StepTimings, InvalidProvisioning> {
    let timing = |step: &Option<crate::api::InMemoryStepSpec>, field: &str| match step
        .as_ref()
        .and_then(|step| step.provisioning.as_ref())
    {
        None => Ok(StepTiming::default()),
        Some(settings) => settings
            .parse()
            .map(|(startup, jitter)| StepTiming { startup, jitter })
            .map_err(|InvalidProvisioning(message)| {
                InvalidProvisioning(format!(
                    "spec.backend.inMemory.{field}.provisioning: {message}"
                ))
            }),
    };
    Ok(StepTimings {
        vm: timing(&in_memory.vm, "vm")?,
        node: timing(&in_memory.node, "node")?,
        etcd: timing(&in_memory.etcd, "etcd")?,
        api_server: timing(&in_memory.api_server, "apiServer")?,
    })
}

/// Sets the step conditions given (the others keep their state; those of a control plane
/// machine are not set on a worker) and the Ready summary of all of them.
fn set_step_conditions(status: &mut DevMachineStatus, steps: &[Desired], generation: Option<i64>) {
    for step in steps {
        conditions::set(&mut status.conditions, step, generation);
    }
    let summary = conditions::summary(
        &status.conditions,
        &[
            VM_PROVISIONED,
            NODE_PROVISIONED,
            ETCD_PROVISIONED,
            API_SERVER_PROVISIONED,
        ],
    );
    conditions::set(&mut status.conditions, &summary, generation);
}

/// Writes the status when it changed.
async fn patch_status(scope: &Scope<'_>, status: &DevMachineStatus) -> Result<(), Error> {
    let Scope {
        context,
        api,
        dev_machine,
    } = scope;
    write_status(
        context,
        api,
        *dev_machine,
        dev_machine.status.as_ref(),
        status,
        dev_machine.resource_version().as_deref(),
    )
    .await
    .map(|_| ())
}
