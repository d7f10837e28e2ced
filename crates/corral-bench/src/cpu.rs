//! CPU time used by this process and by etcd over a measurement, from `/proc` (Linux): on a
//! 2-core machine the CPU an operation costs, not only its latency, says what limits a rate.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The pid of the benchmark's etcd, once it runs (0: none).
static ETCD_PID: AtomicU32 = AtomicU32::new(0);

/// Makes later snapshots include the CPU time of this process (etcd).
pub fn watch_etcd(pid: u32) {
    ETCD_PID.store(pid, Ordering::Relaxed);
}

/// Utime + stime of a process (`None`: this one), or `None` when `/proc` can't tell.
pub fn process_cpu(pid: Option<u32>) -> Option<Duration> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name is in parentheses and may hold anything; the fields follow the last
    // ')'. utime and stime are fields 14 and 15 of the line, 12th and 13th after the name.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux architecture this runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU used so far by this process and by etcd.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    own: Option<Duration>,
    etcd: Option<Duration>,
}

pub fn snapshot() -> Snapshot {
    let etcd = match ETCD_PID.load(Ordering::Relaxed) {
        0 => None,
        pid => process_cpu(Some(pid)),
    };
    Snapshot {
        own: process_cpu(None),
        etcd,
    }
}

/// CPU used between two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuUse {
    /// This process: the API server, its store, and the benchmark's clients.
    pub own: Option<Duration>,
    pub etcd: Option<Duration>,
}

impl Snapshot {
    pub fn until(&self, later: &Snapshot) -> CpuUse {
        let delta = |a: Option<Duration>, b: Option<Duration>| Some(b?.saturating_sub(a?));
        CpuUse {
            own: delta(self.own, later.own),
            etcd: delta(self.etcd, later.etcd),
        }
    }
}

impl CpuUse {
    /// Microseconds per operation, as a table cell ("–" when unknown).
    pub fn per_op(time: Option<Duration>, ops: u64) -> String {
        match time {
            Some(time) if ops > 0 => format!("{:.0}", time.as_secs_f64() * 1e6 / ops as f64),
            _ => "–".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_cpu_time() {
        let before = snapshot();
        let mut x = 0_u64;
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let used = before.until(&snapshot());
        if cfg!(target_os = "linux") {
            assert!(used.own.is_some());
        }
        assert_eq!(used.etcd, None);
        assert_eq!(CpuUse::per_op(Some(Duration::from_millis(3)), 1000), "3");
        assert_eq!(CpuUse::per_op(None, 1000), "–");
    }
}
