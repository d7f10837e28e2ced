//! The CLI end to end: the built `corral` binary as a management plane (`corral up`, or
//! `corral apiserver` plus `corral init` and `corral controllers`) and as the client commands
//! (generate, describe, get, scale, rollout, delete), with kubectl applying what generate
//! prints when kubectl is here (CORRAL_REQUIRE_KUBECTL=1 requires it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use crate::support::{self, tool_available};

/// How long a cluster may take to come up or go. Generous: CI machines are busy compiling.
const DEADLINE: Duration = Duration::from_secs(180);

/// A `corral` process of the test, killed when dropped; its output goes to `log`.
pub(crate) struct Process {
    child: Child,
    log: PathBuf,
}

impl Process {
    pub(crate) fn spawn(args: &[&str], log: PathBuf) -> Process {
        let file = std::fs::File::create(&log).expect("creating a log file");
        let child = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(args)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .stderr(Stdio::from(file))
            .spawn()
            .expect("spawning corral");
        Process { child, log }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then waits for the process to exit; how it exited.
    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        self.child.wait().expect("waiting for corral to exit")
    }

    /// SIGKILL: no chance to release anything.
    pub(crate) fn kill_9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("--- {} ---\n{}--- end ---", self.log.display(), self.log());
        }
    }
}

