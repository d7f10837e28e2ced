//! Upstream's kubeadm webhooks (`controlplane/kubeadm/webhooks/admission/`,
//! `bootstrap/kubeadm/webhooks/admission/`) as `api::admission` and the schema defaults, through
//! a real API server that runs them: defaults are applied, bad objects are refused with
//! upstream's 422 (field, error type, message), good ones are accepted, and upstream-shaped
//! manifests round-trip through the Rust types.

use corral_kubeadm::api::bootstrap::{Format, KubeadmConfig};
use corral_kubeadm::api::controlplane::KubeadmControlPlane;
use corral_testenv::TestEnv;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// A management plane whose API server runs the kubeadm kinds' admission rules, as the binary's
/// does.
async fn env() -> TestEnv {
    let env = TestEnv::with_admission(corral_kubeadm::api::admission::rules()).await;
    let crds: Vec<Value> = corral_kubeadm::crds()
        .into_iter()
        .map(|crd| serde_json::to_value(crd).unwrap())
        .collect();
    env.install_crds(&crds).await;
    env
}

fn api(env: &TestEnv, manifest: &Value) -> Api<DynamicObject> {
    let api_version = manifest["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap();
    let kind = manifest["kind"].as_str().unwrap();
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    };
    Api::namespaced_with(env.client.clone(), "default", &resource)
}

async fn create(env: &TestEnv, manifest: &Value) -> Result<DynamicObject, kube::Error> {
    let object: DynamicObject = serde_json::from_value(manifest.clone()).unwrap();
    api(env, manifest)
        .create(&PostParams::default(), &object)
        .await
}

/// The message of a refused write, which must be a 422 Invalid.
fn refusal(result: Result<DynamicObject, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{}", status.message);
            status.message
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn control_plane(name: &str, replicas: Option<i64>, spec: Value) -> Value {
    let mut manifest = json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
        "kind": "KubeadmControlPlane",
        "metadata": { "name": name },
        "spec": {
            "version": "v1.33.1",
            "machineTemplate": {
                "spec": {
                    "infrastructureRef": {
                        "apiGroup": "infrastructure.cluster.x-k8s.io",
                        "kind": "DevMachineTemplate",
                        "name": "control-plane",
                    },
                },
            },
        },
    });
    if let Some(replicas) = replicas {
        manifest["spec"]["replicas"] = json!(replicas);
    }
    for (key, value) in spec.as_object().unwrap() {
        manifest["spec"][key] = value.clone();
    }
    manifest
}

