//! The Cluster's status, computed from what the reconcile observed (upstream
//! `core/reconcilers/cluster/cluster_controller_status.go`). Pure functions over the desired
//! Cluster; the reconcile writes the result only when it differs from what is stored.

use std::sync::Arc;
use std::time::Duration;

use corral_api::conditions::{self as names, cluster as cluster_names, reason};
use corral_api::{
    Cluster, ClusterMachinesStatus, ClusterPhase, ConditionPolarity, ConditionStatus, Machine,
    MachineDeployment, MachineSet, StatusVersion,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use corral_runtime::cluster_cache::HealthCheckingState;
use corral_runtime::conditions::{
    self, AggregateSource, MergeStrategy, NewCondition, Priority, Reasons, SummaryOptions,
};
pub use corral_runtime::external::Observed;

/// The Cluster's descendants, by label `cluster.x-k8s.io/cluster-name`.
#[derive(Clone, Debug, Default)]
pub struct Descendants {
    /// MachineDeployments.
    pub machine_deployments: Vec<Arc<MachineDeployment>>,
    /// MachineSets.
    pub machine_sets: Vec<Arc<MachineSet>>,
    /// Machines with the control plane label.
    pub control_plane_machines: Vec<Arc<Machine>>,
    /// Other Machines, except those of MachinePools.
    pub worker_machines: Vec<Arc<Machine>>,
}

fn status_conditions(cluster: &Cluster) -> &[Condition] {
    cluster
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

fn set(cluster: &mut Cluster, condition: NewCondition, now: &Time) {
    let generation = cluster.metadata.generation;
    let status = cluster.status.get_or_insert_with(Default::default);
    conditions::set(&mut status.conditions, condition, generation, now);
}

fn deleting(cluster: &Cluster) -> bool {
    cluster.metadata.deletion_timestamp.is_some()
}

/// The phase (upstream `setPhase`): Pending; Provisioning once it references infrastructure
/// or a control plane; Provisioned once the infrastructure is provisioned and the control
/// plane endpoint known; Deleting while being deleted. Returns whether it changed.
pub fn set_phase(cluster: &mut Cluster) -> bool {
    let before = cluster.status.as_ref().and_then(|status| status.phase);
    let mut phase = before.unwrap_or(ClusterPhase::Pending);
    if cluster.spec.infrastructure_ref.is_some() || cluster.spec.control_plane_ref.is_some() {
        phase = ClusterPhase::Provisioning;
    }
    let provisioned = cluster
        .status
        .as_ref()
        .and_then(|status| status.initialization.infrastructure_provisioned)
        .unwrap_or(false);
    if provisioned && cluster.spec.control_plane_endpoint.is_valid() {
        phase = ClusterPhase::Provisioned;
    }
    if deleting(cluster) {
        phase = ClusterPhase::Deleting;
    }
    cluster.status.get_or_insert_with(Default::default).phase = Some(phase);
    before != Some(phase)
}

/// A mirrored provider condition, or what to say when the object is missing or unreadable
/// (upstream `setInfrastructureReadyCondition` / `setControlPlaneAvailableCondition`).
#[allow(clippy::too_many_arguments)]
fn referenced_object_condition(
    cluster: &Cluster,
    target: &str,
    source_type: &str,
    kind: &str,
    observed: &Observed,
    done: bool,
    done_field: &str,
    reasons: (&str, &str),
) -> NewCondition {
    match observed {
        Observed::Found { condition } => {
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
                if done { reasons.0 } else { reasons.1 },
            )
            .message(if done {
                String::new()
            } else {
                format!("{kind} {done_field} is false")
            });
            match conditions::mirror(condition, source_type, target, Some(fallback)) {
                Ok(mut mirrored) => {
                    if mirrored.reason == conditions::NO_REASON_REPORTED && mirrored.is_true() {
                        mirrored.reason = reasons.0.to_owned();
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
        Observed::Failed(message) => {
            NewCondition::new(target, ConditionStatus::Unknown, reason::INTERNAL_ERROR)
                .message(message.clone())
        }
        Observed::NotFound if deleting(cluster) && done => {
            NewCondition::new(target, ConditionStatus::False, reason::OBJECT_DELETED)
                .message(format!("{kind} has been deleted"))
        }
        Observed::NotFound if done => {
            NewCondition::new(target, ConditionStatus::False, reason::OBJECT_DELETED).message(
                format!("{kind} has been deleted while the cluster still exists"),
            )
        }
        Observed::NotFound => NewCondition::new(
            target,
            ConditionStatus::False,
            reason::OBJECT_DOES_NOT_EXIST,
        )
        .message(format!("{kind} does not exist")),
    }
}

fn infrastructure_provisioned(cluster: &Cluster) -> bool {
    cluster
        .status
        .as_ref()
        .and_then(|status| status.initialization.infrastructure_provisioned)
        .unwrap_or(false)
}

fn control_plane_initialized(cluster: &Cluster) -> bool {
    cluster
        .status
        .as_ref()
        .and_then(|status| status.initialization.control_plane_initialized)
        .unwrap_or(false)
}

/// InfrastructureReady: the infrastructure cluster's Ready condition, or
/// `status.initialization.provisioned` when it reports none. Without an infrastructureRef the
/// Cluster's infrastructure counts as provisioned, as upstream's phases do, and the condition
/// says so (upstream reports an internal error there).
pub fn set_infrastructure_ready_condition(
    cluster: &mut Cluster,
    observed: Option<&Observed>,
    now: &Time,
) {
    let condition = match (&cluster.spec.infrastructure_ref, observed) {
        (Some(reference), Some(observed)) => referenced_object_condition(
            cluster,
            names::INFRASTRUCTURE_READY,
            names::READY,
            &reference.kind,
            observed,
            infrastructure_provisioned(cluster),
            "status.initialization.provisioned",
            (reason::READY, reason::NOT_READY),
        ),
        _ if cluster.spec.topology.is_some() => NewCondition::new(
            names::INFRASTRUCTURE_READY,
            ConditionStatus::False,
            reason::OBJECT_DOES_NOT_EXIST,
        )
        .message(if deleting(cluster) {
            ""
        } else {
            "Waiting for cluster topology to be reconciled"
        }),
        _ => NewCondition::new(
            names::INFRASTRUCTURE_READY,
            conditions::bool_status(infrastructure_provisioned(cluster)),
            reason::READY,
        ),
    };
    set(cluster, condition, now);
}

/// ControlPlaneAvailable: the control plane's Available condition, or
/// `status.initialization.controlPlaneInitialized` when it reports none. Without a
/// controlPlaneRef, whether a control plane Machine has a Node (upstream reports an internal
/// error there).
pub fn set_control_plane_available_condition(
    cluster: &mut Cluster,
    observed: Option<&Observed>,
    now: &Time,
) {
    let condition = match (&cluster.spec.control_plane_ref, observed) {
        (Some(reference), Some(observed)) => referenced_object_condition(
            cluster,
            cluster_names::CONTROL_PLANE_AVAILABLE,
            names::AVAILABLE,
            &reference.kind,
            observed,
            control_plane_initialized(cluster),
            "status.initialization.controlPlaneInitialized",
            (reason::AVAILABLE, reason::NOT_AVAILABLE),
        ),
        _ if cluster.spec.topology.is_some() => NewCondition::new(
            cluster_names::CONTROL_PLANE_AVAILABLE,
            ConditionStatus::False,
            reason::OBJECT_DOES_NOT_EXIST,
        )
        .message(if deleting(cluster) {
            ""
        } else {
            "Waiting for cluster topology to be reconciled"
        }),
        _ => {
            let initialized = control_plane_initialized(cluster);
            NewCondition::new(
                cluster_names::CONTROL_PLANE_AVAILABLE,
                conditions::bool_status(initialized),
                if initialized {
                    reason::AVAILABLE
                } else {
                    reason::NOT_AVAILABLE
                },
            )
        }
    };
    set(cluster, condition, now);
}

/// ControlPlaneInitialized, which never goes back once True (upstream
/// `setControlPlaneInitializedCondition`). `initialized` is what the control plane object
/// reports; without a controlPlaneRef, a control plane Machine with a Node initializes it.
pub fn set_control_plane_initialized_condition(
    cluster: &mut Cluster,
    observed: Option<&Observed>,
    initialized: bool,
    control_plane_machines: &[Arc<Machine>],
    now: &Time,
) {
    if conditions::is_true(
        status_conditions(cluster),
        cluster_names::CONTROL_PLANE_INITIALIZED,
    ) {
        return;
    }
    let target = cluster_names::CONTROL_PLANE_INITIALIZED;
    let condition = match (&cluster.spec.control_plane_ref, observed) {
        (Some(reference), Some(observed)) => match observed {
            Observed::Failed(message) => {
                NewCondition::new(target, ConditionStatus::Unknown, reason::INTERNAL_ERROR)
                    .message(message.clone())
            }
            Observed::NotFound => NewCondition::new(
                target,
                ConditionStatus::Unknown,
                reason::OBJECT_DOES_NOT_EXIST,
            )
            .message(format!("{} does not exist", reference.kind)),
            Observed::Found { .. } if initialized => NewCondition::new(
                target,
                ConditionStatus::True,
                cluster_names::reason::INITIALIZED,
            ),
            Observed::Found { .. } => NewCondition::new(
                target,
                ConditionStatus::False,
                cluster_names::reason::NOT_INITIALIZED,
            )
            .message("Control plane not yet initialized"),
        },
        _ if cluster.spec.topology.is_some() => NewCondition::new(
            target,
            ConditionStatus::Unknown,
            reason::OBJECT_DOES_NOT_EXIST,
        )
        .message(if deleting(cluster) {
            ""
        } else {
            "Waiting for cluster topology to be reconciled"
        }),
        _ if control_plane_machines.iter().any(|machine| {
            machine
                .status
                .as_ref()
                .is_some_and(|s| s.node_ref.is_some())
        }) =>
        {
            NewCondition::new(
                target,
                ConditionStatus::True,
                cluster_names::reason::INITIALIZED,
            )
        }
        _ => NewCondition::new(
            target,
            ConditionStatus::False,
            cluster_names::reason::NOT_INITIALIZED,
        )
        .message("Waiting for the first control plane machine to have status.nodeRef set"),
    };
    set(cluster, condition, now);
}

fn machine_deployment_conditions(md: &MachineDeployment) -> &[Condition] {
    md.status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

fn machine_set_conditions(ms: &MachineSet) -> &[Condition] {
    ms.status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

fn machine_conditions(machine: &Machine) -> &[Condition] {
    machine
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

fn name_of<K: kube::Resource>(object: &K) -> &str {
    object.meta().name.as_deref().unwrap_or_default()
}

/// WorkersAvailable: the MachineDeployments' Available conditions; True `NoWorkers` when
/// there are none (upstream `setWorkersAvailableCondition`).
pub fn set_workers_available_condition(
    cluster: &mut Cluster,
    machine_deployments: &[Arc<MachineDeployment>],
    now: &Time,
) {
    let sources: Vec<AggregateSource<'_>> = machine_deployments
        .iter()
        .map(|md| AggregateSource {
            kind: "MachineDeployment",
            name: name_of(md.as_ref()),
            control_plane_machine: false,
            conditions: machine_deployment_conditions(md),
        })
        .collect();
    let strategy = MergeStrategy::new(
        &[],
        Reasons {
            issue: reason::NOT_AVAILABLE,
            unknown: reason::AVAILABLE_UNKNOWN,
            info: reason::AVAILABLE,
        },
    );
    let condition = conditions::aggregate(
        &sources,
        names::AVAILABLE,
        cluster_names::WORKERS_AVAILABLE,
        &strategy,
    )
    .unwrap_or_else(|| {
        NewCondition::new(
            cluster_names::WORKERS_AVAILABLE,
            ConditionStatus::True,
            cluster_names::reason::NO_WORKERS,
        )
    });
    set(cluster, condition, now);
}

fn is_control_plane_machine(machine: &Machine) -> bool {
    machine
        .metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(corral_api::labels::CONTROL_PLANE))
}

/// `control_plane`: whether `machines` are control plane Machines (the caller sorted them).
fn machines_condition(
    machines: &[&Machine],
    control_plane: bool,
    source_type: &str,
    target: &str,
    reasons: Reasons<'_>,
) -> NewCondition {
    let sources: Vec<AggregateSource<'_>> = machines
        .iter()
        .map(|machine| AggregateSource {
            kind: "Machine",
            name: name_of(*machine),
            control_plane_machine: control_plane,
            conditions: machine_conditions(machine),
        })
        .collect();
    conditions::aggregate(
        &sources,
        source_type,
        target,
        &MergeStrategy::new(&[], reasons),
    )
    .unwrap_or_else(|| NewCondition::new(target, ConditionStatus::True, reason::NO_REPLICAS))
}

/// ControlPlaneMachinesReady, WorkerMachinesReady, ControlPlaneMachinesUpToDate and
/// WorkerMachinesUpToDate: aggregates of the Machines' Ready and UpToDate conditions. Machines
/// younger than 10 s without an UpToDate condition are left out of the latter, so that it does
/// not flicker while their owner sets it. Returns when a left-out Machine turns 10 s old.
pub fn set_machines_conditions(
    cluster: &mut Cluster,
    descendants: &Descendants,
    now: &Time,
) -> Option<Duration> {
    let ready_reasons = Reasons {
        issue: reason::NOT_READY,
        unknown: reason::READY_UNKNOWN,
        info: reason::READY,
    };
    let up_to_date_reasons = Reasons {
        issue: reason::NOT_UP_TO_DATE,
        unknown: reason::UP_TO_DATE_UNKNOWN,
        info: reason::UP_TO_DATE,
    };
    let mut requeue = None;
    let mut up_to_date_candidates = |machines: &[Arc<Machine>]| -> Vec<Arc<Machine>> {
        machines
            .iter()
            .filter(|machine| {
                if conditions::get(machine_conditions(machine), names::machine::UP_TO_DATE)
                    .is_some()
                {
                    return true;
                }
                let age = machine
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|created| now.0.duration_since(created.0))
                    .and_then(|age| Duration::try_from(age).ok())
                    .unwrap_or(Duration::MAX);
                let settle = Duration::from_secs(10);
                if age > settle {
                    true
                } else {
                    requeue = corral_runtime::sooner(
                        requeue,
                        Some(settle - age + Duration::from_secs(1)),
                    );
                    false
                }
            })
            .cloned()
            .collect()
    };
    let control_plane_up_to_date = up_to_date_candidates(&descendants.control_plane_machines);
    let workers_up_to_date = up_to_date_candidates(&descendants.worker_machines);
    let updates = [
        machines_condition(
            &refs(&descendants.control_plane_machines),
            true,
            names::READY,
            cluster_names::CONTROL_PLANE_MACHINES_READY,
            ready_reasons,
        ),
        machines_condition(
            &refs(&descendants.worker_machines),
            false,
            names::READY,
            cluster_names::WORKER_MACHINES_READY,
            ready_reasons,
        ),
        machines_condition(
            &refs(&control_plane_up_to_date),
            true,
            names::machine::UP_TO_DATE,
            cluster_names::CONTROL_PLANE_MACHINES_UP_TO_DATE,
            up_to_date_reasons,
        ),
        machines_condition(
            &refs(&workers_up_to_date),
            false,
            names::machine::UP_TO_DATE,
            cluster_names::WORKER_MACHINES_UP_TO_DATE,
            up_to_date_reasons,
        ),
    ];
    for condition in updates {
        set(cluster, condition, now);
    }
    requeue
}

/// RollingOut, ScalingUp and ScalingDown: aggregates, with negative polarity, of the same
/// conditions of the control plane (when it reports them), the MachineDeployments and, for
/// scaling, the MachineSets the Cluster owns directly (upstream `setRollingOutCondition`,
/// `setScalingUpCondition`, `setScalingDownCondition`).
pub fn set_rollout_and_scaling_conditions(
    cluster: &mut Cluster,
    control_plane: Option<(&str, &str, &[Condition])>,
    descendants: &Descendants,
    now: &Time,
) {
    let cluster_name = name_of(cluster).to_owned();
    for (type_, reasons, include_machine_sets) in [
        (
            names::ROLLING_OUT,
            (
                reason::ROLLING_OUT,
                cluster_names::reason::ROLLING_OUT_UNKNOWN,
                reason::NOT_ROLLING_OUT,
            ),
            false,
        ),
        (
            names::SCALING_UP,
            (
                reason::SCALING_UP,
                cluster_names::reason::SCALING_UP_UNKNOWN,
                reason::NOT_SCALING_UP,
            ),
            true,
        ),
        (
            names::SCALING_DOWN,
            (
                reason::SCALING_DOWN,
                cluster_names::reason::SCALING_DOWN_UNKNOWN,
                reason::NOT_SCALING_DOWN,
            ),
            true,
        ),
    ] {
        let mut sources = Vec::new();
        // The control plane counts only when it reports the condition: the contract does not
        // require it to.
        if let Some((kind, name, cp_conditions)) = control_plane
            && conditions::get(cp_conditions, type_).is_some()
        {
            sources.push(AggregateSource {
                kind,
                name,
                control_plane_machine: false,
                conditions: cp_conditions,
            });
        }
        for md in &descendants.machine_deployments {
            sources.push(AggregateSource {
                kind: "MachineDeployment",
                name: name_of(md.as_ref()),
                control_plane_machine: false,
                conditions: machine_deployment_conditions(md),
            });
        }
        if include_machine_sets {
            for ms in &descendants.machine_sets {
                if is_owned_by_cluster(&ms.metadata, &cluster_name) {
                    sources.push(AggregateSource {
                        kind: "MachineSet",
                        name: name_of(ms.as_ref()),
                        control_plane_machine: false,
                        conditions: machine_set_conditions(ms),
                    });
                }
            }
        }
        let negative = [type_];
        let strategy = MergeStrategy {
            priority: Box::new(move |c: &Condition| conditions::default_priority(c, &negative)),
            target_positive: false,
            reasons: Reasons {
                issue: reasons.0,
                unknown: reasons.1,
                info: reasons.2,
            },
        };
        let condition = conditions::aggregate(&sources, type_, type_, &strategy)
            .unwrap_or_else(|| NewCondition::new(type_, ConditionStatus::False, reasons.2));
        set(cluster, condition, now);
    }
}

fn refs(machines: &[Arc<Machine>]) -> Vec<&Machine> {
    machines.iter().map(Arc::as_ref).collect()
}

/// Whether an object has an owner reference to the Cluster named `cluster`.
pub fn is_owned_by_cluster(
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    cluster: &str,
) -> bool {
    metadata.owner_references.iter().flatten().any(|owner| {
        owner.kind == "Cluster"
            && owner.name == cluster
            && corral_runtime::external::api_group_of(&owner.api_version) == corral_api::GROUP
    })
}

/// Remediating: True while Machines wait for their owner to remediate them (OwnerRemediated
/// False); else False, naming unhealthy Machines that will not be remediated (upstream
/// `setRemediatingCondition`).
pub fn set_remediating_condition(cluster: &mut Cluster, descendants: &Descendants, now: &Time) {
    let machines: Vec<&Machine> = descendants
        .control_plane_machines
        .iter()
        .chain(&descendants.worker_machines)
        .map(AsRef::as_ref)
        .collect();
    let has_false = |machine: &Machine, type_: &str| {
        conditions::get(machine_conditions(machine), type_).is_some_and(|c| c.status == "False")
    };
    let to_remediate: Vec<&Machine> = machines
        .iter()
        .copied()
        .filter(|m| has_false(m, names::machine::OWNER_REMEDIATED))
        .collect();
    let condition = if to_remediate.is_empty() {
        let mut unhealthy: Vec<&str> = machines
            .iter()
            .filter(|m| has_false(m, names::machine::HEALTH_CHECK_SUCCEEDED))
            .map(|m| name_of(*m))
            .collect();
        unhealthy.sort_unstable();
        let message = match unhealthy.len() {
            0 => String::new(),
            1 => format!(
                "Machine {} is not healthy (not to be remediated)",
                unhealthy[0]
            ),
            n => format!(
                "Machines {} are not healthy (not to be remediated)",
                list_to_string(&unhealthy, 3, n)
            ),
        };
        NewCondition::new(
            names::REMEDIATING,
            ConditionStatus::False,
            reason::NOT_REMEDIATING,
        )
        .message(message)
    } else {
        let sources: Vec<AggregateSource<'_>> = to_remediate
            .iter()
            .map(|machine| AggregateSource {
                kind: "Machine",
                name: name_of(*machine),
                control_plane_machine: is_control_plane_machine(machine),
                conditions: machine_conditions(machine),
            })
            .collect();
        let aggregated = conditions::aggregate(
            &sources,
            names::machine::OWNER_REMEDIATED,
            names::REMEDIATING,
            &MergeStrategy::new(&[], conditions::DEFAULT_REASONS),
        );
        NewCondition::new(
            names::REMEDIATING,
            ConditionStatus::True,
            reason::REMEDIATING,
        )
        .message(aggregated.map(|c| c.message).unwrap_or_default())
    };
    set(cluster, condition, now);
}

/// Up to `limit` names, then how many more (upstream `ListToString`).
pub fn list_to_string(names: &[&str], limit: usize, total: usize) -> String {
    let shown = names
        .iter()
        .take(limit)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if total > limit {
        format!("{shown}, ... ({} more)", total - limit)
    } else {
        shown
    }
}

/// Deleting: False `NotDeleting`, or True with the step deletion waits on.
pub fn set_deleting_condition(
    cluster: &mut Cluster,
    reason_message: Option<(&str, &str)>,
    now: &Time,
) {
    let condition = match (deleting(cluster), reason_message) {
        (true, Some((reason, message))) => {
            NewCondition::new(names::DELETING, ConditionStatus::True, reason).message(message)
        }
        (true, None) => NewCondition::new(names::DELETING, ConditionStatus::True, reason::DELETING),
        (false, _) => NewCondition::new(
            names::DELETING,
            ConditionStatus::False,
            reason::NOT_DELETING,
        ),
    };
    set(cluster, condition, now);
}

/// RemoteConnectionProbe (upstream `setRemoteConnectionProbeCondition`): False "not
/// established yet" until the cache has tried often enough, then True while probes succeed,
/// and False once they have failed for longer than the grace period. Returns when the grace
/// period ends, for a requeue.
pub fn set_remote_connection_probe_condition(
    cluster: &mut Cluster,
    health: &HealthCheckingState,
    grace_period: Duration,
    now: &Time,
) -> Option<Duration> {
    let target = cluster_names::REMOTE_CONNECTION_PROBE;
    let Some(last_success) = health.last_probe_success_time else {
        if health.consecutive_failures < corral_runtime::cluster_cache::FIRST_CONNECTION_ATTEMPTS {
            if conditions::get(status_conditions(cluster), target).is_none() {
                set(
                    cluster,
                    NewCondition::new(
                        target,
                        ConditionStatus::False,
                        cluster_names::reason::PROBE_FAILED,
                    )
                    .message("Remote connection not established yet"),
                    now,
                );
            }
            return None;
        }
        set(
            cluster,
            NewCondition::new(
                target,
                ConditionStatus::False,
                cluster_names::reason::PROBE_FAILED,
            )
            .message("Remote connection probe failed"),
            now,
        );
        return None;
    };
    let since = now
        .0
        .duration_since(last_success)
        .try_into()
        .unwrap_or(Duration::ZERO);
    if health.consecutive_failures > 0 && since > grace_period {
        set(
            cluster,
            NewCondition::new(
                target,
                ConditionStatus::False,
                cluster_names::reason::PROBE_FAILED,
            )
            .message(format!(
                "Remote connection probe failed, probe last succeeded at {}",
                Time(Timestamp::from_second(last_success.as_second()).unwrap_or(last_success))
                    .0
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
            )),
            now,
        );
        return None;
    }
    set(
        cluster,
        NewCondition::new(
            target,
            ConditionStatus::True,
            cluster_names::reason::PROBE_SUCCEEDED,
        ),
        now,
    );
    (health.consecutive_failures > 0)
        .then(|| grace_period.saturating_sub(since) + Duration::from_secs(1))
}

/// Available: a summary of Deleting (negative), RemoteConnectionProbe, InfrastructureReady,
/// ControlPlaneAvailable, WorkersAvailable, TopologyReconciled (ignored when missing without a
/// topology) and the availability gates (upstream `setAvailableCondition`). While the Cluster
/// is deleting, a deleted or missing infrastructure or control plane counts as information.
pub fn set_available_condition(cluster: &mut Cluster, now: &Time) {
    let mut for_types: Vec<String> = [
        names::DELETING,
        cluster_names::REMOTE_CONNECTION_PROBE,
        names::INFRASTRUCTURE_READY,
        cluster_names::CONTROL_PLANE_AVAILABLE,
        cluster_names::WORKERS_AVAILABLE,
        cluster_names::TOPOLOGY_RECONCILED,
    ]
    .iter()
    .map(|t| (*t).to_owned())
    .collect();
    let mut negative: Vec<String> = vec![names::DELETING.to_owned()];
    for gate in &cluster.spec.availability_gates {
        for_types.push(gate.condition_type.clone());
        if gate.polarity == Some(ConditionPolarity::Negative) {
            negative.push(gate.condition_type.clone());
        }
    }
    let is_deleting = deleting(cluster);
    let negative_refs: Vec<&str> = negative.iter().map(String::as_str).collect();
    let priority = move |condition: &Condition| -> Priority {
        if is_deleting {
            let gone = condition.reason == reason::OBJECT_DELETED
                || condition.reason == reason::OBJECT_DOES_NOT_EXIST;
            if gone
                && (condition.type_ == names::INFRASTRUCTURE_READY
                    || condition.type_ == cluster_names::CONTROL_PLANE_AVAILABLE)
            {
                return Priority::Info;
            }
        }
        if condition.type_ == cluster_names::TOPOLOGY_RECONCILED
            && condition.status == "False"
            && condition.reason != cluster_names::reason::TOPOLOGY_RECONCILE_FAILED
            && condition.reason != "ClusterClassNotReconciled"
        {
            return Priority::Info;
        }
        conditions::default_priority(condition, &negative_refs)
    };
    let ignore: &[&str] = if cluster.spec.topology.is_none() {
        &[cluster_names::TOPOLOGY_RECONCILED]
    } else {
        &[]
    };
    let name = name_of(cluster).to_owned();
    let condition = conditions::summary(
        "Cluster",
        &name,
        status_conditions(cluster),
        names::AVAILABLE,
        SummaryOptions {
            for_types,
            ignore_if_missing: ignore,
            overrides: Vec::new(),
            strategy: MergeStrategy {
                priority: Box::new(priority),
                target_positive: true,
                reasons: Reasons {
                    issue: reason::NOT_AVAILABLE,
                    unknown: reason::AVAILABLE_UNKNOWN,
                    info: reason::AVAILABLE,
                },
            },
        },
    );
    set(cluster, condition, now);
}

/// `status.controlPlane` from the control plane object's contract fields, or counted from
/// control plane Machines when there is no controlPlaneRef (upstream `setControlPlaneReplicas`).
pub fn set_control_plane_replicas(
    cluster: &mut Cluster,
    from_control_plane: Option<ClusterMachinesStatus>,
    control_plane_machines: &[Arc<Machine>],
) {
    let counts = if cluster.spec.control_plane_ref.is_some() || cluster.spec.topology.is_some() {
        from_control_plane.unwrap_or_default()
    } else {
        let mut counts = count_machines(control_plane_machines);
        counts.desired_replicas = counts.replicas;
        counts
    };
    let status = cluster.status.get_or_insert_with(Default::default);
    let upgrade_plan = std::mem::take(&mut status.control_plane.upgrade_plan);
    status.control_plane = ClusterMachinesStatus {
        upgrade_plan,
        ..counts
    };
}

fn count_machines(machines: &[Arc<Machine>]) -> ClusterMachinesStatus {
    let mut counts = ClusterMachinesStatus::default();
    let add = |field: &mut Option<i32>, yes: bool| {
        if yes {
            *field = Some(field.unwrap_or(0) + 1);
        }
    };
    for machine in machines {
        let c = machine_conditions(machine);
        add(&mut counts.replicas, true);
        add(
            &mut counts.ready_replicas,
            conditions::is_true(c, names::READY),
        );
        add(
            &mut counts.available_replicas,
            conditions::is_true(c, names::AVAILABLE),
        );
        add(
            &mut counts.up_to_date_replicas,
            conditions::is_true(c, names::machine::UP_TO_DATE),
        );
    }
    counts.versions = versions_of(machines);
    counts
}

/// Machines per Kubernetes version, oldest version first (upstream `VersionsFromMachines`,
/// ordered by semantic version).
fn versions_of(machines: &[Arc<Machine>]) -> Vec<StatusVersion> {
    let mut counts: std::collections::BTreeMap<String, i32> = Default::default();
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

fn merge_versions(versions: impl IntoIterator<Item = StatusVersion>) -> Vec<StatusVersion> {
    let mut counts: std::collections::BTreeMap<String, i32> = Default::default();
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
    merged.sort_by(|a, b| compare_semver(&a.version, &b.version));
    merged
}

/// Orders `v1.30.2`-style versions numerically; anything else after them, alphabetically.
fn compare_semver(a: &str, b: &str) -> std::cmp::Ordering {
    let parse = |v: &str| -> Option<Vec<u64>> {
        let core = v.trim_start_matches('v').split(['-', '+']).next()?;
        core.split('.').map(|part| part.parse().ok()).collect()
    };
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// `status.workers`: the sums over MachineDeployments, the MachineSets and standalone
/// Machines the Cluster owns directly (upstream `setWorkersReplicas`).
pub fn set_workers_replicas(cluster: &mut Cluster, descendants: &Descendants) {
    let cluster_name = name_of(cluster).to_owned();
    let mut counts = ClusterMachinesStatus::default();
    let add = |field: &mut Option<i32>, value: Option<i32>| {
        if let Some(value) = value {
            *field = Some(field.unwrap_or(0) + value);
        }
    };
    let mut versions = Vec::new();
    for md in &descendants.machine_deployments {
        add(&mut counts.desired_replicas, md.spec.replicas);
        if let Some(status) = &md.status {
            add(&mut counts.replicas, status.replicas);
            add(&mut counts.ready_replicas, status.ready_replicas);
            add(&mut counts.available_replicas, status.available_replicas);
            add(&mut counts.up_to_date_replicas, status.up_to_date_replicas);
            versions.extend(status.versions.iter().cloned());
        }
    }
    for ms in &descendants.machine_sets {
        if !is_owned_by_cluster(&ms.metadata, &cluster_name) {
            continue;
        }
        add(&mut counts.desired_replicas, ms.spec.replicas);
        if let Some(status) = &ms.status {
            add(&mut counts.replicas, status.replicas);
            add(&mut counts.ready_replicas, status.ready_replicas);
            add(&mut counts.available_replicas, status.available_replicas);
            add(&mut counts.up_to_date_replicas, status.up_to_date_replicas);
            versions.extend(status.versions.iter().cloned());
        }
    }
    let standalone: Vec<Arc<Machine>> = descendants
        .worker_machines
        .iter()
        .filter(|m| is_owned_by_cluster(&m.metadata, &cluster_name))
        .cloned()
        .collect();
    let machines = count_machines(&standalone);
    add(&mut counts.desired_replicas, machines.replicas);
    add(&mut counts.replicas, machines.replicas);
    add(&mut counts.ready_replicas, machines.ready_replicas);
    add(&mut counts.available_replicas, machines.available_replicas);
    add(
        &mut counts.up_to_date_replicas,
        machines.up_to_date_replicas,
    );
    versions.extend(machines.versions);
    counts.versions = merge_versions(versions);
    let status = cluster.status.get_or_insert_with(Default::default);
    let upgrade_plan = std::mem::take(&mut status.workers.upgrade_plan);
    status.workers = ClusterMachinesStatus {
        upgrade_plan,
        ..counts
    };
}

/// The Paused condition (upstream `util/paused`): True when the Cluster has `spec.paused` or
/// the object has the paused annotation, saying which.
pub fn paused_condition(cluster_paused: bool, kind: &str, annotated: bool) -> NewCondition {
    if cluster_paused || annotated {
        let mut messages = Vec::new();
        if cluster_paused {
            messages.push("Cluster spec.paused is set to true".to_owned());
        }
        if annotated {
            messages.push(format!(
                "{kind} has the {} annotation",
                corral_api::annotations::PAUSED
            ));
        }
        NewCondition::new(names::PAUSED, ConditionStatus::True, reason::PAUSED)
            .message(messages.join(", "))
    } else {
        NewCondition::new(names::PAUSED, ConditionStatus::False, reason::NOT_PAUSED)
    }
}

/// Sets the Paused condition on the Cluster.
pub fn set_paused_condition(cluster: &mut Cluster, now: &Time) -> bool {
    let paused = cluster.spec.paused.unwrap_or(false);
    let annotated = corral_runtime::has_paused_annotation(cluster);
    let condition = paused_condition(paused, "Cluster", annotated);
    let is_paused = condition.is_true();
    set(cluster, condition, now);
    is_paused
}
