use chrono::{TimeDelta, TimeZone};
use serde_json::json;

use super::*;
use crate::registry::{PrinterColumn, Registry, VersionInfo};

fn seconds(s: i64) -> TimeDelta {
    TimeDelta::seconds(s)
}

#[test]
fn human_durations_read_like_kubectl() {
    let minute = 60;
    let hour = 60 * minute;
    let day = 24 * hour;
    let year = 365 * day;
    for (duration, expected) in [
        (seconds(-5), "<invalid>"),
        (seconds(-1), "0s"),
        (seconds(0), "0s"),
        (seconds(59), "59s"),
        (seconds(119), "119s"),
        (seconds(2 * minute), "2m"),
        (seconds(5 * minute + 7), "5m7s"),
        (seconds(9 * minute + 59), "9m59s"),
        (seconds(10 * minute + 30), "10m"),
        (seconds(179 * minute), "179m"),
        (seconds(3 * hour), "3h"),
        (seconds(3 * hour + 2 * minute), "3h2m"),
        (seconds(8 * hour + 59 * minute), "8h"),
        (seconds(47 * hour), "47h"),
        (seconds(2 * day), "2d"),
        (seconds(2 * day + 5 * hour), "2d5h"),
        (seconds(8 * day + 5 * hour), "8d"),
        (seconds(729 * day), "729d"),
        (seconds(2 * year), "2y"),
        (seconds(2 * year + 10 * day), "2y10d"),
        (seconds(9 * year), "9y"),
    ] {
        assert_eq!(human_duration(duration), expected, "{duration:?}");
    }
}

#[test]
fn jsonpath_subset() {
    let object = json!({
        "metadata": {"name": "w1", "labels": {"app.kubernetes.io/name": "demo"}},
        "spec": {"replicas": 3, "ports": [{"port": 80}, {"port": 443}]},
        "status": {"conditions": [
            {"type": "Synced", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "Waiting"},
        ]},
    });
    let first = |path: &str| Path::parse(path).unwrap().first(&object).cloned();
    assert_eq!(first(".spec.replicas"), Some(json!(3)));
    assert_eq!(first("{.spec.replicas}"), Some(json!(3)));
    assert_eq!(first("spec.replicas"), Some(json!(3)));
    assert_eq!(first(".spec.ports[1].port"), Some(json!(443)));
    assert_eq!(first(".spec.ports[-1].port"), Some(json!(443)));
    assert_eq!(first(".spec.ports[*].port"), Some(json!(80)));
    assert_eq!(
        first(r#".status.conditions[?(@.type=="Ready")].status"#),
        Some(json!("False"))
    );
    assert_eq!(
        first(".status.conditions[?(@.type == 'Ready')].reason"),
        Some(json!("Waiting"))
    );
    assert_eq!(
        first(r#".status.conditions[?(@.type!="Synced")].type"#),
        Some(json!("Ready"))
    );
    assert_eq!(
        first(".status.conditions[?(@.reason)].type"),
        Some(json!("Ready"))
    );
    assert_eq!(
        first(r".metadata.labels.app\.kubernetes\.io/name"),
        Some(json!("demo"))
    );
    assert_eq!(
        first(".metadata.labels['app.kubernetes.io/name']"),
        Some(json!("demo"))
    );
    assert_eq!(first(".spec.missing"), None);
    assert_eq!(first(".spec.ports[7].port"), None);
    assert!(Path::parse("..spec").is_err());
    assert!(Path::parse(".spec[").is_err());
}

fn widget_resource(columns: Vec<PrinterColumn>) -> Arc<ResourceInfo> {
    let mut resource = crate::crd::resource_info(&json!({
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true}],
        }
    }))
    .unwrap();
    resource.versions = vec![VersionInfo {
        printer_columns: columns,
        ..resource.versions[0].clone()
    }];
    Arc::new(resource)
}

fn column(name: &str, type_: &str, json_path: &str, priority: i64) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        type_: type_.into(),
        format: String::new(),
        description: String::new(),
        priority,
        json_path: json_path.into(),
    }
}

#[test]
fn custom_resources_print_their_columns() {
    let now = Utc.with_ymd_and_hms(2024, 1, 1, 12, 0, 0).unwrap();
    let printer = Printer::for_resource(
        &widget_resource(vec![
            column("Color", "string", ".spec.color", 0),
            column("Replicas", "integer", ".spec.replicas", 0),
            column(
                "Ready",
                "string",
                r#".status.conditions[?(@.type=="Ready")].status"#,
                0,
            ),
            column("Seen", "date", ".status.seen", 1),
            column("Ratio", "number", ".spec.ratio", 1),
            column("On", "boolean", ".spec.on", 1),
        ]),
        "v1",
    );
    let definitions = printer.column_definitions();
    let names: Vec<_> = definitions
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Name", "Color", "Replicas", "Ready", "Seen", "Ratio", "On"]
    );
    assert_eq!(definitions[0]["format"], "name");
    assert_eq!(definitions[4]["priority"], 1);
    let object = json!({
        "metadata": {"name": "w1", "creationTimestamp": "2024-01-01T11:00:00Z"},
        "spec": {"color": "red", "replicas": 3.0, "ratio": 2, "on": "yes"},
        "status": {"seen": "2024-01-01T11:55:00Z", "conditions": [{"type": "Ready", "status": "True"}]},
    });
    assert_eq!(
        printer.cells(&object, now),
        vec![
            json!("w1"),
            json!("red"),
            json!(3),
            json!("True"),
            json!("5m"),
            json!(2.0),
            Value::Null
        ]
    );
    let bare = json!({"metadata": {"name": "w2"}, "status": {"seen": "yesterday"}});
    assert_eq!(
        printer.cells(&bare, now),
        vec![
            json!("w2"),
            Value::Null,
            Value::Null,
            Value::Null,
            json!("<invalid>"),
            Value::Null,
            Value::Null
        ]
    );
}

