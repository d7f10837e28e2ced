//! Server-side apply and managedFields, through kube-rs (`Patch::Apply`) and raw requests.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::support::{Raw, TestServer, widget_resource};

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const APPLY: &str = "application/apply-patch+yaml";

fn widgets(server: &TestServer) -> Api<DynamicObject> {
    Api::namespaced_with(server.client.clone(), "default", &widget_resource("v1"))
}

/// An apply configuration of widget `w1`.
fn widget(spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": spec,
    })
}

fn apply(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

async fn raw_apply(server: &TestServer, path_and_query: &str, body: &str) -> Raw {
    server
        .raw(
            "PATCH",
            path_and_query,
            Some(APPLY),
            body.as_bytes().to_vec(),
        )
        .await
}

/// The managedFields entry of `manager` with `operation`, if any.
fn entry<'a>(object: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

fn api_error(error: kube::Error) -> Box<kube::core::Status> {
    match error {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Creates `gadgets.example.com`, whose schema declares a list of ports merged by name, a
/// set of tags and a status subresource.
async fn gadget_crd(server: &TestServer) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "properties": {
                                "ports": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"],
                                    "items": {
                                        "type": "object",
                                        "required": ["name"],
                                        "properties": {
                                            "name": {"type": "string"},
                                            "port": {"type": "integer"},
                                        },
                                    },
                                },
                                "tags": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "set",
                                    "items": {"type": "string"},
                                },
                            },
                        },
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                }},
            }],
        },
    });
    let raw = server
        .post_json(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
}

async fn apply_creates_then_merges(server: TestServer) {
    server.widget_crd().await;
    let yaml =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  color: red\n";
    let raw = raw_apply(&server, &format!("{WIDGETS}/w1?fieldManager=mgr"), yaml).await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    let created = raw.json();
    assert_eq!(created["spec"]["color"], "red");
    let managed = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(managed.len(), 1, "{managed:?}");
    assert_eq!(managed[0]["manager"], "mgr");
    assert_eq!(managed[0]["operation"], "Apply");
    assert_eq!(managed[0]["apiVersion"], "example.com/v1");
    assert_eq!(managed[0]["fieldsType"], "FieldsV1");
    assert!(managed[0]["time"].is_string());
    assert_eq!(
        managed[0]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:color": {}}})
    );

    // A JSON body merges into the existing object: 200.
    let body = widget(json!({"color": "red", "size": 2})).to_string();
    let raw = raw_apply(&server, &format!("{WIDGETS}/w1?fieldManager=mgr"), &body).await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["spec"], json!({"color": "red", "size": 2}));

    // A dry run shows the result with the stored resourceVersion and stores nothing (what
    // `kubectl diff --server-side` relies on).
    let stored = raw.json();
    let body = widget(json!({"color": "blue", "size": 2})).to_string();
    let raw = raw_apply(
        &server,
        &format!("{WIDGETS}/w1?fieldManager=mgr&dryRun=All"),
        &body,
    )
    .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["spec"]["color"], "blue");
    assert_eq!(
        raw.json()["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    assert_eq!(
        server.get_json(&format!("{WIDGETS}/w1")).await["spec"]["color"],
        "red"
    );

    // kube-rs' Patch::Apply works the same way, creating and updating.
    let api = widgets(&server);
    let mut other = widget(json!({"color": "green"}));
    other["metadata"]["name"] = json!("w2");
    let w2 = api
        .patch("w2", &apply("mgr"), &Patch::Apply(&other))
        .await
        .unwrap();
    assert_eq!(w2.data["spec"]["color"], "green");
    assert_eq!(w2.metadata.generation, Some(1));
}

async fn reapply_is_a_no_op(server: TestServer) {
    server.widget_crd().await;
    let api = widgets(&server);
    let config = widget(json!({"color": "red", "tags": ["a"]}));
    let first = api
        .patch("w1", &apply("mgr"), &Patch::Apply(&config))
        .await
        .unwrap();
    let second = api
        .patch("w1", &apply("mgr"), &Patch::Apply(&config))
        .await
        .unwrap();
    assert_eq!(
        first.metadata.resource_version, second.metadata.resource_version,
        "an unchanged apply writes nothing"
    );
    assert_eq!(
        first.metadata.managed_fields,
        second.metadata.managed_fields
    );

    // Nothing was sent to watchers either: the first event after the first apply is the
    // next real change.
    let rv = first.metadata.resource_version.clone().unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    api.patch(
        "w1",
        &apply("mgr"),
        &Patch::Apply(widget(json!({"color": "blue", "tags": ["a"]}))),
    )
    .await
    .unwrap();
    loop {
        match events.next().await.unwrap().unwrap() {
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Modified(object) => {
                assert_eq!(object.data["spec"]["color"], "blue");
                break;
            }
            other => panic!("expected the change, got {other:?}"),
        }
    }
}

