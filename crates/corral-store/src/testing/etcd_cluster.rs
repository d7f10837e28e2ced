//! A throwaway etcd cluster of several members on loopback, whose members a test can kill,
//! restart, freeze and thaw: the faults a production etcd cluster lives through.
//!
//! A frozen member (`SIGSTOP`) keeps its sockets open and answers nothing, to clients and to
//! its peers alike: from the outside it is a member whose links were cut, the partition case,
//! without needing network namespaces or root.

use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command};

use super::etcd_process::{
    EtcdProcess, EtcdProcessError, MemberSpec, START_ATTEMPTS, data_root, free_port_list,
    wait_until_ready, with_sources,
};

/// How a member fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberFailure {
    /// `kill -9`: connections are refused from then on.
    Killed,
    /// `SIGSTOP`: connections stay open and nothing answers (a cut link, a frozen machine).
    Frozen,
}

struct Member {
    spec: MemberSpec,
    /// The supervisor and our end of its stdin (closing it kills etcd); `None` while killed.
    process: Option<(Child, ChildStdin)>,
    frozen: bool,
}

/// A cluster of etcd members, each with its own data dir and ports; every member is killed
/// and the data removed when dropped.
pub struct EtcdCluster {
    binary: PathBuf,
    members: Vec<Member>,
    // Dropped after the members (see `Drop`).
    _dir: tempfile::TempDir,
}

impl EtcdCluster {
    /// Starts `size` members and waits until each answers a linearizable read. With no etcd
    /// binary: as [`EtcdProcess::start_or_skip`].
    pub async fn start_or_skip(size: usize) -> Option<EtcdCluster> {
        let Some(binary) = EtcdProcess::find_binary() else {
            // Says why, or panics when etcd is required.
            return EtcdProcess::start_or_skip().await.and(None);
        };
        let mut attempt = 1;
        loop {
            match Self::start(binary.clone(), size).await {
                Ok(cluster) => return Some(cluster),
                // Another process took one of the ports between our probe and etcd's bind.
                Err(EtcdProcessError::Exited { log, .. })
                    if attempt < START_ATTEMPTS && log.contains("address already in use") =>
                {
                    attempt += 1;
                }
                Err(e) => panic!("starting a test etcd cluster: {}", with_sources(&e)),
            }
        }
    }

    async fn start(binary: PathBuf, size: usize) -> Result<EtcdCluster, EtcdProcessError> {
        let dir = tempfile::Builder::new()
            .prefix("corral-etcd-cluster-")
            .tempdir_in(data_root())
            .map_err(EtcdProcessError::DataDir)?;
        let ports = free_port_list(2 * size).map_err(EtcdProcessError::Ports)?;
        let mut specs = Vec::with_capacity(size);
        for index in 0..size {
            let (client_port, peer_port) = (ports[2 * index], ports[2 * index + 1]);
            let member_dir = dir.path().join(format!("m{index}"));
            std::fs::create_dir_all(&member_dir).map_err(EtcdProcessError::DataDir)?;
            specs.push(MemberSpec {
                name: format!("m{index}"),
                dir: member_dir,
                client_port,
                peer_port,
                initial_cluster: String::new(),
                token: format!("corral-test-cluster-{client_port}"),
                tls: None,
            });
        }
        let initial_cluster = specs
            .iter()
            .map(|s| format!("{}=http://127.0.0.1:{}", s.name, s.peer_port))
            .collect::<Vec<_>>()
            .join(",");
        let token = specs[0].token.clone();
        let mut members = Vec::with_capacity(size);
        for mut spec in specs {
            spec.initial_cluster = initial_cluster.clone();
            spec.token = token.clone();
            let process = spec.spawn(&binary)?;
            members.push(Member {
                spec,
                process: Some(process),
                frozen: false,
            });
        }
        let mut cluster = EtcdCluster {
            binary,
            members,
            _dir: dir,
        };
        for index in 0..size {
            cluster.wait_until_ready(index).await?;
        }
        Ok(cluster)
    }

    async fn wait_until_ready(&mut self, index: usize) -> Result<(), EtcdProcessError> {
        let member = &mut self.members[index];
        let (supervisor, _) = member.process.as_mut().expect("the member runs");
        wait_until_ready(supervisor, &member.spec.endpoint(), &member.spec.log_path()).await
    }

    /// Every member's client URL, in the form [`crate::etcd::EtcdStore::connect`] takes.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.spec.endpoint()).collect()
    }

    /// Member `index`'s client URL.
    pub fn endpoint(&self, index: usize) -> String {
        self.members[index].spec.endpoint()
    }

    /// Fails member `index` as `failure` says.
    pub fn fail(&mut self, index: usize, failure: MemberFailure) {
        match failure {
            MemberFailure::Killed => self.kill(index),
            MemberFailure::Frozen => self.freeze(index),
        }
    }

    /// Brings member `index` back from `failure` and waits until it answers.
    pub async fn recover(&mut self, index: usize, failure: MemberFailure) {
        match failure {
            MemberFailure::Killed => self.restart(index).await,
            MemberFailure::Frozen => self.thaw(index),
        }
    }

    /// `kill -9` of member `index`'s etcd; waits until it is gone.
    pub fn kill(&mut self, index: usize) {
        let member = &mut self.members[index];
        let Some((mut supervisor, stdin)) = member.process.take() else {
            return;
        };
        if let Some(pid) = member.spec.pid() {
            signal("KILL", pid);
        }
        drop(stdin);
        let _ = supervisor.wait();
        member.frozen = false;
    }

    /// Starts member `index` again on its data dir and ports, after [`EtcdCluster::kill`],
    /// and waits until it answers (which needs it to have rejoined a quorum).
    pub async fn restart(&mut self, index: usize) {
        let member = &mut self.members[index];
        assert!(member.process.is_none(), "member {index} is running");
        let process = member
            .spec
            .spawn(&self.binary)
            .unwrap_or_else(|e| panic!("restarting etcd member {index}: {}", with_sources(&e)));
        member.process = Some(process);
        self.wait_until_ready(index)
            .await
            .unwrap_or_else(|e| panic!("restarting etcd member {index}: {}", with_sources(&e)));
    }

    /// Stops member `index` with `SIGSTOP`: it keeps its sockets and answers nothing.
    pub fn freeze(&mut self, index: usize) {
        let member = &mut self.members[index];
        if let Some(pid) = member.spec.pid() {
            signal("STOP", pid);
            member.frozen = true;
        }
    }

    /// Lets a frozen member run again.
    pub fn thaw(&mut self, index: usize) {
        let member = &mut self.members[index];
        if let Some(pid) = member.spec.pid() {
            signal("CONT", pid);
            member.frozen = false;
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            self.kill(index);
        }
    }
}

fn signal(name: &str, pid: i32) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!("kill -{name} {pid} failed: {status:?}");
    }
}
