//! Counters of reconciles per controller, for benchmarks and diagnostics: how many reconciles
//! each controller ran and how many of them failed, since the process started.
//!
//! The counters are process-wide, one per controller name, so that a benchmark can read them
//! without a handle on the controllers; two management planes in one process (tests) add up.
//! Counting is one relaxed atomic increment per reconcile.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The reconciles of one controller.
#[derive(Debug, Default)]
pub struct ReconcileCounter {
    reconciles: AtomicU64,
    failures: AtomicU64,
}

impl ReconcileCounter {
    /// Counts a finished reconcile.
    pub fn record(&self, succeeded: bool) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        if !succeeded {
            self.failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What one controller has done so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconcileCount {
    /// The controller's name (as in its reconcile spans).
    pub controller: &'static str,
    /// Finished reconciles, failed ones included.
    pub reconciles: u64,
    /// Reconciles that returned an error (lost write races included).
    pub failures: u64,
}

static COUNTERS: Mutex<Vec<(&'static str, Arc<ReconcileCounter>)>> = Mutex::new(Vec::new());

/// The counter of the controller `name`, created on first use.
pub fn counter(name: &'static str) -> Arc<ReconcileCounter> {
    let mut counters = COUNTERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, counter)) = counters.iter().find(|(existing, _)| *existing == name) {
        return counter.clone();
    }
    let counter = Arc::new(ReconcileCounter::default());
    counters.push((name, counter.clone()));
    counter
}

/// Every controller's counts so far, in the order the controllers first counted.
pub fn reconcile_counts() -> Vec<ReconcileCount> {
    let counters = COUNTERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    counters
        .iter()
        .map(|(controller, counter)| ReconcileCount {
            controller,
            reconciles: counter.reconciles.load(Ordering::Relaxed),
            failures: counter.failures.load(Ordering::Relaxed),
        })
        .collect()
}
