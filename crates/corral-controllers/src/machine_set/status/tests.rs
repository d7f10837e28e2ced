//! Cases after upstream `core/reconcilers/machineset/machineset_controller_status_test.go`
//! (`Test_setReplicas`, `Test_setScalingUpCondition`, `Test_setScalingDownCondition`,
//! `Test_setMachinesReadyCondition`, `Test_setMachinesUpToDateCondition`,
//! `Test_setRemediatingCondition`, `Test_setDeletingCondition`) and `newMachineUpToDateCondition`.

use std::collections::BTreeMap;

use corral_api::{
    Bootstrap, ContractVersionedObjectReference, MachineDeploymentSpec, MachineSetSpec,
    MachineSpec, MachineStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};
use k8s_openapi::jiff::SignedDuration;

use super::*;

fn now() -> Time {
    Time("2026-08-21T12:00:00Z".parse().unwrap())
}

fn ago(seconds: i64) -> Time {
    Time(now().0 - SignedDuration::from_secs(seconds))
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: ago(3600),
        observed_generation: None,
    }
}

fn machine(name: &str, conditions: Vec<Condition>) -> Machine {
    Machine {
        metadata: ObjectMeta {
            name: Some(name.into()),
            creation_timestamp: Some(ago(3600)),
            ..Default::default()
        },
        spec: MachineSpec {
            version: Some("v1.36.0".into()),
            ..Default::default()
        },
        status: Some(MachineStatus {
            conditions,
            ..Default::default()
        }),
    }
}

fn machine_set(replicas: Option<i32>) -> MachineSet {
    MachineSet {
        metadata: ObjectMeta {
            name: Some("ms".into()),
            generation: Some(1),
            creation_timestamp: Some(ago(7200)),
            ..Default::default()
        },
        spec: MachineSetSpec {
            replicas,
            ..Default::default()
        },
        status: None,
    }
}

fn get<'a>(machine_set: &'a MachineSet, type_: &str) -> &'a Condition {
    conditions::get(&machine_set.status.as_ref().unwrap().conditions, type_)
        .unwrap_or_else(|| panic!("no {type_} condition"))
}

fn refs(machines: &[Machine]) -> Vec<&Machine> {
    machines.iter().collect()
}

#[test]
fn selector_string_sorts_requirements_by_key() {
    let selector = LabelSelector {
        match_labels: Some(BTreeMap::from([
            (
                "cluster.x-k8s.io/cluster-name".to_owned(),
                "prod".to_owned(),
            ),
            ("b".to_owned(), "2".to_owned()),
        ])),
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "a".into(),
            operator: "Exists".into(),
            values: None,
        }]),
    };
    assert_eq!(
        selector_string(&selector).unwrap(),
        "a,b=2,cluster.x-k8s.io/cluster-name=prod"
    );
    assert_eq!(selector_string(&LabelSelector::default()).unwrap(), "");
}

#[test]
fn replicas_count_machines_by_their_conditions() {
    let machines = vec![
        machine(
            "m1",
            vec![
                condition("Ready", "True", "Ready", ""),
                condition("Available", "True", "Available", ""),
                condition("UpToDate", "True", "UpToDate", ""),
            ],
        ),
        machine("m2", vec![condition("Ready", "True", "Ready", "")]),
        machine("m3", vec![condition("Ready", "False", "NotReady", "")]),
    ];
    let mut ms = machine_set(Some(3));
    set_replicas(&mut ms, &refs(&machines));
    let status = ms.status.unwrap();
    assert_eq!(status.replicas, Some(3));
    assert_eq!(status.ready_replicas, Some(2));
    assert_eq!(status.available_replicas, Some(1));
    assert_eq!(status.up_to_date_replicas, Some(1));
    assert_eq!(
        status.versions,
        vec![StatusVersion {
            version: "v1.36.0".into(),
            replicas: Some(3)
        }]
    );
}

