//! End to end: the core controllers and the in-memory provider, both running against a real
//! management plane (a Corral API server with the core and Dev* CRDs), with simulated workload
//! clusters reached through their `<cluster>-kubeconfig` Secrets. Nothing is played by the
//! test: it only writes what a user writes and watches what the controllers do.
//!
//! Issue 4's integration checks: a Cluster with a MachineDeployment of 3 comes up (Machines
//! Running, Nodes Ready), rolls to a new template within maxSurge and maxUnavailable as a watch
//! sees it, scales to 5 and to 1, has a broken node replaced through a MachineHealthCheck, and
//! is deleted in order; and controllers restarted mid-rollout finish it without extra Machines.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use corral_api::{Cluster, Machine, MachineDeployment, MachinePhase, MachineSet};
use corral_cloud::InProcessCloud;
use corral_runtime::cluster_cache::ClusterCacheConfig;
use corral_testenv::TestEnv;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::{eventually, node_ready};

const NAMESPACE: &str = "default";
const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";
const CLUSTER: &str = "dev";
const DEPLOYMENT: &str = "dev-md-0";
const CONTROL_PLANE_MACHINE: &str = "dev-control-plane-0";
const REVISION: &str = "machinedeployment.clusters.x-k8s.io/revision";
const NODE_NOT_READY: &str = "inmemory.infrastructure.cluster.x-k8s.io/node-not-ready";

/// A management plane with every CRD installed, the core controllers and the in-memory
/// provider running over one simulated cloud.
struct Plane {
    env: TestEnv,
    cloud: Arc<InProcessCloud>,
    controllers: Option<Controllers>,
}

/// The core controllers and the provider's, stopped together by one shutdown future.
struct Controllers {
    stop: tokio::sync::oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Controllers {
    fn start(client: kube::Client, cloud: Arc<InProcessCloud>) -> Controllers {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        }
        .shared();
        let config = corral_controllers::Config {
            backoff_max: std::time::Duration::from_secs(1),
            cluster_cache: ClusterCacheConfig {
                probe_interval: std::time::Duration::from_millis(500),
                probe_timeout: std::time::Duration::from_secs(2),
                failure_threshold: 3,
            },
            ..Default::default()
        };
        let task = tokio::spawn(async move {
            let provider = corral_infra_inmemory::run(client.clone(), cloud, shutdown.clone());
            let core = corral_controllers::run(client, config, shutdown);
            let ((), result) = tokio::join!(provider, core);
            result.expect("the core controllers start");
        });
        Controllers { stop, task }
    }

    /// Asks the controllers to stop and waits until they have.
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.expect("the controllers do not panic");
    }
}

