//! Limits with real sockets over HTTPS: in-flight mutating and read-only requests beyond
//! their limits get kube's 429 with `Retry-After: 1` (watches and `system:masters` not
//! counted), watches per user are capped, a body over 3 MiB is 413, and a client that does
//! not finish its headers (slowloris) is disconnected.

use std::time::Duration;

use corral_apiserver::ServerConfig;
use corral_apiserver::limits::LimitsConfig;
use corral_apiserver::pki::{self, KeyMaterial};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::tls::{TlsServer, secure_config, start_with};

type Stream = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

async fn start(limits: LimitsConfig) -> (TlsServer, KeyMaterial) {
    let ca = pki::generate_ca("test-ca").unwrap();
    let config = ServerConfig {
        limits,
        ..secure_config(&ca)
    };
    let bob = pki::issue_client(&ca, "bob", &["developers"], Duration::from_secs(3600)).unwrap();
    (start_with(ca, config).await, bob)
}

async fn open(server: &TlsServer, user: &KeyMaterial) -> Stream {
    server.connect(&[b"http/1.1"], Some(user)).await.unwrap()
}

/// Reads until the end of the response's headers: (status, headers).
async fn read_head(stream: &mut Stream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).await.unwrap();
        assert_eq!(
            read,
            1,
            "connection closed in the headers: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head)
}

/// One request on its own connection (closed after it): (status, headers, body).
async fn request(
    server: &TlsServer,
    user: &KeyMaterial,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, String, String) {
    let mut stream = open(server, user).await;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let (status, head) = read_head(&mut stream).await;
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest).await;
    (status, head, String::from_utf8_lossy(&rest).into_owned())
}

fn configmap(name: &str) -> Vec<u8> {
    format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}"#)
        .into_bytes()
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn assert_too_many_requests(status: u16, head: &str, body: &str) {
    assert_eq!(status, 429, "{head}{body}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 1\r\n"),
        "{head}"
    );
    let status: serde_json::Value = serde_json::from_str(body.trim()).unwrap_or_else(|_| {
        // Chunked: the JSON is between the chunk sizes.
        let start = body.find('{').unwrap();
        let end = body.rfind('}').unwrap();
        serde_json::from_str(&body[start..=end]).unwrap()
    });
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(
        status["message"],
        "Too many requests, please try again later."
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_in_flight_limits_get_429() {
    let (server, bob) = start(LimitsConfig {
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 1,
        ..LimitsConfig::default()
    })
    .await;
    // A create whose body comes slowly holds the one mutating slot.
    let mut slow = open(&server, &bob).await;
    let body = configmap("slow");
    let head = format!(
        "POST {CONFIGMAPS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body[..5]).await.unwrap();
    slow.flush().await.unwrap();

    // Another create is refused once the slow one holds the slot (a body that is no object:
    // admitted, it would be 400, never created).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, head, text) = request(&server, &bob, "POST", CONFIGMAPS, b"[]").await;
        if status == 429 {
            assert_too_many_requests(status, &head, &text);
            break;
        }
        assert_eq!(status, 400, "{head}{text}");
        assert!(tokio::time::Instant::now() < deadline, "never 429");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Reads have their own slots; watches take none of them.
    let mut watches = Vec::new();
    for _ in 0..3 {
        let mut watch = open(&server, &bob).await;
        watch
            .write_all(
                format!("GET {CONFIGMAPS}?watch=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .unwrap();
        assert_eq!(read_head(&mut watch).await.0, 200);
        watches.push(watch);
    }
    let (status, head, text) = request(&server, &bob, "GET", CONFIGMAPS, b"").await;
    assert_eq!(status, 200, "{head}{text}");
    // system:masters is not limited.
    let admin = server.admin.clone();
    let (status, head, text) =
        request(&server, &admin, "POST", CONFIGMAPS, &configmap("by-admin")).await;
    assert_eq!(status, 201, "{head}{text}");

    // The slow create completes, and its slot is free again.
    slow.write_all(&body[5..]).await.unwrap();
    let (status, head) = read_head(&mut slow).await;
    assert_eq!(status, 201, "{head}");
    let (status, head, text) =
        request(&server, &bob, "POST", CONFIGMAPS, &configmap("after")).await;
    assert_eq!(status, 201, "{head}{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_per_user_are_capped() {
    let (server, bob) = start(LimitsConfig {
        max_watches_per_user: 2,
        ..LimitsConfig::default()
    })
    .await;
    let watch = |server: &TlsServer| {
        let bob = bob.clone();
        let address = server.server.local_addr();
        let ca = server.ca.clone();
        async move {
            let mut stream = crate::tls::connect(address, &ca, &[b"http/1.1"], Some(&bob))
                .await
                .unwrap();
            stream
                .write_all(
                    format!("GET {CONFIGMAPS}?watch=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                        .as_bytes(),
                )
                .await
                .unwrap();
            let (status, head) = read_head(&mut stream).await;
            (status, head, stream)
        }
    };
    let (first, _, first_stream) = watch(&server).await;
    let (second, _, _second_stream) = watch(&server).await;
    assert_eq!((first, second), (200, 200));
    let (third, head, _) = watch(&server).await;
    assert_eq!(third, 429, "{head}");
    // A watch that ends gives its place back.
    drop(first_stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, _stream) = watch(&server).await;
        if status == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the watch's place never came back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_3_mib_is_413() {
    let (server, bob) = start(LimitsConfig::default()).await;
    let mut body =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":""#
            .to_vec();
    body.extend(std::iter::repeat_n(b'x', 3 * 1024 * 1024));
    body.extend(br#""}}"#);
    let (status, head, text) = request(&server, &bob, "POST", CONFIGMAPS, &body).await;
    assert_eq!(status, 413, "{head}{text}");
    assert!(
        text.contains(r#""reason":"RequestEntityTooLarge""#),
        "{text}"
    );
    let (status, _, _) = request(&server, &bob, "GET", &format!("{CONFIGMAPS}/big"), b"").await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_connection_is_dropped() {
    let (server, bob) = start(LimitsConfig {
        header_read_timeout: Duration::from_millis(500),
        ..LimitsConfig::default()
    })
    .await;
    // Headers that never end.
    let mut stream = open(&server, &bob).await;
    stream
        .write_all(b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buffer))
        .await
        .expect("the server never dropped the connection");
    // A 408 then the close, or the close alone.
    if let Ok(read) = read
        && read > 0
    {
        let text = String::from_utf8_lossy(&buffer[..read]).into_owned();
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    }
    // An idle keep-alive connection goes the same way.
    let mut idle = open(&server, &bob).await;
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    assert_eq!(read_head(&mut idle).await.0, 200);
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(30), idle.read_to_end(&mut rest)).await;
    assert!(ended.is_ok(), "the idle connection was never dropped");
}
