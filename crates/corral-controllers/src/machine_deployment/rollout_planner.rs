//! Planning a MachineDeployment's next step: which of its MachineSets is current, how many
//! replicas each MachineSet should have now, the bookkeeping annotations they carry, which old
//! MachineSets can be deleted, and which MachineSet a rollback returns to.
//!
//! Upstream sources: `core/reconcilers/machinedeployment/machinedeployment_rollout_planner.go`
//! (finding the current MachineSet, revisions, annotations),
//! `machinedeployment_rollout_rollingupdate.go` (RollingUpdate), `machinedeployment_rollout_ondelete.go`
//! (OnDelete), `machinedeployment_sync.go` (scaling a paused MachineDeployment, cleanup) and
//! `mdutil/util.go` (the arithmetic).
//!
//! The planner sees MachineSets as plain [`MachineSetState`]s and answers with a [`RolloutPlan`];
//! it never talks to the API server, so one reconcile is one call and a rollout is a sequence of
//! calls. The simulation in `simulation.rs` runs such sequences against a fake world and checks
//! them against golden traces.
//!
//! # RollingUpdate in one paragraph
//!
//! With `R = spec.replicas`, maxSurge resolves against R rounding up and maxUnavailable rounding
//! down; when both come to 0, maxUnavailable becomes 1. The current MachineSet grows while the
//! Machines of all MachineSets (counting each as `max(spec, status)`) stay within `R + maxSurge`,
//! and never beyond R. Old MachineSets, oldest first, shrink while the available Machines stay at
//! or above `R − maxUnavailable`, assuming the worst: that every Machine deleted is an available
//! one. Unavailable replicas go first, and nothing old goes while the current MachineSet has
//! unavailable Machines. When only unavailable old Machines block the rollout, one of them is let
//! go (the deadlock breaker).
//!
//! # What Corral adds
//!
//! Upstream removed rollback in v1.11. Corral keeps old MachineSets up to a revision history
//! limit and can return to one of them ([`compute_rollback_target`]): the MachineDeployment takes
//! that MachineSet's template, the planner then finds it as the current MachineSet and gives it
//! the next revision, as upstream does whenever an old template comes back.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use corral_api::annotations::{DESIRED_REPLICAS, DISABLE_MACHINE_CREATE, MAX_REPLICAS, REVISION};
use corral_api::{
    MachineDeploymentRollout, MachineDeploymentRolloutStrategyType, MachineSet, MachineTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::int_or_percent::{IntOrPercentError, scaled_value};

#[cfg(test)]
mod simulation;
#[cfg(test)]
mod tests;

/// On the current MachineSet: the revisions it had before it became current again, comma
/// separated. Upstream still writes it (deprecated, `mdutil/util.go`); Corral keeps it so that a
/// rollback can say where a MachineSet has been.
pub const REVISION_HISTORY: &str = "machinedeployment.clusters.x-k8s.io/revision-history";

/// How a MachineDeployment replaces Machines, with its bounds as written.
#[derive(Clone, Debug, PartialEq)]
pub enum RolloutStrategy {
    /// Create and delete Machines step by step within the bounds.
    RollingUpdate {
        /// Machines allowed above `spec.replicas`, a number or a percentage rounded up.
        max_surge: IntOrString,
        /// Machines allowed to be unavailable, a number or a percentage rounded down.
        max_unavailable: IntOrString,
    },
    /// Create new Machines only as someone deletes old ones.
    OnDelete,
}

impl RolloutStrategy {
    /// The strategy of `spec.rollout`, with upstream's defaults where it says nothing:
    /// RollingUpdate, maxSurge 1, maxUnavailable 0.
    pub fn from_spec(rollout: &MachineDeploymentRollout) -> Self {
        let Some(strategy) = &rollout.strategy else {
            return RolloutStrategy::RollingUpdate {
                max_surge: IntOrString::Int(1),
                max_unavailable: IntOrString::Int(0),
            };
        };
        match strategy.type_ {
            MachineDeploymentRolloutStrategyType::OnDelete => RolloutStrategy::OnDelete,
            MachineDeploymentRolloutStrategyType::RollingUpdate => {
                let bounds = &strategy.rolling_update;
                RolloutStrategy::RollingUpdate {
                    max_surge: bounds.max_surge.clone().unwrap_or(IntOrString::Int(1)),
                    max_unavailable: bounds
                        .max_unavailable
                        .clone()
                        .unwrap_or(IntOrString::Int(0)),
                }
            }
        }
    }
}

/// maxSurge and maxUnavailable resolved against `replicas`: surge rounded up, unavailable
/// rounded down, and unavailable 1 when both come to 0, on the theory that surging might be
/// impossible for lack of quota (upstream `ResolveFenceposts`).
pub fn resolve_fenceposts(
    max_surge: &IntOrString,
    max_unavailable: &IntOrString,
    replicas: i32,
) -> Result<(i32, i32), IntOrPercentError> {
    let surge = scaled_value(max_surge, replicas, true)?;
    let unavailable = scaled_value(max_unavailable, replicas, false)?;
    if surge == 0 && unavailable == 0 {
        return Ok((0, 1));
    }
    Ok((surge, unavailable))
}

/// How many Machines a MachineDeployment of `replicas` may have above `replicas` during a
/// rollout: the resolved maxSurge, 0 for OnDelete (upstream `MaxSurge`).
pub fn max_surge(strategy: &RolloutStrategy, replicas: i32) -> Result<i32, IntOrPercentError> {
    match strategy {
        RolloutStrategy::OnDelete => Ok(0),
        RolloutStrategy::RollingUpdate {
            max_surge,
            max_unavailable,
        } => Ok(resolve_fenceposts(max_surge, max_unavailable, replicas)?.0),
    }
}

/// How many of a MachineDeployment's `replicas` may be unavailable during a rollout: the
/// resolved maxUnavailable, at most `replicas`; 0 for OnDelete or no replicas (upstream
/// `MaxUnavailable`).
pub fn max_unavailable(
    strategy: &RolloutStrategy,
    replicas: i32,
) -> Result<i32, IntOrPercentError> {
    match strategy {
        RolloutStrategy::OnDelete => Ok(0),
        RolloutStrategy::RollingUpdate { .. } if replicas == 0 => Ok(0),
        RolloutStrategy::RollingUpdate {
            max_surge,
            max_unavailable,
        } => Ok(resolve_fenceposts(max_surge, max_unavailable, replicas)?
            .1
            .min(replicas)),
    }
}

/// How a MachineSet's template differs from the MachineDeployment's in the fields that call for
/// new Machines: version, bootstrap, infrastructure reference and failure domain (upstream
/// `MachineTemplateUpToDate`). Labels, annotations, minReadySeconds, readiness gates, deletion
/// timeouts and taints are propagated in place and never make a difference. Empty when the
/// templates match.
pub fn template_differences(
    current: &MachineTemplateSpec,
    desired: &MachineTemplateSpec,
) -> Vec<String> {
    let (current, desired) = (&current.spec, &desired.spec);
    let mut differences = Vec::new();
    if current.version != desired.version {
        differences.push(format!(
            "spec.version {}, {} required",
            current.version.as_deref().unwrap_or_default(),
            desired.version.as_deref().unwrap_or_default()
        ));
    }
    if current.bootstrap != desired.bootstrap {
        // As upstream, the message follows the current template's way of getting bootstrap
        // data, while the comparison covers both.
        if let Some(current_ref) = &current.bootstrap.config_ref {
            let (kind, name) = desired
                .bootstrap
                .config_ref
                .as_ref()
                .map(|desired_ref| (desired_ref.kind.as_str(), desired_ref.name.as_str()))
                .unwrap_or_default();
            differences.push(format!(
                "spec.bootstrap.configRef {} {}, {kind} {name} required",
                current_ref.kind, current_ref.name
            ));
        } else {
            differences.push(format!(
                "spec.bootstrap.dataSecretName {}, {} required",
                current
                    .bootstrap
                    .data_secret_name
                    .as_deref()
                    .unwrap_or("nil"),
                desired
                    .bootstrap
                    .data_secret_name
                    .as_deref()
                    .unwrap_or("nil")
            ));
        }
    }
    if current.infrastructure_ref != desired.infrastructure_ref {
        differences.push(format!(
            "spec.infrastructureRef {} {}, {} {} required",
            current.infrastructure_ref.kind,
            current.infrastructure_ref.name,
            desired.infrastructure_ref.kind,
            desired.infrastructure_ref.name
        ));
    }
    if current.failure_domain != desired.failure_domain {
        differences.push(format!(
            "spec.failureDomain {}, {} required",
            current.failure_domain.as_deref().unwrap_or_default(),
            desired.failure_domain.as_deref().unwrap_or_default()
        ));
    }
    differences
}

/// What the planner needs to know about one MachineSet of the MachineDeployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSetState {
    /// The MachineSet's name.
    pub name: String,
    /// When it was created. Old MachineSets shrink oldest first, and `rollout.after` accepts only
    /// MachineSets created after it.
    pub created: Timestamp,
    /// How its template differs from the MachineDeployment's ([`template_differences`]);
    /// empty when it matches.
    pub template_differences: Vec<String>,
    /// Its [`REVISION`] annotation, as written.
    pub revision: Option<String>,
    /// Its [`REVISION_HISTORY`] annotation, as written.
    pub revision_history: Option<String>,
    /// Its [`DESIRED_REPLICAS`] annotation: the MachineDeployment's replicas when the
    /// MachineSet was last planned.
    pub desired_replicas: Option<i32>,
    /// Its [`MAX_REPLICAS`] annotation: the MachineDeployment's replicas plus maxSurge when the
    /// MachineSet was last planned. Scaling a paused MachineDeployment sizes MachineSets in
    /// proportion to it.
    pub max_replicas: Option<i32>,
    /// `spec.replicas`.
    pub replicas: i32,
    /// `status.replicas`: the Machines it has, including those being deleted.
    pub status_replicas: i32,
    /// `status.availableReplicas`.
    pub available_replicas: i32,
    /// `status.upToDateReplicas`.
    pub up_to_date_replicas: i32,
    /// Whether it has a deletion timestamp.
    pub deleting: bool,
    /// Whether its status was computed from its current generation.
    pub generation_observed: bool,
}

