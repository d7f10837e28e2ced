use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{DeleteParams, PostParams};

use super::*;
use crate::cluster_cache::ClusterKey;

fn cluster_of(map: &ConfigMap) -> &str {
    map.labels()
        .get("cluster")
        .map(String::as_str)
        .unwrap_or("")
}

async fn create(api: &Api<ConfigMap>, name: &str, cluster: &str) {
    let mut map = ConfigMap::default();
    map.metadata.name = Some(name.into());
    map.metadata.labels = Some(BTreeMap::from([("cluster".into(), cluster.into())]));
    api.create(&PostParams::default(), &map).await.unwrap();
}

async fn next(
    stream: &mut (impl Stream<Item = Result<Arc<ConfigMap>, watcher::Error>> + Unpin),
) -> String {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("a change within 10 s")
        .expect("the stream goes on")
        .expect("no error")
        .name_any()
}

#[tokio::test]
async fn subscribers_see_what_is_cached_then_every_change_and_share_one_store() {
    let env = corral_testenv::TestEnv::start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    create(&api, "a", "c1").await;

    let caches = Caches::new(env.client.clone());
    let cache = caches.get::<ConfigMap>(cluster_of);
    let mut touched = Box::pin(cache.touched());
    cache.ready().await;
    // The same cache for the same kind.
    let again = caches.get::<ConfigMap>(cluster_of);
    assert!(again.ready().now_or_never().is_some());

    let mut seen = vec![next(&mut touched).await];
    create(&api, "b", "c1").await;
    api.delete("a", &DeleteParams::default()).await.unwrap();
    // "a" may come twice (listed, and in the snapshot of the subscription).
    while seen.iter().filter(|name| *name == "b").count() == 0 || seen.last() != Some(&"a".into()) {
        seen.push(next(&mut touched).await);
    }
    assert_eq!(seen.first().map(String::as_str), Some("a"));

    // A late subscriber starts from what the store holds now; deletions do not reach
    // `applied`.
    corral_testenv::eventually(Duration::from_secs(10), "the cache to drop a", || {
        let left = cache.of_cluster(&ClusterKey::new("default", "c1")).len();
        async move { (left == 1).then_some(()) }
    })
    .await;
    let mut applied = Box::pin(again.applied());
    assert_eq!(next(&mut applied).await, "b");
    let names: Vec<String> = cache
        .of_cluster(&ClusterKey::new("default", "c1"))
        .iter()
        .map(|map| map.name_any())
        .collect();
    assert_eq!(names, ["b"]);
    // One store: the object handed out is the store's.
    let stored = cache
        .store()
        .get(&ObjectRef::new("b").within("default"))
        .unwrap();
    let from_index = cache.of_cluster(&ClusterKey::new("default", "c1"));
    assert!(Arc::ptr_eq(&stored, &from_index[0]));
}

#[tokio::test]
async fn cached_objects_keep_only_the_managed_fields_asked_for() {
    let env = corral_testenv::TestEnv::start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    create(&api, "a", "c1").await;
    let patch = kube::api::Patch::Merge(serde_json::json!({ "data": { "k": "v" } }));
    let params = kube::api::PatchParams {
        field_manager: Some("capi-machineset".into()),
        ..Default::default()
    };
    let stored = api.patch("a", &params, &patch).await.unwrap();
    let managers = |map: &ConfigMap| -> Vec<String> {
        map.managed_fields()
            .iter()
            .filter_map(|entry| entry.manager.clone())
            .collect()
    };
    assert_eq!(managers(&stored).len(), 2, "{:?}", managers(&stored));

    let caches = Caches::new(env.client.clone());
    let cache = caches.get::<ConfigMap>(cluster_of);
    cache.ready().await;
    let cached = cache.of_cluster(&ClusterKey::new("default", "c1"));
    assert_eq!(cached.len(), 1);
    assert!(cached[0].metadata.managed_fields.is_none());
    assert_eq!(cached[0].data, stored.data, "only managedFields go");

    let mut kept = stored.clone();
    trim_managed_fields(&mut kept, &["capi-machineset"]);
    assert_eq!(managers(&kept), ["capi-machineset"]);
}

#[tokio::test]
async fn changed_streams_pass_what_the_subscriber_reads_and_forget_deleted_objects() {
    let env = corral_testenv::TestEnv::start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    create(&api, "a", "c1").await;

    let caches = Caches::new(env.client.clone());
    let cache = caches.get::<ConfigMap>(cluster_of);
    // What the subscribers read: the data, not the labels.
    let read = |map: &ConfigMap| Some(map.data.clone());
    let applied_seen = Arc::new(Fingerprints::new());
    let touched_seen = Arc::new(Fingerprints::new());
    let mut applied = Box::pin(cache.applied_changed(applied_seen.clone(), read));
    let mut touched = Box::pin(cache.touched_changed(touched_seen.clone(), read));
    cache.ready().await;
    assert_eq!(next(&mut applied).await, "a");
    assert_eq!(next(&mut touched).await, "a");

    // A change of what is not read passes neither; one of what is read passes both.
    let patch = |body| kube::api::Patch::Merge(body);
    let params = kube::api::PatchParams::default();
    let labels = serde_json::json!({ "metadata": { "labels": { "other": "x" } } });
    api.patch("a", &params, &patch(labels)).await.unwrap();
    let data = serde_json::json!({ "data": { "k": "v" } });
    api.patch("a", &params, &patch(data)).await.unwrap();
    assert_eq!(next(&mut applied).await, "a");
    assert_eq!(next(&mut touched).await, "a");
    assert!(
        applied.next().now_or_never().is_none(),
        "the label change did not pass"
    );

    // A deletion reaches the touched stream only, and both forget the object.
    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(next(&mut touched).await, "a");
    assert!(touched_seen.is_empty());
    create(&api, "b", "c1").await;
    assert_eq!(next(&mut applied).await, "b");
    assert_eq!(applied_seen.len(), 1, "a was forgotten, b is remembered");
}
