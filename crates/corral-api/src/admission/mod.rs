//! Upstream Cluster API's admission webhooks for the core kinds (`core/webhooks/admission/`),
//! as [`corral_admission::KindRules`] that Corral's API server runs on every write: one module
//! per kind, each with upstream's defaulting and validation, field paths, error types and
//! messages. [`rules`] is the set the binary hands the server.
//!
//! Rules read the object as JSON, after the schema pruned and defaulted it; what the schema
//! already guarantees (types, required fields, enums, the CEL rules upstream's CRDs carry) is
//! not checked again. The rule table (kind, rule, upstream source, test) is
//! `docs/admission-rules.md`.

mod cluster;
mod machine;
mod machine_deployment;
mod machine_health_check;
mod machine_set;
#[cfg(test)]
mod tests;

use corral_admission::selector::LabelSelector;
use corral_admission::{ErrorList, FieldError, Path, RuleSet};
use serde_json::{Map, Value};

use crate::{annotations, labels};

/// The API group of the core kinds.
pub const GROUP: &str = "cluster.x-k8s.io";

/// The rules of every core kind that has upstream webhook rules.
pub fn rules() -> RuleSet {
    RuleSet::default()
        .with(GROUP, "Cluster", cluster::ClusterRules)
        .with(GROUP, "Machine", machine::MachineRules)
        .with(GROUP, "MachineSet", machine_set::MachineSetRules)
        .with(
            GROUP,
            "MachineDeployment",
            machine_deployment::MachineDeploymentRules,
        )
        .with(
            GROUP,
            "MachineHealthCheck",
            machine_health_check::MachineHealthCheckRules,
        )
}

/// The string at a JSON pointer; empty when absent.
pub fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The object at a JSON pointer, created (with every parent) when absent or null.
pub fn object_at<'a>(object: &'a mut Value, pointer: &str) -> &'a mut Map<String, Value> {
    let mut node = object;
    for segment in pointer.split('/').skip(1) {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        node = node
            .as_object_mut()
            .expect("made an object")
            .entry(segment)
            .or_insert(Value::Null);
    }
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    node.as_object_mut().expect("made an object")
}

/// Upstream's defaulting of a Kubernetes version: a version without its `v` is given one.
pub fn default_version(object: &mut Value, pointer: &str) {
    if let Some(Value::String(version)) = object.pointer_mut(pointer)
        && !version.is_empty()
        && !version.starts_with('v')
    {
        version.insert(0, 'v');
    }
}

/// Upstream's validation of a Kubernetes version, when set: it starts with `v` and the rest is
/// a semantic version (`semver.Parse`).
pub fn validate_version(version: &str, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    if version.is_empty() {
        return errors;
    }
    if !version.starts_with('v') {
        errors.push(FieldError::invalid(path, version, "must start with v"));
    }
    if semver::Version::parse(version.strip_prefix('v').unwrap_or(version)).is_err() {
        errors.push(FieldError::invalid(
            path,
            version,
            "must be a valid semantic version",
        ));
    }
    errors
}

/// The object's name is a valid label value, since it becomes one (Invalid `metadata.name`,
/// each message after `lead`, which upstream words differently per kind).
pub fn validate_name_is_label_value(object: &Value, lead: &str) -> ErrorList {
    let name = str_at(object, "/metadata/name");
    match corral_admission::names::is_valid_label_value(name) {
        Ok(()) => ErrorList::new(),
        Err(messages) => messages
            .into_iter()
            .map(|message| {
                FieldError::invalid(
                    Path::new(&["metadata", "name"]),
                    name,
                    format!("{lead}{message}"),
                )
            })
            .collect(),
    }
}

/// `spec.clusterName` cannot change (upstream's `field is immutable`, Forbidden).
pub fn validate_cluster_name_unchanged(old: Option<&Value>, new: &Value) -> ErrorList {
    match old {
        Some(old) if str_at(old, "/spec/clusterName") != str_at(new, "/spec/clusterName") => {
            vec![FieldError::forbidden(
                Path::new(&["spec", "clusterName"]),
                "field is immutable",
            )]
        }
        _ => ErrorList::new(),
    }
}

