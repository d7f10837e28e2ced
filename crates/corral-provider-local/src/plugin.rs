//! The local provider as a `corral.provider.v1` plugin ([`Provider`]), served by
//! `corral provider local`: the contract's reference implementation on real machines.
//!
//! - `ReconcileCluster`: the cluster's network and its control plane endpoint (the
//!   [`LoadBalancer`] on the bridge's gateway, port 6443).
//! - `CreateMachine`: a [`Host`] machine, its bootstrap data (cloud-config only) in its state
//!   directory, and `corral node` started inside it; idempotent by the machine's uid, also
//!   across restarts of the plugin (the machine is found from its record, and an agent is not
//!   started twice: the machine's cgroup says whether it runs).
//! - `GetMachine`: `RUNNING` once the agent wrote kubeadm's success sentinel, `FAILED` when the
//!   agent stopped before it (the message is the agent's last `error:` line), else `PENDING`.
//! - `DeleteMachine`: everything of the machine goes (processes, namespace, veth, cgroup,
//!   state); the endpoint stops sending to it.
//! - `ListMachines`: the recorded machines, and namespaces no record claims (a crash's) as
//!   `FAILED` machines with only their uid, so that Corral can report them as orphans.
//!
//! The endpoint lives in this process: after a restart, the first call about a cluster starts
//! it again.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;
use corral_provider_sdk::{Provider, ProviderError, capabilities, v1};

use crate::host::{Host, HostError, LocalMachine, MachineRequest};
use crate::load_balancer::LoadBalancer;

/// The API server port of control plane machines and of the endpoint.
pub const API_SERVER_PORT: u16 = 6443;

/// kubeadm's success sentinel, under a machine's root.
const SENTINEL: &str = "run/cluster-api/bootstrap-success.complete";

/// What the plugin runs machines with.
#[derive(Clone, Debug)]
pub struct Programs {
    /// The Corral binary, whose `node` command is the node agent.
    pub corral: PathBuf,
    /// The etcd binary control plane machines run.
    pub etcd: PathBuf,
    /// The agents' `--node-monitor-grace-period` (seconds), when not the agent's default.
    pub node_monitor_grace_period: Option<u64>,
    /// The agents' `--node-lease-duration-seconds`, when not the agent's default.
    pub node_lease_duration_seconds: Option<u64>,
}

/// The local provider.
pub struct LocalProvider {
    host: Host,
    programs: Programs,
    /// Each cluster's endpoint, by `(namespace, cluster)`.
    endpoints: Mutex<HashMap<(String, String), LoadBalancer>>,
    /// The agents this process started, by machine uid (kept so that they are reaped).
    agents: Mutex<HashMap<String, tokio::process::Child>>,
}

impl LocalProvider {
    pub fn new(host: Host, programs: Programs) -> LocalProvider {
        LocalProvider {
            host,
            programs,
            endpoints: Mutex::default(),
            agents: Mutex::default(),
        }
    }

    /// The cluster's endpoint, started when missing, sending to its machines.
    async fn ensure_endpoint(
        &self,
        namespace: &str,
        cluster: &str,
    ) -> Result<SocketAddr, ProviderError> {
        let network = self
            .host
            .ensure_network(namespace, cluster)
            .await
            .map_err(host_error)?;
        let backends = self.backends(namespace, cluster, None).await?;
        let key = (namespace.to_owned(), cluster.to_owned());
        if let Some(balancer) = self.endpoints.lock().expect("not poisoned").get(&key) {
            balancer.set_backends(backends);
            return Ok(balancer.address());
        }
        let balancer = LoadBalancer::start_checked(
            SocketAddr::from((network.gateway, API_SERVER_PORT)),
            backends,
        )
        .await
        .map_err(|error| {
            ProviderError::unavailable(format!(
                "cannot listen on {}:{API_SERVER_PORT} for cluster {cluster}'s endpoint: {error}",
                network.gateway
            ))
        })?;
        let address = balancer.address();
        self.endpoints
            .lock()
            .expect("not poisoned")
            .entry(key)
            .or_insert(balancer);
        Ok(address)
    }

    /// The API servers of the cluster's machines, but the one of the machine `except`.
    async fn backends(
        &self,
        namespace: &str,
        cluster: &str,
        except: Option<&str>,
    ) -> Result<Vec<SocketAddr>, ProviderError> {
        Ok(self
            .host
            .machines()
            .await
            .map_err(host_error)?
            .into_iter()
            .filter(|machine| machine.namespace == namespace && machine.cluster_name == cluster)
            .filter(|machine| Some(machine.uid.as_str()) != except)
            .map(|machine| SocketAddr::from((machine.address, API_SERVER_PORT)))
            .collect())
    }

    /// Points the cluster's endpoint, where this process runs one, at its machines now but
    /// the one with uid `except` (a machine being deleted).
    async fn refresh_endpoint(
        &self,
        namespace: &str,
        cluster: &str,
        except: Option<&str>,
    ) -> Result<(), ProviderError> {
        let backends = self.backends(namespace, cluster, except).await?;
        let key = (namespace.to_owned(), cluster.to_owned());
        if let Some(balancer) = self.endpoints.lock().expect("not poisoned").get(&key) {
            balancer.set_backends(backends);
        }
        Ok(())
    }

