//! The live view of a cluster: `corral describe cluster NAME --watch` and `corral up --demo`.
//! On a terminal the tree is redrawn in place (cursor up over the last drawing, clear, draw),
//! lines cut at the edge and the cursor hidden while it is live; anywhere else (a pipe, a file,
//! CI) each change of the cluster's state is one line, such as
//! `demo: 4/6 machines ready, control plane initialized`, and nothing else is written.

use std::io::Write;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::tree::{self, Node};
use super::{DescribeOptions, describe_cluster};
use crate::{Connection, Error};

/// How often the cluster is read again.
const INTERVAL: Duration = Duration::from_millis(500);

/// Where the view is drawn, and how.
pub struct View<W: Write> {
    out: W,
    /// Set on a terminal: the tree is redrawn in place.
    terminal: Option<Terminal>,
    /// The terminal lines the last drawing took.
    shown_lines: usize,
    /// Elsewhere: the last state line written.
    last_line: String,
}

struct Terminal {
    colour: bool,
}

/// Line wrapping off (DECAWM), so that the rows wider than the terminal are cut instead of
/// taking more screen lines than the redraw moves up over; the cursor hidden, so that it does
/// not flicker across the tree.
const START_TERMINAL: &str = "\x1b[?7l\x1b[?25l";
/// Wrapping and the cursor back; a `^C` the terminal echoed on the line under the tree is
/// cleared, so that whatever comes next starts on a clean line.
const END_TERMINAL: &str = "\r\x1b[K\x1b[?7h\x1b[?25h";

impl<W: Write> View<W> {
    /// A view redrawn in place on the terminal `out`, coloured when `colour`. The terminal is
    /// restored when the view is dropped, however the view ends.
    pub fn terminal(mut out: W, colour: bool) -> View<W> {
        let _ = out.write_all(START_TERMINAL.as_bytes());
        let _ = out.flush();
        View {
            out,
            terminal: Some(Terminal { colour }),
            shown_lines: 0,
            last_line: String::new(),
        }
    }

    /// A view that writes one line per change of state to `out`.
    pub fn lines(out: W) -> View<W> {
        View {
            out,
            terminal: None,
            shown_lines: 0,
            last_line: String::new(),
        }
    }

    pub fn is_terminal(&self) -> bool {
        self.terminal.is_some()
    }

    /// Shows `root` as of `now`: on a terminal, the tree (and `footer` lines under it) in
    /// place of the last drawing; elsewhere its state line, when it differs from the last one.
    pub fn show(
        &mut self,
        root: &Node,
        now: Timestamp,
        footer: Option<&str>,
    ) -> std::io::Result<()> {
        match &self.terminal {
            Some(terminal) => {
                let mut drawing = tree::render(root, now, terminal.colour);
                if let Some(footer) = footer {
                    drawing.push_str(footer);
                    drawing.push('\n');
                }
                let text = redraw(self.shown_lines, &drawing);
                self.shown_lines = drawing.lines().count();
                self.out.write_all(text.as_bytes())?;
            }
            None => {
                let line = state_line(root);
                if line != self.last_line {
                    writeln!(self.out, "{line}")?;
                    self.last_line = line;
                }
            }
        }
        self.out.flush()
    }

    /// Writes `text` under the view; the next drawing starts below it.
    pub fn say(&mut self, text: &str) -> std::io::Result<()> {
        writeln!(self.out, "{text}")?;
        self.shown_lines = 0;
        self.out.flush()
    }
}

impl<W: Write> Drop for View<W> {
    fn drop(&mut self) {
        if self.terminal.is_some() {
            let _ = self.out.write_all(END_TERMINAL.as_bytes());
            let _ = self.out.flush();
        }
    }
}

/// Reads the cluster of `options` again and again and shows it in `view`, with `footer()`'s
/// lines under the tree on a terminal. Returns when the cluster is available with every
/// machine ready if `until_available`, or when the view's output is closed (a pipe whose
/// reader went away); else runs until dropped.
pub async fn follow<W: Write>(
    connection: &Connection,
    options: &DescribeOptions,
    view: &mut View<W>,
    footer: &dyn Fn() -> Option<String>,
    until_available: bool,
) -> Result<(), Error> {
    loop {
        let root = describe_cluster(connection, options).await?;
        if view
            .show(&root, Timestamp::now(), footer().as_deref())
            .is_err()
        {
            return Ok(());
        }
        if until_available && is_available(&root) {
            return Ok(());
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

/// Whether the Cluster is Available and every one of its machines ready.
pub fn is_available(root: &Node) -> bool {
    let available = root
        .condition("Available")
        .is_some_and(|c| c.status == "True");
    let all_ready = root
        .replicas
        .as_deref()
        .and_then(|r| r.split_once('/'))
        .is_some_and(|(_, desired)| root.ready.as_deref() == Some(desired));
    available && all_ready
}

/// The cluster's state in one line: its name, how many of its machines are ready, and how far
/// it got (`demo: 4/6 machines ready, control plane initialized`).
pub fn state_line(root: &Node) -> String {
    let is_true = |type_: &str| root.condition(type_).is_some_and(|c| c.status == "True");
    let stage = if root.deleting {
        "deleting"
    } else if is_true("Available") {
        "available"
    } else if is_true("ControlPlaneAvailable") {
        "control plane available"
    } else if is_true("ControlPlaneInitialized") {
        "control plane initialized"
    } else if is_true("InfrastructureReady") {
        "infrastructure ready"
    } else {
        "provisioning"
    };
    let machines = match root.replicas.as_deref().and_then(|r| r.split_once('/')) {
        Some((_, desired)) => format!(
            "{}/{desired} machines ready",
            root.ready.as_deref().unwrap_or("0")
        ),
        None => "no machines yet".to_string(),
    };
    format!("{}: {machines}, {stage}", root.name)
}

/// What replaces a live view of `shown_lines` lines (none the first time) with `rendered`:
/// cursor up over the old view, clear to the end of the screen, the new view.
fn redraw(shown_lines: usize, rendered: &str) -> String {
    if shown_lines == 0 {
        rendered.to_string()
    } else {
        format!("\x1b[{shown_lines}A\x1b[J{rendered}")
    }
}

#[cfg(test)]
mod tests;
