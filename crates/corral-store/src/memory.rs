//! The in-memory backend: the reference implementation of the contract, for unit tests.
//!
//! It keeps every version of every key since the last compaction, and the change log that
//! watches replay. Nothing survives the process.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::{
    Error, Event, EventKind, KeyValue, RangeRequest, RangeResponse, Result, Revision, Store,
    WatchStream,
};

/// Largest value the memory backend accepts, the same as the SQLite backend's.
pub const MAX_VALUE_BYTES: usize = 3 * 1024 * 1024;

#[derive(Default)]
struct State {
    revision: Revision,
    compacted: Revision,
    /// Versions of each key, oldest first; a `None` value is a delete (tombstone).
    keys: BTreeMap<String, Vec<(Revision, Option<KeyValue>)>>,
    /// Every change since the last compaction, in revision order.
    log: Vec<Event>,
}

impl State {
    fn current(&self, key: &str) -> Option<&KeyValue> {
        self.keys
            .get(key)
            .and_then(|versions| versions.last())
            .and_then(|(_, kv)| kv.as_ref())
    }

    fn at(&self, key: &str, revision: Revision) -> Option<&KeyValue> {
        let versions = self.keys.get(key)?;
        versions
            .iter()
            .rev()
            .find(|(rev, _)| *rev <= revision)
            .and_then(|(_, kv)| kv.as_ref())
    }

    fn check_read_revision(&self, revision: Option<Revision>) -> Result<Revision> {
        match revision {
            None => Ok(self.revision),
            Some(r) if r > self.revision => Err(Error::FutureRevision {
                requested: r,
                current: self.revision,
            }),
            Some(r) if r < self.compacted => Err(Error::Compacted {
                requested: r,
                compacted: self.compacted,
            }),
            Some(r) => Ok(r),
        }
    }

    fn record(&mut self, event: Event) {
        let key = event.kv.key.clone();
        let version = match event.kind {
            EventKind::Put => Some(event.kv.clone()),
            EventKind::Delete => None,
        };
        self.keys
            .entry(key)
            .or_default()
            .push((event.revision(), version));
        self.log.push(event);
    }
}

