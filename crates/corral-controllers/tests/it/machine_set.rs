//! The MachineSet controller against the API server (upstream
//! `core/reconcilers/machineset/machineset_controller_test.go`), with a tiny fake provider that
//! provisions the generic test kinds and joins Nodes to a workload cluster, so that Machines
//! reach Running and Available. Also the helpers the MachineDeployment tests share.

use std::collections::BTreeSet;
use std::time::Duration;

use corral_api::{Cluster, Machine, MachineSet};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::support::*;

/// A Machine's condition of a type, if any.
pub fn machine_condition(machine: &Machine, type_: &str) -> Option<(String, String, String)> {
    let status = machine.status.as_ref()?;
    condition(&status.conditions, type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// A MachineSet's condition of a type, if any.
pub fn machine_set_condition(ms: &MachineSet, type_: &str) -> Option<(String, String, String)> {
    let status = ms.status.as_ref()?;
    condition(&status.conditions, type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Whether a Machine is available and not being deleted.
pub fn is_available(machine: &Machine) -> bool {
    machine.metadata.deletion_timestamp.is_none()
        && machine_condition(machine, "Available").is_some_and(|(status, ..)| status == "True")
}

/// A provisioned Cluster whose control plane is initialized and externally managed (so that
/// the Nodes of deleted Machines may be deleted), with a workload cluster.
pub async fn provisioned_cluster(h: &mut Harness, name: &str) -> Workload {
    h.create_provider(
        INFRA_CLUSTER,
        name,
        json!({ "spec": { "controlPlaneEndpoint": { "host": "10.0.0.1", "port": 6443 } } }),
    )
    .await;
    h.set_provider_status(
        INFRA_CLUSTER,
        name,
        json!({ "initialization": { "provisioned": true } }),
    )
    .await;
    h.create_provider(CONTROL_PLANE, name, json!({})).await;
    h.set_provider_status(
        CONTROL_PLANE,
        name,
        json!({ "initialization": { "controlPlaneInitialized": true }, "externalManagedControlPlane": true }),
    )
    .await;
    let workload = h.workload(name).await;
    h.create::<Cluster>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": { "name": name },
        "spec": {
            "infrastructureRef": INFRA_CLUSTER.reference(name),
            "controlPlaneRef": CONTROL_PLANE.reference(name),
        },
    }))
    .await;
    h.wait_for::<Cluster>(name, "the Cluster's control plane to be initialized", |c| {
        c.status
            .as_ref()
            .and_then(|s| condition(&s.conditions, "ControlPlaneInitialized"))
            .is_some_and(|c| c.status == "True")
    })
    .await;
    workload
}

/// Creates an infrastructure machine template and a bootstrap config template named `name`.
pub async fn templates(h: &Harness, name: &str) {
    let template = json!({ "spec": { "template": { "spec": { "image": name } } } });
    h.create_provider(INFRA_MACHINE_TEMPLATE, name, template.clone())
        .await;
    h.create_provider(BOOTSTRAP_CONFIG_TEMPLATE, name, template)
        .await;
}

/// A Machine template spec cloning the templates named `templates`.
pub fn machine_template(cluster: &str, templates: &str, version: &str) -> Value {
    json!({
        "spec": {
            "clusterName": cluster,
            "version": version,
            "bootstrap": { "configRef": BOOTSTRAP_CONFIG_TEMPLATE.reference(templates) },
            "infrastructureRef": INFRA_MACHINE_TEMPLATE.reference(templates),
        },
    })
}

/// The annotation that makes the fake provider leave an infrastructure machine unprovisioned.
pub const HOLD: &str = "test.cluster.x-k8s.io/hold";

/// Plays the bootstrap and infrastructure providers of the generic test kinds: every
/// bootstrap config gets its data Secret, every infrastructure machine (unless its template
/// says [`HOLD`]) a provider ID, `provisioned`, and a Ready Node in the workload cluster.
/// Stops when dropped.
pub struct FakeProvider {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl FakeProvider {
    pub fn start(h: &Harness, workload: &Workload) -> FakeProvider {
        let bootstrap = h.provider(BOOTSTRAP_CONFIG);
        let bootstrap_task = tokio::spawn(async move {
            let mut events = watcher(bootstrap.clone(), watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(Ok(object)) = events.next().await {
                let bootstrap = bootstrap.clone();
                tokio::spawn(async move {
                    let created = object
                        .data
                        .pointer("/status/initialization/dataSecretCreated")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    if created || object.metadata.deletion_timestamp.is_some() {
                        return;
                    }
                    let name = object.name_any();
                    let status = json!({ "status": {
                        "initialization": { "dataSecretCreated": true },
                        "dataSecretName": format!("{name}-bootstrap"),
                    }});
                    let _ = bootstrap
                        .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                        .await;
                });
            }
        });
        let infrastructure = h.provider(INFRA_MACHINE);
        let nodes = Workload {
            client: workload.client.clone(),
        };
        let infrastructure_task = tokio::spawn(async move {
            let mut events = watcher(infrastructure.clone(), watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            let nodes = std::sync::Arc::new(nodes);
            while let Some(Ok(object)) = events.next().await {
                // One at a time would make the provider the slowest part of a large scale-up.
                let (api, nodes) = (infrastructure.clone(), nodes.clone());
                tokio::spawn(async move { provision(&api, &nodes, &object).await });
            }
        });
        FakeProvider {
            tasks: vec![bootstrap_task, infrastructure_task],
        }
    }
}

async fn provision(api: &Api<DynamicObject>, workload: &Workload, object: &DynamicObject) {
    let provisioned = object
        .data
        .pointer("/status/initialization/provisioned")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if provisioned
        || object.metadata.deletion_timestamp.is_some()
        || object.annotations().contains_key(HOLD)
    {
        return;
    }
    let name = object.name_any();
    let provider_id = format!("test://{name}");
    if workload.get_node(&name).await.is_none() {
        // A Node that already exists (a retry) is fine.
        let _ = workload_node(workload, &name, &provider_id).await;
    }
    let spec = json!({ "spec": { "providerID": provider_id } });
    if api
        .patch(&name, &PatchParams::default(), &Patch::Merge(spec))
        .await
        .is_err()
    {
        return;
    }
    let status = json!({ "status": { "initialization": { "provisioned": true } } });
    let _ = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
        .await;
}

async fn workload_node(workload: &Workload, name: &str, provider_id: &str) -> Option<()> {
    let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name },
        "spec": { "providerID": provider_id },
    }))
    .ok()?;
    workload
        .nodes()
        .create(&Default::default(), &node)
        .await
        .ok()?;
    let status = json!({ "status": {
        "conditions": [
            { "type": "Ready", "status": "True", "reason": "KubeletReady",
              "lastTransitionTime": "2026-01-01T00:00:00Z", "lastHeartbeatTime": "2026-01-01T00:00:00Z" },
            { "type": "MemoryPressure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z" },
            { "type": "DiskPressure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z" },
            { "type": "PIDPressure", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z" },
        ],
        "nodeInfo": {
            "architecture": "amd64", "bootID": "", "containerRuntimeVersion": "test://1",
            "kernelVersion": "6.0", "kubeProxyVersion": "", "kubeletVersion": "v1.36.0",
            "machineID": "", "operatingSystem": "linux", "osImage": "Test OS", "systemUUID": "",
        },
    }});
    workload
        .nodes()
        .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await
        .ok()?;
    Some(())
}

/// The Machines in the namespace, by name.
pub async fn machines(h: &Harness) -> Vec<Machine> {
    let mut list = h
        .api::<Machine>()
        .list(&Default::default())
        .await
        .expect("Machines are listed")
        .items;
    list.sort_by_key(|m| m.name_any());
    list
}

/// The Machines whose controller is the MachineSet `owner`.
pub async fn machines_of(h: &Harness, owner: &str) -> Vec<Machine> {
    machines(h)
        .await
        .into_iter()
        .filter(|m| {
            m.owner_references()
                .iter()
                .any(|o| o.kind == "MachineSet" && o.name == owner && o.controller == Some(true))
        })
        .collect()
}

/// Waits until `check` holds for the Machines in the namespace, and returns them.
pub async fn wait_machines(
    h: &Harness,
    what: &str,
    check: impl Fn(&[Machine]) -> bool,
) -> Vec<Machine> {
    corral_testenv::eventually(TIMEOUT, what, || async {
        let list = machines(h).await;
        check(&list).then_some(list)
    })
    .await
}

fn machine_set_json(name: &str, cluster: &str, replicas: i32, annotations: Value) -> Value {
    let mut template = machine_template(cluster, "workers", "v1.36.0");
    merge(
        &mut template,
        json!({ "metadata": { "labels": { "pool": name } } }),
    );
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineSet",
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "clusterName": cluster,
            "replicas": replicas,
            "selector": { "matchLabels": { "pool": name } },
            "template": template,
        },
    })
}

