//! kube-proxy and CoreDNS in the workload cluster follow a KubeadmControlPlane's upgrade
//! (upstream `UpdateKubeProxyImageInfo`, `UpdateCoreDNS`), the skip annotations leave them
//! alone, and a CoreDNS downgrade is refused with an Event. The simulated workload clusters of
//! the in-memory provider create the kube-proxy DaemonSet and CoreDNS Deployment once, at
//! `kubeadm init`, and never change them.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::plane::{INFRA_GROUP, Plane, condition, eventually};

/// A Cluster with a KubeadmControlPlane of one machine at v1.35.0 and the given annotations.
async fn create_cluster(plane: &Plane, name: &str, annotations: Value) {
    let control_plane = format!("{name}-control-plane");
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevCluster",
            "metadata": { "name": name },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
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
            "metadata": { "name": control_plane, "annotations": annotations },
            "spec": {
                "replicas": 1,
                "version": "v1.35.0",
                "machineTemplate": { "spec": { "infrastructureRef": {
                    "apiGroup": INFRA_GROUP, "kind": "DevMachineTemplate", "name": control_plane,
                } } },
                "kubeadmConfigSpec": {
                    "clusterConfiguration": { "apiServer": { "certSANs": ["localhost"] } },
                },
            },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": name },
            "spec": {
                "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevCluster", "name": name },
                "controlPlaneRef": {
                    "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane",
                    "name": control_plane,
                },
            },
        }))
        .await;
}

/// Waits until the control plane has one ready machine at `version`.
async fn wait_settled(plane: &Plane, name: &str, version: &str) {
    let control_plane = format!("{name}-control-plane");
    eventually(&format!("{control_plane} at {version}"), || async {
        let kcp = plane.kcp(&control_plane).await;
        let status = kcp.status.as_ref()?;
        (status.observed_generation == kcp.metadata.generation
            && status.replicas == Some(1)
            && status.ready_replicas == Some(1)
            && status.up_to_date_replicas == Some(1)
            && status.version.as_deref() == Some(version)
            && condition(&status.conditions, "Available") == Some("True".into()))
        .then_some(())
    })
    .await;
}

/// Upgrades the control plane to v1.36.0 and asks for CoreDNS v1.12.1.
async fn upgrade(plane: &Plane, name: &str) {
    plane
        .api::<corral_kubeadm::api::controlplane::KubeadmControlPlane>()
        .patch(
            &format!("{name}-control-plane"),
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": {
                "version": "v1.36.0",
                "kubeadmConfigSpec": { "clusterConfiguration": { "dns": { "imageTag": "v1.12.1" } } },
            } })),
        )
        .await
        .expect("the upgrade is accepted");
}

