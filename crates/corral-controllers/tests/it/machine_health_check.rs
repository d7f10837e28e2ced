//! The MachineHealthCheck controller against the API server, with the Machine controller
//! running, the test as infrastructure provider, and a second API server as the workload
//! cluster whose Nodes the test breaks and mends (upstream
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_controller_test.go`).
//!
//! Node conditions that must have lasted past a timeout are written with a transition time in
//! the past, as upstream's tests do; one test waits a two-second timeout out to see the
//! requeue. The node startup timeout counts from times the controllers write, so that test
//! moves the controllers' clock forward instead of waiting.

use std::time::Duration;

use corral_api::{Cluster, Machine, MachineHealthCheck};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::support::*;

const REMEDIATION_GROUP: &str = "test.remediation.cluster.x-k8s.io";

/// An external remediation request kind, as upstream's `GenericExternalRemediation`.
const REMEDIATION: TestKind = TestKind {
    group: REMEDIATION_GROUP,
    kind: "TestRemediation",
    plural: "testremediations",
};

const REMEDIATION_TEMPLATE: TestKind = TestKind {
    group: REMEDIATION_GROUP,
    kind: "TestRemediationTemplate",
    plural: "testremediationtemplates",
};

fn conditions_of(machine: &Machine) -> &[Condition] {
    machine
        .status
        .as_ref()
        .map(|status| status.conditions.as_slice())
        .unwrap_or_default()
}

fn machine_condition<'a>(machine: &'a Machine, type_: &str) -> Option<&'a Condition> {
    condition(conditions_of(machine), type_)
}

fn check_condition<'a>(check: &'a MachineHealthCheck, type_: &str) -> Option<&'a Condition> {
    condition(
        check
            .status
            .as_ref()
            .map(|status| status.conditions.as_slice())
            .unwrap_or_default(),
        type_,
    )
}

fn has_status(condition: Option<&Condition>, status: &str) -> bool {
    condition.is_some_and(|condition| condition.status == status)
}

/// The MachineHealthCheck's counts: (expectedMachines, currentHealthy, remediationsAllowed).
fn counts(check: &MachineHealthCheck) -> (Option<i32>, Option<i32>, Option<i32>) {
    check.status.as_ref().map_or((None, None, None), |status| {
        (
            status.expected_machines,
            status.current_healthy,
            status.remediations_allowed,
        )
    })
}

/// A Cluster whose infrastructure is ready and whose control plane is initialized, with its
/// workload cluster.
async fn ready_cluster(h: &mut Harness, name: &str) -> Workload {
    h.create_provider(
        INFRA_CLUSTER,
        name,
        json!({ "spec": { "controlPlaneEndpoint": { "host": "10.0.0.1", "port": 6443 } } }),
    )
    .await;
    h.set_provider_status(
        INFRA_CLUSTER,
        name,
        json!({ "initialization": { "provisioned": true } }),
    )
    .await;
    h.create_provider(CONTROL_PLANE, name, json!({})).await;
    h.set_provider_status(
        CONTROL_PLANE,
        name,
        json!({ "initialization": { "controlPlaneInitialized": true }, "externalManagedControlPlane": true }),
    )
    .await;
    let workload = h.workload(name).await;
    h.create::<Cluster>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": { "name": name },
        "spec": {
            "infrastructureRef": INFRA_CLUSTER.reference(name),
            "controlPlaneRef": CONTROL_PLANE.reference(name),
        },
    }))
    .await;
    h.wait_for::<Cluster>(
        name,
        "the Cluster to be ready for health checks",
        |cluster| {
            let conditions = cluster
                .status
                .as_ref()
                .map(|status| status.conditions.as_slice())
                .unwrap_or_default();
            has_status(condition(conditions, "InfrastructureReady"), "True")
                && has_status(condition(conditions, "ControlPlaneInitialized"), "True")
        },
    )
    .await;
    workload
}

/// A Machine of the `workers` pool whose infrastructure is provisioned with provider ID
/// `test://<name>`; no Node yet.
async fn provisioned_machine(h: &Harness, name: &str, cluster: &str, annotations: Value) {
    h.create_provider(
        INFRA_MACHINE,
        name,
        json!({ "spec": { "providerID": format!("test://{name}") } }),
    )
    .await;
    h.set_provider_status(
        INFRA_MACHINE,
        name,
        json!({ "initialization": { "provisioned": true } }),
    )
    .await;
    h.create::<Machine>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "labels": { "pool": "workers" },
            "annotations": annotations,
        },
        "spec": {
            "clusterName": cluster,
            "version": "v1.36.0",
            "bootstrap": { "dataSecretName": format!("{name}-bootstrap") },
            "infrastructureRef": INFRA_MACHINE.reference(name),
        },
    }))
    .await;
}

