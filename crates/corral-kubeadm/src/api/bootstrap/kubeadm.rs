//! The kubeadm configurations a KubeadmConfig carries: ClusterConfiguration,
//! InitConfiguration and JoinConfiguration, in upstream's v1beta2 shapes, which follow kubeadm's
//! v1beta4 (extra arguments as lists of name/value pairs, timeouts in seconds). Fields a Cluster
//! or a KubeadmControlPlane already says (networking, Kubernetes version, cluster name) are not
//! here; the bootstrap provider fills them in when it renders kubeadm's YAML.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::schema::{self, is_default};

/// joinConfiguration is the kubeadm configuration for the join command
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct JoinConfiguration {
    /// caCertPath is the path to the SSL certificate authority used to secure communications
    /// between node and control-plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub ca_cert_path: Option<String>,
    /// controlPlane defines the additional control plane instance to be deployed on the joining
    /// node. Set, even empty, it makes the join a control plane join, so `{}` is kept apart from
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<JoinControlPlane>,
    /// discovery specifies the options for the kubelet to use during the TLS Bootstrap process
    #[serde(default, skip_serializing_if = "is_default")]
    pub discovery: Discovery,
    /// nodeRegistration holds fields that relate to registering the new control-plane node to the
    /// cluster.
    #[serde(default, skip_serializing_if = "is_default")]
    pub node_registration: NodeRegistrationOptions,
    /// patches contains options related to applying patches to components deployed by kubeadm
    /// during "kubeadm join".
    #[serde(default, skip_serializing_if = "is_default")]
    pub patches: Patches,
    /// skipPhases is a list of phases to skip during command execution.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 256)), length(min = 1, max = 50), extend("x-kubernetes-list-type" = "atomic"))]
    pub skip_phases: Vec<String>,
    /// timeouts holds various timeouts that apply to kubeadm commands.
    #[serde(default, skip_serializing_if = "is_default")]
    pub timeouts: Timeouts,
}

/// discovery specifies the options for the kubelet to use during the TLS Bootstrap process
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct Discovery {
    /// bootstrapToken is used to set the options for bootstrap token based discovery BootstrapToken
    /// and File are mutually exclusive
    #[serde(default, skip_serializing_if = "is_default")]
    pub bootstrap_token: BootstrapTokenDiscovery,
    /// file is used to specify a file or URL to a kubeconfig file from which to load cluster
    /// information BootstrapToken and File are mutually exclusive
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileDiscovery>,
    /// tlsBootstrapToken is a token used for TLS bootstrapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub tls_bootstrap_token: Option<String>,
}

/// file is used to specify a file or URL to a kubeconfig file from which to load cluster
/// information BootstrapToken and File are mutually exclusive
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FileDiscovery {
    /// kubeConfig is used (optionally) to generate a KubeConfig based on the KubeadmConfig's
    /// information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfig>,
    /// kubeConfigPath is used to specify the actual file path or URL to the kubeconfig file from
    /// which to load cluster information
    #[schemars(length(min = 1, max = 512))]
    pub kube_config_path: String,
}

/// kubeConfig is used (optionally) to generate a KubeConfig based on the KubeadmConfig's
/// information.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// cluster contains information about how to communicate with the kubernetes cluster.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cluster: KubeConfigCluster,
    /// user contains information that describes identity information.
    pub user: KubeConfigUser,
}

/// user contains information that describes identity information.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeConfigUser {
    /// authProvider specifies a custom authentication plugin for the kubernetes cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_provider: Option<KubeConfigAuthProvider>,
    /// exec specifies a custom exec-based authentication plugin for the kubernetes cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<KubeConfigAuthExec>,
}

