//! Admission webhooks against a real HTTPS webhook server in the test: a certificate from a
//! test CA (rcgen), rustls, and handlers that deny, patch, stall or answer garbage.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

use crate::support::{Raw, TestServer};

backend_tests!(
    configurations_are_validated_and_defaulted,
    a_denial_refuses_the_write_and_stores_nothing,
    a_mutating_webhook_patches_what_is_stored,
    dry_runs_reach_webhooks_flagged,
    mutating_webhooks_are_reinvoked_if_needed,
    a_timeout_fails_closed_under_fail,
    a_timeout_is_ignored_under_ignore,
    unusable_answers_follow_the_failure_policy,
    rules_select_resources_operations_and_subresources,
    deletes_reach_webhooks_with_delete_rules,
    namespace_selectors_match_namespace_labels,
    object_selectors_match_new_or_old_labels,
    match_conditions_decide_whether_to_call,
    equivalent_versions_are_sent_in_the_rules_version,
    configurations_written_elsewhere_are_followed,
);

/// How long the slow handler takes: longer than the 1 s timeout of the webhooks calling it.
const SLOW: Duration = Duration::from_secs(3);

/// A test CA: its certificate as a caBundle, and what it signs with.
struct Authority {
    ca_bundle: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

fn authority() -> Authority {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "corral webhook test CA");
    let certificate = params.self_signed(&key).unwrap();
    Authority {
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(certificate.pem()),
        issuer: rcgen::Issuer::new(params, key),
    }
}

/// The webhook server: every request it received, by path.
struct WebhookServer {
    /// `https://127.0.0.1:<port>`
    url: String,
    /// The caBundle that trusts it.
    ca_bundle: String,
    received: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    async fn start() -> WebhookServer {
        let authority = authority();
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .unwrap()
                .signed_by(&key, &authority.issuer)
                .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![certificate.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    // Clients that do not trust the certificate hang up here.
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |request| {
                        let log = log.clone();
                        async move { Ok::<_, Infallible>(handle(request, log).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        WebhookServer {
            url,
            ca_bundle: authority.ca_bundle,
            received,
            task,
        }
    }

    /// The AdmissionReview requests that came to `path`.
    fn requests(&self, path: &str) -> Vec<Value> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, request)| request.clone())
            .collect()
    }

    /// A webhook calling `path`, with the rules given and the rest valid.
    fn webhook(&self, name: &str, path: &str, rules: Value) -> Value {
        json!({
            "name": name,
            "clientConfig": {"url": format!("{}{path}", self.url), "caBundle": self.ca_bundle},
            "rules": rules,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 1,
        })
    }
}

fn labels(object: &Value) -> Value {
    object
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or(json!({}))
}

fn labelled_deny(object: &Value) -> bool {
    labels(object).get("deny").and_then(Value::as_str) == Some("true")
}

async fn handle(
    request: http::Request<hyper::body::Incoming>,
    log: Arc<Mutex<Vec<(String, Value)>>>,
) -> http::Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let body = request.into_body().collect().await.unwrap().to_bytes();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = review["request"].clone();
    log.lock().unwrap().push((path.clone(), request.clone()));
    let uid = request["uid"].clone();
    let respond = |response: Value| {
        let mut response = response;
        response["uid"] = uid.clone();
        let review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": response,
        });
        http::Response::new(Full::new(Bytes::from(serde_json::to_vec(&review).unwrap())))
    };
    match path.as_str() {
        "/allow" => respond(json!({"allowed": true})),
        "/deny" => {
            if labelled_deny(&request["object"]) || labelled_deny(&request["oldObject"]) {
                respond(json!({"allowed": false, "status": {
                    "code": 403, "reason": "Forbidden",
                    "message": "objects labelled deny=true are not allowed",
                }}))
            } else {
                respond(json!({"allowed": true, "warnings": ["checked for deny=true"]}))
            }
        }
        "/deny-all" => {
            respond(json!({"allowed": false, "status": {"message": "nothing gets past"}}))
        }
        "/slow" => {
            tokio::time::sleep(SLOW).await;
            respond(json!({"allowed": true}))
        }
        "/garbage" => http::Response::new(Full::new(Bytes::from_static(b"this is not JSON"))),
        "/wrong-uid" => {
            let mut response = respond(json!({"allowed": true}));
            *response.body_mut() = Full::new(Bytes::from(
                serde_json::to_vec(&json!({
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": "not-the-request", "allowed": true},
                }))
                .unwrap(),
            ));
            response
        }
        "/error" => {
            let mut response = http::Response::new(Full::new(Bytes::from_static(b"boom")));
            *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            response
        }
        added if added.starts_with("/add/") => {
            // Adds the label named by the path (`/add/team` adds `team: "true"`).
            let label = added.trim_start_matches("/add/");
            let patch = if request["object"].pointer("/metadata/labels").is_some() {
                json!([{"op": "add", "path": format!("/metadata/labels/{label}"), "value": "true"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {label: "true"}}])
            };
            let patch = base64::engine::general_purpose::STANDARD
                .encode(serde_json::to_vec(&patch).unwrap());
            respond(json!({
                "allowed": true,
                "patch": patch,
                "patchType": "JSONPatch",
                "warnings": [format!("added {label}")],
            }))
        }
        _ => {
            let mut response = http::Response::new(Full::new(Bytes::new()));
            *response.status_mut() = http::StatusCode::NOT_FOUND;
            response
        }
    }
}

