//! Remediation of control plane Machines a MachineHealthCheck marked (upstream
//! `controlplane/kubeadm/internal/controllers/remediation.go`): one at a time, only while etcd
//! keeps quorum and no other machine is being provisioned or deleted, with retries bounded by
//! `spec.remediation`; why a machine is not remediated is written into its `OwnerRemediated`
//! condition.

use super::*;

/// The reasons of the OwnerRemediated condition the KubeadmControlPlane sets on a Machine it
/// cannot remediate (upstream `KubeadmControlPlaneMachine*Reason`).
pub(super) mod remediation_reason {
    pub use corral_api::conditions::machine_set::reason::{
        CANNOT_BE_REMEDIATED, REMEDIATION_DEFERRED,
    };
    pub const INTERNAL_ERROR: &str = "RemediationInternalError";
}

/// Upstream's default `remediation.minHealthyPeriodSeconds` (1 h).
pub(super) const DEFAULT_MIN_HEALTHY_PERIOD_SECONDS: i64 = 3600;

pub(super) fn is_marked_for_remediation(machine: &Machine) -> bool {
    // Upstream `IsUnhealthyAndOwnerRemediated`: the MachineHealthCheck still finds it unhealthy
    // and asked its owner to remediate it (a machine that recovered keeps OwnerRemediated).
    machine.status.as_ref().is_some_and(|status| {
        let is_false = |type_: &str| {
            conditions::get(&status.conditions, type_)
                .is_some_and(|condition| condition.status == "False")
        };
        is_false(OWNER_REMEDIATED) && is_false(HEALTH_CHECK_SUCCEEDED)
    })
}

/// The remediation record upstream keeps in annotations (`RemediationData`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct RemediationData {
    machine: String,
    timestamp: Timestamp,
    retry_count: i32,
}

/// Remediates one machine marked by a MachineHealthCheck, when it is safe (upstream
/// `remediation.go` `reconcileUnhealthyMachines`). Returns whether it acted or must wait, in
/// which case nothing else is done this reconcile.
pub(super) async fn reconcile_remediation(
    context: &Context,
    scope: &Scope,
    outcome: &mut Outcome,
) -> Result<bool, Error> {
    let marked: Vec<&MachineView> = scope
        .views
        .iter()
        .filter(|v| {
            scope
                .machine(&v.name)
                .is_some_and(is_marked_for_remediation)
        })
        .collect();
    if marked.is_empty() {
        return Ok(false);
    }
    // A remediation whose replacement is not created yet: let scaling up create it.
    if scope
        .kcp
        .annotations()
        .contains_key(KCP_REMEDIATION_IN_PROGRESS)
    {
        return Ok(false);
    }
    let Some(target) = planner::select_machine_to_remediate(&marked) else {
        return Ok(false);
    };
    let allowed = check_other_machines(scope, &marked, target)
        .and_then(|()| retry_count(scope, target))
        .and_then(|retry_count| check_etcd_quorum(scope, target).map(|()| retry_count));
    match allowed {
        Ok(retry_count) => {
            remediate(context, scope, outcome, target, retry_count).await?;
        }
        Err(blocked) => {
            // Why not, on the KubeadmControlPlane and, in upstream's words, in the target
            // Machine's OwnerRemediated condition.
            tracing::info!(machine = %target.name, reason = %blocked.why, "Remediation blocked");
            outcome.remediation_blocked = Some(blocked.why);
            outcome.owner_remediated = blocked.owner_remediated.map(|(reason, message)| {
                (
                    target.name.clone(),
                    conditions::NewCondition::new(
                        OWNER_REMEDIATED,
                        corral_api::ConditionStatus::False,
                        reason,
                    )
                    .message(message),
                )
            });
        }
    }
    outcome.waiting = true;
    Ok(true)
}

