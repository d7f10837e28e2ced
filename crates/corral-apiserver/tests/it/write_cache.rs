//! Updates start from the watch cache's copy of an object, which may lag the store. These
//! tests write to the store behind the server's back (as another server sharing it would) and
//! update through the API right after, before the cache can have seen that write, and check
//! that every answer is what the store's current state calls for: no lost write, no wrong
//! no-op, no error computed from an old copy.

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::TestServer;

backend_tests!(
    updates_see_writes_the_cache_has_not_seen,
    a_write_the_cache_takes_for_a_no_op_is_written,
    an_error_from_an_old_copy_is_not_returned,
    a_key_deleted_behind_the_cache_is_not_found,
    a_delete_sees_finalizers_the_cache_has_not_seen,
    a_copy_admitted_under_an_old_schema_gets_the_new_defaults,
);

const ROUNDS: usize = 20;

fn config_map_key(name: &str) -> String {
    format!("/registry/core/configmaps/default/{name}")
}

/// Changes the stored object at `key` with `change`, directly in the store; returns the new
/// revision.
async fn write_behind(server: &TestServer, key: &str, change: impl FnOnce(&mut Value)) -> i64 {
    let store = &server.server.state().store;
    let kv = store.get(key, None).await.unwrap().expect("stored");
    let mut object: Value = serde_json::from_slice(&kv.value).unwrap();
    change(&mut object);
    store
        .update(
            key,
            serde_json::to_vec(&object).unwrap().into(),
            kv.mod_revision,
        )
        .await
        .unwrap()
}

async fn stored(server: &TestServer, key: &str) -> (Value, i64) {
    let kv = server
        .server
        .state()
        .store
        .get(key, None)
        .await
        .unwrap()
        .expect("stored");
    (serde_json::from_slice(&kv.value).unwrap(), kv.mod_revision)
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "0"}})).unwrap()
}

async fn updates_see_writes_the_cache_has_not_seen(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    api.create(&PostParams::default(), &config_map("behind"))
        .await
        .unwrap();
    let key = config_map_key("behind");
    for round in 0..ROUNDS {
        let revision = write_behind(&server, &key, |object| {
            object["data"]["behind"] = json!(round.to_string());
        })
        .await;
        // A merge patch with the revision just written as its precondition, as controllers
        // write: it must succeed and keep the write behind the cache.
        let patched = api
            .patch(
                "behind",
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "metadata": {"resourceVersion": revision.to_string()},
                    "data": {"api": round.to_string()},
                })),
            )
            .await
            .unwrap_or_else(|error| panic!("round {round}: {error}"));
        let data = patched.data.unwrap();
        assert_eq!(data["behind"], round.to_string(), "round {round}");
        assert_eq!(data["api"], round.to_string(), "round {round}");
        // A patch without a precondition right after a write behind the cache keeps it too.
        write_behind(&server, &key, |object| {
            object["data"]["again"] = json!(round.to_string());
        })
        .await;
        api.patch(
            "behind",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"api": format!("{round}b")}})),
        )
        .await
        .unwrap();
        let (object, _) = stored(&server, &key).await;
        assert_eq!(object["data"]["again"], round.to_string(), "round {round}");
        assert_eq!(object["data"]["api"], format!("{round}b"), "round {round}");
        assert_eq!(object["data"]["behind"], round.to_string(), "round {round}");
    }
    // A stale resourceVersion is still refused.
    let mut stale = config_map("behind");
    stale.metadata.resource_version = Some("2".into());
    let error = api
        .replace("behind", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 409),
        "{error}"
    );
}

async fn a_write_the_cache_takes_for_a_no_op_is_written(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    api.create(&PostParams::default(), &config_map("noop"))
        .await
        .unwrap();
    let key = config_map_key("noop");
    for round in 0..ROUNDS {
        // The cache may still hold `a: "0"`, which is what the patch asks for.
        let behind = write_behind(&server, &key, |object| {
            object["data"]["a"] = json!(format!("changed {round}"));
        })
        .await;
        let patched = api
            .patch(
                "noop",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"a": "0"}})),
            )
            .await
            .unwrap();
        let (object, revision) = stored(&server, &key).await;
        assert_eq!(
            object["data"]["a"], "0",
            "round {round}: the patch was written"
        );
        assert!(
            revision > behind,
            "round {round}: the patch made a revision"
        );
        assert_eq!(
            patched.metadata.resource_version,
            Some(revision.to_string()),
            "round {round}"
        );
    }
}

async fn an_error_from_an_old_copy_is_not_returned(server: TestServer) {
    let api: Api<Secret> = Api::namespaced(server.client.clone(), "default");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "typed"},
        "type": "example.com/first",
        "data": {"a": "MA=="},
    }))
    .unwrap();
    api.create(&PostParams::default(), &secret).await.unwrap();
    let key = "/registry/core/secrets/default/typed";
    for round in 0..ROUNDS {
        // `type` is immutable through the API; behind the server's back it changes, and a
        // write of the new type must then succeed, whatever the cache still holds.
        let new_type = format!("example.com/type-{round}");
        write_behind(&server, key, |object| {
            object["type"] = json!(new_type.clone());
        })
        .await;
        let patched = api
            .patch(
                "typed",
                &PatchParams::default(),
                &Patch::Merge(json!({"type": new_type, "data": {"round": "MQ=="}})),
            )
            .await
            .unwrap_or_else(|error| panic!("round {round}: {error}"));
        assert_eq!(patched.type_.as_deref(), Some(new_type.as_str()));
    }
    // And a real change of the type is still refused.
    let error = api
        .patch(
            "typed",
            &PatchParams::default(),
            &Patch::Merge(json!({"type": "example.com/other"})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 422),
        "{error}"
    );
}

