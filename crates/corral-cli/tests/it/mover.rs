//! `corral move` between two in-process management planes with no controllers running: the
//! test writes what controllers would (owner references, status), so that what the move itself
//! does is what is checked: its refusals, the order, owner uids rewritten, status restored; and
//! the same through a directory (`--to-directory`, `--from-directory`).

use corral_cli::Connection;
use corral_cli::mover::{Mode, MoveOptions, PAUSED_BY_MOVE};
use corral_testenv::TestEnv;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const NAMESPACE: &str = "team-a";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";

struct Plane {
    env: TestEnv,
    connection: Connection,
}

impl Plane {
    async fn start(init: bool) -> Plane {
        let env = TestEnv::start().await;
        let connection = Connection::for_url(&env.url()).unwrap();
        if init {
            corral_cli::components::init(&connection).await.unwrap();
        }
        Plane { env, connection }
    }

    fn api(&self, kind: &str) -> Api<DynamicObject> {
        let (group, version, plural) = match kind {
            "Cluster" => ("cluster.x-k8s.io", "v1beta2", "clusters"),
            "MachineDeployment" => ("cluster.x-k8s.io", "v1beta2", "machinedeployments"),
            "MachineSet" => ("cluster.x-k8s.io", "v1beta2", "machinesets"),
            "Machine" => ("cluster.x-k8s.io", "v1beta2", "machines"),
            "DevCluster" => (INFRA, "v1beta2", "devclusters"),
            "DevMachine" => (INFRA, "v1beta2", "devmachines"),
            "PluginMachineTemplate" => (
                "infrastructure.corral.dev",
                "v1alpha1",
                "pluginmachinetemplates",
            ),
            "Secret" => ("", "v1", "secrets"),
            "ConfigMap" => ("", "v1", "configmaps"),
            "Namespace" => ("", "v1", "namespaces"),
            other => panic!("no API for {other}"),
        };
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: if group.is_empty() {
                version.into()
            } else {
                format!("{group}/{version}")
            },
            kind: kind.into(),
            plural: plural.into(),
        };
        if kind == "Namespace" {
            Api::all_with(self.env.client.clone(), &resource)
        } else {
            Api::namespaced_with(self.env.client.clone(), NAMESPACE, &resource)
        }
    }

    /// Creates `object` owned by `owner` (kind, object), with `status` written as a controller
    /// would; returns it as created.
    async fn create(
        &self,
        object: Value,
        owner: Option<(&str, &DynamicObject)>,
        status: Option<Value>,
    ) -> DynamicObject {
        let kind = object["kind"].as_str().unwrap().to_string();
        let mut object = object;
        if let Some((owner_kind, owner)) = owner {
            object["metadata"]["ownerReferences"] = json!([{
                "apiVersion": owner.types.as_ref().unwrap().api_version,
                "kind": owner_kind,
                "name": owner.metadata.name,
                "uid": owner.metadata.uid,
                "controller": true,
            }]);
        }
        let api = self.api(&kind);
        let object: DynamicObject = serde_json::from_value(object).unwrap();
        let created = api
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|error| panic!("creating a {kind}: {error}"));
        if let Some(status) = status {
            api.patch_status(
                created.metadata.name.as_deref().unwrap(),
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .unwrap();
        }
        api.get(created.metadata.name.as_deref().unwrap())
            .await
            .unwrap()
    }

    async fn names(&self, kind: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .api(kind)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|object| object.metadata.name.unwrap())
            .collect();
        names.sort();
        names
    }
}

fn core(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind,
        "metadata": { "name": name, "namespace": NAMESPACE,
                      "labels": { "cluster.x-k8s.io/cluster-name": "c1" } },
        "spec": spec,
    })
}

fn machine_spec() -> Value {
    json!({
        "clusterName": "c1",
        "bootstrap": { "dataSecretName": "c1-bootstrap" },
        "infrastructureRef": { "apiGroup": INFRA, "kind": "DevMachine", "name": "m1" },
    })
}

