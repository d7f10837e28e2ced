//! The KubeadmControlPlane controller end to end: a real management plane (Corral API server
//! with the core, Dev* and kubeadm CRDs), the core controllers, the in-memory provider with its
//! simulated workload clusters (etcd members as annotated Pods), and both kubeadm controllers
//! (KubeadmConfig and KubeadmControlPlane). The test writes only what a user writes.
//!
//! Issue 5's checks: a 3-replica control plane and a worker MachineDeployment come up (Cluster
//! Available); a version upgrade rolls one machine at a time, never exceeding replicas + 1
//! Machines and never dropping etcd below quorum (as watches see it); scaling 3 → 5 → 3 spreads
//! over the failure domains; a machine made unhealthy is remediated only when etcd keeps quorum.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_api::{Cluster, Machine};
use corral_kubeadm::api::controlplane::KubeadmControlPlane;
use corral_kubeadm::controlplane::etcd::{self, EtcdAdmin, SimulatedEtcd};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};

use crate::plane::{INFRA_GROUP, NAMESPACE, Plane, condition};
use tokio::task::JoinHandle;

const CLUSTER: &str = "dev";
const KCP: &str = "dev-control-plane";
const NODE_NOT_READY: &str = "inmemory.infrastructure.cluster.x-k8s.io/node-not-ready";
const TIMEOUT: Duration = Duration::from_secs(120);

async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    corral_testenv::eventually(TIMEOUT, what, check).await
}

impl Plane {
    fn dev_machines(&self) -> Api<DynamicObject> {
        let resource = ApiResource {
            group: INFRA_GROUP.into(),
            version: "v1beta2".into(),
            api_version: format!("{INFRA_GROUP}/v1beta2"),
            kind: "DevMachine".into(),
            plural: "devmachines".into(),
        };
        Api::namespaced_with(self.env.client.clone(), NAMESPACE, &resource)
    }

    /// A Cluster with three control plane failure domains, a KubeadmControlPlane of
    /// `replicas` at v1.35.0 and a MachineDeployment of `workers`; no provisioning delay.
    async fn create_cluster(&self, replicas: i32, workers: i32) {
        self.create_named_cluster(CLUSTER, replicas, workers).await;
    }

    /// The same Cluster under another name: `<name>`, `<name>-control-plane`, `<name>-md-0`.
    async fn create_named_cluster(&self, name: &str, replicas: i32, workers: i32) {
        let control_plane = format!("{name}-control-plane");
        let md = format!("{name}-md-0");
        self.create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevCluster",
            "metadata": { "name": name },
            "spec": { "backend": { "inMemory": { "failureDomains": [
                { "name": "fd-a", "controlPlane": true },
                { "name": "fd-b", "controlPlane": true },
                { "name": "fd-c", "controlPlane": true },
            ] } } },
        }))
        .await;
        for template in [&control_plane, &md] {
            self.create(json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachineTemplate",
                "metadata": { "name": template },
                "spec": { "template": { "spec": { "backend": { "inMemory": {} } } } },
            }))
            .await;
        }
        self.create(json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": { "name": control_plane },
            "spec": {
                "replicas": replicas,
                "version": "v1.35.0",
                "machineTemplate": { "spec": { "infrastructureRef": {
                    "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": control_plane,
                } } },
                "kubeadmConfigSpec": { "preKubeadmCommands": ["echo control plane"] },
            },
        }))
        .await;
        self.create(json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate",
            "metadata": { "name": md },
            "spec": { "template": { "spec": { "preKubeadmCommands": ["echo worker"] } } },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": name },
            "spec": {
                "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevCluster", "name": name },
                "controlPlaneRef": {
                    "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": control_plane,
                },
            },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": { "name": md },
            "spec": {
                "clusterName": name,
                "replicas": workers,
                "selector": { "matchLabels": { "pool": md } },
                "template": {
                    "metadata": { "labels": { "pool": md } },
                    "spec": {
                        "clusterName": name,
                        "version": "v1.35.0",
                        "bootstrap": { "configRef": {
                            "apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": md,
                        } },
                        "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": md },
                    },
                },
            },
        }))
        .await;
    }

    async fn patch_kcp(&self, patch: Value) {
        self.api::<KubeadmControlPlane>()
            .patch(KCP, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("the KubeadmControlPlane is patched");
    }

    /// Waits until the control plane has `replicas` machines, all ready, up to date at
    /// `version`, and its status says so.
    async fn wait_settled(&self, replicas: i32, version: &str, what: &str) -> Vec<Machine> {
        eventually(what, || async {
            let kcp = self.kcp(KCP).await;
            let status = kcp.status.as_ref()?;
            let settled = status.observed_generation == kcp.metadata.generation
                && status.replicas == Some(replicas)
                && status.ready_replicas == Some(replicas)
                && status.up_to_date_replicas == Some(replicas)
                && status.version.as_deref() == Some(version)
                && condition(&status.conditions, "EtcdClusterHealthy") == Some("True".into());
            let machines = self.control_plane_machines().await;
            let all_live = machines
                .iter()
                .all(|m| m.metadata.deletion_timestamp.is_none());
            (settled && all_live && machines.len() == replicas as usize).then_some(machines)
        })
        .await
    }
}

