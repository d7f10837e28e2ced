use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use super::*;

const KEY_NAME_MESSAGE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_MESSAGE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(selector: &str) -> LabelSelector {
    LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector:?} should parse, got: {e}"))
}

fn parse_error(selector: &str) -> String {
    match LabelSelector::parse(selector) {
        Ok(parsed) => panic!("{selector:?} should not parse, got {parsed:?}"),
        Err(error) => error.to_string(),
    }
}

fn field_parse_error(selector: &str) -> String {
    match FieldSelector::parse(selector) {
        Ok(parsed) => panic!("{selector:?} should not parse, got {parsed:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn empty_and_blank_selectors_select_everything() {
    for selector in ["", "   ", "\t\n"] {
        let parsed = parse(selector);
        assert!(parsed.is_everything(), "{selector:?}");
        assert!(parsed.matches(&labels(&[])));
        assert!(parsed.matches(&labels(&[("a", "b")])));
        assert_eq!(parsed.to_string(), "");
    }
}

#[test]
fn parses_every_operator() {
    let cases: &[(&str, &str, Operator, &[&str])] = &[
        ("x=a", "x", Operator::Equals, &["a"]),
        ("x==a", "x", Operator::DoubleEquals, &["a"]),
        ("x!=a", "x", Operator::NotEquals, &["a"]),
        ("x in (a,b)", "x", Operator::In, &["a", "b"]),
        ("x notin (a,b)", "x", Operator::NotIn, &["a", "b"]),
        ("x", "x", Operator::Exists, &[]),
        ("!x", "x", Operator::DoesNotExist, &[]),
        ("x>1", "x", Operator::GreaterThan, &["1"]),
        ("x<5", "x", Operator::LessThan, &["5"]),
    ];
    for (selector, key, operator, values) in cases {
        let parsed = parse(selector);
        let [requirement] = parsed.requirements() else {
            panic!("{selector:?} should have one requirement");
        };
        assert_eq!(requirement.key(), *key, "{selector:?}");
        assert_eq!(requirement.operator(), *operator, "{selector:?}");
        assert_eq!(requirement.values(), *values, "{selector:?}");
    }
}

#[test]
fn tolerates_whitespace_between_tokens() {
    let parsed = parse("  app = web ,\ttier!=db\n, env in ( prod , dev ) , ! canary ");
    assert_eq!(
        parsed.to_string(),
        "app=web,!canary,env in (dev,prod),tier!=db"
    );
}

#[test]
fn requirements_are_sorted_by_key_and_values_are_sets() {
    let parsed = parse("z=1,a in (c,b,c),m");
    assert_eq!(parsed.to_string(), "a in (b,c),m,z=1");
    assert_eq!(parsed.requirements()[0].values(), ["b", "c"]);
}

#[test]
fn in_and_notin_are_plain_words_outside_the_operator_position() {
    let parsed = parse("in in (in,notin),notin notin (in)");
    assert_eq!(parsed.to_string(), "in in (in,notin),notin notin (in)");
    assert!(parsed.matches(&labels(&[("in", "notin")])));
    assert!(!parsed.matches(&labels(&[("in", "x")])));
}

#[test]
fn empty_values_are_allowed() {
    assert_eq!(parse("x=").requirements()[0].values(), [""]);
    assert_eq!(parse("x=,y").requirements()[0].values(), [""]);
    assert_eq!(parse("x in ()").requirements()[0].values(), [""]);
    assert_eq!(parse("x in (,a)").requirements()[0].values(), ["", "a"]);
    assert_eq!(parse("x in (a,)").requirements()[0].values(), ["", "a"]);
    assert_eq!(
        parse("x in (a,,b)").requirements()[0].values(),
        ["", "a", "b"]
    );
    assert_eq!(parse("x in (,)").requirements()[0].values(), [""]);
    assert!(parse("x=").matches(&labels(&[("x", "")])));
    assert!(!parse("x=").matches(&labels(&[])));
}

#[test]
fn prefixed_keys_parse() {
    let parsed = parse("cluster.x-k8s.io/cluster-name=c1,!example.com/skip");
    assert_eq!(
        parsed.to_string(),
        "cluster.x-k8s.io/cluster-name=c1,!example.com/skip"
    );
}

#[test]
fn matching_follows_apimachinery() {
    let object_labels = labels(&[("app", "web"), ("tier", "front"), ("replicas", "3")]);
    let cases = [
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("missing=x", false),
        ("app!=db", true),
        ("app!=web", false),
        ("missing!=x", true),
        ("app in (db,web)", true),
        ("app in (db)", false),
        ("missing in (x)", false),
        ("app notin (db)", true),
        ("app notin (web)", false),
        ("missing notin (x)", true),
        ("app", true),
        ("missing", false),
        ("!app", false),
        ("!missing", true),
        ("replicas>2", true),
        ("replicas>3", false),
        ("replicas<4", true),
        ("replicas<3", false),
        ("app>1", false),
        ("missing<1", false),
        ("app=web,tier=front", true),
        ("app=web,tier=back", false),
    ];
    for (selector, expected) in cases {
        assert_eq!(
            parse(selector).matches(&object_labels),
            expected,
            "{selector}"
        );
    }
}

#[test]
fn matches_json_label_maps_and_objects() {
    let object = json!({"metadata": {"name": "a", "labels": {"app": "web"}}});
    assert!(parse("app=web").matches_object(&object));
    assert!(!parse("app=db").matches_object(&object));
    let unlabeled = json!({"metadata": {"name": "b"}});
    assert!(parse("!app").matches_object(&unlabeled));
    assert!(!parse("app").matches_object(&unlabeled));
    assert!(parse("").matches_object(&unlabeled));

    let Some(Value::Object(map)) = object.pointer("/metadata/labels").cloned() else {
        panic!("labels should be an object");
    };
    assert!(parse("app=web").matches(&map));
    // A label whose value is not a string counts as absent.
    let odd: Map<String, Value> = serde_json::from_value(json!({"app": 1})).unwrap_or_default();
    assert!(!parse("app").matches(&odd));
}

#[test]
fn matches_hash_maps() {
    let mut hashed = HashMap::new();
    hashed.insert("app".to_string(), "web".to_string());
    assert!(parse("app in (web)").matches(&hashed));
}

#[test]
fn syntax_errors_carry_apimachinery_messages() {
    let cases = [
        (
            ",",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        ("x=a,", "found '', expected: identifier after ','"),
        ("x=a,,y", "found ',', expected: identifier after ','"),
        ("x=a y", "found 'y', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        (
            ")",
            "found ')', expected: !, identifier, or 'end of string'",
        ),
        (
            "x y",
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "x!",
            "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier",
        ),
        (
            "!=a",
            "found '!=', expected: !, identifier, or 'end of string'",
        ),
        (
            "!!a",
            "unable to parse requirement: found '!', expected: identifier",
        ),
        (
            "x in",
            "unable to parse requirement: found '' expected: '('",
        ),
        (
            "x in a",
            "unable to parse requirement: found 'a' expected: '('",
        ),
        (
            "x in (",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
        ),
        (
            "x in (a",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "x in (a b)",
            "unable to parse requirement: found 'b', expected: ',' or ')'",
        ),
        (
            "x in (a,=)",
            "unable to parse requirement: found '=', expected: ',', or identifier",
        ),
        (
            "x=(a)",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        (
            "x==!",
            "unable to parse requirement: found '!', expected: identifier",
        ),
    ];
    for (selector, message) in cases {
        assert_eq!(parse_error(selector), message, "{selector:?}");
    }
}

#[test]
fn invalid_keys_are_reported_with_a_nil_path() {
    assert_eq!(
        parse_error("a@b=c"),
        format!("unable to parse requirement: <nil>: Invalid value: \"a@b\": {KEY_NAME_MESSAGE}")
    );
    assert_eq!(
        parse_error("a/b/c"),
        "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    );
    assert_eq!(
        parse_error(&format!("{}=a", "k".repeat(64))),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"{}\": name part must be no more than 63 characters",
            "k".repeat(64)
        )
    );
    // Several problems with one key are joined by "; ".
    assert_eq!(
        parse_error("/=a"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"/\": prefix part must be non-empty; name part must be non-empty; {KEY_NAME_MESSAGE}"
        )
    );
}

#[test]
fn invalid_values_are_reported_by_index_and_key() {
    assert_eq!(
        parse_error("app=a@b"),
        format!(
            "unable to parse requirement: values[0][app]: Invalid value: \"a@b\": {VALUE_MESSAGE}"
        )
    );
    // The index counts in sorted order; several errors are aggregated in brackets.
    assert_eq!(
        parse_error("app in (z@, ok, -a)"),
        format!(
            "unable to parse requirement: [values[0][app]: Invalid value: \"-a\": {VALUE_MESSAGE}, values[2][app]: Invalid value: \"z@\": {VALUE_MESSAGE}]"
        )
    );
    assert_eq!(
        parse_error(&format!("app={}", "v".repeat(64))),
        format!(
            "unable to parse requirement: values[0][app]: Invalid value: \"{}\": must be no more than 63 characters",
            "v".repeat(64)
        )
    );
}

#[test]
fn comparison_values_must_be_integers() {
    assert_eq!(
        parse_error("x>abc"),
        "unable to parse requirement: values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
    assert_eq!(
        parse_error("x<"),
        "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

#[test]
fn negative_comparison_values_fail_label_value_syntax() {
    // The value must be an integer and a label value at once, so negative bounds are out.
    assert_eq!(
        parse_error("x<-1"),
        format!(
            "unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_MESSAGE}"
        )
    );
}

#[test]
fn requirement_new_validates_like_new_requirement() {
    assert_eq!(
        Requirement::new("x", Operator::In, vec![])
            .expect_err("empty in")
            .to_string(),
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        Requirement::new("x", Operator::Exists, vec!["a".into()])
            .expect_err("exists with values")
            .to_string(),
        "values: Invalid value: [\"a\"]: values set must be empty for exists and does not exist"
    );
    assert_eq!(
        Requirement::new("x", Operator::Equals, vec!["a".into(), "b".into()])
            .expect_err("two values for =")
            .to_string(),
        "values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single value"
    );
    assert_eq!(
        Requirement::new("x", Operator::GreaterThan, vec!["1".into(), "2".into()])
            .expect_err("two values for gt")
            .to_string(),
        "values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required"
    );
    assert_eq!(
        Requirement::new("bad key", Operator::Exists, vec![])
            .expect_err("bad key")
            .to_string(),
        format!("key: Invalid value: \"bad key\": {KEY_NAME_MESSAGE}")
    );
    assert_eq!(
        Requirement::new("bad key", Operator::NotIn, vec![])
            .expect_err("bad key and no values")
            .to_string(),
        format!(
            "[key: Invalid value: \"bad key\": {KEY_NAME_MESSAGE}, values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty]"
        )
    );
}

#[test]
fn display_round_trips() {
    for selector in [
        "a=b",
        "a==b",
        "a!=b",
        "a in (b,c)",
        "a notin (b)",
        "a",
        "!a",
        "a>1",
        "a<1",
        "!a,b in (c,d),e=f",
    ] {
        let printed = parse(selector).to_string();
        assert_eq!(printed, selector);
        assert_eq!(parse(&printed), parse(selector));
    }
    let via_from_str: LabelSelector = "b=1,a=2".parse().unwrap_or_default();
    assert_eq!(via_from_str.to_string(), "a=2,b=1");
}

#[test]
fn display_sorts_unsorted_values_given_by_hand() {
    let requirement = Requirement::new("a", Operator::In, vec!["z".into(), "b".into()])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(requirement.to_string(), "a in (b,z)");
    assert_eq!(requirement.values(), ["z", "b"]);
}

#[test]
fn object_form_converts_match_labels_and_expressions() {
    let selector = LabelSelector::from_label_selector_json(&json!({
        "matchLabels": {"app": "web", "cluster.x-k8s.io/cluster-name": "c1"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "edge"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "owner", "operator": "Exists"},
            {"key": "skip", "operator": "DoesNotExist", "values": []}
        ]
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        selector.to_string(),
        "app=web,cluster.x-k8s.io/cluster-name=c1,env notin (dev),owner,!skip,tier in (edge,front)"
    );
    let matching = labels(&[
        ("app", "web"),
        ("cluster.x-k8s.io/cluster-name", "c1"),
        ("tier", "edge"),
        ("owner", "me"),
    ]);
    assert!(selector.matches(&matching));
    let mut with_skip = matching.clone();
    with_skip.insert("skip".into(), "yes".into());
    assert!(!selector.matches(&with_skip));
}

#[test]
fn object_form_null_selects_nothing_and_empty_selects_everything() {
    let nothing =
        LabelSelector::from_label_selector_json(&Value::Null).unwrap_or_else(|e| panic!("{e}"));
    assert!(nothing.is_nothing());
    assert!(!nothing.matches(&labels(&[])));
    assert_eq!(nothing.to_string(), "");

    for empty in [
        json!({}),
        json!({"matchLabels": {}, "matchExpressions": []}),
        json!({"matchLabels": null}),
    ] {
        let everything =
            LabelSelector::from_label_selector_json(&empty).unwrap_or_else(|e| panic!("{e}"));
        assert!(everything.is_everything(), "{empty}");
        assert!(everything.matches(&labels(&[("a", "b")])));
    }
}

#[test]
fn object_form_errors() {
    let error = |value: Value| {
        LabelSelector::from_label_selector_json(&value)
            .expect_err("should be rejected")
            .to_string()
    };
    assert_eq!(
        error(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})),
        "\"Gt\" is not a valid label selector operator"
    );
    assert_eq!(
        error(json!({"matchExpressions": [{"key": "a"}]})),
        "\"\" is not a valid label selector operator"
    );
    assert_eq!(
        error(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        error(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})),
        "values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist"
    );
    assert_eq!(
        error(json!({"matchLabels": {"app": "a b"}})),
        format!("values[0][app]: Invalid value: \"a b\": {VALUE_MESSAGE}")
    );
    assert_eq!(
        error(json!({"matchLabels": {"a b": "x"}})),
        format!("key: Invalid value: \"a b\": {KEY_NAME_MESSAGE}")
    );
    assert_eq!(
        error(json!("app=web")),
        "invalid label selector: labelSelector must be an object"
    );
    assert_eq!(
        error(json!({"matchLabels": {"app": 1}})),
        "invalid label selector: matchLabels[app] must be a string"
    );
    assert_eq!(
        error(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]})),
        "invalid label selector: matchExpressions[0].values must be an array of strings"
    );
    assert_eq!(
        error(json!({"matchExpressions": {}})),
        "invalid label selector: matchExpressions must be an array"
    );
}

#[test]
fn from_labels_requires_each_pair() {
    let selector = LabelSelector::from_labels([("b", "2"), ("a", "1")]);
    assert_eq!(selector.to_string(), "a=1,b=2");
    assert!(selector.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "3")])));
    assert!(!selector.matches(&labels(&[("a", "1")])));
    assert!(LabelSelector::from_labels(Vec::<(String, String)>::new()).is_everything());
}

