//! Acknowledged writes survive `kill -9` of the server.
//!
//! Concurrent writers create ConfigMaps and record every create the server acknowledged,
//! with the resourceVersion it returned; the server is killed with SIGKILL while requests are
//! in flight, then restarted on the same data dir (and, for etcd, the same etcd, which keeps
//! running). Creates that were in flight at the kill may or may not have landed; acknowledged
//! ones must all be there, unchanged, and revisions must go on growing from where they were.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};

use crate::support::TestEnv;

backend_tests!(acknowledged_writes_survive_kill_9);

/// Concurrent writers.
const WRITERS: usize = 16;
/// Acknowledged creates to wait for before the kill.
const ACKNOWLEDGED_BEFORE_KILL: usize = 1000;
/// How long the load may take to reach that count, and the writers to notice the kill.
const LOAD_DEADLINE: Duration = Duration::from_secs(120);

const NAMESPACE: &str = "default";

async fn acknowledged_writes_survive_kill_9(env: TestEnv) {
    let server = env.start_server().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), NAMESPACE);

    // Name -> resourceVersion of every acknowledged create.
    let acknowledged = Arc::new(Mutex::new(BTreeMap::<String, String>::new()));
    let (count_sender, mut count) = tokio::sync::watch::channel(0usize);
    let count_sender = Arc::new(count_sender);
    let killing = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let configmaps = configmaps.clone();
        let acknowledged = acknowledged.clone();
        let count_sender = count_sender.clone();
        let killing = killing.clone();
        writers.push(tokio::spawn(async move {
            for sequence in 0.. {
                let name = format!("load-{writer}-{sequence}");
                let object = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..ObjectMeta::default()
                    },
                    data: Some(BTreeMap::from([("sequence".into(), sequence.to_string())])),
                    ..ConfigMap::default()
                };
                match configmaps.create(&PostParams::default(), &object).await {
                    Ok(created) => {
                        let version = created
                            .metadata
                            .resource_version
                            .expect("a created object has a resourceVersion");
                        acknowledged.lock().unwrap().insert(name, version);
                        count_sender.send_modify(|count| *count += 1);
                    }
                    // Failures are what the kill looks like from here; the writer stops.
                    Err(_) if killing.load(Ordering::SeqCst) => return,
                    Err(error) => panic!("create {name} failed before the kill: {error}"),
                }
            }
        }));
    }

    tokio::time::timeout(
        LOAD_DEADLINE,
        count.wait_for(|count| *count >= ACKNOWLEDGED_BEFORE_KILL),
    )
    .await
    .unwrap_or_else(|_| {
        panic!("fewer than {ACKNOWLEDGED_BEFORE_KILL} creates acknowledged in {LOAD_DEADLINE:?}")
    })
    .expect("the writers are running");
    killing.store(true, Ordering::SeqCst);
    server.kill_9();
    for writer in writers {
        tokio::time::timeout(LOAD_DEADLINE, writer)
            .await
            .expect("a writer noticed the kill")
            .expect("a writer ended without failing");
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    let max_acknowledged = acknowledged
        .values()
        .map(|version| revision(version))
        .max()
        .expect("creates were acknowledged");

    let server = env.start_server().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), NAMESPACE);
    let list = configmaps
        .list(&ListParams::default())
        .await
        .expect("listing after the restart");
    let list_revision = revision(
        list.metadata
            .resource_version
            .as_deref()
            .expect("a list has a resourceVersion"),
    );
    let present: BTreeMap<String, String> = list
        .items
        .iter()
        .filter_map(|item| {
            Some((
                item.metadata.name.clone()?,
                item.metadata.resource_version.clone()?,
            ))
        })
        .collect();
    let lost: Vec<_> = acknowledged
        .iter()
        .filter(|(name, version)| present.get(*name) != Some(*version))
        .map(|(name, version)| format!("{name}@{version} (now {:?})", present.get(name)))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged creates are missing or changed after kill -9: {lost:?}",
        lost.len(),
        acknowledged.len()
    );
    assert!(
        list_revision >= max_acknowledged,
        "the list resourceVersion {list_revision} is below an acknowledged write's {max_acknowledged}"
    );
    let max_present = present
        .values()
        .map(|version| revision(version))
        .max()
        .unwrap_or(0);
    assert!(
        list_revision >= max_present,
        "the list resourceVersion {list_revision} is below an object's {max_present}"
    );

    // New writes get larger resourceVersions than anything from before the kill.
    let mut previous = list_revision;
    for name in ["after-restart-1", "after-restart-2"] {
        let object = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let created = configmaps
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating {name} after the restart: {e}"));
        let version = revision(created.metadata.resource_version.as_deref().unwrap());
        assert!(
            version > previous,
            "{name} got resourceVersion {version}, not above {previous}"
        );
        previous = version;
    }
    let (name, _) = acknowledged.iter().next().unwrap();
    let patched = configmaps
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"updated": "after-restart"}})),
        )
        .await
        .unwrap_or_else(|e| panic!("updating {name} after the restart: {e}"));
    let version = revision(patched.metadata.resource_version.as_deref().unwrap());
    assert!(
        version > previous,
        "updating {name} gave resourceVersion {version}, not above {previous}"
    );
    eprintln!(
        "{} creates acknowledged before kill -9, {} ConfigMaps found after the restart",
        acknowledged.len(),
        present.len()
    );
}

/// A resourceVersion as the number it is on this server (a store revision).
fn revision(version: &str) -> u64 {
    version
        .parse()
        .unwrap_or_else(|_| panic!("resourceVersion {version:?} is not a number"))
}