/// A Machine of the `workers` pool with a Ready Node `<name>-node`, once the Machine
/// controller has found the Node.
async fn running_machine(h: &Harness, workload: &Workload, name: &str, cluster: &str) {
    provisioned_machine(h, name, cluster, json!({})).await;
    workload
        .create_node(&format!("{name}-node"), &format!("test://{name}"), true)
        .await;
    h.wait_for::<Machine>(name, "the Machine to have its Node", |machine| {
        machine
            .status
            .as_ref()
            .is_some_and(|status| status.node_ref.is_some())
    })
    .await;
}

/// A MachineHealthCheck of the `workers` pool, with `spec` merged into upstream's test checks:
/// Ready Unknown or False for five minutes.
async fn health_check(h: &Harness, name: &str, cluster: &str, spec: Value) -> MachineHealthCheck {
    let mut object = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": { "name": name },
        "spec": {
            "clusterName": cluster,
            "selector": { "matchLabels": { "pool": "workers" } },
            "checks": {
                "unhealthyNodeConditions": [
                    { "type": "Ready", "status": "Unknown", "timeoutSeconds": 300 },
                    { "type": "Ready", "status": "False", "timeoutSeconds": 300 },
                ],
            },
        },
    });
    merge(&mut object, json!({ "spec": spec }));
    h.create(object).await
}

/// Writes the Node's Ready condition, as the kubelet (or the node lifecycle controller) would,
/// with the given transition time.
async fn set_node_ready(workload: &Workload, node: &str, status: &str, since: Timestamp) {
    let reason = match status {
        "True" => "KubeletReady",
        "False" => "KubeletNotReady",
        _ => "NodeStatusUnknown",
    };
    let since = Timestamp::from_second(since.as_second())
        .unwrap()
        .to_string();
    let patch = json!({ "status": { "conditions": [
        { "type": "Ready", "status": status, "reason": reason,
          "lastTransitionTime": since, "lastHeartbeatTime": since },
    ]}});
    workload
        .nodes()
        .patch_status(node, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("the Node status is written");
}

fn an_hour_ago() -> Timestamp {
    Timestamp::now() - SignedDuration::from_hours(1)
}

async fn annotate<K>(h: &Harness, name: &str, key: &str, value: Option<&str>)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned,
{
    h.api::<K>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { key: value } } })),
        )
        .await
        .expect("the annotation is written");
}

