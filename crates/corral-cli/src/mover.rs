//! `corral move`: moves the Cluster API objects of a namespace (or of all namespaces) from one
//! management plane to another, as upstream's `clusterctl move`
//! (`cmd/clusterctl/client/cluster/mover.go`), while the infrastructure stays where it is.
//!
//! The steps, each idempotent so that running the move again after a failure continues it:
//!
//! 1. **Preflight** (`checkTargetProviders`, `checkProvisioningCompleted`,
//!    `checkClustersNotPaused`): the target serves every kind to move and has every provider of
//!    the source's inventory at the same or a newer version; every Cluster is provisioned
//!    (infrastructure provisioned, control plane initialized where it has one) and every
//!    Machine has a Node; no Cluster is paused; no Cluster of the same name is at the target.
//! 2. **Pause the source**: `spec.paused: true` on every Cluster, so that the source's
//!    controllers stop before any object exists at the target. Corral also annotates each
//!    Cluster with [`PAUSED_BY_MOVE`], so that a later run knows this move paused it (and the
//!    annotation travels with the Cluster, which the target keeps paused until step 6).
//! 3. Wait until no object carries `clusterctl.cluster.x-k8s.io/block-move`.
//! 4. **Create at the target** in the order of [`graph`]: namespaces first, owners before what
//!    they own, owner reference uids rewritten to the new owners'. Unlike upstream, status is
//!    restored through the status subresource, so that the target's controllers start from
//!    where the source's stopped (a Machine stays Running, a DevMachine keeps its providerID).
//!    An object already at the target (from an earlier attempt) is kept. The ProviderPlugins
//!    (cluster-scoped) that moved Plugin* objects name are created first, from the source's
//!    spec, unless the target has them; the source keeps its own.
//! 5. **Delete at the source**, what is owned before its owners: each object gets
//!    `clusterctl.cluster.x-k8s.io/delete-for-move` and loses its finalizers before it is
//!    deleted (orphaning anything not moved), so that no source controller deprovisions
//!    anything. [`MOVE_PHASE`] on the source Clusters records that deletion began, after which
//!    only finishing the move makes sense.
//! 6. **Unpause at the target**: `spec.paused: false` and the annotation removed.
//!
//! A failure after step 2 never leaves a Cluster silently paused (upstream's issue #7407): the
//! error says what is where and prints the two ways out, `--resume` (run the same move again)
//! and `--rollback` (delete what was created at the target and unpause the source; refused once
//! the source is partly deleted).
//!
//! [`to_directory`] and [`from_directory`] split the same steps around files: a backup of the
//! graph, and its restore into another management plane.

mod directory;
mod graph;

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    PropagationPolicy,
};
use serde_json::{Value, json};

use crate::{Connection, Error};
pub use directory::{from_directory, to_directory};
pub use graph::{Node, ObjectGraph, ObjectKey, ObjectType};

/// On a Cluster paused by `corral move`, at the source while it moves and at the target until
/// the move finishes; the value is the target's server URL.
pub const PAUSED_BY_MOVE: &str = "corral.dev/paused-by-move";

/// On a source Cluster once `corral move` began deleting the source's objects.
pub const MOVE_PHASE: &str = "corral.dev/move-phase";

/// The start of the [`PAUSED_BY_MOVE`] value of a Cluster paused by `--to-directory` (at the
/// source) or `--from-directory` (at the target), followed by the directory.
const TO_DIRECTORY_PREFIX: &str = "to-directory:";
const FROM_DIRECTORY_PREFIX: &str = "from-directory:";

/// The [`MOVE_PHASE`] value once deletion began.
const DELETING: &str = "deleting-source";

/// How long step 3 waits for `block-move` annotations to go (upstream: about 2 minutes).
const BLOCK_MOVE_PATIENCE: Duration = Duration::from_secs(120);

/// How long the move waits for the paused source to stop changing, and how often it looks.
const SETTLE_PATIENCE: Duration = Duration::from_secs(10);
const SETTLE_INTERVAL: Duration = Duration::from_millis(500);

/// The garbage collector's finalizer of an orphaning delete.
const ORPHAN: &str = "orphan";

/// How long a deleted object may take to go (the garbage collector orphaning what it owns).
const DELETE_PATIENCE: Duration = Duration::from_secs(60);

/// What a run of `corral move` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A new move; refuses paused Clusters.
    Move,
    /// Continues a move that stopped: Clusters paused by it are expected.
    Resume,
    /// Undoes a move that stopped before deleting at the source.
    Rollback,
}

/// The options of a move.
#[derive(Clone, Debug)]
pub struct MoveOptions {
    /// The namespace to move; every namespace when `None`.
    pub namespace: Option<String>,
    /// Print the plan and change nothing.
    pub dry_run: bool,
    pub mode: Mode,
    /// The command line that started the move, without `--resume`, `--rollback` or
    /// `--dry-run`, for the messages that say how to resume or roll back.
    pub command: String,
}

/// What a move did.
#[derive(Debug, Default)]
pub struct MoveReport {
    /// The Clusters moved, as `namespace/name`.
    pub clusters: Vec<String>,
    /// Every object moved, in creation order.
    pub objects: Vec<ObjectKey>,
}

