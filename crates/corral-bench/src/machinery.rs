//! `corral-bench machinery`: what the API machinery costs on top of a plain write, on the
//! SQLite store, in one run: creates of custom resources with a structural schema (pruning,
//! defaults, validation, CEL rules) against the same bodies under a CRD without a schema;
//! garbage collection of an ownership tree (background and foreground); and server-side
//! apply against plain creates and merge patches.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use corral_apiserver::{Server, ServerConfig};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::client::{Http, query_value};
use crate::cpu::{self, CpuUse};
use crate::load::{Measured, closed_loop};
use crate::objects::{self, ListPage};
use crate::stats::{Summary, format_ms, format_rate, micros};

/// The namespace of the custom resources and of the apply run.
pub const NAMESPACE: &str = "bench-machinery";
const GROUP: &str = "bench.corral.dev";

/// What to run, and how big.
#[derive(Clone, Debug)]
pub struct MachineryConfig {
    pub duration: Duration,
    pub warmup: Duration,
    /// Concurrent clients of the create runs.
    pub concurrencies: Vec<usize>,
    /// Interleaved rounds of the create and apply runs; the median is reported.
    pub rounds: usize,
    /// The background tree: children of the root, and dependents of each child.
    pub gc_children: usize,
    pub gc_grandchildren: usize,
    /// The foreground tree.
    pub fg_children: usize,
    pub fg_grandchildren: usize,
    /// Concurrent clients creating the trees.
    pub fill_clients: usize,
    /// Objects of each apply, create, re-apply and patch run.
    pub apply_objects: usize,
    pub apply_clients: usize,
    /// Size of the filler in every object.
    pub value_bytes: usize,
    pub data_root: Option<PathBuf>,
    /// Give up waiting for the collector after this long.
    pub gc_timeout: Duration,
}

impl MachineryConfig {
    pub fn standard(duration: Duration) -> MachineryConfig {
        MachineryConfig {
            duration,
            warmup: (duration / 4).min(Duration::from_millis(500)),
            concurrencies: vec![16, 64],
            rounds: 3,
            gc_children: 100,
            gc_grandchildren: 99,
            fg_children: 10,
            fg_grandchildren: 99,
            fill_clients: 32,
            apply_objects: 2_000,
            apply_clients: 16,
            value_bytes: 1024,
            data_root: None,
            gc_timeout: Duration::from_secs(600),
        }
    }

    pub fn quick() -> MachineryConfig {
        MachineryConfig {
            duration: Duration::from_millis(300),
            warmup: Duration::from_millis(50),
            rounds: 1,
            gc_children: 10,
            gc_grandchildren: 9,
            fg_children: 5,
            fg_grandchildren: 9,
            apply_objects: 200,
            ..MachineryConfig::standard(Duration::from_secs(1))
        }
    }
}

/// What a row measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineryOp {
    /// POST of a custom resource whose CRD preserves unknown fields, with no schema.
    CreateSchemaless,
    /// POST of the same body to the CRD with the structural schema and CEL rules.
    CreateValidated,
    /// POST of a ConfigMap (the apply run's yardstick).
    PostCreate,
    /// PATCH application/apply-patch+yaml of an object that does not exist yet.
    ApplyCreate,
    /// The same apply again: nothing changes.
    Reapply,
    /// A merge patch that sets what is already there.
    NoopMergePatch,
}

impl MachineryOp {
    pub fn label(self) -> &'static str {
        match self {
            MachineryOp::CreateSchemaless => "create CR, CRD without schema (preserve unknown)",
            MachineryOp::CreateValidated => "create CR, structural schema + defaults + 2 CEL rules",
            MachineryOp::PostCreate => "create ConfigMap (POST)",
            MachineryOp::ApplyCreate => "apply-create ConfigMap (PATCH apply-patch+yaml)",
            MachineryOp::Reapply => "re-apply, no change (PATCH apply-patch+yaml)",
            MachineryOp::NoopMergePatch => "no-op merge patch (PATCH merge-patch+json)",
        }
    }
}

#[derive(Clone, Debug)]
pub struct MachineryRow {
    pub op: MachineryOp,
    pub clients: usize,
    /// The median round (by rate).
    pub measured: Measured,
    pub round_rates: Vec<f64>,
}

/// One garbage collection.
#[derive(Clone, Debug)]
pub struct GcRun {
    pub policy: &'static str,
    pub dependents: usize,
    /// Creating the tree, through HTTP.
    pub fill: Measured,
    /// From the delete's answer until the first level is gone.
    pub children_gone: Duration,
    /// Until every dependent is gone.
    pub dependents_gone: Duration,
    /// Until the root is gone (foreground: it goes last).
    pub root_gone: Duration,
    /// CPU of this process from the delete until the last dependent was gone.
    pub cpu: CpuUse,
}

