//! The `local` infrastructure provider: every machine is a Linux network namespace on this
//! host with real processes inside, so that bring-up, failures, etcd quorum and upgrades are
//! real without a container engine (upstream's development provider needs Docker and kind
//! images).
//!
//! [`host`] owns the machines themselves: the namespace, its veth pair onto the cluster's
//! bridge, its address, the cgroup that holds every process started in it, and its state
//! directory, all recorded under a state root so that a restart finds them again. It needs
//! root (`CAP_NET_ADMIN`, `CAP_SYS_ADMIN`) and iproute2's `ip`.
//!
//! [`load_balancer`] is a cluster's control plane endpoint; [`plugin`] is the provider as a
//! `corral.provider.v1` plugin (the contract's reference implementation on real machines),
//! which starts the node agent (`corral node`, crate `corral-node`) inside each machine.

pub mod host;
pub mod load_balancer;
pub mod plugin;
