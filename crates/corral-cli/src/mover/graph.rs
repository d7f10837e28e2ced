//! What `corral move` moves and in which order: the object graph of upstream's
//! `cmd/clusterctl/client/cluster/objectgraph.go`, built from the objects of a namespace.
//!
//! The kinds looked at are those of every CRD clusterctl (or `corral init`) installed, which
//! carry the `clusterctl.cluster.x-k8s.io` label, except the provider inventory, plus Secrets and
//! ConfigMaps. An object is moved when it is reachable from a root: a Cluster, an object of a
//! kind (or with a label) `clusterctl.cluster.x-k8s.io/move` or `move-hierarchy`. From an object
//! the graph reaches what it owns (owner references), what it references from its spec
//! (`infrastructureRef`, `configRef`, templates, `dataSecretName`) in its namespace, and for a
//! Cluster what upstream calls soft-owned: Secrets named `<cluster>-*` (the kubeconfig and
//! certificates), and, beyond upstream, anything labelled `cluster.x-k8s.io/cluster-name:
//! <cluster>` or naming it in `spec.clusterName`, so that the bootstrap data Secrets and
//! ConfigMaps a user wrote, and MachineHealthChecks, go along too.
//!
//! The order is upstream's `getMoveSequence`: by owner depth, owners before what they own,
//! because an owner reference names its owner by uid, which exists only once the owner does.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kube::api::ApiResource;
use serde_json::Value;

/// A kind the move looks at.
#[derive(Clone, Debug)]
pub struct ObjectType {
    pub resource: ApiResource,
    /// Whether the kind has a status subresource, through which status is restored.
    pub status_subresource: bool,
    /// The CRD has the `clusterctl.cluster.x-k8s.io/move` label: every object moves.
    pub move_all: bool,
    /// The CRD has the `clusterctl.cluster.x-k8s.io/move-hierarchy` label: every object moves
    /// with everything it owns.
    pub hierarchy_root: bool,
}

impl ObjectType {
    pub fn group(&self) -> &str {
        &self.resource.group
    }

    pub fn kind(&self) -> &str {
        &self.resource.kind
    }
}

/// An object's identity across management planes, where uids differ.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// An object to move.
#[derive(Clone, Debug)]
pub struct Node {
    pub key: ObjectKey,
    /// Index into the graph's types.
    pub type_index: usize,
    /// The object as read from the source.
    pub object: Value,
    /// Its owner depth: 0 for objects without an owner in the graph. Objects are created in
    /// increasing depth and deleted in decreasing depth.
    pub depth: usize,
}

impl Node {
    pub fn uid(&self) -> &str {
        self.object["metadata"]["uid"].as_str().unwrap_or("")
    }
}

/// The objects to move, in move order.
#[derive(Debug, Default)]
pub struct ObjectGraph {
    pub types: Vec<ObjectType>,
    /// Sorted by depth, then Clusters first, then kind and name.
    pub nodes: Vec<Node>,
}

impl ObjectGraph {
    /// Builds the graph from every object of `types` listed at the source (`objects` pairs a
    /// type index with an object).
    pub fn build(types: Vec<ObjectType>, objects: Vec<(usize, Value)>) -> ObjectGraph {
        let candidates: Vec<Candidate> = objects
            .into_iter()
            .map(|(type_index, object)| Candidate::new(&types, type_index, object))
            .collect();
        let owners = owners(&candidates);
        let reaches = reaches(&candidates, &owners);
        let moved = moved(&candidates, &types, &reaches);

        let mut depths: Vec<Option<usize>> = vec![None; candidates.len()];
        for index in 0..candidates.len() {
            depth(index, &owners, &moved, &mut depths, &mut BTreeSet::new());
        }
        let mut nodes: Vec<Node> = candidates
            .into_iter()
            .enumerate()
            .filter(|(index, _)| moved[*index])
            .map(|(index, candidate)| Node {
                key: candidate.key,
                type_index: candidate.type_index,
                object: candidate.object,
                depth: depths[index].unwrap_or(0),
            })
            .collect();
        nodes.sort_by(|a, b| {
            let cluster_first =
                |node: &Node| !(node.key.kind == "Cluster" && node.key.group == CORE_GROUP);
            (
                a.depth,
                cluster_first(a),
                &a.key.kind,
                &a.key.namespace,
                &a.key.name,
            )
                .cmp(&(
                    b.depth,
                    cluster_first(b),
                    &b.key.kind,
                    &b.key.namespace,
                    &b.key.name,
                ))
        });
        ObjectGraph { types, nodes }
    }

