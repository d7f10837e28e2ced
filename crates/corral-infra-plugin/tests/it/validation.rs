//! Typed validation of `spec.config` at admission, through kubectl: the webhook served as
//! `corral controllers` serves it (HTTPS with its own certificate, registered in the
//! ValidatingWebhookConfiguration), the Python example provider as a process (its machine
//! schema: `pool`, `profile` enum, `disks[].sizeGiB` required, no unknown fields; its
//! ValidateConfig: at most 1000 GiB of disks). Every field error comes back in one 422 naming
//! its path under `spec.config`; a plugin that is down refuses, unless its ProviderPlugin
//! says `failurePolicy: Ignore`; a valid object is created.

use std::io::Write as _;
use std::process::Stdio;

use corral_infra_plugin::admission::{WebhookServer, install_configuration, register};
use corral_testenv::TestEnv;
use futures::FutureExt;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};

use super::e2e::ProviderProcess;

const GROUP: &str = "infrastructure.corral.dev";

struct Plane {
    env: TestEnv,
    kubeconfig: tempfile::NamedTempFile,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Plane {
    async fn start() -> Plane {
        let env = TestEnv::start().await;
        let crds: Vec<Value> = corral_infra_plugin::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).unwrap())
            .collect();
        env.install_crds(&crds).await;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        }
        .shared();
        let webhook = WebhookServer::start(
            env.client.clone(),
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.1",
            shutdown,
        )
        .await
        .unwrap();
        install_configuration(&env.client, "corral").await.unwrap();
        register(&env.client, &webhook.url, &webhook.ca_pem)
            .await
            .unwrap();
        let mut kubeconfig = tempfile::NamedTempFile::new().unwrap();
        write!(
            kubeconfig,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {{}}\ncurrent-context: c\n",
            env.url()
        )
        .unwrap();
        Plane {
            env,
            kubeconfig,
            _stop: stop,
        }
    }

    /// `kubectl create -f -` of `object`: its standard output, or its standard error.
    async fn kubectl_create(&self, object: Value) -> Result<String, String> {
        let mut child = tokio::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(self.kubeconfig.path())
            .args(["create", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        use tokio::io::AsyncWriteExt as _;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(object.to_string().as_bytes())
            .await
            .unwrap();
        drop(stdin);
        let output = child.wait_with_output().await.unwrap();
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }

    async fn register_plugin(&self, name: &str, spec: Value) {
        self.kubectl_create(json!({
            "apiVersion": "corral.dev/v1alpha1", "kind": "ProviderPlugin",
            "metadata": { "name": name }, "spec": spec,
        }))
        .await
        .unwrap();
    }
}

fn machine(name: &str, plugin: &str, config: Value) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginMachine",
        "metadata": { "name": name, "namespace": "default" },
        "spec": { "plugin": plugin, "config": config },
    })
}