/// Runs `corral move` from `source` to `target`, printing progress to `out`.
pub async fn run(
    source: &Connection,
    target: &Connection,
    options: &MoveOptions,
    out: &mut dyn Write,
) -> Result<MoveReport, Error> {
    if source.server == target.server {
        return Err(Error::Usage(format!(
            "the source and the target are the same server ({}); --to-kubeconfig must name another management plane",
            source.server
        )));
    }
    let types = discover_types(source).await?;
    let graph = read_graph(source, &types, options.namespace.as_deref()).await?;
    if options.dry_run {
        // As upstream's dry run: the source's checks, not the target's.
        preflight(source, target, &graph, options).await?;
        print_plan(&graph, source, target, out);
        return Ok(report_of(&graph));
    }
    match options.mode {
        Mode::Rollback => rollback(source, target, &graph, options, out).await,
        Mode::Move | Mode::Resume => {
            preflight(source, target, &graph, options).await?;
            let mut progress = Progress {
                total: graph.nodes.len(),
                ..Progress::default()
            };
            match move_graph(source, target, &types, graph, options, &mut progress, out).await {
                Ok(report) => Ok(report),
                Err(error) => Err(Error::Invalid(failure_report(
                    &error, &progress, source, target, options,
                ))),
            }
        }
    }
}

/// Steps 2 to 6.
async fn move_graph(
    source: &Connection,
    target: &Connection,
    types: &[ObjectType],
    graph: ObjectGraph,
    options: &MoveOptions,
    progress: &mut Progress,
    out: &mut dyn Write,
) -> Result<MoveReport, Error> {
    progress.step = "pausing the Clusters at the source";
    for cluster in graph.clusters() {
        pause_cluster(source, &cluster.key, &target.server).await?;
        progress.paused.push(cluster.key.clone());
        let _ = writeln!(
            out,
            "Paused Cluster {} at the source",
            namespaced(&cluster.key)
        );
    }

    progress.step = "waiting for clusterctl.cluster.x-k8s.io/block-move to go";
    wait_until_unblocked(source, types, options.namespace.as_deref(), out).await?;
    // Read again, once nothing changes: what is created at the target is what is paused.
    let graph = read_settled_graph(source, types, options.namespace.as_deref()).await?;
    progress.total = graph.nodes.len();

    progress.step = "creating the objects at the target";
    copy_provider_plugins(source, target, &graph, out).await?;
    create_at_target(target, &graph, progress, out).await?;

    progress.step = "deleting the objects at the source";
    for cluster in graph.clusters() {
        annotate(source, &graph, cluster, MOVE_PHASE, Some(DELETING)).await?;
    }
    progress.deleting = true;
    // A group at a time, what is owned before its owners; within a group, every delete is
    // sent before the move waits for any of them to go.
    for group in graph.groups().into_iter().rev() {
        for node in &group {
            begin_delete(source, graph.object_type(node), &node.key).await?;
        }
        for node in group {
            wait_deleted(source, graph.object_type(node), &node.key).await?;
            progress.deleted.push(node.key.clone());
        }
    }
    let _ = writeln!(
        out,
        "Deleted {} at the source (finalizers removed first: nothing deprovisioned)",
        count(progress.deleted.len(), "object")
    );

    progress.step = "unpausing the Clusters at the target";
    let mut unpaused = BTreeSet::new();
    for cluster in graph.clusters() {
        unpause_cluster(target, &cluster.key).await?;
        unpaused.insert(cluster.key.clone());
    }
    // A Cluster whose source copy an earlier run already deleted is known by its annotation.
    for key in paused_by_move(target, options.namespace.as_deref()).await? {
        if unpaused.insert(key.clone()) {
            unpause_cluster(target, &key).await?;
        }
    }
    for key in &unpaused {
        let _ = writeln!(out, "Unpaused Cluster {} at the target", namespaced(key));
    }
    let mut report = report_of(&graph);
    report.clusters = unpaused.iter().map(namespaced).collect();
    let _ = writeln!(
        out,
        "Moved {} of {} from {} to {}",
        count(report.objects.len(), "object"),
        count(report.clusters.len(), "Cluster"),
        source.server,
        target.server
    );
    Ok(report)
}

/// How far a move got, for the message when it fails.
#[derive(Debug, Default)]
struct Progress {
    step: &'static str,
    total: usize,
    paused: Vec<ObjectKey>,
    created: Vec<ObjectKey>,
    kept: Vec<ObjectKey>,
    deleting: bool,
    deleted: Vec<ObjectKey>,
}

