//! Cluster: a Kubernetes cluster and the objects that make it (upstream `cluster_types.go`).
//!
//! The topology types (`spec.topology`, clusters built from a ClusterClass) are here so that
//! Cluster objects written for upstream round-trip; Corral has no topology controller yet.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{
    ApiEndpoint, ClusterAvailabilityGate, ContractVersionedObjectReference, FailureDomain,
    MachineDeletionSpec, MachineReadinessGate, MachineTaint, StatusVersion, TemplateMetadata,
    V1Beta1Condition,
};
use crate::machine_deployment::MachineDeploymentRollout;
use crate::machine_health_check::{
    MachineHealthCheckChecks, MachineHealthCheckRemediation,
    MachineHealthCheckRemediationTemplateReference, MachineHealthCheckRemediationTriggerIf,
};
use crate::machine_set::MachineSetDeletionOrder;
use crate::schema::{self, is_default};

/// The desired state of a Cluster.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Cluster",
    namespaced,
    derive = "PartialEq",
    status = "ClusterStatus",
    doc = "Cluster is the Schema for the clusters API.",
    shortname = "cl",
    category = "cluster-api",
    printcolumn(
        name = "ClusterClass",
        type_ = "string",
        json_path = ".spec.topology.classRef.name",
        description = "ClusterClass of this Cluster, empty if the Cluster is not using a ClusterClass"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Available")].status"#,
        description = "Cluster pass all availability checks"
    ),
    printcolumn(
        name = "CP Desired",
        type_ = "integer",
        json_path = ".status.controlPlane.desiredReplicas",
        description = "The desired number of control plane machines"
    ),
    printcolumn(
        name = "CP Current",
        type_ = "integer",
        json_path = ".status.controlPlane.replicas",
        description = "The number of control plane machines",
        priority = 10
    ),
    printcolumn(
        name = "CP Ready",
        type_ = "integer",
        json_path = ".status.controlPlane.readyReplicas",
        description = "The number of control plane machines with Ready condition true",
        priority = 10
    ),
    printcolumn(
        name = "CP Available",
        type_ = "integer",
        json_path = ".status.controlPlane.availableReplicas",
        description = "The number of control plane machines with Available condition true"
    ),
    printcolumn(
        name = "CP Up-to-date",
        type_ = "integer",
        json_path = ".status.controlPlane.upToDateReplicas",
        description = "The number of control plane machines with UpToDate condition true"
    ),
    printcolumn(
        name = "W Desired",
        type_ = "integer",
        json_path = ".status.workers.desiredReplicas",
        description = "The desired number of worker machines"
    ),
    printcolumn(
        name = "W Current",
        type_ = "integer",
        json_path = ".status.workers.replicas",
        description = "The number of worker machines",
        priority = 10
    ),
    printcolumn(
        name = "W Ready",
        type_ = "integer",
        json_path = ".status.workers.readyReplicas",
        description = "The number of worker machines with Ready condition true",
        priority = 10
    ),
    printcolumn(
        name = "W Available",
        type_ = "integer",
        json_path = ".status.workers.availableReplicas",
        description = "The number of worker machines with Available condition true"
    ),
    printcolumn(
        name = "W Up-to-date",
        type_ = "integer",
        json_path = ".status.workers.upToDateReplicas",
        description = "The number of worker machines with UpToDate condition true"
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
        description = "Cluster status such as Pending/Provisioning/Provisioned/Deleting/Failed"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of Cluster"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.topology.version",
        description = "Kubernetes version associated with this Cluster"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ClusterSpec {
    /// paused stops the reconciliation of the Cluster and all its objects while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// clusterNetwork is the workload cluster's network configuration.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cluster_network: ClusterNetwork,
    /// controlPlaneEndpoint is where the workload cluster's API server can be reached. Usually
    /// copied from the infrastructure or control plane object.
    #[serde(default, skip_serializing_if = "is_default")]
    pub control_plane_endpoint: ApiEndpoint,
    /// controlPlaneRef is the control plane provider's object for this Cluster. Once set, it
    /// cannot be removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_ref: Option<ContractVersionedObjectReference>,
    /// infrastructureRef is the infrastructure provider's object for this Cluster. Once set, it
    /// cannot be removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractVersionedObjectReference>,
    /// topology builds the Cluster from a ClusterClass. Once set, it cannot be removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
    /// availabilityGates are additional conditions the Available condition takes into account.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 32),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["conditionType"])
    )]
    pub availability_gates: Vec<ClusterAvailabilityGate>,
}

