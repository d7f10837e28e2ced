//! The simulated cloud on its own: workload clusters answer kube-rs, VMs boot through their
//! steps and register their Nodes, faults, deletion.

use std::time::Duration;

use corral_cloud::{
    Cloud, ClusterKey, Faults, InProcessCloud, StepStatus, StepTiming, StepTimings, VmKey, VmSpec,
};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};

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

fn client_for(endpoint: &corral_cloud::WorkloadEndpoint) -> kube::Client {
    let config = kube::Config::new(endpoint.url().parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn a_workload_cluster_answers_on_its_own_port_and_keeps_it() {
    let cloud = InProcessCloud::new();
    let first = cloud.ensure_cluster(&cluster("a"), None).await.unwrap();
    let second = cloud.ensure_cluster(&cluster("b"), None).await.unwrap();
    assert_ne!(first.port, second.port);
    assert_eq!(first.host, "127.0.0.1");
    // Ensuring again answers the same endpoint.
    assert_eq!(
        cloud.ensure_cluster(&cluster("a"), None).await.unwrap(),
        first
    );

    let nodes: Api<Node> = Api::all(client_for(&first));
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // Recreated after deletion, on the port it had (as after a restart of the management plane).
    cloud.delete_cluster(&cluster("a")).await.unwrap();
    let again = cloud
        .ensure_cluster(&cluster("a"), Some(first.port))
        .await
        .unwrap();
    assert_eq!(again.port, first.port);
    cloud.shutdown().await;
}

#[tokio::test]
async fn a_control_plane_vm_boots_registers_its_node_and_starts_etcd_and_the_api_server() {
    let cloud = InProcessCloud::new();
    let endpoint = cloud.ensure_cluster(&cluster("w"), None).await.unwrap();
    let spec = VmSpec {
        control_plane: true,
        version: Some("v1.36.0".into()),
        ..Default::default()
    };
    let key = vm("w", "cp-0");
    cloud.ensure_vm(&key, &spec).await.unwrap();
    let booted = eventually("the VM to boot", || async {
        let vm = cloud.get_vm(&key).await.unwrap().unwrap();
        let done = [
            Some(&vm.vm),
            Some(&vm.node),
            vm.etcd.as_ref(),
            vm.api_server.as_ref(),
        ]
        .into_iter()
        .all(|step| step.is_some_and(StepStatus::is_done));
        done.then_some(vm)
    })
    .await;
    assert_eq!(booted.provider_id, "in-memory://cp-0");
    assert_eq!(booted.node_ready, Some(true));

    let client = client_for(&endpoint);
    let node = Api::<Node>::all(client.clone()).get("cp-0").await.unwrap();
    assert_eq!(
        node.spec.as_ref().unwrap().provider_id.as_deref(),
        Some("in-memory://cp-0")
    );
    assert_eq!(node_ready(&node), Some("True".into()));
    let labels = node.metadata.labels.unwrap();
    assert!(labels.contains_key("node-role.kubernetes.io/control-plane"));
    assert_eq!(
        node.status.unwrap().node_info.unwrap().kubelet_version,
        "v1.36.0"
    );
    let pods: Api<Pod> = Api::namespaced(client, "kube-system");
    for name in ["etcd-cp-0", "kube-apiserver-cp-0"] {
        let pod = pods.get(name).await.unwrap();
        assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("cp-0"));
    }

    cloud.delete_vm(&key).await.unwrap();
    assert!(cloud.get_vm(&key).await.unwrap().is_none());
    let nodes: Api<Node> = Api::all(client_for(&endpoint));
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        pods_of(&endpoint).await.is_empty(),
        "the control plane Pods go with the VM"
    );
    // Deleting again is fine.
    cloud.delete_vm(&key).await.unwrap();
    cloud.shutdown().await;
}

async fn pods_of(endpoint: &corral_cloud::WorkloadEndpoint) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client_for(endpoint), "kube-system");
    pods.list(&ListParams::default()).await.unwrap().items
}