/// The message of a move that failed after preflight: the cause, what is where, and the
/// commands that resume or roll back.
fn failure_report(
    error: &Error,
    progress: &Progress,
    source: &Connection,
    target: &Connection,
    options: &MoveOptions,
) -> String {
    let mut text = format!("corral move stopped while {}: {error}\n", progress.step);
    text.push_str("State now:\n");
    if progress.paused.is_empty() {
        text.push_str(&format!(
            "  source {}: nothing changed, no Cluster paused\n",
            source.server
        ));
    } else {
        text.push_str(&format!(
            "  source {}: paused by this move (spec.paused: true, annotation {PAUSED_BY_MOVE}): {}\n",
            source.server,
            list(&progress.paused)
        ));
        text.push_str(&format!(
            "  source {}: {} of {} objects still there{}\n",
            source.server,
            progress.total.saturating_sub(progress.deleted.len()),
            progress.total,
            if progress.deleting {
                format!(", {} deleted", progress.deleted.len())
            } else {
                ", none deleted".into()
            }
        ));
    }
    let at_target = progress.created.len() + progress.kept.len();
    text.push_str(&format!(
        "  target {}: {at_target} of {} objects created{}\n",
        target.server,
        progress.total,
        if at_target == 0 {
            String::new()
        } else {
            format!(
                " ({}); its Clusters stay paused until the move finishes",
                list(
                    &progress
                        .created
                        .iter()
                        .chain(&progress.kept)
                        .cloned()
                        .collect::<Vec<_>>()
                )
            )
        }
    ));
    text.push_str("No VM or workload cluster was touched.\n");
    if progress.paused.is_empty() && at_target == 0 {
        text.push_str(&format!(
            "Fix the cause and run the move again:\n  {}",
            options.command
        ));
        return text;
    }
    text.push_str(&format!(
        "To finish the move once the cause is fixed (it continues where it stopped):\n  {} --resume",
        options.command
    ));
    if progress.deleting {
        text.push_str(
            "\nThe source is partly deleted, so the move cannot be rolled back; only --resume finishes it.",
        );
    } else {
        text.push_str(&format!(
            "\nTo undo it instead (deletes what it created at the target, unpauses the source):\n  {} --rollback",
            options.command
        ));
    }
    text
}

/// Up to eight objects, then how many more.
fn list(keys: &[ObjectKey]) -> String {
    let mut shown: Vec<String> = keys.iter().take(8).map(ToString::to_string).collect();
    if keys.len() > 8 {
        shown.push(format!("and {} more", keys.len() - 8));
    }
    shown.join(", ")
}

/// `1 object`, `2 objects`.
fn count(number: usize, noun: &str) -> String {
    if number == 1 {
        format!("1 {noun}")
    } else {
        format!("{number} {noun}s")
    }
}

fn namespaced(key: &ObjectKey) -> String {
    format!("{}/{}", key.namespace, key.name)
}

fn report_of(graph: &ObjectGraph) -> MoveReport {
    MoveReport {
        clusters: graph.clusters().map(|node| namespaced(&node.key)).collect(),
        objects: graph.nodes.iter().map(|node| node.key.clone()).collect(),
    }
}

/// The kinds to look at: every CRD labelled `clusterctl.cluster.x-k8s.io` but the provider
/// inventory, Secrets and ConfigMaps (upstream's `getDiscoveryTypes`).
async fn discover_types(source: &Connection) -> Result<Vec<ObjectType>, Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(source.client.clone());
    let list = crds
        .list(&ListParams::default().labels(corral_api::labels::CLUSTERCTL))
        .await
        .map_err(|error| source.fail("listing the CRDs at the source", error))?;
    let mut types = Vec::new();
    for crd in list.items {
        let spec = &crd.spec;
        if spec.group == corral_api::clusterctl::GROUP || spec.scope != "Namespaced" {
            continue;
        }
        let Some(version) = spec
            .versions
            .iter()
            .find(|version| version.storage)
            .or_else(|| spec.versions.iter().find(|version| version.served))
        else {
            continue;
        };
        let labels = crd.metadata.labels.clone().unwrap_or_default();
        types.push(ObjectType {
            resource: ApiResource {
                group: spec.group.clone(),
                version: version.name.clone(),
                api_version: format!("{}/{}", spec.group, version.name),
                kind: spec.names.kind.clone(),
                plural: spec.names.plural.clone(),
            },
            status_subresource: version
                .subresources
                .as_ref()
                .is_some_and(|subresources| subresources.status.is_some()),
            move_all: labels.contains_key(corral_api::labels::CLUSTERCTL_MOVE),
            hierarchy_root: labels.contains_key(corral_api::labels::CLUSTERCTL_MOVE_HIERARCHY),
        });
    }
    if !types.iter().any(|object_type| {
        object_type.kind() == "Cluster" && object_type.group() == "cluster.x-k8s.io"
    }) {
        return Err(Error::Invalid(format!(
            "the Cluster API CRDs at {} are not labelled by `corral init` (clusterctl.cluster.x-k8s.io); run `corral init` against it first",
            source.server
        )));
    }
    for (kind, plural) in [("Secret", "secrets"), ("ConfigMap", "configmaps")] {
        types.push(ObjectType {
            resource: ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: kind.into(),
                plural: plural.into(),
            },
            status_subresource: false,
            move_all: false,
            hierarchy_root: false,
        });
    }
    Ok(types)
}

fn api(connection: &Connection, object_type: &ObjectType, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(connection.client.clone(), namespace, &object_type.resource)
}

