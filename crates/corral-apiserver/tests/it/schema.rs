//! CRD schemas enforced on custom resources: validation with every cause in one 422,
//! defaults on write and on read, unknown fields per `fieldValidation`, and CEL rules.

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::support::{Raw, TestServer};

const GIZMOS: &str = "/apis/example.com/v1/namespaces/default/gizmos";
const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com";

fn gizmo_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["cluster"],
                "properties": {
                    "cluster": {
                        "type": "string",
                        "minLength": 1,
                        "x-kubernetes-validations": [
                            {"rule": "self == oldSelf", "message": "cluster is immutable"}
                        ]
                    },
                    "replicas": {"type": "integer", "minimum": 1, "default": 1},
                    "mode": {"type": "string", "enum": ["Fast", "Safe"]},
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}
                        }
                    },
                    "settings": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true
                    }
                },
                "x-kubernetes-validations": [
                    {"rule": "!has(self.items) || size(self.items) <= 3",
                     "message": "at most three items"}
                ]
            },
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string", "enum": ["Pending", "Ready"]}}
            }
        }
    })
}

fn gizmo_crd(schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema}
            }]
        }
    })
}

async fn create_gizmo_crd(server: &TestServer, schema: Value) {
    let raw = server
        .post_json(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &gizmo_crd(schema),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
}

fn gizmo(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec})
}

async fn put_json(server: &TestServer, path: &str, body: &Value) -> Raw {
    server
        .raw(
            "PUT",
            path,
            Some("application/json"),
            serde_json::to_vec(body).unwrap(),
        )
        .await
}

fn warnings(raw: &Raw) -> Vec<String> {
    raw.headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

async fn a_bad_object_gets_one_invalid_status_naming_every_field(server: TestServer) {
    create_gizmo_crd(&server, gizmo_schema()).await;
    let raw = server
        .post_json(
            GIZMOS,
            &gizmo(
                "g1",
                json!({
                    "replicas": "three",
                    "mode": "Slow",
                    "items": [{"name": "ok"}, {"name": "fine"}, {"name": "Not OK"}]
                }),
            ),
        )
        .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    let status = raw.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["name"], "g1");
    assert_eq!(status["details"]["kind"], "Gizmo");
    let causes: Vec<(String, String, String)> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap().to_string(),
                c["reason"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        (
            "spec.items[2].name",
            "FieldValueInvalid",
            "Invalid value: \"Not OK\": spec.items[2].name in body should match '^[a-z]+$'",
        ),
        (
            "spec.mode",
            "FieldValueNotSupported",
            "Unsupported value: \"Slow\": supported values: \"Fast\", \"Safe\"",
        ),
        (
            "spec.replicas",
            "FieldValueTypeInvalid",
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        ),
        ("spec.cluster", "FieldValueRequired", "Required value"),
        (
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string()))
        .collect();
    assert_eq!(causes, expected);
    let message = status["message"].as_str().unwrap();
    assert!(
        message
            .starts_with("Gizmo.example.com \"g1\" is invalid: [spec.items[2].name: Invalid value"),
        "{message}"
    );
    let raw = server
        .raw("GET", &format!("{GIZMOS}/g1"), None, Vec::new())
        .await;
    assert_eq!(raw.status, 404, "an invalid object is not stored");

    // The status subresource is validated too.
    let raw = server
        .post_json(GIZMOS, &gizmo("g2", json!({"cluster": "c1"})))
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    let mut with_status = raw.json();
    with_status["status"] = json!({"phase": "Exploded"});
    let raw = put_json(&server, &format!("{GIZMOS}/g2/status"), &with_status).await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["details"]["causes"][0]["field"], "status.phase");
}

