//! Vectors ported from upstream `core/reconcilers/machinedeployment/`:
//! `machinedeployment_rollout_rollingupdate_test.go` (`TestReconcileNewMachineSet`,
//! `Test_reconcileOldMachineSetsRollingUpdate`, `Test_reconcileDeadlockBreaker`),
//! `machinedeployment_rollout_ondelete_test.go` (`TestReconcileOldMachineSetsOnDelete`) and
//! `mdutil/util_test.go` (`TestResolveFenceposts`, `TestMaxUnavailable`, `TestNewMSNewReplicas`,
//! `TestDeploymentComplete`, `TestComputeRevisionAnnotations`, `TestFindNewAndOldMachineSets`,
//! `TestMachineTemplateUpToDate`), plus Corral's own for proportional scaling, cleanup and
//! rollback. Upstream's test MachineSets have no creation time, so ties go by name, as here.

use std::collections::BTreeMap;

use corral_api::annotations::{DESIRED_REPLICAS, DISABLE_MACHINE_CREATE, MAX_REPLICAS, REVISION};
use corral_api::{
    Bootstrap, ContractVersionedObjectReference, MachineDeploymentRollout,
    MachineDeploymentRolloutStrategy, MachineDeploymentRolloutStrategyRollingUpdate,
    MachineDeploymentRolloutStrategyType, MachineSet, MachineSetSpec, MachineSetStatus,
    MachineSpec, MachineTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::*;

fn epoch() -> Timestamp {
    Timestamp::UNIX_EPOCH
}

fn rolling(max_surge: i32, max_unavailable: i32) -> RolloutStrategy {
    RolloutStrategy::RollingUpdate {
        max_surge: IntOrString::Int(max_surge),
        max_unavailable: IntOrString::Int(max_unavailable),
    }
}

fn percent(text: &str) -> IntOrString {
    IntOrString::String(text.into())
}

/// A MachineSet with `replicas` Machines, all available, as upstream's `createMS`; it matches
/// the MachineDeployment's template unless marked old.
fn ms(name: &str, replicas: i32) -> MachineSetState {
    MachineSetState {
        name: name.into(),
        created: epoch(),
        template_differences: Vec::new(),
        revision: None,
        revision_history: None,
        desired_replicas: None,
        max_replicas: None,
        replicas,
        status_replicas: replicas,
        available_replicas: replicas,
        up_to_date_replicas: 0,
        deleting: false,
        generation_observed: true,
    }
}

impl MachineSetState {
    fn old(mut self) -> Self {
        self.template_differences = vec!["spec.version v1, v2 required".into()];
        self
    }

    fn status(mut self, replicas: i32, available: i32) -> Self {
        self.status_replicas = replicas;
        self.available_replicas = available;
        self
    }

    fn revision(mut self, revision: &str, history: &str) -> Self {
        self.revision = Some(revision.into());
        self.revision_history = (!history.is_empty()).then(|| history.into());
        self
    }

    fn created(mut self, created: Timestamp) -> Self {
        self.created = created;
        self
    }
}

fn input<'a>(
    replicas: i32,
    strategy: &'a RolloutStrategy,
    machine_sets: &'a [MachineSetState],
) -> RolloutInput<'a> {
    RolloutInput {
        replicas,
        strategy,
        paused: false,
        rollout_after: None,
        now: epoch(),
        machine_sets,
        new_machine_set_name: "new",
        revision_history_limit: 0,
        generation_observed: true,
    }
}

type Intents = BTreeMap<String, i32>;
type Notes = BTreeMap<String, Vec<String>>;

