//! When each cluster of the benchmark reached each step of its bring-up, as the benchmark's own
//! watches (its own client, not counted as the controllers') see it: the Cluster's objects
//! created, each Machine seen, its KubeadmConfig's bootstrap data written, its infrastructure
//! provisioned, its Node, Ready, the control plane initialized and up, the MachineDeployment
//! available. The report gives, per step, the median, 90th percentile and maximum over the
//! clusters, and the slowest clusters' steps, to tell where a slow run waited.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use corral_api::{Machine, MachineDeployment};
use corral_kubeadm::api::bootstrap::KubeadmConfig;
use corral_kubeadm::api::controlplane::KubeadmControlPlane;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinHandle;

/// Seconds since the benchmark's clock started.
type At = f64;

#[derive(Default)]
struct Times {
    /// When the benchmark started creating each cluster's objects.
    created: HashMap<String, At>,
    machines: HashMap<String, MachineTimes>,
    /// When each KubeadmConfig's bootstrap data was first seen written, by name.
    configs: HashMap<String, At>,
    /// Why KubeadmConfigs waited for their data (their DataSecretAvailable or
    /// CertificatesAvailable False messages), each with the KubeadmConfigs that said so.
    waits: HashMap<String, std::collections::BTreeSet<String>>,
    kcp_initialized: HashMap<String, At>,
    kcp_up: HashMap<String, At>,
    md_up: HashMap<String, At>,
}

struct MachineTimes {
    cluster: String,
    control_plane: bool,
    config: Option<String>,
    seen: At,
    infrastructure: Option<At>,
    node: Option<At>,
    ready: Option<At>,
}

/// The benchmark's record of every cluster's steps; watches until dropped.
pub struct Timeline {
    start: Instant,
    times: Arc<Mutex<Times>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Timeline {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn cluster_label(object: &impl kube::Resource) -> String {
    object
        .labels()
        .get(corral_api::labels::CLUSTER_NAME)
        .cloned()
        .unwrap_or_default()
}

fn first(slot: &mut Option<At>, now: At, reached: bool) {
    if reached && slot.is_none() {
        *slot = Some(now);
    }
}

impl Timeline {
    /// Starts watching through `client`; the clock starts now.
    pub fn start(client: &kube::Client, namespace: &str) -> Timeline {
        let start = Instant::now();
        let times = Arc::new(Mutex::new(Times::default()));
        let mut tasks = Vec::new();
        let now = move || start.elapsed().as_secs_f64();

        let recorded = times.clone();
        tasks.push(Self::watch(
            Api::<Machine>::namespaced(client.clone(), namespace),
            move |machine| {
                let at = now();
                let mut times = recorded.lock().unwrap();
                let entry =
                    times
                        .machines
                        .entry(machine.name_any())
                        .or_insert_with(|| MachineTimes {
                            cluster: machine.spec.cluster_name.clone(),
                            control_plane: machine
                                .labels()
                                .contains_key(corral_api::labels::CONTROL_PLANE),
                            config: machine
                                .spec
                                .bootstrap
                                .config_ref
                                .as_ref()
                                .map(|r| r.name.clone()),
                            seen: at,
                            infrastructure: None,
                            node: None,
                            ready: None,
                        });
                let status = machine.status.clone().unwrap_or_default();
                first(
                    &mut entry.infrastructure,
                    at,
                    status.initialization.infrastructure_provisioned == Some(true),
                );
                first(&mut entry.node, at, status.node_ref.is_some());
                first(
                    &mut entry.ready,
                    at,
                    status
                        .conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True"),
                );
            },
        ));
        let recorded = times.clone();
        tasks.push(Self::watch(
            Api::<KubeadmConfig>::namespaced(client.clone(), namespace),
            move |config| {
                let written = config
                    .status
                    .as_ref()
                    .is_some_and(|s| s.initialization.data_secret_created == Some(true));
                let mut times = recorded.lock().unwrap();
                if written {
                    let at = now();
                    times.configs.entry(config.name_any()).or_insert(at);
                }
                for condition in config.status.iter().flat_map(|s| &s.conditions) {
                    if condition.status == "False"
                        && ["DataSecretAvailable", "CertificatesAvailable"]
                            .contains(&condition.type_.as_str())
                    {
                        // The cluster's name out, so that clusters share a message.
                        let cluster = cluster_label(&config);
                        let message = condition.message.replace(&cluster, "<cluster>");
                        times
                            .waits
                            .entry(format!("{}: {message}", condition.type_))
                            .or_default()
                            .insert(config.name_any());
                    }
                }
            },
        ));
        let recorded = times.clone();
        tasks.push(Self::watch(
            Api::<KubeadmControlPlane>::namespaced(client.clone(), namespace),
            move |kcp| {
                let at = now();
                let cluster = cluster_label(&kcp);
                let status = kcp.status.clone().unwrap_or_default();
                let mut times = recorded.lock().unwrap();
                if status.initialization.control_plane_initialized == Some(true) {
                    times.kcp_initialized.entry(cluster.clone()).or_insert(at);
                }
                if status.ready_replicas == Some(3) && status.up_to_date_replicas == Some(3) {
                    times.kcp_up.entry(cluster).or_insert(at);
                }
            },
        ));
        let recorded = times.clone();
        tasks.push(Self::watch(
            Api::<MachineDeployment>::namespaced(client.clone(), namespace),
            move |md| {
                if md
                    .status
                    .as_ref()
                    .is_some_and(|s| s.available_replicas == Some(3))
                {
                    let at = now();
                    recorded
                        .lock()
                        .unwrap()
                        .md_up
                        .entry(md.spec.cluster_name.clone())
                        .or_insert(at);
                }
            },
        ));
        Timeline {
            start,
            times,
            tasks,
        }
    }

    fn watch<K>(api: Api<K>, mut record: impl FnMut(K) + Send + 'static) -> JoinHandle<()>
    where
        K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    {
        tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default())
                .applied_objects()
                .boxed();
            while let Some(event) = events.next().await {
                if let Ok(object) = event {
                    record(object);
                }
            }
        })
    }

