//! Smoke tests of the benchmark code: every phase runs, briefly and small, and yields numbers.
//! No timing is checked; CI machines are too noisy for that.

mod scale;

use std::time::Duration;

use corral_bench::{Config, Op, Report};

/// A run of about a second or two: each phase, tiny.
fn tiny(data_root: &std::path::Path) -> Config {
    Config {
        duration: Duration::from_millis(100),
        warmup: Duration::from_millis(20),
        concurrencies: vec![1, 4],
        list_objects: 60,
        list_page: 25,
        fill_clients: 4,
        watchers: 3,
        watch_events: 8,
        watch_rate: 200.0,
        fsync_probe: Duration::from_millis(20),
        data_root: Some(data_root.to_path_buf()),
        ..Config::quick()
    }
}

fn assert_measured(report: &Report, backend: &str, ops: &[Op]) {
    for &op in ops {
        let rows: Vec<_> = report
            .rows
            .iter()
            .filter(|row| row.op == op && row.backend == backend)
            .collect();
        assert!(!rows.is_empty(), "no {op:?} row for {backend}");
        for row in rows {
            let measured = &row.measured;
            assert!(
                measured.ops > 0 && measured.rate() > 0.0,
                "{op:?} on {backend} with {} clients measured nothing: {measured:?}",
                row.clients
            );
            assert_eq!(
                measured.errors, 0,
                "{op:?} on {backend} with {} clients failed: {measured:?}",
                row.clients
            );
            if op != Op::Fill {
                assert!(measured.latency.samples > 0, "{op:?} has no latencies");
                assert!(measured.latency.p99 >= measured.latency.p50);
            }
        }
    }
}

const HTTP_OPS: [Op; 12] = [
    Op::StoreCreate,
    Op::Create,
    Op::Update,
    Op::Get,
    Op::MachineStatusPatch,
    Op::MachineLabelPatch,
    Op::Fill,
    Op::ListFull,
    Op::ListWalk,
    Op::ListPage,
    Op::WatchDelivery,
    Op::WatchWrite,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_run_on_sqlite_measures_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        skip_etcd: true,
        rounds: 2,
        ..tiny(dir.path())
    };
    let report = corral_bench::run(&config).await.unwrap();
    assert_measured(&report, "sqlite", &HTTP_OPS);
    assert!(report.rows.iter().all(|row| row.backend == "sqlite"));
    // Both concurrencies of each closed-loop operation, once, with both rounds' rates.
    for clients in [1, 4] {
        let rows: Vec<_> = report
            .rows
            .iter()
            .filter(|row| row.op == Op::Create && row.clients == clients)
            .collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].round_rates.len(), 2);
    }
    let markdown = report.markdown();
    assert!(
        markdown.contains("| create (POST) | sqlite | 4 |"),
        "{markdown}"
    );
    assert!(markdown.contains("watch delivery p99"), "{markdown}");
    // Everything the run created is gone with it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_run_on_etcd_measures_raw_puts_and_the_etcd_store() {
    if corral_bench::etcd_process::EtcdServer::find_binary().is_none() {
        assert_ne!(
            std::env::var("CORRAL_REQUIRE_ETCD").as_deref(),
            Ok("1"),
            "etcd not found, and CORRAL_REQUIRE_ETCD=1 requires it"
        );
        eprintln!("SKIP: etcd not found; the etcd smoke run is skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        concurrencies: vec![2],
        ..tiny(dir.path())
    };
    let report = corral_bench::run(&config).await.unwrap();
    assert_measured(&report, "etcd", &[Op::RawEtcdPut]);
    assert_measured(&report, "etcd", &HTTP_OPS);
    assert_measured(&report, "sqlite", &HTTP_OPS);
    let ratios = report.ratios().join("\n");
    assert!(
        ratios.contains("sqlite creates@2 / raw etcd puts@2"),
        "{ratios}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machinery_run_measures_validation_gc_and_apply() {
    use corral_bench::machinery::{MachineryConfig, MachineryOp, run};
    let dir = tempfile::tempdir().unwrap();
    let config = MachineryConfig {
        duration: Duration::from_millis(100),
        warmup: Duration::from_millis(20),
        concurrencies: vec![4],
        rounds: 2,
        gc_children: 3,
        gc_grandchildren: 4,
        fg_children: 2,
        fg_grandchildren: 3,
        fill_clients: 4,
        apply_objects: 20,
        apply_clients: 4,
        data_root: Some(dir.path().to_path_buf()),
        gc_timeout: Duration::from_secs(60),
        ..MachineryConfig::quick()
    };
    let report = run(&config).await.unwrap();
    for (op, clients) in [
        (MachineryOp::CreateSchemaless, 4),
        (MachineryOp::CreateValidated, 4),
        (MachineryOp::PostCreate, 4),
        (MachineryOp::ApplyCreate, 4),
        (MachineryOp::Reapply, 4),
        (MachineryOp::NoopMergePatch, 4),
    ] {
        let row = report
            .find(op, clients)
            .unwrap_or_else(|| panic!("no {op:?} row"));
        assert!(row.measured.ops > 0 && row.measured.rate() > 0.0, "{row:?}");
        assert_eq!(row.measured.errors, 0, "{row:?}");
        assert_eq!(row.round_rates.len(), 2);
    }
    assert_eq!(report.gc.len(), 2);
    assert_eq!(report.gc[0].dependents, 3 + 3 * 4);
    assert_eq!(report.gc[1].dependents, 2 + 2 * 3);
    for gc in &report.gc {
        assert!(gc.dependents_gone > Duration::ZERO, "{gc:?}");
        assert!(gc.root_gone > Duration::ZERO, "{gc:?}");
    }
    let markdown = report.markdown();
    assert!(markdown.contains("validated / schemaless"), "{markdown}");
    assert!(markdown.contains("| Foreground | 8 |"), "{markdown}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
