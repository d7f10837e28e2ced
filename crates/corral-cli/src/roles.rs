//! The least-privilege ClusterRoles of the core controllers and of each built-in provider:
//! what each one reads and writes, and nothing else (no RBAC objects, no kinds of another
//! provider it does not drive). `init` applies them with their ClusterRoleBindings, so they
//! work on Corral's own API server and on a real Kubernetes cluster alike.
//!
//! Each component `<label>` (the clusterctl provider label: `cluster-api`,
//! `bootstrap-kubeadm`, `control-plane-kubeadm`, `infrastructure-in-memory`,
//! `infrastructure-plugin`) gets a
//! ClusterRole `corral:<label>` bound to the user `system:corral:<label>` (its identity when it
//! runs on its own) and to the group [`CONTROLLERS_GROUP`] (the identity of `corral up`'s
//! in-process controllers, which run every component behind one client).

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};

use crate::components::BuiltinProvider;
use crate::{Connection, Error, FIELD_MANAGER};

/// The group every component's ClusterRole is bound to: the in-process controllers of
/// `corral up` run in it.
pub const CONTROLLERS_GROUP: &str = "system:corral-controllers";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..Default::default()
    }
}

/// What every component needs: Events (core/v1 and events.k8s.io), leader-election Leases,
/// and the CRDs (contract labels, served versions).
fn common() -> Vec<PolicyRule> {
    vec![
        rule(
            &["", "events.k8s.io"],
            &["events"],
            &["create", "get", "list", "patch", "update", "watch"],
        ),
        rule(&["coordination.k8s.io"], &["leases"], WRITE),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            READ,
        ),
    ]
}

/// The rules of the component with clusterctl label `label`; `None` for one this list does
/// not know.
pub fn rules(label: &str) -> Option<Vec<PolicyRule>> {
    let specific = match label {
        // The core controllers: every Cluster API kind, the provider objects they reference
        // (owner references, cloning from templates, deletion), Secrets (kubeconfigs,
        // certificates) and the inventory.
        "cluster-api" => vec![
            rule(&["cluster.x-k8s.io"], &["*"], WRITE),
            rule(
                &[
                    "bootstrap.cluster.x-k8s.io",
                    "controlplane.cluster.x-k8s.io",
                    "infrastructure.cluster.x-k8s.io",
                    "infrastructure.corral.dev",
                ],
                &["*"],
                WRITE,
            ),
            rule(&[""], &["secrets"], WRITE),
            rule(&[""], &["configmaps", "namespaces"], READ),
            rule(&["clusterctl.cluster.x-k8s.io"], &["providers"], READ),
        ],
        // KubeadmConfigs, their bootstrap data Secrets, the cluster certificates and the
        // ConfigMap that is a cluster's init lock.
        "bootstrap-kubeadm" => vec![
            rule(&["bootstrap.cluster.x-k8s.io"], &["*"], WRITE),
            rule(
                &["cluster.x-k8s.io"],
                &["clusters", "machines", "machinesets", "machinepools"],
                READ,
            ),
            rule(&[""], &["secrets", "configmaps"], WRITE),
        ],
        // KubeadmControlPlanes: their Machines, KubeadmConfigs and infrastructure machines
        // (cloned from the template), the cluster's certificate and kubeconfig Secrets.
        "control-plane-kubeadm" => vec![
            rule(&["controlplane.cluster.x-k8s.io"], &["*"], WRITE),
            rule(
                &["cluster.x-k8s.io"],
                &["clusters", "clusters/status"],
                &["get", "list", "watch", "patch"],
            ),
            rule(
                &["cluster.x-k8s.io"],
                &["machines", "machines/status"],
                WRITE,
            ),
            rule(&["bootstrap.cluster.x-k8s.io"], &["kubeadmconfigs"], WRITE),
            rule(
                &[
                    "infrastructure.cluster.x-k8s.io",
                    "infrastructure.corral.dev",
                ],
                &["*"],
                WRITE,
            ),
            rule(&[""], &["secrets"], WRITE),
            rule(&[""], &["configmaps"], READ),
        ],
        // The in-memory infrastructure: its own kinds, the Clusters and Machines they belong
        // to, and the bootstrap data Secrets it runs.
        "infrastructure-in-memory" => vec![
            rule(&["infrastructure.cluster.x-k8s.io"], &["*"], WRITE),
            rule(&["cluster.x-k8s.io"], &["clusters", "machines"], READ),
            rule(&[""], &["secrets"], READ),
        ],
        // Provider plugins: the ProviderPlugins it calls (status: what GetInfo said), the plugin
        // infrastructure kinds, the Clusters and Machines they belong to, the bootstrap
        // data Secrets it hands to CreateMachine, and its admission webhook's registration
        // (the one configuration `init` created, nothing else).
        "infrastructure-plugin" => vec![
            PolicyRule {
                resource_names: Some(vec![
                    corral_infra_plugin::admission::CONFIGURATION.to_string(),
                ]),
                ..rule(
                    &["admissionregistration.k8s.io"],
                    &["validatingwebhookconfigurations"],
                    &["get", "patch"],
                )
            },
            rule(
                &["corral.dev"],
                &["providerplugins", "providerplugins/status"],
                WRITE,
            ),
            rule(&["infrastructure.corral.dev"], &["*"], WRITE),
            rule(&["cluster.x-k8s.io"], &["clusters", "machines"], READ),
            rule(&[""], &["secrets"], READ),
        ],
        _ => return None,
    };
    Some(specific.into_iter().chain(common()).collect())
}