/// `corral up` on `data_dir`, port 0; waits until it printed the export line.
pub(crate) async fn start_up(data_dir: &Path, log: PathBuf) -> (Process, PathBuf) {
    let kubeconfig = data_dir.join("kubeconfig");
    let _ = std::fs::remove_file(&kubeconfig);
    let process = Process::spawn(
        &[
            "up",
            "--data-dir",
            data_dir.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        log,
    );
    let absolute = std::path::absolute(&kubeconfig).unwrap();
    let line = format!("export KUBECONFIG={}", absolute.display());
    eventually("corral up to print the export line", || async {
        process.log().contains(&line).then_some(())
    })
    .await;
    let log = process.log();
    for step in [
        "✓ Store opened",
        "✓ API server listening",
        "✓ CRDs installed",
        "✓ Controllers started",
    ] {
        assert!(log.contains(step), "no {step:?} in:\n{log}");
    }
    (process, kubeconfig)
}

/// Runs `corral ARGS` to completion with the kubeconfig in `KUBECONFIG`.
pub(crate) fn corral(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("running corral")
}

/// `corral ARGS`, which must succeed; its standard output.
pub(crate) fn corral_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let output = corral(kubeconfig, args);
    assert!(
        output.status.success(),
        "corral {args:?} failed ({}):\n{}{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// `corral ARGS`, which must fail with `code` and say one line containing `needle`.
fn corral_fails(kubeconfig: &Path, args: &[&str], code: i32, needle: &str) -> String {
    let output = corral(kubeconfig, args);
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(code),
        "corral {args:?}: {stderr}"
    );
    assert!(stderr.contains(needle), "corral {args:?}: {stderr}");
    if code == 1 {
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "not one line: {stderr}"
        );
        assert!(stderr.starts_with("error: "), "{stderr}");
        for debug in ["Error {", "Status {", "panicked", "backtrace"] {
            assert!(
                !stderr.contains(debug),
                "corral {args:?} printed {debug}: {stderr}"
            );
        }
    }
    stderr
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {DEADLINE:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) async fn client(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Generates a machine-based cluster and applies it with kubectl (or, without kubectl, with
/// `corral_cli::apply`'s server-side apply through kube-rs).
async fn create_cluster(kubeconfig: &Path, name: &str, workers: u32, scratch: &Path) {
    let yaml = corral_ok(
        kubeconfig,
        &[
            "generate",
            "cluster",
            name,
            "--flavor",
            "machine-based",
            "--kubernetes-version",
            "v1.32.0",
            "--control-plane-machine-count",
            "1",
            "--worker-machine-count",
            &workers.to_string(),
        ],
    );
    match support::kubectl() {
        Some(kubectl) => {
            let file = scratch.join(format!("{name}.yaml"));
            std::fs::write(&file, &yaml).unwrap();
            let output = Command::new(kubectl)
                .args(["apply", "-f"])
                .arg(&file)
                .args(["--cache-dir"])
                .arg(scratch.join("kubectl-cache"))
                .env("KUBECONFIG", kubeconfig)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "kubectl apply: {}",
                text(&output.stderr)
            );
            assert!(
                text(&output.stdout).contains(&format!("cluster.cluster.x-k8s.io/{name} created"))
            );
        }
        None => {
            let connection = corral_cli::Connection::open(&corral_cli::KubeconfigSource {
                flag: Some(kubeconfig.to_path_buf()),
                ..Default::default()
            })
            .await
            .unwrap();
            corral_cli::apply::apply_yaml(&connection, &yaml)
                .await
                .unwrap();
        }
    }
}

/// The describe tree as data.
fn describe_json(kubeconfig: &Path, name: &str) -> Value {
    serde_json::from_str(&corral_ok(
        kubeconfig,
        &["describe", "cluster", name, "-o", "json"],
    ))
    .unwrap()
}

fn condition_status(node: &Value, type_: &str) -> Option<String> {
    node["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
        .map(String::from)
}

pub(crate) async fn wait_available(kubeconfig: &Path, name: &str, machines: usize) {
    eventually(
        &format!("cluster {name} to be available with {machines} ready machines"),
        || async {
            let tree = describe_json(kubeconfig, name);
            let ready = tree["replicas"].as_str()
                == Some(format!("{machines}/{machines}").as_str())
                && tree["ready"].as_str() == Some(machines.to_string().as_str());
            (condition_status(&tree, "Available").as_deref() == Some("True") && ready).then_some(())
        },
    )
    .await;
}

pub(crate) fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("corral-cli-")
        .tempdir()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_from_generate_to_delete_with_the_cli() {
    let dir = scratch();
    let (_up, kubeconfig) = start_up(&dir.path().join("data"), dir.path().join("up.log")).await;

    // init is idempotent and the inventory is upstream's.
    corral_ok(&kubeconfig, &["init"]);
    let providers = corral_ok(&kubeconfig, &["get", "providers"]);
    for expected in [
        "capi-system                        cluster-api",
        "capi-kubeadm-bootstrap-system      bootstrap-kubeadm",
        "capi-kubeadm-control-plane-system  control-plane-kubeadm",
        "capim-system                       infrastructure-in-memory",
    ] {
        assert!(providers.contains(expected), "{providers}");
    }

    create_cluster(&kubeconfig, "dev", 2, dir.path()).await;
    wait_available(&kubeconfig, "dev", 3).await;

    let tree = corral_ok(&kubeconfig, &["describe", "cluster", "dev"]);
    assert!(!tree.contains('\x1b'), "colour in a pipe:\n{tree}");
    // The NAME column is as wide as the header's first column.
    let width = tree.lines().next().unwrap().find("REPLICAS").unwrap();
    let names: Vec<String> = tree
        .lines()
        .map(|line| {
            line.chars()
                .take(width)
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "NAME",
            "Cluster/dev",
            "├─ClusterInfrastructure - DevCluster/dev",
            "├─ControlPlane",
            "│ └─Machine/dev-control-plane-0",
            "└─Workers",
            "  └─MachineDeployment/dev-md-0",
            "    └─2 Machines...",
        ],
        "{tree}"
    );
    let with_conditions = corral_ok(
        &kubeconfig,
        &["describe", "cluster", "dev", "--show-conditions", "Cluster"],
    );
    assert!(
        with_conditions.contains("├─InfrastructureReady"),
        "{with_conditions}"
    );

    let clusters = corral_ok(&kubeconfig, &["get", "clusters"]);
    let row: Vec<&str> = clusters
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(row[..4], ["dev", "True", "1/1", "2/2"], "{clusters}");

    // The workload cluster's kubeconfig reaches its (simulated) API server and its Nodes.
    let workload_kubeconfig = dir.path().join("dev.kubeconfig");
    std::fs::write(
        &workload_kubeconfig,
        corral_ok(&kubeconfig, &["get", "kubeconfig", "dev"]),
    )
    .unwrap();
    let workload = client(&workload_kubeconfig).await;
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(workload);
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );

    // Scale through the scale subresource.
    assert_eq!(
        corral_ok(&kubeconfig, &["scale", "md/dev-md-0", "--replicas", "3"]).trim(),
        "machinedeployment.cluster.x-k8s.io/dev-md-0 scaled"
    );
    wait_available(&kubeconfig, "dev", 4).await;

    // Pause and resume, refusing to pause twice.
    corral_ok(&kubeconfig, &["rollout", "pause", "md/dev-md-0"]);
    corral_fails(
        &kubeconfig,
        &["rollout", "pause", "md/dev-md-0"],
        1,
        "already paused",
    );
    corral_fails(
        &kubeconfig,
        &["rollout", "restart", "md/dev-md-0"],
        1,
        "resume it first",
    );
    corral_ok(&kubeconfig, &["rollout", "resume", "md/dev-md-0"]);

    // A restart makes a second revision; history lists both; undo refuses a revision that
    // does not exist.
    assert!(corral_ok(&kubeconfig, &["rollout", "restart", "md/dev-md-0"]).contains("restarted"));
    let history = eventually("a second revision", || async {
        let history = corral_ok(&kubeconfig, &["rollout", "history", "md/dev-md-0"]);
        history
            .lines()
            .any(|line| line.starts_with("2 "))
            .then_some(history)
    })
    .await;
    assert!(history.contains("REVISION  MACHINESET"), "{history}");
    corral_fails(
        &kubeconfig,
        &["rollout", "undo", "md/dev-md-0", "--to-revision", "9"],
        1,
        "no revision 9",
    );
    assert!(
        corral_ok(
            &kubeconfig,
            &["rollout", "undo", "md/dev-md-0", "--to-revision", "1"]
        )
        .contains("rolled back")
    );

    // Delete waits until everything is gone.
    let deleted = corral_ok(
        &kubeconfig,
        &["delete", "cluster", "dev", "--wait", "--timeout", "180"],
    );
    assert!(deleted.contains("Cluster dev is gone"), "{deleted}");
    let machines: Api<corral_api::Machine> = Api::namespaced(client(&kubeconfig).await, "default");
    assert!(
        machines
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    corral_fails(
        &kubeconfig,
        &["describe", "cluster", "dev"],
        1,
        "Cluster dev not found in namespace default",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_get_one_line_saying_what_to_do() {
    let dir = scratch();
    // No server behind the kubeconfig: a port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let nowhere = dir.path().join("nowhere.kubeconfig");
    std::fs::write(
        &nowhere,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://{closed}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {{}}\n"
        ),
    )
    .unwrap();
    for args in [
        &["get", "clusters"][..],
        &["describe", "cluster", "x"],
        &["init"],
        &["scale", "md/x", "--replicas", "1"],
    ] {
        corral_fails(&nowhere, args, 1, "cannot reach the API server");
    }

    // The global flags go before commands that use a kubeconfig only; move's destinations
    // exclude one another, and a restore has no source.
    corral_fails(
        &nowhere,
        &["--kubeconfig", "x", "up"],
        2,
        "`corral up` uses no kubeconfig",
    );
    corral_fails(
        &nowhere,
        &["version", "--kubeconfig", "x"],
        2,
        "`corral version` uses no kubeconfig",
    );
    // Between a command and its subcommand too, as clusterctl.
    corral_fails(
        &nowhere,
        &[
            "describe",
            "--kubeconfig",
            nowhere.to_str().unwrap(),
            "cluster",
            "x",
        ],
        1,
        "cannot reach the API server",
    );
    corral_fails(
        &nowhere,
        &["move", "--to-directory", "d", "--to-kubeconfig", "k"],
        2,
        "cannot be used with",
    );
    corral_fails(
        &nowhere,
        &["move", "--from-directory", "d", "--resume"],
        2,
        "cannot be used with",
    );
    corral_fails(
        &nowhere,
        &["--kubeconfig", "x", "move", "--from-directory", "d"],
        2,
        "--from-directory restores into --to-kubeconfig FILE",
    );
    corral_fails(&nowhere, &["move"], 2, "--to-kubeconfig <FILE>");
    // A missing backup directory is found before the server is asked anything.
    let global_kubeconfig = nowhere.to_str().unwrap();
    corral_fails(
        &nowhere,
        &[
            "--kubeconfig",
            global_kubeconfig,
            "move",
            "--to-directory",
            "missing",
        ],
        1,
        "the directory missing does not exist; create it (mkdir -p missing)",
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    corral_fails(
        &nowhere,
        &[
            "--kubeconfig",
            global_kubeconfig,
            "move",
            "--to-directory",
            empty.to_str().unwrap(),
        ],
        1,
        "cannot reach the API server",
    );

    // No kubeconfig anywhere.
    let output = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["get", "clusters"])
        .env_remove("KUBECONFIG")
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("no kubeconfig found"), "{stderr}");
    assert!(stderr.contains("corral up"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");

    // --write-to puts the manifests in a file instead of standard output.
    let manifests = dir.path().join("dev.yaml");
    let printed = corral_ok(
        &nowhere,
        &[
            "generate",
            "cluster",
            "dev",
            "--kubernetes-version",
            "v1.32.0",
            "--write-to",
            manifests.to_str().unwrap(),
        ],
    );
    assert_eq!(printed, "");
    let written = std::fs::read_to_string(&manifests).unwrap();
    assert!(written.contains("kind: KubeadmControlPlane"), "{written}");
    assert!(written.contains("version: \"v1.32.0\""), "{written}");

    // A template variable left unset; a flavor that does not exist.
    corral_fails(
        &nowhere,
        &["generate", "cluster", "dev"],
        1,
        "KUBERNETES_VERSION is not set; pass --kubernetes-version",
    );
    corral_fails(
        &nowhere,
        &[
            "generate",
            "cluster",
            "dev",
            "--flavor",
            "x",
            "--kubernetes-version",
            "v1.32.0",
        ],
        2,
        "--flavor must be one of",
    );
    corral_fails(
        &nowhere,
        &[
            "generate",
            "cluster",
            "Bad_Name",
            "--kubernetes-version",
            "v1.32.0",
        ],
        2,
        "cluster name",
    );

    // A context the kubeconfig does not have, named by the flag (usage) or by its
    // current-context.
    corral_fails(
        &nowhere,
        &["get", "clusters", "--kubeconfig-context", "elsewhere"],
        2,
        "has no context elsewhere (it has: c); pass one of them to --kubeconfig-context",
    );
    let dangling = dir.path().join("dangling.kubeconfig");
    std::fs::write(
        &dangling,
        std::fs::read_to_string(&nowhere)
            .unwrap()
            .replace("current-context: c", "current-context: gone"),
    )
    .unwrap();
    corral_fails(
        &dangling,
        &["get", "clusters"],
        1,
        "its current-context gone is not one of its contexts (c)",
    );

    // Usage errors: a bad flag value, a kind the command does not act on.
    corral_fails(
        &nowhere,
        &["scale", "md/x", "--replicas", "-1"],
        2,
        "-1 is not in 0..",
    );
    corral_fails(
        &nowhere,
        &["scale", "md/x", "--replicas", "many"],
        2,
        "invalid value 'many'",
    );
    corral_fails(
        &nowhere,
        &["scale", "pod/x", "--replicas", "1"],
        2,
        "use md/NAME or ms/NAME or kcp/NAME",
    );
    corral_fails(&nowhere, &["rollout", "history", "kcp/x"], 2, "use md/NAME");

    // A server without the CRDs, then an unknown cluster.
    let up_dir = dir.path().join("apiserver");
    let server = Process::spawn(
        &[
            "apiserver",
            "--data-dir",
            up_dir.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        dir.path().join("apiserver.log"),
    );
    let kubeconfig = up_dir.join("kubeconfig");
    eventually("the API server's kubeconfig", || async {
        kubeconfig.exists().then_some(())
    })
    .await;
    corral_fails(
        &kubeconfig,
        &["get", "clusters"],
        1,
        "run `corral init` first",
    );
    corral_fails(
        &kubeconfig,
        &["get", "providers"],
        1,
        "run `corral init` first",
    );
    corral_fails(&kubeconfig, &["controllers"], 1, "run `corral init` first");
    corral_ok(&kubeconfig, &["init"]);
    corral_fails(
        &kubeconfig,
        &["describe", "cluster", "ghost"],
        1,
        "Cluster ghost not found in namespace default",
    );
    corral_fails(
        &kubeconfig,
        &["get", "kubeconfig", "ghost"],
        1,
        "Cluster ghost not found",
    );
    corral_fails(
        &kubeconfig,
        &["scale", "md/ghost", "--replicas", "1"],
        1,
        "MachineDeployment ghost not found",
    );
    corral_fails(
        &kubeconfig,
        &["delete", "cluster", "ghost"],
        1,
        "Cluster ghost not found",
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corral_up_resumes_from_its_data_dir() {
    let dir = scratch();
    let data = dir.path().join("data");
    let (up, kubeconfig) = start_up(&data, dir.path().join("up-1.log")).await;
    create_cluster(&kubeconfig, "keep", 1, dir.path()).await;
    wait_available(&kubeconfig, "keep", 2).await;
    let names = |client: kube::Client| async move {
        let machines: Api<corral_api::Machine> = Api::namespaced(client, "default");
        let mut names: Vec<String> = machines
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|m| m.metadata.name.unwrap())
            .collect();
        names.sort();
        names
    };
    let before = names(client(&kubeconfig).await).await;
    assert_eq!(before.len(), 2);
    up.terminate();

    let (_up, kubeconfig) = start_up(&data, dir.path().join("up-2.log")).await;
    // The objects are there, under the same names...
    assert_eq!(names(client(&kubeconfig).await).await, before);
    // ...and the controllers reconcile them: a scale-up makes one more Machine.
    corral_ok(&kubeconfig, &["scale", "md/keep-md-0", "--replicas", "2"]);
    let after = eventually("a third machine", || async {
        let now = names(client(&kubeconfig).await).await;
        (now.len() == 3).then_some(now)
    })
    .await;
    assert!(
        before.iter().all(|name| after.contains(name)),
        "{before:?} -> {after:?}"
    );
    // The machines from before the restart come back to life in the new simulated cloud,
    // and the new one joins them.
    wait_available(&kubeconfig, "keep", 3).await;
}

/// `corral apiserver` on `<dir>/data`, port 0; its admin kubeconfig once written.
async fn start_apiserver(dir: &Path) -> (Process, PathBuf) {
    let data = dir.join("data");
    let server = Process::spawn(
        &[
            "apiserver",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        dir.join("apiserver.log"),
    );
    let kubeconfig = data.join("kubeconfig");
    eventually("the API server's kubeconfig", || async {
        kubeconfig.exists().then_some(())
    })
    .await;
    (server, kubeconfig)
}

/// Who holds the controllers' Lease.
async fn lease_holder(client: &kube::Client) -> Option<String> {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "corral-system");
    leases
        .get_opt("corral-controllers")
        .await
        .ok()
        .flatten()
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controller_replicas_elect_one_leader_and_the_other_takes_over() {
    let dir = scratch();
    let (_server, kubeconfig) = start_apiserver(dir.path()).await;
    assert!(corral_ok(&kubeconfig, &["init"]).contains("Provider capi-system/cluster-api"));
    let client = client(&kubeconfig).await;
    let replica = |identity: &str| {
        Process::spawn(
            &[
                "controllers",
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--identity",
                identity,
            ],
            dir.path().join(format!("{identity}.log")),
        )
    };
    let a = replica("replica-a");
    let leader = eventually("a leader", || async { lease_holder(&client).await }).await;
    assert_eq!(leader, "replica-a");
    let b = replica("replica-b");
    eventually("replica-b to stand by", || async {
        b.log()
            .contains("Standing by: replica-a is the leader")
            .then_some(())
    })
    .await;

    // The leader acts: a cluster comes up.
    create_cluster(&kubeconfig, "ha", 1, dir.path()).await;
    wait_available(&kubeconfig, "ha", 2).await;
    assert!(a.log().contains("Leading: running the controllers"));
    assert!(
        !b.log().contains("Leading"),
        "both replicas led:\n{}",
        b.log()
    );

    // The leader dies without releasing the Lease; the other takes over once it expires, and
    // acts: a scale-up is carried out.
    a.kill_9();
    eventually("replica-b to lead", || async {
        (lease_holder(&client).await.as_deref() == Some("replica-b")).then_some(())
    })
    .await;
    eventually("replica-b to run the controllers", || async {
        b.log()
            .contains("Leading: running the controllers")
            .then_some(())
    })
    .await;
    corral_ok(&kubeconfig, &["scale", "md/ha-md-0", "--replicas", "2"]);
    wait_available(&kubeconfig, "ha", 3).await;

    // A replica that shuts down releases the Lease at once.
    b.terminate();
    let released = lease_holder(&client).await;
    assert_eq!(released, None, "the Lease is still held by {released:?}");
}

/// `corral controllers` started on its own with the kubeconfig `corral kubeconfig controllers`
/// writes: it runs as the ServiceAccount corral-system/corral-controllers, reconciles a
/// cluster, and may not do what no component's ClusterRole grants; a provider's own
/// identity may not touch another provider's kinds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_controllers_run_as_their_own_service_account() {
    let dir = scratch();
    let (_server, admin) = start_apiserver(dir.path()).await;
    corral_ok(&admin, &["init"]);
    let own = dir.path().join("controllers.kubeconfig");
    let written = corral_ok(
        &admin,
        &[
            "kubeconfig",
            "controllers",
            "--write-to",
            own.to_str().unwrap(),
            "--duration",
            "2h",
        ],
    );
    assert!(
        written.contains("for controllers (its token expires at "),
        "{written}"
    );
    let text_of = |path: &Path| std::fs::read_to_string(path).unwrap();
    let written_kubeconfig = text_of(&own);
    assert!(
        written_kubeconfig.contains("tokenFile:"),
        "{written_kubeconfig}"
    );
    assert!(written_kubeconfig.contains("system:serviceaccount:corral-system:corral-controllers"));
    use std::os::unix::fs::PermissionsExt;
    let token_file = dir.path().join("controllers.kubeconfig.token");
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let controllers = Process::spawn(
        &[
            "controllers",
            "--kubeconfig",
            own.to_str().unwrap(),
            "--identity",
            "own",
        ],
        dir.path().join("controllers.log"),
    );
    create_cluster(&admin, "own", 1, dir.path()).await;
    wait_available(&admin, "own", 2).await;
    assert!(
        controllers
            .log()
            .contains("Leading: running the controllers")
    );
    let log = controllers.log();
    assert!(
        !log.contains("forbidden"),
        "the controllers were refused something:\n{log}"
    );

    // What the identity may not do; the message names who it is.
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client(&own).await);
    let refused = roles.list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(status) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        r#"clusterroles.rbac.authorization.k8s.io is forbidden: User "system:serviceaccount:corral-system:corral-controllers" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope"#
    );

    // A provider's own identity: its kinds yes, another provider's no.
    let infra = dir.path().join("infra.kubeconfig");
    corral_ok(
        &admin,
        &[
            "kubeconfig",
            "infrastructure-in-memory",
            "--write-to",
            infra.to_str().unwrap(),
        ],
    );
    let infra = client(&infra).await;
    let kind = |group: &str, kind: &str, plural: &str| kube::api::ApiResource {
        group: group.into(),
        version: "v1beta2".into(),
        api_version: format!("{group}/v1beta2"),
        kind: kind.into(),
        plural: plural.into(),
    };
    let own_kind: Api<kube::api::DynamicObject> = Api::namespaced_with(
        infra.clone(),
        "default",
        &kind(
            "infrastructure.cluster.x-k8s.io",
            "DevMachine",
            "devmachines",
        ),
    );
    assert!(
        !own_kind
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let other: Api<kube::api::DynamicObject> = Api::namespaced_with(
        infra,
        "default",
        &kind(
            "bootstrap.cluster.x-k8s.io",
            "KubeadmConfig",
            "kubeadmconfigs",
        ),
    );
    let refused = other.list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(status) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(status.code, 403, "{status:?}");
    assert!(status.message.contains(r#"User "system:serviceaccount:capim-system:capim-manager" cannot list resource "kubeadmconfigs""#), "{}", status.message);

    // An unknown component is a usage error naming the known ones.
    corral_fails(
        &admin,
        &[
            "kubeconfig",
            "nope",
            "--write-to",
            dir.path().join("x").to_str().unwrap(),
        ],
        2,
        "one of: controllers, cluster-api",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corral_up_demo_shows_the_tree_until_the_cluster_is_available() {
    let dir = scratch();
    let data = dir.path().join("data");
    let up = Process::spawn(
        &[
            "up",
            "--demo",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        dir.path().join("up.log"),
    );
    eventually("the demo cluster to be available", || async {
        up.log()
            .contains("demo: 6/6 machines ready, available")
            .then_some(())
    })
    .await;
    let log = up.log();
    assert!(
        log.contains(
            "Created the demo cluster demo (a KubeadmControlPlane of 3 machines, 3 workers, in-memory)"
        ),
        "{log}"
    );
    let kubeconfig = data.join("kubeconfig");
    // The tree has every machine ready, grouped.
    let tree = corral_ok(&kubeconfig, &["describe", "cluster", "demo"]);
    assert!(tree.contains("Available: True"), "{tree}");
    assert!(tree.contains("└─3 Machines..."), "{tree}");
    let tree = describe_json(&kubeconfig, "demo");
    assert_eq!(tree["replicas"], "6/6");
    assert_eq!(tree["ready"], "6");
    let control_plane = &tree["children"][1];
    assert_eq!(control_plane["kind"], "KubeadmControlPlane");
    assert_eq!(control_plane["replicas"], "3/3");

    // The day-two verbs act on the KubeadmControlPlane too: pause is its paused annotation.
    let kcp = "kcp/demo-control-plane";
    assert!(corral_ok(&kubeconfig, &["scale", kcp, "--replicas", "3"]).contains("scaled"));
    corral_ok(&kubeconfig, &["rollout", "pause", kcp]);
    let kcps: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client(&kubeconfig).await,
        "default",
        &kube::api::ApiResource {
            group: "controlplane.cluster.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "controlplane.cluster.x-k8s.io/v1beta2".into(),
            kind: "KubeadmControlPlane".into(),
            plural: "kubeadmcontrolplanes".into(),
        },
    );
    let paused = kcps.get("demo-control-plane").await.unwrap();
    assert!(
        paused
            .metadata
            .annotations
            .unwrap()
            .contains_key("cluster.x-k8s.io/paused")
    );
    corral_fails(
        &kubeconfig,
        &["rollout", "restart", kcp],
        1,
        "resume it first",
    );
    corral_ok(&kubeconfig, &["rollout", "resume", kcp]);
    let status = corral_ok(&kubeconfig, &["rollout", "status", kcp]);
    assert_eq!(
        status.trim(),
        "kubeadmcontrolplane \"demo-control-plane\" successfully rolled out"
    );

    // Without a topology, get clusters' VERSION is the KubeadmControlPlane's; the kubeconfig's
    // context can be named, as clusterctl's --kubeconfig-context.
    let clusters = corral_ok(
        &kubeconfig,
        &["get", "clusters", "--kubeconfig-context", "corral"],
    );
    let row: Vec<&str> = clusters
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(row.first(), Some(&"demo"), "{clusters}");
    assert_eq!(row.last(), Some(&"v1.32.0"), "{clusters}");

    // --show-templates: the templates first under the control plane and the
    // MachineDeployment, in row-name order, as clusterctl.
    let tree = corral_ok(
        &kubeconfig,
        &["describe", "cluster", "demo", "--show-templates"],
    );
    let lines: Vec<&str> = tree.lines().map(str::trim_end).collect();
    let templates: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| line.contains("Template"))
        .collect();
    assert_eq!(
        templates,
        [
            "│ ├─Templates",
            "│ │ └─MachineInfrastructureTemplate - DevMachineTemplate/demo-control-plane",
            "    ├─Templates",
            "    │ ├─BootstrapConfigTemplate - KubeadmConfigTemplate/demo-md-0",
            "    │ └─MachineInfrastructureTemplate - DevMachineTemplate/demo-md-0",
        ],
        "{tree}"
    );

    // --show-resourcesets without the addons.cluster.x-k8s.io API shows nothing more, as
    // clusterctl; --kubeconfig and -v also go before the command.
    let global_flags = |extra: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_corral"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["-v", "1", "describe", "cluster", "demo"])
            .args(extra)
            .env_remove("KUBECONFIG")
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let plain = global_flags(&[]);
    let with_sets = global_flags(&["--show-resourcesets"]);
    assert_eq!(
        with_sets.lines().count(),
        plain.lines().count(),
        "{with_sets}"
    );
    assert!(!with_sets.contains("ClusterResourceSet"), "{with_sets}");

    // With the API installed and a binding for the cluster, its ClusterResourceSets show
    // under the infrastructure, as clusterctl's tree.
    install_resource_set_bindings(&kubeconfig).await;
    let bindings: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client(&kubeconfig).await,
        "default",
        &resource_set_bindings(),
    );
    let binding: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "addons.cluster.x-k8s.io/v1beta2",
        "kind": "ClusterResourceSetBinding",
        "metadata": { "name": "demo" },
        "spec": {
            "clusterName": "demo",
            "bindings": [
                { "clusterResourceSetName": "calico" },
                { "clusterResourceSetName": "csi" },
            ],
        },
    }))
    .unwrap();
    eventually(
        "the ClusterResourceSetBinding kind to be served",
        || async {
            bindings
                .create(&kube::api::PostParams::default(), &binding)
                .await
                .ok()
        },
    )
    .await;
    let tree = corral_ok(
        &kubeconfig,
        &["describe", "cluster", "demo", "--show-resourcesets"],
    );
    let rows: Vec<&str> = tree
        .lines()
        .skip(1)
        .take(5)
        .map(|line| line.split("  ").next().unwrap_or("").trim_end())
        .collect();
    assert_eq!(
        rows,
        [
            "Cluster/demo",
            "├─ClusterInfrastructure - DevCluster/demo",
            "├─ClusterResourceSets",
            "│ ├─ClusterResourceSet/calico",
            "│ └─ClusterResourceSet/csi",
        ],
        "{tree}"
    );

    // A restart with --demo resumes the demo cluster as it is instead of applying the
    // template over what was done to it.
    corral_ok(&kubeconfig, &["scale", "md/demo-md-0", "--replicas", "4"]);
    up.terminate();
    let up = Process::spawn(
        &[
            "up",
            "--demo",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        dir.path().join("up-2.log"),
    );
    eventually("the restarted demo to resume", || async {
        up.log()
            .contains("The demo cluster demo exists already; resuming it:")
            .then_some(())
    })
    .await;
    assert!(
        !up.log().contains("Created the demo cluster"),
        "{}",
        up.log()
    );
    let deployments: Api<corral_api::MachineDeployment> =
        Api::namespaced(client(&kubeconfig).await, "default");
    let deployment = deployments.get("demo-md-0").await.unwrap();
    assert_eq!(deployment.spec.replicas, Some(4));
}

fn resource_set_bindings() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "addons.cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "addons.cluster.x-k8s.io/v1beta2".into(),
        kind: "ClusterResourceSetBinding".into(),
        plural: "clusterresourcesetbindings".into(),
    }
}

/// Installs upstream's ClusterResourceSetBinding kind (its schema left open), which Corral
/// does not install itself.
async fn install_resource_set_bindings(kubeconfig: &Path) {
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client(kubeconfig).await);
    let crd = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "clusterresourcesetbindings.addons.cluster.x-k8s.io" },
        "spec": {
            "group": "addons.cluster.x-k8s.io",
            "scope": "Namespaced",
            "names": {
                "kind": "ClusterResourceSetBinding",
                "plural": "clusterresourcesetbindings",
                "singular": "clusterresourcesetbinding",
                "listKind": "ClusterResourceSetBindingList",
            },
            "versions": [{
                "name": "v1beta2", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                } },
            }],
        },
    }))
    .unwrap();
    crds.create(&kube::api::PostParams::default(), &crd)
        .await
        .unwrap();
}

