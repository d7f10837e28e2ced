//! Watches: history replay, live changes, ordering, prefixes and event contents.

use std::collections::BTreeMap;

use bytes::Bytes;
use corral_store::{DynStore, Event, EventKind, Revision};

use super::{bytes, delete, kv, next_event, next_events, put};

pub async fn watch_replays_history_then_continues_live(store: DynStore) {
    store.create("/w/a", bytes("a1")).await.unwrap();
    store.create("/w/b", bytes("b1")).await.unwrap();
    store.update("/w/a", bytes("a2"), 2).await.unwrap();
    store.delete("/w/b", 3).await.unwrap();
    let history = vec![
        put(kv("/w/a", "a1", 2, 2), None),
        put(kv("/w/b", "b1", 3, 3), None),
        put(kv("/w/a", "a2", 2, 4), Some(kv("/w/a", "a1", 2, 2))),
        delete(kv("/w/b", "b1", 3, 3), 5),
    ];

    let mut from_start = store.watch("/w/", 1).await.unwrap();
    let mut from_middle = store.watch("/w/", 3).await.unwrap();
    assert_eq!(next_events(&mut from_start, 4).await, history);
    assert_eq!(next_events(&mut from_middle, 2).await, history[2..]);

    store.create("/w/c", bytes("c1")).await.unwrap();
    store.update("/w/a", bytes("a3"), 4).await.unwrap();
    let live = vec![
        put(kv("/w/c", "c1", 6, 6), None),
        put(kv("/w/a", "a3", 2, 7), Some(kv("/w/a", "a2", 2, 4))),
    ];
    assert_eq!(next_events(&mut from_start, 2).await, live);
    assert_eq!(next_events(&mut from_middle, 2).await, live);
}

pub async fn watch_from_the_current_revision_sees_only_new_changes(store: DynStore) {
    store.create("/w/old", bytes("old")).await.unwrap();
    let current = store.current_revision().await.unwrap();
    let mut watch = store.watch("/w/", current).await.unwrap();
    store.create("/w/new", bytes("new")).await.unwrap();
    assert_eq!(
        next_event(&mut watch).await,
        put(kv("/w/new", "new", 3, 3), None)
    );
}

pub async fn watch_from_a_future_revision_waits_for_it(store: DynStore) {
    let mut watch = store.watch("/w/", 4).await.unwrap();
    for i in 2..=6 {
        store.create(&format!("/w/{i}"), bytes("x")).await.unwrap();
    }
    let events = next_events(&mut watch, 2).await;
    assert_eq!(
        events.iter().map(Event::revision).collect::<Vec<_>>(),
        [5, 6]
    );
}

pub async fn watch_filters_by_prefix(store: DynStore) {
    let mut watch_a = store.watch("/a/", 1).await.unwrap();
    let mut watch_b = store.watch("/b/", 1).await.unwrap();
    let mut watch_all = store.watch("", 1).await.unwrap();
    let writes = [
        "/a/1", "/b/1", "/ab/1", "/a", "/b", "/b/2", "/a/2", "/c/1", "/a/",
    ];
    for key in writes {
        store.create(key, bytes(key)).await.unwrap();
    }
    // Markers written last: once a watch delivers its marker, it has delivered everything
    // before it, so no stray event can still be on its way.
    store.create("/a/~marker", bytes("")).await.unwrap();
    store.create("/b/~marker", bytes("")).await.unwrap();

    let keys_until_marker = async |watch: &mut corral_store::WatchStream| {
        let mut keys = Vec::new();
        loop {
            let event = next_event(watch).await;
            if event.kv.key.ends_with("~marker") {
                return keys;
            }
            keys.push(event.kv.key);
        }
    };
    assert_eq!(
        keys_until_marker(&mut watch_a).await,
        ["/a/1", "/a/2", "/a/"]
    );
    assert_eq!(keys_until_marker(&mut watch_b).await, ["/b/1", "/b/2"]);
    let everything = next_events(&mut watch_all, writes.len() + 2).await;
    let mut expected: Vec<&str> = writes.to_vec();
    expected.extend(["/a/~marker", "/b/~marker"]);
    assert_eq!(
        everything
            .iter()
            .map(|e| e.kv.key.as_str())
            .collect::<Vec<_>>(),
        expected
    );
}