impl MachineSetState {
    /// The state of `machine_set` as the MachineDeployment with template `md_template` sees it.
    ///
    /// An unset `spec.replicas` counts as 1, as Corral's controllers read it; unset status
    /// counters count as 0.
    pub fn from_machine_set(machine_set: &MachineSet, md_template: &MachineTemplateSpec) -> Self {
        let annotations = machine_set.metadata.annotations.as_ref();
        let annotation = |key: &str| annotations.and_then(|map| map.get(key)).cloned();
        let number = |key: &str| annotation(key).and_then(|value| value.parse().ok());
        let status = machine_set.status.clone().unwrap_or_default();
        MachineSetState {
            name: machine_set.metadata.name.clone().unwrap_or_default(),
            created: machine_set
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(Timestamp::UNIX_EPOCH, |time| time.0),
            template_differences: template_differences(&machine_set.spec.template, md_template),
            revision: annotation(REVISION),
            revision_history: annotation(REVISION_HISTORY),
            desired_replicas: number(DESIRED_REPLICAS),
            max_replicas: number(MAX_REPLICAS),
            replicas: machine_set.spec.replicas.unwrap_or(1),
            status_replicas: status.replicas.unwrap_or(0),
            available_replicas: status.available_replicas.unwrap_or(0),
            up_to_date_replicas: status.up_to_date_replicas.unwrap_or(0),
            deleting: machine_set.metadata.deletion_timestamp.is_some(),
            generation_observed: status.observed_generation.unwrap_or(0)
                >= machine_set.metadata.generation.unwrap_or(0),
        }
    }