#[test]
fn versions_sort_by_semantic_version() {
    let versions = merge_versions([
        StatusVersion {
            version: "v1.10.0".into(),
            replicas: Some(1),
        },
        StatusVersion {
            version: "v1.9.2".into(),
            replicas: Some(2),
        },
        StatusVersion {
            version: "v1.10.0".into(),
            replicas: Some(3),
        },
    ]);
    let got: Vec<(&str, Option<i32>)> = versions
        .iter()
        .map(|v| (v.version.as_str(), v.replicas))
        .collect();
    assert_eq!(got, [("v1.9.2", Some(2)), ("v1.10.0", Some(4))]);
}

#[test]
fn scaling_up_says_from_and_to_and_what_blocks() {
    let mut ms = machine_set(Some(3));
    set_scaling_up_condition(&mut ms, &[], &[], &now());
    let c = get(&ms, "ScalingUp");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "ScalingUp")
    );
    assert_eq!(c.message, "Scaling up from 0 to 3 replicas");

    let blockers = vec![missing_references_message(&["TestInfraMachineTemplate"]).unwrap()];
    set_scaling_up_condition(&mut ms, &[], &blockers, &now());
    assert_eq!(
        get(&ms, "ScalingUp").message,
        "Scaling up from 0 to 3 replicas is blocked because:\n* TestInfraMachineTemplate does not exist"
    );

    let machines = vec![
        machine("m1", vec![]),
        machine("m2", vec![]),
        machine("m3", vec![]),
    ];
    set_scaling_up_condition(&mut ms, &refs(&machines), &blockers, &now());
    let c = get(&ms, "ScalingUp");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NotScalingUp")
    );
    assert_eq!(
        c.message,
        "Scaling up would be blocked because TestInfraMachineTemplate does not exist"
    );

    // Unset replicas read as 1.
    let mut ms = machine_set(None);
    set_scaling_up_condition(&mut ms, &[], &[], &now());
    assert_eq!(
        get(&ms, "ScalingUp").message,
        "Scaling up from 0 to 1 replicas"
    );
}

#[test]
fn missing_references_name_the_kinds() {
    assert_eq!(missing_references_message(&[]), None);
    assert_eq!(
        missing_references_message(&["A", "B"]).as_deref(),
        Some("A and B do not exist")
    );
}

#[test]
fn a_deleting_machine_set_scales_down_to_zero_and_names_stale_machines() {
    let mut ms = machine_set(Some(3));
    ms.metadata.deletion_timestamp = Some(ago(60));
    let mut stale = machine("stale-machine-1", vec![]);
    stale.metadata.deletion_timestamp = Some(ago(16 * 60));
    let machines = vec![stale, machine("m2", vec![])];
    set_scaling_down_condition(&mut ms, &refs(&machines), &now());
    let c = get(&ms, "ScalingDown");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "ScalingDown")
    );
    assert_eq!(
        c.message,
        "Scaling down from 2 to 0 replicas\n* Machine stale-machine-1 is in deletion since more than 15m"
    );
    set_scaling_up_condition(&mut ms, &refs(&machines), &[], &now());
    assert_eq!(get(&ms, "ScalingUp").message, "");

    set_deleting_condition(&mut ms, &refs(&machines), &now());
    let c = get(&ms, "Deleting");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Deleting"));
    assert_eq!(
        c.message,
        "Deleting 2 Machines\n* Machine stale-machine-1 is in deletion since more than 15m"
    );
    set_deleting_condition(&mut ms, &[], &now());
    assert_eq!(get(&ms, "Deleting").message, "Deletion completed");
}

