//! `corral up`: the whole management plane in one process — the API server, the Cluster API
//! CRDs and provider inventory, the core controllers and the built-in providers — with a
//! progress view while it starts and, with `--demo`, a demo cluster whose tree is shown until
//! it is available.
//!
//! Everything lives in the data directory (the store, the admin kubeconfig and the log), so a
//! restart on the same directory resumes: the objects are there and the controllers pick them
//! up. The screen is for people: the log goes to the data directory unless `--log-to-stderr`.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use corral_cli::describe::DescribeOptions;
use corral_cli::describe::watch::{self, View};
use corral_cli::generate::{self, GenerateCluster, Source};

/// The demo cluster's template flavor: `None`, the default, has a KubeadmControlPlane (and
/// KubeadmConfigs from corral-kubeadm's bootstrap provider); `Some("machine-based")` would
/// make the control plane plain Machines.
const DEMO_FLAVOR: Option<&str> = None;

/// The demo cluster's Kubernetes version.
const DEMO_KUBERNETES_VERSION: &str = "v1.32.0";

/// How long the demo view waits for the demo cluster to become available.
const DEMO_DEADLINE: Duration = Duration::from_secs(300);

/// Where the demo cluster's machines run (`corral up --infrastructure`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Infrastructure {
    /// The in-memory provider's simulated machines.
    InMemory,
    /// The local provider's real machines on this host.
    Local,
}

/// The ProviderPlugin name and subnet pool of the local provider `corral up` serves.
const LOCAL_PLUGIN: &str = corral_cli::generate::LOCAL;
const LOCAL_SUBNET_POOL: u8 = 77;

/// Whether standard output is a terminal that takes the live view (and colours).
fn shows_progress() -> bool {
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
/// election: this process owns its store, whose lock `main` holds) until SIGINT or SIGTERM,
/// then stops them and the server and says where everything is kept.
pub async fn run(args: crate::UpArgs) -> anyhow::Result<()> {
    let local = match args.infrastructure {
        Infrastructure::Local => Some(local_prerequisites(&args)?),
        Infrastructure::InMemory => None,
    };
    // From here on Ctrl-C and SIGTERM stop the process with its one line, also while it is
    // starting.
    let mut stop_signal = std::pin::pin!(crate::shutdown_signal());
    let plane = tokio::select! {
        plane = start(&args, local) => plane?,
        _ = &mut stop_signal => {
            say_stopped(&args);
            return Ok(());
        }
    };
    if args.demo {
        // The demo is a view: when it cannot go on (the cluster was deleted or moved away, or
        // it does not become available), the management plane keeps running.
        let demo = show_demo(
            &plane.connection,
            "demo",
            args.infrastructure,
            plane.log.as_deref(),
        );
        let signalled = tokio::select! {
            result = demo => {
                if let Err(error) = result {
                    eprintln!("warning: the demo view stopped: {error:#}; the management plane keeps running (Ctrl-C stops it)");
                }
                false
            }
            _ = &mut stop_signal => true,
        };
        if !signalled {
            stop_signal.await;
        }
    } else {
        stop_signal.await;
    }
    tracing::info!("Shutting down");
    let _ = plane.stop.send(true);
    let _ = plane.controllers.await;
    plane.server.shutdown().await;
    say_stopped(&args);
    Ok(())
}

/// The running management plane of `corral up`.
struct Plane {
    server: corral_apiserver::Server,
    connection: corral_cli::Connection,
    /// Tells the controllers to stop.
    stop: tokio::sync::watch::Sender<bool>,
    controllers: tokio::task::JoinHandle<()>,
    /// The log file, unless the log goes to standard error.
    log: Option<std::path::PathBuf>,
    /// The local provider's server, with `--infrastructure local`; its machines outlive
    /// this process (a restart finds them again).
    _local_provider: Option<tokio_util::task::AbortOnDropHandle<()>>,
}

/// What the local provider needs, checked before anything starts: one line saying what is
/// missing.
#[allow(unsafe_code)]
fn local_prerequisites(
    args: &crate::UpArgs,
) -> anyhow::Result<corral_provider_local::plugin::Programs> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        anyhow::bail!(
            "--infrastructure local runs machines as network namespaces, which needs root: run as root, or leave out --infrastructure for simulated machines"
        );
    }
    let on_path = |program: &str| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
    };
    if on_path("ip").is_none() {
        anyhow::bail!(
            "--infrastructure local needs iproute2's `ip` on PATH (apt-get install iproute2)"
        );
    }
    let etcd = on_path("etcd").ok_or_else(|| {
        anyhow::anyhow!(
            "--infrastructure local needs etcd on PATH for control plane machines (apt-get install etcd-server)"
        )
    })?;
    let _ = &args.server.data_dir;
    Ok(corral_provider_local::plugin::Programs {
        corral: std::env::current_exe().context("cannot find the corral binary itself")?,
        etcd,
        node_monitor_grace_period: None,
        node_lease_duration_seconds: None,
    })
}

