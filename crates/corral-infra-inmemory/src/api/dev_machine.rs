//! DevMachine and DevMachineTemplate (upstream
//! `test/infrastructure/docker/api/v1beta2/devmachine_types.go`,
//! `devmachinetemplate_types.go`).

use std::collections::BTreeMap;
use std::time::Duration;

use corral_api::{MachineAddress, TemplateMetadata};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dev_cluster::DeprecatedStatus;
use super::schema::{self, is_default};

#[cfg(test)]
mod tests;

/// The desired state of a DevMachine: the infrastructure of one Machine.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "DevMachine",
    namespaced,
    status = "DevMachineStatus",
    doc = "DevMachine is the schema for the dev machine infrastructure API.",
    category = "cluster-api",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels['cluster\.x-k8s\.io/cluster-name']",
        description = "Cluster"
    ),
    printcolumn(
        name = "Provider ID",
        type_ = "string",
        json_path = ".spec.providerID",
        description = "Provider ID",
        priority = 10
    ),
    printcolumn(
        name = "Failure domain",
        type_ = "string",
        json_path = ".status.failureDomain",
        description = "The failure domain where the VSphereMachine has been scheduled"
    ),
    printcolumn(
        name = "IP",
        type_ = "string",
        json_path = r#".status.addresses[?(@.type=="InternalIP")].address"#,
        description = "IP of the Machine",
        priority = 10
    ),
    printcolumn(
        name = "Paused",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Paused")].status"#,
        description = "Reconciliation paused",
        priority = 10
    ),
    printcolumn(
        name = "Provisioned",
        type_ = "string",
        json_path = ".status.initialization.provisioned",
        description = "DevMachine is provisioned"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of the DevMachine"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DevMachineSpec {
    /// providerID links the Machine to its Node: `in-memory://<devmachine name>`, set by the
    /// provider once the VM is provisioned.
    #[serde(
        default,
        rename = "providerID",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1, max = 512))]
    pub provider_id: Option<String>,
    /// backend defines the backend of the DevMachine; Corral implements `inMemory` only.
    pub backend: DevMachineBackendSpec,
}

/// The backends of a DevMachine: exactly one is set.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = schema::refuse_docker_backend)]
pub struct DevMachineBackendSpec {
    /// docker defines a backend using docker containers. Upstream's shape, accepted by the
    /// schema but refused: Corral does not run docker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker: Option<DockerMachineBackendSpec>,
    /// inMemory defines a backend that simulates the machine in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_memory: Option<InMemoryMachineBackendSpec>,
}

/// Upstream's docker backend of a DevMachine, kept so that its manifests are understood (and
/// refused with a clear message).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DockerMachineBackendSpec {
    /// customImage of the node container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_image: Option<String>,
    /// preLoadImages to load into the node container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_load_images: Vec<String>,
    /// extraMounts of the node container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_mounts: Vec<Mount>,
    /// bootstrapTimeout bounds the bootstrap of the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_timeout: Option<String>,
}

/// A host path mounted into a docker backend's container.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Mount {
    /// containerPath is the path of the mount in the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_path: Option<String>,
    /// hostPath is the path of the mount on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_path: Option<String>,
    /// readOnly mounts read-only.
    #[serde(default, rename = "readOnly", skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// The in-memory backend of a DevMachine: how long each simulated step of its boot takes.
/// Steps left out take no time.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InMemoryMachineBackendSpec {
    /// vm is the VM's provisioning, from creation to power-on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<InMemoryStepSpec>,
    /// node is the Node's provisioning once the VM runs: kubelet start, providerID, Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<InMemoryStepSpec>,
    /// apiServer is the API server's provisioning on a control plane machine, once its Node is
    /// provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server: Option<InMemoryStepSpec>,
    /// etcd is the etcd member's provisioning on a control plane machine, once its Node is
    /// provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd: Option<InMemoryStepSpec>,
}

/// The behaviour of one simulated component.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InMemoryStepSpec {
    /// provisioning says how long the component takes to come up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning: Option<ProvisioningSettings>,
}

/// How long a simulated component takes to come up (upstream `CommonProvisioningSettings`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningSettings {
    /// startupDuration is how long the step takes, as a Go duration (`10s`, `1m30s`, `0`).
    #[schemars(pattern(schema::GO_DURATION))]
    pub startup_duration: String,
    /// startupJitter adds a random amount to startupDuration, chosen uniformly between zero and
    /// startupJitter × startupDuration; a decimal number such as `0.2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(schema::DECIMAL))]
    pub startup_jitter: Option<String>,
}

impl ProvisioningSettings {
    /// The step's duration and jitter, parsed. The schema admits only values that parse; an
    /// object stored before that rule existed can still carry one that does not.
    pub fn parse(&self) -> Result<(Duration, f64), InvalidProvisioning> {
        let duration = parse_go_duration(&self.startup_duration).ok_or_else(|| {
            InvalidProvisioning(format!(
                "startupDuration {:?} is not a duration such as 10s or 1m30s",
                self.startup_duration
            ))
        })?;
        let jitter = match self.startup_jitter.as_deref() {
            None | Some("") => 0.0,
            Some(text) => text
                .parse::<f64>()
                .ok()
                .filter(|jitter| jitter.is_finite() && *jitter >= 0.0)
                .ok_or_else(|| {
                    InvalidProvisioning(format!(
                        "startupJitter {text:?} is not a non-negative decimal number such as 0.2"
                    ))
                })?,
        };
        Ok((duration, jitter))
    }
}

/// A provisioning setting that does not parse.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidProvisioning(pub String);

/// Parses a Go duration (`time.ParseDuration`), non-negative: `0`, `300ms`, `1.5h`, `1m30s`.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += value * nanos_per_unit;
    }
    // Go's durations are int64 nanoseconds: about 292 years.
    (total <= i64::MAX as f64).then(|| Duration::from_nanos(total.round() as u64))
}

/// The observed state of a DevMachine.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DevMachineStatus {
    /// conditions of the DevMachine: Ready, VMProvisioned, NodeProvisioned, EtcdProvisioned and
    /// APIServerProvisioned (control plane machines), and Paused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// initialization records the provisioning of the machine's infrastructure (contract).
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: DevMachineInitializationStatus,
    /// addresses of the simulated machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<MachineAddress>,
    /// failureDomain the machine runs in: the Machine's `spec.failureDomain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub failure_domain: Option<String>,
    /// deprecated holds status fields kept for older API versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: DeprecatedStatus,
}

/// What the provider has done to bring the machine's infrastructure up.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct DevMachineInitializationStatus {
    /// provisioned is true once the machine's VM is provisioned; it never goes back to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<bool>,
}

/// The desired state of a DevMachineTemplate.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "DevMachineTemplate",
    namespaced,
    status = "DevMachineTemplateStatus",
    doc = "DevMachineTemplate is the schema for the dev machine template API.",
    category = "cluster-api",
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of the DevMachineTemplate"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DevMachineTemplateSpec {
    /// template of the DevMachines made from this template.
    pub template: DevMachineTemplateResource,
}

/// A DevMachine as a template holds it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DevMachineTemplateResource {
    /// metadata of the DevMachines made from the template.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec of the DevMachines made from the template.
    pub spec: DevMachineSpec,
}

/// The observed state of a DevMachineTemplate.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DevMachineTemplateStatus {
    /// capacity of the machines made from the template, for the cluster autoscaler's scale from
    /// zero.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::resource_list")]
    pub capacity: BTreeMap<String, Quantity>,
}
