//! The least-privilege ClusterRoles of the core controllers and of each built-in provider:
//! what each one reads and writes, and nothing else (no RBAC objects, no kinds of another
//! provider it does not drive). `init` applies them with their ClusterRoleBindings, so they
//! work on Corral's own API server and on a real Kubernetes cluster alike.
//!
//! Each component `<label>` (the clusterctl provider label: `cluster-api`,
//! `bootstrap-kubeadm`, `control-plane-kubeadm`, `infrastructure-in-memory`,
//! `infrastructure-plugin`) gets a
//! ClusterRole `corral:<label>` bound to
//! - the component's own ServiceAccount, upstream's `<prefix>-manager` in the provider's
//!   namespace (`capi-system/capi-manager`, ...), which a component running on its own runs as;
//! - the ServiceAccount [`CONTROLLERS_NAMESPACE`]/[`CONTROLLERS_SERVICE_ACCOUNT`], which
//!   `corral controllers` (every component behind one client) runs as;
//! - the user `system:corral:<label>` (a client certificate with that CN) and the group
//!   [`CONTROLLERS_GROUP`] (the identity of `corral up`'s in-process controllers).
//!
//! `init` creates those ServiceAccounts; [`request_token`] asks the API server for a token of
//! one (`TokenRequest`, as `kubectl create token`), which `corral kubeconfig` writes as the
//! `tokenFile` of a kubeconfig. That works on Corral's API server and on kube-apiserver alike.

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};

use crate::components::BuiltinProvider;
use crate::{Connection, Error, FIELD_MANAGER};

/// The group every component's ClusterRole is bound to: the in-process controllers of
/// `corral up` run in it.
pub const CONTROLLERS_GROUP: &str = "system:corral-controllers";
/// The namespace of the ServiceAccount `corral controllers` runs as (also its Lease's).
pub const CONTROLLERS_NAMESPACE: &str = "corral-system";
/// The ServiceAccount `corral controllers` runs as: bound to every component's ClusterRole.
pub const CONTROLLERS_SERVICE_ACCOUNT: &str = "corral-controllers";
/// The component name of `corral controllers` for [`account`].
pub const CONTROLLERS_COMPONENT: &str = "controllers";

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

/// The ServiceAccount (namespace, name) the provider runs as on its own: upstream's
/// `<prefix>-manager` in the provider's namespace `<prefix>-system`.
pub fn service_account(provider: &BuiltinProvider) -> (String, String) {
    let prefix = provider
        .namespace
        .strip_suffix("-system")
        .unwrap_or(provider.namespace);
    (provider.namespace.to_owned(), format!("{prefix}-manager"))
}

/// The ServiceAccount of a component: [`CONTROLLERS_COMPONENT`] (what `corral controllers`
/// runs) or a provider's label (`cluster-api`, `infrastructure-in-memory`, ...).
pub fn account(component: &str) -> Option<(String, String)> {
    if component == CONTROLLERS_COMPONENT {
        return Some((
            CONTROLLERS_NAMESPACE.to_owned(),
            CONTROLLERS_SERVICE_ACCOUNT.to_owned(),
        ));
    }
    crate::components::providers()
        .iter()
        .find(|provider| provider.label() == component && rules(component).is_some())
        .map(service_account)
}

/// The components [`account`] knows, for messages.
pub fn components() -> Vec<String> {
    std::iter::once(CONTROLLERS_COMPONENT.to_owned())
        .chain(
            crate::components::providers()
                .iter()
                .map(BuiltinProvider::label)
                .filter(|label| rules(label).is_some()),
        )
        .collect()
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
    let account = |(namespace, name): (String, String)| Subject {
        api_group: Some(String::new()),
        kind: "ServiceAccount".into(),
        name,
        namespace: Some(namespace),
    };
    let binding = ClusterRoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.into()),
            kind: "ClusterRole".into(),
            name: role_name(&label),
        },
        subjects: Some(vec![
            account(service_account(provider)),
            account((
                CONTROLLERS_NAMESPACE.to_owned(),
                CONTROLLERS_SERVICE_ACCOUNT.to_owned(),
            )),
            subject("User", user(&label)),
            subject("Group", CONTROLLERS_GROUP.into()),
        ]),
    };
    Some((role, binding))
}

/// Applies a ServiceAccount (its namespace must exist).
async fn install_account(
    connection: &Connection,
    namespace: &str,
    name: &str,
) -> Result<(), Error> {
    let account = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace},
    });
    Api::<ServiceAccount>::namespaced(connection.client.clone(), namespace)
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&account),
        )
        .await
        .map_err(|error| {
            connection.fail(
                format!("creating the ServiceAccount {namespace}/{name}"),
                error,
            )
        })?;
    Ok(())
}

/// Applies the namespace [`CONTROLLERS_NAMESPACE`] and the ServiceAccount `corral
/// controllers` runs as.
pub async fn install_controllers_account(connection: &Connection) -> Result<(), Error> {
    let namespace = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": CONTROLLERS_NAMESPACE},
    });
    Api::<Namespace>::all(connection.client.clone())
        .patch(
            CONTROLLERS_NAMESPACE,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&namespace),
        )
        .await
        .map_err(|error| {
            connection.fail(
                format!("creating the namespace {CONTROLLERS_NAMESPACE}"),
                error,
            )
        })?;
    install_account(
        connection,
        CONTROLLERS_NAMESPACE,
        CONTROLLERS_SERVICE_ACCOUNT,
    )
    .await
}

