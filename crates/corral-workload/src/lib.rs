//! The objects kubeadm leaves in a workload cluster, which a control plane provider reads to
//! judge a control plane's health and version: per control plane machine the static Pods of
//! etcd, kube-apiserver, kube-controller-manager and kube-scheduler
//! (`kube-system/<component>-<node>`, labelled `component=<component>` and
//! `tier=control-plane`); per cluster the `kubeadm-config` ConfigMap (the
//! ClusterConfiguration), `kubelet-config`, and the kube-proxy DaemonSet and CoreDNS Deployment
//! with their ConfigMaps.
//!
//! Two writers: the node agent (`corral-node`) on the local provider's real machines, and the
//! in-memory provider's simulated cloud, as upstream's in-memory backend fakes them
//! (`inmemorymachine_backend.go`). Pure builders; the writers decide when.
//!
//! # Map of the crate
//!
//! What kubeadm leaves in a workload cluster, as pure k8s-openapi builders: the control plane
//! static Pods, kubeadm-config, kubelet-config, kube-proxy and CoreDNS. Written by the node agent
//! on real machines and by the in-memory provider's simulated cloud; read by the control plane
//! provider.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, NodeCondition, Pod, PodCondition, PodSpec, PodStatus, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

/// The namespace of the control plane.
pub const KUBE_SYSTEM: &str = "kube-system";

/// The control plane components that run as static Pods on every control plane machine, etcd
/// first (kubeadm's `constants.go` names).
pub const COMPONENTS: [&str; 4] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];

/// The etcd image kubeadm pins for recent Kubernetes versions.
const ETCD_IMAGE: &str = "registry.k8s.io/etcd:3.5.21-0";

/// The CoreDNS image kubeadm deploys for recent Kubernetes versions.
const COREDNS_IMAGE: &str = "registry.k8s.io/coredns/coredns:v1.12.0";

/// kubeadm's annotation on an etcd static Pod: the member's client URLs.
pub const ETCD_ADVERTISE_CLIENT_URLS: &str = "kubeadm.kubernetes.io/etcd.advertise-client-urls";

/// kubeadm's annotation on a kube-apiserver static Pod: `address:port` it advertises.
pub const APISERVER_ADVERTISE_ADDRESS: &str =
    "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint";

/// The name of a component's static Pod on a Node: `<component>-<node>`.
pub fn static_pod_name(component: &str, node: &str) -> String {
    format!("{component}-{node}")
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

fn image(component: &str, version: Option<&str>) -> String {
    match (component, version) {
        ("etcd", _) => ETCD_IMAGE.to_string(),
        (component, Some(version)) => format!("registry.k8s.io/{component}:{version}"),
        (component, None) => format!("registry.k8s.io/{component}"),
    }
}

/// The Ready condition of a Pod.
pub fn pod_ready_condition(ready: bool) -> PodCondition {
    PodCondition {
        type_: "Ready".into(),
        status: if ready { "True" } else { "False" }.into(),
        reason: (!ready).then(|| "NodeNotReady".into()),
        message: (!ready).then(|| "the Node of this Pod is not ready".into()),
        ..Default::default()
    }
}

/// A control plane component's static Pod on `node`, running, Ready as `ready` says.
pub fn static_pod(
    component: &str,
    node: &str,
    version: Option<&str>,
    ready: bool,
    annotations: BTreeMap<String, String>,
) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(static_pod_name(component, node)),
            namespace: Some(KUBE_SYSTEM.into()),
            labels: Some(labels(&[
                ("component", component),
                ("tier", "control-plane"),
            ])),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node.into()),
            priority_class_name: Some("system-node-critical".into()),
            containers: vec![Container {
                name: component.into(),
                image: Some(image(component, version)),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![pod_ready_condition(ready)]),
            ..Default::default()
        }),
    }
}

fn config_map(name: &str, data: &[(&str, String)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(KUBE_SYSTEM.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(key, value)| (key.to_string(), value.clone()))
                .collect(),
        ),
        ..Default::default()
    }
}

