//! The simulated cloud over HTTP: a [`RemoteCloud`] against a [`CloudServer`] in this process
//! answers as the cloud it serves would, errors included, and two management planes (each with
//! the core controllers and the in-memory provider) share one served cloud.

use std::sync::Arc;

use corral_api::{Machine, MachinePhase};
use corral_cloud::{
    Cloud, CloudError, CloudServer, ClusterKey, Faults, InProcessCloud, RemoteCloud, StepStatus,
    VmKey, VmSpec,
};
use corral_runtime::cluster_cache::ClusterCacheConfig;
use corral_testenv::TestEnv;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

use super::{eventually, node_ready};

fn cluster(name: &str) -> ClusterKey {
    ClusterKey {
        namespace: "default".into(),
        name: name.into(),
    }
}

fn vm(cluster_name: &str, name: &str) -> VmKey {
    VmKey {
        cluster: cluster(cluster_name),
        name: name.into(),
    }
}

/// An in-process cloud served on a free loopback port.
async fn served_cloud() -> (Arc<InProcessCloud>, CloudServer) {
    let cloud = Arc::new(InProcessCloud::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = CloudServer::start(listener, cloud.clone()).unwrap();
    (cloud, server)
}

#[tokio::test]
async fn a_remote_cloud_answers_as_the_cloud_it_reaches() {
    let (cloud, server) = served_cloud().await;
    let remote = RemoteCloud::new(&server.url()).unwrap();
    remote.check().await.unwrap();

    let endpoint = remote.ensure_cluster(&cluster("w"), None).await.unwrap();
    assert_eq!(
        cloud.ensure_cluster(&cluster("w"), None).await.unwrap(),
        endpoint,
        "the endpoint is the served cloud's"
    );
    // The workload cluster listens in the cloud's process and answers kube-rs.
    let workload =
        kube::Client::try_from(kube::Config::new(endpoint.url().parse().unwrap())).unwrap();
    let nodes: Api<Node> = Api::all(workload);

    let spec = VmSpec {
        control_plane: true,
        version: Some("v1.32.0".into()),
        ..VmSpec::default()
    };
    let created = remote.ensure_vm(&vm("w", "cp-0"), &spec).await.unwrap();
    assert_eq!(created.provider_id, "in-memory://cp-0");
    let node = eventually("the Node to register", || async {
        nodes.get_opt("cp-0").await.unwrap()
    })
    .await;
    assert_eq!(node_ready(&node).as_deref(), Some("True"));
    let booted = eventually("the VM to finish booting", || async {
        let vm = remote.get_vm(&vm("w", "cp-0")).await.unwrap()?;
        vm.api_server
            .as_ref()
            .is_some_and(StepStatus::is_done)
            .then_some(vm)
    })
    .await;
    assert_eq!(
        cloud.get_vm(&vm("w", "cp-0")).await.unwrap(),
        Some(booted.clone()),
        "the remote view is the served cloud's"
    );
    // Ensuring again changes nothing; faults go through.
    let again = remote.ensure_vm(&vm("w", "cp-0"), &spec).await.unwrap();
    assert_eq!(again.vm, booted.vm, "the VM was not recreated");
    let not_ready = VmSpec {
        faults: Faults {
            node_not_ready: true,
            ..Faults::default()
        },
        ..spec.clone()
    };
    remote
        .ensure_vm(&vm("w", "cp-0"), &not_ready)
        .await
        .unwrap();
    eventually("the Node to turn NotReady", || async {
        let node = nodes.get("cp-0").await.unwrap();
        (node_ready(&node).as_deref() == Some("False")).then_some(())
    })
    .await;

    assert_eq!(remote.get_vm(&vm("w", "missing")).await.unwrap(), None);
    assert_eq!(remote.get_vm(&vm("gone", "cp-0")).await.unwrap(), None);
    remote.delete_vm(&vm("w", "cp-0")).await.unwrap();
    remote.delete_vm(&vm("w", "cp-0")).await.unwrap();
    assert_eq!(remote.get_vm(&vm("w", "cp-0")).await.unwrap(), None);
    assert!(
        nodes.get_opt("cp-0").await.unwrap().is_none(),
        "deleting the VM removed its Node"
    );
    remote.delete_cluster(&cluster("w")).await.unwrap();
    remote.delete_cluster(&cluster("w")).await.unwrap();
    assert!(nodes.list(&ListParams::default()).await.is_err());
    server.shutdown().await;
    cloud.shutdown().await;
}

#[tokio::test]
async fn errors_cross_the_wire_as_the_cloud_raised_them() {
    let (cloud, server) = served_cloud().await;
    let remote = RemoteCloud::new(&server.url()).unwrap();

    let error = remote
        .ensure_vm(&vm("nowhere", "m"), &VmSpec::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, CloudError::ClusterNotFound(key) if *key == cluster("nowhere")),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "workload cluster default/nowhere does not exist"
    );

    // A port already taken: the listener's error, with its kind.
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = taken.local_addr().unwrap().port();
    let error = remote
        .ensure_cluster(&cluster("clash"), Some(port))
        .await
        .unwrap_err();
    match &error {
        CloudError::Listen {
            cluster: key,
            address,
            source,
        } => {
            assert_eq!(*key, cluster("clash"));
            assert_eq!(*address, format!("127.0.0.1:{port}"));
            assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
        }
        other => panic!("expected a Listen error, got {other:?}"),
    }

    let error = remote
        .get_vm(&VmKey {
            cluster: cluster("w"),
            name: "Not/A-Name".into(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&error, CloudError::InvalidName { field, .. } if field == "VM name"),
        "{error:?}"
    );

    // Something that is not a simulated cloud.
    let env = TestEnv::start().await;
    let error = RemoteCloud::new(&env.url())
        .unwrap()
        .get_vm(&vm("w", "m"))
        .await
        .unwrap_err();
    assert!(matches!(error, CloudError::Protocol { .. }), "{error:?}");

    // Nothing listening.
    let url = server.url();
    server.shutdown().await;
    let error = RemoteCloud::new(&url).unwrap().check().await.unwrap_err();
    assert!(matches!(error, CloudError::Unreachable { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!("cannot reach the simulated cloud at {url}/healthz")
    );

    assert!(matches!(
        RemoteCloud::new("ftp://127.0.0.1:1"),
        Err(CloudError::Unreachable { .. })
    ));
    cloud.shutdown().await;
}

/// A management plane: an API server with the CRDs, the core controllers and the in-memory
/// provider, whose cloud is a [`RemoteCloud`].
struct Plane {
    env: TestEnv,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Plane {
    async fn start(cloud_url: &str) -> Plane {
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
        let cloud = Arc::new(RemoteCloud::new(cloud_url).unwrap());
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
        let client = env.client.clone();
        let task = tokio::spawn(async move {
            let provider = corral_infra_inmemory::run(client.clone(), cloud, shutdown.clone());
            let core = corral_controllers::run(client, config, shutdown);
            let ((), result) = tokio::join!(provider, core);
            result.expect("the core controllers start");
        });
        Plane { env, stop, task }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }

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
            Api::namespaced_with(self.env.client.clone(), "default", &resource);
        let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|error| panic!("creating a {kind}: {error}"));
    }

    /// A Cluster `name` with one control plane Machine and a MachineDeployment of one worker,
    /// in-memory, booting at once.
    async fn create_cluster(&self, name: &str) {
        let infra = "infrastructure.cluster.x-k8s.io";
        let labels = json!({ "cluster.x-k8s.io/cluster-name": name });
        let bootstrap = json!({ "dataSecretName": format!("{name}-bootstrap") });
        self.create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": format!("{name}-bootstrap"), "labels": labels },
            "type": "cluster.x-k8s.io/secret",
            "stringData": { "value": "#cloud-config\n", "format": "cloud-config" },
        }))
        .await;
        self.create(json!({
            "apiVersion": format!("{infra}/v1beta2"), "kind": "DevCluster",
            "metadata": { "name": name },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": name },
            "spec": { "infrastructureRef": { "apiGroup": infra, "kind": "DevCluster", "name": name } },
        }))
        .await;
        let control_plane = format!("{name}-control-plane-0");
        self.create(json!({
            "apiVersion": format!("{infra}/v1beta2"), "kind": "DevMachine",
            "metadata": { "name": control_plane, "labels": labels },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": { "name": control_plane, "labels": {
                "cluster.x-k8s.io/cluster-name": name,
                "cluster.x-k8s.io/control-plane": "",
            }},
            "spec": {
                "clusterName": name, "version": "v1.32.0", "bootstrap": bootstrap,
                "infrastructureRef": { "apiGroup": infra, "kind": "DevMachine", "name": control_plane },
            },
        }))
        .await;
        self.create(json!({
            "apiVersion": format!("{infra}/v1beta2"), "kind": "DevMachineTemplate",
            "metadata": { "name": format!("{name}-md-0") },
            "spec": { "template": { "spec": { "backend": { "inMemory": {} } } } },
        }))
        .await;
        self.create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": { "name": format!("{name}-md-0") },
            "spec": {
                "clusterName": name,
                "replicas": 1,
                "selector": { "matchLabels": { "pool": format!("{name}-md-0") } },
                "template": {
                    "metadata": { "labels": { "pool": format!("{name}-md-0") } },
                    "spec": {
                        "clusterName": name, "version": "v1.32.0", "bootstrap": bootstrap,
                        "infrastructureRef": { "apiGroup": infra, "kind": "DevMachineTemplate", "name": format!("{name}-md-0") },
                    },
                },
            },
        }))
        .await;
    }

    /// Waits until the cluster's two Machines are Running, and returns them.
    async fn running_machines(&self, name: &str) -> Vec<Machine> {
        let machines: Api<Machine> = Api::namespaced(self.env.client.clone(), "default");
        eventually(&format!("the Machines of {name} to be Running"), || async {
            let list = machines
                .list(
                    &ListParams::default().labels(&format!("cluster.x-k8s.io/cluster-name={name}")),
                )
                .await
                .unwrap()
                .items;
            let running = list.len() == 2
                && list.iter().all(|machine| {
                    machine.status.as_ref().and_then(|status| status.phase)
                        == Some(MachinePhase::Running)
                });
            running.then_some(list)
        })
        .await
    }
}