async fn scale(h: &Harness, name: &str, replicas: i32) {
    h.api::<MachineSet>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": replicas } })),
        )
        .await
        .expect("the MachineSet is scaled");
}

/// Pauses or unpauses the Cluster `name` (`spec.paused`).
async fn set_paused(h: &Harness, name: &str, paused: bool) {
    h.api::<Cluster>()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "paused": paused } })),
        )
        .await
        .expect("the Cluster is patched");
}

fn observed(ms: &MachineSet) -> bool {
    ms.status.as_ref().and_then(|s| s.observed_generation) == ms.metadata.generation
}

/// Upstream `TestMachineSetReconciler` and `TestMachineSetReconciler_syncReplicas`: scaling
/// 0 → 3 creates three Machines named after the MachineSet with their provider objects cloned
/// and named like them; they reach Running and the status counts them; scaling 3 → 1 deletes
/// the Machine marked `delete-machine` first, then by name; deleting the MachineSet deletes
/// the rest.
#[tokio::test]
async fn machine_set_scales_up_and_down_deleting_the_marked_machine_first() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "workers").await;
    h.create::<MachineSet>(machine_set_json("pool-a", "prod", 0, json!({})))
        .await;

    let ms = h
        .wait_for::<MachineSet>("pool-a", "the empty MachineSet to be reconciled", observed)
        .await;
    assert!(
        ms.finalizers()
            .contains(&"cluster.x-k8s.io/machineset".to_owned())
    );
    assert_eq!(ms.labels()["cluster.x-k8s.io/cluster-name"], "prod");
    assert_eq!(
        owners(&ms),
        ["Cluster/prod"],
        "a standalone MachineSet belongs to its Cluster"
    );
    let status = ms.status.as_ref().unwrap();
    assert_eq!(status.replicas, Some(0));
    assert_eq!(
        status.selector.as_deref(),
        Some("cluster.x-k8s.io/cluster-name=prod,pool=pool-a")
    );
    assert_eq!(
        machine_set_condition(&ms, "MachinesReady").map(|c| c.1),
        Some("NoReplicas".into())
    );

    scale(&h, "pool-a", 3).await;
    let ms = h
        .wait_for::<MachineSet>("pool-a", "three Machines to be Available", |ms| {
            ms.status.as_ref().and_then(|s| s.available_replicas) == Some(3)
        })
        .await;
    let status = ms.status.as_ref().unwrap();
    assert_eq!((status.replicas, status.ready_replicas), (Some(3), Some(3)));
    assert_eq!(status.versions[0].version, "v1.36.0");
    assert_eq!(
        machine_set_condition(&ms, "MachinesReady").unwrap().0,
        "True"
    );
    assert_eq!(
        machine_set_condition(&ms, "ScalingUp").unwrap().1,
        "NotScalingUp"
    );
    let all = machines(&h).await;
    assert_eq!(all.len(), 3, "no more Machines than replicas");
    for machine in &all {
        let name = machine.name_any();
        assert!(
            name.starts_with("pool-a-") && name.len() == "pool-a-".len() + 5,
            "{name}"
        );
        assert_eq!(owners(machine), ["MachineSet/pool-a*"]);
        assert_eq!(machine.labels()["cluster.x-k8s.io/set-name"], "pool-a");
        assert_eq!(machine.labels()["pool"], "pool-a");
        assert_eq!(machine.spec.infrastructure_ref.name, name);
        assert_eq!(
            machine.spec.bootstrap.config_ref.as_ref().unwrap().name,
            name
        );
        let infra = h.get_provider(INFRA_MACHINE, &name).await.expect("cloned");
        assert_eq!(
            infra.data["spec"]["image"], "workers",
            "cloned from the template"
        );
        assert_eq!(
            infra.annotations()["cluster.x-k8s.io/cloned-from-name"],
            "workers"
        );
        assert_eq!(infra.labels()["cluster.x-k8s.io/set-name"], "pool-a");
        assert!(h.get_provider(BOOTSTRAP_CONFIG, &name).await.is_some());
    }
    let template = h
        .get_provider(INFRA_MACHINE_TEMPLATE, "workers")
        .await
        .unwrap();
    assert_eq!(
        owners(&template),
        ["Cluster/prod"],
        "templates belong to the Cluster"
    );
    let reasons = event_reasons(&h.client, &h.namespace, "pool-a").await;
    assert!(
        reasons.contains(&"SuccessfulCreate".to_owned()),
        "{reasons:?}"
    );

    // The middle Machine is marked; with Random order the rest go by name.
    let marked = all[1].name_any();
    h.api::<Machine>()
        .patch(
            &marked,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { "cluster.x-k8s.io/delete-machine": "yes" } } })),
        )
        .await
        .unwrap();
    scale(&h, "pool-a", 1).await;
    let left = wait_machines(&h, "the MachineSet to scale down to one Machine", |m| {
        m.len() == 1
    })
    .await;
    assert_eq!(
        left[0].name_any(),
        all[2].name_any(),
        "the marked Machine and the first by name went"
    );
    let ms = h
        .wait_for::<MachineSet>("pool-a", "the status to count one Machine", |ms| {
            ms.status.as_ref().and_then(|s| s.replicas) == Some(1) && observed(ms)
        })
        .await;
    assert_eq!(
        machine_set_condition(&ms, "ScalingDown").unwrap().1,
        "NotScalingDown"
    );
    let reasons = event_reasons(&h.client, &h.namespace, "pool-a").await;
    assert!(
        reasons.contains(&"SuccessfulDelete".to_owned()),
        "{reasons:?}"
    );

    h.api::<MachineSet>()
        .delete("pool-a", &DeleteParams::default())
        .await
        .unwrap();
    h.wait_gone::<MachineSet>("pool-a", "the MachineSet to go")
        .await;
    assert!(machines(&h).await.is_empty(), "its Machines went first");
    h.stop().await;
}

