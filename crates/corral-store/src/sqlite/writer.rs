//! The writer thread: the only connection that writes, batching queued writes into one
//! transaction each (group commit), and running compaction between batches. It commits without
//! waiting for the disk and hands every committed transaction to the sync thread (`sync.rs`),
//! which answers the callers once an fsync covers it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};

use super::read::current;
use super::schema::{StoredState, sql_error};
use super::sync::{Pending, SyncHandle};
use super::{Published, SqliteOptions};
use crate::{Error, Event, EventKind, KeyValue, Result, Revision};

/// How often `Writer::gather` looks for more writes while an fsync runs.
const GATHER_POLL: Duration = Duration::from_micros(200);

/// One write, as a caller asked for it.
pub(super) enum Write {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
    },
    Delete {
        key: String,
        expected: Revision,
    },
}

impl Write {
    fn value_len(&self) -> usize {
        match self {
            Write::Create { value, .. } | Write::Update { value, .. } => value.len(),
            Write::Delete { .. } => 0,
        }
    }
}

pub(super) enum Command {
    /// Answered with the write's event: the caller takes its revision (and, for a delete, the
    /// deleted version) from it.
    Write(Write, oneshot::Sender<Result<Event>>),
    Compact(Revision, oneshot::Sender<Result<()>>),
}

pub(super) struct Writer {
    /// Where committed transactions go to be made durable and acknowledged. First, so that it
    /// is dropped first: dropping it waits for the last fsync and answers, before the
    /// connection closes.
    sync: SyncHandle,
    connection: Connection,
    /// The store's revision: the last committed write's.
    revision: Revision,
    /// Reads below this are refused.
    compacted: Revision,
    /// Rows at or below this that compaction discards are gone.
    compact_done: Revision,
    /// Callers of `compact` waiting for the rows to be gone.
    compact_waiters: Vec<oneshot::Sender<Result<()>>>,
    /// Set when a compaction step failed; cleared by the next `compact`, which retries.
    compaction_failed: bool,
    published: Arc<Published>,
    options: SqliteOptions,
}

impl Writer {
    pub fn new(
        connection: Connection,
        state: StoredState,
        sync: SyncHandle,
        published: Arc<Published>,
        options: SqliteOptions,
    ) -> Self {
        Writer {
            connection,
            revision: state.revision,
            compacted: state.compacted,
            compact_done: state.compact_done,
            compact_waiters: Vec::new(),
            compaction_failed: false,
            published,
            options,
            sync,
        }
    }

    fn compaction_pending(&self) -> bool {
        self.compact_done < self.compacted && !self.compaction_failed
    }

