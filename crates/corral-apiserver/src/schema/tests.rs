//! Unit tests of schema enforcement: pruning, defaulting, validation messages and CEL rules,
//! checked against the messages kube-apiserver gives for the same schema and object.

use serde_json::{Value, json};

use super::field::{ErrorType, FieldError, go_float, go_value};
use super::{CompiledSchema, coerce, decode, validate};

/// What a write does to `object`: pruning (returning the unknown paths), defaulting and
/// validation. Returns the object, the unknown paths, the errors as `field: body` and the
/// warnings.
fn admit(
    schema: &CompiledSchema,
    mut object: Value,
    old: Option<&Value>,
) -> (Value, Vec<String>, Vec<String>, Vec<String>) {
    let unknown = decode(schema, &mut object, true);
    coerce::default(&mut object, &schema.root);
    let (errors, warnings) = validate(schema, &object, old);
    let errors = errors.iter().map(FieldError::message).collect();
    (object, unknown, errors, warnings)
}

fn errors_of(schema: &CompiledSchema, object: Value) -> Vec<String> {
    admit(schema, object, None).2
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

fn rich_schema() -> CompiledSchema {
    CompiledSchema::new(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "format": "int32"},
                    "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "when": {"type": "string", "format": "date-time"},
                    "id": {"type": "string", "format": "uuid"},
                    "port": {"x-kubernetes-int-or-string": true},
                    "note": {"type": "string", "nullable": true},
                    "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 1}},
                    "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "default": 80}
                            }
                        }
                    },
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}
                        }
                    },
                    "limits": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": {"type": "integer", "default": 1}
                    },
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true
                    }
                }
            },
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
    }))
}

#[test]
fn every_field_error_of_an_object_is_reported_with_upstream_wording() {
    let schema = rich_schema();
    let errors = errors_of(
        &schema,
        widget(json!({
            "name": "TooLongName",
            "replicas": "abc",
            "ratio": 1,
            "mode": "x",
            "when": "yesterday",
            "id": "not-a-uuid",
            "port": 1.5,
            "tags": ["a", "", "c"],
            "items": [{"name": "ok"}, {"name": "fine"}, {"name": "Bad"}],
            "limits": {"cpu": "many"}
        })),
    );
    assert_eq!(
        errors,
        vec![
            "spec.id: Invalid value: \"not-a-uuid\": spec.id in body must be of type uuid: \"not-a-uuid\"",
            "spec.items[2].name: Invalid value: \"Bad\": spec.items[2].name in body should match '^[a-z]+$'",
            "spec.limits.cpu: Invalid value: \"string\": spec.limits.cpu in body must be of type integer: \"string\"",
            "spec.mode: Unsupported value: \"x\": supported values: \"a\", \"b\"",
            "spec.name: Too long: may not be more than 5 bytes",
            "spec.port: Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\"",
            "spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1",
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            "spec.tags[1]: Invalid value: \"\": spec.tags[1] in body should be at least 1 chars long",
            "spec.tags: Too many: 3: must have at most 2 items",
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
        ]
    );
}

#[test]
fn required_bounds_and_counts() {
    let schema = rich_schema();
    let errors = errors_of(
        &schema,
        widget(json!({"replicas": 0, "limits": {}, "ports": [{"port": 1}]})),
    );
    assert_eq!(
        errors,
        vec![
            "spec.limits: Invalid value: 0: spec.limits in body should have at least 1 properties",
            "spec.ports[0].name: Required value",
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            "spec.name: Required value",
        ]
    );
    let errors = errors_of(
        &schema,
        widget(json!({"name": "a", "replicas": 3_000_000_000i64})),
    );
    assert_eq!(
        errors,
        vec![
            "<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.replicas",
            "spec.replicas: Invalid value: 3000000000: spec.replicas in body should be less than or equal to 10",
        ]
    );
}

#[test]
fn numbers_are_checked_as_kube_openapi_checks_them() {
    let schema = CompiledSchema::new(&json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "integer", "multipleOf": 5},
            "b": {"type": "number", "multipleOf": 0.5},
            "c": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
            "d": {"type": "integer", "minimum": 0.5},
            "e": {"type": "number", "maximum": 1000000}
        }}}
    }));
    let errors = errors_of(
        &schema,
        widget(json!({"a": 7, "b": 0.75, "c": 0, "d": 0, "e": 1000000.5})),
    );
    assert_eq!(
        errors,
        vec![
            "spec.a: Invalid value: 7: spec.a in body should be a multiple of 5",
            "spec.b: Invalid value: 0.75: spec.b in body should be a multiple of 0.5",
            "spec.c: Invalid value: 0: spec.c in body should be greater than 0",
            "spec.d: Invalid value: 0: spec.d in body should be greater than or equal to 0.5",
            "spec.e: Invalid value: 1.0000005e+06: spec.e in body should be less than or equal to 1e+06",
        ]
    );
}

