//! MachineHealthCheck: finds unhealthy Machines and has them remediated (upstream
//! `machinehealthcheck_types.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::common::{ConditionStatus, V1Beta1Condition};
use crate::schema::{self, is_default};

/// The default of `spec.checks.nodeStartupTimeoutSeconds`: ten minutes.
pub const DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS: i32 = 600;

/// The shortest `nodeStartupTimeoutSeconds` other than 0 (which turns the check off).
pub const MIN_NODE_STARTUP_TIMEOUT_SECONDS: i32 = 30;

/// The desired state of a MachineHealthCheck.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "MachineHealthCheck",
    namespaced,
    derive = "PartialEq",
    status = "MachineHealthCheckStatus",
    doc = "MachineHealthCheck is the Schema for the machinehealthchecks API.",
    shortname = "mhc",
    shortname = "mhcs",
    category = "cluster-api",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".spec.clusterName",
        description = "Cluster"
    ),
    printcolumn(
        name = "Replicas",
        type_ = "integer",
        json_path = ".status.expectedMachines",
        description = "Number of machines currently monitored"
    ),
    printcolumn(
        name = "Healthy",
        type_ = "integer",
        json_path = ".status.currentHealthy",
        description = "Current observed healthy machines"
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
        description = "Time duration since creation of MachineHealthCheck"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MachineHealthCheckSpec {
    /// clusterName is the name of the Cluster whose Machines are checked. It cannot change.
    #[schemars(length(min = 1, max = 63))]
    pub cluster_name: String,
    /// selector picks the Machines to check, among those of the Cluster. It must not be empty.
    #[schemars(schema_with = "schema::label_selector")]
    pub selector: LabelSelector,
    /// checks say when a Machine is unhealthy.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(transform = checks_rules)]
    pub checks: MachineHealthCheckChecks,
    /// remediation says what happens to unhealthy Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub remediation: MachineHealthCheckRemediation,
}

/// When a Machine is unhealthy.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineHealthCheckChecks {
    /// nodeStartupTimeoutSeconds is how long a Machine may go without a Node before it is
    /// unhealthy, counted from the latest of its creation and the Cluster's and its own
    /// infrastructure becoming ready. 0 turns the check off. A MachineHealthCheck gets 600 when
    /// unset, and values from 1 to 29 are rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_startup_timeout_seconds: Option<i32>,
    /// unhealthyNodeConditions make a Machine unhealthy when its Node has one of these conditions
    /// for at least the given time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub unhealthy_node_conditions: Vec<UnhealthyNodeCondition>,
    /// unhealthyMachineConditions make a Machine unhealthy when it has one of these conditions
    /// for at least the given time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub unhealthy_machine_conditions: Vec<UnhealthyMachineCondition>,
}

/// A Node condition that makes a Machine unhealthy once it has lasted long enough.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UnhealthyNodeCondition {
    /// type of the Node condition, such as Ready.
    #[serde(rename = "type")]
    #[schemars(length(min = 1))]
    pub type_: String,
    /// status of the Node condition, such as Unknown or False.
    #[schemars(length(min = 1))]
    pub status: String,
    /// timeoutSeconds is how long the condition must last, from its last transition.
    #[schemars(range(min = 0))]
    pub timeout_seconds: i32,
}

/// A Machine condition that makes a Machine unhealthy once it has lasted long enough.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UnhealthyMachineCondition {
    /// type of the Machine condition. The conditions the health check itself computes or
    /// depends on (Ready, Available, HealthCheckSucceeded, OwnerRemediated, ExternallyRemediated)
    /// are not allowed.
    #[serde(rename = "type")]
    #[schemars(
        length(min = 1, max = 316),
        pattern(schema::QUALIFIED_NAME),
        extend("x-kubernetes-validations" = [{
            "rule": "!(self in ['Ready','Available','HealthCheckSucceeded','OwnerRemediated','ExternallyRemediated'])",
            "message": "type must not be one of: Ready, Available, HealthCheckSucceeded, OwnerRemediated, ExternallyRemediated",
        }])
    )]
    pub type_: String,
    /// status of the Machine condition.
    pub status: ConditionStatus,
    /// timeoutSeconds is how long the condition must last, from its last transition.
    #[schemars(range(min = 0))]
    pub timeout_seconds: i32,
}

