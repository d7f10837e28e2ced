//! The PluginCluster controller: once a Cluster owns the PluginCluster, ReconcileCluster until
//! the plugin says ready (polled with a backoff), then `status.initialization.provisioned`,
//! the failure domains and, when the spec has none, the control plane endpoint the plugin
//! answered (contract); on deletion DeleteCluster until deleted, then the finalizer goes.

use std::sync::Arc;

use corral_api::{ApiEndpoint, Cluster, FailureDomain};
use corral_provider_sdk::v1;
use corral_runtime::changes::Fingerprints;
use corral_runtime::patch::Part;
use corral_runtime::shared::trigger_own;
use futures::StreamExt;
use futures::stream::SelectAll;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, trigger_with};
use kube::runtime::reflector::ObjectRef;

use super::{
    Context, Error, call_failed, not_ready, owner, paused, plugin_call, set_finalizer, set_ready,
    write,
};
use crate::api::conditions::reasons;
use crate::api::{GROUP, PluginCluster, finalizers};

pub(super) async fn run(context: Arc<Context>, shutdown: corral_runtime::Shutdown) {
    let cache = context.caches.get(super::cluster_label::<PluginCluster>);
    let clusters = context.caches.clusters();
    let mut queue = SelectAll::new();
    queue.push(trigger_own(cache.applied()).boxed());
    // A Cluster's change (paused, deletion) concerns its PluginCluster.
    queue.push(
        trigger_with(
            clusters.touched_changed(Arc::new(Fingerprints::new()), |cluster| {
                Some((
                    cluster.metadata.uid.clone(),
                    cluster.spec.paused,
                    corral_runtime::has_paused_annotation(cluster),
                    cluster.metadata.deletion_timestamp.is_some(),
                ))
            }),
            |cluster: Arc<Cluster>| {
                let reference = cluster.spec.infrastructure_ref.as_ref()?;
                (reference.api_group == GROUP && reference.kind == "PluginCluster").then(|| {
                    ObjectRef::new(&reference.name).within(&cluster.namespace().unwrap_or_default())
                })
            },
        )
        .boxed(),
    );
    let config = context.config.clone();
    corral_runtime::run_controller(
        "plugin-cluster",
        context,
        &config,
        cache.store(),
        queue.boxed(),
        shutdown,
        reconcile,
    )
    .await;
}

/// What every step of one reconcile works on.
struct Scope<'a> {
    context: &'a Context,
    api: Api<PluginCluster>,
    /// The PluginCluster's uid: the key of its backoffs.
    key: String,
}

/// Reconciles one PluginCluster: its owner Cluster, pause, the plugin, then deletion or
/// ReconcileCluster, each a step below.
async fn reconcile(object: Arc<PluginCluster>, context: Arc<Context>) -> Result<Action, Error> {
    let namespace = object.namespace().unwrap_or_default();
    let scope = Scope {
        context: &context,
        api: Api::namespaced(context.client.clone(), &namespace),
        key: object.metadata.uid.clone().unwrap_or_default(),
    };
    let api = &scope.api;
    let Some((cluster_name, cluster_uid)) = owner(object.as_ref(), "Cluster") else {
        if object.metadata.deletion_timestamp.is_some() {
            set_finalizer(api, &object, finalizers::PLUGIN_CLUSTER, false).await?;
        }
        tracing::info!("Waiting for the Cluster controller to set the owner reference");
        return Ok(Action::await_change());
    };
    let cluster = context
        .caches
        .clusters()
        .get(&ObjectRef::new(&cluster_name).within(&namespace));
    if paused(cluster.as_deref(), object.as_ref()) {
        return Ok(Action::await_change());
    }
    let reference = Some(v1::ClusterRef {
        namespace,
        name: cluster_name.clone(),
        uid: cluster_uid,
    });
    let config = super::plugin_machine::config_struct(object.spec.config.as_ref());

    let call = match plugin_call(&context, api, &object, &object.spec.plugin).await? {
        Ok(call) => call,
        Err(action) => return Ok(action),
    };
    if object.metadata.deletion_timestamp.is_some() {
        let request = v1::DeleteClusterRequest {
            cluster: reference,
            config,
        };
        return reconcile_delete(&scope, &object, &call.client, &cluster_name, request).await;
    }
    let request = v1::ReconcileClusterRequest {
        cluster: reference,
        config,
    };
    reconcile_normal(&scope, object, &call.client, request).await
}

