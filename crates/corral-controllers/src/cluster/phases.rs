//! The Cluster's infrastructure cluster and control plane (upstream
//! `core/reconcilers/cluster/cluster_controller_phases.go`): own and label them, read what the
//! contract says they report, and copy it to the Cluster.

use corral_api::{ClusterMachinesStatus, ContractVersionedObjectReference};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;

use super::status::Observed;
use super::{ClusterController, Error, Scope};
use corral_runtime::error_chain;
use corral_runtime::external::{self, ExternalObject};
use corral_runtime::triggers::ReferencedObject;

/// Reads a referenced provider object, watching its kind and making the Cluster its owner
/// (upstream `reconcileExternal` and `ensureOwnerRefAndLabel`: a controller reference only for
/// Clusters with a topology, so that other tools may control the object). `None` when it does
/// not exist.
async fn reconcile_external(
    controller: &ClusterController,
    scope: &Scope,
    reference: &ContractVersionedObjectReference,
) -> Result<Option<ExternalObject>, external::Error> {
    let external = controller.ctx.external();
    controller.external.track(
        ReferencedObject {
            group: reference.api_group.clone(),
            kind: reference.kind.clone(),
            namespace: scope.key.namespace.clone(),
            name: reference.name.clone(),
        },
        ObjectRef::from_obj(scope.before.as_ref()),
    );
    let kind = external
        .resolve(&reference.api_group, &reference.kind)
        .await?;
    controller.external.watch(&kind);
    let Some(mut object) = external.get_cached(reference, &scope.key.namespace).await? else {
        return Ok(None);
    };
    let owner = scope.owner_reference(scope.cluster.spec.topology.is_some());
    external
        .ensure_owner_and_cluster_label(&mut object, owner, &scope.key.name, &[])
        .await?;
    Ok(Some(object))
}

/// The infrastructure cluster (upstream `reconcileInfrastructure`): once it reports itself
/// provisioned, copies its control plane endpoint (unless the Cluster has a valid one, which
/// wins) and failure domains, and marks `status.initialization.infrastructureProvisioned`,
/// which never goes back. Without an infrastructureRef the infrastructure counts as
/// provisioned at once.
pub(super) async fn reconcile_infrastructure(
    controller: &ClusterController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let deleting = scope.cluster.metadata.deletion_timestamp.is_some();
    let Some(reference) = scope.cluster.spec.infrastructure_ref.clone() else {
        if !deleting {
            scope
                .cluster
                .status
                .get_or_insert_with(Default::default)
                .initialization
                .infrastructure_provisioned = Some(true);
        }
        return Ok(());
    };
    let already = scope
        .cluster
        .status
        .as_ref()
        .and_then(|s| s.initialization.infrastructure_provisioned)
        .unwrap_or(false);
    let object = match reconcile_external(controller, scope, &reference).await {
        Ok(Some(object)) => object,
        Ok(None) => {
            scope.infra_observed = Some(Observed::NotFound);
            if deleting || !already {
                // Its creation (or its absence, while deleting) brings the next reconcile.
                return Ok(());
            }
            return Err(Error::FindInfrastructure {
                kind: reference.kind,
                name: reference.name,
            });
        }
        Err(source) => {
            scope.infra_observed = Some(Observed::Failed(error_chain(&source)));
            return Err(Error::ReconcileInfrastructure {
                kind: reference.kind,
                name: reference.name,
                source,
            });
        }
    };
    let read_error = |source| Error::ReadInfrastructure {
        kind: reference.kind.clone(),
        name: reference.name.clone(),
        source,
    };
    let view = object.infrastructure_cluster();
    scope.infra_observed = Some(Observed::Found {
        condition: view.ready_condition().map_err(|e| e.to_string()),
    });
    copy_v1beta1_failures(
        scope,
        view.failure_reason(),
        view.failure_message(),
        &reference,
    );
    let provisioned = view.provisioned().map_err(read_error)?.unwrap_or(false);
    let endpoint = view.control_plane_endpoint().map_err(read_error)?;
    let failure_domains = view.failure_domains().map_err(read_error)?;
    let object_deleting = object.is_deleting();
    scope.infra_cluster = Some(object);
    if object_deleting || (!provisioned && !already) {
        return Ok(());
    }
    if !scope.cluster.spec.control_plane_endpoint.is_valid() {
        scope.cluster.spec.control_plane_endpoint = endpoint.unwrap_or_default();
    }
    let status = scope.cluster.status.get_or_insert_with(Default::default);
    status.failure_domains = failure_domains.unwrap_or_default();
    if !already {
        tracing::info!(kind = %reference.kind, name = %reference.name, "Infrastructure provider has completed provisioning");
        status.initialization.infrastructure_provisioned = Some(true);
        let note = format!(
            "Cluster {} InfrastructureProvisioned is now True",
            scope.key.name
        );
        scope.event(EventType::Normal, "InfrastructureReady", note);
    }
    Ok(())
}

