//! The CRDs checked in under `crates/corral-api/crds/` are the generated ones.

#[test]
fn checked_in_crds_are_up_to_date() {
    corral_api::testing::check_checked_in_crds(
        env!("CARGO_MANIFEST_DIR"),
        corral_api::crds(),
        "cargo nextest run -p corral-api -E 'test(crds)'",
    );
}

#[test]
fn crds_are_structural_enough_to_serve() {
    // The properties an API server insists on: a root object schema, one served storage version,
    // and no `$ref`, `nullable: true` or empty-typed schemas left over from generation.
    for (file, crd) in super::generated_crds() {
        let versions = crd["spec"]["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1, "{file}");
        assert_eq!(versions[0]["served"], true, "{file}");
        assert_eq!(versions[0]["storage"], true, "{file}");
        let version = versions[0]["name"].as_str().unwrap();
        let schema = super::schema_of(&crd, version);
        assert_eq!(schema["type"], "object", "{file}");
        let text = schema.to_string();
        for forbidden in ["$ref", "\"nullable\"", "\"title\"", "\"anyOf\":[{},{}]"] {
            assert!(!text.contains(forbidden), "{file} contains {forbidden}");
        }
    }
}
