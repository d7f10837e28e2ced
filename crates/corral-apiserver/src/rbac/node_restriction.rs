//! kube's NodeRestriction for the writes a kubelet makes (`plugin/pkg/admission/noderestriction`):
//! a node identity (`system:node:<name>` in `system:nodes`, as kubeadm and the CSR signer
//! issue kubelets' certificates) may modify only its own Node (and its status) and only its
//! own Lease in `kube-node-lease`. RBAC's `system:node` role lets every node write every Node;
//! this narrows it, before RBAC is asked, with kube-apiserver's 403 (`nodes "b" is forbidden:
//! node "a" is not allowed to modify node "b"`).
//!
//! Decided from the request's attributes only: a create names its object in the body, which
//! is not read here, so creates are left to RBAC.

use crate::auth::UserInfo;

use super::rules::Attributes;

/// The prefix of a node identity's user name.
const NODE_USER_PREFIX: &str = "system:node:";

/// The group of node identities.
const NODES_GROUP: &str = "system:nodes";

/// The namespace of the nodes' Leases.
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The node a user is, when it is one.
fn node_name(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    (!name.is_empty() && user.groups.iter().any(|group| group == NODES_GROUP)).then_some(name)
}

/// Why the request is refused, as kube's message after `<resource> "<name>" is forbidden: `;
/// `None` when NodeRestriction lets it through.
pub(crate) fn refusal(user: &UserInfo, attributes: &Attributes) -> Option<String> {
    let node = node_name(user)?;
    if !attributes.resource_request
        || !matches!(attributes.verb.as_str(), "update" | "patch" | "delete")
        || attributes.name.is_empty()
        || attributes.name == node
    {
        return None;
    }
    match (attributes.group.as_str(), attributes.resource.as_str()) {
        ("", "nodes") => Some(format!(
            "node {node:?} is not allowed to modify node {:?}",
            attributes.name
        )),
        ("coordination.k8s.io", "leases") if attributes.namespace == NODE_LEASE_NAMESPACE => {
            Some("can only access node lease with the same name as the requesting node".to_owned())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
