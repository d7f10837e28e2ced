//! The Machine controller against the API server, with the test as bootstrap and
//! infrastructure provider and a second API server as the workload cluster (upstream
//! `core/reconcilers/machine/machine_controller_test.go`, `machine_controller_status_test.go`).

use std::time::Duration;

use corral_api::{Cluster, Machine, MachinePhase};
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::support::*;

fn conditions(machine: &Machine) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
    machine
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

fn phase(machine: &Machine) -> Option<MachinePhase> {
    machine.status.as_ref().and_then(|s| s.phase)
}

/// A provisioned Cluster whose control plane is initialized (and externally managed, so that
/// its Machines' Nodes may be deleted), with a workload cluster.
async fn provisioned_cluster(h: &mut Harness, name: &str) -> Workload {
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
    h.wait_for::<Cluster>(name, "the Cluster's control plane to be initialized", |c| {
        c.status
            .as_ref()
            .and_then(|s| condition(&s.conditions, "ControlPlaneInitialized"))
            .is_some_and(|c| c.status == "True")
    })
    .await;
    workload
}

fn machine_json(name: &str, cluster: &str, annotations: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "annotations": annotations,
            "labels": { "node-role.kubernetes.io/worker": "" },
        },
        "spec": {
            "clusterName": cluster,
            "version": "v1.36.0",
            "bootstrap": { "configRef": BOOTSTRAP_CONFIG.reference(name) },
            "infrastructureRef": INFRA_MACHINE.reference(name),
        },
    })
}

