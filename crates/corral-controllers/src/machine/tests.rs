use std::collections::BTreeMap;
use std::time::Duration;

use corral_api::{ConditionStatus, Machine, MachinePhase};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::delete::*;
use super::drain::{PodAction, pod_action};
use super::node_ref::{compute_node_patch, managed_annotations, managed_labels};
use super::phases::should_adopt;
use super::status::*;

fn time(second: i64) -> Time {
    Time(Timestamp::from_second(second).unwrap())
}

fn merge(object: &mut serde_json::Value, extra: serde_json::Value) {
    match (object, extra) {
        (serde_json::Value::Object(object), serde_json::Value::Object(extra)) => {
            for (key, value) in extra {
                merge(object.entry(key).or_insert(serde_json::Value::Null), value);
            }
        }
        (object, extra) => *object = extra,
    }
}

fn machine(value: serde_json::Value) -> Machine {
    let mut object = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "m", "namespace": "ns", "generation": 1 },
        "spec": {
            "clusterName": "c",
            "bootstrap": {},
            "infrastructureRef": { "apiGroup": "infra.example.com", "kind": "FooMachine", "name": "m" },
        },
    });
    merge(&mut object, value);
    serde_json::from_value(object).unwrap()
}

/// Upstream `TestReconcileMachinePhases` (`machine_controller_status_test.go`).
#[test]
fn upstream_reconcile_machine_phases() {
    let cases = [
        (
            "Should set `Pending` with a new Machine",
            json!({}),
            MachinePhase::Pending,
        ),
        (
            "Should set `Provisioning` when bootstrap is ready",
            json!({ "status": { "initialization": { "bootstrapDataSecretCreated": true } } }),
            MachinePhase::Provisioning,
        ),
        (
            "Should set `Running` when bootstrap and infra is ready",
            json!({ "spec": { "providerID": "test://m" },
                    "status": { "initialization": { "bootstrapDataSecretCreated": true, "infrastructureProvisioned": true },
                                "nodeRef": { "name": "n" } } }),
            MachinePhase::Running,
        ),
        (
            "Should set `Provisioned` when there is a ProviderID and there is no Node",
            json!({ "spec": { "providerID": "test://m" },
                    "status": { "initialization": { "bootstrapDataSecretCreated": true, "infrastructureProvisioned": true } } }),
            MachinePhase::Provisioned,
        ),
        (
            "Should set `Updating` when Machine is in-place updating",
            json!({ "spec": { "providerID": "test://m" },
                    "status": { "initialization": { "bootstrapDataSecretCreated": true, "infrastructureProvisioned": true },
                                "nodeRef": { "name": "n" },
                                "conditions": [ { "type": "Updating", "status": "True", "reason": "InPlaceUpdating",
                                                  "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z" } ] } }),
            MachinePhase::Updating,
        ),
        (
            "Should set `Deleting` when Machine is being deleted",
            json!({ "metadata": { "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["f"] },
                    "spec": { "providerID": "test://m" },
                    "status": { "nodeRef": { "name": "n" } } }),
            MachinePhase::Deleting,
        ),
    ];
    for (name, value, expected) in cases {
        let mut m = machine(value);
        assert!(set_phase(&mut m, &time(10)), "{name}: changed");
        let status = m.status.as_ref().unwrap();
        assert_eq!(status.phase, Some(expected), "{name}");
        assert_eq!(status.last_updated, Some(time(10)), "{name}: lastUpdated");
        assert!(!set_phase(&mut m, &time(20)), "{name}: stable");
        assert_eq!(m.status.as_ref().unwrap().last_updated, Some(time(10)));
    }
}

fn node(conditions: serde_json::Value) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": "n" },
        "status": { "conditions": conditions },
    }))
    .unwrap()
}

fn node_condition(type_: &str, status: &str, message: &str) -> serde_json::Value {
    json!({ "type": type_, "status": status, "message": message })
}

