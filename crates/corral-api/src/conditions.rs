//! Condition types and reasons of the v1beta2 API (upstream `api/core/v1beta2/condition_consts.go`
//! and the `*_types.go` of each kind).
//!
//! Types and reasons used by several kinds are at the top; each kind's own are in its module.
//! Conditions are `metav1.Condition`s in `status.conditions`, at most one per type.

/// The object is fully functional: for a Cluster, the summary of its infrastructure, control
/// plane, workers and availability gates; for a Machine, Ready for at least minReadySeconds; for
/// a MachineDeployment, enough Machines are available.
pub const AVAILABLE: &str = "Available";

/// The object is ready: for a Machine, the summary of its bootstrap, infrastructure and Node
/// conditions and its readiness gates. Also what core reads from provider objects.
pub const READY: &str = "Ready";

/// Mirrors the Ready condition of the Machine's bootstrap object.
pub const BOOTSTRAP_CONFIG_READY: &str = "BootstrapConfigReady";

/// Mirrors the Ready condition of the infrastructure object (Cluster or Machine).
pub const INFRASTRUCTURE_READY: &str = "InfrastructureReady";

/// Aggregates the Ready conditions of the object's Machines.
pub const MACHINES_READY: &str = "MachinesReady";

/// Aggregates the UpToDate conditions of the object's Machines.
pub const MACHINES_UP_TO_DATE: &str = "MachinesUpToDate";

/// True while some Machines are not up to date.
pub const ROLLING_OUT: &str = "RollingOut";

/// True while there are fewer Machines than wanted.
pub const SCALING_UP: &str = "ScalingUp";

/// True while there are more Machines than wanted.
pub const SCALING_DOWN: &str = "ScalingDown";

/// True while Machines are being remediated.
pub const REMEDIATING: &str = "Remediating";

/// True while the object is being deleted; the reason says what deletion waits for.
pub const DELETING: &str = "Deleting";

/// True while reconciliation is paused, by `spec.paused` on the Cluster or the
/// `cluster.x-k8s.io/paused` annotation.
pub const PAUSED: &str = "Paused";

/// Reasons shared by several condition types and kinds.
pub mod reason {
    /// [`super::AVAILABLE`] is True.
    pub const AVAILABLE: &str = "Available";
    /// [`super::AVAILABLE`] is False.
    pub const NOT_AVAILABLE: &str = "NotAvailable";
    /// [`super::AVAILABLE`] is Unknown.
    pub const AVAILABLE_UNKNOWN: &str = "AvailableUnknown";
    /// [`super::READY`] is True.
    pub const READY: &str = "Ready";
    /// [`super::READY`] is False.
    pub const NOT_READY: &str = "NotReady";
    /// [`super::READY`] is Unknown.
    pub const READY_UNKNOWN: &str = "ReadyUnknown";
    /// An up-to-date condition is True.
    pub const UP_TO_DATE: &str = "UpToDate";
    /// An up-to-date condition is False.
    pub const NOT_UP_TO_DATE: &str = "NotUpToDate";
    /// An up-to-date condition is Unknown.
    pub const UP_TO_DATE_UNKNOWN: &str = "UpToDateUnknown";
    /// [`super::ROLLING_OUT`] is True.
    pub const ROLLING_OUT: &str = "RollingOut";
    /// [`super::ROLLING_OUT`] is False.
    pub const NOT_ROLLING_OUT: &str = "NotRollingOut";
    /// [`super::SCALING_UP`] is True.
    pub const SCALING_UP: &str = "ScalingUp";
    /// [`super::SCALING_UP`] is False.
    pub const NOT_SCALING_UP: &str = "NotScalingUp";
    /// [`super::SCALING_DOWN`] is True.
    pub const SCALING_DOWN: &str = "ScalingDown";
    /// [`super::SCALING_DOWN`] is False.
    pub const NOT_SCALING_DOWN: &str = "NotScalingDown";
    /// [`super::REMEDIATING`] is True.
    pub const REMEDIATING: &str = "Remediating";
    /// [`super::REMEDIATING`] is False.
    pub const NOT_REMEDIATING: &str = "NotRemediating";
    /// An aggregate over Machines when there are none.
    pub const NO_REPLICAS: &str = "NoReplicas";
    /// The replica count is not known yet.
    pub const WAITING_FOR_REPLICAS_SET: &str = "WaitingForReplicasSet";
    /// A provider reported a condition that cannot be used.
    pub const INVALID_CONDITION_REPORTED: &str = "InvalidConditionReported";
    /// The controller failed; the message says more.
    pub const INTERNAL_ERROR: &str = "InternalError";
    /// A referenced object does not exist.
    pub const OBJECT_DOES_NOT_EXIST: &str = "ObjectDoesNotExist";
    /// A referenced object is being deleted.
    pub const OBJECT_DELETED: &str = "ObjectDeleted";
    /// [`super::PAUSED`] is False.
    pub const NOT_PAUSED: &str = "NotPaused";
    /// [`super::PAUSED`] is True.
    pub const PAUSED: &str = "Paused";
    /// The workload cluster cannot be reached.
    pub const CONNECTION_DOWN: &str = "ConnectionDown";
    /// [`super::DELETING`] is False.
    pub const NOT_DELETING: &str = "NotDeleting";
    /// [`super::DELETING`] is True, with nothing more specific to say.
    pub const DELETING: &str = "Deleting";
    /// Deletion is done; the finalizer is about to go.
    pub const DELETION_COMPLETED: &str = "DeletionCompleted";
    /// The controller could not inspect what the condition is about.
    pub const INSPECTION_FAILED: &str = "InspectionFailed";
    /// Waiting for the Cluster's infrastructure.
    pub const WAITING_FOR_CLUSTER_INFRASTRUCTURE_READY: &str =
        "WaitingForClusterInfrastructureReady";
    /// Waiting for the control plane to be initialized.
    pub const WAITING_FOR_CONTROL_PLANE_INITIALIZED: &str = "WaitingForControlPlaneInitialized";
    /// Waiting for the bootstrap data.
    pub const WAITING_FOR_BOOTSTRAP_DATA: &str = "WaitingForBootstrapData";
    /// An infrastructure object is provisioned.
    pub const PROVISIONED: &str = "Provisioned";
    /// An infrastructure object is not provisioned yet.
    pub const NOT_PROVISIONED: &str = "NotProvisioned";
}

