//! The checks of the conformance suite, one `pub async fn` per promise, each taking a fresh
//! store. `conformance_tests!` in main.rs turns them into tests for every backend.
//!
//! Stores are fresh, so checks can name exact revisions: the first write is revision 2.

pub mod compaction;
pub mod reads;
pub mod revisions;
pub mod watch;
pub mod writes;

use std::time::Duration;

use bytes::Bytes;
use corral_store::{Event, EventKind, KeyValue, Result, Revision, WatchStream};
use futures::StreamExt;

/// How long a check waits for something that should happen promptly before it declares the
/// backend stuck. Generous, because CI machines are slow and shared; a passing run never waits
/// for it.
pub const DEADLINE: Duration = Duration::from_secs(60);

pub fn bytes(value: &str) -> Bytes {
    Bytes::copy_from_slice(value.as_bytes())
}

pub fn kv(key: &str, value: &str, create_revision: Revision, mod_revision: Revision) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: bytes(value),
        create_revision,
        mod_revision,
    }
}

pub fn put(kv: KeyValue, prev: Option<KeyValue>) -> Event {
    Event {
        kind: EventKind::Put,
        kv,
        prev,
    }
}

/// The event of deleting `prev` at `revision`.
pub fn delete(prev: KeyValue, revision: Revision) -> Event {
    Event {
        kind: EventKind::Delete,
        kv: KeyValue {
            mod_revision: revision,
            ..prev.clone()
        },
        prev: Some(prev),
    }
}

/// The next item of a watch; panics if the stream ends or nothing comes before the deadline.
pub async fn next_item(stream: &mut WatchStream) -> Result<Event> {
    match tokio::time::timeout(DEADLINE, stream.next()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("the watch stream ended"),
        Err(_) => panic!("no watch event within {DEADLINE:?}"),
    }
}

pub async fn next_event(stream: &mut WatchStream) -> Event {
    next_item(stream).await.expect("watch stream failed")
}

pub async fn next_events(stream: &mut WatchStream, count: usize) -> Vec<Event> {
    let mut events = Vec::with_capacity(count);
    while events.len() < count {
        events.push(next_event(stream).await);
    }
    events
}

/// Asserts that `result` is an error matching `pattern` (with an optional guard).
#[macro_export]
macro_rules! assert_err {
    ($result:expr, $pattern:pat $(if $guard:expr)? $(,)?) => {
        match $result {
            Err($pattern) $(if $guard)? => {}
            other => panic!(
                "expected Err({}), got {other:?}",
                stringify!($pattern $(if $guard)?)
            ),
        }
    };
}