/// Lengths are code points (the check skips counting them when the byte length decides).
#[test]
fn string_lengths_count_code_points() {
    let schema = CompiledSchema::new(&json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "short": {"type": "string", "maxLength": 3},
            "long": {"type": "string", "minLength": 2}
        }}}
    }));
    // 3 code points in 6 bytes; 2 in 4 (a € is 3 bytes).
    let errors = errors_of(&schema, widget(json!({"short": "ééé", "long": "€é"})));
    assert!(errors.is_empty(), "{errors:?}");
    let errors = errors_of(&schema, widget(json!({"short": "éééé", "long": "é"})));
    assert_eq!(
        errors,
        vec![
            "spec.long: Invalid value: \"é\": spec.long in body should be at least 2 chars long",
            "spec.short: Too long: may not be more than 3 bytes",
        ]
    );
    let errors = errors_of(
        &schema,
        widget(json!({"short": "abcdefghijklmnop", "long": ""})),
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn a_valid_object_passes_and_int_or_string_takes_both() {
    let schema = rich_schema();
    for port in [json!(8080), json!("http"), json!(2.0)] {
        let errors = errors_of(
            &schema,
            widget(json!({
                "name": "abc", "replicas": 3, "ratio": 0.5, "port": port, "note": null,
                "when": "2024-05-01T10:00:00Z", "id": "2b0e5a4c-6c4e-4c0b-9d3c-2b3f1c1b5e7a",
                "ports": [{"name": "http"}, {"name": "https", "port": 443}],
                "set": ["a", "b"], "limits": {"cpu": 2}
            })),
        );
        assert!(errors.is_empty(), "{port}: {errors:?}");
    }
}

#[test]
fn list_types_refuse_duplicates() {
    let schema = rich_schema();
    let errors = errors_of(
        &schema,
        widget(json!({
            "name": "abc",
            "set": ["a", "b", "a", "a"],
            "ports": [{"name": "http"}, {"name": "http", "port": 81}]
        })),
    );
    assert_eq!(
        errors,
        vec![
            "spec.ports[1]: Duplicate value: {\"name\":\"http\"}",
            "spec.set[2]: Duplicate value: \"a\"",
        ]
    );
}

#[test]
fn unknown_fields_are_pruned_and_reported_sorted() {
    let schema = rich_schema();
    let (object, unknown, errors, _) = admit(
        &schema,
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "bogusMeta": 1},
            "bogus": true,
            "spec": {
                "name": "abc",
                "zeta": 1,
                "items": [{"name": "a", "other": 2}],
                "extra": {"anything": {"goes": true}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "junk": 1}, "spec": {"x": 1}}
            },
            "status": {"ready": true, "phase": "Up"}
        }),
        None,
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        unknown,
        vec![
            "metadata.bogusMeta",
            "bogus",
            "spec.items[0].other",
            "spec.zeta",
            "status.phase",
            "spec.template.metadata.junk",
        ]
    );
    assert_eq!(object["metadata"], json!({"name": "w"}));
    assert!(object.get("bogus").is_none());
    assert_eq!(object["spec"]["extra"], json!({"anything": {"goes": true}}));
    assert_eq!(object["spec"]["items"], json!([{"name": "a"}]));
    assert_eq!(
        object["spec"]["template"],
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}})
    );
    assert_eq!(object["status"], json!({"ready": true}));
}

#[test]
fn defaults_fill_absent_fields_list_items_and_map_values() {
    let schema = rich_schema();
    let (object, _, errors, _) = admit(
        &schema,
        widget(json!({
            "name": "abc",
            "mode": null,
            "ports": [{"name": "http"}, {"name": "https", "port": 443}],
            "limits": {"cpu": null, "memory": 5}
        })),
        None,
    );
    assert!(errors.is_empty(), "{errors:?}");
    let spec = &object["spec"];
    assert_eq!(
        spec["mode"], "a",
        "a null that is not nullable is defaulted"
    );
    assert_eq!(
        spec["ports"],
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])
    );
    assert_eq!(spec["limits"], json!({"cpu": 1, "memory": 5}));
    assert!(
        spec.get("items").is_none(),
        "absent objects are not created"
    );
}