/// The user a component runs as on its own.
pub fn user(label: &str) -> String {
    format!("system:corral:{label}")
}

fn role_name(label: &str) -> String {
    format!("corral:{label}")
}

/// The ClusterRole and ClusterRoleBinding of `provider`, if it has rules.
pub fn objects(provider: &BuiltinProvider) -> Option<(ClusterRole, ClusterRoleBinding)> {
    let label = provider.label();
    let rules = rules(&label)?;
    let metadata = ObjectMeta {
        name: Some(role_name(&label)),
        labels: Some(
            [
                (corral_api::labels::CLUSTERCTL.to_string(), String::new()),
                (corral_api::labels::PROVIDER_NAME.to_string(), label.clone()),
            ]
            .into(),
        ),
        ..Default::default()
    };
    let role = ClusterRole {
        metadata: metadata.clone(),
        rules: Some(rules),
        ..Default::default()
    };
    let subject = |kind: &str, name: String| Subject {
        api_group: Some(RBAC_GROUP.into()),
        kind: kind.into(),
        name,
        namespace: None,
    };
    let binding = ClusterRoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.into()),
            kind: "ClusterRole".into(),
            name: role_name(&label),
        },
        subjects: Some(vec![
            subject("User", user(&label)),
            subject("Group", CONTROLLERS_GROUP.into()),
        ]),
    };
    Some((role, binding))
}

/// Applies the ClusterRole and ClusterRoleBinding of `provider`; returns the role's name.
pub async fn install(
    connection: &Connection,
    provider: &BuiltinProvider,
) -> Result<Option<String>, Error> {
    let Some((role, binding)) = objects(provider) else {
        return Ok(None);
    };
    let name = role.metadata.name.clone().unwrap_or_default();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut value = serde_json::to_value(&role).expect("a ClusterRole serializes");
    value["apiVersion"] = "rbac.authorization.k8s.io/v1".into();
    value["kind"] = "ClusterRole".into();
    Api::<ClusterRole>::all(connection.client.clone())
        .patch(&name, &params, &Patch::Apply(&value))
        .await
        .map_err(|error| connection.fail(format!("installing the ClusterRole {name}"), error))?;
    let mut value = serde_json::to_value(&binding).expect("a ClusterRoleBinding serializes");
    value["apiVersion"] = "rbac.authorization.k8s.io/v1".into();
    value["kind"] = "ClusterRoleBinding".into();
    Api::<ClusterRoleBinding>::all(connection.client.clone())
        .patch(&name, &params, &Patch::Apply(&value))
        .await
        .map_err(|error| {
            connection.fail(format!("installing the ClusterRoleBinding {name}"), error)
        })?;
    Ok(Some(name))
}
