//! Deleting a Cluster in order (upstream `reconcileDelete` in
//! `core/reconcilers/cluster/cluster_controller.go`): the workers first (MachineDeployments,
//! MachineSets and Machines the Cluster owns directly; their owners delete the rest), then the
//! control plane, then the infrastructure cluster, and the finalizer last. Each step waits for
//! the previous one's objects to be gone; their deletions bring the next reconcile.

use corral_api::conditions::cluster::reason as cluster_reason;
use corral_api::conditions::reason;
use corral_api::{Machine, MachineDeployment, MachineSet};
use kube::api::{Api, DeleteParams};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};

use super::status::{Observed, is_owned_by_cluster, list_to_string};
use super::{ClusterController, Error, Scope};

/// What is still in the way of a step, for the Deleting condition's message.
pub fn describe_remaining(kind: &str, names: &[String]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let plural = if names.len() == 1 { "" } else { "s" };
    Some(format!(
        "* {kind}{plural}: {}",
        list_to_string(&names, 3, names.len())
    ))
}

/// Deletes a Cluster as upstream's `reconcileDelete`: the descendants it owns (workers, and
/// control plane Machines without a control plane provider), then, once none is left, its
/// control plane and its infrastructure cluster, waiting for each; then the finalizer goes.
pub(super) async fn reconcile_delete(
    controller: &ClusterController,
    scope: &mut Scope,
) -> Result<(), Error> {
    scope.deleting = Some((reason::DELETING.to_owned(), "Deletion started".to_owned()));
    delete_owned_descendants(controller, scope).await?;
    let remaining = remaining_descendants(scope);
    if !remaining.is_empty() {
        tracing::info!("Waiting for worker Machines to be deleted");
        scope.deleting = Some((
            cluster_reason::WAITING_FOR_WORKERS_DELETION.to_owned(),
            remaining.join("\n"),
        ));
        return Ok(());
    }
    let namespace = scope.key.namespace.clone();
    if let Some(reference) = scope.cluster.spec.control_plane_ref.clone()
        && !delete_referenced(
            controller,
            scope,
            &reference,
            &namespace,
            Part::ControlPlane,
        )
        .await?
    {
        return Ok(());
    }
    if let Some(reference) = scope.cluster.spec.infrastructure_ref.clone()
        && !delete_referenced(
            controller,
            scope,
            &reference,
            &namespace,
            Part::Infrastructure,
        )
        .await?
    {
        return Ok(());
    }
    scope.deleting = Some((
        reason::DELETION_COMPLETED.to_owned(),
        "Deletion completed".to_owned(),
    ));
    scope
        .cluster
        .finalizers_mut()
        .retain(|f| f != corral_api::finalizers::CLUSTER);
    controller.ctx.cluster_cache().forget(&scope.key);
    controller
        .external
        .forget(&ObjectRef::from_obj(scope.before.as_ref()));
    scope.event(
        EventType::Normal,
        "Deleted",
        format!("Cluster {} has been deleted", scope.key.name),
    );
    Ok(())
}

/// Deletes what the Cluster owns directly and is not being deleted yet: MachineDeployments,
/// MachineSets, worker Machines, and the control plane Machines when no control plane
/// provider owns them.
async fn delete_owned_descendants(
    controller: &ClusterController,
    scope: &Scope,
) -> Result<(), Error> {
    let client = controller.ctx.client();
    let namespace = &scope.key.namespace;
    let cluster_name = &scope.key.name;
    let descendants = &scope.descendants;
    let owned = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        is_owned_by_cluster(meta, cluster_name) && meta.deletion_timestamp.is_none()
    };
    for md in descendants
        .machine_deployments
        .iter()
        .filter(|o| owned(&o.metadata))
    {
        delete_descendant::<MachineDeployment>(
            client,
            namespace,
            &md.name_any(),
            "MachineDeployment",
        )
        .await?;
    }
    for ms in descendants
        .machine_sets
        .iter()
        .filter(|o| owned(&o.metadata))
    {
        delete_descendant::<MachineSet>(client, namespace, &ms.name_any(), "MachineSet").await?;
    }
    let mut machines: Vec<&Machine> = descendants
        .worker_machines
        .iter()
        .map(AsRef::as_ref)
        .collect();
    if scope.cluster.spec.control_plane_ref.is_none() {
        machines.extend(descendants.control_plane_machines.iter().map(AsRef::as_ref));
    }
    for machine in machines.iter().filter(|m| owned(&m.metadata)) {
        delete_descendant::<Machine>(client, namespace, &machine.name_any(), "Machine").await?;
    }
    Ok(())
}

/// The Deleting condition's lines for the descendants still there, one per kind.
fn remaining_descendants(scope: &Scope) -> Vec<String> {
    let descendants = &scope.descendants;
    let names = |objects: &mut dyn Iterator<Item = String>| objects.collect::<Vec<_>>();
    let mut remaining = Vec::new();
    remaining.extend(describe_remaining(
        "MachineDeployment",
        &names(&mut descendants.machine_deployments.iter().map(|o| o.name_any())),
    ));
    remaining.extend(describe_remaining(
        "MachineSet",
        &names(&mut descendants.machine_sets.iter().map(|o| o.name_any())),
    ));
    remaining.extend(describe_remaining(
        "Worker Machine",
        &names(&mut descendants.worker_machines.iter().map(|o| o.name_any())),
    ));
    if scope.cluster.spec.control_plane_ref.is_none() {
        remaining.extend(describe_remaining(
            "Control plane Machine",
            &names(
                &mut descendants
                    .control_plane_machines
                    .iter()
                    .map(|o| o.name_any()),
            ),
        ));
    }
    remaining
}

/// The Cluster's two provider objects, deleted in this order.
#[derive(Clone, Copy)]
enum Part {
    ControlPlane,
    Infrastructure,
}

/// Deletes the control plane or infrastructure cluster `reference` names; whether it is gone
/// (a kind no API serves has no objects left to wait for).
async fn delete_referenced(
    controller: &ClusterController,
    scope: &mut Scope,
    reference: &corral_api::ContractVersionedObjectReference,
    namespace: &str,
    part: Part,
) -> Result<bool, Error> {
    let gone = match controller.ctx.external().delete(reference, namespace).await {
        Ok(gone) => gone,
        Err(error) if error.is_kind_not_installed() => true,
        Err(source) => {
            let (kind, name) = (reference.kind.clone(), reference.name.clone());
            return Err(match part {
                Part::ControlPlane => Error::DeleteControlPlane { kind, name, source },
                Part::Infrastructure => Error::DeleteInfrastructure { kind, name, source },
            });
        }
    };
    let (observed, waiting) = match part {
        Part::ControlPlane => (
            &mut scope.control_plane_observed,
            cluster_reason::WAITING_FOR_CONTROL_PLANE_DELETION,
        ),
        Part::Infrastructure => (
            &mut scope.infra_observed,
            cluster_reason::WAITING_FOR_INFRASTRUCTURE_DELETION,
        ),
    };
    if gone {
        *observed = Some(Observed::NotFound);
    } else {
        scope.deleting = Some((
            waiting.to_owned(),
            format!("Waiting for {} to be deleted", reference.kind),
        ));
    }
    Ok(gone)
}

async fn delete_descendant<K>(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    kind: &'static str,
) -> Result<(), Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    tracing::info!("Deleting {kind} {namespace}/{name}");
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(source) => Err(Error::DeleteDescendant {
            kind,
            name: name.to_owned(),
            source,
        }),
    }
}
