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
//!   resets it, and etcd removes the watcher. Progress notifications are not asked for. A watch
//!   asks for a member with a leader (clientv3's `WithRequireLeader`), so a member cut off from
//!   the others ends it instead of leaving it silent.
//! * **Members that fail.** Calls go to the members in rotation and move on when one fails; a
//!   watch resumes on another member from the last revision it delivered, so it loses no event
//!   and repeats none. A write whose member failed after sending it is tried again elsewhere;
//!   since every write is conditional it cannot apply twice, and a repeat that finds the
//!   store's own write already there answers as that write did (see [`members`]).
//! * **The client.** Corral speaks etcd's gRPC API through code generated from
//!   `proto/etcd.proto` (a subset of etcd's API, with etcd's names and field numbers) and checked
//!   in as `etcd/etcdserverpb.rs`, so that building Corral needs no protobuf compiler; a test
//!   regenerates it and fails when it drifts. The generic etcd client crates either run `protoc`
//!   in their build script or route requests to a dead member (see `members` for what this
//!   client does instead).
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
use futures::StreamExt as _;
use tonic::Status;

use crate::{
    Error, Event, EventKind, KeyValue, RangeRequest, RangeResponse, Result, Revision, Store,
    WatchStream,
};

pub mod members;
#[cfg(test)]
mod tests;

use members::{Attempts, Member, Members};
pub use members::{EtcdTls, channel};

/// etcd's API as generated from `proto/etcd.proto` (checked in; see the module docs). Public so
/// that other parts of Corral (the benchmark's raw-etcd yardstick, etcd administration) speak
/// etcd through the same code.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    include!("etcd/etcdserverpb.rs");
}

/// etcd's default `--max-request-bytes`.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1_572_864;

/// Room kept in a write request for everything but the value and the keys: the transaction's
/// framing, its compare, and the raft request etcd wraps it in (a few dozen bytes in practice).
const REQUEST_OVERHEAD_BYTES: usize = 1024;

/// How long [`EtcdStore::connect`] waits for a first answer from any member.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// See the module docs.
#[derive(Clone)]
pub struct EtcdStore {
    inner: Arc<Inner>,
    max_request_bytes: usize,
}

struct Inner {
    members: Arc<Members>,
    /// The store's prefix as etcd sees it.
    prefix: Vec<u8>,
    /// The highest compacted revision known to be in force: a lower bound of etcd's, which
    /// only grows.
    compacted: AtomicI64,
}

impl EtcdStore {
    /// Connects to an etcd cluster over plain HTTP/2 and checks that it answers. Every key is
    /// stored under `prefix` (which may be empty, for the whole key space).
    pub async fn connect(endpoints: &[String], prefix: &str) -> Result<EtcdStore> {
        Self::connect_with(endpoints, prefix, &EtcdTls::default()).await
    }

    /// [`EtcdStore::connect`] with TLS to the members (`https://` endpoints).
    pub async fn connect_with(
        endpoints: &[String],
        prefix: &str,
        tls: &EtcdTls,
    ) -> Result<EtcdStore> {
        let probe_key = Bytes::from(nonempty_key(prefix.as_bytes().to_vec()));
        let members = Members::new(endpoints, tls, probe_key)?;
        let store = EtcdStore {
            inner: Arc::new(Inner {
                members,
                prefix: prefix.as_bytes().to_vec(),
                compacted: AtomicI64::new(0),
            }),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        };
        // Channels connect lazily and calls would keep trying unreachable members: ask each
        // member once, here, where the caller can tell what is wrong.
        store.check_reachable().await?;
        store.inner.members.start_probing();
        Ok(store)
    }

