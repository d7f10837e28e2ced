//! Upstream's kubeadm webhooks as [`corral_admission::KindRules`], run by Corral's API server
//! on every write: KubeadmConfig and KubeadmConfigTemplate
//! (`bootstrap/kubeadm/webhooks/admission/kubeadmconfig*.go`), KubeadmControlPlane and
//! KubeadmControlPlaneTemplate (`controlplane/kubeadm/webhooks/admission/`). [`rules`] is the
//! set the binary hands the server; the rule table is `docs/admission-rules.md`.
//!
//! Where Corral differs: it renders Ignition, so the rules are those upstream applies with its
//! `KubeadmBootstrapFormatIgnition` feature gate on.

use corral_admission::{ErrorList, FieldError, KindRules, Path, RuleSet};
use corral_api::admission::{
    default_version, merge_patch_paths, object_at, str_at, validate_machine_naming,
    validate_machine_taints, validate_template_metadata_at, validate_template_spec_unchanged,
};
use corral_api::annotations::KCP_SKIP_COREDNS;
use serde_json::{Map, Value};

use super::{BOOTSTRAP_GROUP, CONTROL_PLANE_GROUP};

/// The rules of the four kubeadm kinds.
pub fn rules() -> RuleSet {
    RuleSet::default()
        .with(BOOTSTRAP_GROUP, "KubeadmConfig", KubeadmConfigRules)
        .with(
            BOOTSTRAP_GROUP,
            "KubeadmConfigTemplate",
            KubeadmConfigTemplateRules,
        )
        .with(
            CONTROL_PLANE_GROUP,
            "KubeadmControlPlane",
            KubeadmControlPlaneRules,
        )
        .with(
            CONTROL_PLANE_GROUP,
            "KubeadmControlPlaneTemplate",
            KubeadmControlPlaneTemplateRules,
        )
}

struct KubeadmConfigRules;

impl KindRules for KubeadmConfigRules {
    fn validate_create(&self, object: &Value) -> ErrorList {
        let spec = object.get("spec").cloned().unwrap_or_default();
        validate_config_spec(&spec, false, &Path::new(&["spec"]))
    }
}

struct KubeadmConfigTemplateRules;

impl KindRules for KubeadmConfigTemplateRules {
    fn validate_create(&self, object: &Value) -> ErrorList {
        let spec = object
            .pointer("/spec/template/spec")
            .cloned()
            .unwrap_or_default();
        let mut errors =
            validate_config_spec(&spec, false, &Path::new(&["spec", "template", "spec"]));
        errors.extend(validate_template_metadata_at(
            object.pointer("/spec/template/metadata"),
            &Path::new(&["spec", "template", "metadata"]),
        ));
        errors
    }
}

const CONFLICTING_FILE_SOURCE: &str =
    "only one of content or contentFrom may be specified for a single file";
const CONFLICTING_USER_SOURCE: &str =
    "only one of passwd or passwdFrom may be specified for a single user";
const MISSING_SECRET_NAME: &str = "secret file source must specify non-empty secret name";
const MISSING_SECRET_KEY: &str = "secret file source must specify non-empty secret key";
const PATH_CONFLICT: &str = "path property must be unique among all files";
const CANNOT_USE_WITH_IGNITION: &str = "not supported when spec.format is set to: \"ignition\"";

fn is_set(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Object(map)) => !map.is_empty(),
        Some(Value::String(text)) => !text.is_empty(),
        Some(_) => true,
    }
}