/// What watches saw while something happened: the most control plane Machines at once, the
/// fewest healthy etcd members, the Nodes of the Machines seen waiting on the control plane's
/// pre-terminate hook, and the Nodes whose etcd member was removed.
#[derive(Default)]
struct Watched {
    most_machines: usize,
    fewest_healthy_members: Option<usize>,
    nodes_waiting_on_hook: BTreeSet<String>,
    removed_members: BTreeSet<String>,
}

/// The control plane's pre-terminate hook (upstream `PreTerminateHookCleanupAnnotation`).
const KCP_CLEANUP_HOOK: &str = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup";

/// Whether the Machine controller is waiting on the Machine's pre-terminate hooks, the
/// control plane's among them.
fn waits_on_cleanup_hook(machine: &Machine) -> bool {
    machine.annotations().contains_key(KCP_CLEANUP_HOOK)
        && machine.status.as_ref().is_some_and(|status| {
            status.conditions.iter().any(|c| {
                c.type_ == "Deleting"
                    && c.status == "True"
                    && c.reason == "WaitingForPreTerminateHook"
            })
        })
}

/// Watches the control plane Machines and the workload cluster's etcd Pods; after each change
/// of an etcd Pod, lists the members.
fn watch(plane: &Plane, workload: kube::Client) -> (Arc<Mutex<Watched>>, Vec<JoinHandle<()>>) {
    let watched = Arc::new(Mutex::new(Watched::default()));
    let machines: Api<Machine> = plane.api();
    let seen = watched.clone();
    let machines_task = tokio::spawn(async move {
        let mut names: BTreeMap<String, ()> = BTreeMap::new();
        let config = watcher::Config::default().labels("cluster.x-k8s.io/control-plane");
        let mut events = watcher::watcher(machines, config).boxed();
        while let Some(Ok(event)) = events.next().await {
            match event {
                Event::Apply(m) | Event::InitApply(m) => {
                    names.insert(m.name_any(), ());
                    if waits_on_cleanup_hook(&m)
                        && let Some(node) = m.status.as_ref().and_then(|s| s.node_ref.as_ref())
                    {
                        let mut seen = seen.lock().unwrap();
                        seen.nodes_waiting_on_hook.insert(node.name.clone());
                    }
                }
                Event::Delete(m) => {
                    names.remove(&m.name_any());
                }
                _ => continue,
            }
            let mut seen = seen.lock().unwrap();
            seen.most_machines = seen.most_machines.max(names.len());
        }
    });
    let pods: Api<Pod> = Api::namespaced(workload.clone(), "kube-system");
    let etcd = SimulatedEtcd::new(workload);
    let seen = watched.clone();
    let members_task = tokio::spawn(async move {
        let config = watcher::Config::default().labels("component=etcd");
        let mut events = watcher::watcher(pods, config).boxed();
        while let Some(Ok(event)) = events.next().await {
            if matches!(event, Event::Init | Event::InitDone) {
                continue;
            }
            if let Event::Apply(pod) | Event::InitApply(pod) = &event
                && pod.annotations().contains_key(etcd::MEMBER_REMOVED)
                && let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone())
            {
                seen.lock().unwrap().removed_members.insert(node);
            }
            let Ok(members) = etcd.members().await else {
                continue;
            };
            let healthy = members.iter().filter(|m| m.healthy).count();
            let mut seen = seen.lock().unwrap();
            seen.fewest_healthy_members = Some(
                seen.fewest_healthy_members
                    .map_or(healthy, |fewest| fewest.min(healthy)),
            );
        }
    });
    (watched, vec![machines_task, members_task])
}

