//! The etcd backend: the store contract over an etcd v3 cluster (etcd 3.4 or later).
//!
//! Every key lives in etcd under the store's prefix, so that several stores (several Corral
//! installations, or tests) can share one etcd; callers never see the prefix. Revisions are
//! etcd's own, so a fresh etcd starts at revision 1 as the contract wants. Conditional writes
//! are etcd transactions that compare the key's `mod_revision`, and a write that returned `Ok`
//! has been committed to a quorum.
//!
//! # Where etcd and the contract part, and what this backend does about it
//!
//! * **Shared revisions.** etcd has one revision for the whole cluster. When other clients
//!   write to the same etcd (another prefix, another program), the revision grows by more than
//!   one between two of this store's writes. Order, conditional writes, reads at a revision and
//!   watches are unaffected; only "exactly one per write" needs an etcd of one's own.
//! * **The compacted revision.** etcd does not say what its compacted revision is, but it
//!   refuses a read at revision `r` exactly when `r` is below it. The store remembers the
//!   highest compaction it knows of (its own [`Store::compact`] calls, watch cancellations)
//!   and [`Store::compacted_revision`] confirms that with one read; when a compaction happened
//!   elsewhere (another client, etcd's auto-compaction) it finds the new value by bisection
//!   over the revisions, a few dozen small reads at worst. A compaction at revision 1 discards
//!   nothing and cannot be told apart from none: it reads as 0 unless this store made it.
//! * **Where a watch may start.** etcd refuses a watch whose *first* revision is below the
//!   compacted revision; the contract refuses one whose `after` (one less) is below it. The
//!   watch therefore asks etcd to start at `after` itself and drops the events at `after`, so
//!   that etcd's own check, made atomically with the start of the watch, is the contract's.
//!   One corner stays etcd's: a watch that falls far behind (etcd then replays it from disk)
//!   while a compaction lands exactly one revision past what it has delivered can miss a
//!   delete made at the compaction revision, because etcd compacts that tombstone away. Where
//!   etcd cannot send the previous value of a change because it was compacted meanwhile, the
//!   watch fails with [`Error::Compacted`] rather than deliver an event without it.
//! * **Watch lifetime.** Each watch is its own gRPC stream; dropping the [`WatchStream`]
//!   resets it, and etcd removes the watcher. Progress notifications are not asked for.
//! * **Revision 0.** etcd reads revision 0 as "now"; the contract has no revision 0, so a
//!   read at a revision below 1 is an [`Error::InvalidRequest`].
//! * **Value size.** etcd refuses requests larger than its `--max-request-bytes` (1.5 MiB by
//!   default). Values that cannot fit, with their key and the transaction around them, are
//!   refused with [`Error::ValueTooLarge`] before anything is sent; the limit therefore
//!   depends slightly on the key's length (see [`EtcdStore::max_value_bytes`]).
//! * **Key encoding.** Keys are UTF-8 strings in the contract and bytes in etcd. A key under
//!   the prefix that is not UTF-8 (written by another program) makes a read fail with
//!   [`Error::Backend`] rather than be returned mangled.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType, GetOptions, GetResponse,
    KvClient, Txn, TxnOp, TxnOpResponse, TxnResponse, WatchClient, WatchOptions, WatchResponse,
};

use crate::{
    Error, Event, EventKind, KeyValue, RangeRequest, RangeResponse, Result, Revision, Store,
    WatchStream,
};

#[cfg(test)]
mod tests;

/// etcd's default `--max-request-bytes`.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1_572_864;

/// Room kept in a write request for everything but the value and the keys: the transaction's
/// framing, its compare, and the raft request etcd wraps it in (a few dozen bytes in practice).
const REQUEST_OVERHEAD_BYTES: usize = 1024;

/// How long [`EtcdStore::connect`] waits for a connection and a first answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest response the client accepts. tonic's default (4 MiB) would fail a list of a few
/// large objects; etcd itself sends up to 2 GiB, and so does kube-apiserver's client.
const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// See the module docs.
#[derive(Clone)]
pub struct EtcdStore {
    inner: Arc<Inner>,
    max_request_bytes: usize,
}

