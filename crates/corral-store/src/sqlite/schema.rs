//! The database schema, connection settings, and opening the writer's connection.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::{Error, Result, Revision};

/// Bumped when the schema changes; a file with a newer version is refused, an older one is
/// migrated when the writer opens it (`migrate`).
///
/// 1: `log`, `log_key_revision`, and a `current` table (key → revision of its live version).
/// 2: no `current` table. Every create rewrote a leaf of both name-ordered b-trees (`current`
///    and `log_key_revision`), wherever the key falls among the others; the newest row of a key
///    in `log_key_revision` says the same as its `current` row did (a tombstone: absent), so
///    one of them is enough, and a create now rewrites one such leaf instead of two.
pub(super) const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE log (
    revision INTEGER PRIMARY KEY,
    key BLOB NOT NULL CHECK (typeof(key) = 'blob'),
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    -- Last, so that scans that only look at the other columns skip large values.
    value BLOB NOT NULL
);
CREATE INDEX log_key_revision ON log (key, revision);
CREATE TABLE meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO meta (name, value) VALUES ('revision', 1), ('compacted', 0), ('compact_done', 0);
";

/// From version 1: the log already holds every key's versions and tombstones (the `current`
/// table was derived from it in the same transactions), so dropping the table is the whole
/// migration.
const MIGRATE_1_TO_2: &str = "DROP TABLE current;";

/// How long a connection waits for a lock held by another connection before failing. Only
/// checkpoints and WAL recovery take locks that our readers or writer can meet.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The persistent state the writer starts from.
#[derive(Clone, Copy, Debug)]
pub(super) struct StoredState {
    pub revision: Revision,
    pub compacted: Revision,
    pub compact_done: Revision,
}

pub(super) fn sql_error(context: &'static str) -> impl FnOnce(rusqlite::Error) -> Error {
    move |error| Error::backend(context, error)
}

/// Opens (creating if needed) the database at `path` for writing, with its schema, and reads
/// the stored state.
pub(super) fn open_writer(path: &Path) -> Result<(Connection, StoredState)> {
    let existed = path.exists();
    let connection = Connection::open(path).map_err(sql_error("opening the sqlite database"))?;
    connection
        .busy_timeout(BUSY_TIMEOUT)
        .map_err(sql_error("configuring the sqlite database"))?;
    let mode: String = connection
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(sql_error("switching the sqlite database to WAL mode"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::backend(
            "switching the sqlite database to WAL mode",
            format!("the journal mode stayed {mode:?}"),
        ));
    }
    // NORMAL: a commit writes the WAL but does not fsync it; the sync thread does, while the
    // writer commits the next batch, and nothing is acknowledged or shown before that fsync
    // (see "Durability" in the module docs of `sqlite`). SQLite still fsyncs the WAL before
    // every checkpoint copies it into the database file, and the database file after.
    connection
        .pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql_error("configuring the sqlite database"))?;
    // A burst of large values can grow the WAL far beyond its usual size; once checkpointed,
    // give the space back.
    connection
        .pragma_update(None, "journal_size_limit", 64 * 1024 * 1024)
        .map_err(sql_error("configuring the sqlite database"))?;
    // Checkpoint every ~40 MiB of WAL instead of SQLite's 4 MiB. A checkpoint copies the
    // newest version of every page in the WAL into the database file and fsyncs it, on this
    // (the writer's) thread; pages written again and again between checkpoints (index leaves
    // that keys of concurrent clients land on, the meta row) are copied once per checkpoint,
    // so rarer checkpoints copy fewer pages per write. Durability does not change: commits
    // are durable in the WAL.
    connection
        .pragma_update(None, "wal_autocheckpoint", 10_000)
        .map_err(sql_error("configuring the sqlite database"))?;
    connection.set_prepared_statement_cache_capacity(32);
    keep_plans(&connection)?;

    let version: i64 = connection
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sql_error("reading the sqlite schema version"))?;
    match version {
        0 => {
            let create = format!(
                "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            );
            connection
                .execute_batch(&create)
                .map_err(sql_error("creating the sqlite schema"))?;
        }
        SCHEMA_VERSION => {}
        1 => {
            let migrate = format!(
                "BEGIN IMMEDIATE; {MIGRATE_1_TO_2} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            );
            connection
                .execute_batch(&migrate)
                .map_err(sql_error("migrating the sqlite schema from version 1"))?;
            tracing::info!(path = %path.display(), "Migrated the SQLite store's schema from version 1 to 2");
        }
        other => {
            return Err(Error::backend(
                "opening the sqlite database",
                format!("unknown schema version {other} (this build knows {SCHEMA_VERSION})"),
            ));
        }
    }
    if !existed {
        sync_parent_dir(path)?;
    }
    let state = read_state(&connection)?;
    Ok((connection, state))
}

/// Opens the database's `-wal` file for the sync thread's `fdatasync`s, and syncs its
/// directory: SQLite creates the file (it exists once `open_writer` has run) and would sync
/// the directory entry at its first fsync of it, which with `synchronous=NORMAL` comes only at
/// a checkpoint. SQLite keeps the file (the same inode) while the writer's connection is
/// open; it truncates it at most (`journal_size_limit`).
///
/// The file is synced once here too: a previous process killed between a commit and its
/// fsync leaves committed frames that are in the page cache only, and this store is about to
/// show their revisions.
pub(super) fn open_wal(path: &Path) -> Result<std::fs::File> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&wal)
        .map_err(|e| Error::backend("opening the sqlite WAL file for syncing", e))?;
    file.sync_data()
        .map_err(|e| Error::backend("syncing the sqlite WAL file", e))?;
    sync_parent_dir(path)?;
    Ok(file)
}

/// A new file's directory entry must reach the disk too, or a power loss could lose the
/// whole file, acknowledged writes and all.
fn sync_parent_dir(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|e| Error::backend("syncing the sqlite database's directory", e))
}

pub(super) fn read_state(connection: &Connection) -> Result<StoredState> {
    let value = |name: &str| -> Result<Revision> {
        connection
            .query_row("SELECT value FROM meta WHERE name = ?1", [name], |row| {
                row.get(0)
            })
            .optional()
            .map_err(sql_error("reading the sqlite store's state"))?
            .ok_or_else(|| {
                Error::backend(
                    "reading the sqlite store's state",
                    format!("meta row {name:?} is missing"),
                )
            })
    };
    Ok(StoredState {
        revision: value("revision")?,
        compacted: value("compacted")?,
        compact_done: value("compact_done")?,
    })
}

/// Opens a read-only connection for the reader pool.
pub(super) fn open_reader(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let connection = Connection::open_with_flags(path, flags)
        .map_err(sql_error("opening a sqlite read connection"))?;
    connection
        .busy_timeout(BUSY_TIMEOUT)
        .map_err(sql_error("configuring a sqlite read connection"))?;
    connection.set_prepared_statement_cache_capacity(32);
    keep_plans(&connection)?;
    Ok(connection)
}

/// Turns on SQLite's query planner stability guarantee. Without it, the statements that look a
/// key up in `log_key_revision` were planned again at every execution once other writes had
/// happened since the last one (`SQLITE_STMTSTATUS_REPREPARE` counted one per run): the parse
/// and plan cost more than the lookup. Our queries are written for one plan each, which
/// `hot_queries_use_indexes` checks, so nothing is lost.
fn keep_plans(connection: &Connection) -> Result<()> {
    connection
        .set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .map(drop)
        .map_err(sql_error("configuring the sqlite query planner"))
}
