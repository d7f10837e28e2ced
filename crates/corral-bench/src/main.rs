//! `corral-bench apiserver`: the API server over SQLite and over etcd, side by side, with raw
//! etcd puts as the yardstick. `corral-bench machinery`: custom resource validation, garbage
//! collection and server-side apply on SQLite. Both print progress on stderr and a Markdown
//! report on stdout.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

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
    let options = match Cli::parse().target {
        Target::Apiserver(options) => options,
        Target::Machinery(options) => return machinery(options),
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