/// The object's `cluster.x-k8s.io/cluster-name` label is its `spec.clusterName`.
fn default_cluster_name_label(object: &mut Value) {
    let cluster_name = str_at(object, "/spec/clusterName").to_string();
    object_at(object, "/metadata/labels").insert(labels::CLUSTER_NAME.into(), cluster_name.into());
}

/// Upstream's `calculateMachineDeploymentReplicas` and `calculateMachineSetReplicas`: replicas
/// left out are kept from the autoscaler's range when both of its annotations are set (a new
/// object starts at the minimum, an old one is brought into the range), else 1.
fn default_replicas(object: &mut Value, old: Option<&Value>, kind: &str) -> Result<(), String> {
    if object
        .pointer("/spec/replicas")
        .is_some_and(|r| !r.is_null())
    {
        return Ok(());
    }
    let annotation = |name: &str| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let parse = |name: &str, text: &str| {
        text.parse::<i32>().map_err(|error| {
            format!(
                "failed to caculate {kind} replicas value: could not parse the value of the {name:?} annotation: strconv.ParseInt: parsing {text:?}: {}",
                go_parse_error(&error)
            )
        })
    };
    let replicas = match (
        annotation(annotations::AUTOSCALER_MIN_SIZE),
        annotation(annotations::AUTOSCALER_MAX_SIZE),
    ) {
        (Some(min), Some(max)) => {
            let min = parse(annotations::AUTOSCALER_MIN_SIZE, &min)?;
            let max = parse(annotations::AUTOSCALER_MAX_SIZE, &max)?;
            let old_replicas = old
                .and_then(|old| old.pointer("/spec/replicas"))
                .and_then(Value::as_i64);
            match old_replicas {
                None => min.into(),
                Some(old) if old < min.into() => min.into(),
                Some(old) if old > max.into() => max.into(),
                Some(old) => old,
            }
        }
        _ => 1,
    };
    object_at(object, "/spec").insert("replicas".into(), replicas.into());
    Ok(())
}

/// How Go's `strconv` words a failed integer parse.
fn go_parse_error(error: &std::num::ParseIntError) -> &'static str {
    match error.kind() {
        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
            "value out of range"
        }
        _ => "invalid syntax",
    }
}

/// What MachineSets and MachineDeployments share: the template needs bootstrap data, the
/// selector parses and selects the template's labels, the preflight checks to skip exist (`mismatch` says how a mismatch is
/// reported: upstream's MachineSet says Invalid with the labels, its MachineDeployment
/// Forbidden), clusterName is immutable and equals the template's, the template's version, the
/// Machine naming template.
fn validate_machine_template_owner(
    old: Option<&Value>,
    new: &Value,
    mismatch_forbidden: bool,
) -> ErrorList {
    let spec = Path::new(&["spec"]);
    let mut errors = ErrorList::new();
    let bootstrap = new.pointer("/spec/template/spec/bootstrap");
    let has = |field: &str| {
        bootstrap
            .and_then(|b| b.get(field))
            .is_some_and(|v| !v.is_null())
    };
    if !has("configRef") && !has("dataSecretName") {
        errors.push(FieldError::required(
            spec.child("template").child("spec").child("bootstrap"),
            "expected either spec.template.spec.bootstrap.dataSecretName or spec.template.spec.bootstrap.configRef to be populated",
        ));
    }
    let selector = new.pointer("/spec/selector").cloned().unwrap_or_default();
    let template_labels = new
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    match LabelSelector::from_label_selector_json(&selector) {
        Err(error) => errors.push(FieldError::invalid(
            spec.child("selector"),
            selector,
            error.to_string(),
        )),
        Ok(parsed) if !parsed.matches(&template_labels) => {
            let path = spec.child("template").child("metadata").child("labels");
            let detail = format!("must match spec.selector {:?}", parsed.to_string());
            errors.push(if mismatch_forbidden {
                FieldError::forbidden(path, detail)
            } else {
                FieldError::invalid(path, Value::Object(template_labels), detail)
            });
        }
        Ok(_) => {}
    }
    errors.extend(validate_skipped_preflight_checks(new));
    errors.extend(validate_cluster_name_unchanged(old, new));
    let cluster_name = str_at(new, "/spec/clusterName");
    if cluster_name != str_at(new, "/spec/template/spec/clusterName") {
        errors.push(FieldError::invalid(
            spec.child("clusterName"),
            cluster_name,
            "spec.clusterName and spec.template.spec.clusterName must be set to the same value",
        ));
    }
    errors.extend(validate_version(
        str_at(new, "/spec/template/spec/version"),
        &spec.child("template").child("spec").child("version"),
    ));
    errors.extend(validate_machine_taints(
        new.pointer("/spec/template/spec/taints"),
        &spec.child("template").child("spec").child("taints"),
    ));
    // Both name their Machines as a MachineSet does.
    errors.extend(validate_machine_naming(
        str_at(new, "/spec/machineNaming/template"),
        &spec.child("machineNaming"),
        ".machineSet.name",
        "machineset",
    ));
    errors.extend(validate_template_metadata(new));
    errors
}

