//! What makes a control plane Machine outdated (upstream `filters.go` `UpToDate`, tests in
//! `filters_test.go`), and the Machine names the naming template gives.

use corral_api::Machine;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::{Value, json};

use super::{CLUSTER_CONFIGURATION_ANNOTATION, machine_name, outdated_reasons};
use crate::api::bootstrap::KubeadmConfig;
use crate::api::controlplane::KubeadmControlPlane;

fn kcp(extra: Value) -> KubeadmControlPlane {
    let mut object = json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2",
        "kind": "KubeadmControlPlane",
        "metadata": { "name": "cp", "namespace": "default" },
        "spec": {
            "replicas": 3,
            "version": "v1.36.0",
            "machineTemplate": { "spec": { "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "tmpl-v2",
            } } },
            "kubeadmConfigSpec": {
                "clusterConfiguration": { "apiServer": { "extraArgs": [ { "name": "v", "value": "2" } ] } },
                "preKubeadmCommands": ["echo one"],
            },
        },
    });
    merge(&mut object, extra);
    serde_json::from_value(object).unwrap()
}

fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch,
    }
}

/// A machine made from `kcp` as it is now, created at `created`.
fn machine(kcp: &KubeadmControlPlane, created: &str) -> Machine {
    let configuration =
        serde_json::to_string(&kcp.spec.kubeadm_config_spec.cluster_configuration).unwrap();
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": "m", "namespace": "default", "creationTimestamp": created,
            "annotations": { CLUSTER_CONFIGURATION_ANNOTATION: configuration },
        },
        "spec": {
            "clusterName": "dev",
            "version": kcp.spec.version,
            "bootstrap": {},
            "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": "m" },
        },
    }))
    .unwrap()
}

/// The KubeadmConfig of a joining machine made from `kcp`.
fn join_config(kcp: &KubeadmControlPlane) -> KubeadmConfig {
    let mut spec = kcp.spec.kubeadm_config_spec.clone();
    spec.cluster_configuration = Default::default();
    spec.init_configuration = Default::default();
    spec.join_configuration.control_plane = Some(Default::default());
    KubeadmConfig::new("m", spec)
}

fn now() -> Timestamp {
    "2026-06-01T00:00:00Z".parse().unwrap()
}

#[test]
fn a_machine_made_from_the_current_spec_is_up_to_date() {
    let kcp = kcp(json!({}));
    let machine = machine(&kcp, "2026-05-01T00:00:00Z");
    let config = join_config(&kcp);
    let reasons = outdated_reasons(&kcp, &machine, Some("tmpl-v2"), Some(&config), now());
    assert!(reasons.is_empty(), "{reasons:?}");
}

#[test]
fn each_change_upstream_rolls_out_on_makes_a_machine_outdated() {
    let current = kcp(json!({}));
    let machine = machine(&current, "2026-05-01T00:00:00Z");
    let config = join_config(&current);
    let cases: Vec<(&str, KubeadmControlPlane, &str)> = vec![
        (
            "version",
            kcp(json!({ "spec": { "version": "v1.37.0" } })),
            "Version v1.36.0 is not equal to v1.37.0",
        ),
        (
            "cluster configuration",
            kcp(
                json!({ "spec": { "kubeadmConfigSpec": { "clusterConfiguration": {
                "apiServer": { "extraArgs": [ { "name": "v", "value": "3" } ] },
            } } } }),
            ),
            "ClusterConfiguration is not up-to-date",
        ),
        (
            "kubeadm config",
            kcp(json!({ "spec": { "kubeadmConfigSpec": { "preKubeadmCommands": ["echo two"] } } })),
            "KubeadmConfig is not up-to-date",
        ),
        (
            "rollout.after passed",
            kcp(json!({ "spec": { "rollout": { "after": "2026-05-15T00:00:00Z" } } })),
            "Machine was created before rollout.after",
        ),
    ];
    for (name, kcp, expected) in cases {
        let reasons = outdated_reasons(&kcp, &machine, Some("tmpl-v2"), Some(&config), now());
        assert_eq!(reasons, [expected.to_string()], "{name}");
    }

    // A rollout.after in the future, or before the machine was created, changes nothing.
    for after in ["2026-07-01T00:00:00Z", "2026-04-01T00:00:00Z"] {
        let kcp = kcp(json!({ "spec": { "rollout": { "after": after } } }));
        assert!(outdated_reasons(&kcp, &machine, Some("tmpl-v2"), Some(&config), now()).is_empty());
    }

    // Cloned from another template.
    let reasons = outdated_reasons(&current, &machine, Some("tmpl-v1"), Some(&config), now());
    assert_eq!(
        reasons,
        ["DevMachine is not up-to-date (cloned from tmpl-v1, not tmpl-v2)".to_string()]
    );
}

#[test]
fn certificates_expiring_within_the_threshold_make_a_machine_outdated() {
    let kcp = kcp(json!({ "spec": { "rollout": { "before": { "certificatesExpiryDays": 21 } } } }));
    let config = join_config(&kcp);
    let mut machine = machine(&kcp, "2026-05-01T00:00:00Z");
    let expiring = |date: &str| {
        Some(corral_api::MachineStatus {
            certificates_expiry_date: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                date.parse().unwrap(),
            )),
            ..Default::default()
        })
    };
    machine.status = expiring("2026-06-10T00:00:00Z");
    let reasons = outdated_reasons(&kcp, &machine, Some("tmpl-v2"), Some(&config), now());
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("certificatesExpiryDays"), "{reasons:?}");
    machine.status = expiring("2026-08-01T00:00:00Z");
    assert!(outdated_reasons(&kcp, &machine, Some("tmpl-v2"), Some(&config), now()).is_empty());
}

#[test]
fn machine_names_follow_the_naming_template() {
    let default = kcp(json!({}));
    let name = machine_name(&default, "dev").unwrap();
    assert!(
        name.starts_with("cp-") && name.len() == "cp-".len() + 5,
        "{name}"
    );
    let custom = kcp(json!({ "spec": { "machineNaming": {
        "template": "{{ .cluster.name }}-{{ .kubeadmControlPlane.name }}-x-{{ .random }}",
    } } }));
    let name = machine_name(&custom, "dev").unwrap();
    assert!(name.starts_with("dev-cp-x-"), "{name}");
    let without_random =
        kcp(json!({ "spec": { "machineNaming": { "template": "{{ .cluster.name }}" } } }));
    let error = machine_name(&without_random, "dev")
        .unwrap_err()
        .to_string();
    assert!(error.contains(".random"), "{error}");
    assert_eq!(default.name_any(), "cp");
}
