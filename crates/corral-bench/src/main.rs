//! `corral-bench apiserver`: the API server over SQLite and over etcd, side by side, with raw
//! etcd puts as the yardstick. `corral-bench machinery`: custom resource validation, garbage
//! collection and server-side apply on SQLite. `corral-bench scale` and `corral-bench rollout`:
//! the whole management plane with the in-memory provider, at many clusters or one large
//! MachineDeployment. All print progress on stderr and a Markdown report on stdout.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "corral-bench", about = "Benchmarks of Corral")]
struct Cli {
    #[command(subcommand)]
    target: Target,
}

#[derive(Subcommand)]
enum Target {
    /// The API server through HTTP over SQLite and etcd: creates, updates, gets at several
    /// concurrencies, a large list, watch delivery; raw etcd puts as the yardstick.
    Apiserver(Options),
    /// API machinery on SQLite: custom resource creates with and without a structural schema
    /// (defaults, CEL), garbage collection of an ownership tree, server-side apply.
    Machinery(MachineryOptions),
    /// N clusters on the in-memory provider, the whole management plane in this process:
    /// time until all are Available and their Machines Running, API writes, reconciles per
    /// controller, CPU and peak RSS; optionally the idle steady state; then deleting them all.
    Scale(ScaleOptions),
    /// One MachineDeployment of many replicas on the in-memory provider, rolled to a new
    /// template: time, and the most Machines seen at once.
    Rollout(RolloutOptions),
}

#[derive(clap::Args)]
struct ScaleOptions {
    /// Clusters to create.
    #[arg(long, default_value_t = 50)]
    clusters: usize,
    /// Control plane Machines of each cluster (machine-based control plane).
    #[arg(long, default_value_t = 1)]
    control_plane_machines: usize,
    /// Worker Machines of each cluster (one MachineDeployment).
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// How long each simulated VM takes to boot, in seconds (0: at once).
    #[arg(long, default_value_t = 0.0)]
    provisioning_delay: f64,
    /// Seconds of steady state to measure once every cluster is Available (0: none).
    #[arg(long, default_value_t = 0.0)]
    idle_secs: f64,
    /// Concurrent clients creating and deleting the clusters.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    #[command(flatten)]
    common: PlaneOptions,
}

#[derive(clap::Args)]
struct RolloutOptions {
    /// Replicas of the MachineDeployment.
    #[arg(long, default_value_t = 1000)]
    replicas: usize,
    /// maxSurge of the rollout (a number or a percentage).
    #[arg(long, default_value = "10%")]
    max_surge: String,
    /// maxUnavailable of the rollout (a number or a percentage).
    #[arg(long, default_value = "0")]
    max_unavailable: String,
    #[command(flatten)]
    common: PlaneOptions,
}

#[derive(clap::Args)]
struct PlaneOptions {
    /// How many objects of one kind each controller reconciles at once (default: the
    /// controllers' default).
    #[arg(long)]
    concurrency: Option<u16>,
    /// Seconds each phase may take before the run gives up.
    #[arg(long, default_value_t = 600.0)]
    timeout_secs: f64,
    /// Where the SQLite file goes (default: the temp dir, unless it is tmpfs; then target/).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Events each watch cache of the management API server keeps for resuming watches
    /// (default: the server's default).
    #[arg(long)]
    watch_history: Option<usize>,
    /// MiB of history each watch cache of the management API server keeps at most (default:
    /// the server's default, 8).
    #[arg(long)]
    watch_history_mib: Option<f64>,
    /// No progress lines on stderr.
    #[arg(long)]
    quiet: bool,
}

impl PlaneOptions {
    fn watch_history_bytes(&self) -> Option<usize> {
        self.watch_history_mib
            .map(|mib| (mib.max(0.0) * 1024.0 * 1024.0) as usize)
    }

    fn controllers(&self) -> corral_controllers::Config {
        let mut config = corral_controllers::Config::default();
        if let Some(concurrency) = self.concurrency {
            config.concurrency = concurrency.max(1);
        }
        config
    }
}

#[derive(clap::Args)]
struct MachineryOptions {
    /// Seconds measured per closed-loop create run (each also has a short warm-up).
    #[arg(long, default_value_t = 1.0)]
    duration_secs: f64,
    /// Interleaved rounds of the create and apply runs; each row reports the median round.
    #[arg(long)]
    rounds: Option<usize>,
    /// A smoke run: everything, briefly and small.
    #[arg(long)]
    quick: bool,
    /// Concurrent clients of the create runs (comma-separated).
    #[arg(long, value_delimiter = ',')]
    clients: Option<Vec<usize>>,
    /// Objects of each apply, create, re-apply and patch run.
    #[arg(long)]
    apply_objects: Option<usize>,
    /// Where the data dir goes (default: the temp dir, unless it is tmpfs; then target/).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct Options {
    /// Seconds measured per closed-loop run (each also has a short warm-up).
    #[arg(long, default_value_t = 1.0)]
    duration_secs: f64,
    /// Rounds of the closed-loop runs (interleaved); each row reports the median round.
    #[arg(long)]
    rounds: Option<usize>,
    /// A smoke run: every phase, briefly and small (overrides the sizes below).
    #[arg(long)]
    quick: bool,
    /// Only the SQLite side.
    #[arg(long)]
    skip_etcd: bool,
    /// Put etcd's data dir on /dev/shm (fsync is free) instead of next to the SQLite file.
    #[arg(long)]
    etcd_on_tmpfs: bool,
    /// Don't keep a watch on every ConfigMap open during the run (by default one is, as a
    /// controller's informer would, so the server's watch cache is running throughout).
    #[arg(long)]
    no_resident_watch: bool,
    /// Where the data dirs go (default: the temp dir, unless it is tmpfs; then target/).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Objects in the listed collection.
    #[arg(long)]
    list_objects: Option<usize>,
    /// Concurrent watchers in the watch run.
    #[arg(long)]
    watchers: Option<usize>,
    /// Concurrent clients of the create, update and get runs (comma-separated).
    #[arg(long, value_delimiter = ',')]
    clients: Option<Vec<usize>>,
    /// Run only these phases (comma-separated), e.g. for profiling one of them.
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<corral_bench::Phase>,
}

