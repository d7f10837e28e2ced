//! DevCluster and DevClusterTemplate (upstream
//! `test/infrastructure/docker/api/v1beta2/devcluster_types.go`,
//! `devclustertemplate_types.go`).

use corral_api::{ApiEndpoint, FailureDomain, TemplateMetadata, V1Beta1Condition};
use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema::{self, is_default};

/// The desired state of a DevCluster: the infrastructure of one workload cluster.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "DevCluster",
    namespaced,
    status = "DevClusterStatus",
    doc = "DevCluster is the schema for the dev cluster infrastructure API.",
    category = "cluster-api",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels['cluster\.x-k8s\.io/cluster-name']",
        description = "Cluster"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of the DevCluster"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DevClusterSpec {
    /// controlPlaneEndpoint is where the workload cluster's API server is reached. The in-memory
    /// backend sets it to its simulated endpoint when it is empty.
    #[serde(default, skip_serializing_if = "is_default")]
    pub control_plane_endpoint: ApiEndpoint,
    /// backend defines the backend of the DevCluster; Corral implements `inMemory` only.
    pub backend: DevClusterBackendSpec,
}

/// The backends of a DevCluster: exactly one is set.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = schema::refuse_docker_backend)]
pub struct DevClusterBackendSpec {
    /// docker defines a backend using docker containers. Upstream's shape, accepted by the
    /// schema but refused: Corral does not run docker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker: Option<DockerClusterBackendSpec>,
    /// inMemory defines a backend that simulates the cluster in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_memory: Option<InMemoryClusterBackendSpec>,
}

/// Upstream's docker backend of a DevCluster, kept so that its manifests are understood (and
/// refused with a clear message).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DockerClusterBackendSpec {
    /// failureDomains to copy into the status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 100),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub failure_domains: Vec<FailureDomain>,
    /// loadBalancer configures the cluster's load balancer container.
    #[serde(default, skip_serializing_if = "is_default")]
    pub load_balancer: DockerLoadBalancer,
}

/// Upstream's load balancer settings of the docker backend.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DockerLoadBalancer {
    /// imageRepository of the haproxy image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_repository: Option<String>,
    /// imageTag of the haproxy image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// customHAProxyConfigTemplateRef names a ConfigMap with a replacement HAProxy
    /// configuration template.
    #[serde(
        default,
        rename = "customHAProxyConfigTemplateRef",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "schema::local_object_reference")]
    pub custom_ha_proxy_config_template_ref: Option<LocalObjectReference>,
}

/// The in-memory backend of a DevCluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InMemoryClusterBackendSpec {
    /// failureDomains the simulated infrastructure offers, copied into the status for core to
    /// spread Machines over. A Corral extension: upstream's in-memory backend has no failure
    /// domains (its docker backend has this field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 100),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub failure_domains: Vec<FailureDomain>,
}

/// The observed state of a DevCluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DevClusterStatus {
    /// conditions of the DevCluster: Ready and Paused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::conditions")]
    pub conditions: Vec<Condition>,
    /// initialization records the provisioning of the cluster's infrastructure (contract).
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: DevClusterInitializationStatus,
    /// failureDomains of the cluster's infrastructure (contract).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(min = 1, max = 100),
        extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"])
    )]
    pub failure_domains: Vec<FailureDomain>,
    /// deprecated holds status fields kept for older API versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub deprecated: DeprecatedStatus,
}

/// What the provider has done to bring the cluster's infrastructure up.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct DevClusterInitializationStatus {
    /// provisioned is true once the cluster's infrastructure is provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<bool>,
}

/// Deprecated status fields of the Dev* kinds.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeprecatedStatus {
    /// v1beta1 holds the v1beta1 status fields, until upstream stops serving v1beta1.
    #[serde(default, skip_serializing_if = "is_default")]
    pub v1beta1: V1Beta1DeprecatedStatus,
}

/// Status fields from v1beta1.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct V1Beta1DeprecatedStatus {
    /// conditions in the v1beta1 format.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<V1Beta1Condition>,
}

/// The desired state of a DevClusterTemplate.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta2",
    kind = "DevClusterTemplate",
    namespaced,
    doc = "DevClusterTemplate is the schema for the dev cluster template API.",
    category = "cluster-api",
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of the DevClusterTemplate"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct DevClusterTemplateSpec {
    /// template of the DevClusters made from this template.
    pub template: DevClusterTemplateResource,
}

/// A DevCluster as a template holds it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DevClusterTemplateResource {
    /// metadata of the DevClusters made from the template.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec of the DevClusters made from the template.
    pub spec: DevClusterSpec,
}
