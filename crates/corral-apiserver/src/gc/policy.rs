//! What a DELETE asks of the garbage collector: `propagationPolicy` (or the legacy
//! `orphanDependents`) turned into the finalizers the object keeps until the collector is done.

use crate::error::{ApiError, Cause, Subject};

/// Kept by an owner until the collector has deleted the dependents that block it.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// Kept by an owner until the collector has removed the ownerReferences to it.
pub const ORPHAN_FINALIZER: &str = "orphan";

/// `DeleteOptions.propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Delete the owner now; the collector deletes the dependents afterwards.
    Background,
    /// Keep the owner (finalizer `foregroundDeletion`) until the dependents that block its
    /// deletion are gone.
    Foreground,
    /// Keep the owner (finalizer `orphan`) until the dependents no longer refer to it.
    Orphan,
}

impl PropagationPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            PropagationPolicy::Background => "Background",
            PropagationPolicy::Foreground => "Foreground",
            PropagationPolicy::Orphan => "Orphan",
        }
    }
}

/// Checks the garbage-collection part of `DeleteOptions` as kube-apiserver does: a known
/// policy, and not both `propagationPolicy` and `orphanDependents`. Failures are 422s about
/// `DeleteOptions.meta.k8s.io ""`.
pub fn parse_policy(
    policy: Option<&str>,
    orphan_dependents: Option<bool>,
) -> Result<Option<PropagationPolicy>, ApiError> {
    let parsed = match policy {
        None => None,
        Some("Background") => Some(PropagationPolicy::Background),
        Some("Foreground") => Some(PropagationPolicy::Foreground),
        Some("Orphan") => Some(PropagationPolicy::Orphan),
        Some(other) => {
            return Err(invalid_delete_options(Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
                field: "propagationPolicy".into(),
            }));
        }
    };
    if let (Some(policy), Some(_)) = (parsed, orphan_dependents) {
        return Err(invalid_delete_options(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {:?}: orphanDependents and deletionPropagation cannot be both set",
                policy.as_str()
            ),
            field: "propagationPolicy".into(),
        }));
    }
    Ok(parsed)
}

fn invalid_delete_options(cause: Cause) -> ApiError {
    let subject = Subject {
        resource: "",
        group: "meta.k8s.io",
        name: "",
    };
    let mut error = ApiError::invalid(subject, "DeleteOptions.meta.k8s.io", vec![cause]);
    error.kind = Some("DeleteOptions".into());
    error
}

/// The finalizers an object must have after a DELETE, when they differ from `finalizers`.
///
/// kube-apiserver's order of precedence: `orphanDependents`, then `propagationPolicy`, then a
/// collector finalizer the object already has (the first one listed), then the resource's
/// default, which is Background (no finalizer) for every resource served here.
pub fn finalizers_after_delete(
    finalizers: &[String],
    policy: Option<PropagationPolicy>,
    orphan_dependents: Option<bool>,
) -> Option<Vec<String>> {
    let existing = finalizers.iter().find_map(|f| match f.as_str() {
        ORPHAN_FINALIZER => Some(PropagationPolicy::Orphan),
        FOREGROUND_FINALIZER => Some(PropagationPolicy::Foreground),
        _ => None,
    });
    let effective = match (orphan_dependents, policy) {
        (Some(true), _) => Some(PropagationPolicy::Orphan),
        (Some(false), _) => None,
        (None, Some(policy)) => Some(policy),
        (None, None) => existing,
    };
    let mut wanted: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    match effective {
        Some(PropagationPolicy::Orphan) => wanted.push(ORPHAN_FINALIZER.into()),
        Some(PropagationPolicy::Foreground) => wanted.push(FOREGROUND_FINALIZER.into()),
        Some(PropagationPolicy::Background) | None => {}
    }
    let as_set =
        |list: &[String]| -> std::collections::BTreeSet<String> { list.iter().cloned().collect() };
    (as_set(&wanted) != as_set(finalizers)).then_some(wanted)
}

/// The rule of object metadata that belongs to the collector: an object cannot ask for both
/// orphaning and foreground deletion.
pub fn validate_finalizers(finalizers: &[String]) -> Option<Cause> {
    let orphan = finalizers.iter().any(|f| f == ORPHAN_FINALIZER);
    let foreground = finalizers.iter().any(|f| f == FOREGROUND_FINALIZER);
    if !(orphan && foreground) {
        return None;
    }
    let listed = finalizers
        .iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(Cause {
        reason: "FieldValueInvalid".into(),
        message: format!(
            "Invalid value: []string{{{listed}}}: finalizer {ORPHAN_FINALIZER} and {FOREGROUND_FINALIZER} cannot be both set"
        ),
        field: "metadata.finalizers".into(),
    })
}