fn standalone_machine(name: &str, cluster: &str, pool: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": name, "labels": { "pool": pool } },
        "spec": {
            "clusterName": cluster,
            "version": "v1.36.0",
            "bootstrap": { "configRef": BOOTSTRAP_CONFIG.reference(name) },
            "infrastructureRef": INFRA_MACHINE.reference(name),
        },
    })
}

/// Upstream `TestMachineSetReconciler_AdoptOrphan` and the disable-machine-create annotation:
/// a MachineSet that may not create Machines adopts the orphans its selector matches, reports
/// the missing ones in ScalingUp, and, allowed again, creates only what is missing.
#[tokio::test]
async fn machine_set_adopts_orphans_and_honours_disable_machine_create() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "workers").await;
    for name in ["orphan-1", "orphan-2"] {
        h.create_provider(BOOTSTRAP_CONFIG, name, json!({})).await;
        h.create_provider(INFRA_MACHINE, name, json!({})).await;
        h.create::<Machine>(standalone_machine(name, "prod", "pool-b"))
            .await;
    }
    // One Machine another MachineSet controls is not adopted.
    let other = h
        .create::<MachineSet>(machine_set_json("other", "prod", 0, json!({})))
        .await;
    h.create_provider(BOOTSTRAP_CONFIG, "taken", json!({}))
        .await;
    h.create_provider(INFRA_MACHINE, "taken", json!({})).await;
    let mut taken = standalone_machine("taken", "prod", "pool-b");
    merge(
        &mut taken,
        json!({ "metadata": { "ownerReferences": [{
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "other",
            "uid": other.uid(), "controller": true,
        }] } }),
    );
    h.create::<Machine>(taken).await;

    h.create::<MachineSet>(machine_set_json(
        "pool-b",
        "prod",
        3,
        json!({ "cluster.x-k8s.io/disable-machine-create": "true" }),
    ))
    .await;
    let ms = h
        .wait_for::<MachineSet>("pool-b", "the MachineSet to adopt the orphans", |ms| {
            observed(ms) && ms.status.as_ref().and_then(|s| s.replicas) == Some(2)
        })
        .await;
    assert_eq!(
        machine_set_condition(&ms, "ScalingUp").map(|c| (c.0, c.2)),
        Some(("True".into(), "Scaling up from 2 to 3 replicas".into()))
    );
    for name in ["orphan-1", "orphan-2"] {
        let machine = h.api::<Machine>().get(name).await.unwrap();
        assert!(
            owners(&machine).contains(&"MachineSet/pool-b*".to_owned()),
            "{:?}",
            owners(&machine)
        );
    }
    let taken = h.api::<Machine>().get("taken").await.unwrap();
    assert!(!owners(&taken).contains(&"MachineSet/pool-b*".to_owned()));
    assert_eq!(machines(&h).await.len(), 3, "creation is disabled");
    let reasons = event_reasons(&h.client, &h.namespace, "pool-b").await;
    assert!(
        reasons.contains(&"SuccessfulAdopt".to_owned()),
        "{reasons:?}"
    );

    h.api::<MachineSet>()
        .patch(
            "pool-b",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": { "cluster.x-k8s.io/disable-machine-create": null } } })),
        )
        .await
        .unwrap();
    h.wait_for::<MachineSet>("pool-b", "the third Machine to be created", |ms| {
        ms.status.as_ref().and_then(|s| s.replicas) == Some(3)
    })
    .await;
    let owned: Vec<String> = machines_of(&h, "pool-b")
        .await
        .iter()
        .map(|m| m.name_any())
        .collect();
    assert_eq!(owned.len(), 3, "{owned:?}");
    assert!(owned.contains(&"orphan-1".to_owned()) && owned.contains(&"orphan-2".to_owned()));
    assert_eq!(
        machines(&h).await.len(),
        4,
        "only the missing Machine was created"
    );
    h.stop().await;
}