#[tokio::test]
async fn steps_wait_for_their_startup_durations() {
    // No timing asserts: only that the steps are under way at first, and done eventually.
    let cloud = InProcessCloud::new();
    cloud.ensure_cluster(&cluster("slow"), None).await.unwrap();
    let step = |millis| StepTiming {
        startup: Duration::from_millis(millis),
        jitter: 0.5,
    };
    let spec = VmSpec {
        timings: StepTimings {
            vm: step(300),
            node: step(300),
            etcd: step(0),
            api_server: step(0),
        },
        ..Default::default()
    };
    let key = vm("slow", "worker-0");
    let created = cloud.ensure_vm(&key, &spec).await.unwrap();
    assert!(matches!(created.vm, StepStatus::InProgress { .. }));
    assert_eq!(created.node, StepStatus::Waiting);
    assert_eq!(created.etcd, None);
    assert!(created.next_change().is_some());
    eventually("the Node to register", || async {
        let vm = cloud.get_vm(&key).await.unwrap().unwrap();
        vm.node.is_done().then_some(())
    })
    .await;
    cloud.shutdown().await;
}

#[tokio::test]
async fn faults_hold_the_boot_and_turn_the_node_not_ready() {
    let cloud = InProcessCloud::new();
    let endpoint = cloud.ensure_cluster(&cluster("f"), None).await.unwrap();
    let key = vm("f", "worker-0");
    let mut spec = VmSpec {
        faults: Faults {
            fail_boot: true,
            node_not_ready: false,
        },
        ..Default::default()
    };
    let failed = cloud.ensure_vm(&key, &spec).await.unwrap();
    assert!(matches!(failed.vm, StepStatus::Failed { .. }), "{failed:?}");
    assert_eq!(failed.node, StepStatus::Waiting);

    // Lifting the fault lets the VM boot.
    spec.faults.fail_boot = false;
    cloud.ensure_vm(&key, &spec).await.unwrap();
    let nodes: Api<Node> = Api::all(client_for(&endpoint));
    eventually("the Node to be Ready", || async {
        let node = nodes.get_opt("worker-0").await.unwrap()?;
        (node_ready(&node)? == "True").then_some(())
    })
    .await;

    spec.faults.node_not_ready = true;
    cloud.ensure_vm(&key, &spec).await.unwrap();
    eventually("the Node to be NotReady", || async {
        let node = nodes.get_opt("worker-0").await.unwrap()?;
        (node_ready(&node)? == "False").then_some(())
    })
    .await;
    let vm = cloud.get_vm(&key).await.unwrap().unwrap();
    assert_eq!(vm.node_ready, Some(false));

    spec.faults.node_not_ready = false;
    cloud.ensure_vm(&key, &spec).await.unwrap();
    eventually("the Node to be Ready again", || async {
        let node = nodes.get_opt("worker-0").await.unwrap()?;
        (node_ready(&node)? == "True").then_some(())
    })
    .await;
    cloud.shutdown().await;
}

#[tokio::test]
async fn vms_need_their_workload_cluster() {
    let cloud = InProcessCloud::new();
    let error = cloud
        .ensure_vm(&vm("missing", "m"), &VmSpec::default())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "workload cluster default/missing does not exist"
    );
    assert!(cloud.get_vm(&vm("missing", "m")).await.unwrap().is_none());
    cloud.delete_vm(&vm("missing", "m")).await.unwrap();
}

#[tokio::test]
async fn deleting_a_cluster_removes_its_vms() {
    let cloud = InProcessCloud::new();
    cloud.ensure_cluster(&cluster("gone"), None).await.unwrap();
    let key = vm("gone", "m");
    cloud.ensure_vm(&key, &VmSpec::default()).await.unwrap();
    cloud.delete_cluster(&cluster("gone")).await.unwrap();
    assert!(cloud.get_vm(&key).await.unwrap().is_none());
    cloud.delete_cluster(&cluster("gone")).await.unwrap();
}