impl Plane {
    async fn start() -> Plane {
        let env = TestEnv::start().await;
        let crds: Vec<Value> = corral_api::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).unwrap())
            .chain(
                corral_infra_inmemory::crds()
                    .into_iter()
                    .map(|crd| serde_json::to_value(crd).unwrap()),
            )
            .collect();
        env.install_crds(&crds).await;
        let cloud = Arc::new(InProcessCloud::new());
        let controllers = Some(Controllers::start(env.client.clone(), cloud.clone()));
        Plane {
            env,
            cloud,
            controllers,
        }
    }

    /// Stops the running controllers (a graceful shutdown, whatever they are doing) and starts
    /// a fresh set with empty caches, as a restarted management plane would.
    async fn restart_controllers(&mut self) {
        if let Some(controllers) = self.controllers.take() {
            controllers.stop().await;
        }
        self.controllers = Some(Controllers::start(
            self.env.client.clone(),
            self.cloud.clone(),
        ));
    }

    async fn stop(mut self) {
        if let Some(controllers) = self.controllers.take() {
            controllers.stop().await;
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.env.client.clone(), NAMESPACE)
    }

    fn dev(&self, kind: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.env.client.clone(), NAMESPACE, &dev_resource(kind))
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
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.env.client.clone(), NAMESPACE, &resource);
        let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|error| panic!("creating a {kind}: {error}"));
    }

    /// The cluster of issue 4: a DevCluster, one control plane Machine (machine-based, as
    /// upstream allows without a `controlPlaneRef`), fixed bootstrap data, and a
    /// MachineDeployment of `replicas` workers on the `dev-md-v1` template. No provisioning
    /// delay: every simulated step completes at once.
    async fn create_cluster(&self, replicas: i32, rollout: Value) {
        let labels = json!({ "cluster.x-k8s.io/cluster-name": CLUSTER });
        self.create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": "dev-bootstrap", "labels": labels },
            "type": "cluster.x-k8s.io/secret",
            "stringData": { "value": "#cloud-config\n", "format": "cloud-config" },
        }))
        .await;
        self.create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevCluster",
            "metadata": { "name": CLUSTER },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": CLUSTER },
            "spec": {
                "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevCluster", "name": CLUSTER },
            },
        }))
        .await;
        self.create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachine",
            "metadata": { "name": CONTROL_PLANE_MACHINE, "labels": labels },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": { "name": CONTROL_PLANE_MACHINE, "labels": {
                "cluster.x-k8s.io/cluster-name": CLUSTER,
                "cluster.x-k8s.io/control-plane": "",
            }},
            "spec": {
                "clusterName": CLUSTER,
                "version": "v1.36.0",
                "bootstrap": { "dataSecretName": "dev-bootstrap" },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachine", "name": CONTROL_PLANE_MACHINE },
            },
        }))
        .await;
        for template in ["dev-md-v1", "dev-md-v2"] {
            self.create(json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachineTemplate",
                "metadata": { "name": template },
                "spec": { "template": { "spec": { "backend": { "inMemory": {} } } } },
            }))
            .await;
        }
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": { "name": DEPLOYMENT },
            "spec": {
                "clusterName": CLUSTER,
                "replicas": replicas,
                "rollout": rollout,
                "selector": { "matchLabels": { "pool": DEPLOYMENT } },
                "template": {
                    "metadata": { "labels": { "pool": DEPLOYMENT } },
                    "spec": {
                        "clusterName": CLUSTER,
                        "version": "v1.36.0",
                        "bootstrap": { "dataSecretName": "dev-bootstrap" },
                        "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": "dev-md-v1" },
                    },
                },
            },
        }))
        .await;
    }

    async fn patch_deployment(&self, patch: Value) {
        self.api::<MachineDeployment>()
            .patch(DEPLOYMENT, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("the MachineDeployment is patched");
    }

    /// Waits until the MachineDeployment has `replicas` Machines, all available and up to
    /// date, at `revision`, and no other Machines of it are left.
    async fn wait_settled(&self, replicas: i32, revision: &str, what: &str) -> Vec<Machine> {
        let deadline = tokio::time::Instant::now() + super::PATIENCE;
        loop {
            let md = self
                .api::<MachineDeployment>()
                .get(DEPLOYMENT)
                .await
                .unwrap();
            let machines = self.worker_machines().await;
            let settled = md.status.as_ref().is_some_and(|status| {
                status.observed_generation == md.metadata.generation
                    && status.replicas == Some(replicas)
                    && status.available_replicas == Some(replicas)
                    && status.up_to_date_replicas == Some(replicas)
            }) && md.annotations().get(REVISION).map(String::as_str)
                == Some(revision);
            if settled && machines.len() == replicas as usize {
                return machines;
            }
            if tokio::time::Instant::now() > deadline {
                let sets = self
                    .api::<MachineSet>()
                    .list(&Default::default())
                    .await
                    .unwrap();
                panic!(
                    "timed out waiting for {what}\nMachineDeployment: {}\nMachineSets: {}\nMachines: {:#?}",
                    serde_json::to_string(&md.status).unwrap(),
                    sets.items
                        .iter()
                        .map(|ms| format!(
                            "{} spec={:?} status={}",
                            ms.name_any(),
                            ms.spec.replicas,
                            serde_json::to_string(&ms.status).unwrap()
                        ))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    machines.iter().map(describe).collect::<Vec<_>>(),
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
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

    /// The DevMachineTemplate a worker Machine's DevMachine was cloned from.
    async fn cloned_from(&self, machine: &Machine) -> String {
        let dev_machine = self
            .dev("DevMachine")
            .get(&machine.spec.infrastructure_ref.name)
            .await
            .unwrap();
        dev_machine.annotations()["cluster.x-k8s.io/cloned-from-name"].clone()
    }

    /// A client for the simulated workload cluster, built from the `<cluster>-kubeconfig`
    /// Secret alone, as a user's kubectl would be.
    async fn workload_client(&self) -> kube::Client {
        let secrets: Api<Secret> = self.api();
        let name = format!("{CLUSTER}-kubeconfig");
        let secret = eventually("the kubeconfig Secret", || async {
            secrets.get_opt(&name).await.unwrap()
        })
        .await;
        let value = &secret.data.unwrap()["value"].0;
        let kubeconfig = Kubeconfig::from_yaml(std::str::from_utf8(value).unwrap()).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// Waits until every given Machine is Running with a nodeRef whose Node, in the workload
    /// cluster, has the Machine's providerID and is Ready.
    async fn wait_nodes_ready(&self, workload: &kube::Client, machines: &[Machine]) {
        let nodes: Api<Node> = Api::all(workload.clone());
        for machine in machines {
            let name = machine.name_any();
            let machine = eventually("the Machine to be Running with a nodeRef", || async {
                let machine = self.api::<Machine>().get(&name).await.unwrap();
                let status = machine.status.as_ref()?;
                (status.phase == Some(MachinePhase::Running) && status.node_ref.is_some())
                    .then_some(machine)
            })
            .await;
            let node_name = machine.status.unwrap().node_ref.unwrap().name;
            let node = eventually("the Node to be Ready", || async {
                let node = nodes.get_opt(&node_name).await.unwrap()?;
                (node_ready(&node)? == "True").then_some(node)
            })
            .await;
            assert_eq!(
                node.spec.unwrap().provider_id,
                machine.spec.provider_id,
                "{name}'s Node carries its providerID"
            );
        }
    }
}

fn dev_resource(kind: &str) -> ApiResource {
    ApiResource {
        group: INFRA_GROUP.into(),
        version: "v1beta2".into(),
        api_version: format!("{INFRA_GROUP}/v1beta2"),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    }
}

/// What a watch of a MachineDeployment's Machines saw during a rollout.
#[derive(Debug, Default)]
struct Observed {
    violations: Vec<String>,
    most_machines: usize,
    fewest_available: usize,
    states: usize,
    /// Every Machine name the watch saw, to count the Machines ever created.
    names: BTreeSet<String>,
}

/// Watches the MachineDeployment's Machines and checks every state the watch delivers against
/// `machines ≤ max` and `available ≥ min`. A Machine counts as available when its Available
/// condition is True and it is not being deleted; a deleting Machine still counts as a
/// Machine until it is gone.
struct InvariantWatch {
    task: JoinHandle<()>,
    observed: Arc<Mutex<Observed>>,
}

impl InvariantWatch {
    /// Starts the watch and returns once it has listed the Machines, so that nothing the
    /// test does afterwards is missed.
    async fn start(plane: &Plane, max: usize, min: usize) -> InvariantWatch {
        let api: Api<Machine> = plane.api();
        let config = watcher::Config::default()
            .labels(&format!("cluster.x-k8s.io/deployment-name={DEPLOYMENT}"));
        let observed = Arc::new(Mutex::new(Observed {
            fewest_available: usize::MAX,
            ..Default::default()
        }));
        let shared = observed.clone();
        let (listed, on_listed) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut listed = Some(listed);
            let mut events = watcher::watcher(api, config).boxed();
            let mut machines: BTreeMap<String, Machine> = BTreeMap::new();
            let mut listing: BTreeMap<String, Machine> = BTreeMap::new();
            let mut ready = false;
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                match event {
                    Event::Init => listing.clear(),
                    Event::InitApply(machine) => {
                        listing.insert(machine.name_any(), machine);
                    }
                    Event::InitDone => {
                        machines = std::mem::take(&mut listing);
                        ready = true;
                        if let Some(listed) = listed.take() {
                            let _ = listed.send(());
                        }
                    }
                    Event::Apply(machine) => {
                        machines.insert(machine.name_any(), machine);
                    }
                    Event::Delete(machine) => {
                        machines.remove(&machine.name_any());
                    }
                }
                if !ready {
                    continue;
                }
                let total = machines.len();
                let available = machines.values().filter(|m| is_available(m)).count();
                let mut observed = shared.lock().unwrap();
                observed.names.extend(machines.keys().cloned());
                observed.states += 1;
                observed.most_machines = observed.most_machines.max(total);
                observed.fewest_available = observed.fewest_available.min(available);
                if total > max || available < min {
                    observed.violations.push(format!(
                        "{total} Machines (max {max}), {available} available (min {min}): {:?}",
                        machines.keys().collect::<Vec<_>>()
                    ));
                }
            }
        });
        on_listed.await.expect("the Machine watch lists");
        InvariantWatch { task, observed }
    }

    fn finish(self) -> Observed {
        self.task.abort();
        std::mem::take(&mut *self.observed.lock().unwrap())
    }
}

/// A Machine in one line, for a failure message: name, phase, deletion, conditions not True.
fn describe(machine: &Machine) -> String {
    let status = machine.status.as_ref();
    let not_true: Vec<String> = status
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|c| c.status != "True" && c.type_ != "Deleting" && c.type_ != "Paused")
        .map(|c| format!("{}={} {} {:?}", c.type_, c.status, c.reason, c.message))
        .collect();
    format!(
        "{} phase={:?} deleting={} owner={:?} {not_true:?}",
        machine.name_any(),
        status.and_then(|s| s.phase),
        machine.metadata.deletion_timestamp.is_some(),
        machine.owner_references().first().map(|o| &o.name),
    )
}

fn is_available(machine: &Machine) -> bool {
    machine.metadata.deletion_timestamp.is_none()
        && machine.status.as_ref().is_some_and(|status| {
            status
                .conditions
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        })
}

/// One step of a deletion as a watch saw it: the object's kind and name, whether its deletion
/// was requested (deletionTimestamp set) or it is gone, and the resourceVersion of that write.
/// Corral's resourceVersions are one global revision, so they order steps across kinds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Step {
    revision: u64,
    kind: &'static str,
    name: String,
    gone: bool,
}

