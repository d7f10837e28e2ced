//! `corral`: the management plane and the command line in one binary.
//!
//! Only this crate parses flags, reads the environment and installs the tracing subscriber;
//! the libraries take explicit configuration.
//!
//! # Map of the crate
//!
//! The binary. Parses flags, reads the environment, installs the tracing subscriber, opens the
//! store, writes the admin kubeconfig, and shuts down on SIGINT/SIGTERM. `security.rs` turns the
//! TLS and authentication flags and the data directory's CA (`<data-dir>/pki/`) into the server's
//! `TlsConfig` and `AuthenticationConfig` and the admin kubeconfig's client certificate.
//! `commands.rs` maps the client commands' flags onto `corral_cli` calls and its errors onto exit
//! codes (2 for usage). `up.rs` is the one-process management plane (API server, `corral init`'s
//! install, the controllers) with its start-up progress view, the `--demo` cluster from the
//! embedded template shown through `corral_cli::describe::watch`, and the line that says where
//! everything is kept when a signal stops it. `datadir_lock.rs` makes a data directory one
//! process's: `corral up` and `corral apiserver` hold a kernel lock (`flock`) on `corral.lock` for
//! their life, with their pid and URL written in it for the one-line refusal a second process
//! prints; the lock goes with the process, even on kill -9. `logging.rs` installs the subscriber:
//! `corral up` logs to `<data-dir>/corral.log` through a size-rotating writer (`--log-to-stderr`
//! streams it), everything else to standard error, and warnings and errors are counted for the
//! progress view. `cloud.rs` is `corral cloud` (the simulated cloud in its own process) and the
//! `--cloud URL` flag of `up` and `controllers`. `move_command.rs` parses `corral move` for
//! `corral_cli::mover`, clusterctl's move: preflight, pause, the object graph and its order by
//! owner depth (`mover/graph.rs`), create at the target with owner uids rewritten and status
//! restored, delete at the source with finalizers removed first, unpause; a failure midway prints
//! what is where and the `--resume` / `--rollback` commands. `--to-directory` writes the graph to
//! one file per object and `--from-directory` creates it elsewhere (`mover/directory.rs`).
//! `main.rs` also takes `--kubeconfig`, `--kubeconfig-context` and `-v` anywhere on the command
//! line, as clusterctl, and sets mimalloc as the global allocator (default feature `mimalloc`;
//! `corral-bench` does the same, so benchmarks measure what ships). `tests/it` runs the built
//! binary against kubectl, the Python client, and kill -9, moves a cluster between two `corral up`
//! sharing one `corral cloud` (`move_clusters.rs`), and drives the CLI end to end (`cli.rs`: the
//! commands, their errors, a restart of `corral up`, two `corral controllers` replicas), and
//! `first_run.rs` what a person sees of `corral up --demo` on a pseudo-terminal (util-linux
//! `script`) and through a pipe, the data directory's lock and `describe --watch`.
//! `local_cluster.rs` runs a cluster on the local provider (`corral up`, `corral provider local`, a
//! generated cluster; its workload API sampled through the endpoint, its etcd through the cluster's
//! CA, the host checked for leaks after deletion) for `local_provider.rs` and `local_drills.rs`,
//! issue 26's control plane drills: a machine killed, an upgrade, and `corral up` killed twice
//! mid-rollout (root needed).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand, ValueEnum};
use corral_apiserver::{Server, ServerConfig};
use corral_store::DynStore;

mod cloud;
mod commands;
mod datadir_lock;
mod logging;
mod move_command;
mod node;
mod provider;
mod security;
mod up;