#[derive(Clone, Debug)]
pub struct MachineryReport {
    pub config: MachineryConfig,
    pub environment: Vec<String>,
    pub rows: Vec<MachineryRow>,
    pub gc: Vec<GcRun>,
    pub notes: Vec<String>,
    pub wall: Duration,
    /// Per concurrency, validation's share of the validated create's CPU in each round,
    /// from the two create runs of that round (see [`validation_share`]).
    pub shares: Vec<(usize, Vec<f64>)>,
}

/// Validation's share of a validated create's CPU: (validated − schemaless) / validated, in
/// CPU µs per operation of two runs made one after the other. Pairing the runs of one round
/// keeps the machine's other tenants roughly the same for both sides, which picking each
/// row's median round separately does not.
pub fn validation_share(schemaless: &Measured, validated: &Measured) -> Option<f64> {
    let per_op = |m: &Measured| {
        let cpu = m.cpu.own?.as_secs_f64();
        (m.ops > 0).then(|| cpu / m.ops as f64)
    };
    let (l, v) = (per_op(schemaless)?, per_op(validated)?);
    (v > 0.0).then(|| (v - l) / v)
}

/// The median of `values` (the upper one of an even count) and their range.
fn median_and_range(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((
        *sorted.get(sorted.len() / 2)?,
        *sorted.first()?,
        *sorted.last()?,
    ))
}

/// The schema of the validated CRD: nested objects, enums, patterns, bounds, a list-type
/// map, defaults, and two CEL rules, one over a list with `all()` and `size()`.
pub fn validated_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["replicas", "mode", "ports"],
                "x-kubernetes-validations": [{
                    "rule": "!has(self.minReplicas) || self.minReplicas <= self.replicas",
                    "message": "minReplicas must not exceed replicas"
                }],
                "properties": {
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 1000},
                    "minReplicas": {"type": "integer", "minimum": 0, "default": 1},
                    "mode": {"type": "string", "enum": ["Fast", "Safe", "Balanced"]},
                    "paused": {"type": "boolean", "default": false},
                    "owner": {
                        "type": "string",
                        "pattern": "^[a-z0-9._-]+@[a-z0-9.-]+\\.[a-z]{2,}$"
                    },
                    "description": {"type": "string", "maxLength": 4096},
                    "strategy": {
                        "type": "object",
                        "properties": {
                            "type": {
                                "type": "string",
                                "enum": ["RollingUpdate", "Recreate"],
                                "default": "RollingUpdate"
                            },
                            "maxSurge": {"type": "integer", "minimum": 0, "maximum": 100}
                        }
                    },
                    "template": {
                        "type": "object",
                        "properties": {
                            "labels": {
                                "type": "object",
                                "additionalProperties": {"type": "string", "maxLength": 63}
                            },
                            "image": {
                                "type": "string",
                                "pattern": "^[a-z0-9./-]+(:[a-zA-Z0-9._-]+)?$"
                            },
                            "resources": {
                                "type": "object",
                                "properties": {
                                    "cpuMillis": {"type": "integer", "minimum": 1, "maximum": 64000},
                                    "memoryMiB": {"type": "integer", "minimum": 1, "maximum": 1048576}
                                }
                            },
                            "env": {
                                "type": "array",
                                "maxItems": 32,
                                "items": {
                                    "type": "object",
                                    "required": ["name"],
                                    "properties": {
                                        "name": {"type": "string", "pattern": "^[A-Z_][A-Z0-9_]*$"},
                                        "value": {"type": "string", "maxLength": 256}
                                    }
                                }
                            }
                        }
                    },
                    "ports": {
                        "type": "array",
                        "maxItems": 16,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "x-kubernetes-validations": [{
                            "rule": "size(self) <= 16 && self.all(p, p.port >= 1024 || p.protocol == 'TCP')",
                            "message": "privileged ports must be TCP"
                        }],
                        "items": {
                            "type": "object",
                            "required": ["name", "port"],
                            "properties": {
                                "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "maxLength": 15},
                                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                "protocol": {
                                    "type": "string",
                                    "enum": ["TCP", "UDP", "SCTP"],
                                    "default": "TCP"
                                }
                            }
                        }
                    }
                }
            },
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string", "enum": ["Pending", "Ready"]}}
            }
        }
    })
}

fn crd(plural: &str, kind: &str, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": plural.trim_end_matches('s'),
                "kind": kind
            },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema}
            }]
        }
    })
}

/// The two CRDs: (plural, kind).
const SCHEMALESS: (&str, &str) = ("loosewidgets", "LooseWidget");
const VALIDATED: (&str, &str) = ("widgets", "Widget");

fn cr_collection(plural: &str) -> String {
    format!("/apis/{GROUP}/v1/namespaces/{NAMESPACE}/{plural}")
}

