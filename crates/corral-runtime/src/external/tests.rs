use std::collections::BTreeMap;

use corral_api::ContractVersionedObjectReference;
use corral_api::contract::ContractVersion;
use kube::api::{ApiResource, DynamicObject};
use serde_json::json;

use super::*;

fn template() -> ExternalObject {
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "infrastructure.example.com/v1beta2",
        "kind": "FooMachineTemplate",
        "metadata": { "name": "tpl", "namespace": "ns" },
        "spec": { "template": {
            "metadata": {
                "labels": { "from": "template", "shared": "template" },
                "annotations": { "note": "template" },
            },
            "spec": { "size": "large" },
        }},
    }))
    .unwrap();
    ExternalObject {
        object,
        kind: ResolvedKind {
            resource: ApiResource {
                group: "infrastructure.example.com".into(),
                version: "v1beta2".into(),
                api_version: "infrastructure.example.com/v1beta2".into(),
                kind: "FooMachineTemplate".into(),
                plural: "foomachinetemplates".into(),
            },
            contract: ContractVersion::V1Beta2,
        },
    }
}

/// Upstream `controllers/external/util_test.go` (`TestGenerateTemplate`): the template's
/// metadata and spec, the given labels winning, the cluster name, where it was cloned from.
#[test]
fn generate_from_template_copies_the_template_and_says_where_it_came_from() {
    let reference = ContractVersionedObjectReference {
        api_group: "infrastructure.example.com".into(),
        kind: "FooMachineTemplate".into(),
        name: "tpl".into(),
    };
    let owner = OwnerReference {
        api_version: "cluster.x-k8s.io/v1beta2".into(),
        kind: "MachineSet".into(),
        name: "ms".into(),
        uid: "u".into(),
        controller: None,
        block_owner_deletion: None,
    };
    let request = CreateFromTemplate {
        template: &reference,
        namespace: "ns",
        name: "ms-abc12".into(),
        cluster_name: "prod",
        labels: BTreeMap::from([("shared".to_owned(), "given".to_owned())]),
        annotations: BTreeMap::new(),
        owner: Some(owner.clone()),
    };
    let object = generate_from_template(&template(), &request).unwrap();
    assert_eq!(object.metadata.name.as_deref(), Some("ms-abc12"));
    assert_eq!(object.metadata.namespace.as_deref(), Some("ns"));
    let labels = object.metadata.labels.unwrap();
    assert_eq!(labels["from"], "template");
    assert_eq!(labels["shared"], "given");
    assert_eq!(labels["cluster.x-k8s.io/cluster-name"], "prod");
    let annotations = object.metadata.annotations.unwrap();
    assert_eq!(annotations["note"], "template");
    assert_eq!(annotations["cluster.x-k8s.io/cloned-from-name"], "tpl");
    assert_eq!(
        annotations["cluster.x-k8s.io/cloned-from-groupkind"],
        "FooMachineTemplate.infrastructure.example.com"
    );
    assert_eq!(object.metadata.owner_references, Some(vec![owner]));
    assert_eq!(object.data, json!({ "spec": { "size": "large" } }));
}

#[test]
fn a_template_without_spec_template_generates_nothing() {
    let mut bare = template();
    bare.object.data = json!({ "spec": {} });
    let reference = ContractVersionedObjectReference::default();
    let request = CreateFromTemplate {
        template: &reference,
        namespace: "ns",
        name: "x".into(),
        cluster_name: "c",
        labels: BTreeMap::new(),
        annotations: BTreeMap::new(),
        owner: None,
    };
    assert!(generate_from_template(&bare, &request).is_none());
}

#[test]
fn api_group_of_splits_api_versions() {
    assert_eq!(api_group_of("cluster.x-k8s.io/v1beta2"), "cluster.x-k8s.io");
    assert_eq!(api_group_of("v1"), "");
}

#[test]
fn conditions_of_a_provider_object_fill_in_missing_reasons() {
    let mut object = template();
    object.object.data = json!({ "status": { "conditions": [
        { "type": "Ready", "status": "True" },
        { "type": "RollingOut", "status": "False", "reason": "NotRollingOut", "message": "m" },
        { "status": "no type" },
    ]}});
    let conditions = object.conditions();
    assert_eq!(conditions.len(), 2);
    assert_eq!(conditions[0].reason, crate::conditions::NO_REASON_REPORTED);
    assert_eq!(conditions[1].message, "m");
}