/// Cluster conditions.
pub mod cluster {
    /// The control plane has been initialized (mirrors
    /// `status.initialization.controlPlaneInitialized`).
    pub const CONTROL_PLANE_INITIALIZED: &str = "ControlPlaneInitialized";
    /// Mirrors the control plane object's Available condition.
    pub const CONTROL_PLANE_AVAILABLE: &str = "ControlPlaneAvailable";
    /// Aggregates the Available conditions of MachineDeployments and MachinePools.
    pub const WORKERS_AVAILABLE: &str = "WorkersAvailable";
    /// Aggregates the Ready conditions of control plane Machines.
    pub const CONTROL_PLANE_MACHINES_READY: &str = "ControlPlaneMachinesReady";
    /// Aggregates the Ready conditions of worker Machines.
    pub const WORKER_MACHINES_READY: &str = "WorkerMachinesReady";
    /// Aggregates the UpToDate conditions of control plane Machines.
    pub const CONTROL_PLANE_MACHINES_UP_TO_DATE: &str = "ControlPlaneMachinesUpToDate";
    /// Aggregates the UpToDate conditions of worker Machines.
    pub const WORKER_MACHINES_UP_TO_DATE: &str = "WorkerMachinesUpToDate";
    /// Whether the workload cluster's API server answers.
    pub const REMOTE_CONNECTION_PROBE: &str = "RemoteConnectionProbe";
    /// Whether the topology controller applied the Cluster's topology.
    pub const TOPOLOGY_RECONCILED: &str = "TopologyReconciled";

