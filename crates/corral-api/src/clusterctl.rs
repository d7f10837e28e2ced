//! clusterctl's provider inventory: the `clusterctl.cluster.x-k8s.io/v1alpha3` `Provider` kind
//! (upstream `cmd/clusterctl/api/v1alpha3/provider_type.go`).
//!
//! `clusterctl init` records every provider it installs as one `Provider` object in the
//! provider's namespace; `clusterctl move` and `upgrade` read them to learn what a management
//! cluster runs. `corral init` writes the same objects, so tools that read upstream's inventory
//! read Corral's.
//!
//! Unlike the `cluster.x-k8s.io` kinds, a `Provider` keeps its fields at the root of the object
//! (no `spec`), so the type implements the resource traits itself instead of deriving a custom
//! resource, and its CRD is written out in upstream's shape.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The API group of the inventory.
pub const GROUP: &str = "clusterctl.cluster.x-k8s.io";

/// The API version of the inventory.
pub const VERSION: &str = "v1alpha3";

/// `apiVersion` of the inventory's objects.
pub const API_VERSION: &str = "clusterctl.cluster.x-k8s.io/v1alpha3";

/// What a provider is (upstream `ProviderType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProviderType {
    CoreProvider,
    BootstrapProvider,
    InfrastructureProvider,
    ControlPlaneProvider,
    #[serde(rename = "IPAMProvider")]
    IpamProvider,
    RuntimeExtensionProvider,
    AddonProvider,
}

impl ProviderType {
    /// The prefix of the provider's label value and inventory name (upstream
    /// `ProviderType.Prefix`): `<prefix>-<name>`, except core, whose label is its name alone.
    pub fn prefix(self) -> &'static str {
        match self {
            ProviderType::CoreProvider => "",
            ProviderType::BootstrapProvider => "bootstrap",
            ProviderType::InfrastructureProvider => "infrastructure",
            ProviderType::ControlPlaneProvider => "control-plane",
            ProviderType::IpamProvider => "ipam",
            ProviderType::RuntimeExtensionProvider => "runtime-extension",
            ProviderType::AddonProvider => "addon",
        }
    }

    /// The `cluster.x-k8s.io/provider` label value and the inventory object's name for a
    /// provider of this type called `name` (upstream `ManifestLabel`): `cluster-api` for core,
    /// `infrastructure-in-memory` for the in-memory infrastructure provider.
    pub fn manifest_label(self, name: &str) -> String {
        match self {
            ProviderType::CoreProvider => name.to_string(),
            _ => format!("{}-{name}", self.prefix()),
        }
    }
}

/// One entry of the provider inventory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provider {
    pub metadata: ObjectMeta,
    /// The name of the provider, such as `cluster-api`, `kubeadm` or `in-memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_name: Option<String>,
    /// The type of the provider; see [`ProviderType`].
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<ProviderType>,
    /// The version of the provider's components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Deprecated upstream: providers of the v1alpha4 contract and later watch every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watched_namespace: Option<String>,
}

impl k8s_openapi::Resource for Provider {
    const API_VERSION: &'static str = API_VERSION;
    const GROUP: &'static str = GROUP;
    const KIND: &'static str = "Provider";
    const VERSION: &'static str = VERSION;
    const URL_PATH_SEGMENT: &'static str = "providers";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for Provider {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The `providers.clusterctl.cluster.x-k8s.io` CRD, as upstream serves it (upstream
/// `config/crd/bases/clusterctl.cluster.x-k8s.io_providers.yaml` in `cmd/clusterctl`).
pub fn provider_crd() -> CustomResourceDefinition {
    let string = |description: &str| json!({"description": description, "type": "string"});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "providers.clusterctl.cluster.x-k8s.io"},
        "spec": {
            "group": GROUP,
            "names": {
                "categories": ["cluster-api"],
                "kind": "Provider",
                "listKind": "ProviderList",
                "plural": "providers",
                "singular": "provider",
            },
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "subresources": {},
                "additionalPrinterColumns": [
                    {"description": "Time duration since creation of Provider", "jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
                    {"jsonPath": ".type", "name": "Type", "type": "string"},
                    {"jsonPath": ".providerName", "name": "Provider", "type": "string"},
                    {"jsonPath": ".version", "name": "Version", "type": "string"},
                ],
                "schema": {"openAPIV3Schema": {
                    "description": "Provider defines an entry in the provider inventory.",
                    "type": "object",
                    "properties": {
                        "apiVersion": string("APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values."),
                        "kind": string("Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase."),
                        "metadata": {"type": "object"},
                        "providerName": string("providerName indicates the name of the provider."),
                        "type": string("type indicates the type of the provider. See ProviderType for a list of supported values"),
                        "version": string("version indicates the component version."),
                        "watchedNamespace": string("watchedNamespace indicates the namespace where the provider controller is watching. If empty the provider controller is watching for objects in all namespaces. Deprecated: providers complying with the Cluster API v1alpha4 contract or above must watch all namespaces; this field will be removed in a future version of this API"),
                    },
                }},
            }],
        },
    });
    serde_json::from_value(crd).expect("the Provider CRD is a CRD")
}