/// `kube-system/kubeadm-config`: the ClusterConfiguration `kubeadm init` stored, which a
/// control plane provider reads and updates on upgrades (upstream KCP's
/// `UpdateClusterConfiguration`).
pub fn kubeadm_config(cluster: &str, endpoint: &str, version: Option<&str>) -> ConfigMap {
    let version = version.unwrap_or("");
    config_map(
        "kubeadm-config",
        &[(
            "ClusterConfiguration",
            format!(
                "apiServer: {{}}
apiVersion: kubeadm.k8s.io/v1beta4
certificatesDir: /etc/kubernetes/pki
clusterName: {cluster}
controlPlaneEndpoint: {endpoint}
controllerManager: {{}}
dns: {{}}
etcd:
  local:
    dataDir: /var/lib/etcd
imageRepository: registry.k8s.io
kind: ClusterConfiguration
kubernetesVersion: {version}
networking:
  dnsDomain: cluster.local
  serviceSubnet: 10.96.0.0/12
scheduler: {{}}
"
            ),
        )],
    )
}

/// `kube-system/kubelet-config`: the kubelet configuration every joining node reads.
pub fn kubelet_config() -> ConfigMap {
    config_map(
        "kubelet-config",
        &[(
            "kubelet",
            "apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
authorization:
  mode: Webhook
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
kind: KubeletConfiguration
rotateCertificates: true
staticPodPath: /etc/kubernetes/manifests
"
            .to_string(),
        )],
    )
}

/// `kube-system/kube-proxy`, the ConfigMap of kube-proxy's configuration.
pub fn kube_proxy_config() -> ConfigMap {
    config_map(
        "kube-proxy",
        &[(
            "config.conf",
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
"
            .to_string(),
        )],
    )
}

/// `kube-system/coredns`, CoreDNS's Corefile.
pub fn coredns_config() -> ConfigMap {
    config_map(
        "coredns",
        &[(
            "Corefile",
            ".:53 {
    errors
    health
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
}
"
            .to_string(),
        )],
    )
}

fn pod_template(app_label: (&str, &str), container: &str, image: String) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(&[app_label])),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: container.into(),
                image: Some(image),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

/// The `kube-system/kube-proxy` DaemonSet, at the control plane's version.
pub fn kube_proxy(version: Option<&str>) -> DaemonSet {
    let app = ("k8s-app", "kube-proxy");
    DaemonSet {
        metadata: ObjectMeta {
            name: Some("kube-proxy".into()),
            namespace: Some(KUBE_SYSTEM.into()),
            labels: Some(labels(&[app])),
            ..Default::default()
        },
        spec: DaemonSetSpec {
            selector: LabelSelector {
                match_labels: Some(labels(&[app])),
                ..Default::default()
            },
            template: pod_template(app, "kube-proxy", image("kube-proxy", version)),
            ..Default::default()
        },
        status: None,
    }
}

/// The `kube-system/coredns` Deployment.
pub fn coredns() -> Deployment {
    let app = ("k8s-app", "kube-dns");
    Deployment {
        metadata: ObjectMeta {
            name: Some("coredns".into()),
            namespace: Some(KUBE_SYSTEM.into()),
            labels: Some(labels(&[app])),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels(&[app])),
                ..Default::default()
            },
            template: pod_template(app, "coredns", COREDNS_IMAGE.to_string()),
            ..Default::default()
        },
        status: None,
    }
}

/// The conditions a kubelet reports, as Cluster API's NodeHealthy reads them: `Ready` (True,
/// or False with `not_ready`'s message) and no memory, disk or PID pressure, heartbeating now.
pub fn node_conditions(not_ready: Option<&str>) -> Vec<NodeCondition> {
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let condition = |type_: &str, status: &str, reason: &str, message: &str| NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    };
    let ready = match not_ready {
        None => condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
        Some(message) => condition("Ready", "False", "KubeletNotReady", message),
    };
    vec![
        ready,
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    ]
}
