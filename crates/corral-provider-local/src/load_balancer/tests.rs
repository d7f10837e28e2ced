use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

/// A backend that answers every connection with its name.
async fn backend(name: &'static str) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream.write_all(name.as_bytes()).await;
        }
    });
    (address, task)
}

/// A port nothing listens on: connections are refused.
async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

async fn ask(address: SocketAddr) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test]
async fn connections_take_the_backends_in_turn() {
    let (one, _one) = backend("one").await;
    let (two, _two) = backend("two").await;
    let balancer = LoadBalancer::start("127.0.0.1:0".parse().unwrap(), vec![one, two])
        .await
        .unwrap();
    let mut answers = Vec::new();
    for _ in 0..4 {
        answers.push(ask(balancer.address()).await);
    }
    assert_eq!(answers, ["one", "two", "one", "two"]);
}

#[tokio::test]
async fn a_backend_that_refuses_is_set_aside_and_no_client_sees_it() {
    let dead = closed_port().await;
    let (live, _live) = backend("live").await;
    let balancer = LoadBalancer::start("127.0.0.1:0".parse().unwrap(), vec![dead, live])
        .await
        .unwrap();
    for _ in 0..6 {
        assert_eq!(ask(balancer.address()).await, "live");
    }
    let backends = balancer.backends.lock().unwrap();
    assert!(
        backends.aside_until[0].is_some(),
        "the dead backend is set aside"
    );
    assert!(backends.aside_until[1].is_none());
}

/// A backend that answers what a client sends with its name.
async fn replying_backend(name: &'static str) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = [0u8; 64];
            if stream.read(&mut buffer).await.is_ok_and(|read| read > 0) {
                let _ = stream.write_all(name.as_bytes()).await;
            }
        }
    });
    (address, task)
}

/// A backend that accepts, reads what the client sends and closes without an answer, as an
/// API server killed at that moment does.
async fn dying_backend() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = [0u8; 64];
            let _ = stream.read(&mut buffer).await;
        }
    });
    (address, task)
}

#[tokio::test]
async fn a_backend_that_closes_before_answering_is_replaced_and_no_client_sees_it() {
    let (dying, _dying) = dying_backend().await;
    let (live, _live) = replying_backend("live").await;
    let balancer = LoadBalancer::start("127.0.0.1:0".parse().unwrap(), vec![dying, live])
        .await
        .unwrap();
    for _ in 0..4 {
        let mut stream = TcpStream::connect(balancer.address()).await.unwrap();
        stream.write_all(b"hello").await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert_eq!(
            answer, "live",
            "the client's bytes went on to the live backend"
        );
    }
}

#[tokio::test]
async fn backends_are_replaced_and_without_any_the_connection_closes() {
    let (one, _one) = backend("one").await;
    let (two, _two) = backend("two").await;
    let balancer = LoadBalancer::start("127.0.0.1:0".parse().unwrap(), vec![one])
        .await
        .unwrap();
    assert_eq!(ask(balancer.address()).await, "one");
    balancer.set_backends(vec![two]);
    assert_eq!(ask(balancer.address()).await, "two");
    balancer.set_backends(vec![]);
    assert_eq!(
        ask(balancer.address()).await,
        "",
        "closed without an answer"
    );
}

#[tokio::test]
async fn a_set_aside_backend_comes_back_when_it_accepts_again() {
    let port = closed_port().await;
    let (live, _live) = backend("live").await;
    let balancer = LoadBalancer::start("127.0.0.1:0".parse().unwrap(), vec![port, live])
        .await
        .unwrap();
    assert_eq!(ask(balancer.address()).await, "live");
    assert!(balancer.backends.lock().unwrap().aside_until[0].is_some());
    // The machine is back: its API server listens on the address again.
    let listener = TcpListener::bind(port).await.unwrap();
    let _back = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream.write_all(b"back").await;
        }
    });
    for _ in 0..100 {
        if balancer.backends.lock().unwrap().aside_until[0].is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut answers = Vec::new();
    for _ in 0..2 {
        answers.push(ask(balancer.address()).await);
    }
    answers.sort();
    assert_eq!(answers, ["back", "live"]);
}

/// An API server stand-in over TLS: `GET /readyz` answers `ready`'s status, any other request
/// 200 with its name.
async fn api_server(
    name: &'static str,
    ready: Arc<std::sync::atomic::AtomicU16>,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, ready) = (acceptor.clone(), ready.clone());
            tokio::spawn(async move {
                let Ok(mut stream) = acceptor.accept(stream).await else {
                    return;
                };
                let mut request = vec![0u8; 1024];
                let Ok(read) = stream.read(&mut request).await else {
                    return;
                };
                let answer = if request[..read].starts_with(b"GET /readyz ") {
                    let status = ready.load(std::sync::atomic::Ordering::SeqCst);
                    format!("HTTP/1.1 {status} -\r\nConnection: close\r\n\r\n")
                } else {
                    format!("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{name}")
                };
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (address, task)
}

/// A request through the balancer, over TLS; the answer's body.
async fn ask_tls(address: SocketAddr) -> String {
    let tcp = TcpStream::connect(address).await.unwrap();
    let mut stream = tokio_rustls::TlsConnector::from(Arc::new(check_tls()))
        .connect(
            rustls::pki_types::ServerName::IpAddress(address.ip().into()),
            tcp,
        )
        .await
        .unwrap();
    stream
        .write_all(b"GET /name HTTP/1.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8(answer).unwrap();
    answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

async fn until_unready(balancer: &LoadBalancer, index: usize, unready: bool) {
    for _ in 0..100 {
        if balancer.backends.lock().unwrap().unready[index] == unready {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("backend {index} did not become unready={unready}");
}

#[tokio::test]
async fn a_backend_whose_api_server_is_not_ready_gets_no_connections_until_it_is() {
    use std::sync::atomic::{AtomicU16, Ordering};
    let ready_one = Arc::new(AtomicU16::new(200));
    let ready_two = Arc::new(AtomicU16::new(500));
    let (one, _one) = api_server("one", ready_one).await;
    let (two, _two) = api_server("two", ready_two.clone()).await;
    let balancer = LoadBalancer::start_checked("127.0.0.1:0".parse().unwrap(), vec![one, two])
        .await
        .unwrap();
    until_unready(&balancer, 1, true).await;
    for _ in 0..4 {
        assert_eq!(ask_tls(balancer.address()).await, "one");
    }
    ready_two.store(200, Ordering::SeqCst);
    until_unready(&balancer, 1, false).await;
    let mut answers = Vec::new();
    for _ in 0..2 {
        answers.push(ask_tls(balancer.address()).await);
    }
    answers.sort();
    assert_eq!(answers, ["one", "two"]);
}
