//! KubeadmControlPlane and KubeadmControlPlaneTemplate (upstream
//! `api/controlplane/kubeadm/v1beta2/kubeadm_control_plane_types.go`,
//! `kubeadmcontrolplanetemplate_types.go`): a control plane of Machines bootstrapped with kubeadm,
//! with stacked or external etcd.
//!
//! Upstream's admission webhook (`controlplane/kubeadm/webhooks/admission/kubeadmcontrolplane.go`)
//! defaults `replicas` to 1 and the rollout strategy to RollingUpdate with maxSurge 1 (also
//! schema defaults here, `crd.rs`), and refuses an even number of replicas with stacked etcd, a
//! maxSurge other than 0 or 1, maxSurge 0 with fewer than 3 replicas, a skipped minor version and
//! changes outside its list of mutable fields: `admission.rs`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use corral_api::{
    ContractVersionedObjectReference, MachineDeletionSpec, MachineReadinessGate, MachineTaint,
    StatusVersion, TemplateMetadata, V1Beta1Condition,
};

use super::bootstrap::KubeadmConfigSpec;
use super::schema::{self, is_default};

/// status is the observed state of KubeadmControlPlane.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneStatus {
    /// availableReplicas is the number of available replicas targeted by this KubeadmControlPlane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// conditions represents the observations of a KubeadmControlPlane's current state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions", length(max = 32), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// deprecated groups all the status fields that are deprecated and will be removed when all the
    /// nested field are removed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: KubeadmControlPlaneDeprecatedStatus,
    /// initialization provides observations of the KubeadmControlPlane initialization process.
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: KubeadmControlPlaneInitializationStatus,
    /// lastRemediation stores info about last remediation performed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_remediation: Option<LastRemediationStatus>,
    /// observedGeneration is the latest generation observed by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
    /// readyReplicas is the number of ready replicas for this KubeadmControlPlane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// replicas is the total number of non-terminated machines targeted by this control plane
    /// (their labels match the selector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// selector is the label selector in string format to avoid introspection by clients, and is
    /// used to provide the CRD-based integration for the scale subresource and additional
    /// integrations for things like kubectl describe..
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    pub selector: Option<String>,
    /// upToDateReplicas is the number of up-to-date replicas targeted by this KubeadmControlPlane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_to_date_replicas: Option<i32>,
    /// version represents the minimum Kubernetes version for the control plane machines in the
    /// cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub version: Option<String>,
    /// versions is the aggregated Kubernetes versions in this KubeadmControlPlane.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["version"]))]
    pub versions: Vec<StatusVersion>,
}

/// lastRemediation stores info about last remediation performed.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LastRemediationStatus {
    /// machine is the machine name of the latest machine being remediated.
    #[schemars(length(min = 1, max = 253))]
    pub machine: String,
    /// retryCount used to keep track of remediation retry for the last remediated machine.
    #[schemars(range(min = 0))]
    pub retry_count: i32,
    /// time is when last remediation happened.
    #[schemars(schema_with = "schema::time")]
    pub time: Time,
}

/// initialization provides observations of the KubeadmControlPlane initialization process.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneInitializationStatus {
    /// controlPlaneInitialized is true when the KubeadmControlPlane provider reports that the
    /// Kubernetes control plane is initialized; A control plane is considered initialized when it
    /// can accept requests, no matter if this happens before the control plane is fully provisioned
    /// or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_initialized: Option<bool>,
}

/// deprecated groups all the status fields that are deprecated and will be removed when all the
/// nested field are removed.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneDeprecatedStatus {
    /// v1beta1 groups all the status fields that are deprecated and will be removed when support
    /// for v1beta1 will be dropped.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: KubeadmControlPlaneV1Beta1DeprecatedStatus,
}

/// v1beta1 groups all the status fields that are deprecated and will be removed when support for
/// v1beta1 will be dropped.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneV1Beta1DeprecatedStatus {
    /// conditions defines current service state of the KubeadmControlPlane.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
    /// failureMessage indicates that there is a terminal problem reconciling the state, and will be
    /// set to a descriptive error message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10240))]
    pub failure_message: Option<String>,
    /// failureReason indicates that there is a terminal problem reconciling the state, and will be
    /// set to a token value suitable for programmatic interpretation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// readyReplicas is the total number of fully running and ready control plane machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// unavailableReplicas is the total number of unavailable machines targeted by this control
    /// plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_replicas: Option<i32>,
    /// updatedReplicas is the total number of non-terminated machines targeted by this control
    /// plane that have the desired template spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i32>,
}

