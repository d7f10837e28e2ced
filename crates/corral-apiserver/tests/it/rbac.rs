//! RBAC over HTTPS with kube-rs and client certificates: the bootstrap policy, kube-apiserver's
//! 403 for what no binding grants, escalation prevention, aggregation, the access and rules
//! reviews and impersonation.

use std::time::Duration;

use corral_apiserver::pki::{self, KeyMaterial};
use corral_apiserver::{AuthenticationConfig, ServerConfig};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    SelfSubjectRulesReview, SelfSubjectRulesReviewSpec, SubjectAccessReview,
    SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use crate::tls::{TlsServer, start_with, tls_config};

async fn start_rbac() -> TlsServer {
    let ca = pki::generate_ca("test-ca").unwrap();
    let config = ServerConfig {
        tls: Some(tls_config(
            &ca,
            pki::CERTIFICATE_VALIDITY,
            Duration::from_secs(3600),
        )),
        authentication: Some(AuthenticationConfig::default()),
        rbac: true,
        ..ServerConfig::default()
    };
    start_with(ca, config).await
}

fn user(tls: &TlsServer, name: &str, groups: &[&str]) -> KeyMaterial {
    pki::issue_client(&tls.ca, name, groups, Duration::from_secs(3600)).unwrap()
}

fn forbidden(result: Result<impl std::fmt::Debug, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (403, "Forbidden"),
                "{status:?}"
            );
            status.message
        }
        other => panic!("expected 403, got {other:?}"),
    }
}

async fn create<K>(api: &Api<K>, value: serde_json::Value) -> Result<K, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(
        &PostParams::default(),
        &serde_json::from_value(value).unwrap(),
    )
    .await
}

async fn namespaces(admin: &kube::Client, names: &[&str]) {
    let api: Api<Namespace> = Api::all(admin.clone());
    for name in names {
        create(&api, json!({"metadata": {"name": name}}))
            .await
            .unwrap();
    }
}

fn binding(
    namespace: &str,
    name: &str,
    role_kind: &str,
    role: &str,
    user: &str,
) -> serde_json::Value {
    json!({
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"kind": role_kind, "name": role, "apiGroup": "rbac.authorization.k8s.io"},
        "subjects": [{"kind": "User", "name": user}],
    })
}

