//! The audit log file: events go through a bounded queue to a thread that writes them as
//! JSON lines through a buffer, flushed whenever the queue runs empty, so that a request never
//! waits on the disk. A full queue drops the event and says so in the server's log (kube's
//! batch backend does the same).
//!
//! The file rotates as kube-apiserver's (lumberjack's): before a line that would take it past
//! [`Rotation::max_size_mb`] it is renamed `<name>-<UTC time>.<ext>` (`audit-2026-12-07T22-06-27.123.log`)
//! and a new one started; then the backups beyond [`Rotation::max_backups`] (newest kept) and
//! those older than [`Rotation::max_age_days`] (by the time in their name) are removed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use time::OffsetDateTime;
use time::macros::format_description;

/// kube-apiserver's default `--audit-log-batch-buffer-size`.
const QUEUE: usize = 10_000;
/// lumberjack's size when `--audit-log-maxsize` is 0.
const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// `--audit-log-maxsize`, `--audit-log-maxbackup`, `--audit-log-maxage` (kube's defaults: 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Megabytes (MiB) a file may grow to before it is rotated; 0 is lumberjack's 100.
    pub max_size_mb: u64,
    /// Old files kept; 0 keeps all (unless `max_age_days` removes them).
    pub max_backups: usize,
    /// Days an old file is kept, by the time in its name; 0 keeps it whatever its age.
    pub max_age_days: u64,
}

pub struct Writer {
    sender: std::sync::mpsc::SyncSender<Vec<u8>>,
    dropped: AtomicU64,
}

impl Writer {
    /// Appends to `path` (created with mode 0600, rotated as `rotation` says), or standard
    /// output for `-` as kube-apiserver's `--audit-log-path -`.
    pub fn open(path: &Path, rotation: Rotation) -> std::io::Result<Writer> {
        let mut sink = if path == Path::new("-") {
            Sink::Stdout(std::io::BufWriter::new(std::io::stdout()))
        } else {
            Sink::File(RotatingFile::open(path.to_path_buf(), rotation)?)
        };
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<u8>>(QUEUE);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                while let Ok(line) = receiver.recv() {
                    let mut result = sink.write_line(&line);
                    // Drain what is queued, then flush once.
                    while let Ok(line) = receiver.try_recv() {
                        result = result.and(sink.write_line(&line));
                    }
                    if let Err(error) = result.and(sink.flush()) {
                        tracing::error!(%error, "Writing the audit log failed");
                    }
                }
            })?;
        Ok(Writer {
            sender,
            dropped: AtomicU64::new(0),
        })
    }

    /// Queues one event (a JSON line with its newline).
    pub fn write(&self, line: Vec<u8>) {
        if self.sender.try_send(line).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::error!(dropped, "Audit log queue full: events dropped");
            }
        }
    }
}

enum Sink {
    Stdout(std::io::BufWriter<std::io::Stdout>),
    File(RotatingFile),
}

impl Sink {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.write_all(line),
            Sink::File(file) => file.write_line(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(out) => out.flush(),
            Sink::File(file) => file.flush(),
        }
    }
}

/// The log file and how much it holds.
pub(crate) struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    out: std::io::BufWriter<std::fs::File>,
    size: u64,
}

