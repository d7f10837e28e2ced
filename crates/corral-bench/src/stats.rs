//! Latency samples and their percentiles.

use std::time::Duration;

/// Percentiles of a set of latency samples (nearest rank).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub samples: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Summary {
    /// Summarizes samples in microseconds (signed: a watch event can arrive before the
    /// acknowledgement of its write; such samples count as 0).
    pub fn of_micros(mut micros: Vec<i64>) -> Summary {
        if micros.is_empty() {
            return Summary::default();
        }
        micros.sort_unstable();
        let at = |quantile: f64| {
            let rank = (quantile * micros.len() as f64).ceil() as usize;
            let micros = micros[rank.clamp(1, micros.len()) - 1];
            Duration::from_micros(micros.max(0) as u64)
        };
        Summary {
            samples: micros.len(),
            p50: at(0.50),
            p99: at(0.99),
            max: at(1.0),
        }
    }

    pub fn of_durations(durations: impl IntoIterator<Item = Duration>) -> Summary {
        Summary::of_micros(durations.into_iter().map(micros).collect())
    }
}

/// A duration in whole microseconds, saturating.
pub fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// Milliseconds with a precision that suits the value.
pub fn format_ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// A rate with a precision that suits the value.
pub fn format_rate(rate: f64) -> String {
    if rate >= 100.0 {
        format!("{rate:.0}")
    } else if rate >= 10.0 {
        format!("{rate:.1}")
    } else {
        format!("{rate:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let summary = Summary::of_micros((1..=100).collect());
        assert_eq!(summary.samples, 100);
        assert_eq!(summary.p50, Duration::from_micros(50));
        assert_eq!(summary.p99, Duration::from_micros(99));
        assert_eq!(summary.max, Duration::from_micros(100));
        let one = Summary::of_micros(vec![7]);
        assert_eq!(
            (one.p50, one.p99),
            (Duration::from_micros(7), Duration::from_micros(7))
        );
        assert_eq!(Summary::of_micros(vec![-5]).p50, Duration::ZERO);
        assert_eq!(Summary::of_micros(Vec::new()).samples, 0);
    }
}
