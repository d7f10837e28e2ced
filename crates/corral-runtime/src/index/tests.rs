use corral_api::Machine;
use kube::runtime::reflector::{self, ObjectRef};
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
    ClusterIndex::new(IndexKeys::by_metadata(|machine: &Machine| {
        machine.spec.cluster_name.as_str()
    }))
}

/// Applies `events` to a store and then to the index, as a shared cache does.
fn feed(index: &ClusterIndex<Machine>, events: impl IntoIterator<Item = Event<Machine>>) {
    let (store, mut writer) = reflector::store::<Machine>();
    for event in events {
        writer.apply_watcher_event(&event);
        index.apply(&event, &store);
    }
}

fn names(objects: &[Arc<Machine>]) -> Vec<String> {
    objects.iter().map(|m| m.name_any()).collect()
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
        index.insert(Arc::new(machine(namespace, name, cluster)));
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
    let (store, mut writer) = reflector::store::<Machine>();
    let mut apply = |event: Event<Machine>| {
        writer.apply_watcher_event(&event);
        index.apply(&event, &store);
    };
    apply(Event::Init);
    apply(Event::InitDone);
    apply(Event::Apply(machine("a", "m1", "c1")));
    apply(Event::Apply(machine("a", "m2", "c1")));
    apply(Event::Delete(machine("a", "m1", "c1")));
    assert_eq!(index.names(&key("a", "c1")), ["m2"]);
    apply(Event::Apply(machine("a", "m2", "c2")));
    assert!(index.names(&key("a", "c1")).is_empty());
    assert_eq!(index.names(&key("a", "c2")), ["m2"]);
}

#[test]
fn a_relist_replaces_everything_once_complete_and_makes_the_index_ready() {
    let index = index();
    assert!(index.ready().now_or_never().is_none());
    let (store, mut writer) = reflector::store::<Machine>();
    let mut apply = |event: Event<Machine>| {
        writer.apply_watcher_event(&event);
        index.apply(&event, &store);
    };
    apply(Event::Apply(machine("a", "old", "c1")));
    apply(Event::Init);
    apply(Event::InitApply(machine("a", "new", "c1")));
    // Until the list is complete, the index shows what it showed before.
    assert_eq!(index.names(&key("a", "c1")), ["old"]);
    assert!(index.ready().now_or_never().is_none());
    apply(Event::InitDone);
    assert_eq!(index.names(&key("a", "c1")), ["new"]);
    assert!(index.ready().now_or_never().is_some());
    // It holds the store's own copies, not second ones.
    let from_store = store.get(&ObjectRef::new("new").within("a")).unwrap();
    assert!(Arc::ptr_eq(
        &index.get(&key("a", "c1"), "new").unwrap(),
        &from_store
    ));
}

