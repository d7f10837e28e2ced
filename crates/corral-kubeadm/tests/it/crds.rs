//! The CRDs checked in under `crates/corral-kubeadm/crds/` are the generated ones.

#[test]
fn checked_in_crds_are_up_to_date() {
    corral_api::testing::check_checked_in_crds(
        env!("CARGO_MANIFEST_DIR"),
        corral_kubeadm::crds(),
        "cargo nextest run -p corral-kubeadm -E 'test(crds)'",
    );
}

#[test]
fn crds_are_structural_enough_to_serve() {
    // What an API server insists on: a root object schema, one served storage version, and no
    // `$ref`, `nullable` or empty-typed schemas left over from generation; and the contract label
    // by which core finds the version of a referenced kind.
    for (file, crd) in super::generated_crds() {
        let versions = crd["spec"]["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1, "{file}");
        assert_eq!(versions[0]["served"], true, "{file}");
        assert_eq!(versions[0]["storage"], true, "{file}");
        assert_eq!(
            crd["metadata"]["labels"]["cluster.x-k8s.io/v1beta2"], "v1beta2",
            "{file}"
        );
        let schema = corral_api::testing::schema_of(&crd, "v1beta2");
        assert_eq!(schema["type"], "object", "{file}");
        let text = schema.to_string();
        for forbidden in ["$ref", "\"nullable\"", "\"title\"", "\"anyOf\":[{},{}]"] {
            assert!(!text.contains(forbidden), "{file} contains {forbidden}");
        }
    }
}
