use super::*;

#[test]
fn kubeadm_facts_come_from_the_init_and_cluster_configurations() {
    let text = "\
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: demo
kubernetesVersion: v1.33.0
controlPlaneEndpoint: 10.77.1.1:6443
apiServer:
  certSANs: [demo.example.com]
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
  name: demo-cp-abcde
";
    assert_eq!(
        KubeadmFacts::read(text, "machine").unwrap(),
        KubeadmFacts {
            node_name: "demo-cp-abcde".into(),
            cluster_name: "demo".into(),
            kubernetes_version: Some("v1.33.0".into()),
            control_plane_endpoint: Some("10.77.1.1:6443".into()),
            cert_sans: vec!["demo.example.com".into()],
            bind_port: 6443,
            control_plane: true,
        }
    );
    let bare = KubeadmFacts::read("kind: InitConfiguration\n", "machine").unwrap();
    assert_eq!(bare.node_name, "machine", "the machine's name by default");
    assert_eq!(bare.cluster_name, "kubernetes");
    assert_eq!(
        KubeadmFacts::read(
            "kind: InitConfiguration\nlocalAPIEndpoint:\n  bindPort: 70000\n",
            "m"
        )
        .unwrap_err(),
        "localAPIEndpoint.bindPort 70000 is not a port"
    );
}

#[test]
fn a_join_configuration_says_where_the_cluster_is_and_whether_it_is_a_control_plane() {
    let control_plane = "\
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
nodeRegistration:
  name: demo-cp-2
controlPlane:
  localAPIEndpoint:
    bindPort: 7443
discovery:
  bootstrapToken:
    apiServerEndpoint: 10.77.1.1:6443
    token: abcdef.0123456789abcdef
";
    let facts = KubeadmFacts::read(control_plane, "machine").unwrap();
    assert!(facts.control_plane);
    assert_eq!(facts.bind_port, 7443);
    assert_eq!(
        facts.control_plane_endpoint.as_deref(),
        Some("10.77.1.1:6443")
    );
    let worker = control_plane.replace(
        "controlPlane:\n  localAPIEndpoint:\n    bindPort: 7443\n",
        "",
    );
    assert!(
        !KubeadmFacts::read(&worker, "machine")
            .unwrap()
            .control_plane
    );
}

#[test]
fn the_endpoints_host_goes_into_the_serving_certificate() {
    assert_eq!(host_of("10.0.0.1:6443"), "10.0.0.1");
    assert_eq!(host_of("[fd00::1]:6443"), "fd00::1");
    assert_eq!(host_of("api.example.com:443"), "api.example.com");
}
