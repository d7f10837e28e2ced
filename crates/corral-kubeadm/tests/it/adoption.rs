//! A KubeadmControlPlane adopts the standalone control plane Machine of a Cluster brought up
//! without one (upstream's `kcp-adoption` e2e: step 1 a Cluster, a Machine, its KubeadmConfig
//! and DevMachine; step 2 the KubeadmControlPlane and the Cluster's `controlPlaneRef`), and
//! refuses a Machine outside the supported version skew.

use corral_api::{Cluster, Machine};
use corral_kubeadm::api::bootstrap::KubeadmConfig;
use corral_kubeadm::api::controlplane::KubeadmControlPlane;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::plane::{INFRA_GROUP, Plane, condition, eventually};

/// Step 1: a Cluster without a control plane provider and one control plane Machine at
/// `version`, until the Machine has a Node.
async fn standalone_control_plane(plane: &Plane, cluster: &str, version: &str) -> Machine {
    let machine = format!("{cluster}-cp-0");
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevCluster",
            "metadata": { "name": cluster },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": cluster },
            "spec": {
                "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevCluster", "name": cluster },
            },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachine",
            "metadata": { "name": machine, "labels": { "cluster.x-k8s.io/control-plane": "" } },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfig",
            "metadata": { "name": machine, "labels": { "cluster.x-k8s.io/control-plane": "" } },
            "spec": { "clusterConfiguration": { "apiServer": { "certSANs": ["localhost"] } } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": { "name": machine, "labels": { "cluster.x-k8s.io/control-plane": "" } },
            "spec": {
                "clusterName": cluster,
                "version": version,
                "bootstrap": { "configRef": {
                    "apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": machine } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachine", "name": machine },
            },
        }))
        .await;
    let machines: Api<Machine> = plane.api();
    eventually(
        "the standalone control plane Machine to have a Node",
        || async {
            let machine = machines.get(&machine).await.unwrap();
            machine.status.as_ref()?.node_ref.as_ref()?;
            Some(machine)
        },
    )
    .await
}

/// Step 2: a KubeadmControlPlane of one replica at `version`, and the Cluster pointing at it.
async fn hand_over(plane: &Plane, cluster: &str, version: &str) -> KubeadmControlPlane {
    let control_plane = format!("{cluster}-control-plane");
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachineTemplate",
            "metadata": { "name": control_plane },
            "spec": { "template": { "spec": { "backend": { "inMemory": {} } } } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": { "name": control_plane },
            "spec": {
                "replicas": 1,
                "version": version,
                "machineTemplate": { "spec": { "infrastructureRef": {
                    "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": control_plane,
                } } },
                "kubeadmConfigSpec": {
                    "clusterConfiguration": { "apiServer": { "certSANs": ["localhost"] } },
                },
            },
        }))
        .await;
    let clusters: Api<Cluster> = plane.api();
    clusters
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "controlPlaneRef": {
                "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane",
                "name": control_plane,
            } } })),
        )
        .await
        .expect("the Cluster takes a controlPlaneRef");
    plane.kcp(&control_plane).await
}