struct Inner {
    kv: KvClient,
    watch: WatchClient,
    /// The store's prefix as etcd sees it.
    prefix: Vec<u8>,
    /// The highest compacted revision known to be in force: a lower bound of etcd's, which
    /// only grows.
    compacted: AtomicI64,
}

impl EtcdStore {
    /// Connects to an etcd cluster and checks that it answers. Every key is stored under
    /// `prefix` (which may be empty, for the whole key space).
    pub async fn connect(endpoints: &[String], prefix: &str) -> Result<EtcdStore> {
        // Keep-alive pings make a watch on an etcd that vanished without closing the
        // connection (a partition, a frozen machine) fail instead of waiting forever.
        let options = ConnectOptions::new()
            .with_connect_timeout(CONNECT_TIMEOUT)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(20));
        let client = Client::connect(endpoints, Some(options))
            .await
            .map_err(|e| Error::backend(format!("connecting to etcd at {endpoints:?}"), e))?;
        let store = EtcdStore {
            inner: Arc::new(Inner {
                kv: client
                    .kv_client()
                    .max_decoding_message_size(MAX_RESPONSE_BYTES),
                watch: client
                    .watch_client()
                    .max_decoding_message_size(MAX_RESPONSE_BYTES),
                prefix: prefix.as_bytes().to_vec(),
                compacted: AtomicI64::new(0),
            }),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        };
        // The client connects lazily and would wait for an unreachable etcd on every request:
        // fail here, where the caller can tell what is wrong.
        match tokio::time::timeout(CONNECT_TIMEOUT, store.current_revision()).await {
            Ok(Ok(_)) => Ok(store),
            Ok(Err(Error::Backend { source, .. })) => Err(Error::Backend {
                context: format!("connecting to etcd at {endpoints:?}"),
                source,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::backend(
                format!("connecting to etcd at {endpoints:?}"),
                format!("no answer within {CONNECT_TIMEOUT:?}"),
            )),
        }
    }

    /// Sets the `--max-request-bytes` of the etcd cluster, when it is not etcd's default, so
    /// that values are checked against the right limit.
    pub fn with_max_request_bytes(mut self, max_request_bytes: usize) -> Self {
        self.max_request_bytes = max_request_bytes;
        self
    }

    /// The prefix every key is stored under.
    pub fn prefix(&self) -> &str {
        // Built from a `&str` in `connect`.
        std::str::from_utf8(&self.inner.prefix).expect("the prefix is UTF-8")
    }

    /// The largest value a write of `key` may carry: etcd's request limit less the key (which
    /// a conditional write names three times) and the transaction's framing.
    pub fn max_value_bytes(&self, key: &str) -> usize {
        let key_bytes = self.inner.prefix.len() + key.len();
        self.max_request_bytes
            .saturating_sub(REQUEST_OVERHEAD_BYTES + 3 * key_bytes)
    }

    fn check_size(&self, key: &str, value: &Bytes) -> Result<()> {
        let limit = self.max_value_bytes(key);
        if value.len() > limit {
            return Err(Error::ValueTooLarge {
                size: value.len(),
                limit,
            });
        }
        Ok(())
    }

    /// Maps a failed write. etcd's own size check is the backstop for a store told of a larger
    /// limit than etcd's ([`EtcdStore::with_max_request_bytes`]); the limit the error names is
    /// then the store's, the only one known.
    fn write_error(&self, key: &str, value_len: usize, error: etcd_client::Error) -> Error {
        match refusal(&error) {
            Some(Refusal::RequestTooLarge) => Error::ValueTooLarge {
                size: value_len,
                limit: self.max_value_bytes(key),
            },
            _ => Error::backend(format!("writing key {key:?} to etcd"), error),
        }
    }
}

impl Inner {
    fn kv(&self) -> KvClient {
        self.kv.clone()
    }

