//! Adoption of control plane Machines made without a KubeadmControlPlane (upstream
//! `kubeadmcontrolplane_controller.go` `initControlPlaneScope`, `adoptMachines` and
//! `adoptOwnedSecrets`): a cluster brought up with standalone control plane Machines (label
//! `cluster.x-k8s.io/control-plane`, no controller) is handed to a KubeadmControlPlane by
//! pointing the Cluster's `controlPlaneRef` at it; the control plane then takes those Machines
//! as its own instead of creating new ones.
//!
//! A Machine is adopted when it belongs to the Cluster, carries the control plane label and has
//! no controller. Every adoptable Machine must be bootstrapped by a KubeadmConfig and, when it
//! states a version, be within one minor version of the control plane's `spec.version`
//! (upstream `IsSupportedVersionSkew`); otherwise nothing is adopted, a Warning Event
//! `AdoptionFailed` says why, and the control plane does nothing else until the Machines or its
//! spec change (as upstream, which stops the reconcile there). Adopting a Machine makes the
//! KubeadmControlPlane its controller and gives it the control plane's Machine labels (upstream
//! sets these in `syncMachines` right after), and its KubeadmConfig the same labels, so that a
//! later change of `kubeadmConfigSpec` rolls the adopted Machine out like any other; the
//! Secrets its KubeadmConfig controls, except its bootstrap data Secret, move to the
//! KubeadmControlPlane (upstream's PKI adoption for certificates CABPK generated). The
//! KubeadmConfig itself stays owned by its Machine.
//!
//! Control plane Machines controlled by something else (another KubeadmControlPlane, a
//! MachineSet) make the control plane refuse to operate, as upstream's "mixed management mode".
//!
//! Looking for adoptable Machines costs a LIST of the Cluster's control plane Machines (which
//! `list_machines` has already filtered down to the owned ones), so Corral looks only while
//! the control plane owns no Machine: a KubeadmControlPlane taking over a cluster, the case
//! adoption is for, and the moment it would otherwise create a first Machine of its own.
//! Upstream looks on every reconcile, so it also adopts a standalone control plane Machine
//! created beside a running KubeadmControlPlane; Corral leaves such a Machine alone.

use corral_api::labels::{CLUSTER_NAME, CONTROL_PLANE};
use corral_api::{Cluster, Machine};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::{Context, machines};
use crate::api::bootstrap::KubeadmConfig;
use crate::api::controlplane::KubeadmControlPlane;

#[cfg(test)]
mod tests;

