//! Cases after upstream `core/reconcilers/machinedeployment/machinedeployment_status_test.go`
//! (`Test_setReplicas`, `Test_setPhase`, `Test_setAvailableCondition`,
//! `Test_setRollingOutCondition`, `Test_setScalingUpCondition`,
//! `Test_setScalingDownCondition`, `Test_setDeletingCondition`).

use corral_api::{MachineDeploymentSpec, MachineSetStatus, MachineStatus, StatusVersion};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::*;

fn now() -> Time {
    Time("2026-08-21T12:00:00Z".parse().unwrap())
}

fn machine_deployment(replicas: i32) -> MachineDeployment {
    MachineDeployment {
        metadata: ObjectMeta {
            name: Some("md".into()),
            generation: Some(1),
            ..Default::default()
        },
        spec: MachineDeploymentSpec {
            replicas: Some(replicas),
            ..Default::default()
        },
        status: None,
    }
}

fn machine_set(replicas: i32, available: i32, version: &str) -> MachineSet {
    MachineSet {
        metadata: ObjectMeta::default(),
        spec: Default::default(),
        status: Some(MachineSetStatus {
            replicas: Some(replicas),
            ready_replicas: Some(available),
            available_replicas: Some(available),
            up_to_date_replicas: Some(available),
            versions: vec![StatusVersion {
                version: version.into(),
                replicas: Some(replicas),
            }],
            ..Default::default()
        }),
    }
}

fn machine(name: &str, up_to_date: Option<(&str, &str)>) -> Machine {
    let conditions = up_to_date
        .map(|(status, message)| Condition {
            type_: "UpToDate".into(),
            status: status.into(),
            reason: if status == "True" {
                "UpToDate"
            } else {
                "NotUpToDate"
            }
            .into(),
            message: message.into(),
            last_transition_time: now(),
            observed_generation: None,
        })
        .into_iter()
        .collect();
    Machine {
        metadata: ObjectMeta {
            name: Some(name.into()),
            creation_timestamp: Some(Time("2026-08-21T10:00:00Z".parse().unwrap())),
            ..Default::default()
        },
        spec: Default::default(),
        status: Some(MachineStatus {
            conditions,
            ..Default::default()
        }),
    }
}

fn get<'a>(machine_deployment: &'a MachineDeployment, type_: &str) -> &'a Condition {
    conditions::get(
        &machine_deployment.status.as_ref().unwrap().conditions,
        type_,
    )
    .unwrap_or_else(|| panic!("no {type_} condition"))
}

fn rolling(surge: i32, unavailable: i32) -> RolloutStrategy {
    RolloutStrategy::RollingUpdate {
        max_surge: IntOrString::Int(surge),
        max_unavailable: IntOrString::Int(unavailable),
    }
}

#[test]
fn replicas_and_versions_add_up_over_machine_sets() {
    let sets = [machine_set(2, 2, "v1.35.0"), machine_set(1, 0, "v1.36.0")];
    let refs: Vec<&MachineSet> = sets.iter().collect();
    let mut md = machine_deployment(3);
    set_replicas(&mut md, &refs, None);
    let status = md.status.as_ref().unwrap();
    assert_eq!(status.replicas, Some(3));
    assert_eq!(status.available_replicas, Some(2));
    assert_eq!(status.versions.len(), 2);
    assert_eq!(status.versions[0].version, "v1.35.0");

    // The plan says which MachineSet is current: the other's Machines are not up to date.
    let mut named = sets.clone();
    named[0].metadata.name = Some("old".into());
    named[1].metadata.name = Some("new".into());
    let refs: Vec<&MachineSet> = named.iter().collect();
    let mut md = machine_deployment(3);
    set_replicas(&mut md, &refs, Some(Some("new")));
    assert_eq!(md.status.as_ref().unwrap().up_to_date_replicas, Some(0));
    set_replicas(&mut md, &refs, Some(None));
    assert_eq!(md.status.as_ref().unwrap().up_to_date_replicas, Some(0));
    set_replicas(&mut md, &refs, Some(Some("old")));
    assert_eq!(md.status.as_ref().unwrap().up_to_date_replicas, Some(2));

    // No MachineSet reports: nothing to say.
    let mut md = machine_deployment(3);
    set_replicas(&mut md, &[], None);
    assert_eq!(md.status.as_ref().unwrap().available_replicas, None);
    set_available_condition(&mut md, &rolling(1, 0), &now());
    let c = get(&md, "Available");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("Unknown", "WaitingForAvailableReplicasSet")
    );
}