/// Watches the kinds a Cluster deletion touches and records each object's deletion steps.
struct DeletionWatch {
    tasks: Vec<JoinHandle<()>>,
    steps: Arc<Mutex<Vec<Step>>>,
}

impl DeletionWatch {
    async fn start(plane: &Plane) -> DeletionWatch {
        let steps = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        let mut listed = Vec::new();
        let typed = |kind: &str| ApiResource {
            group: "cluster.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "cluster.x-k8s.io/v1beta2".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        };
        let kinds: [(&'static str, ApiResource); 6] = [
            ("Cluster", typed("Cluster")),
            ("MachineDeployment", typed("MachineDeployment")),
            ("MachineSet", typed("MachineSet")),
            ("Machine", typed("Machine")),
            ("DevCluster", dev_resource("DevCluster")),
            ("DevMachine", dev_resource("DevMachine")),
        ];
        for (kind, resource) in kinds {
            let api: Api<DynamicObject> =
                Api::namespaced_with(plane.env.client.clone(), NAMESPACE, &resource);
            let steps = steps.clone();
            let (done, on_listed) = tokio::sync::oneshot::channel::<()>();
            listed.push(on_listed);
            tasks.push(tokio::spawn(async move {
                let mut done = Some(done);
                let mut requested = BTreeSet::new();
                let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
                while let Some(event) = events.next().await {
                    let Ok(event) = event else { continue };
                    let (object, gone) = match event {
                        Event::InitDone => {
                            if let Some(done) = done.take() {
                                let _ = done.send(());
                            }
                            continue;
                        }
                        Event::Init | Event::InitApply(_) => continue,
                        Event::Apply(object) => (object, false),
                        Event::Delete(object) => (object, true),
                    };
                    let name = object.name_any();
                    let first_request = object.metadata.deletion_timestamp.is_some()
                        && requested.insert(name.clone());
                    if !(gone || first_request) {
                        continue;
                    }
                    let revision = object
                        .resource_version()
                        .and_then(|rv| rv.parse().ok())
                        .expect("a numeric resourceVersion");
                    steps.lock().unwrap().push(Step {
                        revision,
                        kind,
                        name,
                        gone,
                    });
                }
            }));
        }
        for on_listed in listed {
            on_listed.await.expect("the watch lists");
        }
        DeletionWatch { tasks, steps }
    }

    fn finish(self) -> Vec<Step> {
        for task in &self.tasks {
            task.abort();
        }
        let mut steps = std::mem::take(&mut *self.steps.lock().unwrap());
        steps.sort();
        steps
    }
}

/// Issue 4's end-to-end check, on the in-memory provider with nothing faked: up, rolling
/// update within bounds, scale to 5 and to 1, a broken node remediated, deletion in order.
#[tokio::test]
async fn a_cluster_comes_up_rolls_out_scales_heals_and_is_deleted_in_order() {
    let plane = Plane::start().await;
    plane
        .create_cluster(
            3,
            json!({ "strategy": { "type": "RollingUpdate",
                    "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } } }),
        )
        .await;

    // Up: three workers and the control plane Machine Running, their Nodes Ready in the
    // simulated workload cluster, reached through the kubeconfig Secret.
    let workers = plane.wait_settled(3, "1", "three available workers").await;
    let workload = plane.workload_client().await;
    plane.wait_nodes_ready(&workload, &workers).await;
    let control_plane = plane
        .api::<Machine>()
        .get(CONTROL_PLANE_MACHINE)
        .await
        .unwrap();
    plane
        .wait_nodes_ready(&workload, std::slice::from_ref(&control_plane))
        .await;
    for worker in &workers {
        assert_eq!(plane.cloned_from(worker).await, "dev-md-v1");
        let provider_id = worker.spec.provider_id.clone().unwrap_or_default();
        assert!(provider_id.starts_with("in-memory://"), "{provider_id}");
    }
    let cluster = eventually("the Cluster to be Provisioned", || async {
        let cluster = plane.api::<Cluster>().get(CLUSTER).await.unwrap();
        let phase = cluster.status.as_ref()?.phase?;
        (serde_json::to_value(phase).unwrap() == "Provisioned").then_some(cluster)
    })
    .await;
    assert!(
        cluster
            .finalizers()
            .contains(&"cluster.cluster.x-k8s.io".to_owned())
    );

    // A new template: the rolling update never has more than 3 + 1 Machines nor fewer than
    // 3 − 0 available, in any state the watch delivers.
    let watch = InvariantWatch::start(&plane, 4, 3).await;
    plane
        .patch_deployment(json!({ "spec": { "template": { "spec": {
            "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": "dev-md-v2" },
        } } } }))
        .await;
    let rolled = plane.wait_settled(3, "2", "the rollout to complete").await;
    let observed = watch.finish();
    assert!(observed.violations.is_empty(), "{:#?}", observed.violations);
    assert_eq!(
        observed.most_machines, 4,
        "the surge was used: {observed:?}"
    );
    assert_eq!(observed.fewest_available, 3, "{observed:?}");
    assert_eq!(
        observed.names.len(),
        6,
        "each old Machine replaced by exactly one new one: {observed:?}"
    );
    for machine in &rolled {
        assert_eq!(plane.cloned_from(machine).await, "dev-md-v2");
        assert!(!workers.iter().any(|w| w.name_any() == machine.name_any()));
    }
    plane.wait_nodes_ready(&workload, &rolled).await;
    let sets = eventually("the old MachineSet to be cleaned up", || async {
        let sets = plane
            .api::<MachineSet>()
            .list(&Default::default())
            .await
            .unwrap();
        (sets.items.len() == 1).then_some(sets.items)
    })
    .await;
    assert_eq!(sets[0].annotations()[REVISION], "2");

    // Scale to 5, then to 1.
    plane
        .patch_deployment(json!({ "spec": { "replicas": 5 } }))
        .await;
    let five = plane.wait_settled(5, "2", "five available workers").await;
    plane.wait_nodes_ready(&workload, &five).await;
    plane
        .patch_deployment(json!({ "spec": { "replicas": 1 } }))
        .await;
    let one = plane.wait_settled(1, "2", "one worker").await;
    let nodes: Api<Node> = Api::all(workload.clone());
    eventually("the Nodes of the removed workers to be deleted", || async {
        let names: BTreeSet<String> = nodes
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|n| n.name_any())
            .collect();
        let expected: BTreeSet<String> = [CONTROL_PLANE_MACHINE.to_owned(), one[0].name_any()]
            .into_iter()
            .collect();
        (names == expected).then_some(())
    })
    .await;

    // Break the last worker's Node: the health check marks its Machine, the MachineSet
    // replaces it, and the replacement's Node comes up Ready.
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineHealthCheck",
            "metadata": { "name": "dev-workers" },
            "spec": {
                "clusterName": CLUSTER,
                "selector": { "matchLabels": { "pool": DEPLOYMENT } },
                "checks": { "unhealthyNodeConditions": [
                    { "type": "Ready", "status": "False", "timeoutSeconds": 1 },
                    { "type": "Ready", "status": "Unknown", "timeoutSeconds": 1 },
                ] },
            },
        }))
        .await;
    let broken = one[0].name_any();
    plane
        .dev("DevMachine")
        .patch(
            &one[0].spec.infrastructure_ref.name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { NODE_NOT_READY: "true" } } })),
        )
        .await
        .unwrap();
    eventually("the health check to ask the owner to remediate", || async {
        let machine = plane.api::<Machine>().get_opt(&broken).await.unwrap();
        let remediating = machine.is_none_or(|machine| {
            machine.status.is_some_and(|status| {
                status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "OwnerRemediated")
            })
        });
        remediating.then_some(())
    })
    .await;
    eventually("the broken worker to be replaced", || async {
        let machines = plane.worker_machines().await;
        let replaced = machines.len() == 1 && machines[0].name_any() != broken;
        replaced.then_some(())
    })
    .await;
    let healed = plane
        .wait_settled(1, "2", "the replacement to be available")
        .await;
    assert_ne!(healed[0].name_any(), broken);
    plane.wait_nodes_ready(&workload, &healed).await;
    assert!(nodes.get_opt(&broken).await.unwrap().is_none());

    // Delete the Cluster: workers first, then the control plane Machine, then the DevCluster,
    // the Cluster's finalizer last, in the order of the revisions of those writes.
    let deletion = DeletionWatch::start(&plane).await;
    plane
        .api::<Cluster>()
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Cluster to be gone", || async {
        let cluster = plane.api::<Cluster>().get_opt(CLUSTER).await.unwrap();
        cluster.is_none().then_some(())
    })
    .await;
    // The Cluster's DELETED event may reach the watch just after the read above.
    eventually("the watch to see the Cluster go", || async {
        let seen = deletion
            .steps
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.kind == "Cluster" && s.gone);
        seen.then_some(())
    })
    .await;
    let steps = deletion.finish();
    let at = |kind: &str, name: &str, gone: bool| -> u64 {
        steps
            .iter()
            .find(|s| s.kind == kind && s.name == name && s.gone == gone)
            .unwrap_or_else(|| panic!("{kind} {name} gone={gone} in {steps:#?}"))
            .revision
    };
    let last_worker_gone = steps
        .iter()
        .filter(|s| s.kind == "Machine" && s.name != CONTROL_PLANE_MACHINE && s.gone)
        .map(|s| s.revision)
        .max()
        .expect("the worker Machine went");
    let deployment_requested = at("MachineDeployment", DEPLOYMENT, false);
    let control_plane_requested = at("Machine", CONTROL_PLANE_MACHINE, false);
    let control_plane_gone = at("Machine", CONTROL_PLANE_MACHINE, true);
    let infrastructure_requested = at("DevCluster", CLUSTER, false);
    let infrastructure_gone = at("DevCluster", CLUSTER, true);
    let cluster_requested = at("Cluster", CLUSTER, false);
    let cluster_gone = at("Cluster", CLUSTER, true);
    assert!(cluster_requested < deployment_requested, "{steps:#?}");
    assert!(
        deployment_requested < control_plane_requested,
        "workers are asked to go before the control plane: {steps:#?}"
    );
    assert!(
        last_worker_gone < infrastructure_requested
            && control_plane_gone < infrastructure_requested,
        "every Machine is gone before the infrastructure cluster is deleted: {steps:#?}"
    );
    assert!(
        infrastructure_gone < cluster_gone,
        "the Cluster's finalizer goes last: {steps:#?}"
    );
    let dev_machines_gone = steps
        .iter()
        .filter(|s| s.kind == "DevMachine" && s.gone)
        .count();
    assert_eq!(dev_machines_gone, 2, "the worker's and the control plane's");
    assert!(
        steps
            .iter()
            .filter(|s| s.kind == "DevMachine" && s.gone)
            .all(|s| s.revision < infrastructure_requested),
        "{steps:#?}"
    );
    plane.stop().await;
}