#[tokio::test]
async fn two_management_planes_share_one_served_cloud() {
    let (cloud, server) = served_cloud().await;
    let first = Plane::start(&server.url()).await;
    let second = Plane::start(&server.url()).await;
    first.create_cluster("first").await;
    second.create_cluster("second").await;
    let first_machines = first.running_machines("first").await;
    let second_machines = second.running_machines("second").await;

    // Every Machine's VM is in the one cloud, under its workload cluster, with the Machine's
    // providerID; each plane reached its own workload cluster there.
    let observer = RemoteCloud::new(&server.url()).unwrap();
    for (cluster_name, machines) in [("first", &first_machines), ("second", &second_machines)] {
        for machine in machines {
            let name = machine.metadata.name.clone().unwrap();
            let vm = observer
                .get_vm(&vm(cluster_name, &name))
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("no VM {name} in {cluster_name}"));
            assert_eq!(
                machine.spec.provider_id.as_deref(),
                Some(vm.provider_id.as_str())
            );
            assert!(vm.node.is_done());
        }
    }
    let first_endpoint = cloud.ensure_cluster(&cluster("first"), None).await.unwrap();
    let second_endpoint = cloud
        .ensure_cluster(&cluster("second"), None)
        .await
        .unwrap();
    assert_ne!(first_endpoint.port, second_endpoint.port);

    first.stop().await;
    second.stop().await;
    server.shutdown().await;
    cloud.shutdown().await;
}

/// Sends one raw HTTP/1.1 request and returns the status code and body.
async fn raw_request(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn a_bad_request_is_refused_with_the_field_named() {
    let (cloud, server) = served_cloud().await;
    remote_cluster(&server).await;
    let (status, body) = raw_request(
        &server.url(),
        "PUT",
        "/v1/namespaces/default/clusters/w/vms/m",
        r#"{"control_plane": "yes"}"#,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["reason"], "BadRequest");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("control_plane"), "{message}");

    let (status, body) = raw_request(&server.url(), "GET", "/v2/anything", "").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no such path"), "{body}");
    assert_eq!(
        cloud.get_vm(&vm("w", "m")).await.unwrap(),
        None,
        "nothing was created"
    );
    server.shutdown().await;
    cloud.shutdown().await;
}

async fn remote_cluster(server: &CloudServer) {
    RemoteCloud::new(&server.url())
        .unwrap()
        .ensure_cluster(&cluster("w"), None)
        .await
        .unwrap();
}
