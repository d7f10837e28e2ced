//! The SQLite backend (the embedded default): one database file, one writer thread, group
//! commit, and a sync thread that pipelines the WAL's fsyncs with the next commits.
//!
//! # Schema
//!
//! ```sql
//! -- The change log, kine-style: one row per create, update or delete; the row id is the
//! -- store revision of that write. A delete is a tombstone row (deleted = 1, empty value)
//! -- whose prev_revision points at the deleted version, which holds the last value.
//! log(revision INTEGER PRIMARY KEY, key BLOB, create_revision, prev_revision, deleted, value BLOB)
//! log_key_revision ON log(key, revision)          -- every read by key
//! -- 'revision' (current), 'compacted' (logical compaction), 'compact_done' (physical).
//! meta(name TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID
//! ```
//!
//! Keys are stored as blobs so that SQLite compares them bytewise (the contract's order) and a
//! prefix range is `key >= prefix AND key < prefix with its last byte bumped`; UTF-8 never
//! contains 0xff, so the bump never overflows. The store's revision lives in `meta` rather
//! than being `max(log.revision)`, because compaction may remove the newest row (a tombstone).
//!
//! A read at revision `r` (the current one included) takes, for each key, the newest log row at
//! or below `r` (`log_key_revision`, then the row by its id) and skips tombstones. There is no
//! separate table of live keys (schema version 1 had one, `current`): it made every create
//! rewrite a leaf of a second name-ordered b-tree, and the index answers the same question.
//! Watches replay the log by revision, joining each row to its `prev_revision` row.
//!
//! # Writes: one writer thread, group commit, pipelined fsyncs
//!
//! All writes go through a channel to a dedicated thread that owns the only read-write
//! connection. It takes everything queued (up to a batch limit), applies each write inside one
//! `BEGIN IMMEDIATE` transaction, checking each write's precondition on its own so that a
//! conflicting write fails alone while the others take consecutive revisions, and commits
//! once. The commit writes the WAL without waiting for the disk (`synchronous=NORMAL`); the
//! batch's answers and events go to the sync thread (`sync.rs`), and the writer goes on with
//! the next batch. The sync thread runs one `fdatasync` of the WAL file at a time, each
//! covering every transaction committed before it started; when it returns, it publishes the
//! new revision, answers the callers and hands the events to watchers. So while one fsync is
//! in flight, the writes that arrive meanwhile are gathered and committed, and the next fsync
//! takes them all: the number of writes per fsync grows with the fsync's latency, as etcd's
//! WAL batches its entries. The writer commits what it gathered when the fsync returns, or
//! earlier once as many writes wait as the last fsync carried (so that applying them overlaps
//! the fsync); with no fsync in flight it commits at once. When fewer writes are queued than
//! the last fsync carried (the first answered callers' next writes racing the others), the
//! sync thread waits for the rest, up to half of the last fsync's duration and
//! `SqliteOptions::max_linger`, so that fsyncs don't alternate between one write and all the
//! others. A single writer is what makes revisions gap-free without any locking: the thread
//! hands them out in order.
//!
//! Reads run on a small pool of read-only connections in `spawn_blocking`, each in its own
//! read transaction, so that a read sees one consistent snapshot (its revision and its rows)
//! and never waits for the writer (WAL readers don't block writers or each other).
//!
//! # Watches
//!
//! Committed batches are fanned out in-process over a `tokio::sync::broadcast` channel. A watch
//! subscribes first, then replays the log from SQLite up to the revision its read snapshot was
//! at, then takes live batches, skipping anything at or below what it has already delivered:
//! because a batch is published only after it is committed, everything is either in the
//! snapshot or arrives on the channel, and the skip removes the overlap. A watcher that falls
//! so far behind that the channel drops batches for it (or that sees any gap) goes back to
//! reading the log, so it never loses events; nothing a watcher does holds up the writer.
//!
//! # Compaction
//!
//! `compact(c)` records `c` in `meta` at once (reads and watches below it fail from then on),
//! then deletes every version superseded by a newer one at or below `c`, and every tombstone at
//! or below `c`. What remains answers reads at `c` and later, and the `prev` of every later
//! change. It walks only the revisions since the last compaction (`compact_done`): each of
//! those rows names the version it superseded, however old. The walk goes in chunks of
//! revisions, each its own transaction, interleaved with write batches. Progress is
//! persistent, so an interrupted compaction resumes when the store is reopened; `compact`
//! returns once the rows are gone.
//!
//! # Durability
//!
//! The database runs in WAL mode with `synchronous=NORMAL`, and the sync thread `fdatasync`s the
//! WAL file itself. The rule: **nothing about revision `r` leaves the store before an fsync
//! that started after `r`'s transaction committed has returned** — not the write's answer, not
//! a read or watch event showing it, not another write's failure that found it (a conflict or
//! `AlreadyExists` names the version it found, so every batch's answers wait, even when it
//! committed nothing), not a compaction up to it. Why that is enough:
//!
//! - A commit has written its WAL frames (`write(2)`) before it returns, and `fdatasync` on our
//!   own descriptor of the file flushes data written through any descriptor, so the fsync
//!   puts the transaction, and every earlier one, on disk. An acknowledged write therefore
//!   survives `kill -9` and power loss, provided the disk honours fsync.
//! - A write that was committed but not yet synced may be lost by a power cut, but only
//!   together with everything after it: WAL frames carry cumulative checksums, so recovery
//!   keeps a prefix of the commits. Nobody saw it (the rule), and any later write that read it
//!   (a precondition) is lost with it and was not acknowledged either. A `kill -9` loses
//!   nothing committed (the page cache survives the process).
//! - Reads: readers see committed transactions at once in WAL mode, so reads are served at the
//!   durable revision, which the sync thread publishes (`Published::revision`) before
//!   answering; a read takes it before its snapshot, and reads keys at or below it (`read.rs`).
//!   `current_revision`, watches' replays of the log and `compact`'s bound use it too, and live
//!   events are broadcast after the fsync. A reader or watcher that saw revision `r` never
//!   sees it lost.
//! - Checkpoints never run ahead of the sync: SQLite fsyncs the WAL before a checkpoint
//!   copies it into the database file, and the database file after; when the WAL then starts
//!   over from its beginning, frames of the old generation fail the new salt and checksums,
//!   so recovery can't mix the two. The `-wal` file stays the same inode while the writer's
//!   connection is open (truncated at most), and its directory entry is synced when the store
//!   opens (`schema::open_wal`).
//! - Opening a file fsyncs its WAL before anything is shown: a process killed between a
//!   commit and its fsync leaves committed frames that only the page cache holds.
//! - An fsync that fails leaves what reached the disk unknown: the sync thread then fails
//!   everything waiting and every later write, until the store is reopened.
//!
//! A write that was not acknowledged may or may not be there after a crash, as with etcd.
//! Recording a compaction (`compacted` in `meta`) is visible at once, before its fsync: a
//! compaction lost by a crash only gives back history that had been refused. Only one process
//! may use a database file at a time; a writer that finds the stored revision moved under it
//! refuses to write. `tests/it/sqlite.rs` kills a writer process with SIGKILL mid-load and
//! checks every acknowledged write; `tests.rs` holds the sync thread before an fsync and
//! checks that nothing of the committed write shows; the ignored `measure_*` tests time
//! writes and 10,000-key ranges.