#[test]
fn stale_drains_say_what_holds_them() {
    let mut draining = machine(
        "m1",
        vec![condition(
            "Deleting",
            "True",
            "DrainingNode",
            "Drain not completed yet:\n* Pod p: cannot evict pod as it would violate the pod's disruption budget.",
        )],
    );
    draining.metadata.deletion_timestamp = Some(ago(20 * 60));
    draining
        .status
        .as_mut()
        .unwrap()
        .deletion
        .node_drain_start_time = Some(ago(10 * 60));
    assert_eq!(
        stale_machines_message(&[&draining], &now()),
        "Machine m1 is in deletion since more than 15m, delay likely due to PodDisruptionBudgets"
    );
}

#[test]
fn not_scaling_down_at_or_below_replicas() {
    let mut ms = machine_set(Some(3));
    set_scaling_down_condition(&mut ms, &[], &now());
    let c = get(&ms, "ScalingDown");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NotScalingDown")
    );
    set_deleting_condition(&mut ms, &[], &now());
    assert_eq!(get(&ms, "Deleting").reason, "NotDeleting");
}

#[test]
fn machines_ready_aggregates_ready() {
    let mut ms = machine_set(Some(2));
    set_machines_ready_condition(&mut ms, &[], &now());
    let c = get(&ms, "MachinesReady");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "NoReplicas")
    );

    let machines = vec![
        machine("m1", vec![condition("Ready", "True", "Ready", "")]),
        machine(
            "m2",
            vec![condition(
                "Ready",
                "False",
                "NotReady",
                "* NodeHealthy: Node not ready",
            )],
        ),
    ];
    set_machines_ready_condition(&mut ms, &refs(&machines), &now());
    let c = get(&ms, "MachinesReady");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NotReady")
    );
    assert_eq!(c.message, "* Machine m2:\n  * NodeHealthy: Node not ready");
}

#[test]
fn machines_up_to_date_leaves_out_young_machines_without_the_condition() {
    let mut young = machine("young", vec![]);
    young.metadata.creation_timestamp = Some(ago(3));
    let machines = vec![
        machine("m1", vec![condition("UpToDate", "True", "UpToDate", "")]),
        young,
    ];
    let mut ms = machine_set(Some(2));
    let requeue = set_machines_up_to_date_condition(&mut ms, &refs(&machines), &now());
    let c = get(&ms, "MachinesUpToDate");
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "UpToDate"));
    assert_eq!(requeue, Some(Duration::from_secs(8)));

    // Older than 10 s, a Machine without the condition counts as not yet reported.
    let machines = vec![machine("old", vec![])];
    set_machines_up_to_date_condition(&mut ms, &refs(&machines), &now());
    let c = get(&ms, "MachinesUpToDate");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("Unknown", "UpToDateUnknown")
    );
}

#[test]
fn remediating_names_machines_to_remediate_or_unhealthy_ones() {
    let healthy = machine("healthy", vec![]);
    let unhealthy = machine(
        "unhealthy",
        vec![condition(
            "HealthCheckSucceeded",
            "False",
            "UnhealthyNode",
            "",
        )],
    );
    let to_remediate = machine(
        "remediate",
        vec![
            condition("HealthCheckSucceeded", "False", "UnhealthyNode", ""),
            condition(
                "OwnerRemediated",
                "False",
                "MachineDeleting",
                "Machine is deleting",
            ),
        ],
    );
    let mut ms = machine_set(Some(3));
    set_remediating_condition(&mut ms, &[&healthy, &unhealthy], &now());
    let c = get(&ms, "Remediating");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NotRemediating")
    );
    assert_eq!(
        c.message,
        "Machine unhealthy is not healthy (not to be remediated by MachineSet)"
    );
    set_remediating_condition(&mut ms, &[&healthy, &unhealthy, &to_remediate], &now());
    let c = get(&ms, "Remediating");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "Remediating")
    );
    assert_eq!(c.message, "* Machine remediate: Machine is deleting");
}

