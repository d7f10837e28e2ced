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
        corral_api::crd::finish(ProviderPlugin::crd(), plain_only_on_loopback),
        infrastructure(PluginCluster::crd()),
        infrastructure(PluginClusterTemplate::crd()),
        infrastructure(PluginMachine::crd()),
        infrastructure(PluginMachineTemplate::crd()),
    ]
}

/// Plain `http://` and `grpc://` carry bootstrap data (cluster secrets) in the clear: they are
/// refused at admission for a host that is not loopback unless `insecure: true`, as the
/// client refuses them too (`corral_provider_sdk::EndpointError::Insecure`).
fn plain_only_on_loopback(schema: &mut serde_json::Value) {
    corral_api::crd::add_rule(
        &mut schema["properties"]["spec"],
        r"(has(self.insecure) && self.insecure) || !self.endpoint.matches('^(http|grpc)://') || self.endpoint.matches('^(http|grpc)://(localhost|127\\.[0-9.]+|\\[::1\\])(:[0-9]+)?(/.*)?$')",
        "spec.endpoint: plain http:// or grpc:// is allowed only to a loopback host (127.0.0.0/8, ::1, localhost); use https:// or grpcs://, or set spec.insecure: true",
    );
}

fn infrastructure(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    corral_api::crd::finish_provider(crd, VERSION, PROVIDER_LABEL_VALUE, |_| {})
}