fn items<'a>(spec: &'a Value, field: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    spec.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// Upstream's `Validate` of a KubeadmConfigSpec (bootstrap `kubeadmconfig.go`), for a
/// KubeadmConfig, a template's, or a KubeadmControlPlane's (`is_control_plane`).
pub fn validate_config_spec(spec: &Value, is_control_plane: bool, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    // Files: one source each, a complete secret reference, unique paths.
    let mut known_paths = std::collections::HashSet::new();
    for (index, file) in items(spec, "files") {
        let file_path = path.child("files").index(index);
        let content_from = file.get("contentFrom");
        if is_set(file.get("content")) && is_set(content_from) {
            errors.push(FieldError::invalid(
                &file_path,
                file.clone(),
                CONFLICTING_FILE_SOURCE,
            ));
        }
        if is_set(content_from) {
            errors.extend(validate_secret_source(
                content_from,
                &file_path.child("contentFrom"),
            ));
        }
        let target = file.get("path").and_then(Value::as_str).unwrap_or("");
        if !known_paths.insert(target) {
            errors.push(FieldError::invalid(
                file_path.child("path"),
                file.clone(),
                PATH_CONFLICT,
            ));
        }
    }
    // Users: one password source each, a complete secret reference.
    for (index, user) in items(spec, "users") {
        let user_path = path.child("users").index(index);
        let passwd_from = user.get("passwdFrom");
        if is_set(user.get("passwd")) && is_set(passwd_from) {
            errors.push(FieldError::invalid(
                &user_path,
                user.clone(),
                CONFLICTING_USER_SOURCE,
            ));
        }
        if is_set(passwd_from) {
            errors.extend(validate_secret_source(
                passwd_from,
                &user_path.child("passwdFrom"),
            ));
        }
    }
    errors.extend(validate_ignition(spec, path));
    // Disk layouts add up to at most 100%.
    for (index, partition) in items(spec.get("diskSetup").unwrap_or(&Value::Null), "partitions") {
        let layout = partition.get("diskLayout").and_then(Value::as_array);
        if let Some(layout) = layout.filter(|layout| !layout.is_empty()) {
            let total: i64 = layout
                .iter()
                .filter_map(|entry| entry.get("percentage").and_then(Value::as_i64))
                .sum();
            if total > 100 {
                errors.push(FieldError::invalid(
                    path.child("diskSetup")
                        .child("partitions")
                        .index(index)
                        .child("diskLayout"),
                    total,
                    "the sum of all partition percentages must not be greater than 100",
                ));
            }
        }
    }
    // A discovery kubeconfig's user has one way to authenticate.
    let user = spec.pointer("/joinConfiguration/discovery/file/kubeConfig/user");
    if let Some(user) = user
        && is_set(user.get("authProvider"))
        && is_set(user.get("exec"))
    {
        errors.push(FieldError::invalid(
            path.child("joinConfiguration")
                .child("discovery")
                .child("file")
                .child("kubeconfig")
                .child("user"),
            user.clone(),
            "only one of authProvider or exec must be defined",
        ));
    }
    if is_control_plane {
        let timeout = |configuration: &str| {
            spec.pointer(&format!(
                "/{configuration}/timeouts/controlPlaneComponentHealthCheckSeconds"
            ))
            .and_then(Value::as_i64)
            .map_or_else(|| "unset".to_string(), |seconds| seconds.to_string())
        };
        let (init, join) = (timeout("initConfiguration"), timeout("joinConfiguration"));
        if init != join {
            let detail = format!(
                "controlPlaneComponentHealthCheckSeconds must be set to the same value both in initConfiguration.timeouts ({init}) and in joinConfiguration.timeouts ({join})"
            );
            for (configuration, value) in
                [("initConfiguration", &init), ("joinConfiguration", &join)]
            {
                errors.push(FieldError::invalid(
                    path.child(configuration)
                        .child("timeouts")
                        .child("controlPlaneComponentHealthCheckSeconds"),
                    value.as_str(),
                    detail.clone(),
                ));
            }
        }
    }
    errors
}

fn validate_secret_source(source: Option<&Value>, path: &Path) -> ErrorList {
    let secret = source.and_then(|s| s.get("secret"));
    let mut errors = ErrorList::new();
    if !is_set(secret.and_then(|s| s.get("name"))) {
        errors.push(FieldError::required(
            path.child("secret").child("name"),
            MISSING_SECRET_NAME,
        ));
    }
    if !is_set(secret.and_then(|s| s.get("key"))) {
        errors.push(FieldError::required(
            path.child("secret").child("key"),
            MISSING_SECRET_KEY,
        ));
    }
    errors
}