mod read;
mod schema;
mod sync;
mod watch;
mod writer;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::{
    Error, Event, KeyValue, RangeRequest, RangeResponse, Result, Revision, Store, WatchStream,
};

use self::read::Readers;
use self::sync::SyncHandle;
use self::writer::{Command, Write, Writer};

/// Largest value the SQLite backend accepts.
pub const MAX_VALUE_BYTES: usize = 3 * 1024 * 1024;

/// Tuning knobs; the defaults suit a control plane.
#[derive(Clone, Debug)]
pub struct SqliteOptions {
    /// Most writes committed together in one transaction.
    pub max_batch_writes: usize,
    /// Most value bytes committed together in one transaction (a batch always takes at least
    /// one write).
    pub max_batch_bytes: usize,
    /// Committed batches kept for watchers that are behind; a watcher further behind than
    /// this reads the log from the database instead. A watcher that stops polling keeps up to
    /// this many batches (and their values) in memory until it is dropped.
    pub watch_buffer: usize,
    /// Most read connections, and so most reads running at once.
    pub max_readers: usize,
    /// Revisions whose rows one compaction step deletes before letting writes through.
    pub compaction_chunk: Revision,
    /// Longest wait for more writes before an fsync when fewer are queued than the last
    /// fsync carried (never more than half of the last fsync's duration; zero turns it off).
    /// See the module docs.
    pub max_linger: std::time::Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            max_batch_writes: 1024,
            max_batch_bytes: 32 * 1024 * 1024,
            watch_buffer: 256,
            max_readers: 8,
            compaction_chunk: 10_000,
            max_linger: std::time::Duration::from_millis(2),
        }
    }
}

