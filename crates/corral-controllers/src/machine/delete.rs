//! Deleting a Machine (upstream `reconcileDelete` in
//! `core/reconcilers/machine/machine_controller.go`), in order: pre-drain hooks, drain (cordon
//! and evict, bounded by `nodeDrainTimeoutSeconds`), wait for volumes to detach (bounded by
//! `nodeVolumeDetachTimeoutSeconds`), pre-terminate hooks, then delete the infrastructure
//! machine and the bootstrap config and wait for each to go, delete the Node (retried until
//! `nodeDeletionTimeoutSeconds` after the deletion started), and remove the finalizer.
//!
//! Hooks, drain, volumes and Node deletion only apply when deleting the Node is allowed: not
//! while the Cluster or its control plane is being deleted, not without a Node, and not for
//! the last control plane Machine.

use std::time::Duration;

use corral_api::annotations::{
    EXCLUDE_NODE_DRAINING, EXCLUDE_WAIT_FOR_NODE_VOLUME_DETACH, PRE_DRAIN_DELETE_HOOK_PREFIX,
    PRE_TERMINATE_DELETE_HOOK_PREFIX,
};
use corral_api::conditions::machine::reason as machine_reason;
use corral_api::conditions::reason;
use corral_api::{Machine, labels};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;

use super::drain::{self, DRAIN_RETRY_INTERVAL, Outcome};
use super::{Error, MachineController, Scope};
use corral_runtime::conditions;

/// The hook annotations with `prefix` a Machine has, sorted.
pub fn hooks(machine: &Machine, prefix: &str) -> Vec<String> {
    let mut hooks: Vec<String> = machine
        .annotations()
        .keys()
        .filter(|key| key.starts_with(prefix))
        .cloned()
        .collect();
    hooks.sort();
    hooks
}

fn seconds_since(since: &Time, now: &Time) -> i64 {
    now.0.as_second() - since.0.as_second()
}

/// Whether `nodeDrainTimeoutSeconds` (unset or 0: none) has passed since the drain started
/// (upstream `nodeDrainTimeoutExceeded`).
pub fn node_drain_timeout_exceeded(machine: &Machine, now: &Time) -> bool {
    let Some(timeout) = machine
        .spec
        .deletion
        .node_drain_timeout_seconds
        .filter(|t| *t > 0)
    else {
        return false;
    };
    let started = machine
        .status
        .as_ref()
        .and_then(|s| s.deletion.node_drain_start_time.as_ref());
    started.is_some_and(|started| seconds_since(started, now) >= i64::from(timeout))
}

/// Whether `nodeVolumeDetachTimeoutSeconds` has passed since waiting started.
pub fn node_volume_detach_timeout_exceeded(machine: &Machine, now: &Time) -> bool {
    let Some(timeout) = machine
        .spec
        .deletion
        .node_volume_detach_timeout_seconds
        .filter(|t| *t > 0)
    else {
        return false;
    };
    let started = machine
        .status
        .as_ref()
        .and_then(|s| s.deletion.wait_for_node_volume_detach_start_time.as_ref());
    started.is_some_and(|started| seconds_since(started, now) >= i64::from(timeout))
}

fn pre_terminate_started(machine: &Machine) -> bool {
    machine
        .status
        .as_ref()
        .is_some_and(|s| s.deletion.wait_for_pre_terminate_hook_start_time.is_some())
}

/// Whether the Node is drained (upstream `isNodeDrainAllowed`): not when the Machine excludes
/// it, once waiting for pre-terminate hooks started, when the infrastructure machine is gone
/// or going, or once the drain timeout has passed.
pub fn is_node_drain_allowed(machine: &Machine, infrastructure_present: bool, now: &Time) -> bool {
    !machine.annotations().contains_key(EXCLUDE_NODE_DRAINING)
        && !pre_terminate_started(machine)
        && infrastructure_present
        && !node_drain_timeout_exceeded(machine, now)
}

