//! Etcd administration for a stacked etcd (upstream `controlplane/kubeadm/pkg/etcd`): the
//! [`EtcdAdmin`] interface the controller uses (members, remove, move leadership, alarms), and
//! [`SimulatedEtcd`], which answers it for simulated workload clusters through the workload
//! cluster's Kubernetes API alone.
//!
//! # The protocol with simulated clusters
//!
//! As upstream's in-memory backend (`test/infrastructure/inmemory/pkg/server/etcd`), membership
//! lives in annotations on the etcd static Pods (`kube-system/etcd-<node>`, labelled
//! `component=etcd`). An infrastructure provider that simulates machines (Corral's in-memory
//! provider, `corral_cloud::etcd`, which writes these annotations when a
//! machine's etcd starts) and this module agree on these names:
//!
//! - [`MEMBER_ID`] and [`CLUSTER_ID`]: the member's and the etcd cluster's ids, 16 hex digits,
//!   as `etcdctl` prints them; a Pod without a member id is not a member.
//! - [`LEADER_FROM`]: when the member became leader (RFC 3339). The leader is the member that
//!   became leader last; when no member carries the annotation (the leader left), the member
//!   with the lowest id leads, as if it had won the election.
//! - [`MEMBER_REMOVED`]: when the member was removed (RFC 3339); the Pod stays until its
//!   machine goes, as a removed member's process does, but it is no longer a member.
//! - [`ALARMS`] (Corral's, not upstream's): the member's raised alarms, comma-separated
//!   (`NOSPACE`, `CORRUPT`), to simulate an unhealthy etcd.
//!
//! A member is healthy when its Pod is Ready and it has no alarm. The controller reads the
//! members from its cache of the control plane Pods ([`members_of_pods`]), so looking at them
//! costs no request; only changes go through [`SimulatedEtcd`].
//!
//! This module lives with the control plane provider (not the infrastructure provider) because
//! a control plane provider must not depend on an infrastructure provider.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

#[cfg(test)]
mod tests;

/// The member id of the etcd member an etcd Pod runs (upstream's in-memory annotation).
pub const MEMBER_ID: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/member-id";
/// The id of the etcd cluster the member belongs to (upstream's in-memory annotation).
pub const CLUSTER_ID: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/cluster-id";
/// When the member became leader (upstream's in-memory annotation).
pub const LEADER_FROM: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/leader-from";
/// When the member was removed from the cluster (upstream's in-memory annotation).
pub const MEMBER_REMOVED: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/member-removed";
/// The member's raised alarms, comma-separated (Corral's addition).
pub const ALARMS: &str = "etcd.inmemory.infrastructure.cluster.x-k8s.io/alarms";

/// The namespace of the control plane's static Pods.
const KUBE_SYSTEM: &str = "kube-system";

/// An etcd member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdMember {
    /// The member id.
    pub id: u64,
    /// The member name: the name of the Node it runs on, as kubeadm names members.
    pub name: String,
    /// The id of the etcd cluster.
    pub cluster_id: u64,
    /// Whether the member is the leader.
    pub leader: bool,
    /// Whether the member answers.
    pub healthy: bool,
}

/// A raised etcd alarm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdAlarm {
    /// The member that raised it.
    pub member_id: u64,
    /// `NOSPACE`, `CORRUPT`, ...
    pub alarm: String,
}

/// A failed etcd administration call.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// The workload cluster's API did not answer.
    #[error("cannot {operation} through the workload cluster's API")]
    Workload {
        operation: String,
        #[source]
        source: kube::Error,
    },
    /// etcd itself refused or did not answer.
    #[error("cannot {operation} in etcd: {message}")]
    Etcd { operation: String, message: String },
    /// No member has the id.
    #[error("etcd member {id:016x} does not exist")]
    MemberNotFound { id: u64 },
    /// An etcd Pod's annotation does not parse.
    #[error("annotation {annotation} of Pod kube-system/{pod} is not valid: {value:?}")]
    Annotation {
        pod: String,
        annotation: &'static str,
        value: String,
    },
}

