//! Benchmark: what a cluster's certificates and admin kubeconfig cost.
//!
//! `cargo run --release -p corral-kubeadm --example certificates [-- CLUSTERS]`
//!
//! Three measurements, each over CLUSTERS clusters (default 100):
//!
//! 1. generation alone: the four key materials (three CAs and the service-account pair) and the
//!    admin kubeconfig (a client certificate signed by the cluster CA), ECDSA P-256;
//! 2. the same through a real API server (in-process, memory store): `certs::lookup_or_generate`
//!    creating the four Secrets and `kubeconfig::ensure` creating the kubeconfig Secret;
//! 3. a later reconcile's cost when everything exists: the same two calls reading the Secrets
//!    and checking them, generating nothing.

use std::time::{Duration, Instant};

use corral_api::Cluster;
use corral_kubeadm::certs::{self, KeyAlgorithm, Purpose};
use corral_kubeadm::kubeconfig;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, PostParams};
use serde_json::json;
use time::OffsetDateTime;

fn per_cluster(total: Duration, clusters: usize) -> String {
    format!("{:.3} ms", total.as_secs_f64() * 1000.0 / clusters as f64)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let clusters: usize = std::env::args()
        .nth(1)
        .map(|text| text.parse().expect("CLUSTERS is a number"))
        .unwrap_or(100);

    // 1. Generation alone.
    let started = Instant::now();
    for index in 0..clusters {
        let now = OffsetDateTime::now_utc();
        let mut materials = Vec::new();
        for purpose in Purpose::ALL {
            materials.push(certs::generate(purpose, KeyAlgorithm::EcdsaP256, now).unwrap());
        }
        let config = kubeconfig::generate(
            &format!("c{index}"),
            "https://10.0.0.1:6443",
            &materials[0],
            now,
        )
        .unwrap();
        std::hint::black_box(config);
    }
    let generation = started.elapsed();

    // 2 and 3. Through an API server.
    let env = corral_testenv::TestEnv::start().await;
    let crds: Vec<serde_json::Value> = corral_api::crds()
        .into_iter()
        .map(|crd| serde_json::to_value(crd).unwrap())
        .collect();
    env.install_crds(&crds).await;
    let api: Api<Cluster> = Api::namespaced(env.client.clone(), "default");
    let mut objects = Vec::new();
    for index in 0..clusters {
        let cluster: Cluster = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": format!("c{index}"), "namespace": "default" },
            "spec": {
                "controlPlaneEndpoint": { "host": "10.0.0.1", "port": 6443 },
                "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevCluster", "name": "x" },
            },
        }))
        .unwrap();
        objects.push(api.create(&PostParams::default(), &cluster).await.unwrap());
    }
    let owner = OwnerReference {
        api_version: "controlplane.cluster.x-k8s.io/v1beta2".into(),
        kind: "KubeadmControlPlane".into(),
        name: "kcp".into(),
        uid: "6f1b2c0e-0000-4000-8000-000000000001".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let measure = async |expected: kubeconfig::Outcome| {
        let started = Instant::now();
        for cluster in &objects {
            let name = kube::ResourceExt::name_any(cluster);
            let material = certs::lookup_or_generate(
                &certs::SecretReader::new(env.client.clone()),
                "default",
                &name,
                KeyAlgorithm::EcdsaP256,
                None,
            )
            .await
            .unwrap();
            let outcome = kubeconfig::ensure(
                &certs::SecretReader::new(env.client.clone()),
                cluster,
                &material.cluster_ca,
                owner.clone(),
            )
            .await
            .unwrap();
            assert_eq!(outcome, expected);
        }
        started.elapsed()
    };
    let created = measure(kubeconfig::Outcome::Created).await;
    let existing = measure(kubeconfig::Outcome::Unchanged).await;

    println!("clusters: {clusters}");
    println!(
        "generation (4 key materials + admin kubeconfig, ECDSA P-256): {} per cluster",
        per_cluster(generation, clusters)
    );
    println!(
        "first reconcile through the API server (generate + 5 Secret creates): {} per cluster",
        per_cluster(created, clusters)
    );
    println!(
        "later reconcile (5 Secret reads + checks, nothing generated): {} per cluster",
        per_cluster(existing, clusters)
    );
}