    /// Reasons of Cluster conditions.
    pub mod reason {
        /// [`super::CONTROL_PLANE_INITIALIZED`] is True.
        pub const INITIALIZED: &str = "Initialized";
        /// [`super::CONTROL_PLANE_INITIALIZED`] is False.
        pub const NOT_INITIALIZED: &str = "NotInitialized";
        /// [`super::WORKERS_AVAILABLE`] when there are no workers.
        pub const NO_WORKERS: &str = "NoWorkers";
        /// [`super::REMOTE_CONNECTION_PROBE`] is False.
        pub const PROBE_FAILED: &str = "ProbeFailed";
        /// [`super::REMOTE_CONNECTION_PROBE`] is True.
        pub const PROBE_SUCCEEDED: &str = "ProbeSucceeded";
        /// RollingOut is Unknown.
        pub const ROLLING_OUT_UNKNOWN: &str = "RollingOutUnknown";
        /// ScalingUp is Unknown.
        pub const SCALING_UP_UNKNOWN: &str = "ScalingUpUnknown";
        /// ScalingDown is Unknown.
        pub const SCALING_DOWN_UNKNOWN: &str = "ScalingDownUnknown";
        /// Deleting: waiting for the BeforeClusterDelete lifecycle hook.
        pub const WAITING_FOR_BEFORE_DELETE_HOOK: &str = "WaitingForBeforeDeleteHook";
        /// Deleting: waiting for worker Machines, MachineSets, MachineDeployments and MachinePools
        /// to go.
        pub const WAITING_FOR_WORKERS_DELETION: &str = "WaitingForWorkersDeletion";
        /// Deleting: waiting for the control plane object to go.
        pub const WAITING_FOR_CONTROL_PLANE_DELETION: &str = "WaitingForControlPlaneDeletion";
        /// Deleting: waiting for the infrastructure object to go.
        pub const WAITING_FOR_INFRASTRUCTURE_DELETION: &str = "WaitingForInfrastructureDeletion";
        /// TopologyReconciled is True.
        pub const TOPOLOGY_RECONCILE_SUCCEEDED: &str = "ReconcileSucceeded";
        /// TopologyReconciled is False because applying it failed.
        pub const TOPOLOGY_RECONCILE_FAILED: &str = "ReconcileFailed";
    }
}

/// Machine conditions.
pub mod machine {
    /// Whether the Machine matches its owner's current spec (for Machines of a MachineSet or a
    /// control plane).
    pub const UP_TO_DATE: &str = "UpToDate";
    /// True while the Machine is being updated in place.
    pub const UPDATING: &str = "Updating";
    /// The Node's health: its Ready condition and its pressure conditions.
    pub const NODE_HEALTHY: &str = "NodeHealthy";
    /// Mirrors the Node's Ready condition.
    pub const NODE_READY: &str = "NodeReady";
    /// Set by MachineHealthChecks: False when the Machine is unhealthy.
    pub const HEALTH_CHECK_SUCCEEDED: &str = "HealthCheckSucceeded";
    /// Set False by a MachineHealthCheck to ask the Machine's owner to remediate it.
    pub const OWNER_REMEDIATED: &str = "OwnerRemediated";
    /// Set False by a MachineHealthCheck when an external remediation request was created.
    pub const EXTERNALLY_REMEDIATED: &str = "ExternallyRemediated";

