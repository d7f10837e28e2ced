use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::{ApiEndpoint, FailureDomain, MachineAddress, MachineAddressType};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

#[test]
fn kube_version_order_matches_apimachinery() {
    // The example order in apimachinery's CompareKubeAwareVersionStrings documentation, highest
    // first, plus non-Kubernetes versions, which sort last and in reverse alphabetical order.
    let ordered = [
        "v10",
        "v2",
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "foo1",
        "foo10",
    ];
    for (i, higher) in ordered.iter().enumerate() {
        assert_eq!(compare_kube_versions(higher, higher), Ordering::Equal);
        for lower in &ordered[i + 1..] {
            assert_eq!(
                compare_kube_versions(higher, lower),
                Ordering::Greater,
                "{higher} > {lower}"
            );
            assert_eq!(
                compare_kube_versions(lower, higher),
                Ordering::Less,
                "{lower} < {higher}"
            );
        }
    }
    assert_eq!(
        compare_kube_versions("v1beta", "v1"),
        Ordering::Less,
        "v1beta is not a Kubernetes version"
    );
}

#[test]
fn contract_version_prefers_v1beta2_and_the_newest_api_version() {
    let both = labels(&[
        ("cluster.x-k8s.io/v1beta1", "v1alpha4_v1beta1"),
        ("cluster.x-k8s.io/v1beta2", "v1beta1_v1beta2"),
    ]);
    assert_eq!(
        ContractVersion::from_crd_labels(&both).unwrap(),
        (ContractVersion::V1Beta2, "v1beta2".to_owned())
    );

    let old = labels(&[("cluster.x-k8s.io/v1beta1", "v1beta1_v1alpha4")]);
    assert_eq!(
        ContractVersion::from_crd_labels(&old).unwrap(),
        (ContractVersion::V1Beta1, "v1beta1".to_owned())
    );

    // An empty label does not count; the next contract is tried.
    let empty = labels(&[
        ("cluster.x-k8s.io/v1beta2", ""),
        ("cluster.x-k8s.io/v1beta1", "v1beta1"),
    ]);
    assert_eq!(
        ContractVersion::from_crd_labels(&empty).unwrap().0,
        ContractVersion::V1Beta1
    );

    let none = labels(&[("cluster.x-k8s.io/provider", "infrastructure-docker")]);
    assert!(matches!(
        ContractVersion::from_crd_labels(&none),
        Err(ContractError::ResolveContractVersion)
    ));
    assert_eq!(
        ContractVersion::V1Beta2.crd_label(),
        "cluster.x-k8s.io/v1beta2"
    );
}

#[test]
fn infrastructure_cluster_reads_v1beta2_fields() {
    let object = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "DevCluster",
        "spec": { "controlPlaneEndpoint": { "host": "10.0.0.1", "port": 6443 } },
        "status": {
            "initialization": { "provisioned": true },
            "failureDomains": [
                { "name": "zone-b" },
                { "name": "zone-a", "controlPlane": true, "attributes": { "rack": "1" } },
            ],
            "conditions": [
                { "type": "Ready", "status": "True", "reason": "Ready", "lastTransitionTime": "2026-01-02T03:04:05Z" },
            ],
        },
    });
    let cluster = InfrastructureCluster::new(&object, ContractVersion::V1Beta2);
    assert_eq!(cluster.provisioned().unwrap(), Some(true));
    assert_eq!(
        cluster.control_plane_endpoint().unwrap(),
        Some(ApiEndpoint {
            host: Some("10.0.0.1".into()),
            port: Some(6443)
        })
    );
    let domains = cluster.failure_domains().unwrap().unwrap();
    let names: Vec<_> = domains.iter().map(|domain| domain.name.as_str()).collect();
    assert_eq!(names, ["zone-a", "zone-b"], "sorted by name");
    assert_eq!(domains[0].control_plane, Some(true));
    assert_eq!(domains[0].attributes["rack"], "1");
    assert_eq!(
        domains[1].control_plane,
        Some(false),
        "unset reads as false"
    );
    let ready = cluster.ready_condition().unwrap().unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("True", Some("Ready"))
    );
}

