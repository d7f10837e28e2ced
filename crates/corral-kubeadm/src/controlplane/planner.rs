//! The KubeadmControlPlane's decisions, as pure functions over what a reconcile observed: which
//! failure domain a new machine goes to, which machine a scale down removes, whether a rolling
//! update scales up or down next, whether removing an etcd member keeps quorum, and which
//! unhealthy machine to remediate. The controller does what they decide.
//!
//! Upstream: `util/failuredomains/failure_domains.go` (`PickFewest`, `PickMost`),
//! `controlplane/kubeadm/reconcilers/kubeadmcontrolplane/scale.go`
//! (`selectMachineForInPlaceUpdateOrScaleDown`), `update.go` (`rollingUpdate`),
//! `remediation.go` (`canSafelyRemoveEtcdMember`, `getMachineToBeRemediated`).

use k8s_openapi::jiff::Timestamp;

#[cfg(test)]
mod tests;

/// A control plane machine, as the decisions see it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MachineView {
    pub name: String,
    pub created: Option<Timestamp>,
    pub failure_domain: Option<String>,
    /// The machine matches the KubeadmControlPlane's current spec.
    pub up_to_date: bool,
    pub deleting: bool,
    /// It has the `cluster.x-k8s.io/delete-machine` annotation.
    pub delete_annotation: bool,
    /// It has the `cluster.x-k8s.io/remediate-machine` annotation.
    pub remediate_annotation: bool,
    pub has_node: bool,
    /// Its etcd member is unhealthy or missing.
    pub etcd_unhealthy: bool,
    /// A control plane component Pod of it is not ready.
    pub components_unhealthy: bool,
}

/// The failure domain for a new machine (upstream `PickFewest`): among the control plane
/// failure domains, the one with the fewest up-to-date machines not being deleted; a tie goes to
/// the one with the fewest machines, then to the first in order. `None` when there are none.
pub fn pick_failure_domain_for_scale_up(
    failure_domains: &[String],
    machines: &[MachineView],
) -> Option<String> {
    failure_domains
        .iter()
        .enumerate()
        .min_by_key(|(index, domain)| {
            let in_domain = machines
                .iter()
                .filter(|m| m.failure_domain.as_deref() == Some(domain.as_str()));
            let up_to_date = in_domain
                .clone()
                .filter(|m| m.up_to_date && !m.deleting)
                .count();
            (up_to_date, in_domain.count(), *index)
        })
        .map(|(_, domain)| domain.clone())
}

/// The failure domain a scale down takes from (upstream `PickMost`): the one with the most
/// machines among those holding an eligible machine; machines in no known failure domain (none,
/// or one the Cluster no longer lists) go first. `None` means "no failure domain": pick among
/// the eligible machines outside the known domains.
fn pick_failure_domain_for_scale_down(
    failure_domains: &[String],
    all: &[MachineView],
    eligible: &[&MachineView],
) -> Option<String> {
    let known = |m: &MachineView| {
        m.failure_domain
            .as_ref()
            .is_some_and(|d| failure_domains.contains(d))
    };
    if eligible.iter().any(|m| !known(m)) {
        return None;
    }
    failure_domains
        .iter()
        .enumerate()
        .filter(|(_, domain)| {
            eligible
                .iter()
                .any(|m| m.failure_domain.as_deref() == Some(domain.as_str()))
        })
        .max_by_key(|(index, domain)| {
            let count = all
                .iter()
                .filter(|m| m.failure_domain.as_deref() == Some(domain.as_str()))
                .count();
            // The first domain in order wins a tie: max_by_key keeps the last maximum.
            (count, std::cmp::Reverse(*index))
        })
        .map(|(_, domain)| domain.clone())
}

/// The machine a scale down removes (upstream `selectMachineForInPlaceUpdateOrScaleDown`): the
/// eligible set is the first non-empty of (1) outdated machines with the delete-machine
/// annotation, (2) machines with it, (3) outdated machines with unhealthy control plane
/// components or etcd, (4) outdated machines, (5) all machines; then, in the failure domain with
/// the most machines that holds an eligible one, the oldest eligible machine.
pub fn select_machine_for_scale_down<'a>(
    failure_domains: &[String],
    machines: &'a [MachineView],
) -> Option<&'a MachineView> {
    let candidates: Vec<&MachineView> = machines.iter().filter(|m| !m.deleting).collect();
    let tiers: [&dyn Fn(&MachineView) -> bool; 5] = [
        &|m| !m.up_to_date && m.delete_annotation,
        &|m| m.delete_annotation,
        &|m| !m.up_to_date && (m.components_unhealthy || m.etcd_unhealthy),
        &|m| !m.up_to_date,
        &|_| true,
    ];
    let eligible: Vec<&MachineView> = tiers
        .iter()
        .map(|tier| {
            candidates
                .iter()
                .copied()
                .filter(|m| tier(m))
                .collect::<Vec<_>>()
        })
        .find(|set| !set.is_empty())?;
    let domain = pick_failure_domain_for_scale_down(failure_domains, machines, &eligible);
    eligible
        .into_iter()
        .filter(|m| match &domain {
            Some(domain) => m.failure_domain.as_deref() == Some(domain.as_str()),
            None => !m
                .failure_domain
                .as_ref()
                .is_some_and(|d| failure_domains.contains(d)),
        })
        .min_by(|a, b| (a.created, &a.name).cmp(&(b.created, &b.name)))
}

