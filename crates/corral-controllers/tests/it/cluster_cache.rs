//! The cluster cache against real API servers (upstream `controllers/clustercache`): one
//! client per workload cluster from its kubeconfig Secret, rebuilt when the Secret changes,
//! and an unreachable cluster that fails fast without holding up another; a cluster whose
//! Secret does not exist yet waits for the Secret watch rather than asking for it again; the
//! same watch serves each Cluster's certificate and kubeconfig Secrets.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use corral_runtime::cluster_cache::{ClusterCache, ClusterCacheConfig, ClusterKey, Error};
use corral_testenv::{TestEnv, eventually};
use futures::FutureExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{TIMEOUT, Workload};

fn kubeconfig_secret(cluster: &str, server: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{cluster}-kubeconfig")),
            labels: Some(BTreeMap::from([(
                "cluster.x-k8s.io/cluster-name".to_owned(),
                cluster.to_owned(),
            )])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "value".to_owned(),
            ByteString(corral_apiserver::kubeconfig::render(server, cluster).into_bytes()),
        )])),
        ..Default::default()
    }
}

async fn workload_with_node(node: &str) -> (TestEnv, Workload) {
    let env = TestEnv::start().await;
    let workload = Workload {
        client: env.client.clone(),
    };
    workload
        .create_node(node, &format!("test://{node}"), true)
        .await;
    (env, workload)
}

fn config() -> ClusterCacheConfig {
    ClusterCacheConfig {
        probe_interval: Duration::from_millis(200),
        probe_timeout: Duration::from_secs(1),
        failure_threshold: 2,
    }
}

#[tokio::test]
async fn cluster_cache_rebuilds_the_client_when_the_kubeconfig_secret_changes() {
    let management = TestEnv::start().await;
    let (first, _) = workload_with_node("first").await;
    let (second, _) = workload_with_node("second").await;
    let secrets: Api<Secret> = Api::namespaced(management.client.clone(), "default");
    secrets
        .create(
            &PostParams::default(),
            &kubeconfig_secret("c", &first.url()),
        )
        .await
        .unwrap();
    let cache = ClusterCache::new(management.client.clone(), config());
    let (stop, stopped) = futures::channel::oneshot::channel::<()>();
    let watcher = tokio::spawn(cache.clone().run(stopped.map(|_| ()).boxed().shared()));
    let key = ClusterKey::new("default", "c");
    let node = cache
        .node_by_provider_id(&key, "test://first")
        .await
        .unwrap();
    assert_eq!(node.unwrap().metadata.name.as_deref(), Some("first"));
    assert!(
        cache
            .health_checking_state(&key)
            .last_probe_success_time
            .is_some()
    );

    secrets
        .patch(
            "c-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "value": ByteString(
                corral_apiserver::kubeconfig::render(&second.url(), "c").into_bytes()
            ) } })),
        )
        .await
        .unwrap();
    eventually(TIMEOUT, "the cache to reach the new server", || async {
        let node = cache
            .node_by_provider_id(&key, "test://second")
            .await
            .ok()??;
        Some(node)
    })
    .await;
    let _ = stop.send(());
    watcher.await.unwrap();
}

