//! `corral move` between two `corral up` management planes that share one simulated cloud run
//! as its own process (`corral cloud`): the moved cluster keeps its machines (same names, same
//! providerIDs, VMs not booted again) and keeps reconciling at the target; a move that the
//! target refuses midway says what is where, rolls back, and resumes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use corral_api::{Cluster, Machine, MachineDeployment, MachinePhase};
use corral_cloud::{Cloud, ClusterKey, RemoteCloud, StepStatus, VmKey};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// How long the test waits for the processes and the controllers.
const PATIENCE: Duration = Duration::from_secs(90);

const NAMESPACE: &str = "default";
const CLUSTER: &str = "moving";
const DEPLOYMENT: &str = "moving-md-0";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";

/// A child process, killed when dropped.
struct Process {
    child: Child,
    log: PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- {} ---\n{}",
                self.log.display(),
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

fn corral() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
    command.env("NO_COLOR", "1").env_remove("KUBECONFIG");
    command
}

/// `corral cloud` on a free port, and its URL.
fn start_cloud(dir: &Path) -> (Process, String) {
    let log = dir.join("cloud.log");
    let mut child = corral()
        .args(["cloud", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .expect("spawning corral cloud");
    let stdout = child.stdout.take().unwrap();
    let mut stdout = BufReader::new(stdout);
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    // Keep reading, so that the cloud never writes to a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let url = first
        .split_whitespace()
        .find(|word| word.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in corral cloud's first line: {first:?}"))
        .trim_end_matches('.')
        .to_string();
    (Process { child, log }, url)
}

/// `corral up` on a free port over an in-memory store, using the cloud at `cloud`; returns
/// once its providers are installed (the inventory lists them), with its kubeconfig.
async fn start_plane(dir: &Path, name: &str, cloud: &str) -> (Process, PathBuf) {
    let data_dir = dir.join(name);
    let kubeconfig = data_dir.join("kubeconfig");
    let log = dir.join(format!("{name}.log"));
    let child = corral()
        .args([
            "up",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory",
            "--cloud",
            cloud,
        ])
        .arg("--data-dir")
        .arg(&data_dir)
        .env("RUST_LOG", "info")
        .stdout(Stdio::from(std::fs::File::create(&log).unwrap()))
        .stderr(Stdio::from(
            std::fs::OpenOptions::new().append(true).open(&log).unwrap(),
        ))
        .spawn()
        .expect("spawning corral up");
    let mut process = Process { child, log };
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if kubeconfig.exists() {
            let providers: Api<corral_api::clusterctl::Provider> =
                Api::all(client(&kubeconfig).await);
            if providers
                .list(&ListParams::default())
                .await
                .is_ok_and(|list| !list.items.is_empty())
            {
                return (process, kubeconfig);
            }
        }
        let log = std::fs::read_to_string(&process.log).unwrap_or_default();
        if let Ok(Some(status)) = process.child.try_wait() {
            panic!("corral up ({name}) exited with {status}:\n{log}");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "corral up ({name}) did not come up:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn client(kubeconfig: &Path) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create(client: &kube::Client, object: Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap();
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);
    let object: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|error| panic!("creating a {kind}: {error}"));
}

/// One control plane Machine and a MachineDeployment of two workers, booting at once.
async fn create_cluster(client: &kube::Client) {
    let labels = json!({ "cluster.x-k8s.io/cluster-name": CLUSTER });
    let bootstrap = json!({ "dataSecretName": format!("{CLUSTER}-bootstrap") });
    create(
        client,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": format!("{CLUSTER}-bootstrap"), "labels": labels },
            "type": "cluster.x-k8s.io/secret",
            "stringData": { "value": "#cloud-config\n", "format": "cloud-config" },
        }),
    )
    .await;
    create(
        client,
        json!({
            "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevCluster",
            "metadata": { "name": CLUSTER },
            "spec": { "backend": { "inMemory": {} } },
        }),
    )
    .await;
    create(client, json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": { "name": CLUSTER },
        "spec": { "infrastructureRef": { "apiGroup": INFRA, "kind": "DevCluster", "name": CLUSTER } },
    }))
    .await;
    let control_plane = format!("{CLUSTER}-control-plane-0");
    create(
        client,
        json!({
            "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevMachine",
            "metadata": { "name": control_plane, "labels": labels },
            "spec": { "backend": { "inMemory": {} } },
        }),
    )
    .await;
    create(client, json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": { "name": control_plane, "labels": {
            "cluster.x-k8s.io/cluster-name": CLUSTER,
            "cluster.x-k8s.io/control-plane": "",
        }},
        "spec": {
            "clusterName": CLUSTER, "version": "v1.32.0", "bootstrap": bootstrap,
            "infrastructureRef": { "apiGroup": INFRA, "kind": "DevMachine", "name": control_plane },
        },
    }))
    .await;
    create(
        client,
        json!({
            "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevMachineTemplate",
            "metadata": { "name": DEPLOYMENT },
            "spec": { "template": { "spec": { "backend": { "inMemory": {} } } } },
        }),
    )
    .await;
    create(client, json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": { "name": DEPLOYMENT },
        "spec": {
            "clusterName": CLUSTER,
            "replicas": 2,
            "selector": { "matchLabels": { "pool": DEPLOYMENT } },
            "template": {
                "metadata": { "labels": { "pool": DEPLOYMENT } },
                "spec": {
                    "clusterName": CLUSTER, "version": "v1.32.0", "bootstrap": bootstrap,
                    "infrastructureRef": { "apiGroup": INFRA, "kind": "DevMachineTemplate", "name": DEPLOYMENT },
                },
            },
        },
    }))
    .await;
}