/// Whether deletion waits for the Node's volumes to detach (upstream
/// `isNodeVolumeDetachingAllowed`), with the same exceptions as draining.
pub fn is_node_volume_detaching_allowed(
    machine: &Machine,
    infrastructure_present: bool,
    now: &Time,
) -> bool {
    !machine
        .annotations()
        .contains_key(EXCLUDE_WAIT_FOR_NODE_VOLUME_DETACH)
        && !pre_terminate_started(machine)
        && infrastructure_present
        && !node_volume_detach_timeout_exceeded(machine, now)
}

/// Whether deleting the Node has been retried long enough: `nodeDeletionTimeoutSeconds`
/// (default 10, 0 for ever) after the Machine's deletion started.
pub fn node_deletion_timeout_expired(machine: &Machine, now: &Time) -> bool {
    let timeout = machine
        .spec
        .deletion
        .node_deletion_timeout_seconds
        .unwrap_or(corral_api::DEFAULT_NODE_DELETION_TIMEOUT_SECONDS);
    if timeout <= 0 {
        return false;
    }
    machine
        .metadata
        .deletion_timestamp
        .as_ref()
        .is_some_and(|deleted| seconds_since(deleted, now) >= i64::from(timeout))
}

/// Why the Node is not deleted (upstream `isDeleteNodeAllowed`'s errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKept {
    /// The Cluster is being deleted: its Nodes go with it.
    ClusterDeleting,
    /// The Machine has no Node.
    NoNode,
    /// The control plane object is being deleted.
    ControlPlaneDeleting,
    /// No control plane Machine that is not being deleted remains.
    NoControlPlaneMachines,
}

async fn is_delete_node_allowed(
    controller: &MachineController,
    scope: &mut Scope,
) -> Result<Option<NodeKept>, Error> {
    if scope.cluster.metadata.deletion_timestamp.is_some() {
        return Ok(Some(NodeKept::ClusterDeleting));
    }
    let has_node_ref = |scope: &Scope| {
        scope
            .machine
            .status
            .as_ref()
            .is_some_and(|s| s.node_ref.is_some())
    };
    if !has_node_ref(scope) {
        // One best-effort look for a Node, falling back to the infrastructure's provider ID.
        let provider_id = scope.machine.spec.provider_id.clone().or_else(|| {
            scope
                .infra_machine
                .as_ref()
                .and_then(|infra| infra.infrastructure_machine().provider_id().ok().flatten())
        });
        if let Some(provider_id) = provider_id {
            match controller
                .ctx
                .cluster_cache()
                .node_by_provider_id(&scope.cluster_key, &provider_id)
                .await
            {
                Ok(Some(node)) => {
                    scope
                        .machine
                        .status
                        .get_or_insert_with(Default::default)
                        .node_ref = Some(corral_api::MachineNodeReference {
                        name: node.name_any(),
                    });
                }
                Ok(None) => {}
                Err(error) => {
                    tracing::info!(error = %corral_runtime::error_chain(&error), "Failed to look up the Node while deleting the Machine");
                }
            }
        }
    }
    if !has_node_ref(scope) {
        return Ok(Some(NodeKept::NoNode));
    }
    if let Some(reference) = &scope.cluster.spec.control_plane_ref {
        match controller
            .ctx
            .external()
            .get(reference, &scope.cluster_key.namespace)
            .await
        {
            Ok(Some(control_plane)) => {
                if control_plane.is_deleting() {
                    return Ok(Some(NodeKept::ControlPlaneDeleting));
                }
                let externally_managed = control_plane
                    .object
                    .data
                    .get("status")
                    .and_then(|s| s.get("externalManagedControlPlane"))
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false);
                if externally_managed {
                    return Ok(None);
                }
            }
            Ok(None) => {}
            Err(error) if error.is_kind_not_installed() => {}
            Err(error) => return Err(Error::CheckDeleteNodeAllowed(error)),
        }
    }
    let active_control_plane = controller
        .machines
        .with_key(
            &scope.cluster_key,
            corral_runtime::index::key::CONTROL_PLANE,
        )
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .filter(|m| m.labels().contains_key(labels::CONTROL_PLANE))
        .count();
    if active_control_plane == 0 {
        return Ok(Some(NodeKept::NoControlPlaneMachines));
    }
    Ok(None)
}

