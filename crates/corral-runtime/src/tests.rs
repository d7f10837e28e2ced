use std::time::Duration;

use serde_json::json;

use super::backoff::{Backoff, delay};
use super::patch::{
    Part, is_replaced, merge_patch, object_patch, observe_own_spec_change, remember_replaced,
};
use super::sooner;

#[test]
fn merge_patch_holds_only_the_changes() {
    let from = json!({ "a": 1, "b": { "c": 2, "d": 3 }, "e": [1, 2], "gone": true });
    let to = json!({ "a": 1, "b": { "c": 2, "d": 4 }, "e": [1], "new": "x" });
    assert_eq!(
        merge_patch(&from, &to),
        Some(json!({ "b": { "d": 4 }, "e": [1], "new": "x", "gone": null }))
    );
    assert_eq!(merge_patch(&from, &from), None);
    // An object replacing a scalar goes whole.
    assert_eq!(
        merge_patch(&json!({ "a": 1 }), &json!({ "a": { "b": 1 } })),
        Some(json!({ "a": { "b": 1 } }))
    );
}

#[test]
fn object_patch_carries_the_resource_version_and_only_its_part() {
    let before: corral_api::Machine = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "m", "namespace": "ns", "resourceVersion": "42" },
        "spec": {
            "clusterName": "c",
            "bootstrap": {},
            "infrastructureRef": { "apiGroup": "g", "kind": "K", "name": "n" },
        },
        "status": { "phase": "Pending" },
    }))
    .unwrap();
    let mut after = before.clone();
    after.spec.provider_id = Some("p://1".into());
    assert_eq!(
        object_patch(&before, &after, Part::Main),
        Some(json!({ "metadata": { "resourceVersion": "42" }, "spec": { "providerID": "p://1" } }))
    );
    assert_eq!(object_patch(&before, &after, Part::Status), None);
    after.status.as_mut().unwrap().phase = Some(corral_api::MachinePhase::Running);
    assert_eq!(
        object_patch(&before, &after, Part::Status),
        Some(json!({ "metadata": { "resourceVersion": "42" }, "status": { "phase": "Running" } }))
    );
}

/// controller-runtime's per-item exponential rate limiter, which upstream uses.
#[test]
fn backoff_doubles_up_to_the_limit_and_resets() {
    let initial = Duration::from_millis(5);
    let max = Duration::from_secs(1);
    assert_eq!(delay(initial, max, 1), Duration::from_millis(5));
    assert_eq!(delay(initial, max, 2), Duration::from_millis(10));
    assert_eq!(delay(initial, max, 8), Duration::from_millis(640));
    assert_eq!(delay(initial, max, 9), max);
    assert_eq!(delay(initial, max, 200), max);
    let backoff = Backoff::new(initial, max);
    assert_eq!(backoff.fail("a"), Duration::from_millis(5));
    assert_eq!(backoff.fail("a"), Duration::from_millis(10));
    assert_eq!(backoff.fail("b"), Duration::from_millis(5));
    backoff.succeed("a");
    assert_eq!(backoff.fail("a"), Duration::from_millis(5));
}

#[test]
fn sooner_keeps_the_earliest_requeue() {
    let s = Duration::from_secs;
    assert_eq!(sooner(None, None), None);
    assert_eq!(sooner(Some(s(3)), None), Some(s(3)));
    assert_eq!(sooner(Some(s(3)), Some(s(2))), Some(s(2)));
}

/// A Machine `uid` at `version`, as a cache would show it.
fn copy(uid: &str, version: &str) -> corral_api::Machine {
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "m", "namespace": "ns", "uid": uid, "resourceVersion": version },
        "spec": {
            "clusterName": "c",
            "bootstrap": {},
            "infrastructureRef": { "apiGroup": "g", "kind": "K", "name": "n" },
        },
    }))
    .unwrap()
}

/// A metadata write then a status write replace two versions; a cache showing either is
/// behind, and the version they produced is not.
#[test]
fn every_version_a_chain_of_own_writes_replaced_is_stale() {
    remember_replaced(&copy("chain", "2"), "1".into());
    remember_replaced(&copy("chain", "3"), "2".into());
    assert!(is_replaced(&copy("chain", "1")));
    assert!(is_replaced(&copy("chain", "2")));
    assert!(!is_replaced(&copy("chain", "3")));
    // Seen caught up: forgotten.
    assert!(!is_replaced(&copy("chain", "1")));
}

/// An own write on top of another writer's version starts a new chain: the versions before
/// the other writer's are no longer known to be ours.
#[test]
fn another_writer_breaks_the_chain() {
    remember_replaced(&copy("broken", "2"), "1".into());
    remember_replaced(&copy("broken", "4"), "3".into());
    assert!(is_replaced(&copy("broken", "3")));
    assert!(!is_replaced(&copy("broken", "1")));
    assert!(!is_replaced(&copy("broken", "3")));
}

/// A status written right after its own spec write observed the new generation; what
/// observed an older one, or nothing, stays.
#[test]
fn a_status_written_with_its_spec_change_observes_the_new_generation() {
    let mut status = json!({ "status": {
        "observedGeneration": 2,
        "phase": "Running",
        "conditions": [
            { "type": "Ready", "status": "True", "observedGeneration": 2 },
            { "type": "Paused", "status": "False", "observedGeneration": 1 },
            { "type": "Old", "status": "False" },
        ],
    } });
    observe_own_spec_change(&mut status, 2, 3);
    assert_eq!(
        status,
        json!({ "status": {
            "observedGeneration": 3,
            "phase": "Running",
            "conditions": [
                { "type": "Ready", "status": "True", "observedGeneration": 3 },
                { "type": "Paused", "status": "False", "observedGeneration": 1 },
                { "type": "Old", "status": "False" },
            ],
        } })
    );
    // A reconcile that failed kept the older observedGeneration: it stays.
    let mut failed = json!({ "status": { "observedGeneration": 1 } });
    observe_own_spec_change(&mut failed, 2, 3);
    assert_eq!(failed, json!({ "status": { "observedGeneration": 1 } }));
}
