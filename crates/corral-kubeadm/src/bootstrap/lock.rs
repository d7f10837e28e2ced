//! The control plane init lock (upstream `bootstrap/kubeadm/internal/locking`): a ConfigMap
//! `<cluster>-lock` in the Cluster's namespace, created by the first control plane machine's
//! KubeadmConfig, so that exactly one machine runs `kubeadm init` while the control plane is not
//! initialized. Its data `lock-information` names the holder (`{"machineName": "..."}`).
//!
//! The lock is released once the Cluster reports its control plane initialized; a lock whose
//! holder Machine no longer exists is stale and is removed, so another machine can initialize.

use std::collections::BTreeMap;

use corral_api::{Cluster, Machine};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::{Resource, ResourceExt};
use serde_json::json;

/// The key of the holder in the lock's data.
const DATA_KEY: &str = "lock-information";

/// The name of a cluster's init lock.
pub fn name(cluster: &str) -> String {
    format!("{cluster}-lock")
}

/// What [`acquire`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// `machine` holds the lock.
    Held,
    /// Another machine holds it.
    HeldBy(String),
    /// The holder is gone; the lock was removed and can be taken on the next attempt.
    StaleRemoved(String),
}

/// Takes the lock for `machine`, or says who holds it.
pub async fn acquire(
    client: &kube::Client,
    cluster: &Cluster,
    machine: &str,
) -> Result<Acquired, kube::Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let lock_name = name(&cluster.name_any());
    let lock = ConfigMap {
        metadata: ObjectMeta {
            name: Some(lock_name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(BTreeMap::from([(
                corral_api::labels::CLUSTER_NAME.to_string(),
                cluster.name_any(),
            )])),
            owner_references: Some(vec![OwnerReference {
                api_version: Cluster::api_version(&()).to_string(),
                kind: Cluster::kind(&()).to_string(),
                name: cluster.name_any(),
                uid: cluster.uid().unwrap_or_default(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            DATA_KEY.to_string(),
            json!({ "machineName": machine }).to_string(),
        )])),
        ..Default::default()
    };
    match config_maps.create(&PostParams::default(), &lock).await {
        Ok(_) => return Ok(Acquired::Held),
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error),
    }
    let Some(existing) = config_maps.get_opt(&lock_name).await? else {
        // Released meanwhile; the next attempt takes it.
        return Ok(Acquired::HeldBy(String::new()));
    };
    let holder = existing
        .data
        .as_ref()
        .and_then(|data| data.get(DATA_KEY))
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|info| info["machineName"].as_str().map(str::to_string))
        .unwrap_or_default();
    if holder == machine {
        return Ok(Acquired::Held);
    }
    let machines: Api<Machine> = Api::namespaced(client.clone(), &namespace);
    if machines.get_opt(&holder).await?.is_none() {
        tracing::info!(lock = %lock_name, %holder, "Removing the init lock of a Machine that is gone");
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: existing.uid(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match config_maps.delete(&lock_name, &params).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
            Err(error) => return Err(error),
        }
        return Ok(Acquired::StaleRemoved(holder));
    }
    Ok(Acquired::HeldBy(holder))
}

/// Releases the cluster's lock, if any.
pub async fn release(client: &kube::Client, cluster: &Cluster) -> Result<(), kube::Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    match config_maps
        .delete(&name(&cluster.name_any()), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}