    /// Whether its template matches the MachineDeployment's.
    pub fn matches_template(&self) -> bool {
        self.template_differences.is_empty()
    }

    /// Its revision as a number: 0 when it has none, `None` when it does not parse.
    fn revision_number(&self) -> Option<i64> {
        match &self.revision {
            None => Some(0),
            Some(value) => value.parse().ok(),
        }
    }
}

/// Everything one planning step looks at.
#[derive(Clone, Debug)]
pub struct RolloutInput<'a> {
    /// The MachineDeployment's `spec.replicas`.
    pub replicas: i32,
    /// Its strategy.
    pub strategy: &'a RolloutStrategy,
    /// `spec.paused`: a paused MachineDeployment scales, proportionally, but does not roll out.
    pub paused: bool,
    /// `spec.rollout.after`.
    pub rollout_after: Option<Timestamp>,
    /// The time of this reconcile.
    pub now: Timestamp,
    /// Its MachineSets.
    pub machine_sets: &'a [MachineSetState],
    /// The name for a new MachineSet, used only if one has to be created. The caller makes it
    /// (upstream: the MachineDeployment's name, a dash and five random characters), so that
    /// the planner stays deterministic.
    pub new_machine_set_name: &'a str,
    /// How many old MachineSets without replicas to keep once a rollout is complete, for
    /// rollbacks. Upstream keeps none: 0.
    pub revision_history_limit: u32,
    /// Whether the MachineDeployment's status was computed from its current generation; old
    /// MachineSets are deleted only then.
    pub generation_observed: bool,
}

/// What one MachineSet should look like after this step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSetPlan {
    /// Its name.
    pub name: String,
    /// Whether it is the current MachineSet, the one whose template matches.
    pub current: bool,
    /// Whether it does not exist yet and must be created.
    pub create: bool,
    /// `spec.replicas` before this step (0 for one to create).
    pub replicas_before: i32,
    /// `spec.replicas` after this step.
    pub replicas: i32,
    /// The annotations the MachineDeployment manages on it, with their values: [`REVISION`]
    /// (and [`REVISION_HISTORY`] when there is one), [`DESIRED_REPLICAS`], [`MAX_REPLICAS`] and
    /// [`DISABLE_MACHINE_CREATE`].
    pub annotations: BTreeMap<&'static str, String>,
    /// Why it changed, for logs and events (upstream's notes).
    pub notes: Vec<String>,
}

/// The planner's answer for one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RolloutPlan {
    /// The name of the current MachineSet, existing or to create. `None` only for a paused
    /// MachineDeployment whose template no MachineSet matches: pausing stops new MachineSets.
    pub current: Option<String>,
    /// Why a MachineSet is created, when one is.
    pub create_reason: Option<String>,
    /// The revision to put on the MachineDeployment: the current MachineSet's.
    pub revision: Option<String>,
    /// Every MachineSet: the given ones in the given order, then the one to create.
    pub machine_sets: Vec<MachineSetPlan>,
    /// Whether the rollout is complete: replicas Machines, all up to date and available
    /// (upstream `DeploymentComplete`).
    pub complete: bool,
    /// Old MachineSets to delete now: only once the rollout is complete, only those without
    /// Machines, beyond the revision history limit.
    pub machine_sets_to_delete: Vec<String>,
}

impl RolloutPlan {
    /// The plan for the MachineSet called `name`.
    pub fn machine_set(&self, name: &str) -> Option<&MachineSetPlan> {
        self.machine_sets.iter().find(|plan| plan.name == name)
    }
}

/// Why a step could not be planned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RolloutPlanError {
    /// maxSurge or maxUnavailable is neither a number nor a percentage.
    #[error("resolving the rolling update bounds")]
    ResolveBounds(#[source] IntOrPercentError),
    /// The current MachineSet's revision annotation is not a number.
    #[error("MachineSet {machine_set} has revision {revision:?}, not a number")]
    ParseRevision {
        /// The MachineSet.
        machine_set: String,
        /// The annotation's value.
        revision: String,
    },
}

impl From<IntOrPercentError> for RolloutPlanError {
    fn from(error: IntOrPercentError) -> Self {
        RolloutPlanError::ResolveBounds(error)
    }
}

/// Plans one step of a MachineDeployment: RollingUpdate, OnDelete, or proportional scaling when
/// paused; then, if the rollout is complete, which old MachineSets to delete.
pub fn compute_rollout_plan(input: &RolloutInput<'_>) -> Result<RolloutPlan, RolloutPlanError> {
    let mut planner = Planner::new(input)?;
    if input.paused {
        planner.plan_paused_scale();
    } else {
        match input.strategy {
            RolloutStrategy::RollingUpdate { .. } => planner.plan_rolling_update(),
            RolloutStrategy::OnDelete => planner.plan_on_delete(),
        }
    }
    Ok(planner.finish())
}

/// The MachineSet a rollback returns to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RollbackTarget {
    /// Its name; the MachineDeployment takes its template.
    pub machine_set: String,
    /// Its revision.
    pub revision: i64,
    /// Whether it already is the current MachineSet, so that there is nothing to do.
    pub already_current: bool,
}

/// Why a rollback has nowhere to go.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RollbackError {
    /// No MachineSet has the revision asked for: it never existed, or it was cleaned up.
    #[error("no MachineSet has revision {0}")]
    RevisionNotFound(i64),
    /// Rolling back to the previous revision, but there is only one.
    #[error("there is no revision before the current one to roll back to")]
    NoPreviousRevision,
}

