//! `corral cloud`: the in-memory provider's simulated cloud in its own process, and the
//! `--cloud URL` flag with which `corral up` and `corral controllers` use it instead of a cloud
//! of their own. Management planes that share one cloud can move clusters between them
//! (`corral move`) without the VMs or workload clusters noticing.

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, bail};
use corral_cloud::{CloudServer, InProcessCloud, RemoteCloud};

#[derive(clap::Args)]
pub struct CloudArgs {
    /// Address to serve the cloud on. Only loopback addresses are allowed (the cloud has no
    /// authentication); port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:6480")]
    listen: SocketAddr,
}

/// `--cloud URL`, for the commands that run the in-memory provider.
#[derive(clap::Args)]
pub struct CloudFlag {
    /// Use the simulated cloud served by `corral cloud` at this URL (e.g.
    /// http://127.0.0.1:6480) instead of one inside this process. Several management planes
    /// can share one cloud, which `corral move` between them needs.
    #[arg(long, value_name = "URL")]
    pub cloud: Option<String>,
}

impl CloudFlag {
    /// The cloud the provider is to use: the remote one named by the flag, checked to answer,
    /// or a new in-process one.
    pub async fn open(&self) -> anyhow::Result<corral_cli::components::Cloud> {
        let Some(url) = &self.cloud else {
            return Ok(Arc::new(InProcessCloud::new()));
        };
        let remote = RemoteCloud::new(url)
            .map_err(|error| anyhow::anyhow!("--cloud {url}: {}", innermost(&error)))?;
        remote.check().await.map_err(|error| {
            anyhow::anyhow!(
                "cannot reach the simulated cloud at {url} ({}); is `corral cloud` running there?",
                innermost(&error)
            )
        })?;
        tracing::info!(url = %url, "Using the simulated cloud");
        Ok(Arc::new(remote))
    }
}

/// `corral cloud`: serves an in-process cloud until SIGINT or SIGTERM, then removes its
/// workload clusters and VMs (a simulated cloud keeps nothing).
pub async fn serve(args: CloudArgs) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() {
        bail!(
            "refusing to listen on {}: the simulated cloud has no authentication, so only loopback addresses are allowed (use 127.0.0.1 or ::1)",
            args.listen
        );
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let cloud = Arc::new(InProcessCloud::new());
    let server = CloudServer::start(listener, cloud.clone())
        .with_context(|| format!("cannot serve on {}", args.listen))?;
    // A server outlives whoever reads its banner: a closed stdout is no reason to stop.
    let _ = writeln!(
        std::io::stdout(),
        "The simulated cloud is serving at {url}. Use it with:\n  corral up --cloud {url}",
        url = server.url()
    );
    crate::shutdown_signal().await;
    tracing::info!("Shutting down");
    server.shutdown().await;
    cloud.shutdown().await;
    Ok(())
}

/// The message of the deepest source: what went wrong, without the layers above it.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}
