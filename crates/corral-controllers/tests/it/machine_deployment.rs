//! The MachineDeployment controller against the API server, with the MachineSet and Machine
//! controllers and the fake provider of `machine_set.rs` (upstream
//! `core/reconcilers/machinedeployment/machinedeployment_controller_test.go`, and issue 4's
//! rollout checks): rolling updates watched Machine by Machine against maxSurge and
//! maxUnavailable, scaling, OnDelete, Corral's rollback annotation, and a crash mid-rollout.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use corral_api::{Machine, MachineDeployment, MachineSet};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::machine_set::*;
use crate::support::*;

const REVISION: &str = "machinedeployment.clusters.x-k8s.io/revision";

fn machine_deployment_json(
    name: &str,
    replicas: i32,
    templates: &str,
    rollout: Value,
    annotations: Value,
) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineDeployment",
        "metadata": { "name": name, "annotations": annotations },
        "spec": {
            "clusterName": "prod",
            "replicas": replicas,
            "rollout": rollout,
            "selector": { "matchLabels": { "pool": name } },
            "template": {
                "metadata": { "labels": { "pool": name } },
                "spec": machine_template("prod", templates, "v1.36.0")["spec"],
            },
        },
    })
}

async fn machine_sets(h: &Harness) -> Vec<MachineSet> {
    let mut list = h
        .api::<MachineSet>()
        .list(&Default::default())
        .await
        .expect("MachineSets are listed")
        .items;
    list.sort_by_key(|ms| ms.name_any());
    list
}

fn counters(md: &MachineDeployment) -> (Option<i32>, Option<i32>, Option<i32>) {
    let status = md.status.as_ref();
    (
        status.and_then(|s| s.replicas),
        status.and_then(|s| s.available_replicas),
        status.and_then(|s| s.up_to_date_replicas),
    )
}

fn observed(md: &MachineDeployment) -> bool {
    md.status.as_ref().and_then(|s| s.observed_generation) == md.metadata.generation
}

/// Settled at `replicas`: all Machines there, available and up to date, the status computed
/// from the current spec.
fn settled(md: &MachineDeployment, replicas: i32) -> bool {
    observed(md) && counters(md) == (Some(replicas), Some(replicas), Some(replicas))
}

async fn wait_settled(h: &Harness, name: &str, replicas: i32, what: &str) -> MachineDeployment {
    h.wait_for::<MachineDeployment>(name, what, |md| settled(md, replicas))
        .await
}

async fn patch_md(h: &Harness, name: &str, patch: Value) {
    h.api::<MachineDeployment>()
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("the MachineDeployment is patched");
}

/// Points the template at other provider templates: a change that calls for new Machines.
async fn change_template(h: &Harness, name: &str, templates: &str) {
    patch_md(
        h,
        name,
        json!({ "spec": { "template": { "spec": {
            "bootstrap": { "configRef": BOOTSTRAP_CONFIG_TEMPLATE.reference(templates) },
            "infrastructureRef": INFRA_MACHINE_TEMPLATE.reference(templates),
        } } } }),
    )
    .await;
}

/// What the template of a Machine's infrastructure was.
async fn cloned_from(h: &Harness, machine: &Machine) -> String {
    let infra = h
        .get_provider(INFRA_MACHINE, &machine.spec.infrastructure_ref.name)
        .await
        .expect("the infrastructure machine exists");
    infra.annotations()["cluster.x-k8s.io/cloned-from-name"].clone()
}

/// What the watch saw.
#[derive(Debug, Default)]
struct Observed {
    violations: Vec<String>,
    most_machines: usize,
    fewest_available: usize,
    states: usize,
}

/// Watches the namespace's Machines and checks every state it sees against
/// `machines ≤ max` and `available ≥ min` (a Machine counts as available when its Available
/// condition is True and it is not being deleted).
struct InvariantWatch {
    task: JoinHandle<()>,
    observed: Arc<Mutex<Observed>>,
}

