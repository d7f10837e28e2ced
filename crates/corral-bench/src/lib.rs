//! Benchmarks of the Corral API server through the full HTTP path, over the SQLite store and
//! the etcd store side by side in one run, with raw etcd puts on the same etcd as the
//! yardstick. See `BENCHMARKS.md` at the repository root for the command and the results.
//!
//! Everything runs in this process on one Tokio runtime — the servers, their stores and the
//! clients — except etcd, which is its own process; so the clients' work competes with the
//! servers' for the same CPUs, as it would on a small control-plane machine.
//!
//! # Map of the crate
//!
//! The benchmarks (`cargo run --release -p corral-bench -- apiserver`, `-- machinery`): full HTTP
//! path against both stores with raw etcd as the yardstick, and the API machinery (schema
//! validation, garbage collection, server-side apply). `scale/` is `-- scale` and `-- rollout`: the
//! whole management plane in-process (`scale/plane.rs`: SQLite store wrapped in a write-counting
//! `Store`, API server, CRDs, core controllers, in-memory provider), N clusters or one large
//! MachineDeployment created through the API and watched until Available/Running (the watches
//! decode only the fields they count, `scale/tracked.rs`, so that the observer costs little of the
//! CPU it measures), rolled and deleted, with writes per resource, reconciles per controller
//! (`corral_runtime::metrics` and `corral_infra_inmemory::reconcile_counts`), CPU and peak RSS from
//! `/proc`. Results in BENCHMARKS.md; `tests/it/scale.rs` runs 20 clusters as a correctness check.
//! `scripts/profile/` reads `perf script` stacks (self and inclusive shares, callees, callers, and
//! per benchmark phase with `stamp.py` and `phases.py`) and alternates two builds on one benchmark
//! (`ab.sh`), as BENCHMARKS.md's "Profiling it yourself" shows.

pub mod client;
pub mod cpu;
pub mod env;
pub mod etcd_process;
pub mod load;
pub mod machinery;
pub mod objects;
pub mod phases;
pub mod scale;
pub mod stats;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use corral_apiserver::{Server, ServerConfig};
use corral_store::DynStore;
use corral_store::etcd::pb::kv_client::KvClient;
use corral_store::sqlite::CommitStats;
use http::{Method, StatusCode};

use crate::client::Http;
use crate::cpu::CpuUse;
use crate::load::Measured;
use crate::stats::{format_ms, format_rate};

/// What to run, and for how long.
#[derive(Clone, Debug)]
pub struct Config {
    /// Measured time of each closed-loop run.
    pub duration: Duration,
    /// Unmeasured time before each closed-loop run.
    pub warmup: Duration,
    /// Concurrent clients of the create, update, get and put runs.
    pub concurrencies: Vec<usize>,
    /// Times the closed-loop runs are repeated (interleaved); the median is reported.
    pub rounds: usize,
    /// Size of the data of every object, and of raw etcd values.
    pub value_bytes: usize,
    pub list_objects: usize,
    pub list_page: usize,
    /// Concurrent clients filling the list namespace.
    pub fill_clients: usize,
    pub watchers: usize,
    pub watch_events: usize,
    /// Creates per second of the watch run's writer.
    pub watch_rate: f64,
    pub skip_etcd: bool,
    /// Put etcd's data on /dev/shm (fsync for free) instead of next to the SQLite file.
    pub etcd_on_tmpfs: bool,
    /// Keep a watch on every ConfigMap open during the whole run (see
    /// [`phases::resident_watch`]).
    pub resident_watch: bool,
    /// Where the stores' data goes; `None`: [`env::default_data_root`].
    pub data_root: Option<PathBuf>,
    /// How long to measure the disk's fsync.
    pub fsync_probe: Duration,
    /// Run only these phases; empty: all of them.
    pub only: Vec<Phase>,
}

/// The parts of a run, for [`Config::only`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Raw etcd puts.
    Raw,
    /// Store creates without HTTP.
    Store,
    Create,
    Update,
    /// Gets (of the objects the update phase creates; they are created if it is skipped).
    Get,
    List,
    Watch,
    /// Merge patches of Cluster API Machines (status and labels), as controllers write them.
    Machine,
}

