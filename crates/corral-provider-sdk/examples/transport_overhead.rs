//! What each transport of `corral.provider.v1` costs per machine, in one run: a machine's
//! lifecycle as Corral drives it (CreateMachine, GetMachine, DeleteMachine) against the same
//! trivial provider called in-process (the trait), over gRPC and over HTTP/JSON on loopback.
//! The provider does nothing, so what is measured is the protocol: encoding, the SDK's
//! client and servers, HTTP/2 or HTTP/1.1, the loopback socket.
//!
//! ```text
//! cargo run --release -p corral-provider-sdk --example transport-overhead [-- MACHINES]
//! ```
//!
//! Prints a Markdown table: wall time per machine one machine at a time, machines per second
//! with 32 at once, and the CPU (client and server, one process) per machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use corral_provider_sdk::pbjson_types;
use corral_provider_sdk::v1::{self, MachineState};
use corral_provider_sdk::{Client, ClientConfig, Provider, ProviderError, server};

/// A provider that answers at once: a machine is RUNNING as soon as it is asked for.
struct Nothing;

#[async_trait]
impl Provider for Nothing {
    async fn get_info(&self, _: v1::GetInfoRequest) -> Result<v1::GetInfoResponse, ProviderError> {
        Ok(v1::GetInfoResponse::default())
    }
    async fn reconcile_cluster(
        &self,
        _: v1::ReconcileClusterRequest,
    ) -> Result<v1::ReconcileClusterResponse, ProviderError> {
        Ok(v1::ReconcileClusterResponse::default())
    }
    async fn delete_cluster(
        &self,
        _: v1::DeleteClusterRequest,
    ) -> Result<v1::DeleteClusterResponse, ProviderError> {
        Ok(v1::DeleteClusterResponse { deleted: true })
    }
    async fn create_machine(
        &self,
        request: v1::CreateMachineRequest,
    ) -> Result<v1::Machine, ProviderError> {
        let machine = request.machine.unwrap_or_default();
        Ok(answer(&machine.uid, MachineState::Pending))
    }
    async fn get_machine(
        &self,
        request: v1::GetMachineRequest,
    ) -> Result<v1::Machine, ProviderError> {
        let machine = request.machine.unwrap_or_default();
        Ok(answer(&machine.uid, MachineState::Running))
    }
    async fn delete_machine(
        &self,
        _: v1::DeleteMachineRequest,
    ) -> Result<v1::DeleteMachineResponse, ProviderError> {
        Ok(v1::DeleteMachineResponse { deleted: true })
    }
}

fn answer(uid: &str, state: MachineState) -> v1::Machine {
    v1::Machine {
        provider_id: format!("nothing://{uid}"),
        state: state as i32,
        addresses: vec![v1::Address {
            r#type: "InternalIP".into(),
            address: "10.0.0.1".into(),
        }],
        machine_uid: uid.into(),
        ..Default::default()
    }
}

/// A machine as Corral sends it: its reference, a config, and 2 KiB of bootstrap data.
fn create_request(index: usize) -> v1::CreateMachineRequest {
    let mut config = pbjson_types::Struct::default();
    config.fields.insert(
        "pool".into(),
        pbjson_types::Value::from("rack-1".to_owned()),
    );
    v1::CreateMachineRequest {
        machine: Some(reference(index)),
        config: Some(config),
        bootstrap_data: vec![b'#'; 2048],
        bootstrap_format: "cloud-config".into(),
    }
}

fn reference(index: usize) -> v1::MachineRef {
    v1::MachineRef {
        namespace: "default".into(),
        name: format!("machine-{index}"),
        uid: format!("00000000-0000-0000-0000-{index:012}"),
        cluster_name: "bench".into(),
        ..Default::default()
    }
}

/// One way of calling the provider.
#[derive(Clone)]
enum Caller {
    InProcess(Arc<Nothing>),
    Remote(Client),
}

impl Caller {
    async fn lifecycle(&self, index: usize) {
        let get = v1::GetMachineRequest {
            machine: Some(reference(index)),
            provider_id: String::new(),
        };
        let delete = v1::DeleteMachineRequest {
            machine: Some(reference(index)),
            provider_id: String::new(),
        };
        match self {
            Caller::InProcess(provider) => {
                provider
                    .create_machine(create_request(index))
                    .await
                    .unwrap();
                provider.get_machine(get).await.unwrap();
                provider.delete_machine(delete).await.unwrap();
            }
            Caller::Remote(client) => {
                client.create_machine(create_request(index)).await.unwrap();
                client.get_machine(get).await.unwrap();
                client.delete_machine(delete).await.unwrap();
            }
        }
    }
}

/// CPU time of this process so far (user + system), from `/proc/self/stat`, in clock ticks
/// of 10 ms.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

/// Runs `machines` lifecycles one at a time, then with 32 at once; returns µs per machine
/// (one at a time), machines per second (32 at once) and CPU µs per machine (over both).
async fn measure(caller: &Caller, machines: usize) -> (f64, f64, f64) {
    for index in 0..100 {
        caller.lifecycle(index).await;
    }
    let cpu_start = cpu();
    let start = Instant::now();
    for index in 0..machines {
        caller.lifecycle(index).await;
    }
    let sequential = start.elapsed().as_secs_f64() * 1e6 / machines as f64;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..32 {
        let caller = caller.clone();
        tasks.push(tokio::spawn(async move {
            for index in (worker..machines).step_by(32) {
                caller.lifecycle(index).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let concurrent = machines as f64 / start.elapsed().as_secs_f64();
    let cpu_per_machine = (cpu() - cpu_start).as_secs_f64() * 1e6 / (2 * machines) as f64;
    (sequential, concurrent, cpu_per_machine)
}

#[tokio::main]
async fn main() {
    let machines: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5000);
    let provider = Arc::new(Nothing);
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc_endpoint = format!("grpc://{}", grpc.local_addr().unwrap());
    tokio::spawn(server::serve_grpc(
        provider.clone(),
        grpc,
        std::future::pending(),
    ));
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_endpoint = format!("http://{}", http.local_addr().unwrap());
    tokio::spawn(server::serve_http(
        provider.clone(),
        http,
        std::future::pending(),
    ));

    let callers = [
        ("in-process (trait call)", Caller::InProcess(provider)),
        (
            "gRPC, loopback",
            Caller::Remote(Client::new(&ClientConfig::new(&grpc_endpoint)).unwrap()),
        ),
        (
            "HTTP/JSON, loopback",
            Caller::Remote(Client::new(&ClientConfig::new(&http_endpoint)).unwrap()),
        ),
    ];
    println!(
        "{machines} machine lifecycles (CreateMachine with 2 KiB of bootstrap data, GetMachine, DeleteMachine) per transport\n"
    );
    println!(
        "| transport | µs per machine, one at a time | machines/s, 32 at once | CPU µs per machine (client + server) |"
    );
    println!("|---|---:|---:|---:|");
    for (name, caller) in &callers {
        let (sequential, concurrent, cpu) = measure(caller, machines).await;
        println!("| {name} | {sequential:.1} | {concurrent:.0} | {cpu:.1} |");
    }
}
