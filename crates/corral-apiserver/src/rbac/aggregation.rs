//! kube-controller-manager's ClusterRole aggregation controller, run in-process: a ClusterRole
//! with an `aggregationRule` gets as `rules` the rules of every other ClusterRole one of its
//! `clusterRoleSelectors` matches (in name order, without repeats). It runs after any
//! ClusterRole change (the index wakes it) and writes only roles whose rules differ.

use std::sync::{Arc, Weak};

use corral_store::RangeRequest;
use serde_json::Value;

use super::Kind;
use crate::error::ApiError;
use crate::object;
use crate::query::Query;
use crate::rest::Change;
use crate::selector::LabelSelector;
use crate::server::ApiState;

/// The field manager of the controller's writes, kube-controller-manager's name.
const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

pub fn start(state: &Arc<ApiState>) {
    let weak = Arc::downgrade(state);
    tokio::spawn(run(weak));
}

async fn run(state: Weak<ApiState>) {
    loop {
        let changed = {
            let Some(state) = state.upgrade() else { return };
            if state.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            state.rbac.cluster_roles_changed.clone()
        };
        // Created before the pass: a change during it is not missed.
        let notified = changed.notified();
        {
            let Some(state) = state.upgrade() else { return };
            if let Err(error) = aggregate(&state).await {
                tracing::warn!(%error, "Aggregating ClusterRoles failed");
            }
        }
        // The timeout lets the task end soon after the server is dropped.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(60), notified).await;
    }
}

/// Brings the rules of every aggregated ClusterRole up to date.
async fn aggregate(state: &ApiState) -> Result<(), ApiError> {
    let target = super::cluster_target(state, Kind::ClusterRole);
    let page = state
        .store
        .range(RangeRequest {
            prefix: target.resource.key_prefix(),
            ..Default::default()
        })
        .await?;
    let roles: Vec<Value> = page
        .kvs
        .iter()
        .map(object::decode_stored)
        .collect::<Result<_, _>>()?;
    for role in &roles {
        let Some(selectors) = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            continue;
        };
        let name = object::name(role).unwrap_or("");
        let selectors: Vec<LabelSelector> = selectors
            .iter()
            .filter_map(|s| LabelSelector::from_label_selector_json(s).ok())
            .collect();
        // The store lists in key order, which is name order.
        let mut rules: Vec<Value> = Vec::new();
        for other in &roles {
            if object::name(other) == Some(name)
                || !selectors.iter().any(|s| s.matches_object(other))
            {
                continue;
            }
            for rule in other
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
        let current = role.get("rules").and_then(Value::as_array);
        if current.is_some_and(|current| *current == rules)
            || (current.is_none() && rules.is_empty())
        {
            continue;
        }
        tracing::debug!(name, rules = rules.len(), "Aggregating ClusterRole");
        let query = Query {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        let rules = Value::Array(rules);
        let change = Change::Patch(Box::new(move |current: &Value| {
            let mut updated = current.clone();
            updated["rules"] = rules.clone();
            Ok(updated)
        }));
        match crate::rest::update(state, &target, name, &query, change).await {
            Ok(_) => {}
            // Deleted meanwhile: nothing to aggregate into.
            Err(error) if error.reason == "NotFound" => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