    fn full_key(&self, key: &str) -> Vec<u8> {
        let mut full = Vec::with_capacity(self.prefix.len() + key.len());
        full.extend_from_slice(&self.prefix);
        full.extend_from_slice(key.as_bytes());
        full
    }

    fn user_key(&self, full: Vec<u8>) -> Result<String> {
        let Some(key) = full.strip_prefix(self.prefix.as_slice()) else {
            return Err(Error::backend(
                "reading from etcd",
                format!(
                    "etcd returned key {:?} outside the store's prefix",
                    String::from_utf8_lossy(&full)
                ),
            ));
        };
        String::from_utf8(key.to_vec()).map_err(|e| {
            Error::backend(
                "reading from etcd",
                format!(
                    "key {:?} under the store's prefix is not UTF-8: {e}",
                    String::from_utf8_lossy(&full)
                ),
            )
        })
    }

    fn key_value(&self, kv: etcd_client::KeyValue) -> Result<KeyValue> {
        let create_revision = kv.create_revision();
        let mod_revision = kv.mod_revision();
        let (key, value) = kv.into_key_value();
        Ok(KeyValue {
            key: self.user_key(key)?,
            value: Bytes::from(value),
            create_revision,
            mod_revision,
        })
    }

    /// A read, with etcd's refusals mapped onto the contract's errors.
    async fn read(
        &self,
        key: Vec<u8>,
        options: GetOptions,
        revision: Option<Revision>,
    ) -> Result<GetResponse> {
        let options = match revision {
            // etcd reads revision 0 (and below) as "now"; the contract has no such revision.
            Some(r) if r < 1 => {
                return Err(Error::InvalidRequest(format!(
                    "revision {r} is not a revision (revisions start at 1)"
                )));
            }
            Some(r) => options.with_revision(r),
            None => options,
        };
        match self.kv().get(key, Some(options)).await {
            Ok(response) => Ok(response),
            Err(error) => Err(self.read_error(error, revision).await),
        }
    }

    async fn read_error(&self, error: etcd_client::Error, requested: Option<Revision>) -> Error {
        match (refusal(&error), requested) {
            (Some(Refusal::Compacted), Some(requested)) => match self.compacted_revision().await {
                Ok(compacted) => Error::Compacted {
                    requested,
                    compacted,
                },
                Err(e) => e,
            },
            // `current` is read after the refusal, so writes made meanwhile may have brought
            // it up to `requested`: then a retry succeeds.
            (Some(Refusal::FutureRevision), Some(requested)) => {
                match self.current_revision().await {
                    Ok(current) => Error::FutureRevision { requested, current },
                    Err(e) => e,
                }
            }
            _ => Error::backend("reading from etcd", error),
        }
    }

    /// The single key read by the revision probes, which only want the revision a read is
    /// served at: the prefix itself (or `\0`, as etcd rejects an empty key).
    fn probe_key(&self) -> Vec<u8> {
        nonempty_key(self.prefix.clone())
    }

    async fn current_revision(&self) -> Result<Revision> {
        let response = self
            .kv()
            .get(self.probe_key(), Some(GetOptions::new().with_count_only()))
            .await
            .map_err(|e| Error::backend("reading the current revision from etcd", e))?;
        header_revision(response.header())
    }