/// `ObjectMeta.Validate` of `spec.template.metadata`.
fn validate_template_metadata(new: &Value) -> ErrorList {
    validate_template_metadata_at(
        new.pointer("/spec/template/metadata"),
        &Path::new(&["spec", "template", "metadata"]),
    )
}

/// `ObjectMeta.Validate` of a template's metadata (`clusterv1.ObjectMeta`) at `path`: its label
/// keys and values and its annotation keys are valid.
pub fn validate_template_metadata_at(metadata: Option<&Value>, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    let Some(metadata) = metadata else {
        return errors;
    };
    if let Some(Value::Object(template_labels)) = metadata.get("labels") {
        for (key, value) in template_labels {
            if let Err(messages) = corral_admission::names::is_qualified_name(key) {
                for message in messages {
                    errors.push(FieldError::invalid(
                        path.child("labels"),
                        key.as_str(),
                        message,
                    ));
                }
            }
            let value = value.as_str().unwrap_or("");
            if let Err(messages) = corral_admission::names::is_valid_label_value(value) {
                for message in messages {
                    errors.push(FieldError::invalid(path.child("labels"), value, message));
                }
            }
        }
    }
    if let Some(Value::Object(template_annotations)) = metadata.get("annotations") {
        for key in template_annotations.keys() {
            if let Err(messages) = corral_admission::names::is_qualified_name(&key.to_lowercase()) {
                for message in messages {
                    errors.push(FieldError::invalid(
                        path.child("annotations"),
                        key.as_str(),
                        message,
                    ));
                }
            }
        }
    }
    errors
}

