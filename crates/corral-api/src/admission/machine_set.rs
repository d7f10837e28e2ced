//! MachineSet (upstream `core/webhooks/admission/machineset.go`).

use corral_admission::{ErrorList, KindRules};
use serde_json::Value;

use super::str_at;
use crate::labels;

pub struct MachineSetRules;

impl KindRules for MachineSetRules {
    fn default(&self, object: &mut Value, old: Option<&Value>) -> Result<(), String> {
        let name = labels::format_label_value(str_at(object, "/metadata/name"));
        super::default_machine_template_owner(
            object,
            old,
            "MachineSet",
            labels::MACHINE_SET_NAME,
            Some(name),
            false,
        )
    }

    fn validate_create(&self, object: &Value) -> ErrorList {
        validate(None, object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        validate(Some(old), new)
    }
}

fn validate(old: Option<&Value>, new: &Value) -> ErrorList {
    super::validate_machine_template_owner(old, new, false)
}
