use std::collections::BTreeMap;

use corral_api::{
    Bootstrap, ContractVersionedObjectReference, MachineDeploymentSpec, MachineSpec,
    MachineTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::*;

fn template(version: &str) -> MachineTemplateSpec {
    MachineTemplateSpec {
        metadata: corral_api::TemplateMetadata {
            labels: BTreeMap::from([("pool".to_owned(), "md".to_owned())]),
            annotations: BTreeMap::from([("note".to_owned(), "kept".to_owned())]),
        },
        spec: MachineSpec {
            cluster_name: "prod".into(),
            version: Some(version.into()),
            bootstrap: Bootstrap {
                config_ref: None,
                data_secret_name: Some("data".into()),
            },
            infrastructure_ref: ContractVersionedObjectReference {
                api_group: "infrastructure.cluster.x-k8s.io".into(),
                kind: "DevMachineTemplate".into(),
                name: "workers".into(),
            },
            min_ready_seconds: Some(5),
            ..Default::default()
        },
    }
}

fn machine_deployment() -> MachineDeployment {
    MachineDeployment {
        metadata: ObjectMeta {
            name: Some("md".into()),
            namespace: Some("default".into()),
            uid: Some("md-uid".into()),
            annotations: Some(BTreeMap::from([
                ("team".to_owned(), "blue".to_owned()),
                (REVISION.to_owned(), "4".to_owned()),
                (ROLLBACK_TO_REVISION.to_owned(), "previous".to_owned()),
            ])),
            ..Default::default()
        },
        spec: MachineDeploymentSpec {
            cluster_name: "prod".into(),
            replicas: Some(3),
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([("pool".to_owned(), "md".to_owned())])),
                match_expressions: None,
            },
            template: template("v1.36.0"),
            ..Default::default()
        },
        status: None,
    }
}

fn plan(name: &str, replicas: i32) -> MachineSetPlan {
    MachineSetPlan {
        name: name.into(),
        current: true,
        create: true,
        replicas_before: 0,
        replicas,
        annotations: BTreeMap::from([
            (REVISION, "5".to_owned()),
            (DESIRED_REPLICAS, "3".to_owned()),
        ]),
        notes: Vec::new(),
    }
}

/// Upstream hashes `MachineTemplateDeepCopyRolloutFields`: what changes in place does not
/// change the hash, what calls for new Machines does.
#[test]
fn the_template_hash_ignores_fields_changed_in_place() {
    let base = template("v1.36.0");
    let mut in_place = base.clone();
    in_place
        .metadata
        .labels
        .insert("extra".into(), "label".into());
    in_place.spec.min_ready_seconds = Some(60);
    in_place.spec.deletion.node_drain_timeout_seconds = Some(30);
    in_place.spec.cluster_name = "other".into();
    assert_eq!(template_hash(&base), template_hash(&in_place));
    assert_ne!(template_hash(&base), template_hash(&template("v1.37.0")));
}

#[test]
fn a_new_machine_set_carries_the_machine_deployments_intent() {
    let md = machine_deployment();
    let ms = desired_machine_set(&md, None, &plan("md-abcde", 2));
    assert_eq!(ms.metadata.name.as_deref(), Some("md-abcde"));
    let unique = format!("{}-abcde", template_hash(&md.spec.template));
    let labels = ms.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[MACHINE_DEPLOYMENT_UNIQUE], unique);
    assert_eq!(labels[MACHINE_DEPLOYMENT_NAME], "md");
    assert_eq!(labels["pool"], "md");
    assert_eq!(
        ms.spec.selector.match_labels.as_ref().unwrap()[MACHINE_DEPLOYMENT_UNIQUE],
        unique
    );
    assert_eq!(
        ms.spec.template.metadata.labels[MACHINE_DEPLOYMENT_UNIQUE],
        unique
    );
    assert_eq!(ms.spec.template.metadata.annotations["note"], "kept");
    let annotations = ms.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        annotations["team"], "blue",
        "MachineDeployment annotations are copied"
    );
    assert_eq!(
        annotations[REVISION], "5",
        "the plan's revision, not the MachineDeployment's"
    );
    assert!(
        !annotations.contains_key(ROLLBACK_TO_REVISION),
        "requests stay on the MachineDeployment"
    );
    assert_eq!(ms.spec.replicas, Some(2));
    assert_eq!(ms.spec.template.spec.version.as_deref(), Some("v1.36.0"));
    let owner = &ms.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("MachineDeployment", Some(true))
    );
}

#[test]
fn an_existing_machine_set_keeps_its_template_and_gets_in_place_fields() {
    let md = machine_deployment();
    let mut existing = desired_machine_set(&md, None, &plan("md-abcde", 2));
    existing.spec.template.spec.version = Some("v1.35.0".into());
    existing
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("added-by-someone".into(), "else".into());
    let mut changed = md.clone();
    changed.spec.template.spec.min_ready_seconds = Some(30);
    let ms = desired_machine_set(&changed, Some(&existing), &plan("md-abcde", 3));
    assert_eq!(
        ms.spec.template.spec.version.as_deref(),
        Some("v1.35.0"),
        "not a rollout field"
    );
    assert_eq!(ms.spec.template.spec.min_ready_seconds, Some(30));
    assert_eq!(
        ms.labels()["added-by-someone"],
        "else",
        "other labels are kept"
    );
    assert_eq!(ms.spec.replicas, Some(3));
}