    /// Serves commands until every sender is gone.
    pub fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        let mut batch = Vec::new();
        loop {
            // Block for work only when there is no compaction to get on with.
            let first = if self.compaction_pending() {
                match commands.try_recv() {
                    Ok(command) => Some(command),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => break,
                }
            } else {
                match commands.blocking_recv() {
                    Some(command) => Some(command),
                    None => break,
                }
            };
            if let Some(first) = first {
                // Group commit: everything that queued up while the last batch was being
                // committed goes into this one.
                let mut bytes = match &first {
                    Command::Write(write, _) => write.value_len(),
                    Command::Compact(..) => 0,
                };
                batch.push(first);
                self.take_queued(&mut commands, &mut batch, &mut bytes);
                self.gather(&mut commands, &mut batch, &mut bytes);
                self.serve(&mut batch);
            }
            if self.compaction_pending() {
                self.compact_step();
            }
        }
        tracing::debug!("SQLite writer stopping");
    }

    /// Moves queued commands into `batch`, up to the batch limits.
    fn take_queued(
        &self,
        commands: &mut mpsc::Receiver<Command>,
        batch: &mut Vec<Command>,
        bytes: &mut usize,
    ) {
        while !self.batch_full(batch, *bytes) {
            let Ok(command) = commands.try_recv() else {
                return;
            };
            if let Command::Write(write, _) = &command {
                *bytes += write.value_len();
            }
            batch.push(command);
        }
    }

    fn batch_full(&self, batch: &[Command], bytes: usize) -> bool {
        batch.len() >= self.options.max_batch_writes || bytes >= self.options.max_batch_bytes
    }

    /// While an fsync is in flight, keeps taking writes instead of committing them one
    /// transaction at a time: they can't be acknowledged before the next fsync anyway, and
    /// each transaction costs its own WAL pages (the meta row's, the log's last leaf). Commits
    /// when the fsync returns, or as soon as as many writes are waiting as the last fsync
    /// carried (so that applying them overlaps the fsync). With no fsync in flight, commits at
    /// once: a lone write never waits. A `compact` is served at once too: it may be refused
    /// without waiting for anything.
    fn gather(
        &self,
        commands: &mut mpsc::Receiver<Command>,
        batch: &mut Vec<Command>,
        bytes: &mut usize,
    ) {
        loop {
            let expected = match self.sync.syncing() {
                Some(expected) => expected,
                None => return,
            };
            if batch.len() >= expected
                || self.batch_full(batch, *bytes)
                || batch
                    .iter()
                    .any(|command| matches!(command, Command::Compact(..)))
            {
                return;
            }
            self.sync.wait_for_fsync(GATHER_POLL);
            self.take_queued(commands, batch, bytes);
        }
    }

    fn serve(&mut self, batch: &mut Vec<Command>) {
        let mut writes = Vec::new();
        let mut compactions = Vec::new();
        for command in batch.drain(..) {
            match command {
                Command::Write(write, reply) => writes.push((write, reply)),
                Command::Compact(revision, reply) => compactions.push((revision, reply)),
            }
        }
        if !writes.is_empty() {
            self.write_batch(writes);
        }
        for (revision, reply) in compactions {
            self.start_compaction(revision, reply);
        }
    }

    fn write_batch(&mut self, writes: Vec<(Write, oneshot::Sender<Result<Event>>)>) {
        let (writes, replies): (Vec<_>, Vec<_>) = writes.into_iter().unzip();
        if let Some(error) = self.sync.failed() {
            // An fsync failed: nothing written since can be acknowledged.
            for reply in replies {
                let _ = reply.send(Err(Error::backend("syncing the sqlite WAL", error.clone())));
            }
            return;
        }
        let started = Instant::now();
        match apply_batch(&mut self.connection, self.revision, &writes) {
            Ok((outcomes, revision)) => {
                let written = usize::try_from(revision - self.revision).unwrap_or(usize::MAX);
                if written > 0 {
                    self.sync.committed();
                    self.published
                        .commits
                        .transactions
                        .fetch_add(1, Ordering::Relaxed);
                }
                self.revision = revision;
                let events: Vec<Event> = outcomes
                    .iter()
                    .filter_map(|outcome| outcome.as_ref().ok().cloned())
                    .collect();
                // Even a batch whose writes all failed waits for the sync: a failure can
                // reveal a write that is committed but not yet durable (the key it found).
                self.sync.push(Pending::Writes {
                    revision,
                    written,
                    outcomes: replies.into_iter().zip(outcomes).collect(),
                    events,
                    started,
                });
            }
            Err(error) => {
                tracing::error!(%error, writes = replies.len(), "Failed to commit a batch of writes");
                let shared = SharedError(Arc::new(error));
                for reply in replies {
                    let _ = reply.send(Err(Error::backend(
                        "committing a batch of writes",
                        shared.clone(),
                    )));
                }
            }
        }
    }

    fn start_compaction(&mut self, revision: Revision, reply: oneshot::Sender<Result<()>>) {
        // Only revisions that are durable (and so visible) can be compacted.
        let durable = self.published.revision.load(Ordering::Acquire);
        if revision > durable {
            let _ = reply.send(Err(Error::FutureRevision {
                requested: revision,
                current: durable,
            }));
            return;
        }
        if revision <= self.compacted {
            // Nothing new to discard, but rows of an earlier compaction may still be going:
            // answer when they are gone, as for the compaction that discards them. Asking again
            // is also how a caller retries a compaction that failed half-way.
            self.compaction_failed = false;
            if self.compact_done < self.compacted {
                self.compact_waiters.push(reply);
            } else {
                // Answered once the compaction's last step is durable, like the first answer.
                self.sync.push(Pending::Compacted(vec![reply]));
            }
            return;
        }
        let recorded = self
            .connection
            .execute(
                "UPDATE meta SET value = ?1 WHERE name = 'compacted'",
                [revision],
            )
            .map_err(sql_error("recording the compacted revision"));
        if let Err(error) = recorded {
            let _ = reply.send(Err(error));
            return;
        }
        self.sync.committed();
        self.compacted = revision;
        self.published.compacted.store(revision, Ordering::Release);
        self.compaction_failed = false;
        self.compact_waiters.push(reply);
    }

    /// Deletes the discarded rows of the next chunk of revisions, in its own transaction, so
    /// that writes queued meanwhile wait for one chunk at most.
    fn compact_step(&mut self) {
        let until = self.compacted.min(
            self.compact_done
                .saturating_add(self.options.compaction_chunk.max(1)),
        );
        match compact_chunk(&mut self.connection, self.compact_done, until) {
            Ok(()) => {
                self.sync.committed();
                self.compact_done = until;
                if until == self.compacted && !self.compact_waiters.is_empty() {
                    self.sync.push(Pending::Compacted(std::mem::take(
                        &mut self.compact_waiters,
                    )));
                }
            }
            Err(error) => {
                tracing::error!(%error, "Failed to compact the SQLite store");
                self.compaction_failed = true;
                let shared = SharedError(Arc::new(error));
                for waiter in self.compact_waiters.drain(..) {
                    let _ = waiter.send(Err(Error::backend(
                        "deleting compacted history",
                        shared.clone(),
                    )));
                }
            }
        }
    }
}

