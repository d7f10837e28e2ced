//! The collector's work queue: objects to look at, keyed by uid, each at most once in the
//! queue and processed by one worker at a time (client-go's workqueue semantics). An object
//! added while it is being processed is processed again afterwards; a failed one comes back
//! after an exponential backoff.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::graph::ObjectRef;

const FIRST_RETRY: Duration = Duration::from_millis(50);
const LONGEST_RETRY: Duration = Duration::from_secs(30);

#[derive(Default)]
struct State {
    /// Uids waiting for a worker, in order.
    ready: VecDeque<String>,
    /// The objects of `ready` and of `dirty`.
    items: HashMap<String, ObjectRef>,
    queued: HashSet<String>,
    processing: HashSet<String>,
    /// Added again while being processed.
    dirty: HashSet<String>,
    /// Consecutive failures, for the backoff.
    failures: HashMap<String, u32>,
}

pub struct Queue {
    state: Mutex<State>,
    notify: Notify,
    stop: watch::Receiver<bool>,
}

impl Queue {
    /// A queue that hands out nothing more once `stop` turns true.
    pub fn new(stop: watch::Receiver<bool>) -> Queue {
        Queue {
            state: Mutex::new(State::default()),
            notify: Notify::new(),
            stop,
        }
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    pub fn add(&self, item: ObjectRef) {
        if self.stopped() {
            return;
        }
        let mut state = self.state.lock().unwrap();
        let uid = item.uid.clone();
        if state.processing.contains(&uid) {
            state.dirty.insert(uid.clone());
            state.items.insert(uid, item);
        } else if state.queued.insert(uid.clone()) {
            state.ready.push_back(uid.clone());
            state.items.insert(uid, item);
            drop(state);
            self.notify.notify_one();
        }
    }

    pub fn add_all(&self, items: impl IntoIterator<Item = ObjectRef>) {
        for item in items {
            self.add(item);
        }
    }

    /// The next object to process; `None` once the queue is stopped.
    pub async fn next(&self) -> Option<ObjectRef> {
        let mut stop = self.stop.clone();
        loop {
            if self.stopped() {
                return None;
            }
            {
                let mut state = self.state.lock().unwrap();
                while let Some(uid) = state.ready.pop_front() {
                    state.queued.remove(&uid);
                    if let Some(item) = state.items.remove(&uid) {
                        state.processing.insert(uid);
                        return Some(item);
                    }
                }
            }
            // `notify_one` stores a permit when no worker waits, so an add between the check
            // above and this wait is not lost.
            tokio::select! {
                _ = self.notify.notified() => {}
                _ = stop.wait_for(|stopped| *stopped) => return None,
            }
        }
    }

    /// Ends the processing of `item`. With `failed`, returns how long to wait before adding
    /// it again.
    pub fn done(&self, item: &ObjectRef, failed: bool) -> Option<Duration> {
        let mut state = self.state.lock().unwrap();
        state.processing.remove(&item.uid);
        let retry = if failed {
            let failures = state.failures.entry(item.uid.clone()).or_insert(0);
            *failures = failures.saturating_add(1);
            Some(backoff(*failures))
        } else {
            state.failures.remove(&item.uid);
            None
        };
        if state.dirty.remove(&item.uid) && state.queued.insert(item.uid.clone()) {
            state.ready.push_back(item.uid.clone());
            drop(state);
            self.notify.notify_one();
        }
        retry
    }

    /// Objects waiting or being processed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        let state = self.state.lock().unwrap();
        state.queued.len() + state.processing.len()
    }
}

/// 50 ms after the first failure, doubling up to 30 s.
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_RETRY
        .saturating_mul(1 << doublings)
        .min(LONGEST_RETRY)
}