/// Upstream `TestReconcileMachinePhases`: Pending with a new Machine, Provisioning once the
/// bootstrap data exists, Provisioned once there is a provider ID and no Node, Running once
/// the Node exists; the conditions follow.
#[tokio::test]
async fn machine_goes_pending_provisioning_provisioned_running() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    h.create_provider(BOOTSTRAP_CONFIG, "m1", json!({})).await;
    h.create_provider(INFRA_MACHINE, "m1", json!({})).await;
    h.create::<Machine>(machine_json("m1", "prod", json!({})))
        .await;

    let machine = h
        .wait_for::<Machine>("m1", "the Machine to be Pending", |m| {
            phase(m) == Some(MachinePhase::Pending)
        })
        .await;
    assert!(
        machine
            .finalizers()
            .contains(&"machine.cluster.x-k8s.io".to_owned())
    );
    assert_eq!(machine.labels()["cluster.x-k8s.io/cluster-name"], "prod");
    assert!(
        owners(&machine).contains(&"Cluster/prod".to_owned()),
        "standalone Machines are adopted"
    );
    let bootstrap_ready = condition(conditions(&machine), "BootstrapConfigReady").unwrap();
    assert_eq!(
        (
            bootstrap_ready.status.as_str(),
            bootstrap_ready.reason.as_str()
        ),
        ("False", "NotReady")
    );
    for kind in [BOOTSTRAP_CONFIG, INFRA_MACHINE] {
        let object = h
            .wait_for_provider(
                kind,
                "m1",
                "the Machine to control its provider objects",
                |o| !o.owner_references().is_empty(),
            )
            .await;
        assert_eq!(owners(&object), ["Machine/m1*"]);
        assert_eq!(object.labels()["cluster.x-k8s.io/cluster-name"], "prod");
    }

    // The bootstrap provider creates the data Secret.
    h.set_provider_status(
        BOOTSTRAP_CONFIG,
        "m1",
        json!({ "initialization": { "dataSecretCreated": true }, "dataSecretName": "m1-bootstrap" }),
    )
    .await;
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to be Provisioning", |m| {
            phase(m) == Some(MachinePhase::Provisioning)
        })
        .await;
    assert_eq!(
        machine.spec.bootstrap.data_secret_name.as_deref(),
        Some("m1-bootstrap")
    );
    let status = machine.status.as_ref().unwrap();
    assert_eq!(
        status.initialization.bootstrap_data_secret_created,
        Some(true)
    );
    assert!(status.last_updated.is_some());

    // The infrastructure provider provisions the machine.
    h.patch_provider(
        INFRA_MACHINE,
        "m1",
        json!({ "spec": { "providerID": "test://m1" } }),
    )
    .await;
    h.set_provider_status(
        INFRA_MACHINE,
        "m1",
        json!({
            "initialization": { "provisioned": true },
            "addresses": [ { "type": "InternalIP", "address": "10.1.0.7" } ],
            "failureDomain": "zone-a",
        }),
    )
    .await;
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to be Provisioned", |m| {
            phase(m) == Some(MachinePhase::Provisioned)
        })
        .await;
    assert_eq!(machine.spec.provider_id.as_deref(), Some("test://m1"));
    let status = machine.status.as_ref().unwrap();
    assert_eq!(status.initialization.infrastructure_provisioned, Some(true));
    assert_eq!(status.addresses.len(), 1);
    assert_eq!(status.failure_domain.as_deref(), Some("zone-a"));
    let node_healthy = condition(conditions(&machine), "NodeHealthy").unwrap();
    assert_eq!(node_healthy.status, "Unknown");
    assert_eq!(
        node_healthy.message,
        "Waiting for a Node with spec.providerID test://m1 to exist"
    );

    // The Node joins the workload cluster.
    workload.create_node("node-1", "test://m1", true).await;
    let machine = h
        .wait_for::<Machine>("m1", "the Machine to be Running and Available", |m| {
            phase(m) == Some(MachinePhase::Running)
                && condition(conditions(m), "Available").is_some_and(|c| c.status == "True")
        })
        .await;
    let status = machine.status.as_ref().unwrap();
    assert_eq!(status.node_ref.as_ref().unwrap().name, "node-1");
    assert_eq!(
        status.node_info.as_ref().unwrap().kubelet_version,
        "v1.36.0"
    );
    for type_ in [
        "BootstrapConfigReady",
        "InfrastructureReady",
        "NodeReady",
        "NodeHealthy",
        "Ready",
    ] {
        let c = condition(conditions(&machine), type_).unwrap();
        assert_eq!(c.status, "True", "{type_}: {c:?}");
    }
    let node = eventually_node(&workload, "node-1", |n| {
        n.annotations().contains_key("cluster.x-k8s.io/machine")
    })
    .await;
    assert_eq!(node.annotations()["cluster.x-k8s.io/machine"], "m1");
    assert_eq!(node.annotations()["cluster.x-k8s.io/cluster-name"], "prod");
    assert_eq!(
        node.annotations()["cluster.x-k8s.io/cluster-namespace"],
        "default"
    );
    assert_eq!(node.labels()["node-role.kubernetes.io/worker"], "");
    let reasons = event_reasons(&h.client, &h.namespace, "m1").await;
    assert!(
        reasons.contains(&"SuccessfulSetNodeRef".to_owned()),
        "{reasons:?}"
    );
    // As upstream, no Event per phase change of a Machine.
    assert!(!reasons.contains(&"Running".to_owned()), "{reasons:?}");

    // Nothing changes any more: no write, so no new resourceVersion.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = h.api::<Machine>().get("m1").await.unwrap();
    assert_eq!(again.resource_version(), machine.resource_version());
    h.stop().await;
}

async fn eventually_node(
    workload: &Workload,
    name: &str,
    check: impl Fn(&k8s_openapi::api::core::v1::Node) -> bool,
) -> k8s_openapi::api::core::v1::Node {
    corral_testenv::eventually(TIMEOUT, "the Node to be synced", || async {
        let node = workload.get_node(name).await?;
        check(&node).then_some(node)
    })
    .await
}

