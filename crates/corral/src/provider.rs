//! `corral provider`: providers as plugins. `corral provider local` serves the local provider
//! (`corral_provider_local::plugin`) over `corral.provider.v1`; `corral provider test` runs
//! the conformance suite (`corral_provider_sdk::conformance`) against a running provider.

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
    /// Check that a running provider keeps the corral.provider.v1 contract: one line per check
    /// (PASS, FAIL with why, SKIP for a capability it does not list); exits 1 on a failure.
    /// It creates and deletes one cluster and one machine of its own.
    Test(TestArgs),
}

#[derive(clap::Args)]
struct TestArgs {
    /// The provider: grpc://, grpcs://, http:// or https://host:port.
    #[arg(long)]
    endpoint: String,
    /// PEM file of the CA to trust for grpcs:// and https:// (default: the system's roots).
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// Allow plain grpc:// or http:// to a host that is not loopback.
    #[arg(long)]
    insecure: bool,
    /// The deadline of each call, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    timeout: u64,
    /// How long the machine may take to be RUNNING, and the cluster to be ready, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    wait: u64,
    /// The machine's config (JSON object) sent with CreateMachine.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    machine_config: String,
    /// The cluster's config (JSON object) sent with ReconcileCluster.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    cluster_config: String,
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
        ProviderCommand::Test(args) => test(args).await,
    }
}

async fn test(args: TestArgs) -> anyhow::Result<()> {
    use base64::Engine;
    use corral_provider_sdk::conformance::{self, Outcome};
    let ca_bundle = match &args.ca_file {
        Some(path) => {
            let pem = std::fs::read(path)
                .with_context(|| format!("cannot read the CA file {}", path.display()))?;
            Some(base64::engine::general_purpose::STANDARD.encode(pem))
        }
        None => None,
    };
    let config = corral_provider_sdk::ClientConfig {
        endpoint: args.endpoint.clone(),
        ca_bundle,
        timeout: std::time::Duration::from_secs(args.timeout.max(1)),
        insecure: args.insecure,
    };
    let client = corral_provider_sdk::Client::new(&config)?;
    let object = |flag: &str, text: &str| -> anyhow::Result<serde_json::Value> {
        let value: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("{flag} is not JSON"))?;
        anyhow::ensure!(value.is_object(), "{flag} is not a JSON object");
        Ok(value)
    };
    let settings = conformance::Settings {
        machine_config: object("--machine-config", &args.machine_config)?,
        cluster_config: object("--cluster-config", &args.cluster_config)?,
        wait: std::time::Duration::from_secs(args.wait),
    };
    let checks = conformance::run(&client, &settings, |check| println!("{check}")).await;
    let failed = checks
        .iter()
        .filter(|check| matches!(check.outcome, Outcome::Fail(_)))
        .count();
    if failed > 0 {
        anyhow::bail!(
            "{failed} of {} checks failed against {}",
            checks.len(),
            args.endpoint
        );
    }
    Ok(())
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