/// The control plane (upstream `reconcileControlPlane`): once it reports itself initialized,
/// copies its endpoint (unless the Cluster has a valid one) and marks
/// `status.initialization.controlPlaneInitialized`, which never goes back.
pub(super) async fn reconcile_control_plane(
    controller: &ClusterController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let Some(reference) = scope.cluster.spec.control_plane_ref.clone() else {
        return Ok(());
    };
    let deleting = scope.cluster.metadata.deletion_timestamp.is_some();
    let already = scope
        .cluster
        .status
        .as_ref()
        .and_then(|s| s.initialization.control_plane_initialized)
        .unwrap_or(false);
    let object = match reconcile_external(controller, scope, &reference).await {
        Ok(Some(object)) => object,
        Ok(None) => {
            scope.control_plane_observed = Some(Observed::NotFound);
            if deleting || !already {
                return Ok(());
            }
            return Err(Error::FindControlPlane {
                kind: reference.kind,
                name: reference.name,
            });
        }
        Err(source) => {
            scope.control_plane_observed = Some(Observed::Failed(error_chain(&source)));
            return Err(Error::ReconcileControlPlane {
                kind: reference.kind,
                name: reference.name,
                source,
            });
        }
    };
    let read_error = |source| Error::ReadControlPlane {
        kind: reference.kind.clone(),
        name: reference.name.clone(),
        source,
    };
    let view = object.control_plane();
    scope.control_plane_observed = Some(Observed::Found {
        condition: view.available_condition().map_err(|e| e.to_string()),
    });
    let initialized = view.initialized().map_err(read_error)?.unwrap_or(false);
    let endpoint = view.control_plane_endpoint().map_err(read_error)?;
    let object_deleting = object.is_deleting();
    scope.control_plane_initialized = initialized;
    scope.control_plane = Some(object);
    if object_deleting || (!initialized && !already) {
        return Ok(());
    }
    if !scope.cluster.spec.control_plane_endpoint.is_valid() {
        scope.cluster.spec.control_plane_endpoint = endpoint.unwrap_or_default();
    }
    if !already {
        tracing::info!(kind = %reference.kind, name = %reference.name, "Control plane has completed initialization");
        let status = scope.cluster.status.get_or_insert_with(Default::default);
        status.initialization.control_plane_initialized = Some(true);
        let note = format!(
            "Cluster {} ControlPlaneInitialized is now True",
            scope.key.name
        );
        scope.event(EventType::Normal, "ControlPlaneInitialized", note);
    }
    Ok(())
}

/// Without a controlPlaneRef the control plane is made of Machines, and it is initialized
/// once one of them has a Node, as the ControlPlaneInitialized condition says.
pub(super) fn reconcile_control_plane_initialized(scope: &mut Scope) {
    if scope.cluster.spec.control_plane_ref.is_some() {
        return;
    }
    let has_node = scope
        .descendants
        .control_plane_machines
        .iter()
        .any(|machine| {
            machine
                .status
                .as_ref()
                .is_some_and(|s| s.node_ref.is_some())
        });
    let status = scope.cluster.status.get_or_insert_with(Default::default);
    if has_node && status.initialization.control_plane_initialized != Some(true) {
        status.initialization.control_plane_initialized = Some(true);
        let note = format!(
            "Cluster {} ControlPlaneInitialized is now True",
            scope.key.name
        );
        scope.event(EventType::Normal, "ControlPlaneInitialized", note);
    }
}

/// The replica counters a control plane reports (upstream `setControlPlaneReplicas`); a
/// v1beta1 control plane's available replicas are its desired minus unavailable ones.
pub(super) fn control_plane_replicas(control_plane: &ExternalObject) -> ClusterMachinesStatus {
    let view = control_plane.control_plane();
    let desired = view.replicas().ok().flatten();
    let available = match view.available_replicas().ok().flatten() {
        Some(available) => Some(available),
        None => match (desired, view.v1beta1_unavailable_replicas().ok().flatten()) {
            (Some(desired), Some(unavailable)) => Some((desired - unavailable).max(0)),
            _ => None,
        },
    };
    ClusterMachinesStatus {
        desired_replicas: desired,
        replicas: view.status_replicas().ok().flatten(),
        ready_replicas: view.ready_replicas().ok().flatten(),
        available_replicas: available,
        up_to_date_replicas: view.up_to_date_replicas().ok().flatten(),
        versions: view.status_versions().ok().flatten().unwrap_or_default(),
        upgrade_plan: Vec::new(),
    }
}

/// Copies a v1beta1 provider's terminal failure to `status.deprecated.v1beta1`, as upstream
/// still does while serving v1beta1.
fn copy_v1beta1_failures(
    scope: &mut Scope,
    reason: Result<Option<String>, corral_api::contract::ContractError>,
    message: Result<Option<String>, corral_api::contract::ContractError>,
    reference: &ContractVersionedObjectReference,
) {
    let reason = reason.ok().flatten().filter(|r| !r.is_empty());
    let message = message.ok().flatten().filter(|m| !m.is_empty());
    if reason.is_none() && message.is_none() {
        return;
    }
    let deprecated = &mut scope
        .cluster
        .status
        .get_or_insert_with(Default::default)
        .deprecated
        .v1beta1;
    if let Some(reason) = reason {
        deprecated.failure_reason = Some(reason);
    }
    if let Some(message) = message {
        deprecated.failure_message = Some(format!(
            "Failure detected from referenced resource {}.{} with name {:?}: {message}",
            reference.kind, reference.api_group, reference.name
        ));
    }
}
