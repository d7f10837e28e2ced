//! Writes that happen only when something changed.
//!
//! A reconciler works on a copy of the object it read, then writes the difference as a JSON
//! merge patch (RFC 7386) carrying the resourceVersion it read, so that a write never undoes
//! another writer's change: on a conflict the reconcile fails, and the watch event of the other
//! write brings a fresh one. No difference, no request.
//!
//! Every write through this module is remembered as "version V of this object is replaced"
//! until a reconcile sees another version ([`is_replaced`], [`crate::own_writes`]): a
//! controller's cache shows its own write a little later, and a reconcile of the copy the write
//! replaced could only lose a write race (HTTP 409) or redo what was just done.
//! [`super::run_controller`] skips such reconciles; the watch event of the write brings the
//! next one.

use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::own_writes::OwnWrites;

/// The merge patch that turns `from` into `to`, or `None` when they are equal. Lists are
/// replaced whole, as merge patches do; a field present in `from` and absent from `to` is
/// removed with `null`.
pub fn merge_patch(from: &Value, to: &Value) -> Option<Value> {
    if from == to {
        return None;
    }
    match (from, to) {
        (Value::Object(from), Value::Object(to)) => {
            let mut patch = Map::new();
            for (key, new) in to {
                match from.get(key) {
                    Some(old) => {
                        if let Some(change) = merge_patch(old, new) {
                            patch.insert(key.clone(), change);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), new.clone());
                    }
                }
            }
            for key in from.keys() {
                if !to.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        // A null in a merge patch removes the field; an object replacing something else must
        // not be read as a patch of it, so it goes whole.
        _ => Some(to.clone()),
    }
}

/// Which part of an object a write changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Metadata and spec, through the main resource.
    Main,
    /// The status subresource.
    Status,
}

/// The part of an object's JSON a write of `part` compares, taken out of `object`.
fn comparable(object: &mut Value, part: Part) -> Value {
    let Value::Object(fields) = object else {
        return object.clone();
    };
    match part {
        Part::Main => {
            let mut main = Map::new();
            for (key, value) in fields.iter_mut() {
                if key == "status" {
                    continue;
                }
                let mut value = std::mem::take(value);
                if key == "metadata"
                    && let Value::Object(metadata) = &mut value
                {
                    // Server-owned; never ours to change.
                    for key in ["resourceVersion", "managedFields", "generation", "uid"] {
                        metadata.remove(key);
                    }
                }
                main.insert(key.clone(), value);
            }
            Value::Object(main)
        }
        Part::Status => {
            let status = fields.get_mut("status").map(std::mem::take);
            serde_json::json!({ "status": status.unwrap_or(Value::Null) })
        }
    }
}

/// The merge patch turning `before` into `after` for `part`, with `before`'s resourceVersion as
/// a precondition, or `None` when that part is unchanged.
pub fn object_patch<K: Serialize + Resource>(before: &K, after: &K, part: Part) -> Option<Value> {
    let from = comparable(&mut serde_json::to_value(before).ok()?, part);
    let to = comparable(&mut serde_json::to_value(after).ok()?, part);
    patch_with_version(&from, &to, before.resource_version())
}

/// The merge patch from `from` to `to` with `version` as the resourceVersion precondition.
fn patch_with_version(from: &Value, to: &Value, version: Option<String>) -> Option<Value> {
    let mut patch = merge_patch(from, to)?;
    if let (Value::Object(fields), Some(version)) = (&mut patch, version) {
        let metadata = fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(metadata) = metadata {
            metadata.insert("resourceVersion".into(), Value::String(version));
        }
    }
    Some(patch)
}

/// Writes `part` of `after` when it differs from `before`; returns the object as stored, or
/// `None` when there was nothing to write.
pub async fn patch_if_changed<K>(
    api: &Api<K>,
    before: &K,
    after: &K,
    part: Part,
) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let patch = object_patch(before, after, part);
    send(api, &before.name_any(), patch, part, K::meta).await
}

/// An object as a write stored it, metadata only: the rest of the answer is parsed, not
/// built (serde skips unknown fields without allocating).
#[derive(serde::Deserialize)]
struct Stored {
    #[serde(deserialize_with = "stored_metadata")]
    metadata: ObjectMeta,
}

/// The metadata a writer reads back from a write's answer ([`write`], [`OwnWrites::remember`]).
/// The rest, above all managedFields (an entry per manager with a tree of every field it set,
/// often more than the rest of a Machine), is skipped, not decoded.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredMetadata {
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    deletion_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    finalizers: Option<Vec<String>>,
}

fn stored_metadata<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<ObjectMeta, D::Error> {
    let stored = <StoredMetadata as serde::Deserialize>::deserialize(deserializer)?;
    Ok(ObjectMeta {
        uid: stored.uid,
        resource_version: stored.resource_version,
        generation: stored.generation,
        deletion_timestamp: stored.deletion_timestamp,
        finalizers: stored.finalizers,
        ..ObjectMeta::default()
    })
}

