//! `corral move --to-directory` and `--from-directory`: the object graph of a namespace
//! written to files, and created from them in another management plane, as upstream's
//! `ToDirectory` and `FromDirectory` (`cmd/clusterctl/client/cluster/mover.go`), which replaced
//! `clusterctl backup` and `restore`.
//!
//! `--to-directory` runs the move's preflight at the source, pauses its Clusters, writes one
//! file per object (`Kind_namespace_name.yaml`, upstream's names) once nothing changes, and
//! unpauses them: the source keeps managing them. The files keep each object as the source
//! served it, status and uids included, so the Clusters in them are paused.
//!
//! `--from-directory` reads every file first, and creates nothing unless each holds objects of
//! a kind the target serves. It then creates them as the move does (owners first, owner uids
//! rewritten, status restored, objects already there kept), the Clusters paused until
//! everything exists, and unpauses the Clusters.
//!
//! Where Corral differs from upstream: `--to-directory` wants an empty directory, so that a
//! restore brings back exactly one backup, and writes YAML with the Secrets' files readable by
//! their owner only (upstream also writes 0600); status is restored (upstream drops it, so
//! providers that keep state there start over); a Cluster is created paused whatever its file
//! says; objects in the files that no Cluster reaches are named and skipped; a Cluster that
//! already exists at the target is refused (upstream keeps whatever exists), but for one an
//! unfinished restore created, so that running the restore again finishes it.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    FROM_DIRECTORY_PREFIX, MoveOptions, MoveReport, ObjectGraph, ObjectType, PAUSED_BY_MOVE,
    Progress, TO_DIRECTORY_PREFIX, api, check_source, check_target_serves_kinds, count,
    create_at_target, discover_types, list, namespaced, pause_cluster, read_graph,
    read_settled_graph, report_of, unpause_cluster,
};
use crate::{Connection, Error};

/// Writes the Cluster API objects of `options.namespace` (every namespace when `None`) at
/// `source` to `directory`, one file per object, pausing the Clusters while it reads them.
pub async fn to_directory(
    source: &Connection,
    directory: &Path,
    options: &MoveOptions,
    out: &mut dyn Write,
) -> Result<MoveReport, Error> {
    check_writable_empty_directory(directory)?;
    let types = discover_types(source).await?;
    let graph = read_graph(source, &types, options.namespace.as_deref()).await?;
    check_source(&graph, options, true)?;
    if graph.clusters().next().is_none() {
        return Err(Error::Invalid(format!(
            "no Cluster to write in {} at {}; pass the namespace of your Clusters with --namespace",
            options.namespace.as_deref().unwrap_or("any namespace"),
            source.server
        )));
    }
    if options.dry_run {
        let _ = writeln!(
            out,
            "Dry run: would pause {}, write {} to {} and unpause them; nothing is changed.",
            count(graph.clusters().count(), "Cluster"),
            count(graph.nodes.len(), "file"),
            directory.display()
        );
        for node in &graph.nodes {
            let _ = writeln!(out, "  {}", file_name(&node.key));
        }
        return Ok(report_of(&graph));
    }

    let paused_by = format!("{TO_DIRECTORY_PREFIX}{}", directory.display());
    let mut paused = Vec::new();
    let written = async {
        for cluster in graph.clusters() {
            pause_cluster(source, &cluster.key, &paused_by).await?;
            paused.push(cluster.key.clone());
        }
        // Read again once nothing changes: the files hold the paused state.
        let graph = read_settled_graph(source, &types, options.namespace.as_deref()).await?;
        for node in &graph.nodes {
            write_object(directory, node).await?;
        }
        Ok::<ObjectGraph, Error>(graph)
    }
    .await;
    // Unpaused whatever happened: the source keeps managing its Clusters.
    let mut still_paused = Vec::new();
    for key in &paused {
        if unpause_cluster(source, key).await.is_err() {
            still_paused.push(key.clone());
        }
    }
    let graph = match written {
        Ok(graph) if still_paused.is_empty() => graph,
        Ok(_) => {
            return Err(Error::Invalid(format!(
                "wrote the files to {}, but could not unpause {} at {}; run the same command again to unpause them",
                directory.display(),
                list(&still_paused),
                source.server
            )));
        }
        Err(error) if still_paused.is_empty() => {
            return Err(Error::Invalid(format!(
                "{error}; the Clusters are unpaused again, the files in {} are incomplete: delete them and run the command again",
                directory.display()
            )));
        }
        Err(error) => {
            return Err(Error::Invalid(format!(
                "{error}; {} stay paused at {}: run the same command again once the cause is fixed, which finishes and unpauses them",
                list(&still_paused),
                source.server
            )));
        }
    };
    for key in &paused {
        let _ = writeln!(
            out,
            "Paused and unpaused Cluster {} at the source",
            namespaced(key)
        );
    }
    let _ = writeln!(
        out,
        "Wrote {} of {} from {} to {}",
        count(graph.nodes.len(), "object"),
        count(graph.clusters().count(), "Cluster"),
        source.server,
        directory.display()
    );
    Ok(report_of(&graph))
}