/// What a control plane provider asks of etcd (upstream's etcd client in
/// `controlplane/kubeadm/pkg/etcd/etcd.go`: MemberList, MemberRemove, MoveLeader, AlarmList,
/// Status).
#[async_trait::async_trait]
pub trait EtcdAdmin: Send + Sync {
    /// The current members, in member id order.
    async fn members(&self) -> Result<Vec<EtcdMember>, EtcdError>;

    /// Removes a member; removing one that is already gone succeeds.
    async fn remove_member(&self, id: u64) -> Result<(), EtcdError>;

    /// Makes the member `to` the leader.
    async fn move_leader(&self, to: u64) -> Result<(), EtcdError>;

    /// The alarms raised on any member.
    async fn alarms(&self) -> Result<Vec<EtcdAlarm>, EtcdError>;
}

/// The etcd of a simulated workload cluster, administered through its API (see the module
/// docs for the representation).
#[derive(Clone)]
pub struct SimulatedEtcd {
    pods: Api<Pod>,
}

impl SimulatedEtcd {
    /// The etcd of the workload cluster `client` talks to.
    pub fn new(client: kube::Client) -> SimulatedEtcd {
        SimulatedEtcd {
            pods: Api::namespaced(client, KUBE_SYSTEM),
        }
    }

    async fn etcd_pods(&self) -> Result<Vec<Pod>, EtcdError> {
        self.pods
            .list(&ListParams::default().labels("component=etcd"))
            .await
            .map(|list| list.items)
            .map_err(|source| EtcdError::Workload {
                operation: "list the etcd Pods".into(),
                source,
            })
    }

    /// The Pod of a current member.
    async fn member_pod(&self, id: u64) -> Result<String, EtcdError> {
        let pods = self.etcd_pods().await?;
        for pod in &pods {
            if let Some(member) = read_member(pod)?
                && member.id == id
                && !member.removed
            {
                return Ok(member.pod);
            }
        }
        Err(EtcdError::MemberNotFound { id })
    }

    async fn annotate(&self, pod: &str, key: &str, value: &str) -> Result<(), EtcdError> {
        let patch = json!({ "metadata": { "annotations": { key: value } } });
        self.pods
            .patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(|source| EtcdError::Workload {
                operation: format!("annotate Pod kube-system/{pod}"),
                source,
            })
    }
}

#[async_trait::async_trait]
impl EtcdAdmin for SimulatedEtcd {
    async fn members(&self) -> Result<Vec<EtcdMember>, EtcdError> {
        let pods = self.etcd_pods().await?;
        let mut members = Vec::new();
        for pod in &pods {
            if let Some(member) = read_member(pod)? {
                members.push(member);
            }
        }
        Ok(compute_members(members))
    }

    async fn remove_member(&self, id: u64) -> Result<(), EtcdError> {
        let pod = match self.member_pod(id).await {
            Ok(pod) => pod,
            Err(EtcdError::MemberNotFound { .. }) => return Ok(()),
            Err(error) => return Err(error),
        };
        self.annotate(&pod, MEMBER_REMOVED, &Timestamp::now().to_string())
            .await
    }

    async fn move_leader(&self, to: u64) -> Result<(), EtcdError> {
        let pod = self.member_pod(to).await?;
        if self.members().await?.iter().any(|m| m.id == to && m.leader) {
            return Ok(());
        }
        self.annotate(&pod, LEADER_FROM, &Timestamp::now().to_string())
            .await
    }

    async fn alarms(&self) -> Result<Vec<EtcdAlarm>, EtcdError> {
        let pods = self.etcd_pods().await?;
        let mut alarms = Vec::new();
        for pod in &pods {
            let Some(member) = read_member(pod)? else {
                continue;
            };
            if member.removed {
                continue;
            }
            for alarm in member.alarms {
                alarms.push(EtcdAlarm {
                    member_id: member.id,
                    alarm,
                });
            }
        }
        alarms.sort_by(|a, b| (a.member_id, &a.alarm).cmp(&(b.member_id, &b.alarm)));
        Ok(alarms)
    }
}