#[test]
fn nulls_that_are_neither_nullable_nor_defaulted_are_dropped() {
    let schema = rich_schema();
    let (object, _, errors, _) = admit(
        &schema,
        widget(json!({"name": "abc", "replicas": null, "note": null})),
        None,
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert!(object["spec"].get("replicas").is_none());
    assert_eq!(
        object["spec"]["note"],
        Value::Null,
        "nullable fields keep null"
    );
}

/// Checks that only some subtrees need (list types, embedded resources) are still found
/// under additional properties and list items, with their paths rendered as upstream does.
#[test]
fn checks_deep_under_maps_and_lists_name_their_fields() {
    let schema = CompiledSchema::new(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "groups": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "members": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name", "zone"],
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "name": {"type": "string"},
                                            "zone": {"type": "string"}
                                        }
                                    }
                                }
                            }
                        }
                    },
                    "templates": {
                        "type": "array",
                        "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                                  "x-kubernetes-preserve-unknown-fields": true}
                    }
                }
            }
        }
    }));
    let mut object = widget(json!({
        "groups": {"a": {"members": [
            {"name": "x", "zone": "1"}, {"name": "x", "zone": "2"}, {"name": "x", "zone": "1"}
        ]}},
        "templates": [{"apiVersion": "v1", "kind": "Pod"}, {"kind": "Pod"}]
    }));
    // Pruning would drop what `additionalProperties: false` forbids: validate as sent.
    object["spec"]["extra"] = json!(1);
    let (errors, _) = validate(&schema, &object, None);
    let errors: Vec<String> = errors.iter().map(FieldError::message).collect();
    assert_eq!(
        errors,
        vec![
            "spec: Invalid value: \"extra\": spec.extra in body is a forbidden property",
            "spec.templates[1].apiVersion: Required value",
            "spec.groups[a].members[2]: Duplicate value: {\"name\":\"x\",\"zone\":\"1\"}",
        ]
    );
}

#[test]
fn embedded_resources_need_a_type() {
    let schema = rich_schema();
    let errors = errors_of(
        &schema,
        widget(json!({"name": "abc", "template": {"metadata": {"name": "a/b"}, "kind": 5}})),
    );
    assert_eq!(
        errors,
        vec![
            "spec.template.apiVersion: Required value",
            "spec.template.kind: Invalid value: 5: must be a string",
            "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
        ]
    );
}

#[test]
fn junctions_report_like_kube_openapi() {
    let schema = CompiledSchema::new(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "anyOf": [{"pattern": "^x"}, {"pattern": "^y"}]},
                    "b": {"type": "integer", "not": {"minimum": 5}},
                    "c": {"type": "integer", "oneOf": [{"minimum": 1}, {"maximum": 10}]}
                }
            }
        }
    }));
    let errors = errors_of(&schema, widget(json!({"a": "z", "b": 7, "c": 5})));
    assert_eq!(
        errors,
        vec![
            "<nil>: Invalid value: \"\": \"spec.a\" must validate at least one schema (anyOf)",
            "spec.a: Invalid value: \"z\": spec.a in body should match '^x'",
            "<nil>: Invalid value: \"\": \"spec.b\" must not validate the schema (not)",
            "<nil>: Invalid value: \"\": \"spec.c\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
        ]
    );
}

#[test]
fn unchanged_values_are_not_validated_again_on_update() {
    let strict = CompiledSchema::new(&json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 3},
            "size": {"type": "integer", "minimum": 10}
        }}}
    }));
    let old = widget(json!({"name": "toolong", "size": 1}));
    let (_, _, errors, _) = admit(
        &strict,
        widget(json!({"name": "toolong", "size": 1})),
        Some(&old),
    );
    assert!(
        errors.is_empty(),
        "an unchanged invalid object stays writable: {errors:?}"
    );
    let (_, _, errors, _) = admit(
        &strict,
        widget(json!({"name": "toolong", "size": 2})),
        Some(&old),
    );
    assert_eq!(
        errors,
        vec![
            "spec.size: Invalid value: 2: spec.size in body should be greater than or equal to 10"
        ]
    );
}

