use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::jiff::Timestamp;
use kube::api::ObjectMeta;

use super::{
    ALARMS, CLUSTER_ID, LEADER_FROM, MEMBER_ID, MEMBER_REMOVED, MemberRecord, compute_members,
    members_of_pods,
};

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

fn pod(component: &str, node: &str, ready: bool, annotations: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{component}-{node}")),
            namespace: Some("kube-system".into()),
            labels: Some(
                [
                    ("component".to_string(), component.to_string()),
                    ("tier".to_string(), "control-plane".to_string()),
                ]
                .into(),
            ),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            node_name: Some(node.into()),
            ..Default::default()
        }),
        status: Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// The members read from a cache of control plane Pods: only etcd Pods with a member id
/// count, removed members and other components are left out, alarms and not Ready Pods make a
/// member unhealthy.
#[test]
fn members_are_read_from_the_etcd_pods_among_the_control_plane_pods() {
    let pods = [
        pod(
            "etcd",
            "m1",
            true,
            &[
                (MEMBER_ID, "00000000000000a1"),
                (CLUSTER_ID, "00000000000000c1"),
                (LEADER_FROM, "2026-01-01T00:00:00Z"),
            ],
        ),
        pod(
            "etcd",
            "m2",
            true,
            &[
                (MEMBER_ID, "00000000000000a2"),
                (CLUSTER_ID, "00000000000000c1"),
                (ALARMS, "NOSPACE"),
            ],
        ),
        pod(
            "etcd",
            "m3",
            false,
            &[
                (MEMBER_ID, "00000000000000a3"),
                (CLUSTER_ID, "00000000000000c1"),
            ],
        ),
        pod(
            "etcd",
            "m4",
            true,
            &[
                (MEMBER_ID, "00000000000000a4"),
                (CLUSTER_ID, "00000000000000c1"),
                (MEMBER_REMOVED, "2026-01-02T00:00:00Z"),
            ],
        ),
        pod("etcd", "m5", true, &[]),
        // Not an etcd Pod, even with a member id.
        pod(
            "kube-apiserver",
            "m1",
            true,
            &[(MEMBER_ID, "00000000000000ff")],
        ),
    ];
    let members = members_of_pods(pods.iter()).unwrap();
    let view: Vec<(&str, u64, bool, bool)> = members
        .iter()
        .map(|m| (m.name.as_str(), m.id, m.leader, m.healthy))
        .collect();
    assert_eq!(
        view,
        vec![
            ("m1", 0xa1, true, true),
            ("m2", 0xa2, false, false),
            ("m3", 0xa3, false, false),
        ]
    );
    assert!(members.iter().all(|m| m.cluster_id == 0xc1));
}

#[test]
fn a_member_id_that_does_not_parse_is_named_in_the_error() {
    let pods = [pod("etcd", "m1", true, &[(MEMBER_ID, "zz")])];
    let error = members_of_pods(pods.iter()).unwrap_err().to_string();
    assert!(error.contains(MEMBER_ID), "{error}");
    assert!(error.contains("etcd-m1"), "{error}");
}
