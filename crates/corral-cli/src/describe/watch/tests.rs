use k8s_openapi::jiff::Timestamp;

use super::{View, is_available, redraw, state_line};
use crate::describe::tree::{Condition, Node, Shown};

fn cluster(ready: &str, desired: &str, true_conditions: &[&str]) -> Node {
    let mut node = Node::object("Cluster", "demo");
    node.shown = Shown::Available;
    node.replicas = Some(format!("{desired}/{desired}"));
    node.ready = Some(ready.into());
    node.conditions = true_conditions
        .iter()
        .map(|type_| Condition {
            type_: type_.to_string(),
            status: "True".into(),
            reason: String::new(),
            message: String::new(),
            last_transition_time: None,
        })
        .collect();
    node
}

#[test]
fn the_state_line_says_how_many_machines_are_ready_and_how_far_the_cluster_got() {
    assert_eq!(
        state_line(&Node::object("Cluster", "demo")),
        "demo: no machines yet, provisioning"
    );
    assert_eq!(
        state_line(&cluster(
            "4",
            "6",
            &["InfrastructureReady", "ControlPlaneInitialized"]
        )),
        "demo: 4/6 machines ready, control plane initialized"
    );
    let done = cluster(
        "6",
        "6",
        &["InfrastructureReady", "ControlPlaneAvailable", "Available"],
    );
    assert_eq!(state_line(&done), "demo: 6/6 machines ready, available");
    assert!(is_available(&done));
    assert!(!is_available(&cluster("5", "6", &["Available"])));
}

#[test]
fn without_a_terminal_each_change_is_one_line_and_nothing_else_is_written() {
    let mut out = Vec::new();
    {
        let mut view = View::lines(&mut out);
        let now = Timestamp::now();
        for node in [
            cluster("0", "6", &["InfrastructureReady"]),
            cluster("0", "6", &["InfrastructureReady"]),
            cluster("2", "6", &["InfrastructureReady"]),
            cluster("2", "6", &["InfrastructureReady"]),
        ] {
            view.show(&node, now, Some("1 warning — see corral.log"))
                .unwrap();
        }
    }
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "demo: 0/6 machines ready, infrastructure ready\n\
         demo: 2/6 machines ready, infrastructure ready\n"
    );
}

#[test]
fn on_a_terminal_the_tree_is_redrawn_in_place_and_the_terminal_restored() {
    let mut out = Vec::new();
    {
        let mut view = View::terminal(&mut out, false);
        let now = Timestamp::now();
        view.show(&cluster("0", "6", &[]), now, None).unwrap();
        view.show(
            &cluster("1", "6", &[]),
            now,
            Some("1 warning — see corral.log"),
        )
        .unwrap();
    }
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("\x1b[?7l\x1b[?25l"), "{text:?}");
    // The header and the Cluster's row, then up over those two lines to redraw.
    assert!(text.contains("\x1b[2A\x1b[J"), "{text:?}");
    assert!(text.contains("1 warning — see corral.log\n"), "{text:?}");
    assert!(text.ends_with("\r\x1b[K\x1b[?7h\x1b[?25h"), "{text:?}");
}

#[test]
fn a_redraw_moves_up_over_the_lines_shown_and_clears_them() {
    assert_eq!(redraw(0, "a\nb\n"), "a\nb\n");
    assert_eq!(redraw(2, "c\n"), "\x1b[2A\x1b[Jc\n");
}
