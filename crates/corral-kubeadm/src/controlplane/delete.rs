//! Deleting a KubeadmControlPlane (upstream `reconcileDelete`): its Machines go once the
//! Cluster's workers are gone, then the finalizer.

use super::*;

/// Deletes the control plane Machines once the workers are gone, then releases the finalizer
/// (upstream `reconcileDelete`).
pub(super) async fn reconcile_delete(
    context: &Context,
    kcp: &KubeadmControlPlane,
    cluster: &str,
    machines: Vec<Arc<Machine>>,
) -> Result<Action, Error> {
    let namespace = kcp.namespace().unwrap_or_default();
    let kcps: Api<KubeadmControlPlane> = Api::namespaced(context.client.clone(), &namespace);
    let all: Api<Machine> = Api::namespaced(context.client.clone(), &namespace);
    let workers = all
        .list(&ListParams::default().labels(&format!("{CLUSTER_NAME}={cluster},!{CONTROL_PLANE}")))
        .await
        .map_err(Error::ListMachines)?
        .items;
    let mut status = kcp.status.clone().unwrap_or_default();
    let now = conditions::now();
    let generation = kcp.metadata.generation;
    let message = if !workers.is_empty() {
        format!(
            "Waiting for {} worker Machines to be deleted",
            workers.len()
        )
    } else {
        format!("Deleting {} control plane Machines", machines.len())
    };
    conditions::set(
        &mut status.conditions,
        conditions::NewCondition::new(
            status::types::DELETING,
            corral_api::ConditionStatus::True,
            if workers.is_empty() {
                "WaitingForMachineDeletion"
            } else {
                "WaitingForWorkersDeletion"
            },
        )
        .message(message),
        generation,
        &now,
    );
    status.replicas = Some(machines.len() as i32);
    if Some(&status) != kcp.status.as_ref() {
        patch_status(&kcps, kcp, &status).await?;
    }
    if !workers.is_empty() {
        return Ok(Action::requeue(context.config.poll_interval));
    }
    if machines.is_empty() {
        let finalizers: Vec<String> = kcp
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        write_finalizers(&kcps, kcp, finalizers).await?;
        let key = ClusterKey::new(&namespace, cluster);
        context.watches.forget(&key);
        context
            .real_etcd
            .lock()
            .expect("real etcd lock")
            .remove(&key);
        context.expected.forget(kcp);
        context
            .certificates_checked
            .lock()
            .expect("certificates lock")
            .remove(&kcp.uid().unwrap_or_default());
        context.addons.forget(&kcp.uid().unwrap_or_default());
        context.cluster_facts.forget(&namespace, cluster);
        // The workload cluster goes with its control plane: its connection is dropped for
        // every controller sharing the cache (one that asks again reconnects).
        context.cache.forget(&key);
        return Ok(Action::await_change());
    }
    for machine in &machines {
        // Deleting the whole control plane, etcd goes with it: no member is removed, so no
        // Machine waits on the hook (upstream).
        pre_terminate::remove_hook(context, machine).await?;
        if machine.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = machine.name_any();
        tracing::info!(machine = %name, "Deleting control plane Machine");
        match all.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error::DeleteMachine {
                    machine: name,
                    source,
                });
            }
        }
    }
    Ok(Action::requeue(context.config.poll_interval))
}
