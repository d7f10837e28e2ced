//! The control plane Machines: whether each is up to date with the KubeadmControlPlane
//! (upstream `controlplane/kubeadm/pkg/filters.go` `UpToDate`), and creating one with its
//! infrastructure object (cloned from `machineTemplate.spec.infrastructureRef`) and its
//! KubeadmConfig (from `kubeadmConfigSpec`, with the init configuration for the first machine
//! and the join configuration for the others; upstream `helpers.go` `cloneConfigsAndGenerateMachine`).

use std::collections::BTreeMap;

use corral_api::annotations::{KCP_REMEDIATION_FOR, TEMPLATE_CLONED_FROM_NAME};
use corral_api::labels::{CLUSTER_NAME, CONTROL_PLANE, CONTROL_PLANE_NAME};
use corral_api::{Bootstrap, Cluster, ContractVersionedObjectReference, Machine, MachineSpec};
use corral_runtime::external::{CreateFromTemplate, ExternalObjects};
use corral_runtime::naming;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Resource, ResourceExt};

use super::Error;
use crate::api::bootstrap::{KubeadmConfig, KubeadmConfigSpec};
use crate::api::controlplane::KubeadmControlPlane;

#[cfg(test)]
mod tests;

/// The template upstream uses when `spec.machineNaming.template` is unset.
pub const DEFAULT_MACHINE_NAMING_TEMPLATE: &str = "{{ .kubeadmControlPlane.name }}-{{ .random }}";

/// Why a Machine is not up to date; empty when it is.
pub fn outdated_reasons(
    kcp: &KubeadmControlPlane,
    machine: &Machine,
    infra_cloned_from: Option<&str>,
    config: Option<&KubeadmConfig>,
    now: Timestamp,
) -> Vec<String> {
    let mut reasons = Vec::new();
    let version = machine.spec.version.as_deref().unwrap_or("");
    if version != kcp.spec.version {
        reasons.push(format!(
            "Version {version} is not equal to {}",
            kcp.spec.version
        ));
    }
    let template = &kcp.spec.machine_template.spec.infrastructure_ref.name;
    if infra_cloned_from.is_some_and(|from| from != template) {
        reasons.push(format!(
            "{} is not up-to-date (cloned from {}, not {template})",
            machine.spec.infrastructure_ref.kind,
            infra_cloned_from.unwrap_or_default()
        ));
    }
    let cluster_configuration =
        serde_json::to_string(&kcp.spec.kubeadm_config_spec.cluster_configuration)
            .unwrap_or_default();
    if machine
        .annotations()
        .get(CLUSTER_CONFIGURATION_ANNOTATION)
        .is_some_and(|recorded| *recorded != cluster_configuration)
    {
        reasons.push("ClusterConfiguration is not up-to-date".to_string());
    }
    if let Some(config) = config
        && normalized(&config.spec) != normalized(&kcp.spec.kubeadm_config_spec)
    {
        reasons.push("KubeadmConfig is not up-to-date".to_string());
    }
    if let Some(after) = &kcp.spec.rollout.after
        && after.0 <= now
        && machine
            .metadata
            .creation_timestamp
            .as_ref()
            .is_some_and(|created| created.0 < after.0)
    {
        reasons.push("Machine was created before rollout.after".to_string());
    }
    if let Some(days) = kcp.spec.rollout.before.certificates_expiry_days
        && let Some(expiry) = machine
            .status
            .as_ref()
            .and_then(|s| s.certificates_expiry_date.as_ref())
        && expiry.0.as_second() - now.as_second() < i64::from(days) * 86_400
    {
        reasons.push(format!(
            "Machine certificates expire within {days} days (rollout.before.certificatesExpiryDays)"
        ));
    }
    reasons
}

/// A KubeadmConfigSpec without what differs between the init and the join machines: their
/// init and join configurations, and the ClusterConfiguration, which only the first machine's
/// KubeadmConfig carries (upstream `matchKubeadmConfig` compares the ClusterConfiguration
/// separately; Corral records it on the Machine, see [`CLUSTER_CONFIGURATION_ANNOTATION`]).
fn normalized(spec: &KubeadmConfigSpec) -> KubeadmConfigSpec {
    let mut spec = spec.clone();
    spec.init_configuration = Default::default();
    spec.join_configuration = Default::default();
    spec.cluster_configuration = Default::default();
    spec
}

