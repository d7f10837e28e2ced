//! The scale and rollout reports, as Markdown.

use std::fmt::Write as _;
use std::time::Duration;

use super::plane::Delta;
use super::{Counts, RolloutConfig, ScaleConfig};

/// One measured phase.
#[derive(Clone, Debug)]
pub struct PhaseResult {
    pub delta: Delta,
}

impl PhaseResult {
    /// CPU seconds per wall second: 1.0 is one core busy.
    pub fn cores(&self) -> Option<f64> {
        Some(self.delta.cpu?.as_secs_f64() / self.delta.wall.as_secs_f64().max(1e-9))
    }

    pub fn writes_per_second(&self) -> f64 {
        self.delta.total_writes() as f64 / self.delta.wall.as_secs_f64().max(1e-9)
    }
}

/// What `scale` found.
#[derive(Clone, Debug)]
pub struct ScaleReport {
    pub config: ScaleConfig,
    pub environment: Vec<String>,
    /// From the first create until the last create was answered.
    pub creates_done: Option<Duration>,
    pub create: Option<PhaseResult>,
    /// What the watches showed when the create phase ended.
    pub created: Option<Counts>,
    pub idle: Option<PhaseResult>,
    pub delete: Option<PhaseResult>,
    /// What the watches showed when the delete phase ended.
    pub deleted: Option<Counts>,
    /// Kinds with objects left after the deletion (`Kind: count`).
    pub leftovers: Vec<String>,
    /// Peak resident memory of the process, bytes.
    pub peak_rss: Option<u64>,
    /// Why the run stopped early.
    pub error: Option<String>,
}

/// What `rollout` found.
#[derive(Clone, Debug)]
pub struct RolloutReport {
    pub config: RolloutConfig,
    pub environment: Vec<String>,
    pub scale_up: Option<PhaseResult>,
    pub rollout: Option<PhaseResult>,
    /// The most Machines of the MachineDeployment that existed at once during the rollout,
    /// those being deleted included.
    pub max_existing: usize,
    /// The most that existed at once and were not being deleted.
    pub max_not_deleting: usize,
    /// Machines not being deleted per MachineSet at that moment.
    pub worst: Vec<(String, usize)>,
    pub peak_rss: Option<u64>,
    pub error: Option<String>,
}

/// The machine and its load, for the report.
fn environment(data: String) -> Vec<String> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into());
    vec![
        format!("{cores} CPUs; load average at start {load}"),
        format!("SQLite store (WAL, fsyncs pipelined with commits) in {data}"),
    ]
}

fn end_load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

impl ScaleReport {
    pub fn new(config: ScaleConfig, data: String) -> ScaleReport {
        ScaleReport {
            config,
            environment: environment(data),
            creates_done: None,
            create: None,
            created: None,
            idle: None,
            delete: None,
            deleted: None,
            leftovers: Vec::new(),
            peak_rss: None,
            error: None,
        }
    }

