//! What a KubeadmControlPlane reads from its workload cluster (upstream
//! `controlplane/kubeadm/pkg/workload_cluster*.go`): whether `kubeadm init` ran (the
//! `kube-system/kubeadm-config` ConfigMap exists), the health of each control plane machine's
//! static Pods (`<component>-<node>` for etcd, kube-apiserver, kube-controller-manager and
//! kube-scheduler), and the etcd members, through an [`EtcdAdmin`].

use std::collections::BTreeMap;

use corral_infra_inmemory::cloud::etcd::{EtcdAdmin, EtcdMember};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams};

/// The static Pods of a control plane machine, etcd first (kubeadm's names).
pub const COMPONENTS: [&str; 4] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];

/// The workload cluster as one reconcile saw it.
#[derive(Clone, Debug)]
pub struct WorkloadState {
    /// `kube-system/kubeadm-config` exists: the control plane is initialized.
    pub kubeadm_config: bool,
    /// Ready status of the control plane Pods, by Pod name.
    pub pods: BTreeMap<String, bool>,
    /// The etcd members, or why they could not be listed.
    pub members: Result<Vec<EtcdMember>, String>,
}

impl WorkloadState {
    /// The control plane components of the Node that are missing or not ready.
    pub fn unhealthy_components(&self, node: &str) -> Vec<&'static str> {
        COMPONENTS
            .into_iter()
            .filter(|component| self.pods.get(&format!("{component}-{node}")) != Some(&true))
            .collect()
    }

    /// The etcd member on the Node.
    pub fn member(&self, node: &str) -> Option<&EtcdMember> {
        self.members
            .as_ref()
            .ok()
            .and_then(|members| members.iter().find(|member| member.name == node))
    }
}

/// Reads the workload cluster's control plane state.
pub async fn observe(
    client: &kube::Client,
    etcd: &dyn EtcdAdmin,
) -> Result<WorkloadState, kube::Error> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let kubeadm_config = config_maps.get_opt("kubeadm-config").await?.is_some();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let pods = pods
        .list(&ListParams::default().labels("tier=control-plane"))
        .await?
        .items
        .into_iter()
        .map(|pod| {
            let ready = pod
                .status
                .as_ref()
                .and_then(|status| status.conditions.as_ref())
                .is_some_and(|conditions| {
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Ready" && c.status == "True")
                });
            (pod.metadata.name.unwrap_or_default(), ready)
        })
        .collect();
    let members = etcd.members().await.map_err(|error| error.to_string());
    Ok(WorkloadState {
        kubeadm_config,
        pods,
        members,
    })
}
