//! Built-in resources through kube-rs' typed API: create, get, list, replace, patch, delete.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::TestServer;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "data": {"a": "1"},
    }))
    .unwrap()
}

async fn initial_namespaces_exist(server: TestServer) {
    let namespaces: Api<Namespace> = Api::all(server.client.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for expected in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} in {names:?}"
        );
    }
    let default = namespaces.get("default").await.unwrap();
    assert_eq!(default.status.unwrap().phase.as_deref(), Some("Active"));
}

async fn config_map_crud(server: TestServer) {
    let ns = server.namespace("crud").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    let created = api
        .create(&PostParams::default(), &config_map("c1"))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(
        meta.uid.as_deref().is_some_and(|u| u.len() == 36),
        "uid is a UUID"
    );
    assert!(meta.creation_timestamp.is_some());
    let rv1: i64 = meta.resource_version.as_deref().unwrap().parse().unwrap();
    assert_eq!(meta.namespace.as_deref(), Some(ns.as_str()));

    let fetched = api.get("c1").await.unwrap();
    assert_eq!(fetched.data.unwrap()["a"], "1");

    // A replace with the current resourceVersion succeeds and gets a newer one.
    let mut changed = created.clone();
    changed.data = Some([("a".to_string(), "2".to_string())].into());
    let replaced = api
        .replace("c1", &PostParams::default(), &changed)
        .await
        .unwrap();
    let rv2: i64 = replaced
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    assert_eq!(
        replaced.metadata.uid, created.metadata.uid,
        "uid is immutable"
    );

    // A replace with the stale one is a 409 Conflict.
    let error = api
        .replace("c1", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    match error {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "Conflict");
            assert!(
                status.message.contains("the object has been modified"),
                "{}",
                status.message
            );
        }
        other => panic!("expected a Conflict, got {other}"),
    }

    // Create of an existing name: 409 AlreadyExists.
    let error = api
        .create(&PostParams::default(), &config_map("c1"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, kube::Error::Api(ref s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{error}"
    );

    // Merge, JSON and strategic merge patches.
    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.as_ref().unwrap()["b"], "x");
    let raw = server
        .raw(
            "PATCH",
            &format!("/api/v1/namespaces/{ns}/configmaps/c1"),
            Some("application/json-patch+json"),
            r#"[{"op": "add", "path": "/data/c", "value": "y"}]"#,
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let patched: ConfigMap = serde_json::from_slice(&raw.body).unwrap();
    assert_eq!(patched.data.as_ref().unwrap()["c"], "y");
    let patched = api
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Strategic(
                json!({"metadata": {"labels": {"tier": "web"}}, "data": {"b": null}}),
            ),
        )
        .await
        .unwrap();
    let data = patched.data.unwrap();
    assert!(
        !data.contains_key("b"),
        "null deletes in a strategic merge patch"
    );
    assert_eq!(patched.metadata.labels.unwrap()["tier"], "web");

    // Label selectors narrow lists.
    api.create(&PostParams::default(), &{
        let mut other = config_map("c2");
        other.metadata.labels = Some([("app".to_string(), "other".to_string())].into());
        other
    })
    .await
    .unwrap();
    let demo = api
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    assert_eq!(demo.items.len(), 1);
    let not_demo = api
        .list(&ListParams::default().labels("app!=demo"))
        .await
        .unwrap();
    assert_eq!(not_demo.items.len(), 1);
    assert_eq!(not_demo.items[0].metadata.name.as_deref(), Some("c2"));
    let by_set = api
        .list(&ListParams::default().labels("app in (demo,other)"))
        .await
        .unwrap();
    assert_eq!(by_set.items.len(), 2);
    let by_field = api
        .list(&ListParams::default().fields("metadata.name=c2"))
        .await
        .unwrap();
    assert_eq!(by_field.items.len(), 1);

    api.delete("c1", &DeleteParams::default()).await.unwrap();
    let error = api.get("c1").await.unwrap_err();
    assert!(
        matches!(error, kube::Error::Api(ref s) if s.code == 404),
        "{error}"
    );
}

async fn generate_name_and_dry_run(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let mut object = config_map("");
    object.metadata.name = None;
    object.metadata.generate_name = Some("gen-".into());
    let first = api.create(&PostParams::default(), &object).await.unwrap();
    let second = api.create(&PostParams::default(), &object).await.unwrap();
    let first_name = first.metadata.name.unwrap();
    assert!(
        first_name.starts_with("gen-") && first_name.len() == 9,
        "{first_name}"
    );
    assert_ne!(Some(first_name), second.metadata.name);

    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let would_be = api.create(&dry, &config_map("dry")).await.unwrap();
    assert_eq!(would_be.metadata.name.as_deref(), Some("dry"));
    assert!(
        api.get_opt("dry").await.unwrap().is_none(),
        "dryRun stores nothing"
    );
}

