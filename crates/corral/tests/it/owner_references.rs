//! Owner references as upstream's table has them (`docs/book/src/reference/api/
//! owner-references.md` and the controllers behind it), on a cluster made from `corral generate
//! cluster` and run by `corral up`: who owns what and which owner is the controller, an owner
//! reference stripped (as backup tools do) coming back, and a deleted cluster leaving nothing
//! of it in the namespace.

use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::{Discovery, Scope};
use serde_json::json;

use crate::cli::{client, corral_ok, eventually, scratch, start_up, wait_available};

/// The owners of an object as (kind, name, controller).
async fn owners(
    client: &kube::Client,
    group: &str,
    kind: &str,
    name: &str,
) -> Vec<(String, String, bool)> {
    let api = dynamic(client, group, kind);
    let object = api
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("{kind}/{name}: {e}"));
    let mut owners: Vec<_> = object
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|owner| (owner.kind, owner.name, owner.controller == Some(true)))
        .collect();
    owners.sort();
    owners
}

fn dynamic(client: &kube::Client, group: &str, kind: &str) -> Api<DynamicObject> {
    let (group, version) = match group {
        "" => ("", "v1"),
        group => (
            group,
            if group == "cluster.x-k8s.io" || group.ends_with(".cluster.x-k8s.io") {
                "v1beta2"
            } else {
                "v1"
            },
        ),
    };
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version,
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    };
    Api::namespaced_with(client.clone(), "default", &resource)
}

/// `corral generate cluster` with `args` (the name first), one worker and Kubernetes v1.33.1,
/// applied as `corral apply` would.
async fn generate_and_apply(kubeconfig: &std::path::Path, args: &[&str]) {
    let mut command = vec!["generate", "cluster"];
    command.extend_from_slice(args);
    command.extend_from_slice(&[
        "--kubernetes-version",
        "v1.33.1",
        "--worker-machine-count",
        "1",
    ]);
    let yaml = corral_ok(kubeconfig, &command);
    let connection = corral_cli::Connection::open(&corral_cli::KubeconfigSource {
        flag: Some(kubeconfig.to_path_buf()),
        ..Default::default()
    })
    .await
    .unwrap();
    corral_cli::apply::apply_yaml(&connection, &yaml)
        .await
        .unwrap();
}

