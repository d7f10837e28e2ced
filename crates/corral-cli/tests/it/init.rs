//! `init` against a real API server: the CRDs and upstream's inventory, installed twice with
//! the same result.

use corral_api::clusterctl::{Provider, ProviderType};
use corral_cli::Connection;
use corral_testenv::TestEnv;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_installs_the_crds_and_upstreams_inventory_and_is_idempotent() {
    let env = TestEnv::start().await;
    let connection = Connection::for_url(&env.url()).unwrap();
    let first = corral_cli::components::init(&connection).await.unwrap();
    let providers: Api<Provider> = Api::all(env.client.clone());
    let versions = |list: &[Provider]| {
        list.iter()
            .map(|p| p.metadata.resource_version.clone().unwrap())
            .collect::<Vec<_>>()
    };
    let before = providers.list(&ListParams::default()).await.unwrap().items;

    let second = corral_cli::components::init(&connection).await.unwrap();
    assert_eq!(first.crds, second.crds);
    assert_eq!(first.providers, second.providers);
    let after = providers.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(
        versions(&before),
        versions(&after),
        "a second init rewrote the inventory"
    );

    let mut inventory: Vec<(String, String, Option<ProviderType>, Option<String>)> = after
        .iter()
        .map(|p| {
            (
                p.metadata.namespace.clone().unwrap(),
                p.metadata.name.clone().unwrap(),
                p.type_,
                p.provider_name.clone(),
            )
        })
        .collect();
    inventory.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let entry = |namespace: &str, name: &str, type_, provider: &str| {
        (
            namespace.to_string(),
            name.to_string(),
            Some(type_),
            Some(provider.to_string()),
        )
    };
    assert_eq!(
        inventory,
        [
            entry(
                "capi-kubeadm-bootstrap-system",
                "bootstrap-kubeadm",
                ProviderType::BootstrapProvider,
                "kubeadm"
            ),
            entry(
                "capi-kubeadm-control-plane-system",
                "control-plane-kubeadm",
                ProviderType::ControlPlaneProvider,
                "kubeadm"
            ),
            entry(
                "capi-system",
                "cluster-api",
                ProviderType::CoreProvider,
                "cluster-api"
            ),
            entry(
                "capim-system",
                "infrastructure-in-memory",
                ProviderType::InfrastructureProvider,
                "in-memory"
            ),
            entry(
                "corral-plugin-system",
                "infrastructure-plugin",
                ProviderType::InfrastructureProvider,
                "plugin"
            ),
        ]
    );
    for provider in &after {
        let labels = provider.metadata.labels.clone().unwrap();
        assert_eq!(labels["clusterctl.cluster.x-k8s.io"], "");
        assert_eq!(
            labels["cluster.x-k8s.io/provider"],
            *provider.metadata.name.as_ref().unwrap()
        );
        assert_eq!(provider.version.as_deref(), Some(corral_cli::VERSION));
    }

    // Every CRD carries clusterctl's labels, by which `move` finds the kinds to move.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let installed = crds
        .list(&ListParams::default().labels("clusterctl.cluster.x-k8s.io"))
        .await
        .unwrap()
        .items;
    assert_eq!(installed.len(), first.crds.len());
    let provider_of = |name: &str| {
        installed
            .iter()
            .find(|crd| crd.metadata.name.as_deref() == Some(name))
            .and_then(|crd| crd.metadata.labels.as_ref())
            .map(|labels| labels["cluster.x-k8s.io/provider"].clone())
    };
    assert_eq!(
        provider_of("clusters.cluster.x-k8s.io").as_deref(),
        Some("cluster-api")
    );
    assert_eq!(
        provider_of("devmachines.infrastructure.cluster.x-k8s.io").as_deref(),
        Some("infrastructure-in-memory")
    );
    assert_eq!(
        provider_of("kubeadmconfigs.bootstrap.cluster.x-k8s.io").as_deref(),
        Some("bootstrap-kubeadm")
    );
    assert_eq!(
        provider_of("kubeadmcontrolplanes.controlplane.cluster.x-k8s.io").as_deref(),
        Some("control-plane-kubeadm")
    );
}

/// `get providers` lists the built-in providers and every ProviderPlugin, with the plugin's
/// contract, transport, health and last error (the test writes the status a probe would).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_providers_lists_plugins_with_their_health() {
    use kube::api::{Patch, PatchParams, PostParams};
    let env = TestEnv::start().await;
    let connection = Connection::for_url(&env.url()).unwrap();
    corral_cli::components::init(&connection).await.unwrap();
    let plugins: Api<corral_infra_plugin::api::ProviderPlugin> = Api::all(env.client.clone());
    for (name, endpoint) in [
        ("bare-metal", "http://127.0.0.1:9000"),
        ("lab", "grpc://127.0.0.1:9001"),
    ] {
        let plugin = serde_json::from_value(serde_json::json!({
            "apiVersion": "corral.dev/v1alpha1", "kind": "ProviderPlugin",
            "metadata": { "name": name }, "spec": { "endpoint": endpoint },
        }))
        .unwrap();
        plugins
            .create(&PostParams::default(), &plugin)
            .await
            .unwrap();
    }
    let now = "2026-01-01T00:00:00Z";
    let status = serde_json::json!({ "status": {
        "info": { "name": "bare-metal-pool", "version": "0.1.0", "contractVersions": ["v1"] },
        "transport": "http",
        "conditions": [{ "type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": now }],
    }});
    plugins
        .patch_status("bare-metal", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    let status = serde_json::json!({ "status": {
        "transport": "grpc",
        "conditions": [{ "type": "Ready", "status": "False", "reason": "Unreachable",
            "message": "ProviderPlugin lab: GetInfo: unreachable: connection refused", "lastTransitionTime": now }],
    }});
    plugins
        .patch_status("lab", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();

    let table = corral_cli::get::providers(&connection, k8s_openapi::jiff::Timestamp::now())
        .await
        .unwrap();
    let line = |name: &str| {
        table
            .lines()
            .find(|line| line.split_whitespace().any(|cell| cell == name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        line("infrastructure-in-memory")[2..8],
        [
            "InfrastructureProvider",
            "in-memory",
            corral_cli::VERSION,
            "v1beta2",
            "in-process",
            "-"
        ]
    );
    assert_eq!(
        line("bare-metal")[..7],
        [
            "bare-metal",
            "InfrastructureProvider",
            "plugin:bare-metal-pool",
            "0.1.0",
            "v1",
            "http",
            "Ready"
        ]
    );
    let lab = line("lab");
    assert_eq!(
        lab[..4],
        ["lab", "InfrastructureProvider", "plugin:-", "grpc"],
        "{table}"
    );
    assert!(table.contains("Unreachable"), "{table}");
    assert!(
        table.contains("ProviderPlugin lab: GetInfo: unreachable: connection refused"),
        "{table}"
    );
}
