//! Two API servers on one three-member etcd cluster, as an operator runs them, through one
//! member killed, restarted, and then another member frozen (its links as good as cut): the two
//! servers keep answering as one API. Writes go alternately through either server, each is read
//! back and listed through the second; no request may fail once a fault has settled (2 s), no
//! acknowledged write may be lost, and a watch on the second server sees every one of them in
//! order. And `/readyz` follows the members: failing while none answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use corral_apiserver::ServerConfig;
use corral_store::etcd::EtcdStore;
use corral_store::testing::{EtcdCluster, MemberFailure, TestStore};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::json;
use tokio::time::Instant;

use crate::support::{self, TestServer};

/// How long after a fault errors are forgiven: requests in flight when the member went.
const SETTLE: Duration = Duration::from_secs(2);

/// How long writes run after each fault.
const PHASE: Duration = Duration::from_secs(3);

#[derive(Default)]
struct Outcomes {
    /// Created ConfigMaps: name and resourceVersion.
    acknowledged: Vec<(String, u64)>,
    /// Requests answered with an error, and when.
    failures: Vec<(Instant, String)>,
    requests: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_answer_as_one_through_member_loss() {
    let Some(mut cluster) = EtcdCluster::start_or_skip(3).await else {
        return;
    };
    let connect = || async {
        EtcdStore::connect(&cluster.endpoints(), "/registry/")
            .await
            .expect("connecting to the etcd cluster")
    };
    let (store_a, store_b) = (connect().await, connect().await);
    let a = support::start(
        TestStore::new(Arc::new(store_a.clone()), ()),
        ServerConfig::default(),
    )
    .await;
    let b = support::start(
        TestStore::new(Arc::new(store_b.clone()), ()),
        ServerConfig::default(),
    )
    .await;
    a.namespace("ha").await;
    support::eventually(30, "the namespace on the second server", || async {
        (b.raw("GET", "/api/v1/namespaces/ha", None, Vec::new())
            .await
            .status
            == 200)
            .then_some(())
    })
    .await;
    let start = b.get_json("/api/v1/namespaces/ha/configmaps").await["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let configmaps: Api<ConfigMap> = Api::namespaced(b.client.clone(), "ha");
    let mut watch = configmaps
        .watch(&WatchParams::default(), &start)
        .await
        .expect("watching through the second server")
        .boxed();

    let stop = Arc::new(AtomicBool::new(false));
    let (a, b) = (Arc::new(a), Arc::new(b));
    let writer = tokio::spawn(write_alternately(a.clone(), b.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;

    let killed = Instant::now();
    cluster.fail(0, MemberFailure::Killed);
    tokio::time::sleep(PHASE).await;
    cluster.restart(0).await;
    let member = cluster.endpoint(0);
    for store in [&store_a, &store_b] {
        support::eventually(30, "the restarted member back in the rotation", || async {
            store.healthy_endpoints().contains(&member).then_some(())
        })
        .await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let frozen = Instant::now();
    cluster.fail(1, MemberFailure::Frozen);
    tokio::time::sleep(PHASE).await;
    stop.store(true, Ordering::SeqCst);
    let outcomes = writer.await.unwrap();

    let settling = |at: Instant| {
        (at >= killed && at < killed + SETTLE) || (at >= frozen && at < frozen + SETTLE)
    };
    let late: Vec<_> = outcomes
        .failures
        .iter()
        .filter(|(at, _)| !settling(*at))
        .map(|(_, what)| what)
        .collect();
    assert!(
        late.is_empty(),
        "{} of {} requests failed outside the {SETTLE:?} after a fault: {:?}",
        late.len(),
        outcomes.requests,
        &late[..late.len().min(5)]
    );
    assert!(
        outcomes.acknowledged.len() > 20,
        "too few writes to judge: {}",
        outcomes.acknowledged.len()
    );

    // Every acknowledged ConfigMap is listed by the second server at its resourceVersion.
    let listed = b.get_json("/api/v1/namespaces/ha/configmaps").await;
    let listed: std::collections::HashMap<String, u64> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["metadata"]["name"].as_str().unwrap().to_string(),
                item["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
            )
        })
        .collect();
    for (name, version) in &outcomes.acknowledged {
        assert_eq!(
            listed.get(name),
            Some(version),
            "acknowledged ConfigMap {name}"
        );
    }

    // The watch on the second server saw each of them, in resourceVersion order.
    let last = outcomes.acknowledged.iter().map(|(_, v)| *v).max().unwrap();
    let mut seen = Vec::new();
    while seen.last().is_none_or(|(_, v)| *v < last) {
        let event = tokio::time::timeout(Duration::from_secs(30), watch.try_next())
            .await
            .expect("the watch fell silent")
            .expect("the watch failed")
            .expect("the watch ended");
        match event {
            WatchEvent::Added(configmap) => seen.push((
                configmap.metadata.name.unwrap(),
                configmap
                    .metadata
                    .resource_version
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            )),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected watch event {other:?}"),
        }
    }
    let mut expected = outcomes.acknowledged.clone();
    expected.sort_by_key(|(_, v)| *v);
    // Creates whose answer was lost but that were applied are in the watch too.
    seen.retain(|(name, _)| expected.iter().any(|(n, _)| n == name));
    assert_eq!(seen, expected);
}

/// Creates ConfigMaps through `a` and `b` in turn, reads each back through the other server and
/// lists through `b` every tenth, until `stop`.
async fn write_alternately(
    a: Arc<TestServer>,
    b: Arc<TestServer>,
    stop: Arc<AtomicBool>,
) -> Outcomes {
    let mut outcomes = Outcomes::default();
    let mut n = 0;
    let failed = |outcomes: &mut Outcomes, what: String| {
        outcomes.failures.push((Instant::now(), what));
    };
    while !stop.load(Ordering::SeqCst) {
        let (writer, reader) = if n % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let name = format!("x{n}");
        n += 1;
        let body = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"n": name},
        });
        outcomes.requests += 1;
        let created = writer
            .post_json("/api/v1/namespaces/ha/configmaps", &body)
            .await;
        if created.status != 201 {
            let text = String::from_utf8_lossy(&created.body).to_string();
            failed(
                &mut outcomes,
                format!("POST {name}: {} {text}", created.status),
            );
            continue;
        }
        let version: u64 = created.json()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        outcomes.acknowledged.push((name.clone(), version));
        outcomes.requests += 1;
        let path = format!("/api/v1/namespaces/ha/configmaps/{name}");
        let read = reader.raw("GET", &path, None, Vec::new()).await;
        if read.status != 200 {
            let text = String::from_utf8_lossy(&read.body).to_string();
            failed(&mut outcomes, format!("GET {name}: {} {text}", read.status));
        }
        if n % 10 == 0 {
            outcomes.requests += 1;
            let list = b
                .raw("GET", "/api/v1/namespaces/ha/configmaps", None, Vec::new())
                .await;
            if list.status != 200 {
                let text = String::from_utf8_lossy(&list.body).to_string();
                failed(&mut outcomes, format!("LIST: {} {text}", list.status));
            }
        }
    }
    eprintln!(
        "{} requests, {} ConfigMaps acknowledged, {} failures",
        outcomes.requests,
        outcomes.acknowledged.len(),
        outcomes.failures.len()
    );
    outcomes
}

