//! Upstream's admission rules, kind by kind, through a real API server over HTTP that runs
//! them as the binary's does (`components::admission_rules`): one table per kind, each row a
//! create or an update with what upstream answers (accepted, with what it defaults, or a 422
//! whose causes name the field and the error type). A refused write leaves the object as it
//! was. The rows are the tests of `docs/admission-rules.md`.

use corral_cli::Connection;
use corral_testenv::TestEnv;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// What a write should get.
enum Expect {
    /// Accepted; each (JSON pointer, value) holds in the stored object.
    Accepted(&'static [(&'static str, &'static str)]),
    /// A 422 Invalid with exactly these causes: (reason, field).
    Refused(&'static [(&'static str, &'static str)]),
}

/// One row: an object created, then (for an update) a merge patch of it.
struct Row {
    id: &'static str,
    object: Value,
    update: Option<Value>,
    expect: Expect,
}

fn row(id: &'static str, object: Value, update: Option<Value>, expect: Expect) -> Row {
    Row {
        id,
        object,
        update,
        expect,
    }
}

async fn env() -> TestEnv {
    let env = TestEnv::with_admission(corral_cli::components::admission_rules()).await;
    let connection = Connection::for_url(&env.url()).unwrap();
    corral_cli::components::init(&connection).await.unwrap();
    env
}

fn api(env: &TestEnv, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap();
    let kind = object["kind"].as_str().unwrap();
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    };
    Api::namespaced_with(env.client.clone(), "default", &resource)
}

/// The Status of a refused write, as JSON.
fn refusal(error: kube::Error) -> Value {
    match error {
        kube::Error::Api(status) => serde_json::to_value(&*status).unwrap(),
        other => panic!("not an API error: {other}"),
    }
}

fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|cause| {
                    let text = |field: &str| cause[field].as_str().unwrap_or("").to_string();
                    (text("reason"), text("field"))
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn run(env: &TestEnv, rows: Vec<Row>) {
    for row in rows {
        let id = row.id;
        let api = api(env, &row.object);
        let name = row.object["metadata"]["name"].as_str().unwrap().to_string();
        let object: DynamicObject = serde_json::from_value(row.object.clone()).unwrap();
        let created = api.create(&PostParams::default(), &object).await;
        let (result, before) = match row.update {
            None => (created, None),
            Some(patch) => {
                let before = created.unwrap_or_else(|e| panic!("{id}: the create failed: {e}"));
                let result = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                (result, Some(before))
            }
        };
        match (row.expect, result) {
            (Expect::Accepted(holds), Ok(_)) => {
                let stored = serde_json::to_value(api.get(&name).await.unwrap()).unwrap();
                for (pointer, value) in holds {
                    assert_eq!(
                        stored.pointer(pointer).and_then(Value::as_str),
                        Some(*value),
                        "{id}: {pointer} in {stored}"
                    );
                }
            }
            (Expect::Accepted(_), Err(error)) => panic!("{id}: refused: {}", refusal(error)),
            (Expect::Refused(expected), Ok(object)) => {
                panic!("{id}: accepted, expected {expected:?}: {:?}", object.data)
            }
            (Expect::Refused(expected), Err(error)) => {
                let status = refusal(error);
                assert_eq!(status["code"], 422, "{id}: {status}");
                assert_eq!(status["reason"], "Invalid", "{id}: {status}");
                let expected: Vec<(String, String)> = expected
                    .iter()
                    .map(|(reason, field)| (reason.to_string(), field.to_string()))
                    .collect();
                assert_eq!(causes(&status), expected, "{id}: {status}");
                // Nothing changed: no object for a create, the same one for an update.
                let now = api.get_opt(&name).await.unwrap();
                match before {
                    None => assert!(now.is_none(), "{id}: a refused create stored the object"),
                    Some(before) => assert_eq!(
                        now.unwrap().metadata.resource_version,
                        before.metadata.resource_version,
                        "{id}: a refused update changed the object"
                    ),
                }
            }
        }
    }
}

const INVALID: &str = "FieldValueInvalid";
const FORBIDDEN: &str = "FieldValueForbidden";
const REQUIRED: &str = "FieldValueRequired";
const INTERNAL: &str = "InternalError";

/// A taint a Machine template may carry, as upstream's schema has it.
fn taint(key: &str) -> Value {
    json!([{ "key": key, "effect": "NoSchedule", "propagation": "Always" }])
}

/// The annotation naming the MachineSet preflight checks to skip.
const SKIP_PREFLIGHT: &str = "machineset.cluster.x-k8s.io/skip-preflight-checks";
const SKIP_PREFLIGHT_FIELD: &str =
    "metadata.annotations.machineset.cluster.x-k8s.io/skip-preflight-checks";

fn machine_spec(cluster: &str) -> Value {
    json!({
        "clusterName": cluster,
        "version": "v1.33.1",
        "bootstrap": { "dataSecretName": "bootstrap-data" },
        "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io",
            "kind": "DevMachine", "name": "dev" },
    })
}

fn core(kind: &str, name: &str, spec: Value) -> Value {
    json!({ "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind,
        "metadata": { "name": name }, "spec": spec })
}

fn cluster(name: &str, spec: Value) -> Value {
    let mut object = core(
        "Cluster",
        name,
        json!({
            "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevCluster", "name": name },
            "controlPlaneRef": { "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": name },
        }),
    );
    for (key, value) in spec.as_object().unwrap() {
        object["spec"][key] = value.clone();
    }
    object
}