/// Where a deletion step left the Machine: go on to the next step, or stop this reconcile
/// (waiting on something whose change brings the next one, or a requeue set on the scope).
enum Step {
    Done,
    Waiting,
}

pub(super) async fn reconcile_delete(
    controller: &MachineController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let now = conditions::now();
    scope.deleting = Some((reason::DELETING.to_owned(), "Deletion started".to_owned()));
    let node_kept = is_delete_node_allowed(controller, scope).await?;
    if let Some(cause) = node_kept {
        tracing::info!(
            ?cause,
            "Skipping deletion of the Machine's Node as it is not allowed"
        );
    }
    if node_kept.is_none() {
        if let Step::Waiting = wait_for_hooks(scope, PRE_DRAIN_DELETE_HOOK_PREFIX, &now) {
            return Ok(());
        }
        if let Step::Waiting = drain(controller, scope, &now).await? {
            return Ok(());
        }
        if let Step::Waiting = wait_for_volume_detach(controller, scope, &now).await? {
            return Ok(());
        }
    }
    if let Step::Waiting = wait_for_hooks(scope, PRE_TERMINATE_DELETE_HOOK_PREFIX, &now) {
        return Ok(());
    }
    let infrastructure = scope.machine.spec.infrastructure_ref.clone();
    if let Step::Waiting = delete_provider_object(controller, scope, &infrastructure, false).await?
    {
        return Ok(());
    }
    if let Some(bootstrap) = scope.machine.spec.bootstrap.config_ref.clone()
        && let Step::Waiting = delete_provider_object(controller, scope, &bootstrap, true).await?
    {
        return Ok(());
    }
    // The Node goes only once its infrastructure is gone (upstream issue #2565).
    if node_kept.is_none() {
        delete_machine_node(controller, scope, &now).await?;
    }
    scope.deleting = Some((
        reason::DELETION_COMPLETED.to_owned(),
        "Deletion completed".to_owned(),
    ));
    scope
        .machine
        .finalizers_mut()
        .retain(|f| f != corral_api::finalizers::MACHINE);
    controller
        .external
        .forget(&ObjectRef::from_obj(scope.before.as_ref()));
    Ok(())
}

/// The name of the Machine's Node, empty without one.
fn node_name(machine: &Machine) -> String {
    machine
        .status
        .as_ref()
        .and_then(|s| s.node_ref.as_ref())
        .map(|r| r.name.clone())
        .unwrap_or_default()
}

/// The Machine's deletion status, created if absent.
fn deletion_status(machine: &mut Machine) -> &mut corral_api::machine::MachineDeletionStatus {
    &mut machine.status.get_or_insert_with(Default::default).deletion
}

