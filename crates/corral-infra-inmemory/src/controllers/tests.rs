use serde_json::json;

use super::merge_patch;

#[test]
fn merge_patches_set_what_changed_and_clear_what_went() {
    let old = json!({
        "conditions": [{ "type": "Ready", "status": "False" }],
        "initialization": { "provisioned": true },
        "failureDomains": [{ "name": "a" }],
        "addresses": [{ "type": "Hostname", "address": "m" }],
    });
    let new = json!({
        "conditions": [{ "type": "Ready", "status": "True" }],
        "initialization": { "provisioned": true },
        "addresses": [{ "type": "Hostname", "address": "m" }],
    });
    assert_eq!(
        merge_patch(&old, &new),
        json!({
            "conditions": [{ "type": "Ready", "status": "True" }],
            "failureDomains": null,
        })
    );
    assert_eq!(merge_patch(&json!(null), &new), new);
    assert_eq!(
        merge_patch(
            &json!({ "a": { "b": 1, "c": 2 } }),
            &json!({ "a": { "b": 1 } })
        ),
        json!({ "a": { "c": null } })
    );
}
