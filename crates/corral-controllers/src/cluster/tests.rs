use std::time::Duration;

use corral_api::{Cluster, ClusterPhase, ConditionStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::delete::describe_remaining;
use super::status::*;
use corral_runtime::cluster_cache::HealthCheckingState;

fn time(second: i64) -> Time {
    Time(Timestamp::from_second(second).unwrap())
}

fn cluster(value: serde_json::Value) -> Cluster {
    let mut object = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": { "name": "c", "namespace": "ns", "generation": 1 },
        "spec": {},
    });
    merge(&mut object, value);
    serde_json::from_value(object).unwrap()
}

fn merge(object: &mut serde_json::Value, extra: serde_json::Value) {
    match (object, extra) {
        (serde_json::Value::Object(object), serde_json::Value::Object(extra)) => {
            for (key, value) in extra {
                merge(object.entry(key).or_insert(serde_json::Value::Null), value);
            }
        }
        (object, extra) => *object = extra,
    }
}

fn get<'a>(cluster: &'a Cluster, type_: &str) -> &'a Condition {
    cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .unwrap_or_else(|| panic!("{type_} is set"))
}

const INFRA_REF: &str = r#"{ "apiGroup": "infra.example.com", "kind": "FooCluster", "name": "c" }"#;

fn infra_ref() -> serde_json::Value {
    serde_json::from_str(INFRA_REF).unwrap()
}

/// Upstream `TestClusterReconcilePhases` / `setPhase`.
#[test]
fn upstream_set_phase() {
    let cases = [
        ("a new Cluster is Pending", json!({}), ClusterPhase::Pending),
        (
            "a Cluster with an infrastructureRef is Provisioning",
            json!({ "spec": { "infrastructureRef": infra_ref() } }),
            ClusterPhase::Provisioning,
        ),
        (
            "provisioned infrastructure without an endpoint is still Provisioning",
            json!({ "spec": { "infrastructureRef": infra_ref() },
                    "status": { "initialization": { "infrastructureProvisioned": true } } }),
            ClusterPhase::Provisioning,
        ),
        (
            "provisioned infrastructure and a valid endpoint is Provisioned",
            json!({ "spec": { "infrastructureRef": infra_ref(),
                              "controlPlaneEndpoint": { "host": "h", "port": 6443 } },
                    "status": { "initialization": { "infrastructureProvisioned": true } } }),
            ClusterPhase::Provisioned,
        ),
        (
            "a Cluster being deleted is Deleting",
            json!({ "metadata": { "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["f"] },
                    "spec": { "infrastructureRef": infra_ref() } }),
            ClusterPhase::Deleting,
        ),
    ];
    for (name, value, expected) in cases {
        let mut c = cluster(value);
        assert!(set_phase(&mut c), "{name}: changed");
        assert_eq!(c.status.as_ref().unwrap().phase, Some(expected), "{name}");
        assert!(!set_phase(&mut c), "{name}: stable");
    }
}

/// Upstream `TestSetInfrastructureReadyCondition`.
#[test]
fn upstream_set_infrastructure_ready_condition() {
    let now = time(1000);
    let with_ref = json!({ "spec": { "infrastructureRef": infra_ref() } });

    let mut c = cluster(with_ref.clone());
    set_infrastructure_ready_condition(
        &mut c,
        Some(&Observed::Found {
            condition: Ok(None),
        }),
        &now,
    );
    let ready = get(&c, "InfrastructureReady");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "NotReady")
    );
    assert_eq!(
        ready.message,
        "FooCluster status.initialization.provisioned is false"
    );

    let mut c = cluster(with_ref.clone());
    set_infrastructure_ready_condition(&mut c, Some(&Observed::NotFound), &now);
    let ready = get(&c, "InfrastructureReady");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ObjectDoesNotExist")
    );
    assert_eq!(ready.message, "FooCluster does not exist");

    let mut c = cluster(json!({ "spec": { "infrastructureRef": infra_ref() },
        "status": { "initialization": { "infrastructureProvisioned": true } } }));
    set_infrastructure_ready_condition(&mut c, Some(&Observed::NotFound), &now);
    let ready = get(&c, "InfrastructureReady");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ObjectDeleted")
    );
    assert_eq!(
        ready.message,
        "FooCluster has been deleted while the cluster still exists"
    );

    let mut c = cluster(with_ref.clone());
    let not_installed = "FooCluster.infra.example.com is not installed".to_owned();
    set_infrastructure_ready_condition(
        &mut c,
        Some(&Observed::Failed(not_installed.clone())),
        &now,
    );
    let ready = get(&c, "InfrastructureReady");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("Unknown", "InternalError")
    );
    assert_eq!(ready.message, not_installed);

    let mut c = cluster(with_ref);
    let reported = corral_api::contract::ProviderCondition {
        type_: "Ready".into(),
        status: "True".into(),
        ..Default::default()
    };
    set_infrastructure_ready_condition(
        &mut c,
        Some(&Observed::Found {
            condition: Ok(Some(reported)),
        }),
        &now,
    );
    let ready = get(&c, "InfrastructureReady");
    // A v1beta1 provider's reason-less True condition reads as Ready.
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Ready")
    );
}

