//! Every call of the contract over both transports, between the SDK's servers and its client
//! on loopback: answers, errors with their codes and retry-after, idempotency by machine uid,
//! deadlines, garbage answers, the canonical JSON on the wire, and endpoint refusals.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use corral_provider_sdk::v1::{self, MachineState};
use corral_provider_sdk::{
    CallFailure, Client, ClientConfig, EndpointError, Provider, ProviderError, server,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A provider holding machines in memory, by uid; `slow` never answers GetMachine.
#[derive(Default)]
struct Pool {
    machines: Mutex<BTreeMap<String, v1::Machine>>,
    created: Mutex<u32>,
}

#[async_trait]
impl Provider for Pool {
    async fn get_info(&self, _: v1::GetInfoRequest) -> Result<v1::GetInfoResponse, ProviderError> {
        Ok(v1::GetInfoResponse {
            name: "pool".into(),
            version: "0.1.0".into(),
            contract_versions: vec![corral_provider_sdk::CONTRACT_VERSION.into()],
            capabilities: vec![corral_provider_sdk::capabilities::LIST_MACHINES.into()],
            ..Default::default()
        })
    }

    async fn reconcile_cluster(
        &self,
        request: v1::ReconcileClusterRequest,
    ) -> Result<v1::ReconcileClusterResponse, ProviderError> {
        let config = request.config.unwrap_or_default();
        if config.fields.contains_key("unavailable") {
            return Err(ProviderError::unavailable("the pool is being serviced")
                .retry_after(Duration::from_secs(7)));
        }
        Ok(v1::ReconcileClusterResponse {
            ready: true,
            failure_domains: vec![v1::FailureDomain {
                name: "rack-1".into(),
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
        if request.bootstrap_data.is_empty() {
            return Err(ProviderError::invalid_config("no bootstrap data"));
        }
        let mut machines = self.machines.lock().unwrap();
        let created = &self.created;
        Ok(machines
            .entry(machine.uid.clone())
            .or_insert_with(|| {
                *created.lock().unwrap() += 1;
                v1::Machine {
                    provider_id: format!("pool://{}", machine.name),
                    state: MachineState::Running as i32,
                    addresses: vec![v1::Address {
                        r#type: "InternalIP".into(),
                        address: "10.0.0.1".into(),
                    }],
                    machine_uid: machine.uid.clone(),
                    cluster_name: machine.cluster_name.clone(),
                    ..Default::default()
                }
            })
            .clone())
    }

    async fn get_machine(
        &self,
        request: v1::GetMachineRequest,
    ) -> Result<v1::Machine, ProviderError> {
        let uid = request.machine.unwrap_or_default().uid;
        if uid == "slow" {
            std::future::pending::<()>().await;
        }
        self.machines
            .lock()
            .unwrap()
            .get(&uid)
            .cloned()
            .ok_or_else(|| ProviderError::not_found(format!("no machine with uid {uid}")))
    }

    async fn delete_machine(
        &self,
        request: v1::DeleteMachineRequest,
    ) -> Result<v1::DeleteMachineResponse, ProviderError> {
        let uid = request.machine.unwrap_or_default().uid;
        self.machines.lock().unwrap().remove(&uid);
        Ok(v1::DeleteMachineResponse { deleted: true })
    }

    async fn list_machines(
        &self,
        _: v1::ListMachinesRequest,
    ) -> Result<v1::ListMachinesResponse, ProviderError> {
        Ok(v1::ListMachinesResponse {
            machines: self.machines.lock().unwrap().values().cloned().collect(),
        })
    }
}

/// Serves a fresh [`Pool`] over `scheme` on a free loopback port; the endpoint and the pool.
async fn start(scheme: &str) -> (String, Arc<Pool>) {
    let pool = Arc::new(Pool::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let serving = pool.clone();
    match scheme {
        "grpc" => {
            tokio::spawn(server::serve_grpc(
                serving,
                listener,
                std::future::pending(),
            ));
        }
        _ => {
            tokio::spawn(server::serve_http(
                serving,
                listener,
                std::future::pending(),
            ));
        }
    }
    (format!("{scheme}://{address}"), pool)
}

fn client(endpoint: &str) -> Client {
    let mut config = ClientConfig::new(endpoint);
    config.timeout = Duration::from_secs(5);
    Client::new(&config).unwrap()
}

fn machine_ref(uid: &str) -> Option<v1::MachineRef> {
    Some(v1::MachineRef {
        namespace: "default".into(),
        name: format!("m-{uid}"),
        uid: uid.into(),
        cluster_name: "c1".into(),
        ..Default::default()
    })
}

/// The same scenario over each transport.
async fn every_call(scheme: &str) {
    let (endpoint, pool) = start(scheme).await;
    let client = client(&endpoint);

    let info = client.get_info(v1::GetInfoRequest {}).await.unwrap();
    assert_eq!(info.name, "pool");
    assert_eq!(info.contract_versions, ["v1"]);

    let cluster = client
        .reconcile_cluster(v1::ReconcileClusterRequest::default())
        .await
        .unwrap();
    assert!(cluster.ready);
    assert_eq!(cluster.failure_domains[0].name, "rack-1");

    // Idempotent by uid: two calls, one machine.
    let create = v1::CreateMachineRequest {
        machine: machine_ref("u1"),
        bootstrap_data: b"#cloud-config\n".to_vec(),
        bootstrap_format: "cloud-config".into(),
        ..Default::default()
    };
    let first = client.create_machine(create.clone()).await.unwrap();
    let second = client.create_machine(create).await.unwrap();
    assert_eq!(first, second);
    assert_eq!(first.provider_id, "pool://m-u1");
    assert_eq!(first.state(), MachineState::Running);
    assert_eq!(*pool.created.lock().unwrap(), 1);

    let listed = client
        .list_machines(v1::ListMachinesRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.machines.len(), 1);
    assert_eq!(listed.machines[0].machine_uid, "u1");

    // Errors keep their class, message and retry-after.
    let invalid = client
        .create_machine(v1::CreateMachineRequest {
            machine: machine_ref("u2"),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(invalid.method, "CreateMachine");
    match &invalid.failure {
        CallFailure::Provider(error) => {
            assert_eq!(error.code, v1::ErrorCode::InvalidConfig);
            assert_eq!(error.message, "no bootstrap data");
        }
        other => panic!("expected the provider's error, got {other:?}"),
    }
    let mut config = pbjson_types::Struct::default();
    config
        .fields
        .insert("unavailable".into(), pbjson_types::Value::from(true));
    let unavailable = client
        .reconcile_cluster(v1::ReconcileClusterRequest {
            config: Some(config),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unavailable.retry_after(), Some(Duration::from_secs(7)));

    client
        .delete_machine(v1::DeleteMachineRequest {
            machine: machine_ref("u1"),
            provider_id: first.provider_id.clone(),
        })
        .await
        .unwrap();
    let gone = client
        .get_machine(v1::GetMachineRequest {
            machine: machine_ref("u1"),
            provider_id: first.provider_id,
        })
        .await
        .unwrap_err();
    assert!(gone.is_not_found(), "{gone}");

    // An optional method the provider does not implement.
    let reboot = client
        .reboot_machine(v1::RebootMachineRequest::default())
        .await
        .unwrap_err();
    assert!(
        reboot
            .to_string()
            .contains("does not implement RebootMachine"),
        "{reboot}"
    );

    // The deadline: a call the provider never answers fails as a timeout.
    let mut config = ClientConfig::new(&endpoint);
    config.timeout = Duration::from_millis(300);
    let impatient = Client::new(&config).unwrap();
    let slow = impatient
        .get_machine(v1::GetMachineRequest {
            machine: machine_ref("slow"),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(slow.failure, CallFailure::Timeout(_)), "{slow}");
}

#[tokio::test]
async fn every_call_over_grpc() {
    every_call("grpc").await;
}

#[tokio::test]
async fn every_call_over_http() {
    every_call("http").await;
}

/// One raw HTTP/1.1 exchange: the status line and the body.
async fn raw_post(endpoint: &str, path: &str, body: &str) -> (String, String) {
    let address = endpoint.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer.lines().next().unwrap_or_default().to_string();
    let body = answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (status, body)
}

#[tokio::test]
async fn http_speaks_the_canonical_json() {
    let (endpoint, _) = start("http").await;
    // lowerCamelCase in, bytes as base64, enums by name out.
    let (status, body) = raw_post(
        &endpoint,
        "/CreateMachine",
        r#"{"machine": {"uid": "u9", "name": "m9", "clusterName": "c1"}, "bootstrapData": "I2Nsb3VkLWNvbmZpZwo=", "config": {"pool": "rack-1"}}"#,
    )
    .await;
    assert!(status.contains("200"), "{status} {body}");
    let machine: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(machine["providerId"], "pool://m9");
    assert_eq!(machine["state"], "RUNNING");
    assert_eq!(machine["machineUid"], "u9");
    assert_eq!(machine["addresses"][0]["type"], "InternalIP");

    // An error is a non-2xx answer with the contract's body.
    let (status, body) =
        raw_post(&endpoint, "/GetMachine", r#"{"machine": {"uid": "nope"}}"#).await;
    assert!(status.contains("404"), "{status}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["code"], "NOT_FOUND");
    assert_eq!(error["message"], "no machine with uid nope");

    let (status, body) = raw_post(&endpoint, "/GetMachine", "{not json").await;
    assert!(status.contains("500"), "{status}");
    assert!(body.contains("\"code\":\"INTERNAL\""), "{body}");
    let (status, _) = raw_post(&endpoint, "/Frobnicate", "{}").await;
    assert!(status.contains("501"), "{status}");
}

#[tokio::test]
async fn garbage_and_silence_are_named() {
    // A server that answers 200 with something that is not a message.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer).await;
            let _ = stream
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\n<garbage>",
                )
                .await;
        }
    });
    let garbage = client(&format!("http://{address}"))
        .get_info(v1::GetInfoRequest {})
        .await
        .unwrap_err();
    assert!(
        matches!(garbage.failure, CallFailure::Garbage(_)),
        "{garbage}"
    );
    assert!(
        garbage.to_string().starts_with("GetInfo: answered garbage"),
        "{garbage}"
    );

    // Nothing listening.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    for scheme in ["http", "grpc"] {
        let down = client(&format!("{scheme}://127.0.0.1:{port}"))
            .get_info(v1::GetInfoRequest {})
            .await
            .unwrap_err();
        assert!(
            matches!(down.failure, CallFailure::Unreachable(_)),
            "{scheme}: {down}"
        );
    }
}

#[tokio::test]
async fn plain_endpoints_off_loopback_need_insecure() {
    let refused = Client::new(&ClientConfig::new("http://10.1.2.3:9000")).err();
    assert!(
        matches!(refused, Some(EndpointError::Insecure(..))),
        "{refused:?}"
    );
    let refused = Client::new(&ClientConfig::new("grpc://provider.example:9000")).err();
    assert!(
        matches!(refused, Some(EndpointError::Insecure(..))),
        "{refused:?}"
    );
    let mut config = ClientConfig::new("http://10.1.2.3:9000");
    config.insecure = true;
    assert!(Client::new(&config).is_ok());
    for loopback in ["http://127.0.0.1:1", "grpc://[::1]:1", "http://localhost:1"] {
        assert!(
            Client::new(&ClientConfig::new(loopback)).is_ok(),
            "{loopback}"
        );
    }
    let scheme = Client::new(&ClientConfig::new("ftp://127.0.0.1:1")).err();
    assert!(
        matches!(scheme, Some(EndpointError::Scheme(..))),
        "{scheme:?}"
    );
    let bundle = Client::new(&ClientConfig {
        ca_bundle: Some("not base64!".into()),
        ..ClientConfig::new("https://provider.example")
    })
    .err();
    assert!(
        matches!(bundle, Some(EndpointError::CaBundle(..))),
        "{bundle:?}"
    );
}
