//! ProviderPlugin: a provider reached over `corral.provider.v1`, and what it said of itself.

use corral_api::schema::conditions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How to reach a provider.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats the same keys"
)]
#[kube(
    group = "corral.dev",
    version = "v1alpha1",
    kind = "ProviderPlugin",
    status = "ProviderPluginStatus",
    doc = "ProviderPlugin registers an infrastructure provider that Corral calls over the corral.provider.v1 protocol (gRPC or HTTP/JSON).",
    category = "cluster-api",
    printcolumn(
        name = "Endpoint",
        type_ = "string",
        json_path = ".spec.endpoint",
        description = "Where the provider is reached"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.info.version",
        description = "The provider's version"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#,
        description = "Reachable and contract-compatible"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "Time duration since creation of the ProviderPlugin"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderPluginSpec {
    /// endpoint of the provider: `grpc://host:port`, `grpcs://host:port`, `http://host:port`
    /// or `https://host:port[/prefix]`; the scheme chooses the transport.
    #[schemars(
        regex(pattern = r"^(grpc|grpcs|http|https)://[^/\s]+(/\S*)?$"),
        length(max = 2048)
    )]
    pub endpoint: String,
    /// caBundle is base64-encoded PEM of the certificates to trust for `grpcs` and `https`;
    /// empty: the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
    /// timeoutSeconds is the deadline of each call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 600))]
    pub timeout_seconds: Option<i32>,
    /// insecure allows plain `grpc://` and `http://` to a host that is not loopback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    /// admission says how the objects naming this plugin are admitted while the plugin cannot
    /// be asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<PluginAdmission>,
    /// orphanPolicy: what is done with machines the plugin holds (ListMachines) that no
    /// PluginMachine claims: `Report` (the default) lists them in status.orphans, with the
    /// condition OrphansFound and an Event; `Delete` also deletes them once they have been
    /// unclaimed for orphanGracePeriodSeconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphan_policy: Option<OrphanPolicy>,
    /// orphanGracePeriodSeconds is how long a machine stays unclaimed before orphanPolicy
    /// Delete deletes it (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub orphan_grace_period_seconds: Option<i32>,
}

/// How objects naming a plugin are admitted.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PluginAdmission {
    /// failurePolicy: what admission does with a PluginCluster, PluginMachine or template
    /// naming this plugin when the plugin cannot be asked (not reachable, no answer in time,
    /// not Ready): `Fail` (the default) refuses it with a message naming the plugin;
    /// `Ignore` admits it once its `spec.config` passes the last schema the plugin published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,
}

/// What admission does when a plugin cannot be asked.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    #[default]
    Fail,
    Ignore,
}

/// What is done with a plugin's orphaned machines.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OrphanPolicy {
    #[default]
    Report,
    Delete,
}

/// The default of `spec.orphanGracePeriodSeconds`.
pub const DEFAULT_ORPHAN_GRACE_PERIOD_SECONDS: i32 = 300;

/// A machine the plugin holds that no PluginMachine claims.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OrphanMachine {
    /// providerId the plugin reports for it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider_id: String,
    /// machineUid it was created for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub machine_uid: String,
    /// clusterName it was created for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster_name: String,
    /// firstSeen is when it was first found unclaimed.
    #[schemars(schema_with = "corral_api::schema::time")]
    pub first_seen: Time,
}

/// What the provider said of itself, and whether Corral can call it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderPluginStatus {
    /// conditions: Ready (reachable and speaking contract v1; else the last error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Vec<Condition>,
    /// info is the last GetInfo answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<PluginInfo>,
    /// transport the endpoint's scheme chose: grpc, grpcs, http or https.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// observedTime is when GetInfo was last called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "corral_api::schema::time")]
    pub observed_time: Option<Time>,
    /// observedGeneration is the generation of the spec observedTime's call used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// orphans: the machines ListMachines reported that no PluginMachine claims (by
    /// providerID or Machine uid), at the last probe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphans: Vec<OrphanMachine>,
}

/// A GetInfo answer.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PluginInfo {
    /// name the provider gives itself.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// version of the provider.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// contractVersions the provider speaks; Corral calls it only with `v1` among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contract_versions: Vec<String>,
    /// capabilities: the optional methods it implements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// clusterConfigSchema is the schema of a PluginCluster's `spec.config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::free_form_object")]
    pub cluster_config_schema: Option<serde_json::Value>,
    /// machineConfigSchema is the schema of a PluginMachine's `spec.config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::free_form_object")]
    pub machine_config_schema: Option<serde_json::Value>,
}

impl ProviderPlugin {
    /// `spec.admission.failurePolicy`, defaulted.
    pub fn failure_policy(&self) -> FailurePolicy {
        self.spec
            .admission
            .as_ref()
            .and_then(|admission| admission.failure_policy)
            .unwrap_or_default()
    }

    /// Whether the last GetInfo said the plugin speaks the contract, and it is Ready.
    pub fn is_ready(&self) -> bool {
        self.status.as_ref().is_some_and(|status| {
            status.conditions.iter().any(|condition| {
                condition.type_ == super::conditions::READY && condition.status == "True"
            })
        })
    }
}
