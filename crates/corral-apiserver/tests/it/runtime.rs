//! kube-runtime against the server: a reflector that survives compaction by relisting, and a
//! controller that converges and then goes quiet.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

use crate::support::{TestServer, eventually};

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": "demo"}}})).unwrap()
}

async fn reflector_relists_after_compaction(server: TestServer) {
    let ns = server.namespace("reflect").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    api.create(&PostParams::default(), &config_map("before"))
        .await
        .unwrap();

    let (reader, writer) = reflector::store::<ConfigMap>();
    let inits = Arc::new(AtomicUsize::new(0));
    let counted = inits.clone();
    // Compaction ends open watches; the watcher reconnects with its last resourceVersion,
    // which is now too old, gets 410 Expired in-band and relists.
    let stream = watcher(api.clone(), watcher::Config::default())
        .inspect(move |event| {
            if matches!(event, Ok(watcher::Event::Init)) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        })
        .reflect(writer)
        .applied_objects()
        .for_each(|_| async {});
    let task = tokio::spawn(stream);
    reader.wait_until_ready().await.unwrap();
    assert_eq!(reader.state().len(), 1);

    // Writes elsewhere move the revision on; then everything before it is compacted.
    let other: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    other
        .create(&PostParams::default(), &config_map("unrelated"))
        .await
        .unwrap();
    server.server.compact().await.unwrap();
    api.create(&PostParams::default(), &config_map("after"))
        .await
        .unwrap();

    eventually(
        30,
        "the reflector to relist and see both objects",
        || async { (reader.state().len() == 2 && inits.load(Ordering::SeqCst) >= 2).then_some(()) },
    )
    .await;
    task.abort();
}

async fn controller_converges_and_goes_quiet(server: TestServer) {
    let ns = server.namespace("control").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), &ns);
    for i in 0..5 {
        api.create(&PostParams::default(), &config_map(&format!("c{i}")))
            .await
            .unwrap();
    }
    let reconciles = Arc::new(AtomicUsize::new(0));

    struct Context {
        api: Api<ConfigMap>,
        reconciles: Arc<AtomicUsize>,
    }
    #[derive(Debug, thiserror::Error)]
    #[error("patch failed")]
    struct PatchFailed(#[source] kube::Error);

    async fn reconcile(
        object: Arc<ConfigMap>,
        context: Arc<Context>,
    ) -> Result<Action, PatchFailed> {
        context.reconciles.fetch_add(1, Ordering::SeqCst);
        let name = object.metadata.name.clone().unwrap();
        // Idempotent: writes the same thing every time, so the server sees no-op writes.
        context
            .api
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"reconciled": "yes"}})),
            )
            .await
            .map_err(PatchFailed)?;
        Ok(Action::await_change())
    }
    fn error_policy(_: Arc<ConfigMap>, _: &PatchFailed, _: Arc<Context>) -> Action {
        Action::requeue(Duration::from_millis(100))
    }

    let context = Arc::new(Context {
        api: api.clone(),
        reconciles: reconciles.clone(),
    });
    let controller = Controller::new(api.clone(), watcher::Config::default())
        .run(reconcile, error_policy, context)
        .for_each(|_| async {});
    let task = tokio::spawn(controller);

    eventually(30, "every ConfigMap to be reconciled", || async {
        let list = api.list(&Default::default()).await.unwrap();
        list.items
            .iter()
            .all(|c| {
                c.data
                    .as_ref()
                    .is_some_and(|d| d.get("reconciled").is_some_and(|v| v == "yes"))
            })
            .then_some(())
    })
    .await;
    // Converged: each object's write triggers one more reconcile (it changed the object),
    // after which the writes are no-ops and nothing else happens. Wait for a fresh change to
    // flow through, then check the count stopped growing with it.
    api.create(&PostParams::default(), &config_map("late"))
        .await
        .unwrap();
    eventually(30, "the late ConfigMap to be reconciled", || async {
        api.get("late").await.unwrap().data.is_some().then_some(())
    })
    .await;
    let settled = reconciles.load(Ordering::SeqCst);
    let marker = Api::<ConfigMap>::namespaced(server.client.clone(), &ns);
    marker
        .create(&PostParams::default(), &config_map("marker"))
        .await
        .unwrap();
    eventually(30, "the marker to be reconciled", || async {
        marker
            .get("marker")
            .await
            .unwrap()
            .data
            .is_some()
            .then_some(())
    })
    .await;
    let after = reconciles.load(Ordering::SeqCst);
    assert!(
        after - settled <= 3,
        "one new object costs a bounded number of reconciles, not a hot loop ({settled} -> {after})"
    );
    task.abort();
}

