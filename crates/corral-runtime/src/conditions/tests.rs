use corral_api::ConditionStatus;
use corral_api::contract::ProviderCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::*;

fn time(second: i64) -> Time {
    Time(Timestamp::from_second(second).unwrap())
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: time(100),
        observed_generation: None,
    }
}

/// Upstream `util/conditions/setter_test.go`: the transition time moves only with the status.
#[test]
fn set_moves_the_transition_time_only_when_the_status_changes() {
    let mut conditions = Vec::new();
    set(
        &mut conditions,
        NewCondition::new("Ready", ConditionStatus::False, "NotReady"),
        Some(1),
        &time(10),
    );
    assert_eq!(conditions[0].last_transition_time, time(10));
    assert_eq!(conditions[0].observed_generation, Some(1));
    set(
        &mut conditions,
        NewCondition::new("Ready", ConditionStatus::False, "StillNotReady").message("why"),
        Some(2),
        &time(20),
    );
    assert_eq!(conditions[0].last_transition_time, time(10));
    assert_eq!(conditions[0].reason, "StillNotReady");
    assert_eq!(conditions[0].message, "why");
    assert_eq!(conditions[0].observed_generation, Some(2));
    set(
        &mut conditions,
        NewCondition::new("Ready", ConditionStatus::True, "Ready"),
        Some(2),
        &time(30),
    );
    assert_eq!(conditions[0].last_transition_time, time(30));
    // A mirrored condition brings its own transition time.
    set(
        &mut conditions,
        NewCondition {
            last_transition_time: Some(time(25)),
            ..NewCondition::new("Ready", ConditionStatus::False, "Gone")
        },
        Some(2),
        &time(40),
    );
    assert_eq!(conditions[0].last_transition_time, time(25));
}

/// Upstream `util/conditions/sort.go`: Available and Ready first, Paused and Deleting last,
/// other known types in their order, gates alphabetically before Paused.
#[test]
fn set_keeps_upstreams_order() {
    let mut conditions = Vec::new();
    for type_ in [
        "Deleting",
        "MyGate",
        "Paused",
        "NodeHealthy",
        "Ready",
        "Available",
        "AGate",
    ] {
        set(
            &mut conditions,
            NewCondition::new(type_, ConditionStatus::True, "R"),
            None,
            &time(0),
        );
    }
    let order: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(
        order,
        [
            "Available",
            "Ready",
            "NodeHealthy",
            "AGate",
            "MyGate",
            "Paused",
            "Deleting"
        ]
    );
}

fn strategy<'a>(negative: &'a [&'a str]) -> MergeStrategy<'a> {
    MergeStrategy::new(
        negative,
        Reasons {
            issue: "NotAvailable",
            unknown: "AvailableUnknown",
            info: "Available",
        },
    )
}

fn options<'a>(
    types: &[&str],
    negative: &'a [&'a str],
    ignore: &'a [&'a str],
) -> SummaryOptions<'a> {
    SummaryOptions {
        for_types: types.iter().map(|t| (*t).to_owned()).collect(),
        ignore_if_missing: ignore,
        overrides: Vec::new(),
        strategy: strategy(negative),
    }
}

/// Upstream `util/conditions/summary_test.go` and `merge_strategies_test.go`: issues first,
/// then unknown; information is dropped while there are issues; messages in the order of the
/// types given.
#[test]
fn summary_surfaces_issues_then_unknown_and_drops_information() {
    let conditions = vec![
        condition("A", "True", "Fine", "all good"),
        condition("B", "False", "Broken", "b is broken"),
        condition("C", "Unknown", "Dunno", ""),
        condition("Deleting", "False", "NotDeleting", ""),
    ];
    let result = summary(
        "Cluster",
        "c",
        &conditions,
        "Available",
        options(&["Deleting", "A", "B", "C"], &["Deleting"], &[]),
    );
    assert_eq!(result.status, ConditionStatus::False);
    assert_eq!(result.reason, "NotAvailable");
    assert_eq!(result.message, "* B: b is broken\n* C: Dunno");

    let healthy = vec![
        condition("A", "True", "Fine", "all good"),
        condition("B", "True", "Fine", ""),
        condition("Deleting", "False", "NotDeleting", ""),
    ];
    let result = summary(
        "Cluster",
        "c",
        &healthy,
        "Available",
        options(&["Deleting", "A", "B"], &["Deleting"], &[]),
    );
    assert_eq!(result.status, ConditionStatus::True);
    assert_eq!(result.reason, "Available");
    // Information with a message is kept when all is well.
    assert_eq!(result.message, "* A: all good");
}

