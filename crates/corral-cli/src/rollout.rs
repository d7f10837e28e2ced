//! `corral rollout restart|pause|resume|status|history|undo`, as `clusterctl alpha rollout`
//! (`cmd/clusterctl/client/alpha/rollout_*.go`) plus kubectl's `status`, `history` and `undo`
//! for MachineDeployments.
//!
//! restart sets `spec.rollout.after` to now; pause and resume set a MachineDeployment's
//! `spec.paused` and a KubeadmControlPlane's `cluster.x-k8s.io/paused` annotation. history
//! reads the revisions of a MachineDeployment's MachineSets; undo asks the MachineDeployment
//! controller for a rollback through Corral's `rollback-to-revision` annotation (upstream
//! removed rollback in v1.11; Corral keeps it).

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

use crate::get::table;
use crate::resource::{Kind, ResourceRef};
use crate::{Connection, Error};

/// The kinds restart, pause, resume and status accept.
pub const KINDS: &[Kind] = &[Kind::MachineDeployment, Kind::KubeadmControlPlane];

/// The kinds history and undo accept: only MachineDeployments have revisions.
pub const HISTORY_KINDS: &[Kind] = &[Kind::MachineDeployment];

/// The rollback annotation the MachineDeployment controller consumes.
pub const ROLLBACK_TO_REVISION: &str = "machinedeployment.clusters.x-k8s.io/rollback-to-revision";

struct Target<'a> {
    connection: &'a Connection,
    api: Api<DynamicObject>,
    target: &'a ResourceRef,
    namespace: String,
}

impl<'a> Target<'a> {
    fn new(connection: &'a Connection, namespace: &str, target: &'a ResourceRef) -> Target<'a> {
        let api = Api::namespaced_with(
            connection.client.clone(),
            namespace,
            &target.kind.resource(),
        );
        Target {
            connection,
            api,
            target,
            namespace: namespace.into(),
        }
    }

    fn qualified(&self) -> String {
        self.target.kind.qualified(&self.target.name)
    }

    async fn get(&self) -> Result<Value, Error> {
        let object = self.api.get_opt(&self.target.name).await.map_err(|e| {
            self.connection
                .fail(format!("reading {}", self.qualified()), e)
        })?;
        match object {
            Some(object) => Ok(serde_json::to_value(object).unwrap_or_default()),
            None => Err(Error::NotFound {
                kind: self.target.kind.resource().kind,
                name: self.target.name.clone(),
                namespace: self.namespace.clone(),
                hint: String::new(),
            }),
        }
    }

    async fn patch(&self, patch: Value, doing: &str) -> Result<(), Error> {
        self.api
            .patch(
                &self.target.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|e| {
                self.connection
                    .fail(format!("{doing} {}", self.qualified()), e)
            })?;
        Ok(())
    }
}

fn is_paused(kind: Kind, object: &Value) -> bool {
    match kind {
        Kind::KubeadmControlPlane => object["metadata"]["annotations"]
            .get(corral_api::annotations::PAUSED)
            .is_some(),
        _ => object["spec"]["paused"] == true,
    }
}

/// Restarts the rollout: every Machine is replaced, as after a template change.
pub async fn restart(
    connection: &Connection,
    namespace: &str,
    target: &ResourceRef,
    now: Timestamp,
) -> Result<String, Error> {
    let target_object = Target::new(connection, namespace, target);
    let object = target_object.get().await?;
    if is_paused(target.kind, &object) {
        return Err(Error::Invalid(format!(
            "cannot restart paused {}; resume it first (`corral rollout resume {}/{}`)",
            target_object.qualified(),
            short(target.kind),
            target.name
        )));
    }
    if let Some(after) = object["spec"]["rollout"]["after"].as_str()
        && let Ok(after) = after.parse::<Timestamp>()
        && after > now
    {
        return Err(Error::Invalid(format!(
            "cannot restart {}: spec.rollout.after is in the future ({after})",
            target_object.qualified()
        )));
    }
    let now = Timestamp::from_second(now.as_second()).unwrap_or(now);
    target_object
        .patch(
            json!({"spec": {"rollout": {"after": now.to_string()}}}),
            "restarting",
        )
        .await?;
    Ok(format!("{} restarted", target_object.qualified()))
}