fn api_all(connection: &Connection, object_type: &ObjectType) -> Api<DynamicObject> {
    Api::all_with(connection.client.clone(), &object_type.resource)
}

/// Lists every object of `types` at the source and builds the graph.
async fn read_graph(
    source: &Connection,
    types: &[ObjectType],
    namespace: Option<&str>,
) -> Result<ObjectGraph, Error> {
    let mut objects = Vec::new();
    for (index, object_type) in types.iter().enumerate() {
        let api = match namespace {
            Some(namespace) => api(source, object_type, namespace),
            None => api_all(source, object_type),
        };
        let list = api.list(&ListParams::default()).await.map_err(|error| {
            source.fail(
                format!("listing {} at the source", object_type.resource.plural),
                error,
            )
        })?;
        for item in list.items {
            let mut value = serde_json::to_value(&item).expect("an object serializes");
            value["apiVersion"] = object_type.resource.api_version.clone().into();
            value["kind"] = object_type.kind().into();
            objects.push((index, value));
        }
    }
    Ok(ObjectGraph::build(types.to_vec(), objects))
}

/// Prints the move sequence (`--dry-run`).
fn print_plan(graph: &ObjectGraph, source: &Connection, target: &Connection, out: &mut dyn Write) {
    let _ = writeln!(
        out,
        "Dry run: would move {} of {} from {} to {}; nothing is changed.",
        count(graph.nodes.len(), "object"),
        count(graph.clusters().count(), "Cluster"),
        source.server,
        target.server
    );
    for cluster in graph.clusters() {
        let _ = writeln!(
            out,
            "Would pause Cluster {} at the source (spec.paused: true)",
            namespaced(&cluster.key)
        );
    }
    for (index, group) in graph.groups().into_iter().enumerate() {
        let _ = writeln!(out, "Group {}:", index + 1);
        for node in group {
            let _ = writeln!(out, "  {}", node.key);
        }
    }
    let _ = writeln!(
        out,
        "Then: delete them at the source (last group first), unpause the Clusters at the target."
    );
}

/// Step 1.
async fn preflight(
    source: &Connection,
    target: &Connection,
    graph: &ObjectGraph,
    options: &MoveOptions,
) -> Result<(), Error> {
    if !options.dry_run {
        check_target_serves_kinds(target, graph).await?;
        check_target_providers(source, target).await?;
    }
    check_source(graph, options, false)?;
    if options.mode == Mode::Resume || options.dry_run {
        return Ok(());
    }
    for cluster in graph.clusters() {
        let name = namespaced(&cluster.key);
        let at_target = api(target, graph.object_type(cluster), &cluster.key.namespace)
            .get_opt(&cluster.key.name)
            .await
            .map_err(|error| target.fail(format!("reading Cluster {name} at the target"), error))?;
        if at_target.is_some() {
            return Err(Error::Invalid(format!(
                "a Cluster {name} already exists at the target {}; delete it there or move to another management plane",
                target.server
            )));
        }
    }
    Ok(())
}

/// Step 1 at the source (upstream's `checkClustersNotPaused` and `checkProvisioningCompleted`,
/// which `--to-directory` runs too): no Cluster paused but by this kind of move, every Cluster
/// provisioned, every Machine with a Node. `to_directory` accepts the Clusters an unfinished
/// `--to-directory` paused, since running it again finishes it.
fn check_source(
    graph: &ObjectGraph,
    options: &MoveOptions,
    to_directory: bool,
) -> Result<(), Error> {
    let resume = options.mode == Mode::Resume;
    for cluster in graph.clusters() {
        let object = &cluster.object;
        let name = namespaced(&cluster.key);
        let paused_by = object["metadata"]["annotations"][PAUSED_BY_MOVE].as_str();
        let paused = object["spec"]["paused"].as_bool() == Some(true)
            || object["metadata"]["annotations"][corral_api::annotations::PAUSED].is_string();
        match paused_by {
            Some(by) if by.starts_with(TO_DIRECTORY_PREFIX) => {
                if !to_directory {
                    return Err(Error::Invalid(format!(
                        "Cluster {name} was paused by `corral move --to-directory {}` that did not finish; run it again into an empty directory to finish it (it unpauses the Cluster), then move",
                        &by[TO_DIRECTORY_PREFIX.len()..]
                    )));
                }
            }
            Some(by) if by.starts_with(FROM_DIRECTORY_PREFIX) => {
                return Err(Error::Invalid(format!(
                    "Cluster {name} was created paused by `corral move --from-directory {}` that did not finish; run it again to finish it (it unpauses the Cluster), then move",
                    &by[FROM_DIRECTORY_PREFIX.len()..]
                )));
            }
            Some(by) if to_directory => {
                return Err(Error::Invalid(format!(
                    "Cluster {name} was paused by a `corral move` to {by} that did not finish; finish it with --resume or undo it with --rollback before writing it to a directory"
                )));
            }
            Some(_) if !resume => {
                return Err(Error::Invalid(format!(
                    "Cluster {name} was paused by a `corral move` that did not finish; finish it with `{} --resume` or undo it with `{} --rollback`",
                    options.command, options.command
                )));
            }
            Some(_) | None => {}
        }
        let paused_by_move = paused_by.is_some();
        if paused && !paused_by_move {
            return Err(Error::Invalid(format!(
                "Cluster {name} is paused; unpause it before moving it (upstream's checkClustersNotPaused), e.g. kubectl patch cluster {} -n {} --type merge -p '{{\"spec\":{{\"paused\":false}}}}'",
                cluster.key.name, cluster.key.namespace
            )));
        }
        let initialization = &object["status"]["initialization"];
        if initialization["infrastructureProvisioned"].as_bool() != Some(true) {
            return Err(Error::Invalid(format!(
                "cannot start the move while Cluster {name} is still provisioning its infrastructure (status.initialization.infrastructureProvisioned is not true); wait and try again"
            )));
        }
        if object["spec"]["controlPlaneRef"].is_object()
            && initialization["controlPlaneInitialized"].as_bool() != Some(true)
        {
            return Err(Error::Invalid(format!(
                "cannot start the move while Cluster {name} is still initializing its control plane (status.initialization.controlPlaneInitialized is not true); wait and try again"
            )));
        }
    }
    for node in &graph.nodes {
        if node.key.kind == "Machine"
            && node.key.group == "cluster.x-k8s.io"
            && !node.object["status"]["nodeRef"].is_object()
        {
            return Err(Error::Invalid(format!(
                "cannot start the move while Machine {} is still provisioning its node (no status.nodeRef); wait until every Machine has a Node",
                namespaced(&node.key)
            )));
        }
    }
    Ok(())
}