#[test]
fn phase_compares_machines_with_replicas() {
    let sets = [machine_set(2, 2, "v1")];
    let refs: Vec<&MachineSet> = sets.iter().collect();
    let phase = |replicas: i32| {
        let mut md = machine_deployment(replicas);
        set_phase(&mut md, &refs);
        md.status.unwrap().phase.unwrap()
    };
    assert_eq!(phase(2), MachineDeploymentPhase::Running);
    assert_eq!(phase(3), MachineDeploymentPhase::ScalingUp);
    assert_eq!(phase(1), MachineDeploymentPhase::ScalingDown);
}

#[test]
fn available_allows_max_unavailable() {
    let sets = [machine_set(3, 2, "v1")];
    let refs: Vec<&MachineSet> = sets.iter().collect();
    let mut md = machine_deployment(3);
    set_replicas(&mut md, &refs, None);
    set_available_condition(&mut md, &rolling(0, 1), &now());
    assert_eq!(get(&md, "Available").status, "True");
    set_available_condition(&mut md, &rolling(1, 0), &now());
    let c = get(&md, "Available");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NotAvailable")
    );
    assert_eq!(
        c.message,
        "2 available replicas, at least 3 required (spec.rollout.strategy.rollingUpdate.maxUnavailable is 0, spec.replicas is 3)"
    );
    set_available_condition(&mut md, &RolloutStrategy::OnDelete, &now());
    assert_eq!(
        get(&md, "Available").message,
        "2 available replicas, at least 3 required"
    );
}

#[test]
fn rolling_out_counts_machines_not_up_to_date_version_first() {
    let machines = [
        machine(
            "m1",
            Some((
                "False",
                "* Version v1.35.0, v1.36.0 required\n* DevMachine is not up-to-date",
            )),
        ),
        machine("m2", Some(("False", "* DevMachine is not up-to-date"))),
        machine("m3", Some(("True", ""))),
        machine("m4", None),
    ];
    let refs: Vec<&Machine> = machines.iter().collect();
    let mut md = machine_deployment(3);
    set_rolling_out_condition(&mut md, &refs, &now());
    let c = get(&md, "RollingOut");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "RollingOut")
    );
    assert_eq!(
        c.message,
        "Rolling out 2 not up-to-date replicas\n* Version v1.35.0, v1.36.0 required\n* DevMachine is not up-to-date"
    );
    set_rolling_out_condition(&mut md, &refs[2..], &now());
    assert_eq!(get(&md, "RollingOut").reason, "NotRollingOut");
}

#[test]
fn scaling_conditions_compare_machines_with_replicas() {
    let sets = [machine_set(2, 2, "v1")];
    let refs: Vec<&MachineSet> = sets.iter().collect();
    let mut md = machine_deployment(5);
    set_scaling_up_condition(&mut md, &refs, &[], &now());
    assert_eq!(
        get(&md, "ScalingUp").message,
        "Scaling up from 2 to 5 replicas"
    );
    set_scaling_up_condition(
        &mut md,
        &refs,
        &["TestInfraMachineTemplate does not exist".into()],
        &now(),
    );
    assert_eq!(
        get(&md, "ScalingUp").message,
        "Scaling up from 2 to 5 replicas is blocked because TestInfraMachineTemplate does not exist"
    );
    set_scaling_down_condition(&mut md, &refs, &[], &now());
    assert_eq!(get(&md, "ScalingDown").reason, "NotScalingDown");

    let mut md = machine_deployment(1);
    set_scaling_down_condition(&mut md, &refs, &[], &now());
    let c = get(&md, "ScalingDown");
    assert_eq!(
        (c.status.as_str(), c.message.as_str()),
        ("True", "Scaling down from 2 to 1 replicas")
    );
    set_scaling_up_condition(&mut md, &refs, &["X does not exist".into()], &now());
    assert_eq!(
        get(&md, "ScalingUp").message,
        "Scaling up would be blocked because X does not exist"
    );
}

#[test]
fn deleting_counts_what_is_left() {
    let sets = [machine_set(0, 0, "v1")];
    let refs: Vec<&MachineSet> = sets.iter().collect();
    let mut md = machine_deployment(3);
    md.metadata.deletion_timestamp = Some(now());
    set_deleting_condition(&mut md, &refs, &[], &now());
    assert_eq!(get(&md, "Deleting").message, "Deleting 1 MachineSets");
    let machines = [machine("m1", None)];
    let machine_refs: Vec<&Machine> = machines.iter().collect();
    set_deleting_condition(&mut md, &refs, &machine_refs, &now());
    assert_eq!(get(&md, "Deleting").message, "Deleting 1 Machine");
    set_deleting_condition(&mut md, &[], &[], &now());
    assert_eq!(get(&md, "Deleting").message, "Deletion completed");
}
