//! Webhook configurations as objects: kube-apiserver's defaults and validation for
//! `admissionregistration.k8s.io/v1` Validating- and MutatingWebhookConfigurations, and the
//! compiled [`Webhook`] that admission matches requests against (rules, selectors, match
//! conditions).
//!
//! Field errors are worded as apimachinery words them (`pkg/apis/admissionregistration/
//! validation`), so that a refused configuration reads like one refused by kube-apiserver.
//! One difference: Corral sends AdmissionReview `v1` only, so `admissionReviewVersions` must
//! include `v1` (kube-apiserver also speaks `v1beta1`).

use std::collections::HashSet;
use std::time::Duration;

use base64::Engine;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::names;
use crate::selector::{LabelSelector, go_quote};

use super::client::Client;

pub const GROUP: &str = "admissionregistration.k8s.io";

/// The AdmissionReview versions this server can send.
const REVIEW_VERSIONS: [&str; 1] = ["v1"];

/// kube-apiserver's limit on `matchConditions` per webhook.
const MAX_MATCH_CONDITIONS: usize = 64;

/// Which of the two configuration kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Mutating,
    Validating,
}

impl Kind {
    pub fn from_plural(plural: &str) -> Option<Kind> {
        match plural {
            "mutatingwebhookconfigurations" => Some(Kind::Mutating),
            "validatingwebhookconfigurations" => Some(Kind::Validating),
            _ => None,
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            Kind::Mutating => "mutatingwebhookconfigurations",
            Kind::Validating => "validatingwebhookconfigurations",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Kind::Mutating => "MutatingWebhookConfiguration",
            Kind::Validating => "ValidatingWebhookConfiguration",
        }
    }

    /// The storage key prefix of the configurations of this kind.
    pub fn key_prefix(self) -> String {
        format!("/registry/{GROUP}/{}/", self.plural())
    }
}

// ---------------------------------------------------------------------------------------
// The object, typed
// ---------------------------------------------------------------------------------------

/// A list that may be absent or `null`.
fn list<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct WebhookSpec {
    name: Option<String>,
    client_config: Option<ClientConfigSpec>,
    #[serde(deserialize_with = "list")]
    rules: Vec<RuleSpec>,
    failure_policy: Option<String>,
    match_policy: Option<String>,
    namespace_selector: Option<Value>,
    object_selector: Option<Value>,
    side_effects: Option<String>,
    timeout_seconds: Option<i64>,
    #[serde(deserialize_with = "list")]
    admission_review_versions: Vec<String>,
    reinvocation_policy: Option<String>,
    #[serde(deserialize_with = "list")]
    match_conditions: Vec<MatchConditionSpec>,
}

/// `clientConfig`: where the webhook is and which CAs to trust.
#[derive(Deserialize, Default, Clone, Debug)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientConfigSpec {
    pub url: Option<String>,
    pub service: Option<ServiceSpec>,
    /// Base64 of PEM certificates.
    pub ca_bundle: Option<String>,
}