/// mimalloc instead of glibc malloc: the management plane allocates and frees a great deal
/// (JSON, watch events, reflector caches); BENCHMARKS.md has the comparison.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "corral", version, about = "Cluster API, in Rust")]
struct Cli {
    #[command(flatten)]
    global: commands::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the whole management plane: API server, Cluster API CRDs, controllers and the
    /// in-memory infrastructure provider.
    Up(UpArgs),
    /// Run the Kubernetes-compatible API server only.
    Apiserver(ApiserverArgs),
    /// Install the Cluster API CRDs and the provider inventory into a management plane
    /// (any Kubernetes-compatible API server).
    Init(commands::InitArgs),
    /// Run the core controllers and the built-in providers against a management plane, with
    /// leader election so that several replicas never act at once.
    Controllers(commands::ControllersArgs),
    /// Write a kubeconfig that authenticates as a component's ServiceAccount (created by
    /// `init`), for `corral controllers` or a provider run on its own.
    Kubeconfig(commands::KubeconfigCommandArgs),
    /// Generate a workload cluster's manifests from a template.
    Generate(commands::GenerateArgs),
    /// Show a cluster's objects and their state as a tree.
    Describe(commands::DescribeArgs),
    /// List clusters or providers, or print a workload cluster's kubeconfig.
    Get(commands::GetArgs),
    /// Set the number of machines of a MachineDeployment, MachineSet or KubeadmControlPlane.
    Scale(commands::ScaleArgs),
    /// Restart, pause, resume, follow, list or undo the rollouts of a MachineDeployment or
    /// KubeadmControlPlane.
    Rollout(commands::RolloutArgs),
    /// Delete a cluster.
    Delete(commands::DeleteArgs),
    /// Serve the in-memory provider's simulated cloud (VMs and workload clusters) in this
    /// process, for management planes started with `--cloud URL`.
    Cloud(cloud::CloudArgs),
    /// Move the Cluster API objects of a namespace to another management plane (as
    /// `clusterctl move`): pause, copy in dependency order, delete at the source, unpause; or
    /// write them to a directory and create them from it (`--to-directory`, `--from-directory`).
    Move(move_command::MoveArgs),
    /// Run inside a machine of the local provider: do what its bootstrap data asks (files, and
    /// for `kubeadm init` an etcd member and an API server), then keep its Node alive.
    Node(node::NodeArgs),
    /// Run a provider as a plugin: `corral provider local` serves the local provider
    /// (machines as network namespaces on this host).
    Provider(provider::ProviderArgs),
    /// Print the version.
    Version,
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell).
    Completion(commands::CompletionArgs),
}

#[derive(clap::Args)]
struct UpArgs {
    #[command(flatten)]
    server: ApiserverArgs,
    /// Also create a demo cluster (3 control plane machines and 3 workers in-memory; 3 and 2
    /// with `--infrastructure local`) and show its machines until they are Running.
    #[arg(long)]
    demo: bool,
    /// Where the demo cluster's machines run: `in-memory` (simulated), or `local` (real
    /// machines on this host: network namespaces with an etcd member and an API server per
    /// control plane machine; needs root, iproute2 and etcd). With `local`, this process also
    /// serves the local provider and registers it as the ProviderPlugin `local`, so that
    /// `corral generate cluster NAME --infrastructure local` works; its machines are recorded
    /// under `<data-dir>/local`.
    #[arg(long, value_enum, default_value = "in-memory", value_name = "PROVIDER")]
    infrastructure: up::Infrastructure,
    #[command(flatten)]
    cloud: cloud::CloudFlag,
    /// Log to standard error instead of `<data-dir>/corral.log` (on a terminal, the demo
    /// cluster is then shown one line per change instead of as a tree redrawn in place).
    #[arg(long)]
    log_to_stderr: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum StoreKind {
    /// Embedded SQLite under the data directory (the default).
    Sqlite,
    /// An etcd cluster (`--etcd-endpoints`).
    Etcd,
    /// In memory: nothing survives the process. For experiments only.
    Memory,
}

/// How authenticated requests are authorized (kube-apiserver's `--authorization-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum AuthorizationMode {
    /// Role-based access control: Roles, ClusterRoles and their bindings decide (the default).
    #[value(name = "RBAC")]
    Rbac,
    /// Every authenticated request is allowed.
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
}

