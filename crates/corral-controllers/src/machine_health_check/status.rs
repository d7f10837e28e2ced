//! Pure functions that compute what a MachineHealthCheck writes: its own metadata and status
//! (upstream `Reconcile` and `reconcile` in
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_controller.go`), and the conditions
//! it sets on the Machines it checks (`healthCheckTargets` in `machinehealthcheck_targets.go`,
//! `patchUnhealthyTargets` in the controller).
//!
//! A MachineHealthCheck owns `HealthCheckSucceeded` on its Machines. It only ever asks for
//! remediation through `OwnerRemediated` and `ExternallyRemediated`: once False, they belong
//! to whoever remediates (the owning MachineSet or control plane, or the external remediator).

use corral_api::conditions::machine::reason::{
    HEALTH_CHECK_SUCCEEDED as HEALTH_CHECK_SUCCEEDED_REASON, WAITING_FOR_REMEDIATION,
};
use corral_api::conditions::machine::{
    EXTERNALLY_REMEDIATED, HEALTH_CHECK_SUCCEEDED, OWNER_REMEDIATED,
};
use corral_api::conditions::machine_health_check::{REMEDIATION_ALLOWED, reason};
use corral_api::labels::CLUSTER_NAME;
use corral_api::{Cluster, ConditionStatus, Machine, MachineHealthCheck};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::{Resource, ResourceExt};

use super::remediation_allowed::{RemediationAllowance, TargetCounts};
use super::target_health::Health;
use corral_runtime::conditions::{self, NewCondition};

#[cfg(test)]
mod tests;

/// Sets the Paused condition (upstream `paused.EnsurePausedCondition`); returns whether the
/// MachineHealthCheck is paused, by its Cluster's `spec.paused` or its own annotation.
pub fn set_paused_condition(check: &mut MachineHealthCheck, cluster: &Cluster, now: &Time) -> bool {
    let annotated = corral_runtime::has_paused_annotation(check);
    let condition = crate::cluster::status::paused_condition(
        cluster.spec.paused.unwrap_or(false),
        "MachineHealthCheck",
        annotated,
    );
    let paused = condition.is_true();
    set(check, condition, now);
    paused
}

/// Labels the MachineHealthCheck with its Cluster's name and makes the Cluster one of its
/// owners, not its controller (upstream `Reconcile` and `util.EnsureOwnerRef`): the Cluster's
/// deletion takes its health checks along.
pub fn set_cluster_label_and_owner(check: &mut MachineHealthCheck, cluster: &Cluster) {
    let cluster_name = check.spec.cluster_name.clone();
    check
        .labels_mut()
        .insert(CLUSTER_NAME.to_owned(), cluster_name);
    let owner = OwnerReference {
        api_version: Cluster::api_version(&()).into_owned(),
        kind: Cluster::kind(&()).into_owned(),
        name: cluster.name_any(),
        uid: cluster.uid().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    };
    let owners = check.owner_references_mut();
    let same = |existing: &OwnerReference| {
        existing.kind == owner.kind
            && corral_runtime::external::api_group_of(&existing.api_version)
                == corral_runtime::external::api_group_of(&owner.api_version)
            && existing.name == owner.name
    };
    match owners.iter_mut().find(|existing| same(existing)) {
        // Keeps what the user set (controller, blockOwnerDeletion); refreshes the rest, as
        // upstream does after a Cluster was re-created or its API version moved.
        Some(existing) => {
            existing.api_version = owner.api_version;
            existing.uid = owner.uid;
        }
        None => owners.push(owner),
    }
}

/// Writes the targets and how they were judged: `status.targets` (sorted names),
/// `expectedMachines` and `currentHealthy`.
pub fn set_targets(check: &mut MachineHealthCheck, mut names: Vec<String>, counts: TargetCounts) {
    names.sort();
    let status = check.status.get_or_insert_with(Default::default);
    status.targets = names;
    status.expected_machines = Some(counts.expected);
    status.current_healthy = Some(counts.healthy);
}

/// Sets `remediationsAllowed` and the RemediationAllowed condition; returns whether the
/// condition changed, so that a new restriction is told once in an event.
pub fn set_remediation_allowed(
    check: &mut MachineHealthCheck,
    allowance: &RemediationAllowance,
    now: &Time,
) -> bool {
    let before = check
        .status
        .as_ref()
        .and_then(|status| conditions::get(&status.conditions, REMEDIATION_ALLOWED))
        .map(|condition| (condition.status.clone(), condition.message.clone()));
    let condition = if allowance.allowed {
        NewCondition::new(
            REMEDIATION_ALLOWED,
            ConditionStatus::True,
            reason::REMEDIATION_ALLOWED,
        )
    } else {
        NewCondition::new(
            REMEDIATION_ALLOWED,
            ConditionStatus::False,
            reason::TOO_MANY_UNHEALTHY,
        )
        .message(allowance.message.clone().unwrap_or_default())
    };
    let after = (
        condition.status.as_str().to_owned(),
        condition.message.clone(),
    );
    check
        .status
        .get_or_insert_with(Default::default)
        .remediations_allowed = Some(allowance.remediations_allowed);
    set(check, condition, now);
    before != Some(after)
}

/// Sets the Machine's `HealthCheckSucceeded` condition from the verdict: True for a healthy
/// Machine, False with the reason and message for an unhealthy one. A Machine not yet judged
/// keeps the condition it has.
pub fn set_health_check_succeeded_condition(machine: &mut Machine, health: &Health, now: &Time) {
    let condition = match health {
        Health::Healthy => NewCondition::new(
            HEALTH_CHECK_SUCCEEDED,
            ConditionStatus::True,
            HEALTH_CHECK_SUCCEEDED_REASON,
        ),
        Health::Unhealthy { reason, message } => {
            NewCondition::new(HEALTH_CHECK_SUCCEEDED, ConditionStatus::False, reason)
                .message(message.clone())
        }
        Health::Pending { .. } => return,
    };
    set_on_machine(machine, condition, now);
}

/// Asks the Machine's owner to remediate it: `OwnerRemediated` False, WaitingForRemediation,
/// unless a remediation is already under way (the condition is False: the owner is working on
/// it and its reason is the owner's). Returns whether the condition changed.
pub fn mark_owner_remediated(machine: &mut Machine, now: &Time) -> bool {
    let in_progress = machine
        .status
        .as_ref()
        .and_then(|status| conditions::get(&status.conditions, OWNER_REMEDIATED))
        .is_some_and(|condition| condition.status != "True");
    if in_progress {
        return false;
    }
    set_on_machine(
        machine,
        NewCondition::new(
            OWNER_REMEDIATED,
            ConditionStatus::False,
            WAITING_FOR_REMEDIATION,
        )
        .message("Waiting for remediation"),
        now,
    );
    true
}

/// Sets the Machine's `ExternallyRemediated` condition, False: the remediation request exists
/// (WaitingForRemediation) or could not be created (and the reason says why).
pub fn set_externally_remediated_condition(
    machine: &mut Machine,
    reason: &str,
    message: String,
    now: &Time,
) {
    set_on_machine(
        machine,
        NewCondition::new(EXTERNALLY_REMEDIATED, ConditionStatus::False, reason).message(message),
        now,
    );
}

/// Whether the Machine's `HealthCheckSucceeded` condition is False.
pub fn is_marked_unhealthy(machine: &Machine) -> bool {
    machine
        .status
        .as_ref()
        .and_then(|status| conditions::get(&status.conditions, HEALTH_CHECK_SUCCEEDED))
        .is_some_and(|condition| condition.status == "False")
}

fn set(check: &mut MachineHealthCheck, condition: NewCondition, now: &Time) {
    let generation = check.metadata.generation;
    let status = check.status.get_or_insert_with(Default::default);
    conditions::set(&mut status.conditions, condition, generation, now);
}

fn set_on_machine(machine: &mut Machine, condition: NewCondition, now: &Time) {
    let generation = machine.metadata.generation;
    let status = machine.status.get_or_insert_with(Default::default);
    conditions::set(&mut status.conditions, condition, generation, now);
}
