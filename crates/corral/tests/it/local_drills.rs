//! The control plane failure drills of the local provider (issue 26), each on a real cluster
//! of three control plane machines (`local_cluster`): a machine killed (every process of it),
//! an upgrade of the KubeadmControlPlane's version, and the management plane killed with
//! SIGKILL in the middle of that upgrade. Throughout, the workload API is listed through the
//! control plane endpoint every 100 ms (at most 1 s of errors in total) and the etcd members
//! are recorded (never fewer than two healthy). Each test prints what it measured. Needs root,
//! iproute2, etcd and kubectl (CI has them).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corral_kubeadm::certs::KeyMaterial;
use corral_kubeadm::controlplane::etcd::EtcdAdmin;
use corral_kubeadm::controlplane::real_etcd::RealEtcd;
use corral_provider_local::host::Host;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};

use crate::local_cluster::{
    ApiSampler, LocalCluster, Options, Samples, has_condition, kubectl_apply,
};

const VERSION: &str = "v1.33.0";
const NEXT_VERSION: &str = "v1.33.1";

/// The agents' timings for a drill: a silent Node is marked `Ready=Unknown` after 8 s (its
/// Lease, 4 s long, is renewed every second).
const PLUGIN_ARGS: &[&str] = &[
    "--node-monitor-grace-period",
    "8",
    "--node-lease-duration-seconds",
    "4",
];

/// The most the workload API may fail in a drill, in total.
const ERROR_BUDGET: Duration = Duration::from_secs(1);

async fn three_control_planes(prefix: &str) -> LocalCluster {
    let cluster = LocalCluster::create(Options {
        prefix,
        control_planes: 3,
        version: VERSION,
        plugin_args: PLUGIN_ARGS,
    })
    .await;
    let started = Instant::now();
    cluster
        .until_converged(3, VERSION, Duration::from_secs(120))
        .await;
    eprintln!(
        "drill {prefix}: three control plane machines Ready in {:?}",
        started.elapsed()
    );
    cluster
}

/// One reading of the etcd members.
#[derive(Clone, Debug)]
struct EtcdReading {
    at: Duration,
    members: usize,
    healthy: usize,
}

/// Reads the cluster's etcd members every 250 ms, at the client URLs of the machines on the
/// host at that moment, with a client certificate of the cluster's etcd CA.
struct EtcdRecorder {
    readings: Arc<Mutex<Vec<EtcdReading>>>,
    task: tokio::task::JoinHandle<()>,
}