#[derive(clap::Args)]
struct ApiserverArgs {
    /// Where the store and the admin kubeconfig live (and `corral up`'s log). One process at
    /// a time uses it: a second one fails, naming the first.
    #[arg(long, default_value = ".corral")]
    data_dir: PathBuf,
    /// Address to listen on (HTTPS with authentication; any address, loopback only with
    /// --insecure-http); port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Serve plain HTTP without authentication (every request is trusted), on loopback only.
    #[arg(long, conflicts_with_all = [
        "tls_cert_file", "tls_private_key_file", "client_ca_file", "tls_san",
        "token_auth_file", "anonymous_auth", "authorization_mode", "enable_bootstrap_token_auth",
        "service_account_signing_key_file", "api_audiences", "service_account_jwks_uri",
    ])]
    insecure_http: bool,
    /// Also serve what a workload cluster's API server serves beside the built-ins (apps/v1
    /// Deployments and DaemonSets, for kube-proxy and CoreDNS): for the API servers the node
    /// agent runs on control plane machines.
    #[arg(long)]
    workload_cluster: bool,
    /// Serving certificate (PEM, with its chain), read again when it changes; without it,
    /// the data directory's CA (`<data-dir>/pki/`) issues one and renews it before it expires.
    #[arg(long, value_name = "FILE", requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert-file.
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// More names (DNS names or IP addresses) for the issued serving certificate,
    /// comma-separated; it has the listen address, localhost, 127.0.0.1 and ::1.
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    tls_san: Vec<String>,
    /// CA certificates (PEM) whose client certificates authenticate (CN is the user, each O
    /// a group), besides the data directory's CA.
    #[arg(long, value_name = "FILE")]
    client_ca_file: Option<PathBuf>,
    /// Bearer tokens, as kube-apiserver's static token file: CSV lines
    /// `token,user,uid,"group1,group2"`.
    #[arg(long, value_name = "FILE")]
    token_auth_file: Option<PathBuf>,
    /// Let requests without credentials through as `system:anonymous` (group
    /// `system:unauthenticated`); without it they get 401.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value = "false", default_missing_value = "true", value_name = "BOOL")]
    anonymous_auth: bool,
    /// Let bootstrap tokens authenticate: bearer tokens `<id>.<secret>` of the Secrets
    /// `kube-system/bootstrap-token-<id>` (type `bootstrap.kubernetes.io/token`) that
    /// `kubeadm join` presents, as user `system:bootstrap:<id>` in `system:bootstrappers`.
    #[arg(long)]
    enable_bootstrap_token_auth: bool,
    /// PEM ECDSA P-256 private key that signs ServiceAccount tokens (`kubectl create token`);
    /// without it, `<data-dir>/pki/sa.key`, made on first start.
    #[arg(long, value_name = "FILE")]
    service_account_signing_key_file: Option<PathBuf>,
    /// `iss` of the ServiceAccount tokens issued, and required of those presented.
    #[arg(long, value_name = "URL", default_value = corral_apiserver::auth::service_account::DEFAULT_ISSUER)]
    service_account_issuer: String,
    /// The `jwks_uri` of `/.well-known/openid-configuration` (default: this server's
    /// `/openid/v1/jwks` at the host the request reached).
    #[arg(long, value_name = "URL")]
    service_account_jwks_uri: Option<String>,
    /// Audiences a token must name to authenticate here, comma-separated (the issuer by
    /// default).
    #[arg(long, value_delimiter = ',', value_name = "AUDIENCE")]
    api_audiences: Vec<String>,
    /// How authenticated requests are authorized: RBAC, with kube-apiserver's bootstrap
    /// roles (`system:masters`, the admin kubeconfig's group, may do anything), or
    /// AlwaysAllow.
    #[arg(long, value_enum, default_value = "RBAC", value_name = "MODE")]
    authorization_mode: AuthorizationMode,
    /// kube-apiserver's EncryptionConfiguration (apiserver.config.k8s.io/v1): which resources
    /// are stored encrypted, with which providers (aescbc, aesgcm, secretbox, identity) and
    /// keys. Without it `corral up` encrypts Secrets with a key of its own in
    /// `<data-dir>/encryption-config.yaml`; `corral apiserver` stores everything in clear.
    #[arg(long, value_name = "FILE")]
    encryption_provider_config: Option<PathBuf>,
    /// kube-apiserver's audit Policy (audit.k8s.io/v1): which requests are recorded, at which
    /// level (None, Metadata, Request, RequestResponse). Needs --audit-log-path.
    #[arg(long, value_name = "FILE", requires = "audit_log_path")]
    audit_policy_file: Option<PathBuf>,
    /// Where audit Events are appended as JSON lines (`-` is standard output).
    #[arg(long, value_name = "FILE", requires = "audit_policy_file")]
    audit_log_path: Option<PathBuf>,
    /// Days to keep old audit log files, by the time in their name (0: whatever their age).
    #[arg(long = "audit-log-maxage", default_value_t = 0, value_name = "DAYS")]
    audit_log_maxage: u64,
    /// Old audit log files to keep (0: all, unless --audit-log-maxage removes them).
    #[arg(long = "audit-log-maxbackup", default_value_t = 0, value_name = "N")]
    audit_log_maxbackup: usize,
    /// Megabytes an audit log file grows to before it is rotated to
    /// `<name>-<UTC time>.<ext>` (0: 100, as kube-apiserver's lumberjack).
    #[arg(long = "audit-log-maxsize", default_value_t = 0, value_name = "MB")]
    audit_log_maxsize: u64,
    /// Read-only requests served at once; beyond it 429 TooManyRequests with Retry-After
    /// (watches and system:masters not counted; 0: no limit).
    #[arg(long, default_value_t = 400, value_name = "N")]
    max_requests_inflight: usize,
    /// Mutating requests (create, update, patch, delete) served at once; beyond it 429.
    #[arg(long, default_value_t = 200, value_name = "N")]
    max_mutating_requests_inflight: usize,
    /// Storage backend.
    #[arg(long, value_enum, default_value = "sqlite")]
    store: StoreKind,
    /// etcd client URLs, comma-separated (with `--store etcd`).
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    etcd_endpoints: Vec<String>,
    /// Key prefix under which Corral keeps its data in etcd.
    #[arg(long, default_value = "/corral")]
    etcd_prefix: String,
    /// CA certificate (PEM) that signed the etcd members' serving certificates; with it,
    /// endpoints without a scheme are https://.
    #[arg(long, value_name = "FILE")]
    etcd_cafile: Option<PathBuf>,
    /// Client certificate (PEM) for etcd members that require one (`--client-cert-auth`).
    #[arg(long, value_name = "FILE", requires = "etcd_keyfile")]
    etcd_certfile: Option<PathBuf>,
    /// Private key (PEM) of `--etcd-certfile`.
    #[arg(long, value_name = "FILE", requires = "etcd_certfile")]
    etcd_keyfile: Option<PathBuf>,
}

