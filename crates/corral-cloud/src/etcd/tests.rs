use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::{CLUSTER_ID, LEADER_FROM, MEMBER_ID};
use crate::ClusterKey;
use crate::workload::{SimulatedNode, WorkloadCluster};

async fn workload() -> WorkloadCluster {
    WorkloadCluster::start(
        ClusterKey {
            namespace: "default".into(),
            name: "etcd-test".into(),
        },
        None,
    )
    .await
    .unwrap()
}

fn node(name: &str) -> SimulatedNode {
    SimulatedNode {
        name: name.into(),
        provider_id: format!("in-memory://{name}"),
        internal_ip: "10.0.0.1".into(),
        control_plane: true,
        version: Some("v1.34.0".into()),
    }
}

/// Members written as machines' etcd starts join one etcd cluster, each with its own id; the
/// first starts the cluster and leads it; starting again changes nothing; a deleted machine's
/// member goes with its Pod; a Node that is not ready makes its etcd Pod not Ready.
#[tokio::test]
async fn etcd_membership_is_written_on_the_etcd_pods_as_machines_start() {
    let workload = workload().await;
    for name in ["m1", "m2", "m3"] {
        workload.register_node(&node(name), true).await.unwrap();
        workload.start_etcd_member(&node(name), true).await.unwrap();
    }
    let pods: Api<Pod> = Api::namespaced(workload.client.clone(), "kube-system");
    let annotations = |pod: &Pod| pod.metadata.annotations.clone().unwrap_or_default();
    let first = annotations(&pods.get("etcd-m1").await.unwrap());
    workload.start_etcd_member(&node("m1"), true).await.unwrap();
    assert_eq!(annotations(&pods.get("etcd-m1").await.unwrap()), first);
    assert!(first.contains_key(LEADER_FROM), "{first:?}");
    let listed = pods
        .list(&ListParams::default().labels("component=etcd"))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), 3);
    let mut ids = Vec::new();
    for pod in &listed {
        let annotations = annotations(pod);
        assert_eq!(
            annotations.get(CLUSTER_ID),
            first.get(CLUSTER_ID),
            "{annotations:?}"
        );
        assert_eq!(annotations[MEMBER_ID].len(), 16, "{annotations:?}");
        ids.push(annotations[MEMBER_ID].clone());
        if pod.metadata.name.as_deref() != Some("etcd-m1") {
            assert!(!annotations.contains_key(LEADER_FROM), "{annotations:?}");
        }
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");

    workload.remove_machine("m3").await.unwrap();
    assert!(pods.get_opt("etcd-m3").await.unwrap().is_none());

    let ready = |pod: &Pod| {
        pod.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    workload.set_node_ready("m1", false).await.unwrap();
    assert!(!ready(&pods.get("etcd-m1").await.unwrap()));
    workload.set_node_ready("m1", true).await.unwrap();
    assert!(ready(&pods.get("etcd-m1").await.unwrap()));
    workload.shutdown().await;
}

/// The control plane objects a machine's boot creates: four static Pods per machine and the
/// cluster-wide kubeadm objects, once.
#[tokio::test]
async fn control_plane_components_and_kubeadm_objects_are_created() {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    use k8s_openapi::api::core::v1::ConfigMap;

    let workload = workload().await;
    for name in ["m1", "m2"] {
        workload.start_etcd_member(&node(name), true).await.unwrap();
        workload
            .start_control_plane_components(&node(name), true)
            .await
            .unwrap();
    }
    let pods: Api<Pod> = Api::namespaced(workload.client.clone(), "kube-system");
    let listed = pods
        .list(&ListParams::default().labels("tier=control-plane"))
        .await
        .unwrap();
    let mut names: Vec<String> = listed
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "etcd-m1",
            "etcd-m2",
            "kube-apiserver-m1",
            "kube-apiserver-m2",
            "kube-controller-manager-m1",
            "kube-controller-manager-m2",
            "kube-scheduler-m1",
            "kube-scheduler-m2"
        ]
    );
    let apiserver = pods.get("kube-apiserver-m2").await.unwrap();
    assert_eq!(
        apiserver.spec.unwrap().containers[0].image.as_deref(),
        Some("registry.k8s.io/kube-apiserver:v1.34.0")
    );

    let config_maps: Api<ConfigMap> = Api::namespaced(workload.client.clone(), "kube-system");
    let kubeadm = config_maps.get("kubeadm-config").await.unwrap();
    let configuration = &kubeadm.data.unwrap()["ClusterConfiguration"];
    let parsed: serde_json::Value = serde_yaml::from_str(configuration).unwrap();
    assert_eq!(parsed["kind"], "ClusterConfiguration");
    assert_eq!(parsed["kubernetesVersion"], "v1.34.0");
    assert_eq!(
        parsed["controlPlaneEndpoint"],
        format!("127.0.0.1:{}", workload.endpoint.port)
    );
    for name in ["kubelet-config", "kube-proxy", "coredns"] {
        config_maps.get(name).await.unwrap();
    }
    let daemon_sets: Api<DaemonSet> = Api::namespaced(workload.client.clone(), "kube-system");
    let kube_proxy = daemon_sets.get("kube-proxy").await.unwrap();
    assert_eq!(
        kube_proxy.spec.template.spec.unwrap().containers[0]
            .image
            .as_deref(),
        Some("registry.k8s.io/kube-proxy:v1.34.0")
    );
    let deployments: Api<Deployment> = Api::namespaced(workload.client.clone(), "kube-system");
    deployments.get("coredns").await.unwrap();
    workload.shutdown().await;
}