impl EtcdRecorder {
    async fn start(cluster: &LocalCluster) -> EtcdRecorder {
        let secrets = corral_kubeadm::certs::SecretReader::new(cluster.client.clone());
        let ca: KeyMaterial =
            corral_kubeadm::certs::lookup_etcd_ca(&secrets, "default", &cluster.name)
                .await
                .unwrap()
                .expect("the cluster's etcd CA");
        let host: Host = cluster.host.clone();
        let name = cluster.name.clone();
        let readings: Arc<Mutex<Vec<EtcdReading>>> = Arc::default();
        let recorded = readings.clone();
        let started = Instant::now();
        let task = tokio::spawn(async move {
            loop {
                let endpoints = host
                    .machines()
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|machine| machine.cluster_name == name)
                    .map(|machine| format!("https://{}:2379", machine.address))
                    .collect();
                if let Ok(members) = RealEtcd::new(endpoints, &ca).unwrap().members().await {
                    recorded.lock().unwrap().push(EtcdReading {
                        at: started.elapsed(),
                        members: members.len(),
                        healthy: members.iter().filter(|member| member.healthy).count(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
        EtcdRecorder { readings, task }
    }

    /// The readings, each change of (members, healthy) once.
    fn finish(self) -> Vec<EtcdReading> {
        self.task.abort();
        let readings = self.readings.lock().unwrap().clone();
        let mut changes: Vec<EtcdReading> = Vec::new();
        for reading in readings {
            if changes.last().is_none_or(|last| {
                (last.members, last.healthy) != (reading.members, reading.healthy)
            }) {
                changes.push(reading);
            }
        }
        changes
    }
}

fn describe_readings(readings: &[EtcdReading]) -> String {
    readings
        .iter()
        .map(|reading| {
            format!(
                "{:.1}s: {}/{}",
                reading.at.as_secs_f64(),
                reading.healthy,
                reading.members
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The workload API's errors stayed within the budget; etcd never had fewer than two healthy
/// members, except during the `election` after its leader was killed (a member reports itself
/// unhealthy while it has no leader, as etcd's health check does: only the API's errors count
/// then).
fn assert_stayed_available(
    drill: &str,
    samples: &Samples,
    readings: &[EtcdReading],
    election: Duration,
    budget: Duration,
) {
    eprintln!(
        "drill {drill}: {} API samples, {} failed, {:?} of errors in total, longest gap {:?}; \
         etcd healthy/members over time: {}; errors: {:?}",
        samples.total,
        samples.failed,
        samples.error_time,
        samples.longest_gap,
        describe_readings(readings),
        samples.errors
    );
    assert!(
        samples.error_time <= budget,
        "the workload API failed for {:?} in total (budget {budget:?}): {samples:?}",
        samples.error_time
    );
    assert!(
        samples.total > samples.failed,
        "no sample succeeded: {samples:?}"
    );
    assert!(!readings.is_empty(), "no etcd member list was read");
    let lowest = readings
        .iter()
        .filter(|reading| reading.at >= election)
        .map(|reading| reading.healthy)
        .min()
        .unwrap_or(0);
    assert!(
        lowest >= 2,
        "etcd had {lowest} healthy member(s) at some point: {}",
        describe_readings(readings)
    );
}

/// A MachineHealthCheck for the control plane machines: a Node `Ready` `Unknown` or `False`
/// for 5 s is unhealthy.
async fn health_check_control_planes(cluster: &LocalCluster) {
    kubectl_apply(
        &cluster.kubeconfig(),
        &format!(
            "apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineHealthCheck
metadata:
  name: {name}-control-plane
  namespace: default
spec:
  clusterName: {name}
  selector:
    matchLabels:
      cluster.x-k8s.io/control-plane: \"\"
  checks:
    nodeStartupTimeoutSeconds: 60
    unhealthyNodeConditions:
    - type: Ready
      status: Unknown
      timeoutSeconds: 5
    - type: Ready
      status: \"False\"
      timeoutSeconds: 5
",
            name = cluster.name
        ),
    )
    .await;
}

/// Waits for `check` to hold, polling every 200 ms; panics with `what` after `patience`.
async fn until<F, Fut>(cluster: &LocalCluster, what: &str, patience: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + patience;
    while !check().await {
        cluster.track().await;
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {patience:?}\n{}",
            cluster.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn node_ready_status(nodes: &[Node], name: &str) -> Option<String> {
    nodes
        .iter()
        .find(|node| node.metadata.name.as_deref() == Some(name))?
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == "Ready")
        .map(|condition| condition.status.clone())
}

/// Which etcd member's machine a kill drill kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Victim {
    Leader,
    Follower,
}

/// Kill every process of the etcd leader's machine: the surviving members elect a new leader
/// (the local provider's etcd timings: within 300–600 ms), the API stays reachable through the
/// endpoint (at most 1 s of errors), the Node goes `Ready=Unknown`, the MachineHealthCheck
/// marks the Machine, the KubeadmControlPlane remediates it (quorum allows: two healthy members
/// of three), its etcd member is removed and a new machine joins — three members and three
/// Ready machines again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_etcd_leaders_machine_is_replaced_while_the_api_stays_up() {
    kill_drill("drill-leader", Victim::Leader).await;
}

/// The same with an etcd follower's machine: no election, only the load balancer's and the
/// members' reaction to a dead peer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_control_plane_machine_is_replaced_while_the_api_stays_up() {
    kill_drill("drill-kill", Victim::Follower).await;
}

async fn kill_drill(prefix: &str, role: Victim) {
    let cluster = three_control_planes(prefix).await;
    health_check_control_planes(&cluster).await;
    let members = cluster.etcd_members().await;
    assert_eq!(members.len(), 3, "{members:?}");
    let member = members
        .iter()
        .find(|member| member.leader == (role == Victim::Leader))
        .unwrap_or_else(|| panic!("no etcd {role:?} among {members:?}"));
    let victim = cluster
        .track()
        .await
        .into_iter()
        .find(|machine| machine.name == member.name)
        .unwrap_or_else(|| panic!("no machine for member {member:?}"));
    let machines = cluster.cluster_machines().await;
    let old_names: Vec<String> = machines
        .iter()
        .filter_map(|machine| machine.metadata.name.clone())
        .collect();

    let sampler = ApiSampler::start(cluster.workload_config().await);
    let recorder = EtcdRecorder::start(&cluster).await;
    // Let the sampler see the API up before the kill.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let killed = Instant::now();
    cluster.host.cgroup(&victim.uid).kill_all().await.unwrap();
    eprintln!(
        "drill {prefix}: killed machine {} (the etcd {role:?})",
        victim.name
    );

    until(
        &cluster,
        "the Node going Ready=Unknown",
        Duration::from_secs(60),
        || async {
            node_ready_status(&cluster.nodes().await, &victim.name).as_deref() == Some("Unknown")
        },
    )
    .await;
    let unknown = killed.elapsed();
    until(
        &cluster,
        "the MachineHealthCheck marking the Machine",
        Duration::from_secs(60),
        || async {
            cluster
                .machines()
                .get_opt(&victim.name)
                .await
                .ok()
                .flatten()
                .is_none_or(|machine| {
                    has_condition(&machine, "HealthCheckSucceeded", "False")
                        || machine.metadata.deletion_timestamp.is_some()
                })
        },
    )
    .await;
    let marked = killed.elapsed();
    until(
        &cluster,
        "the dead machine's etcd member being removed",
        Duration::from_secs(90),
        || async {
            let members = cluster.etcd_members().await;
            !members.is_empty() && members.iter().all(|member| member.name != victim.name)
        },
    )
    .await;
    let removed = killed.elapsed();
    cluster
        .until_converged(3, VERSION, Duration::from_secs(120))
        .await;
    let replaced = killed.elapsed();
    let samples = sampler.finish().await;
    let readings = recorder.finish();

    let members = cluster.etcd_members().await;
    assert_eq!(members.len(), 3, "{members:?}");
    assert!(members.iter().all(|member| member.healthy), "{members:?}");
    assert!(
        members.iter().all(|member| member.name != victim.name),
        "{members:?}"
    );
    let machines = cluster.cluster_machines().await;
    let new: Vec<&str> = machines
        .iter()
        .filter_map(|machine| machine.metadata.name.as_deref())
        .filter(|name| !old_names.iter().any(|old| old == name))
        .collect();
    assert_eq!(new.len(), 1, "one machine replaced the killed one: {new:?}");
    assert!(
        !cluster
            .track()
            .await
            .iter()
            .any(|machine| machine.uid == victim.uid),
        "the killed machine is gone from the host"
    );
    let nodes = cluster.nodes().await;
    for machine in &machines {
        let name = machine.metadata.name.as_deref().unwrap();
        assert_eq!(
            node_ready_status(&nodes, name).as_deref(),
            Some("True"),
            "Node {name}"
        );
    }
    eprintln!(
        "drill {prefix}: Node Ready=Unknown after {unknown:?}, Machine marked after {marked:?}, \
         etcd member removed after {removed:?}, three Ready machines again after {replaced:?}"
    );
    // Readings start a second before the kill; a new leader comes within etcd's election
    // timeout (300 ms here), and 3 s more leave room for the probes.
    let election = match role {
        Victim::Leader => Duration::from_secs(4),
        Victim::Follower => Duration::ZERO,
    };
    assert_stayed_available(prefix, &samples, &readings, election, ERROR_BUDGET);
    cluster.delete().await;
}

/// Sets the KubeadmControlPlane's `spec.version`.
async fn upgrade(cluster: &LocalCluster, version: &str) {
    cluster
        .control_planes()
        .patch(
            &cluster.control_plane_name(),
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "version": version } })),
        )
        .await
        .unwrap();
}

/// Every Node of the workload cluster reports the version.
async fn assert_nodes_at(cluster: &LocalCluster, version: &str) {
    let nodes = cluster.nodes().await;
    assert_eq!(nodes.len(), 3, "three Nodes");
    for node in nodes {
        let kubelet = node
            .status
            .and_then(|status| status.node_info)
            .map(|info| info.kubelet_version);
        assert_eq!(
            kubelet.as_deref(),
            Some(version),
            "Node {:?}",
            node.metadata.name
        );
    }
}

/// An upgrade of `spec.version` replaces the machines one at a time: at most four machines
/// at once, never fewer than two healthy etcd members, the API reachable throughout, every
/// machine and Node at the new version at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_replaces_the_control_plane_one_machine_at_a_time() {
    let cluster = three_control_planes("drill-upgrade").await;
    let sampler = ApiSampler::start(cluster.workload_config().await);
    let recorder = EtcdRecorder::start(&cluster).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let started = Instant::now();
    upgrade(&cluster, NEXT_VERSION).await;
    let most = Arc::new(Mutex::new(0usize));
    {
        let most = most.clone();
        let deadline = Instant::now() + Duration::from_secs(150);
        until(&cluster, "the upgrade", Duration::from_secs(150), || {
            let most = most.clone();
            let cluster = &cluster;
            async move {
                let machines = cluster.cluster_machines().await;
                let mut most = most.lock().unwrap();
                *most = (*most).max(machines.len());
                drop(most);
                machines.len() == 3
                    && machines.iter().all(|machine| {
                        machine.data["spec"]["version"] == NEXT_VERSION
                            && has_condition(machine, "Ready", "True")
                    })
            }
        })
        .await;
        cluster
            .until_converged(
                3,
                NEXT_VERSION,
                deadline.saturating_duration_since(Instant::now()),
            )
            .await;
    }
    let duration = started.elapsed();
    let samples = sampler.finish().await;
    let readings = recorder.finish();
    eprintln!("drill upgrade: {VERSION} → {NEXT_VERSION} in {duration:?}");
    let most = *most.lock().unwrap();
    assert!(
        most <= 4,
        "{most} machines at once: more than one replaced at a time"
    );
    assert_nodes_at(&cluster, NEXT_VERSION).await;
    let members = cluster.etcd_members().await;
    assert_eq!(members.len(), 3, "{members:?}");
    assert!(members.iter().all(|member| member.healthy), "{members:?}");
    assert_stayed_available("upgrade", &samples, &readings, Duration::ZERO, ERROR_BUDGET);
    cluster.delete().await;
}

/// Kills `corral up` with SIGKILL once `moment` holds, and starts it again on the same data
/// directory two seconds later.
async fn crash_management_plane_when<F, Fut>(
    cluster: &mut LocalCluster,
    what: &str,
    started: Instant,
    moment: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    until(cluster, what, Duration::from_secs(90), moment).await;
    cluster.kill_management_plane().await;
    eprintln!(
        "drill restart: killed corral up {:?} into the rollout ({what})",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.restart_management_plane().await;
}

/// `corral up` killed with SIGKILL in the middle of an upgrade, twice (while the first new
/// machine bootstraps, and while an old machine is being deleted), and started again on the
/// same data directory each time: the rollout converges, etcd keeps quorum, the workload API
/// stays up (the management plane is not on its path), and once the cluster is deleted
/// nothing of it is left on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_management_plane_restarted_mid_rollout_converges_and_leaks_nothing() {
    let mut cluster = three_control_planes("drill-restart").await;
    let old: Vec<String> = cluster
        .track()
        .await
        .into_iter()
        .map(|machine| machine.uid)
        .collect();
    let sampler = ApiSampler::start(cluster.workload_config().await);
    let recorder = EtcdRecorder::start(&cluster).await;
    let started = Instant::now();
    upgrade(&cluster, NEXT_VERSION).await;
    let host = cluster.host.clone();
    let name = cluster.name.clone();
    let new_machine_bootstrapping = || {
        let (host, name, old) = (host.clone(), name.clone(), old.clone());
        async move {
            host.machines()
                .await
                .unwrap_or_default()
                .iter()
                .any(|machine| machine.cluster_name == name && !old.contains(&machine.uid))
        }
    };
    crash_management_plane_when(
        &mut cluster,
        "the first new machine on the host",
        started,
        new_machine_bootstrapping,
    )
    .await;
    let machines = cluster.machines();
    let label = format!("cluster.x-k8s.io/cluster-name={name}");
    let old_machine_deleting = || {
        let (machines, label) = (machines.clone(), label.clone());
        async move {
            machines
                .list(&kube::api::ListParams::default().labels(&label))
                .await
                .is_ok_and(|list| {
                    list.items.iter().any(|machine| {
                        machine.metadata.deletion_timestamp.is_some()
                            && machine.data["spec"]["version"] == VERSION
                    })
                })
        }
    };
    crash_management_plane_when(
        &mut cluster,
        "an old machine being deleted",
        started,
        old_machine_deleting,
    )
    .await;
    cluster
        .until_converged(3, NEXT_VERSION, Duration::from_secs(150))
        .await;
    eprintln!(
        "drill restart: converged {:?} after the upgrade began",
        started.elapsed()
    );
    let samples = sampler.finish().await;
    let readings = recorder.finish();
    // The 1 s is for a killed machine; here `corral up` itself is killed twice, and a
    // request kept alive on an old machine's API server as it is deleted can wait out the
    // sampler's 1 s timeout once, so two such waits are allowed.
    assert_stayed_available(
        "restart",
        &samples,
        &readings,
        Duration::ZERO,
        2 * ERROR_BUDGET,
    );
    assert_nodes_at(&cluster, NEXT_VERSION).await;
    cluster.delete().await;
}

/// The OwnerRemediated condition of a Machine: (reason, message), when it is False.
fn owner_remediated(machine: &kube::api::DynamicObject) -> Option<(String, String)> {
    machine.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == "OwnerRemediated" && condition["status"] == "False")
        .map(|condition| {
            (
                condition["reason"].as_str().unwrap_or_default().to_owned(),
                condition["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
}

/// Kill every process of two of the three control plane machines: etcd loses quorum, and with
/// it the workload API (so the Nodes cannot even be marked `Ready=Unknown`: the node lifecycle
/// controller writes through that API). The operator asks for both machines to be remediated
/// (`cluster.x-k8s.io/remediate-machine`), the MachineHealthCheck marks them, and the
/// KubeadmControlPlane refuses — removing either member would leave one healthy member of two
/// (upstream's `canSafelyRemoveEtcdMember`) — saying why in the Machine's OwnerRemediated
/// condition, and deletes no Machine for 20 s. Deleting the cluster then still removes
/// everything from the host: the deletion does not wait on the etcd that has no quorum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_plane_is_not_remediated_without_etcd_quorum_and_still_deletes() {
    let cluster = three_control_planes("drill-quorum").await;
    health_check_control_planes(&cluster).await;
    let machines = cluster.track().await;
    assert_eq!(machines.len(), 3, "{machines:?}");
    let victims = &machines[..2];
    for victim in victims {
        cluster.host.cgroup(&victim.uid).kill_all().await.unwrap();
    }
    let names: Vec<String> = victims.iter().map(|victim| victim.name.clone()).collect();
    eprintln!("drill quorum: killed machines {names:?}, two of three etcd members");
    for name in &names {
        cluster
            .machines()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "metadata": { "annotations": {
                    "cluster.x-k8s.io/remediate-machine": ""
                } } })),
            )
            .await
            .unwrap();
    }
    until(
        &cluster,
        "the MachineHealthCheck marking both Machines",
        Duration::from_secs(60),
        || async {
            let machines = cluster.cluster_machines().await;
            names.iter().all(|name| {
                machines.iter().any(|machine| {
                    machine.metadata.name.as_ref() == Some(name)
                        && has_condition(machine, "HealthCheckSucceeded", "False")
                })
            })
        },
    )
    .await;
    let refused = Arc::new(Mutex::new(None));
    until(
        &cluster,
        "the KubeadmControlPlane saying why it does not remediate",
        Duration::from_secs(60),
        || async {
            let said = cluster
                .cluster_machines()
                .await
                .iter()
                .filter_map(owner_remediated)
                .find(|(reason, _)| reason != "WaitingForRemediation");
            let found = said.is_some();
            *refused.lock().unwrap() = said;
            found
        },
    )
    .await;
    let (reason, message) = refused.lock().unwrap().clone().unwrap();
    eprintln!("drill quorum: OwnerRemediated False, {reason}: {message}");
    assert!(
        ["CannotBeRemediated", "RemediationInternalError"].contains(&reason.as_str()),
        "{reason}: {message}"
    );
    assert!(message.starts_with("KubeadmControlPlane "), "{message}");
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_secs(20) {
        let machines = cluster.cluster_machines().await;
        assert_eq!(machines.len(), 3, "no Machine is replaced");
        for machine in &machines {
            assert!(
                machine.metadata.deletion_timestamp.is_none(),
                "Machine {:?} is being deleted without etcd quorum\n{}",
                machine.metadata.name,
                cluster.log_tail()
            );
        }
        cluster.track().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let started = Instant::now();
    cluster.delete().await;
    eprintln!(
        "drill quorum: the cluster without etcd quorum deleted in {:?}",
        started.elapsed()
    );
}
