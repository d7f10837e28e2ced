//! The SQLite backend: the conformance suite, and what only SQLite promises (its file keeps
//! everything across a reopen and a `kill -9`), plus measurements run on demand.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use corral_store::sqlite::{MAX_VALUE_BYTES, SqliteOptions, SqliteStore};
use corral_store::{DynStore, Error, RangeRequest, Revision, Store as _};

use crate::assert_err;
use crate::conformance::{DEADLINE, bytes, kv, next_event, next_events, next_item};

conformance_tests!(corral_store::testing::sqlite);

fn open(path: &Path) -> DynStore {
    Arc::new(SqliteStore::open(path).expect("opening the SQLite store"))
}

fn everything(revision: Option<Revision>) -> RangeRequest {
    RangeRequest {
        prefix: "/".into(),
        revision,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_resumes_with_the_same_data_and_revision() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (now, past, history) = {
        let store = open(&path);
        assert_eq!(store.create("/a", bytes("a1")).await.unwrap(), 2);
        assert_eq!(store.create("/b", bytes("b1")).await.unwrap(), 3);
        assert_eq!(store.update("/a", bytes("a2"), 2).await.unwrap(), 4);
        assert_eq!(store.create("/c", bytes("c1")).await.unwrap(), 5);
        assert_eq!(store.delete("/b", 3).await.unwrap().0, 6);
        assert_eq!(store.update("/c", bytes("c2"), 5).await.unwrap(), 7);
        store.compact(4).await.unwrap();
        assert_eq!(store.create("/d", bytes("d1")).await.unwrap(), 8);
        // The newest write is a delete, so the revision can't be read off the newest row.
        assert_eq!(store.delete("/d", 8).await.unwrap().0, 9);
        let now = store.range(everything(None)).await.unwrap();
        let past = store.range(everything(Some(5))).await.unwrap();
        let mut watch = store.watch("/", 4).await.unwrap();
        (now, past, next_events(&mut watch, 5).await)
    };

    let store = open(&path);
    assert_eq!(store.current_revision().await.unwrap(), 9);
    assert_eq!(store.compacted_revision().await.unwrap(), 4);
    assert_eq!(store.range(everything(None)).await.unwrap(), now);
    assert_eq!(now.kvs, [kv("/a", "a2", 2, 4), kv("/c", "c2", 5, 7)]);
    assert_eq!(store.range(everything(Some(5))).await.unwrap(), past);
    assert_err!(
        store.get("/a", Some(3)).await,
        Error::Compacted { compacted: 4, .. }
    );
    let mut watch = store.watch("/", 4).await.unwrap();
    assert_eq!(next_events(&mut watch, 5).await, history);
    // Writes carry on from where the file left off, and so do watches.
    assert_eq!(store.update("/a", bytes("a3"), 4).await.unwrap(), 10);
    assert_eq!(next_event(&mut watch).await.revision(), 10);
    assert_err!(
        store.create("/c", bytes("x")).await,
        Error::AlreadyExists { .. }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_compaction_finishes_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    {
        let store = open(&path);
        let mut revision = store.create("/a", bytes("0")).await.unwrap();
        for i in 1..50 {
            revision = store
                .update("/a", bytes(&i.to_string()), revision)
                .await
                .unwrap();
        }
        store.compact(revision).await.unwrap();
    }
    // Pretend the process died right after recording the compaction, before deleting rows.
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute("UPDATE meta SET value = 0 WHERE name = 'compact_done'", [])
            .unwrap();
    }
    let rows = |path: &Path| -> i64 {
        let connection = rusqlite::Connection::open(path).unwrap();
        connection
            .query_row("SELECT count(*) FROM log", [], |row| row.get(0))
            .unwrap()
    };
    let store = open(&path);
    // Compacting again (a no-op for the contract) waits for the leftover work to finish.
    store.compact(2).await.unwrap();
    assert_eq!(rows(&path), 1);
    assert_eq!(store.get("/a", None).await.unwrap().unwrap().value, "49");
}

/// A database file as schema version 1 wrote it (with its `current` table of live keys),
/// frozen here so that the migration keeps being tested against what old data dirs hold.
const SCHEMA_V1: &str = "
CREATE TABLE log (
    revision INTEGER PRIMARY KEY,
    key BLOB NOT NULL CHECK (typeof(key) = 'blob'),
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX log_key_revision ON log (key, revision);
CREATE TABLE current (
    key BLOB PRIMARY KEY CHECK (typeof(key) = 'blob'),
    revision INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
PRAGMA user_version = 1;
";

/// Writes, through SQL, what version 1 held after: create /a (2), create /b (3), update /a
/// (4), create /c (5), delete /b (6), compact at 2 (nothing superseded at or below 2), create
/// /d (7), update /c (8), delete /d (9): the log rows, the live keys in `current`, and meta.
fn write_v1_file(path: &Path) {
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .execute_batch("PRAGMA journal_mode = WAL;")
        .unwrap();
    connection.execute_batch(SCHEMA_V1).unwrap();
    // (revision, key, create_revision, prev_revision, deleted, value)
    let rows: [(i64, &str, i64, i64, bool, &str); 8] = [
        (2, "/a", 2, 0, false, "a1"),
        (3, "/b", 3, 0, false, "b1"),
        (4, "/a", 2, 2, false, "a2"),
        (5, "/c", 5, 0, false, "c1"),
        (6, "/b", 3, 3, true, ""),
        (7, "/d", 7, 0, false, "d1"),
        (8, "/c", 5, 5, false, "c2"),
        (9, "/d", 7, 7, true, ""),
    ];
    for (revision, key, create, prev, deleted, value) in rows {
        connection
            .execute(
                "INSERT INTO log VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                (
                    revision,
                    key.as_bytes(),
                    create,
                    prev,
                    deleted,
                    value.as_bytes(),
                ),
            )
            .unwrap();
    }
    connection
        .execute_batch(
            "INSERT INTO current VALUES (CAST('/a' AS BLOB), 4), (CAST('/c' AS BLOB), 8);
             INSERT INTO meta VALUES ('revision', 9), ('compacted', 2), ('compact_done', 2);",
        )
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_data_dir_is_migrated_and_keeps_its_data_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    write_v1_file(&path);

    let store = open(&path);
    assert_eq!(store.current_revision().await.unwrap(), 9);
    assert_eq!(store.compacted_revision().await.unwrap(), 2);
    let now = store.range(everything(None)).await.unwrap();
    assert_eq!(
        (now.kvs, now.revision),
        (vec![kv("/a", "a2", 2, 4), kv("/c", "c2", 5, 8)], 9)
    );
    assert_eq!(store.get("/b", None).await.unwrap(), None);
    assert_eq!(
        store.get("/b", Some(5)).await.unwrap(),
        Some(kv("/b", "b1", 3, 3))
    );
    let past = store.range(everything(Some(7))).await.unwrap();
    assert_eq!(
        past.kvs,
        [
            kv("/a", "a2", 2, 4),
            kv("/c", "c1", 5, 5),
            kv("/d", "d1", 7, 7)
        ]
    );
    let mut watch = store.watch("/", 2).await.unwrap();
    let history: Vec<(Revision, String)> = next_events(&mut watch, 7)
        .await
        .into_iter()
        .map(|event| (event.revision(), event.kv.key))
        .collect();
    let keys = ["/b", "/a", "/c", "/b", "/d", "/c", "/d"];
    let expected: Vec<(Revision, String)> =
        (3..).zip(keys.iter().map(|key| key.to_string())).collect();
    assert_eq!(history, expected);

    // Writes carry on: a live key can't be created again, a deleted one can.
    assert_err!(
        store.create("/a", bytes("x")).await,
        Error::AlreadyExists { .. }
    );
    assert_eq!(store.create("/b", bytes("b2")).await.unwrap(), 10);
    assert_eq!(store.update("/c", bytes("c3"), 8).await.unwrap(), 11);
    assert_err!(
        store.update("/d", bytes("x"), 7).await,
        Error::NotFound { .. }
    );
    drop(watch);
    drop(store);

    // The file is at the new version, without the table; reopening it again changes nothing.
    let connection = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    let tables: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'current'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!((version, tables), (2, 0));
    drop(connection);
    let store = open(&path);
    assert_eq!(
        store.range(everything(None)).await.unwrap().kvs,
        [
            kv("/a", "a2", 2, 4),
            kv("/b", "b2", 10, 10),
            kv("/c", "c3", 5, 11)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_of_a_newer_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    drop(SqliteStore::open(&path).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    drop(connection);
    let Err(Error::Backend { source, .. }) = SqliteStore::open(&path) else {
        panic!("a file of a newer schema version was opened");
    };
    assert!(
        source.to_string().contains("unknown schema version 99"),
        "{source}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_up_to_the_limit_are_kept_whole() {
    let test_store = corral_store::testing::sqlite().await;
    let store = test_store.store.clone();
    let largest: Bytes = (0..MAX_VALUE_BYTES).map(|i| (i % 251) as u8).collect();
    assert_eq!(store.create("/large", largest.clone()).await.unwrap(), 2);
    assert_eq!(
        store.get("/large", None).await.unwrap().unwrap().value,
        largest
    );
    let mut too_large = largest.to_vec();
    too_large.push(0);
    assert_err!(
        store.create("/larger", Bytes::from(too_large)).await,
        Error::ValueTooLarge { size, limit: MAX_VALUE_BYTES } if size == MAX_VALUE_BYTES + 1
    );
    let mut watch = store.watch("/", 1).await.unwrap();
    assert_eq!(next_event(&mut watch).await.kv.value, largest);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_falls_behind_the_buffer_reads_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        watch_buffer: 2,
        ..SqliteOptions::default()
    };
    let store: DynStore =
        Arc::new(SqliteStore::open_with(&dir.path().join("s.db"), options).unwrap());
    let mut behind = store.watch("/w/", 1).await.unwrap();
    let mut expected = Vec::new();
    // One write at a time: each is its own batch, so the buffer of two overflows many times.
    for i in 0..100 {
        let key = format!("/w/{i:03}");
        let revision = store.create(&key, bytes("x")).await.unwrap();
        store
            .create(&format!("/other/{i}"), bytes("x"))
            .await
            .unwrap();
        expected.push((revision, key));
    }
    let events = next_events(&mut behind, expected.len()).await;
    let seen: Vec<(Revision, String)> = events
        .into_iter()
        .map(|event| (event.revision(), event.kv.key))
        .collect();
    assert_eq!(seen, expected);
    // Back on live changes after catching up.
    let revision = store.create("/w/live", bytes("x")).await.unwrap();
    assert_eq!(next_event(&mut behind).await.revision(), revision);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_end_with_closed_when_the_store_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("store.db"));
    let mut watch = store.watch("/", 1).await.unwrap();
    store.create("/a", bytes("a")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.revision(), 2);
    drop(store);
    assert_err!(next_item(&mut watch).await, Error::Closed);
    let end = tokio::time::timeout(DEADLINE, futures::StreamExt::next(&mut watch)).await;
    assert!(matches!(end, Ok(None)), "{end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_on_the_same_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let first = open(&path);
    let second = open(&path);
    assert_eq!(first.create("/a", bytes("a")).await.unwrap(), 2);
    // The second store believes the revision is still 1; writing would corrupt the history.
    assert_err!(second.create("/b", bytes("b")).await, Error::Backend { .. });
    assert_eq!(first.create("/c", bytes("c")).await.unwrap(), 3);
}

/// Set in the environment of the child process that `acknowledged_writes_survive_kill_9`
/// starts: the path of the database the child writes to.
const WRITER_CHILD_DB: &str = "CORRAL_STORE_WRITER_CHILD_DB";

/// Not a check on its own: the child process of `acknowledged_writes_survive_kill_9`. It
/// writes from many tasks at once and prints `ack <revision> <key> <value>` for each write as
/// soon as the store acknowledged it, until it is killed (or, should its parent be gone, for
/// a bounded time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durability_writer_child() {
    let Ok(path) = std::env::var(WRITER_CHILD_DB) else {
        return;
    };
    let store = open(Path::new(&path));
    let stop_at = Instant::now() + Duration::from_secs(60);
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let mut tasks = Vec::new();
    for task in 0..16 {
        let store = store.clone();
        let out = out.clone();
        tasks.push(tokio::spawn(async move {
            let counter = format!("/counter/{task:02}");
            let mut counter_revision = store.create(&counter, Bytes::from("0")).await.unwrap();
            let ack = |revision: Revision, key: &str, value: &str| {
                let mut out = out.lock().unwrap();
                writeln!(out, "ack {revision} {key} {value}").unwrap();
                out.flush().unwrap();
            };
            ack(counter_revision, &counter, "0");
            for n in 1..100_000u32 {
                if Instant::now() > stop_at {
                    break;
                }
                let key = format!("/durable/{task:02}/{n:06}");
                let value = format!("{key}-{}", "x".repeat(1000));
                let revision = store.create(&key, Bytes::from(value)).await.unwrap();
                ack(revision, &key, "created");
                let value = n.to_string();
                counter_revision = store
                    .update(&counter, Bytes::from(value.clone()), counter_revision)
                    .await
                    .unwrap();
                ack(counter_revision, &counter, &value);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// Reads one line of the writer child's output, keeping it if it is a whole acknowledgement.
/// `None` at the end of the output.
fn read_ack(
    stdout: &mut impl BufRead,
    acknowledged: &mut Vec<(Revision, String, String)>,
) -> Option<()> {
    let mut line = String::new();
    if stdout.read_line(&mut line).ok()? == 0 {
        return None;
    }
    // A line cut short by the kill was never a complete acknowledgement.
    if let Some(ack) = line.strip_suffix('\n').and_then(|l| l.strip_prefix("ack ")) {
        let mut fields = ack.splitn(3, ' ');
        let revision = fields.next().unwrap().parse().unwrap();
        let key = fields.next().unwrap().to_string();
        let value = fields.next().unwrap().to_string();
        acknowledged.push((revision, key, value));
    }
    Some(())
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    const ACKS_BEFORE_KILL: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sqlite::durability_writer_child", "--nocapture"])
        .env(WRITER_CHILD_DB, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting the writer child");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut acknowledged: Vec<(Revision, String, String)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while acknowledged.len() < ACKS_BEFORE_KILL {
        assert!(Instant::now() < deadline, "the writer child is too slow");
        read_ack(&mut stdout, &mut acknowledged)
            .expect("the writer child stopped before it was killed");
    }
    // SIGKILL, mid-load: the child gets no chance to flush or close anything.
    child.kill().unwrap();
    child.wait().unwrap();
    while read_ack(&mut stdout, &mut acknowledged).is_some() {}

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = open(&path);
        let current = store.current_revision().await.unwrap();
        let newest_ack = acknowledged.iter().map(|(r, _, _)| *r).max().unwrap();
        assert!(
            current >= newest_ack,
            "revision {current} is below acknowledged {newest_ack}"
        );
        // The whole history, in order: revisions 2..=current, each exactly once.
        let mut watch = store.watch("/", 1).await.unwrap();
        let events = next_events(&mut watch, (current - 1) as usize).await;
        let revisions: Vec<Revision> = events.iter().map(|e| e.revision()).collect();
        assert_eq!(revisions, (2..=current).collect::<Vec<_>>());
        let by_revision: BTreeMap<Revision, &corral_store::Event> =
            events.iter().map(|e| (e.revision(), e)).collect();
        for (revision, key, value) in &acknowledged {
            let event = by_revision[revision];
            assert_eq!(&event.kv.key, key, "revision {revision}");
            if value == "created" {
                assert!(event.kv.value.starts_with(key.as_bytes()));
                let now = store
                    .get(key, None)
                    .await
                    .unwrap()
                    .expect("acknowledged create lost");
                assert_eq!(now.create_revision, *revision);
            } else {
                assert_eq!(event.kv.value, value.as_bytes(), "revision {revision}");
            }
        }
        // And the store takes writes again.
        assert_eq!(
            store.create("/after", bytes("x")).await.unwrap(),
            current + 1
        );
        eprintln!(
            "kill -9 after {} acknowledged writes: all {} present, {} revisions in the file",
            ACKS_BEFORE_KILL,
            acknowledged.len(),
            current - 1
        );
    });
}

/// Not a check: writes per second of 1 KiB creates from 1 and from 64 concurrent writers, on a
/// file in the temp dir. Run it in release mode: `cargo test --release -p corral-store --test it
/// -- --ignored --nocapture measure_`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn measure_write_throughput() {
    let value = Bytes::from(vec![b'x'; 1024]);
    for (writers, writes_each) in [(1, 2000), (64, 200)] {
        let test_store = corral_store::testing::sqlite().await;
        let store = test_store.store.clone();
        let started = Instant::now();
        let tasks: Vec<_> = (0..writers)
            .map(|writer| {
                let store = store.clone();
                let value = value.clone();
                tokio::spawn(async move {
                    for n in 0..writes_each {
                        let key = format!("/bench/{writer:02}/{n:05}");
                        store.create(&key, value.clone()).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let elapsed = started.elapsed();
        let writes = writers * writes_each;
        eprintln!(
            "sqlite: {writes} creates of 1 KiB from {writers} writers in {elapsed:.2?}: {:.0} writes/s",
            writes as f64 / elapsed.as_secs_f64()
        );
    }
}

/// Not a check: how long reads of 10,000 keys (1 KiB values) take, now and at a past revision,
/// whole and in pages of 500, and how long compacting 50,000 versions takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn measure_range_of_10000_keys() {
    const KEYS: usize = 10_000;
    let test_store = corral_store::testing::sqlite().await;
    let store = test_store.store.clone();
    let value = Bytes::from(vec![b'x'; 1024]);
    let tasks: Vec<_> = (0..50)
        .map(|writer| {
            let store = store.clone();
            let value = value.clone();
            tokio::spawn(async move {
                for n in (writer..KEYS).step_by(50) {
                    store
                        .create(&format!("/range/{n:05}"), value.clone())
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let past = store.current_revision().await.unwrap();
    // More versions of every key, so that a read at `past` has newer rows to skip.
    for round in 0..4 {
        let tasks: Vec<_> = (0..50)
            .map(|writer| {
                let store = store.clone();
                let value = value.clone();
                tokio::spawn(async move {
                    for n in (writer..KEYS).step_by(50) {
                        let key = format!("/range/{n:05}");
                        let current = store.get(&key, None).await.unwrap().unwrap();
                        store
                            .update(&key, value.clone(), current.mod_revision)
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        eprintln!("round {round} of updates written");
    }

    let time = async |label: &str, revision: Option<Revision>, limit: usize| {
        let started = Instant::now();
        let mut request = RangeRequest {
            prefix: "/range/".into(),
            limit,
            revision,
            ..Default::default()
        };
        let mut keys = 0;
        loop {
            let response = store.range(request.clone()).await.unwrap();
            keys += response.kvs.len();
            if !response.more {
                break;
            }
            let mut start = response.kvs.last().unwrap().key.clone();
            start.push('\0');
            request.start = Some(start);
            request.revision = Some(response.revision);
        }
        assert_eq!(keys, KEYS);
        eprintln!("sqlite: {label}: {keys} keys in {:.2?}", started.elapsed());
    };
    for _ in 0..2 {
        time("current range, whole", None, 0).await;
        time("current range, pages of 500", None, 500).await;
        time(
            "past range (4 newer versions per key), whole",
            Some(past),
            0,
        )
        .await;
        time("past range, pages of 500", Some(past), 500).await;
    }
    let current = store.current_revision().await.unwrap();
    let started = Instant::now();
    store.compact(current).await.unwrap();
    eprintln!(
        "sqlite: compacting {} revisions (40,000 superseded rows) took {:.2?}",
        current - 1,
        started.elapsed()
    );
    time("current range after compaction, whole", None, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_stats_count_every_committed_write_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("store.db")).unwrap();
    let before = store.commit_stats();
    let writers: Vec<_> = (0..32)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move { store.create(&format!("/k/{i}"), bytes("v")).await })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap().unwrap();
    }
    // A failed write commits nothing and is not counted.
    assert_err!(
        store.create("/k/0", bytes("again")).await,
        Error::AlreadyExists { .. }
    );
    let stats = store.commit_stats().since(&before);
    assert_eq!(stats.writes, 32);
    assert!((1..=32).contains(&stats.commits), "{stats:?}");
    assert_eq!(stats.batch_sizes.iter().sum::<u64>(), stats.commits);
    assert!(stats.commit_time > Duration::ZERO, "{stats:?}");
}
