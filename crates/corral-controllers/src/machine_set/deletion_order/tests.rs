//! Vectors ported from upstream `core/reconcilers/machineset/machineset_deletion_order_test.go`
//! (`TestMachineRandomDelete`, `TestMachineNewestDelete`, `TestMachineOldestDelete`,
//! `TestMachineDeleteMultipleSamePriority`, `TestIsMachineHealthy`). Upstream's fixtures are
//! mostly unnamed Machines compared by value; here each fixture carries a tag so that results
//! can be compared by what they are.

use std::collections::BTreeMap;

use corral_api::annotations::{DELETE_MACHINE, UPDATE_IN_PROGRESS};
use corral_api::conditions::machine::{HEALTH_CHECK_SUCCEEDED, NODE_HEALTHY};
use corral_api::{
    Machine, MachineNodeReference, MachineSetDeletionOrder, MachineSpec, MachineStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::{compute_machines_to_delete, is_machine_healthy};

const TAG: &str = "test/fixture";

fn now() -> Timestamp {
    "2026-08-21T12:00:00Z".parse().unwrap()
}

fn days_ago(days: i64) -> Time {
    Time(now() - SignedDuration::from_hours(24 * days))
}

/// A Machine with a Node and nothing else, the shape of upstream's `healthyMachine`.
fn fixture(tag: &str) -> Machine {
    Machine {
        metadata: ObjectMeta {
            labels: Some(BTreeMap::from([(TAG.to_string(), tag.to_string())])),
            ..ObjectMeta::default()
        },
        spec: MachineSpec::default(),
        status: Some(MachineStatus {
            node_ref: Some(MachineNodeReference {
                name: "some-node".into(),
            }),
            ..MachineStatus::default()
        }),
    }
}

fn named(mut machine: Machine, name: &str) -> Machine {
    machine.metadata.name = Some(name.into());
    machine
}

fn created(mut machine: Machine, time: Time) -> Machine {
    machine.metadata.creation_timestamp = Some(time);
    machine
}

fn deleting(mut machine: Machine) -> Machine {
    machine.metadata.deletion_timestamp = Some(Time(now()));
    machine
}

fn annotated(mut machine: Machine, key: &str, value: &str) -> Machine {
    machine
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(key.into(), value.into());
    machine
}

fn without_node(mut machine: Machine) -> Machine {
    machine.status.as_mut().unwrap().node_ref = None;
    machine
}

fn with_condition(mut machine: Machine, type_: &str, status: &str) -> Machine {
    machine.status.as_mut().unwrap().conditions.push(Condition {
        type_: type_.into(),
        status: status.into(),
        reason: "Test".into(),
        message: String::new(),
        last_transition_time: Time(now()),
        observed_generation: None,
    });
    machine
}

fn tag(machine: &Machine) -> &str {
    &machine.metadata.labels.as_ref().unwrap()[TAG]
}

/// Runs the planner on `machines` and returns the tags of the chosen ones.
fn choose(machines: &[Machine], diff: usize, order: MachineSetDeletionOrder) -> Vec<&str> {
    compute_machines_to_delete(machines, diff, order, now())
        .into_iter()
        .map(tag)
        .collect()
}

/// The fixtures of `TestMachineRandomDelete`.
fn random_fixture(name: &str) -> Machine {
    match name {
        "healthy" => fixture(name),
        "mustDelete" => deleting(fixture(name)),
        "betterDelete" => with_condition(fixture(name), NODE_HEALTHY, "False"),
        "deleteAnnotation" => annotated(fixture(name), DELETE_MACHINE, ""),
        "updateInProgress" => annotated(fixture(name), UPDATE_IN_PROGRESS, ""),
        "noNodeRef" => without_node(fixture(name)),
        "nodeHealthyFalse" => with_condition(fixture(name), NODE_HEALTHY, "False"),
        "nodeHealthyUnknown" => with_condition(fixture(name), NODE_HEALTHY, "Unknown"),
        "healthCheckFalse" => with_condition(fixture(name), HEALTH_CHECK_SUCCEEDED, "False"),
        "healthCheckUnknown" => with_condition(fixture(name), HEALTH_CHECK_SUCCEEDED, "Unknown"),
        other => panic!("no fixture {other}"),
    }
}

#[test]
fn upstream_machine_random_delete() {
    // (description, input, diff, expected) as in upstream's TestMachineRandomDelete.
    let cases: &[(&str, &[&str], usize, &[&str])] = &[
        ("diff=0", &["healthy"], 0, &[]),
        ("diff>len(machines)", &["healthy"], 2, &["healthy"]),
        (
            "diff>betterDelete",
            &["healthy", "betterDelete", "healthy"],
            2,
            &["betterDelete", "healthy"],
        ),
        (
            "diff<betterDelete",
            &["healthy", "betterDelete", "betterDelete", "betterDelete"],
            2,
            &["betterDelete", "betterDelete"],
        ),
        (
            "diff<=mustDelete",
            &["healthy", "mustDelete", "betterDelete", "mustDelete"],
            2,
            &["mustDelete", "mustDelete"],
        ),
        (
            "diff<=mustDelete+betterDelete",
            &["healthy", "mustDelete", "healthy", "betterDelete"],
            2,
            &["mustDelete", "betterDelete"],
        ),
        (
            "diff<=mustDelete+betterDelete+couldDelete",
            &["healthy", "mustDelete", "healthy"],
            2,
            &["mustDelete", "healthy"],
        ),
        (
            "DeleteMachineAnnotation, diff=1",
            &[
                "betterDelete",
                "deleteAnnotation",
                "betterDelete",
                "updateInProgress",
            ],
            1,
            &["deleteAnnotation"],
        ),
        (
            "UpdateInProgressAnnotation, diff=1",
            &["betterDelete", "updateInProgress", "betterDelete"],
            1,
            &["updateInProgress"],
        ),
        (
            "MachineWithNoNodeRef, diff=1",
            &["healthy", "noNodeRef", "healthy"],
            1,
            &["noNodeRef"],
        ),
        (
            "NodeHealthyConditionFalseMachine, diff=1",
            &["healthy", "nodeHealthyFalse", "healthy"],
            1,
            &["nodeHealthyFalse"],
        ),
        (
            "NodeHealthyConditionUnknownMachine, diff=1",
            &["healthy", "nodeHealthyUnknown", "healthy"],
            1,
            &["healthy"],
        ),
        (
            "HealthCheckSucceededConditionFalseMachine, diff=1",
            &["healthy", "healthCheckFalse", "healthy"],
            1,
            &["healthCheckFalse"],
        ),
        (
            "HealthCheckSucceededConditionUnknownMachine, diff=1",
            &["healthy", "healthCheckUnknown", "healthy"],
            1,
            &["healthy"],
        ),
    ];
    for (description, input, diff, expected) in cases {
        let machines: Vec<Machine> = input.iter().map(|name| random_fixture(name)).collect();
        assert_eq!(
            choose(&machines, *diff, MachineSetDeletionOrder::Random),
            *expected,
            "{description}"
        );
    }
}

/// The fixtures of `TestMachineNewestDelete` and `TestMachineOldestDelete`.
fn age_fixture(name: &str) -> Machine {
    match name {
        "empty" => fixture(name),
        "mustDelete" => deleting(fixture(name)),
        "newest" => created(fixture(name), days_ago(1)),
        "secondNewest" => created(fixture(name), days_ago(5)),
        "secondOldest" | "oldest" => created(fixture(name), days_ago(10)),
        "deleteAnnotation" => created(annotated(fixture(name), DELETE_MACHINE, ""), days_ago(10)),
        "updateInProgress" => created(
            annotated(fixture(name), UPDATE_IN_PROGRESS, ""),
            days_ago(10),
        ),
        "unhealthy" | "nodeHealthyFalse" => created(
            with_condition(fixture(name), NODE_HEALTHY, "False"),
            days_ago(10),
        ),
        "nodeHealthyUnknown" => created(
            with_condition(fixture(name), NODE_HEALTHY, "Unknown"),
            days_ago(10),
        ),
        // Upstream's Newest test creates this one a day ago, its Oldest test ten days ago; the
        // ladder puts it first either way.
        "noNodeRef" => created(without_node(fixture(name)), days_ago(10)),
        // The two named fixtures that check mustDelete wins whatever the names.
        "mustDeleteNamedB" => deleting(named(fixture(name), "b")),
        "unhealthyA" => named(
            created(
                with_condition(fixture(name), NODE_HEALTHY, "False"),
                days_ago(10),
            ),
            "unhealthyMachineA",
        ),
        "unhealthyZ" => named(
            created(
                with_condition(fixture(name), NODE_HEALTHY, "False"),
                days_ago(10),
            ),
            "z",
        ),
        other => panic!("no fixture {other}"),
    }
}

#[test]
fn upstream_machine_newest_delete() {
    let cases: &[(&str, &[&str], usize, &[&str])] = &[
        (
            "diff=1",
            &[
                "secondNewest",
                "oldest",
                "secondOldest",
                "mustDelete",
                "newest",
            ],
            1,
            &["mustDelete"],
        ),
        (
            "diff=2",
            &[
                "secondNewest",
                "oldest",
                "mustDelete",
                "secondOldest",
                "newest",
            ],
            2,
            &["mustDelete", "newest"],
        ),
        (
            "diff=3",
            &[
                "secondNewest",
                "mustDelete",
                "oldest",
                "secondOldest",
                "newest",
            ],
            3,
            &["mustDelete", "newest", "secondNewest"],
        ),
        (
            "diff=1 (DeleteMachineAnnotation)",
            &[
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "deleteAnnotation",
                "updateInProgress",
            ],
            1,
            &["deleteAnnotation"],
        ),
        (
            "diff=1 (UpdateInProgressAnnotation)",
            &[
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "updateInProgress",
            ],
            1,
            &["updateInProgress"],
        ),
        (
            "diff=1 (deleteMachineWithoutNodeRef)",
            &[
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "noNodeRef",
            ],
            1,
            &["noNodeRef"],
        ),
        (
            "diff=1 (unhealthy)",
            &[
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "unhealthy",
            ],
            1,
            &["unhealthy"],
        ),
        (
            "diff=1 (nodeHealthyConditionFalseMachine)",
            &[
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "nodeHealthyFalse",
            ],
            1,
            &["nodeHealthyFalse"],
        ),
        (
            "diff=1 (nodeHealthyConditionUnknownMachine)",
            &[
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "nodeHealthyUnknown",
            ],
            1,
            &["newest"],
        ),
    ];
    for (description, input, diff, expected) in cases {
        let machines: Vec<Machine> = input.iter().map(|name| age_fixture(name)).collect();
        assert_eq!(
            choose(&machines, *diff, MachineSetDeletionOrder::Newest),
            *expected,
            "{description}"
        );
    }
}

#[test]
fn upstream_machine_oldest_delete() {
    let cases: &[(&str, &[&str], usize, &[&str])] = &[
        (
            "diff=1",
            &["empty", "secondNewest", "oldest", "secondOldest", "newest"],
            1,
            &["oldest"],
        ),
        (
            "diff=2",
            &["secondNewest", "oldest", "secondOldest", "newest", "empty"],
            2,
            &["oldest", "secondOldest"],
        ),
        (
            "diff=3",
            &["secondNewest", "oldest", "secondOldest", "newest", "empty"],
            3,
            &["oldest", "secondOldest", "secondNewest"],
        ),
        (
            "diff=4",
            &["secondNewest", "oldest", "secondOldest", "newest", "empty"],
            4,
            &["oldest", "secondOldest", "secondNewest", "newest"],
        ),
        (
            "diff=1 (DeleteMachineAnnotation)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "deleteAnnotation",
                "updateInProgress",
            ],
            1,
            &["deleteAnnotation"],
        ),
        (
            "diff=1 (UpdateInProgressAnnotation)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "updateInProgress",
            ],
            1,
            &["updateInProgress"],
        ),
        (
            "diff=1 (deleteMachineWithoutNodeRef)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "noNodeRef",
            ],
            1,
            &["noNodeRef"],
        ),
        (
            "diff=1 (unhealthy)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "unhealthy",
            ],
            1,
            &["unhealthy"],
        ),
        (
            "diff=1 (nodeHealthyConditionFalseMachine)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "nodeHealthyFalse",
            ],
            1,
            &["nodeHealthyFalse"],
        ),
        (
            "diff=1 (nodeHealthyConditionUnknownMachine)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "nodeHealthyUnknown",
            ],
            1,
            &["oldest"],
        ),
        (
            "diff=1 (unhealthyMachineA)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "mustDeleteNamedB",
                "unhealthyA",
            ],
            1,
            &["mustDeleteNamedB"],
        ),
        (
            "diff=1 (unhealthyMachineZ)",
            &[
                "empty",
                "secondNewest",
                "oldest",
                "secondOldest",
                "newest",
                "mustDeleteNamedB",
                "unhealthyZ",
            ],
            1,
            &["mustDeleteNamedB"],
        ),
    ];
    for (description, input, diff, expected) in cases {
        let machines: Vec<Machine> = input.iter().map(|name| age_fixture(name)).collect();
        assert_eq!(
            choose(&machines, *diff, MachineSetDeletionOrder::Oldest),
            *expected,
            "{description}"
        );
    }
}

