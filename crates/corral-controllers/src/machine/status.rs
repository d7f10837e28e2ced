//! The Machine's status, computed from what the reconcile observed (upstream
//! `core/reconcilers/machine/machine_controller_status.go`): phase, BootstrapConfigReady,
//! InfrastructureReady, NodeReady, NodeHealthy, Deleting, Updating, Ready and Available. Pure
//! functions over the desired Machine. UpToDate is left to the Machine's owner.

use std::time::Duration;

use corral_api::conditions::{
    self as names, cluster as cluster_names, machine as machine_names, reason,
};
use corral_api::{Cluster, ConditionPolarity, ConditionStatus, Machine, MachinePhase};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use corral_runtime::cluster_cache::HealthCheckingState;
use corral_runtime::conditions::{
    self, MergeStrategy, NewCondition, Priority, Reasons, SummaryOptions,
};
use corral_runtime::external::Observed;

fn machine_conditions(machine: &Machine) -> &[Condition] {
    machine
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

fn set(machine: &mut Machine, condition: NewCondition, now: &Time) {
    let generation = machine.metadata.generation;
    let status = machine.status.get_or_insert_with(Default::default);
    conditions::set(&mut status.conditions, condition, generation, now);
}

fn deleting(machine: &Machine) -> bool {
    machine.metadata.deletion_timestamp.is_some()
}

fn bootstrap_data_secret_created(machine: &Machine) -> bool {
    machine
        .status
        .as_ref()
        .and_then(|s| s.initialization.bootstrap_data_secret_created)
        .unwrap_or(false)
}

fn infrastructure_provisioned(machine: &Machine) -> bool {
    machine
        .status
        .as_ref()
        .and_then(|s| s.initialization.infrastructure_provisioned)
        .unwrap_or(false)
}

fn node_ref(machine: &Machine) -> Option<&str> {
    machine
        .status
        .as_ref()
        .and_then(|s| s.node_ref.as_ref())
        .map(|r| r.name.as_str())
}

/// A provider object's Ready condition mirrored under `target`, with the fallback upstream
/// uses when the provider reports none.
fn mirror_ready(
    target: &str,
    kind: &str,
    condition: &Result<Option<corral_api::contract::ProviderCondition>, String>,
    done: bool,
    done_field: &str,
) -> NewCondition {
    let condition = match condition {
        Ok(condition) => condition.as_ref(),
        Err(message) => {
            return NewCondition::new(
                target,
                ConditionStatus::Unknown,
                reason::INVALID_CONDITION_REPORTED,
            )
            .message(message.clone());
        }
    };
    let fallback = NewCondition::new(
        target,
        conditions::bool_status(done),
        if done {
            reason::READY
        } else {
            reason::NOT_READY
        },
    )
    .message(if done {
        String::new()
    } else {
        format!("{kind} {done_field} is false")
    });
    match conditions::mirror(condition, names::READY, target, Some(fallback)) {
        Ok(mut mirrored) => {
            if mirrored.reason == conditions::NO_REASON_REPORTED && mirrored.is_true() {
                mirrored.reason = reason::READY.to_owned();
            }
            mirrored
        }
        Err(error) => NewCondition::new(
            target,
            ConditionStatus::Unknown,
            reason::INVALID_CONDITION_REPORTED,
        )
        .message(error.to_string()),
    }
}

/// BootstrapConfigReady (upstream `setBootstrapReadyCondition`): True `DataSecretProvided`
/// without a configRef; else the bootstrap config's Ready condition, or its
/// `status.initialization.dataSecretCreated`.
pub fn set_bootstrap_ready_condition(
    machine: &mut Machine,
    observed: Option<&Observed>,
    now: &Time,
) {
    let target = names::BOOTSTRAP_CONFIG_READY;
    let Some(reference) = machine.spec.bootstrap.config_ref.clone() else {
        let condition = NewCondition::new(
            target,
            ConditionStatus::True,
            machine_names::reason::BOOTSTRAP_DATA_SECRET_PROVIDED,
        );
        set(machine, condition, now);
        return;
    };
    let kind = &reference.kind;
    let created = bootstrap_data_secret_created(machine);
    let condition = match observed {
        Some(Observed::Found { condition }) => mirror_ready(
            target,
            kind,
            condition,
            created,
            "status.initialization.dataSecretCreated",
        ),
        Some(Observed::Failed(message)) => {
            NewCondition::new(target, ConditionStatus::Unknown, reason::INTERNAL_ERROR)
                .message(message.clone())
        }
        _ if deleting(machine) && created => {
            NewCondition::new(target, ConditionStatus::False, reason::OBJECT_DELETED)
                .message(format!("{kind} has been deleted"))
        }
        _ => NewCondition::new(
            target,
            ConditionStatus::False,
            reason::OBJECT_DOES_NOT_EXIST,
        )
        .message(format!("{kind} does not exist")),
    };
    set(machine, condition, now);
}

/// InfrastructureReady (upstream `setInfrastructureReadyCondition`): the infrastructure
/// machine's Ready condition, or its `status.initialization.provisioned`.
pub fn set_infrastructure_ready_condition(
    machine: &mut Machine,
    observed: Option<&Observed>,
    now: &Time,
) {
    let target = names::INFRASTRUCTURE_READY;
    let kind = machine.spec.infrastructure_ref.kind.clone();
    let provisioned = infrastructure_provisioned(machine);
    let condition = match observed {
        Some(Observed::Found { condition }) => mirror_ready(
            target,
            &kind,
            condition,
            provisioned,
            "status.initialization.provisioned",
        ),
        Some(Observed::Failed(message)) => {
            NewCondition::new(target, ConditionStatus::Unknown, reason::INTERNAL_ERROR)
                .message(message.clone())
        }
        _ if deleting(machine) && provisioned => {
            NewCondition::new(target, ConditionStatus::False, reason::OBJECT_DELETED)
                .message(format!("{kind} has been deleted"))
        }
        _ if deleting(machine) => NewCondition::new(
            target,
            ConditionStatus::False,
            reason::OBJECT_DOES_NOT_EXIST,
        )
        .message(format!("{kind} does not exist")),
        _ if provisioned => {
            NewCondition::new(target, ConditionStatus::False, reason::OBJECT_DELETED).message(
                format!("{kind} has been deleted while the Machine still exists"),
            )
        }
        _ => NewCondition::new(
            target,
            ConditionStatus::False,
            reason::OBJECT_DOES_NOT_EXIST,
        )
        .message(format!("{kind} does not exist")),
    };
    set(machine, condition, now);
}

/// Why the Node could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeReadError {
    /// The workload cluster is not connected.
    NotConnected,
    /// Something else; the message says what.
    Other(String),
}