/// Runs one of the planner's steps on a planner that already has the `preset` intents, as
/// upstream's tests build a `rolloutPlanner` by hand; returns the intents and notes.
fn run_step(
    input: &RolloutInput<'_>,
    preset: &[(&str, i32)],
    step: impl FnOnce(&mut Planner<'_>),
) -> (Intents, Notes) {
    let mut planner = Planner::new(input).unwrap();
    for (name, replicas) in preset {
        let index = planner
            .machine_sets
            .iter()
            .position(|machine_set| machine_set.name == *name)
            .unwrap();
        planner.intents[index] = Some(*replicas);
    }
    step(&mut planner);
    let mut intents = Intents::new();
    let mut notes = Notes::new();
    for (index, machine_set) in planner.machine_sets.iter().enumerate() {
        if let Some(replicas) = planner.intents[index] {
            intents.insert(machine_set.name.clone(), replicas);
        }
        if !planner.notes[index].is_empty() {
            notes.insert(machine_set.name.clone(), planner.notes[index].clone());
        }
    }
    (intents, notes)
}

fn intents(pairs: &[(&str, i32)]) -> Intents {
    pairs
        .iter()
        .map(|(name, replicas)| (name.to_string(), *replicas))
        .collect()
}

fn notes(pairs: &[(&str, &[&str])]) -> Notes {
    pairs
        .iter()
        .map(|(name, notes)| {
            (
                name.to_string(),
                notes.iter().map(|note| note.to_string()).collect(),
            )
        })
        .collect()
}

const UNAVAILABLE_NOTE: &str = "scale down to align to existing Machines or scale down by removing unavailable replicas (and no available replicas exist on the MachineSet)";

#[test]
fn upstream_resolve_fenceposts() {
    assert_eq!(
        resolve_fenceposts(&percent("0%"), &percent("0%"), 0),
        Ok((0, 1))
    );
    assert_eq!(
        resolve_fenceposts(&percent("39%"), &percent("39%"), 10),
        Ok((4, 3))
    );
    assert!(resolve_fenceposts(&percent("oops"), &percent("39%"), 10).is_err());
    assert!(resolve_fenceposts(&percent("55%"), &percent("urg"), 10).is_err());
    assert!(resolve_fenceposts(&percent("5"), &percent("1"), 7).is_err());
}

#[test]
fn upstream_max_unavailable() {
    let strategy = |max_unavailable: IntOrString| RolloutStrategy::RollingUpdate {
        max_surge: IntOrString::Int(1),
        max_unavailable,
    };
    let cases = [
        (
            "maxUnavailable less than replicas",
            10,
            IntOrString::Int(5),
            5,
        ),
        (
            "maxUnavailable equal replicas",
            10,
            IntOrString::Int(10),
            10,
        ),
        (
            "maxUnavailable greater than replicas",
            5,
            IntOrString::Int(10),
            5,
        ),
        (
            "maxUnavailable with replicas is 0",
            0,
            IntOrString::Int(10),
            0,
        ),
        (
            "maxUnavailable less than replicas with percents",
            10,
            percent("50%"),
            5,
        ),
        (
            "maxUnavailable equal replicas with percents",
            10,
            percent("100%"),
            10,
        ),
        (
            "maxUnavailable greater than replicas with percents",
            5,
            percent("100%"),
            5,
        ),
    ];
    for (description, replicas, value, expected) in cases {
        assert_eq!(
            max_unavailable(&strategy(value), replicas),
            Ok(expected),
            "{description}"
        );
    }
    assert_eq!(max_unavailable(&RolloutStrategy::OnDelete, 5), Ok(0));
    assert_eq!(max_surge(&RolloutStrategy::OnDelete, 5), Ok(0));
}

#[test]
fn strategy_defaults_follow_upstreams_webhook() {
    let default = RolloutStrategy::from_spec(&MachineDeploymentRollout::default());
    assert_eq!(default, rolling(1, 0));
    let only_unavailable = RolloutStrategy::from_spec(&MachineDeploymentRollout {
        after: None,
        strategy: Some(MachineDeploymentRolloutStrategy {
            type_: MachineDeploymentRolloutStrategyType::RollingUpdate,
            rolling_update: MachineDeploymentRolloutStrategyRollingUpdate {
                max_unavailable: Some(percent("25%")),
                max_surge: None,
            },
        }),
    });
    assert_eq!(
        only_unavailable,
        RolloutStrategy::RollingUpdate {
            max_surge: IntOrString::Int(1),
            max_unavailable: percent("25%")
        }
    );
    let on_delete = RolloutStrategy::from_spec(&MachineDeploymentRollout {
        after: None,
        strategy: Some(MachineDeploymentRolloutStrategy {
            type_: MachineDeploymentRolloutStrategyType::OnDelete,
            rolling_update: Default::default(),
        }),
    });
    assert_eq!(on_delete, RolloutStrategy::OnDelete);
}

#[test]
fn upstream_new_ms_new_replicas() {
    // (description, strategy, replicas, maxSurge, old replicas, new replicas, expected, note)
    let cases = [
        (
            "RollingUpdate strategy can not scale up",
            rolling(2, 1),
            1,
            5,
            4,
            4,
            "9 current Machines >= 1 MachineDeployment spec.replicas + 2 maxSurge",
        ),
        (
            "RollingUpdate strategy scale up to deploymentReplicas",
            rolling(3, 1),
            6,
            5,
            2,
            4,
            "7 current Machines < 6 MachineDeployment spec.replicas + 3 maxSurge",
        ),
        (
            "OnDeleteMachine strategy can not scale up",
            RolloutStrategy::OnDelete,
            1,
            3,
            5,
            5,
            "8 current Machines >= 1 MachineDeployment spec.replicas",
        ),
        (
            "OnDeleteMachine strategy scale up to deploymentReplicas",
            RolloutStrategy::OnDelete,
            6,
            1,
            2,
            5,
            "3 current Machines < 6 MachineDeployment spec.replicas",
        ),
    ];
    for (description, strategy, replicas, old, new, expected, note) in cases {
        let surge = max_surge(&strategy, replicas).unwrap();
        assert_eq!(
            current_machine_set_replicas(&strategy, replicas, surge, old + new, new),
            (expected, note.to_string()),
            "{description}"
        );
    }
}

#[test]
fn upstream_reconcile_new_machine_set() {
    let no_status = |machine_set: MachineSetState| machine_set.status(0, 0);
    // Scale up: 0 -> 2.
    let machine_sets = [no_status(ms("bar", 0))];
    let strategy = rolling(2, 0);
    let (intents_after, notes_after) = run_step(&input(2, &strategy, &machine_sets), &[], |p| {
        p.reconcile_current_machine_set()
    });
    assert_eq!(intents_after, intents(&[("bar", 2)]));
    assert_eq!(
        notes_after,
        notes(&[(
            "bar",
            &["0 current Machines < 2 MachineDeployment spec.replicas + 2 maxSurge"]
        )])
    );

    // Scale down: 2 -> 0.
    let machine_sets = [no_status(ms("bar", 2))];
    let (intents_after, notes_after) = run_step(&input(0, &strategy, &machine_sets), &[], |p| {
        p.reconcile_current_machine_set()
    });
    assert_eq!(intents_after, intents(&[("bar", 0)]));
    assert_eq!(
        notes_after,
        notes(&[(
            "bar",
            &["scale down to align MachineSet spec.replicas to MachineDeployment spec.replicas"]
        )])
    );

    // Scale up does not go above maxSurge (3+2).
    let machine_sets = [no_status(ms("bar", 1)), ms("3replicas", 3).old()];
    let (intents_after, notes_after) = run_step(&input(3, &strategy, &machine_sets), &[], |p| {
        p.reconcile_current_machine_set()
    });
    assert_eq!(intents_after, intents(&[("bar", 2)]));
    assert_eq!(
        notes_after,
        notes(&[(
            "bar",
            &["4 current Machines < 3 MachineDeployment spec.replicas + 2 maxSurge"]
        )])
    );

    // Scale up accounts for deleting Machines to honour maxSurge (maxSurge 0, maxUnavailable 0).
    let strategy = rolling(0, 0);
    let machine_sets = [
        no_status(ms("bar", 0)),
        ms("machine-not-yet-deleted", 0).old().status(1, 0),
    ];
    let (intents_after, notes_after) = run_step(&input(1, &strategy, &machine_sets), &[], |p| {
        p.reconcile_current_machine_set()
    });
    assert_eq!(intents_after, intents(&[]));
    assert_eq!(notes_after, notes(&[]));

    // Rolling Updated Cleanup disable machine create annotation.
    let machine_sets = [no_status(ms("bar", 2))];
    let plan = compute_rollout_plan(&input(2, &strategy, &machine_sets)).unwrap();
    let bar = plan.machine_set("bar").unwrap();
    assert_eq!(bar.replicas, 2);
    assert_eq!(bar.annotations[DISABLE_MACHINE_CREATE], "false");
}

/// `Test_reconcileOldMachineSetsRollingUpdate`, case by case: (description, replicas, strategy,
/// preset intents, current MachineSet, old MachineSets, expected intents, expected notes).
#[test]
fn upstream_reconcile_old_machine_sets_rolling_update() {
    struct Case {
        description: &'static str,
        replicas: i32,
        strategy: RolloutStrategy,
        preset: &'static [(&'static str, i32)],
        current: MachineSetState,
        old: Vec<MachineSetState>,
        expected: Intents,
        notes: Notes,
    }
    let four_available = "4 available replicas > 3 minimum available replicas";
    let cases = vec![
        Case {
            description: "no op if there are no replicas on old machinesets",
            replicas: 10,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 10),
            old: vec![ms("ms1", 0).old()],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if replicas is equal to minAvailable replicas",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 1),
            old: vec![ms("ms1", 2).old()],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if replicas is less then minAvailable replicas",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 1),
            old: vec![ms("ms1", 2).old().status(2, 1)],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if there are more replicas than minAvailable replicas, but scale down from a previous reconcile already takes the availability buffer",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 1),
            old: vec![ms("ms1", 2).old().status(3, 3)],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if there are more replicas than minAvailable replicas, but scale down from a previous reconcile already takes the availability buffer, scale down from a previous reconcile on another MS",
            replicas: 6,
            strategy: rolling(3, 1),
            preset: &[],
            current: ms("ms3", 3).status(0, 0),
            old: vec![ms("ms1", 2).old().status(3, 3), ms("ms2", 3).old()],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if there are unavailable replicas on the new MachineSet (maxSurge 1, maxUnavailable 0), all  machines unavailable",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 1).status(1, 0),
            old: vec![ms("ms1", 3).old().status(3, 0)],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if there are unavailable replicas on the new MachineSet (maxSurge 0, maxUnavailable 1), all  machines unavailable",
            replicas: 3,
            strategy: rolling(0, 1),
            preset: &[],
            current: ms("ms2", 1).status(1, 0),
            old: vec![ms("ms1", 2).old().status(2, 0)],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if there are more replicas than minAvailable replicas, but scale down from current reconcile already takes the availability buffer (newMS is scaling down)",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[("ms2", 1)],
            current: ms("ms2", 2),
            old: vec![ms("ms1", 2).old()],
            expected: intents(&[("ms2", 1)]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down if there are more replicas than minAvailable replicas, but scale down from current reconcile already takes the availability buffer (oldMS is scaling down)",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[("ms1", 1)],
            current: ms("ms2", 2),
            old: vec![ms("ms1", 2).old()],
            expected: intents(&[("ms1", 1)]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down replicas when there are more replicas than minAvailable replicas, but not all the replicas are available (unavailability on newMS)",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 1).status(1, 0),
            old: vec![ms("ms1", 3).old()],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "do not scale down replicas when there are more replicas than minAvailable replicas, but not all the replicas are available (unavailability on oldMS)",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 1),
            old: vec![ms("ms1", 3).old().status(3, 2)],
            expected: intents(&[]),
            notes: notes(&[]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, all replicas are available",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 1),
            old: vec![ms("ms1", 3).old()],
            expected: intents(&[("ms1", 2)]),
            notes: notes(&[("ms1", &[four_available])]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, unavailable replicas are scaled down first",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms4", 1),
            old: vec![
                ms("ms1", 2).old(),
                ms("ms2", 1).old().status(1, 0),
                ms("ms3", 2).old().status(2, 0),
            ],
            expected: intents(&[("ms2", 0), ("ms3", 0)]),
            notes: notes(&[("ms2", &[UNAVAILABLE_NOTE]), ("ms3", &[UNAVAILABLE_NOTE])]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, unavailable replicas are scaled down first, available replicas are scaled down when unavailable replicas are gone",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms4", 1),
            old: vec![
                ms("ms1", 3).old(),
                ms("ms2", 1).old().status(1, 0),
                ms("ms3", 2).old().status(2, 0),
            ],
            expected: intents(&[("ms1", 2), ("ms2", 0), ("ms3", 0)]),
            notes: notes(&[
                ("ms1", &[four_available]),
                ("ms2", &[UNAVAILABLE_NOTE]),
                ("ms3", &[UNAVAILABLE_NOTE]),
            ]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, unavailable replicas are scaled down first, available replicas are scaled down when unavailable replicas are gone is not affected by replicas without machines",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms4", 1),
            old: vec![
                ms("ms1", 4).old().status(3, 3),
                ms("ms2", 2).old().status(1, 0),
                ms("ms3", 5).old().status(2, 0),
            ],
            expected: intents(&[("ms1", 2), ("ms2", 0), ("ms3", 0)]),
            notes: notes(&[
                ("ms1", &[UNAVAILABLE_NOTE, four_available]),
                ("ms2", &[UNAVAILABLE_NOTE]),
                ("ms3", &[UNAVAILABLE_NOTE]),
            ]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, unavailable replicas are scaled down first, scale down stops before breaching minAvailable replicas",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms4", 1),
            old: vec![
                ms("ms1", 1).old(),
                ms("ms2", 1).old().status(1, 0),
                ms("ms3", 2).old().status(2, 1),
            ],
            expected: intents(&[("ms2", 0)]),
            notes: notes(&[("ms2", &[UNAVAILABLE_NOTE])]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, unavailable replicas are scaled down first, scale down stops before breaching minAvailable replicas is not affected by replicas without machines",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms4", 1),
            old: vec![
                ms("ms1", 2).old().status(1, 1),
                ms("ms2", 3).old().status(1, 0),
                ms("ms3", 3).old().status(2, 1),
            ],
            expected: intents(&[("ms1", 1), ("ms2", 0), ("ms3", 2)]),
            notes: notes(&[
                ("ms1", &[UNAVAILABLE_NOTE]),
                ("ms2", &[UNAVAILABLE_NOTE]),
                ("ms3", &[UNAVAILABLE_NOTE]),
            ]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, scale down keeps into account scale downs from a previous reconcile",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[],
            current: ms("ms2", 2),
            old: vec![ms("ms1", 3).old().status(4, 4)],
            expected: intents(&[("ms1", 2)]),
            notes: notes(&[(
                "ms1",
                &["6 available replicas > 3 minimum available replicas"],
            )]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, scale down keeps into account scale downs from the current reconcile (newMS is scaling down)",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[("ms2", 1)],
            current: ms("ms2", 2),
            old: vec![ms("ms1", 3).old()],
            expected: intents(&[("ms1", 2), ("ms2", 1)]),
            notes: notes(&[(
                "ms1",
                &["5 available replicas > 3 minimum available replicas"],
            )]),
        },
        Case {
            description: "scale down replicas when there are more replicas than minAvailable replicas, scale down keeps into account scale downs from the current reconcile (oldMS is scaling down)",
            replicas: 3,
            strategy: rolling(1, 0),
            preset: &[("ms1", 2)],
            current: ms("ms2", 2),
            old: vec![ms("ms1", 3).old()],
            expected: intents(&[("ms1", 1)]),
            notes: notes(&[(
                "ms1",
                &["5 available replicas > 3 minimum available replicas"],
            )]),
        },
    ];
    for case in cases {
        let mut machine_sets = case.old.clone();
        machine_sets.push(case.current.clone());
        let input = input(case.replicas, &case.strategy, &machine_sets);
        let (intents_after, notes_after) = run_step(&input, case.preset, |p| {
            p.reconcile_old_machine_sets_rolling_update()
        });
        assert_eq!(intents_after, case.expected, "{}", case.description);
        assert_eq!(notes_after, case.notes, "{}", case.description);
    }
}

/// `Test_reconcileDeadlockBreaker`. Upstream puts the note on the current MachineSet; Corral
/// puts it on the old MachineSet it scales down.
#[test]
fn upstream_reconcile_deadlock_breaker() {
    type Case = (
        &'static str,
        &'static [(&'static str, i32)],
        MachineSetState,
        MachineSetState,
        Intents,
    );
    let cases: Vec<Case> = vec![
        (
            "no op if there are no replicas on old machinesets",
            &[],
            ms("ms2", 10),
            ms("ms1", 0).old(),
            intents(&[]),
        ),
        (
            "no op if all the replicas on OldMS are available",
            &[],
            ms("ms2", 5),
            ms("ms1", 5).old(),
            intents(&[]),
        ),
        (
            "no op if there are scale operation still in progress from a previous reconcile on newMS",
            &[],
            ms("ms2", 6).status(5, 5),
            ms("ms1", 5).old().status(5, 4),
            intents(&[]),
        ),
        (
            "no op if there are scale operation still in progress from a previous reconcile on oldMS",
            &[],
            ms("ms2", 5),
            ms("ms1", 4).old().status(5, 4),
            intents(&[]),
        ),
        (
            "no op if there are scale operation from the current reconcile on newMS",
            &[("ms2", 6)],
            ms("ms2", 5),
            ms("ms1", 5).old().status(5, 4),
            intents(&[("ms2", 6)]),
        ),
        (
            "no op if there are scale operation from the current reconcile on oldMS",
            &[("ms1", 4)],
            ms("ms2", 5),
            ms("ms1", 5).old().status(5, 4),
            intents(&[("ms1", 4)]),
        ),
        (
            "wait for unavailable replicas on the newMS if any",
            &[],
            ms("ms2", 5).status(5, 3),
            ms("ms1", 5).old().status(5, 4),
            intents(&[]),
        ),
        (
            "unblock a deadlock when necessary",
            &[],
            ms("ms2", 5),
            ms("ms1", 5).old().status(5, 3),
            intents(&[("ms1", 4)]),
        ),
    ];
    let strategy = rolling(1, 0);
    for (description, preset, current, old, expected) in cases {
        let machine_sets = [old, current];
        let input = input(5, &strategy, &machine_sets);
        let (intents_after, notes_after) =
            run_step(&input, preset, |p| p.reconcile_deadlock_breaker());
        assert_eq!(intents_after, expected, "{description}");
        if description == "unblock a deadlock when necessary" {
            assert_eq!(
                notes_after,
                notes(&[(
                    "ms1",
                    &[
                        "scaling down by 1 to unblock rollout stuck due to unavailable Machine on oldMS"
                    ]
                )])
            );
        } else {
            assert_eq!(notes_after, notes(&[]), "{description}");
        }
    }
}

