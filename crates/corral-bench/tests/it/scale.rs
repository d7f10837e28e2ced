//! The scale benchmark as a correctness check, small: 20 clusters on the in-memory provider
//! with the whole management plane in this process. No timing is checked.

use std::time::Duration;

use corral_bench::scale::{Counts, RolloutConfig, ScaleConfig, run_rollout, run_scale};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_clusters_become_available_and_are_all_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let config = ScaleConfig {
        timeout: Duration::from_secs(240),
        data_root: Some(dir.path().to_path_buf()),
        progress: false,
        ..ScaleConfig::new(20, 1, 3)
    };
    let report = run_scale(&config).await.unwrap();
    let markdown = report.markdown();
    assert_eq!(report.error, None, "{markdown}");
    // Every Cluster Available, every Machine Running, as a watch showed them.
    assert_eq!(
        report.created,
        Some(Counts {
            clusters: 20,
            available: 20,
            machines: 80,
            running: 80,
        }),
        "{markdown}"
    );
    // Then every Cluster and Machine gone, and with them every object a Cluster's deletion
    // removes (DevClusters, DevMachines, MachineSets, MachineDeployments).
    assert_eq!(report.deleted, Some(Counts::default()), "{markdown}");
    assert_eq!(report.leftovers, Vec::<String>::new(), "{markdown}");
    // Each controller did work, and the numbers the report is made of were measured.
    let create = report.create.as_ref().unwrap();
    for controller in [
        "cluster",
        "machine",
        "machineset",
        "machinedeployment",
        "devcluster",
        "devmachine",
    ] {
        let (reconciles, _) = create.delta.reconciles[controller];
        assert!(reconciles > 0, "no {controller} reconcile: {markdown}");
    }
    assert!(
        create.delta.writes["cluster.x-k8s.io/machines"] >= 80,
        "{markdown}"
    );
    assert!(report.peak_rss.unwrap_or(0) > 0, "{markdown}");
    assert!(markdown.contains("all deleted within 60 s"), "{markdown}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_stays_within_max_surge() {
    let dir = tempfile::tempdir().unwrap();
    let config = RolloutConfig {
        replicas: 20,
        max_surge: "10%",
        max_unavailable: "0",
        timeout: Duration::from_secs(240),
        data_root: Some(dir.path().to_path_buf()),
        controllers: corral_controllers::Config::default(),
        watch_history: None,
        watch_history_bytes: None,
        progress: false,
    };
    let report = run_rollout(&config).await.unwrap();
    let markdown = report.markdown();
    assert_eq!(report.error, None, "{markdown}");
    assert!(report.rollout.is_some(), "{markdown}");
    assert_eq!(report.surge(), 2);
    // New Machines were created beside the old ones, and never more than maxSurge of them.
    assert!(report.max_not_deleting > 20, "{markdown}");
    assert!(report.max_not_deleting <= 22, "{markdown}");
}
