use std::sync::Arc;

use bytes::Bytes;
use corral_store::{Event, EventKind, KeyValue};
use serde_json::json;

use super::{Cacher, HISTORY_EVENT_OVERHEAD, Previous, WatchCacheConfig, decode_event};

const KEY_PREFIX: &str = "/registry/core/configmaps/default/";

/// The store's event for a write of `o<revision>` at `revision`, its stored value padded to
/// `padding` bytes of data; an update of the same name has the previous value.
fn stored(revision: i64, name: &str, padding: usize, prev: Option<&KeyValue>) -> Event {
    let object = json!({
        "metadata": {"name": name, "namespace": "default"},
        "data": {"padding": "x".repeat(padding)},
    });
    let kv = KeyValue {
        key: format!("{KEY_PREFIX}{name}"),
        value: Bytes::from(serde_json::to_vec(&object).unwrap()),
        create_revision: prev.map_or(revision, |prev| prev.create_revision),
        mod_revision: revision,
    };
    Event {
        kind: EventKind::Put,
        kv,
        prev: prev.cloned(),
    }
}

/// Publishes the event as the store feed does: decoded once, kept in its stored form.
fn publish(cacher: &Cacher, event: Event) {
    let cached = decode_event(&event).unwrap();
    cacher.publish(cached, event);
}

fn publish_create(cacher: &Cacher, revision: i64) {
    publish(cacher, stored(revision, &format!("o{revision}"), 0, None));
}

fn cacher(history_events: usize, watcher_buffer: usize) -> Arc<Cacher> {
    Cacher::new(
        WatchCacheConfig {
            history_events,
            history_bytes: usize::MAX,
            watcher_buffer,
            current_bytes: usize::MAX,
        },
        10,
    )
}

#[test]
fn a_watcher_gets_history_after_its_revision_then_live_events() {
    let cacher = cacher(100, 100);
    for revision in 11..=15 {
        publish_create(&cacher, revision);
    }
    let mut subscription = cacher.subscribe(12).unwrap();
    let backlog: Vec<i64> = subscription.backlog.iter().map(|e| e.revision).collect();
    assert_eq!(backlog, [13, 14, 15]);
    assert_eq!(subscription.latest, 15);
    publish_create(&cacher, 16);
    assert_eq!(subscription.receiver.try_recv().unwrap().revision, 16);
}

#[test]
fn the_backlog_is_decoded_as_the_live_events_were() {
    let cacher = cacher(100, 100);
    let mut live = cacher.subscribe(10).unwrap();
    let created = stored(11, "a", 3, None);
    publish(&cacher, created.clone());
    publish(&cacher, stored(12, "a", 5, Some(&created.kv)));
    let resumed = cacher.subscribe(10).unwrap();
    for replayed in &resumed.backlog {
        let sent = live.receiver.try_recv().unwrap();
        assert_eq!(replayed.revision, sent.revision);
        assert_eq!(replayed.kind, sent.kind);
        assert_eq!(replayed.object, sent.object);
        assert_eq!(replayed.object_json, sent.object_json);
        assert_eq!(
            replayed.prev.as_ref().map(Previous::get),
            sent.prev.as_ref().map(Previous::get)
        );
    }
    let update = &resumed.backlog[1];
    assert_eq!(update.object["metadata"]["resourceVersion"], "12");
    let prev = update
        .prev
        .as_ref()
        .and_then(Previous::get)
        .expect("an update has its previous state");
    assert_eq!(prev["data"]["padding"], "xxx");
    // Its own revision; a watcher that sends it stamps the event's.
    assert_eq!(prev["metadata"]["resourceVersion"], "11");
}

#[test]
fn a_revision_older_than_the_history_is_too_old() {
    let cacher = cacher(3, 100);
    for revision in 11..=20 {
        publish_create(&cacher, revision);
    }
    // History holds 18..=20, so watches can resume after 17 or later.
    assert!(cacher.subscribe(17).is_ok());
    let too_old = cacher.subscribe(16).err().expect("16 is too old");
    assert_eq!((too_old.requested, too_old.oldest), (16, 17));
}

#[test]
fn the_history_is_bounded_by_bytes() {
    // Each event: its key ("/registry/core/configmaps/default/oNN", 37 bytes), its value
    // (1,000 bytes of padding and the JSON around them) and the fixed overhead.
    let one = {
        let event = stored(11, "o11", 1_000, None);
        HISTORY_EVENT_OVERHEAD + event.kv.key.len() + event.kv.value.len()
    };
    let cacher = Cacher::new(
        WatchCacheConfig {
            history_events: 10_000,
            history_bytes: 3 * one + one / 2,
            watcher_buffer: 100,
            current_bytes: usize::MAX,
        },
        10,
    );
    for revision in 11..=20 {
        publish(
            &cacher,
            stored(revision, &format!("o{revision}"), 1_000, None),
        );
    }
    // Three events fit: 18..=20.
    let resumed = cacher.subscribe(17).unwrap();
    let backlog: Vec<i64> = resumed.backlog.iter().map(|e| e.revision).collect();
    assert_eq!(backlog, [18, 19, 20]);
    let too_old = cacher.subscribe(16).err().expect("17 was evicted");
    assert_eq!((too_old.requested, too_old.oldest), (16, 17));
    assert_eq!(cacher.state.lock().unwrap().history_bytes, 3 * one);
}