impl InvariantWatch {
    fn start(h: &Harness, max: usize, min: usize) -> InvariantWatch {
        let api: Api<Machine> = h.api();
        let observed = Arc::new(Mutex::new(Observed {
            fewest_available: usize::MAX,
            ..Default::default()
        }));
        let shared = observed.clone();
        let task = tokio::spawn(async move {
            let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
            let mut machines: BTreeMap<String, Machine> = BTreeMap::new();
            let mut listing: BTreeMap<String, Machine> = BTreeMap::new();
            let mut ready = false;
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                match event {
                    Event::Init => listing.clear(),
                    Event::InitApply(machine) => {
                        listing.insert(machine.name_any(), machine);
                    }
                    Event::InitDone => {
                        machines = std::mem::take(&mut listing);
                        ready = true;
                    }
                    Event::Apply(machine) => {
                        machines.insert(machine.name_any(), machine);
                    }
                    Event::Delete(machine) => {
                        machines.remove(&machine.name_any());
                    }
                }
                if !ready {
                    continue;
                }
                let total = machines.len();
                let available = machines.values().filter(|m| is_available(m)).count();
                let mut observed = shared.lock().unwrap();
                observed.states += 1;
                observed.most_machines = observed.most_machines.max(total);
                observed.fewest_available = observed.fewest_available.min(available);
                if total > max || available < min {
                    let names: Vec<String> = machines
                        .values()
                        .map(|m| {
                            let mark = if m.metadata.deletion_timestamp.is_some() {
                                "x"
                            } else if is_available(m) {
                                ""
                            } else {
                                "~"
                            };
                            format!("{}{mark}", m.name_any())
                        })
                        .collect();
                    observed.violations.push(format!(
                        "{total} Machines (max {max}), {available} available (min {min}): {names:?}"
                    ));
                }
            }
        });
        InvariantWatch { task, observed }
    }

    fn finish(self) -> Observed {
        self.task.abort();
        std::mem::take(&mut *self.observed.lock().unwrap())
    }
}

