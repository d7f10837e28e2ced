//! MachineDeployment: declarative rollouts of Machines through MachineSets (upstream
//! `machinedeployment_types.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common::{StatusVersion, V1Beta1Condition};
use crate::machine_set::{MachineNamingSpec, MachineSetDeletionSpec, MachineTemplateSpec};
use crate::schema::{self, is_default};

/// The desired state of a MachineDeployment.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "MachineDeployment",
    namespaced,
    derive = "PartialEq",
    status = "MachineDeploymentStatus",
    doc = "MachineDeployment is the Schema for the machinedeployments API.",
    shortname = "md",
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
        name = "Available",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Available")].status"#,
        description = "Cluster pass all availability checks"
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
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "MachineDeployment status such as ScalingUp/ScalingDown/Running/Failed/Unknown"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of MachineDeployment"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.template.spec.version",
        description = "Kubernetes version associated with this MachineDeployment"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentSpec {
    /// clusterName is the name of the Cluster the MachineDeployment belongs to.
    #[schemars(length(min = 1, max = 63))]
    pub cluster_name: String,
    /// replicas is the number of Machines wanted. Upstream's webhook defaults it from the
    /// autoscaler's min-size annotation, else to 1; Corral's controllers treat unset the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// rollout says how and when Machines are replaced after the template changes. Defaults to a
    /// RollingUpdate with maxSurge 1 and maxUnavailable 0.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(transform = default_rollout)]
    pub rollout: MachineDeploymentRollout,
    /// selector picks the Machines of the MachineDeployment; it must match the template's labels.
    #[schemars(schema_with = "schema::label_selector")]
    pub selector: LabelSelector,
    /// template describes the Machines of the MachineDeployment.
    pub template: MachineTemplateSpec,
    /// machineNaming says how new Machines are named.
    #[serde(default, skip_serializing_if = "is_default")]
    pub machine_naming: MachineNamingSpec,
    /// remediation limits how many unhealthy Machines are replaced at once.
    #[serde(default, skip_serializing_if = "is_default")]
    pub remediation: MachineDeploymentRemediationSpec,
    /// deletion says which Machines go first when scaling down.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineSetDeletionSpec,
    /// paused stops rollouts and scaling of the MachineDeployment while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
}

/// How and when the Machines of a MachineDeployment are replaced.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentRollout {
    /// after forces a rollout once this time has passed: Machines created before it are
    /// replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub after: Option<Time>,
    /// strategy says how Machines are replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<MachineDeploymentRolloutStrategy>,
}

/// How the Machines of a MachineDeployment are replaced.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentRolloutStrategy {
    /// type of rollout: RollingUpdate or OnDelete.
    #[serde(rename = "type")]
    pub type_: MachineDeploymentRolloutStrategyType,
    /// rollingUpdate bounds a RollingUpdate.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rolling_update: MachineDeploymentRolloutStrategyRollingUpdate,
}

/// The kind of rollout of a MachineDeployment.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum MachineDeploymentRolloutStrategyType {
    /// New Machines are created and old ones deleted step by step, within maxSurge and
    /// maxUnavailable.
    #[default]
    RollingUpdate,
    /// New Machines replace old ones only as the old ones are deleted by someone else.
    OnDelete,
}

/// The bounds of a RollingUpdate.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentRolloutStrategyRollingUpdate {
    /// maxUnavailable is how many Machines (a number, or a percentage of replicas rounded down)
    /// may be unavailable during the rollout. Cannot be 0 when maxSurge is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::int_or_string")]
    pub max_unavailable: Option<IntOrString>,
    /// maxSurge is how many Machines (a number, or a percentage of replicas rounded up) may exist
    /// above the desired number during the rollout. Cannot be 0 when maxUnavailable is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::int_or_string")]
    pub max_surge: Option<IntOrString>,
}

