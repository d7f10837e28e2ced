//! The control plane's pre-terminate hook (upstream `reconcilePreTerminateHook` in
//! `kubeadmcontrolplane_controller.go`): every control plane Machine carries
//! [`CLEANUP_HOOK`], so the Machine controller, deleting it, drains its Node and then waits
//! for the hook before it deletes the infrastructure. Seeing its Machine waiting there, the
//! KubeadmControlPlane moves etcd leadership off it (again: it may have become leader since the
//! deletion was decided, or a user deleted the Machine), removes its etcd member, and removes
//! the annotation. So the member leaves the etcd cluster after the Node is drained and while the
//! machine still runs, which is what keeps etcd and the API server healthy during the removal.
//!
//! One deleting Machine at a time, the one deleted first; a deleting Machine without the hook
//! (deleted before it got one) is waited for. The member is removed only when the control plane
//! components of some other machine are healthy and etcd keeps quorum without it.

use std::collections::BTreeSet;

use corral_api::Machine;
use corral_api::annotations::PRE_TERMINATE_DELETE_HOOK_PREFIX;
use corral_api::conditions::machine::reason::WAITING_FOR_PRE_TERMINATE_HOOK;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::planner::{self, MemberHealth};
use super::{Context, Error, Outcome, Scope, machine_node};
use crate::controlplane::etcd::{EtcdAdmin, EtcdMember};

/// The pre-terminate hook the control plane puts on its Machines (upstream
/// `PreTerminateHookCleanupAnnotation`).
pub const CLEANUP_HOOK: &str = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/kcp-cleanup";

/// From this Kubernetes minor on (1.31), the control plane's hook runs last: other
/// pre-terminate hooks still have a working kubelet (upstream).
const HOOK_LAST_FROM_MINOR: u64 = 31;

/// Whether the Machine has pre-terminate hooks other than the control plane's.
fn has_other_hooks(machine: &Machine) -> bool {
    machine
        .annotations()
        .keys()
        .any(|key| key.starts_with(PRE_TERMINATE_DELETE_HOOK_PREFIX) && key != CLEANUP_HOOK)
}

/// Whether the Machine controller is waiting for the pre-terminate hooks (its Deleting
/// condition is True with reason `WaitingForPreTerminateHook`).
fn waits_for_hook(machine: &Machine) -> bool {
    machine.status.as_ref().is_some_and(|status| {
        corral_runtime::conditions::get(&status.conditions, corral_api::conditions::DELETING)
            .is_some_and(|c| c.status == "True" && c.reason == WAITING_FOR_PRE_TERMINATE_HOOK)
    })
}

/// The minor of a `v1.<minor>.<patch>` version; `None` when it does not parse.
fn minor(version: &str) -> Option<u64> {
    let version = version.strip_prefix('v').unwrap_or(version);
    let mut parts = version.split('.');
    let _major = parts.next()?;
    let minor = parts.next()?;
    let digits: String = minor.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Removes the hook from the Machine (nothing when it has none).
pub(super) async fn remove_hook(context: &Context, machine: &Machine) -> Result<(), Error> {
    if !machine.annotations().contains_key(CLEANUP_HOOK) {
        return Ok(());
    }
    let name = machine.name_any();
    tracing::info!(machine = %name, "Removing pre-terminate hook from control plane Machine");
    let api: Api<Machine> = Api::namespaced(
        context.client.clone(),
        &machine.namespace().unwrap_or_default(),
    );
    let patch = json!({ "metadata": { "annotations": { CLEANUP_HOOK: null } } });
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(Error::RemoveHook {
            machine: name,
            source,
        }),
    }
}

/// Adds the hook to a live Machine created without it (upstream `syncMachines` keeps the
/// Machines' annotations in line with the desired ones).
pub(super) async fn ensure_hook(context: &Context, machine: &Machine) -> Result<(), Error> {
    if machine.metadata.deletion_timestamp.is_some()
        || machine.annotations().contains_key(CLEANUP_HOOK)
    {
        return Ok(());
    }
    let name = machine.name_any();
    let api: Api<Machine> = Api::namespaced(
        context.client.clone(),
        &machine.namespace().unwrap_or_default(),
    );
    let patch = json!({ "metadata": {
        "annotations": { CLEANUP_HOOK: "" },
        "resourceVersion": machine.resource_version(),
    } });
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        // Changed or gone meanwhile: its watch event reconciles again.
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(source) => Err(Error::AddHook {
            machine: name,
            source,
        }),
    }
}

