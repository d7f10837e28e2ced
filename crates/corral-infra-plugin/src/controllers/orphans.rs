//! Orphans: machines a plugin holds (its `ListMachines`) that no PluginMachine claims, found
//! at each probe of a plugin with the capability. A machine is claimed when its `machineUid`
//! is the uid of a Machine that exists (CreateMachine is keyed by the Machine's uid, and a
//! Machine exists before its PluginMachine calls CreateMachine, so a machine being created
//! right now is claimed) or of a PluginMachine's owner Machine, or when its `providerId` is a
//! PluginMachine's `spec.providerID`.
//!
//! Orphans are listed in the ProviderPlugin's `status.orphans` with when they were first
//! seen, the condition `OrphansFound` and a Warning Event when new ones appear. With
//! `spec.orphanPolicy: Delete`, one unclaimed for `spec.orphanGracePeriodSeconds` (default
//! 300) is deleted through DeleteMachine, after the claims are read again from the API
//! server (not the caches), so a claim the caches have not seen yet still protects it.

use std::collections::HashSet;
use std::time::Duration;

use corral_api::Machine;
use corral_provider_sdk::{Client, v1};
use corral_runtime::conditions::{self, NewCondition, bool_status};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::runtime::events::EventType;

use super::Context;
use crate::api::conditions::{ORPHANS_FOUND, reasons};
use crate::api::{
    DEFAULT_ORPHAN_GRACE_PERIOD_SECONDS, OrphanMachine, OrphanPolicy, PluginMachine,
    ProviderPlugin, ProviderPluginStatus,
};

/// What claims machines: Machine uids and provider IDs.
#[derive(Default)]
struct Claims {
    machine_uids: HashSet<String>,
    provider_ids: HashSet<String>,
}

impl Claims {
    fn add_machine(&mut self, machine: &Machine) {
        if let Some(uid) = machine.uid() {
            self.machine_uids.insert(uid);
        }
        if let Some(id) = &machine.spec.provider_id {
            self.provider_ids.insert(id.clone());
        }
    }

    fn add_plugin_machine(&mut self, plugin_machine: &PluginMachine) {
        if let Some((_, uid)) = super::owner(plugin_machine, "Machine") {
            self.machine_uids.insert(uid);
        }
        if let Some(id) = &plugin_machine.spec.provider_id {
            self.provider_ids.insert(id.clone());
        }
    }

    fn claims(&self, machine: &v1::Machine) -> bool {
        (!machine.machine_uid.is_empty() && self.machine_uids.contains(&machine.machine_uid))
            || (!machine.provider_id.is_empty() && self.provider_ids.contains(&machine.provider_id))
    }
}

/// Finds the plugin's orphans and records them in `status` (and deletes those due under
/// `orphanPolicy: Delete`); returns when to look again sooner than the next probe, if an
/// orphan's grace period ends before it.
pub(super) async fn reconcile(
    context: &Context,
    plugin: &ProviderPlugin,
    client: &Client,
    status: &mut ProviderPluginStatus,
) -> Option<Duration> {
    let name = plugin.name_any();
    let lists = status.info.as_ref().is_some_and(|info| {
        info.capabilities
            .iter()
            .any(|c| c == corral_provider_sdk::capabilities::LIST_MACHINES)
    });
    if !lists {
        status.orphans.clear();
        status.conditions.retain(|c| c.type_ != ORPHANS_FOUND);
        return None;
    }
    let unclaimed = list_unclaimed(context, &name, client).await?;
    let now = conditions::now();
    let previous = std::mem::take(&mut status.orphans);
    let (mut orphans, new_ones) = track(&previous, &unclaimed, &now);
    let wake = if plugin.spec.orphan_policy == Some(OrphanPolicy::Delete) && !orphans.is_empty() {
        delete_due(
            context,
            plugin,
            &name,
            client,
            &unclaimed,
            &mut orphans,
            &now,
        )
        .await
    } else {
        None
    };
    set_orphans_found(status, plugin, &name, orphans, &now);
    if !new_ones.is_empty() {
        event(
            context,
            plugin,
            EventType::Warning,
            reasons::ORPHANS_FOUND,
            format!(
                "Found machines that no PluginMachine claims: {}",
                new_ones.join(", ")
            ),
        )
        .await;
    }
    wake
}