/// What the Node conditions are computed from.
pub struct NodeObservation<'a> {
    /// The Node, when found.
    pub node: Option<&'a Node>,
    /// Why it could not be read, if so.
    pub error: Option<&'a NodeReadError>,
    /// How probing the workload cluster has gone.
    pub health: &'a HealthCheckingState,
    /// How long the cluster may be unreachable before the conditions go Unknown.
    pub grace_period: Duration,
}

fn set_node_conditions(
    machine: &mut Machine,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    now: &Time,
) {
    for type_ in [machine_names::NODE_READY, machine_names::NODE_HEALTHY] {
        set(
            machine,
            NewCondition::new(type_, status, reason).message(message),
            now,
        );
    }
}

fn last_probe_message(health: &HealthCheckingState) -> String {
    health
        .last_probe_success_time
        .map(|time| {
            format!(
                "Last successful probe at {}",
                time.strftime("%Y-%m-%dT%H:%M:%SZ")
            )
        })
        .unwrap_or_default()
}

/// NodeReady and NodeHealthy (upstream `setNodeHealthyAndReadyConditions`): Unknown until the
/// Cluster's infrastructure is provisioned and its control plane initialized, and while the
/// workload cluster cannot be reached (keeping the last known state for the grace period);
/// then the Node's Ready condition and a summary of its Ready and pressure conditions; False
/// when the Node was deleted under the Machine.
pub fn set_node_healthy_and_ready_conditions(
    machine: &mut Machine,
    cluster: &Cluster,
    observation: &NodeObservation<'_>,
    now: &Time,
) {
    let has_both = |machine: &Machine| {
        let c = machine_conditions(machine);
        conditions::get(c, machine_names::NODE_READY).is_some()
            && conditions::get(c, machine_names::NODE_HEALTHY).is_some()
    };
    let cluster_status = cluster.status.as_ref();
    if cluster_status.and_then(|s| s.initialization.infrastructure_provisioned) != Some(true) {
        set_node_conditions(
            machine,
            ConditionStatus::Unknown,
            reason::INSPECTION_FAILED,
            "Waiting for Cluster status.initialization.infrastructureProvisioned to be true",
            now,
        );
        return;
    }
    let cluster_conditions = cluster_status
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let Some(initialized) =
        conditions::get(cluster_conditions, cluster_names::CONTROL_PLANE_INITIALIZED)
            .filter(|c| c.status == "True")
    else {
        set_node_conditions(
            machine,
            ConditionStatus::Unknown,
            reason::INSPECTION_FAILED,
            "Waiting for Cluster control plane to be initialized",
            now,
        );
        return;
    };
    let health = observation.health;
    let Some(last_success) = health.last_probe_success_time else {
        if health.consecutive_failures < corral_runtime::cluster_cache::FIRST_CONNECTION_ATTEMPTS {
            if !has_both(machine) {
                set_node_conditions(
                    machine,
                    ConditionStatus::Unknown,
                    reason::CONNECTION_DOWN,
                    "Remote connection not established yet",
                    now,
                );
            }
            return;
        }
        set_node_conditions(
            machine,
            ConditionStatus::Unknown,
            reason::CONNECTION_DOWN,
            "",
            now,
        );
        return;
    };
    let since_good = last_success.max(initialized.last_transition_time.0);
    let elapsed: Duration = now
        .0
        .duration_since(since_good)
        .try_into()
        .unwrap_or(Duration::ZERO);
    if health.consecutive_failures > 0 && elapsed > observation.grace_period {
        set_node_conditions(
            machine,
            ConditionStatus::Unknown,
            reason::CONNECTION_DOWN,
            &last_probe_message(health),
            now,
        );
        return;
    }
    match observation.error {
        Some(NodeReadError::NotConnected) => {
            if !has_both(machine) {
                set_node_conditions(
                    machine,
                    ConditionStatus::Unknown,
                    reason::CONNECTION_DOWN,
                    &last_probe_message(health),
                    now,
                );
            }
            return;
        }
        Some(NodeReadError::Other(_)) => {
            set_node_conditions(
                machine,
                ConditionStatus::Unknown,
                reason::INTERNAL_ERROR,
                "Please check controller logs for errors",
                now,
            );
            return;
        }
        None => {}
    }
    match observation.node {
        Some(node) => {
            set(machine, node_ready_condition(node), now);
            let (status, reason, message) = summarize_node_conditions(node);
            set(
                machine,
                NewCondition::new(machine_names::NODE_HEALTHY, status, reason).message(message),
                now,
            );
        }
        None => set_node_conditions_without_node(machine, now),
    }
}