fn failure_domain_counts(machines: &[Machine]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for machine in machines {
        *counts
            .entry(machine.spec.failure_domain.clone().unwrap_or_default())
            .or_insert(0) += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_comes_up_upgrades_one_machine_at_a_time_and_scales_across_failure_domains()
{
    let plane = Plane::start().await;
    plane.create_cluster(3, 3).await;

    // Up: 3 control plane machines (one per failure domain), 3 workers, Cluster Available.
    let machines = plane
        .wait_settled(3, "v1.35.0", "3 control plane machines")
        .await;
    assert_eq!(
        failure_domain_counts(&machines),
        BTreeMap::from([("fd-a".into(), 1), ("fd-b".into(), 1), ("fd-c".into(), 1)])
    );
    for machine in &machines {
        let labels = machine.labels();
        assert_eq!(labels["cluster.x-k8s.io/control-plane-name"], KCP);
        assert_eq!(labels["cluster.x-k8s.io/control-plane"], "");
        let owner = &machine.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("KubeadmControlPlane", Some(true))
        );
        assert_eq!(
            machine
                .annotations()
                .get(KCP_CLEANUP_HOOK)
                .map(String::as_str),
            Some(""),
            "the control plane's pre-terminate hook"
        );
    }
    // Each control plane Machine carries the control plane's six conditions beside the
    // Machine controller's own.
    eventually(
        "the control plane's Machine conditions beside the Machine controller's",
        || async {
            let machines = plane.control_plane_machines().await;
            machines
                .iter()
                .all(|machine| {
                    let Some(status) = machine.status.as_ref() else {
                        return false;
                    };
                    [
                        "UpToDate",
                        "APIServerPodHealthy",
                        "ControllerManagerPodHealthy",
                        "SchedulerPodHealthy",
                        "EtcdPodHealthy",
                        "EtcdMemberHealthy",
                        "BootstrapConfigReady",
                        "InfrastructureReady",
                        "NodeReady",
                        "Ready",
                    ]
                    .iter()
                    .all(|type_| condition(&status.conditions, type_) == Some("True".into()))
                })
                .then_some(())
        },
    )
    .await;
    let clusters: Api<Cluster> = plane.api();
    eventually("the Cluster to be Available", || async {
        let cluster = clusters.get(CLUSTER).await.unwrap();
        let status = cluster.status?;
        (condition(&status.conditions, "Available") == Some("True".into())).then_some(())
    })
    .await;
    let kcp = plane.kcp(KCP).await;
    let status = kcp.status.clone().unwrap();
    assert_eq!(status.initialization.control_plane_initialized, Some(true));
    assert_eq!(
        status.selector.as_deref(),
        Some(
            "cluster.x-k8s.io/cluster-name=dev,cluster.x-k8s.io/control-plane,cluster.x-k8s.io/control-plane-name=dev-control-plane"
        )
    );
    for type_ in [
        "Available",
        "Initialized",
        "CertificatesAvailable",
        "ControlPlaneComponentsHealthy",
        "MachinesReady",
        "MachinesUpToDate",
    ] {
        assert_eq!(
            condition(&status.conditions, type_),
            Some("True".into()),
            "{type_}"
        );
    }
    for type_ in [
        "RollingOut",
        "ScalingUp",
        "ScalingDown",
        "Remediating",
        "Deleting",
        "Paused",
    ] {
        assert_eq!(
            condition(&status.conditions, type_),
            Some("False".into()),
            "{type_}"
        );
    }

    // The cluster certificates exist once, owned by the KubeadmControlPlane.
    let secrets: Api<Secret> = plane.api();
    for suffix in ["ca", "etcd", "proxy", "sa", "kubeconfig"] {
        let secret = secrets.get(&format!("{CLUSTER}-{suffix}")).await.unwrap();
        assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
        let owner = &secret.owner_references()[0];
        assert_eq!(owner.kind, "KubeadmControlPlane", "{suffix}");
    }

    // The kubeconfig Secret reaches the workload cluster: three etcd members, one leader.
    let workload = plane.workload_client(CLUSTER).await;
    let etcd = SimulatedEtcd::new(workload.clone());
    let members = etcd.members().await.unwrap();
    assert_eq!(members.len(), 3, "{members:?}");
    assert_eq!(members.iter().filter(|m| m.leader).count(), 1);

    // Upgrade: one machine at a time, at most 4 machines, etcd never below quorum (2 of 3).
    let (watched, tasks) = watch(&plane, workload.clone());
    plane
        .patch_kcp(json!({ "spec": { "version": "v1.36.0" } }))
        .await;
    let upgraded = plane
        .wait_settled(3, "v1.36.0", "the upgrade to v1.36.0")
        .await;
    assert!(
        upgraded
            .iter()
            .all(|m| m.spec.version.as_deref() == Some("v1.36.0")),
        "every machine runs v1.36.0"
    );
    assert!(
        upgraded
            .iter()
            .all(|m| !machines.iter().any(|old| old.name_any() == m.name_any())),
        "every machine was replaced"
    );
    {
        let watched = watched.lock().unwrap();
        assert!(
            watched.most_machines <= 4,
            "at most replicas + maxSurge: {}",
            watched.most_machines
        );
        assert!(
            watched.most_machines >= 4,
            "the rollout surged: {}",
            watched.most_machines
        );
        let fewest = watched
            .fewest_healthy_members
            .expect("etcd changes were seen");
        assert!(
            fewest >= 2,
            "etcd kept quorum: fewest healthy members {fewest}"
        );
        // Each old machine's etcd member was removed in the pre-terminate hook, once the
        // Machine controller had drained its Node and waited on the hook (upstream).
        assert_eq!(
            watched.removed_members.len(),
            3,
            "every old member removed: {:?}",
            watched.removed_members
        );
        assert!(
            watched
                .removed_members
                .is_subset(&watched.nodes_waiting_on_hook),
            "members removed {:?}, machines seen waiting on the hook {:?}",
            watched.removed_members,
            watched.nodes_waiting_on_hook
        );
    }
    for task in tasks {
        task.abort();
    }
    let members = etcd.members().await.unwrap();
    assert_eq!(members.len(), 3, "members follow the machines: {members:?}");

    // Scale 3 → 5 → 3 across the failure domains.
    plane.patch_kcp(json!({ "spec": { "replicas": 5 } })).await;
    let five = plane
        .wait_settled(5, "v1.36.0", "5 control plane machines")
        .await;
    let counts = failure_domain_counts(&five);
    assert_eq!(counts.len(), 3, "{counts:?}");
    assert!(counts.values().all(|c| (1..=2).contains(c)), "{counts:?}");
    assert_eq!(etcd.members().await.unwrap().len(), 5);

    plane.patch_kcp(json!({ "spec": { "replicas": 3 } })).await;
    let three = plane
        .wait_settled(3, "v1.36.0", "back to 3 control plane machines")
        .await;
    assert_eq!(
        failure_domain_counts(&three),
        BTreeMap::from([("fd-a".into(), 1), ("fd-b".into(), 1), ("fd-c".into(), 1)])
    );
    let members = etcd.members().await.unwrap();
    assert_eq!(members.len(), 3, "{members:?}");
    let nodes: Vec<String> = three
        .iter()
        .map(|m| {
            m.status
                .as_ref()
                .unwrap()
                .node_ref
                .as_ref()
                .unwrap()
                .name
                .clone()
        })
        .collect();
    assert!(
        members.iter().all(|m| nodes.contains(&m.name)),
        "{members:?} {nodes:?}"
    );
    plane.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unhealthy_control_plane_machine_is_remediated_only_when_etcd_keeps_quorum() {
    let plane = Plane::start().await;
    plane.create_cluster(3, 0).await;
    let machines = plane
        .wait_settled(3, "v1.35.0", "3 control plane machines")
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineHealthCheck",
            "metadata": { "name": "dev-control-plane" },
            "spec": {
                "clusterName": CLUSTER,
                "selector": { "matchLabels": { "cluster.x-k8s.io/control-plane": "" } },
                "checks": { "unhealthyNodeConditions": [
                    { "type": "Ready", "status": "False", "timeoutSeconds": 0 },
                ] },
            },
        }))
        .await;

    // Two of three unhealthy: removing either would leave 1 healthy member of 2, no quorum.
    let set_not_ready = async |machine: &Machine, value: Option<&str>| {
        plane
            .dev_machines()
            .patch(
                &machine.spec.infrastructure_ref.name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": { "annotations": { NODE_NOT_READY: value } } })),
            )
            .await
            .unwrap();
    };
    set_not_ready(&machines[0], Some("true")).await;
    set_not_ready(&machines[1], Some("true")).await;
    let message = eventually("remediation to be blocked by quorum", || async {
        let kcp = plane.kcp(KCP).await;
        let status = kcp.status?;
        let remediating = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Remediating")?;
        (remediating.status == "True" && remediating.reason == "RemediationBlocked")
            .then(|| remediating.message.clone())
    })
    .await;
    assert!(message.contains("quorum"), "{message}");
    let now = plane.control_plane_machines().await;
    assert_eq!(now.len(), 3);
    assert!(
        now.iter().all(|m| m.metadata.deletion_timestamp.is_none()),
        "no machine is deleted while quorum forbids it"
    );
    assert!(
        plane
            .kcp(KCP)
            .await
            .status
            .unwrap()
            .last_remediation
            .is_none()
    );

    // One recovers: now the other can go, and is replaced.
    set_not_ready(&machines[0], None).await;
    let remediated = machines[1].name_any();
    let last = eventually("the unhealthy machine to be remediated", || async {
        plane.kcp(KCP).await.status?.last_remediation
    })
    .await;
    assert_eq!(last.machine, remediated);
    assert_eq!(last.retry_count, 0);
    let after = plane
        .wait_settled(3, "v1.35.0", "the replacement machine")
        .await;
    assert!(!after.iter().any(|m| m.name_any() == remediated));
    assert!(after.iter().any(|m| m.name_any() == machines[0].name_any()));
    let replacement = after
        .iter()
        .find(|m| !machines.iter().any(|old| old.name_any() == m.name_any()))
        .expect("a replacement machine");
    let record = &replacement.annotations()["controlplane.cluster.x-k8s.io/remediation-for"];
    assert!(record.contains(&remediated), "{record}");

    // The KubeadmControlPlane's Events tell the story.
    let events: Api<k8s_openapi::api::events::v1::Event> = plane.api();
    let reasons = eventually("the remediation Event", || async {
        let reasons: Vec<String> = events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(KCP))
            .filter_map(|e| e.reason)
            .collect();
        reasons
            .iter()
            .any(|r| r == "MachineRemediation")
            .then_some(reasons)
    })
    .await;
    for reason in ["SuccessfulCreate", "SuccessfulDelete"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }
    plane.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_max_surge_0_a_rollout_scales_down_first_and_deleting_the_cluster_removes_the_control_plane()
 {
    let plane = Plane::start().await;
    plane.create_cluster(3, 1).await;
    plane
        .patch_kcp(json!({ "spec": { "rollout": { "strategy": {
            "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 0 },
        } } } }))
        .await;
    let machines = plane
        .wait_settled(3, "v1.35.0", "3 control plane machines")
        .await;
    let workload = plane.workload_client(CLUSTER).await;

    // A new rollout.after replaces every machine, never more than 3 at once.
    let (watched, tasks) = watch(&plane, workload);
    let after = k8s_openapi::jiff::Timestamp::now().to_string();
    plane
        .patch_kcp(json!({ "spec": { "rollout": { "after": after } } }))
        .await;
    let rolled = eventually("every machine to be replaced", || async {
        let machines_now = plane.wait_settled(3, "v1.35.0", "3 settled machines").await;
        machines_now
            .iter()
            .all(|m| !machines.iter().any(|old| old.name_any() == m.name_any()))
            .then_some(machines_now)
    })
    .await;
    assert_eq!(rolled.len(), 3);
    {
        let watched = watched.lock().unwrap();
        assert!(
            watched.most_machines <= 3,
            "maxSurge 0: {}",
            watched.most_machines
        );
        let fewest = watched
            .fewest_healthy_members
            .expect("etcd changes were seen");
        assert!(
            fewest >= 2,
            "etcd kept quorum: fewest healthy members {fewest}"
        );
    }
    for task in tasks {
        task.abort();
    }

    // Deleting the Cluster deletes the workers, then the control plane, then the
    // KubeadmControlPlane itself (its finalizer released last).
    let clusters: Api<Cluster> = plane.api();
    clusters
        .delete(CLUSTER, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the KubeadmControlPlane and every Machine to be gone",
        || async {
            let kcp = plane
                .api::<KubeadmControlPlane>()
                .get_opt(KCP)
                .await
                .unwrap();
            let machines = plane
                .api::<Machine>()
                .list(&ListParams::default())
                .await
                .unwrap();
            (kcp.is_none() && machines.items.is_empty()).then_some(())
        },
    )
    .await;
    plane.stop().await;
}