/// The MachineSet / MachineDeployment defaulting both share: cluster-name label on the object,
/// replicas, the version's `v`, the selector and template labels (the `name_label` with the
/// object's name when the selector is empty, the cluster-name label always).
fn default_machine_template_owner(
    object: &mut Value,
    old: Option<&Value>,
    kind: &str,
    name_label: &str,
    name_value: Option<String>,
    cluster_name_in_selector: bool,
) -> Result<(), String> {
    default_cluster_name_label(object);
    default_replicas(object, old, kind)?;
    object_at(object, "/spec/selector/matchLabels");
    object_at(object, "/spec/template/metadata/labels");
    let selector_empty = object
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
        && object
            .pointer("/spec/selector/matchExpressions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
    if selector_empty && let Some(name) = name_value {
        object_at(object, "/spec/selector/matchLabels")
            .insert(name_label.into(), name.clone().into());
        object_at(object, "/spec/template/metadata/labels").insert(name_label.into(), name.into());
    }
    if cluster_name_in_selector {
        let cluster_name = str_at(object, "/spec/clusterName").to_string();
        object_at(object, "/spec/selector/matchLabels")
            .insert(labels::CLUSTER_NAME.into(), cluster_name.clone().into());
        object_at(object, "/spec/template/metadata/labels")
            .insert(labels::CLUSTER_NAME.into(), cluster_name.into());
    }
    default_version(object, "/spec/template/spec/version");
    Ok(())
}

/// `intstr.GetScaledValueFromIntOrPercent` succeeds: an integer, or a string of an integer and
/// `%`. Upstream reports `must be either an int or a percentage: <why>`.
pub fn validate_int_or_percent(value: &Value, path: &Path) -> ErrorList {
    let why = match value {
        Value::Number(_) => return ErrorList::new(),
        Value::String(text) => match text.strip_suffix('%') {
            None => "invalid type: string is not a percentage".to_string(),
            Some(number) if go_atoi(number) => return ErrorList::new(),
            Some(number) => {
                format!("invalid value {text:?}: strconv.Atoi: parsing {number:?}: invalid syntax")
            }
        },
        _ => "invalid type: neither int nor percentage".to_string(),
    };
    let shown = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    vec![FieldError::invalid(
        path,
        shown,
        format!("must be either an int or a percentage: invalid value for IntOrString: {why}"),
    )]
}

/// Go's `strconv.Atoi` accepts it: an optional sign and decimal digits.
fn go_atoi(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && text.parse::<i64>().is_ok()
}

/// `machineNaming.template`, when set, contains `{{ .random }}` and renders, for a cluster named
/// `cluster` and an owner named `owner_name` (the field the owner's kind gives its templates,
/// `owner_field`: `.machineSet.name`, `.kubeadmControlPlane.name`), a name that is a DNS
/// subdomain (upstream's `validateMSMachineNaming`, `validateMDMachineNaming`, KCP's
/// `validateNaming`); `path` is the `machineNaming` field.
pub fn validate_machine_naming(
    template: &str,
    path: &Path,
    owner_field: &str,
    owner_name: &str,
) -> ErrorList {
    let mut errors = ErrorList::new();
    if template.is_empty() {
        return errors;
    }
    let path = path.child("template");
    if !template.contains("{{ .random }}") {
        errors.push(FieldError::invalid(
            &path,
            template,
            "invalid template, {{ .random }} is missing",
        ));
    }
    // Upstream's random characters are lowercase consonants and digits, valid in any name.
    let random = "bcdfg";
    let fields = [
        (".cluster.name", "cluster"),
        (owner_field, owner_name),
        (".random", random),
    ];
    match crate::naming::render_name(template, &fields, &mut || random.to_string()) {
        Err(reason) => errors.push(FieldError::invalid(
            &path,
            template,
            format!("invalid template: {reason}"),
        )),
        Ok(name) => {
            for message in corral_admission::names::is_dns1123_subdomain(&name)
                .err()
                .unwrap_or_default()
            {
                errors.push(FieldError::invalid(
                    &path,
                    template,
                    format!("invalid template, generated names would not be valid Kubernetes object names: {message}"),
                ));
            }
        }
    }
    errors
}

/// Upstream's `taints.ValidateMachineTaints` of the taints at `path`, as upstream runs it with
/// its `MachineTaintPropagation` feature gate off, its default: Corral does not propagate
/// taints to Nodes, so any taint is Forbidden; each key is also checked as upstream checks it
/// (keys Cluster API, the node lifecycle and cloud providers reserve; a label key's syntax).
pub fn validate_machine_taints(taints: Option<&Value>, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    let Some(Value::Array(taints)) = taints else {
        return errors;
    };
    if !taints.is_empty() {
        errors.push(FieldError::forbidden(
            path,
            "taints are not allowed to be set when the feature gate MachineTaintPropagation is disabled",
        ));
    }
    for (index, taint) in taints.iter().enumerate() {
        let key = taint.get("key").and_then(Value::as_str).unwrap_or("");
        let key_path = path.index(index).child("key");
        let reserved = if key == "node.cluster.x-k8s.io/uninitialized"
            || key == "node.cluster.x-k8s.io/outdated-revision"
        {
            Some("taint key is not allowed")
        } else if key.starts_with("node.kubernetes.io/")
            && key != "node.kubernetes.io/out-of-service"
        {
            Some(
                "taint key must not have the prefix node.kubernetes.io/, except for node.kubernetes.io/out-of-service",
            )
        } else if key.starts_with("node.cloudprovider.kubernetes.io/") {
            Some("taint key must not have the prefix node.cloudprovider.kubernetes.io/")
        } else if key == "node-role.kubernetes.io/master" {
            Some("taint is deprecated since 1.24 and should not be used anymore")
        } else {
            None
        };
        if let Some(detail) = reserved {
            errors.push(FieldError::invalid(&key_path, key, detail));
        }
        for message in corral_admission::names::is_qualified_name(key)
            .err()
            .unwrap_or_default()
        {
            errors.push(FieldError::invalid(&key_path, key, message));
        }
    }
    errors
}

/// The names upstream's MachineSet preflight checks go by, sorted as upstream lists them.
const PREFLIGHT_CHECKS: [&str; 5] = [
    "All",
    "ControlPlaneIsStable",
    "ControlPlaneVersionSkew",
    "KubeadmVersionSkew",
    "KubernetesVersionSkew",
];

/// The `machineset.cluster.x-k8s.io/skip-preflight-checks` annotation of a MachineSet or
/// MachineDeployment lists only preflight checks that exist (upstream's
/// `validateSkippedMachineSetPreflightChecks`, its `MachineSetPreflightChecks` gate being on
/// by default): Invalid naming the annotation, with the unknown ones.
pub fn validate_skipped_preflight_checks(object: &Value) -> ErrorList {
    let skip = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(annotations::MACHINE_SET_SKIP_PREFLIGHT_CHECKS))
        .and_then(Value::as_str)
        .unwrap_or("");
    if skip.is_empty() {
        return ErrorList::new();
    }
    let unknown: Vec<Value> = skip
        .split(',')
        .map(str::trim)
        .filter(|check| !PREFLIGHT_CHECKS.contains(check))
        .map(Value::from)
        .collect();
    if unknown.is_empty() {
        return ErrorList::new();
    }
    vec![FieldError::invalid(
        Path::new(&[
            "metadata",
            "annotations",
            annotations::MACHINE_SET_SKIP_PREFLIGHT_CHECKS,
        ]),
        Value::Array(unknown),
        format!(
            "skipped preflight check(s) must be among: [{}]",
            PREFLIGHT_CHECKS.join(" ")
        ),
    )]
}