/// A MachineHealthCheck's verdict (`HealthCheckSucceeded` and `OwnerRemediated` False) makes
/// the MachineSet mark the Machine `MachineDeleting`, delete it and create a replacement
/// (upstream `TestMachineSetReconciler_reconcileUnhealthyMachines`).
#[tokio::test]
async fn owner_remediated_machine_is_replaced() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "workers").await;
    h.create::<MachineSet>(machine_set_json("pool-c", "prod", 2, json!({})))
        .await;
    h.wait_for::<MachineSet>("pool-c", "two Machines to be Available", |ms| {
        ms.status.as_ref().and_then(|s| s.available_replicas) == Some(2)
    })
    .await;
    let before: BTreeSet<String> = machines(&h).await.iter().map(|m| m.name_any()).collect();
    let sick = before.iter().next().unwrap().clone();

    // Play the MachineHealthCheck.
    let verdict = json!({ "status": { "conditions": [
        { "type": "HealthCheckSucceeded", "status": "False", "reason": "UnhealthyNode",
          "message": "Node is unhealthy", "lastTransitionTime": "2026-01-01T00:00:00Z" },
        { "type": "OwnerRemediated", "status": "False", "reason": "WaitingForRemediation",
          "message": "Waiting for remediation", "lastTransitionTime": "2026-01-01T00:00:00Z" },
    ]}});
    corral_testenv::eventually(TIMEOUT, "the verdict to be written", || async {
        let machine = h.api::<Machine>().get(&sick).await.unwrap();
        let mut conditions: Vec<Value> = machine
            .status
            .as_ref()
            .map(|s| {
                s.conditions
                    .iter()
                    .map(|c| serde_json::to_value(c).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        conditions
            .retain(|c| c["type"] != "HealthCheckSucceeded" && c["type"] != "OwnerRemediated");
        conditions.extend(
            verdict["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .cloned(),
        );
        let patch = json!({
            "metadata": { "resourceVersion": machine.resource_version() },
            "status": { "conditions": conditions },
        });
        h.api::<Machine>()
            .patch_status(&sick, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .ok()
            .map(|_| ())
    })
    .await;

    let after = wait_machines(&h, "the sick Machine to be replaced", |m| {
        m.len() == 2 && m.iter().all(|m| m.name_any() != sick) && m.iter().all(is_available)
    })
    .await;
    let replacement: Vec<String> = after
        .iter()
        .map(|m| m.name_any())
        .filter(|name| !before.contains(name))
        .collect();
    assert_eq!(replacement.len(), 1, "one replacement: {replacement:?}");
    // The status converges: Remediating settles and the replacement is counted (a status
    // written between the sick Machine's removal and the replacement's creation may show one).
    let ms = h
        .wait_for::<MachineSet>("pool-c", "Remediating to settle with 2 replicas", |ms| {
            machine_set_condition(ms, "Remediating").is_some_and(|c| c.1 == "NotRemediating")
                && ms.status.as_ref().and_then(|s| s.replicas) == Some(2)
        })
        .await;
    assert_eq!(ms.status.as_ref().unwrap().replicas, Some(2));
    h.stop().await;
}

/// A template of a kind no API serves: ScalingUp names the kind, and the MachineSet is not
/// rewritten over and over while it waits (the retries back off).
#[tokio::test]
async fn machine_set_template_of_a_missing_kind_names_it() {
    let mut h = Harness::start_with_kinds(&[
        INFRA_CLUSTER,
        CONTROL_PLANE,
        BOOTSTRAP_CONFIG,
        BOOTSTRAP_CONFIG_TEMPLATE,
    ])
    .await;
    provisioned_cluster(&mut h, "prod").await;
    h.create_provider(
        BOOTSTRAP_CONFIG_TEMPLATE,
        "workers",
        json!({ "spec": { "template": { "spec": {} } } }),
    )
    .await;
    h.create::<MachineSet>(machine_set_json("pool-d", "prod", 2, json!({})))
        .await;
    let ms = h
        .wait_for::<MachineSet>("pool-d", "ScalingUp to name the missing kind", |ms| {
            let current = ms.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .all(|c| c.observed_generation == ms.metadata.generation)
            });
            current
                && machine_set_condition(ms, "ScalingUp")
                    .is_some_and(|c| c.2.contains("is not installed"))
        })
        .await;
    let (status, _, message) = machine_set_condition(&ms, "ScalingUp").unwrap();
    assert_eq!(status, "True");
    assert!(
        message.starts_with("Scaling up from 0 to 2 replicas is blocked because:\n* TestInfraMachineTemplate.test.infrastructure.cluster.x-k8s.io is not installed"),
        "{message}"
    );
    // A quiet period: nothing changes, so nothing is written.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = h.api::<MachineSet>().get("pool-d").await.unwrap();
    assert_eq!(again.resource_version(), ms.resource_version());
    assert!(machines(&h).await.is_empty());
    h.stop().await;
}

/// A paused Cluster holds its MachineSets (upstream `util/paused`): Paused is True, nothing is
/// created; unpaused, the Machines come.
#[tokio::test]
async fn paused_cluster_holds_the_machine_set() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "workers").await;
    h.create::<MachineSet>(machine_set_json("pool-p", "prod", 0, json!({})))
        .await;
    h.wait_for::<MachineSet>("pool-p", "the empty MachineSet to be reconciled", observed)
        .await;
    set_paused(&h, "prod", true).await;
    h.wait_for::<MachineSet>("pool-p", "the MachineSet to say it is paused", |ms| {
        machine_set_condition(ms, "Paused").is_some_and(|c| c.0 == "True")
    })
    .await;
    scale(&h, "pool-p", 2).await;
    // The paused reconcile of the new generation still writes the Paused condition, with that
    // generation: proof that it saw the new replicas and did nothing.
    let ms = h
        .wait_for::<MachineSet>("pool-p", "the paused MachineSet to see the scale", |ms| {
            let status = ms.status.as_ref();
            status
                .and_then(|s| condition(&s.conditions, "Paused"))
                .is_some_and(|c| {
                    c.status == "True" && c.observed_generation == ms.metadata.generation
                })
        })
        .await;
    assert_eq!(
        machine_set_condition(&ms, "Paused").unwrap().2,
        "Cluster spec.paused is set to true"
    );
    assert!(
        machines(&h).await.is_empty(),
        "nothing is created while paused"
    );

    set_paused(&h, "prod", false).await;
    h.wait_for::<MachineSet>("pool-p", "two Machines once unpaused", |ms| {
        machine_set_condition(ms, "Paused").is_some_and(|c| c.0 == "False")
            && ms.status.as_ref().and_then(|s| s.replicas) == Some(2)
    })
    .await;
    h.stop().await;
}