/// Runs the hook of the deleting Machine the Machine controller waits on. Returns whether a
/// Machine is being deleted, in which case the reconcile does nothing else (one operation at a
/// time; the Machines' changes wake the control plane again).
pub(super) async fn reconcile_pre_terminate_hook(
    context: &Context,
    scope: &Scope,
    outcome: &mut Outcome,
) -> Result<bool, Error> {
    let deleting: Vec<&Machine> = scope
        .machines
        .iter()
        .map(AsRef::as_ref)
        .filter(|m| m.metadata.deletion_timestamp.is_some())
        .collect();
    if deleting.is_empty() {
        return Ok(false);
    }
    outcome.waiting = true;
    // A deleting Machine without the hook goes on its own; the others wait for it.
    if let Some(unhooked) = deleting
        .iter()
        .find(|m| !m.annotations().contains_key(CLEANUP_HOOK))
    {
        tracing::debug!(machine = %unhooked.name_any(), "Waiting for a Machine deleted without the pre-terminate hook");
        return Ok(true);
    }
    let machine = deleting
        .iter()
        .min_by_key(|m| {
            (
                m.metadata.deletion_timestamp.as_ref().map(|t| t.0),
                m.name_any(),
            )
        })
        .copied()
        .expect("a deleting machine");
    let name = machine.name_any();
    if minor(&scope.kcp.spec.version).is_none_or(|minor| minor >= HOOK_LAST_FROM_MINOR)
        && has_other_hooks(machine)
    {
        tracing::debug!(machine = %name, "Waiting for the Machine's other pre-terminate hooks");
        return Ok(true);
    }
    if !waits_for_hook(machine) {
        tracing::debug!(machine = %name, "Waiting for the Machine controller to reach the pre-terminate hook");
        return Ok(true);
    }
    // The last control plane machine: nothing to keep healthy.
    if scope.machines.len() <= 1 {
        remove_hook(context, machine).await?;
        return Ok(true);
    }
    // Some other machine's control plane components must be healthy (upstream
    // `targetKubernetesControlPlaneComponentsHealthy`).
    if !scope
        .views
        .iter()
        .any(|v| v.name != name && !v.components_unhealthy)
    {
        tracing::info!(machine = %name, "Cannot remove the control plane Machine while no other has healthy control plane components");
        return Ok(true);
    }
    let (Some(workload), Some(etcd)) = (&scope.workload, &scope.etcd) else {
        let error = scope.workload_error.as_deref().unwrap_or("not connected");
        tracing::info!(machine = %name, %error, "Cannot remove the etcd member of a deleting Machine without the workload cluster");
        return Ok(true);
    };
    let members = match &workload.members {
        Ok(members) if !members.is_empty() => members,
        Ok(_) => {
            tracing::info!(machine = %name, "Cannot remove the pre-terminate hook: the etcd member list is empty");
            return Ok(true);
        }
        Err(error) => {
            tracing::info!(machine = %name, %error, "Cannot remove the pre-terminate hook: the etcd members cannot be read");
            return Ok(true);
        }
    };
    // The member runs on the Machine's Node (kubeadm names members after Nodes); without one,
    // there is nothing to remove (the member cleanup catches one that shows up later).
    let Some(member) = machine_node(machine).and_then(|node| workload.member(&node)) else {
        remove_hook(context, machine).await?;
        return Ok(true);
    };
    let health = member_health(scope, members);
    if !planner::can_safely_remove_etcd_member(&health, &member.name) {
        tracing::info!(machine = %name, "Cannot remove the etcd member of the deleting Machine: etcd would lose quorum");
        return Ok(true);
    }
    if member.leader
        && let Some(next) = leadership_candidate(scope, members, &name)
    {
        move_leadership(etcd.as_ref(), member, next).await?;
    }
    tracing::info!(member = %member.name, machine = %name, "Removing etcd member of the deleting Machine");
    remove_member(etcd.as_ref(), member).await?;
    remove_hook(context, machine).await?;
    Ok(true)
}