#[test]
fn upstream_reconcile_old_machine_sets_on_delete() {
    let strategy = RolloutStrategy::OnDelete;
    let aligned = "scale down to align to existing Machines";
    let md_aligned =
        "scale down to align MachineSet spec.replicas to MachineDeployment spec.replicas";
    // (description, replicas, preset, current, old, expected intents, expected notes)
    type Case = (
        &'static str,
        i32,
        &'static [(&'static str, i32)],
        MachineSetState,
        Vec<MachineSetState>,
        Intents,
        Notes,
    );
    let cases: Vec<Case> = vec![
        (
            "do not scale oldMSs when no machines have been deleted",
            4,
            &[],
            ms("ms3", 0),
            vec![ms("ms1", 3).old(), ms("ms2", 1).old()],
            intents(&[]),
            notes(&[]),
        ),
        (
            "scale down oldMSs when machines have been deleted",
            3,
            &[],
            ms("ms3", 0),
            vec![
                ms("ms1", 3).old().status(2, 2),
                ms("ms2", 1).old().status(0, 0),
            ],
            intents(&[("ms1", 2), ("ms2", 0)]),
            notes(&[("ms1", &[aligned]), ("ms2", &[aligned])]),
        ),
        (
            "scale down oldMSs when md has been scaled down",
            3,
            &[],
            ms("ms3", 2),
            vec![ms("ms1", 1).old(), ms("ms2", 2).old()],
            intents(&[("ms1", 0), ("ms2", 1)]),
            notes(&[("ms1", &[md_aligned]), ("ms2", &[md_aligned])]),
        ),
        (
            "scale down oldMSs when md has been scaled down, keeps into account newMS scale intent",
            3,
            &[("ms3", 2)],
            ms("ms3", 1),
            vec![ms("ms1", 1).old(), ms("ms2", 2).old()],
            intents(&[("ms1", 0), ("ms2", 1), ("ms3", 2)]),
            notes(&[("ms1", &[md_aligned]), ("ms2", &[md_aligned])]),
        ),
        (
            "scale down oldMSs when md has been scaled down keeps into account deleted machines",
            3,
            &[],
            ms("ms3", 2),
            vec![ms("ms1", 1).old().status(0, 0), ms("ms2", 2).old()],
            intents(&[("ms1", 0), ("ms2", 1)]),
            notes(&[("ms1", &[aligned]), ("ms2", &[md_aligned])]),
        ),
    ];
    for (description, replicas, preset, current, old, expected, expected_notes) in cases {
        let mut machine_sets = old;
        machine_sets.push(current);
        let input = input(replicas, &strategy, &machine_sets);
        let (intents_after, notes_after) =
            run_step(&input, preset, |p| p.reconcile_old_machine_sets_on_delete());
        assert_eq!(intents_after, expected, "{description}");
        assert_eq!(notes_after, expected_notes, "{description}");
    }
}