impl Config {
    pub fn runs(&self, phase: Phase) -> bool {
        self.only.is_empty() || self.only.contains(&phase)
    }
}

impl Config {
    /// The full benchmark, every closed-loop run lasting `duration`.
    pub fn standard(duration: Duration) -> Config {
        Config {
            duration,
            warmup: (duration / 4).min(Duration::from_millis(500)),
            concurrencies: vec![1, 16, 64],
            rounds: 3,
            value_bytes: 1024,
            list_objects: 10_000,
            list_page: 500,
            fill_clients: 64,
            watchers: 100,
            watch_events: 300,
            watch_rate: 100.0,
            skip_etcd: false,
            etcd_on_tmpfs: false,
            resident_watch: true,
            data_root: None,
            fsync_probe: Duration::from_secs(1),
            only: Vec::new(),
        }
    }

    /// A smoke run: every phase, briefly and small.
    pub fn quick() -> Config {
        Config {
            duration: Duration::from_millis(300),
            warmup: Duration::from_millis(50),
            concurrencies: vec![1, 16],
            rounds: 1,
            list_objects: 1_000,
            list_page: 100,
            fill_clients: 16,
            watchers: 10,
            watch_events: 20,
            watch_rate: 100.0,
            fsync_probe: Duration::from_millis(200),
            ..Config::standard(Duration::from_secs(1))
        }
    }
}

/// What a row of the results measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    RawEtcdPut,
    StoreCreate,
    Create,
    Update,
    Get,
    MachineStatusPatch,
    MachineLabelPatch,
    Fill,
    ListFull,
    ListWalk,
    ListPage,
    WatchDelivery,
    WatchWrite,
}

impl Op {
    pub fn label(self, config: &Config) -> String {
        let kib = if config.value_bytes == 1024 {
            "1 KiB".to_string()
        } else {
            format!("{} B", config.value_bytes)
        };
        match self {
            Op::RawEtcdPut => format!("raw etcd put (etcd-client, {kib})"),
            Op::StoreCreate => format!("store create, no HTTP ({kib})"),
            Op::Create => "create (POST)".into(),
            Op::Update => "update (PUT with resourceVersion)".into(),
            Op::Get => "get".into(),
            Op::MachineStatusPatch => {
                "merge patch of a Machine's status (~4 KiB, with resourceVersion)".into()
            }
            Op::MachineLabelPatch => {
                "merge patch of a Machine's label (with resourceVersion)".into()
            }
            Op::Fill => format!("create, filling {} for the list", config.list_objects),
            Op::ListFull => format!("list {} in one request", config.list_objects),
            Op::ListWalk => format!(
                "list {} in pages of {} (whole walk)",
                config.list_objects, config.list_page
            ),
            Op::ListPage => format!("one page of {}", config.list_page),
            Op::WatchDelivery => format!(
                "watch delivery to {} watchers (send→receipt)",
                config.watchers
            ),
            Op::WatchWrite => format!("watch run's writer: create at {}/s", config.watch_rate),
        }
    }
}

/// One result.
#[derive(Clone, Debug)]
pub struct Row {
    pub op: Op,
    pub backend: String,
    pub clients: usize,
    /// With several rounds, the median round (by rate).
    pub measured: Measured,
    /// The rate of every round, in the order they ran.
    pub round_rates: Vec<f64>,
}

/// Everything a run found.
#[derive(Clone, Debug)]
pub struct Report {
    pub config: Config,
    /// Machine, disk, versions.
    pub environment: Vec<String>,
    pub rows: Vec<Row>,
    /// What else is worth knowing: skipped parts, errors, watch details.
    pub notes: Vec<String>,
    pub wall: Duration,
}