/// The target serves every kind in the graph.
async fn check_target_serves_kinds(target: &Connection, graph: &ObjectGraph) -> Result<(), Error> {
    let needed: BTreeSet<usize> = graph.nodes.iter().map(|node| node.type_index).collect();
    for index in needed {
        let object_type = &graph.types[index];
        match api_all(target, object_type)
            .list_metadata(&ListParams::default().limit(1))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {
                return Err(Error::Invalid(format!(
                    "the target {} does not serve {} ({}); install the providers there first with `corral init --kubeconfig <target kubeconfig>`",
                    target.server,
                    object_type.kind(),
                    object_type.resource.api_version
                )));
            }
            Err(error) => {
                return Err(target.fail(
                    format!("listing {} at the target", object_type.resource.plural),
                    error,
                ));
            }
        }
    }
    Ok(())
}

/// Every provider in the source's inventory is in the target's, at the same or a newer version
/// (upstream's `checkTargetProviders`).
async fn check_target_providers(source: &Connection, target: &Connection) -> Result<(), Error> {
    let inventory = |connection: &Connection| {
        Api::<corral_api::clusterctl::Provider>::all(connection.client.clone())
    };
    let source_providers = match inventory(source).list(&ListParams::default()).await {
        Ok(list) => list.items,
        // A source without an inventory (not installed by `corral init`): nothing to compare.
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
        Err(error) => {
            return Err(source.fail("listing the provider inventory at the source", error));
        }
    };
    let target_providers = match inventory(target).list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
        Err(error) => {
            return Err(target.fail("listing the provider inventory at the target", error));
        }
    };
    for provider in &source_providers {
        let name = provider.metadata.name.clone().unwrap_or_default();
        let namespace = provider.metadata.namespace.clone().unwrap_or_default();
        let at_target = target_providers.iter().find(|candidate| {
            candidate.metadata.name.as_deref() == Some(name.as_str())
                && candidate.metadata.namespace.as_deref() == Some(namespace.as_str())
        });
        let Some(at_target) = at_target else {
            return Err(Error::Invalid(format!(
                "the target {} has no provider {namespace}/{name}; run `corral init --kubeconfig <target kubeconfig>` first",
                target.server
            )));
        };
        let version = |provider: &corral_api::clusterctl::Provider| {
            provider.version.as_deref().map(parse_version)
        };
        if let (Some(wanted), Some(found)) = (version(provider), version(at_target))
            && found < wanted
        {
            return Err(Error::Invalid(format!(
                "the target's provider {namespace}/{name} is at {}, older than the source's {}; upgrade the target first",
                at_target.version.as_deref().unwrap_or(""),
                provider.version.as_deref().unwrap_or("")
            )));
        }
    }
    Ok(())
}

/// `v1.2.3` as numbers, for comparing provider versions; what does not parse counts as 0.
fn parse_version(version: &str) -> Vec<u64> {
    version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .take(3)
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

/// Step 2 for one Cluster: `spec.paused: true` and [`PAUSED_BY_MOVE`] set to `paused_by`
/// (the target's server URL, or the directory of `--to-directory`).
async fn pause_cluster(source: &Connection, key: &ObjectKey, paused_by: &str) -> Result<(), Error> {
    let clusters: Api<corral_api::Cluster> = Api::namespaced(source.client.clone(), &key.namespace);
    let patch = json!({
        "metadata": { "annotations": { PAUSED_BY_MOVE: paused_by } },
        "spec": { "paused": true },
    });
    clusters
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|error| {
            source.fail(
                format!("pausing Cluster {} at the source", namespaced(key)),
                error,
            )
        })?;
    Ok(())
}