#[test]
fn custom_resources_without_columns_print_age() {
    let now = Utc.with_ymd_and_hms(2024, 1, 3, 0, 0, 0).unwrap();
    let printer = Printer::for_resource(&widget_resource(Vec::new()), "v1");
    let definitions = printer.column_definitions();
    assert_eq!(definitions[1]["name"], "Age");
    assert_eq!(definitions[1]["type"], "date");
    let object = json!({"metadata": {"name": "w1", "creationTimestamp": "2024-01-01T00:00:00Z"}});
    assert_eq!(printer.cells(&object, now), vec![json!("w1"), json!("2d")]);
}

#[test]
fn builtin_kinds_print_their_usual_columns() {
    let registry = Registry::with_builtins();
    let now = Utc.with_ymd_and_hms(2024, 1, 1, 0, 10, 0).unwrap();
    let created = "2024-01-01T00:00:00Z";
    let printer = |group: &str, plural: &str| {
        Printer::for_resource(&registry.get(group, plural).unwrap(), "v1")
    };

    let configmap = json!({"metadata": {"name": "c", "creationTimestamp": created},
        "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(
        printer("", "configmaps").cells(&configmap, now),
        vec![json!("c"), json!(3), json!("10m")]
    );
    let secret = json!({"metadata": {"name": "s", "creationTimestamp": created},
        "type": "Opaque", "data": {"a": "MQ=="}});
    assert_eq!(
        printer("", "secrets").cells(&secret, now),
        vec![json!("s"), json!("Opaque"), json!(1), json!("10m")]
    );
    let namespace = json!({"metadata": {"name": "n"}, "status": {"phase": "Active"}});
    assert_eq!(
        printer("", "namespaces").cells(&namespace, now),
        vec![json!("n"), json!("Active"), json!("<unknown>")]
    );
    let lease = json!({"metadata": {"name": "l", "creationTimestamp": created},
        "spec": {"holderIdentity": "me"}});
    assert_eq!(
        printer("coordination.k8s.io", "leases").cells(&lease, now),
        vec![json!("l"), json!("me"), json!("10m")]
    );
    let crd = json!({"metadata": {"name": "widgets.example.com", "creationTimestamp": created}});
    assert_eq!(
        printer("apiextensions.k8s.io", "customresourcedefinitions").cells(&crd, now),
        vec![json!("widgets.example.com"), json!(created)]
    );
}

#[test]
fn events_print_alike_in_both_apis() {
    let registry = Registry::with_builtins();
    let now = Utc.with_ymd_and_hms(2024, 1, 1, 1, 0, 0).unwrap();
    let core = json!({
        "metadata": {"name": "w1.abc"},
        "involvedObject": {"kind": "Widget", "name": "w1", "fieldPath": "spec"},
        "reason": "Created", "message": "created it ", "type": "Normal",
        "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:55:00Z",
        "count": 4, "source": {"component": "widget-controller"},
        "reportingInstance": "pod-1",
    });
    let expected = vec![
        json!("5m"),
        json!("Normal"),
        json!("Created"),
        json!("widget/w1"),
        json!("spec"),
        json!("widget-controller, pod-1"),
        json!("created it"),
        json!("60m"),
        json!(4),
        json!("w1.abc"),
    ];
    let core_printer = Printer::for_resource(&registry.get("", "events").unwrap(), "v1");
    assert_eq!(
        core_printer.column_definitions().as_array().unwrap().len(),
        expected.len()
    );
    assert_eq!(core_printer.cells(&core, now), expected);

    let mut served = core.clone();
    let events_v1 = registry.get("events.k8s.io", "events").unwrap();
    crate::conversion::from_storage(&events_v1, &mut served);
    let printer = Printer::for_resource(&events_v1, "v1");
    assert_eq!(printer.cells(&served, now), expected);

    let single = json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Node"},
        "eventTime": "2024-01-01T00:59:30.000000Z", "reportingComponent": "kubelet"});
    let cells = core_printer.cells(&single, now);
    assert_eq!(cells[0], json!("30s"));
    assert_eq!(cells[3], json!("node"));
    assert_eq!(cells[5], json!("kubelet"));
    assert_eq!(cells[8], json!(1));
}
