//! The generic controllers: ProviderPlugin (GetInfo on registration and every
//! [`PROBE_INTERVAL`], status and `Ready`), PluginCluster (ReconcileCluster until ready,
//! DeleteCluster until deleted) and PluginMachine (CreateMachine once the Cluster's
//! infrastructure and the Machine's bootstrap data are there, GetMachine with a backoff until
//! RUNNING or FAILED, DeleteMachine until deleted). They reach the management plane only
//! through `kube::Client` and the plugins only through `corral_provider_sdk::Client`.
//!
//! A plugin's failure (down, slow, garbage, an error) is written as the object's `Ready`
//! condition naming the plugin and what it did, and the call is retried after the plugin's
//! `retryAfterSeconds` or a per-object backoff; each reconcile runs in its own task with a
//! deadline per call, so one plugin's trouble never holds up another's objects. A plugin is
//! called only while its ProviderPlugin is Ready (reachable, contract `v1`).

mod orphans;
mod plugin_cluster;
pub(crate) mod plugin_machine;
pub(crate) mod plugins;
pub(crate) mod provider_plugin;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use corral_api::Cluster;
use corral_runtime::Backoff;
use corral_runtime::conditions::{self, NewCondition, bool_status};
use corral_runtime::patch::{self, Part};
use corral_runtime::shared::Caches;
use futures::FutureExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use crate::api::conditions::{READY, reasons};
use crate::api::{PluginCluster, PluginMachine, ProviderPlugin};
pub use plugins::Plugins;

/// How often a ProviderPlugin's GetInfo is called while it answers.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(60);

/// How often a running machine or a ready cluster is looked at again.
const RESYNC: Duration = Duration::from_secs(300);

/// How long an object whose plugin is not Ready waits before looking again.
const PLUGIN_WAIT: Duration = Duration::from_secs(2);

/// How long an object waits while every call slot of its plugin is taken.
const BUSY_WAIT: Duration = Duration::from_millis(500);

/// How many objects of one kind are reconciled at once: more than one plugin's call slots, so
/// that a slow plugin leaves workers for the others.
const CONCURRENCY: u16 = 64;

/// Runs the three controllers until `shutdown` completes, with caches of their own.
pub async fn run(client: kube::Client, shutdown: impl Future<Output = ()> + Send + 'static) {
    let caches = Caches::new(client.clone());
    run_with_caches(client, caches, shutdown).await;
}

/// [`run`], reading Machines and Clusters through `caches`, which the core controllers of
/// the process may share.
pub async fn run_with_caches(
    client: kube::Client,
    caches: Caches,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let shutdown: corral_runtime::Shutdown = shutdown.boxed().shared();
    let context = Arc::new(Context {
        client: client.clone(),
        plugins: Plugins::new(caches.get(|_: &ProviderPlugin| "")),
        caches,
        recorder: corral_runtime::Recorder::new(
            client.clone(),
            kube::runtime::events::Reporter::from("corral-plugin-controller"),
        ),
        poll: Backoff::new(Duration::from_secs(1), Duration::from_secs(30)),
        failures: Backoff::new(Duration::from_secs(1), Duration::from_secs(60)),
        config: corral_runtime::Config {
            concurrency: CONCURRENCY,
            ..Default::default()
        },
    });
    futures::join!(
        provider_plugin::run(context.clone(), shutdown.clone()),
        plugin_cluster::run(context.clone(), shutdown.clone()),
        plugin_machine::run(context, shutdown),
    );
}

/// What every reconcile shares.
pub(crate) struct Context {
    pub client: kube::Client,
    pub caches: Caches,
    /// Clients of the plugins, by ProviderPlugin.
    pub plugins: Plugins,
    /// Events about ProviderPlugins (orphans).
    pub recorder: corral_runtime::Recorder,
    /// The wait between polls of an object whose plugin says it is not done (PENDING, not
    /// ready, not deleted yet), per object uid.
    pub poll: Backoff,
    /// The wait before calling again after a failed call, per object uid.
    pub failures: Backoff,
    pub config: corral_runtime::Config,
}

/// A failed reconcile. Plugin failures are not errors: they are written as conditions and
/// retried by the reconcile's own requeue.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("cannot read {kind} {name}")]
    Get {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write {kind} {name}")]
    Write {
        kind: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
}

impl corral_runtime::ClusterObject for ProviderPlugin {
    fn cluster_name(&self) -> &str {
        ""
    }
}

impl corral_runtime::ClusterObject for PluginCluster {
    fn cluster_name(&self) -> &str {
        cluster_label(self)
    }
}

impl corral_runtime::ClusterObject for PluginMachine {
    fn cluster_name(&self) -> &str {
        cluster_label(self)
    }
}

/// A provider object's Cluster, by its cluster-name label.
pub(crate) fn cluster_label<K: Resource>(object: &K) -> &str {
    object
        .meta()
        .labels
        .as_ref()
        .and_then(|labels| labels.get(corral_api::labels::CLUSTER_NAME))
        .map(String::as_str)
        .unwrap_or_default()
}

/// The owner of the given kind in the `cluster.x-k8s.io` group: its name and uid.
pub(crate) fn owner(object: &impl ResourceExt, kind: &str) -> Option<(String, String)> {
    object
        .owner_references()
        .iter()
        .find(|owner| {
            owner.kind == kind && owner.api_version.split('/').next() == Some(corral_api::GROUP)
        })
        .map(|owner| (owner.name.clone(), owner.uid.clone()))
}

/// Whether reconciliation is paused, by the Cluster's `spec.paused` or the object's
/// `cluster.x-k8s.io/paused` annotation.
pub(crate) fn paused(cluster: Option<&Cluster>, object: &impl Resource) -> bool {
    cluster.is_some_and(|cluster| cluster.spec.paused == Some(true))
        || corral_runtime::has_paused_annotation(object)
}

/// Sets the Ready condition.
pub(crate) fn set_ready(
    conditions: &mut Vec<Condition>,
    ready: bool,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
) {
    conditions::set(
        conditions,
        NewCondition::new(READY, bool_status(ready), reason).message(message),
        generation,
        &conditions::now(),
    );
}

/// The condition reason of a failed call.
pub(crate) fn call_reason(error: &corral_provider_sdk::CallError) -> &'static str {
    use corral_provider_sdk::CallFailure;
    match error.failure {
        CallFailure::Provider(_) => reasons::PLUGIN_ERROR,
        CallFailure::Unreachable(_) | CallFailure::Timeout(_) => reasons::UNREACHABLE,
        CallFailure::Garbage(_) => reasons::PROTOCOL_ERROR,
    }
}