/// Issue 4's rollout check: a MachineDeployment of 3 (maxSurge 1, maxUnavailable 0) rolls to a
/// new template without ever having more than 4 Machines or fewer than 3 available, every
/// state checked as the watch delivers it; the old MachineSet is cleaned up and the revision
/// moves to 2. Then it scales to 5 and to 1.
#[tokio::test]
async fn rolling_update_stays_within_surge_and_unavailability_then_scales() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "v1").await;
    templates(&h, "v2").await;
    h.create::<MachineDeployment>(machine_deployment_json("md", 3, "v1", json!({}), json!({})))
        .await;
    let md = wait_settled(&h, "md", 3, "three available Machines").await;
    assert!(
        md.finalizers()
            .contains(&"cluster.x-k8s.io/machinedeployment".to_owned())
    );
    assert_eq!(owners(&md), ["Cluster/prod"]);
    assert_eq!(md.annotations()[REVISION], "1");
    let status = md.status.as_ref().unwrap();
    assert_eq!(
        status.selector.as_deref(),
        Some("cluster.x-k8s.io/cluster-name=prod,pool=md")
    );
    assert_eq!(status.phase.map(|p| p.as_str()), Some("Running"));
    assert_eq!(
        condition(&status.conditions, "Available").unwrap().status,
        "True"
    );
    assert_eq!(
        condition(&status.conditions, "MachinesUpToDate")
            .unwrap()
            .status,
        "True"
    );
    let sets = machine_sets(&h).await;
    assert_eq!(sets.len(), 1);
    let first = &sets[0];
    assert!(first.name_any().starts_with("md-"), "{}", first.name_any());
    assert_eq!(owners(first), ["MachineDeployment/md*"]);
    assert_eq!(first.labels()["cluster.x-k8s.io/deployment-name"], "md");
    let unique = first.labels()["machine-template-hash"].clone();
    assert!(
        unique.ends_with(&first.name_any()["md-".len()..]),
        "{unique}"
    );
    assert_eq!(first.annotations()[REVISION], "1");
    assert_eq!(
        first.annotations()["machinedeployment.clusters.x-k8s.io/desired-replicas"],
        "3"
    );
    assert_eq!(
        first.annotations()["machinedeployment.clusters.x-k8s.io/max-replicas"],
        "4"
    );
    for machine in machines(&h).await {
        assert_eq!(machine.labels()["cluster.x-k8s.io/deployment-name"], "md");
        assert_eq!(
            machine_condition(&machine, "UpToDate").map(|c| c.0),
            Some("True".into())
        );
    }

    let watch = InvariantWatch::start(&h, 4, 3);
    change_template(&h, "md", "v2").await;
    let md = h
        .wait_for::<MachineDeployment>("md", "the rollout to complete and clean up", |md| {
            settled(md, 3) && md.annotations().get(REVISION).map(String::as_str) == Some("2")
        })
        .await;
    let sets = corral_testenv::eventually(TIMEOUT, "the old MachineSet to be deleted", || async {
        let sets = machine_sets(&h).await;
        (sets.len() == 1).then_some(sets)
    })
    .await;
    let observed = watch.finish();
    assert!(observed.violations.is_empty(), "{:#?}", observed.violations);
    assert!(
        observed.states > 10,
        "the watch saw the rollout: {observed:?}"
    );
    assert_eq!(
        observed.most_machines, 4,
        "the rollout used its surge: {observed:?}"
    );
    assert_eq!(sets[0].annotations()[REVISION], "2");
    assert_ne!(sets[0].name_any(), first.name_any());
    let all = machines(&h).await;
    assert_eq!(all.len(), 3);
    for machine in &all {
        assert_eq!(cloned_from(&h, machine).await, "v2");
    }
    let status = md.status.as_ref().unwrap();
    assert_eq!(
        condition(&status.conditions, "RollingOut").unwrap().reason,
        "NotRollingOut"
    );
    let reasons = event_reasons(&h.client, &h.namespace, "md").await;
    for reason in ["SuccessfulCreate", "SuccessfulScale", "SuccessfulDelete"] {
        assert!(
            reasons.contains(&reason.to_owned()),
            "{reason}: {reasons:?}"
        );
    }

    patch_md(&h, "md", json!({ "spec": { "replicas": 5 } })).await;
    wait_settled(&h, "md", 5, "five available Machines").await;
    assert_eq!(machines(&h).await.len(), 5);
    patch_md(&h, "md", json!({ "spec": { "replicas": 1 } })).await;
    wait_settled(&h, "md", 1, "one Machine").await;
    wait_machines(&h, "the others to be gone", |m| m.len() == 1).await;
    let sets = machine_sets(&h).await;
    assert_eq!(sets[0].spec.replicas, Some(1));
    assert_eq!(
        sets[0].annotations()["machinedeployment.clusters.x-k8s.io/desired-replicas"],
        "1"
    );

    h.api::<MachineDeployment>()
        .delete("md", &DeleteParams::default())
        .await
        .unwrap();
    h.wait_gone::<MachineDeployment>("md", "the MachineDeployment to go")
        .await;
    assert!(machine_sets(&h).await.is_empty());
    assert!(machines(&h).await.is_empty());
    h.stop().await;
}

