//! The MachineHealthCheck controller (upstream `core/reconcilers/machinehealthcheck`).
//!
//! A MachineHealthCheck watches the Machines of one Cluster that match its selector
//! (`targets.rs`), judges each one by its Node and its conditions (`target_health.rs`, a pure
//! planner), and records the verdict on the Machine as `HealthCheckSucceeded`. When too many
//! Machines are unhealthy at once, remediation is held back (`remediation_allowed.rs`, the
//! `triggerIf` short-circuit); otherwise each unhealthy Machine is handed over for remediation:
//! to its owner through `OwnerRemediated` False (a MachineSet then deletes and replaces it), or,
//! with `spec.remediation.templateRef`, to an external remediator through a request object
//! created from the template (`remediation.rs`). The MachineHealthCheck's own status (targets,
//! counts, RemediationAllowed) and what it writes on Machines are computed in `status.rs`.
//!
//! It never deletes Machines and writes nothing but conditions on them.
//!
//! Timeouts expire without any watch event, so a reconcile asks to be requeued when the
//! earliest running timeout would expire; the time it judges by is [`corral_runtime::Clock`].
//! It is fed by its MachineHealthChecks, by the Machines they select, by changes of their
//! Clusters that matter to the verdict (paused, infrastructure ready, control plane
//! initialized), and by the cluster cache: any Node change in the workload cluster, and the
//! connection coming up.

mod remediation;
pub mod remediation_allowed;
pub mod status;
pub mod target_health;
mod targets;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_api::{Cluster, Machine, MachineHealthCheck};
use futures::StreamExt;
use futures::stream::SelectAll;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::controller::{Action, ReconcileRequest, trigger_with};
use kube::runtime::events::EventType;
use kube::runtime::reflector::{ObjectRef, Store};

use corral_runtime::cluster_cache::ClusterKey;
use corral_runtime::conditions;
use corral_runtime::patch::{self, Part};
use corral_runtime::{self as runtime, Context, Queue, Shutdown};

use remediation::RemediationRequests;
use remediation_allowed::{RemediationAllowedError, TargetCounts, compute_remediation_allowed};
use target_health::{Health, HealthCheckTarget, compute_health};
use targets::Target;

/// The event on a Machine handed over for remediation (upstream
/// `EventMachineMarkedUnhealthy`).
pub const EVENT_MACHINE_MARKED_UNHEALTHY: &str = "MachineMarkedUnhealthy";

/// The event on a MachineHealthCheck whose `triggerIf` holds remediation back (upstream
/// `EventRemediationRestricted`).
pub const EVENT_REMEDIATION_RESTRICTED: &str = "RemediationRestricted";

