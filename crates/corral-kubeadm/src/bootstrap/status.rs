//! The KubeadmConfig's conditions (upstream `api/bootstrap/kubeadm/v1beta2/kubeadmconfig_types.go`):
//! `DataSecretAvailable`, `CertificatesAvailable`, `Paused`, and `Ready`, which summarizes the
//! first two.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use crate::api::bootstrap::KubeadmConfigStatus;

/// Condition types.
pub mod condition_types {
    pub const READY: &str = "Ready";
    pub const DATA_SECRET_AVAILABLE: &str = "DataSecretAvailable";
    pub const CERTIFICATES_AVAILABLE: &str = "CertificatesAvailable";
    pub const PAUSED: &str = "Paused";
}

/// Condition reasons (core's generic ones, as upstream reuses them).
pub mod reasons {
    pub const READY: &str = "Ready";
    pub const NOT_READY: &str = "NotReady";
    pub const AVAILABLE: &str = "Available";
    pub const NOT_AVAILABLE: &str = "NotAvailable";
    pub const INTERNAL_ERROR: &str = "InternalError";
    pub const PAUSED: &str = "Paused";
    pub const NOT_PAUSED: &str = "NotPaused";
}

/// Sets conditions in a list, keeping a condition's transition time while its status holds.
pub struct Conditions<'a> {
    conditions: &'a mut Vec<Condition>,
    generation: Option<i64>,
}

impl<'a> Conditions<'a> {
    pub fn new(conditions: &'a mut Vec<Condition>, generation: Option<i64>) -> Self {
        Conditions {
            conditions,
            generation,
        }
    }

    /// Sets a condition; whether its status, reason or message changed.
    pub fn set(&mut self, type_: &str, status: bool, reason: &str, message: &str) -> bool {
        let status = if status { "True" } else { "False" };
        let now = Time(
            Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH),
        );
        match self.conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(existing) => {
                let changed = existing.status != status
                    || existing.reason != reason
                    || existing.message != message;
                if existing.status != status {
                    existing.last_transition_time = now;
                }
                existing.status = status.into();
                existing.reason = reason.into();
                existing.message = message.into();
                existing.observed_generation = self.generation;
                changed
            }
            None => {
                self.conditions.push(Condition {
                    type_: type_.into(),
                    status: status.into(),
                    reason: reason.into(),
                    message: message.into(),
                    last_transition_time: now,
                    observed_generation: self.generation,
                });
                true
            }
        }
    }
}

/// Ready: True once the data Secret is available; otherwise False with the message of the
/// first of CertificatesAvailable and DataSecretAvailable that is not True.
pub fn set_ready(status: &mut KubeadmConfigStatus, generation: Option<i64>) {
    let problem = [
        condition_types::CERTIFICATES_AVAILABLE,
        condition_types::DATA_SECRET_AVAILABLE,
    ]
    .into_iter()
    .filter_map(|type_| status.conditions.iter().find(|c| c.type_ == type_))
    .find(|condition| condition.status != "True")
    .map(|condition| format!("* {}: {}", condition.type_, condition.message));
    let data_available = status
        .conditions
        .iter()
        .any(|c| c.type_ == condition_types::DATA_SECRET_AVAILABLE && c.status == "True");
    let mut conditions = Conditions::new(&mut status.conditions, generation);
    match (data_available, problem) {
        (true, _) => conditions.set(condition_types::READY, true, reasons::READY, ""),
        (false, problem) => conditions.set(
            condition_types::READY,
            false,
            reasons::NOT_READY,
            &problem.unwrap_or_default(),
        ),
    };
    // Ready first, as upstream lists it.
    status
        .conditions
        .sort_by_key(|condition| condition.type_ != condition_types::READY);
}