/// Upstream "should react when a Node transitions to unhealthy", with a two-second timeout
/// waited out (the Node event comes before the timeout expires; only the requeue brings the
/// verdict), then the Node recovers.
#[tokio::test]
async fn node_not_ready_past_its_timeout_marks_the_machine_for_remediation() {
    let mut h = Harness::start().await;
    let workload = ready_cluster(&mut h, "prod").await;
    running_machine(&h, &workload, "m1", "prod").await;
    health_check(
        &h,
        "workers",
        "prod",
        json!({ "checks": { "unhealthyNodeConditions": [
            { "type": "Ready", "status": "False", "timeoutSeconds": 2 },
        ]}}),
    )
    .await;

    let check = h
        .wait_for::<MachineHealthCheck>(
            "workers",
            "the health check to see a healthy target",
            |c| counts(c) == (Some(1), Some(1), Some(1)),
        )
        .await;
    let status = check.status.as_ref().unwrap();
    assert_eq!(status.targets, ["m1"]);
    assert_eq!(status.observed_generation, check.metadata.generation);
    let allowed = check_condition(&check, "RemediationAllowed").unwrap();
    assert_eq!(
        (allowed.status.as_str(), allowed.reason.as_str()),
        ("True", "RemediationAllowed")
    );
    assert_eq!(check.labels()["cluster.x-k8s.io/cluster-name"], "prod");
    assert_eq!(owners(&check), ["Cluster/prod"]);
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to pass its health check", |m| {
            has_status(machine_condition(m, "HealthCheckSucceeded"), "True")
        })
        .await;
    assert_eq!(
        machine_condition(&machine, "HealthCheckSucceeded")
            .unwrap()
            .reason,
        "HealthCheckSucceeded"
    );

    let broken_at = Timestamp::now();
    set_node_ready(&workload, "m1-node", "False", broken_at).await;
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to fail its health check", |m| {
            has_status(machine_condition(m, "HealthCheckSucceeded"), "False")
        })
        .await;
    let failed = machine_condition(&machine, "HealthCheckSucceeded").unwrap();
    assert_eq!(failed.reason, "UnhealthyNode");
    assert_eq!(
        failed.message,
        "Health check failed:\n  * Condition Ready on Node is reporting status False with reason KubeletNotReady for more than 2s"
    );
    assert!(
        failed.last_transition_time.0.as_second() >= broken_at.as_second() + 2,
        "judged after the timeout: {} vs {broken_at}",
        failed.last_transition_time.0
    );
    let remediated = machine_condition(&machine, "OwnerRemediated").unwrap();
    assert_eq!(
        (
            remediated.status.as_str(),
            remediated.reason.as_str(),
            remediated.message.as_str()
        ),
        ("False", "WaitingForRemediation", "Waiting for remediation")
    );
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "the health check to count it", |c| {
            counts(c) == (Some(1), Some(0), Some(0))
        })
        .await;
    assert!(has_status(
        check_condition(&check, "RemediationAllowed"),
        "True"
    ));
    let reasons = event_reasons(&h.client, &h.namespace, "m1").await;
    assert!(
        reasons.contains(&"MachineMarkedUnhealthy".to_owned()),
        "{reasons:?}"
    );

    // The Node recovers before anyone remediated the Machine.
    set_node_ready(&workload, "m1-node", "True", Timestamp::now()).await;
    h.wait_for::<Machine>("m1", "the Machine to pass its health check again", |m| {
        has_status(machine_condition(m, "HealthCheckSucceeded"), "True")
    })
    .await;
    h.wait_for::<MachineHealthCheck>("workers", "the health check to count it healthy", |c| {
        counts(c) == (Some(1), Some(1), Some(1))
    })
    .await;
    h.stop().await;
}

