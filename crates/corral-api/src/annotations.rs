//! Well-known annotation keys (upstream `api/core/v1beta2/*_types.go`; book page
//! `reference/api/labels-and-annotations.md`).

/// On any Cluster API object: its controllers leave it alone while the annotation is present
/// (any value), as if the Cluster were paused.
pub const PAUSED: &str = "cluster.x-k8s.io/paused";

/// On a Machine: deleted first when its MachineSet scales down. Only the key counts; the
/// cluster autoscaler sets the time as value.
pub const DELETE_MACHINE: &str = "cluster.x-k8s.io/delete-machine";

/// On a MachineSet, `"true"`: it creates no Machines. A MachineDeployment sets it on its old
/// MachineSets during an OnDelete rollout.
pub const DISABLE_MACHINE_CREATE: &str = "cluster.x-k8s.io/disable-machine-create";

/// On a Machine: MachineHealthChecks leave it out of their targets.
pub const MACHINE_SKIP_REMEDIATION: &str = "cluster.x-k8s.io/skip-remediation";

/// On a Machine: MachineHealthChecks consider it unhealthy at once and have it remediated.
pub const REMEDIATE_MACHINE: &str = "cluster.x-k8s.io/remediate-machine";

/// On an infrastructure cluster object: it is managed by something other than its provider,
/// which then leaves it alone.
pub const MANAGED_BY: &str = "cluster.x-k8s.io/managed-by";

/// On a MachinePool: its replicas are managed by something else, such as an autoscaler.
pub const REPLICAS_MANAGED_BY: &str = "cluster.x-k8s.io/replicas-managed-by";

/// On an object cloned from a template: the template's name.
pub const TEMPLATE_CLONED_FROM_NAME: &str = "cluster.x-k8s.io/cloned-from-name";

/// On an object cloned from a template: the template's group and kind, as `Kind.group`.
pub const TEMPLATE_CLONED_FROM_GROUP_KIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";

/// On a MachineDeployment, MachineSet or MachinePool: the cluster autoscaler's lower bound.
pub const AUTOSCALER_MIN_SIZE: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";

/// On a MachineDeployment, MachineSet or MachinePool: the cluster autoscaler's upper bound.
pub const AUTOSCALER_MAX_SIZE: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";

/// On a Machine: its Node is not drained before deletion.
pub const EXCLUDE_NODE_DRAINING: &str = "machine.cluster.x-k8s.io/exclude-node-draining";

/// On a Machine: deletion does not wait for its Node's volumes to detach.
pub const EXCLUDE_WAIT_FOR_NODE_VOLUME_DETACH: &str =
    "machine.cluster.x-k8s.io/exclude-wait-for-node-volume-detach";

/// On a Machine or its bootstrap object: when the Machine's certificates expire (RFC 3339).
pub const MACHINE_CERTIFICATES_EXPIRY_DATE: &str = "machine.cluster.x-k8s.io/certificates-expiry";

/// Prefix of annotations that hold a Machine's deletion before its Node is drained:
/// `pre-drain.delete.hook.machine.cluster.x-k8s.io/<name>`; the owner of the hook removes it.
pub const PRE_DRAIN_DELETE_HOOK_PREFIX: &str = "pre-drain.delete.hook.machine.cluster.x-k8s.io";

/// Prefix of annotations that hold a Machine's deletion before its infrastructure is deleted:
/// `pre-terminate.delete.hook.machine.cluster.x-k8s.io/<name>`; the owner of the hook removes it.
pub const PRE_TERMINATE_DELETE_HOOK_PREFIX: &str =
    "pre-terminate.delete.hook.machine.cluster.x-k8s.io";

/// Prefix of annotations that hold a Cluster's upgrade:
/// `before-upgrade.hook.cluster.cluster.x-k8s.io/<name>`.
pub const BEFORE_CLUSTER_UPGRADE_HOOK_PREFIX: &str = "before-upgrade.hook.cluster.cluster.x-k8s.io";

/// On a MachineSet (and its MachineDeployment): its revision, a number that grows with each new
/// template. Note the plural `clusters` in the domain.
pub const REVISION: &str = "machinedeployment.clusters.x-k8s.io/revision";

