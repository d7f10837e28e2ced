//! `Table` rendering, what `kubectl get` prints: the columns of a resource and the cells of
//! an object.
//!
//! As in kube-apiserver, the server always sends every column, each with its `priority`;
//! kubectl shows priority 0 by default and the rest with `-o wide`. A custom resource gets
//! `Name` plus its version's `additionalPrinterColumns` (evaluated with the JSONPath subset
//! of `jsonpath.rs`), or `Name` and `Age` when it declares none. Built-in kinds get the
//! columns kubectl users know from kube-apiserver's printers. Ages read like kubectl's
//! ("5m", "3h2m", "2d").

mod jsonpath;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::registry::ResourceInfo;

pub use jsonpath::Path;

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. It is the name clients use to address the object, and cannot be changed.";
const AGE_DESCRIPTION: &str =
    "CreationTimestamp is when the server created the object, shown as the time since then.";

/// One column of a Table.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// `name` for the column that names the object, otherwise usually empty.
    pub format: String,
    pub description: String,
    /// 0: always shown; higher: shown by kubectl with `-o wide`.
    pub priority: i64,
}

impl Column {
    fn new(name: &str, type_: &str, description: &str) -> Column {
        Column {
            name: name.into(),
            type_: type_.into(),
            format: String::new(),
            description: description.into(),
            priority: 0,
        }
    }

    fn name_column() -> Column {
        Column {
            format: "name".into(),
            ..Column::new("Name", "string", NAME_DESCRIPTION)
        }
    }

    fn wide(mut self) -> Column {
        self.priority = 1;
        self
    }

    fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// How the cells of a row are computed.
#[derive(Clone, Debug)]
enum Cells {
    /// Name, then one JSONPath per printer column (`None`: unparsable, always empty).
    Custom(Vec<(Option<Path>, String)>),
    ConfigMap,
    Secret,
    Namespace,
    Lease,
    Node,
    Pod,
    Event,
    CustomResourceDefinition,
    /// Role and ClusterRole: name and creation time.
    Role,
    /// RoleBinding and ClusterRoleBinding: name, role, age, subjects by kind.
    RoleBinding,
    /// kubectl's CertificateSigningRequest columns.
    CertificateSigningRequest,
    /// kubectl's ServiceAccount columns.
    ServiceAccount,
    /// Name and Age.
    Default,
}

/// The columns of one resource version and how to fill them.
#[derive(Clone, Debug)]
pub struct Printer {
    columns: Vec<Column>,
    cells: Cells,
    resource: Arc<ResourceInfo>,
}

fn is_builtin(resource: &ResourceInfo, group: &str, plural: &str) -> bool {
    resource.builtin && resource.group == group && resource.plural == plural
}

impl Printer {
    pub fn for_resource(resource: &Arc<ResourceInfo>, version: &str) -> Printer {
        let age = || Column::new("Age", "string", AGE_DESCRIPTION);
        let (columns, cells) = if !resource.builtin {
            let printer_columns = resource
                .version(version)
                .map(|v| v.printer_columns.clone())
                .unwrap_or_default();
            if printer_columns.is_empty() {
                (
                    vec![
                        Column::name_column(),
                        Column::new("Age", "date", AGE_DESCRIPTION),
                    ],
                    Cells::Custom(vec![(
                        Path::parse(".metadata.creationTimestamp").ok(),
                        "date".into(),
                    )]),
                )
            } else {
                let mut columns = vec![Column::name_column()];
                let mut paths = Vec::new();
                for column in printer_columns {
                    paths.push((Path::parse(&column.json_path).ok(), column.type_.clone()));
                    columns.push(Column {
                        name: column.name,
                        type_: column.type_,
                        format: column.format,
                        description: column.description,
                        priority: column.priority,
                    });
                }
                (columns, Cells::Custom(paths))
            }
        } else if is_builtin(resource, "", "configmaps") {
            (
                vec![
                    Column::name_column(),
                    Column::new(
                        "Data",
                        "string",
                        "The number of keys in data and binaryData.",
                    ),
                    age(),
                ],
                Cells::ConfigMap,
            )
        } else if is_builtin(resource, "", "secrets") {
            (
                vec![
                    Column::name_column(),
                    Column::new(
                        "Type",
                        "string",
                        "The type of the secret, used to handle its data by convention.",
                    ),
                    Column::new("Data", "string", "The number of keys in data."),
                    age(),
                ],
                Cells::Secret,
            )
        } else if is_builtin(resource, "", "namespaces") {
            (
                vec![
                    Column::name_column(),
                    Column::new(
                        "Status",
                        "string",
                        "The lifecycle phase of the namespace: Active or Terminating.",
                    ),
                    age(),
                ],
                Cells::Namespace,
            )
        } else if is_builtin(resource, "coordination.k8s.io", "leases") {
            (
                vec![
                    Column::name_column(),
                    Column::new(
                        "Holder",
                        "string",
                        "The identity of the current holder of the lease.",
                    ),
                    age(),
                ],
                Cells::Lease,
            )
        } else if is_builtin(
            resource,
            crate::certificates::GROUP,
            "certificatesigningrequests",
        ) {
            (
                vec![
                    Column::name_column(),
                    age(),
                    Column::new("SignerName", "string", "The signer asked to sign."),
                    Column::new(
                        "Requestor",
                        "string",
                        "Who asked, as the API server recorded it.",
                    ),
                    Column::new(
                        "RequestedDuration",
                        "string",
                        "The validity asked for, if any.",
                    ),
                    Column::new(
                        "Condition",
                        "string",
                        "Approved, Denied or Failed, and Issued once signed; else Pending.",
                    ),
                ],
                Cells::CertificateSigningRequest,
            )
        } else if is_builtin(resource, "", "serviceaccounts") {
            (
                vec![
                    Column::name_column(),
                    Column::new("Secrets", "string", "The number of secrets listed."),
                    age(),
                ],
                Cells::ServiceAccount,
            )
        } else if is_builtin(resource, "", "nodes") {
            (
                vec![
                    Column::name_column(),
                    Column::new(
                        "Status",
                        "string",
                        "The node's Ready condition, and whether it is cordoned.",
                    ),
                    Column::new(
                        "Roles",
                        "string",
                        "The roles from the node's node-role.kubernetes.io labels.",
                    ),
                    age(),
                    Column::new("Version", "string", "The kubelet version the node reports."),
                ],
                Cells::Node,
            )
        } else if is_builtin(resource, "", "pods") {
            (
                vec![
                    Column::name_column(),
                    Column::new("Ready", "string", "Ready containers out of all containers."),
                    Column::new("Status", "string", "The pod's phase."),
                    Column::new("Restarts", "string", "Container restarts."),
                    age(),
                    Column::new("Node", "string", "The node the pod is bound to.").wide(),
                ],
                Cells::Pod,
            )
        } else if resource.builtin && resource.plural == "events" {
            (
                vec![
                    Column::new("Last Seen", "string", "When the event was last observed."),
                    Column::new("Type", "string", "Normal or Warning."),
                    Column::new("Reason", "string", "Why the event happened, in CamelCase."),
                    Column::new("Object", "string", "The object the event is about."),
                    Column::new(
                        "Subobject",
                        "string",
                        "The part of the object the event is about.",
                    )
                    .wide(),
                    Column::new(
                        "Source",
                        "string",
                        "The component (and instance) that reported the event.",
                    )
                    .wide(),
                    Column::new(
                        "Message",
                        "string",
                        "A human-readable description of the event.",
                    ),
                    Column::new("First Seen", "string", "When the event was first observed.")
                        .wide(),
                    Column::new("Count", "string", "How many times the event occurred.").wide(),
                    Column {
                        format: "name".into(),
                        ..Column::new("Name", "string", NAME_DESCRIPTION).wide()
                    },
                ],
                Cells::Event,
            )
        } else if is_builtin(
            resource,
            "apiextensions.k8s.io",
            "customresourcedefinitions",
        ) {
            (
                vec![
                    Column::name_column(),
                    Column::new("Created At", "date", "When the definition was created."),
                ],
                Cells::CustomResourceDefinition,
            )
        } else if resource.builtin
            && resource.group == crate::rbac::GROUP
            && matches!(resource.plural.as_str(), "roles" | "clusterroles")
        {
            (
                vec![
                    Column::name_column(),
                    Column::new("Created At", "date", "When the role was created."),
                ],
                Cells::Role,
            )
        } else if resource.builtin
            && resource.group == crate::rbac::GROUP
            && matches!(
                resource.plural.as_str(),
                "rolebindings" | "clusterrolebindings"
            )
        {
            (
                vec![
                    Column::name_column(),
                    Column::new("Role", "string", "The role granted, as Kind/name."),
                    age(),
                    Column::new("Users", "string", "The users bound.").wide(),
                    Column::new("Groups", "string", "The groups bound.").wide(),
                    Column::new(
                        "ServiceAccounts",
                        "string",
                        "The service accounts bound, as namespace:name.",
                    )
                    .wide(),
                ],
                Cells::RoleBinding,
            )
        } else {
            (vec![Column::name_column(), age()], Cells::Default)
        };
        Printer {
            columns,
            cells,
            resource: resource.clone(),
        }
    }

    /// The `columnDefinitions` of a Table.
    pub fn column_definitions(&self) -> Value {
        Value::Array(self.columns.iter().map(Column::definition).collect())
    }

