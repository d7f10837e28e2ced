//! The KubeadmControlPlane's status and v1beta2 conditions, computed from what a reconcile
//! observed (upstream `controlplane/kubeadm/reconcilers/kubeadmcontrolplane/status.go`): replica
//! counters, the lowest machine version, the selector, `initialization.controlPlaneInitialized`
//! and the conditions Available, Initialized, CertificatesAvailable, EtcdClusterHealthy,
//! ControlPlaneComponentsHealthy, MachinesReady, MachinesUpToDate, RollingOut, ScalingUp,
//! ScalingDown, Remediating, Deleting and Paused.

use std::sync::Arc;

use corral_api::{ConditionStatus, Machine, StatusVersion};
use corral_runtime::conditions::{self, NewCondition, bool_status};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::planner::MachineView;
use super::workload::WorkloadState;
use crate::api::controlplane::{KubeadmControlPlane, KubeadmControlPlaneStatus};

#[cfg(test)]
mod tests;

/// Condition types of the KubeadmControlPlane (upstream `kubeadm_control_plane_types.go`).
pub mod types {
    pub const AVAILABLE: &str = "Available";
    pub const INITIALIZED: &str = "Initialized";
    pub const CERTIFICATES_AVAILABLE: &str = "CertificatesAvailable";
    pub const ETCD_CLUSTER_HEALTHY: &str = "EtcdClusterHealthy";
    pub const CONTROL_PLANE_COMPONENTS_HEALTHY: &str = "ControlPlaneComponentsHealthy";
    pub const MACHINES_READY: &str = "MachinesReady";
    pub const MACHINES_UP_TO_DATE: &str = "MachinesUpToDate";
    pub const ROLLING_OUT: &str = "RollingOut";
    pub const SCALING_UP: &str = "ScalingUp";
    pub const SCALING_DOWN: &str = "ScalingDown";
    pub const REMEDIATING: &str = "Remediating";
    pub const DELETING: &str = "Deleting";
    pub const PAUSED: &str = "Paused";
}

/// What the status is computed from.
pub struct Observed<'a> {
    pub kcp: &'a KubeadmControlPlane,
    pub machines: &'a [Arc<Machine>],
    pub views: &'a [MachineView],
    /// The workload cluster, when it could be read.
    pub workload: Option<&'a WorkloadState>,
    /// Why the workload cluster could not be read.
    pub workload_error: Option<String>,
    pub initialized: bool,
    pub certificates: Result<(), String>,
    pub selector: String,
    /// Machines marked for remediation by a MachineHealthCheck.
    pub remediating: Vec<String>,
    /// Why remediation is held back, when it is.
    pub remediation_blocked: Option<String>,
    pub deleting: bool,
    pub paused: bool,
}

fn machine_condition_true(machine: &Machine, type_: &str) -> bool {
    machine
        .status
        .as_ref()
        .is_some_and(|status| conditions::is_true(&status.conditions, type_))
}

fn names(machines: impl Iterator<Item = String>) -> String {
    let names: Vec<String> = machines.collect();
    names.join(", ")
}