/// Waits until `check` holds: the index follows writes at once, aggregation shortly after.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_in_one_namespace_gets_kubes_403_elsewhere_and_for_writes() {
    let tls = start_rbac().await;
    let admin = tls.kube_client(Some(&tls.admin)).await;
    namespaces(&admin, &["a", "b"]).await;
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), "a");
    create(
        &bindings,
        binding("a", "alice-view", "ClusterRole", "view", "alice"),
    )
    .await
    .unwrap();
    let alice_key = user(&tls, "alice", &[]);
    let alice = tls.kube_client(Some(&alice_key)).await;

    // view is aggregated from system:aggregate-to-view at start.
    let in_a: Api<ConfigMap> = Api::namespaced(alice.clone(), "a");
    eventually("view to be aggregated", || async {
        in_a.list(&ListParams::default()).await.is_ok()
    })
    .await;
    let secrets_b: Api<Secret> = Api::namespaced(alice.clone(), "b");
    assert_eq!(
        forbidden(secrets_b.list(&ListParams::default()).await),
        r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "b""#
    );
    // view grants no Secrets, even in a.
    let secrets_a: Api<Secret> = Api::namespaced(alice.clone(), "a");
    assert_eq!(
        forbidden(secrets_a.get("token").await),
        r#"secrets "token" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "a""#
    );
    assert_eq!(
        forbidden(create(&in_a, json!({"metadata": {"name": "c"}})).await),
        r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "a""#
    );
    let all_namespaces: Api<Namespace> = Api::all(alice.clone());
    assert_eq!(
        forbidden(all_namespaces.list(&ListParams::default()).await),
        r#"namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    // Non-resource URLs: discovery and health for every authenticated user, nothing else.
    for path in ["/healthz", "/version", "/api", "/apis"] {
        let (status, body) = tls.get(path, Some(&alice_key), &[]).await.unwrap();
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (status, body) = tls.get("/metrics", Some(&alice_key), &[]).await.unwrap();
    assert_eq!(status, 403);
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["message"],
        r#"forbidden: User "alice" cannot get path "/metrics""#
    );
    // Deleting the binding takes the grant away.
    bindings
        .delete("alice-view", &Default::default())
        .await
        .unwrap();
    forbidden(in_a.list(&ListParams::default()).await);
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_grants_or_binds_what_they_do_not_hold_without_escalate_or_bind() {
    let tls = start_rbac().await;
    let admin = tls.kube_client(Some(&tls.admin)).await;
    namespaces(&admin, &["a"]).await;
    // Bob administers namespace a (admin aggregates roles and rolebindings, and edit).
    let admin_bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), "a");
    create(
        &admin_bindings,
        binding("a", "bob-admin", "ClusterRole", "admin", "bob"),
    )
    .await
    .unwrap();
    let bob = tls.kube_client(Some(&user(&tls, "bob", &[]))).await;
    let roles: Api<Role> = Api::namespaced(bob.clone(), "a");
    let configmap_reader = json!({"metadata": {"name": "configmap-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}
    ]});
    eventually("admin to be aggregated", || async {
        create(&roles, configmap_reader.clone()).await.is_ok()
    })
    .await;
    // Nodes are not Bob's to grant.
    let node_reader = json!({"metadata": {"name": "node-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["nodes", "configmaps"], "verbs": ["get"]}
    ]});
    assert_eq!(
        forbidden(create(&roles, node_reader.clone()).await),
        "roles.rbac.authorization.k8s.io \"node-reader\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\"]}"
    );
    // Nor is cluster-admin his to bind.
    let bindings: Api<RoleBinding> = Api::namespaced(bob.clone(), "a");
    let message = forbidden(
        create(
            &bindings,
            binding("a", "carol-admin", "ClusterRole", "cluster-admin", "carol"),
        )
        .await,
    );
    assert!(
        message.starts_with("rolebindings.rbac.authorization.k8s.io \"carol-admin\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"),
        "{message}"
    );
    // What he holds he may bind.
    create(
        &bindings,
        binding("a", "carol-reader", "Role", "configmap-reader", "carol"),
    )
    .await
    .unwrap();
    // With escalate and bind on roles, he may.
    let grants: Api<ClusterRole> = Api::all(admin.clone());
    create(&grants, json!({"metadata": {"name": "role-escalator"}, "rules": [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "clusterroles"], "verbs": ["escalate", "bind"]}
    ]})).await.unwrap();
    create(
        &admin_bindings,
        binding("a", "bob-escalates", "ClusterRole", "role-escalator", "bob"),
    )
    .await
    .unwrap();
    create(&roles, node_reader).await.unwrap();
    create(
        &bindings,
        binding("a", "carol-admin", "ClusterRole", "cluster-admin", "carol"),
    )
    .await
    .unwrap();
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_objects_are_validated_as_kube_apiserver_does() {
    let tls = start_rbac().await;
    let admin = tls.kube_client(Some(&tls.admin)).await;
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let error = create(
        &roles,
        json!({"metadata": {"name": "bad"}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": []},
            {"nonResourceURLs": ["/x"], "resources": ["pods"], "verbs": ["get"]}
        ]}),
    )
    .await
    .unwrap_err();
    let kube::Error::Api(status) = error else {
        panic!("{error:?}")
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "ClusterRole.rbac.authorization.k8s.io \"bad\" is invalid: [rules[0].verbs: Required value: verbs must contain at least one value, rules[1].nonResourceURLs: Invalid value: []string{\"/x\"}: rules cannot apply to both regular resources and non-resource URLs]"
    );
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), "default");
    let created = create(
        &bindings,
        binding("default", "b", "ClusterRole", "view", "alice"),
    )
    .await
    .unwrap();
    assert_eq!(
        created.subjects.as_ref().unwrap()[0].api_group.as_deref(),
        Some("rbac.authorization.k8s.io")
    );
    let mut changed = created.clone();
    changed.role_ref.name = "edit".into();
    let error = bindings
        .replace("b", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = error else {
        panic!("{error:?}")
    };
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status.message.contains("roleRef: Invalid value"),
        "{}",
        status.message
    );
    assert!(
        status.message.ends_with("cannot change roleRef"),
        "{}",
        status.message
    );
    tls.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_and_rules_reviews_answer_can_i_and_impersonation_needs_impersonate() {
    let tls = start_rbac().await;
    let admin = tls.kube_client(Some(&tls.admin)).await;
    namespaces(&admin, &["a"]).await;
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), "a");
    create(
        &bindings,
        binding("a", "alice-view", "ClusterRole", "view", "alice"),
    )
    .await
    .unwrap();
    let alice_key = user(&tls, "alice", &[]);
    let alice = tls.kube_client(Some(&alice_key)).await;
    let can_i = |verb: &str, resource: &str, namespace: &str| SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let reviews: Api<SelfSubjectAccessReview> = Api::all(alice.clone());
    eventually("view to be aggregated", || async {
        reviews
            .create(&PostParams::default(), &can_i("list", "pods", "a"))
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    })
    .await;
    let answer = reviews
        .create(&PostParams::default(), &can_i("list", "pods", "b"))
        .await
        .unwrap();
    assert!(!answer.status.unwrap().allowed);
    let answer = reviews
        .create(&PostParams::default(), &can_i("get", "secrets", "a"))
        .await
        .unwrap();
    assert!(!answer.status.unwrap().allowed);

    let rules: Api<SelfSubjectRulesReview> = Api::all(alice.clone());
    let review = SelfSubjectRulesReview {
        spec: SelfSubjectRulesReviewSpec {
            namespace: Some("a".into()),
        },
        ..Default::default()
    };
    let status = rules
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .unwrap();
    assert!(!status.incomplete);
    assert!(
        status.resource_rules.iter().any(|rule| {
            rule.resources
                .as_deref()
                .unwrap_or_default()
                .contains(&"configmaps".to_string())
                && rule.verbs == ["get", "list", "watch"]
        }),
        "{status:?}"
    );
    assert!(
        status.non_resource_rules.iter().any(|rule| {
            rule.non_resource_urls
                .as_deref()
                .unwrap_or_default()
                .contains(&"/healthz".to_string())
        }),
        "{status:?}"
    );

    // SubjectAccessReview: for those allowed to create it (the admin), about anyone.
    let subject_review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("alice".into()),
            resource_attributes: can_i("watch", "configmaps", "a").spec.resource_attributes,
            ..Default::default()
        },
        ..Default::default()
    };
    let as_admin: Api<SubjectAccessReview> = Api::all(admin.clone());
    assert!(
        as_admin
            .create(&PostParams::default(), &subject_review)
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );
    let as_alice: Api<SubjectAccessReview> = Api::all(alice.clone());
    assert_eq!(
        forbidden(
            as_alice
                .create(&PostParams::default(), &subject_review)
                .await
        ),
        r#"subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope"#
    );

    // Impersonation: the admin acting as alice is refused as alice; alice may not act as bob.
    let (status, body) = tls
        .get(
            "/api/v1/namespaces/b/secrets",
            Some(&tls.admin),
            &[("impersonate-user", "alice")],
        )
        .await
        .unwrap();
    assert_eq!(status, 403);
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["message"],
        r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "b""#
    );
    let (status, _) = tls
        .get(
            "/api/v1/namespaces/a/configmaps",
            Some(&tls.admin),
            &[("impersonate-user", "alice")],
        )
        .await
        .unwrap();
    assert_eq!(status, 200);
    let (status, body) = tls
        .get(
            "/api/v1/namespaces/a/configmaps",
            Some(&alice_key),
            &[("impersonate-user", "bob")],
        )
        .await
        .unwrap();
    assert_eq!(status, 403);
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["message"],
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    assert_eq!(body["details"], json!({"kind": "users", "name": "bob"}));
    // A ServiceAccount impersonated without groups is in its namespace's group.
    let mut group_binding = binding("a", "robots-view", "ClusterRole", "view", "");
    group_binding["subjects"] = json!([{"kind": "Group", "name": "system:serviceaccounts:a"}]);
    create(&bindings, group_binding).await.unwrap();
    let robot = [("impersonate-user", "system:serviceaccount:a:robot")];
    let (status, body) = tls
        .get("/api/v1/namespaces/a/configmaps", Some(&tls.admin), &robot)
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    tls.server.shutdown().await;
}