    /// The benchmark starts creating `cluster`'s objects.
    pub fn creating(&self, cluster: &str) {
        let at = self.start.elapsed().as_secs_f64();
        self.times
            .lock()
            .unwrap()
            .created
            .insert(cluster.to_string(), at);
    }

    /// Each step's median, 90th percentile and maximum over the clusters, and the slowest
    /// clusters' steps.
    pub fn report(&self) -> String {
        let times = self.times.lock().unwrap();
        let mut steps: Vec<(String, Vec<(String, f64)>)> = Vec::new();
        let mut record = |step: String, cluster: &str, from: Option<At>, to: Option<At>| {
            let Some(duration) = from.zip(to).map(|(from, to)| to - from) else {
                return;
            };
            match steps.iter_mut().find(|(name, _)| *name == step) {
                Some((_, values)) => values.push((cluster.to_string(), duration)),
                None => steps.push((step, vec![(cluster.to_string(), duration)])),
            }
        };
        let mut clusters: Vec<&String> = times.created.keys().collect();
        clusters.sort();
        let mut per_cluster: Vec<(String, f64, Vec<String>)> = Vec::new();
        for cluster in clusters {
            let created = times.created.get(cluster).copied();
            let mut machines: Vec<&MachineTimes> = times
                .machines
                .values()
                .filter(|m| &m.cluster == cluster)
                .collect();
            machines.sort_by(|a, b| a.seen.total_cmp(&b.seen));
            let (control_plane, workers): (Vec<&MachineTimes>, Vec<&MachineTimes>) =
                machines.into_iter().partition(|m| m.control_plane);
            let initialized = times.kcp_initialized.get(cluster).copied();
            let mut previous_node = None;
            let mut own: Vec<String> = Vec::new();
            let mut step = |name: String, from: Option<At>, to: Option<At>| {
                if let Some((from, to)) = from.zip(to) {
                    own.push(format!("{name} {:.1}", to - from));
                }
                record(name, cluster, from, to);
            };
            for (index, machine) in control_plane.iter().enumerate() {
                let n = index + 1;
                let data = machine
                    .config
                    .as_ref()
                    .and_then(|c| times.configs.get(c))
                    .copied();
                if index == 0 {
                    step("create → cp1 Machine".into(), created, Some(machine.seen));
                } else {
                    step(
                        format!("cp{index} Node → cp{n} Machine"),
                        previous_node,
                        Some(machine.seen),
                    );
                }
                step(format!("cp{n} Machine → data"), Some(machine.seen), data);
                step(format!("cp{n} data → infra"), data, machine.infrastructure);
                step(
                    format!("cp{n} infra → Node"),
                    machine.infrastructure,
                    machine.node,
                );
                step(format!("cp{n} Node → Ready"), machine.node, machine.ready);
                if index == 0 {
                    step(
                        "cp1 Node → KCP initialized".into(),
                        machine.node,
                        initialized,
                    );
                }
                previous_node = machine.node;
            }
            step(
                "last cp Ready → KCP up".into(),
                control_plane.last().and_then(|m| m.ready),
                times.kcp_up.get(cluster).copied(),
            );
            step(
                "create → worker Machine (first)".into(),
                created,
                workers.first().map(|m| m.seen),
            );
            step(
                "KCP initialized → worker data (last)".into(),
                initialized,
                workers
                    .iter()
                    .map(|m| {
                        m.config
                            .as_ref()
                            .and_then(|c| times.configs.get(c))
                            .copied()
                    })
                    .collect::<Option<Vec<At>>>()
                    .and_then(|all| all.into_iter().reduce(f64::max)),
            );
            for (name, pick) in [
                ("worker data → infra (max)", 0),
                ("worker infra → Node (max)", 1),
                ("worker Node → Ready (max)", 2),
            ] {
                let longest = workers
                    .iter()
                    .filter_map(|m| {
                        let data = m
                            .config
                            .as_ref()
                            .and_then(|c| times.configs.get(c))
                            .copied();
                        let (from, to) = match pick {
                            0 => (data, m.infrastructure),
                            1 => (m.infrastructure, m.node),
                            _ => (m.node, m.ready),
                        };
                        from.zip(to).map(|(from, to)| to - from)
                    })
                    .reduce(f64::max);
                step(name.into(), Some(0.0), longest);
            }
            step(
                "last worker Ready → MD up".into(),
                workers.iter().filter_map(|m| m.ready).reduce(f64::max),
                times.md_up.get(cluster).copied(),
            );
            let up = times
                .kcp_up
                .get(cluster)
                .zip(times.md_up.get(cluster))
                .map(|(a, b)| a.max(*b));
            step("create → up".into(), created, up);
            let total = created.zip(up).map_or(f64::NAN, |(c, u)| u - c);
            per_cluster.push((cluster.clone(), total, own));
        }
        let mut text = String::from("steps over the clusters (s): median / p90 / max (cluster)\n");
        for (name, mut values) in steps {
            values.sort_by(|a, b| a.1.total_cmp(&b.1));
            let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize].1;
            let (slowest, max) = values.last().cloned().unwrap_or_default();
            text.push_str(&format!(
                "  {name:<38} {:>6.2} {:>6.2} {:>6.2} ({slowest})\n",
                at(0.5),
                at(0.9),
                max
            ));
        }
        text.push_str("why KubeadmConfigs waited for their data (KubeadmConfigs that said so):\n");
        let mut waits: Vec<(&String, usize)> = times
            .waits
            .iter()
            .map(|(why, configs)| (why, configs.len()))
            .collect();
        waits.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        for (why, n) in waits {
            text.push_str(&format!("  {n:>5}  {why}\n"));
        }
        per_cluster.sort_by(|a, b| b.1.total_cmp(&a.1));
        text.push_str("slowest clusters:\n");
        for (cluster, total, own) in per_cluster.iter().take(3) {
            text.push_str(&format!("  {cluster} {total:.1} s: {}\n", own.join(", ")));
        }
        text
    }
}
