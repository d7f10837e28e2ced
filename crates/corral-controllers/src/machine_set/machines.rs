//! What a MachineSet does to its Machines (upstream `machineset_controller.go`): the templates
//! it clones (`reconcileExternalTemplateReference`), adoption of orphans
//! (`getAndAdoptMachinesForMachineSet`), remediation (`reconcileUnhealthyMachines`), the fields
//! propagated in place (`syncMachines`), scaling (`syncReplicas`, `createMachines`,
//! `deleteMachines`, `cleanupOrphanedBootstrapConfigsInfraMachines`) and deletion
//! (`reconcileDelete`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use corral_api::annotations::{DISABLE_MACHINE_CREATE, REMEDIATE_MACHINE, REVISION};
use corral_api::conditions::machine::{HEALTH_CHECK_SUCCEEDED, OWNER_REMEDIATED};
use corral_api::conditions::machine_set::reason as remediation_reason;
use corral_api::labels::{MACHINE_DEPLOYMENT_NAME, MACHINE_SET_NAME};
use corral_api::{
    ConditionStatus, ContractVersionedObjectReference, DEFAULT_NODE_DELETION_TIMEOUT_SECONDS,
    Machine, MachineSetDeletionOrder,
};
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::core::Selector;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;

use super::in_sync::{Checked, Inputs};
use super::status::{self, is_unhealthy_and_owner_remediated, list_to_string, machine_conditions};
use super::templates::{self, TemplateFailure};
use super::{
    Error, MachineSetController, Scope, controller_of, deletion_order, is_deployment_child,
};
use crate::machine_deployment::int_or_percent::{display, scaled_value};
use corral_runtime::conditions::{self, NewCondition};
use corral_runtime::error_chain;
use corral_runtime::external::{
    CreateFromTemplate, ExternalObject, ResolvedKind, generate_from_template,
};
use corral_runtime::naming::{self, random_suffix};
use corral_runtime::patch::{Part, object_patch, patch_if_changed};

/// How many writes of one reconcile are in flight at once.
const MAX_IN_FLIGHT: usize = 16;

/// The field manager of the MachineSet's writes to its Machines (upstream's
/// `machineSetManagerName`), so that the Machines' managed fields say which labels and
/// annotations came from the MachineSet. Named in `corral-api`, since the shared Machine cache
/// keeps this manager's entries.
pub(crate) const MACHINE_SET_MANAGER: &str = corral_api::field_managers::MACHINE_SET;

/// Whether a failed write lost a race or found its object gone: the watch event of whatever
/// happened brings the next reconcile, so it is not an error.
fn is_race(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.is_conflict() || status.is_not_found())
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.is_not_found())
}

/// Whether this MachineSet is its MachineDeployment's current one (upstream
/// `isCurrentMachineSet`): both carry the same revision.
fn is_current(scope: &Scope) -> bool {
    let Some(machine_deployment) = &scope.machine_deployment else {
        return false;
    };
    machine_deployment.annotations().get(REVISION) == scope.machine_set.annotations().get(REVISION)
}

