//! kubeadm's configuration files (`kubeadm.k8s.io/v1beta4`) from a KubeadmConfig's
//! configurations and what the Cluster and the Machine say.
//!
//! Upstream's v1beta2 types follow kubeadm v1beta4, with three kinds of differences this module
//! undoes: durations are whole seconds (`timeouts.*Seconds`, `bootstrapTokens[].ttlSeconds`) or
//! days (`certificateValidityPeriodDays`) where kubeadm takes Go durations; the fields a Cluster
//! or a Machine already says (cluster name, Kubernetes version, networking, control plane
//! endpoint) are not in the KubeadmConfig and are filled in here, as upstream's
//! `computeClusterConfigurationAndAdditionalData` does; and `discovery.file.kubeConfig` (a
//! kubeconfig written inline) is not a kubeadm field.

use serde_json::{Map, Value, json};

use crate::api::bootstrap::{ClusterConfiguration, InitConfiguration, JoinConfiguration};

/// The kubeadm API version Corral writes; kubeadm 1.31 and later read it.
pub const KUBEADM_API_VERSION: &str = "kubeadm.k8s.io/v1beta4";

/// What the ClusterConfiguration takes from the Cluster and the Machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterFacts {
    /// The Cluster's name.
    pub cluster_name: String,
    /// The Machine's `spec.version`.
    pub kubernetes_version: Option<String>,
    /// `host:port` of the Cluster's `spec.controlPlaneEndpoint`.
    pub control_plane_endpoint: Option<String>,
    /// The Cluster's pod CIDR blocks, comma-separated as kubeadm wants them.
    pub pod_subnet: Option<String>,
    /// The Cluster's service CIDR blocks, comma-separated.
    pub service_subnet: Option<String>,
    /// The Cluster's service domain.
    pub dns_domain: Option<String>,
}

impl ClusterFacts {
    /// The facts of a Cluster and one of its Machines.
    pub fn of(cluster: &corral_api::Cluster, machine: &corral_api::Machine) -> ClusterFacts {
        use kube::ResourceExt;
        let network = &cluster.spec.cluster_network;
        let join = |ranges: &Option<corral_api::NetworkRanges>| {
            ranges
                .as_ref()
                .filter(|ranges| !ranges.cidr_blocks.is_empty())
                .map(|ranges| ranges.cidr_blocks.join(","))
        };
        let endpoint = &cluster.spec.control_plane_endpoint;
        ClusterFacts {
            cluster_name: cluster.name_any(),
            kubernetes_version: machine.spec.version.clone(),
            control_plane_endpoint: endpoint.is_valid().then(|| {
                format!(
                    "{}:{}",
                    endpoint.host.as_deref().unwrap_or_default(),
                    endpoint.port.unwrap_or_default()
                )
            }),
            pod_subnet: join(&network.pods),
            service_subnet: join(&network.services),
            dns_domain: network.service_domain.clone(),
        }
    }
}

/// A configuration that cannot be written for kubeadm; says which field and why.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct Unsupported {
    pub field: String,
    pub reason: String,
}

/// The ClusterConfiguration document.
pub fn cluster_configuration(config: &ClusterConfiguration, facts: &ClusterFacts) -> Value {
    let mut document = to_object(config);
    days_to_duration(
        &mut document,
        "certificateValidityPeriodDays",
        "certificateValidityPeriod",
    );
    days_to_duration(
        &mut document,
        "caCertificateValidityPeriodDays",
        "caCertificateValidityPeriod",
    );
    let mut networking = Map::new();
    if let Some(subnet) = &facts.pod_subnet {
        networking.insert("podSubnet".into(), json!(subnet));
    }
    if let Some(subnet) = &facts.service_subnet {
        networking.insert("serviceSubnet".into(), json!(subnet));
    }
    if let Some(domain) = &facts.dns_domain {
        networking.insert("dnsDomain".into(), json!(domain));
    }
    if !networking.is_empty() {
        document.insert("networking".into(), Value::Object(networking));
    }
    document.insert("clusterName".into(), json!(facts.cluster_name));
    if let Some(version) = &facts.kubernetes_version {
        document.insert("kubernetesVersion".into(), json!(version));
    }
    if !document.contains_key("controlPlaneEndpoint")
        && let Some(endpoint) = &facts.control_plane_endpoint
    {
        document.insert("controlPlaneEndpoint".into(), json!(endpoint));
    }
    headed("ClusterConfiguration", document)
}

/// The InitConfiguration document.
pub fn init_configuration(config: &InitConfiguration) -> Value {
    let mut document = to_object(config);
    seconds_to_durations(&mut document);
    if let Some(Value::Array(tokens)) = document.get_mut("bootstrapTokens") {
        for token in tokens.iter_mut().filter_map(Value::as_object_mut) {
            seconds_to_duration(token, "ttlSeconds", "ttl");
        }
    }
    headed("InitConfiguration", document)
}

/// The JoinConfiguration document.
pub fn join_configuration(config: &JoinConfiguration) -> Result<Value, Unsupported> {
    if config
        .discovery
        .file
        .as_ref()
        .is_some_and(|file| file.kube_config.is_some())
    {
        return Err(Unsupported {
            field: "spec.joinConfiguration.discovery.file.kubeConfig".into(),
            reason: "an inline discovery kubeconfig is not supported by Corral; \
                     use kubeConfigPath with a file from spec.files"
                .into(),
        });
    }
    let mut document = to_object(config);
    seconds_to_durations(&mut document);
    Ok(headed("JoinConfiguration", document))
}

/// Documents as one YAML stream, each started by `---` and its `apiVersion` and `kind`.
pub fn to_yaml(documents: &[Value]) -> String {
    let mut text = String::new();
    for document in documents {
        text.push_str("---\n");
        let mut rest = document.as_object().cloned().unwrap_or_default();
        for key in ["apiVersion", "kind"] {
            if let Some(value) = rest.remove(key) {
                let mut head = Map::new();
                head.insert(key.into(), value);
                text.push_str(
                    &serde_yaml::to_string(&head).expect("JSON values serialize as YAML"),
                );
            }
        }
        if !rest.is_empty() {
            text.push_str(&serde_yaml::to_string(&rest).expect("JSON values serialize as YAML"));
        }
    }
    text
}

fn to_object(value: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(value).expect("the API types serialize") {
        Value::Object(object) => object,
        _ => Map::new(),
    }
}

fn headed(kind: &str, document: Map<String, Value>) -> Value {
    let mut headed = Map::new();
    headed.insert("apiVersion".into(), json!(KUBEADM_API_VERSION));
    headed.insert("kind".into(), json!(kind));
    headed.extend(document);
    Value::Object(headed)
}

/// `timeouts.<name>Seconds: n` becomes `timeouts.<name>: "ns"`.
fn seconds_to_durations(document: &mut Map<String, Value>) {
    let Some(Value::Object(timeouts)) = document.get_mut("timeouts") else {
        return;
    };
    let names: Vec<String> = timeouts
        .keys()
        .filter(|key| key.ends_with("Seconds"))
        .cloned()
        .collect();
    for name in names {
        let target = name.trim_end_matches("Seconds").to_string();
        seconds_to_duration(timeouts, &name, &target);
    }
}

fn seconds_to_duration(object: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(seconds) = object.remove(from).and_then(|value| value.as_i64()) {
        object.insert(to.into(), json!(format!("{seconds}s")));
    }
}

fn days_to_duration(object: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(days) = object.remove(from).and_then(|value| value.as_i64()) {
        object.insert(to.into(), json!(format!("{}h0m0s", days * 24)));
    }
}

#[cfg(test)]
mod tests;