/// Upstream's OnDelete strategy (`machinedeployment_rollout_ondelete.go`): a new template
/// makes a new MachineSet but deletes nothing; the old MachineSet may not create Machines;
/// each old Machine the user deletes is replaced by a new one.
#[tokio::test]
async fn on_delete_replaces_only_the_machines_the_user_deletes() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "v1").await;
    templates(&h, "v2").await;
    h.create::<MachineDeployment>(machine_deployment_json(
        "od",
        2,
        "v1",
        json!({ "strategy": { "type": "OnDelete" } }),
        json!({}),
    ))
    .await;
    wait_settled(&h, "od", 2, "two available Machines").await;
    let old_machines: Vec<String> = machines(&h).await.iter().map(|m| m.name_any()).collect();

    change_template(&h, "od", "v2").await;
    let md = h
        .wait_for::<MachineDeployment>(
            "od",
            "the new MachineSet and the RollingOut condition",
            |md| {
                observed(md)
                    && md.annotations().get(REVISION).map(String::as_str) == Some("2")
                    && md
                        .status
                        .as_ref()
                        .and_then(|s| condition(&s.conditions, "RollingOut"))
                        .is_some_and(|c| c.status == "True")
            },
        )
        .await;
    let rolling_out = condition(&md.status.as_ref().unwrap().conditions, "RollingOut").unwrap();
    assert_eq!(
        rolling_out.message,
        "Rolling out 2 not up-to-date replicas\n* TestBootstrapConfig is not up-to-date\n* TestInfraMachine is not up-to-date"
    );
    let sets = machine_sets(&h).await;
    assert_eq!(sets.len(), 2);
    let (old, new): (Vec<&MachineSet>, Vec<&MachineSet>) = sets
        .iter()
        .partition(|ms| ms.annotations()[REVISION] == "1");
    assert_eq!(
        old[0].annotations()["cluster.x-k8s.io/disable-machine-create"],
        "true"
    );
    assert_eq!(
        new[0].annotations()["cluster.x-k8s.io/disable-machine-create"],
        "false"
    );
    assert_eq!(
        new[0].spec.replicas,
        Some(0),
        "nothing deleted, nothing replaced"
    );
    let names: Vec<String> = machines(&h).await.iter().map(|m| m.name_any()).collect();
    assert_eq!(names, old_machines);

    for (deleted, name) in old_machines.iter().enumerate() {
        h.api::<Machine>()
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
        let new_name = new[0].name_any();
        wait_machines(&h, "the deleted Machine to be replaced by a new one", |m| {
            m.len() == 2
                && m.iter().all(|m| &m.name_any() != name)
                && m.iter()
                    .filter(|m| m.name_any().starts_with(&new_name))
                    .count()
                    == deleted + 1
        })
        .await;
    }
    wait_settled(&h, "od", 2, "the rollout to complete").await;
    corral_testenv::eventually(TIMEOUT, "the old MachineSet to be cleaned up", || async {
        (machine_sets(&h).await.len() == 1).then_some(())
    })
    .await;
    h.stop().await;
}

/// Upstream's metadata propagation (`docs/book/src/reference/api/metadata-propagation.md`):
/// the template's labels and annotations reach the MachineSet and its Machines in place, with
/// no rollout, and those removed from the template are removed from them too, while a label a
/// user put on a Machine stays.
#[tokio::test]
async fn template_labels_and_annotations_removed_are_removed_in_place() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "v1").await;
    let mut md = machine_deployment_json("lb", 2, "v1", json!({}), json!({}));
    md["spec"]["template"]["metadata"] = json!({
        "labels": { "pool": "lb", "team": "blue", "node.cluster.x-k8s.io/tier": "gold" },
        "annotations": { "example.com/note": "hello" },
    });
    h.create::<MachineDeployment>(md).await;
    wait_settled(&h, "lb", 2, "two available Machines").await;
    let first = machine_sets(&h).await.remove(0);
    assert_eq!(first.labels()["team"], "blue");
    for machine in machines(&h).await {
        assert_eq!(machine.labels()["team"], "blue");
        assert_eq!(machine.annotations()["example.com/note"], "hello");
    }
    let user_labelled = machines(&h).await.remove(0).name_any();
    h.api::<Machine>()
        .patch(
            &user_labelled,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "owner": "me" } } })),
        )
        .await
        .unwrap();

    patch_md(
        &h,
        "lb",
        json!({ "spec": { "template": { "metadata": {
            "labels": { "team": null, "node.cluster.x-k8s.io/tier": "silver" },
            "annotations": { "example.com/note": null },
        } } } }),
    )
    .await;
    let machine_set = h
        .wait_for::<MachineSet>(
            &first.name_any(),
            "the MachineSet to lose the label",
            |ms| {
                !ms.labels().contains_key("team")
                    && !ms.spec.template.metadata.labels.contains_key("team")
                    && !ms
                        .spec
                        .template
                        .metadata
                        .annotations
                        .contains_key("example.com/note")
            },
        )
        .await;
    assert_eq!(
        machine_set.spec.template.metadata.labels["node.cluster.x-k8s.io/tier"],
        "silver"
    );
    let all = wait_machines(
        &h,
        "the Machines to lose the label and annotation",
        |machines| {
            machines.len() == 2
                && machines.iter().all(|m| {
                    !m.labels().contains_key("team")
                        && !m.annotations().contains_key("example.com/note")
                        && m.labels()
                            .get("node.cluster.x-k8s.io/tier")
                            .map(String::as_str)
                            == Some("silver")
                })
        },
    )
    .await;
    let kept = all.iter().find(|m| m.name_any() == user_labelled).unwrap();
    assert_eq!(kept.labels()["owner"], "me", "a user's label stays");
    assert_eq!(kept.labels()["pool"], "lb");
    assert_eq!(
        machine_sets(&h).await.len(),
        1,
        "changed in place, no rollout"
    );
    h.stop().await;
}

