//! Well-known label keys (upstream `api/core/v1beta2/common_types.go`, `machine_types.go`,
//! `machinedeployment_types.go`; book page `reference/api/labels-and-annotations.md`).

/// The name of the Cluster an object belongs to. Core lists a Cluster's descendants by it.
pub const CLUSTER_NAME: &str = "cluster.x-k8s.io/cluster-name";

/// On a Machine of the control plane, with an empty value.
pub const CONTROL_PLANE: &str = "cluster.x-k8s.io/control-plane";

/// The name of the control plane object that owns a Machine.
pub const CONTROL_PLANE_NAME: &str = "cluster.x-k8s.io/control-plane-name";

/// The name of the MachineSet a Machine belongs to; a hash when the name is longer than 63
/// characters.
pub const MACHINE_SET_NAME: &str = "cluster.x-k8s.io/set-name";

/// The name of the MachineDeployment a MachineSet or Machine belongs to.
pub const MACHINE_DEPLOYMENT_NAME: &str = "cluster.x-k8s.io/deployment-name";

/// The name of the MachinePool a Machine belongs to.
pub const MACHINE_POOL_NAME: &str = "cluster.x-k8s.io/pool-name";

/// The hash of a MachineDeployment's template, on its MachineSets and their Machines
/// (`<hash>-<random>`), so that each MachineSet selects only its own Machines.
pub const MACHINE_DEPLOYMENT_UNIQUE: &str = "machine-template-hash";

/// On objects the topology controller manages, with an empty value.
pub const TOPOLOGY_OWNED: &str = "topology.cluster.x-k8s.io/owned";

/// The topology name of a MachineDeployment created from a Cluster topology.
pub const TOPOLOGY_MACHINE_DEPLOYMENT_NAME: &str = "topology.cluster.x-k8s.io/deployment-name";

/// The topology name of a MachinePool created from a Cluster topology.
pub const TOPOLOGY_MACHINE_POOL_NAME: &str = "topology.cluster.x-k8s.io/pool-name";

/// The provider that installed an object, as `<type>-<name>` (for example
/// `infrastructure-docker`, or `cluster-api` for core).
pub const PROVIDER_NAME: &str = "cluster.x-k8s.io/provider";

/// Controllers started with a watch filter only reconcile objects with this label set to the
/// filter's value.
pub const WATCH_FILTER: &str = "cluster.x-k8s.io/watch-filter";

/// On a Machine (and copied to its Node) whose infrastructure can be taken away at any time,
/// such as spot instances.
pub const INTERRUPTIBLE: &str = "cluster.x-k8s.io/interruptible";

/// On a Pod: how draining treats it, [`DRAIN_SKIP`] or [`DRAIN_WAIT_COMPLETED`].
pub const POD_DRAIN: &str = "cluster.x-k8s.io/drain";

/// [`POD_DRAIN`] value: the Pod is not evicted.
pub const DRAIN_SKIP: &str = "skip";

/// [`POD_DRAIN`] value: the Pod is not evicted, and draining waits for it to complete.
pub const DRAIN_WAIT_COMPLETED: &str = "wait-completed";

/// On a ClusterRole, with value `"true"`: its rules are aggregated into the core controllers'
/// role, which is how a provider in another API group grants core access to its objects.
pub const AGGREGATE_TO_MANAGER: &str = "cluster.x-k8s.io/aggregate-to-manager";

/// The prefix of a provider CRD's contract label: `cluster.x-k8s.io/<contract>` (for example
/// `cluster.x-k8s.io/v1beta2`), whose value lists the CRD's API versions implementing that
/// contract, separated by `_`. See [`crate::contract::ContractVersion::from_crd_labels`].
pub const CONTRACT_PREFIX: &str = "cluster.x-k8s.io/";

/// Node label domain the Machine controller keeps in sync from the Machine (any key under it).
pub const NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io";

/// Node label domain the Machine controller keeps in sync from the Machine (any key under it or
/// its subdomains).
pub const NODE_RESTRICTION_DOMAIN: &str = "node-restriction.kubernetes.io";

/// Node label and annotation domain the Machine controller keeps in sync from the Machine (any
/// key under it or its subdomains).
pub const MANAGED_NODE_DOMAIN: &str = "node.cluster.x-k8s.io";

/// Set by clusterctl, with an empty value, on everything it installs.
pub const CLUSTERCTL: &str = "clusterctl.cluster.x-k8s.io";

/// Objects and CRDs with this label are moved by `move` even when no Cluster owns them.
pub const CLUSTERCTL_MOVE: &str = "clusterctl.cluster.x-k8s.io/move";

/// Objects with this label are moved by `move` together with everything they own.
pub const CLUSTERCTL_MOVE_HIERARCHY: &str = "clusterctl.cluster.x-k8s.io/move-hierarchy";

/// The longest label value.
const MAX_LABEL_VALUE_LENGTH: usize = 63;

/// FNV-1a, 32 bits, as Go's `hash/fnv.New32a`.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// Whether a string is a valid label value: at most 63 characters, empty or alphanumeric at
/// both ends, with `-`, `_` and `.` inside.
pub fn is_valid_label_value(value: &str) -> bool {
    if value.len() > MAX_LABEL_VALUE_LENGTH {
        return false;
    }
    if value.is_empty() {
        return true;
    }
    let bytes = value.as_bytes();
    let edge = |byte: u8| byte.is_ascii_alphanumeric();
    edge(bytes[0])
        && edge(bytes[bytes.len() - 1])
        && bytes
            .iter()
            .all(|&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
}

/// The value itself when it is a valid label value, else `hash_<base64url(fnv32a)>_z` (upstream
/// `MustFormatValue`): MachineSet names longer than 63 characters are labelled so.
pub fn format_label_value(value: &str) -> String {
    if is_valid_label_value(value) {
        return value.to_owned();
    }
    let hash = fnv32a(value.as_bytes()).to_be_bytes();
    format!("hash_{}_z", base64url_no_pad(&hash))
}

pub fn base64url_no_pad(bytes: &[u8]) -> String {
    const TABLE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let mut buffer = [0u8; 3];
        buffer[..chunk.len()].copy_from_slice(chunk);
        let group =
            (u32::from(buffer[0]) << 16) | (u32::from(buffer[1]) << 8) | u32::from(buffer[2]);
        let symbols = chunk.len() + 1;
        for index in 0..symbols {
            let shift = 18 - 6 * index;
            out.push(TABLE[((group >> shift) & 0x3f) as usize] as char);
        }
    }
    out
}