#[test]
fn version_and_completions() {
    let version = Command::new(env!("CARGO_BIN_EXE_corral"))
        .arg("version")
        .output()
        .unwrap();
    assert!(text(&version.stdout).starts_with(&format!("corral {}", corral_cli::VERSION)));
    for (shell, marker) in [
        ("bash", "_corral()"),
        ("zsh", "#compdef corral"),
        ("fish", "complete -c corral"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(output.status.success(), "{shell}");
        let script = text(&output.stdout);
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        assert!(
            script.contains("describe"),
            "{shell} completes no subcommands"
        );
    }
    // The bash script loads, registers itself and completes a subcommand.
    if tool_available(
        Path::new("/bin/bash").exists(),
        "bash",
        "CORRAL_REQUIRE_BASH",
        "install bash",
    ) {
        let output = Command::new("/bin/bash")
            .arg("-c")
            .arg(format!(
                "source <('{}' completion bash) && complete -p corral && COMP_WORDS=(corral desc) COMP_CWORD=1 && _corral corral desc corral && echo \"${{COMPREPLY[@]}}\"",
                env!("CARGO_BIN_EXE_corral")
            ))
            .output()
            .unwrap();
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert!(stdout.contains("-F _corral corral"), "{stdout}");
        assert_eq!(stdout.lines().last(), Some("describe"), "{stdout}");
    }
}

/// `--store etcd` is in the binary users build: an etcd that cannot be used is one line naming
/// the endpoint and what it said, and exit 1, for `apiserver` and `up` alike. (A hang would be
/// ended by nextest's timeout, `.config/nextest.toml`, and fail the test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_etcd_is_one_line_and_exit_1() {
    let dir = scratch();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    // Something that answers, but not etcd: an HTTP server that closes every connection.
    let not_etcd = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let not_etcd_address = not_etcd.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in not_etcd.incoming() {
            drop(stream);
        }
    });
    let data_dir = dir.path().join("d");
    let data_dir = data_dir.to_str().unwrap();
    for (endpoint, said) in [
        (format!("http://{closed}"), "Connection refused"),
        (
            format!("http://{not_etcd_address}"),
            &format!("http://{not_etcd_address}")[..],
        ),
        (
            "ftp://127.0.0.1:2379".to_string(),
            "must be http:// or https://",
        ),
    ] {
        for command in ["apiserver", "up"] {
            let stderr = corral_fails(
                dir.path(),
                &[
                    command,
                    "--data-dir",
                    data_dir,
                    "--listen",
                    "127.0.0.1:0",
                    "--store",
                    "etcd",
                    "--etcd-endpoints",
                    &endpoint,
                ],
                1,
                said,
            );
            assert!(stderr.contains("etcd"), "{stderr}");
        }
    }
    // Half a client certificate is a usage mistake.
    let stderr = corral_fails(
        dir.path(),
        &["apiserver", "--store", "etcd", "--etcd-certfile", "c.pem"],
        2,
        "--etcd-keyfile",
    );
    assert!(stderr.contains("required"), "{stderr}");
}