#[derive(Deserialize, Default, Clone, Debug)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceSpec {
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub path: Option<String>,
    pub port: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RuleSpec {
    #[serde(deserialize_with = "list")]
    operations: Vec<String>,
    #[serde(deserialize_with = "list")]
    api_groups: Vec<String>,
    #[serde(deserialize_with = "list")]
    api_versions: Vec<String>,
    #[serde(deserialize_with = "list")]
    resources: Vec<String>,
    scope: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MatchConditionSpec {
    name: Option<String>,
    expression: Option<String>,
}

// ---------------------------------------------------------------------------------------
// Defaults
// ---------------------------------------------------------------------------------------

fn default_field(map: &mut Map<String, Value>, field: &str, value: Value) {
    if map.get(field).is_none_or(Value::is_null) {
        map.insert(field.to_string(), value);
    }
}

/// Sets what kube-apiserver defaults on a v1 configuration: `failurePolicy: Fail`,
/// `matchPolicy: Equivalent`, empty selectors, `timeoutSeconds: 10`, `reinvocationPolicy:
/// Never` (mutating), `scope: "*"` on rules and port 443 on service references.
pub fn set_defaults(kind: Kind, object: &mut Value) {
    let Some(webhooks) = object.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for webhook in webhooks.iter_mut().filter_map(Value::as_object_mut) {
        default_field(webhook, "failurePolicy", json!("Fail"));
        default_field(webhook, "matchPolicy", json!("Equivalent"));
        default_field(webhook, "namespaceSelector", json!({}));
        default_field(webhook, "objectSelector", json!({}));
        default_field(webhook, "timeoutSeconds", json!(10));
        if kind == Kind::Mutating {
            default_field(webhook, "reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = webhook.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                default_field(rule, "scope", json!("*"));
            }
        }
        if let Some(service) = webhook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            default_field(service, "port", json!(443));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------

/// Field errors as apimachinery's `field.ErrorList` words them.
#[derive(Default)]
struct Errors(Vec<Cause>);

/// A bad value as apimachinery prints it: strings quoted, lists as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        other => other.to_string(),
    }
}

impl Errors {
    fn push(&mut self, reason: &str, field: String, message: String) {
        self.0.push(Cause {
            reason: reason.to_string(),
            message,
            field,
        });
    }

    fn required(&mut self, field: String, detail: &str) {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        self.push("FieldValueRequired", field, message);
    }

    fn invalid(&mut self, field: String, value: &Value, detail: &str) {
        self.push(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}: {detail}", shown(value)),
        );
    }

    fn not_supported(&mut self, field: String, value: &str, supported: &[&str]) {
        let supported: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        self.push(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: {}: supported values: {}",
                go_quote(value),
                supported.join(", ")
            ),
        );
    }

    fn duplicate(&mut self, field: String, value: &str) {
        self.push(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {}", go_quote(value)),
        );
    }
}

/// Every field error of a configuration (metadata is checked by the REST layer).
pub fn validate(kind: Kind, object: &Value) -> Vec<Cause> {
    let mut errors = Errors::default();
    let webhooks = match object.get("webhooks") {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(webhooks)) => webhooks,
        Some(other) => {
            errors.push(
                "FieldValueTypeInvalid",
                "webhooks".into(),
                format!(
                    "Invalid value: {}: must be a list of webhooks",
                    shown(other)
                ),
            );
            return errors.0;
        }
    };
    let mut names = HashSet::new();
    for (index, raw) in webhooks.iter().enumerate() {
        let path = format!("webhooks[{index}]");
        let spec = match WebhookSpec::deserialize(raw) {
            Ok(spec) => spec,
            Err(error) => {
                errors.push(
                    "FieldValueTypeInvalid",
                    path,
                    format!("Invalid value: {error}"),
                );
                continue;
            }
        };
        validate_webhook(kind, &spec, &path, &mut errors);
        if let Some(name) = spec.name.as_deref().filter(|n| !n.is_empty())
            && !names.insert(name.to_string())
        {
            errors.duplicate(format!("{path}.name"), name);
        }
    }
    errors.0
}

/// An optional field that, when set, must hold one of `supported`.
fn check_one_of(value: Option<&String>, field: String, supported: &[&str], errors: &mut Errors) {
    if let Some(value) = value
        && !supported.contains(&value.as_str())
    {
        errors.not_supported(field, value, supported);
    }
}