/// The benchmark target `apiserver`: see the crate docs. A sequence of steps: the data dir and
/// its disk, the SQLite side, the etcd side, the closed-loop rounds, the list runs, the watch
/// runs, then the report's last lines.
pub async fn run(config: &Config) -> anyhow::Result<Report> {
    let wall = Instant::now();
    let mut report = Report {
        config: config.clone(),
        environment: machine(),
        rows: Vec::new(),
        notes: Vec::new(),
        wall: Duration::ZERO,
    };
    let root = config
        .data_root
        .clone()
        .unwrap_or_else(env::default_data_root);
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("corral-bench-")
        .tempdir_in(&root)
        .with_context(|| format!("creating a data dir under {}", root.display()))?;
    describe_disk(&mut report, dir.path(), config);

    let mut sides = Vec::new();
    let sqlite = corral_store::sqlite::SqliteStore::open(&dir.path().join("corral.db"))
        .context("opening the SQLite store")?;
    report.environment.push(
        "SQLite store: WAL, one writer thread with group commit, fsyncs pipelined on a sync thread (crate defaults)"
            .into(),
    );
    // Kept to read group commit's counters around the SQLite write runs.
    let sqlite_stats = sqlite.clone();
    sides.push(Side::start("sqlite", Arc::new(sqlite), config).await?);
    let etcd = if config.skip_etcd {
        report.notes.push("etcd skipped (--skip-etcd).".into());
        None
    } else {
        start_etcd(config, dir.path(), &mut report, &mut sides).await?
    };

    closed_loop_rounds(
        config,
        &sides,
        etcd.as_ref().map(|(_, raw)| raw),
        &sqlite_stats,
        &mut report,
    )
    .await?;
    list_runs(config, &sides, &mut report).await?;
    watch_runs(config, &sides, &mut report).await?;

    for side in sides {
        let name = side.name;
        if let Some(bytes) = side.stop().await {
            report.notes.push(format!(
                "{name}: the resident ConfigMap watch received {:.1} MiB over the run.",
                bytes as f64 / (1024.0 * 1024.0)
            ));
        }
    }
    drop(etcd);
    drop(dir);
    report.wall = wall.elapsed();
    report
        .environment
        .push(format!("load average at the end: {}", load_average()));
    Ok(report)
}

/// The data dir and its disk's fsync latency in the report's environment.
fn describe_disk(report: &mut Report, dir: &std::path::Path, config: &Config) {
    report
        .environment
        .push(format!("data: {}", env::describe_dir(dir)));
    match env::probe_fsync(dir, config.fsync_probe) {
        Ok(probe) => report.environment.push(format!(
            "disk: 4 KiB write + fdatasync: p50 {} ms, p99 {} ms ({} per second, one at a time)",
            format_ms(probe.latency.p50),
            format_ms(probe.latency.p99),
            format_rate(probe.per_second)
        )),
        Err(error) => report
            .notes
            .push(format!("Could not measure fsync: {error}")),
    }
}

/// Starts an etcd member (on tmpfs when asked), watches its CPU and adds its side; the server
/// and a raw client for the raw puts, or `None` (with a note) when there is no etcd binary.
async fn start_etcd(
    config: &Config,
    dir: &std::path::Path,
    report: &mut Report,
    sides: &mut Vec<Side>,
) -> anyhow::Result<
    Option<(
        etcd_process::EtcdServer,
        KvClient<tonic::transport::Channel>,
    )>,
> {
    let Some(binary) = etcd_process::EtcdServer::find_binary() else {
        let line = "etcd binary not found (install etcd-server, or set CORRAL_ETCD_BIN): \
                    running the SQLite part only";
        eprintln!("{line}");
        report.notes.push(line.into());
        return Ok(None);
    };
    let etcd_root = if config.etcd_on_tmpfs {
        PathBuf::from("/dev/shm")
    } else {
        dir.to_path_buf()
    };
    let server = etcd_process::EtcdServer::start(&binary, &etcd_root).await?;
    match server.pid() {
        Some(pid) => cpu::watch_etcd(pid),
        None => report
            .notes
            .push("etcd's pid was not found: its CPU use is not reported.".into()),
    }
    report.environment.push(format!(
        "{}, single member; data: {}",
        server.version(),
        env::describe_dir(server.data_dir())
    ));
    let store = corral_store::etcd::EtcdStore::connect(&server.endpoints(), "/corral/")
        .await
        .context("connecting the etcd store")?;
    let raw = KvClient::connect(server.endpoint().to_string())
        .await
        .context("connecting the raw etcd client")?
        .max_decoding_message_size(usize::MAX);
    sides.push(Side::start("etcd", Arc::new(store), config).await?);
    Ok(Some((server, raw)))
}

