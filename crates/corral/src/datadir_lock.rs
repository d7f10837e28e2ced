//! One process per data directory: `corral up` and `corral apiserver` hold an exclusive lock
//! on `<data-dir>/corral.lock` for their whole life, as etcd locks its data dir. Two servers
//! over one store would each keep their own watch cache and two sets of controllers would
//! write the same objects, which is how data gets lost.
//!
//! The lock is the kernel's (`flock`, through `File::try_lock`), held by the open file: it goes
//! away with the process however the process ends, so a `kill -9` never leaves a stale lock.
//! The file itself stays; what it says (the holder's pid and address) is read only while it
//! is locked, to tell a second process who is there. Readers of a live data dir (the store's
//! own tools) use SQLite's locking, not this one.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name in the data directory.
pub const LOCK_FILE: &str = "corral.lock";

/// The lock this process holds, once [`hold`] took it: never dropped, so held until the
/// process ends.
static HELD: std::sync::OnceLock<DataDirLock> = std::sync::OnceLock::new();

/// Creates `data_dir` if needed and locks it for the rest of this process's life, or says
/// who holds it. Called before anything is written into the data directory.
pub fn hold(data_dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(data_dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create the data directory {}: {e}",
            data_dir.display()
        )
    })?;
    let lock = DataDirLock::acquire(data_dir)?;
    let _ = HELD.set(lock);
    Ok(())
}

/// Writes the API server's URL into the held lock file (nothing when none is held).
pub fn record_url(url: &str) -> anyhow::Result<()> {
    if let Some(lock) = HELD.get() {
        lock.record_url(url)?;
    }
    Ok(())
}

/// A data directory's lock, held until dropped (or the process ends).
#[derive(Debug)]
pub struct DataDirLock {
    file: File,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock; `holder` is what it wrote into the lock file.
    #[error("{data_dir} is in use by {holder}; stop it first, or use another --data-dir", data_dir = .data_dir.display())]
    InUse { data_dir: PathBuf, holder: Holder },
    #[error("cannot lock {path}: {source}", path = .path.display())]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Who holds a data directory, as its lock file says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Holder {
    pub pid: Option<u32>,
    /// The API server's URL; none while it is still starting.
    pub url: Option<String>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "corral (pid {pid}")?,
            None => write!(f, "another corral (pid unknown")?,
        }
        match &self.url {
            Some(url) => write!(f, ", listening on {url})"),
            None => write!(f, ", starting)"),
        }
    }
}

impl Holder {
    /// Reads the lock file's `pid: N` and `url: U` lines; what is missing stays `None`.
    fn parse(text: &str) -> Holder {
        let mut holder = Holder::default();
        for line in text.lines() {
            match line.split_once(':').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("pid", pid)) => holder.pid = pid.parse().ok(),
                Some(("url", url)) if !url.is_empty() => holder.url = Some(url.to_string()),
                _ => {}
            }
        }
        holder
    }

    fn render(&self) -> String {
        let mut text = String::new();
        if let Some(pid) = self.pid {
            text.push_str(&format!("pid: {pid}\n"));
        }
        if let Some(url) = &self.url {
            text.push_str(&format!("url: {url}\n"));
        }
        text
    }
}

impl DataDirLock {
    /// Locks `data_dir` (which must exist) for this process, or says who holds it. Never
    /// waits: a second process fails at once.
    pub fn acquire(data_dir: &Path) -> Result<DataDirLock, LockError> {
        let path = data_dir.join(LOCK_FILE);
        let failed = |source| LockError::Lock {
            path: path.clone(),
            source,
        };
        // Not truncated on open: until this process has the lock, the contents are the
        // holder's.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(failed)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(LockError::InUse {
                    data_dir: data_dir.to_path_buf(),
                    holder: Holder::parse(&text),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(failed(source)),
        }
        let lock = DataDirLock { file, path };
        lock.write(&Holder {
            pid: Some(std::process::id()),
            url: None,
        })?;
        Ok(lock)
    }

    /// Records the API server's URL, for the message a second process prints.
    pub fn record_url(&self, url: &str) -> Result<(), LockError> {
        self.write(&Holder {
            pid: Some(std::process::id()),
            url: Some(url.to_string()),
        })
    }

    fn write(&self, holder: &Holder) -> Result<(), LockError> {
        let failed = |source| LockError::Lock {
            path: self.path.clone(),
            source,
        };
        let mut file = &self.file;
        file.set_len(0).map_err(failed)?;
        file.seek(SeekFrom::Start(0)).map_err(failed)?;
        file.write_all(holder.render().as_bytes()).map_err(failed)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
