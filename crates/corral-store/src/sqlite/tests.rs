//! Unit tests of the SQLite backend's pieces: batch semantics, compaction's row selection, key
//! bounds and query plans. The contract itself is checked by the conformance suite.

use std::sync::Arc;

use bytes::Bytes;
use rusqlite::Connection;

use super::read::{
    CURRENT_GET, LOG_PAGE, PAST_GET, PAST_RANGE_NEWEST, PAST_RANGE_VERSION, prefix_bounds,
};
use super::schema::{StoredState, open_reader, open_writer, read_state};
use super::writer::{
    BatchError, COMPACT_SUPERSEDED, COMPACT_TOMBSTONES, Write, apply_batch, compact_chunk,
};
use crate::{Error, Revision};

fn fresh() -> (tempfile::TempDir, Connection, StoredState) {
    let dir = tempfile::tempdir().unwrap();
    let (connection, state) = open_writer(&dir.path().join("store.db")).unwrap();
    (dir, connection, state)
}

fn create(key: &str, value: &str) -> Write {
    Write::Create {
        key: key.into(),
        value: Bytes::copy_from_slice(value.as_bytes()),
    }
}

fn update(key: &str, value: &str, expected: Revision) -> Write {
    Write::Update {
        key: key.into(),
        value: Bytes::copy_from_slice(value.as_bytes()),
        expected,
    }
}

fn delete(key: &str, expected: Revision) -> Write {
    Write::Delete {
        key: key.into(),
        expected,
    }
}