/// A kind whose Ready condition the controllers write.
pub(crate) trait Conditioned:
    Resource<DynamicType = ()>
    + Clone
    + serde::Serialize
    + serde::de::DeserializeOwned
    + std::fmt::Debug
{
    fn conditions_mut(&mut self) -> &mut Vec<Condition>;
}

impl Conditioned for PluginCluster {
    fn conditions_mut(&mut self) -> &mut Vec<Condition> {
        &mut self.status.get_or_insert_with(Default::default).conditions
    }
}

impl Conditioned for PluginMachine {
    fn conditions_mut(&mut self) -> &mut Vec<Condition> {
        &mut self.status.get_or_insert_with(Default::default).conditions
    }
}

/// Writes `object`'s Ready condition False with `reason` and `message` (a status write only
/// when that changes it), then `then`.
pub(crate) async fn not_ready<K: Conditioned>(
    api: &Api<K>,
    object: &K,
    reason: &str,
    message: impl Into<String>,
    then: Action,
) -> Result<Action, Error> {
    let mut after = object.clone();
    let generation = object.meta().generation;
    set_ready(after.conditions_mut(), false, reason, message, generation);
    write(api, object, &after, Part::Status).await?;
    Ok(then)
}

/// The plugin `name` to call about `object`, holding one of its call slots until dropped; or
/// the action to return instead: after writing `object`'s Ready condition False naming why
/// the plugin may not be called (missing, not Ready, incompatible), or, while every slot of
/// the plugin is taken by slow calls, a short wait, so that a slow plugin holds at most
/// [`plugins::CALLS_PER_PLUGIN`] of the controller's workers and other plugins go on.
pub(crate) async fn plugin_call<K: Conditioned>(
    context: &Context,
    api: &Api<K>,
    object: &K,
    name: &str,
) -> Result<Result<plugins::PluginCall, Action>, Error> {
    match context.plugins.call(name) {
        Ok(call) => Ok(Ok(call)),
        Err(plugins::NotCallable::Busy) => Ok(Err(Action::requeue(BUSY_WAIT))),
        Err(plugins::NotCallable::NotReady(message)) => {
            let wait = Action::requeue(PLUGIN_WAIT);
            not_ready(api, object, reasons::PLUGIN_NOT_READY, message, wait)
                .await
                .map(Err)
        }
    }
}

/// A call to `plugin` that failed: Ready False naming the plugin and what happened, and a
/// retry after the plugin's retry-after or the object's backoff.
pub(crate) async fn call_failed<K: Conditioned>(
    context: &Context,
    api: &Api<K>,
    object: &K,
    key: &str,
    plugin: &str,
    error: &corral_provider_sdk::CallError,
) -> Result<Action, Error> {
    let wait = failed_call(context, key, error);
    let message = format!("ProviderPlugin {plugin}: {error}");
    not_ready(
        api,
        object,
        call_reason(error),
        message,
        Action::requeue(wait),
    )
    .await
}

/// The wait before calling again after `error`: the plugin's retry-after, else the object's
/// backoff.
pub(crate) fn failed_call(
    context: &Context,
    key: &str,
    error: &corral_provider_sdk::CallError,
) -> Duration {
    tracing::info!(%error, "A call to the plugin failed");
    let backoff = context.failures.fail(key);
    error.retry_after().unwrap_or(backoff)
}

/// Adds or removes `finalizer`; returns the object as stored (`object` itself when nothing
/// changed).
pub(crate) async fn set_finalizer<K>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    present: bool,
) -> Result<K, Error>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let mut after = object.clone();
    let finalizers = after.meta_mut().finalizers.get_or_insert_with(Vec::new);
    let has = finalizers.iter().any(|existing| existing == finalizer);
    if has == present {
        return Ok(object.clone());
    }
    if present {
        finalizers.push(finalizer.to_owned());
    } else {
        finalizers.retain(|existing| existing != finalizer);
    }
    write(api, object, &after, Part::Main).await
}

/// Writes `part` of `after` when it differs from `before`; returns the object as stored.
pub(crate) async fn write<K>(api: &Api<K>, before: &K, after: &K, part: Part) -> Result<K, Error>
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let written = patch::patch_if_changed(api, before, after, part)
        .await
        .map_err(|source| Error::Write {
            kind: kind_name::<K>(),
            name: before.name_any(),
            source,
        })?;
    Ok(written.unwrap_or_else(|| after.clone()))
}

fn kind_name<K: Resource<DynamicType = ()>>() -> &'static str {
    match K::kind(&()).as_ref() {
        "PluginCluster" => "PluginCluster",
        "PluginMachine" => "PluginMachine",
        "ProviderPlugin" => "ProviderPlugin",
        _ => "object",
    }
}
