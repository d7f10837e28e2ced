//! An operator's drill on a three-member etcd cluster: two stores (as two API servers would
//! be) write alternately while one member is lost, brought back, and then another is lost.
//! Nothing a client acknowledged may be lost, nothing may fail once the fault has settled
//! (2 s), and a watch sees every acknowledged write once, in order, across the faults.
//!
//! The member is lost in two ways: killed (`kill -9`: its connections are refused) and frozen
//! (`SIGSTOP`: its connections stay open and nothing answers, as when its links are cut).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use corral_store::etcd::EtcdStore;
use corral_store::testing::{EtcdCluster, MemberFailure};
use corral_store::{EventKind, Revision, Store};
use futures::StreamExt;
use tokio::time::Instant;

/// How long after a fault errors are forgiven: requests in flight when the member went.
const SETTLE: Duration = Duration::from_secs(2);

/// How long each phase of the drill lets writes run.
const PHASE: Duration = Duration::from_secs(3);

/// How long a member that came back may take to rejoin the stores' rotation.
const REJOIN_DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_member_is_invisible_and_rejoins_when_restarted() {
    drill(MemberFailure::Killed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_member_is_invisible_and_rejoins_when_thawed() {
    drill(MemberFailure::Frozen).await;
}

/// What the writers saw: acknowledged writes (key, revision) and failures with their time.
#[derive(Default)]
struct Outcomes {
    acknowledged: Vec<(String, Revision)>,
    failures: Vec<(Instant, String)>,
}

async fn drill(failure: MemberFailure) {
    let Some(mut cluster) = EtcdCluster::start_or_skip(3).await else {
        return;
    };
    let a = EtcdStore::connect(&cluster.endpoints(), "/drill/")
        .await
        .unwrap();
    let b = EtcdStore::connect(&cluster.endpoints(), "/drill/")
        .await
        .unwrap();
    let start = b.current_revision().await.unwrap();
    let mut watch = b.watch("/", start).await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_alternately(a.clone(), b.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;

    // The first fault, and the member's return.
    let first_fault = Instant::now();
    cluster.fail(0, failure);
    tokio::time::sleep(PHASE).await;
    cluster.recover(0, failure).await;
    let member = cluster.endpoint(0);
    for store in [&a, &b] {
        let deadline = Instant::now() + REJOIN_DEADLINE;
        while !store.healthy_endpoints().contains(&member) {
            assert!(
                Instant::now() < deadline,
                "{member} did not rejoin the rotation: {:?}",
                store.healthy_endpoints()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    // A second member lost while the first is back: the quorum is now the first and the third.
    let second_fault = Instant::now();
    cluster.fail(1, failure);
    tokio::time::sleep(PHASE).await;
    stop.store(true, Ordering::SeqCst);
    let outcomes = writer.await.unwrap();

    eprintln!(
        "{failure:?}: {} writes acknowledged, {} requests failed: {:?}",
        outcomes.acknowledged.len(),
        outcomes.failures.len(),
        outcomes
            .failures
            .iter()
            .map(|(at, what)| (at.duration_since(first_fault), what))
            .collect::<Vec<_>>()
    );
    let late: Vec<_> = outcomes
        .failures
        .iter()
        .filter(|(at, _)| {
            let settling = |fault: Instant| *at >= fault && *at < fault + SETTLE;
            !settling(first_fault) && !settling(second_fault)
        })
        .collect();
    assert!(
        late.is_empty(),
        "{} of {} requests failed outside the {SETTLE:?} after a fault: {:?}",
        late.len(),
        outcomes.acknowledged.len() + outcomes.failures.len(),
        &late[..late.len().min(5)]
    );
    assert!(
        outcomes.acknowledged.len() > 20,
        "too few writes to judge: {}",
        outcomes.acknowledged.len()
    );

    // Every acknowledged write is there, read through either store.
    for (key, revision) in &outcomes.acknowledged {
        for store in [&a, &b] {
            let found = store.get(key, None).await.unwrap();
            assert_eq!(
                found.map(|kv| kv.mod_revision),
                Some(*revision),
                "acknowledged write of {key} at {revision}"
            );
        }
    }
    // The watch saw each of them once, in revision order, with nothing else between.
    let last = outcomes.acknowledged.iter().map(|(_, r)| *r).max().unwrap();
    let mut seen = Vec::new();
    while seen.last().is_none_or(|(_, r)| *r < last) {
        let event = tokio::time::timeout(Duration::from_secs(30), watch.next())
            .await
            .expect("the watch fell silent")
            .expect("the watch ended")
            .expect("the watch failed");
        assert_eq!(event.kind, EventKind::Put);
        seen.push((event.kv.key.clone(), event.kv.mod_revision));
    }
    let mut expected = outcomes.acknowledged.clone();
    expected.sort_by_key(|(_, r)| *r);
    // Writes whose answer was lost but that were applied show up in the watch too; they are
    // the writers' failures, and are in the store.
    seen.retain(|(key, _)| expected.iter().any(|(k, _)| k == key));
    assert_eq!(seen, expected);
}

/// Creates keys through `a` and `b` in turn, reading each back through the other store, until
/// `stop`.
async fn write_alternately(a: EtcdStore, b: EtcdStore, stop: Arc<AtomicBool>) -> Outcomes {
    let mut outcomes = Outcomes::default();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let (writer, reader) = if n % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let key = format!("/k{n:06}");
        n += 1;
        match writer.create(&key, Bytes::from(key.clone())).await {
            Ok(revision) => {
                outcomes.acknowledged.push((key.clone(), revision));
                match reader.get(&key, None).await {
                    Ok(Some(kv)) if kv.mod_revision == revision => {}
                    other => outcomes
                        .failures
                        .push((Instant::now(), format!("read of {key}: {other:?}"))),
                }
            }
            Err(e) => outcomes
                .failures
                .push((Instant::now(), format!("create of {key}: {e}"))),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    outcomes
}
