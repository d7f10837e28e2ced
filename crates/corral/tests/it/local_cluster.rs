//! A workload cluster on the local provider, as the tests that run one need it: `corral up` and
//! `corral provider local` as child processes, a cluster generated on `plugin:local`, and what
//! the tests look at — its Cluster, KubeadmControlPlane and Machines in the management plane,
//! its workload API through the control plane endpoint with the admin credentials of
//! `<cluster>-kubeconfig` ([`ApiSampler`]), its etcd through the cluster's etcd CA, and the
//! host (network namespaces, links, processes, cgroups, the state directory) once it is
//! deleted. Shared by `local_provider` and `local_drills`. Needs root, iproute2, etcd and
//! kubectl.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corral_kubeadm::controlplane::etcd::{EtcdAdmin, EtcdMember};
use corral_kubeadm::controlplane::real_etcd::RealEtcd;
use corral_provider_local::host::{Host, LocalMachine};
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use tokio::io::AsyncBufReadExt;

use crate::node_agent::{Cleanup, require_root};

/// The plugin, serving on a free port, with `extra` arguments; its address from the line it
/// prints.
pub(crate) async fn start_plugin(state: &Path, extra: &[&str]) -> (tokio::process::Child, String) {
    let etcd = corral_store::testing::EtcdProcess::find_binary()
        .expect("etcd is needed (apt-get install etcd-server, or set CORRAL_ETCD_BIN)");
    let mut plugin = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "provider",
            "local",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
        ])
        .arg(state)
        .arg("--etcd")
        .arg(etcd)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(plugin.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().expect("the serving line");
    let endpoint = line
        .strip_prefix("Serving the local provider on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (plugin, endpoint)
}

/// Runs `kubectl apply -f -` with `manifest` against the management plane, again while its
/// CRDs are still being installed (`corral up` writes the kubeconfig before them).
pub(crate) async fn kubectl_apply(kubeconfig: &Path, manifest: &str) {
    use std::io::Write;
    let kubectl = crate::support::kubectl().expect("kubectl is needed to apply the manifests");
    let mut last = None;
    for _ in 0..300 {
        let mut apply = std::process::Command::new(&kubectl)
            .args(["apply", "-f", "-", "--kubeconfig"])
            .arg(kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        apply
            .stdin
            .take()
            .unwrap()
            .write_all(manifest.as_bytes())
            .unwrap();
        let output = apply.wait_with_output().unwrap();
        if output.status.success() {
            return;
        }
        last = Some(output);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("kubectl apply kept failing: {last:?}");
}

/// Whether the object's `status.conditions` has `type` with `status`.
pub(crate) fn has_condition(object: &DynamicObject, type_: &str, status: &str) -> bool {
    object.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|condition| condition["type"] == type_ && condition["status"] == status)
}

/// How a cluster on the local provider is made.
pub(crate) struct Options<'a> {
    /// The cluster's name is this with the test process's id.
    pub(crate) prefix: &'a str,
    pub(crate) control_planes: u32,
    pub(crate) version: &'a str,
    /// Arguments for `corral provider local` (the agents' timings).
    pub(crate) plugin_args: &'a [&'a str],
}

/// A cluster on the local provider, with the management plane and the plugin that run it.
/// Dropping it kills both and deletes whatever of the cluster is left on the host.
pub(crate) struct LocalCluster {
    pub(crate) name: String,
    /// `corral up`'s data directory.
    pub(crate) data: PathBuf,
    pub(crate) host: Host,
    /// The management plane's admin client; replaced when `corral up` restarts.
    pub(crate) client: kube::Client,
    /// Every machine of the cluster seen on the host ([`LocalCluster::track`]), by uid: what
    /// [`LocalCluster::assert_host_clean`] checks is gone.
    seen: Arc<Mutex<BTreeMap<String, LocalMachine>>>,
    state: PathBuf,
    up: Option<tokio::process::Child>,
    log: PathBuf,
    _plugin: tokio::process::Child,
    _cleanup: Cleanup,
    _dir: tempfile::TempDir,
}

