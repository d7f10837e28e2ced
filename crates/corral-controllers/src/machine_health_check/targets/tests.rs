//! Target selection (upstream `machinehealthcheck_targets_test.go`, `TestGetTargetsFromMHC`):
//! the selector plus the Cluster's name label, the MachineHealthCheck's namespace only, and
//! paused or skip-remediation Machines left out.

use std::collections::BTreeMap;

use corral_api::annotations::{MACHINE_SKIP_REMEDIATION, PAUSED};
use corral_api::{MachineHealthCheckSpec, MachineSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use kube::runtime::{reflector, watcher};

use super::*;

fn check(selector: LabelSelector) -> MachineHealthCheck {
    MachineHealthCheck {
        metadata: ObjectMeta {
            name: Some("mhc".into()),
            namespace: Some("test-mhc".into()),
            ..ObjectMeta::default()
        },
        spec: MachineHealthCheckSpec {
            cluster_name: "test-cluster".into(),
            selector,
            ..MachineHealthCheckSpec::default()
        },
        status: None,
    }
}

fn match_labels(labels: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(
            labels
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
        ),
        match_expressions: None,
    }
}

fn machine(name: &str, namespace: &str, labels: &[(&str, &str)], annotations: &[&str]) -> Machine {
    Machine {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(key, value)| (key.to_string(), value.to_string()))
                    .collect(),
            ),
            annotations: Some(
                annotations
                    .iter()
                    .map(|key| (key.to_string(), String::new()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ObjectMeta::default()
        },
        spec: MachineSpec {
            cluster_name: "test-cluster".into(),
            ..MachineSpec::default()
        },
        status: None,
    }
}

fn store(machines: Vec<Machine>) -> Store<Machine> {
    let (store, mut writer) = reflector::store();
    for machine in machines {
        writer.apply_watcher_event(&watcher::Event::Apply(machine));
    }
    store
}

fn names(machines: &[Arc<Machine>]) -> Vec<String> {
    machines.iter().map(|machine| machine.name_any()).collect()
}

const IN_CLUSTER: (&str, &str) = (CLUSTER_NAME, "test-cluster");

#[test]
fn targets_match_the_selector_and_the_cluster_label() {
    let machines = store(vec![
        machine("m3", "test-mhc", &[IN_CLUSTER, ("pool", "a")], &[]),
        machine("m1", "test-mhc", &[IN_CLUSTER, ("pool", "a")], &[]),
        machine("other-pool", "test-mhc", &[IN_CLUSTER, ("pool", "b")], &[]),
        machine(
            "other-cluster",
            "test-mhc",
            &[(CLUSTER_NAME, "other"), ("pool", "a")],
            &[],
        ),
        // The cluster-name label is what counts, as upstream lists by it.
        machine("unlabelled", "test-mhc", &[("pool", "a")], &[]),
        machine(
            "other-namespace",
            "elsewhere",
            &[IN_CLUSTER, ("pool", "a")],
            &[],
        ),
    ]);
    let check = check(match_labels(&[("pool", "a")]));
    let selected = select_machines(&check, &machines).unwrap();
    assert_eq!(names(&selected), ["m1", "m3"]);
}

#[test]
fn paused_and_skip_remediation_machines_are_not_targets() {
    let machines = store(vec![
        machine("m1", "test-mhc", &[IN_CLUSTER, ("pool", "a")], &[]),
        machine(
            "paused",
            "test-mhc",
            &[IN_CLUSTER, ("pool", "a")],
            &[PAUSED],
        ),
        machine(
            "skipped",
            "test-mhc",
            &[IN_CLUSTER, ("pool", "a")],
            &[MACHINE_SKIP_REMEDIATION],
        ),
    ]);
    let check = check(match_labels(&[("pool", "a")]));
    assert_eq!(names(&select_machines(&check, &machines).unwrap()), ["m1"]);
    // They still count as selected for watch mapping, so that removing the annotation brings a
    // reconcile.
    let selector = target_selector(&check).unwrap();
    let skipped = machine(
        "skipped",
        "test-mhc",
        &[IN_CLUSTER, ("pool", "a")],
        &[MACHINE_SKIP_REMEDIATION],
    );
    assert!(selects(&check, &selector, &skipped));
}

#[test]
fn match_expressions_select_too() {
    let machines = store(vec![
        machine("m1", "test-mhc", &[IN_CLUSTER, ("pool", "a")], &[]),
        machine("m2", "test-mhc", &[IN_CLUSTER, ("pool", "b")], &[]),
        machine("m3", "test-mhc", &[IN_CLUSTER, ("pool", "c")], &[]),
    ]);
    let check = check(LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "pool".into(),
            operator: "In".into(),
            values: Some(vec!["a".into(), "c".into()]),
        }]),
    });
    assert_eq!(
        names(&select_machines(&check, &machines).unwrap()),
        ["m1", "m3"]
    );

    let invalid = self::check(LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "pool".into(),
            operator: "Near".into(),
            values: None,
        }]),
    });
    assert!(select_machines(&invalid, &machines).is_err());
}