/// Asserts kubectl refused the object, saying every `expected` (kubectl prints an `Invalid`
/// Status as `The <Kind> "<name>" is invalid:` and one `* <cause>` line per field).
fn assert_refused(result: Result<String, String>, expected: &[&str]) {
    let message = result.expect_err("the object is refused");
    for part in expected {
        assert!(message.contains(part), "{part:?} is not in {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_is_checked_against_the_plugins_schema_and_validate_config() {
    let plane = Plane::start().await;
    let provider = ProviderProcess::python(&[]).await;
    plane
        .register_plugin("pool", json!({ "endpoint": provider.endpoint }))
        .await;

    // A valid object passes.
    let created = plane
        .kubectl_create(machine(
            "good",
            "pool",
            json!({ "pool": "rack-1", "profile": "small", "disks": [{ "name": "root", "sizeGiB": 100 }] }),
        ))
        .await
        .unwrap();
    assert!(
        created.contains("pluginmachine.infrastructure.corral.dev/good created"),
        "{created}"
    );

    // A value of the wrong type.
    assert_refused(
        plane
            .kubectl_create(machine("bad-type", "pool", json!({ "profile": 3 })))
            .await,
        &[
            r#"The PluginMachine "bad-type" is invalid"#,
            r#"* spec.config.profile: Invalid value: "integer": spec.config.profile in body must be of type string: "integer""#,
        ],
    );
    // A value outside the enum.
    assert_refused(
        plane
            .kubectl_create(machine("bad-enum", "pool", json!({ "profile": "huge" })))
            .await,
        &[
            r#"spec.config.profile: Unsupported value: "huge": supported values: "small", "medium", "large""#,
        ],
    );
    // A required field missing.
    assert_refused(
        plane
            .kubectl_create(machine(
                "bad-required",
                "pool",
                json!({ "disks": [{ "name": "data" }] }),
            ))
            .await,
        &["spec.config.disks[0].sizeGiB: Required value"],
    );
    // Every error in one answer, including a field the schema does not declare.
    assert_refused(
        plane
            .kubectl_create(machine(
                "bad-many",
                "pool",
                json!({ "profile": "huge", "disks": [{ "sizeGiB": 0 }, {}], "poool": "typo" }),
            ))
            .await,
        &[
            r#"spec.config.profile: Unsupported value: "huge""#,
            "spec.config.disks[0].sizeGiB: Invalid value: 0: spec.config.disks[0].sizeGiB in body should be greater than or equal to 1",
            "spec.config.disks[1].sizeGiB: Required value",
            "spec.config.poool: Forbidden",
        ],
    );
    // The plugin's ValidateConfig: what the schema cannot say.
    assert_refused(
        plane
            .kubectl_create(machine(
                "too-big",
                "pool",
                json!({ "disks": [{ "sizeGiB": 800 }, { "sizeGiB": 700 }] }),
            ))
            .await,
        &[
            "spec.config.disks: Invalid value: 1500 GiB of disks requested; the pool's hosts hold 1000 GiB",
        ],
    );
    // A template: the path under spec.template.spec.config.
    assert_refused(
        plane
            .kubectl_create(json!({
                "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "PluginMachineTemplate",
                "metadata": { "name": "bad-template", "namespace": "default" },
                "spec": { "template": { "spec": { "plugin": "pool", "config": { "profile": "huge" } } } },
            }))
            .await,
        &[r#"spec.template.spec.config.profile: Unsupported value: "huge""#],
    );
    // An unknown plugin.
    assert_refused(
        plane
            .kubectl_create(machine("nowhere", "no-such-plugin", json!({})))
            .await,
        &[
            r#"spec.plugin: Invalid value: "no-such-plugin": there is no ProviderPlugin "no-such-plugin""#,
        ],
    );

    // The answer is kube-apiserver's Invalid Status, with a cause per field.
    let resource = ApiResource {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        api_version: format!("{GROUP}/v1alpha1"),
        kind: "PluginMachine".into(),
        plural: "pluginmachines".into(),
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(plane.env.client.clone(), "default", &resource);
    let object: DynamicObject = serde_json::from_value(machine(
        "bad-causes",
        "pool",
        json!({ "profile": 3, "disks": [{}] }),
    ))
    .unwrap();
    let Err(kube::Error::Api(status)) = api.create(&PostParams::default(), &object).await else {
        panic!("the object is refused");
    };
    assert_eq!(
        (status.code, status.reason.as_str()),
        (422, "Invalid"),
        "{status:?}"
    );
    assert!(
        status.message.starts_with(
            r#"admission webhook "config.infrastructure.corral.dev" denied the request: PluginMachine.infrastructure.corral.dev "bad-causes" is invalid: ["#
        ),
        "{status:?}"
    );
    let causes: Vec<(String, String)> = status
        .details
        .as_ref()
        .unwrap()
        .causes
        .iter()
        .map(|cause| (cause.reason.clone(), cause.field.clone()))
        .collect();
    assert_eq!(
        causes,
        [
            (
                "FieldValueRequired".to_owned(),
                "spec.config.disks[0].sizeGiB".to_owned()
            ),
            (
                "FieldValueTypeInvalid".to_owned(),
                "spec.config.profile".to_owned()
            ),
            (
                "FieldValueNotSupported".to_owned(),
                "spec.config.profile".to_owned()
            ),
        ]
    );
    // Nothing was written but the valid object.
    let names: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|object| object.metadata.name.unwrap_or_default())
        .collect();
    assert_eq!(names, ["good"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_is_down_refuses_unless_its_policy_ignores() {
    let plane = Plane::start().await;
    // Nothing listens on port 1 of loopback.
    plane
        .register_plugin(
            "down",
            json!({ "endpoint": "http://127.0.0.1:1", "timeoutSeconds": 2 }),
        )
        .await;
    plane
        .register_plugin(
            "down-ignored",
            json!({
                "endpoint": "http://127.0.0.1:1", "timeoutSeconds": 2,
                "admission": { "failurePolicy": "Ignore" },
            }),
        )
        .await;
    assert_refused(
        plane
            .kubectl_create(machine("refused", "down", json!({ "profile": "small" })))
            .await,
        &[
            r#"admission webhook "config.infrastructure.corral.dev" denied the request"#,
            "(ServiceUnavailable)",
            "ProviderPlugin down cannot check spec.config",
            "unreachable",
        ],
    );
    plane
        .kubectl_create(machine(
            "allowed",
            "down-ignored",
            json!({ "profile": "small" }),
        ))
        .await
        .expect("failurePolicy Ignore admits it");

    // A plugin that was up (its schema known) and went down: still refused under Fail.
    let provider = ProviderProcess::python(&[]).await;
    plane
        .register_plugin(
            "was-up",
            json!({ "endpoint": provider.endpoint, "timeoutSeconds": 2 }),
        )
        .await;
    plane
        .kubectl_create(machine("while-up", "was-up", json!({ "profile": "small" })))
        .await
        .expect("a valid object while the plugin is up");
    drop(provider);
    assert_refused(
        plane
            .kubectl_create(machine(
                "after-down",
                "was-up",
                json!({ "profile": "small" }),
            ))
            .await,
        &["ProviderPlugin was-up cannot check spec.config"],
    );
}
