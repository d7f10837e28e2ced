//! The Machine's own metadata and its provider objects (upstream
//! `core/reconcilers/machine/machine_controller_phases.go`): adoption and the cluster-name
//! label, the bootstrap config (`dataSecretName`), the infrastructure machine (`providerID`,
//! addresses, failure domain) and the certificates expiry date.

use corral_api::annotations::MACHINE_CERTIFICATES_EXPIRY_DATE;
use corral_api::labels;
use corral_api::{ContractVersionedObjectReference, GROUP, VERSION};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::{Error, MachineController, Scope};
use corral_runtime::error_chain;
use corral_runtime::external::{self, ExternalObject, Observed};
use corral_runtime::triggers::ReferencedObject;

/// Whether a Machine should be adopted by its Cluster (upstream `shouldAdopt`): it has no
/// controller and no Cluster owner, and no label saying a MachineSet, MachinePool or control
/// plane created it (a restore from backup may bring a Machine before its owner).
pub fn should_adopt(machine: &corral_api::Machine) -> bool {
    let owners = machine.owner_references();
    if owners.iter().any(|owner| owner.controller == Some(true)) {
        return false;
    }
    if owners
        .iter()
        .any(|owner| owner.kind == "Cluster" && external::api_group_of(&owner.api_version) == GROUP)
    {
        return false;
    }
    let machine_labels = machine.labels();
    ![
        labels::MACHINE_SET_NAME,
        labels::MACHINE_POOL_NAME,
        labels::CONTROL_PLANE_NAME,
    ]
    .iter()
    .any(|label| machine_labels.contains_key(*label))
}

/// Adopts a standalone Machine into its Cluster and sets the cluster-name label (upstream
/// `reconcileMachineOwnerAndLabels`).
pub(super) fn reconcile_owner_and_labels(scope: &mut Scope) {
    if should_adopt(&scope.machine) && scope.cluster.uid().is_some() {
        let owner = OwnerReference {
            api_version: format!("{GROUP}/{VERSION}"),
            kind: "Cluster".into(),
            name: scope.cluster.name_any(),
            uid: scope.cluster.uid().unwrap_or_default(),
            controller: None,
            block_owner_deletion: None,
        };
        scope
            .machine
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(owner);
    }
    let cluster_name = scope.machine.spec.cluster_name.clone();
    scope
        .machine
        .labels_mut()
        .insert(labels::CLUSTER_NAME.to_owned(), cluster_name);
}

