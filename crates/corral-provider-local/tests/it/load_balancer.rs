use std::net::SocketAddr;
use std::time::Duration;

use corral_provider_local::host::MachineRequest;
use corral_provider_local::load_balancer::LoadBalancer;
use tokio::io::AsyncReadExt;

use crate::host::{Cleanup, host, serve_hello_on};

async fn ask(address: SocketAddr) -> Result<String, std::io::Error> {
    let mut stream = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::net::TcpStream::connect(address),
    )
    .await??;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// The endpoint on the bridge's gateway forwards to the machines' API server port; a machine
/// deleted (its address gone silent, as a killed machine's) costs no client a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_survives_losing_a_control_plane_machine() {
    let root = tempfile::tempdir().unwrap();
    let host = host(root.path());
    let cluster: &'static str = format!("lb-{}", std::process::id()).leak();
    let _cleanup = Cleanup(host.clone(), cluster);
    let mut machines = Vec::new();
    let mut servers = Vec::new();
    for index in 1..=2 {
        let machine = host
            .create_machine(&MachineRequest {
                uid: uuid::Uuid::new_v4().to_string(),
                namespace: "default".into(),
                name: format!("{cluster}-cp-{index}"),
                cluster_name: cluster.into(),
            })
            .await
            .unwrap();
        servers.push(serve_hello_on(&host, &machine, 6443));
        machines.push(machine);
    }
    let network = host.ensure_network("default", cluster).await.unwrap();
    let balancer = LoadBalancer::start(
        SocketAddr::from((network.gateway, 6443)),
        machines
            .iter()
            .map(|machine| SocketAddr::from((machine.address, 6443)))
            .collect(),
    )
    .await
    .unwrap();
    // Both machines answer through the endpoint once their servers listen.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        if let Ok(answer) = ask(balancer.address()).await
            && !answer.is_empty()
        {
            seen.insert(answer);
        }
        if seen.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen.len(), 2, "{seen:?}");

    host.delete_machine(&machines[0].uid).await.unwrap();
    for _ in 0..20 {
        assert_eq!(
            ask(balancer.address()).await.unwrap(),
            format!("hello from {}", machines[1].name)
        );
    }
    drop(balancer);
    host.delete_machine(&machines[1].uid).await.unwrap();
    host.delete_network("default", cluster).await.unwrap();
}
