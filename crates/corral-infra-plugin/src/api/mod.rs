//! The provider's API: `ProviderPlugin` (`corral.dev/v1alpha1`, cluster-scoped), which
//! registers a provider reached over `corral.provider.v1`, and the infrastructure kinds
//! `PluginCluster`, `PluginClusterTemplate`, `PluginMachine` and `PluginMachineTemplate`
//! (`infrastructure.corral.dev/v1alpha1`), which implement the upstream v1beta2
//! infrastructure contract for any such provider; their CRDs; the names the controllers use.

mod crd;
pub mod plugin_cluster;
pub mod plugin_machine;
pub mod provider_plugin;

pub use crd::crds;
pub use plugin_cluster::*;
pub use plugin_machine::*;
pub use provider_plugin::*;

use schemars::{Schema, SchemaGenerator, json_schema};

/// The API group of the Plugin* infrastructure kinds.
pub const GROUP: &str = "infrastructure.corral.dev";

/// The API group of ProviderPlugin.
pub const PLUGIN_GROUP: &str = "corral.dev";

/// The API version of every kind here.
pub const VERSION: &str = "v1alpha1";

/// The provider's name, for the CLI, clusterctl's inventory and templates.
pub const PROVIDER_NAME: &str = "plugin";

/// The value of the `cluster.x-k8s.io/provider` label on the provider's CRDs.
pub const PROVIDER_LABEL_VALUE: &str = "infrastructure-plugin";

/// Finalizers: held until the plugin has deleted what it holds.
pub mod finalizers {
    pub const PLUGIN_CLUSTER: &str = "plugincluster.infrastructure.corral.dev";
    pub const PLUGIN_MACHINE: &str = "pluginmachine.infrastructure.corral.dev";
    /// Held while PluginClusters or PluginMachines name the ProviderPlugin.
    pub const PROVIDER_PLUGIN: &str = "providerplugin.corral.dev";
}

/// Condition types and reasons.
pub mod conditions {
    /// ProviderPlugin: reachable and contract-compatible. PluginCluster: provisioned.
    /// PluginMachine: its machine is running.
    pub const READY: &str = "Ready";
    /// ProviderPlugin: ListMachines reported machines that no PluginMachine claims.
    pub const ORPHANS_FOUND: &str = "OrphansFound";

    pub mod reasons {
        pub const READY: &str = "Ready";
        pub const PROVISIONING: &str = "Provisioning";
        pub const DELETING: &str = "Deleting";
        /// The ProviderPlugin's endpoint is refused (scheme, plain off loopback, caBundle).
        pub const INVALID_ENDPOINT: &str = "InvalidEndpoint";
        /// GetInfo's `contractVersions` lacks `v1`.
        pub const INCOMPATIBLE_CONTRACT: &str = "IncompatibleContract";
        /// The plugin could not be reached or did not answer in time.
        pub const UNREACHABLE: &str = "Unreachable";
        /// The plugin answered something that is not the contract's message.
        pub const PROTOCOL_ERROR: &str = "ProtocolError";
        /// The plugin answered with an error.
        pub const PLUGIN_ERROR: &str = "PluginError";
        /// The plugin named by `spec.plugin` is missing, not probed yet, or not Ready.
        pub const PLUGIN_NOT_READY: &str = "PluginNotReady";
        /// The plugin said the machine FAILED.
        pub const MACHINE_FAILED: &str = "MachineFailed";
        /// The plugin does not know the machine any more.
        pub const MACHINE_NOT_FOUND: &str = "MachineNotFound";
        pub const WAITING_FOR_CLUSTER_INFRASTRUCTURE: &str = "WaitingForClusterInfrastructureReady";
        pub const WAITING_FOR_BOOTSTRAP_DATA: &str = "WaitingForBootstrapData";
        /// PluginMachine: its `spec.config` does not match the plugin's published schema.
        pub const INVALID_CONFIG: &str = "InvalidConfig";
        /// OrphansFound is True: machines no PluginMachine claims.
        pub const ORPHANS_FOUND: &str = "OrphansFound";
        /// OrphansFound is False: every machine is claimed.
        pub const NO_ORPHANS: &str = "NoOrphans";
    }
}

/// A free-form object: the schema of `spec.config` (checked against the plugin's own schema
/// at admission, `crate::admission`) and of the schemas a plugin publishes.
pub(crate) fn free_form_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}
