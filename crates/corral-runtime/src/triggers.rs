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
    referrers: Arc<Mutex<Referrers<K>>>,
}

/// Who references what, both ways, so that forgetting a referrer costs what it referenced,
/// not a scan of every reference.
struct Referrers<K: Resource> {
    of_object: HashMap<ReferencedObject, HashSet<ObjectRef<K>>>,
    of_referrer: HashMap<ObjectRef<K>, HashSet<ReferencedObject>>,
}

impl<K: Resource> Referrers<K>
where
    ObjectRef<K>: Hash + Eq + Clone,
{
    fn track(&mut self, object: ReferencedObject, referrer: ObjectRef<K>) {
        self.of_referrer
            .entry(referrer.clone())
            .or_default()
            .insert(object.clone());
        self.of_object.entry(object).or_default().insert(referrer);
    }

    fn forget(&mut self, referrer: &ObjectRef<K>) {
        let Some(objects) = self.of_referrer.remove(referrer) else {
            return;
        };
        for object in objects {
            if let Some(set) = self.of_object.get_mut(&object) {
                set.remove(referrer);
                if set.is_empty() {
                    self.of_object.remove(&object);
                }
            }
        }
    }
}

impl<K: Resource> Default for Referrers<K> {
    fn default() -> Self {
        Referrers {
            of_object: HashMap::new(),
            of_referrer: HashMap::new(),
        }
    }
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
            referrers: Arc::new(Mutex::new(Referrers::default())),
        }
    }

    /// Records that `referrer` references `object`, so that events on it reconcile `referrer`.
    pub fn track(&self, object: ReferencedObject, referrer: ObjectRef<K>) {
        self.referrers
            .lock()
            .expect("referrers lock")
            .track(object, referrer);
    }

    /// Forgets what `referrer` referenced, once it is gone.
    pub fn forget(&self, referrer: &ObjectRef<K>) {
        self.referrers
            .lock()
            .expect("referrers lock")
            .forget(referrer);
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
                if let Some(set) = referrers
                    .lock()
                    .expect("referrers lock")
                    .of_object
                    .get(&key)
                {
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

#[cfg(test)]
mod tests {
    use super::*;
    use corral_api::Machine;

    fn object(name: &str) -> ReferencedObject {
        ReferencedObject {
            group: "infrastructure.cluster.x-k8s.io".into(),
            kind: "DevMachine".into(),
            namespace: "default".into(),
            name: name.into(),
        }
    }

    #[test]
    fn forgetting_a_referrer_removes_it_from_every_object_it_referenced_and_only_it() {
        let mut referrers = Referrers::<Machine>::default();
        let (m1, m2) = (
            ObjectRef::new("m1").within("default"),
            ObjectRef::new("m2").within("default"),
        );
        referrers.track(object("a"), m1.clone());
        referrers.track(object("b"), m1.clone());
        referrers.track(object("a"), m2.clone());
        referrers.forget(&m1);
        assert_eq!(
            referrers.of_object.get(&object("a")),
            Some(&HashSet::from([m2.clone()]))
        );
        assert!(!referrers.of_object.contains_key(&object("b")));
        assert!(!referrers.of_referrer.contains_key(&m1));
        referrers.forget(&m2);
        assert!(referrers.of_object.is_empty() && referrers.of_referrer.is_empty());
        // Forgetting what was never tracked changes nothing.
        referrers.forget(&m1);
        assert!(referrers.of_object.is_empty());
    }
}
