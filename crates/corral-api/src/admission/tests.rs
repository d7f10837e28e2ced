use corral_admission::KindRules;
use serde_json::{Value, json};

use super::cluster::ClusterRules;
use super::machine::MachineRules;
use super::machine_deployment::MachineDeploymentRules;
use super::machine_set::MachineSetRules;

fn messages(errors: Vec<corral_admission::FieldError>) -> Vec<String> {
    errors.iter().map(|e| e.message()).collect()
}

fn machine_deployment(spec: Value) -> Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": {"name": "md", "namespace": "default"}, "spec": spec})
}

fn template_spec() -> Value {
    json!({"clusterName": "dev", "version": "v1.33.1",
        "bootstrap": {"dataSecretName": "data"},
        "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "t"}})
}

#[test]
fn machine_deployment_defaults_as_upstream() {
    let mut object = machine_deployment(json!({"clusterName": "dev",
        "template": {"spec": {"clusterName": "dev", "version": "1.33.1"}}}));
    MachineDeploymentRules.default(&mut object, None).unwrap();
    assert_eq!(
        object["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"],
        "dev"
    );
    assert_eq!(object["spec"]["replicas"], 1);
    assert_eq!(
        object["spec"]["selector"]["matchLabels"],
        json!({"cluster.x-k8s.io/cluster-name": "dev", "cluster.x-k8s.io/deployment-name": "md"})
    );
    assert_eq!(
        object["spec"]["template"]["metadata"]["labels"],
        object["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(object["spec"]["template"]["spec"]["version"], "v1.33.1");
}

#[test]
fn replicas_default_from_the_autoscaler_range() {
    let annotated = |replicas: Option<i64>| {
        let mut object =
            machine_deployment(json!({"clusterName": "dev", "template": {"spec": {}}}));
        object["metadata"]["annotations"] = json!({
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "3",
            "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "7",
        });
        if let Some(replicas) = replicas {
            object["spec"]["replicas"] = replicas.into();
        }
        object
    };
    // (old replicas, defaulted replicas): upstream's TestCalculateMachineDeploymentReplicas.
    for (old, expected) in [(None, 3), (Some(1), 3), (Some(5), 5), (Some(9), 7)] {
        let old = old.map(|replicas| annotated(Some(replicas)));
        let mut object = annotated(None);
        MachineDeploymentRules
            .default(&mut object, old.as_ref())
            .unwrap();
        assert_eq!(object["spec"]["replicas"], expected, "old {old:?}");
    }
    let mut object = annotated(None);
    object["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] =
        json!("x");
    let error = MachineDeploymentRules
        .default(&mut object, None)
        .unwrap_err();
    assert!(error.contains("could not parse the value of the \"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size\" annotation"), "{error}");
}

#[test]
fn machine_deployment_validation_as_upstream() {
    let valid = machine_deployment(json!({"clusterName": "dev", "replicas": 1,
        "selector": {"matchLabels": {"pool": "a"}},
        "template": {"metadata": {"labels": {"pool": "a"}}, "spec": template_spec()}}));
    assert!(MachineDeploymentRules.validate_create(&valid).is_empty());

    let mut banana = valid.clone();
    banana["spec"]["template"]["spec"]["version"] = json!("banana");
    assert_eq!(
        messages(MachineDeploymentRules.validate_create(&banana)),
        [
            "spec.template.spec.version: Invalid value: \"banana\": must start with v",
            "spec.template.spec.version: Invalid value: \"banana\": must be a valid semantic version",
        ]
    );

    let mut moved = valid.clone();
    moved["spec"]["clusterName"] = json!("other");
    moved["spec"]["template"]["spec"]["clusterName"] = json!("other");
    assert_eq!(
        messages(MachineDeploymentRules.validate_update(&valid, &moved)),
        ["spec.clusterName: Forbidden: field is immutable"]
    );

    let mut mismatch = valid.clone();
    mismatch["spec"]["selector"] = json!({"matchLabels": {"pool": "b"}});
    assert_eq!(
        messages(MachineDeploymentRules.validate_create(&mismatch)),
        ["spec.template.metadata.labels: Forbidden: must match spec.selector \"pool=b\""]
    );

    let mut bounds = valid.clone();
    bounds["spec"]["rollout"] = json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "5"}}});
    assert_eq!(
        messages(MachineDeploymentRules.validate_create(&bounds)),
        [
            "spec.rollout.strategy.rollingUpdate.maxUnavailable: Invalid value: \"5\": must be either an int or a percentage: invalid value for IntOrString: invalid type: string is not a percentage"
        ]
    );
}

#[test]
fn machine_set_selector_mismatch_is_invalid_with_the_labels() {
    let object = json!({"metadata": {"name": "ms"}, "spec": {"clusterName": "dev",
        "selector": {"matchLabels": {"pool": "b"}},
        "template": {"metadata": {"labels": {"pool": "a"}}, "spec": template_spec()}}});
    assert_eq!(
        messages(MachineSetRules.validate_create(&object)),
        [
            "spec.template.metadata.labels: Invalid value: {\"pool\":\"a\"}: must match spec.selector \"pool=b\""
        ]
    );
}

#[test]
fn machine_needs_bootstrap_data_and_keeps_its_cluster() {
    let old = json!({"metadata": {"name": "m"}, "spec": template_spec()});
    let mut new = old.clone();
    new["spec"]["clusterName"] = json!("prod");
    new["spec"]["bootstrap"] = json!({});
    assert_eq!(
        messages(MachineRules.validate_update(&old, &new)),
        [
            "spec.bootstrap: Required value: expected either spec.bootstrap.dataSecretName or spec.bootstrap.configRef to be populated",
            "spec.clusterName: Forbidden: field is immutable",
        ]
    );
}

#[test]
fn cluster_cidr_blocks_and_references() {
    let object = json!({"metadata": {"name": "dev"}, "spec": {
        "clusterNetwork": {"pods": {"cidrBlocks": ["10.0.0.0/16", "not-a-cidr"]},
            "services": {"cidrBlocks": ["fd00::/108", "10.0.0.0/33"]}}}});
    assert_eq!(
        messages(ClusterRules.validate_create(&object)),
        [
            "spec: Forbidden: one of spec.controlPlaneRef, spec.infrastructureRef or spec.topology must be set",
            "spec.clusterNetwork.pods.cidrBlocks[1]: Invalid value: \"not-a-cidr\": invalid CIDR address: not-a-cidr",
            "spec.clusterNetwork.services.cidrBlocks[1]: Invalid value: \"10.0.0.0/33\": invalid CIDR address: 10.0.0.0/33",
        ]
    );
}
