//! 10,000 generated hostile requests against an HTTPS server with RBAC: certificates of
//! another CA and expired ones, missing, malformed and unknown tokens, path tricks (`..`,
//! `%2e%2e`, double slashes, encoded slashes), overlong names, bad query parameters,
//! malformed, oversized and mistyped bodies. Each outcome is checked against what it must be:
//! never a 5xx, unauthenticated requests always 401, a viewer of namespace `a` never writes
//! anything nor reads what is in `b` or any Secret, and the server still answers afterwards.

use std::time::Duration;

use bytes::Bytes;
use corral_apiserver::ServerConfig;
use corral_apiserver::pki::{self, KeyMaterial};
use http_body_util::{BodyExt, Full};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::tls::{TlsServer, secure_config, start_with};

const REQUESTS: usize = 10_000;
const WORKERS: usize = 16;
const B_MARKER: &str = "only-in-namespace-b-7f3a";
const SECRET_MARKER: &str = "secret-value-in-a-91c2";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Admin,
    Viewer,
    Nobody,
    OtherCa,
    Expired,
}

#[derive(Debug)]
struct Case {
    who: Who,
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

fn hostile_path(rng: &mut StdRng, namespace_writable: bool) -> String {
    let namespaces = [
        "a",
        "b",
        "..",
        "%2e%2e",
        "a/../b",
        "a%2f..%2fb",
        "a/..%2fb",
        "",
        "A",
        "a//b",
        "./b",
        "b%00",
        "%62",
    ];
    let names = [
        "cm",
        "hidden",
        "s",
        "..",
        "%2e%2e%2fhidden",
        "-",
        "UPPER",
        "a%20b",
        "x.y",
        "%ff",
    ];
    let long = "n".repeat(rng.random_range(250..400));
    let namespace = if namespace_writable {
        "c"
    } else {
        pick(rng, &namespaces)
    };
    let name = if rng.random_bool(0.1) {
        long.as_str()
    } else {
        pick(rng, &names)
    };
    let resource = *pick(
        rng,
        &["configmaps", "secrets", "configmaps%2fstatus", "CONFIGMAPS"],
    );
    let mut path = match rng.random_range(0..10) {
        0 => format!("/api/v1/namespaces/{namespace}/{resource}"),
        1 | 2 => format!("/api/v1/namespaces/{namespace}/{resource}/{name}"),
        3 => format!("/api/v1/namespaces/{namespace}/{resource}/{name}/status"),
        4 => format!("/api/v1/{resource}"),
        5 => format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings"),
        6 => "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings".to_string(),
        7 => pick(
            rng,
            &[
                "/api",
                "/apis",
                "/healthz",
                "/version",
                "/openapi/v3",
                "/",
                "/metrics",
            ],
        )
        .to_string(),
        8 => format!("/api/v1/namespaces/{namespace}"),
        _ => format!("/api/v1/namespaces/{namespace}/{resource}/{name}/../../b/configmaps/hidden"),
    };
    // Mangle the path a little more, now and then.
    match rng.random_range(0..8) {
        0 => path = path.replacen('/', "//", 2),
        1 => path.push_str("/.."),
        2 => path = path.replace("/v1/", "/v1/./"),
        3 => path = path.replace("namespaces", "namespaces%2f"),
        4 => path.push('/'),
        _ => {}
    }
    if rng.random_bool(0.3) {
        let query = *pick(
            rng,
            &[
                "limit=-1",
                "limit=abc",
                "limit=99999999999999999999",
                "resourceVersion=zzz",
                "resourceVersionMatch=Bogus",
                "fieldSelector=%3D%3D%3D",
                "labelSelector=!!",
                "labelSelector=a%20in%20(",
                "continue=%ff%fe",
                "timeoutSeconds=-5",
                "dryRun=Bogus",
                "propagationPolicy=Nope",
                "pretty=maybe",
                "fieldManager=%00",
                "fieldValidation=Sometimes",
                "gracePeriodSeconds=-1",
                "allowWatchBookmarks=perhaps",
            ],
        );
        path = format!("{path}?{query}");
    }
    path
}

fn hostile_body(rng: &mut StdRng) -> (String, Vec<u8>) {
    let name = if rng.random_bool(0.2) {
        "n".repeat(rng.random_range(250..300))
    } else {
        format!("cm-{}", rng.random_range(0..1_000_000))
    };
    let object = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#
    );
    let content_type = pick(
        rng,
        &[
            "application/json",
            "application/json",
            "application/yaml",
            "text/plain",
            "application/xml",
            "application/vnd.kubernetes.protobuf",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/json-patch+json",
            "application/apply-patch+yaml",
            "",
        ],
    )
    .to_string();
    let body = match rng.random_range(0..12) {
        0 => b"{".to_vec(),
        1 => b"[]".to_vec(),
        2 => b"null".to_vec(),
        3 => (0..rng.random_range(1..200)).map(|_| rng.random()).collect(),
        4 => "[".repeat(5000).into_bytes(),
        5 => br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"b"},"data":{"k":1e999}}"#.to_vec(),
        6 => br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#.to_vec(),
        7 => b"k8s\x00\x0a\x0b\x0a\x02v1\x12\x09ConfigMap\x12\xff\xff\xff\xff\x0f".to_vec(),
        8 => br#"[{"op":"replace","path":"/metadata/namespace","value":"b"}]"#.to_vec(),
        9 => "apiVersion: v1\nkind: ConfigMap\nmetadata: &a {name: *a}\n".as_bytes().to_vec(),
        _ => object.into_bytes(),
    };
    (content_type, body)
}