/// The MachineSet to roll back to: the one with revision `to_revision`, or with the revision
/// before the latest when `to_revision` is `None` (as `kubectl rollout undo`). MachineSets being
/// deleted are not candidates. The caller copies its template's spec into the
/// MachineDeployment's; the next plans make it current again under a new revision.
pub fn compute_rollback_target(
    machine_sets: &[MachineSetState],
    to_revision: Option<i64>,
) -> Result<RollbackTarget, RollbackError> {
    let mut candidates: Vec<(i64, &MachineSetState)> = machine_sets
        .iter()
        .filter(|machine_set| !machine_set.deleting)
        .filter_map(|machine_set| {
            let revision = machine_set.revision_number()?;
            (revision > 0).then_some((revision, machine_set))
        })
        .collect();
    // Highest revision first; should two MachineSets share one, the bigger wins, as upstream
    // picks among MachineSets matching the same template.
    candidates.sort_by(|(revision_a, a), (revision_b, b)| {
        revision_b
            .cmp(revision_a)
            .then_with(|| by_decreasing_replicas(a, b))
    });
    let chosen = match to_revision {
        Some(revision) => candidates
            .iter()
            .find(|(candidate, _)| *candidate == revision)
            .ok_or(RollbackError::RevisionNotFound(revision))?,
        None => {
            let latest = candidates
                .first()
                .ok_or(RollbackError::NoPreviousRevision)?
                .0;
            candidates
                .iter()
                .find(|(candidate, _)| *candidate < latest)
                .ok_or(RollbackError::NoPreviousRevision)?
        }
    };
    Ok(RollbackTarget {
        machine_set: chosen.1.name.clone(),
        revision: chosen.0,
        already_current: chosen.1.matches_template(),
    })
}

/// One step's working state, upstream's `rolloutPlanner`: the MachineSets (the one to create
/// last), which is current, the old ones in the order upstream keeps them, and the replicas
/// each should get.
struct Planner<'a> {
    input: &'a RolloutInput<'a>,
    max_surge: i32,
    max_unavailable: i32,
    machine_sets: Vec<MachineSetState>,
    create: bool,
    current: Option<usize>,
    /// Upstream sorts the old MachineSets by decreasing replicas to find the current one, and
    /// re-sorts them oldest first only when it gets to scaling them down; the deadlock breaker
    /// sees whichever order is left.
    old: Vec<usize>,
    create_reason: Option<String>,
    revision: Option<String>,
    annotations: Vec<BTreeMap<&'static str, String>>,
    intents: Vec<Option<i32>>,
    notes: Vec<Vec<String>>,
}

impl<'a> Planner<'a> {
    /// Upstream `rolloutPlanner.init`: finds the current MachineSet, creates one if needed (not
    /// when paused), and computes the annotations of all.
    fn new(input: &'a RolloutInput<'a>) -> Result<Self, RolloutPlanError> {
        let replicas = input.replicas;
        let max_surge = max_surge(input.strategy, replicas)?;
        let max_unavailable = max_unavailable(input.strategy, replicas)?;
        let mut planner = Planner {
            input,
            max_surge,
            max_unavailable,
            machine_sets: input.machine_sets.to_vec(),
            create: false,
            current: None,
            old: Vec::new(),
            create_reason: None,
            revision: None,
            annotations: Vec::new(),
            intents: Vec::new(),
            notes: Vec::new(),
        };
        planner.find_current_and_old();
        if planner.current.is_none() && !input.paused {
            planner.machine_sets.push(MachineSetState {
                name: input.new_machine_set_name.to_string(),
                created: input.now,
                template_differences: Vec::new(),
                revision: None,
                revision_history: None,
                desired_replicas: None,
                max_replicas: None,
                replicas: 0,
                status_replicas: 0,
                available_replicas: 0,
                up_to_date_replicas: 0,
                deleting: false,
                generation_observed: true,
            });
            planner.create = true;
            planner.current = Some(planner.machine_sets.len() - 1);
        }
        let count = planner.machine_sets.len();
        planner.intents = vec![None; count];
        planner.notes = vec![Vec::new(); count];
        planner.annotations = vec![BTreeMap::new(); count];
        planner.compute_annotations()?;
        Ok(planner)
    }

    /// Upstream `FindNewAndOldMachineSets`: MachineSets sorted by decreasing replicas; the first
    /// whose template matches is current (after `rollout.after` has passed, only one created
    /// since), every other one is old.
    fn find_current_and_old(&mut self) {
        let input = self.input;
        if self.machine_sets.is_empty() {
            self.create_reason = Some("no MachineSets exist for the MachineDeployment".into());
            return;
        }
        let mut order: Vec<usize> = (0..self.machine_sets.len()).collect();
        order
            .sort_by(|&a, &b| by_decreasing_replicas(&self.machine_sets[a], &self.machine_sets[b]));
        let (candidates, mut old): (Vec<usize>, Vec<usize>) = order
            .into_iter()
            .partition(|&index| self.machine_sets[index].matches_template());
        let must_be_created_after = input.rollout_after.filter(|after| *after <= input.now);
        let current = match must_be_created_after {
            None => candidates.first().copied(),
            Some(after) => candidates
                .iter()
                .copied()
                .find(|&index| self.machine_sets[index].created >= after),
        };
        old.extend(
            candidates
                .iter()
                .copied()
                .filter(|&index| Some(index) != current),
        );
        self.old = old;
        self.current = current;
        if current.is_some() {
            return;
        }
        self.create_reason = Some(match must_be_created_after {
            Some(after) if !candidates.is_empty() => format!(
                "spec.rollout.after on MachineDeployment set to {after}, no MachineSet has been created afterwards"
            ),
            _ => {
                let needs_rollout: Vec<String> = self
                    .old
                    .iter()
                    .map(|&index| {
                        let machine_set = &self.machine_sets[index];
                        let mut reasons = machine_set.template_differences.clone();
                        if must_be_created_after.is_some_and(|after| machine_set.created < after) {
                            reasons.push("MachineDeployment spec.rolloutAfter expired".into());
                        }
                        format!(
                            "MachineSet {} needs rollout: {}",
                            machine_set.name,
                            reasons.join(", ")
                        )
                    })
                    .collect();
                format!(
                    "couldn't find MachineSet matching MachineDeployment spec template: {}",
                    needs_rollout.join("; ")
                )
            }
        });
    }

