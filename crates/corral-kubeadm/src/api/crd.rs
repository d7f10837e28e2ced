//! The CRDs of the four kubeadm kinds, generated from the Rust types.
//!
//! As in `corral-api`, kube's derive produces most of each CRD and
//! `corral_api::crd::finish_provider` turns it into what upstream serves: optional fields are
//! not nullable, the root lists `apiVersion`, `kind` and `metadata`, `listKind` is explicit, and
//! the labels a provider's CRDs carry (the contract label `cluster.x-k8s.io/v1beta2: v1beta2`, by
//! which core finds the API version of a referenced kind, and clusterctl's). This module adds
//! the schema defaults of upstream's KubeadmControlPlane webhook
//! (`controlplane/kubeadm/webhooks/admission/kubeadmcontrolplane.go`); its validation is
//! `api::admission`.
//!
//! The checked-in copies under `crates/corral-kubeadm/crds/` are regenerated with
//! `CORRAL_UPDATE_CRDS=1 cargo nextest run -p corral-kubeadm`; a test fails while they are stale.

use corral_api::crd::finish_provider;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::bootstrap::{KubeadmConfig, KubeadmConfigTemplate};
use super::controlplane::{KubeadmControlPlane, KubeadmControlPlaneTemplate};
use super::{BOOTSTRAP_PROVIDER_LABEL_VALUE, CONTROL_PLANE_PROVIDER_LABEL_VALUE, VERSION};

/// The CRDs of the four kinds, in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let bootstrap = BOOTSTRAP_PROVIDER_LABEL_VALUE;
    let control_plane = CONTROL_PLANE_PROVIDER_LABEL_VALUE;
    vec![
        finish_provider(
            KubeadmConfig::crd(),
            VERSION,
            bootstrap,
            spec_defaults_to_empty,
        ),
        finish_provider(
            KubeadmConfigTemplate::crd(),
            VERSION,
            bootstrap,
            spec_is_optional,
        ),
        finish_provider(
            KubeadmControlPlane::crd(),
            VERSION,
            control_plane,
            control_plane_defaults,
        ),
        finish_provider(
            KubeadmControlPlaneTemplate::crd(),
            VERSION,
            control_plane,
            spec_is_optional,
        ),
    ]
}

/// Upstream's KubeadmConfig and templates may leave `spec` out (it is `omitzero`); the derive
/// makes every spec required.
fn spec_is_optional(root: &mut Value) {
    root.as_object_mut()
        .expect("a root schema is an object")
        .remove("required");
}

/// A KubeadmConfig may leave `spec` out upstream (a worker joining with kubeadm's defaults), but
/// the derived Rust type, like every kube `CustomResource`, needs a `spec` to deserialize, and one
/// object a watch cannot read stalls the controller's whole watch. So Corral defaults a missing
/// `spec` to `{}`, and lifts the `minProperties: 1` that would refuse that default; the one
/// manifest Corral accepts and upstream refuses is an explicit `spec: {}`, which means the same
/// as no spec.
fn spec_defaults_to_empty(root: &mut Value) {
    spec_is_optional(root);
    let spec = root["properties"]["spec"]
        .as_object_mut()
        .expect("the root has a spec");
    spec.remove("minProperties");
    spec.insert("default".into(), json!({}));
}

/// The defaults of upstream's KubeadmControlPlane webhook that a schema can say: one replica,
/// and a RollingUpdate strategy with maxSurge 1. The webhook's other defaults and its validation
/// are `api::admission`.
fn control_plane_defaults(root: &mut Value) {
    let spec = &mut root["properties"]["spec"];
    spec["properties"]["replicas"]["default"] = json!(1);
    rollout_defaults(spec);
}

fn rollout_defaults(spec: &mut Value) {
    let rollout = &mut spec["properties"]["rollout"];
    rollout["default"] =
        json!({ "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1 } } });
    let strategy = &mut rollout["properties"]["strategy"];
    strategy["default"] = json!({ "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1 } });
    strategy["properties"]["rollingUpdate"]["default"] = json!({ "maxSurge": 1 });
    strategy["properties"]["rollingUpdate"]["properties"]["maxSurge"]["default"] = json!(1);
}