/// On a MachineSet: its MachineDeployment's desired replicas.
pub const DESIRED_REPLICAS: &str = "machinedeployment.clusters.x-k8s.io/desired-replicas";

/// On a MachineSet: its MachineDeployment's desired replicas plus maxSurge.
pub const MAX_REPLICAS: &str = "machinedeployment.clusters.x-k8s.io/max-replicas";

/// On a MachineDeployment, MachineSet or bootstrap config template: preflight checks to skip
/// before creating Machines, comma separated, or `All`.
pub const MACHINE_SET_SKIP_PREFLIGHT_CHECKS: &str =
    "machineset.cluster.x-k8s.io/skip-preflight-checks";

/// On a Machine being updated in place.
pub const UPDATE_IN_PROGRESS: &str =
    "in-place-updates.internal.cluster.x-k8s.io/update-in-progress";

/// On a Cluster with a topology: hold the upgrade of its MachineDeployments and MachinePools.
pub const TOPOLOGY_HOLD_UPGRADE_SEQUENCE: &str = "topology.cluster.x-k8s.io/hold-upgrade-sequence";

/// On a Cluster with a topology: defer the upgrade of its MachineDeployments and MachinePools.
pub const TOPOLOGY_DEFER_UPGRADE: &str = "topology.cluster.x-k8s.io/defer-upgrade";

/// On a Cluster with a topology: how many MachineDeployments upgrade at once.
pub const TOPOLOGY_UPGRADE_CONCURRENCY: &str = "topology.cluster.x-k8s.io/upgrade-concurrency";

/// On objects the topology controller writes in a dry run.
pub const TOPOLOGY_DRY_RUN: &str = "topology.cluster.x-k8s.io/dry-run";

/// On a Node: the name of its Cluster.
pub const NODE_CLUSTER_NAME: &str = "cluster.x-k8s.io/cluster-name";

/// On a Node: the namespace of its Cluster.
pub const NODE_CLUSTER_NAMESPACE: &str = "cluster.x-k8s.io/cluster-namespace";

/// On a Node: the name of its Machine.
pub const NODE_MACHINE: &str = "cluster.x-k8s.io/machine";

/// On a Node: the kind of its Machine's owner.
pub const NODE_OWNER_KIND: &str = "cluster.x-k8s.io/owner-kind";

/// On a Node: the name of its Machine's owner.
pub const NODE_OWNER_NAME: &str = "cluster.x-k8s.io/owner-name";

/// On a Node: the labels the Machine controller last synced from the Machine.
pub const NODE_LABELS_FROM_MACHINE: &str = "cluster.x-k8s.io/labels-from-machine";

/// On a Node: the annotations the Machine controller last synced from the Machine.
pub const NODE_ANNOTATIONS_FROM_MACHINE: &str = "cluster.x-k8s.io/annotations-from-machine";

/// On a Node: the taints the Machine controller last synced from the Machine.
pub const NODE_TAINTS_FROM_MACHINE: &str = "cluster.x-k8s.io/taints-from-machine";

/// On a KubeadmControlPlane: do not manage CoreDNS.
pub const KCP_SKIP_COREDNS: &str = "controlplane.cluster.x-k8s.io/skip-coredns";

/// On a KubeadmControlPlane: do not manage kube-proxy.
pub const KCP_SKIP_KUBE_PROXY: &str = "controlplane.cluster.x-k8s.io/skip-kube-proxy";

/// On a KubeadmControlPlane: the remediation under way.
pub const KCP_REMEDIATION_IN_PROGRESS: &str =
    "controlplane.cluster.x-k8s.io/remediation-in-progress";

/// On a control plane Machine: the remediation it was created for.
pub const KCP_REMEDIATION_FOR: &str = "controlplane.cluster.x-k8s.io/remediation-for";

/// On an object: `move` waits until it is removed before moving anything.
pub const CLUSTERCTL_BLOCK_MOVE: &str = "clusterctl.cluster.x-k8s.io/block-move";

/// Put by `move` on the source objects it is about to delete, so that their controllers do not
/// delete real infrastructure.
pub const CLUSTERCTL_DELETE_FOR_MOVE: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";