/// The network configuration of a workload cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ClusterNetwork {
    /// apiServerPort is the port the API server listens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub api_server_port: Option<i32>,
    /// services are the address ranges of Services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<NetworkRanges>,
    /// pods are the address ranges of Pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<NetworkRanges>,
    /// serviceDomain is the domain name of Services, such as cluster.local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub service_domain: Option<String>,
}

/// Address ranges.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRanges {
    /// cidrBlocks are the ranges in CIDR notation.
    #[schemars(
        length(min = 1, max = 100),
        inner(length(min = 1, max = 43)),
        extend("x-kubernetes-list-type" = "atomic")
    )]
    pub cidr_blocks: Vec<String>,
}

/// A Cluster built from a ClusterClass.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// classRef names the ClusterClass.
    pub class_ref: ClusterClassRef,
    /// version is the Kubernetes version of the Cluster.
    #[schemars(length(min = 1, max = 256))]
    pub version: String,
    /// controlPlane overrides the ClusterClass for the control plane.
    #[serde(default, skip_serializing_if = "is_default")]
    pub control_plane: ControlPlaneTopology,
    /// workers are the Cluster's MachineDeployments and MachinePools.
    #[serde(default, skip_serializing_if = "is_default")]
    pub workers: WorkersTopology,
    /// variables are values for the ClusterClass's variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 1000),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub variables: Vec<ClusterVariable>,
}

/// A reference to a ClusterClass.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub struct ClusterClassRef {
    /// name of the ClusterClass.
    #[schemars(length(min = 1, max = 253), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,
    /// namespace of the ClusterClass; the Cluster's namespace when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63), pattern(schema::DNS1123_LABEL))]
    pub namespace: Option<String>,
}

/// A value for a ClusterClass variable.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVariable {
    /// name of the variable.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// value of the variable, any JSON the variable's schema accepts.
    #[schemars(schema_with = "schema::any_json")]
    pub value: serde_json::Value,
}

/// Variable values for part of a topology, overriding the Cluster-wide ones.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct TopologyVariables {
    /// overrides are the values that differ from the Cluster-wide ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 1000),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub overrides: Vec<ClusterVariable>,
}

/// The control plane of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ControlPlaneTopology {
    /// metadata for the control plane object and its Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// replicas is the number of control plane Machines, if the control plane has Machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// rollout forces a rollout of the control plane.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rollout: ControlPlaneTopologyRollout,
    /// healthCheck for the control plane Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub health_check: ControlPlaneTopologyHealthCheck,
    /// deletion holds the time limits on deleting the control plane Machines' Nodes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineDeletionSpec,
    /// readinessGates are additional conditions the control plane Machines' Ready condition
    /// takes into account.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 32),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["conditionType"])
    )]
    pub readiness_gates: Vec<MachineReadinessGate>,
    /// taints for the control plane Machines' Nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key", "effect"])
    )]
    pub taints: Vec<MachineTaint>,
    /// variables override Cluster-wide variable values for the control plane.
    #[serde(default, skip_serializing_if = "is_default")]
    pub variables: TopologyVariables,
}

/// When the control plane of a topology rolls out.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ControlPlaneTopologyRollout {
    /// after forces a rollout once this time has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub after: Option<Time>,
}

/// The health check of the control plane of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ControlPlaneTopologyHealthCheck {
    /// enabled turns the health check on or off; by default it is on when the ClusterClass or
    /// this topology defines checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// checks say when a Machine is unhealthy.
    #[serde(default, skip_serializing_if = "is_default")]
    pub checks: MachineHealthCheckChecks,
    /// remediation says what happens to unhealthy Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub remediation: MachineHealthCheckRemediation,
}

/// The workers of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct WorkersTopology {
    /// machineDeployments of the Cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 2000),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub machine_deployments: Vec<MachineDeploymentTopology>,
    /// machinePools of the Cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 2000),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub machine_pools: Vec<MachinePoolTopology>,
}

