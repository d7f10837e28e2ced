//! MachineHealthCheck (upstream `core/webhooks/admission/machinehealthcheck.go`). The default
//! of `checks.nodeStartupTimeoutSeconds` (600) is the schema's.

use corral_admission::selector::LabelSelector;
use corral_admission::{ErrorList, FieldError, KindRules, Path};
use serde_json::Value;

use super::{default_cluster_name_label, str_at, validate_cluster_name_unchanged};
use crate::labels;
use crate::machine_health_check::MIN_NODE_STARTUP_TIMEOUT_SECONDS;

pub struct MachineHealthCheckRules;

impl KindRules for MachineHealthCheckRules {
    fn default(&self, object: &mut Value, _old: Option<&Value>) -> Result<(), String> {
        default_cluster_name_label(object);
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
    let selector = new.pointer("/spec/selector").cloned().unwrap_or_default();
    match LabelSelector::from_label_selector_json(&selector) {
        Err(error) => errors.push(FieldError::invalid(
            spec.child("selector"),
            selector.clone(),
            error.to_string(),
        )),
        Ok(parsed) if parsed.is_everything() => errors.push(FieldError::required(
            spec.child("selector"),
            "selector must not be empty",
        )),
        Ok(_) => {}
    }
    let selected_cluster = selector
        .pointer("/matchLabels")
        .and_then(|labels| labels.get(labels::CLUSTER_NAME))
        .and_then(Value::as_str);
    if selected_cluster.is_some_and(|cluster| cluster != str_at(new, "/spec/clusterName")) {
        errors.push(FieldError::invalid(
            spec.child("selector"),
            selector,
            "cannot specify a cluster selector other than the one specified by ClusterName",
        ));
    }
    errors.extend(validate_cluster_name_unchanged(old, new));
    let timeout = new
        .pointer("/spec/checks/nodeStartupTimeoutSeconds")
        .and_then(Value::as_i64);
    if let Some(timeout) = timeout
        && timeout != 0
        && timeout < i64::from(MIN_NODE_STARTUP_TIMEOUT_SECONDS)
    {
        errors.push(FieldError::invalid(
            spec.child("checks").child("nodeStartupTimeoutSeconds"),
            timeout,
            format!("must be at least {MIN_NODE_STARTUP_TIMEOUT_SECONDS}s"),
        ));
    }
    if let Some(bound) = new
        .pointer("/spec/remediation/triggerIf/unhealthyLessThanOrEqualTo")
        .filter(|bound| !bound.is_null())
    {
        errors.extend(super::validate_int_or_percent(
            bound,
            &spec
                .child("remediation")
                .child("triggerIf")
                .child("unhealthyLessThanOrEqualTo"),
        ));
    }
    errors
}
