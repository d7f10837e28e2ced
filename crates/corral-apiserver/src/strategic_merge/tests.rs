use serde_json::{Value, json};

use super::*;

/// The patch metadata of apimachinery's test type `MergeItem`, by field name at any depth.
fn merge_item_meta(path: &[&str]) -> FieldPatchMeta {
    match path.last().copied() {
        Some("mergingList" | "retainKeysMergingList") => FieldPatchMeta::merge_by("name"),
        Some("mergingIntList") => FieldPatchMeta::merge_set(),
        Some("replacingItem") => FieldPatchMeta::replace(),
        _ => FieldPatchMeta::default(),
    }
}

fn patched(original: Value, patch: Value) -> Value {
    apply(&original, &patch, &merge_item_meta)
        .unwrap_or_else(|e| panic!("patch {patch} should apply to {original}: {e}"))
}

fn patch_error(original: Value, patch: Value) -> StrategicMergeError {
    match apply(&original, &patch, &merge_item_meta) {
        Ok(result) => panic!("patch {patch} should fail, got {result}"),
        Err(error) => error,
    }
}

fn builtin_patched(original: Value, patch: Value) -> Value {
    apply(&original, &patch, &BuiltinPatchMeta)
        .unwrap_or_else(|e| panic!("patch {patch} should apply: {e}"))
}

#[test]
fn maps_merge_recursively_and_null_deletes() {
    let original = json!({
        "metadata": {"name": "cm", "labels": {"a": "1", "b": "2"}},
        "data": {"x": "1", "y": "2"}
    });
    let patch = json!({
        "metadata": {"labels": {"b": null, "c": "3", "missing": null}},
        "data": {"x": "changed"},
        "gone": null
    });
    assert_eq!(
        patched(original, patch),
        json!({
            "metadata": {"name": "cm", "labels": {"a": "1", "c": "3"}},
            "data": {"x": "changed", "y": "2"}
        })
    );
}

#[test]
fn scalars_and_changed_types_are_replaced() {
    let original = json!({"a": 1, "b": "s", "c": {"x": 1}, "d": [1], "e": null});
    let patch = json!({"a": 2, "b": true, "c": "now a string", "d": {"k": "v"}, "e": {"x": 1}});
    assert_eq!(patched(original, patch.clone()), patch);
}

#[test]
fn null_patch_changes_nothing_and_other_non_objects_fail() {
    let original = json!({"a": 1});
    assert_eq!(patched(original.clone(), Value::Null), original);
    for (patch, found) in [
        (json!([{"op": "add"}]), "array"),
        (json!("x"), "string"),
        (json!(1), "number"),
        (json!(true), "bool"),
    ] {
        let error = patch_error(original.clone(), patch);
        assert_eq!(
            error.to_string(),
            format!(
                "json: cannot unmarshal {found} into Go value of type map[string]interface {{}}"
            )
        );
        assert_eq!(error.http_status(), 400);
    }
    let error = apply(&json!([]), &json!({}), &merge_item_meta).expect_err("array original");
    assert_eq!(error, StrategicMergeError::DecodeOriginal);
}

#[test]
fn inputs_are_not_modified() {
    let original = json!({"mergingList": [{"name": "a"}], "m": {"k": "v"}});
    let patch = json!({"mergingList": [{"name": "b"}], "m": {"k": null}});
    let (original_copy, patch_copy) = (original.clone(), patch.clone());
    let _ = patched(original.clone(), patch.clone());
    assert_eq!((original, patch), (original_copy, patch_copy));
}

#[test]
fn lists_without_merge_strategy_are_replaced() {
    let original = json!({"nonMergingList": [{"name": "a", "value": 1}, {"name": "b"}], "nonMergingIntList": [1, 2]});
    let patch = json!({"nonMergingList": [{"name": "a"}], "nonMergingIntList": [3]});
    assert_eq!(patched(original, patch.clone()), patch);
}

#[test]
fn merging_list_merges_items_by_key() {
    let original =
        json!({"mergingList": [{"name": "1", "value": "a"}, {"name": "2", "value": "b"}]});
    let patch = json!({"mergingList": [{"name": "1", "other": "x"}, {"name": "2", "value": null}]});
    assert_eq!(
        patched(original, patch),
        json!({"mergingList": [{"name": "1", "value": "a", "other": "x"}, {"name": "2"}]})
    );
}