/// Issue 4: "Restarting the controllers mid-rollout creates no extra machines and converges".
/// The core controllers and the provider are shut down (their shutdown future resolved and
/// awaited) while a rolling update is under way, and a fresh set with empty caches finishes
/// it: within maxSurge and maxUnavailable throughout, each old Machine replaced by exactly one
/// new one, and no DevMachine left without its Machine.
#[tokio::test]
async fn restarting_the_controllers_mid_rollout_creates_no_extra_machines_and_converges() {
    let mut plane = Plane::start().await;
    plane
        .create_cluster(
            4,
            json!({ "strategy": { "type": "RollingUpdate",
                    "rollingUpdate": { "maxSurge": 2, "maxUnavailable": 1 } } }),
        )
        .await;
    let before = plane.wait_settled(4, "1", "four available workers").await;

    let watch = InvariantWatch::start(&plane, 6, 3).await;
    plane
        .patch_deployment(json!({ "spec": { "template": { "spec": {
            "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": "dev-md-v2" },
        } } } }))
        .await;
    eventually("the new MachineSet to have Machines", || async {
        let machines = plane.worker_machines().await;
        let new = machines
            .iter()
            .filter(|m| !before.iter().any(|b| b.name_any() == m.name_any()))
            .count();
        (new > 0).then_some(())
    })
    .await;
    plane.restart_controllers().await;

    let after = plane
        .wait_settled(4, "2", "the rollout to complete after the restart")
        .await;
    let observed = watch.finish();
    assert!(observed.violations.is_empty(), "{:#?}", observed.violations);
    assert_eq!(
        observed.names.len(),
        8,
        "each old Machine replaced by exactly one new one: {observed:?}"
    );
    for machine in &after {
        assert_eq!(plane.cloned_from(machine).await, "dev-md-v2");
    }
    let sets = eventually("the old MachineSet to be cleaned up", || async {
        let sets = plane
            .api::<MachineSet>()
            .list(&Default::default())
            .await
            .unwrap();
        (sets.items.len() == 1).then_some(sets.items)
    })
    .await;
    assert_eq!(sets[0].annotations()[REVISION], "2");
    let expected: BTreeSet<String> = after
        .iter()
        .map(|m| m.spec.infrastructure_ref.name.clone())
        .chain([CONTROL_PLANE_MACHINE.to_owned()])
        .collect();
    eventually("no DevMachine without its Machine", || async {
        let names: BTreeSet<String> = plane
            .dev("DevMachine")
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|d| d.name_any())
            .collect();
        (names == expected).then_some(())
    })
    .await;
    let workload = plane.workload_client().await;
    plane.wait_nodes_ready(&workload, &after).await;
    plane.stop().await;
}
