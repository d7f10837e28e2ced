//! The Cluster controller against the API server, with the test as infrastructure and control
//! plane provider (upstream `core/reconcilers/cluster/cluster_controller_test.go`,
//! `cluster_controller_phases_test.go`).

use std::time::Duration;

use corral_api::{Cluster, ClusterPhase, Machine};
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::support::*;

fn conditions(cluster: &Cluster) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
    cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

fn phase(cluster: &Cluster) -> Option<ClusterPhase> {
    cluster.status.as_ref().and_then(|s| s.phase)
}

fn cluster_json(
    name: &str,
    infrastructure: Option<&str>,
    control_plane: Option<&str>,
) -> serde_json::Value {
    let mut spec = json!({});
    if let Some(infra) = infrastructure {
        spec["infrastructureRef"] = serde_json::to_value(INFRA_CLUSTER.reference(infra)).unwrap();
    }
    if let Some(cp) = control_plane {
        spec["controlPlaneRef"] = serde_json::to_value(CONTROL_PLANE.reference(cp)).unwrap();
    }
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": { "name": name },
        "spec": spec,
    })
}

/// Upstream `TestClusterReconcilePhases` "returns no error if infrastructure is marked ready
/// on cluster" and `reconcileInfrastructure`: the Cluster owns its infrastructure, copies the
/// endpoint and failure domains once it is provisioned, and becomes Provisioned.
#[tokio::test]
async fn cluster_becomes_provisioned_when_its_infrastructure_is_provisioned() {
    let mut h = Harness::start().await;
    h.workload("c1").await;
    h.create_provider(INFRA_CLUSTER, "c1", json!({})).await;
    h.create::<Cluster>(cluster_json("c1", Some("c1"), None))
        .await;

    let cluster = h
        .wait_for::<Cluster>("c1", "the Cluster to be Provisioning", |c| {
            phase(c) == Some(ClusterPhase::Provisioning)
                && condition(conditions(c), "InfrastructureReady").is_some()
        })
        .await;
    assert!(
        cluster
            .finalizers()
            .contains(&"cluster.cluster.x-k8s.io".to_owned())
    );
    let ready = condition(conditions(&cluster), "InfrastructureReady").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "NotReady")
    );
    assert_eq!(
        ready.message,
        "TestInfraCluster status.initialization.provisioned is false"
    );
    let infra = h
        .wait_for_provider(
            INFRA_CLUSTER,
            "c1",
            "the Cluster to own its infrastructure",
            |o| !o.owner_references().is_empty(),
        )
        .await;
    // Not the controller: upstream leaves that to other tools unless the Cluster has a topology.
    assert_eq!(owners(&infra), ["Cluster/c1"]);
    assert_eq!(infra.labels()["cluster.x-k8s.io/cluster-name"], "c1");

    // The test, as the provider, provisions the infrastructure.
    h.patch_provider(
        INFRA_CLUSTER,
        "c1",
        json!({ "spec": { "controlPlaneEndpoint": { "host": "10.0.0.1", "port": 6443 } } }),
    )
    .await;
    h.set_provider_status(
        INFRA_CLUSTER,
        "c1",
        json!({
            "initialization": { "provisioned": true },
            "failureDomains": [ { "name": "zone-b" }, { "name": "zone-a", "controlPlane": true } ],
        }),
    )
    .await;
    let cluster = h
        .wait_for::<Cluster>("c1", "the Cluster to be Provisioned", |c| {
            phase(c) == Some(ClusterPhase::Provisioned)
        })
        .await;
    assert_eq!(
        cluster.spec.control_plane_endpoint.host.as_deref(),
        Some("10.0.0.1")
    );
    assert_eq!(cluster.spec.control_plane_endpoint.port, Some(6443));
    let status = cluster.status.as_ref().unwrap();
    assert_eq!(status.initialization.infrastructure_provisioned, Some(true));
    let domains: Vec<_> = status
        .failure_domains
        .iter()
        .map(|d| (d.name.as_str(), d.control_plane))
        .collect();
    assert_eq!(domains, [("zone-a", Some(true)), ("zone-b", Some(false))]);
    let ready = condition(conditions(&cluster), "InfrastructureReady").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Ready")
    );
    let probe = h
        .wait_for::<Cluster>("c1", "the workload cluster to be reached", |c| {
            condition(conditions(c), "RemoteConnectionProbe").is_some_and(|p| p.status == "True")
        })
        .await;
    let cluster = probe;
    for type_ in [
        "Available",
        "ControlPlaneInitialized",
        "ControlPlaneAvailable",
        "WorkersAvailable",
        "RemoteConnectionProbe",
        "Deleting",
        "Paused",
    ] {
        assert!(
            condition(conditions(&cluster), type_).is_some(),
            "{type_} is set"
        );
    }
    let reasons = event_reasons(&h.client, &h.namespace, "c1").await;
    assert!(
        reasons.contains(&"InfrastructureReady".to_owned()),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"Provisioned".to_owned()), "{reasons:?}");

    // Nothing changes any more: no write, so no new resourceVersion.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = h.api::<Cluster>().get("c1").await.unwrap();
    assert_eq!(again.resource_version(), cluster.resource_version());
    h.stop().await;
}

