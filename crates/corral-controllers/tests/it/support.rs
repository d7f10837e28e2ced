//! Test support: a management plane with the Cluster API CRDs and generic provider CRDs, the
//! controllers running against it, and workload clusters (more API servers) reachable through
//! `<cluster>-kubeconfig` Secrets.
//!
//! The generic provider kinds (`TestInfraCluster`, `TestInfraMachine`, `TestBootstrapConfig`,
//! `TestControlPlane`, and templates) keep any `spec` and `status`
//! (`x-kubernetes-preserve-unknown-fields`) and carry the contract label
//! `cluster.x-k8s.io/v1beta2: v1beta2`; no controller reconciles them: the test plays their
//! provider and writes what the contract says a provider writes.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use corral_runtime::cluster_cache::ClusterCacheConfig;
use corral_testenv::{TestEnv, eventually};
use k8s_openapi::ByteString;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Node, Secret};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a test waits for something the controllers should do.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A generic provider kind.
#[derive(Clone, Copy, Debug)]
pub struct TestKind {
    pub group: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

pub const INFRA_GROUP: &str = "test.infrastructure.cluster.x-k8s.io";
pub const BOOTSTRAP_GROUP: &str = "test.bootstrap.cluster.x-k8s.io";
pub const CONTROL_PLANE_GROUP: &str = "test.controlplane.cluster.x-k8s.io";

pub const INFRA_CLUSTER: TestKind = TestKind {
    group: INFRA_GROUP,
    kind: "TestInfraCluster",
    plural: "testinfraclusters",
};
pub const INFRA_MACHINE: TestKind = TestKind {
    group: INFRA_GROUP,
    kind: "TestInfraMachine",
    plural: "testinframachines",
};
pub const INFRA_MACHINE_TEMPLATE: TestKind = TestKind {
    group: INFRA_GROUP,
    kind: "TestInfraMachineTemplate",
    plural: "testinframachinetemplates",
};
pub const BOOTSTRAP_CONFIG: TestKind = TestKind {
    group: BOOTSTRAP_GROUP,
    kind: "TestBootstrapConfig",
    plural: "testbootstrapconfigs",
};
pub const BOOTSTRAP_CONFIG_TEMPLATE: TestKind = TestKind {
    group: BOOTSTRAP_GROUP,
    kind: "TestBootstrapConfigTemplate",
    plural: "testbootstrapconfigtemplates",
};
pub const CONTROL_PLANE: TestKind = TestKind {
    group: CONTROL_PLANE_GROUP,
    kind: "TestControlPlane",
    plural: "testcontrolplanes",
};

pub const ALL_KINDS: [TestKind; 6] = [
    INFRA_CLUSTER,
    INFRA_MACHINE,
    INFRA_MACHINE_TEMPLATE,
    BOOTSTRAP_CONFIG,
    BOOTSTRAP_CONFIG_TEMPLATE,
    CONTROL_PLANE,
];

impl TestKind {
    /// The CRD, labelled with the v1beta2 contract.
    pub fn crd(&self) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": format!("{}.{}", self.plural, self.group),
                "labels": { "cluster.x-k8s.io/v1beta2": "v1beta2" },
            },
            "spec": {
                "group": self.group,
                "scope": "Namespaced",
                "names": {
                    "kind": self.kind,
                    "listKind": format!("{}List", self.kind),
                    "plural": self.plural,
                    "singular": self.kind.to_lowercase(),
                },
                "versions": [{
                    "name": "v1beta2",
                    "served": true,
                    "storage": true,
                    "subresources": { "status": {} },
                    "schema": { "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                            "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        },
                    }},
                }],
            },
        })
    }

    pub fn resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, "v1beta2", self.kind),
            self.plural,
        )
    }

    /// A reference to an object of this kind.
    pub fn reference(&self, name: &str) -> corral_api::ContractVersionedObjectReference {
        corral_api::ContractVersionedObjectReference {
            api_group: self.group.into(),
            kind: self.kind.into(),
            name: name.into(),
        }
    }
}

/// Controller settings for tests: quick retries and probes.
pub fn test_config() -> corral_controllers::Config {
    corral_controllers::Config {
        backoff_max: Duration::from_secs(1),
        cluster_cache: ClusterCacheConfig {
            probe_interval: Duration::from_millis(500),
            probe_timeout: Duration::from_secs(2),
            failure_threshold: 3,
        },
        ..Default::default()
    }
}