/// Creates the objects of the files in `directory` at `target` in dependency order and
/// unpauses their Clusters there.
pub async fn from_directory(
    target: &Connection,
    directory: &Path,
    options: &MoveOptions,
    out: &mut dyn Write,
) -> Result<MoveReport, Error> {
    let files = read_directory(directory)?;
    let types = discover_types(target).await?;
    let objects = typed_objects(target, files, &types)?;
    let all: Vec<(PathBuf, String)> = objects
        .iter()
        .map(|(file, _, object)| (file.clone(), identity(object)))
        .collect();
    let mut graph = ObjectGraph::build(
        types,
        objects
            .into_iter()
            .map(|(_, index, object)| (index, object))
            .collect(),
    );
    if graph.clusters().next().is_none() {
        return Err(Error::Invalid(format!(
            "{} holds no Cluster; pass the directory `corral move --to-directory` wrote; nothing was restored",
            directory.display()
        )));
    }
    check_target_serves_kinds(target, &graph).await?;
    check_clusters_not_at_target(target, &graph, directory).await?;
    report_skipped(&graph, &all, out);
    if options.dry_run {
        report_dry_run(target, &graph, out);
        return Ok(report_of(&graph));
    }
    restore(target, &mut graph, directory, options, out).await?;
    Ok(report_of(&graph))
}

/// Each file's object with the index of its type at the target and the apiVersion the target
/// serves; an error naming the file when the target does not serve its kind.
fn typed_objects(
    target: &Connection,
    files: Vec<(PathBuf, Value)>,
    types: &[ObjectType],
) -> Result<Vec<(PathBuf, usize, Value)>, Error> {
    let mut objects = Vec::new();
    for (file, object) in files {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let kind = object["kind"].as_str().unwrap_or_default();
        let Some(index) = types
            .iter()
            .position(|object_type| object_type.group() == group && object_type.kind() == kind)
        else {
            return Err(Error::Invalid(format!(
                "{} holds a {kind} ({api_version}), which the target {} does not serve; install its provider there with `corral init`, or remove the file; nothing was restored",
                file.display(),
                target.server
            )));
        };
        let mut object = object;
        object["apiVersion"] = types[index].resource.api_version.clone().into();
        objects.push((file, index, object));
    }
    Ok(objects)
}

/// Says which files' objects no Cluster of the directory reaches, and so are not restored.
fn report_skipped(graph: &ObjectGraph, all: &[(PathBuf, String)], out: &mut dyn Write) {
    let reached: BTreeSet<String> = graph.nodes.iter().map(node_identity).collect();
    let skipped: Vec<&(PathBuf, String)> = all
        .iter()
        .filter(|(_, identity)| !reached.contains(identity))
        .collect();
    for (file, identity) in &skipped {
        let _ = writeln!(
            out,
            "Skipping {identity} ({}): no Cluster in the directory owns or names it",
            file.display()
        );
    }
}

/// What a restore would create, group by group.
fn report_dry_run(target: &Connection, graph: &ObjectGraph, out: &mut dyn Write) {
    let _ = writeln!(
        out,
        "Dry run: would create {} of {} at {} and unpause the Clusters; nothing is changed.",
        count(graph.nodes.len(), "object"),
        count(graph.clusters().count(), "Cluster"),
        target.server
    );
    for (index, group) in graph.groups().into_iter().enumerate() {
        let _ = writeln!(out, "Group {}:", index + 1);
        for node in group {
            let _ = writeln!(out, "  {}", node.key);
        }
    }
}

