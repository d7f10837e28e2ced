use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};

use super::graph::{Graph, ObjectRef, OwnerKey, OwnerLocation, OwnerRef, locate_owner};
use super::policy::*;
use super::queue::{Queue, backoff};
use crate::registry::{Registry, ResourceInfo, builtins};

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn explicit_policy_sets_the_collector_finalizer() {
    use PropagationPolicy::*;
    let none: &[String] = &[];
    assert_eq!(
        finalizers_after_delete(none, Some(Foreground), None),
        Some(strings(&["foregroundDeletion"]))
    );
    assert_eq!(
        finalizers_after_delete(none, Some(Orphan), None),
        Some(strings(&["orphan"]))
    );
    assert_eq!(finalizers_after_delete(none, Some(Background), None), None);
    assert_eq!(finalizers_after_delete(none, None, None), None);
    // Another policy replaces the finalizer of the earlier one; others stay.
    assert_eq!(
        finalizers_after_delete(&strings(&["a", "orphan"]), Some(Foreground), None),
        Some(strings(&["a", "foregroundDeletion"]))
    );
    assert_eq!(
        finalizers_after_delete(
            &strings(&["foregroundDeletion", "a"]),
            Some(Background),
            None
        ),
        Some(strings(&["a"]))
    );
}

#[test]
fn without_options_the_finalizer_already_there_decides() {
    assert_eq!(
        finalizers_after_delete(&strings(&["orphan"]), None, None),
        None
    );
    assert_eq!(
        finalizers_after_delete(&strings(&["foregroundDeletion", "x"]), None, None),
        None
    );
    // The first of two conflicting finalizers wins, as in kube-apiserver.
    assert_eq!(
        finalizers_after_delete(&strings(&["orphan", "foregroundDeletion"]), None, None),
        Some(strings(&["orphan"]))
    );
}

#[test]
fn orphan_dependents_overrides_everything() {
    assert_eq!(
        finalizers_after_delete(&[], None, Some(true)),
        Some(strings(&["orphan"]))
    );
    assert_eq!(
        finalizers_after_delete(&strings(&["orphan"]), None, Some(false)),
        Some(Vec::new())
    );
}

#[test]
fn delete_options_are_validated_like_kube_apiserver() {
    assert_eq!(
        parse_policy(Some("Orphan"), None).unwrap(),
        Some(PropagationPolicy::Orphan)
    );
    assert_eq!(parse_policy(None, Some(true)).unwrap(), None);
    let unknown = parse_policy(Some("Sideways"), None).unwrap_err();
    assert_eq!(unknown.code, http::StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        unknown.message,
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    assert_eq!(unknown.kind.as_deref(), Some("DeleteOptions"));
    let both = parse_policy(Some("Foreground"), Some(false)).unwrap_err();
    assert_eq!(both.code, http::StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        both.message
            .contains("orphanDependents and deletionPropagation cannot be both set"),
        "{}",
        both.message
    );
}

#[test]
fn both_collector_finalizers_are_invalid() {
    assert!(validate_finalizers(&strings(&["orphan", "x"])).is_none());
    let cause = validate_finalizers(&strings(&["orphan", "foregroundDeletion"])).unwrap();
    assert_eq!(cause.field, "metadata.finalizers");
    assert_eq!(
        cause.message,
        "Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set"
    );
}

fn configmaps() -> Arc<ResourceInfo> {
    Arc::new(
        builtins()
            .into_iter()
            .find(|r| r.plural == "configmaps")
            .unwrap(),
    )
}

fn configmap(name: &str, uid: &str, owners: &[(&str, bool)]) -> Value {
    let references: Vec<Value> = owners
        .iter()
        .map(|(owner, block)| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": owner,
                   "blockOwnerDeletion": block})
        })
        .collect();
    let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "uid": uid}});
    if !references.is_empty() {
        object["metadata"]["ownerReferences"] = json!(references);
    }
    object
}

