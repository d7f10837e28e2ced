//! The CRDs of the five kinds, generated from the Rust types and finished by corral-api as
//! upstream serves CRDs; the Plugin* kinds carry the contract label
//! (`cluster.x-k8s.io/v1beta2: v1alpha1`) by which core finds their API version. The
//! checked-in copies under `crates/corral-infra-plugin/crds/` are regenerated with
//! `CORRAL_UPDATE_CRDS=1 cargo nextest run -p corral-infra-plugin -E 'test(crds)'`; a test
//! fails while they are stale.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::{
    PROVIDER_LABEL_VALUE, PluginCluster, PluginClusterTemplate, PluginMachine,
    PluginMachineTemplate, ProviderPlugin, VERSION,
};

/// The CRDs, ProviderPlugin first, in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        corral_api::crd::finish(ProviderPlugin::crd(), |_| {}),
        infrastructure(PluginCluster::crd()),
        infrastructure(PluginClusterTemplate::crd()),
        infrastructure(PluginMachine::crd()),
        infrastructure(PluginMachineTemplate::crd()),
    ]
}

fn infrastructure(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    corral_api::crd::finish_provider(crd, VERSION, PROVIDER_LABEL_VALUE, |_| {})
}