/// Sends `patch` of `part`; returns the object as stored, decoded as `T`: `K` itself, or
/// [`Stored`] for a caller that needs no more; `meta` reads its metadata.
async fn send<K, T>(
    api: &Api<K>,
    name: &str,
    patch: Option<Value>,
    part: Part,
    meta: fn(&T) -> &ObjectMeta,
) -> Result<Option<T>, kube::Error>
where
    K: Resource + Clone,
    T: DeserializeOwned,
{
    let Some(patch) = patch else {
        return Ok(None);
    };
    let replaced = patch
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(
            resource = api.resource_url(),
            name,
            ?part,
            fields = %changed_fields(&patch).join(","),
            "Writing"
        );
    }
    let params = PatchParams::default();
    let request = kube::core::Request::new(api.resource_url());
    let patch = Patch::Merge(&patch);
    let mut request = match part {
        Part::Main => request.patch(name, &params, &patch),
        Part::Status => request.patch_subresource("status", name, &params, &patch),
    }
    .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("patch");
    let client: kube::Client = api.clone().into();
    let patched: T = client.request(request).await?;
    // A write that changed nothing keeps the version, and brings no watch event.
    if let Some(replaced) = replaced
        && meta(&patched).resource_version.as_deref() != Some(replaced.as_str())
    {
        OWN_WRITES.remember(meta(&patched), replaced);
    }
    Ok(Some(patched))
}

/// The paths a merge patch changes, two levels deep (`status.conditions`, `spec.providerID`),
/// without their values: what a debug log says about a write.
fn changed_fields(patch: &Value) -> Vec<String> {
    let Value::Object(fields) = patch else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    for (key, value) in fields {
        match value {
            Value::Object(inner) => paths.extend(
                inner
                    .keys()
                    .filter(|inner| !(key == "metadata" && *inner == "resourceVersion"))
                    .map(|inner| format!("{key}.{inner}")),
            ),
            _ => paths.push(key.clone()),
        }
    }
    paths
}

/// The writes through this module, process-wide: every controller of the process (core and
/// providers) writes through it, and object uids are unique across kinds.
static OWN_WRITES: OwnWrites = OwnWrites::new();

#[cfg(test)]
pub(crate) fn remember_replaced<K: Resource>(object: &K, replaced: String) {
    OWN_WRITES.remember(object.meta(), replaced);
}

/// Whether `object` is a copy that a write through this module has replaced, i.e. a cache
/// that has not caught up yet (any version of a chain of own writes but the last). Seeing any
/// other version forgets the entry ([`OwnWrites::is_replaced`]).
pub fn is_replaced<K: Resource>(object: &K) -> bool {
    OWN_WRITES.is_replaced(object)
}

/// Whether `object` is the version the last write through this module produced: its watch
/// event is this process's own write coming back.
pub fn is_own_write<K: Resource>(object: &K) -> bool {
    OWN_WRITES.is_own_write(object)
}

/// An object a write compares in two parts, typed: its metadata and spec (everything the
/// main resource writes), and its status (what the status subresource writes). Comparing
/// typed parts first lets a write encode only the part that changed: most writes are status
/// writes, and encoding a whole Machine twice to find that its spec is unchanged cost more
/// than the comparison. An implementation only says where its spec and status are.
pub trait Parts: Resource {
    type Spec: Serialize + PartialEq;
    type Status: Serialize + PartialEq;

    /// The spec and the status (usually an `Option`).
    fn spec_and_status(&self) -> (&Self::Spec, &Self::Status);

    /// Whether `self` and `other` have the same metadata and spec.
    fn main_eq(&self, other: &Self) -> bool {
        self.meta() == other.meta() && self.spec_and_status().0 == other.spec_and_status().0
    }

    /// Whether `self` and `other` have the same status.
    fn status_eq(&self, other: &Self) -> bool {
        self.spec_and_status().1 == other.spec_and_status().1
    }

    /// `{"status": …}`, with `null` for no status: what a status write compares.
    fn status_part(&self) -> Value {
        let status = serde_json::to_value(self.spec_and_status().1).unwrap_or(Value::Null);
        serde_json::json!({ "status": status })
    }

    /// `{"metadata": …, "spec": …}`: what a write of the main resource compares, without
    /// serializing the status (most of a Machine) only to drop it. The type fields are left
    /// out; they are the same on both sides of a write.
    fn main_part(&self) -> Value {
        let metadata = serde_json::to_value(self.meta()).unwrap_or(Value::Null);
        let spec = serde_json::to_value(self.spec_and_status().0).unwrap_or(Value::Null);
        serde_json::json!({ "metadata": metadata, "spec": spec })
    }
}