/// exec specifies a custom exec-based authentication plugin for the kubernetes cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigAuthExec {
    /// apiVersion is preferred input version of the ExecInfo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub api_version: Option<String>,
    /// args is the arguments to pass to the command when executing it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 512)), length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub args: Vec<String>,
    /// command to execute.
    #[schemars(length(min = 1, max = 1024))]
    pub command: String,
    /// env defines additional environment variables to expose to the process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub env: Vec<KubeConfigAuthExecEnv>,
    /// provideClusterInfo determines whether or not to provide cluster information, which could
    /// potentially contain very large CA data, to this exec plugin as a part of the
    /// KUBERNETES_EXEC_INFO environment variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provide_cluster_info: Option<bool>,
}

/// KubeConfigAuthExecEnv is used for setting environment variables when executing an exec-based
/// credential plugin.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigAuthExecEnv {
    /// name of the environment variable
    #[schemars(length(min = 1, max = 512))]
    pub name: String,
    /// value of the environment variable
    #[schemars(length(min = 1, max = 512))]
    pub value: String,
}

/// authProvider specifies a custom authentication plugin for the kubernetes cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfigAuthProvider {
    /// config holds the parameters for the authentication plugin.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
    /// name is the name of the authentication plugin.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
}

/// cluster contains information about how to communicate with the kubernetes cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct KubeConfigCluster {
    /// certificateAuthorityData contains PEM-encoded certificate authority certificates,
    /// base64-encoded (a Go `[]byte`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 51200), extend("format" = "byte"))]
    pub certificate_authority_data: Option<String>,
    /// insecureSkipTLSVerify skips the validity check for the server's certificate.
    #[serde(
        default,
        rename = "insecureSkipTLSVerify",
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verify: Option<bool>,
    /// proxyURL is the URL to the proxy to be used for all requests made by this client.
    #[serde(default, rename = "proxyURL", skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub proxy_url: Option<String>,
    /// server is the address of the kubernetes cluster (https://hostname:port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub server: Option<String>,
    /// tlsServerName is used to check server certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub tls_server_name: Option<String>,
}

/// bootstrapToken is used to set the options for bootstrap token based discovery BootstrapToken and
/// File are mutually exclusive
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct BootstrapTokenDiscovery {
    /// apiServerEndpoint is an IP or domain name to the API server from which info will be fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub api_server_endpoint: Option<String>,
    /// caCertHashes specifies a set of public key pins to verify when token-based discovery is
    /// used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 512)), length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub ca_cert_hashes: Vec<String>,
    /// token is a token used to validate cluster information fetched from the control-plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub token: Option<String>,
    /// unsafeSkipCAVerification allows token-based discovery without CA verification via
    /// CACertHashes.
    #[serde(
        default,
        rename = "unsafeSkipCAVerification",
        skip_serializing_if = "Option::is_none"
    )]
    pub unsafe_skip_ca_verification: Option<bool>,
}

/// controlPlane defines the additional control plane instance to be deployed on the joining node.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct JoinControlPlane {
    /// localAPIEndpoint represents the endpoint of the API server instance to be deployed on this
    /// node.
    #[serde(
        default,
        rename = "localAPIEndpoint",
        skip_serializing_if = "is_default"
    )]
    pub local_api_endpoint: ApiEndpoint,
}

/// initConfiguration along with ClusterConfiguration are the configurations necessary for the init
/// command
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct InitConfiguration {
    /// bootstrapTokens is respected at `kubeadm init` time and describes a set of Bootstrap Tokens
    /// to create.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub bootstrap_tokens: Vec<BootstrapToken>,
    /// localAPIEndpoint represents the endpoint of the API server instance that's deployed on this
    /// control plane node In HA setups, this differs from ClusterConfiguration.ControlPlaneEndpoint
    /// in the sense that ControlPlaneEndpoint is the global endpoint for the cluster, which then
    /// loadbalances the requests to each individual API server.
    #[serde(
        default,
        rename = "localAPIEndpoint",
        skip_serializing_if = "is_default"
    )]
    pub local_api_endpoint: ApiEndpoint,
    /// nodeRegistration holds fields that relate to registering the new control-plane node to the
    /// cluster.
    #[serde(default, skip_serializing_if = "is_default")]
    pub node_registration: NodeRegistrationOptions,
    /// patches contains options related to applying patches to components deployed by kubeadm
    /// during "kubeadm init".
    #[serde(default, skip_serializing_if = "is_default")]
    pub patches: Patches,
    /// skipPhases is a list of phases to skip during command execution.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 256)), length(min = 1, max = 50), extend("x-kubernetes-list-type" = "atomic"))]
    pub skip_phases: Vec<String>,
    /// timeouts holds various timeouts that apply to kubeadm commands.
    #[serde(default, skip_serializing_if = "is_default")]
    pub timeouts: Timeouts,
}