/// The closed-loop runs, interleaved so that each comparison is made seconds apart on a
/// machine whose speed drifts, and repeated in rounds; each row reports its median round, and
/// a note per SQLite write run gives group commit's counters.
async fn closed_loop_rounds(
    config: &Config,
    sides: &[Side],
    raw: Option<&KvClient<tonic::transport::Channel>>,
    sqlite_stats: &corral_store::sqlite::SqliteStore,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut group_commit: Vec<(Op, usize, CommitStats)> = Vec::new();
    let mut count_commits = |op: Op, clients: usize, before: CommitStats, after: CommitStats| {
        let interval = after.since(&before);
        match group_commit
            .iter_mut()
            .find(|(o, c, _)| *o == op && *c == clients)
        {
            Some((_, _, total)) => *total = add_commit_stats(total, &interval),
            None => group_commit.push((op, clients, interval)),
        }
    };
    for _ in 0..config.rounds.max(1) {
        for &clients in &config.concurrencies {
            if let Some(raw) = raw.filter(|_| config.runs(Phase::Raw)) {
                let measured = phases::raw_etcd_puts(raw, clients, config).await;
                report.push(Op::RawEtcdPut, "etcd", clients, measured);
            }
            for side in sides.iter().filter(|_| config.runs(Phase::Store)) {
                let before = sqlite_stats.commit_stats();
                let measured = phases::store_creates(&side.store, clients, config).await;
                if side.name == "sqlite" {
                    count_commits(
                        Op::StoreCreate,
                        clients,
                        before,
                        sqlite_stats.commit_stats(),
                    );
                }
                report.push(Op::StoreCreate, side.name, clients, measured);
            }
            for side in sides.iter().filter(|_| config.runs(Phase::Create)) {
                let before = sqlite_stats.commit_stats();
                let measured = phases::http_creates(&side.http, clients, config).await;
                if side.name == "sqlite" {
                    count_commits(Op::Create, clients, before, sqlite_stats.commit_stats());
                }
                report.push(Op::Create, side.name, clients, measured);
            }
            for side in sides.iter().filter(|_| config.runs(Phase::Update)) {
                let measured = phases::http_updates(&side.http, clients, config).await?;
                report.push(Op::Update, side.name, clients, measured);
            }
            for side in sides.iter().filter(|_| config.runs(Phase::Get)) {
                if !config.runs(Phase::Update) {
                    phases::create_own_objects(&side.http, clients, config).await?;
                }
                let measured = phases::http_gets(&side.http, clients, config).await;
                report.push(Op::Get, side.name, clients, measured);
            }
            for side in sides.iter().filter(|_| config.runs(Phase::Machine)) {
                for (op, kind) in [
                    (Op::MachineStatusPatch, phases::MachinePatch::Status),
                    (Op::MachineLabelPatch, phases::MachinePatch::Labels),
                ] {
                    let measured =
                        phases::http_machine_patches(&side.http, clients, config, kind).await?;
                    report.push(op, side.name, clients, measured);
                }
            }
        }
    }
    report.keep_median_rounds();
    for (op, clients, stats) in &group_commit {
        report.notes.push(group_commit_note(*op, *clients, stats));
    }
    Ok(())
}