/// spec is the desired state of KubeadmControlPlane.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "controlplane.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "KubeadmControlPlane",
    namespaced,
    status = "KubeadmControlPlaneStatus",
    derive = "PartialEq",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    doc = "KubeadmControlPlane is the Schema for the KubeadmControlPlane API.",
    shortname = "kcp",
    category = "cluster-api",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels['cluster\.x-k8s\.io/cluster-name']",
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
        name = "Initialized",
        type_ = "boolean",
        json_path = ".status.initialization.controlPlaneInitialized",
        description = "This denotes whether or not the control plane can accept requests"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of KubeadmControlPlane"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.version",
        description = "Kubernetes version associated with this control plane"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneSpec {
    /// kubeadmConfigSpec is a KubeadmConfigSpec to use for initializing and joining machines to the
    /// control plane.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kubeadm_config_spec: KubeadmConfigSpec,
    /// machineNaming allows changing the naming pattern used when creating Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub machine_naming: MachineNamingSpec,
    /// machineTemplate contains information about how machines should be shaped when creating or
    /// updating a control plane.
    pub machine_template: KubeadmControlPlaneMachineTemplate,
    /// remediation controls how unhealthy Machines are remediated.
    #[serde(default, skip_serializing_if = "is_default")]
    pub remediation: KubeadmControlPlaneRemediationSpec,
    /// replicas is the number of desired machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// rollout allows you to configure the behaviour of rolling updates to the control plane
    /// Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rollout: KubeadmControlPlaneRolloutSpec,
    /// version defines the desired Kubernetes version.
    #[schemars(length(min = 1, max = 256))]
    pub version: String,
}

/// rollout allows you to configure the behaviour of rolling updates to the control plane Machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneRolloutSpec {
    /// after is a field to indicate a rollout should be performed after the specified time even if
    /// no changes have been made to the KubeadmControlPlane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub after: Option<Time>,
    /// before is a field to indicate a rollout should be performed if the specified criteria is
    /// met.
    #[serde(default, skip_serializing_if = "is_default")]
    pub before: KubeadmControlPlaneRolloutBeforeSpec,
    /// strategy specifies how to roll out control plane Machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<KubeadmControlPlaneRolloutStrategy>,
}

/// strategy specifies how to roll out control plane Machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneRolloutStrategy {
    /// rollingUpdate is the rolling update config params.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rolling_update: KubeadmControlPlaneRolloutStrategyRollingUpdate,
    /// type of rollout.
    #[serde(rename = "type")]
    pub type_: KubeadmControlPlaneRolloutStrategyType,
}

/// type of rollout.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum KubeadmControlPlaneRolloutStrategyType {
    /// `RollingUpdate`.
    RollingUpdate,
}

/// rollingUpdate is the rolling update config params.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneRolloutStrategyRollingUpdate {
    /// maxSurge is the maximum number of control planes that can be scheduled above or under the
    /// desired number of control planes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::int_or_string")]
    pub max_surge: Option<IntOrString>,
}

/// before is a field to indicate a rollout should be performed if the specified criteria is met.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneRolloutBeforeSpec {
    /// certificatesExpiryDays indicates a rollout needs to be performed if the certificates of the
    /// machine will expire within the specified days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 7))]
    pub certificates_expiry_days: Option<i32>,
}

/// remediation controls how unhealthy Machines are remediated.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneRemediationSpec {
    /// maxRetry is the Max number of retries while attempting to remediate an unhealthy machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry: Option<i32>,
    /// minHealthyPeriodSeconds defines the duration after which KCP will consider any failure to a
    /// machine unrelated from the previous one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_healthy_period_seconds: Option<i32>,
    /// retryPeriodSeconds is the duration that KCP should wait before remediating a machine being
    /// created as a replacement for an unhealthy machine (a retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_period_seconds: Option<i32>,
}