#[test]
fn an_update_counts_its_previous_state_too() {
    let created = stored(11, "a", 1_000, None);
    let one = HISTORY_EVENT_OVERHEAD + created.kv.key.len() + created.kv.value.len();
    let cacher = Cacher::new(
        WatchCacheConfig {
            history_events: 10_000,
            history_bytes: 2 * one,
            watcher_buffer: 100,
            current_bytes: usize::MAX,
        },
        10,
    );
    publish(&cacher, created.clone());
    // The update weighs its object and its previous state: with the create, over the bound.
    publish(&cacher, stored(12, "a", 1_000, Some(&created.kv)));
    assert!(cacher.subscribe(10).is_err(), "the create was evicted");
    let resumed = cacher.subscribe(11).unwrap();
    assert_eq!(resumed.backlog.len(), 1);
    assert_eq!(resumed.backlog[0].revision, 12);
}

#[test]
fn an_event_larger_than_the_whole_history_is_not_kept() {
    let cacher = Cacher::new(
        WatchCacheConfig {
            history_events: 10_000,
            history_bytes: 100,
            watcher_buffer: 100,
            current_bytes: usize::MAX,
        },
        10,
    );
    let mut live = cacher.subscribe(10).unwrap();
    publish(&cacher, stored(11, "big", 1_000, None));
    // Live watchers still get it; only resuming before it is too old.
    assert_eq!(live.receiver.try_recv().unwrap().revision, 11);
    assert!(cacher.subscribe(10).is_err());
    let resumed = cacher.subscribe(11).unwrap();
    assert!(resumed.backlog.is_empty());
    assert_eq!(resumed.latest, 11);
}

#[test]
fn a_slow_watcher_is_dropped_and_others_keep_going() {
    let cacher = cacher(100, 2);
    let mut slow = cacher.subscribe(10).unwrap();
    let mut fast = cacher.subscribe(10).unwrap();
    for revision in 11..=14 {
        publish_create(&cacher, revision);
        assert_eq!(fast.receiver.try_recv().unwrap().revision, revision);
    }
    // The slow one got what fit in its buffer, then its channel was closed.
    assert_eq!(slow.receiver.try_recv().unwrap().revision, 11);
    assert_eq!(slow.receiver.try_recv().unwrap().revision, 12);
    assert!(matches!(
        slow.receiver.try_recv(),
        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
    ));
}

#[test]
fn expiring_ends_watches_and_moves_the_oldest_revision() {
    let cacher = cacher(100, 100);
    for revision in 11..=15 {
        publish_create(&cacher, revision);
    }
    let mut watcher = cacher.subscribe(15).unwrap();
    cacher.expire(20);
    assert!(matches!(
        watcher.receiver.try_recv(),
        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
    ));
    assert!(cacher.subscribe(19).is_err());
    assert!(cacher.subscribe(20).is_ok());
    assert_eq!(cacher.state.lock().unwrap().history_bytes, 0);
}

#[test]
fn the_current_state_follows_puts_and_deletes() {
    let cacher = cacher(100, 100);
    let key = format!("{KEY_PREFIX}a");
    assert!(cacher.current(&key).is_none(), "not seen yet");
    let created = stored(11, "a", 3, None);
    publish(&cacher, created.clone());
    let updated = stored(12, "a", 5, Some(&created.kv));
    publish(&cacher, updated.clone());
    let current = cacher.current(&key).expect("seen");
    assert_eq!(current.mod_revision, 12);
    assert_eq!(current.value, updated.kv.value);
    assert_eq!(current.object["data"]["padding"], "xxxxx");
    assert_eq!(current.object["metadata"]["resourceVersion"], "12");
    // The decoded object is the one the watchers got, not a copy.
    let mut live = cacher.subscribe(12).unwrap();
    publish_create(&cacher, 13);
    let event = live.receiver.try_recv().unwrap();
    let o13 = cacher.current(&format!("{KEY_PREFIX}o13")).unwrap();
    assert!(Arc::ptr_eq(&event.object, &o13.object));

    publish(
        &cacher,
        Event {
            kind: EventKind::Delete,
            kv: KeyValue {
                mod_revision: 14,
                ..updated.kv.clone()
            },
            prev: Some(updated.kv.clone()),
        },
    );
    assert!(cacher.current(&key).is_none(), "deleted");
    assert!(cacher.current(&format!("{KEY_PREFIX}o13")).is_some());
}