/// A provisioned cluster as the controllers would have left it: Cluster, DevCluster,
/// MachineDeployment, MachineSet, Machine, DevMachine, bootstrap and kubeconfig Secrets.
async fn provisioned_cluster(plane: &Plane, paused: bool) {
    plane
        .api("Namespace")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": NAMESPACE },
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let cluster = plane
        .create(
            core(
                "Cluster",
                "c1",
                json!({
                    "paused": paused,
                    "infrastructureRef": { "apiGroup": INFRA, "kind": "DevCluster", "name": "c1" },
                }),
            ),
            None,
            Some(json!({ "initialization": { "infrastructureProvisioned": true }, "phase": "Provisioned" })),
        )
        .await;
    plane
        .create(
            json!({
                "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevCluster",
                "metadata": { "name": "c1", "namespace": NAMESPACE },
                "spec": { "backend": { "inMemory": {} } },
            }),
            Some(("Cluster", &cluster)),
            None,
        )
        .await;
    for name in ["c1-kubeconfig", "c1-bootstrap"] {
        plane
            .create(
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": { "name": name, "namespace": NAMESPACE },
                    "stringData": { "value": "not a real secret" },
                }),
                None,
                None,
            )
            .await;
    }
    let template = json!({
        "metadata": { "labels": { "pool": "md" } },
        "spec": machine_spec(),
    });
    let deployment = plane
        .create(
            core(
                "MachineDeployment",
                "md",
                json!({ "clusterName": "c1", "replicas": 1,
                        "selector": { "matchLabels": { "pool": "md" } }, "template": template }),
            ),
            Some(("Cluster", &cluster)),
            None,
        )
        .await;
    let machine_set = plane
        .create(
            core(
                "MachineSet",
                "md-abc",
                json!({ "clusterName": "c1", "replicas": 1,
                        "selector": { "matchLabels": { "pool": "md" } }, "template": template }),
            ),
            Some(("MachineDeployment", &deployment)),
            None,
        )
        .await;
    let machine = plane
        .create(
            core("Machine", "m1", machine_spec()),
            Some(("MachineSet", &machine_set)),
            Some(json!({ "phase": "Running", "nodeRef": { "name": "m1" } })),
        )
        .await;
    plane
        .create(
            json!({
                "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevMachine",
                "metadata": { "name": "m1", "namespace": NAMESPACE,
                              "labels": { "cluster.x-k8s.io/cluster-name": "c1" } },
                "spec": { "backend": { "inMemory": {} }, "providerID": "in-memory://m1" },
            }),
            Some(("Machine", &machine)),
            None,
        )
        .await;
}

fn options(mode: Mode, dry_run: bool) -> MoveOptions {
    MoveOptions {
        namespace: Some(NAMESPACE.into()),
        dry_run,
        mode,
        command: "corral move --to-kubeconfig target".into(),
    }
}

async fn run(
    source: &Plane,
    target: &Plane,
    options: &MoveOptions,
) -> (Result<(), String>, String) {
    let mut out = Vec::new();
    let result = corral_cli::mover::run(&source.connection, &target.connection, options, &mut out)
        .await
        .map(|_| ())
        .map_err(|error| error.to_string());
    (result, String::from_utf8(out).unwrap())
}

#[tokio::test]
async fn the_move_refuses_a_target_without_providers_and_a_paused_or_unprovisioned_source() {
    let source = Plane::start(true).await;
    provisioned_cluster(&source, true).await;
    let bare = Plane::start(false).await;
    let (result, _) = run(&source, &bare, &options(Mode::Move, false)).await;
    let error = result.unwrap_err();
    assert!(error.contains("does not serve Cluster"), "{error}");
    assert!(error.contains("corral init"), "{error}");

    let target = Plane::start(true).await;
    let (result, _) = run(&source, &target, &options(Mode::Move, false)).await;
    let error = result.unwrap_err();
    assert!(error.contains("Cluster team-a/c1 is paused"), "{error}");

    source
        .api("Cluster")
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "paused": false } })),
        )
        .await
        .unwrap();
    source
        .api("Machine")
        .patch_status(
            "m1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": { "nodeRef": null } })),
        )
        .await
        .unwrap();
    let (result, _) = run(&source, &target, &options(Mode::Move, false)).await;
    let error = result.unwrap_err();
    assert!(
        error.contains("Machine team-a/m1 is still provisioning its node"),
        "{error}"
    );
    // Nothing changed on either side.
    assert!(target.names("Cluster").await.is_empty());
    let cluster = source.api("Cluster").get("c1").await.unwrap();
    assert_eq!(cluster.data["spec"]["paused"], json!(false));
}

