//! HTTPS: real clients (kube-rs, and hyper over rustls to see the protocol ALPN chose) against
//! a server with a CA-issued serving certificate on loopback; the certificate is replaced
//! without a restart when it nears its expiry or its files change.

use std::sync::Arc;
use std::time::Duration;

use corral_apiserver::pki::{self, KeyMaterial};
use corral_apiserver::{AuthenticationConfig, Server, ServerConfig, ServingCertificate, TlsConfig};
use corral_store::testing::TestStore;
use http_body_util::BodyExt;
use rustls::pki_types::{CertificateDer, ServerName};

/// A server over HTTPS with its CA, the store it runs on, and an admin client certificate.
pub struct TlsServer {
    pub server: Server,
    pub ca: KeyMaterial,
    pub admin: KeyMaterial,
    _store: TestStore,
}

/// Settings of a server whose certificate `ca` issues for loopback; client certificates of
/// `ca` authenticate.
pub fn tls_config(ca: &KeyMaterial, validity: Duration, renew_before: Duration) -> TlsConfig {
    TlsConfig {
        serving: ServingCertificate::Issued {
            ca: ca.clone(),
            names: vec!["127.0.0.1".into(), "localhost".into()],
            validity,
            renew_before,
            write_to: None,
        },
        client_ca_pem: Some(ca.certificate_pem.clone()),
        check_interval: Duration::from_millis(100),
    }
}

/// HTTPS with `ca`'s certificates, client certificates of `ca` authenticating.
pub fn secure_config(ca: &KeyMaterial) -> ServerConfig {
    ServerConfig {
        tls: Some(tls_config(
            ca,
            pki::CERTIFICATE_VALIDITY,
            Duration::from_secs(3600),
        )),
        authentication: Some(AuthenticationConfig::default()),
        ..ServerConfig::default()
    }
}

pub async fn start_tls(authentication: AuthenticationConfig) -> TlsServer {
    let ca = pki::generate_ca("test-ca").unwrap();
    let config = ServerConfig {
        tls: Some(tls_config(
            &ca,
            pki::CERTIFICATE_VALIDITY,
            Duration::from_secs(3600),
        )),
        authentication: Some(authentication),
        ..ServerConfig::default()
    };
    start_with(ca, config).await
}

pub async fn start_with(ca: KeyMaterial, config: ServerConfig) -> TlsServer {
    let store = corral_store::testing::memory().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = Server::start(listener, store.store.clone(), config)
        .await
        .expect("server starts");
    let admin =
        pki::issue_client(&ca, "admin", &["system:masters"], Duration::from_secs(3600)).unwrap();
    TlsServer {
        server,
        ca,
        admin,
        _store: store,
    }
}