#[test]
fn a_compaction_keeps_the_current_state_and_lost_events_forget_it() {
    let cacher = cacher(100, 100);
    publish_create(&cacher, 11);
    let key = format!("{KEY_PREFIX}o11");
    cacher.expire(11);
    assert_eq!(cacher.current(&key).unwrap().mod_revision, 11);
    // Events missed while the store watch was behind a compaction may have changed or
    // deleted any key.
    cacher.lost_events(20);
    assert!(cacher.current(&key).is_none());
}

#[test]
fn a_recorded_write_is_served_until_the_feed_delivers_its_key() {
    let cacher = cacher(100, 100);
    let key = format!("{KEY_PREFIX}a");
    let recorded = |revision: i64| {
        let event = stored(revision, "a", 1, None);
        super::Current {
            mod_revision: revision,
            value: event.kv.value.clone(),
            object: decode_event(&event).unwrap().object,
            shaped: None,
        }
    };
    let first = recorded(11);
    cacher.record_write(&key, first.clone(), None);
    assert_eq!(cacher.current(&key).unwrap().mod_revision, 11);
    // The feed takes the recorded object instead of decoding the event.
    assert!(Arc::ptr_eq(
        &cacher.written(&key, 11).unwrap().object,
        &first.object
    ));
    assert!(cacher.written(&key, 12).is_none());
    let created = stored(11, "a", 1, None);
    publish(&cacher, created.clone());
    assert!(cacher.written(&key, 11).is_none(), "delivered");
    // A write the feed has delivered already is not recorded again.
    cacher.record_write(&key, recorded(11), None);
    assert!(cacher.written(&key, 11).is_none());
    // A newer write wins over the feed's older copy until the feed delivers it.
    cacher.record_write(&key, recorded(13), None);
    let updated = stored(12, "a", 2, Some(&created.kv));
    publish(&cacher, updated.clone());
    assert_eq!(cacher.current(&key).unwrap().mod_revision, 13);
    publish(&cacher, stored(13, "a", 1, Some(&updated.kv)));
    assert_eq!(cacher.current(&key).unwrap().mod_revision, 13);
    assert!(cacher.written(&key, 13).is_none());
}

/// A feed that lags behind a key's writer still finds every recorded write of the key it has
/// not delivered, not only the newest.
#[test]
fn a_lagging_feed_finds_each_recorded_write_of_a_key() {
    let cacher = cacher(100, 100);
    let key = format!("{KEY_PREFIX}a");
    let created = stored(11, "a", 1, None);
    let updated = stored(12, "a", 2, Some(&created.kv));
    let mut recorded = Vec::new();
    for event in [&created, &updated] {
        let current = super::Current {
            mod_revision: event.revision(),
            value: event.kv.value.clone(),
            object: decode_event(event).unwrap().object,
            shaped: None,
        };
        cacher.record_write(&key, current.clone(), None);
        recorded.push(current);
    }
    assert_eq!(cacher.current(&key).unwrap().mod_revision, 12, "the newest");
    for current in &recorded {
        let found = cacher.written(&key, current.mod_revision).unwrap();
        assert!(Arc::ptr_eq(&found.object, &current.object));
    }
    publish(&cacher, created);
    assert!(cacher.written(&key, 11).is_none(), "delivered");
    assert!(cacher.written(&key, 12).is_some(), "not yet delivered");
    publish(&cacher, updated);
    assert!(cacher.written(&key, 12).is_none());
    assert_eq!(cacher.current(&key).unwrap().mod_revision, 12);

    // At most `RECORDS_PER_KEY` are kept: the oldest go first.
    let records = super::RECORDS_PER_KEY as i64;
    for revision in 13..13 + records + 2 {
        let event = stored(revision, "a", 1, None);
        let current = super::Current {
            mod_revision: revision,
            value: event.kv.value.clone(),
            object: decode_event(&event).unwrap().object,
            shaped: None,
        };
        cacher.record_write(&key, current, None);
    }
    assert!(cacher.written(&key, 14).is_none(), "forgotten");
    assert!(cacher.written(&key, 15).is_some());
    assert!(cacher.written(&key, 14 + records).is_some());
}