/// Pauses (`true`) or resumes (`false`) the object.
pub async fn set_paused(
    connection: &Connection,
    namespace: &str,
    target: &ResourceRef,
    paused: bool,
) -> Result<String, Error> {
    let target_object = Target::new(connection, namespace, target);
    let object = target_object.get().await?;
    let (verb, done) = if paused {
        ("pausing", "paused")
    } else {
        ("resuming", "resumed")
    };
    if is_paused(target.kind, &object) == paused {
        return Err(Error::Invalid(format!(
            "{} is already {}",
            target_object.qualified(),
            if paused { "paused" } else { "not paused" }
        )));
    }
    let patch = match target.kind {
        Kind::KubeadmControlPlane => {
            let value = if paused { json!("") } else { Value::Null };
            json!({"metadata": {"annotations": {corral_api::annotations::PAUSED: value}}})
        }
        _ => json!({"spec": {"paused": paused}}),
    };
    target_object.patch(patch, verb).await?;
    Ok(format!("{} {done}", target_object.qualified()))
}

/// Where a rollout stands: kubectl's `rollout status` wording, and whether it is complete.
pub async fn status(
    connection: &Connection,
    namespace: &str,
    target: &ResourceRef,
) -> Result<(String, bool), Error> {
    let target_object = Target::new(connection, namespace, target);
    let object = target_object.get().await?;
    Ok(rollout_status(target.kind, &target.name, &object))
}

/// kubectl's `DeploymentStatusViewer` over the v1beta2 status fields.
pub fn rollout_status(kind: Kind, name: &str, object: &Value) -> (String, bool) {
    let kind_name = kind.resource().kind.to_lowercase();
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(0);
    let observed = object["status"]["observedGeneration"].as_i64().unwrap_or(0);
    if generation > observed {
        return (
            format!("Waiting for {kind_name} spec update to be observed..."),
            false,
        );
    }
    let status = &object["status"];
    let desired = object["spec"]["replicas"].as_i64().unwrap_or(1);
    let replicas = status["replicas"].as_i64().unwrap_or(0);
    let up_to_date = status["upToDateReplicas"].as_i64().unwrap_or(0);
    let available = status["availableReplicas"].as_i64().unwrap_or(0);
    if up_to_date < desired {
        return (
            format!(
                "Waiting for {kind_name} \"{name}\" rollout to finish: {up_to_date} out of {desired} new replicas have been updated..."
            ),
            false,
        );
    }
    if replicas > up_to_date {
        return (
            format!(
                "Waiting for {kind_name} \"{name}\" rollout to finish: {} old replicas are pending termination...",
                replicas - up_to_date
            ),
            false,
        );
    }
    if available < up_to_date {
        return (
            format!(
                "Waiting for {kind_name} \"{name}\" rollout to finish: {available} of {up_to_date} updated replicas are available..."
            ),
            false,
        );
    }
    (
        format!("{kind_name} \"{name}\" successfully rolled out"),
        true,
    )
}

/// One revision of a MachineDeployment: its MachineSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision {
    pub revision: i64,
    pub machine_set: String,
    pub replicas: i64,
    pub version: String,
    pub infrastructure: String,
    pub bootstrap: String,
}

