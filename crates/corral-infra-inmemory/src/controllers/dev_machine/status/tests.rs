use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::{Wait, compute_requeue, compute_step_conditions, compute_waiting_conditions, settling};
use crate::cloud::{ClusterKey, StepStatus, Vm, VmKey};
use crate::controllers::conditions::{Desired, set, summary};

fn vm(vm: StepStatus, node: StepStatus, control_plane: Option<(StepStatus, StepStatus)>) -> Vm {
    let (etcd, api_server) = control_plane.unzip();
    Vm {
        key: VmKey {
            cluster: ClusterKey {
                namespace: "default".into(),
                name: "c".into(),
            },
            name: "m".into(),
        },
        provider_id: "in-memory://m".into(),
        addresses: Vec::new(),
        vm,
        node,
        etcd,
        api_server,
        node_ready: None,
    }
}

fn reasons(conditions: &[Desired]) -> Vec<(&str, bool, &str)> {
    conditions
        .iter()
        .map(|condition| (condition.type_, condition.status, condition.reason))
        .collect()
}

/// The Ready summary of step conditions.
fn ready(steps: &[Desired]) -> Desired {
    let mut conditions = Vec::new();
    for step in steps {
        set(&mut conditions, step, None);
    }
    summary(
        &conditions,
        &[
            "VMProvisioned",
            "NodeProvisioned",
            "EtcdProvisioned",
            "APIServerProvisioned",
        ],
    )
}

fn done() -> StepStatus {
    StepStatus::Done {
        at: Timestamp::UNIX_EPOCH,
    }
}

fn until(seconds: i64) -> StepStatus {
    StepStatus::InProgress {
        until: Timestamp::from_second(seconds).unwrap(),
    }
}

#[test]
fn waiting_machines_say_what_for() {
    assert_eq!(
        reasons(&compute_waiting_conditions(Wait::BootstrapData, false)),
        [
            ("VMProvisioned", false, "WaitingForBootstrapData"),
            ("NodeProvisioned", false, "WaitingForVMProvisioned"),
        ]
    );
    assert_eq!(
        reasons(&compute_waiting_conditions(
            Wait::ClusterInfrastructure,
            true
        )),
        [
            (
                "VMProvisioned",
                false,
                "WaitingForClusterInfrastructureReady"
            ),
            ("NodeProvisioned", false, "WaitingForVMProvisioned"),
            ("EtcdProvisioned", false, "WaitingForVMProvisioned"),
            ("APIServerProvisioned", false, "WaitingForVMProvisioned"),
        ]
    );
}

#[test]
fn step_conditions_follow_the_boot() {
    let booting = vm(
        until(10),
        StepStatus::Waiting,
        Some((StepStatus::Waiting, StepStatus::Waiting)),
    );
    assert_eq!(
        reasons(&compute_step_conditions(&booting)),
        [
            ("VMProvisioned", false, "WaitingForStartupTimeout"),
            ("NodeProvisioned", false, "WaitingForVMProvisioned"),
            ("EtcdProvisioned", false, "WaitingForVMProvisioned"),
            ("APIServerProvisioned", false, "WaitingForVMProvisioned"),
        ]
    );
    let node_starting = vm(
        done(),
        until(12),
        Some((StepStatus::Waiting, StepStatus::Waiting)),
    );
    assert_eq!(
        reasons(&compute_step_conditions(&node_starting)),
        [
            ("VMProvisioned", true, "Provisioned"),
            ("NodeProvisioned", false, "WaitingForStartupTimeout"),
            ("EtcdProvisioned", false, "WaitingForNodeProvisioned"),
            ("APIServerProvisioned", false, "WaitingForNodeProvisioned"),
        ]
    );
    let up = compute_step_conditions(&vm(done(), done(), Some((done(), done()))));
    assert!(up.iter().all(|condition| condition.status));
    assert_eq!(ready(&up).reason, "Ready");
}

#[test]
fn a_failed_boot_names_the_annotation() {
    let failed = vm(
        StepStatus::Failed {
            message: "injected".into(),
        },
        StepStatus::Waiting,
        None,
    );
    let conditions = compute_step_conditions(&failed);
    assert_eq!(conditions[0].reason, "BootFailed");
    assert!(
        conditions[0]
            .message
            .contains("inmemory.infrastructure.cluster.x-k8s.io/fail-boot")
    );
    let ready = ready(&conditions);
    assert!(!ready.status);
    assert!(
        ready.message.starts_with("VMProvisioned: BootFailed ("),
        "{}",
        ready.message
    );
    assert_eq!(compute_requeue(&failed, Timestamp::UNIX_EPOCH), None);
}

#[test]
fn requeue_when_the_next_step_is_due() {
    let booting = vm(until(10), StepStatus::Waiting, None);
    assert_eq!(
        compute_requeue(&booting, Timestamp::from_second(4).unwrap()),
        Some(Duration::from_secs(6))
    );
    // Past due: the effect is under way; look again soon.
    assert_eq!(
        compute_requeue(&booting, Timestamp::from_second(11).unwrap()),
        Some(Duration::from_millis(100))
    );
    assert_eq!(
        compute_requeue(&vm(done(), done(), None), Timestamp::UNIX_EPOCH),
        None
    );
}

#[test]
fn a_due_step_is_given_a_moment_to_complete_before_the_status_is_written() {
    let at = |millis: i64| Timestamp::from_millisecond(millis).unwrap();
    // The Node is due at 10 s (the VM is up): it registers in the cloud right now.
    let registering = vm(done(), until(10), None);
    assert_eq!(
        settling(&registering, at(10_000)),
        Some(Duration::from_millis(20))
    );
    // The longer it takes, the less often it is looked at.
    assert_eq!(
        settling(&registering, at(10_050)),
        Some(Duration::from_millis(50))
    );
    assert_eq!(
        settling(&registering, at(11_000)),
        Some(Duration::from_millis(100))
    );
    // Not due yet: the status says the step is under way, and is written.
    assert_eq!(settling(&registering, at(9_000)), None);
    // Due too long: the status says so, and is written.
    assert_eq!(settling(&registering, at(12_000)), None);
    // Nothing under way.
    assert_eq!(settling(&vm(done(), done(), None), at(10_000)), None);
}