/// Upstream "it marks unhealthy machines as unhealthy but not for remediation when the
/// unhealthy Machines exceed UnhealthyLessThanOrEqualTo", with a bound of 1 of 3; then one
/// Node recovers and the other Machine may be remediated.
#[tokio::test]
async fn too_many_unhealthy_machines_hold_remediation_back() {
    let mut h = Harness::start().await;
    let workload = ready_cluster(&mut h, "prod").await;
    for name in ["m1", "m2", "m3"] {
        running_machine(&h, &workload, name, "prod").await;
    }
    health_check(
        &h,
        "workers",
        "prod",
        json!({ "remediation": { "triggerIf": { "unhealthyLessThanOrEqualTo": 1 } } }),
    )
    .await;
    h.wait_for::<MachineHealthCheck>("workers", "three healthy targets", |c| {
        counts(c) == (Some(3), Some(3), Some(1))
    })
    .await;

    set_node_ready(&workload, "m2-node", "Unknown", an_hour_ago()).await;
    set_node_ready(&workload, "m3-node", "Unknown", an_hour_ago()).await;
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "remediation to be held back", |c| {
            counts(c) == (Some(3), Some(1), Some(0))
                && has_status(check_condition(c, "RemediationAllowed"), "False")
        })
        .await;
    let restricted = check_condition(&check, "RemediationAllowed").unwrap();
    assert_eq!(restricted.reason, "TooManyUnhealthy");
    assert_eq!(
        restricted.message,
        "Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 1)"
    );
    assert_eq!(check.status.as_ref().unwrap().targets, ["m1", "m2", "m3"]);
    for name in ["m2", "m3"] {
        let machine = h
            .wait_for::<Machine>(name, "the Machine to fail its health check", |m| {
                has_status(machine_condition(m, "HealthCheckSucceeded"), "False")
            })
            .await;
        assert_eq!(
            machine_condition(&machine, "HealthCheckSucceeded")
                .unwrap()
                .reason,
            "UnhealthyNode"
        );
        assert!(
            machine_condition(&machine, "OwnerRemediated").is_none(),
            "{name} is not handed over"
        );
    }
    let reasons = event_reasons(&h.client, &h.namespace, "workers").await;
    assert_eq!(
        reasons
            .iter()
            .filter(|reason| *reason == "RemediationRestricted")
            .count(),
        1,
        "{reasons:?}"
    );

    // One Node recovers: one unhealthy Machine of three is within the bound.
    set_node_ready(&workload, "m2-node", "True", Timestamp::now()).await;
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "remediation to be allowed again", |c| {
            counts(c) == (Some(3), Some(2), Some(0))
                && has_status(check_condition(c, "RemediationAllowed"), "True")
        })
        .await;
    assert_eq!(
        check_condition(&check, "RemediationAllowed")
            .unwrap()
            .message,
        ""
    );
    let machine = h
        .wait_for::<Machine>("m3", "the Machine to be handed over", |m| {
            has_status(machine_condition(m, "OwnerRemediated"), "False")
        })
        .await;
    assert_eq!(
        machine_condition(&machine, "OwnerRemediated")
            .unwrap()
            .reason,
        "WaitingForRemediation"
    );
    let m2 = h.api::<Machine>().get("m2").await.unwrap();
    assert!(has_status(
        machine_condition(&m2, "HealthCheckSucceeded"),
        "True"
    ));
    assert!(machine_condition(&m2, "OwnerRemediated").is_none());
    h.stop().await;
}

/// Upstream "when a Machine has no Node ref for less than / longer than the
/// NodeStartupTimeoutSeconds", with the controllers' clock moved past the 30 s timeout.
#[tokio::test]
async fn machine_without_a_node_past_the_startup_timeout_is_unhealthy() {
    let mut h = Harness::start().await;
    let _workload = ready_cluster(&mut h, "prod").await;
    provisioned_machine(&h, "m1", "prod", json!({})).await;
    h.wait_for::<Machine>("m1", "the Machine's infrastructure to be ready", |m| {
        has_status(machine_condition(m, "InfrastructureReady"), "True")
    })
    .await;
    health_check(
        &h,
        "workers",
        "prod",
        json!({ "checks": { "nodeStartupTimeoutSeconds": 30 } }),
    )
    .await;

    // Within the timeout: a target, not healthy, not judged.
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "the target without a Node", |c| {
            counts(c) == (Some(1), Some(0), Some(0))
        })
        .await;
    assert_eq!(check.status.as_ref().unwrap().targets, ["m1"]);
    let machine = h.api::<Machine>().get("m1").await.unwrap();
    assert!(machine_condition(&machine, "HealthCheckSucceeded").is_none());

    h.clock.advance(Duration::from_secs(31));
    // Something must bring a reconcile before the real requeue, thirty seconds away.
    annotate::<MachineHealthCheck>(&h, "workers", "test.corral.dev/poke", Some("1")).await;
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to fail its health check", |m| {
            has_status(machine_condition(m, "HealthCheckSucceeded"), "False")
        })
        .await;
    let failed = machine_condition(&machine, "HealthCheckSucceeded").unwrap();
    assert_eq!(failed.reason, "NodeStartupTimeout");
    assert_eq!(
        failed.message,
        "Health check failed:\n  * Node failed to report startup in 30s"
    );
    assert!(has_status(
        machine_condition(&machine, "OwnerRemediated"),
        "False"
    ));
    h.stop().await;
}