    /// The move sequence: the nodes grouped by depth, in creation order.
    pub fn groups(&self) -> Vec<Vec<&Node>> {
        let mut groups: BTreeMap<usize, Vec<&Node>> = BTreeMap::new();
        for node in &self.nodes {
            groups.entry(node.depth).or_default().push(node);
        }
        groups.into_values().collect()
    }

    /// The Clusters to move.
    pub fn clusters(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(|node| node.key.kind == "Cluster" && node.key.group == CORE_GROUP)
    }

    pub fn object_type(&self, node: &Node) -> &ObjectType {
        &self.types[node.type_index]
    }
}

const CORE_GROUP: &str = "cluster.x-k8s.io";

/// The owners of each candidate that are candidates too: by owner reference, and for a
/// Cluster's soft-owned objects, the Cluster.
fn owners(candidates: &[Candidate]) -> Vec<BTreeSet<usize>> {
    let by_uid: HashMap<&str, usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, candidate)| !candidate.uid.is_empty())
        .map(|(index, candidate)| (candidate.uid.as_str(), index))
        .collect();
    let clusters: HashMap<(&str, &str), usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, candidate)| candidate.is_cluster())
        .map(|(index, candidate)| {
            (
                (
                    candidate.key.namespace.as_str(),
                    candidate.key.name.as_str(),
                ),
                index,
            )
        })
        .collect();
    let mut owners: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); candidates.len()];
    for (index, candidate) in candidates.iter().enumerate() {
        for uid in &candidate.owner_uids {
            if let Some(&owner) = by_uid.get(uid.as_str()) {
                owners[index].insert(owner);
            }
        }
        if candidate.is_cluster() {
            continue;
        }
        for cluster_name in candidate.soft_owner_clusters(&clusters) {
            if let Some(&cluster) = clusters.get(&(candidate.key.namespace.as_str(), cluster_name))
                && cluster != index
            {
                owners[index].insert(cluster);
            }
        }
    }
    owners
}

/// What each candidate leads to: what it owns, and what its spec references.
fn reaches(candidates: &[Candidate], owners: &[BTreeSet<usize>]) -> Vec<BTreeSet<usize>> {
    let by_key: HashMap<&ObjectKey, usize> = candidates
        .iter()
        .enumerate()
        .map(|(index, candidate)| (&candidate.key, index))
        .collect();

    let mut reaches: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); candidates.len()];
    for (index, candidate_owners) in owners.iter().enumerate() {
        for &owner in candidate_owners {
            reaches[owner].insert(index);
        }
    }
    for (index, candidate) in candidates.iter().enumerate() {
        for reference in &candidate.references {
            let found = match &reference.group {
                Some(group) => by_key
                    .get(&ObjectKey {
                        group: group.clone(),
                        kind: reference.kind.clone(),
                        namespace: reference.namespace.clone(),
                        name: reference.name.clone(),
                    })
                    .copied(),
                None => by_key
                    .iter()
                    .find(|(key, _)| reference.matches(key))
                    .map(|(_, &index)| index),
            };
            if let Some(referenced) = found
                && referenced != index
            {
                reaches[index].insert(referenced);
            }
        }
    }
    reaches
}

/// Whether each candidate is moved: a root of the move, or reached from one.
fn moved(candidates: &[Candidate], types: &[ObjectType], reaches: &[BTreeSet<usize>]) -> Vec<bool> {
    let mut moved = vec![false; candidates.len()];
    let mut queue: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, candidate)| candidate.is_root(types))
        .map(|(index, _)| index)
        .collect();
    while let Some(index) = queue.pop() {
        if std::mem::replace(&mut moved[index], true) {
            continue;
        }
        queue.extend(reaches[index].iter().copied().filter(|&next| !moved[next]));
    }
    moved
}

/// The owner depth of `index` among the moved objects; an owner cycle counts as no owner.
fn depth(
    index: usize,
    owners: &[BTreeSet<usize>],
    moved: &[bool],
    depths: &mut Vec<Option<usize>>,
    visiting: &mut BTreeSet<usize>,
) -> usize {
    if let Some(depth) = depths[index] {
        return depth;
    }
    if !visiting.insert(index) {
        return 0;
    }
    let mut result = 0;
    for &owner in &owners[index] {
        if moved[owner] && !visiting.contains(&owner) {
            result = result.max(depth(owner, owners, moved, depths, visiting) + 1);
        }
    }
    visiting.remove(&index);
    depths[index] = Some(result);
    result
}

