//! The sync thread: makes committed transactions durable with `fdatasync` of the WAL, and only
//! then answers their callers, publishes their revision to readers and their events to
//! watchers. See "Durability" in the module docs of `sqlite`.

use std::collections::VecDeque;
use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, oneshot};

use super::Published;
use super::writer::SharedError;
use crate::{Error, Event, Result, Revision};

/// What a committed transaction owes the world once it is on disk.
pub(super) enum Pending {
    /// A batch of writes: its outcomes go to its callers, its events to watchers.
    Writes {
        /// The store's revision after the batch (unchanged if every write failed).
        revision: Revision,
        /// The successful writes it carried.
        written: usize,
        outcomes: Vec<(oneshot::Sender<Result<Event>>, Result<Event>)>,
        events: Vec<Event>,
        /// When the batch's transaction began, for `CommitStats::commit_time`.
        started: Instant,
    },
    /// Callers of `compact` whose compaction has finished deleting rows.
    Compacted(Vec<oneshot::Sender<Result<()>>>),
}

impl Pending {
    fn fail(self, error: &SharedError) {
        let error = || Error::backend("syncing the sqlite WAL", error.clone());
        match self {
            Pending::Writes { outcomes, .. } => {
                for (reply, _) in outcomes {
                    let _ = reply.send(Err(error()));
                }
            }
            Pending::Compacted(waiters) => {
                for waiter in waiters {
                    let _ = waiter.send(Err(error()));
                }
            }
        }
    }
}

#[derive(Default)]
struct Queue {
    /// In commit order; each entry was pushed after its transaction committed.
    entries: VecDeque<Pending>,
    /// Writes asked for (failed ones included) in `entries`.
    queued_writes: usize,
    /// Transactions committed so far (by the writer) and made durable (by the sync thread).
    committed: u64,
    synced: u64,
    /// Whether an fsync is running, and the writes the last one carried: what
    /// `SyncHandle::syncing` tells the writer.
    syncing: bool,
    last_group: usize,
    /// Set when an fsync failed: what reached the disk is then unknown, so nothing committed
    /// since is ever acknowledged, and the writer refuses new writes.
    failed: Option<SharedError>,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the sync thread: something was queued, or it should stop.
    wake: Condvar,
    /// Wakes the writer: an fsync returned.
    synced: Condvar,
}

/// The writer's end: hands committed transactions over, stops the thread when dropped.
pub(super) struct SyncHandle {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Lets a test hold the sync thread before its next fsync (see `tests.rs`).
#[cfg(test)]
#[derive(Default)]
pub(super) struct SyncGate {
    open: Mutex<bool>,
    changed: Condvar,
}

#[cfg(test)]
impl SyncGate {
    pub fn set_open(&self, open: bool) {
        *self.open.lock().unwrap() = open;
        self.changed.notify_all();
    }

    fn pass(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.changed.wait(open).unwrap();
        }
    }
}

impl SyncHandle {
    pub fn start(
        wal: File,
        events: broadcast::Sender<Arc<[Event]>>,
        published: Arc<Published>,
        max_linger: Duration,
        #[cfg(test)] gate: Option<Arc<SyncGate>>,
    ) -> Result<SyncHandle> {
        let shared = Arc::new(Shared::default());
        let syncer = Syncer {
            wal,
            shared: shared.clone(),
            events,
            published,
            max_linger,
            #[cfg(test)]
            gate,
        };
        let thread = std::thread::Builder::new()
            .name("corral-sqlite-sync".into())
            .spawn(move || syncer.run())
            .map_err(|e| Error::backend("starting the sqlite sync thread", e))?;
        Ok(SyncHandle {
            shared,
            thread: Some(thread),
        })
    }

    /// Records that the writer committed one more transaction (a batch of writes, a compaction
    /// step): the next fsync covers it.
    pub fn committed(&self) {
        self.shared.queue.lock().unwrap().committed += 1;
    }

    /// Queues what is owed once everything committed so far is durable.
    pub fn push(&self, pending: Pending) {
        let mut queue = self.shared.queue.lock().unwrap();
        if let Some(error) = &queue.failed {
            let error = error.clone();
            drop(queue);
            pending.fail(&error);
            return;
        }
        if let Pending::Writes { outcomes, .. } = &pending {
            queue.queued_writes += outcomes.len();
        }
        queue.entries.push_back(pending);
        drop(queue);
        self.shared.wake.notify_one();
    }

    /// While an fsync is running: how many writes the last one carried (at least 1).
    pub fn syncing(&self) -> Option<usize> {
        let queue = self.shared.queue.lock().unwrap();
        queue.syncing.then_some(queue.last_group.max(1))
    }

    /// Waits until the running fsync returns, at most `timeout`.
    pub fn wait_for_fsync(&self, timeout: Duration) {
        let queue = self.shared.queue.lock().unwrap();
        if queue.syncing {
            let _ = self.shared.synced.wait_timeout(queue, timeout).unwrap();
        }
    }

    /// The error that stopped the sync thread acknowledging anything, if one did.
    pub fn failed(&self) -> Option<SharedError> {
        self.shared.queue.lock().unwrap().failed.clone()
    }
}