fn since(started: &Time) -> String {
    started.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Waits while the Machine carries pre-drain or pre-terminate hook annotations (`prefix`);
/// removing the annotation brings the next reconcile.
fn wait_for_hooks(scope: &mut Scope, prefix: &str, now: &Time) -> Step {
    let hooks = hooks(&scope.machine, prefix);
    if hooks.is_empty() {
        return Step::Done;
    }
    let hooks = hooks.join(",");
    let deletion = deletion_status(&mut scope.machine);
    let (start_time, reason, which) = if prefix == PRE_DRAIN_DELETE_HOOK_PREFIX {
        (
            &mut deletion.wait_for_pre_drain_hook_start_time,
            machine_reason::WAITING_FOR_PRE_DRAIN_HOOK,
            "pre-drain",
        )
    } else {
        (
            &mut deletion.wait_for_pre_terminate_hook_start_time,
            machine_reason::WAITING_FOR_PRE_TERMINATE_HOOK,
            "pre-terminate",
        )
    };
    start_time.get_or_insert(now.clone());
    tracing::info!(%hooks, "Waiting for {which} hooks to succeed");
    scope.deleting = Some((
        reason.to_owned(),
        format!("Waiting for {which} hooks to succeed (hooks: {hooks})"),
    ));
    Step::Waiting
}

/// Drains the Machine's Node while draining is allowed (not excluded, infrastructure present,
/// timeout not exceeded).
async fn drain(
    controller: &MachineController,
    scope: &mut Scope,
    now: &Time,
) -> Result<Step, Error> {
    if !is_node_drain_allowed(&scope.machine, infrastructure_present(scope), now) {
        return Ok(Step::Done);
    }
    let node_name = node_name(&scope.machine);
    let started = deletion_status(&mut scope.machine)
        .node_drain_start_time
        .get_or_insert(now.clone())
        .clone();
    scope.deleting = Some((
        machine_reason::DRAINING_NODE.to_owned(),
        format!("Drain not completed yet (started at {})", since(&started)),
    ));
    let client = controller
        .ctx
        .cluster_cache()
        .client(&scope.cluster_key)
        .await
        .map_err(Error::GetNode)?;
    match drain::drain_node(&client, &node_name).await {
        Ok(Outcome::Drained) => {
            scope.event(
                EventType::Normal,
                "SuccessfulDrainNode",
                format!("success draining Machine's node {node_name:?}"),
            );
            Ok(Step::Done)
        }
        Ok(Outcome::Waiting(message)) => {
            scope.deleting = Some((
                machine_reason::DRAINING_NODE.to_owned(),
                format!(
                    "Drain not completed yet (started at {}):\n{message}",
                    since(&started)
                ),
            ));
            scope.requeue(drain_wait(&scope.machine, now));
            Ok(Step::Waiting)
        }
        Err(source) => {
            scope.event(
                EventType::Warning,
                "FailedDrainNode",
                format!("error draining Machine's node {node_name:?}: {source}"),
            );
            Err(Error::DrainNode {
                node: node_name,
                source,
            })
        }
    }
}

fn infrastructure_present(scope: &Scope) -> bool {
    scope
        .infra_machine
        .as_ref()
        .is_some_and(|infra| !infra.is_deleting())
}

/// Waits for the Node's volumes to detach while that is allowed (not excluded,
/// infrastructure present, timeout not exceeded).
async fn wait_for_volume_detach(
    controller: &MachineController,
    scope: &mut Scope,
    now: &Time,
) -> Result<Step, Error> {
    if !is_node_volume_detaching_allowed(&scope.machine, infrastructure_present(scope), now) {
        return Ok(Step::Done);
    }
    let node_name = node_name(&scope.machine);
    let started = deletion_status(&mut scope.machine)
        .wait_for_node_volume_detach_start_time
        .get_or_insert(now.clone())
        .clone();
    let node = controller
        .ctx
        .cluster_cache()
        .node(&scope.cluster_key, &node_name)
        .await
        .map_err(|source| Error::GetNodeVolumes {
            node: node_name.clone(),
            source,
        })?;
    if !node.as_deref().is_some_and(has_attached_volumes) {
        return Ok(Step::Done);
    }
    scope.deleting = Some((
        machine_reason::WAITING_FOR_VOLUME_DETACH.to_owned(),
        format!(
            "Waiting for Node volumes to be detached (started at {})",
            since(&started)
        ),
    ));
    scope.requeue(DRAIN_RETRY_INTERVAL);
    Ok(Step::Waiting)
}

/// Deletes the infrastructure machine or (`bootstrap`) the bootstrap config `reference` names
/// and waits for it to go; a kind whose CRD is not installed counts as gone.
async fn delete_provider_object(
    controller: &MachineController,
    scope: &mut Scope,
    reference: &corral_api::ContractVersionedObjectReference,
    bootstrap: bool,
) -> Result<Step, Error> {
    let gone = match controller
        .ctx
        .external()
        .delete(reference, &scope.namespace())
        .await
    {
        Ok(gone) => gone,
        Err(error) if error.is_kind_not_installed() => true,
        Err(source) => {
            scope.deleting = Some((
                reason::INTERNAL_ERROR.to_owned(),
                format!(
                    "Failed to delete {}, please check controller logs for errors",
                    reference.kind
                ),
            ));
            let (kind, name) = (reference.kind.clone(), reference.name.clone());
            return Err(if bootstrap {
                Error::DeleteBootstrap { kind, name, source }
            } else {
                Error::DeleteInfrastructure { kind, name, source }
            });
        }
    };
    if gone {
        return Ok(Step::Done);
    }
    let waiting = if bootstrap {
        machine_reason::WAITING_FOR_BOOTSTRAP_DELETION
    } else {
        machine_reason::WAITING_FOR_INFRASTRUCTURE_DELETION
    };
    scope.deleting = Some((
        waiting.to_owned(),
        format!("Waiting for {} to be deleted", reference.kind),
    ));
    Ok(Step::Waiting)
}

/// Deletes the Machine's Node; a failure is retried until `nodeDeletionTimeoutSeconds` after
/// the deletion started, then deletion goes on without it.
async fn delete_machine_node(
    controller: &MachineController,
    scope: &mut Scope,
    now: &Time,
) -> Result<(), Error> {
    let node_name = node_name(&scope.machine);
    // Logged, not an Event: upstream records only a failed Node deletion (FailedDeleteNode),
    // and the Deleting condition says where deletion stands.
    tracing::info!(node = %node_name, "Deleting Node");
    let Err(error) = delete_node(controller, scope, &node_name).await else {
        return Ok(());
    };
    if node_deletion_timeout_expired(&scope.machine, now) {
        tracing::info!("Node deletion timeout expired, continuing without Node deletion");
        return Ok(());
    }
    scope.deleting = Some((
        machine_reason::DELETING_NODE.to_owned(),
        "Error deleting Node, please check controller logs for errors".to_owned(),
    ));
    scope.event(
        EventType::Warning,
        "FailedDeleteNode",
        format!(
            "error deleting Machine's Node: {}",
            corral_runtime::error_chain(error.as_ref())
        ),
    );
    Err(Error::DeleteNode {
        node: node_name,
        source: error,
    })
}

/// How long to wait before checking a drain again: the retry interval, or less when the drain
/// timeout ends sooner.
fn drain_wait(machine: &Machine, now: &Time) -> Duration {
    let remaining = machine
        .spec
        .deletion
        .node_drain_timeout_seconds
        .filter(|t| *t > 0)
        .and_then(|timeout| {
            let started = machine
                .status
                .as_ref()?
                .deletion
                .node_drain_start_time
                .as_ref()?;
            let left = i64::from(timeout) - seconds_since(started, now);
            Some(Duration::from_secs(left.max(0) as u64 + 1))
        });
    remaining.map_or(DRAIN_RETRY_INTERVAL, |left| left.min(DRAIN_RETRY_INTERVAL))
}

fn has_attached_volumes(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.volumes_attached.as_ref())
        .is_some_and(|volumes| !volumes.is_empty())
}

async fn delete_node(
    controller: &MachineController,
    scope: &Scope,
    node_name: &str,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = controller
        .ctx
        .cluster_cache()
        .client(&scope.cluster_key)
        .await?;
    let nodes: Api<Node> = Api::all(client);
    match nodes.delete(node_name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(error) => Err(Box::new(error)),
    }
}
