//! Which Machines a MachineSet found in sync, so that the next reconcile checks only the
//! Machines that changed since.
//!
//! A MachineSet of 10,000 reconciles a few times a second during a rollout, and each reconcile
//! asks of every Machine whether it has the labels, annotations and in-place fields the
//! template gives it (`machines::in_sync`: map lookups and a walk of the managed fields). The
//! answer depends only on the Machine and on those template inputs; the shared cache hands out
//! the same `Arc` for a Machine until it changes. So the verdict is kept per `Arc` and per
//! template inputs: a Machine whose `Arc` was found in sync under equal inputs is in sync.
//!
//! The memo holds a `Weak` of each `Arc` it vouches for: while an entry exists, its
//! allocation cannot be freed and reused for another Machine, so an equal address is the same
//! Machine. Every check replaces the MachineSet's memo with the Machines it saw, so it never
//! holds more than the MachineSet's current Machines.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

use corral_api::{Machine, MachineSet, MachineSpec};
use kube::runtime::reflector::ObjectRef;

/// What `in_sync` compares a Machine against, taken from the MachineSet.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Inputs {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    spec: InPlaceSpec,
}

/// The template's fields that change in place on existing Machines.
#[derive(Clone, Debug, PartialEq)]
struct InPlaceSpec {
    deletion: corral_api::MachineDeletionSpec,
    readiness_gates: Vec<corral_api::MachineReadinessGate>,
    min_ready_seconds: Option<i32>,
    taints: Vec<corral_api::MachineTaint>,
}

impl Inputs {
    /// The inputs of a MachineSet whose Machines carry `labels`.
    pub(super) fn new(machine_set: &MachineSet, labels: &BTreeMap<String, String>) -> Self {
        let template = &machine_set.spec.template;
        let MachineSpec {
            deletion,
            readiness_gates,
            min_ready_seconds,
            taints,
            ..
        } = &template.spec;
        Inputs {
            labels: labels.clone(),
            annotations: template.metadata.annotations.clone(),
            spec: InPlaceSpec {
                deletion: deletion.clone(),
                readiness_gates: readiness_gates.clone(),
                min_ready_seconds: *min_ready_seconds,
                taints: taints.clone(),
            },
        }
    }
}

/// The Machines found in sync under some inputs.
pub(super) struct Checked {
    inputs: Inputs,
    machines: HashMap<usize, Weak<Machine>>,
}

impl Checked {
    /// Nothing checked yet, under `inputs`.
    pub(super) fn new(inputs: Inputs) -> Self {
        Checked {
            inputs,
            machines: HashMap::new(),
        }
    }

    /// Whether this very `Arc` was found in sync.
    pub(super) fn contains(&self, machine: &Arc<Machine>) -> bool {
        self.machines.contains_key(&address(machine))
    }

    /// Records `machine` as found in sync.
    pub(super) fn insert(&mut self, machine: &Arc<Machine>) {
        self.machines
            .insert(address(machine), Arc::downgrade(machine));
    }

    /// How many Machines it vouches for.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.machines.len()
    }
}

fn address(machine: &Arc<Machine>) -> usize {
    Arc::as_ptr(machine) as usize
}

/// The memo of every MachineSet, by MachineSet.
#[derive(Default)]
pub(super) struct InSyncMemo {
    sets: Mutex<HashMap<ObjectRef<MachineSet>, Checked>>,
}

impl InSyncMemo {
    /// What was found in sync for `machine_set` under equal `inputs`; empty when the inputs
    /// changed or nothing was kept. The memo is taken out: [`InSyncMemo::put`] gives back the
    /// next one.
    pub(super) fn take(&self, machine_set: &ObjectRef<MachineSet>, inputs: Inputs) -> Checked {
        let kept = self
            .sets
            .lock()
            .expect("in-sync memo lock")
            .remove(machine_set);
        match kept {
            Some(checked) if checked.inputs == inputs => checked,
            _ => Checked::new(inputs),
        }
    }

    /// Keeps what a check found for `machine_set`.
    pub(super) fn put(&self, machine_set: ObjectRef<MachineSet>, checked: Checked) {
        self.sets
            .lock()
            .expect("in-sync memo lock")
            .insert(machine_set, checked);
    }

    /// Forgets a MachineSet that is gone.
    pub(super) fn forget(&self, machine_set: &ObjectRef<MachineSet>) {
        self.sets
            .lock()
            .expect("in-sync memo lock")
            .remove(machine_set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine_set(label: &str) -> MachineSet {
        let mut machine_set = MachineSet::new("ms", Default::default());
        machine_set
            .spec
            .template
            .metadata
            .labels
            .insert("tier".into(), label.into());
        machine_set
    }

    fn inputs(machine_set: &MachineSet) -> Inputs {
        Inputs::new(machine_set, &machine_set.spec.template.metadata.labels)
    }

    #[test]
    fn a_verdict_holds_for_the_same_arc_under_the_same_inputs_only() {
        let memo = InSyncMemo::default();
        let key = ObjectRef::new("ms").within("default");
        let set = machine_set("a");
        let machine = Arc::new(Machine::new("m", Default::default()));
        let changed = Arc::new((*machine).clone());

        let mut checked = memo.take(&key, inputs(&set));
        assert!(!checked.contains(&machine));
        checked.insert(&machine);
        memo.put(key.clone(), checked);

        let checked = memo.take(&key, inputs(&set));
        assert!(checked.contains(&machine), "same Arc, same inputs");
        assert!(!checked.contains(&changed), "an equal copy is another Arc");
        memo.put(key.clone(), checked);

        let checked = memo.take(&key, inputs(&machine_set("b")));
        assert!(!checked.contains(&machine), "the template's labels changed");
        assert_eq!(checked.len(), 0);

        memo.put(key.clone(), checked);
        memo.forget(&key);
        assert!(!memo.take(&key, inputs(&set)).contains(&machine));
    }
}
