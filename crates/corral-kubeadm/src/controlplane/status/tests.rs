use std::collections::BTreeMap;
use std::sync::Arc;

use crate::controlplane::etcd::EtcdMember;
use corral_api::Machine;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::{Observed, compute_status, version_key};
use crate::api::controlplane::{KubeadmControlPlane, KubeadmControlPlaneStatus};
use crate::controlplane::planner::MachineView;
use crate::controlplane::workload::{COMPONENTS, WorkloadState};

fn kcp(replicas: i32) -> KubeadmControlPlane {
    serde_json::from_value(json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
        "kind": "KubeadmControlPlane",
        "metadata": { "name": "cp", "namespace": "default", "generation": 2 },
        "spec": {
            "replicas": replicas,
            "version": "v1.36.0",
            "machineTemplate": { "spec": { "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "t",
            } } },
        },
    }))
    .unwrap()
}

fn machine(name: &str, version: &str, ready: bool) -> Machine {
    let status = if ready { "True" } else { "False" };
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": name, "namespace": "default" },
        "spec": {
            "clusterName": "dev",
            "version": version,
            "bootstrap": {},
            "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": name },
        },
        "status": {
            "nodeRef": { "name": name },
            "conditions": [
                { "type": "Ready", "status": status, "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z" },
                { "type": "Available", "status": status, "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z" },
            ],
        },
    }))
    .unwrap()
}

fn view(name: &str, up_to_date: bool) -> MachineView {
    MachineView {
        name: name.into(),
        up_to_date,
        has_node: true,
        ..Default::default()
    }
}

/// A workload cluster where every listed machine runs healthy components and a member whose
/// health `members` gives.
fn workload(members: &[(&str, bool)]) -> WorkloadState {
    let mut pods = BTreeMap::new();
    for (node, _) in members {
        for component in COMPONENTS {
            pods.insert(format!("{component}-{node}"), true);
        }
    }
    WorkloadState {
        kubeadm_config: true,
        pods,
        members: Ok(members
            .iter()
            .enumerate()
            .map(|(index, (node, healthy))| EtcdMember {
                id: index as u64 + 1,
                name: node.to_string(),
                cluster_id: 9,
                leader: index == 0,
                healthy: *healthy,
            })
            .collect()),
        etcd_endpoints: Vec::new(),
    }
}

fn observed<'a>(
    kcp: &'a KubeadmControlPlane,
    machines: &'a [Arc<Machine>],
    views: &'a [MachineView],
    workload: Option<&'a WorkloadState>,
) -> Observed<'a> {
    Observed {
        kcp,
        machines,
        views,
        workload,
        workload_error: workload.is_none().then(|| "not connected".to_string()),
        initialized: workload.is_some_and(|w| w.kubeadm_config),
        certificates: Ok(()),
        selector: "s".into(),
        remediating: Vec::new(),
        remediation_blocked: None,
        deleting: false,
        paused: false,
    }
}

fn get<'a>(status: &'a KubeadmControlPlaneStatus, type_: &str) -> &'a Condition {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition"))
}

fn now() -> Time {
    Time(Timestamp::from_second(1_800_000_000).unwrap())
}

#[test]
fn a_new_control_plane_is_not_initialized_nor_available_and_scales_up() {
    let kcp = kcp(3);
    let status = compute_status(&Default::default(), &observed(&kcp, &[], &[], None), &now());
    assert_eq!(status.replicas, Some(0));
    assert_eq!(status.version, None);
    assert_eq!(status.observed_generation, Some(2));
    assert_eq!(status.initialization.control_plane_initialized, None);
    assert_eq!(get(&status, "Initialized").status, "False");
    assert_eq!(get(&status, "Available").status, "False");
    assert_eq!(get(&status, "ScalingUp").status, "True");
    assert_eq!(
        get(&status, "ScalingUp").message,
        "Scaling up from 0 to 3 replicas"
    );
    assert_eq!(get(&status, "EtcdClusterHealthy").reason, "ConnectionDown");
}

#[test]
fn a_healthy_control_plane_is_available_with_its_lowest_version() {
    let kcp = kcp(3);
    let machines = [
        machine("m1", "v1.36.0", true),
        machine("m2", "v1.35.2", true),
        machine("m3", "v1.36.0", true),
    ]
    .map(Arc::new);
    let views = [view("m1", true), view("m2", false), view("m3", true)];
    let workload = workload(&[("m1", true), ("m2", true), ("m3", true)]);
    let status = compute_status(
        &Default::default(),
        &observed(&kcp, &machines, &views, Some(&workload)),
        &now(),
    );
    assert_eq!(status.initialization.control_plane_initialized, Some(true));
    assert_eq!(
        (
            status.replicas,
            status.ready_replicas,
            status.available_replicas,
            status.up_to_date_replicas
        ),
        (Some(3), Some(3), Some(3), Some(2))
    );
    assert_eq!(status.version.as_deref(), Some("v1.35.2"));
    let versions: Vec<(String, Option<i32>)> = status
        .versions
        .iter()
        .map(|v| (v.version.clone(), v.replicas))
        .collect();
    assert_eq!(
        versions,
        [
            ("v1.35.2".to_string(), Some(1)),
            ("v1.36.0".to_string(), Some(2))
        ]
    );
    for type_ in [
        "Available",
        "Initialized",
        "EtcdClusterHealthy",
        "ControlPlaneComponentsHealthy",
        "MachinesReady",
    ] {
        assert_eq!(get(&status, type_).status, "True", "{type_}");
    }
    assert_eq!(get(&status, "MachinesUpToDate").status, "False");
    assert_eq!(
        get(&status, "MachinesUpToDate").message,
        "Machines not up-to-date: m2"
    );
    assert_eq!(get(&status, "RollingOut").status, "True");
}