    /// Starts the machine's agent unless one runs (this process's, or one the machine's cgroup
    /// shows after a restart of the plugin).
    fn ensure_agent(&self, machine: &LocalMachine, version: &str) -> Result<(), ProviderError> {
        let mut agents = self.agents.lock().expect("not poisoned");
        if let Some(agent) = agents.get_mut(&machine.uid)
            && agent.try_wait().ok().flatten().is_none()
        {
            return Ok(());
        }
        let dir = self.host.machine_dir(&machine.uid);
        if agents.get(&machine.uid).is_some()
            || !self
                .host
                .cgroup(&machine.uid)
                .processes()
                .unwrap_or_default()
                .is_empty()
            || dir.join("root").join(SENTINEL).exists()
        {
            // Started before: running, or ended (GetMachine says how).
            return Ok(());
        }
        let log = std::fs::File::create(dir.join("agent.log")).map_err(|error| {
            ProviderError::internal(format!("cannot create the agent's log: {error}"))
        })?;
        let stderr = log
            .try_clone()
            .map_err(|error| ProviderError::internal(error.to_string()))?;
        let mut command = tokio::process::Command::new(&self.programs.corral);
        command
            .arg("node")
            .arg("--bootstrap-data")
            .arg(dir.join("bootstrap-data"))
            .arg("--root")
            .arg(dir.join("root"))
            .args(["--machine-name", &machine.name])
            .args(["--provider-id", &machine.provider_id])
            .args(["--address", &machine.address.to_string()])
            .arg("--etcd")
            .arg(&self.programs.etcd)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(stderr);
        if !version.is_empty() {
            command.args(["--kubernetes-version", version]);
        }
        if let Some(seconds) = self.programs.node_monitor_grace_period {
            command.args(["--node-monitor-grace-period", &seconds.to_string()]);
        }
        if let Some(seconds) = self.programs.node_lease_duration_seconds {
            command.args(["--node-lease-duration-seconds", &seconds.to_string()]);
        }
        let child = self.host.spawn(machine, &mut command).map_err(host_error)?;
        agents.insert(machine.uid.clone(), child);
        Ok(())
    }

    /// The contract's view of a machine.
    fn describe(&self, machine: &LocalMachine) -> v1::Machine {
        let dir = self.host.machine_dir(&machine.uid);
        let (state, message) = if dir.join("root").join(SENTINEL).exists() {
            (v1::MachineState::Running, String::new())
        } else if self.agent_running(machine) {
            (
                v1::MachineState::Pending,
                "the node agent is bootstrapping".into(),
            )
        } else {
            let log = std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default();
            let reason = log
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("error: "))
                .unwrap_or("the node agent stopped before the bootstrap succeeded");
            (v1::MachineState::Failed, reason.to_owned())
        };
        v1::Machine {
            provider_id: machine.provider_id.clone(),
            state: state.into(),
            addresses: vec![
                v1::Address {
                    r#type: "InternalIP".into(),
                    address: machine.address.to_string(),
                },
                v1::Address {
                    r#type: "Hostname".into(),
                    address: machine.name.clone(),
                },
            ],
            failure_domain: String::new(),
            message,
            machine_uid: machine.uid.clone(),
            cluster_name: machine.cluster_name.clone(),
        }
    }

    fn agent_running(&self, machine: &LocalMachine) -> bool {
        let mut agents = self.agents.lock().expect("not poisoned");
        match agents.get_mut(&machine.uid) {
            Some(agent) => agent.try_wait().ok().flatten().is_none(),
            // Started by an earlier run of the plugin: alive while its cgroup has processes.
            None => !self
                .host
                .cgroup(&machine.uid)
                .processes()
                .unwrap_or_default()
                .is_empty(),
        }
    }

    async fn recorded(
        &self,
        machine: Option<&v1::MachineRef>,
    ) -> Result<LocalMachine, ProviderError> {
        let uid = machine
            .map(|machine| machine.uid.as_str())
            .unwrap_or_default();
        self.host
            .machine(uid)
            .await
            .map_err(host_error)?
            .ok_or_else(|| ProviderError::not_found(format!("no local machine has uid {uid:?}")))
    }
}

fn host_error(error: HostError) -> ProviderError {
    ProviderError::unavailable(error.to_string())
}

fn cluster_of(cluster: Option<&v1::ClusterRef>) -> Result<(&str, &str), ProviderError> {
    let cluster =
        cluster.ok_or_else(|| ProviderError::invalid_config("the request names no cluster"))?;
    Ok((cluster.namespace.as_str(), cluster.name.as_str()))
}

#[async_trait]
impl Provider for LocalProvider {
    async fn get_info(&self, _: v1::GetInfoRequest) -> Result<v1::GetInfoResponse, ProviderError> {
        Ok(v1::GetInfoResponse {
            name: "local".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            contract_versions: vec![corral_provider_sdk::CONTRACT_VERSION.into()],
            capabilities: vec![capabilities::LIST_MACHINES.into()],
            ..Default::default()
        })
    }