#[test]
fn values_print_as_go_prints_them() {
    assert_eq!(go_float(0.5), "0.5");
    assert_eq!(go_float(1.0), "1");
    assert_eq!(go_float(1e6), "1e+06");
    assert_eq!(go_float(123456.0), "123456");
    assert_eq!(go_float(1.5e-7), "1.5e-07");
    assert_eq!(go_value(&json!("a\"b\n")), "\"a\\\"b\\n\"");
    assert_eq!(
        go_value(&json!({"b": 1, "a": [true, null]})),
        "{\"a\":[true,null],\"b\":1}"
    );
    let error = FieldError::new(ErrorType::Invalid, "spec", None, "must be immutable");
    assert_eq!(error.body(), "Invalid value: must be immutable");
}

#[test]
fn formats_follow_strfmt() {
    use super::format::is_valid;
    for (format, good, bad) in [
        (
            "date-time",
            "2024-05-01T10:00:00.123+02:00",
            "2024-05-01 10:00",
        ),
        ("date", "2024-02-29", "2023-02-29"),
        ("uuid", "2B0E5A4C6C4E4C0B9D3C2B3F1C1B5E7A", "2b0e5a4c"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "fe80::1", "10.0.0.1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
        ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
        ("hostname", "example.com", "-bad-.com"),
        ("byte", "aGVsbG8=", "hello!"),
        ("duration", "1h30m", "soon"),
        ("email", "Jo <jo@example.com>", "jo.example.com"),
        ("k8s-short-name", "my-name", "My-Name"),
        ("isbn13", "978-0321751041", "978-0321751042"),
    ] {
        assert!(is_valid(format, good), "{format}: {good}");
        assert!(!is_valid(format, bad), "{format}: {bad}");
    }
}

#[test]
fn stored_objects_are_pruned_and_defaulted_on_read() {
    let schema = rich_schema();
    let mut stored = widget(json!({"name": "abc", "gone": 1, "ports": [{"name": "a"}]}));
    coerce::prune(&mut stored, &schema.root, false);
    coerce::default(&mut stored, &schema.root);
    assert_eq!(
        stored["spec"],
        json!({"name": "abc", "mode": "a", "ports": [{"name": "a", "port": 80}]})
    );
}

#[cfg(feature = "cel")]
mod cel {
    use super::*;

    fn rules_schema() -> CompiledSchema {
        CompiledSchema::new(&json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.metadata.name.startsWith('w')", "message": "name must start with w"}
            ],
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [
                        {"rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
                         "message": "min must not exceed max", "fieldPath": ".min"},
                        {"rule": "self.names.all(n, n.size() <= 5) && size(self.names) <= 3",
                         "messageExpression": "'too many or too long names: ' + string(size(self.names))"},
                        {"rule": "!('forbidden' in self.names)", "reason": "FieldValueForbidden",
                         "message": "forbidden is forbidden"},
                        {"rule": "self.__namespace__ == '' || self.__namespace__.matches('^[a-z]+$')"},
                        {"rule": "!has(self.x__dash__y) || self.x__dash__y.endsWith('!')"}
                    ],
                    "properties": {
                        "min": {"type": "integer"},
                        "max": {"type": "integer"},
                        "names": {"type": "array", "items": {"type": "string"}},
                        "namespace": {"type": "string", "default": ""},
                        "x-y": {"type": "string"},
                        "cluster": {
                            "type": "string",
                            "x-kubernetes-validations": [
                                {"rule": "self == oldSelf", "message": "cluster is immutable"}
                            ]
                        },
                        "version": {
                            "type": "string",
                            "x-kubernetes-validations": [
                                {"rule": "!oldSelf.hasValue() || oldSelf.value() <= self",
                                 "optionalOldSelf": true, "message": "version may not go down"}
                            ]
                        },
                        "started": {
                            "type": "string", "format": "date-time",
                            "x-kubernetes-validations": [
                                {"rule": "self > timestamp('2020-01-01T00:00:00Z')"}
                            ]
                        },
                        "children": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string"},
                                    "size": {
                                        "type": "integer",
                                        "x-kubernetes-validations": [
                                            {"rule": "self >= oldSelf", "message": "children only grow"}
                                        ]
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }))
    }

    fn object(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn rules_report_their_messages_reasons_and_field_paths() {
        let schema = rules_schema();
        let (_, _, errors, _) = admit(
            &schema,
            object(
                "x",
                json!({"min": 5, "max": 1, "names": ["a", "toolong", "forbidden"],
                       "namespace": "Bad", "x-y": "no", "started": "2019-01-01T00:00:00Z"}),
            ),
            None,
        );
        assert_eq!(
            errors,
            vec![
                "<nil>: Invalid value: name must start with w",
                "spec.min: Invalid value: min must not exceed max",
                "spec: Invalid value: too many or too long names: 3",
                "spec: Forbidden: forbidden is forbidden",
                "spec: Invalid value: failed rule: self.__namespace__ == '' || self.__namespace__.matches('^[a-z]+$')",
                "spec: Invalid value: failed rule: !has(self.x__dash__y) || self.x__dash__y.endsWith('!')",
                "spec.started: Invalid value: \"2019-01-01T00:00:00Z\": failed rule: self > timestamp('2020-01-01T00:00:00Z')",
            ]
        );
    }

    #[test]
    fn transition_rules_run_on_updates_only() {
        let schema = rules_schema();
        let spec = json!({"names": [], "cluster": "a", "version": "2", "children": [{"name": "c", "size": 2}]});
        let (_, _, errors, _) = admit(&schema, object("w", spec.clone()), None);
        assert!(
            errors.is_empty(),
            "no old object, no transition rule: {errors:?}"
        );

        let old = object("w", spec.clone());
        let (_, _, errors, _) = admit(&schema, object("w", spec.clone()), Some(&old));
        assert!(errors.is_empty(), "nothing changed: {errors:?}");

        let changed = json!({"names": [], "cluster": "b", "version": "1",
                             "children": [{"name": "c", "size": 1}, {"name": "new", "size": 0}]});
        let (_, _, errors, _) = admit(&schema, object("w", changed), Some(&old));
        assert_eq!(
            errors,
            vec![
                "spec.children[0].size: Invalid value: 1: children only grow",
                "spec.cluster: Invalid value: \"b\": cluster is immutable",
                "spec.version: Invalid value: \"1\": version may not go down",
            ]
        );
    }

    #[test]
    fn optional_old_self_runs_on_create_too() {
        let schema = CompiledSchema::new(&json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"v": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() || self == 'first'", "optionalOldSelf": true}]
            }}}}
        }));
        let (_, _, errors, _) = admit(&schema, widget(json!({"v": "other"})), None);
        assert_eq!(
            errors,
            vec![
                "spec.v: Invalid value: \"other\": failed rule: oldSelf.hasValue() || self == 'first'"
            ]
        );
    }

    #[test]
    fn failures_on_unchanged_values_only_warn() {
        let schema = rules_schema();
        let old = object(
            "x",
            json!({"min": 5, "max": 1, "names": [], "namespace": ""}),
        );
        let (_, _, errors, warnings) = admit(
            &schema,
            object("x", json!({"min": 5, "max": 1, "names": []})),
            Some(&old),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            warnings,
            vec![
                "<nil>: Invalid value: name must start with w",
                "spec.min: Invalid value: min must not exceed max",
            ]
        );
    }

    #[test]
    fn schema_errors_keep_rules_from_running() {
        let schema = rules_schema();
        let (_, _, errors, _) = admit(&schema, object("x", json!({"min": "one"})), None);
        assert_eq!(
            errors,
            vec![
                "spec.min: Invalid value: \"string\": spec.min in body must be of type integer: \"string\"",
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ]
        );
    }

    /// Rules see only the fields they read by name (the conversion for CEL skips the others),
    /// unless one of them uses the whole value.
    #[test]
    fn rules_see_the_fields_they_read_and_whole_values_when_they_use_them() {
        let by_name = CompiledSchema::new(&json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.a + self.b == 3", "messageExpression": "'c is ' + self.c"}
                ],
                "properties": {
                    "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "string"},
                    "big": {"type": "string"}
                }
            }}
        }));
        let (_, _, errors, _) = admit(
            &by_name,
            widget(json!({"a": 1, "b": 2, "c": "x", "big": "unread"})),
            None,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let (_, _, errors, _) = admit(&by_name, widget(json!({"a": 1, "b": 1, "c": "x"})), None);
        assert_eq!(errors, vec!["spec: Invalid value: c is x"]);

        let whole = CompiledSchema::new(&json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.a == 1"},
                    {"rule": "size(self) == 3", "message": "three fields"},
                    {"rule": "self.all(k, k != 'd')", "message": "no d"}
                ],
                "properties": {
                    "a": {"type": "integer"}, "b": {"type": "integer"}, "d": {"type": "string"}
                },
                "additionalProperties": false
            }}
        }));
        let (_, _, errors, _) = admit(&whole, widget(json!({"a": 1, "b": 2})), None);
        assert_eq!(errors, vec!["spec: Invalid value: three fields"]);
        let (_, _, errors, _) = admit(&whole, widget(json!({"a": 1, "b": 2, "d": "x"})), None);
        assert_eq!(errors, vec!["spec: Invalid value: no d"]);
    }

    #[test]
    fn size_of_a_string_counts_code_points_as_kubernetes_does() {
        let schema = CompiledSchema::new(&json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.name.size() <= 4", "message": "name too long"},
                    {"rule": "size(self.name) == self.expected", "message": "size differs"}
                ],
                "properties": {"name": {"type": "string"}, "expected": {"type": "integer"}}
            }}
        }));
        // Four code points, eight UTF-8 bytes.
        let (_, _, errors, _) = admit(
            &schema,
            widget(json!({"name": "élan", "expected": 4})),
            None,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let (_, _, errors, _) = admit(
            &schema,
            widget(json!({"name": "ñandú", "expected": 5})),
            None,
        );
        assert_eq!(errors, vec!["spec: Invalid value: name too long"]);
    }

    #[test]
    fn evaluation_errors_name_the_rule() {
        let schema = CompiledSchema::new(&json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.missing == 1"}, {"rule": "self.("}],
                "properties": {"a": {"type": "string"}}
            }}
        }));
        let (_, _, errors, _) = admit(&schema, widget(json!({"a": "b"})), None);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(
            errors[0],
            "spec: Invalid value: \"object\": no such key: missing evaluating rule: self.missing == 1"
        );
        assert!(
            errors[1].starts_with("spec: Invalid value: \"object\": rule compile error: "),
            "{errors:?}"
        );
    }
}