    /// Upstream `computeDesiredNewMS` and `computeDesiredOldMS`: every MachineSet gets the
    /// MachineDeployment's desired and maximum replicas; old ones keep their revisions and are
    /// barred from creating Machines under OnDelete; the current one gets the highest revision
    /// (upstream `ComputeRevisionAnnotations`).
    fn compute_annotations(&mut self) -> Result<(), RolloutPlanError> {
        let replicas = self.input.replicas;
        let on_delete = matches!(self.input.strategy, RolloutStrategy::OnDelete);
        for index in 0..self.machine_sets.len() {
            let machine_set = &self.machine_sets[index];
            let annotations = &mut self.annotations[index];
            annotations.insert(DESIRED_REPLICAS, replicas.to_string());
            annotations.insert(
                MAX_REPLICAS,
                replicas.saturating_add(self.max_surge).to_string(),
            );
            let is_current = Some(index) == self.current;
            annotations.insert(
                DISABLE_MACHINE_CREATE,
                (on_delete && !is_current).to_string(),
            );
            if !is_current {
                if let Some(revision) = &machine_set.revision {
                    annotations.insert(REVISION, revision.clone());
                }
                if let Some(history) = &machine_set.revision_history {
                    annotations.insert(REVISION_HISTORY, history.clone());
                }
            }
        }
        let Some(current) = self.current else {
            return Ok(());
        };
        // Unparsable old revisions are skipped, as upstream logs and skips them.
        let max_old_revision = self
            .old
            .iter()
            .filter_map(|&index| self.machine_sets[index].revision_number())
            .max()
            .unwrap_or(0);
        let next_revision = max_old_revision + 1;
        let machine_set = &self.machine_sets[current];
        let mut revision = next_revision.to_string();
        let mut history = machine_set.revision_history.clone();
        if let Some(current_revision) = &machine_set.revision {
            let current_number: i64 =
                current_revision
                    .parse()
                    .map_err(|_| RolloutPlanError::ParseRevision {
                        machine_set: machine_set.name.clone(),
                        revision: current_revision.clone(),
                    })?;
            // A MachineSet's revision never goes down, even when old MachineSets were deleted.
            if next_revision < current_number {
                revision = current_revision.clone();
            }
            if *current_revision != revision {
                history = Some(match history.filter(|history| !history.is_empty()) {
                    Some(history) => format!("{history},{current_revision}"),
                    None => current_revision.clone(),
                });
                self.notes[current].push("this is now the current MachineSet".into());
            }
        }
        let annotations = &mut self.annotations[current];
        annotations.insert(REVISION, revision.clone());
        if let Some(history) = history {
            annotations.insert(REVISION_HISTORY, history);
        }
        self.revision = Some(revision);
        Ok(())
    }

    fn replicas(&self, index: usize) -> i32 {
        self.machine_sets[index].replicas
    }

    /// The replicas this step has decided for a MachineSet so far.
    fn intended(&self, index: usize) -> i32 {
        self.intents[index].unwrap_or(self.machine_sets[index].replicas)
    }

    fn set_intent(&mut self, index: usize, replicas: i32, note: String) {
        self.intents[index] = Some(replicas);
        if !self.notes[index].contains(&note) {
            self.notes[index].push(note);
        }
    }

    fn all(&self) -> impl Iterator<Item = usize> + use<> {
        0..self.machine_sets.len()
    }

    /// Upstream `planRollingUpdate` (without in-place updates, an alpha feature Corral does not
    /// have).
    fn plan_rolling_update(&mut self) {
        self.reconcile_current_machine_set();
        self.reconcile_old_machine_sets_rolling_update();
        self.reconcile_deadlock_breaker();
    }

    /// Upstream `planOnDelete`.
    fn plan_on_delete(&mut self) {
        self.reconcile_current_machine_set();
        self.reconcile_old_machine_sets_on_delete();
    }

    /// Upstream `reconcileNewMachineSet` and `NewMSNewReplicas`: the current MachineSet shrinks
    /// to `spec.replicas` at once when it has more; otherwise it grows while all Machines, each
    /// MachineSet counted as `max(spec, status)`, stay within `R + maxSurge` (RollingUpdate) or
    /// R (OnDelete), and never beyond R.
    fn reconcile_current_machine_set(&mut self) {
        let Some(current) = self.current else {
            return;
        };
        let replicas = self.input.replicas;
        let current_replicas = self.replicas(current);
        if current_replicas == replicas {
            return;
        }
        if current_replicas > replicas {
            self.set_intent(
                current,
                replicas,
                "scale down to align MachineSet spec.replicas to MachineDeployment spec.replicas"
                    .into(),
            );
            return;
        }
        let machines: i32 = self
            .machine_sets
            .iter()
            .map(|machine_set| machine_set.replicas.max(machine_set.status_replicas))
            .sum();
        let (new_replicas, note) = current_machine_set_replicas(
            self.input.strategy,
            replicas,
            self.max_surge,
            machines,
            current_replicas,
        );
        if new_replicas != current_replicas {
            self.set_intent(current, new_replicas, note);
        }
    }

