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