#[test]
fn new_items_without_a_live_anchor_come_first() {
    // The Kubernetes documentation's `kubectl patch` example: the patched container comes
    // before the existing one.
    let original = json!({"mergingList": [{"name": "patch-demo-ctr", "image": "nginx"}]});
    let patch = json!({"mergingList": [{"name": "patch-demo-ctr-2", "image": "redis"}]});
    assert_eq!(
        patched(original, patch),
        json!({"mergingList": [
            {"name": "patch-demo-ctr-2", "image": "redis"},
            {"name": "patch-demo-ctr", "image": "nginx"}
        ]})
    );
}

#[test]
fn new_items_after_a_named_live_item_follow_it() {
    let original = json!({"mergingList": [{"name": "a"}, {"name": "b"}]});
    let patch = json!({"mergingList": [{"name": "b", "value": "x"}, {"name": "c"}]});
    assert_eq!(
        patched(original, patch),
        json!({"mergingList": [{"name": "a"}, {"name": "b", "value": "x"}, {"name": "c"}]})
    );
}

#[test]
fn patch_order_wins_over_live_order() {
    let original =
        json!({"mergingList": [{"name": "1"}, {"name": "2", "value": "b"}, {"name": "3"}]});
    let patch = json!({"mergingList": [
        {"name": "3", "value": "c"}, {"name": "1", "value": "a"}, {"name": "2", "other": "x"}
    ]});
    assert_eq!(
        patched(original.clone(), patch),
        json!({"mergingList": [
            {"name": "3", "value": "c"}, {"name": "1", "value": "a"}, {"name": "2", "value": "b", "other": "x"}
        ]})
    );
    // Live items the patch does not name keep their place before later named items.
    let patch = json!({"mergingList": [{"name": "3", "value": "c"}, {"name": "1", "value": "a"}]});
    assert_eq!(
        patched(original, patch),
        json!({"mergingList": [
            {"name": "2", "value": "b"}, {"name": "3", "value": "c"}, {"name": "1", "value": "a"}
        ]})
    );
}

#[test]
fn merging_int_list_is_a_union_in_apimachinery_order() {
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 2]}),
            json!({"mergingIntList": [2, 3]})
        ),
        json!({"mergingIntList": [1, 2, 3]})
    );
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 2, 3]}),
            json!({"mergingIntList": [3, 1]})
        ),
        json!({"mergingIntList": [2, 3, 1]})
    );
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 1, 2]}),
            json!({"mergingIntList": [2, 2]})
        ),
        json!({"mergingIntList": [1, 2]})
    );
    assert_eq!(
        patched(json!({"mergingIntList": []}), json!({"mergingIntList": []})),
        json!({"mergingIntList": []})
    );
}