#[test]
fn requires_exact_match_finds_single_valued_equality() {
    let selector = parse("a=1,b in (2),c in (3,4),d!=5,e");
    assert_eq!(selector.requires_exact_match("a"), Some("1"));
    assert_eq!(selector.requires_exact_match("b"), Some("2"));
    assert_eq!(selector.requires_exact_match("c"), None);
    assert_eq!(selector.requires_exact_match("d"), None);
    assert_eq!(selector.requires_exact_match("e"), None);
    assert_eq!(selector.requires_exact_match("z"), None);
}

#[test]
fn go_quote_escapes_like_go() {
    assert_eq!(go_quote("plain"), "\"plain\"");
    assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    assert_eq!(go_quote("tab\tnl\n\u{1}"), "\"tab\\tnl\\n\\x01\"");
    assert_eq!(go_quote("é"), "\"é\"");
    assert_eq!(go_quote("\u{85}"), "\"\\u0085\"");
    assert_eq!(go_quote("a\u{a0}b c"), "\"a\\u00a0b c\"");
}

#[test]
fn field_selector_parses_terms() {
    let selector = FieldSelector::parse("metadata.name=a,spec.nodeName!=n1,status.phase==Running")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        selector.requirements(),
        [
            FieldRequirement {
                field: "metadata.name".into(),
                operator: FieldOperator::Equals,
                value: "a".into()
            },
            FieldRequirement {
                field: "spec.nodeName".into(),
                operator: FieldOperator::NotEquals,
                value: "n1".into()
            },
            FieldRequirement {
                field: "status.phase".into(),
                operator: FieldOperator::Equals,
                value: "Running".into()
            },
        ]
    );
    assert_eq!(
        selector.fields().collect::<Vec<_>>(),
        ["metadata.name", "spec.nodeName", "status.phase"]
    );
    assert_eq!(
        selector.to_string(),
        "metadata.name=a,spec.nodeName!=n1,status.phase=Running"
    );
}