/// Upstream's `validateIgnition` with its feature gate on: `ignition` needs `format:
/// ignition`, and Ignition has no inactive users, gzipped files, boot commands, partition
/// tables other than GPT, or filesystem replacement.
fn validate_ignition(spec: &Value, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    let format = spec.get("format").and_then(Value::as_str).unwrap_or("");
    if format != "ignition" {
        if is_set(spec.get("ignition")) {
            errors.push(FieldError::invalid(
                path.child("format"),
                format,
                "must be set to \"ignition\" if spec.ignition is set",
            ));
        }
        return errors;
    }
    for (index, user) in items(spec, "users") {
        if user.get("inactive") == Some(&Value::Bool(true)) {
            errors.push(FieldError::forbidden(
                path.child("users").index(index).child("inactive"),
                CANNOT_USE_WITH_IGNITION,
            ));
        }
    }
    for (index, file) in items(spec, "files") {
        let encoding = file.get("encoding").and_then(Value::as_str).unwrap_or("");
        if encoding == "gzip" || encoding == "gzip+base64" {
            errors.push(FieldError::forbidden(
                path.child("files").index(index).child("encoding"),
                CANNOT_USE_WITH_IGNITION,
            ));
        }
    }
    if spec.get("bootCommands").is_some_and(|c| !c.is_null()) {
        errors.push(FieldError::forbidden(
            path.child("bootCommands"),
            CANNOT_USE_WITH_IGNITION,
        ));
    }
    let disk_setup = spec.get("diskSetup").unwrap_or(&Value::Null);
    for (index, partition) in items(disk_setup, "partitions") {
        let table = partition
            .get("tableType")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !table.is_empty() && table != "gpt" {
            errors.push(FieldError::invalid(
                path.child("diskSetup")
                    .child("partitions")
                    .index(index)
                    .child("tableType"),
                table,
                "only partition type \"gpt\" is supported when spec.format is set to \"ignition\"",
            ));
        }
    }
    for (index, filesystem) in items(disk_setup, "filesystems") {
        for field in ["replaceFS", "partition"] {
            if is_set(filesystem.get(field)) {
                errors.push(FieldError::forbidden(
                    path.child("diskSetup")
                        .child("filesystems")
                        .index(index)
                        .child(field),
                    CANNOT_USE_WITH_IGNITION,
                ));
            }
        }
    }
    errors
}

struct KubeadmControlPlaneRules;

impl KindRules for KubeadmControlPlaneRules {
    fn default(&self, object: &mut Value, _old: Option<&Value>) -> Result<(), String> {
        let spec = object_at(object, "/spec");
        spec.entry("replicas").or_insert(1.into());
        default_version(object, "/spec/version");
        default_rollout(object_at(object, "/spec/rollout/strategy"));
        Ok(())
    }

    fn validate_create(&self, object: &Value) -> ErrorList {
        let mut errors = validate_control_plane_spec(object);
        errors.extend(validate_cluster_configuration(
            None,
            object
                .pointer(CLUSTER_CONFIGURATION)
                .unwrap_or(&Value::Null),
            &cluster_configuration_path(),
        ));
        errors.extend(validate_config_spec(
            object
                .pointer("/spec/kubeadmConfigSpec")
                .unwrap_or(&Value::Null),
            true,
            &Path::new(&["spec", "kubeadmConfigSpec"]),
        ));
        errors
    }

    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        let mut errors = validate_control_plane_spec(new);
        errors.extend(forbidden_changes(old, new));
        errors.extend(validate_version_skew(old, new));
        errors.extend(validate_cluster_configuration(
            Some(old.pointer(CLUSTER_CONFIGURATION).unwrap_or(&Value::Null)),
            new.pointer(CLUSTER_CONFIGURATION).unwrap_or(&Value::Null),
            &cluster_configuration_path(),
        ));
        errors.extend(validate_coredns_version(old, new));
        errors.extend(validate_config_spec(
            new.pointer("/spec/kubeadmConfigSpec")
                .unwrap_or(&Value::Null),
            true,
            &Path::new(&["spec", "kubeadmConfigSpec"]),
        ));
        errors
    }

    /// Upstream's `ScaleValidator` of `kubeadmcontrolplanes/scale`: more than zero replicas,
    /// and an odd number with stacked etcd.
    fn validate_scale(&self, object: &Value) -> Result<(), String> {
        let replicas = object
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if replicas <= 0 {
            return Err("replicas should be greater than zero".into());
        }
        let external_etcd =
            is_set(object.pointer("/spec/kubeadmConfigSpec/clusterConfiguration/etcd/external"));
        if !external_etcd && replicas % 2 == 0 {
            return Err("replicas cannot be an even number when etcd is stacked".into());
        }
        Ok(())
    }
}

