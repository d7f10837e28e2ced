use serde_json::json;

use super::*;
use crate::error::Subject;

fn paths() -> ScalePaths {
    ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: Some(".status.selector".into()),
    }
}

fn subject() -> Subject<'static> {
    Subject {
        resource: "widgets",
        group: "example.com",
        name: "w1",
    }
}

fn widget() -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", "uid": "u1", "resourceVersion": "7",
                     "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"a": "b"}},
        "spec": {"replicas": 2, "color": "red"},
        "status": {"replicas": 1, "selector": "app=demo"},
    })
}

#[test]
fn scale_maps_the_paths() {
    assert_eq!(
        scale_of(&widget(), &paths()).unwrap(),
        json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": "w1", "namespace": "default", "uid": "u1", "resourceVersion": "7",
                         "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"replicas": 2},
            "status": {"replicas": 1, "selector": "app=demo"},
        })
    );
    let bare = json!({"metadata": {"name": "w1"}, "spec": {}});
    let scale = scale_of(&bare, &paths()).unwrap();
    assert_eq!(scale["spec"], json!({}));
    assert_eq!(scale["status"], json!({"replicas": 0}));
    let wrong = json!({"metadata": {"name": "w1"}, "spec": {"replicas": "two"}});
    assert!(scale_of(&wrong, &paths()).is_err());
}

#[test]
fn a_patch_changes_only_the_replicas() {
    let patch = Update::Patch(Patch::Merge(
        json!({"spec": {"replicas": 5}, "status": {"replicas": 9}}),
    ));
    let new = apply_scale(&widget(), &paths(), &patch, subject()).unwrap();
    let mut expected = widget();
    expected["spec"]["replicas"] = json!(5);
    expected["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    assert_eq!(new, expected, "no precondition unless the patch sets one");

    let stale = Update::Patch(Patch::Merge(
        json!({"metadata": {"resourceVersion": "3"}, "spec": {"replicas": 5}}),
    ));
    let new = apply_scale(&widget(), &paths(), &stale, subject()).unwrap();
    assert_eq!(new["metadata"]["resourceVersion"], "3");
}

#[test]
fn a_replacement_keeps_its_resource_version_as_precondition() {
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "w1", "resourceVersion": "7"}, "spec": {"replicas": 0}});
    let new = apply_scale(&widget(), &paths(), &Update::Replace(scale), subject()).unwrap();
    assert_eq!(new["spec"]["replicas"], 0);
    assert_eq!(new["metadata"]["resourceVersion"], "7");
}

#[test]
fn invalid_scales_are_refused() {
    let negative = Update::Patch(Patch::Merge(json!({"spec": {"replicas": -1}})));
    let written = apply_scale(&widget(), &paths(), &negative, subject()).unwrap();
    let error = validate_spec_replicas(&written, &paths()).expect("refused by admission");
    assert_eq!(
        error.message(),
        ".spec.replicas: Invalid value: -1: should be a non-negative integer"
    );
    assert_eq!(error.type_.reason(), "FieldValueInvalid");

    let not_a_number = Update::Patch(Patch::Merge(json!({"spec": {"replicas": "3"}})));
    let error = apply_scale(&widget(), &paths(), &not_a_number, subject()).unwrap_err();
    assert_eq!(error.code, StatusCode::BAD_REQUEST);

    let other_name = Update::Replace(json!({"metadata": {"name": "w2"}, "spec": {"replicas": 1}}));
    let error = apply_scale(&widget(), &paths(), &other_name, subject()).unwrap_err();
    assert_eq!(error.code, StatusCode::BAD_REQUEST);

    let other_kind = Update::Replace(json!({"kind": "Widget", "spec": {"replicas": 1}}));
    let error = apply_scale(&widget(), &paths(), &other_kind, subject()).unwrap_err();
    assert_eq!(error.code, StatusCode::BAD_REQUEST);

    // Without replicas in the object, a write must set them.
    let unset = json!({"metadata": {"name": "w1"}, "spec": {}});
    let empty = Update::Patch(Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})));
    let error = apply_scale(&unset, &paths(), &empty, subject()).unwrap_err();
    assert_eq!(
        error.message,
        "the spec replicas field \".spec.replicas\" cannot be empty"
    );
    let set = Update::Patch(Patch::Merge(json!({"spec": {"replicas": 1}})));
    let new = apply_scale(&unset, &paths(), &set, subject()).unwrap();
    assert_eq!(new["spec"]["replicas"], 1);
}

#[test]
fn nested_replica_paths_are_created() {
    let paths = ScalePaths {
        spec_replicas: ".spec.topology.workers.replicas".into(),
        status_replicas: ".status.workers".into(),
        label_selector: None,
    };
    let object =
        json!({"metadata": {"name": "w1"}, "spec": {"topology": {"workers": {"replicas": 1}}}});
    let patch = Update::Patch(Patch::Json(
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]))
            .unwrap(),
    ));
    let new = apply_scale(&object, &paths, &patch, subject()).unwrap();
    assert_eq!(new["spec"]["topology"]["workers"]["replicas"], 4);
    let mut empty = json!({"metadata": {"name": "w1"}});
    set_int(&mut empty, &paths.spec_replicas, 2).unwrap();
    assert_eq!(empty["spec"]["topology"]["workers"]["replicas"], 2);
}
