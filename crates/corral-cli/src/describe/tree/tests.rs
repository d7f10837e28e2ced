use k8s_openapi::jiff::Timestamp;

use super::*;

fn now() -> Timestamp {
    "2026-01-01T12:00:00Z".parse().unwrap()
}

fn condition(type_: &str, status: &str, reason: &str, seconds_ago: i64) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: Some(
            Timestamp::from_second(now().as_second() - seconds_ago).unwrap(),
        ),
    }
}

fn machine(name: &str, ready: bool, seconds_ago: i64) -> Node {
    let status = if ready { "True" } else { "False" };
    let reason = if ready { "Ready" } else { "NotReady" };
    Node {
        conditions: vec![
            condition("Available", status, reason, seconds_ago),
            condition("Ready", status, reason, seconds_ago),
            condition("UpToDate", "True", "UpToDate", 300),
        ],
        replicas: Some("1".into()),
        available: Some(if ready { "1" } else { "0" }.into()),
        ready: Some(if ready { "1" } else { "0" }.into()),
        up_to_date: Some("1".into()),
        ..Node::object("Machine", name)
    }
}

fn cluster() -> Node {
    let mut root = Node::object("Cluster", "dev");
    root.shown = Shown::Available;
    root.conditions = vec![condition("Available", "False", "NotAvailable", 90)];
    root.conditions[0].message = "* WorkersAvailable: 1 of 3 Machines not ready".into();
    root.replicas = Some("4/4".into());
    let mut infrastructure = Node::object("DevCluster", "dev");
    infrastructure.meta_name = Some("ClusterInfrastructure".into());
    infrastructure.conditions = vec![condition("Ready", "True", "Ready", 600)];
    let mut control_plane = Node::virtual_node("ControlPlane");
    control_plane
        .children
        .push(machine("dev-control-plane-0", true, 200));
    let mut deployment = Node::object("MachineDeployment", "dev-md-0");
    deployment.shown = Shown::Available;
    deployment.replicas = Some("3/3".into());
    deployment.conditions = vec![condition("Available", "True", "Available", 100)];
    deployment.children = vec![
        machine("dev-md-0-abcde-11111", true, 130),
        machine("dev-md-0-abcde-22222", false, 5),
        machine("dev-md-0-abcde-33333", true, 140),
    ];
    let mut workers = Node::virtual_node("Workers");
    workers.children.push(deployment);
    root.children = vec![infrastructure, control_plane, workers];
    root
}

#[test]
fn the_tree_renders_as_upstreams_table_with_machines_grouped() {
    let mut root = cluster();
    group_machines(&mut root);
    let expected = "\
NAME                                      REPLICAS  AVAILABLE  READY  UP TO DATE  STATUS            REASON        SINCE  MESSAGE
Cluster/dev                               4/4                                     Available: False  NotAvailable  90s    * WorkersAvailable: 1 of 3 Machines not ready
├─ClusterInfrastructure - DevCluster/dev                                          Ready: True       Ready         10m
├─ControlPlane
│ └─Machine/dev-control-plane-0           1         1          1      1           Ready: True       Ready         3m20s
└─Workers
  └─MachineDeployment/dev-md-0            3/3                                     Available: True   Available     100s
    ├─Machine/dev-md-0-abcde-22222        1         0          0      1           Ready: False      NotReady      5s
    └─2 Machines...                                 2          2      2           Ready: True       Ready         2m10s  See dev-md-0-abcde-11111, dev-md-0-abcde-33333
";
    assert_eq!(render(&root, now(), false), expected);
}

#[test]
fn show_conditions_lists_every_condition_under_the_object() {
    let mut root = cluster();
    root.show_conditions = true;
    root.children.clear();
    let rendered = render(&root, now(), false);
    let lines: Vec<&str> = rendered.lines().collect();
    assert_eq!(lines.len(), 3, "{rendered}");
    assert_eq!(lines[1].trim_end(), "Cluster/dev              4/4");
    assert!(
        lines[2].starts_with("            └─Available"),
        "{rendered}"
    );
    let words: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        words[..5],
        ["└─Available", "False", "NotAvailable", "90s", "*"],
        "{rendered}"
    );
}

#[test]
fn colour_marks_status_by_polarity_and_never_changes_the_layout() {
    let mut root = cluster();
    group_machines(&mut root);
    let coloured = render(&root, now(), true);
    assert!(coloured.contains("\x1b[31mAvailable: False\x1b[0m"));
    assert!(coloured.contains("\x1b[32mReady: True\x1b[0m"));
    let stripped = coloured
        .split("\x1b[")
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part
            } else {
                &part[part.find('m').unwrap() + 1..]
            }
        })
        .collect::<String>();
    assert_eq!(stripped, render(&root, now(), false));
}

#[test]
fn deleting_objects_are_marked_and_not_grouped() {
    let mut parent = Node::virtual_node("Workers");
    let mut deleting = machine("b", true, 10);
    deleting.deleting = true;
    parent.children = vec![machine("a", true, 10), deleting];
    group_machines(&mut parent);
    let rendered = render(&parent, now(), false);
    assert!(rendered.contains("├─Machine/a"), "{rendered}");
    assert!(rendered.contains("└─!! DELETED !! Machine/b"), "{rendered}");
}

#[test]
fn human_durations_match_kubernetes() {
    for (seconds, expected) in [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 120, "3h2m"),
        (47 * 3600, "47h"),
        (50 * 3600, "2d2h"),
        (10 * 86400, "10d"),
        (800 * 86400, "2y70d"),
    ] {
        assert_eq!(human_duration(seconds), expected, "{seconds}");
    }
}

#[test]
fn long_messages_wrap_at_spaces_under_a_hundred_characters() {
    let message = "word ".repeat(40);
    let lines = paragraph(message.trim(), 100);
    assert!(lines.len() > 1);
    assert!(lines.iter().all(|l| l.len() < 100), "{lines:?}");
}