/// Corral's rollback: with a revision history limit of 1 the old MachineSet stays after the
/// rollout; `rollback-to-revision: previous` gives the MachineDeployment its template back,
/// the annotation is consumed, and the rollout back reuses that MachineSet under revision 3.
#[tokio::test]
async fn rollback_annotation_restores_the_previous_template() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "v1").await;
    templates(&h, "v2").await;
    h.create::<MachineDeployment>(machine_deployment_json(
        "rb",
        2,
        "v1",
        json!({}),
        json!({ "machinedeployment.clusters.x-k8s.io/revision-history-limit": "1" }),
    ))
    .await;
    wait_settled(&h, "rb", 2, "two available Machines").await;
    let first = machine_sets(&h).await.remove(0);
    change_template(&h, "rb", "v2").await;
    h.wait_for::<MachineDeployment>("rb", "the rollout to v2", |md| {
        settled(md, 2) && md.annotations().get(REVISION).map(String::as_str) == Some("2")
    })
    .await;
    let sets = machine_sets(&h).await;
    assert_eq!(sets.len(), 2, "the history limit keeps the old MachineSet");
    let kept = sets
        .iter()
        .find(|ms| ms.name_any() == first.name_any())
        .unwrap();
    assert_eq!(kept.spec.replicas, Some(0));

    let watch = InvariantWatch::start(&h, 3, 2);
    patch_md(
        &h,
        "rb",
        json!({ "metadata": { "annotations": {
            "machinedeployment.clusters.x-k8s.io/rollback-to-revision": "previous",
        } } }),
    )
    .await;
    let md = h
        .wait_for::<MachineDeployment>("rb", "the rollback to complete", |md| {
            settled(md, 2) && md.annotations().get(REVISION).map(String::as_str) == Some("3")
        })
        .await;
    let observed = watch.finish();
    assert!(observed.violations.is_empty(), "{:#?}", observed.violations);
    assert!(
        !md.annotations()
            .contains_key("machinedeployment.clusters.x-k8s.io/rollback-to-revision"),
        "the request is consumed"
    );
    assert_eq!(md.spec.template.spec.infrastructure_ref.name, "v1");
    let back = h.api::<MachineSet>().get(&first.name_any()).await.unwrap();
    assert_eq!(back.annotations()[REVISION], "3");
    assert_eq!(
        back.annotations()["machinedeployment.clusters.x-k8s.io/revision-history"],
        "1"
    );
    for machine in wait_machines(&h, "the v2 Machines to be gone", |m| m.len() == 2).await {
        assert_eq!(cloned_from(&h, &machine).await, "v1");
    }
    let reasons = event_reasons(&h.client, &h.namespace, "rb").await;
    assert!(reasons.contains(&"RollbackDone".to_owned()), "{reasons:?}");

    // A revision that is gone is refused, with a Warning, and consumed too.
    patch_md(
        &h,
        "rb",
        json!({ "metadata": { "annotations": {
            "machinedeployment.clusters.x-k8s.io/rollback-to-revision": "7",
        } } }),
    )
    .await;
    h.wait_for::<MachineDeployment>("rb", "the request to be consumed", |md| {
        !md.annotations()
            .contains_key("machinedeployment.clusters.x-k8s.io/rollback-to-revision")
    })
    .await;
    let reasons = event_reasons(&h.client, &h.namespace, "rb").await;
    assert!(
        reasons.contains(&"RollbackFailed".to_owned()),
        "{reasons:?}"
    );
    h.stop().await;
}

