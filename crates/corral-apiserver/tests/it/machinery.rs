//! API machinery kubectl and kube-rs rely on beyond the verbs: OpenAPI v3 (what kubectl
//! checks before apply, create and explain), Table responses (`kubectl get`, `-o wide`,
//! `-w`), `PartialObjectMetadata` (kube-rs metadata-only APIs) and the scale subresource.

use std::time::Duration;

use futures::StreamExt;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, ResourceExt};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::support::{Raw, TestServer, eventually};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
pub(crate) const GIZMOS: &str = "/apis/example.com/v1/namespaces/default/gizmos";

/// A request with headers of the test's choosing.
pub(crate) async fn request(
    server: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Raw {
    let mut builder = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = server
        .client
        .send(builder.body(body).unwrap().map(Into::into))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Raw {
        status,
        headers,
        body: body.to_vec(),
    }
}

pub(crate) async fn get_with_accept(server: &TestServer, path: &str, accept: &str) -> Raw {
    let raw = request(server, "GET", path, &[("Accept", accept)], Vec::new()).await;
    assert_eq!(
        raw.status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&raw.body)
    );
    raw
}

fn content_type(raw: &Raw) -> &str {
    raw.headers
        .get(http::header::CONTENT_TYPE)
        .unwrap()
        .to_str()
        .unwrap()
}

fn gizmo_crd(description: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "shortNames": ["gz"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas",
                              "statusReplicasPath": ".status.replicas",
                              "labelSelectorPath": ".status.selector"},
                },
                "additionalPrinterColumns": [
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Size", "type": "string", "priority": 1, "jsonPath": ".spec.size"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "description": description, "properties": {
                            "color": {"type": "string", "description": "The colour."},
                            "replicas": {"type": "integer"},
                            "size": {"type": "string"},
                        }},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                }},
            }],
        }
    })
}

