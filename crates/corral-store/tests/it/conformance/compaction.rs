//! Compaction: what it discards, what it must keep, and how reads and watches report it.

use corral_store::{DynStore, Error, RangeRequest, Result, Revision, WatchStream};
use futures::StreamExt;

use super::{DEADLINE, bytes, delete, kv, next_event, next_events, next_item, put};
use crate::assert_err;

/// Writes a small history and returns the revision to compact at (6):
///
/// | rev | write          |
/// |-----|----------------|
/// | 2   | create /k/a a1 |
/// | 3   | create /k/b b1 |
/// | 4   | update /k/a a2 |
/// | 5   | delete /k/b    |
/// | 6   | create /k/c c1 |
/// | 7   | update /k/a a3 |
/// | 8   | create /k/d d1 |
async fn write_history(store: &DynStore) -> Revision {
    assert_eq!(store.create("/k/a", bytes("a1")).await.unwrap(), 2);
    assert_eq!(store.create("/k/b", bytes("b1")).await.unwrap(), 3);
    assert_eq!(store.update("/k/a", bytes("a2"), 2).await.unwrap(), 4);
    assert_eq!(store.delete("/k/b", 3).await.unwrap().0, 5);
    assert_eq!(store.create("/k/c", bytes("c1")).await.unwrap(), 6);
    assert_eq!(store.update("/k/a", bytes("a3"), 4).await.unwrap(), 7);
    assert_eq!(store.create("/k/d", bytes("d1")).await.unwrap(), 8);
    6
}

fn range_at(revision: Option<Revision>) -> RangeRequest {
    RangeRequest {
        prefix: "/k/".into(),
        revision,
        ..Default::default()
    }
}

/// Asserts that a watch after `after` fails with `Compacted` at `compacted`, either from the
/// call or as the only item of the stream.
async fn assert_watch_compacted(store: &DynStore, after: Revision, compacted: Revision) {
    let mut stream: WatchStream = match store.watch("/k/", after).await {
        Err(Error::Compacted { compacted: at, .. }) => {
            assert_eq!(at, compacted);
            return;
        }
        Err(other) => panic!("expected Compacted, got {other:?}"),
        Ok(stream) => stream,
    };
    let item: Result<_> = next_item(&mut stream).await;
    assert_err!(item, Error::Compacted { compacted: at, .. } if at == compacted);
    // A failed stream ends after its error.
    let end = tokio::time::timeout(DEADLINE, stream.next()).await;
    assert!(matches!(end, Ok(None)), "{end:?}");
}

pub async fn nothing_is_compacted_at_first(store: DynStore) {
    assert_eq!(store.compacted_revision().await.unwrap(), 0);
    store.create("/k/a", bytes("a")).await.unwrap();
    let mut watch = store.watch("/k/", 0).await.unwrap();
    assert_eq!(next_event(&mut watch).await.revision(), 2);
    assert_eq!(store.get("/k/a", Some(1)).await.unwrap(), None);
}

pub async fn reads_below_the_compacted_revision_fail(store: DynStore) {
    let compact_at = write_history(&store).await;
    store.compact(compact_at).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), compact_at);
    for revision in 1..compact_at {
        assert_err!(
            store.get("/k/a", Some(revision)).await,
            Error::Compacted { requested, compacted } if requested == revision && compacted == compact_at
        );
        assert_err!(
            store.range(range_at(Some(revision))).await,
            Error::Compacted { requested, compacted } if requested == revision && compacted == compact_at
        );
    }
}

pub async fn reads_at_and_after_the_compacted_revision_succeed(store: DynStore) {
    let compact_at = write_history(&store).await;
    store.compact(compact_at).await.unwrap();
    let expected = [
        (6, vec![kv("/k/a", "a2", 2, 4), kv("/k/c", "c1", 6, 6)]),
        (7, vec![kv("/k/a", "a3", 2, 7), kv("/k/c", "c1", 6, 6)]),
        (
            8,
            vec![
                kv("/k/a", "a3", 2, 7),
                kv("/k/c", "c1", 6, 6),
                kv("/k/d", "d1", 8, 8),
            ],
        ),
    ];
    for (revision, kvs) in expected {
        let response = store.range(range_at(Some(revision))).await.unwrap();
        assert_eq!(response.kvs, kvs, "range at {revision}");
        assert_eq!(response.revision, revision);
    }
    // The version a read at the compacted revision needs is kept even though a later write
    // replaced it, and a key deleted before it stays deleted.
    assert_eq!(
        store.get("/k/a", Some(6)).await.unwrap(),
        Some(kv("/k/a", "a2", 2, 4))
    );
    assert_eq!(store.get("/k/b", Some(6)).await.unwrap(), None);
    assert_eq!(store.get("/k/d", Some(6)).await.unwrap(), None);
}

