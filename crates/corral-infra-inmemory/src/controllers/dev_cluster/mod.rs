//! The DevCluster controller: one simulated workload cluster per DevCluster (upstream
//! `devcluster_controller.go` and `backends/inmemory/inmemorycluster_backend.go`).
//!
//! Once the Cluster owns the DevCluster, the controller makes sure the cloud runs the cluster's
//! endpoint, records it in `spec.controlPlaneEndpoint` (only when empty, as upstream does),
//! copies the failure domains into the status and marks the infrastructure provisioned. It also
//! writes the `<cluster>-kubeconfig` Secret (see [`kubeconfig`]). Deleting the DevCluster stops
//! the endpoint, with every VM still in it, before the finalizer goes.

mod kubeconfig;

use std::sync::Arc;

use corral_api::Cluster;
use corral_runtime::changes::Fingerprints;
use corral_runtime::shared::trigger_own;
use futures::StreamExt;
use futures::future::Shared;
use futures::stream::SelectAll;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, trigger_with};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::json;

use super::conditions::{self, Desired};
use super::{
    Context, Error, get_opt, owner_named, paused, replaced_by_own_write, set_finalizer, write_spec,
    write_status,
};
use crate::api::conditions::{PAUSED, READY, reasons};
use crate::api::{DevCluster, DevClusterStatus, GROUP, finalizers};
use crate::cloud::{ClusterKey, WorkloadEndpoint};

pub(super) async fn run(
    context: Arc<Context>,
    shutdown: Shared<impl std::future::Future<Output = ()> + Send + 'static>,
) {
    let client = context.client.clone();
    restore_endpoints(&context, &Api::all(client.clone())).await;
    let dev_cluster_cache = context.caches.get(super::cluster_label::<DevCluster>);
    let dev_cluster_store = dev_cluster_cache.store();
    let dev_clusters = dev_cluster_cache.applied();
    let cluster_cache = context.caches.clusters();
    let cluster_store = cluster_cache.store();
    // A Cluster's status changes many times while it comes up; a DevCluster depends on its
    // identity (the kubeconfig Secret's owner), paused, its infrastructure reference and
    // control plane reference, and its deletion.
    let clusters = cluster_cache.applied_changed(Arc::new(Fingerprints::new()), |cluster| {
        Some((
            cluster.metadata.uid.clone(),
            cluster.spec.paused,
            cluster
                .annotations()
                .contains_key(corral_api::annotations::PAUSED),
            serde_json::to_string(&cluster.spec.infrastructure_ref).unwrap_or_default(),
            cluster.spec.control_plane_ref.is_some(),
            cluster.metadata.deletion_timestamp.is_some(),
        ))
    });
    let mut queue = SelectAll::new();
    queue.push(trigger_own(dev_clusters).boxed());
    queue.push(
        trigger_with(clusters, move |cluster: Arc<Cluster>| {
            cluster_to_dev_cluster(&cluster)
        })
        .boxed(),
    );
    super::run_applier(
        dev_cluster_store,
        queue.boxed(),
        context,
        shutdown,
        &super::DEV_CLUSTER_RECONCILES,
        move |dev_cluster, context| reconcile(dev_cluster, context, cluster_store.clone()),
    )
    .await;
}

/// Recreates, before anything else runs, the endpoints that existing DevClusters recorded, on
/// their ports (upstream's in-memory backend does the same in its `HotRestart`). Otherwise a
/// new DevCluster reconciled first could be given the port of an existing one, whose recorded
/// endpoint could then never come back. Best effort: what fails here is retried by the
/// reconciles.
async fn restore_endpoints(context: &Context, dev_clusters: &Api<DevCluster>) {
    let list = match dev_clusters.list(&Default::default()).await {
        Ok(list) => list,
        Err(error) => {
            tracing::debug!(%error, "Listing DevClusters to restore their endpoints failed");
            return;
        }
    };
    for dev_cluster in list {
        let endpoint = &dev_cluster.spec.control_plane_endpoint;
        let port = endpoint
            .port
            .filter(|_| endpoint.host.as_deref() == Some(LOOPBACK))
            .and_then(|port| u16::try_from(port).ok());
        let owner = owner_named(&dev_cluster, "Cluster");
        let (Some(port), Some(cluster), None, Some(_)) = (
            port,
            owner,
            dev_cluster.metadata.deletion_timestamp.as_ref(),
            dev_cluster.spec.backend.in_memory.as_ref(),
        ) else {
            continue;
        };
        let key = ClusterKey {
            namespace: dev_cluster.namespace().unwrap_or_default(),
            name: cluster,
        };
        tracing::info!(cluster = %key, port, "Restoring simulated workload cluster endpoint");
        if let Err(error) = context.cloud.ensure_cluster(&key, Some(port)).await {
            tracing::warn!(cluster = %key, error = %super::error_chain(&error), "Restoring a simulated endpoint failed");
        }
    }
}