    /// Succeeds when any member answers a read within [`CONNECT_TIMEOUT`]; otherwise names
    /// what each member said.
    async fn check_reachable(&self) -> Result<()> {
        let members = &self.inner.members;
        let answers = futures::future::join_all(members.all().iter().map(|member| async move {
            members
                .probe(member, CONNECT_TIMEOUT)
                .await
                .map_err(|reason| format!("{}: {reason}", member.endpoint))
        }))
        .await;
        if answers.iter().any(Result::is_ok) {
            return Ok(());
        }
        let failures: Vec<String> = answers.into_iter().filter_map(Result::err).collect();
        Err(Error::backend("connecting to etcd", failures.join("; ")))
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

    /// The endpoints in the rotation now (see [`members`]).
    pub fn healthy_endpoints(&self) -> Vec<String> {
        self.inner
            .members
            .all()
            .iter()
            .filter(|m| m.is_healthy())
            .map(|m| m.endpoint.clone())
            .collect()
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
    fn write_error(&self, key: &str, value_len: usize, status: Status) -> Error {
        match refusal(&status) {
            Some(Refusal::RequestTooLarge) => Error::ValueTooLarge {
                size: value_len,
                limit: self.max_value_bytes(key),
            },
            _ => Error::backend(format!("writing key {key:?} to etcd"), describe(&status)),
        }
    }

    /// Runs a transaction on the members in rotation (see [`members`]).
    async fn txn(
        &self,
        request: pb::TxnRequest,
    ) -> (std::result::Result<pb::TxnResponse, Status>, Attempts) {
        self.inner
            .members
            .call(|member: Arc<Member>| {
                let request = request.clone();
                async move {
                    member
                        .kv()
                        .txn(request)
                        .await
                        .map(tonic::Response::into_inner)
                }
            })
            .await
    }
}

impl Inner {
    fn full_key(&self, key: &str) -> Bytes {
        let mut full = Vec::with_capacity(self.prefix.len() + key.len());
        full.extend_from_slice(&self.prefix);
        full.extend_from_slice(key.as_bytes());
        Bytes::from(full)
    }

    fn user_key(&self, full: &[u8]) -> Result<String> {
        let Some(key) = full.strip_prefix(self.prefix.as_slice()) else {
            return Err(Error::backend(
                "reading from etcd",
                format!(
                    "etcd returned key {:?} outside the store's prefix",
                    String::from_utf8_lossy(full)
                ),
            ));
        };
        String::from_utf8(key.to_vec()).map_err(|e| {
            Error::backend(
                "reading from etcd",
                format!(
                    "key {:?} under the store's prefix is not UTF-8: {e}",
                    String::from_utf8_lossy(full)
                ),
            )
        })
    }

    fn key_value(&self, kv: pb::KeyValue) -> Result<KeyValue> {
        Ok(KeyValue {
            key: self.user_key(&kv.key)?,
            value: kv.value,
            create_revision: kv.create_revision,
            mod_revision: kv.mod_revision,
        })
    }

    /// A range read on the members in rotation; failures as they came.
    async fn range(
        &self,
        request: pb::RangeRequest,
    ) -> std::result::Result<pb::RangeResponse, Status> {
        self.members
            .call(|member: Arc<Member>| {
                let request = request.clone();
                async move {
                    member
                        .kv()
                        .range(request)
                        .await
                        .map(tonic::Response::into_inner)
                }
            })
            .await
            .0
    }

    /// A read, with etcd's refusals mapped onto the contract's errors.
    async fn read(
        &self,
        mut request: pb::RangeRequest,
        revision: Option<Revision>,
    ) -> Result<pb::RangeResponse> {
        match revision {
            // etcd reads revision 0 (and below) as "now"; the contract has no such revision.
            Some(r) if r < 1 => {
                return Err(Error::InvalidRequest(format!(
                    "revision {r} is not a revision (revisions start at 1)"
                )));
            }
            Some(r) => request.revision = r,
            None => {}
        }
        match self.range(request).await {
            Ok(response) => Ok(response),
            Err(status) => Err(self.read_error(status, revision).await),
        }
    }

    async fn read_error(&self, status: Status, requested: Option<Revision>) -> Error {
        match (refusal(&status), requested) {
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
            _ => Error::backend("reading from etcd", describe(&status)),
        }
    }

    /// The single key read by the revision probes, which only want the revision a read is
    /// served at: the prefix itself (or `\0`, as etcd rejects an empty key).
    fn probe_key(&self) -> Vec<u8> {
        nonempty_key(self.prefix.clone())
    }

    fn count_request(&self, revision: Revision) -> pb::RangeRequest {
        pb::RangeRequest {
            key: Bytes::from(self.probe_key()),
            count_only: true,
            revision,
            ..Default::default()
        }
    }

    async fn current_revision(&self) -> Result<Revision> {
        let response = self
            .range(self.count_request(0))
            .await
            .map_err(|e| Error::backend("reading the current revision from etcd", describe(&e)))?;
        header_revision(response.header.as_ref())
    }

    /// Whether etcd still serves reads at `revision`, i.e. whether it is at or above the
    /// compacted revision.
    async fn readable_at(&self, revision: Revision) -> Result<bool> {
        match self.range(self.count_request(revision)).await {
            Ok(_) => Ok(true),
            Err(e) if refusal(&e) == Some(Refusal::Compacted) => Ok(false),
            Err(e) => Err(Error::backend(
                "reading the compacted revision from etcd",
                describe(&e),
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

    /// The key's current value from the `failure` branch of a failed conditional write.
    fn current_from_else(&self, response: pb::TxnResponse) -> Result<Option<KeyValue>> {
        let current = response
            .responses
            .into_iter()
            .find_map(|op| match op.response {
                Some(pb::response_op::Response::ResponseRange(range)) => Some(range.kvs),
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

    /// After a delete whose answer was lost and whose repeat found the key gone: the delete
    /// that removed the version `expected` of `key`, if there was one. Read from the key's
    /// history (a watch from just after `expected`), so it is found while that history is not
    /// compacted; `None` when the key had no version `expected` or the history is gone.
    async fn delete_of(&self, key: &str, expected: Revision) -> Option<(Revision, KeyValue)> {
        let full = self.full_key(key);
        let request = pb::WatchCreateRequest {
            key: full,
            start_revision: expected + 1,
            prev_kv: true,
            ..Default::default()
        };
        let first_change = async {
            let member = self.members.pick();
            let mut stream = open_watch(&member, request).await.ok()?;
            loop {
                let response = stream.responses.message().await.ok()??;
                if response.canceled || response.compact_revision != 0 {
                    return None;
                }
                if let Some(event) = response.events.into_iter().next() {
                    return Some(event);
                }
            }
        };
        // The key is gone now; if it had the version `expected`, a change after `expected`
        // exists. The timeout ends the wait when it had not (no change may come) and when
        // members fail meanwhile.
        let event = tokio::time::timeout(Duration::from_secs(5), first_change)
            .await
            .ok()??;
        let prev = event.prev_kv?;
        if event.r#type != pb::event::EventType::Delete as i32 || prev.mod_revision != expected {
            return None;
        }
        let revision = event.kv?.mod_revision;
        Some((revision, self.key_value(prev).ok()?))
    }
}

/// One etcd watch stream: etcd's answers, and the end of the requests, held open while the
/// watch lives.
struct EtcdWatch {
    responses: tonic::Streaming<pb::WatchResponse>,
    /// Dropping it ends the request stream, and etcd then ends the watch: dropping the
    /// responses alone would leave the request side open and the watcher alive in etcd.
    _requests_open: tokio::sync::oneshot::Sender<()>,
}

/// Opens one etcd watch on `member`.
async fn open_watch(
    member: &Member,
    create: pb::WatchCreateRequest,
) -> std::result::Result<EtcdWatch, Status> {
    let first = pb::WatchRequest {
        request_union: Some(pb::watch_request::RequestUnion::CreateRequest(create)),
    };
    let (requests_open, closed) = tokio::sync::oneshot::channel::<()>();
    let requests = futures::stream::iter([first]).chain(
        futures::stream::once(async move {
            let _ = closed.await;
        })
        .filter_map(|()| async { None }),
    );
    let mut request = tonic::Request::new(requests);
    // clientv3's `WithRequireLeader`: a member that loses its leader ends the watch rather than
    // keep it open with nothing to send.
    request.metadata_mut().insert(
        "hasleader",
        tonic::metadata::MetadataValue::from_static("true"),
    );
    Ok(EtcdWatch {
        responses: member.watch().watch(request).await?.into_inner(),
        _requests_open: requests_open,
    })
}

/// etcd's refusals that the contract names. etcd reports them as gRPC statuses whose
/// messages are part of its API (clients such as kube-apiserver match them too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    Compacted,
    FutureRevision,
    RequestTooLarge,
}

fn refusal(status: &Status) -> Option<Refusal> {
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

/// A failure in one line: gRPC's code and message, and the transport error under it (which
/// says "connection refused" where the status says only "transport error").
fn describe(status: &Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        let part = error.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = error.source();
    }
    text
}

fn header_revision(header: Option<&pb::ResponseHeader>) -> Result<Revision> {
    header
        .map(|h| h.revision)
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

fn compare_mod(key: &Bytes, revision: Revision) -> pb::Compare {
    pb::Compare {
        result: pb::compare::CompareResult::Equal as i32,
        target: pb::compare::CompareTarget::Mod as i32,
        key: key.clone(),
        target_union: Some(pb::compare::TargetUnion::ModRevision(revision)),
    }
}

/// The key exists: its version (number of writes since its creation) is above 0.
fn compare_exists(key: &Bytes) -> pb::Compare {
    pb::Compare {
        result: pb::compare::CompareResult::Greater as i32,
        target: pb::compare::CompareTarget::Version as i32,
        key: key.clone(),
        target_union: Some(pb::compare::TargetUnion::Version(0)),
    }
}

fn put(key: &Bytes, value: Bytes) -> pb::RequestOp {
    pb::RequestOp {
        request: Some(pb::request_op::Request::RequestPut(pb::PutRequest {
            key: key.clone(),
            value,
            ..Default::default()
        })),
    }
}

fn get(key: &Bytes) -> pb::RequestOp {
    pb::RequestOp {
        request: Some(pb::request_op::Request::RequestRange(pb::RangeRequest {
            key: key.clone(),
            ..Default::default()
        })),
    }
}

/// After a conditional put that failed its compare: whether the value found is the one this
/// put wrote in an earlier attempt whose answer was lost. Another writer could have written
/// the same bytes, conditional on the same revision, only by computing the same write.
fn own_earlier_put(
    attempts: Attempts,
    value: &Bytes,
    expected: Revision,
    current: &Option<KeyValue>,
) -> Option<Revision> {
    let current = current.as_ref()?;
    (attempts.uncertain && current.value == *value && current.mod_revision > expected)
        .then_some(current.mod_revision)
}

#[async_trait::async_trait]
impl Store for EtcdStore {
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    /// Ready while some member is in the rotation (answered its last linearizable probe,
    /// `members.rs`): a store whose members are all dead, cut off or removed is not.
    fn ready(&self) -> std::result::Result<(), String> {
        if self.healthy_endpoints().is_empty() {
            return Err("no etcd member answers".into());
        }
        Ok(())
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let request = pb::RangeRequest {
            key: self.inner.full_key(key),
            ..Default::default()
        };
        let response = self.inner.read(request, revision).await?;
        response
            .kvs
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
        let range = pb::RangeRequest {
            key: Bytes::from(nonempty_key(self.inner.full_key(start).to_vec())),
            range_end: Bytes::from(range_end(&self.inner.full_key(&request.prefix))),
            limit,
            ..Default::default()
        };
        let response = self.inner.read(range, request.revision).await?;
        let revision = match request.revision {
            Some(r) => r,
            None => header_revision(response.header.as_ref())?,
        };
        let kvs = response
            .kvs
            .into_iter()
            .map(|kv| self.inner.key_value(kv))
            .collect::<Result<Vec<_>>>()?;
        Ok(RangeResponse {
            kvs,
            revision,
            more: response.more,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        self.check_size(key, &value)?;
        let full = self.inner.full_key(key);
        let value_len = value.len();
        // A `mod_revision` of 0 is etcd's "the key does not exist".
        let request = pb::TxnRequest {
            compare: vec![compare_mod(&full, 0)],
            success: vec![put(&full, value.clone())],
            failure: vec![get(&full)],
        };
        let (response, attempts) = self.txn(request).await;
        let response = response.map_err(|e| self.write_error(key, value_len, e))?;
        if response.succeeded {
            return header_revision(response.header.as_ref());
        }
        let current = self.inner.current_from_else(response)?;
        if let Some(revision) = own_earlier_put(attempts, &value, 0, &current) {
            return Ok(revision);
        }
        Err(Error::AlreadyExists {
            key: key.to_string(),
        })
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        self.check_size(key, &value)?;
        let full = self.inner.full_key(key);
        let value_len = value.len();
        // Both compares: with `expected` 0, the `mod_revision` compare alone would match an
        // absent key and turn the update into a create.
        let request = pb::TxnRequest {
            compare: vec![compare_exists(&full), compare_mod(&full, expected)],
            success: vec![put(&full, value.clone())],
            failure: vec![get(&full)],
        };
        let (response, attempts) = self.txn(request).await;
        let response = response.map_err(|e| self.write_error(key, value_len, e))?;
        if response.succeeded {
            return header_revision(response.header.as_ref());
        }
        let current = self.inner.current_from_else(response)?;
        if let Some(revision) = own_earlier_put(attempts, &value, expected, &current) {
            return Ok(revision);
        }
        Err(refused_write(key, expected, current))
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(Revision, KeyValue)> {
        let full = self.inner.full_key(key);
        let request = pb::TxnRequest {
            compare: vec![compare_exists(&full), compare_mod(&full, expected)],
            success: vec![pb::RequestOp {
                request: Some(pb::request_op::Request::RequestDeleteRange(
                    pb::DeleteRangeRequest {
                        key: full.clone(),
                        prev_kv: true,
                        ..Default::default()
                    },
                )),
            }],
            failure: vec![get(&full)],
        };
        let (response, attempts) = self.txn(request).await;
        let response = response
            .map_err(|e| Error::backend(format!("deleting key {key:?} from etcd"), describe(&e)))?;
        if !response.succeeded {
            let current = self.inner.current_from_else(response)?;
            if attempts.uncertain
                && current.is_none()
                && let Some(deleted) = self.inner.delete_of(key, expected).await
            {
                return Ok(deleted);
            }
            return Err(refused_write(key, expected, current));
        }
        let revision = header_revision(response.header.as_ref())?;
        let deleted = response
            .responses
            .into_iter()
            .find_map(|op| match op.response {
                Some(pb::response_op::Response::ResponseDeleteRange(delete)) => {
                    delete.prev_kvs.into_iter().next()
                }
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
        let mut state = WatchState {
            inner: self.inner.clone(),
            key: Bytes::from(nonempty_key(full.to_vec())),
            range_end: Bytes::from(range_end(&full)),
            stream: None,
            after,
            last: after,
            pending: VecDeque::new(),
            done: false,
        };
        // Open it here, so that a watch that cannot be set up fails from this call; a
        // compacted start comes later, as the stream's first item.
        state.open().await?;
        Ok(Box::pin(futures::stream::unfold(
            state,
            |mut state| async move {
                let item = state.next().await?;
                Some((item, state))
            },
        )))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        // Nothing lies below revision 1; etcd would record a compaction at 0 all the same.
        if revision < 1 {
            return Ok(());
        }
        let (result, _) = self
            .inner
            .members
            .call(|member: Arc<Member>| async move {
                member
                    .kv()
                    .compact(pb::CompactionRequest {
                        revision,
                        physical: false,
                    })
                    .await
            })
            .await;
        match result {
            Ok(_) => {
                self.inner.note_compacted(revision);
                Ok(())
            }
            // etcd refuses a compaction at or below an earlier one; the contract makes it a
            // no-op. (A repeat of a compaction whose answer was lost lands here too.)
            Err(e) if refusal(&e) == Some(Refusal::Compacted) => {
                self.inner.note_compacted(revision);
                Ok(())
            }
            Err(e) if refusal(&e) == Some(Refusal::FutureRevision) => Err(Error::FutureRevision {
                requested: revision,
                current: self.inner.current_revision().await?,
            }),
            Err(e) => Err(Error::backend("compacting etcd", describe(&e))),
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

/// One watch: etcd's stream on one member, and the events and error waiting to be handed out.
/// When its member fails, the watch is opened again on another from the last revision it
/// handed out.
struct WatchState {
    inner: Arc<Inner>,
    key: Bytes,
    range_end: Bytes,
    /// The member and etcd's stream on it; `None` between a member's failure and the next
    /// `open`.
    stream: Option<(Arc<Member>, EtcdWatch)>,
    /// Events at or below this revision are dropped: etcd is asked to start at `after`
    /// itself (see the module docs) and, after a move to another member, at the last revision
    /// handed out, whose events were all handed out (etcd never splits a revision's events
    /// over two responses unless asked to).
    after: Revision,
    /// The revision of the last event handed out (or the caller's `after`).
    last: Revision,
    pending: VecDeque<Result<Event>>,
    /// An error was handed out: the watch is over.
    done: bool,
}

impl WatchState {
    /// Opens etcd's watch on a member in rotation, moving on while members fail. The first
    /// opening starts at the caller's `after`; a reopening at the last revision handed out.
    async fn open(&mut self) -> Result<()> {
        let create = pb::WatchCreateRequest {
            key: self.key.clone(),
            range_end: self.range_end.clone(),
            // etcd reads a start of 0 as "now", and nothing happens at revision 1 (the empty
            // store), so start there at least.
            start_revision: self.after.max(1),
            prev_kv: true,
            ..Default::default()
        };
        let (result, _) =
            self.inner
                .members
                .call(|member: Arc<Member>| {
                    let create = create.clone();
                    async move {
                        let mut stream = open_watch(&member, create).await?;
                        // etcd's answer to the create request (`created`), or the failure.
                        let first =
                            stream.responses.message().await?.ok_or_else(|| {
                                Status::unavailable("etcd closed the watch stream")
                            })?;
                        Ok((member, stream, first))
                    }
                })
                .await;
        let (member, stream, first) =
            result.map_err(|e| Error::backend("starting a watch on etcd", describe(&e)))?;
        self.stream = Some((member, stream));
        self.absorb(first).await;
        Ok(())
    }

    /// The next item for the caller; `None` once an error has been handed out.
    async fn next(&mut self) -> Option<Result<Event>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                self.done = item.is_err();
                return Some(item);
            }
            if self.done {
                return None;
            }
            let Some((member, stream)) = self.stream.as_mut() else {
                // The member failed: move to another.
                self.after = self.last;
                if let Err(error) = self.open().await {
                    self.fail(error);
                }
                continue;
            };
            // A member out of the rotation is waited on only until another is in it.
            let returns = self.inner.members.returns();
            let message = if member.is_healthy() {
                tokio::select! {
                    message = stream.responses.message() => message,
                    () = member.failed() => Err(Status::unavailable("the member failed its probe")),
                }
            } else {
                tokio::select! {
                    message = stream.responses.message() => message,
                    () = self.inner.members.returned(returns) => {
                        Err(Status::unavailable("another member is back in the rotation"))
                    }
                }
            };
            match message {
                Ok(Some(response)) => self.absorb(response).await,
                Ok(None) => self.lost_member(Status::unavailable("etcd closed the watch stream")),
                Err(status) => self.lost_member(status),
            }
        }
    }

    /// The stream ended without etcd refusing the watch: its member failed or went away.
    fn lost_member(&mut self, status: Status) {
        if let Some((member, _)) = self.stream.take() {
            tracing::debug!(endpoint = %member.endpoint, error = %describe(&status), "etcd watch lost its member; resuming on another");
        }
        if members::classify(&status) == members::Failure::Answer {
            self.fail(Error::backend("watching etcd", describe(&status)));
        }
    }

    fn fail(&mut self, error: Error) {
        self.pending.push_back(Err(error));
        self.stream = None;
    }

    async fn absorb(&mut self, response: pb::WatchResponse) {
        if response.compact_revision != 0 {
            let compacted = response.compact_revision;
            self.inner.note_compacted(compacted);
            self.fail(Error::Compacted {
                requested: self.last,
                compacted,
            });
            return;
        }
        if response.canceled {
            let reason = response.cancel_reason;
            // A member without a leader cancels the watches that asked for one: move on.
            if reason.contains("no leader") {
                self.lost_member(Status::unavailable(reason));
            } else {
                self.fail(Error::backend(
                    "watching etcd",
                    format!("etcd canceled the watch: {reason}"),
                ));
            }
            return;
        }
        // etcd batches the events of several revisions (and of one transaction) in one
        // response, in revision order.
        for event in response.events {
            let Some(kv) = &event.kv else { continue };
            // Compared with `after`, not with `last`: a transaction by another client can
            // change several keys at one revision.
            if kv.mod_revision <= self.after {
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

    async fn event(&self, event: pb::Event) -> Result<Event> {
        let is_delete = event.r#type == pb::event::EventType::Delete as i32;
        let kv = self
            .inner
            .key_value(event.kv.expect("checked by the caller"))?;
        let prev = event
            .prev_kv
            .map(|prev| self.inner.key_value(prev))
            .transpose()?;
        let is_create = !is_delete && kv.create_revision == kv.mod_revision;
        // etcd sends the previous value of every change but a create, unless that value has
        // been compacted away under a watch that fell behind: the history is gone.
        if prev.is_none() && !is_create {
            let compacted = self.inner.compacted_revision().await?;
            return Err(Error::Compacted {
                requested: kv.mod_revision - 1,
                compacted,
            });
        }
        if !is_delete {
            return Ok(Event {
                kind: EventKind::Put,
                kv,
                prev,
            });
        }
        // etcd's delete event carries only the key and the revision of the delete; the
        // contract's carries the deleted value.
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