fn validate_webhook(kind: Kind, spec: &WebhookSpec, path: &str, errors: &mut Errors) {
    validate_fully_qualified_name(spec.name.as_deref().unwrap_or(""), path, errors);
    for (index, rule) in spec.rules.iter().enumerate() {
        validate_rule(rule, &format!("{path}.rules[{index}]"), errors);
    }
    check_one_of(
        spec.failure_policy.as_ref(),
        format!("{path}.failurePolicy"),
        &["Fail", "Ignore"],
        errors,
    );
    check_one_of(
        spec.match_policy.as_ref(),
        format!("{path}.matchPolicy"),
        &["Equivalent", "Exact"],
        errors,
    );
    let side_effects = ["None", "NoneOnDryRun"];
    match &spec.side_effects {
        None => errors.required(
            format!("{path}.sideEffects"),
            &format!("must specify one of {}", side_effects.join(", ")),
        ),
        Some(value) if !side_effects.contains(&value.as_str()) => {
            errors.not_supported(format!("{path}.sideEffects"), value, &side_effects);
        }
        Some(_) => {}
    }
    if let Some(seconds) = spec.timeout_seconds
        && !(1..=30).contains(&seconds)
    {
        errors.invalid(
            format!("{path}.timeoutSeconds"),
            &json!(seconds),
            "the timeout value must be between 1 and 30 seconds",
        );
    }
    for (field, selector) in [
        ("namespaceSelector", &spec.namespace_selector),
        ("objectSelector", &spec.object_selector),
    ] {
        if let Some(selector) = selector.as_ref().filter(|s| !s.is_null())
            && let Err(error) = LabelSelector::from_label_selector_json(selector)
        {
            errors.invalid(format!("{path}.{field}"), selector, &error.to_string());
        }
    }
    if kind == Kind::Mutating {
        check_one_of(
            spec.reinvocation_policy.as_ref(),
            format!("{path}.reinvocationPolicy"),
            &["IfNeeded", "Never"],
            errors,
        );
    }
    validate_client_config(
        spec.client_config.as_ref(),
        &format!("{path}.clientConfig"),
        errors,
    );
    validate_match_conditions(
        &spec.match_conditions,
        &format!("{path}.matchConditions"),
        errors,
    );
    validate_review_versions(
        &spec.admission_review_versions,
        &format!("{path}.admissionReviewVersions"),
        errors,
    );
}

/// apimachinery's `IsFullyQualifiedName`: a DNS subdomain with at least three segments.
fn validate_fully_qualified_name(name: &str, path: &str, errors: &mut Errors) {
    let field = format!("{path}.name");
    if name.is_empty() {
        errors.required(field, "");
        return;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    if let Err(messages) = names::is_dns1123_subdomain(name) {
        errors.invalid(field, &json!(name), &messages.join(","));
    } else if name.split('.').count() < 3 {
        errors.invalid(
            field,
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        );
    }
}

fn has_wildcard(items: &[String]) -> bool {
    items.iter().any(|item| item == "*")
}

fn validate_rule(rule: &RuleSpec, path: &str, errors: &mut Errors) {
    let operations = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    if rule.operations.is_empty() {
        errors.required(format!("{path}.operations"), "");
    }
    if rule.operations.len() > 1 && has_wildcard(&rule.operations) {
        errors.invalid(
            format!("{path}.operations"),
            &json!(rule.operations),
            "if '*' is present, must not specify other operations",
        );
    }
    for (index, operation) in rule.operations.iter().enumerate() {
        if !operations.contains(&operation.as_str()) {
            errors.not_supported(
                format!("{path}.operations[{index}]"),
                operation,
                &operations,
            );
        }
    }
    if rule.api_groups.is_empty() {
        errors.required(format!("{path}.apiGroups"), "");
    }
    if rule.api_groups.len() > 1 && has_wildcard(&rule.api_groups) {
        errors.invalid(
            format!("{path}.apiGroups"),
            &json!(rule.api_groups),
            "if '*' is present, must not specify other API groups",
        );
    }
    if rule.api_versions.is_empty() {
        errors.required(format!("{path}.apiVersions"), "");
    }
    if rule.api_versions.len() > 1 && has_wildcard(&rule.api_versions) {
        errors.invalid(
            format!("{path}.apiVersions"),
            &json!(rule.api_versions),
            "if '*' is present, must not specify other API versions",
        );
    }
    for (index, version) in rule.api_versions.iter().enumerate() {
        if version.is_empty() {
            errors.required(format!("{path}.apiVersions[{index}]"), "");
        }
    }
    validate_resources(&rule.resources, &format!("{path}.resources"), errors);
    if let Some(scope) = &rule.scope {
        let scopes = ["*", "Cluster", "Namespaced"];
        if !scopes.contains(&scope.as_str()) {
            errors.not_supported(format!("{path}.scope"), scope, &scopes);
        }
    }
}

fn validate_resources(resources: &[String], path: &str, errors: &mut Errors) {
    if resources.is_empty() {
        errors.required(path.to_string(), "");
    }
    let mut with_wildcard_subresource = HashSet::new();
    let mut under_wildcard_resource = HashSet::new();
    let mut double_wildcard = false;
    let mut single_wildcard = false;
    let mut plain_resource = false;
    for (index, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            errors.required(format!("{path}[{index}]"), "");
            continue;
        }
        double_wildcard |= entry == "*/*";
        single_wildcard |= entry == "*";
        let Some((resource, subresource)) = entry.split_once('/') else {
            plain_resource = entry != "*";
            continue;
        };
        if with_wildcard_subresource.contains(resource) {
            errors.invalid(
                format!("{path}[{index}]"),
                &json!(entry),
                &format!("if '{resource}/*' is present, must not specify {entry}"),
            );
        }
        if under_wildcard_resource.contains(subresource) {
            errors.invalid(
                format!("{path}[{index}]"),
                &json!(entry),
                &format!("if '*/{subresource}' is present, must not specify {entry}"),
            );
        }
        if subresource == "*" {
            with_wildcard_subresource.insert(resource);
        }
        if resource == "*" {
            under_wildcard_resource.insert(subresource);
        }
    }
    if resources.len() > 1 && double_wildcard {
        errors.invalid(
            path.to_string(),
            &json!(resources),
            "if '*/*' is present, must not specify other resources",
        );
    }
    if single_wildcard && plain_resource {
        errors.invalid(
            path.to_string(),
            &json!(resources),
            "if '*' is present, must not specify other resources without subresources",
        );
    }
}