    pub fn markdown(&self) -> String {
        let config = &self.config;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## Scale: {} clusters × ({} control plane + {} workers) = {} Machines\n",
            config.clusters,
            config.control_plane_machines,
            config.workers,
            config.machines()
        );
        for line in &self.environment {
            let _ = writeln!(out, "- {line}");
        }
        let _ = writeln!(out, "- load average at end {}", end_load());
        let _ = writeln!(
            out,
            "- provisioning delay {:?}, {} creating/deleting clients, controller concurrency {}",
            config.provisioning_delay, config.clients, config.controllers.concurrency
        );
        if let Some(done) = self.creates_done {
            let _ = writeln!(
                out,
                "- every create answered after {:.1} s",
                done.as_secs_f64()
            );
        }
        let _ = writeln!(
            out,
            "- peak RSS of the process (API server, store, controllers, {} simulated workload API servers, benchmark): {}",
            config.clusters,
            mib(self.peak_rss)
        );
        let _ = writeln!(out);
        let phases = [
            ("create → all Available and Running", &self.create),
            ("idle", &self.idle),
            ("delete → all gone", &self.delete),
        ];
        phase_table(&mut out, &phases);
        reconcile_table(&mut out, &phases);
        write_table(&mut out, &phases);
        let _ = writeln!(out, "### Against the targets\n");
        if let Some(create) = &self.create {
            verdict(
                &mut out,
                "all Available and Running within 60 s",
                format!("{:.1} s", create.delta.wall.as_secs_f64()),
                self.error.is_none() && create.delta.wall <= Duration::from_secs(60),
            );
        }
        if let Some(peak) = self.peak_rss {
            verdict(
                &mut out,
                "peak RSS < 2 GiB",
                mib(Some(peak)),
                peak < 2 << 30,
            );
        }
        if let Some(delete) = &self.delete {
            verdict(
                &mut out,
                "all deleted within 60 s",
                format!("{:.1} s", delete.delta.wall.as_secs_f64()),
                self.error.is_none() && delete.delta.wall <= Duration::from_secs(60),
            );
        }
        if let Some(idle) = &self.idle {
            let cores = idle.cores().unwrap_or(f64::NAN);
            verdict(
                &mut out,
                "idle < 5% of one core",
                format!(
                    "{:.1}% ({:.2} CPU s over {:.0} s)",
                    cores * 100.0,
                    idle.delta.cpu.unwrap_or_default().as_secs_f64(),
                    idle.delta.wall.as_secs_f64()
                ),
                cores < 0.05,
            );
        }
        if config.clusters != 1000 || config.control_plane_machines != 1 || config.workers != 3 {
            let _ = writeln!(
                out,
                "\n(The targets are stated for 1,000 clusters × (1 + 3); this run is smaller or different.)"
            );
        }
        if !self.leftovers.is_empty() {
            let _ = writeln!(
                out,
                "\nLeft after the deletion: {}",
                self.leftovers.join(", ")
            );
        }
        if let Some(error) = &self.error {
            let _ = writeln!(out, "\n**The run stopped early**: {error}");
        }
        out
    }
}

impl RolloutReport {
    pub fn new(config: RolloutConfig, data: String) -> RolloutReport {
        RolloutReport {
            config,
            environment: environment(data),
            scale_up: None,
            rollout: None,
            max_existing: 0,
            max_not_deleting: 0,
            worst: Vec::new(),
            peak_rss: None,
            error: None,
        }
    }

    /// maxSurge as a number of Machines (a percentage rounds up, as upstream).
    pub fn surge(&self) -> usize {
        let replicas = self.config.replicas;
        match self.config.max_surge.strip_suffix('%') {
            Some(percent) => {
                let percent: usize = percent.parse().unwrap_or(0);
                (replicas * percent).div_ceil(100)
            }
            None => self.config.max_surge.parse().unwrap_or(0),
        }
    }

    pub fn markdown(&self) -> String {
        let config = &self.config;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "## Rollout: a MachineDeployment of {} replicas, maxSurge {}, maxUnavailable {}\n",
            config.replicas, config.max_surge, config.max_unavailable
        );
        for line in &self.environment {
            let _ = writeln!(out, "- {line}");
        }
        let _ = writeln!(out, "- load average at end {}", end_load());
        let _ = writeln!(
            out,
            "- controller concurrency {}; peak RSS {}",
            config.controllers.concurrency,
            mib(self.peak_rss)
        );
        let bound = config.replicas + self.surge();
        let _ = writeln!(
            out,
            "- during the rollout, at most {} Machines existed at once, {} of them not being deleted (bound: replicas + maxSurge = {bound})\n",
            self.max_existing, self.max_not_deleting
        );
        if self.max_not_deleting > bound {
            let per_set: Vec<String> = self
                .worst
                .iter()
                .map(|(name, count)| format!("{name}: {count}"))
                .collect();
            let _ = writeln!(
                out,
                "- over the bound; Machines not being deleted per MachineSet then: {}\n",
                per_set.join(", ")
            );
        }
        let phases = [
            ("scale-up → all Running", &self.scale_up),
            ("rollout → all up to date and available", &self.rollout),
        ];
        phase_table(&mut out, &phases);
        reconcile_table(&mut out, &phases);
        write_table(&mut out, &phases);
        let _ = writeln!(out, "### Against the targets\n");
        if let Some(rollout) = &self.rollout {
            verdict(
                &mut out,
                "rolled in < 60 s",
                format!("{:.1} s", rollout.delta.wall.as_secs_f64()),
                self.error.is_none() && rollout.delta.wall < Duration::from_secs(60),
            );
            verdict(
                &mut out,
                "never above replicas + maxSurge Machines (not being deleted)",
                format!("{} / {bound}", self.max_not_deleting),
                self.max_not_deleting <= bound,
            );
        }
        if let Some(error) = &self.error {
            let _ = writeln!(out, "\n**The run stopped early**: {error}");
        }
        out
    }
}