/// The host of the simulated endpoints.
const LOOPBACK: &str = "127.0.0.1";

/// A Cluster's change concerns the DevCluster it references (upstream
/// `util.ClusterToInfrastructureMapFunc`).
fn cluster_to_dev_cluster(cluster: &Cluster) -> Option<ObjectRef<DevCluster>> {
    let reference = cluster.spec.infrastructure_ref.as_ref()?;
    (reference.api_group == GROUP && reference.kind == "DevCluster")
        .then(|| ObjectRef::new(&reference.name).within(&cluster.namespace().unwrap_or_default()))
}

/// Reconciles one DevCluster (upstream `DevClusterReconciler.Reconcile`): the finalizer, the
/// owner Cluster, pause, then deletion or provisioning.
#[tracing::instrument(skip_all, fields(dev_cluster = %dev_cluster.name_any(), namespace = dev_cluster.namespace(), cluster = tracing::field::Empty))]
async fn reconcile(
    dev_cluster: Arc<DevCluster>,
    context: Arc<Context>,
    clusters_cache: Store<Cluster>,
) -> Result<Action, Error> {
    if replaced_by_own_write(&context, dev_cluster.as_ref()) {
        return Ok(Action::await_change());
    }
    let namespace = dev_cluster.namespace().unwrap_or_default();
    let api: Api<DevCluster> = Api::namespaced(context.client.clone(), &namespace);
    let deleting = dev_cluster.metadata.deletion_timestamp.is_some();

    // The finalizer first, so that nothing is created in the cloud that a deletion could miss
    // (upstream adds it before anything else too).
    if !deleting
        && !dev_cluster
            .finalizers()
            .iter()
            .any(|f| f == finalizers::DEV_CLUSTER)
    {
        set_finalizer(&context, &api, &dev_cluster, finalizers::DEV_CLUSTER, true).await?;
        return Ok(Action::await_change());
    }

    let Some(cluster_name) = owner_named(dev_cluster.as_ref(), "Cluster") else {
        if deleting {
            // Nothing was created without an owner.
            set_finalizer(&context, &api, &dev_cluster, finalizers::DEV_CLUSTER, false).await?;
        } else {
            tracing::info!("Waiting for the Cluster controller to set the owner reference");
        }
        return Ok(Action::await_change());
    };
    let key = ClusterKey {
        namespace: namespace.clone(),
        name: cluster_name.clone(),
    };
    let clusters: Api<Cluster> = Api::namespaced(context.client.clone(), &namespace);
    // From the watch when it has the Cluster; the Cluster exists before it owns its DevCluster,
    // but the watch may not show it yet.
    let cached = clusters_cache.get(&ObjectRef::new(&cluster_name).within(&namespace));
    let cluster = match cached {
        Some(cluster) => Some(cluster.as_ref().clone()),
        None => get_opt(&clusters, &cluster_name).await?,
    };
    let span = tracing::Span::current();
    span.record("cluster", cluster_name.as_str());

    let mut status = dev_cluster.status.clone().unwrap_or_default();
    let generation = dev_cluster.metadata.generation;
    if let Some(message) = paused(cluster.as_ref(), dev_cluster.as_ref(), "DevCluster") {
        conditions::set(
            &mut status.conditions,
            &Desired::new(PAUSED, true, reasons::PAUSED).with_message(message),
            generation,
        );
        patch_status(&context, &api, &dev_cluster, &status).await?;
        return Ok(Action::await_change());
    }
    conditions::set(
        &mut status.conditions,
        &Desired::new(PAUSED, false, reasons::NOT_PAUSED),
        generation,
    );

    if deleting {
        return reconcile_delete(&context, &api, &dev_cluster, &key).await;
    }
    let Some(cluster) = cluster else {
        tracing::info!(cluster = %key, "Waiting for the owner Cluster to exist");
        return Ok(Action::await_change());
    };
    reconcile_normal(&context, &api, &dev_cluster, &key, &cluster, status).await
}

/// Stops the simulated workload cluster, with every VM in it, then removes the finalizer.
async fn reconcile_delete(
    context: &Context,
    api: &Api<DevCluster>,
    dev_cluster: &DevCluster,
    key: &ClusterKey,
) -> Result<Action, Error> {
    tracing::info!(cluster = %key, "Deleting simulated workload cluster");
    context
        .cloud
        .delete_cluster(key)
        .await
        .map_err(Error::Cloud)?;
    set_finalizer(context, api, dev_cluster, finalizers::DEV_CLUSTER, false).await?;
    Ok(Action::await_change())
}