fn validate_client_config(config: Option<&ClientConfigSpec>, path: &str, errors: &mut Errors) {
    let config = config.cloned().unwrap_or_default();
    match (&config.url, &config.service) {
        (Some(url), None) => validate_url(url, &format!("{path}.url"), errors),
        (None, Some(service)) => validate_service(service, &format!("{path}.service"), errors),
        _ => errors.required(
            path.to_string(),
            "exactly one of url or service is required",
        ),
    }
    if let Some(bundle) = &config.ca_bundle
        && base64::engine::general_purpose::STANDARD
            .decode(bundle)
            .is_err()
    {
        errors.invalid(
            format!("{path}.caBundle"),
            &json!("<bytes>"),
            "must be base64-encoded PEM",
        );
    }
}

/// The parts of a URL that validation looks at.
pub struct UrlParts<'a> {
    pub scheme: &'a str,
    pub userinfo: Option<&'a str>,
    pub host: &'a str,
    pub query: Option<&'a str>,
    pub fragment: Option<&'a str>,
}

/// Splits `scheme://[userinfo@]host[/path][?query][#fragment]` without a URL library.
pub fn split_url(url: &str) -> Option<UrlParts<'_>> {
    let (scheme, rest) = url.split_once("://")?;
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (rest, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let authority = rest.split('/').next().unwrap_or("");
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((userinfo, host)) => (Some(userinfo), host),
        None => (None, authority),
    };
    Some(UrlParts {
        scheme,
        userinfo,
        host,
        query,
        fragment,
    })
}

/// apiserver's `ValidateWebhookURL` with https forced.
fn validate_url(url: &str, path: &str, errors: &mut Errors) {
    const FORM: &str = "; desired format: https://host[/path]";
    let Some(parts) = split_url(url).filter(|p| http::Uri::try_from(p.host).is_ok()) else {
        errors.required(
            path.to_string(),
            &format!("url must be a valid URL: {}{FORM}", go_quote(url)),
        );
        return;
    };
    if parts.scheme != "https" {
        errors.invalid(
            path.to_string(),
            &json!(parts.scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        );
    }
    if parts.host.is_empty() {
        errors.invalid(
            path.to_string(),
            &json!(parts.host),
            &format!("host must be specified{FORM}"),
        );
    }
    if let Some(userinfo) = parts.userinfo {
        errors.invalid(
            path.to_string(),
            &json!(userinfo),
            "user information is not permitted in the URL",
        );
    }
    if let Some(fragment) = parts.fragment.filter(|f| !f.is_empty()) {
        errors.invalid(
            path.to_string(),
            &json!(fragment),
            "fragments are not permitted in the URL",
        );
    }
    if let Some(query) = parts.query.filter(|q| !q.is_empty()) {
        errors.invalid(
            path.to_string(),
            &json!(query),
            "query parameters are not permitted in the URL",
        );
    }
}

/// apiserver's `ValidateWebhookService`.
fn validate_service(service: &ServiceSpec, path: &str, errors: &mut Errors) {
    if service.name.as_deref().unwrap_or("").is_empty() {
        errors.required(format!("{path}.name"), "");
    }
    if service.namespace.as_deref().unwrap_or("").is_empty() {
        errors.required(format!("{path}.namespace"), "");
    }
    let port = service.port.unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errors.invalid(
            format!("{path}.port"),
            &json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        );
    }
    let Some(url_path) = service.path.as_deref() else {
        return;
    };
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    let field = format!("{path}.path");
    if url_path == "//" {
        errors.invalid(field, &json!(url_path), "segment[0] may not be empty");
        return;
    }
    if !url_path.starts_with('/') {
        errors.invalid(field.clone(), &json!(url_path), "must start with a '/'");
    }
    let trimmed = url_path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (index, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errors.invalid(
                field.clone(),
                &json!(url_path),
                &format!("segment[{index}] may not be empty"),
            );
            continue;
        }
        if let Err(messages) = names::is_dns1123_subdomain(step) {
            for message in messages {
                errors.invalid(
                    field.clone(),
                    &json!(url_path),
                    &format!("segment[{index}]: {message}"),
                );
            }
        }
    }
}