/// The `spec` of every custom resource (the same for both CRDs), its description padded so
/// that the whole body is about `bytes` long.
pub fn widget_spec(bytes: usize) -> Value {
    let mut spec = json!({
        "replicas": 3,
        "mode": "Fast",
        "owner": "team-a@example.com",
        "description": "",
        "strategy": {"maxSurge": 25},
        "template": {
            "labels": {"app": "widget", "tier": "backend", "track": "stable", "team": "a"},
            "image": "registry.example.com/widgets/server:v1.2.3",
            "resources": {"cpuMillis": 500, "memoryMiB": 256},
            "env": [
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "MODE", "value": "fast"},
                {"name": "REGION", "value": "eu-west-1"},
                {"name": "FEATURE_X", "value": "true"}
            ]
        },
        "ports": [
            {"name": "http", "port": 8080},
            {"name": "https", "port": 443, "protocol": "TCP"},
            {"name": "metrics", "port": 9090},
            {"name": "dns", "port": 5353, "protocol": "UDP"}
        ]
    });
    let base = serde_json::to_vec(&json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "LooseWidget",
        "metadata": {"name": "w-r000-c00-000000"}, "spec": spec
    }))
    .map_or(0, |b| b.len());
    spec["description"] = Value::String(objects::payload(bytes.saturating_sub(base).max(16)));
    spec
}

fn widget(kind: &str, name: &str, spec: &Value) -> Bytes {
    let object = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    });
    Bytes::from(serde_json::to_vec(&object).expect("JSON values serialize"))
}

/// The benchmark target `machinery`: see the module docs.
pub async fn run(config: &MachineryConfig) -> anyhow::Result<MachineryReport> {
    let wall = Instant::now();
    let mut report = MachineryReport {
        config: config.clone(),
        environment: crate::machine(),
        rows: Vec::new(),
        gc: Vec::new(),
        notes: Vec::new(),
        wall: Duration::ZERO,
        shares: Vec::new(),
    };
    let root = config
        .data_root
        .clone()
        .unwrap_or_else(crate::env::default_data_root);
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("corral-bench-machinery-")
        .tempdir_in(&root)
        .with_context(|| format!("creating a data dir under {}", root.display()))?;
    report.environment.push(format!(
        "data: {}; SQLite store, crate defaults (WAL, group commit, pipelined fsyncs)",
        crate::env::describe_dir(dir.path())
    ));
    let store = corral_store::sqlite::SqliteStore::open(&dir.path().join("corral.db"))
        .context("opening the SQLite store")?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let server = Server::start(listener, Arc::new(store), ServerConfig::default())
        .await
        .context("starting the API server")?;
    let http = Http::new(&server.url());
    let outcome = measure(&http, config, &mut report).await;
    drop(http);
    let _ = tokio::time::timeout(Duration::from_secs(10), server.shutdown()).await;
    drop(dir);
    outcome?;
    report.wall = wall.elapsed();
    report.environment.push(format!(
        "load average at the end: {}",
        crate::load_average()
    ));
    Ok(report)
}

/// The machinery run: the two CRDs, the create and apply rounds, the two garbage
/// collections, then a note per row with errors.
async fn measure(
    http: &Http,
    config: &MachineryConfig,
    report: &mut MachineryReport,
) -> anyhow::Result<()> {
    let spec = install_crds(http, config, report).await?;
    create_rounds(http, config, &spec, report).await?;

    let blob: Arc<str> = objects::payload(config.value_bytes).into();
    let background = gc_tree(
        http,
        "gc-background",
        "Background",
        config.gc_children,
        config.gc_grandchildren,
        &blob,
        config,
    )
    .await
    .context("the background garbage collection")?;
    report.gc.push(background);
    let foreground = gc_tree(
        http,
        "gc-foreground",
        "Foreground",
        config.fg_children,
        config.fg_grandchildren,
        &blob,
        config,
    )
    .await
    .context("the foreground garbage collection")?;
    report.gc.push(foreground);
    for row in &report.rows {
        if let Some(error) = &row.measured.first_error {
            report.notes.push(format!(
                "{} with {} clients: {} errors, the first: {error}",
                row.op.label(),
                row.clients,
                row.measured.errors
            ));
        }
    }
    Ok(())
}

/// Creates the namespace and the schemaless and validated CRDs, waits until both are served,
/// and checks with one create that the benchmark's body is valid and defaulted; the spec of
/// the custom resources.
async fn install_crds(
    http: &Http,
    config: &MachineryConfig,
    report: &mut MachineryReport,
) -> anyhow::Result<Arc<Value>> {
    http.expect(
        Method::POST,
        "/api/v1/namespaces",
        Some(objects::namespace(NAMESPACE)),
        StatusCode::CREATED,
    )
    .await?;
    for (plural, kind, schema) in [
        (
            SCHEMALESS.0,
            SCHEMALESS.1,
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        ),
        (VALIDATED.0, VALIDATED.1, validated_schema()),
    ] {
        let body = serde_json::to_vec(&crd(plural, kind, schema))?;
        http.expect(
            Method::POST,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some(Bytes::from(body)),
            StatusCode::CREATED,
        )
        .await
        .with_context(|| format!("creating the CRD of {plural}"))?;
        wait_until_served(http, &cr_collection(plural)).await?;
    }
    // The body must be valid: one create, checked, and its defaults seen.
    let spec = Arc::new(widget_spec(config.value_bytes));
    let answer = http
        .expect(
            Method::POST,
            &cr_collection(VALIDATED.0),
            Some(widget(VALIDATED.1, "probe", &spec)),
            StatusCode::CREATED,
        )
        .await
        .context("the validated CRD refuses the benchmark's body")?;
    let created: Value = serde_json::from_slice(&answer)?;
    if created["spec"]["minReplicas"] != json!(1)
        || created["spec"]["ports"][0]["protocol"] != "TCP"
    {
        bail!("the validated CRD did not apply its defaults: {created}");
    }
    report.notes.push(format!(
        "custom resource body: {} B as sent (same spec for both CRDs).",
        widget(VALIDATED.1, "w-r000-c00-000000", &spec).len()
    ));
    Ok(spec)
}