/// Reads a provider object the Machine references, watching its kind, and makes the Machine
/// its controller, taking over from the MachineSet or control plane that created it (upstream
/// `ensureExternalOwnershipAndWatch`). `None` when it does not exist.
async fn reconcile_external(
    controller: &MachineController,
    scope: &Scope,
    reference: &ContractVersionedObjectReference,
) -> Result<Option<ExternalObject>, external::Error> {
    let objects = controller.ctx.external();
    let namespace = scope.namespace();
    controller.external.track(
        ReferencedObject {
            group: reference.api_group.clone(),
            kind: reference.kind.clone(),
            namespace: namespace.clone(),
            name: reference.name.clone(),
        },
        ObjectRef::from_obj(scope.before.as_ref()),
    );
    let kind = objects
        .resolve(&reference.api_group, &reference.kind)
        .await?;
    controller.external.watch(&kind);
    let Some(mut object) = objects.get_cached(reference, &namespace).await? else {
        return Ok(None);
    };
    let owner = OwnerReference {
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "Machine".into(),
        name: scope.machine.name_any(),
        uid: scope.machine.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    // A control plane Machine's objects are created by the control plane provider.
    let mut drop_owners = vec![(GROUP, "MachineSet")];
    let control_plane_kind = scope
        .cluster
        .spec
        .control_plane_ref
        .as_ref()
        .filter(|_| scope.machine.labels().contains_key(labels::CONTROL_PLANE))
        .map(|reference| (reference.api_group.clone(), reference.kind.clone()));
    if let Some((group, kind)) = &control_plane_kind {
        drop_owners.push((group.as_str(), kind.as_str()));
    }
    objects
        .ensure_owner_and_cluster_label(
            &mut object,
            owner,
            &scope.machine.spec.cluster_name,
            &drop_owners,
        )
        .await?;
    Ok(Some(object))
}

/// The bootstrap config (upstream `reconcileBootstrap`): once it reports its data Secret
/// created, copies the Secret's name to `spec.bootstrap.dataSecretName` and marks
/// `status.initialization.bootstrapDataSecretCreated`. A Machine given `dataSecretName`
/// directly has its bootstrap data at once.
pub(super) async fn reconcile_bootstrap(
    controller: &MachineController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let deleting = scope.machine.metadata.deletion_timestamp.is_some();
    let Some(reference) = scope.machine.spec.bootstrap.config_ref.clone() else {
        if scope.machine.spec.bootstrap.data_secret_name.is_some() {
            scope
                .machine
                .status
                .get_or_insert_with(Default::default)
                .initialization
                .bootstrap_data_secret_created = Some(true);
        }
        return Ok(());
    };
    let object = match reconcile_external(controller, scope, &reference).await {
        Ok(Some(object)) => object,
        Ok(None) => {
            scope.bootstrap_observed = Some(Observed::NotFound);
            // Its creation brings the next reconcile; while deleting, it may well be gone.
            return Ok(());
        }
        Err(source) => {
            scope.bootstrap_observed = Some(Observed::Failed(error_chain(&source)));
            if deleting && source.is_kind_not_installed() {
                scope.bootstrap_observed = Some(Observed::NotFound);
                return Ok(());
            }
            return Err(Error::ReconcileBootstrap {
                kind: reference.kind,
                name: reference.name,
                source,
            });
        }
    };
    let read_error = |source| Error::ReadBootstrap {
        kind: reference.kind.clone(),
        name: reference.name.clone(),
        source,
    };
    let view = object.bootstrap_config();
    scope.bootstrap_observed = Some(Observed::Found {
        condition: view.ready_condition().map_err(|e| e.to_string()),
    });
    copy_v1beta1_failures(
        scope,
        view.failure_reason().ok().flatten(),
        view.failure_message().ok().flatten(),
        &reference.kind,
        &reference.name,
    );
    let created = view
        .data_secret_created()
        .map_err(read_error)?
        .unwrap_or(false);
    let secret_name = view.data_secret_name().map_err(read_error)?;
    let object_deleting = object.is_deleting();
    scope.bootstrap_config = Some(object);
    let status = scope.machine.status.get_or_insert_with(Default::default);
    if scope.machine.spec.bootstrap.data_secret_name.is_some() {
        status.initialization.bootstrap_data_secret_created = Some(true);
        return Ok(());
    }
    if object_deleting || !created {
        return Ok(());
    }
    let Some(secret_name) = secret_name else {
        return Err(Error::ReadDataSecretName {
            kind: reference.kind,
            name: reference.name,
        });
    };
    tracing::info!(kind = %reference.kind, name = %reference.name, secret = %secret_name, "Bootstrap provider generated data secret");
    status.initialization.bootstrap_data_secret_created = Some(true);
    scope.machine.spec.bootstrap.data_secret_name = Some(secret_name);
    Ok(())
}

/// The infrastructure machine (upstream `reconcileInfrastructure`): once it reports itself
/// provisioned and has a provider ID, copies the provider ID, addresses and failure domain and
/// marks `status.initialization.infrastructureProvisioned`, which never goes back.
pub(super) async fn reconcile_infrastructure(
    controller: &MachineController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let deleting = scope.machine.metadata.deletion_timestamp.is_some();
    let reference = scope.machine.spec.infrastructure_ref.clone();
    let already = scope
        .machine
        .status
        .as_ref()
        .and_then(|s| s.initialization.infrastructure_provisioned)
        .unwrap_or(false);
    let object = match reconcile_external(controller, scope, &reference).await {
        Ok(Some(object)) => object,
        Ok(None) => {
            scope.infra_observed = Some(Observed::NotFound);
            if deleting || !already {
                return Ok(());
            }
            let message = format!(
                "Machine infrastructure resource {} {}/{} has been deleted after provisioning was completed",
                reference.kind,
                scope.namespace(),
                reference.name
            );
            let deprecated = &mut scope
                .machine
                .status
                .get_or_insert_with(Default::default)
                .deprecated
                .v1beta1;
            deprecated.failure_reason = Some("InvalidConfiguration".to_owned());
            deprecated.failure_message = Some(message);
            return Err(Error::FindInfrastructure {
                kind: reference.kind,
                name: reference.name,
            });
        }
        Err(source) => {
            scope.infra_observed = Some(Observed::Failed(error_chain(&source)));
            if deleting && source.is_kind_not_installed() {
                scope.infra_observed = Some(Observed::NotFound);
                return Ok(());
            }
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
    let view = object.infrastructure_machine();
    scope.infra_observed = Some(Observed::Found {
        condition: view.ready_condition().map_err(|e| e.to_string()),
    });
    copy_v1beta1_failures(
        scope,
        view.failure_reason().ok().flatten(),
        view.failure_message().ok().flatten(),
        &reference.kind,
        &reference.name,
    );
    let provisioned = view.provisioned().map_err(read_error)?.unwrap_or(false);
    let provider_id = view.provider_id().map_err(read_error)?;
    let addresses = view.addresses().map_err(read_error)?;
    let failure_domain = view.failure_domain().map_err(read_error)?;
    let object_deleting = object.is_deleting();
    scope.infra_machine = Some(object);
    if object_deleting || (!provisioned && !already) {
        return Ok(());
    }
    let Some(provider_id) = provider_id.filter(|id| !id.is_empty()) else {
        tracing::info!(kind = %reference.kind, name = %reference.name, "Waiting for infrastructure provider to set spec.providerID");
        return Ok(());
    };
    if !already {
        tracing::info!(kind = %reference.kind, name = %reference.name, "Infrastructure provider has completed provisioning");
    }
    scope.machine.spec.provider_id = Some(provider_id);
    let status = scope.machine.status.get_or_insert_with(Default::default);
    status.addresses = addresses.unwrap_or_default();
    if let Some(failure_domain) = failure_domain.filter(|d| !d.is_empty()) {
        status.failure_domain = Some(failure_domain);
    }
    status.initialization.infrastructure_provisioned = Some(true);
    Ok(())
}

/// `status.certificatesExpiryDate` of a control plane Machine, from the certificates-expiry
/// annotation on the Machine or else on its bootstrap config (upstream
/// `reconcileCertificateExpiry`).
pub(super) fn reconcile_certificates_expiry(scope: &mut Scope) -> Result<(), Box<Error>> {
    if !scope.machine.labels().contains_key(labels::CONTROL_PLANE) {
        return Ok(());
    }
    let value = scope
        .machine
        .annotations()
        .get(MACHINE_CERTIFICATES_EXPIRY_DATE)
        .cloned()
        .or_else(|| {
            scope.bootstrap_config.as_ref().and_then(|config| {
                config
                    .object
                    .annotations()
                    .get(MACHINE_CERTIFICATES_EXPIRY_DATE)
                    .cloned()
            })
        });
    let expiry = match value {
        Some(value) => Some(Time(value.parse::<Timestamp>().map_err(|_| {
            Box::new(Error::ParseCertificatesExpiry {
                annotation: MACHINE_CERTIFICATES_EXPIRY_DATE,
                value,
            })
        })?)),
        None => None,
    };
    scope
        .machine
        .status
        .get_or_insert_with(Default::default)
        .certificates_expiry_date = expiry;
    Ok(())
}

/// Copies a v1beta1 provider's terminal failure to `status.deprecated.v1beta1`.
fn copy_v1beta1_failures(
    scope: &mut Scope,
    reason: Option<String>,
    message: Option<String>,
    kind: &str,
    name: &str,
) {
    let reason = reason.filter(|r| !r.is_empty());
    let message = message.filter(|m| !m.is_empty());
    if reason.is_none() && message.is_none() {
        return;
    }
    let deprecated = &mut scope
        .machine
        .status
        .get_or_insert_with(Default::default)
        .deprecated
        .v1beta1;
    if let Some(reason) = reason {
        deprecated.failure_reason = Some(reason);
    }
    if let Some(message) = message {
        deprecated.failure_message =
            Some(format!("Failure detected from {kind} {name}: {message}"));
    }
}
