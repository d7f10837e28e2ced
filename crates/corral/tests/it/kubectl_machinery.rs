//! kubectl driving the API machinery of issue 3: OpenAPI-backed `apply` (client-side and
//! server-side), Table output with printer columns, describe, edit, scale, wait, cascading
//! delete, explain, discovery, and schema errors at the door.
//!
//! Everything runs against a Widget CRD with a structural schema (defaults, an enum, a CEL
//! rule, printer columns of which one has priority 1, status and scale subresources) and
//! against ConfigMaps. Manifests go through kubectl's default client-side validation
//! (`--validate=strict`), which reads the server's `/openapi/v3`.
//!
//! Each test gives kubectl its own `--cache-dir`, so that discovery cached by one test (or by
//! the developer's own kubectl) never answers for another server.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output, Stdio};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::support::{ServerProcess, TestEnv, tool_available};

backend_tests!(
    apply_client_side_three_way_merge,
    apply_server_side_conflicts,
    get_printer_columns_and_output_formats,
    describe_custom_resource_and_configmap,
    edit_through_editor,
    patch_label_annotate,
    scale_subresource,
    wait_for_condition,
    wait_for_delete,
    wait_for_jsonpath,
    delete_cascade_background,
    delete_cascade_foreground,
    delete_cascade_orphan,
    get_watch_table,
    explain_fields,
    api_resources_and_get_all,
    validation_errors_name_the_field,
    configmap_unknown_field_refused,
);

/// How long one kubectl command, or one awaited change, may take. Generous: CI machines are
/// busy compiling.
const DEADLINE: Duration = Duration::from_secs(60);

/// How long a background kubectl is watched to make sure it has not finished too early.
const STILL_RUNNING_CHECK: Duration = Duration::from_millis(700);

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - name: Color
      type: string
      description: The color of the widget.
      jsonPath: .spec.color
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Size
      type: string
      priority: 1
      description: How big the widget is.
      jsonPath: .spec.size
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        description: A Widget is a thing with a color.
        properties:
          spec:
            type: object
            description: What the widget should be.
            required: [color]
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              message: replicas must not exceed maxReplicas
            properties:
              color:
                type: string
                description: The color of the widget.
                enum: [red, green, blue]
              size:
                type: string
                description: How big the widget is.
                default: medium
              replicas:
                type: integer
                format: int32
                minimum: 0
                description: How many copies of the widget to run.
                default: 1
              maxReplicas:
                type: integer
                format: int32
                description: The most copies allowed.
                default: 10
          status:
            type: object
            description: What the widget is.
            properties:
              replicas:
                type: integer
                format: int32
              selector:
                type: string
              conditions:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [type]
                items:
                  type: object
                  required: [type, status]
                  properties:
                    type: {type: string}
                    status: {type: string}
                    reason: {type: string}
                    message: {type: string}
                    lastTransitionTime: {type: string, format: date-time}
"#;

/// A Widget manifest: `spec` is YAML indented by two spaces.
fn widget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

/// Client-side apply: create, change (three-way merge against the last-applied annotation,
/// keeping what others changed), apply again (unchanged).
async fn apply_client_side_three_way_merge(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let first = r#"
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  labels:
    app: demo
spec:
  color: red
"#;
    let out = kubectl.apply(first).await;
    assert_eq!(out.trim(), "widget.example.com/w1 created");
    let created = kubectl.get_json(&["widget", "w1"]).await;
    // The schema's defaults fill in what the manifest leaves out.
    assert_eq!(
        created["spec"],
        json!({"color": "red", "size": "medium", "replicas": 1, "maxReplicas": 10})
    );
    let last_applied: Value = serde_json::from_str(
        created["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap_or_else(|| panic!("no last-applied annotation: {created}")),
    )
    .expect("the last-applied annotation is JSON");
    assert_eq!(last_applied["spec"], json!({"color": "red"}));

    // Changes by others, to fields the manifest does not set.
    kubectl
        .run(&["annotate", "widget", "w1", "note=kept"])
        .await;
    kubectl
        .run(&["scale", "widget", "w1", "--replicas=2"])
        .await;

    let second = widget("w1", "  color: green\n  size: large\n");
    let out = kubectl.apply(&second).await;
    assert_eq!(out.trim(), "widget.example.com/w1 configured");
    let changed = kubectl.get_json(&["widget", "w1"]).await;
    assert_eq!(
        changed["spec"],
        json!({"color": "green", "size": "large", "replicas": 2, "maxReplicas": 10}),
        "the manifest's changes applied, the scaled replicas kept"
    );
    // The label was in the last applied manifest and is not in this one: removed.
    assert!(
        changed["metadata"]["labels"].is_null(),
        "label not removed: {changed}"
    );
    assert_eq!(changed["metadata"]["annotations"]["note"], "kept");

    let out = kubectl.apply(&second).await;
    assert_eq!(out.trim(), "widget.example.com/w1 unchanged");
    let again = kubectl.get_json(&["widget", "w1"]).await;
    assert_eq!(
        again["metadata"]["resourceVersion"],
        changed["metadata"]["resourceVersion"]
    );

    // Dropping `size` from the manifest removes it; the default comes back.
    let out = kubectl.apply(&widget("w1", "  color: green\n")).await;
    assert_eq!(out.trim(), "widget.example.com/w1 configured");
    let spec = kubectl
        .run(&["get", "widget", "w1", "-o", "jsonpath={.spec.size}"])
        .await;
    assert_eq!(spec, "medium");

    // The same on a ConfigMap, applied from a file.
    let manifest = kubectl.scratch_file(
        "settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    tier: web\n\
         data:\n  color: red\n  size: big\n",
    );
    let out = kubectl.run(&["apply", "-f", path_str(&manifest)]).await;
    assert_eq!(out.trim(), "configmap/settings created");
    kubectl
        .run(&["label", "configmap", "settings", "team=a"])
        .await;
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    tier: web\n\
         data:\n  color: blue\n",
    )
    .expect("rewriting the manifest");
    let out = kubectl.run(&["apply", "-f", path_str(&manifest)]).await;
    assert_eq!(out.trim(), "configmap/settings configured");
    let configmap = kubectl.get_json(&["configmap", "settings"]).await;
    assert_eq!(configmap["data"], json!({"color": "blue"}));
    assert_eq!(
        configmap["metadata"]["labels"],
        json!({"tier": "web", "team": "a"})
    );
    let out = kubectl.run(&["apply", "-f", path_str(&manifest)]).await;
    assert_eq!(out.trim(), "configmap/settings unchanged");
}

