//! The part of kube-controller-manager's node lifecycle controller that Cluster API depends
//! on: a Node whose kubelet has not renewed its Lease (nor posted its status) for longer than
//! the grace period (`--node-monitor-grace-period`, 40 s by default) gets `Ready=Unknown`,
//! reason `NodeStatusUnknown`, "Kubelet stopped posting node status." — what a
//! MachineHealthCheck's `unhealthyNodeConditions` act on. Every control plane machine's agent
//! runs it, every 5 s (`--node-monitor-period`); marking is idempotent, so several agents
//! agree without electing one.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams};

/// How often Nodes are checked (kube-controller-manager's `--node-monitor-period`).
const MONITOR_PERIOD: Duration = Duration::from_secs(5);

/// Checks the Nodes until the task is dropped.
pub async fn run(client: kube::Client, grace: Duration) {
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    let mut timer = tokio::time::interval(MONITOR_PERIOD);
    loop {
        timer.tick().await;
        if let Err(error) = check(&nodes, &leases, grace).await {
            tracing::warn!(%error, "Checking the Nodes' heartbeats failed");
        }
    }
}

async fn check(nodes: &Api<Node>, leases: &Api<Lease>, grace: Duration) -> Result<(), kube::Error> {
    let renewed: BTreeMap<String, Timestamp> = leases
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|lease| {
            let renew = lease.spec?.renew_time?.0;
            Some((lease.metadata.name?, renew))
        })
        .collect();
    let now = Timestamp::now();
    for node in nodes.list(&ListParams::default()).await?.items {
        let Some(name) = node.metadata.name.clone() else {
            continue;
        };
        let ready = node
            .status
            .as_ref()
            .and_then(|status| status.conditions.as_ref())
            .and_then(|conditions| conditions.iter().find(|c| c.type_ == "Ready"));
        let Some(ready) = ready else {
            continue;
        };
        if ready.status == "Unknown" {
            continue;
        }
        // The latest sign of life: the Lease's renewal or the status's heartbeat.
        let last = [
            renewed.get(&name).copied(),
            ready.last_heartbeat_time.as_ref().map(|time| time.0),
        ]
        .into_iter()
        .flatten()
        .max();
        let Some(last) = last else {
            continue;
        };
        let silent = now.duration_since(last);
        if silent.as_secs_f64() <= grace.as_secs_f64() {
            continue;
        }
        tracing::info!(node = %name, silent_seconds = silent.as_secs(), "Marking a Node whose kubelet went silent Ready=Unknown");
        let patch = serde_json::json!({
            "status": {
                "conditions": [{
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "NodeStatusUnknown",
                    "message": "Kubelet stopped posting node status.",
                    "lastHeartbeatTime": ready.last_heartbeat_time,
                    "lastTransitionTime": now.to_string(),
                }]
            }
        });
        nodes
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(patch))
            .await?;
    }
    Ok(())
}