async fn no_op_writes_keep_the_resource_version(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &config_map("same"))
        .await
        .unwrap();
    let patched = api
        .patch(
            "same",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.resource_version,
        created.metadata.resource_version
    );
    let replaced = api
        .replace("same", &PostParams::default(), &created)
        .await
        .unwrap();
    assert_eq!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    let revision_before = server
        .server
        .state()
        .store
        .current_revision()
        .await
        .unwrap();
    api.replace("same", &PostParams::default(), &created)
        .await
        .unwrap();
    let revision_after = server
        .server
        .state()
        .store
        .current_revision()
        .await
        .unwrap();
    assert_eq!(
        revision_before, revision_after,
        "a no-op write creates no revision"
    );
}

async fn finalizers_hold_deletion(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let mut object = config_map("held");
    object.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &object).await.unwrap();
    let deleted = api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = deleted
        .left()
        .expect("an object with finalizers is returned, not a Status");
    assert!(marked.metadata.deletion_timestamp.is_some());
    // Still there, marked.
    let current = api.get("held").await.unwrap();
    assert!(current.metadata.deletion_timestamp.is_some());
    // New finalizers cannot be added while deleting.
    let error = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}),
            ),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, kube::Error::Api(ref s) if s.code == 422),
        "{error}"
    );
    // Removing the last finalizer deletes it.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());
}

async fn secrets_and_namespace_lifecycle(server: TestServer) {
    let ns = server.namespace("doomed").await;
    let secrets: Api<Secret> = Api::namespaced(server.client.clone(), &ns);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "s"},
        "data": {"password": "c2VjcmV0"},
    }))
    .unwrap();
    let created = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    let namespaces: Api<Namespace> = Api::all(server.client.clone());
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    // Creating in a terminating (or gone) namespace is refused.
    let mut late = secret.clone();
    late.metadata.name = Some("late".into());
    assert!(secrets.create(&PostParams::default(), &late).await.is_err());
    crate::support::eventually(10, "the namespace and its contents to go away", || async {
        namespaces
            .get_opt(&ns)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let gone: Api<Secret> = Api::namespaced(server.client.clone(), &ns);
    let error = gone.list(&ListParams::default()).await;
    assert!(error.map(|l| l.items.is_empty()).unwrap_or(true));
}

async fn paging_is_consistent(server: TestServer) {
    let ns = server.namespace("paging").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    for i in 0..25 {
        api.create(&PostParams::default(), &config_map(&format!("c{i:02}")))
            .await
            .unwrap();
    }
    let first = api.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(first.items.len(), 10);
    let token = first.metadata.continue_.clone().expect("a continue token");
    // Writes after the first page do not show up in later pages.
    api.create(&PostParams::default(), &config_map("c99"))
        .await
        .unwrap();
    api.delete("c15", &DeleteParams::default()).await.unwrap();
    let mut names: Vec<String> = first
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    let mut token = Some(token);
    while let Some(next) = token {
        let page = api
            .list(&ListParams::default().limit(10).continue_token(&next))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version,
            first.metadata.resource_version
        );
        names.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
    }
    let expected: Vec<String> = (0..25).map(|i| format!("c{i:02}")).collect();
    assert_eq!(names, expected);
}

/// A label-selected list (the server matches labels before decoding each stored object)
/// returns exactly the selected objects, for every kind of requirement, across pages.
async fn label_selected_lists_return_the_selected_objects(server: TestServer) {
    let ns = server.namespace("selected").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    for i in 0..12 {
        let mut labels = serde_json::Map::new();
        labels.insert("cluster".into(), json!(format!("c{}", i % 3)));
        if i % 2 == 0 {
            labels.insert("control-plane".into(), json!(""));
        }
        let object: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("m{i:02}"), "labels": labels},
            "data": {"labels": "not these", "cluster": "c0"},
        }))
        .unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }
    let unlabelled: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "plain"}})).unwrap();
    api.create(&PostParams::default(), &unlabelled)
        .await
        .unwrap();
    let names =
        |numbers: &[usize]| -> Vec<String> { numbers.iter().map(|i| format!("m{i:02}")).collect() };
    for (selector, expected) in [
        ("cluster=c0", names(&[0, 3, 6, 9])),
        ("cluster=c0,control-plane", names(&[0, 6])),
        ("cluster=c1,!control-plane", names(&[1, 7])),
        ("cluster in (c1,c2),control-plane", names(&[2, 4, 8, 10])),
        ("cluster notin (c0,c1)", {
            let mut v = vec!["plain".to_string()];
            v.extend(names(&[2, 5, 8, 11]));
            v.sort();
            v
        }),
        ("cluster=c9", vec![]),
    ] {
        let listed: Vec<String> = api
            .list(&ListParams::default().labels(selector))
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        assert_eq!(listed, expected, "{selector}");
        // The same in pages of two.
        let mut paged = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().labels(selector).limit(2);
            if let Some(next) = &token {
                params = params.continue_token(next);
            }
            let page = api.list(&params).await.unwrap();
            paged.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
        }
        assert_eq!(paged, expected, "{selector}, paged");
    }
}