/// A server shuts down while clients keep watching: each watch it ends is reopened at once
/// on the client's kept-alive connection (as a reflector does), and shutdown still completes
/// instead of waiting for the client to give up. The simulated workload clusters are stopped
/// this way while the ClusterCache watches their Nodes.
async fn shutdown_completes_while_clients_rewatch(server: TestServer) {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let mut tasks = Vec::new();
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (reader, writer) = reflector::store::<ConfigMap>();
        // With a backoff, as every reflector of Corral has: without one, a watcher retries a
        // refused connection in a loop that never yields, and the test runtime cannot stop.
        let stream = watcher(api.clone(), watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .applied_objects()
            .for_each(|_| async {});
        tasks.push(tokio::spawn(stream));
        readers.push(reader);
    }
    for reader in &readers {
        reader.wait_until_ready().await.unwrap();
    }
    let TestServer { server, .. } = server;
    let shutdown = tokio::time::timeout(Duration::from_secs(60), server.shutdown()).await;
    for task in tasks {
        task.abort();
    }
    assert!(
        shutdown.is_ok(),
        "shutdown waits for watches that clients reopened while it was closing them"
    );
}

/// `server` with its kube-rs client calling the server in-process ([`Server::in_process`]):
/// no socket, the same handler.
///
/// [`Server::in_process`]: corral_apiserver::Server::in_process
fn in_process(mut server: TestServer) -> TestServer {
    server.client = kube::Client::new(server.server.in_process(), "default");
    server
}

async fn in_process_reflector_relists_after_compaction(server: TestServer) {
    reflector_relists_after_compaction(in_process(server)).await;
}

async fn in_process_controller_converges_and_goes_quiet(server: TestServer) {
    controller_converges_and_goes_quiet(in_process(server)).await;
}

/// An in-process client and one over HTTP see the same objects, the same watch events and the
/// same errors: only the wire differs.
async fn in_process_client_answers_as_the_wire_does(server: TestServer) {
    let wire: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    let local_client = kube::Client::new(server.server.in_process(), "default");
    let local: Api<ConfigMap> = Api::namespaced(local_client.clone(), "default");

    // A watch in-process sees what the wire writes, in order.
    let (reader, writer) = reflector::store::<ConfigMap>();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = events.clone();
    let stream = watcher(local.clone(), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .touched_objects()
        .for_each(move |object| {
            if let Ok(object) = object {
                seen.lock().unwrap().push((
                    object.metadata.name.clone().unwrap_or_default(),
                    object.metadata.resource_version.clone().unwrap_or_default(),
                ));
            }
            async {}
        });
    let task = tokio::spawn(stream);
    reader.wait_until_ready().await.unwrap();

    let created = wire
        .create(&PostParams::default(), &config_map("shared"))
        .await
        .unwrap();
    let read_locally = local.get("shared").await.unwrap();
    assert_eq!(
        read_locally, created,
        "a GET in-process answers what the wire stored"
    );

    let patched = local
        .patch(
            "shared",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"from": "in-process"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        wire.get("shared").await.unwrap(),
        patched,
        "the wire reads what an in-process write stored"
    );
    let versions = [
        created.metadata.resource_version.clone().unwrap(),
        patched.metadata.resource_version.clone().unwrap(),
    ];
    eventually(30, "the in-process watch to see both writes", || async {
        let events = events.lock().unwrap();
        let seen: Vec<&str> = events
            .iter()
            .filter(|(name, _)| name == "shared")
            .map(|(_, version)| version.as_str())
            .collect();
        (seen == versions.iter().map(String::as_str).collect::<Vec<_>>()).then_some(())
    })
    .await;

    // Errors come back as the same Status.
    let over_wire = wire.get("missing").await.unwrap_err();
    let in_process = local.get("missing").await.unwrap_err();
    match (over_wire, in_process) {
        (kube::Error::Api(wire), kube::Error::Api(local)) => {
            assert_eq!(local.code, 404);
            assert_eq!(local.code, wire.code);
            assert_eq!(local.reason, wire.reason);
            assert_eq!(local.message, wire.message);
        }
        (wire, local) => panic!("expected two API errors, got {wire:?} and {local:?}"),
    }
    let conflict = local
        .create(&PostParams::default(), &config_map("shared"))
        .await
        .unwrap_err();
    assert!(
        matches!(&conflict, kube::Error::Api(status) if status.code == 409 && status.reason == "AlreadyExists"),
        "{conflict:?}"
    );

    local.delete("shared", &Default::default()).await.unwrap();
    assert!(wire.get_opt("shared").await.unwrap().is_none());
    task.abort();
}

backend_tests!(
    reflector_relists_after_compaction,
    controller_converges_and_goes_quiet,
    shutdown_completes_while_clients_rewatch,
    in_process_reflector_relists_after_compaction,
    in_process_controller_converges_and_goes_quiet,
    in_process_client_answers_as_the_wire_does
);
