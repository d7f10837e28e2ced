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
//!
//! # Map of the crate
//!
//! `host/` owns the machines — a namespace `corral-<root>-<uid>` with a veth pair onto the
//! cluster's bridge (one /24 per cluster from `10.77.0.0/16`, never one the host already routes), a
//! cgroup that every process started with `Host::spawn` joins before it runs (so deleting a machine
//! kills whatever it forked), and a state directory; records under the state root let a restarted
//! provider find its machines, and kernel objects named from the uid let it finish or remove what a
//! crash left (`Host::orphans`). Needs root and iproute2; its tests fail, never skip, without them.
//! `load_balancer` is a cluster's control plane endpoint: a TCP proxy on the bridge's gateway
//! taking the machines' API servers in turn, setting aside one that does not accept within 500 ms
//! (a killed machine's address goes silent) so that no client sees it, replaying a connection's
//! first bytes (the TLS ClientHello) to the next backend when one accepts and then closes or resets
//! before answering (an API server dying), and (as the plugin starts it, `start_checked`) checking
//! each API server's `GET /readyz` over TLS every 250 ms as upstream's HAProxy checks `/healthz`:
//! an API server whose etcd member is gone (removed by KCP before its machine is deleted) gets no
//! new connections while another is ready; a machine being deleted leaves the endpoint before it is
//! killed. `plugin` is the provider as a `corral.provider.v1` plugin (`corral provider local`):
//! ReconcileCluster gives the endpoint, CreateMachine a machine running `corral node` with the
//! bootstrap data (RUNNING once kubeadm's sentinel is written, FAILED with the agent's error),
//! ListMachines also the namespaces no record claims.

pub mod host;
pub mod load_balancer;
pub mod plugin;