fn generate(rng: &mut StdRng) -> Case {
    let roll = rng.random_range(0..100);
    let who = match roll {
        0..=1 => Who::OtherCa,
        2..=3 => Who::Expired,
        4..=23 => Who::Nobody,
        24..=63 => Who::Viewer,
        _ => Who::Admin,
    };
    let mut headers = Vec::new();
    if who == Who::Nobody && rng.random_bool(0.8) {
        let token = pick(
            rng,
            &[
                "Bearer ",
                "Bearer unknown-token",
                "Bearer \u{7f}\u{7f}",
                "Basic YWRtaW46YWRtaW4=",
                "bearer lowercase",
                "Bearer a.b.c",
                "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.",
                "Token x",
            ],
        )
        .to_string();
        let token = if rng.random_bool(0.1) {
            format!("Bearer {}", "t".repeat(20_000))
        } else {
            token
        };
        headers.push(("authorization", token));
    }
    if rng.random_bool(0.05) {
        headers.push(("impersonate-user", "admin".into()));
        headers.push(("impersonate-group", "system:masters".into()));
    }
    let (method, path, body) = match who {
        Who::Admin if rng.random_bool(0.6) => {
            let (content_type, body) = if rng.random_range(0..2000) == 0 {
                (
                    "application/json".to_string(),
                    vec![b' '; 3 * 1024 * 1024 + 10],
                )
            } else {
                hostile_body(rng)
            };
            headers.push(("content-type", content_type));
            if rng.random_bool(0.3) {
                ("POST", "/api/v1/namespaces/c/configmaps".to_string(), body)
            } else {
                let method = *pick(rng, &["POST", "PUT", "PATCH"]);
                (method, hostile_path(rng, true), body)
            }
        }
        Who::Admin => ("GET", hostile_path(rng, false), Vec::new()),
        _ => {
            let method = *pick(
                rng,
                &["GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE"],
            );
            let body = if method == "GET" {
                Vec::new()
            } else {
                let (content_type, body) = hostile_body(rng);
                headers.push(("content-type", content_type));
                body
            };
            (method, hostile_path(rng, false), body)
        }
    };
    Case {
        who,
        method,
        path,
        headers,
        body,
    }
}

type Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

