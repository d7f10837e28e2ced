//! The infrastructure and bootstrap templates a MachineSet or MachineDeployment clones
//! (upstream `reconcileExternalTemplateReference` in both controllers): they must exist, and
//! they get the Cluster as an owner, so that they go with it.

use corral_api::{Cluster, ContractVersionedObjectReference};

use corral_runtime::error_chain;
use corral_runtime::external::{self, ExternalObjects};

/// What became of one template reference.
#[derive(Debug)]
pub enum TemplateCheck {
    /// It exists, and the Cluster owns it (or is unknown, for a Cluster already gone).
    Present,
    /// It does not exist.
    Missing,
    /// Its kind is not served; the message names it.
    KindNotInstalled(external::Error),
}

/// Checks one reference, read through the provider kind's cache, and adds the Cluster as
/// owner when it is missing. References to something other than a template are left alone.
pub async fn ensure_template(
    objects: &ExternalObjects,
    reference: &ContractVersionedObjectReference,
    namespace: &str,
    cluster: &Cluster,
) -> Result<TemplateCheck, external::Error> {
    if !reference.kind.ends_with("Template") {
        return Ok(TemplateCheck::Present);
    }
    match objects
        .ensure_cluster_owner(reference, namespace, cluster)
        .await
    {
        Ok(Some(_)) => {}
        Ok(None) => return Ok(TemplateCheck::Missing),
        Err(error) if error.is_kind_not_installed() => {
            return Ok(TemplateCheck::KindNotInstalled(error));
        }
        Err(error) => return Err(error),
    }
    Ok(TemplateCheck::Present)
}

/// Checks the templates of a Machine template spec; returns the blockers for ScalingUp (the
/// missing kinds first, as upstream words them, then the kinds not installed) and the first
/// failure, for the reconcile's result.
pub async fn check_templates(
    objects: &ExternalObjects,
    spec: &corral_api::MachineSpec,
    namespace: &str,
    cluster: &Cluster,
) -> (
    Vec<String>,
    Option<(ContractVersionedObjectReference, TemplateFailure)>,
) {
    let mut references = vec![spec.infrastructure_ref.clone()];
    references.extend(spec.bootstrap.config_ref.clone());
    let mut missing: Vec<String> = Vec::new();
    let mut not_installed: Vec<String> = Vec::new();
    let mut failure = None;
    for reference in references {
        let outcome = ensure_template(objects, &reference, namespace, cluster).await;
        let failed = match outcome {
            Ok(TemplateCheck::Present) => None,
            Ok(TemplateCheck::Missing) => {
                missing.push(reference.kind.clone());
                Some(TemplateFailure::Missing)
            }
            Ok(TemplateCheck::KindNotInstalled(error)) => {
                not_installed.push(error_chain(&error));
                Some(TemplateFailure::Error(error))
            }
            Err(error) => Some(TemplateFailure::Error(error)),
        };
        if let Some(failed) = failed
            && failure.is_none()
        {
            failure = Some((reference, failed));
        }
    }
    let kinds: Vec<&str> = missing.iter().map(String::as_str).collect();
    let mut blockers: Vec<String> = super::status::missing_references_message(&kinds)
        .into_iter()
        .collect();
    blockers.extend(not_installed);
    (blockers, failure)
}

/// Why a template check failed.
#[derive(Debug)]
pub enum TemplateFailure {
    /// The template does not exist.
    Missing,
    /// Reading or writing it failed, or its kind is not installed.
    Error(external::Error),
}
