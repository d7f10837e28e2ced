use serde_json::{Value, json};

use super::fieldset::{FieldSet, PathElement, path_string};
use super::managed::{self, ApplyError, Context, Managed, ManagerId, Operation};
use super::merge;
use super::schema::Schema;
use crate::object::fields_text;

/// A CRD schema with a granular spec, a list-map of ports keyed by name and protocol, a set
/// of tags, an atomic list of args and an atomic selector.
fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "color": {"type": "string"},
                    "size": {"type": "integer"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "set",
                    },
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name", "protocol"],
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "protocol": {"type": "string", "default": "TCP"},
                                "port": {"type": "integer"},
                            },
                        },
                    },
                    "selector": {
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"},
                    },
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        },
    })
}

fn fields(value: Value) -> FieldSet {
    FieldSet::from_fields_v1(&value).unwrap()
}

fn keep_all(_: &str) -> bool {
    true
}

fn context<'a>(schema: Schema<'a>, keep: &'a dyn Fn(&str) -> bool) -> Context<'a> {
    Context {
        schema,
        keep,
        api_version: "example.com/v1",
        now: "2026-01-01T00:00:00Z",
    }
}

fn widget(spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": spec,
    })
}

fn applier(name: &str) -> ManagerId {
    ManagerId::new(name, Operation::Apply, "", None)
}

fn updater(name: &str) -> ManagerId {
    ManagerId::new(name, Operation::Update, "example.com/v1", None)
}

#[test]
fn fields_v1_round_trips_the_upstream_encoding() {
    let encoded = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}},
            }}},
            "f:finalizers": {"v:\"a\"": {}},
            "f:list": {"i:0": {}},
        },
    });
    let set = fields(encoded.clone());
    assert!(set.has(&[PathElement::field("metadata"), PathElement::field("labels")]));
    assert!(!set.has(&[PathElement::field("metadata")]));
    let container = [
        PathElement::field("spec"),
        PathElement::field("template"),
        PathElement::field("spec"),
        PathElement::field("containers"),
        PathElement::Key(vec![("name".into(), "\"nginx\"".into())]),
    ];
    assert!(set.has(&container));
    assert_eq!(
        path_string(&container),
        ".spec.template.spec.containers[name=\"nginx\"]"
    );
    assert_eq!(set.to_fields_v1(), encoded);
    assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
}

#[test]
fn field_set_of_a_configuration_follows_the_schema() {
    let schema_value = widget_schema();
    let schema = Schema::Root(&schema_value);
    let config = widget(json!({
        "color": "red",
        "ports": [{"name": "http", "port": 80}],
        "tags": ["a"],
        "args": ["x"],
        "extra": {"deep": {"x": 1}},
    }));
    let set = merge::field_set(&config, schema, true).unwrap();
    assert_eq!(
        set.to_fields_v1(),
        json!({
            "f:apiVersion": {},
            "f:kind": {},
            "f:metadata": {"f:name": {}, "f:namespace": {}},
            "f:spec": {
                "f:color": {},
                "f:args": {},
                "f:tags": {"v:\"a\"": {}},
                "f:ports": {"k:{\"name\":\"http\",\"protocol\":\"TCP\"}": {
                    ".": {}, "f:name": {}, "f:port": {},
                }},
                // Undeclared keys are members themselves, declared struct fields are not.
                "f:extra": {"f:deep": {".": {}, "f:x": {}}},
            },
        })
    );

    let missing_keys = widget(json!({"ports": [{"port": 80}]}));
    let schema_without_default = json!({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"},
        }},
    }}});
    let error =
        merge::field_set(&missing_keys, Schema::Root(&schema_without_default), true).unwrap_err();
    assert_eq!(error.path, ".spec.ports");
    assert!(error.message.contains("omits all key fields"), "{error}");
    let unknown = widget(json!({"bogus": 1, "extra": {"anything": 1}}));
    let error = merge::field_set(&unknown, schema, true).unwrap_err();
    assert_eq!(
        error.to_string(),
        ".spec.bogus: field not declared in schema"
    );
    assert!(
        merge::field_set(&unknown, schema, false).is_ok(),
        "live objects are read leniently"
    );
    let duplicates = widget(json!({"tags": ["a", "a"]}));
    let error = merge::field_set(&duplicates, schema, true).unwrap_err();
    assert!(error.message.contains("duplicate entries"), "{error}");
}

