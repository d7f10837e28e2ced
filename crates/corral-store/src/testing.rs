//! Test support: a fresh store of each backend, cleaned up when dropped.
//!
//! Compiled with the `testing` feature; used by this crate's conformance suite and by the API
//! server's tests, so that every test gets its own store and can run in parallel.

use std::any::Any;

use crate::DynStore;

/// A store for one test, and whatever keeps it alive (a temp dir, an etcd process).
pub struct TestStore {
    pub store: DynStore,
    _guard: Box<dyn Any + Send + Sync>,
}

impl TestStore {
    pub fn new(store: DynStore, guard: impl Any + Send + Sync) -> Self {
        TestStore {
            store,
            _guard: Box::new(guard),
        }
    }
}

/// A fresh in-memory store.
pub async fn memory() -> TestStore {
    TestStore::new(std::sync::Arc::new(crate::memory::MemoryStore::new()), ())
}

/// A fresh etcd (its own process and data dir) with an [`crate::etcd::EtcdStore`] on it, or
/// `None` when there is no etcd binary here (see [`EtcdProcess::start_or_skip`]).
pub async fn etcd() -> Option<TestStore> {
    let process = EtcdProcess::start_or_skip().await?;
    let store = crate::etcd::EtcdStore::connect(&process.endpoints(), "/corral-test/")
        .await
        .unwrap_or_else(|e| panic!("connecting to the test etcd at {}: {e}", process.endpoint()));
    Some(TestStore::new(std::sync::Arc::new(store), process))
}

/// A fresh three-member etcd cluster with an [`crate::etcd::EtcdStore`] connected to every
/// member, then one member failed as `failure` says (the first one, so that the store has been
/// talking to it): the store must behave as on a healthy cluster. `None` when there is no etcd
/// binary here.
pub async fn etcd_with_a_failed_member(failure: MemberFailure) -> Option<TestStore> {
    let mut cluster = EtcdCluster::start_or_skip(3).await?;
    let store = crate::etcd::EtcdStore::connect(&cluster.endpoints(), "/corral-test/")
        .await
        .unwrap_or_else(|e| panic!("connecting to the test etcd cluster: {e}"));
    cluster.fail(0, failure);
    Some(TestStore::new(std::sync::Arc::new(store), cluster))
}

/// [`etcd_with_a_failed_member`] with the member killed.
pub async fn etcd_with_a_killed_member() -> Option<TestStore> {
    etcd_with_a_failed_member(MemberFailure::Killed).await
}

/// [`etcd_with_a_failed_member`] with the member frozen.
pub async fn etcd_with_a_frozen_member() -> Option<TestStore> {
    etcd_with_a_failed_member(MemberFailure::Frozen).await
}

pub use etcd_cluster::{EtcdCluster, MemberFailure};
pub use etcd_process::{EtcdProcess, EtcdProcessError};

mod etcd_cluster;

pub(crate) mod etcd_process {
    //! A throwaway single-member etcd for tests and benchmarks.

    use std::fs::File;
    use std::io::Read;
    use std::net::TcpListener;
    use std::path::{Path, PathBuf};
    use std::process::{Child, ChildStdin, Command, Stdio};
    use std::time::{Duration, Instant};

    use crate::etcd::pb;
    use crate::etcd::pb::kv_client::KvClient;

    /// Where the binary is looked for first.
    const BINARY_VARIABLE: &str = "CORRAL_ETCD_BIN";
    /// Set to 1 to make a missing binary fail tests instead of skipping them (CI).
    const REQUIRE_VARIABLE: &str = "CORRAL_REQUIRE_ETCD";
    /// How long a start may take before it is declared failed. Generous: CI machines are slow
    /// and busy compiling; a healthy etcd answers in well under a second.
    const START_DEADLINE: Duration = Duration::from_secs(60);
    /// Pause between two readiness probes.
    const PROBE_INTERVAL: Duration = Duration::from_millis(20);
    /// Starts retried when etcd dies at once, which is what it does when another process took
    /// one of its ports between our probe for a free port and its bind.
    pub(crate) const START_ATTEMPTS: usize = 5;

    /// Runs etcd under a shell that kills it when our end of its stdin closes: when the
    /// `EtcdProcess` is dropped, and also when the test process dies without unwinding
    /// (aborted, killed by a timeout), which would otherwise leave etcd running. The shell
    /// exits with etcd's status, so an etcd that dies on its own is seen at once.
    const SUPERVISOR: &str = r#"exec 3<&0
"$0" "$@" </dev/null &
etcd=$!
echo "$etcd" > "$CORRAL_ETCD_PID_FILE"
{ cat <&3 >/dev/null; kill -9 "$etcd" 2>/dev/null; } &
watcher=$!
exec 3<&-
wait "$etcd"
status=$?
kill "$watcher" 2>/dev/null
exit "$status""#;