/// machineTemplate contains information about how machines should be shaped when creating or
/// updating a control plane.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneMachineTemplate {
    /// metadata is the standard object's metadata.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec defines the spec for Machines in a KubeadmControlPlane object.
    pub spec: KubeadmControlPlaneMachineTemplateSpec,
}

/// spec defines the spec for Machines in a KubeadmControlPlane object.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneMachineTemplateSpec {
    /// deletion contains configuration options for Machine deletion.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineDeletionSpec,
    /// infrastructureRef is a required reference to a custom resource offered by an infrastructure
    /// provider.
    pub infrastructure_ref: ContractVersionedObjectReference,
    /// readinessGates specifies additional conditions to include when evaluating Machine Ready
    /// condition; KubeadmControlPlane will always add readinessGates for the condition it is
    /// setting on the Machine: NodeKubeadmLabelsAndTaintsSet, APIServerPodHealthy,
    /// SchedulerPodHealthy, ControllerManagerPodHealthy, and if etcd is managed by CKP also
    /// EtcdPodHealthy, EtcdMemberHealthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 32), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["conditionType"]))]
    pub readiness_gates: Vec<MachineReadinessGate>,
    /// taints are the node taints that Cluster API will manage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key", "effect"]))]
    pub taints: Vec<MachineTaint>,
}

/// machineNaming allows changing the naming pattern used when creating Machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct MachineNamingSpec {
    /// template defines the template to use for generating the names of the Machine objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub template: Option<String>,
}

/// spec is the desired state of KubeadmControlPlaneTemplate.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "controlplane.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "KubeadmControlPlaneTemplate",
    namespaced,
    doc = "KubeadmControlPlaneTemplate is the Schema for the kubeadmcontrolplanetemplates API.",
    category = "cluster-api",
    printcolumn(
        name = "ClusterClass",
        type_ = "string",
        json_path = r#".metadata.ownerReferences[?(@.kind=="ClusterClass")].name"#,
        description = "Name of the ClusterClass owning this template"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of KubeadmControlPlaneTemplate"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmControlPlaneTemplateSpec {
    /// template defines the desired state of KubeadmControlPlaneTemplate.
    pub template: KubeadmControlPlaneTemplateResource,
}

/// template defines the desired state of KubeadmControlPlaneTemplate.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneTemplateResource {
    /// metadata is the standard object's metadata.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec is the desired state of KubeadmControlPlaneTemplateResource.
    #[serde(default, skip_serializing_if = "is_default")]
    pub spec: KubeadmControlPlaneTemplateResourceSpec,
}

/// spec is the desired state of KubeadmControlPlaneTemplateResource.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneTemplateResourceSpec {
    /// kubeadmConfigSpec is a KubeadmConfigSpec to use for initializing and joining machines to the
    /// control plane.
    #[serde(default, skip_serializing_if = "is_default")]
    pub kubeadm_config_spec: KubeadmConfigSpec,
    /// machineNaming allows changing the naming pattern used when creating Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub machine_naming: MachineNamingSpec,
    /// machineTemplate contains information about how machines should be shaped when creating or
    /// updating a control plane.
    #[serde(default, skip_serializing_if = "is_default")]
    pub machine_template: KubeadmControlPlaneTemplateMachineTemplate,
    /// remediation controls how unhealthy Machines are remediated.
    #[serde(default, skip_serializing_if = "is_default")]
    pub remediation: KubeadmControlPlaneRemediationSpec,
    /// rollout allows you to configure the behaviour of rolling updates to the control plane
    /// Machines.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rollout: KubeadmControlPlaneRolloutSpec,
}

/// machineTemplate contains information about how machines should be shaped when creating or
/// updating a control plane.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneTemplateMachineTemplate {
    /// metadata is the standard object's metadata.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec defines the spec for Machines in a KubeadmControlPlane object.
    #[serde(default, skip_serializing_if = "is_default")]
    pub spec: KubeadmControlPlaneTemplateMachineTemplateSpec,
}

/// spec defines the spec for Machines in a KubeadmControlPlane object.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmControlPlaneTemplateMachineTemplateSpec {
    /// deletion contains configuration options for Machine deletion.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deletion: MachineDeletionSpec,
    /// taints are the node taints that Cluster API will manage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key", "effect"]))]
    pub taints: Vec<MachineTaint>,
}