/// Issue 4's restart check: the controllers crash in the middle of a rolling update (their
/// caches and expectations lost, reconciles cut short) and a fresh set finishes it, never
/// going above replicas + maxSurge Machines or below replicas − maxUnavailable available.
#[tokio::test]
async fn crash_mid_rollout_creates_no_extra_machines() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "v1").await;
    templates(&h, "v2").await;
    h.create::<MachineDeployment>(machine_deployment_json(
        "cr",
        4,
        "v1",
        json!({ "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 2, "maxUnavailable": 1 } } }),
        json!({}),
    ))
    .await;
    wait_settled(&h, "cr", 4, "four available Machines").await;

    let watch = InvariantWatch::start(&h, 6, 3);
    change_template(&h, "cr", "v2").await;
    // Crash as soon as the new MachineSet has Machines.
    corral_testenv::eventually(TIMEOUT, "the new MachineSet to have Machines", || async {
        let sets = machine_sets(&h).await;
        sets.iter()
            .any(|ms| {
                ms.annotations().get(REVISION).map(String::as_str) == Some("2")
                    && ms.spec.replicas.unwrap_or(0) > 0
            })
            .then_some(())
    })
    .await;
    h.crash_and_restart_controllers().await;
    h.wait_for::<MachineDeployment>("cr", "the rollout to complete after the crash", |md| {
        settled(md, 4) && md.annotations().get(REVISION).map(String::as_str) == Some("2")
    })
    .await;
    let all = wait_machines(&h, "the old Machines to be gone", |m| m.len() == 4).await;
    let observed = watch.finish();
    assert!(observed.violations.is_empty(), "{:#?}", observed.violations);
    for machine in &all {
        assert_eq!(cloned_from(&h, machine).await, "v2");
    }
    assert_eq!(machine_sets(&h).await.len(), 1, "no second new MachineSet");
    // Every infrastructure machine belongs to a Machine: none left over by the crash.
    let infra = h
        .provider(INFRA_MACHINE)
        .list(&Default::default())
        .await
        .unwrap();
    let expected: Vec<String> = all.iter().map(|m| m.name_any()).collect();
    corral_testenv::eventually(TIMEOUT, "no orphan infrastructure machines", || async {
        let infra = h
            .provider(INFRA_MACHINE)
            .list(&Default::default())
            .await
            .unwrap();
        let names: Vec<String> = infra
            .items
            .iter()
            .filter(|o| o.metadata.deletion_timestamp.is_none())
            .map(|o| o.name_any())
            .collect();
        (names == expected).then_some(())
    })
    .await;
    drop(infra);
    h.stop().await;
}

/// Upstream `sync` for a paused MachineDeployment: a new template makes no MachineSet and
/// replaces no Machine, while `spec.replicas` is still followed; resumed, it rolls out.
#[tokio::test]
async fn paused_machine_deployment_scales_but_does_not_roll_out() {
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "v1").await;
    templates(&h, "v2").await;
    h.create::<MachineDeployment>(machine_deployment_json("pz", 2, "v1", json!({}), json!({})))
        .await;
    wait_settled(&h, "pz", 2, "two available Machines").await;

    patch_md(&h, "pz", json!({ "spec": { "paused": true } })).await;
    change_template(&h, "pz", "v2").await;
    patch_md(&h, "pz", json!({ "spec": { "replicas": 3 } })).await;
    let md = h
        .wait_for::<MachineDeployment>("pz", "the paused MachineDeployment to scale", |md| {
            observed(md) && counters(md).1 == Some(3)
        })
        .await;
    assert_eq!(
        md.annotations()[REVISION],
        "1",
        "no new revision while paused"
    );
    assert_eq!(
        machine_sets(&h).await.len(),
        1,
        "no new MachineSet while paused"
    );
    let all = machines(&h).await;
    assert_eq!(all.len(), 3);
    for machine in &all {
        assert_eq!(cloned_from(&h, machine).await, "v1");
    }
    let status = md.status.as_ref().unwrap();
    assert_eq!(
        condition(&status.conditions, "Paused").unwrap().status,
        "False",
        "spec.paused is not the paused annotation"
    );

    patch_md(&h, "pz", json!({ "spec": { "paused": false } })).await;
    h.wait_for::<MachineDeployment>("pz", "the rollout once resumed", |md| {
        settled(md, 3) && md.annotations().get(REVISION).map(String::as_str) == Some("2")
    })
    .await;
    for machine in wait_machines(&h, "the v1 Machines to be gone", |m| m.len() == 3).await {
        assert_eq!(cloned_from(&h, &machine).await, "v2");
    }
    h.stop().await;
}