/// Fills the list namespace on each side, then lists it whole, walked by pages, and one page.
async fn list_runs(config: &Config, sides: &[Side], report: &mut Report) -> anyhow::Result<()> {
    for side in sides.iter().filter(|_| config.runs(Phase::List)) {
        let fill = phases::fill(
            &side.http,
            objects::LIST_NAMESPACE,
            config.list_objects,
            config.fill_clients,
            config,
        )
        .await
        .with_context(|| format!("filling the list namespace on {}", side.name))?;
        report.push(Op::Fill, side.name, config.fill_clients, fill);
        let lists = phases::lists(&side.http, config)
            .await
            .with_context(|| format!("listing on {}", side.name))?;
        report.push(Op::ListFull, side.name, 1, lists.full);
        report.push(Op::ListWalk, side.name, 1, lists.walk);
        report.push(Op::ListPage, side.name, 1, lists.page);
    }
    Ok(())
}

/// The watch run on each side: its delivery and write rows, and a note with the delivery
/// measured from the create's answer and from a watch on the store itself.
async fn watch_runs(config: &Config, sides: &[Side], report: &mut Report) -> anyhow::Result<()> {
    for side in sides.iter().filter(|_| config.runs(Phase::Watch)) {
        let watches = phases::watches(&side.http, &side.store, config)
            .await
            .with_context(|| format!("the watch run on {}", side.name))?;
        report.notes.push(format!(
            "{}: watch delivery measured from the create's answer instead of its send: p50 {} ms, \
             p99 {} ms, {} of {} deliveries more than {} ms after the answer (by ms after the \
             answer: {}); a watch on the store itself (no server, no HTTP) got the events at p50 \
             {} / p99 {} ms from the send, p50 {} / p99 {} ms from the answer{}.",
            side.name,
            format_ms(watches.from_ack.p50),
            format_ms(watches.from_ack.p99),
            watches.late_after_ack,
            watches.deliveries.ops,
            phases::LATE_AFTER_ACK.as_millis(),
            histogram(&watches.after_ack_histogram),
            format_ms(watches.store_from_send.p50),
            format_ms(watches.store_from_send.p99),
            format_ms(watches.store_from_ack.p50),
            format_ms(watches.store_from_ack.p99),
            if watches.missing > 0 || watches.broken_watchers > 0 {
                format!(
                    "; {} deliveries missing, {} watchers broken ({})",
                    watches.missing,
                    watches.broken_watchers,
                    watches.first_error.as_deref().unwrap_or("no error")
                )
            } else {
                "; every watcher got every event".into()
            }
        ));
        report.push(
            Op::WatchDelivery,
            side.name,
            config.watchers,
            watches.deliveries,
        );
        report.push(Op::WatchWrite, side.name, 1, watches.writes);
    }
    Ok(())
}

fn add_commit_stats(a: &CommitStats, b: &CommitStats) -> CommitStats {
    CommitStats {
        commits: a.commits + b.commits,
        transactions: a.transactions + b.transactions,
        writes: a.writes + b.writes,
        commit_time: a.commit_time + b.commit_time,
        batch_sizes: std::array::from_fn(|i| a.batch_sizes[i] + b.batch_sizes[i]),
    }
}

/// How many writes shared each SQLite commit (and so each WAL fsync) during a run.
fn group_commit_note(op: Op, clients: usize, stats: &CommitStats) -> String {
    let per_commit = stats.writes as f64 / stats.commits.max(1) as f64;
    let mean_commit = stats.commit_time.as_secs_f64() * 1000.0 / stats.commits.max(1) as f64;
    let last = stats.batch_sizes.len() - 1;
    let buckets: Vec<String> = stats
        .batch_sizes
        .iter()
        .enumerate()
        .filter(|(_, count)| **count > 0)
        .map(|(i, count)| {
            let floor = CommitStats::bucket_floor(i);
            let label = match i {
                0 => "1".to_string(),
                i if i == last => format!("{floor}+"),
                _ => format!("{floor}–{}", CommitStats::bucket_floor(i + 1) - 1),
            };
            format!("{label}: {count}")
        })
        .collect();
    format!(
        "sqlite group commit during {} at {clients} clients (all rounds, warm-ups included): {} \
         writes in {} commits, {per_commit:.1} writes per commit (per fsync) in {} transactions, a commit took \
         {mean_commit:.2} ms on average (statements, WAL writes and fsync); commits by writes \
         per commit: {}.",
        match op {
            Op::StoreCreate => "store creates (no HTTP)",
            _ => "HTTP creates",
        },
        stats.writes,
        stats.commits,
        stats.transactions,
        buckets.join(", ")
    )
}