#[test]
fn the_current_copies_are_bounded_by_bytes_least_recently_written_first() {
    let one = {
        let event = stored(11, "o11", 100, None);
        event.kv.key.len() + event.kv.value.len()
    };
    let cacher = Cacher::new(
        WatchCacheConfig {
            history_events: 100,
            history_bytes: usize::MAX,
            watcher_buffer: 100,
            current_bytes: 3 * one,
        },
        10,
    );
    let key = |name: &str| format!("{KEY_PREFIX}{name}");
    for revision in 11..=13 {
        publish(
            &cacher,
            stored(revision, &format!("o{revision}"), 100, None),
        );
    }
    // o11 is written again: o12 is now the least recently written.
    let rewritten = stored(11, "o11", 100, None);
    publish(&cacher, stored(14, "o11", 100, Some(&rewritten.kv)));
    publish(&cacher, stored(15, "o15", 100, None));
    assert!(cacher.current(&key("o12")).is_none(), "forgotten first");
    for (name, revision) in [("o11", 14), ("o13", 13), ("o15", 15)] {
        assert_eq!(cacher.current(&key(name)).unwrap().mod_revision, revision);
    }
    assert_eq!(cacher.objects.lock().unwrap().bytes, 3 * one);
}

/// The feed waits for a write in flight to be recorded (or to end) before decoding its event
/// itself, and not forever.
#[tokio::test]
async fn the_feed_waits_for_a_write_in_flight_to_be_recorded() {
    let cacher = cacher(100, 100);
    let key = format!("{KEY_PREFIX}a");
    let event = stored(11, "a", 1, None);
    let current = super::Current {
        mod_revision: 11,
        value: event.kv.value.clone(),
        object: decode_event(&event).unwrap().object,
        shaped: None,
    };

    // Nothing in flight: no wait.
    cacher.await_record(&key, 11).await;

    // Recorded while the feed waits: the wait ends with the record there.
    let in_flight = cacher.begin_write(&key);
    let waiting = tokio::spawn({
        let (cacher, key) = (cacher.clone(), key.clone());
        async move {
            cacher.await_record(&key, 11).await;
            cacher.written(&key, 11).is_some()
        }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "waits while the write is in flight");
    cacher.record_write(&key, current, None);
    drop(in_flight);
    assert!(waiting.await.unwrap(), "the feed takes the record");

    // A write that fails ends the wait without a record.
    let failed = cacher.begin_write(&key);
    let waiting = tokio::spawn({
        let (cacher, key) = (cacher.clone(), key.clone());
        async move { cacher.await_record(&key, 12).await }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());
    drop(failed);
    waiting.await.unwrap();

    // A write that never ends does not hold the feed back for good (`IN_FLIGHT_WAIT`).
    let _stuck = cacher.begin_write(&key);
    cacher.await_record(&key, 13).await;
    assert!(cacher.written(&key, 13).is_none());
}

#[test]
fn a_previous_state_matches_labels_from_its_stored_bytes_or_its_decoded_copy() {
    let selector = crate::selector::LabelSelector::parse("app=x").unwrap();
    let labelled = |app: &str| json!({"metadata": {"name": "a", "namespace": "default", "labels": {"app": app}}});
    let kv = |object: &serde_json::Value| KeyValue {
        key: format!("{KEY_PREFIX}a"),
        value: Bytes::from(serde_json::to_vec(object).unwrap()),
        create_revision: 1,
        mod_revision: 1,
    };
    for (app, expected) in [("x", true), ("y", false)] {
        let object = labelled(app);
        let stored = Previous::stored(kv(&object));
        assert_eq!(stored.labels_match(&selector), Some(expected), "{app}");
        // Answered from the labels alone: nothing was decoded.
        assert!(stored.decoded.get().is_none());
        let decoded = Previous::decoded(Arc::new(object));
        assert_eq!(decoded.labels_match(&selector), Some(expected), "{app}");
    }
    let unlabelled = Previous::stored(kv(&json!({"metadata": {"name": "a"}})));
    assert_eq!(unlabelled.labels_match(&selector), Some(false));
    let garbage = Previous::stored(KeyValue {
        value: Bytes::from_static(b"{\"metadata\": 3"),
        ..kv(&labelled("x"))
    });
    assert_eq!(garbage.labels_match(&selector), None);
}

#[test]
fn a_delete_takes_its_object_from_the_previous_copy_as_decoding_would() {
    let created = stored(11, "a", 3, None);
    let delete = Event {
        kind: EventKind::Delete,
        kv: KeyValue {
            mod_revision: 12,
            ..created.kv.clone()
        },
        prev: Some(created.kv.clone()),
    };
    let decoded = decode_event(&delete).unwrap();
    let previous = decode_event(&created).unwrap().object;
    let copied = super::decode_event_after(&delete, Some(previous), None).unwrap();
    assert_eq!(copied.object, decoded.object);
    assert_eq!(copied.object["metadata"]["resourceVersion"], "12");
    assert_eq!(copied.object_json, decoded.object_json);
}
