//! External remediation requests (upstream `patchUnhealthyTargets`, `patchHealthyTargets` and
//! `getExternalRemediationRequest` in
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_controller.go`).
//!
//! With `spec.remediation.templateRef`, an unhealthy Machine is remediated by someone else:
//! the MachineHealthCheck creates an object from the template (a `<Kind>Template` whose
//! `spec.template` holds the request), of kind `<Kind>`, named like the Machine and owned by
//! it, and an external remediator acts on it. The name makes the request unique per Machine
//! and kind, so creating it again finds it there. When the Machine is healthy again the
//! request is deleted.
//!
//! The template reference carries an `apiVersion`: remediation kinds follow no provider
//! contract, so they are found by discovery of that version, not by a contract label.

use std::collections::HashMap;

use corral_api::conditions::machine::reason::{
    REMEDIATION_REQUEST_CREATION_FAILED, REMEDIATION_TEMPLATE_NOT_FOUND,
};
use corral_api::contract::ContractVersion;
use corral_api::{
    ContractVersionedObjectReference, Machine, MachineHealthCheck,
    MachineHealthCheckRemediationTemplateReference,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Client, Resource, ResourceExt};

use super::Error;
use corral_runtime::external::{self, CreateFromTemplate, ExternalObject, ResolvedKind};

/// The remediation requests of one MachineHealthCheck, as listed at the start of a reconcile.
pub(crate) struct RemediationRequests<'a> {
    client: Client,
    check: &'a MachineHealthCheck,
    template_ref: &'a MachineHealthCheckRemediationTemplateReference,
    namespace: String,
    requests: Api<DynamicObject>,
    request_resource: ApiResource,
    existing: HashMap<String, DynamicObject>,
}

/// Why a request could not be created: the reason and message of the Machine's
/// `ExternallyRemediated` condition, and the error.
pub(crate) struct CreateFailure {
    pub reason: &'static str,
    pub message: String,
    pub error: Error,
}

impl<'a> RemediationRequests<'a> {
    /// The requests of the MachineHealthCheck's request kind in its namespace; `None` without a
    /// template reference.
    pub(crate) async fn list(
        client: &Client,
        check: &'a MachineHealthCheck,
    ) -> Result<Option<RemediationRequests<'a>>, Error> {
        let Some(template_ref) = check.spec.remediation.template_ref.as_ref() else {
            return Ok(None);
        };
        let request_kind = template_ref
            .kind
            .strip_suffix("Template")
            .filter(|kind| !kind.is_empty())
            .ok_or_else(|| Error::RemediationTemplateKind {
                kind: template_ref.kind.clone(),
            })?;
        let request_resource = resolve(client, &template_ref.api_version, request_kind).await?;
        let namespace = check.namespace().unwrap_or_default();
        let requests: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &namespace, &request_resource);
        let existing = requests
            .list(&ListParams::default())
            .await
            .map_err(|source| Error::ListRemediationRequests {
                kind: request_kind.to_owned(),
                namespace: namespace.clone(),
                source,
            })?
            .items
            .into_iter()
            .map(|request| (request.name_any(), request))
            .collect();
        Ok(Some(RemediationRequests {
            client: client.clone(),
            check,
            template_ref,
            namespace,
            requests,
            request_resource,
            existing,
        }))
    }

    /// Whether the Machine has a request.
    pub(crate) fn exists(&self, machine: &Machine) -> bool {
        self.existing.contains_key(&machine.name_any())
    }

    /// Deletes the Machine's request, if it has one not already being deleted.
    pub(crate) async fn delete(&self, machine: &Machine) -> Result<(), Error> {
        let name = machine.name_any();
        let Some(request) = self.existing.get(&name) else {
            return Ok(());
        };
        if request.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        tracing::info!(
            machine = %name,
            "Deleting {} {}/{name}, the Machine is healthy again",
            self.request_resource.kind,
            self.namespace
        );
        match self
            .requests
            .delete(&name, &DeleteParams::background())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
            Err(source) => Err(Error::DeleteRemediationRequest {
                kind: self.request_resource.kind.clone(),
                namespace: self.namespace.clone(),
                name,
                source,
            }),
        }
    }

    /// Creates the Machine's request from the template (upstream `external.GenerateTemplate`:
    /// the template's labels and annotations, the cluster-name label, the cloned-from
    /// annotations, the Machine as owner). One created meanwhile by another reconcile counts
    /// as created.
    pub(crate) async fn create(&self, machine: &Machine) -> Result<(), CreateFailure> {
        let template_ref = self.template_ref;
        let not_found = |error: Error| CreateFailure {
            reason: REMEDIATION_TEMPLATE_NOT_FOUND,
            message: format!(
                "Error retrieving remediation template {} {}/{}",
                template_ref.kind, self.namespace, template_ref.name
            ),
            error,
        };
        let template_resource =
            resolve(&self.client, &template_ref.api_version, &template_ref.kind)
                .await
                .map_err(not_found)?;
        let templates: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &self.namespace, &template_resource);
        let template = match templates.get_opt(&template_ref.name).await {
            Ok(Some(template)) => template,
            Ok(None) => {
                return Err(not_found(Error::FindRemediationTemplate {
                    kind: template_ref.kind.clone(),
                    namespace: self.namespace.clone(),
                    name: template_ref.name.clone(),
                }));
            }
            Err(source) => {
                return Err(not_found(Error::GetRemediationTemplate {
                    kind: template_ref.kind.clone(),
                    namespace: self.namespace.clone(),
                    name: template_ref.name.clone(),
                    source,
                }));
            }
        };
        let reference = ContractVersionedObjectReference {
            api_group: template_resource.group.clone(),
            kind: template_ref.kind.clone(),
            name: template_ref.name.clone(),
        };
        let owner = OwnerReference {
            api_version: Machine::api_version(&()).into_owned(),
            kind: Machine::kind(&()).into_owned(),
            name: machine.name_any(),
            uid: machine.uid().unwrap_or_default(),
            controller: None,
            block_owner_deletion: None,
        };
        let request = CreateFromTemplate {
            template: &reference,
            namespace: &self.namespace,
            name: machine.name_any(),
            cluster_name: &machine.spec.cluster_name,
            labels: Default::default(),
            annotations: Default::default(),
            owner: Some(owner),
        };
        // `generate_from_template` reads only the template object; the contract is not
        // consulted, remediation kinds have none.
        let template = ExternalObject {
            object: template,
            kind: ResolvedKind {
                resource: template_resource,
                contract: ContractVersion::CURRENT,
            },
        };
        let Some(mut object) = external::generate_from_template(&template, &request) else {
            return Err(not_found(Error::ReadRemediationTemplate {
                kind: template_ref.kind.clone(),
                namespace: self.namespace.clone(),
                name: template_ref.name.clone(),
            }));
        };
        object.types = Some(kube::api::TypeMeta {
            api_version: self.request_resource.api_version.clone(),
            kind: self.request_resource.kind.clone(),
        });
        tracing::info!(
            machine = %machine.name_any(),
            "Creating {} {}/{} to remediate the Machine",
            self.request_resource.kind,
            self.namespace,
            machine.name_any()
        );
        match self.requests.create(&PostParams::default(), &object).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
            Err(source) => Err(CreateFailure {
                reason: REMEDIATION_REQUEST_CREATION_FAILED,
                message: "Please check controller logs for errors".into(),
                error: Error::CreateRemediationRequest {
                    kind: self.request_resource.kind.clone(),
                    namespace: self.namespace.clone(),
                    name: machine.name_any(),
                    machine_health_check: corral_runtime::object_key(self.check),
                    source,
                },
            }),
        }
    }
}

/// The resource serving `kind` in `api_version`.
async fn resolve(client: &Client, api_version: &str, kind: &str) -> Result<ApiResource, Error> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    kube::discovery::pinned_kind(client, &gvk)
        .await
        .map(|(resource, _)| resource)
        .map_err(|source| Error::ResolveRemediationKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            source,
        })
}
