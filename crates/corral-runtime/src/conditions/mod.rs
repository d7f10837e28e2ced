//! v1beta2 conditions as upstream's `util/conditions` handles them: setting a condition (the
//! transition time moves only when the status does), the order conditions are kept in, and the
//! three ways of deriving one condition from others: mirror (one condition of a provider
//! object), summary (several conditions of one object) and aggregate (one condition of many
//! objects), with upstream's merge strategy (issues first, then unknown, then info).
//!
//! Everything here is pure; controllers compute conditions on a copy of the status and write it
//! only when it changed.

use std::collections::{BTreeMap, BTreeSet};

use corral_api::ConditionStatus;
use corral_api::contract::ProviderCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

#[cfg(test)]
mod tests;

/// The reason a condition missing from a summary or aggregate is given (upstream
/// `NotYetReportedReason`).
pub const NOT_YET_REPORTED: &str = "NotYetReported";

/// The reason a provider condition without one is given (upstream `NoReasonReported`).
pub const NO_REASON_REPORTED: &str = "NoReasonReported";

/// The current time at the precision conditions are stored with, so that what is computed
/// equals what is read back.
pub fn now() -> Time {
    let now = Timestamp::now();
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// A condition to set: [`set`] fills in the transition time and the observed generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCondition {
    /// The condition type.
    pub type_: String,
    /// The status.
    pub status: ConditionStatus,
    /// The reason, in CamelCase.
    pub reason: String,
    /// A message for people; may be empty.
    pub message: String,
    /// A transition time to keep, for mirrored conditions; `None` means now, if the status
    /// changes.
    pub last_transition_time: Option<Time>,
}

impl NewCondition {
    /// A condition with an empty message.
    pub fn new(type_: &str, status: ConditionStatus, reason: &str) -> Self {
        NewCondition {
            type_: type_.to_owned(),
            status,
            reason: reason.to_owned(),
            message: String::new(),
            last_transition_time: None,
        }
    }

    /// The same condition with a message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Whether the status is True.
    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

/// True or False.
pub fn bool_status(value: bool) -> ConditionStatus {
    if value {
        ConditionStatus::True
    } else {
        ConditionStatus::False
    }
}

/// The condition of the given type.
pub fn get<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|condition| condition.type_ == type_)
}

/// Whether the condition of the given type exists and is True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    get(conditions, type_).is_some_and(|condition| condition.status == "True")
}

/// Sets a condition, as upstream's `conditions.Set`: the transition time changes only when the
/// status does (to the given one for mirrored conditions, else `now`); the observed generation
/// is the object's. Conditions stay in upstream's order.
pub fn set(
    conditions: &mut Vec<Condition>,
    new: NewCondition,
    generation: Option<i64>,
    now: &Time,
) {
    let status = new.status.as_str().to_owned();
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status != status {
                existing.last_transition_time = new.last_transition_time.unwrap_or(now.clone());
                existing.status = status;
            }
            existing.reason = new.reason;
            existing.message = new.message;
            existing.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: new.type_,
            status,
            reason: new.reason,
            message: new.message,
            observed_generation: generation,
            last_transition_time: new.last_transition_time.unwrap_or(now.clone()),
        }),
    }
    sort(conditions);
}

/// Removes the condition of the given type.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|condition| condition.type_ != type_);
}

/// Upstream's condition order (`util/conditions/sort.go`): Available and Ready first, then the
/// others by kind of information, gates, and Paused and Deleting last.
const ORDER: &[&str] = &[
    "Available",
    "Ready",
    "UpToDate",
    "RemoteConnectionProbe",
    "BootstrapConfigReady",
    "InfrastructureReady",
    "ControlPlaneInitialized",
    "ControlPlaneAvailable",
    "WorkersAvailable",
    "CertificatesAvailable",
    "Initialized",
    "EtcdClusterHealthy",
    "ControlPlaneComponentsHealthy",
    "NodeHealthy",
    "NodeReady",
    "EtcdPodHealthy",
    "EtcdMemberHealthy",
    "APIServerPodHealthy",
    "ControllerManagerPodHealthy",
    "SchedulerPodHealthy",
    "HealthCheckSucceeded",
    "OwnerRemediated",
    "TopologyReconciled",
    "Updating",
    "RollingOut",
    "Remediating",
    "ScalingDown",
    "ScalingUp",
    "MachinesReady",
    "ControlPlaneMachinesReady",
    "WorkerMachinesReady",
    "MachinesUpToDate",
    "ControlPlaneMachinesUpToDate",
    "WorkerMachinesUpToDate",
    // Readiness and availability gates, and any other condition, go here.
    "",
    "Paused",
    "Deleting",
];

