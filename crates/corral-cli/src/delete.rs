//! `corral delete cluster NAME [--wait]`: deletes a Cluster; the Cluster controller deletes
//! everything that belongs to it first (upstream's deletion order: workers, control plane,
//! infrastructure), then lets the Cluster go.

use std::time::Duration;

use kube::api::{Api, DeleteParams, ListParams};

use crate::{Connection, Error};

/// Deletes the Cluster; returns kubectl's line.
pub async fn delete_cluster(
    connection: &Connection,
    namespace: &str,
    name: &str,
) -> Result<String, Error> {
    let clusters: Api<corral_api::Cluster> = Api::namespaced(connection.client.clone(), namespace);
    match clusters.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(format!("cluster.cluster.x-k8s.io/{name} deleted")),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(Error::NotFound {
            kind: "Cluster".into(),
            name: name.into(),
            namespace: namespace.into(),
            hint: "; `corral get clusters -A` lists the clusters".into(),
        }),
        Err(error) => Err(connection.fail(format!("deleting Cluster {name}"), error)),
    }
}

/// Waits until the Cluster is gone, calling `progress` with the number of its Machines left
/// whenever it changes; fails after `timeout`.
pub async fn wait_until_deleted(
    connection: &Connection,
    namespace: &str,
    name: &str,
    timeout: Duration,
    mut progress: impl FnMut(usize),
) -> Result<(), Error> {
    let clusters: Api<corral_api::Cluster> = Api::namespaced(connection.client.clone(), namespace);
    let machines: Api<corral_api::Machine> = Api::namespaced(connection.client.clone(), namespace);
    let selector = format!("{}={name}", corral_api::labels::CLUSTER_NAME);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = None;
    loop {
        let cluster = clusters
            .get_opt(name)
            .await
            .map_err(|e| connection.fail(format!("reading Cluster {name}"), e))?;
        if cluster.is_none() {
            return Ok(());
        }
        let left = machines
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| connection.fail(format!("listing the Machines of {name}"), e))?
            .items
            .len();
        if last != Some(left) {
            progress(left);
            last = Some(left);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "Cluster {namespace}/{name} still exists after {}s ({left} Machines left); see `corral describe cluster {name} --show-conditions Cluster`",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
