use std::sync::Arc;

use bytes::Bytes;
use corral_store::EventKind;
use serde_json::json;

use super::{CachedEvent, Cacher, WatchCacheConfig};

fn event(revision: i64) -> CachedEvent {
    let object = json!({"metadata": {"name": format!("o{revision}"), "resourceVersion": revision.to_string()}});
    CachedEvent {
        revision,
        kind: EventKind::Put,
        object_json: Bytes::from(serde_json::to_vec(&object).unwrap()),
        object,
        prev: None,
    }
}

fn cacher(history_events: usize, watcher_buffer: usize) -> Arc<Cacher> {
    Cacher::new(
        WatchCacheConfig {
            history_events,
            watcher_buffer,
        },
        10,
    )
}

#[test]
fn a_watcher_gets_history_after_its_revision_then_live_events() {
    let cacher = cacher(100, 100);
    for revision in 11..=15 {
        cacher.publish(event(revision));
    }
    let mut subscription = cacher.subscribe(12).unwrap();
    let backlog: Vec<i64> = subscription.backlog.iter().map(|e| e.revision).collect();
    assert_eq!(backlog, [13, 14, 15]);
    assert_eq!(subscription.latest, 15);
    cacher.publish(event(16));
    assert_eq!(subscription.receiver.try_recv().unwrap().revision, 16);
}

#[test]
fn a_revision_older_than_the_history_is_too_old() {
    let cacher = cacher(3, 100);
    for revision in 11..=20 {
        cacher.publish(event(revision));
    }
    // History holds 18..=20, so watches can resume after 17 or later.
    assert!(cacher.subscribe(17).is_ok());
    let too_old = cacher.subscribe(16).err().expect("16 is too old");
    assert_eq!((too_old.requested, too_old.oldest), (16, 17));
}

#[test]
fn a_slow_watcher_is_dropped_and_others_keep_going() {
    let cacher = cacher(100, 2);
    let mut slow = cacher.subscribe(10).unwrap();
    let mut fast = cacher.subscribe(10).unwrap();
    for revision in 11..=14 {
        cacher.publish(event(revision));
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
        cacher.publish(event(revision));
    }
    let mut watcher = cacher.subscribe(15).unwrap();
    cacher.expire(20);
    assert!(matches!(
        watcher.receiver.try_recv(),
        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
    ));
    assert!(cacher.subscribe(19).is_err());
    assert!(cacher.subscribe(20).is_ok());
}