/// One backend: its store and a server over it, with a client.
struct Side {
    name: &'static str,
    server: Server,
    store: DynStore,
    http: Http,
    resident: Option<(tokio::task::JoinHandle<()>, Arc<AtomicU64>)>,
}

impl Side {
    async fn start(name: &'static str, store: DynStore, config: &Config) -> anyhow::Result<Side> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        // The Machines it writes are admitted by their kind's rules, as the binary's server does.
        let server_config = ServerConfig {
            admission: corral_api::admission::rules(),
            ..ServerConfig::default()
        };
        let server = Server::start(listener, store.clone(), server_config)
            .await
            .with_context(|| format!("starting the API server over {name}"))?;
        let http = Http::new(&server.url());
        for namespace in [
            objects::NAMESPACE,
            objects::LIST_NAMESPACE,
            objects::WATCH_NAMESPACE,
        ] {
            http.expect(
                Method::POST,
                "/api/v1/namespaces",
                Some(objects::namespace(namespace)),
                StatusCode::CREATED,
            )
            .await
            .with_context(|| format!("creating namespace {namespace} on {name}"))?;
        }
        let resident = if config.resident_watch {
            Some(phases::resident_watch(http.clone()).await?)
        } else {
            None
        };
        Ok(Side {
            name,
            server,
            store,
            http,
            resident,
        })
    }

    /// Stops the server; returns what the resident watch received.
    async fn stop(self) -> Option<u64> {
        let received = self.resident.map(|(task, received)| {
            task.abort();
            received.load(Ordering::Relaxed)
        });
        drop(self.http);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.server.shutdown()).await;
        drop(self.store);
        received
    }
}

pub(crate) fn machine() -> Vec<String> {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|model| model.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    vec![
        format!(
            "machine: {cpus} CPUs ({model}), Linux {kernel}; servers, stores and clients share \
             one Tokio runtime in one process; etcd is a separate process"
        ),
        format!(
            "load average at the start (other tenants of the machine): {}",
            load_average()
        ),
    ]
}

/// The 1, 5 and 15 minute load averages.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "unknown".into())
}

impl Report {
    fn push(&mut self, op: Op, backend: &str, clients: usize, measured: Measured) {
        eprintln!(
            "{:<48} {:<6} {:>3} clients: {:>9} ops/s  p50 {:>7} ms  p99 {:>7} ms{}",
            op.label(&self.config),
            backend,
            clients,
            format_rate(measured.rate()),
            format_ms(measured.latency.p50),
            format_ms(measured.latency.p99),
            if measured.errors > 0 {
                format!("  {} errors", measured.errors)
            } else {
                String::new()
            }
        );
        if let Some(error) = &measured.first_error {
            self.notes.push(format!(
                "{} on {backend} with {clients} clients: {} errors, the first: {error}",
                op.label(&self.config),
                measured.errors
            ));
        }
        self.rows.push(Row {
            op,
            backend: backend.to_string(),
            clients,
            round_rates: vec![measured.rate()],
            measured,
        });
    }

    /// Replaces the rows of each (operation, backend, clients) by the one of the median rate,
    /// keeping every round's rate.
    fn keep_median_rounds(&mut self) {
        let mut merged: Vec<Row> = Vec::new();
        let mut groups: Vec<Vec<Row>> = Vec::new();
        for row in self.rows.drain(..) {
            match groups.iter_mut().find(|group| {
                let first = &group[0];
                first.op == row.op && first.backend == row.backend && first.clients == row.clients
            }) {
                Some(group) => group.push(row),
                None => groups.push(vec![row]),
            }
        }
        for mut group in groups {
            let rates: Vec<f64> = group.iter().map(|row| row.measured.rate()).collect();
            group.sort_by(|a, b| a.measured.rate().total_cmp(&b.measured.rate()));
            let mut median = group.swap_remove(group.len() / 2);
            median.round_rates = rates;
            merged.push(median);
        }
        self.rows = merged;
    }

