//! End to end: the core controllers and the plugin controllers against a real management
//! plane (a Corral API server with the core and plugin CRDs), calling an example provider of
//! `examples/` that runs as its own process — the Python one over HTTP
//! (`examples/python-http-provider/provider.py`, standard library only) and the Rust one over
//! gRPC (`examples/rust-grpc-provider`, built with the tests). The test writes only what a
//! user writes and reads what the controllers and the provider report.
//!
//! The scenario: register the provider (its ProviderPlugin turns Ready), create a Cluster on a
//! PluginCluster with a MachineDeployment on a PluginMachineTemplate, scale it, roll it to a
//! new template, delete the Cluster; at each step the provider holds exactly the Machines
//! core has (by uid), and nothing when the Cluster is gone. The examples register no Nodes,
//! so Machines go as far as Provisioned (providerID, addresses, infrastructure ready), and the
//! rollout is allowed to take every Machine down at once.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use corral_api::{Cluster, Machine, MachineDeployment, MachinePhase};
use corral_provider_sdk::v1;
use corral_testenv::TestEnv;
use futures::FutureExt;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::eventually;

const NAMESPACE: &str = "default";
const GROUP: &str = "infrastructure.corral.dev";
const CLUSTER: &str = "metal";
const DEPLOYMENT: &str = "metal-md-0";
const PLUGIN: &str = "pool";

/// An example provider running as a process, killed when dropped.
pub(super) struct ProviderProcess {
    pub(super) endpoint: String,
    _child: Child,
}

impl ProviderProcess {
    /// Starts `command` and reads the endpoint from its first line, `listening on <url>`.
    async fn start(mut command: Command) -> ProviderProcess {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the example provider starts");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).await.unwrap();
        let endpoint = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the provider printed {line:?}"))
            .to_owned();
        ProviderProcess {
            endpoint,
            _child: child,
        }
    }

    /// The Python provider over HTTP, with `args` added.
    pub(super) async fn python(args: &[&str]) -> ProviderProcess {
        let script = repository().join("examples/python-http-provider/provider.py");
        let mut command = Command::new("python3");
        command
            .arg(script)
            .args(["--listen", "127.0.0.1:0"])
            .args(args);
        Self::start(command).await
    }

    /// The Rust provider over gRPC.
    pub(super) async fn rust() -> ProviderProcess {
        let mut command = Command::new(example_binary("rust-grpc-provider"));
        command.args(["--listen", "127.0.0.1:0", "--size", "16"]);
        Self::start(command).await
    }

    /// A client of the provider, to see what it holds.
    pub(super) fn client(&self) -> corral_provider_sdk::Client {
        corral_provider_sdk::Client::new(&corral_provider_sdk::ClientConfig::new(&self.endpoint))
            .unwrap()
    }

