//! Machines on this host. A machine is a network namespace (`corral-<root>-<uid>`) with a veth pair
//! onto its cluster's bridge, an address from the cluster's /24, a cgroup holding every process
//! started in it ([`Host::spawn`]), and a state directory.
//!
//! What exists is recorded under the state root — `clusters/<key>.json` for a cluster's
//! network, `machines/<uid>/machine.json` for a machine, beside the directory `root/` that is
//! the machine's own — so that another [`Host`] on the same root (the provider after a restart)
//! finds the machines again. The kernel's objects are named from the machine's uid and the
//! cluster's key, never counted, so creating again after a crash finds what the crash left,
//! and [`Host::orphans`] lists namespaces that no record claims.
//!
//! Every operation is idempotent: creating a machine whose uid is recorded returns the
//! recorded machine; deleting one that is gone deletes nothing and succeeds. Creations and
//! deletions on one host are serialised by a lock file in `/run/lock`, which also keeps two
//! processes with different state roots (two tests, two providers) from picking one subnet.

mod cgroup;
mod net;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use cgroup::Cgroup;

/// The prefix of every network namespace a [`Host`] creates: `corral-<root>-<uid>`, where
/// `<root>` tells the state roots on one host apart.
pub const NETNS_PREFIX: &str = "corral-";

/// Where the lock that serialises changes to this host's machines lives.
const HOST_LOCK: &str = "/run/lock/corral-local.lock";

/// A machine to create.
#[derive(Clone, Debug)]
pub struct MachineRequest {
    /// The Machine's uid: the machine's identity (creating twice with one uid gives one machine).
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub cluster_name: String,
}

/// A machine on this host, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalMachine {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub cluster_name: String,
    /// `local://<cluster>/<machine>`.
    pub provider_id: String,
    pub address: Ipv4Addr,
    /// The network namespace, as `ip netns` names it.
    pub netns: String,
    /// The host's end of the veth pair (the machine's end is `eth0`).
    pub host_veth: String,
    pub bridge: String,
}

/// A cluster's network on this host: a bridge with the gateway address of a /24.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetwork {
    pub namespace: String,
    pub cluster_name: String,
    pub bridge: String,
    /// The /24's first address, the bridge's (machines route through it to the host).
    pub gateway: Ipv4Addr,
}

impl ClusterNetwork {
    fn subnet(&self) -> [u8; 3] {
        let [a, b, c, _] = self.gateway.octets();
        [a, b, c]
    }
}

/// What a host operation failed on.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("`ip {args}` failed: {stderr}")]
    Ip { args: String, stderr: String },
    #[error("cannot run iproute2's `ip` (install iproute2): {0}")]
    IpMissing(#[source] std::io::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the record {path} is not readable: {source}")]
    Record {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "no cgroup hierarchy to hold a machine's processes (neither cgroup v2 nor v1's pids controller is mounted under /sys/fs/cgroup)"
    )]
    NoCgroupHierarchy,
    #[error("the processes of cgroup {path} did not all end after SIGKILL")]
    ProcessesLeft { path: PathBuf },
    #[error("no free /24 left in {pool}.0.0/16 for cluster {cluster}")]
    NoFreeSubnet { pool: String, cluster: String },
    #[error("cluster {cluster}'s /24 has no free address left")]
    NoFreeAddress { cluster: String },
    #[error("machine {uid} has no network namespace (it was deleted)")]
    NoNamespace { uid: String },
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> HostError + '_ {
    move |source| HostError::Io {
        path: path.to_owned(),
        source,
    }
}

/// This host's machines under one state root.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    /// The first two octets of the /16 that clusters' /24s are taken from.
    pool: [u8; 2],
    cgroups: cgroup::Hierarchy,
}

impl Host {
    /// The machines recorded under `root`, with clusters' subnets taken from `10.<pool>.0.0/16`.
    /// Fails when no cgroup hierarchy is mounted.
    pub fn new(root: impl Into<PathBuf>, pool: u8) -> Result<Host, HostError> {
        Ok(Host {
            inner: Arc::new(Inner {
                root: root.into(),
                pool: [10, pool],
                cgroups: cgroup::Hierarchy::detect()?,
            }),
        })
    }

    /// The state directory of the machine with this uid: its record and its `root/`.
    pub fn machine_dir(&self, uid: &str) -> PathBuf {
        self.inner.root.join("machines").join(uid)
    }

    /// The cgroup that holds the machine's processes.
    pub fn cgroup(&self, uid: &str) -> Cgroup {
        self.inner.cgroups.cgroup(&short_id(uid))
    }