/// A MachineDeployment of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentTopology {
    /// metadata for the MachineDeployment and its Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// class is the name of the ClusterClass's MachineDeployment class to use.
    #[schemars(length(min = 1, max = 256))]
    pub class: String,
    /// name of the MachineDeployment within the topology; the object's name is generated.
    #[schemars(length(min = 1, max = 63), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,
    /// failureDomain for the Machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub failure_domain: Option<String>,
    /// replicas is the number of Machines; leave unset when an autoscaler manages it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// healthCheck for the Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub health_check: MachineDeploymentTopologyHealthCheck,
    /// deletion holds the deletion order and the time limits on deleting the Machines' Nodes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineDeploymentTopologyDeletion,
    /// minReadySeconds is how long a Machine must be Ready before it counts as Available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_ready_seconds: Option<i32>,
    /// readinessGates are additional conditions the Machines' Ready condition takes into
    /// account.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 32),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["conditionType"])
    )]
    pub readiness_gates: Vec<MachineReadinessGate>,
    /// rollout says how and when Machines are replaced.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rollout: MachineDeploymentRollout,
    /// taints for the Machines' Nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key", "effect"])
    )]
    pub taints: Vec<MachineTaint>,
    /// variables override Cluster-wide variable values for this MachineDeployment.
    #[serde(default, skip_serializing_if = "is_default")]
    pub variables: TopologyVariables,
}

/// The health check of a MachineDeployment of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentTopologyHealthCheck {
    /// enabled turns the health check on or off; by default it is on when the ClusterClass or
    /// this topology defines checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// checks say when a Machine is unhealthy.
    #[serde(default, skip_serializing_if = "is_default")]
    pub checks: MachineHealthCheckChecks,
    /// remediation says what happens to unhealthy Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub remediation: MachineDeploymentTopologyHealthCheckRemediation,
}

/// What happens to unhealthy Machines of a MachineDeployment of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentTopologyHealthCheckRemediation {
    /// maxInFlight is how many Machines (a number, or a percentage) may be remediated at the
    /// same time; unset means no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::int_or_string")]
    pub max_in_flight: Option<IntOrString>,
    /// triggerIf holds remediation back when too many Machines are unhealthy at once.
    #[serde(default, skip_serializing_if = "is_default")]
    pub trigger_if: MachineHealthCheckRemediationTriggerIf,
    /// templateRef names a template for external remediation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_ref: Option<MachineHealthCheckRemediationTemplateReference>,
}

/// Deletion settings of a MachineDeployment of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineDeploymentTopologyDeletion {
    /// order of deletion when scaling down; Random when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<MachineSetDeletionOrder>,
    /// nodeDrainTimeoutSeconds bounds the time spent draining a Node; unset or 0 waits for as
    /// long as draining takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_drain_timeout_seconds: Option<i32>,
    /// nodeVolumeDetachTimeoutSeconds bounds the wait for a Node's volumes to detach; unset or 0
    /// waits for as long as detaching takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_volume_detach_timeout_seconds: Option<i32>,
    /// nodeDeletionTimeoutSeconds bounds the attempts to delete a Node; 0 retries for ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub node_deletion_timeout_seconds: Option<i32>,
}

/// A MachinePool of a topology.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachinePoolTopology {
    /// metadata for the MachinePool.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// class is the name of the ClusterClass's MachinePool class to use.
    #[schemars(length(min = 1, max = 256))]
    pub class: String,
    /// name of the MachinePool within the topology; the object's name is generated.
    #[schemars(length(min = 1, max = 63), pattern(schema::DNS1123_SUBDOMAIN))]
    pub name: String,
    /// failureDomains the MachinePool's machines may be placed in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 100),
        inner(length(min = 1, max = 256)),
        extend("x-kubernetes-list-type" = "atomic")
    )]
    pub failure_domains: Vec<String>,
    /// deletion holds the time limits on deleting the machines' Nodes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineDeletionSpec,
    /// minReadySeconds is how long a machine must be Ready before it counts as Available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_ready_seconds: Option<i32>,
    /// replicas is the number of machines; leave unset when an autoscaler manages it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// taints for the machines' Nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 64),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key", "effect"])
    )]
    pub taints: Vec<MachineTaint>,
    /// variables override Cluster-wide variable values for this MachinePool.
    #[serde(default, skip_serializing_if = "is_default")]
    pub variables: TopologyVariables,
}