/// A management plane with the CRDs installed and the controllers running.
pub struct Harness {
    pub env: TestEnv,
    pub client: kube::Client,
    pub namespace: String,
    /// The controllers' clock, to move timeouts forward instead of sleeping.
    pub clock: corral_runtime::Clock,
    stop: Option<oneshot::Sender<()>>,
    controllers: Option<JoinHandle<()>>,
    workloads: Vec<TestEnv>,
}

impl Harness {
    /// The management plane with every test provider kind installed.
    pub async fn start() -> Harness {
        Self::start_with_kinds(&ALL_KINDS).await
    }

    /// The management plane with only some provider kinds installed.
    pub async fn start_with_kinds(kinds: &[TestKind]) -> Harness {
        // Logs for debugging a test: `RUST_LOG=corral_controllers=debug`.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let env = TestEnv::start().await;
        let mut crds: Vec<Value> = corral_api::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).expect("a CRD serializes"))
            .collect();
        crds.extend(kinds.iter().map(TestKind::crd));
        env.install_crds(&crds).await;
        let client = env.client.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let run_client = client.clone();
        let config = test_config();
        let clock = config.clock.clone();
        let controllers = tokio::spawn(async move {
            corral_controllers::run(run_client, config, async move {
                let _ = stopped.await;
            })
            .await
            .expect("the controllers start");
        });
        Harness {
            env,
            client,
            namespace: "default".into(),
            clock,
            stop: Some(stop),
            controllers: Some(controllers),
            workloads: Vec::new(),
        }
    }

    /// Installs a provider kind later.
    pub async fn install(&self, kind: TestKind) {
        self.env.install_crds(&[kind.crd()]).await;
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub fn provider(&self, kind: TestKind) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, &kind.resource())
    }

    /// Creates a Cluster API object from JSON.
    pub async fn create<K>(&self, object: Value) -> K
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + Debug
            + Serialize
            + DeserializeOwned,
    {
        let object: K = serde_json::from_value(object).expect("a valid object");
        self.api::<K>()
            .create(&PostParams::default(), &object)
            .await
            .expect("the object is created")
    }

    /// Creates a provider object with the given spec (and metadata extras).
    pub async fn create_provider(&self, kind: TestKind, name: &str, extra: Value) -> DynamicObject {
        let mut object = json!({
            "apiVersion": format!("{}/v1beta2", kind.group),
            "kind": kind.kind,
            "metadata": { "name": name },
            "spec": {},
        });
        merge(&mut object, extra);
        let object: DynamicObject = serde_json::from_value(object).expect("a valid object");
        self.provider(kind)
            .create(&PostParams::default(), &object)
            .await
            .expect("the provider object is created")
    }

    /// Plays the provider: merges `status` into the object's status.
    pub async fn set_provider_status(&self, kind: TestKind, name: &str, status: Value) {
        self.provider(kind)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .expect("the provider status is written");
    }

    /// Plays the provider: merges `patch` into the object.
    pub async fn patch_provider(&self, kind: TestKind, name: &str, patch: Value) {
        self.provider(kind)
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("the provider object is patched");
    }

    pub async fn get_provider(&self, kind: TestKind, name: &str) -> Option<DynamicObject> {
        self.provider(kind)
            .get_opt(name)
            .await
            .expect("the provider object is read")
    }

    /// Waits until the object exists and `check` holds, and returns it.
    pub async fn wait_for<K>(&self, name: &str, what: &str, check: impl Fn(&K) -> bool) -> K
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + Debug
            + DeserializeOwned,
    {
        let api = self.api::<K>();
        eventually(TIMEOUT, what, || {
            let api = api.clone();
            let check = &check;
            async move {
                let object = api.get_opt(name).await.expect("the object is read")?;
                check(&object).then_some(object)
            }
        })
        .await
    }

    /// Waits until the object is gone.
    pub async fn wait_gone<K>(&self, name: &str, what: &str)
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + Debug
            + DeserializeOwned,
    {
        let api = self.api::<K>();
        eventually(TIMEOUT, what, || {
            let api = api.clone();
            async move {
                let object = api.get_opt(name).await.expect("the object is read");
                object.is_none().then_some(())
            }
        })
        .await
    }

    /// Waits until the provider object exists and `check` holds.
    pub async fn wait_for_provider(
        &self,
        kind: TestKind,
        name: &str,
        what: &str,
        check: impl Fn(&DynamicObject) -> bool,
    ) -> DynamicObject {
        eventually(TIMEOUT, what, || async {
            let object = self.get_provider(kind, name).await?;
            check(&object).then_some(object)
        })
        .await
    }

    /// Starts a workload cluster for `cluster` and writes its `<cluster>-kubeconfig` Secret.
    pub async fn workload(&mut self, cluster: &str) -> Workload {
        let env = TestEnv::start().await;
        let kubeconfig = corral_apiserver::kubeconfig::render(&env.url(), cluster);
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(format!("{cluster}-kubeconfig")),
                labels: Some(BTreeMap::from([(
                    corral_api::labels::CLUSTER_NAME.to_owned(),
                    cluster.to_owned(),
                )])),
                ..Default::default()
            },
            type_: Some(corral_api::CLUSTER_SECRET_TYPE.into()),
            data: Some(BTreeMap::from([(
                "value".to_owned(),
                ByteString(kubeconfig.into_bytes()),
            )])),
            ..Default::default()
        };
        self.api::<Secret>()
            .create(&PostParams::default(), &secret)
            .await
            .expect("the kubeconfig Secret is created");
        let workload = Workload {
            client: env.client.clone(),
        };
        self.workloads.push(env);
        workload
    }

    /// Stops the controllers and waits for them.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(controllers) = self.controllers.take() {
            tokio::time::timeout(TIMEOUT, controllers)
                .await
                .expect("the controllers stop")
                .expect("the controllers do not panic");
        }
    }

    /// Kills the controllers mid-flight, as a crash would (reconciles under way are dropped
    /// wherever they are), and starts a fresh set with empty caches.
    pub async fn crash_and_restart_controllers(&mut self) {
        self.stop.take();
        if let Some(controllers) = self.controllers.take() {
            controllers.abort();
            let _ = controllers.await;
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let run_client = self.client.clone();
        self.controllers = Some(tokio::spawn(async move {
            corral_controllers::run(run_client, test_config(), async move {
                let _ = stopped.await;
            })
            .await
            .expect("the controllers start");
        }));
        self.stop = Some(stop);
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(controllers) = &self.controllers {
            controllers.abort();
        }
    }
}