fn image_of(containers: &[k8s_openapi::api::core::v1::Container], name: &str) -> String {
    containers
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

async fn kube_proxy_image(workload: &kube::Client) -> String {
    let daemon_sets: Api<DaemonSet> = Api::namespaced(workload.clone(), "kube-system");
    let daemon_set = daemon_sets.get("kube-proxy").await.unwrap();
    image_of(
        &daemon_set.spec.template.spec.unwrap().containers,
        "kube-proxy",
    )
}

async fn coredns_image(workload: &kube::Client) -> String {
    let deployments: Api<Deployment> = Api::namespaced(workload.clone(), "kube-system");
    let deployment = deployments.get("coredns").await.unwrap();
    image_of(
        &deployment.spec.template.spec.unwrap().containers,
        "coredns",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_moves_kube_proxy_and_coredns_unless_skipped_and_a_coredns_downgrade_is_refused()
{
    let plane = Plane::start().await;
    create_cluster(&plane, "up", json!({})).await;
    create_cluster(
        &plane,
        "skip",
        json!({ "controlplane.cluster.x-k8s.io/skip-kube-proxy": "" }),
    )
    .await;
    wait_settled(&plane, "up", "v1.35.0").await;
    create_cluster(
        &plane,
        "nodns",
        json!({ "controlplane.cluster.x-k8s.io/skip-coredns": "" }),
    )
    .await;
    wait_settled(&plane, "skip", "v1.35.0").await;
    wait_settled(&plane, "nodns", "v1.35.0").await;
    let up = plane.workload_client("up").await;
    let skip = plane.workload_client("skip").await;
    for workload in [&up, &skip] {
        assert_eq!(
            kube_proxy_image(workload).await,
            "registry.k8s.io/kube-proxy:v1.35.0"
        );
        assert_eq!(
            coredns_image(workload).await,
            "registry.k8s.io/coredns/coredns:v1.12.0"
        );
    }

    upgrade(&plane, "up").await;
    upgrade(&plane, "skip").await;
    upgrade(&plane, "nodns").await;

    // After the rollout, kube-proxy takes the new version's tag and CoreDNS the asked-for tag.
    eventually("kube-proxy at v1.36.0", || async {
        (kube_proxy_image(&up).await == "registry.k8s.io/kube-proxy:v1.36.0").then_some(())
    })
    .await;
    eventually("CoreDNS at v1.12.1", || async {
        (coredns_image(&up).await == "registry.k8s.io/coredns/coredns:v1.12.1").then_some(())
    })
    .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(up.clone(), "kube-system");
    let coredns = config_maps.get("coredns").await.unwrap().data.unwrap();
    assert_eq!(coredns["Corefile-backup"], coredns["Corefile"]);
    let kubeadm_config = config_maps
        .get("kubeadm-config")
        .await
        .unwrap()
        .data
        .unwrap();
    let cluster_configuration: serde_yaml::Value =
        serde_yaml::from_str(&kubeadm_config["ClusterConfiguration"]).unwrap();
    assert_eq!(cluster_configuration["dns"]["imageTag"], "v1.12.1");
    assert_eq!(cluster_configuration["clusterName"], "up");
    assert_eq!(cluster_configuration["kubernetesVersion"], "v1.36.0");
    wait_settled(&plane, "up", "v1.36.0").await;

    // With skip-kube-proxy: CoreDNS moves (so the update ran after the rollout), kube-proxy
    // keeps its image.
    eventually("CoreDNS at v1.12.1 with kube-proxy skipped", || async {
        (coredns_image(&skip).await == "registry.k8s.io/coredns/coredns:v1.12.1").then_some(())
    })
    .await;
    assert_eq!(
        kube_proxy_image(&skip).await,
        "registry.k8s.io/kube-proxy:v1.35.0"
    );
    wait_settled(&plane, "skip", "v1.36.0").await;

    // With skip-coredns: kube-proxy moves, CoreDNS and kubeadm-config's dns stay. (CoreDNS is
    // looked at right after kube-proxy, in the same reconcile.)
    let nodns = plane.workload_client("nodns").await;
    eventually("kube-proxy at v1.36.0 with CoreDNS skipped", || async {
        (kube_proxy_image(&nodns).await == "registry.k8s.io/kube-proxy:v1.36.0").then_some(())
    })
    .await;
    wait_settled(&plane, "nodns", "v1.36.0").await;
    assert_eq!(
        coredns_image(&nodns).await,
        "registry.k8s.io/coredns/coredns:v1.12.0"
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(nodns.clone(), "kube-system");
    let kubeadm_config = config_maps
        .get("kubeadm-config")
        .await
        .unwrap()
        .data
        .unwrap();
    assert!(
        !kubeadm_config["ClusterConfiguration"].contains("imageTag"),
        "{}",
        kubeadm_config["ClusterConfiguration"]
    );

    // A CoreDNS downgrade is refused with a Warning Event, and the control plane's status
    // keeps being written (its observed generation follows the change).
    plane
        .api::<corral_kubeadm::api::controlplane::KubeadmControlPlane>()
        .patch(
            "skip-control-plane",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "kubeadmConfigSpec": {
                "clusterConfiguration": { "dns": { "imageTag": "v1.11.1" } },
            } } })),
        )
        .await
        .unwrap();
    let events: Api<Event> = plane.api();
    let note = eventually("the FailedUpdateCoreDNS Event", || async {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("skip-control-plane")
                    && e.reason.as_deref() == Some("FailedUpdateCoreDNS")
            })
            .and_then(|e| e.note)
    })
    .await;
    assert!(
        note.contains("v1.12.1") && note.contains("v1.11.1"),
        "{note}"
    );
    wait_settled(&plane, "skip", "v1.36.0").await;
    assert_eq!(
        coredns_image(&skip).await,
        "registry.k8s.io/coredns/coredns:v1.12.1"
    );

    plane.stop().await;
}
