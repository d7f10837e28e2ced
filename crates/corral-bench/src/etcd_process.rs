//! A single-member etcd for the benchmark, with its data dir where the caller says.
//!
//! `corral_store::testing::EtcdProcess` puts its data on tmpfs (`/dev/shm`) so that tests
//! don't pay for fsync; a benchmark against SQLite on disk must put etcd's write-ahead log on
//! the same disk, or the comparison measures the file system instead of the stores. The rest
//! (free loopback ports, a supervisor shell that kills etcd when this process goes away,
//! readiness by polling) follows `EtcdProcess`.

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use corral_store::etcd::pb::RangeRequest;
use corral_store::etcd::pb::kv_client::KvClient;

/// Kills etcd when our end of its stdin closes, including when this process dies without
/// unwinding. Exits with etcd's status.
const SUPERVISOR: &str = r#"exec 3<&0
"$0" "$@" </dev/null &
etcd=$!
{ cat <&3 >/dev/null; kill -9 "$etcd" 2>/dev/null; } &
watcher=$!
exec 3<&-
wait "$etcd"
status=$?
kill "$watcher" 2>/dev/null
exit "$status""#;

const START_DEADLINE: Duration = Duration::from_secs(60);
const START_ATTEMPTS: usize = 5;

/// A running etcd; killed, and its data dir removed, when dropped.
pub struct EtcdServer {
    supervisor: Child,
    stdin: Option<ChildStdin>,
    endpoint: String,
    binary: PathBuf,
    dir: tempfile::TempDir,
}

impl EtcdServer {
    /// `$CORRAL_ETCD_BIN`, else `etcd` on `PATH`, else `/usr/bin/etcd` (as the tests look).
    pub fn find_binary() -> Option<PathBuf> {
        if let Some(binary) = std::env::var_os("CORRAL_ETCD_BIN") {
            let binary = PathBuf::from(binary);
            return binary.is_file().then_some(binary);
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

    /// Starts `binary` with its data dir in a fresh directory under `root`, and waits until it
    /// answers.
    pub async fn start(binary: &Path, root: &Path) -> anyhow::Result<EtcdServer> {
        let mut attempt = 1;
        loop {
            match Self::start_once(binary, root).await {
                Err(error)
                    if attempt < START_ATTEMPTS
                        && format!("{error:#}").contains("address already in use") =>
                {
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(binary: &Path, root: &Path) -> anyhow::Result<EtcdServer> {
        let dir = tempfile::Builder::new()
            .prefix("etcd-")
            .tempdir_in(root)
            .with_context(|| format!("creating etcd's data dir under {}", root.display()))?;
        let [client_port, peer_port] = free_ports()?;
        let endpoint = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let log_path = dir.path().join("etcd.log");
        let log = File::create(&log_path)?;
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(SUPERVISOR)
            .arg(binary)
            .arg("--name=corral-bench")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={endpoint}"))
            .arg(format!("--advertise-client-urls={endpoint}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=corral-bench={peer_url}"))
            .arg("--initial-cluster-state=new")
            .arg(format!("--initial-cluster-token=corral-bench-{peer_port}"))
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .arg("--log-level=warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        for (name, _) in std::env::vars_os() {
            let text = name.to_string_lossy();
            if text.starts_with("ETCD_") && text != "ETCD_UNSUPPORTED_ARCH" {
                command.env_remove(&name);
            }
        }
        let mut supervisor = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let stdin = supervisor.stdin.take();
        let mut server = EtcdServer {
            supervisor,
            stdin,
            endpoint,
            binary: binary.to_path_buf(),
            dir,
        };
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if let Ok(Some(status)) = server.supervisor.try_wait() {
                bail!(
                    "etcd exited with {status} while starting:\n{}",
                    log_tail(&log_path)
                );
            }
            if server.answers().await {
                return Ok(server);
            }
            if Instant::now() >= deadline {
                bail!(
                    "etcd did not answer within {START_DEADLINE:?}:\n{}",
                    log_tail(&log_path)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn answers(&self) -> bool {
        let probe = async {
            let mut client = KvClient::connect(self.endpoint.clone()).await?;
            let request = RangeRequest {
                key: bytes::Bytes::from_static(b"corral-bench-readiness"),
                ..Default::default()
            };
            anyhow::Ok(client.range(request).await?)
        };
        matches!(
            tokio::time::timeout(Duration::from_secs(2), probe).await,
            Ok(Ok(_))
        )
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn endpoints(&self) -> Vec<String> {
        vec![self.endpoint.clone()]
    }

    /// The pid of etcd itself (the supervisor shell's child).
    pub fn pid(&self) -> Option<u32> {
        let supervisor = self.supervisor.id();
        std::fs::read_dir("/proc").ok()?.find_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (name, rest) = stat.split_once(" (")?.1.rsplit_once(')')?;
            let parent: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            (parent == supervisor && name == "etcd").then_some(pid)
        })
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The first line of `etcd --version`.
    pub fn version(&self) -> String {
        Command::new(&self.binary)
            .arg("--version")
            .output()
            .ok()
            .and_then(|output| {
                String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .next()
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "etcd (version unknown)".into())
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.supervisor.wait();
    }
}

/// Two ports that were free a moment ago (both bound at once, so they differ).
fn free_ports() -> anyhow::Result<[u16; 2]> {
    let first = TcpListener::bind("127.0.0.1:0").context("finding free ports for etcd")?;
    let second = TcpListener::bind("127.0.0.1:0").context("finding free ports for etcd")?;
    Ok([first.local_addr()?.port(), second.local_addr()?.port()])
}

fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
