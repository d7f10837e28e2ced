//! Reads: the pool of read-only connections and the queries that serve `get`, `range` and the
//! history part of watches.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension, Row, Transaction};
use tokio::sync::Semaphore;

use super::Published;
use super::schema::{open_reader, sql_error};
use crate::{Error, Event, EventKind, KeyValue, RangeRequest, RangeResponse, Result, Revision};

// The queries that run on every read, named so that tests can check their plans.

/// The newest version of one key: its current version, unless it is a tombstone (then the key
/// does not exist). One descent of `log_key_revision`, then the row by its id.
pub(super) const CURRENT_GET: &str = "
    SELECT key, value, create_revision, revision, deleted FROM log
    WHERE key = ?1
    ORDER BY revision DESC LIMIT 1";

/// The newest version of a key at or below a revision; a tombstone means it did not exist.
pub(super) const PAST_GET: &str = "
    SELECT key, value, create_revision, revision, deleted FROM log
    WHERE key = ?1 AND revision <= ?2
    ORDER BY revision DESC LIMIT 1";

/// For each key in `[?1, ?2)`, in key order, the revision of its newest version at or below
/// ?3, from the index alone.
pub(super) const PAST_RANGE_NEWEST: &str = "
    SELECT max(revision) FROM log
    WHERE key >= ?1 AND key < ?2 AND revision <= ?3
    GROUP BY key ORDER BY key";

/// One version found by `PAST_RANGE_NEWEST`, unless it is a tombstone.
pub(super) const PAST_RANGE_VERSION: &str = "
    SELECT key, value, create_revision, revision FROM log
    WHERE revision = ?1 AND deleted = 0";

/// The changes in `(?1, ?2]` to keys in `[?3, ?4)`, each with the version it replaced. The
/// unary `+` keeps SQLite off the key index: walking the log in revision order streams,
/// whereas the index would need every matching row sorted before returning the first.
pub(super) const LOG_PAGE: &str = "
    SELECT l.revision, l.key, l.create_revision, l.deleted, l.value,
           p.revision, p.create_revision, p.value
    FROM log AS l LEFT JOIN log AS p ON p.revision = l.prev_revision
    WHERE l.revision > ?1 AND l.revision <= ?2 AND +l.key >= ?3 AND +l.key < ?4
    ORDER BY l.revision";

/// Read-only connections, opened on demand and kept for reuse. The semaphore bounds how many
/// exist, and so how many blocking threads reads can occupy.
pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
    /// Where the sync thread publishes the durable revision, the newest a read may see.
    published: Arc<Published>,
}

/// One read: a read transaction, and the newest revision it may show.
pub(super) struct Snapshot<'a> {
    pub tx: Transaction<'a>,
    /// The durable revision when the read began. The transaction can hold later writes
    /// (committed, not yet fsynced); reads never show them, see "Durability" in the module
    /// docs of `sqlite`.
    pub durable: Revision,
}

impl Readers {
    pub fn new(path: &Path, max_readers: usize, published: Arc<Published>) -> Self {
        Readers {
            path: path.to_path_buf(),
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max_readers.max(1))),
            published,
        }
    }

    /// Runs `read` in one read transaction, so everything it reads comes from one snapshot.
    pub async fn read<T, F>(self: &Arc<Self>, read: F) -> Result<T>
    where
        F: FnOnce(&Snapshot<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::Closed)?;
        let readers = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let idle = readers.idle.lock().unwrap().pop();
            let mut connection = match idle {
                Some(connection) => connection,
                None => open_reader(&readers.path)?,
            };
            // Loaded before the transaction starts, so that the snapshot holds this revision
            // (a revision is published only after its transaction committed).
            let durable = readers.published.revision.load(Ordering::Acquire);
            let result = match connection.transaction() {
                Ok(tx) => read(&Snapshot { tx, durable }),
                Err(e) => Err(Error::backend("starting a sqlite read transaction", e)),
            };
            readers.idle.lock().unwrap().push(connection);
            result
        })
        .await
        .map_err(|e| Error::backend("running a sqlite read", e))?
    }
}

