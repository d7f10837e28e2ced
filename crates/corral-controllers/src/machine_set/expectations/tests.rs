use std::collections::HashMap;

use super::*;

/// A fake cache: name → (resourceVersion, deleting).
fn cache(
    entries: &[(&'static str, &'static str, bool)],
) -> HashMap<&'static str, (&'static str, bool)> {
    entries
        .iter()
        .map(|(name, version, deleting)| (*name, (*version, *deleting)))
        .collect()
}

fn seen<'a>(cache: &'a HashMap<&'static str, (&'static str, bool)>) -> impl Fn(&str) -> Seen<'a> {
    move |name| match cache.get(name) {
        None => Seen::Absent,
        Some((resource_version, deleting)) => Seen::Present {
            resource_version,
            deleting: *deleting,
        },
    }
}

#[test]
fn nothing_expected_is_met() {
    let expectations: Expectations<&str> = Expectations::default();
    assert_eq!(expectations.unmet(&"ms", seen(&cache(&[]))), None);
}

#[test]
fn created_objects_must_appear() {
    let expectations = Expectations::default();
    expectations.created(&"ms", "m1");
    expectations.created(&"ms", "m2");
    assert!(
        expectations
            .unmet(&"ms", seen(&cache(&[("m1", "5", false)])))
            .is_some()
    );
    // m1 was seen and is not waited for any more, even if it goes away again.
    assert!(
        expectations
            .unmet(&"ms", seen(&cache(&[("m2", "6", false)])))
            .is_none()
    );
    assert!(expectations.unmet(&"ms", seen(&cache(&[]))).is_none());
}

#[test]
fn deleted_objects_must_be_deleting_or_gone() {
    let expectations = Expectations::default();
    expectations.deleted(&"ms", "m1");
    expectations.deleted(&"ms", "m2");
    let stale = cache(&[("m1", "5", false), ("m2", "6", false)]);
    assert!(expectations.unmet(&"ms", seen(&stale)).is_some());
    let fresh = cache(&[("m1", "7", true)]);
    assert!(expectations.unmet(&"ms", seen(&fresh)).is_none());
}

#[test]
fn updated_objects_must_show_another_resource_version() {
    let expectations = Expectations::default();
    expectations.updated(&"md", "ms1", "10");
    // A second update before the first showed keeps the first version as the one to leave.
    expectations.updated(&"md", "ms1", "11");
    assert!(
        expectations
            .unmet(&"md", seen(&cache(&[("ms1", "10", false)])))
            .is_some()
    );
    assert!(
        expectations
            .unmet(&"md", seen(&cache(&[("ms1", "12", false)])))
            .is_none()
    );
}

#[test]
fn owners_are_independent_and_forgettable() {
    let expectations = Expectations::default();
    expectations.created(&"a", "m1");
    expectations.created(&"b", "m2");
    let empty = cache(&[]);
    assert!(expectations.unmet(&"a", seen(&empty)).is_some());
    expectations.forget(&"a");
    assert!(expectations.unmet(&"a", seen(&empty)).is_none());
    assert!(expectations.unmet(&"b", seen(&empty)).is_some());
}

#[test]
fn unmet_expectations_time_out() {
    let expectations = Expectations::default();
    expectations.created(&"ms", "m1");
    let empty = cache(&[]);
    let wait = expectations
        .unmet_at(&"ms", seen(&empty), Instant::now())
        .expect("waiting");
    assert!(wait <= EXPECTATION_TIMEOUT);
    let later = Instant::now() + EXPECTATION_TIMEOUT + Duration::from_secs(1);
    assert_eq!(expectations.unmet_at(&"ms", seen(&empty), later), None);
    // Dropped: nothing is waited for any more.
    assert_eq!(expectations.unmet(&"ms", seen(&empty)), None);
}