/// Step 6 for one Cluster (and the end of `--to-directory` at the source): `spec.paused: false`
/// and the move's annotations removed.
async fn unpause_cluster(target: &Connection, key: &ObjectKey) -> Result<(), Error> {
    let clusters: Api<corral_api::Cluster> = Api::namespaced(target.client.clone(), &key.namespace);
    let patch = json!({
        "metadata": { "annotations": { PAUSED_BY_MOVE: null, MOVE_PHASE: null } },
        "spec": { "paused": false },
    });
    clusters
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|error| {
            target.fail(
                format!("unpausing Cluster {} at the target", namespaced(key)),
                error,
            )
        })?;
    Ok(())
}

/// The Clusters at `connection` that a move paused.
async fn paused_by_move(
    connection: &Connection,
    namespace: Option<&str>,
) -> Result<Vec<ObjectKey>, Error> {
    let clusters: Api<corral_api::Cluster> = match namespace {
        Some(namespace) => Api::namespaced(connection.client.clone(), namespace),
        None => Api::all(connection.client.clone()),
    };
    let list = clusters
        .list(&ListParams::default())
        .await
        .map_err(|error| connection.fail("listing Clusters", error))?;
    Ok(list
        .items
        .into_iter()
        .filter(|cluster| {
            cluster
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|annotations| annotations.contains_key(PAUSED_BY_MOVE))
        })
        .map(|cluster| ObjectKey {
            group: "cluster.x-k8s.io".into(),
            kind: "Cluster".into(),
            namespace: cluster.metadata.namespace.unwrap_or_default(),
            name: cluster.metadata.name.unwrap_or_default(),
        })
        .collect())
}

