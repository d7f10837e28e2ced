use serde_json::json;

use super::*;
use crate::registry::Registry;

fn widget_crd(schema: Value) -> Value {
    json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": schema},
            }],
        }
    })
}

fn registry_with_widgets(schema: Value) -> Vec<Arc<ResourceInfo>> {
    let registry = Registry::with_builtins();
    registry.insert(crate::crd::resource_info(&widget_crd(schema)).unwrap());
    registry.all()
}

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "description": "What the widget should be.",
                     "properties": {"color": {"type": "string"}, "replicas": {"type": "integer"}}},
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}},
        },
    })
}

fn document(built: &Built, path: &str) -> Value {
    serde_json::from_slice(&built.documents[path].0).unwrap()
}

#[test]
fn the_index_links_every_group_version_by_hash() {
    let built = build(registry_with_widgets(widget_schema()));
    let index: Value = serde_json::from_slice(&built.index).unwrap();
    let paths = index["paths"].as_object().unwrap();
    for path in [
        "api/v1",
        "apis/admissionregistration.k8s.io/v1",
        "apis/apiextensions.k8s.io/v1",
        "apis/certificates.k8s.io/v1",
        "apis/coordination.k8s.io/v1",
        "apis/events.k8s.io/v1",
        "apis/example.com/v1",
        "apis/rbac.authorization.k8s.io/v1",
    ] {
        let etag = &built.documents[path].1;
        assert_eq!(
            paths[path]["serverRelativeURL"],
            format!("/openapi/v3/{path}?hash={etag}")
        );
    }
    assert_eq!(paths.len(), 8);
}

#[test]
fn every_patch_operation_has_an_object_gvk_and_field_validation() {
    let built = build(registry_with_widgets(widget_schema()));
    for (path, (bytes, _)) in &built.documents {
        let document: Value = serde_json::from_slice(bytes).unwrap();
        for (url, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if method == "parameters" {
                    continue;
                }
                let gvk = &operation["x-kubernetes-group-version-kind"];
                assert!(
                    gvk.is_object() && gvk["kind"].is_string() && gvk["group"].is_string(),
                    "{path} {url} {method}: {gvk}"
                );
                if method == "patch" {
                    let parameters = operation["parameters"].as_array().unwrap();
                    assert!(
                        parameters
                            .iter()
                            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"),
                        "{url}"
                    );
                }
            }
        }
        // Every reference resolves within the document.
        let mut refs = Vec::new();
        collect_refs(&document, &mut refs);
        for name in refs {
            assert!(
                document["components"]["schemas"].get(&name).is_some(),
                "{path}: {name} is referenced but missing"
            );
        }
    }
}

#[test]
fn custom_kinds_get_their_schema_with_type_and_object_meta() {
    let built = build(registry_with_widgets(widget_schema()));
    let document = document(&built, "apis/example.com/v1");
    let schemas = &document["components"]["schemas"];
    let widget = &schemas["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(
        widget["properties"]["spec"]["description"],
        "What the widget should be."
    );
    assert_eq!(widget["properties"]["apiVersion"]["type"], "string");
    assert_eq!(
        widget["properties"]["metadata"]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let list = &schemas["com.example.v1.WidgetList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "WidgetList"
    );
    assert!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    assert!(schemas["io.k8s.api.autoscaling.v1.Scale"].is_object());

    let paths = &document["paths"];
    let item = &paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
    assert_eq!(
        item["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    let content = item["patch"]["requestBody"]["content"].as_object().unwrap();
    assert!(content.contains_key("application/merge-patch+json"));
    assert!(!content.contains_key("application/strategic-merge-patch+json"));
    assert!(paths["/apis/example.com/v1/widgets"]["get"].is_object());
    assert!(
        paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status"]["patch"]
            .is_object()
    );
    assert_eq!(
        paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale"]["get"]["x-kubernetes-group-version-kind"]
            ["kind"],
        "Scale"
    );
}

#[test]
fn builtin_kinds_take_strategic_merge_patches_with_patch_metadata() {
    let built = build(registry_with_widgets(widget_schema()));
    let core = document(&built, "api/v1");
    let item = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    assert_eq!(
        item["patch"]["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert!(
        item["patch"]["requestBody"]["content"]
            .get("application/strategic-merge-patch+json")
            .is_some()
    );
    let schemas = &core["components"]["schemas"];
    assert_eq!(
        schemas["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
    );
    let meta = &schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"];
    assert_eq!(
        meta["ownerReferences"]["x-kubernetes-patch-merge-key"],
        "uid"
    );
    assert_eq!(
        meta["ownerReferences"]["x-kubernetes-patch-strategy"],
        "merge"
    );
    assert_eq!(meta["finalizers"]["x-kubernetes-patch-strategy"], "merge");
    assert!(
        core["paths"]["/api/v1/namespaces/{name}/finalize"]["put"].is_object(),
        "namespaces are cluster-scoped and have finalize"
    );

    let crds = document(&built, "apis/apiextensions.k8s.io/v1");
    let crd_patch =
        &crds["paths"]["/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"]["patch"];
    assert!(
        crd_patch["requestBody"]["content"]
            .get("application/strategic-merge-patch+json")
            .is_none()
    );
}

#[test]
fn the_hash_changes_with_the_schema() {
    let before = build(registry_with_widgets(widget_schema()));
    let again = build(registry_with_widgets(widget_schema()));
    let mut changed_schema = widget_schema();
    changed_schema["properties"]["spec"]["properties"]["size"] = json!({"type": "integer"});
    let after = build(registry_with_widgets(changed_schema));
    let etag = |built: &Built, path: &str| built.documents[path].1.clone();
    assert_eq!(
        etag(&before, "apis/example.com/v1"),
        etag(&again, "apis/example.com/v1")
    );
    assert_ne!(
        etag(&before, "apis/example.com/v1"),
        etag(&after, "apis/example.com/v1")
    );
    assert_eq!(etag(&before, "api/v1"), etag(&after, "api/v1"));
    assert_ne!(before.index_etag, after.index_etag);
}

#[test]
fn model_names_reverse_the_group() {
    assert_eq!(
        custom_model_name(
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "DockerCluster"
        ),
        "io.x-k8s.cluster.infrastructure.v1beta1.DockerCluster"
    );
    assert_eq!(group_words("cluster.x-k8s.io"), "ClusterXK8sIo");
    assert_eq!(group_words("coordination.k8s.io"), "Coordination");
    assert_eq!(group_words(""), "Core");
}

#[test]
fn openapi_v2_is_protobuf_for_client_go_and_json_otherwise() {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::ACCEPT,
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
            .parse()
            .unwrap(),
    );
    let response = super::v2(&headers);
    assert_eq!(
        response.headers()[http::header::CONTENT_TYPE],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let body =
        futures::executor::block_on(axum::body::to_bytes(response.into_body(), 1 << 20)).unwrap();
    // swagger (field 1) "2.0", then info (field 2).
    assert_eq!(&body[..5], b"\x0a\x032.0");
    assert_eq!(body[5], 0x12);
    assert!(body.ends_with(b"\x42\x00\x4a\x00"), "{body:?}");
    let response = super::v2(&HeaderMap::new());
    let body =
        futures::executor::block_on(axum::body::to_bytes(response.into_body(), 1 << 20)).unwrap();
    let document: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(document["swagger"], "2.0");
    assert_eq!(document["definitions"], json!({}));
}
