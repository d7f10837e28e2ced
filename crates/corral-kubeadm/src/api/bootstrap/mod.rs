//! KubeadmConfig and KubeadmConfigTemplate (upstream
//! `api/bootstrap/kubeadm/v1beta2/kubeadmconfig_types.go`, `kubeadmconfigtemplate_types.go`):
//! what a Machine's bootstrap data is made from. `kubeadm` holds the kubeadm configurations
//! (v1beta4 shapes), `host` what cloud-init or ignition does on the host besides kubeadm.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use corral_api::{TemplateMetadata, V1Beta1Condition};

use super::schema::{self, is_default};

pub mod host;
pub mod kubeadm;

pub use host::*;
pub use kubeadm::*;

/// spec is the desired state of KubeadmConfig.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "bootstrap.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "KubeadmConfig",
    namespaced,
    status = "KubeadmConfigStatus",
    derive = "PartialEq",
    doc = "KubeadmConfig is the Schema for the kubeadmconfigs API.",
    category = "cluster-api",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels['cluster\.x-k8s\.io/cluster-name']",
        description = "Cluster"
    ),
    printcolumn(
        name = "Paused",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Paused")].status"#,
        description = "Reconciliation paused",
        priority = 10
    ),
    printcolumn(
        name = "Data secret created",
        type_ = "string",
        json_path = ".status.initialization.dataSecretCreated",
        description = "Boostrap secret is created"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of KubeadmConfig"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmConfigSpec {
    /// bootCommands specifies extra commands to run very early in the boot process via the
    /// cloud-init bootcmd module.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 10240)), length(min = 1, max = 1000), extend("x-kubernetes-list-type" = "atomic"))]
    pub boot_commands: Vec<String>,
    /// clusterConfiguration along with InitConfiguration are the configurations necessary for the
    /// init command
    #[serde(default, skip_serializing_if = "is_default")]
    pub cluster_configuration: ClusterConfiguration,
    /// diskSetup specifies options for the creation of partition tables and file systems on
    /// devices.
    #[serde(default, skip_serializing_if = "is_default")]
    pub disk_setup: DiskSetup,
    /// files specifies extra files to be passed to user_data upon creation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 200), extend("x-kubernetes-list-type" = "atomic"))]
    pub files: Vec<File>,
    /// format specifies the output format of the bootstrap data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// ignition contains Ignition specific configuration.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ignition: IgnitionSpec,
    /// initConfiguration along with ClusterConfiguration are the configurations necessary for the
    /// init command
    #[serde(default, skip_serializing_if = "is_default")]
    pub init_configuration: InitConfiguration,
    /// joinConfiguration is the kubeadm configuration for the join command
    #[serde(default, skip_serializing_if = "is_default")]
    pub join_configuration: JoinConfiguration,
    /// mounts specifies a list of mount points to be setup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::mounts")]
    pub mounts: Vec<Vec<String>>,
    /// ntp specifies NTP configuration
    #[serde(default, skip_serializing_if = "is_default")]
    pub ntp: Ntp,
    /// postKubeadmCommands specifies extra commands to run after kubeadm runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 10240)), length(min = 1, max = 1000), extend("x-kubernetes-list-type" = "atomic"))]
    pub post_kubeadm_commands: Vec<String>,
    /// preKubeadmCommands specifies extra commands to run before kubeadm runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 10240)), length(min = 1, max = 1000), extend("x-kubernetes-list-type" = "atomic"))]
    pub pre_kubeadm_commands: Vec<String>,
    /// users specifies extra users to add
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub users: Vec<User>,
    /// verbosity is the number for the kubeadm log level verbosity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<i32>,
}

/// status is the observed state of KubeadmConfig.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmConfigStatus {
    /// conditions represents the observations of a KubeadmConfig's current state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions", length(max = 32), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// dataSecretName is the name of the secret that stores the bootstrap data script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub data_secret_name: Option<String>,
    /// deprecated groups all the status fields that are deprecated and will be removed when all the
    /// nested field are removed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: KubeadmConfigDeprecatedStatus,
    /// initialization provides observations of the KubeadmConfig initialization process.
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: KubeadmConfigInitializationStatus,
    /// observedGeneration is the latest generation observed by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub observed_generation: Option<i64>,
}

/// initialization provides observations of the KubeadmConfig initialization process.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmConfigInitializationStatus {
    /// dataSecretCreated is true when the Machine's boostrap secret is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_secret_created: Option<bool>,
}

/// deprecated groups all the status fields that are deprecated and will be removed when all the
/// nested field are removed.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmConfigDeprecatedStatus {
    /// v1beta1 groups all the status fields that are deprecated and will be removed when support
    /// for v1beta1 will be dropped.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: KubeadmConfigV1Beta1DeprecatedStatus,
}

/// v1beta1 groups all the status fields that are deprecated and will be removed when support for
/// v1beta1 will be dropped.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmConfigV1Beta1DeprecatedStatus {
    /// conditions defines current service state of the KubeadmConfig.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
    /// failureMessage will be set on non-retryable errors Deprecated: This field is deprecated and
    /// is going to be removed when support for v1beta1 will be dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10240))]
    pub failure_message: Option<String>,
    /// failureReason will be set on non-retryable errors Deprecated: This field is deprecated and
    /// is going to be removed when support for v1beta1 will be dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub failure_reason: Option<String>,
}

/// spec is the desired state of KubeadmConfigTemplate.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "bootstrap.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "KubeadmConfigTemplate",
    namespaced,
    doc = "KubeadmConfigTemplate is the Schema for the kubeadmconfigtemplates API.",
    category = "cluster-api",
    printcolumn(
        name = "ClusterClass",
        type_ = "string",
        json_path = r#".metadata.ownerReferences[?(@.kind=="ClusterClass")].name"#,
        description = "Name of the ClusterClass owning this template"
    ),
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r#".metadata.ownerReferences[?(@.kind=="Cluster")].name"#,
        description = "Name of the Cluster owning this template"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of KubeadmConfigTemplate"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct KubeadmConfigTemplateSpec {
    /// template defines the desired state of KubeadmConfigTemplate.
    pub template: KubeadmConfigTemplateResource,
}

/// template defines the desired state of KubeadmConfigTemplate.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeadmConfigTemplateResource {
    /// metadata is the standard object's metadata.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec is the desired state of KubeadmConfig.
    #[serde(default, skip_serializing_if = "is_default")]
    pub spec: KubeadmConfigSpec,
}
