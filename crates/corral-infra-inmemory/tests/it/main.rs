//! corral-infra-inmemory's integration tests: the checked-in CRDs and their comparison with
//! upstream's, manifests written for upstream's in-memory backend against a real API server, the
//! simulated cloud, the controllers against a management plane, and end to end with the core
//! controllers (`e2e.rs`).

mod cloud;
mod controllers;
mod crds;
mod e2e;
mod manifests;
mod remote;
mod upstream;

use std::future::Future;
use std::time::Duration;

use corral_api::testing::{normalize_numbers, schema_of};
use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

/// How long a test waits for the simulation or the controllers: long enough for a loaded
/// machine, short enough to fail a stuck test in reasonable time.
const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `check` until it returns `Some`.
async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    corral_testenv::eventually(PATIENCE, what, check).await
}

/// The status of a Node's Ready condition.
fn node_ready(node: &Node) -> Option<String> {
    let conditions = node.status.as_ref()?.conditions.as_ref()?;
    let ready = conditions
        .iter()
        .find(|condition| condition.type_ == "Ready")?;
    Some(ready.status.clone())
}

/// The generated CRDs as JSON, each with the file name upstream gives it
/// (`<group>_<plural>.yaml`).
fn generated_crds() -> Vec<(String, Value)> {
    corral_infra_inmemory::crds()
        .into_iter()
        .map(|crd| {
            let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
            (file, normalize_numbers(serde_json::to_value(crd).unwrap()))
        })
        .collect()
}
