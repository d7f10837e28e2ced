//! Corral's generated CRDs against upstream's (`tests/upstream/`, copied from
//! kubernetes-sigs/cluster-api at ae7ff047db49, `core/config/crd/bases`).
//!
//! Every v1beta2 schema node is compared attribute by attribute (type, format, enum, default,
//! required, bounds, pattern, list and map markers, int-or-string, CEL rules, ...); only
//! descriptions are ignored; and so are the CRD's names, scope, subresources and printer
//! columns. Every difference must be in [`tolerated`], with its reason; any other fails the
//! test, and so does an entry of [`tolerated`] that no longer matches a difference. The
//! comparison is `corral_api::testing` (feature `testing`), which other crates' tests share.

use std::collections::BTreeMap;
use std::path::Path;

use corral_api::testing::{Change, Tolerated, compare_schemas, crd_differences};
use serde_json::{Value, json};

/// The kinds compared, by plural.
const KINDS: [&str; 5] = [
    "clusters",
    "machines",
    "machinesets",
    "machinedeployments",
    "machinehealthchecks",
];

/// The only allow-list. Keep it short: every entry is a place where Corral's API differs from
/// upstream's.
///
/// All entries today are of one sort, their reasons starting with `webhook:`: upstream validates
/// or defaults in an admission webhook (the file named in each group), and Corral says the same
/// in the schema. Such rules only reject what upstream's webhook rejects and only default what it
/// defaults; `tests/it/cel.rs` checks them case by case. The webhooks' other rules, which a
/// schema cannot say with upstream's field paths and error types, are `corral_api::admission`,
/// which Corral's API server runs.
fn tolerated() -> Vec<Tolerated> {
    use Change::*;
    let entry = |kind, path, attribute, change, reason| {
        Tolerated::new(kind, path, attribute, change, reason)
    };
    vec![
        // Machine (core/webhooks/admission/machine.go).
        entry(
            "machines",
            ".spec.deletion",
            "default",
            Added,
            "webhook: nodeDeletionTimeoutSeconds defaults to 10, so deletion defaults to hold it",
        ),
        entry(
            "machines",
            ".spec.deletion.nodeDeletionTimeoutSeconds",
            "default",
            Added,
            "webhook: nodeDeletionTimeoutSeconds defaults to 10",
        ),
        // MachineDeployment (core/webhooks/admission/machinedeployment.go).
        entry(
            "machinedeployments",
            ".spec.rollout",
            "default",
            Added,
            "webhook: the strategy defaults to RollingUpdate with maxSurge 1 and maxUnavailable 0",
        ),
        entry(
            "machinedeployments",
            ".spec.rollout.strategy",
            "default",
            Added,
            "webhook: the strategy defaults to RollingUpdate with maxSurge 1 and maxUnavailable 0",
        ),
        entry(
            "machinedeployments",
            ".spec.rollout.strategy.rollingUpdate.maxSurge",
            "default",
            Added,
            "webhook: maxSurge defaults to 1",
        ),
        entry(
            "machinedeployments",
            ".spec.rollout.strategy.rollingUpdate.maxUnavailable",
            "default",
            Added,
            "webhook: maxUnavailable defaults to 0",
        ),
        // MachineHealthCheck (core/webhooks/admission/machinehealthcheck.go).
        entry(
            "machinehealthchecks",
            ".spec.checks",
            "default",
            Added,
            "webhook: nodeStartupTimeoutSeconds defaults to 600, so checks defaults to hold it",
        ),
        entry(
            "machinehealthchecks",
            ".spec.checks.nodeStartupTimeoutSeconds",
            "default",
            Added,
            "webhook: nodeStartupTimeoutSeconds defaults to 600",
        ),
    ]
}

fn upstream_crd(plural: &str) -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstream")
        .join(format!("cluster.x-k8s.io_{plural}.yaml"));
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
    super::normalize_numbers(serde_yaml::from_str(&text).unwrap())
}

#[test]
fn generated_crds_match_upstream_except_the_tolerated_differences() {
    let generated: BTreeMap<String, Value> = super::generated_crds().into_iter().collect();
    let mut differences = Vec::new();
    for kind in KINDS {
        let corral = &generated[&format!("cluster.x-k8s.io_{kind}.yaml")];
        differences.extend(crd_differences(
            kind,
            &upstream_crd(kind),
            corral,
            "v1beta2",
        ));
    }
    if let Err(report) = corral_api::testing::check(differences, &tolerated()) {
        panic!("{report}");
    }
}

#[test]
fn the_comparison_sees_differences() {
    // A guard against a comparison that compares nothing: upstream's schema against a copy with
    // one bound changed, one rule dropped and one field removed.
    let upstream = upstream_crd("machinehealthchecks");
    let schema = super::schema_of(&upstream, "v1beta2");
    let mut changed = schema.clone();
    let checks = &mut changed["properties"]["spec"]["properties"]["checks"]["properties"];
    checks["nodeStartupTimeoutSeconds"]["minimum"] = json!(1);
    checks["unhealthyMachineConditions"]["items"]["properties"]["type"]
        .as_object_mut()
        .unwrap()
        .remove("x-kubernetes-validations");
    changed["properties"]["status"]["properties"]
        .as_object_mut()
        .unwrap()
        .remove("targets");

    let mut differences = Vec::new();
    compare_schemas("machinehealthchecks", schema, &changed, &mut differences);
    let found: Vec<(&str, &str, Change)> = differences
        .iter()
        .map(|difference| {
            (
                difference.path.as_str(),
                difference.attribute.as_str(),
                difference.change(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                ".spec.checks.nodeStartupTimeoutSeconds",
                "minimum",
                Change::Changed
            ),
            (
                ".spec.checks.unhealthyMachineConditions[].type",
                "x-kubernetes-validations",
                Change::Removed
            ),
            (".status.targets", "(field)", Change::Removed),
            (".status.targets[]", "(field)", Change::Removed),
        ]
    );
}
