//! A `corral apiserver` child process per test, on its own data dir and a free port.

use corral_store::testing::EtcdProcess;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a server may take to start. Generous: CI machines are busy compiling.
const START_DEADLINE: Duration = Duration::from_secs(60);

pub enum Backend {
    Sqlite,
    Etcd,
}

/// What one test runs servers on: a data dir and, for etcd, an etcd process. Servers started
/// one after the other share both, which is how a restart is tested.
pub struct TestEnv {
    // Dropped last (fields drop in order), after etcd is gone.
    etcd: Option<EtcdProcess>,
    dir: tempfile::TempDir,
}

/// Runs `test` on a fresh [`TestEnv`] of `backend`; returns at once when the backend is not
/// available here (etcd missing; [`EtcdProcess::start_or_skip`] says so loudly).
pub async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(TestEnv) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::Builder::new()
        .prefix("corral-it-")
        .tempdir()
        .expect("creating a temporary directory for a test");
    let env = match backend {
        Backend::Sqlite => TestEnv { etcd: None, dir },
        Backend::Etcd => match EtcdProcess::start_or_skip().await {
            Some(etcd) => TestEnv {
                etcd: Some(etcd),
                dir,
            },
            None => return,
        },
    };
    test(env).await;
}

impl TestEnv {
    /// The server's `--data-dir`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Where every server of this test writes its log (appended to across restarts).
    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The etcd process of an etcd test.
    pub fn etcd(&self) -> Option<&EtcdProcess> {
        self.etcd.as_ref()
    }

    /// Where every server of this test writes its log.
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// A scratch directory for the test's own files, removed with the test.
    pub fn scratch_dir(&self) -> PathBuf {
        let path = self.dir.path().join("scratch");
        std::fs::create_dir_all(&path).expect("creating a scratch directory");
        path
    }

    /// Starts `corral apiserver` on port 0 and waits until it has written its kubeconfig,
    /// which it does only once it listens.
    pub async fn start_server(&self) -> ServerProcess {
        self.start_server_with(&[]).await
    }

    /// [`TestEnv::start_server`] with more flags.
    pub async fn start_server_with(&self, arguments: &[&str]) -> ServerProcess {
        let data_dir = self.data_dir();
        let kubeconfig = data_dir.join("kubeconfig");
        // A kubeconfig left by an earlier server of this test names that server's port.
        match std::fs::remove_file(&kubeconfig) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("removing {}: {e}", kubeconfig.display()),
        }
        let log_path = self.log_path();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("opening the server log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
        command.arg("apiserver").arg("--data-dir").arg(&data_dir);
        if !arguments.contains(&"--listen") {
            command.args(["--listen", "127.0.0.1:0"]);
        }
        command.args(arguments);
        self.store_arguments(&mut command);
        command
            .env("RUST_LOG", "info")
            // The log is read as plain text.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(
                log.try_clone().expect("cloning the log handle"),
            ))
            .stderr(Stdio::from(log));
        let child = command.spawn().expect("spawning the corral binary");
        let mut server = ServerProcess {
            child,
            url: String::new(),
            config: None,
            kubeconfig,
            log_path,
        };
        let deadline = tokio::time::Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "corral apiserver exited with {status} while starting; its log:\n{}",
                    server.log()
                );
            }
            if let Ok(contents) = std::fs::read_to_string(&server.kubeconfig) {
                server.url = server_url(&contents)
                    .unwrap_or_else(|| panic!("no `server:` line in the kubeconfig:\n{contents}"));
                server.config = Some(client_config(&server.kubeconfig).await);
                return server;
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "corral apiserver wrote no kubeconfig within {START_DEADLINE:?}; its log:\n{}",
                    server.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    fn store_arguments(&self, command: &mut Command) {
        match &self.etcd {
            Some(etcd) => command
                .args(["--store", "etcd", "--etcd-endpoints"])
                .arg(etcd.endpoint()),
            None => command.args(["--store", "sqlite"]),
        };
    }
}

/// A kube-rs client configuration from a kubeconfig the server wrote (HTTPS, its CA, the
/// admin's client certificate), as any client would read it.
pub async fn client_config(kubeconfig: &Path) -> kube::Config {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(kubeconfig).expect("reading the kubeconfig");
    kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .expect("a client configuration from the kubeconfig")
}

/// The URL on the kubeconfig's `server:` line.
fn server_url(kubeconfig: &str) -> Option<String> {
    kubeconfig
        .lines()
        .find_map(|line| line.trim().strip_prefix("server:"))
        .map(|url| url.trim().to_string())
}

/// A running `corral apiserver`; killed (SIGKILL) when dropped. When the test is failing, its
/// log is printed then, so that the failure can be read next to what the server said.
pub struct ServerProcess {
    child: Child,
    /// `https://127.0.0.1:<port>`, from the kubeconfig.
    url: String,
    /// The kube-rs configuration of the kubeconfig.
    config: Option<kube::Config>,
    kubeconfig: PathBuf,
    log_path: PathBuf,
}

impl ServerProcess {
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A kube-rs client for this server, as its kubeconfig says.
    pub fn client(&self) -> kube::Client {
        let config = self.config.clone().expect("the server started");
        kube::Client::try_from(config).expect("building a kube client")
    }

    /// The server's URL, as its kubeconfig says.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> &Path {
        self.kubeconfig
            .parent()
            .expect("the kubeconfig is in the data dir")
    }

    /// Kills the server with SIGKILL (no chance to flush or shut down) and reaps it.
    pub fn kill_9(mut self) {
        self.kill_and_reap();
    }

    fn kill_and_reap(&mut self) {
        // `Child::kill` sends SIGKILL on Unix.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Everything the servers of this test logged so far.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = File::open(&self.log_path) {
            let _ = file.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_and_reap();
        if std::thread::panicking() {
            eprintln!("--- corral apiserver log ---\n{}--- end ---", self.log());
        }
    }
}

/// Whether an external client a test needs is here. When it is not: panics if the variable
/// `require` is `1` (CI sets it, so that a missing tool cannot pass as green), otherwise says
/// loudly that the test is skipped.
pub fn tool_available(found: bool, what: &str, require: &str, install_hint: &str) -> bool {
    if found {
        return true;
    }
    if std::env::var(require).as_deref() == Ok("1") {
        panic!("{what} not found ({install_hint}), and {require}=1 requires it");
    }
    eprintln!("SKIP: {what} not found ({install_hint}); test skipped (set {require}=1 to fail)");
    false
}

/// kubectl, if here (else the test is skipped, or fails under `CORRAL_REQUIRE_KUBECTL`).
pub fn kubectl() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("kubectl"))
            .find(|candidate| candidate.is_file())
    });
    tool_available(
        found.is_some(),
        "kubectl",
        "CORRAL_REQUIRE_KUBECTL",
        "install kubectl, e.g. Debian's kubernetes-client",
    )
    .then(|| found.unwrap())
}