pub async fn watch_events_carry_values_and_previous_versions(store: DynStore) {
    let mut watch = store.watch("/e/", 1).await.unwrap();
    store.create("/e/x", bytes("v1")).await.unwrap();
    store.update("/e/x", bytes("v2"), 2).await.unwrap();
    let (revision, deleted) = store.delete("/e/x", 3).await.unwrap();
    store.create("/e/x", bytes("v3")).await.unwrap();
    let events = next_events(&mut watch, 4).await;
    assert_eq!(
        events,
        [
            put(kv("/e/x", "v1", 2, 2), None),
            put(kv("/e/x", "v2", 2, 3), Some(kv("/e/x", "v1", 2, 2))),
            // A delete carries the last value at the delete's revision, and the key before it.
            delete(kv("/e/x", "v2", 2, 3), 4),
            // A re-create starts a new life: no previous version.
            put(kv("/e/x", "v3", 5, 5), None),
        ]
    );
    assert_eq!(revision, 4);
    assert_eq!(deleted, kv("/e/x", "v2", 2, 3));
    assert_eq!(events[2].kind, EventKind::Delete);
    assert_eq!(events[2].revision(), 4);
}

pub async fn watchers_from_different_revisions_agree(store: DynStore) {
    for i in 0..20 {
        store
            .create(&format!("/agree/{i}"), bytes("x"))
            .await
            .unwrap();
    }
    let mut all = store.watch("/agree/", 1).await.unwrap();
    let starts = [1, 5, 10, 21];
    let mut watches = Vec::new();
    for after in starts {
        watches.push((after, store.watch("/agree/", after).await.unwrap()));
    }
    for i in 0..10 {
        let key = format!("/agree/{i}");
        let current = store.get(&key, None).await.unwrap().unwrap();
        store
            .update(&key, bytes("y"), current.mod_revision)
            .await
            .unwrap();
    }
    let reference = next_events(&mut all, 30).await;
    let revisions: Vec<Revision> = reference.iter().map(Event::revision).collect();
    assert_eq!(revisions, (2..=31).collect::<Vec<_>>());
    for (after, mut watch) in watches {
        let expected = &reference[(after - 1) as usize..];
        assert_eq!(
            next_events(&mut watch, expected.len()).await,
            expected,
            "watch after {after}"
        );
    }
}

/// Writes from many tasks at once: each task creates its own key, updates it, and finally
/// deletes it, `writes_per_task` writes in all. Returns every acknowledged write by revision.
async fn write_concurrently(
    store: &DynStore,
    prefix: &str,
    tasks: usize,
    writes_per_task: usize,
) -> BTreeMap<Revision, (String, EventKind, Bytes)> {
    let mut handles = Vec::new();
    for task in 0..tasks {
        let store = store.clone();
        let key = format!("{prefix}{task:02}");
        handles.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let value = Bytes::from(format!("{key} write 0"));
            let mut revision = store.create(&key, value.clone()).await.unwrap();
            acknowledged.push((revision, (key.clone(), EventKind::Put, value)));
            for write in 1..writes_per_task - 1 {
                let value = Bytes::from(format!("{key} write {write}"));
                revision = store.update(&key, value.clone(), revision).await.unwrap();
                acknowledged.push((revision, (key.clone(), EventKind::Put, value)));
            }
            let (deleted_at, last) = store.delete(&key, revision).await.unwrap();
            acknowledged.push((deleted_at, (key.clone(), EventKind::Delete, last.value)));
            acknowledged
        }));
    }
    let mut acknowledged = BTreeMap::new();
    for handle in handles {
        for (revision, write) in handle.await.unwrap() {
            assert!(
                acknowledged.insert(revision, write).is_none(),
                "revision {revision} acknowledged twice"
            );
        }
    }
    acknowledged
}

/// Checks that `events` are exactly the acknowledged writes, in revision order.
fn assert_events_match(
    events: &[Event],
    acknowledged: &BTreeMap<Revision, (String, EventKind, Bytes)>,
) {
    assert_eq!(events.len(), acknowledged.len());
    for (event, (revision, (key, kind, value))) in events.iter().zip(acknowledged) {
        assert_eq!(
            event.revision(),
            *revision,
            "events out of order or missing"
        );
        assert_eq!(
            (&event.kv.key, &event.kind, &event.kv.value),
            (key, kind, value)
        );
    }
}

