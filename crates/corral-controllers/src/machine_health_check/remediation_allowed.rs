//! Whether a MachineHealthCheck may remediate at all, given how many of its targets are
//! unhealthy: the `remediation.triggerIf` short-circuit (upstream `isAllowedRemediation`,
//! `getUnhealthyRange` and `getMaxUnhealthy` in
//! `core/reconcilers/machinehealthcheck/machinehealthcheck_controller.go`).
//!
//! Many unhealthy Machines at once usually mean the cause is not the Machines (a network
//! partition, a broken control plane), and replacing them would make things worse. So:
//!
//! - `unhealthyInRange: "[min-max]"`, when set, allows remediation while `min ≤ unhealthy ≤ max`,
//!   and leaves room for `max − unhealthy` more;
//! - otherwise `unhealthyLessThanOrEqualTo` (a number, or a percentage of the targets rounded
//!   down; 100% when unset) allows it while `unhealthy ≤ threshold`, and leaves room for
//!   `threshold − unhealthy` more.
//!
//! "Unhealthy" counts every target that is not healthy, including those not yet judged (no
//! Node yet, a condition within its timeout): upstream's `expectedMachines − currentHealthy`.
//! The message, though, counts only the targets judged unhealthy, as upstream's does
//! (`len(unhealthy)`); the two differ while some targets are not yet judged.

use corral_api::MachineHealthCheckRemediationTriggerIf;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::machine_deployment::int_or_percent::{IntOrPercentError, display, scaled_value};

#[cfg(test)]
mod tests;

/// How a MachineHealthCheck's targets were judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetCounts {
    /// All targets (`status.expectedMachines`).
    pub expected: i32,
    /// The healthy ones (`status.currentHealthy`).
    pub healthy: i32,
    /// The ones judged unhealthy; those neither healthy nor unhealthy are not yet judged.
    pub unhealthy: i32,
}

/// The answer of [`compute_remediation_allowed`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemediationAllowance {
    /// Whether unhealthy Machines may be remediated now (the `RemediationAllowed` condition).
    pub allowed: bool,
    /// How many more Machines may become unhealthy and still be remediated
    /// (`status.remediationsAllowed`); 0 when remediation is not allowed.
    pub remediations_allowed: i32,
    /// When not allowed, the message of the `RemediationAllowed` condition and of the
    /// `RemediationRestricted` event, upstream's words.
    pub message: Option<String>,
}

/// Why the `triggerIf` bounds could not be read. The API schema refuses such values, so these
/// come only from objects written around it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RemediationAllowedError {
    /// `unhealthyLessThanOrEqualTo` is neither a number nor a percentage.
    #[error(transparent)]
    UnhealthyLessThanOrEqualTo(#[from] IntOrPercentError),
    /// `unhealthyInRange` is not of the form `[min-max]`.
    #[error("invalid unhealthyInRange {0:?}: must be [min-max] with non-negative integers")]
    ParseUnhealthyInRange(String),
    /// `unhealthyInRange` has its bounds the wrong way round.
    #[error("max value {max} cannot be less than min value {min} for unhealthyRange")]
    UnhealthyInRangeReversed {
        /// The lower bound as written.
        min: u32,
        /// The upper bound as written.
        max: u32,
    },
}

/// Whether a MachineHealthCheck whose targets were judged as `counts` says may remediate
/// under `trigger_if`.
pub fn compute_remediation_allowed(
    counts: TargetCounts,
    trigger_if: &MachineHealthCheckRemediationTriggerIf,
) -> Result<RemediationAllowance, RemediationAllowedError> {
    let total_targets = counts.expected;
    let not_healthy = counts.expected - counts.healthy;
    let unhealthy = counts.unhealthy;
    if let Some(range) = trigger_if
        .unhealthy_in_range
        .as_deref()
        .filter(|range| !range.is_empty())
    {
        let (min, max) = parse_unhealthy_range(range)?;
        let (min, max) = (i64::from(min), i64::from(max));
        let count = i64::from(not_healthy);
        if (min..=max).contains(&count) {
            return Ok(allowed(max - count));
        }
        return Ok(not_allowed(format!(
            "Remediation is not allowed, the number of not started or unhealthy machines does not fall within the range (total: {total_targets}, unhealthy: {unhealthy}, unhealthyRange: {range})"
        )));
    }
    let threshold = max_unhealthy(trigger_if, total_targets)?;
    if not_healthy <= threshold {
        return Ok(allowed(i64::from(threshold) - i64::from(not_healthy)));
    }
    let written = trigger_if
        .unhealthy_less_than_or_equal_to
        .as_ref()
        .map_or_else(|| DEFAULT_MAX_UNHEALTHY.to_string(), display);
    Ok(not_allowed(format!(
        "Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: {total_targets}, unhealthy: {unhealthy}, maxUnhealthy: {written})"
    )))
}

/// Upstream's default for `unhealthyLessThanOrEqualTo`: remediation is never held back.
const DEFAULT_MAX_UNHEALTHY: &str = "100%";

/// Upstream `getMaxUnhealthy`: the threshold, a percentage of the targets rounded down.
fn max_unhealthy(
    trigger_if: &MachineHealthCheckRemediationTriggerIf,
    total_targets: i32,
) -> Result<i32, IntOrPercentError> {
    let default = IntOrString::String(DEFAULT_MAX_UNHEALTHY.into());
    let value = trigger_if
        .unhealthy_less_than_or_equal_to
        .as_ref()
        .unwrap_or(&default);
    scaled_value(value, total_targets, false)
}

/// Upstream `getUnhealthyRange`: `[min-max]` with unsigned integers and `min ≤ max`.
fn parse_unhealthy_range(range: &str) -> Result<(u32, u32), RemediationAllowedError> {
    let invalid = || RemediationAllowedError::ParseUnhealthyInRange(range.to_string());
    let inner = range
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or_else(invalid)?;
    let (min, max) = inner.split_once('-').ok_or_else(invalid)?;
    let bound = |text: &str| -> Result<u32, RemediationAllowedError> {
        // Go's ParseUint takes digits only, no sign.
        if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(invalid());
        }
        text.parse().map_err(|_| invalid())
    };
    let (min, max) = (bound(min)?, bound(max)?);
    if max < min {
        return Err(RemediationAllowedError::UnhealthyInRangeReversed { min, max });
    }
    Ok((min, max))
}

fn allowed(room: i64) -> RemediationAllowance {
    RemediationAllowance {
        allowed: true,
        remediations_allowed: room.clamp(0, i64::from(i32::MAX)) as i32,
        message: None,
    }
}

fn not_allowed(message: String) -> RemediationAllowance {
    RemediationAllowance {
        allowed: false,
        remediations_allowed: 0,
        message: Some(message),
    }
}