fn rank(type_: &str) -> usize {
    ORDER
        .iter()
        .position(|known| *known == type_)
        .unwrap_or_else(|| ORDER.iter().position(|known| known.is_empty()).unwrap_or(0))
}

fn sort(conditions: &mut [Condition]) {
    conditions.sort_by(|a, b| {
        rank(&a.type_)
            .cmp(&rank(&b.type_))
            .then_with(|| a.type_.cmp(&b.type_))
    });
}

/// How a condition counts when merging: an issue, unknown, or information.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// A positive condition that is False or a negative one that is True.
    Issue,
    /// An Unknown condition.
    Unknown,
    /// A positive condition that is True or a negative one that is False.
    Info,
}

/// Upstream's `GetDefaultMergePriorityFunc`: the priority of a condition given the types with
/// negative polarity (good when False).
pub fn default_priority(condition: &Condition, negative_types: &[&str]) -> Priority {
    let negative = negative_types.contains(&condition.type_.as_str());
    match (condition.status.as_str(), negative) {
        ("True", false) | ("False", true) => Priority::Info,
        ("True", true) | ("False", false) => Priority::Issue,
        _ => Priority::Unknown,
    }
}

/// The three reasons a merged condition can get, by the priority of the conditions that decide
/// it (upstream `GetDefaultComputeMergeReasonFunc`).
#[derive(Clone, Copy, Debug)]
pub struct Reasons<'a> {
    /// When some condition is an issue.
    pub issue: &'a str,
    /// When none is an issue and some is Unknown.
    pub unknown: &'a str,
    /// When all are fine.
    pub info: &'a str,
}

/// Upstream's default reasons when a merge has no specific ones.
pub const DEFAULT_REASONS: Reasons<'static> = Reasons {
    issue: "IssuesReported",
    unknown: "UnknownReported",
    info: "InfoReported",
};

/// How conditions merge into one (upstream `defaultMergeStrategy`).
pub struct MergeStrategy<'a> {
    /// The priority of each condition.
    pub priority: Box<dyn Fn(&Condition) -> Priority + 'a>,
    /// Whether the merged condition is good when True (False for RollingOut, ScalingUp, ...).
    pub target_positive: bool,
    /// The reasons of the merged condition.
    pub reasons: Reasons<'a>,
}

impl<'a> MergeStrategy<'a> {
    /// The default strategy: default priorities with the given negative types, a positive
    /// target, and the given reasons.
    pub fn new(negative_types: &'a [&'a str], reasons: Reasons<'a>) -> Self {
        MergeStrategy {
            priority: Box::new(move |condition| default_priority(condition, negative_types)),
            target_positive: true,
            reasons,
        }
    }
}

/// A condition with the object it comes from, for messages; borrowed, so that aggregating the
/// conditions of a thousand Machines copies none of them.
#[derive(Clone, Copy, Debug)]
struct SourceCondition<'a> {
    /// The kind of the object, such as `Machine`.
    kind: &'a str,
    /// Its name.
    name: &'a str,
    /// Whether it is a control plane Machine, whose messages come first.
    control_plane_machine: bool,
    /// The condition.
    condition: &'a Condition,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operation {
    Summary,
    Aggregate,
}

fn merge(
    operation: Operation,
    conditions: Vec<SourceCondition<'_>>,
    order: &[String],
    strategy: &MergeStrategy<'_>,
) -> (ConditionStatus, String, String) {
    match operation {
        Operation::Summary => merge_summary(conditions, order, strategy),
        Operation::Aggregate => merge_aggregate(&conditions, strategy),
    }
}

/// The status and reason a merge gives, by whether any condition is an issue or unknown.
fn merged_status(
    issues: bool,
    unknowns: bool,
    strategy: &MergeStrategy<'_>,
) -> (ConditionStatus, String) {
    let (status, reason) = if issues {
        (
            bool_status(!strategy.target_positive),
            strategy.reasons.issue,
        )
    } else if unknowns {
        (ConditionStatus::Unknown, strategy.reasons.unknown)
    } else {
        (bool_status(strategy.target_positive), strategy.reasons.info)
    };
    (status, reason.to_owned())
}