/// A failed step of reconciling a MachineHealthCheck.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the Cluster failed.
    #[error("cannot get Cluster {cluster}")]
    GetCluster {
        /// The Cluster.
        cluster: ClusterKey,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The Cluster does not exist.
    #[error("Cluster {cluster} does not exist")]
    FindCluster {
        /// The Cluster.
        cluster: ClusterKey,
    },
    /// The selector has an expression kube cannot evaluate.
    #[error("cannot use the selector of MachineHealthCheck {machine_health_check}")]
    ParseSelector {
        /// The MachineHealthCheck, as `namespace/name`.
        machine_health_check: String,
        /// What is wrong.
        #[source]
        source: kube::core::ParseExpressionError,
    },
    /// A target's Node could not be looked up in the workload cluster.
    #[error("cannot look up Node {node} of Machine {machine}")]
    GetNode {
        /// The Machine.
        machine: String,
        /// The Node its `status.nodeRef` names.
        node: String,
        /// What went wrong.
        #[source]
        source: corral_runtime::cluster_cache::Error,
    },
    /// `triggerIf` cannot be read.
    #[error("cannot tell whether MachineHealthCheck {machine_health_check} may remediate")]
    ComputeRemediationAllowed {
        /// The MachineHealthCheck, as `namespace/name`.
        machine_health_check: String,
        /// What is wrong.
        #[source]
        source: RemediationAllowedError,
    },
    /// Writing a Machine's conditions failed.
    #[error("cannot write the conditions of Machine {machine}")]
    PatchMachine {
        /// The Machine, as `namespace/name`.
        machine: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Writing the MachineHealthCheck failed.
    #[error("cannot write MachineHealthCheck {machine_health_check}")]
    PatchMachineHealthCheck {
        /// The MachineHealthCheck, as `namespace/name`.
        machine_health_check: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The remediation template's kind does not end in `Template`.
    #[error("remediation template kind {kind} does not end in Template")]
    RemediationTemplateKind {
        /// The kind.
        kind: String,
    },
    /// No API serves the remediation kind (or its template kind).
    #[error("cannot find the resource of {kind} in {api_version}")]
    ResolveRemediationKind {
        /// The API version.
        api_version: String,
        /// The kind.
        kind: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Listing the remediation requests failed.
    #[error("cannot list {kind} objects in namespace {namespace}")]
    ListRemediationRequests {
        /// The request kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Reading the remediation template failed.
    #[error("cannot get remediation template {kind} {namespace}/{name}")]
    GetRemediationTemplate {
        /// The template kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The template's name.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// The remediation template does not exist.
    #[error("remediation template {kind} {namespace}/{name} does not exist")]
    FindRemediationTemplate {
        /// The template kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The template's name.
        name: String,
    },
    /// The remediation template has no `spec.template`.
    #[error("remediation template {kind} {namespace}/{name} has no spec.template")]
    ReadRemediationTemplate {
        /// The template kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The template's name.
        name: String,
    },
    /// Creating a remediation request failed.
    #[error(
        "cannot create {kind} {namespace}/{name} for MachineHealthCheck {machine_health_check}"
    )]
    CreateRemediationRequest {
        /// The request kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The request's name, the Machine's.
        name: String,
        /// The MachineHealthCheck, as `namespace/name`.
        machine_health_check: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
    /// Deleting a remediation request of a healthy Machine failed.
    #[error("cannot delete {kind} {namespace}/{name}")]
    DeleteRemediationRequest {
        /// The request kind.
        kind: String,
        /// The namespace.
        namespace: String,
        /// The request's name, the Machine's.
        name: String,
        /// What went wrong.
        #[source]
        source: kube::Error,
    },
}

/// The MachineHealthCheck controller's state, shared by its reconciles.
pub(crate) struct MachineHealthCheckController {
    ctx: Arc<Context>,
    clusters: Store<Cluster>,
    machines: Store<Machine>,
}

/// What one reconcile works on.
struct Scope {
    /// The MachineHealthCheck as read.
    before: Arc<MachineHealthCheck>,
    /// The MachineHealthCheck as it should be; written back at the end.
    check: MachineHealthCheck,
    /// Its Cluster.
    cluster: Arc<Cluster>,
    /// The Cluster's namespace and name.
    cluster_key: ClusterKey,
    /// The time targets are judged at.
    now: Timestamp,
    /// The same, as conditions store it.
    now_time: Time,
    /// When the earliest running timeout expires.
    requeue_after: Option<Duration>,
    /// Events about the MachineHealthCheck to publish once it is written.
    events: Vec<(EventType, &'static str, String)>,
}

/// Starts the MachineHealthCheck controller; returns at shutdown.
pub(crate) async fn run(ctx: Arc<Context>, shutdown: Shutdown) {
    // Subscribed before anything else, so that no connection made meanwhile goes unseen.
    let nodes = ctx.cluster_cache().subscribe_nodes();
    let connections = ctx.cluster_cache().subscribe_connections();
    let caches = ctx.caches();
    let check_cache = caches.machine_health_checks();
    let check_store = check_cache.store();
    let checks = check_cache.applied();
    let machine_cache = caches.machines();
    let machine_store = machine_cache.store();
    let machines = machine_cache.touched();
    let cluster_cache = caches.clusters();
    let cluster_store = cluster_cache.store();
    let clusters = cluster_cache.applied();

    let mut queue: SelectAll<Queue<MachineHealthCheck>> = SelectAll::new();
    queue.push(corral_runtime::shared::trigger_own(checks).boxed());
    let store = check_store.clone();
    queue.push(
        trigger_with(machines, move |machine: Arc<Machine>| {
            checks_of_machine(&store, &machine)
        })
        .boxed(),
    );
    let store = check_store.clone();
    let seen: Mutex<HashMap<ClusterKey, String>> = Mutex::new(HashMap::new());
    queue.push(
        trigger_with(clusters, move |cluster: Arc<Cluster>| {
            let key = ClusterKey::new(
                &cluster.namespace().unwrap_or_default(),
                &cluster.name_any(),
            );
            let signature = cluster_signature(&cluster);
            let changed = seen
                .lock()
                .expect("seen lock")
                .insert(key.clone(), signature.clone())
                != Some(signature);
            if changed {
                checks_of_cluster(&store, &key)
            } else {
                Vec::new()
            }
        })
        .boxed(),
    );
    let store = check_store.clone();
    queue.push(
        nodes
            .flat_map(move |event| futures::stream::iter(checks_of_cluster(&store, &event.cluster)))
            .map(|request| Ok(ReconcileRequest::from(request)))
            .boxed(),
    );
    let store = check_store.clone();
    queue.push(
        connections
            .flat_map(move |cluster| futures::stream::iter(checks_of_cluster(&store, &cluster)))
            .map(|request| Ok(ReconcileRequest::from(request)))
            .boxed(),
    );

    let controller = Arc::new(MachineHealthCheckController {
        ctx: ctx.clone(),
        clusters: cluster_store,
        machines: machine_store,
    });
    runtime::run_controller(
        "machinehealthcheck",
        controller,
        ctx.config(),
        check_store,
        queue.boxed(),
        shutdown,
        reconcile,
    )
    .await;
}

/// The MachineHealthChecks of a Cluster.
fn checks_of_cluster(
    checks: &Store<MachineHealthCheck>,
    cluster: &ClusterKey,
) -> Vec<ObjectRef<MachineHealthCheck>> {
    checks
        .state()
        .iter()
        .filter(|check| {
            check.metadata.namespace.as_deref() == Some(cluster.namespace.as_str())
                && check.spec.cluster_name == cluster.name
        })
        .map(|check| ObjectRef::from_obj(check.as_ref()))
        .collect()
}

/// The MachineHealthChecks a Machine event concerns: those that select it now, and those
/// that counted it among their targets (it may have stopped matching).
fn checks_of_machine(
    checks: &Store<MachineHealthCheck>,
    machine: &Machine,
) -> Vec<ObjectRef<MachineHealthCheck>> {
    let name = machine.name_any();
    checks
        .state()
        .iter()
        .filter(|check| check.metadata.namespace == machine.metadata.namespace)
        .filter(|check| {
            let selected = targets::target_selector(check)
                .is_ok_and(|selector| targets::selects(check, &selector, machine));
            let counted = check
                .status
                .as_ref()
                .is_some_and(|status| status.targets.contains(&name));
            selected || counted
        })
        .map(|check| ObjectRef::from_obj(check.as_ref()))
        .collect()
}

/// What about a Cluster the verdicts depend on: paused, and when its infrastructure became
/// ready and its control plane initialized (upstream watches paused transitions only, and
/// misses the others until something else happens).
fn cluster_signature(cluster: &Cluster) -> String {
    let condition = |type_: &str| {
        cluster
            .status
            .as_ref()
            .and_then(|status| conditions::get(&status.conditions, type_))
            .map(|condition| format!("{}@{}", condition.status, condition.last_transition_time.0))
            .unwrap_or_default()
    };
    format!(
        "{:?}/{}/{}/{}/{}",
        cluster.spec.paused,
        runtime::has_paused_annotation(cluster),
        condition(corral_api::conditions::INFRASTRUCTURE_READY),
        condition(corral_api::conditions::cluster::CONTROL_PLANE_INITIALIZED),
        cluster.metadata.deletion_timestamp.is_some(),
    )
}

impl MachineHealthCheckController {
    /// The Cluster, from the cache or, when the cache does not have it yet, the API.
    async fn cluster(&self, key: &ClusterKey) -> Result<Option<Arc<Cluster>>, Error> {
        if let Some(cluster) = self
            .clusters
            .get(&ObjectRef::new(&key.name).within(&key.namespace))
        {
            return Ok(Some(cluster));
        }
        let api: Api<Cluster> = Api::namespaced(self.ctx.client().clone(), &key.namespace);
        api.get_opt(&key.name)
            .await
            .map(|cluster| cluster.map(Arc::new))
            .map_err(|source| Error::GetCluster {
                cluster: key.clone(),
                source,
            })
    }
}

async fn reconcile(
    check: Arc<MachineHealthCheck>,
    controller: Arc<MachineHealthCheckController>,
) -> Result<Action, Error> {
    // No finalizer: a MachineHealthCheck being deleted has nothing left to do.
    if check.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ctx = &controller.ctx;
    let namespace = check.namespace().unwrap_or_default();
    let api: Api<MachineHealthCheck> = Api::namespaced(ctx.client().clone(), &namespace);
    let key = runtime::object_key(check.as_ref());
    let write_error = |source| Error::PatchMachineHealthCheck {
        machine_health_check: key.clone(),
        source,
    };
    let cluster_key = ClusterKey::new(&namespace, &check.spec.cluster_name);
    let cluster = controller
        .cluster(&cluster_key)
        .await?
        .ok_or_else(|| Error::FindCluster {
            cluster: cluster_key.clone(),
        })?;

    let clock = &ctx.config().clock;
    let now = clock.now();
    let mut scope = Scope {
        before: check.clone(),
        check: (*check).clone(),
        cluster,
        cluster_key,
        now,
        now_time: Time(Timestamp::from_second(now.as_second()).unwrap_or(now)),
        requeue_after: None,
        events: Vec::new(),
    };
    if status::set_paused_condition(&mut scope.check, &scope.cluster, &scope.now_time) {
        tracing::debug!("Reconciliation is paused");
        patch::write(&api, &check, &scope.check)
            .await
            .map_err(write_error)?;
        return Ok(Action::await_change());
    }
    status::set_cluster_label_and_owner(&mut scope.check, &scope.cluster);

    let result = reconcile_targets(&controller, &mut scope).await;
    // The status is written whatever happened, as upstream's deferred patch does; the
    // generation is observed only by a reconcile that went through.
    if result.is_ok() {
        scope
            .check
            .status
            .get_or_insert_with(Default::default)
            .observed_generation = scope.check.metadata.generation;
    }
    patch::write(&api, &check, &scope.check)
        .await
        .map_err(write_error)?;
    for (type_, reason, note) in std::mem::take(&mut scope.events) {
        ctx.publish_event(check.as_ref(), type_, reason, "Remediate", note)
            .await;
    }
    result?;
    Ok(runtime::action(scope.requeue_after))
}

/// Judges the targets, decides whether remediation may happen, and writes each target's
/// conditions (upstream `reconcile`, `patchHealthyTargets`, `patchUnhealthyTargets`). Every
/// target is written even when one fails; the first failure is returned.
async fn reconcile_targets(
    controller: &MachineHealthCheckController,
    scope: &mut Scope,
) -> Result<(), Error> {
    let ctx = &controller.ctx;
    let machines =
        targets::select_machines(&scope.before, &controller.machines).map_err(|source| {
            Error::ParseSelector {
                machine_health_check: runtime::object_key(scope.before.as_ref()),
                source,
            }
        })?;
    let targets = targets::find_nodes(
        ctx.cluster_cache(),
        &scope.cluster_key,
        &scope.cluster,
        machines,
    )
    .await?;

    let checks = &scope.before.spec.checks;
    let judged: Vec<(Target, Health)> = targets
        .into_iter()
        .map(|target| {
            let health = compute_health(
                &HealthCheckTarget {
                    cluster: &scope.cluster,
                    machine: &target.machine,
                    node: target.node.as_target_node(),
                },
                checks,
                scope.now,
            );
            (target, health)
        })
        .collect();
    let count = |wanted: fn(&Health) -> bool| {
        judged.iter().filter(|(_, health)| wanted(health)).count() as i32
    };
    let counts = TargetCounts {
        expected: judged.len() as i32,
        healthy: count(|health| matches!(health, Health::Healthy)),
        unhealthy: count(|health| matches!(health, Health::Unhealthy { .. })),
    };
    let names = judged
        .iter()
        .map(|(target, _)| target.machine.name_any())
        .collect();
    status::set_targets(&mut scope.check, names, counts);
    for (target, health) in &judged {
        if let Health::Pending {
            next_check_in: Some(next),
        } = health
        {
            tracing::debug!(machine = %target.machine.name_any(), check_in = ?next, "Target may go unhealthy");
            scope.requeue_after = runtime::sooner(scope.requeue_after, Some(*next));
        }
    }

    let allowance = compute_remediation_allowed(counts, &scope.before.spec.remediation.trigger_if)
        .map_err(|source| Error::ComputeRemediationAllowed {
            machine_health_check: runtime::object_key(scope.before.as_ref()),
            source,
        })?;
    let changed = status::set_remediation_allowed(&mut scope.check, &allowance, &scope.now_time);
    if let Some(message) = allowance.message.as_ref().filter(|_| !allowance.allowed) {
        tracing::debug!(
            total = counts.expected,
            unhealthy = counts.unhealthy,
            "Short-circuiting remediation"
        );
        // Told once per restriction, and only when something is unhealthy, as upstream
        // avoids a misleading event.
        if changed && counts.unhealthy > 0 {
            scope.events.push((
                EventType::Warning,
                EVENT_REMEDIATION_RESTRICTED,
                message.clone(),
            ));
        }
    }

    // External remediation requests matter only while remediation is allowed: to create one
    // for an unhealthy Machine, or to delete that of a healthy one.
    let mut first_error = None;
    let (requests, requests_unusable) = if allowance.allowed
        && judged
            .iter()
            .any(|(_, health)| !matches!(health, Health::Pending { .. }))
    {
        match RemediationRequests::list(ctx.client(), &scope.before).await {
            Ok(requests) => (requests, false),
            Err(error) => {
                first_error = Some(error);
                (None, true)
            }
        }
    } else {
        (None, false)
    };
    let remediation = Remediation {
        allowed: allowance.allowed,
        requests: requests.as_ref(),
        requests_unusable,
    };
    for (target, health) in &judged {
        if let Err(error) = reconcile_target(controller, scope, target, health, &remediation).await
        {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// How unhealthy targets are remediated in this reconcile.
struct Remediation<'a> {
    /// Whether `triggerIf` allows remediation.
    allowed: bool,
    /// The external remediation requests, with a template reference.
    requests: Option<&'a RemediationRequests<'a>>,
    /// There is a template reference, but its request kind cannot be used.
    requests_unusable: bool,
}

/// Records the verdict on one target and, for an unhealthy one when allowed, asks for its
/// remediation; for a healthy one, deletes its external remediation request.
async fn reconcile_target(
    controller: &MachineHealthCheckController,
    scope: &Scope,
    target: &Target,
    health: &Health,
    remediation: &Remediation<'_>,
) -> Result<(), Error> {
    let machine = &target.machine;
    let now = &scope.now_time;
    let mut after = (**machine).clone();
    status::set_health_check_succeeded_condition(&mut after, health, now);
    let mut error = None;
    let mut requested = false;
    if remediation.allowed {
        match health {
            Health::Healthy => {
                if let Some(requests) = remediation.requests {
                    error = requests.delete(machine).await.err();
                }
            }
            // A Machine being deleted is being remediated already, or going anyway.
            Health::Unhealthy { reason, .. } if machine.metadata.deletion_timestamp.is_none() => {
                if let Some(requests) = remediation.requests {
                    let waiting = corral_api::conditions::machine::reason::WAITING_FOR_REMEDIATION;
                    if requests.exists(machine) {
                        status::set_externally_remediated_condition(
                            &mut after,
                            waiting,
                            String::new(),
                            now,
                        );
                    } else {
                        tracing::info!(machine = %machine.name_any(), %reason, "Machine has failed its health check, creating an external remediation request");
                        match requests.create(machine).await {
                            Ok(()) => {
                                requested = true;
                                status::set_externally_remediated_condition(
                                    &mut after,
                                    waiting,
                                    String::new(),
                                    now,
                                );
                            }
                            Err(failure) => {
                                status::set_externally_remediated_condition(
                                    &mut after,
                                    failure.reason,
                                    failure.message,
                                    now,
                                );
                                error = Some(failure.error);
                            }
                        }
                    }
                } else if remediation.requests_unusable {
                    let template = scope.before.spec.remediation.template_ref.as_ref();
                    status::set_externally_remediated_condition(
                        &mut after,
                        corral_api::conditions::machine::reason::REMEDIATION_TEMPLATE_NOT_FOUND,
                        format!(
                            "Error retrieving remediation template {} {}/{}",
                            template.map_or("", |t| t.kind.as_str()),
                            scope.cluster_key.namespace,
                            template.map_or("", |t| t.name.as_str()),
                        ),
                        now,
                    );
                } else {
                    requested = status::mark_owner_remediated(&mut after, now);
                    if requested {
                        tracing::info!(machine = %machine.name_any(), %reason, "Machine has failed its health check, marking it for remediation by its owner");
                    }
                }
            }
            _ => {}
        }
    }

    let newly_marked =
        matches!(health, Health::Unhealthy { .. }) && !status::is_marked_unhealthy(machine);
    let api: Api<Machine> = Api::namespaced(
        controller.ctx.client().clone(),
        &machine.namespace().unwrap_or_default(),
    );
    patch::patch_if_changed(&api, machine, &after, Part::Status)
        .await
        .map_err(|source| Error::PatchMachine {
            machine: runtime::object_key(machine.as_ref()),
            source,
        })?;
    if let Health::Unhealthy { reason, .. } = health
        && remediation.allowed
        && (newly_marked || requested)
    {
        let note = format!(
            "Machine {} has been marked as unhealthy by {} ({reason})",
            runtime::object_key(machine.as_ref()),
            runtime::object_key(scope.before.as_ref()),
        );
        controller
            .ctx
            .publish_event(
                machine.as_ref(),
                EventType::Normal,
                EVENT_MACHINE_MARKED_UNHEALTHY,
                "Remediate",
                note,
            )
            .await;
    }
    error.map_or(Ok(()), Err)
}