/// What happens to unhealthy Machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineHealthCheckRemediation {
    /// triggerIf holds remediation back when too many Machines are unhealthy at once, which
    /// usually means the cause is not the Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub trigger_if: MachineHealthCheckRemediationTriggerIf,
    /// templateRef names a template for external remediation: for each unhealthy Machine an
    /// object is created from it, named after the Machine. Without it, the Machine's owner
    /// (MachineSet, control plane) replaces the Machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_ref: Option<MachineHealthCheckRemediationTemplateReference>,
}

/// When remediation may happen, given how many Machines are unhealthy.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineHealthCheckRemediationTriggerIf {
    /// unhealthyLessThanOrEqualTo allows remediation only while at most this many Machines (a
    /// number, or a percentage of the checked Machines, rounded down) are unhealthy. Unset means
    /// 100%. unhealthyInRange takes precedence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::int_or_string")]
    pub unhealthy_less_than_or_equal_to: Option<IntOrString>,
    /// unhealthyInRange, as `[min-max]`, allows remediation only while the number of unhealthy
    /// Machines is within the range, bounds included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32), pattern(schema::UNHEALTHY_RANGE))]
    pub unhealthy_in_range: Option<String>,
}

/// A template for external remediation requests.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub struct MachineHealthCheckRemediationTemplateReference {
    /// kind of the template.
    #[schemars(length(min = 1, max = 63), pattern(schema::KIND))]
    pub kind: String,
    /// name of the template, in the MachineHealthCheck's namespace.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,
    /// apiVersion of the template, as `group/version`.
    #[schemars(length(min = 1, max = 317), pattern(schema::API_VERSION))]
    pub api_version: String,
}

/// The observed state of a MachineHealthCheck.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineHealthCheckStatus {
    /// conditions are the MachineHealthCheck's conditions (RemediationAllowed, Paused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// expectedMachines is the number of Machines checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub expected_machines: Option<i32>,
    /// currentHealthy is the number of checked Machines that are healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub current_healthy: Option<i32>,
    /// remediationsAllowed is how many more Machines may be remediated before triggerIf holds
    /// remediation back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub remediations_allowed: Option<i32>,
    /// observedGeneration is the generation of the spec the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
    /// targets are the names of the checked Machines, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 10000),
        inner(length(min = 1, max = 253)),
        extend("x-kubernetes-list-type" = "atomic")
    )]
    pub targets: Vec<String>,
    /// deprecated holds status fields kept for older API versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: MachineHealthCheckDeprecatedStatus,
}

/// Deprecated MachineHealthCheck status fields.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineHealthCheckDeprecatedStatus {
    /// v1beta1 holds the v1beta1 status fields, until upstream stops serving v1beta1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: MachineHealthCheckV1Beta1DeprecatedStatus,
}

/// MachineHealthCheck status fields from v1beta1.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineHealthCheckV1Beta1DeprecatedStatus {
    /// conditions in the v1beta1 format.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
}

/// Upstream's webhook defaults `nodeStartupTimeoutSeconds` to 600
/// (`core/webhooks/admission/machinehealthcheck.go`); Corral says it in the schema (the
/// webhook's validation is `admission::machine_health_check`). The
/// default of `checks` itself is a complete object because the API server validates a default as
/// written, without applying the defaults nested in it, and `checks` has `minProperties: 1`.
///
/// Attached to the MachineHealthCheck's field rather than to the shared type: a Cluster
/// topology's health checks use the same type, and upstream leaves them alone.
fn checks_rules(checks: &mut Schema) {
    let timeout = DEFAULT_NODE_STARTUP_TIMEOUT_SECONDS;
    checks.insert(
        "default".into(),
        json!({ "nodeStartupTimeoutSeconds": timeout }),
    );
    let node_startup_timeout = schema::property(checks, "nodeStartupTimeoutSeconds");
    node_startup_timeout.insert("default".into(), json!(timeout));
}