    /// The Machine uids of the machines the provider holds, sorted.
    pub(super) async fn machine_uids(&self) -> Vec<String> {
        let listed = self
            .client()
            .list_machines(v1::ListMachinesRequest::default())
            .await
            .expect("ListMachines answers");
        let mut uids: Vec<String> = listed.machines.into_iter().map(|m| m.machine_uid).collect();
        uids.sort();
        uids
    }
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// An example of this package, which `cargo test` builds beside the test binaries
/// (`target/<profile>/examples/`).
fn example_binary(name: &str) -> PathBuf {
    let test_binary = std::env::current_exe().unwrap();
    let profile_dir = test_binary.parent().and_then(Path::parent).unwrap();
    let binary = profile_dir.join("examples").join(name);
    assert!(
        binary.exists(),
        "{} is missing: build it with `cargo build -p corral-infra-plugin --example {name}`",
        binary.display()
    );
    binary
}

/// A management plane with the core and plugin CRDs, and the core and plugin controllers.
struct Plane {
    env: TestEnv,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    controllers: Option<JoinHandle<()>>,
}

impl Plane {
    async fn start() -> Plane {
        let env = TestEnv::start().await;
        let crds: Vec<Value> = corral_api::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).unwrap())
            .chain(
                corral_infra_plugin::crds()
                    .into_iter()
                    .map(|crd| serde_json::to_value(crd).unwrap()),
            )
            .collect();
        env.install_crds(&crds).await;
        let mut plane = Plane {
            env,
            stop: None,
            controllers: None,
        };
        plane.start_controllers();
        plane
    }

    /// Starts the core and plugin controllers, with fresh caches.
    fn start_controllers(&mut self) {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        }
        .shared();
        let client = self.env.client.clone();
        let controllers = tokio::spawn(async move {
            let config = corral_controllers::Config {
                backoff_max: Duration::from_secs(1),
                ..Default::default()
            };
            let caches = corral_runtime::Caches::new(client.clone());
            let plugin = corral_infra_plugin::run_with_caches(
                client.clone(),
                caches.clone(),
                shutdown.clone(),
            );
            let core = corral_controllers::run_with_caches(client, config, caches, shutdown);
            let ((), result) = tokio::join!(plugin, core);
            result.expect("the core controllers start");
        });
        self.stop = Some(stop);
        self.controllers = Some(controllers);
    }

    /// Stops the controllers (a graceful shutdown, whatever they are doing) and starts a
    /// fresh set with empty caches and no memory, as a restarted management plane would.
    async fn restart_controllers(&mut self) {
        self.stop_controllers().await;
        self.start_controllers();
    }

    async fn stop_controllers(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.controllers.take() {
            task.await.expect("the controllers do not panic");
        }
    }

    async fn stop(mut self) {
        self.stop_controllers().await;
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.env.client.clone(), NAMESPACE)
    }

    fn plugin_kind(&self, kind: &str) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: GROUP.into(),
            version: "v1alpha1".into(),
            api_version: format!("{GROUP}/v1alpha1"),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        };
        Api::namespaced_with(self.env.client.clone(), NAMESPACE, &resource)
    }

    fn provider_plugins(&self) -> Api<corral_infra_plugin::api::ProviderPlugin> {
        Api::all(self.env.client.clone())
    }

    /// Creates any object from JSON, as `kubectl create` would.
    async fn create(&self, object: Value) {
        let api_version = object["apiVersion"].as_str().unwrap();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let kind = object["kind"].as_str().unwrap();
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        };
        let api: Api<DynamicObject> = if kind == "ProviderPlugin" {
            Api::all_with(self.env.client.clone(), &resource)
        } else {
            Api::namespaced_with(self.env.client.clone(), NAMESPACE, &resource)
        };
        let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|error| panic!("creating a {kind}: {error}"));
    }

    /// Registers the provider at `endpoint` as the ProviderPlugin `name`.
    async fn register(&self, name: &str, endpoint: &str) {
        self.create(json!({
            "apiVersion": "corral.dev/v1alpha1", "kind": "ProviderPlugin",
            "metadata": { "name": name },
            "spec": { "endpoint": endpoint, "timeoutSeconds": 5 },
        }))
        .await;
    }

    /// Waits until the ProviderPlugin's Ready condition has `status`; returns its reason and
    /// message.
    async fn plugin_ready(&self, name: &str, status: &str) -> (String, String) {
        let plugins = self.provider_plugins();
        eventually(&format!("ProviderPlugin {name} Ready={status}"), || async {
            let plugin = plugins.get_opt(name).await.unwrap()?;
            let ready = plugin
                .status?
                .conditions
                .into_iter()
                .find(|condition| condition.type_ == "Ready")?;
            (ready.status == status).then_some((ready.reason, ready.message))
        })
        .await
    }

    /// A Cluster on a PluginCluster, fixed bootstrap data, and a MachineDeployment of
    /// `replicas` on the `metal-md-v1` PluginMachineTemplate.
    async fn create_cluster(&self, replicas: i32) {
        let labels = json!({ "cluster.x-k8s.io/cluster-name": CLUSTER });
        self.create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": "metal-bootstrap", "labels": labels },
            "type": "cluster.x-k8s.io/secret",
            "stringData": { "value": "#cloud-config\nruncmd: [kubeadm join]\n", "format": "cloud-config" },
        }))
        .await;
        self.create(json!({
            "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginCluster",
            "metadata": { "name": CLUSTER },
            "spec": { "plugin": PLUGIN, "config": {} },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": CLUSTER },
            "spec": {
                "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] } },
                "infrastructureRef": { "apiGroup": GROUP, "kind": "PluginCluster", "name": CLUSTER },
            },
        }))
        .await;
        for (template, pool) in [("metal-md-v1", "rack-1"), ("metal-md-v2", "rack-2")] {
            self.create(json!({
                "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginMachineTemplate",
                "metadata": { "name": template },
                "spec": { "template": { "spec": { "plugin": PLUGIN, "config": { "pool": pool } } } },
            }))
            .await;
        }
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": { "name": DEPLOYMENT },
            "spec": {
                "clusterName": CLUSTER,
                "replicas": replicas,
                // No Node ever registers, so no Machine is ever available: the rollout may
                // take every old Machine down at once.
                "rollout": { "strategy": { "type": "RollingUpdate",
                    "rollingUpdate": { "maxSurge": 1, "maxUnavailable": "100%" } } },
                "selector": { "matchLabels": { "pool": DEPLOYMENT } },
                "template": {
                    "metadata": { "labels": { "pool": DEPLOYMENT } },
                    "spec": {
                        "clusterName": CLUSTER,
                        "version": "v1.36.0",
                        "bootstrap": { "dataSecretName": "metal-bootstrap" },
                        "infrastructureRef": { "apiGroup": GROUP, "kind": "PluginMachineTemplate", "name": "metal-md-v1" },
                    },
                },
            },
        }))
        .await;
    }

    async fn worker_machines(&self) -> Vec<Machine> {
        let selector = format!("cluster.x-k8s.io/deployment-name={DEPLOYMENT}");
        let mut machines = self
            .api::<Machine>()
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items;
        machines.sort_by_key(|m| m.name_any());
        machines
    }

    /// Waits until the MachineDeployment has exactly `replicas` Machines, each Provisioned on
    /// a PluginMachine cloned from `template` and not being deleted, and the provider holds
    /// exactly those Machines (by uid); returns them.
    async fn wait_provisioned(
        &self,
        provider: &ProviderProcess,
        replicas: usize,
        template: &str,
    ) -> Vec<Machine> {
        let what = format!(
            "{replicas} Machines provisioned from {template}, and only them at the provider"
        );
        eventually(&what, || async {
            let machines = self.worker_machines().await;
            if machines.len() != replicas {
                return None;
            }
            for machine in &machines {
                let status = machine.status.as_ref()?;
                if status.phase != Some(MachinePhase::Provisioned)
                    || machine.metadata.deletion_timestamp.is_some()
                {
                    return None;
                }
                let plugin_machine = self
                    .plugin_kind("PluginMachine")
                    .get(&machine.spec.infrastructure_ref.name)
                    .await
                    .ok()?;
                if plugin_machine
                    .annotations()
                    .get("cluster.x-k8s.io/cloned-from-name")
                    != Some(&template.to_owned())
                {
                    return None;
                }
            }
            let mut uids: Vec<String> = machines.iter().map(|m| m.uid().unwrap()).collect();
            uids.sort();
            (provider.machine_uids().await == uids).then_some(machines)
        })
        .await
    }

    /// Waits until the MachineDeployment's `replicas` Machines are Provisioned and the provider
    /// holds them and `extra` machines more.
    async fn wait_provisioned_with_extra(
        &self,
        provider: &ProviderProcess,
        replicas: usize,
        extra: usize,
    ) {
        eventually("the Machines provisioned", || async {
            let machines = self.worker_machines().await;
            let provisioned = machines.iter().all(|machine| {
                machine.status.as_ref().and_then(|s| s.phase) == Some(MachinePhase::Provisioned)
            });
            (machines.len() == replicas
                && provisioned
                && provider.machine_uids().await.len() == replicas + extra)
                .then_some(())
        })
        .await
    }

    async fn scale(&self, replicas: i32) {
        self.api::<MachineDeployment>()
            .patch(
                DEPLOYMENT,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "replicas": replicas } })),
            )
            .await
            .unwrap();
    }

    async fn roll_to(&self, template: &str) {
        let patch = json!({ "spec": { "template": { "spec": { "infrastructureRef": {
            "apiGroup": GROUP, "kind": "PluginMachineTemplate", "name": template } } } } });
        self.api::<MachineDeployment>()
            .patch(DEPLOYMENT, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }
}

