//! The conformance suite of `corral.provider.v1` (`corral provider test`): what any provider
//! must do, checked against a running one through [`Client`], with a cluster and a machine of
//! its own (fresh uids) that it deletes at the end.
//!
//! The checks, in order: GetInfo's shape and contract `v1`; ValidateConfig's answer (with the
//! capability); ReconcileCluster until ready; CreateMachine's answer and its idempotency by
//! `machine.uid` (a second call answers the same machine); ListMachines lists it once (with
//! the capability); GetMachine until RUNNING or FAILED; DeleteMachine until deleted;
//! GetMachine answers NOT_FOUND after it; DeleteMachine again still says deleted;
//! ListMachines no longer lists it; GetMachine of a machine that never existed answers
//! NOT_FOUND (an error of the contract's shape, not garbage); DeleteCluster until deleted.
//! Every call is bounded by the client's deadline, so a provider that does not answer in
//! time fails the check of that call.

use std::time::{Duration, Instant};

use crate::client::{CallError, CallFailure};
use crate::v1::{self, ErrorCode, MachineState};
use crate::{Client, capabilities};

/// One check's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    Fail(String),
    /// Not checked: a capability the provider does not list, or a step that could not run.
    Skip(String),
}

/// A check and its outcome.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: &'static str,
    pub outcome: Outcome,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.outcome {
            Outcome::Pass => write!(f, "PASS {}", self.name),
            Outcome::Fail(why) => write!(f, "FAIL {}: {why}", self.name),
            Outcome::Skip(why) => write!(f, "SKIP {}: {why}", self.name),
        }
    }
}

/// What the suite sends.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The `config` of the machine (a JSON object; `{}` by default).
    pub machine_config: serde_json::Value,
    /// The `config` of the cluster.
    pub cluster_config: serde_json::Value,
    /// How long a machine may take to be RUNNING (or FAILED), a cluster to be ready, and
    /// either to be deleted.
    pub wait: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            machine_config: serde_json::json!({}),
            cluster_config: serde_json::json!({}),
            wait: Duration::from_secs(120),
        }
    }
}

/// Runs the suite, calling `report` with each check as it completes; returns every check.
pub async fn run(
    client: &Client,
    settings: &Settings,
    mut report: impl FnMut(&Check),
) -> Vec<Check> {
    let mut suite = Suite {
        client,
        settings,
        checks: Vec::new(),
        report: &mut report,
    };
    suite.run().await;
    suite.checks
}

struct Suite<'a> {
    client: &'a Client,
    settings: &'a Settings,
    checks: Vec<Check>,
    report: &'a mut dyn FnMut(&Check),
}

/// The machine and cluster the suite creates.
struct Subject {
    cluster: v1::ClusterRef,
    machine: v1::MachineRef,
}

