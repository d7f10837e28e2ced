use std::pin::pin;
use std::task::{Context, Poll};

use serde_json::json;

use super::*;

fn machine(name: &str, cluster: &str, control_plane: bool) -> Machine {
    let mut labels = serde_json::Map::new();
    labels.insert(CLUSTER_NAME.into(), json!(cluster));
    if control_plane {
        labels.insert(CONTROL_PLANE.into(), json!(""));
    }
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": name, "namespace": "ns", "labels": labels },
        "spec": { "clusterName": cluster, "bootstrap": {}, "infrastructureRef": {
            "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": name,
        } },
    }))
    .expect("a Machine")
}

fn names(cache: &MachineCache, cluster: &str) -> Vec<String> {
    cache
        .control_plane_machines(&ClusterKey::new("ns", cluster))
        .iter()
        .map(|m| m.name_any())
        .collect()
}

/// Each Cluster reads only its own control plane Machines; workers are not filed; a Machine
/// whose labels change moves, and a deleted one goes.
#[test]
fn control_plane_machines_are_filed_by_cluster() {
    let cache = MachineCache::new();
    for event in [
        Event::Apply(machine("a1", "a", true)),
        Event::Apply(machine("a2", "a", true)),
        Event::Apply(machine("a-worker", "a", false)),
        Event::Apply(machine("b1", "b", true)),
    ] {
        assert!(cache.apply(event).is_some(), "every Machine event triggers");
    }
    assert_eq!(names(&cache, "a"), ["a1", "a2"]);
    assert_eq!(names(&cache, "b"), ["b1"]);
    assert!(names(&cache, "c").is_empty());

    cache.apply(Event::Apply(machine("a2", "b", true)));
    assert_eq!(names(&cache, "a"), ["a1"]);
    assert_eq!(names(&cache, "b"), ["a2", "b1"]);
    cache.apply(Event::Apply(machine("a1", "a", false)));
    assert!(
        names(&cache, "a").is_empty(),
        "no longer a control plane Machine"
    );
    let deleted = cache.apply(Event::Delete(machine("b1", "b", true)));
    assert_eq!(deleted.map(|m| m.name_any()).as_deref(), Some("b1"));
    assert_eq!(names(&cache, "b"), ["a2"]);
}

/// A relist replaces the whole content at its end (a Machine deleted while the watch was down
/// goes), and until then the last complete content is read; the cache is filled after the
/// first complete list only.
#[test]
fn a_relist_replaces_the_content_when_it_is_done() {
    let cache = MachineCache::new();
    let filled = cache.filled();
    let mut filled = pin!(filled);
    let waker = futures::task::noop_waker();
    let mut context = Context::from_waker(&waker);
    assert!(filled.as_mut().poll(&mut context).is_pending());

    cache.apply(Event::Init);
    cache.apply(Event::InitApply(machine("a1", "a", true)));
    assert!(
        names(&cache, "a").is_empty(),
        "not before the list is complete"
    );
    assert!(filled.as_mut().poll(&mut context).is_pending());
    cache.apply(Event::InitDone);
    assert_eq!(names(&cache, "a"), ["a1"]);
    assert_eq!(filled.as_mut().poll(&mut context), Poll::Ready(()));

    cache.apply(Event::Apply(machine("a2", "a", true)));
    cache.apply(Event::Init);
    cache.apply(Event::InitApply(machine("a2", "a", true)));
    assert_eq!(
        names(&cache, "a"),
        ["a1", "a2"],
        "the last complete content"
    );
    cache.apply(Event::InitDone);
    assert_eq!(
        names(&cache, "a"),
        ["a2"],
        "a1 went while the watch was down"
    );
}
