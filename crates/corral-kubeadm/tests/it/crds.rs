//! The CRDs checked in under `crates/corral-kubeadm/crds/` are the generated ones.

use std::collections::BTreeMap;
use std::path::Path;
use std::{env, fs};

/// Set to regenerate the checked-in CRDs instead of checking them.
const UPDATE: &str = "CORRAL_UPDATE_CRDS";

fn render() -> BTreeMap<String, String> {
    super::generated_crds()
        .into_iter()
        .map(|(file, crd)| {
            let crd = corral_api::testing::normalize_numbers(crd);
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
    let present: Vec<String> = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();

    if env::var_os(UPDATE).is_some() {
        fs::create_dir_all(&dir).unwrap();
        for file in present.iter().filter(|file| !expected.contains_key(*file)) {
            fs::remove_file(dir.join(file)).unwrap();
        }
        for (file, content) in &expected {
            fs::write(dir.join(file), content).unwrap();
        }
        return;
    }

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
            .filter(|file| !expected.contains_key(*file))
            .map(String::as_str),
    );
    assert!(
        stale.is_empty(),
        "the CRDs in crates/corral-kubeadm/crds differ from the ones the Rust types generate: {}\n\
         regenerate them with `{UPDATE}=1 cargo nextest run -p corral-kubeadm` and commit the result",
        stale.join(", ")
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