/// The plugin's machines (its ListMachines) that nothing in the caches claims, judged only
/// against complete caches (an empty cache would make everything an orphan); `None` when the
/// listing failed.
async fn list_unclaimed(
    context: &Context,
    name: &str,
    client: &Client,
) -> Option<Vec<v1::Machine>> {
    let listed = match client
        .list_machines(v1::ListMachinesRequest::default())
        .await
    {
        Ok(listed) => listed.machines,
        Err(error) => {
            tracing::info!(plugin = %name, %error, "Listing the plugin's machines failed");
            return None;
        }
    };
    let machines = context.caches.machines();
    let plugin_machines = context.caches.get(super::cluster_label::<PluginMachine>);
    futures::join!(machines.ready(), plugin_machines.ready());
    let mut claims = Claims::default();
    for machine in machines.store().state() {
        claims.add_machine(&machine);
    }
    for plugin_machine in plugin_machines.store().state() {
        claims.add_plugin_machine(&plugin_machine);
    }
    Some(
        listed
            .into_iter()
            .filter(|machine| !claims.claims(machine))
            .collect(),
    )
}

/// The orphans, in the order of `unclaimed`, each first seen when `previous` says (else now),
/// and the descriptions of those not seen before.
fn track(
    previous: &[OrphanMachine],
    unclaimed: &[v1::Machine],
    now: &Time,
) -> (Vec<OrphanMachine>, Vec<String>) {
    let mut new_ones = Vec::new();
    let orphans = unclaimed
        .iter()
        .map(|machine| {
            let seen = previous.iter().find(|orphan| {
                orphan.machine_uid == machine.machine_uid
                    && orphan.provider_id == machine.provider_id
            });
            if seen.is_none() {
                new_ones.push(describe(
                    &machine.provider_id,
                    &machine.machine_uid,
                    &machine.cluster_name,
                ));
            }
            OrphanMachine {
                provider_id: machine.provider_id.clone(),
                machine_uid: machine.machine_uid.clone(),
                cluster_name: machine.cluster_name.clone(),
                first_seen: seen.map_or_else(|| now.clone(), |seen| seen.first_seen.clone()),
            }
        })
        .collect();
    (orphans, new_ones)
}

/// Deletes the orphans unclaimed for the grace period that the API server's claims (read
/// again) do not claim either, and drops them from `orphans`; returns when the next grace
/// period ends, or a short retry when the claims could not be read.
async fn delete_due(
    context: &Context,
    plugin: &ProviderPlugin,
    name: &str,
    client: &Client,
    unclaimed: &[v1::Machine],
    orphans: &mut Vec<OrphanMachine>,
    now: &Time,
) -> Option<Duration> {
    let grace = Duration::from_secs(
        plugin
            .spec
            .orphan_grace_period_seconds
            .unwrap_or(DEFAULT_ORPHAN_GRACE_PERIOD_SECONDS)
            .max(0) as u64,
    );
    let due: Vec<usize> = (0..orphans.len())
        .filter(|&i| unclaimed_for(&orphans[i].first_seen, now) >= grace)
        .collect();
    let mut wake = orphans
        .iter()
        .map(|orphan| grace.saturating_sub(unclaimed_for(&orphan.first_seen, now)))
        .filter(|left| !left.is_zero())
        .min();
    if due.is_empty() {
        return wake;
    }
    match live_claims(context).await {
        Ok(live) => {
            let mut deleted = HashSet::new();
            for i in due {
                let machine = &unclaimed[i];
                if live.claims(machine) {
                    continue;
                }
                if delete(context, plugin, client, machine).await {
                    deleted.insert(i);
                }
            }
            let mut index = 0;
            orphans.retain(|_| {
                index += 1;
                !deleted.contains(&(index - 1))
            });
        }
        Err(error) => {
            tracing::warn!(plugin = %name, %error, "Reading the claims on orphans failed");
            wake = Some(Duration::from_secs(5));
        }
    }
    wake
}