/// Upstream shuffles with a random permutation and a random diff; here every diff and a few
/// fixed permutations, so a failure reproduces.
#[test]
fn upstream_machine_delete_multiple_same_priority() {
    let names: Vec<String> = (0..10).map(|i| format!("machine-{i}")).collect();
    let machines: Vec<Machine> = names
        .iter()
        .map(|name| named(annotated(fixture(name), DELETE_MACHINE, "true"), name))
        .collect();
    let permutations: [Vec<usize>; 3] = [
        (0..10).rev().collect(),
        vec![3, 7, 0, 9, 1, 8, 2, 6, 4, 5],
        vec![5, 4, 6, 3, 7, 2, 8, 1, 9, 0],
    ];
    for order in [
        MachineSetDeletionOrder::Random,
        MachineSetDeletionOrder::Newest,
        MachineSetDeletionOrder::Oldest,
    ] {
        for permutation in &permutations {
            let shuffled: Vec<Machine> = permutation.iter().map(|&i| machines[i].clone()).collect();
            for diff in 0..=10 {
                let chosen: Vec<&str> = compute_machines_to_delete(&shuffled, diff, order, now())
                    .into_iter()
                    .map(|machine| machine.metadata.name.as_deref().unwrap())
                    .collect();
                assert_eq!(
                    chosen,
                    names[..diff],
                    "{order:?} {permutation:?} diff={diff}"
                );
            }
        }
    }
}

