//! The etcd cluster as the store reaches it: one gRPC channel per endpoint, each endpoint's
//! health, and calls that move to a healthy member when the one they were sent to fails.
//!
//! etcd runs as an odd number of members precisely so that a minority can die or be cut off
//! without the cluster noticing; a client must not notice either. So:
//!
//! * **Rotation.** Calls go round-robin over the members last seen healthy; when none is, over
//!   all of them (the cluster may be coming back, and an answer is the best probe).
//! * **Probes.** A task per store asks every member a linearizable read every
//!   [`PROBE_INTERVAL`], with [`PROBE_TIMEOUT`] to answer. A linearizable read needs the
//!   member's link to the leader and to a quorum, so it fails on a member that is dead, frozen,
//!   cut off from the client, or cut off from the others (which would otherwise serve stale
//!   data to serializable reads and hang linearizable ones). A member that fails its probe
//!   leaves the rotation at once; one that answers rejoins it.
//! * **Failover.** A call whose member fails (transport errors, etcd's "no leader", the member
//!   leaving the rotation while the call waits on it) is tried again on the next member, with a
//!   short backoff, for up to [`RETRY_BUDGET`]. A read is always safe to repeat. A write may have
//!   been applied before the failure; [`Attempts::uncertain`] tells the caller so, and every
//!   write of the store is conditional, so repeating it cannot apply it twice: the store then
//!   tells its own earlier write apart from a conflict by the value found (see `etcd.rs`).
//!   etcd's refusals (a compacted revision, a value too large) are answers, never retried.
//! * **Watches** use the same rotation and health: see `WatchState` in `etcd.rs`.
//!
//! kube-apiserver gets the same from etcd's Go client (`clientv3`): a round-robin balancer over
//! healthy endpoints, and retries of reads and of writes known not to have been applied.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Status};

use super::pb;
use crate::{Error, Result};

/// How often every member is probed.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// How long a member has to answer its probe before it leaves the rotation.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a call keeps trying members before its failure is the caller's.
pub const RETRY_BUDGET: Duration = Duration::from_secs(15);

/// How long a new connection may take before the member counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// HTTP/2 pings on idle connections, so that a watch on a link that died silently fails. etcd
/// refuses pings more often than every 5 s (`--grpc-keepalive-min-time`); the probes find a
/// dead member much sooner anyway.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest response accepted. tonic's default (4 MiB) would fail a list of a few large objects;
/// etcd itself sends up to 2 GiB, and so does kube-apiserver's client.
pub const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// The client side of etcd's TLS: kube-apiserver's `--etcd-cafile`, `--etcd-certfile` and
/// `--etcd-keyfile`, read as PEM.
#[derive(Clone, Debug, Default)]
pub struct EtcdTls {
    /// The CA that signed the members' serving certificates; the system's roots are not used.
    pub ca_pem: Option<Vec<u8>>,
    /// The client certificate and its key, for members that ask for one
    /// (`--client-cert-auth`).
    pub identity_pem: Option<(Vec<u8>, Vec<u8>)>,
}

impl EtcdTls {
    /// Reads the files kube-apiserver's flags name; each may be absent.
    pub fn from_files(
        ca_file: Option<&std::path::Path>,
        cert_file: Option<&std::path::Path>,
        key_file: Option<&std::path::Path>,
    ) -> Result<EtcdTls> {
        let read = |path: &std::path::Path| {
            std::fs::read(path)
                .map_err(|e| Error::backend(format!("reading {}", path.display()), e))
        };
        let identity_pem = match (cert_file, key_file) {
            (Some(cert), Some(key)) => Some((read(cert)?, read(key)?)),
            (None, None) => None,
            _ => {
                return Err(Error::InvalidRequest(
                    "an etcd client certificate needs both --etcd-certfile and --etcd-keyfile"
                        .into(),
                ));
            }
        };
        Ok(EtcdTls {
            ca_pem: ca_file.map(read).transpose()?,
            identity_pem,
        })
    }

    fn is_set(&self) -> bool {
        self.ca_pem.is_some() || self.identity_pem.is_some()
    }
}