    /// Where the supervisor writes etcd's pid.
    const PID_FILE_VARIABLE: &str = "CORRAL_ETCD_PID_FILE";

    #[derive(Debug, thiserror::Error)]
    pub enum EtcdProcessError {
        #[error("etcd not found (install etcd-server or set {BINARY_VARIABLE} to the etcd binary)")]
        BinaryNotFound,
        #[error("preparing etcd's data dir")]
        DataDir(#[source] std::io::Error),
        #[error("finding free ports for etcd")]
        Ports(#[source] std::io::Error),
        #[error("starting {binary}")]
        Spawn {
            binary: PathBuf,
            #[source]
            source: std::io::Error,
        },
        #[error("etcd exited with {status} while starting; the end of its log:\n{log}")]
        Exited { status: String, log: String },
        #[error("etcd did not answer within {deadline:?}; the end of its log:\n{log}")]
        NotReady { deadline: Duration, log: String },
    }

    /// A fresh single-member etcd on free loopback ports, with its own data dir; killed, and
    /// its data dir removed, when dropped.
    pub struct EtcdProcess {
        supervisor: Child,
        /// Closing it tells the supervisor to kill etcd.
        stdin: Option<ChildStdin>,
        endpoint: String,
        // Dropped after the process is gone (see `Drop`).
        dir: tempfile::TempDir,
    }

    impl EtcdProcess {
        /// The etcd binary: `$CORRAL_ETCD_BIN`, else `etcd` on `PATH`, else `/usr/bin/etcd`.
        pub fn find_binary() -> Option<PathBuf> {
            if let Some(binary) = std::env::var_os(BINARY_VARIABLE) {
                return Some(PathBuf::from(binary));
            }
            let on_path = std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join("etcd"))
                    .find(|candidate| candidate.is_file())
            });
            on_path.or_else(|| {
                let fallback = PathBuf::from("/usr/bin/etcd");
                fallback.is_file().then_some(fallback)
            })
        }

        /// Starts an etcd and waits until it serves requests. With no binary: when
        /// `CORRAL_REQUIRE_ETCD=1`, panics; otherwise says loudly on stderr that the caller is
        /// skipped and returns `None`. Any other failure to start panics.
        pub async fn start_or_skip() -> Option<EtcdProcess> {
            match EtcdProcess::start().await {
                Ok(process) => Some(process),
                Err(EtcdProcessError::BinaryNotFound) => {
                    if std::env::var(REQUIRE_VARIABLE).as_deref() == Ok("1") {
                        panic!(
                            "{}, and {REQUIRE_VARIABLE}=1 requires it",
                            EtcdProcessError::BinaryNotFound
                        );
                    }
                    eprintln!(
                        "SKIP: etcd not found (install etcd-server or set {BINARY_VARIABLE}); \
                         etcd-backed test skipped"
                    );
                    None
                }
                Err(e) => panic!("starting a test etcd: {}", with_sources(&e)),
            }
        }