pub async fn compaction_keeps_the_current_state(store: DynStore) {
    // A key written once, long before the compaction, must survive it untouched.
    let compact_at = write_history(&store).await;
    let before = store.range(range_at(None)).await.unwrap();
    store.compact(compact_at).await.unwrap();
    let after = store.range(range_at(None)).await.unwrap();
    assert_eq!(after, before);
    assert_eq!(after.revision, 8);
    assert_eq!(store.current_revision().await.unwrap(), 8);
    // Preconditions still see the kept revisions.
    assert_eq!(store.update("/k/c", bytes("c2"), 6).await.unwrap(), 9);
    assert_eq!(store.delete("/k/a", 7).await.unwrap().0, 10);
    assert_eq!(store.create("/k/b", bytes("b2")).await.unwrap(), 11);
    assert_eq!(
        store.get("/k/b", None).await.unwrap(),
        Some(kv("/k/b", "b2", 11, 11))
    );
}

pub async fn watch_below_the_compacted_revision_fails(store: DynStore) {
    let compact_at = write_history(&store).await;
    store.compact(compact_at).await.unwrap();
    for after in [0, 1, compact_at - 1] {
        assert_watch_compacted(&store, after, compact_at).await;
    }
}

pub async fn watch_from_the_compacted_revision_replays_the_rest(store: DynStore) {
    let compact_at = write_history(&store).await;
    store.compact(compact_at).await.unwrap();
    let mut watch = store.watch("/k/", compact_at).await.unwrap();
    // The update at 7 replaced a version from before the compaction: its `prev` must still be
    // there.
    assert_eq!(
        next_events(&mut watch, 2).await,
        [
            put(kv("/k/a", "a3", 2, 7), Some(kv("/k/a", "a2", 2, 4))),
            put(kv("/k/d", "d1", 8, 8), None),
        ]
    );
    // So must the last value of a key written before the compaction and deleted after it.
    assert_eq!(store.delete("/k/c", 6).await.unwrap().0, 9);
    assert_eq!(
        next_event(&mut watch).await,
        delete(kv("/k/c", "c1", 6, 6), 9)
    );
}

pub async fn compacting_again_is_a_no_op(store: DynStore) {
    let compact_at = write_history(&store).await;
    store.compact(compact_at).await.unwrap();
    let state = store.range(range_at(Some(compact_at))).await.unwrap();
    store.compact(compact_at).await.unwrap();
    store.compact(compact_at - 2).await.unwrap();
    store.compact(1).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), compact_at);
    assert_eq!(
        store.range(range_at(Some(compact_at))).await.unwrap(),
        state
    );
    assert_eq!(store.current_revision().await.unwrap(), 8);
    // A later compaction still moves it forward.
    store.compact(7).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), 7);
    assert_err!(
        store.get("/k/a", Some(6)).await,
        Error::Compacted {
            requested: 6,
            compacted: 7
        }
    );
}

pub async fn compacting_the_future_is_refused(store: DynStore) {
    write_history(&store).await;
    assert_err!(
        store.compact(9).await,
        Error::FutureRevision {
            requested: 9,
            current: 8
        }
    );
    assert_eq!(store.compacted_revision().await.unwrap(), 0);
    assert_eq!(
        store.get("/k/a", Some(2)).await.unwrap(),
        Some(kv("/k/a", "a1", 2, 2))
    );
}

pub async fn live_watch_survives_compaction(store: DynStore) {
    write_history(&store).await;
    let mut watch = store.watch("/k/", 1).await.unwrap();
    assert_eq!(next_events(&mut watch, 7).await.len(), 7);
    // The watcher has seen everything, so compacting everything loses it nothing.
    store.compact(8).await.unwrap();
    store.create("/k/e", bytes("e1")).await.unwrap();
    assert_eq!(
        next_event(&mut watch).await,
        put(kv("/k/e", "e1", 9, 9), None)
    );
}

pub async fn writes_continue_after_compacting_everything(store: DynStore) {
    assert_eq!(store.create("/k/a", bytes("a")).await.unwrap(), 2);
    assert_eq!(store.delete("/k/a", 2).await.unwrap().0, 3);
    // The newest write is a delete: after compacting at it, no version of any key is left,
    // yet the revision must not go back.
    store.compact(3).await.unwrap();
    assert_eq!(store.current_revision().await.unwrap(), 3);
    assert_eq!(store.get("/k/a", Some(3)).await.unwrap(), None);
    let response = store.range(range_at(None)).await.unwrap();
    assert_eq!((response.kvs.len(), response.revision), (0, 3));
    let mut watch = store.watch("/k/", 3).await.unwrap();
    assert_eq!(store.create("/k/a", bytes("again")).await.unwrap(), 4);
    assert_eq!(
        next_event(&mut watch).await,
        put(kv("/k/a", "again", 4, 4), None)
    );
}
