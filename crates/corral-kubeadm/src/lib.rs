//! Corral's kubeadm providers: the bootstrap provider (KubeadmConfig, upstream's CABPK) and the
//! control plane provider (KubeadmControlPlane, upstream's KCP), against the v1beta2 contracts.
//!
//! `api` holds the types of `bootstrap.cluster.x-k8s.io/v1beta2` and
//! `controlplane.cluster.x-k8s.io/v1beta2` and their CRDs ([`crds()`]).

pub mod api;
pub mod controlplane;

pub use api::crds;