fn log_revisions(connection: &Connection) -> Vec<Revision> {
    let mut statement = connection
        .prepare("SELECT revision FROM log ORDER BY revision")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn a_fresh_store_is_at_revision_one() {
    let (_dir, _connection, state) = fresh();
    assert_eq!(
        (state.revision, state.compacted, state.compact_done),
        (1, 0, 0)
    );
}

#[test]
fn a_failing_write_in_a_batch_fails_alone() {
    let (_dir, mut connection, state) = fresh();
    let writes = [
        create("/a", "a1"),
        create("/a", "again"),
        update("/b", "b0", 1),
        create("/b", "b1"),
        update("/a", "a2", 2),
        // Stale: the update just before moved /a to revision 4.
        delete("/a", 2),
        update("/b", "b2", 3),
    ];
    let (outcomes, revision) = apply_batch(&mut connection, state.revision, &writes).unwrap();
    let summary: Vec<Result<Revision, String>> = outcomes
        .iter()
        .map(|outcome| match outcome {
            Ok(event) => Ok(event.revision()),
            Err(Error::Conflict { current, .. }) => {
                Err(format!("conflict at {}", current.mod_revision))
            }
            Err(error) => Err(error.to_string()),
        })
        .collect();
    assert_eq!(
        summary,
        [
            Ok(2),
            Err("key \"/a\" already exists".into()),
            Err("key \"/b\" not found".into()),
            Ok(3),
            Ok(4),
            Err("conflict at 4".into()),
            Ok(5),
        ]
    );
    assert_eq!(revision, 5);
    assert_eq!(read_state(&connection).unwrap().revision, 5);
    assert_eq!(log_revisions(&connection), [2, 3, 4, 5]);
}

#[test]
fn a_batch_where_every_write_fails_changes_nothing() {
    let (_dir, mut connection, state) = fresh();
    let (_, revision) = apply_batch(&mut connection, state.revision, &[create("/a", "a")]).unwrap();
    let (outcomes, after) = apply_batch(
        &mut connection,
        revision,
        &[create("/a", "b"), delete("/x", 1)],
    )
    .unwrap();
    assert!(outcomes.iter().all(Result::is_err));
    assert_eq!(after, revision);
    assert_eq!(read_state(&connection).unwrap().revision, revision);
}

#[test]
fn a_writer_that_lost_track_of_the_revision_refuses_to_write() {
    let (_dir, mut connection, state) = fresh();
    apply_batch(&mut connection, state.revision, &[create("/a", "a")]).unwrap();
    // As if another process had written revision 2 behind this writer's back.
    let result = apply_batch(&mut connection, state.revision, &[create("/b", "b")]);
    assert!(
        matches!(
            result,
            Err(BatchError::ForeignWriter {
                stored: 2,
                expected: 1
            })
        ),
        "{result:?}"
    );
    assert_eq!(log_revisions(&connection), [2]);
}

#[test]
fn compaction_deletes_superseded_versions_and_tombstones() {
    let (_dir, mut connection, state) = fresh();
    let writes = [
        create("/a", "a1"),    // 2: superseded by 4
        create("/b", "b1"),    // 3: superseded by its tombstone at 5
        update("/a", "a2", 2), // 4: newest /a at or below 7, kept
        delete("/b", 3),       // 5: tombstone, discarded
        create("/c", "c1"),    // 6: superseded by 7
        update("/c", "c2", 6), // 7: kept
        create("/b", "b2"),    // 8: above the compaction, kept
        delete("/c", 7),       // 9: above the compaction, kept (as is its prev, 7)
        update("/a", "a3", 4), // 10: kept (as is its prev, 4)
    ];
    let (outcomes, revision) = apply_batch(&mut connection, state.revision, &writes).unwrap();
    assert!(outcomes.iter().all(Result::is_ok));
    assert_eq!(revision, 10);
    // In chunks of two revisions, as the writer would do them between batches.
    let mut done = 0;
    while done < 7 {
        let until = (done + 2).min(7);
        compact_chunk(&mut connection, done, until).unwrap();
        done = until;
    }
    assert_eq!(log_revisions(&connection), [4, 7, 8, 9, 10]);
    assert_eq!(read_state(&connection).unwrap().compact_done, 7);

    // The next compaction only walks the revisions since; the versions it supersedes from
    // before the last one (4 and 7) go too.
    compact_chunk(&mut connection, 7, 10).unwrap();
    assert_eq!(log_revisions(&connection), [8, 10]);
}

#[test]
fn periodic_compaction_keeps_one_version_per_key() {
    let (_dir, mut connection, state) = fresh();
    let mut revision = state.revision;
    let mut versions = std::collections::BTreeMap::new();
    let mut compacted = 0;
    for round in 0..5 {
        let writes: Vec<Write> = (0..20)
            .map(|key| {
                let key = format!("/k/{key}");
                match versions.get(&key) {
                    None => create(&key, "v"),
                    Some(&expected) => update(&key, "v", expected),
                }
            })
            .collect();
        let (outcomes, next) = apply_batch(&mut connection, revision, &writes).unwrap();
        for outcome in outcomes {
            let event = outcome.unwrap();
            versions.insert(event.kv.key, event.kv.mod_revision);
        }
        revision = next;
        compact_chunk(&mut connection, compacted, revision).unwrap();
        compacted = revision;
        assert_eq!(log_revisions(&connection).len(), 20, "after round {round}");
    }
}

#[test]
fn prefix_bounds_cover_exactly_the_keys_with_the_prefix() {
    assert_eq!(prefix_bounds("/a/"), (b"/a/".to_vec(), b"/a0".to_vec()));
    assert_eq!(prefix_bounds(""), (Vec::new(), vec![0xff]));
    // U+007F bumps to a byte that is not UTF-8 on its own; as a blob bound it is still right.
    assert_eq!(
        prefix_bounds("/p\u{7f}"),
        (b"/p\x7f".to_vec(), b"/p\x80".to_vec())
    );
    let (start, end) = prefix_bounds("/q¿");
    for key in ["/q¿", "/q¿x", "/q¿\u{10ffff}"] {
        assert!(start.as_slice() <= key.as_bytes() && key.as_bytes() < end.as_slice());
    }
    assert!("/qÀ".as_bytes() >= end.as_slice());
}

/// The query plans of the hot queries: they must use the indexes, never scan the log or
/// sort in a temporary b-tree (which would make big ranges slow and unbounded in memory).
#[test]
fn hot_queries_use_indexes() {
    let (_dir, connection, _) = fresh();
    let plan = |sql: &str| -> String {
        let mut statement = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        // The plan doesn't depend on the parameters: leave them unbound.
        let mut rows = statement.raw_query();
        let mut lines = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            lines.push(row.get::<_, String>(3).unwrap());
        }
        lines.join("\n")
    };
    let queries = [
        CURRENT_GET,
        PAST_GET,
        PAST_RANGE_NEWEST,
        PAST_RANGE_VERSION,
        LOG_PAGE,
        COMPACT_SUPERSEDED,
        COMPACT_TOMBSTONES,
    ];
    for sql in queries {
        let plan = plan(sql);
        assert!(!plan.contains("TEMP B-TREE"), "{sql}\n{plan}");
        assert!(
            plan.lines().all(|line| !line.starts_with("SCAN")),
            "{sql}\n{plan}"
        );
    }
}