#[tokio::test]
async fn a_control_plane_gets_upstreams_webhook_defaults() {
    let env = env().await;
    let created = create(&env, &control_plane("defaults", None, json!({})))
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["replicas"], 1);
    assert_eq!(
        created.data["spec"]["rollout"],
        json!({ "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1 } } })
    );
    let typed: KubeadmControlPlane =
        serde_json::from_value(serde_json::to_value(&created).unwrap()).unwrap();
    assert_eq!(typed.spec.replicas, Some(1));
}

#[tokio::test]
async fn even_replicas_are_refused_with_stacked_etcd_and_accepted_with_external_etcd() {
    let env = env().await;
    let message = refusal(create(&env, &control_plane("even", Some(2), json!({}))).await);
    assert_eq!(
        message,
        "KubeadmControlPlane.controlplane.cluster.x-k8s.io \"even\" is invalid: spec.replicas: Forbidden: cannot be an even number when etcd is stacked"
    );
    let external = json!({ "kubeadmConfigSpec": { "clusterConfiguration": { "etcd": {
        "external": { "endpoints": ["https://etcd:2379"], "caFile": "/ca.crt",
                      "certFile": "/etcd.crt", "keyFile": "/etcd.key" } } } } });
    create(&env, &control_plane("even-external", Some(2), external))
        .await
        .expect("even replicas with external etcd are accepted");
    let message = refusal(create(&env, &control_plane("zero", Some(0), json!({}))).await);
    assert!(
        message.contains("spec.replicas: Forbidden: cannot be less than or equal to 0"),
        "{message}"
    );
}

#[tokio::test]
async fn max_surge_is_0_or_1_and_0_needs_three_replicas() {
    let env = env().await;
    let surge = |max_surge: Value| {
        json!({ "rollout": { "strategy": { "type": "RollingUpdate",
            "rollingUpdate": { "maxSurge": max_surge } } } })
    };
    let message = refusal(create(&env, &control_plane("surge-2", Some(3), surge(json!(2)))).await);
    assert!(
        message.ends_with(
            "spec.rollout.strategy.rollingUpdate.maxSurge: Required value: value must be 1 or 0"
        ),
        "{message}"
    );
    let message =
        refusal(create(&env, &control_plane("surge-0-1", Some(1), surge(json!(0)))).await);
    assert!(
        message.ends_with("spec.rollout.strategy.rollingUpdate: Required value: when KubeadmControlPlane is configured to scale-in, replica count needs to be at least 3"),
        "{message}"
    );
    create(&env, &control_plane("surge-0-3", Some(3), surge(json!(0))))
        .await
        .expect("maxSurge 0 with 3 replicas is accepted");
}

#[tokio::test]
async fn the_version_skips_no_minor_version_and_may_go_down_as_upstream() {
    let env = env().await;
    let manifest = control_plane("upgrade", Some(3), json!({}));
    create(&env, &manifest).await.unwrap();
    let api = api(&env, &manifest);
    let set_version = |version: &str| Patch::Merge(json!({ "spec": { "version": version } }));
    let params = PatchParams::default();
    let message = refusal(api.patch("upgrade", &params, &set_version("v1.35.0")).await);
    assert!(
        message.ends_with(
            "spec.version: Forbidden: cannot update Kubernetes version from v1.33.1 to v1.35.0"
        ),
        "{message}"
    );
    let unchanged = api.get("upgrade").await.unwrap();
    assert_eq!(
        unchanged.data["spec"]["version"], "v1.33.1",
        "a refused write changes nothing"
    );
    let upgraded = api
        .patch("upgrade", &params, &set_version("1.34.0"))
        .await
        .expect("an upgrade by one minor version is accepted");
    assert_eq!(
        upgraded.data["spec"]["version"], "v1.34.0",
        "the v is defaulted"
    );
    api.patch("upgrade", &params, &set_version("v1.33.2"))
        .await
        .expect("upstream's webhook lets the version go down");
    let mut not_semver = control_plane("not-semver", Some(1), json!({}));
    not_semver["spec"]["version"] = json!("vlatest");
    let message = refusal(create(&env, &not_semver).await);
    assert!(
        message.ends_with(
            "spec.version: Invalid value: \"vlatest\": must be a valid semantic version"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn only_upstreams_list_of_fields_may_change() {
    let env = env().await;
    let manifest = control_plane("frozen", Some(1), json!({}));
    create(&env, &manifest).await.unwrap();
    let api = api(&env, &manifest);
    let params = PatchParams::default();
    let change = json!({ "spec": { "kubeadmConfigSpec": { "clusterConfiguration": {
        "certificatesDir": "/elsewhere", "apiServer": { "certSANs": ["cp.example.com"] } } } } });
    let message = refusal(api.patch("frozen", &params, &Patch::Merge(change)).await);
    assert!(
        message.ends_with("spec.kubeadmConfigSpec.clusterConfiguration.certificatesDir: Forbidden: cannot be modified"),
        "{message}"
    );
    let allowed = json!({ "spec": { "replicas": 3, "kubeadmConfigSpec": { "clusterConfiguration": {
        "apiServer": { "certSANs": ["cp.example.com"] } } } } });
    api.patch("frozen", &params, &Patch::Merge(allowed))
        .await
        .expect("replicas and the API server's settings may change");
}

#[tokio::test]
async fn a_kubeadm_config_has_one_source_per_file_and_unique_paths() {
    let env = env().await;
    let manifest = json!({
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
        "kind": "KubeadmConfig",
        "metadata": { "name": "files" },
        "spec": { "files": [
            { "path": "/etc/a", "content": "a",
              "contentFrom": { "secret": { "name": "s", "key": "k" } } },
            { "path": "/etc/a", "content": "b" },
        ] },
    });
    let message = refusal(create(&env, &manifest).await);
    assert!(
        message.contains("spec.files[0]: Invalid value: "),
        "{message}"
    );
    assert!(
        message.contains(": only one of content or contentFrom may be specified for a single file"),
        "{message}"
    );
    assert!(
        message.contains("spec.files[1].path: Invalid value: "),
        "{message}"
    );
    assert!(
        message.contains(": path property must be unique among all files"),
        "{message}"
    );
}

#[tokio::test]
async fn an_upstream_kubeadm_config_round_trips_and_a_bad_format_is_refused() {
    let env = env().await;
    let manifest: Value = serde_yaml::from_str(
        r#"
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfig
metadata:
  name: worker
spec:
  format: cloud-config
  joinConfiguration:
    nodeRegistration:
      kubeletExtraArgs:
        - name: eviction-hard
          value: nodefs.available<0%
      taints: []
  files:
    - path: /etc/motd
      content: hello
      permissions: "0644"
    - path: /etc/secret
      contentFrom:
        secret:
          name: my-secret
          key: data
      encoding: base64
  preKubeadmCommands: ["echo pre"]
  postKubeadmCommands: ["echo post"]
  users:
    - name: ops
      sshAuthorizedKeys: ["ssh-ed25519 AAAA"]
      sudo: ALL=(ALL) NOPASSWD:ALL
  ntp:
    enabled: true
    servers: ["time.example.com"]
  mounts:
    - ["/dev/sdb", "/data"]
  verbosity: 5
"#,
    )
    .unwrap();
    let created = create(&env, &manifest)
        .await
        .expect("the manifest is accepted");
    assert_eq!(
        created.data["spec"], manifest["spec"],
        "nothing pruned or defaulted"
    );
    let typed: KubeadmConfig =
        serde_json::from_value(serde_json::to_value(&created).unwrap()).unwrap();
    assert_eq!(typed.spec.format, Some(Format::CloudConfig));
    assert_eq!(typed.spec.files.len(), 2);
    assert_eq!(serde_json::to_value(&typed.spec).unwrap(), manifest["spec"]);

    let mut bad = manifest.clone();
    bad["metadata"]["name"] = json!("bad-format");
    bad["spec"]["format"] = json!("yaml");
    let message = refusal(create(&env, &bad).await);
    assert!(message.contains("spec.format"), "{message}");
    assert!(message.contains("cloud-config"), "{message}");

    let mut duplicated = manifest.clone();
    duplicated["metadata"]["name"] = json!("duplicated-args");
    duplicated["spec"]["joinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"] =
        json!([{ "name": "v", "value": "1" }, { "name": "v", "value": "2" }]);
    let message = refusal(create(&env, &duplicated).await);
    assert!(
        message.contains("kubeletExtraArgs name must be unique"),
        "{message}"
    );
}

#[tokio::test]
async fn a_kubeadm_config_without_spec_is_accepted_and_reads_back_typed() {
    // Upstream accepts a KubeadmConfig without spec (a worker joining with kubeadm's defaults);
    // the typed watch of the bootstrap controller must read it.
    let env = env().await;
    let manifest = json!({
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
        "kind": "KubeadmConfig",
        "metadata": { "name": "defaults" },
    });
    create(&env, &manifest)
        .await
        .expect("accepted without spec");
    let configs: Api<KubeadmConfig> = Api::namespaced(env.client.clone(), "default");
    let listed = configs
        .list(&Default::default())
        .await
        .expect("the typed list reads it");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].spec, Default::default());
}