/// Upstream `TestReconcileDeleteExternal` and the pre-drain hook of `reconcileDelete`: the
/// hook holds the deletion before the drain; once removed, the Node is cordoned, the
/// infrastructure and bootstrap objects are deleted, then the Node, then the finalizer.
#[tokio::test]
async fn pre_drain_hook_blocks_deletion_until_removed() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let hold = json!({ "metadata": { "finalizers": ["test.cluster.x-k8s.io/hold"] } });
    h.create_provider(BOOTSTRAP_CONFIG, "m2", json!({})).await;
    h.create_provider(INFRA_MACHINE, "m2", hold).await;
    let hook = "pre-drain.delete.hook.machine.cluster.x-k8s.io/test";
    h.create::<Machine>(machine_json("m2", "prod", json!({ hook: "" })))
        .await;
    h.set_provider_status(
        BOOTSTRAP_CONFIG,
        "m2",
        json!({ "initialization": { "dataSecretCreated": true }, "dataSecretName": "m2-bootstrap" }),
    )
    .await;
    h.patch_provider(
        INFRA_MACHINE,
        "m2",
        json!({ "spec": { "providerID": "test://m2" } }),
    )
    .await;
    h.set_provider_status(
        INFRA_MACHINE,
        "m2",
        json!({ "initialization": { "provisioned": true } }),
    )
    .await;
    workload.create_node("node-2", "test://m2", true).await;
    h.wait_for::<Machine>("m2", "the Machine to be Running", |m| {
        phase(m) == Some(MachinePhase::Running)
    })
    .await;

    h.api::<Machine>()
        .delete("m2", &DeleteParams::default())
        .await
        .unwrap();
    let machine = h
        .wait_for::<Machine>("m2", "the deletion to wait for the pre-drain hook", |m| {
            condition(conditions(m), "Deleting")
                .is_some_and(|d| d.reason == "WaitingForPreDrainHook")
        })
        .await;
    assert_eq!(phase(&machine), Some(MachinePhase::Deleting));
    let deleting = condition(conditions(&machine), "Deleting").unwrap();
    assert_eq!(
        deleting.message,
        format!("Waiting for pre-drain hooks to succeed (hooks: {hook})")
    );
    assert!(
        machine
            .status
            .as_ref()
            .unwrap()
            .deletion
            .wait_for_pre_drain_hook_start_time
            .is_some()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let infra = h.get_provider(INFRA_MACHINE, "m2").await.unwrap();
    assert!(
        infra.metadata.deletion_timestamp.is_none(),
        "the hook holds the infrastructure"
    );
    let node = workload.get_node("node-2").await.unwrap();
    assert_ne!(
        node.spec.as_ref().and_then(|s| s.unschedulable),
        Some(true),
        "the hook holds the drain"
    );

    // The hook's owner removes it: drain, then the infrastructure goes.
    h.api::<Machine>()
        .patch(
            "m2",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { hook: null } } })),
        )
        .await
        .unwrap();
    h.wait_for_provider(
        INFRA_MACHINE,
        "m2",
        "the infrastructure to be deleted",
        |o| o.metadata.deletion_timestamp.is_some(),
    )
    .await;
    let node = workload.get_node("node-2").await.unwrap();
    assert_eq!(
        node.spec.as_ref().and_then(|s| s.unschedulable),
        Some(true),
        "the Node is cordoned"
    );
    let machine = h
        .wait_for::<Machine>("m2", "the deletion to wait for the infrastructure", |m| {
            condition(conditions(m), "Deleting")
                .is_some_and(|d| d.reason == "WaitingForInfrastructureDeletion")
        })
        .await;
    assert!(
        machine
            .status
            .as_ref()
            .unwrap()
            .deletion
            .node_drain_start_time
            .is_some()
    );
    assert!(
        h.get_provider(BOOTSTRAP_CONFIG, "m2").await.is_some(),
        "bootstrap goes after infrastructure"
    );
    assert!(
        workload.get_node("node-2").await.is_some(),
        "the Node goes after the infrastructure"
    );

    // The infrastructure provider finishes: bootstrap, Node and Machine go.
    h.patch_provider(
        INFRA_MACHINE,
        "m2",
        json!({ "metadata": { "finalizers": null } }),
    )
    .await;
    h.wait_gone::<Machine>("m2", "the Machine to go").await;
    assert!(h.get_provider(BOOTSTRAP_CONFIG, "m2").await.is_none());
    assert!(
        workload.get_node("node-2").await.is_none(),
        "the Node is deleted"
    );
    let reasons = event_reasons(&h.client, &h.namespace, "m2").await;
    assert!(
        reasons.contains(&"SuccessfulDrainNode".to_owned()),
        "{reasons:?}"
    );
    // As upstream, a Node deletion is logged; only its failure is an Event.
    assert!(!reasons.contains(&"DeletingNode".to_owned()), "{reasons:?}");
    h.stop().await;
}

