use std::collections::BTreeMap;

use corral_api::annotations::REVISION;
use corral_api::{MachineDeploymentSpec, MachineSetSpec, MachineSpec, MachineTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn template(version: &str) -> MachineTemplateSpec {
    MachineTemplateSpec {
        metadata: Default::default(),
        spec: MachineSpec {
            cluster_name: "prod".into(),
            version: Some(version.into()),
            ..Default::default()
        },
    }
}

fn machine_set(name: &str, revision: &str, version: &str) -> MachineSet {
    let mut template = template(version);
    template
        .metadata
        .labels
        .insert("machine-template-hash".into(), format!("{name}-hash"));
    MachineSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(BTreeMap::from([(REVISION.to_owned(), revision.to_owned())])),
            ..Default::default()
        },
        spec: MachineSetSpec {
            template,
            replicas: Some(0),
            ..Default::default()
        },
        status: None,
    }
}

fn machine_deployment(version: &str, annotations: &[(&str, &str)]) -> MachineDeployment {
    MachineDeployment {
        metadata: ObjectMeta {
            name: Some("md".into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        spec: MachineDeploymentSpec {
            cluster_name: "prod".into(),
            template: template(version),
            ..Default::default()
        },
        status: None,
    }
}

#[test]
fn requests_parse_as_previous_or_a_revision() {
    assert_eq!(parse_rollback_request("previous"), Ok(None));
    assert_eq!(parse_rollback_request(" Previous "), Ok(None));
    assert_eq!(parse_rollback_request("0"), Ok(None));
    assert_eq!(parse_rollback_request("3"), Ok(Some(3)));
    assert!(parse_rollback_request("-1").is_err());
    assert!(parse_rollback_request("last").is_err());
    assert!(parse_rollback_request("").is_err());
}

#[test]
fn history_limit_defaults_to_upstream_none() {
    assert_eq!(
        revision_history_limit(&machine_deployment("v1", &[])),
        Ok(0)
    );
    assert_eq!(
        revision_history_limit(&machine_deployment("v1", &[(REVISION_HISTORY_LIMIT, "2")])),
        Ok(2)
    );
    assert!(
        revision_history_limit(&machine_deployment(
            "v1",
            &[(REVISION_HISTORY_LIMIT, "two")]
        ))
        .is_err()
    );
}

#[test]
fn no_annotation_no_rollback() {
    let mut md = machine_deployment("v2", &[]);
    assert_eq!(apply_rollback(&mut md, &[]), None);
}

#[test]
fn previous_takes_the_template_of_the_revision_before_the_latest() {
    let old = machine_set("md-aaaaa", "1", "v1");
    let current = machine_set("md-bbbbb", "2", "v2");
    let mut md = machine_deployment("v2", &[(ROLLBACK_TO_REVISION, "previous")]);
    let outcome = apply_rollback(&mut md, &[&old, &current]);
    assert_eq!(
        outcome,
        Some(RollbackOutcome::RolledBack {
            revision: 1,
            machine_set: "md-aaaaa".into()
        })
    );
    assert_eq!(md.spec.template.spec.version.as_deref(), Some("v1"));
    assert!(
        !md.annotations().contains_key(ROLLBACK_TO_REVISION),
        "consumed"
    );
    assert!(
        !md.spec
            .template
            .metadata
            .labels
            .contains_key("machine-template-hash"),
        "the MachineSet's unique label stays on the MachineSet"
    );
}

#[test]
fn a_revision_that_is_gone_or_current_changes_nothing() {
    let current = machine_set("md-bbbbb", "2", "v2");
    let mut md = machine_deployment("v2", &[(ROLLBACK_TO_REVISION, "1")]);
    let Some(RollbackOutcome::Refused(message)) = apply_rollback(&mut md, &[&current]) else {
        panic!("a missing revision is refused");
    };
    assert!(
        message.contains("no MachineSet has revision 1"),
        "{message}"
    );
    assert!(message.contains(REVISION_HISTORY_LIMIT), "{message}");
    assert!(!md.annotations().contains_key(ROLLBACK_TO_REVISION));
    assert_eq!(md.spec.template.spec.version.as_deref(), Some("v2"));

    let mut md = machine_deployment("v2", &[(ROLLBACK_TO_REVISION, "2")]);
    assert_eq!(
        apply_rollback(&mut md, &[&current]),
        Some(RollbackOutcome::AlreadyCurrent { revision: 2 })
    );

    let mut md = machine_deployment("v2", &[(ROLLBACK_TO_REVISION, "latest")]);
    assert!(matches!(
        apply_rollback(&mut md, &[&current]),
        Some(RollbackOutcome::Refused(_))
    ));
}
