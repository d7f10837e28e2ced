//! Watch semantics as clients rely on them: resume, bookmarks, initial events, 410 in-band.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use crate::support::TestServer;

fn config_map(name: &str, app: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": app}}})).unwrap()
}

fn describe(event: &WatchEvent<ConfigMap>) -> String {
    match event {
        WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.as_deref().unwrap_or("")),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.as_deref().unwrap_or("")),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.as_deref().unwrap_or("")),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {}", e.code),
    }
}

async fn watch_resumes_from_a_resource_version(server: TestServer) {
    let ns = server.namespace("watching").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    let first = api
        .create(&PostParams::default(), &config_map("a", "x"))
        .await
        .unwrap();
    let after_first = first.metadata.resource_version.unwrap();
    api.create(&PostParams::default(), &config_map("b", "x"))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    // Something in another namespace must not show up.
    let other: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    other
        .create(&PostParams::default(), &config_map("elsewhere", "x"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("c", "x"))
        .await
        .unwrap();

    let stream = api
        .watch(&WatchParams::default().timeout(5), &after_first)
        .await
        .unwrap();
    let events: Vec<String> = stream
        .take(4)
        .map_ok(|e| describe(&e))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(events, ["ADDED b", "MODIFIED a", "DELETED b", "ADDED c"]);
}

async fn watch_from_zero_starts_with_the_current_state(server: TestServer) {
    let ns = server.namespace("initial").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    api.create(&PostParams::default(), &config_map("a", "x"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("b", "y"))
        .await
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default().labels("app=x").timeout(10), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(
        describe(&stream.try_next().await.unwrap().unwrap()),
        "ADDED a"
    );
    // A label change that makes an object match is ADDED, one that makes it stop is DELETED.
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "x"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        describe(&stream.try_next().await.unwrap().unwrap()),
        "ADDED b"
    );
    // A change that keeps it matching is MODIFIED (decided from the stored previous labels).
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        describe(&stream.try_next().await.unwrap().unwrap()),
        "MODIFIED b"
    );
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "z"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        describe(&stream.try_next().await.unwrap().unwrap()),
        "DELETED a"
    );
}

async fn send_initial_events_ends_with_a_bookmark(server: TestServer) {
    let ns = server.namespace("streaming").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    api.create(&PostParams::default(), &config_map("a", "x"))
        .await
        .unwrap();
    let params = WatchParams::streaming_lists().timeout(10);
    let mut stream = api.watch(&params, "0").await.unwrap().boxed();
    assert_eq!(
        describe(&stream.try_next().await.unwrap().unwrap()),
        "ADDED a"
    );
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(bookmark) => {
            assert_eq!(bookmark.types.kind, "ConfigMap");
            assert_eq!(bookmark.types.api_version, "v1");
            assert_eq!(
                bookmark
                    .metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
        }
        other => panic!(
            "expected the initial-events-end bookmark, got {}",
            describe(&other)
        ),
    }
}

