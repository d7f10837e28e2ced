//! Resources defined by CRDs: served on creation, versions, status subresource, generation.

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use serde_json::json;

use crate::support::{TestServer, widget_resource};

fn widget(name: &str, color: &str) -> DynamicObject {
    DynamicObject::new(name, &widget_resource("v1")).data(json!({"spec": {"color": color}}))
}

async fn crd_is_served_and_established(server: TestServer) {
    server.widget_crd().await;
    let crd = server
        .get_json("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
        .await;
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    );
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    // Both discovery flavours list the new resource.
    let discovery = Discovery::new(server.client.clone()).run().await.unwrap();
    let (resource, capabilities) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(r, _)| r.kind == "Widget")
        .expect("legacy discovery finds Widget");
    assert_eq!(resource.version, "v1", "the GA version is preferred");
    assert_eq!(capabilities.scope, Scope::Namespaced);
    let aggregated = Discovery::new(server.client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(
        aggregated
            .groups()
            .flat_map(|g| g.recommended_resources())
            .any(|(r, _)| r.kind == "Widget")
    );
}

async fn custom_resource_lifecycle(server: TestServer) {
    server.widget_crd().await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(server.client.clone(), "default", &widget_resource("v1"));
    let created = api
        .create(&PostParams::default(), &widget("w1", "red"))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    // Spec changes bump generation; status writes do not, and go through /status only.
    let patched = api
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}, "status": {"ignored": true}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    assert!(
        patched.data.get("status").is_none(),
        "status is ignored on the main resource"
    );
    let with_status = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"color": "green"}})),
        )
        .await
        .unwrap();
    assert_eq!(with_status.metadata.generation, Some(2));
    assert_eq!(with_status.data["status"]["ready"], true);
    assert_eq!(
        with_status.data["spec"]["color"], "blue",
        "spec is ignored on /status"
    );

    // The same object through the deprecated v1beta1 version, with a Warning header.
    let raw = server
        .raw(
            "GET",
            "/apis/example.com/v1beta1/namespaces/default/widgets/w1",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(raw.status, 200);
    assert_eq!(raw.json()["apiVersion"], "example.com/v1beta1");
    let warning = raw
        .headers
        .get("warning")
        .expect("deprecated versions warn");
    assert!(warning.to_str().unwrap().contains("deprecated"));

    // Strategic merge patch is for built-ins only.
    let raw = server
        .raw(
            "PATCH",
            "/apis/example.com/v1/namespaces/default/widgets/w1",
            Some("application/strategic-merge-patch+json"),
            r#"{"spec":{}}"#,
        )
        .await;
    assert_eq!(raw.status, 415);
    assert_eq!(raw.json()["reason"], "UnsupportedMediaType");

    // Cluster-wide list sees it.
    let all: Api<DynamicObject> = Api::all_with(server.client.clone(), &widget_resource("v1"));
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    api.delete("w1", &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt("w1").await.unwrap().is_none());
}

async fn deleting_the_crd_stops_serving(server: TestServer) {
    server.widget_crd().await;
    let api: Api<DynamicObject> =
        Api::namespaced_with(server.client.clone(), "default", &widget_resource("v1"));
    api.create(&PostParams::default(), &widget("w1", "red"))
        .await
        .unwrap();
    let raw = server
        .raw(
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(raw.status, 200);
    let raw = server
        .raw(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(raw.status, 404);
    // The CRD stays (with its cleanup finalizer) until its instances are gone, then goes.
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";
    crate::support::eventually(10, "the deleted CRD to go away", || async {
        let raw = server.raw("GET", crd_path, None, Vec::new()).await;
        (raw.status == 404).then_some(())
    })
    .await;
    // Re-created, the CRD starts empty: instances went with it.
    server.widget_crd().await;
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

async fn cluster_scoped_custom_resources(server: TestServer) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
                 "names": {"plural": "gadgets", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let raw = server
        .post_json(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(raw.status, 201);
    let raw = server
        .post_json(
            "/apis/example.com/v1/gadgets",
            &json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"}}),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    assert!(raw.json()["metadata"].get("namespace").is_none());
    let raw = server
        .raw(
            "GET",
            "/apis/example.com/v1/namespaces/default/gadgets",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(
        raw.status, 404,
        "a cluster-scoped resource has no namespaced path"
    );
}

async fn invalid_crds_are_refused(server: TestServer) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "wrong.example.com"},
        "spec": {"group": "example.com", "scope": "Sideways",
                 "names": {"plural": "things", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": true, "storage": false}]}
    });
    let raw = server
        .post_json(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(raw.status, 422);
    let status = raw.json();
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    for expected in ["metadata.name", "spec.scope", "spec.versions"] {
        assert!(fields.contains(&expected), "{expected} in {fields:?}");
    }
    let raw = server
        .raw("GET", "/apis/example.com/v1/things", None, Vec::new())
        .await;
    assert_eq!(raw.status, 404, "nothing was stored");
}

backend_tests!(
    crd_is_served_and_established,
    custom_resource_lifecycle,
    deleting_the_crd_stops_serving,
    cluster_scoped_custom_resources,
    invalid_crds_are_refused,
);
