//! CRD schemas enforced on custom resources, the way kube-apiserver's apiextensions does it.
//!
//! Each CRD version's `openAPIV3Schema` is compiled once into a [`CompiledSchema`] (kept in
//! the registry's `VersionInfo`). Then:
//!
//! - on every write ([`admit`], called by admission once per attempt): unknown fields are
//!   pruned (reported per `fieldValidation`: `Strict` refuses the write with 400, `Warn`, the
//!   default, answers with a `Warning` per field, `Ignore` says nothing), nulls the schema
//!   does not allow are dropped, defaults are applied, and the whole object is validated:
//!   schema validation, list types, embedded resources, then CEL rules. All field errors of
//!   the request come back together in one 422.
//! - on every read from storage ([`on_read`], from `Target::to_request_version`): pruning
//!   and defaulting with the storage version's schema, then pruning with the requested one.
//!
//! Built-in resources are not touched; their shape is the code's business.
//!
//! Not done here: the runtime cost budget of CEL, duplicate JSON keys under `Strict` (bodies
//! are decoded before admission sees them), set/map-list equality in CEL (lists compare in
//! order), and CEL rules under `allOf`.

#[cfg(feature = "cel")]
mod cel;
mod coerce;
pub(crate) mod field;
mod format;
mod structural;
mod validate;

#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::admission::Request;
use crate::error::ApiError;
use crate::registry::ResourceInfo;

pub use structural::CompiledSchema;

use field::{ErrorType, FieldError};

/// What `fieldValidation` asks for fields the schema does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// kube-apiserver warns when the parameter is absent.
    fn parse(raw: Option<&str>) -> FieldValidation {
        match raw {
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            _ => FieldValidation::Warn,
        }
    }
}

fn schema_of(resource: &ResourceInfo, version: &str) -> Option<Arc<CompiledSchema>> {
    resource
        .versions
        .iter()
        .find(|v| v.name == version)?
        .compiled_schema
        .clone()
}

/// A kind's own defaulting, run by [`admit`] between the schema's defaults and its
/// validation.
pub type Mutate<'a> = &'a dyn Fn(&mut Value) -> Result<(), ApiError>;

/// Applies the schema of the request's version to a custom resource being written (in its
/// storage shape): prunes, defaults and validates it. Returns the warnings for the response.
///
/// `mutate` is the kind's own defaulting (a mutating webhook in kube-apiserver): it sees the
/// object pruned and defaulted, and the schema's defaults are applied again after it and
/// before validation, as kube-apiserver does after a mutating webhook.
pub fn admit(
    request: &Request<'_>,
    object: &mut Value,
    mutate: Option<Mutate<'_>>,
) -> Result<Vec<String>, ApiError> {
    let target = request.target;
    let resource = &target.resource;
    let Some(schema) = schema_of(resource, &target.version).filter(|_| !resource.builtin) else {
        if let Some(mutate) = mutate {
            mutate(object)?;
        }
        return Ok(Vec::new());
    };
    let directive = FieldValidation::parse(request.query.field_validation.as_deref());
    // Validation sees the object as the client sent it: in the requested version.
    let request_api_version = Value::String(resource.api_version(&target.version));
    let stored_api_version = set_api_version(object, request_api_version.clone());
    // The old object is copied only when its apiVersion is not the request's already (an
    // update usually reads it in the request's version; copying a whole Machine per status
    // patch for nothing was a visible part of admission).
    let old = request.old.map(|old| {
        if old.get("apiVersion") == Some(&request_api_version) {
            Cow::Borrowed(old)
        } else {
            let mut old = old.clone();
            set_api_version(&mut old, request_api_version);
            Cow::Owned(old)
        }
    });

    let unknown = decode(&schema, object, directive != FieldValidation::Ignore);
    let mut warnings = Vec::new();
    if !unknown.is_empty() {
        let described: Vec<String> = unknown
            .iter()
            .map(|path| format!("unknown field \"{path}\""))
            .collect();
        match directive {
            FieldValidation::Strict => {
                return Err(ApiError::bad_request(format!(
                    "{kind} in version {version} cannot be handled as a {kind}: strict decoding error: {}",
                    described.join(", "),
                    kind = resource.kind,
                    version = field::go_quote(&target.version),
                )));
            }
            FieldValidation::Warn => warnings.extend(described),
            FieldValidation::Ignore => {}
        }
    }
    coerce::default(object, &schema.root);
    if let Some(mutate) = mutate {
        mutate(object)?;
        coerce::default(object, &schema.root);
    }

    let (errors, rule_warnings) = validate(&schema, object, old.as_deref());
    warnings.extend(rule_warnings);
    if !errors.is_empty() {
        let name = crate::object::name(object).unwrap_or("").to_string();
        return Err(ApiError::invalid(
            target.subject(&name),
            &resource.kind,
            errors.iter().map(field::to_cause).collect(),
        ));
    }

    if let Some(api_version) = stored_api_version {
        set_api_version(object, api_version);
    }
    let storage_version = resource.storage_version();
    if storage_version != target.version
        && let Some(storage_schema) = schema_of(resource, storage_version)
    {
        coerce::prune(object, &storage_schema.root, false);
    }
    Ok(warnings)
}