fn validate_match_conditions(conditions: &[MatchConditionSpec], path: &str, errors: &mut Errors) {
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errors.push(
            "FieldValueTooMany",
            path.to_string(),
            format!(
                "Too many: {}: must have at most {MAX_MATCH_CONDITIONS} items",
                conditions.len()
            ),
        );
    }
    let mut seen = HashSet::new();
    for (index, condition) in conditions.iter().enumerate() {
        let item = format!("{path}[{index}]");
        let expression = condition.expression.as_deref().unwrap_or("").trim();
        if expression.is_empty() {
            errors.required(format!("{item}.expression"), "");
        } else if let Err(detail) = MatchCondition::check(expression) {
            errors.invalid(format!("{item}.expression"), &json!(expression), &detail);
        }
        match condition.name.as_deref().unwrap_or("") {
            "" => errors.required(format!("{item}.name"), ""),
            name => {
                if let Err(messages) = names::is_qualified_name(name) {
                    errors.invalid(format!("{item}.name"), &json!(name), &messages.join(", "));
                }
                if !seen.insert(name.to_string()) {
                    errors.duplicate(format!("{item}.name"), name);
                }
            }
        }
    }
}

fn validate_review_versions(versions: &[String], path: &str, errors: &mut Errors) {
    if versions.is_empty() {
        errors.required(
            path.to_string(),
            &format!("must specify one of {}", REVIEW_VERSIONS.join(", ")),
        );
        return;
    }
    let mut seen = HashSet::new();
    for (index, version) in versions.iter().enumerate() {
        if !seen.insert(version.as_str()) {
            errors.invalid(
                format!("{path}[{index}]"),
                &json!(version),
                "duplicate version",
            );
            continue;
        }
        if let Err(messages) = names::is_dns1035_label(version) {
            for message in messages {
                errors.invalid(format!("{path}[{index}]"), &json!(version), &message);
            }
        }
    }
    if !versions
        .iter()
        .any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
    {
        errors.invalid(
            path.to_string(),
            &json!(versions),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------
// Compiled webhooks and matching
// ---------------------------------------------------------------------------------------

/// One webhook of a stored configuration, ready to match and call.
pub struct Webhook {
    pub name: String,
    /// The configuration it belongs to.
    pub configuration: String,
    pub kind: Kind,
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore`: a failed call lets the request through.
    pub fail_open: bool,
    /// `matchPolicy: Equivalent`: a request to another version of a resource a rule names
    /// (or another resource stored with it) is sent, converted to the version the rule names.
    pub equivalent: bool,
    pub namespace_selector: LabelSelector,
    pub object_selector: LabelSelector,
    pub side_effects: String,
    pub timeout: Duration,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke_if_needed: bool,
    pub match_conditions: Vec<MatchCondition>,
    pub client: Client,
}

/// A rule with operations, as the webhook states it (scope defaulted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub scope: String,
}

/// What a rule is matched against: the request, or an equivalent resource of it.
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub operation: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    /// Empty for cluster-scoped objects; the namespace's name for requests on a namespace
    /// itself.
    pub namespace: &'a str,
}

impl Attributes<'_> {
    fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.version == "v1" && self.resource == "namespaces"
    }
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|item| item == "*" || item == requested)
}

impl Rule {
    /// Upstream's `rules.Matcher`: scope, operation, group, version, then resource, where
    /// `*` matches every resource but no subresource and `*/*` everything.
    pub fn matches(&self, attributes: &Attributes<'_>) -> bool {
        let scope = match self.scope.as_str() {
            "Namespaced" => !attributes.is_namespace() && !attributes.namespace.is_empty(),
            "Cluster" => attributes.is_namespace() || attributes.namespace.is_empty(),
            _ => true,
        };
        scope
            && exact_or_wildcard(&self.operations, attributes.operation)
            && exact_or_wildcard(&self.api_groups, attributes.group)
            && exact_or_wildcard(&self.api_versions, attributes.version)
            && self.resources.iter().any(|entry| {
                let (resource, subresource) = entry.split_once('/').unwrap_or((entry, ""));
                (resource == "*" || resource == attributes.resource)
                    && (subresource == "*" || subresource == attributes.subresource)
            })
    }
}

impl Webhook {
    pub fn matches_rules(&self, attributes: &Attributes<'_>) -> bool {
        self.rules.iter().any(|rule| rule.matches(attributes))
    }
}

/// Compiles the webhooks of a stored configuration. Stored configurations were validated
/// when written; a webhook that does not parse anyway is left out, with a warning.
pub fn compile(kind: Kind, object: &Value) -> Vec<Webhook> {
    let configuration = crate::object::name(object).unwrap_or("").to_string();
    let mut defaulted = object.clone();
    set_defaults(kind, &mut defaulted);
    let Some(webhooks) = defaulted.get("webhooks").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut compiled = Vec::new();
    for raw in webhooks {
        match compile_webhook(kind, &configuration, raw) {
            Ok(webhook) => compiled.push(webhook),
            Err(error) => tracing::warn!(
                configuration,
                kind = kind.kind(),
                %error,
                "Leaving out a webhook that does not parse"
            ),
        }
    }
    compiled
}

fn compile_webhook(kind: Kind, configuration: &str, raw: &Value) -> Result<Webhook, String> {
    let spec = WebhookSpec::deserialize(raw).map_err(|e| e.to_string())?;
    let selector = |value: &Option<Value>| match value {
        None | Some(Value::Null) => Ok(LabelSelector::everything()),
        Some(value) => LabelSelector::from_label_selector_json(value).map_err(|e| e.to_string()),
    };
    let mut match_conditions = Vec::new();
    for condition in &spec.match_conditions {
        match_conditions.push(MatchCondition::compile(
            condition.name.clone().unwrap_or_default(),
            condition.expression.as_deref().unwrap_or("").trim(),
        )?);
    }
    let timeout_seconds = spec.timeout_seconds.unwrap_or(10).clamp(1, 30);
    Ok(Webhook {
        name: spec.name.clone().unwrap_or_default(),
        configuration: configuration.to_string(),
        kind,
        rules: spec
            .rules
            .iter()
            .map(|rule| Rule {
                operations: rule.operations.clone(),
                api_groups: rule.api_groups.clone(),
                api_versions: rule.api_versions.clone(),
                resources: rule.resources.clone(),
                scope: rule.scope.clone().unwrap_or_else(|| "*".into()),
            })
            .collect(),
        fail_open: spec.failure_policy.as_deref() == Some("Ignore"),
        equivalent: spec.match_policy.as_deref() != Some("Exact"),
        namespace_selector: selector(&spec.namespace_selector)?,
        object_selector: selector(&spec.object_selector)?,
        side_effects: spec.side_effects.clone().unwrap_or_default(),
        timeout: Duration::from_secs(timeout_seconds as u64),
        reinvoke_if_needed: spec.reinvocation_policy.as_deref() == Some("IfNeeded"),
        match_conditions,
        client: Client::new(&spec.client_config.unwrap_or_default()),
    })
}

// ---------------------------------------------------------------------------------------
// Match conditions
// ---------------------------------------------------------------------------------------

/// A `matchConditions` entry: a CEL expression over `object`, `oldObject` and `request`
/// that must be true for the webhook to be called. `authorizer` and `params` are not
/// available here; an expression that uses them fails to evaluate (and the failure policy
/// decides).
pub struct MatchCondition {
    pub name: String,
    pub expression: String,
    #[cfg(feature = "cel")]
    program: kube_cel::cel::parser::Expression,
}

/// The variables of a match condition, as JSON.
#[cfg_attr(not(feature = "cel"), allow(dead_code))]
pub struct ConditionInput<'a> {
    pub object: &'a Value,
    pub old_object: &'a Value,
    pub request: &'a Value,
}

#[cfg(feature = "cel")]
mod cel_conditions {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock};

    use kube_cel::KubeCelExt;
    use kube_cel::cel;
    use serde_json::Value;

    use super::{ConditionInput, MatchCondition};

    /// CEL's standard library with Kubernetes' extensions.
    static ROOT: LazyLock<cel::Context<'static>> =
        LazyLock::new(|| cel::Context::default().with_all());

    pub fn parse(expression: &str) -> Result<cel::parser::Expression, String> {
        cel::parser::Parser::new()
            .enable_optional_syntax(true)
            .parse(expression)
            .map_err(|e| format!("compilation failed: {e}"))
    }

    /// JSON as CEL sees unstructured objects: integers stay integers, everything else a
    /// double, objects maps.
    fn to_cel(value: &Value) -> cel::Value {
        match value {
            Value::Null => cel::Value::Null,
            Value::Bool(b) => cel::Value::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => cel::Value::Int(i),
                None => cel::Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            // A managedFields entry's `fieldsV1`, held as text, is the object it stands for.
            Value::String(_) if crate::object::fields_text::text(value).is_some() => {
                to_cel(&crate::object::fields_text::tree(value))
            }
            Value::String(s) => cel::Value::String(Arc::new(s.clone())),
            Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
            Value::Object(map) => {
                let entries: HashMap<cel::objects::Key, cel::Value> = map
                    .iter()
                    .map(|(k, v)| (cel::objects::Key::String(Arc::new(k.clone())), to_cel(v)))
                    .collect();
                cel::Value::from(entries)
            }
        }
    }

    impl MatchCondition {
        pub fn evaluate(&self, input: &ConditionInput<'_>) -> Result<bool, String> {
            let mut context = ROOT.new_inner_scope();
            context.add_variable_from_value("object", to_cel(input.object));
            context.add_variable_from_value("oldObject", to_cel(input.old_object));
            context.add_variable_from_value("request", to_cel(input.request));
            let failed = |detail: String| {
                format!(
                    "expression '{}' resulted in error: {detail}",
                    self.expression
                )
            };
            match cel::Value::resolve(&self.program, &context) {
                Ok(cel::Value::Bool(result)) => Ok(result),
                Ok(other) => Err(failed(format!(
                    "must evaluate to bool, got {:?}",
                    other.type_of()
                ))),
                Err(cel::ExecutionError::NoSuchKey(key)) => {
                    Err(failed(format!("no such key: {key}")))
                }
                Err(error) => Err(failed(error.to_string())),
            }
        }
    }
}

impl MatchCondition {
    /// Whether an expression can be used: it parses (with the `cel` feature; without it,
    /// match conditions are refused).
    fn check(expression: &str) -> Result<(), String> {
        #[cfg(feature = "cel")]
        {
            cel_conditions::parse(expression).map(|_| ())
        }
        #[cfg(not(feature = "cel"))]
        {
            let _ = expression;
            Err(
                "matchConditions need CEL, and this server was built without the cel feature"
                    .into(),
            )
        }
    }

    fn compile(name: String, expression: &str) -> Result<MatchCondition, String> {
        Self::check(expression)?;
        Ok(MatchCondition {
            name,
            expression: expression.to_string(),
            #[cfg(feature = "cel")]
            program: cel_conditions::parse(expression)?,
        })
    }

    #[cfg(not(feature = "cel"))]
    pub fn evaluate(&self, _input: &ConditionInput<'_>) -> Result<bool, String> {
        Err(format!(
            "expression '{}' resulted in error: this server was built without CEL",
            self.expression
        ))
    }
}