/// Upstream `TestSummarizeNodeConditions`.
#[test]
fn upstream_summarize_node_conditions() {
    let healthy = node(json!([
        node_condition("Ready", "True", ""),
        node_condition("MemoryPressure", "False", ""),
        node_condition("DiskPressure", "False", ""),
        node_condition("PIDPressure", "False", ""),
    ]));
    assert_eq!(
        summarize_node_conditions(&healthy),
        (ConditionStatus::True, "NodeHealthy", String::new())
    );
    let pressured = node(json!([
        node_condition("Ready", "True", ""),
        node_condition("MemoryPressure", "True", "memory is low"),
        node_condition("DiskPressure", "False", ""),
        node_condition("PIDPressure", "False", ""),
    ]));
    assert_eq!(
        summarize_node_conditions(&pressured),
        (
            ConditionStatus::False,
            "NodeNotHealthy",
            "* Node.MemoryPressure: memory is low".into()
        )
    );
    let unreachable = node(json!([
        node_condition("Ready", "Unknown", "kubelet stopped posting"),
        node_condition("MemoryPressure", "Unknown", "kubelet stopped posting"),
        node_condition("DiskPressure", "Unknown", "kubelet stopped posting"),
        node_condition("PIDPressure", "Unknown", "kubelet stopped posting"),
    ]));
    assert_eq!(
        summarize_node_conditions(&unreachable),
        (
            ConditionStatus::Unknown,
            "NodeHealthyUnknown",
            "* Node.AllConditions: kubelet stopped posting".into()
        )
    );
    let (status, _, message) = summarize_node_conditions(&node(json!([])));
    assert_eq!(status, ConditionStatus::Unknown);
    assert!(message.starts_with("* Node.Ready: Condition not yet reported"));
}

fn ready_machine(ready_since: i64, min_ready_seconds: i32) -> Machine {
    machine(json!({
        "spec": { "minReadySeconds": min_ready_seconds },
        "status": { "conditions": [ {
            "type": "Ready", "status": "True", "reason": "Ready", "message": "",
            "lastTransitionTime": time(ready_since),
        } ] },
    }))
}

/// Upstream `TestSetAvailableCondition`: Available once Ready for minReadySeconds.
#[test]
fn upstream_set_available_condition() {
    let available = |m: &Machine| {
        let c = m
            .status
            .as_ref()
            .unwrap()
            .conditions
            .iter()
            .find(|c| c.type_ == "Available")
            .unwrap()
            .clone();
        (c.status, c.reason)
    };
    let mut m = ready_machine(100, 0);
    assert_eq!(set_available_condition(&mut m, &time(100)), None);
    assert_eq!(available(&m), ("True".into(), "Available".into()));

    let mut m = ready_machine(100, 30);
    assert_eq!(
        set_available_condition(&mut m, &time(110)),
        Some(Duration::from_secs(20))
    );
    assert_eq!(
        available(&m),
        ("False".into(), "WaitingForMinReadySeconds".into())
    );
    assert_eq!(set_available_condition(&mut m, &time(130)), None);
    assert_eq!(available(&m), ("True".into(), "Available".into()));

    let mut m = machine(json!({}));
    set_available_condition(&mut m, &time(0));
    assert_eq!(available(&m), ("False".into(), "NotReady".into()));
}

/// Upstream `TestSetReadyCondition`: while deleting, Ready says the deletion stage only.
#[test]
fn ready_while_deleting_names_the_stage() {
    let mut m = machine(json!({
        "metadata": { "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["f"] },
    }));
    let now = time(0);
    set_deleting_condition(
        &mut m,
        Some(("WaitingForPreDrainHook", "Waiting for pre-drain hooks")),
        &now,
    );
    set_updating_condition(&mut m, &now);
    for type_ in ["BootstrapConfigReady", "InfrastructureReady", "NodeHealthy"] {
        let status = m.status.as_mut().unwrap();
        corral_runtime::conditions::set(
            &mut status.conditions,
            corral_runtime::conditions::NewCondition::new(type_, ConditionStatus::True, "Ready"),
            None,
            &now,
        );
    }
    set_ready_condition(&mut m, &now);
    let ready = m
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "NotReady")
    );
    assert_eq!(
        ready.message,
        "* Deleting: Machine deletion in progress, stage: WaitingForPreDrainHook"
    );
}

