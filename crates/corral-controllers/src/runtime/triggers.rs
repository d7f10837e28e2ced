//! What feeds a controller's queue besides its own objects: watches of provider objects whose
//! kinds are only known at runtime (upstream's `external.ObjectTracker`), and requests sent by
//! other parts of the process, such as the cluster cache when a workload cluster's Node changes.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use tokio::task::JoinHandle;

use crate::external::{ExternalObjects, ResolvedKind};

/// A task that is aborted when its handle is dropped.
#[derive(Debug)]
pub(crate) struct AbortOnDrop(pub(crate) JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sends requests to reconcile objects of `K` into a controller's queue.
pub struct Triggers<K: Resource> {
    sender: mpsc::UnboundedSender<ObjectRef<K>>,
}

impl<K: Resource> Clone for Triggers<K> {
    fn clone(&self) -> Self {
        Triggers {
            sender: self.sender.clone(),
        }
    }
}

impl<K> Triggers<K>
where
    K: Resource<DynamicType = ()>,
{
    /// A sender and the stream of what it sends, for the controller's queue.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<ObjectRef<K>>) {
        let (sender, receiver) = mpsc::unbounded();
        (Triggers { sender }, receiver)
    }

    /// Asks for the object to be reconciled. Does nothing once the controller has stopped.
    pub fn reconcile(&self, object: ObjectRef<K>) {
        let _ = self.sender.unbounded_send(object);
    }
}

/// Identifies a provider object: API group, kind, namespace, name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReferencedObject {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// Watches of provider kinds for one controller of `K` (Clusters, Machines): any event on a
/// provider object requests a reconcile of the objects of `K` that own it (owner references of
/// kind `K`) or that reference it (recorded with [`ExternalWatches::track`], which covers the
/// time before the owner reference is set, such as an infrastructure object created after its
/// Cluster).
///
/// The watches themselves are the process-wide ones of [`ExternalObjects`]; this subscribes to
/// each kind the first time a reference to it resolves, and stops when dropped.
pub struct ExternalWatches<K>
where
    K: Resource<DynamicType = ()>,
    ObjectRef<K>: Hash + Eq,
{
    external: Arc<ExternalObjects>,
    triggers: Triggers<K>,
    watched: Mutex<HashMap<(String, String), AbortOnDrop>>,
    referrers: Arc<Mutex<HashMap<ReferencedObject, HashSet<ObjectRef<K>>>>>,
}

impl<K> ExternalWatches<K>
where
    K: Resource<DynamicType = ()> + 'static,
    ObjectRef<K>: Hash + Eq + Clone + Send + Sync,
{
    /// Watches through `external` that send into `triggers`.
    pub fn new(external: Arc<ExternalObjects>, triggers: Triggers<K>) -> Self {
        ExternalWatches {
            external,
            triggers,
            watched: Mutex::new(HashMap::new()),
            referrers: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Records that `referrer` references `object`, so that events on it reconcile `referrer`.
    pub fn track(&self, object: ReferencedObject, referrer: ObjectRef<K>) {
        let mut referrers = self.referrers.lock().expect("referrers lock");
        referrers.entry(object).or_default().insert(referrer);
    }

    /// Forgets what `referrer` referenced, once it is gone.
    pub fn forget(&self, referrer: &ObjectRef<K>) {
        let mut referrers = self.referrers.lock().expect("referrers lock");
        referrers.retain(|_, set| {
            set.remove(referrer);
            !set.is_empty()
        });
    }

    /// Starts following a kind, unless already followed.
    pub fn watch(&self, kind: &ResolvedKind) {
        let key = (kind.resource.group.clone(), kind.resource.kind.clone());
        let mut watched = self.watched.lock().expect("watched lock");
        if watched.contains_key(&key) {
            return;
        }
        let mut events = self.external.subscribe(kind);
        let triggers = self.triggers.clone();
        let referrers = self.referrers.clone();
        let group = kind.resource.group.clone();
        let resource_kind = kind.resource.kind.clone();
        let task = tokio::spawn(async move {
            while let Some(object) = events.next().await {
                let namespace = object.namespace().unwrap_or_default();
                let mut targets: HashSet<ObjectRef<K>> = object
                    .owner_references()
                    .iter()
                    .filter(|owner| {
                        owner.kind == K::kind(&())
                            && owner.api_version.split('/').next() == Some(&*K::group(&()))
                    })
                    .map(|owner| ObjectRef::new(&owner.name).within(&namespace))
                    .collect();
                let key = ReferencedObject {
                    group: group.clone(),
                    kind: resource_kind.clone(),
                    namespace,
                    name: object.name_any(),
                };
                if let Some(set) = referrers.lock().expect("referrers lock").get(&key) {
                    targets.extend(set.iter().cloned());
                }
                for target in targets {
                    triggers.reconcile(target);
                }
            }
        });
        watched.insert(key, AbortOnDrop(task));
    }
}
