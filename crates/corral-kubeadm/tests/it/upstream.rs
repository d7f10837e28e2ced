//! Corral's generated CRDs against upstream's (`tests/upstream/`, copied from
//! kubernetes-sigs/cluster-api at ae7ff047db49, `bootstrap/kubeadm/config/crd/bases` and
//! `controlplane/kubeadm/config/crd/bases`), with corral-api's comparison
//! (`corral_api::testing`): every v1beta2 schema attribute but descriptions, and the CRD's names,
//! scope, subresources and printer columns. Every difference must be in [`tolerated`], with its
//! reason.

use std::path::Path;

use corral_api::testing::{Change, Tolerated, check, crd_differences};
use serde_json::Value;

/// The kinds compared, as `<group>_<plural>`.
const KINDS: [&str; 4] = [
    "bootstrap.cluster.x-k8s.io_kubeadmconfigs",
    "bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates",
    "controlplane.cluster.x-k8s.io_kubeadmcontrolplanes",
    "controlplane.cluster.x-k8s.io_kubeadmcontrolplanetemplates",
];

/// The only allow-list. Every entry is a place where Corral's API differs from upstream's.
///
/// The entries whose reasons start with `webhook:` are rules upstream's admission webhook
/// (`controlplane/kubeadm/webhooks/admission/kubeadmcontrolplane.go`, `..template.go`) applies
/// and Corral's schema says instead, so that any API server enforces them with no webhook to
/// deploy; `tests/it/validation.rs` checks them through a real API server. The webhooks' other
/// rules are `api::admission`, which Corral's API server runs.
fn tolerated() -> Vec<Tolerated> {
    use Change::*;
    let kcp = "controlplane.cluster.x-k8s.io_kubeadmcontrolplanes";
    let config = "bootstrap.cluster.x-k8s.io_kubeadmconfigs";
    vec![
        Tolerated::new(
            config,
            ".spec",
            "default",
            Added,
            "a missing spec reads as {}, so that the bootstrap controller's typed watch reads every KubeadmConfig",
        ),
        Tolerated::new(
            config,
            ".spec",
            "minProperties",
            Removed,
            "lets the {} default through; an explicit spec: {} means the same as no spec",
        ),
        Tolerated::new(
            kcp,
            ".spec.replicas",
            "default",
            Added,
            "webhook: replicas defaults to 1",
        ),
        Tolerated::new(
            kcp,
            ".spec.rollout",
            "default",
            Added,
            "webhook: the strategy defaults to RollingUpdate with maxSurge 1",
        ),
        Tolerated::new(
            kcp,
            ".spec.rollout.strategy",
            "default",
            Added,
            "webhook: the strategy defaults to RollingUpdate with maxSurge 1",
        ),
        Tolerated::new(
            kcp,
            ".spec.rollout.strategy.rollingUpdate",
            "default",
            Added,
            "webhook: maxSurge defaults to 1",
        ),
        Tolerated::new(
            kcp,
            ".spec.rollout.strategy.rollingUpdate.maxSurge",
            "default",
            Added,
            "webhook: maxSurge defaults to 1",
        ),
    ]
}

fn upstream_crd(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstream")
        .join(format!("{file}.yaml"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_yaml::from_str(&text).unwrap()
}

#[test]
fn generated_crds_match_upstream_except_the_tolerated_differences() {
    let generated: std::collections::BTreeMap<String, Value> =
        super::generated_crds().into_iter().collect();
    let mut differences = Vec::new();
    for kind in KINDS {
        let corral = &generated[&format!("{kind}.yaml")];
        differences.extend(crd_differences(
            kind,
            &upstream_crd(kind),
            corral,
            "v1beta2",
        ));
    }
    if let Err(report) = check(differences, &tolerated()) {
        panic!("{report}");
    }
}