/// Issue 5's benchmark (not a test; run with `--ignored`): `CORRAL_KCP_BENCH_CLUSTERS` (100)
/// Clusters, each a KubeadmControlPlane of 3 and a MachineDeployment of 3 with no provisioning
/// delay, created at once; prints how long until every control plane has 3 ready, up-to-date
/// machines and every MachineDeployment 3 available replicas, then the controllers' requests
/// to the management API server per cluster (by verb and resource) and their reconciles. The
/// time is recorded in BENCHMARKS.md, not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark"]
async fn benchmark_clusters_with_a_control_plane_of_3_and_3_workers_come_up() {
    use kube::runtime::{reflector, watcher};
    let count: usize = std::env::var("CORRAL_KCP_BENCH_CLUSTERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let plane = Plane::start_counting().await;
    // The benchmark watches what it waits for (a list of every KubeadmControlPlane and
    // MachineDeployment each look cost a few per cent of the CPU at 100 clusters), through
    // its own client, so that its requests are not counted as the controllers'.
    let (kcps, kcp_writer) = reflector::store();
    let (mds, md_writer) = reflector::store();
    let kcp_watch = tokio::spawn(
        reflector::reflector(
            kcp_writer,
            watcher(
                plane.api::<KubeadmControlPlane>(),
                watcher::Config::default(),
            ),
        )
        .for_each(|_| async {}),
    );
    let md_watch = tokio::spawn(
        reflector::reflector(
            md_writer,
            watcher(
                plane.api::<corral_api::MachineDeployment>(),
                watcher::Config::default(),
            ),
        )
        .for_each(|_| async {}),
    );
    // The clock starts at the first create. Clusters are created CREATING at a time, each
    // cluster's seven objects in order (as `kubectl apply` of one cluster's manifest sends
    // them): one by one, creation alone took 18–23 s of 100 clusters' bring-up.
    const CREATING: usize = 16;
    let timeline = crate::timeline::Timeline::start(&plane.env.client, NAMESPACE);
    let cpu_before = cpu_seconds();
    let started = std::time::Instant::now();
    futures::stream::iter(0..count)
        .map(|index| {
            let (plane, timeline) = (&plane, &timeline);
            async move {
                let name = format!("c{index}");
                timeline.creating(&name);
                plane.create_named_cluster(&name, 3, 3).await
            }
        })
        .buffer_unordered(CREATING)
        .collect::<()>()
        .await;
    let created = started.elapsed();
    let deadline = std::time::Instant::now() + Duration::from_secs(1800);
    loop {
        let ready_kcps = kcps
            .state()
            .iter()
            .filter(|kcp: &&Arc<KubeadmControlPlane>| {
                kcp.status.as_ref().is_some_and(|s| {
                    s.ready_replicas == Some(3) && s.up_to_date_replicas == Some(3)
                })
            })
            .count();
        let ready_mds = mds
            .state()
            .iter()
            .filter(|md: &&Arc<corral_api::MachineDeployment>| {
                md.status
                    .as_ref()
                    .is_some_and(|s| s.available_replicas == Some(3))
            })
            .count();
        if ready_kcps == count && ready_mds == count {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{ready_kcps} of {count} control planes and {ready_mds} of {count} MachineDeployments up after 30 minutes"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let up = started.elapsed();
    eprintln!(
        "{count} clusters (KCP 3 + MD 3): created in {:.1} s, all up in {:.1} s, {:.1} CPU s \
         since the first create ({:.1} since the process started)",
        created.as_secs_f64(),
        up.as_secs_f64(),
        cpu_seconds() - cpu_before,
        cpu_seconds()
    );
    eprint!("{}", timeline.report());
    let requests = plane.requests.as_ref().unwrap().lock().unwrap().clone();
    // Conflicts are counted again under their request's key + " (409)" (see `plane.rs`).
    let (conflicts, total) = requests
        .iter()
        .fold((0, 0), |(conflicts, total), (key, n)| {
            if key.ends_with(" (409)") {
                (conflicts + n, total)
            } else {
                (conflicts, total + n)
            }
        });
    let mut requests: Vec<(String, u64)> = requests.into_iter().collect();
    requests.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    eprintln!(
        "controllers' requests to the management API server: {total} ({:.1} per cluster), \
         {conflicts} answered 409 Conflict ({:.1} per cluster)",
        total as f64 / count as f64,
        conflicts as f64 / count as f64
    );
    for (request, n) in requests.iter().take(50) {
        eprintln!("  {:>7.1} per cluster  {request}", *n as f64 / count as f64);
    }
    for counted in corral_runtime::metrics::reconcile_counts() {
        eprintln!(
            "  {:>7.1} reconciles per cluster ({} failed)  {}",
            counted.reconciles as f64 / count as f64,
            counted.failures,
            counted.controller
        );
    }
    kcp_watch.abort();
    md_watch.abort();
    drop(timeline);
    plane.stop().await;
}

/// The process's user and system CPU seconds so far (`/proc/self/stat`, in clock ticks of
/// 1/100 s, Linux's `USER_HZ`).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |index: usize| fields.get(index).and_then(|f| f.parse::<f64>().ok());
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    ticks(11).unwrap_or_default() / 100.0 + ticks(12).unwrap_or_default() / 100.0
}