impl Command {
    /// Whether the command runs a server or controllers, whose progress is logged; the
    /// client commands log only warnings unless `RUST_LOG` says otherwise.
    fn is_long_running(&self) -> bool {
        matches!(
            self,
            Command::Up(_)
                | Command::Apiserver(_)
                | Command::Controllers(_)
                | Command::Cloud(_)
                | Command::Node(_)
                | Command::Provider(_)
        )
    }

    /// The data directory the command serves, which it locks for its whole life.
    fn served_data_dir(&self) -> Option<&Path> {
        match self {
            Command::Up(args) => Some(&args.server.data_dir),
            Command::Apiserver(args) => Some(&args.data_dir),
            _ => None,
        }
    }

    /// Where the command logs: `corral up` into its data directory, unless told otherwise
    /// (its screen is the progress view); everything else to standard error.
    fn log_destination(&self) -> logging::Destination {
        match self {
            Command::Up(args) if !args.log_to_stderr => {
                logging::Destination::File(args.server.data_dir.join(logging::LOG_FILE))
            }
            _ => logging::Destination::Stderr,
        }
    }

    /// The name of a command that does not talk to a management plane through a kubeconfig,
    /// for which `--kubeconfig` given before it means nothing.
    fn without_kubeconfig(&self) -> Option<&'static str> {
        match self {
            Command::Up(_) => Some("up"),
            Command::Apiserver(_) => Some("apiserver"),
            Command::Cloud(_) => Some("cloud"),
            Command::Node(_) => Some("node"),
            Command::Provider(_) => Some("provider"),
            Command::Generate(_) => Some("generate"),
            Command::Version => Some("version"),
            Command::Completion(_) => Some("completion"),
            _ => None,
        }
    }
}