/// A member as its Pod records it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MemberRecord {
    pub pod: String,
    pub id: u64,
    pub name: String,
    pub cluster_id: u64,
    pub leader_from: Option<Timestamp>,
    pub removed: bool,
    pub ready: bool,
    pub alarms: Vec<String>,
}

/// Reads the member an etcd Pod runs; `None` when the Pod is not (yet) a member.
pub(crate) fn read_member(pod: &Pod) -> Result<Option<MemberRecord>, EtcdError> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let Some(id) = annotations.get(MEMBER_ID) else {
        return Ok(None);
    };
    let invalid = |annotation: &'static str, value: &str| EtcdError::Annotation {
        pod: name.clone(),
        annotation,
        value: value.to_string(),
    };
    let id = parse_id(id).ok_or_else(|| invalid(MEMBER_ID, id))?;
    let cluster_id = annotations.get(CLUSTER_ID).map_or("", String::as_str);
    let cluster_id = parse_id(cluster_id).ok_or_else(|| invalid(CLUSTER_ID, cluster_id))?;
    let leader_from = match annotations.get(LEADER_FROM) {
        None => None,
        Some(value) => Some(
            value
                .parse::<Timestamp>()
                .map_err(|_| invalid(LEADER_FROM, value))?,
        ),
    };
    let ready = pod
        .status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        });
    let node = pod
        .spec
        .as_ref()
        .and_then(|spec| spec.node_name.clone())
        .unwrap_or_default();
    Ok(Some(MemberRecord {
        pod: name,
        id,
        name: node,
        cluster_id,
        leader_from,
        removed: annotations.contains_key(MEMBER_REMOVED),
        ready,
        alarms: annotations
            .get(ALARMS)
            .map(|alarms| {
                alarms
                    .split(',')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    }))
}

/// The members of the records, leader marked, removed ones left out, in id order.
pub(crate) fn compute_members(records: Vec<MemberRecord>) -> Vec<EtcdMember> {
    let mut current: Vec<MemberRecord> = records.into_iter().filter(|r| !r.removed).collect();
    current.sort_by_key(|r| r.id);
    let leader = current
        .iter()
        .filter_map(|r| r.leader_from.map(|from| (from, r.id)))
        .max()
        .map(|(_, id)| id)
        .or_else(|| current.first().map(|r| r.id));
    current
        .into_iter()
        .map(|r| EtcdMember {
            id: r.id,
            name: r.name,
            cluster_id: r.cluster_id,
            leader: Some(r.id) == leader,
            healthy: r.ready && r.alarms.is_empty(),
        })
        .collect()
}

fn parse_id(value: &str) -> Option<u64> {
    if value.is_empty() || value.len() > 16 {
        return None;
    }
    u64::from_str_radix(value, 16).ok()
}

/// The members the etcd Pods among `pods` record (Pods of other components are skipped).
pub fn members_of_pods<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Result<Vec<EtcdMember>, EtcdError> {
    let mut records = Vec::new();
    for pod in pods {
        if is_etcd_pod(pod)
            && let Some(record) = read_member(pod)?
        {
            records.push(record);
        }
    }
    Ok(compute_members(records))
}

/// The Pod is an etcd static Pod (`component=etcd`).
fn is_etcd_pod(pod: &Pod) -> bool {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get("component"))
        .is_some_and(|component| component == "etcd")
}

/// The client URLs of the etcd Pods among `pods` that run a real member: they carry kubeadm's
/// advertise annotation and none of the simulated member annotations. Empty for a simulated
/// cluster.
pub fn advertised_endpoints<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Vec<String> {
    let mut endpoints = Vec::new();
    for pod in pods {
        let Some(annotations) = pod.metadata.annotations.as_ref() else {
            continue;
        };
        if !is_etcd_pod(pod) || annotations.contains_key(MEMBER_ID) {
            continue;
        }
        if let Some(urls) = annotations.get(corral_workload::ETCD_ADVERTISE_CLIENT_URLS) {
            endpoints.extend(
                urls.split(',')
                    .map(str::trim)
                    .filter(|u| !u.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    endpoints.sort();
    endpoints.dedup();
    endpoints
}