    /// Whether etcd still serves reads at `revision`, i.e. whether it is at or above the
    /// compacted revision.
    async fn readable_at(&self, revision: Revision) -> Result<bool> {
        let options = GetOptions::new().with_count_only().with_revision(revision);
        match self.kv().get(self.probe_key(), Some(options)).await {
            Ok(_) => Ok(true),
            Err(e) if refusal(&e) == Some(Refusal::Compacted) => Ok(false),
            Err(e) => Err(Error::backend(
                "reading the compacted revision from etcd",
                e,
            )),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        let known = self.compacted.load(Ordering::SeqCst);
        let low = known.max(1);
        if self.readable_at(low).await? {
            return Ok(known);
        }
        // Someone else compacted past what this store knows. etcd never compacts past its
        // current revision, so the answer lies in (low, current]: bisect.
        let mut unreadable = low;
        let mut readable = self.current_revision().await?;
        while readable - unreadable > 1 {
            let middle = unreadable + (readable - unreadable) / 2;
            if self.readable_at(middle).await? {
                readable = middle;
            } else {
                unreadable = middle;
            }
        }
        self.note_compacted(readable);
        Ok(readable)
    }

    fn note_compacted(&self, revision: Revision) {
        self.compacted.fetch_max(revision, Ordering::SeqCst);
    }

    /// The key's current value from the `else` branch of a failed conditional write.
    fn current_from_else(&self, response: &TxnResponse) -> Result<Option<KeyValue>> {
        let current = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(mut get) => Some(get.take_kvs()),
            _ => None,
        });
        let Some(kvs) = current else {
            return Err(Error::backend(
                "writing to etcd",
                "a failed transaction returned no read of the key",
            ));
        };
        kvs.into_iter()
            .next()
            .map(|kv| self.key_value(kv))
            .transpose()
    }
}

/// etcd's refusals that the contract names. etcd reports them as gRPC statuses whose
/// messages are part of its API (clients such as kube-apiserver match them too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    Compacted,
    FutureRevision,
    RequestTooLarge,
}

