use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use corral_runtime::changes::Fingerprints;

use super::*;

fn cluster() -> Cluster {
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": { "name": "c", "namespace": "ns", "uid": "u" },
        "spec": {},
        "status": { "initialization": { "infrastructureProvisioned": false } },
    }))
    .expect("a Cluster")
}

fn machine() -> Machine {
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "m", "namespace": "ns", "uid": "u" },
        "spec": { "clusterName": "c", "bootstrap": {}, "infrastructureRef": {
            "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": "m",
        } },
    }))
    .expect("a Machine")
}

/// A Cluster event passes the first time, then only when what the providers read changed:
/// not for conditions or replica counters.
#[test]
fn cluster_events_pass_when_what_is_read_changes() {
    let seen = Fingerprints::new();
    let mut cluster = cluster();
    assert!(
        seen.changed(&cluster, read_of_cluster(&cluster)),
        "first seen"
    );
    assert!(!seen.changed(&cluster, read_of_cluster(&cluster)), "same");

    let status = cluster.status.as_mut().unwrap();
    status.control_plane.replicas = Some(3);
    status.phase = Some(corral_api::ClusterPhase::Provisioned);
    assert!(
        !seen.changed(&cluster, read_of_cluster(&cluster)),
        "replica counters and phase are not read"
    );

    let status = cluster.status.as_mut().unwrap();
    status.initialization.infrastructure_provisioned = Some(true);
    assert!(seen.changed(&cluster, read_of_cluster(&cluster)));
    cluster.spec.paused = Some(true);
    assert!(seen.changed(&cluster, read_of_cluster(&cluster)));
    cluster
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert("a".into(), "b".into());
    assert!(seen.changed(&cluster, read_of_cluster(&cluster)));

    seen.forget("ns", "c");
    assert!(
        seen.changed(&cluster, read_of_cluster(&cluster)),
        "forgotten"
    );
}

/// A Machine event passes when its spec, labels or Node change, not for its conditions; the
/// start of its deletion passes once (the runtime's rule).
#[test]
fn machine_events_pass_when_what_is_read_changes() {
    let seen = Fingerprints::new();
    let mut machine = machine();
    assert!(seen.changed(&machine, read_of_machine(&machine)));
    let status = machine.status.get_or_insert_with(Default::default);
    status.phase = Some(corral_api::MachinePhase::Provisioning);
    assert!(
        !seen.changed(&machine, read_of_machine(&machine)),
        "phase is not read"
    );

    let status = machine.status.get_or_insert_with(Default::default);
    status.node_ref = Some(serde_json::from_value(json!({ "name": "node" })).unwrap());
    assert!(seen.changed(&machine, read_of_machine(&machine)));
    machine.spec.version = Some("v1.35.0".into());
    assert!(seen.changed(&machine, read_of_machine(&machine)));

    machine.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
    assert!(seen.changed(&machine, read_of_machine(&machine)));
    assert!(!seen.changed(&machine, read_of_machine(&machine)), "once");
    seen.deleted(&machine);
    assert!(seen.is_empty(), "nothing left behind");
}
