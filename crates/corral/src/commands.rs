//! The client commands: flags and environment in, one call into `corral_cli` out.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory;
use corral_cli::{Connection, KubeconfigSource};
use futures::FutureExt as _;

/// `--kubeconfig`, shared by every command that talks to a management plane.
#[derive(clap::Args)]
pub struct KubeconfigArgs {
    /// The kubeconfig to use; else `$KUBECONFIG`, else `~/.kube/config` (as kubectl).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The context to use in the kubeconfig (default: its current context), as clusterctl.
    #[arg(long, global = true)]
    pub kubeconfig_context: Option<String>,
}

/// The flags clusterctl takes anywhere on the command line (`corral --kubeconfig F describe
/// cluster x`, `corral describe --kubeconfig F cluster x`): the kubeconfig and its context,
/// which a command's own flags override, and the log verbosity. Being global, they show in
/// the help of every command; `main` refuses them for a command that uses no kubeconfig.
#[derive(clap::Args)]
pub struct GlobalArgs {
    /// For the commands that talk to a management plane: the kubeconfig to use; else
    /// `$KUBECONFIG`, else `~/.kube/config` (as kubectl).
    #[arg(long, value_name = "FILE", global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// For the commands that talk to a management plane: the context to use in the kubeconfig
    /// (default: its current context), as clusterctl.
    #[arg(long, value_name = "CONTEXT", global = true)]
    pub kubeconfig_context: Option<String>,
    /// Log verbosity, as clusterctl's `-v`: 0 warnings only for the client commands, 1 to 4
    /// also what they do, 5 and more debug; `RUST_LOG` overrides it.
    #[arg(short = 'v', long = "v", value_name = "LEVEL", global = true)]
    pub verbosity: Option<u8>,
}

/// The kubeconfig and context given before the command, set once by `main` before any
/// command runs; a command's own `--kubeconfig` wins over it.
static GLOBAL_KUBECONFIG: std::sync::OnceLock<(Option<PathBuf>, Option<String>)> =
    std::sync::OnceLock::new();

/// Records the kubeconfig flags given before the command.
pub fn set_global_kubeconfig(args: &GlobalArgs) {
    let _ = GLOBAL_KUBECONFIG.set((args.kubeconfig.clone(), args.kubeconfig_context.clone()));
}

impl KubeconfigArgs {
    /// `--kubeconfig`, given after the command or else before it.
    pub fn path(&self) -> Option<PathBuf> {
        self.kubeconfig
            .clone()
            .or_else(|| GLOBAL_KUBECONFIG.get().and_then(|(path, _)| path.clone()))
    }

    /// `--kubeconfig-context`, given after the command or else before it.
    pub fn context(&self) -> Option<String> {
        self.kubeconfig_context.clone().or_else(|| {
            GLOBAL_KUBECONFIG
                .get()
                .and_then(|(_, context)| context.clone())
        })
    }

