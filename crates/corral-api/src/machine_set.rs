//! MachineSet: keeps a number of identical Machines (upstream `machineset_types.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{StatusVersion, TemplateMetadata, V1Beta1Condition};
use crate::machine::MachineSpec;
use crate::schema::{self, is_default};

/// The desired state of a MachineSet.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "MachineSet",
    namespaced,
    derive = "PartialEq",
    status = "MachineSetStatus",
    doc = "MachineSet is the Schema for the machinesets API.",
    shortname = "ms",
    category = "cluster-api",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".spec.clusterName",
        description = "Cluster"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "The desired number of machines"
    ),
    printcolumn(
        name = "Current",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "The number of machines"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "The number of machines with Ready condition true"
    ),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas",
        description = "The number of machines with Available condition true"
    ),
    printcolumn(
        name = "Up-to-date",
        type_ = "integer",
        json_path = ".status.upToDateReplicas",
        description = "The number of machines with UpToDate condition true"
    ),
    printcolumn(
        name = "Paused",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Paused")].status"#,
        description = "Reconciliation paused",
        priority = 10
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of MachineSet"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.template.spec.version",
        description = "Kubernetes version associated with this MachineSet"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetSpec {
    /// clusterName is the name of the Cluster the MachineSet belongs to. It cannot change.
    #[schemars(length(min = 1, max = 63))]
    pub cluster_name: String,
    /// replicas is the number of Machines wanted. Upstream's webhook defaults it from the
    /// autoscaler's min-size annotation, else to 1; Corral's controllers treat unset the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// selector picks the Machines the MachineSet owns; it must match the template's labels.
    #[schemars(schema_with = "schema::label_selector")]
    pub selector: LabelSelector,
    /// template describes the Machines the MachineSet creates.
    pub template: MachineTemplateSpec,
    /// machineNaming says how new Machines are named.
    #[serde(default, skip_serializing_if = "is_default")]
    pub machine_naming: MachineNamingSpec,
    /// deletion says which Machines go first when scaling down.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineSetDeletionSpec,
}

/// The Machines a MachineSet or MachineDeployment creates: their labels and annotations, and
/// their spec.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineTemplateSpec {
    /// metadata for the created Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec of the created Machines.
    pub spec: MachineSpec,
}

/// How Machines created by a MachineSet are named.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineNamingSpec {
    /// template is a Go template for the Machine names, with `.cluster.name`,
    /// `.machineSet.name` and `.random` (five random characters) available; it must use
    /// `{{ .random }}`. Unset means `{{ .machineSet.name }}-{{ .random }}`. Names longer than 63
    /// characters are cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub template: Option<String>,
}

/// Which Machines a MachineSet deletes first.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineSetDeletionSpec {
    /// order of deletion when scaling down; Random when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<MachineSetDeletionOrder>,
}

/// The order in which a MachineSet deletes Machines when scaling down.
///
/// Whatever the order, Machines already being deleted, marked with
/// `cluster.x-k8s.io/delete-machine`, or unhealthy go first.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum MachineSetDeletionOrder {
    /// No preference; ties are broken by name, so the choice is deterministic.
    #[default]
    Random,
    /// The newest Machines first.
    Newest,
    /// The oldest Machines first.
    Oldest,
}

/// The observed state of a MachineSet.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineSetStatus {
    /// conditions are the MachineSet's conditions (MachinesReady, MachinesUpToDate, ScalingUp,
    /// ScalingDown, Remediating, Deleting, Paused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// selector is `spec.selector` in string form, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub selector: Option<String>,
    /// replicas is the number of Machines the MachineSet has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// readyReplicas is the number of its Machines whose Ready condition is True.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// availableReplicas is the number of its Machines whose Available condition is True.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// upToDateReplicas is the number of its Machines whose UpToDate condition is True.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_to_date_replicas: Option<i32>,
    /// versions counts its Machines per Kubernetes version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 100),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["version"])
    )]
    pub versions: Vec<StatusVersion>,
    /// observedGeneration is the generation of the spec the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
    /// deprecated holds status fields kept for older API versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: MachineSetDeprecatedStatus,
}

/// Deprecated MachineSet status fields.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetDeprecatedStatus {
    /// v1beta1 holds the v1beta1 status fields, until upstream stops serving v1beta1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: MachineSetV1Beta1DeprecatedStatus,
}

/// MachineSet status fields from v1beta1.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetV1Beta1DeprecatedStatus {
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
    /// fullyLabeledReplicas is the v1beta1 count of Machines whose labels match the template's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fully_labeled_replicas: Option<i32>,
    /// readyReplicas is the v1beta1 count of Machines whose Node is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// availableReplicas is the v1beta1 count of Machines that have been Ready for
    /// minReadySeconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
}