/// The next step of a rolling update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloutStep {
    ScaleUp,
    ScaleDown,
}

/// The next step of a rolling update (upstream `rollingUpdate`): scale up while there are fewer
/// machines than `replicas + max_surge`, otherwise scale down.
pub fn compute_rollout_step(replicas: i32, max_surge: i32, current: usize) -> RolloutStep {
    let max_replicas = replicas + max_surge;
    if (current as i64) < i64::from(max_replicas) {
        RolloutStep::ScaleUp
    } else {
        RolloutStep::ScaleDown
    }
}

/// An etcd member, for the quorum arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberHealth {
    /// The member name (its Node's name).
    pub name: String,
    /// Healthy, and its machine exists and is not being remediated.
    pub healthy: bool,
}

/// Whether removing the member `target` keeps etcd's quorum (upstream
/// `canSafelyRemoveEtcdMember`): after the removal, the healthy members left must still be a
/// majority of the members left. With 1 member it never is; with 3, no other member may be
/// unhealthy; with 5, at most one.
pub fn can_safely_remove_etcd_member(members: &[MemberHealth], target: &str) -> bool {
    let remaining: Vec<&MemberHealth> = members.iter().filter(|m| m.name != target).collect();
    let total = remaining.len();
    let quorum = total / 2 + 1;
    let healthy = remaining.iter().filter(|m| m.healthy).count();
    total > 0 && healthy >= quorum
}

/// The machine to remediate first, among those marked for remediation (upstream
/// `getMachineToBeRemediated`): one with the remediate-machine annotation, then one without a
/// Node, then one with an unhealthy etcd member, then one with unhealthy components, then the
/// oldest.
pub fn select_machine_to_remediate<'a>(unhealthy: &[&'a MachineView]) -> Option<&'a MachineView> {
    unhealthy.iter().copied().min_by(|a, b| {
        let rank = |m: &MachineView| {
            (
                !m.remediate_annotation,
                m.has_node,
                !m.etcd_unhealthy,
                !m.components_unhealthy,
            )
        };
        (rank(a), a.created, &a.name).cmp(&(rank(b), b.created, &b.name))
    })
}

/// What the previous remediation of a machine says about the next (upstream's
/// `remediation-for` annotation on the replacement machine).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviousRemediation {
    pub retry_count: i32,
    pub time: Timestamp,
}

/// Whether a remediation may start now, and with which retry count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Remediate; the new remediation has this retry count.
    Remediate { retry_count: i32 },
    /// Wait until the retry period has passed.
    WaitRetryPeriod { remaining_seconds: i64 },
    /// maxRetry is reached.
    MaxRetryReached { max_retry: i32 },
}

/// Whether a machine that replaced a remediated one may itself be remediated (upstream
/// `checkRetryLimits`): a remediation more than `min_healthy_period_seconds` ago (default 1 h)
/// does not count; otherwise the retry period must have passed and `max_retry` (unset: no
/// limit) must not be reached.
pub fn compute_retry(
    previous: Option<&PreviousRemediation>,
    now: Timestamp,
    max_retry: Option<i32>,
    retry_period_seconds: i64,
    min_healthy_period_seconds: i64,
) -> RetryDecision {
    let Some(previous) = previous else {
        return RetryDecision::Remediate { retry_count: 0 };
    };
    let elapsed = now.as_second() - previous.time.as_second();
    if elapsed > min_healthy_period_seconds {
        return RetryDecision::Remediate { retry_count: 0 };
    }
    if let Some(max_retry) = max_retry
        && previous.retry_count >= max_retry
    {
        return RetryDecision::MaxRetryReached { max_retry };
    }
    if elapsed < retry_period_seconds {
        return RetryDecision::WaitRetryPeriod {
            remaining_seconds: retry_period_seconds - elapsed,
        };
    }
    RetryDecision::Remediate {
        retry_count: previous.retry_count + 1,
    }
}
