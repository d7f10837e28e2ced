//! [`RealEtcd`]: the [`EtcdAdmin`] of a workload cluster whose etcd runs for real (the local
//! provider's machines), spoken to over etcd's own API with a client certificate the cluster's
//! etcd CA signs, as upstream's KCP does through its etcd client. The members are found from the
//! `kubeadm.kubernetes.io/etcd.advertise-client-urls` annotations of the etcd static Pods.
//!
//! The KubeadmControlPlane controller uses it for a workload cluster whose etcd Pods carry the
//! advertise annotation and none of the simulated member annotations
//! ([`super::etcd::advertised_endpoints`]); for simulated clusters it keeps [`super::etcd::SimulatedEtcd`].

use std::time::Duration;

use corral_store::etcd::{EtcdTls, channel, pb};
use time::OffsetDateTime;

use super::etcd::{EtcdAdmin, EtcdAlarm, EtcdError, EtcdMember};
use crate::certs::{self, KeyMaterial, Leaf};

/// How long one etcd call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The common name of the control plane provider's etcd client certificate.
const CLIENT_NAME: &str = "corral-kubeadm-control-plane";

/// A workload cluster's etcd, reached at its members' client URLs. Keeps one channel per URL,
/// so a `RealEtcd` kept between reconciles connects once.
pub struct RealEtcd {
    endpoints: Vec<String>,
    tls: EtcdTls,
    channels: std::sync::Mutex<std::collections::HashMap<String, tonic::transport::Channel>>,
}

impl RealEtcd {
    /// The etcd reached at `endpoints` (`https://host:2379`), with a client certificate issued
    /// now by `etcd_ca` (the cluster's `<cluster>-etcd` key material).
    pub fn new(endpoints: Vec<String>, etcd_ca: &KeyMaterial) -> Result<RealEtcd, EtcdError> {
        let leaf = Leaf {
            common_name: CLIENT_NAME,
            client: true,
            validity: time::Duration::hours(1),
            ..Leaf::default()
        };
        let client = certs::issue(etcd_ca, &leaf, OffsetDateTime::now_utc())
            .map_err(|error| etcd_error("issue a client certificate", error))?;
        Ok(RealEtcd {
            endpoints,
            tls: EtcdTls {
                ca_pem: Some(etcd_ca.certificate_pem.clone().into_bytes()),
                identity_pem: Some((
                    client.certificate_pem.into_bytes(),
                    client.private_key_pem.into_bytes(),
                )),
            },
            channels: Default::default(),
        })
    }

    /// The endpoints it was made for.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    fn channel(&self, endpoint: &str) -> Result<tonic::transport::Channel, EtcdError> {
        let mut channels = self
            .channels
            .lock()
            .expect("the channels lock is not poisoned");
        if let Some(channel) = channels.get(endpoint) {
            return Ok(channel.clone());
        }
        let made = channel(endpoint, &self.tls).map_err(|error| etcd_error("reach etcd", error))?;
        channels.insert(endpoint.to_owned(), made.clone());
        Ok(made)
    }

    /// Runs `call` against each endpoint in turn until one answers.
    async fn first_answer<T, F, Fut>(&self, operation: &str, call: F) -> Result<T, EtcdError>
    where
        F: Fn(tonic::transport::Channel) -> Fut,
        Fut: std::future::Future<Output = Result<T, tonic::Status>>,
    {
        let mut last = String::from("no etcd endpoint is known");
        for endpoint in &self.endpoints {
            let channel = self.channel(endpoint)?;
            match tokio::time::timeout(CALL_TIMEOUT, call(channel)).await {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(status)) => last = format!("{endpoint}: {}", status.message()),
                Err(_) => last = format!("{endpoint}: no answer within {CALL_TIMEOUT:?}"),
            }
        }
        Err(EtcdError::Etcd {
            operation: operation.to_owned(),
            message: last,
        })
    }

    /// The status of the member at `url`, or `None` when it does not answer.
    async fn status(&self, url: &str) -> Option<pb::StatusResponse> {
        let channel = self.channel(url).ok()?;
        let mut maintenance = pb::maintenance_client::MaintenanceClient::new(channel);
        tokio::time::timeout(CALL_TIMEOUT, maintenance.status(pb::StatusRequest {}))
            .await
            .ok()?
            .ok()
            .map(tonic::Response::into_inner)
    }

    async fn member_list(&self) -> Result<(u64, Vec<pb::Member>), EtcdError> {
        self.first_answer("list the members", |channel| async move {
            let response = pb::cluster_client::ClusterClient::new(channel)
                .member_list(pb::MemberListRequest { linearizable: true })
                .await?
                .into_inner();
            let cluster_id = response.header.map_or(0, |header| header.cluster_id);
            Ok((cluster_id, response.members))
        })
        .await
    }
}

