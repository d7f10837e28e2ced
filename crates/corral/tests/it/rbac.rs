//! RBAC as users meet it on `corral apiserver` (RBAC on by default): kubectl and the Python
//! client with client-certificate kubeconfigs get kube-apiserver's 403 for what no binding
//! grants, `kubectl auth can-i [--list]` answers from the bindings, grants beyond one's own
//! are refused, and the ClusterRoles `corral init` installs give each component what it
//! needs and no more.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use corral_apiserver::pki::{self, KeyMaterial};

use crate::support::{self, Backend, ServerProcess, TestEnv, tool_available};

/// A kubeconfig for `user` (in `groups`) with a client certificate of the server's CA.
fn user_kubeconfig(env: &TestEnv, server: &ServerProcess, user: &str, groups: &[&str]) -> PathBuf {
    let pki_dir = server.data_dir().join("pki");
    let ca = KeyMaterial {
        certificate_pem: std::fs::read_to_string(pki_dir.join("ca.crt")).unwrap(),
        private_key_pem: std::fs::read_to_string(pki_dir.join("ca.key")).unwrap(),
    };
    let client = pki::issue_client(&ca, user, groups, Duration::from_secs(3600)).unwrap();
    let text = corral_apiserver::kubeconfig::render_tls(
        server.url(),
        "corral",
        Some(&ca.certificate_pem),
        &client.certificate_pem,
        &client.private_key_pem,
    );
    let path = env.scratch_dir().join(format!("{user}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path
}

fn kubectl(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn kubectl_ok(path: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let output = kubectl(path, kubeconfig, args);
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        stderr(&output)
    );
    stdout(&output)
}

/// Polls until kubectl succeeds: the bootstrap roles are aggregated just after the start.
fn kubectl_eventually(path: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let output = kubectl(path, kubeconfig, args);
        if output.status.success() {
            return stdout(&output);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kubectl {args:?}: {}",
            stderr(&output)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The server's message of a refused kubectl command: after `Error from server
/// (Forbidden): `, or after `error: failed to create KIND: ` (how `kubectl create KIND` words
/// any failure).
fn forbidden(path: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let output = kubectl(path, kubeconfig, args);
    assert!(
        !output.status.success(),
        "kubectl {args:?} succeeded: {}",
        stdout(&output)
    );
    let text = stderr(&output);
    let message = match text.strip_prefix("Error from server (Forbidden): ") {
        Some(message) => message,
        None => text
            .strip_prefix("error: failed to create ")
            .and_then(|rest| rest.split_once(": "))
            .map(|(_, message)| message)
            .unwrap_or_else(|| panic!("kubectl {args:?}: {text}")),
    };
    message.trim_end().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_viewers_get_403_can_i_lists_their_bindings_and_grants_are_bounded() {
    support::run(Backend::Sqlite, |env| async move {
        let Some(k) = support::kubectl() else { return };
        let server = env.start_server().await;
        let admin = server.kubeconfig().to_path_buf();
        kubectl_ok(&k, &admin, &["create", "namespace", "a"]);
        kubectl_ok(&k, &admin, &["create", "namespace", "b"]);
        kubectl_ok(&k, &admin, &["create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", "a"]);
        kubectl_ok(&k, &admin, &["create", "rolebinding", "bob-admin", "--clusterrole=admin", "--user=bob", "-n", "a"]);
        let table = kubectl_ok(&k, &admin, &["get", "rolebindings", "-n", "a", "-o", "wide"]);
        let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header, ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"], "{table}");
        assert!(table.lines().any(|l| l.starts_with("alice-view") && l.contains("ClusterRole/view") && l.contains("alice")), "{table}");
        let alice = user_kubeconfig(&env, &server, "alice", &[]);
        let bob = user_kubeconfig(&env, &server, "bob", &["developers"]);

        kubectl_eventually(&k, &alice, &["get", "configmaps", "-n", "a"]);
        assert_eq!(
            forbidden(&k, &alice, &["get", "secrets", "-n", "b"]),
            r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "b""#
        );
        assert_eq!(
            forbidden(&k, &alice, &["create", "configmap", "c", "-n", "a"]),
            r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "a""#
        );
        assert_eq!(
            forbidden(&k, &alice, &["delete", "configmap", "kube-root-ca.crt", "-n", "a"]),
            r#"configmaps "kube-root-ca.crt" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "a""#
        );

        // can-i: one answer, and the whole list, from the bindings.
        assert_eq!(stdout(&kubectl(&k, &alice, &["auth", "can-i", "watch", "configmaps", "-n", "a"])), "yes\n");
        let no = kubectl(&k, &alice, &["auth", "can-i", "get", "secrets", "-n", "a"]);
        assert_eq!((stdout(&no).as_str(), no.status.code()), ("no\n", Some(1)));
        let list = kubectl_ok(&k, &alice, &["auth", "can-i", "--list", "-n", "a"]);
        let line = |resource: &str| list.lines().find(|l| l.split_whitespace().next() == Some(resource)).map(str::to_string);
        assert!(line("configmaps").is_some_and(|l| l.ends_with("[get list watch]")), "{list}");
        assert!(line("selfsubjectaccessreviews.authorization.k8s.io").is_some_and(|l| l.ends_with("[create]")), "{list}");
        assert!(list.contains("[/healthz]"), "{list}");
        assert!(line("secrets").is_none(), "{list}");
        assert!(line("roles.rbac.authorization.k8s.io").is_none(), "{list}");
        let elsewhere = kubectl_ok(&k, &alice, &["auth", "can-i", "--list", "-n", "b"]);
        assert!(!elsewhere.lines().any(|l| l.starts_with("configmaps ")), "{elsewhere}");
        // The admin in system:masters may do anything.
        assert_eq!(kubectl_ok(&k, &admin, &["auth", "can-i", "*", "*"]), "yes\n");

        // Bob administers a: he may grant what he holds, not more.
        kubectl_eventually(&k, &bob, &["create", "role", "reader", "--verb=get", "--resource=configmaps", "-n", "a"]);
        let refused = forbidden(&k, &bob, &["create", "role", "node-reader", "--verb=get", "--resource=nodes", "-n", "a"]);
        assert_eq!(
            refused,
            "roles.rbac.authorization.k8s.io \"node-reader\" is forbidden: user \"bob\" (groups=[\"developers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\"]}"
        );
        let refused = forbidden(&k, &bob, &["create", "rolebinding", "carol-admin", "--clusterrole=cluster-admin", "--user=carol", "-n", "a"]);
        assert!(refused.contains("is attempting to grant RBAC permissions not currently held"), "{refused}");
        kubectl_ok(&k, &bob, &["create", "rolebinding", "carol-reader", "--role=reader", "--user=carol", "-n", "a"]);
        // Impersonation needs `impersonate`: the admin may act as alice, bob may not.
        assert_eq!(
            forbidden(&k, &admin, &["get", "secrets", "-n", "b", "--as", "alice"]),
            r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "b""#
        );
        assert_eq!(
            forbidden(&k, &bob, &["get", "configmaps", "-n", "a", "--as", "alice"]),
            r#"users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_component_may_do_its_job_and_nothing_more() {
    support::run(Backend::Sqlite, |env| async move {
        let Some(k) = support::kubectl() else { return };
        let server = env.start_server().await;
        let admin = server.kubeconfig().to_path_buf();
        let init = Command::new(env!("CARGO_BIN_EXE_corral"))
            .arg("--kubeconfig")
            .arg(&admin)
            .arg("init")
            .output()
            .unwrap();
        assert!(init.status.success(), "{}", stderr(&init));
        let can = |who: &str, groups: &[&str], args: &[&str]| -> bool {
            let mut all = vec!["auth", "can-i"];
            all.extend_from_slice(args);
            all.extend_from_slice(&["--as", who]);
            for group in groups {
                all.extend_from_slice(&["--as-group", group]);
            }
            let output = kubectl(&k, &admin, &all);
            match stdout(&output).as_str() {
                "yes\n" => true,
                "no\n" => false,
                other => panic!("kubectl {all:?}: {other} {}", stderr(&output)),
            }
        };
        let core = "system:corral:cluster-api";
        assert!(can(core, &[], &["create", "machines.cluster.x-k8s.io", "-n", "default"]));
        assert!(can(core, &[], &["patch", "devmachines.infrastructure.cluster.x-k8s.io", "-n", "default"]));
        assert!(can(core, &[], &["create", "secrets", "-n", "default"]));
        assert!(!can(core, &[], &["create", "clusterroles"]));
        assert!(!can(core, &[], &["create", "rolebindings", "-n", "default"]));
        assert!(!can(core, &[], &["create", "namespaces"]));
        let infra = "system:corral:infrastructure-in-memory";
        assert!(can(infra, &[], &["update", "devmachines.infrastructure.cluster.x-k8s.io", "-n", "default"]));
        assert!(can(infra, &[], &["get", "machines.cluster.x-k8s.io", "-n", "default"]));
        assert!(!can(infra, &[], &["update", "machines.cluster.x-k8s.io", "-n", "default"]));
        assert!(!can(infra, &[], &["create", "kubeadmconfigs.bootstrap.cluster.x-k8s.io", "-n", "default"]));
        assert!(!can(infra, &[], &["create", "secrets", "-n", "default"]));
        let bootstrap = "system:corral:bootstrap-kubeadm";
        assert!(can(bootstrap, &[], &["create", "kubeadmconfigs.bootstrap.cluster.x-k8s.io", "-n", "default"]));
        assert!(!can(bootstrap, &[], &["create", "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io", "-n", "default"]));
        // corral up's in-process controllers hold every component's role through their group.
        let controllers = ("system:corral-controllers", &["system:corral-controllers"][..]);
        assert!(can(controllers.0, controllers.1, &["create", "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io", "-n", "default"]));
        assert!(!can(controllers.0, controllers.1, &["create", "clusterrolebindings"]));
        // And the controllers' identity cannot write RBAC objects itself.
        let as_controllers = user_kubeconfig(&env, &server, "system:corral-controllers", &["system:corral-controllers"]);
        let refused = forbidden(&k, &as_controllers, &["create", "clusterrolebinding", "mine", "--clusterrole=cluster-admin", "--user=system:corral-controllers"]);
        assert_eq!(
            refused,
            r#"clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "system:corral-controllers" cannot create resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope"#
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_gets_kube_apiservers_403() {
    support::run(Backend::Sqlite, |env| async move {
        let has_client = Command::new("python3")
            .args(["-c", "import kubernetes"])
            .output()
            .is_ok_and(|output| output.status.success());
        if !tool_available(has_client, "the Python kubernetes client", "CORRAL_REQUIRE_PYTHON_CLIENT", "python3 -m pip install kubernetes") {
            return;
        }
        let server = env.start_server().await;
        let alice = user_kubeconfig(&env, &server, "alice", &[]);
        let script = r#"
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
api = client.CoreV1Api(config.new_client_from_config(sys.argv[1]))
try:
    api.list_namespaced_secret("b")
    sys.exit("listing secrets in b passed")
except ApiException as error:
    body = json.loads(error.body)
    assert error.status == 403, error.status
    assert body["reason"] == "Forbidden", body
    assert body["message"] == 'secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "b"', body["message"]
    assert body["details"] == {"kind": "secrets"}, body
auth = client.AuthorizationV1Api(config.new_client_from_config(sys.argv[1]))
review = auth.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
    spec=client.V1SelfSubjectAccessReviewSpec(non_resource_attributes=client.V1NonResourceAttributes(path="/healthz", verb="get"))))
assert review.status.allowed, review
print("ok")
"#;
        let output = Command::new("python3").arg("-c").arg(script).arg(&alice).output().unwrap();
        assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
        assert_eq!(stdout(&output), "ok\n");
    })
    .await;
}

/// A kubeconfig that presents `token` to the server, trusting the data directory's CA.
fn token_kubeconfig(env: &TestEnv, server: &ServerProcess, name: &str, token: &str) -> PathBuf {
    let ca = server.data_dir().join("pki").join("ca.crt");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: corral\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: {name}\n  context:\n    cluster: corral\n    user: {name}\ncurrent-context: {name}\n",
        server.url(),
        ca.display()
    );
    let path = env.scratch_dir().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `kubectl create token`: a ServiceAccount's token authenticates as the account, RBAC
/// decides what it may do, tokens for another audience or of a deleted account (even one
/// created again under the same name; within the token cache's 10 s) get 401, and a
/// too-short lifetime is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens_authenticate_until_the_account_is_deleted() {
    support::run(Backend::Sqlite, |env| async move {
        let Some(k) = support::kubectl() else { return };
        let server = env.start_server().await;
        let admin = server.kubeconfig().to_path_buf();
        kubectl_ok(&k, &admin, &["create", "namespace", "a"]);
        // Every namespace has its default account.
        let accounts = kubectl_eventually(&k, &admin, &["get", "serviceaccount", "default", "-n", "a"]);
        let header: Vec<&str> = accounts.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header, ["NAME", "SECRETS", "AGE"], "{accounts}");
        kubectl_ok(&k, &admin, &["create", "serviceaccount", "robot", "-n", "a"]);
        let token = kubectl_ok(&k, &admin, &["create", "token", "robot", "-n", "a"]);
        let robot = token_kubeconfig(&env, &server, "robot", token.trim());
        assert_eq!(
            forbidden(&k, &robot, &["get", "configmaps", "-n", "a"]),
            r#"configmaps is forbidden: User "system:serviceaccount:a:robot" cannot list resource "configmaps" in API group "" in the namespace "a""#
        );
        kubectl_ok(&k, &admin, &["create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount=a:robot", "-n", "a"]);
        kubectl_eventually(&k, &robot, &["get", "configmaps", "-n", "a"]);

        let unauthorized = |kubeconfig: &Path| {
            let output = kubectl(&k, kubeconfig, &["get", "configmaps", "-n", "a"]);
            assert!(!output.status.success());
            let text = stderr(&output);
            assert!(text.contains("Unauthorized"), "{text}");
        };
        let elsewhere = kubectl_ok(&k, &admin, &["create", "token", "robot", "-n", "a", "--audience", "vault"]);
        unauthorized(&token_kubeconfig(&env, &server, "vault", elsewhere.trim()));
        let short = kubectl(&k, &admin, &["create", "token", "robot", "-n", "a", "--duration", "1m"]);
        assert!(!short.status.success());
        assert!(stderr(&short).contains("may not specify a duration less than 10 minutes"), "{}", stderr(&short));

        kubectl_ok(&k, &admin, &["delete", "serviceaccount", "robot", "-n", "a"]);
        // Within the token cache's 10 s, as kube-apiserver.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while kubectl(&k, &robot, &["get", "configmaps", "-n", "a"]).status.success() {
            assert!(std::time::Instant::now() < deadline, "the deleted account's token still works");
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        unauthorized(&robot);
        kubectl_ok(&k, &admin, &["create", "serviceaccount", "robot", "-n", "a"]);
        unauthorized(&robot);
        // A new token of the new account works again.
        let token = kubectl_ok(&k, &admin, &["create", "token", "robot", "-n", "a"]);
        kubectl_eventually(&k, &token_kubeconfig(&env, &server, "robot-2", token.trim()), &["get", "configmaps", "-n", "a"]);
    })
    .await;
}

/// `kubectl create token --bound-object-kind Secret`: the token works while the Secret exists
/// and stops (within the token cache's 10 s) once it is deleted; other kinds are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_bound_to_a_secret_stops_with_the_secret() {
    support::run(Backend::Sqlite, |env| async move {
        let Some(k) = support::kubectl() else { return };
        let server = env.start_server().await;
        let admin = server.kubeconfig().to_path_buf();
        kubectl_ok(&k, &admin, &["create", "namespace", "a"]);
        kubectl_ok(
            &k,
            &admin,
            &["create", "serviceaccount", "robot", "-n", "a"],
        );
        kubectl_ok(
            &k,
            &admin,
            &[
                "create",
                "rolebinding",
                "robot-view",
                "--clusterrole=view",
                "--serviceaccount=a:robot",
                "-n",
                "a",
            ],
        );
        kubectl_ok(
            &k,
            &admin,
            &[
                "create",
                "secret",
                "generic",
                "session",
                "--from-literal=k=v",
                "-n",
                "a",
            ],
        );
        let token = kubectl_ok(
            &k,
            &admin,
            &[
                "create",
                "token",
                "robot",
                "-n",
                "a",
                "--bound-object-kind",
                "Secret",
                "--bound-object-name",
                "session",
            ],
        );
        let robot = token_kubeconfig(&env, &server, "robot", token.trim());
        kubectl_eventually(&k, &robot, &["get", "configmaps", "-n", "a"]);
        let refused = kubectl(
            &k,
            &admin,
            &[
                "create",
                "token",
                "robot",
                "-n",
                "a",
                "--bound-object-kind",
                "Secret",
                "--bound-object-name",
                "missing",
            ],
        );
        assert!(!refused.status.success());
        assert!(
            stderr(&refused).contains(r#"secrets "missing" not found"#),
            "{}",
            stderr(&refused)
        );
        kubectl_ok(&k, &admin, &["delete", "secret", "session", "-n", "a"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while kubectl(&k, &robot, &["get", "configmaps", "-n", "a"])
            .status
            .success()
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the token outlived its Secret"
            );
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        let output = kubectl(&k, &robot, &["get", "configmaps", "-n", "a"]);
        assert!(
            stderr(&output).contains("Unauthorized"),
            "{}",
            stderr(&output)
        );
    })
    .await;
}

/// OIDC discovery as kube-apiserver serves it: a ServiceAccount reads the issuer's
/// configuration and keys (`system:service-account-issuer-discovery`), a user without that
/// binding may not, and the published key verifies a token outside the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens_verify_with_the_published_keys() {
    support::run(Backend::Sqlite, |env| async move {
        let Some(k) = support::kubectl() else { return };
        let server = env.start_server().await;
        let admin = server.kubeconfig().to_path_buf();
        kubectl_ok(&k, &admin, &["create", "namespace", "a"]);
        kubectl_ok(&k, &admin, &["create", "serviceaccount", "robot", "-n", "a"]);
        let token = kubectl_ok(&k, &admin, &["create", "token", "robot", "-n", "a"]);
        let token = token.trim();
        let robot = token_kubeconfig(&env, &server, "robot", token);
        let configuration: serde_json::Value =
            serde_json::from_str(&kubectl_ok(&k, &robot, &["get", "--raw", "/.well-known/openid-configuration"])).unwrap();
        assert_eq!(configuration["issuer"], corral_apiserver::auth::service_account::DEFAULT_ISSUER);
        let jwks_uri = configuration["jwks_uri"].as_str().unwrap();
        assert!(jwks_uri.starts_with("https://") && jwks_uri.ends_with("/openid/v1/jwks"), "{jwks_uri}");
        assert_eq!(configuration["id_token_signing_alg_values_supported"], serde_json::json!(["ES256"]));
        let jwks = kubectl_ok(&k, &robot, &["get", "--raw", "/openid/v1/jwks"]);
        let keys: serde_json::Value = serde_json::from_str(&jwks).unwrap();
        assert_eq!(keys["keys"][0]["kty"], "EC");
        let alice = user_kubeconfig(&env, &server, "alice", &[]);
        assert_eq!(
            forbidden(&k, &alice, &["get", "--raw", "/openid/v1/jwks"]),
            r#"forbidden: User "alice" cannot get path "/openid/v1/jwks""#
        );

        // Outside the server: the token's header names the key, whose signature holds.
        let has_crypto = Command::new("python3")
            .args(["-c", "import cryptography"])
            .output()
            .is_ok_and(|output| output.status.success());
        if !tool_available(has_crypto, "Python's cryptography", "CORRAL_REQUIRE_PYTHON_CLIENT", "python3 -m pip install cryptography") {
            return;
        }
        let script = r#"
import base64, json, sys
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
def b64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
jwks, token = json.loads(sys.argv[1]), sys.argv[2]
header, payload, signature = token.split(".")
kid = json.loads(b64(header))["kid"]
key = next(k for k in jwks["keys"] if k["kid"] == kid)
public = ec.EllipticCurvePublicNumbers(int.from_bytes(b64(key["x"]), "big"), int.from_bytes(b64(key["y"]), "big"), ec.SECP256R1()).public_key()
raw = b64(signature)
der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
public.verify(der, (header + "." + payload).encode(), ec.ECDSA(hashes.SHA256()))
print(json.loads(b64(payload))["sub"])
"#;
        let output = Command::new("python3").args(["-c", script, &jwks, token]).output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "system:serviceaccount:a:robot");
    })
    .await;
}

/// CertificateSigningRequests through kubectl: the server records who asked, whatever the
/// body claims; `kubectl certificate approve` writes the approval through `/approval`, which
/// a requester without that right may not; the spec never changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_signing_requests_record_their_requester_and_are_approved_through_approval() {
    use base64::Engine;
    support::run(Backend::Sqlite, |env| async move {
        let Some(k) = support::kubectl() else { return };
        let server = env.start_server().await;
        let admin = server.kubeconfig().to_path_buf();
        kubectl_ok(&k, &admin, &["create", "clusterrolebinding", "carol-bootstrapper", "--clusterrole=system:node-bootstrapper", "--user=carol"]);
        let carol = user_kubeconfig(&env, &server, "carol", &["nodes-to-be"]);
        let (request, _key) =
            corral_kubeadm::certs::client_request("system:node:n1", &["system:nodes"]).unwrap();
        let manifest = format!(
            "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: n1\nspec:\n  request: {}\n  signerName: kubernetes.io/kube-apiserver-client-kubelet\n  usages: [digital signature, client auth]\n  username: mallory\n  groups: [system:masters]\n",
            base64::engine::general_purpose::STANDARD.encode(&request)
        );
        let manifest_path = env.scratch_dir().join("csr.yaml");
        std::fs::write(&manifest_path, manifest).unwrap();
        kubectl_eventually(&k, &carol, &["create", "-f", manifest_path.to_str().unwrap()]);
        let stored: serde_json::Value =
            serde_json::from_str(&kubectl_ok(&k, &admin, &["get", "csr", "n1", "-o", "json"])).unwrap();
        assert_eq!(stored["spec"]["username"], "carol");
        assert_eq!(
            stored["spec"]["groups"],
            serde_json::json!(["nodes-to-be", "system:authenticated"])
        );
        // Carol may not approve her own request.
        let refused = forbidden(&k, &carol, &["certificate", "approve", "n1"]);
        assert!(refused.contains("certificatesigningrequests/approval"), "{refused}");
        kubectl_ok(&k, &admin, &["certificate", "approve", "n1"]);
        let approved: serde_json::Value =
            serde_json::from_str(&kubectl_ok(&k, &admin, &["get", "csr", "n1", "-o", "json"])).unwrap();
        let table = kubectl_ok(&k, &admin, &["get", "csr", "n1"]);
        let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(
            header,
            ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"],
            "{table}"
        );
        assert!(
            table.lines().nth(1).is_some_and(|row| row.contains("carol") && row.ends_with("Approved")),
            "{table}"
        );
        let conditions = approved["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions[0]["type"], "Approved", "{approved:#}");
        assert_eq!(approved["spec"], stored["spec"]);
        // Not a certificate request: refused naming the field.
        let bad = env.scratch_dir().join("bad.yaml");
        std::fs::write(&bad, "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: bad\nspec:\n  request: bm90IGEgcmVxdWVzdA==\n  signerName: kubernetes.io/kube-apiserver-client\n  usages: [client auth]\n").unwrap();
        let output = kubectl(&k, &admin, &["create", "-f", bad.to_str().unwrap()]);
        assert!(!output.status.success());
        assert!(stderr(&output).contains("spec.request"), "{}", stderr(&output));
    })
    .await;
}
