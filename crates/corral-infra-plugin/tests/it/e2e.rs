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
struct ProviderProcess {
    endpoint: String,
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
    async fn python(args: &[&str]) -> ProviderProcess {
        let script = repository().join("examples/python-http-provider/provider.py");
        let mut command = Command::new("python3");
        command
            .arg(script)
            .args(["--listen", "127.0.0.1:0"])
            .args(args);
        Self::start(command).await
    }

    /// The Rust provider over gRPC.
    async fn rust() -> ProviderProcess {
        let mut command = Command::new(example_binary("rust-grpc-provider"));
        command.args(["--listen", "127.0.0.1:0", "--size", "16"]);
        Self::start(command).await
    }

    /// A client of the provider, to see what it holds.
    fn client(&self) -> corral_provider_sdk::Client {
        corral_provider_sdk::Client::new(&corral_provider_sdk::ClientConfig::new(&self.endpoint))
            .unwrap()
    }

    /// The Machine uids of the machines the provider holds, sorted.
    async fn machine_uids(&self) -> Vec<String> {
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
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        }
        .shared();
        let client = env.client.clone();
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
        Plane {
            env,
            stop: Some(stop),
            controllers: Some(controllers),
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.controllers.take() {
            task.await.expect("the controllers do not panic");
        }
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