/// NodeReady from the Node's Ready condition, its transition time kept.
fn node_ready_condition(node: &Node) -> NewCondition {
    let node_conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(c) = node_conditions.iter().find(|c| c.type_ == "Ready") else {
        return NewCondition::new(
            machine_names::NODE_READY,
            ConditionStatus::Unknown,
            machine_names::reason::NODE_READY_UNKNOWN,
        )
        .message("* Node.Ready: Condition not yet reported");
    };
    let status = match c.status.as_str() {
        "True" => ConditionStatus::True,
        "False" => ConditionStatus::False,
        _ => ConditionStatus::Unknown,
    };
    let reason = match status {
        ConditionStatus::True => machine_names::reason::NODE_READY,
        ConditionStatus::False => machine_names::reason::NODE_NOT_READY,
        ConditionStatus::Unknown => machine_names::reason::NODE_READY_UNKNOWN,
    };
    let message = match c.message.as_deref() {
        Some(m) if status != ConditionStatus::True && !m.is_empty() => {
            format!("* Node.Ready: {m}")
        }
        _ => String::new(),
    };
    NewCondition {
        last_transition_time: c.last_transition_time.clone(),
        ..NewCondition::new(machine_names::NODE_READY, status, reason).message(message)
    }
}

/// NodeReady and NodeHealthy of a Machine whose Node is not there: deleted (under a deleting
/// Machine or not), or not yet there (waiting for a providerID or for the Node).
fn set_node_conditions_without_node(machine: &mut Machine, now: &Time) {
    let kind = machine.spec.infrastructure_ref.kind.clone();
    let provider_id = machine.spec.provider_id.clone();
    match (
        deleting(machine),
        node_ref(machine).map(str::to_owned),
        provider_id,
    ) {
        (true, Some(name), _) => set_node_conditions(
            machine,
            ConditionStatus::False,
            machine_names::reason::NODE_DELETED,
            &format!("Node {name} has been deleted"),
            now,
        ),
        (true, None, _) => set_node_conditions(
            machine,
            ConditionStatus::Unknown,
            machine_names::reason::NODE_DOES_NOT_EXIST,
            "Node does not exist",
            now,
        ),
        (false, Some(name), _) => set_node_conditions(
            machine,
            ConditionStatus::False,
            machine_names::reason::NODE_DELETED,
            &format!("Node {name} has been deleted while the Machine still exists"),
            now,
        ),
        (false, None, Some(provider_id)) => set_node_conditions(
            machine,
            ConditionStatus::Unknown,
            reason::INSPECTION_FAILED,
            &format!("Waiting for a Node with spec.providerID {provider_id} to exist"),
            now,
        ),
        (false, None, None) => set_node_conditions(
            machine,
            ConditionStatus::Unknown,
            reason::INSPECTION_FAILED,
            &format!("Waiting for {kind} to report spec.providerID"),
            now,
        ),
    }
}

