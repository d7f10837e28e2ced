//! Turning a [`RolloutPlan`] into MachineSets (upstream
//! `createOrUpdateMachineSetsAndSyncMachineDeploymentRevision`, `computeDesiredMS` and
//! `cleanupDeployment`): each MachineSet gets the MachineDeployment's labels, selector,
//! annotations and the template fields that change in place, the replicas and bookkeeping
//! annotations the plan gives it; the current one is created when it does not exist; old ones
//! without Machines are deleted once the rollout is complete.

use std::collections::BTreeMap;
use std::sync::Arc;

use corral_api::annotations::{DESIRED_REPLICAS, MAX_REPLICAS, REVISION};
use corral_api::labels::{MACHINE_DEPLOYMENT_NAME, MACHINE_DEPLOYMENT_UNIQUE};
use corral_api::{
    GROUP, MachineDeployment, MachineSet, MachineSetSpec, MachineTemplateSpec, VERSION,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;

use super::rollout_planner::{MachineSetPlan, REVISION_HISTORY, RolloutPlan};
use super::{
    Error, MachineDeploymentController, REVISION_HISTORY_LIMIT, ROLLBACK_TO_REVISION, Scope,
};
use corral_runtime::naming::fnv32a;
use corral_runtime::patch::{Part, patch_if_changed};

/// Annotations of the MachineDeployment its MachineSets do not get (upstream
/// `annotationsToSkip`, plus Corral's requests, which are for the MachineDeployment alone).
const ANNOTATIONS_NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    ROLLBACK_TO_REVISION,
    REVISION_HISTORY_LIMIT,
];

/// The hash of the fields of a template that call for new Machines (upstream
/// `hash.Compute(MachineTemplateDeepCopyRolloutFields(...))`); the fields changed in place
/// are left out, so that changing them keeps the MachineSet.
pub fn template_hash(template: &MachineTemplateSpec) -> u32 {
    let mut spec = template.spec.clone();
    spec.cluster_name = String::new();
    spec.provider_id = None;
    spec.min_ready_seconds = None;
    spec.readiness_gates = Vec::new();
    spec.deletion = Default::default();
    spec.taints = Vec::new();
    let bytes = serde_json::to_vec(&spec).unwrap_or_default();
    fnv32a(&bytes)
}