/// [`Parts`] for kinds whose `spec` and `status` fields are their parts.
#[macro_export]
macro_rules! spec_and_status_parts {
    ($($kind:ty => $spec:ty, $status:ty);* $(;)?) => {$(
        impl $crate::patch::Parts for $kind {
            type Spec = $spec;
            type Status = Option<$status>;
            fn spec_and_status(&self) -> (&Self::Spec, &Self::Status) {
                (&self.spec, &self.status)
            }
        }
    )*};
}

spec_and_status_parts!(
    corral_api::Cluster => corral_api::ClusterSpec, corral_api::ClusterStatus;
    corral_api::Machine => corral_api::MachineSpec, corral_api::MachineStatus;
    corral_api::MachineSet => corral_api::MachineSetSpec, corral_api::MachineSetStatus;
    corral_api::MachineDeployment =>
        corral_api::MachineDeploymentSpec, corral_api::MachineDeploymentStatus;
    corral_api::MachineHealthCheck =>
        corral_api::MachineHealthCheckSpec, corral_api::MachineHealthCheckStatus;
);

/// What [`write`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Nothing differed.
    Nothing,
    /// One or both parts were written.
    Changed,
    /// The metadata write removed the last finalizer of an object being deleted: it is gone,
    /// and its status was not written.
    Gone,
}

/// Writes an object's metadata and spec, then its status, each only when changed. When the
/// first write removed the last finalizer of an object being deleted, the object is gone and
/// its status is not written. Only a part that differs is serialized (see [`Parts`]). A
/// status written after a spec write that moved the generation has observed it (see
/// [`observe_own_spec_change`]).
pub async fn write<K>(api: &Api<K>, before: &K, after: &K) -> Result<Written, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug + PartialEq + Parts,
{
    write_parts(api, before, after, true).await
}

/// [`write`] for a controller whose status of a reconcile does not describe the spec it
/// writes in that reconcile (a MachineDeployment that rolls back its template counted its
/// Machines against the template it had): its status keeps the generation it observed.
pub async fn write_unobserved<K>(
    api: &Api<K>,
    before: &K,
    after: &K,
) -> Result<Written, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug + PartialEq + Parts,
{
    write_parts(api, before, after, false).await
}

async fn write_parts<K>(
    api: &Api<K>,
    before: &K,
    after: &K,
    observes_spec: bool,
) -> Result<Written, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug + PartialEq + Parts,
{
    if before == after {
        return Ok(Written::Nothing);
    }
    let name = before.name_any();
    let main = if before.main_eq(after) {
        None
    } else {
        let (mut from, mut to) = (before.main_part(), after.main_part());
        patch_with_version(
            &comparable(&mut from, Part::Main),
            &comparable(&mut to, Part::Main),
            before.resource_version(),
        )
    };
    let mut written = Written::Nothing;
    let mut version = before.resource_version();
    let mut generation_moved = None;
    let stored_meta: fn(&Stored) -> &ObjectMeta = |stored| &stored.metadata;
    if let Some(Stored { metadata: stored }) =
        send(api, &name, main, Part::Main, stored_meta).await?
    {
        if stored.deletion_timestamp.is_some()
            && stored.finalizers.as_ref().is_none_or(Vec::is_empty)
        {
            return Ok(Written::Gone);
        }
        written = Written::Changed;
        version = stored.resource_version.clone();
        if let (Some(old), Some(new)) = (before.meta().generation, stored.generation)
            && old != new
            && observes_spec
        {
            generation_moved = Some((old, new));
        }
    }
    if before.status_eq(after) && generation_moved.is_none() {
        return Ok(written);
    }
    let mut status_to = after.status_part();
    if let Some((old, new)) = generation_moved {
        observe_own_spec_change(&mut status_to, old, new);
    }
    let status = patch_with_version(&before.status_part(), &status_to, version);
    if send(api, &name, status, Part::Status, stored_meta)
        .await?
        .is_some()
    {
        written = Written::Changed;
    }
    Ok(written)
}

/// A status computed in the same reconcile as a spec change it writes has observed that
/// change: once the spec write moved the generation from `old` to `new`, the status's
/// `observedGeneration` and its conditions' that say `old` say `new`. Without this, every
/// spec write of a controller (a Machine's `spec.providerID`) costs one more status write in
/// the next reconcile, only to move `observedGeneration`.
pub fn observe_own_spec_change(status: &mut Value, old: i64, new: i64) {
    let Some(status) = status.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let bump = |field: &mut Value| {
        if field.as_i64() == Some(old) {
            *field = Value::from(new);
        }
    };
    if let Some(observed) = status.get_mut("observedGeneration") {
        bump(observed);
    }
    if let Some(Value::Array(conditions)) = status.get_mut("conditions") {
        for condition in conditions {
            if let Some(observed) = condition.get_mut("observedGeneration") {
                bump(observed);
            }
        }
    }
}
