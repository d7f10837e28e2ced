use super::policy::*;
use crate::auth::UserInfo;
use crate::rbac::rules::Attributes;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps/*"]
  - level: RequestResponse
    verbs: [create, patch]
    userGroups: [developers]
    namespaces: [team-a]
  - level: Request
    resources:
      - group: apps
        resources: ["deployments"]
        resourceNames: [web]
  - level: Metadata
    nonResourceURLs: ["/healthz*", "/version"]
"#;

fn attributes(method: &str, uri: &str) -> Attributes {
    Attributes::from_request(&method.parse().unwrap(), &uri.parse().unwrap())
}

fn level(user: &UserInfo, method: &str, uri: &str) -> Level {
    Policy::parse(POLICY, "test")
        .unwrap()
        .decide(user, &attributes(method, uri))
        .level
}

#[test]
fn the_first_matching_rule_decides() {
    let alice = UserInfo::authenticated("alice", "", vec!["developers".into()]);
    let proxy = UserInfo::authenticated("system:kube-proxy", "", vec![]);
    assert_eq!(
        level(&proxy, "GET", "/api/v1/namespaces/a/secrets/s"),
        Level::None
    );
    assert_eq!(
        level(&alice, "POST", "/api/v1/namespaces/team-a/secrets"),
        Level::Metadata
    );
    assert_eq!(
        level(&alice, "POST", "/api/v1/namespaces/team-a/pods"),
        Level::RequestResponse
    );
    assert_eq!(
        level(&alice, "PUT", "/api/v1/namespaces/team-a/pods/p"),
        Level::None
    );
    assert_eq!(
        level(&alice, "POST", "/api/v1/namespaces/team-b/pods"),
        Level::None
    );
    // `resource/*` matches the resource and its subresources, as in kube.
    assert_eq!(
        level(&alice, "GET", "/api/v1/namespaces/a/configmaps/c/status"),
        Level::Metadata
    );
    assert_eq!(
        level(&alice, "GET", "/api/v1/namespaces/a/configmaps/c"),
        Level::Metadata
    );
    assert_eq!(
        level(&alice, "GET", "/api/v1/namespaces/a/secrets/s/status"),
        Level::None
    );
    assert_eq!(
        level(&alice, "GET", "/apis/apps/v1/namespaces/a/deployments/web"),
        Level::Request
    );
    assert_eq!(
        level(&alice, "GET", "/apis/apps/v1/namespaces/a/deployments/api"),
        Level::None
    );
    assert_eq!(level(&alice, "GET", "/healthz/ready"), Level::Metadata);
    assert_eq!(level(&alice, "GET", "/version"), Level::Metadata);
    assert_eq!(level(&alice, "GET", "/openapi/v2"), Level::None);
}

#[test]
fn stages_are_omitted_by_policy_and_rule() {
    let policy = Policy::parse(POLICY, "test").unwrap();
    let alice = UserInfo::authenticated("alice", "", vec![]);
    let decision = policy.decide(&alice, &attributes("GET", "/api/v1/namespaces/a/secrets"));
    assert!(!decision.records(Stage::RequestReceived));
    assert!(decision.records(Stage::ResponseComplete));
}

#[test]
fn a_policy_of_another_kind_is_refused() {
    let error = Policy::parse("apiVersion: v1\nkind: ConfigMap\n", "p.yaml").unwrap_err();
    assert_eq!(
        error.to_string(),
        "audit policy file p.yaml: no kind \"ConfigMap\" is registered for version \"v1\": want kind Policy of audit.k8s.io/v1"
    );
}
