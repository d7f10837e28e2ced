use serde_json::json;

use super::*;

fn cluster(endpoint: serde_json::Value, infrastructure_kind: &str) -> Cluster {
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": { "name": "dev", "namespace": "default" },
        "spec": {
            "controlPlaneEndpoint": endpoint,
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": infrastructure_kind, "name": "dev" },
        },
    }))
    .unwrap()
}

#[test]
fn the_server_is_https_except_for_the_in_memory_providers_simulated_clusters() {
    let endpoint = json!({ "host": "10.0.0.1", "port": 6443 });
    assert_eq!(
        server_url(&cluster(endpoint.clone(), "AWSCluster")).as_deref(),
        Some("https://10.0.0.1:6443")
    );
    assert_eq!(
        server_url(&cluster(endpoint, "DevCluster")).as_deref(),
        Some("http://10.0.0.1:6443")
    );
    let ipv6 = json!({ "host": "fd00::1", "port": 6443 });
    assert_eq!(
        server_url(&cluster(ipv6, "AWSCluster")).as_deref(),
        Some("https://[fd00::1]:6443")
    );
    assert_eq!(server_url(&cluster(json!({}), "AWSCluster")), None);
}