async fn dropping_a_field_from_the_configuration_removes_it(server: TestServer) {
    server.widget_crd().await;
    let api = widgets(&server);
    api.patch(
        "w1",
        &apply("mgr"),
        &Patch::Apply(widget(json!({"color": "red", "size": 2, "shape": "round"}))),
    )
    .await
    .unwrap();
    // Another applier also sets size, to the same value: they share it.
    api.patch(
        "w1",
        &apply("other"),
        &Patch::Apply(widget(json!({"size": 2}))),
    )
    .await
    .unwrap();
    let applied = api
        .patch(
            "w1",
            &apply("mgr"),
            &Patch::Apply(widget(json!({"color": "red"}))),
        )
        .await
        .unwrap();
    assert_eq!(
        applied.data["spec"],
        json!({"color": "red", "size": 2}),
        "shape is gone, size is still owned by other"
    );
    let object = server.get_json(&format!("{WIDGETS}/w1")).await;
    assert_eq!(
        entry(&object, "mgr", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {".": {}, "f:color": {}}})
    );
}

async fn conflicting_managers_need_force(server: TestServer) {
    server.widget_crd().await;
    // kubectl's client-side apply creates the object.
    let raw = server
        .post_json(
            &format!("{WIDGETS}?fieldManager=kubectl-client-side-apply"),
            &widget(json!({"color": "red", "size": 1})),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));

    let body = widget(json!({"color": "blue"})).to_string();
    let raw = raw_apply(&server, &format!("{WIDGETS}/w1?fieldManager=mgr"), &body).await;
    assert_eq!(raw.status, 409, "{}", String::from_utf8_lossy(&raw.body));
    let status = raw.json();
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["message"],
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using example.com/v1: .spec.color"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{
            "reason": "FieldManagerConflict",
            "message": "conflict with \"kubectl-client-side-apply\" using example.com/v1",
            "field": ".spec.color",
        }])
    );

    // Several conflicts are listed per manager.
    let body = widget(json!({"color": "blue", "size": 2})).to_string();
    let raw = raw_apply(&server, &format!("{WIDGETS}/w1?fieldManager=mgr"), &body).await;
    assert_eq!(raw.status, 409);
    assert_eq!(
        raw.json()["message"],
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using example.com/v1:\n- .spec.color\n- .spec.size"
    );

    // kube-rs sees the same 409; with force the applier takes the field over.
    let api = widgets(&server);
    let error = api
        .patch(
            "w1",
            &apply("mgr"),
            &Patch::Apply(widget(json!({"color": "blue"}))),
        )
        .await
        .unwrap_err();
    let status = api_error(error);
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    let forced = api
        .patch(
            "w1",
            &apply("mgr").force(),
            &Patch::Apply(widget(json!({"color": "blue"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data["spec"], json!({"color": "blue", "size": 1}));
    let object = server.get_json(&format!("{WIDGETS}/w1")).await;
    assert_eq!(
        entry(&object, "mgr", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {".": {}, "f:color": {}}})
    );
    assert_eq!(
        entry(&object, "kubectl-client-side-apply", "Update").unwrap()["fieldsV1"],
        json!({"f:spec": {".": {}, "f:size": {}}}),
        "the client-side applier lost the color"
    );
    // The client-side applier can change the color again: updates never conflict.
    let raw = server
        .raw(
            "PATCH",
            &format!("{WIDGETS}/w1?fieldManager=kubectl-client-side-apply"),
            Some("application/merge-patch+json"),
            r#"{"spec":{"color":"red"}}"#,
        )
        .await;
    assert_eq!(raw.status, 200);
    assert_eq!(
        entry(&raw.json(), "mgr", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {}}),
        "the color went back to the client-side applier"
    );
}

async fn list_map_items_merge_by_key(server: TestServer) {
    gadget_crd(&server).await;
    let path = "/apis/example.com/v1/namespaces/default/gadgets/g1";
    let gadget = |spec: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": spec})
            .to_string()
    };
    let raw = raw_apply(
        &server,
        &format!("{path}?fieldManager=a"),
        &gadget(json!({"ports": [{"name": "http", "port": 80}], "tags": ["x"]})),
    )
    .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    let raw = raw_apply(
        &server,
        &format!("{path}?fieldManager=b"),
        &gadget(json!({"ports": [{"name": "https", "port": 443}], "tags": ["y"]})),
    )
    .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let object = raw.json();
    assert_eq!(
        object["spec"],
        json!({
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
            "tags": ["x", "y"],
        })
    );
    assert_eq!(
        entry(&object, "b", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {
            "f:ports": {"k:{\"name\":\"https\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {"v:\"y\"": {}},
        }})
    );

    // Another port value for http conflicts with its owner only.
    let raw = raw_apply(
        &server,
        &format!("{path}?fieldManager=c"),
        &gadget(json!({"ports": [{"name": "http", "port": 8080}]})),
    )
    .await;
    assert_eq!(raw.status, 409);
    assert_eq!(
        raw.json()["details"]["causes"],
        json!([{
            "reason": "FieldManagerConflict",
            "message": "conflict with \"a\"",
            "field": ".spec.ports[name=\"http\"].port",
        }])
    );

    // "a" drops its port and tag; b's stay.
    let raw = raw_apply(
        &server,
        &format!("{path}?fieldManager=a"),
        &gadget(json!({})),
    )
    .await;
    assert_eq!(raw.status, 200);
    assert_eq!(
        raw.json()["spec"],
        json!({"ports": [{"name": "https", "port": 443}], "tags": ["y"]})
    );

    // Items without their key are refused.
    let raw = raw_apply(
        &server,
        &format!("{path}?fieldManager=a"),
        &gadget(json!({"ports": [{"port": 1}]})),
    )
    .await;
    assert_eq!(raw.status, 400, "{}", String::from_utf8_lossy(&raw.body));
    let message = raw.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains(".spec.ports: element 0"), "{message}");

    // So are fields the schema does not declare, as in kube-apiserver.
    let raw = raw_apply(
        &server,
        &format!("{path}?fieldManager=a"),
        &gadget(json!({"bogus": true})),
    )
    .await;
    assert_eq!(raw.status, 400, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        raw.json()["message"],
        "failed to create typed patch object (/g1; example.com/v1, Kind=Gadget): .spec.bogus: field not declared in schema"
    );
}

