//! The MachineDeployment's status, computed from its MachineSets and Machines (upstream
//! `core/reconcilers/machinedeployment/machinedeployment_status.go`): the replica counters and
//! versions summed over the MachineSets, the selector string of the scale subresource, the
//! phase, and the conditions Available, RollingOut, ScalingUp, ScalingDown, MachinesReady,
//! MachinesUpToDate, Remediating, Deleting and Paused.
//!
//! Everything here is pure: functions of the objects and the time.

use std::time::Duration;

use corral_api::conditions::{self as names, machine as machine_names, reason};
use corral_api::{
    Cluster, ConditionStatus, Machine, MachineDeployment, MachineDeploymentPhase, MachineSet,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::int_or_percent::display;
use super::rollout_planner::{RolloutStrategy, max_unavailable};
use crate::machine_set::status::{
    READY_REASONS, UP_TO_DATE_REASONS, deleting_message, machine_conditions, machines_aggregate,
    merge_versions, remediating_condition, stale_machines_message, up_to_date_candidates,
};
use corral_runtime::conditions::{self, NewCondition};

#[cfg(test)]
mod tests;

fn set(machine_deployment: &mut MachineDeployment, condition: NewCondition, now: &Time) {
    let generation = machine_deployment.metadata.generation;
    let status = machine_deployment
        .status
        .get_or_insert_with(Default::default);
    conditions::set(&mut status.conditions, condition, generation, now);
}

fn deleting(machine_deployment: &MachineDeployment) -> bool {
    machine_deployment.metadata.deletion_timestamp.is_some()
}

/// `spec.replicas` as the controllers read it: unset is 1, as upstream's webhook defaults it.
pub fn desired_replicas(machine_deployment: &MachineDeployment) -> i32 {
    machine_deployment.spec.replicas.unwrap_or(1)
}

/// The sum of a counter over the MachineSets; `None` when no MachineSet reports it (upstream
/// `GetActualReplicaCountForMachineSets` and friends).
fn sum(
    machine_sets: &[&MachineSet],
    counter: fn(&corral_api::MachineSetStatus) -> Option<i32>,
) -> Option<i32> {
    machine_sets
        .iter()
        .filter_map(|machine_set| machine_set.status.as_ref().and_then(counter))
        .fold(None, |total, value| Some(total.unwrap_or(0) + value))
}

/// The Machines of all MachineSets (`status.replicas` summed).
pub fn actual_replicas(machine_sets: &[&MachineSet]) -> Option<i32> {
    sum(machine_sets, |status| status.replicas)
}

/// The replica counters and versions, summed over the MachineSets (upstream `setReplicas`).
///
/// When the step's plan says which MachineSet is current (`Some(current)`, `None` inside for
/// none), only its Machines count as up to date: the Machines of the others are not, whatever
/// their MachineSet's status says in the moments before it notices the new template. Upstream
/// sums the MachineSets' counts, which a new template leaves stale for a reconcile or two.
pub fn set_replicas(
    machine_deployment: &mut MachineDeployment,
    machine_sets: &[&MachineSet],
    current: Option<Option<&str>>,
) {
    let versions = merge_versions(
        machine_sets
            .iter()
            .filter_map(|machine_set| machine_set.status.as_ref())
            .flat_map(|status| status.versions.iter().cloned()),
    );
    let status = machine_deployment
        .status
        .get_or_insert_with(Default::default);
    status.replicas = actual_replicas(machine_sets);
    status.ready_replicas = sum(machine_sets, |status| status.ready_replicas);
    status.available_replicas = sum(machine_sets, |status| status.available_replicas);
    status.up_to_date_replicas = match current {
        None => sum(machine_sets, |status| status.up_to_date_replicas),
        Some(current) => {
            let current: Vec<&MachineSet> = machine_sets
                .iter()
                .copied()
                .filter(|machine_set| machine_set.metadata.name.as_deref() == current)
                .collect();
            sum(&current, |status| status.up_to_date_replicas)
                .or_else(|| status.replicas.map(|_| 0))
        }
    };
    status.versions = versions;
}

/// The phase (upstream `setPhase`): ScalingDown while deleting, else Running, ScalingUp or
/// ScalingDown as the Machines compare with `spec.replicas`.
pub fn set_phase(machine_deployment: &mut MachineDeployment, machine_sets: &[&MachineSet]) {
    let phase = if deleting(machine_deployment) {
        MachineDeploymentPhase::ScalingDown
    } else {
        let desired = desired_replicas(machine_deployment);
        let current = actual_replicas(machine_sets).unwrap_or(0);
        match current.cmp(&desired) {
            std::cmp::Ordering::Equal => MachineDeploymentPhase::Running,
            std::cmp::Ordering::Greater => MachineDeploymentPhase::ScalingDown,
            std::cmp::Ordering::Less => MachineDeploymentPhase::ScalingUp,
        }
    };
    machine_deployment
        .status
        .get_or_insert_with(Default::default)
        .phase = Some(phase);
}

/// Available (upstream `setAvailableCondition`): True when at least `spec.replicas` minus
/// maxUnavailable Machines are available. Needs [`set_replicas`] first.
pub fn set_available_condition(
    machine_deployment: &mut MachineDeployment,
    strategy: &RolloutStrategy,
    now: &Time,
) {
    let replicas = desired_replicas(machine_deployment);
    let available = machine_deployment
        .status
        .as_ref()
        .and_then(|status| status.available_replicas);
    let condition = match available {
        None => NewCondition::new(
            names::AVAILABLE,
            ConditionStatus::Unknown,
            corral_api::conditions::machine_deployment::reason::WAITING_FOR_AVAILABLE_REPLICAS_SET,
        )
        .message("Waiting for status.availableReplicas set"),
        Some(available) => {
            let unavailable = max_unavailable(strategy, replicas).unwrap_or(0);
            let minimum = replicas - unavailable;
            if available >= minimum {
                NewCondition::new(names::AVAILABLE, ConditionStatus::True, reason::AVAILABLE)
            } else {
                let mut message =
                    format!("{available} available replicas, at least {minimum} required");
                if let RolloutStrategy::RollingUpdate {
                    max_unavailable, ..
                } = strategy
                {
                    message.push_str(&format!(
                        " (spec.rollout.strategy.rollingUpdate.maxUnavailable is {}, spec.replicas is {replicas})",
                        display(max_unavailable)
                    ));
                }
                if deleting(machine_deployment) {
                    message = "Deletion in progress".into();
                }
                NewCondition::new(
                    names::AVAILABLE,
                    ConditionStatus::False,
                    reason::NOT_AVAILABLE,
                )
                .message(message)
            }
        }
    };
    set(machine_deployment, condition, now);
}

/// RollingOut (upstream `setRollingOutCondition`): True while Machines are not up to date,
/// with the reasons their UpToDate conditions give, a version change first.
pub fn set_rolling_out_condition(
    machine_deployment: &mut MachineDeployment,
    machines: &[&Machine],
    now: &Time,
) {
    let mut rolling_out = 0;
    let mut reasons: Vec<String> = Vec::new();
    for machine in machines {
        let Some(up_to_date) =
            conditions::get(machine_conditions(machine), machine_names::UP_TO_DATE)
        else {
            continue;
        };
        if up_to_date.status != "False" {
            continue;
        }
        rolling_out += 1;
        for line in up_to_date
            .message
            .split('\n')
            .filter(|line| !line.is_empty())
        {
            if !reasons.iter().any(|known| known == line) {
                reasons.push(line.to_owned());
            }
        }
    }
    let condition = if rolling_out == 0 {
        NewCondition::new(
            names::ROLLING_OUT,
            ConditionStatus::False,
            reason::NOT_ROLLING_OUT,
        )
    } else {
        reasons.sort_by(|a, b| {
            let version = |line: &str| !line.starts_with("* Version");
            version(a).cmp(&version(b)).then_with(|| a.cmp(b))
        });
        let mut message = format!("Rolling out {rolling_out} not up-to-date replicas");
        if !reasons.is_empty() {
            message.push('\n');
            message.push_str(&reasons.join("\n"));
        }
        NewCondition::new(
            names::ROLLING_OUT,
            ConditionStatus::True,
            reason::ROLLING_OUT,
        )
        .message(message)
    };
    set(machine_deployment, condition, now);
}

/// ScalingUp (upstream `setScalingUpCondition`): True while the MachineSets hold fewer Machines
/// than `spec.replicas`, with what blocks more (missing templates, kinds not installed).
pub fn set_scaling_up_condition(
    machine_deployment: &mut MachineDeployment,
    machine_sets: &[&MachineSet],
    blockers: &[String],
    now: &Time,
) {
    let desired = if deleting(machine_deployment) {
        0
    } else {
        desired_replicas(machine_deployment)
    };
    let current = actual_replicas(machine_sets).unwrap_or(0);
    let because = match blockers {
        [] => String::new(),
        [only] => format!("because {only}"),
        many => format!(
            "because:\n{}",
            many.iter()
                .map(|b| format!("* {b}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    };
    let condition = if current >= desired {
        let message = if deleting(machine_deployment) || because.is_empty() {
            String::new()
        } else {
            format!("Scaling up would be blocked {because}")
        };
        NewCondition::new(
            names::SCALING_UP,
            ConditionStatus::False,
            reason::NOT_SCALING_UP,
        )
        .message(message)
    } else {
        let mut message = format!("Scaling up from {current} to {desired} replicas");
        if !because.is_empty() {
            message.push_str(&format!(" is blocked {because}"));
        }
        NewCondition::new(names::SCALING_UP, ConditionStatus::True, reason::SCALING_UP)
            .message(message)
    };
    set(machine_deployment, condition, now);
}

/// ScalingDown (upstream `setScalingDownCondition`): True while the MachineSets hold more
/// Machines than `spec.replicas` (none wanted once deleting), naming stale deletions.
pub fn set_scaling_down_condition(
    machine_deployment: &mut MachineDeployment,
    machine_sets: &[&MachineSet],
    machines: &[&Machine],
    now: &Time,
) {
    let desired = if deleting(machine_deployment) {
        0
    } else {
        desired_replicas(machine_deployment)
    };
    let current = actual_replicas(machine_sets).unwrap_or(0);
    let condition = if current > desired {
        let mut message = format!("Scaling down from {current} to {desired} replicas");
        let stale = stale_machines_message(machines, now);
        if !stale.is_empty() {
            message.push_str(&format!("\n* {stale}"));
        }
        NewCondition::new(
            names::SCALING_DOWN,
            ConditionStatus::True,
            reason::SCALING_DOWN,
        )
        .message(message)
    } else {
        NewCondition::new(
            names::SCALING_DOWN,
            ConditionStatus::False,
            reason::NOT_SCALING_DOWN,
        )
    };
    set(machine_deployment, condition, now);
}

/// MachinesReady: the Machines' Ready conditions (upstream `setMachinesReadyCondition`).
pub fn set_machines_ready_condition(
    machine_deployment: &mut MachineDeployment,
    machines: &[&Machine],
    now: &Time,
) {
    let condition =
        machines_aggregate(machines, names::READY, names::MACHINES_READY, READY_REASONS);
    set(machine_deployment, condition, now);
}

/// MachinesUpToDate: the Machines' UpToDate conditions, leaving out for 10 s new Machines that
/// have none yet (upstream `setMachinesUpToDateCondition`). Returns when one joins.
pub fn set_machines_up_to_date_condition(
    machine_deployment: &mut MachineDeployment,
    machines: &[&Machine],
    now: &Time,
) -> Option<Duration> {
    let (candidates, requeue) = up_to_date_candidates(machines, now);
    let condition = machines_aggregate(
        &candidates,
        machine_names::UP_TO_DATE,
        names::MACHINES_UP_TO_DATE,
        UP_TO_DATE_REASONS,
    );
    set(machine_deployment, condition, now);
    requeue
}

/// Remediating (upstream `setRemediatingCondition`).
pub fn set_remediating_condition(
    machine_deployment: &mut MachineDeployment,
    machines: &[&Machine],
    now: &Time,
) {
    let condition = remediating_condition(machines, "MachineDeployment/MachineSet");
    set(machine_deployment, condition, now);
}

/// Deleting (upstream `setDeletingCondition`): False until deleted, then True with the
/// Machines, or MachineSets, still to go.
pub fn set_deleting_condition(
    machine_deployment: &mut MachineDeployment,
    machine_sets: &[&MachineSet],
    machines: &[&Machine],
    now: &Time,
) {
    let condition = if deleting(machine_deployment) {
        let message = if machines.is_empty() && !machine_sets.is_empty() {
            format!("Deleting {} MachineSets", machine_sets.len())
        } else {
            deleting_message(machines, now)
        };
        NewCondition::new(names::DELETING, ConditionStatus::True, reason::DELETING).message(message)
    } else {
        NewCondition::new(
            names::DELETING,
            ConditionStatus::False,
            reason::NOT_DELETING,
        )
    };
    set(machine_deployment, condition, now);
}

/// Paused (upstream `util/paused`): True when the Cluster is paused or the MachineDeployment
/// has the paused annotation. `spec.paused` is not this: a MachineDeployment paused that way
/// still scales. Returns whether it is paused.
pub fn set_paused_condition(
    machine_deployment: &mut MachineDeployment,
    cluster: &Cluster,
    now: &Time,
) -> bool {
    let condition = crate::cluster::status::paused_condition(
        cluster.spec.paused.unwrap_or(false),
        "MachineDeployment",
        corral_runtime::has_paused_annotation(machine_deployment),
    );
    let paused = condition.is_true();
    set(machine_deployment, condition, now);
    paused
}