/// NodeHealthy from the Node's Ready, MemoryPressure, DiskPressure and PIDPressure conditions
/// (upstream `summarizeNodeConditions`): issues and unknowns only.
pub fn summarize_node_conditions(node: &Node) -> (ConditionStatus, &'static str, String) {
    let node_conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut false_count = 0;
    let mut unknown_count = 0;
    let mut reported = 0;
    let mut distinct: std::collections::BTreeSet<String> = Default::default();
    let mut messages = Vec::new();
    for type_ in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
        let Some(condition) = node_conditions.iter().rev().find(|c| c.type_ == type_) else {
            messages.push(format!("* Node.{type_}: Condition not yet reported"));
            unknown_count += 1;
            continue;
        };
        let good = if type_ == "Ready" { "True" } else { "False" };
        if condition.status == good {
            continue;
        }
        let message = condition
            .message
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| format!("Condition is {}", condition.status));
        reported += 1;
        distinct.insert(message.clone());
        messages.push(format!("* Node.{type_}: {message}"));
        if condition.status == "Unknown" {
            unknown_count += 1;
        } else {
            false_count += 1;
        }
    }
    if reported > 1 && distinct.len() == 1 {
        messages = vec![format!(
            "* Node.AllConditions: {}",
            distinct.into_iter().next().unwrap_or_default()
        )];
    }
    let message = messages.join("\n");
    if false_count > 0 {
        (
            ConditionStatus::False,
            machine_names::reason::NODE_NOT_HEALTHY,
            message,
        )
    } else if unknown_count > 0 {
        (
            ConditionStatus::Unknown,
            machine_names::reason::NODE_HEALTH_UNKNOWN,
            message,
        )
    } else {
        (
            ConditionStatus::True,
            machine_names::reason::NODE_HEALTHY,
            String::new(),
        )
    }
}