// ---------------------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------------------

const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";

fn text(raw: &Raw) -> String {
    String::from_utf8_lossy(&raw.body).into_owned()
}

/// Creates a configuration of the collection (`VALIDATING` or `MUTATING`).
async fn configure(server: &TestServer, collection: &str, name: &str, webhooks: Vec<Value>) {
    let kind = if collection == VALIDATING {
        "ValidatingWebhookConfiguration"
    } else {
        "MutatingWebhookConfiguration"
    };
    let raw = server
        .post_json(
            collection,
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name},
                "webhooks": webhooks,
            }),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
}

async fn unconfigure(server: &TestServer, collection: &str, name: &str) {
    let raw = server
        .raw("DELETE", &format!("{collection}/{name}"), None, Vec::new())
        .await;
    assert_eq!(raw.status, 200, "{}", text(&raw));
}

fn rule(operations: &[&str], resources: &[&str]) -> Value {
    json!([{
        "operations": operations,
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "resources": resources,
    }])
}

fn configmaps(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps")
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"key": "value"},
    })
}

async fn create_configmap(server: &TestServer, namespace: &str, name: &str, labels: Value) -> Raw {
    server
        .post_json(&configmaps(namespace), &configmap(name, labels))
        .await
}

async fn status_of(server: &TestServer, path: &str) -> u16 {
    server.raw("GET", path, None, Vec::new()).await.status
}