#[test]
fn upstream_is_machine_healthy() {
    assert!(
        !is_machine_healthy(&without_node(fixture("x"))),
        "when it has no NodeRef"
    );
    assert!(
        !is_machine_healthy(&with_condition(fixture("x"), NODE_HEALTHY, "False")),
        "when nodeHealthyCondition is false"
    );
    assert!(
        is_machine_healthy(&with_condition(fixture("x"), NODE_HEALTHY, "Unknown")),
        "when nodeHealthyCondition is unknown"
    );
    assert!(
        is_machine_healthy(&fixture("x")),
        "when all requirements are met for node to be healthy"
    );
    let mut no_status = fixture("x");
    no_status.status = None;
    assert!(
        !is_machine_healthy(&no_status),
        "a Machine without status has no Node"
    );
}

#[test]
fn oldest_and_newest_priorities_follow_age_smoothly() {
    // Ages straddling the ten-day constant keep their order in both directions.
    let machines: Vec<Machine> = [1, 9, 11, 40]
        .iter()
        .map(|days| created(fixture(&format!("{days}d")), days_ago(*days)))
        .collect();
    assert_eq!(
        choose(&machines, 4, MachineSetDeletionOrder::Oldest),
        ["40d", "11d", "9d", "1d"]
    );
    assert_eq!(
        choose(&machines, 4, MachineSetDeletionOrder::Newest),
        ["1d", "9d", "11d", "40d"]
    );
}

#[test]
fn a_machine_created_in_the_future_is_the_last_to_go_when_oldest_first() {
    let future = Time(now() + SignedDuration::from_hours(1));
    let machines = vec![
        created(fixture("future"), future),
        created(
            fixture("hour-old"),
            Time(now() - SignedDuration::from_hours(1)),
        ),
    ];
    assert_eq!(
        choose(&machines, 2, MachineSetDeletionOrder::Oldest),
        ["hour-old", "future"]
    );
}