/// How a MachineDeployment replaces unhealthy Machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentRemediationSpec {
    /// maxInFlight is how many Machines (a number, or a percentage of replicas) may be
    /// remediated at the same time; unset means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::int_or_string")]
    pub max_in_flight: Option<IntOrString>,
}

/// The observed state of a MachineDeployment.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentStatus {
    /// conditions are the MachineDeployment's conditions (Available, MachinesReady,
    /// MachinesUpToDate, RollingOut, ScalingUp, ScalingDown, Remediating, Deleting, Paused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// observedGeneration is the generation of the spec the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
    /// selector is `spec.selector` in string form, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub selector: Option<String>,
    /// replicas is the number of Machines of the MachineDeployment, in all its MachineSets.
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
    /// phase summarises the MachineDeployment for people; controllers use conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<MachineDeploymentPhase>,
    /// deprecated holds status fields kept for older API versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: MachineDeploymentDeprecatedStatus,
}

/// The phase of a MachineDeployment.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum MachineDeploymentPhase {
    /// There are fewer Machines than wanted.
    ScalingUp,
    /// There are more Machines than wanted, or the MachineDeployment is being deleted.
    ScalingDown,
    /// There are as many Machines as wanted.
    Running,
    /// Deprecated upstream and never set: v1beta2 has no terminal failures.
    Failed,
    /// The state cannot be determined.
    Unknown,
}

impl MachineDeploymentPhase {
    /// The phase as it appears in `status.phase`.
    pub fn as_str(self) -> &'static str {
        match self {
            MachineDeploymentPhase::ScalingUp => "ScalingUp",
            MachineDeploymentPhase::ScalingDown => "ScalingDown",
            MachineDeploymentPhase::Running => "Running",
            MachineDeploymentPhase::Failed => "Failed",
            MachineDeploymentPhase::Unknown => "Unknown",
        }
    }
}

/// Deprecated MachineDeployment status fields.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentDeprecatedStatus {
    /// v1beta1 holds the v1beta1 status fields, until upstream stops serving v1beta1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: MachineDeploymentV1Beta1DeprecatedStatus,
}

/// MachineDeployment status fields from v1beta1.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentV1Beta1DeprecatedStatus {
    /// conditions in the v1beta1 format.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
    /// updatedReplicas is the v1beta1 count of Machines with the current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i32>,
    /// readyReplicas is the v1beta1 count of Machines whose Node is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// availableReplicas is the v1beta1 count of Machines that have been Ready for
    /// minReadySeconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// unavailableReplicas is the v1beta1 count of Machines that are not available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_replicas: Option<i32>,
}

/// Upstream's webhook gives a MachineDeployment a RollingUpdate strategy with maxSurge 1 and
/// maxUnavailable 0, and rejects bounds that are neither integers nor percentages, or both 0
/// (`core/webhooks/admission/machinedeployment.go`). Corral says the same with schema defaults and
/// rules on `spec.rollout`.
///
/// They are attached here rather than on the shared types because a Cluster topology's
/// MachineDeployments use the same types without the defaults, and because there, in a list of up
/// to 2000 entries, a regular expression over an unbounded int-or-string would exceed the API
/// server's CEL cost budget.
///
/// One difference remains: upstream fills in maxSurge and maxUnavailable for
/// `strategy: {type: RollingUpdate}` without `rollingUpdate`; a schema default cannot depend on
/// the sibling `type`, so there controllers read the missing bounds as 1 and 0.
fn default_rollout(rollout: &mut Schema) {
    let default_strategy = json!({
        "type": "RollingUpdate",
        "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 },
    });
    rollout.insert("default".into(), json!({ "strategy": default_strategy }));
    let strategy = schema::property(rollout, "strategy");
    strategy.insert("default".into(), default_strategy);
    let rolling_update = schema::property(strategy, "rollingUpdate");
    for (bound, default) in [("maxSurge", 1), ("maxUnavailable", 0)] {
        let bound = schema::property(rolling_update, bound);
        bound.insert("default".into(), json!(default));
    }
}
