//! The object tree of `describe cluster` and its rendering as upstream's table
//! (`cmd/clusterctl/cmd/describe_cluster.go`, `client/tree/`): one row per object, indented
//! with `├─`, `│ ` and `└─`; columns NAME, REPLICAS, AVAILABLE, READY, UP TO DATE, STATUS,
//! REASON, SINCE, MESSAGE; sibling Machines in the same state grouped into one
//! "N Machines..." row. Pure: the tree is built from objects read elsewhere, and "now" is an
//! argument.

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

/// A v1beta2 condition, as read from `status.conditions`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Timestamp>,
}

impl Condition {
    /// The conditions of an object: `status.conditions` when they are v1beta2 conditions
    /// (objects of the v1beta2 contract), else `status.v1beta2.conditions` (providers of the
    /// v1beta1 contract).
    pub fn of(object: &Value) -> Vec<Condition> {
        let parse = |list: &Value| -> Vec<Condition> {
            list.as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|item| {
                            Some(Condition {
                                type_: item["type"].as_str()?.to_string(),
                                status: item["status"].as_str().unwrap_or("Unknown").to_string(),
                                reason: item["reason"].as_str().unwrap_or("").to_string(),
                                message: item["message"].as_str().unwrap_or("").to_string(),
                                last_transition_time: item["lastTransitionTime"]
                                    .as_str()
                                    .and_then(|t| t.parse().ok()),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let v1beta2 = &object["status"]["v1beta2"]["conditions"];
        if v1beta2.is_array() {
            return parse(v1beta2);
        }
        parse(&object["status"]["conditions"])
    }
}

/// Which condition a row shows in STATUS, REASON, SINCE and MESSAGE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Shown {
    Available,
    Ready,
    Nothing,
}

/// One row of the tree and the rows below it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// The object's kind, or the virtual node's name (`Workers`).
    pub kind: String,
    pub name: String,
    /// `ClusterInfrastructure`, `ControlPlane`, `MachineInfrastructure`, `BootstrapConfig`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta_name: Option<String>,
    /// A grouping node that is not an object (`Workers`, `Other`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_virtual: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deleting: bool,
    pub conditions: Vec<Condition>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up_to_date: Option<String>,
    #[serde(skip)]
    pub shown: Shown,
    /// Every condition gets a row of its own (`--show-conditions`).
    #[serde(skip)]
    pub show_conditions: bool,
    /// The names of the Machines a group row stands for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub group_items: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
}

impl Node {
    /// A node for an object with nothing set but its kind and name.
    pub fn object(kind: &str, name: &str) -> Node {
        Node {
            kind: kind.into(),
            name: name.into(),
            meta_name: None,
            is_virtual: false,
            deleting: false,
            conditions: Vec::new(),
            replicas: None,
            available: None,
            ready: None,
            up_to_date: None,
            shown: Shown::Ready,
            show_conditions: false,
            group_items: Vec::new(),
            children: Vec::new(),
        }
    }

    /// A virtual node (`Workers`).
    pub fn virtual_node(name: &str) -> Node {
        Node {
            is_virtual: true,
            shown: Shown::Nothing,
            ..Node::object(name, name)
        }
    }

    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    fn status_of(&self, type_: &str) -> &str {
        self.condition(type_)
            .map(|c| c.status.as_str())
            .unwrap_or("")
    }

    /// Machines with the same Available, Ready and UpToDate status and the same Ready reason
    /// look alike in the tree; so do their groups.
    fn group_key(&self) -> Option<(String, String, String, String)> {
        if self.kind != "Machine"
            || self.deleting
            || self.show_conditions
            || !self.children.is_empty()
        {
            return None;
        }
        let ready_reason = self
            .condition("Ready")
            .map(|c| c.reason.clone())
            .unwrap_or_default();
        Some((
            self.status_of("Available").to_string(),
            self.status_of("Ready").to_string(),
            ready_reason,
            self.status_of("UpToDate").to_string(),
        ))
    }
}

/// Groups, in every node's children, the Machines that look alike (at least two) into one
/// "N Machines..." node, as upstream's `--grouping` (on by default).
pub fn group_machines(node: &mut Node) {
    for child in &mut node.children {
        group_machines(child);
    }
    let mut keys: Vec<(String, String, String, String)> = Vec::new();
    for child in &node.children {
        if let Some(key) = child.group_key()
            && !keys.contains(&key)
            && node
                .children
                .iter()
                .filter(|other| other.group_key().as_ref() == Some(&key))
                .count()
                >= 2
        {
            keys.push(key);
        }
    }
    for key in keys {
        let (members, rest): (Vec<Node>, Vec<Node>) = std::mem::take(&mut node.children)
            .into_iter()
            .partition(|child| child.group_key().as_ref() == Some(&key));
        node.children = rest;
        node.children.push(group_node(members));
    }
}

/// The node standing for `members`: their counts, and the Ready condition they share, as of
/// the latest transition among them.
fn group_node(mut members: Vec<Node>) -> Node {
    members.sort_by(|a, b| a.name.cmp(&b.name));
    let count = |type_: &str| {
        members
            .iter()
            .filter(|m| m.status_of(type_) == "True")
            .count()
            .to_string()
    };
    let mut ready = members[0].condition("Ready").cloned();
    if let Some(ready) = &mut ready {
        ready.last_transition_time = members
            .iter()
            .filter_map(|m| m.condition("Ready").and_then(|c| c.last_transition_time))
            .max();
        ready.message = String::new();
    }
    Node {
        kind: "MachineGroup".into(),
        name: format!("{} Machines", members.len()),
        conditions: ready.into_iter().collect(),
        available: Some(count("Available")),
        ready: Some(count("Ready")),
        up_to_date: Some(count("UpToDate")),
        shown: Shown::Ready,
        group_items: members.iter().map(|m| m.name.clone()).collect(),
        ..Node::object("MachineGroup", "")
    }
}

/// Terminal colours, as upstream picks them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Colour {
    None,
    Gray,
    Red,
    Green,
    Yellow,
    Cyan,
    Bold,
}

impl Colour {
    fn code(self) -> &'static str {
        match self {
            Colour::None => "",
            Colour::Gray => "\x1b[90m",
            Colour::Red => "\x1b[31m",
            Colour::Green => "\x1b[32m",
            Colour::Yellow => "\x1b[33m",
            Colour::Cyan => "\x1b[36m",
            Colour::Bold => "\x1b[1m",
        }
    }
}

