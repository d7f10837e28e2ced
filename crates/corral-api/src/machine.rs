//! Machine: one host meant to become a Kubernetes Node (upstream `machine_types.go`,
//! `machine_phase_types.go`).

use k8s_openapi::api::core::v1::NodeSystemInfo;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{
    ContractVersionedObjectReference, MachineAddress, MachineDeletionSpec, MachineReadinessGate,
    MachineTaint, V1Beta1Condition,
};
use crate::schema::{self, is_default};

/// The default of a Machine's `spec.deletion.nodeDeletionTimeoutSeconds`.
pub const DEFAULT_NODE_DELETION_TIMEOUT_SECONDS: i32 = 10;

/// The desired state of a Machine.
///
/// Also the `spec` of the template in MachineSets and MachineDeployments.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Machine",
    namespaced,
    derive = "PartialEq",
    status = "MachineStatus",
    doc = "Machine is the Schema for the machines API.",
    shortname = "ma",
    category = "cluster-api",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".spec.clusterName",
        description = "Cluster"
    ),
    printcolumn(
        name = "Node Name",
        type_ = "string",
        json_path = ".status.nodeRef.name",
        description = "Node name associated with this machine"
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
        description = "The failure domain where the Machine has been scheduled"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#,
        description = "Machine pass all readiness checks"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Available")].status"#,
        description = "Machine is Ready for at least MinReadySeconds"
    ),
    printcolumn(
        name = "Up-to-date",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="UpToDate")].status"#,
        description = " Machine spec matches the spec of the Machine's owner resource, e.g. MachineDeployment"
    ),
    printcolumn(
        name = "Internal-IP",
        type_ = "string",
        json_path = r#".status.addresses[?(@.type=="InternalIP")].address"#,
        description = "Internal IP of the machine",
        priority = 10
    ),
    printcolumn(
        name = "External-IP",
        type_ = "string",
        json_path = r#".status.addresses[?(@.type=="ExternalIP")].address"#,
        description = "External IP of the machine",
        priority = 10
    ),
    printcolumn(
        name = "OS-Image",
        type_ = "string",
        json_path = ".status.nodeInfo.osImage",
        description = "OS Image reported by the node",
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
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "Machine status such as Terminating/Pending/Running/Failed etc"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of Machine"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.version",
        description = "Kubernetes version associated with this Machine"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// clusterName is the name of the Cluster the Machine belongs to, in the same namespace.
    #[schemars(length(min = 1, max = 63))]
    pub cluster_name: String,
    /// bootstrap says where the Machine's bootstrap data comes from.
    pub bootstrap: Bootstrap,
    /// infrastructureRef is the infrastructure provider's object for this Machine.
    pub infrastructure_ref: ContractVersionedObjectReference,
    /// version is the Kubernetes version the Machine should run, such as v1.36.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub version: Option<String>,
    /// providerID is the provider's identifier for the Machine's host; it must match the
    /// Node's `spec.providerID`. Copied from the infrastructure object once it is provisioned.
    #[serde(
        rename = "providerID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1, max = 512))]
    pub provider_id: Option<String>,
    /// failureDomain is the failure domain the Machine should be placed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub failure_domain: Option<String>,
    /// minReadySeconds is how long the Machine must be Ready before it counts as Available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_ready_seconds: Option<i32>,
    /// readinessGates are additional conditions the Ready condition takes into account.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 32),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["conditionType"])
    )]
    pub readiness_gates: Vec<MachineReadinessGate>,
    /// deletion holds the time limits on the steps of deleting the Machine's Node.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineDeletionSpec,
    /// taints the Machine controller manages on the Machine's Node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key", "effect"])
    )]
    pub taints: Vec<MachineTaint>,
}

/// How a Machine gets its bootstrap data.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// configRef is the bootstrap provider's object that produces the bootstrap data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_ref: Option<ContractVersionedObjectReference>,
    /// dataSecretName is the Secret holding the bootstrap data, under the key `value`. Set by
    /// the user, or copied from the bootstrap object once it has created the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 0, max = 253))]
    pub data_secret_name: Option<String>,
}

