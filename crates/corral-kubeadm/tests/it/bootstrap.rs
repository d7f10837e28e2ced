//! The KubeadmConfig controller against a real management plane.
//!
//! End to end (`machines_get_init_then_join_data_and_come_up_with_the_in_memory_provider`): the
//! core controllers, the in-memory provider and the bootstrap controller bring up a cluster with
//! a machine-based control plane (no controlPlaneRef) and a worker MachineDeployment: the first
//! control plane machine gets `kubeadm init` data with the cluster certificates, the workers
//! `kubeadm join` data with bootstrap tokens that exist in the simulated workload cluster.
//!
//! The other tests play core themselves (they write the Cluster's status and the owner
//! references), to reach states the end-to-end run passes too quickly: a user CA that does not
//! parse, a paused Cluster, workers waiting for the control plane.

use std::sync::Arc;
use std::time::Duration;

use corral_api::{Cluster, Machine};
use corral_cloud::InProcessCloud;
use corral_kubeadm::api::bootstrap::KubeadmConfig;
use corral_kubeadm::bootstrap::token::{self, BootstrapToken};
use corral_kubeadm::certs;
use corral_testenv::TestEnv;
use futures::FutureExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use time::OffsetDateTime;
use tokio::task::JoinHandle;

const NAMESPACE: &str = "default";
const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";
const TIMEOUT: Duration = Duration::from_secs(120);

async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    corral_testenv::eventually(TIMEOUT, what, check).await
}

/// A management plane with the CRDs installed and some controllers running.
struct Plane {
    env: TestEnv,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Plane {
    /// With `core`, the core controllers and the in-memory provider run too.
    async fn start(core: bool) -> Plane {
        let env = TestEnv::start().await;
        let crds: Vec<Value> = corral_api::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).unwrap())
            .chain(
                corral_infra_inmemory::crds()
                    .into_iter()
                    .map(|crd| serde_json::to_value(crd).unwrap()),
            )
            .chain(
                corral_kubeadm::crds()
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
        let task = tokio::spawn(async move {
            let bootstrap = corral_kubeadm::run(client.clone(), shutdown.clone());
            if core {
                let config = corral_controllers::Config {
                    backoff_max: Duration::from_secs(1),
                    ..Default::default()
                };
                let cloud = Arc::new(InProcessCloud::new());
                let provider = corral_infra_inmemory::run(client.clone(), cloud, shutdown.clone());
                let core = corral_controllers::run(client, config, shutdown);
                let ((), (), result) = tokio::join!(bootstrap, provider, core);
                result.expect("the core controllers start");
            } else {
                bootstrap.await;
            }
        });
        Plane {
            env,
            stop: Some(stop),
            task: Some(task),
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("the controllers do not panic");
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.env.client.clone(), NAMESPACE)
    }

    async fn create(&self, object: Value) -> DynamicObject {
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
            .unwrap_or_else(|error| panic!("creating a {kind}: {error}"))
    }

    async fn config(&self, name: &str) -> KubeadmConfig {
        self.api::<KubeadmConfig>().get(name).await.unwrap()
    }

    /// The data Secret of a KubeadmConfig once its status names it.
    async fn data_secret(&self, config: &str) -> (KubeadmConfig, Secret, String) {
        let config = eventually(&format!("bootstrap data of {config}"), || async {
            let config = self.config(config).await;
            let status = config.status.as_ref()?;
            (status.initialization.data_secret_created == Some(true)).then_some(config)
        })
        .await;
        let name = config
            .status
            .as_ref()
            .unwrap()
            .data_secret_name
            .clone()
            .unwrap();
        assert_eq!(name, config.name_any());
        let secret = self.api::<Secret>().get(&name).await.unwrap();
        let value = text(&secret, "value");
        (config, secret, value)
    }
}

fn text(secret: &Secret, key: &str) -> String {
    String::from_utf8(secret.data.as_ref().unwrap()[key].0.clone()).unwrap()
}

fn condition<'a>(config: &'a KubeadmConfig, type_: &str) -> Option<&'a Condition> {
    config
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|condition| condition.type_ == type_)
}

