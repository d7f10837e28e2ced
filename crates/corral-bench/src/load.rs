//! Closed-loop load: N clients, each with its own state, each sending its next request as soon
//! as the previous one is answered, for a fixed time after a warm-up.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cpu::{self, CpuUse};
use crate::stats::{Summary, micros};

/// What one closed-loop run measured (warm-up excluded).
#[derive(Clone, Debug)]
pub struct Measured {
    /// Operations that succeeded.
    pub ops: u64,
    pub errors: u64,
    /// From the end of the warm-up to the last counted answer.
    pub seconds: f64,
    /// Latencies of the successful operations.
    pub latency: Summary,
    pub first_error: Option<String>,
    /// CPU used over the measured time (warm-up excluded).
    pub cpu: CpuUse,
}

impl Measured {
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// A client that fails this many times in a row stops (the server is gone, or every request is
/// refused): the run reports its errors instead of spinning.
const MAX_CONSECUTIVE_ERRORS: u32 = 100;

/// Runs one client per state. `op` takes a client's state, does one operation, and gives the
/// state back with the outcome. Operations started during `warmup` are not counted; no
/// operation starts after `warmup + duration`.
pub async fn closed_loop<S, F, Fut>(
    states: Vec<S>,
    warmup: Duration,
    duration: Duration,
    op: F,
) -> Measured
where
    S: Send + 'static,
    F: Fn(S) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = (S, anyhow::Result<()>)> + Send + 'static,
{
    let op = Arc::new(op);
    let measure_from = Instant::now() + warmup;
    let end = measure_from + duration;
    let cpu_at_start = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        cpu::snapshot()
    });
    let clients: Vec<_> = states
        .into_iter()
        .map(|mut state| {
            let op = op.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = 0_u64;
                let mut first_error = None;
                let mut last_answer = measure_from;
                let mut consecutive_errors = 0;
                loop {
                    let started = Instant::now();
                    if started >= end {
                        break;
                    }
                    let (next, outcome) = op(state).await;
                    state = next;
                    let answered = Instant::now();
                    let counted = started >= measure_from;
                    if counted {
                        last_answer = answered;
                    }
                    match outcome {
                        Ok(()) => {
                            consecutive_errors = 0;
                            if counted {
                                latencies.push(micros(answered - started));
                            }
                        }
                        Err(error) => {
                            consecutive_errors += 1;
                            if counted {
                                errors += 1;
                            }
                            first_error.get_or_insert_with(|| format!("{error:#}"));
                            if consecutive_errors >= MAX_CONSECUTIVE_ERRORS {
                                break;
                            }
                        }
                    }
                }
                (latencies, errors, first_error, last_answer)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    let mut last_answer = measure_from;
    for client in clients {
        match client.await {
            Ok((latencies, client_errors, client_error, client_last)) => {
                all.extend(latencies);
                errors += client_errors;
                if first_error.is_none() {
                    first_error = client_error;
                }
                last_answer = last_answer.max(client_last);
            }
            Err(panic) => {
                errors += 1;
                first_error.get_or_insert_with(|| format!("a client panicked: {panic}"));
            }
        }
    }
    let cpu = match cpu_at_start.await {
        Ok(start) => start.until(&cpu::snapshot()),
        Err(_) => CpuUse::default(),
    };
    Measured {
        cpu,
        ops: all.len() as u64,
        errors,
        seconds: last_answer
            .saturating_duration_since(measure_from)
            .as_secs_f64(),
        latency: Summary::of_micros(all),
        first_error,
    }
}
