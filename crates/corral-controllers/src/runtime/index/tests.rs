use corral_api::Machine;
use kube::runtime::reflector;
use kube::runtime::watcher::Event;

use super::*;

fn machine(namespace: &str, name: &str, cluster: &str) -> Machine {
    let mut machine = Machine::new(
        name,
        corral_api::MachineSpec {
            cluster_name: cluster.into(),
            ..Default::default()
        },
    );
    machine.metadata.namespace = Some(namespace.into());
    machine
}

fn index() -> ClusterIndex<Machine> {
    ClusterIndex::new(|machine: &Machine| machine.spec.cluster_name.as_str())
}

fn key(namespace: &str, cluster: &str) -> ClusterKey {
    ClusterKey::new(namespace, cluster)
}

#[test]
fn objects_are_listed_under_their_namespace_and_cluster_sorted() {
    let index = index();
    for (namespace, name, cluster) in [
        ("a", "m2", "c1"),
        ("a", "m1", "c1"),
        ("a", "m3", "c2"),
        ("b", "m4", "c1"),
    ] {
        index.apply(&Event::Apply(machine(namespace, name, cluster)));
    }
    assert_eq!(index.names(&key("a", "c1")), ["m1", "m2"]);
    assert_eq!(index.names(&key("a", "c2")), ["m3"]);
    assert_eq!(index.names(&key("b", "c1")), ["m4"]);
    assert!(index.names(&key("b", "c2")).is_empty());
    assert!(index.contains(&key("a", "c1"), "m1"));
    assert!(!index.contains(&key("a", "c2"), "m1"));
}

#[test]
fn a_deleted_object_leaves_and_a_moved_one_changes_cluster() {
    let index = index();
    index.apply(&Event::Apply(machine("a", "m1", "c1")));
    index.apply(&Event::Apply(machine("a", "m2", "c1")));
    index.apply(&Event::Delete(machine("a", "m1", "c1")));
    assert_eq!(index.names(&key("a", "c1")), ["m2"]);
    index.apply(&Event::Apply(machine("a", "m2", "c2")));
    assert!(index.names(&key("a", "c1")).is_empty());
    assert_eq!(index.names(&key("a", "c2")), ["m2"]);
}

#[test]
fn a_relist_replaces_everything_once_complete_and_makes_the_index_ready() {
    let index = index();
    assert!(index.ready().now_or_never().is_none());
    index.apply(&Event::Apply(machine("a", "old", "c1")));
    index.apply(&Event::Init);
    index.apply(&Event::InitApply(machine("a", "new", "c1")));
    // Until the list is complete, the index shows what it showed before.
    assert_eq!(index.names(&key("a", "c1")), ["old"]);
    assert!(index.ready().now_or_never().is_none());
    index.apply(&Event::InitDone);
    assert_eq!(index.names(&key("a", "c1")), ["new"]);
    assert!(index.ready().now_or_never().is_some());
}

#[tokio::test]
async fn objects_come_from_the_store_and_those_gone_from_it_are_left_out() {
    let index = index();
    let (store, mut writer) = reflector::store::<Machine>();
    for event in [
        Event::Init,
        Event::InitApply(machine("a", "m1", "c1")),
        Event::InitApply(machine("a", "m2", "c1")),
        Event::InitDone,
    ] {
        writer.apply_watcher_event(&event);
        index.apply(&event);
    }
    // The store is ahead of the index by one event: the index still lists m1.
    writer.apply_watcher_event(&Event::Delete(machine("a", "m1", "c1")));
    let names: Vec<String> = index
        .objects(&store, &key("a", "c1"))
        .iter()
        .map(|m| m.name_any())
        .collect();
    assert_eq!(names, ["m2"]);
}
