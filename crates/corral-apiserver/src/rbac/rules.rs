//! What a request asks and whether a `PolicyRule` grants it: kube-apiserver's request
//! attributes (`RequestInfoFactory`) and RBAC's rule matching and covering (`rbac/v1`
//! helpers, `ruleCovers`, `BreakdownRule`, `CompactRules`), pure functions over
//! k8s-openapi's `PolicyRule`.

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::auth::UserInfo;

pub const VERB_ALL: &str = "*";
pub const API_GROUP_ALL: &str = "*";
pub const RESOURCE_ALL: &str = "*";
pub const NON_RESOURCE_ALL: &str = "*";

/// What a request asks to do, as the authorizer sees it (`authorizer.Attributes` without the
/// user).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// False for non-resource requests (`/healthz`, `/api`, `/apis/GROUP/VERSION`, ...).
    pub resource_request: bool,
    /// The URL path, for non-resource requests.
    pub path: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    /// Empty for cluster-scoped requests and requests across all namespaces.
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    /// kube-apiserver's `RequestInfoFactory.NewRequestInfo`: `/api/VERSION/...` and
    /// `/apis/GROUP/VERSION/...` with a resource are resource requests (verb from the method:
    /// get, list or watch for GET, create, update, patch, delete or deletecollection); every
    /// other path is a non-resource request whose verb is the lowercased method.
    pub fn from_request(method: &http::Method, uri: &http::Uri) -> Attributes {
        let path = uri.path();
        let mut attributes = Attributes {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
            ..Default::default()
        };
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let mut parts: &[&str] = if path.trim_matches('/').is_empty() {
            &[]
        } else {
            &parts
        };
        if parts.len() < 3 {
            return attributes;
        }
        match parts[0] {
            "api" => parts = &parts[1..],
            "apis" => {
                if parts.len() < 4 {
                    return attributes;
                }
                attributes.group = parts[1].to_string();
                parts = &parts[2..];
            }
            _ => return attributes,
        }
        attributes.resource_request = true;
        attributes.version = parts[0].to_string();
        parts = &parts[1..];
        let mut verb_from_method = true;
        if matches!(parts[0], "proxy" | "watch") {
            if parts.len() < 2 {
                // kube-apiserver fails such a request; it names no resource.
                attributes.resource_request = false;
                return attributes;
            }
            attributes.verb = parts[0].to_string();
            verb_from_method = false;
            parts = &parts[1..];
        } else {
            attributes.verb = match *method {
                http::Method::POST => "create",
                http::Method::GET | http::Method::HEAD => "get",
                http::Method::PUT => "update",
                http::Method::PATCH => "patch",
                http::Method::DELETE => "delete",
                _ => "",
            }
            .to_string();
        }
        if parts[0] == "namespaces" && parts.len() > 1 {
            attributes.namespace = parts[1].to_string();
            if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
                parts = &parts[2..];
            }
        }
        if parts.len() >= 3 && attributes.verb != "proxy" {
            attributes.subresource = parts[2].to_string();
        }
        if parts.len() >= 2 {
            attributes.name = parts[1].to_string();
        }
        attributes.resource = parts[0].to_string();
        if verb_from_method && attributes.name.is_empty() && attributes.verb == "get" {
            let query = crate::query::Query::parse(uri.query()).unwrap_or_default();
            attributes.verb = if query.watch { "watch" } else { "list" }.to_string();
            let named = query
                .field_selector
                .as_deref()
                .and_then(|selector| crate::selector::FieldSelector::parse(selector).ok())
                .and_then(|selector| {
                    selector
                        .requires_exact_match("metadata.name")
                        .map(str::to_string)
                });
            if let Some(name) =
                named.filter(|name| crate::names::is_valid_path_segment_name(name).is_ok())
            {
                attributes.name = name;
            }
        }
        if verb_from_method && attributes.name.is_empty() && attributes.verb == "delete" {
            attributes.verb = "deletecollection".to_string();
        }
        attributes
    }

    /// `resource` or `resource/subresource`.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// kube-apiserver's `forbiddenMessage`: `User "alice" cannot list resource "secrets" in
    /// API group "" in the namespace "b"`.
    pub fn forbidden_message(&self, user: &UserInfo) -> String {
        let name = &user.name;
        let verb = &self.verb;
        if !self.resource_request {
            return format!("User {name:?} cannot {verb} path {:?}", self.path);
        }
        let resource = self.combined_resource();
        let group = &self.group;
        if self.namespace.is_empty() {
            format!(
                "User {name:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
            )
        } else {
            format!(
                "User {name:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
                self.namespace
            )
        }
    }
}

fn list(field: &Option<Vec<String>>) -> &[String] {
    field.as_deref().unwrap_or(&[])
}

fn has(set: &[String], value: &str) -> bool {
    set.iter().any(|s| s == value)
}

