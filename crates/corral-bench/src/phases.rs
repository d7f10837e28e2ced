//! The measured operations: HTTP creates, updates, gets, lists and watches against a running
//! server, store-level creates without HTTP, and raw etcd puts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use corral_store::DynStore;
use corral_store::etcd::pb::PutRequest;
use corral_store::etcd::pb::kv_client::KvClient;
use http::{Method, StatusCode};
use http_body_util::BodyExt;

use crate::Config;
use crate::client::{Http, query_value, snippet};
use crate::cpu::{self, CpuUse};
use crate::load::{Measured, closed_loop};
use crate::objects::{self, ListPage, Versioned, WatchLine};
use crate::stats::{Summary, micros};

/// A number for each closed-loop run, so that names from different rounds don't collide.
fn next_run() -> u64 {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    RUNS.fetch_add(1, Ordering::Relaxed)
}

/// POSTs of new ConfigMaps, each client naming its own.
pub async fn http_creates(http: &Http, clients: usize, config: &Config) -> Measured {
    let template = Arc::new(objects::ConfigMapTemplate::new(&objects::payload(
        config.value_bytes,
    )));
    let path: Arc<str> = objects::collection_path(objects::NAMESPACE).into();
    let run = next_run();
    let states = (0..clients)
        .map(|client| (http.clone(), format!("create-r{run}-{client}-"), 0_u64))
        .collect();
    closed_loop(
        states,
        config.warmup,
        config.duration,
        move |(http, prefix, n)| {
            let template = template.clone();
            let path = path.clone();
            async move {
                let body = template.body(&format!("{prefix}{n}"));
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

/// The object each client of the update and get runs works on.
fn own_object(clients: usize, client: usize) -> String {
    format!("own-c{clients}-{client}")
}

/// Creates the clients' own objects, for the update and get runs; returns their
/// resourceVersions.
pub async fn create_own_objects(
    http: &Http,
    clients: usize,
    config: &Config,
) -> anyhow::Result<Vec<String>> {
    let blob = objects::payload(config.value_bytes);
    let path = objects::collection_path(objects::NAMESPACE);
    let mut versions = Vec::with_capacity(clients);
    for client in 0..clients {
        let name = own_object(clients, client);
        let body = objects::configmap(&name, &blob, None, &[("seq", "0".into())]);
        let answer = match http.send(Method::POST, &path, Some(body)).await? {
            (StatusCode::CREATED, answer) => answer,
            // From an earlier run at this concurrency: take it as it is.
            (StatusCode::CONFLICT, _) => {
                http.expect(
                    Method::GET,
                    &objects::object_path(objects::NAMESPACE, &name),
                    None,
                    StatusCode::OK,
                )
                .await?
            }
            (status, answer) => bail!("creating {name}: {status}: {}", snippet(&answer)),
        };
        let object: Versioned = serde_json::from_slice(&answer)?;
        versions.push(object.metadata.resource_version);
    }
    Ok(versions)
}

/// PUTs with the resourceVersion of the client's last write (optimistic concurrency, as a
/// controller writes), each client to its own object, each write changing `data.seq`.
pub async fn http_updates(
    http: &Http,
    clients: usize,
    config: &Config,
) -> anyhow::Result<Measured> {
    let versions = create_own_objects(http, clients, config).await?;
    let blob: Arc<str> = objects::payload(config.value_bytes).into();
    let states = versions
        .into_iter()
        .enumerate()
        .map(|(client, version)| (http.clone(), own_object(clients, client), version, 1_u64))
        .collect();
    Ok(closed_loop(
        states,
        config.warmup,
        config.duration,
        move |(http, name, version, seq)| {
            let blob = blob.clone();
            async move {
                let path = objects::object_path(objects::NAMESPACE, &name);
                let body =
                    objects::configmap(&name, &blob, Some(&version), &[("seq", seq.to_string())]);
                let answer = http
                    .expect(Method::PUT, &path, Some(body), StatusCode::OK)
                    .await;
                let (version, outcome) = version_after(&http, &path, answer, version).await;
                ((http, name, version, seq + 1), outcome)
            }
        },
    )
    .await)
}

/// The resourceVersion a client's next write of its object at `path` carries after a write
/// answered `answer`: the written one, or after a failure the current one (so that one failure
/// does not make every later write a conflict; `version` if that cannot be read either).
async fn version_after(
    http: &Http,
    path: &str,
    answer: anyhow::Result<bytes::Bytes>,
    version: String,
) -> (String, anyhow::Result<()>) {
    let written = answer.and_then(|answer| {
        let object: Versioned = serde_json::from_slice(&answer)?;
        Ok(object.metadata.resource_version)
    });
    match written {
        Ok(version) => (version, Ok(())),
        Err(error) => {
            let current = async {
                let answer = http.expect(Method::GET, path, None, StatusCode::OK).await?;
                let object: Versioned = serde_json::from_slice(&answer)?;
                anyhow::Ok(object.metadata.resource_version)
            }
            .await
            .unwrap_or(version);
            (current, Err(error))
        }
    }
}

/// GETs of the client's own object (created by the update run at the same concurrency).
pub async fn http_gets(http: &Http, clients: usize, config: &Config) -> Measured {
    let states = (0..clients)
        .map(|client| {
            let path = objects::object_path(objects::NAMESPACE, &own_object(clients, client));
            (http.clone(), path)
        })
        .collect();
    closed_loop(
        states,
        config.warmup,
        config.duration,
        |(http, path): (Http, String)| async move {
            let outcome = http
                .expect(Method::GET, &path, None, StatusCode::OK)
                .await
                .map(drop);
            ((http, path), outcome)
        },
    )
    .await
}

/// `Store::create` of 1 KiB values straight on the store: what the HTTP path adds is the
/// difference to the HTTP creates.
pub async fn store_creates(store: &DynStore, clients: usize, config: &Config) -> Measured {
    let value = Bytes::from(objects::payload(config.value_bytes));
    let run = next_run();
    let states = (0..clients)
        .map(|client| {
            (
                store.clone(),
                format!("/bench-direct/r{run}/{client}/"),
                0_u64,
            )
        })
        .collect();
    closed_loop(
        states,
        config.warmup,
        config.duration,
        move |(store, prefix, n): (DynStore, String, u64)| {
            let value = value.clone();
            async move {
                let outcome = store
                    .create(&format!("{prefix}{n}"), value)
                    .await
                    .map(drop)
                    .map_err(anyhow::Error::from);
                ((store, prefix, n + 1), outcome)
            }
        },
    )
    .await
}

/// Plain etcd puts of 1 KiB values straight through etcd's gRPC KV service (the etcd store's
/// generated client, without the store), all clients multiplexed on one gRPC connection (as
/// the etcd store's own client is).
pub async fn raw_etcd_puts(
    client: &KvClient<tonic::transport::Channel>,
    clients: usize,
    config: &Config,
) -> Measured {
    let value = bytes::Bytes::from(objects::payload(config.value_bytes).into_bytes());
    let run = next_run();
    let states = (0..clients)
        .map(|client_index| {
            (
                client.clone(),
                format!("/bench-raw/r{run}/{client_index}/"),
                0_u64,
            )
        })
        .collect();
    closed_loop(
        states,
        config.warmup,
        config.duration,
        move |(mut kv, prefix, n): (KvClient<tonic::transport::Channel>, String, u64)| {
            let put = PutRequest {
                key: bytes::Bytes::from(format!("{prefix}{n}")),
                value: value.clone(),
                ..Default::default()
            };
            async move {
                let outcome = kv.put(put).await.map(drop).map_err(anyhow::Error::from);
                ((kv, prefix, n + 1), outcome)
            }
        },
    )
    .await
}

/// Creates `count` ConfigMaps in `namespace` with `clients` concurrent clients; measures the
/// rate (no latencies).
pub async fn fill(
    http: &Http,
    namespace: &str,
    count: usize,
    clients: usize,
    config: &Config,
) -> anyhow::Result<Measured> {
    let started = Instant::now();
    let cpu_before = cpu::snapshot();
    let next = Arc::new(AtomicUsize::new(0));
    let blob: Arc<str> = objects::payload(config.value_bytes).into();
    let path: Arc<str> = objects::collection_path(namespace).into();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (http, next, blob, path) = (http.clone(), next.clone(), blob.clone(), path.clone());
            tokio::spawn(async move {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        return anyhow::Ok(());
                    }
                    let body = objects::configmap(&format!("item-{index:06}"), &blob, None, &[]);
                    http.expect(Method::POST, &path, Some(body), StatusCode::CREATED)
                        .await?;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.context("a fill client panicked")??;
    }
    Ok(Measured {
        ops: count as u64,
        errors: 0,
        seconds: started.elapsed().as_secs_f64(),
        latency: Summary::default(),
        first_error: None,
        cpu: cpu_before.until(&cpu::snapshot()),
    })
}

/// What the list run measured.
pub struct Lists {
    /// One request for the whole collection, repeated.
    pub full: Measured,
    /// A walk through the collection in pages of `list_page`, repeated.
    pub walk: Measured,
    /// Every page request of the walks.
    pub page: Measured,
}

/// Lists the `list_objects` ConfigMaps of the list namespace: whole, then in pages. Each
/// answer is read completely and its items counted (which parses it); both are timed.
pub async fn lists(http: &Http, config: &Config) -> anyhow::Result<Lists> {
    let path = objects::collection_path(objects::LIST_NAMESPACE);
    let expected = config.list_objects;
    let enough = |started: Instant, done: usize| {
        (done >= 3 && started.elapsed() >= config.duration) || done >= 30
    };

    let mut full = Vec::new();
    let started = Instant::now();
    let cpu_before = cpu::snapshot();
    while !enough(started, full.len()) {
        let begin = Instant::now();
        let answer = http
            .expect(Method::GET, &path, None, StatusCode::OK)
            .await?;
        let page: ListPage = serde_json::from_slice(&answer)?;
        let took = begin.elapsed();
        if page.items.len() != expected {
            bail!(
                "a full list returned {} items, not {expected}",
                page.items.len()
            );
        }
        full.push(took);
    }
    let full_seconds = started.elapsed().as_secs_f64();
    let full_cpu = cpu_before.until(&cpu::snapshot());

    let mut walks = Vec::new();
    let mut pages = Vec::new();
    let started = Instant::now();
    let cpu_before = cpu::snapshot();
    while !enough(started, walks.len()) {
        let begin = Instant::now();
        let mut seen = 0;
        let mut continue_token: Option<String> = None;
        loop {
            let mut page_path = format!("{path}?limit={}", config.list_page);
            if let Some(token) = &continue_token {
                page_path.push_str(&format!("&continue={}", query_value(token)));
            }
            let page_begin = Instant::now();
            let answer = http
                .expect(Method::GET, &page_path, None, StatusCode::OK)
                .await?;
            let page: ListPage = serde_json::from_slice(&answer)?;
            pages.push(page_begin.elapsed());
            seen += page.items.len();
            match page.metadata.continue_token.filter(|t| !t.is_empty()) {
                Some(token) => continue_token = Some(token),
                None => break,
            }
        }
        if seen != expected {
            bail!("a paged list returned {seen} items, not {expected}");
        }
        walks.push(begin.elapsed());
    }
    let walk_seconds = started.elapsed().as_secs_f64();
    let walk_cpu = cpu_before.until(&cpu::snapshot());
    let measured = |samples: Vec<Duration>, seconds: f64, cpu: CpuUse| Measured {
        ops: samples.len() as u64,
        errors: 0,
        seconds,
        latency: Summary::of_durations(samples),
        first_error: None,
        cpu,
    };
    Ok(Lists {
        full: measured(full, full_seconds, full_cpu),
        walk: measured(walks, walk_seconds, walk_cpu),
        page: measured(pages, walk_seconds, walk_cpu),
    })
}

/// What the watch run measured.
pub struct Watches {
    /// Every delivery of an event to a watcher; latency from the writer's send (the time in
    /// the object) to the watcher's receipt.
    pub deliveries: Measured,
    /// The same deliveries measured from the moment the writer had the create's answer.
    pub from_ack: Summary,
    /// The writer's creates.
    pub writes: Measured,
    /// Deliveries that never came (within the grace time after the last write).
    pub missing: usize,
    /// Watchers whose stream ended or failed before they had every event.
    pub broken_watchers: usize,
    /// Deliveries that came more than [`LATE_AFTER_ACK`] after the answer to their create.
    pub late_after_ack: usize,
    /// How many deliveries came how long after the answer to their create: counts per bucket
    /// of [`ACK_BUCKETS_MS`] (upper bounds; the last bucket is everything above).
    pub after_ack_histogram: Vec<usize>,
    /// The same events seen by a watch on the store itself in this process (no API server, no
    /// HTTP), from the send and from the answer: where the store's own delivery ends and the
    /// server's fan-out begins.
    pub store_from_send: Summary,
    pub store_from_ack: Summary,
    pub first_error: Option<String>,
}

/// A delivery this much later than the answer to its create is counted as late.
pub const LATE_AFTER_ACK: Duration = Duration::from_millis(20);

/// Upper bounds, in milliseconds, of the buckets of [`Watches::after_ack_histogram`].
pub const ACK_BUCKETS_MS: [u64; 7] = [1, 5, 10, 20, 35, 45, 100];

/// How long watchers may keep waiting for events after the last write was acknowledged.
const WATCH_GRACE: Duration = Duration::from_secs(10);

/// `watchers` concurrent watches on the watch namespace; then a writer creates
/// `watch_events` ConfigMaps at `watch_rate` per second (each create its own request, sent on
/// schedule whatever the previous one's latency), each carrying its send time in `data.t`.
pub async fn watches(http: &Http, store: &DynStore, config: &Config) -> anyhow::Result<Watches> {
    let epoch = Instant::now();
    let path = objects::collection_path(objects::WATCH_NAMESPACE);
    let list = http
        .expect(
            Method::GET,
            &format!("{path}?limit=1"),
            None,
            StatusCode::OK,
        )
        .await?;
    let rv = serde_json::from_slice::<Versioned>(&list)?
        .metadata
        .resource_version;
    let events = config.watch_events;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let observer = store_observer(store, events, stopped.clone()).await?;
    let watch_path = format!("{path}?watch=true&resourceVersion={rv}&timeoutSeconds=3600");
    let watchers = start_watchers(http, &watch_path, events, epoch, stopped, config).await?;
    // Let every server-side watch settle into its receive loop, and the observer's etcd
    // watch, which starts at a past revision, catch up (etcd syncs such watches every 100 ms).
    tokio::time::sleep(Duration::from_millis(300)).await;

    let Writes {
        sends,
        acks,
        latencies: write_latencies,
        errors: write_errors,
        mut first_error,
        started: write_started,
        seconds: writes_seconds,
        cpu_before,
    } = write_events(http, &path, events, epoch, config).await?;
    let expected_per_watcher = events - write_errors;

    // Wait for the watchers, but not forever.
    let deadline = tokio::time::Instant::now() + WATCH_GRACE;
    let stopper = tokio::spawn(async move {
        tokio::time::sleep_until(deadline).await;
        let _ = stop.send(true);
    });
    let mut from_send = Vec::new();
    let mut from_ack = Vec::new();
    let mut missing = 0;
    let mut broken = 0;
    let mut last_receipt = write_started;
    for watcher in watchers {
        let outcome = watcher.await.context("a watcher panicked")?;
        if let Some(error) = &outcome.error {
            broken += 1;
            first_error.get_or_insert_with(|| error.clone());
        }
        missing += expected_per_watcher.saturating_sub(outcome.received.len());
        for (index, sent, received) in outcome.received {
            last_receipt = last_receipt.max(received);
            from_send.push(micros(received - sent));
            if let Some(Some(acked)) = acks.get(index) {
                from_ack.push(signed_micros(received, *acked));
            }
        }
    }
    let after_ack_histogram = ack_histogram(&from_ack);
    let late_after_ack = from_ack
        .iter()
        .filter(|&&delta| delta > micros(LATE_AFTER_ACK))
        .count();
    let mut store_from_send = Vec::new();
    let mut store_from_ack = Vec::new();
    for (index, received) in observer.await.context("the store observer panicked")? {
        if let (Some(Some(sent)), Some(Some(acked))) = (sends.get(index), acks.get(index)) {
            store_from_send.push(signed_micros(received, *sent));
            store_from_ack.push(signed_micros(received, *acked));
        }
    }
    stopper.abort();
    let cpu = cpu_before.until(&cpu::snapshot());
    Ok(Watches {
        store_from_send: Summary::of_micros(store_from_send),
        store_from_ack: Summary::of_micros(store_from_ack),
        deliveries: Measured {
            ops: from_send.len() as u64,
            errors: missing as u64,
            seconds: last_receipt.duration_since(write_started).as_secs_f64(),
            latency: Summary::of_micros(from_send),
            first_error: None,
            cpu,
        },
        from_ack: Summary::of_micros(from_ack),
        writes: Measured {
            ops: write_latencies.len() as u64,
            errors: write_errors as u64,
            seconds: writes_seconds,
            latency: Summary::of_durations(write_latencies),
            first_error: None,
            cpu: CpuUse::default(),
        },
        missing,
        broken_watchers: broken,
        late_after_ack,
        after_ack_histogram,
        first_error,
    })
}

/// Starts `config.watchers` watchers on `watch_path` and waits until each is ready.
async fn start_watchers(
    http: &Http,
    watch_path: &str,
    events: usize,
    epoch: Instant,
    stopped: tokio::sync::watch::Receiver<bool>,
    config: &Config,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<WatcherOutcome>>> {
    let (ready, mut readiness) = tokio::sync::mpsc::channel::<anyhow::Result<()>>(config.watchers);
    let watchers: Vec<_> = (0..config.watchers)
        .map(|_| {
            let (http, watch_path, ready, stopped) = (
                http.clone(),
                watch_path.to_owned(),
                ready.clone(),
                stopped.clone(),
            );
            tokio::spawn(watcher(http, watch_path, events, epoch, ready, stopped))
        })
        .collect();
    drop(ready);
    for _ in 0..config.watchers {
        match readiness.recv().await {
            Some(Ok(())) => {}
            Some(Err(error)) => return Err(error.context("starting a watch")),
            None => bail!("a watcher ended before it was ready"),
        }
    }
    Ok(watchers)
}

/// The writer's side of a watch run: when each create was sent and answered, and how the
/// writes went.
struct Writes {
    sends: Vec<Option<Instant>>,
    acks: Vec<Option<Instant>>,
    latencies: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
    started: Instant,
    seconds: f64,
    /// This process's CPU when the writes started.
    cpu_before: cpu::Snapshot,
}

/// Creates `events` ConfigMaps at `config.watch_rate` per second, each its own request sent
/// on schedule whatever the previous one's latency, each carrying its send time in `data.t`.
async fn write_events(
    http: &Http,
    path: &str,
    events: usize,
    epoch: Instant,
    config: &Config,
) -> anyhow::Result<Writes> {
    let blob: Arc<str> = objects::payload(config.value_bytes).into();
    let period = Duration::from_secs_f64(1.0 / config.watch_rate.max(0.001));
    let mut ticks = tokio::time::interval(period);
    let mut writes = Vec::with_capacity(events);
    let write_started = Instant::now();
    let cpu_before = cpu::snapshot();
    for index in 0..events {
        ticks.tick().await;
        let (http, path, blob) = (http.clone(), path.to_owned(), blob.clone());
        writes.push(tokio::spawn(async move {
            let sent = Instant::now();
            let t = micros(sent - epoch).to_string();
            let body = objects::configmap(&format!("w-{index}"), &blob, None, &[("t", t)]);
            http.expect(Method::POST, &path, Some(body), StatusCode::CREATED)
                .await?;
            let acked = Instant::now();
            anyhow::Ok((sent, acked))
        }));
    }
    let mut sends = vec![None; events];
    let mut acks = vec![None; events];
    let mut write_latencies = Vec::new();
    let mut write_errors = 0;
    let mut first_error = None;
    for (index, write) in writes.into_iter().enumerate() {
        match write.await.context("a write panicked")? {
            Ok((sent, acked)) => {
                sends[index] = Some(sent);
                acks[index] = Some(acked);
                write_latencies.push(acked - sent);
            }
            Err(error) => {
                write_errors += 1;
                first_error.get_or_insert_with(|| format!("{error:#}"));
            }
        }
    }
    let writes_seconds = write_started.elapsed().as_secs_f64();
    Ok(Writes {
        sends,
        acks,
        latencies: write_latencies,
        errors: write_errors,
        first_error,
        started: write_started,
        seconds: writes_seconds,
        cpu_before,
    })
}

/// How many deliveries came within each of [`ACK_BUCKETS_MS`] after the create's answer,
/// and how many later.
fn ack_histogram(from_ack: &[i64]) -> Vec<usize> {
    let mut after_ack_histogram = vec![0; ACK_BUCKETS_MS.len() + 1];
    for &delta in from_ack {
        let bucket = ACK_BUCKETS_MS
            .iter()
            .position(|&ms| delta <= (ms * 1000) as i64)
            .unwrap_or(ACK_BUCKETS_MS.len());
        after_ack_histogram[bucket] += 1;
    }
    after_ack_histogram
}

/// `later - earlier` in microseconds; negative when `later` is not (an event that overtook
/// the answer to its create).
fn signed_micros(later: Instant, earlier: Instant) -> i64 {
    if later >= earlier {
        micros(later - earlier)
    } else {
        -micros(earlier - later)
    }
}

/// A watch on the store itself for the watch run's writes: the receipt time of each.
async fn store_observer(
    store: &DynStore,
    expected: usize,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinHandle<Vec<(usize, Instant)>>> {
    let after = store.current_revision().await?;
    let mut stream = store.watch("/registry/", after).await?;
    let marker = format!("/{}/w-", objects::WATCH_NAMESPACE);
    Ok(tokio::spawn(async move {
        let mut seen = Vec::with_capacity(expected);
        while seen.len() < expected {
            let event = tokio::select! {
                event = futures::StreamExt::next(&mut stream) => event,
                _ = stopped.wait_for(|stop| *stop) => break,
            };
            let received = Instant::now();
            let Some(Ok(event)) = event else { break };
            let index = event
                .kv
                .key
                .split_once(&marker)
                .and_then(|(_, n)| n.parse::<usize>().ok());
            if let Some(index) = index {
                seen.push((index, received));
            }
        }
        seen
    }))
}

/// What one watcher saw: (event index, send time, receipt time) per delivery.
struct WatcherOutcome {
    received: Vec<(usize, Instant, Instant)>,
    error: Option<String>,
}

/// One HTTP watch: reports ready once the server answered with the stream's headers, then
/// reads lines until it has `expected` events, the stream ends, or it is told to stop. The
/// receipt time of an event is when the chunk holding its end arrived.
async fn watcher(
    http: Http,
    path: String,
    expected: usize,
    epoch: Instant,
    ready: tokio::sync::mpsc::Sender<anyhow::Result<()>>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> WatcherOutcome {
    let mut outcome = WatcherOutcome {
        received: Vec::with_capacity(expected),
        error: None,
    };
    let response = match http.stream(&path).await {
        Ok(response) => {
            let _ = ready.send(Ok(())).await;
            response
        }
        Err(error) => {
            outcome.error = Some(format!("{error:#}"));
            let _ = ready.send(Err(error)).await;
            return outcome;
        }
    };
    drop(ready);
    let mut body = response.into_body();
    let mut buffer: Vec<u8> = Vec::new();
    while outcome.received.len() < expected {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = stopped.wait_for(|stop| *stop) => break,
        };
        let received = Instant::now();
        let data = match frame {
            None => {
                outcome.error = Some("the watch stream ended early".into());
                break;
            }
            Some(Err(error)) => {
                outcome.error = Some(format!("the watch stream failed: {error}"));
                break;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        buffer.extend_from_slice(&data);
        let mut consumed = 0;
        while let Some(newline) = buffer[consumed..].iter().position(|&b| b == b'\n') {
            let line = &buffer[consumed..consumed + newline];
            consumed += newline + 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_event(line, epoch) {
                Ok(Some((index, sent))) => outcome.received.push((index, sent, received)),
                Ok(None) => {}
                Err(error) => {
                    outcome.error.get_or_insert(format!("{error:#}"));
                }
            }
        }
        buffer.drain(..consumed);
    }
    outcome
}

/// The event's index and send time, for an ADDED event of the writer; `None` for others.
fn parse_event(line: &[u8], epoch: Instant) -> anyhow::Result<Option<(usize, Instant)>> {
    let event: WatchLine = serde_json::from_slice(line)
        .with_context(|| format!("an unreadable watch line: {}", snippet(line)))?;
    match event.kind.as_str() {
        "ADDED" => {}
        "ERROR" => bail!("the watch sent an error: {}", snippet(line)),
        _ => return Ok(None),
    }
    let Some(index) = event
        .object
        .metadata
        .name
        .strip_prefix("w-")
        .and_then(|n| n.parse().ok())
    else {
        return Ok(None);
    };
    let sent_micros: u64 = event
        .object
        .data
        .t
        .as_deref()
        .and_then(|t| t.parse().ok())
        .context("a watch event without its send time")?;
    Ok(Some((index, epoch + Duration::from_micros(sent_micros))))
}

/// A watch on every ConfigMap that reads and discards what it gets, as an informer of a
/// controller would; it keeps the server's watch cache for ConfigMaps running through the
/// whole benchmark. The counter is the number of bytes it received so far.
pub async fn resident_watch(
    http: Http,
) -> anyhow::Result<(tokio::task::JoinHandle<()>, Arc<AtomicU64>)> {
    let list = http
        .expect(
            Method::GET,
            "/api/v1/configmaps?limit=1",
            None,
            StatusCode::OK,
        )
        .await?;
    let rv = serde_json::from_slice::<Versioned>(&list)?
        .metadata
        .resource_version;
    let response = http
        .stream(&format!(
            "/api/v1/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=36000"
        ))
        .await?;
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    let task = tokio::spawn(async move {
        let mut body = response.into_body();
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                counter.fetch_add(data.len() as u64, Ordering::Relaxed);
            }
        }
    });
    Ok((task, received))
}

/// Creates Cluster API's Machine CRD (as `corral init` installs it) and waits until its
/// resource is served; a CRD already there is taken as it is.
pub async fn install_machine_crd(http: &Http) -> anyhow::Result<()> {
    let crd = corral_api::crds()
        .into_iter()
        .find(|crd| crd.metadata.name.as_deref() == Some("machines.cluster.x-k8s.io"))
        .context("corral-api has no Machine CRD")?;
    let body = Bytes::from(serde_json::to_vec(&crd)?);
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    match http.send(Method::POST, path, Some(body)).await? {
        (StatusCode::CREATED | StatusCode::CONFLICT, _) => {}
        (status, answer) => bail!("creating the Machine CRD: {status}: {}", snippet(&answer)),
    }
    let list = objects::machines_path(objects::NAMESPACE);
    for _ in 0..200 {
        if let Ok((StatusCode::OK, _)) = http.send(Method::GET, &list, None).await {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    bail!("the Machine CRD was not served within 5 s")
}

/// How the Machine runs write: a status or a metadata merge patch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachinePatch {
    Status,
    Labels,
}

/// Merge patches of each client's own Machine (about 4 KiB stored, the Machine CRD's schema
/// and rules), with the resourceVersion of its last write as precondition, as Cluster API's
/// controllers write: `/status` with every status field and one condition changed, or a
/// label of the main resource.
pub async fn http_machine_patches(
    http: &Http,
    clients: usize,
    config: &Config,
    kind: MachinePatch,
) -> anyhow::Result<Measured> {
    install_machine_crd(http).await?;
    let collection = objects::machines_path(objects::NAMESPACE);
    let mut states = Vec::with_capacity(clients);
    for client in 0..clients {
        let name = format!("machine-c{clients}-{client}");
        let path = format!("{collection}/{name}");
        let answer = match http
            .send(Method::POST, &collection, Some(objects::machine(&name)))
            .await?
        {
            (StatusCode::CREATED, answer) => answer,
            (StatusCode::CONFLICT, _) => {
                http.expect(Method::GET, &path, None, StatusCode::OK)
                    .await?
            }
            (status, answer) => bail!("creating Machine {name}: {status}: {}", snippet(&answer)),
        };
        let object: Versioned = serde_json::from_slice(&answer)?;
        states.push((http.clone(), path, object.metadata.resource_version, 1_u64));
    }
    let seq_base = next_run() * 1_000_000_000;
    Ok(closed_loop(
        states,
        config.warmup,
        config.duration,
        move |(http, path, version, seq)| async move {
            let (target, body) = match kind {
                MachinePatch::Status => (
                    format!("{path}/status"),
                    objects::machine_status_patch(&version, seq_base + seq),
                ),
                MachinePatch::Labels => (
                    path.clone(),
                    objects::machine_label_patch(&version, seq_base + seq),
                ),
            };
            let answer = http
                .expect_typed(
                    Method::PATCH,
                    &target,
                    body,
                    "application/merge-patch+json",
                    StatusCode::OK,
                )
                .await;
            let (version, outcome) = version_after(&http, &path, answer, version).await;
            ((http, path, version, seq + 1), outcome)
        },
    )
    .await)
}