/// Upstream `util/paused`: a paused Cluster (spec.paused, or the paused annotation) gets a
/// Paused condition and nothing else until it is unpaused.
#[tokio::test]
async fn paused_cluster_is_not_reconciled_until_unpaused() {
    let h = Harness::start().await;
    h.create_provider(INFRA_CLUSTER, "paused", json!({})).await;
    let mut cluster = cluster_json("paused", Some("paused"), None);
    cluster["spec"]["paused"] = json!(true);
    cluster["metadata"]["annotations"] = json!({ "cluster.x-k8s.io/paused": "" });
    h.create::<Cluster>(cluster).await;

    let cluster = h
        .wait_for::<Cluster>("paused", "the Paused condition", |c| {
            condition(conditions(c), "Paused").is_some()
        })
        .await;
    let paused = condition(conditions(&cluster), "Paused").unwrap();
    assert_eq!(
        (paused.status.as_str(), paused.reason.as_str()),
        ("True", "Paused")
    );
    assert_eq!(
        paused.message,
        "Cluster spec.paused is set to true, Cluster has the cluster.x-k8s.io/paused annotation"
    );
    assert_eq!(phase(&cluster), None, "no phase while paused");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let infra = h.get_provider(INFRA_CLUSTER, "paused").await.unwrap();
    assert!(
        infra.owner_references().is_empty(),
        "a paused Cluster leaves its infrastructure alone"
    );

    h.api::<Cluster>()
        .patch(
            "paused",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "spec": { "paused": false },
                "metadata": { "annotations": { "cluster.x-k8s.io/paused": null } },
            })),
        )
        .await
        .unwrap();
    let cluster = h
        .wait_for::<Cluster>("paused", "the Cluster to be reconciled", |c| {
            phase(c) == Some(ClusterPhase::Provisioning)
        })
        .await;
    let paused = condition(conditions(&cluster), "Paused").unwrap();
    assert_eq!(
        (paused.status.as_str(), paused.reason.as_str()),
        ("False", "NotPaused")
    );
    h.wait_for_provider(
        INFRA_CLUSTER,
        "paused",
        "the Cluster to own its infrastructure",
        |o| !o.owner_references().is_empty(),
    )
    .await;
    h.stop().await;
}

/// A reference to a kind no API serves sets a condition that names the kind, retries with
/// backoff without writing, and goes on once the kind is installed.
#[tokio::test]
async fn reference_to_a_kind_that_is_not_installed_sets_a_condition_naming_it() {
    let h = Harness::start_with_kinds(&[]).await;
    h.create::<Cluster>(cluster_json("missing", Some("missing"), None))
        .await;
    let cluster = h
        .wait_for::<Cluster>(
            "missing",
            "InfrastructureReady to name the missing kind",
            |c| {
                condition(conditions(c), "InfrastructureReady")
                    .is_some_and(|ready| ready.message.contains("is not installed"))
            },
        )
        .await;
    let ready = condition(conditions(&cluster), "InfrastructureReady").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("Unknown", "InternalError")
    );
    assert!(
        ready
            .message
            .starts_with("TestInfraCluster.test.infrastructure.cluster.x-k8s.io is not installed"),
        "{}",
        ready.message
    );
    // Retries do not write: the Cluster stays as it is.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let reasons = event_reasons(&h.client, &h.namespace, "missing").await;
    assert!(
        reasons.contains(&"ReconcileError".to_owned()),
        "{reasons:?}"
    );
    let again = h.api::<Cluster>().get("missing").await.unwrap();
    assert_eq!(again.resource_version(), cluster.resource_version());

    // Installing the provider lets the Cluster go on, on the next retry.
    h.install(INFRA_CLUSTER).await;
    h.create_provider(INFRA_CLUSTER, "missing", json!({})).await;
    h.wait_for::<Cluster>("missing", "InfrastructureReady to see the object", |c| {
        condition(conditions(c), "InfrastructureReady")
            .is_some_and(|ready| ready.reason == "NotReady")
    })
    .await;
    h.stop().await;
}