#[test]
fn bootstrap_ready_without_a_config_ref_is_the_data_secret_provided() {
    let mut m = machine(json!({ "spec": { "bootstrap": { "dataSecretName": "s" } } }));
    set_bootstrap_ready_condition(&mut m, None, &time(0));
    let c = &m.status.as_ref().unwrap().conditions[0];
    assert_eq!(
        (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
        ("BootstrapConfigReady", "True", "DataSecretProvided")
    );
}

/// Upstream `labels.GetManagedLabels` and `annotations.GetManagedAnnotations`.
#[test]
fn managed_node_labels_and_annotations() {
    let m = machine(json!({ "metadata": {
        "labels": {
            "node-role.kubernetes.io/worker": "",
            "node-restriction.kubernetes.io/zone": "a",
            "sub.node-restriction.kubernetes.io/x": "b",
            "node.cluster.x-k8s.io/pool": "p",
            "other.example.com/keep": "no",
            "cluster.x-k8s.io/cluster-name": "c",
        },
        "annotations": { "node.cluster.x-k8s.io/note": "n", "other/x": "no" },
        "ownerReferences": [ { "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
                               "name": "ms", "uid": "u", "controller": true } ],
    }}));
    let labels: Vec<String> = managed_labels(&m).into_keys().collect();
    assert_eq!(
        labels,
        [
            "node-restriction.kubernetes.io/zone",
            "node-role.kubernetes.io/worker",
            "node.cluster.x-k8s.io/pool",
            "sub.node-restriction.kubernetes.io/x",
        ]
    );
    let annotations = managed_annotations(&m);
    assert_eq!(annotations["cluster.x-k8s.io/cluster-name"], "c");
    assert_eq!(annotations["cluster.x-k8s.io/cluster-namespace"], "ns");
    assert_eq!(annotations["cluster.x-k8s.io/machine"], "m");
    assert_eq!(annotations["cluster.x-k8s.io/owner-kind"], "MachineSet");
    assert_eq!(annotations["cluster.x-k8s.io/owner-name"], "ms");
    assert_eq!(annotations["node.cluster.x-k8s.io/note"], "n");
    assert!(!annotations.contains_key("other/x"));
}

/// Upstream `TestPatchNode`: labels and annotations set from the Machine, those removed from
/// it removed from the Node, others kept, the uninitialized taint dropped.
#[test]
fn upstream_patch_node() {
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": "n",
            "labels": { "node-role.kubernetes.io/old": "", "kubernetes.io/hostname": "n" },
            "annotations": {
                "cluster.x-k8s.io/labels-from-machine": "node-role.kubernetes.io/old",
                "cluster.x-k8s.io/owner-kind": "MachineSet",
                "keep": "me",
            },
        },
        "spec": { "taints": [
            { "key": "node.cluster.x-k8s.io/uninitialized", "effect": "NoSchedule" },
            { "key": "dedicated", "value": "gpu", "effect": "NoSchedule" },
        ] },
    }))
    .unwrap();
    let labels = BTreeMap::from([("node-role.kubernetes.io/worker".to_owned(), String::new())]);
    let annotations = BTreeMap::from([
        ("cluster.x-k8s.io/machine".to_owned(), "m".to_owned()),
        ("node.cluster.x-k8s.io/note".to_owned(), "n".to_owned()),
    ]);
    let patch = compute_node_patch(&node, &labels, &annotations).unwrap();
    assert_eq!(
        patch,
        json!({
            "metadata": {
                "labels": { "node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/old": null },
                "annotations": {
                    "cluster.x-k8s.io/machine": "m",
                    "node.cluster.x-k8s.io/note": "n",
                    "cluster.x-k8s.io/owner-kind": null,
                    "cluster.x-k8s.io/labels-from-machine": "node-role.kubernetes.io/worker",
                    "cluster.x-k8s.io/annotations-from-machine": "node.cluster.x-k8s.io/note",
                },
            },
            "spec": { "taints": [ { "key": "dedicated", "value": "gpu", "effect": "NoSchedule" } ] },
        })
    );
    // Once applied, nothing is left to patch.
    let mut synced = serde_json::to_value(&node).unwrap();
    merge(&mut synced, patch);
    let object = synced.as_object_mut().unwrap();
    for part in ["labels", "annotations"] {
        if let Some(map) = object["metadata"][part].as_object_mut() {
            map.retain(|_, v| !v.is_null());
        }
    }
    let synced: Node = serde_json::from_value(synced).unwrap();
    assert_eq!(compute_node_patch(&synced, &labels, &annotations), None);
}