#[test]
fn infrastructure_cluster_reads_v1beta1_fields() {
    let object = json!({
        "status": {
            "ready": true,
            "failureDomains": {
                "zone-b": { "controlPlane": true },
                "zone-a": { "attributes": { "rack": "1" } },
            },
            "failureReason": "InvalidConfiguration",
            "conditions": [{ "type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z" }],
        },
    });
    let cluster = InfrastructureCluster::new(&object, ContractVersion::V1Beta1);
    assert_eq!(cluster.provisioned().unwrap(), Some(true));
    assert_eq!(
        cluster.failure_domains().unwrap().unwrap(),
        vec![
            FailureDomain {
                name: "zone-a".into(),
                control_plane: Some(false),
                attributes: [("rack".to_owned(), "1".to_owned())].into(),
            },
            FailureDomain {
                name: "zone-b".into(),
                control_plane: Some(true),
                attributes: BTreeMap::new()
            },
        ]
    );
    assert_eq!(
        cluster.failure_reason().unwrap().as_deref(),
        Some("InvalidConfiguration")
    );
    let ready = cluster.ready_condition().unwrap().unwrap();
    assert_eq!(ready.reason, None, "v1beta1 True conditions have no reason");

    // The v1beta2 field means nothing to a v1beta1 reader, and the reverse.
    let v1beta2 = json!({ "status": { "initialization": { "provisioned": true } } });
    assert_eq!(
        InfrastructureCluster::new(&v1beta2, ContractVersion::V1Beta1)
            .provisioned()
            .unwrap(),
        None
    );
    assert_eq!(
        InfrastructureCluster::new(&object, ContractVersion::V1Beta2)
            .provisioned()
            .unwrap(),
        None
    );
}

#[test]
fn absent_and_null_fields_read_as_none() {
    for object in [
        json!({}),
        json!({ "status": null }),
        json!({ "status": { "initialization": null } }),
    ] {
        let cluster = InfrastructureCluster::new(&object, ContractVersion::V1Beta2);
        assert_eq!(cluster.provisioned().unwrap(), None, "{object}");
        assert_eq!(cluster.failure_domains().unwrap(), None, "{object}");
        assert_eq!(cluster.ready_condition().unwrap(), None, "{object}");
    }
}

#[test]
fn fields_of_the_wrong_shape_are_errors_naming_the_path() {
    let object = json!({ "status": { "initialization": { "provisioned": "yes" } } });
    let error = InfrastructureCluster::new(&object, ContractVersion::V1Beta2)
        .provisioned()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot read .status.initialization.provisioned: it is a string, expected a boolean"
    );

    let object = json!({ "status": { "initialization": [true] } });
    let error = InfrastructureCluster::new(&object, ContractVersion::V1Beta2)
        .provisioned()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot read .status.initialization: it is a list, expected an object"
    );

    let object = json!({ "status": { "failureDomains": { "zone-a": {} } } });
    let error = InfrastructureCluster::new(&object, ContractVersion::V1Beta2)
        .failure_domains()
        .unwrap_err();
    assert!(
        matches!(error, ContractError::DecodeField { ref path, .. } if path == ".status.failureDomains")
    );

    let object = json!({ "spec": { "replicas": 3_000_000_000_i64 } });
    let error = ControlPlane::new(&object, ContractVersion::V1Beta2)
        .replicas()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot read .spec.replicas: it is a number, expected a 32-bit integer"
    );

    let object = json!("not an object");
    let error = ControlPlane::new(&object, ContractVersion::V1Beta2)
        .replicas()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot read the object: it is a string, expected an object"
    );
}

#[test]
fn infrastructure_cluster_writes_in_the_contracts_shape() {
    let domains = vec![FailureDomain {
        name: "zone-a".into(),
        control_plane: Some(true),
        attributes: BTreeMap::new(),
    }];
    let endpoint = ApiEndpoint {
        host: Some("example.com".into()),
        port: Some(443),
    };

    let mut cluster = InfrastructureCluster::new(json!({}), ContractVersion::V1Beta2);
    cluster.set_provisioned(true).unwrap();
    cluster.set_control_plane_endpoint(&endpoint).unwrap();
    cluster.set_failure_domains(&domains).unwrap();
    assert_eq!(cluster.failure_domains().unwrap().unwrap(), domains);
    assert_eq!(
        cluster.into_inner(),
        json!({
            "spec": { "controlPlaneEndpoint": { "host": "example.com", "port": 443 } },
            "status": {
                "initialization": { "provisioned": true },
                "failureDomains": [{ "name": "zone-a", "controlPlane": true }],
            },
        })
    );

    let mut object = json!({ "status": null });
    let mut cluster = InfrastructureCluster::new(&mut object, ContractVersion::V1Beta1);
    cluster.set_provisioned(true).unwrap();
    cluster.set_failure_domains(&domains).unwrap();
    assert_eq!(cluster.failure_domains().unwrap().unwrap(), domains);
    assert_eq!(
        object,
        json!({ "status": { "ready": true, "failureDomains": { "zone-a": { "controlPlane": true } } } })
    );
}

