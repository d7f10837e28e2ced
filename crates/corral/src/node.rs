//! `corral node`: the node agent inside a machine of the local provider (`corral_node`).

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::Context;

#[derive(clap::Args)]
pub struct NodeArgs {
    /// The machine's bootstrap data (cloud-config, as the kubeadm bootstrap provider writes it).
    #[arg(long, value_name = "FILE")]
    bootstrap_data: PathBuf,
    /// The machine's root directory: the bootstrap data's files go under it.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// The machine's name (its hostname, and its Node's name unless kubeadm's configuration
    /// names one).
    #[arg(long)]
    machine_name: String,
    /// The machine's providerID, which its Node carries.
    #[arg(long)]
    provider_id: String,
    /// The machine's address: its etcd member and API server listen on it.
    #[arg(long)]
    address: IpAddr,
    /// The Machine's Kubernetes version, for a joining machine whose kubeadm configuration
    /// does not say it.
    #[arg(long)]
    kubernetes_version: Option<String>,
    /// On a control plane machine: how long, in seconds, a Node's kubelet may stay silent
    /// before its Node is marked Ready=Unknown (kube-controller-manager's flag).
    #[arg(long, value_name = "SECONDS", default_value_t = 40)]
    node_monitor_grace_period: u64,
    /// How long, in seconds, the Node's Lease lasts; it is renewed every quarter of it (the
    /// kubelet's nodeLeaseDurationSeconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 40)]
    node_lease_duration_seconds: u64,
    /// The etcd binary (Debian's etcd-server package).
    #[arg(long, value_name = "FILE", default_value = "etcd")]
    etcd: PathBuf,
}

pub async fn run(args: NodeArgs) -> anyhow::Result<()> {
    let corral = std::env::current_exe().context("cannot find the corral binary itself")?;
    let options = corral_node::Options {
        bootstrap_data: args.bootstrap_data,
        root: args.root,
        machine_name: args.machine_name,
        provider_id: args.provider_id,
        address: args.address,
        etcd: args.etcd,
        corral,
        kubernetes_version: args.kubernetes_version,
        node_monitor_grace_period: std::time::Duration::from_secs(args.node_monitor_grace_period),
        node_lease_duration: std::time::Duration::from_secs(
            args.node_lease_duration_seconds.max(1),
        ),
    };
    tokio::select! {
        result = corral_node::run(options) => Ok(result?),
        _ = crate::shutdown_signal() => Ok(()),
    }
}
