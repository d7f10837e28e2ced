//! `corral up`: the whole management plane in one process — the API server, the Cluster API
//! CRDs and provider inventory, the core controllers and the built-in providers — with a
//! progress view while it starts and, with `--demo`, a demo cluster whose tree is shown until
//! it is available.
//!
//! Everything lives in the data directory (the store and the admin kubeconfig), so a restart
//! on the same directory resumes: the objects are there and the controllers pick them up.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use corral_cli::describe::{DescribeOptions, describe_cluster, tree};
use corral_cli::generate::{self, GenerateCluster, Source};

/// The demo cluster's template flavor: `None`, the default, has a KubeadmControlPlane (and
/// KubeadmConfigs from corral-kubeadm's bootstrap provider); `Some("machine-based")` would
/// make the control plane plain Machines.
const DEMO_FLAVOR: Option<&str> = None;

/// The demo cluster's Kubernetes version.
const DEMO_KUBERNETES_VERSION: &str = "v1.32.0";

/// Whether standard output is a terminal that takes the live view (and colours).
pub fn shows_progress() -> bool {
    std::io::stdout().is_terminal()
}

fn colour() -> bool {
    shows_progress() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// One line per start-up step, as each completes.
struct Progress {
    colour: bool,
}

impl Progress {
    fn done(&self, step: &str, detail: impl std::fmt::Display) {
        let mark = if self.colour {
            "\x1b[32m✓\x1b[0m"
        } else {
            "✓"
        };
        println!("{mark} {step:<22} {detail}");
        let _ = std::io::stdout().flush();
    }
}

/// `corral up`: starts the API server on the data dir, installs the providers (CRDs and
/// inventory, as `corral init`), runs the controllers (as `corral controllers`, without an
/// election: this process owns its store) until SIGINT or SIGTERM.
pub async fn run(args: crate::UpArgs) -> anyhow::Result<()> {
    let progress = Progress { colour: colour() };
    let server = crate::start_apiserver(&args.server, &mut |step, detail| {
        progress.done(step, detail)
    })
    .await?;
    let connection = corral_cli::Connection::for_url(&server.url())?;
    let report = corral_cli::components::init(&connection).await?;
    progress.done(
        "CRDs installed",
        format!(
            "{} CRDs, providers {}",
            report.crds.len(),
            report
                .providers
                .iter()
                .map(|p| p.rsplit('/').next().unwrap_or(p))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        let mut stopped = stopped;
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let shutdown = futures::FutureExt::shared(Box::pin(shutdown));
    let cloud = args.cloud.open().await?;
    // The controllers call this process's own server in-process: the same requests and
    // watches without the loopback socket and HTTP framing on both ends.
    let in_process = kube::Client::new(server.in_process(), "default");
    let controllers = corral_cli::components::start_controllers(in_process, cloud, shutdown);
    progress.done(
        "Controllers started",
        "core, kubeadm bootstrap and control plane, in-memory infrastructure",
    );
    let kubeconfig = absolute(&args.server.data_dir.join("kubeconfig"));
    println!(
        "\nCorral is up. To use it:\n  export KUBECONFIG={}",
        kubeconfig.display()
    );
    let _ = std::io::stdout().flush();
    if args.demo {
        let demo = async {
            create_demo(&connection, "demo").await?;
            show_until_available(&connection, "demo").await
        };
        // The demo is a view: when it cannot go on (the cluster was deleted or moved away, or
        // it does not become available), the management plane keeps running.
        tokio::select! {
            result = demo => if let Err(error) = result {
                eprintln!("warning: the demo view stopped: {error:#}; the management plane keeps running (Ctrl-C stops it)");
            },
            _ = crate::shutdown_signal() => {
                let _ = stop.send(true);
                let _ = controllers.await;
                server.shutdown().await;
                return Ok(());
            }
        }
        println!(
            "Try: corral describe cluster demo, corral get kubeconfig demo, corral scale md/demo-md-0 --replicas 5"
        );
    }
    crate::shutdown_signal().await;
    tracing::info!("Shutting down");
    let _ = stop.send(true);
    let _ = controllers.await;
    server.shutdown().await;
    Ok(())
}

/// `path` from the root, so that the printed export line works from any directory.
fn absolute(path: &Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Creates the demo cluster in `default`: the embedded in-memory template, 3 control plane
/// machines and 3 workers. When it exists already (a restart on the same data dir) it is left
/// as it is: applying the template again would undo what was done to it since (a scale, an
/// upgrade).
pub async fn create_demo(connection: &corral_cli::Connection, name: &str) -> anyhow::Result<()> {
    let clusters: kube::Api<corral_api::Cluster> =
        kube::Api::namespaced(connection.client.clone(), "default");
    let existing = clusters
        .get_opt(name)
        .await
        .map_err(|e| connection.fail(format!("reading Cluster {name}"), e))?;
    if existing.is_some() {
        println!("\nThe demo cluster {name} exists already; resuming it:");
        return Ok(());
    }
    let request = GenerateCluster {
        cluster_name: name.into(),
        source: Source::Embedded {
            infrastructure: Some(corral_infra_inmemory::api::PROVIDER_NAME.into()),
            flavor: DEMO_FLAVOR.map(String::from),
        },
        target_namespace: Some("default".into()),
        kubernetes_version: Some(DEMO_KUBERNETES_VERSION.into()),
        control_plane_machine_count: 3,
        worker_machine_count: 3,
        environment: Default::default(),
    };
    let yaml = generate::generate_cluster(&request)?;
    corral_cli::apply::apply_yaml(connection, &yaml)
        .await
        .context("creating the demo cluster")?;
    println!(
        "\nCreated the demo cluster {name} (a KubeadmControlPlane of 3 machines, 3 workers, in-memory):"
    );
    Ok(())
}

/// Shows the cluster's tree as it changes (redrawn in place on a terminal), until the Cluster
/// is Available and every machine is ready.
pub async fn show_until_available(
    connection: &corral_cli::Connection,
    name: &str,
) -> anyhow::Result<()> {
    let options = DescribeOptions {
        namespace: "default".into(),
        name: name.into(),
        grouping: true,
        ..DescribeOptions::default()
    };
    let live = shows_progress();
    let colour = colour();
    // The rows are wider than most terminals; wrapped, they would take more screen lines than
    // the redraw moves up over. Cut at the edge instead while the view is live, and restore
    // wrapping however the view ends (done, failed, or dropped by Ctrl-C).
    let _no_wrap = live.then(NoWrap::start);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    let mut shown_lines = 0;
    let mut last = String::new();
    loop {
        let root = describe_cluster(connection, &options).await?;
        let available = root
            .condition("Available")
            .is_some_and(|c| c.status == "True");
        let all_ready = root
            .replicas
            .as_deref()
            .and_then(|r| r.split_once('/'))
            .is_some_and(|(_, desired)| root.ready.as_deref() == Some(desired));
        let now = k8s_openapi::jiff::Timestamp::now();
        // Compare without ages, which change every second.
        let text = tree::render(&root, now, false);
        let state: String = text.lines().map(strip_since).collect();
        if live {
            let rendered = tree::render(&root, now, colour);
            print!("{}", redraw(shown_lines, &rendered));
            shown_lines = rendered.lines().count();
        } else if state != last {
            println!("{text}");
        }
        let _ = std::io::stdout().flush();
        last = state;
        if available && all_ready {
            println!("Cluster {name} is available.");
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!(
                "the demo cluster is not available after 5 minutes; see `corral describe cluster {name} --show-conditions all`"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What replaces a live view of `shown_lines` lines (none the first time) with `rendered`:
/// cursor up over the old view, clear to the end of the screen, the new view.
fn redraw(shown_lines: usize, rendered: &str) -> String {
    if shown_lines == 0 {
        rendered.to_string()
    } else {
        format!("\x1b[{shown_lines}A\x1b[J{rendered}")
    }
}

/// Turns the terminal's line wrapping off (DECAWM) until dropped.
struct NoWrap;

impl NoWrap {
    fn start() -> NoWrap {
        print!("\x1b[?7l");
        NoWrap
    }
}

impl Drop for NoWrap {
    fn drop(&mut self) {
        print!("\x1b[?7h");
        let _ = std::io::stdout().flush();
    }
}

/// A row without its SINCE column's value, for telling whether anything but time changed.
fn strip_since(line: &str) -> String {
    line.split_whitespace()
        .filter(|word| !is_age(word))
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_age(word: &str) -> bool {
    !word.is_empty()
        && word.chars().next().is_some_and(|c| c.is_ascii_digit())
        && word
            .chars()
            .all(|c| c.is_ascii_digit() || "smhdy".contains(c))
        && word.chars().any(|c| "smhdy".contains(c))
}

#[cfg(test)]
mod tests {
    use super::{is_age, redraw, strip_since};

    #[test]
    fn a_redraw_moves_up_over_the_lines_shown_and_clears_them() {
        assert_eq!(redraw(0, "a\nb\n"), "a\nb\n");
        assert_eq!(redraw(2, "c\n"), "\x1b[2A\x1b[Jc\n");
    }

    #[test]
    fn the_since_column_does_not_count_as_a_change() {
        assert!(is_age("5s") && is_age("4m38s") && is_age("2d"));
        assert!(!is_age("3/3") && !is_age("v1.32.0") && !is_age("s"));
        assert_eq!(
            strip_since("Machine/m 1 Ready: True Ready 4m38s"),
            strip_since("Machine/m 1 Ready: True Ready 5m")
        );
    }
}