async fn a_key_deleted_behind_the_cache_is_not_found(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let store = server.server.state().store.clone();
    for round in 0..ROUNDS {
        let name = format!("gone-{round}");
        api.create(&PostParams::default(), &config_map(&name))
            .await
            .unwrap();
        // Let the cache see the object, so that it has a copy to be stale about.
        api.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "1"}})),
        )
        .await
        .unwrap();
        let key = config_map_key(&name);
        let kv = store.get(&key, None).await.unwrap().unwrap();
        store.delete(&key, kv.mod_revision).await.unwrap();
        let error = api
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"c": "1"}})),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&error, kube::Error::Api(status) if status.code == 404),
            "round {round}: {error}"
        );
        assert!(
            store.get(&key, None).await.unwrap().is_none(),
            "nothing was written"
        );
    }
}

async fn a_delete_sees_finalizers_the_cache_has_not_seen(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    for round in 0..ROUNDS {
        let name = format!("held-{round}");
        api.create(&PostParams::default(), &config_map(&name))
            .await
            .unwrap();
        let key = config_map_key(&name);
        write_behind(&server, &key, |object| {
            object["metadata"]["finalizers"] = json!(["example.com/hold"]);
        })
        .await;
        let deleted = api.delete(&name, &DeleteParams::default()).await.unwrap();
        assert!(deleted.is_left(), "round {round}: the object is kept");
        let (object, _) = stored(&server, &key).await;
        assert!(
            object["metadata"]["deletionTimestamp"].is_string(),
            "round {round}: marked for deletion: {object}"
        );
        assert_eq!(
            object["metadata"]["finalizers"],
            json!(["example.com/hold"])
        );
    }
}

const DOOHICKEYS: &str = "/apis/example.com/v1/namespaces/default/doohickeys";
const DOOHICKEY_CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/doohickeys.example.com";

/// A write through the server leaves the cache a copy already pruned and defaulted as a read
/// would, which the next update starts from as it is; once the CRD's schema changed, that copy
/// gets the new schema's read-time defaults first, as an object read from the store would
/// (otherwise the new default would look like a spec change, and bump the generation).
async fn a_copy_admitted_under_an_old_schema_gets_the_new_defaults(server: TestServer) {
    let spec_schema = json!({
        "type": "object",
        "properties": {"size": {"type": "integer", "default": 1}}
    });
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "doohickeys.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "doohickeys", "singular": "doohickey", "kind": "Doohickey"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": spec_schema}
                }}
            }]
        }
    });
    let raw = server
        .post_json(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    crate::support::eventually(30, "the CRD to be served", || async {
        let raw = server.raw("GET", DOOHICKEYS, None, Vec::new()).await;
        (raw.status == 200).then_some(())
    })
    .await;
    let body = json!({
        "apiVersion": "example.com/v1", "kind": "Doohickey",
        "metadata": {"name": "d1"}, "spec": {}
    });
    let raw = server.post_json(DOOHICKEYS, &body).await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        raw.json()["spec"],
        json!({"size": 1}),
        "defaulted on create"
    );

    // The cache holds a copy this server wrote, marked as shaped by the definition it was
    // admitted with (the case this test is about). The resource's cache may have started
    // after the create, or its feed may have given up waiting for the write's record (on a
    // busy machine, that can happen many times over): then an annotation is written until it
    // holds one.
    let key = "/registry/example.com/doohickeys/default/d1";
    let state = server.server.state();
    let prefix = "/registry/example.com/doohickeys/";
    let touches = std::sync::atomic::AtomicUsize::new(0);
    let cacher = crate::support::eventually(60, "the cache's copy of d1", || async {
        if let Some(cacher) = state.hub.running(prefix)
            && cacher.current(key).is_some_and(|c| c.shaped.is_some())
        {
            return Some(cacher);
        }
        let touch = touches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let patch = json!({"metadata": {"annotations": {"touch": touch.to_string()}}});
        let raw = server
            .raw(
                "PATCH",
                &format!("{DOOHICKEYS}/d1"),
                Some("application/merge-patch+json"),
                serde_json::to_vec(&patch).unwrap(),
            )
            .await;
        assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
        None
    })
    .await;

    let mut changed = server.get_json(DOOHICKEY_CRD).await;
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["color"] = json!({"type": "string", "default": "red"});
    let raw = server
        .raw(
            "PUT",
            DOOHICKEY_CRD,
            Some("application/json"),
            serde_json::to_vec(&changed).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    crate::support::eventually(30, "the new default on reads", || async {
        let read = server.get_json(&format!("{DOOHICKEYS}/d1")).await;
        (read["spec"]["color"] == "red").then_some(())
    })
    .await;
    let copy = cacher.current(key).expect("still cached");
    assert!(copy.shaped.is_some(), "the copy is the create's own");
    assert!(
        copy.object["spec"].get("color").is_none(),
        "{}",
        copy.object
    );

    // A JSON patch sees the object as a read shows it, and a label changes no spec.
    let patch = json!([
        {"op": "test", "path": "/spec/color", "value": "red"},
        {"op": "add", "path": "/metadata/labels", "value": {"team": "a"}}
    ]);
    let raw = server
        .raw(
            "PATCH",
            &format!("{DOOHICKEYS}/d1"),
            Some("application/json-patch+json"),
            serde_json::to_vec(&patch).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let patched = raw.json();
    assert_eq!(patched["spec"], json!({"size": 1, "color": "red"}));
    assert_eq!(patched["metadata"]["labels"]["team"], "a");
    assert_eq!(
        patched["metadata"]["generation"], 1,
        "a read-time default is no spec change: {patched}"
    );
}