#[test]
fn writes_through_a_non_object_parent_fail() {
    let mut object = json!({ "status": { "initialization": "done" } });
    let error = InfrastructureMachine::new(&mut object, ContractVersion::V1Beta2)
        .set_provisioned(true)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot write .status.initialization.provisioned: .status.initialization is a string, not an object"
    );
    assert_eq!(
        object,
        json!({ "status": { "initialization": "done" } }),
        "nothing changed"
    );

    let mut object = json!({ "status": 7 });
    let error = InfrastructureMachine::new(&mut object, ContractVersion::V1Beta2)
        .set_provisioned(true)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot write .status.initialization.provisioned: .status is a number, not an object"
    );
}

#[test]
fn infrastructure_machine_round_trips() {
    let addresses = vec![
        MachineAddress {
            type_: MachineAddressType::InternalIp,
            address: "10.0.0.5".into(),
        },
        MachineAddress {
            type_: MachineAddressType::Hostname,
            address: "worker-1".into(),
        },
    ];
    let mut machine = InfrastructureMachine::new(Value::Null, ContractVersion::V1Beta2);
    assert_eq!(machine.provider_id().unwrap(), None);
    machine.set_provider_id("in-memory://worker-1").unwrap();
    machine.set_addresses(&addresses).unwrap();
    machine.set_failure_domain("zone-a").unwrap();
    machine.set_provisioned(true).unwrap();

    assert_eq!(
        machine.provider_id().unwrap().as_deref(),
        Some("in-memory://worker-1")
    );
    assert_eq!(machine.addresses().unwrap(), Some(addresses));
    assert_eq!(machine.failure_domain().unwrap().as_deref(), Some("zone-a"));
    assert_eq!(machine.provisioned().unwrap(), Some(true));
    assert_eq!(
        machine.into_inner()["status"]["addresses"][0],
        json!({ "type": "InternalIP", "address": "10.0.0.5" })
    );

    let empty_id = json!({ "spec": { "providerID": "", "failureDomain": "zone-b" } });
    let machine = InfrastructureMachine::new(&empty_id, ContractVersion::V1Beta1);
    assert_eq!(
        machine.provider_id().unwrap(),
        None,
        "an empty providerID is unset"
    );
    assert_eq!(
        machine.v1beta1_spec_failure_domain().unwrap().as_deref(),
        Some("zone-b")
    );
}

#[test]
fn bootstrap_config_reads_both_contracts() {
    let v1beta2 = json!({
        "status": { "initialization": { "dataSecretCreated": true }, "dataSecretName": "worker-1-bootstrap" },
    });
    let config = BootstrapConfig::new(&v1beta2, ContractVersion::V1Beta2);
    assert_eq!(config.data_secret_created().unwrap(), Some(true));
    assert_eq!(
        config.data_secret_name().unwrap().as_deref(),
        Some("worker-1-bootstrap")
    );

    let v1beta1 = json!({ "status": { "ready": true, "dataSecretName": "" } });
    let config = BootstrapConfig::new(&v1beta1, ContractVersion::V1Beta1);
    assert_eq!(config.data_secret_created().unwrap(), Some(true));
    assert_eq!(
        config.data_secret_name().unwrap(),
        None,
        "an empty name is unset"
    );

    let mut config = BootstrapConfig::new(json!({}), ContractVersion::V1Beta2);
    config.set_data_secret_name("secret").unwrap();
    config.set_data_secret_created(true).unwrap();
    assert_eq!(config.into_inner(), v1beta2_with_name("secret"));
}

fn v1beta2_with_name(name: &str) -> Value {
    json!({ "status": { "initialization": { "dataSecretCreated": true }, "dataSecretName": name } })
}