#[test]
fn compare_records_new_containers_and_their_leaves() {
    let schema_value = widget_schema();
    let schema = Schema::Root(&schema_value);
    let old = widget(json!({"color": "red"}));
    let mut new = widget(json!({"color": "blue", "extra": {"a": 1}}));
    new["metadata"]["labels"] = json!({"app": "x"});
    let comparison = merge::compare(&old, &new, schema);
    assert_eq!(
        comparison.modified.to_fields_v1(),
        json!({"f:spec": {"f:color": {}}})
    );
    assert_eq!(
        comparison.added.to_fields_v1(),
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:extra": {".": {}, "f:a": {}}},
        })
    );
    let back = merge::compare(&new, &old, schema);
    assert_eq!(back.removed, comparison.added);
}

/// Associative lists compare by item key whatever the order: items in the same order are
/// paired by position, any other change of the items by key; a list with duplicate keys is
/// read as atomic.
#[test]
fn compare_finds_list_items_by_key_in_any_order() {
    let schema_value = widget_schema();
    let schema = Schema::Root(&schema_value);
    let ports = |ports: Value| widget(json!({ "ports": ports }));
    let http = json!({"name": "http", "port": 80});
    let https = json!({"name": "https", "port": 443});
    let https_key = r#"k:{"name":"https","protocol":"TCP"}"#;
    let port_changed = |key: &str| json!({"f:spec": {"f:ports": {key: {"f:port": {}}}}});

    // Same items, same order, one value changed.
    let old = ports(json!([http, https]));
    let new = ports(json!([http, {"name": "https", "port": 8443}]));
    let comparison = merge::compare(&old, &new, schema);
    assert_eq!(comparison.modified.to_fields_v1(), port_changed(https_key));
    assert!(comparison.added.is_empty() && comparison.removed.is_empty());

    // Reordered and changed: still by key.
    let new = ports(json!([{"name": "https", "port": 8443}, http]));
    let comparison = merge::compare(&old, &new, schema);
    assert_eq!(comparison.modified.to_fields_v1(), port_changed(https_key));
    assert!(comparison.added.is_empty() && comparison.removed.is_empty());

    // Same length, another key in one place: one item gone, one new.
    let grpc = json!({"name": "grpc", "port": 9090});
    let new = ports(json!([http, grpc]));
    let comparison = merge::compare(&old, &new, schema);
    assert_eq!(
        comparison.removed.to_fields_v1(),
        json!({"f:spec": {"f:ports": {https_key: {".": {}, "f:name": {}, "f:port": {}}}}})
    );
    assert_eq!(
        comparison.added.to_fields_v1(),
        json!({"f:spec": {"f:ports": {r#"k:{"name":"grpc","protocol":"TCP"}"#: {".": {}, "f:name": {}, "f:port": {}}}}})
    );

    // An item appended: only it is new.
    let new = ports(json!([http, https, grpc]));
    let comparison = merge::compare(&old, &new, schema);
    assert!(comparison.modified.is_empty() && comparison.removed.is_empty());
    assert_eq!(
        comparison.added.to_fields_v1(),
        json!({"f:spec": {"f:ports": {r#"k:{"name":"grpc","protocol":"TCP"}"#: {".": {}, "f:name": {}, "f:port": {}}}}})
    );

    // Duplicate keys: the list is one atomic value.
    let new = ports(json!([http, {"name": "http", "port": 81}]));
    let comparison = merge::compare(&old, &new, schema);
    assert_eq!(
        comparison.modified.to_fields_v1(),
        json!({"f:spec": {"f:ports": {}}})
    );
}

#[test]
fn merge_combines_maps_and_associative_lists() {
    let schema_value = widget_schema();
    let schema = Schema::Root(&schema_value);
    let live = widget(json!({
        "color": "red",
        "size": 3,
        "args": ["a", "b"],
        "tags": ["x", "y"],
        "ports": [
            {"name": "a", "port": 1},
            {"name": "b", "port": 2},
            {"name": "c", "port": 3},
        ],
        "selector": {"app": "one", "tier": "web"},
    }));
    let config = widget(json!({
        "color": "blue",
        "size": null,
        "args": ["c"],
        "tags": ["z", "x"],
        "ports": [{"name": "c", "port": 30}, {"name": "a", "protocol": "TCP", "port": 10}],
        "selector": {"app": "two"},
    }));
    let merged = merge::merge(&live, &config, schema).unwrap();
    assert_eq!(
        merged["spec"],
        json!({
            "color": "blue",
            "args": ["c"],
            "tags": ["z", "x", "y"],
            "ports": [
                {"name": "b", "port": 2},
                {"name": "c", "port": 30},
                {"name": "a", "protocol": "TCP", "port": 10},
            ],
            "selector": {"app": "two"},
        })
    );
}

#[test]
fn prune_removes_what_the_applier_no_longer_applies() {
    let schema_value = widget_schema();
    let schema = Schema::Root(&schema_value);
    let merged = widget(json!({"color": "red", "size": 3, "tags": ["a", "b"]}));
    let last = fields(json!({"f:spec": {"f:color": {}, "f:size": {}, "f:tags": {"v:\"a\"": {}}}}));
    // The applier's new configuration has only color; another manager owns size and tag b.
    let owned = fields(json!({"f:spec": {"f:color": {}, "f:size": {}, "f:tags": {"v:\"b\"": {}}}}));
    let pruned = merge::prune(&merged, &last, &owned, schema);
    assert_eq!(
        pruned["spec"],
        json!({"color": "red", "size": 3, "tags": ["b"]})
    );
    // When nobody owns what is left of the list, the whole list goes.
    let owned = fields(json!({"f:spec": {"f:color": {}, "f:size": {}}}));
    let pruned = merge::prune(&merged, &last, &owned, schema);
    assert_eq!(pruned["spec"], json!({"color": "red", "size": 3}));

    // Nobody owns anything under spec: the declared struct goes with its last field.
    let last = fields(json!({"f:spec": {"f:color": {}}}));
    let pruned = merge::prune(
        &widget(json!({"color": "red"})),
        &last,
        &FieldSet::new(),
        schema,
    );
    assert!(pruned.get("spec").is_none(), "{pruned}");
}

#[test]
fn apply_owns_its_configuration_and_conflicts_with_other_owners() {
    let schema_value = widget_schema();
    let keep = keep_all;
    let cx = context(Schema::Root(&schema_value), &keep);
    let empty = json!({"apiVersion": "example.com/v1", "kind": "Widget"});

    // "m1" creates with an update, "a" applies the same color: shared, no conflict.
    let created = widget(json!({"color": "red"}));
    let managed = managed::record_update(Managed::default(), &empty, &created, &cx, &updater("m1"));
    assert_eq!(
        managed.entries[&updater("m1")].fields.to_fields_v1(),
        json!({"f:spec": {".": {}, "f:color": {}}})
    );
    let (object, managed) = managed::apply(
        &created,
        &widget(json!({"color": "red", "size": 1})),
        managed,
        &cx,
        &applier("a"),
        false,
    )
    .unwrap();
    assert_eq!(object["spec"], json!({"color": "red", "size": 1}));
    assert_eq!(
        managed.entries[&applier("a")].fields.to_fields_v1(),
        json!({"f:spec": {"f:color": {}, "f:size": {}}})
    );
    assert!(
        managed.entries[&updater("m1")]
            .fields
            .has(&[PathElement::field("spec"), PathElement::field("color")])
    );

    // "b" changes the color: conflicts with both owners.
    let conflicting = widget(json!({"color": "blue"}));
    let result = managed::apply(
        &object,
        &conflicting,
        managed.clone(),
        &cx,
        &applier("b"),
        false,
    );
    let Err(ApplyError::Conflicts(conflicts)) = result else {
        panic!("expected conflicts");
    };
    let described: Vec<String> = conflicts
        .iter()
        .map(|(id, path)| format!("{} {}", id.describe(), path_string(path)))
        .collect();
    assert_eq!(
        described,
        [
            "\"a\" .spec.color",
            "\"m1\" using example.com/v1 .spec.color"
        ]
    );

    // Forced, "b" takes the color from both.
    let (object, managed) =
        managed::apply(&object, &conflicting, managed, &cx, &applier("b"), true).unwrap();
    assert_eq!(object["spec"]["color"], "blue");
    assert_eq!(
        managed.entries[&updater("m1")].fields.to_fields_v1(),
        json!({"f:spec": {}}),
        "m1 keeps the spec it created"
    );
    assert_eq!(
        managed.entries[&applier("a")].fields.to_fields_v1(),
        json!({"f:spec": {"f:size": {}}})
    );

    // "a" stops applying size: it is removed (nobody else owns it).
    let nothing =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}});
    let (object, managed) =
        managed::apply(&object, &nothing, managed, &cx, &applier("a"), false).unwrap();
    assert_eq!(object["spec"], json!({"color": "blue"}));
    assert!(!managed.entries.contains_key(&applier("a")));
}

#[test]
fn update_takes_what_it_changes_from_everyone() {
    let schema_value = widget_schema();
    let keep = keep_all;
    let cx = context(Schema::Root(&schema_value), &keep);
    let live = widget(json!({"color": "red", "size": 1}));
    let mut managed = Managed::default();
    managed.entries.insert(
        applier("a"),
        managed::Entry {
            api_version: "example.com/v1".into(),
            time: Some("2025-01-01T00:00:00Z".into()),
            fields: fields(json!({"f:spec": {"f:color": {}, "f:size": {}}})),
        },
    );
    let new = widget(json!({"color": "green"}));
    let managed = managed::record_update(managed, &live, &new, &cx, &updater("m2"));
    assert!(!managed.entries.contains_key(&applier("a")));
    let entry = &managed.entries[&updater("m2")];
    assert_eq!(
        entry.fields.to_fields_v1(),
        json!({"f:spec": {"f:color": {}}})
    );
    assert_eq!(entry.time.as_deref(), Some("2026-01-01T00:00:00Z"));

    // The main resource of a kind with a status subresource ignores status.
    let keep_spec = |field: &str| field != "status";
    let cx = context(Schema::Root(&schema_value), &keep_spec);
    let mut with_status = new.clone();
    with_status["status"] = json!({"ready": true});
    let managed = managed::record_update(managed, &new, &with_status, &cx, &updater("m3"));
    assert!(!managed.entries.contains_key(&updater("m3")));
}

#[test]
fn managed_fields_encode_in_upstream_order_and_decode_back() {
    let mut managed = Managed::default();
    for (id, time) in [
        (updater("z"), "2025-01-01T00:00:00Z"),
        (updater("b"), "2024-01-01T00:00:00Z"),
        (applier("y"), "2026-01-01T00:00:00Z"),
    ] {
        managed.entries.insert(
            id,
            managed::Entry {
                api_version: "example.com/v1".into(),
                time: Some(time.into()),
                fields: fields(json!({"f:spec": {"f:color": {}}})),
            },
        );
    }
    let encoded = managed.encode();
    // `fieldsV1` is held as text; as clients see it, it is the tree.
    let shown = fields_text::expanded(&encoded);
    let order: Vec<&str> = encoded
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["y", "b", "z"]);
    assert_eq!(
        shown[0],
        json!({
            "manager": "y",
            "operation": "Apply",
            "apiVersion": "example.com/v1",
            "time": "2026-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:color": {}}},
        })
    );
    assert_eq!(Managed::decode(Some(&encoded)).unwrap(), managed);
    assert!(Managed::decode(Some(&json!([{"manager": "x", "operation": "Patch"}]))).is_err());
}

#[test]
fn update_managers_beyond_ten_are_merged_into_ancient_changes() {
    let mut managed = Managed::default();
    for index in 0..12 {
        managed.entries.insert(
            updater(&format!("m{index:02}")),
            managed::Entry {
                api_version: "example.com/v1".into(),
                time: Some(format!("2025-01-01T00:00:{index:02}Z")),
                fields: fields(json!({"f:spec": {(format!("f:f{index}")): {}}})),
            },
        );
    }
    managed.cap_update_managers(managed::MAX_UPDATE_MANAGERS);
    assert_eq!(managed.entries.len(), 10);
    let bucket = &managed.entries[&updater("ancient-changes")];
    assert_eq!(
        bucket.fields.to_fields_v1(),
        json!({"f:spec": {"f:f0": {}, "f:f1": {}, "f:f2": {}}})
    );
    assert_eq!(bucket.time.as_deref(), Some("2025-01-01T00:00:02Z"));
}

#[test]
fn built_in_metadata_lists_are_associative() {
    let resource = crate::registry::builtins()
        .into_iter()
        .find(|r| r.plural == "configmaps")
        .unwrap();
    let schema = Schema::for_resource(&resource, "v1");
    let live = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "finalizers": ["a"],
            "ownerReferences": [{"uid": "1", "name": "one"}],
        },
        "data": {"x": "1"},
    });
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "finalizers": ["b"],
            "ownerReferences": [{"uid": "2", "name": "two"}],
        },
        "data": {"y": "2"},
    });
    let merged = merge::merge(&live, &config, schema).unwrap();
    assert_eq!(merged["metadata"]["finalizers"], json!(["a", "b"]));
    assert_eq!(
        merged["metadata"]["ownerReferences"],
        json!([{"uid": "1", "name": "one"}, {"uid": "2", "name": "two"}])
    );
    assert_eq!(merged["data"], json!({"x": "1", "y": "2"}));
}