async fn status_apply_does_not_conflict_with_spec(server: TestServer) {
    server.widget_crd().await;
    let api = widgets(&server);
    api.patch(
        "w1",
        &apply("mgr"),
        &Patch::Apply(widget(json!({"color": "red"}))),
    )
    .await
    .unwrap();

    // A controller applies status as kube-rs controllers do: no metadata, forced.
    let status = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "status": {"ready": true, "observedGeneration": 1},
    });
    let with_status = api
        .patch_status("w1", &apply("ctl").force(), &Patch::Apply(&status))
        .await
        .unwrap();
    assert_eq!(with_status.data["status"]["ready"], true);
    assert_eq!(with_status.data["spec"]["color"], "red");
    let object = server.get_json(&format!("{WIDGETS}/w1")).await;
    let controller = entry(&object, "ctl", "Apply").unwrap();
    assert_eq!(controller["subresource"], "status");
    assert_eq!(
        controller["fieldsV1"],
        json!({"f:status": {".": {}, "f:observedGeneration": {}, "f:ready": {}}})
    );

    // The controller's next reconcile applies the same status: nothing is written.
    let again = api
        .patch_status("w1", &apply("ctl").force(), &Patch::Apply(&status))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        with_status.metadata.resource_version
    );

    // The spec manager applies again without status, without conflict and without
    // touching the status; status in a main-resource apply is ignored.
    let mut config = widget(json!({"color": "blue"}));
    config["status"] = json!({"ready": false});
    let applied = api
        .patch("w1", &apply("mgr"), &Patch::Apply(&config))
        .await
        .unwrap();
    assert_eq!(applied.data["spec"]["color"], "blue");
    assert_eq!(applied.data["status"]["ready"], true);
    let object = server.get_json(&format!("{WIDGETS}/w1")).await;
    assert_eq!(
        entry(&object, "mgr", "Apply").unwrap()["fieldsV1"],
        json!({"f:spec": {".": {}, "f:color": {}}})
    );

    // A status apply never creates the object.
    let error = api
        .patch_status("nope", &apply("ctl").force(), &Patch::Apply(&status))
        .await
        .unwrap_err();
    assert_eq!(api_error(error).code, 404);
}

/// Creates the widget CRD and widget `w1` (red, size 1) with field manager `m1`; the answer.
async fn create_red_widget_as_m1(server: &TestServer) -> Value {
    server.widget_crd().await;
    let created = widgets(server)
        .create(
            &PostParams {
                field_manager: Some("m1".into()),
                ..Default::default()
            },
            &serde_json::from_value(widget(json!({"color": "red", "size": 1}))).unwrap(),
        )
        .await
        .unwrap();
    serde_json::to_value(&created).unwrap()
}

