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
etcd:
  local:
    extraArgs:
    - name: election-timeout
      value: '500'
    - name: snapshot-count
      value: '5000'
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
            etcd_extra_args: vec![
                ("election-timeout".into(), "500".into()),
                ("snapshot-count".into(), "5000".into()),
            ],
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

#[test]
fn etcds_extra_args_override_the_local_timings_or_are_added() {
    let local = |extra: &[(String, String)]| {
        with_extra_args(
            vec![
                ("name".into(), "m".into()),
                ("heartbeat-interval".into(), "50".into()),
                ("election-timeout".into(), "300".into()),
            ],
            extra,
        )
    };
    assert_eq!(
        local(&[
            ("election-timeout".into(), "1000".into()),
            ("quota-backend-bytes".into(), "8589934592".into()),
        ]),
        vec![
            ("name".to_owned(), "m".to_owned()),
            ("heartbeat-interval".into(), "50".into()),
            ("election-timeout".into(), "1000".into()),
            ("quota-backend-bytes".into(), "8589934592".into()),
        ]
    );
    // kubeadm v1beta3's map form is read too; anything else names the field.
    let map: Value =
        serde_yaml::from_str("etcd:\n  local:\n    extraArgs:\n      pre-vote: \"false\"\n")
            .unwrap();
    assert_eq!(
        etcd_extra_args(&map).unwrap(),
        vec![("pre-vote".to_owned(), "false".to_owned())]
    );
    let bad: Value = serde_yaml::from_str("etcd:\n  local:\n    extraArgs: 3\n").unwrap();
    assert!(
        etcd_extra_args(&bad)
            .unwrap_err()
            .starts_with("etcd.local.extraArgs:")
    );
}

#[test]
fn the_published_kubeadm_config_carries_etcds_extra_args() {
    let facts = KubeadmFacts::read(
        "kind: ClusterConfiguration\nclusterName: demo\netcd:\n  local:\n    extraArgs:\n    - name: election-timeout\n      value: \"700\"\n---\nkind: InitConfiguration\n",
        "m",
    )
    .unwrap();
    let config_map = kubeadm_config(&facts, "10.77.1.1:6443");
    let text = &config_map.data.unwrap()[CLUSTER_CONFIGURATION];
    let document: Value = serde_yaml::from_str(text).unwrap();
    assert_eq!(
        etcd_extra_args(&document).unwrap(),
        vec![("election-timeout".to_owned(), "700".to_owned())]
    );
    assert_eq!(document["clusterName"], "demo");
}