/// `kubectl apply --server-side`: create, a second field manager's conflict, then
/// `--force-conflicts` taking the field over.
async fn apply_server_side_conflicts(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let red = widget("w2", "  color: red\n");
    let blue = widget("w2", "  color: blue\n");
    let out = kubectl.apply_with(&["--server-side"], &red).await;
    assert_eq!(out.trim(), "widget.example.com/w2 serverside-applied");
    let created = kubectl
        .get_json(&["widget", "w2", "--show-managed-fields"])
        .await;
    assert_eq!(manager_of(&created, "spec", "color"), ["kubectl"]);
    assert_eq!(created["spec"]["size"], "medium", "defaulted: {created}");
    // Applying the same again is fine.
    let out = kubectl.apply_with(&["--server-side"], &red).await;
    assert_eq!(out.trim(), "widget.example.com/w2 serverside-applied");

    let error = kubectl
        .fails_with_stdin(
            &["apply", "--server-side", "--field-manager=other", "-f", "-"],
            &blue,
        )
        .await;
    assert!(
        error.contains(r#"Apply failed with 1 conflict: conflict with "kubectl""#)
            && error.contains(".spec.color")
            && error.contains("--force-conflicts"),
        "{error}"
    );
    let color = kubectl
        .run(&["get", "widget", "w2", "-o", "jsonpath={.spec.color}"])
        .await;
    assert_eq!(color, "red", "a conflict changes nothing");

    let out = kubectl
        .apply_with(
            &[
                "--server-side",
                "--field-manager=other",
                "--force-conflicts",
            ],
            &blue,
        )
        .await;
    assert_eq!(out.trim(), "widget.example.com/w2 serverside-applied");
    let forced = kubectl
        .get_json(&["widget", "w2", "--show-managed-fields"])
        .await;
    assert_eq!(forced["spec"]["color"], "blue");
    assert_eq!(manager_of(&forced, "spec", "color"), ["other"]);

    // The same on a ConfigMap.
    let configmap = |color: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  color: {color}\n"
        )
    };
    let out = kubectl
        .apply_with(&["--server-side"], &configmap("red"))
        .await;
    assert_eq!(out.trim(), "configmap/shared serverside-applied");
    let error = kubectl
        .fails_with_stdin(
            &["apply", "--server-side", "--field-manager=other", "-f", "-"],
            &configmap("blue"),
        )
        .await;
    assert!(
        error.contains(r#"conflict with "kubectl""#) && error.contains(".data.color"),
        "{error}"
    );
    let out = kubectl
        .apply_with(
            &[
                "--server-side",
                "--field-manager=other",
                "--force-conflicts",
            ],
            &configmap("blue"),
        )
        .await;
    assert_eq!(out.trim(), "configmap/shared serverside-applied");
    let shared = kubectl
        .get_json(&["configmap", "shared", "--show-managed-fields"])
        .await;
    assert_eq!(shared["data"], json!({"color": "blue"}));
    assert_eq!(manager_of(&shared, "data", "color"), ["other"]);
}

/// The managers whose managedFields entries own `<top>.<field>`.
fn manager_of(object: &Value, top: &str, field: &str) -> Vec<String> {
    let entries = object["metadata"]["managedFields"]
        .as_array()
        .unwrap_or_else(|| panic!("no managedFields: {object}"));
    entries
        .iter()
        .filter(|entry| !entry["fieldsV1"][format!("f:{top}")][format!("f:{field}")].is_null())
        .map(|entry| entry["manager"].as_str().unwrap_or_default().to_string())
        .collect()
}

async fn get_printer_columns_and_output_formats(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    kubectl
        .apply(&widget(
            "w2",
            "  color: blue\n  size: large\n  replicas: 2\n",
        ))
        .await;

    let table = rows(&kubectl.run(&["get", "widgets"]).await);
    assert_eq!(table[0], ["NAME", "COLOR", "REPLICAS", "AGE"], "{table:?}");
    assert_eq!(table.len(), 3, "{table:?}");
    assert_eq!(table[1][..3], ["w1", "red", "1"], "{table:?}");
    assert_eq!(table[2][..3], ["w2", "blue", "2"], "{table:?}");
    assert!(is_age(&table[1][3]), "{table:?}");

    // The priority-1 column only with -o wide.
    let wide = rows(&kubectl.run(&["get", "wd", "-o", "wide"]).await);
    assert_eq!(
        wide[0],
        ["NAME", "COLOR", "REPLICAS", "SIZE", "AGE"],
        "{wide:?}"
    );
    assert_eq!(wide[1][..4], ["w1", "red", "1", "medium"], "{wide:?}");
    assert_eq!(wide[2][..4], ["w2", "blue", "2", "large"], "{wide:?}");

    let one = rows(&kubectl.run(&["get", "widget", "w2"]).await);
    assert_eq!(one.len(), 2, "{one:?}");
    assert_eq!(one[1][..3], ["w2", "blue", "2"], "{one:?}");

    // Sorting asks for the objects inside the table.
    let sorted = rows(
        &kubectl
            .run(&["get", "widgets", "--sort-by=.spec.color"])
            .await,
    );
    let names: Vec<&str> = sorted[1..].iter().map(|row| row[0].as_str()).collect();
    assert_eq!(names, ["w2", "w1"], "{sorted:?}");

    let size = kubectl
        .run(&["get", "widget", "w2", "-o", "jsonpath={.spec.size}"])
        .await;
    assert_eq!(size, "large");
    let names = kubectl
        .run(&[
            "get",
            "widgets",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas}{\"\\n\"}{end}",
        ])
        .await;
    assert_eq!(names, "w1=1\nw2=2\n");

    let columns = rows(
        &kubectl
            .run(&[
                "get",
                "widgets",
                "-o",
                "custom-columns=NAME:.metadata.name,COLOR:.spec.color",
            ])
            .await,
    );
    assert_eq!(
        columns,
        [["NAME", "COLOR"], ["w1", "red"], ["w2", "blue"]],
        "{columns:?}"
    );

    // A built-in kind's columns.
    kubectl
        .run(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=a=1",
            "--from-literal=b=2",
        ])
        .await;
    let table = rows(&kubectl.run(&["get", "configmap", "settings"]).await);
    assert_eq!(table[0], ["NAME", "DATA", "AGE"], "{table:?}");
    assert_eq!(table[1][..2], ["settings", "2"], "{table:?}");
    let columns = rows(
        &kubectl
            .run(&[
                "get",
                "configmap",
                "settings",
                "-o",
                "custom-columns=NAME:.metadata.name,A:.data.a,MISSING:.data.zzz",
            ])
            .await,
    );
    assert_eq!(
        columns,
        [["NAME", "A", "MISSING"], ["settings", "1", "<none>"]],
        "{columns:?}"
    );
}

