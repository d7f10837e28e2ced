//! A pool of machines as a Corral infrastructure provider, over gRPC, on `corral-provider-sdk`:
//! the [`Provider`] trait implemented in memory, served with `serve_grpc`.
//!
//! ```text
//! cargo run -p corral-infra-plugin --example rust-grpc-provider -- --listen 127.0.0.1:9001 --size 8
//! ```
//!
//! then register it with a ProviderPlugin whose `spec.endpoint` is `grpc://127.0.0.1:9001`.
//! Machines are kept by the Machine's uid, so a repeated CreateMachine answers the machine
//! already made; a new machine is PENDING until the first GetMachine, then RUNNING.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use corral_provider_sdk::v1::{self, MachineState};
use corral_provider_sdk::{Provider, ProviderError, capabilities, server};

/// The pool: `size` slots, each holding at most one machine.
struct Pool {
    size: usize,
    /// Machines by the Machine's uid.
    machines: Mutex<BTreeMap<String, v1::Machine>>,
}

#[async_trait]
impl Provider for Pool {
    async fn get_info(&self, _: v1::GetInfoRequest) -> Result<v1::GetInfoResponse, ProviderError> {
        Ok(v1::GetInfoResponse {
            name: "rust-pool".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            contract_versions: vec![corral_provider_sdk::CONTRACT_VERSION.into()],
            capabilities: vec![capabilities::LIST_MACHINES.into()],
            ..Default::default()
        })
    }

    async fn reconcile_cluster(
        &self,
        _: v1::ReconcileClusterRequest,
    ) -> Result<v1::ReconcileClusterResponse, ProviderError> {
        Ok(v1::ReconcileClusterResponse {
            ready: true,
            failure_domains: vec![v1::FailureDomain {
                name: "zone-a".into(),
                control_plane: true,
            }],
            ..Default::default()
        })
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
        if machine.uid.is_empty() {
            return Err(ProviderError::invalid_config("machine.uid is required"));
        }
        let mut machines = self.machines.lock().unwrap();
        if let Some(existing) = machines.get(&machine.uid) {
            return Ok(existing.clone());
        }
        let taken: Vec<&str> = machines.values().map(|m| m.provider_id.as_str()).collect();
        let Some(slot) = (0..self.size)
            .map(|slot| format!("pool://slot-{slot}"))
            .find(|id| !taken.contains(&id.as_str()))
        else {
            return Err(
                ProviderError::unavailable("every slot of the pool is taken")
                    .retry_after(std::time::Duration::from_secs(5)),
            );
        };
        let created = v1::Machine {
            provider_id: slot.clone(),
            state: MachineState::Pending as i32,
            addresses: vec![v1::Address {
                r#type: "Hostname".into(),
                address: machine.name.clone(),
            }],
            failure_domain: "zone-a".into(),
            machine_uid: machine.uid.clone(),
            cluster_name: machine.cluster_name.clone(),
            ..Default::default()
        };
        machines.insert(machine.uid, created.clone());
        Ok(created)
    }

    async fn get_machine(
        &self,
        request: v1::GetMachineRequest,
    ) -> Result<v1::Machine, ProviderError> {
        let uid = request.machine.unwrap_or_default().uid;
        let mut machines = self.machines.lock().unwrap();
        let machine = machines
            .get_mut(&uid)
            .ok_or_else(|| ProviderError::not_found(format!("no machine with uid {uid}")))?;
        machine.state = MachineState::Running as i32;
        Ok(machine.clone())
    }

    async fn delete_machine(
        &self,
        request: v1::DeleteMachineRequest,
    ) -> Result<v1::DeleteMachineResponse, ProviderError> {
        let uid = request.machine.unwrap_or_default().uid;
        let mut machines = self.machines.lock().unwrap();
        machines.remove(&uid);
        if !request.provider_id.is_empty() {
            machines.retain(|_, machine| machine.provider_id != request.provider_id);
        }
        Ok(v1::DeleteMachineResponse { deleted: true })
    }

    async fn list_machines(
        &self,
        request: v1::ListMachinesRequest,
    ) -> Result<v1::ListMachinesResponse, ProviderError> {
        let machines = self.machines.lock().unwrap();
        Ok(v1::ListMachinesResponse {
            machines: machines
                .values()
                .filter(|m| {
                    request.cluster_name.is_empty() || m.cluster_name == request.cluster_name
                })
                .cloned()
                .collect(),
        })
    }
}

#[tokio::main]
async fn main() {
    let mut listen = "127.0.0.1:9001".to_owned();
    let mut size = 8;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => listen = args.next().expect("--listen takes host:port"),
            "--size" => {
                size = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--size takes a number")
            }
            other => {
                eprintln!("unknown argument {other}; use --listen host:port --size N");
                std::process::exit(2);
            }
        }
    }
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .unwrap_or_else(|error| panic!("listening on {listen}: {error}"));
    println!("listening on grpc://{}", listener.local_addr().unwrap());
    let pool = Arc::new(Pool {
        size,
        machines: Mutex::new(BTreeMap::new()),
    });
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    if let Err(error) = server::serve_grpc(pool, listener, shutdown).await {
        eprintln!("{error}");
        std::process::exit(1);
    }
}