impl LocalCluster {
    /// Starts `corral up` and the plugin, registers the plugin with a ProviderPlugin and
    /// applies the cluster `corral generate cluster --infrastructure plugin:local` writes;
    /// returns without waiting for it.
    pub(crate) async fn create(options: Options<'_>) -> LocalCluster {
        require_root();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let state = dir.path().join("local");
        let name = format!("{}-{}", options.prefix, std::process::id());
        let host = Host::new(&state, 77).unwrap();
        let cleanup = Cleanup {
            host: host.clone(),
            cluster: name.clone(),
        };
        let log = dir.path().join("up.log");
        let up = start_up(&data, &log);
        let (plugin, endpoint) = start_plugin(&state, options.plugin_args).await;
        let kubeconfig = data.join("kubeconfig");
        let client = management_client(&kubeconfig).await;
        kubectl_apply(
            &kubeconfig,
            &format!(
                "apiVersion: corral.dev/v1alpha1\nkind: ProviderPlugin\nmetadata:\n  name: local\nspec:\n  endpoint: {endpoint}\n"
            ),
        )
        .await;
        let generated = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
            .args([
                "generate",
                "cluster",
                &name,
                "--infrastructure",
                "plugin:local",
            ])
            .args(["--kubernetes-version", options.version])
            .args([
                "--control-plane-machine-count",
                &options.control_planes.to_string(),
                "--worker-machine-count",
                "0",
            ])
            .output()
            .unwrap();
        assert!(generated.status.success(), "{generated:?}");
        kubectl_apply(&kubeconfig, &String::from_utf8(generated.stdout).unwrap()).await;
        LocalCluster {
            name,
            data,
            host,
            client,
            seen: Arc::default(),
            state,
            up: Some(up),
            log,
            _plugin: plugin,
            _cleanup: cleanup,
            _dir: dir,
        }
    }

    pub(crate) fn kubeconfig(&self) -> PathBuf {
        self.data.join("kubeconfig")
    }

    pub(crate) fn clusters(&self) -> Api<DynamicObject> {
        self.api(&ApiResource::erase::<corral_api::Cluster>(&()))
    }

    pub(crate) fn machines(&self) -> Api<DynamicObject> {
        self.api(&ApiResource::erase::<corral_api::Machine>(&()))
    }

    pub(crate) fn control_planes(&self) -> Api<DynamicObject> {
        self.api(&corral_cli::resource::Kind::KubeadmControlPlane.resource())
    }

