//! PluginMachine and PluginMachineTemplate: one Machine's infrastructure held by a plugin
//! (the v1beta2 InfraMachine contract).

use corral_api::schema::{conditions, is_default};
use corral_api::{MachineAddress, TemplateMetadata};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::plugin_cluster::Initialization;

/// The desired state of a PluginMachine.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "infrastructure.corral.dev",
    version = "v1alpha1",
    kind = "PluginMachine",
    namespaced,
    status = "PluginMachineStatus",
    doc = "PluginMachine is one Machine's infrastructure held by a provider plugin.",
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
        name = "State",
        type_ = "string",
        json_path = ".status.state",
        description = "The machine's state at the plugin"
    ),
    printcolumn(
        name = "Provider ID",
        type_ = "string",
        json_path = ".spec.providerID",
        description = "Provider ID",
        priority = 10
    ),
    printcolumn(
        name = "Provisioned",
        type_ = "string",
        json_path = ".status.initialization.provisioned",
        description = "The machine's infrastructure is provisioned"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of the PluginMachine"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PluginMachineSpec {
    /// plugin is the name of the ProviderPlugin that holds the machine.
    #[schemars(length(min = 1, max = 253))]
    pub plugin: String,
    /// config is passed to the plugin as is; its schema is the plugin's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::free_form_object")]
    pub config: Option<serde_json::Value>,
    /// providerID is the plugin's id of the machine, set from its first answer (contract).
    #[serde(
        default,
        rename = "providerID",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(min = 1, max = 512))]
    pub provider_id: Option<String>,
}

/// The observed state of a PluginMachine.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PluginMachineStatus {
    /// conditions: Ready (the machine runs; else what it waits for or the plugin's failure).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Vec<Condition>,
    /// initialization records the provisioning of the machine (contract).
    #[serde(default, skip_serializing_if = "is_default")]
    pub initialization: Initialization,
    /// addresses of the machine, as the plugin reports them (contract).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<MachineAddress>,
    /// failureDomain the machine runs in (contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub failure_domain: Option<String>,
    /// state of the machine at the plugin: PENDING, RUNNING or FAILED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// failureReason is set when the plugin says the machine FAILED; core copies it to the
    /// Machine, whose phase turns Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// failureMessage is the plugin's message of a FAILED machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

/// The desired state of a PluginMachineTemplate.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "infrastructure.corral.dev",
    version = "v1alpha1",
    kind = "PluginMachineTemplate",
    namespaced,
    doc = "PluginMachineTemplate is a template of PluginMachines.",
    category = "cluster-api"
)]
#[serde(rename_all = "camelCase")]
pub struct PluginMachineTemplateSpec {
    /// template of the PluginMachines made from this template.
    pub template: PluginMachineTemplateResource,
}

/// A PluginMachine as a template holds it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PluginMachineTemplateResource {
    /// metadata of the PluginMachines made from the template.
    #[serde(default, skip_serializing_if = "is_default")]
    pub metadata: TemplateMetadata,
    /// spec of the PluginMachines made from the template.
    pub spec: PluginMachineSpec,
}