/// Two API servers on one store: a binding written through one authorizes requests on the
/// other once its watch delivers it (the index follows the store, not only its own writes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_written_through_another_server_takes_effect_here() {
    let ca = pki::generate_ca("test-ca").unwrap();
    let store = corral_store::testing::memory().await;
    let mut servers = Vec::new();
    for _ in 0..2 {
        let config = ServerConfig {
            tls: Some(tls_config(
                &ca,
                pki::CERTIFICATE_VALIDITY,
                Duration::from_secs(3600),
            )),
            authentication: Some(AuthenticationConfig::default()),
            rbac: true,
            ..ServerConfig::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        servers.push(
            corral_apiserver::Server::start(listener, store.store.clone(), config)
                .await
                .unwrap(),
        );
    }
    let client = |server: &corral_apiserver::Server, user: &KeyMaterial| {
        let text = corral_apiserver::kubeconfig::render_tls(
            &server.url(),
            "test",
            Some(&ca.certificate_pem),
            &user.certificate_pem,
            &user.private_key_pem,
        );
        async move {
            let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .unwrap();
            kube::Client::try_from(config).unwrap()
        }
    };
    let admin =
        pki::issue_client(&ca, "admin", &["system:masters"], Duration::from_secs(3600)).unwrap();
    let alice = pki::issue_client(&ca, "alice", &[], Duration::from_secs(3600)).unwrap();
    let on_second: Api<ConfigMap> = Api::namespaced(client(&servers[1], &alice).await, "default");
    forbidden(on_second.list(&ListParams::default()).await);
    let bindings: Api<RoleBinding> = Api::namespaced(client(&servers[0], &admin).await, "default");
    create(
        &bindings,
        binding("default", "alice-view", "ClusterRole", "view", "alice"),
    )
    .await
    .unwrap();
    eventually("the second server to see the binding", || async {
        on_second.list(&ListParams::default()).await.is_ok()
    })
    .await;
    bindings
        .delete("alice-view", &Default::default())
        .await
        .unwrap();
    eventually("the second server to see the binding gone", || async {
        on_second.list(&ListParams::default()).await.is_err()
    })
    .await;
    for server in servers {
        server.shutdown().await;
    }
}
