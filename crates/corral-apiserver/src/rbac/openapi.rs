//! The OpenAPI component schemas of the `rbac.authorization.k8s.io/v1` kinds, named as
//! kube-apiserver names them (`io.k8s.api.rbac.v1.Role`), for `kubectl explain`, `create` and
//! `apply`. `openapi/schemas.rs` adds them to its library.

use serde_json::{Value, json};

use super::GROUP;
use crate::openapi::schemas::{
    kind, list, list_of, object, reference, required, string, string_list,
};

/// The package of the component names.
pub const PACKAGE: &str = "io.k8s.api.rbac.v1";

fn name(kind: &str) -> String {
    format!("{PACKAGE}.{kind}")
}

fn atomic(mut schema: Value) -> Value {
    schema["x-kubernetes-list-type"] = json!("atomic");
    schema
}

pub fn schemas() -> Vec<(String, Value)> {
    let rules = || {
        atomic(list_of(
            &name("PolicyRule"),
            "The PolicyRules of this role: what it grants.",
        ))
    };
    let role_ref = || {
        reference(
            &name("RoleRef"),
            "The Role or ClusterRole granted. It cannot be changed.",
        )
    };
    let subjects = || {
        atomic(list_of(
            &name("Subject"),
            "The users, groups and service accounts the role is granted to.",
        ))
    };
    let mut schemas = vec![
        (
            name("PolicyRule"),
            required(
                object(
                    "PolicyRule grants verbs on resources or non-resource URLs.",
                    vec![
                        (
                            "apiGroups",
                            atomic(string_list(
                                "The API groups of the resources; \"\" is the core group, \"*\" every group.",
                            )),
                        ),
                        (
                            "nonResourceURLs",
                            atomic(string_list(
                                "Non-resource URL paths (\"/healthz\"), a trailing \"*\" matching any suffix; ClusterRoles only.",
                            )),
                        ),
                        (
                            "resourceNames",
                            atomic(string_list(
                                "The names the rule is limited to; empty is every name.",
                            )),
                        ),
                        (
                            "resources",
                            atomic(string_list(
                                "The resources (\"pods\", \"pods/status\", \"*/scale\"), \"*\" every resource.",
                            )),
                        ),
                        (
                            "verbs",
                            atomic(string_list(
                                "The verbs granted (get, list, watch, create, update, patch, delete, deletecollection, ...), \"*\" every verb.",
                            )),
                        ),
                    ],
                ),
                &["verbs"],
            ),
        ),
        (
            name("RoleRef"),
            required(
                object(
                    "RoleRef names the role a binding grants.",
                    vec![
                        (
                            "apiGroup",
                            string("The group of the referenced role: rbac.authorization.k8s.io."),
                        ),
                        ("kind", string("Role or ClusterRole.")),
                        ("name", string("The name of the role.")),
                    ],
                ),
                &["apiGroup", "kind", "name"],
            ),
        ),
        (
            name("Subject"),
            required(
                object(
                    "Subject is a user, group or service account a role is bound to.",
                    vec![
                        (
                            "apiGroup",
                            string(
                                "rbac.authorization.k8s.io for User and Group, \"\" for ServiceAccount.",
                            ),
                        ),
                        ("kind", string("User, Group or ServiceAccount.")),
                        ("name", string("The name of the subject.")),
                        ("namespace", string("The namespace of a ServiceAccount.")),
                    ],
                ),
                &["kind", "name"],
            ),
        ),
        (
            name("AggregationRule"),
            object(
                "AggregationRule selects the ClusterRoles whose rules make up this one's.",
                vec![(
                    "clusterRoleSelectors",
                    atomic(json!({
                        "type": "array",
                        "description": "Selectors of ClusterRoles; the rules of every match are aggregated.",
                        "items": object(
                            "A label selector: every matchLabels entry and matchExpressions requirement must hold.",
                            vec![
                                ("matchLabels", json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": "Labels that must all be present with these values."})),
                                ("matchExpressions", atomic(json!({"type": "array", "description": "Requirements that must all hold.", "items": object("A label requirement.", vec![
                                    ("key", string("The label key.")),
                                    ("operator", string("In, NotIn, Exists or DoesNotExist.")),
                                    ("values", atomic(string_list("The values, for In and NotIn."))),
                                ])}))),
                            ],
                        ),
                    })),
                )],
            ),
        ),
        (
            name("Role"),
            kind(
                "Role is a namespaced set of PolicyRules, granted by a RoleBinding.",
                (GROUP, "v1", "Role"),
                vec![("rules", rules())],
            ),
        ),
        (
            name("ClusterRole"),
            kind(
                "ClusterRole is a cluster-wide set of PolicyRules, granted by a RoleBinding (in its namespace) or a ClusterRoleBinding.",
                (GROUP, "v1", "ClusterRole"),
                vec![
                    (
                        "aggregationRule",
                        reference(
                            &name("AggregationRule"),
                            "When set, the rules are the controller's: those of the ClusterRoles selected.",
                        ),
                    ),
                    ("rules", rules()),
                ],
            ),
        ),
        (
            name("RoleBinding"),
            required(
                kind(
                    "RoleBinding grants a Role or ClusterRole to subjects in its namespace.",
                    (GROUP, "v1", "RoleBinding"),
                    vec![("roleRef", role_ref()), ("subjects", subjects())],
                ),
                &["roleRef"],
            ),
        ),
        (
            name("ClusterRoleBinding"),
            required(
                kind(
                    "ClusterRoleBinding grants a ClusterRole to subjects cluster-wide.",
                    (GROUP, "v1", "ClusterRoleBinding"),
                    vec![("roleRef", role_ref()), ("subjects", subjects())],
                ),
                &["roleRef"],
            ),
        ),
    ];
    for kind in ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"] {
        schemas.push((
            name(&format!("{kind}List")),
            list(&name(kind), GROUP, "v1", &format!("{kind}List"), kind),
        ));
    }
    schemas
}
