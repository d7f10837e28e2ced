//! Fields that hold either a number or a percentage of some total (`maxSurge`,
//! `maxUnavailable`, `unhealthyLessThanOrEqualTo`, `maxInFlight`), resolved as upstream does with
//! apimachinery's `intstr.GetScaledValueFromIntOrPercent`.
//!
//! Kept here because MachineDeployments were its first user; MachineHealthChecks use it too.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Why an int-or-string value could not be resolved. The messages are apimachinery's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IntOrPercentError {
    /// A string that does not end in `%`.
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotAPercentage,
    /// A string ending in `%` whose number is not an integer.
    #[error("invalid value for IntOrString: invalid value {0:?}: not an integer percentage")]
    InvalidPercentage(String),
}

/// The value itself when it is a number; `percent × total / 100` when it is a percentage,
/// rounded up or down as asked.
///
/// Upstream rounds maxSurge up, and maxUnavailable and unhealthyLessThanOrEqualTo down.
pub fn scaled_value(
    value: &IntOrString,
    total: i32,
    round_up: bool,
) -> Result<i32, IntOrPercentError> {
    match value {
        IntOrString::Int(number) => Ok(*number),
        IntOrString::String(text) => {
            let Some(number) = text.strip_suffix('%') else {
                return Err(IntOrPercentError::NotAPercentage);
            };
            // Go's strconv.Atoi takes the same forms as Rust's integer parsing: an optional
            // sign, then decimal digits.
            let percent: i64 = number
                .parse()
                .map_err(|_| IntOrPercentError::InvalidPercentage(text.clone()))?;
            let product = percent.saturating_mul(i64::from(total));
            let scaled = if round_up {
                product.div_euclid(100) + i64::from(product.rem_euclid(100) != 0)
            } else {
                product.div_euclid(100)
            };
            Ok(scaled.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32)
        }
    }
}

/// The value as a user wrote it, for messages: `3` or `40%` (Go's `IntOrString.String`).
pub fn display(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(number) => number.to_string(),
        IntOrString::String(text) => text.clone(),
    }
}

#[cfg(test)]
mod tests;