    async fn reconcile_cluster(
        &self,
        request: v1::ReconcileClusterRequest,
    ) -> Result<v1::ReconcileClusterResponse, ProviderError> {
        let (namespace, cluster) = cluster_of(request.cluster.as_ref())?;
        let endpoint = self.ensure_endpoint(namespace, cluster).await?;
        Ok(v1::ReconcileClusterResponse {
            ready: true,
            control_plane_endpoint: Some(v1::Endpoint {
                host: endpoint.ip().to_string(),
                port: endpoint.port().into(),
            }),
            ..Default::default()
        })
    }

    async fn delete_cluster(
        &self,
        request: v1::DeleteClusterRequest,
    ) -> Result<v1::DeleteClusterResponse, ProviderError> {
        let (namespace, cluster) = cluster_of(request.cluster.as_ref())?;
        self.endpoints
            .lock()
            .expect("not poisoned")
            .remove(&(namespace.to_owned(), cluster.to_owned()));
        self.host
            .delete_cluster(namespace, cluster)
            .await
            .map_err(host_error)?;
        Ok(v1::DeleteClusterResponse { deleted: true })
    }

    async fn create_machine(
        &self,
        request: v1::CreateMachineRequest,
    ) -> Result<v1::Machine, ProviderError> {
        let reference = request
            .machine
            .ok_or_else(|| ProviderError::invalid_config("the request names no machine"))?;
        if !matches!(request.bootstrap_format.as_str(), "" | "cloud-config") {
            return Err(ProviderError::invalid_config(format!(
                "bootstrap format {:?} is not supported by the local provider; use cloud-config",
                request.bootstrap_format
            )));
        }
        if reference.uid.is_empty() {
            return Err(ProviderError::invalid_config("machine.uid is empty"));
        }
        let machine = self
            .host
            .create_machine(&MachineRequest {
                uid: reference.uid.clone(),
                namespace: reference.namespace.clone(),
                name: reference.name.clone(),
                cluster_name: reference.cluster_name.clone(),
            })
            .await
            .map_err(host_error)?;
        let bootstrap = self.host.machine_dir(&machine.uid).join("bootstrap-data");
        if !bootstrap.exists() {
            std::fs::write(&bootstrap, &request.bootstrap_data).map_err(|error| {
                ProviderError::internal(format!("cannot keep the bootstrap data: {error}"))
            })?;
        }
        self.ensure_agent(&machine, &reference.version)?;
        self.ensure_endpoint(&machine.namespace, &machine.cluster_name)
            .await?;
        Ok(self.describe(&machine))
    }

    async fn get_machine(
        &self,
        request: v1::GetMachineRequest,
    ) -> Result<v1::Machine, ProviderError> {
        let machine = self.recorded(request.machine.as_ref()).await?;
        Ok(self.describe(&machine))
    }

    async fn delete_machine(
        &self,
        request: v1::DeleteMachineRequest,
    ) -> Result<v1::DeleteMachineResponse, ProviderError> {
        let Some(reference) = request.machine else {
            return Err(ProviderError::invalid_config(
                "the request names no machine",
            ));
        };
        let recorded = self
            .host
            .machine(&reference.uid)
            .await
            .map_err(host_error)?;
        // The endpoint stops sending new connections to the machine before its API server
        // is killed, so no client is handed one that is going away.
        if let Some(machine) = &recorded {
            self.refresh_endpoint(
                &machine.namespace,
                &machine.cluster_name,
                Some(&machine.uid),
            )
            .await?;
        }
        self.host
            .delete_machine(&reference.uid)
            .await
            .map_err(host_error)?;
        if let Some(mut agent) = self
            .agents
            .lock()
            .expect("not poisoned")
            .remove(&reference.uid)
        {
            let _ = agent.start_kill();
        }
        if let Some(machine) = recorded {
            self.refresh_endpoint(&machine.namespace, &machine.cluster_name, None)
                .await?;
        }
        Ok(v1::DeleteMachineResponse { deleted: true })
    }

    async fn list_machines(
        &self,
        request: v1::ListMachinesRequest,
    ) -> Result<v1::ListMachinesResponse, ProviderError> {
        let mut machines: Vec<v1::Machine> = self
            .host
            .machines()
            .await
            .map_err(host_error)?
            .iter()
            .filter(|machine| {
                request.cluster_name.is_empty() || machine.cluster_name == request.cluster_name
            })
            .map(|machine| self.describe(machine))
            .collect();
        if request.cluster_name.is_empty() {
            for uid in self.host.orphans().await.map_err(host_error)? {
                machines.push(v1::Machine {
                    state: v1::MachineState::Failed.into(),
                    message:
                        "a network namespace of the local provider that no machine record claims"
                            .into(),
                    machine_uid: uid,
                    ..Default::default()
                });
            }
        }
        Ok(v1::ListMachinesResponse { machines })
    }
}
