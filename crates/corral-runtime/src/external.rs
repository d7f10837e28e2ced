//! Provider objects (infrastructure, bootstrap, control plane, and their templates), read and
//! written as unstructured [`DynamicObject`]s from a [`ContractVersionedObjectReference`]
//! (upstream `controllers/external`).
//!
//! A reference names an API group, a kind and a name, in the referrer's namespace, but no
//! version. [`ExternalObjects::resolve`] finds the resource (its plural) by API discovery and
//! the version to use from the contract label on the kind's CRD
//! (`cluster.x-k8s.io/v1beta2: v1beta2`), as upstream's `GetObjectFromContractVersionedRef`
//! does; resolutions are cached for [`KIND_CACHE_TTL`]. A kind no API serves is
//! [`Error::FindKind`], which callers turn into a condition that names it.
//!
//! Each provider kind in use is watched once for the whole process: the watch keeps a cache
//! ([`ExternalObjects::get_cached`]) and tells subscribers ([`ExternalObjects::subscribe`]) about
//! every change, which is how a Cluster or Machine is reconciled when its provider objects
//! change. [`ExternalObjects::get`] and everything that deletes read the API server itself.
//!
//! Controllers read fields through the contract views of [`corral_api::contract`]
//! ([`ExternalObject::infrastructure_cluster`] and friends), never through provider types.
//! Writes are merge patches with the read resourceVersion as precondition, sent only when
//! something changed.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt, TryStreamExt};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};

use corral_api::ContractVersionedObjectReference;
use corral_api::annotations::{TEMPLATE_CLONED_FROM_GROUP_KIND, TEMPLATE_CLONED_FROM_NAME};
use corral_api::contract::{
    BootstrapConfig, ContractError, ContractVersion, ControlPlane, InfrastructureCluster,
    InfrastructureMachine, ProviderCondition,
};
use corral_api::labels::CLUSTER_NAME;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference, Time};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::core::{Selector, SelectorExt};
use kube::discovery;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::lean::Lean;
use crate::patch::{Part, object_patch, patch_if_changed};
use crate::triggers::AbortOnDrop;

#[cfg(test)]
mod tests;

/// How long a resolved kind is reused before discovery runs again (so that a provider upgrade
/// that moves its CRD to a new contract version is picked up).
pub const KIND_CACHE_TTL: Duration = Duration::from_secs(60);

/// A provider kind as resolved: where it is served and which contract it implements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedKind {
    /// The group, version (from the contract label), kind and plural.
    pub resource: ApiResource,
    /// The contract the kind implements.
    pub contract: ContractVersion,
}

/// A provider object as read.
#[derive(Clone, Debug)]
pub struct ExternalObject {
    /// The object.
    pub object: DynamicObject,
    /// Its kind.
    pub kind: ResolvedKind,
}

impl ExternalObject {
    /// The object as an infrastructure cluster.
    pub fn infrastructure_cluster(&self) -> InfrastructureCluster<&Value> {
        InfrastructureCluster::new(&self.object.data, self.kind.contract)
    }

    /// The object as an infrastructure machine.
    pub fn infrastructure_machine(&self) -> InfrastructureMachine<&Value> {
        InfrastructureMachine::new(&self.object.data, self.kind.contract)
    }

    /// The object as a bootstrap config.
    pub fn bootstrap_config(&self) -> BootstrapConfig<&Value> {
        BootstrapConfig::new(&self.object.data, self.kind.contract)
    }

    /// The object as a control plane.
    pub fn control_plane(&self) -> ControlPlane<&Value> {
        ControlPlane::new(&self.object.data, self.kind.contract)
    }

    /// Whether the object is being deleted.
    pub fn is_deleting(&self) -> bool {
        self.object.metadata.deletion_timestamp.is_some()
    }

    /// The object's name.
    pub fn name(&self) -> String {
        self.object.name_any()
    }