/// The log filter without `RUST_LOG`: what the command shows by default, more with `-v`.
fn default_log_filter(command: &Command, verbosity: u8) -> &'static str {
    match verbosity {
        5.. => "debug",
        1..=4 => "info",
        // kube's client logs every failed request as an ERROR, including each refused
        // connection to a workload cluster whose machines are being deleted; the controllers
        // report what matters themselves (a reconcile that failed, a condition), and a client
        // command reports its failure in one line. `-v` shows them.
        0 if command.is_long_running() => "info,kube_client=off",
        0 => "warn,kube_client=off",
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(name) = cli.command.without_kubeconfig()
        && (cli.global.kubeconfig.is_some() || cli.global.kubeconfig_context.is_some())
    {
        eprintln!(
            "error: `corral {name}` uses no kubeconfig; drop --kubeconfig and --kubeconfig-context"
        );
        return ExitCode::from(2);
    }
    commands::set_global_kubeconfig(&cli.global);
    // The lock first: a second process on a data directory in use writes nothing into it,
    // not even a log line.
    if let Some(data_dir) = cli.command.served_data_dir()
        && let Err(error) = datadir_lock::hold(data_dir)
    {
        eprintln!("error: {error:#}");
        return ExitCode::FAILURE;
    }
    let default_level = default_log_filter(&cli.command, cli.global.verbosity.unwrap_or(0));
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    if let Err(error) = logging::init(cli.command.log_destination(), filter) {
        eprintln!("error: {error:#}");
        return ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Apiserver(args) => apiserver(args).await,
            Command::Up(args) => up::run(args).await,
            Command::Init(args) => commands::init(args).await,
            Command::Controllers(args) => commands::controllers(args).await,
            Command::Kubeconfig(args) => commands::kubeconfig(args).await,
            Command::Cloud(args) => cloud::serve(args).await,
            Command::Node(args) => node::run(args).await,
            Command::Provider(args) => provider::run(args).await,
            Command::Move(args) => move_command::run(args).await,
            Command::Generate(args) => commands::generate(args),
            Command::Describe(args) => commands::describe(args).await,
            Command::Get(args) => commands::get(args).await,
            Command::Scale(args) => commands::scale(args).await,
            Command::Rollout(args) => commands::rollout(args).await,
            Command::Delete(args) => commands::delete(args).await,
            Command::Version => commands::version(),
            Command::Completion(args) => commands::completion::<Cli>(args),
        }
    });
    // Whatever the servers left running ends with the runtime, so that the line saying that
    // everything stopped comes last.
    drop(runtime);
    if let Some(line) = STOPPED.get() {
        println!("{line}");
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            commands::exit_code(&error)
        }
    }
}

async fn open_store(args: &ApiserverArgs) -> anyhow::Result<DynStore> {
    Ok(match args.store {
        StoreKind::Sqlite => open_sqlite(&args.data_dir.join("store.db"))?,
        StoreKind::Etcd => open_etcd(args).await?,
        StoreKind::Memory => Arc::new(corral_store::memory::MemoryStore::new()),
    })
}

fn open_sqlite(path: &Path) -> anyhow::Result<DynStore> {
    let store = corral_store::sqlite::SqliteStore::open(path)
        .with_context(|| format!("cannot open the SQLite store at {}", path.display()))?;
    Ok(Arc::new(store))
}

async fn open_etcd(args: &ApiserverArgs) -> anyhow::Result<DynStore> {
    use corral_store::etcd::{EtcdStore, EtcdTls};
    let tls = EtcdTls::from_files(
        args.etcd_cafile.as_deref(),
        args.etcd_certfile.as_deref(),
        args.etcd_keyfile.as_deref(),
    )?;
    // One line that names the endpoints and what each said; the store waits a bounded time.
    match EtcdStore::connect_with(&args.etcd_endpoints, &args.etcd_prefix, &tls).await {
        Ok(store) => Ok(Arc::new(store)),
        Err(corral_store::Error::Backend { source, .. }) => bail!(
            "cannot reach etcd ({source}); check --etcd-endpoints{}",
            if args.etcd_cafile.is_some() || args.etcd_certfile.is_some() {
                " and the --etcd-cafile/--etcd-certfile/--etcd-keyfile files"
            } else {
                " (https:// members need --etcd-cafile)"
            }
        ),
        Err(e) => bail!("cannot use etcd: {e}"),
    }
}