    /// The cells of one object's row, with ages relative to `now`.
    pub fn cells(&self, object: &Value, now: DateTime<Utc>) -> Vec<Value> {
        let name = || json!(crate::object::name(object).unwrap_or(""));
        let age = || json!(age(str_at(object, &["metadata", "creationTimestamp"]), now));
        let count = |field: &str| {
            object
                .get(field)
                .and_then(Value::as_object)
                .map_or(0, |m| m.len())
        };
        match &self.cells {
            Cells::Custom(paths) => {
                let mut cells = vec![name()];
                for (path, type_) in paths {
                    let value = path.as_ref().and_then(|p| p.first(object));
                    cells.push(custom_cell(type_, value, now));
                }
                cells
            }
            Cells::ConfigMap => vec![name(), json!(count("data") + count("binaryData")), age()],
            Cells::Secret => vec![
                name(),
                json!(str_at(object, &["type"]).unwrap_or("")),
                json!(count("data")),
                age(),
            ],
            Cells::Namespace => vec![
                name(),
                json!(str_at(object, &["status", "phase"]).unwrap_or("")),
                age(),
            ],
            Cells::CertificateSigningRequest => {
                let mut condition: Vec<&str> = object
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["type"].as_str())
                    .collect();
                if object
                    .pointer("/status/certificate")
                    .is_some_and(|c| c.as_str().is_some_and(|text| !text.is_empty()))
                {
                    condition.push("Issued");
                }
                let condition = if condition.is_empty() {
                    "Pending".to_string()
                } else {
                    condition.join(",")
                };
                let duration = object
                    .pointer("/spec/expirationSeconds")
                    .and_then(Value::as_i64)
                    .map_or("<none>".to_string(), |seconds| {
                        human_duration(chrono::TimeDelta::seconds(seconds))
                    });
                vec![
                    name(),
                    age(),
                    json!(str_at(object, &["spec", "signerName"]).unwrap_or("")),
                    json!(str_at(object, &["spec", "username"]).unwrap_or("")),
                    json!(duration),
                    json!(condition),
                ]
            }
            Cells::ServiceAccount => vec![
                name(),
                json!(
                    object
                        .pointer("/secrets")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len)
                ),
                age(),
            ],
            Cells::Lease => vec![
                name(),
                json!(str_at(object, &["spec", "holderIdentity"]).unwrap_or("")),
                age(),
            ],
            Cells::Node => {
                let ready = object
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|conditions| {
                        conditions
                            .iter()
                            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
                    })
                    .and_then(|c| c.get("status").and_then(Value::as_str));
                let mut status = match ready {
                    Some("True") => "Ready".to_string(),
                    Some(_) => "NotReady".to_string(),
                    None => "Unknown".to_string(),
                };
                if object
                    .pointer("/spec/unschedulable")
                    .and_then(Value::as_bool)
                    == Some(true)
                {
                    status.push_str(",SchedulingDisabled");
                }
                let mut roles: Vec<&str> = crate::object::labels(object)
                    .map(|labels| {
                        labels
                            .keys()
                            .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                            .collect()
                    })
                    .unwrap_or_default();
                roles.sort_unstable();
                let roles = if roles.is_empty() {
                    "<none>".to_string()
                } else {
                    roles.join(",")
                };
                vec![
                    name(),
                    json!(status),
                    json!(roles),
                    age(),
                    json!(str_at(object, &["status", "nodeInfo", "kubeletVersion"]).unwrap_or("")),
                ]
            }
            Cells::Pod => {
                let containers = object
                    .pointer("/spec/containers")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let statuses = object
                    .pointer("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let ready = statuses
                    .iter()
                    .filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true))
                    .count();
                let restarts: i64 = statuses
                    .iter()
                    .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
                    .sum();
                vec![
                    name(),
                    json!(format!("{ready}/{containers}")),
                    json!(str_at(object, &["status", "phase"]).unwrap_or("Pending")),
                    json!(restarts),
                    age(),
                    json!(str_at(object, &["spec", "nodeName"]).unwrap_or("<none>")),
                ]
            }
            Cells::Event => self.event_cells(object, now),
            Cells::CustomResourceDefinition => vec![
                name(),
                json!(str_at(object, &["metadata", "creationTimestamp"]).unwrap_or("")),
            ],
            Cells::Role => vec![
                name(),
                json!(str_at(object, &["metadata", "creationTimestamp"]).unwrap_or("")),
            ],
            Cells::RoleBinding => {
                let role = format!(
                    "{}/{}",
                    str_at(object, &["roleRef", "kind"]).unwrap_or(""),
                    str_at(object, &["roleRef", "name"]).unwrap_or("")
                );
                let subjects = |kind: &str| {
                    let names: Vec<String> = object
                        .get("subjects")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
                        .map(|s| {
                            let name = s.get("name").and_then(Value::as_str).unwrap_or("");
                            if kind == "ServiceAccount" {
                                let namespace =
                                    s.get("namespace").and_then(Value::as_str).unwrap_or("");
                                format!("{namespace}:{name}")
                            } else {
                                name.to_string()
                            }
                        })
                        .collect();
                    json!(names.join(", "))
                };
                vec![
                    name(),
                    json!(role),
                    age(),
                    subjects("User"),
                    subjects("Group"),
                    subjects("ServiceAccount"),
                ]
            }
            Cells::Default => vec![name(), age()],
        }
    }

    /// kube-apiserver's event printer, on the core/v1 shape (events.k8s.io/v1 Events are
    /// converted back to it first).
    fn event_cells(&self, object: &Value, now: DateTime<Utc>) -> Vec<Value> {
        let mut event = object.clone();
        crate::conversion::to_storage(&self.resource, &mut event);
        let text = |path: &[&str]| str_at(&event, path).unwrap_or("").to_string();
        let first_seen = match str_at(&event, &["firstTimestamp"]) {
            Some(time) => age(Some(time), now),
            None => age(str_at(&event, &["eventTime"]), now),
        };
        let mut last_seen = match str_at(&event, &["lastTimestamp"]) {
            Some(time) => age(Some(time), now),
            None => first_seen.clone(),
        };
        let mut count = event.get("count").and_then(Value::as_i64).unwrap_or(0);
        if let Some(series) = event.get("series").filter(|s| s.is_object()) {
            last_seen = age(str_at(series, &["lastObservedTime"]), now);
            count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
        } else if count == 0 {
            // Events of the events.k8s.io API happen once unless they have a series.
            count = 1;
        }
        let kind = text(&["involvedObject", "kind"]).to_lowercase();
        let involved_name = text(&["involvedObject", "name"]);
        let target = if involved_name.is_empty() {
            kind
        } else {
            format!("{kind}/{involved_name}")
        };
        let component = first_non_empty(
            text(&["source", "component"]),
            text(&["reportingComponent"]),
        );
        let instance = first_non_empty(text(&["source", "host"]), text(&["reportingInstance"]));
        let source = if instance.is_empty() {
            component
        } else {
            format!("{component}, {instance}")
        };
        vec![
            json!(last_seen),
            json!(text(&["type"])),
            json!(text(&["reason"])),
            json!(target),
            json!(text(&["involvedObject", "fieldPath"])),
            json!(source),
            json!(text(&["message"]).trim()),
            json!(first_seen),
            json!(count),
            json!(crate::object::name(object).unwrap_or("")),
        ]
    }
}