fn warnings(raw: &Raw) -> Vec<String> {
    raw.headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

async fn configurations_are_validated_and_defaulted(server: TestServer) {
    let raw = server
        .post_json(
            VALIDATING,
            &json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "broken"},
                "webhooks": [
                    {"name": "one.corral.test", "clientConfig": {"url": "https://127.0.0.1:1/x"},
                     "admissionReviewVersions": ["v1"], "timeoutSeconds": 0},
                    {"name": "one.corral.test", "clientConfig": {},
                     "admissionReviewVersions": ["v1"], "sideEffects": "None"},
                ],
            }),
        )
        .await;
    assert_eq!(raw.status, 422, "{}", text(&raw));
    let status = raw.json();
    assert_eq!(status["reason"], "Invalid");
    let causes: Vec<(String, String)> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap().to_string(),
                c["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("webhooks[0].sideEffects", "FieldValueRequired"),
        ("webhooks[0].timeoutSeconds", "FieldValueInvalid"),
        ("webhooks[1].clientConfig", "FieldValueRequired"),
        ("webhooks[1].name", "FieldValueDuplicate"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(f, r)| (f.to_string(), r.to_string()))
        .collect();
    assert_eq!(causes, expected);
    assert_eq!(
        status_of(&server, &format!("{VALIDATING}/broken")).await,
        404
    );

    let hooks = WebhookServer::start().await;
    let mut webhook = hooks.webhook(
        "allow.corral.test",
        "/allow",
        rule(&["CREATE"], &["configmaps"]),
    );
    webhook.as_object_mut().unwrap().remove("timeoutSeconds");
    configure(&server, MUTATING, "defaults", vec![webhook]).await;
    let stored = server.get_json(&format!("{MUTATING}/defaults")).await;
    let webhook = &stored["webhooks"][0];
    assert_eq!(webhook["failurePolicy"], "Fail");
    assert_eq!(webhook["matchPolicy"], "Equivalent");
    assert_eq!(webhook["timeoutSeconds"], 10);
    assert_eq!(webhook["reinvocationPolicy"], "Never");
    assert_eq!(webhook["namespaceSelector"], json!({}));
    assert_eq!(webhook["rules"][0]["scope"], "*");

    // kubectl's client-side apply patches webhooks by name (strategic merge).
    let patch = json!({
        "$setElementOrder/webhooks": [{"name": "allow.corral.test"}],
        "webhooks": [{"name": "allow.corral.test", "timeoutSeconds": 5}],
    });
    let raw = server
        .raw(
            "PATCH",
            &format!("{MUTATING}/defaults"),
            Some("application/strategic-merge-patch+json"),
            serde_json::to_vec(&patch).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", text(&raw));
    let webhook = &raw.json()["webhooks"][0];
    assert_eq!(webhook["timeoutSeconds"], 5);
    assert_eq!(
        webhook["sideEffects"], "None",
        "the rest of the webhook stays"
    );

    // Discovery lists both resources, cluster-scoped.
    let resources = server
        .get_json("/apis/admissionregistration.k8s.io/v1")
        .await;
    let names: Vec<(&str, bool)> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["namespaced"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(
        names.contains(&("validatingwebhookconfigurations", false)),
        "{names:?}"
    );
    assert!(
        names.contains(&("mutatingwebhookconfigurations", false)),
        "{names:?}"
    );
}

async fn a_denial_refuses_the_write_and_stores_nothing(server: TestServer) {
    let namespace = server.namespace("denials").await;
    let hooks = WebhookServer::start().await;
    configure(
        &server,
        VALIDATING,
        "deny",
        vec![hooks.webhook(
            "deny.corral.test",
            "/deny",
            rule(&["CREATE", "UPDATE"], &["configmaps"]),
        )],
    )
    .await;

    let raw = create_configmap(&server, &namespace, "refused", json!({"deny": "true"})).await;
    assert_eq!(raw.status, 403, "{}", text(&raw));
    let status = raw.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "admission webhook \"deny.corral.test\" denied the request: objects labelled deny=true are not allowed"
    );
    let path = format!("{}/refused", configmaps(&namespace));
    assert_eq!(status_of(&server, &path).await, 404, "nothing is stored");

    let raw = create_configmap(&server, &namespace, "allowed", json!({"deny": "false"})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(warnings(&raw), ["299 - \"checked for deny=true\""]);
    let request = hooks.requests("/deny").pop().unwrap();
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["name"], "allowed");
    assert_eq!(request["namespace"], namespace);
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(request["userInfo"]["username"], "system:admin");
    assert_eq!(request["object"]["metadata"]["name"], "allowed");
    assert_eq!(request["oldObject"], Value::Null);
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["options"]["kind"], "CreateOptions");

    // An update to a denied state is refused and leaves the stored object as it was.
    let path = format!("{}/allowed", configmaps(&namespace));
    let before = server.get_json(&path).await;
    let mut changed = before.clone();
    changed["metadata"]["labels"]["deny"] = json!("true");
    let raw = server
        .raw(
            "PUT",
            &path,
            Some("application/json"),
            serde_json::to_vec(&changed).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 403, "{}", text(&raw));
    assert_eq!(server.get_json(&path).await, before);
    let request = hooks.requests("/deny").pop().unwrap();
    assert_eq!(request["operation"], "UPDATE");
    assert_eq!(request["oldObject"]["metadata"]["labels"]["deny"], "false");
    assert_eq!(request["options"]["kind"], "UpdateOptions");

    // Once the configuration is gone, so is the webhook.
    unconfigure(&server, VALIDATING, "deny").await;
    let raw = create_configmap(&server, &namespace, "refused", json!({"deny": "true"})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
}

async fn a_mutating_webhook_patches_what_is_stored(server: TestServer) {
    let namespace = server.namespace("mutations").await;
    let hooks = WebhookServer::start().await;
    configure(
        &server,
        MUTATING,
        "team",
        vec![hooks.webhook(
            "team.corral.test",
            "/add/team",
            rule(&["CREATE"], &["configmaps"]),
        )],
    )
    .await;
    configure(
        &server,
        VALIDATING,
        "deny",
        vec![hooks.webhook(
            "deny.corral.test",
            "/deny",
            rule(&["CREATE"], &["configmaps"]),
        )],
    )
    .await;

    let raw = create_configmap(&server, &namespace, "labelled", json!({"app": "web"})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(labels(&raw.json()), json!({"app": "web", "team": "true"}));
    let stored = server
        .get_json(&format!("{}/labelled", configmaps(&namespace)))
        .await;
    assert_eq!(labels(&stored), json!({"app": "web", "team": "true"}));
    assert_eq!(
        warnings(&raw),
        ["299 - \"added team\"", "299 - \"checked for deny=true\""]
    );
    // The validating webhook sees the mutated object.
    let validated = hooks.requests("/deny").pop().unwrap();
    assert_eq!(validated["object"]["metadata"]["labels"]["team"], "true");

    // An object without labels gets its first one.
    let raw = server
        .post_json(
            &configmaps(&namespace),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bare"}}),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(labels(&raw.json()), json!({"team": "true"}));
}

async fn dry_runs_reach_webhooks_flagged(server: TestServer) {
    let namespace = server.namespace("dry-runs").await;
    let hooks = WebhookServer::start().await;
    configure(
        &server,
        MUTATING,
        "team",
        vec![hooks.webhook(
            "team.corral.test",
            "/add/team",
            rule(&["CREATE"], &["configmaps"]),
        )],
    )
    .await;
    let path = format!("{}?dryRun=All", configmaps(&namespace));
    let raw = server.post_json(&path, &configmap("dry", json!({}))).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(labels(&raw.json()), json!({"team": "true"}));
    assert_eq!(
        status_of(&server, &format!("{}/dry", configmaps(&namespace))).await,
        404
    );
    let request = hooks.requests("/add/team").pop().unwrap();
    assert_eq!(request["dryRun"], true);
    assert_eq!(request["options"]["dryRun"], json!(["All"]));
}

async fn mutating_webhooks_are_reinvoked_if_needed(server: TestServer) {
    let namespace = server.namespace("reinvocation").await;
    let hooks = WebhookServer::start().await;
    let mut first = hooks.webhook(
        "first.corral.test",
        "/add/first",
        rule(&["CREATE"], &["configmaps"]),
    );
    first["reinvocationPolicy"] = json!("IfNeeded");
    let second = hooks.webhook(
        "second.corral.test",
        "/add/second",
        rule(&["CREATE"], &["configmaps"]),
    );
    // Configurations run in name order: "a-first" before "b-second".
    configure(&server, MUTATING, "a-first", vec![first]).await;
    configure(&server, MUTATING, "b-second", vec![second]).await;

    let raw = create_configmap(&server, &namespace, "twice", json!({})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(
        labels(&raw.json()),
        json!({"first": "true", "second": "true"})
    );
    let first_calls = hooks.requests("/add/first");
    assert_eq!(
        first_calls.len(),
        2,
        "the second webhook's change reinvokes the first"
    );
    assert_eq!(
        first_calls[1]["object"]["metadata"]["labels"]["second"], "true",
        "the reinvocation sees the later change"
    );
    assert_eq!(
        hooks.requests("/add/second").len(),
        1,
        "Never is not reinvoked"
    );
}

async fn a_timeout_fails_closed_under_fail(server: TestServer) {
    let namespace = server.namespace("timeouts").await;
    let hooks = WebhookServer::start().await;
    configure(
        &server,
        VALIDATING,
        "slow",
        vec![hooks.webhook(
            "slow.corral.test",
            "/slow",
            rule(&["CREATE"], &["configmaps"]),
        )],
    )
    .await;
    let started = std::time::Instant::now();
    let raw = create_configmap(&server, &namespace, "late", json!({})).await;
    assert!(
        started.elapsed() < SLOW,
        "the call is cut at timeoutSeconds"
    );
    assert_eq!(raw.status, 500, "{}", text(&raw));
    let status = raw.json();
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(
        status["message"],
        format!(
            "Internal error occurred: failed calling webhook \"slow.corral.test\": failed to call webhook: Post \"{}/slow?timeout=1s\": context deadline exceeded",
            hooks.url
        )
    );
    assert_eq!(
        status_of(&server, &format!("{}/late", configmaps(&namespace))).await,
        404
    );
}

async fn a_timeout_is_ignored_under_ignore(server: TestServer) {
    let namespace = server.namespace("timeouts").await;
    let hooks = WebhookServer::start().await;
    let mut webhook = hooks.webhook(
        "slow.corral.test",
        "/slow",
        rule(&["CREATE"], &["configmaps"]),
    );
    webhook["failurePolicy"] = json!("Ignore");
    configure(&server, VALIDATING, "slow", vec![webhook]).await;
    let raw = create_configmap(&server, &namespace, "late", json!({})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(hooks.requests("/slow").len(), 1);
    assert_eq!(
        status_of(&server, &format!("{}/late", configmaps(&namespace))).await,
        200
    );
}

async fn unusable_answers_follow_the_failure_policy(server: TestServer) {
    let namespace = server.namespace("failures").await;
    let hooks = WebhookServer::start().await;
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let other_ca = authority().ca_bundle;
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "garbage",
            hooks.webhook(
                "garbage.corral.test",
                "/garbage",
                rule(&["CREATE"], &["configmaps"]),
            ),
            "failed to call webhook: the response is not an AdmissionReview",
        ),
        (
            "wrong-uid",
            hooks.webhook(
                "wrong-uid.corral.test",
                "/wrong-uid",
                rule(&["CREATE"], &["configmaps"]),
            ),
            "received invalid webhook response: expected response.uid=",
        ),
        (
            "error",
            hooks.webhook(
                "error.corral.test",
                "/error",
                rule(&["CREATE"], &["configmaps"]),
            ),
            "failed to call webhook: the server responded with the status code 500",
        ),
        (
            "refused",
            {
                let mut webhook = hooks.webhook(
                    "refused.corral.test",
                    "/allow",
                    rule(&["CREATE"], &["configmaps"]),
                );
                webhook["clientConfig"]["url"] =
                    json!(format!("https://127.0.0.1:{closed_port}/allow"));
                webhook
            },
            "failed to call webhook: Post \"https://127.0.0.1:",
        ),
        (
            "untrusted",
            {
                let mut webhook = hooks.webhook(
                    "untrusted.corral.test",
                    "/allow",
                    rule(&["CREATE"], &["configmaps"]),
                );
                webhook["clientConfig"]["caBundle"] = json!(other_ca);
                webhook
            },
            "invalid peer certificate",
        ),
    ];
    for (name, webhook, reason) in cases {
        configure(&server, VALIDATING, name, vec![webhook.clone()]).await;
        let raw = create_configmap(&server, &namespace, name, json!({})).await;
        assert_eq!(raw.status, 500, "{name}: {}", text(&raw));
        let message = raw.json()["message"].as_str().unwrap().to_string();
        let prefix = format!(
            "Internal error occurred: failed calling webhook \"{}\": ",
            webhook["name"].as_str().unwrap()
        );
        assert!(message.starts_with(&prefix), "{name}: {message}");
        assert!(message.contains(reason), "{name}: {message}");
        assert_eq!(
            status_of(&server, &format!("{}/{name}", configmaps(&namespace))).await,
            404,
            "{name}: nothing is stored"
        );
        unconfigure(&server, VALIDATING, name).await;

        let mut ignored = webhook;
        ignored["failurePolicy"] = json!("Ignore");
        configure(&server, VALIDATING, name, vec![ignored]).await;
        let raw = create_configmap(&server, &namespace, name, json!({})).await;
        assert_eq!(raw.status, 201, "{name} under Ignore: {}", text(&raw));
        unconfigure(&server, VALIDATING, name).await;
    }
}

async fn rules_select_resources_operations_and_subresources(server: TestServer) {
    let namespace = server.namespace("rules").await;
    let hooks = WebhookServer::start().await;
    configure(
        &server,
        VALIDATING,
        "configmaps",
        vec![
            hooks.webhook(
                "create.corral.test",
                "/allow",
                rule(&["CREATE"], &["configmaps"]),
            ),
            hooks.webhook(
                "status.corral.test",
                "/deny-all",
                rule(&["UPDATE"], &["namespaces/status"]),
            ),
        ],
    )
    .await;
    let raw = server
        .post_json(
            &format!("/api/v1/namespaces/{namespace}/secrets"),
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "unseen"}}),
        )
        .await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert!(
        hooks.requests("/allow").is_empty(),
        "a webhook for configmaps does not see secrets"
    );

    let raw = create_configmap(&server, &namespace, "seen", json!({})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(hooks.requests("/allow").len(), 1);
    let patch = json!({"metadata": {"labels": {"changed": "yes"}}});
    let raw = server
        .raw(
            "PATCH",
            &format!("{}/seen", configmaps(&namespace)),
            Some("application/merge-patch+json"),
            serde_json::to_vec(&patch).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", text(&raw));
    assert_eq!(
        hooks.requests("/allow").len(),
        1,
        "a CREATE rule does not see updates"
    );

    // `namespaces/status` sees writes to the status subresource only.
    let path = format!("/api/v1/namespaces/{namespace}");
    let mut object = server.get_json(&path).await;
    object["metadata"]["labels"] = json!({"touched": "yes"});
    let raw = server
        .raw(
            "PUT",
            &path,
            Some("application/json"),
            serde_json::to_vec(&object).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", text(&raw));
    let raw = server
        .raw(
            "PUT",
            &format!("{path}/status"),
            Some("application/json"),
            serde_json::to_vec(&server.get_json(&path).await).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 400, "{}", text(&raw));
    assert_eq!(
        raw.json()["message"],
        "admission webhook \"status.corral.test\" denied the request: nothing gets past"
    );
    let request = hooks.requests("/deny-all").pop().unwrap();
    assert_eq!(request["subResource"], "status");
    assert_eq!(
        request["namespace"], namespace,
        "a namespace's requests carry its name"
    );
}

async fn deletes_reach_webhooks_with_delete_rules(server: TestServer) {
    let namespace = server.namespace("deletes").await;
    let hooks = WebhookServer::start().await;
    configure(
        &server,
        VALIDATING,
        "deletes",
        vec![hooks.webhook(
            "deny.corral.test",
            "/deny",
            rule(&["DELETE"], &["configmaps"]),
        )],
    )
    .await;
    for (name, deny) in [("kept", "true"), ("deleted", "false")] {
        let raw = create_configmap(&server, &namespace, name, json!({"deny": deny})).await;
        assert_eq!(raw.status, 201, "{}", text(&raw));
    }
    assert!(
        hooks.requests("/deny").is_empty(),
        "a DELETE rule does not see creates"
    );
    let kept = format!("{}/kept", configmaps(&namespace));
    let raw = server.raw("DELETE", &kept, None, Vec::new()).await;
    assert_eq!(raw.status, 403, "{}", text(&raw));
    assert_eq!(status_of(&server, &kept).await, 200);
    let request = hooks.requests("/deny").pop().unwrap();
    assert_eq!(request["operation"], "DELETE");
    assert_eq!(request["object"], Value::Null);
    assert_eq!(request["oldObject"]["metadata"]["name"], "kept");
    assert_eq!(request["options"]["kind"], "DeleteOptions");

    let deleted = format!("{}/deleted", configmaps(&namespace));
    let raw = server.raw("DELETE", &deleted, None, Vec::new()).await;
    assert_eq!(raw.status, 200, "{}", text(&raw));
    assert_eq!(status_of(&server, &deleted).await, 404);
}

async fn namespace_selectors_match_namespace_labels(server: TestServer) {
    let hooks = WebhookServer::start().await;
    let mut webhook = hooks.webhook(
        "guarded.corral.test",
        "/deny-all",
        rule(&["CREATE"], &["configmaps", "namespaces"]),
    );
    webhook["namespaceSelector"] = json!({"matchLabels": {"guarded": "yes"}});
    configure(&server, VALIDATING, "guarded", vec![webhook]).await;

    let open = server.namespace("open").await;
    let raw = create_configmap(&server, &open, "fine", json!({})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));

    // A Namespace is matched by its own labels.
    let raw = server
        .post_json(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "guarded", "labels": {"guarded": "yes"}}}),
        )
        .await;
    assert_eq!(raw.status, 400, "{}", text(&raw));
    assert_eq!(status_of(&server, "/api/v1/namespaces/guarded").await, 404);

    // Label an existing namespace: objects created in it are now seen.
    let path = format!("/api/v1/namespaces/{open}");
    let mut object = server.get_json(&path).await;
    object["metadata"]["labels"] = json!({"guarded": "yes"});
    let raw = server
        .raw(
            "PUT",
            &path,
            Some("application/json"),
            serde_json::to_vec(&object).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", text(&raw));
    let raw = create_configmap(&server, &open, "refused", json!({})).await;
    assert_eq!(raw.status, 400, "{}", text(&raw));
    assert_eq!(hooks.requests("/deny-all").len(), 2);
}