/// The files a cloud-config writes, by path.
fn written_files(cloud_config: &str) -> std::collections::BTreeMap<String, String> {
    let parsed: serde_yaml::Value = serde_yaml::from_str(cloud_config).unwrap();
    parsed["write_files"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|file| {
            (
                file["path"].as_str().unwrap().to_string(),
                file["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn workload_client_config(kubeconfig: &str) -> Kubeconfig {
    Kubeconfig::from_yaml(kubeconfig).unwrap()
}

async fn workload_client(plane: &Plane, cluster: &str) -> kube::Client {
    let secrets: Api<Secret> = plane.api();
    let name = format!("{cluster}-kubeconfig");
    let secret = eventually("the kubeconfig Secret", || async {
        secrets.get_opt(&name).await.unwrap()
    })
    .await;
    let config = kube::Config::from_custom_kubeconfig(
        workload_client_config(&text(&secret, "value")),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn machines_get_init_then_join_data_and_come_up_with_the_in_memory_provider() {
    let plane = Plane::start(true).await;
    let cluster = "boot";
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevCluster",
            "metadata": { "name": cluster },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
    for name in ["boot-cp-0"] {
        plane
            .create(json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachine",
                "metadata": { "name": name },
                "spec": { "backend": { "inMemory": {} } },
            }))
            .await;
    }
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachineTemplate",
            "metadata": { "name": "boot-md" },
            "spec": { "template": { "spec": { "backend": { "inMemory": {} } } } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": "motd" },
            "stringData": { "text": "welcome to boot" },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfig",
            "metadata": { "name": "boot-cp-0" },
            "spec": {
                "clusterConfiguration": { "apiServer": { "certSANs": ["localhost"] } },
                "initConfiguration": { "nodeRegistration": {
                    "kubeletExtraArgs": [{ "name": "v", "value": "2" }] } },
                "files": [{ "path": "/etc/motd", "contentFrom": { "secret": { "name": "motd", "key": "text" } } }],
                "users": [{ "name": "ops", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"] }],
                "preKubeadmCommands": ["echo control plane"],
            },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": { "name": "boot-cp-0", "labels": { "cluster.x-k8s.io/control-plane": "" } },
            "spec": {
                "clusterName": cluster,
                "version": "v1.33.1",
                "bootstrap": { "configRef": {
                    "apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": "boot-cp-0" } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachine", "name": "boot-cp-0" },
            },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfigTemplate",
            "metadata": { "name": "boot-md" },
            "spec": { "template": { "spec": {
                "joinConfiguration": { "nodeRegistration": {
                    "kubeletExtraArgs": [{ "name": "node-labels", "value": "pool=md" }] } },
            } } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": { "name": "boot-md" },
            "spec": {
                "clusterName": cluster,
                "replicas": 2,
                "selector": { "matchLabels": { "pool": "boot-md" } },
                "template": {
                    "metadata": { "labels": { "pool": "boot-md" } },
                    "spec": {
                        "clusterName": cluster,
                        "version": "v1.33.1",
                        "bootstrap": { "configRef": {
                            "apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "boot-md" } },
                        "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": "boot-md" },
                    },
                },
            },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": cluster },
            "spec": {
                "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevCluster", "name": cluster },
            },
        }))
        .await;

    // Every machine gets its bootstrap data and becomes a Node.
    let machines: Api<Machine> = plane.api();
    let all = eventually("three Machines with Nodes", || async {
        let list = machines.list(&ListParams::default()).await.unwrap().items;
        let joined = list
            .iter()
            .filter(|m| m.status.as_ref().is_some_and(|s| s.node_ref.is_some()))
            .count();
        (list.len() == 3 && joined == 3).then_some(list)
    })
    .await;

    // The first control plane machine: kubeadm init, with the cluster certificates.
    let (config, secret, cloud_config) = plane.data_secret("boot-cp-0").await;
    assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
    assert_eq!(secret.labels()["cluster.x-k8s.io/cluster-name"], cluster);
    assert_eq!(text(&secret, "format"), "cloud-config");
    let owner = &secret.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("KubeadmConfig", "boot-cp-0", Some(true))
    );
    assert!(cloud_config.starts_with("## template: jinja\n#cloud-config\n"));
    assert!(
        cloud_config.contains(
            "kubeadm init --config /run/kubeadm/kubeadm.yaml && echo success > /run/cluster-api/bootstrap-success.complete"
        ),
        "{cloud_config}"
    );
    let files = written_files(&cloud_config);
    let ca = certs::lookup(
        &certs::SecretReader::new(plane.env.client.clone()),
        NAMESPACE,
        cluster,
    )
    .await
    .unwrap()
    .expect("the certificates were generated");
    assert_eq!(
        files["/etc/kubernetes/pki/ca.crt"],
        ca.cluster_ca.certificate_pem
    );
    assert_eq!(
        files["/etc/kubernetes/pki/etcd/ca.key"],
        ca.etcd_ca.private_key_pem
    );
    assert_eq!(
        files["/etc/kubernetes/pki/sa.pub"],
        ca.service_account.certificate_pem
    );
    assert_eq!(files["/etc/motd"], "welcome to boot");
    let kubeadm = &files["/run/kubeadm/kubeadm.yaml"];
    for expected in [
        "kind: ClusterConfiguration",
        "clusterName: boot",
        "kubernetesVersion: v1.33.1",
        "podSubnet: 192.168.0.0/16",
        "kind: InitConfiguration",
        "- localhost",
    ] {
        assert!(kubeadm.contains(expected), "{expected} in {kubeadm}");
    }
    assert_eq!(condition(&config, "Ready").unwrap().status, "True");
    assert_eq!(
        condition(&config, "CertificatesAvailable").unwrap().status,
        "True"
    );
    assert_eq!(condition(&config, "Paused").unwrap().status, "False");
    // The certificates belong to the Cluster, not to a machine's KubeadmConfig.
    let ca_secret = plane.api::<Secret>().get("boot-ca").await.unwrap();
    assert_eq!(ca_secret.owner_references()[0].kind, "Cluster");
    // The init lock is released once the control plane is initialized.
    let locks: Api<ConfigMap> = plane.api();
    eventually("the init lock released", || async {
        locks
            .get_opt("boot-lock")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // The workers: kubeadm join with a bootstrap token that exists in the workload cluster.
    let workload = workload_client(&plane, cluster).await;
    let tokens: Api<Secret> = Api::namespaced(workload, "kube-system");
    let hash = ca.ca_cert_hash().unwrap();
    let workers: Vec<&Machine> = all
        .iter()
        .filter(|m| !m.labels().contains_key("cluster.x-k8s.io/control-plane"))
        .collect();
    assert_eq!(workers.len(), 2);
    for worker in workers {
        let config_name = &worker.spec.bootstrap.config_ref.as_ref().unwrap().name;
        let (config, _, cloud_config) = plane.data_secret(config_name).await;
        let files = written_files(&cloud_config);
        assert!(
            !files.contains_key("/etc/kubernetes/pki/ca.key"),
            "workers get no CA keys"
        );
        let join = &files["/run/kubeadm/kubeadm-join-config.yaml"];
        let token_text = config
            .spec
            .join_configuration
            .discovery
            .bootstrap_token
            .token
            .clone()
            .expect("the token is recorded in the spec");
        let token = BootstrapToken::parse(&token_text).unwrap();
        for expected in [
            "kind: JoinConfiguration",
            token_text.as_str(),
            hash.as_str(),
            "node.cluster.x-k8s.io/uninitialized",
            "node-labels",
        ] {
            assert!(join.contains(expected), "{expected} in {join}");
        }
        assert!(!join.contains("controlPlane"), "{join}");
        assert!(
            cloud_config.contains("kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml")
        );
        let secret = tokens.get(&token.secret_name()).await.unwrap();
        assert_eq!(
            secret.type_.as_deref(),
            Some("bootstrap.kubernetes.io/token")
        );
        assert_eq!(text(&secret, "token-secret"), token.secret);
        let expiration = OffsetDateTime::parse(
            &text(&secret, "expiration"),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert!(expiration > OffsetDateTime::now_utc() + time::Duration::minutes(5));
    }
    plane.stop().await;
}

/// Writes what core would: the Cluster's infrastructure is provisioned.
async fn provision(plane: &Plane, cluster: &str, initialized: bool) {
    let clusters: Api<Cluster> = plane.api();
    let patch = json!({ "status": { "initialization": {
        "infrastructureProvisioned": true,
        "controlPlaneInitialized": initialized,
    } } });
    clusters
        .patch_status(cluster, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// A Machine and its KubeadmConfig, owned by it as core would make it.
async fn machine_with_config(
    plane: &Plane,
    cluster: &str,
    name: &str,
    control_plane: bool,
    spec: Value,
) {
    let labels = if control_plane {
        json!({ "cluster.x-k8s.io/control-plane": "", "cluster.x-k8s.io/cluster-name": cluster })
    } else {
        json!({ "cluster.x-k8s.io/cluster-name": cluster })
    };
    let machine = plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": { "name": name, "labels": labels },
            "spec": {
                "clusterName": cluster,
                "version": "v1.33.1",
                "bootstrap": { "configRef": {
                    "apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": name } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachine", "name": name },
            },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfig",
            "metadata": {
                "name": name,
                "labels": { "cluster.x-k8s.io/cluster-name": cluster },
                "ownerReferences": [{
                    "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                    "name": name, "uid": machine.uid().unwrap(),
                }],
            },
            "spec": spec,
        }))
        .await;
}

async fn create_cluster(plane: &Plane, cluster: &str) {
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": cluster },
            "spec": {
                "controlPlaneEndpoint": { "host": "10.0.0.1", "port": 6443 },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevCluster", "name": cluster },
            },
        }))
        .await;
}

#[tokio::test]
async fn a_user_ca_that_does_not_parse_sets_a_condition_naming_the_secret() {
    let plane = Plane::start(false).await;
    let cluster = "byo";
    create_cluster(&plane, cluster).await;
    let bad = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("byo-ca".into()),
            ..Default::default()
        },
        type_: Some("cluster.x-k8s.io/secret".into()),
        data: Some(
            [
                (
                    "tls.crt".to_string(),
                    ByteString(
                        b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
                    ),
                ),
                (
                    "tls.key".to_string(),
                    ByteString(
                        certs::generate(
                            certs::Purpose::ClusterCa,
                            certs::KeyAlgorithm::EcdsaP256,
                            OffsetDateTime::now_utc(),
                        )
                        .unwrap()
                        .private_key_pem
                        .into_bytes(),
                    ),
                ),
            ]
            .into(),
        ),
        ..Default::default()
    };
    plane
        .api::<Secret>()
        .create(&PostParams::default(), &bad)
        .await
        .unwrap();
    machine_with_config(
        &plane,
        cluster,
        "byo-cp-0",
        true,
        json!({ "clusterConfiguration": { "apiServer": { "certSANs": ["localhost"] } } }),
    )
    .await;
    provision(&plane, cluster, false).await;

    let config = eventually("CertificatesAvailable False", || async {
        let config = plane.config("byo-cp-0").await;
        (condition(&config, "CertificatesAvailable")?.status == "False").then_some(config)
    })
    .await;
    let certificates = condition(&config, "CertificatesAvailable").unwrap();
    assert_eq!(certificates.reason, "InternalError");
    assert!(
        certificates.message.contains("Secret byo-ca"),
        "{}",
        certificates.message
    );
    assert!(
        certificates
            .message
            .contains("tls.crt is not an X.509 certificate"),
        "{}",
        certificates.message
    );
    let ready = condition(&config, "Ready").unwrap();
    assert_eq!(ready.status, "False");
    assert!(ready.message.contains("byo-ca"), "{}", ready.message);
    assert!(
        plane
            .api::<Secret>()
            .get_opt("byo-cp-0")
            .await
            .unwrap()
            .is_none()
    );
    // The other certificates were not generated in its place, and an Event says what is wrong.
    let events: Api<Event> = plane.api();
    eventually("a CertificatesUnavailable Event", || async {
        let events = events.list(&ListParams::default()).await.unwrap().items;
        events
            .iter()
            .find(|event| event.reason.as_deref() == Some("CertificatesUnavailable"))
            .map(|event| {
                assert!(
                    event
                        .message
                        .as_deref()
                        .unwrap_or_default()
                        .contains("byo-ca")
                )
            })
    })
    .await;
    plane.stop().await;
}

#[tokio::test]
async fn workers_wait_for_the_control_plane_and_a_paused_cluster_is_left_alone() {
    let plane = Plane::start(false).await;
    let cluster = "wait";
    create_cluster(&plane, cluster).await;
    machine_with_config(
        &plane,
        cluster,
        "wait-md-0",
        false,
        json!({ "joinConfiguration": { "nodeRegistration": { "name": "worker" } } }),
    )
    .await;
    let config = eventually("DataSecretAvailable False", || async {
        let config = plane.config("wait-md-0").await;
        (condition(&config, "DataSecretAvailable")?.status == "False").then_some(config)
    })
    .await;
    assert_eq!(
        condition(&config, "DataSecretAvailable").unwrap().message,
        "Waiting for Cluster status.infrastructureReady to be true"
    );
    provision(&plane, cluster, false).await;
    eventually("waiting for the control plane", || async {
        let config = plane.config("wait-md-0").await;
        (condition(&config, "DataSecretAvailable")?.message
            == "Waiting for Cluster control plane to be initialized")
            .then_some(())
    })
    .await;

    let clusters: Api<Cluster> = plane.api();
    clusters
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "paused": true } })),
        )
        .await
        .unwrap();
    provision(&plane, cluster, true).await;
    let config = eventually("Paused True", || async {
        let config = plane.config("wait-md-0").await;
        (condition(&config, "Paused")?.status == "True").then_some(config)
    })
    .await;
    assert_eq!(
        condition(&config, "Paused").unwrap().message,
        "Cluster spec.paused is set to true"
    );
    assert!(
        config
            .status
            .as_ref()
            .unwrap()
            .initialization
            .data_secret_created
            .is_none()
    );
    assert!(
        plane
            .api::<Secret>()
            .get_opt("wait-md-0")
            .await
            .unwrap()
            .is_none()
    );
    plane.stop().await;
}