fn first_non_empty(first: String, second: String) -> String {
    if first.is_empty() { second } else { first }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut node = value;
    for segment in path {
        node = node.get(*segment)?;
    }
    node.as_str().filter(|s| !s.is_empty())
}

/// A printer-column cell of the declared type; a value of another type is an empty cell,
/// except for string columns, which print any value.
fn custom_cell(type_: &str, value: Option<&Value>, now: DateTime<Utc>) -> Value {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match type_ {
        "integer" => match value {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .map_or(Value::Null, |i| json!(i)),
            _ => Value::Null,
        },
        "number" => value.as_f64().map_or(Value::Null, |f| json!(f)),
        "boolean" => value.as_bool().map_or(Value::Null, Value::Bool),
        "date" => match value.as_str() {
            Some(text) => match parse_time(text) {
                Some(time) => json!(human_duration(now - time)),
                None => json!("<invalid>"),
            },
            None => Value::Null,
        },
        // `string` and anything unknown: the value as JSONPath prints it.
        _ => match value {
            Value::String(s) => json!(s),
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => json!(i.to_string()),
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e15 => {
                    json!((f as i64).to_string())
                }
                _ => json!(n.to_string()),
            },
            other => json!(other.to_string()),
        },
    }
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The age of an object created at `timestamp`, as kubectl prints it; `<unknown>` without a
/// timestamp.
pub fn age(timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    match timestamp {
        None => "<unknown>".into(),
        Some(text) => match parse_time(text) {
            Some(time) => human_duration(now - time),
            None => "<invalid>".into(),
        },
    }
}

/// A duration the way Kubernetes prints ages (apimachinery's `HumanDuration`): seconds up to
/// two minutes, then minutes (with seconds under ten minutes), hours (with minutes under eight
/// hours), days (with hours under eight days), years (with days under eight years).
pub fn human_duration(duration: chrono::TimeDelta) -> String {
    let seconds = duration.num_seconds();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = duration.num_minutes();
    if minutes < 10 {
        let rest = seconds % 60;
        return if rest == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{rest}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = duration.num_hours();
    if hours < 8 {
        let rest = minutes % 60;
        return if rest == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{rest}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let rest = hours % 24;
        return if rest == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{rest}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}