/// Sets or removes an annotation on a graph object at the source.
async fn annotate(
    connection: &Connection,
    graph: &ObjectGraph,
    node: &Node,
    annotation: &str,
    value: Option<&str>,
) -> Result<(), Error> {
    let patch = json!({ "metadata": { "annotations": { annotation: value } } });
    api(connection, graph.object_type(node), &node.key.namespace)
        .patch(
            &node.key.name,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(|error| connection.fail(format!("annotating {}", node.key), error))?;
    Ok(())
}

/// Step 3.
async fn wait_until_unblocked(
    source: &Connection,
    types: &[ObjectType],
    namespace: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + BLOCK_MOVE_PATIENCE;
    let mut told = false;
    loop {
        let graph = read_graph(source, types, namespace).await?;
        let blocked: Vec<ObjectKey> = graph
            .nodes
            .iter()
            .filter(|node| {
                node.object["metadata"]["annotations"]
                    [corral_api::annotations::CLUSTERCTL_BLOCK_MOVE]
                    .is_string()
            })
            .map(|node| node.key.clone())
            .collect();
        if blocked.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "{} still carry clusterctl.cluster.x-k8s.io/block-move after {} s",
                list(&blocked),
                BLOCK_MOVE_PATIENCE.as_secs()
            )));
        }
        if !told {
            let _ = writeln!(
                out,
                "Waiting for {} to allow the move (block-move)",
                list(&blocked)
            );
            told = true;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The graph once two reads a moment apart agree: a reconcile that began before the pause
/// may still write once (upstream relies on the same pause). After [`SETTLE_PATIENCE`] the
/// last read is taken as it is.
async fn read_settled_graph(
    source: &Connection,
    types: &[ObjectType],
    namespace: Option<&str>,
) -> Result<ObjectGraph, Error> {
    let versions = |graph: &ObjectGraph| -> Vec<(ObjectKey, String)> {
        graph
            .nodes
            .iter()
            .map(|node| {
                let version = node.object["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                (node.key.clone(), version)
            })
            .collect()
    };
    let deadline = tokio::time::Instant::now() + SETTLE_PATIENCE;
    let mut graph = read_graph(source, types, namespace).await?;
    loop {
        tokio::time::sleep(SETTLE_INTERVAL).await;
        let again = read_graph(source, types, namespace).await?;
        let settled = versions(&again) == versions(&graph);
        graph = again;
        if settled || tokio::time::Instant::now() > deadline {
            return Ok(graph);
        }
    }
}

/// Step 4.
async fn create_at_target(
    target: &Connection,
    graph: &ObjectGraph,
    progress: &mut Progress,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let namespaces: BTreeSet<&str> = graph
        .nodes
        .iter()
        .map(|node| node.key.namespace.as_str())
        .collect();
    for namespace in namespaces {
        ensure_namespace(target, namespace).await?;
    }
    // Source uid to target uid, for the owner references.
    let mut uids: HashMap<String, String> = HashMap::new();
    for (index, group) in graph.groups().into_iter().enumerate() {
        let objects = group.len();
        for node in group {
            let object_type = graph.object_type(node);
            let api = api(target, object_type, &node.key.namespace);
            let existing = api.get_opt(&node.key.name).await.map_err(|error| {
                target.fail(format!("reading {} at the target", node.key), error)
            })?;
            let created = match existing {
                Some(existing) => {
                    progress.kept.push(node.key.clone());
                    existing
                }
                None => {
                    let object = target_object(node, &uids);
                    let object: DynamicObject =
                        serde_json::from_value(object).expect("a listed object decodes");
                    let created =
                        api.create(&PostParams::default(), &object)
                            .await
                            .map_err(|error| {
                                target.fail(format!("creating {} at the target", node.key), error)
                            })?;
                    progress.created.push(node.key.clone());
                    created
                }
            };
            if let Some(uid) = created.metadata.uid.clone() {
                uids.insert(node.uid().to_string(), uid);
            }
            let status = &node.object["status"];
            if object_type.status_subresource && status.is_object() {
                let patch = json!({ "status": status });
                api.patch_status(
                    &node.key.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(|error| {
                    target.fail(
                        format!("restoring the status of {} at the target", node.key),
                        error,
                    )
                })?;
            }
        }
        let _ = writeln!(
            out,
            "Created group {} at the target ({})",
            index + 1,
            count(objects, "object")
        );
    }
    Ok(())
}

/// Creates at the target the ProviderPlugins (cluster-scoped, so not in the graph) that the
/// moved Plugin* objects name, from the source's spec, unless the target has one of that name;
/// before the objects, whose admission at the target asks them. The source keeps its own:
/// other namespaces may use them. (A move through a directory does not carry them.)
async fn copy_provider_plugins(
    source: &Connection,
    target: &Connection,
    graph: &ObjectGraph,
    out: &mut dyn Write,
) -> Result<(), Error> {
    use corral_infra_plugin::api::{GROUP, ProviderPlugin};
    let names: BTreeSet<&str> = graph
        .nodes
        .iter()
        .filter(|node| graph.object_type(node).group() == GROUP)
        .filter_map(|node| {
            let object = &node.object;
            object
                .pointer("/spec/plugin")
                .or_else(|| object.pointer("/spec/template/spec/plugin"))
                .and_then(Value::as_str)
        })
        .collect();
    let at_source: Api<ProviderPlugin> = Api::all(source.client.clone());
    let at_target: Api<ProviderPlugin> = Api::all(target.client.clone());
    for name in names {
        let plugin = at_source.get_opt(name).await.map_err(|error| {
            source.fail(
                format!("reading ProviderPlugin {name} at the source"),
                error,
            )
        })?;
        let Some(plugin) = plugin else {
            continue;
        };
        let existing = at_target.get_opt(name).await.map_err(|error| {
            target.fail(
                format!("reading ProviderPlugin {name} at the target"),
                error,
            )
        })?;
        if existing.is_some() {
            continue;
        }
        let copy = ProviderPlugin {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_owned()),
                labels: plugin.metadata.labels.clone(),
                annotations: plugin.metadata.annotations.clone(),
                ..Default::default()
            },
            spec: plugin.spec.clone(),
            status: None,
        };
        at_target
            .create(&PostParams::default(), &copy)
            .await
            .map_err(|error| {
                target.fail(
                    format!("creating ProviderPlugin {name} at the target"),
                    error,
                )
            })?;
        let _ = writeln!(out, "Created ProviderPlugin {name} at the target");
    }
    Ok(())
}

/// The object to create at the target: the source's, without what the source's server owns
/// (uid, resourceVersion, timestamps, managedFields, status), with owner references to the
/// target's owners; owners that did not move are dropped, since a reference to a uid that does
/// not exist there would have the target's garbage collector delete the object.
fn target_object(node: &Node, uids: &HashMap<String, String>) -> Value {
    let mut object = node.object.clone();
    if let Some(fields) = object.as_object_mut() {
        fields.remove("status");
    }
    let metadata = object["metadata"]
        .as_object_mut()
        .expect("objects have metadata");
    for field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        metadata.remove(field);
    }
    if let Some(annotations) = metadata
        .get_mut("annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(corral_api::annotations::CLUSTERCTL_DELETE_FOR_MOVE);
        annotations.remove(MOVE_PHASE);
    }
    if let Some(owners) = metadata
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
    {
        owners.retain_mut(|owner| {
            let Some(uid) = owner["uid"].as_str().and_then(|uid| uids.get(uid)) else {
                return false;
            };
            owner["uid"] = uid.clone().into();
            true
        });
    }
    object
}

async fn ensure_namespace(target: &Connection, namespace: &str) -> Result<(), Error> {
    let namespaces: Api<Namespace> = Api::all(target.client.clone());
    let exists = namespaces.get_opt(namespace).await.map_err(|error| {
        target.fail(
            format!("reading namespace {namespace} at the target"),
            error,
        )
    })?;
    if exists.is_some() {
        return Ok(());
    }
    let object: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": namespace },
    }))
    .expect("a namespace decodes");
    match namespaces.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(target.fail(
            format!("creating namespace {namespace} at the target"),
            error,
        )),
    }
}

/// Deletes an object as step 5 does ([`begin_delete`], then [`wait_deleted`]).
async fn delete_for_move(
    connection: &Connection,
    object_type: &ObjectType,
    key: &ObjectKey,
) -> Result<(), Error> {
    begin_delete(connection, object_type, key).await?;
    wait_deleted(connection, object_type, key).await
}