#[test]
fn lists_nest_with_paths_from_the_root() {
    let meta = PatchMetaTable::new()
        .with_field(&["spec", "containers"], FieldPatchMeta::merge_by("name"))
        .with_field(
            &["spec", "containers", "ports"],
            FieldPatchMeta::merge_by("containerPort"),
        );
    let original = json!({"spec": {
        "containers": [{"name": "app", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
        "ports": [{"containerPort": 1}]
    }});
    let patch = json!({"spec": {
        "containers": [{"name": "app", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}],
        "ports": [{"containerPort": 2}]
    }});
    let result = apply(&original, &patch, &meta).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        result,
        json!({"spec": {
            "containers": [{"name": "app", "ports": [
                {"containerPort": 80, "protocol": "TCP", "name": "http"},
                {"containerPort": 443}
            ]}],
            // Same field name, other path: no strategy, so replaced.
            "ports": [{"containerPort": 2}]
        }})
    );
}

#[test]
fn delete_directive_removes_every_item_with_the_key() {
    let original = json!({"mergingList": [
        {"name": "1"}, {"name": "1"}, {"name": "2", "value": "a"}, {"name": "3"}, {"name": "3"}
    ]});
    let patch = json!({"mergingList": [
        {"name": "1", "$patch": "delete"}, {"name": "3", "$patch": "delete"}
    ]});
    assert_eq!(
        patched(original, patch),
        json!({"mergingList": [{"name": "2", "value": "a"}]})
    );
}

#[test]
fn delete_directive_for_a_missing_item_changes_nothing() {
    let original = json!({"mergingList": [{"name": "1"}]});
    let patch = json!({"mergingList": [{"name": "9", "$patch": "delete"}]});
    assert_eq!(patched(original.clone(), patch), original);
}

#[test]
fn add_and_delete_in_one_list() {
    let original = json!({"mergingList": [{"name": "1"}, {"name": "2"}]});
    let patch = json!({"mergingList": [{"name": "3"}, {"name": "1", "$patch": "delete"}]});
    assert_eq!(
        patched(original, patch),
        json!({"mergingList": [{"name": "3"}, {"name": "2"}]})
    );
}

#[test]
fn replace_directive_in_a_list_replaces_it() {
    let original = json!({"mergingList": [{"name": "1"}, {"name": "2"}]});
    assert_eq!(
        patched(
            original.clone(),
            json!({"mergingList": [{"$patch": "replace"}]})
        ),
        json!({"mergingList": []})
    );
    assert_eq!(
        patched(
            original,
            json!({"mergingList": [{"name": "9", "value": null}, {"$patch": "replace"}, {"name": "8"}]})
        ),
        json!({"mergingList": [{"name": "9"}, {"name": "8"}]})
    );
}

#[test]
fn replace_directive_on_a_map_replaces_it() {
    assert_eq!(
        patched(json!({"name": 1, "value": 1}), json!({"$patch": "replace"})),
        json!({})
    );
    assert_eq!(
        patched(
            json!({"name": 1, "value": 1}),
            json!({"other": "a", "$patch": "replace"})
        ),
        json!({"other": "a"})
    );
    assert_eq!(
        patched(
            json!({"simpleMap": {"a": "1", "b": "2"}, "keep": true}),
            json!({"simpleMap": {"$patch": "replace", "c": "3"}})
        ),
        json!({"simpleMap": {"c": "3"}, "keep": true})
    );
    // Without a live map to replace, the map is simply set.
    assert_eq!(
        patched(
            json!({}),
            json!({"simpleMap": {"$patch": "replace", "c": "3"}})
        ),
        json!({"simpleMap": {"c": "3"}})
    );
}

#[test]
fn delete_directive_on_a_map_empties_it() {
    assert_eq!(
        patched(
            json!({"simpleMap": {"key1": 1, "key2": 1}}),
            json!({"simpleMap": {"$patch": "delete"}})
        ),
        json!({"simpleMap": {}})
    );
    // A map that does not exist stays absent.
    assert_eq!(
        patched(json!({}), json!({"simpleMap": {"$patch": "delete"}})),
        json!({})
    );
}

#[test]
fn replace_strategy_replaces_maps_whole() {
    assert_eq!(
        patched(
            json!({"replacingItem": {"a": 1, "b": 2}}),
            json!({"replacingItem": {"c": 3, "d": null}})
        ),
        json!({"replacingItem": {"c": 3}})
    );
}

#[test]
fn unknown_directives_fail() {
    let error = patch_error(
        json!({"simpleMap": {}}),
        json!({"simpleMap": {"$patch": "bogus", "a": 1}}),
    );
    assert_eq!(
        error.to_string(),
        "unknown patch type: bogus in map: map[$patch:bogus a:1]"
    );
    assert_eq!(error.http_status(), 500);

    let error = patch_error(
        json!({"simpleMap": {}}),
        json!({"simpleMap": {"$patch": 1}}),
    );
    assert_eq!(
        error.to_string(),
        "unknown patch type: %!s(int64=1) in map: map[$patch:1]"
    );

    let original = json!({"mergingList": [{"name": "1"}]});
    assert_eq!(
        patch_error(
            original.clone(),
            json!({"mergingList": [{"$patch": "merge"}]})
        ),
        StrategicMergeError::MergeDirectiveInList
    );
    assert_eq!(
        patch_error(
            original,
            json!({"mergingList": [{"name": "1", "$patch": "bogus"}]})
        )
        .to_string(),
        "unknown patch type: bogus in map: map[$patch:bogus name:1]"
    );
}

#[test]
fn merging_items_need_the_merge_key() {
    let original = json!({"mergingList": [{"name": "1", "value": "a"}]});
    assert_eq!(
        patch_error(original.clone(), json!({"mergingList": [{"value": "b"}]})).to_string(),
        "map: map[value:b] does not contain declared merge key: name"
    );
    assert_eq!(
        patch_error(original, json!({"mergingList": [{"$patch": "delete"}]})).to_string(),
        "map: map[$patch:delete] does not contain declared merge key: name"
    );
    // Live items without the key fail too, when the list has to be ordered.
    let error = patch_error(
        json!({"mergingList": [{"value": "x"}]}),
        json!({"mergingList": [{"name": "1"}]}),
    );
    assert_eq!(
        error.to_string(),
        "map: map[value:x] does not contain declared merge key: name"
    );
}

#[test]
fn list_element_types_must_agree() {
    let error = patch_error(
        json!({"mergingIntList": [[1]]}),
        json!({"mergingIntList": [[2]]}),
    );
    assert_eq!(error.to_string(), "lists of lists are not supported");
    assert_eq!(error.http_status(), 422);

    let error = patch_error(
        json!({"mergingIntList": [1]}),
        json!({"mergingIntList": ["a"]}),
    );
    assert_eq!(
        error.to_string(),
        "list element types are not identical: [[1] [a]]"
    );
}

#[test]
fn merging_maps_needs_a_merge_key_in_the_metadata() {
    let meta = |path: &[&str]| {
        if path == ["spec", "items"] {
            FieldPatchMeta::merge_set()
        } else {
            FieldPatchMeta::default()
        }
    };
    let error = apply(
        &json!({"spec": {"items": [{"a": 1}]}}),
        &json!({"spec": {"items": [{"a": 2}]}}),
        &meta,
    )
    .expect_err("maps without merge key");
    assert_eq!(
        error.to_string(),
        "cannot merge lists without merge key for spec.items"
    );
}

#[test]
fn values_without_live_counterpart_lose_directives_and_nulls() {
    let patch = json!({
        "simpleMap": {"a": "1", "b": null, "$retainKeys": ["a"], "$setElementOrder/x": [1]},
        "mergingList": [{"name": "1", "value": null}, {"name": "2", "$patch": "delete"}],
        "nested": {"inner": {"gone": {"$patch": "delete"}, "kept": [null, 1]}}
    });
    assert_eq!(
        patched(json!({}), patch),
        json!({
            "simpleMap": {"a": "1"},
            "mergingList": [{"name": "1"}],
            "nested": {"inner": {"kept": [null, 1]}}
        })
    );
}

#[test]
fn new_merged_items_lose_nulls_and_directives() {
    let original = json!({"mergingList": [{"name": "1"}]});
    let patch = json!({"mergingList": [{"name": "1"}, {"name": "2", "value": null, "$retainKeys": ["name"]}]});
    assert_eq!(
        patched(original, patch),
        json!({"mergingList": [{"name": "1"}, {"name": "2"}]})
    );
}

#[test]
fn retain_keys_clears_unlisted_live_keys() {
    assert_eq!(
        patched(
            json!({"retainKeysMap": {"value": "foo"}}),
            json!({"retainKeysMap": {"$retainKeys": ["other"], "other": "bar"}})
        ),
        json!({"retainKeysMap": {"other": "bar"}})
    );
    assert_eq!(
        patched(
            json!({"retainKeysMap": {"name": "type1", "value": "foo"}}),
            json!({"retainKeysMap": {"$retainKeys": ["name", "other"], "name": "type2", "other": "bar"}})
        ),
        json!({"retainKeysMap": {"name": "type2", "other": "bar"}})
    );
    // A null for a key that is not retained is allowed.
    assert_eq!(
        patched(
            json!({"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}}),
            json!({"retainKeysMap": {"$retainKeys": ["name"], "value": null}})
        ),
        json!({"retainKeysMap": {"name": "foo"}})
    );
    // Only the directive: nothing set, unlisted keys cleared.
    assert_eq!(
        patched(
            json!({"retainKeysMap": {"name": "foo", "value": "bar", "other": "a"}}),
            json!({"retainKeysMap": {"$retainKeys": ["name", "value"]}})
        ),
        json!({"retainKeysMap": {"name": "foo", "value": "bar"}})
    );
}

#[test]
fn retain_keys_applies_inside_merged_list_items() {
    let original = json!({"retainKeysMergingList": [
        {"name": "bar"}, {"name": "foo", "value": "a", "other": "b"}
    ]});
    let patch = json!({"retainKeysMergingList": [
        {"name": "foo", "$retainKeys": ["name", "value"], "value": "c"}
    ]});
    assert_eq!(
        patched(original, patch),
        json!({"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "c"}]})
    );
}

#[test]
fn retain_keys_must_list_every_key_set() {
    let error = patch_error(
        json!({"retainKeysMap": {"name": "foo"}}),
        json!({"retainKeysMap": {"$retainKeys": ["name"], "value": "bar"}}),
    );
    assert_eq!(error.to_string(), "invalid patch format of retainKeys");
    assert_eq!(error.http_status(), 400);
    assert_eq!(
        patch_error(
            json!({"retainKeysMap": {}}),
            json!({"retainKeysMap": {"$retainKeys": "name"}})
        ),
        StrategicMergeError::BadRetainKeysDirective
    );
}

#[test]
fn delete_from_primitive_list_removes_values() {
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 2, 3, 2]}),
            json!({"$deleteFromPrimitiveList/mergingIntList": [2]})
        ),
        json!({"mergingIntList": [1, 3]})
    );
    // Lists without the merge strategy too.
    assert_eq!(
        patched(
            json!({"nonMergingIntList": [1, 2, 3]}),
            json!({"$deleteFromPrimitiveList/nonMergingIntList": [2]})
        ),
        json!({"nonMergingIntList": [1, 3]})
    );
    // Values that are not there, and lists that are not there, change nothing.
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 2]}),
            json!({"$deleteFromPrimitiveList/mergingIntList": [3]})
        ),
        json!({"mergingIntList": [1, 2]})
    );
    assert_eq!(
        patched(
            json!({"foo": ["bar"]}),
            json!({"$deleteFromPrimitiveList/mergingIntList": [3]})
        ),
        json!({"foo": ["bar"]})
    );
    assert_eq!(
        patched(
            json!({"mergingIntList": null}),
            json!({"$deleteFromPrimitiveList/mergingIntList": [3]})
        ),
        json!({"mergingIntList": null})
    );
    // A null deletion list removes the field.
    assert_eq!(
        patched(
            json!({"mergingIntList": [1], "a": 1}),
            json!({"$deleteFromPrimitiveList/mergingIntList": null})
        ),
        json!({"a": 1})
    );
}