    pub fn find(&self, op: Op, backend: &str, clients: usize) -> Option<&Row> {
        self.rows
            .iter()
            .find(|row| row.op == op && row.backend == backend && row.clients == clients)
    }

    /// The concurrency the targets are stated at (64), or the largest one measured.
    fn target_clients(&self) -> usize {
        if self.config.concurrencies.contains(&64) {
            64
        } else {
            self.config.concurrencies.iter().copied().max().unwrap_or(1)
        }
    }

    /// The comparisons the benchmark exists for, one line each.
    pub fn ratios(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let at = self.target_clients();
        let rate = |op, backend| self.find(op, backend, at).map(|row| row.measured.rate());
        if let Some(raw) = rate(Op::RawEtcdPut, "etcd").filter(|&raw| raw > 0.0) {
            for backend in ["sqlite", "etcd"] {
                if let Some(creates) = rate(Op::Create, backend) {
                    let ratio = creates / raw;
                    let verdict = if backend == "sqlite" {
                        if ratio >= 1.0 {
                            " — target ≥ 1.0x: **met**"
                        } else {
                            " — target ≥ 1.0x: **not met**"
                        }
                    } else {
                        ""
                    };
                    lines.push(format!(
                        "{backend} creates@{at} / raw etcd puts@{at} = {} / {} = **{ratio:.2}x**{verdict}",
                        format_rate(creates),
                        format_rate(raw)
                    ));
                }
            }
            let cpu = |op, backend| {
                self.find(op, backend, at).and_then(|row| {
                    let ops = row.measured.ops as f64;
                    let own = row.measured.cpu.own?.as_secs_f64() * 1e6 / ops;
                    let etcd = match backend {
                        "etcd" => row.measured.cpu.etcd?.as_secs_f64() * 1e6 / ops,
                        _ => 0.0,
                    };
                    (ops > 0.0).then_some(own + etcd)
                })
            };
            if let (Some(put), Some(create)) =
                (cpu(Op::RawEtcdPut, "etcd"), cpu(Op::Create, "sqlite"))
            {
                lines.push(format!(
                    "CPU per operation (both cores are shared by everything, so this bounds the \
                     rates): sqlite create@{at} {create:.0} µs vs raw etcd put@{at} {put:.0} µs \
                     (client + etcd) = **{:.2}x** the cost of a put",
                    create / put
                ));
            }
        } else {
            lines.push(format!(
                "no raw etcd puts@{at} in this run: the creates target (SQLite creates@64 ≥ raw \
                 etcd puts@64) is not evaluated"
            ));
        }
        for backend in ["sqlite", "etcd"] {
            if let Some(row) = self
                .rows
                .iter()
                .find(|row| row.op == Op::WatchDelivery && row.backend == backend)
            {
                let p99 = row.measured.latency.p99;
                let met = p99 < Duration::from_millis(50) && row.measured.errors == 0;
                lines.push(format!(
                    "{backend} watch delivery p99 with {} watchers = {} ms — target < 50 ms: **{}**",
                    row.clients,
                    format_ms(p99),
                    if met { "met" } else { "not met" }
                ));
            }
        }
        for &clients in &self.config.concurrencies {
            for op in [Op::Create, Op::Update, Op::Get] {
                let sqlite = self.find(op, "sqlite", clients).map(|r| r.measured.rate());
                let etcd = self.find(op, "etcd", clients).map(|r| r.measured.rate());
                if let (Some(sqlite), Some(etcd)) = (sqlite, etcd)
                    && etcd > 0.0
                {
                    lines.push(format!(
                        "sqlite / etcd, {}@{clients}: {:.2}x",
                        short(op),
                        sqlite / etcd
                    ));
                }
            }
        }
        for backend in ["sqlite", "etcd"] {
            for &clients in &self.config.concurrencies {
                let http = self.find(Op::Create, backend, clients);
                let store = self.find(Op::StoreCreate, backend, clients);
                if let (Some(http), Some(store)) = (http, store)
                    && store.measured.rate() > 0.0
                {
                    lines.push(format!(
                        "{backend}: HTTP creates / store creates @{clients} = {:.2}x",
                        http.measured.rate() / store.measured.rate()
                    ));
                }
            }
        }
        for op in [Op::ListFull, Op::ListWalk] {
            let sqlite = self.find(op, "sqlite", 1);
            let etcd = self.find(op, "etcd", 1);
            if let (Some(sqlite), Some(etcd)) = (sqlite, etcd) {
                lines.push(format!(
                    "{}: sqlite {} ms vs etcd {} ms (p50)",
                    op.label(&self.config),
                    format_ms(sqlite.measured.latency.p50),
                    format_ms(etcd.measured.latency.p50)
                ));
            }
        }
        lines
    }

