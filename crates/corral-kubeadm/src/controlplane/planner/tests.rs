//! Table tests with upstream's vectors (`failure_domains_test.go` `TestPickFewestNew`,
//! `scale_test.go` `TestSelectMachineForInPlaceUpdateOrScaleDown`, `update_test.go`
//! `Test_rollingUpdate`, `remediation_test.go` `TestCanSafelyRemoveEtcdMember`).

use k8s_openapi::jiff::Timestamp;

use super::*;

fn domains(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn at(hours: i64) -> Option<Timestamp> {
    Some(Timestamp::from_second(1_800_000_000 + hours * 3600).unwrap())
}

fn machine(name: &str, domain: &str, hours: i64, up_to_date: bool) -> MachineView {
    MachineView {
        name: name.into(),
        created: at(hours),
        failure_domain: (!domain.is_empty()).then(|| domain.to_string()),
        up_to_date,
        has_node: true,
        ..Default::default()
    }
}

#[test]
fn scale_up_goes_to_the_domain_with_the_fewest_up_to_date_machines() {
    let fds = domains(&["a", "b", "c"]);
    let cases: Vec<(&str, Vec<MachineView>, &[&str])> = vec![
        ("no machines", vec![], &["a"]),
        ("one in a", vec![machine("a1", "a", 0, true)], &["b"]),
        (
            "a and b",
            vec![machine("a1", "a", 0, true), machine("b1", "b", 0, true)],
            &["c"],
        ),
        (
            "all outdated",
            vec![
                machine("a1", "a", 0, false),
                machine("b1", "b", 0, false),
                machine("c1", "c", 0, false),
            ],
            &["a"],
        ),
        (
            "a new, b and c old",
            vec![
                machine("a1", "a", 0, true),
                machine("b1", "b", 0, false),
                machine("c1", "c", 0, false),
            ],
            &["b"],
        ),
        (
            "a and b new, c old",
            vec![
                machine("a1", "a", 0, true),
                machine("b1", "b", 0, true),
                machine("c1", "c", 0, false),
            ],
            &["c"],
        ),
        (
            "a old, c old and new",
            vec![
                machine("a1", "a", 0, false),
                machine("c1", "c", 0, false),
                machine("c2", "c", 0, true),
            ],
            &["b"],
        ),
    ];
    for (name, machines, expected) in cases {
        let picked = pick_failure_domain_for_scale_up(&fds, &machines);
        assert!(
            picked.as_deref().is_some_and(|p| expected.contains(&p)),
            "{name}: picked {picked:?}, expected one of {expected:?}"
        );
    }
    assert_eq!(pick_failure_domain_for_scale_up(&[], &[]), None);
}

#[test]
fn scale_down_removes_the_oldest_eligible_machine_of_the_largest_domain() {
    let fds = domains(&["one", "two"]);
    let base = vec![
        machine("m1", "one", 1, true),
        machine("m2", "one", -3, true),
        machine("m3", "one", -4, true),
        machine("m4", "two", -1, true),
        machine("m5", "two", -2, false),
    ];
    // An outdated machine goes first, even from the smaller domain.
    assert_eq!(
        select_machine_for_scale_down(&fds, &base).unwrap().name,
        "m5"
    );
    // None outdated: the oldest of the largest domain.
    let mut all_current = base.clone();
    all_current[4].up_to_date = true;
    assert_eq!(
        select_machine_for_scale_down(&fds, &all_current)
            .unwrap()
            .name,
        "m3"
    );
    // Annotated machines first: the oldest annotated.
    let mut annotated = all_current.clone();
    annotated.push(MachineView {
        delete_annotation: true,
        ..machine("m7", "two", -5, true)
    });
    annotated.push(MachineView {
        delete_annotation: true,
        ..machine("m8", "two", -6, true)
    });
    assert_eq!(
        select_machine_for_scale_down(&fds, &annotated)
            .unwrap()
            .name,
        "m8"
    );
    // Among outdated machines, one with unhealthy components first.
    let mut unhealthy = all_current.clone();
    unhealthy.push(machine("m9", "two", -7, false));
    unhealthy.push(MachineView {
        components_unhealthy: true,
        ..machine("m10", "two", -1, false)
    });
    assert_eq!(
        select_machine_for_scale_down(&fds, &unhealthy)
            .unwrap()
            .name,
        "m10"
    );
    // Machines in an unknown failure domain go first; deleting ones never.
    let mut unknown = all_current.clone();
    unknown.push(machine("gone", "removed", 5, true));
    assert_eq!(
        select_machine_for_scale_down(&fds, &unknown).unwrap().name,
        "gone"
    );
    let deleting: Vec<MachineView> = base
        .iter()
        .map(|m| MachineView {
            deleting: true,
            ..m.clone()
        })
        .collect();
    assert_eq!(select_machine_for_scale_down(&fds, &deleting), None);
}

#[test]
fn rolling_updates_surge_then_scale_down() {
    let cases = [
        (3, 1, 3, RolloutStep::ScaleUp),
        (3, 1, 4, RolloutStep::ScaleDown),
        (3, 0, 3, RolloutStep::ScaleDown),
        (3, 0, 2, RolloutStep::ScaleUp),
        (1, 1, 1, RolloutStep::ScaleUp),
        (1, 1, 2, RolloutStep::ScaleDown),
    ];
    for (replicas, surge, current, expected) in cases {
        assert_eq!(
            compute_rollout_step(replicas, surge, current),
            expected,
            "replicas {replicas}, maxSurge {surge}, current {current}"
        );
    }
}

fn members(healthy: &[bool]) -> Vec<MemberHealth> {
    healthy
        .iter()
        .enumerate()
        .map(|(i, healthy)| MemberHealth {
            name: format!("m{i}"),
            healthy: *healthy,
        })
        .collect()
}

#[test]
fn removing_an_etcd_member_must_keep_quorum() {
    // (members' health, target index, safe)
    let cases: &[(&[bool], bool)] = &[
        (&[false], false),
        (&[false, true], true),
        (&[false, false], false),
        (&[false, true, true], true),
        (&[false, false, true], false),
        (&[false, true, true, true, true], true),
        (&[false, false, true, true, true], true),
        (&[false, false, false, true, true], false),
        (&[false, false, false, true, true, true, true], true),
        (&[false, false, false, false, true, true, true], false),
    ];
    for (health, safe) in cases {
        assert_eq!(
            can_safely_remove_etcd_member(&members(health), "m0"),
            *safe,
            "{health:?}"
        );
    }
}

#[test]
fn the_most_broken_machine_is_remediated_first() {
    let old = machine("old", "", -10, true);
    let annotated = MachineView {
        remediate_annotation: true,
        ..machine("annotated", "", 0, true)
    };
    let no_node = MachineView {
        has_node: false,
        ..machine("no-node", "", 0, true)
    };
    let etcd = MachineView {
        etcd_unhealthy: true,
        ..machine("etcd", "", 0, true)
    };
    let components = MachineView {
        components_unhealthy: true,
        ..machine("components", "", 0, true)
    };
    let pick = |set: &[&MachineView]| select_machine_to_remediate(set).unwrap().name.clone();
    assert_eq!(
        pick(&[&old, &components, &etcd, &no_node, &annotated]),
        "annotated"
    );
    assert_eq!(pick(&[&old, &components, &etcd, &no_node]), "no-node");
    assert_eq!(pick(&[&old, &components, &etcd]), "etcd");
    assert_eq!(pick(&[&old, &components]), "components");
    assert_eq!(
        pick(&[&machine("young", "", 0, true), &old]),
        "old",
        "the oldest when none is more broken"
    );
}

#[test]
fn retries_respect_max_retry_retry_period_and_min_healthy_period() {
    let now = Timestamp::from_second(1_800_000_000).unwrap();
    let ago = |seconds: i64| PreviousRemediation {
        retry_count: 2,
        time: Timestamp::from_second(1_800_000_000 - seconds).unwrap(),
    };
    assert_eq!(
        compute_retry(None, now, Some(1), 0, 3600),
        RetryDecision::Remediate { retry_count: 0 }
    );
    assert_eq!(
        compute_retry(Some(&ago(60)), now, Some(2), 0, 3600),
        RetryDecision::MaxRetryReached { max_retry: 2 }
    );
    assert_eq!(
        compute_retry(Some(&ago(60)), now, None, 300, 3600),
        RetryDecision::WaitRetryPeriod {
            remaining_seconds: 240
        }
    );
    assert_eq!(
        compute_retry(Some(&ago(600)), now, Some(5), 300, 3600),
        RetryDecision::Remediate { retry_count: 3 }
    );
    // Healthy longer than minHealthyPeriod: a fresh start, whatever maxRetry says.
    assert_eq!(
        compute_retry(Some(&ago(7200)), now, Some(2), 300, 3600),
        RetryDecision::Remediate { retry_count: 0 }
    );
}