/// Step 5 for one object (or the rollback's deletion at the target): the delete-for-move
/// annotation and no finalizers, then a delete that orphans what the object still owns.
async fn begin_delete(
    connection: &Connection,
    object_type: &ObjectType,
    key: &ObjectKey,
) -> Result<(), Error> {
    let api = api(connection, object_type, &key.namespace);
    let patch = json!({
        "metadata": {
            "annotations": { corral_api::annotations::CLUSTERCTL_DELETE_FOR_MOVE: "" },
            "finalizers": null,
        },
    });
    match api
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
        Err(error) => return Err(connection.fail(format!("preparing {key} for deletion"), error)),
    }
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    match api.delete(&key.name, &params).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
        Err(error) => return Err(connection.fail(format!("deleting {key}"), error)),
    }
    Ok(())
}

/// Returns once a deleted object is gone. A finalizer a controller put back before the delete
/// goes too, but not the garbage collector's: it orphans what the object owns, then lets the
/// object go.
async fn wait_deleted(
    connection: &Connection,
    object_type: &ObjectType,
    key: &ObjectKey,
) -> Result<(), Error> {
    let api = api(connection, object_type, &key.namespace);
    let deadline = tokio::time::Instant::now() + DELETE_PATIENCE;
    loop {
        let remaining = api
            .get_opt(&key.name)
            .await
            .map_err(|error| connection.fail(format!("reading {key}"), error))?;
        let Some(remaining) = remaining else {
            return Ok(());
        };
        let finalizers = remaining.metadata.finalizers.unwrap_or_default();
        if finalizers.iter().any(|finalizer| finalizer != ORPHAN) {
            let kept: Vec<&String> = finalizers.iter().filter(|f| *f == ORPHAN).collect();
            let patch = json!({ "metadata": { "finalizers": kept } });
            match api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
                Err(error) => {
                    return Err(connection.fail(format!("removing the finalizers of {key}"), error));
                }
            }
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "{key} is still at {} {} s after its deletion (finalizers: {})",
                connection.server,
                DELETE_PATIENCE.as_secs(),
                finalizers.join(", ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `--rollback`: deletes from the target what the move created there (every object of the
/// source's graph found at the target), then unpauses the source's Clusters.
async fn rollback(
    source: &Connection,
    target: &Connection,
    graph: &ObjectGraph,
    options: &MoveOptions,
    out: &mut dyn Write,
) -> Result<MoveReport, Error> {
    for cluster in graph.clusters() {
        let annotations = &cluster.object["metadata"]["annotations"];
        if annotations[MOVE_PHASE].as_str() == Some(DELETING) {
            return Err(Error::Invalid(format!(
                "the move of Cluster {} already began deleting it at the source, so it cannot be rolled back; finish it with `{} --resume`",
                namespaced(&cluster.key),
                options.command
            )));
        }
    }
    // Clusters paused at the target by a move whose source copy is gone cannot come back.
    let source_clusters: BTreeSet<ObjectKey> =
        graph.clusters().map(|node| node.key.clone()).collect();
    for key in paused_by_move(target, options.namespace.as_deref()).await? {
        if !source_clusters.contains(&key) {
            return Err(Error::Invalid(format!(
                "Cluster {} is no longer at the source, so the move cannot be rolled back; finish it with `{} --resume`",
                namespaced(&key),
                options.command
            )));
        }
    }
    let mut deleted = 0;
    for node in graph.nodes.iter().rev() {
        let object_type = graph.object_type(node);
        let at_target = api(target, object_type, &node.key.namespace)
            .get_opt(&node.key.name)
            .await
            .map_err(|error| target.fail(format!("reading {} at the target", node.key), error))?;
        // An object of the graph's name at the target is taken for the move's copy: the move
        // refused to start when the target had one of its Clusters, and everything else it
        // moves hangs off those Clusters.
        if at_target.is_none() {
            continue;
        }
        delete_for_move(target, object_type, &node.key).await?;
        deleted += 1;
    }
    let _ = writeln!(
        out,
        "Deleted {} the move had created at the target",
        count(deleted, "object")
    );
    let mut report = report_of(graph);
    for cluster in graph.clusters() {
        let paused = cluster.object["metadata"]["annotations"][PAUSED_BY_MOVE].is_string();
        if !paused {
            continue;
        }
        let clusters: Api<corral_api::Cluster> =
            Api::namespaced(source.client.clone(), &cluster.key.namespace);
        let patch = json!({
            "metadata": { "annotations": { PAUSED_BY_MOVE: null } },
            "spec": { "paused": false },
        });
        clusters
            .patch(
                &cluster.key.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|error| {
                source.fail(
                    format!(
                        "unpausing Cluster {} at the source",
                        namespaced(&cluster.key)
                    ),
                    error,
                )
            })?;
        let _ = writeln!(
            out,
            "Unpaused Cluster {} at the source",
            namespaced(&cluster.key)
        );
    }
    report.objects.clear();
    let _ = writeln!(
        out,
        "Rolled back: the Clusters are managed by {} again",
        source.server
    );
    Ok(report)
}
