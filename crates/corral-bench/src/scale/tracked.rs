//! What the benchmark's tracker decodes of the Clusters and Machines it watches: the few
//! fields its counts read. Each watch event's JSON is parsed, but only these fields are built;
//! a whole Cluster or Machine (managedFields, every condition's message, addresses, node
//! info) would cost the benchmark's own bookkeeping a share of the CPU it measures.

use std::borrow::Cow;

use corral_api::{Cluster, Machine};
use kube::Resource;
use kube::api::ObjectMeta;
use serde::Deserialize;

/// The metadata the tracker, the census and their watches need: the key and version of the
/// object, its labels, and whether it is being deleted. Everything else under `metadata`
/// (above all managedFields) is skipped.
fn tracked_metadata<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Tracked {
        name: Option<String>,
        namespace: Option<String>,
        resource_version: Option<String>,
        labels: Option<std::collections::BTreeMap<String, String>>,
        deletion_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    }
    let tracked = Tracked::deserialize(deserializer)?;
    Ok(ObjectMeta {
        name: tracked.name,
        namespace: tracked.namespace,
        resource_version: tracked.resource_version,
        labels: tracked.labels,
        deletion_timestamp: tracked.deletion_timestamp,
        ..ObjectMeta::default()
    })
}

/// Implements [`Resource`] as the kind `$of` for a lean copy of it.
macro_rules! resource_as {
    ($lean:ty, $of:ty) => {
        impl Resource for $lean {
            type DynamicType = ();
            type Scope = <$of as Resource>::Scope;

            fn kind(dt: &()) -> Cow<'_, str> {
                <$of>::kind(dt)
            }
            fn group(dt: &()) -> Cow<'_, str> {
                <$of>::group(dt)
            }
            fn version(dt: &()) -> Cow<'_, str> {
                <$of>::version(dt)
            }
            fn plural(dt: &()) -> Cow<'_, str> {
                <$of>::plural(dt)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

/// A Cluster as the tracker sees it: is it Available?
#[derive(Clone, Debug, Deserialize)]
pub struct TrackedCluster {
    #[serde(deserialize_with = "tracked_metadata")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub status: Option<TrackedClusterStatus>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct TrackedClusterStatus {
    #[serde(default)]
    pub conditions: Vec<TrackedCondition>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct TrackedCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
}

resource_as!(TrackedCluster, Cluster);

impl TrackedCluster {
    /// Not being deleted, and its `Available` condition is true.
    pub fn is_available(&self) -> bool {
        self.metadata.deletion_timestamp.is_none()
            && self.status.as_ref().is_some_and(|status| {
                status
                    .conditions
                    .iter()
                    .any(|condition| condition.type_ == "Available" && condition.status == "True")
            })
    }
}

/// A Machine as the tracker sees it: is it Running?
#[derive(Clone, Debug, Deserialize)]
pub struct TrackedMachine {
    #[serde(deserialize_with = "tracked_metadata")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub status: Option<TrackedMachineStatus>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct TrackedMachineStatus {
    pub phase: Option<String>,
}

resource_as!(TrackedMachine, Machine);

impl TrackedMachine {
    /// Not being deleted, and in phase `Running`.
    pub fn is_running(&self) -> bool {
        self.metadata.deletion_timestamp.is_none()
            && self
                .status
                .as_ref()
                .and_then(|status| status.phase.as_deref())
                == Some("Running")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_counts_need_from_whole_objects() {
        let cluster: TrackedCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": "7",
                         "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"paused": false},
            "status": {"conditions": [
                {"type": "Ready", "status": "False", "reason": "R", "message": "m"},
                {"type": "Available", "status": "True", "reason": "Available"}]}
        }))
        .unwrap();
        assert!(cluster.is_available());
        assert_eq!(cluster.metadata.resource_version.as_deref(), Some("7"));
        assert!(cluster.metadata.managed_fields.is_none());

        let deleting: TrackedMachine = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "m", "namespace": "n", "resourceVersion": "8",
                         "deletionTimestamp": "2026-12-01T00:00:00Z"},
            "status": {"phase": "Running", "addresses": [{"type": "Hostname", "address": "h"}]}
        }))
        .unwrap();
        assert!(!deleting.is_running(), "being deleted");
        let running: TrackedMachine = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "m", "namespace": "n"}, "status": {"phase": "Running"}
        }))
        .unwrap();
        assert!(running.is_running());
        let new: TrackedMachine =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "m"}})).unwrap();
        assert!(!new.is_running());
    }
}
