//! Bad input gets a Kubernetes `Status` with the right code, and changes nothing.

use serde_json::json;

use crate::support::TestServer;

async fn assert_status(
    server: &TestServer,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
    code: u16,
    reason: &str,
) -> serde_json::Value {
    let raw = server.raw(method, path, content_type, body).await;
    assert_eq!(
        raw.status,
        code,
        "{method} {path}: {}",
        String::from_utf8_lossy(&raw.body)
    );
    let status = raw.json();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["apiVersion"], "v1");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], code);
    assert_eq!(status["reason"], reason, "{status}");
    assert!(!status["message"].as_str().unwrap().is_empty());
    status
}

async fn bad_requests_get_a_status_and_store_nothing(server: TestServer) {
    let revision = server
        .server
        .state()
        .store
        .current_revision()
        .await
        .unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    assert_status(
        &server,
        "POST",
        cms,
        Some("application/json"),
        "{not json",
        400,
        "BadRequest",
    )
    .await;
    assert_status(
        &server,
        "POST",
        cms,
        Some("application/json"),
        r#"{"metadata": {"name": 5}}"#,
        422,
        "Invalid",
    )
    .await;
    assert_status(
        &server,
        "POST",
        cms,
        Some("application/yaml"),
        "metadata: [unclosed",
        400,
        "BadRequest",
    )
    .await;
    assert_status(
        &server,
        "POST",
        cms,
        Some("application/json"),
        r#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}"#,
        400,
        "BadRequest",
    )
    .await;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_status(
        &server,
        "POST",
        cms,
        Some("application/json"),
        deep,
        400,
        "BadRequest",
    )
    .await;
    let huge = format!(
        r#"{{"metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 10)
    );
    assert_status(
        &server,
        "POST",
        cms,
        Some("application/json"),
        huge,
        413,
        "RequestEntityTooLarge",
    )
    .await;
    let status = assert_status(
        &server,
        "POST",
        cms,
        None,
        r#"{"metadata":{"name":"Not_A_Name"}}"#,
        422,
        "Invalid",
    )
    .await;
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    assert_status(
        &server,
        "POST",
        cms,
        None,
        r#"{"metadata":{"labels":{"bad key!":"v"},"name":"ok"}}"#,
        422,
        "Invalid",
    )
    .await;
    assert_status(
        &server,
        "POST",
        cms,
        None,
        r#"{"metadata":{}}"#,
        422,
        "Invalid",
    )
    .await;
    assert_status(
        &server,
        "POST",
        "/api/v1/namespaces/nowhere/configmaps",
        None,
        r#"{"metadata":{"name":"x"}}"#,
        404,
        "NotFound",
    )
    .await;
    assert_status(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(",
        None,
        "",
        400,
        "BadRequest",
    )
    .await;
    assert_status(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps?fieldSelector=spec.nope%3Dx",
        None,
        "",
        400,
        "BadRequest",
    )
    .await;
    assert_status(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps?limit=abc",
        None,
        "",
        400,
        "BadRequest",
    )
    .await;
    assert_status(
        &server,
        "GET",
        "/apis/nothing.example.com/v1/things",
        None,
        "",
        404,
        "NotFound",
    )
    .await;
    let status = assert_status(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/missing",
        None,
        "",
        404,
        "NotFound",
    )
    .await;
    assert_eq!(status["message"], "configmaps \"missing\" not found");
    assert_eq!(status["details"]["name"], "missing");
    assert_eq!(status["details"]["kind"], "configmaps");
    assert_status(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/missing",
        Some("application/merge-patch+json"),
        "{}",
        404,
        "NotFound",
    )
    .await;
    // A JSON patch sent as a merge patch (as the Python client does) is refused cleanly.
    let created = server
        .post_json(cms, &json!({"metadata": {"name": "real"}}))
        .await;
    assert_eq!(created.status, 201);
    let revision = revision.max(
        server
            .server
            .state()
            .store
            .current_revision()
            .await
            .unwrap(),
    );
    assert_status(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/real",
        Some("application/merge-patch+json"),
        r#"[{"op":"add","path":"/data","value":{}}]"#,
        400,
        "BadRequest",
    )
    .await;
    assert_status(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/real",
        Some("application/json-patch+json"),
        r#"[{"op":"test","path":"/data/x","value":"nope"}]"#,
        422,
        "Invalid",
    )
    .await;
    assert_status(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/real",
        Some("text/plain"),
        "x",
        415,
        "UnsupportedMediaType",
    )
    .await;
    assert_status(
        &server,
        "PUT",
        "/api/v1/namespaces/default/configmaps/real",
        None,
        r#"{"metadata":{"name":"other"}}"#,
        400,
        "BadRequest",
    )
    .await;
    assert_eq!(
        server
            .server
            .state()
            .store
            .current_revision()
            .await
            .unwrap(),
        revision,
        "refused requests store nothing"
    );
    // And the server still serves.
    server
        .get_json("/api/v1/namespaces/default/configmaps/real")
        .await;
}

async fn empty_query_pairs_and_no_content_type(server: TestServer) {
    let raw = server
        .raw(
            "POST",
            "/api/v1/namespaces/default/configmaps?&&fieldManager=x&",
            None,
            r#"{"metadata":{"name":"plain"}}"#,
        )
        .await;
    assert_eq!(
        raw.status,
        201,
        "an empty Content-Type means JSON: {}",
        String::from_utf8_lossy(&raw.body)
    );
    let list = server
        .get_json("/api/v1/namespaces/default/configmaps?&limit=500")
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let version = server.get_json("/version").await;
    assert_eq!(version["major"], "1");
    for health in ["/healthz", "/livez", "/readyz"] {
        let raw = server.raw("GET", health, None, Vec::new()).await;
        assert_eq!(raw.status, 200);
    }
}

backend_tests!(
    bad_requests_get_a_status_and_store_nothing,
    empty_query_pairs_and_no_content_type
);