/// The new status: `previous` with counters and conditions brought up to date.
pub fn compute_status(
    previous: &KubeadmControlPlaneStatus,
    observed: &Observed<'_>,
    now: &Time,
) -> KubeadmControlPlaneStatus {
    let kcp = observed.kcp;
    let generation = kcp.metadata.generation;
    let mut status = previous.clone();
    let machines = observed.machines;
    let count =
        |filter: &dyn Fn(&Machine) -> bool| machines.iter().filter(|m| filter(m)).count() as i32;
    let desired = kcp.spec.replicas.unwrap_or(1);
    status.replicas = Some(machines.len() as i32);
    status.ready_replicas = Some(count(&|m| machine_condition_true(m, "Ready")));
    status.available_replicas = Some(count(&|m| machine_condition_true(m, "Available")));
    let up_to_date = observed.views.iter().filter(|v| v.up_to_date).count() as i32;
    status.up_to_date_replicas = Some(up_to_date);
    status.selector = Some(observed.selector.clone());
    status.observed_generation = generation;
    if observed.initialized {
        status.initialization.control_plane_initialized = Some(true);
    }
    let initialized = status.initialization.control_plane_initialized == Some(true);

    // The lowest version, and how many machines run each (ordered old to new).
    let mut versions: Vec<(Vec<u64>, String)> = machines
        .iter()
        .filter_map(|m| m.spec.version.clone())
        .map(|v| (version_key(&v), v))
        .collect();
    versions.sort();
    status.version = versions.first().map(|(_, v)| v.clone());
    let mut counted: Vec<StatusVersion> = Vec::new();
    for (_, version) in versions {
        match counted.iter_mut().find(|c| c.version == version) {
            Some(entry) => entry.replicas = Some(entry.replicas.unwrap_or(0) + 1),
            None => counted.push(StatusVersion {
                version,
                replicas: Some(1),
            }),
        }
    }
    status.versions = counted;

    let mut set = |condition: NewCondition| {
        conditions::set(&mut status.conditions, condition, generation, now)
    };

    set(match &observed.certificates {
        Ok(()) => NewCondition::new(
            types::CERTIFICATES_AVAILABLE,
            ConditionStatus::True,
            "Available",
        ),
        Err(message) => NewCondition::new(
            types::CERTIFICATES_AVAILABLE,
            ConditionStatus::False,
            "InternalError",
        )
        .message(message.clone()),
    });
    set(if initialized {
        NewCondition::new(types::INITIALIZED, ConditionStatus::True, "Initialized")
    } else {
        NewCondition::new(types::INITIALIZED, ConditionStatus::False, "NotInitialized")
            .message("Control plane not yet initialized")
    });

    // Etcd and the components, from the workload cluster.
    let with_node: Vec<(&Machine, String)> = machines
        .iter()
        .map(AsRef::as_ref)
        .filter_map(|m| {
            let node = m.status.as_ref()?.node_ref.as_ref()?.name.clone();
            Some((m, node))
        })
        .collect();
    let (etcd, components) = match (observed.workload, &observed.workload_error) {
        (Some(workload), _) => {
            let etcd = match &workload.members {
                Err(error) => NewCondition::new(
                    types::ETCD_CLUSTER_HEALTHY,
                    ConditionStatus::Unknown,
                    "HealthUnknown",
                )
                .message(format!("Failed to get etcd members: {error}")),
                Ok(members) => {
                    let unhealthy: Vec<String> = members
                        .iter()
                        .filter(|m| !m.healthy)
                        .map(|m| m.name.clone())
                        .collect();
                    let without_member: Vec<String> = with_node
                        .iter()
                        .filter(|(_, node)| workload.member(node).is_none())
                        .map(|(m, _)| m.metadata.name.clone().unwrap_or_default())
                        .collect();
                    let without_machine: Vec<String> = members
                        .iter()
                        .filter(|member| !with_node.iter().any(|(_, node)| *node == member.name))
                        .map(|m| m.name.clone())
                        .collect();
                    if members.is_empty() {
                        NewCondition::new(
                            types::ETCD_CLUSTER_HEALTHY,
                            ConditionStatus::Unknown,
                            "HealthUnknown",
                        )
                        .message("No etcd members yet")
                    } else if unhealthy.is_empty()
                        && without_member.is_empty()
                        && without_machine.is_empty()
                    {
                        NewCondition::new(
                            types::ETCD_CLUSTER_HEALTHY,
                            ConditionStatus::True,
                            "Healthy",
                        )
                    } else {
                        let mut messages = Vec::new();
                        if !unhealthy.is_empty() {
                            messages.push(format!(
                                "Etcd members not healthy: {}",
                                unhealthy.join(", ")
                            ));
                        }
                        if !without_member.is_empty() {
                            messages.push(format!(
                                "Machines without an etcd member: {}",
                                without_member.join(", ")
                            ));
                        }
                        if !without_machine.is_empty() {
                            messages.push(format!(
                                "Etcd members without a Machine: {}",
                                without_machine.join(", ")
                            ));
                        }
                        NewCondition::new(
                            types::ETCD_CLUSTER_HEALTHY,
                            ConditionStatus::False,
                            "NotHealthy",
                        )
                        .message(messages.join("; "))
                    }
                }
            };
            let unhealthy: Vec<String> = with_node
                .iter()
                .filter_map(|(m, node)| {
                    let missing = workload.unhealthy_components(node);
                    (!missing.is_empty()).then(|| {
                        format!(
                            "{} ({})",
                            m.metadata.name.clone().unwrap_or_default(),
                            missing.join(", ")
                        )
                    })
                })
                .collect();
            let components = if with_node.is_empty() {
                NewCondition::new(
                    types::CONTROL_PLANE_COMPONENTS_HEALTHY,
                    ConditionStatus::Unknown,
                    "HealthUnknown",
                )
                .message("No control plane Machine has a Node yet")
            } else if unhealthy.is_empty() {
                NewCondition::new(
                    types::CONTROL_PLANE_COMPONENTS_HEALTHY,
                    ConditionStatus::True,
                    "Healthy",
                )
            } else {
                NewCondition::new(
                    types::CONTROL_PLANE_COMPONENTS_HEALTHY,
                    ConditionStatus::False,
                    "NotHealthy",
                )
                .message(format!(
                    "Components not healthy on {}",
                    unhealthy.join("; ")
                ))
            };
            (etcd, components)
        }
        (None, error) => {
            let message = error
                .clone()
                .unwrap_or_else(|| "The workload cluster is not reachable yet".into());
            (
                NewCondition::new(
                    types::ETCD_CLUSTER_HEALTHY,
                    ConditionStatus::Unknown,
                    "ConnectionDown",
                )
                .message(message.clone()),
                NewCondition::new(
                    types::CONTROL_PLANE_COMPONENTS_HEALTHY,
                    ConditionStatus::Unknown,
                    "ConnectionDown",
                )
                .message(message),
            )
        }
    };
    let quorum = observed
        .workload
        .and_then(|w| w.members.as_ref().ok())
        .is_some_and(|members| {
            let healthy = members.iter().filter(|m| m.healthy).count();
            !members.is_empty() && healthy > members.len() / 2
        });
    let api_server = observed.workload.is_some_and(|w| {
        with_node
            .iter()
            .any(|(_, node)| w.pods.get(&format!("kube-apiserver-{node}")) == Some(&true))
    });
    set(etcd);
    set(components);

    // Available (upstream: initialized, etcd quorum, at least one healthy API server).
    set(if observed.deleting {
        NewCondition::new(types::AVAILABLE, ConditionStatus::False, "Deleting")
            .message("Control plane is being deleted")
    } else if initialized && quorum && api_server {
        NewCondition::new(types::AVAILABLE, ConditionStatus::True, "Available")
    } else {
        let mut why = Vec::new();
        if !initialized {
            why.push("Control plane not yet initialized");
        }
        if !quorum {
            why.push("Etcd quorum not confirmed");
        }
        if !api_server {
            why.push("No healthy API server");
        }
        NewCondition::new(types::AVAILABLE, ConditionStatus::False, "NotAvailable")
            .message(why.join("; "))
    });

    let not_ready: Vec<String> = machines
        .iter()
        .filter(|m| !machine_condition_true(m, "Ready"))
        .map(|m| m.metadata.name.clone().unwrap_or_default())
        .collect();
    set(if machines.is_empty() {
        NewCondition::new(types::MACHINES_READY, ConditionStatus::True, "NoReplicas")
    } else if not_ready.is_empty() {
        NewCondition::new(types::MACHINES_READY, ConditionStatus::True, "Ready")
    } else {
        NewCondition::new(types::MACHINES_READY, ConditionStatus::False, "NotReady")
            .message(format!("Machines not ready: {}", not_ready.join(", ")))
    });
    let outdated = names(
        observed
            .views
            .iter()
            .filter(|v| !v.up_to_date)
            .map(|v| v.name.clone()),
    );
    set(if outdated.is_empty() {
        NewCondition::new(types::MACHINES_UP_TO_DATE, bool_status(true), "UpToDate")
    } else {
        NewCondition::new(
            types::MACHINES_UP_TO_DATE,
            ConditionStatus::False,
            "NotUpToDate",
        )
        .message(format!("Machines not up-to-date: {outdated}"))
    });
    set(if outdated.is_empty() {
        NewCondition::new(types::ROLLING_OUT, ConditionStatus::False, "NotRollingOut")
    } else {
        NewCondition::new(types::ROLLING_OUT, ConditionStatus::True, "RollingOut").message(format!(
            "Rolling out {} not up-to-date replicas",
            machines.len() as i32 - up_to_date
        ))
    });
    let current = machines.len() as i32;
    set(if current < desired && !observed.deleting {
        NewCondition::new(types::SCALING_UP, ConditionStatus::True, "ScalingUp")
            .message(format!("Scaling up from {current} to {desired} replicas"))
    } else {
        NewCondition::new(types::SCALING_UP, ConditionStatus::False, "NotScalingUp")
    });
    set(if current > desired || (observed.deleting && current > 0) {
        NewCondition::new(types::SCALING_DOWN, ConditionStatus::True, "ScalingDown").message(
            format!(
                "Scaling down from {current} to {} replicas",
                if observed.deleting { 0 } else { desired }
            ),
        )
    } else {
        NewCondition::new(
            types::SCALING_DOWN,
            ConditionStatus::False,
            "NotScalingDown",
        )
    });
    set(if observed.remediating.is_empty() {
        NewCondition::new(types::REMEDIATING, ConditionStatus::False, "NotRemediating")
    } else {
        let mut condition =
            NewCondition::new(types::REMEDIATING, ConditionStatus::True, "Remediating");
        condition.message = match &observed.remediation_blocked {
            Some(why) => format!(
                "Machines to remediate: {}; {why}",
                observed.remediating.join(", ")
            ),
            None => format!("Remediating {}", observed.remediating.join(", ")),
        };
        if observed.remediation_blocked.is_some() {
            condition.reason = "RemediationBlocked".into();
        }
        condition
    });
    set(if observed.deleting {
        NewCondition::new(types::DELETING, ConditionStatus::True, "Deleting")
            .message(format!("Deleting {current} Machines"))
    } else {
        NewCondition::new(types::DELETING, ConditionStatus::False, "NotDeleting")
    });
    set(if observed.paused {
        NewCondition::new(types::PAUSED, ConditionStatus::True, "Paused")
    } else {
        NewCondition::new(types::PAUSED, ConditionStatus::False, "NotPaused")
    });
    status
}