/// The `cluster.x-k8s.io/remediate-machine` annotation makes a healthy Machine unhealthy at
/// once (upstream `TestHealthCheckTargets`, "Machine has remediate machine annotation").
#[tokio::test]
async fn remediate_machine_annotation_forces_remediation() {
    let mut h = Harness::start().await;
    let workload = ready_cluster(&mut h, "prod").await;
    running_machine(&h, &workload, "m1", "prod").await;
    health_check(&h, "workers", "prod", json!({})).await;
    h.wait_for::<Machine>("m1", "the Machine to pass its health check", |m| {
        has_status(machine_condition(m, "HealthCheckSucceeded"), "True")
    })
    .await;

    annotate::<Machine>(&h, "m1", "cluster.x-k8s.io/remediate-machine", Some("")).await;
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to be handed over", |m| {
            has_status(machine_condition(m, "OwnerRemediated"), "False")
        })
        .await;
    let failed = machine_condition(&machine, "HealthCheckSucceeded").unwrap();
    assert_eq!(
        (
            failed.status.as_str(),
            failed.reason.as_str(),
            failed.message.as_str()
        ),
        (
            "False",
            "HasRemediateAnnotation",
            "Health check failed: marked for remediation via cluster.x-k8s.io/remediate-machine annotation"
        )
    );
    h.stop().await;
}

/// Upstream `shouldSkipRemediation`: a Machine with `cluster.x-k8s.io/skip-remediation` is
/// not a target, however broken its Node.
#[tokio::test]
async fn skip_remediation_annotation_leaves_the_machine_out() {
    let mut h = Harness::start().await;
    let workload = ready_cluster(&mut h, "prod").await;
    running_machine(&h, &workload, "m1", "prod").await;
    running_machine(&h, &workload, "m2", "prod").await;
    annotate::<Machine>(&h, "m2", "cluster.x-k8s.io/skip-remediation", Some("")).await;
    set_node_ready(&workload, "m1-node", "False", an_hour_ago()).await;
    set_node_ready(&workload, "m2-node", "False", an_hour_ago()).await;
    health_check(&h, "workers", "prod", json!({})).await;

    h.wait_for::<Machine>("m1", "the broken target to be handed over", |m| {
        has_status(machine_condition(m, "OwnerRemediated"), "False")
    })
    .await;
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "one target", |c| {
            counts(c) == (Some(1), Some(0), Some(0))
        })
        .await;
    assert_eq!(check.status.as_ref().unwrap().targets, ["m1"]);
    let m2 = h.api::<Machine>().get("m2").await.unwrap();
    assert!(machine_condition(&m2, "HealthCheckSucceeded").is_none());
    assert!(machine_condition(&m2, "OwnerRemediated").is_none());

    // Without the annotation it is a target again, and remediated.
    annotate::<Machine>(&h, "m2", "cluster.x-k8s.io/skip-remediation", None).await;
    h.wait_for::<Machine>("m2", "the Machine to be handed over", |m| {
        has_status(machine_condition(m, "OwnerRemediated"), "False")
    })
    .await;
    h.wait_for::<MachineHealthCheck>("workers", "two targets", |c| {
        c.status
            .as_ref()
            .is_some_and(|status| status.targets == ["m1", "m2"])
    })
    .await;
    h.stop().await;
}

