//! corral-kubeadm's integration tests: the checked-in CRDs, the comparison with upstream's CRDs,
//! the schema rules standing in for upstream's webhooks (through a real API server), and the
//! providers against an in-process management plane.

mod addons;
mod adoption;
mod bootstrap;
mod certs;
mod control_plane;
mod crds;
mod ignition;
mod kubeconfig;
mod plane;
mod timeline;
mod upstream;
mod validation;

use serde_json::Value;

/// The generated CRDs as JSON, each with the file name upstream gives it
/// (`<group>_<plural>.yaml`).
fn generated_crds() -> Vec<(String, Value)> {
    corral_kubeadm::crds()
        .into_iter()
        .map(|crd| {
            let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
            (file, serde_json::to_value(crd).unwrap())
        })
        .collect()
}