/// Creates the graph's objects at the target with their Clusters paused, then unpauses the
/// Clusters; a failure says how far it got and how to finish.
async fn restore(
    target: &Connection,
    graph: &mut ObjectGraph,
    directory: &Path,
    options: &MoveOptions,
    out: &mut dyn Write,
) -> Result<(), Error> {
    // Whatever the files say, the target's controllers leave the Clusters alone until every
    // object exists there.
    let paused_by = format!("{FROM_DIRECTORY_PREFIX}{}", directory.display());
    for node in &mut graph.nodes {
        if node.key.kind == "Cluster" && node.key.group == corral_api::GROUP {
            node.object["spec"]["paused"] = true.into();
            node.object["metadata"]["annotations"][PAUSED_BY_MOVE] = paused_by.clone().into();
        }
    }
    let graph = &*graph;
    let mut progress = Progress {
        total: graph.nodes.len(),
        step: "creating the objects at the target",
        ..Progress::default()
    };
    let created = async {
        create_at_target(target, graph, &mut progress, out).await?;
        progress.step = "unpausing the Clusters at the target";
        for cluster in graph.clusters() {
            unpause_cluster(target, &cluster.key).await?;
        }
        Ok::<(), Error>(())
    }
    .await;
    if let Err(error) = created {
        let at_target = progress.created.len() + progress.kept.len();
        return Err(Error::Invalid(format!(
            "corral move --from-directory stopped while {}: {error}\nState now: {at_target} of {} objects at the target {}{}; its Clusters stay paused.\nTo finish once the cause is fixed (objects already there are kept):\n  {}",
            progress.step,
            progress.total,
            target.server,
            if at_target == 0 {
                String::new()
            } else {
                format!(
                    " ({})",
                    list(
                        &progress
                            .created
                            .iter()
                            .chain(&progress.kept)
                            .cloned()
                            .collect::<Vec<_>>()
                    )
                )
            },
            options.command
        )));
    }
    for cluster in graph.clusters() {
        let _ = writeln!(
            out,
            "Unpaused Cluster {} at the target",
            namespaced(&cluster.key)
        );
    }
    let _ = writeln!(
        out,
        "Restored {} of {} from {} to {}",
        count(graph.nodes.len(), "object"),
        count(graph.clusters().count(), "Cluster"),
        directory.display(),
        target.server
    );
    Ok(())
}

/// No Cluster of the directory exists at the target, but one that an unfinished restore
/// created: restoring over a live Cluster would bring back Machines deleted since the backup,
/// with the status of VMs that are gone.
async fn check_clusters_not_at_target(
    target: &Connection,
    graph: &ObjectGraph,
    directory: &Path,
) -> Result<(), Error> {
    for cluster in graph.clusters() {
        let name = namespaced(&cluster.key);
        let existing = api(target, graph.object_type(cluster), &cluster.key.namespace)
            .get_opt(&cluster.key.name)
            .await
            .map_err(|error| target.fail(format!("reading Cluster {name} at the target"), error))?;
        let Some(existing) = existing else {
            continue;
        };
        let restoring = existing
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(PAUSED_BY_MOVE))
            .is_some_and(|by| by.starts_with(FROM_DIRECTORY_PREFIX));
        if !restoring {
            return Err(Error::Invalid(format!(
                "a Cluster {name} already exists at the target {}; --from-directory restores into a management plane without it (delete it there, or restore elsewhere); nothing was restored from {}",
                target.server,
                directory.display()
            )));
        }
    }
    Ok(())
}

/// `Kind_namespace_name.yaml`, upstream's file name for an object.
fn file_name(key: &super::ObjectKey) -> String {
    format!("{}_{}_{}.yaml", key.kind, key.namespace, key.name)
}

