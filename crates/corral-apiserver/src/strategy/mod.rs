//! What is particular to a resource, as kube-apiserver's registry gives each resource a
//! strategy: the generic verbs in `rest/` call the resource's [`Strategy`] at fixed points of
//! a write (prepare, validate, delete, after the store answered), and every resource carries
//! its strategy in [`ResourceInfo::strategy`](crate::registry::ResourceInfo), set where the
//! resource is registered (`registry::builtins`). Custom resources and built-ins without
//! behaviour of their own get [`GENERIC`]; the built-ins' strategies are in `kinds.rs`.

use std::fmt;

use serde_json::Value;

use crate::error::{ApiError, Cause};
use crate::object;
use crate::rest::Target;
use crate::server::ApiState;

mod kinds;

pub use kinds::{
    CONFIG_MAPS, CRDS, CSRS, MUTATING_WEBHOOKS, NAMESPACES, RBAC, SECRETS, VALIDATING_WEBHOOKS,
};

/// A resource's own behaviour on writes. Every method has a default that does nothing, so a
/// strategy says only what is particular to its resource.
pub trait Strategy: Sync {
    /// Names the strategy in `Debug` output and comparisons.
    fn name(&self) -> &'static str;

    /// Server-set fields of a new object, before validation.
    fn prepare_create(&self, _target: &Target, _object: &mut Value) {}

    /// Server-set fields of an updated object (including its subresources' writes), before
    /// validation.
    fn prepare_update(&self, _target: &Target, _current: &Value, _new: &mut Value) {}

    /// Validation beyond metadata and schema: field errors go into `causes` (answered as one
    /// 422); a refusal of another kind (RBAC's escalation check) is returned. `old` is set for
    /// updates.
    fn validate(
        &self,
        _state: &ApiState,
        _target: &Target,
        _object: &Value,
        _old: Option<&Value>,
        _causes: &mut Vec<Cause>,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// Finalizers beyond `metadata.finalizers` that keep an object from being deleted at once.
    fn extra_finalizers(&self, _object: &Value, _finalizers: &mut Vec<String>) {}

    /// Changes to an object being marked for deletion.
    fn prepare_delete(&self, _object: &mut Value) {}

    /// Effects of a successful write on the server itself.
    fn after_write(&self, _state: &ApiState, _object: &Value) {}

    /// Effects of a successful delete on the server itself.
    fn after_delete(&self, _state: &ApiState, _object: &Value) {}
}

/// The strategy of resources without behaviour of their own.
pub static GENERIC: Generic = Generic;

pub struct Generic;

impl Strategy for Generic {
    fn name(&self) -> &'static str {
        "generic"
    }
}

/// A resource's strategy, as [`ResourceInfo`](crate::registry::ResourceInfo) holds it.
#[derive(Clone, Copy)]
pub struct StrategyRef(pub &'static dyn Strategy);

impl Default for StrategyRef {
    fn default() -> Self {
        StrategyRef(&GENERIC)
    }
}

impl fmt::Debug for StrategyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl PartialEq for StrategyRef {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

fn of(target: &Target) -> &'static dyn Strategy {
    target.resource.strategy.0
}

/// Server-set fields of a new object.
pub fn prepare_create(target: &Target, object: &mut Value) {
    of(target).prepare_create(target, object)
}

/// Server-set fields of an updated object.
pub fn prepare_update(target: &Target, current: &Value, new: &mut Value) {
    of(target).prepare_update(target, current, new)
}

/// The resource's own validation, field errors as one 422 `Invalid`.
pub fn validate(
    state: &ApiState,
    target: &Target,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    of(target).validate(state, target, object, old, &mut causes)?;
    if causes.is_empty() {
        return Ok(());
    }
    let name = object::name(object).unwrap_or("");
    Err(ApiError::invalid(
        target.subject(name),
        &target.resource.kind,
        causes,
    ))
}

/// The finalizers that keep an object from being deleted at once.
pub fn finalizers_on_delete(target: &Target, object: &Value) -> Vec<String> {
    let mut finalizers = object::finalizers(object);
    of(target).extra_finalizers(object, &mut finalizers);
    finalizers
}

/// Changes to an object that is being marked for deletion.
pub fn prepare_delete(target: &Target, object: &mut Value) {
    of(target).prepare_delete(object)
}

/// Effects of a successful write on the server itself.
pub fn after_write(state: &ApiState, target: &Target, object: &Value) {
    of(target).after_write(state, object)
}

/// Effects of a successful delete on the server itself.
pub fn after_delete(state: &ApiState, target: &Target, object: &Value) {
    of(target).after_delete(state, object)
}