#[test]
fn delete_from_primitive_list_runs_after_additions() {
    assert_eq!(
        builtin_patched(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "c"], "$deleteFromPrimitiveList/finalizers": ["a"]}})
        ),
        json!({"metadata": {"finalizers": ["b", "c"]}})
    );
}

#[test]
fn delete_from_primitive_list_rejects_malformed_directives() {
    for patch in [
        json!({"$deleteFromPrimitiveListX/mergingIntList": [1]}),
        json!({"$deleteFromPrimitiveList": [1]}),
        json!({"$deleteFromPrimitiveList/mergingIntList": "1"}),
        json!({"$deleteFromPrimitiveList/mergingList": [{"name": "1"}]}),
    ] {
        let error = patch_error(
            json!({"mergingIntList": [1], "mergingList": [{"name": "1"}]}),
            patch,
        );
        assert_eq!(error.to_string(), "invalid patch format of primitive list");
        assert_eq!(error.http_status(), 400);
    }
}

#[test]
fn set_element_order_orders_primitive_lists() {
    // apimachinery's "add an item in a list of primitives and preserve order".
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 4, 2]}),
            json!({"$setElementOrder/mergingIntList": [3, 1, 2], "mergingIntList": [3]})
        ),
        json!({"mergingIntList": [3, 1, 4, 2]})
    );
    // "delete an item in a list of primitives and preserve order".
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 2, 3]}),
            json!({"$setElementOrder/mergingIntList": [2, 1], "$deleteFromPrimitiveList/mergingIntList": [3]})
        ),
        json!({"mergingIntList": [2, 1]})
    );
    // An order entry that is in neither list is ignored.
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 3]}),
            json!({"$setElementOrder/mergingIntList": [3, 2, 1]})
        ),
        json!({"mergingIntList": [3, 1]})
    );
}