    pub fn source(&self) -> KubeconfigSource {
        KubeconfigSource {
            flag: self.path(),
            env: std::env::var_os("KUBECONFIG"),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    pub async fn connect(&self) -> Result<Connection, corral_cli::Error> {
        Connection::open_context(&self.source(), self.context().as_deref()).await
    }
}

#[derive(clap::Args)]
pub struct InitArgs {
    #[command(flatten)]
    kubeconfig: KubeconfigArgs,
}

#[derive(clap::Args)]
pub struct KubeconfigCommandArgs {
    #[command(flatten)]
    kubeconfig: KubeconfigArgs,
    /// The component whose ServiceAccount the kubeconfig authenticates as: `controllers` (what
    /// `corral controllers` runs: corral-system/corral-controllers) or a provider's label
    /// (`cluster-api`, `bootstrap-kubeadm`, `control-plane-kubeadm`, `infrastructure-in-memory`,
    /// `infrastructure-plugin`).
    component: String,
    /// Where to write the kubeconfig; its token goes to `FILE.token` (both mode 0600).
    #[arg(long, value_name = "FILE")]
    write_to: PathBuf,
    /// How long the token is valid, as `kubectl create token --duration` (the server may
    /// shorten it; Corral's API server allows at most 48h). Run the command again before it
    /// ends: a process using the kubeconfig reads the new token within a minute.
    #[arg(long, default_value = "24h", value_parser = parse_duration)]
    duration: k8s_openapi::jiff::SignedDuration,
}

/// A duration such as `24h`, `1h30m` or `3600s`.
fn parse_duration(text: &str) -> Result<k8s_openapi::jiff::SignedDuration, String> {
    text.parse::<k8s_openapi::jiff::SignedDuration>()
        .map_err(|error| format!("not a duration such as 24h or 90m: {error}"))
}

#[derive(clap::Args)]
pub struct ControllersArgs {
    #[command(flatten)]
    kubeconfig: KubeconfigArgs,
    /// Take part in leader election on the Lease corral-system/corral-controllers, so that of
    /// several replicas only one acts. Without it, this process acts at once.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    leader_elect: bool,
    /// This replica's identity in the election (default: host name, process id and a random
    /// suffix).
    #[arg(long)]
    identity: Option<String>,
    /// Where to serve the admission webhook of the plugin kinds' `spec.config` (HTTPS, with
    /// a certificate issued at start); port 0 picks a free one. Every replica serves it, leader
    /// or not.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:0")]
    webhook_listen: std::net::SocketAddr,
    /// The host name or address the API server reaches the webhook at (registered in the
    /// ValidatingWebhookConfiguration corral-plugin-config); default: the listen address's.
    #[arg(long, value_name = "HOST")]
    webhook_host: Option<String>,
    #[command(flatten)]
    cloud: crate::cloud::CloudFlag,
}

#[derive(clap::Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    what: GenerateCommand,
}

#[derive(clap::Subcommand)]
enum GenerateCommand {
    /// Print a workload cluster's manifests, from an embedded template or `--from FILE`.
    Cluster(GenerateClusterArgs),
}

#[derive(clap::Args)]
struct GenerateClusterArgs {
    /// The cluster's name.
    name: String,
    /// The infrastructure provider whose templates to use: `in-memory`, or
    /// `plugin:<ProviderPlugin name>` for a provider plugin.
    #[arg(short, long, conflicts_with = "from")]
    infrastructure: Option<String>,
    /// The template flavor: the default (a KubeadmControlPlane) or `machine-based` (the
    /// control plane as plain Machines).
    #[arg(short, long, conflicts_with = "from")]
    flavor: Option<String>,
    /// Render this template file instead (`-` for standard input).
    #[arg(long)]
    from: Option<PathBuf>,
    /// The namespace of the cluster's objects (the variable NAMESPACE; default `default`).
    #[arg(short = 'n', long)]
    target_namespace: Option<String>,
    /// The Kubernetes version (the variable KUBERNETES_VERSION), such as v1.32.0.
    #[arg(long)]
    kubernetes_version: Option<String>,
    /// Control plane machines (the variable CONTROL_PLANE_MACHINE_COUNT).
    #[arg(long, default_value_t = 1)]
    control_plane_machine_count: u32,
    /// Worker machines (the variable WORKER_MACHINE_COUNT).
    #[arg(long, default_value_t = 0)]
    worker_machine_count: u32,
    /// List the template's variables instead of rendering it.
    #[arg(long)]
    list_variables: bool,
    /// Write the manifests to this file instead of standard output (as clusterctl).
    #[arg(long, value_name = "FILE")]
    write_to: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct DescribeArgs {
    #[command(subcommand)]
    what: DescribeCommand,
}

#[derive(clap::Subcommand)]
enum DescribeCommand {
    /// Show a cluster's objects as a tree, with their state.
    Cluster(DescribeClusterArgs),
}

#[derive(clap::Args)]
struct DescribeClusterArgs {
    #[command(flatten)]
    kubeconfig: KubeconfigArgs,
    /// The cluster's name.
    name: String,
    /// The cluster's namespace (default: the kubeconfig's, else `default`).
    #[arg(short, long)]
    namespace: Option<String>,
    /// Kinds or Kind/name (comma-separated), or `all`, whose every condition to list.
    #[arg(long, value_delimiter = ',')]
    show_conditions: Vec<String>,
    /// Show the MachineSets between MachineDeployments and their Machines.
    #[arg(long)]
    show_machinesets: bool,
    /// Show the infrastructure and bootstrap templates of the control plane and of each
    /// MachineDeployment.
    #[arg(long)]
    show_templates: bool,
    /// Show the ClusterResourceSets bound to the cluster (nothing when the
    /// addons.cluster.x-k8s.io API is not installed: Corral runs no ClusterResourceSet
    /// controller).
    #[arg(long)]
    show_resourcesets: bool,
    /// Show each Machine's infrastructure and bootstrap objects even when they only repeat
    /// the Machine's state.
    #[arg(long)]
    echo: bool,
    /// Group Machines in the same state into one row.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    grouping: bool,
    /// Do not group Machines (clusterctl's deprecated spelling of `--grouping=false`).
    #[arg(long, hide = true)]
    disable_grouping: bool,
    /// Colour the tree (`--color=false`: never); by default only on a terminal with NO_COLOR
    /// unset.
    #[arg(short, long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    color: Option<bool>,
    /// Print the tree as data instead of a table.
    #[arg(short, long, value_enum, conflicts_with = "watch")]
    output: Option<OutputFormat>,
    /// Keep showing the cluster as it changes, until Ctrl-C: on a terminal the tree redrawn in
    /// place, elsewhere one line per change of its state.
    #[arg(short, long)]
    watch: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum OutputFormat {
    Json,
    Yaml,
}

/// Whether standard output takes colours: a terminal, and NO_COLOR unset.
fn colour_on_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

pub async fn describe(args: DescribeArgs) -> anyhow::Result<()> {
    use corral_cli::describe;
    let DescribeCommand::Cluster(args) = args.what;
    let connection = args.kubeconfig.connect().await?;
    let options = describe::DescribeOptions {
        namespace: args
            .namespace
            .unwrap_or_else(|| connection.default_namespace.clone()),
        name: args.name,
        show_conditions: args.show_conditions,
        show_machine_sets: args.show_machinesets,
        echo: args.echo,
        grouping: args.grouping && !args.disable_grouping,
        show_templates: args.show_templates,
        show_resource_sets: args.show_resourcesets,
    };
    if args.watch {
        return watch_cluster(&connection, &options, args.color).await;
    }
    let tree = describe::describe_cluster(&connection, &options).await?;
    match args.output {
        Some(OutputFormat::Json) => println!("{}", serde_json::to_string_pretty(&tree)?),
        Some(OutputFormat::Yaml) => print!("{}", serde_yaml::to_string(&tree)?),
        None => print!(
            "{}",
            describe::tree::render(
                &tree,
                k8s_openapi::jiff::Timestamp::now(),
                args.color.unwrap_or_else(colour_on_stdout)
            )
        ),
    }
    Ok(())
}

/// `describe cluster --watch`: the live view until Ctrl-C (or SIGTERM), which leaves the
/// terminal as it was.
async fn watch_cluster(
    connection: &Connection,
    options: &corral_cli::describe::DescribeOptions,
    colour: Option<bool>,
) -> anyhow::Result<()> {
    use corral_cli::describe::watch::{self, View};
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    let mut view = if stdout.is_terminal() {
        View::terminal(stdout, colour.unwrap_or_else(colour_on_stdout))
    } else {
        View::lines(stdout)
    };
    let follow = watch::follow(connection, options, &mut view, &|| None, false);
    tokio::select! {
        result = follow => result?,
        _ = crate::shutdown_signal() => {}
    }
    Ok(())
}

/// `-n`: the namespace of the object a command names.
#[derive(clap::Args)]
pub struct NamespaceArgs {
    #[command(flatten)]
    kubeconfig: KubeconfigArgs,
    /// The namespace (default: the kubeconfig context's, else `default`).
    #[arg(short, long, global = true)]
    namespace: Option<String>,
}

impl NamespaceArgs {
    async fn connect(&self) -> Result<(Connection, String), corral_cli::Error> {
        let connection = self.kubeconfig.connect().await?;
        let namespace = self
            .namespace
            .clone()
            .unwrap_or_else(|| connection.default_namespace.clone());
        Ok((connection, namespace))
    }
}

#[derive(clap::Args)]
pub struct GetArgs {
    #[command(subcommand)]
    what: GetCommand,
}

#[derive(clap::Subcommand)]
enum GetCommand {
    /// List the clusters.
    Clusters {
        #[command(flatten)]
        target: NamespaceArgs,
        /// In every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
    /// Print a workload cluster's kubeconfig (its `<name>-kubeconfig` Secret).
    Kubeconfig {
        #[command(flatten)]
        target: NamespaceArgs,
        /// The cluster's name.
        name: String,
    },
    /// List the provider inventory.
    Providers {
        #[command(flatten)]
        kubeconfig: KubeconfigArgs,
    },
    /// List the machines provider plugins hold that no PluginMachine claims.
    Orphans {
        #[command(flatten)]
        kubeconfig: KubeconfigArgs,
    },
}

pub async fn get(args: GetArgs) -> anyhow::Result<()> {
    let now = k8s_openapi::jiff::Timestamp::now();
    match args.what {
        GetCommand::Clusters {
            target,
            all_namespaces,
        } => {
            let (connection, namespace) = target.connect().await?;
            let namespace = (!all_namespaces).then_some(namespace.as_str());
            print!(
                "{}",
                corral_cli::get::clusters(&connection, namespace, now).await?
            );
        }
        GetCommand::Kubeconfig { target, name } => {
            let (connection, namespace) = target.connect().await?;
            print!(
                "{}",
                corral_cli::get::kubeconfig(&connection, &namespace, &name).await?
            );
        }
        GetCommand::Providers { kubeconfig } => {
            let connection = kubeconfig.connect().await?;
            print!("{}", corral_cli::get::providers(&connection, now).await?);
        }
        GetCommand::Orphans { kubeconfig } => {
            let connection = kubeconfig.connect().await?;
            print!("{}", corral_cli::get::orphans(&connection, now).await?);
        }
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    target: NamespaceArgs,
    /// What to scale: md/NAME, ms/NAME or kcp/NAME.
    resource: String,
    /// The number of machines.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(0..))]
    replicas: i32,
}

pub async fn scale(args: ScaleArgs) -> anyhow::Result<()> {
    let resource =
        corral_cli::resource::ResourceRef::parse(&args.resource, corral_cli::scale::KINDS)?;
    let (connection, namespace) = args.target.connect().await?;
    println!(
        "{}",
        corral_cli::scale::scale(&connection, &namespace, &resource, args.replicas).await?
    );
    Ok(())
}

#[derive(clap::Args)]
pub struct RolloutArgs {
    #[command(subcommand)]
    what: RolloutCommand,
}

#[derive(clap::Subcommand)]
enum RolloutCommand {
    /// Replace every machine (sets spec.rollout.after to now).
    Restart(RolloutTarget),
    /// Stop rolling out and scaling.
    Pause(RolloutTarget),
    /// Resume a paused object.
    Resume(RolloutTarget),
    /// Show how far the rollout is.
    Status {
        #[command(flatten)]
        target: RolloutTarget,
        /// Wait until the rollout is complete.
        #[arg(short, long)]
        watch: bool,
        /// How long to wait with --watch, in seconds.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// List a MachineDeployment's revisions.
    History(RolloutTarget),
    /// Roll a MachineDeployment back to an earlier revision.
    Undo {
        #[command(flatten)]
        target: RolloutTarget,
        /// The revision (0: the previous one).
        #[arg(long, default_value_t = 0)]
        to_revision: i64,
    },
}

#[derive(clap::Args)]
struct RolloutTarget {
    #[command(flatten)]
    target: NamespaceArgs,
    /// md/NAME or kcp/NAME.
    resource: String,
}

pub async fn rollout(args: RolloutArgs) -> anyhow::Result<()> {
    use corral_cli::resource::ResourceRef;
    use corral_cli::rollout;
    let now = k8s_openapi::jiff::Timestamp::now();
    let parse = |target: &RolloutTarget, kinds| ResourceRef::parse(&target.resource, kinds);
    let line = match &args.what {
        RolloutCommand::Restart(target) => {
            let resource = parse(target, rollout::KINDS)?;
            let (connection, namespace) = target.target.connect().await?;
            rollout::restart(&connection, &namespace, &resource, now).await?
        }
        RolloutCommand::Pause(target) | RolloutCommand::Resume(target) => {
            let paused = matches!(args.what, RolloutCommand::Pause(_));
            let resource = parse(target, rollout::KINDS)?;
            let (connection, namespace) = target.target.connect().await?;
            rollout::set_paused(&connection, &namespace, &resource, paused).await?
        }
        RolloutCommand::Status {
            target,
            watch,
            timeout,
        } => {
            let resource = parse(target, rollout::KINDS)?;
            let (connection, namespace) = target.target.connect().await?;
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(*timeout);
            let mut last = String::new();
            loop {
                let (message, done) = rollout::status(&connection, &namespace, &resource).await?;
                if done || !watch {
                    break message;
                }
                if message != last {
                    println!("{message}");
                    last = message;
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(corral_cli::Error::Timeout(format!(
                        "the rollout did not finish within {timeout}s: {last}"
                    ))
                    .into());
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        }
        RolloutCommand::History(target) => {
            let resource = parse(target, rollout::HISTORY_KINDS)?;
            let (connection, namespace) = target.target.connect().await?;
            let table = rollout::history(&connection, &namespace, &resource).await?;
            print!("{table}");
            return Ok(());
        }
        RolloutCommand::Undo {
            target,
            to_revision,
        } => {
            let resource = parse(target, rollout::HISTORY_KINDS)?;
            let (connection, namespace) = target.target.connect().await?;
            rollout::undo(&connection, &namespace, &resource, *to_revision).await?
        }
    };
    println!("{line}");
    Ok(())
}

#[derive(clap::Args)]
pub struct DeleteArgs {
    #[command(subcommand)]
    what: DeleteCommand,
}

#[derive(clap::Subcommand)]
enum DeleteCommand {
    /// Delete a cluster and everything that belongs to it.
    Cluster {
        #[command(flatten)]
        target: NamespaceArgs,
        /// The cluster's name.
        name: String,
        /// Wait until the cluster and its machines are gone.
        #[arg(long)]
        wait: bool,
        /// How long to wait with --wait, in seconds.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
}

pub async fn delete(args: DeleteArgs) -> anyhow::Result<()> {
    let DeleteCommand::Cluster {
        target,
        name,
        wait,
        timeout,
    } = args.what;
    let (connection, namespace) = target.connect().await?;
    println!(
        "{}",
        corral_cli::delete::delete_cluster(&connection, &namespace, &name).await?
    );
    if wait {
        corral_cli::delete::wait_until_deleted(
            &connection,
            &namespace,
            &name,
            std::time::Duration::from_secs(timeout),
            |left| {
                let machines = if left == 1 { "machine" } else { "machines" };
                println!("Waiting for cluster {name} to be deleted: {left} {machines} left")
            },
        )
        .await?;
        println!("Cluster {name} is gone");
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct CompletionArgs {
    /// The shell.
    shell: clap_complete::Shell,
}

/// The exit code of a failed command: 2 for a usage error found after parsing, else 1.
pub fn exit_code(error: &anyhow::Error) -> ExitCode {
    match error.downcast_ref::<corral_cli::Error>() {
        Some(corral_cli::Error::Usage(_)) => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    }
}

pub async fn init(args: InitArgs) -> anyhow::Result<()> {
    let connection = args.kubeconfig.connect().await?;
    let report = corral_cli::components::init(&connection).await?;
    println!(
        "Installed {} CRDs into {}",
        report.crds.len(),
        connection.server
    );
    for provider in &report.providers {
        println!("Provider {provider} {}", corral_cli::VERSION);
    }
    println!(
        "Your management plane is ready; run the controllers with `corral controllers` \
         (with the kubeconfig `corral kubeconfig controllers --write-to FILE` writes, to run them \
         as the ServiceAccount corral-system/corral-controllers)."
    );
    Ok(())
}

pub async fn kubeconfig(args: KubeconfigCommandArgs) -> anyhow::Result<()> {
    let expires = corral_cli::roles::write_kubeconfig(
        &args.kubeconfig.source(),
        args.kubeconfig.context().as_deref(),
        &args.component,
        args.duration.as_secs(),
        &args.write_to,
    )
    .await?;
    println!(
        "Wrote {} for {} (its token expires at {expires})",
        args.write_to.display(),
        args.component
    );
    Ok(())
}

pub async fn controllers(args: ControllersArgs) -> anyhow::Result<()> {
    let connection = args.kubeconfig.connect().await?;
    corral_cli::components::check_installed(&connection).await?;
    let cloud = args.cloud.open().await?;
    let client = connection.client.clone();
    let webhook_host = args
        .webhook_host
        .clone()
        .unwrap_or_else(|| args.webhook_listen.ip().to_string());
    let url = corral_cli::components::start_plugin_webhook(
        client.clone(),
        args.webhook_listen,
        &webhook_host,
        crate::shutdown_signal(),
    )
    .await?;
    eprintln!("Serving the plugin admission webhook at {url}");
    if !args.leader_elect {
        let shutdown = crate::shutdown_signal().boxed().shared();
        corral_cli::components::run_controllers(client, cloud, shutdown).await?;
        return Ok(());
    }
    let identity = args.identity.unwrap_or_else(default_identity);
    let election = corral_cli::leader::LeaderElection::controllers(identity.clone());
    eprintln!(
        "Waiting to lead as {identity} (lease {}/{})",
        election.namespace, election.name
    );
    corral_cli::leader::run_as_leader(
        &connection,
        &election,
        crate::shutdown_signal(),
        |holder| eprintln!("Standing by: {holder} is the leader"),
        move |lost| async move {
            eprintln!("Leading: running the controllers");
            let shutdown = lost.shared();
            if let Err(error) =
                corral_cli::components::run_controllers(client, cloud, shutdown).await
            {
                tracing::error!(error = %error, "The controllers stopped");
            }
        },
    )
    .await?;
    Ok(())
}

/// `<host>_<pid>_<nanoseconds>`: unique enough among replicas, readable in the Lease.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "corral".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{host}_{}_{nanos:08x}", std::process::id())
}

pub fn generate(args: GenerateArgs) -> anyhow::Result<()> {
    use corral_cli::generate;
    let GenerateCommand::Cluster(args) = args.what;
    let source = match &args.from {
        Some(path) => {
            let text = if path.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).map_err(|e| {
                    anyhow::anyhow!("cannot read the template from standard input: {e}")
                })?
            } else {
                std::fs::read_to_string(path).map_err(|e| {
                    anyhow::anyhow!("cannot read the template {}: {e}", path.display())
                })?
            };
            generate::Source::Text {
                name: path.display().to_string(),
                text,
            }
        }
        None => generate::Source::Embedded {
            infrastructure: args.infrastructure.clone(),
            flavor: args.flavor.clone(),
        },
    };
    if args.list_variables {
        let variables = generate::list_variables(&source)?;
        print!("{}", generate::render_variables(&variables));
        return Ok(());
    }
    let request = generate::GenerateCluster {
        cluster_name: args.name,
        source,
        target_namespace: args.target_namespace,
        kubernetes_version: args.kubernetes_version,
        control_plane_machine_count: args.control_plane_machine_count,
        worker_machine_count: args.worker_machine_count,
        environment: std::env::vars().collect(),
    };
    let manifests = generate::generate_cluster(&request)?;
    match &args.write_to {
        Some(path) => std::fs::write(path, manifests).map_err(|e| {
            anyhow::anyhow!("cannot write the manifests to {}: {e}", path.display())
        })?,
        None => print!("{manifests}"),
    }
    Ok(())
}

pub fn version() -> anyhow::Result<()> {
    println!(
        "corral {} (cluster.x-k8s.io/{}, clusterctl.cluster.x-k8s.io/{})",
        corral_cli::VERSION,
        corral_api::VERSION,
        corral_api::clusterctl::VERSION
    );
    Ok(())
}

pub fn completion<C: CommandFactory>(args: CompletionArgs) -> anyhow::Result<()> {
    let mut command = C::command();
    clap_complete::generate(args.shell, &mut command, "corral", &mut std::io::stdout());
    Ok(())
}