/// `kubectl describe`, including the Events about the object.
async fn describe_custom_resource_and_configmap(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let manifest = r#"
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  labels:
    app: demo
spec:
  color: red
  replicas: 2
"#;
    kubectl.apply(manifest).await;
    let uid = kubectl
        .run(&["get", "widget", "w1", "-o", "jsonpath={.metadata.uid}"])
        .await;
    let event = format!(
        r#"
apiVersion: v1
kind: Event
metadata:
  name: w1.built
involvedObject:
  apiVersion: example.com/v1
  kind: Widget
  name: w1
  namespace: default
  uid: {uid}
reason: Built
message: The widget was built
type: Normal
source:
  component: widget-controller
firstTimestamp: "2024-01-01T00:00:00Z"
lastTimestamp: "2024-01-01T00:00:00Z"
count: 1
"#
    );
    let out = kubectl.run_with_stdin(&["create", "-f", "-"], &event).await;
    assert_eq!(out.trim(), "event/w1.built created");

    let described = kubectl.run(&["describe", "widget", "w1"]).await;
    let lines = rows(&described);
    for expected in [
        &["Name:", "w1"][..],
        &["Namespace:", "default"],
        &["Labels:", "app=demo"],
        &["API", "Version:", "example.com/v1"],
        &["Kind:", "Widget"],
        &["Spec:"],
        &["Color:", "red"],
        &["Replicas:", "2"],
        &["Size:", "medium"],
        &["Max", "Replicas:", "10"],
        &["Events:"],
        &["Type", "Reason", "Age", "From", "Message"],
    ] {
        assert!(
            lines.iter().any(|line| line == expected),
            "no line {expected:?} in:\n{described}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|line| line.first().map(String::as_str) == Some("Normal")
                && line.contains(&"Built".to_string())
                && line.contains(&"widget-controller".to_string())
                && line.ends_with(&["The", "widget", "was", "built"].map(String::from))),
        "the event missing from:\n{described}"
    );

    kubectl
        .run(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=color=red",
        ])
        .await;
    kubectl
        .run(&["label", "configmap", "settings", "tier=web"])
        .await;
    let described = kubectl.run(&["describe", "configmap", "settings"]).await;
    let lines = rows(&described);
    for expected in [
        &["Name:", "settings"][..],
        &["Namespace:", "default"],
        &["Labels:", "tier=web"],
        &["Annotations:", "<none>"],
        &["Data"],
        &["color:"],
        &["red"],
        &["Events:", "<none>"],
    ] {
        assert!(
            lines.iter().any(|line| line == expected),
            "no line {expected:?} in:\n{described}"
        );
    }
}

/// `kubectl edit` with `EDITOR` set to a script.
async fn edit_through_editor(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    kubectl
        .run(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=color=red",
        ])
        .await;
    let to_blue = kubectl.editor("to-blue", "s/color: red/color: blue/");

    let out = kubectl.edit(&["edit", "widget", "w1"], &to_blue).await;
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "widget.example.com/w1 edited"
    );
    let edited = kubectl.get_json(&["widget", "w1"]).await;
    assert_eq!(edited["spec"]["color"], "blue");
    assert_eq!(edited["metadata"]["generation"], 2);

    let out = kubectl
        .edit(&["edit", "configmap/settings"], &to_blue)
        .await;
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap/settings edited"
    );
    let color = kubectl
        .run(&["get", "cm", "settings", "-o", "jsonpath={.data.color}"])
        .await;
    assert_eq!(color, "blue");

    // An edit the schema refuses: kubectl reports it and nothing changes.
    let to_purple = kubectl.editor("to-purple", "s/color: blue/color: purple/");
    let out = kubectl.edit(&["edit", "widget", "w1"], &to_purple).await;
    assert!(!out.status.success(), "{}", describe_output(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"widgets.example.com "w1" is invalid"#),
        "{stderr}"
    );
    let color = kubectl
        .run(&["get", "widget", "w1", "-o", "jsonpath={.spec.color}"])
        .await;
    assert_eq!(color, "blue");
}

