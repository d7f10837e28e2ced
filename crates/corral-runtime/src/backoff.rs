//! Exponential backoff per object, for the error policy: the first retry comes after `initial`,
//! each failure in a row doubles the wait up to `max`, and a successful reconcile starts over
//! (controller-runtime's per-item rate limiter, which upstream uses).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The wait after `failures` failures in a row (1 for the first).
pub fn delay(initial: Duration, max: Duration, failures: u32) -> Duration {
    let exponent = failures.saturating_sub(1).min(32);
    initial
        .checked_mul(1u32 << exponent.min(31))
        .map_or(max, |delay| delay.min(max))
}

/// Failures in a row, per object.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    /// A backoff from `initial` to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff {
            initial,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Counts a failure of `key` and returns how long to wait before retrying it.
    pub fn fail(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().expect("backoff lock");
        let count = failures.entry(key.to_owned()).or_insert(0);
        *count = count.saturating_add(1);
        delay(self.initial, self.max, *count)
    }

    /// Forgets the failures of `key` after a success.
    pub fn succeed(&self, key: &str) {
        let mut failures = self.failures.lock().expect("backoff lock");
        failures.remove(key);
    }
}
