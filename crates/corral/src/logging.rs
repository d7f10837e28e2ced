//! Where the log goes: the tracing subscriber of every command, and `corral up`'s log file.
//!
//! `corral up` writes its log to `<data-dir>/corral.log`, rotated by size, so that the
//! terminal keeps the progress view and a pipe (CI, nohup, tee) gets only what a person reads;
//! `--log-to-stderr` streams it instead. The other commands log to standard error. Warnings
//! and errors are counted as they are logged, so that the progress view can say that there
//! are some and where to read them instead of hiding them.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The log file's name in the data directory.
pub const LOG_FILE: &str = "corral.log";

/// A log file is rotated once it would grow past this...
const MAX_BYTES: u64 = 10 * 1024 * 1024;
/// ...into `corral.log.1`, the older ones moving up to `corral.log.<KEEP>`, the oldest gone.
const KEEP: usize = 3;

pub enum Destination {
    /// Standard error, coloured when it is a terminal and NO_COLOR is unset.
    Stderr,
    /// A file, rotated by size.
    File(PathBuf),
}

/// Installs the subscriber: `filter` (from `RUST_LOG` or the command's default) decides what
/// is logged; it goes to `destination`.
pub fn init(destination: Destination, filter: tracing_subscriber::EnvFilter) -> anyhow::Result<()> {
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(WarningCounter);
    match destination {
        Destination::Stderr => {
            let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            registry
                .with(
                    tracing_subscriber::fmt::layer()
                        .with_writer(std::io::stderr)
                        .with_ansi(ansi),
                )
                .init();
        }
        Destination::File(path) => {
            let file = RotatingFile::open(path, MAX_BYTES, KEEP)?;
            registry
                .with(
                    tracing_subscriber::fmt::layer()
                        .with_writer(Mutex::new(file))
                        .with_ansi(false),
                )
                .init();
        }
    }
    Ok(())
}

static WARNINGS: AtomicU64 = AtomicU64::new(0);
static ERRORS: AtomicU64 = AtomicU64::new(0);

/// Counts the warnings and errors that pass the filter, that is, that are logged.
struct WarningCounter;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WarningCounter {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        match *event.metadata().level() {
            tracing::Level::ERROR => ERRORS.fetch_add(1, Ordering::Relaxed),
            tracing::Level::WARN => WARNINGS.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
    }
}

/// "1 warning — see .corral/corral.log" when anything was logged at WARN or ERROR so far,
/// else `None`.
pub fn problems_seen(log: &Path) -> Option<String> {
    let (warnings, errors) = (
        WARNINGS.load(Ordering::Relaxed),
        ERRORS.load(Ordering::Relaxed),
    );
    describe_problems(warnings, errors, log)
}

fn describe_problems(warnings: u64, errors: u64, log: &Path) -> Option<String> {
    let count = |n: u64, what: &str| match n {
        0 => None,
        1 => Some(format!("1 {what}")),
        n => Some(format!("{n} {what}s")),
    };
    let parts: Vec<String> = [count(errors, "error"), count(warnings, "warning")]
        .into_iter()
        .flatten()
        .collect();
    (!parts.is_empty()).then(|| format!("{} — see {}", parts.join(", "), log.display()))
}

/// A log file that starts over when it would grow past `max_bytes`: the full one becomes
/// `<name>.1`, the earlier ones `<name>.2` … `<name>.<keep>`, and the oldest is removed.
pub struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    file: File,
    /// The current file's size.
    written: u64,
}

impl RotatingFile {
    /// Opens `path` for appending (a restart continues the same file).
    pub fn open(path: PathBuf, max_bytes: u64, keep: usize) -> anyhow::Result<RotatingFile> {
        let file = open_append(&path)?;
        let written = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(RotatingFile {
            path,
            max_bytes,
            keep,
            file,
            written,
        })
    }

    fn numbered(&self, n: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        // Renames onto an existing name replace it, so the oldest is dropped by the first.
        for n in (1..self.keep).rev() {
            let from = self.numbered(n);
            if from.exists() {
                std::fs::rename(&from, self.numbered(n + 1))?;
            }
        }
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            std::fs::rename(&self.path, self.numbered(1))?;
        }
        self.file = open_append(&self.path).map_err(std::io::Error::other)?;
        self.written = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> anyhow::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot open the log file {}: {e}", path.display()))
}

impl Write for RotatingFile {
    /// Writes all of `buf` to one file: the subscriber writes one event per call, so a line
    /// is never split between two files.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written > 0 && self.written + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests;
