//! The CRDs of the four kubeadm kinds, generated from the Rust types.
//!
//! As in `corral-api`, kube's derive produces most of each CRD and
//! `corral_api::crd::finish_provider` turns it into what upstream serves: optional fields are
//! not nullable, the root lists `apiVersion`, `kind` and `metadata`, `listKind` is explicit, and
//! the labels a provider's CRDs carry (the contract label `cluster.x-k8s.io/v1beta2: v1beta2`, by
//! which core finds the API version of a referenced kind, and clusterctl's). This module adds
//! the schema rules that stand in for upstream's KubeadmControlPlane webhook
//! (`controlplane/kubeadm/webhooks/admission/kubeadmcontrolplane.go`).
//!
//! The checked-in copies under `crates/corral-kubeadm/crds/` are regenerated with
//! `CORRAL_UPDATE_CRDS=1 cargo nextest run -p corral-kubeadm`; a test fails while they are stale.

use corral_api::crd::{add_rule, finish_provider};
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
            control_plane_rules,
        ),
        finish_provider(
            KubeadmControlPlaneTemplate::crd(),
            VERSION,
            control_plane,
            |root| {
                spec_is_optional(root);
                control_plane_template_rules(root);
            },
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

/// CEL: the rollout's maxSurge is 0, written as an integer or as a string.
const MAX_SURGE_IS_ZERO: &str = "has(self.rollout) && has(self.rollout.strategy) \
     && has(self.rollout.strategy.rollingUpdate) \
     && has(self.rollout.strategy.rollingUpdate.maxSurge) \
     && string(self.rollout.strategy.rollingUpdate.maxSurge) == '0'";

/// CEL: the control plane's etcd is external (upstream's test for "etcd is not stacked").
const ETCD_IS_EXTERNAL: &str = "has(self.kubeadmConfigSpec) \
     && has(self.kubeadmConfigSpec.clusterConfiguration) \
     && has(self.kubeadmConfigSpec.clusterConfiguration.etcd) \
     && has(self.kubeadmConfigSpec.clusterConfiguration.etcd.external)";

/// What upstream's KubeadmControlPlane webhook defaults and validates, as schema defaults and
/// CEL rules on the KubeadmControlPlane's spec.
fn control_plane_rules(root: &mut Value) {
    let spec = &mut root["properties"]["spec"];
    // Defaulting: one replica, and a RollingUpdate strategy with maxSurge 1.
    spec["properties"]["replicas"]["default"] = json!(1);
    rollout_defaults(spec);
    // Validation of fields together.
    add_rule_at(
        spec,
        "self.replicas > 0",
        "replicas must be greater than 0",
        ".replicas",
    );
    add_rule_at(
        spec,
        &format!("self.replicas % 2 == 1 || ({ETCD_IS_EXTERNAL})"),
        "replicas cannot be an even number when etcd is stacked",
        ".replicas",
    );
    add_rule_at(
        spec,
        &format!("!({MAX_SURGE_IS_ZERO}) || self.replicas >= 3"),
        "rollout.strategy.rollingUpdate.maxSurge 0 requires at least 3 replicas \
         (scale-in rollouts need a quorum left)",
        ".replicas",
    );
    max_surge_rule(spec);
    // The version is a semantic version, is never lowered and skips no minor version.
    let version = &mut spec["properties"]["version"];
    add_rule(
        version,
        "isSemver(self, true)",
        "version must be a valid semantic version, such as v1.33.1",
    );
    add_rule(
        version,
        "!isSemver(self, true) || !isSemver(oldSelf, true) \
         || semver(self, true).compareTo(semver(oldSelf, true)) >= 0",
        "version cannot be decreased: downgrades are not supported",
    );
    add_rule(
        version,
        "!isSemver(self, true) || !isSemver(oldSelf, true) \
         || semver(self, true).major() != semver(oldSelf, true).major() \
         || semver(self, true).minor() <= semver(oldSelf, true).minor() + 1",
        "version cannot skip a minor version: upgrade one minor version at a time",
    );
}

/// The webhook's rollout defaults and maxSurge bound also hold for a KubeadmControlPlaneTemplate
/// (upstream `kubeadmcontrolplanetemplate.go`).
fn control_plane_template_rules(root: &mut Value) {
    let spec = &mut root["properties"]["spec"]["properties"]["template"]["properties"]["spec"];
    max_surge_rule(spec);
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

fn max_surge_rule(spec: &mut Value) {
    let max_surge = &mut spec["properties"]["rollout"]["properties"]["strategy"]["properties"]["rollingUpdate"]
        ["properties"]["maxSurge"];
    add_rule(
        max_surge,
        "string(self) == '0' || string(self) == '1'",
        "maxSurge must be 0 or 1",
    );
}

fn add_rule_at(schema: &mut Value, rule: &str, message: &str, field_path: &str) {
    add_rule(schema, rule, message);
    let rules = schema["x-kubernetes-validations"]
        .as_array_mut()
        .expect("add_rule made a list");
    let last = rules.last_mut().expect("add_rule added a rule");
    last["fieldPath"] = json!(field_path);
}
