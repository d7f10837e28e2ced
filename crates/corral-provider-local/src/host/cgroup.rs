//! A machine's cgroup: every process started in the machine joins it before it runs, so that
//! deleting the machine finds and kills all of them, whatever they forked. Under cgroup v2 the
//! cgroups are `/sys/fs/cgroup/corral-local/<id>`; under v1, in the `pids` controller's
//! hierarchy (`/sys/fs/cgroup/pids/corral-local/<id>`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{HostError, io_error};

const PARENT: &str = "corral-local";

#[derive(Clone, Debug)]
pub(super) struct Hierarchy {
    root: PathBuf,
    v2: bool,
}

impl Hierarchy {
    pub(super) fn detect() -> Result<Hierarchy, HostError> {
        let unified = Path::new("/sys/fs/cgroup");
        if unified.join("cgroup.controllers").exists() {
            return Ok(Hierarchy {
                root: unified.join(PARENT),
                v2: true,
            });
        }
        let pids = unified.join("pids");
        if pids.join("cgroup.procs").exists() {
            return Ok(Hierarchy {
                root: pids.join(PARENT),
                v2: false,
            });
        }
        Err(HostError::NoCgroupHierarchy)
    }

    pub(super) fn cgroup(&self, id: &str) -> Cgroup {
        Cgroup {
            path: self.root.join(id),
            v2: self.v2,
        }
    }
}

/// One machine's cgroup.
#[derive(Clone, Debug)]
pub struct Cgroup {
    path: PathBuf,
    v2: bool,
}

impl Cgroup {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn exists(&self) -> bool {
        self.path.exists()
    }

    pub(super) fn create(&self) -> Result<(), HostError> {
        std::fs::create_dir_all(&self.path).map_err(io_error(&self.path))
    }

    pub(super) fn procs_file(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// The processes in the cgroup now.
    pub fn processes(&self) -> Result<Vec<i32>, HostError> {
        let file = self.procs_file();
        match std::fs::read_to_string(&file) {
            Ok(text) => Ok(text.lines().filter_map(|line| line.parse().ok()).collect()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(HostError::Io { path: file, source }),
        }
    }

    /// SIGKILLs every process in the cgroup until none is left: v2's `cgroup.kill` where the
    /// kernel has it, else one process at a time, again while forks race the killing. Deleting
    /// a machine does it; so does a failure drill that crashes one (its namespace stays).
    pub async fn kill_all(&self) -> Result<(), HostError> {
        if self.v2 {
            // Kernels before 5.14 have no cgroup.kill; the loop below does its work.
            let _ = std::fs::write(self.path.join("cgroup.kill"), "1");
        }
        for _ in 0..500 {
            let processes = self.processes()?;
            if processes.is_empty() {
                return Ok(());
            }
            for pid in processes {
                // SAFETY: kill(2) with a pid read from the cgroup; a pid that has exited since
                // gets ESRCH, which is what is wanted.
                #[allow(unsafe_code)]
                unsafe {
                    libc::kill(pid, libc::SIGKILL)
                };
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(HostError::ProcessesLeft {
            path: self.path.clone(),
        })
    }

    /// Removes the (empty) cgroup.
    pub(super) fn remove(&self) -> Result<(), HostError> {
        match std::fs::remove_dir(&self.path) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error(&self.path)(error))
            }
            _ => Ok(()),
        }
    }
}