/// The observed state of a Machine.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineStatus {
    /// conditions are the Machine's conditions (Available, Ready, UpToDate, BootstrapConfigReady,
    /// InfrastructureReady, NodeHealthy, Deleting, Paused, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// initialization records what the providers have done to bring the Machine up.
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: MachineInitializationStatus,
    /// nodeRef names the Machine's Node in the workload cluster, once there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<MachineNodeReference>,
    /// nodeInfo is the system information the Node reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::node_system_info")]
    pub node_info: Option<NodeSystemInfo>,
    /// lastUpdated is when the phase last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub last_updated: Option<Time>,
    /// failureDomain is the failure domain the Machine was actually placed in, as the
    /// infrastructure provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub failure_domain: Option<String>,
    /// addresses of the Machine, as the infrastructure provider reports them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256), extend("x-kubernetes-list-type" = "atomic"))]
    pub addresses: Vec<MachineAddress>,
    /// phase summarises the Machine's lifecycle for people; controllers use conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<MachinePhase>,
    /// certificatesExpiryDate is when the Machine's control plane certificates expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub certificates_expiry_date: Option<Time>,
    /// observedGeneration is the generation of the spec the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
    /// deletion records when each step of deleting the Machine started.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineDeletionStatus,
    /// deprecated holds status fields kept for older API versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: MachineDeprecatedStatus,
}

/// What the Machine's providers have done to bring it up.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineInitializationStatus {
    /// infrastructureProvisioned is true once the infrastructure provider reports the Machine's
    /// infrastructure provisioned. It never goes back to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_provisioned: Option<bool>,
    /// bootstrapDataSecretCreated is true once the bootstrap provider reports the bootstrap data
    /// Secret created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_data_secret_created: Option<bool>,
}

/// The Node of a Machine.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineNodeReference {
    /// name of the Node.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,
}

/// When the Machine controller started waiting on each step of deleting the Machine.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeletionStatus {
    /// nodeDrainStartTime is when draining the Node started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub node_drain_start_time: Option<Time>,
    /// waitForNodeVolumeDetachStartTime is when waiting for the Node's volumes to detach started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub wait_for_node_volume_detach_start_time: Option<Time>,
    /// waitForPreDrainHookStartTime is when waiting for pre-drain hooks started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub wait_for_pre_drain_hook_start_time: Option<Time>,
    /// waitForPreTerminateHookStartTime is when waiting for pre-terminate hooks started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub wait_for_pre_terminate_hook_start_time: Option<Time>,
}

/// Deprecated Machine status fields.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeprecatedStatus {
    /// v1beta1 holds the v1beta1 status fields, until upstream stops serving v1beta1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: MachineV1Beta1DeprecatedStatus,
}

/// Machine status fields from v1beta1.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineV1Beta1DeprecatedStatus {
    /// conditions in the v1beta1 format.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
    /// failureReason is the v1beta1 terminal failure reason; v1beta2 controllers do not set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// failureMessage is the v1beta1 terminal failure message; v1beta2 controllers do not set
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10240))]
    pub failure_message: Option<String>,
}

/// The phase of a Machine, a summary for people; controllers decide on conditions.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum MachinePhase {
    /// The Machine exists but its bootstrap data is not ready yet.
    Pending,
    /// The bootstrap data is ready and the infrastructure is being provisioned.
    Provisioning,
    /// The infrastructure has a provider ID but no Node has joined yet.
    Provisioned,
    /// The infrastructure is provisioned and the Machine has a Node.
    Running,
    /// The Machine is being updated in place.
    Updating,
    /// The Machine is being deleted.
    Deleting,
    /// The Machine and its infrastructure are gone (declared upstream, never set).
    Deleted,
    /// Deprecated upstream and never set: v1beta2 has no terminal failures.
    Failed,
    /// The state of the Machine cannot be determined.
    Unknown,
}

impl MachinePhase {
    /// The phase as it appears in `status.phase`.
    pub fn as_str(self) -> &'static str {
        match self {
            MachinePhase::Pending => "Pending",
            MachinePhase::Provisioning => "Provisioning",
            MachinePhase::Provisioned => "Provisioned",
            MachinePhase::Running => "Running",
            MachinePhase::Updating => "Updating",
            MachinePhase::Deleting => "Deleting",
            MachinePhase::Deleted => "Deleted",
            MachinePhase::Failed => "Failed",
            MachinePhase::Unknown => "Unknown",
        }
    }
}