/// Creates the `gizmos.example.com` CRD (printer columns, status and scale) and waits until
/// it is served.
pub(crate) async fn create_gizmo_crd(server: &TestServer) {
    let raw = server
        .post_json(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &gizmo_crd("What the gizmo should be."),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    eventually(10, "the gizmo CRD to be served", || async {
        let raw = server.raw("GET", GIZMOS, None, Vec::new()).await;
        (raw.status == 200).then_some(())
    })
    .await;
}

pub(crate) async fn create_gizmo(server: &TestServer, name: &str, spec: Value) -> Value {
    let raw = server
        .post_json(
            GIZMOS,
            &json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", String::from_utf8_lossy(&raw.body));
    raw.json()
}

async fn patch_status(server: &TestServer, name: &str, status: Value) {
    let raw = server
        .raw(
            "PATCH",
            &format!("{GIZMOS}/{name}/status"),
            Some("application/merge-patch+json"),
            serde_json::to_vec(&json!({"status": status})).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
}

fn gizmo_resource() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Gizmo".into(),
        plural: "gizmos".into(),
    }
}

// ---------------------------------------------------------------------------------------
// OpenAPI v3
// ---------------------------------------------------------------------------------------

/// The index's link to a group-version document.
async fn document_url(server: &TestServer, path: &str) -> String {
    let index = server.get_json("/openapi/v3").await;
    index["paths"][path]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not in the index: {index}"))
        .to_string()
}

async fn openapi_index_and_documents(server: TestServer) {
    create_gizmo_crd(&server).await;
    let index = server.get_json("/openapi/v3").await;
    for path in [
        "api/v1",
        "apis/example.com/v1",
        "apis/apiextensions.k8s.io/v1",
    ] {
        let url = index["paths"][path]["serverRelativeURL"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("/openapi/v3/{path}?hash=")),
            "{url}"
        );
    }

    let url = document_url(&server, "apis/example.com/v1").await;
    let raw = get_with_accept(&server, &url, "application/json").await;
    let etag = raw.headers["etag"].to_str().unwrap().to_string();
    assert_eq!(etag, format!("\"{}\"", url.split("hash=").nth(1).unwrap()));
    assert_eq!(raw.headers["cache-control"], "public, immutable");
    let document = raw.json();

    // What kubectl checks before apply and create: the PATCH operation of the kind carries
    // its GVK as an object and a fieldValidation query parameter.
    let item = &document["paths"]["/apis/example.com/v1/namespaces/{namespace}/gizmos/{name}"];
    let patch = &item["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Gizmo"})
    );
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );
    for (url, path_item) in document["paths"].as_object().unwrap() {
        for method in ["get", "put", "post", "delete", "patch"] {
            if let Some(operation) = path_item.get(method) {
                assert!(
                    operation["x-kubernetes-group-version-kind"].is_object(),
                    "{method} {url}"
                );
            }
        }
        if let Some(patch) = path_item.get("patch") {
            assert!(
                patch["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p["name"] == "fieldValidation"),
                "{url}"
            );
        }
    }
    for path in [
        "/apis/example.com/v1/gizmos",
        "/apis/example.com/v1/namespaces/{namespace}/gizmos",
        "/apis/example.com/v1/namespaces/{namespace}/gizmos/{name}/status",
        "/apis/example.com/v1/namespaces/{namespace}/gizmos/{name}/scale",
    ] {
        assert!(document["paths"][path].is_object(), "{path}");
    }

    // What kubectl explain reads: the schema whose GVK list contains the kind.
    let schemas = &document["components"]["schemas"];
    let gizmo = &schemas["com.example.v1.Gizmo"];
    assert_eq!(
        gizmo["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Gizmo"}])
    );
    assert_eq!(
        gizmo["properties"]["spec"]["description"],
        "What the gizmo should be."
    );
    assert!(
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["name"]
            .is_object()
    );

    // Built-in kinds: strategic merge metadata for kubectl's client-side apply.
    let url = document_url(&server, "api/v1").await;
    let core = get_with_accept(&server, &url, "application/json")
        .await
        .json();
    let configmap = &core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
    assert!(configmap["properties"]["data"]["description"].is_string());
    let meta = &core["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
    assert_eq!(
        meta["properties"]["ownerReferences"]["x-kubernetes-patch-merge-key"],
        "uid"
    );
    assert_eq!(
        meta["properties"]["finalizers"]["x-kubernetes-patch-strategy"],
        "merge"
    );

    // Conditional requests and stale hashes.
    let unchanged = request(
        &server,
        "GET",
        &url,
        &[("If-None-Match", raw_etag(&server, &url).await.as_str())],
        Vec::new(),
    )
    .await;
    assert_eq!(unchanged.status, 304);
    let stale = request(
        &server,
        "GET",
        "/openapi/v3/api/v1?hash=0000",
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(stale.status, 301);
    assert_eq!(stale.headers["location"].to_str().unwrap(), url);

    let missing = server
        .raw(
            "GET",
            "/openapi/v3/apis/nothing.example.com/v1",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(missing.status, 404);
    let v2 = server.raw("GET", "/openapi/v2", None, Vec::new()).await;
    // A Swagger 2.0 document without definitions, for kubectl's validation of Lists.
    assert_eq!(v2.status, 200);
    assert_eq!(v2.json()["swagger"], "2.0");
}

async fn raw_etag(server: &TestServer, url: &str) -> String {
    let raw = server.raw("GET", url, None, Vec::new()).await;
    raw.headers["etag"].to_str().unwrap().to_string()
}

async fn openapi_follows_crd_changes(server: TestServer) {
    create_gizmo_crd(&server).await;
    let before = document_url(&server, "apis/example.com/v1").await;
    let core_before = document_url(&server, "api/v1").await;

    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com";
    let patch = json!({"spec": {"versions": gizmo_crd("Changed.")["spec"]["versions"]}});
    let raw = server
        .raw(
            "PATCH",
            crd_path,
            Some("application/merge-patch+json"),
            serde_json::to_vec(&patch).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let after = eventually(10, "the document to change", || async {
        let url = document_url(&server, "apis/example.com/v1").await;
        (url != before).then_some(url)
    })
    .await;
    let document = server.get_json(&after).await;
    assert_eq!(
        document["components"]["schemas"]["com.example.v1.Gizmo"]["properties"]["spec"]["description"],
        "Changed."
    );
    assert_eq!(
        document_url(&server, "api/v1").await,
        core_before,
        "other documents keep their hash"
    );

    let raw = server.raw("DELETE", crd_path, None, Vec::new()).await;
    assert_eq!(raw.status, 200);
    eventually(10, "the group to leave the index", || async {
        let index = server.get_json("/openapi/v3").await;
        index["paths"]
            .get("apis/example.com/v1")
            .is_none()
            .then_some(())
    })
    .await;
}

// ---------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------

fn column_names(table: &Value) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

async fn table_lists_printer_columns(server: TestServer) {
    create_gizmo_crd(&server).await;
    create_gizmo(
        &server,
        "g1",
        json!({"color": "red", "replicas": 2, "size": "large"}),
    )
    .await;
    create_gizmo(&server, "g2", json!({"color": "blue"})).await;
    patch_status(
        &server,
        "g1",
        json!({"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}),
    )
    .await;

    let raw = get_with_accept(&server, &format!("{GIZMOS}?limit=500"), TABLE).await;
    assert_eq!(
        content_type(&raw),
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    );
    let table = raw.json();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert!(table["metadata"]["resourceVersion"].is_string());
    assert_eq!(
        column_names(&table),
        ["Name", "Color", "Replicas", "Ready", "Size", "Age"]
    );
    let columns = table["columnDefinitions"].as_array().unwrap();
    assert_eq!(columns[0]["format"], "name");
    assert_eq!(columns[3]["priority"], 0);
    assert_eq!(columns[4]["priority"], 1, "Size is shown with -o wide only");
    assert_eq!(columns[5]["type"], "date");

    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let cells = rows[0]["cells"].as_array().unwrap();
    assert_eq!(
        cells[..5],
        [
            json!("g1"),
            json!("red"),
            json!(2),
            json!("True"),
            json!("large")
        ]
    );
    assert!(
        cells[5].as_str().unwrap().ends_with('s'),
        "a fresh age: {}",
        cells[5]
    );
    assert_eq!(
        rows[1]["cells"].as_array().unwrap()[..5],
        [
            json!("g2"),
            json!("blue"),
            Value::Null,
            Value::Null,
            Value::Null
        ]
    );
    let object = &rows[0]["object"];
    assert_eq!(object["kind"], "PartialObjectMetadata");
    assert_eq!(object["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(object["metadata"]["name"], "g1");
    assert_eq!(object["metadata"]["namespace"], "default");
    assert!(object.get("spec").is_none());

    // includeObject, and paging.
    let full = get_with_accept(&server, &format!("{GIZMOS}?includeObject=Object"), TABLE)
        .await
        .json();
    assert_eq!(full["rows"][0]["object"]["spec"]["color"], "red");
    let bare = get_with_accept(&server, &format!("{GIZMOS}?includeObject=None"), TABLE)
        .await
        .json();
    assert!(bare["rows"][0].get("object").is_none());
    let page = get_with_accept(&server, &format!("{GIZMOS}?limit=1"), TABLE)
        .await
        .json();
    assert_eq!(page["rows"].as_array().unwrap().len(), 1);
    assert!(page["metadata"]["continue"].is_string());
    let invalid = request(
        &server,
        "GET",
        &format!("{GIZMOS}?includeObject=Everything"),
        &[("Accept", TABLE)],
        Vec::new(),
    )
    .await;
    assert_eq!(invalid.status, 400);

    // Without the Table Accept, the list is as it always was.
    let plain = get_with_accept(&server, GIZMOS, "application/json")
        .await
        .json();
    assert_eq!(plain["kind"], "GizmoList");
}

async fn table_of_one_object_and_of_builtins(server: TestServer) {
    create_gizmo_crd(&server).await;
    let created = create_gizmo(&server, "g1", json!({"color": "red"})).await;
    let table = get_with_accept(&server, &format!("{GIZMOS}/g1"), TABLE)
        .await
        .json();
    assert_eq!(table["kind"], "Table");
    assert_eq!(
        table["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(table["rows"].as_array().unwrap().len(), 1);
    assert_eq!(table["rows"][0]["cells"][0], "g1");

    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let config_map: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c1"}, "data": {"a": "1", "b": "2"}}))
            .unwrap();
    api.create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let table = get_with_accept(&server, "/api/v1/namespaces/default/configmaps", TABLE)
        .await
        .json();
    assert_eq!(column_names(&table), ["Name", "Data", "Age"]);
    assert_eq!(table["rows"][0]["cells"][0], "c1");
    assert_eq!(table["rows"][0]["cells"][1], 2);

    let table = get_with_accept(&server, "/api/v1/namespaces", TABLE)
        .await
        .json();
    assert_eq!(column_names(&table), ["Name", "Status", "Age"]);
    let default = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["cells"][0] == "default")
        .unwrap();
    assert_eq!(default["cells"][1], "Active");

    let table = get_with_accept(
        &server,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        TABLE,
    )
    .await
    .json();
    assert_eq!(column_names(&table), ["Name", "Created At"]);
    assert_eq!(table["rows"][0]["cells"][0], "gizmos.example.com");

    // kubectl get events shows the wide columns with priority.
    let table = get_with_accept(&server, "/api/v1/namespaces/default/events", TABLE)
        .await
        .json();
    let priorities: Vec<_> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["priority"].as_i64().unwrap(),
            )
        })
        .filter(|(_, priority)| *priority == 0)
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        priorities,
        ["Last Seen", "Type", "Reason", "Object", "Message"]
    );
}

/// Reads watch events from a streaming response until `count` have arrived.
async fn watch_lines(server: &TestServer, path: &str, accept: &str, count: usize) -> Vec<Value> {
    let request = http::Request::builder()
        .uri(path)
        .header("Accept", accept)
        .body(Vec::new())
        .unwrap();
    let response = server.client.send(request.map(Into::into)).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while events.len() < count {
        let frame = tokio::time::timeout_at(deadline, body.frame())
            .await
            .expect("the watch events arrive in time")
            .expect("the watch is still open")
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buffer.extend_from_slice(&data);
        }
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            events.push(serde_json::from_slice(&line).unwrap());
        }
    }
    events
}

async fn table_watch_sends_rows(server: TestServer) {
    create_gizmo_crd(&server).await;
    create_gizmo(&server, "g1", json!({"color": "red"})).await;
    create_gizmo(&server, "g2", json!({"color": "blue"})).await;
    let events = watch_lines(&server, &format!("{GIZMOS}?watch=true"), TABLE, 2).await;
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event["type"], "ADDED");
        let table = &event["object"];
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["rows"].as_array().unwrap().len(), 1);
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert!(table["metadata"]["resourceVersion"].is_string());
        // Like kube-apiserver: the column definitions come with the first event only.
        assert_eq!(
            table.get("columnDefinitions").is_some(),
            index == 0,
            "{table}"
        );
    }
    let names: Vec<_> = events
        .iter()
        .map(|e| e["object"]["rows"][0]["cells"][0].clone())
        .collect();
    assert_eq!(names, [json!("g1"), json!("g2")]);
    assert_eq!(events[0]["object"]["rows"][0]["cells"][1], "red");
}