/// See the module docs.
#[derive(Clone)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        MemoryStore {
            state: Arc::new(Mutex::new(State {
                revision: 1,
                ..State::default()
            })),
            changed: Arc::new(Notify::new()),
        }
    }

    fn write(&self, apply: impl FnOnce(&mut State) -> Result<Event>) -> Result<Event> {
        let event = {
            let mut state = self.state.lock().unwrap();
            let event = apply(&mut state)?;
            state.revision = event.revision();
            state.record(event.clone());
            event
        };
        self.changed.notify_waiters();
        Ok(event)
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
impl Store for MemoryStore {
    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.state.lock().unwrap().revision)
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let state = self.state.lock().unwrap();
        let at = state.check_read_revision(revision)?;
        Ok(state.at(key, at).cloned())
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        let state = self.state.lock().unwrap();
        let at = state.check_read_revision(request.revision)?;
        let start = request.start.as_deref().unwrap_or(&request.prefix);
        if !start.starts_with(&request.prefix) {
            return Err(Error::InvalidRequest(format!(
                "start key {start:?} is outside prefix {:?}",
                request.prefix
            )));
        }
        let mut kvs = Vec::new();
        let mut more = false;
        for (key, _) in state.keys.range(start.to_string()..) {
            if !key.starts_with(&request.prefix) {
                break;
            }
            if let Some(kv) = state.at(key, at) {
                if request.limit > 0 && kvs.len() == request.limit {
                    more = true;
                    break;
                }
                kvs.push(kv.clone());
            }
        }
        Ok(RangeResponse {
            kvs,
            revision: at,
            more,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        check_size(&value)?;
        let event = self.write(|state| {
            if state.current(key).is_some() {
                return Err(Error::AlreadyExists {
                    key: key.to_string(),
                });
            }
            let revision = state.revision + 1;
            Ok(Event {
                kind: EventKind::Put,
                kv: KeyValue {
                    key: key.to_string(),
                    value,
                    create_revision: revision,
                    mod_revision: revision,
                },
                prev: None,
            })
        })?;
        Ok(event.revision())
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        check_size(&value)?;
        let event = self.write(|state| {
            let current = state.current(key).ok_or_else(|| Error::NotFound {
                key: key.to_string(),
            })?;
            if current.mod_revision != expected {
                return Err(Error::Conflict {
                    key: key.to_string(),
                    expected,
                    current: Box::new(current.clone()),
                });
            }
            let revision = state.revision + 1;
            Ok(Event {
                kind: EventKind::Put,
                kv: KeyValue {
                    key: key.to_string(),
                    value,
                    create_revision: current.create_revision,
                    mod_revision: revision,
                },
                prev: Some(current.clone()),
            })
        })?;
        Ok(event.revision())
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(Revision, KeyValue)> {
        let event = self.write(|state| {
            let current = state.current(key).ok_or_else(|| Error::NotFound {
                key: key.to_string(),
            })?;
            if current.mod_revision != expected {
                return Err(Error::Conflict {
                    key: key.to_string(),
                    expected,
                    current: Box::new(current.clone()),
                });
            }
            let revision = state.revision + 1;
            Ok(Event {
                kind: EventKind::Delete,
                kv: KeyValue {
                    mod_revision: revision,
                    ..current.clone()
                },
                prev: Some(current.clone()),
            })
        })?;
        let prev = event.prev.clone().expect("a delete has a previous value");
        Ok((event.revision(), prev))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        {
            let state = self.state.lock().unwrap();
            if after < state.compacted {
                return Err(Error::Compacted {
                    requested: after,
                    compacted: state.compacted,
                });
            }
        }
        let store = self.clone();
        let prefix = prefix.to_string();
        let stream = async_stream_events(store, prefix, after);
        Ok(Box::pin(stream))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let mut state = self.state.lock().unwrap();
        if revision > state.revision {
            return Err(Error::FutureRevision {
                requested: revision,
                current: state.revision,
            });
        }
        if revision <= state.compacted {
            return Ok(());
        }
        state.compacted = revision;
        // Keep, for each key, the newest version at or before `revision` (reads at `revision`
        // need it) and everything after; drop keys whose only remaining version is a tombstone.
        state.keys.retain(|_, versions| {
            let keep_from = versions
                .iter()
                .rposition(|(rev, _)| *rev <= revision)
                .unwrap_or(0);
            versions.drain(..keep_from);
            !(versions.len() == 1 && versions[0].1.is_none())
        });
        state.log.retain(|event| event.revision() > revision);
        Ok(())
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.state.lock().unwrap().compacted)
    }
}

/// Replays the log after `after`, then waits for new changes.
fn async_stream_events(
    store: MemoryStore,
    prefix: String,
    after: Revision,
) -> impl futures::Stream<Item = Result<Event>> + Send {
    futures::stream::unfold(
        (store, prefix, after, std::collections::VecDeque::new()),
        |(store, prefix, mut last, mut pending)| async move {
            loop {
                if let Some(event) = pending.pop_front() {
                    return Some((Ok(event), (store, prefix, last, pending)));
                }
                let changed = store.changed.clone();
                let notified = changed.notified();
                {
                    let state = store.state.lock().unwrap();
                    if last < state.compacted {
                        let err = Error::Compacted {
                            requested: last,
                            compacted: state.compacted,
                        };
                        // End the stream after the error by making `last` unreachable.
                        drop(state);
                        return Some((Err(err), (store, prefix, Revision::MAX, pending)));
                    }
                    let start = state.log.partition_point(|e| e.revision() <= last);
                    for event in &state.log[start..] {
                        last = event.revision();
                        if event.kv.key.starts_with(&prefix) {
                            pending.push_back(event.clone());
                        }
                    }
                }
                if pending.is_empty() {
                    if last == Revision::MAX {
                        return None;
                    }
                    notified.await;
                }
            }
        },
    )
}