/// timeouts holds various timeouts that apply to kubeadm commands.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct Timeouts {
    /// controlPlaneComponentHealthCheckSeconds is the amount of time to wait for a control plane
    /// component, such as the API server, to be healthy during "kubeadm init" and "kubeadm join".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub control_plane_component_health_check_seconds: Option<i32>,
    /// discoverySeconds is the amount of time to wait for kubeadm to validate the API server
    /// identity for a joining node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub discovery_seconds: Option<i32>,
    /// etcdAPICallSeconds is the amount of time to wait for the kubeadm etcd client to complete a
    /// request to the etcd cluster.
    #[serde(
        default,
        rename = "etcdAPICallSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub etcd_api_call_seconds: Option<i32>,
    /// kubeletHealthCheckSeconds is the amount of time to wait for the kubelet to be healthy during
    /// "kubeadm init" and "kubeadm join".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub kubelet_health_check_seconds: Option<i32>,
    /// kubernetesAPICallSeconds is the amount of time to wait for the kubeadm client to complete a
    /// request to the API server.
    #[serde(
        default,
        rename = "kubernetesAPICallSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 0))]
    pub kubernetes_api_call_seconds: Option<i32>,
    /// tlsBootstrapSeconds is the amount of time to wait for the kubelet to complete TLS bootstrap
    /// for a joining node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tls_bootstrap_seconds: Option<i32>,
}

/// patches contains options related to applying patches to components deployed by kubeadm during
/// "kubeadm init".
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct Patches {
    /// directory is a path to a directory that contains files named
    /// "target[suffix][+patchtype].extension".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub directory: Option<String>,
}

/// nodeRegistration holds fields that relate to registering the new control-plane node to the
/// cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct NodeRegistrationOptions {
    /// criSocket is used to retrieve container runtime info.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub cri_socket: Option<String>,
    /// ignorePreflightErrors provides a slice of pre-flight errors to be ignored when the current
    /// node is registered, e.g. 'IsPrivilegedUser,Swap'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 512)), length(min = 1, max = 50), extend("x-kubernetes-list-type" = "atomic"))]
    pub ignore_preflight_errors: Vec<String>,
    /// imagePullPolicy specifies the policy for image pulling during kubeadm "init" and "join"
    /// operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,
    /// imagePullSerial specifies if image pulling performed by kubeadm must be done serially or in
    /// parallel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_serial: Option<bool>,
    /// kubeletExtraArgs is a list of args to pass to kubelet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name", "value"], "x-kubernetes-validations" = [{"message": "kubeletExtraArgs name must be unique", "rule": "self.all(x, self.exists_one(y, x.name == y.name))"}]))]
    pub kubelet_extra_args: Vec<Arg>,
    /// name is the `.Metadata.Name` field of the Node API object that will be created in this
    /// `kubeadm init` or `kubeadm join` operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub name: Option<String>,
    /// taints specifies the taints the Node API object should be registered with. Unset means
    /// kubeadm's default (the control-plane taint on control plane nodes); an empty list means
    /// no taints, so the two are kept apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 0, max = 100))]
    pub taints: Option<Vec<Taint>>,
}

/// The node this Taint is attached to has the "effect" on any pod that does not tolerate the Taint.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// Required.
    pub effect: String,
    /// Required.
    pub key: String,
    /// TimeAdded represents the time at which the taint was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub time_added: Option<Time>,
    /// The taint value corresponding to the taint key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// imagePullPolicy specifies the policy for image pulling during kubeadm "init" and "join"