/// The range of keys that start with `prefix`, as blob bounds: `start <= key < end`.
pub(super) fn prefix_bounds(prefix: &str) -> (Vec<u8>, Vec<u8>) {
    let start = prefix.as_bytes().to_vec();
    let mut end = start.clone();
    // UTF-8 never contains 0xff: the last byte can always be bumped, and a lone 0xff sorts
    // after every key.
    match end.last_mut() {
        Some(last) => *last += 1,
        None => end.push(0xff),
    }
    (start, end)
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Revisions {
    /// The revision reads are served at: the durable one.
    pub current: Revision,
    /// The newest committed revision in the snapshot; above `current` while writes wait for
    /// their fsync.
    pub committed: Revision,
    pub compacted: Revision,
}

pub(super) fn revisions(snapshot: &Snapshot<'_>) -> Result<Revisions> {
    snapshot
        .tx
        .prepare_cached(
            "SELECT (SELECT value FROM meta WHERE name = 'revision'),
                (SELECT value FROM meta WHERE name = 'compacted')",
        )
        .and_then(|mut statement| {
            statement.query_row([], |row| {
                let committed: Revision = row.get(0)?;
                Ok(Revisions {
                    current: committed.min(snapshot.durable),
                    committed,
                    compacted: row.get(1)?,
                })
            })
        })
        .map_err(sql_error("reading the store's revisions"))
}

/// The revision a read asking for `requested` is served at, or why it can't be.
fn read_revision(revisions: Revisions, requested: Option<Revision>) -> Result<Revision> {
    match requested {
        None => Ok(revisions.current),
        Some(r) if r > revisions.current => Err(Error::FutureRevision {
            requested: r,
            current: revisions.current,
        }),
        Some(r) if r < revisions.compacted => Err(Error::Compacted {
            requested: r,
            compacted: revisions.compacted,
        }),
        Some(r) => Ok(r),
    }
}

fn key_from(bytes: Vec<u8>) -> rusqlite::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, Box::new(e))
    })
}

/// A `KeyValue` from columns `key, value, create_revision, mod_revision`, starting at `at`.
fn key_value(row: &Row<'_>, at: usize) -> rusqlite::Result<KeyValue> {
    Ok(KeyValue {
        key: key_from(row.get(at)?)?,
        value: Bytes::from(row.get::<_, Vec<u8>>(at + 1)?),
        create_revision: row.get(at + 2)?,
        mod_revision: row.get(at + 3)?,
    })
}

/// The current version of `key`: its newest log row, unless that is a tombstone.
pub(super) fn current(connection: &Connection, key: &str) -> rusqlite::Result<Option<KeyValue>> {
    connection
        .prepare_cached(CURRENT_GET)?
        .query_row([key.as_bytes()], live_key_value)
        .optional()
        .map(Option::flatten)
}

/// A `KeyValue` from columns `key, value, create_revision, mod_revision, deleted`, or `None`
/// for a tombstone.
fn live_key_value(row: &Row<'_>) -> rusqlite::Result<Option<KeyValue>> {
    let deleted: bool = row.get(4)?;
    if deleted {
        Ok(None)
    } else {
        key_value(row, 0).map(Some)
    }
}

pub(super) fn get(
    snapshot: &Snapshot<'_>,
    key: &str,
    revision: Option<Revision>,
) -> Result<Option<KeyValue>> {
    let revisions = revisions(snapshot)?;
    let at = read_revision(revisions, revision)?;
    let tx = &snapshot.tx;
    if at == revisions.committed {
        return current(tx, key).map_err(sql_error("reading a key"));
    }
    // The newest version at or below `at` (which may be older than the newest row, when that is
    // not durable yet); a tombstone means the key did not exist then.
    tx.prepare_cached(PAST_GET)
        .and_then(|mut statement| {
            statement
                .query_row((key.as_bytes(), at), live_key_value)
                .optional()
        })
        .map(Option::flatten)
        .map_err(sql_error("reading a key at a past revision"))
}

pub(super) fn range(snapshot: &Snapshot<'_>, request: &RangeRequest) -> Result<RangeResponse> {
    let revisions = revisions(snapshot)?;
    let at = read_revision(revisions, request.revision)?;
    let (prefix_start, end) = prefix_bounds(&request.prefix);
    let start = match &request.start {
        Some(start) => start.as_bytes().to_vec(),
        None => prefix_start,
    };
    // One more than asked for tells whether there are more; SQLite reads -1 as no limit.
    let fetch: i64 = match request.limit {
        0 => -1,
        limit => i64::try_from(limit).unwrap_or(i64::MAX - 1) + 1,
    };
    // The current revision is read like any other: each key's newest version at or below it.
    let mut kvs = range_at(&snapshot.tx, &start, &end, at, fetch)
        .map_err(sql_error("reading a range of keys"))?;
    let more = request.limit > 0 && kvs.len() > request.limit;
    kvs.truncate(if more { request.limit } else { kvs.len() });
    Ok(RangeResponse {
        kvs,
        revision: at,
        more,
    })
}