#[test]
fn summary_counts_missing_conditions_as_not_yet_reported_unless_ignored() {
    let conditions = vec![condition("A", "True", "Fine", "")];
    let missing = summary(
        "Machine",
        "m",
        &conditions,
        "Ready",
        options(&["A", "B"], &[], &[]),
    );
    assert_eq!(missing.status, ConditionStatus::Unknown);
    assert_eq!(missing.message, "* B: Condition not yet reported");
    let ignored = summary(
        "Machine",
        "m",
        &conditions,
        "Ready",
        options(&["A", "B"], &[], &["B"]),
    );
    assert_eq!(ignored.status, ConditionStatus::True);
}

#[test]
fn summary_indents_multiline_messages() {
    let conditions = vec![condition("A", "False", "Bad", "* first\n* second")];
    let result = summary(
        "Machine",
        "m",
        &conditions,
        "Ready",
        options(&["A"], &[], &[]),
    );
    assert_eq!(result.message, "* A:\n  * first\n  * second");
    let conditions = vec![condition("A", "False", "Bad", "line one\n* bullet")];
    let result = summary(
        "Machine",
        "m",
        &conditions,
        "Ready",
        options(&["A"], &[], &[]),
    );
    assert_eq!(result.message, "* A:\n  * line one\n    * bullet");
}

/// Upstream `merge_strategies_test.go` (aggregate): up to three messages, objects grouped by
/// message, the most common first, then counts of the others.
#[test]
fn aggregate_groups_objects_by_message() {
    let broken = vec![condition("Ready", "False", "NotReady", "disk full")];
    let unknown = vec![condition("Ready", "Unknown", "ReadyUnknown", "no news")];
    let fine = vec![condition("Ready", "True", "Ready", "")];
    let other = |message: &str| vec![condition("Ready", "False", "NotReady", message)];
    let (o1, o2, o3) = (other("one"), other("two"), other("three"));
    let source = |name: &'static str, conditions: &'static [Condition]| AggregateSource {
        kind: "Machine",
        name,
        control_plane_machine: false,
        conditions,
    };
    let leak = |c: Vec<Condition>| -> &'static [Condition] { Box::leak(c.into_boxed_slice()) };
    let (broken, unknown, fine) = (leak(broken), leak(unknown), leak(fine));
    let sources = vec![
        source("m5", broken),
        source("m1", broken),
        source("m2", broken),
        source("m3", broken),
        source("m4", unknown),
        source("m6", fine),
        source("m7", leak(o1)),
        source("m8", leak(o2)),
        source("m9", leak(o3)),
    ];
    let result = aggregate(&sources, "Ready", "MachinesReady", &strategy(&[])).unwrap();
    assert_eq!(result.status, ConditionStatus::False);
    assert_eq!(result.reason, "NotAvailable");
    assert_eq!(
        result.message,
        "* Machines m1, m2, m3, ... (1 more): disk full\n\
         * Machine m7: one\n\
         * Machine m8: two\n\
         And 1 Machine with other issues\n\
         And 1 Machine with status unknown"
    );
    assert!(aggregate(&[], "Ready", "MachinesReady", &strategy(&[])).is_none());
}