/// The paths a JSON merge patch from `old` to `new` would set or remove (a list changes as a
/// whole), as upstream's webhooks find what an update changed.
pub fn merge_patch_paths(
    old: &Value,
    new: &Value,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, new_value) in new {
                prefix.push(key.clone());
                match old.get(key) {
                    Some(old_value) if old_value == new_value => {}
                    Some(old_value @ Value::Object(_)) if new_value.is_object() => {
                        merge_patch_paths(old_value, new_value, prefix, out);
                    }
                    // A new object is added whole: its leaves are the changed paths.
                    None if new_value.is_object() => {
                        merge_patch_paths(&Value::Object(Map::new()), new_value, prefix, out)
                    }
                    _ => out.push(prefix.clone()),
                }
                prefix.pop();
            }
            for key in old.keys().filter(|key| !new.contains_key(*key)) {
                prefix.push(key.clone());
                out.push(prefix.clone());
                prefix.pop();
            }
        }
        _ => out.push(prefix.clone()),
    }
}

/// A template's `spec.template.spec` cannot change (upstream's template webhooks, Invalid with
/// the whole object): `head` is the kind's sentence, followed by the changed paths.
pub fn validate_template_spec_unchanged(old: &Value, new: &Value, head: &str) -> ErrorList {
    let (old_spec, new_spec) = (
        old.pointer("/spec/template/spec"),
        new.pointer("/spec/template/spec"),
    );
    if old_spec == new_spec {
        return ErrorList::new();
    }
    let mut changed = Vec::new();
    merge_patch_paths(
        old_spec.unwrap_or(&Value::Null),
        new_spec.unwrap_or(&Value::Null),
        &mut Vec::new(),
        &mut changed,
    );
    let diff: Vec<String> = changed.iter().map(|path| path.join(".")).collect();
    vec![FieldError::invalid(
        Path::new(&["spec", "template", "spec"]),
        new.clone(),
        format!("{head} Diff: {}", diff.join(", ")),
    )]
}