fn deleting(mut object: Value, finalizer: &str) -> Value {
    object["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    object["metadata"]["finalizers"] = json!([finalizer]);
    object
}

/// Owners are ConfigMaps in `default`.
fn configmap_key(_: &ObjectRef, owner: &OwnerRef) -> Option<String> {
    Some(format!("/registry/core/configmaps/default/{}", owner.name))
}

const CHECK: Option<OwnerKey<'static>> = Some(&configmap_key);

fn names(work: &[ObjectRef]) -> Vec<String> {
    let mut names: Vec<String> = work.iter().map(|o| o.name.clone()).collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn a_new_owner_reference_queues_the_dependent_once() {
    let resource = configmaps();
    let mut graph = Graph::default();
    let child = configmap("child", "child", &[("owner", false)]);
    assert_eq!(names(&graph.observe(&resource, &child, CHECK)), ["child"]);
    assert!(graph.observe(&resource, &child, CHECK).is_empty());
    // Objects without owners or collector finalizers are not kept.
    assert!(
        graph
            .observe(&resource, &configmap("owner", "owner", &[]), CHECK)
            .is_empty()
    );
    assert_eq!(graph.len(), 1);
    // During the first listing new owners are checked in bulk instead.
    let other = configmap("other", "other", &[("owner", false)]);
    assert!(graph.observe(&resource, &other, None).is_empty());
}

#[test]
fn an_owner_seen_written_needs_no_check() {
    let resource = configmaps();
    let mut graph = Graph::default();
    graph.observe(&resource, &configmap("owner", "owner", &[]), CHECK);
    let child = configmap("child", "child", &[("owner", false)]);
    assert!(graph.observe(&resource, &child, CHECK).is_empty());
    // Once it is seen deleted, a new dependent is checked; the old one is queued by the delete.
    let work = graph.observe_deleted(&resource, &configmap("owner", "owner", &[]));
    assert_eq!(names(&work), ["child"]);
    let late = configmap("late", "late", &[("owner", false)]);
    assert_eq!(names(&graph.observe(&resource, &late, CHECK)), ["late"]);
    // An owner deleting its dependents in the foreground gets new ones deleted too.
    let waiting = deleting(configmap("waiting", "waiting", &[]), FOREGROUND_FINALIZER);
    graph.observe(&resource, &waiting, CHECK);
    let joiner = configmap("joiner", "joiner", &[("waiting", false)]);
    assert_eq!(names(&graph.observe(&resource, &joiner, CHECK)), ["joiner"]);
}

#[test]
fn a_deleted_owner_queues_its_dependents() {
    let resource = configmaps();
    let mut graph = Graph::default();
    graph.observe(&resource, &configmap("a", "a", &[("owner", false)]), CHECK);
    graph.observe(&resource, &configmap("b", "b", &[("owner", true)]), CHECK);
    graph.observe(&resource, &configmap("c", "c", &[("other", false)]), CHECK);
    let work = graph.observe_deleted(&resource, &configmap("owner", "owner", &[]));
    assert_eq!(names(&work), ["a", "b"]);
}

#[test]
fn foreground_deletion_waits_for_blocking_dependents() {
    let resource = configmaps();
    let mut graph = Graph::default();
    graph.observe(
        &resource,
        &configmap("blocker", "blocker", &[("owner", true)]),
        CHECK,
    );
    graph.observe(
        &resource,
        &configmap("free", "free", &[("owner", false)]),
        CHECK,
    );
    // The deletion starting queues the owner and all its dependents.
    let owner = deleting(configmap("owner", "owner", &[]), FOREGROUND_FINALIZER);
    assert_eq!(
        names(&graph.observe(&resource, &owner, CHECK)),
        ["blocker", "free", "owner"]
    );
    let dependents = graph.dependents_of("owner");
    let blocking: Vec<_> = dependents.iter().filter(|d| d.blocks).collect();
    assert_eq!(blocking.len(), 1);
    assert_eq!(blocking[0].object.name, "blocker");
    // A non-blocking dependent going away changes nothing for the owner...
    let work = graph.observe_deleted(&resource, &configmap("free", "free", &[("owner", false)]));
    assert_eq!(names(&work), ["owner"]);
    // ...and neither does the blocking one losing its block, except queueing the owner.
    let unblocked = configmap("blocker", "blocker", &[("owner", false)]);
    assert_eq!(
        names(&graph.observe(&resource, &unblocked, CHECK)),
        ["owner"]
    );
    assert!(graph.dependents_of("owner").iter().all(|d| !d.blocks));
}

#[test]
fn orphan_deletion_queues_the_owner() {
    let resource = configmaps();
    let mut graph = Graph::default();
    graph.observe(
        &resource,
        &configmap("child", "child", &[("owner", false)]),
        CHECK,
    );
    let owner = deleting(configmap("owner", "owner", &[]), ORPHAN_FINALIZER);
    assert_eq!(names(&graph.observe(&resource, &owner, CHECK)), ["owner"]);
    // The dependent losing its reference leaves the index.
    graph.observe(&resource, &configmap("child", "child", &[]), CHECK);
    assert!(graph.dependents_of("owner").is_empty());
    assert!(!graph.has_dependents("owner"));
}

#[test]
fn a_relisting_forgets_what_is_gone() {
    let resource = configmaps();
    let mut graph = Graph::default();
    graph.observe(
        &resource,
        &configmap("kept", "kept", &[("owner", false)]),
        CHECK,
    );
    graph.observe(
        &resource,
        &configmap("gone", "gone", &[("kept", false)]),
        CHECK,
    );
    let listed: HashSet<String> = ["kept".to_string()].into();
    let work = graph.reconcile_listing(&resource, &listed);
    // `gone` had no dependents; every node naming a ConfigMap owner is looked at again.
    assert_eq!(names(&work), ["kept"]);
    assert_eq!(graph.len(), 1);
    assert_eq!(
        names(&graph.forget_resource(&resource.key_prefix())),
        Vec::<String>::new()
    );
    assert_eq!(graph.len(), 0);
}

fn item(uid: &str) -> ObjectRef {
    ObjectRef {
        resource: configmaps(),
        namespace: Some("default".into()),
        name: uid.into(),
        uid: uid.into(),
    }
}

#[tokio::test]
async fn the_queue_hands_out_each_object_once_at_a_time() {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let queue = Queue::new(stopped);
    queue.add(item("a"));
    queue.add(item("a"));
    queue.add(item("b"));
    assert_eq!(queue.len(), 2);
    let a = queue.next().await.unwrap();
    assert_eq!(a.uid, "a");
    // Added while being processed: handed out again after it is done, not before.
    queue.add(item("a"));
    assert_eq!(queue.next().await.unwrap().uid, "b");
    assert_eq!(queue.done(&a, false), None);
    assert_eq!(queue.next().await.unwrap().uid, "a");
    assert_eq!(queue.done(&a, true), Some(backoff(1)));
    assert_eq!(queue.done(&a, true), Some(backoff(2)));
    stop.send_replace(true);
    assert!(queue.next().await.is_none());
}

#[test]
fn backoff_doubles_up_to_a_limit() {
    use std::time::Duration;
    assert_eq!(backoff(1), Duration::from_millis(50));
    assert_eq!(backoff(2), Duration::from_millis(100));
    assert_eq!(backoff(100), Duration::from_secs(30));
}

#[test]
fn owners_are_located_by_group_and_kind() {
    let registry = Registry::with_builtins();
    let owner = |api_version: &str, kind: &str| OwnerRef {
        api_version: api_version.into(),
        kind: kind.into(),
        name: "o".into(),
        uid: "u".into(),
        block_owner_deletion: false,
    };
    let in_namespace = item("dependent");
    let key = |location| match location {
        OwnerLocation::Found { key } => key,
        OwnerLocation::UnknownKind => "unknown kind".into(),
        OwnerLocation::NamespacedOwnerOfClusterScoped => "namespaced owner".into(),
    };
    // A namespaced owner is in the dependent's namespace; any version of the group will do.
    assert_eq!(
        key(locate_owner(
            &registry,
            &in_namespace,
            &owner("v1", "ConfigMap")
        )),
        "/registry/core/configmaps/default/o"
    );
    assert_eq!(
        key(locate_owner(
            &registry,
            &in_namespace,
            &owner("coordination.k8s.io/v2", "Lease")
        )),
        "/registry/coordination.k8s.io/leases/default/o"
    );
    // Cluster-scoped owners of namespaced dependents are fine; an Event of events.k8s.io is
    // stored as a core Event.
    assert_eq!(
        key(locate_owner(
            &registry,
            &in_namespace,
            &owner("v1", "Namespace")
        )),
        "/registry/core/namespaces/o"
    );
    assert_eq!(
        key(locate_owner(
            &registry,
            &in_namespace,
            &owner("events.k8s.io/v1", "Event")
        )),
        "/registry/core/events/default/o"
    );
    assert_eq!(
        key(locate_owner(
            &registry,
            &in_namespace,
            &owner("example.com/v1", "Widget")
        )),
        "unknown kind"
    );
    let cluster_scoped = ObjectRef {
        namespace: None,
        ..item("dependent")
    };
    assert_eq!(
        key(locate_owner(
            &registry,
            &cluster_scoped,
            &owner("v1", "ConfigMap")
        )),
        "namespaced owner"
    );
}

#[test]
fn foreground_and_orphan_owners_settle_before_they_are_trusted() {
    use std::time::Duration;
    let resource = configmaps();
    let mut graph = Graph::default();
    let owner = deleting(configmap("owner", "owner", &[]), ORPHAN_FINALIZER);
    graph.observe(&resource, &owner, CHECK);
    assert!(graph.deletion_seen_before("owner", Duration::ZERO));
    assert!(!graph.deletion_seen_before("owner", Duration::from_secs(3600)));
    assert!(!graph.deletion_seen_before("unknown", Duration::ZERO));
}