/// Applies `writes` in one transaction on top of `revision` and commits it. Each write is
/// checked on its own: one that fails leaves the others alone, and each one that succeeds takes
/// the next revision. Returns each write's outcome and the new revision; `Err` means nothing
/// was committed.
pub(super) fn apply_batch(
    connection: &mut Connection,
    revision: Revision,
    writes: &[Write],
) -> Result<(Vec<Result<Event>>, Revision), BatchError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let stored: Revision = tx
        .prepare_cached("SELECT value FROM meta WHERE name = 'revision'")?
        .query_row([], |row| row.get(0))?;
    if stored != revision {
        // Another process wrote to the file: our revisions (and our watchers) would be wrong.
        return Err(BatchError::ForeignWriter {
            stored,
            expected: revision,
        });
    }
    let mut next = revision;
    let mut outcomes = Vec::with_capacity(writes.len());
    for write in writes {
        let outcome = apply(&tx, next + 1, write)?;
        if outcome.is_ok() {
            next += 1;
        }
        outcomes.push(outcome);
    }
    if next == revision {
        // Nothing to commit: every write failed its precondition.
        return Ok((outcomes, revision));
    }
    tx.prepare_cached("UPDATE meta SET value = ?1 WHERE name = 'revision'")?
        .execute([next])?;
    tx.commit()?;
    Ok((outcomes, next))
}

