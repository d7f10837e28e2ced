use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::{
    ALARMS, EtcdAdmin, EtcdAlarm, EtcdError, MemberRecord, SimulatedEtcd, compute_members,
};
use crate::cloud::ClusterKey;
use crate::cloud::workload::{SimulatedNode, WorkloadCluster};

fn record(id: u64, leader_from: Option<&str>, removed: bool, ready: bool) -> MemberRecord {
    MemberRecord {
        pod: format!("etcd-m{id}"),
        id,
        name: format!("m{id}"),
        cluster_id: 7,
        leader_from: leader_from.map(|t| t.parse::<Timestamp>().unwrap()),
        removed,
        ready,
        alarms: Vec::new(),
    }
}

#[test]
fn the_member_that_became_leader_last_leads_and_removed_members_are_not_members() {
    let members = compute_members(vec![
        record(3, Some("2026-01-01T00:00:00Z"), false, true),
        record(1, None, false, false),
        record(2, Some("2026-01-02T00:00:00Z"), false, true),
        record(4, Some("2026-01-03T00:00:00Z"), true, true),
    ]);
    let view: Vec<(u64, bool, bool)> = members
        .iter()
        .map(|m| (m.id, m.leader, m.healthy))
        .collect();
    assert_eq!(
        view,
        vec![(1, false, false), (2, true, true), (3, false, true)]
    );
}

#[test]
fn without_a_leader_annotation_the_lowest_member_id_leads() {
    let members = compute_members(vec![
        record(9, None, false, true),
        record(5, None, false, true),
    ]);
    assert_eq!(
        members.iter().find(|m| m.leader).map(|m| m.id),
        Some(5),
        "{members:?}"
    );
    assert!(compute_members(Vec::new()).is_empty());
}

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

/// Members join one etcd cluster, the first leads, leadership moves, a removed member and a
/// deleted machine leave the member list, and the leader's departure hands leadership on.
#[tokio::test]
async fn simulated_etcd_membership_follows_the_machines_and_the_admin_calls() {
    let workload = workload().await;
    let etcd = SimulatedEtcd::new(workload.client.clone());
    assert!(etcd.members().await.unwrap().is_empty());

    for name in ["m1", "m2", "m3"] {
        workload.register_node(&node(name), true).await.unwrap();
        workload.start_etcd_member(&node(name), true).await.unwrap();
    }
    // Starting again changes nothing.
    workload.start_etcd_member(&node("m1"), true).await.unwrap();
    let members = etcd.members().await.unwrap();
    assert_eq!(members.len(), 3, "{members:?}");
    assert!(
        members
            .iter()
            .all(|m| m.cluster_id == members[0].cluster_id)
    );
    assert!(members.iter().all(|m| m.healthy));
    let leader = members.iter().find(|m| m.leader).unwrap();
    assert_eq!(leader.name, "m1");
    let by_name = |members: &[super::EtcdMember], name: &str| {
        members.iter().find(|m| m.name == name).unwrap().clone()
    };

    // Leadership moves to m3.
    let m3 = by_name(&members, "m3");
    etcd.move_leader(m3.id).await.unwrap();
    let members = etcd.members().await.unwrap();
    assert!(by_name(&members, "m3").leader, "{members:?}");
    assert_eq!(members.iter().filter(|m| m.leader).count(), 1);

    // Removing m2 (twice: the second succeeds too) leaves two members.
    let m2 = by_name(&members, "m2");
    etcd.remove_member(m2.id).await.unwrap();
    etcd.remove_member(m2.id).await.unwrap();
    let members = etcd.members().await.unwrap();
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.len(), 2);
    assert!(!names.contains(&"m2"), "{names:?}");
    assert!(matches!(
        etcd.move_leader(m2.id).await,
        Err(EtcdError::MemberNotFound { .. })
    ));

    // The leader's machine goes: the other member leads.
    workload.remove_machine("m3").await.unwrap();
    let members = etcd.members().await.unwrap();
    assert_eq!(members.len(), 1, "{members:?}");
    assert_eq!(members[0].name, "m1");
    assert!(members[0].leader);

    // A Node that is not ready makes its member unhealthy.
    workload.set_node_ready("m1", false).await.unwrap();
    assert!(!etcd.members().await.unwrap()[0].healthy);
    workload.set_node_ready("m1", true).await.unwrap();
    assert!(etcd.members().await.unwrap()[0].healthy);

    // A raised alarm is listed, and the member counts as unhealthy.
    let pods: Api<Pod> = Api::namespaced(workload.client.clone(), "kube-system");
    pods.patch(
        "etcd-m1",
        &PatchParams::default(),
        &Patch::Merge(&json!({ "metadata": { "annotations": { ALARMS: "NOSPACE" } } })),
    )
    .await
    .unwrap();
    let id = etcd.members().await.unwrap()[0].id;
    assert_eq!(
        etcd.alarms().await.unwrap(),
        vec![EtcdAlarm {
            member_id: id,
            alarm: "NOSPACE".into()
        }]
    );
    assert!(!etcd.members().await.unwrap()[0].healthy);
    workload.shutdown().await;
}

#[tokio::test]
async fn a_member_id_that_does_not_parse_is_named_in_the_error() {
    let workload = workload().await;
    workload.start_etcd_member(&node("m1"), true).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(workload.client.clone(), "kube-system");
    pods.patch(
        "etcd-m1",
        &PatchParams::default(),
        &Patch::Merge(&json!({ "metadata": { "annotations": { super::MEMBER_ID: "zz" } } })),
    )
    .await
    .unwrap();
    let error = SimulatedEtcd::new(workload.client.clone())
        .members()
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains(super::MEMBER_ID), "{error}");
    assert!(error.contains("etcd-m1"), "{error}");
    workload.shutdown().await;
}

/// The control plane objects a machine's boot creates: four static Pods per machine and the
/// cluster-wide kubeadm objects, once.
#[tokio::test]
async fn control_plane_components_and_kubeadm_objects_are_created() {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ListParams;

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
