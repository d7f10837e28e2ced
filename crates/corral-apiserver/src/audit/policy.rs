//! kube-apiserver's audit `Policy` (`audit.k8s.io/v1`, the file of `--audit-policy-file`):
//! the first rule that matches a request gives its level and the stages left out; no match is
//! level `None`. Matching is kube's `policy.ruleMatches`.

use std::path::Path;

use serde::Deserialize;

use crate::auth::UserInfo;
use crate::rbac::rules::Attributes;

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read the audit policy file {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("audit policy file {path}: {message}")]
    Parse { path: String, message: String },
}

/// How much of a request is recorded, least first.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    level: Level,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    omit_managed_fields: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupResources {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

/// What the policy says of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Decision {
    pub fn records(&self, stage: Stage) -> bool {
        self.level > Level::None && !self.omit_stages.contains(&stage)
    }
}

impl Policy {
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|error| PolicyError::Read {
            path: path.display().to_string(),
            error,
        })?;
        Policy::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, path: &str) -> Result<Policy, PolicyError> {
        let parse_error = |message: String| PolicyError::Parse {
            path: path.into(),
            message,
        };
        let policy: Policy =
            serde_saphyr::from_str(text).map_err(|error| parse_error(error.to_string()))?;
        if policy.kind.as_deref() != Some("Policy")
            || policy.api_version.as_deref() != Some("audit.k8s.io/v1")
        {
            return Err(parse_error(format!(
                "no kind \"{}\" is registered for version \"{}\": want kind Policy of audit.k8s.io/v1",
                policy.kind.as_deref().unwrap_or_default(),
                policy.api_version.as_deref().unwrap_or_default()
            )));
        }
        for (index, rule) in policy.rules.iter().enumerate() {
            if !rule.non_resource_urls.is_empty()
                && (!rule.resources.is_empty() || !rule.namespaces.is_empty())
            {
                return Err(parse_error(format!(
                    "rules[{index}].nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs"
                )));
            }
        }
        Ok(policy)
    }

    /// The first matching rule's decision; `None` level when no rule matches.
    pub fn decide(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        match self
            .rules
            .iter()
            .find(|rule| rule_matches(rule, user, attributes))
        {
            Some(rule) => {
                let mut omit_stages = self.omit_stages.clone();
                omit_stages.extend(rule.omit_stages.iter().copied());
                Decision {
                    level: rule.level,
                    omit_stages,
                    omit_managed_fields: rule
                        .omit_managed_fields
                        .unwrap_or(self.omit_managed_fields),
                }
            }
            None => Decision {
                level: Level::None,
                omit_stages: Vec::new(),
                omit_managed_fields: false,
            },
        }
    }
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|item| item == value)
}

fn rule_matches(rule: &Rule, user: &UserInfo, attributes: &Attributes) -> bool {
    if !rule.users.is_empty() && !has(&rule.users, &user.name) {
        return false;
    }
    if !rule.user_groups.is_empty() && !user.groups.iter().any(|g| has(&rule.user_groups, g)) {
        return false;
    }
    if !rule.verbs.is_empty() && !has(&rule.verbs, &attributes.verb) {
        return false;
    }
    if !rule.namespaces.is_empty() || !rule.resources.is_empty() {
        return matches_resource(rule, attributes);
    }
    if !rule.non_resource_urls.is_empty() {
        return !attributes.resource_request
            && rule
                .non_resource_urls
                .iter()
                .any(|spec| path_matches(&attributes.path, spec));
    }
    true
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

fn matches_resource(rule: &Rule, attributes: &Attributes) -> bool {
    if !attributes.resource_request {
        return false;
    }
    if !rule.namespaces.is_empty() && !has(&rule.namespaces, &attributes.namespace) {
        return false;
    }
    if rule.resources.is_empty() {
        return true;
    }
    let combined = attributes.combined_resource();
    let subresource = attributes.subresource.as_str();
    rule.resources
        .iter()
        .filter(|group| group.group == attributes.group)
        .any(|group| {
            group.resources.is_empty()
                || group.resources.iter().any(|resource| {
                    (group.resource_names.is_empty()
                        || has(&group.resource_names, &attributes.name))
                        && (resource == &combined
                            || resource == "*"
                            || (!subresource.is_empty()
                                && resource.strip_prefix("*/") == Some(subresource))
                            || resource.strip_suffix("/*") == Some(attributes.resource.as_str()))
                })
        })
}