#[test]
fn control_plane_initialized_without_a_control_plane_ref_follows_the_machines() {
    let now = time(1000);
    let mut c = cluster(json!({ "spec": { "infrastructureRef": infra_ref() } }));
    set_control_plane_initialized_condition(&mut c, None, false, &[], &now);
    let initialized = get(&c, "ControlPlaneInitialized");
    assert_eq!(
        (initialized.status.as_str(), initialized.reason.as_str()),
        ("False", "NotInitialized")
    );
    let machine: corral_api::Machine = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": { "name": "cp", "labels": { "cluster.x-k8s.io/control-plane": "" } },
        "spec": { "clusterName": "c", "bootstrap": {},
                  "infrastructureRef": { "apiGroup": "g", "kind": "K", "name": "n" } },
        "status": { "nodeRef": { "name": "node" } },
    }))
    .unwrap();
    set_control_plane_initialized_condition(
        &mut c,
        None,
        false,
        &[std::sync::Arc::new(machine)],
        &now,
    );
    assert_eq!(get(&c, "ControlPlaneInitialized").status, "True");
    // Once True it stays, whatever happens.
    set_control_plane_initialized_condition(&mut c, None, false, &[], &now);
    assert_eq!(get(&c, "ControlPlaneInitialized").status, "True");
}

/// Upstream `TestSetWorkersAvailableCondition` "no MachineDeployments".
#[test]
fn workers_are_available_when_there_are_none() {
    let mut c = cluster(json!({}));
    set_workers_available_condition(&mut c, &[], &time(0));
    let workers = get(&c, "WorkersAvailable");
    assert_eq!(
        (workers.status.as_str(), workers.reason.as_str()),
        ("True", "NoWorkers")
    );
}

/// Upstream `TestSetRemoteConnectionProbeCondition`.
#[test]
fn upstream_set_remote_connection_probe_condition() {
    let grace = Duration::from_secs(50);
    let now = time(1000);
    let mut c = cluster(json!({}));
    set_remote_connection_probe_condition(&mut c, &HealthCheckingState::default(), grace, &now);
    let probe = get(&c, "RemoteConnectionProbe");
    assert_eq!(
        (probe.status.as_str(), probe.message.as_str()),
        ("False", "Remote connection not established yet")
    );

    let healthy = HealthCheckingState {
        last_probe_time: Some(now.0),
        last_probe_success_time: Some(now.0),
        consecutive_failures: 0,
    };
    assert_eq!(
        set_remote_connection_probe_condition(&mut c, &healthy, grace, &now),
        None
    );
    assert_eq!(get(&c, "RemoteConnectionProbe").reason, "ProbeSucceeded");

    let failing_briefly = HealthCheckingState {
        last_probe_success_time: Some(time(980).0),
        consecutive_failures: 2,
        ..healthy.clone()
    };
    let requeue = set_remote_connection_probe_condition(&mut c, &failing_briefly, grace, &now);
    assert_eq!(
        get(&c, "RemoteConnectionProbe").status,
        "True",
        "within the grace period"
    );
    assert_eq!(requeue, Some(Duration::from_secs(31)));

    let failing_long = HealthCheckingState {
        last_probe_success_time: Some(time(900).0),
        consecutive_failures: 10,
        ..healthy
    };
    set_remote_connection_probe_condition(&mut c, &failing_long, grace, &now);
    let probe = get(&c, "RemoteConnectionProbe");
    assert_eq!(probe.status, "False");
    assert_eq!(
        probe.message,
        "Remote connection probe failed, probe last succeeded at 1970-01-01T00:15:00Z"
    );
}