/// A version's numbers, for ordering (`v1.30.2` before `v1.31.0`).
pub fn version_key(version: &str) -> Vec<u64> {
    version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map_while(|part| part.parse::<u64>().ok())
        .collect()
}

/// Condition types the KubeadmControlPlane sets on its Machines (upstream
/// `KubeadmControlPlaneMachine*Condition`), and their reasons.
pub mod machine {
    /// The Machine matches the control plane's spec (upstream sets it on control plane
    /// Machines; `corral describe` and the Cluster's ControlPlaneMachinesUpToDate read it).
    pub const UP_TO_DATE: &str = corral_api::conditions::machine::UP_TO_DATE;
    pub const API_SERVER_POD_HEALTHY: &str = "APIServerPodHealthy";
    pub const CONTROLLER_MANAGER_POD_HEALTHY: &str = "ControllerManagerPodHealthy";
    pub const SCHEDULER_POD_HEALTHY: &str = "SchedulerPodHealthy";
    pub const ETCD_POD_HEALTHY: &str = "EtcdPodHealthy";
    pub const ETCD_MEMBER_HEALTHY: &str = "EtcdMemberHealthy";

    /// The static Pod condition of each component (`workload::COMPONENTS` order).
    pub const POD_CONDITIONS: [(&str, &str); 4] = [
        ("etcd", ETCD_POD_HEALTHY),
        ("kube-apiserver", API_SERVER_POD_HEALTHY),
        ("kube-controller-manager", CONTROLLER_MANAGER_POD_HEALTHY),
        ("kube-scheduler", SCHEDULER_POD_HEALTHY),
    ];