#[test]
fn on_delete_both_loops_add_up() {
    // One Machine deleted by the user and the MachineDeployment scaled down by one: upstream's
    // second loop recomputes from spec.replicas and takes two reconciles; Corral takes one.
    let strategy = RolloutStrategy::OnDelete;
    let machine_sets = [ms("ms1", 3).old().status(2, 2), ms("ms2", 0)];
    let (intents_after, _) = run_step(&input(1, &strategy, &machine_sets), &[], |p| {
        p.reconcile_old_machine_sets_on_delete()
    });
    assert_eq!(intents_after, intents(&[("ms1", 1)]));
}

#[test]
fn upstream_deployment_complete() {
    // (description, desired, current, upToDate, available, expected)
    let cases = [
        (
            "not complete: min but not all machines become available",
            5,
            5,
            5,
            4,
            false,
        ),
        (
            "not complete: min availability is not honored",
            5,
            5,
            5,
            3,
            false,
        ),
        ("complete", 5, 5, 5, 5, true),
        (
            "not complete: all machines are available but not updated",
            5,
            5,
            4,
            5,
            false,
        ),
        (
            "not complete: still running old machines",
            1,
            2,
            1,
            1,
            false,
        ),
        (
            "not complete: one replica deployment never comes up",
            1,
            1,
            1,
            0,
            false,
        ),
    ];
    for (description, desired, current, up_to_date, available, expected) in cases {
        assert_eq!(
            deployment_complete(desired, current, up_to_date, available, true),
            expected,
            "{description}"
        );
    }
    assert!(
        !deployment_complete(5, 5, 5, 5, false),
        "generation not yet observed"
    );
}