/// `corral provider test` against the Python example provider: one PASS line per check and
/// exit 0; the same provider started to break idempotency (`--misbehave duplicates`) gets
/// FAIL lines saying what it did, and exit 1.
#[test]
fn provider_test_runs_the_conformance_suite() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/python-http-provider/provider.py");
    let start = |args: &[&str]| -> (Child, String) {
        let mut child = Command::new("python3")
            .arg(&script)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the example provider");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let endpoint = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_owned();
        (child, endpoint)
    };
    let no_kubeconfig = Path::new("/nonexistent");

    let (mut good, endpoint) = start(&[]);
    let out = corral_ok(
        no_kubeconfig,
        &["provider", "test", "--endpoint", &endpoint],
    );
    good.kill().unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.iter().all(|line| line.starts_with("PASS ")), "{out}");
    for check in [
        "PASS GetInfo contract v1",
        "PASS CreateMachine idempotent by uid",
        "PASS GetMachine NOT_FOUND after delete",
        "PASS ListMachines forgets the deleted machine",
    ] {
        assert!(lines.contains(&check), "{check}: {out}");
    }

    let (mut broken, endpoint) = start(&["--misbehave", "duplicates"]);
    let output = corral(
        no_kubeconfig,
        &["provider", "test", "--endpoint", &endpoint],
    );
    broken.kill().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let out = text(&output.stdout);
    assert!(
        out.lines().any(|line| line
            .starts_with("FAIL CreateMachine idempotent by uid: a second CreateMachine for uid")),
        "{out}"
    );
    assert!(out.contains("PASS GetInfo shape"), "{out}");
    assert!(
        text(&output.stderr).contains("3 of 15 checks failed"),
        "{}",
        text(&output.stderr)
    );
}
