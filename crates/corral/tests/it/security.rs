//! `corral apiserver`'s TLS and authentication as a user meets them: the kubeconfig it writes
//! (HTTPS, its CA, an admin client certificate) works with kube-rs and kubectl; requests
//! without credentials get kube-apiserver's 401; `--token-auth-file`, `--anonymous-auth` and
//! `--insecure-http` do what kube-apiserver's flags do; plain HTTP off loopback is refused.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::ListParams;

use crate::support::{self, Backend, TestEnv, client_config};

fn sqlite<F, Fut>(test: F) -> impl Future<Output = ()>
where
    F: FnOnce(TestEnv) -> Fut,
    Fut: Future<Output = ()>,
{
    support::run(Backend::Sqlite, test)
}

/// The kubeconfig `path` with its user's credentials replaced by `user` (YAML), written
/// next to it as `name`.
pub(crate) fn with_user(path: &Path, user: serde_yaml::Value, name: &str) -> PathBuf {
    let mut kubeconfig: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    kubeconfig["users"][0]["user"] = user;
    let changed = path.with_file_name(name);
    std::fs::write(&changed, serde_yaml::to_string(&kubeconfig).unwrap()).unwrap();
    changed
}

async fn list_namespaces(kubeconfig: &Path) -> Result<Vec<String>, kube::Error> {
    let client = kube::Client::try_from(client_config(kubeconfig).await).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    Ok(namespaces
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|namespace| namespace.metadata.name)
        .collect())
}

