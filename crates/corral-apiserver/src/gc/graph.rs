//! The owner→dependents index, built from watch events, and what each change means for the
//! work queue (kube-controller-manager's GraphBuilder).
//!
//! Only objects the collector may have to act on are nodes: those with ownerReferences, and
//! those being deleted with a collector finalizer. Owners without ownerReferences of their
//! own are known only by uid, as keys of `dependents`. The index answers "which objects refer
//! to this uid" without reading the store; whether an owner exists is always read from the
//! store when it matters, so a lagging index delays work but does not decide it. The one
//! exception saves a read per new dependent: an owner seen written, and not seen deleted since,
//! exists; should it be deleted, its delete event queues the dependent anyway.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::object;
use crate::registry::{Registry, ResourceInfo};

use super::policy::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

/// Where an object lives: enough to read, patch and delete it.
#[derive(Clone, Debug)]
pub struct ObjectRef {
    /// The resource whose storage holds the object (never one `stored_as` another).
    pub resource: Arc<ResourceInfo>,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
}

impl ObjectRef {
    pub fn of(resource: &Arc<ResourceInfo>, object: &Value) -> Option<ObjectRef> {
        let uid = object::uid(object).filter(|uid| !uid.is_empty())?;
        Some(ObjectRef {
            resource: resource.clone(),
            namespace: object::namespace(object).map(str::to_string),
            name: object::name(object)?.to_string(),
            uid: uid.to_string(),
        })
    }

    pub fn key(&self) -> String {
        self.resource.key(self.namespace.as_deref(), &self.name)
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.resource.kind, self.name),
            None => write!(f, "{} {}", self.resource.kind, self.name),
        }
    }
}

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block_owner_deletion: bool,
}

impl OwnerRef {
    pub fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map(|(group, _)| group)
            .unwrap_or("")
    }
}

/// The ownerReferences of an object; entries without a uid refer to nothing and are skipped,
/// and a uid listed twice counts once.
pub fn owner_references(object: &Value) -> Vec<OwnerRef> {
    let Some(list) = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let mut owners: Vec<OwnerRef> = Vec::new();
    for entry in list {
        let text = |field: &str| entry.get(field).and_then(Value::as_str).unwrap_or("");
        let uid = text("uid");
        if uid.is_empty() || owners.iter().any(|o| o.uid == uid) {
            continue;
        }
        owners.push(OwnerRef {
            api_version: text("apiVersion").to_string(),
            kind: text("kind").to_string(),
            name: text("name").to_string(),
            uid: uid.to_string(),
            block_owner_deletion: entry
                .get("blockOwnerDeletion")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        });
    }
    owners
}

/// Where the owner an ownerReference names would be stored.
pub enum OwnerLocation {
    Found {
        key: String,
    },
    /// No served resource has that group and kind (yet): nothing can be decided.
    UnknownKind,
    /// A cluster-scoped object names a namespaced owner, which cannot be resolved.
    NamespacedOwnerOfClusterScoped,
}

/// Resolves an ownerReference of `dependent`: a namespaced owner is in the dependent's
/// namespace; any version of the group and kind will do, since they share one storage.
pub fn locate_owner(registry: &Registry, dependent: &ObjectRef, owner: &OwnerRef) -> OwnerLocation {
    let Some(resource) = registry.find_kind(owner.group(), &owner.kind) else {
        return OwnerLocation::UnknownKind;
    };
    let namespace = match (&dependent.namespace, resource.namespaced) {
        (_, false) => None,
        (Some(namespace), true) => Some(namespace.as_str()),
        (None, true) => return OwnerLocation::NamespacedOwnerOfClusterScoped,
    };
    OwnerLocation::Found {
        key: resource.key(namespace, &owner.name),
    }
}

/// A hash of an object's identity: its uid and storage key.
pub fn identity_hash(uid: &str, key: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    uid.hash(&mut hasher);
    key.hash(&mut hasher);
    hasher.finish()
}

/// A set of hashes that forgets its oldest entries beyond a capacity.
#[derive(Debug)]
pub struct BoundedSet {
    set: HashSet<u64>,
    order: VecDeque<u64>,
    capacity: usize,
}

