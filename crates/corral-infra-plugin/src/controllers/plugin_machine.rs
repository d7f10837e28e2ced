//! The PluginMachine controller. Once a Machine owns the PluginMachine, and the Cluster's
//! infrastructure is provisioned and the Machine's bootstrap data exists (upstream's order),
//! it calls CreateMachine with the bootstrap Secret's data, keyed by the Machine's uid; then
//! GetMachine with a backoff (1 s doubling to 30 s, or the plugin's retry-after) until the
//! machine is RUNNING — `spec.providerID`, `status.addresses`, `status.failureDomain`,
//! `status.initialization.provisioned` (contract) — or FAILED: `status.failureReason` and
//! `failureMessage`, which core copies to the Machine (phase Failed), and `Ready` False with
//! the plugin's message; a FAILED machine is not called again. On deletion DeleteMachine until
//! deleted (NOT_FOUND counts), then the finalizer goes.
//!
//! CreateMachine is called until its answer's providerID is in the spec; a repeat after a
//! restart of Corral or of the plugin, or a lost answer, returns the same machine (the
//! contract's idempotency by uid), so no machine is made twice.

use std::sync::Arc;

use corral_api::{Cluster, Machine, MachineAddress};
use corral_provider_sdk::pbjson_types;
use corral_provider_sdk::v1;
use corral_runtime::changes::Fingerprints;
use corral_runtime::patch::Part;
use corral_runtime::shared::trigger_own;
use futures::StreamExt;
use futures::stream::SelectAll;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, trigger_with};
use kube::runtime::reflector::ObjectRef;

use super::{
    Context, Error, call_failed, failed_call, not_ready, owner, paused, plugin_call, set_finalizer,
    set_ready, write,
};
use crate::api::conditions::reasons;
use crate::api::{GROUP, PluginMachine, PluginMachineStatus, finalizers};

/// `status.failureReason` of a machine the plugin says FAILED (upstream's
/// `MachineStatusError` for a machine that could not be created).
const FAILURE_REASON: &str = "CreateError";