#[test]
fn upstream_compute_revision_annotations() {
    let strategy = rolling(1, 0);
    // (description, old MachineSets (revision, history), current (revision, history) or None
    // for one to create, expected revision, expected history)
    type Revisions = &'static [(&'static str, &'static str)];
    type Case = (
        &'static str,
        Revisions,
        Option<(&'static str, &'static str)>,
        &'static str,
        Option<&'static str>,
    );
    let cases: [Case; 6] = [
        (
            "for a new newMS - oldMSs do not exist",
            &[],
            None,
            "1",
            None,
        ),
        (
            "for a new newMS - old MSs exist",
            &[("1", "")],
            None,
            "2",
            None,
        ),
        (
            "for a existing newMS - oldMSs do not exist",
            &[],
            Some(("1", "")),
            "1",
            None,
        ),
        (
            "for a existing newMS - old MSs exist - update required",
            &[("1", ""), ("2", "")],
            Some(("1", "")),
            "3",
            Some("1"),
        ),
        (
            "for a existing newMS - old MSs exist - no update required",
            &[("1", ""), ("2", "")],
            Some(("4", "")),
            "4",
            None,
        ),
        (
            "for a existing newMS with revision history - old MSs exist - update required",
            &[("3", ""), ("4", "")],
            Some(("2", "1")),
            "5",
            Some("1,2"),
        ),
    ];
    for (description, old, current, revision, history) in cases {
        let mut machine_sets: Vec<MachineSetState> = old
            .iter()
            .enumerate()
            .map(|(i, (revision, history))| {
                ms(&format!("old{i}"), 0).old().revision(revision, history)
            })
            .collect();
        if let Some((revision, history)) = current {
            machine_sets.push(ms("current", 1).revision(revision, history));
        }
        let plan = compute_rollout_plan(&input(1, &strategy, &machine_sets)).unwrap();
        assert_eq!(plan.revision.as_deref(), Some(revision), "{description}");
        let current = plan.machine_set(plan.current.as_deref().unwrap()).unwrap();
        assert_eq!(current.annotations[REVISION], revision, "{description}");
        assert_eq!(
            current
                .annotations
                .get(REVISION_HISTORY)
                .map(String::as_str),
            history,
            "{description}"
        );
        // Old MachineSets keep theirs.
        for (plan, (revision, _)) in plan.machine_sets.iter().zip(old.iter()) {
            assert_eq!(plan.annotations[REVISION], *revision, "{description}");
        }
    }
}

#[test]
fn an_unparsable_revision_on_the_current_machine_set_is_an_error() {
    let strategy = rolling(1, 0);
    let machine_sets = [ms("ms1", 1).revision("one", "")];
    assert_eq!(
        compute_rollout_plan(&input(1, &strategy, &machine_sets)),
        Err(RolloutPlanError::ParseRevision {
            machine_set: "ms1".into(),
            revision: "one".into()
        })
    );
    // On old MachineSets it is skipped.
    let machine_sets = [
        ms("ms1", 1).old().revision("one", ""),
        ms("ms2", 0).revision("2", ""),
    ];
    let plan = compute_rollout_plan(&input(1, &strategy, &machine_sets)).unwrap();
    assert_eq!(plan.revision.as_deref(), Some("2"));
}

fn infra_template(infra: &str) -> MachineTemplateSpec {
    MachineTemplateSpec {
        metadata: Default::default(),
        spec: MachineSpec {
            infrastructure_ref: ContractVersionedObjectReference {
                api_group: "infrastructure.cluster.x-k8s.io".into(),
                kind: "InfrastructureMachineTemplate".into(),
                name: infra.into(),
            },
            ..MachineSpec::default()
        },
    }
}

#[test]
fn upstream_find_new_and_old_machine_sets() {
    let minute = SignedDuration::from_mins(1);
    let rollout_after = epoch() + SignedDuration::from_hours(1);
    let three_before = rollout_after - minute * 3;
    let two_before = rollout_after - minute * 2;
    let one_before = rollout_after - minute;
    let one_after = rollout_after + minute;
    let two_after = rollout_after + minute * 2;

    let differences = template_differences(
        &infra_template("old-infra-ref"),
        &infra_template("new-infra-ref"),
    );
    let infra_message = "spec.infrastructureRef InfrastructureMachineTemplate old-infra-ref, InfrastructureMachineTemplate new-infra-ref required";
    assert_eq!(differences, [infra_message]);
    let old_ms = |name: &str| {
        let mut machine_set = ms(name, 1);
        machine_set.template_differences = differences.clone();
        machine_set
    };
    let matching = |name: &str| ms(name, 1);

    struct Case {
        description: &'static str,
        machine_sets: Vec<MachineSetState>,
        rollout_after: Option<Timestamp>,
        now: Timestamp,
        current: Option<&'static str>,
        old: Vec<&'static str>,
        create_reason: Option<String>,
    }
    let cases = vec![
        Case {
            description: "Get nil if no MachineSets exist",
            machine_sets: vec![],
            rollout_after: None,
            now: epoch(),
            current: None,
            old: vec![],
            create_reason: Some("no MachineSets exist for the MachineDeployment".into()),
        },
        Case {
            description: "Get nil if there are no MachineTemplate that matches the intent of the MachineDeployment",
            machine_sets: vec![old_ms("old")],
            rollout_after: None,
            now: epoch(),
            current: None,
            old: vec!["old"],
            create_reason: Some(format!(
                "couldn't find MachineSet matching MachineDeployment spec template: MachineSet old needs rollout: {infra_message}"
            )),
        },
        Case {
            description: "Get the MachineSet with the MachineTemplate that matches the intent of the MachineDeployment",
            machine_sets: vec![old_ms("old"), matching("matching")],
            rollout_after: None,
            now: epoch(),
            current: Some("matching"),
            old: vec!["old"],
            create_reason: None,
        },
        Case {
            description: "Get empty old MachineSets",
            machine_sets: vec![matching("matching")],
            rollout_after: None,
            now: epoch(),
            current: Some("matching"),
            old: vec![],
            create_reason: None,
        },
        Case {
            description: "Get the MachineSet with the higher replicas if multiple MachineSets match the desired intent on the MachineDeployment",
            machine_sets: vec![old_ms("old"), matching("matching"), {
                let mut higher = matching("higher");
                higher.replicas = 2;
                higher
            }],
            rollout_after: None,
            now: epoch(),
            current: Some("higher"),
            old: vec!["old", "matching"],
            create_reason: None,
        },
        Case {
            description: "Get nil if no MachineSet matches the desired intent of the MachineDeployment, reconciliationTime is > rolloutAfter",
            machine_sets: vec![old_ms("old").created(three_before)],
            rollout_after: Some(rollout_after),
            now: one_after,
            current: None,
            old: vec!["old"],
            create_reason: Some(format!(
                "couldn't find MachineSet matching MachineDeployment spec template: MachineSet old needs rollout: {infra_message}, MachineDeployment spec.rolloutAfter expired"
            )),
        },
        Case {
            description: "Get nil if no MachineSet matches the desired intent of the MachineDeployment, reconciliationTime is > rolloutAfter, MachineSet created at rolloutAfter",
            machine_sets: vec![old_ms("old").created(rollout_after)],
            rollout_after: Some(rollout_after),
            now: one_after,
            current: None,
            old: vec!["old"],
            create_reason: Some(format!(
                "couldn't find MachineSet matching MachineDeployment spec template: MachineSet old needs rollout: {infra_message}"
            )),
        },
        Case {
            description: "Get the MachineSet if reconciliationTime < rolloutAfter",
            machine_sets: vec![
                matching("two-before").created(two_before),
                matching("three-before").created(three_before),
            ],
            rollout_after: Some(rollout_after),
            now: one_before,
            current: Some("three-before"),
            old: vec!["two-before"],
            create_reason: None,
        },
        Case {
            description: "Get nil if reconciliationTime is > rolloutAfter and no MachineSet is created after rolloutAfter",
            machine_sets: vec![
                matching("two-before").created(two_before),
                matching("three-before").created(three_before),
                old_ms("old").created(three_before),
            ],
            rollout_after: Some(rollout_after),
            now: one_after,
            current: None,
            old: vec!["old", "three-before", "two-before"],
            create_reason: Some(format!(
                "spec.rollout.after on MachineDeployment set to {rollout_after}, no MachineSet has been created afterwards"
            )),
        },
        Case {
            description: "Get MachineSet created after RolloutAfter if reconciliationTime is > rolloutAfter",
            machine_sets: vec![
                matching("after").created(one_after),
                matching("two-before").created(two_before),
            ],
            rollout_after: Some(rollout_after),
            now: two_after,
            current: Some("after"),
            old: vec!["two-before"],
            create_reason: None,
        },
        Case {
            description: "Get MachineSet created exactly in RolloutAfter if reconciliationTime > rolloutAfter",
            machine_sets: vec![
                matching("at").created(rollout_after),
                matching("two-before").created(two_before),
            ],
            rollout_after: Some(rollout_after),
            now: one_after,
            current: Some("at"),
            old: vec!["two-before"],
            create_reason: None,
        },
        Case {
            description: "Get MachineSet created after RolloutAfter if reconciliationTime is > rolloutAfter (inverse order in ms list)",
            machine_sets: vec![
                matching("two-before").created(two_before),
                matching("after").created(one_after),
            ],
            rollout_after: Some(rollout_after),
            now: two_after,
            current: Some("after"),
            old: vec!["two-before"],
            create_reason: None,
        },
    ];
    let strategy = rolling(1, 0);
    for case in cases {
        let mut input = input(1, &strategy, &case.machine_sets);
        input.rollout_after = case.rollout_after;
        input.now = case.now;
        let planner = Planner::new(&input).unwrap();
        let name = |index: usize| planner.machine_sets[index].name.as_str();
        let current = planner.current.map(name);
        if case.current.is_none() {
            assert_eq!(
                current,
                Some("new"),
                "{}: a MachineSet is created",
                case.description
            );
        } else {
            assert_eq!(current, case.current, "{}", case.description);
        }
        let old: Vec<&str> = planner.old.iter().map(|&index| name(index)).collect();
        assert_eq!(old, case.old, "{}", case.description);
        assert_eq!(
            planner.create_reason, case.create_reason,
            "{}",
            case.description
        );
    }
}

