//! The local provider's tests. They make network namespaces, veth pairs, bridges and cgroups,
//! so they need root and iproute2 (CI runs them as root); without them they fail saying so.

mod host;
mod load_balancer;