pub(super) async fn run(context: Arc<Context>, shutdown: corral_runtime::Shutdown) {
    let cache = context.caches.get(super::cluster_label::<PluginMachine>);
    let machines = context.caches.machines();
    let clusters = context.caches.clusters();
    let mut queue = SelectAll::new();
    queue.push(trigger_own(cache.applied()).boxed());
    // What a PluginMachine reads of its Machine: the owner, bootstrap data, deletion.
    queue.push(
        trigger_with(
            machines.touched_changed(Arc::new(Fingerprints::new()), |machine| {
                Some((
                    machine.metadata.uid.clone(),
                    machine.spec.bootstrap.data_secret_name.clone(),
                    machine.spec.failure_domain.clone(),
                    machine.metadata.deletion_timestamp.is_some(),
                ))
            }),
            |machine: Arc<Machine>| {
                let reference = &machine.spec.infrastructure_ref;
                (reference.api_group == GROUP && reference.kind == "PluginMachine").then(|| {
                    ObjectRef::new(&reference.name).within(&machine.namespace().unwrap_or_default())
                })
            },
        )
        .boxed(),
    );
    // A Cluster's infrastructure becoming provisioned, or a pause, concerns its PluginMachines.
    let by_cluster = cache.clone();
    queue.push(
        trigger_with(
            clusters.touched_changed(Arc::new(Fingerprints::new()), |cluster| {
                Some((
                    cluster.metadata.uid.clone(),
                    cluster.spec.paused,
                    corral_runtime::has_paused_annotation(cluster),
                    cluster
                        .status
                        .as_ref()
                        .and_then(|status| status.initialization.infrastructure_provisioned),
                ))
            }),
            move |cluster: Arc<Cluster>| {
                let key = corral_runtime::cluster_cache::ClusterKey::new(
                    &cluster.namespace().unwrap_or_default(),
                    &cluster.name_any(),
                );
                by_cluster
                    .of_cluster(&key)
                    .iter()
                    .map(|object| ObjectRef::from_obj(object.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        .boxed(),
    );
    let config = context.config.clone();
    corral_runtime::run_controller(
        "plugin-machine",
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
    api: Api<PluginMachine>,
    /// The PluginMachine's uid: the key of its backoffs.
    key: String,
}

/// Reconciles one PluginMachine: reads its Machine and Cluster, then deletes or provisions the
/// machine through the plugin, each a step below.
async fn reconcile(object: Arc<PluginMachine>, context: Arc<Context>) -> Result<Action, Error> {
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    let scope = Scope {
        context: &context,
        api: Api::namespaced(context.client.clone(), &namespace),
        key: object.metadata.uid.clone().unwrap_or_default(),
    };
    let owner = owner(object.as_ref(), "Machine");
    let machine = match &owner {
        Some((machine_name, _)) => {
            cached_or_get_machine(&context, &namespace, machine_name).await?
        }
        None => None,
    };
    let deleting = object.metadata.deletion_timestamp.is_some();
    if !deleting && machine.is_none() {
        tracing::info!("Waiting for the Machine controller to set the owner reference");
        return Ok(Action::await_change());
    }
    let cluster_name = machine
        .as_ref()
        .map(|machine| machine.spec.cluster_name.clone())
        .unwrap_or_else(|| super::cluster_label(object.as_ref()).to_owned());
    let cluster = context
        .caches
        .clusters()
        .get(&ObjectRef::new(&cluster_name).within(&namespace));
    if paused(cluster.as_deref(), object.as_ref()) {
        return Ok(Action::await_change());
    }
    let reference = v1::MachineRef {
        namespace: namespace.clone(),
        name,
        uid: owner.map(|(_, uid)| uid).unwrap_or_default(),
        cluster_name,
        failure_domain: machine
            .as_ref()
            .and_then(|machine| machine.spec.failure_domain.clone())
            .unwrap_or_default(),
        version: machine
            .as_ref()
            .and_then(|machine| machine.spec.version.clone())
            .unwrap_or_default(),
    };

    if deleting {
        return reconcile_delete(&scope, &object, reference).await;
    }
    let machine = machine.expect("checked above: a Machine owns a PluginMachine not being deleted");
    reconcile_normal(
        &scope,
        object,
        &namespace,
        &machine,
        cluster.as_deref(),
        reference,
    )
    .await
}

/// Calls DeleteMachine until the plugin says the machine is gone (NOT_FOUND counts), then
/// removes the finalizer; nothing to do without it.
async fn reconcile_delete(
    scope: &Scope<'_>,
    object: &PluginMachine,
    reference: v1::MachineRef,
) -> Result<Action, Error> {
    let Scope { context, api, key } = scope;
    if !object
        .finalizers()
        .iter()
        .any(|f| f == finalizers::PLUGIN_MACHINE)
    {
        return Ok(Action::await_change());
    }
    let call = match plugin_call(context, api, object, &object.spec.plugin).await? {
        Ok(call) => call,
        Err(action) => return Ok(action),
    };
    let request = v1::DeleteMachineRequest {
        machine: Some(reference),
        provider_id: object.spec.provider_id.clone().unwrap_or_default(),
    };
    tracing::info!("Deleting the machine");
    let deleted = match call.client.delete_machine(request).await {
        Ok(answer) => answer.deleted,
        Err(error) if error.is_not_found() => true,
        Err(error) => {
            return call_failed(context, api, object, key, &object.spec.plugin, &error).await;
        }
    };
    if !deleted {
        return not_ready(
            api,
            object,
            reasons::DELETING,
            format!(
                "ProviderPlugin {} is deleting the machine",
                object.spec.plugin
            ),
            Action::requeue(context.poll.fail(key)),
        )
        .await;
    }
    context.poll.succeed(key);
    context.failures.succeed(key);
    set_finalizer(api, object, finalizers::PLUGIN_MACHINE, false).await?;
    Ok(Action::await_change())
}

/// Provisions the machine of a PluginMachine a Machine owns: checks the prerequisites, adds
/// the finalizer, calls CreateMachine (or GetMachine once the providerID is known) and records
/// the answer.
async fn reconcile_normal(
    scope: &Scope<'_>,
    object: Arc<PluginMachine>,
    namespace: &str,
    machine: &Machine,
    cluster: Option<&Cluster>,
    reference: v1::MachineRef,
) -> Result<Action, Error> {
    let Scope { context, api, .. } = scope;
    let generation = object.metadata.generation;
    let secret_name = match prerequisites(scope, &object, machine, cluster).await? {
        Ok(secret_name) => secret_name,
        Err(action) => return Ok(action),
    };
    let call = match plugin_call(context, api, &object, &object.spec.plugin).await? {
        Ok(call) => call,
        Err(action) => return Ok(action),
    };

    // The finalizer guards the machine the plugin is about to make.
    let object = Arc::new(set_finalizer(api, &object, finalizers::PLUGIN_MACHINE, true).await?);
    let answer = match &object.spec.provider_id {
        None => {
            let (bootstrap_data, bootstrap_format) =
                bootstrap_data(context, namespace, secret_name).await?;
            tracing::info!("Creating the machine");
            call.client
                .create_machine(v1::CreateMachineRequest {
                    machine: Some(reference),
                    config: config_struct(object.spec.config.as_ref()),
                    bootstrap_data,
                    bootstrap_format,
                })
                .await
        }
        Some(provider_id) => {
            call.client
                .get_machine(v1::GetMachineRequest {
                    machine: Some(reference),
                    provider_id: provider_id.clone(),
                })
                .await
        }
    };
    let (answer, state) = match read_answer(scope, &object, answer).await? {
        Ok(answered) => answered,
        Err(action) => return Ok(action),
    };
    record_machine(scope, object, machine, &answer, state, generation).await
}

/// The Machine's bootstrap data Secret's name once CreateMachine may be called, or the action
/// to return instead: a FAILED machine stays failed (the Machine is remediated by its owner,
/// not retried here); upstream's order waits for the Cluster's infrastructure, then the
/// bootstrap data; and a config that does not match the plugin's schema never reaches it.
async fn prerequisites<'m>(
    scope: &Scope<'_>,
    object: &PluginMachine,
    machine: &'m Machine,
    cluster: Option<&Cluster>,
) -> Result<Result<&'m str, Action>, Error> {
    let Scope { context, api, key } = scope;
    if object
        .status
        .as_ref()
        .is_some_and(|status| status.failure_reason.is_some())
    {
        return Ok(Err(Action::await_change()));
    }
    let infrastructure_provisioned = cluster
        .and_then(|cluster| cluster.status.as_ref())
        .and_then(|status| status.initialization.infrastructure_provisioned)
        == Some(true);
    if !infrastructure_provisioned {
        return not_ready(
            api,
            object,
            reasons::WAITING_FOR_CLUSTER_INFRASTRUCTURE,
            "",
            Action::await_change(),
        )
        .await
        .map(Err);
    }
    let Some(secret_name) = machine.spec.bootstrap.data_secret_name.as_deref() else {
        return not_ready(
            api,
            object,
            reasons::WAITING_FOR_BOOTSTRAP_DATA,
            "",
            Action::await_change(),
        )
        .await
        .map(Err);
    };
    // The last check before CreateMachine, for an object admission did not see with the
    // plugin's current schema (written before the webhook was registered, or the schema
    // changed since): a bad config never reaches the plugin.
    if object.spec.provider_id.is_none()
        && let Some(message) = invalid_config(context, object)
    {
        return not_ready(
            api,
            object,
            reasons::INVALID_CONFIG,
            message,
            Action::requeue(context.failures.fail(key)),
        )
        .await
        .map(Err);
    }
    Ok(Ok(secret_name))
}

/// The plugin's answer to CreateMachine or GetMachine with its state, or the action to return
/// instead when the call failed, the machine is gone or the state is unknown.
async fn read_answer(
    scope: &Scope<'_>,
    object: &PluginMachine,
    answer: Result<v1::Machine, corral_provider_sdk::CallError>,
) -> Result<Result<(v1::Machine, v1::MachineState), Action>, Error> {
    let Scope { context, api, key } = scope;
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) if error.is_not_found() => {
            return not_ready(
                api,
                object,
                reasons::MACHINE_NOT_FOUND,
                format!(
                    "ProviderPlugin {} no longer has the machine: {error}",
                    object.spec.plugin
                ),
                Action::requeue(failed_call(context, key, &error)),
            )
            .await
            .map(Err);
        }
        Err(error) => {
            return call_failed(context, api, object, key, &object.spec.plugin, &error)
                .await
                .map(Err);
        }
    };
    context.failures.succeed(key);
    match v1::MachineState::try_from(answer.state) {
        Ok(state) if state != v1::MachineState::Unspecified => Ok(Ok((answer, state))),
        _ => {
            let message = format!(
                "ProviderPlugin {} answered an unknown machine state {}",
                object.spec.plugin, answer.state
            );
            not_ready(
                api,
                object,
                reasons::PROTOCOL_ERROR,
                message,
                Action::requeue(context.failures.fail(key)),
            )
            .await
            .map(Err)
        }
    }
}

/// Records the plugin's answer: the providerID first (spec), then the status against the
/// version that write made; and when to look again.
async fn record_machine(
    scope: &Scope<'_>,
    object: Arc<PluginMachine>,
    machine: &Machine,
    answer: &v1::Machine,
    state: v1::MachineState,
    generation: Option<i64>,
) -> Result<Action, Error> {
    let Scope { context, api, key } = scope;
    let mut after = (*object).clone();
    let object = if object.spec.provider_id.is_none() && !answer.provider_id.is_empty() {
        let mut with_id = (*object).clone();
        with_id.spec.provider_id = Some(answer.provider_id.clone());
        tracing::info!(provider_id = %answer.provider_id, "Setting the providerID");
        Arc::new(write(api, &object, &with_id, Part::Main).await?)
    } else {
        object
    };
    after.metadata = object.metadata.clone();
    after.spec = object.spec.clone();
    let status = after.status.get_or_insert_with(Default::default);
    status.state = Some(state.as_str_name().to_owned());
    status.addresses = answer.addresses.iter().filter_map(address).collect();
    if !answer.failure_domain.is_empty() {
        status.failure_domain = Some(answer.failure_domain.clone());
    } else if let Some(domain) = &machine.spec.failure_domain {
        status.failure_domain = Some(domain.clone());
    }
    let requeue = apply_state(
        status,
        state,
        &answer.message,
        &object.spec.plugin,
        generation,
    );
    write(api, &object, &after, Part::Status).await?;
    Ok(match requeue {
        Requeue::Poll => Action::requeue(context.poll.fail(key)),
        Requeue::Resync => {
            context.poll.succeed(key);
            Action::requeue(super::RESYNC)
        }
        Requeue::Never => Action::await_change(),
    })
}

enum Requeue {
    Poll,
    Resync,
    Never,
}

/// The status of a machine in `state`, and when to look again.
fn apply_state(
    status: &mut PluginMachineStatus,
    state: v1::MachineState,
    message: &str,
    plugin: &str,
    generation: Option<i64>,
) -> Requeue {
    match state {
        v1::MachineState::Running => {
            status.initialization.provisioned = Some(true);
            set_ready(&mut status.conditions, true, reasons::READY, "", generation);
            Requeue::Resync
        }
        v1::MachineState::Failed => {
            let message = if message.is_empty() {
                format!("ProviderPlugin {plugin} says the machine failed")
            } else {
                message.to_owned()
            };
            status.failure_reason = Some(FAILURE_REASON.to_owned());
            status.failure_message = Some(message.clone());
            set_ready(
                &mut status.conditions,
                false,
                reasons::MACHINE_FAILED,
                message,
                generation,
            );
            Requeue::Never
        }
        v1::MachineState::Pending | v1::MachineState::Unspecified => {
            let message = if message.is_empty() {
                format!("ProviderPlugin {plugin} is provisioning the machine")
            } else {
                message.to_owned()
            };
            set_ready(
                &mut status.conditions,
                false,
                reasons::PROVISIONING,
                message,
                generation,
            );
            Requeue::Poll
        }
    }
}

/// A plugin's address as core's, when its type is one core knows.
fn address(address: &v1::Address) -> Option<MachineAddress> {
    serde_json::from_value(serde_json::json!({
        "type": address.r#type,
        "address": address.address,
    }))
    .ok()
}

/// Why `spec.config` does not pass the plugin's published schema, if it does not.
fn invalid_config(context: &Context, object: &PluginMachine) -> Option<String> {
    let plugin = context
        .plugins
        .cache()
        .get(&ObjectRef::new(&object.spec.plugin))?;
    let info = plugin.status.as_ref()?.info.as_ref()?;
    let json = serde_json::to_value(object).ok()?;
    let errors = crate::admission::config_errors("PluginMachine", info, &json);
    (!errors.is_empty()).then(|| {
        format!(
            "spec.config does not match ProviderPlugin {}'s schema: {}",
            object.spec.plugin,
            errors
                .iter()
                .map(|error| error.message())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// `spec.config` as the message's `google.protobuf.Struct`.
pub(crate) fn config_struct(config: Option<&serde_json::Value>) -> Option<pbjson_types::Struct> {
    config.and_then(|config| serde_json::from_value(config.clone()).ok())
}

/// The Machine's bootstrap data and its format, from its bootstrap Secret.
async fn bootstrap_data(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<(Vec<u8>, String), Error> {
    let secrets: Api<Secret> = Api::namespaced(context.client.clone(), namespace);
    let secret = secrets.get(name).await.map_err(|source| Error::Get {
        kind: "Secret",
        name: name.to_owned(),
        source,
    })?;
    let data = secret.data.unwrap_or_default();
    let value = data
        .get("value")
        .map(|value| value.0.clone())
        .unwrap_or_default();
    let format = data
        .get("format")
        .map(|format| String::from_utf8_lossy(&format.0).into_owned())
        .unwrap_or_else(|| "cloud-config".to_owned());
    Ok((value, format))
}

/// The Machine from the shared cache, or from the API server when the cache does not show it
/// yet (a PluginMachine can name its Machine before the Machine watch shows it).
async fn cached_or_get_machine(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<Arc<Machine>>, Error> {
    let cached = context
        .caches
        .machines()
        .get(&ObjectRef::new(name).within(namespace));
    if cached.is_some() {
        return Ok(cached);
    }
    let api: Api<Machine> = Api::namespaced(context.client.clone(), namespace);
    api.get_opt(name)
        .await
        .map(|object| object.map(Arc::new))
        .map_err(|source| Error::Get {
            kind: "Machine",
            name: name.to_owned(),
            source,
        })
}