/// Upstream "When remediationTemplate is set and node transitions to unhealthy, new
/// Remediation Request should be created" and "... transitions back to healthy, new
/// Remediation Request should be deleted".
#[tokio::test]
async fn external_remediation_template_creates_and_deletes_the_request() {
    let mut h = Harness::start().await;
    h.install(REMEDIATION).await;
    h.install(REMEDIATION_TEMPLATE).await;
    let workload = ready_cluster(&mut h, "prod").await;
    running_machine(&h, &workload, "m1", "prod").await;
    h.create_provider(
        REMEDIATION_TEMPLATE,
        "remediation",
        json!({ "spec": { "template": {
            "metadata": { "labels": { "from": "template" } },
            "spec": { "size": "3xlarge" },
        }}}),
    )
    .await;
    health_check(
        &h,
        "workers",
        "prod",
        json!({ "remediation": { "templateRef": {
            "apiVersion": format!("{REMEDIATION_GROUP}/v1beta2"),
            "kind": "TestRemediationTemplate",
            "name": "remediation",
        }}}),
    )
    .await;
    h.wait_for::<Machine>("m1", "the Machine to pass its health check", |m| {
        has_status(machine_condition(m, "HealthCheckSucceeded"), "True")
    })
    .await;
    assert!(h.get_provider(REMEDIATION, "m1").await.is_none());

    set_node_ready(&workload, "m1-node", "Unknown", an_hour_ago()).await;
    let request = h
        .wait_for_provider(REMEDIATION, "m1", "the remediation request", |_| true)
        .await;
    assert_eq!(owners(&request), ["Machine/m1"]);
    assert_eq!(request.data["spec"], json!({ "size": "3xlarge" }));
    assert_eq!(request.labels()["from"], "template");
    assert_eq!(request.labels()["cluster.x-k8s.io/cluster-name"], "prod");
    assert_eq!(
        request.annotations()["cluster.x-k8s.io/cloned-from-name"],
        "remediation"
    );
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to be handed over", |m| {
            has_status(machine_condition(m, "ExternallyRemediated"), "False")
        })
        .await;
    assert_eq!(
        machine_condition(&machine, "ExternallyRemediated")
            .unwrap()
            .reason,
        "WaitingForRemediation"
    );
    assert!(has_status(
        machine_condition(&machine, "HealthCheckSucceeded"),
        "False"
    ));
    assert!(
        machine_condition(&machine, "OwnerRemediated").is_none(),
        "the owner is not asked"
    );

    set_node_ready(&workload, "m1-node", "True", Timestamp::now()).await;
    corral_testenv::eventually(TIMEOUT, "the remediation request to be deleted", || async {
        h.get_provider(REMEDIATION, "m1")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    h.wait_for::<Machine>("m1", "the Machine to pass its health check again", |m| {
        has_status(machine_condition(m, "HealthCheckSucceeded"), "True")
    })
    .await;
    h.stop().await;
}

/// A Node that disappears while its Machine still references it is unhealthy at once
/// (upstream "when a Machine's Node has gone away").
#[tokio::test]
async fn deleted_node_is_unhealthy() {
    let mut h = Harness::start().await;
    let workload = ready_cluster(&mut h, "prod").await;
    running_machine(&h, &workload, "m1", "prod").await;
    health_check(&h, "workers", "prod", json!({})).await;
    h.wait_for::<Machine>("m1", "the Machine to pass its health check", |m| {
        has_status(machine_condition(m, "HealthCheckSucceeded"), "True")
    })
    .await;

    workload
        .nodes()
        .delete("m1-node", &Default::default())
        .await
        .expect("the Node is deleted");
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to fail its health check", |m| {
            has_status(machine_condition(m, "HealthCheckSucceeded"), "False")
        })
        .await;
    let failed = machine_condition(&machine, "HealthCheckSucceeded").unwrap();
    assert_eq!(failed.reason, "NodeDeleted");
    assert_eq!(
        failed.message,
        "Health check failed:\n  * Node m1-node has been deleted"
    );
    h.stop().await;
}