/// Serves the local provider on a loopback port and registers it as the ProviderPlugin
/// `local`; the task serves until dropped.
async fn start_local_provider(
    args: &crate::UpArgs,
    connection: &corral_cli::Connection,
    programs: corral_provider_local::plugin::Programs,
) -> anyhow::Result<(tokio_util::task::AbortOnDropHandle<()>, String)> {
    use corral_provider_local::{host::Host, plugin};
    let state = args.server.data_dir.join("local");
    let host = Host::new(&state, LOCAL_SUBNET_POOL)
        .context("the local provider cannot hold machines here")?;
    let provider = std::sync::Arc::new(plugin::LocalProvider::new(host, programs));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .context("cannot listen for the local provider")?;
    let endpoint = format!("grpc://{}", listener.local_addr()?);
    let server = tokio::spawn(async move {
        if let Err(error) =
            corral_provider_sdk::server::serve_grpc(provider, listener, std::future::pending())
                .await
        {
            tracing::error!(%error, "The local provider stopped serving");
        }
    });
    let plugin = format!(
        "apiVersion: corral.dev/v1alpha1\nkind: ProviderPlugin\nmetadata:\n  name: {LOCAL_PLUGIN}\nspec:\n  endpoint: {endpoint}\n"
    );
    corral_cli::apply::apply_yaml(connection, &plugin)
        .await
        .context("registering the local provider")?;
    Ok((tokio_util::task::AbortOnDropHandle::new(server), endpoint))
}

/// Starts the management plane, one checklist line per step.
async fn start(
    args: &crate::UpArgs,
    local: Option<corral_provider_local::plugin::Programs>,
) -> anyhow::Result<Plane> {
    let progress = Progress { colour: colour() };
    let server = crate::start_apiserver(
        &args.server,
        crate::security::DefaultEncryption::Secrets,
        &mut |step, detail| progress.done(step, detail),
    )
    .await?;
    // This process's own work (installing the providers, the demo view) goes in-process too,
    // as the controllers' (below), as the admin: it installs CRDs and ClusterRoles.
    let admin = corral_apiserver::UserInfo::authenticated(
        crate::security::ADMIN_USER,
        "",
        vec![corral_apiserver::auth::MASTERS_GROUP.into()],
    );
    let connection = corral_cli::Connection {
        client: kube::Client::new(server.in_process_as(admin), "default"),
        server: server.url(),
        default_namespace: "default".into(),
    };
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
    // watches without the loopback socket and HTTP framing on both ends, as
    // `system:corral-controllers` with the least-privilege ClusterRoles `init` bound to it.
    let in_process = kube::Client::new(server.in_process(), "default");
    // The plugin kinds' admission webhook, on loopback: only this process's server calls it.
    corral_cli::components::start_plugin_webhook(
        in_process.clone(),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        "127.0.0.1",
        shutdown.clone(),
    )
    .await?;
    let controllers = corral_cli::components::start_controllers(in_process, cloud, shutdown);
    progress.done(
        "Controllers started",
        "core, kubeadm bootstrap and control plane, in-memory infrastructure",
    );
    let local_provider = match local {
        Some(programs) => {
            let (server, endpoint) = start_local_provider(args, &connection, programs).await?;
            progress.done(
                "Local provider",
                format!(
                    "{endpoint}, machines under {}",
                    args.server.data_dir.join("local").display()
                ),
            );
            Some(server)
        }
        None => None,
    };
    let log = (!args.log_to_stderr).then(|| args.server.data_dir.join(crate::logging::LOG_FILE));
    if let Some(log) = &log {
        progress.done("Logging to", log.display());
    }
    let kubeconfig = absolute(&args.server.data_dir.join("kubeconfig"));
    println!(
        "\nCorral is up. To use it:\n  export KUBECONFIG={}",
        kubeconfig.display()
    );
    let _ = std::io::stdout().flush();
    Ok(Plane {
        server,
        connection,
        stop,
        controllers,
        log,
        _local_provider: local_provider,
    })
}