/// The create rounds on both CRDs (alternating which goes first) with validation's share of
/// the CPU at each concurrency, and the apply rounds; each row reports its median round.
async fn create_rounds(
    http: &Http,
    config: &MachineryConfig,
    spec: &Arc<Value>,
    report: &mut MachineryReport,
) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for round in 0..config.rounds.max(1) {
        for &clients in &config.concurrencies {
            // Odd rounds run the validated creates first, so that neither side always runs
            // on the fuller store.
            let mut pair = [
                (MachineryOp::CreateSchemaless, SCHEMALESS),
                (MachineryOp::CreateValidated, VALIDATED),
            ];
            if round % 2 == 1 {
                pair.reverse();
            }
            let mut measured_pair = Vec::new();
            for (op, (plural, kind)) in pair {
                let measured = cr_creates(http, plural, kind, spec, round, clients, config).await;
                progress(op, clients, &measured);
                measured_pair.push((op, measured.clone()));
                rows.push((op, clients, measured));
            }
            let of = |wanted| {
                measured_pair
                    .iter()
                    .find(|(op, _)| *op == wanted)
                    .map(|p| &p.1)
            };
            if let (Some(l), Some(v)) = (
                of(MachineryOp::CreateSchemaless),
                of(MachineryOp::CreateValidated),
            ) && let Some(share) = validation_share(l, v)
            {
                eprintln!(
                    "validation's share of the validated create's CPU at {clients} clients: {:.0}%",
                    share * 100.0
                );
                match report.shares.iter_mut().find(|(c, _)| *c == clients) {
                    Some((_, shares)) => shares.push(share),
                    None => report.shares.push((clients, vec![share])),
                }
            }
        }
        for (op, measured) in apply_round(http, round, config).await? {
            progress(op, config.apply_clients, &measured);
            rows.push((op, config.apply_clients, measured));
        }
    }
    report.rows = median_rows(rows);
    Ok(())
}

fn progress(op: MachineryOp, clients: usize, measured: &Measured) {
    eprintln!(
        "{:<56} {:>3} clients: {:>9} ops/s  p50 {:>7} ms  CPU {:>5} µs/op{}",
        op.label(),
        clients,
        format_rate(measured.rate()),
        format_ms(measured.latency.p50),
        CpuUse::per_op(measured.cpu.own, measured.ops),
        if measured.errors > 0 {
            format!("  {} errors", measured.errors)
        } else {
            String::new()
        }
    );
}

fn median_rows(rows: Vec<(MachineryOp, usize, Measured)>) -> Vec<MachineryRow> {
    let mut groups: Vec<(MachineryOp, usize, Vec<Measured>)> = Vec::new();
    for (op, clients, measured) in rows {
        match groups.iter_mut().find(|g| g.0 == op && g.1 == clients) {
            Some(group) => group.2.push(measured),
            None => groups.push((op, clients, vec![measured])),
        }
    }
    groups
        .into_iter()
        .map(|(op, clients, mut rounds)| {
            let round_rates = rounds.iter().map(Measured::rate).collect();
            rounds.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
            let measured = rounds.swap_remove(rounds.len() / 2);
            MachineryRow {
                op,
                clients,
                measured,
                round_rates,
            }
        })
        .collect()
}

