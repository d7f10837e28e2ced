//! Upstream's webhooks for the Dev* kinds (`test/infrastructure/docker/webhooks/admission/`)
//! as [`corral_admission::KindRules`], run by Corral's API server: a template's metadata is
//! valid and its `spec.template.spec` never changes. [`rules`] is the set the binary hands the
//! server; the rule table is `docs/admission-rules.md`.
//!
//! Their other rules concern the docker backend (its default when no backend is given, its
//! failure domains sorted by name, its immutable custom image), which Corral refuses in the
//! schema (`schema::refuse_docker_backend`).

use corral_admission::{ErrorList, KindRules, Path, RuleSet};
use corral_api::admission::{validate_template_metadata_at, validate_template_spec_unchanged};
use serde_json::Value;

use super::GROUP;

/// The rules of the Dev* templates.
pub fn rules() -> RuleSet {
    RuleSet::default()
        .with(GROUP, "DevClusterTemplate", TemplateRules {
            immutable: "DevClusterTemplate spec.template.spec field is immutable. Please create a new resource instead.",
        })
        .with(GROUP, "DevMachineTemplate", TemplateRules {
            immutable: "DevMachineTemplate spec.template.spec field is immutable. Please create a new resource instead.",
        })
}

struct TemplateRules {
    /// Upstream's words for a changed `spec.template.spec`.
    immutable: &'static str,
}

impl KindRules for TemplateRules {
    fn validate_create(&self, object: &Value) -> ErrorList {
        validate_template_metadata_at(
            object.pointer("/spec/template/metadata"),
            &Path::new(&["spec", "template", "metadata"]),
        )
    }

    fn validate_update(&self, old: &Value, new: &Value) -> ErrorList {
        let mut errors = validate_template_spec_unchanged(old, new, self.immutable);
        errors.extend(self.validate_create(new));
        errors
    }
}
