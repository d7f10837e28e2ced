//! The SQLite backend (the embedded default): one database file, one writer thread, group
//! commit.
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
//! # Writes: one writer thread, group commit
//!
//! All writes go through a channel to a dedicated thread that owns the only read-write
//! connection. It takes everything queued (up to a batch limit), applies each write inside one
//! `BEGIN IMMEDIATE` transaction, checking each write's precondition on its own so that a
//! conflicting write fails alone while the others take consecutive revisions, commits once (one
//! WAL fsync for the whole batch), then answers every caller and publishes the batch's events to
//! watchers. When the queue holds less than half as many writes as the last commit carried
//! (the first answered callers' next writes racing the others), it waits for the rest, up to
//! half of the last commit's duration and `SqliteOptions::max_linger`, so that batches don't
//! alternate between one write and all the others, each paying an fsync. A single writer is what makes revisions gap-free without any locking: the thread
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
//! The database runs in WAL mode with `synchronous=FULL`: a commit returns only after the WAL
//! is fsynced, and a write is acknowledged only after its batch committed. So every
//! acknowledged write survives the process being killed (`kill -9`) and the machine losing
//! power, provided the disk honours fsync; a write that was not acknowledged may or may not be
//! there after a crash, as with etcd. Only one process may use a database file at a time; a
//! writer that finds the stored revision moved under it refuses to write. `tests/it/sqlite.rs`
//! kills a writer process with SIGKILL mid-load and checks every acknowledged write; its
//! ignored `measure_*` tests time writes and 10,000-key ranges.

mod read;
mod schema;
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
    /// Longest wait for more writes when a batch is much smaller than the last one (never
    /// more than half of the last commit's duration; zero turns it off). See the module docs.
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

/// Running totals of the writer's committed batches, for `SqliteStore::commit_stats`.
#[derive(Default)]
struct CommitCounters {
    commits: AtomicU64,
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
            writes: self.writes.load(Ordering::Relaxed),
            commit_time: std::time::Duration::from_nanos(self.commit_nanos.load(Ordering::Relaxed)),
            batch_sizes: std::array::from_fn(|i| self.sizes[i].load(Ordering::Relaxed)),
        }
    }
}

/// How group commit has been doing since the store was opened: how many transactions the
/// writer committed, how many writes they carried, and how long the commits took (each one
/// ends with the WAL's fsync). Subtract two snapshots to look at an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Committed write transactions (batches that wrote something).
    pub commits: u64,
    /// Successful writes in them.
    pub writes: u64,
    /// Time spent committing them, from the first statement to the end of the fsync.
    pub commit_time: std::time::Duration,
    /// Commits by number of writes: `batch_sizes[i]` counts the batches of `2^i` to
    /// `2^(i+1) - 1` writes (the last bucket has no upper bound).
    pub batch_sizes: [u64; BATCH_SIZE_BUCKETS],
}

impl CommitStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &CommitStats) -> CommitStats {
        CommitStats {
            commits: self.commits - earlier.commits,
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
        let (connection, state) = schema::open_writer(path)?;
        let published = Arc::new(Published {
            revision: AtomicI64::new(state.revision),
            compacted: AtomicI64::new(state.compacted),
            commits: CommitCounters::default(),
        });
        let (events, _) = broadcast::channel(options.watch_buffer.max(1));
        let (commands, receiver) = mpsc::channel(options.max_batch_writes.max(1) * 4);
        let writer = Writer::new(
            connection,
            state,
            events.clone(),
            published.clone(),
            options.clone(),
        );
        let writer = std::thread::Builder::new()
            .name("corral-sqlite-writer".into())
            .spawn(move || writer.run(receiver))
            .map_err(|e| Error::backend("starting the sqlite writer thread", e))?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                commands: Some(commands),
                writer: Mutex::new(Some(writer)),
                readers: Arc::new(Readers::new(path, options.max_readers)),
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