pub async fn watch_sees_every_acknowledged_write_of_concurrent_writers(store: DynStore) {
    const TASKS: usize = 16;
    const WRITES: usize = 50;
    let start = store.current_revision().await.unwrap();
    let mut watch = store.watch("/c/", start).await.unwrap();
    let watcher = tokio::spawn(async move { next_events(&mut watch, TASKS * WRITES).await });
    let acknowledged = write_concurrently(&store, "/c/", TASKS, WRITES).await;
    // Every revision after the start was used by exactly one acknowledged write.
    assert_eq!(
        acknowledged.keys().copied().collect::<Vec<_>>(),
        (start + 1..=start + (TASKS * WRITES) as Revision).collect::<Vec<_>>()
    );
    let events = watcher.await.unwrap();
    assert_events_match(&events, &acknowledged);
    // Each update's previous version is the write before it on the same key.
    let mut last_by_key: BTreeMap<&str, Revision> = BTreeMap::new();
    for event in &events {
        let prev = event.prev.as_ref().map(|prev| prev.mod_revision);
        assert_eq!(prev, last_by_key.get(event.kv.key.as_str()).copied());
        last_by_key.insert(&event.kv.key, event.revision());
    }
}

pub async fn watch_started_during_writes_hands_off_without_gaps(store: DynStore) {
    const TASKS: usize = 8;
    const WRITES: usize = 60;
    let writers = tokio::spawn({
        let store = store.clone();
        async move { write_concurrently(&store, "/h/", TASKS, WRITES).await }
    });
    // Start watches while the writers run, from the past and from "now", so that the
    // switch from history to live changes happens under load.
    let mut watches = Vec::new();
    for after in [1, 0] {
        let after = if after == 0 {
            store.current_revision().await.unwrap()
        } else {
            after
        };
        watches.push((after, store.watch("/h/", after).await.unwrap()));
        tokio::task::yield_now().await;
    }
    let acknowledged = writers.await.unwrap();
    for (after, mut watch) in watches {
        let expected: BTreeMap<_, _> = acknowledged
            .range(after + 1..)
            .map(|(revision, write)| (*revision, write.clone()))
            .collect();
        let events = next_events(&mut watch, expected.len()).await;
        assert_events_match(&events, &expected);
    }
}

pub async fn slow_watcher_loses_nothing(store: DynStore) {
    const TASKS: usize = 32;
    const WRITES: usize = 100;
    let mut watch = store.watch("/slow/", 1).await.unwrap();
    // The watcher reads nothing until every write is done, so a backend that buffers changes
    // for it must cope with falling behind.
    let acknowledged = write_concurrently(&store, "/slow/", TASKS, WRITES).await;
    let events = next_events(&mut watch, acknowledged.len()).await;
    assert_events_match(&events, &acknowledged);
    store.create("/slow/after", bytes("x")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.kv.key, "/slow/after");
}

pub async fn watch_replays_a_long_history(store: DynStore) {
    // Longer than a backend would read or send in one piece, with values big enough that
    // the history is megabytes.
    const TASKS: usize = 10;
    const WRITES: usize = 250;
    let value = "v".repeat(4096);
    let mut handles = Vec::new();
    for task in 0..TASKS {
        let store = store.clone();
        let value = value.clone();
        handles.push(tokio::spawn(async move {
            for write in 0..WRITES {
                let key = format!("/long/{task}/{write:04}");
                store.create(&key, bytes(&value)).await.unwrap();
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    let current = store.current_revision().await.unwrap();
    let mut watch = store.watch("/long/", 1).await.unwrap();
    let events = next_events(&mut watch, TASKS * WRITES).await;
    let revisions: Vec<Revision> = events.iter().map(Event::revision).collect();
    assert_eq!(revisions, (2..=current).collect::<Vec<_>>());
    assert!(events.iter().all(|event| event.kv.value.len() == 4096));
    let revision = store.create("/long/live", bytes("x")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.revision(), revision);
}