        /// Starts an etcd from [`EtcdProcess::find_binary`] and waits until it serves requests.
        pub async fn start() -> Result<EtcdProcess, EtcdProcessError> {
            let binary = Self::find_binary().ok_or(EtcdProcessError::BinaryNotFound)?;
            // Checked here because the supervisor would start and merely report exit 127.
            if !binary.is_file() {
                return Err(EtcdProcessError::Spawn {
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("no such file (from {BINARY_VARIABLE} or PATH)"),
                    ),
                    binary,
                });
            }
            let mut root = data_root();
            let mut attempt = 1;
            loop {
                match Self::start_once(&binary, &root).await {
                    Err(EtcdProcessError::Exited { log, .. })
                        if attempt < START_ATTEMPTS && log.contains("address already in use") =>
                    {
                        attempt += 1;
                    }
                    // A small tmpfs (containers often have 64 MiB) cannot hold etcd's
                    // preallocated write-ahead log.
                    Err(EtcdProcessError::Exited { log, .. })
                        if attempt < START_ATTEMPTS
                            && log.contains("no space left on device")
                            && root != std::env::temp_dir() =>
                    {
                        attempt += 1;
                        root = std::env::temp_dir();
                    }
                    result => return result,
                }
            }
        }

        async fn start_once(binary: &Path, root: &Path) -> Result<EtcdProcess, EtcdProcessError> {
            let dir = tempfile::Builder::new()
                .prefix("corral-etcd-")
                .tempdir_in(root)
                .map_err(EtcdProcessError::DataDir)?;
            let [client_port, peer_port] = free_ports().map_err(EtcdProcessError::Ports)?;
            let spec = MemberSpec {
                name: "corral-test".into(),
                dir: dir.path().to_path_buf(),
                client_port,
                peer_port,
                initial_cluster: format!("corral-test=http://127.0.0.1:{peer_port}"),
                token: format!("corral-test-{peer_port}"),
                tls: None,
            };
            let (supervisor, stdin) = spec.spawn(binary)?;
            let mut process = EtcdProcess {
                supervisor,
                stdin: Some(stdin),
                endpoint: spec.endpoint(),
                dir,
            };
            process.wait_until_ready(&spec.log_path()).await?;
            Ok(process)
        }

        /// Polls etcd with a read until it answers, it exits, or the deadline passes.
        async fn wait_until_ready(&mut self, log_path: &Path) -> Result<(), EtcdProcessError> {
            wait_until_ready(&mut self.supervisor, &self.endpoint, log_path).await
        }

        /// The client URL, `http://127.0.0.1:<port>`.
        pub fn endpoint(&self) -> &str {
            &self.endpoint
        }

        /// The client URLs, in the form [`crate::etcd::EtcdStore::connect`] takes.
        pub fn endpoints(&self) -> Vec<String> {
            vec![self.endpoint.clone()]
        }

        /// The directory holding etcd's data and its log (`etcd.log`).
        pub fn dir(&self) -> &Path {
            self.dir.path()
        }
    }

    impl Drop for EtcdProcess {
        fn drop(&mut self) {
            // Closing stdin makes the supervisor kill etcd; waiting for the supervisor means
            // etcd is gone before its data dir is removed.
            drop(self.stdin.take());
            let _ = self.supervisor.wait();
        }
    }

    /// Polls the etcd at `endpoint` with a read until it answers, its supervisor exits, or the
    /// deadline passes.
    pub(super) async fn wait_until_ready(
        supervisor: &mut Child,
        endpoint: &str,
        log_path: &Path,
    ) -> Result<(), EtcdProcessError> {
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(status)) = supervisor.try_wait() {
                return Err(EtcdProcessError::Exited {
                    status: status.to_string(),
                    log: log_tail(log_path),
                });
            }
            if answers(endpoint).await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(EtcdProcessError::NotReady {
                    deadline: START_DEADLINE,
                    log: log_tail(log_path),
                });
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    /// Whether the etcd at `endpoint` answers a linearizable read (which needs a quorum).
    pub(super) async fn answers(endpoint: &str) -> bool {
        let probe = async {
            let mut client = KvClient::connect(endpoint.to_string()).await.ok()?;
            let request = pb::RangeRequest {
                key: bytes::Bytes::from_static(b"corral-readiness-probe"),
                ..Default::default()
            };
            client.range(request).await.ok()
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), probe).await,
            Ok(Some(_))
        )
    }

    /// TLS of a member's client URL: its serving certificate and key, and the CA its clients'
    /// certificates must be signed by (etcd's `--client-cert-auth`), all PEM files.
    pub(crate) struct MemberTls {
        pub cert: PathBuf,
        pub key: PathBuf,
        pub client_ca: PathBuf,
    }

    /// How to run one etcd member: its name, data dir, ports and the cluster it starts in.
    pub(crate) struct MemberSpec {
        pub name: String,
        /// Holds `data/` and the member's log, `etcd.log`.
        pub dir: PathBuf,
        pub client_port: u16,
        pub peer_port: u16,
        /// etcd's `--initial-cluster`: `name=peer-url,...` of every first member.
        pub initial_cluster: String,
        pub token: String,
        /// `None`: plain HTTP.
        pub tls: Option<MemberTls>,
    }

    impl MemberSpec {
        pub fn endpoint(&self) -> String {
            let scheme = if self.tls.is_some() { "https" } else { "http" };
            format!("{scheme}://127.0.0.1:{}", self.client_port)
        }

        pub fn log_path(&self) -> PathBuf {
            self.dir.join("etcd.log")
        }

        fn pid_path(&self) -> PathBuf {
            self.dir.join("etcd.pid")
        }

        /// The pid of the member's etcd process (not its supervisor), as the supervisor wrote
        /// it when it started etcd.
        pub fn pid(&self) -> Option<i32> {
            std::fs::read_to_string(self.pid_path())
                .ok()?
                .trim()
                .parse()
                .ok()
        }

        /// Starts etcd under its supervisor (see `SUPERVISOR`); on a data dir that already
        /// holds a member, etcd restarts that member and ignores the initial cluster.
        pub fn spawn(&self, binary: &Path) -> Result<(Child, ChildStdin), EtcdProcessError> {
            let endpoint = self.endpoint();
            let peer_url = format!("http://127.0.0.1:{}", self.peer_port);
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.log_path())
                .map_err(EtcdProcessError::DataDir)?;
            let log_for_stdout = log.try_clone().map_err(EtcdProcessError::DataDir)?;
            let _ = std::fs::remove_file(self.pid_path());
            let mut command = Command::new("/bin/sh");
            command
                .arg("-c")
                .arg(SUPERVISOR)
                .arg(binary)
                .arg(format!("--name={}", self.name))
                .arg(format!("--data-dir={}", self.dir.join("data").display()))
                .arg(format!("--listen-client-urls={endpoint}"))
                .arg(format!("--advertise-client-urls={endpoint}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster={}", self.initial_cluster))
                .arg("--initial-cluster-state=new")
                .arg(format!("--initial-cluster-token={}", self.token))
                .arg("--logger=zap")
                .arg("--log-outputs=stderr")
                .arg("--log-level=warn")
                .args(self.tls.iter().flat_map(|tls| {
                    [
                        format!("--cert-file={}", tls.cert.display()),
                        format!("--key-file={}", tls.key.display()),
                        format!("--trusted-ca-file={}", tls.client_ca.display()),
                        "--client-cert-auth".to_string(),
                    ]
                }))
                .env(PID_FILE_VARIABLE, self.pid_path())
                .stdin(Stdio::piped())
                .stdout(Stdio::from(log_for_stdout))
                .stderr(Stdio::from(log));
            // etcd reads its configuration from ETCD_* variables too: keep the developer's out,
            // except the one that lets it run on less common architectures.
            for (name, _) in std::env::vars_os() {
                let name_text = name.to_string_lossy();
                if name_text.starts_with("ETCD_") && name_text != "ETCD_UNSUPPORTED_ARCH" {
                    command.env_remove(&name);
                }
            }
            let mut supervisor = command.spawn().map_err(|source| EtcdProcessError::Spawn {
                binary: binary.to_path_buf(),
                source,
            })?;
            let stdin = supervisor.stdin.take().expect("stdin is piped");
            Ok((supervisor, stdin))
        }
    }

    /// Where data dirs go: tmpfs when there is one. etcd 3.4 has no switch to skip fsync, and
    /// on tmpfs an fsync costs nothing; a test etcd's data need not outlive the test.
    pub(super) fn data_root() -> PathBuf {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
            return shm.to_path_buf();
        }
        std::env::temp_dir()
    }

    /// Two ports that were free a moment ago: bound with port 0, then released for etcd.
    pub(crate) fn free_ports() -> std::io::Result<[u16; 2]> {
        let ports = free_port_list(2)?;
        Ok([ports[0], ports[1]])
    }

    /// `count` distinct ports that were free a moment ago: all bound at once (so none is
    /// handed out twice), then released for etcd.
    pub(crate) fn free_port_list(count: usize) -> std::io::Result<Vec<u16>> {
        let listeners = (0..count)
            .map(|_| TcpListener::bind("127.0.0.1:0"))
            .collect::<std::io::Result<Vec<_>>>()?;
        listeners
            .iter()
            .map(|listener| Ok(listener.local_addr()?.port()))
            .collect()
    }

    /// An error and its sources, for a panic message (which shows only what it is given).
    pub(super) fn with_sources(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    }

    fn log_tail(path: &Path) -> String {
        let mut text = String::new();
        if let Ok(mut file) = File::open(path) {
            let _ = file.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

/// A fresh SQLite store in a temporary directory, removed when the `TestStore` is dropped.
pub async fn sqlite() -> TestStore {
    let dir = tempfile::tempdir().expect("creating a temporary directory for a SQLite store");
    let store = crate::sqlite::SqliteStore::open(&dir.path().join("corral.db"))
        .expect("opening a fresh SQLite store");
    // The store is dropped before the directory (fields drop in order): its writer thread
    // stops and closes the file before the directory goes.
    TestStore::new(std::sync::Arc::new(store), dir)
}