async fn object_selectors_match_new_or_old_labels(server: TestServer) {
    let namespace = server.namespace("object-selectors").await;
    let hooks = WebhookServer::start().await;
    let mut webhook = hooks.webhook(
        "checked.corral.test",
        "/allow",
        rule(&["CREATE", "UPDATE"], &["configmaps"]),
    );
    webhook["objectSelector"] =
        json!({"matchExpressions": [{"key": "checked", "operator": "Exists"}]});
    configure(&server, VALIDATING, "checked", vec![webhook]).await;

    let raw = create_configmap(&server, &namespace, "plain", json!({})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert!(hooks.requests("/allow").is_empty());
    let raw = create_configmap(&server, &namespace, "checked", json!({"checked": "1"})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    assert_eq!(hooks.requests("/allow").len(), 1);

    // Removing the label is seen: the old object matches.
    let path = format!("{}/checked", configmaps(&namespace));
    let mut object = server.get_json(&path).await;
    object["metadata"].as_object_mut().unwrap().remove("labels");
    let raw = server
        .raw(
            "PUT",
            &path,
            Some("application/json"),
            serde_json::to_vec(&object).unwrap(),
        )
        .await;
    assert_eq!(raw.status, 200, "{}", text(&raw));
    let requests = hooks.requests("/allow");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["operation"], "UPDATE");
}

async fn match_conditions_decide_whether_to_call(server: TestServer) {
    let namespace = server.namespace("conditions").await;
    let hooks = WebhookServer::start().await;
    let mut webhook = hooks.webhook(
        "conditional.corral.test",
        "/deny-all",
        rule(&["CREATE"], &["configmaps"]),
    );
    webhook["matchConditions"] = json!([
        {"name": "not-exempt", "expression": "object.metadata.name != 'exempt'"},
        {"name": "creating", "expression": "request.operation == 'CREATE' && oldObject == null"},
    ]);
    let mut failing = hooks.webhook(
        "failing.corral.test",
        "/allow",
        rule(&["CREATE"], &["configmaps"]),
    );
    failing["matchConditions"] = json!([
        {"name": "team-label", "expression": "object.metadata.labels.team == 'a'"},
    ]);
    if cfg!(not(feature = "cel")) {
        let raw = server
            .post_json(
                VALIDATING,
                &json!({"apiVersion": "admissionregistration.k8s.io/v1",
                        "kind": "ValidatingWebhookConfiguration",
                        "metadata": {"name": "conditional"}, "webhooks": [webhook]}),
            )
            .await;
        assert_eq!(raw.status, 422, "match conditions need CEL: {}", text(&raw));
        return;
    }
    configure(&server, VALIDATING, "conditional", vec![webhook]).await;
    let raw = create_configmap(&server, &namespace, "exempt", json!({"team": "a"})).await;
    assert_eq!(raw.status, 201, "{}", text(&raw));
    let raw = create_configmap(&server, &namespace, "checked", json!({"team": "a"})).await;
    assert_eq!(raw.status, 400, "{}", text(&raw));
    unconfigure(&server, VALIDATING, "conditional").await;

    // A condition that cannot be evaluated (no labels at all) fails closed under Fail.
    configure(&server, VALIDATING, "failing", vec![failing]).await;
    let raw = server
        .post_json(
            &configmaps(&namespace),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unlabelled"}}),
        )
        .await;
    assert_eq!(raw.status, 403, "{}", text(&raw));
    let message = raw.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("configmaps \"unlabelled\" is forbidden: expression 'object.metadata.labels.team == 'a'' resulted in error: "),
        "{message}"
    );
    assert!(hooks.requests("/allow").is_empty());
}