/// A workload cluster.
pub struct Workload {
    pub client: kube::Client,
}

impl Workload {
    pub fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Creates a Node with a provider ID and a Ready condition.
    pub async fn create_node(&self, name: &str, provider_id: &str, ready: bool) -> Node {
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": { "name": name },
            "spec": { "providerID": provider_id },
        }))
        .expect("a valid Node");
        self.nodes()
            .create(&PostParams::default(), &node)
            .await
            .expect("the Node is created");
        let status = json!({ "status": {
            "conditions": [
                { "type": "Ready", "status": if ready { "True" } else { "False" }, "reason": "KubeletReady",
                  "lastTransitionTime": "2026-01-01T00:00:00Z", "lastHeartbeatTime": "2026-01-01T00:00:00Z" },
                { "type": "MemoryPressure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z" },
                { "type": "DiskPressure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z" },
                { "type": "PIDPressure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z" },
            ],
            "nodeInfo": {
                "architecture": "amd64", "bootID": "", "containerRuntimeVersion": "test://1",
                "kernelVersion": "6.0", "kubeProxyVersion": "", "kubeletVersion": "v1.36.0",
                "machineID": "", "operatingSystem": "linux", "osImage": "Test OS", "systemUUID": "",
            },
        }});
        self.nodes()
            .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await
            .expect("the Node status is written")
    }

    pub async fn get_node(&self, name: &str) -> Option<Node> {
        self.nodes().get_opt(name).await.expect("the Node is read")
    }
}

/// Merges `extra` into `object` (objects merge, everything else replaces).
pub fn merge(object: &mut Value, extra: Value) {
    match (object, extra) {
        (Value::Object(object), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(object.entry(key).or_insert(Value::Null), value);
            }
        }
        (object, extra) => *object = extra,
    }
}

/// The condition of a type, from a list of conditions.
pub fn condition<'a>(
    conditions: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The owner references of an object, as `Kind/name` with `*` for the controller.
pub fn owners(object: &impl ResourceExt) -> Vec<String> {
    object
        .owner_references()
        .iter()
        .map(|o| {
            format!(
                "{}/{}{}",
                o.kind,
                o.name,
                if o.controller == Some(true) { "*" } else { "" }
            )
        })
        .collect()
}

/// The reasons of the events recorded about an object, oldest first.
pub async fn event_reasons(client: &kube::Client, namespace: &str, name: &str) -> Vec<String> {
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(client.clone(), namespace);
    let mut list: Vec<_> = events
        .list(&Default::default())
        .await
        .expect("events are listed")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    list.sort_by_key(|e| e.metadata.creation_timestamp.clone());
    list.into_iter().filter_map(|e| e.reason).collect()
}
