//! The MachineSet's status, computed from its Machines (upstream
//! `core/reconcilers/machineset/machineset_controller_status.go`): the replica counters and
//! versions, the selector string of the scale subresource, and the conditions MachinesReady,
//! MachinesUpToDate, ScalingUp, ScalingDown, Remediating, Deleting and Paused. Also the
//! UpToDate condition of a MachineDeployment's Machines (upstream
//! `newMachineUpToDateCondition`), which the Machine controller sets, and helpers the
//! MachineDeployment's status shares.
//!
//! Everything here is pure: functions of the objects and the time.

use std::collections::BTreeMap;
use std::time::Duration;

use corral_api::conditions::{self as names, machine as machine_names, reason};
use corral_api::{
    Cluster, ConditionStatus, Machine, MachineDeployment, MachineSet, MachineTemplateSpec,
    StatusVersion,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use k8s_openapi::jiff::Timestamp;
use kube::core::{Expression, ParseExpressionError, Selector};

use corral_runtime::conditions::{self, AggregateSource, MergeStrategy, NewCondition, Reasons};

#[cfg(test)]
mod tests;

/// The conditions of a Machine.
pub fn machine_conditions(machine: &Machine) -> &[Condition] {
    machine
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

fn set(machine_set: &mut MachineSet, condition: NewCondition, now: &Time) {
    let generation = machine_set.metadata.generation;
    let status = machine_set.status.get_or_insert_with(Default::default);
    conditions::set(&mut status.conditions, condition, generation, now);
}

fn name_of(machine: &Machine) -> &str {
    machine.metadata.name.as_deref().unwrap_or_default()
}

fn deleting(machine_set: &MachineSet) -> bool {
    machine_set.metadata.deletion_timestamp.is_some()
}

/// `spec.replicas` as the controllers read it: unset is 1, as upstream's webhook defaults it.
pub fn desired_replicas(machine_set: &MachineSet) -> i32 {
    machine_set.spec.replicas.unwrap_or(1)
}

/// A label selector in the string form of `status.selector` (apimachinery's
/// `LabelSelectorAsSelector(...).String()`): requirements sorted by key.
pub fn selector_string(selector: &LabelSelector) -> Result<String, ParseExpressionError> {
    let parsed = Selector::try_from(selector.clone())?;
    let mut expressions: Vec<Expression> = parsed.into_iter().collect();
    expressions.sort_by(|a, b| expression_key(a).cmp(expression_key(b)));
    Ok(expressions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(","))
}

fn expression_key(expression: &Expression) -> &str {
    match expression {
        Expression::In(key, _)
        | Expression::NotIn(key, _)
        | Expression::Equal(key, _)
        | Expression::NotEqual(key, _)
        | Expression::Exists(key)
        | Expression::DoesNotExist(key) => key,
    }
}

/// Up to `limit` names, then how many more (upstream `ListToString`).
pub fn list_to_string(names: &[&str], limit: usize) -> String {
    let shown = names
        .iter()
        .take(limit)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > limit {
        format!("{shown}, ... ({} more)", names.len() - limit)
    } else {
        shown
    }
}

/// Machines per Kubernetes version, oldest version first (upstream `VersionsFromMachines`).
pub fn versions_of<'a>(machines: impl IntoIterator<Item = &'a Machine>) -> Vec<StatusVersion> {
    let mut counts: BTreeMap<String, i32> = BTreeMap::new();
    for machine in machines {
        if let Some(version) = machine.spec.version.as_deref().filter(|v| !v.is_empty()) {
            *counts.entry(version.to_owned()).or_default() += 1;
        }
    }
    merge_versions(counts.into_iter().map(|(version, replicas)| StatusVersion {
        version,
        replicas: Some(replicas),
    }))
}

/// Adds up versions counted separately (upstream `AggregateStatusVersions`), sorted by semantic
/// version.
pub fn merge_versions(versions: impl IntoIterator<Item = StatusVersion>) -> Vec<StatusVersion> {
    let mut counts: BTreeMap<String, i32> = BTreeMap::new();
    for version in versions {
        *counts.entry(version.version).or_default() += version.replicas.unwrap_or(0);
    }
    let mut merged: Vec<StatusVersion> = counts
        .into_iter()
        .map(|(version, replicas)| StatusVersion {
            version,
            replicas: Some(replicas),
        })
        .collect();
    merged.sort_by(|a, b| compare_versions(&a.version, &b.version));
    merged
}

/// Compares `vX.Y.Z[-pre]` versions by their numbers, then as text.
fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let numbers = |version: &str| -> Vec<u64> {
        version
            .trim_start_matches('v')
            .split(['-', '+'])
            .next()
            .unwrap_or_default()
            .split('.')
            .map(|part| part.parse().unwrap_or(0))
            .collect()
    };
    numbers(a).cmp(&numbers(b)).then_with(|| a.cmp(b))
}