/// The webhook sets the strategy to RollingUpdate and maxSurge to 1 when unset.
fn default_rollout(strategy: &mut Map<String, Value>) {
    strategy.insert("type".into(), "RollingUpdate".into());
    let rolling_update = strategy
        .entry("rollingUpdate")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(rolling_update) = rolling_update {
        rolling_update.entry("maxSurge").or_insert(1.into());
    }
}

/// Upstream's `validateKubeadmControlPlaneSpec`.
fn validate_control_plane_spec(object: &Value) -> ErrorList {
    let spec = Path::new(&["spec"]);
    let mut errors = ErrorList::new();
    let replicas = object.pointer("/spec/replicas").and_then(Value::as_i64);
    match replicas {
        None => errors.push(FieldError::required(spec.child("replicas"), "is required")),
        Some(replicas) if replicas <= 0 => errors.push(FieldError::forbidden(
            spec.child("replicas"),
            "cannot be less than or equal to 0",
        )),
        Some(_) => {}
    }
    let external_etcd =
        is_set(object.pointer("/spec/kubeadmConfigSpec/clusterConfiguration/etcd/external"));
    if !external_etcd && replicas.is_some_and(|replicas| replicas % 2 == 0) {
        errors.push(FieldError::forbidden(
            spec.child("replicas"),
            "cannot be an even number when etcd is stacked",
        ));
    }
    for field in ["apiGroup", "kind", "name"] {
        let value = str_at(
            object,
            &format!("/spec/machineTemplate/spec/infrastructureRef/{field}"),
        );
        if value.is_empty() {
            errors.push(FieldError::invalid(
                spec.child("machineTemplate")
                    .child("infrastructure")
                    .child(field),
                value,
                "cannot be empty",
            ));
        }
    }
    errors.extend(validate_machine_taints(
        object.pointer("/spec/machineTemplate/spec/taints"),
        &spec.child("machineTemplate").child("spec").child("taints"),
    ));
    let version = str_at(object, "/spec/version");
    if !version.starts_with('v') {
        errors.push(FieldError::invalid(
            spec.child("version"),
            version,
            "must start with v",
        ));
    }
    if semver::Version::parse(version.strip_prefix('v').unwrap_or(version)).is_err() {
        errors.push(FieldError::invalid(
            spec.child("version"),
            version,
            "must be a valid semantic version",
        ));
    }
    errors.extend(validate_rollout(
        object.pointer("/spec/rollout").unwrap_or(&Value::Null),
        replicas,
        &spec,
    ));
    errors.extend(validate_certificate_validity(
        object.pointer("/spec").unwrap_or(&Value::Null),
        &spec,
    ));
    errors.extend(validate_machine_naming(
        str_at(object, "/spec/machineNaming/template"),
        &spec.child("machineNaming"),
        ".kubeadmControlPlane.name",
        "kubeadmcontrolplane",
    ));
    errors.extend(validate_template_metadata_at(
        object.pointer("/spec/machineTemplate/metadata"),
        &spec.child("machineTemplate").child("metadata"),
    ));
    errors
}

/// The rollout strategy (when given) is RollingUpdate, its maxSurge 0 or 1, and 0 only with at
/// least 3 replicas.
fn validate_rollout(rollout: &Value, replicas: Option<i64>, spec: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    let strategy = rollout.get("strategy");
    if !is_set(strategy) {
        return errors;
    }
    let strategy_path = spec.child("rollout").child("strategy");
    if strategy.and_then(|s| s.get("type")).and_then(Value::as_str) != Some("RollingUpdate") {
        errors.push(FieldError::required(
            strategy_path.child("type"),
            "only RollingUpdate is supported",
        ));
    }
    let max_surge = strategy.and_then(|s| s.pointer("/rollingUpdate/maxSurge"));
    if let Some(max_surge) = max_surge.filter(|m| !m.is_null()) {
        // `IntOrString.IntValue`: a string counts as the number it spells, else 0.
        let value = match max_surge {
            Value::String(text) => text.parse::<i64>().unwrap_or(0),
            other => other.as_i64().unwrap_or(0),
        };
        if value == 0 && replicas.is_some_and(|replicas| replicas < 3) {
            errors.push(FieldError::required(
                strategy_path.child("rollingUpdate"),
                "when KubeadmControlPlane is configured to scale-in, replica count needs to be at least 3",
            ));
        }
        if value != 0 && value != 1 {
            errors.push(FieldError::required(
                strategy_path.child("rollingUpdate").child("maxSurge"),
                "value must be 1 or 0",
            ));
        }
    }
    errors
}