    /// Creates the machine, or returns it when its uid is already recorded. The cluster's
    /// network is created with its first machine.
    pub async fn create_machine(
        &self,
        request: &MachineRequest,
    ) -> Result<LocalMachine, HostError> {
        let _lock = HostLock::acquire().await?;
        if let Some(machine) = self.machine(&request.uid).await? {
            return Ok(machine);
        }
        let network = self
            .ensure_network_locked(&request.namespace, &request.cluster_name)
            .await?;
        let taken: Vec<Ipv4Addr> = self
            .machines()
            .await?
            .into_iter()
            .filter(|machine| machine.bridge == network.bridge)
            .map(|machine| machine.address)
            .collect();
        let [a, b, c] = network.subnet();
        let address = (2..=254)
            .map(|d| Ipv4Addr::new(a, b, c, d))
            .find(|address| !taken.contains(address))
            .ok_or_else(|| HostError::NoFreeAddress {
                cluster: request.cluster_name.clone(),
            })?;
        let id = short_id(&request.uid);
        let machine = LocalMachine {
            uid: request.uid.clone(),
            namespace: request.namespace.clone(),
            name: request.name.clone(),
            cluster_name: request.cluster_name.clone(),
            provider_id: format!("local://{}/{}", request.cluster_name, request.name),
            address,
            netns: self.netns_name(&request.uid),
            host_veth: format!("cvh{id}"),
            bridge: network.bridge.clone(),
        };
        tracing::info!(machine = %request.name, address = %address, "Creating local machine");
        // The cgroup first, the record last: whatever a crash leaves in between is found by
        // its name from the uid and replaced or removed.
        self.cgroup(&machine.uid).create()?;
        net::create_machine_link(&machine, &format!("cvp{id}"), network.gateway).await?;
        let dir = self.machine_dir(&machine.uid);
        std::fs::create_dir_all(dir.join("root")).map_err(io_error(&dir))?;
        write_record(&dir.join("machine.json"), &machine)?;
        Ok(machine)
    }

    /// The recorded machine with this uid.
    pub async fn machine(&self, uid: &str) -> Result<Option<LocalMachine>, HostError> {
        read_record(&self.machine_dir(uid).join("machine.json"))
    }

    /// Every recorded machine.
    pub async fn machines(&self) -> Result<Vec<LocalMachine>, HostError> {
        let dir = self.inner.root.join("machines");
        let mut machines = Vec::new();
        for uid in list_dir(&dir)? {
            if let Some(machine) = self.machine(&uid).await? {
                machines.push(machine);
            }
        }
        machines.sort_by(|a, b| (&a.cluster_name, &a.name).cmp(&(&b.cluster_name, &b.name)));
        Ok(machines)
    }

