use serde_json::json;

use super::*;

fn messages(errors: ErrorList) -> Vec<String> {
    errors.iter().map(FieldError::message).collect()
}

#[test]
fn files_have_one_source_and_unique_paths() {
    let spec = json!({"files": [
        {"path": "/a", "content": "x", "contentFrom": {"secret": {"name": "s", "key": "k"}}},
        {"path": "/a", "contentFrom": {"secret": {"name": ""}}},
    ]});
    let errors = messages(validate_config_spec(&spec, false, &Path::new(&["spec"])));
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(
        errors[0].starts_with("spec.files[0]: Invalid value: "),
        "{}",
        errors[0]
    );
    assert!(
        errors[0]
            .ends_with(": only one of content or contentFrom may be specified for a single file")
    );
    assert_eq!(
        errors[1],
        "spec.files[1].contentFrom.secret.name: Required value: secret file source must specify non-empty secret name"
    );
    assert_eq!(
        errors[2],
        "spec.files[1].contentFrom.secret.key: Required value: secret file source must specify non-empty secret key"
    );
    assert!(errors[3].starts_with("spec.files[1].path: Invalid value: "));
    assert!(errors[3].ends_with(": path property must be unique among all files"));
}

fn control_plane(version: &str) -> Value {
    json!({"metadata": {"name": "cp"}, "spec": {"replicas": 3, "version": version,
        "machineTemplate": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "cp"}}},
        "kubeadmConfigSpec": {"clusterConfiguration": {"etcd": {"local": {"dataDir": "/var/lib/etcd"}}}}}})
}

#[test]
fn control_plane_updates_change_only_allowed_fields_and_skip_no_minor() {
    let old = control_plane("v1.33.1");
    assert!(
        KubeadmControlPlaneRules
            .validate_update(&old, &old)
            .is_empty()
    );

    let mut new = control_plane("v1.35.0");
    new["spec"]["kubeadmConfigSpec"]["clusterConfiguration"]["certificatesDir"] = json!("/other");
    new["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(
        messages(KubeadmControlPlaneRules.validate_update(&old, &new)),
        [
            "spec.kubeadmConfigSpec.clusterConfiguration.certificatesDir: Forbidden: cannot be modified",
            "spec.version: Forbidden: cannot update Kubernetes version from v1.33.1 to v1.35.0",
        ]
    );
    // Upstream lets the version go down.
    assert!(
        KubeadmControlPlaneRules
            .validate_update(&old, &control_plane("v1.32.0"))
            .is_empty()
    );
}

#[test]
fn control_plane_replicas_and_surge() {
    let mut object = control_plane("v1.33.1");
    object["spec"]["replicas"] = json!(2);
    object["spec"]["rollout"] =
        json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}}});
    assert_eq!(
        messages(KubeadmControlPlaneRules.validate_create(&object)),
        [
            "spec.replicas: Forbidden: cannot be an even number when etcd is stacked",
            "spec.rollout.strategy.rollingUpdate: Required value: when KubeadmControlPlane is configured to scale-in, replica count needs to be at least 3",
        ]
    );
}