// ---------------------------------------------------------------------------------------
// PartialObjectMetadata
// ---------------------------------------------------------------------------------------

async fn partial_object_metadata_lists_gets_and_watches(server: TestServer) {
    create_gizmo_crd(&server).await;
    create_gizmo(&server, "g1", json!({"color": "red"})).await;
    create_gizmo(&server, "g2", json!({"color": "blue"})).await;

    let raw = get_with_accept(
        &server,
        GIZMOS,
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )
    .await;
    assert!(content_type(&raw).contains("as=PartialObjectMetadataList"));
    let list = raw.json();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(list["metadata"]["resourceVersion"].is_string());
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][0]["metadata"]["name"], "g1");
    assert!(list["items"][0].get("spec").is_none());

    // kube-rs: metadata-only get, list and watcher.
    let api: Api<DynamicObject> =
        Api::namespaced_with(server.client.clone(), "default", &gizmo_resource());
    let listed = api.list_metadata(&ListParams::default()).await.unwrap();
    let names: Vec<_> = listed.items.iter().map(|m| m.name_any()).collect();
    assert_eq!(names, ["g1", "g2"]);
    let one = api.get_metadata("g2").await.unwrap();
    assert_eq!(one.metadata.namespace.as_deref(), Some("default"));
    assert!(one.metadata.uid.is_some());

    let config_maps: Api<PartialObjectMeta<ConfigMap>> =
        Api::namespaced(server.client.clone(), "default");
    let plain: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let config_map: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c1"}, "data": {"a": "1"}})).unwrap();
    plain
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let mut stream = watcher(config_maps, watcher::Config::default()).boxed();
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let event = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the metadata watcher sees the config map")
            .unwrap()
            .unwrap();
        match event {
            watcher::Event::InitApply(meta) | watcher::Event::Apply(meta) => {
                seen.push(meta.name_any())
            }
            watcher::Event::InitDone if !seen.is_empty() => break,
            _ => {}
        }
    }
    assert_eq!(seen, ["c1"]);
    // A change arrives through the metadata watch as well.
    plain
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"changed": "yes"}}})),
        )
        .await
        .unwrap();
    let changed = tokio::time::timeout_at(deadline, async {
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(meta)) = event
                && meta.labels().contains_key("changed")
            {
                return meta;
            }
        }
        panic!("the watch ended");
    })
    .await
    .expect("the change arrives");
    assert_eq!(changed.name_any(), "c1");
}