/// The one line at the end: where everything is kept and how to resume. On a terminal it
/// starts over the `^C` the terminal echoed.
fn say_stopped(args: &crate::UpArgs) {
    let clear = if shows_progress() { "\r\x1b[K" } else { "" };
    crate::say_when_stopped(format!(
        "{clear}{}",
        crate::stopped_line(&args.server, "up")
    ));
}

/// Creates the demo cluster (or resumes it) and shows it until it is available, then what to
/// try next. Warnings and errors logged meanwhile are counted under the tree, with the log
/// file to read (`log`, when the log goes to a file).
async fn show_demo(
    connection: &corral_cli::Connection,
    name: &str,
    infrastructure: Infrastructure,
    log: Option<&Path>,
) -> anyhow::Result<()> {
    create_demo(connection, name, infrastructure).await?;
    let options = DescribeOptions {
        namespace: "default".into(),
        name: name.into(),
        grouping: true,
        ..DescribeOptions::default()
    };
    let problems = || log.and_then(crate::logging::problems_seen);
    // Dropped however this ends (done, failed, or Ctrl-C), which restores the terminal. With
    // the log streamed to the terminal too (`--log-to-stderr`), its lines would break a
    // drawing redrawn in place: the view is then one line per change as well.
    let log_on_terminal = log.is_none() && std::io::stderr().is_terminal();
    let mut view = if shows_progress() && !log_on_terminal {
        View::terminal(std::io::stdout(), colour())
    } else {
        View::lines(std::io::stdout())
    };
    tokio::time::timeout(
        DEMO_DEADLINE,
        watch::follow(connection, &options, &mut view, &problems, true),
    )
    .await
    .map_err(|_| {
        anyhow::anyhow!(
            "the demo cluster is not available after {} minutes; see `corral describe cluster {name} --show-conditions all`",
            DEMO_DEADLINE.as_secs() / 60
        )
    })??;
    if view.is_terminal() {
        let _ = view.say(&format!("Cluster {name} is available."));
    } else if let Some(problems) = problems() {
        // On a terminal the last drawing showed them.
        let _ = view.say(&problems);
    }
    drop(view);
    println!(
        "Try:\n  corral describe cluster {name} --watch\n  corral get kubeconfig {name}\n  corral scale md/{name}-md-0 --replicas 5"
    );
    let _ = std::io::stdout().flush();
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
pub async fn create_demo(
    connection: &corral_cli::Connection,
    name: &str,
    infrastructure: Infrastructure,
) -> anyhow::Result<()> {
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
    let (provider, workers, described) = match infrastructure {
        Infrastructure::InMemory => (
            corral_infra_inmemory::api::PROVIDER_NAME,
            3,
            "3 workers, in-memory",
        ),
        Infrastructure::Local => (LOCAL_PLUGIN, 2, "2 workers, real machines on this host"),
    };
    let request = GenerateCluster {
        cluster_name: name.into(),
        source: Source::Embedded {
            infrastructure: Some(provider.into()),
            flavor: DEMO_FLAVOR.map(String::from),
        },
        target_namespace: Some("default".into()),
        kubernetes_version: Some(DEMO_KUBERNETES_VERSION.into()),
        control_plane_machine_count: 3,
        worker_machine_count: workers,
        environment: Default::default(),
    };
    let yaml = generate::generate_cluster(&request)?;
    corral_cli::apply::apply_yaml(connection, &yaml)
        .await
        .context("creating the demo cluster")?;
    println!(
        "\nCreated the demo cluster {name} (a KubeadmControlPlane of 3 machines, {described}):"
    );
    Ok(())
}
