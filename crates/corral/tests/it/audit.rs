//! The audit log (`--audit-policy-file`, `--audit-log-path`): kubectl's writes by a named user
//! are recorded as `audit.k8s.io/v1` Events at the level the policy gives them, and a Secret at
//! `Metadata` carries no data.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use crate::kubectl::{Kubectl, kubectl_or_skip};
use crate::support::TestEnv;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Metadata
    resources:
      - group: ""
        resources: [secrets]
  - level: Request
    users: [alice]
    verbs: [delete]
    omitStages: [RequestReceived]
  - level: RequestResponse
    users: [alice]
    verbs: [create, patch]
    resources:
      - group: ""
        resources: [configmaps]
  - level: None
"#;

/// The events of the audit file, once `ready` holds for them (the writer is asynchronous).
async fn events(path: &std::path::Path, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect();
        if ready(&events) {
            return events;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the audit log never had the expected events:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn find<'a>(events: &'a [Value], verb: &str, resource: &str, stage: &str) -> Option<&'a Value> {
    events.iter().find(|event| {
        event["verb"] == verb
            && event["objectRef"]["resource"] == resource
            && event["stage"] == stage
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_by_a_named_user_are_recorded_at_the_policy_level() {
    crate::support::run(crate::support::Backend::Sqlite, |env: TestEnv| async move {
        let Some(binary) = kubectl_or_skip() else {
            return;
        };
        let scratch = env.scratch_dir();
        let policy = scratch.join("policy.yaml");
        std::fs::write(&policy, POLICY).unwrap();
        let tokens = scratch.join("tokens.csv");
        std::fs::write(
            &tokens,
            "alice-token,alice,1001,\"system:masters,developers\"\n",
        )
        .unwrap();
        let log = scratch.join("audit.log");
        let server = env
            .start_server_with(&[
                "--audit-policy-file",
                policy.to_str().unwrap(),
                "--audit-log-path",
                log.to_str().unwrap(),
                "--token-auth-file",
                tokens.to_str().unwrap(),
            ])
            .await;
        let mut user = serde_yaml::Mapping::new();
        user.insert("token".into(), "alice-token".into());
        let alice = crate::security::with_user(
            server.kubeconfig(),
            serde_yaml::Value::Mapping(user),
            "alice.kubeconfig",
        );
        let kubectl = Kubectl::new(binary, &env, &server).with_kubeconfig(alice);
        let password = format!("hunter2-{}", uuid::Uuid::new_v4());
        kubectl
            .run(&[
                "create",
                "configmap",
                "settings",
                "--from-literal=color=red",
            ])
            .await;
        kubectl
            .run(&[
                "patch",
                "configmap",
                "settings",
                "-p",
                r#"{"data":{"color":"blue"}}"#,
            ])
            .await;
        kubectl.run(&["get", "configmap", "settings"]).await;
        kubectl
            .run(&[
                "create",
                "secret",
                "generic",
                "db",
                &format!("--from-literal=password={password}"),
            ])
            .await;
        kubectl.run(&["delete", "configmap", "settings"]).await;

        let events = events(&log, |events| {
            find(events, "delete", "configmaps", "ResponseComplete").is_some()
        })
        .await;

        // The create: RequestResponse, both stages, one auditID, who and from where.
        let received =
            find(&events, "create", "configmaps", "RequestReceived").expect("RequestReceived");
        let create =
            find(&events, "create", "configmaps", "ResponseComplete").expect("ResponseComplete");
        assert_eq!(received["auditID"], create["auditID"]);
        assert_eq!(create["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(create["kind"], "Event");
        assert_eq!(create["level"], "RequestResponse");
        assert_eq!(create["user"]["username"], "alice");
        assert_eq!(create["user"]["uid"], "1001");
        assert!(
            create["user"]["groups"]
                .as_array()
                .unwrap()
                .contains(&"developers".into()),
            "{create}"
        );
        assert_eq!(create["sourceIPs"][0], "127.0.0.1");
        assert!(
            create["userAgent"].as_str().unwrap().starts_with("kubectl"),
            "{create}"
        );
        assert_eq!(create["objectRef"]["namespace"], "default");
        assert_eq!(create["objectRef"]["apiVersion"], "v1");
        assert_eq!(create["responseStatus"]["code"], 201);
        assert!(
            create["requestURI"]
                .as_str()
                .unwrap()
                .starts_with("/api/v1/namespaces/default/configmaps")
        );
        assert_eq!(create["requestObject"]["data"]["color"], "red");
        assert_eq!(create["responseObject"]["metadata"]["name"], "settings");
        assert!(create["requestReceivedTimestamp"].is_string());
        assert!(create["stageTimestamp"].is_string());

        let patch = find(&events, "patch", "configmaps", "ResponseComplete").expect("the patch");
        assert_eq!(patch["level"], "RequestResponse");
        assert_eq!(patch["objectRef"]["name"], "settings");
        assert_eq!(
            patch["requestObject"],
            serde_json::json!({"data": {"color": "blue"}})
        );
        assert_eq!(patch["responseObject"]["data"]["color"], "blue");

        // The delete: Request, without RequestReceived (the rule omits it), no response body.
        let delete = find(&events, "delete", "configmaps", "ResponseComplete").unwrap();
        assert_eq!(delete["level"], "Request");
        assert!(delete.get("responseObject").is_none(), "{delete}");
        assert!(find(&events, "delete", "configmaps", "RequestReceived").is_none());

        // The read matched `None`: not recorded.
        assert!(find(&events, "get", "configmaps", "ResponseComplete").is_none());

        // The Secret: Metadata, no objects, its value nowhere in the file.
        let secret = find(&events, "create", "secrets", "ResponseComplete").expect("the Secret");
        assert_eq!(secret["level"], "Metadata");
        assert_eq!(secret["responseStatus"]["code"], 201);
        assert!(secret.get("requestObject").is_none(), "{secret}");
        assert!(secret.get("responseObject").is_none(), "{secret}");
        let text = std::fs::read_to_string(&log).unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&password);
        assert!(!text.contains(&password) && !text.contains(&encoded));
        assert_eq!(
            std::fs::metadata(&log).unwrap().permissions().mode() & 0o777,
            0o600
        );
    })
    .await;
}

/// `--audit-log-maxsize` and `--audit-log-maxbackup` as kube-apiserver's: the log rotates to
/// `audit-<time>.log` before an event would take it past the size, and only the newest backup
/// is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_rotates_and_keeps_max_backups() {
    crate::support::run(crate::support::Backend::Sqlite, |env: TestEnv| async move {
        let scratch = env.scratch_dir();
        let policy = scratch.join("policy.yaml");
        std::fs::write(
            &policy,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: RequestResponse\n    resources:\n      - group: \"\"\n        resources: [configmaps]\n  - level: None\n",
        )
        .unwrap();
        let logs = scratch.join("logs");
        std::fs::create_dir(&logs).unwrap();
        let log = logs.join("audit.log");
        let server = env
            .start_server_with(&[
                "--audit-policy-file",
                policy.to_str().unwrap(),
                "--audit-log-path",
                log.to_str().unwrap(),
                "--audit-log-maxsize",
                "1",
                "--audit-log-maxbackup",
                "1",
            ])
            .await;
        let configmaps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(server.client(), "default");
        // Each create's event carries the 300 KB object twice (request and response): about
        // 600 KB, so every second event starts a new file.
        for index in 0..5 {
            let configmap: k8s_openapi::api::core::v1::ConfigMap =
                serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("big-{index}")},
                    "data": {"blob": "x".repeat(300_000)},
                }))
                .unwrap();
            configmaps.create(&Default::default(), &configmap).await.unwrap();
        }
        let names = |directory: &std::path::Path| {
            let mut names: Vec<String> = std::fs::read_dir(directory)
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        // The last create is in the current file, once written.
        let current = events(&log, |events| {
            events
                .iter()
                .any(|event| event["objectRef"]["name"] == "big-4")
        })
        .await;
        assert_eq!(current.len(), 1, "the current file holds the last event only");
        let files = names(&logs);
        assert_eq!(files.len(), 2, "{files:?}");
        let backup = &files[0];
        assert!(backup.starts_with("audit-") && backup.ends_with(".log"), "{backup}");
        // The backup is whole JSON lines: the event before the last.
        let text = std::fs::read_to_string(logs.join(backup)).unwrap();
        let lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        assert_eq!(lines.len(), 1, "{backup}");
        assert_eq!(lines[0]["objectRef"]["name"], "big-3");
        for file in &files {
            let size = std::fs::metadata(logs.join(file)).unwrap().len();
            assert!(size <= 1024 * 1024, "{file}: {size} bytes");
        }
    })
    .await;
}