#[tokio::test]
async fn an_unreachable_cluster_fails_fast_and_does_not_hold_up_another() {
    let management = TestEnv::start().await;
    let (reachable, _) = workload_with_node("up").await;
    // A port nothing listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let secrets: Api<Secret> = Api::namespaced(management.client.clone(), "default");
    secrets
        .create(
            &PostParams::default(),
            &kubeconfig_secret("down", &format!("http://{closed}")),
        )
        .await
        .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &kubeconfig_secret("up", &reachable.url()),
        )
        .await
        .unwrap();
    let cache = ClusterCache::new(management.client.clone(), config());
    let down = ClusterKey::new("default", "down");
    let up = ClusterKey::new("default", "up");

    let started = Instant::now();
    let Err(error) = cache.client(&down).await else {
        panic!("an unreachable cluster has no client")
    };
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the probe timeout"
    );
    assert!(matches!(error, Error::NotConnected { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("workload cluster default/down is not connected"),
        "{error}"
    );
    // Later calls answer at once, while the cluster's own task keeps trying.
    let started = Instant::now();
    assert!(cache.client(&down).await.is_err());
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(
        cache
            .node_by_provider_id(&up, "test://up")
            .await
            .unwrap()
            .is_some()
    );

    // A cluster with no kubeconfig Secret says so.
    let Err(error) = cache.client(&ClusterKey::new("default", "none")).await else {
        panic!("a cluster without a kubeconfig Secret has no client")
    };
    assert!(
        error
            .to_string()
            .contains("the kubeconfig Secret default/none-kubeconfig does not exist"),
        "{error}"
    );
    eventually(TIMEOUT, "failures to be counted", || async {
        (cache.health_checking_state(&down).consecutive_failures >= 2).then_some(())
    })
    .await;
}

/// A management client that counts its GETs of Secrets named `name`.
fn counting_secret_gets(management: &TestEnv, name: &str) -> (kube::Client, Arc<AtomicUsize>) {
    let gets = Arc::new(AtomicUsize::new(0));
    let counted = gets.clone();
    let path = format!("/secrets/{name}");
    let layer =
        tower::util::MapRequestLayer::new(move |request: http::Request<kube::client::Body>| {
            if request.method() == http::Method::GET && request.uri().path().ends_with(&path) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            request
        });
    let config = kube::Config::new(management.url().parse().unwrap());
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&layer)
        .build();
    (client, gets)
}

#[tokio::test]
async fn a_cluster_waits_for_its_kubeconfig_secret_to_appear_instead_of_asking_again() {
    let management = TestEnv::start().await;
    let (workload, _) = workload_with_node("late").await;
    let (client, gets) = counting_secret_gets(&management, "late-kubeconfig");
    let cache = ClusterCache::new(client, config());
    let (stop, stopped) = futures::channel::oneshot::channel::<()>();
    let watcher = tokio::spawn(cache.clone().run(stopped.map(|_| ()).boxed().shared()));
    eventually(TIMEOUT, "the Secret watch to list", || async {
        cache.kubeconfig_secrets_listed().then_some(())
    })
    .await;

    // Tracked before its Secret exists: one GET says so, then the cluster waits.
    let key = ClusterKey::new("default", "late");
    let Err(error) = cache.client(&key).await else {
        panic!("a cluster without a kubeconfig Secret has no client")
    };
    assert!(
        error
            .to_string()
            .contains("the kubeconfig Secret default/late-kubeconfig does not exist"),
        "{error}"
    );
    assert_eq!(gets.load(Ordering::SeqCst), 1);
    // Five probe intervals: the old cache asked for the Secret on each.
    tokio::time::sleep(config().probe_interval * 5).await;
    assert_eq!(
        gets.load(Ordering::SeqCst),
        1,
        "no GET while waiting for the Secret"
    );
    assert_eq!(cache.health_checking_state(&key).consecutive_failures, 1);

    // The Secret appears: the watch wakes the cluster, which connects from the watched copy.
    let mut connections = cache.subscribe_connections();
    let secrets: Api<Secret> = Api::namespaced(management.client.clone(), "default");
    secrets
        .create(
            &PostParams::default(),
            &kubeconfig_secret("late", &workload.url()),
        )
        .await
        .unwrap();
    let connected = tokio::time::timeout(TIMEOUT, futures::StreamExt::next(&mut connections))
        .await
        .expect("the cluster connects when its Secret appears");
    assert_eq!(connected, Some(key.clone()));
    let node = cache
        .node_by_provider_id(&key, "test://late")
        .await
        .unwrap();
    assert_eq!(node.unwrap().metadata.name.as_deref(), Some("late"));
    assert_eq!(
        gets.load(Ordering::SeqCst),
        1,
        "the kubeconfig came from the watch"
    );

    // A kubeconfig Secret without the cluster-name label, which the watch does not select,
    // is still found with a GET.
    let mut unlabelled = kubeconfig_secret("bare", &workload.url());
    unlabelled.metadata.labels = None;
    secrets
        .create(&PostParams::default(), &unlabelled)
        .await
        .unwrap();
    let bare = ClusterKey::new("default", "bare");
    assert!(
        cache
            .node_by_provider_id(&bare, "test://late")
            .await
            .unwrap()
            .is_some()
    );
    let _ = stop.send(());
    watcher.await.unwrap();
}