/// See the module docs. Cheap to clone; the writer thread stops when the last clone is dropped.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

/// What the writer thread publishes for the async side to read without a query.
struct Published {
    revision: AtomicI64,
    compacted: AtomicI64,
    commits: CommitCounters,
}

/// Running totals of the durable groups of writes, for `SqliteStore::commit_stats`.
#[derive(Default)]
struct CommitCounters {
    commits: AtomicU64,
    transactions: AtomicU64,
    writes: AtomicU64,
    commit_nanos: AtomicU64,
    sizes: [AtomicU64; BATCH_SIZE_BUCKETS],
}

/// Batch sizes are counted in powers of two: 1, 2–3, 4–7, …, 512 and more.
const BATCH_SIZE_BUCKETS: usize = 11;

impl CommitCounters {
    fn record(&self, writes: usize, took: std::time::Duration) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.writes.fetch_add(writes as u64, Ordering::Relaxed);
        self.commit_nanos.fetch_add(
            u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let bucket = (usize::BITS - writes.max(1).leading_zeros() - 1) as usize;
        self.sizes[bucket.min(BATCH_SIZE_BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> CommitStats {
        CommitStats {
            commits: self.commits.load(Ordering::Relaxed),
            transactions: self.transactions.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            commit_time: std::time::Duration::from_nanos(self.commit_nanos.load(Ordering::Relaxed)),
            batch_sizes: std::array::from_fn(|i| self.sizes[i].load(Ordering::Relaxed)),
        }
    }
}

/// How group commit has been doing since the store was opened, counted per fsync of the WAL
/// (the unit that decides throughput on a slow disk): how many fsyncs acknowledged writes, how
/// many writes they carried, and how long each took from the start of its oldest transaction
/// to the end of the fsync. The writer may commit several transactions per fsync (those
/// committed while the previous fsync ran). Subtract two snapshots to look at an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// WAL fsyncs that made successful writes durable.
    pub commits: u64,
    /// Transactions of successful writes the writer committed (each rewrites the pages its
    /// writes touch, and a few more, in the WAL); one fsync may cover several.
    pub transactions: u64,
    /// Successful writes in them.
    pub writes: u64,
    /// Sum over those fsyncs of the time from the first statement of their oldest transaction
    /// to the end of the fsync (they may overlap: the next batch commits during an fsync).
    pub commit_time: std::time::Duration,
    /// Fsyncs by number of writes: `batch_sizes[i]` counts the fsyncs of `2^i` to
    /// `2^(i+1) - 1` writes (the last bucket has no upper bound).
    pub batch_sizes: [u64; BATCH_SIZE_BUCKETS],
}

impl CommitStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &CommitStats) -> CommitStats {
        CommitStats {
            commits: self.commits - earlier.commits,
            transactions: self.transactions - earlier.transactions,
            writes: self.writes - earlier.writes,
            commit_time: self.commit_time.saturating_sub(earlier.commit_time),
            batch_sizes: std::array::from_fn(|i| self.batch_sizes[i] - earlier.batch_sizes[i]),
        }
    }

    /// The smallest batch size counted in bucket `i` of `batch_sizes`.
    pub fn bucket_floor(i: usize) -> u64 {
        1 << i
    }
}

struct Inner {
    /// `None` only while dropping, to stop the writer.
    commands: Option<mpsc::Sender<Command>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    readers: Arc<Readers>,
    /// Only used to subscribe; the writer thread holds the sender that sends, so that
    /// watches see the channel close when the store is gone.
    events: broadcast::Sender<Arc<[Event]>>,
    published: Arc<Published>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the channel stops the writer once it has finished what it was doing; waiting
        // for it means the file is fully released (and can be reopened) when the store is.
        drop(self.commands.take());
        if let Some(writer) = self.writer.lock().unwrap().take() {
            let _ = writer.join();
        }
    }
}