/// Why a marked Machine is not remediated now: said on the KubeadmControlPlane (`why`) and,
/// when upstream says it, in the Machine's OwnerRemediated condition (reason, message).
struct Blocked {
    why: String,
    owner_remediated: Option<(&'static str, String)>,
}

impl Blocked {
    fn new(why: impl Into<String>, reason: &'static str, message: impl Into<String>) -> Blocked {
        Blocked {
            why: why.into(),
            owner_remediated: Some((reason, message.into())),
        }
    }
}

/// The target is not being deleted, is not the only control plane Machine, and no other
/// Machine is being provisioned or deleted (upstream's order of checks).
fn check_other_machines(
    scope: &Scope,
    marked: &[&MachineView],
    target: &MachineView,
) -> Result<(), Blocked> {
    if target.deleting {
        return Err(Blocked {
            why: format!("Waiting for Machine {} to be deleted", target.name),
            owner_remediated: None,
        });
    }
    if scope.machines.len() <= 1 {
        return Err(Blocked::new(
            "Cannot remediate the only control plane Machine of an initialized control plane",
            remediation_reason::CANNOT_BE_REMEDIATED,
            "KubeadmControlPlane can't remediate if current replicas are less or equal to 1",
        ));
    }
    // A healthy machine still provisioning: wait for it (upstream).
    if let Some(provisioning) = scope
        .views
        .iter()
        .find(|v| !v.has_node && !marked.iter().any(|m| m.name == v.name))
    {
        return Err(Blocked::new(
            format!(
                "Waiting for Machine {} to finish provisioning",
                provisioning.name
            ),
            remediation_reason::REMEDIATION_DEFERRED,
            "KubeadmControlPlane waiting for control plane Machine provisioning to complete \
             before triggering remediation",
        ));
    }
    if let Some(other) = scope.views.iter().find(|v| v.deleting) {
        return Err(Blocked::new(
            format!("Waiting for Machine {} to be deleted", other.name),
            remediation_reason::REMEDIATION_DEFERRED,
            "KubeadmControlPlane waiting for control plane Machine deletion to complete \
             before triggering remediation",
        ));
    }
    Ok(())
}

/// The retry count of this remediation, from the record of the remediation the target
/// replaced, within `spec.remediation`'s retry period and maximum.
fn retry_count(scope: &Scope, target: &MachineView) -> Result<i32, Blocked> {
    let target_machine = scope.machine(&target.name).expect("in scope");
    let previous: Option<RemediationData> = target_machine
        .annotations()
        .get(KCP_REMEDIATION_FOR)
        .and_then(|value| serde_json::from_str(value).ok());
    let remediation = &scope.kcp.spec.remediation;
    let decision = planner::compute_retry(
        previous
            .as_ref()
            .map(|p| PreviousRemediation {
                retry_count: p.retry_count,
                time: p.timestamp,
            })
            .as_ref(),
        Timestamp::now(),
        remediation.max_retry,
        i64::from(remediation.retry_period_seconds.unwrap_or(0)),
        remediation
            .min_healthy_period_seconds
            .map_or(DEFAULT_MIN_HEALTHY_PERIOD_SECONDS, i64::from),
    );
    match decision {
        RetryDecision::Remediate { retry_count } => Ok(retry_count),
        RetryDecision::WaitRetryPeriod { remaining_seconds } => Err(Blocked::new(
            format!(
                "Waiting {remaining_seconds}s more (remediation.retryPeriodSeconds) before remediating Machine {} again",
                target.name
            ),
            remediation_reason::REMEDIATION_DEFERRED,
            format!(
                "KubeadmControlPlane can't remediate this machine because the operation \
                 already failed in the latest {}s (RetryPeriod)",
                remediation.retry_period_seconds.unwrap_or(0)
            ),
        )),
        RetryDecision::MaxRetryReached { max_retry } => Err(Blocked::new(
            format!(
                "Machine {} has been remediated {max_retry} times (remediation.maxRetry); not remediating again",
                target.name
            ),
            remediation_reason::CANNOT_BE_REMEDIATED,
            format!(
                "KubeadmControlPlane can't remediate this machine because the operation \
                 already failed {max_retry} times (MaxRetry)"
            ),
        )),
    }
}

/// Removing the target's etcd member keeps quorum: a member counts as healthy when it
/// answers and a Machine of this control plane runs it (upstream `canSafelyRemoveEtcdMember`).
fn check_etcd_quorum(scope: &Scope, target: &MachineView) -> Result<(), Blocked> {
    let Some(Ok(members)) = scope.workload.as_ref().map(|w| &w.members) else {
        let why = "Cannot read the etcd members, so cannot tell whether remediation keeps quorum";
        return Err(Blocked::new(
            why,
            remediation_reason::INTERNAL_ERROR,
            format!("KubeadmControlPlane {}", why.to_lowercase()),
        ));
    };
    let health = pre_terminate::member_health(scope, members);
    let target_machine = scope.machine(&target.name).expect("in scope");
    let target_node = machine_node(target_machine).unwrap_or_default();
    if planner::can_safely_remove_etcd_member(&health, &target_node) {
        return Ok(());
    }
    Err(Blocked::new(
        format!(
            "Removing the etcd member of Machine {} would lose etcd quorum ({} members, {} healthy)",
            target.name,
            health.len(),
            health.iter().filter(|m| m.healthy).count()
        ),
        remediation_reason::CANNOT_BE_REMEDIATED,
        // Upstream's words, spelling included.
        "KubeadmControlPlane can't remediate this Machine because this could result in \
         etcd loosing quorum",
    ))
}

/// Records the remediation on the KubeadmControlPlane (upstream's `RemediationInProgress`
/// annotation, which the replacement carries on), then deletes the target.
async fn remediate(
    context: &Context,
    scope: &Scope,
    outcome: &mut Outcome,
    target: &MachineView,
    retry_count: i32,
) -> Result<(), Error> {
    let kcp = &scope.kcp;
    tracing::info!(machine = %target.name, retry_count, "Remediating unhealthy control plane Machine");
    let now = Timestamp::now();
    let record = RemediationData {
        machine: target.name.clone(),
        timestamp: Timestamp::from_second(now.as_second()).unwrap_or(now),
        retry_count,
    };
    let kcps: Api<KubeadmControlPlane> = Api::namespaced(context.client.clone(), &scope.namespace);
    let patch = json!({ "metadata": { "annotations": {
        KCP_REMEDIATION_IN_PROGRESS: serde_json::to_string(&record).expect("serializes"),
    } } });
    let written = kcps
        .patch(
            &kcp.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(Error::Patch)?;
    outcome.written = Some(written);
    remove_machine(context, scope, &target.name).await?;
    context
        .event(
            kcp,
            EventType::Normal,
            "MachineRemediation",
            format!(
                "Remediating unhealthy control plane Machine {} (retry {retry_count})",
                target.name
            ),
        )
        .await;
    outcome.last_remediation = Some(LastRemediationStatus {
        machine: target.name.clone(),
        retry_count,
        time: Time(record.timestamp),
    });
    Ok(())
}