/// The annotations every MachineSet of the MachineDeployment carries (upstream
/// `MachineSetAnnotationsFromMachineDeployment`), before the plan's own.
fn annotations_from(machine_deployment: &MachineDeployment) -> BTreeMap<String, String> {
    machine_deployment
        .annotations()
        .iter()
        .filter(|(key, _)| !ANNOTATIONS_NOT_COPIED.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// The MachineSet as the plan wants it: `existing` (or a new one named by the plan) with the
/// MachineDeployment's labels, selector, annotations and in-place fields, and the plan's
/// replicas and annotations (upstream `computeDesiredMS`).
fn desired_machine_set(
    machine_deployment: &MachineDeployment,
    existing: Option<&MachineSet>,
    plan: &MachineSetPlan,
) -> MachineSet {
    let template = &machine_deployment.spec.template;
    let mut machine_set = match existing {
        Some(existing) => existing.clone(),
        None => {
            let suffix = plan.name.rsplit('-').next().unwrap_or_default().to_owned();
            let unique = format!("{}-{suffix}", template_hash(template));
            let mut spec = template.spec.clone();
            spec.cluster_name = machine_deployment.spec.cluster_name.clone();
            MachineSet {
                metadata: kube::api::ObjectMeta {
                    name: Some(plan.name.clone()),
                    namespace: machine_deployment.namespace(),
                    labels: Some(BTreeMap::from([(
                        MACHINE_DEPLOYMENT_UNIQUE.to_owned(),
                        unique,
                    )])),
                    owner_references: Some(vec![OwnerReference {
                        api_version: format!("{GROUP}/{VERSION}"),
                        kind: "MachineDeployment".into(),
                        name: machine_deployment.name_any(),
                        uid: machine_deployment.uid().unwrap_or_default(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]),
                    ..Default::default()
                },
                spec: MachineSetSpec {
                    cluster_name: machine_deployment.spec.cluster_name.clone(),
                    replicas: Some(0),
                    selector: Default::default(),
                    template: MachineTemplateSpec {
                        metadata: Default::default(),
                        spec,
                    },
                    machine_naming: Default::default(),
                    deletion: Default::default(),
                },
                status: None,
            }
        }
    };
    let unique = machine_set
        .labels()
        .get(MACHINE_DEPLOYMENT_UNIQUE)
        .cloned()
        .unwrap_or_default();

    // Labels: the template's, the unique label and the deployment name; others are kept,
    // except those a previous template gave and the current one dropped (upstream applies the
    // MachineSet's labels with server-side apply, which removes what it no longer applies).
    let dropped: Vec<String> = machine_set
        .spec
        .template
        .metadata
        .labels
        .keys()
        .filter(|key| !template.metadata.labels.contains_key(*key))
        .cloned()
        .collect();
    let labels = machine_set.labels_mut();
    for key in &dropped {
        labels.remove(key);
    }
    labels.extend(template.metadata.labels.clone());
    labels.insert(MACHINE_DEPLOYMENT_UNIQUE.to_owned(), unique.clone());
    labels.insert(
        MACHINE_DEPLOYMENT_NAME.to_owned(),
        machine_deployment.name_any(),
    );
    let mut selector = machine_deployment.spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(MACHINE_DEPLOYMENT_UNIQUE.to_owned(), unique.clone());
    machine_set.spec.selector = selector;
    let mut template_labels = template.metadata.labels.clone();
    template_labels.insert(MACHINE_DEPLOYMENT_UNIQUE.to_owned(), unique);
    machine_set.spec.template.metadata.labels = template_labels;
    machine_set.spec.template.metadata.annotations = template.metadata.annotations.clone();

    let annotations = machine_set.annotations_mut();
    annotations.extend(annotations_from(machine_deployment));
    for (key, value) in &plan.annotations {
        annotations.insert((*key).to_owned(), value.clone());
    }

    machine_set.spec.deletion.order = machine_deployment.spec.deletion.order;
    machine_set.spec.machine_naming = machine_deployment.spec.machine_naming.clone();
    let spec = &mut machine_set.spec.template.spec;
    spec.min_ready_seconds = template.spec.min_ready_seconds;
    spec.readiness_gates = template.spec.readiness_gates.clone();
    spec.deletion = template.spec.deletion.clone();
    spec.taints = template.spec.taints.clone();
    machine_set.spec.replicas = Some(plan.replicas);
    machine_set
}

fn is_not_found(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.is_not_found())
}

/// Writes the plan: the current MachineSet first (created if new), then the old ones, then the
/// cleanup; the revision goes on the MachineDeployment.
pub(super) async fn apply_plan(
    controller: &MachineDeploymentController,
    scope: &mut Scope,
    plan: &RolloutPlan,
) -> Result<(), Error> {
    let writer = Writer {
        controller,
        api: Api::namespaced(controller.ctx.client().clone(), &scope.namespace()),
        owner: ObjectRef::from_obj(scope.before.as_ref()),
        namespace: scope.namespace(),
    };
    let summary: Vec<String> = plan
        .machine_sets
        .iter()
        .map(|ms| format!("{} {}->{}", ms.name, ms.replicas_before, ms.replicas))
        .collect();
    let mut ordered: Vec<&MachineSetPlan> =
        plan.machine_sets.iter().filter(|ms| ms.current).collect();
    ordered.extend(plan.machine_sets.iter().filter(|ms| !ms.current));
    for machine_set_plan in ordered {
        let existing: Option<Arc<MachineSet>> = scope
            .machine_sets
            .iter()
            .find(|ms| ms.name_any() == machine_set_plan.name)
            .cloned();
        let desired = desired_machine_set(
            &scope.machine_deployment,
            existing.as_deref(),
            machine_set_plan,
        );
        match existing {
            Some(existing) => {
                writer
                    .update(scope, &existing, &desired, machine_set_plan, &summary)
                    .await?
            }
            None if machine_set_plan.create => {
                if !scope.blockers.is_empty() {
                    return Err(Error::TemplatesMissing);
                }
                if let Some(reason) = &plan.create_reason {
                    tracing::info!(reason = %reason, "MachineSets need rollout");
                }
                writer.create(scope, &desired, machine_set_plan).await?
            }
            None => {}
        }
    }
    for name in &plan.machine_sets_to_delete {
        writer.delete(scope, name).await?;
    }
    if let Some(revision) = &plan.revision {
        scope
            .machine_deployment
            .annotations_mut()
            .insert(REVISION.to_owned(), revision.clone());
    }
    Ok(())
}

/// What writing one MachineDeployment's MachineSets needs.
struct Writer<'a> {
    controller: &'a MachineDeploymentController,
    api: Api<MachineSet>,
    /// The MachineDeployment, whose expectations record each write.
    owner: ObjectRef<MachineDeployment>,
    namespace: String,
}

impl Writer<'_> {
    async fn create(
        &self,
        scope: &mut Scope,
        desired: &MachineSet,
        plan: &MachineSetPlan,
    ) -> Result<(), Error> {
        let (namespace, name) = (&self.namespace, &plan.name);
        tracing::info!(machine_set = %name, "Creating MachineSet {namespace}/{name} with {} replicas", plan.replicas);
        let created = self
            .api
            .create(&PostParams::default(), desired)
            .await
            .map_err(|source| Error::CreateMachineSet {
                machine_set: name.clone(),
                source,
            })?;
        self.controller.expectations.created(&self.owner, name);
        scope.machine_sets.push(Arc::new(created));
        scope.event(
            EventType::Normal,
            "SuccessfulCreate",
            format!(
                "Created MachineSet {namespace}/{name} with {} replicas",
                plan.replicas
            ),
        );
        Ok(())
    }

    async fn update(
        &self,
        scope: &mut Scope,
        existing: &MachineSet,
        desired: &MachineSet,
        plan: &MachineSetPlan,
        summary: &[String],
    ) -> Result<(), Error> {
        let (namespace, name) = (&self.namespace, &plan.name);
        let before_replicas = existing.spec.replicas.unwrap_or(1);
        let direction = if plan.replicas > before_replicas {
            "up"
        } else {
            "down"
        };
        let scaled = before_replicas != plan.replicas;
        if scaled {
            tracing::info!(
                machine_set = %name,
                reason = %plan.notes.join(", "),
                machine_sets = ?summary,
                "Scaling {direction} MachineSet {namespace}/{name} from {before_replicas} to {} replicas",
                plan.replicas
            );
        }
        match patch_if_changed(&self.api, existing, desired, Part::Main).await {
            Ok(Some(written)) => {
                self.controller.expectations.updated(
                    &self.owner,
                    name,
                    &existing.resource_version().unwrap_or_default(),
                );
                if let Some(slot) = scope
                    .machine_sets
                    .iter_mut()
                    .find(|ms| &ms.name_any() == name)
                {
                    *slot = Arc::new(written);
                }
                if scaled {
                    scope.event(
                        EventType::Normal,
                        "SuccessfulScale",
                        format!(
                            "Scaled {direction} MachineSet {name}: {before_replicas} -> {}",
                            plan.replicas
                        ),
                    );
                }
                Ok(())
            }
            Ok(None) => Ok(()),
            // Being deleted, it may be gone, or changing under us: the event brings another
            // reconcile.
            Err(kube::Error::Api(status))
                if existing.metadata.deletion_timestamp.is_some()
                    && (status.is_conflict() || status.is_not_found()) =>
            {
                Ok(())
            }
            Err(source) => {
                // A lost write race (the MachineSet's own status write came first) is retried
                // at once with a fresh copy; only a real failure is worth a Warning Event.
                let conflict = matches!(&source, kube::Error::Api(status) if status.is_conflict());
                if !conflict {
                    scope.event(
                        EventType::Warning,
                        "FailedUpdate",
                        format!("Failed to update MachineSet {name}: {source}"),
                    );
                }
                Err(Error::PatchMachineSet {
                    machine_set: name.clone(),
                    source,
                })
            }
        }
    }

    /// Deletes an old MachineSet (cleanup), by uid; one already gone is fine.
    async fn delete(&self, scope: &mut Scope, name: &String) -> Result<(), Error> {
        let Some(machine_set) = scope
            .machine_sets
            .iter()
            .find(|ms| &ms.name_any() == name)
            .cloned()
        else {
            return Ok(());
        };
        let namespace = &self.namespace;
        tracing::info!(machine_set = %name, "Deleting MachineSet {namespace}/{name} (cleanup of old MachineSets)");
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: machine_set.uid(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.api.delete(name, &params).await {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {}
            Err(source) => {
                scope.event(
                    EventType::Warning,
                    "FailedDelete",
                    format!("Failed to delete MachineSet {name:?}: {source}"),
                );
                return Err(Error::DeleteMachineSet {
                    machine_set: name.clone(),
                    source,
                });
            }
        }
        self.controller.expectations.deleted(&self.owner, name);
        scope.event(
            EventType::Normal,
            "SuccessfulDelete",
            format!("Deleted MachineSet {name:?}"),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests;
