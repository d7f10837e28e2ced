//! Manifests written for upstream's in-memory backend apply unchanged to an API server with the
//! Dev* CRDs installed; a docker backend and provisioning settings that do not parse are refused,
//! with messages that say what to do.

use corral_testenv::TestEnv;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::Value;

/// Manifests in the shapes of upstream's v1beta2 Dev* CRDs, as upstream's in-memory e2e
/// templates and ClusterClasses write them (`test/e2e/data/infrastructure-docker/main`).
const UPSTREAM_MANIFESTS: &str = r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevCluster
metadata:
  name: in-memory
  labels:
    cluster.x-k8s.io/cluster-name: in-memory
spec:
  backend:
    inMemory: {}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevCluster
metadata:
  name: in-memory-with-endpoint
spec:
  controlPlaneEndpoint:
    host: 10.0.0.1
    port: 6443
  backend:
    inMemory: {}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevClusterTemplate
metadata:
  name: in-memory-cluster
spec:
  template:
    metadata:
      labels:
        ClusterClass.infrastructure.label: value
    spec:
      backend:
        inMemory: {}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachineTemplate
metadata:
  name: in-memory-control-plane
spec:
  template:
    spec:
      backend:
        inMemory:
          vm:
            provisioning:
              startupDuration: "10s"
              startupJitter: "0.2"
          node:
            provisioning:
              startupDuration: "2s"
              startupJitter: "0.2"
          apiServer:
            provisioning:
              startupDuration: "2s"
              startupJitter: "0.2"
          etcd:
            provisioning:
              startupDuration: "2s"
              startupJitter: "0.2"
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachineTemplate
metadata:
  name: in-memory-worker
spec:
  template:
    spec:
      backend:
        inMemory:
          vm:
            provisioning:
              startupDuration: "1m30s"
          node:
            provisioning:
              startupDuration: "0"
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachine
metadata:
  name: in-memory-md-0-abcde
  labels:
    cluster.x-k8s.io/cluster-name: in-memory
  annotations:
    cluster.x-k8s.io/cloned-from-name: in-memory-worker
    cluster.x-k8s.io/cloned-from-groupkind: DevMachineTemplate.infrastructure.cluster.x-k8s.io
spec:
  providerID: in-memory://in-memory-md-0-abcde
  backend:
    inMemory:
      vm:
        provisioning:
          startupDuration: "1.5s"
          startupJitter: ".5"
      node: {}
"#;

fn resource(kind: &str) -> ApiResource {
    let plural = format!("{}s", kind.to_lowercase());
    ApiResource {
        group: "infrastructure.cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "infrastructure.cluster.x-k8s.io/v1beta2".into(),
        kind: kind.into(),
        plural,
    }
}

async fn env() -> TestEnv {
    let env = TestEnv::start().await;
    let crds: Vec<Value> = corral_infra_inmemory::crds()
        .into_iter()
        .map(|crd| serde_json::to_value(crd).unwrap())
        .collect();
    env.install_crds(&crds).await;
    env
}

async fn create(env: &TestEnv, manifest: &Value) -> Result<DynamicObject, kube::Error> {
    let kind = manifest["kind"].as_str().unwrap();
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), "default", &resource(kind));
    let object: DynamicObject = serde_json::from_value(manifest.clone()).unwrap();
    api.create(&PostParams::default(), &object).await
}

fn documents(text: &str) -> Vec<Value> {
    text.split("\n---\n")
        .map(|document| serde_yaml::from_str(document).unwrap())
        .collect()
}

#[tokio::test]
async fn upstream_in_memory_manifests_are_accepted_unchanged() {
    let env = env().await;
    for manifest in documents(UPSTREAM_MANIFESTS) {
        let name = format!("{} {}", manifest["kind"], manifest["metadata"]["name"]);
        let created = create(&env, &manifest)
            .await
            .unwrap_or_else(|error| panic!("{name} is refused: {error}"));
        // Nothing was pruned or defaulted away.
        assert_eq!(created.data["spec"], manifest["spec"], "{name}");
        // The typed view reads it too.
        let json = serde_json::to_value(&created).unwrap();
        match manifest["kind"].as_str().unwrap() {
            "DevCluster" => drop(
                serde_json::from_value::<corral_infra_inmemory::api::DevCluster>(json).unwrap(),
            ),
            "DevClusterTemplate" => drop(
                serde_json::from_value::<corral_infra_inmemory::api::DevClusterTemplate>(json)
                    .unwrap(),
            ),
            "DevMachine" => drop(
                serde_json::from_value::<corral_infra_inmemory::api::DevMachine>(json).unwrap(),
            ),
            "DevMachineTemplate" => drop(
                serde_json::from_value::<corral_infra_inmemory::api::DevMachineTemplate>(json)
                    .unwrap(),
            ),
            other => panic!("unexpected kind {other}"),
        }
    }
}

/// The message of a refused create, which must be a 422 Invalid.
async fn refusal(env: &TestEnv, manifest: &str) -> String {
    let manifest: Value = serde_yaml::from_str(manifest).unwrap();
    match create(env, &manifest).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{}", status.message);
            status.message
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_docker_backend_is_refused_with_a_message_that_says_what_to_use() {
    let env = env().await;
    let expected =
        "backend.docker is not supported by Corral's in-memory provider; use backend.inMemory";
    let message = refusal(
        &env,
        r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevCluster
metadata:
  name: docker
spec:
  backend:
    docker:
      loadBalancer:
        imageRepository: kindest
"#,
    )
    .await;
    assert!(message.contains(expected), "{message}");
    assert!(message.contains("spec.backend"), "{message}");

    let message = refusal(
        &env,
        r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachineTemplate
metadata:
  name: docker
spec:
  template:
    spec:
      backend:
        docker:
          extraMounts:
          - containerPath: /var/run/docker.sock
            hostPath: /var/run/docker.sock
"#,
    )
    .await;
    assert!(message.contains(expected), "{message}");
    assert!(message.contains("spec.template.spec.backend"), "{message}");
}

#[tokio::test]
async fn a_backend_must_be_given() {
    let env = env().await;
    let message = refusal(
        &env,
        r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachine
metadata:
  name: no-backend
spec:
  backend: {}
"#,
    )
    .await;
    assert!(
        message.contains("backend.inMemory is required"),
        "{message}"
    );
}

#[tokio::test]
async fn provisioning_settings_that_do_not_parse_are_refused_with_the_field_named() {
    let env = env().await;
    let message = refusal(
        &env,
        r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachine
metadata:
  name: bad-duration
spec:
  backend:
    inMemory:
      vm:
        provisioning:
          startupDuration: "10 seconds"
"#,
    )
    .await;
    assert!(
        message.contains("spec.backend.inMemory.vm.provisioning.startupDuration"),
        "{message}"
    );
    let message = refusal(
        &env,
        r#"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DevMachine
metadata:
  name: bad-jitter
spec:
  backend:
    inMemory:
      node:
        provisioning:
          startupDuration: 2s
          startupJitter: "-0.5"
"#,
    )
    .await;
    assert!(
        message.contains("spec.backend.inMemory.node.provisioning.startupJitter"),
        "{message}"
    );
}