/// Certificates live at most as long as their CA, and the rollout before expiry comes before
/// the certificates expire (`validateRolloutAndCertValidityFields`).
fn validate_certificate_validity(spec: &Value, spec_path: &Path) -> ErrorList {
    const DEFAULT_CA_EXPIRY_DAYS: i64 = 3650;
    let mut errors = ErrorList::new();
    let configuration = spec.pointer("/kubeadmConfigSpec/clusterConfiguration");
    let days = |field: &str| {
        configuration
            .and_then(|c| c.get(field))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let (validity, ca_validity) = (
        days("certificateValidityPeriodDays"),
        days("caCertificateValidityPeriodDays"),
    );
    if validity == 0 {
        return errors;
    }
    let path = spec_path
        .child("kubeadmConfigSpec")
        .child("clusterConfiguration")
        .child("certificateValidityPeriodDays");
    if ca_validity != 0 && validity > ca_validity {
        errors.push(FieldError::invalid(
            &path,
            validity,
            format!(
                "must be less than or equal to caCertificateValidityPeriodDays ({ca_validity})"
            ),
        ));
    } else if ca_validity == 0 && validity > DEFAULT_CA_EXPIRY_DAYS {
        errors.push(FieldError::invalid(
            &path,
            validity,
            format!("must be less than or equal to the default value of caCertificateValidityPeriodDays ({DEFAULT_CA_EXPIRY_DAYS})"),
        ));
    }
    let before = spec
        .pointer("/rollout/before/certificatesExpiryDays")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if before != 0 && before >= validity {
        errors.push(FieldError::invalid(
            spec_path
                .child("rollout")
                .child("before")
                .child("certificatesExpiryDays"),
            before,
            format!("must be less than certificateValidityPeriodDays ({validity})"),
        ));
    }
    errors
}

/// Where a KubeadmControlPlane keeps its ClusterConfiguration.
const CLUSTER_CONFIGURATION: &str = "/spec/kubeadmConfigSpec/clusterConfiguration";

fn cluster_configuration_path() -> Path {
    Path::new(&["spec", "kubeadmConfigSpec", "clusterConfiguration"])
}

/// Upstream's `validateClusterConfiguration` of the ClusterConfiguration at `path`: the CoreDNS
/// and local etcd image tags are OCI tags and the CoreDNS one a version, etcd is local or
/// external, never both, and (on an update, `old` being the stored one) stays what it was.
fn validate_cluster_configuration(old: Option<&Value>, new: &Value, path: &Path) -> ErrorList {
    let mut errors = ErrorList::new();
    let dns_tag = str_at(new, "/dns/imageTag");
    if !image_tag_is_valid(dns_tag) {
        errors.push(FieldError::forbidden(
            path.child("dns").child("imageTag"),
            format!("tag {dns_tag} is invalid"),
        ));
    }
    if !dns_tag.is_empty()
        && let Err(error) = parse_tolerant_image_tag(dns_tag)
    {
        // Upstream names the field without its prefix here.
        errors.push(FieldError::invalid(
            Path::new(&["dns", "imageTag"]),
            dns_tag,
            format!("failed to parse CoreDNS version: {error}"),
        ));
    }
    let local = is_set(new.pointer("/etcd/local"));
    let external = |configuration: &Value| is_set(configuration.pointer("/etcd/external"));
    let etcd = path.child("etcd");
    let etcd_tag = str_at(new, "/etcd/local/imageTag");
    if local && !image_tag_is_valid(etcd_tag) {
        errors.push(FieldError::forbidden(
            etcd.child("local").child("imageTag"),
            format!("tag {etcd_tag} is invalid"),
        ));
    }
    if local && external(new) {
        errors.push(FieldError::forbidden(
            etcd.child("local"),
            "cannot have both external and local etcd",
        ));
    }
    if let Some(old) = old
        && external(old) != external(new)
    {
        errors.push(FieldError::forbidden(
            etcd.child("external"),
            "cannot change between external and local etcd",
        ));
    }
    errors
}

/// Upstream's `container.ImageTagIsValid`: only letters, digits, `_`, `.` and `-` (the empty
/// tag too).
fn image_tag_is_valid(tag: &str) -> bool {
    tag.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Upstream's `version.ParseTolerantImageTag`: an image tag read as a version, `_` standing for
/// `+` (tags cannot hold a `+`).
fn parse_tolerant_image_tag(tag: &str) -> Result<semver::Version, String> {
    parse_tolerant(&tag.replace('_', "+"))
}

/// The CoreDNS releases CoreDNS's corefile-migration library knows (its `Versions`), in the
/// order it migrates them up: upstream's KCP accepts a change of `dns.imageTag` only from one of
/// them to a later one.
pub(crate) const KNOWN_COREDNS_VERSIONS: &[&str] = &[
    "1.1.3", "1.1.4", "1.2.0", "1.2.1", "1.2.2", "1.2.3", "1.2.4", "1.2.5", "1.2.6", "1.3.0",
    "1.3.1", "1.4.0", "1.5.0", "1.5.1", "1.5.2", "1.6.0", "1.6.1", "1.6.2", "1.6.3", "1.6.4",
    "1.6.5", "1.6.6", "1.6.7", "1.6.9", "1.7.0", "1.7.1", "1.8.0", "1.8.3", "1.8.4", "1.8.5",
    "1.8.6", "1.8.7", "1.9.0", "1.9.1", "1.9.2", "1.9.3", "1.9.4", "1.10.0", "1.10.1", "1.11.0",
    "1.11.1", "1.11.3", "1.11.4", "1.12.0", "1.12.1", "1.12.2", "1.12.3", "1.12.4", "1.13.0",
    "1.13.1", "1.13.2", "1.14.0", "1.14.1", "1.14.2",
];

/// Upstream's `validateCoreDNSVersion`: a changed `dns.imageTag` (both old and new set, their
/// versions different once pre-releases are dropped, no `skip-coredns` annotation) must be a
/// migration CoreDNS's corefile-migration library can make (`ValidUpMigration`).
fn validate_coredns_version(old: &Value, new: &Value) -> ErrorList {
    let pointer = "/spec/kubeadmConfigSpec/clusterConfiguration/dns/imageTag";
    let (from_tag, to_tag) = (str_at(old, pointer), str_at(new, pointer));
    if from_tag.is_empty() || to_tag.is_empty() {
        return ErrorList::new();
    }
    let path = cluster_configuration_path().child("dns").child("imageTag");
    let parse = |tag: &str, which: &str| {
        parse_tolerant_image_tag(tag).map_err(|error| {
            vec![FieldError::invalid(
                &path,
                tag,
                format!("failed to parse {which} CoreDNS version: {error}"),
            )]
        })
    };
    let (from, to) = match (parse(from_tag, "current"), parse(to_tag, "target")) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(errors), _) | (_, Err(errors)) => return errors,
    };
    let core = |v: &semver::Version| format!("{}.{}.{}", v.major, v.minor, v.patch);
    let (from_core, to_core) = (core(&from), core(&to));
    if from_core == to_core
        || new
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(KCP_SKIP_COREDNS))
            .is_some()
    {
        return ErrorList::new();
    }
    let position = |version: &str| KNOWN_COREDNS_VERSIONS.iter().position(|v| *v == version);
    let why = match (position(&from_core), position(&to_core)) {
        (None, _) => format!("start version '{from_core}' not supported"),
        (Some(from_at), Some(to_at)) if to_at > from_at => return ErrorList::new(),
        _ => format!("cannot migrate up to '{to_core}' from '{from_core}'"),
    };
    vec![FieldError::forbidden(
        path,
        format!("cannot migrate CoreDNS up to '{to}' from '{from}': {why}"),
    )]
}

