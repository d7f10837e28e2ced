//! Conditions: setting one the way upstream's `conditions.Set` does (the transition time moves
//! only when the status changes), and the Ready summary of a DevMachine's step conditions.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use crate::api::conditions::{READY, reasons};

/// A condition to set, without its bookkeeping fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Desired {
    pub type_: &'static str,
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Desired {
    pub fn new(type_: &'static str, status: bool, reason: &'static str) -> Desired {
        Desired {
            type_,
            status,
            reason,
            message: String::new(),
        }
    }

    pub fn with_message(mut self, message: impl Into<String>) -> Desired {
        self.message = message.into();
        self
    }

    fn status(&self) -> &'static str {
        if self.status { "True" } else { "False" }
    }
}

/// Sets a condition in `conditions`, keeping its place and, when the status is unchanged, its
/// lastTransitionTime.
pub(crate) fn set(conditions: &mut Vec<Condition>, desired: &Desired, generation: Option<i64>) {
    let status = desired.status();
    let existing = conditions
        .iter_mut()
        .find(|condition| condition.type_ == desired.type_);
    let last_transition_time = match &existing {
        Some(condition) if condition.status == status => condition.last_transition_time.clone(),
        _ => Time(Timestamp::now()),
    };
    let condition = Condition {
        type_: desired.type_.to_string(),
        status: status.to_string(),
        reason: desired.reason.to_string(),
        message: desired.message.clone(),
        observed_generation: generation,
        last_transition_time,
    };
    match existing {
        Some(slot) => *slot = condition,
        None => conditions.push(condition),
    }
}

/// The Ready condition summarising the conditions of the given types that are present: True
/// when all are, otherwise False with a message that lists the ones that are not (upstream
/// summarises the same conditions).
pub(crate) fn summary(conditions: &[Condition], types: &[&str]) -> Desired {
    let not_ready: Vec<String> = types
        .iter()
        .filter_map(|type_| {
            conditions
                .iter()
                .find(|condition| condition.type_ == *type_)
        })
        .filter(|condition| condition.status != "True")
        .map(|condition| {
            if condition.message.is_empty() {
                format!("{}: {}", condition.type_, condition.reason)
            } else {
                format!(
                    "{}: {} ({})",
                    condition.type_, condition.reason, condition.message
                )
            }
        })
        .collect();
    if not_ready.is_empty() {
        Desired::new(READY, true, reasons::READY)
    } else {
        Desired::new(READY, false, reasons::NOT_READY).with_message(not_ready.join("; "))
    }
}

/// Records `generation` as observed by every condition: a write of the status reports what the
/// controller saw of the generation it wrote against (upstream's patch helper does the same),
/// so that a spec write earlier in the same reconcile does not leave the conditions one
/// generation behind, which the next reconcile would write again.
pub(crate) fn observe(conditions: &mut [Condition], generation: Option<i64>) {
    for condition in conditions {
        condition.observed_generation = generation;
    }
}