#[test]
fn objects_are_found_by_controller_control_plane_label_and_extra_keys() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    let owned = |name: &str, uid: &str| {
        let mut m = machine("a", name, "c1");
        m.metadata.owner_references = Some(vec![OwnerReference {
            uid: uid.into(),
            controller: Some(true),
            ..Default::default()
        }]);
        m
    };
    let mut control_plane = machine("a", "cp", "c1");
    control_plane.metadata.labels = Some(
        [(corral_api::labels::CONTROL_PLANE.to_owned(), String::new())]
            .into_iter()
            .collect(),
    );
    let index = ClusterIndex::new(IndexKeys {
        cluster_of: |machine: &Machine| machine.spec.cluster_name.as_str(),
        keys_of: |machine, keys| {
            key::metadata_keys(machine, keys);
            if let Some(id) = machine.spec.provider_id.as_deref() {
                keys.push(key::provider_id(id));
            }
        },
    });
    feed(
        &index,
        [
            Event::Init,
            Event::InitApply(owned("m2", "ms-1")),
            Event::InitApply(owned("m1", "ms-1")),
            Event::InitApply(owned("m3", "ms-2")),
            Event::InitApply(control_plane.clone()),
            Event::InitDone,
        ],
    );
    let c1 = key("a", "c1");
    assert_eq!(
        names(&index.with_key(&c1, &key::controller(Some("ms-1")))),
        ["m1", "m2"]
    );
    assert_eq!(
        names(&index.with_key(&c1, &key::controller(Some("ms-2")))),
        ["m3"]
    );
    assert_eq!(names(&index.with_key(&c1, &key::controller(None))), ["cp"]);
    assert_eq!(names(&index.with_key(&c1, key::CONTROL_PLANE)), ["cp"]);
    assert_eq!(index.count(&c1), 4);
    assert_eq!(index.count_with_key(&c1, &key::controller(Some("ms-1"))), 2);
    assert_eq!(index.count_with_key(&key("b", "c1"), key::CONTROL_PLANE), 0);
    assert!(
        index
            .with_key(&key("b", "c1"), key::CONTROL_PLANE)
            .is_empty()
    );

    // A change of keys refiles the object; a change of anything else only replaces it.
    let mut moved = owned("m1", "ms-2");
    moved.spec.provider_id = Some("dev://m1".into());
    index.insert(Arc::new(moved));
    assert_eq!(
        names(&index.with_key(&c1, &key::controller(Some("ms-1")))),
        ["m2"]
    );
    assert_eq!(
        names(&index.with_key(&c1, &key::controller(Some("ms-2")))),
        ["m1", "m3"]
    );
    assert_eq!(
        names(&index.with_key(&c1, &key::provider_id("dev://m1"))),
        ["m1"]
    );
    let mut relabelled = control_plane;
    relabelled.spec.version = Some("v1.32.0".into());
    index.insert(Arc::new(relabelled));
    let found = index.with_key(&c1, key::CONTROL_PLANE);
    assert_eq!(found[0].spec.version.as_deref(), Some("v1.32.0"));
    assert_eq!(
        index.get(&c1, "cp").unwrap().spec.version.as_deref(),
        Some("v1.32.0")
    );

    // Deleted: gone from every key, and empty keys and Clusters are dropped.
    let (store, _writer) = reflector::store::<Machine>();
    index.apply(&Event::Delete(machine("a", "cp", "c1")), &store);
    assert!(index.with_key(&c1, key::CONTROL_PLANE).is_empty());
    assert!(index.with_key(&c1, &key::controller(None)).is_empty());
    for name in ["m1", "m2", "m3"] {
        index.apply(&Event::Delete(machine("a", name, "c1")), &store);
    }
    assert!(index.objects(&c1).is_empty());
    assert!(index.state.read().unwrap().by_cluster.is_empty());
    assert!(index.state.read().unwrap().filed.is_empty());
}

/// A Cluster's Machines split into the control plane and the workers, leaving out a
/// MachinePool's, and follow a Machine relabelled from one to the other.
#[test]
fn split_separates_control_plane_workers_and_machine_pools() {
    let index = index();
    let labelled = |name: &str, labels: &[&str]| {
        let mut machine = machine("ns", name, "c");
        for label in labels {
            machine.labels_mut().insert((*label).into(), String::new());
        }
        Arc::new(machine)
    };
    let control_plane = corral_api::labels::CONTROL_PLANE;
    let pool = corral_api::labels::MACHINE_POOL_NAME;
    index.insert(labelled("w2", &[]));
    index.insert(labelled("cp1", &[control_plane]));
    index.insert(labelled("p1", &[pool]));
    index.insert(labelled("w1", &[]));
    index.insert(labelled("both", &[control_plane, pool]));
    let split = |index: &ClusterIndex<Machine>| {
        let (with, rest) = index.split(&key("ns", "c"), key::CONTROL_PLANE, key::MACHINE_POOL);
        (names(&with), names(&rest))
    };
    assert_eq!(
        split(&index),
        (
            vec!["both".into(), "cp1".into()],
            vec!["w1".into(), "w2".into()]
        )
    );
    // Relabelled: a worker joins the control plane, the pool's Machine leaves its pool.
    index.insert(labelled("w1", &[control_plane]));
    index.insert(labelled("p1", &[]));
    assert_eq!(
        split(&index),
        (
            vec!["both".into(), "cp1".into(), "w1".into()],
            vec!["p1".into(), "w2".into()]
        )
    );
    // A Cluster without Machines.
    assert_eq!(split(&super::tests::index()), (vec![], vec![]));
}