    /// The object's `status.conditions` that have a type and a status, as conditions; for
    /// aggregating them. Missing reasons read as [`crate::conditions::NO_REASON_REPORTED`].
    pub fn conditions(&self) -> Vec<Condition> {
        let Some(list) = self
            .object
            .data
            .get("status")
            .and_then(|status| status.get("conditions"))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        list.iter()
            .filter_map(|item| serde_json::from_value::<ProviderCondition>(item.clone()).ok())
            .map(|condition| Condition {
                type_: condition.type_,
                status: condition.status,
                reason: condition
                    .reason
                    .filter(|reason| !reason.is_empty())
                    .unwrap_or_else(|| crate::conditions::NO_REASON_REPORTED.to_owned()),
                message: condition.message.unwrap_or_default(),
                last_transition_time: condition
                    .last_transition_time
                    .unwrap_or(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                observed_generation: condition.observed_generation,
            })
            .collect()
    }
}

/// What the reconcile learned of a provider object a Cluster or Machine references.
#[derive(Clone, Debug)]
pub enum Observed {
    /// It was read. `condition` is its Ready (infrastructure, bootstrap) or Available (control plane)
    /// condition, or why that condition is unusable.
    Found {
        /// The provider's condition, if it reports one.
        condition: Result<Option<ProviderCondition>, String>,
    },
    /// It does not exist.
    NotFound,
    /// It could not be read; the message says why (such as its kind not being installed).
    Failed(String),
}

/// A failed operation on a provider object.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No API serves the kind: its provider is not installed (or not yet).
    #[error(
        "{kind}.{group} is not installed: the API server does not serve this kind; install its provider"
    )]
    FindKind {
        /// The API group.
        group: String,
        /// The kind.
        kind: String,
    },
    /// API discovery failed.
    #[error("cannot discover the API group {group}")]
    DiscoverGroup {
        /// The API group.
        group: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The kind's CRD could not be read.
    #[error("cannot read the CRD {name}")]
    GetCrd {
        /// The CRD's name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The kind's CRD has no usable contract label.
    #[error("cannot tell which contract {kind}.{group} implements from its CRD {name}")]
    ReadContractVersion {
        /// The API group.
        group: String,
        /// The kind.
        kind: String,
        /// The CRD's name.
        name: String,
        /// What is wrong.
        #[source]
        source: ContractError,
    },
    /// The contract label names a version the API server does not serve.
    #[error(
        "the CRD {name} says version {version} of {kind} implements the contract, but that version is not served"
    )]
    FindVersion {
        /// The kind.
        kind: String,
        /// The CRD's name.
        name: String,
        /// The version from the label.
        version: String,
    },
    /// Reading the object failed.
    #[error("cannot get {kind} {namespace}/{name}")]
    Get {
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Writing the object failed.
    #[error("cannot patch {kind} {namespace}/{name}")]
    Patch {
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Deleting the object failed.
    #[error("cannot delete {kind} {namespace}/{name}")]
    Delete {
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Another object already controls the object.
    #[error("cannot take ownership of {kind} {namespace}/{name}: it is controlled by {owner}")]
    SetControllerReference {
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// The controller, as `Kind name`.
        owner: String,
    },
    /// A template's kind does not end in `Template`.
    #[error("{kind} is not a template kind: its name does not end in Template")]
    TemplateKind {
        /// The kind.
        kind: String,
    },
    /// A template has no `spec.template`.
    #[error("{kind} {namespace}/{name} has no spec.template")]
    ReadTemplate {
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
    },
    /// A template does not exist.
    #[error("{kind} {namespace}/{name} does not exist")]
    FindTemplate {
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
    },
    /// Creating an object from a template failed.
    #[error("cannot create {kind} {namespace}/{name}")]
    CreateFromTemplate {
        /// The kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// Whether the kind is not installed: the reference names a kind no API serves.
    pub fn is_kind_not_installed(&self) -> bool {
        matches!(self, Error::FindKind { .. })
    }

    /// Whether a create failed because an object of that name exists.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::CreateFromTemplate { source: kube::Error::Api(status), .. } if status.is_already_exists())
    }

    /// Whether a write lost a race with another writer.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Patch { source: kube::Error::Api(status), .. } if status.is_conflict())
    }
}

/// Reads and writes provider objects; resolves and caches their kinds; keeps one watch (and
/// cache) per provider kind for the whole process.
pub struct ExternalObjects {
    client: Client,
    kinds: RwLock<HashMap<(String, String), (ResolvedKind, Instant)>>,
    informers: Mutex<HashMap<(String, String), Arc<Informer>>>,
}

/// The watch of one provider kind: a cache of its objects, and who to tell about changes.
struct Informer {
    resource: ApiResource,
    store: Store<DynamicObject>,
    subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<Arc<DynamicObject>>>>>,
    _task: AbortOnDrop,
}

impl ExternalObjects {
    /// Provider objects through `client`.
    pub fn new(client: Client) -> Self {
        ExternalObjects {
            client,
            kinds: RwLock::new(HashMap::new()),
            informers: Mutex::new(HashMap::new()),
        }
    }

    /// The watch of a kind, started on first use.
    fn informer(&self, kind: &ResolvedKind) -> Arc<Informer> {
        let key = (kind.resource.group.clone(), kind.resource.kind.clone());
        let mut informers = self.informers.lock().expect("informers lock");
        if let Some(informer) = informers.get(&key)
            && informer.resource == kind.resource
        {
            return informer.clone();
        }
        tracing::debug!(kind = %kind.resource.kind, group = %kind.resource.group, "Watching provider kind");
        // Decoded without the managedFields no controller reads (see `lean`).
        let api: Api<Lean<DynamicObject>> = Api::all_with(self.client.clone(), &kind.resource);
        let writer = reflector::store::Writer::new(kind.resource.clone());
        let store = writer.as_reader();
        let subscribers: Arc<Mutex<Vec<mpsc::UnboundedSender<Arc<DynamicObject>>>>> =
            Arc::default();
        let tell = subscribers.clone();
        let resource_kind = kind.resource.kind.clone();
        let task = tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .map_ok(crate::lean::unwrap_event)
                .modify(|object| crate::shared::trim_managed_fields(object, &[]))
                .reflect(writer)
                .touched_objects()
                .boxed();
            while let Some(event) = events.next().await {
                match event {
                    Ok(object) => {
                        // Shared, not copied for each subscriber.
                        let object = Arc::new(object);
                        let mut subscribers = tell.lock().expect("subscribers lock");
                        subscribers.retain(|s| s.unbounded_send(object.clone()).is_ok());
                    }
                    Err(error) => {
                        tracing::debug!(%error, kind = %resource_kind, "Provider kind watch failed, retrying");
                    }
                }
            }
        });
        let informer = Arc::new(Informer {
            resource: kind.resource.clone(),
            store,
            subscribers,
            _task: AbortOnDrop(task),
        });
        informers.insert(key, informer.clone());
        informer
    }

    /// Every change of an object of the kind from now on, for as long as the receiver lives.
    pub fn subscribe(&self, kind: &ResolvedKind) -> mpsc::UnboundedReceiver<Arc<DynamicObject>> {
        let (sender, receiver) = mpsc::unbounded();
        let informer = self.informer(kind);
        informer
            .subscribers
            .lock()
            .expect("subscribers lock")
            .push(sender);
        receiver
    }

    /// Reads the object a reference names from the kind's cache, which lags the API server a
    /// little: for decisions a later watch event corrects, as upstream reads through its
    /// informers. Falls back to [`ExternalObjects::get`] until the cache is filled.
    pub async fn get_cached(
        &self,
        reference: &ContractVersionedObjectReference,
        namespace: &str,
    ) -> Result<Option<ExternalObject>, Error> {
        let kind = self.resolve(&reference.api_group, &reference.kind).await?;
        let informer = self.informer(&kind);
        if informer.store.wait_until_ready().now_or_never().is_none() {
            return self.get(reference, namespace).await;
        }
        let key = ObjectRef::new_with(&reference.name, kind.resource.clone()).within(namespace);
        Ok(informer.store.get(&key).map(|object| ExternalObject {
            object: (*object).clone(),
            kind,
        }))
    }

    /// The objects of a kind in `namespace` that `selector` selects, from the kind's cache,
    /// which lags the API server a little (see [`ExternalObjects::get_cached`]); listed
    /// through the API until the cache is filled. A list through the API reads and decodes
    /// every object of the kind in the namespace from the store to select a few; the cache is
    /// passed over in memory, without decoding anything, which a controller can afford once
    /// per object it reconciles.
    pub async fn list_cached(
        &self,
        kind: &ResolvedKind,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Arc<DynamicObject>>, kube::Error> {
        let informer = self.informer(kind);
        if informer.store.wait_until_ready().now_or_never().is_some() {
            let no_labels = BTreeMap::new();
            return Ok(informer
                .store
                .state()
                .into_iter()
                .filter(|object| {
                    object.metadata.namespace.as_deref() == Some(namespace)
                        && selector.matches(object.metadata.labels.as_ref().unwrap_or(&no_labels))
                })
                .collect());
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &kind.resource);
        let listed = api
            .list(&ListParams::default().labels(&selector.to_string()))
            .await?;
        Ok(listed.items.into_iter().map(Arc::new).collect())
    }

    /// Where a kind is served and which contract it implements.
    pub async fn resolve(&self, group: &str, kind: &str) -> Result<ResolvedKind, Error> {
        let key = (group.to_owned(), kind.to_owned());
        if let Some((resolved, at)) = self.kinds.read().expect("kinds lock").get(&key)
            && at.elapsed() < KIND_CACHE_TTL
        {
            return Ok(resolved.clone());
        }
        let resolved = self.discover(group, kind).await?;
        self.kinds
            .write()
            .expect("kinds lock")
            .insert(key, (resolved.clone(), Instant::now()));
        Ok(resolved)
    }

    async fn discover(&self, group: &str, kind: &str) -> Result<ResolvedKind, Error> {
        let find_kind = || Error::FindKind {
            group: group.to_owned(),
            kind: kind.to_owned(),
        };
        let api_group = match discovery::group(&self.client, group).await {
            Ok(api_group) => api_group,
            Err(kube::Error::Discovery(_)) => return Err(find_kind()),
            Err(kube::Error::Api(status)) if status.is_not_found() => return Err(find_kind()),
            Err(source) => {
                return Err(Error::DiscoverGroup {
                    group: group.to_owned(),
                    source,
                });
            }
        };
        let versions: Vec<String> = api_group.versions().map(str::to_owned).collect();
        let plural = versions
            .iter()
            .flat_map(|version| api_group.versioned_resources(version))
            .find(|(resource, _)| resource.kind == kind)
            .map(|(resource, _)| resource.plural)
            .ok_or_else(find_kind)?;
        let crd_name = format!("{plural}.{group}");
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let crd = crds.get(&crd_name).await.map_err(|source| Error::GetCrd {
            name: crd_name.clone(),
            source,
        })?;
        let (contract, version) =
            ContractVersion::from_crd_labels(crd.labels()).map_err(|source| {
                Error::ReadContractVersion {
                    group: group.to_owned(),
                    kind: kind.to_owned(),
                    name: crd_name.clone(),
                    source,
                }
            })?;
        let resource = api_group
            .versioned_resources(&version)
            .into_iter()
            .map(|(resource, _)| resource)
            .find(|resource| resource.kind == kind)
            .ok_or_else(|| Error::FindVersion {
                kind: kind.to_owned(),
                name: crd_name.clone(),
                version: version.clone(),
            })?;
        Ok(ResolvedKind { resource, contract })
    }

    fn api(&self, kind: &ResolvedKind, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &kind.resource)
    }

    /// Reads the object a reference names, in `namespace`, from the API server; `None` when it
    /// does not exist.
    pub async fn get(
        &self,
        reference: &ContractVersionedObjectReference,
        namespace: &str,
    ) -> Result<Option<ExternalObject>, Error> {
        let kind = self.resolve(&reference.api_group, &reference.kind).await?;
        let object = self
            .api(&kind, namespace)
            .get_opt(&reference.name)
            .await
            .map_err(|source| Error::Get {
                kind: reference.kind.clone(),
                namespace: namespace.to_owned(),
                name: reference.name.clone(),
                source,
            })?;
        Ok(object.map(|object| ExternalObject { object, kind }))
    }

    /// Adds `cluster` as an owner (not the controller) of a template the object it names,
    /// read through the kind's cache, when it is not one already: upstream's
    /// `reconcileExternalTemplateReference` (MachineSet, MachineDeployment) and
    /// `reconcileExternalReference` (KubeadmControlPlane), so that the templates a Cluster's
    /// objects clone go with the Cluster. `None` when the object does not exist.
    pub async fn ensure_cluster_owner(
        &self,
        reference: &ContractVersionedObjectReference,
        namespace: &str,
        cluster: &corral_api::Cluster,
    ) -> Result<Option<ExternalObject>, Error> {
        let Some(object) = self.get_cached(reference, namespace).await? else {
            return Ok(None);
        };
        let Some(uid) = cluster.uid() else {
            return Ok(Some(object));
        };
        if object
            .object
            .owner_references()
            .iter()
            .any(|owner| owner.uid == uid)
        {
            return Ok(Some(object));
        }
        let mut after = object.object.clone();
        after
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(OwnerReference {
                api_version: format!("{}/{}", corral_api::GROUP, corral_api::VERSION),
                kind: "Cluster".into(),
                name: cluster.name_any(),
                uid,
                controller: None,
                block_owner_deletion: None,
            });
        self.patch(&object, &after).await?;
        Ok(Some(object))
    }

    /// Writes the object's metadata and spec from `after` when they differ from `before`.
    pub async fn patch(&self, before: &ExternalObject, after: &DynamicObject) -> Result<(), Error> {
        let namespace = before.object.namespace().unwrap_or_default();
        patch_if_changed(
            &self.api(&before.kind, &namespace),
            &before.object,
            after,
            Part::Main,
        )
        .await
        .map_err(|source| Error::Patch {
            kind: before.kind.resource.kind.clone(),
            namespace,
            name: before.name(),
            source,
        })?;
        Ok(())
    }

    /// Makes `owner` an owner of the object and labels it with its cluster's name, writing only
    /// when that changes anything (upstream `ensureOwnerRefAndLabel`,
    /// `ensureExternalOwnershipAndWatch`). Owners whose `(group, kind)` is in `drop_owners` are
    /// removed first: the MachineSet or control plane that created an object for a Machine
    /// hands it over to the Machine. Fails when `owner` should be the controller and another
    /// object already is.
    ///
    /// As upstream's, the write is a merge patch without a resourceVersion precondition: the
    /// object may come from the cache, a little behind, and its provider writes it often; the
    /// labels merge key by key, and the owner list is the one read plus `owner`.
    pub async fn ensure_owner_and_cluster_label(
        &self,
        object: &mut ExternalObject,
        owner: OwnerReference,
        cluster_name: &str,
        drop_owners: &[(&str, &str)],
    ) -> Result<(), Error> {
        let dropped = |existing: &OwnerReference| {
            drop_owners.iter().any(|(group, kind)| {
                existing.kind == *kind && api_group_of(&existing.api_version) == *group
            })
        };
        let same_owner = |existing: &OwnerReference| {
            existing.kind == owner.kind
                && api_group_of(&existing.api_version) == api_group_of(&owner.api_version)
                && existing.name == owner.name
        };
        // Almost always both are in place already: say so without copying the object.
        let current = object.object.owner_references();
        let in_place = current.iter().find(|existing| same_owner(existing)) == Some(&owner)
            && !current.iter().any(|existing| {
                dropped(existing)
                    || (owner.controller == Some(true)
                        && existing.controller == Some(true)
                        && !same_owner(existing))
            })
            && object.object.labels().get(CLUSTER_NAME).map(String::as_str) == Some(cluster_name);
        if in_place {
            return Ok(());
        }
        let mut after = object.object.clone();
        let mut owners = after.metadata.owner_references.take().unwrap_or_default();
        owners.retain(|existing| !dropped(existing));
        if owner.controller == Some(true)
            && let Some(other) = owners
                .iter()
                .find(|existing| existing.controller == Some(true) && !same_owner(existing))
        {
            return Err(Error::SetControllerReference {
                kind: object.kind.resource.kind.clone(),
                namespace: object.object.namespace().unwrap_or_default(),
                name: object.name(),
                owner: format!("{} {}", other.kind, other.name),
            });
        }
        match owners.iter_mut().find(|existing| same_owner(existing)) {
            Some(existing) => *existing = owner,
            None => owners.push(owner),
        }
        after.metadata.owner_references = Some(owners);
        after
            .labels_mut()
            .insert(CLUSTER_NAME.to_owned(), cluster_name.to_owned());
        let namespace = object.object.namespace().unwrap_or_default();
        if let Some(mut patch) = object_patch(&object.object, &after, Part::Main) {
            if let Some(metadata) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("resourceVersion");
            }
            if patch
                .get("metadata")
                .is_some_and(|m| m.as_object().is_some_and(|m| m.is_empty()))
            {
                return Ok(());
            }
            self.api(&object.kind, &namespace)
                .patch(
                    &object.name(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(|source| Error::Patch {
                    kind: object.kind.resource.kind.clone(),
                    namespace,
                    name: object.name(),
                    source,
                })?;
        }
        object.object = after;
        Ok(())
    }

    /// Deletes the object a reference names unless it is already being deleted; returns
    /// whether it is gone.
    ///
    /// Read through the kind's cache, as upstream's `reconcileDeleteExternal` reads through
    /// its client's: a deletion asks again on every event of the object until it is gone, and
    /// a GET each time was a request per event. Only an object the cache does not show is
    /// looked up on the API server, so that a cache a little behind never has an object that
    /// exists taken for gone. The answer to the DELETE (the whole object) is not decoded.
    pub async fn delete(
        &self,
        reference: &ContractVersionedObjectReference,
        namespace: &str,
    ) -> Result<bool, Error> {
        let object = match self.get_cached(reference, namespace).await? {
            Some(object) => object,
            None => match self.get(reference, namespace).await? {
                Some(object) => object,
                None => return Ok(true),
            },
        };
        if object.is_deleting() {
            return Ok(false);
        }
        tracing::info!(kind = %reference.kind, name = %reference.name, "Deleting {} {namespace}/{}", reference.kind, reference.name);
        let delete = async {
            let mut request =
                kube::core::Request::new(self.api(&object.kind, namespace).resource_url())
                    .delete(&reference.name, &DeleteParams::background())
                    .map_err(kube::Error::BuildRequest)?;
            request.extensions_mut().insert("delete");
            self.client.request::<serde::de::IgnoredAny>(request).await
        }
        .await;
        match delete {
            Ok(_) => Ok(false),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(true),
            Err(source) => Err(Error::Delete {
                kind: reference.kind.clone(),
                namespace: namespace.to_owned(),
                name: reference.name.clone(),
                source,
            }),
        }
    }

    /// Creates an object from a template (`<Kind>Template`, whose `spec.template` holds the
    /// new object's metadata and spec), as upstream's `external.CreateFromTemplate`: the new
    /// object is a `<Kind>` of the same group, in the template's namespace, named as asked,
    /// labelled with the template's labels, `labels` and the cluster name, annotated with the
    /// template's annotations, `annotations` and where it was cloned from, and owned by
    /// `owner`. Returns a reference to it.
    pub async fn create_from_template(
        &self,
        request: &CreateFromTemplate<'_>,
    ) -> Result<ContractVersionedObjectReference, Error> {
        let template_ref = request.template;
        let kind = template_ref
            .kind
            .strip_suffix("Template")
            .filter(|kind| !kind.is_empty())
            .ok_or_else(|| Error::TemplateKind {
                kind: template_ref.kind.clone(),
            })?;
        let template = self
            .get(template_ref, request.namespace)
            .await?
            .ok_or_else(|| Error::FindTemplate {
                kind: template_ref.kind.clone(),
                namespace: request.namespace.to_owned(),
                name: template_ref.name.clone(),
            })?;
        let object =
            generate_from_template(&template, request).ok_or_else(|| Error::ReadTemplate {
                kind: template_ref.kind.clone(),
                namespace: request.namespace.to_owned(),
                name: template_ref.name.clone(),
            })?;
        let target = self.resolve(&template_ref.api_group, kind).await?;
        let mut object = object;
        object.types = Some(kube::api::TypeMeta {
            api_version: target.resource.api_version.clone(),
            kind: target.resource.kind.clone(),
        });
        self.api(&target, request.namespace)
            .create(&PostParams::default(), &object)
            .await
            .map_err(|source| Error::CreateFromTemplate {
                kind: kind.to_owned(),
                namespace: request.namespace.to_owned(),
                name: request.name.clone(),
                source,
            })?;
        Ok(ContractVersionedObjectReference {
            api_group: template_ref.api_group.clone(),
            kind: kind.to_owned(),
            name: request.name.clone(),
        })
    }
}