impl RotatingFile {
    pub(crate) fn open(path: PathBuf, rotation: Rotation) -> std::io::Result<RotatingFile> {
        let file = open_append(&path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path,
            rotation,
            out: std::io::BufWriter::with_capacity(256 * 1024, file),
            size,
        })
    }

    fn max_size(&self) -> u64 {
        let mb = match self.rotation.max_size_mb {
            0 => DEFAULT_MAX_SIZE_MB,
            mb => mb,
        };
        mb.saturating_mul(1024 * 1024)
    }

    /// Writes whole lines: a line never straddles two files. A line longer than the limit
    /// gets a file of its own.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.size > 0 && self.size + line.len() as u64 > self.max_size() {
            self.rotate(OffsetDateTime::now_utc())?;
        }
        self.out.write_all(line)?;
        self.size += line.len() as u64;
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    fn rotate(&mut self, now: OffsetDateTime) -> std::io::Result<()> {
        self.out.flush()?;
        let (stem, extension) = self.name_parts();
        let stamp = now
            .format(format_description!(
                "[year]-[month]-[day]T[hour]-[minute]-[second].[subsecond digits:3]"
            ))
            .expect("UTC formats");
        std::fs::rename(
            &self.path,
            self.path
                .with_file_name(format!("{stem}-{stamp}{extension}")),
        )?;
        self.out = std::io::BufWriter::with_capacity(256 * 1024, open_append(&self.path)?);
        self.size = 0;
        self.remove_old(now);
        Ok(())
    }

    /// `audit` and `.log` of `audit.log`.
    fn name_parts(&self) -> (String, String) {
        let name = self
            .path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.rfind('.') {
            Some(dot) if dot > 0 => (name[..dot].to_owned(), name[dot..].to_owned()),
            _ => (name, String::new()),
        }
    }

    /// Removes the backups beyond `max_backups` and older than `max_age_days`; a failure
    /// is logged, not returned (the log goes on).
    fn remove_old(&self, now: OffsetDateTime) {
        if self.rotation.max_backups == 0 && self.rotation.max_age_days == 0 {
            return;
        }
        let (stem, extension) = self.name_parts();
        let prefix = format!("{stem}-");
        let directory = match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Ok(entries) = std::fs::read_dir(&directory) else {
            return;
        };
        let mut backups: Vec<(OffsetDateTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let stamp = name.strip_prefix(&prefix)?.strip_suffix(&extension)?;
                let taken = time::PrimitiveDateTime::parse(
                    stamp,
                    format_description!(
                        "[year]-[month]-[day]T[hour]-[minute]-[second].[subsecond digits:3]"
                    ),
                )
                .ok()?
                .assume_utc();
                Some((taken, entry.path()))
            })
            .collect();
        backups.sort_by_key(|backup| std::cmp::Reverse(backup.0));
        let cutoff = now - time::Duration::days(self.rotation.max_age_days as i64);
        for (index, (taken, path)) in backups.iter().enumerate() {
            let too_many = self.rotation.max_backups > 0 && index >= self.rotation.max_backups;
            let too_old = self.rotation.max_age_days > 0 && *taken < cutoff;
            if (too_many || too_old)
                && let Err(error) = std::fs::remove_file(path)
            {
                tracing::warn!(%error, path = %path.display(), "Cannot remove an old audit log");
            }
        }
    }
}

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(directory: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(directory)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_log_rotates_at_its_size_and_keeps_max_backups() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 2,
            max_age_days: 0,
        };
        let mut log = RotatingFile::open(path.clone(), rotation).unwrap();
        // 300 KiB lines: three fit in 1 MiB, the fourth starts a new file.
        let line = |byte: u8| {
            let mut line = vec![byte; 300 * 1024 - 1];
            line.push(b'\n');
            line
        };
        for _ in 0..3 {
            log.write_line(&line(b'a')).unwrap();
        }
        log.flush().unwrap();
        assert_eq!(files(directory.path()), ["audit.log"]);
        log.write_line(&line(b'b')).unwrap();
        log.flush().unwrap();
        let names = files(directory.path());
        assert_eq!(names.len(), 2, "{names:?}");
        let backup = names.iter().find(|name| *name != "audit.log").unwrap();
        assert!(
            backup.starts_with("audit-") && backup.ends_with(".log"),
            "{backup}"
        );
        // The backup holds the three whole lines, the new file the fourth.
        assert_eq!(
            std::fs::read(directory.path().join(backup)).unwrap().len(),
            3 * 300 * 1024
        );
        assert_eq!(std::fs::read(&path).unwrap(), line(b'b'));
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(
                &std::fs::metadata(&path).unwrap().permissions()
            ) & 0o777,
            0o600
        );
        // Rotating again and again keeps the two newest backups.
        for round in 0..3u8 {
            // Distinct backup names: their time has milliseconds.
            std::thread::sleep(std::time::Duration::from_millis(5));
            log.rotate(OffsetDateTime::now_utc()).unwrap();
            log.write_line(&line(b'c' + round)).unwrap();
        }
        log.flush().unwrap();
        let names = files(directory.path());
        assert_eq!(names.len(), 3, "{names:?}");
        // The newest backup holds the line written before the last rotation.
        let newest = names.iter().filter(|n| *n != "audit.log").max().unwrap();
        assert_eq!(
            std::fs::read(directory.path().join(newest)).unwrap(),
            line(b'd')
        );
    }

    #[test]
    fn backups_older_than_max_age_are_removed() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("audit.log");
        // A backup of 40 days ago and one of yesterday, then a rotation today.
        std::fs::write(
            directory.path().join("audit-2020-01-01T00-00-00.000.log"),
            "old\n",
        )
        .unwrap();
        let yesterday = OffsetDateTime::now_utc() - time::Duration::days(1);
        let stamp = yesterday
            .format(format_description!(
                "[year]-[month]-[day]T[hour]-[minute]-[second].[subsecond digits:3]"
            ))
            .unwrap();
        let recent = format!("audit-{stamp}.log");
        std::fs::write(directory.path().join(&recent), "recent\n").unwrap();
        // Another log's backups are not this one's.
        std::fs::write(
            directory.path().join("other-2020-01-01T00-00-00.000.log"),
            "x\n",
        )
        .unwrap();
        let rotation = Rotation {
            max_size_mb: 0,
            max_backups: 0,
            max_age_days: 30,
        };
        let mut log = RotatingFile::open(path, rotation).unwrap();
        log.write_line(b"{}\n").unwrap();
        log.rotate(OffsetDateTime::now_utc()).unwrap();
        let names = files(directory.path());
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(!names.contains(&"audit-2020-01-01T00-00-00.000.log".to_owned()));
        assert!(names.contains(&recent));
        assert!(names.contains(&"other-2020-01-01T00-00-00.000.log".to_owned()));
    }
}