fn assert_unauthorized(result: Result<Vec<String>, kube::Error>) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 401, "{status:?}");
            assert_eq!(status.reason, "Unauthorized", "{status:?}");
            assert_eq!(status.message, "Unauthorized", "{status:?}");
        }
        other => panic!("expected 401 Unauthorized, got {other:?}"),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_written_kubeconfig_is_https_with_the_admin_certificate() {
    sqlite(|env| async move {
        let server = env.start_server().await;
        assert!(
            server.url().starts_with("https://127.0.0.1:"),
            "{}",
            server.url()
        );
        let text = std::fs::read_to_string(server.kubeconfig()).unwrap();
        assert!(text.contains("certificate-authority-data: "), "{text}");
        assert!(text.contains("client-certificate-data: "), "{text}");
        // It holds a private key, as the CA's and the serving key files do.
        assert_eq!(mode(server.kubeconfig()), 0o600);
        let pki = server.data_dir().join("pki");
        for file in ["ca.key", "apiserver.key"] {
            assert_eq!(mode(&pki.join(file)), 0o600, "{file}");
        }
        for file in ["ca.crt", "apiserver.crt"] {
            assert!(pki.join(file).exists(), "{file}");
        }
        let names = list_namespaces(server.kubeconfig()).await.unwrap();
        assert!(names.contains(&"default".to_string()), "{names:?}");
        // The same through the test's helper, which every other test of the binary uses.
        let namespaces: Api<Namespace> = Api::all(server.client());
        namespaces.get("kube-system").await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_authenticates_as_the_admin_and_anonymous_requests_get_401() {
    sqlite(|env| async move {
        let server = env.start_server().await;
        if let Some(kubectl) = support::kubectl() {
            let output = std::process::Command::new(&kubectl)
                .arg("--kubeconfig")
                .arg(server.kubeconfig())
                .args(["get", "namespaces", "-o", "name"])
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(String::from_utf8_lossy(&output.stdout).contains("namespace/default"));
            // /healthz needs credentials with anonymous requests off, as in kube-apiserver.
            let output = std::process::Command::new(&kubectl)
                .arg("--kubeconfig")
                .arg(server.kubeconfig())
                .args(["get", "--raw", "/healthz"])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&output.stdout), "ok");
        }
        let anonymous = with_user(
            server.kubeconfig(),
            serde_yaml::Value::Mapping(Default::default()),
            "anonymous",
        );
        assert_unauthorized(list_namespaces(&anonymous).await);
        // Restarted with anonymous requests allowed, they pass authentication; RBAC lets
        // system:anonymous see health and version only (system:public-info-viewer).
        server.kill_9();
        let server = env.start_server_with(&["--anonymous-auth"]).await;
        let anonymous = with_user(
            server.kubeconfig(),
            serde_yaml::Value::Mapping(Default::default()),
            "anonymous",
        );
        match list_namespaces(&anonymous).await {
            Err(kube::Error::Api(status)) => assert_eq!(
                (status.code, status.message.as_str()),
                (
                    403,
                    r#"namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope"#
                )
            ),
            other => panic!("expected 403, got {other:?}"),
        }
        // With --authorization-mode AlwaysAllow, everything authenticated passes.
        server.kill_9();
        let server = env
            .start_server_with(&["--anonymous-auth", "--authorization-mode", "AlwaysAllow"])
            .await;
        let anonymous = with_user(
            server.kubeconfig(),
            serde_yaml::Value::Mapping(Default::default()),
            "anonymous",
        );
        let names = list_namespaces(&anonymous).await.unwrap();
        assert!(names.contains(&"default".to_string()), "{names:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_of_the_token_file_authenticate_and_others_get_401() {
    sqlite(|env| async move {
        let tokens = env.scratch_dir().join("tokens.csv");
        // In system:masters, so that RBAC lets the token's user list namespaces.
        std::fs::write(
            &tokens,
            "s3cr3t-t0ken,alice,alice-uid,\"team-a,system:masters\"\n",
        )
        .unwrap();
        let server = env
            .start_server_with(&["--token-auth-file", tokens.to_str().unwrap()])
            .await;
        let token = |value: &str| {
            let mut user = serde_yaml::Mapping::new();
            user.insert("token".into(), value.into());
            serde_yaml::Value::Mapping(user)
        };
        let good = with_user(server.kubeconfig(), token("s3cr3t-t0ken"), "good");
        let names = list_namespaces(&good).await.unwrap();
        assert!(names.contains(&"default".to_string()), "{names:?}");
        let wrong = with_user(server.kubeconfig(), token("wrong"), "wrong");
        assert_unauthorized(list_namespaces(&wrong).await);
        // The admin's certificate still works next to the tokens.
        list_namespaces(server.kubeconfig()).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_address_is_served_over_tls_and_plain_http_only_on_loopback() {
    sqlite(|env| async move {
        // HTTPS with authentication: a wildcard address is accepted, and the kubeconfig
        // reaches it on loopback (a name of the certificate).
        let server = env.start_server_with(&["--listen", "0.0.0.0:0"]).await;
        assert!(server.url().starts_with("https://127.0.0.1:"), "{}", server.url());
        list_namespaces(server.kubeconfig()).await.unwrap();
        drop(server);

        let output = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["apiserver", "--insecure-http", "--listen", "0.0.0.0:0", "--store", "memory"])
            .arg("--data-dir")
            .arg(env.scratch_dir().join("refused"))
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            stderr,
            "error: refusing to listen on 0.0.0.0:0 with --insecure-http: plain HTTP without authentication is allowed on loopback only (use 127.0.0.1 or ::1, or drop --insecure-http to serve HTTPS with authentication)\n"
        );

        let server = env.start_server_with(&["--insecure-http"]).await;
        assert!(server.url().starts_with("http://127.0.0.1:"), "{}", server.url());
        list_namespaces(server.kubeconfig()).await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serving_certificate_of_its_own_is_served_with_the_admin_credentials() {
    use base64::Engine;
    sqlite(|env| async move {
        let ca = corral_apiserver::pki::generate_ca("my-ca").unwrap();
        let serving = corral_apiserver::pki::issue_serving(
            &ca,
            &["127.0.0.1".to_string()],
            std::time::Duration::from_secs(3600),
        )
        .unwrap();
        let (certificate, key) = (
            env.scratch_dir().join("tls.crt"),
            env.scratch_dir().join("tls.key"),
        );
        std::fs::write(&certificate, &serving.certificate_pem).unwrap();
        std::fs::write(&key, &serving.private_key_pem).unwrap();
        let server = env
            .start_server_with(&[
                "--tls-cert-file",
                certificate.to_str().unwrap(),
                "--tls-private-key-file",
                key.to_str().unwrap(),
            ])
            .await;
        // The kubeconfig names no CA (clients use their own roots): given the one that
        // signed the certificate, its admin credentials work.
        let mut kubeconfig: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(server.kubeconfig()).unwrap()).unwrap();
        assert!(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"].is_null());
        kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"] =
            base64::engine::general_purpose::STANDARD
                .encode(&ca.certificate_pem)
                .into();
        let with_ca = server.kubeconfig().with_file_name("with-ca");
        std::fs::write(&with_ca, serde_yaml::to_string(&kubeconfig).unwrap()).unwrap();
        let names = list_namespaces(&with_ca).await.unwrap();
        assert!(names.contains(&"default".to_string()), "{names:?}");
    })
    .await;
}