async fn events_are_one_resource_in_two_apis(server: TestServer) {
    // As kube-rs' recorder writes it (events.k8s.io/v1)...
    let raw = server
        .post_json(
            "/apis/events.k8s.io/v1/namespaces/default/events",
            &json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "w1.abc"},
                "eventTime": "2026-11-29T10:00:00.000000Z",
                "regarding": {"kind": "Widget", "name": "w1", "namespace": "default", "uid": "u-1"},
                "reason": "Created", "note": "widget created", "type": "Normal", "action": "Create",
                "reportingController": "corral", "reportingInstance": "corral-1",
            }),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["note"], "widget created");
    // ...and as `kubectl describe` reads it (core/v1, by involvedObject).
    let list = server
        .get_json("/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DWidget,involvedObject.name%3Dw1,involvedObject.uid%3Du-1")
        .await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["apiVersion"], "v1");
    assert_eq!(items[0]["message"], "widget created");
    assert_eq!(items[0]["involvedObject"]["name"], "w1");
    assert_eq!(items[0]["reportingComponent"], "corral");
    let other = server
        .get_json("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dw2")
        .await;
    assert!(other["items"].as_array().unwrap().is_empty());
    // A core event is an events.k8s.io event too.
    let raw = server
        .post_json(
            "/api/v1/namespaces/default/events",
            &json!({"metadata": {"name": "c.1"}, "involvedObject": {"kind": "Pod", "name": "p"}, "message": "hello", "reason": "Test"}),
        )
        .await;
    assert_eq!(raw.status, 201);
    let event = server
        .get_json("/apis/events.k8s.io/v1/namespaces/default/events/c.1")
        .await;
    assert_eq!(event["apiVersion"], "events.k8s.io/v1");
    assert_eq!(event["note"], "hello");
    assert_eq!(event["regarding"]["name"], "p");
}

async fn built_in_kinds_refuse_or_drop_unknown_fields(server: TestServer) {
    let path = "/api/v1/namespaces/default/configmaps";
    let body = r#"{"metadata":{"name":"c","flavor":"x"},"data":{"a":"1"},"flavor":"mint"}"#;
    let raw = server
        .raw(
            "POST",
            &format!("{path}?fieldValidation=Strict"),
            None,
            body,
        )
        .await;
    assert_eq!(raw.status, 400);
    let message = raw.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains(
            r#"strict decoding error: unknown field "flavor", unknown field "metadata.flavor""#
        ),
        "{message}"
    );
    let raw = server.raw("POST", path, None, body).await;
    assert_eq!(raw.status, 201, "warned about and dropped by default");
    let warnings: Vec<_> = raw.headers.get_all("warning").iter().collect();
    assert_eq!(warnings.len(), 2);
    let stored = raw.json();
    assert!(stored.get("flavor").is_none());
    assert!(stored["metadata"].get("flavor").is_none());
    assert_eq!(stored["data"]["a"], "1");
}

async fn secret_string_data_is_merged_into_data(server: TestServer) {
    let raw = server
        .post_json(
            "/api/v1/namespaces/default/secrets",
            &json!({"metadata": {"name": "s"}, "data": {"a": "b2xk", "b": "Yg=="}, "stringData": {"a": "new"}}),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    let secret = raw.json();
    assert!(
        secret.get("stringData").is_none(),
        "stringData is write-only"
    );
    assert_eq!(secret["data"]["a"], "bmV3", "stringData wins over data");
    assert_eq!(secret["data"]["b"], "Yg==");
}

async fn nodes_and_pods_serve_a_workload_cluster(server: TestServer) {
    let raw = server
        .post_json(
            "/api/v1/nodes",
            &json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
                    "spec": {"providerID": "in-memory://n1"},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}],
                               "nodeInfo": {"kubeletVersion": "v1.32.0"}}}),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    for (name, node) in [("p1", "n1"), ("p2", "n2")] {
        let raw = server
            .post_json(
                "/api/v1/namespaces/default/pods",
                &json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}}),
            )
            .await;
        assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    }
    // Drain lists a node's pods with a field selector.
    let pods = server
        .get_json("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
        .await;
    let names: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p1"]);
    // `kubectl get nodes` columns.
    let raw = crate::machinery::get_with_accept(
        &server,
        "/api/v1/nodes",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    )
    .await;
    let table = raw.json();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Status", "Roles", "Age", "Version"]);
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[1], "Ready");
    assert_eq!(cells[2], "control-plane");
    assert_eq!(cells[4], "v1.32.0");
}

backend_tests!(
    nodes_and_pods_serve_a_workload_cluster,
    built_in_kinds_refuse_or_drop_unknown_fields,
    secret_string_data_is_merged_into_data,
    events_are_one_resource_in_two_apis,
    initial_namespaces_exist,
    config_map_crud,
    generate_name_and_dry_run,
    no_op_writes_keep_the_resource_version,
    finalizers_hold_deletion,
    secrets_and_namespace_lifecycle,
    paging_is_consistent,
    label_selected_lists_return_the_selected_objects,
);
