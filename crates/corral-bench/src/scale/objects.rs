//! The objects of one benchmark cluster, as `corral up --demo` shapes them: a bootstrap data
//! Secret, a DevCluster, the Cluster, a DevMachineTemplate and a MachineDeployment of workers,
//! and control plane Machines with their DevMachines (machine-based, without a control plane
//! provider: Machines labelled `cluster.x-k8s.io/control-plane`).

use std::time::Duration;

use kube::api::ApiResource;
use serde_json::{Value, json};

const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const CORE: &str = "cluster.x-k8s.io";
/// The Kubernetes version of every Machine.
pub const VERSION: &str = "v1.32.0";

pub fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

pub fn secrets() -> ApiResource {
    resource("", "v1", "Secret", "secrets")
}

pub fn dev_clusters() -> ApiResource {
    resource(INFRA, "v1beta2", "DevCluster", "devclusters")
}

pub fn dev_machines() -> ApiResource {
    resource(INFRA, "v1beta2", "DevMachine", "devmachines")
}

pub fn dev_machine_templates() -> ApiResource {
    resource(
        INFRA,
        "v1beta2",
        "DevMachineTemplate",
        "devmachinetemplates",
    )
}

pub fn machine_deployments() -> ApiResource {
    resource(CORE, "v1beta2", "MachineDeployment", "machinedeployments")
}

pub fn machine_sets() -> ApiResource {
    resource(CORE, "v1beta2", "MachineSet", "machinesets")
}

/// How the in-memory backend provisions a machine: the VM takes `delay`, the other steps
/// nothing (zero provisioning delay when `delay` is zero).
fn backend(delay: Duration) -> Value {
    if delay.is_zero() {
        return json!({"inMemory": {}});
    }
    json!({"inMemory": {"vm": {"provisioning": {
        "startupDuration": format!("{}ms", delay.as_millis()),
        "startupJitter": "0.2",
    }}}})
}

/// What a benchmark cluster is made of.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub control_plane_machines: usize,
    pub workers: usize,
    pub provisioning_delay: Duration,
    /// maxSurge and maxUnavailable of the MachineDeployment, when not upstream's defaults.
    pub rollout: Option<(&'static str, &'static str)>,
}

/// The name of the workers' MachineDeployment of `cluster`.
pub fn machine_deployment_name(cluster: &str) -> String {
    format!("{cluster}-md-0")
}

/// A DevMachineTemplate named `name` for `cluster`.
pub fn dev_machine_template(cluster: &str, name: &str, shape: &Shape) -> (ApiResource, Value) {
    (
        dev_machine_templates(),
        json!({
            "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevMachineTemplate",
            "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            "spec": {"template": {"spec": {"backend": backend(shape.provisioning_delay)}}},
        }),
    )
}

/// Every object of cluster `name`, in creation order.
pub fn cluster_objects(name: &str, shape: &Shape) -> Vec<(ApiResource, Value)> {
    let cluster_label = json!({"cluster.x-k8s.io/cluster-name": name});
    let md = machine_deployment_name(name);
    let mut machine_deployment = json!({
        "apiVersion": format!("{CORE}/v1beta2"), "kind": "MachineDeployment",
        "metadata": {"name": md, "labels": cluster_label},
        "spec": {
            "clusterName": name,
            "replicas": shape.workers,
            "selector": {"matchLabels": {"bench.corral.dev/pool": md}},
            "template": {
                "metadata": {"labels": {"bench.corral.dev/pool": md}},
                "spec": {
                    "clusterName": name,
                    "version": VERSION,
                    "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
                    "infrastructureRef": {"apiGroup": INFRA, "kind": "DevMachineTemplate", "name": md},
                },
            },
        },
    });
    if let Some((max_surge, max_unavailable)) = shape.rollout {
        machine_deployment["spec"]["rollout"] = json!({"strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": int_or_string(max_surge), "maxUnavailable": int_or_string(max_unavailable)},
        }});
    }
    let mut objects = vec![
        (
            secrets(),
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": format!("{name}-bootstrap"), "labels": cluster_label},
                "type": "cluster.x-k8s.io/secret",
                "stringData": {"value": "#cloud-config\n", "format": "cloud-config"},
            }),
        ),
        (
            dev_clusters(),
            json!({
                "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevCluster",
                "metadata": {"name": name, "labels": cluster_label},
                "spec": {"backend": {"inMemory": {}}},
            }),
        ),
        (
            resource(CORE, "v1beta2", "Cluster", "clusters"),
            json!({
                "apiVersion": format!("{CORE}/v1beta2"), "kind": "Cluster",
                "metadata": {"name": name},
                "spec": {
                    "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}},
                    "infrastructureRef": {"apiGroup": INFRA, "kind": "DevCluster", "name": name},
                },
            }),
        ),
        dev_machine_template(name, &md, shape),
        (machine_deployments(), machine_deployment),
    ];
    for index in 0..shape.control_plane_machines {
        let machine = format!("{name}-control-plane-{index}");
        objects.push((
            dev_machines(),
            json!({
                "apiVersion": format!("{INFRA}/v1beta2"), "kind": "DevMachine",
                "metadata": {"name": machine, "labels": cluster_label},
                "spec": {"backend": backend(shape.provisioning_delay)},
            }),
        ));
        objects.push((
            resource(CORE, "v1beta2", "Machine", "machines"),
            json!({
                "apiVersion": format!("{CORE}/v1beta2"), "kind": "Machine",
                "metadata": {"name": machine, "labels": {
                    "cluster.x-k8s.io/cluster-name": name,
                    "cluster.x-k8s.io/control-plane": "",
                }},
                "spec": {
                    "clusterName": name,
                    "version": VERSION,
                    "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
                    "infrastructureRef": {"apiGroup": INFRA, "kind": "DevMachine", "name": machine},
                },
            }),
        ));
    }
    objects
}

/// `"10%"` stays a string, `"3"` becomes a number (an IntOrString).
fn int_or_string(text: &str) -> Value {
    match text.parse::<i64>() {
        Ok(number) => json!(number),
        Err(_) => json!(text),
    }
}