/// A summary of one object's conditions: issues and unknowns listed in the order of relevance
/// given, information only while all is well.
fn merge_summary(
    mut conditions: Vec<SourceCondition<'_>>,
    order: &[String],
    strategy: &MergeStrategy<'_>,
) -> (ConditionStatus, String, String) {
    // By the order of relevance given, then oldest transition first (a stable sort: equal
    // times keep the order of the sources).
    let position = |type_: &str| order.iter().position(|t| t == type_).unwrap_or(0);
    conditions.sort_by(|a, b| {
        position(&a.condition.type_)
            .cmp(&position(&b.condition.type_))
            .then_with(|| {
                a.condition
                    .last_transition_time
                    .cmp(&b.condition.last_transition_time)
            })
    });
    let priorities: Vec<Priority> = conditions
        .iter()
        .map(|condition| (strategy.priority)(condition.condition))
        .collect();
    let issues = priorities.contains(&Priority::Issue);
    let unknowns = priorities.contains(&Priority::Unknown);
    let (status, reason) = merged_status(issues, unknowns, strategy);
    let healthy = !issues && !unknowns;
    let mut messages = Vec::new();
    for (condition, priority) in conditions.iter().zip(&priorities) {
        if *priority == Priority::Info && (!healthy || condition.condition.message.is_empty()) {
            // Information is dropped while there are issues, and when it says nothing.
            continue;
        }
        let text = if condition.condition.message.is_empty() {
            format!(" {}", condition.condition.reason)
        } else {
            indent_if_multiline(&condition.condition.message)
        };
        messages.push(format!("* {}:{}", condition.condition.type_, text));
    }
    (status, reason, messages.join("\n"))
}

/// An aggregate of one condition across objects: the messages of the issues and unknowns, or
/// of the information while all is well.
///
/// Upstream sorts the conditions by transition time first (stably), and the order matters only
/// where two messages tie on everything else and their objects' names, joined in that order,
/// decide ([`aggregate_messages`]). Sorting thousands of conditions for that rare tie is most of
/// an aggregate's cost, so each object carries its place in upstream's order instead
/// ([`Place`]) and only a tie sorts.
fn merge_aggregate(
    conditions: &[SourceCondition<'_>],
    strategy: &MergeStrategy<'_>,
) -> (ConditionStatus, String, String) {
    let mut issues = 0;
    let mut unknowns = 0;
    let mut priorities = Vec::with_capacity(conditions.len());
    for condition in conditions {
        let priority = (strategy.priority)(condition.condition);
        match priority {
            Priority::Issue => issues += 1,
            Priority::Unknown => unknowns += 1,
            Priority::Info => {}
        }
        priorities.push(priority);
    }
    let (status, reason) = merged_status(issues > 0, unknowns > 0, strategy);
    let relevant = |priority: Priority| {
        if issues + unknowns > 0 {
            priority != Priority::Info
        } else {
            priority == Priority::Info
        }
    };
    let selected = conditions
        .iter()
        .zip(&priorities)
        .enumerate()
        .filter(|(_, (_, priority))| relevant(**priority))
        .map(|(index, (condition, priority))| {
            // Upstream lists the issues before the unknowns, each oldest first.
            let place = Place {
                after_issues: *priority != Priority::Issue,
                time: &condition.condition.last_transition_time,
                index,
            };
            (*condition, *priority, place)
        });
    let mut budget = 3;
    let messages = aggregate_messages(selected, &mut budget, issues + unknowns == 0);
    (status, reason, messages.join("\n"))
}

/// Where an object comes in upstream's order of an aggregate's conditions: issues before
/// unknowns, then oldest transition first, then the order of the sources.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Place<'a> {
    /// False for issues, true for unknowns (and for information, which is never mixed with
    /// either).
    after_issues: bool,
    /// The condition's last transition.
    time: &'a Time,
    /// The position of the object among the sources.
    index: usize,
}