    /// Upstream `reconcileOldMachineSetsRollingUpdate`.
    fn reconcile_old_machine_sets_rolling_update(&mut self) {
        if self
            .old
            .iter()
            .map(|&index| self.replicas(index))
            .sum::<i32>()
            == 0
        {
            return;
        }
        let Some(current) = self.current else {
            return;
        };
        let min_available = (self.input.replicas - self.max_unavailable).max(0);
        let total_spec_replicas: i32 = self.all().map(|index| self.replicas(index)).sum();
        let total_available: i32 = self
            .machine_sets
            .iter()
            .map(|machine_set| machine_set.available_replicas)
            .sum();
        // Machines already on their way out, from an earlier step or this one, may be available
        // ones: count them as gone.
        let pending_scale_down: i32 = self
            .all()
            .map(|index| {
                let machine_set = &self.machine_sets[index];
                let intent = machine_set.replicas.min(self.intended(index));
                (machine_set.status_replicas - intent).max(0)
            })
            .sum();
        // Unavailable Machines in the current MachineSet slow the rollout down, or stop it, so
        // that a broken template does not take every Machine with it.
        let current_set = &self.machine_sets[current];
        let current_unavailable = (current_set.replicas - current_set.available_replicas).max(0);
        let total_scale_down =
            (total_spec_replicas - pending_scale_down - min_available - current_unavailable).max(0);
        if total_scale_down <= 0 {
            return;
        }
        self.sort_old_oldest_first();
        let (total_scale_down, total_available) =
            self.scale_down_old(total_scale_down, total_available, min_available, true);
        self.scale_down_old(total_scale_down, total_available, min_available, false);
    }

    fn sort_old_oldest_first(&mut self) {
        let machine_sets = &self.machine_sets;
        self.old
            .sort_by(|&a, &b| by_creation(&machine_sets[a], &machine_sets[b]));
    }

    /// Upstream `scaleDownOldMSs`: shrinks old MachineSets, oldest first, by up to
    /// `total_scale_down` replicas, only unavailable ones in the first pass, and never so much
    /// that the available Machines could drop below `min_available` if the MachineSet deleted
    /// available Machines first. Returns what is left of the scale down and of the available
    /// Machines.
    fn scale_down_old(
        &mut self,
        mut total_scale_down: i32,
        mut total_available: i32,
        min_available: i32,
        only_unavailable: bool,
    ) -> (i32, i32) {
        for position in 0..self.old.len() {
            if total_scale_down <= 0 {
                break;
            }
            let index = self.old[position];
            let replicas = self.intended(index);
            if replicas <= 0 {
                continue;
            }
            let machine_set = &self.machine_sets[index];
            let (status_replicas, available) =
                (machine_set.status_replicas, machine_set.available_replicas);
            let available_before = total_available;
            let max_scale_down = if only_unavailable {
                (replicas - available).max(0)
            } else {
                replicas
            };
            let mut scale_down = max_scale_down.min(total_scale_down);
            if scale_down == 0 {
                continue;
            }
            // Replicas without Machines go for free; deleting existing Machines may cost
            // availability, unless the MachineSet has no available Machine to lose.
            if available > 0 {
                let new_replicas = (replicas - scale_down).max(0);
                let mut existing_to_delete = (status_replicas - new_replicas).max(0);
                if existing_to_delete > 0 {
                    if total_available - min_available < existing_to_delete {
                        let can_delete = (total_available - min_available).max(0);
                        let revisited = (status_replicas - can_delete).min(replicas);
                        scale_down = (replicas - revisited).max(0);
                        existing_to_delete = (status_replicas - revisited).max(0);
                    }
                    total_available -= available.min(existing_to_delete);
                }
            }
            if scale_down > 0 {
                let note = if available_before == total_available {
                    "scale down to align to existing Machines or scale down by removing unavailable replicas (and no available replicas exist on the MachineSet)".to_string()
                } else {
                    format!(
                        "{available_before} available replicas > {min_available} minimum available replicas"
                    )
                };
                self.set_intent(index, (replicas - scale_down).max(0), note);
                total_scale_down = (total_scale_down - scale_down).max(0);
            }
        }
        (total_scale_down, total_available)
    }

    /// Upstream `reconcileDeadlockBreaker`: when nothing moves, the current MachineSet is fully
    /// available, and old MachineSets hold unavailable Machines that the worst-case arithmetic
    /// above will not let go, one old replica goes. That may formally breach maxUnavailable;
    /// most likely the Machine deleted is one of the unavailable ones.
    fn reconcile_deadlock_breaker(&mut self) {
        let Some(current) = self.current else {
            return;
        };
        let old_machines: i32 = self
            .old
            .iter()
            .map(|&index| self.machine_sets[index].status_replicas)
            .sum();
        let old_available: i32 = self
            .old
            .iter()
            .map(|&index| self.machine_sets[index].available_replicas)
            .sum();
        if old_machines == 0 || old_machines == old_available {
            return;
        }
        let moving = self.all().any(|index| {
            let machine_set = &self.machine_sets[index];
            machine_set.replicas != machine_set.status_replicas || self.intents[index].is_some()
        });
        if moving {
            return;
        }
        let current_set = &self.machine_sets[current];
        if current_set.available_replicas != current_set.status_replicas {
            return;
        }
        let stuck = self.old.iter().copied().find(|&index| {
            let machine_set = &self.machine_sets[index];
            machine_set.available_replicas != machine_set.status_replicas
                && machine_set.replicas != 0
        });
        if let Some(index) = stuck {
            let replicas = (self.replicas(index) - 1).max(0);
            self.set_intent(
                index,
                replicas,
                "scaling down by 1 to unblock rollout stuck due to unavailable Machine on oldMS"
                    .into(),
            );
        }
    }