    pub(crate) fn api(&self, resource: &ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), "default", resource)
    }

    /// The KubeadmControlPlane's name, as `corral generate cluster` names it.
    pub(crate) fn control_plane_name(&self) -> String {
        format!("{}-control-plane", self.name)
    }

    /// The cluster's Machines.
    pub(crate) async fn cluster_machines(&self) -> Vec<DynamicObject> {
        self.machines()
            .list(
                &ListParams::default()
                    .labels(&format!("cluster.x-k8s.io/cluster-name={}", self.name)),
            )
            .await
            .map(|list| list.items)
            .unwrap_or_default()
    }

    /// Records the cluster's machines now on the host, and returns them.
    pub(crate) async fn track(&self) -> Vec<LocalMachine> {
        let machines: Vec<LocalMachine> = self
            .host
            .machines()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|machine| machine.cluster_name == self.name)
            .collect();
        let mut seen = self.seen.lock().unwrap();
        for machine in &machines {
            seen.insert(machine.uid.clone(), machine.clone());
        }
        machines
    }

    /// Waits until the Cluster is Available and its KubeadmControlPlane has `replicas`
    /// machines, all Ready and up to date, of `version`; panics after `patience` saying
    /// what it saw.
    pub(crate) async fn until_converged(&self, replicas: i64, version: &str, patience: Duration) {
        let deadline = Instant::now() + patience;
        let control_plane = self.control_plane_name();
        loop {
            self.track().await;
            let kcp = self.control_planes().get(&control_plane).await.ok();
            let cluster = self.clusters().get(&self.name).await.ok();
            let machines = self.cluster_machines().await;
            let status = kcp.as_ref().map(|kcp| &kcp.data["status"]);
            let converged = status.is_some_and(|status| {
                status["replicas"] == replicas
                    && status["readyReplicas"] == replicas
                    && status["upToDateReplicas"] == replicas
            }) && cluster
                .as_ref()
                .is_some_and(|cluster| has_condition(cluster, "Available", "True"))
                && machines.len() as i64 == replicas
                && machines.iter().all(|machine| {
                    machine.data["spec"]["version"] == version
                        && machine.metadata.deletion_timestamp.is_none()
                        && has_condition(machine, "Ready", "True")
                });
            if converged {
                return;
            }
            if Instant::now() > deadline {
                let machines: Vec<_> = machines
                    .iter()
                    .map(|machine| {
                        format!(
                            "{} {} {}",
                            machine.metadata.name.as_deref().unwrap_or_default(),
                            machine.data["spec"]["version"],
                            machine.data["status"]["phase"]
                        )
                    })
                    .collect();
                panic!(
                    "the cluster did not converge to {replicas} Ready machines at {version} in {patience:?}: \
                     KubeadmControlPlane status {:#}\nCluster status {:#}\nMachines {machines:?}\n{}",
                    status.cloned().unwrap_or_default(),
                    cluster
                        .map(|cluster| cluster.data["status"].clone())
                        .unwrap_or_default(),
                    self.log_tail(),
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The end of `corral up`'s log, for a failure's message.
    pub(crate) fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "corral up's log, last lines:\n{}",
            lines[lines.len().saturating_sub(60)..].join("\n")
        )
    }

    /// A client configuration of the workload cluster as its admin, through the control
    /// plane endpoint: the kubeconfig Secret `<cluster>-kubeconfig` the control plane
    /// provider writes.
    pub(crate) async fn workload_config(&self) -> kube::Config {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), "default");
        let secret = secrets
            .get(&format!("{}-kubeconfig", self.name))
            .await
            .unwrap();
        let value = &secret.data.unwrap()["value"].0;
        let kubeconfig =
            kube::config::Kubeconfig::from_yaml(std::str::from_utf8(value).unwrap()).unwrap();
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap()
    }

    /// The workload cluster's Nodes.
    pub(crate) async fn nodes(&self) -> Vec<Node> {
        let client = kube::Client::try_from(self.workload_config().await).unwrap();
        Api::<Node>::all(client)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
    }

    /// The cluster's etcd as the control plane provider reaches it: at its machines' client
    /// URLs, with a client certificate from the cluster's etcd CA (`<cluster>-etcd`).
    pub(crate) async fn etcd(&self) -> RealEtcd {
        let secrets = corral_kubeadm::certs::SecretReader::new(self.client.clone());
        let ca = corral_kubeadm::certs::lookup_etcd_ca(&secrets, "default", &self.name)
            .await
            .unwrap()
            .expect("the cluster's etcd CA");
        let endpoints = self
            .track()
            .await
            .iter()
            .map(|machine| format!("https://{}:2379", machine.address))
            .collect();
        RealEtcd::new(endpoints, &ca).unwrap()
    }

    /// The etcd members now (empty when no member answers).
    pub(crate) async fn etcd_members(&self) -> Vec<EtcdMember> {
        self.etcd().await.members().await.unwrap_or_default()
    }

    /// SIGKILLs `corral up`, as a crash would.
    pub(crate) async fn kill_management_plane(&mut self) {
        let mut up = self.up.take().expect("corral up runs");
        up.kill().await.unwrap();
    }

    /// Starts `corral up` again on the same data directory.
    pub(crate) async fn restart_management_plane(&mut self) {
        assert!(self.up.is_none(), "corral up still runs");
        let kubeconfig = self.kubeconfig();
        // Rewritten with the new port: wait for the new one.
        let _ = std::fs::remove_file(&kubeconfig);
        self.up = Some(start_up(&self.data, &self.log));
        self.client = management_client(&kubeconfig).await;
    }

    /// Deletes the Cluster and waits for it to be gone; then nothing of it may be left on
    /// the host ([`LocalCluster::assert_host_clean`]).
    pub(crate) async fn delete(&self) {
        self.track().await;
        let clusters = self.clusters();
        clusters
            .delete(&self.name, &Default::default())
            .await
            .unwrap();
        for _ in 0..1200 {
            if clusters.get_opt(&self.name).await.unwrap().is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            clusters.get_opt(&self.name).await.unwrap().is_none(),
            "the Cluster was not deleted in 120 s\n{}",
            self.log_tail()
        );
        self.assert_host_clean().await;
    }

    /// Nothing of the cluster is left on the host: no machine recorded, no network
    /// namespace of the state root, no veth of a machine seen nor the cluster's bridge, no
    /// process running from the state directory, no machine's cgroup, no record.
    pub(crate) async fn assert_host_clean(&self) {
        let mut leaks = Vec::new();
        let recorded = self.host.machines().await.unwrap();
        if !recorded.is_empty() {
            leaks.push(format!("machines recorded: {recorded:?}"));
        }
        let netns = command_output("ip", &["netns", "list"]);
        let prefix = self.host.netns_name("");
        for line in netns.lines() {
            if line.starts_with(&prefix) {
                leaks.push(format!("network namespace {line}"));
            }
        }
        let links = command_output("ip", &["-o", "link", "show"]);
        let seen = self.seen.lock().unwrap().clone();
        let mut names: Vec<String> = seen
            .values()
            .flat_map(|machine| [machine.host_veth.clone(), machine.bridge.clone()])
            .collect();
        names.sort();
        names.dedup();
        for line in links.lines() {
            // "<index>: <name>[@<peer>]: <flags> ..."
            let Some(name) = line.split(": ").nth(1) else {
                continue;
            };
            let name = name.split('@').next().unwrap_or(name);
            if names.iter().any(|leaked| leaked == name) {
                leaks.push(format!("link {name}"));
            }
        }
        for uid in seen.keys() {
            let cgroup = self.host.cgroup(uid);
            if cgroup.path().exists() {
                leaks.push(format!("cgroup {}", cgroup.path().display()));
            }
            if self.host.machine_dir(uid).exists() {
                leaks.push(format!("state {}", self.host.machine_dir(uid).display()));
            }
        }
        let state = self.state.display().to_string();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            // The plugin itself is started with the state directory; the machines' processes
            // with their root under it.
            if cmdline.contains(&format!("{state}/machines")) {
                leaks.push(format!("process {pid}: {cmdline}"));
            }
        }
        let clusters = self.state.join("clusters");
        let networks: Vec<_> = std::fs::read_dir(&clusters)
            .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect())
            .unwrap_or_default();
        if !networks.is_empty() {
            leaks.push(format!("network records {networks:?}"));
        }
        assert!(
            seen.len() >= 3,
            "the test saw only {} machines on the host",
            seen.len()
        );
        assert!(
            leaks.is_empty(),
            "left on the host after the cluster was deleted ({} machines seen):\n{}",
            seen.len(),
            leaks.join("\n")
        );
    }
}