/// Provisions the DevCluster of an existing Cluster: checks the backend, ensures the endpoint
/// in the cloud, records it (spec) and the provisioned status, and writes the kubeconfig.
async fn reconcile_normal(
    context: &Context,
    api: &Api<DevCluster>,
    dev_cluster: &DevCluster,
    key: &ClusterKey,
    cluster: &Cluster,
    mut status: DevClusterStatus,
) -> Result<Action, Error> {
    let generation = dev_cluster.metadata.generation;
    if dev_cluster.spec.backend.in_memory.is_none() {
        // The schema refuses such objects; one stored before it did is reported, not acted on.
        conditions::set(
            &mut status.conditions,
            &Desired::new(READY, false, reasons::NOT_READY).with_message(
                "spec.backend.inMemory is not set; Corral's in-memory provider supports no other backend",
            ),
            generation,
        );
        patch_status(context, api, dev_cluster, &status).await?;
        return Ok(Action::await_change());
    }

    let endpoint = ensure_endpoint(context, api, dev_cluster, key, &mut status).await?;
    let recorded = &dev_cluster.spec.control_plane_endpoint;

    // The endpoint is in the spec, the rest in the status: two writes, the status one
    // against the generation the first produced.
    let mut base = dev_cluster.resource_version();
    let mut generation = generation;
    if !recorded.is_valid() {
        tracing::info!(host = %endpoint.host, port = endpoint.port, "Setting the control plane endpoint");
        let patch = json!({
            "spec": { "controlPlaneEndpoint": { "host": endpoint.host, "port": endpoint.port } }
        });
        let written = write_spec(context, api, dev_cluster, patch, base.as_deref()).await?;
        generation = written.metadata.generation;
        base = written.resource_version();
    }

    kubeconfig::ensure(context, cluster, &endpoint).await?;

    let first_time = status.initialization.provisioned != Some(true);
    status.initialization.provisioned = Some(true);
    status.failure_domains = dev_cluster
        .spec
        .backend
        .in_memory
        .as_ref()
        .map(|in_memory| in_memory.failure_domains.clone())
        .unwrap_or_default();
    conditions::set(
        &mut status.conditions,
        &Desired::new(READY, true, reasons::READY),
        generation,
    );
    conditions::observe(&mut status.conditions, generation);
    write_status(
        context,
        api,
        dev_cluster,
        dev_cluster.status.as_ref(),
        &status,
        base.as_deref(),
    )
    .await?;
    if first_time {
        // No Event: upstream's provider records none, and the endpoint is in the spec.
        tracing::info!(cluster = %key, url = %endpoint.url(), "The simulated workload cluster answers");
    }
    Ok(Action::requeue(super::RESYNC))
}

/// Makes sure the cloud runs the cluster's endpoint, recreating a lost one where it was so
/// that the recorded endpoint stays true; a cloud error is reported in the status and a
/// Warning Event, and returned.
async fn ensure_endpoint(
    context: &Context,
    api: &Api<DevCluster>,
    dev_cluster: &DevCluster,
    key: &ClusterKey,
    status: &mut DevClusterStatus,
) -> Result<WorkloadEndpoint, Error> {
    let recorded = &dev_cluster.spec.control_plane_endpoint;
    let port = recorded
        .port
        .filter(|_| recorded.host.as_deref() == Some(LOOPBACK))
        .and_then(|port| u16::try_from(port).ok());
    let error = match context.cloud.ensure_cluster(key, port).await {
        Ok(endpoint) => return Ok(endpoint),
        Err(error) => error,
    };
    let message = super::error_chain(&error);
    conditions::set(
        &mut status.conditions,
        &Desired::new(READY, false, reasons::CLOUD_ERROR).with_message(message.clone()),
        dev_cluster.metadata.generation,
    );
    patch_status(context, api, dev_cluster, status).await?;
    context
        .event(
            dev_cluster,
            EventType::Warning,
            reasons::CLOUD_ERROR,
            message,
        )
        .await;
    Err(Error::Cloud(error))
}

/// Writes the status when it changed.
async fn patch_status(
    context: &Context,
    api: &Api<DevCluster>,
    dev_cluster: &DevCluster,
    status: &DevClusterStatus,
) -> Result<(), Error> {
    write_status(
        context,
        api,
        dev_cluster,
        dev_cluster.status.as_ref(),
        status,
        dev_cluster.resource_version().as_deref(),
    )
    .await
    .map(|_| ())
}