/// Replaces `apiVersion`, returning the previous one.
fn set_api_version(object: &mut Value, api_version: Value) -> Option<Value> {
    object
        .as_object_mut()
        .and_then(|map| map.insert("apiVersion".into(), api_version))
}

/// What decoding a request body does: prunes unknown fields (returning their paths when
/// `track`), including unknown metadata fields, and drops disallowed nulls.
fn decode(schema: &CompiledSchema, object: &mut Value, track: bool) -> Vec<String> {
    // Upstream lists the root's unknown metadata fields first, then the pruned paths, then
    // embedded resources' unknown metadata fields.
    let (mut unknown, embedded) = coerce::prune_metadata(object, &schema.root);
    unknown.extend(coerce::prune(object, &schema.root, track));
    unknown.extend(embedded);
    if !track {
        unknown.clear();
    }
    unknown
}

/// Validates a pruned, defaulted object (with the old one on updates): the field errors, and
/// the warnings of ratcheted rules.
fn validate(
    schema: &CompiledSchema,
    object: &Value,
    old: Option<&Value>,
) -> (Vec<FieldError>, Vec<String>) {
    let mut openapi = validate::OpenApi::new();
    openapi.validate(&schema.root, object, &validate::Name::Root, old);
    let mut errors = openapi.errors;
    errors.extend(validate::embedded_errors(&schema.root, object));
    // A list that was already invalid stays writable (upstream checks the old object first).
    let old_lists_valid = old.is_none_or(|old| validate::list_errors(&schema.root, old).is_empty());
    if old_lists_valid {
        errors.extend(validate::list_errors(&schema.root, object));
    }
    #[cfg_attr(not(feature = "cel"), allow(unused_mut))]
    let mut warnings = Vec::new();
    if schema.has_rules {
        if errors.iter().any(|e| e.type_.blocks_rules()) {
            errors.push(FieldError::new(
                ErrorType::Invalid,
                "<nil>",
                Some(Value::Null),
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            #[cfg(feature = "cel")]
            cel::validate(&schema.root, object, old, &mut errors, &mut warnings);
        }
    }
    (errors, warnings)
}

/// Checks `object` against `schema` as a write of it would, without changing it: every field
/// the schema does not know (what pruning would drop, each a `Forbidden` error, so that a
/// typo is refused rather than dropped) and every field error of validation after defaulting,
/// with kube-openapi's field paths. For servers of validating webhooks that hold a schema
/// of their own (a provider plugin's schema of `spec.config`).
pub fn check(schema: &CompiledSchema, object: &Value) -> Vec<FieldError> {
    let mut object = object.clone();
    let mut errors: Vec<FieldError> = coerce::prune(&mut object, &schema.root, true)
        .into_iter()
        .map(|path| FieldError::forbidden(path, "unknown field: the schema does not declare it"))
        .collect();
    coerce::default(&mut object, &schema.root);
    errors.extend(validate(schema, &object, None).0);
    errors
}

/// Brings an object read from storage into shape: pruned and defaulted by the storage
/// version's schema, then pruned by the requested version's.
pub fn on_read(resource: &ResourceInfo, version: &str, object: &mut Value) {
    if resource.builtin {
        return;
    }
    let storage_version = resource.storage_version();
    if let Some(schema) = schema_of(resource, storage_version).filter(|s| s.affects_reads) {
        coerce::prune(object, &schema.root, false);
        coerce::default(object, &schema.root);
    }
    if version != storage_version
        && let Some(schema) = schema_of(resource, version).filter(|s| s.affects_reads)
    {
        coerce::prune(object, &schema.root, false);
    }
}

/// Whether [`on_read`] can change objects of this resource, so stored bytes cannot be sent
/// as they are.
pub fn changes_reads(resource: &ResourceInfo) -> bool {
    !resource.builtin
        && resource.versions.iter().any(|v| {
            v.compiled_schema
                .as_ref()
                .is_some_and(|schema| schema.affects_reads)
        })
}