/// operations.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum PullPolicy {
    /// `Always`.
    Always,
    /// `IfNotPresent`.
    IfNotPresent,
    /// `Never`.
    Never,
}

/// localAPIEndpoint represents the endpoint of the API server instance that's deployed on this
/// control plane node In HA setups, this differs from ClusterConfiguration.ControlPlaneEndpoint in
/// the sense that ControlPlaneEndpoint is the global endpoint for the cluster, which then
/// loadbalances the requests to each individual API server.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ApiEndpoint {
    /// advertiseAddress sets the IP address for the API server to advertise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 39))]
    pub advertise_address: Option<String>,
    /// bindPort sets the secure port for the API Server to bind to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub bind_port: Option<i32>,
}

/// BootstrapToken describes one bootstrap token, stored as a Secret in the cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapToken {
    /// description sets a human-friendly message why this token exists and what it's used for, so
    /// other administrators can know its purpose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub description: Option<String>,
    /// expires specifies the timestamp when this token expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::time")]
    pub expires: Option<Time>,
    /// groups specifies the extra groups that this token will authenticate as when/if used for
    /// authentication
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 256)), length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub groups: Vec<String>,
    /// token is used for establishing bidirectional trust between nodes and control-planes.
    #[schemars(length(min = 1, max = 23))]
    pub token: String,
    /// ttlSeconds defines the time to live for this token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds: Option<i32>,
    /// usages describes the ways in which this token can be used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 256)), length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub usages: Vec<String>,
}

/// clusterConfiguration along with InitConfiguration are the configurations necessary for the init
/// command
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ClusterConfiguration {
    /// apiServer contains extra settings for the API server control plane component
    #[serde(default, skip_serializing_if = "is_default")]
    pub api_server: ApiServer,
    /// caCertificateValidityPeriodDays specifies the validity period for CA certificates generated
    /// by Cluster API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 36500))]
    pub ca_certificate_validity_period_days: Option<i32>,
    /// certificateValidityPeriodDays specifies the validity period for non-CA certificates
    /// generated by kubeadm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1095))]
    pub certificate_validity_period_days: Option<i32>,
    /// certificatesDir specifies where to store or look for all required certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub certificates_dir: Option<String>,
    /// controlPlaneEndpoint sets a stable IP address or DNS name for the control plane; it can be a
    /// valid IP address or a RFC-1123 DNS subdomain, both with optional TCP port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub control_plane_endpoint: Option<String>,
    /// controllerManager contains extra settings for the controller manager control plane component
    #[serde(default, skip_serializing_if = "is_default")]
    pub controller_manager: ControlPlaneComponent,
    /// dns defines the options for the DNS add-on installed in the cluster.
    #[serde(default, skip_serializing_if = "is_default")]
    pub dns: Dns,
    /// encryptionAlgorithm holds the type of asymmetric encryption algorithm used for keys and
    /// certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_algorithm: Option<EncryptionAlgorithmType>,
    /// etcd holds configuration for etcd.
    #[serde(default, skip_serializing_if = "is_default")]
    pub etcd: Etcd,
    /// featureGates enabled by the user.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// imageRepository sets the container registry to pull images from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub image_repository: Option<String>,
    /// scheduler contains extra settings for the scheduler control plane component
    #[serde(default, skip_serializing_if = "is_default")]
    pub scheduler: ControlPlaneComponent,
}

/// etcd holds configuration for etcd.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct Etcd {
    /// external describes how to connect to an external etcd cluster Local and External are
    /// mutually exclusive
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalEtcd>,
    /// local provides configuration knobs for configuring the local etcd instance Local and
    /// External are mutually exclusive
    #[serde(default, skip_serializing_if = "is_default")]
    pub local: LocalEtcd,
}