    /// Kills every process of the machine, removes its namespace (and so its veth pair), its
    /// cgroup and its state. Returns false when nothing of it was left.
    pub async fn delete_machine(&self, uid: &str) -> Result<bool, HostError> {
        let _lock = HostLock::acquire().await?;
        let recorded = self.machine(uid).await?.is_some();
        let cgroup = self.cgroup(uid);
        let had_cgroup = cgroup.exists();
        if had_cgroup {
            cgroup.kill_all().await?;
            cgroup.remove()?;
        }
        let netns = self.netns_name(uid);
        let had_netns = net::netns_exists(&netns);
        if had_netns {
            tracing::info!(%uid, "Deleting local machine");
            net::delete_netns(&netns).await?;
        }
        // The host's end goes with the namespace; one left by a crash between the two
        // creations (the namespace not yet made) is removed by name.
        net::delete_link(&format!("cvh{}", short_id(uid))).await?;
        let dir = self.machine_dir(uid);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io_error(&dir))?;
        }
        Ok(recorded || had_cgroup || had_netns)
    }

    /// The network namespace of the machine with this uid.
    pub fn netns_name(&self, uid: &str) -> String {
        format!("{}{uid}", self.netns_prefix())
    }

    /// `corral-<root>-`: six characters of the state root's hash keep the machines of two
    /// roots on one host (two providers, two tests) from passing for each other's orphans.
    fn netns_prefix(&self) -> String {
        let root = short_id(&self.inner.root.display().to_string());
        format!("{NETNS_PREFIX}{}-", &root[..6])
    }

    /// Network namespaces of this state root that no machine records: what a crash left
    /// between making a machine's namespace and recording it, or a record lost. Their uids.
    pub async fn orphans(&self) -> Result<Vec<String>, HostError> {
        let prefix = self.netns_prefix();
        let mut orphans = Vec::new();
        for netns in net::list_netns()? {
            let Some(uid) = netns.strip_prefix(&prefix) else {
                continue;
            };
            if self.machine(uid).await?.is_none() {
                orphans.push(uid.to_owned());
            }
        }
        orphans.sort();
        Ok(orphans)
    }

    /// The cluster's network, created when missing.
    pub async fn ensure_network(
        &self,
        namespace: &str,
        cluster_name: &str,
    ) -> Result<ClusterNetwork, HostError> {
        let _lock = HostLock::acquire().await?;
        self.ensure_network_locked(namespace, cluster_name).await
    }

    async fn ensure_network_locked(
        &self,
        namespace: &str,
        cluster_name: &str,
    ) -> Result<ClusterNetwork, HostError> {
        let path = self.network_record(namespace, cluster_name);
        let network = match read_record::<ClusterNetwork>(&path)? {
            Some(network) => network,
            None => {
                let [a, b] = self.inner.pool;
                let in_use = net::subnets_in_use().await?;
                let c = (1..=254)
                    .find(|c| !in_use.contains(&[a, b, *c]))
                    .ok_or_else(|| HostError::NoFreeSubnet {
                        pool: format!("{a}.{b}"),
                        cluster: cluster_name.to_owned(),
                    })?;
                let network = ClusterNetwork {
                    namespace: namespace.to_owned(),
                    cluster_name: cluster_name.to_owned(),
                    // The root in the name too: two state roots on one host (two tests, two
                    // providers) may each have a cluster default/demo.
                    bridge: format!(
                        "cbr{}",
                        short_id(&format!(
                            "{}\n{}",
                            self.inner.root.display(),
                            cluster_key(namespace, cluster_name)
                        ))
                    ),
                    gateway: Ipv4Addr::new(a, b, c, 1),
                };
                write_record(&path, &network)?;
                network
            }
        };
        net::ensure_bridge(&network.bridge, network.gateway).await?;
        Ok(network)
    }

    /// Removes the cluster's bridge and record once no machine of it is left. Returns false
    /// while machines remain.
    pub async fn delete_network(
        &self,
        namespace: &str,
        cluster_name: &str,
    ) -> Result<bool, HostError> {
        let _lock = HostLock::acquire().await?;
        let path = self.network_record(namespace, cluster_name);
        let Some(network) = read_record::<ClusterNetwork>(&path)? else {
            return Ok(true);
        };
        if self
            .machines()
            .await?
            .iter()
            .any(|machine| machine.bridge == network.bridge)
        {
            return Ok(false);
        }
        net::delete_link(&network.bridge).await?;
        std::fs::remove_file(&path).map_err(io_error(&path))?;
        Ok(true)
    }

    /// Deletes every machine of the cluster, then its network.
    pub async fn delete_cluster(
        &self,
        namespace: &str,
        cluster_name: &str,
    ) -> Result<(), HostError> {
        for machine in self.machines().await? {
            if machine.namespace == namespace && machine.cluster_name == cluster_name {
                self.delete_machine(&machine.uid).await?;
            }
        }
        self.delete_network(namespace, cluster_name).await.map(drop)
    }

    /// Starts `command` inside the machine: in its network namespace and its cgroup, from
    /// before the program's first instruction (so nothing it forks escapes either).
    #[allow(unsafe_code)]
    pub fn spawn(
        &self,
        machine: &LocalMachine,
        command: &mut tokio::process::Command,
    ) -> Result<tokio::process::Child, HostError> {
        let netns_path = net::netns_path(&machine.netns);
        let netns = std::fs::File::open(&netns_path).map_err(|_| HostError::NoNamespace {
            uid: machine.uid.clone(),
        })?;
        let procs = self.cgroup(&machine.uid).procs_file();
        let procs_c = std::ffi::CString::new(procs.as_os_str().as_encoded_bytes())
            .expect("a cgroup path has no NUL byte");
        use std::os::fd::AsRawFd;
        let netns_fd = netns.as_raw_fd();
        // SAFETY: between fork and exec only async-signal-safe calls are made (open, write,
        // close, setns) on memory allocated before the fork.
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs_c.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0": the writing process itself, in cgroup v1 and v2 alike.
                let written = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if written != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::setns(netns_fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(io_error(Path::new(&netns_path)));
        drop(netns);
        child
    }

    fn network_record(&self, namespace: &str, cluster_name: &str) -> PathBuf {
        self.inner
            .root
            .join("clusters")
            .join(format!("{}.json", cluster_key(namespace, cluster_name)))
    }
}

/// `<namespace>_<cluster>`: unique, as neither a namespace nor a cluster name has `_`.
fn cluster_key(namespace: &str, cluster_name: &str) -> String {
    format!("{namespace}_{cluster_name}")
}

/// Ten hexadecimal characters of a SHA-256: names for the kernel's objects, whose names are
/// at most 15 bytes (`cvh` + 10).
fn short_id(key: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    digest.as_ref()[..5]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn read_record<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, HostError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| HostError::Record {
                path: path.to_owned(),
                source,
            }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(HostError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes the record whole or not at all: a temporary file, synced, renamed over.
fn write_record<T: Serialize>(path: &Path, record: &T) -> Result<(), HostError> {
    let dir = path.parent().expect("a record is in a directory");
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let temporary = path.with_extension("json.new");
    let bytes = serde_json::to_vec_pretty(record).expect("a record serialises");
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    };
    write().map_err(io_error(path))
}

fn list_dir(dir: &Path) -> Result<Vec<String>, HostError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|entry| {
                entry
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .map_err(io_error(dir))
            })
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(HostError::Io {
            path: dir.to_owned(),
            source,
        }),
    }
}

/// The host-wide lock, held while this process changes machines or networks.
struct HostLock(#[allow(dead_code)] std::fs::File);

impl HostLock {
    async fn acquire() -> Result<HostLock, HostError> {
        let path = Path::new(HOST_LOCK);
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(path.parent().unwrap()).map_err(io_error(path))?;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)
                .map_err(io_error(path))?;
            file.lock().map_err(io_error(path))?;
            Ok(HostLock(file))
        })
        .await
        .expect("the lock task does not panic")
    }
}
