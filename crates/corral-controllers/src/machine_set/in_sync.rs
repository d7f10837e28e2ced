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
//!
//! The same memo, with the selector as its input, keeps which Machines matched the
//! MachineSet's selector (`MachineSetController::candidate_machines`).

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;
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

/// The Machines found to pass a check under some inputs: in sync with the template (inputs:
/// [`Inputs`]), or matching the selector (inputs: the selector as written).
pub(crate) struct Checked<I> {
    inputs: I,
    machines: HashMap<usize, Weak<Machine>, BuildHasherDefault<AddressHasher>>,
}

impl<I> Checked<I> {
    /// Nothing checked yet, under `inputs`.
    pub(crate) fn new(inputs: I) -> Self {
        Checked {
            inputs,
            machines: HashMap::default(),
        }
    }

    /// Whether this very `Arc` passed.
    pub(crate) fn contains(&self, machine: &Arc<Machine>) -> bool {
        self.machines.contains_key(&address(machine))
    }

    /// Records `machine` as passing.
    pub(crate) fn insert(&mut self, machine: &Arc<Machine>) {
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

/// Hashes an address: allocations are aligned, so its low bits say little; a multiplication
/// spreads the rest over all of them (SipHash, the default, cost more than the check it saves).
#[derive(Default)]
pub(crate) struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_usize(&mut self, address: usize) {
        let spread = (address as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = spread ^ (spread >> 29);
    }
}

/// The memo of every owner (by default a MachineSet), by owner, for one check.
pub(crate) struct Memo<I, O = MachineSet>
where
    O: kube::Resource,
{
    sets: Mutex<HashMap<ObjectRef<O>, Checked<I>>>,
}

impl<I, O: kube::Resource> Default for Memo<I, O> {
    fn default() -> Self {
        Memo {
            sets: Mutex::default(),
        }
    }
}

/// Which Machines were found in sync with the template.
pub(super) type InSyncMemo = Memo<Inputs>;

impl<O> SelectedMemo<O>
where
    O: kube::Resource,
    O::DynamicType: Eq + std::hash::Hash + Clone,
{
    /// Keeps the `machines` that match `owner`'s `selector`, checking only those whose very
    /// `Arc` did not match the same selector at the owner's last check.
    pub(crate) fn retain_matching(
        &self,
        owner: ObjectRef<O>,
        selector: &kube::core::Selector,
        machines: &mut Vec<Arc<Machine>>,
    ) {
        use kube::ResourceExt;
        use kube::core::SelectorExt;
        let inputs = selector.to_string();
        let known = self.take(&owner, inputs.clone());
        let mut checked = Checked::new(inputs);
        machines.retain(|machine| {
            let matches = known.contains(machine) || selector.matches(machine.labels());
            if matches {
                checked.insert(machine);
            }
            matches
        });
        drop(known);
        self.put(owner, checked);
    }
}

/// Which Machines were found to match an owner's selector (a MachineSet's or a
/// MachineDeployment's Machines are checked against it at every reconcile: label lookups,
/// several per Machine).
pub(crate) type SelectedMemo<O = MachineSet> = Memo<String, O>;

impl<I: PartialEq, O> Memo<I, O>
where
    O: kube::Resource,
    O::DynamicType: Eq + std::hash::Hash + Clone,
{
    /// What passed for `machine_set` under equal `inputs`; empty when the inputs changed or
    /// nothing was kept. The memo is taken out: [`Memo::put`] gives back the next one.
    pub(crate) fn take(&self, machine_set: &ObjectRef<O>, inputs: I) -> Checked<I> {
        let kept = self.sets.lock().expect("memo lock").remove(machine_set);
        match kept {
            Some(checked) if checked.inputs == inputs => checked,
            _ => Checked::new(inputs),
        }
    }

    /// Keeps what a check found for `machine_set`.
    pub(crate) fn put(&self, machine_set: ObjectRef<O>, checked: Checked<I>) {
        self.sets
            .lock()
            .expect("memo lock")
            .insert(machine_set, checked);
    }

    /// Forgets a MachineSet that is gone.
    pub(crate) fn forget(&self, machine_set: &ObjectRef<O>) {
        self.sets.lock().expect("memo lock").remove(machine_set);
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