/// A cell: plain text, the colours of its parts (for the terminal).
#[derive(Default, Clone)]
struct Cell {
    parts: Vec<(Colour, String)>,
}

impl Cell {
    fn plain(text: impl Into<String>) -> Cell {
        Cell {
            parts: vec![(Colour::None, text.into())],
        }
    }

    fn coloured(colour: Colour, text: impl Into<String>) -> Cell {
        Cell {
            parts: vec![(colour, text.into())],
        }
    }

    fn push(&mut self, colour: Colour, text: impl Into<String>) {
        self.parts.push((colour, text.into()));
    }

    fn width(&self) -> usize {
        self.parts.iter().map(|(_, t)| t.chars().count()).sum()
    }

    fn write(&self, out: &mut String, colour: bool) {
        for (c, text) in &self.parts {
            if colour && *c != Colour::None && !text.is_empty() {
                out.push_str(c.code());
                out.push_str(text);
                out.push_str("\x1b[0m");
            } else {
                out.push_str(text);
            }
        }
    }
}

/// How conditions render: upstream's `conditionInfo`. Conditions whose True means trouble
/// (Paused, Deleting, RollingOut, ScalingUp, ScalingDown, Remediating) are red when True.
fn condition_colour(condition: &Condition) -> Colour {
    let negative = matches!(
        condition.type_.as_str(),
        "Paused" | "Deleting" | "RollingOut" | "ScalingUp" | "ScalingDown" | "Remediating"
    );
    match (condition.status.as_str(), negative) {
        ("True", false) | ("False", true) => Colour::Green,
        ("True", true) | ("False", false) => Colour::Red,
        ("Unknown", _) => Colour::Yellow,
        _ => Colour::Gray,
    }
}