impl Suite<'_> {
    fn record(&mut self, name: &'static str, outcome: Outcome) -> bool {
        let passed = outcome == Outcome::Pass;
        let check = Check { name, outcome };
        (self.report)(&check);
        self.checks.push(check);
        passed
    }

    fn result(&mut self, name: &'static str, result: Result<(), String>) -> bool {
        self.record(name, result.map_or_else(Outcome::Fail, |()| Outcome::Pass))
    }

    async fn run(&mut self) {
        let info = match self.client.get_info(v1::GetInfoRequest {}).await {
            Ok(info) => info,
            Err(error) => {
                self.record("GetInfo answers", Outcome::Fail(error.to_string()));
                return;
            }
        };
        self.record("GetInfo answers", Outcome::Pass);
        let shape = check_info(&info);
        self.result("GetInfo shape", shape);
        let speaks_v1 = info
            .contract_versions
            .iter()
            .any(|version| version == crate::CONTRACT_VERSION);
        if !self.result(
            "GetInfo contract v1",
            if speaks_v1 {
                Ok(())
            } else {
                Err(format!(
                    "contractVersions is {:?}; Corral calls only providers listing \"v1\"",
                    info.contract_versions
                ))
            },
        ) {
            return;
        }
        let has = |capability: &str| info.capabilities.iter().any(|c| c == capability);
        let lists = has(capabilities::LIST_MACHINES);

        if has(capabilities::VALIDATE_CONFIG) {
            let answer = self
                .client
                .validate_config(v1::ValidateConfigRequest {
                    kind: v1::ConfigKind::Machine as i32,
                    config: to_struct(&self.settings.machine_config),
                })
                .await;
            let result = match answer {
                Ok(answer) if answer.field_errors.is_empty() => Ok(()),
                Ok(answer) => Err(format!(
                    "the test's machine config is refused: {:?}; pass one it accepts with --machine-config",
                    answer.field_errors
                )),
                Err(error) => Err(error.to_string()),
            };
            self.result("ValidateConfig answers", result);
        } else {
            self.record(
                "ValidateConfig answers",
                Outcome::Skip("no capability ValidateConfig".into()),
            );
        }

        let subject = Subject::new();
        let ready = self.reconcile_cluster(&subject).await;
        if !self.result("ReconcileCluster until ready", ready) {
            return;
        }
        self.machine(&subject, lists).await;
        let deleted = self.delete_cluster(&subject).await;
        self.result("DeleteCluster until deleted", deleted);
    }

    /// The machine checks: CreateMachine (and its idempotency), ListMachines, GetMachine until
    /// settled, DeleteMachine (and what follows it), GetMachine of an unknown machine.
    async fn machine(&mut self, subject: &Subject, lists: bool) {
        let create = || v1::CreateMachineRequest {
            machine: Some(subject.machine.clone()),
            config: to_struct(&self.settings.machine_config),
            bootstrap_data: b"#cloud-config\n".to_vec(),
            bootstrap_format: "cloud-config".into(),
        };
        let first = match self.client.create_machine(create()).await {
            Ok(machine) => machine,
            Err(error) => {
                self.record("CreateMachine answers", Outcome::Fail(error.to_string()));
                return;
            }
        };
        let shape = check_machine(&first);
        self.result("CreateMachine answers", shape);
        let second = self.client.create_machine(create()).await;
        let idempotent = match second {
            Ok(second) if second.provider_id == first.provider_id => Ok(()),
            Ok(second) => Err(format!(
                "a second CreateMachine for uid {} answered providerId {:?}, the first {:?}: a second machine",
                subject.machine.uid, second.provider_id, first.provider_id
            )),
            Err(error) => Err(error.to_string()),
        };
        self.result("CreateMachine idempotent by uid", idempotent);

        self.machine_listed(subject, &first.provider_id, lists)
            .await;

        let request = v1::GetMachineRequest {
            machine: Some(subject.machine.clone()),
            provider_id: first.provider_id.clone(),
        };
        let settled = self.until_settled(request.clone()).await;
        self.result("GetMachine until RUNNING or FAILED", settled);

        if !self.machine_deleted(subject, request, lists).await {
            return;
        }
        self.unknown_machine().await;
    }

    /// ListMachines shows the created machine once, with its providerId and cluster.
    async fn machine_listed(&mut self, subject: &Subject, provider_id: &str, lists: bool) {
        if lists {
            let listed = self.listed(subject).await;
            let once = match listed {
                Ok(machines) if machines.len() == 1 => {
                    let machine = &machines[0];
                    if machine.provider_id != provider_id {
                        Err(format!(
                            "ListMachines shows providerId {:?}, CreateMachine answered {:?}",
                            machine.provider_id, provider_id
                        ))
                    } else if machine.cluster_name != subject.machine.cluster_name {
                        Err(format!(
                            "ListMachines shows clusterName {:?}, the machine is of {:?}",
                            machine.cluster_name, subject.machine.cluster_name
                        ))
                    } else {
                        Ok(())
                    }
                }
                Ok(machines) => Err(format!(
                    "ListMachines shows {} machines with machineUid {}; expected one",
                    machines.len(),
                    subject.machine.uid
                )),
                Err(error) => Err(error.to_string()),
            };
            self.result("ListMachines lists the machine once", once);
        } else {
            self.record(
                "ListMachines lists the machine once",
                Outcome::Skip("no capability ListMachines".into()),
            );
        }
    }

    /// DeleteMachine until deleted, then GetMachine is NOT_FOUND, a second DeleteMachine
    /// succeeds and ListMachines forgets the machine; whether the deletion succeeded.
    async fn machine_deleted(
        &mut self,
        subject: &Subject,
        request: v1::GetMachineRequest,
        lists: bool,
    ) -> bool {
        let delete = v1::DeleteMachineRequest {
            machine: Some(subject.machine.clone()),
            provider_id: request.provider_id.clone(),
        };
        let deleted = self.until_deleted(delete.clone()).await;
        if !self.result("DeleteMachine until deleted", deleted) {
            return false;
        }
        let gone = match self.client.get_machine(request).await {
            Err(error) if error.is_not_found() => Ok(()),
            Err(error) => Err(format!("expected NOT_FOUND, got {error}")),
            Ok(machine) => Err(format!(
                "expected NOT_FOUND, the machine is still there in state {}",
                state_name(machine.state)
            )),
        };
        self.result("GetMachine NOT_FOUND after delete", gone);
        let again = match self.client.delete_machine(delete).await {
            Ok(answer) if answer.deleted => Ok(()),
            Ok(_) => Err("a second DeleteMachine said deleted: false".into()),
            Err(error) if error.is_not_found() => Ok(()),
            Err(error) => Err(error.to_string()),
        };
        self.result("DeleteMachine idempotent", again);
        if lists {
            let listed = match self.listed(subject).await {
                Ok(machines) if machines.is_empty() => Ok(()),
                Ok(_) => Err("ListMachines still shows the deleted machine".into()),
                Err(error) => Err(error.to_string()),
            };
            self.result("ListMachines forgets the deleted machine", listed);
        }
        true
    }

    /// GetMachine of a machine never created is NOT_FOUND, in the contract's error shape.
    async fn unknown_machine(&mut self) {
        let unknown = Subject::new();
        let never = match self
            .client
            .get_machine(v1::GetMachineRequest {
                machine: Some(unknown.machine),
                provider_id: String::new(),
            })
            .await
        {
            Err(error) if error.is_not_found() => Ok(()),
            Err(CallError {
                failure: CallFailure::Garbage(what),
                ..
            }) => Err(format!("the answer is not the contract's error: {what}")),
            Err(error) => Err(format!("expected NOT_FOUND, got {error}")),
            Ok(machine) => Err(format!(
                "a machine that was never created answered {:?} in state {}",
                machine.provider_id,
                state_name(machine.state)
            )),
        };
        self.result("GetMachine of an unknown machine is NOT_FOUND", never);
    }

    /// The listed machines with the subject's uid.
    async fn listed(&self, subject: &Subject) -> Result<Vec<v1::Machine>, CallError> {
        let listed = self
            .client
            .list_machines(v1::ListMachinesRequest {
                cluster_name: String::new(),
            })
            .await?;
        Ok(listed
            .machines
            .into_iter()
            .filter(|machine| machine.machine_uid == subject.machine.uid)
            .collect())
    }

    /// Calls `step` with a backoff (200 ms doubling to 5 s) until it says done (`Ok(true)`),
    /// fails, or [`Settings::wait`] is over (then `late`, with the wait).
    async fn until<F, Fut>(&self, late: &str, mut step: F) -> Result<(), String>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<bool, String>>,
    {
        let deadline = Instant::now() + self.settings.wait;
        let mut wait = Duration::from_millis(200);
        loop {
            if step().await? {
                return Ok(());
            }
            if Instant::now() + wait > deadline {
                return Err(format!("{late} {:?}", self.settings.wait));
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(5));
        }
    }

    async fn reconcile_cluster(&self, subject: &Subject) -> Result<(), String> {
        self.until("not ready within", || async {
            let answer = self
                .client
                .reconcile_cluster(v1::ReconcileClusterRequest {
                    cluster: Some(subject.cluster.clone()),
                    config: to_struct(&self.settings.cluster_config),
                })
                .await;
            match answer {
                Ok(answer) => Ok(answer.ready),
                Err(error) if retryable(&error) => Ok(false),
                Err(error) => Err(error.to_string()),
            }
        })
        .await
    }

    async fn delete_cluster(&self, subject: &Subject) -> Result<(), String> {
        self.until("not deleted within", || async {
            let answer = self
                .client
                .delete_cluster(v1::DeleteClusterRequest {
                    cluster: Some(subject.cluster.clone()),
                    config: to_struct(&self.settings.cluster_config),
                })
                .await;
            match answer {
                Ok(answer) => Ok(answer.deleted),
                Err(error) if error.is_not_found() => Ok(true),
                Err(error) if retryable(&error) => Ok(false),
                Err(error) => Err(error.to_string()),
            }
        })
        .await
    }

    async fn until_settled(&self, request: v1::GetMachineRequest) -> Result<(), String> {
        self.until("still PENDING after", || async {
            match self.client.get_machine(request.clone()).await {
                Ok(machine) => match MachineState::try_from(machine.state) {
                    Ok(MachineState::Running | MachineState::Failed) => Ok(true),
                    Ok(MachineState::Pending) => Ok(false),
                    _ => Err(format!(
                        "GetMachine answered state {}, not PENDING, RUNNING or FAILED",
                        state_name(machine.state)
                    )),
                },
                Err(error) if retryable(&error) => Ok(false),
                Err(error) => Err(error.to_string()),
            }
        })
        .await
    }

    async fn until_deleted(&self, request: v1::DeleteMachineRequest) -> Result<(), String> {
        self.until("not deleted within", || async {
            match self.client.delete_machine(request.clone()).await {
                Ok(answer) => Ok(answer.deleted),
                Err(error) if error.is_not_found() => Ok(true),
                Err(error) if retryable(&error) => Ok(false),
                Err(error) => Err(error.to_string()),
            }
        })
        .await
    }
}