/// Upstream `TestSetAvailableCondition`: a summary of the Cluster's own conditions; while
/// deleting, a deleted infrastructure is information, not an issue.
#[test]
fn upstream_set_available_condition() {
    let now = time(0);
    let mut c = cluster(json!({}));
    for (type_, status, reason) in [
        ("Deleting", ConditionStatus::False, "NotDeleting"),
        (
            "RemoteConnectionProbe",
            ConditionStatus::True,
            "ProbeSucceeded",
        ),
        ("InfrastructureReady", ConditionStatus::True, "Ready"),
        ("ControlPlaneAvailable", ConditionStatus::True, "Available"),
        ("WorkersAvailable", ConditionStatus::True, "NoWorkers"),
    ] {
        let status_ = c.status.get_or_insert_with(Default::default);
        corral_runtime::conditions::set(
            &mut status_.conditions,
            corral_runtime::conditions::NewCondition::new(type_, status, reason),
            None,
            &now,
        );
    }
    set_available_condition(&mut c, &now);
    let available = get(&c, "Available");
    assert_eq!(
        (available.status.as_str(), available.reason.as_str()),
        ("True", "Available")
    );

    // An availability gate that is missing makes it Unknown.
    c.spec.availability_gates = vec![corral_api::ClusterAvailabilityGate {
        condition_type: "MyGate".into(),
        polarity: None,
    }];
    set_available_condition(&mut c, &now);
    let available = get(&c, "Available");
    assert_eq!(
        (available.status.as_str(), available.reason.as_str()),
        ("Unknown", "AvailableUnknown")
    );
    assert_eq!(available.message, "* MyGate: Condition not yet reported");
    c.spec.availability_gates.clear();

    // Deleting: the Deleting condition is the issue; the deleted infrastructure is not.
    c.metadata.deletion_timestamp = Some(time(0));
    let status_ = c.status.as_mut().unwrap();
    corral_runtime::conditions::set(
        &mut status_.conditions,
        corral_runtime::conditions::NewCondition::new(
            "Deleting",
            ConditionStatus::True,
            "WaitingForWorkersDeletion",
        )
        .message("* Worker Machine: m"),
        None,
        &now,
    );
    corral_runtime::conditions::set(
        &mut status_.conditions,
        corral_runtime::conditions::NewCondition::new(
            "InfrastructureReady",
            ConditionStatus::False,
            "ObjectDeleted",
        ),
        None,
        &now,
    );
    set_available_condition(&mut c, &now);
    let available = get(&c, "Available");
    assert_eq!(available.status, "False");
    assert_eq!(available.message, "* Deleting:\n  * Worker Machine: m");
}

/// Upstream `util/paused` messages.
#[test]
fn paused_condition_says_why() {
    let both = paused_condition(true, "Cluster", true);
    assert_eq!(both.status, ConditionStatus::True);
    assert_eq!(
        both.message,
        "Cluster spec.paused is set to true, Cluster has the cluster.x-k8s.io/paused annotation"
    );
    let annotation = paused_condition(false, "Machine", true);
    assert_eq!(
        annotation.message,
        "Machine has the cluster.x-k8s.io/paused annotation"
    );
    let none = paused_condition(false, "Machine", false);
    assert_eq!(
        (none.status, none.reason.as_str()),
        (ConditionStatus::False, "NotPaused")
    );
}

#[test]
fn deletion_messages_list_what_remains() {
    assert_eq!(describe_remaining("MachineSet", &[]), None);
    assert_eq!(
        describe_remaining("Worker Machine", &["a".into()]),
        Some("* Worker Machine: a".into())
    );
    let many: Vec<String> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        describe_remaining("MachineDeployment", &many),
        Some("* MachineDeployments: a, b, c, ... (2 more)".into())
    );
}

#[test]
fn worker_counters_add_up_machine_deployments_and_standalone_machines() {
    let mut c = cluster(json!({ "metadata": { "uid": "u" } }));
    let md: corral_api::MachineDeployment = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": { "name": "md" },
        "spec": { "clusterName": "c", "replicas": 3, "selector": {},
                  "template": { "spec": { "clusterName": "c", "bootstrap": {},
                      "infrastructureRef": { "apiGroup": "g", "kind": "K", "name": "n" } } } },
        "status": { "replicas": 3, "readyReplicas": 2, "availableReplicas": 2, "upToDateReplicas": 3,
                    "versions": [ { "version": "v1.36.0", "replicas": 3 } ] },
    }))
    .unwrap();
    let standalone: corral_api::Machine = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": { "name": "m", "ownerReferences": [
            { "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "c", "uid": "u" } ] },
        "spec": { "clusterName": "c", "version": "v1.35.2", "bootstrap": {},
                  "infrastructureRef": { "apiGroup": "g", "kind": "K", "name": "n" } },
        "status": { "conditions": [
            { "type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z" } ] },
    }))
    .unwrap();
    let descendants = Descendants {
        machine_deployments: vec![std::sync::Arc::new(md)],
        worker_machines: vec![std::sync::Arc::new(standalone)],
        ..Default::default()
    };
    set_workers_replicas(&mut c, &descendants);
    let workers = &c.status.as_ref().unwrap().workers;
    assert_eq!(workers.desired_replicas, Some(4));
    assert_eq!(workers.replicas, Some(4));
    assert_eq!(workers.ready_replicas, Some(3));
    assert_eq!(workers.available_replicas, Some(2));
    assert_eq!(workers.up_to_date_replicas, Some(3));
    let versions: Vec<_> = workers
        .versions
        .iter()
        .map(|v| (v.version.as_str(), v.replicas))
        .collect();
    assert_eq!(versions, [("v1.35.2", Some(1)), ("v1.36.0", Some(3))]);
}
