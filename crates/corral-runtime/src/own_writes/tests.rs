use k8s_openapi::api::core::v1::ConfigMap;

use super::*;

fn version(resource_version: &str) -> ConfigMap {
    let mut object = ConfigMap::default();
    object.metadata.name = Some("worker-0".into());
    object.metadata.uid = Some("uid-1".into());
    object.metadata.resource_version = Some(resource_version.into());
    object
}

#[test]
fn a_chain_of_own_writes_skips_every_version_it_replaced_until_another_is_seen() {
    let writes = OwnWrites::new();
    writes.remember(&version("6").metadata, "5".into());
    writes.remember(&version("7").metadata, "6".into());
    assert!(writes.is_replaced(&version("5")));
    assert!(writes.is_replaced(&version("6")));
    assert!(writes.is_own_write(&version("7")));
    assert!(!writes.is_replaced(&version("7")));
    // Seeing the written version forgot the chain.
    assert!(!writes.is_replaced(&version("5")));
    assert!(!writes.is_own_write(&version("7")));
}

#[test]
fn a_write_that_changed_nothing_or_started_from_another_writers_version_is_not_chained() {
    let writes = OwnWrites::new();
    writes.remember(&version("5").metadata, "5".into());
    assert!(!writes.is_replaced(&version("5")));
    writes.remember(&version("6").metadata, "5".into());
    writes.remember(&version("9").metadata, "8".into());
    assert!(writes.is_replaced(&version("8")));
    assert!(
        !writes.is_replaced(&version("5")),
        "a new chain started at 8"
    );
    writes.remember(&version("10").metadata, "9".into());
    writes.forget(&version("9"));
    assert!(!writes.is_replaced(&version("9")));
}

#[test]
fn a_long_chain_keeps_the_newest_versions() {
    let writes = OwnWrites::new();
    for replaced in 1..=(MAX_REPLACED as u32 + 2) {
        writes.remember(
            &version(&(replaced + 1).to_string()).metadata,
            replaced.to_string(),
        );
    }
    assert!(writes.is_replaced(&version("3")));
    assert!(writes.is_replaced(&version(&(MAX_REPLACED as u32 + 2).to_string())));
    // The oldest fell out of the chain: seeing it forgets the object.
    assert!(!writes.is_replaced(&version("1")));
}