#[test]
fn set_element_order_orders_lists_of_maps() {
    // "add an item in a list and preserve order".
    assert_eq!(
        patched(
            json!({"mergingList": [{"name": "1", "other": "a"}, {"name": "2", "value": "2", "other": "b"}]}),
            json!({
                "$setElementOrder/mergingList": [{"name": "3"}, {"name": "1"}, {"name": "2"}],
                "mergingList": [{"name": "3", "value": "3"}]
            })
        ),
        json!({"mergingList": [
            {"name": "3", "value": "3"},
            {"name": "1", "other": "a"},
            {"name": "2", "value": "2", "other": "b"}
        ]})
    );
    // "add multiple items in a list and preserve order".
    assert_eq!(
        patched(
            json!({"mergingList": [{"name": "1", "other": "a"}, {"name": "2", "value": "2", "other": "b"}]}),
            json!({
                "$setElementOrder/mergingList": [{"name": "1"}, {"name": "4"}, {"name": "2"}, {"name": "3"}],
                "mergingList": [{"name": "4", "value": "4"}, {"name": "3", "value": "3"}]
            })
        ),
        json!({"mergingList": [
            {"name": "1", "other": "a"},
            {"name": "4", "value": "4"},
            {"name": "2", "value": "2", "other": "b"},
            {"name": "3", "value": "3"}
        ]})
    );
    // "delete map from merging list".
    assert_eq!(
        patched(
            json!({"mergingList": [{"name": "1"}, {"name": "2", "other": "b"}]}),
            json!({
                "$setElementOrder/mergingList": [{"name": "2"}],
                "mergingList": [{"name": "1", "$patch": "delete"}]
            })
        ),
        json!({"mergingList": [{"name": "2", "other": "b"}]})
    );
}