async fn wait_until_served(http: &Http, collection: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = http
            .send(Method::GET, &format!("{collection}?limit=1"), None)
            .await?;
        if status == StatusCode::OK {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{collection} not served after 30 s: {status}: {}",
                crate::client::snippet(&body)
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Closed-loop POSTs of custom resources, every body the same but for its name.
async fn cr_creates(
    http: &Http,
    plural: &str,
    kind: &'static str,
    spec: &Arc<Value>,
    round: usize,
    clients: usize,
    config: &MachineryConfig,
) -> Measured {
    let path: Arc<str> = cr_collection(plural).into();
    let states = (0..clients)
        .map(|client| {
            (
                http.clone(),
                format!("w-r{round:03}-c{clients}-{client}-"),
                0_u64,
            )
        })
        .collect();
    let spec = spec.clone();
    closed_loop(
        states,
        config.warmup,
        config.duration,
        move |(http, prefix, n)| {
            let path = path.clone();
            let spec = spec.clone();
            async move {
                let body = widget(kind, &format!("{prefix}{n}"), &spec);
                let outcome = http
                    .expect(Method::POST, &path, Some(body), StatusCode::CREATED)
                    .await
                    .map(drop);
                ((http, prefix, n + 1), outcome)
            }
        },
    )
    .await
}

/// `count` operations by `clients` concurrent clients, each taking the next index; latencies
/// and CPU measured over the whole batch.
async fn batch<F, Fut>(count: usize, clients: usize, op: F) -> Measured
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let cpu_before = cpu::snapshot();
    let tasks: Vec<_> = (0..clients.max(1))
        .map(|_| {
            let (op, next) = (op.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = 0_u64;
                let mut first_error = None;
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        break;
                    }
                    let begin = Instant::now();
                    match op(index).await {
                        Ok(()) => latencies.push(micros(begin.elapsed())),
                        Err(error) => {
                            errors += 1;
                            first_error.get_or_insert_with(|| format!("{error:#}"));
                        }
                    }
                }
                (latencies, errors, first_error)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    for task in tasks {
        match task.await {
            Ok((latencies, task_errors, task_error)) => {
                all.extend(latencies);
                errors += task_errors;
                if first_error.is_none() {
                    first_error = task_error;
                }
            }
            Err(panic) => {
                errors += 1;
                first_error.get_or_insert_with(|| format!("a client panicked: {panic}"));
            }
        }
    }
    Measured {
        ops: all.len() as u64,
        errors,
        seconds: started.elapsed().as_secs_f64(),
        latency: Summary::of_micros(all),
        first_error,
        cpu: cpu_before.until(&cpu::snapshot()),
    }
}

/// One round of the apply run: POST creates of `apply_objects` ConfigMaps, apply-creates of
/// as many others with the same content, then re-applies of the applied ones and no-op merge
/// patches of the POSTed ones.
async fn apply_round(
    http: &Http,
    round: usize,
    config: &MachineryConfig,
) -> anyhow::Result<Vec<(MachineryOp, Measured)>> {
    let blob: Arc<str> = objects::payload(config.value_bytes).into();
    let count = config.apply_objects;
    let clients = config.apply_clients;
    let posted = move |i: usize| format!("post-r{round:03}-{i:06}");
    let applied = move |i: usize| format!("apply-r{round:03}-{i:06}");
    let collection: Arc<str> = objects::collection_path(NAMESPACE).into();
    let mut out = Vec::new();

    let (h, b, c) = (http.clone(), blob.clone(), collection.clone());
    let creates = batch(count, clients, move |i| {
        let (http, blob, path) = (h.clone(), b.clone(), c.clone());
        async move {
            let body = objects::configmap(&posted(i), &blob, None, &[]);
            http.expect(Method::POST, &path, Some(body), StatusCode::CREATED)
                .await
                .map(drop)
        }
    })
    .await;
    out.push((MachineryOp::PostCreate, creates));

    let apply = |expected: StatusCode| {
        let (h, b) = (http.clone(), blob.clone());
        move |i: usize| {
            let (http, blob) = (h.clone(), b.clone());
            async move {
                let name = applied(i);
                let path = format!(
                    "{}?fieldManager=bench",
                    objects::object_path(NAMESPACE, &name)
                );
                let body = objects::configmap(&name, &blob, None, &[]);
                http.expect_typed(
                    Method::PATCH,
                    &path,
                    body,
                    "application/apply-patch+yaml",
                    expected,
                )
                .await
                .map(drop)
            }
        }
    };
    out.push((
        MachineryOp::ApplyCreate,
        batch(count, clients, apply(StatusCode::CREATED)).await,
    ));
    out.push((
        MachineryOp::Reapply,
        batch(count, clients, apply(StatusCode::OK)).await,
    ));

    let (h, b) = (http.clone(), blob.clone());
    let patches = batch(count, clients, move |i| {
        let (http, blob) = (h.clone(), b.clone());
        async move {
            let path = objects::object_path(NAMESPACE, &posted(i));
            let body = Bytes::from(serde_json::to_vec(&json!({"data": {"blob": &*blob}}))?);
            http.expect_typed(
                Method::PATCH,
                &path,
                body,
                "application/merge-patch+json",
                StatusCode::OK,
            )
            .await
            .map(drop)
        }
    })
    .await;
    out.push((MachineryOp::NoopMergePatch, patches));
    Ok(out)
}

#[derive(serde::Deserialize)]
struct Created {
    metadata: CreatedMeta,
}

#[derive(serde::Deserialize)]
struct CreatedMeta {
    uid: String,
}

fn owned_configmap(
    name: &str,
    blob: &str,
    level: &str,
    tree: &str,
    owner: &(String, String),
) -> Bytes {
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": {"tree": tree, "level": level},
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap",
                "name": owner.0, "uid": owner.1
            }]
        },
        "data": {"blob": blob},
    });
    Bytes::from(serde_json::to_vec(&object).expect("JSON values serialize"))
}