/// Messages of an aggregate: per kind, the three most relevant messages with up to three of
/// the objects reporting each, then how many other objects report something (upstream
/// `aggregateMessages`). Each condition comes with its priority and its place in upstream's
/// order ([`Place`]).
fn aggregate_messages<'a>(
    conditions: impl Iterator<Item = (SourceCondition<'a>, Priority, Place<'a>)>,
    budget: &mut usize,
    drop_empty: bool,
) -> Vec<String> {
    struct Entry<'a> {
        objects: Vec<(Place<'a>, &'a str)>,
        priority: Priority,
        first: bool,
        /// The objects' names joined in upstream's order: the last tie-breaker, computed only
        /// for a tie.
        names: std::cell::OnceCell<String>,
    }
    impl Entry<'_> {
        fn names(&self) -> &str {
            self.names.get_or_init(|| {
                let mut objects = self.objects.clone();
                objects.sort_unstable_by_key(|(place, _)| *place);
                let names: Vec<&str> = objects.iter().map(|(_, name)| *name).collect();
                names.join(",")
            })
        }
    }
    let mut by_kind: BTreeMap<&str, BTreeMap<&str, Entry<'_>>> = BTreeMap::new();
    let mut control_plane_machines = BTreeSet::new();
    for (condition, priority, place) in conditions {
        if drop_empty && condition.condition.message.is_empty() {
            continue;
        }
        let entry = by_kind
            .entry(condition.kind)
            .or_default()
            .entry(&condition.condition.message)
            .or_insert(Entry {
                objects: Vec::new(),
                priority,
                first: false,
                names: std::cell::OnceCell::new(),
            });
        entry.objects.push((place, condition.name));
        entry.priority = entry.priority.min(priority);
        if condition.control_plane_machine {
            entry.first = true;
            control_plane_machines.insert(condition.name);
        }
    }
    let mut messages = Vec::new();
    for (kind, entries) in by_kind {
        let plural = format!("{kind}s");
        let mut entries: Vec<(&str, Entry<'_>)> = entries.into_iter().collect();
        entries.sort_by(|(_, a), (_, b)| {
            b.first
                .cmp(&a.first)
                .then(a.priority.cmp(&b.priority))
                .then(b.objects.len().cmp(&a.objects.len()))
                .then_with(|| a.names().cmp(b.names()))
        });
        let mut others: BTreeMap<Priority, usize> = BTreeMap::new();
        for (message, entry) in entries {
            if *budget == 0 {
                *others.entry(entry.priority).or_default() += entry.objects.len();
                continue;
            }
            // Control plane Machines first, then by name; only the first three are named.
            let mut names: Vec<&str> = entry.objects.iter().map(|(_, name)| *name).collect();
            let order = |a: &&str, b: &&str| {
                control_plane_machines
                    .contains(b)
                    .cmp(&control_plane_machines.contains(a))
                    .then_with(|| a.cmp(b))
            };
            if names.len() > 3 {
                names.select_nth_unstable_by(2, order);
                names[..3].sort_by(order);
            } else {
                names.sort_by(order);
            }
            let head = match names.len() {
                1 => format!("* {kind} {}:", names[0]),
                2 | 3 => format!("* {plural} {}:", names.join(", ")),
                more => format!(
                    "* {plural} {}, ... ({} more):",
                    names[..3].join(", "),
                    more - 3
                ),
            };
            messages.push(format!("{head}{}", indent_if_multiline(message)));
            *budget -= 1;
        }
        for (priority, count) in others {
            let what = match priority {
                Priority::Issue => "with other issues",
                Priority::Unknown => "with status unknown",
                Priority::Info => "with additional info",
            };
            let noun = if count == 1 { kind } else { plural.as_str() };
            messages.push(format!("And {count} {noun} {what}"));
        }
    }
    messages
}

/// A message as it follows `* Type:`: on the same line, or indented below it when it has
/// several lines or starts with a bullet (upstream `indentIfMultiline`).
fn indent_if_multiline(message: &str) -> String {
    let is_bullet = |line: &str| line.trim_start().starts_with("* ");
    if !message.contains('\n') && !is_bullet(message) {
        return format!(" {message}");
    }
    let lines: Vec<&str> = message.split('\n').collect();
    let some_without_bullet = lines.iter().any(|line| !is_bullet(line));
    let indented: Vec<String> = lines
        .iter()
        .map(|line| {
            let prefix = match (some_without_bullet, is_bullet(line)) {
                (false, _) => "  ",
                (true, false) => "  * ",
                (true, true) => "    ",
            };
            format!("{prefix}{line}")
        })
        .collect();
    format!("\n{}", indented.join("\n"))
}

/// What a summary summarizes (upstream `NewSummaryCondition` options).
pub struct SummaryOptions<'a> {
    /// The condition types, in order of relevance.
    pub for_types: Vec<String>,
    /// Types not counted as Unknown when missing.
    pub ignore_if_missing: &'a [&'a str],
    /// Conditions to use instead of the object's of the same type.
    pub overrides: Vec<Condition>,
    /// How to merge.
    pub strategy: MergeStrategy<'a>,
}

