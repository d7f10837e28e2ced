//! The CRDs checked in under `crates/corral-infra-plugin/crds/` are the generated ones, and
//! the infrastructure kinds carry the contract label core reads.

use std::collections::BTreeMap;
use std::path::Path;
use std::{env, fs};

use corral_api::contract::ContractVersion;

/// Set to regenerate the checked-in CRDs instead of checking them.
const UPDATE: &str = "CORRAL_UPDATE_CRDS";

fn render() -> BTreeMap<String, String> {
    corral_infra_plugin::crds()
        .into_iter()
        .map(|crd| {
            let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
            let crd = corral_api::testing::normalize_numbers(serde_json::to_value(crd).unwrap());
            (
                file,
                format!("---\n{}", serde_yaml::to_string(&crd).unwrap()),
            )
        })
        .collect()
}

#[test]
fn checked_in_crds_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    let expected = render();
    if env::var_os(UPDATE).is_some() {
        fs::create_dir_all(&dir).unwrap();
        for (file, content) in &expected {
            fs::write(dir.join(file), content).unwrap();
        }
    }
    let present: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut stale: Vec<&str> = expected
        .iter()
        .filter(|(file, content)| {
            fs::read_to_string(dir.join(file)).ok().as_ref() != Some(*content)
        })
        .map(|(file, _)| file.as_str())
        .collect();
    stale.extend(
        present
            .iter()
            .filter(|f| !expected.contains_key(*f))
            .map(String::as_str),
    );
    assert!(
        stale.is_empty(),
        "the CRDs in crates/corral-infra-plugin/crds differ from the generated ones: {}\n\
         regenerate them with `{UPDATE}=1 cargo nextest run -p corral-infra-plugin -E 'test(crds)'`",
        stale.join(", ")
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
