use serde_json::{Value, json};

use super::encode_for_storage;

/// What `encode_for_storage` replaced: a copy without the resourceVersion, serialized. A no-op
/// write is recognised by comparing bytes, so the two must agree byte for byte.
fn encoded_by_copy(object: &Value) -> Vec<u8> {
    let mut copy = object.clone();
    if let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
    }
    serde_json::to_vec(&copy).unwrap()
}

#[test]
fn stored_bytes_leave_out_the_resource_version_only() {
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "a",
            "namespace": "default",
            "resourceVersion": "42",
            "labels": {"resourceVersion": "kept"},
            "uid": "u"
        },
        "data": {"resourceVersion": "kept too", "quote": "\"\\u0000"}
    });
    let stored = encode_for_storage(&object);
    assert_eq!(stored.as_ref(), encoded_by_copy(&object).as_slice());
    let decoded: Value = serde_json::from_slice(&stored).unwrap();
    assert!(decoded["metadata"].get("resourceVersion").is_none());
    assert_eq!(decoded["metadata"]["labels"]["resourceVersion"], "kept");
    assert_eq!(decoded["data"]["resourceVersion"], "kept too");
}

#[test]
fn stored_bytes_of_objects_without_metadata_are_the_object() {
    for object in [
        json!({"kind": "ConfigMap"}),
        json!({"metadata": {}}),
        json!({"metadata": "not a map"}),
    ] {
        assert_eq!(
            encode_for_storage(&object).as_ref(),
            encoded_by_copy(&object).as_slice()
        );
    }
}

/// A label-selected list reads only the labels of each stored object before deciding to
/// decode it: the labels read that way are the object's own, whatever else it holds.
#[test]
fn stored_labels_are_read_without_the_rest_of_the_object() {
    let object = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "spec": {"labels": {"not": "these"}, "deep": [{"a": [1, 2, {"b": null}]}]},
        "metadata": {"name": "m", "labels": {"cluster.x-k8s.io/cluster-name": "c1", "n": "1"}},
        "status": {"conditions": [{"type": "Ready"}]}
    });
    let labels = super::stored_labels(&encode_for_storage(&object)).unwrap();
    assert_eq!(
        Value::Object(labels),
        json!({"cluster.x-k8s.io/cluster-name": "c1", "n": "1"})
    );
    for without in [
        json!({"kind": "ConfigMap"}),
        json!({"metadata": null}),
        json!({"metadata": {"name": "a"}}),
        json!({"metadata": {"labels": null}}),
    ] {
        let labels = super::stored_labels(&encode_for_storage(&without)).unwrap();
        assert!(labels.is_empty(), "{without}");
    }
    // Not an object of that shape: the caller's full decode reports it.
    assert!(super::stored_labels(b"[1]").is_none());
    assert!(super::stored_labels(b"{\"metadata\": 3}").is_none());
    assert!(super::stored_labels(b"{\"metadata\": {\"labels\": ").is_none());
}

/// The answer spliced into the stored bytes is byte for byte what serializing the object
/// with its resourceVersion gives, wherever the field falls among metadata's keys.
#[test]
fn answers_are_the_stored_bytes_with_the_resource_version() {
    for object in [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n", "uid": "u"}, "data": {"k": "v\"\n"}}),
        json!({"metadata": {"uid": "u"}}),
        json!({"metadata": {"name": "a"}}),
        json!({"metadata": {}, "spec": {}}),
        json!({"metadata": {"resourceVersion": "3", "name": "a", "selfLink": "x"}}),
        json!({"apiVersion": "v1", "metadata": {"annotations": {"resourceVersion": "x"}, "zz": 1}}),
    ] {
        let encoded = super::Encoded::new(&object);
        assert_eq!(encoded.bytes, encode_for_storage(&object), "{object}");
        let mut expected = object.clone();
        super::set_resource_version(&mut expected, 42);
        let answer = encoded.with_resource_version(42).unwrap();
        assert_eq!(
            String::from_utf8(answer.to_vec()).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }
    let no_metadata = super::Encoded::new(&json!({"kind": "X"}));
    assert!(no_metadata.with_resource_version(1).is_none());
}