impl TlsServer {
    /// A kube-rs client as the kubeconfig `corral` writes makes it: the CA and `user`'s
    /// client certificate (none: no credentials).
    pub async fn kube_client(&self, user: Option<&KeyMaterial>) -> kube::Client {
        let text = match user {
            Some(user) => corral_apiserver::kubeconfig::render_tls(
                &self.server.url(),
                "test",
                Some(&self.ca.certificate_pem),
                &user.certificate_pem,
                &user.private_key_pem,
            ),
            None => {
                use base64::Engine;
                format!(
                    "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: t\n  context:\n    cluster: t\n    user: u\ncurrent-context: t\n",
                    self.server.url(),
                    base64::engine::general_purpose::STANDARD.encode(&self.ca.certificate_pem)
                )
            }
        };
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// A TLS connection that trusts the CA, offering `alpn` and presenting `user`'s
    /// certificate if given.
    pub async fn connect(
        &self,
        alpn: &[&[u8]],
        user: Option<&KeyMaterial>,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        connect(self.server.local_addr(), &self.ca, alpn, user).await
    }

    /// A GET over a new HTTP/2 connection with `user`'s certificate and `headers`: (status,
    /// body).
    pub async fn get(
        &self,
        path: &str,
        user: Option<&KeyMaterial>,
        headers: &[(&str, &str)],
    ) -> Result<(u16, String), String> {
        let stream = self
            .connect(&[b"h2"], user)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        request_h2(stream, path, headers).await
    }
}

pub async fn connect(
    address: std::net::SocketAddr,
    ca: &KeyMaterial,
    alpn: &[&[u8]],
    user: Option<&KeyMaterial>,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in pki::parse_certificates(ca.certificate_pem.as_bytes(), "ca").unwrap() {
        roots.add(certificate).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match user {
        Some(user) => builder
            .with_client_auth_cert(
                pki::parse_certificates(user.certificate_pem.as_bytes(), "user").unwrap(),
                pki::parse_private_key(user.private_key_pem.as_bytes(), "user").unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(address).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    // With TLS 1.3 a client certificate the server refuses shows only at the first read.
    connector.connect(name, tcp).await
}

pub async fn request_h2(
    stream: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, String), String> {
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
    tokio::spawn(connection);
    let mut request = http::Request::builder().uri(format!("https://127.0.0.1{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(
            request
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap(),
        )
        .await
        .map_err(|e| format!("request: {e}"))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        status,
        String::from_utf8_lossy(&body.to_bytes()).into_owned(),
    ))
}

fn peer_certificate(
    stream: &tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
) -> CertificateDer<'static> {
    stream.get_ref().1.peer_certificates().unwrap()[0]
        .clone()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_and_hyper_work_over_https_with_http2_by_alpn() {
    let tls = start_tls(AuthenticationConfig::default()).await;
    assert!(tls.server.url().starts_with("https://127.0.0.1:"));
    // kube-rs speaks HTTP/1.1 (its hyper client enables only that) with the kubeconfig's CA
    // and client certificate.
    let client = tls.kube_client(Some(&tls.admin)).await;
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    namespaces.get("default").await.unwrap();
    // A client offering h2 gets it by ALPN, and is served over it.
    let stream = tls
        .connect(&[b"h2", b"http/1.1"], Some(&tls.admin))
        .await
        .unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (status, body) = request_h2(stream, "/api/v1/namespaces/default", &[])
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    // One offering only HTTP/1.1 gets that.
    let stream = tls.connect(&[b"http/1.1"], Some(&tls.admin)).await.unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_issued_serving_certificate_is_renewed_without_a_restart() {
    let ca = pki::generate_ca("test-ca").unwrap();
    // Valid for 5 s (4 to 5, as certificates count whole seconds), renewed when less than
    // 2 s is left: not at once, but after 2 to 3 s.
    let started = tokio::time::Instant::now();
    let config = ServerConfig {
        tls: Some(tls_config(
            &ca,
            Duration::from_secs(5),
            Duration::from_secs(2),
        )),
        authentication: Some(AuthenticationConfig::default()),
        ..ServerConfig::default()
    };
    let tls = start_with(ca, config).await;
    let first = tls.connect(&[b"h2"], Some(&tls.admin)).await.unwrap();
    let first_certificate = peer_certificate(&first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        // Each new connection verifies the certificate it is given against the CA.
        let stream = tls.connect(&[b"h2"], Some(&tls.admin)).await.unwrap();
        if peer_certificate(&stream) != first_certificate {
            assert!(
                started.elapsed() > Duration::from_millis(1500),
                "renewed too early"
            );
            let (status, body) = request_h2(stream, "/version", &[]).await.unwrap();
            assert_eq!(status, 200, "{body}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the serving certificate was not renewed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The connection made before keeps working.
    let (status, _) = request_h2(first, "/version", &[]).await.unwrap();
    assert_eq!(status, 200);
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_certificate_files_are_read_again_when_they_change() {
    let ca = pki::generate_ca("test-ca").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (certificate, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let write = |material: &KeyMaterial| {
        std::fs::write(&key, &material.private_key_pem).unwrap();
        std::fs::write(&certificate, &material.certificate_pem).unwrap();
    };
    let names = vec!["127.0.0.1".to_string()];
    write(&pki::issue_serving(&ca, &names, Duration::from_secs(3600)).unwrap());
    let config = ServerConfig {
        tls: Some(TlsConfig {
            serving: ServingCertificate::Files {
                certificate: certificate.clone(),
                key: key.clone(),
            },
            client_ca_pem: Some(ca.certificate_pem.clone()),
            check_interval: Duration::from_millis(100),
        }),
        authentication: Some(AuthenticationConfig::default()),
        ..ServerConfig::default()
    };
    let tls = start_with(ca.clone(), config).await;
    let before = peer_certificate(&tls.connect(&[b"h2"], None).await.unwrap());
    // A modification time that differs even on file systems with coarse timestamps.
    std::thread::sleep(Duration::from_millis(20));
    write(&pki::issue_serving(&ca, &names, Duration::from_secs(3600)).unwrap());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let after = peer_certificate(&tls.connect(&[b"h2"], None).await.unwrap());
        if after != before {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new files were not read"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tls.server.shutdown().await;
}

/// What HTTPS with client certificates costs: ConfigMap creates per second at 64 clients
/// (HTTP/1.1 keep-alive connections, as kube-rs makes them) over HTTPS with the admin's
/// client certificate and over plain HTTP, on the memory and SQLite stores, in one run.
/// `cargo nextest run --release -p corral-apiserver --run-ignored only -E 'test(creates_per_second)' --no-capture`
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement; run it in release"]
async fn creates_per_second_over_https_and_http() {
    for backend in ["memory", "sqlite"] {
        for https in [false, true] {
            let store = match backend {
                "memory" => corral_store::testing::memory().await,
                _ => corral_store::testing::sqlite().await,
            };
            let ca = pki::generate_ca("test-ca").unwrap();
            let mut config = ServerConfig::default();
            if https {
                config.tls = Some(tls_config(
                    &ca,
                    pki::CERTIFICATE_VALIDITY,
                    Duration::from_secs(3600),
                ));
                config.authentication = Some(AuthenticationConfig::default());
            }
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let server = Server::start(listener, store.store.clone(), config)
                .await
                .unwrap();
            let admin =
                pki::issue_client(&ca, "admin", &["system:masters"], Duration::from_secs(3600))
                    .unwrap();
            let rate =
                measure_creates(&server.url(), &ca, &admin, 64, Duration::from_secs(5)).await;
            println!(
                "{backend:>6} {:>5}: {rate:>8.0} creates/s at 64 clients",
                if https { "HTTPS" } else { "HTTP" }
            );
            server.shutdown().await;
            drop(store);
        }
    }
}

async fn measure_creates(
    url: &str,
    ca: &KeyMaterial,
    user: &KeyMaterial,
    clients: usize,
    duration: Duration,
) -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    let mut roots = rustls::RootCertStore::empty();
    for certificate in pki::parse_certificates(ca.certificate_pem.as_bytes(), "ca").unwrap() {
        roots.add(certificate).unwrap();
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(
        pki::parse_certificates(user.certificate_pem.as_bytes(), "user").unwrap(),
        pki::parse_private_key(user.private_key_pem.as_bytes(), "user").unwrap(),
    )
    .unwrap();
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.set_nodelay(true);
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    let client: hyper_util::client::legacy::Client<_, http_body_util::Full<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector);
    let done = Arc::new(AtomicU64::new(0));
    let measuring = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = tokio::time::Instant::now() + Duration::from_secs(1) + duration;
    let mut tasks = Vec::new();
    for worker in 0..clients {
        let (client, done, measuring, url) = (
            client.clone(),
            done.clone(),
            measuring.clone(),
            url.to_string(),
        );
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while tokio::time::Instant::now() < stop {
                n += 1;
                let body = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c-{worker}-{n}"}},"data":{{"k":"v"}}}}"#
                );
                let request = http::Request::post(format!("{url}/api/v1/namespaces/default/configmaps"))
                    .header("content-type", "application/json")
                    .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                    .unwrap();
                let response = client.request(request).await.unwrap();
                assert_eq!(response.status(), 201);
                let _ = response.into_body().collect().await;
                if measuring.load(Ordering::Relaxed) {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // One second of warm-up (connections, handshakes), then the measurement.
    tokio::time::sleep(Duration::from_secs(1)).await;
    measuring.store(true, Ordering::Relaxed);
    let started = tokio::time::Instant::now();
    for task in tasks {
        task.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}
