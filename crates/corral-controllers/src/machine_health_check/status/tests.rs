//! What a MachineHealthCheck writes on itself and on its Machines (upstream
//! `machinehealthcheck_controller_test.go`: the label and owner cases of
//! `TestMachineHealthCheck_Reconcile`, and `patchUnhealthyTargets`' rule that a remediation in
//! progress is not overwritten).

use std::collections::BTreeMap;

use corral_api::{
    Cluster, ClusterSpec, Machine, MachineHealthCheck, MachineHealthCheckSpec, MachineSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, LabelSelector, ObjectMeta, OwnerReference, Time,
};
use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::machine_health_check::remediation_allowed::RemediationAllowance;

fn now() -> Time {
    Time("2026-08-21T12:00:00Z".parse::<Timestamp>().unwrap())
}

fn later() -> Time {
    Time("2026-08-21T12:05:00Z".parse::<Timestamp>().unwrap())
}

fn cluster(paused: bool) -> Cluster {
    Cluster {
        metadata: ObjectMeta {
            name: Some("test-cluster".into()),
            namespace: Some("default".into()),
            uid: Some("cluster-uid".into()),
            ..ObjectMeta::default()
        },
        spec: ClusterSpec {
            paused: paused.then_some(true),
            ..ClusterSpec::default()
        },
        status: None,
    }
}

fn check() -> MachineHealthCheck {
    MachineHealthCheck {
        metadata: ObjectMeta {
            name: Some("mhc".into()),
            namespace: Some("default".into()),
            generation: Some(3),
            ..ObjectMeta::default()
        },
        spec: MachineHealthCheckSpec {
            cluster_name: "test-cluster".into(),
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([("pool".into(), "a".into())])),
                match_expressions: None,
            },
            ..MachineHealthCheckSpec::default()
        },
        status: None,
    }
}

fn machine() -> Machine {
    Machine {
        metadata: ObjectMeta {
            name: Some("m1".into()),
            namespace: Some("default".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: MachineSpec::default(),
        status: None,
    }
}

fn machine_condition<'a>(machine: &'a Machine, type_: &str) -> Option<&'a Condition> {
    conditions::get(&machine.status.as_ref()?.conditions, type_)
}

fn check_condition<'a>(check: &'a MachineHealthCheck, type_: &str) -> Option<&'a Condition> {
    conditions::get(&check.status.as_ref()?.conditions, type_)
}

#[test]
fn the_cluster_owns_and_labels_its_health_checks() {
    // "it should ensure the correct cluster-name label when the label has the wrong value",
    // "it should ensure an owner reference is present when modifying existing ones".
    let mut check = check();
    check.metadata.labels = Some(BTreeMap::from([
        (CLUSTER_NAME.into(), "wrong-cluster".into()),
        ("other".into(), "kept".into()),
    ]));
    let other_owner = OwnerReference {
        api_version: "foo.bar/v1".into(),
        kind: "Foo".into(),
        name: "foo".into(),
        uid: "foo-uid".into(),
        ..OwnerReference::default()
    };
    check.metadata.owner_references = Some(vec![other_owner.clone()]);
    set_cluster_label_and_owner(&mut check, &cluster(false));
    assert_eq!(check.labels()[CLUSTER_NAME], "test-cluster");
    assert_eq!(check.labels()["other"], "kept");
    let cluster_owner = OwnerReference {
        api_version: "cluster.x-k8s.io/v1beta2".into(),
        kind: "Cluster".into(),
        name: "test-cluster".into(),
        uid: "cluster-uid".into(),
        controller: None,
        block_owner_deletion: None,
    };
    assert_eq!(
        check.metadata.owner_references,
        Some(vec![other_owner, cluster_owner.clone()])
    );

    // Idempotent; an older API version of the same owner is brought up to date, not doubled.
    check.owner_references_mut()[1].api_version = "cluster.x-k8s.io/v1beta1".into();
    set_cluster_label_and_owner(&mut check, &cluster(false));
    assert_eq!(check.owner_references().len(), 2);
    assert_eq!(check.owner_references()[1], cluster_owner);
}

#[test]
fn paused_by_the_cluster_or_the_annotation() {
    let mut check = check();
    assert!(!set_paused_condition(&mut check, &cluster(false), &now()));
    let paused = check_condition(&check, "Paused").unwrap();
    assert_eq!(
        (paused.status.as_str(), paused.reason.as_str()),
        ("False", "NotPaused")
    );

    assert!(set_paused_condition(&mut check, &cluster(true), &now()));
    let paused = check_condition(&check, "Paused").unwrap();
    assert_eq!(paused.message, "Cluster spec.paused is set to true");

    check
        .annotations_mut()
        .insert(corral_api::annotations::PAUSED.into(), String::new());
    assert!(set_paused_condition(&mut check, &cluster(false), &now()));
    let paused = check_condition(&check, "Paused").unwrap();
    assert_eq!(
        paused.message,
        "MachineHealthCheck has the cluster.x-k8s.io/paused annotation"
    );
}