async fn patch_label_annotate(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    kubectl
        .run(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=color=red",
        ])
        .await;

    for (kind, printed, merge, json_patch, path) in [
        (
            "widget",
            "widget.example.com/w1",
            r#"{"spec":{"color":"green"}}"#,
            r#"[{"op":"replace","path":"/spec/replicas","value":3},{"op":"add","path":"/spec/size","value":"small"}]"#,
            "spec",
        ),
        (
            "configmap",
            "configmap/settings",
            r#"{"data":{"color":"green"}}"#,
            r#"[{"op":"add","path":"/data/replicas","value":"3"},{"op":"add","path":"/data/size","value":"small"}]"#,
            "data",
        ),
    ] {
        let name = printed.rsplit('/').next().expect("a name");
        let out = kubectl
            .run(&["patch", kind, name, "--type", "merge", "-p", merge])
            .await;
        assert_eq!(out.trim(), format!("{printed} patched"));
        let out = kubectl
            .run(&["patch", kind, name, "--type", "json", "-p", json_patch])
            .await;
        assert_eq!(out.trim(), format!("{printed} patched"));
        // A failing JSON patch test changes nothing.
        kubectl
            .fails(&[
                "patch",
                kind,
                name,
                "--type",
                "json",
                "-p",
                &format!(r#"[{{"op":"test","path":"/{path}/color","value":"red"}},{{"op":"replace","path":"/{path}/size","value":"huge"}}]"#),
            ])
            .await;

        let out = kubectl.run(&["label", kind, name, "tier=web"]).await;
        assert_eq!(out.trim(), format!("{printed} labeled"));
        let error = kubectl.fails(&["label", kind, name, "tier=db"]).await;
        assert!(
            error.contains("'tier' already has a value (web), and --overwrite is false"),
            "{error}"
        );
        kubectl
            .run(&["label", kind, name, "tier=db", "--overwrite"])
            .await;
        kubectl.run(&["label", kind, name, "team=a"]).await;
        kubectl.run(&["label", kind, name, "team-"]).await;
        let out = kubectl
            .run(&["annotate", kind, name, "owner=team-a", "note=hi"])
            .await;
        assert_eq!(out.trim(), format!("{printed} annotated"));
        kubectl.run(&["annotate", kind, name, "note-"]).await;

        let object = kubectl.get_json(&[kind, name]).await;
        match kind {
            "widget" => assert_eq!(
                object["spec"],
                json!({"color": "green", "replicas": 3, "size": "small", "maxReplicas": 10})
            ),
            _ => assert_eq!(
                object["data"],
                json!({"color": "green", "replicas": "3", "size": "small"})
            ),
        }
        assert_eq!(object["metadata"]["labels"], json!({"tier": "db"}));
        let annotations = &object["metadata"]["annotations"];
        assert_eq!(annotations["owner"], "team-a", "{object}");
        assert!(annotations["note"].is_null(), "{object}");
        let selected = kubectl
            .run(&[
                "get",
                kind,
                "-l",
                "tier=db",
                "-o",
                "jsonpath={.items[*].metadata.name}",
            ])
            .await;
        assert_eq!(selected, name);
    }
}

async fn scale_subresource(env: TestEnv) {
    let Some((server, kubectl)) = start(&env).await else {
        return;
    };
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    let out = kubectl.run(&["scale", "widget/w1", "--replicas=3"]).await;
    assert_eq!(out.trim(), "widget.example.com/w1 scaled");
    let replicas = kubectl
        .run(&["get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(replicas, "3");

    widgets(&server)
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 3, "selector": "app=w1"}})),
        )
        .await
        .expect("patching the status");
    let scale: Value = serde_json::from_str(
        &kubectl
            .run(&[
                "get",
                "--raw",
                "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
            ])
            .await,
    )
    .expect("a Scale");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"], json!({"replicas": 3}));
    assert_eq!(
        scale["status"],
        json!({"replicas": 3, "selector": "app=w1"})
    );

    // A precondition on the current count.
    let error = kubectl
        .fails(&[
            "scale",
            "widget",
            "w1",
            "--current-replicas=2",
            "--replicas=4",
        ])
        .await;
    assert!(
        error.contains("Expected replicas to be 2, was 3"),
        "{error}"
    );
    let out = kubectl
        .run(&["scale", "wd", "w1", "--current-replicas=3", "--replicas=4"])
        .await;
    assert_eq!(out.trim(), "widget.example.com/w1 scaled");

    // The CEL rule holds for writes through the scale subresource too.
    let error = kubectl
        .fails(&["scale", "widget/w1", "--replicas=11"])
        .await;
    assert!(
        error.contains(r#"The Widget "w1" is invalid"#)
            && error.contains("spec: ")
            && error.contains("replicas must not exceed maxReplicas"),
        "{error}"
    );
    let replicas = kubectl
        .run(&["get", "widget", "w1", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(replicas, "4");
}

/// `kubectl wait --for=condition=Ready`, the condition set from the test through the status
/// subresource while kubectl waits.
async fn wait_for_condition(env: TestEnv) {
    let Some((server, kubectl)) = start(&env).await else {
        return;
    };
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    let widgets = widgets(&server);
    let set_ready = |status: &str| {
        Patch::Merge(json!({"status": {"conditions": [{
            "type": "Ready",
            "status": status,
            "reason": "Test",
            "message": "set by the test",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }]}}))
    };
    widgets
        .patch_status("w1", &PatchParams::default(), &set_ready("False"))
        .await
        .expect("patching the status");

    let mut wait = kubectl.spawn(&[
        "wait",
        "--for=condition=Ready",
        "widget/w1",
        "--timeout=30s",
    ]);
    wait.assert_still_running().await;
    let patched = widgets
        .patch_status("w1", &PatchParams::default(), &set_ready("True"))
        .await
        .expect("patching the status");
    assert_eq!(patched.data["spec"]["color"], "red", "spec untouched");
    let (status, out) = wait.finish().await;
    assert!(status.success(), "kubectl wait: {status}; {out}");
    assert_eq!(out.trim(), "widget.example.com/w1 condition met");

    // Already met: at once.
    let out = kubectl
        .run(&["wait", "--for=condition=Ready", "wd/w1", "--timeout=30s"])
        .await;
    assert_eq!(out.trim(), "widget.example.com/w1 condition met");
    // Never met: kubectl times out.
    let error = kubectl
        .fails(&[
            "wait",
            "--for=condition=Stalled",
            "widget/w1",
            "--timeout=1s",
        ])
        .await;
    assert!(error.contains("timed out waiting"), "{error}");
}

/// `kubectl wait --for=delete` of a widget a finalizer holds, then released.
async fn wait_for_delete(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let manifest = r#"
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  finalizers: [example.com/hold]
spec:
  color: red
"#;
    kubectl.apply(manifest).await;
    let out = kubectl
        .run(&["delete", "widget", "w1", "--wait=false"])
        .await;
    assert_eq!(out.trim(), r#"widget.example.com "w1" deleted"#);

    let mut wait = kubectl.spawn(&["wait", "--for=delete", "widget/w1", "--timeout=30s"]);
    wait.assert_still_running().await;
    let held = kubectl.get_json(&["widget", "w1"]).await;
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    kubectl
        .run(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .await;
    let (status, out) = wait.finish().await;
    assert!(status.success(), "kubectl wait: {status}; {out}");
    assert_eq!(out.trim(), "widget.example.com/w1 condition met");
    assert!(!kubectl.exists("widget", "w1").await);
}

/// `kubectl wait --for=jsonpath='{.spec.color}'=green`.
async fn wait_for_jsonpath(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    let mut wait = kubectl.spawn(&[
        "wait",
        "--for=jsonpath={.spec.color}=green",
        "widget/w1",
        "--timeout=30s",
    ]);
    wait.assert_still_running().await;
    // A change that does not meet the condition.
    kubectl
        .run(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"color":"blue"}}"#,
        ])
        .await;
    wait.assert_still_running().await;
    kubectl
        .run(&[
            "patch",
            "widget",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"color":"green"}}"#,
        ])
        .await;
    let (status, out) = wait.finish().await;
    assert!(status.success(), "kubectl wait: {status}; {out}");
    assert_eq!(out.trim(), "widget.example.com/w1 condition met");
}

