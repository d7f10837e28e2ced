//! Corral's generated CRDs against upstream's (`tests/upstream/`, copied from
//! kubernetes-sigs/cluster-api at ae7ff047db49, `test/infrastructure/docker/config/crd/bases`),
//! with corral-api's comparison (`corral_api::testing`): every v1beta2 schema attribute but
//! descriptions, and the CRD's names, scope, subresources and printer columns. Every difference
//! must be in [`tolerated`], with its reason; any other fails the test, and so does an entry of
//! [`tolerated`] that no longer matches a difference.

use std::path::Path;

use corral_api::testing::{Change, Tolerated, check, crd_differences};
use serde_json::Value;

/// The kinds compared, by plural.
const KINDS: [&str; 4] = [
    "devclusters",
    "devclustertemplates",
    "devmachines",
    "devmachinetemplates",
];

/// The only allow-list. Keep it short: every entry is a place where Corral's API differs from
/// upstream's. Each reason says why.
fn tolerated() -> Vec<Tolerated> {
    use Change::*;
    let entry = |kind: &str, path: &str, attribute: &str, change, reason: &str| {
        Tolerated::new(kind, path, attribute, change, reason)
    };
    let mut entries = Vec::new();
    for kind in KINDS {
        entries.push(entry(
            kind,
            ".",
            "required",
            Added,
            "kube's derive requires spec; upstream's spec.backend is required, so an object \
             without spec is not a usable one either",
        ));
    }
    for (kind, spec) in [
        ("devclusters", ".spec"),
        ("devclustertemplates", ".spec.template.spec"),
        ("devmachines", ".spec"),
        ("devmachinetemplates", ".spec.template.spec"),
    ] {
        entries.push(entry(
            kind,
            &format!("{spec}.backend"),
            "x-kubernetes-validations",
            Added,
            "Corral simulates the in-memory backend only: backend.docker is refused with a \
             message that says to use backend.inMemory, and one backend must be set",
        ));
    }
    for (kind, spec) in [
        ("devclusters", ".spec"),
        ("devclustertemplates", ".spec.template.spec"),
    ] {
        for field in [
            "",
            "[]",
            "[].attributes",
            "[].attributes{}",
            "[].controlPlane",
            "[].name",
        ] {
            entries.push(entry(
                kind,
                &format!("{spec}.backend.inMemory.failureDomains{field}"),
                "(field)",
                Added,
                "extension: failure domains of the simulated infrastructure, in the shape of the \
                 docker backend's, so that core's spreading over failure domains can be tested",
            ));
        }
    }
    for (kind, spec) in [
        ("devmachines", ".spec"),
        ("devmachinetemplates", ".spec.template.spec"),
    ] {
        for step in ["apiServer", "etcd", "node", "vm"] {
            let settings = format!("{spec}.backend.inMemory.{step}.provisioning");
            entries.push(entry(
                kind,
                &format!("{settings}.startupDuration"),
                "pattern",
                Added,
                "a duration that does not parse is refused at create time, not found by the \
                 controller later; upstream's controller fails on it (time.ParseDuration)",
            ));
            entries.push(entry(
                kind,
                &format!("{settings}.startupJitter"),
                "pattern",
                Added,
                "a jitter that does not parse is refused at create time, not found by the \
                 controller later; upstream's controller fails on it (strconv.ParseFloat)",
            ));
        }
    }
    entries
}

fn upstream_crd(plural: &str) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstream")
        .join(format!("infrastructure.cluster.x-k8s.io_{plural}.yaml"));
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    super::normalize_numbers(serde_yaml::from_str(&text).unwrap())
}

#[test]
fn generated_crds_match_upstream_except_the_tolerated_differences() {
    let generated: std::collections::BTreeMap<String, Value> =
        super::generated_crds().into_iter().collect();
    let mut differences = Vec::new();
    for kind in KINDS {
        let corral = &generated[&format!("infrastructure.cluster.x-k8s.io_{kind}.yaml")];
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