async fn updates_record_their_manager(server: TestServer) {
    let created = create_red_widget_as_m1(&server).await;
    let api = widgets(&server);
    assert_eq!(
        entry(&created, "m1", "Update").unwrap()["fieldsV1"],
        json!({"f:spec": {".": {}, "f:color": {}, "f:size": {}}})
    );

    let patched = api
        .patch(
            "w1",
            &PatchParams {
                field_manager: Some("m2".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"color": "blue"}, "metadata": {"labels": {"app": "x"}}})),
        )
        .await
        .unwrap();
    let patched = serde_json::to_value(&patched).unwrap();
    let m2 = entry(&patched, "m2", "Update").expect("an Update entry for m2");
    assert_eq!(m2["apiVersion"], "example.com/v1");
    assert_eq!(m2["fieldsType"], "FieldsV1");
    assert!(m2["time"].is_string());
    assert_eq!(
        m2["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:color": {}},
        })
    );
    assert_eq!(
        entry(&patched, "m1", "Update").unwrap()["fieldsV1"],
        json!({"f:spec": {".": {}, "f:size": {}}}),
        "m2 took the color from m1"
    );

    // Without a fieldManager the User-Agent names the manager.
    let request = http::Request::builder()
        .method("PATCH")
        .uri(format!("{WIDGETS}/w1"))
        .header("content-type", "application/merge-patch+json")
        .header(
            "user-agent",
            "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9",
        )
        .body(br#"{"spec":{"size":5}}"#.to_vec())
        .unwrap();
    let response = server.client.send(request.map(Into::into)).await.unwrap();
    assert_eq!(response.status(), 200);
    let object = server.get_json(&format!("{WIDGETS}/w1")).await;
    assert!(entry(&object, "kubectl", "Update").is_some(), "{object}");

    // kube-rs sends no User-Agent: its writes without a fieldManager are "unknown"'s.
    let mut other = widget(json!({"color": "red"}));
    other["metadata"]["name"] = json!("w2");
    let w2 = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(other).unwrap(),
        )
        .await
        .unwrap();
    let w2 = serde_json::to_value(&w2).unwrap();
    assert!(entry(&w2, "unknown", "Update").is_some(), "{w2}");

    // A request's managedFields replace the stored ones; `[{}]` clears them.
    let raw = server
        .raw(
            "PATCH",
            &format!("{WIDGETS}/w1?fieldManager=m3"),
            Some("application/merge-patch+json"),
            r#"{"metadata":{"managedFields":[{}]}}"#,
        )
        .await;
    assert_eq!(raw.status, 200);
    assert!(raw.json()["metadata"].get("managedFields").is_none());
}

