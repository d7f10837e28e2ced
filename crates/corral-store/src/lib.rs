//! A revisioned key-value store with etcd semantics.
//!
//! The store knows nothing about Kubernetes: it holds keys (strings), values (bytes) and
//! revisions. The API server maps objects onto it; everything Kubernetes-specific lives there.
//!
//! # Revisions
//!
//! * The store has **one global revision**, a positive integer that starts at 1 for an empty
//!   store (etcd starts there too) and grows by exactly one for every successful create, update
//!   or delete, whatever the key. A failed or refused write does not change it.
//! * Every key records the revision of the write that created it (`create_revision`) and of
//!   the last write that changed it (`mod_revision`). After a delete and a re-create the key has
//!   a new `create_revision`.
//! * Reads can be served **at a past revision** (`revision: Some(r)`): the answer is what the
//!   store held right after revision `r` was written. `None` means the current revision. A
//!   revision above the current one is [`Error::FutureRevision`].
//! * Every read answer says the revision it was served at, which for a current read is the
//!   store's current revision (not the largest `mod_revision` among the returned keys).
//!
//! # Writes
//!
//! * [`Store::create`] succeeds only if the key is absent ([`Error::AlreadyExists`]).
//! * [`Store::update`] and [`Store::delete`] succeed only if the key exists and its
//!   `mod_revision` equals the expected one ([`Error::NotFound`], [`Error::Conflict`]). This is
//!   the optimistic-concurrency primitive the API server's `resourceVersion` preconditions map to.
//! * A write that returned `Ok` is durable according to the backend's guarantee: SQLite has
//!   fsynced its WAL (see `sqlite`'s "Durability") and etcd has committed it to a quorum. A
//!   read or watch never shows a write before that.
//!
//! # Watch
//!
//! [`Store::watch`] streams every change to keys under a prefix whose revision is **strictly
//! greater** than the given one, in revision order, without gaps or duplicates: if two changes
//! under the prefix have revisions `a < b`, `a` is delivered before `b`, and nothing under the
//! prefix with a revision between them is skipped. A watch can start in the past (it first
//! replays the history it still has) or at the current revision. A stream that fails yields one
//! `Err` and ends; the caller resumes from the last revision it saw.
//!
//! # Compaction
//!
//! [`Store::compact`] at revision `c` discards the history before `c`: reads at a revision
//! below `c` and watches that start below `c` fail with [`Error::Compacted`]. Reads at `c` or
//! later, and the current state of every key, are untouched. Compacting at or below an earlier
//! compaction is a no-op.
//!
//! # Map of the crate
//!
//! A revisioned key-value store with etcd semantics: `Store` (get, range at a revision with
//! limit/continue, create-if-absent, update and delete if the modification revision matches, watch
//! from a revision, compaction). Backends: `memory` (the reference, for tests), `sqlite` (the
//! embedded default: one file, WAL, one writer thread that group-commits concurrent writes with
//! `synchronous=NORMAL`, and a sync thread (`sqlite/sync.rs`) that fdatasyncs the WAL while the
//! next batch commits and only then acknowledges) and `etcd` (etcd's own revisions), always built:
//! it speaks etcd's gRPC API through code generated from `proto/etcd.proto` (a subset of etcd's API
//! with etcd's names and field numbers) and checked in as `etcd/etcdserverpb.rs`, so no `protoc` is
//! needed (`tests/it/generated_code.rs` regenerates it with protox and fails on drift).
//! `etcd/members.rs` is the cluster as the store reaches it: round-robin over members that answer a
//! linearizable probe every 500 ms, failover of calls on member errors, conditional writes repeated
//! safely; a watch resumes on another member from its last revision. `testing` (feature `testing`)
//! gives each test a fresh store of any backend, including a fresh etcd process, and `EtcdCluster`
//! (`testing/etcd_cluster.rs`): members a test can kill, restart, freeze (`SIGSTOP`, a cut link)
//! and thaw. `tests/it` is the conformance suite: one macro runs every test against every backend.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;

pub mod etcd;
pub mod memory;
pub mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;

/// A store revision. Revisions are positive; 0 is never a revision of a write.
pub type Revision = i64;

/// One key at one revision.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// Revision of the write that created the key (since its last delete).
    pub create_revision: Revision,
    /// Revision of the last write that changed the key.
    pub mod_revision: Revision,
}