#[test]
fn aggregate_counts_objects_without_the_condition_as_unknown() {
    let sources = [AggregateSource {
        kind: "MachineDeployment",
        name: "md",
        control_plane_machine: false,
        conditions: &[],
    }];
    let result = aggregate(&sources, "Available", "WorkersAvailable", &strategy(&[])).unwrap();
    assert_eq!(result.status, ConditionStatus::Unknown);
    assert_eq!(
        result.message,
        "* MachineDeployment md: Condition Available not yet reported"
    );
}

/// Upstream `util/conditions/mirror_test.go`.
#[test]
fn mirror_copies_the_condition_or_falls_back() {
    let source = ProviderCondition {
        type_: "Ready".into(),
        status: "False".into(),
        reason: None,
        message: Some("booting".into()),
        last_transition_time: Some(time(5)),
        observed_generation: Some(9),
    };
    let mirrored = mirror(Some(&source), "Ready", "InfrastructureReady", None).unwrap();
    assert_eq!(mirrored.type_, "InfrastructureReady");
    assert_eq!(mirrored.status, ConditionStatus::False);
    assert_eq!(mirrored.reason, NO_REASON_REPORTED);
    assert_eq!(mirrored.message, "booting");
    assert_eq!(mirrored.last_transition_time, Some(time(5)));

    let missing = mirror(None, "Ready", "InfrastructureReady", None).unwrap();
    assert_eq!(missing.status, ConditionStatus::Unknown);
    assert_eq!(missing.reason, NOT_YET_REPORTED);
    assert_eq!(missing.message, "Condition Ready not yet reported");

    let fallback = NewCondition::new("InfrastructureReady", ConditionStatus::False, "NotReady");
    assert_eq!(
        mirror(None, "Ready", "InfrastructureReady", Some(fallback.clone())).unwrap(),
        fallback
    );

    let invalid = ProviderCondition {
        status: "Maybe".into(),
        ..source
    };
    assert!(mirror(Some(&invalid), "Ready", "InfrastructureReady", None).is_err());
}