/// Kubernetes' `duration.HumanDuration`, as `kubectl get` prints ages.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Splits a message into lines of under `width` characters at spaces, keeping its own line
/// breaks (upstream's `formatParagraph`, width 100).
fn paragraph(message: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for line in message.split('\n') {
        let mut current = String::new();
        for word in line.split_whitespace() {
            if !current.is_empty() && current.len() + 1 + word.len() >= width {
                lines.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
        }
        lines.push(current);
    }
    lines
}

/// The table of a tree, with the time `now` for SINCE; `colour` adds terminal colours.
pub fn render(root: &Node, now: Timestamp, colour: bool) -> String {
    let mut rows: Vec<[Cell; 9]> = vec![
        [
            "NAME",
            "REPLICAS",
            "AVAILABLE",
            "READY",
            "UP TO DATE",
            "STATUS",
            "REASON",
            "SINCE",
            "MESSAGE",
        ]
        .map(Cell::plain),
    ];
    add_rows(root, "", true, now, &mut rows);
    let mut widths = [0usize; 9];
    for row in &rows {
        for (index, cell) in row.iter().enumerate() {
            widths[index] = widths[index].max(cell.width());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        let last = row.iter().rposition(|cell| cell.width() > 0).unwrap_or(0);
        for (index, cell) in row.iter().enumerate().take(last + 1) {
            cell.write(&mut line, colour);
            if index < last {
                line.push_str(&" ".repeat(widths[index] - cell.width() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `prefix` for the next level: `├─` becomes `│ ` and `└─` becomes blank.
fn carry(prefix: &str) -> String {
    prefix.replace("├─", "│ ").replace("└─", "  ")
}

/// The rows of `node` and, below it, of its children: its own row, the continuation lines of
/// its message, its conditions when shown, then each child with the tree prefix extended.
fn add_rows(node: &Node, prefix: &str, is_root: bool, now: Timestamp, rows: &mut Vec<[Cell; 9]>) {
    let name = name_cell(node, prefix);
    let shown = match node.shown {
        Shown::Available => node.condition("Available"),
        Shown::Ready => node.condition("Ready"),
        Shown::Nothing => None,
    };
    let mut status = Cell::default();
    let mut reason = Cell::default();
    let mut since = Cell::default();
    let mut message_lines = vec![String::new()];
    if let Some(condition) = shown.filter(|_| !node.show_conditions) {
        status = Cell::coloured(
            condition_colour(condition),
            format!("{}: {}", condition.type_, condition.status),
        );
        reason = Cell::plain(condition.reason.clone());
        since = Cell::plain(age(condition, now));
        message_lines = paragraph(&condition.message, 100);
    }
    let mut message = Cell::plain(message_lines[0].clone());
    if !node.group_items.is_empty() {
        let items = &node.group_items;
        let listed = if items.len() <= 2 {
            format!("See {}", items.join(", "))
        } else {
            format!("See {}, ...", items[..2].join(", "))
        };
        message = Cell::coloured(Colour::Gray, listed);
        message_lines.truncate(1);
    }
    let text = |value: &Option<String>| Cell::plain(value.clone().unwrap_or_default());
    rows.push([
        name,
        text(&node.replicas),
        text(&node.available),
        text(&node.ready),
        text(&node.up_to_date),
        status,
        reason,
        since,
        message,
    ]);
    let continuation = {
        let carried = carry(prefix);
        if node.children.is_empty() {
            carried
        } else {
            format!("{carried}│ ")
        }
    };
    for line in message_lines.iter().skip(1) {
        let mut row: [Cell; 9] = Default::default();
        row[0] = Cell::coloured(Colour::Gray, continuation.clone());
        row[8] = Cell::plain(line.clone());
        rows.push(row);
    }
    if node.show_conditions {
        add_condition_rows(node, prefix, now, rows);
    }
    let _ = is_root;
    let count = node.children.len();
    for (index, child) in node.children.iter().enumerate() {
        let branch = if index + 1 < count {
            "├─"
        } else {
            "└─"
        };
        add_rows(
            child,
            &format!("{}{branch}", carry(prefix)),
            false,
            now,
            rows,
        );
    }
}

/// The name cell of a node's row: the tree prefix, a deletion mark, then the group, the
/// virtual node's name, or `Kind/name` (after the node's meta name).
fn name_cell(node: &Node, prefix: &str) -> Cell {
    let mut name = Cell::coloured(Colour::Gray, prefix);
    if node.deleting {
        name.push(Colour::Red, "!! DELETED !! ");
    }
    if !node.group_items.is_empty() {
        name.push(Colour::Bold, format!("{}...", node.name));
    } else if node.is_virtual {
        name.push(
            Colour::None,
            node.meta_name.clone().unwrap_or(node.name.clone()),
        );
    } else {
        match &node.meta_name {
            Some(meta) => {
                name.push(Colour::None, format!("{meta} - "));
                name.push(Colour::Gray, format!("{}/{}", node.kind, node.name));
            }
            None => {
                name.push(Colour::None, format!("{}/", node.kind));
                name.push(Colour::Bold, node.name.clone());
            }
        }
    }
    name
}

/// A row per condition of a node shown with all its conditions, under its own row.
fn add_condition_rows(node: &Node, prefix: &str, now: Timestamp, rows: &mut Vec<[Cell; 9]>) {
    let pipe = if node.children.is_empty() {
        "  "
    } else {
        "│ "
    };
    let base = format!("{}{pipe}{}", carry(prefix), " ".repeat(10));
    let count = node.conditions.len();
    for (index, condition) in node.conditions.iter().enumerate() {
        let branch = if index + 1 < count {
            "├─"
        } else {
            "└─"
        };
        let mut name = Cell::coloured(Colour::Gray, format!("{base}{branch}"));
        name.push(Colour::Cyan, condition.type_.clone());
        let lines = paragraph(&condition.message, 100);
        let mut row: [Cell; 9] = Default::default();
        row[0] = name;
        row[5] = Cell::coloured(condition_colour(condition), condition.status.clone());
        row[6] = Cell::plain(condition.reason.clone());
        row[7] = Cell::plain(age(condition, now));
        row[8] = Cell::plain(lines[0].clone());
        rows.push(row);
        for line in lines.iter().skip(1) {
            let mut row: [Cell; 9] = Default::default();
            let tail = if index + 1 < count { "│ " } else { "  " };
            row[0] = Cell::coloured(Colour::Gray, format!("{base}{tail}"));
            row[8] = Cell::plain(line.clone());
            rows.push(row);
        }
    }
}

fn age(condition: &Condition, now: Timestamp) -> String {
    condition
        .last_transition_time
        .map(|t| human_duration(now.as_second() - t.as_second()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