#[test]
fn set_element_order_interleaves_live_only_items() {
    // "set elements order in a list with server-only items 3".
    let names =
        |names: &[&str]| -> Value { names.iter().map(|name| json!({"name": name})).collect() };
    assert_eq!(
        patched(
            json!({"mergingList": names(&["1", "2", "7", "9", "8", "3", "4"])}),
            json!({"$setElementOrder/mergingList": names(&["2", "1", "4", "3"])})
        ),
        json!({"mergingList": names(&["2", "1", "7", "9", "8", "4", "3"])})
    );
    // "set elements order in a list with server-only items": a trailing live item stays last.
    assert_eq!(
        patched(
            json!({"mergingList": names(&["1", "3", "4", "2", "9"])}),
            json!({"$setElementOrder/mergingList": names(&["4", "2", "3", "1"])})
        ),
        json!({"mergingList": names(&["4", "2", "3", "1", "9"])})
    );
}

#[test]
fn set_element_order_with_duplicates_groups_them() {
    assert_eq!(
        patched(
            json!({"mergingList": [
                {"name": "1"}, {"name": "2", "value": "dup1"}, {"name": "3"},
                {"name": "2", "value": "dup2"}, {"name": "4"}
            ]}),
            json!({"$setElementOrder/mergingList": [
                {"name": "2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}, {"name": "2"}
            ]})
        ),
        json!({"mergingList": [
            {"name": "2", "value": "dup1"}, {"name": "2", "value": "dup2"},
            {"name": "1"}, {"name": "4"}, {"name": "3"}
        ]})
    );
    assert_eq!(
        patched(
            json!({"mergingIntList": [1, 2, 3, 2, 4]}),
            json!({"$setElementOrder/mergingIntList": [2, 1, 4, 3, 2]})
        ),
        json!({"mergingIntList": [2, 2, 1, 4, 3]})
    );
}

#[test]
fn set_element_order_adds_a_list_that_was_absent() {
    assert_eq!(
        patched(
            json!({}),
            json!({"$setElementOrder/mergingList": [{"name": "b"}, {"name": "a"}], "mergingList": [{"name": "b"}, {"name": "a"}]})
        ),
        json!({"mergingList": [{"name": "b"}, {"name": "a"}]})
    );
    // With neither list, nothing happens.
    assert_eq!(
        patched(
            json!({"x": 1}),
            json!({"$setElementOrder/mergingList": [{"name": "b"}]})
        ),
        json!({"x": 1})
    );
}

#[test]
fn set_element_order_must_agree_with_the_patch() {
    let error = patch_error(
        json!({"mergingList": [{"name": "1"}, {"name": "3"}, {"name": "2"}]}),
        json!({
            "$setElementOrder/mergingList": [{"name": "1"}, {"name": "2"}, {"name": "3"}],
            "mergingList": [{"name": "3", "value": "3"}, {"name": "1", "value": "1"}]
        }),
    );
    assert_eq!(
        error.to_string(),
        "The order in patch list:\n[map[name:3 value:3] map[name:1 value:1]]\n doesn't match $setElementOrder list:\n[map[name:1] map[name:2] map[name:3]]\n"
    );
    let error = patch_error(
        json!({"mergingIntList": [1, 3, 2]}),
        json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]}),
    );
    assert!(error.to_string().contains("doesn't match"), "{error}");
}