/// Builds a tree (root → `children` → `grandchildren` each) in its own namespace, deletes the
/// root with `policy`, and times the collection.
async fn gc_tree(
    http: &Http,
    namespace: &'static str,
    policy: &'static str,
    children: usize,
    grandchildren: usize,
    blob: &Arc<str>,
    config: &MachineryConfig,
) -> anyhow::Result<GcRun> {
    let collection: Arc<str> = objects::collection_path(namespace).into();
    let fill = create_tree(
        http,
        namespace,
        &collection,
        (children, grandchildren),
        blob,
        config,
    )
    .await?;
    let dependents = children + children * grandchildren;
    eprintln!(
        "gc {policy}: tree of {dependents} dependents created at {}/s",
        format_rate(fill.rate())
    );
    // Let the collector's index catch up with the creates before the clock starts.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let run = time_collection(
        http,
        namespace,
        &collection,
        policy,
        fill,
        dependents,
        config,
    )
    .await?;
    eprintln!(
        "gc {policy}: {} dependents gone after {} ms (first level {} ms, root {} ms)",
        dependents,
        format_ms(run.dependents_gone),
        format_ms(run.children_gone),
        format_ms(run.root_gone)
    );
    Ok(run)
}

/// Creates the namespace and the tree in it: the root, its children, then each child's
/// grandchildren, owned through ownerReferences; how fast the dependents were created.
async fn create_tree(
    http: &Http,
    namespace: &'static str,
    collection: &Arc<str>,
    (children, grandchildren): (usize, usize),
    blob: &Arc<str>,
    config: &MachineryConfig,
) -> anyhow::Result<Measured> {
    http.expect(
        Method::POST,
        "/api/v1/namespaces",
        Some(objects::namespace(namespace)),
        StatusCode::CREATED,
    )
    .await?;
    let answer = http
        .expect(
            Method::POST,
            collection,
            Some(objects::configmap("root", blob, None, &[])),
            StatusCode::CREATED,
        )
        .await?;
    let root: Created = serde_json::from_slice(&answer)?;
    let root = Arc::new(("root".to_string(), root.metadata.uid));

    // The children, keeping their uids for the grandchildren's ownerReferences.
    let uids = Arc::new(std::sync::Mutex::new(vec![String::new(); children]));
    let (h, b, c, r, u) = (
        http.clone(),
        blob.clone(),
        collection.clone(),
        root.clone(),
        uids.clone(),
    );
    let level1 = batch(children, config.fill_clients, move |i| {
        let (http, blob, path, root, uids) =
            (h.clone(), b.clone(), c.clone(), r.clone(), u.clone());
        async move {
            let body = owned_configmap(&format!("child-{i:04}"), &blob, "1", namespace, &root);
            let answer = http
                .expect(Method::POST, &path, Some(body), StatusCode::CREATED)
                .await?;
            let created: Created = serde_json::from_slice(&answer)?;
            uids.lock().expect("not poisoned")[i] = created.metadata.uid;
            Ok(())
        }
    })
    .await;
    if level1.errors > 0 {
        bail!("creating the children: {:?}", level1.first_error);
    }
    let owners: Arc<Vec<(String, String)>> = Arc::new(
        uids.lock()
            .expect("not poisoned")
            .iter()
            .enumerate()
            .map(|(i, uid)| (format!("child-{i:04}"), uid.clone()))
            .collect(),
    );
    let (h, b, c, o) = (
        http.clone(),
        blob.clone(),
        collection.clone(),
        owners.clone(),
    );
    let level2 = batch(children * grandchildren, config.fill_clients, move |i| {
        let (http, blob, path, owners) = (h.clone(), b.clone(), c.clone(), o.clone());
        async move {
            let owner = &owners[i / grandchildren];
            let name = format!("{}-{:04}", owner.0, i % grandchildren);
            let body = owned_configmap(&name, &blob, "2", namespace, owner);
            http.expect(Method::POST, &path, Some(body), StatusCode::CREATED)
                .await
                .map(drop)
        }
    })
    .await;
    if level2.errors > 0 {
        bail!("creating the grandchildren: {:?}", level2.first_error);
    }
    Ok(Measured {
        ops: (level1.ops + level2.ops),
        errors: 0,
        seconds: level1.seconds + level2.seconds,
        latency: Summary::default(),
        first_error: None,
        cpu: CpuUse {
            own: level1.cpu.own.zip(level2.cpu.own).map(|(a, b)| a + b),
            etcd: None,
        },
    })
}

