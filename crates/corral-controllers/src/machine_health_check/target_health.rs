//! Whether one target of a MachineHealthCheck is healthy, unhealthy, or not yet either (upstream
//! `needsRemediation`, `machineChecks`, `nodeChecks` and `healthCheckTargets` in
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_targets.go`).
//!
//! In order:
//!
//! 1. The `cluster.x-k8s.io/remediate-machine` annotation makes a Machine unhealthy at once.
//! 2. Until the Cluster's control plane is initialized, only control plane Machines are
//!    judged; until its infrastructure is ready, none is.
//! 3. Each `unhealthyMachineConditions` entry whose status the Machine's condition has had for
//!    longer than its timeout makes the Machine unhealthy.
//! 4. A Node that was seen and is gone makes it unhealthy. No Node yet makes it unhealthy once
//!    `nodeStartupTimeoutSeconds` (600 when unset, 0 turns the check off) has passed since the
//!    latest of: the Machine's creation, the Cluster's infrastructure becoming ready, its
//!    control plane being initialized, the Machine's infrastructure becoming ready.
//! 5. Each `unhealthyNodeConditions` entry works as in 3, on the Node.
//!
//! Machine and Node findings are reported together. A target that is not unhealthy but may
//! become so is checked again one second after its earliest timeout would expire. Only a target
//! with a Node and no deletion timestamp counts as healthy.

use std::time::Duration;

use corral_api::annotations::{MACHINE_SKIP_REMEDIATION, PAUSED, REMEDIATE_MACHINE};
use corral_api::conditions::INFRASTRUCTURE_READY;
use corral_api::conditions::cluster::CONTROL_PLANE_INITIALIZED;
use corral_api::conditions::machine::reason::{
    HAS_REMEDIATE_ANNOTATION, NODE_DELETED, NODE_STARTUP_TIMEOUT, UNHEALTHY_MACHINE, UNHEALTHY_NODE,
};
use corral_api::labels::CONTROL_PLANE;
use corral_api::{
    Cluster, DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS, Machine, MachineHealthCheckChecks,
};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

#[cfg(test)]
mod tests;

/// What is known of a target's Node.
#[derive(Clone, Copy, Debug)]
pub enum TargetNode<'a> {
    /// The Machine has no Node yet (no `status.nodeRef`).
    NotYet,
    /// The Machine's `status.nodeRef` names a Node the workload cluster no longer has.
    Deleted,
    /// The Node.
    Found(&'a Node),
}

/// One Machine a MachineHealthCheck checks, with what it is judged against.
#[derive(Clone, Copy, Debug)]
pub struct HealthCheckTarget<'a> {
    /// The Machine's Cluster.
    pub cluster: &'a Cluster,
    /// The Machine.
    pub machine: &'a Machine,
    /// Its Node.
    pub node: TargetNode<'a>,
}

/// The verdict on one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// It has a Node and passes every check: `HealthCheckSucceeded` True, counted in
    /// `status.currentHealthy`.
    Healthy,
    /// It needs remediation: `HealthCheckSucceeded` False with this reason and message.
    Unhealthy {
        /// A `HealthCheckSucceeded` reason: `HasRemediateAnnotation`, `UnhealthyMachine`,
        /// `NodeDeleted`, `NodeStartupTimeout` or `UnhealthyNode`.
        reason: &'static str,
        /// Everything found, as upstream words it.
        message: String,
    },
    /// Neither yet: not counted as healthy (so it weighs against `triggerIf`), no condition
    /// set. Checked again after `next_check_in`, when some timeout is running.
    Pending {
        /// When a running timeout would expire, plus a second.
        next_check_in: Option<Duration>,
    },
}

/// Judges one target under `checks` at time `now`.
pub fn compute_health(
    target: &HealthCheckTarget<'_>,
    checks: &MachineHealthCheckChecks,
    now: Timestamp,
) -> Health {
    let machine = target.machine;
    if has_annotation(machine, REMEDIATE_MACHINE) {
        return Health::Unhealthy {
            reason: HAS_REMEDIATE_ANNOTATION,
            message: "Health check failed: marked for remediation via cluster.x-k8s.io/remediate-machine annotation".into(),
        };
    }
    let cluster_conditions = target
        .cluster
        .status
        .as_ref()
        .map_or(&[][..], |status| &status.conditions[..]);
    // Nothing is judged before the Cluster is up, except control plane Machines, so that the
    // first one can be remediated. The Cluster's changes bring the next reconcile.
    let control_plane_initialized = is_true(cluster_conditions, CONTROL_PLANE_INITIALIZED);
    if !control_plane_initialized && !is_control_plane(machine) {
        return Health::Pending {
            next_check_in: None,
        };
    }
    if !is_true(cluster_conditions, INFRASTRUCTURE_READY) {
        return Health::Pending {
            next_check_in: None,
        };
    }

    let now_nanos = now.as_nanosecond();
    let mut next_checks: Vec<i128> = Vec::new();
    let machine_conditions = machine
        .status
        .as_ref()
        .map_or(&[][..], |status| &status.conditions[..]);
    let mut machine_messages = Vec::new();
    for check in &checks.unhealthy_machine_conditions {
        let Some(condition) = machine_conditions
            .iter()
            .find(|condition| condition.type_ == check.type_)
        else {
            continue;
        };
        if condition.status != check.status.as_str() {
            continue;
        }
        match timed_out(
            Some(&condition.last_transition_time),
            check.timeout_seconds,
            now_nanos,
        ) {
            Ok(()) => machine_messages.push(format!(
                "Condition {} on Machine is reporting status {} with reason {} for more than {}",
                check.type_,
                check.status.as_str(),
                condition.reason,
                go_duration(check.timeout_seconds.into())
            )),
            Err(next) => next_checks.extend(next),
        }
    }

    let (node_reason, node_messages) = match target.node {
        TargetNode::Deleted => {
            let name = machine
                .status
                .as_ref()
                .and_then(|status| status.node_ref.as_ref())
                .map_or("", |node| node.name.as_str());
            (NODE_DELETED, vec![format!("Node {name} has been deleted")])
        }
        TargetNode::NotYet => {
            let timeout = checks
                .node_startup_timeout_seconds
                .unwrap_or(DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS);
            let mut messages = Vec::new();
            if timeout != 0 {
                let since = startup_comparison_time(cluster_conditions, machine);
                match timed_out(since, timeout, now_nanos) {
                    Ok(()) => messages.push(format!(
                        "Node failed to report startup in {}",
                        go_duration(timeout.into())
                    )),
                    Err(next) => next_checks.extend(next),
                }
            }
            (NODE_STARTUP_TIMEOUT, messages)
        }
        TargetNode::Found(node) => {
            let node_conditions = node
                .status
                .as_ref()
                .and_then(|status| status.conditions.as_deref())
                .unwrap_or_default();
            let mut messages = Vec::new();
            for check in &checks.unhealthy_node_conditions {
                let Some(condition) = node_conditions
                    .iter()
                    .find(|condition| condition.type_ == check.type_)
                else {
                    continue;
                };
                if condition.status != check.status {
                    continue;
                }
                match timed_out(
                    condition.last_transition_time.as_ref(),
                    check.timeout_seconds,
                    now_nanos,
                ) {
                    Ok(()) => messages.push(format!(
                        "Condition {} on Node is reporting status {} with reason {} for more than {}",
                        check.type_,
                        check.status,
                        condition.reason.as_deref().unwrap_or_default(),
                        go_duration(check.timeout_seconds.into())
                    )),
                    Err(next) => next_checks.extend(next),
                }
            }
            (UNHEALTHY_NODE, messages)
        }
    };

    if machine_messages.is_empty() && node_messages.is_empty() {
        if let Some(next) = next_checks.into_iter().min() {
            return Health::Pending {
                next_check_in: Some(Duration::from_nanos(next as u64)),
            };
        }
        let deleting = machine.metadata.deletion_timestamp.is_some();
        if !deleting && matches!(target.node, TargetNode::Found(_)) {
            return Health::Healthy;
        }
        return Health::Pending {
            next_check_in: None,
        };
    }
    let reason = if machine_messages.is_empty() {
        node_reason
    } else {
        UNHEALTHY_MACHINE
    };
    let findings: Vec<String> = machine_messages
        .into_iter()
        .chain(node_messages)
        .map(|message| format!("  * {message}"))
        .collect();
    Health::Unhealthy {
        reason,
        message: format!("Health check failed:\n{}", findings.join("\n")),
    }
}

/// Why a Machine is left out of a MachineHealthCheck's targets, if it is: it is paused, or
/// asks to be skipped (upstream `shouldSkipRemediation`).
pub fn skip_reason(machine: &Machine) -> Option<String> {
    [PAUSED, MACHINE_SKIP_REMEDIATION]
        .into_iter()
        .find(|key| has_annotation(machine, key))
        .map(|key| format!("machine has {key:?} annotation"))
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// Whether `timeout_seconds` have passed since `since` (strictly, as upstream's `Before`); if
/// not, how long until a check one second after expiry, when that is in the future. A missing
/// time counts as the beginning of time, as Go's zero time does.
fn timed_out(since: Option<&Time>, timeout_seconds: i32, now: i128) -> Result<(), Option<i128>> {
    let since = since.map_or(i128::from(i64::MIN), |time| time.0.as_nanosecond());
    let timeout = i128::from(timeout_seconds) * NANOS_PER_SECOND;
    if since + timeout < now {
        return Ok(());
    }
    let next = timeout - (now - since) + NANOS_PER_SECOND;
    Err((next > 0).then_some(next))
}

/// The latest of the Machine's creation and the transitions to True of the Cluster's
/// InfrastructureReady and ControlPlaneInitialized and the Machine's InfrastructureReady.
fn startup_comparison_time<'a>(cluster: &'a [Condition], machine: &'a Machine) -> Option<&'a Time> {
    let machine_conditions = machine
        .status
        .as_ref()
        .map_or(&[][..], |status| &status.conditions[..]);
    let became_true = |conditions: &'a [Condition], type_: &str| {
        conditions
            .iter()
            .find(|condition| condition.type_ == type_ && condition.status == "True")
            .map(|condition| &condition.last_transition_time)
    };
    [
        machine.metadata.creation_timestamp.as_ref(),
        became_true(cluster, CONTROL_PLANE_INITIALIZED),
        became_true(cluster, INFRASTRUCTURE_READY),
        became_true(machine_conditions, INFRASTRUCTURE_READY),
    ]
    .into_iter()
    .flatten()
    .max()
}

fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|condition| condition.type_ == type_ && condition.status == "True")
}

fn has_annotation(machine: &Machine, key: &str) -> bool {
    machine
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|annotations| annotations.contains_key(key))
}

fn is_control_plane(machine: &Machine) -> bool {
    machine
        .metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(CONTROL_PLANE))
}

/// Whole seconds the way Go's `time.Duration` prints them: `0s`, `45s`, `5m0s`, `1h0m0s`.
fn go_duration(seconds: i64) -> String {
    if seconds == 0 {
        return "0s".into();
    }
    let sign = if seconds < 0 { "-" } else { "" };
    let seconds = seconds.unsigned_abs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    if hours > 0 {
        format!("{sign}{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{sign}{minutes}m{seconds}s")
    } else {
        format!("{sign}{seconds}s")
    }
}
