//! Types shared by several kinds (upstream `api/core/v1beta2/common_types.go` and friends).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// A reference to a provider object in the referrer's namespace: its API group, kind and name.
///
/// There is no version: core resolves it at runtime from the `cluster.x-k8s.io/<contract>` label
/// on the provider's CRD, so providers can move to new API versions without rewriting references.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub struct ContractVersionedObjectReference {
    /// apiGroup is the group of the resource being referenced.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub api_group: String,
    /// kind of the resource being referenced.
    #[schemars(length(min = 1, max = 63), pattern(schema::KIND))]
    pub kind: String,
    /// name of the resource being referenced.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,
}

/// Labels and annotations for objects created from a template (upstream `clusterv1.ObjectMeta`).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct TemplateMetadata {
    /// labels to put on the objects created from the template.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// annotations to put on the objects created from the template.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A host and port at which a Kubernetes API server can be reached.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ApiEndpoint {
    /// host is the hostname on which the API server is serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub host: Option<String>,
    /// port is the port on which the API server is serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
}

impl ApiEndpoint {
    /// Whether both host and port are set, upstream's test for a usable endpoint.
    pub fn is_valid(&self) -> bool {
        self.host.as_deref().is_some_and(|host| !host.is_empty())
            && self.port.is_some_and(|port| port != 0)
    }
}

/// Whether a condition is good when True (Positive) or when False (Negative).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum ConditionPolarity {
    /// The condition is good when True.
    Positive,
    /// The condition is good when False.
    Negative,
}

/// The status of a condition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// It is not known whether the condition holds.
    Unknown,
}

impl ConditionStatus {
    /// The status as it appears in a condition's `status` field.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// An additional condition a Cluster must satisfy to be Available.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAvailabilityGate {
    /// conditionType is the type of a condition of the Cluster; a missing condition counts as
    /// Unknown.
    #[schemars(length(min = 1, max = 316), pattern(schema::QUALIFIED_NAME))]
    pub condition_type: String,
    /// polarity of the condition; Positive when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polarity: Option<ConditionPolarity>,
}

/// An additional condition a Machine must satisfy to be Ready.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineReadinessGate {
    /// conditionType is the type of a condition of the Machine; a missing condition counts as
    /// Unknown.
    #[schemars(length(min = 1, max = 316), pattern(schema::QUALIFIED_NAME))]
    pub condition_type: String,
    /// polarity of the condition; Positive when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polarity: Option<ConditionPolarity>,
}

/// The effect of a taint on Pods that do not tolerate it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum TaintEffect {
    /// Pods are not scheduled onto the Node.
    NoSchedule,
    /// The scheduler tries not to schedule Pods onto the Node.
    PreferNoSchedule,
    /// Pods are evicted from the Node.
    NoExecute,
}

/// When a Machine's taint is put on its Node.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum MachineTaintPropagation {
    /// The taint is kept on the Node for as long as the Machine has it.
    Always,
    /// The taint is set once, when the Node is first seen, and left alone afterwards.
    OnInitialization,
}

/// A taint the Machine controller puts on the Machine's Node.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineTaint {
    /// key of the taint.
    #[schemars(length(min = 1, max = 317), pattern(schema::TAINT_KEY))]
    pub key: String,
    /// value of the taint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), pattern(schema::TAINT_VALUE))]
    pub value: Option<String>,
    /// effect of the taint.
    pub effect: TaintEffect,
    /// propagation tells whether the taint is kept in sync (Always) or set once (OnInitialization).
    pub propagation: MachineTaintPropagation,
}

/// How long the Machine controller waits on each step of deleting a Machine's Node.
///
/// Unset or 0 means no limit, except for `nodeDeletionTimeoutSeconds`, which a Machine gets as 10
/// when unset (upstream's Machine webhook default).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeletionSpec {
    /// nodeDrainTimeoutSeconds bounds the time spent draining the Node; unset or 0 waits for as
    /// long as draining takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_drain_timeout_seconds: Option<i32>,
    /// nodeVolumeDetachTimeoutSeconds bounds the wait for the Node's volumes to detach; unset or
    /// 0 waits for as long as detaching takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_volume_detach_timeout_seconds: Option<i32>,
    /// nodeDeletionTimeoutSeconds bounds, from the Machine's deletion timestamp, the attempts to
    /// delete its Node; 0 retries for ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_deletion_timeout_seconds: Option<i32>,
}

/// The kind of a Machine address.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum MachineAddressType {
    /// A host name.
    Hostname,
    /// An IP address reachable from outside the cluster.
    #[serde(rename = "ExternalIP")]
    ExternalIp,
    /// An IP address reachable from inside the cluster.
    #[serde(rename = "InternalIP")]
    InternalIp,
    /// A DNS name that resolves outside the cluster.
    #[serde(rename = "ExternalDNS")]
    ExternalDns,
    /// A DNS name that resolves inside the cluster.
    #[serde(rename = "InternalDNS")]
    InternalDns,
}

/// An address of a Machine.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MachineAddress {
    /// type of the address.
    #[serde(rename = "type")]
    pub type_: MachineAddressType,
    /// address itself.
    #[schemars(length(min = 1, max = 256))]
    pub address: String,
}

/// A failure domain: a set of machines that can fail together (a zone, a rack).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FailureDomain {
    /// name is the name of the failure domain.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// controlPlane tells whether control plane machines may be placed in this failure domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<bool>,
    /// attributes are provider-specific properties of the failure domain.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}

/// How many machines run a Kubernetes version.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StatusVersion {
    /// version of the machines.
    #[schemars(length(min = 1, max = 256))]
    pub version: String,
    /// replicas is the number of machines at this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub replicas: Option<i32>,
}

/// A condition in the v1beta1 format, kept under `status.deprecated.v1beta1.conditions` until
/// upstream stops serving v1beta1.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct V1Beta1Condition {
    /// type of the condition.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 256))]
    pub type_: String,
    /// status of the condition: True, False or Unknown.
    pub status: String,
    /// severity of a False condition: Error, Warning or Info.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub severity: Option<String>,
    /// lastTransitionTime is when the status last changed.
    #[schemars(schema_with = "schema::time")]
    pub last_transition_time: Time,
    /// reason for the last transition, in CamelCase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub reason: Option<String>,
    /// message about the last transition, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10240))]
    pub message: Option<String>,
}