/// The replica counters and versions (upstream `setReplicas`): every Machine counts in
/// `replicas`, those whose Ready, Available and UpToDate conditions are True in the others.
pub fn set_replicas(machine_set: &mut MachineSet, machines: &[&Machine]) {
    // One pass over each Machine's conditions for the three counts.
    let (mut ready, mut available, mut up_to_date) = (0, 0, 0);
    for machine in machines {
        for condition in machine_conditions(machine) {
            if condition.status != "True" {
                continue;
            }
            match condition.type_.as_str() {
                names::READY => ready += 1,
                names::AVAILABLE => available += 1,
                machine_names::UP_TO_DATE => up_to_date += 1,
                _ => {}
            }
        }
    }
    let versions = versions_of(machines.iter().copied());
    let status = machine_set.status.get_or_insert_with(Default::default);
    status.replicas = Some(machines.len() as i32);
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.up_to_date_replicas = Some(up_to_date);
    status.versions = versions;
}

/// "X does not exist" or "X and Y do not exist" for the template kinds that are missing
/// (upstream `calculateMissingReferencesMessage`).
pub fn missing_references_message(kinds: &[&str]) -> Option<String> {
    match kinds {
        [] => None,
        [kind] => Some(format!("{kind} does not exist")),
        kinds => Some(format!("{} do not exist", kinds.join(" and "))),
    }
}

/// ScalingUp (upstream `setScalingUpCondition`): True while there are fewer Machines than
/// `spec.replicas`, saying what blocks creating them; False otherwise, saying what would.
/// `blockers` are the reasons creation cannot happen (missing templates, kinds not installed).
pub fn set_scaling_up_condition(
    machine_set: &mut MachineSet,
    machines: &[&Machine],
    blockers: &[String],
    now: &Time,
) {
    let desired = if deleting(machine_set) {
        0
    } else {
        desired_replicas(machine_set)
    };
    let current = machines.len() as i32;
    let condition = if current >= desired {
        let message = if deleting(machine_set) || blockers.is_empty() {
            String::new()
        } else {
            format!(
                "Scaling up would be blocked because {}",
                join_blockers(blockers)
            )
        };
        NewCondition::new(
            names::SCALING_UP,
            ConditionStatus::False,
            reason::NOT_SCALING_UP,
        )
        .message(message)
    } else {
        let mut message = format!("Scaling up from {current} to {desired} replicas");
        if !blockers.is_empty() {
            let list: Vec<String> = blockers.iter().map(|b| format!("* {b}")).collect();
            message.push_str(&format!(" is blocked because:\n{}", list.join("\n")));
        }
        NewCondition::new(names::SCALING_UP, ConditionStatus::True, reason::SCALING_UP)
            .message(message)
    };
    set(machine_set, condition, now);
}

