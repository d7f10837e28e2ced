//! MachineDeployment (upstream `core/webhooks/admission/machinedeployment.go`).

use corral_admission::{ErrorList, FieldError, KindRules, Path};
use serde_json::Value;

use super::{object_at, str_at, validate_int_or_percent};
use crate::labels;

pub struct MachineDeploymentRules;

impl KindRules for MachineDeploymentRules {
    fn default(&self, object: &mut Value, old: Option<&Value>) -> Result<(), String> {
        // A RollingUpdate strategy gets both bounds (the schema's defaults cannot depend on
        // the sibling `type`).
        if str_at(object, "/spec/rollout/strategy/type") == "RollingUpdate" {
            let rolling_update = object_at(object, "/spec/rollout/strategy/rollingUpdate");
            rolling_update.entry("maxSurge").or_insert(1.into());
            rolling_update.entry("maxUnavailable").or_insert(0.into());
        }
        let name = str_at(object, "/metadata/name").to_string();
        super::default_machine_template_owner(
            object,
            old,
            "MachineDeployment",
            labels::MACHINE_DEPLOYMENT_NAME,
            Some(name),
            true,
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
    let mut errors = super::validate_name_is_label_value(new, "must be a valid label value: ");
    errors.extend(super::validate_machine_template_owner(old, new, true));
    let strategy = Path::new(&["spec", "rollout", "strategy"]);
    let rolling_update = new.pointer("/spec/rollout/strategy/rollingUpdate");
    let bound = |name: &str| {
        rolling_update
            .and_then(|r| r.get(name))
            .filter(|v| !v.is_null())
    };
    let (max_unavailable, max_surge) = (bound("maxUnavailable"), bound("maxSurge"));
    if let Some(value) = max_unavailable {
        errors.extend(validate_int_or_percent(
            value,
            &strategy.child("rollingUpdate").child("maxUnavailable"),
        ));
    }
    if let Some(value) = max_surge {
        errors.extend(validate_int_or_percent(
            value,
            &strategy.child("rollingUpdate").child("maxSurge"),
        ));
    }
    if let (Some(Value::Number(unavailable)), Some(Value::Number(surge))) =
        (max_unavailable, max_surge)
        && unavailable.as_i64() == Some(0)
        && surge.as_i64() == Some(0)
    {
        errors.push(FieldError::invalid(
            strategy.child("rollingUpdate"),
            "0",
            "maxUnavailable and maxSurge cannot both be 0",
        ));
    }
    if let Some(value) = new
        .pointer("/spec/remediation/maxInFlight")
        .filter(|v| !v.is_null())
    {
        errors.extend(validate_int_or_percent(
            value,
            &Path::new(&["spec", "remediation", "maxInFlight"]),
        ));
    }
    errors
}
