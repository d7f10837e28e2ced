//! The ProviderPlugin controller: GetInfo on registration, after a spec change and every
//! [`super::PROBE_INTERVAL`]; the answer in the status, and `Ready` True only for a plugin
//! that answered and lists contract `v1`. A failed probe is retried with a backoff (or after
//! the plugin's retry-after) and its message kept in `Ready`, with the last answer's info.
//! Each probe of a plugin with `ListMachines` also looks for orphans (`orphans.rs`). A
//! finalizer keeps a ProviderPlugin being deleted until no PluginCluster or PluginMachine
//! names it, so that their own finalizers can still call it.

use std::sync::Arc;

use corral_provider_sdk::v1;
use corral_runtime::patch::Part;
use corral_runtime::shared::trigger_own;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::Action;

use super::{Context, Error, call_reason, set_finalizer, set_ready, write};
use crate::api::conditions::reasons;
use crate::api::{PluginCluster, PluginInfo, PluginMachine, ProviderPlugin, finalizers};

/// How often a ProviderPlugin being deleted looks again at the objects that still use it.
const USERS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub(super) async fn run(context: Arc<Context>, shutdown: corral_runtime::Shutdown) {
    let cache = context.plugins.cache().clone();
    let queue = trigger_own(cache.applied()).boxed();
    let config = context.config.clone();
    corral_runtime::run_controller(
        "provider-plugin",
        context,
        &config,
        cache.store(),
        queue,
        shutdown,
        reconcile,
    )
    .await;
}

async fn reconcile(plugin: Arc<ProviderPlugin>, context: Arc<Context>) -> Result<Action, Error> {
    let name = plugin.name_any();
    let api: Api<ProviderPlugin> = Api::all(context.client.clone());
    if plugin.metadata.deletion_timestamp.is_some() {
        // Held while objects use it: their finalizers need the plugin to delete what it holds.
        let users = users(&context, &name).await;
        if users > 0 {
            tracing::info!(plugin = %name, users, "Waiting for the objects using the plugin to go");
            return Ok(Action::requeue(USERS_WAIT));
        }
        context.plugins.forget(&name);
        set_finalizer(&api, &plugin, finalizers::PROVIDER_PLUGIN, false).await?;
        return Ok(Action::await_change());
    }
    let plugin = Arc::new(set_finalizer(&api, &plugin, finalizers::PROVIDER_PLUGIN, true).await?);
    let generation = plugin.metadata.generation;
    let key = plugin.metadata.uid.clone().unwrap_or_default();
    // A probe is due after a spec change, a failed probe's backoff, or the interval; the
    // watch events of this controller's own status writes come before that.
    if let Some(wait) = context.plugins.probe_wait(&key, generation) {
        return Ok(Action::requeue(wait));
    }
    let mut after = (*plugin).clone();
    let new_status = after.status.get_or_insert_with(Default::default);
    new_status.observed_generation = generation;
    new_status.observed_time = Some(corral_runtime::conditions::now());
    let client = match context.plugins.client(&plugin) {
        Ok(client) => client,
        Err(error) => {
            new_status.transport = None;
            set_ready(
                &mut new_status.conditions,
                false,
                reasons::INVALID_ENDPOINT,
                error.to_string(),
                generation,
            );
            write(&api, &plugin, &after, Part::Status).await?;
            // Nothing to retry: a change of the spec brings the next reconcile.
            return Ok(Action::await_change());
        }
    };
    new_status.transport = Some(client.transport().as_str().to_owned());
    let requeue = match client.get_info(v1::GetInfoRequest {}).await {
        Ok(info) => {
            let compatible = info
                .contract_versions
                .iter()
                .any(|version| version == corral_provider_sdk::CONTRACT_VERSION);
            let (reason, message) = if compatible {
                (reasons::READY, String::new())
            } else {
                (
                    reasons::INCOMPATIBLE_CONTRACT,
                    format!(
                        "ProviderPlugin {name} speaks contract {:?}, Corral speaks {}; it is never called",
                        info.contract_versions,
                        corral_provider_sdk::CONTRACT_VERSION
                    ),
                )
            };
            if !compatible {
                tracing::warn!(plugin = %name, %message, "Incompatible plugin");
            }
            new_status.info = Some(plugin_info(info));
            set_ready(
                &mut new_status.conditions,
                compatible,
                reason,
                message,
                generation,
            );
            context.failures.succeed(&key);
            let orphans_due = if compatible {
                super::orphans::reconcile(&context, &plugin, &client, new_status).await
            } else {
                None
            };
            orphans_due.map_or(super::PROBE_INTERVAL, |due| due.min(super::PROBE_INTERVAL))
        }
        Err(error) => {
            tracing::info!(plugin = %name, %error, "Probing the plugin failed");
            set_ready(
                &mut new_status.conditions,
                false,
                call_reason(&error),
                format!("ProviderPlugin {name}: {error}"),
                generation,
            );
            error
                .retry_after()
                .unwrap_or_else(|| context.failures.fail(&key))
        }
    };
    context.plugins.probed(&key, generation, requeue);
    write(&api, &plugin, &after, Part::Status).await?;
    Ok(Action::requeue(requeue))
}

/// How many PluginClusters and PluginMachines name the plugin `name`.
async fn users(context: &Context, name: &str) -> usize {
    let machines = context.caches.get(super::cluster_label::<PluginMachine>);
    let clusters = context.caches.get(super::cluster_label::<PluginCluster>);
    futures::join!(machines.ready(), clusters.ready());
    let machines = machines
        .store()
        .state()
        .iter()
        .filter(|machine| machine.spec.plugin == name)
        .count();
    let clusters = clusters
        .store()
        .state()
        .iter()
        .filter(|cluster| cluster.spec.plugin == name)
        .count();
    machines + clusters
}

/// The status's copy of a GetInfo answer.
pub(crate) fn plugin_info(info: v1::GetInfoResponse) -> PluginInfo {
    let schema = |schema: Option<corral_provider_sdk::pbjson_types::Struct>| {
        schema.and_then(|schema| serde_json::to_value(schema).ok())
    };
    PluginInfo {
        name: info.name,
        version: info.version,
        contract_versions: info.contract_versions,
        capabilities: info.capabilities,
        cluster_config_schema: schema(info.cluster_config_schema),
        machine_config_schema: schema(info.machine_config_schema),
    }
}