fn join_blockers(blockers: &[String]) -> String {
    match blockers {
        [only] => only.clone(),
        many => format!(
            ":\n{}",
            many.iter()
                .map(|b| format!("* {b}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

/// How long a Machine may be deleting before its owner's conditions call it stale.
const STALE_DELETION: Duration = Duration::from_secs(15 * 60);

/// Machines deleting for more than 15 minutes, and what probably holds them (upstream
/// `aggregateStaleMachines`); empty when there are none.
pub fn stale_machines_message(machines: &[&Machine], now: &Time) -> String {
    let age = |time: &Time| -> Duration {
        now.0
            .duration_since(time.0)
            .try_into()
            .unwrap_or(Duration::ZERO)
    };
    let mut stale: Vec<&str> = Vec::new();
    let mut delays: Vec<&str> = Vec::new();
    for machine in machines {
        let Some(since) = &machine.metadata.deletion_timestamp else {
            continue;
        };
        if age(since) <= STALE_DELETION {
            continue;
        }
        stale.push(name_of(machine));
        let Some(deleting) = conditions::get(machine_conditions(machine), names::DELETING) else {
            continue;
        };
        let drain_started = machine
            .status
            .as_ref()
            .and_then(|status| status.deletion.node_drain_start_time.as_ref());
        let draining_long = deleting.status == "True"
            && deleting.reason == machine_names::reason::DRAINING_NODE
            && drain_started.is_some_and(|start| age(start) > Duration::from_secs(5 * 60));
        if !draining_long {
            continue;
        }
        for (needle, delay) in [
            (
                "cannot evict pod as it would violate the pod's disruption budget.",
                "PodDisruptionBudgets",
            ),
            (
                "deletionTimestamp set, but still not removed from the Node",
                "Pods not terminating",
            ),
            ("failed to evict Pod", "Pod eviction errors"),
            ("waiting for completion", "Pods not completed yet"),
        ] {
            if deleting.message.contains(needle) && !delays.contains(&delay) {
                delays.push(delay);
            }
        }
    }
    if stale.is_empty() {
        return String::new();
    }
    stale.sort_unstable();
    let order = [
        "PodDisruptionBudgets",
        "Pods not terminating",
        "Pod eviction errors",
        "Pods not completed yet",
    ];
    delays.sort_by_key(|delay| order.iter().position(|known| known == delay));
    let (noun, verb) = if stale.len() == 1 {
        ("Machine", "is")
    } else {
        ("Machines", "are")
    };
    let mut message = format!(
        "{noun} {} {verb} in deletion since more than 15m",
        list_to_string(&stale, 3)
    );
    if !delays.is_empty() {
        message.push_str(&format!(", delay likely due to {}", delays.join(", ")));
    }
    message
}

/// ScalingDown (upstream `setScalingDownCondition`): True while there are more Machines than
/// `spec.replicas` (none wanted once the MachineSet is being deleted).
pub fn set_scaling_down_condition(machine_set: &mut MachineSet, machines: &[&Machine], now: &Time) {
    let desired = if deleting(machine_set) {
        0
    } else {
        desired_replicas(machine_set)
    };
    let current = machines.len() as i32;
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
    set(machine_set, condition, now);
}

/// An aggregate of one condition of the Machines, True `NoReplicas` without Machines.
pub fn machines_aggregate(
    machines: &[&Machine],
    source_type: &str,
    target_type: &str,
    reasons: Reasons<'_>,
) -> NewCondition {
    let sources: Vec<AggregateSource<'_>> = machines
        .iter()
        .map(|machine| AggregateSource {
            kind: "Machine",
            name: name_of(machine),
            control_plane_machine: false,
            conditions: machine_conditions(machine),
        })
        .collect();
    conditions::aggregate(
        &sources,
        source_type,
        target_type,
        &MergeStrategy::new(&[], reasons),
    )
    .unwrap_or_else(|| NewCondition::new(target_type, ConditionStatus::True, reason::NO_REPLICAS))
}

/// The reasons of MachinesReady.
pub const READY_REASONS: Reasons<'static> = Reasons {
    issue: reason::NOT_READY,
    unknown: reason::READY_UNKNOWN,
    info: reason::READY,
};

/// The reasons of MachinesUpToDate.
pub const UP_TO_DATE_REASONS: Reasons<'static> = Reasons {
    issue: reason::NOT_UP_TO_DATE,
    unknown: reason::UP_TO_DATE_UNKNOWN,
    info: reason::UP_TO_DATE,
};

/// MachinesReady: the Machines' Ready conditions (upstream `setMachinesReadyCondition`).
pub fn set_machines_ready_condition(
    machine_set: &mut MachineSet,
    machines: &[&Machine],
    now: &Time,
) {
    let condition =
        machines_aggregate(machines, names::READY, names::MACHINES_READY, READY_REASONS);
    set(machine_set, condition, now);
}

/// How long after its creation a Machine without an UpToDate condition is left out of
/// MachinesUpToDate, so that the condition does not flicker while the owner sets it.
pub const UP_TO_DATE_SETTLE: Duration = Duration::from_secs(10);

/// The Machines MachinesUpToDate considers: those with an UpToDate condition, and those older
/// than [`UP_TO_DATE_SETTLE`]; and when the youngest left out will be considered.
pub fn up_to_date_candidates<'a>(
    machines: &[&'a Machine],
    now: &Time,
) -> (Vec<&'a Machine>, Option<Duration>) {
    let mut requeue: Option<Duration> = None;
    let candidates = machines
        .iter()
        .copied()
        .filter(|machine| {
            if conditions::get(machine_conditions(machine), machine_names::UP_TO_DATE).is_some() {
                return true;
            }
            let age = machine
                .metadata
                .creation_timestamp
                .as_ref()
                .and_then(|created| Duration::try_from(now.0.duration_since(created.0)).ok())
                .unwrap_or(Duration::MAX);
            if age > UP_TO_DATE_SETTLE {
                true
            } else {
                let wait = UP_TO_DATE_SETTLE - age + Duration::from_secs(1);
                requeue = corral_runtime::sooner(requeue, Some(wait));
                false
            }
        })
        .collect();
    (candidates, requeue)
}

/// MachinesUpToDate: the Machines' UpToDate conditions (upstream
/// `setMachinesUpToDateCondition`). Returns when a Machine left out joins.
pub fn set_machines_up_to_date_condition(
    machine_set: &mut MachineSet,
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
    set(machine_set, condition, now);
    requeue
}

/// Whether a MachineHealthCheck found the Machine unhealthy (upstream `IsUnhealthy`).
pub fn is_unhealthy(machine: &Machine) -> bool {
    conditions::get(
        machine_conditions(machine),
        machine_names::HEALTH_CHECK_SUCCEEDED,
    )
    .is_some_and(|condition| condition.status == "False")
}

/// Whether the Machine is unhealthy and its owner is asked to remediate it (upstream
/// `IsUnhealthyAndOwnerRemediated`).
pub fn is_unhealthy_and_owner_remediated(machine: &Machine) -> bool {
    is_unhealthy(machine)
        && conditions::get(machine_conditions(machine), machine_names::OWNER_REMEDIATED)
            .is_some_and(|condition| condition.status == "False")
}

/// "Machines a, b are not healthy (not to be remediated by `owners`)" (upstream
/// `aggregateUnhealthyMachines`); empty when all are healthy.
pub fn unhealthy_machines_message(machines: &[&Machine], owners: &str) -> String {
    let mut unhealthy: Vec<&str> = machines
        .iter()
        .filter(|machine| is_unhealthy(machine))
        .map(|machine| name_of(machine))
        .collect();
    if unhealthy.is_empty() {
        return String::new();
    }
    unhealthy.sort_unstable();
    let (noun, verb) = if unhealthy.len() == 1 {
        ("Machine", "is")
    } else {
        ("Machines", "are")
    };
    format!(
        "{noun} {} {verb} not healthy (not to be remediated by {owners})",
        list_to_string(&unhealthy, 3)
    )
}

/// The Remediating condition from the Machines (upstream `setRemediatingCondition`): True with
/// the aggregate of OwnerRemediated of those to remediate, else False naming the unhealthy ones
/// not to be remediated by `owners`.
pub fn remediating_condition(machines: &[&Machine], owners: &str) -> NewCondition {
    let to_remediate: Vec<&Machine> = machines
        .iter()
        .copied()
        .filter(|machine| is_unhealthy_and_owner_remediated(machine))
        .collect();
    if to_remediate.is_empty() {
        return NewCondition::new(
            names::REMEDIATING,
            ConditionStatus::False,
            reason::NOT_REMEDIATING,
        )
        .message(unhealthy_machines_message(machines, owners));
    }
    let aggregate = machines_aggregate(
        &to_remediate,
        machine_names::OWNER_REMEDIATED,
        names::REMEDIATING,
        conditions::DEFAULT_REASONS,
    );
    NewCondition::new(
        names::REMEDIATING,
        ConditionStatus::True,
        reason::REMEDIATING,
    )
    .message(aggregate.message)
}

/// Remediating of a MachineSet.
pub fn set_remediating_condition(machine_set: &mut MachineSet, machines: &[&Machine], now: &Time) {
    let condition = remediating_condition(machines, "MachineSet");
    set(machine_set, condition, now);
}

/// "Deleting N Machines" plus stale ones, or "Deletion completed" (upstream
/// `setDeletingCondition`'s message).
pub fn deleting_message(machines: &[&Machine], now: &Time) -> String {
    if machines.is_empty() {
        return "Deletion completed".into();
    }
    let noun = if machines.len() == 1 {
        "Machine"
    } else {
        "Machines"
    };
    let mut message = format!("Deleting {} {noun}", machines.len());
    let stale = stale_machines_message(machines, now);
    if !stale.is_empty() {
        message.push_str(&format!("\n* {stale}"));
    }
    message
}

/// Deleting (upstream `setDeletingCondition`): False until the MachineSet is deleted, then True
/// with how many Machines are left.
pub fn set_deleting_condition(machine_set: &mut MachineSet, machines: &[&Machine], now: &Time) {
    let condition = if deleting(machine_set) {
        NewCondition::new(names::DELETING, ConditionStatus::True, reason::DELETING)
            .message(deleting_message(machines, now))
    } else {
        NewCondition::new(
            names::DELETING,
            ConditionStatus::False,
            reason::NOT_DELETING,
        )
    };
    set(machine_set, condition, now);
}

/// Paused (upstream `util/paused`): True when the Cluster is paused or the MachineSet has the
/// paused annotation. Returns whether it is paused.
pub fn set_paused_condition(machine_set: &mut MachineSet, cluster: &Cluster, now: &Time) -> bool {
    let condition = crate::cluster::status::paused_condition(
        cluster.spec.paused.unwrap_or(false),
        "MachineSet",
        corral_runtime::has_paused_annotation(machine_set),
    );
    let paused = condition.is_true();
    set(machine_set, condition, now);
    paused
}

/// How a MachineSet's template differs from its MachineDeployment's in the fields that make
/// new Machines, as the Machines' UpToDate condition says it (upstream
/// `MachineTemplateUpToDate`'s condition messages).
pub fn up_to_date_messages(
    current: &MachineTemplateSpec,
    desired: &MachineTemplateSpec,
) -> Vec<String> {
    let (current, desired) = (&current.spec, &desired.spec);
    let without_template = |kind: &str| kind.strip_suffix("Template").unwrap_or(kind).to_owned();
    let mut messages = Vec::new();
    if current.version != desired.version {
        messages.push(format!(
            "Version {}, {} required",
            current.version.as_deref().unwrap_or_default(),
            desired.version.as_deref().unwrap_or_default()
        ));
    }
    if current.bootstrap != desired.bootstrap {
        match &current.bootstrap.config_ref {
            Some(reference) => messages.push(format!(
                "{} is not up-to-date",
                without_template(&reference.kind)
            )),
            None => messages.push(format!(
                "spec.bootstrap.dataSecretName {}, {} required",
                current
                    .bootstrap
                    .data_secret_name
                    .as_deref()
                    .unwrap_or("nil"),
                desired
                    .bootstrap
                    .data_secret_name
                    .as_deref()
                    .unwrap_or("nil")
            )),
        }
    }
    if current.infrastructure_ref != desired.infrastructure_ref {
        messages.push(format!(
            "{} is not up-to-date",
            without_template(&current.infrastructure_ref.kind)
        ));
    }
    if current.failure_domain != desired.failure_domain {
        messages.push(format!(
            "Failure domain {}, {} required",
            current.failure_domain.as_deref().unwrap_or_default(),
            desired.failure_domain.as_deref().unwrap_or_default()
        ));
    }
    messages
}

/// The UpToDate condition for the Machines of a MachineSet (upstream
/// `newMachineUpToDateCondition`): only a MachineDeployment's Machines have it, comparing the
/// MachineSet's template with the MachineDeployment's, and calling Machines not up to date once
/// `spec.rollout.after` has passed since their MachineSet was created.
pub fn machine_up_to_date_condition(
    machine_set: &MachineSet,
    machine_deployment: Option<&MachineDeployment>,
    now: Timestamp,
) -> Option<NewCondition> {
    let machine_deployment = machine_deployment?;
    let mut messages = up_to_date_messages(
        &machine_set.spec.template,
        &machine_deployment.spec.template,
    );
    if let Some(after) = &machine_deployment.spec.rollout.after {
        let created = machine_set
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(Timestamp::UNIX_EPOCH, |time| time.0);
        // Strictly before, as the MachineDeployment's choice of its current MachineSet
        // (rollout_planner): timestamps have whole seconds, and the MachineSet a `rollout
        // restart` creates is often created in the very second `rollout.after` names.
        if after.0 < now && created < after.0 {
            messages.push("MachineDeployment spec.rolloutAfter expired".into());
        }
    }
    if messages.is_empty() {
        return Some(NewCondition::new(
            machine_names::UP_TO_DATE,
            ConditionStatus::True,
            reason::UP_TO_DATE,
        ));
    }
    let lines: Vec<String> = messages.iter().map(|m| format!("* {m}")).collect();
    Some(
        NewCondition::new(
            machine_names::UP_TO_DATE,
            ConditionStatus::False,
            reason::NOT_UP_TO_DATE,
        )
        .message(lines.join("\n")),
    )
}