fn start_up(data: &Path, log: &Path) -> tokio::process::Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "up",
            "--listen",
            "127.0.0.1:0",
            "--log-to-stderr",
            "--data-dir",
        ])
        .arg(data)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// The management plane's admin client, once `corral up` wrote its kubeconfig.
async fn management_client(kubeconfig: &Path) -> kube::Client {
    for _ in 0..600 {
        if kubeconfig.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kube::Client::try_from(crate::support::client_config(kubeconfig).await).unwrap()
}

fn command_output(program: &str, args: &[&str]) -> String {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{program} {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// What an [`ApiSampler`] saw.
#[derive(Debug)]
pub(crate) struct Samples {
    pub(crate) total: usize,
    pub(crate) failed: usize,
    /// The time the API answered with errors (or not at all): from each failed sample after
    /// a good one to the next good one.
    pub(crate) error_time: Duration,
    /// The longest of those spans.
    pub(crate) longest_gap: Duration,
    /// The first errors, each with when it happened after the sampling began.
    pub(crate) errors: Vec<String>,
}

/// Lists the workload cluster's Nodes through the control plane endpoint every 100 ms, as
/// `kubectl get nodes` does: a new TLS connection each time (so each sample goes through the
/// load balancer's choice of a backend), each with a second to answer.
pub(crate) struct ApiSampler {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<Samples>,
}

impl ApiSampler {
    pub(crate) fn start(config: kube::Config) -> ApiSampler {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut samples = Samples {
                total: 0,
                failed: 0,
                error_time: Duration::ZERO,
                longest_gap: Duration::ZERO,
                errors: Vec::new(),
            };
            let mut failing_since: Option<Instant> = None;
            let began = Instant::now();
            let mut timer = tokio::time::interval(Duration::from_millis(100));
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = timer.tick() => {}
                    _ = stopped.changed() => break,
                }
                let started = Instant::now();
                let result = tokio::time::timeout(Duration::from_secs(1), async {
                    let client = kube::Client::try_from(config.clone())
                        .map_err(|error| error.to_string())?;
                    Api::<Node>::all(client)
                        .list(&ListParams::default())
                        .await
                        .map_err(|error| error.to_string())
                })
                .await
                .unwrap_or_else(|_| Err("no answer within 1 s".into()));
                samples.total += 1;
                match result {
                    Ok(_) => {
                        if let Some(since) = failing_since.take() {
                            let gap = since.elapsed();
                            samples.error_time += gap;
                            samples.longest_gap = samples.longest_gap.max(gap);
                        }
                    }
                    Err(error) => {
                        samples.failed += 1;
                        failing_since.get_or_insert(started);
                        if samples.errors.len() < 10 {
                            samples
                                .errors
                                .push(format!("{:.1}s: {error}", began.elapsed().as_secs_f64()));
                        }
                    }
                }
            }
            if let Some(since) = failing_since {
                let gap = since.elapsed();
                samples.error_time += gap;
                samples.longest_gap = samples.longest_gap.max(gap);
            }
            samples
        });
        ApiSampler { stop, task }
    }

    pub(crate) async fn finish(self) -> Samples {
        let _ = self.stop.send(true);
        self.task.await.unwrap()
    }
}