/// One member as the store reaches it.
pub struct Member {
    /// The endpoint as given (`http://127.0.0.1:2379`).
    pub endpoint: String,
    channel: Channel,
    /// Whether the member is in the rotation: answered its last probe and its last call did not
    /// fail it.
    healthy: tokio::sync::watch::Sender<bool>,
    /// Shared by every member of the cluster: counts the members' returns to the rotation.
    returns: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Member {
    pub fn is_healthy(&self) -> bool {
        *self.healthy.borrow()
    }

    pub fn kv(&self) -> pb::kv_client::KvClient<Channel> {
        pb::kv_client::KvClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    pub fn watch(&self) -> pb::watch_client::WatchClient<Channel> {
        pb::watch_client::WatchClient::new(self.channel.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    pub fn cluster(&self) -> pb::cluster_client::ClusterClient<Channel> {
        pb::cluster_client::ClusterClient::new(self.channel.clone())
    }

    pub fn maintenance(&self) -> pb::maintenance_client::MaintenanceClient<Channel> {
        pb::maintenance_client::MaintenanceClient::new(self.channel.clone())
    }

    /// Takes the member out of the rotation (or puts it back), saying so once per change.
    fn set_healthy(&self, healthy: bool, why: &dyn std::fmt::Display) {
        let changed = self.healthy.send_if_modified(|current| {
            let changed = *current != healthy;
            *current = healthy;
            changed
        });
        if changed && healthy {
            self.returns.send_modify(|count| *count += 1);
            tracing::info!(endpoint = %self.endpoint, "etcd member answers again; back in the rotation");
        } else if changed {
            tracing::warn!(endpoint = %self.endpoint, reason = %why, "etcd member failed; requests go to the other members");
        }
    }

    /// Resolves once the member has left the rotation.
    pub async fn failed(&self) {
        let mut receiver = self.healthy.subscribe();
        // The sender lives as long as `self`, so the wait only ends by the member failing.
        let _ = receiver.wait_for(|healthy| !*healthy).await;
    }
}

/// The members of one etcd cluster; see the module docs.
pub struct Members {
    members: Vec<Arc<Member>>,
    next: AtomicUsize,
    /// The key every probe reads (the store's prefix): a count of it costs etcd nothing.
    probe_key: bytes::Bytes,
    /// Counts the members' returns to the rotation (see [`Members::returned`]).
    returns: Arc<tokio::sync::watch::Sender<u64>>,
}

/// What a call went through before its answer: whether an attempt may have been applied
/// although its answer was lost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Attempts {
    pub uncertain: bool,
}

impl Members {
    /// Channels to every endpoint, connected lazily; probing starts with
    /// [`Members::start_probing`].
    pub fn new(
        endpoints: &[String],
        tls: &EtcdTls,
        probe_key: bytes::Bytes,
    ) -> Result<Arc<Members>> {
        if endpoints.is_empty() {
            return Err(Error::InvalidRequest("no etcd endpoints given".into()));
        }
        let returns = Arc::new(tokio::sync::watch::Sender::new(0));
        let mut members = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            members.push(Arc::new(Member {
                endpoint: endpoint.clone(),
                channel: channel(endpoint, tls)?,
                // Every member starts in the rotation; the first probe or call says otherwise.
                healthy: tokio::sync::watch::Sender::new(true),
                returns: returns.clone(),
            }));
        }
        Ok(Arc::new(Members {
            members,
            next: AtomicUsize::new(0),
            probe_key,
            returns,
        }))
    }

    /// Starts the task that probes every member (see the module docs); it ends when the last
    /// `Arc` of `self` is dropped.
    pub fn start_probing(self: &Arc<Self>) {
        tokio::spawn(probe_forever(Arc::downgrade(self)));
    }

    pub fn all(&self) -> &[Arc<Member>] {
        &self.members
    }

    /// The next member in the rotation: the next healthy one, or the next one at all when none
    /// is healthy.
    pub fn pick(&self) -> Arc<Member> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.members.len();
        (0..n)
            .map(|i| &self.members[(start + i) % n])
            .find(|m| m.is_healthy())
            .unwrap_or(&self.members[start % n])
            .clone()
    }

    /// How many times members have returned to the rotation so far; see [`Members::returned`].
    pub fn returns(&self) -> u64 {
        *self.returns.borrow()
    }

    /// Resolves once a member returns to the rotation after `seen` returns. A call sent to a
    /// member out of the rotation (because none was in it, e.g. while the cluster elects a
    /// leader) waits on it only until another is back, and moves there: a frozen member would
    /// otherwise hold it until the connection's keep-alive gives up.
    pub async fn returned(&self, seen: u64) {
        let mut receiver = self.returns.subscribe();
        // The sender lives as long as `self`.
        let _ = receiver.wait_for(|count| *count != seen).await;
    }

    /// Runs `call` on a member, and again on the next ones while members fail (see the module
    /// docs). `call` gets the member to use; the answer comes with what the attempts went
    /// through.
    pub async fn call<T, F, Fut>(&self, mut call: F) -> (std::result::Result<T, Status>, Attempts)
    where
        F: FnMut(Arc<Member>) -> Fut,
        Fut: Future<Output = std::result::Result<T, Status>>,
    {
        let deadline = tokio::time::Instant::now() + RETRY_BUDGET;
        let mut attempts = Attempts::default();
        let mut backoff = Duration::from_millis(20);
        loop {
            let returns = self.returns();
            let member = self.pick();
            let result = if member.is_healthy() {
                tokio::select! {
                    result = call(member.clone()) => result,
                    () = member.failed() => Err(Status::unavailable(format!(
                        "etcd member {} failed while the request waited on it",
                        member.endpoint
                    ))),
                }
            } else {
                tokio::select! {
                    result = call(member.clone()) => result,
                    () = self.returned(returns) => Err(Status::unavailable(format!(
                        "etcd member {} is out of the rotation and another is back",
                        member.endpoint
                    ))),
                }
            };
            let status = match result {
                Ok(answer) => return (Ok(answer), attempts),
                Err(status) => status,
            };
            match classify(&status) {
                Failure::Answer => return (Err(status), attempts),
                Failure::Member => member.set_healthy(false, &status.message()),
                Failure::Transient => {}
            }
            // Whatever failed after the request left may have been applied.
            attempts.uncertain = true;
            if tokio::time::Instant::now() + backoff > deadline {
                return (Err(status), attempts);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// One probe of every member, concurrently; see the module docs.
    async fn probe_all(&self) {
        futures::future::join_all(self.members.iter().map(|member| async move {
            match self.probe(member, PROBE_TIMEOUT).await {
                Ok(()) => member.set_healthy(true, &""),
                Err(reason) => member.set_healthy(false, &reason),
            }
        }))
        .await;
    }

    /// Asks `member` for a linearizable count of the probe key within `timeout`; the reason in
    /// one line when it does not answer. Any refusal counts: a member that answers this read
    /// with an error (or something that is not etcd at all) is no member to send calls to.
    pub async fn probe(
        &self,
        member: &Member,
        timeout: Duration,
    ) -> std::result::Result<(), String> {
        let request = pb::RangeRequest {
            key: self.probe_key.clone(),
            count_only: true,
            ..Default::default()
        };
        match tokio::time::timeout(timeout, member.kv().range(request)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(status)) => Err(super::describe(&status)),
            Err(_) => Err(format!("no answer to a read within {timeout:?}")),
        }
    }
}

async fn probe_forever(members: Weak<Members>) {
    let mut interval = tokio::time::interval(PROBE_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let Some(members) = members.upgrade() else {
            return;
        };
        members.probe_all().await;
    }
}

/// What a failed call says about its member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// etcd answered: a refusal the caller maps (compacted, too large, a bad request).
    Answer,
    /// The member is unusable: unreachable, without a leader, or not answering.
    Member,
    /// The cluster is between leaders or busy; another attempt, anywhere, may succeed.
    Transient,
}

/// Sorts a failure by etcd's codes and messages (part of its API: clientv3 and kube-apiserver
/// match them too) and tonic's transport errors.
pub fn classify(status: &Status) -> Failure {
    let message = status.message();
    match status.code() {
        Code::Unavailable
            if message.contains("leader changed") || message.contains("too many requests") =>
        {
            Failure::Transient
        }
        Code::ResourceExhausted if message.contains("too many requests") => Failure::Transient,
        // Transport failures (refused, reset, broken pipe, TLS), "no leader", "request timed
        // out", a member stopping.
        Code::Unavailable | Code::Cancelled | Code::DeadlineExceeded => Failure::Member,
        // A connection torn down mid-call surfaces without a gRPC status of its own.
        Code::Unknown | Code::Internal
            if message.contains("transport")
                || message.contains("connection")
                || message.contains("h2 protocol")
                || message.contains("broken pipe") =>
        {
            Failure::Member
        }
        _ => Failure::Answer,
    }
}

/// A lazily connected channel to one endpoint, for the clients of [`super::pb`] (etcd
/// administration: members, health). Endpoints without a scheme are `http://`, or `https://`
/// when TLS is configured.
pub fn channel(endpoint: &str, tls: &EtcdTls) -> Result<Channel> {
    let url = if endpoint.contains("://") {
        endpoint.to_string()
    } else if tls.is_set() {
        format!("https://{endpoint}")
    } else {
        format!("http://{endpoint}")
    };
    let invalid = |why: String| {
        Error::InvalidRequest(format!("etcd endpoint {endpoint:?} is not usable: {why}"))
    };
    let mut builder = Endpoint::from_shared(url.clone())
        .map_err(|e| invalid(e.to_string()))?
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    if url.starts_with("https://") {
        let mut config = ClientTlsConfig::new();
        if let Some(ca) = &tls.ca_pem {
            config = config.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &tls.identity_pem {
            config = config.identity(Identity::from_pem(cert, key));
        }
        builder = builder
            .tls_config(config)
            .map_err(|e| invalid(format!("TLS: {e}")))?;
    } else if !url.starts_with("http://") {
        return Err(invalid("the scheme must be http:// or https://".into()));
    } else if tls.is_set() {
        return Err(invalid(
            "TLS files are given but the endpoint is http://; use https://".into(),
        ));
    }
    Ok(builder.connect_lazy())
}