#[test]
fn field_selector_empty_forms_select_everything() {
    for selector in ["", ",", ",,", "=", "!=", "=,metadata.name=x"] {
        let parsed = FieldSelector::parse(selector).unwrap_or_else(|e| panic!("{e}"));
        if selector.contains("metadata") {
            assert_eq!(parsed.requirements().len(), 1);
        } else {
            assert!(parsed.is_everything(), "{selector:?}");
        }
    }
}

#[test]
fn field_selector_sorts_terms() {
    let selector = FieldSelector::parse("z=1,a=2").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(selector.to_string(), "a=2,z=1");
}

#[test]
fn field_selector_keeps_whitespace() {
    let selector = FieldSelector::parse("metadata.name = a").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(selector.fields().collect::<Vec<_>>(), ["metadata.name "]);
    assert_eq!(selector.requirements()[0].value, " a");
}

#[test]
fn field_selector_unescapes_values() {
    let selector = FieldSelector::parse(r"metadata.name=a\,b\=c\\d,spec.x=y")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(selector.requirements()[0].value, r"a,b=c\d");
    assert_eq!(selector.requirements().len(), 2);
    assert_eq!(selector.to_string(), r"metadata.name=a\,b\=c\\d,spec.x=y");
    assert_eq!(escape_field_value(r"a,b=c\d"), r"a\,b\=c\\d");
}

