//! Corral's rollback and revision history, requested through annotations on the
//! MachineDeployment (upstream removed both in v1.11; see the module docs of
//! [`super`] for the user's side).
//!
//! A rollback is consumed: the controller copies the template of the MachineSet with the
//! revision asked for into the MachineDeployment, removes the annotation, and records an event
//! saying what happened. The rollout that follows is an ordinary one: the planner finds that
//! MachineSet current again and gives it the next revision.

use corral_api::{MachineDeployment, MachineSet};
use kube::ResourceExt;

use super::rollout_planner::{MachineSetState, compute_rollback_target};
use super::{REVISION_HISTORY_LIMIT, ROLLBACK_TO_REVISION};

/// Why a request in the rollback annotation cannot be followed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RollbackRequestError {
    /// The value is neither `previous` nor a revision number.
    #[error(
        "the {ROLLBACK_TO_REVISION} annotation must be \"previous\" or a revision number, not {0:?}"
    )]
    Parse(String),
}

/// The revision the rollback annotation asks for: `None` for the previous one (`previous`, or
/// `0` as `kubectl rollout undo --to-revision=0`), else the number.
pub fn parse_rollback_request(value: &str) -> Result<Option<i64>, RollbackRequestError> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("previous") {
        return Ok(None);
    }
    match value.parse::<i64>() {
        Ok(0) => Ok(None),
        Ok(revision) if revision > 0 => Ok(Some(revision)),
        _ => Err(RollbackRequestError::Parse(value.to_owned())),
    }
}

/// How many old MachineSets without Machines to keep for rollbacks: the annotation's value,
/// or upstream's behaviour, none, when it is absent. An invalid value is reported and read as
/// absent.
pub fn revision_history_limit(machine_deployment: &MachineDeployment) -> Result<u32, String> {
    match machine_deployment.annotations().get(REVISION_HISTORY_LIMIT) {
        None => Ok(0),
        Some(value) => value.trim().parse().map_err(|_| {
            format!(
                "the {REVISION_HISTORY_LIMIT} annotation must be a number of MachineSets, not {value:?}"
            )
        }),
    }
}

/// What a rollback request came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RollbackOutcome {
    /// The MachineDeployment now has the template of `machine_set`, of `revision`.
    RolledBack {
        /// The revision returned to.
        revision: i64,
        /// Its MachineSet.
        machine_set: String,
    },
    /// The revision asked for is the current one: nothing changes.
    AlreadyCurrent {
        /// The revision.
        revision: i64,
    },
    /// The request cannot be followed; the message says why.
    Refused(String),
}

/// Follows the rollback annotation, if there is one: removes it from `machine_deployment` and,
/// when the revision exists, gives `machine_deployment` that revision's template. `None`
/// without the annotation.
pub fn apply_rollback(
    machine_deployment: &mut MachineDeployment,
    machine_sets: &[&MachineSet],
) -> Option<RollbackOutcome> {
    let request = machine_deployment
        .annotations_mut()
        .remove(ROLLBACK_TO_REVISION)?;
    let to_revision = match parse_rollback_request(&request) {
        Ok(revision) => revision,
        Err(error) => return Some(RollbackOutcome::Refused(error.to_string())),
    };
    let states: Vec<MachineSetState> = machine_sets
        .iter()
        .map(|machine_set| {
            MachineSetState::from_machine_set(machine_set, &machine_deployment.spec.template)
        })
        .collect();
    let target = match compute_rollback_target(&states, to_revision) {
        Ok(target) => target,
        Err(error) => {
            let mut message = format!("cannot roll back: {error}");
            if machine_deployment
                .annotations()
                .get(REVISION_HISTORY_LIMIT)
                .is_none()
            {
                message.push_str(&format!(
                    " (old MachineSets are deleted once a rollout completes unless the {REVISION_HISTORY_LIMIT} annotation keeps some)"
                ));
            }
            return Some(RollbackOutcome::Refused(message));
        }
    };
    if target.already_current {
        return Some(RollbackOutcome::AlreadyCurrent {
            revision: target.revision,
        });
    }
    let machine_set = machine_sets
        .iter()
        .find(|machine_set| machine_set.name_any() == target.machine_set)?;
    // The spec only: the template's labels and annotations change in place, and the
    // MachineSet's carry its unique label, which is not the MachineDeployment's.
    let mut spec = machine_set.spec.template.spec.clone();
    spec.cluster_name = machine_deployment.spec.cluster_name.clone();
    machine_deployment.spec.template.spec = spec;
    Some(RollbackOutcome::RolledBack {
        revision: target.revision,
        machine_set: target.machine_set,
    })
}

#[cfg(test)]
mod tests;