fn full_template() -> MachineTemplateSpec {
    MachineTemplateSpec {
        metadata: corral_api::TemplateMetadata {
            labels: BTreeMap::from([("l1".into(), "v1".into())]),
            annotations: BTreeMap::from([("a1".into(), "v1".into())]),
        },
        spec: MachineSpec {
            cluster_name: "cluster1".into(),
            version: Some("v1.25.0".into()),
            failure_domain: Some("failure-domain1".into()),
            min_ready_seconds: Some(10),
            infrastructure_ref: ContractVersionedObjectReference {
                api_group: "infrastructure.cluster.x-k8s.io".into(),
                kind: "InfrastructureMachineTemplate".into(),
                name: "infra1".into(),
            },
            bootstrap: Bootstrap {
                config_ref: Some(ContractVersionedObjectReference {
                    api_group: "bootstrap.cluster.x-k8s.io".into(),
                    kind: "BootstrapConfigTemplate".into(),
                    name: "bootstrap1".into(),
                }),
                data_secret_name: None,
            },
            ..MachineSpec::default()
        },
    }
}

#[test]
fn upstream_machine_template_up_to_date() {
    let base = full_template();
    let changed = |change: fn(&mut MachineTemplateSpec)| {
        let mut template = full_template();
        change(&mut template);
        template
    };
    let with_secret = |template: &mut MachineTemplateSpec| {
        template.spec.bootstrap = Bootstrap {
            config_ref: None,
            data_secret_name: Some("data-secret1".into()),
        };
    };
    let up_to_date = [
        changed(|t| t.metadata.labels.clear()),
        changed(|t| t.metadata.labels = BTreeMap::from([("l2".into(), "v2".into())])),
        changed(|t| t.metadata.annotations.clear()),
        changed(|t| t.spec.min_ready_seconds = Some(20)),
        changed(|t| t.spec.deletion.node_drain_timeout_seconds = Some(20)),
        changed(|t| t.spec.cluster_name = "cluster2".into()),
    ];
    for desired in &up_to_date {
        assert!(
            template_differences(&base, desired).is_empty(),
            "{desired:?}"
        );
        assert!(
            template_differences(desired, &base).is_empty(),
            "{desired:?}"
        );
    }
    // (desired, messages one way, messages the other way)
    let cases = [
        (
            changed(|t| t.spec.version = Some("v1.26.0".into())),
            "spec.version v1.25.0, v1.26.0 required",
            "spec.version v1.26.0, v1.25.0 required",
        ),
        (
            changed(|t| t.spec.failure_domain = Some("failure-domain2".into())),
            "spec.failureDomain failure-domain1, failure-domain2 required",
            "spec.failureDomain failure-domain2, failure-domain1 required",
        ),
        (
            changed(|t| t.spec.infrastructure_ref.name = "infra2".into()),
            "spec.infrastructureRef InfrastructureMachineTemplate infra1, InfrastructureMachineTemplate infra2 required",
            "spec.infrastructureRef InfrastructureMachineTemplate infra2, InfrastructureMachineTemplate infra1 required",
        ),
        (
            changed(|t| t.spec.bootstrap.config_ref.as_mut().unwrap().name = "bootstrap2".into()),
            "spec.bootstrap.configRef BootstrapConfigTemplate bootstrap1, BootstrapConfigTemplate bootstrap2 required",
            "spec.bootstrap.configRef BootstrapConfigTemplate bootstrap2, BootstrapConfigTemplate bootstrap1 required",
        ),
        (
            changed(with_secret),
            "spec.bootstrap.configRef BootstrapConfigTemplate bootstrap1,   required",
            "spec.bootstrap.dataSecretName data-secret1, nil required",
        ),
    ];
    for (desired, forward, backward) in &cases {
        assert_eq!(template_differences(&base, desired), [*forward]);
        assert_eq!(template_differences(desired, &base), [*backward]);
    }
    let secret1 = changed(with_secret);
    let mut secret2 = changed(with_secret);
    secret2.spec.bootstrap.data_secret_name = Some("data-secret2".into());
    assert_eq!(
        template_differences(&secret1, &secret2),
        ["spec.bootstrap.dataSecretName data-secret1, data-secret2 required"]
    );
}