fn machine_set_spec(labels: Value, selector: Value) -> Value {
    json!({ "clusterName": "dev", "replicas": 1, "selector": selector,
        "template": { "metadata": { "labels": labels }, "spec": machine_spec("dev") } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_rules() {
    let env = env().await;
    run(&env, vec![
        row("cluster-needs-a-reference", core("Cluster", "c1", json!({ "paused": false })), None,
            Expect::Refused(&[(FORBIDDEN, "spec")])),
        row("cluster-cidr-blocks", cluster("c2", json!({ "clusterNetwork": { "pods": { "cidrBlocks": ["10.0.0.0/16", "not-a-cidr"] },
            "services": { "cidrBlocks": ["10.96.0.0/33"] } } })), None,
            Expect::Refused(&[(INVALID, "spec.clusterNetwork.pods.cidrBlocks[1]"), (INVALID, "spec.clusterNetwork.services.cidrBlocks[0]")])),
        row("cluster-refs-cannot-be-removed", cluster("c3", json!({})),
            Some(json!({ "spec": { "controlPlaneRef": null } })),
            Expect::Refused(&[(FORBIDDEN, "spec.controlPlaneRef")])),
        row("cluster-name-is-a-label-value", cluster(&"c".repeat(64), json!({})), None,
            Expect::Refused(&[(INVALID, "metadata.name")])),
        row("cluster-topology-needs-its-gate", core("Cluster", "c5", json!({ "topology": { "classRef": { "name": "quick-start" }, "version": "1.33.1" } })), None,
            Expect::Refused(&[(FORBIDDEN, "spec.topology")])),
        row("cluster-accepted", cluster("c6", json!({ "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16", "fd00::/64"] } } })), None,
            Expect::Accepted(&[])),
    ]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_rules() {
    let env = env().await;
    let mut no_v = machine_spec("dev");
    no_v["version"] = json!("1.33.1");
    let mut banana = machine_spec("dev");
    banana["version"] = json!("banana");
    let mut no_bootstrap = machine_spec("dev");
    no_bootstrap["bootstrap"] = json!({});
    run(
        &env,
        vec![
            row(
                "machine-version-gets-its-v-and-cluster-label",
                core("Machine", "m1", no_v),
                None,
                Expect::Accepted(&[
                    ("/spec/version", "v1.33.1"),
                    ("/metadata/labels/cluster.x-k8s.io~1cluster-name", "dev"),
                ]),
            ),
            row(
                "machine-version-is-semver",
                core("Machine", "m2", banana),
                None,
                Expect::Refused(&[(INVALID, "spec.version")]),
            ),
            row(
                "machine-needs-bootstrap-data",
                core("Machine", "m3", no_bootstrap),
                None,
                Expect::Refused(&[(REQUIRED, "spec.bootstrap")]),
            ),
            row(
                "machine-cluster-name-is-immutable",
                core("Machine", "m4", machine_spec("dev")),
                Some(json!({ "spec": { "clusterName": "other" } })),
                Expect::Refused(&[(FORBIDDEN, "spec.clusterName")]),
            ),
            row(
                "machine-taints-need-their-gate",
                core("Machine", "m5", machine_spec("dev")),
                Some(json!({ "spec": { "taints": taint("example.com/a") } })),
                Expect::Refused(&[(FORBIDDEN, "spec.taints")]),
            ),
            row(
                "machine-taint-keys-not-reserved",
                core("Machine", "m6", machine_spec("dev")),
                Some(json!({ "spec": { "taints": taint("node.kubernetes.io/x") } })),
                Expect::Refused(&[(FORBIDDEN, "spec.taints"), (INVALID, "spec.taints[0].key")]),
            ),
            row(
                "machine-accepted-through-a-mergeable-update",
                core("Machine", "m7", machine_spec("dev")),
                Some(json!({ "spec": { "version": "v1.33.2" } })),
                Expect::Accepted(&[("/spec/version", "v1.33.2")]),
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_set_rules() {
    let env = env().await;
    let mut other_cluster = machine_set_spec(
        json!({ "pool": "a" }),
        json!({ "matchLabels": { "pool": "a" } }),
    );
    other_cluster["template"]["spec"]["clusterName"] = json!("other");
    let ms = |name: &str| {
        core(
            "MachineSet",
            name,
            machine_set_spec(
                json!({ "pool": "a" }),
                json!({ "matchLabels": { "pool": "a" } }),
            ),
        )
    };
    run(&env, vec![
        row("machineset-selector-matches-template", core("MachineSet", "s1",
                machine_set_spec(json!({ "pool": "a" }), json!({ "matchLabels": { "pool": "b" } }))), None,
            Expect::Refused(&[(INVALID, "spec.template.metadata.labels")])),
        row("machineset-empty-selector-defaults-to-its-name", core("MachineSet", "s2",
                machine_set_spec(json!({}), json!({}))), None,
            Expect::Accepted(&[("/spec/selector/matchLabels/cluster.x-k8s.io~1set-name", "s2"),
                ("/spec/template/metadata/labels/cluster.x-k8s.io~1set-name", "s2"),
                ("/metadata/labels/cluster.x-k8s.io~1cluster-name", "dev")])),
        row("machineset-template-in-its-cluster", core("MachineSet", "s3", other_cluster), None,
            Expect::Refused(&[(INVALID, "spec.clusterName")])),
        row("machineset-cluster-name-is-immutable", core("MachineSet", "s4",
                machine_set_spec(json!({ "pool": "a" }), json!({ "matchLabels": { "pool": "a" } }))),
            Some(json!({ "spec": { "clusterName": "other", "template": { "spec": { "clusterName": "other" } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.clusterName")])),
        row("machineset-replicas-not-negative", core("MachineSet", "s5",
                machine_set_spec(json!({ "pool": "a" }), json!({ "matchLabels": { "pool": "a" } }))),
            Some(json!({ "spec": { "replicas": -1 } })),
            Expect::Refused(&[(INVALID, ".spec.replicas")])),
        row("machineset-skipped-preflight-checks-exist", ms("s6"),
            Some(json!({ "metadata": { "annotations": { (SKIP_PREFLIGHT): "KubeadmVersionSkew, NoSuchCheck" } } })),
            Expect::Refused(&[(INVALID, SKIP_PREFLIGHT_FIELD)])),
        row("machineset-skipped-preflight-checks-accepted", ms("s7"),
            Some(json!({ "metadata": { "annotations": { (SKIP_PREFLIGHT): "All, ControlPlaneIsStable,KubernetesVersionSkew" } } })),
            Expect::Accepted(&[])),
        row("machineset-naming-template-has-random", ms("s8"),
            Some(json!({ "spec": { "machineNaming": { "template": "{{ .machineSet.name }}-x" } } })),
            Expect::Refused(&[(INVALID, "spec.machineNaming.template")])),
        row("machineset-naming-makes-object-names", ms("s9"),
            Some(json!({ "spec": { "machineNaming": { "template": "{{ .machineSet.name }}_{{ .random }}" } } })),
            Expect::Refused(&[(INVALID, "spec.machineNaming.template")])),
        row("machineset-naming-knows-its-fields", ms("s10"),
            Some(json!({ "spec": { "machineNaming": { "template": "{{ .cluster.name }}-{{ .machineSet.name }}-{{ .random }}" } } })),
            Expect::Accepted(&[])),
        row("machineset-version-is-semver", ms("s11"),
            Some(json!({ "spec": { "template": { "spec": { "version": "v1.33" } } } })),
            Expect::Refused(&[(INVALID, "spec.template.spec.version")])),
        row("machineset-template-needs-bootstrap-data", ms("s12"),
            Some(json!({ "spec": { "template": { "spec": { "bootstrap": { "dataSecretName": null } } } } })),
            Expect::Refused(&[(REQUIRED, "spec.template.spec.bootstrap")])),
        row("machineset-template-metadata-is-valid", ms("s13"),
            Some(json!({ "spec": { "template": { "metadata": { "annotations": { "-bad-": "x" } } } } })),
            Expect::Refused(&[(INVALID, "spec.template.metadata.annotations")])),
        row("machineset-taints-need-their-gate", ms("s14"),
            Some(json!({ "spec": { "template": { "spec": { "taints": taint("example.com/a") } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.template.spec.taints")])),
    ]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_deployment_rules() {
    let env = env().await;
    let md = |name: &str| {
        core(
            "MachineDeployment",
            name,
            machine_set_spec(
                json!({ "pool": "a" }),
                json!({ "matchLabels": { "pool": "a" } }),
            ),
        )
    };
    let mut autoscaled = core(
        "MachineDeployment",
        "d5",
        machine_set_spec(json!({}), json!({})),
    );
    autoscaled["spec"]
        .as_object_mut()
        .unwrap()
        .remove("replicas");
    autoscaled["metadata"]["annotations"] = json!({
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "2",
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5" });
    run(&env, vec![
        row("machinedeployment-version-is-semver", md("d1"),
            Some(json!({ "spec": { "template": { "spec": { "version": "banana" } } } })),
            Expect::Refused(&[(INVALID, "spec.template.spec.version")])),
        row("machinedeployment-cluster-name-is-immutable", md("d2"),
            Some(json!({ "spec": { "clusterName": "other", "template": { "spec": { "clusterName": "other" } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.clusterName")])),
        row("machinedeployment-selector-matches-template", md("d3"),
            Some(json!({ "spec": { "selector": { "matchLabels": { "pool": "b" } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.template.metadata.labels")])),
        row("machinedeployment-replicas-not-negative", md("d4"),
            Some(json!({ "spec": { "replicas": -1 } })),
            Expect::Refused(&[(INVALID, ".spec.replicas")])),
        row("machinedeployment-replicas-from-the-autoscaler", autoscaled, None,
            Expect::Accepted(&[("/spec/selector/matchLabels/cluster.x-k8s.io~1deployment-name", "d5"),
                ("/spec/selector/matchLabels/cluster.x-k8s.io~1cluster-name", "dev"),
                ("/spec/template/metadata/labels/cluster.x-k8s.io~1cluster-name", "dev")])),
        row("machinedeployment-rollout-bounds", md("d6"),
            Some(json!({ "spec": { "rollout": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "5", "maxUnavailable": 0 } } } } })),
            Expect::Refused(&[(INVALID, "spec.rollout.strategy.rollingUpdate.maxSurge")])),
        row("machinedeployment-bounds-not-both-0", md("d8"),
            Some(json!({ "spec": { "rollout": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 0, "maxUnavailable": 0 } } } } })),
            Expect::Refused(&[(INVALID, "spec.rollout.strategy.rollingUpdate")])),
        row("machinedeployment-naming-template-has-random", md("d7"),
            Some(json!({ "spec": { "machineNaming": { "template": "{{ .machineSet.name }}-x" } } })),
            Expect::Refused(&[(INVALID, "spec.machineNaming.template")])),
        row("machinedeployment-naming-makes-object-names", md("d9"),
            Some(json!({ "spec": { "machineNaming": { "template": "{{ .machineSet.name }}-{{ .random }}-" } } })),
            Expect::Refused(&[(INVALID, "spec.machineNaming.template")])),
        row("machinedeployment-name-is-a-label-value", md(&"d".repeat(64)), None,
            Expect::Refused(&[(INVALID, "metadata.name")])),
        row("machinedeployment-skipped-preflight-checks-exist", md("d10"),
            Some(json!({ "metadata": { "annotations": { (SKIP_PREFLIGHT): "Everything" } } })),
            Expect::Refused(&[(INVALID, SKIP_PREFLIGHT_FIELD)])),
        row("machinedeployment-taints-need-their-gate", md("d11"),
            Some(json!({ "spec": { "template": { "spec": { "taints": taint("node-role.kubernetes.io/master") } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.template.spec.taints"), (INVALID, "spec.template.spec.taints[0].key")])),
        row("machinedeployment-remediation-bound", md("d12"),
            Some(json!({ "spec": { "remediation": { "maxInFlight": "ten" } } })),
            Expect::Refused(&[(INVALID, "spec.remediation.maxInFlight")])),
    ]).await;
    let replicas = api(&env, &md("d5")).get("d5").await.unwrap().data["spec"]["replicas"].clone();
    assert_eq!(replicas, 2, "replicas start at the autoscaler's minimum");

    // The scale subresource refuses a negative count too.
    let status = refusal(
        api(&env, &md("d1"))
            .patch_scale(
                "d1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "replicas": -1 } })),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        causes(&status),
        [(INVALID.to_string(), ".spec.replicas".to_string())],
        "{status}"
    );
}

fn control_plane(name: &str, replicas: i64) -> Value {
    json!({ "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
        "metadata": { "name": name },
        "spec": { "replicas": replicas, "version": "v1.33.1",
            "machineTemplate": { "spec": { "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "DevMachineTemplate", "name": "control-plane" } } } } })
}

/// `object` with its ClusterConfiguration's fields set from `configuration`.
fn with_cluster_configuration(mut object: Value, configuration: Value) -> Value {
    object["spec"]["kubeadmConfigSpec"]["clusterConfiguration"] = configuration;
    object
}

fn control_plane_template(name: &str, spec: Value) -> Value {
    json!({ "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlaneTemplate",
        "metadata": { "name": name }, "spec": { "template": { "spec": spec } } })
}

fn kubeadm_config(kind: &str, name: &str, spec: Value) -> Value {
    let spec = if kind == "KubeadmConfigTemplate" {
        json!({ "template": { "spec": spec } })
    } else {
        spec
    };
    json!({ "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": kind,
        "metadata": { "name": name }, "spec": spec })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeadm_rules() {
    let env = env().await;
    let both_sources = json!({ "files": [{ "path": "/etc/a", "content": "a",
        "contentFrom": { "secret": { "name": "s", "key": "k" } } }] });
    let same_path = json!({ "files": [{ "path": "/etc/a", "content": "a" }, { "path": "/etc/a", "content": "b" }] });
    run(&env, vec![
        row("kcp-even-replicas-with-stacked-etcd", control_plane("k1", 2), None,
            Expect::Refused(&[(FORBIDDEN, "spec.replicas")])),
        row("kcp-version-skips-no-minor", control_plane("k2", 3),
            Some(json!({ "spec": { "version": "v1.35.0" } })),
            Expect::Refused(&[(FORBIDDEN, "spec.version")])),
        row("kcp-version-may-go-down", control_plane("k3", 3),
            Some(json!({ "spec": { "version": "1.32.0" } })),
            Expect::Accepted(&[("/spec/version", "v1.32.0")])),
        row("kcp-only-listed-fields-change", control_plane("k4", 3),
            Some(json!({ "spec": { "kubeadmConfigSpec": { "clusterConfiguration": { "certificatesDir": "/x" } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.kubeadmConfigSpec.clusterConfiguration.certificatesDir")])),
        row("kcp-replicas-not-negative", control_plane("k5", 3),
            Some(json!({ "spec": { "replicas": -1 } })),
            Expect::Refused(&[(INVALID, ".spec.replicas")])),
        row("kcp-version-that-does-not-parse", control_plane("k6", 3),
            Some(json!({ "spec": { "version": "banana" } })),
            Expect::Refused(&[(INVALID, "spec.version"), (INTERNAL, "spec.version")])),
        row("kcp-coredns-tag-is-a-version", with_cluster_configuration(control_plane("k7", 3),
                json!({ "dns": { "imageTag": "latest" } })), None,
            Expect::Refused(&[(INVALID, "dns.imageTag")])),
        row("kcp-coredns-tag-is-an-image-tag", with_cluster_configuration(control_plane("k8", 3),
                json!({ "dns": { "imageTag": "v1.11.1+build" } })), None,
            Expect::Refused(&[(FORBIDDEN, "spec.kubeadmConfigSpec.clusterConfiguration.dns.imageTag")])),
        row("kcp-etcd-tag-is-an-image-tag", with_cluster_configuration(control_plane("k9", 3),
                json!({ "etcd": { "local": { "imageTag": "3.5.0+x" } } })), None,
            Expect::Refused(&[(FORBIDDEN, "spec.kubeadmConfigSpec.clusterConfiguration.etcd.local.imageTag")])),
        row("kcp-coredns-migrates-only-up", with_cluster_configuration(control_plane("k10", 3),
                json!({ "dns": { "imageTag": "v1.10.1" } })),
            Some(json!({ "spec": { "kubeadmConfigSpec": { "clusterConfiguration": { "dns": { "imageTag": "v1.9.4" } } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.kubeadmConfigSpec.clusterConfiguration.dns.imageTag")])),
        row("kcp-coredns-migrates-from-a-known-version", with_cluster_configuration(control_plane("k11", 3),
                json!({ "dns": { "imageTag": "v1.6.8" } })),
            Some(json!({ "spec": { "kubeadmConfigSpec": { "clusterConfiguration": { "dns": { "imageTag": "v1.7.0" } } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.kubeadmConfigSpec.clusterConfiguration.dns.imageTag")])),
        row("kcp-coredns-migrates-up", with_cluster_configuration(control_plane("k12", 3),
                json!({ "dns": { "imageTag": "v1.10.1" } })),
            Some(json!({ "spec": { "kubeadmConfigSpec": { "clusterConfiguration": { "dns": { "imageTag": "v1.11.1_build.1" } } } } })),
            Expect::Accepted(&[("/spec/kubeadmConfigSpec/clusterConfiguration/dns/imageTag", "v1.11.1_build.1")])),
        row("kcp-coredns-skip-annotation", with_cluster_configuration(control_plane("k13", 3),
                json!({ "dns": { "imageTag": "v1.10.1" } })),
            Some(json!({ "metadata": { "annotations": { "controlplane.cluster.x-k8s.io/skip-coredns": "" } },
                "spec": { "kubeadmConfigSpec": { "clusterConfiguration": { "dns": { "imageTag": "v1.99.0" } } } } })),
            Expect::Accepted(&[])),
        row("kcp-taints-need-their-gate", control_plane("k14", 3),
            Some(json!({ "spec": { "machineTemplate": { "spec": { "taints": taint("example.com/a") } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.machineTemplate.spec.taints")])),
        row("kcp-naming-makes-object-names", control_plane("k15", 3),
            Some(json!({ "spec": { "machineNaming": { "template": "{{ .kubeadmControlPlane.name }}.{{ .random }}." } } })),
            Expect::Refused(&[(INVALID, "spec.machineNaming.template")])),
        row("kcp-naming-knows-its-fields", control_plane("k16", 3),
            Some(json!({ "spec": { "machineNaming": { "template": "{{ .machineSet.name }}-{{ .random }}" } } })),
            Expect::Refused(&[(INVALID, "spec.machineNaming.template")])),
        row("kcp-max-surge-0-needs-three-replicas", control_plane("k17", 1),
            Some(json!({ "spec": { "rollout": { "strategy": { "rollingUpdate": { "maxSurge": 0 } } } } })),
            Expect::Refused(&[(REQUIRED, "spec.rollout.strategy.rollingUpdate")])),
        row("kcp-certificates-outlive-no-ca", with_cluster_configuration(control_plane("k18", 3),
                json!({ "certificateValidityPeriodDays": 1000, "caCertificateValidityPeriodDays": 500 })), None,
            Expect::Refused(&[(INVALID, "spec.kubeadmConfigSpec.clusterConfiguration.certificateValidityPeriodDays")])),
        row("kcp-etcd-never-switches", control_plane("k19", 3),
            Some(json!({ "spec": { "kubeadmConfigSpec": { "clusterConfiguration": { "etcd": { "external": {
                "endpoints": ["https://etcd:2379"], "caFile": "/ca", "certFile": "/cert", "keyFile": "/key" } } } } } })),
            Expect::Refused(&[(FORBIDDEN, "spec.kubeadmConfigSpec.clusterConfiguration.etcd.external")])),
        row("kcp-template-spec-is-immutable", control_plane_template("kt1", json!({ "kubeadmConfigSpec": { "format": "cloud-config" } })),
            Some(json!({ "spec": { "template": { "spec": { "machineNaming": { "template": "{{ .kubeadmControlPlane.name }}-{{ .random }}" } } } } })),
            Expect::Refused(&[(INVALID, "spec.template.spec")])),
        row("kcp-template-rollout", control_plane_template("kt2",
                json!({ "rollout": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 2 } } } })), None,
            Expect::Refused(&[(REQUIRED, "spec.template.spec.rollout.strategy.rollingUpdate.maxSurge")])),
        row("kcp-template-coredns-tag", control_plane_template("kt3",
                json!({ "kubeadmConfigSpec": { "clusterConfiguration": { "dns": { "imageTag": "v1.11.1+build" } } } })), None,
            Expect::Refused(&[(FORBIDDEN, "spec.template.spec.kubeadmConfigSpec.clusterConfiguration.dns.imageTag")])),
        row("kcp-template-naming", control_plane_template("kt4",
                json!({ "machineNaming": { "template": "{{ .kubeadmControlPlane.name }}" } })), None,
            Expect::Refused(&[(INVALID, "spec.template.spec.machineNaming.template")])),
        row("kcp-template-kubeadm-config-spec", control_plane_template("kt5",
                json!({ "kubeadmConfigSpec": { "files": [{ "path": "/a", "content": "a" }, { "path": "/a", "content": "b" }] } })), None,
            Expect::Refused(&[(INVALID, "spec.template.spec.kubeadmConfigSpec.files[1].path")])),
        row("kcp-template-metadata", control_plane_template("kt6",
                json!({ "machineTemplate": { "metadata": { "labels": { "a": "-x-" } } } })), None,
            Expect::Refused(&[(INVALID, "spec.template.spec.machineTemplate.metadata.labels")])),
        row("kcp-template-accepted", control_plane_template("kt7",
                json!({ "rollout": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1 } } } })), None,
            Expect::Accepted(&[])),
        row("kubeadmconfig-one-source-per-file", kubeadm_config("KubeadmConfig", "b1", both_sources), None,
            Expect::Refused(&[(INVALID, "spec.files[0]")])),
        row("kubeadmconfig-unique-file-paths", kubeadm_config("KubeadmConfig", "b2", same_path.clone()), None,
            Expect::Refused(&[(INVALID, "spec.files[1].path")])),
        row("kubeadmconfig-one-password-source", kubeadm_config("KubeadmConfig", "b3", json!({ "users": [{ "name": "u",
                "passwd": "x", "passwdFrom": { "secret": { "name": "s", "key": "k" } } }] })), None,
            Expect::Refused(&[(INVALID, "spec.users[0]")])),
        row("kubeadmconfig-ignition-needs-its-format", kubeadm_config("KubeadmConfig", "b4",
                json!({ "ignition": { "containerLinuxConfig": { "strict": true } } })), None,
            Expect::Refused(&[(INVALID, "spec.format")])),
        row("kubeadmconfigtemplate-unique-file-paths", kubeadm_config("KubeadmConfigTemplate", "t1", same_path), None,
            Expect::Refused(&[(INVALID, "spec.template.spec.files[1].path")])),
        row("kubeadmconfig-ignition-users-are-active", kubeadm_config("KubeadmConfig", "b5",
                json!({ "format": "ignition", "users": [{ "name": "u", "inactive": true }] })), None,
            Expect::Refused(&[(FORBIDDEN, "spec.users[0].inactive")])),
        row("kubeadmconfig-ignition-files-not-gzipped", kubeadm_config("KubeadmConfig", "b6",
                json!({ "format": "ignition", "files": [{ "path": "/a", "content": "a", "encoding": "gzip" }] })), None,
            Expect::Refused(&[(FORBIDDEN, "spec.files[0].encoding")])),
        row("kubeadmconfig-ignition-no-boot-commands", kubeadm_config("KubeadmConfig", "b7",
                json!({ "format": "ignition", "bootCommands": ["echo"] })), None,
            Expect::Refused(&[(FORBIDDEN, "spec.bootCommands")])),
        row("kubeadmconfig-disk-layout-percentages", kubeadm_config("KubeadmConfig", "b8",
                json!({ "diskSetup": { "partitions": [{ "device": "/dev/sda",
                    "diskLayout": [{ "percentage": 60 }, { "percentage": 50 }] }] } })), None,
            Expect::Refused(&[(INVALID, "spec.diskSetup.partitions[0].diskLayout")])),
        row("kubeadmconfig-accepted", kubeadm_config("KubeadmConfig", "b9",
                json!({ "files": [{ "path": "/etc/a", "contentFrom": { "secret": { "name": "s", "key": "k" } } }],
                    "users": [{ "name": "u", "passwdFrom": { "secret": { "name": "s", "key": "k" } } }] })), None,
            Expect::Accepted(&[])),
    ]).await;
}

/// A KubeadmControlPlane's `/scale` runs upstream's `ScaleValidator`: zero or an even count
/// with stacked etcd is denied as its webhook denies (403, the webhook named), and nothing
/// changes; an odd count is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeadm_control_plane_scale_rules() {
    let env = env().await;
    let object = control_plane("ks1", 3);
    let api = api(&env, &object);
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(object).unwrap(),
        )
        .await
        .unwrap();
    for (replicas, message) in [
        (2, "replicas cannot be an even number when etcd is stacked"),
        (0, "replicas should be greater than zero"),
    ] {
        let status = refusal(
            api.patch_scale(
                "ks1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "replicas": replicas } })),
            )
            .await
            .unwrap_err(),
        );
        assert_eq!(status["code"], 403, "{status}");
        assert_eq!(status["reason"], "Forbidden", "{status}");
        assert_eq!(
            status["message"],
            format!(
                "admission webhook \"validation-scale.kubeadmcontrolplane.controlplane.cluster.x-k8s.io\" denied the request: {message}"
            ),
            "{status}"
        );
        let now = api.get("ks1").await.unwrap();
        assert_eq!(
            now.metadata.resource_version,
            created.metadata.resource_version
        );
    }
    api.patch_scale(
        "ks1",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "replicas": 5 } })),
    )
    .await
    .unwrap();
    assert_eq!(api.get("ks1").await.unwrap().data["spec"]["replicas"], 5);
}

fn health_check(name: &str, spec: Value) -> Value {
    let mut object = core(
        "MachineHealthCheck",
        name,
        json!({ "clusterName": "dev", "selector": { "matchLabels": { "pool": "a" } } }),
    );
    for (key, value) in spec.as_object().unwrap() {
        object["spec"][key] = value.clone();
    }
    object
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_health_check_rules() {
    let env = env().await;
    run(&env, vec![
        row("machinehealthcheck-selector-not-empty", health_check("h1", json!({ "selector": {} })), None,
            Expect::Refused(&[(REQUIRED, "spec.selector")])),
        row("machinehealthcheck-selector-in-its-cluster", health_check("h2",
                json!({ "selector": { "matchLabels": { "cluster.x-k8s.io/cluster-name": "other" } } })), None,
            Expect::Refused(&[(INVALID, "spec.selector")])),
        row("machinehealthcheck-cluster-name-is-immutable", health_check("h3", json!({})),
            Some(json!({ "spec": { "clusterName": "other" } })),
            Expect::Refused(&[(FORBIDDEN, "spec.clusterName")])),
        row("machinehealthcheck-node-startup-timeout", health_check("h4",
                json!({ "checks": { "nodeStartupTimeoutSeconds": 10 } })), None,
            Expect::Refused(&[(INVALID, "spec.checks.nodeStartupTimeoutSeconds")])),
        row("machinehealthcheck-unhealthy-bound", health_check("h5",
                json!({ "remediation": { "triggerIf": { "unhealthyLessThanOrEqualTo": "40" } } })), None,
            Expect::Refused(&[(INVALID, "spec.remediation.triggerIf.unhealthyLessThanOrEqualTo")])),
        row("machinehealthcheck-defaults", health_check("h6", json!({})), None,
            Expect::Accepted(&[("/metadata/labels/cluster.x-k8s.io~1cluster-name", "dev")])),
    ]).await;
}

fn dev_template(kind: &str, name: &str) -> Value {
    json!({ "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": kind,
        "metadata": { "name": name },
        "spec": { "template": { "spec": { "backend": { "inMemory": {} } } } } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_template_rules() {
    let env = env().await;
    let mut bad_labels = dev_template("DevMachineTemplate", "i3");
    bad_labels["spec"]["template"]["metadata"] = json!({ "labels": { "a": "-not-a-value-" } });
    run(&env, vec![
        row("devmachinetemplate-spec-is-immutable", dev_template("DevMachineTemplate", "i1"),
            Some(json!({ "spec": { "template": { "spec": { "providerID": "in-memory://x" } } } })),
            Expect::Refused(&[(INVALID, "spec.template.spec")])),
        row("devclustertemplate-spec-is-immutable", dev_template("DevClusterTemplate", "i2"),
            Some(json!({ "spec": { "template": { "spec": { "controlPlaneEndpoint": { "host": "h", "port": 6443 } } } } })),
            Expect::Refused(&[(INVALID, "spec.template.spec")])),
        row("devmachinetemplate-metadata-is-valid", bad_labels, None,
            Expect::Refused(&[(INVALID, "spec.template.metadata.labels")])),
    ]).await;
}
