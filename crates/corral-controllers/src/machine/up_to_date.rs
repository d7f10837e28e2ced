//! The UpToDate condition of a MachineDeployment's Machine, computed by the Machine controller
//! (upstream `setUpToDateCondition` in `core/reconcilers/machine/machine_controller_status.go`):
//! the owning MachineSet's template compared with the MachineDeployment's, and
//! `spec.rollout.after`. The MachineSet used to write it onto its Machines, which made two
//! controllers write the same Machine's status for every Machine it created; computing it
//! where the Machine's status is written anyway costs no write of its own.
//!
//! Machines not owned by a MachineDeployment's MachineSet get no UpToDate condition from here
//! (a control plane provider sets its own).

use std::time::Duration;

use corral_api::{Machine, MachineDeployment, MachineSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};

use corral_runtime::cluster_cache::ClusterKey;
use corral_runtime::conditions;
use corral_runtime::shared::SharedCache;

/// The owner reference of an object's controller, when it is of `kind` in Cluster API's group.
fn controller_of_kind<'a>(owners: &'a [OwnerReference], kind: &str) -> Option<&'a OwnerReference> {
    owners.iter().find(|owner| {
        owner.controller == Some(true)
            && owner.kind == kind
            && owner
                .api_version
                .starts_with(&format!("{}/", corral_api::GROUP))
    })
}

/// The Machine's MachineSet and that MachineSet's MachineDeployment, from the caches; `None`
/// when the Machine is not a MachineDeployment's or the caches do not show its owners yet
/// (their watch events reconcile the Machine again).
pub(super) fn owners(
    machine: &Machine,
    machine_sets: &Store<MachineSet>,
    machine_deployments: &Store<MachineDeployment>,
) -> Option<(
    std::sync::Arc<MachineSet>,
    std::sync::Arc<MachineDeployment>,
)> {
    let namespace = machine.namespace().unwrap_or_default();
    let owner = controller_of_kind(machine.owner_references(), "MachineSet")?;
    let machine_set = machine_sets.get(&ObjectRef::new(&owner.name).within(&namespace))?;
    if machine_set.uid().as_deref() != Some(owner.uid.as_str()) {
        return None;
    }
    let owner = controller_of_kind(machine_set.owner_references(), "MachineDeployment")?;
    let machine_deployment =
        machine_deployments.get(&ObjectRef::new(&owner.name).within(&namespace))?;
    if machine_deployment.uid().as_deref() != Some(owner.uid.as_str()) {
        return None;
    }
    Some((machine_set, machine_deployment))
}

/// Sets the Machine's UpToDate condition from its owners; returns when `spec.rollout.after`
/// will make it out of date, since nothing announces that moment.
pub(super) fn set_up_to_date_condition(
    machine: &mut Machine,
    machine_set: &MachineSet,
    machine_deployment: &MachineDeployment,
    now: &Time,
) -> Option<Duration> {
    let condition = crate::machine_set::status::machine_up_to_date_condition(
        machine_set,
        Some(machine_deployment),
        now.0,
    )?;
    let generation = machine.metadata.generation;
    let status = machine.status.get_or_insert_with(Default::default);
    conditions::set(&mut status.conditions, condition, generation, now);
    let after = machine_deployment.spec.rollout.after.as_ref()?;
    let created = machine_set.metadata.creation_timestamp.as_ref()?;
    if after.0 <= now.0 || created.0 > after.0 {
        return None;
    }
    Duration::try_from(after.0 - now.0)
        .ok()
        .map(|wait| wait + Duration::from_secs(1))
}

/// What about a MachineSet its Machines' UpToDate condition depends on: its template, its
/// creation time and its controller. Other changes (its status, mostly) do not reconcile its
/// Machines.
pub(super) fn machine_set_signature(machine_set: &MachineSet) -> String {
    format!(
        "{}/{:?}/{:?}",
        serde_json::to_string(&machine_set.spec.template).unwrap_or_default(),
        machine_set.metadata.creation_timestamp,
        controller_of_kind(machine_set.owner_references(), "MachineDeployment").map(|o| &o.uid),
    )
}

/// What about a MachineDeployment its Machines' UpToDate condition depends on: its template
/// and `spec.rollout.after`.
pub(super) fn machine_deployment_signature(machine_deployment: &MachineDeployment) -> String {
    format!(
        "{}/{:?}",
        serde_json::to_string(&machine_deployment.spec.template).unwrap_or_default(),
        machine_deployment.spec.rollout.after,
    )
}

/// The Machines a MachineSet controls, from the cache.
pub(super) fn machines_of_machine_set(
    machines: &SharedCache<Machine>,
    machine_set: &MachineSet,
) -> Vec<ObjectRef<Machine>> {
    let uid = machine_set.uid();
    let cluster = ClusterKey::new(
        &machine_set.namespace().unwrap_or_default(),
        &machine_set.spec.cluster_name,
    );
    let Some(uid) = uid else {
        return Vec::new();
    };
    machines
        .with_key(
            &cluster,
            &corral_runtime::index::key::controller(Some(&uid)),
        )
        .iter()
        .filter(|machine| {
            controller_of_kind(machine.owner_references(), "MachineSet")
                .is_some_and(|owner| owner.uid == uid)
        })
        .map(|machine| ObjectRef::from_obj(machine.as_ref()))
        .collect()
}

/// The Machines of a MachineDeployment (by the deployment-name label its MachineSets give
/// them), from the cache.
pub(super) fn machines_of_machine_deployment(
    machines: &SharedCache<Machine>,
    machine_deployment: &MachineDeployment,
) -> Vec<ObjectRef<Machine>> {
    let name = machine_deployment.name_any();
    let cluster = ClusterKey::new(
        &machine_deployment.namespace().unwrap_or_default(),
        &machine_deployment.spec.cluster_name,
    );
    machines
        .of_cluster(&cluster)
        .iter()
        .filter(|machine| {
            machine
                .labels()
                .get(corral_api::labels::MACHINE_DEPLOYMENT_NAME)
                == Some(&name)
        })
        .map(|machine| ObjectRef::from_obj(machine.as_ref()))
        .collect()
}
