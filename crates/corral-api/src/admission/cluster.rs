//! Cluster (upstream `core/webhooks/admission/cluster.go`). Corral serves no ClusterClass yet,
//! so it answers a topology as upstream does with its `ClusterTopology` gate off, its default.

use corral_admission::{ErrorList, FieldError, KindRules, Path};
use serde_json::Value;

use super::{default_version, str_at};

pub struct ClusterRules;

impl KindRules for ClusterRules {
    fn default(&self, object: &mut Value, _old: Option<&Value>) -> Result<(), String> {
        if is_set(object, "/spec/topology") {
            match object.pointer_mut("/spec/topology/version") {
                Some(Value::String(_)) => default_version(object, "/spec/topology/version"),
                // Upstream prepends the `v` to an empty version too.
                _ => {
                    super::object_at(object, "/spec/topology").insert("version".into(), "v".into());
                }
            }
        }
        Ok(())
    }

    fn validate_create(&self, object: &Value) -> ErrorList {
        validate(None, object)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        validate(Some(old), new)
    }
}

fn is_set(object: &Value, pointer: &str) -> bool {
    object.pointer(pointer).is_some_and(|value| match value {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        _ => true,
    })
}

fn validate(old: Option<&Value>, new: &Value) -> ErrorList {
    // Upstream's Cluster words it without the colon its MachineDeployment has.
    let mut errors = super::validate_name_is_label_value(new, "must be a valid label value ");
    let spec = Path::new(&["spec"]);
    let was_set = |pointer: &str| old.is_some_and(|old| is_set(old, pointer));
    if !is_set(new, "/spec/infrastructureRef") && was_set("/spec/infrastructureRef") {
        errors.push(FieldError::forbidden(
            spec.child("infrastructureRef"),
            "cannot be removed",
        ));
    }
    if !is_set(new, "/spec/controlPlaneRef")
        && !is_set(new, "/spec/infrastructureRef")
        && !is_set(new, "/spec/topology")
    {
        errors.push(FieldError::forbidden(
            &spec,
            "one of spec.controlPlaneRef, spec.infrastructureRef or spec.topology must be set",
        ));
    }
    if !is_set(new, "/spec/controlPlaneRef") && was_set("/spec/controlPlaneRef") {
        errors.push(FieldError::forbidden(
            spec.child("controlPlaneRef"),
            "cannot be removed",
        ));
    }
    for network in ["pods", "services"] {
        let path = spec
            .child("clusterNetwork")
            .child(network)
            .child("cidrBlocks");
        let blocks = new
            .pointer(&format!("/spec/clusterNetwork/{network}/cidrBlocks"))
            .and_then(Value::as_array);
        for (index, block) in blocks.into_iter().flatten().enumerate() {
            let block = block.as_str().unwrap_or("");
            if !is_cidr(block) {
                errors.push(FieldError::invalid(
                    path.index(index),
                    block,
                    format!("invalid CIDR address: {block}"),
                ));
            }
        }
    }
    // A topology needs a ClusterClass, which Corral does not serve: upstream with its
    // `ClusterTopology` gate off (its default) refuses it; its defaulting webhook has refused
    // one without a class name before.
    if is_set(new, "/spec/topology") {
        if str_at(new, "/spec/topology/classRef/name").is_empty() {
            errors.push(FieldError::required(
                spec.child("topology").child("classRef").child("name"),
                "cannot be empty",
            ));
        } else {
            errors.push(FieldError::forbidden(
                spec.child("topology"),
                "can be set only if the ClusterTopology feature flag is enabled",
            ));
        }
    }
    if was_set("/spec/topology") && !is_set(new, "/spec/topology") {
        errors.push(FieldError::forbidden(
            spec.child("topology"),
            "cannot be removed from an existing Cluster",
        ));
    }
    errors
}

/// Go's `net.ParseCIDR`: an IP address (no zone), `/`, a decimal prefix length within the
/// address's bits.
fn is_cidr(text: &str) -> bool {
    let Some((address, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(address) = address.parse::<std::net::IpAddr>() else {
        return false;
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|bits| bits <= max)
}