/// Deleting: False `NotDeleting`, or True with the step deletion waits on.
pub fn set_deleting_condition(
    machine: &mut Machine,
    reason_message: Option<(&str, &str)>,
    now: &Time,
) {
    let condition = match (deleting(machine), reason_message) {
        (true, Some((reason, message))) => {
            NewCondition::new(names::DELETING, ConditionStatus::True, reason).message(message)
        }
        (true, None) => NewCondition::new(names::DELETING, ConditionStatus::True, reason::DELETING)
            .message("Deletion started"),
        (false, _) => NewCondition::new(
            names::DELETING,
            ConditionStatus::False,
            reason::NOT_DELETING,
        ),
    };
    set(machine, condition, now);
}

/// Updating: True while the Machine has the in-place update annotation (upstream
/// `setUpdatingCondition`; Corral does not update in place yet, so it is False otherwise).
pub fn set_updating_condition(machine: &mut Machine, now: &Time) {
    let updating = machine
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(corral_api::annotations::UPDATE_IN_PROGRESS));
    let condition = if updating {
        NewCondition::new(
            machine_names::UPDATING,
            ConditionStatus::True,
            machine_names::reason::IN_PLACE_UPDATING,
        )
        .message("In-place update in progress")
    } else {
        NewCondition::new(
            machine_names::UPDATING,
            ConditionStatus::False,
            machine_names::reason::NOT_UPDATING,
        )
    };
    set(machine, condition, now);
}

/// Ready (upstream `setReadyCondition`): a summary of Deleting and Updating (negative),
/// BootstrapConfigReady, InfrastructureReady, NodeHealthy, HealthCheckSucceeded (ignored when
/// missing) and the readiness gates. While deleting, objects that are gone count as
/// information, and Deleting is summarized by its stage only.
pub fn set_ready_condition(machine: &mut Machine, now: &Time) {
    let mut for_types: Vec<String> = [
        names::DELETING,
        machine_names::UPDATING,
        names::BOOTSTRAP_CONFIG_READY,
        names::INFRASTRUCTURE_READY,
        machine_names::NODE_HEALTHY,
        machine_names::HEALTH_CHECK_SUCCEEDED,
    ]
    .iter()
    .map(|t| (*t).to_owned())
    .collect();
    let mut negative = vec![
        names::DELETING.to_owned(),
        machine_names::UPDATING.to_owned(),
    ];
    for gate in &machine.spec.readiness_gates {
        for_types.push(gate.condition_type.clone());
        if gate.polarity == Some(ConditionPolarity::Negative) {
            negative.push(gate.condition_type.clone());
        }
    }
    let is_deleting = deleting(machine);
    let negative_refs: Vec<&str> = negative.iter().map(String::as_str).collect();
    let priority = move |c: &Condition| -> Priority {
        if is_deleting {
            let gone = |reasons: &[&str]| reasons.contains(&c.reason.as_str());
            let deleted_or_missing = [reason::OBJECT_DELETED, reason::OBJECT_DOES_NOT_EXIST];
            if (c.type_ == names::BOOTSTRAP_CONFIG_READY || c.type_ == names::INFRASTRUCTURE_READY)
                && gone(&deleted_or_missing)
            {
                return Priority::Info;
            }
            if c.type_ == machine_names::NODE_HEALTHY
                && gone(&[
                    machine_names::reason::NODE_DELETED,
                    machine_names::reason::NODE_DOES_NOT_EXIST,
                ])
            {
                return Priority::Info;
            }
        }
        conditions::default_priority(c, &negative_refs)
    };
    let mut overrides = Vec::new();
    if is_deleting {
        let stage =
            conditions::get(machine_conditions(machine), names::DELETING).map(|c| c.reason.clone());
        let message = match stage {
            Some(stage) => format!("Machine deletion in progress, stage: {stage}"),
            None => "Machine deletion in progress".to_owned(),
        };
        overrides.push(Condition {
            type_: names::DELETING.to_owned(),
            status: "True".into(),
            reason: reason::DELETING.to_owned(),
            message,
            last_transition_time: now.clone(),
            observed_generation: None,
        });
    }
    let name = machine.metadata.name.clone().unwrap_or_default();
    let condition = conditions::summary(
        "Machine",
        &name,
        machine_conditions(machine),
        names::READY,
        SummaryOptions {
            for_types,
            ignore_if_missing: &[machine_names::HEALTH_CHECK_SUCCEEDED],
            overrides,
            strategy: MergeStrategy {
                priority: Box::new(priority),
                target_positive: true,
                reasons: Reasons {
                    issue: reason::NOT_READY,
                    unknown: reason::READY_UNKNOWN,
                    info: reason::READY,
                },
            },
        },
    );
    set(machine, condition, now);
}