/// A template of a kind no API serves: ScalingUp names the kind, no MachineSet is made, and
/// the MachineDeployment is not rewritten over and over while it waits.
#[tokio::test]
async fn machine_deployment_template_of_a_missing_kind_names_it() {
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
        "v1",
        json!({ "spec": { "template": { "spec": {} } } }),
    )
    .await;
    h.create::<MachineDeployment>(machine_deployment_json("mk", 2, "v1", json!({}), json!({})))
        .await;
    let md = h
        .wait_for::<MachineDeployment>("mk", "ScalingUp to name the missing kind", |md| {
            let Some(status) = md.status.as_ref() else {
                return false;
            };
            let current = status
                .conditions
                .iter()
                .all(|c| c.observed_generation == md.metadata.generation);
            current
                && condition(&status.conditions, "ScalingUp")
                    .is_some_and(|c| c.message.contains("is not installed"))
        })
        .await;
    let scaling_up = condition(&md.status.as_ref().unwrap().conditions, "ScalingUp").unwrap();
    assert_eq!(scaling_up.status, "True");
    assert!(
        scaling_up.message.starts_with(
            "Scaling up from 0 to 2 replicas is blocked because TestInfraMachineTemplate.test.infrastructure.cluster.x-k8s.io is not installed"
        ),
        "{}",
        scaling_up.message
    );
    assert!(machine_sets(&h).await.is_empty());
    // A quiet period: nothing changes, so nothing is written.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let again = h.api::<MachineDeployment>().get("mk").await.unwrap();
    assert_eq!(again.resource_version(), md.resource_version());
    h.stop().await;
}

/// Issue 4's bad input: negative replicas are refused by the API server (the scale
/// subresource's specReplicasPath); a negative bound, which upstream's webhook lets through, is
/// named in ScalingUp and nothing is created.
#[tokio::test]
async fn bad_rollout_bounds_and_replicas_are_refused_or_named() {
    let mut h = Harness::start().await;
    provisioned_cluster(&mut h, "prod").await;
    templates(&h, "v1").await;
    let create = |object: Value| {
        let api = h.api::<MachineDeployment>();
        async move {
            let object: MachineDeployment = serde_json::from_value(object).unwrap();
            api.create(&Default::default(), &object).await
        }
    };
    let bounds = |surge: Value, unavailable: Value| {
        json!({ "strategy": { "type": "RollingUpdate", "rollingUpdate": {
            "maxSurge": surge, "maxUnavailable": unavailable,
        } } })
    };
    // Bounds that are not integers or percentages, or both 0, are refused by the API server's
    // admission rules (upstream's webhook; corral-cli's `tests/it/admission.rs`), which this
    // harness does not run; what passes them reaches the controller, which names it.
    create(machine_deployment_json(
        "bad-3",
        2,
        "v1",
        bounds(json!(-1), json!(0)),
        json!({}),
    ))
    .await
    .expect("a negative bound passes admission, as upstream's webhook lets it");
    let md = h
        .wait_for::<MachineDeployment>("bad-3", "ScalingUp to name the negative bound", |md| {
            md.status
                .as_ref()
                .and_then(|s| condition(&s.conditions, "ScalingUp"))
                .is_some_and(|c| c.message.contains("maxSurge is -1"))
        })
        .await;
    let message = &condition(&md.status.as_ref().unwrap().conditions, "ScalingUp")
        .unwrap()
        .message;
    assert_eq!(
        message,
        "Scaling up from 0 to 2 replicas is blocked because spec.rollout.strategy.rollingUpdate.maxSurge is -1; it must not be negative"
    );
    assert!(machine_sets(&h).await.is_empty());

    // Negative replicas never reach the controller: the API server refuses a negative value at
    // the scale subresource's specReplicasPath, as kube-apiserver does.
    let refused = create(machine_deployment_json(
        "bad-4",
        -1,
        "v1",
        json!({}),
        json!({}),
    ))
    .await
    .expect_err("negative replicas are refused");
    assert!(
        refused
            .to_string()
            .contains(".spec.replicas: Invalid value: -1: should be a non-negative integer"),
        "{refused}"
    );
    assert!(machine_sets(&h).await.is_empty());
    assert!(machines(&h).await.is_empty());
    h.stop().await;
}