/// Upstream `paused.EnsurePausedCondition`: a paused MachineHealthCheck says so and judges
/// nothing until unpaused.
#[tokio::test]
async fn paused_health_check_judges_nothing_until_unpaused() {
    let mut h = Harness::start().await;
    let workload = ready_cluster(&mut h, "prod").await;
    running_machine(&h, &workload, "m1", "prod").await;
    set_node_ready(&workload, "m1-node", "False", an_hour_ago()).await;
    let mut object = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": {
            "name": "workers",
            "annotations": { "cluster.x-k8s.io/paused": "" },
        },
        "spec": {
            "clusterName": "prod",
            "selector": { "matchLabels": { "pool": "workers" } },
        },
    });
    merge(
        &mut object,
        json!({ "spec": { "checks": { "unhealthyNodeConditions": [
            { "type": "Ready", "status": "False", "timeoutSeconds": 300 },
        ]}}}),
    );
    h.create::<MachineHealthCheck>(object).await;
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "the Paused condition", |c| {
            has_status(check_condition(c, "Paused"), "True")
        })
        .await;
    assert_eq!(
        check_condition(&check, "Paused").unwrap().message,
        "MachineHealthCheck has the cluster.x-k8s.io/paused annotation"
    );
    assert_eq!(counts(&check), (None, None, None));
    let machine = h.api::<Machine>().get("m1").await.unwrap();
    assert!(machine_condition(&machine, "HealthCheckSucceeded").is_none());

    annotate::<MachineHealthCheck>(&h, "workers", "cluster.x-k8s.io/paused", None).await;
    h.wait_for::<Machine>("m1", "the Machine to be handed over", |m| {
        has_status(machine_condition(m, "OwnerRemediated"), "False")
    })
    .await;
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "the Paused condition to clear", |c| {
            has_status(check_condition(c, "Paused"), "False")
        })
        .await;
    assert_eq!(
        check_condition(&check, "Paused").unwrap().reason,
        "NotPaused"
    );
    h.stop().await;
}

/// Upstream "it marks unhealthy machines for remediation when there is one unhealthy Machine
/// and skips deleting machines": a Machine being deleted is judged, never healthy, and not
/// handed over.
#[tokio::test]
async fn machine_being_deleted_is_judged_but_not_handed_over() {
    let mut h = Harness::start().await;
    let workload = ready_cluster(&mut h, "prod").await;
    running_machine(&h, &workload, "m1", "prod").await;
    // The hook holds the deletion before the drain, so the Node stays.
    let hook = "pre-drain.delete.hook.machine.cluster.x-k8s.io/test";
    annotate::<Machine>(&h, "m1", hook, Some("")).await;
    set_node_ready(&workload, "m1-node", "Unknown", an_hour_ago()).await;
    h.api::<Machine>()
        .delete("m1", &Default::default())
        .await
        .expect("the Machine is deleted");
    h.wait_for::<Machine>("m1", "the deletion to wait for the hook", |m| {
        machine_condition(m, "Deleting").is_some_and(|d| d.reason == "WaitingForPreDrainHook")
    })
    .await;

    health_check(&h, "workers", "prod", json!({})).await;
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to fail its health check", |m| {
            has_status(machine_condition(m, "HealthCheckSucceeded"), "False")
        })
        .await;
    assert_eq!(
        machine_condition(&machine, "HealthCheckSucceeded")
            .unwrap()
            .reason,
        "UnhealthyNode"
    );
    let check = h
        .wait_for::<MachineHealthCheck>("workers", "the target to be counted", |c| {
            counts(c) == (Some(1), Some(0), Some(0))
        })
        .await;
    assert!(has_status(
        check_condition(&check, "RemediationAllowed"),
        "True"
    ));
    let machine = h.api::<Machine>().get("m1").await.unwrap();
    assert!(machine_condition(&machine, "OwnerRemediated").is_none());

    // Let it go.
    annotate::<Machine>(&h, "m1", hook, None).await;
    h.wait_gone::<Machine>("m1", "the Machine to be deleted")
        .await;
    h.wait_for::<MachineHealthCheck>("workers", "no targets", |c| {
        counts(c) == (Some(0), Some(0), Some(0))
    })
    .await;
    h.stop().await;
}