/// managedFields a client edits come back as it sent them (as JSON, whatever its spacing and
/// key order), a JSON patch can reach inside an entry's `fieldsV1`, and a string where
/// `fieldsV1` belongs is refused as ownership, never written out as JSON.
async fn clients_edit_managed_fields_as_json(server: TestServer) {
    create_red_widget_as_m1(&server).await;
    let path = format!("{WIDGETS}/w1?fieldManager=m3");
    let edited = r#"{"metadata": {"managedFields": [{"manager": "edited",
        "operation": "Update", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1",
        "fieldsV1": { "f:spec" : { "f:size": {}, "f:color" : {} , ".": {} } } }]}}"#;
    let raw = server
        .raw("PATCH", &path, Some("application/merge-patch+json"), edited)
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let fields = json!({"f:spec": {".": {}, "f:color": {}, "f:size": {}}});
    assert_eq!(
        entry(&raw.json(), "edited", "Update").unwrap()["fieldsV1"],
        fields
    );
    let read = server.get_json(&format!("{WIDGETS}/w1")).await;
    assert_eq!(
        read["metadata"]["managedFields"].as_array().unwrap().len(),
        1,
        "{read}"
    );
    assert_eq!(
        entry(&read, "edited", "Update").unwrap()["fieldsV1"],
        fields
    );

    let patch = r#"[
        {"op": "test", "path": "/metadata/managedFields/0/fieldsV1/f:spec/f:color", "value": {}},
        {"op": "remove", "path": "/metadata/managedFields/0/fieldsV1/f:spec/f:size"}
    ]"#;
    let raw = server
        .raw("PATCH", &path, Some("application/json-patch+json"), patch)
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let read = server.get_json(&format!("{WIDGETS}/w1")).await;
    assert_eq!(
        entry(&read, "edited", "Update").unwrap()["fieldsV1"],
        json!({"f:spec": {".": {}, "f:color": {}}}),
        "{read}"
    );

    // A string that looks like the server's own form of `fieldsV1` is no ownership.
    let forged = json!({"metadata": {"managedFields": [{"manager": "x", "operation": "Update",
        "apiVersion": "example.com/v1", "fieldsType": "FieldsV1",
        "fieldsV1": "\u{1}fieldsV1:0:{\"f:spec\":{}}"}]}});
    let raw = server
        .raw(
            "PATCH",
            &path,
            Some("application/merge-patch+json"),
            forged.to_string(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let answer = raw.json();
    assert!(entry(&answer, "x", "Update").is_none(), "{answer}");
    let read = server.get_json(&format!("{WIDGETS}/w1")).await;
    assert!(entry(&read, "x", "Update").is_none(), "{read}");
    assert!(entry(&read, "edited", "Update").is_some(), "{read}");
}

async fn apply_requires_a_field_manager(server: TestServer) {
    server.widget_crd().await;
    let body = widget(json!({"color": "red"})).to_string();
    let raw = raw_apply(&server, &format!("{WIDGETS}/w1"), &body).await;
    assert_eq!(raw.status, 422);
    let status = raw.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(status["details"]["group"], "meta.k8s.io");
    assert_eq!(status["details"]["kind"], "PatchOptions");
    assert_eq!(status["details"]["causes"][0]["field"], "fieldManager");

    // force is for apply patches only.
    let raw = server
        .raw(
            "PATCH",
            &format!("{WIDGETS}/w1?force=true"),
            Some("application/merge-patch+json"),
            "{}",
        )
        .await;
    assert_eq!(raw.status, 422);
    assert_eq!(
        raw.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );

    // The configuration must name the type of the URL and carry no managedFields.
    let raw = raw_apply(
        &server,
        &format!("{WIDGETS}/w1?fieldManager=mgr"),
        r#"{"metadata":{"name":"w1"}}"#,
    )
    .await;
    assert_eq!(raw.status, 400);
    assert_eq!(raw.json()["message"], "invalid object type: /, Kind=");
    let mut config = widget(json!({}));
    config["metadata"]["managedFields"] = json!([]);
    let raw = raw_apply(
        &server,
        &format!("{WIDGETS}/w1?fieldManager=mgr"),
        &config.to_string(),
    )
    .await;
    assert_eq!(raw.status, 400);
    assert_eq!(raw.json()["message"], "metadata.managedFields must be nil");
    let raw = raw_apply(
        &server,
        &format!("{WIDGETS}/w1?fieldManager=mgr"),
        r#"{"apiVersion":"example.com/v1","kind":"Widget","spec":{}}"#,
    )
    .await;
    assert_eq!(raw.status, 400);
    assert_eq!(
        raw.json()["message"],
        "the name of the object (w1 based on URL) was undeterminable: name must be provided"
    );
}

async fn built_in_kinds_merge_granular_maps(server: TestServer) {
    let ns = server.namespace("apply-builtin").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    let config_map = |labels: Value, data: Value| {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c1", "labels": labels},
            "data": data,
        })
    };
    api.patch(
        "c1",
        &apply("m1"),
        &Patch::Apply(config_map(json!({"app": "x"}), json!({"a": "1"}))),
    )
    .await
    .unwrap();
    api.patch(
        "c1",
        &apply("m2"),
        &Patch::Apply(config_map(json!({"tier": "web"}), json!({"b": "2"}))),
    )
    .await
    .unwrap();
    let applied = api
        .patch(
            "c1",
            &apply("m1"),
            &Patch::Apply(config_map(json!({}), json!({"a": "1"}))),
        )
        .await
        .unwrap();
    let data = applied.data.unwrap();
    assert_eq!(data.len(), 2, "{data:?}");
    let labels = applied.metadata.labels.unwrap();
    assert_eq!(
        labels.into_iter().collect::<Vec<_>>(),
        [("tier".to_string(), "web".to_string())],
        "m1's label is gone, m2's stays"
    );
}

backend_tests!(
    apply_creates_then_merges,
    reapply_is_a_no_op,
    dropping_a_field_from_the_configuration_removes_it,
    conflicting_managers_need_force,
    list_map_items_merge_by_key,
    status_apply_does_not_conflict_with_spec,
    updates_record_their_manager,
    clients_edit_managed_fields_as_json,
    apply_requires_a_field_manager,
    built_in_kinds_merge_granular_maps,
);
