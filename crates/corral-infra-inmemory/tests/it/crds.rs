//! The CRDs checked in under `crates/corral-infra-inmemory/crds/` are the generated ones.

use std::collections::BTreeMap;

#[test]
fn checked_in_crds_are_up_to_date() {
    corral_api::testing::check_checked_in_crds(
        env!("CARGO_MANIFEST_DIR"),
        corral_infra_inmemory::crds(),
        "cargo nextest run -p corral-infra-inmemory -E 'test(crds)'",
    );
}

#[test]
fn crds_are_structural_and_carry_the_provider_labels() {
    for (file, crd) in super::generated_crds() {
        let versions = crd["spec"]["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1, "{file}");
        assert_eq!(versions[0]["served"], true, "{file}");
        assert_eq!(versions[0]["storage"], true, "{file}");
        let schema = super::schema_of(&crd, "v1beta2");
        assert_eq!(schema["type"], "object", "{file}");
        let text = schema.to_string();
        for forbidden in ["$ref", "\"nullable\"", "\"title\"", "\"anyOf\":[{},{}]"] {
            assert!(!text.contains(forbidden), "{file} contains {forbidden}");
        }
        // The contract label is how core finds the API version of a referenced Dev* kind
        // (upstream `contract.GetLatestContractAndAPIVersionFromContract`).
        let labels = &crd["metadata"]["labels"];
        assert_eq!(labels["cluster.x-k8s.io/v1beta2"], "v1beta2", "{file}");
        assert_eq!(labels["clusterctl.cluster.x-k8s.io"], "", "{file}");
        assert_eq!(
            labels["cluster.x-k8s.io/provider"], "infrastructure-in-memory",
            "{file}"
        );
        let labels: BTreeMap<String, String> = serde_json::from_value(labels.clone()).unwrap();
        let (contract, version) =
            corral_api::contract::ContractVersion::from_crd_labels(&labels).unwrap();
        assert_eq!(
            (contract, version.as_str()),
            (corral_api::contract::ContractVersion::V1Beta2, "v1beta2")
        );
    }
}