async fn equivalent_versions_are_sent_in_the_rules_version(server: TestServer) {
    server.widget_crd().await;
    let namespace = server.namespace("equivalents").await;
    let hooks = WebhookServer::start().await;
    let widget_rule = json!([{
        "operations": ["CREATE"],
        "apiGroups": ["example.com"],
        "apiVersions": ["v1beta1"],
        "resources": ["widgets"],
    }]);
    let equivalent = hooks.webhook("equivalent.corral.test", "/allow", widget_rule.clone());
    let mut exact = hooks.webhook("exact.corral.test", "/deny", widget_rule);
    exact["matchPolicy"] = json!("Exact");
    configure(&server, VALIDATING, "widgets", vec![equivalent, exact]).await;

    let raw = server
        .post_json(
            &format!("/apis/example.com/v1/namespaces/{namespace}/widgets"),
            &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w", "labels": {"deny": "true"}}, "spec": {"size": 1}}),
        )
        .await;
    assert_eq!(
        raw.status,
        201,
        "Exact does not see v1 requests: {}",
        text(&raw)
    );
    let request = hooks.requests("/allow").pop().unwrap();
    assert_eq!(
        request["kind"],
        json!({"group": "example.com", "version": "v1beta1", "kind": "Widget"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(request["object"]["apiVersion"], "example.com/v1beta1");
    assert!(hooks.requests("/deny").is_empty());
}

/// Whether a dry-run create of a ConfigMap is refused, polled until it is `refused`.
async fn wait_until_refused(server: &TestServer, namespace: &str, refused: bool) {
    let path = format!("{}?dryRun=All", configmaps(namespace));
    crate::support::eventually(10, "the webhook configuration to take effect", || async {
        let raw = server
            .post_json(&path, &configmap("probe", json!({})))
            .await;
        (raw.status == if refused { 400 } else { 201 }).then_some(())
    })
    .await;
}

async fn configurations_written_elsewhere_are_followed(server: TestServer) {
    let namespace = server.namespace("elsewhere").await;
    let hooks = WebhookServer::start().await;
    // Another server sharing the store writes the configuration: this one learns of it
    // through its watch.
    let store = server.server.state().store.clone();
    let key = "/registry/admissionregistration.k8s.io/validatingwebhookconfigurations/elsewhere";
    let configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "elsewhere", "uid": "0b5e4d2c-0000-4000-8000-000000000001"},
        "webhooks": [hooks.webhook("elsewhere.corral.test", "/deny-all", rule(&["CREATE"], &["configmaps"]))],
    });
    let revision = store
        .create(
            key,
            Bytes::from(serde_json::to_vec(&configuration).unwrap()),
        )
        .await
        .unwrap();
    wait_until_refused(&server, &namespace, true).await;

    // A compaction ends every watch; the configurations are read again, and a delete made
    // while no watch was open is still seen.
    server.server.compact().await.unwrap();
    store.delete(key, revision).await.unwrap();
    wait_until_refused(&server, &namespace, false).await;
}