/// An object listed at the source, before the graph decides whether it moves.
struct Candidate {
    key: ObjectKey,
    type_index: usize,
    uid: String,
    owner_uids: Vec<String>,
    labels: BTreeMap<String, String>,
    /// `spec.clusterName`, which Machines, MachineSets, MachineDeployments and
    /// MachineHealthChecks name their Cluster with.
    cluster_name: Option<String>,
    references: Vec<Reference>,
    object: Value,
}

/// An object named from another's spec, in the same namespace.
struct Reference {
    /// Empty when the reference names no group (a Secret by `dataSecretName`).
    group: Option<String>,
    kind: String,
    namespace: String,
    name: String,
}

impl Reference {
    fn matches(&self, key: &ObjectKey) -> bool {
        key.kind == self.kind
            && key.namespace == self.namespace
            && key.name == self.name
            && self.group.as_ref().is_none_or(|group| *group == key.group)
    }
}

impl Candidate {
    fn new(types: &[ObjectType], type_index: usize, object: Value) -> Candidate {
        let object_type = &types[type_index];
        let metadata = &object["metadata"];
        let namespace = metadata["namespace"].as_str().unwrap_or("").to_string();
        let key = ObjectKey {
            group: object_type.group().to_string(),
            kind: object_type.kind().to_string(),
            namespace: namespace.clone(),
            name: metadata["name"].as_str().unwrap_or("").to_string(),
        };
        let owner_uids = metadata["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|owner| owner["uid"].as_str().map(str::to_string))
            .collect();
        let labels = metadata["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
            .collect();
        let mut references = Vec::new();
        collect_references(&object["spec"], &namespace, &mut references);
        let cluster_name = object["spec"]["clusterName"].as_str().map(str::to_string);
        Candidate {
            key,
            type_index,
            uid: metadata["uid"].as_str().unwrap_or("").to_string(),
            owner_uids,
            labels,
            cluster_name,
            references,
            object,
        }
    }

    fn is_cluster(&self) -> bool {
        self.key.kind == "Cluster" && self.key.group == CORE_GROUP
    }

    fn is_root(&self, types: &[ObjectType]) -> bool {
        let object_type = &types[self.type_index];
        self.is_cluster()
            || object_type.move_all
            || object_type.hierarchy_root
            || self
                .labels
                .contains_key(corral_api::labels::CLUSTERCTL_MOVE)
            || self
                .labels
                .contains_key(corral_api::labels::CLUSTERCTL_MOVE_HIERARCHY)
    }

    /// The names of the Clusters that soft-own this object.
    fn soft_owner_clusters<'a>(
        &'a self,
        clusters: &HashMap<(&'a str, &'a str), usize>,
    ) -> Vec<&'a str> {
        let mut names = Vec::new();
        if let Some(name) = self.labels.get(corral_api::labels::CLUSTER_NAME) {
            names.push(name.as_str());
        }
        if let Some(name) = &self.cluster_name {
            names.push(name.as_str());
        }
        if self.key.kind == "Secret" && self.key.group.is_empty() {
            // Upstream's soft ownership: `<cluster>-<suffix>` in the Cluster's namespace.
            for (namespace, cluster) in clusters.keys() {
                if *namespace == self.key.namespace
                    && self
                        .key
                        .name
                        .strip_prefix(cluster)
                        .is_some_and(|rest| rest.starts_with('-'))
                {
                    names.push(cluster);
                }
            }
        }
        names
    }
}

/// Every reference in `spec`: objects with `kind` and `name` (and `apiGroup` or `apiVersion`),
/// as contract references are written, and `dataSecretName`.
fn collect_references(value: &Value, namespace: &str, references: &mut Vec<Reference>) {
    match value {
        Value::Object(fields) => {
            if let (Some(kind), Some(name)) = (
                fields.get("kind").and_then(Value::as_str),
                fields.get("name").and_then(Value::as_str),
            ) {
                let group = fields
                    .get("apiGroup")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| {
                        fields
                            .get("apiVersion")
                            .and_then(Value::as_str)
                            .map(|api_version| {
                                api_version
                                    .rsplit_once('/')
                                    .map(|(group, _)| group.to_string())
                                    .unwrap_or_default()
                            })
                    });
                let referenced_namespace = fields
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(namespace);
                references.push(Reference {
                    group,
                    kind: kind.to_string(),
                    namespace: referenced_namespace.to_string(),
                    name: name.to_string(),
                });
            }
            if let Some(secret) = fields.get("dataSecretName").and_then(Value::as_str) {
                references.push(Reference {
                    group: Some(String::new()),
                    kind: "Secret".into(),
                    namespace: namespace.to_string(),
                    name: secret.to_string(),
                });
            }
            for field in fields.values() {
                collect_references(field, namespace, references);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_references(item, namespace, references);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
