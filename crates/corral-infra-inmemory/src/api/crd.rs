//! The CRDs of the Dev* kinds, generated from the Rust types.
//!
//! As in `corral-api`, kube's derive produces most of each CRD and
//! `corral_api::crd::finish_provider` turns it into what upstream serves: optional fields are
//! not nullable, the root lists `apiVersion`, `kind` and `metadata`, `listKind` is explicit, and
//! the labels a provider's CRDs carry: the contract label `cluster.x-k8s.io/v1beta2: v1beta2`,
//! by which core finds the API version of a referenced kind, and the labels clusterctl puts on
//! what it installs.
//!
//! The checked-in copies under `crates/corral-infra-inmemory/crds/` are regenerated with
//! `CORRAL_UPDATE_CRDS=1 cargo test -p corral-infra-inmemory`; a test fails while they are
//! stale.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::{
    DevCluster, DevClusterTemplate, DevMachine, DevMachineTemplate, PROVIDER_LABEL_VALUE, VERSION,
};

/// The CRDs of the four kinds, in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        finish(DevCluster::crd()),
        finish(DevClusterTemplate::crd()),
        finish(DevMachine::crd()),
        finish(DevMachineTemplate::crd()),
    ]
}

fn finish(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    corral_api::crd::finish_provider(crd, VERSION, PROVIDER_LABEL_VALUE, |_| {})
}