/// The keys in `[start, end)` as they were at revision `at`, at most `fetch` of them (-1 for
/// all). The index gives each key's newest version at or below `at` in key order, without
/// reading any value; only the versions returned are then read, so a page costs what it
/// returns plus the (index-only) versions it skips.
fn range_at(
    tx: &Transaction<'_>,
    start: &[u8],
    end: &[u8],
    at: Revision,
    fetch: i64,
) -> rusqlite::Result<Vec<KeyValue>> {
    let mut newest = tx.prepare_cached(PAST_RANGE_NEWEST)?;
    let mut version = tx.prepare_cached(PAST_RANGE_VERSION)?;
    let mut kvs = Vec::new();
    let mut revisions = newest.query((start, end, at))?;
    while let Some(row) = revisions.next()? {
        if fetch >= 0 && kvs.len() as i64 >= fetch {
            break;
        }
        let revision: Revision = row.get(0)?;
        // No row: the newest version is a tombstone, the key did not exist at `at`.
        if let Some(kv) = version
            .query_row([revision], |row| key_value(row, 0))
            .optional()?
        {
            kvs.push(kv);
        }
    }
    Ok(kvs)
}

/// Up to this many events, or about this many bytes of values, per read of the log, so that
/// a watch replaying a long history holds a bounded amount of it in memory.
const LOG_PAGE_EVENTS: usize = 1000;
const LOG_PAGE_BYTES: usize = 8 * 1024 * 1024;

/// A slice of the history under a prefix.
pub(super) struct LogPage {
    pub events: Vec<Event>,
    /// Every change up to here has been read (whether or not under the prefix).
    pub read_up_to: Revision,
    /// Whether the page reached `until`.
    pub complete: bool,
    /// The revision the page was read up to (the snapshot's current revision when the caller
    /// gave none): where the next page must stop too, for the pages to add up to one snapshot.
    pub until: Revision,
}

/// The changes under `prefix` after `after` and up to `until` (or the current revision),
/// in revision order, as much as fits in a page.
pub(super) fn log_page(
    snapshot: &Snapshot<'_>,
    prefix: &str,
    after: Revision,
    until: Option<Revision>,
) -> Result<LogPage> {
    let revisions = revisions(snapshot)?;
    if after < revisions.compacted {
        return Err(Error::Compacted {
            requested: after,
            compacted: revisions.compacted,
        });
    }
    let until = until.map_or(revisions.current, |until| until.min(revisions.current));
    if until <= after {
        return Ok(LogPage {
            events: Vec::new(),
            read_up_to: after,
            complete: true,
            until,
        });
    }
    let (start, end) = prefix_bounds(prefix);
    let mut statement = snapshot
        .tx
        .prepare_cached(LOG_PAGE)
        .map_err(sql_error("reading the change log"))?;
    let mut rows = statement
        .query((after, until, start, end))
        .map_err(sql_error("reading the change log"))?;
    let mut events = Vec::new();
    let mut bytes = 0;
    while let Some(row) = rows.next().map_err(sql_error("reading the change log"))? {
        let event = event_from(row).map_err(sql_error("reading the change log"))??;
        bytes += event.kv.value.len() + event.prev.as_ref().map_or(0, |p| p.value.len());
        events.push(event);
        if events.len() >= LOG_PAGE_EVENTS || bytes >= LOG_PAGE_BYTES {
            let read_up_to = events.last().map_or(after, Event::revision);
            return Ok(LogPage {
                events,
                read_up_to,
                complete: read_up_to == until,
                until,
            });
        }
    }
    Ok(LogPage {
        events,
        read_up_to: until,
        complete: true,
        until,
    })
}

/// An event from a log row joined to its previous version (see `log_page`).
fn event_from(row: &Row<'_>) -> rusqlite::Result<Result<Event>> {
    let revision: Revision = row.get(0)?;
    let key = key_from(row.get(1)?)?;
    let create_revision: Revision = row.get(2)?;
    let deleted: bool = row.get(3)?;
    let prev = match row.get::<_, Option<Revision>>(5)? {
        Some(prev_revision) => Some(KeyValue {
            key: key.clone(),
            value: Bytes::from(row.get::<_, Vec<u8>>(7)?),
            create_revision: row.get(6)?,
            mod_revision: prev_revision,
        }),
        None => None,
    };
    let event = if deleted {
        let Some(prev) = prev else {
            return Ok(Err(Error::backend(
                "reading the change log",
                format!("the version deleted at revision {revision} is missing"),
            )));
        };
        Event {
            kind: EventKind::Delete,
            kv: KeyValue {
                mod_revision: revision,
                ..prev.clone()
            },
            prev: Some(prev),
        }
    } else {
        Event {
            kind: EventKind::Put,
            kv: KeyValue {
                key,
                value: Bytes::from(row.get::<_, Vec<u8>>(4)?),
                create_revision,
                mod_revision: revision,
            },
            prev,
        }
    };
    Ok(Ok(event))
}