/// Each etcd member's health as quorum checks count it: it answers and a Machine of this
/// control plane runs it (upstream `canSafelyRemoveEtcdMember`).
pub(super) fn member_health(scope: &Scope, members: &[EtcdMember]) -> Vec<MemberHealth> {
    let nodes = control_plane_nodes(scope);
    members
        .iter()
        .map(|m| MemberHealth {
            name: m.name.clone(),
            healthy: m.healthy && nodes.contains(&m.name),
        })
        .collect()
}

/// The Nodes of this control plane's Machines (kubeadm names etcd members after them).
pub(super) fn control_plane_nodes(scope: &Scope) -> BTreeSet<String> {
    scope
        .machines
        .iter()
        .filter_map(|m| machine_node(m))
        .collect()
}

/// Removes an etcd member.
pub(super) async fn remove_member(etcd: &dyn EtcdAdmin, member: &EtcdMember) -> Result<(), Error> {
    etcd.remove_member(member.id)
        .await
        .map_err(|source| Error::Etcd {
            operation: "remove",
            member: member.name.clone(),
            source: Box::new(source),
        })
}

/// Moves etcd leadership from `member` to `next` (upstream `forwardEtcdLeadership`).
pub(super) async fn move_leadership(
    etcd: &dyn EtcdAdmin,
    member: &EtcdMember,
    next: &EtcdMember,
) -> Result<(), Error> {
    tracing::info!(from = %member.name, to = %next.name, "Moving etcd leadership");
    etcd.move_leader(next.id)
        .await
        .map_err(|source| Error::Etcd {
            operation: "move leadership",
            member: member.name.clone(),
            source: Box::new(source),
        })
}

/// The member to lead instead of the Machine `leaving`'s (upstream
/// `getCandidatesForEtcdLeadership`): among the other Machines with a Node and not being
/// deleted, healthy members first, then the newest Machine.
pub(super) fn leadership_candidate<'a>(
    scope: &Scope,
    members: &'a [EtcdMember],
    leaving: &str,
) -> Option<&'a EtcdMember> {
    let mut candidates: Vec<(&Machine, &EtcdMember)> = scope
        .machines
        .iter()
        .map(AsRef::as_ref)
        .filter(|m| m.name_any() != leaving && m.metadata.deletion_timestamp.is_none())
        .filter_map(|m| {
            let node = machine_node(m)?;
            Some((m, members.iter().find(|member| member.name == node)?))
        })
        .collect();
    // Healthy first, then the newest (the Machines are in scope oldest first).
    candidates.reverse();
    candidates.sort_by_key(|(_, member)| !member.healthy);
    candidates.first().map(|(_, member)| *member)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_is_a_pre_terminate_hook() {
        assert!(CLEANUP_HOOK.starts_with(PRE_TERMINATE_DELETE_HOOK_PREFIX));
        assert_eq!(
            &CLEANUP_HOOK[PRE_TERMINATE_DELETE_HOOK_PREFIX.len()..],
            "/kcp-cleanup"
        );
    }

    #[test]
    fn minor_reads_tolerant_versions() {
        assert_eq!(minor("v1.35.0"), Some(35));
        assert_eq!(minor("1.30.2"), Some(30));
        assert_eq!(minor("v1.31.0-rc.1"), Some(31));
        assert_eq!(minor("v1"), None);
        assert_eq!(minor("latest"), None);
    }

    #[test]
    fn only_other_pre_terminate_hooks_count() {
        let mut machine = Machine::new("m", corral_api::MachineSpec::default());
        machine
            .annotations_mut()
            .insert(CLEANUP_HOOK.to_string(), String::new());
        machine.annotations_mut().insert(
            "pre-drain.delete.hook.machine.cluster.x-k8s.io/other".to_string(),
            String::new(),
        );
        assert!(!has_other_hooks(&machine));
        machine.annotations_mut().insert(
            format!("{PRE_TERMINATE_DELETE_HOOK_PREFIX}/backup"),
            String::new(),
        );
        assert!(has_other_hooks(&machine));
    }
}
