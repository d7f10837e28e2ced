//! The admin kubeconfig Secret reaches a workload cluster: a second Corral API server stands in
//! for it (as the in-memory provider's simulated clusters do, plain HTTP on loopback), and both a
//! kube-rs client and kubectl use the Secret's kubeconfig unchanged.

use std::collections::BTreeMap;

use corral_api::Cluster;
use corral_kubeadm::certs::{self, KeyAlgorithm, Purpose};
use corral_kubeadm::kubeconfig::{self, Outcome};
use corral_testenv::TestEnv;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use time::OffsetDateTime;

/// A Cluster in `management` whose endpoint is the `workload` API server.
async fn cluster_at(management: &TestEnv, workload: &TestEnv, name: &str) -> Cluster {
    let crds: Vec<Value> = corral_api::crds()
        .into_iter()
        .map(|crd| serde_json::to_value(crd).unwrap())
        .collect();
    management.install_crds(&crds).await;
    let address = workload.url();
    let (host, port) = address
        .trim_start_matches("http://")
        .rsplit_once(':')
        .unwrap();
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": { "name": name, "namespace": "default" },
        "spec": {
            "controlPlaneEndpoint": { "host": host, "port": port.parse::<i32>().unwrap() },
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevCluster", "name": name },
        },
    }))
    .unwrap();
    Api::<Cluster>::namespaced(management.client.clone(), "default")
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap()
}

/// An owner standing for the KubeadmControlPlane.
fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "controlplane.cluster.x-k8s.io/v1beta2".into(),
        kind: "KubeadmControlPlane".into(),
        name: "dev-control-plane".into(),
        uid: "6f1b2c0e-0000-4000-8000-000000000001".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// `kubeconfig::ensure` for `cluster` in `management`, owned by [`owner`].
async fn ensure(management: &TestEnv, cluster: &Cluster, ca: &certs::KeyMaterial) -> Outcome {
    kubeconfig::ensure(
        &certs::SecretReader::new(management.client.clone()),
        cluster,
        ca,
        owner(),
    )
    .await
    .unwrap()
}

async fn kubeconfig_of(management: &TestEnv, name: &str) -> (Secret, String) {
    let secret = Api::<Secret>::namespaced(management.client.clone(), "default")
        .get(&kubeconfig::secret_name(name))
        .await
        .unwrap();
    let value = String::from_utf8(secret.data.as_ref().unwrap()["value"].0.clone()).unwrap();
    (secret, value)
}

#[tokio::test]
async fn the_kubeconfig_secret_reaches_the_workload_cluster_with_kube_rs_and_kubectl() {
    let (management, workload) = (TestEnv::start().await, TestEnv::start().await);
    let cluster = cluster_at(&management, &workload, "dev").await;
    let ca = certs::generate(
        Purpose::ClusterCa,
        KeyAlgorithm::EcdsaP256,
        OffsetDateTime::now_utc(),
    )
    .unwrap();
    let outcome = ensure(&management, &cluster, &ca).await;
    assert_eq!(outcome, Outcome::Created);
    let (secret, value) = kubeconfig_of(&management, "dev").await;
    assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
    assert_eq!(secret.labels()["cluster.x-k8s.io/cluster-name"], "dev");
    assert_eq!(secret.owner_references(), [owner()]);
    let parsed = Kubeconfig::from_yaml(&value).unwrap();
    assert_eq!(parsed.current_context.as_deref(), Some("dev-admin@dev"));
    assert_eq!(
        parsed.clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .server
            .as_deref(),
        Some(workload.url().as_str())
    );

    // kube-rs, from the Secret's kubeconfig alone.
    let config = kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let namespaces = Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        namespaces
            .items
            .iter()
            .any(|ns| ns.name_any() == "kube-system")
    );

    // kubectl, from the same file.
    let file =
        std::env::temp_dir().join(format!("corral-kubeadm-kubeconfig-{}", std::process::id()));
    std::fs::write(&file, &value).unwrap();
    let output = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&file)
        .args(["get", "namespaces", "-o", "name"])
        .output()
        .await;
    std::fs::remove_file(&file).unwrap();
    match output {
        Ok(output) => {
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "kubectl failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(stdout.contains("namespace/kube-system"), "{stdout}");
        }
        // Without kubectl on the machine the kube-rs check above stands alone.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => panic!("running kubectl: {error}"),
    }

    // A second call changes nothing.
    assert_eq!(ensure(&management, &cluster, &ca).await, Outcome::Unchanged);
    let (_, again) = kubeconfig_of(&management, "dev").await;
    assert_eq!(again, value);
}

#[tokio::test]
async fn the_control_plane_takes_over_the_in_memory_providers_kubeconfig_and_leaves_a_users_alone()
{
    let (management, workload) = (TestEnv::start().await, TestEnv::start().await);
    let cluster = cluster_at(&management, &workload, "sim").await;
    let secrets: Api<Secret> = Api::namespaced(management.client.clone(), "default");
    let simulated = Secret {
        metadata: ObjectMeta {
            name: Some("sim-kubeconfig".into()),
            annotations: Some(BTreeMap::from([(
                kubeconfig::SIMULATED_KUBECONFIG_ANNOTATION.to_string(),
                "true".to_string(),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: Cluster::api_version(&()).to_string(),
                kind: "Cluster".into(),
                name: "sim".into(),
                uid: cluster.uid().unwrap(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        type_: Some("cluster.x-k8s.io/secret".into()),
        data: Some(BTreeMap::from([(
            "value".to_string(),
            ByteString(b"apiVersion: v1\nkind: Config\n".to_vec()),
        )])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &simulated)
        .await
        .unwrap();
    let ca = certs::generate(
        Purpose::ClusterCa,
        KeyAlgorithm::EcdsaP256,
        OffsetDateTime::now_utc(),
    )
    .unwrap();
    assert_eq!(ensure(&management, &cluster, &ca).await, Outcome::Renewed);
    let (secret, value) = kubeconfig_of(&management, "sim").await;
    assert!(
        !secret
            .annotations()
            .contains_key(kubeconfig::SIMULATED_KUBECONFIG_ANNOTATION)
    );
    assert_eq!(secret.owner_references(), [owner()]);
    assert!(value.contains("client-certificate-data"));
    assert_eq!(ensure(&management, &cluster, &ca).await, Outcome::Unchanged);

    // A Secret with no controller is the user's.
    let users = Secret {
        metadata: ObjectMeta {
            name: Some("byo-kubeconfig".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "value".to_string(),
            ByteString(b"mine".to_vec()),
        )])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &users)
        .await
        .unwrap();
    let byo = cluster_at_without_crds(&management, &workload, "byo").await;
    assert_eq!(ensure(&management, &byo, &ca).await, Outcome::UserProvided);
    let (_, value) = kubeconfig_of(&management, "byo").await;
    assert_eq!(value, "mine");
}

async fn cluster_at_without_crds(management: &TestEnv, workload: &TestEnv, name: &str) -> Cluster {
    let address = workload.url();
    let (host, port) = address
        .trim_start_matches("http://")
        .rsplit_once(':')
        .unwrap();
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": { "name": name, "namespace": "default" },
        "spec": {
            "controlPlaneEndpoint": { "host": host, "port": port.parse::<i32>().unwrap() },
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevCluster", "name": name },
        },
    }))
    .unwrap();
    Api::<Cluster>::namespaced(management.client.clone(), "default")
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap()
}