#[test]
fn targets_are_sorted_and_counted() {
    let mut check = check();
    set_targets(
        &mut check,
        vec!["m3".into(), "m1".into(), "m2".into()],
        TargetCounts {
            expected: 3,
            healthy: 1,
            unhealthy: 1,
        },
    );
    let status = check.status.unwrap();
    assert_eq!(status.targets, ["m1", "m2", "m3"]);
    assert_eq!(status.expected_machines, Some(3));
    assert_eq!(status.current_healthy, Some(1));
}

#[test]
fn remediation_allowed_condition_and_change_detection() {
    let mut check = check();
    let restricted = RemediationAllowance {
        allowed: false,
        remediations_allowed: 0,
        message: Some("Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 1)".into()),
    };
    assert!(set_remediation_allowed(&mut check, &restricted, &now()));
    let condition = check_condition(&check, "RemediationAllowed")
        .unwrap()
        .clone();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "TooManyUnhealthy")
    );
    assert_eq!(condition.message, restricted.message.clone().unwrap());
    assert_eq!(condition.observed_generation, Some(3));
    assert_eq!(check.status.as_ref().unwrap().remediations_allowed, Some(0));
    // The same restriction again is no change: no second event.
    assert!(!set_remediation_allowed(&mut check, &restricted, &later()));

    let allowed = RemediationAllowance {
        allowed: true,
        remediations_allowed: 2,
        message: None,
    };
    assert!(set_remediation_allowed(&mut check, &allowed, &later()));
    let condition = check_condition(&check, "RemediationAllowed").unwrap();
    assert_eq!(
        (
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str()
        ),
        ("True", "RemediationAllowed", "")
    );
    assert_eq!(condition.last_transition_time, later());
    assert_eq!(check.status.as_ref().unwrap().remediations_allowed, Some(2));
}

#[test]
fn health_check_succeeded_follows_the_verdict_and_pending_keeps_it() {
    let mut machine = machine();
    set_health_check_succeeded_condition(
        &mut machine,
        &Health::Pending {
            next_check_in: None,
        },
        &now(),
    );
    assert!(machine_condition(&machine, "HealthCheckSucceeded").is_none());

    let unhealthy = Health::Unhealthy {
        reason: "UnhealthyNode",
        message: "Health check failed:\n  * Condition Ready on Node is reporting status False with reason KubeletNotReady for more than 5m0s".into(),
    };
    set_health_check_succeeded_condition(&mut machine, &unhealthy, &now());
    assert!(is_marked_unhealthy(&machine));
    let condition = machine_condition(&machine, "HealthCheckSucceeded").unwrap();
    assert_eq!(condition.reason, "UnhealthyNode");
    assert!(condition.message.ends_with("for more than 5m0s"));
    assert_eq!(condition.observed_generation, Some(1));

    set_health_check_succeeded_condition(
        &mut machine,
        &Health::Pending {
            next_check_in: None,
        },
        &later(),
    );
    assert!(
        is_marked_unhealthy(&machine),
        "a target not yet judged keeps its verdict"
    );

    set_health_check_succeeded_condition(&mut machine, &Health::Healthy, &later());
    let condition = machine_condition(&machine, "HealthCheckSucceeded").unwrap();
    assert_eq!(
        (
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str()
        ),
        ("True", "HealthCheckSucceeded", "")
    );
    assert_eq!(condition.last_transition_time, later());
}

#[test]
fn owner_remediated_is_not_overwritten_while_in_progress() {
    let mut machine = machine();
    assert!(mark_owner_remediated(&mut machine, &now()));
    let condition = machine_condition(&machine, "OwnerRemediated").unwrap();
    assert_eq!(
        (
            condition.status.as_str(),
            condition.reason.as_str(),
            condition.message.as_str()
        ),
        ("False", "WaitingForRemediation", "Waiting for remediation")
    );
    assert!(
        !mark_owner_remediated(&mut machine, &later()),
        "already asked"
    );

    // The owner took over: its reason stays.
    machine.status.as_mut().unwrap().conditions[0].reason = "MachineDeleting".into();
    assert!(!mark_owner_remediated(&mut machine, &later()));
    assert_eq!(
        machine_condition(&machine, "OwnerRemediated")
            .unwrap()
            .reason,
        "MachineDeleting"
    );

    // A remediation that completed (True) may be asked for again.
    machine.status.as_mut().unwrap().conditions[0].status = "True".into();
    assert!(mark_owner_remediated(&mut machine, &later()));
    let condition = machine_condition(&machine, "OwnerRemediated").unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "WaitingForRemediation")
    );
}