/// The ClusterConfiguration a Machine was created with, as JSON (upstream's annotation, which
/// KCP used for the same purpose until v1.10).
pub const CLUSTER_CONFIGURATION_ANNOTATION: &str =
    "controlplane.cluster.x-k8s.io/kubeadm-cluster-configuration";

/// The labels of every Machine of the KubeadmControlPlane (upstream `ControlPlaneMachineLabels`).
pub fn machine_labels(kcp: &KubeadmControlPlane, cluster: &str) -> BTreeMap<String, String> {
    let mut labels = kcp.spec.machine_template.metadata.labels.clone();
    labels.insert(CLUSTER_NAME.to_string(), cluster.to_string());
    labels.insert(CONTROL_PLANE.to_string(), String::new());
    labels.insert(
        CONTROL_PLANE_NAME.to_string(),
        naming::format_label_value(&kcp.name_any()),
    );
    labels
}

/// The label selector of the KubeadmControlPlane's Machines, as `status.selector` reports it.
pub fn selector(kcp: &KubeadmControlPlane, cluster: &str) -> String {
    format!(
        "{CLUSTER_NAME}={cluster},{CONTROL_PLANE},{CONTROL_PLANE_NAME}={}",
        naming::format_label_value(&kcp.name_any())
    )
}

pub fn owner_reference(kcp: &KubeadmControlPlane) -> OwnerReference {
    OwnerReference {
        api_version: KubeadmControlPlane::api_version(&()).to_string(),
        kind: KubeadmControlPlane::kind(&()).to_string(),
        name: kcp.name_any(),
        uid: kcp.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A new Machine name from `spec.machineNaming.template`.
pub fn machine_name(kcp: &KubeadmControlPlane, cluster: &str) -> Result<String, Error> {
    let template = kcp
        .spec
        .machine_naming
        .template
        .as_deref()
        .unwrap_or(DEFAULT_MACHINE_NAMING_TEMPLATE);
    // The core's naming knows `.machineSet.name` where KCP templates say
    // `.kubeadmControlPlane.name`; everything else is the same.
    let template = template.replace(".kubeadmControlPlane.name", ".machineSet.name");
    naming::machine_name(
        Some(&template),
        cluster,
        &kcp.name_any(),
        &mut naming::random_suffix,
    )
    .map_err(|source| Error::MachineName { source })
}

/// What a new Machine is to be.
pub struct NewMachine<'a> {
    pub kcp: &'a KubeadmControlPlane,
    pub cluster: &'a Cluster,
    /// The first machine runs `kubeadm init`; the others join.
    pub init: bool,
    pub failure_domain: Option<String>,
    /// The remediation this machine replaces a machine of (upstream's `remediation-for`).
    pub remediation_for: Option<String>,
}

/// Creates a Machine, its infrastructure object and its KubeadmConfig; when a later step fails,
/// removes what the earlier ones created. Returns the Machine's name.
pub async fn create_machine(
    client: &kube::Client,
    external: &ExternalObjects,
    new: NewMachine<'_>,
) -> Result<String, Error> {
    let kcp = new.kcp;
    let namespace = kcp.namespace().unwrap_or_default();
    let cluster = new.cluster.name_any();
    let name = machine_name(kcp, &cluster)?;
    let labels = machine_labels(kcp, &cluster);
    let owner = owner_reference(kcp);
    let template = &kcp.spec.machine_template.spec.infrastructure_ref;

    tracing::info!(machine = %name, init = new.init, failure_domain = ?new.failure_domain, "Creating control plane Machine");
    let infrastructure_ref = external
        .create_from_template(&CreateFromTemplate {
            template,
            namespace: &namespace,
            name: name.clone(),
            cluster_name: &cluster,
            labels: labels.clone(),
            annotations: kcp.spec.machine_template.metadata.annotations.clone(),
            owner: Some(owner.clone()),
        })
        .await
        .map_err(|source| Error::CreateInfrastructure {
            machine: name.clone(),
            source: Box::new(source),
        })?;

    // As upstream (`InitialControlPlaneConfig`, `JoinControlPlaneConfig`): the first machine
    // gets the cluster and init configurations, pointed at the Cluster's endpoint; the others
    // only the join configuration, as a control plane.
    let mut spec = kcp.spec.kubeadm_config_spec.clone();
    if new.init {
        spec.join_configuration = Default::default();
        if spec.cluster_configuration.control_plane_endpoint.is_none() {
            let endpoint = &new.cluster.spec.control_plane_endpoint;
            if let (Some(host), Some(port)) = (&endpoint.host, endpoint.port) {
                spec.cluster_configuration.control_plane_endpoint = Some(format!("{host}:{port}"));
            }
        }
    } else {
        spec.init_configuration = Default::default();
        spec.cluster_configuration = Default::default();
        spec.join_configuration
            .control_plane
            .get_or_insert_with(Default::default);
    }
    let config = KubeadmConfig {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(labels.clone()),
            annotations: Some(kcp.spec.machine_template.metadata.annotations.clone())
                .filter(|a| !a.is_empty()),
            owner_references: Some(vec![owner.clone()]),
            ..Default::default()
        },
        spec,
        status: None,
    };
    let configs: Api<KubeadmConfig> = Api::namespaced(client.clone(), &namespace);
    let cleanup_infrastructure = {
        let infrastructure_ref = infrastructure_ref.clone();
        let namespace = namespace.clone();
        async move || {
            let _ = external.delete(&infrastructure_ref, &namespace).await;
        }
    };
    if let Err(source) = configs.create(&PostParams::default(), &config).await {
        cleanup_infrastructure().await;
        return Err(Error::CreateKubeadmConfig {
            machine: name,
            source,
        });
    }

    let mut annotations = kcp.spec.machine_template.metadata.annotations.clone();
    annotations.insert(
        CLUSTER_CONFIGURATION_ANNOTATION.to_string(),
        serde_json::to_string(&kcp.spec.kubeadm_config_spec.cluster_configuration)
            .unwrap_or_default(),
    );
    if let Some(remediation) = new.remediation_for {
        annotations.insert(KCP_REMEDIATION_FOR.to_string(), remediation);
    }
    // Its etcd member is removed in this hook when it is deleted (see `pre_terminate`).
    annotations.insert(
        super::pre_terminate::CLEANUP_HOOK.to_string(),
        String::new(),
    );
    let template_spec = &kcp.spec.machine_template.spec;
    let machine = Machine {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: MachineSpec {
            cluster_name: cluster.clone(),
            bootstrap: Bootstrap {
                config_ref: Some(ContractVersionedObjectReference {
                    api_group: crate::api::BOOTSTRAP_GROUP.to_string(),
                    kind: KubeadmConfig::kind(&()).to_string(),
                    name: name.clone(),
                }),
                data_secret_name: None,
            },
            infrastructure_ref,
            version: Some(kcp.spec.version.clone()),
            failure_domain: new.failure_domain,
            readiness_gates: template_spec.readiness_gates.clone(),
            deletion: template_spec.deletion.clone(),
            taints: template_spec.taints.clone(),
            ..Default::default()
        },
        status: None,
    };
    let machines: Api<Machine> = Api::namespaced(client.clone(), &namespace);
    if let Err(source) = machines.create(&PostParams::default(), &machine).await {
        cleanup_infrastructure().await;
        let _ = configs.delete(&name, &DeleteParams::default()).await;
        return Err(Error::CreateMachine {
            machine: name,
            source,
        });
    }
    Ok(name)
}

/// The name of the template an infrastructure object was cloned from.
pub fn cloned_from(annotations: &BTreeMap<String, String>) -> Option<&str> {
    annotations
        .get(TEMPLATE_CLONED_FROM_NAME)
        .map(String::as_str)
}
