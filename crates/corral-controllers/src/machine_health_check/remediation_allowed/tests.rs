//! Vectors ported from upstream
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_controller_test.go`
//! (`TestIsAllowedRemediation`, `TestGetMaxUnhealthy`, and the short-circuit cases of
//! `TestMachineHealthCheck_Reconcile`).

use corral_api::MachineHealthCheckRemediationTriggerIf;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::*;

fn less_than_or_equal_to(value: Option<IntOrString>) -> MachineHealthCheckRemediationTriggerIf {
    MachineHealthCheckRemediationTriggerIf {
        unhealthy_less_than_or_equal_to: value,
        unhealthy_in_range: None,
    }
}

fn in_range(range: &str) -> MachineHealthCheckRemediationTriggerIf {
    MachineHealthCheckRemediationTriggerIf {
        unhealthy_less_than_or_equal_to: None,
        unhealthy_in_range: Some(range.into()),
    }
}

/// `expected` targets, `not_healthy` of them judged unhealthy and the others healthy.
fn all_judged(expected: i32, not_healthy: i32) -> TargetCounts {
    TargetCounts {
        expected,
        healthy: expected - not_healthy,
        unhealthy: not_healthy,
    }
}

fn percent(text: &str) -> Option<IntOrString> {
    Some(IntOrString::String(text.into()))
}

#[test]
fn upstream_is_allowed_remediation() {
    // (description, unhealthyLessThanOrEqualTo, expected machines, currently healthy, allowed)
    let cases = [
        ("when maxUnhealthy is not set", None, 3, 0, Some(true)),
        (
            "when maxUnhealthy is not an int or percentage",
            percent("abcdef"),
            5,
            2,
            None,
        ),
        (
            "when maxUnhealthy is an int less than current unhealthy",
            Some(IntOrString::Int(1)),
            3,
            1,
            Some(false),
        ),
        (
            "when maxUnhealthy is an int equal to current unhealthy",
            Some(IntOrString::Int(2)),
            3,
            1,
            Some(true),
        ),
        (
            "when maxUnhealthy is an int greater than current unhealthy",
            Some(IntOrString::Int(3)),
            3,
            1,
            Some(true),
        ),
        (
            "when maxUnhealthy is a percentage less than current unhealthy",
            percent("50%"),
            5,
            2,
            Some(false),
        ),
        (
            "when maxUnhealthy is a percentage equal to current unhealthy",
            percent("60%"),
            5,
            2,
            Some(true),
        ),
        (
            "when maxUnhealthy is a percentage greater than current unhealthy",
            percent("70%"),
            5,
            2,
            Some(true),
        ),
    ];
    for (description, value, expected, healthy, allowed) in cases {
        let result = compute_remediation_allowed(
            all_judged(expected, expected - healthy),
            &less_than_or_equal_to(value),
        );
        // Upstream's isAllowedRemediation answers false with its error; here the error is the
        // answer.
        assert_eq!(
            result.ok().map(|result| result.allowed),
            allowed,
            "{description}"
        );
    }
}

#[test]
fn upstream_get_max_unhealthy() {
    // (description, unhealthyLessThanOrEqualTo, machines, expected threshold)
    let cases = [
        ("when maxUnhealthy is nil", None, 7, 7),
        (
            "when maxUnhealthy is an int",
            Some(IntOrString::Int(3)),
            2,
            3,
        ),
        ("when maxUnhealthy is a 40% (of 5)", percent("40%"), 5, 2),
        ("when maxUnhealthy is a 60% (of 7)", percent("60%"), 7, 4),
    ];
    for (description, value, machines, threshold) in cases {
        assert_eq!(
            max_unhealthy(&less_than_or_equal_to(value), machines),
            Ok(threshold),
            "{description}"
        );
    }
    let error = max_unhealthy(&less_than_or_equal_to(percent("abcdef")), 3).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid value for IntOrString: invalid type: string is not a percentage",
        "when maxUnhealthy is not an int or percentage"
    );
}

#[test]
fn upstream_reconcile_short_circuit_cases() {
    // "it marks unhealthy machines as unhealthy but not for remediation when the unhealthy
    // Machines exceed UnhealthyLessThanOrEqualTo": 40% of 3 is 1.
    assert_eq!(
        compute_remediation_allowed(
            all_judged(3, 2),
            &less_than_or_equal_to(percent("40%"))),
        Ok(RemediationAllowance {
            allowed: false,
            remediations_allowed: 0,
            message: Some(
                "Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 40%)"
                    .into()
            ),
        })
    );
    // "it marks unhealthy machines for remediation when number of unhealthy machines is within
    // unhealthyRange".
    assert_eq!(
        compute_remediation_allowed(all_judged(3, 1), &in_range("[1-3]")),
        Ok(RemediationAllowance {
            allowed: true,
            remediations_allowed: 2,
            message: None,
        })
    );
    // "it marks unhealthy machines as unhealthy but not for remediation when the unhealthy
    // Machines is not within UnhealthyInRange".
    assert_eq!(
        compute_remediation_allowed(
            all_judged(3, 2),
            &in_range("[3-5]")),
        Ok(RemediationAllowance {
            allowed: false,
            remediations_allowed: 0,
            message: Some(
                "Remediation is not allowed, the number of not started or unhealthy machines does not fall within the range (total: 3, unhealthy: 2, unhealthyRange: [3-5])"
                    .into()
            ),
        })
    );
}

#[test]
fn remediations_allowed_is_the_room_left() {
    let unset = less_than_or_equal_to(None);
    assert_eq!(
        compute_remediation_allowed(all_judged(5, 0), &unset)
            .unwrap()
            .remediations_allowed,
        5,
        "100% by default"
    );
    let two = less_than_or_equal_to(Some(IntOrString::Int(2)));
    assert_eq!(
        compute_remediation_allowed(all_judged(5, 2), &two)
            .unwrap()
            .remediations_allowed,
        0
    );
    assert_eq!(
        compute_remediation_allowed(all_judged(5, 1), &two)
            .unwrap()
            .remediations_allowed,
        1
    );
    // No targets, nothing unhealthy: allowed, with no room under a percentage.
    let forty = less_than_or_equal_to(percent("40%"));
    assert_eq!(
        compute_remediation_allowed(all_judged(0, 0), &forty),
        Ok(RemediationAllowance {
            allowed: true,
            remediations_allowed: 0,
            message: None
        })
    );
    // The default's message names 100%.
    assert!(
        compute_remediation_allowed(all_judged(2, 3), &unset)
            .unwrap()
            .message
            .unwrap()
            .ends_with("maxUnhealthy: 100%)")
    );
}

#[test]
fn the_range_takes_precedence_and_includes_its_bounds() {
    let both = MachineHealthCheckRemediationTriggerIf {
        unhealthy_less_than_or_equal_to: Some(IntOrString::Int(0)),
        unhealthy_in_range: Some("[2-4]".into()),
    };
    for (unhealthy, allowed) in [(1, false), (2, true), (4, true), (5, false)] {
        assert_eq!(
            compute_remediation_allowed(all_judged(10, unhealthy), &both)
                .unwrap()
                .allowed,
            allowed,
            "{unhealthy} unhealthy"
        );
    }
    // An empty range counts as unset, as upstream compares with "".
    let empty = MachineHealthCheckRemediationTriggerIf {
        unhealthy_less_than_or_equal_to: Some(IntOrString::Int(1)),
        unhealthy_in_range: Some(String::new()),
    };
    assert!(
        !compute_remediation_allowed(all_judged(3, 2), &empty)
            .unwrap()
            .allowed
    );
}

#[test]
fn malformed_ranges_are_errors() {
    for range in [
        "1-3", "[1-3", "[13]", "[a-3]", "[1-b]", "[-1-3]", "[+1-3]", "[1-]", "[]",
    ] {
        assert_eq!(
            compute_remediation_allowed(all_judged(3, 1), &in_range(range)),
            Err(RemediationAllowedError::ParseUnhealthyInRange(range.into())),
            "{range}"
        );
    }
    let reversed = compute_remediation_allowed(all_judged(3, 1), &in_range("[5-3]")).unwrap_err();
    assert_eq!(
        reversed,
        RemediationAllowedError::UnhealthyInRangeReversed { min: 5, max: 3 }
    );
    assert_eq!(
        reversed.to_string(),
        "max value 3 cannot be less than min value 5 for unhealthyRange"
    );
}

#[test]
fn the_message_counts_only_targets_judged_unhealthy() {
    // Upstream decides on expectedMachines − currentHealthy (here 3 − 0) but prints
    // len(unhealthy): a target without a Node yet weighs against the bound without being
    // called unhealthy.
    let counts = TargetCounts {
        expected: 3,
        healthy: 0,
        unhealthy: 2,
    };
    let result =
        compute_remediation_allowed(counts, &less_than_or_equal_to(Some(IntOrString::Int(2))))
            .unwrap();
    assert!(!result.allowed);
    assert_eq!(
        result.message.as_deref(),
        Some(
            "Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 2)"
        )
    );
    let result = compute_remediation_allowed(counts, &in_range("[1-2]")).unwrap();
    assert_eq!(
        result.message.as_deref(),
        Some(
            "Remediation is not allowed, the number of not started or unhealthy machines does not fall within the range (total: 3, unhealthy: 2, unhealthyRange: [1-2])"
        )
    );
}