/// An owner ConfigMap with two dependents, `<owner>-cm` (a ConfigMap) and `<owner>-widget`,
/// whose ownerReferences carry the owner's uid. `held` puts a finalizer on `<owner>-cm`.
async fn owner_with_dependents(kubectl: &Kubectl, owner: &str, held: bool) {
    let out = kubectl
        .apply(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {owner}\n"
        ))
        .await;
    assert_eq!(out.trim(), format!("configmap/{owner} created"));
    let uid = kubectl
        .run(&["get", "configmap", owner, "-o", "jsonpath={.metadata.uid}"])
        .await;
    assert!(!uid.is_empty());
    let metadata = |name: &str, held: bool| {
        let finalizers = if held {
            "  finalizers: [example.com/hold]\n"
        } else {
            ""
        };
        format!(
            "metadata:\n  name: {name}\n{finalizers}  ownerReferences:\n  - apiVersion: v1\n    \
             kind: ConfigMap\n    name: {owner}\n    uid: {uid}\n    blockOwnerDeletion: true\n"
        )
    };
    let out = kubectl
        .apply(&format!(
            "apiVersion: v1\nkind: ConfigMap\n{}data:\n  a: b\n",
            metadata(&format!("{owner}-cm"), held)
        ))
        .await;
    assert_eq!(out.trim(), format!("configmap/{owner}-cm created"));
    let out = kubectl
        .apply(&format!(
            "apiVersion: example.com/v1\nkind: Widget\n{}spec:\n  color: red\n",
            metadata(&format!("{owner}-widget"), false)
        ))
        .await;
    assert_eq!(
        out.trim(),
        format!("widget.example.com/{owner}-widget created")
    );
}