/// The in-place update of a stored managedFields list gives exactly the list that decoding,
/// `record_changes` and encoding give, for every kind of change: nothing, a field the writer
/// owns already, a field another manager owns, a removal, a new writer, a keyed list item,
/// and a change to server-owned metadata.
#[test]
fn in_place_update_of_managed_fields_equals_decode_and_encode() {
    let schema_value = widget_schema();
    let keep = keep_all;
    let cx = context(Schema::Root(&schema_value), &keep);
    let live = {
        let mut live = widget(json!({
            "color": "red",
            "size": 1,
            "tags": ["a", "b"],
            "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
            "extra": {"x": 1},
        }));
        live["metadata"]["labels"] = json!({"app": "w"});
        live
    };
    let mut managed = Managed::default();
    for (id, time, set) in [
        (
            applier("a"),
            "2025-01-01T00:00:00Z",
            json!({"f:spec": {"f:color": {}, "f:tags": {"v:\"a\"": {}}}}),
        ),
        (
            updater("m1"),
            "2025-02-01T00:00:00Z",
            json!({"f:spec": {"f:size": {}, "f:ports": {
                "k:{\"name\":\"http\",\"protocol\":\"TCP\"}": {".": {}, "f:port": {}},
            }}}),
        ),
        (
            updater("m2"),
            "2025-03-01T00:00:00Z",
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:extra": {}}}),
        ),
        (
            ManagerId::new("m1", Operation::Update, "example.com/v1", Some("status")),
            "2024-01-01T00:00:00Z",
            json!({"f:status": {}}),
        ),
    ] {
        managed.entries.insert(
            id,
            managed::Entry {
                api_version: "example.com/v1".into(),
                time: Some(time.into()),
                fields: fields(set),
            },
        );
    }
    let stored = managed.encode();
    type Change = Box<dyn Fn(&mut Value)>;
    let changes: Vec<Change> = vec![
        Box::new(|_| {}),
        Box::new(|o| o["spec"]["size"] = json!(2)),
        Box::new(|o| o["spec"]["color"] = json!("blue")),
        Box::new(|o| {
            o["spec"].as_object_mut().unwrap().remove("extra");
        }),
        Box::new(|o| o["spec"]["ports"][0]["port"] = json!(8080)),
        Box::new(|o| o["spec"]["tags"] = json!(["a"])),
        Box::new(|o| o["metadata"]["labels"]["tier"] = json!("web")),
        Box::new(|o| o["metadata"]["generation"] = json!(7)),
        Box::new(|o| {
            o["spec"]["size"] = json!(3);
            o["spec"]["args"] = json!(["x"]);
            o["metadata"]["labels"] = json!({});
        }),
    ];
    for writer in [
        updater("m1"),
        updater("m2"),
        updater("new"),
        ManagerId::new("m1", Operation::Update, "example.com/v1", Some("status")),
    ] {
        for (index, change) in changes.iter().enumerate() {
            let mut new = live.clone();
            change(&mut new);
            let changes = managed::UpdateChanges::between(&live, &new, &cx);
            let in_place = managed::record_changes_in_place(
                stored.as_array().unwrap().clone(),
                &changes.changed,
                &changes.removed,
                &cx,
                &writer,
            )
            .expect("a list as encoded is updated in place");
            let mut decoded = managed::record_changes(
                Managed::decode(Some(&stored)).unwrap(),
                changes.changed,
                &changes.removed,
                &cx,
                &writer,
            );
            decoded.cap_update_managers(managed::MAX_UPDATE_MANAGERS);
            assert_eq!(
                in_place,
                decoded.encode(),
                "change {index} by {}",
                writer.describe()
            );
            assert_eq!(changes.differ, index != 0, "change {index}");
        }
    }
    // A list not as encoded is left to the general way.
    let mut odd = stored.clone();
    odd[0]["extra"] = json!(1);
    let changes = managed::UpdateChanges::between(&live, &live, &cx);
    assert!(
        managed::record_changes_in_place(
            odd.as_array().unwrap().clone(),
            &changes.changed,
            &changes.removed,
            &cx,
            &updater("m1"),
        )
        .is_none()
    );
}