/// The observed state of a Cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ClusterStatus {
    /// conditions are the Cluster's conditions (Available, InfrastructureReady,
    /// ControlPlaneInitialized, ControlPlaneAvailable, WorkersAvailable, RemoteConnectionProbe,
    /// RollingOut, ScalingUp, ScalingDown, Remediating, Deleting, Paused, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// initialization records what the providers have done to bring the Cluster up.
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: ClusterInitializationStatus,
    /// controlPlane counts the control plane Machines, as the control plane provider reports
    /// them.
    #[serde(default, skip_serializing_if = "is_default")]
    pub control_plane: ClusterMachinesStatus,
    /// workers counts the worker Machines of the Cluster's MachineDeployments, MachinePools,
    /// MachineSets and standalone Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub workers: ClusterMachinesStatus,
    /// failureDomains of the Cluster, as the infrastructure provider reports them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 100),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub failure_domains: Vec<FailureDomain>,
    /// phase summarises the Cluster's lifecycle for people; controllers use conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterPhase>,
    /// observedGeneration is the generation of the spec the status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
    /// deprecated holds status fields kept for older API versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: ClusterDeprecatedStatus,
}

/// What the Cluster's providers have done to bring it up.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ClusterInitializationStatus {
    /// infrastructureProvisioned is true once the infrastructure provider reports the Cluster's
    /// infrastructure provisioned, or at once when there is no infrastructureRef. It never goes
    /// back to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_provisioned: Option<bool>,
    /// controlPlaneInitialized is true once the control plane provider reports the control
    /// plane initialized (its API server accepts requests). It never goes back to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_initialized: Option<bool>,
}

/// Counts of a Cluster's control plane or worker Machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMachinesStatus {
    /// desiredReplicas is the number of Machines wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<i32>,
    /// replicas is the number of Machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// upToDateReplicas is the number of Machines whose UpToDate condition is True.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_to_date_replicas: Option<i32>,
    /// readyReplicas is the number of Machines whose Ready condition is True.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// availableReplicas is the number of Machines whose Available condition is True.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// versions counts the Machines per Kubernetes version, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 32), extend("x-kubernetes-list-type" = "atomic"))]
    pub versions: Vec<StatusVersion>,
    /// upgradePlan lists the versions an upgrade of a topology goes through, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 32), extend("x-kubernetes-list-type" = "atomic"))]
    pub upgrade_plan: Vec<UpgradeStep>,
}

/// A step of an upgrade plan.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeStep {
    /// version reached by this step.
    #[schemars(length(min = 1, max = 256))]
    pub version: String,
}

/// Deprecated Cluster status fields.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDeprecatedStatus {
    /// v1beta1 holds the v1beta1 status fields, until upstream stops serving v1beta1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: ClusterV1Beta1DeprecatedStatus,
}

/// Cluster status fields from v1beta1.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterV1Beta1DeprecatedStatus {
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

/// The phase of a Cluster, a summary for people; controllers decide on conditions.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum ClusterPhase {
    /// The Cluster exists and nothing has happened yet.
    Pending,
    /// The Cluster has an infrastructure or control plane reference and is being provisioned.
    Provisioning,
    /// The infrastructure is provisioned and the control plane endpoint is known.
    Provisioned,
    /// The Cluster is being deleted.
    Deleting,
    /// Deprecated upstream and never set: v1beta2 has no terminal failures.
    Failed,
    /// The state of the Cluster cannot be determined.
    Unknown,
}

impl ClusterPhase {
    /// The phase as it appears in `status.phase`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterPhase::Pending => "Pending",
            ClusterPhase::Provisioning => "Provisioning",
            ClusterPhase::Provisioned => "Provisioned",
            ClusterPhase::Deleting => "Deleting",
            ClusterPhase::Failed => "Failed",
            ClusterPhase::Unknown => "Unknown",
        }
    }
}