async fn delete_cascade_background(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    owner_with_dependents(&kubectl, "bg", false).await;
    let out = kubectl
        .run(&["delete", "configmap", "bg", "--cascade=background"])
        .await;
    assert_eq!(out.trim(), r#"configmap "bg" deleted"#);
    assert!(!kubectl.exists("configmap", "bg").await);
    let k = &kubectl;
    eventually("the dependents are collected", || async move {
        !k.exists("configmap", "bg-cm").await && !k.exists("widget", "bg-widget").await
    })
    .await;
}

/// Foreground: the owner stays, marked for deletion with the `foregroundDeletion` finalizer,
/// until its dependents are gone; one of them is held by a finalizer for a while.
async fn delete_cascade_foreground(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    owner_with_dependents(&kubectl, "fg", true).await;
    let mut delete = kubectl.spawn(&["delete", "configmap", "fg", "--cascade=foreground"]);
    delete.wait_for_line(r#"configmap "fg" deleted"#).await;
    let k = &kubectl;
    eventually("the unheld dependent is collected", || async move {
        !k.exists("widget", "fg-widget").await
    })
    .await;
    let dependent = kubectl.get_json(&["configmap", "fg-cm"]).await;
    assert!(
        dependent["metadata"]["deletionTimestamp"].is_string(),
        "the held dependent is being deleted: {dependent}"
    );
    let owner = kubectl.get_json(&["configmap", "fg"]).await;
    assert!(
        owner["metadata"]["deletionTimestamp"].is_string(),
        "{owner}"
    );
    assert_eq!(
        owner["metadata"]["finalizers"],
        json!(["foregroundDeletion"]),
        "{owner}"
    );
    delete.assert_still_running().await;

    kubectl
        .run(&[
            "patch",
            "configmap",
            "fg-cm",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .await;
    let (status, out) = delete.finish().await;
    assert!(status.success(), "kubectl delete: {status}; {out}");
    assert!(!kubectl.exists("configmap", "fg-cm").await);
    assert!(!kubectl.exists("configmap", "fg").await);
}

/// Orphan: the owner goes, the dependents stay without their ownerReferences.
async fn delete_cascade_orphan(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    owner_with_dependents(&kubectl, "or", false).await;
    let out = kubectl
        .run(&["delete", "configmap", "or", "--cascade=orphan"])
        .await;
    assert_eq!(out.trim(), r#"configmap "or" deleted"#);
    assert!(!kubectl.exists("configmap", "or").await);
    for (kind, name) in [("configmap", "or-cm"), ("widget", "or-widget")] {
        let dependent = kubectl.get_json(&[kind, name]).await;
        assert!(
            dependent["metadata"]["ownerReferences"].is_null(),
            "{kind} {name} still has an owner: {dependent}"
        );
        assert!(
            dependent["metadata"]["deletionTimestamp"].is_null(),
            "{dependent}"
        );
    }
    // And nothing collects them later.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(kubectl.exists("configmap", "or-cm").await);
    assert!(kubectl.exists("widget", "or-widget").await);
}

/// `kubectl get -w` in table form (the default output) sees changes as new rows.
async fn get_watch_table(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    let mut watch = kubectl.spawn(&["get", "widgets", "-w"]);
    watch
        .wait_for_row(&["NAME", "COLOR", "REPLICAS", "AGE"])
        .await;
    watch.wait_for_row(&["w1", "red", "1"]).await;
    kubectl
        .run(&[
            "patch",
            "wd",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"color":"blue"}}"#,
        ])
        .await;
    watch.wait_for_row(&["w1", "blue", "1"]).await;
    kubectl.run(&["scale", "wd/w1", "--replicas=4"]).await;
    watch.wait_for_row(&["w1", "blue", "4"]).await;
    kubectl.apply(&widget("w2", "  color: green\n")).await;
    watch.wait_for_row(&["w2", "green", "1"]).await;
    watch.stop().await;

    // With -o wide, the priority-1 column too.
    let mut watch = kubectl.spawn(&["get", "widgets", "-w", "-o", "wide"]);
    watch
        .wait_for_row(&["NAME", "COLOR", "REPLICAS", "SIZE", "AGE"])
        .await;
    watch.wait_for_row(&["w2", "green", "1", "medium"]).await;
    kubectl
        .run(&[
            "patch",
            "wd",
            "w2",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"size":"small"}}"#,
        ])
        .await;
    watch.wait_for_row(&["w2", "green", "1", "small"]).await;
    watch.stop().await;
}

async fn explain_fields(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let explained = kubectl.run(&["explain", "widgets.spec"]).await;
    let lines = rows(&explained);
    for expected in [
        &["GROUP:", "example.com"][..],
        &["KIND:", "Widget"],
        &["VERSION:", "v1"],
        &["FIELD:", "spec", "<Object>"],
        &["What", "the", "widget", "should", "be."],
        &["FIELDS:"],
        &["color", "<string>", "-required-"],
        &["enum:", "red,", "green,", "blue"],
        &["The", "color", "of", "the", "widget."],
        &["maxReplicas", "<integer>"],
        &["The", "most", "copies", "allowed."],
        &["replicas", "<integer>"],
        &["How", "many", "copies", "of", "the", "widget", "to", "run."],
        &["size", "<string>"],
        &["How", "big", "the", "widget", "is."],
    ] {
        assert!(
            lines.iter().any(|line| line == expected),
            "no line {expected:?} in:\n{explained}"
        );
    }

    let explained = kubectl.run(&["explain", "widget"]).await;
    let lines = rows(&explained);
    for expected in [
        &["A", "Widget", "is", "a", "thing", "with", "a", "color."][..],
        &["spec", "<Object>"],
        &["status", "<Object>"],
        &["metadata", "<ObjectMeta>"],
    ] {
        assert!(
            lines.iter().any(|line| line == expected),
            "no line {expected:?} in:\n{explained}"
        );
    }

    let explained = kubectl.run(&["explain", "configmap.data"]).await;
    let lines = rows(&explained);
    for expected in [
        &["KIND:", "ConfigMap"][..],
        &["VERSION:", "v1"],
        &["FIELD:", "data", "<map[string]string>"],
        &["DESCRIPTION:"],
    ] {
        assert!(
            lines.iter().any(|line| line == expected),
            "no line {expected:?} in:\n{explained}"
        );
    }
    let description = lines
        .iter()
        .skip_while(|line| *line != &["DESCRIPTION:"])
        .nth(1);
    assert!(
        description.is_some(),
        "configmap.data has no description:\n{explained}"
    );

    let error = kubectl.fails(&["explain", "widgets.spec.flavor"]).await;
    assert!(error.contains("flavor"), "{error}");
}

async fn api_resources_and_get_all(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let resources = rows(&kubectl.run(&["api-resources"]).await);
    assert_eq!(
        resources[0],
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    for expected in [
        &["widgets", "wd", "example.com/v1", "true", "Widget"][..],
        &["configmaps", "cm", "v1", "true", "ConfigMap"],
    ] {
        assert!(
            resources.iter().any(|row| row == expected),
            "no row {expected:?} in {resources:?}"
        );
    }
    let wide = rows(
        &kubectl
            .run(&["api-resources", "--api-group=example.com", "-o", "wide"])
            .await,
    );
    assert_eq!(wide.len(), 2, "{wide:?}");
    assert_eq!(
        wide[1][..5],
        ["widgets", "wd", "example.com/v1", "true", "Widget"]
    );
    let mut verbs: Vec<&str> = wide[1][5].split(',').collect();
    verbs.sort_unstable();
    assert_eq!(
        verbs,
        [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ]
    );
    assert_eq!(wide[1][6], "all");

    kubectl.apply(&widget("w1", "  color: red\n")).await;
    kubectl.run(&["create", "configmap", "not-in-all"]).await;
    // ConfigMaps are not in the `all` category; the widget is.
    let all = kubectl.run(&["get", "all", "-o", "name"]).await;
    assert_eq!(all.trim(), "widget.example.com/w1");
    let table = rows(&kubectl.run(&["get", "all"]).await);
    assert!(
        table.iter().any(|row| matches!(
            row.first().map(String::as_str),
            Some("w1") | Some("widget.example.com/w1")
        )),
        "{table:?}"
    );
}

/// kubectl's output for objects the schema refuses names each offending field; nothing is
/// stored.
async fn validation_errors_name_the_field(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let error = kubectl
        .fails_with_stdin(
            &["apply", "-f", "-"],
            &widget("bad-color", "  color: purple\n"),
        )
        .await;
    assert!(
        error.contains(r#"The Widget "bad-color" is invalid"#)
            && error.contains(
                r#"spec.color: Unsupported value: "purple": supported values: "red", "green", "blue""#
            ),
        "{error}"
    );

    let error = kubectl
        .fails_with_stdin(
            &["apply", "-f", "-"],
            &widget(
                "too-many",
                "  color: red\n  replicas: 20\n  maxReplicas: 5\n",
            ),
        )
        .await;
    assert!(
        error.contains(r#"The Widget "too-many" is invalid: spec: "#)
            && error.contains("replicas must not exceed maxReplicas"),
        "{error}"
    );

    // Every field error of the request, at once.
    let error = kubectl
        .fails_with_stdin(
            &["apply", "-f", "-"],
            &widget("two-errors", "  color: purple\n  replicas: -1\n"),
        )
        .await;
    assert!(
        error.contains(r#"spec.color: Unsupported value: "purple""#)
            && error.contains(
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
            ),
        "{error}"
    );

    let error = kubectl
        .fails_with_stdin(
            &["apply", "-f", "-"],
            &widget("unknown", "  color: red\n  flavor: mint\n"),
        )
        .await;
    assert!(
        error.contains("Error from server (BadRequest)")
            && error.contains(r#"strict decoding error: unknown field "spec.flavor""#),
        "{error}"
    );
    for name in ["bad-color", "too-many", "two-errors", "unknown"] {
        assert!(!kubectl.exists("widget", name).await, "{name} was stored");
    }

    // An update refused the same way leaves the object as it was.
    kubectl.apply(&widget("w1", "  color: red\n")).await;
    let before = kubectl.get_json(&["widget", "w1"]).await;
    let error = kubectl
        .fails_with_stdin(&["apply", "-f", "-"], &widget("w1", "  color: purple\n"))
        .await;
    assert!(
        error.contains(r#"spec.color: Unsupported value: "purple""#),
        "{error}"
    );
    let after = kubectl.get_json(&["widget", "w1"]).await;
    assert_eq!(before, after);

    // --validate=warn: created, the unknown field dropped, a warning printed.
    let output = kubectl
        .output(
            &["apply", "--validate=warn", "-f", "-"],
            Some(&widget("warned", "  color: red\n  flavor: mint\n")),
            &[],
        )
        .await;
    assert!(output.status.success(), "{}", describe_output(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(r#"Warning: unknown field "spec.flavor""#),
        "{stderr}"
    );
    let spec = kubectl.get_json(&["widget", "warned"]).await["spec"].clone();
    assert!(spec["flavor"].is_null(), "not pruned: {spec}");
}

async fn configmap_unknown_field_refused(env: TestEnv) {
    let Some((_server, kubectl)) = start(&env).await else {
        return;
    };
    let error = kubectl
        .fails_with_stdin(
            &["apply", "-f", "-"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flavored\ndata:\n  a: b\nflavor: mint\n",
        )
        .await;
    assert!(
        error.contains(r#"strict decoding error: unknown field "flavor""#),
        "{error}"
    );
    assert!(!kubectl.exists("configmap", "flavored").await);
}

/// Starts the server and installs the Widget CRD with `kubectl apply -f <file>`; `None` (after
/// a loud SKIP line) without kubectl.
async fn start(env: &TestEnv) -> Option<(ServerProcess, Kubectl)> {
    let binary = kubectl_or_skip()?;
    let server = env.start_server().await;
    let kubectl = Kubectl::new(binary, env, &server);
    let crd = kubectl.scratch_file("widget-crd.yaml", WIDGET_CRD);
    let out = kubectl.run(&["apply", "-f", path_str(&crd)]).await;
    assert_eq!(
        out.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    );
    Some((server, kubectl))
}

/// A kube-rs handle on the widgets of `default`.
fn widgets(server: &ServerProcess) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(server.client(), "default", &resource)
}

/// Output split into lines of whitespace-separated cells; blank lines dropped.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|line| line.split_whitespace().map(str::to_string).collect())
        .filter(|row: &Vec<String>| !row.is_empty())
        .collect()
}

/// Whether `cell` looks like kubectl's AGE, such as `0s`, `12s` or `2m3s`.
fn is_age(cell: &str) -> bool {
    cell.ends_with(['s', 'm', 'h', 'd']) && cell.starts_with(|c: char| c.is_ascii_digit())
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn describe_output(output: &Output) -> String {
    format!(
        "{}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Polls `check` until it holds, failing the test after [`DEADLINE`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kubectl from `PATH`, else `/usr/bin/kubectl`; `None` (after a loud SKIP line) when there
/// is none and `CORRAL_REQUIRE_KUBECTL` is not `1`.
fn kubectl_or_skip() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("kubectl"))
            .find(|candidate| candidate.is_file())
    });
    let binary = on_path.or_else(|| {
        let fallback = PathBuf::from("/usr/bin/kubectl");
        fallback.is_file().then_some(fallback)
    });
    let found = tool_available(
        binary.is_some(),
        "kubectl",
        "CORRAL_REQUIRE_KUBECTL",
        "install kubectl, e.g. Debian's kubernetes-client",
    );
    if found { binary } else { None }
}

/// kubectl, run with a kubeconfig, a discovery cache and a scratch directory of its own.
struct Kubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
    cache_dir: PathBuf,
    scratch: PathBuf,
}

impl Kubectl {
    fn new(binary: PathBuf, env: &TestEnv, server: &ServerProcess) -> Kubectl {
        let scratch = env.scratch_dir();
        Kubectl {
            binary,
            kubeconfig: server.kubeconfig().to_path_buf(),
            cache_dir: scratch.join("kubectl-cache"),
            scratch,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg(format!("--cache-dir={}", self.cache_dir.display()))
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            // `kubectl edit` keeps copies of refused edits in the temporary directory.
            .env("TMPDIR", &self.scratch)
            // Takes precedence over EDITOR, which the edit test sets.
            .env_remove("KUBE_EDITOR")
            .kill_on_drop(true);
        command
    }

    /// Writes `contents` to a file of the test's scratch directory and returns its path.
    fn scratch_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.scratch.join(name);
        std::fs::write(&path, contents).expect("writing a scratch file");
        path
    }

    /// An executable editor script that runs `sed -i <expression>` on the file it is given.
    fn editor(&self, name: &str, sed_expression: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.scratch_file(
            name,
            &format!("#!/bin/sh\nexec sed -i '{sed_expression}' \"$1\"\n"),
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("making the editor script executable");
        path
    }

    async fn output(&self, args: &[&str], stdin: Option<&str>, envs: &[(&str, &Path)]) -> Output {
        let mut command = self.command(args);
        for (name, value) in envs {
            command.env(name, value);
        }
        command
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawning kubectl");
        if let Some(text) = stdin {
            let mut pipe = child.stdin.take().expect("kubectl's stdin");
            pipe.write_all(text.as_bytes())
                .await
                .expect("writing to kubectl");
            // Dropping the pipe closes it: kubectl reads to the end.
        }
        match tokio::time::timeout(DEADLINE, child.wait_with_output()).await {
            Ok(output) => output.expect("waiting for kubectl"),
            Err(_) => panic!("kubectl {args:?} did not finish within {DEADLINE:?}"),
        }
    }

    /// Runs kubectl, requires success and returns its standard output.
    async fn run(&self, args: &[&str]) -> String {
        self.checked(args, None).await
    }

    async fn run_with_stdin(&self, args: &[&str], stdin: &str) -> String {
        self.checked(args, Some(stdin)).await
    }

    async fn checked(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.output(args, stdin, &[]).await;
        assert!(
            output.status.success(),
            "kubectl {args:?} failed: {}",
            describe_output(&output)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `kubectl apply -f -` with `manifest`.
    async fn apply(&self, manifest: &str) -> String {
        self.apply_with(&[], manifest).await
    }

    /// `kubectl apply <flags> -f -` with `manifest`.
    async fn apply_with(&self, flags: &[&str], manifest: &str) -> String {
        let mut args = vec!["apply"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["-f", "-"]);
        self.run_with_stdin(&args, manifest).await
    }

    /// Runs kubectl with `EDITOR` set to `editor`.
    async fn edit(&self, args: &[&str], editor: &Path) -> Output {
        self.output(args, None, &[("EDITOR", editor)]).await
    }

    /// Runs kubectl, requires failure and returns its standard error.
    async fn fails(&self, args: &[&str]) -> String {
        self.failing(args, None).await
    }

    async fn fails_with_stdin(&self, args: &[&str], stdin: &str) -> String {
        self.failing(args, Some(stdin)).await
    }

    async fn failing(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.output(args, stdin, &[]).await;
        assert!(
            !output.status.success(),
            "kubectl {args:?} succeeded; stdout: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// `kubectl get <args> -o json`, parsed.
    async fn get_json(&self, args: &[&str]) -> Value {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let text = self.run(&full).await;
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("kubectl {full:?}: {e}:\n{text}"))
    }

    /// Whether `kind/name` exists (in any state).
    async fn exists(&self, kind: &str, name: &str) -> bool {
        !self
            .run(&["get", kind, name, "--ignore-not-found", "-o", "name"])
            .await
            .trim()
            .is_empty()
    }

    /// Starts kubectl in the background, its standard output read line by line.
    fn spawn(&self, args: &[&str]) -> Background {
        let mut command = self.command(args);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawning kubectl");
        let stdout = child.stdout.take().expect("kubectl's stdout");
        Background {
            description: format!("kubectl {args:?}"),
            child,
            lines: BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }
}

/// A kubectl running in the background (killed when dropped).
struct Background {
    description: String,
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    seen: Vec<String>,
}

impl Background {
    /// Reads output until a line equal to `expected` (trailing spaces ignored).
    async fn wait_for_line(&mut self, expected: &str) {
        self.wait_for(expected, |line| line.trim_end() == expected)
            .await;
    }

    /// Reads output until a line whose first cells are `cells`.
    async fn wait_for_row(&mut self, cells: &[&str]) {
        let what = cells.join(" ");
        self.wait_for(&what, |line| {
            let row: Vec<&str> = line.split_whitespace().collect();
            row.starts_with(cells)
        })
        .await;
    }

    async fn wait_for(&mut self, what: &str, matches: impl Fn(&str) -> bool) {
        let read = async {
            while let Some(line) = self
                .lines
                .next_line()
                .await
                .expect("reading kubectl output")
            {
                let found = matches(&line);
                self.seen.push(line);
                if found {
                    return true;
                }
            }
            false
        };
        let found = matches!(tokio::time::timeout(DEADLINE, read).await, Ok(true));
        if !found {
            let _ = self.child.start_kill();
            let stderr = self.stderr().await;
            panic!(
                "{} never printed {what:?} (output ended or {DEADLINE:?} passed).\n\
                 It printed:\n{}\nstderr:\n{stderr}",
                self.description,
                self.seen.join("\n")
            );
        }
    }

    async fn stderr(&mut self) -> String {
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), pipe.read_to_string(&mut stderr))
                .await;
        }
        stderr
    }

    /// Fails the test if kubectl exits within [`STILL_RUNNING_CHECK`]: it should be waiting.
    async fn assert_still_running(&mut self) {
        if let Ok(status) = tokio::time::timeout(STILL_RUNNING_CHECK, self.child.wait()).await {
            let stderr = self.stderr().await;
            panic!(
                "{} ended early ({status:?}); it printed:\n{}\nstderr:\n{stderr}",
                self.description,
                self.seen.join("\n")
            );
        }
    }

    /// Waits for kubectl to exit by itself; returns its status and the output not read yet
    /// (followed by its standard error).
    async fn finish(mut self) -> (ExitStatus, String) {
        let rest = async {
            let mut text = String::new();
            while let Some(line) = self
                .lines
                .next_line()
                .await
                .expect("reading kubectl output")
            {
                text.push_str(&line);
                text.push('\n');
            }
            let status = self.child.wait().await.expect("waiting for kubectl");
            (status, text)
        };
        let (status, mut text) = match tokio::time::timeout(DEADLINE, rest).await {
            Ok(result) => result,
            Err(_) => panic!("{} did not exit within {DEADLINE:?}", self.description),
        };
        if !status.success() {
            text.push_str("stderr: ");
            text.push_str(&self.stderr().await);
        }
        (status, text)
    }

    /// Kills kubectl (a watch never ends by itself) and reaps it.
    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