async fn revisions(
    connection: &Connection,
    namespace: &str,
    deployment: &Value,
) -> Result<Vec<Revision>, Error> {
    let name = deployment["metadata"]["name"].as_str().unwrap_or("");
    let uid = deployment["metadata"]["uid"].as_str().unwrap_or("");
    let api: Api<DynamicObject> = Api::namespaced_with(
        connection.client.clone(),
        namespace,
        &Kind::MachineSet.resource(),
    );
    let selector = format!("{}={name}", corral_api::labels::MACHINE_DEPLOYMENT_NAME);
    let list = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| connection.fail(format!("listing the MachineSets of {name}"), e))?;
    let mut revisions: Vec<Revision> = list
        .items
        .into_iter()
        .map(|set| serde_json::to_value(set).unwrap_or_default())
        .filter(|set| {
            set["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|owners| owners.iter().any(|o| o["uid"] == uid))
        })
        .filter_map(|set| {
            let revision = set["metadata"]["annotations"][corral_api::annotations::REVISION]
                .as_str()?
                .parse()
                .ok()?;
            let spec = &set["spec"]["template"]["spec"];
            let reference = |r: &Value| match (r["kind"].as_str(), r["name"].as_str()) {
                (Some(kind), Some(name)) => format!("{kind}/{name}"),
                _ => String::new(),
            };
            let bootstrap = match spec["bootstrap"]["dataSecretName"].as_str() {
                Some(secret) => format!("Secret/{secret}"),
                None => reference(&spec["bootstrap"]["configRef"]),
            };
            Some(Revision {
                revision,
                machine_set: set["metadata"]["name"].as_str().unwrap_or("").to_string(),
                replicas: set["status"]["replicas"].as_i64().unwrap_or(0),
                version: spec["version"].as_str().unwrap_or("").to_string(),
                infrastructure: reference(&spec["infrastructureRef"]),
                bootstrap,
            })
        })
        .collect();
    revisions.sort_by_key(|r| r.revision);
    Ok(revisions)
}

/// The MachineDeployment's revisions, oldest first, as a table.
pub async fn history(
    connection: &Connection,
    namespace: &str,
    target: &ResourceRef,
) -> Result<String, Error> {
    let target_object = Target::new(connection, namespace, target);
    let deployment = target_object.get().await?;
    let revisions = revisions(connection, namespace, &deployment).await?;
    let mut rows = vec![
        [
            "REVISION",
            "MACHINESET",
            "REPLICAS",
            "VERSION",
            "INFRASTRUCTURE",
            "BOOTSTRAP",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for r in &revisions {
        rows.push(vec![
            r.revision.to_string(),
            r.machine_set.clone(),
            r.replicas.to_string(),
            r.version.clone(),
            r.infrastructure.clone(),
            r.bootstrap.clone(),
        ]);
    }
    Ok(format!("{}\n{}", target_object.qualified(), table(&rows)))
}

/// Asks for a rollback to `to_revision` (0: the previous revision).
pub async fn undo(
    connection: &Connection,
    namespace: &str,
    target: &ResourceRef,
    to_revision: i64,
) -> Result<String, Error> {
    if to_revision < 0 {
        return Err(Error::Usage(format!(
            "--to-revision must be 0 (the previous revision) or more, not {to_revision}"
        )));
    }
    let target_object = Target::new(connection, namespace, target);
    let deployment = target_object.get().await?;
    let revisions = revisions(connection, namespace, &deployment).await?;
    let history_hint = format!("`corral rollout history md/{}` lists them", target.name);
    let value = if to_revision == 0 {
        if revisions.len() < 2 {
            return Err(Error::Invalid(format!(
                "{} has no previous revision to roll back to; {history_hint}",
                target_object.qualified()
            )));
        }
        "previous".to_string()
    } else {
        if !revisions.iter().any(|r| r.revision == to_revision) {
            return Err(Error::Invalid(format!(
                "{} has no revision {to_revision}; {history_hint}",
                target_object.qualified()
            )));
        }
        to_revision.to_string()
    };
    target_object
        .patch(
            json!({"metadata": {"annotations": {ROLLBACK_TO_REVISION: value}}}),
            "rolling back",
        )
        .await?;
    Ok(format!("{} rolled back", target_object.qualified()))
}

fn short(kind: Kind) -> &'static str {
    match kind {
        Kind::MachineDeployment => "md",
        Kind::MachineSet => "ms",
        Kind::KubeadmControlPlane => "kcp",
    }
}

#[cfg(test)]
mod tests;