    /// The results as Markdown: environment, table, ratios, notes.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let config = &self.config;
        let _ = writeln!(out, "## Environment\n");
        for line in &self.environment {
            let _ = writeln!(out, "- {line}");
        }
        let _ = writeln!(
            out,
            "- run: {:.1} s per closed-loop measurement after {:.2} s of warm-up, {} interleaved \
             round(s), the median reported (with the range over rounds); clients {:?}; {} B of \
             data per object; whole run {:.0} s\n",
            config.duration.as_secs_f64(),
            config.warmup.as_secs_f64(),
            config.rounds,
            config.concurrencies,
            config.value_bytes,
            self.wall.as_secs_f64()
        );
        let _ = writeln!(out, "## Results\n");
        let _ = writeln!(
            out,
            "| operation | backend | clients | ops/s (range over rounds) | p50 ms | p99 ms | CPU µs/op, this process | \
             CPU µs/op, etcd | samples | errors |"
        );
        let _ = writeln!(out, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|");
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        rows.sort_by_key(|row| (row.op, row.clients, row.backend != "sqlite"));
        for row in rows {
            let measured = &row.measured;
            let (p50, p99) = if measured.latency.samples == 0 {
                ("–".to_string(), "–".to_string())
            } else {
                (
                    format_ms(measured.latency.p50),
                    format_ms(measured.latency.p99),
                )
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {p50} | {p99} | {} | {} | {} | {} |",
                row.op.label(config),
                row.backend,
                row.clients,
                rate_cell(row),
                CpuUse::per_op(measured.cpu.own, measured.ops),
                if row.backend == "etcd" {
                    CpuUse::per_op(measured.cpu.etcd, measured.ops)
                } else {
                    "–".into()
                },
                measured.latency.samples,
                measured.errors
            );
        }
        let _ = writeln!(out, "\n## Ratios\n");
        for line in self.ratios() {
            let _ = writeln!(out, "- {line}");
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "\n## Notes\n");
            for line in &self.notes {
                let _ = writeln!(out, "- {line}");
            }
        }
        out
    }
}

/// The median rate, with the range over the rounds when there were several.
fn rate_cell(row: &Row) -> String {
    let rate = format_rate(row.measured.rate());
    if row.round_rates.len() < 2 {
        return rate;
    }
    let min = row
        .round_rates
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let max = row.round_rates.iter().copied().fold(0.0, f64::max);
    format!("{rate} ({}–{})", format_rate(min), format_rate(max))
}

/// `≤1: n, ≤5: n, …, >100: n`, skipping empty buckets.
fn histogram(counts: &[usize]) -> String {
    let bounds = phases::ACK_BUCKETS_MS;
    counts
        .iter()
        .enumerate()
        .filter(|&(_, &count)| count > 0)
        .map(|(bucket, count)| match bounds.get(bucket) {
            Some(bound) => format!("≤{bound}: {count}"),
            None => format!(">{}: {count}", bounds[bounds.len() - 1]),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn short(op: Op) -> &'static str {
    match op {
        Op::Create => "creates",
        Op::Update => "updates",
        Op::Get => "gets",
        _ => "ops",
    }
}