fn main() -> anyhow::Result<()> {
    // Logs of the management plane under test, when asked for (e.g. RUST_LOG=warn).
    if let Ok(filter) = std::env::var("RUST_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let options = match Cli::parse().target {
        Target::Apiserver(options) => options,
        Target::Machinery(options) => return machinery(options),
        Target::Scale(options) => return scale(options),
        Target::Rollout(options) => return rollout(options),
    };
    let mut config = if options.quick {
        corral_bench::Config::quick()
    } else {
        corral_bench::Config::standard(Duration::from_secs_f64(options.duration_secs.max(0.05)))
    };
    config.skip_etcd = options.skip_etcd;
    config.etcd_on_tmpfs = options.etcd_on_tmpfs;
    config.resident_watch = !options.no_resident_watch;
    config.data_root = options.data_dir;
    if let Some(objects) = options.list_objects {
        config.list_objects = objects.max(1);
    }
    if let Some(watchers) = options.watchers {
        config.watchers = watchers.max(1);
    }
    if let Some(clients) = options.clients {
        config.concurrencies = clients.into_iter().filter(|&c| c > 0).collect();
    }
    config.only = options.only;
    if let Some(rounds) = options.rounds {
        config.rounds = rounds.max(1);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(corral_bench::run(&config))?;
    println!("{}", report.markdown());
    // Dropping the runtime waits for blocking tasks; nothing useful remains.
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

fn machinery(options: MachineryOptions) -> anyhow::Result<()> {
    use corral_bench::machinery::MachineryConfig;
    let mut config = if options.quick {
        MachineryConfig::quick()
    } else {
        MachineryConfig::standard(Duration::from_secs_f64(options.duration_secs.max(0.05)))
    };
    if let Some(rounds) = options.rounds {
        config.rounds = rounds.max(1);
    }
    if let Some(clients) = options.clients {
        config.concurrencies = clients.into_iter().filter(|&c| c > 0).collect();
    }
    if let Some(objects) = options.apply_objects {
        config.apply_objects = objects.max(1);
    }
    config.data_root = options.data_dir;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(corral_bench::machinery::run(&config))?;
    println!("{}", report.markdown());
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

fn scale(options: ScaleOptions) -> anyhow::Result<()> {
    use corral_bench::scale::ScaleConfig;
    let mut config = ScaleConfig::new(
        options.clusters,
        options.control_plane_machines,
        options.workers,
    );
    config.provisioning_delay = Duration::from_secs_f64(options.provisioning_delay.max(0.0));
    config.idle = (options.idle_secs > 0.0).then(|| Duration::from_secs_f64(options.idle_secs));
    config.clients = options.clients.max(1);
    config.timeout = Duration::from_secs_f64(options.common.timeout_secs.max(1.0));
    config.data_root = options.common.data_dir.clone();
    config.controllers = options.common.controllers();
    config.watch_history = options.common.watch_history;
    config.watch_history_bytes = options.common.watch_history_bytes();
    config.progress = !options.common.quiet;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(corral_bench::scale::run_scale(&config))?;
    println!("{}", report.markdown());
    runtime.shutdown_timeout(Duration::from_secs(5));
    if report.error.is_some() {
        std::process::exit(1);
    }
    Ok(())
}

fn rollout(options: RolloutOptions) -> anyhow::Result<()> {
    use corral_bench::scale::RolloutConfig;
    let config = RolloutConfig {
        replicas: options.replicas.max(1),
        max_surge: options.max_surge.leak(),
        max_unavailable: options.max_unavailable.leak(),
        timeout: Duration::from_secs_f64(options.common.timeout_secs.max(1.0)),
        data_root: options.common.data_dir.clone(),
        controllers: options.common.controllers(),
        watch_history: options.common.watch_history,
        watch_history_bytes: options.common.watch_history_bytes(),
        progress: !options.common.quiet,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(corral_bench::scale::run_rollout(&config))?;
    println!("{}", report.markdown());
    runtime.shutdown_timeout(Duration::from_secs(5));
    if report.error.is_some() {
        std::process::exit(1);
    }
    Ok(())
}