/// A worker joins with the cluster CA's hash alone, so it waits for the `<cluster>-ca` Secret
/// only (upstream `NewCertificatesForWorker`) and gets its data while the etcd, front-proxy and
/// service-account Secrets do not exist.
#[tokio::test]
async fn a_worker_needs_only_the_cluster_ca() {
    let plane = Plane::start(false).await;
    let cluster = "ca-only";
    create_cluster(&plane, cluster).await;
    machine_with_config(
        &plane,
        cluster,
        "ca-only-md-0",
        false,
        // File discovery: no join token, so no workload cluster is needed.
        json!({ "joinConfiguration": { "discovery": { "file": {
            "kubeConfigPath": "/etc/kubernetes/discovery.conf" } } } }),
    )
    .await;
    provision(&plane, cluster, true).await;
    let config = eventually("CertificatesAvailable False", || async {
        let config = plane.config("ca-only-md-0").await;
        (condition(&config, "CertificatesAvailable")?.status == "False").then_some(config)
    })
    .await;
    assert_eq!(
        condition(&config, "CertificatesAvailable").unwrap().message,
        "Waiting for the cluster certificate Secrets (ca-only-ca)"
    );

    let ca = certs::generate(
        certs::Purpose::ClusterCa,
        certs::KeyAlgorithm::EcdsaP256,
        OffsetDateTime::now_utc(),
    )
    .unwrap();
    plane
        .api::<Secret>()
        .create(
            &PostParams::default(),
            &certs::secret(NAMESPACE, cluster, certs::Purpose::ClusterCa, &ca, None),
        )
        .await
        .unwrap();
    let data = eventually("the worker's bootstrap data", || async {
        plane.api::<Secret>().get_opt("ca-only-md-0").await.unwrap()
    })
    .await;
    let cloud_config = text(&data, "value");
    assert!(cloud_config.contains("kubeadm join"), "{cloud_config}");
    for purpose in [
        certs::Purpose::EtcdCa,
        certs::Purpose::FrontProxyCa,
        certs::Purpose::ServiceAccount,
    ] {
        let name = purpose.secret_name(cluster);
        assert!(
            plane
                .api::<Secret>()
                .get_opt(&name)
                .await
                .unwrap()
                .is_none(),
            "{name} was not needed"
        );
    }
    let config = plane.config("ca-only-md-0").await;
    assert_eq!(
        condition(&config, "CertificatesAvailable").unwrap().status,
        "True"
    );
    plane.stop().await;
}