/// The version moves up by at most one minor version at a time; going down is allowed, as
/// upstream allows it (`validateVersion`); a version that does not parse is an InternalError,
/// as upstream's.
fn validate_version_skew(old: &Value, new: &Value) -> ErrorList {
    let (from, to) = (str_at(old, "/spec/version"), str_at(new, "/spec/version"));
    let path = Path::new(&["spec", "version"]);
    let from_version = match parse_tolerant(from) {
        Ok(version) => version,
        Err(error) => {
            return vec![FieldError::internal(
                path,
                format!("failed to parse current kubeadmcontrolplane version: {from}: {error}"),
            )];
        }
    };
    let to_version = match parse_tolerant(to) {
        Ok(version) => version,
        Err(error) => {
            return vec![FieldError::internal(
                path,
                format!("failed to parse updated kubeadmcontrolplane version: {to}: {error}"),
            )];
        }
    };
    let ceiling = (from_version.major, from_version.minor + 2, 0);
    if (to_version.major, to_version.minor, to_version.patch) >= ceiling {
        return vec![FieldError::forbidden(
            path,
            format!("cannot update Kubernetes version from {from} to {to}"),
        )];
    }
    ErrorList::new()
}

/// blang/semver's `ParseTolerant`: surrounding spaces and a leading `v` are dropped, leading
/// zeros of the numbers too, and a short version (`1.8`) is completed with zeros.
fn parse_tolerant(version: &str) -> Result<semver::Version, String> {
    let trimmed = version.trim();
    let trimmed = trimmed.strip_prefix('v').unwrap_or(trimmed);
    let mut parts: Vec<String> = trimmed
        .splitn(3, '.')
        .map(|part| {
            let stripped = part.trim_start_matches('0');
            if part.len() > 1 && !stripped.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{stripped}")
            } else if part.len() > 1 {
                stripped.to_string()
            } else {
                part.to_string()
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|last| last.contains(['+', '-'])) {
            return Err("Short version cannot contain PreRelease/Build meta data".into());
        }
        parts.resize(3, "0".into());
    }
    semver::Version::parse(&parts.join(".")).map_err(|error| error.to_string())
}

