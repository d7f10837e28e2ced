//! Where the benchmark keeps its data, and what that disk does with an fsync.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::stats::Summary;

/// The mount point and file system type that hold `path`, from `/proc/mounts` (the longest
/// mount point that is a prefix of the canonical path). `None` off Linux.
pub fn filesystem_of(path: &Path) -> Option<(String, String)> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _device = fields.next()?;
            let mount_point = fields.next()?.replace("\\040", " ");
            let fs_type = fields.next()?.to_string();
            path.starts_with(&mount_point)
                .then_some((mount_point, fs_type))
        })
        .max_by_key(|(mount_point, _)| mount_point.len())
}

fn is_memory_fs(fs_type: &str) -> bool {
    matches!(fs_type, "tmpfs" | "ramfs")
}

/// The directory the stores' data goes under: the system temp dir when it is on a disk,
/// otherwise `target/corral-bench` of this workspace (a tmpfs would make every fsync free and
/// flatter both stores).
pub fn default_data_root() -> PathBuf {
    let temp = std::env::temp_dir();
    match filesystem_of(&temp) {
        Some((_, fs_type)) if is_memory_fs(&fs_type) => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/corral-bench")
        }
        _ => temp,
    }
}

/// A description of a directory's file system, for the report.
pub fn describe_dir(path: &Path) -> String {
    match filesystem_of(path) {
        Some((mount_point, fs_type)) => {
            let memory = if is_memory_fs(&fs_type) {
                " (in memory: fsync is free)"
            } else {
                ""
            };
            format!(
                "{} on {fs_type} mounted at {mount_point}{memory}",
                path.display()
            )
        }
        None => format!("{} (file system unknown)", path.display()),
    }
}

/// What a small synchronous write costs on a disk.
#[derive(Clone, Copy, Debug)]
pub struct FsyncProbe {
    pub latency: Summary,
    pub per_second: f64,
}

/// Appends 4 KiB and `fdatasync`s, repeatedly for about `duration`, in a scratch file in `dir`.
pub fn probe_fsync(dir: &Path, duration: Duration) -> std::io::Result<FsyncProbe> {
    let path = dir.join(format!("fsync-probe-{}", std::process::id()));
    let result = (|| {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)?;
        let block = vec![0x5a_u8; 4096];
        let mut samples = Vec::new();
        let started = Instant::now();
        while started.elapsed() < duration || samples.len() < 10 {
            let begin = Instant::now();
            file.write_all(&block)?;
            file.sync_data()?;
            samples.push(begin.elapsed());
            if samples.len() >= 5000 {
                break;
            }
        }
        let per_second = samples.len() as f64 / started.elapsed().as_secs_f64();
        Ok(FsyncProbe {
            latency: Summary::of_durations(samples),
            per_second,
        })
    })();
    let _ = std::fs::remove_file(&path);
    result
}
