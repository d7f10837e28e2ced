//! Vectors ported from upstream
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_targets_test.go`
//! (`TestHealthCheckTargets`), plus Corral's own for the rules those leave out.

use std::collections::BTreeMap;
use std::time::Duration;

use corral_api::annotations::{MACHINE_SKIP_REMEDIATION, PAUSED, REMEDIATE_MACHINE};
use corral_api::conditions::INFRASTRUCTURE_READY;
use corral_api::conditions::cluster::CONTROL_PLANE_INITIALIZED;
use corral_api::labels::CONTROL_PLANE;
use corral_api::{
    Cluster, ClusterSpec, ClusterStatus, ConditionStatus, Machine, MachineHealthCheckChecks,
    MachineNodeReference, MachineSpec, MachineStatus, UnhealthyMachineCondition,
    UnhealthyNodeCondition,
};
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::*;

fn now() -> Timestamp {
    "2026-08-21T12:00:00Z".parse().unwrap()
}

fn ago(seconds: i64) -> Time {
    Time(now() - SignedDuration::from_secs(seconds))
}

fn condition(type_: &str, status: &str, reason: &str, since: Time) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: since,
        observed_generation: None,
    }
}

/// Upstream's test Cluster: infrastructure ready and control plane initialized an hour ago.
fn cluster() -> Cluster {
    Cluster {
        metadata: ObjectMeta {
            name: Some("test-cluster".into()),
            namespace: Some("test-mhc".into()),
            ..ObjectMeta::default()
        },
        spec: ClusterSpec::default(),
        status: Some(ClusterStatus {
            conditions: vec![
                condition(INFRASTRUCTURE_READY, "True", "Ready", ago(3600)),
                condition(CONTROL_PLANE_INITIALIZED, "True", "Initialized", ago(3600)),
            ],
            ..ClusterStatus::default()
        }),
    }
}

/// Upstream's `newTestMachine`: a running Machine with Node `node1`.
fn machine() -> Machine {
    Machine {
        metadata: ObjectMeta {
            name: Some("machine1".into()),
            namespace: Some("test-mhc".into()),
            ..ObjectMeta::default()
        },
        spec: MachineSpec {
            cluster_name: "test-cluster".into(),
            ..MachineSpec::default()
        },
        status: Some(MachineStatus {
            node_ref: Some(MachineNodeReference {
                name: "node1".into(),
            }),
            ..MachineStatus::default()
        }),
    }
}

fn created(mut machine: Machine, time: Time) -> Machine {
    machine.metadata.creation_timestamp = Some(time);
    machine
}

fn with_condition(mut machine: Machine, condition: Condition) -> Machine {
    machine.status.as_mut().unwrap().conditions.push(condition);
    machine
}

fn annotated(mut machine: Machine, key: &str) -> Machine {
    machine
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.into(), String::new());
    machine
}

fn node(conditions: Vec<NodeCondition>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("node1".into()),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(NodeStatus {
            conditions: Some(conditions),
            ..NodeStatus::default()
        }),
    }
}

/// Upstream's `newTestUnhealthyNode`.
fn unhealthy_node(type_: &str, status: &str, reason: &str, for_seconds: i64) -> Node {
    node(vec![NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        last_transition_time: Some(ago(for_seconds)),
        ..NodeCondition::default()
    }])
}

/// Upstream's test MachineHealthCheck: Ready Unknown or False for 5 minutes on the Node,
/// EtcdPodHealthy Unknown or False for 5 minutes on the Machine, and the default startup
/// timeout of 10 minutes.
fn checks() -> MachineHealthCheckChecks {
    let node_condition = |status: &str| UnhealthyNodeCondition {
        type_: "Ready".into(),
        status: status.into(),
        timeout_seconds: 300,
    };
    let machine_condition = |status| UnhealthyMachineCondition {
        type_: "EtcdPodHealthy".into(),
        status,
        timeout_seconds: 300,
    };
    MachineHealthCheckChecks {
        node_startup_timeout_seconds: None,
        unhealthy_node_conditions: vec![node_condition("Unknown"), node_condition("False")],
        unhealthy_machine_conditions: vec![
            machine_condition(ConditionStatus::Unknown),
            machine_condition(ConditionStatus::False),
        ],
    }
}

fn health(machine: &Machine, node: TargetNode<'_>, checks: &MachineHealthCheckChecks) -> Health {
    let cluster = cluster();
    let target = HealthCheckTarget {
        cluster: &cluster,
        machine,
        node,
    };
    compute_health(&target, checks, now())
}

fn pending(seconds: u64) -> Health {
    Health::Pending {
        next_check_in: Some(Duration::from_secs(seconds)),
    }
}

fn unhealthy(reason: &'static str, findings: &[&str]) -> Health {
    let findings: Vec<String> = findings
        .iter()
        .map(|finding| format!("  * {finding}"))
        .collect();
    Health::Unhealthy {
        reason,
        message: format!("Health check failed:\n{}", findings.join("\n")),
    }
}

#[test]
fn upstream_when_the_node_has_not_yet_started_for_shorter_than_the_timeout() {
    let machine = created(machine(), ago(400));
    assert_eq!(
        health(&machine, TargetNode::NotYet, &checks()),
        pending(600 - 400 + 1)
    );
}

#[test]
fn upstream_when_the_node_has_not_yet_started_for_shorter_than_the_timeout_and_infra_is_ready() {
    // Created 100 s ago, infrastructure ready 50 s after that: the clock starts then.
    let machine = with_condition(
        created(machine(), ago(100)),
        condition(INFRASTRUCTURE_READY, "True", "Ready", ago(50)),
    );
    assert_eq!(
        health(&machine, TargetNode::NotYet, &checks()),
        pending(600 - 50 + 1)
    );
}

#[test]
fn upstream_when_the_node_has_not_yet_started_for_longer_than_the_timeout() {
    let machine = created(machine(), ago(1200));
    assert_eq!(
        health(&machine, TargetNode::NotYet, &checks()),
        unhealthy(
            NODE_STARTUP_TIMEOUT,
            &["Node failed to report startup in 10m0s"]
        )
    );
}

#[test]
fn upstream_when_the_node_has_gone_away() {
    assert_eq!(
        health(&machine(), TargetNode::Deleted, &checks()),
        unhealthy(NODE_DELETED, &["Node node1 has been deleted"])
    );
}

#[test]
fn upstream_when_the_node_has_been_in_an_unknown_state_for_shorter_than_the_timeout() {
    let node = unhealthy_node("Ready", "Unknown", "NodeStatusUnknown", 200);
    assert_eq!(
        health(&machine(), TargetNode::Found(&node), &checks()),
        pending(101)
    );
    let node = unhealthy_node("Ready", "Unknown", "NodeStatusUnknown", 100);
    assert_eq!(
        health(&machine(), TargetNode::Found(&node), &checks()),
        pending(201)
    );
}

#[test]
fn upstream_when_the_node_has_been_in_an_unknown_state_for_longer_than_the_timeout() {
    let node = unhealthy_node("Ready", "Unknown", "NodeStatusUnknown", 400);
    assert_eq!(
        health(&machine(), TargetNode::Found(&node), &checks()),
        unhealthy(
            UNHEALTHY_NODE,
            &[
                "Condition Ready on Node is reporting status Unknown with reason NodeStatusUnknown for more than 5m0s"
            ]
        )
    );
}

#[test]
fn upstream_when_the_machine_condition_has_been_unhealthy_for_shorter_than_the_timeout() {
    let machine = with_condition(
        machine(),
        condition("EtcdPodHealthy", "False", "Failed", ago(200)),
    );
    let node = node(vec![]);
    assert_eq!(
        health(&machine, TargetNode::Found(&node), &checks()),
        pending(101)
    );
}

#[test]
fn upstream_when_the_machine_condition_has_been_unhealthy_for_longer_than_the_timeout() {
    let machine = with_condition(
        machine(),
        condition("EtcdPodHealthy", "False", "Failed", ago(400)),
    );
    let node = node(vec![]);
    assert_eq!(
        health(&machine, TargetNode::Found(&node), &checks()),
        unhealthy(
            UNHEALTHY_MACHINE,
            &[
                "Condition EtcdPodHealthy on Machine is reporting status False with reason Failed for more than 5m0s"
            ]
        )
    );
}

#[test]
fn upstream_when_the_node_is_healthy() {
    let node = node(vec![]);
    assert_eq!(
        health(&machine(), TargetNode::Found(&node), &checks()),
        Health::Healthy
    );
}

#[test]
fn upstream_when_the_node_has_not_started_for_a_long_time_but_the_startup_timeout_is_disabled() {
    let machine = created(machine(), ago(400));
    let checks = MachineHealthCheckChecks {
        node_startup_timeout_seconds: Some(0),
        ..checks()
    };
    // Not healthy, for it has no Node, and nothing to wait for.
    assert_eq!(
        health(&machine, TargetNode::NotYet, &checks),
        Health::Pending {
            next_check_in: None
        }
    );
}

#[test]
fn upstream_when_the_machine_is_manually_marked_for_remediation() {
    let machine = annotated(machine(), REMEDIATE_MACHINE);
    assert_eq!(
        health(&machine, TargetNode::NotYet, &checks()),
        Health::Unhealthy {
            reason: HAS_REMEDIATE_ANNOTATION,
            message: "Health check failed: marked for remediation via cluster.x-k8s.io/remediate-machine annotation".into(),
        }
    );
}

#[test]
fn upstream_health_check_with_empty_unhealthy_conditions() {
    let checks = MachineHealthCheckChecks::default();
    let node = node(vec![NodeCondition {
        type_: "Ready".into(),
        status: "False".into(),
        ..NodeCondition::default()
    }]);
    assert_eq!(
        health(&machine(), TargetNode::Deleted, &checks),
        unhealthy(NODE_DELETED, &["Node node1 has been deleted"]),
        "and missing node"
    );
    assert_eq!(
        health(&machine(), TargetNode::Found(&node), &checks),
        Health::Healthy,
        "and node"
    );
}

#[test]
fn machine_and_node_findings_are_reported_together() {
    let machine = with_condition(
        machine(),
        condition("EtcdPodHealthy", "Unknown", "Lost", ago(301)),
    );
    let node = unhealthy_node("Ready", "False", "KubeletDown", 900);
    assert_eq!(
        health(&machine, TargetNode::Found(&node), &checks()),
        unhealthy(
            UNHEALTHY_MACHINE,
            &[
                "Condition EtcdPodHealthy on Machine is reporting status Unknown with reason Lost for more than 5m0s",
                "Condition Ready on Node is reporting status False with reason KubeletDown for more than 5m0s",
            ]
        )
    );
}

#[test]
fn a_timeout_expires_strictly_after_it_has_passed() {
    let node = unhealthy_node("Ready", "Unknown", "NodeStatusUnknown", 300);
    assert_eq!(
        health(&machine(), TargetNode::Found(&node), &checks()),
        pending(1)
    );
    let node = unhealthy_node("Ready", "Unknown", "NodeStatusUnknown", 301);
    assert!(matches!(
        health(&machine(), TargetNode::Found(&node), &checks()),
        Health::Unhealthy { .. }
    ));
}

#[test]
fn the_earliest_running_timeout_decides_when_to_check_again() {
    let machine = with_condition(
        machine(),
        condition("EtcdPodHealthy", "False", "Failed", ago(250)),
    );
    let node = unhealthy_node("Ready", "Unknown", "NodeStatusUnknown", 100);
    assert_eq!(
        health(&machine, TargetNode::Found(&node), &checks()),
        pending(51)
    );
}

#[test]
fn conditions_with_another_status_do_not_count() {
    let machine = with_condition(
        machine(),
        condition("EtcdPodHealthy", "True", "Running", ago(4000)),
    );
    let node = unhealthy_node("Ready", "True", "KubeletReady", 4000);
    assert_eq!(
        health(&machine, TargetNode::Found(&node), &checks()),
        Health::Healthy
    );
}

#[test]
fn a_custom_startup_timeout_counts_from_the_latest_readiness() {
    let checks = MachineHealthCheckChecks {
        node_startup_timeout_seconds: Some(60),
        ..checks()
    };
    let machine = created(machine(), ago(3600));
    assert_eq!(
        health(&machine, TargetNode::NotYet, &checks),
        unhealthy(
            NODE_STARTUP_TIMEOUT,
            &["Node failed to report startup in 1m0s"]
        )
    );
    // The Cluster's infrastructure became ready 10 s ago: the clock restarted then.
    let mut cluster = cluster();
    cluster.status.as_mut().unwrap().conditions[0].last_transition_time = ago(10);
    let target = HealthCheckTarget {
        cluster: &cluster,
        machine: &machine,
        node: TargetNode::NotYet,
    };
    assert_eq!(compute_health(&target, &checks, now()), pending(51));
}

#[test]
fn nothing_is_judged_before_the_cluster_is_up() {
    let mut cluster = cluster();
    cluster.status.as_mut().unwrap().conditions[1].status = "False".into();
    let broken = created(machine(), ago(9999));
    let worker = HealthCheckTarget {
        cluster: &cluster,
        machine: &broken,
        node: TargetNode::Deleted,
    };
    assert_eq!(
        compute_health(&worker, &checks(), now()),
        Health::Pending {
            next_check_in: None
        },
        "a worker waits for the control plane"
    );
    let mut control_plane_machine = broken.clone();
    control_plane_machine.metadata.labels =
        Some(BTreeMap::from([(CONTROL_PLANE.into(), String::new())]));
    let control_plane = HealthCheckTarget {
        machine: &control_plane_machine,
        ..worker
    };
    assert!(
        matches!(
            compute_health(&control_plane, &checks(), now()),
            Health::Unhealthy {
                reason: NODE_DELETED,
                ..
            }
        ),
        "a control plane Machine is judged, so that the first one can be remediated"
    );

    let mut cluster = self::cluster();
    cluster.status.as_mut().unwrap().conditions[0].status = "Unknown".into();
    let target = HealthCheckTarget {
        cluster: &cluster,
        machine: &control_plane_machine,
        node: TargetNode::Deleted,
    };
    assert_eq!(
        compute_health(&target, &checks(), now()),
        Health::Pending {
            next_check_in: None
        },
        "nobody is judged before the infrastructure is ready"
    );
    // The annotation wins even then.
    let marked = annotated(broken, REMEDIATE_MACHINE);
    let target = HealthCheckTarget {
        cluster: &cluster,
        machine: &marked,
        node: TargetNode::NotYet,
    };
    assert!(matches!(
        compute_health(&target, &checks(), now()),
        Health::Unhealthy {
            reason: HAS_REMEDIATE_ANNOTATION,
            ..
        }
    ));
}

#[test]
fn a_machine_being_deleted_is_not_healthy() {
    let mut machine = machine();
    machine.metadata.deletion_timestamp = Some(ago(1));
    let node = node(vec![]);
    assert_eq!(
        health(&machine, TargetNode::Found(&node), &checks()),
        Health::Pending {
            next_check_in: None
        }
    );
}

#[test]
fn paused_and_skipped_machines_are_no_targets() {
    assert_eq!(skip_reason(&machine()), None);
    assert_eq!(
        skip_reason(&annotated(machine(), PAUSED)),
        Some("machine has \"cluster.x-k8s.io/paused\" annotation".into())
    );
    assert_eq!(
        skip_reason(&annotated(machine(), MACHINE_SKIP_REMEDIATION)),
        Some("machine has \"cluster.x-k8s.io/skip-remediation\" annotation".into())
    );
}

#[test]
fn durations_print_as_go_prints_them() {
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(45), "45s");
    assert_eq!(go_duration(300), "5m0s");
    assert_eq!(go_duration(600), "10m0s");
    assert_eq!(go_duration(3600), "1h0m0s");
    assert_eq!(go_duration(3725), "1h2m5s");
    assert_eq!(go_duration(-90), "-1m30s");
}