#[test]
fn control_plane_reads_replicas_and_versions() {
    let object = json!({
        "spec": {
            "replicas": 3,
            "version": "v1.36.0",
            "controlPlaneEndpoint": { "host": "cp.example.com", "port": 6443 },
            "rollout": { "after": "2026-05-01T00:00:00Z" },
            "machineTemplate": { "spec": { "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "cp",
            } } },
        },
        "status": {
            "initialization": { "controlPlaneInitialized": true },
            "selector": "cluster.x-k8s.io/control-plane",
            "replicas": 3,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "upToDateReplicas": 1,
            "versions": [{ "version": "v1.35.2", "replicas": 2 }, { "version": "v1.36.0", "replicas": 1 }],
            "version": "v1.35.2",
            "conditions": [{ "type": "Available", "status": "False", "reason": "NotAvailable" }],
        },
    });
    let control_plane = ControlPlane::new(&object, ContractVersion::V1Beta2);
    assert_eq!(control_plane.initialized().unwrap(), Some(true));
    assert_eq!(control_plane.replicas().unwrap(), Some(3));
    assert_eq!(control_plane.status_replicas().unwrap(), Some(3));
    assert_eq!(control_plane.ready_replicas().unwrap(), Some(2));
    assert_eq!(control_plane.available_replicas().unwrap(), Some(2));
    assert_eq!(control_plane.up_to_date_replicas().unwrap(), Some(1));
    assert_eq!(
        control_plane.selector().unwrap().as_deref(),
        Some("cluster.x-k8s.io/control-plane")
    );
    assert_eq!(control_plane.version().unwrap().as_deref(), Some("v1.36.0"));
    assert_eq!(
        control_plane.status_version().unwrap().as_deref(),
        Some("v1.35.2")
    );
    let versions = control_plane.status_versions().unwrap().unwrap();
    assert_eq!(
        (versions[0].version.as_str(), versions[0].replicas),
        ("v1.35.2", Some(2))
    );
    assert_eq!(
        control_plane
            .control_plane_endpoint()
            .unwrap()
            .unwrap()
            .port,
        Some(6443)
    );
    assert!(control_plane.rollout_after().unwrap().is_some());
    let template = control_plane
        .machine_template_infrastructure_ref()
        .unwrap()
        .unwrap();
    assert_eq!(template.kind, "DevMachineTemplate");
    let available = control_plane.available_condition().unwrap().unwrap();
    assert_eq!(available.status, "False");
}

#[test]
fn control_plane_v1beta1_uses_the_old_fields() {
    let object = json!({
        "status": { "initialized": true, "updatedReplicas": 2, "unavailableReplicas": 1, "availableReplicas": 5 },
    });
    let control_plane = ControlPlane::new(&object, ContractVersion::V1Beta1);
    assert_eq!(control_plane.initialized().unwrap(), Some(true));
    assert_eq!(control_plane.up_to_date_replicas().unwrap(), Some(2));
    assert_eq!(
        control_plane.v1beta1_unavailable_replicas().unwrap(),
        Some(1)
    );
    assert_eq!(
        control_plane.available_replicas().unwrap(),
        None,
        "not part of the v1beta1 contract"
    );

    let mut control_plane = ControlPlane::new(json!({}), ContractVersion::V1Beta1);
    control_plane.set_initialized(true).unwrap();
    control_plane.set_replicas(3).unwrap();
    control_plane.set_version("v1.36.0").unwrap();
    control_plane
        .set_control_plane_endpoint(&ApiEndpoint {
            host: Some("h".into()),
            port: Some(1),
        })
        .unwrap();
    assert_eq!(
        control_plane.into_inner(),
        json!({
            "spec": { "replicas": 3, "version": "v1.36.0", "controlPlaneEndpoint": { "host": "h", "port": 1 } },
            "status": { "initialized": true },
        })
    );
}

#[test]
fn views_work_on_dynamic_objects() {
    let mut object: kube::core::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "DevMachine",
        "metadata": { "name": "worker-1", "namespace": "default" },
        "spec": { "providerID": "in-memory://worker-1" },
    }))
    .unwrap();
    let mut machine = InfrastructureMachine::new(&mut object.data, ContractVersion::V1Beta2);
    assert_eq!(
        machine.provider_id().unwrap().as_deref(),
        Some("in-memory://worker-1")
    );
    machine.set_provisioned(true).unwrap();
    assert_eq!(
        object.data["status"]["initialization"]["provisioned"],
        json!(true)
    );
}