/// The scenario of the module docs against one running example provider.
async fn lifecycle(provider: ProviderProcess) {
    let plane = Plane::start().await;
    plane.register(PLUGIN, &provider.endpoint).await;
    plane.plugin_ready(PLUGIN, "True").await;
    let plugin = plane.provider_plugins().get(PLUGIN).await.unwrap();
    let status = plugin.status.unwrap();
    assert_eq!(status.info.unwrap().contract_versions, ["v1"]);
    assert_eq!(
        status.transport.as_deref(),
        provider.endpoint.split("://").next()
    );

    plane.create_cluster(2).await;
    let clusters: Api<Cluster> = plane.api();
    eventually("the Cluster's infrastructure to be provisioned", || async {
        let cluster = clusters.get(CLUSTER).await.ok()?;
        (cluster.status?.initialization.infrastructure_provisioned == Some(true)).then_some(())
    })
    .await;
    let cluster = clusters.get(CLUSTER).await.unwrap();
    let domains = cluster.status.unwrap().failure_domains;
    assert_eq!(
        domains.len(),
        1,
        "the plugin's failure domain reaches the Cluster"
    );

    let machines = plane.wait_provisioned(&provider, 2, "metal-md-v1").await;
    for machine in &machines {
        let provider_id = machine.spec.provider_id.clone().unwrap_or_default();
        assert!(provider_id.contains("://"), "{provider_id}");
        assert!(
            !machine.status.as_ref().unwrap().addresses.is_empty(),
            "the plugin's addresses reach the Machine"
        );
    }

    plane.scale(3).await;
    plane.wait_provisioned(&provider, 3, "metal-md-v1").await;
    plane.scale(1).await;
    plane.wait_provisioned(&provider, 1, "metal-md-v1").await;
    plane.scale(2).await;
    plane.wait_provisioned(&provider, 2, "metal-md-v1").await;

    plane.roll_to("metal-md-v2").await;
    plane.wait_provisioned(&provider, 2, "metal-md-v2").await;

    clusters
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Cluster to be gone", || async {
        clusters
            .get_opt(CLUSTER)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        provider.machine_uids().await.is_empty(),
        "the provider holds no machine once the Cluster is gone"
    );
    assert!(
        plane
            .plugin_kind("PluginMachine")
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    plane.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn python_provider_over_http() {
    lifecycle(ProviderProcess::python(&[]).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rust_provider_over_grpc() {
    lifecycle(ProviderProcess::rust().await).await;
}

/// A Ready condition of a Plugin* object: its status, reason and message.
async fn ready_of(api: &Api<DynamicObject>, name: &str) -> Option<(String, String, String)> {
    let object = api.get_opt(name).await.unwrap()?;
    let conditions = object.data["status"]["conditions"].as_array()?.clone();
    let ready = conditions.iter().find(|c| c["type"] == "Ready")?;
    let text = |key: &str| ready[key].as_str().unwrap_or_default().to_owned();
    Some((text("status"), text("reason"), text("message")))
}

/// A server that answers every request with something that is not the contract's JSON.
async fn garbage_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n<html></html")
                    .await;
            });
        }
    });
    format!("http://{address}")
}