/// Deletes the root with `policy` and polls until the first level, every dependent and the
/// root are gone: the run's times and this process's CPU over them.
async fn time_collection(
    http: &Http,
    namespace: &'static str,
    collection: &str,
    policy: &'static str,
    fill: Measured,
    dependents: usize,
    config: &MachineryConfig,
) -> anyhow::Result<GcRun> {
    let level_path = |level: &str| {
        format!(
            "{collection}?limit=1&labelSelector={}",
            query_value(&format!("tree={namespace},level={level}"))
        )
    };
    for level in ["1", "2"] {
        if empty(http, &level_path(level)).await? {
            bail!("the list of level {level} finds nothing before the delete");
        }
    }
    let root_path = objects::object_path(namespace, "root");
    let delete = Bytes::from(serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy
    }))?);
    let cpu_before = cpu::snapshot();
    let started = Instant::now();
    let (status, answer) = http.send(Method::DELETE, &root_path, Some(delete)).await?;
    if !status.is_success() {
        bail!(
            "deleting the root: {status}: {}",
            crate::client::snippet(&answer)
        );
    }
    let deadline = started + config.gc_timeout;
    let (mut children_gone, mut dependents_gone, mut root_gone) = (None, None, None);
    while children_gone.is_none() || dependents_gone.is_none() || root_gone.is_none() {
        if Instant::now() > deadline {
            bail!(
                "{policy} collection of {dependents} dependents not finished after {:?}",
                config.gc_timeout
            );
        }
        if root_gone.is_none() {
            let (status, _) = http.send(Method::GET, &root_path, None).await?;
            if status == StatusCode::NOT_FOUND {
                root_gone = Some(started.elapsed());
            }
        }
        if children_gone.is_none() && empty(http, &level_path("1")).await? {
            children_gone = Some(started.elapsed());
        }
        if dependents_gone.is_none() && empty(http, &level_path("2")).await? {
            dependents_gone = Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cpu = cpu_before.until(&cpu::snapshot());
    Ok(GcRun {
        policy,
        dependents,
        fill,
        children_gone: children_gone.unwrap_or_default(),
        dependents_gone: dependents_gone
            .unwrap_or_default()
            .max(children_gone.unwrap_or_default()),
        root_gone: root_gone.unwrap_or_default(),
        cpu,
    })
}

async fn empty(http: &Http, path: &str) -> anyhow::Result<bool> {
    let answer = http.expect(Method::GET, path, None, StatusCode::OK).await?;
    let page: ListPage = serde_json::from_slice(&answer)?;
    Ok(page.items.is_empty())
}

impl MachineryReport {
    pub fn find(&self, op: MachineryOp, clients: usize) -> Option<&MachineryRow> {
        self.rows
            .iter()
            .find(|row| row.op == op && row.clients == clients)
    }

    fn cpu_per_op(row: &MachineryRow) -> Option<f64> {
        let ops = row.measured.ops;
        (ops > 0).then(|| {
            row.measured
                .cpu
                .own
                .map(|t| t.as_secs_f64() * 1e6 / ops as f64)
        })?
    }

    /// The comparisons the benchmark exists for.
    pub fn ratios(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (clients, shares) in &self.shares {
            if let Some((median, min, max)) = median_and_range(shares) {
                lines.push(format!(
                    "creates@{clients}: validation's share of the validated create's CPU, paired \
                     per round: median **{:.0}%** (range {:.0}–{:.0}% over {} rounds) — target < 20%: **{}**",
                    median * 100.0,
                    min * 100.0,
                    max * 100.0,
                    shares.len(),
                    if median < 0.20 { "met" } else { "not met" }
                ));
            }
        }
        for &clients in &self.config.concurrencies {
            let (Some(loose), Some(validated)) = (
                self.find(MachineryOp::CreateSchemaless, clients),
                self.find(MachineryOp::CreateValidated, clients),
            ) else {
                continue;
            };
            let (loose_rate, validated_rate) = (loose.measured.rate(), validated.measured.rate());
            if loose_rate > 0.0 {
                let share = 1.0 - validated_rate / loose_rate;
                lines.push(format!(
                    "creates@{clients}: validated / schemaless = {} / {} = **{:.2}x**; \
                     validation's share of the create path by rate = {:.0}% — target < 20%: **{}**",
                    format_rate(validated_rate),
                    format_rate(loose_rate),
                    validated_rate / loose_rate,
                    share * 100.0,
                    if share < 0.20 { "met" } else { "not met" }
                ));
            }
            if let (Some(l), Some(v)) = (Self::cpu_per_op(loose), Self::cpu_per_op(validated))
                && v > 0.0
            {
                let share = (v - l) / v;
                lines.push(format!(
                    "creates@{clients}: CPU {v:.0} µs/op validated vs {l:.0} µs/op schemaless: \
                     validation = {:.0} µs = {:.0}% of the validated create's CPU — target < 20%: **{}**",
                    v - l,
                    share * 100.0,
                    if share < 0.20 { "met" } else { "not met" }
                ));
            }
        }
        let at = self.config.apply_clients;
        for (a, b) in [
            (MachineryOp::ApplyCreate, MachineryOp::PostCreate),
            (MachineryOp::Reapply, MachineryOp::NoopMergePatch),
        ] {
            if let (Some(a), Some(b)) = (self.find(a, at), self.find(b, at)) {
                let (ca, cb) = (Self::cpu_per_op(a), Self::cpu_per_op(b));
                let cpu = match (ca, cb) {
                    (Some(ca), Some(cb)) if cb > 0.0 => {
                        format!("; CPU {ca:.0} vs {cb:.0} µs/op = **{:.2}x**", ca / cb)
                    }
                    _ => String::new(),
                };
                let rate = if a.measured.rate() > 0.0 {
                    b.measured.rate() / a.measured.rate()
                } else {
                    0.0
                };
                lines.push(format!(
                    "{} vs {} @{at}: {:.0} vs {:.0} µs/op of wall time per client \
                     (p50 {} vs {} ms) = **{rate:.2}x**{cpu}",
                    a.op.label(),
                    b.op.label(),
                    1e6 * at as f64 / a.measured.rate().max(f64::MIN_POSITIVE),
                    1e6 * at as f64 / b.measured.rate().max(f64::MIN_POSITIVE),
                    format_ms(a.measured.latency.p50),
                    format_ms(b.measured.latency.p50),
                ));
            }
        }
        for gc in &self.gc {
            lines.push(format!(
                "GC {}: {} dependents collected in {:.2} s ({}/s; CPU {} µs per object)",
                gc.policy,
                gc.dependents,
                gc.dependents_gone.max(gc.root_gone).as_secs_f64(),
                format_rate(gc.dependents as f64 / gc.dependents_gone.as_secs_f64().max(1e-9)),
                CpuUse::per_op(gc.cpu.own, gc.dependents as u64)
            ));
        }
        lines
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let config = &self.config;
        let _ = writeln!(out, "## Environment\n");
        for line in &self.environment {
            let _ = writeln!(out, "- {line}");
        }
        let _ = writeln!(
            out,
            "- run: creates {:.1} s per closed-loop measurement after {:.2} s of warm-up at \
             clients {:?}; apply run {} objects per operation with {} clients; {} interleaved \
             round(s), the median reported (range over rounds); whole run {:.0} s\n",
            config.duration.as_secs_f64(),
            config.warmup.as_secs_f64(),
            config.concurrencies,
            config.apply_objects,
            config.apply_clients,
            config.rounds,
            self.wall.as_secs_f64()
        );
        let _ = writeln!(out, "## Results\n");
        let _ = writeln!(
            out,
            "| operation | clients | ops/s (range over rounds) | p50 ms | p99 ms | CPU µs/op | samples | errors |"
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|");
        for row in &self.rows {
            let m = &row.measured;
            let rate = format_rate(m.rate());
            let rate = if row.round_rates.len() < 2 {
                rate
            } else {
                let min = row
                    .round_rates
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min);
                let max = row.round_rates.iter().copied().fold(0.0, f64::max);
                format!("{rate} ({}–{})", format_rate(min), format_rate(max))
            };
            let _ = writeln!(
                out,
                "| {} | {} | {rate} | {} | {} | {} | {} | {} |",
                row.op.label(),
                row.clients,
                format_ms(m.latency.p50),
                format_ms(m.latency.p99),
                CpuUse::per_op(m.cpu.own, m.ops),
                m.latency.samples,
                m.errors
            );
        }
        let _ = writeln!(out, "\n## Garbage collection\n");
        let _ = writeln!(
            out,
            "| policy | dependents | tree created (objects/s) | first level gone, ms | every dependent gone, ms | root gone, ms | CPU µs per dependent |"
        );
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|");
        for gc in &self.gc {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                gc.policy,
                gc.dependents,
                format_rate(gc.fill.rate()),
                format_ms(gc.children_gone),
                format_ms(gc.dependents_gone),
                format_ms(gc.root_gone),
                CpuUse::per_op(gc.cpu.own, gc.dependents as u64)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(ops: u64, cpu_ms: u64) -> Measured {
        Measured {
            ops,
            errors: 0,
            seconds: 1.0,
            latency: Default::default(),
            first_error: None,
            cpu: CpuUse {
                own: Some(Duration::from_millis(cpu_ms)),
                etcd: None,
            },
        }
    }

    #[test]
    fn validation_share_compares_cpu_per_operation_of_one_round() {
        // 200 µs vs 250 µs per create: validation is a fifth of the validated create.
        let share = validation_share(&run_of(1000, 200), &run_of(800, 200)).unwrap();
        assert!((share - 0.2).abs() < 1e-9, "{share}");
        assert_eq!(validation_share(&run_of(0, 200), &run_of(800, 200)), None);
        assert_eq!(
            median_and_range(&[0.3, 0.1, 0.2, 0.5]),
            Some((0.3, 0.1, 0.5))
        );
        assert_eq!(median_and_range(&[]), None);
    }
}
