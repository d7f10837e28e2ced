use std::time::Duration;

use tokio::time::Instant;

use super::{Boot, BootPlan, Progress, Step};
use crate::{StepTiming, StepTimings};

fn secs(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn plan(control_plane: bool) -> BootPlan {
    BootPlan {
        vm: secs(10),
        node: secs(2),
        etcd: control_plane.then(|| secs(3)),
        api_server: control_plane.then(|| secs(4)),
    }
}

#[test]
fn steps_follow_each_other_from_their_due_times() {
    let start = Instant::now();
    let mut boot = Boot::new(plan(true), start);
    assert_eq!(
        boot.progress(Step::Vm),
        Progress::Underway {
            due: start + secs(10)
        }
    );
    assert_eq!(boot.progress(Step::Node), Progress::Waiting);
    assert_eq!(boot.next_deadline(start), Some(start + secs(10)));

    // Noticed late: the Node is still due 2 s after the VM was due, not after it was noticed.
    let late = start + secs(11);
    boot.advance(late, false);
    assert_eq!(
        boot.progress(Step::Vm),
        Progress::Done {
            at: start + secs(10)
        }
    );
    assert_eq!(
        boot.progress(Step::Node),
        Progress::Underway {
            due: start + secs(12)
        }
    );
    assert!(boot.due_steps(late).is_empty());
    assert_eq!(boot.next_deadline(late), Some(start + secs(12)));

    let now = start + secs(12);
    assert_eq!(boot.due_steps(now), vec![Step::Node]);
    boot.complete(Step::Node, now + secs(1));
    assert_eq!(boot.progress(Step::Node), Progress::Done { at: now });
    assert_eq!(
        boot.progress(Step::Etcd),
        Progress::Underway { due: now + secs(3) }
    );
    assert_eq!(
        boot.progress(Step::ApiServer),
        Progress::Underway { due: now + secs(4) }
    );
    assert_eq!(
        boot.due_steps(now + secs(4)),
        vec![Step::Etcd, Step::ApiServer]
    );
}

#[test]
fn workers_have_no_control_plane_steps() {
    let start = Instant::now();
    let mut boot = Boot::new(plan(false), start);
    boot.advance(start + secs(10), false);
    boot.complete(Step::Node, start + secs(12));
    assert_eq!(boot.progress(Step::Etcd), Progress::Waiting);
    assert_eq!(boot.progress(Step::ApiServer), Progress::Waiting);
    assert_eq!(boot.next_deadline(start + secs(12)), None);
    assert!(boot.due_steps(start + secs(100)).is_empty());
}

#[test]
fn zero_durations_complete_at_once() {
    let start = Instant::now();
    let plan = BootPlan {
        vm: Duration::ZERO,
        node: Duration::ZERO,
        etcd: Some(Duration::ZERO),
        api_server: Some(Duration::ZERO),
    };
    let mut boot = Boot::new(plan, start);
    boot.advance(start, false);
    assert_eq!(boot.progress(Step::Vm), Progress::Done { at: start });
    assert_eq!(boot.due_steps(start), vec![Step::Node]);
    boot.complete(Step::Node, start);
    assert_eq!(boot.due_steps(start), vec![Step::Etcd, Step::ApiServer]);
}

#[test]
fn fail_boot_holds_the_vm_down_and_lifting_it_restarts_the_boot() {
    let start = Instant::now();
    let mut boot = Boot::new(plan(false), start);
    boot.advance(start + secs(5), true);
    assert_eq!(boot.progress(Step::Vm), Progress::Failed);
    assert_eq!(boot.next_deadline(start + secs(5)), None);
    boot.advance(start + secs(50), true);
    assert_eq!(boot.progress(Step::Vm), Progress::Failed);

    let lifted = start + secs(60);
    boot.advance(lifted, false);
    assert_eq!(
        boot.progress(Step::Vm),
        Progress::Underway {
            due: lifted + secs(10)
        }
    );
    boot.advance(lifted + secs(10), false);
    assert_eq!(
        boot.progress(Step::Vm),
        Progress::Done {
            at: lifted + secs(10)
        }
    );

    // Once booted, the fault no longer matters.
    boot.advance(lifted + secs(11), true);
    assert_eq!(
        boot.progress(Step::Vm),
        Progress::Done {
            at: lifted + secs(10)
        }
    );
}

#[test]
fn jitter_adds_up_to_its_share_of_the_duration() {
    let timing = |startup, jitter| StepTiming { startup, jitter };
    let timings = StepTimings {
        vm: timing(secs(10), 0.5),
        node: timing(secs(2), 0.0),
        etcd: timing(secs(4), 1.0),
        api_server: timing(Duration::ZERO, 0.9),
    };
    let lowest = BootPlan::sample(&timings, true, || 0.0);
    assert_eq!(
        lowest,
        BootPlan {
            vm: secs(10),
            node: secs(2),
            etcd: Some(secs(4)),
            api_server: Some(Duration::ZERO)
        }
    );
    let highest = BootPlan::sample(&timings, false, || 0.999_999);
    assert!(highest.vm > secs(14) && highest.vm < secs(15));
    assert_eq!(highest.node, secs(2));
    assert_eq!((highest.etcd, highest.api_server), (None, None));
}