#[test]
fn set_element_order_rejects_malformed_directives() {
    let error = patch_error(json!({}), json!({"$setElementOrderX/mergingList": []}));
    assert_eq!(
        error.to_string(),
        "invalid patch format of setElementOrder list"
    );
    assert_eq!(error.http_status(), 400);
    assert_eq!(
        patch_error(json!({}), json!({"$setElementOrder/mergingList": "a"})).to_string(),
        "expected a []interface {}, but received a string"
    );
    assert_eq!(
        patch_error(
            json!({"mergingList": "a"}),
            json!({"$setElementOrder/mergingList": [{"name": "1"}]})
        )
        .to_string(),
        "expected a []interface {}, but received a string"
    );
    assert_eq!(
        patch_error(
            json!({"mergingList": []}),
            json!({"$setElementOrder/mergingList": [{"name": "1"}]})
        ),
        StrategicMergeError::OrderEmptyList
    );
    assert_eq!(
        patch_error(
            json!({"mergingList": [{"name": "1"}]}),
            json!({"$setElementOrder/mergingList": ["1"]})
        ),
        StrategicMergeError::OrderEntryNotAMap { index: 0 }
    );
}

#[test]
fn builtin_meta_merges_owner_references_by_uid() {
    let original = json!({"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u1"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "u2"}
    ]}});
    let patch = json!({"metadata": {"ownerReferences": [
        {"uid": "u1", "controller": true},
        {"uid": "u2", "$patch": "delete"}
    ]}});
    assert_eq!(
        builtin_patched(original, patch),
        json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u1", "controller": true}
        ]}})
    );
}

#[test]
fn builtin_meta_merges_finalizers_as_a_set() {
    assert_eq!(
        builtin_patched(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["b", "c"]}})
        ),
        json!({"metadata": {"finalizers": ["a", "b", "c"]}})
    );
    // A new finalizer that the live list cannot place comes first, as in Kubernetes.
    assert_eq!(
        builtin_patched(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c"]}})
        ),
        json!({"metadata": {"finalizers": ["c", "a", "b"]}})
    );
    assert_eq!(
        builtin_patched(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
        ),
        json!({"metadata": {"finalizers": ["b"]}})
    );
}

#[test]
fn builtin_meta_replaces_managed_fields_and_other_lists() {
    let original = json!({
        "metadata": {"managedFields": [{"manager": "a"}, {"manager": "b"}]},
        "data": {"k": "v"}
    });
    let patch = json!({"metadata": {"managedFields": [{"manager": "c"}]}});
    assert_eq!(
        builtin_patched(original, patch),
        json!({"metadata": {"managedFields": [{"manager": "c"}]}, "data": {"k": "v"}})
    );
}

