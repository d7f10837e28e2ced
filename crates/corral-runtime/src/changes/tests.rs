use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;

fn object(name: &str, deleting: bool) -> ConfigMap {
    let mut object = ConfigMap::default();
    object.metadata.namespace = Some("ns".into());
    object.metadata.name = Some(name.into());
    if deleting {
        object.metadata.deletion_timestamp = Some(Time(Default::default()));
    }
    object
}

#[test]
fn an_event_passes_the_first_time_and_when_what_is_read_changed() {
    let seen = Fingerprints::new();
    assert!(seen.changed(&object("a", false), "spec-1"));
    assert!(!seen.changed(&object("a", false), "spec-1"));
    assert!(seen.changed(&object("a", false), "spec-2"));
    assert!(seen.changed(&object("b", false), "spec-2"), "per object");
}

#[test]
fn the_start_of_a_deletion_passes_once_and_a_deleted_object_is_forgotten() {
    let seen = Fingerprints::new();
    assert!(seen.changed(&object("a", false), "spec"));
    assert!(seen.changed(&object("a", true), "spec"));
    assert!(!seen.changed(&object("a", true), "spec"));
    seen.deleted(&object("a", true));
    assert!(seen.is_empty());
    assert!(seen.changed(&object("a", false), "spec"), "created again");
    seen.forget("ns", "a");
    assert!(seen.changed(&object("a", false), "spec"));
}