/// The templates the MachineSet clones (upstream `reconcileInfrastructure`,
/// `reconcileBootstrapConfig`, `reconcileExternalTemplateReference`): they must exist, and get
/// the Cluster as an owner. What is missing goes to the blockers of ScalingUp; an old
/// MachineSet of a MachineDeployment, or one being deleted, does without.
pub(super) async fn reconcile_templates(
    controller: &MachineSetController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let (blockers, failure) = templates::check_templates(
        controller.ctx.external(),
        &scope.machine_set.spec.template.spec,
        &scope.namespace(),
        &scope.cluster,
    )
    .await;
    let tolerate_missing = scope.machine_set.metadata.deletion_timestamp.is_some()
        || (is_deployment_child(&scope.machine_set) && !is_current(scope));
    if tolerate_missing {
        return Ok(());
    }
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

/// Finds the Machines of the MachineSet and makes it the controller of those without one
/// (upstream `getAndAdoptMachinesForMachineSet`, `adoptOrphan`). A Machine that cannot be
/// adopted is left out, with a Warning event.
pub(super) async fn adopt_machines(controller: &MachineSetController, scope: &mut Scope) {
    let candidates = controller.candidate_machines(&scope.machine_set, &scope.selector);
    let api: Api<Machine> = Api::namespaced(controller.ctx.client().clone(), &scope.namespace());
    let owner = scope.controller_reference();
    let mut machines = Vec::with_capacity(candidates.len());
    let mut adopted_names: Vec<String> = Vec::new();
    for machine in candidates {
        if controller_of(machine.owner_references()).is_some() {
            machines.push(machine);
            continue;
        }
        let name = machine.name_any();
        let mut adopted = (*machine).clone();
        adopted
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(owner.clone());
        tracing::info!(machine = %name, "Adopting Machine {name}");
        match patch_if_changed(&api, &machine, &adopted, Part::Main).await {
            Ok(written) => {
                adopted_names.push(name);
                machines.push(Arc::new(written.unwrap_or(adopted)));
            }
            Err(error) => {
                tracing::warn!(machine = %name, error = %error_chain(&error), "Failed to adopt Machine");
                scope.event(
                    EventType::Warning,
                    "FailedAdopt",
                    format!("Failed to adopt Machine {name:?}: {}", error_chain(&error)),
                );
            }
        }
    }
    if !adopted_names.is_empty() {
        let names: Vec<&str> = adopted_names.iter().map(String::as_str).collect();
        let noun = if names.len() == 1 {
            "Machine"
        } else {
            "Machines"
        };
        scope.event(
            EventType::Normal,
            "SuccessfulAdopt",
            format!("Adopted {noun} {}", list_to_string(&names, 3)),
        );
    }
    scope.machines = machines;
}

/// Deletes every Machine, then lets the MachineSet go (upstream `reconcileDelete`).
pub(super) async fn reconcile_delete(
    controller: &MachineSetController,
    scope: &mut Scope,
) -> Result<(), Error> {
    if scope.machines.is_empty() {
        let object_ref = ObjectRef::from_obj(scope.before.as_ref());
        controller.expectations.forget(&object_ref);
        if let Some(uid) = scope.machine_set.uid() {
            controller
                .orphans_checked
                .lock()
                .expect("orphans lock")
                .remove(&uid);
        }
        scope
            .machine_set
            .finalizers_mut()
            .retain(|f| f != corral_api::finalizers::MACHINE_SET);
        return Ok(());
    }
    let victims: Vec<Arc<Machine>> = scope
        .machines
        .iter()
        .filter(|machine| machine.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect();
    let names: Vec<String> = scope.machines.iter().map(|m| m.name_any()).collect();
    tracing::info!(machines = ?names, "Waiting for Machines to be deleted");
    delete_machines(controller, scope, &victims, "MachineSet deleted").await
}

/// Deletes Machines, several at once, with their uid as a precondition; records the
/// deletions for the expectations and one event.
async fn delete_machines(
    controller: &MachineSetController,
    scope: &mut Scope,
    victims: &[Arc<Machine>],
    why: &str,
) -> Result<(), Error> {
    if victims.is_empty() {
        return Ok(());
    }
    let api: Api<Machine> = Api::namespaced(controller.ctx.client().clone(), &scope.namespace());
    let object_ref = ObjectRef::from_obj(scope.before.as_ref());
    let requests: Vec<(String, DeleteParams)> = victims
        .iter()
        .map(|machine| {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: machine.uid(),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            (machine.name_any(), params)
        })
        .collect();
    let results: Vec<(String, Result<(), kube::Error>)> = futures::stream::iter(requests)
        .map(|(name, params)| {
            let api = api.clone();
            let why = why.to_owned();
            async move {
                tracing::info!(machine = %name, "Deleting Machine {name} ({why})");
                let result = match api.delete(&name, &params).await {
                    Ok(_) => Ok(()),
                    Err(error) if is_not_found(&error) => Ok(()),
                    Err(error) => Err(error),
                };
                (name, result)
            }
        })
        .buffer_unordered(MAX_IN_FLIGHT)
        .collect()
        .await;
    let mut deleted: Vec<String> = Vec::new();
    let mut first_error = None;
    for (name, result) in results {
        match result {
            Ok(()) => {
                controller.expectations.deleted(&object_ref, &name);
                deleted.push(name);
            }
            Err(source) => {
                scope.event(
                    EventType::Warning,
                    "FailedDelete",
                    format!(
                        "Failed to delete Machine {name:?}: {}",
                        error_chain(&source)
                    ),
                );
                first_error.get_or_insert(Error::DeleteMachine {
                    machine: name,
                    source,
                });
            }
        }
    }
    if !deleted.is_empty() {
        deleted.sort();
        let names: Vec<&str> = deleted.iter().map(String::as_str).collect();
        let noun = if names.len() == 1 {
            "Machine"
        } else {
            "Machines"
        };
        scope.event(
            EventType::Normal,
            "SuccessfulDelete",
            format!("Deleted {noun} {} ({why})", list_to_string(&names, 3)),
        );
    }
    first_error.map_or(Ok(()), Err)
}

/// Writes a Machine's OwnerRemediated condition, keeping the Machine in the scope up to date.
async fn set_owner_remediated(
    api: &Api<Machine>,
    scope: &mut Scope,
    index: usize,
    condition: Option<NewCondition>,
) -> Result<(), Error> {
    let machine = scope.machines[index].clone();
    let mut after = (*machine).clone();
    let generation = after.metadata.generation;
    let status = after.status.get_or_insert_with(Default::default);
    match condition {
        Some(condition) => {
            conditions::set(&mut status.conditions, condition, generation, &scope.now)
        }
        None => conditions::remove(&mut status.conditions, OWNER_REMEDIATED),
    }
    match patch_if_changed(api, &machine, &after, Part::Status).await {
        Ok(written) => {
            scope.machines[index] = Arc::new(written.unwrap_or(after));
            Ok(())
        }
        Err(error) if is_race(&error) => Ok(()),
        Err(source) => Err(Error::PatchMachine {
            machine: machine.name_any(),
            source,
        }),
    }
}

/// Upstream `sortMachinesToRemediate`: Machines with the remediate-machine annotation first,
/// then the newest (most likely failing to come up, and hosting nothing), then by name.
fn sort_machines_to_remediate(machines: &mut [Arc<Machine>]) {
    machines.sort_by(|a, b| {
        let annotated = |m: &Machine| m.annotations().contains_key(REMEDIATE_MACHINE);
        annotated(b)
            .cmp(&annotated(a))
            .then_with(|| {
                b.metadata
                    .creation_timestamp
                    .cmp(&a.metadata.creation_timestamp)
            })
            .then_with(|| a.name_any().cmp(&b.name_any()))
    });
}

/// Replaces the Machines a MachineHealthCheck asked their owner to remediate (upstream
/// `reconcileUnhealthyMachines`): healthy again, their OwnerRemediated condition goes; an old
/// MachineSet of a MachineDeployment leaves them to the rollout; otherwise, within the
/// MachineDeployment's `remediation.maxInFlight` (counting remediations still deleting), the
/// newest are marked `MachineDeleting` and deleted, and the rest deferred. Their replacements
/// come from scaling up once they are gone.
pub(super) async fn reconcile_unhealthy_machines(
    controller: &MachineSetController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let api: Api<Machine> = Api::namespaced(controller.ctx.client().clone(), &scope.namespace());
    let mut result = Ok(());
    for index in 0..scope.machines.len() {
        let machine = &scope.machines[index];
        if machine.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let machine_conditions = machine_conditions(machine);
        let healthy_again = conditions::is_true(machine_conditions, HEALTH_CHECK_SUCCEEDED)
            && conditions::get(machine_conditions, OWNER_REMEDIATED)
                .is_some_and(|c| c.status == "False");
        if healthy_again && let Err(error) = set_owner_remediated(&api, scope, index, None).await {
            result = result.and(Err(error));
        }
    }
    result?;

    let indices: Vec<usize> = (0..scope.machines.len())
        .filter(|&index| {
            let machine = &scope.machines[index];
            machine.metadata.deletion_timestamp.is_none()
                && is_unhealthy_and_owner_remediated(machine)
        })
        .collect();
    if indices.is_empty() {
        return Ok(());
    }

    let mut max_in_flight = i64::MAX;
    let mut max_in_flight_text = String::new();
    if is_deployment_child(&scope.machine_set) {
        if !is_current(scope) {
            let condition = NewCondition::new(
                OWNER_REMEDIATED,
                ConditionStatus::False,
                remediation_reason::CANNOT_BE_REMEDIATED,
            )
            .message("Machine won't be remediated because it is pending removal due to rollout");
            for index in indices {
                set_owner_remediated(&api, scope, index, Some(condition.clone())).await?;
            }
            return Ok(());
        }
        let machine_deployment = scope.machine_deployment.clone();
        if let Some(limit) = machine_deployment
            .as_ref()
            .and_then(|md| md.spec.remediation.max_in_flight.as_ref())
        {
            let replicas = machine_deployment
                .as_ref()
                .and_then(|md| md.spec.replicas)
                .unwrap_or(1);
            max_in_flight =
                i64::from(scaled_value(limit, replicas, true).map_err(Error::ResolveMaxInFlight)?);
            max_in_flight_text = display(limit);
        }
    }
    let in_flight = scope
        .machines
        .iter()
        .filter(|machine| machine.metadata.deletion_timestamp.is_some())
        .filter(|machine| {
            conditions::get(machine_conditions(machine), OWNER_REMEDIATED).is_some_and(|c| {
                c.status == "False" && c.reason == remediation_reason::MACHINE_DELETING
            })
        })
        .count();
    max_in_flight = max_in_flight.saturating_sub(in_flight as i64);
    let deferred = NewCondition::new(
        OWNER_REMEDIATED,
        ConditionStatus::False,
        remediation_reason::REMEDIATION_DEFERRED,
    )
    .message(format!(
        "Waiting because there are already too many remediations in progress (spec.remediation.maxInFlight is {max_in_flight_text})"
    ));
    let mut ordered: Vec<Arc<Machine>> =
        indices.iter().map(|&i| scope.machines[i].clone()).collect();
    sort_machines_to_remediate(&mut ordered);
    let take = if max_in_flight <= 0 {
        0
    } else {
        usize::try_from(max_in_flight)
            .unwrap_or(usize::MAX)
            .min(ordered.len())
    };
    let index_of = |scope: &Scope, name: &str| {
        scope
            .machines
            .iter()
            .position(|machine| machine.name_any() == name)
    };
    for machine in &ordered[take..] {
        if let Some(index) = index_of(scope, &machine.name_any()) {
            set_owner_remediated(&api, scope, index, Some(deferred.clone())).await?;
        }
    }
    if take == 0 {
        tracing::debug!("Remediation is deferred: too many remediations in flight");
        return Ok(());
    }
    // The condition goes on before the deletion, so that a reconcile interrupted between the
    // two finds it and finishes the job.
    let deleting = NewCondition::new(
        OWNER_REMEDIATED,
        ConditionStatus::False,
        remediation_reason::MACHINE_DELETING,
    )
    .message("Machine is deleting");
    let mut victims = Vec::new();
    for machine in &ordered[..take] {
        if let Some(index) = index_of(scope, &machine.name_any()) {
            set_owner_remediated(&api, scope, index, Some(deleting.clone())).await?;
            victims.push(scope.machines[index].clone());
        }
    }
    delete_machines(controller, scope, &victims, "remediating unhealthy Machine").await
}

/// The labels of the MachineSet's Machines (upstream `machineLabelsFromMachineSet`): the
/// template's, the set-name label, and the deployment-name label of a MachineDeployment's
/// MachineSet.
fn machine_labels(scope: &Scope) -> BTreeMap<String, String> {
    let machine_set = &scope.machine_set;
    let mut labels = machine_set.spec.template.metadata.labels.clone();
    labels.insert(
        MACHINE_SET_NAME.to_owned(),
        naming::format_label_value(&machine_set.name_any()),
    );
    if let Some(name) = machine_set.labels().get(MACHINE_DEPLOYMENT_NAME) {
        labels.insert(MACHINE_DEPLOYMENT_NAME.to_owned(), name.clone());
    }
    labels
}

/// The Machine as the MachineSet wants it (upstream `computeDesiredMachine` for an existing
/// Machine, and `syncMachines`): its labels and annotations added, the fields that change in
/// place copied (for a Machine being deleted, only those that affect its teardown).
fn desired_machine(scope: &Scope, machine: &Machine, labels: &BTreeMap<String, String>) -> Machine {
    let template = &scope.machine_set.spec.template;
    let mut desired = machine.clone();
    if desired.metadata.deletion_timestamp.is_none() {
        let (stale_labels, stale_annotations) =
            stale_propagated(machine, labels, &template.metadata.annotations);
        for key in stale_labels {
            desired.labels_mut().remove(&key);
        }
        for key in stale_annotations {
            desired.annotations_mut().remove(&key);
        }
        desired.labels_mut().extend(labels.clone());
        desired
            .annotations_mut()
            .extend(template.metadata.annotations.clone());
    }
    let spec = &template.spec;
    desired.spec.readiness_gates = spec.readiness_gates.clone();
    desired.spec.deletion.node_drain_timeout_seconds = spec.deletion.node_drain_timeout_seconds;
    desired.spec.deletion.node_volume_detach_timeout_seconds =
        spec.deletion.node_volume_detach_timeout_seconds;
    // The Machine's schema defaults it; defaulting here too avoids a write the server undoes.
    desired.spec.deletion.node_deletion_timeout_seconds = Some(
        spec.deletion
            .node_deletion_timeout_seconds
            .unwrap_or(DEFAULT_NODE_DELETION_TIMEOUT_SECONDS),
    );
    desired.spec.min_ready_seconds = spec.min_ready_seconds;
    desired.spec.taints = spec.taints.clone();
    desired
}

/// Whether a Machine already has what [`desired_machine`] would give it.
fn in_sync(scope: &Scope, machine: &Machine, labels: &BTreeMap<String, String>) -> bool {
    let template = &scope.machine_set.spec.template;
    let contains = |have: &BTreeMap<String, String>, want: &BTreeMap<String, String>| {
        want.iter().all(|(key, value)| have.get(key) == Some(value))
    };
    if machine.metadata.deletion_timestamp.is_none()
        && !(contains(machine.labels(), labels)
            && contains(machine.annotations(), &template.metadata.annotations)
            && !has_stale_propagated(machine, labels, &template.metadata.annotations))
    {
        return false;
    }
    let (have, want) = (&machine.spec, &template.spec);
    let deletion_in_sync = have.deletion.node_drain_timeout_seconds
        == want.deletion.node_drain_timeout_seconds
        && have.deletion.node_volume_detach_timeout_seconds
            == want.deletion.node_volume_detach_timeout_seconds
        && have.deletion.node_deletion_timeout_seconds
            == Some(
                want.deletion
                    .node_deletion_timeout_seconds
                    .unwrap_or(DEFAULT_NODE_DELETION_TIMEOUT_SECONDS),
            );
    deletion_in_sync
        && have.readiness_gates == want.readiness_gates
        && have.min_ready_seconds == want.min_ready_seconds
        && have.taints == want.taints
}

/// Propagates the fields that change in place to the Machines (upstream `syncMachines`). A
/// write that loses a race is left to the reconcile the race's event brings. The Machines'
/// UpToDate condition is the Machine controller's (`machine::up_to_date`), as upstream moved
/// it there: written here too, it lost write races to the Machine controller on every new
/// Machine.
pub(super) async fn sync_machines(
    controller: &MachineSetController,
    scope: &mut Scope,
) -> Result<(), Error> {
    // Nothing announces `spec.rollout.after` passing, which makes the Machines out of date.
    let after = scope
        .machine_deployment
        .as_ref()
        .and_then(|md| md.spec.rollout.after.as_ref())
        .filter(|after| after.0 > scope.now.0)
        .and_then(|after| std::time::Duration::try_from(after.0 - scope.now.0).ok());
    if let Some(wait) = after {
        scope.requeue_after = corral_runtime::sooner(
            scope.requeue_after,
            Some(wait + std::time::Duration::from_secs(1)),
        );
    }
    let labels = machine_labels(scope);
    let key = ObjectRef::from_obj(scope.before.as_ref());
    let inputs = Inputs::new(&scope.machine_set, &labels);
    let known = controller.in_sync.take(&key, inputs.clone());
    let mut checked = Checked::new(inputs);
    let mut writes: Vec<(usize, Machine)> = Vec::new();
    for (index, machine) in scope.machines.iter().enumerate() {
        // Most Machines are in sync most of the time, and unchanged since the last check;
        // checking is much cheaper than diffing, and remembering cheaper than checking.
        if known.contains(machine) || in_sync(scope, machine, &labels) {
            checked.insert(machine);
            continue;
        }
        let desired = desired_machine(scope, machine, &labels);
        let changed = object_patch(machine.as_ref(), &desired, Part::Main).is_some()
            || object_patch(machine.as_ref(), &desired, Part::Status).is_some();
        if changed {
            writes.push((index, desired));
        }
    }
    drop(known);
    controller.in_sync.put(key, checked);
    if writes.is_empty() {
        return Ok(());
    }
    let api: Api<Machine> = Api::namespaced(controller.ctx.client().clone(), &scope.namespace());
    let machines = &scope.machines;
    let results: Vec<(usize, Result<Option<Machine>, kube::Error>)> = futures::stream::iter(writes)
        .map(|(index, desired)| {
            let api = api.clone();
            let before = machines[index].clone();
            async move {
                let result = write_machine(&api, &before, &desired).await;
                (index, result)
            }
        })
        .buffer_unordered(MAX_IN_FLIGHT)
        .collect()
        .await;
    let mut first_error = None;
    for (index, result) in results {
        match result {
            Ok(Some(written)) => scope.machines[index] = Arc::new(written),
            Ok(None) => {}
            Err(error) if is_race(&error) => {}
            Err(source) => {
                first_error.get_or_insert(Error::PatchMachine {
                    machine: scope.machines[index].name_any(),
                    source,
                });
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Writes a Machine's metadata and spec, then its status, each when changed; returns the
/// Machine as last written.
async fn write_machine(
    api: &Api<Machine>,
    before: &Machine,
    desired: &Machine,
) -> Result<Option<Machine>, kube::Error> {
    let Some(patch) = object_patch(before, desired, Part::Main) else {
        return Ok(None);
    };
    let params = PatchParams {
        field_manager: Some(MACHINE_SET_MANAGER.to_owned()),
        ..Default::default()
    };
    api.patch(&before.name_any(), &params, &Patch::Merge(&patch))
        .await
        .map(Some)
}

/// The keys of a Machine's labels (`f:labels`) or annotations (`f:annotations`) that the
/// MachineSet wrote, as the Machine's managed fields record them.
fn propagated_keys<'a>(machine: &'a Machine, field: &'a str) -> impl Iterator<Item = &'a str> {
    machine
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.manager.as_deref() == Some(MACHINE_SET_MANAGER))
        .filter_map(|entry| entry.fields_v1.as_ref())
        .filter_map(move |fields| fields.0.get("f:metadata")?.get(field)?.as_object())
        .flat_map(|keys| keys.keys())
        .filter_map(|key| key.strip_prefix("f:"))
}

/// The labels (`f:labels`) or annotations (`f:annotations`) the MachineSet wrote on a Machine
/// that `want` no longer has.
fn stale_keys<'a>(
    machine: &'a Machine,
    field: &'a str,
    have: &'a BTreeMap<String, String>,
    want: &'a BTreeMap<String, String>,
) -> impl Iterator<Item = &'a str> {
    propagated_keys(machine, field)
        .filter(|key| have.contains_key(*key) && !want.contains_key(*key))
}

/// The labels and annotations the MachineSet wrote on a Machine that its template no longer
/// has: upstream applies them with server-side apply, which removes what it stops applying.
/// Labels and annotations others wrote stay.
fn stale_propagated(
    machine: &Machine,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>) {
    (
        stale_keys(machine, "f:labels", machine.labels(), labels)
            .map(str::to_owned)
            .collect(),
        stale_keys(machine, "f:annotations", machine.annotations(), annotations)
            .map(str::to_owned)
            .collect(),
    )
}

/// Whether [`stale_propagated`] would find anything, without collecting it.
fn has_stale_propagated(
    machine: &Machine,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
) -> bool {
    stale_keys(machine, "f:labels", machine.labels(), labels)
        .next()
        .is_some()
        || stale_keys(machine, "f:annotations", machine.annotations(), annotations)
            .next()
            .is_some()
}

/// Creates or deletes Machines until there are `spec.replicas` (upstream `syncReplicas`),
/// after cleaning up provider objects an interrupted creation left without a Machine.
pub(super) async fn sync_replicas(
    controller: &MachineSetController,
    scope: &mut Scope,
) -> Result<(), Error> {
    cleanup_orphans(controller, scope).await?;
    let replicas = status::desired_replicas(&scope.machine_set);
    if replicas < 0 {
        scope.blockers.push(format!(
            "spec.replicas is {replicas}; it must not be negative"
        ));
        return Err(Error::NegativeReplicas { replicas });
    }
    let current = scope.machines.len();
    let wanted = replicas as usize;
    if current < wanted {
        let disabled = scope
            .machine_set
            .annotations()
            .get(DISABLE_MACHINE_CREATE)
            .is_some_and(|value| value == "true");
        if disabled {
            tracing::debug!("Automatic creation of new Machines is disabled for the MachineSet");
            return Ok(());
        }
        if !scope.blockers.is_empty() {
            // What blocks creation is already the reconcile's error.
            return Ok(());
        }
        tracing::info!(
            "Scaling up to {replicas} replicas by creating {} Machines",
            wanted - current
        );
        return create_machines(controller, scope, wanted - current).await;
    }
    if current > wanted {
        let order = scope
            .machine_set
            .spec
            .deletion
            .order
            .unwrap_or(MachineSetDeletionOrder::Random);
        let victims: Vec<Arc<Machine>> = {
            let chosen = deletion_order::compute_machines_to_delete(
                scope.machines.iter().map(AsRef::as_ref),
                current - wanted,
                order,
                scope.now.0,
            );
            let chosen: HashSet<String> = chosen.iter().map(|m| m.name_any()).collect();
            scope
                .machines
                .iter()
                .filter(|m| chosen.contains(&m.name_any()))
                .filter(|m| m.metadata.deletion_timestamp.is_none())
                .cloned()
                .collect()
        };
        tracing::info!(
            ?order,
            "Scaling down to {replicas} replicas by deleting {} Machines",
            current - wanted
        );
        return delete_machines(controller, scope, &victims, "scale down").await;
    }
    Ok(())
}

/// A template to clone, with the kind the clones have.
struct TemplateSource {
    reference: ContractVersionedObjectReference,
    template: ExternalObject,
    target: ResolvedKind,
}

async fn template_source(
    controller: &MachineSetController,
    reference: &ContractVersionedObjectReference,
    namespace: &str,
) -> Result<TemplateSource, Error> {
    let objects = controller.ctx.external();
    let error = |source| Error::ReconcileTemplate {
        kind: reference.kind.clone(),
        name: reference.name.clone(),
        source,
    };
    let kind = reference
        .kind
        .strip_suffix("Template")
        .filter(|kind| !kind.is_empty())
        .ok_or_else(|| Error::ReadTemplate {
            kind: reference.kind.clone(),
            name: reference.name.clone(),
        })?;
    let template = objects
        .get(reference, namespace)
        .await
        .map_err(error)?
        .ok_or_else(|| Error::FindTemplate {
            kind: reference.kind.clone(),
            name: reference.name.clone(),
        })?;
    let target = objects
        .resolve(&reference.api_group, kind)
        .await
        .map_err(error)?;
    Ok(TemplateSource {
        reference: reference.clone(),
        template,
        target,
    })
}

/// What every new Machine of one scale-up shares.
struct MachineFactory<'a> {
    client: kube::Client,
    namespace: String,
    machine_set_name: String,
    cluster_name: String,
    naming_template: Option<String>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    controller_reference: OwnerReference,
    scope: &'a Scope,
    infrastructure: TemplateSource,
    bootstrap: Option<TemplateSource>,
}

impl MachineFactory<'_> {
    /// Clones one provider object from its template, named `name`; returns a reference to it.
    async fn clone_template(
        &self,
        source: &TemplateSource,
        name: &str,
    ) -> Result<ContractVersionedObjectReference, Error> {
        let owner = OwnerReference {
            controller: None,
            block_owner_deletion: None,
            ..self.controller_reference.clone()
        };
        let request = CreateFromTemplate {
            template: &source.reference,
            namespace: &self.namespace,
            name: name.to_owned(),
            cluster_name: &self.cluster_name,
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
            owner: Some(owner),
        };
        let mut object = generate_from_template(&source.template, &request).ok_or_else(|| {
            Error::ReadTemplate {
                kind: source.reference.kind.clone(),
                name: source.reference.name.clone(),
            }
        })?;
        object.types = Some(kube::api::TypeMeta {
            api_version: source.target.resource.api_version.clone(),
            kind: source.target.resource.kind.clone(),
        });
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &source.target.resource,
        );
        api.create(&PostParams::default(), &object)
            .await
            .map_err(|source_error| Error::CloneTemplate {
                kind: source.target.resource.kind.clone(),
                name: name.to_owned(),
                source: source_error,
            })?;
        Ok(ContractVersionedObjectReference {
            api_group: source.reference.api_group.clone(),
            kind: source.target.resource.kind.clone(),
            name: name.to_owned(),
        })
    }

    /// Best effort: removes a provider object whose Machine could not be created.
    async fn remove(&self, source: &TemplateSource, name: &str) {
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &source.target.resource,
        );
        if let Err(error) = api.delete(name, &DeleteParams::default()).await
            && !is_not_found(&error)
        {
            tracing::warn!(
                kind = %source.target.resource.kind,
                name,
                error = %error_chain(&error),
                "Failed to clean up after a failed Machine creation"
            );
        }
    }

    /// Creates one Machine with its bootstrap config and infrastructure machine, in that order
    /// (upstream `createMachines`); undoes what it created when a later step fails.
    async fn create(&self) -> Result<String, Error> {
        let name = naming::machine_name(
            self.naming_template.as_deref(),
            &self.cluster_name,
            &self.machine_set_name,
            &mut random_suffix,
        )
        .map_err(Error::NameMachine)?;
        let template = &self.scope.machine_set.spec.template;
        let mut spec = template.spec.clone();
        spec.cluster_name = self.cluster_name.clone();
        spec.provider_id = None;
        let bootstrap_ref = match &self.bootstrap {
            Some(source) => Some(self.clone_template(source, &name).await?),
            None => None,
        };
        spec.bootstrap.config_ref = bootstrap_ref;
        match self.clone_template(&self.infrastructure, &name).await {
            Ok(reference) => spec.infrastructure_ref = reference,
            Err(error) => {
                if let Some(source) = &self.bootstrap {
                    self.remove(source, &name).await;
                }
                return Err(error);
            }
        }
        let machine = Machine {
            metadata: kube::api::ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(self.namespace.clone()),
                labels: Some(self.labels.clone()),
                annotations: Some(self.annotations.clone()).filter(|a| !a.is_empty()),
                owner_references: Some(vec![self.controller_reference.clone()]),
                finalizers: Some(vec![corral_api::finalizers::MACHINE.to_owned()]),
                ..Default::default()
            },
            spec,
            status: None,
        };
        let api: Api<Machine> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = PostParams {
            field_manager: Some(MACHINE_SET_MANAGER.to_owned()),
            ..Default::default()
        };
        if let Err(source) = api.create(&params, &machine).await {
            self.remove(&self.infrastructure, &name).await;
            if let Some(bootstrap) = &self.bootstrap {
                self.remove(bootstrap, &name).await;
            }
            return Err(Error::CreateMachine {
                machine: name,
                source,
            });
        }
        Ok(name)
    }
}