    /// Reasons.
    pub mod reason {
        pub const UP_TO_DATE: &str = "UpToDate";
        pub const NOT_UP_TO_DATE: &str = "NotUpToDate";
        pub const POD_RUNNING: &str = "Running";
        pub const POD_PROVISIONING: &str = "Provisioning";
        pub const POD_DOES_NOT_EXIST: &str = "DoesNotExist";
        pub const INSPECTION_FAILED: &str = "InspectionFailed";
        pub const MEMBER_HEALTHY: &str = "Healthy";
        pub const MEMBER_NOT_HEALTHY: &str = "NotHealthy";
    }
}

/// The conditions the control plane sets on one of its Machines: UpToDate from `outdated`
/// (the reasons it is not, see `machines::outdated_reasons`), and, once the Machine has a Node,
/// the health of its static Pods and of its etcd member, from the workload cluster. A Pod that
/// exists but is not Ready counts as still provisioning (the simulated and kubeadm static Pods
/// run or wait for their probes; upstream's finer container states are not observed).
pub fn machine_conditions(
    machine: &Machine,
    outdated: &[String],
    workload: Option<&WorkloadState>,
    workload_error: Option<&str>,
) -> Vec<NewCondition> {
    use machine::reason;
    let mut result = vec![if outdated.is_empty() {
        NewCondition::new(
            machine::UP_TO_DATE,
            ConditionStatus::True,
            reason::UP_TO_DATE,
        )
    } else {
        let lines: Vec<String> = outdated.iter().map(|m| format!("* {m}")).collect();
        NewCondition::new(
            machine::UP_TO_DATE,
            ConditionStatus::False,
            reason::NOT_UP_TO_DATE,
        )
        .message(lines.join("\n"))
    }];
    let node = machine
        .status
        .as_ref()
        .and_then(|s| s.node_ref.as_ref())
        .map(|n| n.name.clone());
    let all_health = machine::POD_CONDITIONS
        .iter()
        .map(|(_, type_)| *type_)
        .chain([machine::ETCD_MEMBER_HEALTHY]);
    let (Some(node), Some(workload)) = (node, workload) else {
        let message = match workload_error {
            Some(error) => format!("Cannot inspect the workload cluster: {error}"),
            None => "Waiting for the Machine to have a Node".to_string(),
        };
        // Before the Node, nothing to inspect yet: leave what was there (upstream too keeps
        // the last observation while the workload cluster cannot be reached).
        if workload_error.is_some() {
            for type_ in all_health {
                result.push(
                    NewCondition::new(type_, ConditionStatus::Unknown, reason::INSPECTION_FAILED)
                        .message(message.clone()),
                );
            }
        }
        return result;
    };
    for (component, type_) in machine::POD_CONDITIONS {
        let pod = format!("{component}-{node}");
        result.push(match workload.pods.get(&pod) {
            Some(true) => NewCondition::new(type_, ConditionStatus::True, reason::POD_RUNNING),
            Some(false) => {
                NewCondition::new(type_, ConditionStatus::False, reason::POD_PROVISIONING)
                    .message("Waiting for startup or readiness probes")
            }
            None => NewCondition::new(type_, ConditionStatus::False, reason::POD_DOES_NOT_EXIST)
                .message("Pod does not exist"),
        });
    }
    result.push(match &workload.members {
        Err(error) => NewCondition::new(
            machine::ETCD_MEMBER_HEALTHY,
            ConditionStatus::Unknown,
            reason::INSPECTION_FAILED,
        )
        .message(format!("Failed to get the etcd members: {error}")),
        Ok(_) => match workload.member(&node) {
            Some(member) if member.healthy => NewCondition::new(
                machine::ETCD_MEMBER_HEALTHY,
                ConditionStatus::True,
                reason::MEMBER_HEALTHY,
            ),
            Some(_) => NewCondition::new(
                machine::ETCD_MEMBER_HEALTHY,
                ConditionStatus::False,
                reason::MEMBER_NOT_HEALTHY,
            )
            .message("Etcd member is not healthy (not answering, or an alarm is raised)"),
            None => NewCondition::new(
                machine::ETCD_MEMBER_HEALTHY,
                ConditionStatus::False,
                reason::MEMBER_NOT_HEALTHY,
            )
            .message(format!("Etcd doesn't have an etcd member for Node {node}")),
        },
    });
    result
}
