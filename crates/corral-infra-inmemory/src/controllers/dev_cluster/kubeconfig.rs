//! The `<cluster>-kubeconfig` Secret of a simulated workload cluster.
//!
//! In upstream this Secret belongs to the control plane provider (KubeadmControlPlane writes it
//! with a client certificate signed by the cluster CA), or to core's Cluster controller when a
//! Cluster has no control plane. For Clusters with a `spec.controlPlaneRef` the DevCluster
//! controller leaves it to the control plane provider; for the others (machine-based control
//! planes without a provider), since the simulated API server has no authentication, as a
//! simulation convenience the DevCluster controller writes it: with upstream's name, type
//! (`cluster.x-k8s.io/secret`), label (`cluster.x-k8s.io/cluster-name`), key (`value`) and
//! owner (the Cluster, as controller), and
//! the annotation `inmemory.infrastructure.cluster.x-k8s.io/simulated-kubeconfig`. It writes the
//! Secret only if none exists, and afterwards keeps only a Secret carrying that annotation
//! pointing at the endpoint: a Secret somebody else wrote is left alone.

use std::collections::BTreeMap;

use corral_api::Cluster;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::super::{Context, Error, get_opt};
use crate::api::annotations::SIMULATED_KUBECONFIG;
use crate::cloud::WorkloadEndpoint;

/// Creates the Secret if it is missing, and points a Secret this provider wrote at `endpoint`.
/// A Cluster with a `spec.controlPlaneRef` gets its Secret from the control plane provider, as
/// the contract says, so nothing is written for it.
pub(super) async fn ensure(
    context: &Context,
    cluster: &Cluster,
    endpoint: &WorkloadEndpoint,
) -> Result<(), Error> {
    if cluster.spec.control_plane_ref.is_some() {
        return Ok(());
    }
    let namespace = cluster.namespace().unwrap_or_default();
    let name = format!("{}-kubeconfig", cluster.name_any());
    let secrets: Api<Secret> = Api::namespaced(context.client.clone(), &namespace);
    let value = ByteString(endpoint.kubeconfig.clone().into_bytes());
    let error = |source| Error::WriteKubeconfig {
        name: format!("{namespace}/{name}"),
        source,
    };
    match get_opt(&secrets, &name).await? {
        None => {
            // A log line and no Event: the provider records Warnings only (an Event is a
            // write per cluster); the Secret's annotation says who wrote it.
            tracing::info!(secret = %name, url = %endpoint.url(), "Writing the kubeconfig Secret of the simulated workload cluster");
            match secrets
                .create(&PostParams::default(), &secret(cluster, &name, value))
                .await
            {
                Ok(_) => {}
                // Somebody else wrote one meanwhile; it is theirs.
                Err(kube::Error::Api(status)) if status.code == 409 => return Ok(()),
                Err(source) => return Err(error(source)),
            }
        }
        Some(existing) if existing.annotations().contains_key(SIMULATED_KUBECONFIG) => {
            let current = existing.data.as_ref().and_then(|data| data.get("value"));
            if current != Some(&value) {
                tracing::info!(secret = %name, "Pointing the kubeconfig Secret at the simulated workload cluster");
                let patch = json!({ "data": { "value": value } });
                secrets
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(error)?;
            }
        }
        Some(_) => {}
    }
    Ok(())
}

fn secret(cluster: &Cluster, name: &str, value: ByteString) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: cluster.namespace(),
            labels: Some(BTreeMap::from([(
                corral_api::labels::CLUSTER_NAME.to_string(),
                cluster.name_any(),
            )])),
            annotations: Some(BTreeMap::from([(
                SIMULATED_KUBECONFIG.to_string(),
                "true".to_string(),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: Cluster::api_version(&()).to_string(),
                kind: Cluster::kind(&()).to_string(),
                name: cluster.name_any(),
                uid: cluster.uid().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        type_: Some(corral_api::CLUSTER_SECRET_TYPE.to_string()),
        data: Some(BTreeMap::from([("value".to_string(), value)])),
        ..Default::default()
    }
}