/// Upstream `getMachinesForMachineSet` lists Machines by the selector: a Machine relabelled out
/// of it is no longer the MachineSet's, which creates a replacement; the relabelled Machine is
/// left as it is (its labels are not put back).
#[tokio::test]
async fn machine_relabelled_out_of_the_selector_is_replaced() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "workers").await;
    h.create::<MachineSet>(machine_set_json("pool-a", "prod", 2, json!({})))
        .await;
    h.wait_for::<MachineSet>("pool-a", "two Machines to be Available", |ms| {
        ms.status.as_ref().and_then(|s| s.available_replicas) == Some(2)
    })
    .await;
    let relabelled = machines(&h).await[0].name_any();
    h.api::<Machine>()
        .patch(
            &relabelled,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "pool": "elsewhere" } } })),
        )
        .await
        .unwrap();

    let all = wait_machines(&h, "a replacement beside the relabelled Machine", |all| {
        all.len() == 3 && all.iter().filter(|m| is_available(m)).count() == 3
    })
    .await;
    let ms = h
        .wait_for::<MachineSet>("pool-a", "the status to count two Machines", |ms| {
            observed(ms) && ms.status.as_ref().and_then(|s| s.replicas) == Some(2)
        })
        .await;
    assert_eq!(ms.status.as_ref().unwrap().available_replicas, Some(2));
    let kept = all.iter().find(|m| m.name_any() == relabelled).unwrap();
    assert_eq!(kept.labels()["pool"], "elsewhere", "not relabelled back");
    assert!(kept.metadata.deletion_timestamp.is_none());
}