#[test]
fn etcd_health_and_availability_follow_the_members() {
    let kcp = kcp(3);
    let machines = [
        machine("m1", "v1.36.0", true),
        machine("m2", "v1.36.0", true),
        machine("m3", "v1.36.0", true),
    ]
    .map(Arc::new);
    let views = [view("m1", true), view("m2", true), view("m3", true)];

    // One member down: etcd is not healthy, but keeps quorum, so the control plane is available.
    let one_down = workload(&[("m1", true), ("m2", false), ("m3", true)]);
    let status = compute_status(
        &Default::default(),
        &observed(&kcp, &machines, &views, Some(&one_down)),
        &now(),
    );
    assert_eq!(get(&status, "EtcdClusterHealthy").status, "False");
    assert_eq!(
        get(&status, "EtcdClusterHealthy").message,
        "Etcd members not healthy: m2"
    );
    assert_eq!(get(&status, "Available").status, "True");

    // Two down: no quorum, not available; and a member without a machine is named.
    let two_down = workload(&[("m1", true), ("m2", false), ("m3", false), ("gone", true)]);
    let status = compute_status(
        &status,
        &observed(&kcp, &machines, &views, Some(&two_down)),
        &now(),
    );
    assert_eq!(get(&status, "Available").status, "False");
    assert!(
        get(&status, "Available")
            .message
            .contains("Etcd quorum not confirmed")
    );
    assert!(
        get(&status, "EtcdClusterHealthy")
            .message
            .contains("Etcd members without a Machine: gone")
    );
}

#[test]
fn versions_order_by_number() {
    let mut versions = ["v1.10.0", "v1.9.3", "v1.10.0-rc.1", "v1.9.10"];
    versions.sort_by_key(|v| version_key(v));
    assert_eq!(versions[0], "v1.9.3");
    assert_eq!(versions[1], "v1.9.10");
}

/// A control plane Machine's own conditions: UpToDate from the reasons it is outdated, each
/// static Pod's health (Ready: Running; not Ready: Provisioning; missing: DoesNotExist), and
/// its etcd member's; without a Node only UpToDate; Unknown when the workload cluster cannot be
/// read.
#[test]
fn machine_conditions_say_up_to_date_and_the_health_of_pods_and_etcd_member() {
    use super::machine::{self as types, reason};
    use super::machine_conditions;
    use corral_api::ConditionStatus;

    let find = |conditions: &[corral_runtime::conditions::NewCondition], type_: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == type_)
            .map(|c| (c.status, c.reason.clone(), c.message.clone()))
    };
    let mut pods = BTreeMap::new();
    pods.insert("etcd-m1".to_string(), true);
    pods.insert("kube-apiserver-m1".to_string(), true);
    pods.insert("kube-controller-manager-m1".to_string(), false);
    let workload = WorkloadState {
        kubeadm_config: true,
        pods,
        members: Ok(vec![EtcdMember {
            id: 1,
            name: "m1".into(),
            cluster_id: 7,
            leader: true,
            healthy: false,
        }]),
        etcd_endpoints: Vec::new(),
    };
    let m1 = machine("m1", "v1.36.0", true);
    let outdated = vec!["Version v1.35.0 is not equal to v1.36.0".to_string()];
    let conditions = machine_conditions(&m1, &outdated, Some(&workload), None);
    assert_eq!(
        find(&conditions, types::UP_TO_DATE),
        Some((
            ConditionStatus::False,
            reason::NOT_UP_TO_DATE.into(),
            "* Version v1.35.0 is not equal to v1.36.0".into()
        ))
    );
    let status_reason = |type_| find(&conditions, type_).map(|(s, r, _)| (s, r));
    assert_eq!(
        status_reason(types::ETCD_POD_HEALTHY),
        Some((ConditionStatus::True, reason::POD_RUNNING.into()))
    );
    assert_eq!(
        status_reason(types::API_SERVER_POD_HEALTHY),
        Some((ConditionStatus::True, reason::POD_RUNNING.into()))
    );
    assert_eq!(
        status_reason(types::CONTROLLER_MANAGER_POD_HEALTHY),
        Some((ConditionStatus::False, reason::POD_PROVISIONING.into()))
    );
    assert_eq!(
        status_reason(types::SCHEDULER_POD_HEALTHY),
        Some((ConditionStatus::False, reason::POD_DOES_NOT_EXIST.into()))
    );
    assert_eq!(
        status_reason(types::ETCD_MEMBER_HEALTHY),
        Some((ConditionStatus::False, reason::MEMBER_NOT_HEALTHY.into()))
    );

    // Up to date, but the workload cluster cannot be read.
    let conditions = machine_conditions(&m1, &[], None, Some("not connected"));
    assert_eq!(
        find(&conditions, types::UP_TO_DATE).map(|(s, r, _)| (s, r)),
        Some((ConditionStatus::True, reason::UP_TO_DATE.into()))
    );
    let (status, reason_, message) = find(&conditions, types::ETCD_MEMBER_HEALTHY).unwrap();
    assert_eq!(
        (status, reason_.as_str()),
        (ConditionStatus::Unknown, reason::INSPECTION_FAILED)
    );
    assert!(message.contains("not connected"), "{message}");

    // Without a Node: only UpToDate.
    let mut m2 = machine("m2", "v1.36.0", false);
    m2.status.as_mut().unwrap().node_ref = None;
    let conditions = machine_conditions(&m2, &[], Some(&workload), None);
    assert_eq!(conditions.len(), 1, "{conditions:?}");
}