async fn too_old_resource_version_is_410_in_band(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let old = api
        .create(&PostParams::default(), &config_map("a", "x"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("b", "x"))
        .await
        .unwrap();
    server.server.compact().await.unwrap();
    let raw = server
        .raw(
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2&resourceVersion={}", old.metadata.resource_version.unwrap()),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(raw.status, 200, "never an HTTP 410 at watch start");
    let line: serde_json::Value =
        serde_json::from_slice(raw.body.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(line["type"], "ERROR");
    assert_eq!(line["object"]["code"], 410);
    assert_eq!(line["object"]["reason"], "Expired");
}

async fn timeout_ends_the_watch_with_bookmarks_enabled(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let list = api.list_metadata(&Default::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let raw = server
        .raw("GET", &format!("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&allowWatchBookmarks=true&resourceVersion={rv}"), None, Vec::new())
        .await;
    assert_eq!(raw.status, 200);
    let lines: Vec<serde_json::Value> = raw
        .body
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let last = lines.last().expect("a bookmark before the watch ends");
    assert_eq!(last["type"], "BOOKMARK");
    assert_eq!(last["object"]["kind"], "ConfigMap");
    assert_eq!(last["object"]["apiVersion"], "v1");
    assert_eq!(last["object"]["metadata"]["resourceVersion"], rv);
}

async fn many_watchers_see_every_event_in_order(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let rv = api
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut watchers = Vec::new();
    for _ in 0..20 {
        watchers.push(
            api.watch(&WatchParams::default().timeout(20), &rv)
                .await
                .unwrap()
                .boxed(),
        );
    }
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let api = api.clone();
            tokio::spawn(async move {
                for i in 0..10 {
                    api.create(
                        &PostParams::default(),
                        &config_map(&format!("w{w}-{i}"), "x"),
                    )
                    .await
                    .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let mut reference: Option<Vec<String>> = None;
    for watcher in watchers {
        let seen: Vec<String> = watcher
            .take(40)
            .map_ok(|e| match e {
                WatchEvent::Added(o) => o.metadata.resource_version.unwrap(),
                other => panic!("unexpected {}", describe(&other)),
            })
            .try_collect()
            .await
            .unwrap();
        let revisions: Vec<i64> = seen.iter().map(|r| r.parse().unwrap()).collect();
        assert!(
            revisions.windows(2).all(|w| w[0] < w[1]),
            "in order, no duplicates"
        );
        match &reference {
            None => reference = Some(seen),
            Some(reference) => assert_eq!(reference, &seen, "every watcher sees the same events"),
        }
    }
}

backend_tests!(
    watch_resumes_from_a_resource_version,
    watch_from_zero_starts_with_the_current_state,
    send_initial_events_ends_with_a_bookmark,
    too_old_resource_version_is_410_in_band,
    timeout_ends_the_watch_with_bookmarks_enabled,
    many_watchers_see_every_event_in_order,
);

/// The watch history is bounded by bytes: a watch that resumes from an event it no longer holds
/// gets 410 (never a silent gap); one that resumes from an event it still holds gets every
/// later event, decoded from the stored form as live events are (their resourceVersions, and an
/// object that stopped matching the selector as DELETED with its previous state).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resuming_before_the_history_bounded_by_bytes_is_410() {
    let mut config = corral_apiserver::ServerConfig::default();
    config.watch_cache.history_bytes = 16 * 1024;
    let server = crate::support::start(corral_store::testing::sqlite().await, config).await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let padded = |name: &str, app: &str| {
        let mut config_map = config_map(name, app);
        config_map.data = Some([("padding".to_string(), "x".repeat(1024))].into());
        config_map
    };
    let rv = |config_map: ConfigMap| config_map.metadata.resource_version.unwrap();
    let first = rv(api
        .create(&PostParams::default(), &padded("first", "x"))
        .await
        .unwrap());
    let mut last_filler = String::new();
    for i in 0..40 {
        let filler = padded(&format!("filler-{i}"), "y");
        last_filler = rv(api.create(&PostParams::default(), &filler).await.unwrap());
    }

    // Over 40 KiB of events came after `first`: the 16 KiB history no longer holds it.
    let raw = server
        .raw(
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=2&resourceVersion={first}"),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(raw.status, 200, "never an HTTP 410 at watch start");
    let line: serde_json::Value =
        serde_json::from_slice(raw.body.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(line["type"], "ERROR");
    assert_eq!(line["object"]["code"], 410);
    assert_eq!(line["object"]["reason"], "Expired");

    // The recent past is still served.
    let relabelled = rv(api
        .patch(
            "first",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}})),
        )
        .await
        .unwrap());
    let last = rv(api
        .create(&PostParams::default(), &padded("last", "x"))
        .await
        .unwrap());
    let stream = api
        .watch(
            &WatchParams::default().labels("app=x").timeout(5),
            &last_filler,
        )
        .await
        .unwrap();
    let events: Vec<(String, String)> = stream
        .take(2)
        .map_ok(|event| {
            let resource_version = match &event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                    o.metadata.resource_version.clone().unwrap_or_default()
                }
                _ => String::new(),
            };
            (describe(&event), resource_version)
        })
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        events,
        [
            ("DELETED first".to_string(), relabelled),
            ("ADDED last".to_string(), last)
        ]
    );
}
