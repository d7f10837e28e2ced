//! kubectl (the version on the machine; 1.32 on CI) against the real server.
//!
//! Each test gives kubectl its own `--cache-dir`, so that discovery cached by one test (or by
//! the developer's own kubectl) never answers for another server.

use std::path::PathBuf;
use std::process::{ExitStatus, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::support::{ServerProcess, TestEnv, tool_available};

backend_tests!(
    configmap_from_manifest,
    configmap_watch,
    typed_create_commands,
    custom_resource_lifecycle,
    custom_resource_watch,
    delete_waits_for_finalizers,
);

/// How long one kubectl command may take. Generous: CI machines are busy compiling.
const COMMAND_DEADLINE: Duration = Duration::from_secs(60);

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
    shortNames: [wd]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

async fn configmap_from_manifest(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let server = env.start_server().await;
    let kubectl = Kubectl::new(binary, &env, &server);
    let manifest = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: red
"#;
    let out = kubectl
        .run_with_stdin(&["create", "-f", "-"], manifest)
        .await;
    assert_eq!(out.trim(), "configmap/settings created");

    let yaml = kubectl
        .run(&["get", "configmap", "settings", "-o", "yaml"])
        .await;
    for line in [
        "kind: ConfigMap",
        "  name: settings",
        "  namespace: default",
        "  color: red",
    ] {
        assert!(
            yaml.lines().any(|l| l == line),
            "no line {line:?} in:\n{yaml}"
        );
    }
    assert!(yaml.contains("  uid: "), "{yaml}");
    assert!(yaml.contains("  resourceVersion: "), "{yaml}");
    let color = kubectl
        .run(&["get", "cm", "settings", "-o", "jsonpath={.data.color}"])
        .await;
    assert_eq!(color, "red");

    let out = kubectl
        .run(&["label", "configmap", "settings", "tier=backend"])
        .await;
    assert_eq!(out.trim(), "configmap/settings labeled");
    let out = kubectl
        .run(&["annotate", "configmap", "settings", "owner=team-a"])
        .await;
    assert_eq!(out.trim(), "configmap/settings annotated");
    let selected = kubectl
        .run(&[
            "get",
            "cm",
            "-l",
            "tier=backend",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
        .await;
    assert_eq!(selected, "settings");

    let out = kubectl
        .run(&[
            "patch",
            "configmap",
            "settings",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"size":"large"}}"#,
        ])
        .await;
    assert_eq!(out.trim(), "configmap/settings patched");
    kubectl
        .run(&[
            "patch",
            "configmap",
            "settings",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/data/color","value":"blue"}]"#,
        ])
        .await;
    // A strategic merge patch, kubectl's default for built-in kinds.
    kubectl
        .run(&[
            "patch",
            "configmap",
            "settings",
            "-p",
            r#"{"data":{"shape":"round"}}"#,
        ])
        .await;

    let object = kubectl.get_json(&["configmap", "settings"]).await;
    assert_eq!(
        object["data"],
        serde_json::json!({"color": "blue", "size": "large", "shape": "round"})
    );
    assert_eq!(
        object["metadata"]["labels"],
        serde_json::json!({"tier": "backend"})
    );
    assert_eq!(object["metadata"]["annotations"]["owner"], "team-a");

    let out = kubectl.run(&["delete", "configmap", "settings"]).await;
    assert_eq!(out.trim(), r#"configmap "settings" deleted"#);
    let error = kubectl.fails(&["get", "configmap", "settings"]).await;
    assert!(
        error.contains(r#"Error from server (NotFound): configmaps "settings" not found"#),
        "{error}"
    );
}

async fn configmap_watch(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let server = env.start_server().await;
    let kubectl = Kubectl::new(binary, &env, &server);
    kubectl
        .run(&["create", "configmap", "watched", "--from-literal=color=red"])
        .await;

    let mut watch = kubectl.spawn(&[
        "get",
        "configmaps",
        "--watch",
        "--output-watch-events",
        "-o",
        r#"jsonpath={.type} {.object.metadata.name} {.object.data.color}{"\n"}"#,
    ]);
    // The initial list shows the existing object; the watch starts from the list's
    // resourceVersion, so nothing made after this line can be missed.
    watch.wait_for_line("ADDED watched red").await;

    kubectl
        .run(&[
            "patch",
            "configmap",
            "watched",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"color":"blue"}}"#,
        ])
        .await;
    watch.wait_for_line("MODIFIED watched blue").await;
    kubectl
        .run(&[
            "create",
            "configmap",
            "second",
            "--from-literal=color=green",
        ])
        .await;
    watch.wait_for_line("ADDED second green").await;
    kubectl.run(&["delete", "configmap", "second"]).await;
    watch.wait_for_line("DELETED second green").await;
    watch.stop().await;
}

/// `kubectl create configmap|namespace|secret` build typed objects and send them as protobuf.
async fn typed_create_commands(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let server = env.start_server().await;
    let kubectl = Kubectl::new(binary, &env, &server);

    let out = kubectl
        .run(&[
            "create",
            "configmap",
            "literal",
            "--from-literal=a=b",
            "--from-literal=c=d",
        ])
        .await;
    assert_eq!(out.trim(), "configmap/literal created");
    let configmap = kubectl.get_json(&["configmap", "literal"]).await;
    assert_eq!(configmap["data"], serde_json::json!({"a": "b", "c": "d"}));
    assert!(configmap["metadata"]["uid"].is_string(), "{configmap}");

    let out = kubectl.run(&["create", "namespace", "team-a"]).await;
    assert_eq!(out.trim(), "namespace/team-a created");
    let namespace = kubectl.get_json(&["namespace", "team-a"]).await;
    assert_eq!(namespace["metadata"]["name"], "team-a");

    let out = kubectl
        .run(&[
            "create",
            "secret",
            "generic",
            "token",
            "-n",
            "team-a",
            "--from-literal=key=s3cret",
        ])
        .await;
    assert_eq!(out.trim(), "secret/token created");
    let secret = kubectl.get_json(&["secret", "token", "-n", "team-a"]).await;
    assert_eq!(secret["type"], "Opaque");
    // "s3cret", base64-encoded.
    assert_eq!(secret["data"], serde_json::json!({"key": "czNjcmV0"}));
    let namespaces = kubectl
        .run(&[
            "get",
            "namespaces",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
        .await;
    assert!(
        namespaces.split(' ').any(|name| name == "team-a"),
        "{namespaces}"
    );
}

async fn custom_resource_lifecycle(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let server = env.start_server().await;
    let kubectl = Kubectl::new(binary, &env, &server);
    kubectl.create_widget_crd().await;

    let resources = kubectl.run(&["api-resources"]).await;
    assert!(
        resources.lines().any(|line| {
            line.split_whitespace().collect::<Vec<_>>()
                == ["widgets", "wd", "example.com/v1", "true", "Widget"]
        }),
        "no widgets row (with shortname wd) in:\n{resources}"
    );

    let manifest = r#"
apiVersion: example.com/v1
kind: Widget
metadata:
  name: gear
spec:
  color: red
  teeth: 12
"#;
    let out = kubectl
        .run_with_stdin(&["create", "-f", "-"], manifest)
        .await;
    assert_eq!(out.trim(), "widget.example.com/gear created");

    let yaml = kubectl.run(&["get", "widget", "gear", "-o", "yaml"]).await;
    for line in [
        "apiVersion: example.com/v1",
        "kind: Widget",
        "  name: gear",
        "  color: red",
        "  teeth: 12",
        "  generation: 1",
    ] {
        assert!(
            yaml.lines().any(|l| l == line),
            "no line {line:?} in:\n{yaml}"
        );
    }
    let color = kubectl
        .run(&["get", "wd", "gear", "-o", "jsonpath={.spec.color}"])
        .await;
    assert_eq!(color, "red");

    // The CRD is in the `all` category.
    let all = kubectl.run(&["get", "all"]).await;
    assert!(
        all.lines().any(|line| {
            let name = line.split_whitespace().next();
            name == Some("gear") || name == Some("widget.example.com/gear")
        }),
        "gear missing from `kubectl get all`:\n{all}"
    );
    let listed = kubectl.run(&["get", "widgets"]).await;
    assert!(
        listed
            .lines()
            .any(|line| line.split_whitespace().next() == Some("gear")),
        "{listed}"
    );

    let out = kubectl
        .run(&["label", "widget", "gear", "size=small"])
        .await;
    assert_eq!(out.trim(), "widget.example.com/gear labeled");
    let out = kubectl
        .run(&["annotate", "wd", "gear", "owner=team-b"])
        .await;
    assert_eq!(out.trim(), "widget.example.com/gear annotated");
    let out = kubectl
        .run(&[
            "patch",
            "widget",
            "gear",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"color":"blue"}}"#,
        ])
        .await;
    assert_eq!(out.trim(), "widget.example.com/gear patched");
    kubectl
        .run(&[
            "patch",
            "widget",
            "gear",
            "--type",
            "json",
            "-p",
            r#"[{"op":"replace","path":"/spec/teeth","value":24}]"#,
        ])
        .await;
    kubectl
        .run(&[
            "patch",
            "widget",
            "gear",
            "--subresource",
            "status",
            "--type",
            "merge",
            "-p",
            r#"{"status":{"phase":"Spinning"}}"#,
        ])
        .await;
    // Custom resources take no strategic merge patch; kubectl reports the server's 415.
    let error = kubectl
        .fails(&[
            "patch",
            "widget",
            "gear",
            "-p",
            r#"{"spec":{"color":"green"}}"#,
        ])
        .await;
    assert!(
        error.contains("application/strategic-merge-patch+json is not supported"),
        "{error}"
    );

    let widget = kubectl.get_json(&["widget", "gear"]).await;
    assert_eq!(
        widget["spec"],
        serde_json::json!({"color": "blue", "teeth": 24})
    );
    assert_eq!(widget["status"], serde_json::json!({"phase": "Spinning"}));
    assert_eq!(
        widget["metadata"]["labels"],
        serde_json::json!({"size": "small"})
    );
    assert_eq!(widget["metadata"]["annotations"]["owner"], "team-b");
    // Two spec changes; labels, annotations and status do not count.
    assert_eq!(widget["metadata"]["generation"], 3, "{widget}");
    let selected = kubectl
        .run(&[
            "get",
            "wd",
            "-l",
            "size=small",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
        .await;
    assert_eq!(selected, "gear");

    let out = kubectl.run(&["delete", "widget", "gear"]).await;
    assert_eq!(out.trim(), r#"widget.example.com "gear" deleted"#);
    let error = kubectl.fails(&["get", "widget", "gear"]).await;
    assert!(
        error.contains(r#"Error from server (NotFound): widgets.example.com "gear" not found"#),
        "{error}"
    );
}

async fn custom_resource_watch(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let server = env.start_server().await;
    let kubectl = Kubectl::new(binary, &env, &server);
    kubectl.create_widget_crd().await;
    kubectl.create_widget("first", &[]).await;

    // The default (table) output, as a person would run it.
    let mut watch = kubectl.spawn(&["get", "widgets", "--watch"]);
    watch.wait_for_line_starting_with("first ").await;
    kubectl.create_widget("second", &[]).await;
    watch.wait_for_line_starting_with("second ").await;
    watch.stop().await;

    let mut watch = kubectl.spawn(&[
        "get",
        "widgets",
        "--watch",
        "--output-watch-events",
        "-o",
        r#"jsonpath={.type} {.object.metadata.name} {.object.spec.color}{"\n"}"#,
    ]);
    watch.wait_for_line("ADDED second red").await;
    kubectl
        .run(&[
            "patch",
            "wd",
            "second",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"color":"blue"}}"#,
        ])
        .await;
    watch.wait_for_line("MODIFIED second blue").await;
    kubectl.run(&["delete", "wd", "first"]).await;
    watch.wait_for_line("DELETED first red").await;
    watch.stop().await;
}

/// `kubectl delete` of an object with a finalizer waits until the finalizer is removed.
async fn delete_waits_for_finalizers(env: TestEnv) {
    let Some(binary) = kubectl_or_skip() else {
        return;
    };
    let server = env.start_server().await;
    let kubectl = Kubectl::new(binary, &env, &server);
    kubectl.create_widget_crd().await;
    kubectl.create_widget("held", &["example.com/hold"]).await;
    let configmap = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: [example.com/hold]
"#;
    kubectl
        .run_with_stdin(&["create", "-f", "-"], configmap)
        .await;

    for (kind, deleted) in [
        ("widget", r#"widget.example.com "held" deleted"#),
        ("configmap", r#"configmap "held" deleted"#),
    ] {
        let mut delete = kubectl.spawn(&["delete", kind, "held"]);
        // kubectl prints this once the server has answered the DELETE, then waits for the
        // object to go. It stays, marked for deletion, while the finalizer is there.
        delete.wait_for_line(deleted).await;
        let object = kubectl.get_json(&[kind, "held"]).await;
        assert!(
            object["metadata"]["deletionTimestamp"].is_string(),
            "{kind} held: {object}"
        );
        assert_eq!(
            object["metadata"]["finalizers"],
            serde_json::json!(["example.com/hold"])
        );

        kubectl
            .run(&[
                "patch",
                kind,
                "held",
                "--type",
                "json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ])
            .await;
        let status = delete.wait().await;
        assert!(status.success(), "kubectl delete {kind} held: {status}");
        let error = kubectl.fails(&["get", kind, "held"]).await;
        assert!(error.contains("(NotFound)"), "{error}");
    }
}

/// kubectl from `PATH`, else `/usr/bin/kubectl`; `None` (after a loud SKIP line) when there
/// is none and `CORRAL_REQUIRE_KUBECTL` is not `1`.
pub(crate) fn kubectl_or_skip() -> Option<PathBuf> {
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

/// kubectl, run with a kubeconfig and a discovery cache of its own.
pub(crate) struct Kubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
    cache_dir: PathBuf,
}

impl Kubectl {
    pub(crate) fn new(binary: PathBuf, env: &TestEnv, server: &ServerProcess) -> Kubectl {
        Kubectl {
            binary,
            kubeconfig: server.kubeconfig().to_path_buf(),
            cache_dir: env.scratch_dir().join("kubectl-cache"),
        }
    }

    /// The same kubectl with another kubeconfig (another user).
    pub(crate) fn with_kubeconfig(self, kubeconfig: PathBuf) -> Kubectl {
        Kubectl { kubeconfig, ..self }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg(format!("--cache-dir={}", self.cache_dir.display()))
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .kill_on_drop(true);
        command
    }

    async fn output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut command = self.command(args);
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
        match tokio::time::timeout(COMMAND_DEADLINE, child.wait_with_output()).await {
            Ok(output) => output.expect("waiting for kubectl"),
            Err(_) => panic!("kubectl {args:?} did not finish within {COMMAND_DEADLINE:?}"),
        }
    }

    /// Runs kubectl, requires success and returns its standard output.
    pub(crate) async fn run(&self, args: &[&str]) -> String {
        self.checked(args, None).await
    }

    pub(crate) async fn run_with_stdin(&self, args: &[&str], stdin: &str) -> String {
        self.checked(args, Some(stdin)).await
    }

    async fn checked(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.output(args, stdin).await;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "kubectl {args:?} failed ({}):\nstdout: {stdout}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// Runs kubectl, requires failure and returns its standard error.
    pub(crate) async fn fails(&self, args: &[&str]) -> String {
        let output = self.output(args, None).await;
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

    async fn create_widget_crd(&self) {
        let out = self
            .run_with_stdin(&["create", "-f", "-"], WIDGET_CRD)
            .await;
        assert_eq!(
            out.trim(),
            "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
        );
    }

    async fn create_widget(&self, name: &str, finalizers: &[&str]) {
        let widget = serde_json::json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": name, "finalizers": finalizers},
            "spec": {"color": "red"},
        });
        let out = self
            .run_with_stdin(&["create", "-f", "-"], &widget.to_string())
            .await;
        assert_eq!(out.trim(), format!("widget.example.com/{name} created"));
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

    async fn wait_for_line_starting_with(&mut self, prefix: &str) {
        self.wait_for(prefix, |line| line.starts_with(prefix)).await;
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
        let found = matches!(tokio::time::timeout(COMMAND_DEADLINE, read).await, Ok(true));
        if !found {
            let _ = self.child.start_kill();
            let mut stderr = String::new();
            if let Some(mut pipe) = self.child.stderr.take() {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), pipe.read_to_string(&mut stderr))
                        .await;
            }
            panic!(
                "{} never printed {what:?} (output ended or {COMMAND_DEADLINE:?} passed).\n\
                 It printed:\n{}\nstderr:\n{stderr}",
                self.description,
                self.seen.join("\n")
            );
        }
    }

    /// Waits for kubectl to exit by itself.
    async fn wait(mut self) -> ExitStatus {
        match tokio::time::timeout(COMMAND_DEADLINE, self.child.wait()).await {
            Ok(status) => status.expect("waiting for kubectl"),
            Err(_) => panic!(
                "{} did not exit within {COMMAND_DEADLINE:?}",
                self.description
            ),
        }
    }

    /// Kills kubectl (a watch never ends by itself) and reaps it.
    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}
