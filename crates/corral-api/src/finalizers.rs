//! Finalizers the controllers put on the objects they own the deletion of (upstream `*_types.go`).

/// On a Cluster: removed once its children, control plane and infrastructure are gone.
pub const CLUSTER: &str = "cluster.cluster.x-k8s.io";

/// On a Machine: removed once its Node, infrastructure and bootstrap objects are gone.
pub const MACHINE: &str = "machine.cluster.x-k8s.io";

/// On a MachineSet: removed once its Machines are gone.
pub const MACHINE_SET: &str = "cluster.x-k8s.io/machineset";

/// On a MachineDeployment: removed once its MachineSets are gone.
pub const MACHINE_DEPLOYMENT: &str = "cluster.x-k8s.io/machinedeployment";

/// On a MachinePool.
pub const MACHINE_POOL: &str = "machinepool.cluster.x-k8s.io";

/// On a MachineSet managed by the topology controller.
pub const MACHINE_SET_TOPOLOGY: &str = "machineset.topology.cluster.x-k8s.io";

/// On a MachineDeployment managed by the topology controller.
pub const MACHINE_DEPLOYMENT_TOPOLOGY: &str = "machinedeployment.topology.cluster.x-k8s.io";

/// On a KubeadmControlPlane.
pub const KUBEADM_CONTROL_PLANE: &str = "kubeadm.controlplane.cluster.x-k8s.io";

/// On a ClusterResourceSet.
pub const CLUSTER_RESOURCE_SET: &str = "addons.cluster.x-k8s.io";