/// The fields of a KubeadmControlPlane that an update may change (upstream's `allowedPaths`);
/// `*` allows everything below.
const ALLOWED_CHANGES: &[&[&str]] = &[
    &["metadata", "*"],
    &["spec", "kubeadmConfigSpec", "clusterConfiguration", "etcd"],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "etcd",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "etcd",
        "local",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "etcd",
        "local",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "etcd",
        "external",
        "*",
    ],
    &["spec", "kubeadmConfigSpec", "clusterConfiguration", "dns"],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "dns",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "imageRepository",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "featureGates",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "featureGates",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "apiServer",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "apiServer",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "controllerManager",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "controllerManager",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "scheduler",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "scheduler",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "certificateValidityPeriodDays",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "clusterConfiguration",
        "encryptionAlgorithm",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "nodeRegistration",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "nodeRegistration",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "patches",
        "directory",
    ],
    &["spec", "kubeadmConfigSpec", "initConfiguration", "patches"],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "skipPhases",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "bootstrapTokens",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "localAPIEndpoint",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "localAPIEndpoint",
        "*",
    ],
    &["spec", "kubeadmConfigSpec", "initConfiguration", "timeouts"],
    &[
        "spec",
        "kubeadmConfigSpec",
        "initConfiguration",
        "timeouts",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "nodeRegistration",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "nodeRegistration",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "patches",
        "directory",
    ],
    &["spec", "kubeadmConfigSpec", "joinConfiguration", "patches"],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "skipPhases",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "caCertPath",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "controlPlane",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "controlPlane",
        "*",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "discovery",
    ],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "discovery",
        "*",
    ],
    &["spec", "kubeadmConfigSpec", "joinConfiguration", "timeouts"],
    &[
        "spec",
        "kubeadmConfigSpec",
        "joinConfiguration",
        "timeouts",
        "*",
    ],
    &["spec", "kubeadmConfigSpec", "bootCommands"],
    &["spec", "kubeadmConfigSpec", "preKubeadmCommands"],
    &["spec", "kubeadmConfigSpec", "postKubeadmCommands"],
    &["spec", "kubeadmConfigSpec", "files"],
    &["spec", "kubeadmConfigSpec", "verbosity"],
    &["spec", "kubeadmConfigSpec", "users"],
    &["spec", "kubeadmConfigSpec", "ntp"],
    &["spec", "kubeadmConfigSpec", "ntp", "*"],
    &["spec", "kubeadmConfigSpec", "ignition"],
    &["spec", "kubeadmConfigSpec", "ignition", "*"],
    &["spec", "kubeadmConfigSpec", "diskSetup"],
    &["spec", "kubeadmConfigSpec", "diskSetup", "*"],
    &["spec", "kubeadmConfigSpec", "format"],
    &["spec", "kubeadmConfigSpec", "mounts"],
    &["spec", "machineTemplate", "metadata"],
    &["spec", "machineTemplate", "metadata", "*"],
    &["spec", "machineTemplate", "spec"],
    &["spec", "machineTemplate", "spec", "*"],
    &["spec", "replicas"],
    &["spec", "version"],
    &["spec", "remediation"],
    &["spec", "remediation", "*"],
    &["spec", "machineNaming"],
    &["spec", "machineNaming", "*"],
    &["spec", "rollout"],
    &["spec", "rollout", "*"],
];