// ---------------------------------------------------------------------------------------
// Scale
// ---------------------------------------------------------------------------------------

async fn scale_get_and_patch(server: TestServer) {
    create_gizmo_crd(&server).await;
    create_gizmo(&server, "g1", json!({"color": "red", "replicas": 1})).await;
    patch_status(&server, "g1", json!({"replicas": 1, "selector": "app=g1"})).await;

    let api: Api<DynamicObject> =
        Api::namespaced_with(server.client.clone(), "default", &gizmo_resource());
    let scale = api.get_scale("g1").await.unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some("g1"));
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(1));
    let status = scale.status.as_ref().unwrap();
    assert_eq!(status.replicas, 1);
    assert_eq!(status.selector.as_deref(), Some("app=g1"));

    // kubectl scale: a merge patch of the Scale.
    let scaled = api
        .patch_scale(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.as_ref().unwrap().replicas, Some(3));
    assert_eq!(scaled.status.as_ref().unwrap().replicas, 1);
    let object = api.get("g1").await.unwrap();
    assert_eq!(object.data["spec"]["replicas"], 3);
    assert_eq!(object.data["spec"]["color"], "red", "nothing else changes");
    assert_eq!(object.data["status"]["replicas"], 1);
    assert_eq!(object.metadata.generation, Some(2));
    assert_eq!(
        scaled.metadata.resource_version,
        object.metadata.resource_version
    );

    // The same scale again writes nothing.
    let again = api
        .patch_scale(
            "g1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        object.metadata.resource_version
    );

    // Discovery announces the subresource, both ways.
    let resources = server.get_json("/apis/example.com/v1").await;
    let entry = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "gizmos/scale")
        .expect("gizmos/scale is listed");
    assert_eq!(entry["group"], "autoscaling");
    assert_eq!(entry["version"], "v1");
    assert_eq!(entry["kind"], "Scale");
    let aggregated = get_with_accept(
        &server,
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    )
    .await
    .json();
    let group = aggregated["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "example.com")
        .unwrap();
    let subresources = &group["versions"][0]["resources"][0]["subresources"];
    assert!(
        subresources
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["subresource"] == "scale" && s["responseKind"]["kind"] == "Scale"),
        "{subresources}"
    );
}