/// local provides configuration knobs for configuring the local etcd instance Local and External
/// are mutually exclusive
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct LocalEtcd {
    /// dataDir is the directory etcd will place its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub data_dir: Option<String>,
    /// extraArgs is a list of args to pass to etcd.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name", "value"], "x-kubernetes-validations" = [{"message": "extraArgs name must be unique", "rule": "self.all(x, self.exists_one(y, x.name == y.name))"}]))]
    pub extra_args: Vec<Arg>,
    /// extraEnvs is an extra set of environment variables to pass to etcd.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub extra_envs: Vec<EnvVar>,
    /// imageRepository sets the container registry to pull images from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub image_repository: Option<String>,
    /// imageTag allows to specify a tag for the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub image_tag: Option<String>,
    /// peerCertSANs sets extra Subject Alternative Names for the etcd peer signing cert.
    #[serde(
        default,
        rename = "peerCertSANs",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(inner(length(min = 1, max = 253)), length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub peer_cert_sa_ns: Vec<String>,
    /// serverCertSANs sets extra Subject Alternative Names for the etcd server signing cert.
    #[serde(
        default,
        rename = "serverCertSANs",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(inner(length(min = 1, max = 253)), length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub server_cert_sa_ns: Vec<String>,
}

/// external describes how to connect to an external etcd cluster Local and External are mutually
/// exclusive
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ExternalEtcd {
    /// caFile is an SSL Certificate Authority file used to secure etcd communication.
    #[schemars(length(min = 1, max = 512))]
    pub ca_file: String,
    /// certFile is an SSL certification file used to secure etcd communication.
    #[schemars(length(min = 1, max = 512))]
    pub cert_file: String,
    /// endpoints of etcd members.
    #[schemars(inner(length(min = 1, max = 512)), length(min = 1, max = 50), extend("x-kubernetes-list-type" = "atomic"))]
    pub endpoints: Vec<String>,
    /// keyFile is an SSL key file used to secure etcd communication.
    #[schemars(length(min = 1, max = 512))]
    pub key_file: String,
}

/// encryptionAlgorithm holds the type of asymmetric encryption algorithm used for keys and
/// certificates.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[schemars(transform = schema::drop_description)]
pub enum EncryptionAlgorithmType {
    /// `ECDSA-P256`.
    #[serde(rename = "ECDSA-P256")]
    EcdsaP256,
    /// `ECDSA-P384`.
    #[serde(rename = "ECDSA-P384")]
    EcdsaP384,
    /// `RSA-2048`.
    #[serde(rename = "RSA-2048")]
    Rsa2048,
    /// `RSA-3072`.
    #[serde(rename = "RSA-3072")]
    Rsa3072,
    /// `RSA-4096`.
    #[serde(rename = "RSA-4096")]
    Rsa4096,
}

/// dns defines the options for the DNS add-on installed in the cluster.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct Dns {
    /// imageRepository sets the container registry to pull images from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub image_repository: Option<String>,
    /// imageTag allows to specify a tag for the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub image_tag: Option<String>,
}

/// controllerManager contains extra settings for the controller manager control plane component
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ControlPlaneComponent {
    /// extraArgs is a list of args to pass to the control plane component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name", "value"], "x-kubernetes-validations" = [{"message": "extraArgs name must be unique", "rule": "self.all(x, self.exists_one(y, x.name == y.name))"}]))]
    pub extra_args: Vec<Arg>,
    /// extraEnvs is an extra set of environment variables to pass to the control plane component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub extra_envs: Vec<EnvVar>,
    /// extraVolumes is an extra set of host volumes, mounted to the control plane component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub extra_volumes: Vec<HostPathMount>,
}

/// apiServer contains extra settings for the API server control plane component
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("minProperties" = 1))]
pub struct ApiServer {
    /// certSANs sets extra Subject Alternative Names for the API Server signing cert.
    #[serde(default, rename = "certSANs", skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = 253)), length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub cert_sa_ns: Vec<String>,
    /// extraArgs is a list of args to pass to the control plane component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name", "value"], "x-kubernetes-validations" = [{"message": "extraArgs name must be unique", "rule": "self.all(x, self.exists_one(y, x.name == y.name))"}]))]
    pub extra_args: Vec<Arg>,
    /// extraEnvs is an extra set of environment variables to pass to the control plane component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub extra_envs: Vec<EnvVar>,
    /// extraVolumes is an extra set of host volumes, mounted to the control plane component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 100), extend("x-kubernetes-list-type" = "atomic"))]
    pub extra_volumes: Vec<HostPathMount>,
}

