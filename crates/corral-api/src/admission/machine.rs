//! Machine (upstream `core/webhooks/admission/machine.go`).

use corral_admission::{ErrorList, FieldError, KindRules, Path};
use serde_json::Value;

use super::{default_cluster_name_label, default_version, str_at};
use crate::labels;

pub struct MachineRules;

impl KindRules for MachineRules {
    fn default(&self, object: &mut Value, _old: Option<&Value>) -> Result<(), String> {
        default_cluster_name_label(object);
        default_version(object, "/spec/version");
        Ok(())
    }

    fn validate_create(&self, object: &Value) -> ErrorList {
        validate(None, object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        validate(Some(old), new)
    }
}

fn validate(old: Option<&Value>, new: &Value) -> ErrorList {
    let spec = Path::new(&["spec"]);
    let mut errors = ErrorList::new();
    let bootstrap = new.pointer("/spec/bootstrap");
    let has = |field: &str| {
        bootstrap
            .and_then(|b| b.get(field))
            .is_some_and(|v| !v.is_null())
    };
    let pool_owned = new
        .pointer("/metadata/labels")
        .and_then(|l| l.get(labels::MACHINE_POOL_NAME))
        .is_some();
    if !has("configRef") && !has("dataSecretName") && !pool_owned {
        errors.push(FieldError::required(
            spec.child("bootstrap"),
            "expected either spec.bootstrap.dataSecretName or spec.bootstrap.configRef to be populated",
        ));
    }
    errors.extend(super::validate_cluster_name_unchanged(old, new));
    errors.extend(super::validate_version(
        str_at(new, "/spec/version"),
        &spec.child("version"),
    ));
    errors.extend(super::validate_machine_taints(
        new.pointer("/spec/taints"),
        &spec.child("taints"),
    ));
    errors
}
