//! What a KubeadmControlPlane reads from its workload cluster (upstream
//! `controlplane/kubeadm/pkg/workload_cluster*.go`): whether `kubeadm init` ran (the
//! `kube-system/kubeadm-config` ConfigMap exists), the health of each control plane machine's
//! static Pods (`<component>-<node>` for etcd, kube-apiserver, kube-controller-manager and
//! kube-scheduler), and the etcd members (from the caches of [`super::watches`]).

use std::collections::BTreeMap;

use super::etcd::EtcdMember;

/// The static Pods of a control plane machine, etcd first (kubeadm's names; the writing side,
/// `corral-workload`, names them).
pub use corral_workload::COMPONENTS;

/// The workload cluster as one reconcile saw it.
#[derive(Clone, Debug)]
pub struct WorkloadState {
    /// `kube-system/kubeadm-config` exists: the control plane is initialized.
    pub kubeadm_config: bool,
    /// Ready status of the control plane Pods, by Pod name.
    pub pods: BTreeMap<String, bool>,
    /// The etcd members, or why they could not be listed.
    pub members: Result<Vec<EtcdMember>, String>,
    /// The client URLs of an etcd that runs for real (kubeadm's advertise annotation on etcd
    /// Pods without the simulated member annotations): its members are asked of etcd itself
    /// (`real_etcd`). Empty for simulated clusters.
    pub etcd_endpoints: Vec<String>,
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
