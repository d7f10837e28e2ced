//! The node agent, `corral node`: started inside a real machine (the local provider's network
//! namespaces) with the machine's bootstrap data, it does what the kubeadm bootstrap provider's
//! cloud-init asks. It writes the files under the machine's root directory
//! ([`cloud_config`]); for `kubeadm init` it does kubeadm's work itself ([`control_plane`]):
//! the leaf certificates from the cluster's CAs, an etcd member (Debian's `etcd`, TLS with
//! client certificates) and a Corral API server on it, serving with the cluster CA as client CA,
//! and `/etc/kubernetes/admin.conf`; then, as a kubelet, it registers the machine's Node and
//! heartbeats it ([`kubelet`]) until it is stopped; a control plane machine also marks Nodes
//! whose heartbeats stopped `Ready=Unknown` ([`node_lifecycle`]). Commands it does not understand are not
//! run (the machine shares the host's file system) and are logged.
//!
//! The success sentinel of the bootstrap contract
//! (`/run/cluster-api/bootstrap-success.complete`) is written once the Node is registered; a
//! failure before it ends [`run`] with an error saying what, which the machine reports.
//!
//! For `kubeadm join` with `controlPlane`, the machine's etcd member is added to the cluster's
//! etcd first. A worker joins as kubeadm's does ([`tls_bootstrap`]): it discovers the cluster
//! with its bootstrap token through cluster-info ([`cluster_info`]) and asks for its kubelet's
//! client certificate, which the control plane machines approve and sign
//! ([`controller_manager`], with the node lifecycle).
//!
//! # Map of the crate
//!
//! The node agent, `corral node`, started inside a local machine with its bootstrap data:
//! `cloud_config` reads the kubeadm bootstrap provider's cloud-config (Jinja `ds.meta_data`
//! variables filled, `write_files` written under the machine's root, never outside it, `runcmd`
//! classified: only kubeadm's commands are performed, by the agent itself); `control_plane` does
//! `kubeadm init`'s work (leaf certificates from the carried CAs through
//! `corral_kubeadm::certs::issue`, an etcd member and a `corral apiserver` on it as supervised
//! children, anonymous requests on as kubeadm's are so that the endpoint can check `/readyz`,
//! `admin.conf`, and `kubelet.conf` with the kubelet's own `system:node:<name>` certificate); etcd
//! runs with timings for members on one host (50 ms heartbeats, 300 ms election timeout, pre-vote)
//! unless the ClusterConfiguration's `etcd.local.extraArgs` say otherwise, which joining machines
//! read from the published kubeadm-config; `kubelet` registers the Node and renews its Lease as
//! that node; `control_plane::join` adds a control plane machine's etcd member (members found from
//! the control plane Nodes) before starting the same; a control plane machine's `node_lifecycle`
//! marks Nodes whose heartbeats stopped `Ready=Unknown`, as kube-controller-manager does; control
//! plane machines publish what kubeadm leaves (static Pods, kubeadm-config, kube-proxy, CoreDNS)
//! from `corral-workload`, the builders the in-memory provider's simulation writes too. Workers
//! join as kubeadm's do: `tls_bootstrap` discovers the cluster through `cluster_info`
//! (kube-public/cluster-info, signed per bootstrap token, its CA pinned by `caCertHashes`) and gets
//! the kubelet's client certificate by CertificateSigningRequest, which `controller_manager` on
//! control plane machines approves (SubjectAccessReview) and signs, beside the bootstrap signer and
//! token cleaner.

pub mod cloud_config;
pub mod cluster_info;
pub mod control_plane;
pub mod controller_manager;
pub mod kubelet;
pub mod node_lifecycle;
pub mod tls_bootstrap;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use cloud_config::{CloudConfig, Command};

/// Where the agent finds its machine and its programs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The bootstrap data (cloud-config).
    pub bootstrap_data: PathBuf,
    /// The machine's root directory: a file the bootstrap data writes to `/etc/x` is
    /// `<root>/etc/x`.
    pub root: PathBuf,
    /// The machine's name: its hostname (`ds.meta_data.local_hostname`) and default Node name.
    pub machine_name: String,
    pub provider_id: String,
    /// The machine's address, on which its etcd and API server listen.
    pub address: IpAddr,
    /// The etcd binary.
    pub etcd: PathBuf,
    /// The Corral binary, whose `apiserver` command is the machine's API server.
    pub corral: PathBuf,
    /// The Machine's Kubernetes version, for a joining machine whose configuration does not
    /// say it.
    pub kubernetes_version: Option<String>,
    /// How long a Node's kubelet may stay silent before a control plane machine marks it
    /// `Ready=Unknown` (kube-controller-manager's `--node-monitor-grace-period`).
    pub node_monitor_grace_period: std::time::Duration,
    /// How long the Node's Lease lasts; it is renewed every quarter of it (the kubelet's
    /// `nodeLeaseDurationSeconds`).
    pub node_lease_duration: std::time::Duration,
}

/// What stopped the agent.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the bootstrap data {path}: {source}")]
    ReadBootstrapData {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    CloudConfig(#[from] cloud_config::Error),
    #[error("the bootstrap data runs no kubeadm command")]
    NoKubeadmCommand,
    #[error(transparent)]
    Join(#[from] tls_bootstrap::Error),
    #[error(transparent)]
    ControlPlane(#[from] control_plane::Error),
    #[error(transparent)]
    Kubelet(#[from] kubelet::Error),
}

/// Runs the machine's bootstrap, then keeps its Node alive until the process is stopped.
pub async fn run(options: Options) -> Result<(), Error> {
    let text = std::fs::read_to_string(&options.bootstrap_data).map_err(|source| {
        Error::ReadBootstrapData {
            path: options.bootstrap_data.clone(),
            source,
        }
    })?;
    let metadata = BTreeMap::from([
        ("local_hostname", options.machine_name.clone()),
        ("hostname", options.machine_name.clone()),
        ("instance_id", options.provider_id.clone()),
        ("provider_id", options.provider_id.clone()),
    ]);
    let config = CloudConfig::parse(&text, &metadata)?;
    tracing::info!(
        files = config.write_files.len(),
        "Writing the bootstrap files"
    );
    config.write_files(&options.root)?;
    let mut kubeadm = None;
    for command in config.commands() {
        match command {
            Command::Other(line) => {
                tracing::warn!(command = %line, "Not running a command of the bootstrap data: the machine shares the host's file system")
            }
            command => kubeadm = Some(command),
        }
    }
    match kubeadm {
        Some(Command::KubeadmInit { config }) => {
            let control_plane = control_plane::init(&options, &config).await?;
            let (facts, client) = (
                control_plane.facts.clone(),
                control_plane.kubelet_client.clone(),
            );
            kubelet::run(&options, &facts, client, Some(control_plane)).await?;
            Ok(())
        }
        Some(Command::KubeadmJoin { config }) => {
            let facts = control_plane::read_facts(&options, &config)?;
            if facts.control_plane {
                let control_plane = control_plane::join(&options, &config).await?;
                let client = control_plane.kubelet_client.clone();
                kubelet::run(&options, &facts, client, Some(control_plane)).await?;
            } else {
                let client = tls_bootstrap::join(&options, &config, &facts).await?;
                kubelet::run(&options, &facts, client, None).await?;
            }
            Ok(())
        }
        _ => Err(Error::NoKubeadmCommand),
    }
}