/// Issue 4's benchmark with the generic provider: a MachineDeployment of
/// `CORRAL_BENCH_REPLICAS` (default 1,000) Machines reaches Running, then rolls to a new
/// template with `CORRAL_BENCH_MAX_SURGE` (default 10%) and `CORRAL_BENCH_MAX_UNAVAILABLE`
/// (default 0). Run with
/// `cargo nextest run --release -p corral-controllers --run-ignored only machine_deployment_benchmark --no-capture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark, minutes in a debug build"]
async fn machine_deployment_benchmark() {
    let replicas: i32 = std::env::var("CORRAL_BENCH_REPLICAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let bound = |name: &str, default: &str| {
        let value = std::env::var(name).unwrap_or_else(|_| default.to_owned());
        value
            .parse::<i64>()
            .map_or(json!(value), |number| json!(number))
    };
    let rollout = json!({ "strategy": { "type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": bound("CORRAL_BENCH_MAX_SURGE", "10%"),
        "maxUnavailable": bound("CORRAL_BENCH_MAX_UNAVAILABLE", "0"),
    } } });
    let timeout = std::time::Duration::from_secs(600);
    let mut h = Harness::start().await;
    let workload = provisioned_cluster(&mut h, "prod").await;
    let _provider = FakeProvider::start(&h, &workload);
    templates(&h, "v1").await;
    templates(&h, "v2").await;
    let running = |machines: &[Machine]| {
        machines
            .iter()
            .filter(|m| {
                m.status
                    .as_ref()
                    .and_then(|s| s.phase)
                    .is_some_and(|p| p.as_str() == "Running")
            })
            .count()
    };
    let started = std::time::Instant::now();
    h.create::<MachineDeployment>(machine_deployment_json(
        "bench",
        replicas,
        "v1",
        rollout.clone(),
        json!({}),
    ))
    .await;
    corral_testenv::eventually(timeout, "every Machine to be Running", || async {
        let machines = machines(&h).await;
        (running(&machines) == replicas as usize).then_some(())
    })
    .await;
    let to_running = started.elapsed();
    wait_settled_within(&h, "bench", replicas, timeout).await;
    let to_settled = started.elapsed();

    let started = std::time::Instant::now();
    change_template(&h, "bench", "v2").await;
    corral_testenv::eventually(timeout, "the rollout to complete", || async {
        let md = h.api::<MachineDeployment>().get("bench").await.ok()?;
        let sets = machine_sets(&h).await;
        // Only the new MachineSet is left once every old Machine is gone.
        let done = settled(&md, replicas)
            && sets.len() == 1
            && sets[0].annotations().get(REVISION).map(String::as_str) == Some("2");
        done.then_some(())
    })
    .await;
    let rolled = started.elapsed();
    println!(
        "BENCHMARK replicas={replicas} rollout={rollout} running={:.1}s available_and_up_to_date={:.1}s rolled={:.1}s",
        to_running.as_secs_f64(),
        to_settled.as_secs_f64(),
        rolled.as_secs_f64()
    );
    h.stop().await;
}

async fn wait_settled_within(h: &Harness, name: &str, replicas: i32, timeout: std::time::Duration) {
    corral_testenv::eventually(timeout, "the MachineDeployment to settle", || async {
        let md = h.api::<MachineDeployment>().get(name).await.ok()?;
        settled(&md, replicas).then_some(())
    })
    .await;
}
