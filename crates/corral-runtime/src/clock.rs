//! The time by which controllers judge timeouts that expire without any watch event (a
//! MachineHealthCheck's `nodeStartupTimeoutSeconds` and condition timeouts).
//!
//! It is the system clock plus an offset that only tests move, so that a test of a ten-minute
//! timeout moves the clock forward instead of sleeping. Moving it does not wake anything: a
//! test that moves it then changes an object, and the reconcile that follows reads the new
//! time.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// The system clock, possibly moved forward; clones share the offset.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    offset_nanos: Arc<AtomicI64>,
}

impl Clock {
    /// The current time.
    pub fn now(&self) -> Timestamp {
        let offset = SignedDuration::from_nanos(self.offset_nanos.load(Ordering::Relaxed));
        let now = Timestamp::now();
        now.checked_add(offset).unwrap_or(now)
    }

    /// Moves the clock forward, for every clone.
    pub fn advance(&self, by: Duration) {
        let nanos = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        self.offset_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}
