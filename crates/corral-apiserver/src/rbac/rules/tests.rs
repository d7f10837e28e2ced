use http::{Method, Uri};
use k8s_openapi::api::rbac::v1::PolicyRule;

use super::*;

fn attributes(method: Method, uri: &str) -> Attributes {
    Attributes::from_request(&method, &uri.parse::<Uri>().unwrap())
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..Default::default()
    }
}

#[test]
fn request_attributes_follow_kube_apiservers_request_info() {
    let list = attributes(Method::GET, "/api/v1/namespaces/b/secrets");
    assert_eq!(
        (
            list.verb.as_str(),
            list.resource.as_str(),
            list.namespace.as_str(),
            list.resource_request
        ),
        ("list", "secrets", "b", true)
    );
    assert_eq!(
        attributes(Method::GET, "/api/v1/pods?watch=true").verb,
        "watch"
    );
    assert_eq!(attributes(Method::GET, "/api/v1/watch/pods").verb, "watch");
    let get = attributes(
        Method::GET,
        "/apis/apps/v1/namespaces/a/deployments/web/scale",
    );
    assert_eq!(
        (
            get.verb.as_str(),
            get.group.as_str(),
            get.resource.as_str(),
            get.name.as_str(),
            get.subresource.as_str()
        ),
        ("get", "apps", "deployments", "web", "scale")
    );
    assert_eq!(
        attributes(Method::DELETE, "/api/v1/namespaces/a/configmaps").verb,
        "deletecollection"
    );
    assert_eq!(
        attributes(Method::DELETE, "/api/v1/namespaces/a/configmaps/x").verb,
        "delete"
    );
    assert_eq!(
        attributes(Method::PATCH, "/api/v1/namespaces/a/configmaps/x").verb,
        "patch"
    );
    assert_eq!(
        attributes(Method::PUT, "/api/v1/namespaces/a/configmaps/x").verb,
        "update"
    );
    assert_eq!(
        attributes(Method::POST, "/api/v1/namespaces/a/configmaps").verb,
        "create"
    );
    // A namespace is its own namespace; its status is a subresource.
    let namespace = attributes(Method::PUT, "/api/v1/namespaces/a/status");
    assert_eq!(
        (
            namespace.resource.as_str(),
            namespace.name.as_str(),
            namespace.subresource.as_str(),
            namespace.namespace.as_str()
        ),
        ("namespaces", "a", "status", "a")
    );
    // A list for one name by field selector is about that name.
    let named = attributes(
        Method::GET,
        "/api/v1/namespaces/a/secrets?fieldSelector=metadata.name%3Dtoken",
    );
    assert_eq!(
        (named.verb.as_str(), named.name.as_str()),
        ("list", "token")
    );
    for path in [
        "/healthz",
        "/api",
        "/apis",
        "/apis/apps",
        "/apis/apps/v1",
        "/version",
        "/openapi/v3",
    ] {
        let attributes = attributes(Method::GET, path);
        assert!(!attributes.resource_request, "{path}");
        assert_eq!(
            (attributes.verb.as_str(), attributes.path.as_str()),
            ("get", path)
        );
    }
}

#[test]
fn forbidden_messages_are_kube_apiservers() {
    let alice = UserInfo::authenticated("alice", "", vec![]);
    assert_eq!(
        attributes(Method::GET, "/api/v1/namespaces/b/secrets").forbidden_message(&alice),
        r#"User "alice" cannot list resource "secrets" in API group "" in the namespace "b""#
    );
    assert_eq!(
        attributes(Method::GET, "/apis/cluster.x-k8s.io/v1beta2/clusters")
            .forbidden_message(&alice),
        r#"User "alice" cannot list resource "clusters" in API group "cluster.x-k8s.io" at the cluster scope"#
    );
    assert_eq!(
        attributes(Method::PUT, "/api/v1/namespaces/a/pods/p/status").forbidden_message(&alice),
        r#"User "alice" cannot update resource "pods/status" in API group "" in the namespace "a""#
    );
    assert_eq!(
        attributes(Method::GET, "/metrics").forbidden_message(&alice),
        r#"User "alice" cannot get path "/metrics""#
    );
}

#[test]
fn rules_match_verbs_groups_resources_subresources_and_names() {
    let get_pod = attributes(Method::GET, "/api/v1/namespaces/a/pods/p");
    assert!(rule_allows(&get_pod, &rule(&[""], &["pods"], &["get"])));
    assert!(rule_allows(&get_pod, &rule(&["*"], &["*"], &["*"])));
    assert!(!rule_allows(
        &get_pod,
        &rule(&["apps"], &["pods"], &["get"])
    ));
    assert!(!rule_allows(&get_pod, &rule(&[""], &["pods"], &["list"])));
    let mut named = rule(&[""], &["pods"], &["get"]);
    named.resource_names = Some(vec!["q".into()]);
    assert!(!rule_allows(&get_pod, &named));
    named.resource_names = Some(vec!["p".into()]);
    assert!(rule_allows(&get_pod, &named));
    let status = attributes(Method::PATCH, "/api/v1/namespaces/a/pods/p/status");
    assert!(!rule_allows(&status, &rule(&[""], &["pods"], &["patch"])));
    assert!(rule_allows(
        &status,
        &rule(&[""], &["pods/status"], &["patch"])
    ));
    assert!(rule_allows(
        &status,
        &rule(&[""], &["*/status"], &["patch"])
    ));
    let url = |urls: &[&str]| PolicyRule {
        non_resource_urls: Some(urls.iter().map(|u| u.to_string()).collect()),
        verbs: vec!["get".into()],
        ..Default::default()
    };
    let healthz = attributes(Method::GET, "/healthz/etcd");
    assert!(rule_allows(&healthz, &url(&["/healthz/*"])));
    assert!(!rule_allows(&healthz, &url(&["/healthz"])));
    assert!(!rule_allows(&get_pod, &url(&["*"])));
}

#[test]
fn covering_breaks_rules_down_and_reports_what_is_missing_compactly() {
    let owner = vec![
        rule(&[""], &["configmaps", "pods"], &["get", "list"]),
        rule(&[""], &["*/status"], &["get"]),
    ];
    assert!(uncovered(&owner, &[rule(&[""], &["pods"], &["get"])]).is_empty());
    assert!(uncovered(&owner, &[rule(&[""], &["pods/status"], &["get"])]).is_empty());
    let missing = uncovered(
        &owner,
        &[rule(&[""], &["pods", "secrets"], &["get", "delete"])],
    );
    let described: Vec<String> = compact(missing).iter().map(compact_string).collect();
    assert_eq!(
        described,
        [
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}"#,
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}"#,
        ]
    );
    // A rule limited to names covers only those names.
    let mut named = rule(&[""], &["pods"], &["get"]);
    named.resource_names = Some(vec!["p".into()]);
    assert!(uncovered(&[named.clone()], &[rule(&[""], &["pods"], &["get"])]).len() == 1);
    assert!(uncovered(&[rule(&[""], &["pods"], &["get"])], &[named]).is_empty());
}