/// A token of the ServiceAccount `namespace/name` valid for `seconds` (the server may
/// shorten it), with the API server's default audiences; and when it expires.
pub async fn request_token(
    connection: &Connection,
    namespace: &str,
    name: &str,
    seconds: i64,
) -> Result<(String, k8s_openapi::jiff::Timestamp), Error> {
    let request: TokenRequest = serde_json::from_value(serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }))
    .expect("a TokenRequest deserializes");
    let answer = Api::<ServiceAccount>::namespaced(connection.client.clone(), namespace)
        .create_token_request(name, &Default::default(), &request)
        .await
        .map_err(|error| {
            connection.fail(
                format!("requesting a token of the ServiceAccount {namespace}/{name}"),
                error,
            )
        })?;
    let status = answer.status.unwrap_or_default();
    match (status.token, status.expiration_timestamp) {
        (Some(token), Some(expires)) if !token.is_empty() => Ok((token, expires.0)),
        _ => Err(Error::Invalid(format!(
            "{} answered the TokenRequest of {namespace}/{name} without a token",
            connection.server
        ))),
    }
}

/// Applies the ServiceAccount, ClusterRole and ClusterRoleBinding of `provider`; returns the
/// role's name.
pub async fn install(
    connection: &Connection,
    provider: &BuiltinProvider,
) -> Result<Option<String>, Error> {
    let Some((role, binding)) = objects(provider) else {
        return Ok(None);
    };
    let (namespace, account) = service_account(provider);
    install_account(connection, &namespace, &account).await?;
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

/// Writes a kubeconfig at `path` for `component` ([`account`]): the cluster entry of the
/// current (or `context`) context of the kubeconfig `source` resolves to, and a user whose
/// `tokenFile` is `<path>.token`, holding a fresh token of the component's ServiceAccount valid
/// for `seconds` (mode 0600). Running it again replaces the token; kube-rs and client-go read a
/// `tokenFile` again every minute, so a running process keeps working. Returns when the token
/// expires.
pub async fn write_kubeconfig(
    source: &crate::KubeconfigSource,
    context: Option<&str>,
    component: &str,
    seconds: i64,
    path: &std::path::Path,
) -> Result<k8s_openapi::jiff::Timestamp, Error> {
    let (namespace, name) = account(component).ok_or_else(|| {
        Error::Usage(format!(
            "unknown component {component:?}; one of: {}",
            components().join(", ")
        ))
    })?;
    let (admin, shown) = source.read()?;
    let context_name = context
        .map(str::to_owned)
        .or_else(|| admin.current_context.clone())
        .unwrap_or_default();
    let cluster_name = admin
        .contexts
        .iter()
        .find(|named| named.name == context_name)
        .and_then(|named| named.context.as_ref())
        .map(|context| context.cluster.clone())
        .ok_or_else(|| Error::ReadKubeconfig {
            path: shown.clone(),
            reason: format!("no context {context_name:?}"),
        })?;
    let mut cluster = admin
        .clusters
        .iter()
        .find(|named| named.name == cluster_name)
        .cloned()
        .ok_or_else(|| Error::ReadKubeconfig {
            path: shown.clone(),
            reason: format!("no cluster {cluster_name:?}"),
        })?;
    // A CA file named relative to the admin kubeconfig: carried as data instead.
    if let Some(entry) = cluster.cluster.as_mut()
        && entry.certificate_authority_data.is_none()
        && let Some(file) = entry.certificate_authority.take()
    {
        let pem = std::fs::read(&file).map_err(|error| Error::ReadKubeconfig {
            path: file.clone(),
            reason: error.to_string(),
        })?;
        entry.certificate_authority_data = Some(base64_encode(&pem));
    }
    let connection = Connection::open_context(source, context).await?;
    let (token, expires) = request_token(&connection, &namespace, &name, seconds).await?;
    let token_path = {
        let mut file = path.as_os_str().to_owned();
        file.push(".token");
        std::path::PathBuf::from(file)
    };
    let token_path = std::path::absolute(&token_path).unwrap_or(token_path);
    write_private(&token_path, token.as_bytes())?;
    let user = format!("system:serviceaccount:{namespace}:{name}");
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": user, "user": {"tokenFile": token_path}}],
        "contexts": [{
            "name": component,
            "context": {"cluster": cluster_name, "user": user, "namespace": namespace},
        }],
        "current-context": component,
    });
    let yaml = serde_yaml::to_string(&kubeconfig).expect("a kubeconfig serializes");
    write_private(path, yaml.as_bytes())?;
    Ok(expires)
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Replaces `path` with `bytes` (mode 0600) at once: a reader sees the old or the new file.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let fail =
        |error: std::io::Error| Error::Invalid(format!("writing {}: {error}", path.display()));
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = std::path::PathBuf::from(temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&temporary, path).map_err(fail)
}