#[test]
fn machine_set_state_reads_the_object() {
    let md_template = infra_template("new");
    let machine_set = MachineSet {
        metadata: ObjectMeta {
            name: Some("md-abcde".into()),
            creation_timestamp: Some(Time(epoch() + SignedDuration::from_secs(5))),
            generation: Some(3),
            annotations: Some(BTreeMap::from([
                (REVISION.to_string(), "4".to_string()),
                (REVISION_HISTORY.to_string(), "1,2".to_string()),
                (DESIRED_REPLICAS.to_string(), "3".to_string()),
                (MAX_REPLICAS.to_string(), "oops".to_string()),
            ])),
            ..ObjectMeta::default()
        },
        spec: MachineSetSpec {
            replicas: Some(2),
            template: infra_template("old"),
            ..MachineSetSpec::default()
        },
        status: Some(MachineSetStatus {
            replicas: Some(3),
            available_replicas: Some(1),
            up_to_date_replicas: Some(0),
            observed_generation: Some(2),
            ..MachineSetStatus::default()
        }),
    };
    let state = MachineSetState::from_machine_set(&machine_set, &md_template);
    assert_eq!(state.name, "md-abcde");
    assert_eq!(state.created, epoch() + SignedDuration::from_secs(5));
    assert!(!state.matches_template());
    assert_eq!(state.revision.as_deref(), Some("4"));
    assert_eq!(state.revision_history.as_deref(), Some("1,2"));
    assert_eq!(state.desired_replicas, Some(3));
    assert_eq!(
        state.max_replicas, None,
        "an unparsable annotation is ignored"
    );
    assert_eq!(
        (
            state.replicas,
            state.status_replicas,
            state.available_replicas
        ),
        (2, 3, 1)
    );
    assert!(!state.generation_observed);
    assert!(!state.deleting);
}

#[test]
fn every_machine_set_gets_the_bookkeeping_annotations() {
    let strategy = rolling(2, 0);
    let machine_sets = [ms("ms1", 3).old().revision("1", "")];
    let plan = compute_rollout_plan(&input(3, &strategy, &machine_sets)).unwrap();
    assert_eq!(plan.current.as_deref(), Some("new"));
    let old = plan.machine_set("ms1").unwrap();
    let new = plan.machine_set("new").unwrap();
    assert!(new.create && new.current && !old.current && !old.create);
    assert_eq!(new.replicas_before, 0);
    assert_eq!(
        new.replicas, 2,
        "grows into maxSurge in the step that creates it"
    );
    for plan in [old, new] {
        assert_eq!(plan.annotations[DESIRED_REPLICAS], "3");
        assert_eq!(plan.annotations[MAX_REPLICAS], "5");
        assert_eq!(plan.annotations[DISABLE_MACHINE_CREATE], "false");
    }
    assert_eq!(old.annotations[REVISION], "1");
    assert_eq!(new.annotations[REVISION], "2");
    assert_eq!(plan.revision.as_deref(), Some("2"));
    assert!(plan.create_reason.is_some());

    // OnDelete bars old MachineSets from creating Machines, and has no surge.
    let strategy = RolloutStrategy::OnDelete;
    let plan = compute_rollout_plan(&input(3, &strategy, &machine_sets)).unwrap();
    let old = plan.machine_set("ms1").unwrap();
    let new = plan.machine_set("new").unwrap();
    assert_eq!(old.annotations[DISABLE_MACHINE_CREATE], "true");
    assert_eq!(new.annotations[DISABLE_MACHINE_CREATE], "false");
    assert_eq!(old.annotations[MAX_REPLICAS], "3");
    assert_eq!(new.replicas, 0, "nothing deleted yet, nothing to replace");
}

#[test]
fn invalid_bounds_are_an_error() {
    let strategy = RolloutStrategy::RollingUpdate {
        max_surge: percent("lots"),
        max_unavailable: IntOrString::Int(0),
    };
    let machine_sets = [ms("ms1", 3)];
    assert!(matches!(
        compute_rollout_plan(&input(3, &strategy, &machine_sets)),
        Err(RolloutPlanError::ResolveBounds(
            IntOrPercentError::NotAPercentage
        ))
    ));
}

fn paused<'a>(
    replicas: i32,
    strategy: &'a RolloutStrategy,
    machine_sets: &'a [MachineSetState],
) -> RolloutInput<'a> {
    RolloutInput {
        paused: true,
        ..input(replicas, strategy, machine_sets)
    }
}

fn planned(plan: &RolloutPlan) -> Vec<(&str, i32)> {
    plan.machine_sets
        .iter()
        .map(|machine_set| (machine_set.name.as_str(), machine_set.replicas))
        .collect()
}

#[test]
fn paused_creates_nothing_and_scales_the_only_active_machine_set() {
    let strategy = rolling(1, 0);
    let machine_sets = [ms("ms1", 3).old().revision("1", "")];
    let plan = compute_rollout_plan(&paused(5, &strategy, &machine_sets)).unwrap();
    assert_eq!(plan.current, None, "no MachineSet is created while paused");
    assert_eq!(planned(&plan), [("ms1", 5)]);
    assert!(plan.machine_sets_to_delete.is_empty());
}

#[test]
fn paused_with_a_saturated_current_machine_set_lets_the_old_ones_go() {
    // Upstream `TestIsSaturated`: saturated when the current MachineSet has all the replicas,
    // was planned for them, and all are available.
    let strategy = rolling(1, 0);
    let mut current = ms("ms2", 3);
    current.desired_replicas = Some(3);
    let old = ms("ms1", 1).old();
    let machine_sets = [old.clone(), current.clone()];
    let plan = compute_rollout_plan(&paused(3, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 0), ("ms2", 3)]);

    // Not saturated while some are unavailable: the proportional arithmetic applies, and with
    // both at their sizes for 3 + 1 there is nothing to change.
    let machine_sets = [old, current.clone().status(3, 1)];
    let plan = compute_rollout_plan(&paused(3, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 1), ("ms2", 3)]);
}

#[test]
fn paused_scale_up_is_proportional_to_the_size_last_planned() {
    // Mid-rollout of 6 with maxSurge 3: old 4, current 5, both planned for 9. Scaled to 12
    // (allowed 15): the old gets 4 × 15 / 9 = 6.67 → 7 (+3), the current 5 × 15 / 9 = 8.33 → 8
    // (+3). The current MachineSet is larger, so it is sized first.
    let strategy = rolling(3, 1);
    let with_max = |machine_set: MachineSetState| MachineSetState {
        max_replicas: Some(9),
        ..machine_set
    };
    let machine_sets = [
        with_max(ms("ms1", 4).old()),
        with_max(ms("ms2", 5).created(epoch() + SignedDuration::from_secs(60))),
    ];
    let plan = compute_rollout_plan(&paused(12, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 7), ("ms2", 8)]);
    assert_eq!(
        plan.machine_set("ms1").unwrap().notes,
        ["scale proportionally to 15 MachineDeployment spec.replicas + maxSurge while paused"]
    );
    for plan in &plan.machine_sets {
        assert_eq!(plan.annotations[MAX_REPLICAS], "15");
    }

    // Scaled down to 3 (allowed 6): 4 × 6 / 9 = 2.67 → 3 (−1), 5 × 6 / 9 = 3.33 → 3 (−2);
    // the leftover −0 is nothing; both shrink.
    let plan = compute_rollout_plan(&paused(3, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 3), ("ms2", 3)]);

    // Without annotations the MachineDeployment's status replicas (9) stand in.
    let machine_sets = [
        ms("ms1", 4).old(),
        ms("ms2", 5).created(epoch() + SignedDuration::from_secs(60)),
    ];
    let plan = compute_rollout_plan(&paused(12, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 7), ("ms2", 8)]);

    // Ties in size: scaling up favours the newer MachineSet with the rounding leftover.
    let machine_sets = [
        with_max(ms("ms1", 3).old()),
        with_max(ms("ms2", 3).created(epoch() + SignedDuration::from_secs(60))),
    ];
    let strategy = rolling(0, 1);
    // 6 → 7 with maxSurge 0: 3 × 7 / 9 = 2.33 → 2 each (−1 each), leftover +3 to the first
    // sorted, the newer one.
    let plan = compute_rollout_plan(&paused(7, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 2), ("ms2", 5)]);
}