impl SqliteStore {
    /// Opens the store in the database file at `path`, creating the file and its schema if
    /// needed. A store reopened from an existing file resumes at the same revision with the
    /// same data and history.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        Self::open_with(path, SqliteOptions::default())
    }

    pub fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteStore> {
        Self::open_inner(
            path,
            options,
            #[cfg(test)]
            None,
        )
    }

    fn open_inner(
        path: &Path,
        options: SqliteOptions,
        #[cfg(test)] gate: Option<Arc<sync::SyncGate>>,
    ) -> Result<SqliteStore> {
        let (connection, state) = schema::open_writer(path)?;
        let wal = schema::open_wal(path)?;
        let published = Arc::new(Published {
            revision: AtomicI64::new(state.revision),
            compacted: AtomicI64::new(state.compacted),
            commits: CommitCounters::default(),
        });
        let (events, _) = broadcast::channel(options.watch_buffer.max(1));
        let (commands, receiver) = mpsc::channel(options.max_batch_writes.max(1) * 4);
        let sync = SyncHandle::start(
            wal,
            events.clone(),
            published.clone(),
            options.max_linger,
            #[cfg(test)]
            gate,
        )?;
        let writer = Writer::new(connection, state, sync, published.clone(), options.clone());
        let writer = std::thread::Builder::new()
            .name("corral-sqlite-writer".into())
            .spawn(move || writer.run(receiver))
            .map_err(|e| Error::backend("starting the sqlite writer thread", e))?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                commands: Some(commands),
                writer: Mutex::new(Some(writer)),
                readers: Arc::new(Readers::new(path, options.max_readers, published.clone())),
                events,
                published,
            }),
        })
    }

    /// Group commit's totals so far; see [`CommitStats`].
    pub fn commit_stats(&self) -> CommitStats {
        self.inner.published.commits.snapshot()
    }

    async fn write(&self, write: Write) -> Result<Event> {
        let (reply, answer) = oneshot::channel();
        let commands = self.inner.commands.as_ref().ok_or(Error::Closed)?;
        commands
            .send(Command::Write(write, reply))
            .await
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }
}

fn check_size(value: &Bytes) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(Error::ValueTooLarge {
            size: value.len(),
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

#[async_trait::async_trait]
impl Store for SqliteStore {
    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.inner.published.revision.load(Ordering::Acquire))
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let key = key.to_string();
        self.inner
            .readers
            .read(move |tx| read::get(tx, &key, revision))
            .await
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        if let Some(start) = &request.start
            && !start.starts_with(&request.prefix)
        {
            return Err(Error::InvalidRequest(format!(
                "start key {start:?} is outside prefix {:?}",
                request.prefix
            )));
        }
        self.inner
            .readers
            .read(move |tx| read::range(tx, &request))
            .await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        check_size(&value)?;
        let key = key.to_string();
        Ok(self.write(Write::Create { key, value }).await?.revision())
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        check_size(&value)?;
        let key = key.to_string();
        let write = Write::Update {
            key,
            value,
            expected,
        };
        Ok(self.write(write).await?.revision())
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(Revision, KeyValue)> {
        let key = key.to_string();
        let event = self.write(Write::Delete { key, expected }).await?;
        let prev = event.prev.expect("a delete event has the deleted version");
        Ok((event.kv.mod_revision, prev))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        // Subscribing before the stream reads any history is what makes the hand-off from
        // history to live changes gap-free; see the module docs.
        let live = self.inner.events.subscribe();
        let compacted = self.inner.published.compacted.load(Ordering::Acquire);
        if after < compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted,
            });
        }
        Ok(watch::stream(
            self.inner.readers.clone(),
            live,
            prefix.to_string(),
            after,
        ))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        let commands = self.inner.commands.as_ref().ok_or(Error::Closed)?;
        commands
            .send(Command::Compact(revision, reply))
            .await
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.inner.published.compacted.load(Ordering::Acquire))
    }
}