/// HostPathMount contains elements describing volumes that are mounted from the host.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct HostPathMount {
    /// hostPath is the path in the host that will be mounted inside the pod.
    #[schemars(length(min = 1, max = 512))]
    pub host_path: String,
    /// mountPath is the path inside the pod where hostPath will be mounted.
    #[schemars(length(min = 1, max = 512))]
    pub mount_path: String,
    /// name of the volume inside the pod template.
    #[schemars(length(min = 1, max = 512))]
    pub name: String,
    /// pathType is the type of the HostPath.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_type: Option<String>,
    /// readOnly controls write access to the volume
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// EnvVar represents an environment variable present in a Container.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    /// Name of the environment variable.
    pub name: String,
    /// Variable references $(VAR_NAME) are expanded using the previously defined environment
    /// variables in the container and any service environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Source for the environment variable's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvVarSource>,
}

/// Source for the environment variable's value.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct EnvVarSource {
    /// Selects a key of a ConfigMap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_key_ref: Option<ConfigMapKeySelector>,
    /// Selects a field of the pod: supports metadata.name, metadata.namespace,
    /// `metadata.labels['<KEY>']`, `metadata.annotations['<KEY>']`, spec.nodeName,
    /// spec.serviceAccountName, status.hostIP, status.podIP, status.podIPs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_ref: Option<ObjectFieldSelector>,
    /// FileKeyRef selects a key of the env file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_key_ref: Option<FileKeySelector>,
    /// Selects a resource of the container: only resources limits and requests (limits.cpu,
    /// limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory and
    /// requests.ephemeral-storage) are currently supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_field_ref: Option<ResourceFieldSelector>,
    /// Selects a key of a secret in the pod's namespace
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key_ref: Option<SecretKeySelector>,
}

/// Selects a key of a secret in the pod's namespace
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct SecretKeySelector {
    /// The key of the secret to select from.
    pub key: String,
    /// Name of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub name: Option<String>,
    /// Specify whether the Secret or its key must be defined
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// Selects a resource of the container: only resources limits and requests (limits.cpu,
/// limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory and
/// requests.ephemeral-storage) are currently supported.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct ResourceFieldSelector {
    /// Container name: required for volumes, optional for env vars
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    /// Specifies the output format of the exposed resources, defaults to "1"
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub divisor: Option<Quantity>,
    /// Required: resource to select
    pub resource: String,
}

/// FileKeyRef selects a key of the env file.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct FileKeySelector {
    /// The key within the env file.
    pub key: String,
    /// Specify whether the file or its key must be defined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub optional: Option<bool>,
    /// The path within the volume from which to select the file.
    pub path: String,
    /// The name of the volume mount containing the env file.
    pub volume_name: String,
}

/// Selects a field of the pod: supports metadata.name, metadata.namespace,
/// `metadata.labels['<KEY>']`, `metadata.annotations['<KEY>']`, spec.nodeName,
/// spec.serviceAccountName, status.hostIP, status.podIP, status.podIPs.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct ObjectFieldSelector {
    /// Version of the schema the FieldPath is written in terms of, defaults to "v1".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Path of the field to select in the specified API version.
    pub field_path: String,
}

/// Selects a key of a ConfigMap.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-map-type" = "atomic"))]
pub struct ConfigMapKeySelector {
    /// The key to select.
    pub key: String,
    /// Name of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = ""))]
    pub name: Option<String>,
    /// Specify whether the ConfigMap or its key must be defined
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
}

/// Arg represents an argument with a name and a value.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Arg {
    /// name is the Name of the extraArg.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// value is the Value of the extraArg.
    #[schemars(length(min = 0, max = 1024))]
    pub value: String,
}