fn owned_by(kind: &str, name: &str, controller: bool) -> Vec<(String, String, bool)> {
    vec![(kind.to_string(), name.to_string(), controller)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_cluster_has_upstreams_owner_references_and_leaves_nothing_when_deleted() {
    let dir = scratch();
    let (_up, kubeconfig) = start_up(&dir.path().join("data"), dir.path().join("up.log")).await;
    generate_and_apply(&kubeconfig, &["own", "--control-plane-machine-count", "1"]).await;
    wait_available(&kubeconfig, "own", 2).await;
    let client = client(&kubeconfig).await;

    // The Cluster's direct objects: upstream's Cluster controller makes itself their controller
    // only for a Cluster with a topology (`ensureOwnerRefAndLabel`), so here a plain owner.
    let infrastructure = "infrastructure.cluster.x-k8s.io";
    assert_eq!(
        owners(&client, infrastructure, "DevCluster", "own").await,
        owned_by("Cluster", "own", false)
    );
    assert_eq!(
        owners(
            &client,
            "controlplane.cluster.x-k8s.io",
            "KubeadmControlPlane",
            "own-control-plane"
        )
        .await,
        owned_by("Cluster", "own", false)
    );
    assert_eq!(
        owners(&client, "cluster.x-k8s.io", "MachineDeployment", "own-md-0").await,
        owned_by("Cluster", "own", false)
    );
    // The templates the control plane and the MachineDeployment clone go with the Cluster.
    for (group, kind, name) in [
        (infrastructure, "DevMachineTemplate", "own-control-plane"),
        (infrastructure, "DevMachineTemplate", "own-md-0"),
        (
            "bootstrap.cluster.x-k8s.io",
            "KubeadmConfigTemplate",
            "own-md-0",
        ),
    ] {
        let owners = owners(&client, group, kind, name).await;
        assert_eq!(owners, owned_by("Cluster", "own", false), "{kind}/{name}");
    }
    // The certificates and kubeconfig are the control plane's.
    for secret in [
        "own-ca",
        "own-etcd",
        "own-proxy",
        "own-sa",
        "own-kubeconfig",
    ] {
        assert_eq!(
            owners(&client, "", "Secret", secret).await,
            owned_by("KubeadmControlPlane", "own-control-plane", true),
            "Secret/{secret}"
        );
    }
    // Machines are their creator's, their infrastructure and bootstrap objects the Machine's,
    // bootstrap data Secrets the KubeadmConfig's.
    let machines = dynamic(&client, "cluster.x-k8s.io", "Machine")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(machines.items.len(), 2);
    for machine in &machines.items {
        let name = machine.metadata.name.clone().unwrap();
        let owner = &machine.metadata.owner_references.as_ref().unwrap()[0];
        assert!(
            owner.controller == Some(true)
                && ["KubeadmControlPlane", "MachineSet"].contains(&owner.kind.as_str()),
            "{name}: {owner:?}"
        );
        machine_objects_are_owned_down_the_chain(&client, machine).await;
    }

    // An owner reference stripped from the control plane's template comes back when the
    // control plane next reconciles (woken here by a change of its own).
    let template = dynamic(&client, infrastructure, "DevMachineTemplate");
    template
        .patch(
            "own-control-plane",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "ownerReferences": null } })),
        )
        .await
        .unwrap();
    assert!(
        owners(
            &client,
            infrastructure,
            "DevMachineTemplate",
            "own-control-plane"
        )
        .await
        .is_empty()
    );
    dynamic(
        &client,
        "controlplane.cluster.x-k8s.io",
        "KubeadmControlPlane",
    )
    .patch(
        "own-control-plane",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "annotations": { "example.com/poke": "1" } } })),
    )
    .await
    .unwrap();
    eventually(
        "the Cluster to own the control plane's template again",
        || async {
            let owners = owners(
                &client,
                infrastructure,
                "DevMachineTemplate",
                "own-control-plane",
            )
            .await;
            (owners == owned_by("Cluster", "own", false)).then_some(())
        },
    )
    .await;

    // The same for the control plane's certificate Secrets, which its reconcile checks at
    // most once per poll interval (woken here by another change).
    dynamic(&client, "", "Secret")
        .patch(
            "own-ca",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "ownerReferences": null } })),
        )
        .await
        .unwrap();
    eventually("the control plane to control its CA Secret again", || async {
        dynamic(&client, "controlplane.cluster.x-k8s.io", "KubeadmControlPlane")
            .patch("own-control-plane", &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": { "annotations": { "example.com/poke": format!("{:?}", std::time::Instant::now()) } } })))
            .await
            .unwrap();
        let owners = owners(&client, "", "Secret", "own-ca").await;
        (owners == owned_by("KubeadmControlPlane", "own-control-plane", true)).then_some(())
    })
    .await;

    deleted_cluster_leaves_nothing(&kubeconfig, &client, "own").await;
}