fn controller(machine: &Machine) -> Option<(String, String)> {
    machine
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
        .map(|owner| (owner.kind.clone(), owner.name.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_adopts_a_standalone_machine_and_refuses_one_two_minors_behind() {
    let plane = Plane::start().await;
    let standalone = standalone_control_plane(&plane, "adopt", "v1.35.0").await;
    let skewed = standalone_control_plane(&plane, "skew", "v1.33.0").await;
    // A Secret the first KubeadmConfig controls, as upstream's CABPK leaves the cluster
    // certificates it generates: it moves to the control plane; the data Secret stays.
    let config: KubeadmConfig = plane.api().get("adopt-cp-0").await.unwrap();
    plane
        .create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {
                "name": "adopt-pki",
                "labels": { "cluster.x-k8s.io/cluster-name": "adopt" },
                "ownerReferences": [{
                    "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfig",
                    "name": "adopt-cp-0", "uid": config.uid().unwrap(), "controller": true,
                }],
            },
            "type": "cluster.x-k8s.io/secret",
            "stringData": { "tls.crt": "not checked" },
        }))
        .await;

    let kcp = hand_over(&plane, "adopt", "v1.35.0").await;
    let machines: Api<Machine> = plane.api();
    let adopted = eventually("the Machine to be adopted", || async {
        let machine = machines.get(&standalone.name_any()).await.unwrap();
        (controller(&machine)? == ("KubeadmControlPlane".into(), kcp.name_any())).then_some(machine)
    })
    .await;
    // The same Machine, not a replacement: adoption keeps it and it is up to date.
    assert_eq!(adopted.uid(), standalone.uid());
    assert_eq!(
        adopted.labels()["cluster.x-k8s.io/control-plane-name"],
        kcp.name_any()
    );
    let settled = eventually("the control plane to count the adopted Machine", || async {
        let kcp = plane.kcp(&kcp.name_any()).await;
        let status = kcp.status.clone()?;
        (status.replicas == Some(1)
            && status.up_to_date_replicas == Some(1)
            && status.ready_replicas == Some(1)
            && status.initialization.control_plane_initialized == Some(true)
            && condition(&status.conditions, "MachinesUpToDate") == Some("True".into()))
        .then_some(kcp)
    })
    .await;
    assert_eq!(
        settled.status.unwrap().selector.as_deref(),
        Some(
            "cluster.x-k8s.io/cluster-name=adopt,cluster.x-k8s.io/control-plane,cluster.x-k8s.io/control-plane-name=adopt-control-plane"
        )
    );
    let adopt_machines: Vec<String> = plane
        .control_plane_machines()
        .await
        .into_iter()
        .filter(|m| m.spec.cluster_name == "adopt")
        .map(|m| m.name_any())
        .collect();
    assert_eq!(adopt_machines, vec![standalone.name_any()]);
    let secrets: Api<Secret> = plane.api();
    let controller_of = |secret: Secret| {
        secret
            .owner_references()
            .iter()
            .find(|owner| owner.controller == Some(true))
            .map(|owner| (owner.kind.clone(), owner.name.clone()))
    };
    assert_eq!(
        controller_of(secrets.get("adopt-pki").await.unwrap()),
        Some(("KubeadmControlPlane".into(), kcp.name_any()))
    );
    assert_eq!(
        controller_of(secrets.get("adopt-cp-0").await.unwrap()),
        Some(("KubeadmConfig".into(), "adopt-cp-0".into()))
    );

    // The adopted Machine's KubeadmConfig carries the control plane's labels, and a change of
    // kubeadmConfigSpec rolls the adopted Machine out like any other.
    let config: KubeadmConfig = plane.api().get("adopt-cp-0").await.unwrap();
    assert_eq!(
        config.labels()["cluster.x-k8s.io/control-plane-name"],
        kcp.name_any()
    );
    plane
        .api::<KubeadmControlPlane>()
        .patch(
            &kcp.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "kubeadmConfigSpec": {
                "preKubeadmCommands": ["echo rolled"],
            } } })),
        )
        .await
        .unwrap();
    let replacement = eventually("the adopted Machine to be replaced", || async {
        let machines: Vec<Machine> = plane
            .control_plane_machines()
            .await
            .into_iter()
            .filter(|m| m.spec.cluster_name == "adopt")
            .collect();
        let kcp = plane.kcp(&kcp.name_any()).await;
        let status = kcp.status.clone()?;
        (machines.len() == 1
            && machines[0].uid() != standalone.uid()
            && status.observed_generation == kcp.metadata.generation
            && status.up_to_date_replicas == Some(1)
            && status.ready_replicas == Some(1))
        .then(|| machines[0].clone())
    })
    .await;
    assert_eq!(
        controller(&replacement),
        Some(("KubeadmControlPlane".into(), kcp.name_any()))
    );

    // Two minor versions behind the control plane: not adopted, and the control plane creates
    // nothing while the Machine is there.
    let skew_kcp = hand_over(&plane, "skew", "v1.35.0").await;
    let events: Api<Event> = plane.api();
    let note = eventually("the AdoptionFailed Event", || async {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref())
                    == Some(skew_kcp.name_any().as_str())
                    && e.reason.as_deref() == Some("AdoptionFailed")
            })
            .and_then(|e| e.note)
    })
    .await;
    assert!(
        note.contains("skew-cp-0") && note.contains("v1.33.0") && note.contains("v1.35.0"),
        "{note}"
    );
    let skew_machines: Vec<Machine> = plane
        .control_plane_machines()
        .await
        .into_iter()
        .filter(|m| m.spec.cluster_name == "skew")
        .collect();
    assert_eq!(skew_machines.len(), 1);
    assert_eq!(skew_machines[0].uid(), skewed.uid());
    assert_eq!(controller(&skew_machines[0]), None);

    plane.stop().await;
}