async fn connect(server: &TlsServer, user: Option<&KeyMaterial>) -> Result<Sender, String> {
    let stream = server
        .connect(&[b"h2"], user)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Sends `case`: `Ok((status, body))`, or `Err` when the connection or the request failed.
async fn send(sender: &mut Sender, case: &Case) -> Result<(u16, Bytes), String> {
    let mut request = http::Request::builder()
        .method(case.method)
        .uri(format!("https://127.0.0.1{}", case.path));
    for (name, value) in &case.headers {
        request = request.header(*name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(case.body.clone())))
        .map_err(|e| format!("not a request: {e}"))?;
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = tokio::time::timeout(Duration::from_secs(30), sender.send_request(request))
        .await
        .map_err(|_| "no answer in 30 s".to_string())?
        .map_err(|e| format!("request: {e}"))?;
    let status = response.status().as_u16();
    let body = tokio::time::timeout(Duration::from_secs(30), response.into_body().collect())
        .await
        .map_err(|_| "no body in 30 s".to_string())?
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok((status, body))
}

struct Identities {
    admin: KeyMaterial,
    viewer: KeyMaterial,
    other_ca: KeyMaterial,
    expired: KeyMaterial,
}

/// What was wrong with the outcome of `case`, if anything.
fn judge(case: &Case, outcome: &Result<(u16, Bytes), String>) -> Option<String> {
    let secret_encoded = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(SECRET_MARKER)
    };
    match (case.who, outcome) {
        (Who::OtherCa | Who::Expired, Err(_)) => None,
        // 431: headers over HTTP/2's limit (a 20 kB token) are refused before anything reads them.
        (Who::OtherCa | Who::Expired | Who::Nobody, Ok((401 | 431, _))) => None,
        (Who::OtherCa | Who::Expired | Who::Nobody, other) => Some(format!(
            "expected 401, got {:?}",
            other.as_ref().map(|(s, _)| *s)
        )),
        (_, Err(error)) => Some(format!("failed: {error}")),
        (_, Ok((status, _))) if *status >= 500 => Some(format!("answered {status}")),
        (Who::Viewer, Ok((status, _))) if case.method != "GET" && *status < 400 => {
            Some(format!("a viewer's write answered {status}"))
        }
        (Who::Viewer, Ok((_, body))) => {
            let body = String::from_utf8_lossy(body);
            (body.contains(B_MARKER)
                || body.contains(SECRET_MARKER)
                || body.contains(&secret_encoded))
            .then(|| "a viewer read what it may not".to_string())
        }
        (Who::Admin, Ok(_)) => None,
    }
}

/// The wrong outcomes, and how many of each (who, status or `0` for a failed connection).
type Outcomes = (
    Vec<String>,
    std::collections::BTreeMap<(String, u16), usize>,
);

async fn worker(server: &TlsServer, identities: &Identities, cases: Vec<Case>) -> Outcomes {
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    let mut admin = None;
    let mut viewer = None;
    let mut nobody = None;
    for case in cases {
        let user = match case.who {
            Who::Admin => Some(&identities.admin),
            Who::Viewer => Some(&identities.viewer),
            Who::Nobody => None,
            Who::OtherCa => Some(&identities.other_ca),
            Who::Expired => Some(&identities.expired),
        };
        let slot = match case.who {
            Who::Admin => &mut admin,
            Who::Viewer => &mut viewer,
            Who::Nobody => &mut nobody,
            // A new connection each time: the handshake is what is refused.
            Who::OtherCa | Who::Expired => &mut None,
        };
        let mut outcome = Err(String::new());
        // A connection the server closed (it may, on a protocol error) is opened again once.
        for _ in 0..2 {
            if slot.is_none() {
                match connect(server, user).await {
                    Ok(sender) => *slot = Some(sender),
                    Err(error) => {
                        outcome = Err(error);
                        break;
                    }
                }
            }
            outcome = send(slot.as_mut().unwrap(), &case).await;
            if outcome.is_ok() || matches!(case.who, Who::OtherCa | Who::Expired) {
                break;
            }
            *slot = None;
        }
        if let Err(error) = &outcome
            && error.starts_with("not a request")
        {
            continue;
        }
        let status = outcome.as_ref().map_or(0, |(status, _)| *status);
        *counts
            .entry((format!("{:?}", case.who), status))
            .or_insert(0) += 1;
        if let Some(failure) = judge(&case, &outcome) {
            let headers: Vec<String> = case
                .headers
                .iter()
                .map(|(name, value)| format!("{name}: {}", &value[..value.len().min(60)]))
                .collect();
            failures.push(format!(
                "{failure}: {:?} {} {} {headers:?} {:?}",
                case.who,
                case.method,
                case.path,
                String::from_utf8_lossy(&case.body[..case.body.len().min(80)])
            ));
        }
    }
    (failures, counts)
}