/// A condition summarizing several conditions of one object; missing conditions count as
/// Unknown `NotYetReported` unless ignored (upstream `NewSummaryCondition`).
pub fn summary(
    kind: &str,
    name: &str,
    conditions: &[Condition],
    target_type: &str,
    options: SummaryOptions<'_>,
) -> NewCondition {
    let mut in_scope: Vec<Condition> = Vec::new();
    for type_ in &options.for_types {
        let found = options
            .overrides
            .iter()
            .find(|c| &c.type_ == type_)
            .or_else(|| get(conditions, type_));
        match found {
            Some(condition) => in_scope.push(condition.clone()),
            None if options.ignore_if_missing.contains(&type_.as_str()) => {}
            None => in_scope.push(Condition {
                type_: type_.clone(),
                status: "Unknown".into(),
                reason: NOT_YET_REPORTED.into(),
                message: "Condition not yet reported".into(),
                last_transition_time: Time(Timestamp::UNIX_EPOCH),
                observed_generation: None,
            }),
        }
    }
    let sources = in_scope
        .iter()
        .map(|condition| SourceCondition {
            kind,
            name,
            control_plane_machine: false,
            condition,
        })
        .collect();
    let (status, reason, message) = merge(
        Operation::Summary,
        sources,
        &options.for_types,
        &options.strategy,
    );
    NewCondition::new(target_type, status, &reason).message(message)
}

/// One object's conditions, for [`aggregate`].
pub struct AggregateSource<'a> {
    /// The kind of the object.
    pub kind: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Whether it is a control plane Machine.
    pub control_plane_machine: bool,
    /// Its conditions.
    pub conditions: &'a [Condition],
}

/// A condition aggregating the condition of one type across objects; an object without it
/// counts as Unknown `NotYetReported` (upstream `NewAggregateCondition`). `None` when there are
/// no objects.
pub fn aggregate(
    sources: &[AggregateSource<'_>],
    source_type: &str,
    target_type: &str,
    strategy: &MergeStrategy<'_>,
) -> Option<NewCondition> {
    if sources.is_empty() {
        return None;
    }
    // One stand-in for every object that does not report the condition.
    let not_reported = Condition {
        type_: source_type.to_owned(),
        status: "Unknown".into(),
        reason: NOT_YET_REPORTED.into(),
        message: format!("Condition {source_type} not yet reported"),
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        observed_generation: None,
    };
    let conditions = sources
        .iter()
        .map(|source| SourceCondition {
            kind: source.kind,
            name: source.name,
            control_plane_machine: source.control_plane_machine,
            condition: get(source.conditions, source_type).unwrap_or(&not_reported),
        })
        .collect();
    let (status, reason, message) = merge(
        Operation::Aggregate,
        conditions,
        &[source_type.to_owned()],
        strategy,
    );
    Some(NewCondition::new(target_type, status, &reason).message(message))
}

/// A provider condition that cannot be mirrored.
#[derive(Debug, thiserror::Error)]
#[error("condition {type_} has an invalid status {status:?}")]
pub struct InvalidCondition {
    type_: String,
    status: String,
}

/// Mirrors a provider object's condition under another type, keeping its transition time; when
/// the provider does not report it, the fallback, or Unknown `NotYetReported` (upstream
/// `NewMirrorConditionFromUnstructured`). A reason-less condition (v1beta1 providers) gets
/// [`NO_REASON_REPORTED`].
pub fn mirror(
    source: Option<&ProviderCondition>,
    source_type: &str,
    target_type: &str,
    fallback: Option<NewCondition>,
) -> Result<NewCondition, InvalidCondition> {
    let Some(source) = source else {
        return Ok(fallback.unwrap_or_else(|| {
            NewCondition::new(target_type, ConditionStatus::Unknown, NOT_YET_REPORTED)
                .message(format!("Condition {source_type} not yet reported"))
        }));
    };
    let status = match source.status.as_str() {
        "True" => ConditionStatus::True,
        "False" => ConditionStatus::False,
        "Unknown" => ConditionStatus::Unknown,
        other => {
            return Err(InvalidCondition {
                type_: source.type_.clone(),
                status: other.to_owned(),
            });
        }
    };
    let reason = source
        .reason
        .clone()
        .filter(|reason| !reason.is_empty())
        .unwrap_or_else(|| NO_REASON_REPORTED.to_owned());
    Ok(NewCondition {
        type_: target_type.to_owned(),
        status,
        reason,
        message: source.message.clone().unwrap_or_default(),
        last_transition_time: source.last_transition_time.clone(),
    })
}
