use std::time::Instant;

use serde_json::json;

use super::index::Index;
use super::rules::{Attributes, rule_allows};
use super::*;

fn binding(
    kind: Kind,
    namespace: &str,
    name: &str,
    role_kind: &str,
    role: &str,
    subject: serde_json::Value,
) -> serde_json::Value {
    json!({
        "metadata": {"namespace": namespace, "name": name},
        "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role},
        "subjects": [subject],
        "kind": kind.kind(),
    })
}

fn user(name: &str) -> UserInfo {
    UserInfo::authenticated(name, "", vec![])
}

fn allows(index: &Index, user: &UserInfo, method: http::Method, uri: &str) -> bool {
    let attributes = Attributes::from_request(&method, &uri.parse().unwrap());
    index
        .snapshot()
        .any_rule(user, &attributes.namespace, |rule| {
            rule_allows(&attributes, rule)
        })
}

fn index_with_view_in_a() -> Index {
    let index = Index::default();
    let view = json!({"metadata": {"name": "view"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    ]});
    let reader = json!({"metadata": {"namespace": "a", "name": "reader"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    ]});
    let alice = json!({"kind": "User", "apiGroup": GROUP, "name": "alice"});
    let team = json!({"kind": "Group", "apiGroup": GROUP, "name": "team"});
    let robot = json!({"kind": "ServiceAccount", "name": "robot"});
    let bindings = [
        (
            Kind::RoleBinding,
            binding(
                Kind::RoleBinding,
                "a",
                "alice-view",
                "ClusterRole",
                "view",
                alice,
            ),
        ),
        (
            Kind::RoleBinding,
            binding(
                Kind::RoleBinding,
                "a",
                "team-reader",
                "Role",
                "reader",
                team,
            ),
        ),
        (
            Kind::ClusterRoleBinding,
            binding(
                Kind::ClusterRoleBinding,
                "",
                "robot-view",
                "ClusterRole",
                "view",
                json!({"kind": "ServiceAccount", "name": "robot", "namespace": "b"}),
            ),
        ),
        (
            Kind::RoleBinding,
            binding(
                Kind::RoleBinding,
                "c",
                "robot-reader",
                "ClusterRole",
                "view",
                robot,
            ),
        ),
    ];
    index.observe_all(
        [
            (Kind::ClusterRole, "", "view", 1, Some(&view)),
            (Kind::Role, "a", "reader", 2, Some(&reader)),
        ]
        .into_iter()
        .chain(bindings.iter().enumerate().map(|(i, (kind, object))| {
            (
                *kind,
                object["metadata"]["namespace"].as_str().unwrap(),
                object["metadata"]["name"].as_str().unwrap(),
                3 + i as i64,
                Some(object),
            )
        })),
    );
    index
}

#[test]
fn bindings_grant_their_roles_rules_where_they_apply() {
    let index = index_with_view_in_a();
    let alice = user("alice");
    assert!(allows(
        &index,
        &alice,
        http::Method::GET,
        "/api/v1/namespaces/a/configmaps"
    ));
    assert!(!allows(
        &index,
        &alice,
        http::Method::GET,
        "/api/v1/namespaces/b/configmaps"
    ));
    assert!(!allows(
        &index,
        &alice,
        http::Method::GET,
        "/api/v1/configmaps"
    ));
    assert!(!allows(
        &index,
        &alice,
        http::Method::POST,
        "/api/v1/namespaces/a/configmaps"
    ));
    let member = UserInfo::authenticated("carol", "", vec!["team".into()]);
    assert!(allows(
        &index,
        &member,
        http::Method::GET,
        "/api/v1/namespaces/a/pods/p"
    ));
    assert!(!allows(
        &index,
        &member,
        http::Method::GET,
        "/api/v1/namespaces/a/configmaps"
    ));
    // A ServiceAccount subject: its namespace, or the binding's.
    let robot_b = user("system:serviceaccount:b:robot");
    assert!(allows(
        &index,
        &robot_b,
        http::Method::GET,
        "/api/v1/configmaps"
    ));
    let robot_c = user("system:serviceaccount:c:robot");
    assert!(allows(
        &index,
        &robot_c,
        http::Method::GET,
        "/api/v1/namespaces/c/configmaps"
    ));
    assert!(!allows(
        &index,
        &robot_c,
        http::Method::GET,
        "/api/v1/configmaps"
    ));
}