#[test]
fn namespace_meta_merges_conditions_and_replaces_spec_finalizers() {
    let meta = BuiltinPatchMeta;
    let original = json!({
        "spec": {"finalizers": ["kubernetes", "other"]},
        "status": {"phase": "Terminating", "conditions": [
            {"type": "NamespaceContentRemaining", "status": "True"},
            {"type": "NamespaceFinalizersRemaining", "status": "True"}
        ]}
    });
    let patch = json!({
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"conditions": [{"type": "NamespaceFinalizersRemaining", "status": "False"}]}
    });
    assert_eq!(
        apply(&original, &patch, &meta).unwrap_or_else(|e| panic!("{e}")),
        json!({
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Terminating", "conditions": [
                {"type": "NamespaceContentRemaining", "status": "True"},
                {"type": "NamespaceFinalizersRemaining", "status": "False"}
            ]}
        })
    );
}

#[test]
fn builtin_meta_answers_by_exact_path() {
    let meta = BuiltinPatchMeta;
    assert_eq!(
        meta.field(&["metadata", "ownerReferences"]),
        FieldPatchMeta::merge_by("uid")
    );
    assert_eq!(
        meta.field(&["metadata", "finalizers"]),
        FieldPatchMeta::merge_set()
    );
    assert_eq!(
        meta.field(&["status", "conditions"]),
        FieldPatchMeta::merge_by("type")
    );
    assert_eq!(
        meta.field(&["spec", "finalizers"]),
        FieldPatchMeta::default()
    );
    assert_eq!(
        meta.field(&["metadata", "managedFields"]),
        FieldPatchMeta::default()
    );
    assert_eq!(meta.field(&["finalizers"]), FieldPatchMeta::default());
    assert_eq!(
        meta.field(&["spec", "metadata", "finalizers"]),
        FieldPatchMeta::default()
    );
}

#[test]
fn table_meta_extends_and_overrides_the_builtin_answers() {
    let table =
        PatchMetaTable::new().with_field(&["spec", "items"], FieldPatchMeta::merge_by("id"));
    assert_eq!(
        table.field(&["spec", "items"]),
        FieldPatchMeta::merge_by("id")
    );
    assert_eq!(table.field(&["items"]), FieldPatchMeta::default());
    assert_eq!(
        table.field(&["metadata", "ownerReferences"]),
        FieldPatchMeta::merge_by("uid")
    );
    // A later entry for the same path wins, and entries win over the built-in answers.
    let overridden = table
        .with_field(&["spec", "items"], FieldPatchMeta::replace())
        .with_field(&["status", "conditions"], FieldPatchMeta::default());
    assert_eq!(
        overridden.field(&["spec", "items"]),
        FieldPatchMeta::replace()
    );
    assert_eq!(
        overridden.field(&["status", "conditions"]),
        FieldPatchMeta::default()
    );
}

#[test]
fn kubectl_apply_style_patch_for_a_config_map() {
    // The shape of a client-side apply patch for a ConfigMap: data changes plus the
    // last-applied annotation.
    let live = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c1", "namespace": "default", "resourceVersion": "7",
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "data": {"a": "1", "b": "2"}
    });
    let patch = json!({
        "data": {"a": "10", "b": null, "c": "3"},
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":true}"}}
    });
    assert_eq!(
        builtin_patched(live, patch),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c1", "namespace": "default", "resourceVersion": "7",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":true}"}},
            "data": {"a": "10", "c": "3"}
        })
    );
}

#[test]
fn go_formatting_matches_go() {
    assert_eq!(
        go_format(&json!({"b": [1, "x", null, true], "a": {"k": 1.5}})),
        "map[a:map[k:1.5] b:[1 x <nil> true]]"
    );
    assert_eq!(go_type_name(&json!(1)), "int64");
    assert_eq!(go_type_name(&json!(1.5)), "float64");
    assert_eq!(go_type_name(&Value::Null), "%!s(<nil>)");
}