/// A creation interrupted between the provider object and its Machine leaves the object
/// behind; the MachineSet's first reconcile (held here by a paused Cluster until the object
/// exists) deletes it. Read from the provider kind's cache, already filled by another
/// MachineSet's Machines: objects the MachineSet does not own, or that its selector does not
/// select, stay.
#[tokio::test]
async fn machine_set_deletes_provider_objects_left_without_a_machine() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "workers").await;
    // Another MachineSet's Machine: its provider object fills the kind's cache.
    h.create::<MachineSet>(machine_set_json("pool-a", "prod", 1, json!({})))
        .await;
    h.wait_for::<MachineSet>("pool-a", "one Machine", |ms| {
        ms.status.as_ref().and_then(|s| s.replicas) == Some(1)
    })
    .await;
    set_paused(&h, "prod", true).await;
    let ms = h
        .create::<MachineSet>(machine_set_json("pool-o", "prod", 0, json!({})))
        .await;
    h.wait_for::<MachineSet>("pool-o", "the MachineSet to say it is paused", |ms| {
        machine_set_condition(ms, "Paused").is_some_and(|c| c.0 == "True")
    })
    .await;
    let owner = json!([{
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineSet",
        "name": "pool-o",
        "uid": ms.uid().unwrap(),
    }]);
    let labels = json!({ "pool": "pool-o", "cluster.x-k8s.io/cluster-name": "prod" });
    h.create_provider(
        INFRA_MACHINE,
        "pool-o-left",
        json!({ "metadata": { "labels": labels, "ownerReferences": owner } }),
    )
    .await;
    h.create_provider(
        INFRA_MACHINE,
        "pool-o-not-owned",
        json!({ "metadata": { "labels": labels } }),
    )
    .await;
    h.create_provider(
        INFRA_MACHINE,
        "pool-o-not-selected",
        json!({ "metadata": { "labels": { "pool": "other" }, "ownerReferences": owner } }),
    )
    .await;
    set_paused(&h, "prod", false).await;
    let gone = |name: &'static str| {
        let api = h.provider(INFRA_MACHINE);
        async move {
            match api.get_opt(name).await.unwrap() {
                None => true,
                Some(object) => object.metadata.deletion_timestamp.is_some(),
            }
        }
    };
    corral_testenv::eventually(
        TIMEOUT,
        "the object left without a Machine to go",
        || async { gone("pool-o-left").await.then_some(()) },
    )
    .await;
    assert!(!gone("pool-o-not-owned").await, "not the MachineSet's");
    assert!(!gone("pool-o-not-selected").await, "not selected");
    h.stop().await;
}