impl BoundedSet {
    pub fn new(capacity: usize) -> BoundedSet {
        BoundedSet {
            set: HashSet::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    pub fn contains(&self, hash: u64) -> bool {
        self.set.contains(&hash)
    }

    pub fn insert(&mut self, hash: u64) {
        if self.set.insert(hash) {
            self.order.push_back(hash);
        }
        while self.order.len() > self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
    }

    /// Removes `hash`; its place in the order is freed when it comes up.
    pub fn remove(&mut self, hash: u64) {
        self.set.remove(&hash);
    }

    pub fn clear(&mut self) {
        self.set.clear();
        self.order.clear();
    }
}

/// Objects seen written and not seen deleted since, for the new-owner check.
const SEEN_ALIVE: usize = 65_536;

/// Where a dependent's owner would be stored (see [`locate_owner`]); `None` if unknown.
pub type OwnerKey<'a> = &'a dyn Fn(&ObjectRef, &OwnerRef) -> Option<String>;

/// An object the collector may have to act on.
#[derive(Debug)]
struct Node {
    object: ObjectRef,
    owners: Vec<OwnerRef>,
    being_deleted: bool,
    /// Being deleted with the `foregroundDeletion` finalizer.
    deleting_dependents: bool,
    /// Being deleted with the `orphan` finalizer.
    orphaning: bool,
    /// When the index first saw the object deleting its dependents or orphaning them.
    deletion_seen: Option<Instant>,
}

impl Node {
    fn of(resource: &Arc<ResourceInfo>, value: &Value) -> Option<Node> {
        let object = ObjectRef::of(resource, value)?;
        let being_deleted = object::deletion_timestamp(value).is_some();
        let finalizers = object::finalizers(value);
        let has = |name: &str| being_deleted && finalizers.iter().any(|f| f == name);
        Some(Node {
            object,
            owners: owner_references(value),
            being_deleted,
            deleting_dependents: has(FOREGROUND_FINALIZER),
            orphaning: has(ORPHAN_FINALIZER),
            deletion_seen: None,
        })
    }

    fn is_tracked(&self) -> bool {
        !self.owners.is_empty() || self.deleting_dependents || self.orphaning
    }
}

/// A dependent as an owner being deleted in the foreground sees it.
#[derive(Clone, Debug)]
pub struct Dependent {
    pub object: ObjectRef,
    /// Its ownerReference to the owner has `blockOwnerDeletion: true`.
    pub blocks: bool,
    pub deleting_dependents: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    /// Owner uid → uids of the nodes whose ownerReferences name it.
    dependents: HashMap<String, HashSet<String>>,
    /// `identity_hash` of objects seen written and not seen deleted since.
    alive: BoundedSet,
}

impl Default for Graph {
    fn default() -> Self {
        Graph {
            nodes: HashMap::new(),
            dependents: HashMap::new(),
            alive: BoundedSet::new(SEEN_ALIVE),
        }
    }
}

impl Graph {
    /// Records the current state of an object and returns the objects to look at because of
    /// the change. With `check_new_owners`, an object with a new ownerReference is queued
    /// unless the owner is known to exist, so that an owner that does not is noticed; without,
    /// owners are checked in bulk after the first listing (see `mod.rs`).
    pub fn observe(
        &mut self,
        resource: &Arc<ResourceInfo>,
        value: &Value,
        check_new_owners: Option<OwnerKey<'_>>,
    ) -> Vec<ObjectRef> {
        if let Some(uid) = Self::untracked_and_unknown(value, &self.nodes) {
            // Most objects: no owner, not being deleted, and no node from an earlier
            // version. The general path below would only record it as alive, after building
            // its node (four copies of its names) to find that out.
            if let Some(name) = object::name(value) {
                let key = resource.key(object::namespace(value), name);
                self.alive.insert(identity_hash(uid, &key));
            }
            return Vec::new();
        }
        let Some(mut node) = Node::of(resource, value) else {
            return Vec::new();
        };
        let uid = node.object.uid.clone();
        self.alive.insert(identity_hash(&uid, &node.object.key()));
        let old = self.nodes.remove(&uid);
        if node.deleting_dependents || node.orphaning {
            let seen = old.as_ref().and_then(|n| n.deletion_seen);
            node.deletion_seen = Some(seen.unwrap_or_else(Instant::now));
        }
        let mut work = Vec::new();
        let old_owners = old.as_ref().map(|n| n.owners.as_slice()).unwrap_or(&[]);
        for before in old_owners {
            let after = node.owners.iter().find(|o| o.uid == before.uid);
            if after.is_none() {
                self.unlink(&before.uid, &uid);
            }
            // An owner waiting for its blocking dependents may be free to go now.
            let unblocked =
                before.block_owner_deletion && after.is_none_or(|a| !a.block_owner_deletion);
            if unblocked {
                work.extend(self.deleting_dependents(&before.uid));
            }
        }
        let mut unverified_owner = false;
        for owner in &node.owners {
            if old_owners.iter().any(|o| o.uid == owner.uid) {
                continue;
            }
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(uid.clone());
            let alive = check_new_owners
                .and_then(|owner_key| owner_key(&node.object, owner))
                .is_some_and(|key| self.alive.contains(identity_hash(&owner.uid, &key)));
            // An owner waiting for its dependents waits for this one too: delete it.
            let waiting = self.deleting_dependents(&owner.uid).is_some();
            unverified_owner |= !alive || waiting;
        }
        if unverified_owner && check_new_owners.is_some() && !node.being_deleted {
            work.push(node.object.clone());
        }
        let was_deleting_dependents = old.as_ref().is_some_and(|n| n.deleting_dependents);
        if node.deleting_dependents && !was_deleting_dependents {
            work.push(node.object.clone());
            work.extend(self.dependents_of(&uid).into_iter().map(|d| d.object));
        }
        let was_orphaning = old.as_ref().is_some_and(|n| n.orphaning);
        if node.orphaning && !was_orphaning {
            work.push(node.object.clone());
        }
        if node.is_tracked() {
            self.nodes.insert(uid, node);
        }
        work
    }

    /// The uid of an object that `observe` would neither make a node of nor act on: one with
    /// no ownerReferences and no deletionTimestamp (so neither deleting its dependents nor
    /// orphaning them), and no node from an earlier version whose owners it would drop.
    fn untracked_and_unknown<'v>(
        value: &'v Value,
        nodes: &HashMap<String, Node>,
    ) -> Option<&'v str> {
        let uid = object::uid(value).filter(|uid| !uid.is_empty())?;
        let has_owners = value
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|owners| !owners.is_empty());
        let untracked = !has_owners && object::deletion_timestamp(value).is_none();
        (untracked && !nodes.contains_key(uid)).then_some(uid)
    }

    /// Records that an object is gone and returns the objects to look at: its dependents
    /// (their owner is gone) and its owners that wait for their dependents.
    pub fn observe_deleted(
        &mut self,
        resource: &Arc<ResourceInfo>,
        value: &Value,
    ) -> Vec<ObjectRef> {
        let Some(object) = ObjectRef::of(resource, value) else {
            return Vec::new();
        };
        self.alive.remove(identity_hash(&object.uid, &object.key()));
        self.forget(&object.uid)
    }

    /// Forgets every node of a resource that is no longer served; its objects are gone.
    pub fn forget_resource(&mut self, key_prefix: &str) -> Vec<ObjectRef> {
        // Its objects went without delete events.
        self.alive.clear();
        let uids: Vec<String> = self
            .nodes
            .values()
            .filter(|n| n.object.resource.key_prefix() == key_prefix)
            .map(|n| n.object.uid.clone())
            .collect();
        uids.iter().flat_map(|uid| self.forget(uid)).collect()
    }

    /// After a relisting of a resource: forgets its nodes that the listing did not contain,
    /// and returns those objects' dependents and waiting owners, plus every node that refers
    /// to an owner of this resource (one may have gone while the resource was not watched).
    pub fn reconcile_listing(
        &mut self,
        resource: &Arc<ResourceInfo>,
        listed: &HashSet<String>,
    ) -> Vec<ObjectRef> {
        // Deletions while the resource was not watched went unseen.
        self.alive.clear();
        let prefix = resource.key_prefix();
        let missing: Vec<String> = self
            .nodes
            .values()
            .filter(|n| n.object.resource.key_prefix() == prefix && !listed.contains(&n.object.uid))
            .map(|n| n.object.uid.clone())
            .collect();
        let mut work: Vec<ObjectRef> = missing.iter().flat_map(|uid| self.forget(uid)).collect();
        work.extend(
            self.nodes
                .values()
                .filter(|n| {
                    n.owners
                        .iter()
                        .any(|o| o.group() == resource.group && o.kind == resource.kind)
                })
                .map(|n| n.object.clone()),
        );
        work
    }

    fn forget(&mut self, uid: &str) -> Vec<ObjectRef> {
        let mut work = Vec::new();
        if let Some(node) = self.nodes.remove(uid) {
            for owner in &node.owners {
                self.unlink(&owner.uid, uid);
                work.extend(self.deleting_dependents(&owner.uid));
            }
        }
        work.extend(self.dependents_of(uid).into_iter().map(|d| d.object));
        work
    }

    fn unlink(&mut self, owner: &str, dependent: &str) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(dependent);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    /// The owner, if it is a node deleting its dependents in the foreground.
    fn deleting_dependents(&self, uid: &str) -> Option<ObjectRef> {
        self.nodes
            .get(uid)
            .filter(|n| n.deleting_dependents)
            .map(|n| n.object.clone())
    }

    /// The nodes that name `owner` in their ownerReferences.
    pub fn dependents_of(&self, owner: &str) -> Vec<Dependent> {
        let Some(uids) = self.dependents.get(owner) else {
            return Vec::new();
        };
        uids.iter()
            .filter_map(|uid| self.nodes.get(uid))
            .map(|node| Dependent {
                object: node.object.clone(),
                blocks: node
                    .owners
                    .iter()
                    .any(|o| o.uid == owner && o.block_owner_deletion),
                deleting_dependents: node.deleting_dependents,
            })
            .collect()
    }

    /// Whether the index saw `owner` start deleting or orphaning its dependents at least
    /// `grace` ago.
    pub fn deletion_seen_before(&self, owner: &str, grace: Duration) -> bool {
        self.nodes
            .get(owner)
            .and_then(|n| n.deletion_seen)
            .is_some_and(|seen| seen.elapsed() >= grace)
    }

    pub fn has_dependents(&self, owner: &str) -> bool {
        self.dependents
            .get(owner)
            .is_some_and(|set| !set.is_empty())
    }

    /// Every node with ownerReferences, with them (for the check after the first listing).
    pub fn dependents_with_owners(&self) -> Vec<(ObjectRef, Vec<OwnerRef>)> {
        self.nodes
            .values()
            .filter(|n| !n.owners.is_empty() && !n.being_deleted)
            .map(|n| (n.object.clone(), n.owners.clone()))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }
}
