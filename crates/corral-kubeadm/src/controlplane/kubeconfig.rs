//! The `<cluster>-kubeconfig` Secret, which the control plane provider owns in the v1beta2
//! contract (upstream `controlplane/kubeadm/reconcilers/kubeadmcontrolplane/helpers.go`
//! `reconcileKubeconfig`): type `cluster.x-k8s.io/secret`, label
//! `cluster.x-k8s.io/cluster-name`, key `value`, owned by the KubeadmControlPlane, pointing at
//! the Cluster's `controlPlaneEndpoint`.
//!
//! The KubeadmControlPlane writes it when it is missing and points a Secret it owns at the
//! current endpoint; a Secret somebody else wrote is left alone.

use std::collections::BTreeMap;

use corral_api::Cluster;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::Error;
use crate::api::controlplane::KubeadmControlPlane;

/// The scheme of the API server URL written into kubeconfigs. Real workload clusters serve
/// HTTPS; the in-memory provider's simulated ones serve plain HTTP on loopback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadScheme {
    Https,
    Http,
}

impl WorkloadScheme {
    fn as_str(self) -> &'static str {
        match self {
            WorkloadScheme::Https => "https",
            WorkloadScheme::Http => "http",
        }
    }
}

/// The admin kubeconfig of a cluster, named as upstream names it (cluster `<name>`, user
/// `<name>-admin`, context `<name>-admin@<name>`).
fn kubeconfig(cluster: &str, server: &str) -> String {
    let user = format!("{cluster}-admin");
    let context = format!("{user}@{cluster}");
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {cluster}
  cluster:
    server: {server}
users:
- name: {user}
  user: {{}}
contexts:
- name: {context}
  context:
    cluster: {cluster}
    user: {user}
current-context: {context}
preferences: {{}}
"
    )
}

/// Creates the Secret if missing, and points a Secret this KubeadmControlPlane owns at the
/// Cluster's endpoint.
pub async fn ensure(
    client: &kube::Client,
    kcp: &KubeadmControlPlane,
    cluster: &Cluster,
    scheme: WorkloadScheme,
) -> Result<(), Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = format!("{}-kubeconfig", cluster.name_any());
    let endpoint = &cluster.spec.control_plane_endpoint;
    let server = format!(
        "{}://{}:{}",
        scheme.as_str(),
        endpoint.host.as_deref().unwrap_or_default(),
        endpoint.port.unwrap_or(443)
    );
    let value = ByteString(kubeconfig(&cluster.name_any(), &server).into_bytes());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let error = |source| Error::WriteKubeconfig {
        name: format!("{namespace}/{name}"),
        source,
    };
    let existing = secrets.get_opt(&name).await.map_err(error)?;
    match existing {
        None => {
            tracing::info!(secret = %name, "Writing the kubeconfig Secret");
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.clone()),
                    labels: Some(BTreeMap::from([(
                        corral_api::labels::CLUSTER_NAME.to_string(),
                        cluster.name_any(),
                    )])),
                    owner_references: Some(vec![OwnerReference {
                        api_version: KubeadmControlPlane::api_version(&()).to_string(),
                        kind: KubeadmControlPlane::kind(&()).to_string(),
                        name: kcp.name_any(),
                        uid: kcp.uid().unwrap_or_default(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]),
                    ..Default::default()
                },
                type_: Some(corral_api::CLUSTER_SECRET_TYPE.to_string()),
                data: Some(BTreeMap::from([("value".to_string(), value)])),
                ..Default::default()
            };
            match secrets.create(&PostParams::default(), &secret).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
                Err(source) => Err(error(source)),
            }
        }
        Some(secret)
            if secret
                .owner_references()
                .iter()
                .any(|o| Some(&o.uid) == kcp.uid().as_ref()) =>
        {
            if secret.data.as_ref().and_then(|d| d.get("value")) != Some(&value) {
                let patch = json!({ "data": { "value": value } });
                secrets
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(error)?;
            }
            Ok(())
        }
        Some(_) => Ok(()),
    }
}