impl Drop for SyncHandle {
    /// Waits for the thread to sync and answer everything queued, so that a store that is
    /// dropped has acknowledged every write it committed.
    fn drop(&mut self) {
        self.shared.queue.lock().unwrap().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Syncer {
    /// The database's `-wal` file, opened separately: `fdatasync` on any descriptor flushes
    /// the file's data written through every other one (SQLite's included).
    wal: File,
    shared: Arc<Shared>,
    events: broadcast::Sender<Arc<[Event]>>,
    published: Arc<Published>,
    /// `SqliteOptions::max_linger`.
    max_linger: Duration,
    #[cfg(test)]
    gate: Option<Arc<SyncGate>>,
}

impl Syncer {
    fn run(self) {
        // Writes the last fsync acknowledged, and how long it took: what `linger` expects.
        let mut last_group = 0;
        let mut last_sync = Duration::ZERO;
        loop {
            let (entries, committed, synced) = {
                let mut queue = self.shared.queue.lock().unwrap();
                while queue.entries.is_empty() && !queue.stop {
                    queue = self.shared.wake.wait(queue).unwrap();
                }
                if queue.entries.is_empty() {
                    break;
                }
                queue = self.linger(queue, last_group, last_sync);
                last_group = std::mem::take(&mut queue.queued_writes);
                queue.last_group = last_group;
                queue.syncing = queue.committed > queue.synced;
                (
                    std::mem::take(&mut queue.entries),
                    queue.committed,
                    queue.synced,
                )
            };
            // Every entry was queued after its transaction committed, so this fsync, which
            // starts after the last one was queued, covers them all (and whatever else was
            // committed by now).
            if committed > synced {
                #[cfg(test)]
                if let Some(gate) = &self.gate {
                    gate.pass();
                }
                let started = Instant::now();
                let result = self.wal.sync_data();
                last_sync = started.elapsed();
                {
                    let mut queue = self.shared.queue.lock().unwrap();
                    queue.syncing = false;
                    if result.is_ok() {
                        queue.synced = committed;
                    }
                }
                self.shared.synced.notify_all();
                if let Err(error) = result {
                    tracing::error!(%error, "Failed to fsync the SQLite WAL; refusing further writes");
                    let error = SharedError(Arc::new(error));
                    let mut queue = self.shared.queue.lock().unwrap();
                    queue.failed = Some(error.clone());
                    let later = std::mem::take(&mut queue.entries);
                    drop(queue);
                    for pending in entries.into_iter().chain(later) {
                        pending.fail(&error);
                    }
                    // Nothing more will be acknowledged; keep failing what the writer pushes
                    // (`push` does) until the store is dropped.
                    break;
                }
            }
            self.acknowledge(entries);
        }
    }

    /// Waits a little for more writes before an fsync when fewer are queued than the last
    /// fsync carried.
    ///
    /// Under many concurrent writers, the first answered caller's next write can arrive while
    /// the others are still being answered; syncing it alone costs a whole fsync, during which
    /// everyone else queues up, and fsyncs then alternate between one write and all the others.
    /// Waiting for up to half of the last fsync's duration (at most
    /// `SqliteOptions::max_linger`) until as many writes as last time are queued merges
    /// them. A lone writer (the last fsync carried one write) never waits.
    fn linger<'a>(
        &self,
        mut queue: std::sync::MutexGuard<'a, Queue>,
        last_group: usize,
        last_sync: Duration,
    ) -> std::sync::MutexGuard<'a, Queue> {
        if queue.queued_writes >= last_group || self.max_linger.is_zero() {
            return queue;
        }
        let deadline = Instant::now() + self.max_linger.min(last_sync / 2);
        while queue.queued_writes < last_group && !queue.stop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            queue = self.shared.wake.wait_timeout(queue, left).unwrap().0;
        }
        queue
    }

    /// Everything in `entries` is durable: publish the revision, answer the callers, then
    /// hand the events to watchers (in that order, see `watch.rs`).
    fn acknowledge(&self, entries: VecDeque<Pending>) {
        let now = Instant::now();
        let mut written = 0;
        let mut oldest: Option<Instant> = None;
        for pending in entries {
            match pending {
                Pending::Writes {
                    revision,
                    written: count,
                    outcomes,
                    events,
                    started,
                } => {
                    if count > 0 {
                        written += count;
                        oldest = Some(oldest.map_or(started, |o| o.min(started)));
                    }
                    self.published
                        .revision
                        .fetch_max(revision, Ordering::AcqRel);
                    for (reply, outcome) in outcomes {
                        // A caller that gave up waiting doesn't undo its write.
                        let _ = reply.send(outcome);
                    }
                    if !events.is_empty() {
                        // No subscriber is fine: nobody is watching.
                        let _ = self.events.send(events.into());
                    }
                }
                Pending::Compacted(waiters) => {
                    for waiter in waiters {
                        let _ = waiter.send(Ok(()));
                    }
                }
            }
        }
        if let Some(oldest) = oldest {
            self.published
                .commits
                .record(written, now.duration_since(oldest));
        }
    }
}