/// Whether `rule` grants the request (`RuleAllows`).
pub fn rule_allows(attributes: &Attributes, rule: &PolicyRule) -> bool {
    let verb_matches = rule
        .verbs
        .iter()
        .any(|v| v == VERB_ALL || *v == attributes.verb);
    if !verb_matches {
        return false;
    }
    if attributes.resource_request {
        let groups = list(&rule.api_groups);
        let group_matches = groups
            .iter()
            .any(|g| g == API_GROUP_ALL || *g == attributes.group);
        group_matches
            && resource_matches(rule, attributes)
            && resource_name_matches(rule, &attributes.name)
    } else {
        list(&rule.non_resource_urls)
            .iter()
            .any(|url| non_resource_url_covers(url, &attributes.path))
    }
}

fn resource_matches(rule: &PolicyRule, attributes: &Attributes) -> bool {
    list(&rule.resources).iter().any(|resource| {
        if resource == RESOURCE_ALL {
            return true;
        }
        if attributes.subresource.is_empty() {
            return *resource == attributes.resource;
        }
        // `pods/status`, or `*/status` for every resource's status.
        let (rule_resource, rule_subresource) = match resource.split_once('/') {
            Some(split) => split,
            None => return false,
        };
        rule_subresource == attributes.subresource
            && (rule_resource == "*" || rule_resource == attributes.resource)
    })
}

fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = list(&rule.resource_names);
    names.is_empty() || has(names, name)
}

/// A non-resource URL rule: exact, or a prefix ending in `*`.
fn non_resource_url_covers(owner: &str, path: &str) -> bool {
    owner == path || owner.strip_suffix('*').is_some_and(|p| path.starts_with(p))
}

/// The rules of `servant` that no rule of `owner` covers, one verb, group, resource and name
/// each (`Covers`); empty when `owner` holds all of `servant`.
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|rule| rule_covers(rule, sub)))
        .collect()
}

/// One rule per verb × group × resource (× name), and per verb × non-resource URL
/// (`BreakdownRule`).
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |value: &String| Some(vec![value.clone()]);
    let mut subrules = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    subrules.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        ..Default::default()
                    });
                }
                for name in names {
                    subrules.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        resource_names: one(name),
                        ..Default::default()
                    });
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            subrules.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..Default::default()
            });
        }
    }
    subrules
}

fn has_all(set: &[String], values: &[String]) -> bool {
    values.iter().all(|v| has(set, v))
}

/// `ruleCovers`: whether `owner` grants everything `sub` does.
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, VERB_ALL) || has_all(&owner.verbs, &sub.verbs);
    let owner_groups = list(&owner.api_groups);
    let groups = has(owner_groups, API_GROUP_ALL) || has_all(owner_groups, list(&sub.api_groups));
    let owner_resources = list(&owner.resources);
    let resources = has(owner_resources, RESOURCE_ALL)
        || list(&sub.resources).iter().all(|path| {
            has(owner_resources, path)
                || path
                    .split_once('/')
                    .is_some_and(|(_, sub)| has(owner_resources, &format!("*/{sub}")))
        });
    let urls = list(&sub.non_resource_urls).iter().all(|path| {
        list(&owner.non_resource_urls)
            .iter()
            .any(|owner| non_resource_url_covers(owner, path))
    });
    let owner_names = list(&owner.resource_names);
    let names = owner_names.is_empty()
        || (!list(&sub.resource_names).is_empty()
            && has_all(owner_names, list(&sub.resource_names)));
    verbs && groups && resources && urls && names
}

/// `CompactRules`: simple rules (one group, one resource, no names) of the same group and
/// resource merged into one with all their verbs.
pub fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut merged: Vec<PolicyRule> = Vec::new();
    let mut simple: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for rule in rules {
        let (groups, resources) = (list(&rule.api_groups), list(&rule.resources));
        let is_simple = groups.len() == 1
            && resources.len() == 1
            && list(&rule.resource_names).is_empty()
            && list(&rule.non_resource_urls).is_empty();
        if !is_simple {
            merged.push(rule);
            continue;
        }
        let key = (groups[0].clone(), resources[0].clone());
        match simple.get(&key) {
            Some(&index) => {
                for verb in rule.verbs {
                    if !has(&merged[index].verbs, &verb) {
                        merged[index].verbs.push(verb);
                    }
                }
            }
            None => {
                simple.insert(key, merged.len());
                merged.push(rule);
            }
        }
    }
    merged
}

/// `CompactString`: `{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`.
pub fn compact_string(rule: &PolicyRule) -> String {
    let quoted = |values: &[String]| {
        let items: Vec<String> = values
            .iter()
            .map(|v| crate::schema::field::go_quote(v))
            .collect();
        format!("[{}]", items.join(" "))
    };
    let mut parts = Vec::new();
    for (label, values) in [
        ("APIGroups", list(&rule.api_groups)),
        ("Resources", list(&rule.resources)),
        ("NonResourceURLs", list(&rule.non_resource_urls)),
        ("ResourceNames", list(&rule.resource_names)),
        ("Verbs", rule.verbs.as_slice()),
    ] {
        if !values.is_empty() {
            parts.push(format!("{label}:{}", quoted(values)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests;