async fn defaults_apply_on_create_and_on_read_of_older_objects(server: TestServer) {
    create_gizmo_crd(&server, gizmo_schema()).await;
    let before = server.get_json(GIZMOS).await["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let raw = server
        .post_json(GIZMOS, &gizmo("g1", json!({"cluster": "c1"})))
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["spec"]["replicas"], 1, "defaulted on create");
    let resource = ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Gizmo".into(),
        plural: "gizmos".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(server.client.clone(), "default", &resource);
    // A watcher under the old definition sees the event as it converted then (the event keeps
    // that conversion for the watchers of the same definition, not for later ones).
    let mut early = api
        .watch(&WatchParams::default().timeout(5), &before)
        .await
        .unwrap()
        .boxed();
    match early.try_next().await.unwrap() {
        Some(WatchEvent::Added(object)) => assert!(object.data["spec"].get("mode").is_none()),
        other => panic!("expected ADDED g1, got {other:?}"),
    }

    // A default added to the CRD later shows on objects stored before it.
    let mut crd = server.get_json(CRD).await;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["mode"]
        ["default"] = json!("Safe");
    let raw = put_json(&server, CRD, &crd).await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let read = server.get_json(&format!("{GIZMOS}/g1")).await;
    assert_eq!(read["spec"]["mode"], "Safe", "defaulted on read: {read}");
    let listed = server.get_json(GIZMOS).await;
    assert_eq!(listed["items"][0]["spec"]["mode"], "Safe");
    // Watch events replayed from before the change carry the default too.
    let mut events = api
        .watch(&WatchParams::default().timeout(5), &before)
        .await
        .unwrap()
        .boxed();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Added(object)) => assert_eq!(object.data["spec"]["mode"], "Safe"),
        other => panic!("expected ADDED g1, got {other:?}"),
    }

    // An update that changes nothing else passes, and stores the default.
    let raw = put_json(&server, &format!("{GIZMOS}/g1"), &read).await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["spec"]["mode"], "Safe");
}

async fn unknown_fields_are_pruned_refused_or_warned_about(server: TestServer) {
    create_gizmo_crd(&server, gizmo_schema()).await;
    let body = |name: &str| {
        json!({
            "apiVersion": "example.com/v1", "kind": "Gizmo",
            "metadata": {"name": name},
            "spec": {"cluster": "c1", "bogus": 1, "settings": {"free": "form"}},
            "extra": true
        })
    };

    let raw = server
        .post_json(&format!("{GIZMOS}?fieldValidation=Strict"), &body("strict"))
        .await;
    assert_eq!(raw.status, 400, "{}", String::from_utf8_lossy(&raw.body));
    let status = raw.json();
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "Gizmo in version \"v1\" cannot be handled as a Gizmo: strict decoding error: unknown field \"extra\", unknown field \"spec.bogus\""
    );

    let raw = server
        .post_json(&format!("{GIZMOS}?fieldValidation=Warn"), &body("warn"))
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        warnings(&raw),
        vec![
            "299 - \"unknown field \\\"extra\\\"\"",
            "299 - \"unknown field \\\"spec.bogus\\\"\"",
        ]
    );
    let created = raw.json();
    assert!(created.get("extra").is_none());
    assert_eq!(
        created["spec"],
        json!({"cluster": "c1", "replicas": 1, "settings": {"free": "form"}}),
        "unknown fields are pruned, preserved ones kept"
    );

    let raw = server
        .post_json(&format!("{GIZMOS}?fieldValidation=Ignore"), &body("ignore"))
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    assert!(warnings(&raw).is_empty());
    let stored = server.get_json(&format!("{GIZMOS}/ignore")).await;
    assert!(stored["spec"].get("bogus").is_none(), "{stored}");
}

async fn a_cel_immutability_rule_refuses_a_change(server: TestServer) {
    create_gizmo_crd(&server, gizmo_schema()).await;
    let raw = server
        .post_json(GIZMOS, &gizmo("g1", json!({"cluster": "c1"})))
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    let created = raw.json();

    let mut changed = created.clone();
    changed["spec"]["cluster"] = json!("c2");
    let raw = put_json(&server, &format!("{GIZMOS}/g1"), &changed).await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    let status = raw.json();
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": "spec.cluster",
                "message": "Invalid value: \"c2\": cluster is immutable"}])
    );
    assert_eq!(
        status["message"],
        "Gizmo.example.com \"g1\" is invalid: spec.cluster: Invalid value: \"c2\": cluster is immutable"
    );

    // Nothing changed: passes, and writes nothing.
    let raw = put_json(&server, &format!("{GIZMOS}/g1"), &created).await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        raw.json()["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // Other fields change freely; the list rule still holds.
    let raw = server
        .raw(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/merge-patch+json"),
            r#"{"spec":{"replicas":4}}"#,
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["spec"]["replicas"], 4);
    let raw = server
        .raw(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/merge-patch+json"),
            r#"{"spec":{"items":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"}]}}"#,
        )
        .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        raw.json()["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": "spec",
                "message": "Invalid value: at most three items"}])
    );
}

backend_tests!(
    a_bad_object_gets_one_invalid_status_naming_every_field,
    defaults_apply_on_create_and_on_read_of_older_objects,
    unknown_fields_are_pruned_refused_or_warned_about,
    a_cel_immutability_rule_refuses_a_change,
);