impl Subject {
    fn new() -> Subject {
        let uid = uuid::Uuid::new_v4().to_string();
        let cluster = format!("conformance-{}", &uid[..8]);
        Subject {
            cluster: v1::ClusterRef {
                namespace: "corral-conformance".into(),
                name: cluster.clone(),
                uid: uuid::Uuid::new_v4().to_string(),
            },
            machine: v1::MachineRef {
                namespace: "corral-conformance".into(),
                name: format!("{cluster}-machine"),
                uid,
                cluster_name: cluster,
                failure_domain: String::new(),
                version: "v1.32.0".into(),
            },
        }
    }
}

/// A failure worth calling again for: the provider asked for it (UNAVAILABLE).
fn retryable(error: &CallError) -> bool {
    matches!(&error.failure, CallFailure::Provider(provider) if provider.code == ErrorCode::Unavailable)
}

fn check_info(info: &v1::GetInfoResponse) -> Result<(), String> {
    if info.name.is_empty() {
        return Err("name is empty".into());
    }
    if info.version.is_empty() {
        return Err("version is empty".into());
    }
    let known = [
        capabilities::VALIDATE_CONFIG,
        capabilities::LIST_MACHINES,
        capabilities::REBOOT_MACHINE,
    ];
    if let Some(unknown) = info
        .capabilities
        .iter()
        .find(|c| !known.contains(&c.as_str()))
    {
        return Err(format!("capability {unknown:?} is not one of {known:?}"));
    }
    for (field, schema) in [
        ("clusterConfigSchema", &info.cluster_config_schema),
        ("machineConfigSchema", &info.machine_config_schema),
    ] {
        let Some(schema) = schema else { continue };
        let schema = serde_json::to_value(schema).unwrap_or_default();
        let type_ = schema.get("type").and_then(serde_json::Value::as_str);
        if type_.is_some_and(|t| t != "object") {
            return Err(format!(
                "{field} has type {:?}; spec.config is an object",
                type_.unwrap_or_default()
            ));
        }
    }
    Ok(())
}

fn check_machine(machine: &v1::Machine) -> Result<(), String> {
    let Some((scheme, id)) = machine.provider_id.split_once("://") else {
        return Err(format!(
            "providerId {:?} is not <scheme>://<id>",
            machine.provider_id
        ));
    };
    if scheme.is_empty() || id.is_empty() {
        return Err(format!(
            "providerId {:?} is not <scheme>://<id>",
            machine.provider_id
        ));
    }
    match MachineState::try_from(machine.state) {
        Ok(MachineState::Pending | MachineState::Running | MachineState::Failed) => Ok(()),
        _ => Err(format!(
            "state {} is not PENDING, RUNNING or FAILED",
            state_name(machine.state)
        )),
    }
}

fn state_name(state: i32) -> String {
    MachineState::try_from(state)
        .map(|state| state.as_str_name().to_owned())
        .unwrap_or_else(|_| state.to_string())
}

fn to_struct(config: &serde_json::Value) -> Option<pbjson_types::Struct> {
    serde_json::from_value(config.clone()).ok()
}