/// Records `orphans` in the status with the `OrphansFound` condition naming them.
fn set_orphans_found(
    status: &mut ProviderPluginStatus,
    plugin: &ProviderPlugin,
    name: &str,
    orphans: Vec<OrphanMachine>,
    now: &Time,
) {
    let found = !orphans.is_empty();
    let message = if found {
        format!(
            "{} machine(s) of ProviderPlugin {name} that no PluginMachine claims: {}",
            orphans.len(),
            orphans
                .iter()
                .map(|orphan| describe(
                    &orphan.provider_id,
                    &orphan.machine_uid,
                    &orphan.cluster_name
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        String::new()
    };
    conditions::set(
        &mut status.conditions,
        NewCondition::new(
            ORPHANS_FOUND,
            bool_status(found),
            if found {
                reasons::ORPHANS_FOUND
            } else {
                reasons::NO_ORPHANS
            },
        )
        .message(message),
        plugin.metadata.generation,
        now,
    );
    status.orphans = orphans;
}

/// Claims read from the API server: every Machine and PluginMachine.
async fn live_claims(context: &Context) -> Result<Claims, kube::Error> {
    let mut claims = Claims::default();
    let machines: Api<Machine> = Api::all(context.client.clone());
    for machine in machines.list(&ListParams::default()).await? {
        claims.add_machine(&machine);
    }
    let plugin_machines: Api<PluginMachine> = Api::all(context.client.clone());
    for plugin_machine in plugin_machines.list(&ListParams::default()).await? {
        claims.add_plugin_machine(&plugin_machine);
    }
    Ok(claims)
}

/// Deletes an orphan through DeleteMachine; whether it is gone.
async fn delete(
    context: &Context,
    plugin: &ProviderPlugin,
    client: &Client,
    machine: &v1::Machine,
) -> bool {
    tracing::info!(
        plugin = %plugin.name_any(),
        provider_id = %machine.provider_id,
        machine_uid = %machine.machine_uid,
        "Deleting an orphaned machine"
    );
    let request = v1::DeleteMachineRequest {
        machine: Some(v1::MachineRef {
            uid: machine.machine_uid.clone(),
            cluster_name: machine.cluster_name.clone(),
            ..Default::default()
        }),
        provider_id: machine.provider_id.clone(),
    };
    match client.delete_machine(request).await {
        Ok(answer) if answer.deleted => {
            event(
                context,
                plugin,
                EventType::Normal,
                "OrphanDeleted",
                format!(
                    "Deleted the orphaned machine {}",
                    describe(
                        &machine.provider_id,
                        &machine.machine_uid,
                        &machine.cluster_name
                    )
                ),
            )
            .await;
            true
        }
        Ok(_) => false,
        Err(error) if error.is_not_found() => true,
        Err(error) => {
            tracing::info!(plugin = %plugin.name_any(), %error, "Deleting an orphaned machine failed");
            false
        }
    }
}

async fn event(
    context: &Context,
    plugin: &ProviderPlugin,
    type_: EventType,
    reason: &str,
    note: String,
) {
    context.recorder.note(plugin, type_, reason, note).await
}

fn unclaimed_for(first_seen: &Time, now: &Time) -> Duration {
    Duration::try_from(now.0.duration_since(first_seen.0)).unwrap_or_default()
}

/// A machine as messages name it: its provider ID, Machine uid and cluster.
fn describe(provider_id: &str, machine_uid: &str, cluster_name: &str) -> String {
    format!("{provider_id} (machine uid {machine_uid:?}, cluster {cluster_name:?})")
}
