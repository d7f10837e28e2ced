//! The CRDs checked in under `crates/corral-infra-plugin/crds/` are the generated ones, and
//! the infrastructure kinds carry the contract label core reads.

use corral_api::contract::ContractVersion;

#[test]
fn checked_in_crds_are_up_to_date() {
    corral_api::testing::check_checked_in_crds(
        env!("CARGO_MANIFEST_DIR"),
        corral_infra_plugin::crds(),
        "cargo nextest run -p corral-infra-plugin -E 'test(crds)'",
    );
}

#[test]
fn infrastructure_kinds_carry_the_contract_label() {
    for crd in corral_infra_plugin::crds() {
        let labels = crd.metadata.labels.clone().unwrap_or_default();
        if crd.spec.group == corral_infra_plugin::api::PLUGIN_GROUP {
            assert_eq!(
                crd.spec.scope, "Cluster",
                "ProviderPlugin is cluster-scoped"
            );
            continue;
        }
        let (contract, version) = ContractVersion::from_crd_labels(&labels)
            .unwrap_or_else(|e| panic!("{}: {e}", crd.spec.names.kind));
        assert_eq!(
            (contract, version.as_str()),
            (ContractVersion::V1Beta2, "v1alpha1")
        );
        assert_eq!(labels["cluster.x-k8s.io/provider"], "infrastructure-plugin");
        assert_eq!(crd.spec.scope, "Namespaced");
    }
}