#[tokio::test]
async fn a_join_token_is_extended_while_it_is_short_and_written_again_when_gone() {
    let workload = TestEnv::start().await;
    let token = BootstrapToken::generate();
    let now = OffsetDateTime::now_utc();
    // Created one minute before it would expire.
    token::create(
        &workload.client,
        &token,
        now - token::TOKEN_TTL + time::Duration::minutes(1),
    )
    .await
    .unwrap();
    assert_eq!(
        token::ensure_fresh(&workload.client, &token, now)
            .await
            .unwrap(),
        token::Refresh::Extended
    );
    let expiration = token::expiration(&workload.client, &token)
        .await
        .unwrap()
        .unwrap();
    assert!(expiration >= now + token::TOKEN_TTL - time::Duration::seconds(2));
    assert_eq!(
        token::ensure_fresh(&workload.client, &token, now)
            .await
            .unwrap(),
        token::Refresh::Fresh
    );
    let secrets: Api<Secret> = Api::namespaced(workload.client.clone(), "kube-system");
    secrets
        .delete(&token.secret_name(), &Default::default())
        .await
        .unwrap();
    assert_eq!(
        token::ensure_fresh(&workload.client, &token, now)
            .await
            .unwrap(),
        token::Refresh::Recreated
    );
    assert!(format!("{token:?}").contains("<redacted>"));
    assert!(!format!("{token:?}").contains(&token.secret));
}
