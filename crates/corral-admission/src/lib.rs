//! What an API server needs to know of a kind to admit its writes as that kind's own admission
//! webhooks would, without knowing the kind: [`KindRules`] (default, validate a create, validate
//! an update against the stored object, validate a write of the `scale` subresource), collected
//! per group and kind in a [`RuleSet`] that the API server runs on every write, and what they
//! answer with: field errors ([`field`], the
//! words of apimachinery's `field` package, which the API server's schema validation speaks
//! too), the syntax checks of names, label keys and values ([`names`], apimachinery's
//! `util/validation`) and label and field selectors ([`selector`], apimachinery's `labels`
//! and `fields`).
//!
//! The rules themselves live with the types they guard (`corral_api::admission`, the providers'
//! `api/admission.rs`); the binary hands the server the set of every built-in provider.
//! Rules read and write the object as JSON in its storage version, after the schema has
//! pruned and defaulted it, so a rule may rely on the schema's types and required fields.
//!
//! # Map of the crate
//!
//! What an API server needs to run a kind's own admission without knowing the kind: the `KindRules`
//! shape (default, validate a create, validate an update against the stored object, upstream's
//! webhooks' three calls) and the `RuleSet` of them by group and kind, plus the apimachinery pieces
//! rules and server share: `field` (field errors worded as `field.ErrorList`), `names`
//! (`util/validation`), `selector` (`labels` and `fields`). The rules live with their types
//! (`corral_api::admission`, the providers' `api/admission.rs`); the table of every rule, its
//! upstream source and its test is `docs/admission-rules.md`.

pub mod field;
pub mod names;
pub mod selector;

use std::sync::Arc;

use serde_json::Value;

pub use field::{ErrorList, ErrorType, FieldError, Path};

/// One kind's admission, in the shape of upstream's defaulting and validating webhooks.
pub trait KindRules: Send + Sync {
    /// The defaulting webhook: fills in what the write left out. `old` is the stored object
    /// on an update. An `Err` refuses the write with that message, as a webhook's denial.
    fn default(&self, object: &mut Value, old: Option<&Value>) -> Result<(), String> {
        let _ = (object, old);
        Ok(())
    }

    /// The validating webhook on create.
    fn validate_create(&self, object: &Value) -> ErrorList {
        let _ = object;
        ErrorList::new()
    }

    /// The validating webhook on update: the stored object and the new one.
    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        let _ = old;
        self.validate_create(new)
    }

    /// The validating webhook of the `scale` subresource, for the kinds upstream registers one
    /// for: `object` is the object with the replica count the write asks for. An `Err` refuses
    /// the write with that message, as a webhook's denial.
    fn validate_scale(&self, object: &Value) -> Result<(), String> {
        let _ = object;
        Ok(())
    }
}

/// The rules of every kind a server admits, by API group and kind. Cheap to clone. A few
/// dozen kinds at most: a scan finds one without building a key per write.
#[derive(Clone, Default)]
pub struct RuleSet {
    by_kind: Vec<(String, String, Arc<dyn KindRules>)>,
}

impl RuleSet {
    /// Adds (or replaces) the rules of `group`'s `kind`.
    pub fn with(mut self, group: &str, kind: &str, rules: impl KindRules + 'static) -> RuleSet {
        self.by_kind
            .retain(|(g, k, _)| (g.as_str(), k.as_str()) != (group, kind));
        self.by_kind
            .push((group.to_string(), kind.to_string(), Arc::new(rules)));
        self
    }

    /// Every rule of `other` too.
    pub fn extend(mut self, other: RuleSet) -> RuleSet {
        for (group, kind, rules) in other.by_kind {
            self.by_kind.retain(|(g, k, _)| (g, k) != (&group, &kind));
            self.by_kind.push((group, kind, rules));
        }
        self
    }

    /// The rules of `group`'s `kind`, if it has any.
    pub fn get(&self, group: &str, kind: &str) -> Option<&dyn KindRules> {
        self.by_kind
            .iter()
            .find(|(g, k, _)| g == group && k == kind)
            .map(|(_, _, rules)| rules.as_ref())
    }

    /// The kinds with rules, as (group, kind), sorted.
    pub fn kinds(&self) -> Vec<(String, String)> {
        let mut kinds: Vec<_> = self
            .by_kind
            .iter()
            .map(|(group, kind, _)| (group.clone(), kind.clone()))
            .collect();
        kinds.sort();
        kinds
    }
}

impl std::fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleSet")
            .field("kinds", &self.kinds())
            .finish()
    }
}