fn template(version: &str, infrastructure: &str) -> MachineTemplateSpec {
    MachineTemplateSpec {
        metadata: Default::default(),
        spec: MachineSpec {
            version: Some(version.into()),
            bootstrap: Bootstrap {
                config_ref: Some(ContractVersionedObjectReference {
                    api_group: "bootstrap.cluster.x-k8s.io".into(),
                    kind: "KubeadmConfigTemplate".into(),
                    name: "workers".into(),
                }),
                data_secret_name: None,
            },
            infrastructure_ref: ContractVersionedObjectReference {
                api_group: "infrastructure.cluster.x-k8s.io".into(),
                kind: "DevMachineTemplate".into(),
                name: infrastructure.into(),
            },
            min_ready_seconds: Some(5),
            ..Default::default()
        },
    }
}

#[test]
fn up_to_date_messages_follow_upstream() {
    assert!(up_to_date_messages(&template("v1.35.0", "a"), &template("v1.35.0", "a")).is_empty());
    let mut in_place = template("v1.35.0", "a");
    in_place.spec.min_ready_seconds = Some(30);
    in_place.metadata.labels.insert("x".into(), "y".into());
    assert!(up_to_date_messages(&template("v1.35.0", "a"), &in_place).is_empty());
    let mut desired = template("v1.36.0", "b");
    desired.spec.bootstrap.config_ref.as_mut().unwrap().name = "workers-2".into();
    desired.spec.failure_domain = Some("zone-b".into());
    assert_eq!(
        up_to_date_messages(&template("v1.35.0", "a"), &desired),
        [
            "Version v1.35.0, v1.36.0 required",
            "KubeadmConfig is not up-to-date",
            "DevMachine is not up-to-date",
            "Failure domain , zone-b required",
        ]
    );
}

fn machine_deployment(template: MachineTemplateSpec) -> MachineDeployment {
    MachineDeployment {
        metadata: ObjectMeta {
            name: Some("md".into()),
            ..Default::default()
        },
        spec: MachineDeploymentSpec {
            template,
            ..Default::default()
        },
        status: None,
    }
}

#[test]
fn machine_up_to_date_compares_with_the_machine_deployment() {
    let mut ms = machine_set(Some(1));
    ms.spec.template = template("v1.35.0", "a");
    assert_eq!(machine_up_to_date_condition(&ms, None, now().0), None);

    let md = machine_deployment(template("v1.35.0", "a"));
    let c = machine_up_to_date_condition(&ms, Some(&md), now().0).unwrap();
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::True, "UpToDate")
    );

    let md = machine_deployment(template("v1.36.0", "a"));
    let c = machine_up_to_date_condition(&ms, Some(&md), now().0).unwrap();
    assert_eq!(
        (c.status, c.reason.as_str()),
        (ConditionStatus::False, "NotUpToDate")
    );
    assert_eq!(c.message, "* Version v1.35.0, v1.36.0 required");

    // rollout.after passed since the MachineSet was created: its Machines must go.
    let mut md = machine_deployment(template("v1.35.0", "a"));
    md.spec.rollout.after = Some(ago(60));
    let c = machine_up_to_date_condition(&ms, Some(&md), now().0).unwrap();
    assert_eq!(c.message, "* MachineDeployment spec.rolloutAfter expired");
    // Not yet passed, or the MachineSet came after it: up to date.
    md.spec.rollout.after = Some(Time(now().0 + SignedDuration::from_secs(60)));
    let c = machine_up_to_date_condition(&ms, Some(&md), now().0).unwrap();
    assert_eq!(c.status, ConditionStatus::True);
    md.spec.rollout.after = Some(ago(8000));
    let c = machine_up_to_date_condition(&ms, Some(&md), now().0).unwrap();
    assert_eq!(c.status, ConditionStatus::True);
    // Created in the very second rollout.after names (what `rollout restart` leads to): the
    // MachineDeployment takes it as its current MachineSet, so its Machines are up to date.
    md.spec.rollout.after = ms.metadata.creation_timestamp.clone();
    let c = machine_up_to_date_condition(&ms, Some(&md), now().0).unwrap();
    assert_eq!(c.status, ConditionStatus::True);
}
