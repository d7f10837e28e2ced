//! Authentication over HTTPS: client certificates of the client CA, tokens of the token file,
//! anonymous requests only when allowed, and kube-apiserver's 401 `Status` otherwise.

use std::sync::Arc;
use std::time::Duration;

use corral_apiserver::AuthenticationConfig;
use corral_apiserver::auth::TokenFile;
use corral_apiserver::pki;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;

use crate::tls::start_tls;

const UNAUTHORIZED: &str = r#"{"apiVersion":"v1","code":401,"kind":"Status","message":"Unauthorized","metadata":{},"reason":"Unauthorized","status":"Failure"}"#;

fn tokens() -> Arc<TokenFile> {
    Arc::new(TokenFile::parse("s3cr3t,alice,alice-uid,\"team-a,team-b\"\n", "tokens.csv").unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_credentials_get_401_even_for_health() {
    let tls = start_tls(AuthenticationConfig::default()).await;
    for path in [
        "/api/v1/namespaces",
        "/healthz",
        "/livez",
        "/readyz",
        "/version",
    ] {
        let (status, body) = tls.get(path, None, &[]).await.unwrap();
        assert_eq!(status, 401, "{path}: {body}");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body,
            serde_json::from_str::<serde_json::Value>(UNAUTHORIZED).unwrap()
        );
    }
    // kube-rs sees kube-apiserver's error.
    let namespaces: Api<Namespace> = Api::all(tls.kube_client(None).await);
    match namespaces.get("default").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"))
        }
        other => panic!("expected 401, got {other:?}"),
    }
    // With the admin's certificate, everything answers.
    for path in ["/api/v1/namespaces", "/healthz", "/version"] {
        let (status, body) = tls.get(path, Some(&tls.admin), &[]).await.unwrap();
        assert_eq!(status, 200, "{path}: {body}");
    }
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_of_another_ca_is_refused() {
    let tls = start_tls(AuthenticationConfig::default()).await;
    let other_ca = pki::generate_ca("other-ca").unwrap();
    let stranger = pki::issue_client(
        &other_ca,
        "admin",
        &["system:masters"],
        Duration::from_secs(3600),
    )
    .unwrap();
    // The TLS layer refuses it (with TLS 1.3 the client learns at its first read), or the
    // request is unauthenticated: either way no answer but 401.
    match tls.get("/api/v1/namespaces", Some(&stranger), &[]).await {
        Err(_) => {}
        Ok((status, body)) => assert_eq!(status, 401, "{body}"),
    }
    let namespaces: Api<Namespace> = Api::all(tls.kube_client(Some(&stranger)).await);
    assert!(namespaces.get("default").await.is_err());
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_the_token_file_authenticates_and_a_wrong_one_gets_401() {
    let tls = start_tls(AuthenticationConfig {
        tokens: Some(tokens()),
        anonymous: false,
        ..Default::default()
    })
    .await;
    let (status, body) = tls
        .get(
            "/api/v1/namespaces",
            None,
            &[("authorization", "Bearer s3cr3t")],
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = tls
        .get(
            "/api/v1/namespaces",
            None,
            &[("authorization", "Bearer wrong")],
        )
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (401, UNAUTHORIZED));
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_requests_pass_only_when_allowed_and_a_wrong_token_still_fails() {
    let tls = start_tls(AuthenticationConfig {
        tokens: Some(tokens()),
        anonymous: true,
        ..Default::default()
    })
    .await;
    let namespaces: Api<Namespace> = Api::all(tls.kube_client(None).await);
    namespaces.get("default").await.unwrap();
    let (status, _) = tls.get("/healthz", None, &[]).await.unwrap();
    assert_eq!(status, 200);
    // As kube-apiserver: a token that is not known is refused, not taken as anonymous.
    let (status, body) = tls
        .get("/healthz", None, &[("authorization", "Bearer wrong")])
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (401, UNAUTHORIZED));
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_clients_need_no_credentials() {
    let tls = start_tls(AuthenticationConfig::default()).await;
    let client = kube::Client::new(tls.server.in_process(), "default");
    let namespaces: Api<Namespace> = Api::all(client);
    namespaces.get("default").await.unwrap();
    tls.server.shutdown().await;
}