/// Pruning walks a map's keys beside the schema's properties, which needs JSON maps to
/// iterate in ascending key order (serde_json without `preserve_order`).
#[test]
fn json_maps_iterate_in_key_order() {
    let map = json!({"b": 1, "a": 2, "ab": 3, "B": 4, "": 5});
    let keys: Vec<&str> = map
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["", "B", "a", "ab", "b"]);
}

/// One walk prunes unknown fields and drops disallowed nulls, everywhere the two did apart:
/// declared properties, additional properties, list items, a resource's type fields, and
/// what `x-kubernetes-preserve-unknown-fields` keeps.
#[test]
fn pruning_drops_unknown_fields_and_disallowed_nulls_in_one_walk() {
    let schema = CompiledSchema::new(&json!({
        "type": "object",
        "properties": {
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "a": {"type": "string"},
                    "b": {"type": "string", "nullable": true},
                    "c": {"type": "string", "default": "x"},
                    "m": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "l": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"k": {"type": "string"}, "n": {"type": "integer"}}
                    }},
                    "free": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"p": {"type": "string"}, "q": {
                            "type": "object", "properties": {"r": {"type": "string"}}
                        }}
                    },
                    "inner": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "properties": {"apiVersion": {"type": "string"}, "z": {"type": "string"}}
                    }
                }
            }
        }
    }));
    let mut object = widget(json!({
        "a": null, "b": null, "c": null, "zz": 1, "0": null,
        "m": {"one": 1, "none": null},
        "l": [{"k": null, "n": 1, "extra": true}, null, {"k": "v"}],
        "free": {"p": null, "kept": null, "q": {"r": null, "s": 1}, "other": {"t": null}},
        "inner": {"apiVersion": null, "kind": "K", "metadata": {"name": "n"}, "z": null, "y": 2}
    }));
    object["metadata"]["x"] = Value::Null;
    let unknown = coerce::prune(&mut object, &schema.root, true);
    assert_eq!(
        unknown,
        [
            "spec.0",
            "spec.free.q.s",
            "spec.inner.y",
            "spec.l[0].extra",
            "spec.zz"
        ]
    );
    assert_eq!(
        object["spec"],
        json!({
            "b": null, "c": null,
            "m": {"one": 1},
            "l": [{"n": 1}, null, {"k": "v"}],
            "free": {"kept": null, "q": {}, "other": {"t": null}},
            "inner": {"kind": "K", "metadata": {"name": "n"}}
        })
    );
    assert_eq!(object["metadata"], json!({"name": "w", "x": null}));
}
