//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics
//! (`tools/leaderelection`), so that of several `corral controllers` replicas only one acts.
//!
//! A candidate takes the Lease when it is free (absent, released, or not renewed for
//! `leaseDurationSeconds`), then renews it every retry period. Expiry is judged by the
//! candidate's own clock from the moment it last saw the Lease change, not by comparing the
//! holder's `renewTime` with the local wall clock, so clock skew between machines cannot make
//! two leaders. A leader that cannot renew within the renew deadline stops acting before its
//! Lease can expire for the others (renew deadline < lease duration). On shutdown the leader
//! releases the Lease so a standby takes over at once.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};

use crate::{Connection, Error};

/// How the election runs. The defaults are upstream Cluster API's manager flags
/// (`--leader-elect-lease-duration=15s`, `--leader-elect-renew-deadline=10s`,
/// `--leader-elect-retry-period=2s`).
#[derive(Clone, Debug)]
pub struct LeaderElection {
    /// The Lease's namespace and name.
    pub namespace: String,
    pub name: String,
    /// Who this candidate is, unique among the replicas (`holderIdentity`).
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl LeaderElection {
    /// The election of `corral controllers`: the Lease `corral-system/corral-controllers`.
    pub fn controllers(identity: String) -> LeaderElection {
        LeaderElection {
            namespace: "corral-system".into(),
            name: "corral-controllers".into(),
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    fn lease_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// What a candidate remembers of the Lease between attempts.
#[derive(Default)]
struct Observed {
    /// The holder, renew time and transitions last seen, and when (by the local clock).
    record: Option<(Option<String>, Option<Timestamp>, i32)>,
    at: Option<tokio::time::Instant>,
}

/// The result of one attempt.
#[derive(Debug, PartialEq)]
enum Attempt {
    Leader,
    Follower { holder: String },
}

/// Runs `work` while this candidate holds the Lease.
///
/// Waits until it acquires the Lease, then runs `work(lost)`, where `lost` resolves when the
/// Lease could not be renewed (`work` must then stop acting) or `shutdown` resolved. Returns
/// `Ok` after a shutdown (the Lease released) and [`Error::LostLease`] after losing it; a
/// process that lost its Lease exits, as upstream's managers do, and is restarted as a
/// candidate.
pub async fn run_as_leader<W, F>(
    connection: &Connection,
    election: &LeaderElection,
    shutdown: impl Future<Output = ()> + Send,
    on_follower: impl Fn(&str),
    work: W,
) -> Result<(), Error>
where
    W: FnOnce(futures::future::BoxFuture<'static, ()>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let leases: Api<Lease> = Api::namespaced(connection.client.clone(), &election.namespace);
    ensure_namespace(connection, &election.namespace).await?;
    let mut observed = Observed::default();
    tokio::pin!(shutdown);
    let mut last_holder = String::new();
    loop {
        match try_acquire_or_renew(connection, &leases, election, &mut observed).await {
            Ok(Attempt::Leader) => break,
            Ok(Attempt::Follower { holder }) => {
                if holder != last_holder {
                    on_follower(&holder);
                    last_holder = holder;
                }
            }
            Err(error) => tracing::warn!(error = %error, "Failed to read the leader lease"),
        }
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            _ = tokio::time::sleep(election.retry_period) => {}
        }
    }
    tracing::info!(lease = %election.lease_name(), identity = %election.identity, "Acquired the leader lease");

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let lost = Box::pin(async move {
        let mut stopped = stopped;
        let _ = stopped.wait_for(|stop| *stop).await;
    });
    let mut running = tokio::spawn(work(lost));
    let mut last_renewed = tokio::time::Instant::now();
    let outcome = loop {
        tokio::select! {
            _ = &mut shutdown => break Ok(()),
            _ = &mut running => break Ok(()),
            _ = tokio::time::sleep(election.retry_period) => {}
        }
        match try_acquire_or_renew(connection, &leases, election, &mut observed).await {
            Ok(Attempt::Leader) => last_renewed = tokio::time::Instant::now(),
            Ok(Attempt::Follower { holder }) => {
                break Err(Error::LostLease {
                    lease: election.lease_name(),
                    reason: format!("{holder} holds it now"),
                });
            }
            Err(error) => {
                if last_renewed.elapsed() >= election.renew_deadline {
                    break Err(Error::LostLease {
                        lease: election.lease_name(),
                        reason: format!(
                            "not renewed within {:?}: {error}",
                            election.renew_deadline
                        ),
                    });
                }
            }
        }
    };
    let _ = stop.send(true);
    let _ = running.await;
    if outcome.is_ok() {
        release(&leases, election).await;
    }
    outcome
}

/// One round of client-go's `tryAcquireOrRenew`.
async fn try_acquire_or_renew(
    connection: &Connection,
    leases: &Api<Lease>,
    election: &LeaderElection,
    observed: &mut Observed,
) -> Result<Attempt, Error> {
    let now = Timestamp::now();
    let fail = |error| {
        connection.fail(
            format!("acquiring the lease {}", election.lease_name()),
            error,
        )
    };
    let Some(mut lease) = leases.get_opt(&election.name).await.map_err(fail)? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(election.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(election.identity.clone()),
                lease_duration_seconds: Some(election.lease_duration.as_secs() as i32),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        };
        return match leases.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(Attempt::Leader),
            // Another candidate created it first.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Attempt::Follower {
                holder: "another candidate".into(),
            }),
            Err(error) => Err(fail(error)),
        };
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
    let record = (
        holder.clone(),
        spec.renew_time.as_ref().map(|t| t.0),
        spec.lease_transitions.unwrap_or(0),
    );
    let local_now = tokio::time::Instant::now();
    if observed.record.as_ref() != Some(&record) {
        observed.record = Some(record);
        observed.at = Some(local_now);
    }
    let duration = spec
        .lease_duration_seconds
        .map(|seconds| Duration::from_secs(seconds.max(1) as u64))
        .unwrap_or(election.lease_duration);
    let held_by_me = holder.as_deref() == Some(election.identity.as_str());
    let expired = observed.at.is_none_or(|at| at + duration <= local_now);
    if let Some(holder) = &holder
        && !held_by_me
        && !expired
    {
        return Ok(Attempt::Follower {
            holder: holder.clone(),
        });
    }
    if !held_by_me {
        spec.acquire_time = Some(MicroTime(now));
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        spec.holder_identity = Some(election.identity.clone());
    }
    spec.renew_time = Some(MicroTime(now));
    spec.lease_duration_seconds = Some(election.lease_duration.as_secs() as i32);
    // The replace carries the resourceVersion read above: of two candidates taking an expired
    // Lease at once, one gets a conflict.
    match leases
        .replace(&election.name, &PostParams::default(), &lease)
        .await
    {
        Ok(written) => {
            let spec = written.spec.unwrap_or_default();
            observed.record = Some((
                spec.holder_identity,
                spec.renew_time.map(|t| t.0),
                spec.lease_transitions.unwrap_or(0),
            ));
            observed.at = Some(tokio::time::Instant::now());
            Ok(Attempt::Leader)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Attempt::Follower {
            holder: "another candidate".into(),
        }),
        Err(error) => Err(fail(error)),
    }
}

/// Gives the Lease up (client-go's `ReleaseOnCancel`): no holder, a one-second duration.
async fn release(leases: &Api<Lease>, election: &LeaderElection) {
    let Ok(Some(mut lease)) = leases.get_opt(&election.name).await else {
        return;
    };
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    if spec.holder_identity.as_deref() != Some(election.identity.as_str()) {
        return;
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    if let Err(error) = leases
        .replace(&election.name, &PostParams::default(), &lease)
        .await
    {
        tracing::warn!(error = %error, "Failed to release the leader lease");
    }
}

/// Creates the Lease's namespace when it is missing (`corral init` creates it, so an identity
/// that may not create namespaces finds it).
async fn ensure_namespace(connection: &Connection, namespace: &str) -> Result<(), Error> {
    use k8s_openapi::api::core::v1::Namespace;
    let namespaces: Api<Namespace> = Api::all(connection.client.clone());
    if let Ok(Some(_)) = namespaces.get_opt(namespace).await {
        return Ok(());
    }
    let object = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match namespaces.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(connection.fail(format!("creating the namespace {namespace}"), error)),
    }
}