impl fmt::Debug for KeyValue {
    // Values can hold secrets: print their size, never their bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyValue")
            .field("key", &self.key)
            .field("value_len", &self.value.len())
            .field("create_revision", &self.create_revision)
            .field("mod_revision", &self.mod_revision)
            .finish()
    }
}

/// What a change did to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created or updated.
    Put,
    /// The key was deleted.
    Delete,
}

/// One change, as delivered by [`Store::watch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    /// For a put, the key as written. For a delete, the key's last value, with `mod_revision`
    /// set to the revision of the delete (and `create_revision` kept from the deleted key).
    pub kv: KeyValue,
    /// The key before the change; `None` for a create.
    pub prev: Option<KeyValue>,
}

impl Event {
    /// The revision at which this change happened.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
}

/// A read over every key that starts with `prefix`.
#[derive(Clone, Debug, Default)]
pub struct RangeRequest {
    pub prefix: String,
    /// Start at this key (inclusive) instead of at `prefix`; used to continue a paged read.
    /// Keys before it are skipped. It must start with `prefix`.
    pub start: Option<String>,
    /// At most this many keys; 0 means no limit.
    pub limit: usize,
    /// Read at this revision; `None` is the current revision.
    pub revision: Option<Revision>,
}

/// The answer to a [`RangeRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeResponse {
    /// Keys in ascending byte order of the key.
    pub kvs: Vec<KeyValue>,
    /// The revision the read was served at: pass it back to read the next page consistently.
    pub revision: Revision,
    /// Whether keys beyond `kvs` remain (only possible with a limit).
    pub more: bool,
}

/// A stream of changes; see [`Store::watch`].
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<Event>> + Send>>;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Failures of store operations. Variants named after what went wrong, so that callers can
/// map them onto API errors without parsing messages.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("key {key:?} already exists")]
    AlreadyExists { key: String },
    #[error("key {key:?} not found")]
    NotFound { key: String },
    /// The key's `mod_revision` is not the expected one. `current` is the key as it is now, so
    /// that the caller can retry without another read.
    #[error("key {key:?} was modified: expected revision {expected}")]
    Conflict {
        key: String,
        expected: Revision,
        current: Box<KeyValue>,
    },
    #[error("revision {requested} has been compacted (compacted revision is {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    #[error("revision {requested} is in the future (current revision is {current})")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    #[error("value of {size} bytes is larger than the limit of {limit} bytes")]
    ValueTooLarge { size: usize, limit: usize },
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("the store is closed")]
    Closed,
    /// The backend itself failed (I/O, SQLite, the etcd connection).
    #[error("store backend failed: {context}")]
    Backend {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    pub fn backend(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Backend {
            context: context.into(),
            source: source.into(),
        }
    }
}

/// The store contract. See the module docs for the revision, watch and compaction semantics
/// every backend must honour; `tests/it` checks them against every backend.
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// The current revision.
    async fn current_revision(&self) -> Result<Revision>;

    /// One key, at a revision or now. `Ok(None)` if it did not exist at that revision.
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>>;

    /// Keys under a prefix, in key order, at a revision or now.
    async fn range(&self, request: RangeRequest) -> Result<RangeResponse>;

    /// Create `key` if it is absent; returns the revision of the write.
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision>;

    /// Replace `key` if its `mod_revision` is `expected`; returns the revision of the write.
    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision>;

    /// Delete `key` if its `mod_revision` is `expected`; returns the revision of the delete
    /// and the key as it was.
    async fn delete(&self, key: &str, expected: Revision) -> Result<(Revision, KeyValue)>;

    /// Every change under `prefix` with a revision greater than `after`. Fails with
    /// [`Error::Compacted`] (from this call or as the stream's first item) when `after` is
    /// below the compacted revision.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream>;

    /// Discard history before `revision`. See the module docs.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The revision of the last compaction (0 if none).
    async fn compacted_revision(&self) -> Result<Revision>;

    /// Whether the store can serve requests now, without waiting: what kube-apiserver's
    /// `etcd` readiness check reports (`/readyz`), so that a load balancer stops sending to an
    /// API server whose storage is gone. `Err` says why not. Local backends are always ready.
    fn ready(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// A shared handle to any backend.
pub type DynStore = Arc<dyn Store>;
