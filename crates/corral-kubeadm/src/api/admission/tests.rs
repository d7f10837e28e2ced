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

/// blang/semver's `ParseTolerant`, and `ParseTolerantImageTag`'s `_` for `+`.
#[test]
fn versions_and_image_tags_parse_tolerantly() {
    let parsed = |text: &str| parse_tolerant(text).map(|v| v.to_string());
    assert_eq!(parsed(" v1.8 ").as_deref(), Ok("1.8.0"));
    assert_eq!(parsed("v01.02.3").as_deref(), Ok("1.2.3"));
    assert!(
        parsed("1.8-rc.1").is_err(),
        "a short version has no pre-release"
    );
    assert!(parsed("latest").is_err());
    assert_eq!(
        parse_tolerant_image_tag("v1.11.1_build.1")
            .map(|v| v.to_string())
            .as_deref(),
        Ok("1.11.1+build.1")
    );
    assert!(image_tag_is_valid("v1.11.1_build-1.x"));
    assert!(image_tag_is_valid(""));
    assert!(!image_tag_is_valid("v1.11.1+build"));
}

/// corefile-migration's `ValidUpMigration`, behind an unchanged version and the skip annotation.
#[test]
fn coredns_moves_only_up_its_migration_chain() {
    let with_tag = |tag: &str| {
        let mut object = control_plane("v1.33.1");
        object["spec"]["kubeadmConfigSpec"] =
            json!({"clusterConfiguration": {"dns": {"imageTag": tag}}});
        object
    };
    assert!(validate_coredns_version(&with_tag("v1.10.1"), &with_tag("v1.12.0")).is_empty());
    assert!(validate_coredns_version(&with_tag("v1.6.8"), &with_tag("1.6.8-rc.0")).is_empty());
    assert_eq!(
        messages(validate_coredns_version(
            &with_tag("v1.12.0"),
            &with_tag("v1.11.4")
        )),
        [
            "spec.kubeadmConfigSpec.clusterConfiguration.dns.imageTag: Forbidden: cannot migrate CoreDNS up to '1.11.4' from '1.12.0': cannot migrate up to '1.11.4' from '1.12.0'"
        ]
    );
    assert_eq!(
        messages(validate_coredns_version(
            &with_tag("v1.6.8"),
            &with_tag("v1.7.0")
        )),
        [
            "spec.kubeadmConfigSpec.clusterConfiguration.dns.imageTag: Forbidden: cannot migrate CoreDNS up to '1.7.0' from '1.6.8': start version '1.6.8' not supported"
        ]
    );
    let mut skipped = with_tag("v9.9.9");
    skipped["metadata"]["annotations"] = json!({ (KCP_SKIP_COREDNS): "" });
    assert!(validate_coredns_version(&with_tag("v1.12.0"), &skipped).is_empty());
}

#[test]
fn control_plane_scale_is_odd_and_positive() {
    let mut object = control_plane("v1.33.1");
    for (replicas, allowed) in [(3, true), (2, false), (0, false), (-1, false)] {
        object["spec"]["replicas"] = json!(replicas);
        assert_eq!(
            KubeadmControlPlaneRules.validate_scale(&object).is_ok(),
            allowed,
            "{replicas}"
        );
    }
    object["spec"]["kubeadmConfigSpec"] = json!({"clusterConfiguration": {"etcd": {"external": {
        "endpoints": ["https://etcd:2379"], "caFile": "/ca", "certFile": "/c", "keyFile": "/k"}}}});
    object["spec"]["replicas"] = json!(2);
    assert!(KubeadmControlPlaneRules.validate_scale(&object).is_ok());
}