#[tokio::test]
async fn the_move_creates_owners_first_rewrites_owner_uids_and_restores_status() {
    let source = Plane::start(true).await;
    let target = Plane::start(true).await;
    provisioned_cluster(&source, false).await;

    let (result, plan) = run(&source, &target, &options(Mode::Move, true)).await;
    result.unwrap();
    let groups: Vec<&str> = plan
        .lines()
        .filter(|line| line.starts_with("Group"))
        .collect();
    assert_eq!(groups.len(), 5, "{plan}");
    assert!(plan.contains("Secret team-a/c1-kubeconfig"), "{plan}");
    assert!(
        !plan.contains("not a real secret"),
        "secret data is never printed"
    );
    assert!(
        target.names("Cluster").await.is_empty(),
        "a dry run changes nothing"
    );

    let (result, out) = run(&source, &target, &options(Mode::Move, false)).await;
    result.unwrap_or_else(|error| panic!("{error}\n{out}"));

    // The source has nothing left.
    for kind in [
        "Cluster",
        "DevCluster",
        "MachineDeployment",
        "MachineSet",
        "Machine",
        "DevMachine",
        "Secret",
    ] {
        assert!(
            source.names(kind).await.is_empty(),
            "{kind} left at the source"
        );
    }
    // Every owner reference at the target names the target's owner.
    for (kind, name, owner_kind, owner_name) in [
        ("DevCluster", "c1", "Cluster", "c1"),
        ("MachineDeployment", "md", "Cluster", "c1"),
        ("MachineSet", "md-abc", "MachineDeployment", "md"),
        ("Machine", "m1", "MachineSet", "md-abc"),
        ("DevMachine", "m1", "Machine", "m1"),
    ] {
        let object = target.api(kind).get(name).await.unwrap();
        let owner = target.api(owner_kind).get(owner_name).await.unwrap();
        let references = object.metadata.owner_references.unwrap();
        assert_eq!(references.len(), 1);
        assert_eq!(
            Some(&references[0].uid),
            owner.metadata.uid.as_ref(),
            "{kind} {name}"
        );
    }
    let machine = target.api("Machine").get("m1").await.unwrap();
    assert_eq!(machine.data["status"]["phase"], json!("Running"));
    assert_eq!(machine.data["status"]["nodeRef"]["name"], json!("m1"));
    let cluster = target.api("Cluster").get("c1").await.unwrap();
    assert_eq!(cluster.data["spec"]["paused"], json!(false));
    assert!(
        !cluster
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(PAUSED_BY_MOVE)
    );
    assert_eq!(
        cluster.data["status"]["initialization"]["infrastructureProvisioned"],
        json!(true)
    );
    assert_eq!(
        target.names("Secret").await,
        vec!["c1-bootstrap", "c1-kubeconfig"]
    );

    // Running it again finds nothing to move and changes nothing.
    let (result, out) = run(&source, &target, &options(Mode::Move, false)).await;
    result.unwrap();
    assert!(out.contains("Moved 0 objects"), "{out}");
    assert_eq!(target.names("Machine").await, vec!["m1"]);
}

#[tokio::test]
async fn a_move_that_stopped_after_deleting_the_source_only_resumes() {
    let source = Plane::start(true).await;
    let target = Plane::start(true).await;
    provisioned_cluster(&source, false).await;
    let (result, _) = run(&source, &target, &options(Mode::Move, false)).await;
    result.unwrap();
    // As if the move had died before unpausing at the target: the source is gone, the target's
    // Cluster is still paused by the move.
    target
        .api("Cluster")
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "annotations": { PAUSED_BY_MOVE: "elsewhere" } },
                "spec": { "paused": true },
            })),
        )
        .await
        .unwrap();

    let (result, _) = run(&source, &target, &options(Mode::Rollback, false)).await;
    let error = result.unwrap_err();
    assert!(
        error.contains("Cluster team-a/c1 is no longer at the source")
            && error.contains("corral move --to-kubeconfig target --resume"),
        "{error}"
    );

    let (result, out) = run(&source, &target, &options(Mode::Resume, false)).await;
    result.unwrap();
    assert!(
        out.contains("Unpaused Cluster team-a/c1 at the target"),
        "{out}"
    );
    let cluster = target.api("Cluster").get("c1").await.unwrap();
    assert_eq!(cluster.data["spec"]["paused"], json!(false));
}

#[tokio::test]
async fn a_move_that_began_deleting_at_the_source_cannot_be_rolled_back() {
    let source = Plane::start(true).await;
    let target = Plane::start(true).await;
    provisioned_cluster(&source, false).await;
    source
        .api("Cluster")
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "annotations": {
                    PAUSED_BY_MOVE: target.connection.server,
                    corral_cli::mover::MOVE_PHASE: "deleting-source",
                } },
                "spec": { "paused": true },
            })),
        )
        .await
        .unwrap();
    let (result, _) = run(&source, &target, &options(Mode::Rollback, false)).await;
    let error = result.unwrap_err();
    assert!(error.contains("cannot be rolled back"), "{error}");
    // A new move is refused too, with both ways out named.
    let (result, _) = run(&source, &target, &options(Mode::Move, false)).await;
    let error = result.unwrap_err();
    assert!(
        error.contains("did not finish")
            && error.contains("--resume")
            && error.contains("--rollback"),
        "{error}"
    );
    // The source keeps its paused Cluster: nothing was unpaused silently.
    let cluster = source.api("Cluster").get("c1").await.unwrap();
    assert_eq!(cluster.data["spec"]["paused"], json!(true));
}

