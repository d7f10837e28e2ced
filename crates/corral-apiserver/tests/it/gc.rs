//! Garbage collection: dependents of deleted owners go away (Background), owners wait for
//! their blocking dependents (Foreground) or let them go (Orphan), references to owners that
//! never existed or have another uid count as gone, and work left at a restart finishes.

use serde_json::{Value, json};

use crate::support::{Raw, TestServer, eventually};

/// A finalizer of the tests' own, that nothing removes but the test.
const HOLD: &str = "example.com/hold";

fn configmap(name: &str, owners: &[Value], finalizers: &[&str]) -> Value {
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": "v"},
    });
    if !owners.is_empty() {
        object["metadata"]["ownerReferences"] = json!(owners);
    }
    if !finalizers.is_empty() {
        object["metadata"]["finalizers"] = json!(finalizers);
    }
    object
}

fn widget(name: &str, owners: &[Value]) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "ownerReferences": owners},
        "spec": {"color": "red"},
    })
}

/// An ownerReference to `owner` as it was returned by the server.
fn reference(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn configmaps(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps")
}

fn widgets(namespace: &str) -> String {
    format!("/apis/example.com/v1/namespaces/{namespace}/widgets")
}

async fn create(server: &TestServer, collection: &str, object: Value) -> Value {
    let raw = server.post_json(collection, &object).await;
    assert_eq!(
        raw.status,
        201,
        "POST {collection}: {}",
        String::from_utf8_lossy(&raw.body)
    );
    raw.json()
}

async fn get(server: &TestServer, path: &str) -> Option<Value> {
    let raw = server.raw("GET", path, None, Vec::new()).await;
    match raw.status {
        200 => Some(raw.json()),
        404 => None,
        other => panic!("GET {path}: {other} {}", String::from_utf8_lossy(&raw.body)),
    }
}

async fn delete(server: &TestServer, path: &str, options: Option<Value>) -> Raw {
    let body = options
        .map(|o| serde_json::to_vec(&o).unwrap())
        .unwrap_or_default();
    server
        .raw("DELETE", path, Some("application/json"), body)
        .await
}

async fn release(server: &TestServer, path: &str) {
    let raw = server
        .raw(
            "PATCH",
            path,
            Some("application/merge-patch+json"),
            serde_json::to_vec(&json!({"metadata": {"finalizers": null}})).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
}

async fn wait_gone(server: &TestServer, path: &str) {
    eventually(20, &format!("{path} to be deleted"), || async {
        get(server, path).await.is_none().then_some(())
    })
    .await;
}

/// Waits until the object at `path` exists and satisfies `check`; returns it.
async fn wait_for(
    server: &TestServer,
    path: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    eventually(20, what, || async {
        get(server, path).await.filter(|object| check(object))
    })
    .await
}

fn being_deleted(object: &Value) -> bool {
    object["metadata"]["deletionTimestamp"].is_string()
}

fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

async fn background_deletion_collects_dependents(server: TestServer) {
    let ns = server.namespace("gc-background").await;
    server.widget_crd().await;
    let cms = configmaps(&ns);
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;
    let other = create(&server, &cms, configmap("other", &[], &[])).await;
    create(
        &server,
        &cms,
        configmap("child", &[reference(&owner, false)], &[]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap("blocking-child", &[reference(&owner, true)], &[]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap(
            "shared",
            &[reference(&owner, false), reference(&other, false)],
            &[],
        ),
    )
    .await;
    create(
        &server,
        &widgets(&ns),
        widget("gadget", &[reference(&owner, false)]),
    )
    .await;

    // kubectl's default: the owner goes at once.
    let raw = delete(
        &server,
        &format!("{cms}/owner"),
        Some(
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}),
        ),
    )
    .await;
    assert_eq!(raw.status, 200);
    assert_eq!(raw.json()["kind"], "Status");
    assert!(get(&server, &format!("{cms}/owner")).await.is_none());

    wait_gone(&server, &format!("{cms}/child")).await;
    wait_gone(&server, &format!("{cms}/blocking-child")).await;
    wait_gone(&server, &format!("{}/gadget", widgets(&ns))).await;
    // An object with another owner stays, without the reference to the gone one.
    let shared = wait_for(
        &server,
        &format!("{cms}/shared"),
        "the reference to the deleted owner to be dropped",
        |object| {
            object["metadata"]["ownerReferences"]
                .as_array()
                .map(Vec::len)
                == Some(1)
        },
    )
    .await;
    assert_eq!(
        shared["metadata"]["ownerReferences"][0]["uid"],
        other["metadata"]["uid"]
    );

    // A custom resource as the owner, deleted without options.
    let gizmo = create(&server, &widgets(&ns), widget("gizmo", &[])).await;
    create(
        &server,
        &cms,
        configmap("of-gizmo", &[reference(&gizmo, true)], &[]),
    )
    .await;
    let raw = delete(&server, &format!("{}/gizmo", widgets(&ns)), None).await;
    assert_eq!(raw.status, 200);
    wait_gone(&server, &format!("{cms}/of-gizmo")).await;
}

async fn dependents_with_finalizers_delay_but_do_not_block_background(server: TestServer) {
    let ns = server.namespace("gc-held").await;
    let cms = configmaps(&ns);
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;
    create(
        &server,
        &cms,
        configmap("held", &[reference(&owner, true)], &[HOLD]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap("plain", &[reference(&owner, true)], &[]),
    )
    .await;

    let raw = delete(&server, &format!("{cms}/owner"), None).await;
    assert_eq!(raw.status, 200);
    assert!(get(&server, &format!("{cms}/owner")).await.is_none());

    wait_gone(&server, &format!("{cms}/plain")).await;
    let held = wait_for(
        &server,
        &format!("{cms}/held"),
        "held to be marked",
        being_deleted,
    )
    .await;
    assert_eq!(finalizers(&held), [HOLD]);
    release(&server, &format!("{cms}/held")).await;
    wait_gone(&server, &format!("{cms}/held")).await;
}

async fn foreground_deletion_waits_for_blocking_dependents(server: TestServer) {
    let ns = server.namespace("gc-foreground").await;
    let cms = configmaps(&ns);
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;
    create(
        &server,
        &cms,
        configmap("blocker", &[reference(&owner, true)], &[HOLD]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap("bystander", &[reference(&owner, false)], &[HOLD]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap("plain", &[reference(&owner, true)], &[]),
    )
    .await;

    let raw = delete(
        &server,
        &format!("{cms}/owner"),
        Some(json!({"propagationPolicy": "Foreground"})),
    )
    .await;
    assert_eq!(raw.status, 200);
    let marked = raw.json();
    assert_eq!(marked["kind"], "ConfigMap");
    assert!(being_deleted(&marked));
    assert_eq!(finalizers(&marked), ["foregroundDeletion"]);

    // Every dependent is deleted, blocking or not.
    wait_gone(&server, &format!("{cms}/plain")).await;
    wait_for(
        &server,
        &format!("{cms}/blocker"),
        "blocker to be marked",
        being_deleted,
    )
    .await;
    wait_for(
        &server,
        &format!("{cms}/bystander"),
        "bystander to be marked",
        being_deleted,
    )
    .await;
    let owner_now = get(&server, &format!("{cms}/owner"))
        .await
        .expect("the owner waits for its blocking dependent");
    assert_eq!(finalizers(&owner_now), ["foregroundDeletion"]);

    // Only the blocking dependent holds the owner back.
    release(&server, &format!("{cms}/blocker")).await;
    wait_gone(&server, &format!("{cms}/owner")).await;
    let bystander = get(&server, &format!("{cms}/bystander")).await.unwrap();
    assert!(being_deleted(&bystander));
    release(&server, &format!("{cms}/bystander")).await;
    wait_gone(&server, &format!("{cms}/bystander")).await;
}

async fn foreground_deletion_is_recursive(server: TestServer) {
    let ns = server.namespace("gc-recursive").await;
    let cms = configmaps(&ns);
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;
    let child = create(
        &server,
        &cms,
        configmap("child", &[reference(&owner, true)], &[]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap("grandchild", &[reference(&child, true)], &[HOLD]),
    )
    .await;

    let raw = delete(
        &server,
        &format!("{cms}/owner?propagationPolicy=Foreground"),
        None,
    )
    .await;
    assert_eq!(raw.status, 200);

    // The child has dependents of its own, so it is deleted in the foreground too.
    wait_for(
        &server,
        &format!("{cms}/child"),
        "child in foreground deletion",
        |child| being_deleted(child) && finalizers(child) == ["foregroundDeletion"],
    )
    .await;
    wait_for(
        &server,
        &format!("{cms}/grandchild"),
        "grandchild to be marked",
        being_deleted,
    )
    .await;
    assert!(get(&server, &format!("{cms}/owner")).await.is_some());

    release(&server, &format!("{cms}/grandchild")).await;
    wait_gone(&server, &format!("{cms}/grandchild")).await;
    wait_gone(&server, &format!("{cms}/child")).await;
    wait_gone(&server, &format!("{cms}/owner")).await;
}

async fn orphan_deletion_keeps_dependents(server: TestServer) {
    let ns = server.namespace("gc-orphan").await;
    server.widget_crd().await;
    let cms = configmaps(&ns);
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;
    let other = create(&server, &cms, configmap("other", &[], &[])).await;
    create(
        &server,
        &cms,
        configmap("child", &[reference(&owner, true)], &[]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap(
            "shared",
            &[reference(&owner, true), reference(&other, false)],
            &[],
        ),
    )
    .await;
    create(
        &server,
        &widgets(&ns),
        widget("gadget", &[reference(&owner, true)]),
    )
    .await;

    let raw = delete(
        &server,
        &format!("{cms}/owner"),
        Some(json!({"propagationPolicy": "Orphan"})),
    )
    .await;
    assert_eq!(raw.status, 200);
    assert_eq!(finalizers(&raw.json()), ["orphan"]);
    wait_gone(&server, &format!("{cms}/owner")).await;

    // The owner goes only after its dependents dropped their references to it.
    let child = get(&server, &format!("{cms}/child")).await.unwrap();
    assert!(
        child["metadata"].get("ownerReferences").is_none(),
        "{child}"
    );
    let gadget = get(&server, &format!("{}/gadget", widgets(&ns)))
        .await
        .unwrap();
    assert!(
        gadget["metadata"].get("ownerReferences").is_none(),
        "{gadget}"
    );
    let shared = get(&server, &format!("{cms}/shared")).await.unwrap();
    assert_eq!(
        shared["metadata"]["ownerReferences"],
        json!([reference(&other, false)])
    );

    // The legacy option asks for the same.
    let legacy = create(&server, &cms, configmap("legacy", &[], &[])).await;
    create(
        &server,
        &cms,
        configmap("of-legacy", &[reference(&legacy, false)], &[]),
    )
    .await;
    let raw = delete(
        &server,
        &format!("{cms}/legacy"),
        Some(json!({"orphanDependents": true})),
    )
    .await;
    assert_eq!(raw.status, 200);
    wait_gone(&server, &format!("{cms}/legacy")).await;
    let orphan = get(&server, &format!("{cms}/of-legacy")).await.unwrap();
    assert!(orphan["metadata"].get("ownerReferences").is_none());
}

async fn references_to_missing_owners_are_collected(server: TestServer) {
    let ns = server.namespace("gc-dangling").await;
    let cms = configmaps(&ns);
    let namespace = get(&server, &format!("/api/v1/namespaces/{ns}"))
        .await
        .unwrap();
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;

    // Valid references, to a namespaced and to a cluster-scoped owner, keep objects.
    create(
        &server,
        &cms,
        configmap("kept", &[reference(&owner, false)], &[]),
    )
    .await;
    create(
        &server,
        &cms,
        configmap("in-namespace", &[reference(&namespace, false)], &[]),
    )
    .await;

    // An owner that never existed.
    let mut never = reference(&owner, false);
    never["name"] = json!("never");
    never["uid"] = json!("00000000-0000-0000-0000-000000000001");
    create(&server, &cms, configmap("never-owned", &[never], &[])).await;
    // The right name but another uid: another object, so the owner is gone.
    let mut impostor = reference(&owner, false);
    impostor["uid"] = json!("00000000-0000-0000-0000-000000000002");
    create(&server, &cms, configmap("wrong-uid", &[impostor], &[])).await;
    let mut wrong_namespace_uid = reference(&namespace, false);
    wrong_namespace_uid["uid"] = json!("00000000-0000-0000-0000-000000000003");
    create(
        &server,
        &cms,
        configmap("wrong-namespace-uid", &[wrong_namespace_uid], &[]),
    )
    .await;

    wait_gone(&server, &format!("{cms}/never-owned")).await;
    wait_gone(&server, &format!("{cms}/wrong-uid")).await;
    wait_gone(&server, &format!("{cms}/wrong-namespace-uid")).await;
    assert!(get(&server, &format!("{cms}/kept")).await.is_some());
    assert!(get(&server, &format!("{cms}/in-namespace")).await.is_some());
}

async fn delete_options_for_the_collector(server: TestServer) {
    let ns = server.namespace("gc-options").await;
    let cms = configmaps(&ns);
    create(&server, &cms, configmap("target", &[], &[HOLD])).await;

    let raw = delete(
        &server,
        &format!("{cms}/target"),
        Some(json!({"propagationPolicy": "Sideways"})),
    )
    .await;
    assert_eq!(raw.status, 422);
    let status = raw.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "DeleteOptions");
    assert_eq!(status["details"]["group"], "meta.k8s.io");
    let raw = delete(
        &server,
        &format!("{cms}/target"),
        Some(json!({"propagationPolicy": "Orphan", "orphanDependents": true})),
    )
    .await;
    assert_eq!(raw.status, 422);
    let raw = delete(
        &server,
        &format!("{cms}/target?propagationPolicy=Nope"),
        None,
    )
    .await;
    assert_eq!(raw.status, 422);
    assert!(
        get(&server, &format!("{cms}/target")).await.is_some(),
        "bad options change nothing"
    );

    // Not deleted at once, with orphanDependents=false: 202, as kube-apiserver answers.
    let raw = delete(
        &server,
        &format!("{cms}/target"),
        Some(json!({"orphanDependents": false})),
    )
    .await;
    assert_eq!(raw.status, 202);
    assert_eq!(finalizers(&raw.json()), [HOLD]);

    // A later DELETE can change the policy of an object already being deleted.
    let raw = delete(
        &server,
        &format!("{cms}/target"),
        Some(json!({"propagationPolicy": "Foreground"})),
    )
    .await;
    assert_eq!(raw.status, 200);
    let marked = raw.json();
    assert_eq!(finalizers(&marked), [HOLD, "foregroundDeletion"]);

    // Both collector finalizers at once are refused.
    create(&server, &cms, configmap("dry", &[], &[])).await;
    let both = json!({"metadata": {"finalizers": ["orphan", "foregroundDeletion"]}});
    let raw = server
        .raw(
            "PATCH",
            &format!("{cms}/dry"),
            Some("application/merge-patch+json"),
            serde_json::to_vec(&both).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    assert!(
        raw.json()["message"]
            .as_str()
            .unwrap()
            .contains("cannot be both set")
    );

    // dryRun changes nothing.
    let raw = delete(
        &server,
        &format!("{cms}/dry"),
        Some(json!({"propagationPolicy": "Orphan", "dryRun": ["All"]})),
    )
    .await;
    assert_eq!(raw.status, 200);
    let dry = get(&server, &format!("{cms}/dry")).await.unwrap();
    assert!(!being_deleted(&dry));
    assert!(finalizers(&dry).is_empty());

    release(&server, &format!("{cms}/target")).await;
    wait_gone(&server, &format!("{cms}/target")).await;
}

/// One owner with many dependents: its deletion is remembered, so no dependent reads it again.
async fn many_dependents_are_collected(server: TestServer) {
    let ns = server.namespace("gc-many").await;
    let cms = configmaps(&ns);
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;
    let owner_reference = reference(&owner, false);
    for batch in 0..5 {
        let creates = (0..40).map(|i| {
            let mut object = configmap(
                &format!("child-{batch}-{i}"),
                std::slice::from_ref(&owner_reference),
                &[],
            );
            object["metadata"]["labels"] = json!({"gc": "many"});
            let cms = cms.clone();
            let server = &server;
            async move { create(server, &cms, object).await }
        });
        futures::future::join_all(creates).await;
    }
    let raw = delete(&server, &format!("{cms}/owner"), None).await;
    assert_eq!(raw.status, 200);
    let selected = format!("{cms}?labelSelector=gc%3Dmany");
    eventually(60, "every dependent to be collected", || async {
        let list = server.get_json(&selected).await;
        list["items"].as_array().unwrap().is_empty().then_some(())
    })
    .await;
}

/// Work left when a server stops is finished by the next one over the same store.
async fn collection_resumes_after_a_restart(server: TestServer) {
    let ns = server.namespace("gc-restart").await;
    let cms = configmaps(&ns);
    let owner = create(&server, &cms, configmap("owner", &[], &[])).await;
    create(
        &server,
        &cms,
        configmap("child", &[reference(&owner, false)], &[]),
    )
    .await;
    let waiting = create(&server, &cms, configmap("waiting", &[], &[])).await;
    create(
        &server,
        &cms,
        configmap("blocker", &[reference(&waiting, true)], &[HOLD]),
    )
    .await;
    let raw = delete(
        &server,
        &format!("{cms}/waiting"),
        Some(json!({"propagationPolicy": "Foreground"})),
    )
    .await;
    assert_eq!(raw.status, 200);
    wait_for(
        &server,
        &format!("{cms}/blocker"),
        "blocker to be marked",
        being_deleted,
    )
    .await;

    let store = server.server.state().store.clone();
    let first = server.server;
    first.shutdown().await;
    // While no server runs: the owner goes, and so does the blocking dependent.
    let key = |name: &str| format!("/registry/core/configmaps/{ns}/{name}");
    for name in ["owner", "blocker"] {
        let kv = store.get(&key(name), None).await.unwrap().unwrap();
        store.delete(&key(name), kv.mod_revision).await.unwrap();
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let second = corral_apiserver::Server::start(listener, store.clone(), Default::default())
        .await
        .unwrap();
    for name in ["child", "waiting"] {
        eventually(
            20,
            &format!("{name} to be collected after the restart"),
            || async {
                store
                    .get(&key(name), None)
                    .await
                    .unwrap()
                    .is_none()
                    .then_some(())
            },
        )
        .await;
    }
    second.shutdown().await;
}

backend_tests!(
    background_deletion_collects_dependents,
    dependents_with_finalizers_delay_but_do_not_block_background,
    foreground_deletion_waits_for_blocking_dependents,
    foreground_deletion_is_recursive,
    orphan_deletion_keeps_dependents,
    references_to_missing_owners_are_collected,
    delete_options_for_the_collector,
    many_dependents_are_collected,
    collection_resumes_after_a_restart,
);