/// Calls DeleteCluster until the plugin says the infrastructure is gone, then removes the
/// finalizer; nothing to do without it.
async fn reconcile_delete(
    scope: &Scope<'_>,
    object: &PluginCluster,
    client: &corral_provider_sdk::Client,
    cluster_name: &str,
    request: v1::DeleteClusterRequest,
) -> Result<Action, Error> {
    let Scope { context, api, key } = scope;
    if !object
        .finalizers()
        .iter()
        .any(|f| f == finalizers::PLUGIN_CLUSTER)
    {
        return Ok(Action::await_change());
    }
    match client.delete_cluster(request).await {
        Ok(answer) if answer.deleted => {
            tracing::info!(cluster = %cluster_name, "The plugin deleted the cluster's infrastructure");
            context.poll.succeed(key);
            context.failures.succeed(key);
            set_finalizer(api, object, finalizers::PLUGIN_CLUSTER, false).await?;
            Ok(Action::await_change())
        }
        Ok(_) => {
            not_ready(
                api,
                object,
                reasons::DELETING,
                format!(
                    "ProviderPlugin {} is deleting the cluster's infrastructure",
                    object.spec.plugin
                ),
                Action::requeue(context.poll.fail(key)),
            )
            .await
        }
        Err(error) => call_failed(context, api, object, key, &object.spec.plugin, &error).await,
    }
}

/// Adds the finalizer (it guards what the plugin will hold, so it is there before the first
/// call), calls ReconcileCluster and records the answer: the endpoint in the spec when it has
/// none (contract: set once), then the status; polls until the plugin says ready.
async fn reconcile_normal(
    scope: &Scope<'_>,
    object: Arc<PluginCluster>,
    client: &corral_provider_sdk::Client,
    request: v1::ReconcileClusterRequest,
) -> Result<Action, Error> {
    let Scope { context, api, key } = scope;
    let generation = object.metadata.generation;
    let object = Arc::new(set_finalizer(api, &object, finalizers::PLUGIN_CLUSTER, true).await?);
    let mut after = (*object).clone();
    let answer = match client.reconcile_cluster(request).await {
        Ok(answer) => answer,
        Err(error) => {
            return call_failed(context, api, &object, key, &object.spec.plugin, &error).await;
        }
    };
    context.failures.succeed(key);
    set_cluster_status(
        after.status.get_or_insert_with(Default::default),
        &answer,
        &object.spec.plugin,
        generation,
    );
    // The endpoint the plugin chose, unless the spec has one (contract: set once).
    let endpoint = answer.control_plane_endpoint.unwrap_or_default();
    let object = if !endpoint.host.is_empty() && !after.spec.control_plane_endpoint.is_valid() {
        let mut with_endpoint = (*object).clone();
        with_endpoint.spec.control_plane_endpoint = ApiEndpoint {
            host: Some(endpoint.host),
            port: Some(endpoint.port),
        };
        after.spec.control_plane_endpoint = with_endpoint.spec.control_plane_endpoint.clone();
        Arc::new(write(api, &object, &with_endpoint, Part::Main).await?)
    } else {
        object
    };
    after.metadata = object.metadata.clone();
    write(api, &object, &after, Part::Status).await?;
    if answer.ready {
        context.poll.succeed(key);
        Ok(Action::requeue(super::RESYNC))
    } else {
        Ok(Action::requeue(context.poll.fail(key)))
    }
}

/// The status a ReconcileCluster answer gives: the failure domains (sorted by name), and
/// provisioned with Ready True once the plugin says ready, else Ready False with its message.
fn set_cluster_status(
    status: &mut crate::api::PluginClusterStatus,
    answer: &v1::ReconcileClusterResponse,
    plugin: &str,
    generation: Option<i64>,
) {
    status.failure_domains = answer
        .failure_domains
        .iter()
        .map(|domain| FailureDomain {
            name: domain.name.clone(),
            control_plane: Some(domain.control_plane),
            ..Default::default()
        })
        .collect();
    status.failure_domains.sort_by(|a, b| a.name.cmp(&b.name));
    if answer.ready {
        status.initialization.provisioned = Some(true);
        set_ready(&mut status.conditions, true, reasons::READY, "", generation);
    } else {
        let message = if answer.message.is_empty() {
            format!("ProviderPlugin {plugin} is provisioning the cluster's infrastructure")
        } else {
            answer.message.clone()
        };
        set_ready(
            &mut status.conditions,
            false,
            reasons::PROVISIONING,
            message,
            generation,
        );
    }
}
