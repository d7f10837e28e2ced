//! Which Machines a MachineSet deletes first when it has more than it wants (upstream
//! `core/reconcilers/machineset/machineset_deletion_order.go`).
//!
//! Every Machine gets a priority, and the highest go first. Whatever `spec.deletion.order` says,
//! the same ladder comes first:
//!
//! | priority | Machine |
//! |---|---|
//! | 100 | already being deleted, so that it is counted and no extra Machine goes |
//! | 80 | has the `cluster.x-k8s.io/delete-machine` annotation (any value) |
//! | 75 | is being updated in place (`…/update-in-progress`), so no update is finished in vain |
//! | 50 | is unhealthy: no Node yet, `NodeHealthy` False, or `HealthCheckSucceeded` False |
//!
//! Below that the order decides: `Random` gives everyone else 20 (it is not random at all),
//! `Oldest` maps age onto 0–50 (`50 × (1 − e^(−age / 10 days))`, 0 without a creation time) and
//! `Newest` is 50 minus that. Ties go by name, then by the order the Machines came in, so the
//! choice is the same on every reconcile.
//!
//! Unknown conditions do not count as unhealthy, and neither does a Machine that is merely not
//! up to date: upstream leaves those to the order.

use std::cmp::Ordering;

use corral_api::annotations::{DELETE_MACHINE, UPDATE_IN_PROGRESS};
use corral_api::conditions::machine::{HEALTH_CHECK_SUCCEEDED, NODE_HEALTHY};
use corral_api::{Machine, MachineSetDeletionOrder};
use k8s_openapi::jiff::Timestamp;

#[cfg(test)]
mod tests;

/// The first `diff` Machines to delete, in the order they should go.
///
/// `diff` larger than the number of Machines returns all of them, sorted. `now` is the time the
/// `Oldest` and `Newest` orders measure ages against.
pub fn compute_machines_to_delete<'a>(
    machines: impl IntoIterator<Item = &'a Machine>,
    diff: usize,
    order: MachineSetDeletionOrder,
    now: Timestamp,
) -> Vec<&'a Machine> {
    if diff == 0 {
        return Vec::new();
    }
    let mut prioritized: Vec<(f64, &Machine)> = machines
        .into_iter()
        .map(|machine| (delete_priority(machine, order, now), machine))
        .collect();
    // A stable sort: Machines equal in priority and name stay in the order given, as upstream's
    // insertion sort keeps them for the small lists its tests use.
    prioritized.sort_by(|(priority_a, a), (priority_b, b)| {
        priority_b
            .partial_cmp(priority_a)
            .unwrap_or(Ordering::Equal)
            .then_with(|| name(a).cmp(name(b)))
    });
    prioritized
        .into_iter()
        .take(diff)
        .map(|(_, machine)| machine)
        .collect()
}

/// Whether a Machine counts as healthy when choosing what to delete: it has a Node, and neither
/// `NodeHealthy` nor `HealthCheckSucceeded` is False (Unknown does not count against it).
pub fn is_machine_healthy(machine: &Machine) -> bool {
    let Some(status) = &machine.status else {
        return false;
    };
    if status
        .node_ref
        .as_ref()
        .is_none_or(|node| node.name.is_empty())
    {
        return false;
    }
    let is_false = |type_: &str| {
        status
            .conditions
            .iter()
            .any(|condition| condition.type_ == type_ && condition.status == "False")
    };
    !is_false(NODE_HEALTHY) && !is_false(HEALTH_CHECK_SUCCEEDED)
}

const MUST_DELETE: f64 = 100.0;
const SHOULD_DELETE_FIRST: f64 = 80.0;
const SHOULD_DELETE: f64 = 75.0;
const BETTER_DELETE: f64 = 50.0;
const COULD_DELETE: f64 = 20.0;
const MUST_NOT_DELETE: f64 = 0.0;

/// The age at which the `Oldest` priority has covered 1 − 1/e of its range.
const SECONDS_PER_TEN_DAYS: f64 = 864_000.0;

fn delete_priority(machine: &Machine, order: MachineSetDeletionOrder, now: Timestamp) -> f64 {
    if machine.metadata.deletion_timestamp.is_some() {
        return MUST_DELETE;
    }
    let annotations = machine.metadata.annotations.as_ref();
    let has_annotation = |key: &str| annotations.is_some_and(|map| map.contains_key(key));
    if has_annotation(DELETE_MACHINE) {
        return SHOULD_DELETE_FIRST;
    }
    if has_annotation(UPDATE_IN_PROGRESS) {
        return SHOULD_DELETE;
    }
    if !is_machine_healthy(machine) {
        return BETTER_DELETE;
    }
    match order {
        MachineSetDeletionOrder::Random => COULD_DELETE,
        MachineSetDeletionOrder::Oldest => age_priority(machine, now),
        MachineSetDeletionOrder::Newest => BETTER_DELETE - age_priority(machine, now),
    }
}

/// Older Machines get more, approaching 50; a Machine without a creation time, or created in
/// the future, gets nothing.
fn age_priority(machine: &Machine, now: Timestamp) -> f64 {
    let Some(created) = &machine.metadata.creation_timestamp else {
        return MUST_NOT_DELETE;
    };
    let age_seconds = (now.as_nanosecond() - created.0.as_nanosecond()) as f64 / 1e9;
    if age_seconds < 0.0 {
        return MUST_NOT_DELETE;
    }
    BETTER_DELETE * (1.0 - (-age_seconds / SECONDS_PER_TEN_DAYS).exp())
}

fn name(machine: &Machine) -> &str {
    machine.metadata.name.as_deref().unwrap_or_default()
}