#[test]
fn older_news_of_an_object_does_not_replace_newer_and_deletes_remove_grants() {
    let index = index_with_view_in_a();
    let alice = user("alice");
    index.observe_all([(Kind::RoleBinding, "a", "alice-view", 2, None)]);
    assert!(allows(
        &index,
        &alice,
        http::Method::GET,
        "/api/v1/namespaces/a/configmaps"
    ));
    index.observe_all([(Kind::RoleBinding, "a", "alice-view", 100, None)]);
    assert!(!allows(
        &index,
        &alice,
        http::Method::GET,
        "/api/v1/namespaces/a/configmaps"
    ));
}

/// The cost of one decision with 1,000 RoleBindings (and 1,000 users, each bound in its own
/// namespace) plus the bootstrap policy's ClusterRoleBindings, including the parse of the
/// request's attributes. `cargo nextest run -p corral-apiserver --release --run-ignored only
/// -E 'test(rbac_decision_cost)' --no-capture`; results in BENCHMARKS.md.
#[test]
#[ignore]
fn rbac_decision_cost() {
    let index = Index::default();
    let mut objects = Vec::new();
    for role in bootstrap::cluster_roles() {
        objects.push((Kind::ClusterRole, role));
    }
    for binding in bootstrap::cluster_role_bindings() {
        objects.push((Kind::ClusterRoleBinding, binding));
    }
    for i in 0..1000 {
        let subject = json!({"kind": "User", "apiGroup": GROUP, "name": format!("user-{i}")});
        objects.push((
            Kind::RoleBinding,
            binding(
                Kind::RoleBinding,
                &format!("ns-{}", i % 100),
                &format!("b-{i}"),
                "ClusterRole",
                "system:aggregate-to-view",
                subject,
            ),
        ));
    }
    index.observe_all(objects.iter().enumerate().map(|(i, (kind, object))| {
        (
            *kind,
            object["metadata"]["namespace"].as_str().unwrap_or(""),
            object["metadata"]["name"].as_str().unwrap(),
            i as i64 + 1,
            Some(object),
        )
    }));
    let user = UserInfo::authenticated("user-999", "", vec!["developers".into()]);
    let cases = [
        (http::Method::GET, "/api/v1/namespaces/ns-99/pods", true),
        (http::Method::GET, "/api/v1/namespaces/ns-99/secrets", false),
        (http::Method::GET, "/api/v1/namespaces/ns-98/pods", false),
        (http::Method::GET, "/healthz", true),
    ];
    for (method, uri, expected) in &cases {
        assert_eq!(
            allows(&index, &user, method.clone(), uri),
            *expected,
            "{uri}"
        );
    }
    let uris: Vec<(http::Method, http::Uri)> = cases
        .iter()
        .map(|(m, u, _)| (m.clone(), u.parse().unwrap()))
        .collect();
    let rounds = 200_000;
    let started = Instant::now();
    let mut allowed = 0usize;
    for round in 0..rounds {
        let (method, uri) = &uris[round % uris.len()];
        let attributes = Attributes::from_request(method, uri);
        if index
            .snapshot()
            .any_rule(&user, &attributes.namespace, |rule| {
                rule_allows(&attributes, rule)
            })
        {
            allowed += 1;
        }
    }
    let per_request = started.elapsed() / rounds as u32;
    assert_eq!(allowed, rounds / 2);
    // The decision alone, on attributes parsed beforehand.
    let parsed: Vec<Attributes> = uris
        .iter()
        .map(|(method, uri)| Attributes::from_request(method, uri))
        .collect();
    let started = Instant::now();
    let mut allowed = 0usize;
    for round in 0..rounds {
        let attributes = &parsed[round % parsed.len()];
        if index
            .snapshot()
            .any_rule(&user, &attributes.namespace, |rule| {
                rule_allows(attributes, rule)
            })
        {
            allowed += 1;
        }
    }
    let per_decision = started.elapsed() / rounds as u32;
    assert_eq!(allowed, rounds / 2);
    println!(
        "RBAC with 1,000 RoleBindings: {per_request:?} per request (attributes parsed and authorized), {per_decision:?} per decision alone"
    );
}
