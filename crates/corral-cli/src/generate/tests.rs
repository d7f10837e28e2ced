use std::collections::BTreeMap;

use super::*;

fn request(flavor: Option<&str>) -> GenerateCluster {
    GenerateCluster {
        cluster_name: "dev".into(),
        source: Source::Embedded {
            infrastructure: Some("in-memory".into()),
            flavor: flavor.map(String::from),
        },
        target_namespace: Some("team-a".into()),
        kubernetes_version: Some("v1.32.0".into()),
        control_plane_machine_count: 3,
        worker_machine_count: 2,
        environment: BTreeMap::new(),
    }
}

fn documents(yaml: &str) -> Vec<serde_json::Value> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(yaml)
        .map(|document| serde_json::Value::deserialize(document).unwrap())
        .filter(|document| !document.is_null())
        .collect()
}

fn kinds(documents: &[serde_json::Value]) -> Vec<String> {
    documents
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap(),
                d["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn the_default_flavor_is_upstreams_shape_with_a_kubeadm_control_plane() {
    let documents = documents(&generate_cluster(&request(None)).unwrap());
    assert_eq!(
        kinds(&documents),
        [
            "Cluster/dev",
            "DevCluster/dev",
            "KubeadmControlPlane/dev-control-plane",
            "DevMachineTemplate/dev-control-plane",
            "MachineDeployment/dev-md-0",
            "DevMachineTemplate/dev-md-0",
            "KubeadmConfigTemplate/dev-md-0",
        ]
    );
    assert!(
        documents
            .iter()
            .all(|d| d["metadata"]["namespace"] == "team-a")
    );
    assert_eq!(
        documents[0]["spec"]["clusterNetwork"]["pods"]["cidrBlocks"][0],
        "192.168.0.0/16"
    );
    assert_eq!(
        documents[0]["spec"]["clusterNetwork"]["serviceDomain"],
        "cluster.local"
    );
    assert_eq!(documents[2]["spec"]["replicas"], 3);
    assert_eq!(documents[2]["spec"]["version"], "v1.32.0");
    assert_eq!(documents[4]["spec"]["replicas"], 2);
}

#[test]
fn the_machine_based_flavor_has_one_machine_per_control_plane_replica() {
    let documents = documents(&generate_cluster(&request(Some("machine-based"))).unwrap());
    let kinds = kinds(&documents);
    for index in 0..3 {
        assert!(
            kinds.contains(&format!("Machine/dev-control-plane-{index}")),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&format!("DevMachine/dev-control-plane-{index}")),
            "{kinds:?}"
        );
    }
    assert!(
        !kinds.iter().any(|k| k.starts_with("KubeadmControlPlane")),
        "{kinds:?}"
    );
    let machine = documents.iter().find(|d| d["kind"] == "Machine").unwrap();
    assert_eq!(
        machine["metadata"]["labels"]["cluster.x-k8s.io/control-plane"],
        ""
    );
}

#[test]
fn the_environment_fills_variables_no_flag_sets_and_flags_win() {
    let mut request = request(None);
    request.environment = BTreeMap::from([
        ("POD_CIDR".to_string(), r#"["10.10.0.0/16"]"#.to_string()),
        ("KUBERNETES_VERSION".to_string(), "v1.30.0".to_string()),
    ]);
    let documents = documents(&generate_cluster(&request).unwrap());
    assert_eq!(
        documents[0]["spec"]["clusterNetwork"]["pods"]["cidrBlocks"][0],
        "10.10.0.0/16"
    );
    assert_eq!(documents[2]["spec"]["version"], "v1.32.0");
}

#[test]
fn an_unset_variable_is_one_line_naming_it_and_how_to_set_it() {
    let mut request = request(None);
    request.kubernetes_version = None;
    let message = generate_cluster(&request).unwrap_err().to_string();
    assert!(
        message.contains("KUBERNETES_VERSION is not set"),
        "{message}"
    );
    assert!(message.contains("--kubernetes-version"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn unknown_providers_flavors_names_and_versions_are_usage_errors() {
    let mut bad_provider = request(None);
    bad_provider.source = Source::Embedded {
        infrastructure: Some("aws".into()),
        flavor: None,
    };
    let mut bad_name = request(None);
    bad_name.cluster_name = "Dev_1".into();
    let mut bad_version = request(None);
    bad_version.kubernetes_version = Some("latest".into());
    for (request, needle) in [
        (request(Some("nope")), "--flavor"),
        (bad_provider, "--infrastructure"),
        (bad_name, "cluster name"),
        (bad_version, "--kubernetes-version"),
    ] {
        match generate_cluster(&request) {
            Err(Error::Usage(message)) => assert!(message.contains(needle), "{message}"),
            other => panic!("expected a usage error naming {needle}, got {other:?}"),
        }
    }
}

#[test]
fn list_variables_names_the_required_and_the_defaults() {
    let variables = list_variables(&request(None).source).unwrap();
    assert_eq!(
        variables.required,
        [
            "CLUSTER_NAME",
            "CONTROL_PLANE_MACHINE_COUNT",
            "KUBERNETES_VERSION",
            "NAMESPACE",
            "WORKER_MACHINE_COUNT"
        ]
    );
    let rendered = render_variables(&variables);
    assert!(rendered.contains("  - POD_CIDR "), "{rendered}");
    assert!(
        rendered.contains(r#"(defaults to ["192.168.0.0/16"])"#),
        "{rendered}"
    );
}

#[test]
fn a_template_from_a_file_is_rendered_the_same_way() {
    let mut request = request(None);
    request.source = Source::Text {
        name: "mine.yaml".into(),
        text: "kind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-x\ndata:\n  k: ${EXTRA:=e}\n"
            .into(),
    };
    let documents = documents(&generate_cluster(&request).unwrap());
    assert_eq!(documents[0]["metadata"]["name"], "dev-x");
    assert_eq!(documents[0]["data"]["k"], "e");
}

#[test]
fn plugin_infrastructure_names_the_provider_plugin() {
    let mut request = request(None);
    request.source = Source::Embedded {
        infrastructure: Some("plugin:bare-metal".into()),
        flavor: None,
    };
    let documents = documents(&generate_cluster(&request).unwrap());
    assert_eq!(
        kinds(&documents),
        [
            "Cluster/dev",
            "PluginCluster/dev",
            "KubeadmControlPlane/dev-control-plane",
            "PluginMachineTemplate/dev-control-plane",
            "MachineDeployment/dev-md-0",
            "PluginMachineTemplate/dev-md-0",
            "KubeadmConfigTemplate/dev-md-0",
        ]
    );
    for document in &documents {
        if document["kind"] == "PluginCluster" {
            assert_eq!(document["spec"]["plugin"], "bare-metal");
        }
        if document["kind"] == "PluginMachineTemplate" {
            assert_eq!(document["spec"]["template"]["spec"]["plugin"], "bare-metal");
        }
    }
    assert_eq!(
        documents[0]["spec"]["infrastructureRef"]["apiGroup"],
        "infrastructure.corral.dev"
    );

    // Without a plugin's name, the message says how to give one.
    request.source = Source::Embedded {
        infrastructure: Some("plugin".into()),
        flavor: None,
    };
    let message = generate_cluster(&request).unwrap_err().to_string();
    assert!(message.contains("PLUGIN_NAME is not set"), "{message}");
    assert!(
        message.contains("--infrastructure plugin:<ProviderPlugin name>"),
        "{message}"
    );
}