/// `Kind namespace/name` of an object read from a file, as [`node_identity`] names a node.
fn identity(object: &Value) -> String {
    format!(
        "{} {}/{}",
        object["kind"].as_str().unwrap_or_default(),
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn node_identity(node: &super::Node) -> String {
    format!("{} {}/{}", node.key.kind, node.key.namespace, node.key.name)
}

/// `--to-directory` writes into an existing, empty directory it can write to; the check
/// comes before anything is paused.
fn check_writable_empty_directory(directory: &Path) -> Result<(), Error> {
    let shown = directory.display();
    match std::fs::metadata(directory) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => {
            return Err(Error::Invalid(format!(
                "{shown} is not a directory; pass an empty directory to --to-directory"
            )));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Invalid(format!(
                "the directory {shown} does not exist; create it (mkdir -p {shown}) or pass another to --to-directory"
            )));
        }
        Err(error) => {
            return Err(Error::Invalid(format!(
                "cannot use the directory {shown}: {error}; pass another to --to-directory"
            )));
        }
    }
    let mut entries = std::fs::read_dir(directory).map_err(|error| {
        Error::Invalid(format!(
            "cannot read the directory {shown}: {error}; pass another to --to-directory"
        ))
    })?;
    if entries.next().is_some() {
        return Err(Error::Invalid(format!(
            "the directory {shown} is not empty; --to-directory writes into an empty directory, so that --from-directory restores exactly this backup"
        )));
    }
    let probe = directory.join(format!(".corral-move-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|error| {
        Error::Invalid(format!(
            "cannot write to the directory {shown}: {error}; pass a directory you can write to"
        ))
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Writes one object to its file, readable by its owner only (Secrets are in it), without
/// the server's field bookkeeping.
async fn write_object(directory: &Path, node: &super::Node) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut object = node.object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        metadata.remove("managedFields");
    }
    let text = serde_yaml::to_string(&object).expect("an object serializes");
    let path = directory.join(file_name(&node.key));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut file| file.write_all(text.as_bytes()));
    written.map_err(|error| Error::Invalid(format!("cannot write {}: {error}", path.display())))
}

/// Every object in the files of `directory`, each with its file; fails on the first file
/// that is not YAML of Kubernetes objects, before anything is created.
fn read_directory(directory: &Path) -> Result<Vec<(PathBuf, Value)>, Error> {
    let shown = directory.display();
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Invalid(format!(
                "the directory {shown} does not exist; pass the directory `corral move --to-directory` wrote"
            )));
        }
        Err(error) => {
            return Err(Error::Invalid(format!(
                "cannot read the directory {shown}: {error}; pass the directory `corral move --to-directory` wrote"
            )));
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()
        .map_err(|error| Error::Invalid(format!("cannot read the directory {shown}: {error}")))?;
    paths.sort();
    let mut objects = Vec::new();
    for path in paths {
        let file = path.display();
        if path.is_dir() {
            return Err(Error::Invalid(format!(
                "{file} is a directory; --from-directory reads the files `corral move --to-directory` wrote, move it away; nothing was restored"
            )));
        }
        let text = std::fs::read_to_string(&path).map_err(|error| {
            Error::Invalid(format!(
                "cannot read {file}: {error}; fix or remove it; nothing was restored"
            ))
        })?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = <Value as serde::Deserialize>::deserialize(document).map_err(|error| {
                Error::Invalid(format!(
                    "{file} is not YAML ({error}); fix or remove it; nothing was restored"
                ))
            })?;
            if value.is_null() {
                continue;
            }
            let missing = [
                ("apiVersion", &value["apiVersion"]),
                ("kind", &value["kind"]),
                ("metadata.name", &value["metadata"]["name"]),
                ("metadata.namespace", &value["metadata"]["namespace"]),
            ]
            .into_iter()
            .find(|(_, field)| field.as_str().is_none_or(str::is_empty));
            if let Some((field, _)) = missing {
                return Err(Error::Invalid(format!(
                    "{file} holds an object without {field}, not one `corral move --to-directory` wrote; fix or remove it; nothing was restored"
                )));
            }
            objects.push((path.clone(), value));
        }
    }
    if objects.is_empty() {
        return Err(Error::Invalid(format!(
            "the directory {shown} holds no objects; pass the directory `corral move --to-directory` wrote"
        )));
    }
    Ok(objects)
}

#[cfg(test)]
mod tests;