#[test]
fn paused_to_zero_scales_everything_down() {
    let strategy = rolling(1, 0);
    let machine_sets = [ms("ms1", 2).old(), ms("ms2", 3)];
    let plan = compute_rollout_plan(&paused(0, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 0), ("ms2", 0)]);
}

#[test]
fn paused_on_delete_leaves_several_active_machine_sets_alone() {
    let strategy = RolloutStrategy::OnDelete;
    let machine_sets = [ms("ms1", 2).old(), ms("ms2", 1)];
    let plan = compute_rollout_plan(&paused(5, &strategy, &machine_sets)).unwrap();
    assert_eq!(planned(&plan), [("ms1", 2), ("ms2", 1)]);
}

fn complete_old(name: &str, revision: &str) -> MachineSetState {
    ms(name, 0).old().revision(revision, "")
}

#[test]
fn cleanup_waits_for_a_complete_rollout_and_keeps_the_history_limit() {
    let strategy = rolling(1, 0);
    let mut current = ms("ms4", 3).revision("4", "");
    current.up_to_date_replicas = 3;
    let machine_sets = [
        complete_old("ms1", "1"),
        complete_old("ms3", "3"),
        complete_old("ms2", "2"),
        current.clone(),
    ];
    let plan = compute_rollout_plan(&input(3, &strategy, &machine_sets)).unwrap();
    assert!(plan.complete);
    assert_eq!(
        plan.machine_sets_to_delete,
        ["ms1", "ms2", "ms3"],
        "upstream keeps none"
    );

    let mut with_history = input(3, &strategy, &machine_sets);
    with_history.revision_history_limit = 2;
    let plan = compute_rollout_plan(&with_history).unwrap();
    assert_eq!(
        plan.machine_sets_to_delete,
        ["ms1"],
        "the two latest revisions stay"
    );

    with_history.revision_history_limit = 5;
    let plan = compute_rollout_plan(&with_history).unwrap();
    assert!(plan.machine_sets_to_delete.is_empty());

    // Nothing goes before the rollout is complete, nor while paused.
    let mut incomplete = current.clone();
    incomplete.available_replicas = 2;
    let machine_sets_incomplete = [complete_old("ms1", "1"), incomplete];
    let plan = compute_rollout_plan(&input(3, &strategy, &machine_sets_incomplete)).unwrap();
    assert!(!plan.complete);
    assert!(plan.machine_sets_to_delete.is_empty());
    let plan = compute_rollout_plan(&paused(3, &strategy, &machine_sets)).unwrap();
    assert!(plan.complete);
    assert!(plan.machine_sets_to_delete.is_empty());
}

#[test]
fn cleanup_skips_machine_sets_that_are_not_empty_or_not_settled() {
    let strategy = rolling(1, 0);
    let mut current = ms("ms9", 3).revision("9", "");
    current.up_to_date_replicas = 3;
    let mut deleting = complete_old("deleting", "1");
    deleting.deleting = true;
    let mut unobserved = complete_old("unobserved", "2");
    unobserved.generation_observed = false;
    // Complete needs all Machines counted to be the current ones, so these have none.
    let spec_only = {
        let mut machine_set = complete_old("spec-only", "3");
        machine_set.replicas = 1;
        machine_set.status_replicas = 0;
        machine_set.available_replicas = 0;
        machine_set
    };
    let machine_sets = [
        deleting,
        unobserved,
        spec_only,
        complete_old("empty", "4"),
        current,
    ];
    let plan = compute_rollout_plan(&input(3, &strategy, &machine_sets)).unwrap();
    assert!(plan.complete);
    // spec-only is scaled to 0 in this step (it has no Machines), and goes in a later one.
    assert_eq!(plan.machine_set("spec-only").unwrap().replicas, 0);
    assert_eq!(plan.machine_sets_to_delete, ["empty"]);
}

#[test]
fn rollback_targets() {
    let machine_sets = [
        complete_old("ms1", "1"),
        complete_old("ms3", "3"),
        ms("ms4", 3).revision("4", "2"),
    ];
    assert_eq!(
        compute_rollback_target(&machine_sets, None),
        Ok(RollbackTarget {
            machine_set: "ms3".into(),
            revision: 3,
            already_current: false
        })
    );
    assert_eq!(
        compute_rollback_target(&machine_sets, Some(1)),
        Ok(RollbackTarget {
            machine_set: "ms1".into(),
            revision: 1,
            already_current: false
        })
    );
    assert_eq!(
        compute_rollback_target(&machine_sets, Some(4)),
        Ok(RollbackTarget {
            machine_set: "ms4".into(),
            revision: 4,
            already_current: true
        })
    );
    // Revision 2 moved on: ms4 served it before it became 4 again.
    assert_eq!(
        compute_rollback_target(&machine_sets, Some(2)),
        Err(RollbackError::RevisionNotFound(2))
    );
    assert_eq!(
        compute_rollback_target(&[ms("ms1", 3).revision("1", "")], None),
        Err(RollbackError::NoPreviousRevision)
    );
    assert_eq!(
        compute_rollback_target(&[], None),
        Err(RollbackError::NoPreviousRevision)
    );
    let mut deleting = complete_old("ms3", "3");
    deleting.deleting = true;
    assert_eq!(
        compute_rollback_target(
            &[
                complete_old("ms1", "1"),
                deleting,
                ms("ms4", 3).revision("4", "")
            ],
            None
        ),
        Ok(RollbackTarget {
            machine_set: "ms1".into(),
            revision: 1,
            already_current: false
        }),
        "a MachineSet being deleted is no target"
    );
}

#[test]
fn a_rolled_back_machine_set_becomes_current_under_a_new_revision() {
    // After the rollback copied ms1's template, ms1 matches and ms2 does not.
    let strategy = rolling(1, 0);
    let machine_sets = [
        ms("ms1", 0).revision("1", ""),
        ms("ms2", 3).old().revision("2", ""),
    ];
    let plan = compute_rollout_plan(&input(3, &strategy, &machine_sets)).unwrap();
    assert_eq!(plan.current.as_deref(), Some("ms1"));
    assert_eq!(plan.revision.as_deref(), Some("3"));
    let ms1 = plan.machine_set("ms1").unwrap();
    assert!(!ms1.create);
    assert_eq!(ms1.annotations[REVISION], "3");
    assert_eq!(ms1.annotations[REVISION_HISTORY], "1");
    assert_eq!(ms1.notes[0], "this is now the current MachineSet");
    assert_eq!(
        ms1.replicas, 1,
        "grows by maxSurge like any current MachineSet"
    );
}