    /// Reasons of Machine conditions.
    pub mod reason {
        /// Available: Ready, but not yet for minReadySeconds.
        pub const WAITING_FOR_MIN_READY_SECONDS: &str = "WaitingForMinReadySeconds";
        /// UpToDate: an in-place update is under way.
        pub const UP_TO_DATE_UPDATING: &str = "Updating";
        /// Updating is False.
        pub const NOT_UPDATING: &str = "NotUpdating";
        /// Updating is True.
        pub const IN_PLACE_UPDATING: &str = "InPlaceUpdating";
        /// Updating: the in-place update failed.
        pub const IN_PLACE_UPDATE_FAILED: &str = "InPlaceUpdateFailed";
        /// BootstrapConfigReady: the user gave the bootstrap data Secret directly.
        pub const BOOTSTRAP_DATA_SECRET_PROVIDED: &str = "DataSecretProvided";
        /// NodeReady is True.
        pub const NODE_READY: &str = "NodeReady";
        /// NodeReady is False.
        pub const NODE_NOT_READY: &str = "NodeNotReady";
        /// NodeReady is Unknown.
        pub const NODE_READY_UNKNOWN: &str = "NodeReadyUnknown";
        /// NodeHealthy is True.
        pub const NODE_HEALTHY: &str = "NodeHealthy";
        /// NodeHealthy is False.
        pub const NODE_NOT_HEALTHY: &str = "NodeNotHealthy";
        /// NodeHealthy is Unknown.
        pub const NODE_HEALTH_UNKNOWN: &str = "NodeHealthyUnknown";
        /// There is no Node for the Machine yet.
        pub const NODE_DOES_NOT_EXIST: &str = "NodeDoesNotExist";
        /// The Machine's Node was deleted.
        pub const NODE_DELETED: &str = "NodeDeleted";
        /// HealthCheckSucceeded is True.
        pub const HEALTH_CHECK_SUCCEEDED: &str = "HealthCheckSucceeded";
        /// HealthCheckSucceeded: an unhealthyNodeConditions entry matched.
        pub const UNHEALTHY_NODE: &str = "UnhealthyNode";
        /// HealthCheckSucceeded: an unhealthyMachineConditions entry matched.
        pub const UNHEALTHY_MACHINE: &str = "UnhealthyMachine";
        /// HealthCheckSucceeded: no Node within nodeStartupTimeoutSeconds.
        pub const NODE_STARTUP_TIMEOUT: &str = "NodeStartupTimeout";
        /// HealthCheckSucceeded: the Machine has the remediate-machine annotation.
        pub const HAS_REMEDIATE_ANNOTATION: &str = "HasRemediateAnnotation";
        /// OwnerRemediated and ExternallyRemediated are False: remediation is pending.
        pub const WAITING_FOR_REMEDIATION: &str = "WaitingForRemediation";
        /// ExternallyRemediated: the remediation template does not exist.
        pub const REMEDIATION_TEMPLATE_NOT_FOUND: &str = "RemediationTemplateNotFound";
        /// ExternallyRemediated: creating the remediation request failed.
        pub const REMEDIATION_REQUEST_CREATION_FAILED: &str = "RemediationRequestCreationFailed";
        /// Deleting: waiting for pre-drain hooks to be removed.
        pub const WAITING_FOR_PRE_DRAIN_HOOK: &str = "WaitingForPreDrainHook";
        /// Deleting: draining the Node.
        pub const DRAINING_NODE: &str = "DrainingNode";
        /// Deleting: waiting for the Node's volumes to detach.
        pub const WAITING_FOR_VOLUME_DETACH: &str = "WaitingForVolumeDetach";
        /// Deleting: waiting for pre-terminate hooks to be removed.
        pub const WAITING_FOR_PRE_TERMINATE_HOOK: &str = "WaitingForPreTerminateHook";
        /// Deleting: waiting for the infrastructure object to go.
        pub const WAITING_FOR_INFRASTRUCTURE_DELETION: &str = "WaitingForInfrastructureDeletion";
        /// Deleting: waiting for the bootstrap object to go.
        pub const WAITING_FOR_BOOTSTRAP_DELETION: &str = "WaitingForBootstrapDeletion";
        /// Deleting: deleting the Node.
        pub const DELETING_NODE: &str = "DeletingNode";
    }
}

/// MachineSet conditions (it uses the shared types only).
pub mod machine_set {
    /// Reasons of MachineSet conditions and of the OwnerRemediated condition it sets on its
    /// Machines.
    pub mod reason {
        /// OwnerRemediated: the MachineSet cannot remediate the Machine.
        pub const CANNOT_BE_REMEDIATED: &str = "CannotBeRemediated";
        /// OwnerRemediated: remediation waits, for example for maxInFlight.
        pub const REMEDIATION_DEFERRED: &str = "RemediationDeferred";
        /// OwnerRemediated: the Machine is being deleted to remediate it.
        pub const MACHINE_DELETING: &str = "MachineDeleting";
    }
}

/// MachineDeployment conditions (it uses the shared types only).
pub mod machine_deployment {
    /// Reasons of MachineDeployment conditions.
    pub mod reason {
        /// Available: the number of available replicas is not known yet.
        pub const WAITING_FOR_AVAILABLE_REPLICAS_SET: &str = "WaitingForAvailableReplicasSet";
    }
}

/// MachineHealthCheck conditions.
pub mod machine_health_check {
    /// Whether the MachineHealthCheck may remediate, given its triggerIf bounds.
    pub const REMEDIATION_ALLOWED: &str = "RemediationAllowed";

    /// Reasons of MachineHealthCheck conditions.
    pub mod reason {
        /// [`super::REMEDIATION_ALLOWED`] is True.
        pub const REMEDIATION_ALLOWED: &str = "RemediationAllowed";
        /// [`super::REMEDIATION_ALLOWED`] is False: too many Machines are unhealthy.
        pub const TOO_MANY_UNHEALTHY: &str = "TooManyUnhealthy";
    }
}