    /// Upstream `reconcileOldMachineSetsOnDelete`: old MachineSets let go of the replicas whose
    /// Machines someone deleted, and, oldest first, of whatever exceeds `spec.replicas` when the
    /// MachineDeployment was scaled down.
    fn reconcile_old_machine_sets_on_delete(&mut self) {
        let old_replicas: i32 = self.old.iter().map(|&index| self.replicas(index)).sum();
        if old_replicas == 0 {
            return;
        }
        let current_replicas = self.current.map_or(0, |current| self.intended(current));
        let mut total_scale_down = (old_replicas + current_replicas - self.input.replicas).max(0);
        self.sort_old_oldest_first();
        for position in 0..self.old.len() {
            let index = self.old[position];
            let machine_set = &self.machine_sets[index];
            if machine_set.replicas <= 0 {
                continue;
            }
            let deleted = (machine_set.replicas - machine_set.status_replicas).max(0);
            if deleted > 0 {
                let replicas = (machine_set.replicas - deleted).max(0);
                self.set_intent(
                    index,
                    replicas,
                    "scale down to align to existing Machines".into(),
                );
                total_scale_down -= deleted;
            }
        }
        for position in 0..self.old.len() {
            if total_scale_down <= 0 {
                break;
            }
            let index = self.old[position];
            let replicas = self.intended(index);
            if replicas <= 0 {
                continue;
            }
            // Upstream subtracts from spec.replicas here rather than from what the loop above
            // left, which undoes that loop's work for one step; Corral subtracts from the
            // intent, so the two loops add up.
            let scale_down = replicas.min(total_scale_down);
            self.set_intent(
                index,
                replicas - scale_down,
                "scale down to align MachineSet spec.replicas to MachineDeployment spec.replicas"
                    .into(),
            );
            total_scale_down -= scale_down;
        }
    }

    /// Upstream `scale` in `machinedeployment_sync.go`: a paused MachineDeployment does not roll
    /// out, but follows changes of `spec.replicas`. A lone active MachineSet takes them all; a
    /// saturated current MachineSet lets the old ones go; otherwise, under RollingUpdate, the
    /// difference to `R + maxSurge` is shared in proportion to each MachineSet's size against
    /// the [`MAX_REPLICAS`] it was last planned for, the rounding leftover going to the
    /// largest.
    ///
    /// Upstream now refreshes the annotations before reading them, which turns every proportion
    /// into 0 and hands the whole difference to the largest MachineSet; Corral reads the
    /// annotations as they were, as the Kubernetes Deployment controller this came from does.
    fn plan_paused_scale(&mut self) {
        let replicas = self.input.replicas;
        let mut old_newest_first = self.old.clone();
        old_newest_first
            .sort_by(|&a, &b| by_creation(&self.machine_sets[b], &self.machine_sets[a]));
        let mut active: Vec<usize> = old_newest_first
            .iter()
            .copied()
            .chain(self.current)
            .filter(|&index| self.replicas(index) > 0)
            .collect();
        if active.len() <= 1 {
            let only = active
                .first()
                .copied()
                .or(self.current)
                .or(old_newest_first.first().copied());
            if let Some(index) = only
                && self.replicas(index) != replicas
            {
                self.set_intent(
                    index,
                    replicas,
                    "scale the only active MachineSet to MachineDeployment spec.replicas".into(),
                );
            }
            return;
        }
        if let Some(current) = self.current {
            let machine_set = &self.machine_sets[current];
            let saturated = machine_set.replicas == replicas
                && machine_set.desired_replicas == Some(replicas)
                && machine_set.available_replicas == replicas;
            if saturated {
                for index in active {
                    if index != current {
                        self.set_intent(
                            index,
                            0,
                            "scale down, the current MachineSet is saturated".into(),
                        );
                    }
                }
                return;
            }
        }
        if !matches!(self.input.strategy, RolloutStrategy::RollingUpdate { .. }) {
            return;
        }
        let allowed = if replicas > 0 {
            replicas.saturating_add(self.max_surge)
        } else {
            0
        };
        let total: i32 = active.iter().map(|&index| self.replicas(index)).sum();
        let to_add = allowed - total;
        if to_add == 0 {
            return;
        }
        let machine_sets = &self.machine_sets;
        // Ties: scaling up favours newer MachineSets, scaling down takes from older ones first.
        active.sort_by(|&a, &b| {
            let (a, b) = (&machine_sets[a], &machine_sets[b]);
            b.replicas.cmp(&a.replicas).then_with(|| {
                if to_add > 0 {
                    by_creation(b, a)
                } else {
                    by_creation(a, b)
                }
            })
        });
        let md_status_replicas: i32 = machine_sets
            .iter()
            .map(|machine_set| machine_set.status_replicas)
            .sum();
        let mut added = 0;
        let mut sizes: Vec<i32> = Vec::with_capacity(active.len());
        for &index in &active {
            let machine_set = &machine_sets[index];
            let proportion = proportion(
                machine_set,
                replicas,
                allowed,
                md_status_replicas,
                to_add,
                added,
            );
            sizes.push(machine_set.replicas + proportion);
            added += proportion;
        }
        sizes[0] = (sizes[0] + to_add - added).max(0);
        let note = format!(
            "scale proportionally to {allowed} MachineDeployment spec.replicas + maxSurge while paused"
        );
        for (&index, size) in active.iter().zip(sizes) {
            if size != self.replicas(index) {
                self.set_intent(index, size, note.clone());
            }
        }
    }