/// Applies one write at `revision` if its precondition holds. The outer `Result` is SQLite
/// failing (which fails the whole batch), the inner one the write's own outcome.
fn apply(
    tx: &rusqlite::Transaction<'_>,
    revision: Revision,
    write: &Write,
) -> rusqlite::Result<Result<Event>> {
    let (key, expected) = match write {
        Write::Create { key, value } => {
            // A key that was never written, or whose newest row is a tombstone, is absent.
            if current(tx, key)?.is_some() {
                return Ok(Err(Error::AlreadyExists { key: key.clone() }));
            }
            insert_log(tx, revision, key, revision, 0, false, value)?;
            return Ok(Ok(Event {
                kind: EventKind::Put,
                kv: KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                    create_revision: revision,
                    mod_revision: revision,
                },
                prev: None,
            }));
        }
        Write::Update { key, expected, .. } | Write::Delete { key, expected } => (key, *expected),
    };
    let Some(prev) = current(tx, key)? else {
        return Ok(Err(Error::NotFound { key: key.clone() }));
    };
    if prev.mod_revision != expected {
        return Ok(Err(Error::Conflict {
            key: key.clone(),
            expected,
            current: Box::new(prev),
        }));
    }
    let event = match write {
        Write::Update { value, .. } => {
            insert_log(
                tx,
                revision,
                key,
                prev.create_revision,
                prev.mod_revision,
                false,
                value,
            )?;
            Event {
                kind: EventKind::Put,
                kv: KeyValue {
                    key: key.clone(),
                    value: value.clone(),
                    create_revision: prev.create_revision,
                    mod_revision: revision,
                },
                prev: Some(prev),
            }
        }
        _ => {
            // The tombstone holds no value: its prev_revision row has the last one.
            insert_log(
                tx,
                revision,
                key,
                prev.create_revision,
                prev.mod_revision,
                true,
                &Bytes::new(),
            )?;
            Event {
                kind: EventKind::Delete,
                kv: KeyValue {
                    mod_revision: revision,
                    ..prev.clone()
                },
                prev: Some(prev),
            }
        }
    };
    Ok(Ok(event))
}

fn insert_log(
    tx: &rusqlite::Transaction<'_>,
    revision: Revision,
    key: &str,
    create_revision: Revision,
    prev_revision: Revision,
    deleted: bool,
    value: &Bytes,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO log (revision, key, create_revision, prev_revision, deleted, value)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute((
        revision,
        key.as_bytes(),
        create_revision,
        prev_revision,
        deleted,
        value.as_ref(),
    ))?;
    Ok(())
}

/// Compaction, first half: the versions that the rows with revisions in `(?1, ?2]` replaced.
/// A version is superseded exactly when the next row of its key exists, and that row (an
/// update or a tombstone; a create only ever follows a tombstone) names it as its
/// `prev_revision`. So walking only the new revisions finds every version they superseded,
/// however old, and the rows left by earlier compactions need no second look.
pub(super) const COMPACT_SUPERSEDED: &str = "
    DELETE FROM log WHERE revision IN (
        SELECT prev_revision FROM log
        WHERE revision > ?1 AND revision <= ?2 AND prev_revision > 0)";

/// Compaction, second half: the tombstones with revisions in `(?1, ?2]`. Runs after the first
/// half, which needs them to find the versions they deleted.
pub(super) const COMPACT_TOMBSTONES: &str = "
    DELETE FROM log WHERE revision > ?1 AND revision <= ?2 AND deleted = 1";

/// Deletes what compaction discards among the rows with revisions in `(after, until]`
/// (`until` at most the compacted revision): the versions they superseded and the tombstones.
/// Chunks must go in ascending order, so that a tombstone, the newest version of its key, goes
/// last: until then, a read at or after the compacted revision still finds the tombstone (the
/// key is absent) rather than an older version.
pub(super) fn compact_chunk(
    connection: &mut Connection,
    after: Revision,
    until: Revision,
) -> rusqlite::Result<()> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.prepare_cached(COMPACT_SUPERSEDED)?
        .execute((after, until))?;
    tx.prepare_cached(COMPACT_TOMBSTONES)?
        .execute((after, until))?;
    tx.prepare_cached("UPDATE meta SET value = ?1 WHERE name = 'compact_done'")?
        .execute([until])?;
    tx.commit()
}

/// Why a whole batch failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum BatchError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(
        "the stored revision is {stored}, not {expected}: another process is writing to this \
         database"
    )]
    ForeignWriter {
        stored: Revision,
        expected: Revision,
    },
}

/// One failure reported to every caller of a batch: `Error` can't be cloned, this can.
#[derive(Clone, Debug)]
pub(super) struct SharedError(pub Arc<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for SharedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}