/// Plugins that are down, answer garbage or speak another contract each get a Ready
/// condition naming them and what they did, their objects wait with a condition naming the
/// plugin, and a healthy plugin's cluster comes up beside them all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn faulty_plugins_are_named_and_block_no_other() {
    let healthy = ProviderProcess::python(&[]).await;
    let future = ProviderProcess::python(&["--contract", "v2"]).await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let plane = Plane::start().await;
    plane.register(PLUGIN, &healthy.endpoint).await;
    plane.register("down", &down).await;
    plane.register("garbage", &garbage_server().await).await;
    plane.register("future", &future.endpoint).await;

    let (reason, message) = plane.plugin_ready("down", "False").await;
    assert_eq!(reason, "Unreachable");
    assert!(
        message.starts_with("ProviderPlugin down: GetInfo: unreachable"),
        "{message}"
    );
    let (reason, message) = plane.plugin_ready("garbage", "False").await;
    assert_eq!(reason, "ProtocolError");
    assert!(
        message.starts_with("ProviderPlugin garbage: GetInfo: answered garbage"),
        "{message}"
    );
    let (reason, message) = plane.plugin_ready("future", "False").await;
    assert_eq!(reason, "IncompatibleContract");
    assert!(message.contains("never called"), "{message}");
    // What the incompatible plugin said is still shown.
    let future_status = plane
        .provider_plugins()
        .get("future")
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(future_status.info.unwrap().contract_versions, ["v2"]);

    // A cluster on the incompatible plugin waits, naming it; one on the healthy plugin comes
    // up meanwhile.
    plane
        .create(json!({
            "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginCluster",
            "metadata": { "name": "elsewhere" },
            "spec": { "plugin": "future" },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": "elsewhere" },
            "spec": { "infrastructureRef": { "apiGroup": GROUP, "kind": "PluginCluster", "name": "elsewhere" } },
        }))
        .await;
    plane.create_cluster(2).await;
    plane.wait_provisioned(&healthy, 2, "metal-md-v1").await;
    let clusters = plane.plugin_kind("PluginCluster");
    let (status, _, message) = eventually("the waiting PluginCluster's condition", || async {
        ready_of(&clusters, "elsewhere")
            .await
            .filter(|(_, reason, _)| reason == "PluginNotReady")
    })
    .await;
    assert_eq!(status, "False");
    assert!(
        message.starts_with("ProviderPlugin future is not Ready"),
        "{message}"
    );
    plane.stop().await;
}

