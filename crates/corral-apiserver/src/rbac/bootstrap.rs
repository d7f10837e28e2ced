//! kube-apiserver's bootstrap policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`),
//! the part that concerns what this server serves: `cluster-admin` bound to
//! `system:masters`; `admin`, `edit` and `view`, aggregated from the
//! `system:aggregate-to-*` roles by their `rbac.authorization.k8s.io/aggregate-to-*` labels;
//! `system:discovery`, `system:basic-user`, `system:public-info-viewer` and
//! `system:service-account-issuer-discovery` with their bindings;
//! the node roles (`system:node`, `system:node-bootstrapper`, the CSR client roles), unbound.
//! Each object is created at start when missing; an existing one is left as it is.

use serde_json::{Value, json};

use super::{GROUP, Kind};
use crate::error::ApiError;
use crate::server::ApiState;

const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn urls(urls: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": urls, "verbs": verbs})
}

fn metadata(name: &str, labels: &[(&str, &str)]) -> Value {
    let mut all = serde_json::Map::new();
    all.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    for (key, value) in labels {
        all.insert((*key).into(), json!(value));
    }
    json!({
        "name": name,
        "labels": all,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "rules": rules,
    })
}

fn aggregated(name: &str, labels: &[(&str, &str)], selects: &str) -> Value {
    let mut role = cluster_role(name, labels, Vec::new());
    role["aggregationRule"] = json!({"clusterRoleSelectors": [
        {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{selects}"): "true"}}
    ]});
    role
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|group| json!({"apiGroup": GROUP, "kind": "Group", "name": group}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

const TO_ADMIN: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-admin", "true");
const TO_EDIT: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-edit", "true");
const TO_VIEW: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-view", "true");

/// The bootstrap ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let all = ["*"];
    let read_write: Vec<&str> = READ.iter().chain(WRITE.iter()).copied().collect();
    vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![rule(&all, &all, &all), urls(&all, &all)],
        ),
        cluster_role(
            "system:discovery",
            &[],
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"],
                ),
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![urls(
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
                &["get"],
            )],
        ),
        // ServiceAccount token verifiers elsewhere: the OIDC discovery documents.
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            vec![urls(
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                &["get"],
            )],
        ),
        // What joining machines and kubelets use: kubeadm binds the first two to its
        // bootstrap tokens' group and the third to `system:nodes`.
        cluster_role(
            "system:node-bootstrapper",
            &[],
            vec![rule(
                &[crate::certificates::GROUP],
                &["certificatesigningrequests"],
                &["create", "get", "list", "watch"],
            )],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            &[],
            vec![rule(
                &[crate::certificates::GROUP],
                &["certificatesigningrequests/nodeclient"],
                &["create"],
            )],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            &[],
            vec![rule(
                &[crate::certificates::GROUP],
                &["certificatesigningrequests/selfnodeclient"],
                &["create"],
            )],
        ),
        // A kubelet's permissions (kube grants them through its Node authorizer, which
        // Corral does not have: whoever runs kubelets binds this role to `system:nodes`).
        cluster_role(
            "system:node",
            &[],
            vec![
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews", "subjectaccessreviews"],
                    &["create"],
                ),
                rule(&[""], &["services", "endpoints"], &["get", "list", "watch"]),
                rule(&[""], &["nodes"], &["create", "get", "list", "watch"]),
                rule(&[""], &["nodes/status"], &["patch", "update"]),
                rule(&[""], &["nodes"], &["patch", "update"]),
                rule(&[""], &["events"], &["create", "patch", "update"]),
                rule(
                    &[""],
                    &["pods"],
                    &["get", "list", "watch", "create", "delete"],
                ),
                rule(&[""], &["pods/status"], &["patch", "update"]),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(&[""], &["configmaps", "secrets"], &["get", "list", "watch"]),
                rule(
                    &[crate::certificates::GROUP],
                    &["certificatesigningrequests"],
                    &["create", "get", "list", "watch"],
                ),
                rule(
                    &["coordination.k8s.io"],
                    &["leases"],
                    &["create", "delete", "get", "patch", "update"],
                ),
            ],
        ),
        aggregated("admin", &[], "admin"),
        aggregated("edit", &[TO_ADMIN], "edit"),
        aggregated("view", &[TO_EDIT], "view"),
        cluster_role(
            "system:aggregate-to-admin",
            &[TO_ADMIN],
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"],
                ),
                rule(&[GROUP], &["rolebindings", "roles"], &read_write),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[TO_EDIT],
            vec![
                rule(
                    &[""],
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                    &READ,
                ),
                rule(&[""], &["serviceaccounts"], &["impersonate"]),
                rule(
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                    &WRITE,
                ),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    &WRITE,
                ),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                    &WRITE,
                ),
                rule(&["autoscaling"], &["horizontalpodautoscalers"], &WRITE),
                rule(&["batch"], &["cronjobs", "jobs"], &WRITE),
                rule(&["policy"], &["poddisruptionbudgets"], &WRITE),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                    &WRITE,
                ),
                rule(&["coordination.k8s.io"], &["leases"], &WRITE),
            ],
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[TO_VIEW],
            vec![
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    &READ,
                ),
                rule(
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    &READ,
                ),
                rule(&[""], &["namespaces"], &READ),
                rule(&["discovery.k8s.io"], &["endpointslices"], &READ),
                rule(
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                    &READ,
                ),
                rule(
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                    &READ,
                ),
                rule(
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                    &READ,
                ),
                rule(
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                    &READ,
                ),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                    &READ,
                ),
                rule(&["events.k8s.io"], &["events"], &READ),
                rule(&["coordination.k8s.io"], &["leases"], &READ),
            ],
        ),
    ]
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", "cluster-admin", &["system:masters"]),
        binding(
            "system:discovery",
            "system:discovery",
            &["system:authenticated"],
        ),
        binding(
            "system:basic-user",
            "system:basic-user",
            &["system:authenticated"],
        ),
        binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            &["system:serviceaccounts"],
        ),
    ]
}

/// Creates every bootstrap object that does not exist.
pub async fn ensure(state: &ApiState) -> Result<(), ApiError> {
    for (kind, objects) in [
        (Kind::ClusterRole, cluster_roles()),
        (Kind::ClusterRoleBinding, cluster_role_bindings()),
    ] {
        let target = super::cluster_target(state, kind);
        for object in objects {
            let name = object["metadata"]["name"].as_str().unwrap_or("");
            let key = target.resource.key(None, name);
            if state.store.get(&key, None).await?.is_some() {
                continue;
            }
            match crate::rest::create(state, &target, &Default::default(), object).await {
                Ok(_) => {}
                Err(error) if error.reason == "AlreadyExists" => {}
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}