fn pod(value: serde_json::Value) -> Pod {
    let mut object = json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "p", "namespace": "ns" } });
    merge(&mut object, value);
    serde_json::from_value(object).unwrap()
}

/// Upstream `TestGetPodsForEviction` filters.
#[test]
fn upstream_get_pods_for_eviction() {
    let now = Timestamp::from_second(100).unwrap();
    let cases = [
        ("a plain Pod is evicted", json!({}), false, PodAction::Evict),
        (
            "a DaemonSet Pod is skipped",
            json!({ "metadata": { "ownerReferences": [
                { "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "u", "controller": true } ] } }),
            false,
            PodAction::Skip,
        ),
        (
            "a mirror Pod is skipped",
            json!({ "metadata": { "annotations": { "kubernetes.io/config.mirror": "x" } } }),
            false,
            PodAction::Skip,
        ),
        (
            "a finished Pod is skipped",
            json!({ "status": { "phase": "Succeeded" } }),
            false,
            PodAction::Skip,
        ),
        (
            "drain=skip is skipped",
            json!({ "metadata": { "labels": { "cluster.x-k8s.io/drain": "skip" } } }),
            false,
            PodAction::Skip,
        ),
        (
            "drain=wait-completed is waited for",
            json!({ "metadata": { "labels": { "cluster.x-k8s.io/drain": "wait-completed" } } }),
            false,
            PodAction::WaitCompleted,
        ),
        (
            "a Pod being deleted is waited for",
            json!({ "metadata": { "deletionTimestamp": "1970-01-01T00:01:39Z" } }),
            false,
            PodAction::WaitDeleted,
        ),
        (
            "on an unreachable Node, a Pod deleted over a second ago is skipped",
            json!({ "metadata": { "deletionTimestamp": "1970-01-01T00:01:30Z" } }),
            true,
            PodAction::Skip,
        ),
    ];
    for (name, value, unreachable, expected) in cases {
        assert_eq!(
            pod_action(&pod(value), unreachable, now),
            expected,
            "{name}"
        );
    }
}

/// Upstream `TestIsNodeDrainedAllowed`.
#[test]
fn upstream_is_node_drain_allowed() {
    let now = time(1000);
    let started = |timeout: i32, since: i64| {
        machine(json!({
            "spec": { "deletion": { "nodeDrainTimeoutSeconds": timeout } },
            "status": { "deletion": { "nodeDrainStartTime": time(since) } },
        }))
    };
    assert!(
        !is_node_drain_allowed(
            &machine(
                json!({ "metadata": { "annotations": { "machine.cluster.x-k8s.io/exclude-node-draining": "" } } })
            ),
            true,
            &now
        ),
        "Exclude node draining annotation exists"
    );
    assert!(
        !is_node_drain_allowed(&machine(json!({})), false, &now),
        "no infrastructure machine"
    );
    assert!(
        !is_node_drain_allowed(
            &machine(
                json!({ "status": { "deletion": { "waitForPreTerminateHookStartTime": time(1) } } })
            ),
            true,
            &now
        ),
        "pre-terminate hooks reached"
    );
    assert!(
        !is_node_drain_allowed(&started(60, 900), true, &now),
        "Node draining timeout is over"
    );
    assert!(
        is_node_drain_allowed(&started(60, 990), true, &now),
        "Node draining timeout is not yet over"
    );
    assert!(
        is_node_drain_allowed(&started(0, 0), true, &now),
        "timeout 0 drains for ever"
    );
    assert!(
        is_node_drain_allowed(&machine(json!({})), true, &now),
        "unset drains for ever"
    );
}

/// Upstream `TestIsNodeVolumeDetachingAllowed`.
#[test]
fn upstream_is_node_volume_detaching_allowed() {
    let now = time(1000);
    assert!(!is_node_volume_detaching_allowed(
        &machine(
            json!({ "metadata": { "annotations": { "machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach": "" } } })
        ),
        true,
        &now
    ));
    let waited = machine(json!({
        "spec": { "deletion": { "nodeVolumeDetachTimeoutSeconds": 30 } },
        "status": { "deletion": { "waitForNodeVolumeDetachStartTime": time(900) } },
    }));
    assert!(!is_node_volume_detaching_allowed(&waited, true, &now));
    assert!(is_node_volume_detaching_allowed(
        &machine(json!({})),
        true,
        &now
    ));
}

/// Upstream `TestNodeDeletion` timeouts: 10 s by default, 0 retries for ever.
#[test]
fn upstream_node_deletion_timeout() {
    let deleted_at = |timeout: Option<i32>| {
        let mut value =
            json!({ "metadata": { "deletionTimestamp": time(100), "finalizers": ["f"] } });
        if let Some(timeout) = timeout {
            value["spec"] = json!({ "deletion": { "nodeDeletionTimeoutSeconds": timeout } });
        }
        machine(value)
    };
    assert!(!node_deletion_timeout_expired(
        &deleted_at(None),
        &time(105)
    ));
    assert!(node_deletion_timeout_expired(&deleted_at(None), &time(110)));
    assert!(!node_deletion_timeout_expired(
        &deleted_at(Some(0)),
        &time(100_000)
    ));
    assert!(node_deletion_timeout_expired(
        &deleted_at(Some(1)),
        &time(101)
    ));
}

#[test]
fn hooks_are_listed_sorted() {
    let m = machine(json!({ "metadata": { "annotations": {
        "pre-drain.delete.hook.machine.cluster.x-k8s.io/b": "",
        "pre-drain.delete.hook.machine.cluster.x-k8s.io/a": "",
        "pre-terminate.delete.hook.machine.cluster.x-k8s.io/c": "",
    }}}));
    assert_eq!(
        hooks(&m, corral_api::annotations::PRE_DRAIN_DELETE_HOOK_PREFIX),
        [
            "pre-drain.delete.hook.machine.cluster.x-k8s.io/a",
            "pre-drain.delete.hook.machine.cluster.x-k8s.io/b"
        ]
    );
}

/// Upstream `shouldAdopt`.
#[test]
fn upstream_should_adopt() {
    assert!(should_adopt(&machine(json!({}))));
    assert!(!should_adopt(&machine(
        json!({ "metadata": { "labels": { "cluster.x-k8s.io/set-name": "ms" } } })
    )));
    assert!(!should_adopt(&machine(
        json!({ "metadata": { "ownerReferences": [
        { "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "ms", "uid": "u", "controller": true } ] } })
    )));
    assert!(!should_adopt(&machine(
        json!({ "metadata": { "ownerReferences": [
        { "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "c", "uid": "u" } ] } })
    )));
}