/// The aggregate as first written, sorting every condition by transition time up front (as
/// upstream's `aggregateMessages` does): the reference [`aggregate`] must agree with.
fn reference_aggregate(
    sources: &[AggregateSource<'_>],
    source_type: &str,
    strategy: &MergeStrategy<'_>,
) -> (ConditionStatus, String, String) {
    let not_reported = Condition {
        type_: source_type.to_owned(),
        status: "Unknown".into(),
        reason: NOT_YET_REPORTED.into(),
        message: format!("Condition {source_type} not yet reported"),
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        observed_generation: None,
    };
    let mut conditions: Vec<(&AggregateSource<'_>, &Condition)> = sources
        .iter()
        .map(|source| {
            let condition = get(source.conditions, source_type).unwrap_or(&not_reported);
            (source, condition)
        })
        .collect();
    conditions.sort_by(|a, b| a.1.last_transition_time.cmp(&b.1.last_transition_time));
    let prioritized: Vec<_> = conditions
        .iter()
        .map(|(source, condition)| (*source, *condition, (strategy.priority)(condition)))
        .collect();
    let of = |wanted: Priority| -> Vec<_> {
        prioritized
            .iter()
            .filter(|(_, _, priority)| *priority == wanted)
            .copied()
            .collect()
    };
    let (issues, unknowns, infos) = (
        of(Priority::Issue),
        of(Priority::Unknown),
        of(Priority::Info),
    );
    let (status, reason) = if !issues.is_empty() {
        (
            bool_status(!strategy.target_positive),
            strategy.reasons.issue,
        )
    } else if !unknowns.is_empty() {
        (ConditionStatus::Unknown, strategy.reasons.unknown)
    } else {
        (bool_status(strategy.target_positive), strategy.reasons.info)
    };
    let (relevant, drop_empty) = if issues.is_empty() && unknowns.is_empty() {
        (infos, true)
    } else {
        ([issues, unknowns].concat(), false)
    };
    type Entry<'a> = (Vec<&'a str>, Priority, bool);
    let mut by_kind: BTreeMap<&str, BTreeMap<&str, Entry<'_>>> = BTreeMap::new();
    let mut control_plane = BTreeSet::new();
    for (source, condition, priority) in &relevant {
        if drop_empty && condition.message.is_empty() {
            continue;
        }
        let entry = by_kind
            .entry(source.kind)
            .or_default()
            .entry(condition.message.as_str())
            .or_insert((Vec::new(), *priority, false));
        entry.0.push(source.name);
        entry.1 = entry.1.min(*priority);
        if source.control_plane_machine {
            entry.2 = true;
            control_plane.insert(source.name);
        }
    }
    let mut budget = 3;
    let mut messages = Vec::new();
    for (kind, entries) in by_kind {
        let mut entries: Vec<_> = entries.into_iter().collect();
        entries.sort_by(|(_, a), (_, b)| {
            b.2.cmp(&a.2)
                .then(a.1.cmp(&b.1))
                .then(b.0.len().cmp(&a.0.len()))
                .then_with(|| a.0.join(",").cmp(&b.0.join(",")))
        });
        let mut others: BTreeMap<Priority, usize> = BTreeMap::new();
        for (message, (mut names, priority, _)) in entries {
            if budget == 0 {
                *others.entry(priority).or_default() += names.len();
                continue;
            }
            names.sort_by(|a, b| {
                control_plane
                    .contains(b)
                    .cmp(&control_plane.contains(a))
                    .then_with(|| a.cmp(b))
            });
            let head = match names.len() {
                1 => format!("* {kind} {}:", names[0]),
                2 | 3 => format!("* {kind}s {}:", names.join(", ")),
                more => format!(
                    "* {kind}s {}, ... ({} more):",
                    names[..3].join(", "),
                    more - 3
                ),
            };
            messages.push(format!("{head}{}", indent_if_multiline(message)));
            budget -= 1;
        }
        for (priority, count) in others {
            let what = match priority {
                Priority::Issue => "with other issues",
                Priority::Unknown => "with status unknown",
                Priority::Info => "with additional info",
            };
            let noun = if count == 1 {
                kind.to_owned()
            } else {
                format!("{kind}s")
            };
            messages.push(format!("And {count} {noun} {what}"));
        }
    }
    (status, reason.to_owned(), messages.join("\n"))
}

/// The aggregate places objects in upstream's order only where a tie needs it; on thousands of
/// random inputs full of ties (same times, same counts, control plane Machines, several kinds)
/// it says exactly what sorting everything first says.
#[test]
fn aggregate_agrees_with_sorting_everything_first() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    let statuses = ["True", "False", "Unknown"];
    let messages = ["", "disk full", "no news", "two\nlines", "* bullet"];
    let kinds = ["Machine", "MachinePool"];
    for round in 0..3000 {
        let count = next(12) as usize;
        let per_object: Vec<Vec<Condition>> = (0..count)
            .map(|_| {
                if next(6) == 0 {
                    return Vec::new();
                }
                let mut c = condition(
                    "Ready",
                    statuses[next(3) as usize],
                    "Why",
                    messages[next(5) as usize],
                );
                c.last_transition_time = time(next(3) as i64);
                vec![c]
            })
            .collect();
        let names: Vec<String> = (0..count)
            .map(|i| format!("m{}", (i * 7 + round) % 13))
            .collect();
        let sources: Vec<AggregateSource<'_>> = (0..count)
            .map(|i| AggregateSource {
                kind: kinds[(next(4) == 0) as usize],
                name: &names[i],
                control_plane_machine: next(3) == 0,
                conditions: &per_object[i],
            })
            .collect();
        let negative: &[&str] = if round % 2 == 0 { &[] } else { &["Ready"] };
        let got = aggregate(&sources, "Ready", "MachinesReady", &strategy(negative))
            .map(|c| (c.status, c.reason, c.message));
        let expected =
            (count > 0).then(|| reference_aggregate(&sources, "Ready", &strategy(negative)));
        assert_eq!(got, expected, "round {round}");
    }
}