/// A machine the plugin says FAILED fails its Machine (`status.deprecated.v1beta1`'s
/// failureReason and failureMessage), with the plugin's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_machine_fails_its_machine() {
    let provider = ProviderProcess::python(&["--hosts", "10.9.9.9", "--faulty", "10.9.9.9"]).await;
    let plane = Plane::start().await;
    plane.register(PLUGIN, &provider.endpoint).await;
    plane.create_cluster(1).await;
    let machine = eventually("the Machine's failure", || async {
        let machine = plane.worker_machines().await.into_iter().next()?;
        let failure = &machine.status.as_ref()?.deprecated.v1beta1;
        failure.failure_message.is_some().then_some(machine)
    })
    .await;
    let failure = machine.status.unwrap().deprecated.v1beta1;
    assert_eq!(failure.failure_reason.as_deref(), Some("CreateError"));
    let message = failure.failure_message.unwrap_or_default();
    assert!(
        message.contains("host 10.9.9.9 failed its power-on self test"),
        "{message}"
    );
    let (status, reason, _) = ready_of(
        &plane.plugin_kind("PluginMachine"),
        &machine.spec.infrastructure_ref.name,
    )
    .await
    .unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "MachineFailed")
    );
    plane.stop().await;
}

/// Restarts of the controllers and of the plugin lose nothing and create no second machine:
/// the plugin keeps its machines by Machine uid (the Python example's state file), and
/// Corral's calls are keyed by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restarts_create_no_duplicates() {
    let state = tempfile::tempdir().unwrap();
    let state_file = state.path().join("pool.json");
    let state_arg = state_file.to_str().unwrap().to_owned();
    let provider = ProviderProcess::python(&["--state", &state_arg]).await;
    let mut plane = Plane::start().await;
    plane.register(PLUGIN, &provider.endpoint).await;
    plane.create_cluster(2).await;
    let before = plane.wait_provisioned(&provider, 2, "metal-md-v1").await;

    plane.restart_controllers().await;
    drop(provider);
    let provider = ProviderProcess::python(&["--state", &state_arg]).await;
    let patch = json!({ "spec": { "endpoint": provider.endpoint } });
    plane
        .provider_plugins()
        .patch(PLUGIN, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
    plane.scale(3).await;
    let after = plane.wait_provisioned(&provider, 3, "metal-md-v1").await;
    for machine in &before {
        let same = after
            .iter()
            .find(|m| m.uid() == machine.uid())
            .expect("the Machine is kept");
        assert_eq!(same.spec.provider_id, machine.spec.provider_id);
    }
    plane.stop().await;
}