#[test]
fn field_selector_splits_at_the_first_operator() {
    let selector = FieldSelector::parse("a!=b").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        selector.requirements()[0].operator,
        FieldOperator::NotEquals
    );
    let selector = FieldSelector::parse("a==b").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(selector.requirements()[0].value, "b");
    // The field may be empty; the server then rejects the unsupported field "".
    let selector = FieldSelector::parse("=b").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(selector.fields().collect::<Vec<_>>(), [""]);
}

#[test]
fn field_selector_errors_carry_apimachinery_messages() {
    assert_eq!(
        field_parse_error("metadata.name"),
        "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
    );
    assert_eq!(
        field_parse_error("a=b,justfield"),
        "invalid selector: 'a=b,justfield'; can't understand 'justfield'"
    );
    assert_eq!(
        field_parse_error("a=b=c"),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        field_parse_error("a==b=c"),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        field_parse_error(r"a=b\x"),
        r"invalid field selector: invalid escape sequence: \x"
    );
    assert_eq!(
        field_parse_error(r"a=b\"),
        r"invalid field selector: invalid escape sequence: \"
    );
}

#[test]
fn field_selector_matching_treats_absent_fields_as_empty() {
    let selector =
        FieldSelector::parse("metadata.name=a,spec.nodeName!=n1").unwrap_or_else(|e| panic!("{e}"));
    let object = |name: &'static str, node: Option<&'static str>| {
        move |field: &str| match field {
            "metadata.name" => Some(name),
            "spec.nodeName" => node,
            _ => None,
        }
    };
    assert!(selector.matches(object("a", Some("n2"))));
    assert!(selector.matches(object("a", None)));
    assert!(!selector.matches(object("a", Some("n1"))));
    assert!(!selector.matches(object("b", None)));

    let empty_value = FieldSelector::parse("spec.nodeName=").unwrap_or_else(|e| panic!("{e}"));
    assert!(empty_value.matches(|_: &str| None::<String>));
    assert!(empty_value.matches(|_: &str| Some(String::new())));
    assert!(!empty_value.matches(|_: &str| Some("n1".to_string())));
    assert!(FieldSelector::everything().matches(|_: &str| None::<&str>));
}

#[test]
fn field_selector_finds_requirements_for_fast_paths() {
    let selector = FieldSelector::parse("metadata.name!=x,metadata.name=a,metadata.namespace=ns")
        .unwrap_or_else(|e| panic!("{e}"));
    // Terms are sorted ('!' sorts before '='), so the `!=` term comes first.
    assert_eq!(
        selector
            .requirement_for("metadata.name")
            .map(|r| (r.operator, r.value.as_str())),
        Some((FieldOperator::NotEquals, "x"))
    );
    assert_eq!(selector.requires_exact_match("metadata.name"), Some("a"));
    assert_eq!(
        selector.requires_exact_match("metadata.namespace"),
        Some("ns")
    );
    assert_eq!(selector.requires_exact_match("spec.x"), None);
    let negative = FieldSelector::parse("metadata.name!=x").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(negative.requires_exact_match("metadata.name"), None);
    assert!(negative.requirement_for("metadata.name").is_some());
}
