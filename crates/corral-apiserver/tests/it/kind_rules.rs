//! A kind's own admission rules (`ServerConfig::admission`), run by the server on every write
//! of the kind: defaulting before schema validation, validation of creates and updates after
//! it, one 422 of field errors, refused writes changing nothing, status writes left alone.

use corral_admission::{ErrorList, FieldError, KindRules, RuleSet};
use corral_apiserver::ServerConfig;
use corral_store::testing;
use serde_json::{Value, json};

use crate::machinery::{GIZMOS, create_gizmo, create_gizmo_crd};
use crate::support::{self, TestServer};

/// Gizmos are red unless told otherwise, come in red or blue, and keep their size.
struct GizmoRules;

impl KindRules for GizmoRules {
    fn default(&self, object: &mut Value, _old: Option<&Value>) -> Result<(), String> {
        if object.pointer("/spec/size") == Some(&json!("undefaultable")) {
            return Err("the size cannot be defaulted".into());
        }
        let spec = object["spec"]
            .as_object_mut()
            .ok_or("spec is not an object")?;
        spec.entry("color").or_insert(json!("red"));
        Ok(())
    }

    fn validate_create(&self, object: &Value) -> ErrorList {
        let color = &object["spec"]["color"];
        let mut errors = ErrorList::new();
        if color != "red" && color != "blue" {
            errors.push(FieldError::not_supported(
                "spec.color",
                color.clone(),
                &["red".into(), "blue".into()],
            ));
        }
        errors
    }

    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        let mut errors = self.validate_create(new);
        if old["spec"]["size"] != new["spec"]["size"] {
            errors.push(FieldError::forbidden("spec.size", "field is immutable"));
        }
        errors
    }
}

async fn server() -> TestServer {
    let config = ServerConfig {
        admission: RuleSet::default().with("example.com", "Gizmo", GizmoRules),
        ..ServerConfig::default()
    };
    let server = support::start(testing::memory().await, config).await;
    create_gizmo_crd(&server).await;
    server
}

async fn merge_patch(server: &TestServer, path: &str, patch: Value) -> crate::support::Raw {
    server
        .raw(
            "PATCH",
            path,
            Some("application/merge-patch+json"),
            serde_json::to_vec(&patch).unwrap(),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaulting_runs_before_validation_and_is_stored() {
    let server = server().await;
    let created = create_gizmo(&server, "g1", json!({"size": "s"})).await;
    assert_eq!(created["spec"]["color"], "red");
    let stored = server.get_json(&format!("{GIZMOS}/g1")).await;
    assert_eq!(stored["spec"]["color"], "red");

    // A defaulting that fails refuses the write as upstream's webhook would.
    let raw = server
        .post_json(
            GIZMOS,
            &json!({"apiVersion": "example.com/v1", "kind": "Gizmo",
                "metadata": {"name": "g2"}, "spec": {"size": "undefaultable"}}),
        )
        .await;
    assert_eq!(raw.status, 403, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        raw.json()["message"],
        "admission webhook \"default.gizmo.example.com\" denied the request: the size cannot be defaulted"
    );
    let raw = server
        .raw("GET", &format!("{GIZMOS}/g2"), None, Vec::new())
        .await;
    assert_eq!(raw.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_and_updates_are_validated_with_field_errors() {
    let server = server().await;
    let raw = server
        .post_json(
            GIZMOS,
            &json!({"apiVersion": "example.com/v1", "kind": "Gizmo",
                "metadata": {"name": "g1"}, "spec": {"color": "green"}}),
        )
        .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    let status = raw.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "Gizmo.example.com \"g1\" is invalid: spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\""
    );
    assert_eq!(status["details"]["kind"], "Gizmo");
    assert_eq!(status["details"]["group"], "example.com");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueNotSupported", "field": "spec.color",
            "message": "Unsupported value: \"green\": supported values: \"red\", \"blue\""}])
    );

    create_gizmo(&server, "g1", json!({"color": "blue", "size": "s"})).await;
    let before = server.get_json(&format!("{GIZMOS}/g1")).await;
    let raw = merge_patch(
        &server,
        &format!("{GIZMOS}/g1"),
        json!({"spec": {"size": "xl", "color": "green"}}),
    )
    .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    let causes = raw.json()["details"]["causes"].clone();
    assert_eq!(
        causes,
        json!([
            {"reason": "FieldValueNotSupported", "field": "spec.color",
                "message": "Unsupported value: \"green\": supported values: \"red\", \"blue\""},
            {"reason": "FieldValueForbidden", "field": "spec.size",
                "message": "Forbidden: field is immutable"},
        ])
    );
    let after = server.get_json(&format!("{GIZMOS}/g1")).await;
    assert_eq!(before, after, "a refused update changes nothing");

    // A status write is not the kind's webhook's business, nor is a scale within range.
    let raw = merge_patch(
        &server,
        &format!("{GIZMOS}/g1/status"),
        json!({"status": {"replicas": 1}}),
    )
    .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let raw = merge_patch(
        &server,
        &format!("{GIZMOS}/g1"),
        json!({"spec": {"color": "red"}}),
    )
    .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
}
