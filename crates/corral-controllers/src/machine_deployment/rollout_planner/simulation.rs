//! Rollouts simulated step by step against a fake world, compared with golden traces in
//! `golden/` (set `CORRAL_UPDATE_GOLDEN=1` to rewrite them).
//!
//! Upstream tests its planner the same way (`Test_RollingUpdateSequences` and
//! `Test_OnDeleteSequences` in `core/reconcilers/machinedeployment/`, golden files under
//! `testdata/`); this world is a little less kind: Machines become available only some steps
//! after they are created, deleted Machines linger a step before they are gone, and the fake
//! MachineSet controller picks its victims with the real deletion order.
//!
//! Each step: scenario events, then time passes (Machines become available, deleted ones go),
//! the MachineDeployment controller plans and applies, the user deletes a Machine (OnDelete
//! only), and each MachineSet controller creates or deletes Machines. After the planner and
//! after the MachineSets act, every step checks that the Machines stay within
//! `replicas + maxSurge` and the available ones at or above `replicas − maxUnavailable` (the
//! user's own bound under OnDelete), once either held since `replicas` last changed. The
//! scenario ends when the rollout is complete and a further plan would change nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use corral_api::annotations::{DISABLE_MACHINE_CREATE, REVISION};
use corral_api::{
    Machine as ApiMachine, MachineNodeReference, MachineSetDeletionOrder, MachineSpec,
    MachineStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::{
    MachineSetState, RolloutInput, RolloutPlan, RolloutStrategy, compute_rollback_target,
    compute_rollout_plan, max_surge, max_unavailable,
};
use crate::machine_set::deletion_order::compute_machines_to_delete;

/// Something that happens to the MachineDeployment at the start of a step.
#[derive(Clone, Debug)]
pub(super) enum Event {
    /// `spec.replicas` changes.
    Replicas(i32),
    /// The template changes to another version.
    Template(&'static str),
    /// `spec.paused` becomes true.
    Pause,
    /// `spec.paused` becomes false.
    Resume,
    /// Undo to a revision (`None`: the previous one).
    Rollback(Option<i64>),
    /// A Machine stops being available, for good.
    Break(&'static str),
}

/// A rollout to simulate: a MachineDeployment of `replicas` whose only MachineSet, `ms1`, runs
/// template v1 with every Machine available, and whose template has just become v2.
#[derive(Clone, Debug)]
pub(super) struct Scenario {
    pub title: &'static str,
    pub replicas: i32,
    pub strategy: RolloutStrategy,
    /// Steps between a Machine's creation and its availability.
    pub availability_delay: u32,
    /// Steps a deleted Machine lingers, counted by its MachineSet but unavailable.
    pub deletion_delay: u32,
    pub revision_history_limit: u32,
    /// Under OnDelete, how many Machines the user lets be unavailable while deleting old ones.
    pub user_max_unavailable: i32,
    pub events: Vec<(u32, Event)>,
}

impl Scenario {
    pub fn rolling(
        title: &'static str,
        replicas: i32,
        surge: IntOrString,
        unavailable: IntOrString,
    ) -> Self {
        Scenario {
            title,
            replicas,
            strategy: RolloutStrategy::RollingUpdate {
                max_surge: surge,
                max_unavailable: unavailable,
            },
            availability_delay: 2,
            deletion_delay: 1,
            revision_history_limit: 0,
            user_max_unavailable: 0,
            events: Vec::new(),
        }
    }

    pub fn on_delete(title: &'static str, replicas: i32, user_max_unavailable: i32) -> Self {
        Scenario {
            strategy: RolloutStrategy::OnDelete,
            user_max_unavailable,
            ..Scenario::rolling(title, replicas, IntOrString::Int(0), IntOrString::Int(0))
        }
    }

    pub fn at(mut self, step: u32, event: Event) -> Self {
        self.events.push((step, event));
        self
    }
}

/// What the MachineDeployment controller decided in one step, for comparing with upstream's
/// traces: `(MachineSet, replicas before, replicas after)`.
pub(super) type Decisions = Vec<(String, i32, i32)>;

/// The outcome of a simulation: the trace, and the decisions of each step.
pub(super) struct Outcome {
    pub trace: String,
    pub decisions: Vec<Decisions>,
}

const MAX_STEPS: u32 = 200;

struct Machine {
    name: String,
    template: String,
    created_step: u32,
    available_at: u32,
    deleting_since: Option<u32>,
}

impl Machine {
    fn available(&self, step: u32) -> bool {
        self.deleting_since.is_none() && step >= self.available_at
    }
}

struct Set {
    name: String,
    template: String,
    created_step: u32,
    replicas: i32,
    annotations: BTreeMap<String, String>,
    machines: Vec<Machine>,
}

struct World {
    scenario: Scenario,
    step: u32,
    replicas: i32,
    template: String,
    paused: bool,
    sets: Vec<Set>,
    next_machine: u32,
    next_set: u32,
    trace: String,
    decisions: Vec<Decisions>,
    surge_armed: bool,
    availability_armed: bool,
    complete: bool,
}

fn time(step: u32) -> Timestamp {
    let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    start + SignedDuration::from_mins(i64::from(step))
}

/// Runs a scenario to completion; panics if it breaks an invariant or does not complete.
pub(super) fn simulate(scenario: &Scenario) -> Outcome {
    let mut world = World::new(scenario.clone());
    world.header();
    world.state_line();
    loop {
        world.step += 1;
        assert!(
            world.step <= MAX_STEPS,
            "the rollout did not complete in {MAX_STEPS} steps:\n{}",
            world.trace
        );
        world.events();
        world.tick();
        world.reconcile_machine_deployment();
        world.check_invariants("after the MachineDeployment controller");
        world.user_deletes();
        for index in 0..world.sets.len() {
            world.reconcile_machine_set(index);
        }
        world.check_invariants("after the MachineSet controllers");
        world.state_line();
        if world.done() {
            world.line("done");
            break;
        }
    }
    Outcome {
        trace: world.trace,
        decisions: world.decisions,
    }
}

impl World {
    fn new(scenario: Scenario) -> Self {
        let replicas = scenario.replicas;
        let mut world = World {
            step: 0,
            replicas,
            template: "v2".into(),
            paused: false,
            sets: Vec::new(),
            next_machine: 1,
            next_set: 1,
            trace: String::new(),
            decisions: Vec::new(),
            surge_armed: false,
            availability_armed: false,
            complete: false,
            scenario,
        };
        let mut first = Set {
            name: world.set_name(),
            template: "v1".into(),
            created_step: 0,
            replicas,
            annotations: BTreeMap::from([(REVISION.to_string(), "1".to_string())]),
            machines: Vec::new(),
        };
        for _ in 0..replicas {
            let name = world.machine_name();
            first.machines.push(Machine {
                name,
                template: "v1".into(),
                created_step: 0,
                available_at: 0,
                deleting_since: None,
            });
        }
        world.sets.push(first);
        world.arm();
        world
    }

    fn set_name(&mut self) -> String {
        let name = format!("ms{}", self.next_set);
        self.next_set += 1;
        name
    }

    fn machine_name(&mut self) -> String {
        let name = format!("m{:02}", self.next_machine);
        self.next_machine += 1;
        name
    }

    fn line(&mut self, text: impl Into<String>) {
        let text = text.into();
        writeln!(self.trace, "step {}: {text}", self.step).unwrap();
    }

    fn header(&mut self) {
        let scenario = &self.scenario;
        let bounds = match &scenario.strategy {
            RolloutStrategy::RollingUpdate {
                max_surge: surge,
                max_unavailable: unavailable,
            } => format!(
                "RollingUpdate maxSurge {} maxUnavailable {} (resolved: {} and {})",
                super::super::int_or_percent::display(surge),
                super::super::int_or_percent::display(unavailable),
                max_surge(&scenario.strategy, scenario.replicas).unwrap(),
                max_unavailable(&scenario.strategy, scenario.replicas).unwrap(),
            ),
            RolloutStrategy::OnDelete => format!(
                "OnDelete, the user deletes old Machines while at most {} are unavailable",
                scenario.user_max_unavailable
            ),
        };
        let header = format!(
            "# {}\n# {} replicas, {bounds}\n# Machines become available {} steps after creation; deleted Machines linger {} step(s); revision history limit {}\n# template v1 -> v2 at step 1; `*` marks the current MachineSet, `@` its revision; Machines: `~` not available, `x` deleting\n",
            scenario.title,
            scenario.replicas,
            scenario.availability_delay,
            scenario.deletion_delay,
            scenario.revision_history_limit,
        );
        self.trace.push_str(&header);
    }

    fn bounds(&self) -> (i32, i32) {
        let strategy = &self.scenario.strategy;
        let max = self.replicas + max_surge(strategy, self.replicas).unwrap();
        let min = match strategy {
            RolloutStrategy::RollingUpdate { .. } => {
                self.replicas - max_unavailable(strategy, self.replicas).unwrap()
            }
            RolloutStrategy::OnDelete => self.replicas - self.scenario.user_max_unavailable,
        };
        (max, min.max(0))
    }

    /// Upstream `TotalMachineSetsReplicaSum`: each MachineSet counts `max(spec, status)`.
    fn total(&self) -> i32 {
        self.sets
            .iter()
            .map(|set| set.replicas.max(set.machines.len() as i32))
            .sum()
    }

    fn available(&self) -> i32 {
        self.sets
            .iter()
            .flat_map(|set| &set.machines)
            .filter(|machine| machine.available(self.step))
            .count() as i32
    }

    /// Arms the invariants that hold now; an armed invariant must keep holding.
    fn arm(&mut self) {
        let (max, min) = self.bounds();
        self.surge_armed |= self.total() <= max;
        self.availability_armed |= self.available() >= min;
    }

    fn check_invariants(&mut self, when: &str) {
        let (max, min) = self.bounds();
        let (total, available) = (self.total(), self.available());
        if self.surge_armed {
            assert!(
                total <= max,
                "step {} {when}: {total} Machines exceed replicas + maxSurge = {max}\n{}",
                self.step,
                self.trace
            );
        }
        if self.availability_armed {
            assert!(
                available >= min,
                "step {} {when}: {available} available Machines, fewer than {min}\n{}",
                self.step,
                self.trace
            );
        }
        self.arm();
    }

    fn current_index(&self) -> Option<usize> {
        self.sets
            .iter()
            .position(|set| set.template == self.template)
    }

    fn state_line(&mut self) {
        let current = self.current_index();
        let mut sets = Vec::new();
        for (index, set) in self.sets.iter().enumerate() {
            let machines: Vec<String> = set
                .machines
                .iter()
                .map(|machine| {
                    let mark = if machine.deleting_since.is_some() {
                        "x"
                    } else if !machine.available(self.step) {
                        "~"
                    } else {
                        ""
                    };
                    format!("{}{mark}", machine.name)
                })
                .collect();
            sets.push(format!(
                "{}{}@{} {} [{}]",
                if Some(index) == current { "*" } else { "" },
                set.name,
                set.annotations.get(REVISION).map_or("-", String::as_str),
                set.replicas,
                machines.join(" ")
            ));
        }
        let (max, min) = self.bounds();
        let (total, available) = (self.total(), self.available());
        self.line(format!(
            "{} | machines {total} (max {max}), available {available} (min {min})",
            sets.join(", ")
        ));
    }

    fn events(&mut self) {
        let events: Vec<Event> = self
            .scenario
            .events
            .iter()
            .filter(|(step, _)| *step == self.step)
            .map(|(_, event)| event.clone())
            .collect();
        for event in events {
            match event {
                Event::Replicas(replicas) => {
                    self.line(format!("event: replicas {} -> {replicas}", self.replicas));
                    self.replicas = replicas;
                    self.surge_armed = false;
                    self.availability_armed = false;
                    self.arm();
                }
                Event::Template(template) => {
                    self.line(format!("event: template {} -> {template}", self.template));
                    self.template = template.into();
                }
                Event::Pause => {
                    self.line("event: pause");
                    self.paused = true;
                }
                Event::Resume => {
                    self.line("event: resume");
                    self.paused = false;
                }
                Event::Rollback(revision) => {
                    let states = self.states();
                    let target = compute_rollback_target(&states, revision)
                        .expect("the scenario rolls back to a revision that exists");
                    let template = self
                        .sets
                        .iter()
                        .find(|set| set.name == target.machine_set)
                        .unwrap()
                        .template
                        .clone();
                    self.line(format!(
                        "event: rollback to revision {} ({}, template {template}){}",
                        target.revision,
                        target.machine_set,
                        if target.already_current {
                            ", already current"
                        } else {
                            ""
                        }
                    ));
                    self.template = template;
                }
                Event::Break(name) => {
                    self.line(format!("event: {name} breaks"));
                    let machine = self
                        .sets
                        .iter_mut()
                        .flat_map(|set| &mut set.machines)
                        .find(|machine| machine.name == name)
                        .expect("the scenario breaks a Machine that exists");
                    machine.available_at = u32::MAX;
                    // A fault, not a decision: availability is owed again once restored.
                    self.availability_armed = false;
                }
            }
        }
    }

    /// Deleted Machines that lingered long enough go; availability needs no bookkeeping.
    fn tick(&mut self) {
        let (step, delay) = (self.step, self.scenario.deletion_delay);
        let mut gone = Vec::new();
        for set in &mut self.sets {
            set.machines.retain(|machine| match machine.deleting_since {
                Some(since) if step >= since + delay => {
                    gone.push(machine.name.clone());
                    false
                }
                _ => true,
            });
        }
        if !gone.is_empty() {
            self.line(format!("gone: {}", gone.join(" ")));
        }
    }

    fn states(&self) -> Vec<MachineSetState> {
        self.sets
            .iter()
            .map(|set| {
                let annotation = |key: &str| set.annotations.get(key).cloned();
                let number = |key: &str| annotation(key).and_then(|value| value.parse().ok());
                MachineSetState {
                    name: set.name.clone(),
                    created: time(set.created_step),
                    template_differences: if set.template == self.template {
                        Vec::new()
                    } else {
                        vec![format!(
                            "spec.version {}, {} required",
                            set.template, self.template
                        )]
                    },
                    revision: annotation(REVISION),
                    revision_history: annotation(super::REVISION_HISTORY),
                    desired_replicas: number(corral_api::annotations::DESIRED_REPLICAS),
                    max_replicas: number(corral_api::annotations::MAX_REPLICAS),
                    replicas: set.replicas,
                    status_replicas: set.machines.len() as i32,
                    available_replicas: set
                        .machines
                        .iter()
                        .filter(|machine| machine.available(self.step))
                        .count() as i32,
                    up_to_date_replicas: set
                        .machines
                        .iter()
                        .filter(|machine| machine.template == self.template)
                        .count() as i32,
                    deleting: false,
                    generation_observed: true,
                }
            })
            .collect()
    }

    fn plan(&self) -> RolloutPlan {
        let states = self.states();
        let new_name = format!("ms{}", self.next_set);
        let input = RolloutInput {
            replicas: self.replicas,
            strategy: &self.scenario.strategy,
            paused: self.paused,
            rollout_after: None,
            now: time(self.step),
            machine_sets: &states,
            new_machine_set_name: &new_name,
            revision_history_limit: self.scenario.revision_history_limit,
            generation_observed: true,
        };
        compute_rollout_plan(&input).expect("the scenario's bounds are valid")
    }

    fn reconcile_machine_deployment(&mut self) {
        let plan = self.plan();
        let mut decisions = Decisions::new();
        for machine_set in &plan.machine_sets {
            let annotations: BTreeMap<String, String> = machine_set
                .annotations
                .iter()
                .map(|(key, value)| (key.to_string(), value.clone()))
                .collect();
            let notes = machine_set.notes.join("; ");
            if machine_set.create {
                let name = self.set_name();
                assert_eq!(name, machine_set.name);
                self.line(format!(
                    "md: create {name}@{}: {}",
                    annotations[REVISION],
                    plan.create_reason.as_deref().unwrap_or_default()
                ));
                self.sets.push(Set {
                    name,
                    template: self.template.clone(),
                    created_step: self.step,
                    replicas: 0,
                    annotations: annotations.clone(),
                    machines: Vec::new(),
                });
            }
            let set = self
                .sets
                .iter_mut()
                .find(|set| set.name == machine_set.name)
                .unwrap();
            let revision_before = set.annotations.get(REVISION).cloned();
            set.annotations = annotations;
            let revision_after = set.annotations.get(REVISION).cloned();
            let replicas_before = set.replicas;
            set.replicas = machine_set.replicas;
            if !machine_set.create && revision_before != revision_after {
                let history = set
                    .annotations
                    .get(super::REVISION_HISTORY)
                    .map(|history| format!(" (history {history})"))
                    .unwrap_or_default();
                let line = format!(
                    "md: {} revision {} -> {}{history}",
                    machine_set.name,
                    revision_before.as_deref().unwrap_or("-"),
                    revision_after.as_deref().unwrap_or("-"),
                );
                self.line(line);
            }
            if replicas_before != machine_set.replicas {
                decisions.push((
                    machine_set.name.clone(),
                    replicas_before,
                    machine_set.replicas,
                ));
                self.line(format!(
                    "md: {} replicas {replicas_before} -> {}: {notes}",
                    machine_set.name, machine_set.replicas
                ));
            }
        }
        for name in &plan.machine_sets_to_delete {
            let index = self.sets.iter().position(|set| &set.name == name).unwrap();
            assert!(self.sets[index].machines.is_empty());
            self.sets.remove(index);
            self.line(format!(
                "md: delete {name}, an old MachineSet without Machines"
            ));
        }
        if plan.complete != self.complete {
            self.complete = plan.complete;
            if plan.complete {
                self.line("md: rollout complete");
            }
        }
        self.decisions.push(decisions);
    }

    /// Under OnDelete the user deletes old Machines, oldest name first, one per step, while
    /// more than `replicas − user_max_unavailable` Machines are available.
    fn user_deletes(&mut self) {
        if !matches!(self.scenario.strategy, RolloutStrategy::OnDelete) {
            return;
        }
        let (_, min) = self.bounds();
        if self.available() <= min || self.current_index().is_none() {
            return;
        }
        let step = self.step;
        let victim = self
            .sets
            .iter_mut()
            .flat_map(|set| &mut set.machines)
            .filter(|machine| machine.template != self.template && machine.deleting_since.is_none())
            .min_by(|a, b| a.name.cmp(&b.name));
        let Some(victim) = victim else {
            return;
        };
        victim.deleting_since = Some(step);
        let name = victim.name.clone();
        self.line(format!("user: delete {name}"));
        self.remove_deleted_without_delay();
    }

    /// The fake MachineSet controller: creates Machines up to `spec.replicas` unless barred
    /// from it, and deletes the excess in the real deletion order (Machines being deleted count
    /// until they are gone, and are picked first).
    fn reconcile_machine_set(&mut self, index: usize) {
        let step = self.step;
        let set = &self.sets[index];
        let diff = set.machines.len() as i32 - set.replicas;
        if diff < 0 {
            if set
                .annotations
                .get(DISABLE_MACHINE_CREATE)
                .map(String::as_str)
                == Some("true")
            {
                return;
            }
            let mut created = Vec::new();
            for _ in 0..-diff {
                let name = self.machine_name();
                let set = &mut self.sets[index];
                set.machines.push(Machine {
                    name: name.clone(),
                    template: set.template.clone(),
                    created_step: step,
                    available_at: step + self.scenario.availability_delay,
                    deleting_since: None,
                });
                created.push(name);
            }
            let name = self.sets[index].name.clone();
            self.line(format!("{name}: create {}", created.join(" ")));
        } else if diff > 0 {
            let machines: Vec<ApiMachine> = set
                .machines
                .iter()
                .map(|machine| api_machine(machine, step))
                .collect();
            let victims: Vec<String> = compute_machines_to_delete(
                &machines,
                diff as usize,
                MachineSetDeletionOrder::Random,
                time(step),
            )
            .into_iter()
            .map(|machine| machine.metadata.name.clone().unwrap())
            .collect();
            let set = &mut self.sets[index];
            let mut deleted = Vec::new();
            for machine in &mut set.machines {
                if victims.contains(&machine.name) && machine.deleting_since.is_none() {
                    machine.deleting_since = Some(step);
                    deleted.push(machine.name.clone());
                }
            }
            if !deleted.is_empty() {
                let name = set.name.clone();
                self.line(format!("{name}: delete {}", deleted.join(" ")));
                self.remove_deleted_without_delay();
            }
        }
    }

    fn remove_deleted_without_delay(&mut self) {
        if self.scenario.deletion_delay == 0 {
            for set in &mut self.sets {
                set.machines
                    .retain(|machine| machine.deleting_since.is_none());
            }
        }
    }

    /// Done when nothing is left to happen: no events ahead, not paused, every Machine current
    /// and available, and a further plan would change nothing.
    fn done(&self) -> bool {
        if self.paused
            || self
                .scenario
                .events
                .iter()
                .any(|(step, _)| *step > self.step)
        {
            return false;
        }
        let machines: Vec<&Machine> = self.sets.iter().flat_map(|set| &set.machines).collect();
        let settled = machines.len() as i32 == self.replicas
            && machines
                .iter()
                .all(|machine| machine.template == self.template && machine.available(self.step));
        if !settled {
            return false;
        }
        let plan = self.plan();
        plan.complete
            && plan.machine_sets_to_delete.is_empty()
            && plan.machine_sets.iter().all(|machine_set| {
                !machine_set.create && machine_set.replicas == machine_set.replicas_before
            })
    }
}

/// The Machine as the deletion order sees it: a Node once available.
fn api_machine(machine: &Machine, step: u32) -> ApiMachine {
    ApiMachine {
        metadata: ObjectMeta {
            name: Some(machine.name.clone()),
            creation_timestamp: Some(Time(time(machine.created_step))),
            deletion_timestamp: machine.deleting_since.map(|since| Time(time(since))),
            ..ObjectMeta::default()
        },
        spec: MachineSpec::default(),
        status: Some(MachineStatus {
            node_ref: (step >= machine.available_at).then(|| MachineNodeReference {
                name: machine.name.clone(),
            }),
            ..MachineStatus::default()
        }),
    }
}

/// Compares a trace with its golden file, or rewrites the file when `CORRAL_UPDATE_GOLDEN` is
/// set.
pub(super) fn check_golden(name: &str, trace: &str) {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "src/machine_deployment/rollout_planner/golden",
        &format!("{name}.trace"),
    ]
    .iter()
    .collect();
    if std::env::var_os("CORRAL_UPDATE_GOLDEN").is_some_and(|value| value == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, trace).unwrap();
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "reading {}: {error}; run with CORRAL_UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if golden != trace {
        let first_difference = golden
            .lines()
            .zip(trace.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| golden.lines().count().min(trace.lines().count()));
        panic!(
            "{} differs from the simulation from line {} (run with CORRAL_UPDATE_GOLDEN=1 to accept the new trace)\n--- golden\n{}\n--- simulated\n{}",
            path.display(),
            first_difference + 1,
            golden
                .lines()
                .skip(first_difference)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
            trace
                .lines()
                .skip(first_difference)
                .take(5)
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
}

/// Upstream's golden sequences (`testdata/rollingupdate/regular rollout, …`) in a world as kind
/// as upstream's: Machines available at once, deletions immediate. The planner must make the
/// same decisions, step by step.
#[test]
fn upstream_rolling_update_sequences() {
    let upstream_world = |replicas, surge, unavailable| Scenario {
        availability_delay: 0,
        deletion_delay: 0,
        ..Scenario::rolling(
            "upstream",
            replicas,
            IntOrString::Int(surge),
            IntOrString::Int(unavailable),
        )
    };
    let step = |changes: &[(&str, i32, i32)]| -> Decisions {
        changes
            .iter()
            .map(|(name, from, to)| (name.to_string(), *from, *to))
            .collect()
    };
    // regular rollout, 3 replicas, maxsurge 1, maxunavailable 0
    assert_eq!(
        simulate(&upstream_world(3, 1, 0)).decisions,
        [
            step(&[("ms2", 0, 1)]),
            step(&[("ms1", 3, 2)]),
            step(&[("ms2", 1, 2)]),
            step(&[("ms1", 2, 1)]),
            step(&[("ms2", 2, 3)]),
            step(&[("ms1", 1, 0)]),
            step(&[]),
        ]
    );
    // regular rollout, 3 replicas, maxsurge 0, maxunavailable 1
    assert_eq!(
        simulate(&upstream_world(3, 0, 1)).decisions,
        [
            step(&[("ms1", 3, 2)]),
            step(&[("ms2", 0, 1)]),
            step(&[("ms1", 2, 1)]),
            step(&[("ms2", 1, 2)]),
            step(&[("ms1", 1, 0)]),
            step(&[("ms2", 2, 3)]),
            step(&[]),
        ]
    );
    // regular rollout, 6 replicas, maxsurge 3, maxunavailable 1
    assert_eq!(
        simulate(&upstream_world(6, 3, 1)).decisions,
        [
            step(&[("ms1", 6, 5), ("ms2", 0, 3)]),
            step(&[("ms1", 5, 2), ("ms2", 3, 4)]),
            step(&[("ms1", 2, 1), ("ms2", 4, 6)]),
            step(&[("ms1", 1, 0)]),
            step(&[]),
        ]
    );
}

fn int(value: i32) -> IntOrString {
    IntOrString::Int(value)
}

fn percent(value: &str) -> IntOrString {
    IntOrString::String(value.into())
}

/// The scenarios with golden traces, by file name.
fn scenario(name: &str) -> Scenario {
    match name {
        "rolling-3-surge1-unavailable0" => {
            Scenario::rolling("RollingUpdate, 3 replicas, maxSurge 1, maxUnavailable 0", 3, int(1), int(0))
        }
        "rolling-3-surge0-unavailable1" => {
            Scenario::rolling("RollingUpdate, 3 replicas, maxSurge 0, maxUnavailable 1", 3, int(0), int(1))
        }
        "rolling-3-surge2-unavailable1" => {
            Scenario::rolling("RollingUpdate, 3 replicas, maxSurge 2, maxUnavailable 1", 3, int(2), int(1))
        }
        "rolling-3-surge25pc-unavailable25pc" => Scenario::rolling(
            "RollingUpdate, 3 replicas, maxSurge 25%, maxUnavailable 25%",
            3,
            percent("25%"),
            percent("25%"),
        ),
        "rolling-3-surge0-unavailable0" => Scenario::rolling(
            "RollingUpdate, 3 replicas, maxSurge 0, maxUnavailable 0 (unavailable becomes 1)",
            3,
            int(0),
            int(0),
        ),
        "rolling-6-surge1-unavailable0" => {
            Scenario::rolling("RollingUpdate, 6 replicas, maxSurge 1, maxUnavailable 0", 6, int(1), int(0))
        }
        "rolling-6-surge0-unavailable1" => {
            Scenario::rolling("RollingUpdate, 6 replicas, maxSurge 0, maxUnavailable 1", 6, int(0), int(1))
        }
        "rolling-6-surge2-unavailable1" => {
            Scenario::rolling("RollingUpdate, 6 replicas, maxSurge 2, maxUnavailable 1", 6, int(2), int(1))
        }
        "rolling-6-surge25pc-unavailable25pc" => Scenario::rolling(
            "RollingUpdate, 6 replicas, maxSurge 25%, maxUnavailable 25%",
            6,
            percent("25%"),
            percent("25%"),
        ),
        "rolling-6-surge0-unavailable0" => Scenario::rolling(
            "RollingUpdate, 6 replicas, maxSurge 0, maxUnavailable 0 (unavailable becomes 1)",
            6,
            int(0),
            int(0),
        ),
        "rolling-6-surge2-unavailable1-scale-up-to-12" => Scenario::rolling(
            "RollingUpdate, 6 replicas, maxSurge 2, maxUnavailable 1, scaled up to 12 mid-rollout",
            6,
            int(2),
            int(1),
        )
        .at(4, Event::Replicas(12)),
        "rolling-6-surge2-unavailable1-scale-down-to-3" => Scenario::rolling(
            "RollingUpdate, 6 replicas, maxSurge 2, maxUnavailable 1, scaled down to 3 mid-rollout",
            6,
            int(2),
            int(1),
        )
        .at(4, Event::Replicas(3)),
        "rolling-6-surge1-unavailable0-change-template" => Scenario::rolling(
            "RollingUpdate, 6 replicas, maxSurge 1, maxUnavailable 0, template changed again mid-rollout",
            6,
            int(1),
            int(0),
        )
        .at(6, Event::Template("v3")),
        "rolling-3-surge1-unavailable0-broken-old-machine" => Scenario::rolling(
            "RollingUpdate, 3 replicas, maxSurge 1, maxUnavailable 0, an old Machine broken: the deadlock breaker",
            3,
            int(1),
            int(0),
        )
        .at(1, Event::Break("m02")),
        "rolling-6-surge2-unavailable1-paused-scale-to-12" => Scenario::rolling(
            "RollingUpdate, 6 replicas, maxSurge 2, maxUnavailable 1, paused mid-rollout, scaled to 12 (proportionally), resumed",
            6,
            int(2),
            int(1),
        )
        .at(3, Event::Pause)
        .at(4, Event::Replicas(12))
        .at(8, Event::Resume),
        "rolling-3-surge1-unavailable0-rollback" => Scenario {
            revision_history_limit: 2,
            ..Scenario::rolling(
                "RollingUpdate, 3 replicas, maxSurge 1, maxUnavailable 0, history limit 2: v2 done, v3 started, undone back to v2",
                3,
                int(1),
                int(0),
            )
        }
        .at(12, Event::Template("v3"))
        .at(15, Event::Rollback(None)),
        "ondelete-3" => Scenario::on_delete("OnDelete, 3 replicas, the user deletes one old Machine at a time", 3, 1),
        "ondelete-6-user-unavailable-2" => {
            Scenario::on_delete("OnDelete, 6 replicas, the user deletes two old Machines at a time", 6, 2)
        }
        "ondelete-6-scale-up-to-9" => {
            Scenario::on_delete("OnDelete, 6 replicas, scaled up to 9 mid-rollout", 6, 1).at(5, Event::Replicas(9))
        }
        "ondelete-6-scale-down-to-3" => {
            Scenario::on_delete("OnDelete, 6 replicas, scaled down to 3 mid-rollout", 6, 1).at(5, Event::Replicas(3))
        }
        other => panic!("no scenario {other}"),
    }
}

macro_rules! golden_tests {
    ($($test:ident => $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check_golden($name, &simulate(&scenario($name)).trace);
            }
        )*
    };
}

golden_tests! {
    golden_rolling_3_surge1_unavailable0 => "rolling-3-surge1-unavailable0",
    golden_rolling_3_surge0_unavailable1 => "rolling-3-surge0-unavailable1",
    golden_rolling_3_surge2_unavailable1 => "rolling-3-surge2-unavailable1",
    golden_rolling_3_surge25pc_unavailable25pc => "rolling-3-surge25pc-unavailable25pc",
    golden_rolling_3_surge0_unavailable0 => "rolling-3-surge0-unavailable0",
    golden_rolling_6_surge1_unavailable0 => "rolling-6-surge1-unavailable0",
    golden_rolling_6_surge0_unavailable1 => "rolling-6-surge0-unavailable1",
    golden_rolling_6_surge2_unavailable1 => "rolling-6-surge2-unavailable1",
    golden_rolling_6_surge25pc_unavailable25pc => "rolling-6-surge25pc-unavailable25pc",
    golden_rolling_6_surge0_unavailable0 => "rolling-6-surge0-unavailable0",
    golden_rolling_6_scale_up_to_12 => "rolling-6-surge2-unavailable1-scale-up-to-12",
    golden_rolling_6_scale_down_to_3 => "rolling-6-surge2-unavailable1-scale-down-to-3",
    golden_rolling_6_change_template => "rolling-6-surge1-unavailable0-change-template",
    golden_rolling_3_broken_old_machine => "rolling-3-surge1-unavailable0-broken-old-machine",
    golden_rolling_6_paused_scale_to_12 => "rolling-6-surge2-unavailable1-paused-scale-to-12",
    golden_rolling_3_rollback => "rolling-3-surge1-unavailable0-rollback",
    golden_ondelete_3 => "ondelete-3",
    golden_ondelete_6_user_unavailable_2 => "ondelete-6-user-unavailable-2",
    golden_ondelete_6_scale_up_to_9 => "ondelete-6-scale-up-to-9",
    golden_ondelete_6_scale_down_to_3 => "ondelete-6-scale-down-to-3",
}