fn refusal(error: &etcd_client::Error) -> Option<Refusal> {
    let etcd_client::Error::GRpcStatus(status) = error else {
        return None;
    };
    let message = status.message();
    if message.contains("required revision has been compacted") {
        Some(Refusal::Compacted)
    } else if message.contains("required revision is a future revision") {
        Some(Refusal::FutureRevision)
    } else if message.contains("request is too large")
        // gRPC's own limit, which etcd sets 512 KiB above its request limit.
        || message.contains("received message larger than max")
    {
        Some(Refusal::RequestTooLarge)
    } else {
        None
    }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<Revision> {
    header
        .map(|h| h.revision())
        .ok_or_else(|| Error::backend("reading etcd's answer", "the response has no header"))
}

/// etcd has no empty key; `\0` is the smallest key there is.
fn nonempty_key(key: Vec<u8>) -> Vec<u8> {
    if key.is_empty() { vec![0] } else { key }
}

/// The end of the etcd key range of every key that starts with `prefix`; `\0` is etcd's
/// "to the end of the key space", for a prefix that has no end (empty, or all `0xff`).
fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[async_trait::async_trait]
impl Store for EtcdStore {
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let mut response = self
            .inner
            .read(self.inner.full_key(key), GetOptions::new(), revision)
            .await?;
        response
            .take_kvs()
            .into_iter()
            .next()
            .map(|kv| self.inner.key_value(kv))
            .transpose()
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        let start = request.start.as_deref().unwrap_or(&request.prefix);
        if !start.starts_with(&request.prefix) {
            return Err(Error::InvalidRequest(format!(
                "start key {start:?} is outside prefix {:?}",
                request.prefix
            )));
        }
        let limit = i64::try_from(request.limit)
            .map_err(|_| Error::InvalidRequest(format!("limit {} is too large", request.limit)))?;
        let options = GetOptions::new()
            .with_range(range_end(&self.inner.full_key(&request.prefix)))
            .with_limit(limit);
        let mut response = self
            .inner
            .read(
                nonempty_key(self.inner.full_key(start)),
                options,
                request.revision,
            )
            .await?;
        let revision = match request.revision {
            Some(r) => r,
            None => header_revision(response.header())?,
        };
        let more = response.more();
        let kvs = response
            .take_kvs()
            .into_iter()
            .map(|kv| self.inner.key_value(kv))
            .collect::<Result<Vec<_>>>()?;
        Ok(RangeResponse {
            kvs,
            revision,
            more,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        self.check_size(key, &value)?;
        let full = self.inner.full_key(key);
        let value_len = value.len();
        // A `mod_revision` of 0 is etcd's "the key does not exist".
        let txn = Txn::new()
            .when([Compare::mod_revision(full.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(full, Vec::from(value), None)]);
        let response = self
            .inner
            .kv()
            .txn(txn)
            .await
            .map_err(|e| self.write_error(key, value_len, e))?;
        if !response.succeeded() {
            return Err(Error::AlreadyExists {
                key: key.to_string(),
            });
        }
        header_revision(response.header())
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        self.check_size(key, &value)?;
        let full = self.inner.full_key(key);
        let value_len = value.len();
        // Both compares: with `expected` 0, the `mod_revision` compare alone would match an
        // absent key and turn the update into a create.
        let txn = Txn::new()
            .when([
                Compare::version(full.clone(), CompareOp::Greater, 0),
                Compare::mod_revision(full.clone(), CompareOp::Equal, expected),
            ])
            .and_then([TxnOp::put(full.clone(), Vec::from(value), None)])
            .or_else([TxnOp::get(full, None)]);
        let response = self
            .inner
            .kv()
            .txn(txn)
            .await
            .map_err(|e| self.write_error(key, value_len, e))?;
        if response.succeeded() {
            return header_revision(response.header());
        }
        Err(refused_write(
            key,
            expected,
            self.inner.current_from_else(&response)?,
        ))
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(Revision, KeyValue)> {
        let full = self.inner.full_key(key);
        let txn = Txn::new()
            .when([
                Compare::version(full.clone(), CompareOp::Greater, 0),
                Compare::mod_revision(full.clone(), CompareOp::Equal, expected),
            ])
            .and_then([TxnOp::delete(
                full.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(full, None)]);
        let response = self
            .inner
            .kv()
            .txn(txn)
            .await
            .map_err(|e| Error::backend(format!("deleting key {key:?} from etcd"), e))?;
        if !response.succeeded() {
            return Err(refused_write(
                key,
                expected,
                self.inner.current_from_else(&response)?,
            ));
        }
        let revision = header_revision(response.header())?;
        let deleted = response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Delete(mut delete) => delete.take_prev_kvs().into_iter().next(),
            _ => None,
        });
        let Some(deleted) = deleted else {
            return Err(Error::backend(
                format!("deleting key {key:?} from etcd"),
                "etcd did not return the deleted key",
            ));
        };
        Ok((revision, self.inner.key_value(deleted)?))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        let full = self.inner.full_key(prefix);
        // Start at `after`, not `after + 1`: see the module docs. etcd reads a start of 0 as
        // "now", and nothing happens at revision 1 (the empty store), so start there at least.
        let options = WatchOptions::new()
            .with_range(range_end(&full))
            .with_start_revision(after.max(1))
            .with_prev_key();
        let mut watch = self
            .inner
            .watch
            .clone()
            .watch(nonempty_key(full), Some(options))
            .await
            .map_err(|e| Error::backend("starting a watch on etcd", e))?;
        // Wait for etcd's answer to the create request, so that a watch that cannot be set up
        // fails from this call; a compacted start comes later, as the stream's first item.
        let first = watch
            .message()
            .await
            .map_err(|e| Error::backend("starting a watch on etcd", e))?
            .ok_or_else(|| {
                Error::backend("starting a watch on etcd", "etcd closed the watch stream")
            })?;
        let mut state = WatchState {
            inner: self.inner.clone(),
            watch: Some(watch),
            after,
            last: after,
            pending: VecDeque::new(),
        };
        state.absorb(first).await;
        Ok(Box::pin(futures::stream::unfold(
            state,
            |mut state| async move {
                loop {
                    if let Some(item) = state.pending.pop_front() {
                        return Some((item, state));
                    }
                    let watch = state.watch.as_mut()?;
                    match watch.message().await {
                        Ok(Some(response)) => state.absorb(response).await,
                        Ok(None) => state.fail(Error::backend(
                            "watching etcd",
                            "etcd closed the watch stream",
                        )),
                        Err(e) => state.fail(Error::backend("watching etcd", e)),
                    }
                }
            },
        )))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        // Nothing lies below revision 1; etcd would record a compaction at 0 all the same.
        if revision < 1 {
            return Ok(());
        }
        match self.inner.kv().compact(revision, None).await {
            Ok(_) => {
                self.inner.note_compacted(revision);
                Ok(())
            }
            // etcd refuses a compaction at or below an earlier one; the contract makes it a
            // no-op.
            Err(e) if refusal(&e) == Some(Refusal::Compacted) => Ok(()),
            Err(e) if refusal(&e) == Some(Refusal::FutureRevision) => Err(Error::FutureRevision {
                requested: revision,
                current: self.inner.current_revision().await?,
            }),
            Err(e) => Err(Error::backend("compacting etcd", e)),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.inner.compacted_revision().await
    }
}

fn refused_write(key: &str, expected: Revision, current: Option<KeyValue>) -> Error {
    match current {
        None => Error::NotFound {
            key: key.to_string(),
        },
        Some(current) => Error::Conflict {
            key: key.to_string(),
            expected,
            current: Box::new(current),
        },
    }
}

/// One watch: etcd's stream and the events and error waiting to be handed out.
struct WatchState {
    inner: Arc<Inner>,
    /// `None` once the stream has failed; dropping etcd's stream cancels the watch there.
    watch: Option<etcd_client::WatchStream>,
    /// The caller's `after`: etcd replays the events at this revision, which are dropped.
    after: Revision,
    /// The revision of the last event handed out (or `after`).
    last: Revision,
    pending: VecDeque<Result<Event>>,
}

impl WatchState {
    fn fail(&mut self, error: Error) {
        self.pending.push_back(Err(error));
        self.watch = None;
    }

    async fn absorb(&mut self, response: WatchResponse) {
        if response.compact_revision() != 0 {
            let compacted = response.compact_revision();
            self.inner.note_compacted(compacted);
            self.fail(Error::Compacted {
                requested: self.last,
                compacted,
            });
            return;
        }
        if response.canceled() {
            let reason = response.cancel_reason().to_string();
            self.fail(Error::backend(
                "watching etcd",
                format!("etcd canceled the watch: {reason}"),
            ));
            return;
        }
        // etcd batches the events of several revisions (and of one transaction) in one
        // response, in revision order.
        for event in response.events() {
            let Some(kv) = event.kv() else { continue };
            // Compared with `after`, not with `last`: a transaction by another client can
            // change several keys at one revision.
            if kv.mod_revision() <= self.after {
                continue;
            }
            match self.event(event).await {
                Ok(event) => {
                    self.last = event.revision();
                    self.pending.push_back(Ok(event));
                }
                Err(error) => {
                    self.fail(error);
                    return;
                }
            }
        }
    }

    async fn event(&self, event: &etcd_client::Event) -> Result<Event> {
        let kv = event.kv().expect("checked by the caller").clone();
        let prev = event
            .prev_kv()
            .map(|prev| self.inner.key_value(prev.clone()))
            .transpose()?;
        let kv = self.inner.key_value(kv)?;
        let is_create =
            event.event_type() == EventType::Put && kv.create_revision == kv.mod_revision;
        // etcd sends the previous value of every change but a create, unless that value has
        // been compacted away under a watch that fell behind: the history is gone.
        if prev.is_none() && !is_create {
            let compacted = self.inner.compacted_revision().await?;
            return Err(Error::Compacted {
                requested: kv.mod_revision - 1,
                compacted,
            });
        }
        match event.event_type() {
            EventType::Put => Ok(Event {
                kind: EventKind::Put,
                kv,
                prev,
            }),
            // etcd's delete event carries only the key and the revision of the delete; the
            // contract's carries the deleted value.
            EventType::Delete => {
                let prev = prev.expect("checked above");
                Ok(Event {
                    kind: EventKind::Delete,
                    kv: KeyValue {
                        mod_revision: kv.mod_revision,
                        ..prev.clone()
                    },
                    prev: Some(prev),
                })
            }
        }
    }
}