/// A provider whose CreateMachine does not answer until released (then UNAVAILABLE), served
/// by the SDK over HTTP on loopback: a slow plugin.
struct Stuck {
    released: tokio::sync::watch::Receiver<bool>,
}

#[async_trait::async_trait]
impl corral_provider_sdk::Provider for Stuck {
    async fn get_info(
        &self,
        _: v1::GetInfoRequest,
    ) -> Result<v1::GetInfoResponse, corral_provider_sdk::ProviderError> {
        Ok(v1::GetInfoResponse {
            name: "stuck".into(),
            contract_versions: vec!["v1".into()],
            ..Default::default()
        })
    }
    async fn reconcile_cluster(
        &self,
        _: v1::ReconcileClusterRequest,
    ) -> Result<v1::ReconcileClusterResponse, corral_provider_sdk::ProviderError> {
        Ok(v1::ReconcileClusterResponse {
            ready: true,
            ..Default::default()
        })
    }
    async fn delete_cluster(
        &self,
        _: v1::DeleteClusterRequest,
    ) -> Result<v1::DeleteClusterResponse, corral_provider_sdk::ProviderError> {
        Ok(v1::DeleteClusterResponse { deleted: true })
    }
    async fn create_machine(
        &self,
        _: v1::CreateMachineRequest,
    ) -> Result<v1::Machine, corral_provider_sdk::ProviderError> {
        let mut released = self.released.clone();
        let _ = released.wait_for(|released| *released).await;
        Err(corral_provider_sdk::ProviderError::unavailable("released"))
    }
    async fn get_machine(
        &self,
        _: v1::GetMachineRequest,
    ) -> Result<v1::Machine, corral_provider_sdk::ProviderError> {
        Err(corral_provider_sdk::ProviderError::not_found("none"))
    }
    async fn delete_machine(
        &self,
        _: v1::DeleteMachineRequest,
    ) -> Result<v1::DeleteMachineResponse, corral_provider_sdk::ProviderError> {
        Ok(v1::DeleteMachineResponse { deleted: true })
    }
}

