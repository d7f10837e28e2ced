//! The dependency edges between workspace crates are exactly those of ARCHITECTURE.md's table
//! ("Dependencies between crates"): a new edge is added to the table, on purpose, or not at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Crate → (normal dependencies, dev-dependencies), workspace crates only.
type Edges = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/corral is two levels below the workspace root")
}

/// The edges `cargo metadata` reports.
fn metadata_edges() -> Edges {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .map(|package| package["name"].as_str().expect("a name").to_owned())
        .collect();
    let mut edges = Edges::new();
    for package in packages {
        let name = package["name"].as_str().expect("a name").to_owned();
        let (normal, dev) = edges.entry(name.clone()).or_default();
        for dependency in package["dependencies"].as_array().expect("dependencies") {
            let target = dependency["name"].as_str().expect("a dependency name");
            if !names.contains(target) || target == name {
                continue;
            }
            match dependency["kind"].as_str() {
                None => normal.insert(target.to_owned()),
                Some("dev") => dev.insert(target.to_owned()),
                Some(kind) => {
                    panic!("{name} has a {kind} dependency on {target}: add it to the table")
                }
            };
        }
    }
    edges
}

/// The crate names in a table cell: `` `a`, `b` ``.
fn crates_in(cell: &str) -> BTreeSet<String> {
    cell.split(',')
        .map(|name| name.trim().trim_matches('`').to_owned())
        .filter(|name| !name.is_empty())
        .collect()
}

/// The edges ARCHITECTURE.md's table lists.
fn documented_edges() -> Edges {
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md is readable");
    let section = text
        .split("## Dependencies between crates")
        .nth(1)
        .expect("ARCHITECTURE.md has a \"Dependencies between crates\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut edges = Edges::new();
    for line in section.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        assert_eq!(cells.len(), 3, "a table row has three cells: {line}");
        let name = cells[0].trim().trim_matches('`').to_owned();
        let previous = edges.insert(name.clone(), (crates_in(cells[1]), crates_in(cells[2])));
        assert!(previous.is_none(), "{name} is listed twice");
    }
    edges
}

#[test]
fn crate_dependencies_are_the_documented_ones() {
    let actual = metadata_edges();
    let documented = documented_edges();
    let mut problems = Vec::new();
    for (name, (normal, dev)) in &actual {
        let Some((documented_normal, documented_dev)) = documented.get(name) else {
            problems.push(format!("{name} is not in the table"));
            continue;
        };
        for (kind, actual, documented) in [
            ("depends on", normal, documented_normal),
            ("dev-depends on", dev, documented_dev),
        ] {
            for target in actual.difference(documented) {
                problems.push(format!(
                    "{name} {kind} {target}, which the table does not list"
                ));
            }
            for target in documented.difference(actual) {
                problems.push(format!(
                    "the table says {name} {kind} {target}, which it does not"
                ));
            }
        }
    }
    for name in documented.keys().filter(|name| !actual.contains_key(*name)) {
        problems.push(format!(
            "the table lists {name}, which is not a workspace crate"
        ));
    }
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's \"Dependencies between crates\" and Cargo.toml disagree:\n{}",
        problems.join("\n")
    );
}