/// Every changed path outside [`ALLOWED_CHANGES`] is Forbidden: `cannot be modified`. The
/// changed paths are those of a JSON merge patch from the old object to the new one (a list
/// changes as a whole); status is not the webhook's business.
fn forbidden_changes(old: &Value, new: &Value) -> ErrorList {
    let mut changed = Vec::new();
    merge_patch_paths(old, new, &mut Vec::new(), &mut changed);
    changed.sort();
    changed
        .into_iter()
        .filter(|path| path.first().is_some_and(|first| first != "status"))
        .filter(|path| {
            !ALLOWED_CHANGES
                .iter()
                .any(|allowed| paths_match(allowed, path))
        })
        .map(|path| {
            let segments: Vec<&str> = path.iter().map(String::as_str).collect();
            FieldError::forbidden(Path::new(&segments), "cannot be modified")
        })
        .collect()
}

/// Upstream's `pathsMatch`.
fn paths_match(allowed: &[&str], path: &[String]) -> bool {
    if allowed.is_empty() || path.is_empty() {
        return false;
    }
    let mut last = 0;
    for (index, segment) in path.iter().enumerate() {
        last = index;
        if index > allowed.len() - 1 {
            return false;
        }
        if allowed[index] == "*" {
            return true;
        }
        if segment != allowed[index] {
            return false;
        }
    }
    last >= allowed.len() - 1
}

struct KubeadmControlPlaneTemplateRules;

/// Upstream's template webhook validates only (no defaulting), and only while its
/// `ClusterTopology` feature gate is on; Corral serves templates as with the gate on.
impl KindRules for KubeadmControlPlaneTemplateRules {
    fn validate_create(&self, object: &Value) -> ErrorList {
        let spec = Path::new(&["spec", "template", "spec"]);
        let template_spec = object
            .pointer("/spec/template/spec")
            .unwrap_or(&Value::Null);
        let mut errors = validate_rollout(
            template_spec.get("rollout").unwrap_or(&Value::Null),
            None,
            &spec,
        );
        errors.extend(validate_certificate_validity(template_spec, &spec));
        errors.extend(validate_machine_naming(
            str_at(template_spec, "/machineNaming/template"),
            &spec.child("machineNaming"),
            ".kubeadmControlPlane.name",
            "kubeadmcontrolplane",
        ));
        errors.extend(validate_machine_taints(
            template_spec.pointer("/machineTemplate/spec/taints"),
            &spec.child("machineTemplate").child("spec").child("taints"),
        ));
        errors.extend(validate_template_metadata_at(
            template_spec.pointer("/machineTemplate/metadata"),
            &spec.child("machineTemplate").child("metadata"),
        ));
        errors.extend(validate_cluster_configuration(
            None,
            template_spec
                .pointer("/kubeadmConfigSpec/clusterConfiguration")
                .unwrap_or(&Value::Null),
            &spec
                .child("kubeadmConfigSpec")
                .child("clusterConfiguration"),
        ));
        errors.extend(validate_config_spec(
            template_spec
                .get("kubeadmConfigSpec")
                .unwrap_or(&Value::Null),
            true,
            &spec.child("kubeadmConfigSpec"),
        ));
        errors.extend(validate_template_metadata_at(
            object.pointer("/spec/template/metadata"),
            &Path::new(&["spec", "template", "metadata"]),
        ));
        errors
    }

    /// `spec.template.spec` cannot change at all.
    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        validate_template_spec_unchanged(
            old,
            new,
            "KubeadmControlPlaneTemplate spec.template.spec field is immutable. Please create new resource instead.",
        )
    }
}

#[cfg(test)]
mod tests;
