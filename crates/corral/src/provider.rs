//! `corral provider`: providers as plugins. `corral provider local` serves the local provider
//! (`corral_provider_local::plugin`) over `corral.provider.v1`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

#[derive(clap::Args)]
pub struct ProviderArgs {
    #[command(subcommand)]
    command: ProviderCommand,
}

#[derive(clap::Subcommand)]
enum ProviderCommand {
    /// Serve the local provider: machines as network namespaces on this host, with real
    /// processes (the node agent, etcd, API servers) inside. Needs root and iproute2.
    Local(LocalArgs),
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Transport {
    Grpc,
    Http,
}

#[derive(clap::Args)]
struct LocalArgs {
    /// Address to serve the plugin on (register it with a ProviderPlugin whose endpoint is
    /// `grpc://<address>`, or `http://<address>` with `--transport http`).
    #[arg(long, default_value = "127.0.0.1:9444")]
    listen: SocketAddr,
    #[arg(long, value_enum, default_value = "grpc")]
    transport: Transport,
    /// Where the machines are recorded (and each machine's files kept); a restart with the
    /// same directory finds them again.
    #[arg(long, value_name = "DIR", default_value = "/var/lib/corral-local")]
    state_dir: PathBuf,
    /// Clusters get a /24 each from 10.<N>.0.0/16.
    #[arg(long, value_name = "N", default_value_t = 77)]
    subnet_pool: u8,
    /// The etcd binary control plane machines run (Debian's etcd-server package).
    #[arg(long, value_name = "FILE", default_value = "etcd")]
    etcd: PathBuf,
    /// Passed to every machine's agent: how long, in seconds, a Node may stay silent before
    /// the control plane marks it Ready=Unknown (kube-controller-manager's
    /// --node-monitor-grace-period; the agent's default is 40).
    #[arg(long, value_name = "SECONDS")]
    node_monitor_grace_period: Option<u64>,
    /// Passed to every machine's agent: how long, in seconds, a Node's Lease lasts (the
    /// kubelet's nodeLeaseDurationSeconds; the agent's default is 40).
    #[arg(long, value_name = "SECONDS")]
    node_lease_duration_seconds: Option<u64>,
}

pub async fn run(args: ProviderArgs) -> anyhow::Result<()> {
    match args.command {
        ProviderCommand::Local(args) => local(args).await,
    }
}

async fn local(args: LocalArgs) -> anyhow::Result<()> {
    use corral_provider_local::{host::Host, plugin};
    let host = Host::new(&args.state_dir, args.subnet_pool)
        .context("the local provider cannot hold machines here")?;
    let programs = plugin::Programs {
        corral: std::env::current_exe().context("cannot find the corral binary itself")?,
        etcd: args.etcd,
        node_monitor_grace_period: args.node_monitor_grace_period,
        node_lease_duration_seconds: args.node_lease_duration_seconds,
    };
    let provider = Arc::new(plugin::LocalProvider::new(host, programs));
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    let scheme = match args.transport {
        Transport::Grpc => "grpc",
        Transport::Http => "http",
    };
    println!("Serving the local provider on {scheme}://{address}");
    let shutdown = crate::shutdown_signal();
    match args.transport {
        Transport::Grpc => {
            corral_provider_sdk::server::serve_grpc(provider, listener, shutdown).await?
        }
        Transport::Http => {
            corral_provider_sdk::server::serve_http(provider, listener, shutdown).await?
        }
    }
    Ok(())
}