/// Comparing in place, without type, resourceVersion and managedFields, finds what comparing
/// copies without them finds.
#[test]
fn comparison_in_place_equals_comparison_of_copies() {
    let schema_value = widget_schema();
    let schema = Schema::Root(&schema_value);
    let mut current = widget(json!({"color": "red", "ports": [{"name": "a", "port": 1}]}));
    current["metadata"]["resourceVersion"] = json!("7");
    current["metadata"]["managedFields"] = json!([{"manager": "m"}]);
    current["apiVersion"] = json!("example.com/v0");
    let mut news = Vec::new();
    for change in [
        json!({}),
        json!({"spec": {"color": "blue"}}),
        json!({"metadata": {"labels": {"a": "b"}}}),
        json!({"metadata": {"name": "other"}, "status": {"x": 1}}),
        json!({"spec": {"ports": [{"name": "a", "port": 2}, {"name": "b"}]}}),
    ] {
        let mut new = widget(json!({"color": "red", "ports": [{"name": "a", "port": 1}]}));
        json_patch::merge(&mut new, &change);
        news.push(new);
    }
    let view = |object: &Value| {
        let mut object = object.clone();
        object["apiVersion"] = json!("example.com/v1");
        let metadata = object["metadata"].as_object_mut().unwrap();
        metadata.remove("resourceVersion");
        metadata.remove("managedFields");
        object
    };
    for new in news {
        let in_place = merge::compare_without(
            &current,
            &new,
            schema,
            &["apiVersion", "kind"],
            &["resourceVersion", "managedFields"],
            &|_| true,
        )
        .unwrap();
        assert_eq!(
            in_place,
            merge::compare(&view(&current), &view(&new), schema),
            "{new}"
        );
        // Fields a subresource may not change are not compared: the same as dropping them
        // from the full comparison.
        for keep in [
            &(|field: &str| field == "status") as &dyn Fn(&str) -> bool,
            &|field: &str| field != "status",
        ] {
            let kept = merge::compare_without(
                &current,
                &new,
                schema,
                &["apiVersion", "kind"],
                &["resourceVersion", "managedFields"],
                keep,
            )
            .unwrap();
            assert_eq!(kept, in_place.clone().retain_top_level(keep), "{new}");
        }
    }
    assert!(
        merge::compare_without(&current, &json!({"metadata": 1}), schema, &[], &[], &|_| {
            true
        })
        .is_none()
    );
}