/// A Machine referencing a kind that is not installed says which in InfrastructureReady.
#[tokio::test]
async fn machine_reference_to_a_missing_kind_names_it() {
    let h = Harness::start_with_kinds(&[INFRA_CLUSTER, BOOTSTRAP_CONFIG]).await;
    h.create_provider(INFRA_CLUSTER, "c", json!({})).await;
    h.create::<Cluster>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": { "name": "c" },
        "spec": { "infrastructureRef": INFRA_CLUSTER.reference("c") },
    }))
    .await;
    h.create::<Machine>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "m" },
        "spec": {
            "clusterName": "c",
            "bootstrap": { "dataSecretName": "m-bootstrap" },
            "infrastructureRef": INFRA_MACHINE.reference("m"),
        },
    }))
    .await;
    let machine = h
        .wait_for::<Machine>("m", "InfrastructureReady to name the missing kind", |m| {
            condition(conditions(m), "InfrastructureReady")
                .is_some_and(|c| c.message.contains("is not installed"))
        })
        .await;
    let ready = condition(conditions(&machine), "InfrastructureReady").unwrap();
    assert!(
        ready
            .message
            .starts_with("TestInfraMachine.test.infrastructure.cluster.x-k8s.io is not installed"),
        "{}",
        ready.message
    );
    let bootstrap = condition(conditions(&machine), "BootstrapConfigReady").unwrap();
    assert_eq!(bootstrap.reason, "DataSecretProvided");
    // Deleting it does not wait for a kind that cannot have objects.
    h.api::<Machine>()
        .delete("m", &DeleteParams::default())
        .await
        .unwrap();
    h.wait_gone::<Machine>("m", "the Machine to go").await;
    h.stop().await;
}

/// Upstream `reconcileDelete`'s pre-terminate hook: the Node is drained, then the hook holds
/// the deletion of the infrastructure until it is removed.
#[tokio::test]
async fn pre_terminate_hook_holds_infrastructure_deletion_after_the_drain() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    h.create_provider(INFRA_MACHINE, "m3", json!({})).await;
    let hook = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/test";
    let mut machine = machine_json("m3", "prod", json!({ hook: "" }));
    machine["spec"]["bootstrap"] = json!({ "dataSecretName": "m3-bootstrap" });
    h.create::<Machine>(machine).await;
    h.patch_provider(
        INFRA_MACHINE,
        "m3",
        json!({ "spec": { "providerID": "test://m3" } }),
    )
    .await;
    h.set_provider_status(
        INFRA_MACHINE,
        "m3",
        json!({ "initialization": { "provisioned": true } }),
    )
    .await;
    workload.create_node("node-3", "test://m3", true).await;
    h.wait_for::<Machine>("m3", "the Machine to be Running", |m| {
        phase(m) == Some(MachinePhase::Running)
    })
    .await;

    h.api::<Machine>()
        .delete("m3", &DeleteParams::default())
        .await
        .unwrap();
    let machine = h
        .wait_for::<Machine>(
            "m3",
            "the deletion to wait for the pre-terminate hook",
            |m| {
                condition(conditions(m), "Deleting")
                    .is_some_and(|d| d.reason == "WaitingForPreTerminateHook")
            },
        )
        .await;
    let deletion = &machine.status.as_ref().unwrap().deletion;
    assert!(deletion.node_drain_start_time.is_some());
    assert!(deletion.wait_for_pre_terminate_hook_start_time.is_some());
    let node = workload.get_node("node-3").await.unwrap();
    assert_eq!(
        node.spec.as_ref().and_then(|s| s.unschedulable),
        Some(true),
        "drained first"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let infra = h.get_provider(INFRA_MACHINE, "m3").await.unwrap();
    assert!(
        infra.metadata.deletion_timestamp.is_none(),
        "the hook holds the infrastructure"
    );

    h.api::<Machine>()
        .patch(
            "m3",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { hook: null } } })),
        )
        .await
        .unwrap();
    h.wait_gone::<Machine>("m3", "the Machine to go").await;
    assert!(h.get_provider(INFRA_MACHINE, "m3").await.is_none());
    assert!(
        workload.get_node("node-3").await.is_none(),
        "the Node is deleted"
    );
    h.stop().await;
}