/// `/readyz` and `/healthz` follow the store, as kube-apiserver's `etcd` check: 500 with the
/// check listing while no etcd member answers (what a load balancer's check reads), 200 again
/// once one does; `/livez` stays 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_etcd() {
    let Some(mut cluster) = EtcdCluster::start_or_skip(1).await else {
        return;
    };
    let store = EtcdStore::connect(&cluster.endpoints(), "/registry/")
        .await
        .expect("connecting to etcd");
    let server = support::start(TestStore::new(Arc::new(store), ()), ServerConfig::default()).await;
    for path in ["/readyz", "/healthz", "/livez"] {
        assert_eq!(server.raw("GET", path, None, Vec::new()).await.status, 200);
    }
    cluster.fail(0, MemberFailure::Killed);
    let raw = support::eventually(10, "/readyz failing", || async {
        let raw = server.raw("GET", "/readyz", None, Vec::new()).await;
        (raw.status == 500).then_some(raw)
    })
    .await;
    assert_eq!(
        String::from_utf8_lossy(&raw.body),
        "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n"
    );
    assert_eq!(
        server.raw("GET", "/healthz", None, Vec::new()).await.status,
        500
    );
    assert_eq!(
        server.raw("GET", "/livez", None, Vec::new()).await.status,
        200
    );
    cluster.restart(0).await;
    support::eventually(30, "/readyz answering again", || async {
        (server.raw("GET", "/readyz", None, Vec::new()).await.status == 200).then_some(())
    })
    .await;
}