/// A create's managedFields written straight in `FieldsV1` form are what comparing against
/// the empty object, recording and encoding gives, for every shape a create can bring:
/// list-map items (keys defaulted, escaped, duplicated, missing), sets (with duplicates and
/// maps), empty and atomic containers, metadata lists, and fields the writer may not change.
#[test]
fn created_fields_v1_equal_recording_a_create() {
    let schema_value = widget_schema();
    let schema = Schema::Root(&schema_value);
    let mut objects = vec![
        widget(json!({})),
        widget(json!({"color": "red", "size": 1, "args": ["a", "a"], "selector": {"a": "b"}})),
        widget(json!({
            "ports": [
                {"name": "http", "port": 80},
                {"name": "dns", "protocol": "UDP", "port": 53},
                {"name": "q\"uo\\te", "protocol": "TCP"},
                {"name": "ünï", "port": 1},
            ],
            "tags": ["b", "a", 1, true],
            "extra": {"deep": {"x": [1, {"y": null}], "z": {}}, "n": null},
        })),
        widget(json!({"ports": [{"name": "a"}, {"name": "a", "protocol": "TCP"}]})),
        widget(json!({"ports": [{"port": 1}]})),
        widget(json!({"ports": [null]})),
        widget(json!({"ports": [1, 2]})),
        widget(json!({"ports": [], "tags": [], "extra": {}, "selector": {}})),
        widget(json!({"tags": ["a", "a"]})),
        widget(json!({"tags": [{"a": 1}]})),
        widget(json!({"tags": [null]})),
        widget(json!({"ports": {"not": "a list"}, "tags": "nor this", "color": {"x": 1}})),
        widget(json!(null)),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "only"}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget"}),
    ];
    let mut full = widget(json!({"color": "red", "ports": [{"name": "a", "port": 1}]}));
    full["metadata"] = json!({
        "name": "w1",
        "namespace": "default",
        "generateName": "w-",
        "uid": "u1",
        "generation": 1,
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"app": "w", "": "empty"},
        "annotations": {},
        "finalizers": ["example.com/a", "example.com/b"],
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u0"},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "d", "uid": "u2", "controller": true},
        ],
    });
    full["status"] = json!({"phase": "Ready", "conditions": [{"type": "Ready"}]});
    objects.push(full);
    let mut odd_metadata = widget(json!({}));
    odd_metadata["metadata"] = json!({"name": {"not": "a string"}, "labels": null});
    objects.push(odd_metadata);

    let keep_spec = |field: &str| field != "status";
    let keep_status = |field: &str| field == "status";
    let keeps: [&dyn Fn(&str) -> bool; 3] = [&keep_all, &keep_spec, &keep_status];
    let writer = updater("creator");
    let empty = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
    for object in &objects {
        for keep in keeps {
            let cx = context(schema, keep);
            let changes = managed::UpdateChanges::between(&empty, object, &cx);
            let recorded = managed::record_changes(
                Managed::default(),
                changes.changed,
                &changes.removed,
                &cx,
                &writer,
            )
            .encode();
            let direct = managed::record_create(object, &["apiVersion", "kind"], &cx, &writer)
                .expect("an object");
            assert_eq!(direct, recorded, "{object}");
        }
    }
    // The entry of a real create, as kube-apiserver writes it.
    let cx = context(schema, &keep_spec);
    let list = managed::record_create(&objects[2], &["apiVersion", "kind"], &cx, &writer);
    let list = fields_text::expanded(&list.unwrap());
    assert_eq!(
        list[0]["fieldsV1"]["f:spec"]["f:ports"]["k:{\"name\":\"http\",\"protocol\":\"TCP\"}"],
        json!({".": {}, "f:name": {}, "f:port": {}})
    );
    assert_eq!(list[0]["manager"], json!("creator"));
    assert!(managed::record_create(&json!([1]), &[], &cx, &writer).is_none());
}