#[tokio::test]
async fn a_directory_round_trip_rewrites_owner_uids_restores_status_and_skips_strays() {
    let source = Plane::start(true).await;
    let target = Plane::start(true).await;
    provisioned_cluster(&source, false).await;
    let directory = tempfile::Builder::new()
        .prefix("corral-backup-")
        .tempdir()
        .unwrap();
    let mut out = Vec::new();
    let report = corral_cli::mover::to_directory(
        &source.connection,
        directory.path(),
        &options(Mode::Move, false),
        &mut out,
    )
    .await
    .unwrap();
    let out = String::from_utf8(out).unwrap();
    let files = std::fs::read_dir(directory.path()).unwrap().count();
    assert_eq!(files, report.objects.len(), "{out}");
    assert_eq!(report.clusters, vec!["team-a/c1"]);
    // The source keeps everything, unpaused.
    let cluster = source.api("Cluster").get("c1").await.unwrap();
    assert_eq!(cluster.data["spec"]["paused"], json!(false));
    assert!(
        !cluster
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(PAUSED_BY_MOVE)
    );
    assert_eq!(source.names("Machine").await, vec!["m1"]);

    // A file no Cluster reaches is named and left out.
    std::fs::write(
        directory.path().join("ConfigMap_team-a_stray.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stray, namespace: team-a}\n",
    )
    .unwrap();
    let mut out = Vec::new();
    let restore = MoveOptions {
        namespace: None,
        command: "corral move --from-directory backup".into(),
        ..options(Mode::Move, false)
    };
    corral_cli::mover::from_directory(&target.connection, directory.path(), &restore, &mut out)
        .await
        .unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("Skipping ConfigMap team-a/stray"), "{out}");
    assert!(
        target
            .names("ConfigMap")
            .await
            .iter()
            .all(|name| name != "stray")
    );

    for (kind, name, owner_kind, owner_name) in [
        ("DevCluster", "c1", "Cluster", "c1"),
        ("MachineSet", "md-abc", "MachineDeployment", "md"),
        ("Machine", "m1", "MachineSet", "md-abc"),
        ("DevMachine", "m1", "Machine", "m1"),
    ] {
        let object = target.api(kind).get(name).await.unwrap();
        let owner = target.api(owner_kind).get(owner_name).await.unwrap();
        let references = object.metadata.owner_references.unwrap();
        assert_eq!(
            Some(&references[0].uid),
            owner.metadata.uid.as_ref(),
            "{kind} {name}"
        );
    }
    let machine = target.api("Machine").get("m1").await.unwrap();
    assert_eq!(machine.data["status"]["phase"], json!("Running"));
    let cluster = target.api("Cluster").get("c1").await.unwrap();
    assert_eq!(cluster.data["spec"]["paused"], json!(false));
    assert!(
        !cluster
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(PAUSED_BY_MOVE)
    );
    assert_eq!(
        target.names("Secret").await,
        vec!["c1-bootstrap", "c1-kubeconfig"]
    );
}

/// The ProviderPlugins that moved Plugin* objects name are cluster-scoped, so outside the
/// graph: the move creates them at the target first, and the source keeps its own.
#[tokio::test]
async fn the_move_brings_the_provider_plugins_its_objects_name() {
    use corral_infra_plugin::api::ProviderPlugin;
    let source = Plane::start(true).await;
    let target = Plane::start(true).await;
    provisioned_cluster(&source, false).await;
    let plugins_at = |plane: &Plane| -> Api<ProviderPlugin> { Api::all(plane.env.client.clone()) };
    let plugin: ProviderPlugin = serde_json::from_value(json!({
        "apiVersion": "corral.dev/v1alpha1", "kind": "ProviderPlugin",
        "metadata": { "name": "pool" },
        "spec": { "endpoint": "http://127.0.0.1:9000", "orphanPolicy": "Delete" },
    }))
    .unwrap();
    plugins_at(&source)
        .create(&PostParams::default(), &plugin)
        .await
        .unwrap();
    let cluster = source.api("Cluster").get("c1").await.unwrap();
    source
        .create(
            json!({
                "apiVersion": "infrastructure.corral.dev/v1alpha1", "kind": "PluginMachineTemplate",
                "metadata": { "name": "workers", "namespace": NAMESPACE },
                "spec": { "template": { "spec": { "plugin": "pool", "config": { "pool": "rack-1" } } } },
            }),
            Some(("Cluster", &cluster)),
            None,
        )
        .await;

    let (result, out) = run(&source, &target, &options(Mode::Move, false)).await;
    result.unwrap_or_else(|error| panic!("{error}\n{out}"));
    assert!(
        out.contains("Created ProviderPlugin pool at the target"),
        "{out}"
    );
    let copied = plugins_at(&target).get("pool").await.unwrap();
    assert_eq!(copied.spec, plugin.spec);
    assert!(plugins_at(&source).get_opt("pool").await.unwrap().is_some());
    assert_eq!(target.names("PluginMachineTemplate").await, ["workers"]);
}
