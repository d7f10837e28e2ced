use serde_json::json;

use super::*;
use crate::api::bootstrap::{BootstrapToken, Timeouts};

#[test]
fn the_cluster_configuration_takes_the_clusters_facts_and_kubeadms_durations() {
    let config: ClusterConfiguration = serde_json::from_value(json!({
        "certificateValidityPeriodDays": 365,
        "apiServer": { "extraArgs": [{ "name": "audit-log-maxage", "value": "7" }] },
    }))
    .unwrap();
    let facts = ClusterFacts {
        cluster_name: "dev".into(),
        kubernetes_version: Some("v1.33.1".into()),
        control_plane_endpoint: Some("10.0.0.1:6443".into()),
        pod_subnet: Some("192.168.0.0/16".into()),
        service_subnet: None,
        dns_domain: Some("cluster.local".into()),
    };
    let document = cluster_configuration(&config, &facts);
    assert_eq!(document["apiVersion"], "kubeadm.k8s.io/v1beta4");
    assert_eq!(document["kind"], "ClusterConfiguration");
    assert_eq!(document["clusterName"], "dev");
    assert_eq!(document["kubernetesVersion"], "v1.33.1");
    assert_eq!(document["controlPlaneEndpoint"], "10.0.0.1:6443");
    assert_eq!(
        document["networking"],
        json!({ "podSubnet": "192.168.0.0/16", "dnsDomain": "cluster.local" })
    );
    assert_eq!(document["certificateValidityPeriod"], "8760h0m0s");
    assert!(document.get("certificateValidityPeriodDays").is_none());
    assert_eq!(
        document["apiServer"]["extraArgs"][0]["name"],
        "audit-log-maxage"
    );
}

#[test]
fn seconds_become_go_durations_in_init_and_join_configurations() {
    let init = InitConfiguration {
        bootstrap_tokens: vec![BootstrapToken {
            token: "abcdef.0123456789abcdef".into(),
            ttl_seconds: Some(600),
            ..Default::default()
        }],
        timeouts: Timeouts {
            control_plane_component_health_check_seconds: Some(240),
            ..Default::default()
        },
        ..Default::default()
    };
    let document = init_configuration(&init);
    assert_eq!(document["kind"], "InitConfiguration");
    assert_eq!(document["bootstrapTokens"][0]["ttl"], "600s");
    assert_eq!(
        document["timeouts"]["controlPlaneComponentHealthCheck"],
        "240s"
    );
    assert!(
        document["timeouts"]
            .get("controlPlaneComponentHealthCheckSeconds")
            .is_none()
    );

    let join: JoinConfiguration = serde_json::from_value(json!({
        "discovery": { "bootstrapToken": { "token": "abcdef.0123456789abcdef", "apiServerEndpoint": "10.0.0.1:6443" } },
        "timeouts": { "discoverySeconds": 300 },
    }))
    .unwrap();
    let document = join_configuration(&join).unwrap();
    assert_eq!(document["kind"], "JoinConfiguration");
    assert_eq!(document["timeouts"]["discovery"], "300s");
    assert_eq!(
        document["discovery"]["bootstrapToken"]["apiServerEndpoint"],
        "10.0.0.1:6443"
    );
    let yaml = to_yaml(&[document]);
    assert!(
        yaml.starts_with("---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n"),
        "{yaml}"
    );
}

#[test]
fn an_inline_discovery_kubeconfig_is_refused_with_the_field_named() {
    let join: JoinConfiguration = serde_json::from_value(json!({
        "discovery": { "file": { "kubeConfigPath": "/etc/discovery.yaml", "kubeConfig": {
            "cluster": { "server": "https://10.0.0.1:6443", "certificateAuthorityData": "Y2E=" },
            "user": { "exec": { "command": "get-token" } } } } },
    }))
    .unwrap();
    let error = join_configuration(&join).unwrap_err();
    assert_eq!(
        error.field,
        "spec.joinConfiguration.discovery.file.kubeConfig"
    );
}
