//! Rolling out and scaling (upstream `scale.go` and the rollout part of
//! `kubeadmcontrolplane_controller.go`): machines that are not up to date are replaced one at a
//! time (maxSurge 1: up, then down; maxSurge 0: down, then up), then the count goes to
//! `spec.replicas`; a machine goes only after etcd leadership moved off it.

use super::*;

/// Init, etcd member cleanup, remediation, rollout and scaling: at most one machine operation.
pub(super) async fn reconcile_machines(
    context: &Context,
    scope: &Scope,
    initialized: bool,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    let kcp = &scope.kcp;
    let current = scope.machines.len();
    let desired = scope.desired();
    for machine in &scope.machines {
        pre_terminate::ensure_hook(context, machine).await?;
    }

    // The first machine runs kubeadm init.
    if current == 0 {
        let failure_domain =
            planner::pick_failure_domain_for_scale_up(&scope.failure_domains, &scope.views);
        context
            .create_machine(machines::NewMachine {
                kcp,
                cluster: &scope.cluster,
                init: true,
                failure_domain,
                remediation_for: None,
            })
            .await?;
        outcome.waiting = true;
        return Ok(());
    }
    if !initialized {
        tracing::debug!(
            "Waiting for the first control plane machine to initialize the control plane"
        );
        outcome.waiting = true;
        return Ok(());
    }

    // Etcd members whose machine is gone (upstream `reconcileEtcdMembers`), once every machine
    // has its Node.
    if let (Some(workload), Some(etcd)) = (&scope.workload, &scope.etcd)
        && scope.views.iter().all(|v| v.has_node)
        && let Ok(members) = &workload.members
    {
        let nodes = pre_terminate::control_plane_nodes(scope);
        for member in members.iter().filter(|m| !nodes.contains(&m.name)) {
            tracing::info!(member = %member.name, "Removing etcd member without a Machine");
            pre_terminate::remove_member(etcd.as_ref(), member).await?;
            outcome.waiting = true;
        }
        if outcome.waiting {
            return Ok(());
        }
    }

    // A deleting Machine waiting on the pre-terminate hook: its etcd member goes, then it.
    if pre_terminate::reconcile_pre_terminate_hook(context, scope, outcome).await? {
        return Ok(());
    }

    // Remediation.
    if reconcile_remediation(context, scope, outcome).await? {
        return Ok(());
    }

    // Rollout, then plain scaling.
    let live: Vec<&MachineView> = scope.views.iter().filter(|v| !v.deleting).collect();
    let outdated = live.iter().any(|v| !v.up_to_date);
    let step = if outdated {
        Some(planner::compute_rollout_step(
            desired,
            scope.max_surge(),
            current,
        ))
    } else if (current as i32) < desired {
        Some(RolloutStep::ScaleUp)
    } else if (current as i32) > desired {
        Some(RolloutStep::ScaleDown)
    } else {
        None
    };
    match step {
        Some(RolloutStep::ScaleUp) => scale_up(context, scope, outcome).await,
        Some(RolloutStep::ScaleDown) => scale_down(context, scope, outcome).await,
        None => addons::reconcile_addons(context, scope).await,
    }
}

pub(super) async fn scale_up(
    context: &Context,
    scope: &Scope,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    outcome.waiting = true;
    if let Some(reason) = scope.preflight(None) {
        tracing::debug!(%reason, "Not scaling up yet");
        return Ok(());
    }
    let failure_domain =
        planner::pick_failure_domain_for_scale_up(&scope.failure_domains, &scope.views);
    // A replacement for a remediated machine carries the remediation's record.
    let in_progress = scope
        .kcp
        .annotations()
        .get(KCP_REMEDIATION_IN_PROGRESS)
        .cloned();
    context
        .create_machine(machines::NewMachine {
            kcp: &scope.kcp,
            cluster: &scope.cluster,
            init: false,
            failure_domain,
            remediation_for: in_progress.clone(),
        })
        .await?;
    if in_progress.is_some() {
        let kcps: Api<KubeadmControlPlane> =
            Api::namespaced(context.client.clone(), &scope.namespace);
        let patch = json!({ "metadata": { "annotations": { KCP_REMEDIATION_IN_PROGRESS: null } } });
        let written = kcps
            .patch(
                &scope.kcp.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(Error::Patch)?;
        outcome.written = Some(written);
    }
    Ok(())
}

pub(super) async fn scale_down(
    context: &Context,
    scope: &Scope,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    outcome.waiting = true;
    let Some(victim) = planner::select_machine_for_scale_down(&scope.failure_domains, &scope.views)
    else {
        return Ok(());
    };
    if let Some(reason) = scope.preflight(Some(&victim.name)) {
        tracing::debug!(%reason, "Not scaling down yet");
        return Ok(());
    }
    remove_machine(context, scope, &victim.name).await
}

/// Moves etcd leadership off the machine (upstream `forwardEtcdLeadership`) and deletes it;
/// its etcd member is removed in the pre-terminate hook ([`pre_terminate`]).
pub(super) async fn remove_machine(
    context: &Context,
    scope: &Scope,
    name: &str,
) -> Result<(), Error> {
    let machine = scope.machine(name).expect("the machine is in scope");
    if let (Some(node), Some(workload), Some(etcd)) =
        (machine_node(machine), &scope.workload, &scope.etcd)
        && let Some(member) = workload.member(&node)
        && member.leader
        && let Ok(members) = &workload.members
        && let Some(next) = pre_terminate::leadership_candidate(scope, members, name)
    {
        pre_terminate::move_leadership(etcd.as_ref(), member, next).await?;
    }
    tracing::info!(machine = %name, "Deleting control plane Machine");
    let machines: Api<Machine> = Api::namespaced(context.client.clone(), &scope.namespace);
    match machines.delete(name, &DeleteParams::background()).await {
        Ok(_) => {
            context.expected.record(
                &scope.kcp,
                Change::Deleted,
                name,
                context.config.poll_interval,
            );
            context
                .event(
                    &scope.kcp,
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted control plane Machine {name}"),
                )
                .await;
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(Error::DeleteMachine {
            machine: name.to_string(),
            source,
        }),
    }
}