/// Available (upstream `setAvailableCondition`): Ready for at least `minReadySeconds`. Returns
/// how long until it will be, for a requeue.
pub fn set_available_condition(machine: &mut Machine, now: &Time) -> Option<Duration> {
    let ready = conditions::get(machine_conditions(machine), names::READY).cloned();
    let Some(ready) = ready.filter(|c| c.status == "True") else {
        set(
            machine,
            NewCondition::new(names::AVAILABLE, ConditionStatus::False, reason::NOT_READY),
            now,
        );
        return None;
    };
    let min_ready = Duration::from_secs(machine.spec.min_ready_seconds.unwrap_or(0).max(0) as u64);
    let ready_for: Duration = now
        .0
        .duration_since(ready.last_transition_time.0)
        .try_into()
        .unwrap_or(Duration::ZERO);
    if ready_for >= min_ready {
        set(
            machine,
            NewCondition::new(names::AVAILABLE, ConditionStatus::True, reason::AVAILABLE),
            now,
        );
        None
    } else {
        set(
            machine,
            NewCondition::new(
                names::AVAILABLE,
                ConditionStatus::False,
                machine_names::reason::WAITING_FOR_MIN_READY_SECONDS,
            ),
            now,
        );
        Some(min_ready - ready_for)
    }
}

/// The phase (upstream `setMachinePhaseAndLastUpdated`), rules applied in order, the last
/// that holds wins: Pending; Provisioning once the bootstrap data exists and the
/// infrastructure is not provisioned; Provisioned once there is a provider ID; Running once it
/// has a Node and provisioned infrastructure; Updating while updating in place; Deleting while
/// being deleted.
pub fn compute_phase(machine: &Machine) -> MachinePhase {
    let mut phase = machine
        .status
        .as_ref()
        .and_then(|s| s.phase)
        .unwrap_or(MachinePhase::Pending);
    if bootstrap_data_secret_created(machine) && !infrastructure_provisioned(machine) {
        phase = MachinePhase::Provisioning;
    }
    if machine
        .spec
        .provider_id
        .as_deref()
        .is_some_and(|id| !id.is_empty())
    {
        phase = MachinePhase::Provisioned;
    }
    if node_ref(machine).is_some() && infrastructure_provisioned(machine) {
        phase = MachinePhase::Running;
    }
    if conditions::is_true(machine_conditions(machine), machine_names::UPDATING) {
        phase = MachinePhase::Updating;
    }
    if deleting(machine) {
        phase = MachinePhase::Deleting;
    }
    phase
}

/// Sets the phase, and `lastUpdated` when it changes; returns whether it changed.
pub fn set_phase(machine: &mut Machine, now: &Time) -> bool {
    let phase = compute_phase(machine);
    let status = machine.status.get_or_insert_with(Default::default);
    if status.phase == Some(phase) {
        return false;
    }
    status.phase = Some(phase);
    status.last_updated = Some(now.clone());
    true
}

/// The Paused condition of a Machine.
pub fn set_paused_condition(machine: &mut Machine, cluster: &Cluster, now: &Time) -> bool {
    let paused = cluster.spec.paused.unwrap_or(false);
    let annotated = corral_runtime::has_paused_annotation(machine);
    let condition = crate::cluster::status::paused_condition(paused, "Machine", annotated);
    let is_paused = condition.is_true();
    set(machine, condition, now);
    is_paused
}