/// The per-key queries keep one plan on the writer's and the readers' connections, with
/// writes between their executions (as in a running store): without the query planner
/// stability guarantee, SQLite re-prepared them at every execution (a third of a create's work
/// in the writer thread, for its existence check).
#[test]
fn key_lookups_are_not_replanned_between_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (mut writer, state) = open_writer(&path).unwrap();
    let reader = open_reader(&path).unwrap();
    let mut revision = state.revision;
    let mut found = 0;
    for round in 0..20 {
        let writes: Vec<Write> = (0..10)
            .map(|i| create(&format!("/k/{round:02}/{i}"), "v"))
            .collect();
        revision = apply_batch(&mut writer, revision, &writes).unwrap().1;
        for i in 0..10 {
            let key = format!("/k/{round:02}/{i}");
            for connection in [&writer, &reader] {
                let mut statement = connection.prepare_cached(CURRENT_GET).unwrap();
                found += usize::from(statement.exists([key.as_bytes()]).unwrap());
                let mut statement = connection.prepare_cached(PAST_GET).unwrap();
                found += usize::from(statement.exists((key.as_bytes(), revision)).unwrap());
            }
        }
    }
    assert_eq!(found, 20 * 10 * 4);
    for connection in [&writer, &reader] {
        for sql in [CURRENT_GET, PAST_GET] {
            let statement = connection.prepare_cached(sql).unwrap();
            assert_eq!(
                statement.get_status(rusqlite::StatementStatus::RePrepare),
                0,
                "{sql}"
            );
        }
    }
}

/// Waits until the writer has committed `revision`, reading the file's own record of it
/// (there before the fsync, unlike anything the store shows).
async fn wait_for_commit(path: &std::path::Path, revision: Revision) {
    let reader = open_reader(path).unwrap();
    loop {
        let stored: rusqlite::Result<Revision> = reader.query_row(
            "SELECT value FROM meta WHERE name = 'revision'",
            [],
            |row| row.get(0),
        );
        match stored {
            Ok(stored) if stored >= revision => return,
            // Not there yet, or the WAL index changing under the read: look again.
            Ok(_) | Err(_) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
        }
    }
}

/// The durability rule of the module docs: a write committed by the writer but not yet
/// covered by an fsync is neither acknowledged nor visible to reads, watches or compaction —
/// not even through another write's failure — and all of it is once the fsync returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_acknowledged_or_shown_before_its_fsync() {
    use futures::StreamExt;

    use super::SqliteStore;
    use super::sync::SyncGate;
    use crate::{EventKind, RangeRequest, Store};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let gate = Arc::new(SyncGate::default());
    let store = SqliteStore::open_inner(&path, super::SqliteOptions::default(), Some(gate.clone()))
        .unwrap();
    let mut watch = store.watch("/", 1).await.unwrap();

    // The gate is closed: the writer commits, the sync thread waits before its fsync.
    let create = tokio::spawn({
        let store = store.clone();
        async move { store.create("/a", Bytes::from_static(b"a")).await }
    });
    wait_for_commit(&path, 2).await;
    let again = tokio::spawn({
        let store = store.clone();
        async move { store.create("/a", Bytes::from_static(b"again")).await }
    });
    // The second create fails on the first one's row, in a batch of its own (which commits
    // nothing); its answer would reveal that row, so it waits for the same fsync.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;

    assert!(!create.is_finished(), "acknowledged before its fsync");
    assert!(
        !again.is_finished(),
        "a failure revealed a write before its fsync"
    );
    assert_eq!(store.current_revision().await.unwrap(), 1);
    assert_eq!(store.get("/a", None).await.unwrap(), None);
    let past = store.get("/a", Some(2)).await;
    assert!(
        matches!(
            past,
            Err(Error::FutureRevision {
                requested: 2,
                current: 1
            })
        ),
        "{past:?}"
    );
    let listed = store
        .range(RangeRequest {
            prefix: "/".into(),
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    assert_eq!((listed.kvs.len(), listed.revision), (0, 1));
    let compacted = store.compact(2).await;
    assert!(
        matches!(
            compacted,
            Err(Error::FutureRevision {
                requested: 2,
                current: 1
            })
        ),
        "{compacted:?}"
    );
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(50), watch.next())
            .await
            .is_err(),
        "a watch saw a write before its fsync"
    );

    gate.set_open(true);
    assert_eq!(create.await.unwrap().unwrap(), 2);
    let again = again.await.unwrap();
    assert!(
        matches!(again, Err(Error::AlreadyExists { .. })),
        "{again:?}"
    );
    assert_eq!(store.current_revision().await.unwrap(), 2);
    let kv = store.get("/a", None).await.unwrap().unwrap();
    assert_eq!((kv.value.as_ref(), kv.mod_revision), (&b"a"[..], 2));
    let event = watch.next().await.unwrap().unwrap();
    assert_eq!((event.kind, event.revision()), (EventKind::Put, 2));
    store.compact(2).await.unwrap();
}
