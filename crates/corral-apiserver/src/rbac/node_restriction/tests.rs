use super::*;

fn node(name: &str) -> UserInfo {
    UserInfo {
        name: format!("system:node:{name}"),
        uid: String::new(),
        groups: vec!["system:nodes".into(), "system:authenticated".into()],
    }
}

fn request(method: &str, path: &str) -> Attributes {
    Attributes::from_request(&method.parse().unwrap(), &path.parse().unwrap())
}

#[test]
fn a_node_modifies_only_its_own_node_and_lease() {
    let a = node("a");
    for own in [
        request("PATCH", "/api/v1/nodes/a/status"),
        request("PUT", "/api/v1/nodes/a"),
        request(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/a",
        ),
        request("GET", "/api/v1/nodes/b"),
        request("POST", "/api/v1/nodes"),
    ] {
        assert_eq!(refusal(&a, &own), None, "{own:?}");
    }
    assert_eq!(
        refusal(&a, &request("PATCH", "/api/v1/nodes/b/status")).as_deref(),
        Some("node \"a\" is not allowed to modify node \"b\"")
    );
    assert_eq!(
        refusal(&a, &request("DELETE", "/api/v1/nodes/b")).as_deref(),
        Some("node \"a\" is not allowed to modify node \"b\"")
    );
    assert_eq!(
        refusal(
            &a,
            &request(
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/b"
            )
        )
        .as_deref(),
        Some("can only access node lease with the same name as the requesting node")
    );
}

#[test]
fn only_node_identities_are_restricted() {
    let mut not_in_group = node("a");
    not_in_group.groups = vec!["system:authenticated".into()];
    let admin = UserInfo {
        name: "kubernetes-admin".into(),
        uid: String::new(),
        groups: vec!["system:masters".into()],
    };
    for user in [not_in_group, admin] {
        assert_eq!(
            refusal(&user, &request("PATCH", "/api/v1/nodes/b/status")),
            None
        );
    }
}