fn etcd_error(operation: &str, error: impl std::fmt::Display) -> EtcdError {
    EtcdError::Etcd {
        operation: operation.to_owned(),
        message: error.to_string(),
    }
}

#[async_trait::async_trait]
impl EtcdAdmin for RealEtcd {
    async fn members(&self) -> Result<Vec<EtcdMember>, EtcdError> {
        let (cluster_id, members) = self.member_list().await?;
        let mut result = Vec::new();
        let mut leader = None;
        for member in members {
            let status = match member.client_ur_ls.first() {
                Some(url) => self.status(url).await,
                None => None,
            };
            if let Some(status) = &status {
                leader = leader.or(Some(status.leader));
            }
            result.push(EtcdMember {
                id: member.id,
                name: member.name,
                cluster_id,
                leader: false,
                healthy: status.is_some_and(|status| status.errors.is_empty()),
            });
        }
        for member in &mut result {
            member.leader = Some(member.id) == leader;
        }
        result.sort_by_key(|member| member.id);
        Ok(result)
    }

    async fn remove_member(&self, id: u64) -> Result<(), EtcdError> {
        let (_, members) = self.member_list().await?;
        if !members.iter().any(|member| member.id == id) {
            return Ok(());
        }
        self.first_answer("remove a member", |channel| async move {
            pb::cluster_client::ClusterClient::new(channel)
                .member_remove(pb::MemberRemoveRequest { id })
                .await
                .map(drop)
        })
        .await
    }

    async fn move_leader(&self, to: u64) -> Result<(), EtcdError> {
        // MoveLeader is served by the leader only.
        let (_, members) = self.member_list().await?;
        for member in &members {
            let Some(url) = member.client_ur_ls.first() else {
                continue;
            };
            let Some(status) = self.status(url).await else {
                continue;
            };
            if status.leader == to {
                return Ok(());
            }
            if status.leader != member.id {
                continue;
            }
            let mut maintenance =
                pb::maintenance_client::MaintenanceClient::new(self.channel(url)?);
            return tokio::time::timeout(
                CALL_TIMEOUT,
                maintenance.move_leader(pb::MoveLeaderRequest { target_id: to }),
            )
            .await
            .map_err(|_| etcd_error("move the leader", "no answer in time"))?
            .map(drop)
            .map_err(|status| etcd_error("move the leader", status.message()));
        }
        Err(etcd_error("move the leader", "no member says it leads"))
    }

    async fn alarms(&self) -> Result<Vec<EtcdAlarm>, EtcdError> {
        self.first_answer("list the alarms", |channel| async move {
            let response = pb::maintenance_client::MaintenanceClient::new(channel)
                .alarm(pb::AlarmRequest {
                    action: pb::alarm_request::AlarmAction::Get.into(),
                    member_id: 0,
                    alarm: pb::AlarmType::None.into(),
                })
                .await?
                .into_inner();
            Ok(response
                .alarms
                .into_iter()
                .map(|alarm| EtcdAlarm {
                    member_id: alarm.member_id,
                    alarm: alarm.alarm().as_str_name().to_owned(),
                })
                .collect())
        })
        .await
    }
}