/// A plugin whose calls hang holds a bounded number of the controllers' workers: with more of
/// its machines waiting than there are workers, another plugin's cluster still comes up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_plugin_blocks_no_other() {
    let (release, released) = tokio::sync::watch::channel(false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stuck_endpoint = format!("http://{}", listener.local_addr().unwrap());
    let stuck = std::sync::Arc::new(Stuck { released });
    tokio::spawn(corral_provider_sdk::server::serve_http(
        stuck,
        listener,
        std::future::pending(),
    ));
    let healthy = ProviderProcess::python(&["--hosts", "10.0.0.1,10.0.0.2"]).await;
    let plane = Plane::start().await;
    plane.register(PLUGIN, &healthy.endpoint).await;
    plane
        .create(json!({
            "apiVersion": "corral.dev/v1alpha1", "kind": "ProviderPlugin",
            "metadata": { "name": "stuck" },
            "spec": { "endpoint": stuck_endpoint, "timeoutSeconds": 600 },
        }))
        .await;
    plane.plugin_ready("stuck", "True").await;

    // 80 machines on the stuck plugin, more than the controller's 64 workers.
    plane
        .create(json!({
            "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginCluster",
            "metadata": { "name": "slow" },
            "spec": { "plugin": "stuck" },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": "slow" },
            "spec": { "infrastructureRef": { "apiGroup": GROUP, "kind": "PluginCluster", "name": "slow" } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginMachineTemplate",
            "metadata": { "name": "slow" },
            "spec": { "template": { "spec": { "plugin": "stuck" } } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": "slow-bootstrap" },
            "type": "cluster.x-k8s.io/secret",
            "stringData": { "value": "#cloud-config\n" },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": { "name": "slow-md" },
            "spec": {
                "clusterName": "slow",
                "replicas": 80,
                "selector": { "matchLabels": { "pool": "slow" } },
                "template": {
                    "metadata": { "labels": { "pool": "slow" } },
                    "spec": {
                        "clusterName": "slow",
                        "bootstrap": { "dataSecretName": "slow-bootstrap" },
                        "infrastructureRef": { "apiGroup": GROUP, "kind": "PluginMachineTemplate", "name": "slow" },
                    },
                },
            },
        }))
        .await;
    let plugin_machines = plane.plugin_kind("PluginMachine");
    eventually("the stuck plugin's 80 PluginMachines", || async {
        let listed = plugin_machines
            .list(&Default::default())
            .await
            .unwrap()
            .items;
        (listed.len() >= 80).then_some(())
    })
    .await;

    plane.create_cluster(2).await;
    plane.wait_provisioned(&healthy, 2, "metal-md-v1").await;
    let slow_machines = plugin_machines
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert!(
        slow_machines
            .iter()
            .filter(|m| m.data["spec"]["plugin"] == "stuck")
            .all(|m| m.data["spec"]["providerID"].is_null()),
        "the stuck plugin answered nothing"
    );
    // Let the hanging calls end, so that the controllers stop.
    release.send(true).unwrap();
    plane.stop().await;
}

/// Orphans: a machine the provider holds that no Machine or PluginMachine claims (made here
/// with CreateMachine for an unknown uid) is reported on the ProviderPlugin (condition, status,
/// Event), left alone under the default policy, and deleted under `orphanPolicy: Delete` once
/// its grace period is over; the Cluster's own machines, and a machine created for a Machine
/// whose PluginMachine has not recorded it yet, are never reported nor deleted. Then the
/// ProviderPlugin, deleted while in use, stays until the Cluster is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn orphans_are_reported_and_deleted_by_policy() {
    let plane = Plane::start().await;
    let provider = ProviderProcess::python(&[]).await;
    let client = provider.client();
    let create = |uid: &str, cluster: &str| v1::CreateMachineRequest {
        machine: Some(v1::MachineRef {
            uid: uid.to_owned(),
            name: format!("machine-{uid}"),
            cluster_name: cluster.to_owned(),
            ..Default::default()
        }),
        ..Default::default()
    };
    // An orphan: no Machine has this uid.
    let orphan = client
        .create_machine(create("0rphan-uid", "gone"))
        .await
        .unwrap();
    // A machine being created right now: its Machine exists, no PluginMachine records it.
    let machines: Api<Machine> = plane.api();
    let in_flight: Machine = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": { "name": "in-flight" },
        "spec": {
            "clusterName": CLUSTER,
            "bootstrap": { "dataSecretName": "metal-bootstrap" },
            "infrastructureRef": { "apiGroup": GROUP, "kind": "PluginMachine", "name": "not-yet" },
        },
    }))
    .unwrap();
    let in_flight = machines
        .create(&PostParams::default(), &in_flight)
        .await
        .unwrap();
    let in_flight_uid = in_flight.uid().unwrap();
    client
        .create_machine(create(&in_flight_uid, CLUSTER))
        .await
        .unwrap();

    plane.register(PLUGIN, &provider.endpoint).await;
    plane.create_cluster(2).await;
    plane.wait_provisioned_with_extra(&provider, 2, 2).await;
    let plugins = plane.provider_plugins();
    let orphans = eventually("the orphan to be reported", || async {
        let status = plugins.get(PLUGIN).await.unwrap().status?;
        let found = corral_runtime::conditions::get(&status.conditions, "OrphansFound")?;
        (found.status == "True").then_some((status.orphans, found.message.clone()))
    })
    .await;
    assert_eq!(orphans.0.len(), 1, "{orphans:?}");
    assert_eq!(orphans.0[0].machine_uid, "0rphan-uid");
    assert_eq!(orphans.0[0].provider_id, orphan.provider_id);
    assert!(orphans.1.contains(&orphan.provider_id), "{}", orphans.1);
    let events: Api<k8s_openapi::api::events::v1::Event> = plane.api();
    eventually("a Warning Event OrphansFound", || async {
        events
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|event| {
                event.reason.as_deref() == Some("OrphansFound")
                    && event
                        .note
                        .as_deref()
                        .is_some_and(|n| n.contains("0rphan-uid"))
            })
            .map(|_| ())
    })
    .await;
    // Reported only: the provider still holds it.
    assert!(
        provider
            .machine_uids()
            .await
            .contains(&"0rphan-uid".to_owned())
    );

    // Delete after a grace period of one second: the orphan goes, nothing else does.
    plugins
        .patch(
            PLUGIN,
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "orphanPolicy": "Delete", "orphanGracePeriodSeconds": 1 } }),
            ),
        )
        .await
        .unwrap();
    eventually("the orphan to be deleted", || async {
        let uids = provider.machine_uids().await;
        (!uids.contains(&"0rphan-uid".to_owned())).then_some(())
    })
    .await;
    eventually("OrphansFound False", || async {
        let status = plugins.get(PLUGIN).await.unwrap().status?;
        let found = corral_runtime::conditions::get(&status.conditions, "OrphansFound")?;
        (found.status == "False" && status.orphans.is_empty()).then_some(())
    })
    .await;
    let held = provider.machine_uids().await;
    assert!(
        held.contains(&in_flight_uid),
        "the machine being created is kept"
    );
    let workers = plane.worker_machines().await;
    for worker in &workers {
        assert!(
            held.contains(&worker.uid().unwrap()),
            "the Cluster's machines are kept"
        );
    }
    assert_eq!(held.len(), 3, "{held:?}");

    // A ProviderPlugin in use is held by its finalizer until no object names it: the
    // PluginMachines' and PluginCluster's finalizers still reach the plugin.
    eventually("the ProviderPlugin's finalizer", || async {
        let plugin = plugins.get(PLUGIN).await.unwrap();
        plugin
            .finalizers()
            .iter()
            .any(|f| f == "providerplugin.corral.dev")
            .then_some(())
    })
    .await;
    plugins
        .delete(PLUGIN, &DeleteParams::default())
        .await
        .unwrap();
    let terminating = plugins.get(PLUGIN).await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let clusters: Api<Cluster> = plane.api();
    clusters
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the ProviderPlugin to be gone with the Cluster", || async {
        let gone = clusters.get_opt(CLUSTER).await.unwrap().is_none()
            && plugins.get_opt(PLUGIN).await.unwrap().is_none();
        gone.then_some(())
    })
    .await;
    let held = provider.machine_uids().await;
    for worker in &workers {
        assert!(
            !held.contains(&worker.uid().unwrap()),
            "deleted through the plugin"
        );
    }
    plane.stop().await;
}