/// Writes the admin kubeconfig, readable by its owner only (it holds a private key), whole:
/// through a temporary file and a rename, so a reader never sees half of it.
fn write_kubeconfig(data_dir: &Path, contents: &str) -> anyhow::Result<PathBuf> {
    let path = data_dir.join("kubeconfig");
    corral_apiserver::tls::write_private(&path, contents.as_bytes())?;
    Ok(path)
}

async fn apiserver(args: ApiserverArgs) -> anyhow::Result<()> {
    let server = start_apiserver(&args, security::DefaultEncryption::None, &mut |_, _| {}).await?;
    shutdown_signal().await;
    tracing::info!("Shutting down");
    server.shutdown().await;
    say_when_stopped(stopped_line(&args, "apiserver"));
    Ok(())
}

/// The line `main` prints once everything has stopped, set by a server stopped by a signal.
static STOPPED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Has `main` print `line` once the process has stopped everything it ran.
pub(crate) fn say_when_stopped(line: String) {
    let _ = STOPPED.set(line);
}

/// The one line a server prints once it stopped on a signal: where its data is and how to
/// resume it.
pub(crate) fn stopped_line(args: &ApiserverArgs, command: &str) -> String {
    let data_dir_flag = if args.data_dir == Path::new(".corral") {
        String::new()
    } else {
        format!(" --data-dir {}", args.data_dir.display())
    };
    match args.store {
        StoreKind::Sqlite => format!(
            "Stopped; everything is kept in {} — `corral {command}{data_dir_flag}` resumes",
            args.data_dir.display()
        ),
        StoreKind::Etcd => format!(
            "Stopped; everything is kept in etcd at {} — the same `corral {command}` resumes",
            args.etcd_endpoints.join(",")
        ),
        StoreKind::Memory => "Stopped; the store was in memory, so nothing is kept".into(),
    }
}

/// Starts the API server of `args` and writes its kubeconfig; tells `progress` each step done
/// (`corral up` shows them).
pub(crate) async fn start_apiserver(
    args: &ApiserverArgs,
    encryption: security::DefaultEncryption,
    progress: &mut dyn FnMut(&str, String),
) -> anyhow::Result<Server> {
    security::check_listen(args)?;
    std::fs::create_dir_all(&args.data_dir).with_context(|| {
        format!(
            "cannot create the data directory {}",
            args.data_dir.display()
        )
    })?;
    let security = security::prepare(args)?;
    let encryption = security::encryption(args, encryption)?;
    let audit = security::audit(args)?;
    let store = open_store(args).await?;
    progress(
        "Store opened",
        match args.store {
            StoreKind::Sqlite => format!("{} (SQLite)", args.data_dir.join("store.db").display()),
            StoreKind::Etcd => format!("etcd at {}", args.etcd_endpoints.join(",")),
            StoreKind::Memory => "in memory (nothing survives the process)".into(),
        },
    );
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let https = security.tls.is_some();
    let config = ServerConfig {
        tls: security.tls.clone(),
        authentication: security.authentication.clone(),
        rbac: security.authentication.is_some()
            && args.authorization_mode == AuthorizationMode::Rbac,
        admission: corral_cli::components::admission_rules(),
        encryption,
        audit,
        limits: corral_apiserver::limits::LimitsConfig {
            max_requests_inflight: args.max_requests_inflight,
            max_mutating_requests_inflight: args.max_mutating_requests_inflight,
            ..Default::default()
        },
        ..ServerConfig::default()
    };
    let server = Server::start(listener, store, config)
        .await
        .map_err(|e| anyhow::anyhow!("cannot start the API server: {e}"))?;
    if args.workload_cluster {
        for resource in corral_apiserver::registry::workload_cluster_resources() {
            server.state().registry.insert(resource);
        }
    }
    let url = security::client_url(server.local_addr(), https);
    let kubeconfig = write_kubeconfig(&args.data_dir, &security.kubeconfig(&url))?;
    datadir_lock::record_url(&url)?;
    progress("API server listening", url.clone());
    tracing::info!(
        url,
        kubeconfig = %kubeconfig.display(),
        store = ?args.store,
        "Corral API server listening on {url}"
    );
    Ok(server)
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM. The handlers are installed when this is called,
/// not when the future is first polled: from then on a signal no longer kills the process
/// but is kept for the future, so a Ctrl-C during start-up stops it cleanly too.
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).expect("SIGINT handler");
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    }
}