/// Upstream `util/paused` for Machines: the paused annotation stops everything but the
/// finalizer and the Paused condition.
#[tokio::test]
async fn paused_machine_is_not_reconciled_until_unpaused() {
    let mut h = Harness::start().await;
    provisioned_cluster(&mut h, "prod").await;
    h.create_provider(INFRA_MACHINE, "m4", json!({})).await;
    let mut machine = machine_json("m4", "prod", json!({ "cluster.x-k8s.io/paused": "" }));
    machine["spec"]["bootstrap"] = json!({ "dataSecretName": "m4-bootstrap" });
    h.create::<Machine>(machine).await;
    let machine = h
        .wait_for::<Machine>("m4", "the Paused condition", |m| {
            condition(conditions(m), "Paused").is_some()
        })
        .await;
    let paused = condition(conditions(&machine), "Paused").unwrap();
    assert_eq!(
        (paused.status.as_str(), paused.reason.as_str()),
        ("True", "Paused")
    );
    assert_eq!(
        paused.message,
        "Machine has the cluster.x-k8s.io/paused annotation"
    );
    assert_eq!(phase(&machine), None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let infra = h.get_provider(INFRA_MACHINE, "m4").await.unwrap();
    assert!(
        infra.owner_references().is_empty(),
        "a paused Machine leaves its infrastructure alone"
    );

    h.api::<Machine>()
        .patch(
            "m4",
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "metadata": { "annotations": { "cluster.x-k8s.io/paused": null } } }),
            ),
        )
        .await
        .unwrap();
    h.wait_for::<Machine>("m4", "the Machine to be reconciled", |m| {
        phase(m) == Some(MachinePhase::Provisioning)
    })
    .await;
    h.wait_for_provider(
        INFRA_MACHINE,
        "m4",
        "the Machine to own its infrastructure",
        |o| !o.owner_references().is_empty(),
    )
    .await;
    h.stop().await;
}

/// Upstream `ensureOwnerReferences` with `controllerutil.SetControllerReference`: a provider
/// object another object controls is not taken over; the Machine says why, and its owners and
/// labels stay as they were. Once the other controller lets go, the Machine takes it.
#[tokio::test]
async fn infrastructure_controlled_by_another_object_is_not_taken_over() {
    let mut h = Harness::start().await;
    let _workload = provisioned_cluster(&mut h, "prod").await;
    // The owner must exist: the garbage collector deletes objects whose owners are gone.
    let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = h.api();
    let owner = configmaps
        .create(
            &Default::default(),
            &serde_json::from_value(json!({ "metadata": { "name": "other" } })).unwrap(),
        )
        .await
        .unwrap();
    let other = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "other",
        "uid": owner.uid().unwrap(),
        "controller": true,
    });
    h.create_provider(BOOTSTRAP_CONFIG, "m1", json!({})).await;
    h.create_provider(
        INFRA_MACHINE,
        "m1",
        json!({ "metadata": { "ownerReferences": [other] } }),
    )
    .await;
    h.create::<Machine>(machine_json("m1", "prod", json!({})))
        .await;

    let events: kube::Api<k8s_openapi::api::events::v1::Event> = h.api();
    let note = corral_testenv::eventually(
        TIMEOUT,
        "a ReconcileError Event naming the controller",
        || {
            let events = events.clone();
            async move {
                events
                    .list(&Default::default())
                    .await
                    .expect("events are listed")
                    .items
                    .into_iter()
                    .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("m1"))
                    .filter(|e| e.reason.as_deref() == Some("ReconcileError"))
                    .find_map(|e| e.note)
            }
        },
    )
    .await;
    assert!(note.contains("controlled by ConfigMap other"), "{note}");
    let infra = h.get_provider(INFRA_MACHINE, "m1").await.unwrap();
    assert_eq!(owners(&infra), vec!["ConfigMap/other*".to_owned()]);
    assert!(
        !infra.labels().contains_key("cluster.x-k8s.io/cluster-name"),
        "nothing of the failed write is applied"
    );

    // The other controller lets go: the Machine takes the object and labels it.
    h.patch_provider(
        INFRA_MACHINE,
        "m1",
        json!({ "metadata": { "ownerReferences": null } }),
    )
    .await;
    let infra = h
        .wait_for_provider(INFRA_MACHINE, "m1", "the Machine to control it", |o| {
            owners(o) == vec!["Machine/m1*".to_owned()]
        })
        .await;
    assert_eq!(infra.labels()["cluster.x-k8s.io/cluster-name"], "prod");
}
