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