/// What [`ExternalObjects::create_from_template`] creates.
#[derive(Clone, Debug)]
pub struct CreateFromTemplate<'a> {
    /// The template (its kind ends in `Template`).
    pub template: &'a ContractVersionedObjectReference,
    /// The namespace of the template and of the new object.
    pub namespace: &'a str,
    /// The new object's name (MachineSets name it like the Machine).
    pub name: String,
    /// The Cluster the new object belongs to.
    pub cluster_name: &'a str,
    /// Labels besides the template's (they win over the template's).
    pub labels: BTreeMap<String, String>,
    /// Annotations besides the template's (they win over the template's).
    pub annotations: BTreeMap<String, String>,
    /// The owner to set.
    pub owner: Option<OwnerReference>,
}

/// The object a template generates (upstream `external.GenerateTemplate`); `None` when the
/// template has no `spec.template`. Types are left for the caller.
pub fn generate_from_template(
    template: &ExternalObject,
    request: &CreateFromTemplate<'_>,
) -> Option<DynamicObject> {
    let inner = template.object.data.get("spec")?.get("template")?;
    let string_map = |value: Option<&Value>| -> BTreeMap<String, String> {
        value
            .and_then(Value::as_object)
            .map(|map| {
                map.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let metadata = inner.get("metadata");
    let mut labels = string_map(metadata.and_then(|m| m.get("labels")));
    labels.extend(request.labels.clone());
    labels.insert(CLUSTER_NAME.to_owned(), request.cluster_name.to_owned());
    let mut annotations = string_map(metadata.and_then(|m| m.get("annotations")));
    annotations.extend(request.annotations.clone());
    annotations.insert(
        TEMPLATE_CLONED_FROM_NAME.to_owned(),
        request.template.name.clone(),
    );
    annotations.insert(
        TEMPLATE_CLONED_FROM_GROUP_KIND.to_owned(),
        format!("{}.{}", request.template.kind, request.template.api_group),
    );
    let spec = inner.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut object = DynamicObject {
        types: None,
        metadata: Default::default(),
        data: json!({ "spec": spec }),
    };
    object.metadata.name = Some(request.name.clone());
    object.metadata.namespace = Some(request.namespace.to_owned());
    object.metadata.labels = Some(labels);
    object.metadata.annotations = Some(annotations);
    object.metadata.owner_references = request.owner.clone().map(|owner| vec![owner]);
    Some(object)
}

/// The API group of an `apiVersion` (`group/version`, or `version` for the core group).
pub fn api_group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}
