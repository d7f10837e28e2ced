//! PluginCluster and PluginClusterTemplate: a cluster's infrastructure held by a plugin
//! (the v1beta2 InfraCluster contract).

use corral_api::schema::{conditions, is_default};
use corral_api::{ApiEndpoint, FailureDomain, TemplateMetadata};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a PluginCluster.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "infrastructure.corral.dev",
    version = "v1alpha1",
    kind = "PluginCluster",
    namespaced,
    status = "PluginClusterStatus",
    doc = "PluginCluster is a cluster's infrastructure held by a provider plugin.",
    category = "cluster-api",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels['cluster\.x-k8s\.io/cluster-name']",
        description = "Cluster"
    ),
    printcolumn(
        name = "Plugin",
        type_ = "string",
        json_path = ".spec.plugin",
        description = "The ProviderPlugin"
    ),
    printcolumn(
        name = "Provisioned",
        type_ = "string",
        json_path = ".status.initialization.provisioned",
        description = "The cluster's infrastructure is provisioned"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of the PluginCluster"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PluginClusterSpec {
    /// plugin is the name of the ProviderPlugin that holds the cluster's infrastructure.
    #[schemars(length(min = 1, max = 253))]
    pub plugin: String,
    /// config is passed to the plugin as is; its schema is the plugin's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::free_form_object")]
    pub config: Option<serde_json::Value>,
    /// controlPlaneEndpoint is where the workload cluster's API server is reached; set from
    /// the plugin's answer when empty (contract).
    #[serde(default, skip_serializing_if = "is_default")]
    pub control_plane_endpoint: ApiEndpoint,
}

/// The observed state of a PluginCluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PluginClusterStatus {
    /// conditions: Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Vec<Condition>,
    /// initialization records the provisioning of the cluster's infrastructure (contract).
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: Initialization,
    /// failureDomains of the cluster's infrastructure (contract).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 100),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub failure_domains: Vec<FailureDomain>,
}

/// What the provider has done to bring the infrastructure up (contract).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct Initialization {
    /// provisioned is true once the infrastructure is provisioned; it never goes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<bool>,
}

/// The desired state of a PluginClusterTemplate.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "infrastructure.corral.dev",
    version = "v1alpha1",
    kind = "PluginClusterTemplate",
    namespaced,
    doc = "PluginClusterTemplate is a template of PluginClusters.",
    category = "cluster-api"
)]
#[serde(rename_all = "camelCase")]
pub struct PluginClusterTemplateSpec {
    /// template of the PluginClusters made from this template.
    pub template: PluginClusterTemplateResource,
}

/// A PluginCluster as a template holds it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PluginClusterTemplateResource {
    /// metadata of the PluginClusters made from the template.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec of the PluginClusters made from the template.
    pub spec: PluginClusterSpec,
}
