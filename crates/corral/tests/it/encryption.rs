//! Secrets at rest (`--encryption-provider-config`, kube-apiserver's `EncryptionConfiguration`):
//! a Secret's value is absent from the raw SQLite file and from etcd's keyspace and files, yet
//! kubectl reads it; a wrong key is a clear error; keys rotate as kube documents it; `corral up`
//! encrypts Secrets with a key of its own.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use base64::Engine;
use corral_store::{KeyValue, RangeRequest, Store};

use crate::kubectl::{Kubectl, kubectl_or_skip};
use crate::support::{ServerProcess, TestEnv};

backend_tests!(secrets_are_encrypted_at_rest, keys_rotate_as_kube_documents,);

const KEY_1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyE/Pz8=";
const KEY_2: &str = "b3RoZXIga2V5IG9mIHRoaXJ0eS10d28gYnl0ZXMhISE=";
const OTHER_KEY_1: &str = "YW5vdGhlciBrZXkgdGhhdCBpcyBub3Qga2V5IG9uZSE=";

/// An `EncryptionConfiguration` for Secrets with `aescbc` keys `(name, secret)` in order.
fn config_file(env: &TestEnv, file: &str, keys: &[(&str, &str)]) -> PathBuf {
    let keys: String = keys
        .iter()
        .map(|(name, secret)| {
            format!("            - name: {name}\n              secret: {secret}\n")
        })
        .collect();
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources:
      - secrets
    providers:
      - aescbc:
          keys:
{keys}      - identity: {{}}
"
    );
    let path = env.scratch_dir().join(file);
    std::fs::write(&path, text).unwrap();
    path
}

async fn start(env: &TestEnv, config: &Path) -> ServerProcess {
    env.start_server_with(&["--encryption-provider-config", config.to_str().unwrap()])
        .await
}

/// Every byte the backend keeps on disk: the SQLite file and its WAL, or etcd's data
/// directory (its WAL and bbolt file).
fn raw_files(env: &TestEnv) -> Vec<u8> {
    fn walk(dir: &Path, into: &mut Vec<u8>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, into);
            } else if let Ok(bytes) = std::fs::read(&path) {
                into.extend(bytes);
            }
        }
    }
    let mut bytes = Vec::new();
    match env.etcd() {
        Some(etcd) => walk(etcd.dir(), &mut bytes),
        None => {
            for entry in std::fs::read_dir(env.data_dir()).unwrap().flatten() {
                if entry.file_name().to_string_lossy().starts_with("store.db") {
                    bytes.extend(std::fs::read(entry.path()).unwrap());
                }
            }
        }
    }
    bytes
}