/// A labelled Secret named `<cluster>-<suffix>`, with one data key.
fn cluster_secret(cluster: &str, suffix: &str, value: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{cluster}-{suffix}")),
            labels: Some(BTreeMap::from([(
                "cluster.x-k8s.io/cluster-name".to_owned(),
                cluster.to_owned(),
            )])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "tls.crt".to_owned(),
            ByteString(value.as_bytes().to_vec()),
        )])),
        ..Default::default()
    }
}

/// The Secret watch serves a Cluster's certificate and kubeconfig Secrets (`<cluster>-ca`,
/// `-etcd`, `-proxy`, `-sa`, `-kubeconfig`) as they change, and keeps no other labelled
/// Secret (bootstrap data) and no Secret whose name is not its cluster's.
#[tokio::test]
async fn the_secret_watch_serves_a_clusters_certificate_secrets() {
    let management = TestEnv::start().await;
    let cache = ClusterCache::new(management.client.clone(), config());
    let (stop, stopped) = futures::channel::oneshot::channel::<()>();
    let watcher = tokio::spawn(cache.clone().run(stopped.map(|_| ()).boxed().shared()));
    let secrets: Api<Secret> = Api::namespaced(management.client.clone(), "default");
    // One Secret before the watch lists (seen by the list), the others after (by events).
    secrets
        .create(
            &PostParams::default(),
            &cluster_secret("one", "ca", "first"),
        )
        .await
        .unwrap();
    eventually(TIMEOUT, "the Secret watch to list", || async {
        cache.kubeconfig_secrets_listed().then_some(())
    })
    .await;
    // A Secret named like a CA but labelled as another cluster's.
    let mut misnamed = cluster_secret("other", "ca", "misnamed");
    misnamed.metadata.name = Some("three-ca".into());
    secrets
        .create(&PostParams::default(), &misnamed)
        .await
        .unwrap();
    // Then the rest; `two-ca` last.
    for (cluster, suffix) in [
        ("one", "etcd"),
        ("one", "proxy"),
        ("one", "sa"),
        ("one", "kubeconfig"),
        ("one", "control-plane-x7k2p"),
        ("two", "ca"),
    ] {
        secrets
            .create(
                &PostParams::default(),
                &cluster_secret(cluster, suffix, suffix),
            )
            .await
            .unwrap();
    }
    let value = |name: &str| {
        cache.cluster_secret("default", name).map(|secret| {
            String::from_utf8(secret.data.as_ref().unwrap()["tls.crt"].0.clone()).unwrap()
        })
    };
    eventually(TIMEOUT, "the watch to see every Secret", || async {
        value("two-ca").is_some().then_some(())
    })
    .await;
    assert_eq!(value("one-ca").as_deref(), Some("first"));
    for suffix in ["etcd", "proxy", "sa", "kubeconfig"] {
        assert_eq!(value(&format!("one-{suffix}")).as_deref(), Some(suffix));
    }
    assert_eq!(value("one-control-plane-x7k2p"), None, "bootstrap data");
    assert_eq!(value("three-ca"), None, "named after another cluster");
    assert!(cache.cluster_secret("elsewhere", "one-ca").is_none());

    // A change is served, a deletion forgotten.
    let patch = json!({ "data": { "tls.crt": "c2Vjb25k" } });
    secrets
        .patch("one-ca", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    secrets.delete("one-sa", &Default::default()).await.unwrap();
    eventually(
        TIMEOUT,
        "the watch to see the change and the deletion",
        || async {
            (value("one-ca").as_deref() == Some("second") && value("one-sa").is_none())
                .then_some(())
        },
    )
    .await;
    let _ = stop.send(());
    watcher.await.unwrap();
}