/// Upstream `reconcileDelete` (`TestClusterReconciler` deletion tests): workers go first,
/// then the control plane, then the infrastructure cluster, and the finalizer last.
#[tokio::test]
async fn deleting_a_cluster_deletes_workers_then_control_plane_then_infrastructure() {
    let h = Harness::start().await;
    let hold = json!({ "metadata": { "finalizers": ["test.cluster.x-k8s.io/hold"] } });
    h.create_provider(INFRA_CLUSTER, "doomed", hold.clone())
        .await;
    h.create_provider(CONTROL_PLANE, "doomed", hold.clone())
        .await;
    h.create_provider(INFRA_MACHINE, "worker", json!({})).await;
    h.create::<Cluster>(cluster_json("doomed", Some("doomed"), Some("doomed")))
        .await;
    h.create::<Machine>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "worker", "finalizers": ["test.cluster.x-k8s.io/hold"] },
        "spec": {
            "clusterName": "doomed",
            "bootstrap": { "dataSecretName": "worker-bootstrap" },
            "infrastructureRef": INFRA_MACHINE.reference("worker"),
        },
    }))
    .await;
    // A standalone Machine is adopted by its Cluster, which then deletes it.
    h.wait_for::<Machine>("worker", "the Cluster to adopt the Machine", |m| {
        owners(m).contains(&"Cluster/doomed".to_owned())
    })
    .await;
    h.wait_for::<Cluster>("doomed", "the Cluster's finalizer", |c| {
        !c.finalizers().is_empty()
    })
    .await;

    h.api::<Cluster>()
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let cluster = h
        .wait_for::<Cluster>("doomed", "the Cluster to wait for its workers", |c| {
            condition(conditions(c), "Deleting")
                .is_some_and(|d| d.reason == "WaitingForWorkersDeletion")
        })
        .await;
    assert_eq!(phase(&cluster), Some(ClusterPhase::Deleting));
    let deleting = condition(conditions(&cluster), "Deleting").unwrap();
    assert_eq!(deleting.message, "* Worker Machine: worker");
    h.wait_for::<Machine>("worker", "the worker Machine to be deleted", |m| {
        m.metadata.deletion_timestamp.is_some()
    })
    .await;
    let control_plane = h.get_provider(CONTROL_PLANE, "doomed").await.unwrap();
    let infrastructure = h.get_provider(INFRA_CLUSTER, "doomed").await.unwrap();
    assert!(
        control_plane.metadata.deletion_timestamp.is_none(),
        "control plane waits for workers"
    );
    assert!(
        infrastructure.metadata.deletion_timestamp.is_none(),
        "infrastructure waits for workers"
    );

    // The worker goes: the control plane is deleted, the infrastructure still waits.
    h.api::<Machine>()
        .patch(
            "worker",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    { "op": "test", "path": "/metadata/finalizers/0", "value": "test.cluster.x-k8s.io/hold" },
                    { "op": "remove", "path": "/metadata/finalizers/0" },
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    h.wait_gone::<Machine>("worker", "the worker Machine to go")
        .await;
    h.wait_for_provider(
        CONTROL_PLANE,
        "doomed",
        "the control plane to be deleted",
        |o| o.metadata.deletion_timestamp.is_some(),
    )
    .await;
    h.wait_for::<Cluster>("doomed", "the Cluster to wait for its control plane", |c| {
        condition(conditions(c), "Deleting")
            .is_some_and(|d| d.reason == "WaitingForControlPlaneDeletion")
    })
    .await;
    let infrastructure = h.get_provider(INFRA_CLUSTER, "doomed").await.unwrap();
    assert!(
        infrastructure.metadata.deletion_timestamp.is_none(),
        "infrastructure waits for the control plane"
    );

    // The control plane goes: the infrastructure is deleted.
    h.patch_provider(
        CONTROL_PLANE,
        "doomed",
        json!({ "metadata": { "finalizers": null } }),
    )
    .await;
    h.wait_for_provider(
        INFRA_CLUSTER,
        "doomed",
        "the infrastructure to be deleted",
        |o| o.metadata.deletion_timestamp.is_some(),
    )
    .await;
    h.wait_for::<Cluster>(
        "doomed",
        "the Cluster to wait for its infrastructure",
        |c| {
            condition(conditions(c), "Deleting")
                .is_some_and(|d| d.reason == "WaitingForInfrastructureDeletion")
        },
    )
    .await;

    // The infrastructure goes: so does the Cluster.
    h.patch_provider(
        INFRA_CLUSTER,
        "doomed",
        json!({ "metadata": { "finalizers": null } }),
    )
    .await;
    h.wait_gone::<Cluster>("doomed", "the Cluster to go").await;
    h.stop().await;
}