/// The Secrets as the backend holds them, read with a store client of its own (no API
/// server, no decryption). For SQLite the server must be stopped.
async fn stored_secrets(env: &TestEnv) -> Vec<KeyValue> {
    let request = RangeRequest {
        prefix: "/registry/core/secrets/".into(),
        ..Default::default()
    };
    match env.etcd() {
        Some(etcd) => {
            let store = corral_store::etcd::EtcdStore::connect(&etcd.endpoints(), "/corral")
                .await
                .unwrap();
            store.range(request).await.unwrap().kvs
        }
        None => {
            let store =
                corral_store::sqlite::SqliteStore::open(&env.data_dir().join("store.db")).unwrap();
            store.range(request).await.unwrap().kvs
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    // std's substring search (built optimized), over etcd's preallocated 64 MiB WAL files.
    String::from_utf8_lossy(haystack).contains(needle)
}

fn base64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

async fn secrets_are_encrypted_at_rest(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let config = config_file(&env, "encryption.yaml", &[("key1", KEY_1)]);
    let server = start(&env, &config).await;
    let kubectl = Kubectl::new(binary.clone(), &env, &server);
    let password = format!("hunter2-{}", uuid::Uuid::new_v4());
    let setting = format!("plain-{}", uuid::Uuid::new_v4());
    kubectl
        .run(&[
            "create",
            "secret",
            "generic",
            "db",
            &format!("--from-literal=password={password}"),
        ])
        .await;
    kubectl
        .run(&[
            "create",
            "configmap",
            "settings",
            &format!("--from-literal=color={setting}"),
        ])
        .await;
    // kubectl reads it back, through the server.
    let yaml = kubectl.run(&["get", "secret", "db", "-o", "yaml"]).await;
    assert!(
        yaml.contains(&format!("password: {}", base64(&password))),
        "{yaml}"
    );
    // An update and a patch keep it readable and encrypted.
    kubectl
        .run(&["label", "secret", "db", "tier=backend"])
        .await;
    let yaml = kubectl.run(&["get", "secret", "db", "-o", "yaml"]).await;
    assert!(yaml.contains("tier: backend"), "{yaml}");
    assert!(yaml.contains(&base64(&password)), "{yaml}");

    // On disk: the ConfigMap in clear (so the files are what is read), the Secret not.
    let files = raw_files(&env);
    assert!(
        contains(&files, &setting),
        "the ConfigMap is not in the raw files"
    );
    for form in [password.clone(), base64(&password)] {
        assert!(
            !contains(&files, &form),
            "the Secret's value is in the raw files"
        );
    }
    // The server's log and Events do not show it either.
    let events = kubectl.run(&["get", "events", "-A", "-o", "json"]).await;
    for form in [password.clone(), base64(&password)] {
        assert!(
            !env.server_log().contains(&form),
            "the Secret's value is in the log"
        );
        assert!(!events.contains(&form), "the Secret's value is in an Event");
    }

    // Raw, the stored value carries kube's prefix naming the provider and key.
    server.kill_9();
    let stored = stored_secrets(&env).await;
    let db = stored
        .iter()
        .find(|kv| kv.key.ends_with("/default/db"))
        .expect("the Secret is stored");
    assert!(db.value.starts_with(b"k8s:enc:aescbc:v1:key1:"), "{db:?}");

    // Another key under the same name: a clear error, not garbage.
    let wrong = config_file(&env, "wrong.yaml", &[("key1", OTHER_KEY_1)]);
    let server = start(&env, &wrong).await;
    let kubectl = Kubectl::new(binary, &env, &server);
    let error = kubectl.fails(&["get", "secret", "db", "-o", "yaml"]).await;
    assert!(
        error.contains(
            r#"unable to transform key "/registry/core/secrets/default/db": failed to decrypt data with aescbc key "key1" (wrong key or corrupt data)"#
        ),
        "{error}"
    );
    // Other resources are untouched by it.
    let yaml = kubectl
        .run(&["get", "configmap", "settings", "-o", "yaml"])
        .await;
    assert!(yaml.contains(&setting), "{yaml}");
}

/// The `aescbc` key names a stored Secret was encrypted with.
async fn key_names(env: &TestEnv) -> Vec<String> {
    stored_secrets(env)
        .await
        .iter()
        .map(|kv| {
            let text = String::from_utf8_lossy(&kv.value);
            let rest = text
                .strip_prefix("k8s:enc:aescbc:v1:")
                .unwrap_or_else(|| panic!("{} is not encrypted with aescbc", kv.key));
            rest.split(':').next().unwrap().to_string()
        })
        .collect()
}

async fn stop(env: &TestEnv, server: ServerProcess) {
    // SQLite's file is read by the test only while no server holds it.
    let _ = env;
    server.kill_9();
}

async fn secret_value(kubectl: &Kubectl, name: &str) -> String {
    let encoded = kubectl
        .run(&["get", "secret", name, "-o", "jsonpath={.data.value}"])
        .await;
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .unwrap(),
    )
    .unwrap()
}

/// kube's documented rotation: add the new key second and restart; make it first and
/// restart; rewrite every Secret (`kubectl get secrets -A -o json | kubectl replace -f -`,
/// kubectl validating the `List` with `/openapi/v2`); drop the old key and restart.
async fn keys_rotate_as_kube_documents(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let old_only = config_file(&env, "1.yaml", &[("key1", KEY_1)]);
    let server = start(&env, &old_only).await;
    let kubectl = Kubectl::new(binary.clone(), &env, &server);
    kubectl
        .run(&[
            "create",
            "secret",
            "generic",
            "first",
            "--from-literal=value=one",
        ])
        .await;
    stop(&env, server).await;
    assert_eq!(key_names(&env).await, ["key1"]);

    // The new key second: everything still reads, and writes still use the old key.
    let both_old_first = config_file(&env, "2.yaml", &[("key1", KEY_1), ("key2", KEY_2)]);
    let server = start(&env, &both_old_first).await;
    let kubectl = Kubectl::new(binary.clone(), &env, &server);
    assert_eq!(secret_value(&kubectl, "first").await, "one");
    kubectl
        .run(&[
            "create",
            "secret",
            "generic",
            "second",
            "--from-literal=value=two",
        ])
        .await;
    stop(&env, server).await;
    assert_eq!(key_names(&env).await, ["key1", "key1"]);

    // The new key first, then every Secret rewritten: all under the new key.
    let both_new_first = config_file(&env, "3.yaml", &[("key2", KEY_2), ("key1", KEY_1)]);
    let server = start(&env, &both_new_first).await;
    let kubectl = Kubectl::new(binary.clone(), &env, &server);
    let all = kubectl.run(&["get", "secrets", "-A", "-o", "json"]).await;
    // As documented for kube-apiserver: kubectl validates the `List` with /openapi/v2 (as
    // protobuf), then each Secret is a PUT with fieldValidation=Strict.
    kubectl.run_with_stdin(&["replace", "-f", "-"], &all).await;
    stop(&env, server).await;
    assert_eq!(key_names(&env).await, ["key2", "key2"]);

    // The old key dropped: everything still reads.
    let new_only = config_file(&env, "4.yaml", &[("key2", KEY_2)]);
    let server = start(&env, &new_only).await;
    let kubectl = Kubectl::new(binary, &env, &server);
    assert_eq!(secret_value(&kubectl, "first").await, "one");
    assert_eq!(secret_value(&kubectl, "second").await, "two");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_encryption_config_is_refused_naming_the_field() {
    crate::support::run(crate::support::Backend::Sqlite, |env| async move {
        let config = env.scratch_dir().join("bad.yaml");
        std::fs::write(
            &config,
            "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - secretbox:
          keys:
            - name: key1
              secret: c2hvcnQ=
",
        )
        .unwrap();
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["apiserver", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(env.data_dir())
            .arg("--encryption-provider-config")
            .arg(&config)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [32]"),
            "{stderr}"
        );
        assert!(!stderr.contains("c2hvcnQ="), "{stderr}");
    })
    .await;
}

/// `corral up` without the flag: Secrets encrypted with a key it generated, kept in a file
/// only its owner reads, the same key again after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corral_up_encrypts_secrets_by_default() {
    crate::support::run(crate::support::Backend::Sqlite, |env| async move {
        let data_dir = env.data_dir();
        let (up, kubeconfig) =
            crate::cli::start_up(&data_dir, env.scratch_dir().join("up.log")).await;
        let config = data_dir.join("encryption-config.yaml");
        assert_eq!(
            std::fs::metadata(&config).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let client =
            kube::Client::try_from(crate::support::client_config(&kubeconfig).await).unwrap();
        let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
            kube::Api::namespaced(client, "default");
        let password = format!("hunter2-{}", uuid::Uuid::new_v4());
        let secret: k8s_openapi::api::core::v1::Secret =
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "db"},
                "stringData": {"password": password},
            }))
            .unwrap();
        secrets.create(&Default::default(), &secret).await.unwrap();
        drop(up);
        let store = corral_store::sqlite::SqliteStore::open(&data_dir.join("store.db")).unwrap();
        let stored = store
            .get("/registry/core/secrets/default/db", None)
            .await
            .unwrap()
            .unwrap();
        assert!(
            stored.value.starts_with(b"k8s:enc:secretbox:v1:key1:"),
            "{stored:?}"
        );
        drop(store);
        let files = raw_files(&env);
        for form in [password.clone(), base64(&password)] {
            assert!(
                !contains(&files, &form),
                "the Secret's value is in the raw files"
            );
        }
    })
    .await;
}
