//! The boot timeline of a simulated VM, as pure code: when each step is due, given the time the
//! VM was created, the sampled step durations and the injected faults. The driver in
//! `in_process.rs` does the steps' effects (registering the Node, starting control plane
//! components) and tells the timeline when they are done.
//!
//! The steps follow upstream's in-memory backend (`backends/inmemory/inmemorymachine_backend.go`,
//! `ReconcileNormal`): the VM boots; its Node registers a step after the VM is up; on a control
//! plane machine, etcd and the API server each start a step after the Node registered, in
//! parallel. A step's due time is counted from the due time of the step before it, not from when
//! the driver noticed, so the timeline does not drift with scheduling delays.

use std::time::Duration;

use tokio::time::Instant;

#[cfg(test)]
mod tests;

/// How long each step takes, jitter already applied. `etcd` and `api_server` are set for control
/// plane machines only.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BootPlan {
    pub vm: Duration,
    pub node: Duration,
    pub etcd: Option<Duration>,
    pub api_server: Option<Duration>,
}

impl BootPlan {
    /// Samples each step's duration as upstream does: the startup duration plus a uniformly
    /// random share of up to `jitter` of it (`random` is a sample of [0, 1)).
    pub fn sample(
        timings: &super::StepTimings,
        control_plane: bool,
        random: impl FnMut() -> f64,
    ) -> BootPlan {
        let mut random = random;
        let mut sample = |timing: &super::StepTiming| {
            let extra = timing.startup.as_secs_f64() * timing.jitter.max(0.0) * random();
            timing.startup + Duration::from_secs_f64(extra)
        };
        BootPlan {
            vm: sample(&timings.vm),
            node: sample(&timings.node),
            etcd: control_plane.then(|| sample(&timings.etcd)),
            api_server: control_plane.then(|| sample(&timings.api_server)),
        }
    }
}

/// A step of the boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Vm,
    Node,
    Etcd,
    ApiServer,
}

/// Where a step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// The step before it has not completed.
    Waiting,
    /// Under way, due at the given time.
    Underway { due: Instant },
    /// Completed at the given time.
    Done { at: Instant },
    /// The VM's boot was made to fail.
    Failed,
}

/// The boot of one VM.
#[derive(Clone, Debug)]
pub(crate) struct Boot {
    plan: BootPlan,
    /// When the VM's boot (re)started.
    vm_started: Instant,
    /// Set while the fail-boot fault holds the VM down.
    failed: bool,
    vm_done: Option<Instant>,
    node_done: Option<Instant>,
    etcd_done: Option<Instant>,
    api_server_done: Option<Instant>,
}

impl Boot {
    pub fn new(plan: BootPlan, now: Instant) -> Boot {
        Boot {
            plan,
            vm_started: now,
            failed: false,
            vm_done: None,
            node_done: None,
            etcd_done: None,
            api_server_done: None,
        }
    }

    pub fn control_plane(&self) -> bool {
        self.plan.etcd.is_some()
    }

    /// Moves the VM step on to `now`: the VM boots once its duration has passed, unless
    /// `fail_boot` holds it down; when `fail_boot` is lifted from a VM it held down, the boot
    /// starts again from the beginning. A VM that has booted is not affected by `fail_boot`.
    pub fn advance(&mut self, now: Instant, fail_boot: bool) {
        if self.vm_done.is_some() {
            return;
        }
        if fail_boot {
            self.failed = true;
            return;
        }
        if self.failed {
            self.failed = false;
            self.vm_started = now;
        }
        let due = self.vm_started + self.plan.vm;
        if now >= due {
            self.vm_done = Some(due);
        }
    }

    /// When a step is due: `None` while the step before it has not completed, or when the
    /// step does not apply (etcd and the API server on a worker).
    pub fn due(&self, step: Step) -> Option<Instant> {
        match step {
            Step::Vm => (!self.failed).then(|| self.vm_started + self.plan.vm),
            Step::Node => self.vm_done.map(|done| done + self.plan.node),
            Step::Etcd => self.node_done.zip(self.plan.etcd).map(|(done, d)| done + d),
            Step::ApiServer => self
                .node_done
                .zip(self.plan.api_server)
                .map(|(done, d)| done + d),
        }
    }

    /// Records that the driver completed a step's effect. The Node counts from its due time
    /// so that the control plane steps do not drift; the driver is expected to complete a step
    /// at or after its due time.
    pub fn complete(&mut self, step: Step, now: Instant) {
        let at = self.due(step).map_or(now, |due| due.min(now));
        let slot = match step {
            Step::Vm => &mut self.vm_done,
            Step::Node => &mut self.node_done,
            Step::Etcd => &mut self.etcd_done,
            Step::ApiServer => &mut self.api_server_done,
        };
        slot.get_or_insert(at);
    }

    fn done(&self, step: Step) -> Option<Instant> {
        match step {
            Step::Vm => self.vm_done,
            Step::Node => self.node_done,
            Step::Etcd => self.etcd_done,
            Step::ApiServer => self.api_server_done,
        }
    }

    /// Where a step stands.
    pub fn progress(&self, step: Step) -> Progress {
        if let Some(at) = self.done(step) {
            return Progress::Done { at };
        }
        if step == Step::Vm && self.failed {
            return Progress::Failed;
        }
        match self.due(step) {
            Some(due) => Progress::Underway { due },
            None => Progress::Waiting,
        }
    }

    /// The steps whose effect is due by `now` and not yet done, in boot order.
    pub fn due_steps(&self, now: Instant) -> Vec<Step> {
        [Step::Node, Step::Etcd, Step::ApiServer]
            .into_iter()
            .filter(|step| self.done(*step).is_none())
            .filter(|step| self.due(*step).is_some_and(|due| due <= now))
            .collect()
    }

    /// The earliest due time after `now` of a step not yet done: when the driver must look
    /// again.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        [Step::Vm, Step::Node, Step::Etcd, Step::ApiServer]
            .into_iter()
            .filter(|step| self.done(*step).is_none())
            .filter_map(|step| self.due(step))
            .filter(|due| *due > now)
            .min()
    }
}