fn verdict(out: &mut String, target: &str, measured: String, met: bool) {
    let _ = writeln!(
        out,
        "- {target}: {measured} — **{}**",
        if met { "met" } else { "not met" }
    );
}

fn mib(bytes: Option<u64>) -> String {
    match bytes {
        Some(bytes) => format!("{} MiB", bytes >> 20),
        None => "unknown".into(),
    }
}

type Phases<'a> = [(&'a str, &'a Option<PhaseResult>)];

fn phase_table(out: &mut String, phases: &Phases<'_>) {
    let _ = writeln!(
        out,
        "| phase | wall s | CPU s | cores busy | API writes | writes/s | reconciles | reconciles/s |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|");
    for (name, phase) in phases {
        let Some(phase) = phase else { continue };
        let delta = &phase.delta;
        let reconciles: u64 = delta.reconciles.values().map(|(count, _)| count).sum();
        let wall = delta.wall.as_secs_f64().max(1e-9);
        let _ = writeln!(
            out,
            "| {name} | {:.1} | {} | {} | {} | {:.0} | {reconciles} | {:.0} |",
            delta.wall.as_secs_f64(),
            delta
                .cpu
                .map(|cpu| format!("{:.1}", cpu.as_secs_f64()))
                .unwrap_or_else(|| "–".into()),
            phase
                .cores()
                .map(|cores| format!("{cores:.2}"))
                .unwrap_or_else(|| "–".into()),
            delta.total_writes(),
            phase.writes_per_second(),
            reconciles as f64 / wall
        );
    }
    let _ = writeln!(out);
}

fn reconcile_table(out: &mut String, phases: &Phases<'_>) {
    let measured: Vec<_> = phases
        .iter()
        .filter_map(|(name, phase)| Some((*name, phase.as_ref()?)))
        .collect();
    if measured.is_empty() {
        return;
    }
    let mut controllers: Vec<&String> = measured
        .iter()
        .flat_map(|(_, phase)| phase.delta.reconciles.keys())
        .collect();
    controllers.sort();
    controllers.dedup();
    let _ = write!(out, "| reconciles (failed) /s |");
    for (name, _) in &measured {
        let _ = write!(out, " {name} |");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "|---|{}", "--:|".repeat(measured.len()));
    for controller in controllers {
        let _ = write!(out, "| {controller} |");
        for (_, phase) in &measured {
            let (count, failed) = phase
                .delta
                .reconciles
                .get(controller)
                .copied()
                .unwrap_or((0, 0));
            let rate = count as f64 / phase.delta.wall.as_secs_f64().max(1e-9);
            let _ = write!(out, " {count} ({failed}) {rate:.0}/s |");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out);
}

fn write_table(out: &mut String, phases: &Phases<'_>) {
    let measured: Vec<_> = phases
        .iter()
        .filter_map(|(name, phase)| Some((*name, phase.as_ref()?)))
        .collect();
    let mut resources: Vec<&String> = measured
        .iter()
        .flat_map(|(_, phase)| phase.delta.writes.keys())
        .collect();
    resources.sort();
    resources.dedup();
    if resources.is_empty() {
        return;
    }
    let _ = write!(out, "| API writes by resource |");
    for (name, _) in &measured {
        let _ = write!(out, " {name} |");
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "|---|{}", "--:|".repeat(measured.len()));
    for resource in resources {
        let _ = write!(out, "| {resource} |");
        for (_, phase) in &measured {
            let count = phase.delta.writes.get(resource).copied().unwrap_or(0);
            let _ = write!(out, " {count} |");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out);
}