/// Without the admission webhook (objects written before it was registered), a PluginMachine
/// whose `spec.config` the plugin's published schema refuses is never created at the plugin:
/// its Ready condition says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_config_the_schema_refuses_never_reaches_create_machine() {
    let plane = Plane::start().await;
    let provider = ProviderProcess::python(&[]).await;
    plane.register(PLUGIN, &provider.endpoint).await;
    plane.plugin_ready(PLUGIN, "True").await;
    plane.create_cluster(1).await;
    plane.wait_provisioned(&provider, 1, "metal-md-v1").await;
    plane
        .create(json!({
            "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginMachineTemplate",
            "metadata": { "name": "metal-md-bad" },
            "spec": { "template": { "spec": { "plugin": PLUGIN, "config": { "profile": "huge" } } } },
        }))
        .await;
    plane.scale(2).await;
    plane.roll_to("metal-md-bad").await;
    let plugin_machines = plane.plugin_kind("PluginMachine");
    let (name, message) = eventually("a PluginMachine refused for its config", || async {
        for object in plugin_machines.list(&Default::default()).await.unwrap() {
            let name = object.name_any();
            if let Some((status, reason, message)) = ready_of(&plugin_machines, &name).await
                && status == "False"
                && reason == "InvalidConfig"
            {
                return Some((name, message));
            }
        }
        None
    })
    .await;
    assert!(
        message.contains(r#"spec.config.profile: Unsupported value: "huge""#),
        "{message}"
    );
    let object = plugin_machines.get(&name).await.unwrap();
    let (_, machine_uid) = object
        .owner_references()
        .iter()
        .find(|owner| owner.kind == "Machine")
        .map(|owner| (owner.name.clone(), owner.uid.clone()))
        .expect("a Machine owns it");
    assert!(
        !provider.machine_uids().await.contains(&machine_uid),
        "CreateMachine was never called for it"
    );
    plane.stop().await;
}