/// Creates `count` Machines in batches of 1, 2, 4, … (several at once within a batch), so that
/// a broken template costs one failure, not `count`; stops at the first batch with a failure.
async fn create_machines(
    controller: &MachineSetController,
    scope: &mut Scope,
    count: usize,
) -> Result<(), Error> {
    let namespace = scope.namespace();
    let template = scope.machine_set.spec.template.spec.clone();
    let infrastructure =
        template_source(controller, &template.infrastructure_ref, &namespace).await?;
    let bootstrap = match &template.bootstrap.config_ref {
        Some(reference) => Some(template_source(controller, reference, &namespace).await?),
        None => None,
    };
    let object_ref = ObjectRef::from_obj(scope.before.as_ref());
    let mut created: Vec<String> = Vec::new();
    let mut first_error = None;
    {
        let factory = MachineFactory {
            client: controller.ctx.client().clone(),
            namespace,
            machine_set_name: scope.name(),
            cluster_name: scope.machine_set.spec.cluster_name.clone(),
            naming_template: scope.machine_set.spec.machine_naming.template.clone(),
            labels: machine_labels(scope),
            annotations: scope.machine_set.spec.template.metadata.annotations.clone(),
            controller_reference: scope.controller_reference(),
            scope,
            infrastructure,
            bootstrap,
        };
        let mut remaining = count;
        let mut batch = 1;
        while remaining > 0 && first_error.is_none() {
            let size = batch.min(remaining);
            let results: Vec<Result<String, Error>> = futures::stream::iter(0..size)
                .map(|_| factory.create())
                .buffer_unordered(MAX_IN_FLIGHT)
                .collect()
                .await;
            for result in results {
                match result {
                    Ok(name) => {
                        controller.expectations.created(&object_ref, &name);
                        created.push(name);
                    }
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
            }
            remaining -= size;
            batch *= 2;
        }
    }
    if !created.is_empty() {
        created.sort();
        let names: Vec<&str> = created.iter().map(String::as_str).collect();
        let noun = if names.len() == 1 {
            "Machine"
        } else {
            "Machines"
        };
        scope.event(
            EventType::Normal,
            "SuccessfulCreate",
            format!("Created {noun} {}", list_to_string(&names, 3)),
        );
    }
    if let Some(error) = &first_error {
        scope.event(
            EventType::Warning,
            "FailedCreate",
            format!("Failed to create a Machine: {}", error_chain(error)),
        );
    }
    first_error.map_or(Ok(()), Err)
}

/// Deletes bootstrap configs and infrastructure machines the MachineSet created for a
/// Machine that never was (a restart, or a failure, between creating them and the Machine),
/// once per MachineSet per process (upstream
/// `cleanupOrphanedBootstrapConfigsInfraMachines`, which runs on every reconcile). Objects
/// a Machine took over no longer have the MachineSet as owner and are left alone.
async fn cleanup_orphans(
    controller: &MachineSetController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let Some(uid) = scope.machine_set.uid() else {
        return Ok(());
    };
    if controller
        .orphans_checked
        .lock()
        .expect("orphans lock")
        .contains(&uid)
    {
        return Ok(());
    }
    let template = scope.machine_set.spec.template.spec.clone();
    let selector = Selector::try_from(scope.machine_set.spec.selector.clone())
        .map_err(super::Error::ParseSelector)?;
    let mut sources = vec![(template.infrastructure_ref.clone(), true)];
    sources.extend(template.bootstrap.config_ref.clone().map(|r| (r, false)));
    let namespace = scope.namespace();
    for (reference, infrastructure) in sources {
        let Some(kind) = reference.kind.strip_suffix("Template") else {
            continue;
        };
        let resolved = match controller
            .ctx
            .external()
            .resolve(&reference.api_group, kind)
            .await
        {
            Ok(resolved) => resolved,
            // Nothing can have been created of a kind that cannot be resolved.
            Err(_) => continue,
        };
        let referenced: HashSet<String> = scope
            .machines
            .iter()
            .filter_map(|machine| {
                if infrastructure {
                    Some(machine.spec.infrastructure_ref.name.clone())
                } else {
                    machine
                        .spec
                        .bootstrap
                        .config_ref
                        .as_ref()
                        .map(|r| r.name.clone())
                }
            })
            .collect();
        let api: Api<DynamicObject> = Api::namespaced_with(
            controller.ctx.client().clone(),
            &namespace,
            &resolved.resource,
        );
        let cleanup_error = |source| Error::CleanupOrphans {
            kind: kind.to_owned(),
            source,
        };
        // From the kind's cache: it has listed since this process started, so it holds
        // whatever an interrupted creation before it left behind.
        let objects = controller
            .ctx
            .external()
            .list_cached(&resolved, &namespace, &selector)
            .await
            .map_err(cleanup_error)?;
        for object in objects {
            let owned = object
                .owner_references()
                .iter()
                .any(|owner| owner.uid == uid);
            let name = object.name_any();
            if !owned || referenced.contains(&name) || object.metadata.deletion_timestamp.is_some()
            {
                continue;
            }
            tracing::info!(kind, name = %name, "Deleting {kind} {name}, left without a Machine");
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(error) if is_not_found(&error) => {}
                Err(error) => return Err(cleanup_error(error)),
            }
        }
    }
    controller
        .orphans_checked
        .lock()
        .expect("orphans lock")
        .insert(uid);
    Ok(())
}