    fn finish(self) -> RolloutPlan {
        let input = self.input;
        let mut plans: Vec<MachineSetPlan> = Vec::with_capacity(self.machine_sets.len());
        for (index, machine_set) in self.machine_sets.iter().enumerate() {
            plans.push(MachineSetPlan {
                name: machine_set.name.clone(),
                current: Some(index) == self.current,
                create: self.create && Some(index) == self.current,
                replicas_before: machine_set.replicas,
                replicas: self.intended(index),
                annotations: self.annotations[index].clone(),
                notes: self.notes[index].clone(),
            });
        }
        let sum = |count: fn(&MachineSetState) -> i32| -> i32 {
            self.machine_sets.iter().map(count).sum()
        };
        let complete = deployment_complete(
            input.replicas,
            sum(|machine_set| machine_set.status_replicas),
            sum(|machine_set| machine_set.up_to_date_replicas),
            sum(|machine_set| machine_set.available_replicas),
            input.generation_observed,
        );
        // Upstream cleans up after RollingUpdate and OnDelete steps, not while paused.
        let machine_sets_to_delete = if complete && !input.paused {
            machine_sets_to_clean_up(
                &self.machine_sets,
                &self.old,
                &plans,
                input.revision_history_limit,
            )
        } else {
            Vec::new()
        };
        RolloutPlan {
            current: self
                .current
                .map(|index| self.machine_sets[index].name.clone()),
            create_reason: if self.create {
                self.create_reason
            } else {
                None
            },
            revision: self.revision,
            machine_sets: plans,
            complete,
            machine_sets_to_delete,
        }
    }
}

/// Upstream `NewMSNewReplicas`: the replicas the current MachineSet may grow to, given the
/// Machines all MachineSets have (each counted as `max(spec, status)`), and why.
fn current_machine_set_replicas(
    strategy: &RolloutStrategy,
    replicas: i32,
    max_surge: i32,
    machines: i32,
    current_replicas: i32,
) -> (i32, String) {
    let (limit, bound) = match strategy {
        RolloutStrategy::RollingUpdate { .. } => (
            replicas.saturating_add(max_surge),
            format!("{replicas} MachineDeployment spec.replicas + {max_surge} maxSurge"),
        ),
        RolloutStrategy::OnDelete => (
            replicas,
            format!("{replicas} MachineDeployment spec.replicas"),
        ),
    };
    if machines >= limit {
        return (
            current_replicas,
            format!("{machines} current Machines >= {bound}"),
        );
    }
    let scale_up = (limit - machines).min(replicas - current_replicas);
    (
        current_replicas + scale_up,
        format!("{machines} current Machines < {bound}"),
    )
}

/// Upstream `DeploymentComplete`: `replicas` Machines, all up to date and available, and a
/// status that saw the current generation.
fn deployment_complete(
    replicas: i32,
    status_replicas: i32,
    up_to_date: i32,
    available: i32,
    generation_observed: bool,
) -> bool {
    up_to_date == replicas
        && status_replicas == replicas
        && available == replicas
        && generation_observed
}

/// Upstream `cleanupDeployment`, with Kubernetes' revision history limit on top: of the old
/// MachineSets not being deleted, all but the `limit` with the highest revisions are
/// candidates; of those, the ones with no replicas, no Machines and an observed generation go.
fn machine_sets_to_clean_up(
    machine_sets: &[MachineSetState],
    old: &[usize],
    plans: &[MachineSetPlan],
    limit: u32,
) -> Vec<String> {
    let mut alive: Vec<usize> = old
        .iter()
        .copied()
        .filter(|&index| !machine_sets[index].deleting)
        .collect();
    alive.sort_by(|&a, &b| {
        let (a, b) = (&machine_sets[a], &machine_sets[b]);
        let revision = |machine_set: &MachineSetState| machine_set.revision_number().unwrap_or(0);
        revision(a)
            .cmp(&revision(b))
            .then_with(|| by_creation(a, b))
    });
    let excess = alive.len().saturating_sub(limit as usize);
    alive
        .into_iter()
        .take(excess)
        .filter(|&index| {
            let machine_set = &machine_sets[index];
            // A MachineSet scaled to 0 by this very step gets a new generation first.
            machine_set.status_replicas == 0
                && machine_set.replicas == 0
                && plans[index].replicas == 0
                && machine_set.generation_observed
        })
        .map(|index| machine_sets[index].name.clone())
        .collect()
}

/// Upstream `GetProportion` and `getMachineSetFraction`: how many replicas a MachineSet gains
/// (or loses) when `to_add` are shared among the active MachineSets and `added` already were.
fn proportion(
    machine_set: &MachineSetState,
    replicas: i32,
    allowed: i32,
    md_status_replicas: i32,
    to_add: i32,
    added: i32,
) -> i32 {
    if machine_set.replicas == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if replicas == 0 {
        -machine_set.replicas
    } else {
        let annotated = machine_set.max_replicas.unwrap_or(md_status_replicas);
        if annotated <= 0 {
            0
        } else {
            let size = f64::from(machine_set.replicas) * f64::from(allowed) / f64::from(annotated);
            round_half_away_from_zero(size) - machine_set.replicas
        }
    };
    let left = to_add - added;
    if to_add > 0 {
        fraction.min(left)
    } else {
        fraction.max(left)
    }
}

/// `k8s.io/utils/integer.RoundToInt32`.
fn round_half_away_from_zero(value: f64) -> i32 {
    if value < 0.0 {
        (value - 0.5) as i32
    } else {
        (value + 0.5) as i32
    }
}

/// Upstream `MachineSetsByDecreasingReplicas`: more replicas first, then older, then by name.
fn by_decreasing_replicas(a: &MachineSetState, b: &MachineSetState) -> Ordering {
    b.replicas.cmp(&a.replicas).then_with(|| by_creation(a, b))
}

/// Upstream `MachineSetsByCreationTimestamp`: older first, then by name.
fn by_creation(a: &MachineSetState, b: &MachineSetState) -> Ordering {
    a.created.cmp(&b.created).then_with(|| a.name.cmp(&b.name))
}
