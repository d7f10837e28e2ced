//! The audit log file: events go through a bounded queue to a thread that writes them as
//! JSON lines through a buffer, flushed whenever the queue runs empty, so that a request never
//! waits on the disk. A full queue drops the event and says so in the server's log (kube's
//! batch backend does the same).

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// kube-apiserver's default `--audit-log-batch-buffer-size`.
const QUEUE: usize = 10_000;

pub struct Writer {
    sender: std::sync::mpsc::SyncSender<Vec<u8>>,
    dropped: AtomicU64,
}

impl Writer {
    /// Appends to `path` (created with mode 0600), or standard output for `-` as
    /// kube-apiserver's `--audit-log-path -`.
    pub fn open(path: &Path) -> std::io::Result<Writer> {
        let sink: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            use std::os::unix::fs::OpenOptionsExt;
            Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .open(path)?,
            )
        };
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<u8>>(QUEUE);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::with_capacity(256 * 1024, sink);
                while let Ok(line) = receiver.recv() {
                    let mut result = out.write_all(&line);
                    // Drain what is queued, then flush once.
                    while let Ok(line) = receiver.try_recv() {
                        result = result.and(out.write_all(&line));
                    }
                    if let Err(error) = result.and(out.flush()) {
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