async fn admin_request(server: &TlsServer, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut sender = connect(server, Some(&server.admin)).await.unwrap();
    let case = Case {
        who: Who::Admin,
        method: match method {
            "POST" => "POST",
            _ => "GET",
        },
        path: path.to_string(),
        headers: vec![("content-type", "application/json".into())],
        body: body.as_bytes().to_vec(),
    };
    let (status, body) = send(&mut sender, &case).await.unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_hostile_requests_cause_no_5xx_and_no_bypass() {
    let ca = pki::generate_ca("test-ca").unwrap();
    let config = ServerConfig {
        rbac: true,
        ..secure_config(&ca)
    };
    let server = start_with(ca, config).await;
    let other_ca = pki::generate_ca("other-ca").unwrap();
    let identities = Identities {
        admin: server.admin.clone(),
        viewer: pki::issue_client(
            &server.ca,
            "viewer",
            &["viewers"],
            Duration::from_secs(3600),
        )
        .unwrap(),
        other_ca: pki::issue_client(
            &other_ca,
            "admin",
            &["system:masters"],
            Duration::from_secs(3600),
        )
        .unwrap(),
        expired: pki::issue_client(&server.ca, "admin", &["system:masters"], Duration::ZERO)
            .unwrap(),
    };
    for (method, path, body) in [
        ("POST", "/api/v1/namespaces", r#"{"metadata":{"name":"a"}}"#.to_string()),
        ("POST", "/api/v1/namespaces", r#"{"metadata":{"name":"b"}}"#.to_string()),
        ("POST", "/api/v1/namespaces", r#"{"metadata":{"name":"c"}}"#.to_string()),
        ("POST", "/api/v1/namespaces/a/configmaps", r#"{"metadata":{"name":"cm"},"data":{"k":"visible"}}"#.to_string()),
        ("POST", "/api/v1/namespaces/b/configmaps", format!(r#"{{"metadata":{{"name":"hidden"}},"data":{{"k":"{B_MARKER}"}}}}"#)),
        ("POST", "/api/v1/namespaces/a/secrets", format!(r#"{{"metadata":{{"name":"s"}},"stringData":{{"k":"{SECRET_MARKER}"}}}}"#)),
        ("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings", r#"{"metadata":{"name":"viewer"},"roleRef":{"kind":"ClusterRole","name":"view","apiGroup":"rbac.authorization.k8s.io"},"subjects":[{"kind":"User","name":"viewer"}]}"#.to_string()),
    ] {
        let (status, text) = admin_request(&server, method, path, &body).await;
        assert_eq!(status, 201, "{path}: {text}");
    }
    // The viewer may read `a` once the binding is in the index.
    let mut viewer = connect(&server, Some(&identities.viewer)).await.unwrap();
    let list_a = Case {
        who: Who::Viewer,
        method: "GET",
        path: "/api/v1/namespaces/a/configmaps".into(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while send(&mut viewer, &list_a).await.unwrap().0 != 200 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the binding never applied"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The expired certificate's end has passed.
    while std::time::SystemTime::now()
        < pki::not_after(
            &pki::parse_certificates(identities.expired.certificate_pem.as_bytes(), "expired")
                .unwrap()[0],
        )
        .unwrap()
            + Duration::from_secs(1)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut rng = StdRng::seed_from_u64(25);
    let mut batches: Vec<Vec<Case>> = (0..WORKERS).map(|_| Vec::new()).collect();
    for index in 0..REQUESTS {
        batches[index % WORKERS].push(generate(&mut rng));
    }
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for (worker_failures, worker_counts) in futures::future::join_all(
        batches
            .into_iter()
            .map(|cases| worker(&server, &identities, cases)),
    )
    .await
    {
        failures.extend(worker_failures);
        for (key, count) in worker_counts {
            *counts.entry(key).or_insert(0) += count;
        }
    }
    eprintln!("outcomes (who, status): {counts:?}");
    // The mix reached every part: allowed reads, refusals, created objects.
    for (who, status) in [
        ("Viewer", 200),
        ("Viewer", 403),
        ("Nobody", 401),
        ("Admin", 201),
        ("Admin", 422),
        ("Admin", 415),
        ("OtherCa", 0),
        ("Expired", 0),
    ] {
        assert!(
            counts.contains_key(&(who.to_string(), status)),
            "no {who} request answered {status}: {counts:?}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {REQUESTS} hostile requests had a wrong outcome; the first:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );

    // Still serving, and `b` holds only what the admin put there.
    let (status, text) = admin_request(&server, "GET", "/api/v1/namespaces/b/configmaps", "").await;
    assert_eq!(status, 200, "{text}");
    let list: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hidden"]);
    let (status, text) =
        admin_request(&server, "GET", "/api/v1/namespaces/a/rolebindings", "").await;
    assert!(status == 404 || status == 200, "{text}");
    let (status, text) = admin_request(
        &server,
        "GET",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings",
        "",
    )
    .await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["items"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "{text}"
    );
}