/// A failed adoption.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    #[error("cannot list the control plane Machines of Cluster {cluster} to adopt them")]
    ListMachines {
        cluster: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot read the KubeadmControlPlane before adopting Machines")]
    GetControlPlane(#[source] kube::Error),
    #[error(
        "not all control plane Machines are owned by this KubeadmControlPlane (Machine {machine} is controlled by {controller}), refusing to operate in mixed management mode"
    )]
    MixedManagement { machine: String, controller: String },
    #[error(
        "cannot adopt Machine {machine}: spec.bootstrap.configRef must be a KubeadmConfig of {group}"
    )]
    NotKubeadm { machine: String, group: String },
    #[error("cannot adopt Machine {machine}: spec.version {version:?} is not a Kubernetes version")]
    MachineVersion { machine: String, version: String },
    #[error("spec.version {0:?} is not a Kubernetes version")]
    ControlPlaneVersion(String),
    #[error("cannot read KubeadmConfig {config} of Machine {machine}")]
    GetKubeadmConfig {
        machine: String,
        config: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot list the Secrets of Cluster {cluster} to adopt them")]
    ListSecrets {
        cluster: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot move Secret {secret} from KubeadmConfig {config} to the KubeadmControlPlane")]
    PatchSecret {
        secret: String,
        config: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot label KubeadmConfig {config} as the control plane's")]
    PatchKubeadmConfig {
        config: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot make the KubeadmControlPlane the controller of Machine {machine}")]
    PatchMachine {
        machine: String,
        #[source]
        source: kube::Error,
    },
}

/// A Kubernetes version's major and minor (upstream parses with `semver.ParseTolerant`: a
/// leading `v` is allowed, the patch and a pre-release or build suffix are ignored here).
pub(super) fn major_minor(version: &str) -> Option<(u64, u64)> {
    let version = version.trim();
    let version = version.strip_prefix('v').unwrap_or(version);
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |minor| minor.parse().ok())?;
    if let Some(patch) = parts.next() {
        patch.parse::<u64>().ok()?;
    }
    parts.next().is_none().then_some((major, minor))
}

/// Whether a Machine at version `machine` may join a control plane at `control_plane`: same
/// major, at most one minor apart (upstream `util.IsSupportedVersionSkew`).
pub(super) fn is_supported_version_skew(control_plane: (u64, u64), machine: (u64, u64)) -> bool {
    control_plane.0 == machine.0 && control_plane.1.abs_diff(machine.1) <= 1
}

fn controller(machine: &Machine) -> Option<&OwnerReference> {
    machine
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
}

/// Adopts the Cluster's standalone control plane Machines; `owned` are the Machines the control
/// plane already controls. Returns the action to end the reconcile with when it adopted
/// Machines or must wait (the Machines' change events wake the control plane again), `None`
/// when there was nothing to adopt.
pub(super) async fn adopt_machines(
    context: &Context,
    kcp: &KubeadmControlPlane,
    cluster: &Cluster,
    owned: &[std::sync::Arc<Machine>],
) -> Result<Option<Action>, super::Error> {
    if !owned.is_empty() {
        return Ok(None);
    }
    let namespace = kcp.namespace().unwrap_or_default();
    let cluster_name = cluster.name_any();
    let machines: Api<Machine> = Api::namespaced(context.client.clone(), &namespace);
    let all = machines
        .list(
            &ListParams::default()
                .labels(&format!("{CLUSTER_NAME}={cluster_name},{CONTROL_PLANE}")),
        )
        .await
        .map_err(|source| AdoptError::ListMachines {
            cluster: cluster_name.clone(),
            source,
        })?
        .items;
    let uid = kcp.uid().unwrap_or_default();
    let mut adoptable = Vec::new();
    let mut ours_not_cached = false;
    for machine in all {
        match controller(&machine) {
            None => adoptable.push(machine),
            // Ours, but the cache (`owned`) does not show it yet: just adopted, or created.
            Some(owner) if owner.uid == uid => ours_not_cached = true,
            Some(owner) => {
                return Err(AdoptError::MixedManagement {
                    machine: machine.name_any(),
                    controller: format!("{} {}", owner.kind, owner.name),
                }
                .into());
            }
        }
    }
    if adoptable.is_empty() {
        // Going on with a cache that shows none of the control plane's Machines would create
        // a first one beside them; the cache's event brings the next reconcile.
        return Ok(ours_not_cached.then(Action::await_change));
    }

    // A fresh read, not the cache: a control plane the garbage collector is deleting (and so
    // orphaning its Machines) must not take them back (upstream reads uncached for this).
    let kcps: Api<KubeadmControlPlane> = Api::namespaced(context.client.clone(), &namespace);
    let current = kcps
        .get(&kcp.name_any())
        .await
        .map_err(AdoptError::GetControlPlane)?;
    if current.metadata.deletion_timestamp.is_some() {
        return Ok(Some(Action::await_change()));
    }

    let kcp_version = major_minor(&kcp.spec.version)
        .ok_or_else(|| AdoptError::ControlPlaneVersion(kcp.spec.version.clone()))?;
    for machine in &adoptable {
        let name = machine.name_any();
        let is_kubeadm = machine
            .spec
            .bootstrap
            .config_ref
            .as_ref()
            .is_some_and(|reference| {
                reference.kind == KubeadmConfig::kind(&())
                    && reference.api_group == crate::api::BOOTSTRAP_GROUP
            });
        if !is_kubeadm {
            let error = AdoptError::NotKubeadm {
                machine: name,
                group: crate::api::BOOTSTRAP_GROUP.to_string(),
            };
            context
                .event(kcp, EventType::Warning, "AdoptionFailed", error.to_string())
                .await;
            return Err(error.into());
        }
        // A Machine that states no version: the user knows what they adopt (upstream).
        let Some(version) = machine.spec.version.as_deref().filter(|v| !v.is_empty()) else {
            continue;
        };
        let Some(machine_version) = major_minor(version) else {
            return Err(AdoptError::MachineVersion {
                machine: name,
                version: version.to_string(),
            }
            .into());
        };
        if !is_supported_version_skew(kcp_version, machine_version) {
            let note = format!(
                "Could not adopt Machine {namespace}/{name}: its version ({version:?}) is outside supported +/- one minor version skew from KCP's ({:?})",
                kcp.spec.version
            );
            tracing::warn!(machine = %name, "Not adopting Machines: {note}");
            context
                .event(kcp, EventType::Warning, "AdoptionFailed", note)
                .await;
            // Not an error: retrying cannot help until the user changes something.
            return Ok(Some(Action::await_change()));
        }
    }

    let owner = machines::owner_reference(kcp);
    let configs: Api<KubeadmConfig> = Api::namespaced(context.client.clone(), &namespace);
    for machine in &adoptable {
        let name = machine.name_any();
        let reference = machine
            .spec
            .bootstrap
            .config_ref
            .as_ref()
            .expect("checked above");
        let config =
            configs
                .get(&reference.name)
                .await
                .map_err(|source| AdoptError::GetKubeadmConfig {
                    machine: name.clone(),
                    config: reference.name.clone(),
                    source,
                })?;
        adopt_owned_secrets(context, &owner, &config, &cluster_name).await?;
        // The control plane's labels on the KubeadmConfig too: the controller watches the
        // KubeadmConfigs of its Machines by them, and compares their spec with
        // `kubeadmConfigSpec` to tell whether the Machine needs a rollout (upstream compares
        // the configRef's KubeadmConfig read from a cache of all of them).
        let machine_labels = machines::machine_labels(kcp, &cluster_name);
        if machine_labels
            .iter()
            .any(|(key, value)| config.labels().get(key) != Some(value))
        {
            let patch = json!({ "metadata": { "labels": machine_labels } });
            configs
                .patch(
                    &reference.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(|source| AdoptError::PatchKubeadmConfig {
                    config: reference.name.clone(),
                    source,
                })?;
        }

        tracing::info!(machine = %name, "Adopting control plane Machine");
        let mut owners = machine.owner_references().to_vec();
        owners.retain(|existing| {
            !(existing.kind == owner.kind
                && existing.api_version.split('/').next() == owner.api_version.split('/').next()
                && existing.name == owner.name)
        });
        owners.push(owner.clone());
        let mut labels = machine.labels().clone();
        labels.extend(machines::machine_labels(kcp, &cluster_name));
        // Guarded by the resourceVersion read: a controller set meanwhile is not overwritten.
        let patch = json!({ "metadata": {
            "ownerReferences": owners,
            "labels": labels,
            "resourceVersion": machine.resource_version(),
        }});
        machines
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| AdoptError::PatchMachine {
                machine: name.clone(),
                source,
            })?;
        context
            .event(
                kcp,
                EventType::Normal,
                "SuccessfulAdopt",
                format!("Adopted control plane Machine {name}"),
            )
            .await;
        // Until the cache shows the Machine as ours, the next reconcile waits for it (as for a
        // Machine the control plane created) instead of counting no Machines.
        context.expected.record(
            kcp,
            super::Change::Created,
            &name,
            context.config.poll_interval,
        );
    }
    Ok(Some(Action::await_change()))
}

/// Moves the Secrets of the Cluster that the KubeadmConfig controls, except its bootstrap data
/// Secret, to the KubeadmControlPlane (upstream `adoptOwnedSecrets`: the cluster certificates
/// CABPK generated for the first machine). The reference to the KubeadmConfig is replaced, so
/// deleting that machine no longer deletes the cluster's CAs.
async fn adopt_owned_secrets(
    context: &Context,
    owner: &OwnerReference,
    config: &KubeadmConfig,
    cluster: &str,
) -> Result<(), AdoptError> {
    let namespace = config.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(context.client.clone(), &namespace);
    let config_uid = config.uid().unwrap_or_default();
    let data_secret = config
        .status
        .as_ref()
        .and_then(|status| status.data_secret_name.as_deref());
    let list = secrets
        .list(&ListParams::default().labels(&format!("{CLUSTER_NAME}={cluster}")))
        .await
        .map_err(|source| AdoptError::ListSecrets {
            cluster: cluster.to_string(),
            source,
        })?;
    for secret in list.items {
        let name = secret.name_any();
        if Some(name.as_str()) == data_secret
            || !secret
                .owner_references()
                .iter()
                .any(|reference| reference.uid == config_uid)
        {
            continue;
        }
        let owners: Vec<OwnerReference> = secret
            .owner_references()
            .iter()
            .map(|reference| {
                if reference.uid == config_uid {
                    owner.clone()
                } else {
                    reference.clone()
                }
            })
            .collect();
        tracing::info!(secret = %name, config = %config.name_any(), "Adopting Secret");
        let patch = json!({ "metadata": {
            "ownerReferences": owners,
            "resourceVersion": secret.resource_version(),
        }});
        secrets
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| AdoptError::PatchSecret {
                secret: name.clone(),
                config: config.name_any(),
                source,
            })?;
    }
    Ok(())
}