async fn scale_preconditions_and_validation(server: TestServer) {
    create_gizmo_crd(&server).await;
    let created = create_gizmo(&server, "g1", json!({"replicas": 1})).await;
    let stale_rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let scale_path = format!("{GIZMOS}/g1/scale");
    let put = |rv: &str, replicas: i64| {
        serde_json::to_vec(&json!({
            "apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "g1", "namespace": "default", "resourceVersion": rv},
            "spec": {"replicas": replicas},
        }))
        .unwrap()
    };

    // PUT with the current resourceVersion succeeds and moves it on.
    let raw = server
        .raw(
            "PUT",
            &scale_path,
            Some("application/json"),
            put(&stale_rv, 2),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", String::from_utf8_lossy(&raw.body));
    let scale = raw.json();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 2);
    assert_ne!(scale["metadata"]["resourceVersion"], stale_rv.as_str());

    // The old resourceVersion is now a failed precondition, for PUT and PATCH alike.
    let raw = server
        .raw(
            "PUT",
            &scale_path,
            Some("application/json"),
            put(&stale_rv, 5),
        )
        .await;
    assert_eq!(raw.status, 409, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(raw.json()["reason"], "Conflict");
    let raw = server
        .raw(
            "PATCH",
            &scale_path,
            Some("application/merge-patch+json"),
            serde_json::to_vec(
                &json!({"metadata": {"resourceVersion": stale_rv}, "spec": {"replicas": 5}}),
            )
            .unwrap(),
        )
        .await;
    assert_eq!(raw.status, 409);
    let object = server.get_json(&format!("{GIZMOS}/g1")).await;
    assert_eq!(
        object["spec"]["replicas"], 2,
        "failed writes change nothing"
    );

    // Invalid replicas.
    let raw = server
        .raw(
            "PATCH",
            &scale_path,
            Some("application/merge-patch+json"),
            serde_json::to_vec(&json!({"spec": {"replicas": -1}})).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    let status = raw.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "Gizmo.example.com \"g1\" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": ".spec.replicas",
            "message": "Invalid value: -1: should be a non-negative integer"}])
    );

    // The object itself is refused the same at its specReplicasPath, on update and on create,
    // as kube-apiserver does for every CRD with a scale subresource.
    let raw = server
        .raw(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/merge-patch+json"),
            serde_json::to_vec(&json!({"spec": {"replicas": -3}})).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        raw.json()["message"],
        "Gizmo.example.com \"g1\" is invalid: .spec.replicas: Invalid value: -3: should be a non-negative integer"
    );
    let raw = server
        .post_json(
            GIZMOS,
            &json!({"apiVersion": "example.com/v1", "kind": "Gizmo",
                "metadata": {"name": "negative"}, "spec": {"replicas": -1}}),
        )
        .await;
    assert_eq!(raw.status, 422, "{}", String::from_utf8_lossy(&raw.body));
    assert_eq!(
        raw.json()["details"]["causes"][0]["field"],
        ".spec.replicas"
    );
    let raw = server
        .raw("GET", &format!("{GIZMOS}/negative"), None, Vec::new())
        .await;
    assert_eq!(raw.status, 404, "a refused create stores nothing");
    let object = server.get_json(&format!("{GIZMOS}/g1")).await;
    assert_eq!(
        object["spec"]["replicas"], 2,
        "refused writes change nothing"
    );

    // dryRun answers with the Scale that would be, and stores nothing.
    let raw = server
        .raw(
            "PATCH",
            &format!("{scale_path}?dryRun=All"),
            Some("application/merge-patch+json"),
            serde_json::to_vec(&json!({"spec": {"replicas": 7}})).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200);
    assert_eq!(raw.json()["spec"]["replicas"], 7);
    let object = server.get_json(&format!("{GIZMOS}/g1")).await;
    assert_eq!(object["spec"]["replicas"], 2);

    // Strategic merge patches are for built-in kinds; unknown objects and resources 404.
    let raw = server
        .raw(
            "PATCH",
            &scale_path,
            Some("application/strategic-merge-patch+json"),
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(raw.status, 415);
    let raw = server
        .raw("GET", &format!("{GIZMOS}/missing/scale"), None, Vec::new())
        .await;
    assert_eq!(raw.status, 404);
    let raw = server
        .raw(
            "GET",
            "/api/v1/namespaces/default/configmaps/any/scale",
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(
        raw.status, 404,
        "no scale subresource without subresources.scale"
    );
}

backend_tests!(
    openapi_index_and_documents,
    openapi_follows_crd_changes,
    table_lists_printer_columns,
    table_of_one_object_and_of_builtins,
    table_watch_sends_rows,
    partial_object_metadata_lists_gets_and_watches,
    scale_get_and_patch,
    scale_preconditions_and_validation,
);