async fn machines(client: &kube::Client) -> Vec<Machine> {
    Api::<Machine>::namespaced(client.clone(), NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

/// Waits until the plane has `count` Machines, all Running, and returns them by name.
async fn running_machines(client: &kube::Client, count: usize) -> Vec<Machine> {
    eventually(&format!("{count} Running Machines"), || async {
        let mut list = machines(client).await;
        let running = list.len() == count
            && list.iter().all(|machine| {
                machine.status.as_ref().and_then(|status| status.phase)
                    == Some(MachinePhase::Running)
            });
        list.sort_by_key(|machine| machine.metadata.name.clone());
        running.then_some(list)
    })
    .await
}

/// Name and providerID of each Machine.
fn identities(machines: &[Machine]) -> Vec<(String, Option<String>)> {
    machines
        .iter()
        .map(|machine| {
            (
                machine.metadata.name.clone().unwrap(),
                machine.spec.provider_id.clone(),
            )
        })
        .collect()
}

/// When each Machine's VM finished powering on, as the cloud reports it.
async fn boot_times(cloud: &RemoteCloud, machines: &[Machine]) -> Vec<StepStatus> {
    let mut times = Vec::new();
    for machine in machines {
        let key = VmKey {
            cluster: ClusterKey {
                namespace: NAMESPACE.into(),
                name: CLUSTER.into(),
            },
            name: machine.metadata.name.clone().unwrap(),
        };
        let vm = cloud.get_vm(&key).await.unwrap().expect("the VM exists");
        times.push(vm.vm);
    }
    times
}

fn run_move(source: &Path, target: &Path, extra: &[&str]) -> Output {
    corral()
        .arg("move")
        .arg("--kubeconfig")
        .arg(source)
        .arg("--to-kubeconfig")
        .arg(target)
        .args(["--namespace", NAMESPACE])
        .args(extra)
        .output()
        .expect("running corral move")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn cluster_paused(client: &kube::Client) -> Option<bool> {
    let cluster = Api::<Cluster>::namespaced(client.clone(), NAMESPACE)
        .get_opt(CLUSTER)
        .await
        .unwrap()?;
    Some(cluster.spec.paused == Some(true))
}

/// Makes the target refuse new DevMachines (a required field they do not have), or accept them
/// again, and waits until the schema is in force.
async fn refuse_dev_machines(client: &kube::Client, refuse: bool) {
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
        },
    );
    let name = format!("devmachines.{INFRA}");
    let mut crd = serde_json::to_value(crds.get(&name).await.unwrap()).unwrap();
    for version in crd["spec"]["versions"].as_array_mut().unwrap() {
        let spec = &mut version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        if refuse {
            spec["required"] = json!(["refusedByTheTest"]);
        } else {
            spec.as_object_mut().unwrap().remove("required");
        }
    }
    let crd: DynamicObject = serde_json::from_value(crd).unwrap();
    crds.replace(&name, &PostParams::default(), &crd)
        .await
        .unwrap();
    // A probe in a namespace of its own tells when the schema applies.
    let probe = json!({
        "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevMachine",
        "metadata": { "name": "schema-probe" },
        "spec": { "backend": { "inMemory": {} } },
    });
    let resource = ApiResource {
        group: INFRA.into(),
        version: "v1beta2".into(),
        api_version: format!("{INFRA}/v1beta2"),
        kind: "DevMachine".into(),
        plural: "devmachines".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    eventually("the DevMachine schema to apply", || async {
        let object: DynamicObject = serde_json::from_value(probe.clone()).unwrap();
        let refused = api.create(&dry_run, &object).await.is_err();
        (refused == refuse).then_some(())
    })
    .await;
    assert!(
        api.get_opt("schema-probe").await.unwrap().is_none(),
        "the probe was a dry run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_moves_between_two_management_planes_sharing_one_cloud() {
    let dir = tempfile::Builder::new()
        .prefix("corral-move-")
        .tempdir()
        .unwrap();
    let (_cloud_process, cloud_url) = start_cloud(dir.path());
    let (_source_process, source_kubeconfig) = start_plane(dir.path(), "source", &cloud_url).await;
    let (_target_process, target_kubeconfig) = start_plane(dir.path(), "target", &cloud_url).await;
    let source = client(&source_kubeconfig).await;
    let target = client(&target_kubeconfig).await;
    let cloud = RemoteCloud::new(&cloud_url).unwrap();

    create_cluster(&source).await;
    let before = running_machines(&source, 3).await;
    let booted = boot_times(&cloud, &before).await;
    assert!(booted.iter().all(StepStatus::is_done));

    // A dry run prints the plan and changes nothing.
    let dry_run = run_move(&source_kubeconfig, &target_kubeconfig, &["--dry-run"]);
    let stdout = text(&dry_run.stdout);
    assert!(dry_run.status.success(), "{}", text(&dry_run.stderr));
    assert!(stdout.contains("Dry run"), "{stdout}");
    assert!(
        stdout.contains(&format!("Cluster {NAMESPACE}/{CLUSTER}")),
        "{stdout}"
    );
    assert!(
        stdout.contains("DevMachine default/moving-control-plane-0"),
        "{stdout}"
    );
    assert_eq!(cluster_paused(&source).await, Some(false));
    assert_eq!(cluster_paused(&target).await, None);

    // The target refuses DevMachines: the move stops midway and says what is where.
    refuse_dev_machines(&target, true).await;
    let failed = run_move(&source_kubeconfig, &target_kubeconfig, &[]);
    let stderr = text(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("stopped while creating the objects at the target"),
        "{stderr}"
    );
    assert!(stderr.contains("DevMachine"), "{stderr}");
    assert!(stderr.contains("paused by this move"), "{stderr}");
    assert!(
        stderr.contains("--resume") && stderr.contains("--rollback"),
        "{stderr}"
    );
    assert_eq!(
        cluster_paused(&source).await,
        Some(true),
        "the source stays paused"
    );
    assert_eq!(
        cluster_paused(&target).await,
        Some(true),
        "the target copy is paused"
    );

    // Running it again without --resume is refused with the way out.
    let again = run_move(&source_kubeconfig, &target_kubeconfig, &[]);
    let stderr = text(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("did not finish"), "{stderr}");

    // Rolled back: the target has nothing, the source is unpaused and still in charge.
    let rollback = run_move(&source_kubeconfig, &target_kubeconfig, &["--rollback"]);
    assert!(rollback.status.success(), "{}", text(&rollback.stderr));
    assert_eq!(cluster_paused(&target).await, None);
    assert!(machines(&target).await.is_empty());
    assert_eq!(cluster_paused(&source).await, Some(false));
    running_machines(&source, 3).await;

    // Fails again; once the target accepts DevMachines, --resume finishes the move.
    let failed = run_move(&source_kubeconfig, &target_kubeconfig, &[]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    refuse_dev_machines(&target, false).await;
    let resumed = run_move(&source_kubeconfig, &target_kubeconfig, &["--resume"]);
    let stdout = text(&resumed.stdout);
    assert!(
        resumed.status.success(),
        "{}\n{stdout}",
        text(&resumed.stderr)
    );
    assert!(
        stdout.contains("Unpaused Cluster default/moving at the target"),
        "{stdout}"
    );

    // The source has nothing left.
    assert_eq!(cluster_paused(&source).await, None);
    assert!(machines(&source).await.is_empty());
    let dev_machines: Api<DynamicObject> = Api::namespaced_with(
        source.clone(),
        NAMESPACE,
        &ApiResource {
            group: INFRA.into(),
            version: "v1beta2".into(),
            api_version: format!("{INFRA}/v1beta2"),
            kind: "DevMachine".into(),
            plural: "devmachines".into(),
        },
    );
    assert!(
        dev_machines
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // The target has the same machines, on the same VMs, booted once.
    assert_eq!(cluster_paused(&target).await, Some(false));
    let after = running_machines(&target, 3).await;
    assert_eq!(identities(&after), identities(&before));
    assert_eq!(
        boot_times(&cloud, &after).await,
        booted,
        "no VM was booted again"
    );

    // And it keeps reconciling: one more worker comes up at the target.
    Api::<MachineDeployment>::namespaced(target.clone(), NAMESPACE)
        .patch(
            DEPLOYMENT,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .unwrap();
    let scaled = running_machines(&target, 4).await;
    let new: Vec<_> = scaled
        .iter()
        .filter(|machine| {
            !identities(&before)
                .iter()
                .any(|(name, _)| Some(name) == machine.metadata.name.as_ref())
        })
        .collect();
    assert_eq!(new.len(), 1);
    assert_eq!(boot_times(&cloud, &after).await, booted);
}

#[test]
fn a_cloud_that_does_not_answer_or_listens_beyond_loopback_is_refused() {
    let dir = tempfile::Builder::new()
        .prefix("corral-cloud-")
        .tempdir()
        .unwrap();
    // Nothing listens on port 1.
    let up = corral()
        .args(["up", "--listen", "127.0.0.1:0", "--store", "memory"])
        .args(["--cloud", "http://127.0.0.1:1"])
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = text(&up.stderr);
    assert_eq!(up.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot reach the simulated cloud at http://127.0.0.1:1")
            && stderr.contains("is `corral cloud` running there?"),
        "{stderr}"
    );

    let cloud = corral()
        .args(["cloud", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    let stderr = text(&cloud.stderr);
    assert_eq!(cloud.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("only loopback addresses"), "{stderr}");
}

/// `corral ARGS` to completion.
fn run_corral(args: &[&std::ffi::OsStr]) -> Output {
    corral().args(args).output().expect("running corral")
}

/// A failure of one line, exit code 1, that contains `needle`.
fn assert_fails_with(output: &Output, needle: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    assert!(stderr.contains(needle), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_written_to_a_directory_is_restored_into_another_management_plane() {
    use std::ffi::OsStr;
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::Builder::new()
        .prefix("corral-move-dir-")
        .tempdir()
        .unwrap();
    let (_cloud_process, cloud_url) = start_cloud(dir.path());
    let (source_process, source_kubeconfig) = start_plane(dir.path(), "source", &cloud_url).await;
    let (_target_process, target_kubeconfig) = start_plane(dir.path(), "target", &cloud_url).await;
    let source = client(&source_kubeconfig).await;
    let target = client(&target_kubeconfig).await;
    let cloud = RemoteCloud::new(&cloud_url).unwrap();

    create_cluster(&source).await;
    let before = running_machines(&source, 3).await;
    let booted = boot_times(&cloud, &before).await;

    // --kubeconfig before the command, as clusterctl takes it.
    let to_directory = |directory: &Path| {
        run_corral(&[
            OsStr::new("--kubeconfig"),
            source_kubeconfig.as_os_str(),
            OsStr::new("move"),
            OsStr::new("--to-directory"),
            directory.as_os_str(),
            OsStr::new("-n"),
            OsStr::new(NAMESPACE),
        ])
    };
    // Bad directories: one line each, and the source is not even paused.
    assert_fails_with(&to_directory(&dir.path().join("missing")), "does not exist");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    assert_fails_with(&to_directory(&file), "is not a directory");
    assert_fails_with(&to_directory(dir.path()), "is not empty");
    let read_only = dir.path().join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o500)).unwrap();
    // root writes anyway; the check is only meaningful for other users.
    if std::fs::write(read_only.join("probe"), "").is_err() {
        assert_fails_with(&to_directory(&read_only), "cannot write to the directory");
    }
    assert_eq!(cluster_paused(&source).await, Some(false));
    let backup = dir.path().join("backup");
    std::fs::create_dir(&backup).unwrap();

    // A dry run names the files and writes none.
    let dry_run = run_corral(&[
        OsStr::new("move"),
        OsStr::new("--kubeconfig"),
        source_kubeconfig.as_os_str(),
        OsStr::new("--to-directory"),
        backup.as_os_str(),
        OsStr::new("--dry-run"),
    ]);
    let stdout = text(&dry_run.stdout);
    assert!(dry_run.status.success(), "{}", text(&dry_run.stderr));
    assert!(
        stdout.contains(&format!("Cluster_{NAMESPACE}_{CLUSTER}.yaml")),
        "{stdout}"
    );
    assert_eq!(std::fs::read_dir(&backup).unwrap().count(), 0);

    // The backup: a file per object, the Cluster paused in it, the source unpaused again
    // and still in charge.
    let written = to_directory(&backup);
    let stdout = text(&written.stdout);
    assert!(written.status.success(), "{}", text(&written.stderr));
    assert!(stdout.contains("of 1 Cluster from"), "{stdout}");
    let cluster_file = backup.join(format!("Cluster_{NAMESPACE}_{CLUSTER}.yaml"));
    let cluster_yaml = std::fs::read_to_string(&cluster_file).unwrap();
    assert!(cluster_yaml.contains("paused: true"), "{cluster_yaml}");
    for name in [
        format!("Machine_{NAMESPACE}_{CLUSTER}-control-plane-0.yaml"),
        format!("DevMachine_{NAMESPACE}_{CLUSTER}-control-plane-0.yaml"),
        format!("MachineDeployment_{NAMESPACE}_{DEPLOYMENT}.yaml"),
        format!("Secret_{NAMESPACE}_{CLUSTER}-bootstrap.yaml"),
    ] {
        let path = backup.join(&name);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|_| panic!("{name} was written"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
    assert_eq!(cluster_paused(&source).await, Some(false));
    running_machines(&source, 3).await;

    // Bad restores change nothing at the target.
    let from_directory = |directory: &Path, extra: &[&str]| {
        let mut args = vec![
            OsStr::new("move"),
            OsStr::new("--from-directory"),
            directory.as_os_str(),
            OsStr::new("--to-kubeconfig"),
            target_kubeconfig.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        run_corral(&args)
    };
    assert_fails_with(
        &from_directory(&dir.path().join("missing"), &[]),
        "does not exist",
    );
    let spoiled = dir.path().join("spoiled");
    std::fs::create_dir(&spoiled).unwrap();
    for entry in std::fs::read_dir(&backup).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), spoiled.join(entry.file_name())).unwrap();
    }
    std::fs::write(spoiled.join("notes.yaml"), "just: [some, notes").unwrap();
    assert_fails_with(&from_directory(&spoiled, &[]), "notes.yaml is not YAML");
    std::fs::write(spoiled.join("notes.yaml"), "just: notes\n").unwrap();
    assert_fails_with(
        &from_directory(&spoiled, &[]),
        "notes.yaml holds an object without apiVersion",
    );
    assert_eq!(cluster_paused(&target).await, None);
    assert!(machines(&target).await.is_empty());

    // A dry run lists what it would create.
    let dry_run = from_directory(&backup, &["--dry-run"]);
    let stdout = text(&dry_run.stdout);
    assert!(dry_run.status.success(), "{}", text(&dry_run.stderr));
    assert!(stdout.contains("Dry run"), "{stdout}");
    assert!(
        stdout.contains("DevMachine default/moving-control-plane-0"),
        "{stdout}"
    );
    assert_eq!(cluster_paused(&target).await, None);

    // The source management plane is lost; the backup brings the cluster back at the target.
    // A restore the target refuses midway leaves its Clusters paused and says so, and running
    // it again finishes it.
    drop(source_process);
    refuse_dev_machines(&target, true).await;
    let failed = from_directory(&backup, &[]);
    let stderr = text(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("stopped while creating the objects at the target"),
        "{stderr}"
    );
    assert!(stderr.contains("its Clusters stay paused"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "corral move --from-directory {}",
            backup.display()
        )),
        "{stderr}"
    );
    assert_eq!(cluster_paused(&target).await, Some(true));
    refuse_dev_machines(&target, false).await;
    let restored = from_directory(&backup, &[]);
    let stdout = text(&restored.stdout);
    assert!(
        restored.status.success(),
        "{}\n{stdout}",
        text(&restored.stderr)
    );
    assert!(
        stdout.contains("Unpaused Cluster default/moving at the target"),
        "{stdout}"
    );
    assert_eq!(cluster_paused(&target).await, Some(false));
    let cluster = Api::<Cluster>::namespaced(target.clone(), NAMESPACE)
        .get(CLUSTER)
        .await
        .unwrap();
    assert!(
        !cluster
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("corral.dev/paused-by-move")
    );

    // Restoring again over the live Cluster is refused.
    assert_fails_with(
        &from_directory(&backup, &[]),
        "already exists at the target",
    );

    // The same machines, on the same VMs, booted once; and it keeps reconciling there.
    let after = running_machines(&target, 3).await;
    assert_eq!(identities(&after), identities(&before));
    assert_eq!(
        boot_times(&cloud, &after).await,
        booted,
        "no VM was booted again"
    );
    Api::<MachineDeployment>::namespaced(target.clone(), NAMESPACE)
        .patch(
            DEPLOYMENT,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": 3 } })),
        )
        .await
        .unwrap();
    let scaled = running_machines(&target, 4).await;
    assert_eq!(
        scaled
            .iter()
            .filter(|machine| !identities(&before)
                .iter()
                .any(|(name, _)| Some(name) == machine.metadata.name.as_ref()))
            .count(),
        1
    );
    assert_eq!(boot_times(&cloud, &after).await, booted);
}
