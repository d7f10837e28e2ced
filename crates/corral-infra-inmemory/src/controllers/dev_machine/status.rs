//! The conditions of a DevMachine, computed from what it waits for or from where its VM's boot
//! stands (upstream `backends/inmemory/inmemorymachine_backend.go` and the DevMachine condition
//! reasons of `devmachine_types.go`). Pure functions.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::api::annotations::FAIL_BOOT;
use crate::api::conditions::{
    API_SERVER_PROVISIONED, ETCD_PROVISIONED, NODE_PROVISIONED, VM_PROVISIONED, reasons,
};
use crate::cloud::{StepStatus, Vm};
use crate::controllers::conditions::Desired;

#[cfg(test)]
mod tests;

/// What a DevMachine waits for before its VM is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    /// The Cluster's infrastructure is not provisioned.
    ClusterInfrastructure,
    /// A worker without bootstrap data, while the control plane is not initialized.
    ControlPlaneInitialized,
    /// The Machine has no bootstrap data yet.
    BootstrapData,
}

/// The step conditions of a machine waiting for `wait`: the VM condition says what for, the
/// others wait for the VM.
pub(super) fn compute_waiting_conditions(wait: Wait, control_plane: bool) -> Vec<Desired> {
    let reason = match wait {
        Wait::ClusterInfrastructure => reasons::WAITING_FOR_CLUSTER_INFRASTRUCTURE,
        Wait::ControlPlaneInitialized => reasons::WAITING_FOR_CONTROL_PLANE_INITIALIZED,
        Wait::BootstrapData => reasons::WAITING_FOR_BOOTSTRAP_DATA,
    };
    let mut conditions = vec![
        Desired::new(VM_PROVISIONED, false, reason),
        Desired::new(NODE_PROVISIONED, false, reasons::WAITING_FOR_VM_PROVISIONED),
    ];
    if control_plane {
        conditions.push(Desired::new(
            ETCD_PROVISIONED,
            false,
            reasons::WAITING_FOR_VM_PROVISIONED,
        ));
        conditions.push(Desired::new(
            API_SERVER_PROVISIONED,
            false,
            reasons::WAITING_FOR_VM_PROVISIONED,
        ));
    }
    conditions
}

/// The step conditions of a machine whose VM exists.
pub(super) fn compute_step_conditions(vm: &Vm) -> Vec<Desired> {
    let vm_condition = match &vm.vm {
        StepStatus::Done { .. } => Desired::new(VM_PROVISIONED, true, reasons::PROVISIONED),
        StepStatus::Failed { .. } => Desired::new(VM_PROVISIONED, false, reasons::BOOT_FAILED)
            .with_message(format!(
                "The simulated VM does not boot: the DevMachine has the {FAIL_BOOT} annotation"
            )),
        StepStatus::InProgress { .. } | StepStatus::Waiting => {
            Desired::new(VM_PROVISIONED, false, reasons::WAITING_FOR_STARTUP_TIMEOUT)
        }
    };
    let node_condition = match &vm.node {
        StepStatus::Done { .. } => Desired::new(NODE_PROVISIONED, true, reasons::PROVISIONED),
        StepStatus::InProgress { .. } => Desired::new(
            NODE_PROVISIONED,
            false,
            reasons::WAITING_FOR_STARTUP_TIMEOUT,
        ),
        StepStatus::Waiting | StepStatus::Failed { .. } => {
            Desired::new(NODE_PROVISIONED, false, reasons::WAITING_FOR_VM_PROVISIONED)
        }
    };
    let control_plane_condition = |type_, step: &StepStatus| match step {
        StepStatus::Done { .. } => Desired::new(type_, true, reasons::PROVISIONED),
        StepStatus::InProgress { .. } => {
            Desired::new(type_, false, reasons::WAITING_FOR_STARTUP_TIMEOUT)
        }
        StepStatus::Waiting | StepStatus::Failed { .. } if vm.vm.is_done() => {
            Desired::new(type_, false, reasons::WAITING_FOR_NODE_PROVISIONED)
        }
        StepStatus::Waiting | StepStatus::Failed { .. } => {
            Desired::new(type_, false, reasons::WAITING_FOR_VM_PROVISIONED)
        }
    };
    let mut conditions = vec![vm_condition, node_condition];
    if let Some(etcd) = &vm.etcd {
        conditions.push(control_plane_condition(ETCD_PROVISIONED, etcd));
    }
    if let Some(api_server) = &vm.api_server {
        conditions.push(control_plane_condition(API_SERVER_PROVISIONED, api_server));
    }
    conditions
}

/// The shortest wait before looking at the VM again: a step whose due time has passed is
/// completing its effect (registering the Node) and is looked at again soon after.
const MIN_REQUEUE: Duration = Duration::from_millis(100);

/// How long a due step may take to complete its effect before the status says that it is
/// under way. Registering a Node takes milliseconds; a workload cluster that does not answer
/// makes it retry, and the status must not wait for that.
const SETTLE: Duration = Duration::from_secs(2);

/// The first wait for a due step to complete; the waits double with the time it has been due,
/// up to [`MIN_REQUEUE`].
const SETTLE_POLL: Duration = Duration::from_millis(20);

/// When a step of the VM is due (its startup time has passed) but not done, since less than
/// [`SETTLE`]: the cloud is completing it, and the status is better written once it has. Returns
/// how long to wait before looking again, or `None` when the status is to be written now.
pub(super) fn settling(vm: &Vm, now: Timestamp) -> Option<Duration> {
    let due = vm.next_change()?;
    // Not due yet: the duration is negative.
    let late = Duration::try_from(now.duration_since(due)).ok()?;
    if late >= SETTLE {
        return None;
    }
    Some(late.clamp(SETTLE_POLL, MIN_REQUEUE))
}

/// When to look at the VM again: when its next step is due, or never (a change of the
/// DevMachine or its owners triggers the next reconcile) when no step is under way.
pub(super) fn compute_requeue(vm: &Vm, now: Timestamp) -> Option<Duration> {
    let until = vm.next_change()?;
    let wait = Duration::try_from(until.duration_since(now)).unwrap_or(Duration::ZERO);
    Some(wait.max(MIN_REQUEUE))
}