/// The machine-based flavour: control plane Machines of the Cluster's own, each with its
/// KubeadmConfig, workers of a MachineDeployment; every bootstrap data Secret its
/// KubeadmConfig's, and nothing left once the cluster is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_based_cluster_has_upstreams_owner_references_and_leaves_nothing_when_deleted() {
    let dir = scratch();
    let (_up, kubeconfig) = start_up(&dir.path().join("data"), dir.path().join("up.log")).await;
    generate_and_apply(
        &kubeconfig,
        &[
            "mb",
            "--flavor",
            "machine-based",
            "--control-plane-machine-count",
            "2",
        ],
    )
    .await;
    wait_available(&kubeconfig, "mb", 3).await;
    let client = client(&kubeconfig).await;

    let infrastructure = "infrastructure.cluster.x-k8s.io";
    let bootstrap = "bootstrap.cluster.x-k8s.io";
    assert_eq!(
        owners(&client, infrastructure, "DevCluster", "mb").await,
        owned_by("Cluster", "mb", false)
    );
    for (group, kind, name) in [
        ("cluster.x-k8s.io", "MachineDeployment", "mb-md-0"),
        (infrastructure, "DevMachineTemplate", "mb-md-0"),
        (bootstrap, "KubeadmConfigTemplate", "mb-md-0"),
    ] {
        let owners = owners(&client, group, kind, name).await;
        assert_eq!(owners, owned_by("Cluster", "mb", false), "{kind}/{name}");
    }
    let machines = dynamic(&client, "cluster.x-k8s.io", "Machine")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(machines.items.len(), 3);
    for machine in &machines.items {
        let name = machine.metadata.name.clone().unwrap();
        let owner = &machine.metadata.owner_references.as_ref().unwrap()[0];
        // A stand-alone Machine is the Cluster's (not as controller), a worker its MachineSet's.
        let expected = if name.starts_with("mb-control-plane-") {
            ("Cluster", false)
        } else {
            ("MachineSet", true)
        };
        assert_eq!(
            (owner.kind.as_str(), owner.controller == Some(true)),
            expected,
            "{name}: {owner:?}"
        );
        machine_objects_are_owned_down_the_chain(&client, machine).await;
    }

    deleted_cluster_leaves_nothing(&kubeconfig, &client, "mb").await;
}

/// A Machine's DevMachine and KubeadmConfig are controlled by the Machine, its bootstrap data
/// Secret by the KubeadmConfig.
async fn machine_objects_are_owned_down_the_chain(client: &kube::Client, machine: &DynamicObject) {
    let name = machine.metadata.name.clone().unwrap();
    let spec = &machine.data["spec"];
    let infrastructure = spec["infrastructureRef"]["name"].as_str().unwrap();
    assert_eq!(
        owners(
            client,
            "infrastructure.cluster.x-k8s.io",
            "DevMachine",
            infrastructure
        )
        .await,
        owned_by("Machine", &name, true)
    );
    let config = spec["bootstrap"]["configRef"]["name"].as_str().unwrap();
    assert_eq!(
        owners(
            client,
            "bootstrap.cluster.x-k8s.io",
            "KubeadmConfig",
            config
        )
        .await,
        owned_by("Machine", &name, true)
    );
    let data_secret = spec["bootstrap"]["dataSecretName"].as_str().unwrap();
    assert_eq!(
        owners(client, "", "Secret", data_secret).await,
        owned_by("KubeadmConfig", config, true)
    );
}

/// Deletes cluster `name` and checks it leaves nothing of it in the namespace: every namespaced
/// kind the server serves is listed (Events aside, which nothing owns, upstream as here).
async fn deleted_cluster_leaves_nothing(
    kubeconfig: &std::path::Path,
    client: &kube::Client,
    name: &str,
) {
    let deleted = corral_ok(
        kubeconfig,
        &["delete", "cluster", name, "--wait", "--timeout", "180"],
    );
    assert!(
        deleted.contains(&format!("Cluster {name} is gone")),
        "{deleted}"
    );
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    // The garbage collector takes what the Cluster owned once it is gone, a moment later.
    eventually(&format!("nothing of cluster {name} left"), || async {
        let left = left_of(client, &discovery, name).await;
        if !left.is_empty() {
            eprintln!("left behind for now: {left:?}");
        }
        left.is_empty().then_some(())
    })
    .await;
}

/// What is left in the namespace of cluster `name`: objects named after it or labelled with it.
async fn left_of(client: &kube::Client, discovery: &Discovery, name: &str) -> Vec<String> {
    let mut left = Vec::new();
    for group in discovery.groups() {
        for (resource, capabilities) in group.recommended_resources() {
            if capabilities.scope != Scope::Namespaced
                || resource.kind == "Event"
                || !capabilities.supports_operation(kube::discovery::verbs::LIST)
            {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), "default", &resource);
            for object in api.list(&ListParams::default()).await.unwrap() {
                let object_name = object.metadata.name.clone().unwrap_or_default();
                let labelled = object
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("cluster.x-k8s.io/cluster-name"))
                    .is_some();
                if object_name.starts_with(name) || labelled {
                    left.push(format!("{}/{object_name}", resource.kind));
                }
            }
        }
    }
    left
}
