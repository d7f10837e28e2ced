//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds.
//!
//! The semantics are those of `k8s.io/apimachinery/pkg/util/strategicpatch` as kube-apiserver
//! applies a patch (`StrategicMergeMapPatch`), reimplemented over `serde_json::Value`:
//!
//! * Maps merge key by key, recursively; a `null` in the patch deletes the key.
//! * Lists are replaced, unless the field's patch metadata says `patchStrategy: merge`. Then a
//!   list of maps merges item by item on the `patchMergeKey` (an item with a new key is
//!   added, an item with a known key is merged into it), and a list of scalars becomes the
//!   union of both lists.
//! * The order of a merged list is the one apimachinery produces: items named in the patch
//!   take the patch's order, the other items keep the live order, and the two are
//!   interleaved using the live positions. A new item that the live list cannot place comes
//!   before the remaining live items (patching `[{name: b}]` into `[{name: a}]` gives
//!   `[b, a]`, as the Kubernetes documentation shows for `kubectl patch`), unless the patch
//!   carries `$setElementOrder/<field>`, which then decides.
//! * Directives: `$patch: replace` (a map, or a list when it is an item of the list),
//!   `$patch: delete` (a map becomes `{}`; an item of a merged list of maps removes the items
//!   with its merge key), `$retainKeys` (drop the keys of the live map that are not listed),
//!   `$deleteFromPrimitiveList/<field>` (remove these scalars from the list) and
//!   `$setElementOrder/<field>` (the order of the merged list).
//!
//! Which lists merge is not known from the JSON: the caller passes a [`PatchMeta`], the
//! equivalent of the Go struct tags. [`BuiltinPatchMeta`] knows the object metadata every kind
//! shares and the built-in kinds Corral serves; [`PatchMetaTable`] extends it per kind.
//! Custom resources have no such metadata; Kubernetes answers 415 for them, and so should the
//! server, before calling this module.
//!
//! Where apimachinery's result depends on Go's random map order (a patch that both adds and
//! deletes the same scalar), this module is deterministic: `$setElementOrder` lists first,
//! then the plain keys, then `$deleteFromPrimitiveList`, the order kubectl's own patches
//! (which carry `$setElementOrder`) are applied in.
//!
//! Where apimachinery leaves directives in values that have no live counterpart (a new map
//! or list item), this module drops them, as kube-apiserver does when it decodes the result
//! into a typed object; the server stores JSON, so nothing else would remove them.

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// How a field is patched, the equivalent of the `patchStrategy` struct tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PatchStrategy {
    /// No strategy: maps merge key by key, lists are replaced.
    #[default]
    Default,
    /// `patchStrategy: merge`: lists merge (maps already do).
    Merge,
    /// `patchStrategy: replace`: the patch value replaces the field, maps included.
    Replace,
}

/// The patch metadata of one field: its strategy and, for a merged list of maps, the key
/// that identifies an item (`patchMergeKey`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPatchMeta {
    /// How the field is patched.
    pub strategy: PatchStrategy,
    /// The item key of a merged list of maps, e.g. `uid` for `metadata.ownerReferences`.
    pub merge_key: Option<String>,
}

impl FieldPatchMeta {
    /// A list of maps merged on `merge_key`.
    pub fn merge_by(merge_key: impl Into<String>) -> FieldPatchMeta {
        FieldPatchMeta {
            strategy: PatchStrategy::Merge,
            merge_key: Some(merge_key.into()),
        }
    }

    /// A list of scalars merged as a set (e.g. `metadata.finalizers`).
    pub fn merge_set() -> FieldPatchMeta {
        FieldPatchMeta {
            strategy: PatchStrategy::Merge,
            merge_key: None,
        }
    }

    /// A field the patch replaces whole.
    pub fn replace() -> FieldPatchMeta {
        FieldPatchMeta {
            strategy: PatchStrategy::Replace,
            merge_key: None,
        }
    }

    fn merge_key(&self) -> Option<&str> {
        self.merge_key.as_deref().filter(|key| !key.is_empty())
    }
}

/// Answers how each field of a kind is patched.
///
/// `path` names the field from the object's root, one element per field name; the items of
/// a list add no element, so the fields of `metadata.ownerReferences` items are at
/// `["metadata", "ownerReferences", "<field>"]`. Unknown fields get the default (maps merge,
/// lists are replaced).
pub trait PatchMeta {
    /// The patch metadata of the field at `path`.
    fn field(&self, path: &[&str]) -> FieldPatchMeta;
}

/// Any function from a path to field metadata is patch metadata.
impl<F> PatchMeta for F
where
    F: Fn(&[&str]) -> FieldPatchMeta,
{
    fn field(&self, path: &[&str]) -> FieldPatchMeta {
        self(path)
    }
}

/// Patch metadata for the built-in kinds Corral serves (namespaces, configmaps, secrets,
/// events, leases, CRDs).
///
/// From `ObjectMeta`, which every object has: `metadata.ownerReferences` merges on `uid` and
/// `metadata.finalizers` merges as a set; everything else (`managedFields` included) is
/// replaced or, for maps such as `labels` and `annotations`, merged key by key. Of the kinds'
/// own fields only Namespace's `status.conditions` is a merged list (on `type`), so that is
/// here too; Namespace's `spec.finalizers` has no strategy and is replaced. The one
/// approximation: a CustomResourceDefinition's `status.conditions` also merges on `type`
/// here, where Kubernetes replaces it.
///
/// A kind with other merged lists needs a [`PatchMetaTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BuiltinPatchMeta;

impl PatchMeta for BuiltinPatchMeta {
    fn field(&self, path: &[&str]) -> FieldPatchMeta {
        match path {
            ["metadata", "ownerReferences"] => FieldPatchMeta::merge_by("uid"),
            ["metadata", "finalizers"] => FieldPatchMeta::merge_set(),
            ["status", "conditions"] => FieldPatchMeta::merge_by("type"),
            // Validating- and MutatingWebhookConfigurations.
            ["webhooks"] => FieldPatchMeta::merge_by("name"),
            _ => FieldPatchMeta::default(),
        }
    }
}

/// Patch metadata given as a table of paths, for kinds that [`BuiltinPatchMeta`] does not
/// describe. It starts from [`BuiltinPatchMeta`]'s answers; entries added with
/// [`PatchMetaTable::with_field`] take precedence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PatchMetaTable {
    fields: Vec<(Vec<String>, FieldPatchMeta)>,
}

impl PatchMetaTable {
    /// A table that answers like [`BuiltinPatchMeta`].
    pub fn new() -> PatchMetaTable {
        PatchMetaTable::default()
    }

    /// Adds or overrides the metadata of the field at `path`.
    pub fn with_field(mut self, path: &[&str], meta: FieldPatchMeta) -> PatchMetaTable {
        let path: Vec<String> = path.iter().map(|segment| segment.to_string()).collect();
        self.fields.retain(|(known, _)| *known != path);
        self.fields.push((path, meta));
        self
    }
}

impl PatchMeta for PatchMetaTable {
    fn field(&self, path: &[&str]) -> FieldPatchMeta {
        self.fields
            .iter()
            .find(|(known, _)| known.iter().map(String::as_str).eq(path.iter().copied()))
            .map(|(_, meta)| meta.clone())
            .unwrap_or_else(|| BuiltinPatchMeta.field(path))
    }
}

/// Why a strategic merge patch could not be applied. The messages are apimachinery's
/// (values are printed the way Go prints them), so `kubectl` users see the usual text;
/// [`StrategicMergeError::http_status`] says which status kube-apiserver answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicMergeError {
    /// The patch is JSON but not an object (kube-apiserver reports Go's decoding error).
    #[error("json: cannot unmarshal {found} into Go value of type map[string]interface {{}}")]
    DecodePatch { found: &'static str },
    /// The live object is not a JSON object.
    #[error("invalid JSON document")]
    DecodeOriginal,
    /// A `$deleteFromPrimitiveList` key or value is malformed.
    #[error("invalid patch format of primitive list")]
    BadPrimitiveListDirective,
    /// A `$retainKeys` list is not a list, or the patch sets a key it does not list.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeysDirective,
    /// A `$setElementOrder` key is malformed.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrderDirective,
    /// A merged list holds lists.
    #[error("lists of lists are not supported")]
    MergeListOfLists,
    /// A merged list mixes items of different JSON types.
    #[error("list element types are not identical: {lists}")]
    MergeMixedList { lists: String },
    /// `$setElementOrder` names a list that is empty in both the patch and the object.
    #[error("no elements in any of the given slices")]
    OrderEmptyList,
    /// An item of a merged list of maps lacks the merge key.
    #[error("map: {map} does not contain declared merge key: {merge_key}")]
    MissingMergeKey { map: String, merge_key: String },
    /// The patch metadata says a list of maps merges but names no merge key.
    #[error("cannot merge lists without merge key for {field}")]
    MergeWithoutMergeKey { field: String },
    /// `$patch` has a value other than `replace` and `delete` (or `merge` in a list).
    #[error("unknown patch type: {directive} in map: {map}")]
    UnknownPatchDirective { directive: String, map: String },
    /// A list item says `$patch: merge`, which apimachinery has never implemented.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// A value has the wrong JSON type for the directive or field it belongs to.
    #[error("expected a {expected}, but received a {actual}")]
    UnexpectedType {
        expected: &'static str,
        actual: &'static str,
    },
    /// An entry of a `$setElementOrder` list of maps is not a map.
    #[error("value for key {index} is not a map")]
    OrderEntryNotAMap { index: usize },
    /// The patch lists items in another order than its `$setElementOrder` list.
    // The capital letter and the line breaks are apimachinery's.
    #[error(
        "The order in patch list:\n{patch_list}\n doesn't match $setElementOrder list:\n{order_list}\n"
    )]
    OrderMismatch {
        patch_list: String,
        order_list: String,
    },
}

impl StrategicMergeError {
    /// The HTTP status kube-apiserver answers with: 400 for malformed patches and directives,
    /// 422 for lists of lists, and 500 (a plain error, reason `InternalError`) for the rest,
    /// which Kubernetes does not classify.
    pub fn http_status(&self) -> u16 {
        match self {
            StrategicMergeError::DecodePatch { .. }
            | StrategicMergeError::DecodeOriginal
            | StrategicMergeError::BadPrimitiveListDirective
            | StrategicMergeError::BadRetainKeysDirective
            | StrategicMergeError::BadSetElementOrderDirective => 400,
            StrategicMergeError::MergeListOfLists => 422,
            _ => 500,
        }
    }
}

/// Applies a strategic merge patch to an object and returns the patched object.
///
/// `original` must be a JSON object; `patch` must be an object too, or `null`, which changes
/// nothing (Go decodes `null` into an empty patch). Neither input is modified.
pub fn apply(
    original: &Value,
    patch: &Value,
    meta: &dyn PatchMeta,
) -> Result<Value, StrategicMergeError> {
    let patch = match patch {
        Value::Object(patch) => patch,
        Value::Null => return Ok(original.clone()),
        Value::Array(_) => return Err(StrategicMergeError::DecodePatch { found: "array" }),
        Value::String(_) => return Err(StrategicMergeError::DecodePatch { found: "string" }),
        Value::Number(_) => return Err(StrategicMergeError::DecodePatch { found: "number" }),
        Value::Bool(_) => return Err(StrategicMergeError::DecodePatch { found: "bool" }),
    };
    let Value::Object(original) = original else {
        return Err(StrategicMergeError::DecodeOriginal);
    };
    let merger = Merger { meta };
    let merged = merger.merge_map(original.clone(), patch, &[])?;
    Ok(Value::Object(merged))
}

struct Merger<'m> {
    meta: &'m dyn PatchMeta,
}

impl Merger<'_> {
    /// Merges a patch map into a live map found at `path`.
    fn merge_map<'p>(
        &self,
        original: Map<String, Value>,
        patch: &'p Map<String, Value>,
        path: &[&'p str],
    ) -> Result<Map<String, Value>, StrategicMergeError> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return match directive.as_str() {
                Some(REPLACE_DIRECTIVE) => Ok(clean_map(patch)),
                // apimachinery empties the map rather than removing the field.
                Some(DELETE_DIRECTIVE) => Ok(Map::new()),
                _ => Err(unknown_directive(directive, patch)),
            };
        }

        let mut merged = original;
        apply_retain_keys(&mut merged, patch)?;

        // Ordered lists go first: each takes its own list from the patch along, so that
        // the plain keys below skip them. Deletions from primitive lists come last, after
        // the lists they delete from have been merged.
        let mut ordered_fields = Vec::new();
        for (key, order) in patch {
            if key.starts_with(SET_ELEMENT_ORDER_PREFIX) {
                ordered_fields.push(self.apply_element_order(
                    &mut merged,
                    patch,
                    key,
                    order,
                    path,
                )?);
            }
        }
        let mut deletion_lists = Vec::new();
        for (key, value) in patch {
            if key == RETAIN_KEYS_DIRECTIVE
                || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
                || ordered_fields.contains(&key.as_str())
            {
                continue;
            }
            if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                deletion_lists.push((key, value));
                continue;
            }
            self.merge_field(&mut merged, key, value, path)?;
        }
        for (key, value) in deletion_lists {
            delete_from_primitive_list(&mut merged, key, value)?;
        }
        Ok(merged)
    }

    /// Merges one key of a patch map into the live map.
    fn merge_field<'p>(
        &self,
        merged: &mut Map<String, Value>,
        key: &'p str,
        patch_value: &'p Value,
        path: &[&'p str],
    ) -> Result<(), StrategicMergeError> {
        if patch_value.is_null() {
            merged.remove(key);
            return Ok(());
        }
        let Some(original_value) = merged.remove(key) else {
            set_cleaned(merged, key, patch_value);
            return Ok(());
        };
        let field_path = child_path(path, key);
        let value = match (original_value, patch_value) {
            (Value::Object(original_map), Value::Object(patch_map)) => {
                if self.meta.field(&field_path).strategy == PatchStrategy::Replace {
                    Value::Object(clean_map(patch_map))
                } else {
                    Value::Object(self.merge_map(original_map, patch_map, &field_path)?)
                }
            }
            (Value::Array(original_list), Value::Array(patch_list)) => {
                let meta = self.meta.field(&field_path);
                if meta.strategy == PatchStrategy::Merge {
                    Value::Array(self.merge_list(
                        original_list,
                        patch_list,
                        meta.merge_key(),
                        &field_path,
                    )?)
                } else {
                    Value::Array(clean_list(patch_list))
                }
            }
            // Scalars, and values whose type changes, are replaced.
            _ => {
                set_cleaned(merged, key, patch_value);
                return Ok(());
            }
        };
        merged.insert(key.to_string(), value);
        Ok(())
    }

    /// Merges a patch list into a live list whose field has the merge strategy.
    fn merge_list<'p>(
        &self,
        original: Vec<Value>,
        patch: &'p [Value],
        merge_key: Option<&str>,
        path: &[&'p str],
    ) -> Result<Vec<Value>, StrategicMergeError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = element_kind(&[original.as_slice(), patch])?;
        if kind != Kind::Object {
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for item in original.iter().chain(patch) {
                if !merged.contains(item) {
                    merged.push(item.clone());
                }
            }
            let identity = ItemIdentity::Whole;
            let (named, live_only) = partition(merged, |item| patch.contains(item));
            return normalize_order(named, live_only, patch, &original, &identity);
        }

        let Some(merge_key) = merge_key else {
            return Err(StrategicMergeError::MergeWithoutMergeKey {
                field: path.join("."),
            });
        };
        let identity = ItemIdentity::MergeKey(merge_key);

        // Deletions and a replacement apply to the live list before anything merges.
        let mut live = original;
        let mut plain_items: Vec<&'p Map<String, Value>> = Vec::new();
        let mut replace = false;
        for item in patch {
            let Value::Object(item) = item else {
                return Err(unexpected_type("map[string]interface {}", item));
            };
            let Some(directive) = item.get(DIRECTIVE_MARKER) else {
                plain_items.push(item);
                continue;
            };
            match directive.as_str() {
                Some(DELETE_DIRECTIVE) => {
                    let Some(key_value) = item.get(merge_key) else {
                        return Err(missing_merge_key(item, merge_key));
                    };
                    live.retain(|live_item| {
                        merge_key_value(live_item, merge_key) != Some(key_value)
                    });
                }
                // Other directive items are still pruned, so the loop goes on.
                Some(REPLACE_DIRECTIVE) => replace = true,
                Some(MERGE_DIRECTIVE) => return Err(StrategicMergeError::MergeDirectiveInList),
                _ => return Err(unknown_directive(directive, item)),
            }
        }
        if replace {
            let replacement: Vec<Value> = plain_items
                .iter()
                .map(|item| Value::Object(clean_map(item)))
                .collect();
            let live_only: Vec<Value> = replacement.clone();
            return normalize_order(Vec::new(), live_only, &[], &replacement, &identity);
        }

        let mut merged = live.clone();
        for item in &plain_items {
            let Some(key_value) = item.get(merge_key) else {
                return Err(missing_merge_key(item, merge_key));
            };
            let position = merged
                .iter()
                .position(|candidate| merge_key_value(candidate, merge_key) == Some(key_value));
            match position {
                Some(position) => {
                    let Value::Object(live_item) = std::mem::take(&mut merged[position]) else {
                        // The element kind check above made every item a map.
                        return Err(StrategicMergeError::OrderEntryNotAMap { index: position });
                    };
                    merged[position] = Value::Object(self.merge_map(live_item, item, path)?);
                }
                None => merged.push(Value::Object(clean_map(item))),
            }
        }

        let mut named = Vec::new();
        let mut live_only = Vec::new();
        for item in merged {
            let Some(key_value) = merge_key_value(&item, merge_key) else {
                return Err(missing_merge_key_in(&item, merge_key));
            };
            if plain_items
                .iter()
                .any(|p| p.get(merge_key) == Some(key_value))
            {
                named.push(item);
            } else {
                live_only.push(item);
            }
        }
        let patch_order: Vec<Value> = plain_items
            .iter()
            .map(|item| Value::Object((*item).clone()))
            .collect();
        normalize_order(named, live_only, &patch_order, &live, &identity)
    }

    /// Handles `$setElementOrder/<field>`: merges the field's patch list (if any) into the
    /// live list and orders the result. Returns the field's name, which is then done.
    fn apply_element_order<'p>(
        &self,
        merged: &mut Map<String, Value>,
        patch: &'p Map<String, Value>,
        key: &'p str,
        order: &'p Value,
        path: &[&'p str],
    ) -> Result<&'p str, StrategicMergeError> {
        let Value::Array(order) = order else {
            return Err(unexpected_type("[]interface {}", order));
        };
        let field = directive_target(key, SET_ELEMENT_ORDER_PREFIX)
            .ok_or(StrategicMergeError::BadSetElementOrderDirective)?;
        let original_list = match merged.get(field) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(unexpected_type("[]interface {}", other)),
        };
        let patch_list = match patch.get(field) {
            None => None,
            Some(Value::Array(list)) => Some(list.as_slice()),
            Some(other) => return Err(unexpected_type("[]interface {}", other)),
        };
        let field_path = child_path(path, field);
        let meta = self.meta.field(&field_path);
        let merge_key = meta.merge_key();
        check_patch_follows_order(patch_list.unwrap_or_default(), order, merge_key)?;

        let list = match (original_list.clone(), patch_list) {
            (Some(original_list), None) => original_list,
            (None, Some(patch_list)) => clean_list(patch_list),
            (Some(original_list), Some(patch_list)) => {
                if meta.strategy == PatchStrategy::Merge {
                    self.merge_list(original_list, patch_list, merge_key, &field_path)?
                } else {
                    clean_list(patch_list)
                }
            }
            (None, None) => return Ok(field),
        };

        let original_list = original_list.unwrap_or_default();
        let (named, live_only) = match merge_key {
            None => partition(list, |item| order.contains(item)),
            Some(merge_key) => {
                let mut named = Vec::new();
                let mut live_only = Vec::new();
                for item in list {
                    let Some(key_value) = merge_key_value(&item, merge_key) else {
                        return Err(missing_merge_key_in(&item, merge_key));
                    };
                    if order_contains_key(order, merge_key, key_value)? {
                        named.push(item);
                    } else {
                        live_only.push(item);
                    }
                }
                (named, live_only)
            }
        };
        let kind = element_kind(&[original_list.as_slice(), patch_list.unwrap_or_default()])?;
        let identity = match (kind, merge_key) {
            (Kind::Object, Some(merge_key)) => ItemIdentity::MergeKey(merge_key),
            (Kind::Object, None) => {
                return Err(StrategicMergeError::MergeWithoutMergeKey {
                    field: field_path.join("."),
                });
            }
            _ => ItemIdentity::Whole,
        };
        let ordered = normalize_order(named, live_only, order, &original_list, &identity)?;
        merged.insert(field.to_string(), Value::Array(ordered));
        Ok(field)
    }
}

/// Applies `$retainKeys`: every key the patch sets must be listed, and the live keys that are
/// not listed go away.
fn apply_retain_keys(
    merged: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), StrategicMergeError> {
    let Some(retain_keys) = patch.get(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain_keys) = retain_keys else {
        return Err(StrategicMergeError::BadRetainKeysDirective);
    };
    let is_retained = |key: &str| {
        retain_keys
            .iter()
            .any(|retained| retained.as_str() == Some(key))
    };
    for (key, value) in patch {
        let is_directive = key == RETAIN_KEYS_DIRECTIVE
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX);
        if !value.is_null() && !is_directive && !is_retained(key) {
            return Err(StrategicMergeError::BadRetainKeysDirective);
        }
    }
    merged.retain(|key, _| is_retained(key));
    Ok(())
}

/// Applies `$deleteFromPrimitiveList/<field>`: removes every listed scalar from the field,
/// whatever the field's strategy. A `null` list removes the field.
fn delete_from_primitive_list(
    merged: &mut Map<String, Value>,
    key: &str,
    to_delete: &Value,
) -> Result<(), StrategicMergeError> {
    let field = directive_target(key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)
        .ok_or(StrategicMergeError::BadPrimitiveListDirective)?;
    let to_delete = match to_delete {
        Value::Null => {
            merged.remove(field);
            return Ok(());
        }
        Value::Array(to_delete) => to_delete,
        // apimachinery would merge such a value like a patch; it is no deletion list.
        _ => return Err(StrategicMergeError::BadPrimitiveListDirective),
    };
    let Some(Value::Array(live)) = merged.get_mut(field) else {
        // Nothing to delete from: no field, or one that is not a list.
        return Ok(());
    };
    if live.is_empty() && to_delete.is_empty() {
        return Ok(());
    }
    if element_kind(&[live.as_slice(), to_delete.as_slice()])? == Kind::Object {
        return Err(StrategicMergeError::BadPrimitiveListDirective);
    }
    live.retain(|item| !to_delete.contains(item));
    Ok(())
}

/// Checks that the patch list names its items in the order of the `$setElementOrder` list
/// (items marked for deletion are not counted), so that the patch is a subsequence of it.
fn check_patch_follows_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), StrategicMergeError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let mut kept = Vec::with_capacity(patch_list.len());
    for item in patch_list {
        if merge_key.is_some() {
            let Value::Object(map) = item else {
                return Err(unexpected_type("map[string]interface {}", item));
            };
            if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
                continue;
            }
        }
        kept.push(item);
    }
    let (mut patch_index, mut order_index) = (0, 0);
    while patch_index < kept.len() && order_index < order.len() {
        let item = kept[patch_index];
        if item
            .as_object()
            .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
        {
            patch_index += 1;
            continue;
        }
        if same_item(item, &order[order_index], merge_key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < kept.len() && order_index >= order.len() {
        return Err(StrategicMergeError::OrderMismatch {
            patch_list: go_format_list(patch_list),
            order_list: go_format_list(order),
        });
    }
    Ok(())
}

/// Whether a patch item and an order entry denote the same item: equal scalars, or maps with
/// equal merge keys.
fn same_item(
    item: &Value,
    order_entry: &Value,
    merge_key: Option<&str>,
) -> Result<bool, StrategicMergeError> {
    let Some(merge_key) = merge_key else {
        return Ok(item == order_entry);
    };
    let (Value::Object(item), Value::Object(order_entry)) = (item, order_entry) else {
        let not_a_map = if item.is_object() { order_entry } else { item };
        return Err(unexpected_type("map[string]interface {}", not_a_map));
    };
    let Some(item_key) = item.get(merge_key) else {
        return Err(missing_merge_key(item, merge_key));
    };
    let Some(order_key) = order_entry.get(merge_key) else {
        return Err(missing_merge_key(order_entry, merge_key));
    };
    Ok(item_key == order_key)
}

fn order_contains_key(
    order: &[Value],
    merge_key: &str,
    key_value: &Value,
) -> Result<bool, StrategicMergeError> {
    for (index, entry) in order.iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(StrategicMergeError::OrderEntryNotAMap { index });
        };
        if entry.get(merge_key) == Some(key_value) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What identifies a list item when lists are ordered against each other.
enum ItemIdentity<'k> {
    /// Scalars are their own identity.
    Whole,
    /// Maps are identified by their merge key.
    MergeKey(&'k str),
}

impl ItemIdentity<'_> {
    fn position_in(&self, list: &[Value], item: &Value) -> Option<usize> {
        match self {
            ItemIdentity::Whole => list.iter().position(|candidate| candidate == item),
            ItemIdentity::MergeKey(merge_key) => {
                let key_value = merge_key_value(item, merge_key);
                list.iter()
                    .position(|candidate| merge_key_value(candidate, merge_key) == key_value)
            }
        }
    }

    /// For lists of maps, every item of both lists must carry the merge key.
    fn check(&self, items: &[Value], order: &[Value]) -> Result<(), StrategicMergeError> {
        let ItemIdentity::MergeKey(merge_key) = self else {
            return Ok(());
        };
        for item in items.iter().chain(order) {
            if merge_key_value(item, merge_key).is_none() {
                return Err(missing_merge_key_in(item, merge_key));
            }
        }
        Ok(())
    }
}

/// Orders a merged list: the items the patch (or `$setElementOrder`) names in
/// `named_order`, the others in `live_order`, then interleaves both as apimachinery does.
fn normalize_order(
    named: Vec<Value>,
    live_only: Vec<Value>,
    named_order: &[Value],
    live_order: &[Value],
    identity: &ItemIdentity<'_>,
) -> Result<Vec<Value>, StrategicMergeError> {
    identity.check(&named, named_order)?;
    identity.check(&live_only, live_order)?;
    let named = sort_by_positions(named, named_order, identity);
    let live_only = sort_by_positions(live_only, live_order, identity);
    Ok(interleave(live_only, named, live_order, identity))
}

/// A stable sort by position in `order`; items not in it keep their relative order at the
/// end (apimachinery only sorts lists whose items are all in the order list).
fn sort_by_positions(
    items: Vec<Value>,
    order: &[Value],
    identity: &ItemIdentity<'_>,
) -> Vec<Value> {
    let mut keyed: Vec<(usize, Value)> = items
        .into_iter()
        .map(|item| {
            (
                identity.position_in(order, &item).unwrap_or(usize::MAX),
                item,
            )
        })
        .collect();
    keyed.sort_by_key(|(position, _)| *position);
    keyed.into_iter().map(|(_, item)| item).collect()
}

/// Interleaves the live-only items into the patch-named items, keeping the order within
/// each: a live-only item goes first when both it and the next named item are in the live
/// list and it is there earlier; otherwise the named item goes first.
fn interleave(
    live_only: Vec<Value>,
    named: Vec<Value>,
    live_order: &[Value],
    identity: &ItemIdentity<'_>,
) -> Vec<Value> {
    let mut result = Vec::with_capacity(live_only.len() + named.len());
    let mut live_only = live_only.into_iter().peekable();
    let mut named = named.into_iter().peekable();
    loop {
        let take_live = match (live_only.peek(), named.peek()) {
            (None, None) => return result,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(live_item), Some(named_item)) => {
                match (
                    identity.position_in(live_order, live_item),
                    identity.position_in(live_order, named_item),
                ) {
                    (Some(live_position), Some(named_position)) => live_position < named_position,
                    _ => false,
                }
            }
        };
        let next = if take_live {
            live_only.next()
        } else {
            named.next()
        };
        result.extend(next);
    }
}

fn partition(items: Vec<Value>, is_named: impl Fn(&Value) -> bool) -> (Vec<Value>, Vec<Value>) {
    items.into_iter().partition(|item| is_named(item))
}

/// The JSON type of list items, which must all agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

fn kind_of(value: &Value) -> Kind {
    match value {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

fn element_kind(lists: &[&[Value]]) -> Result<Kind, StrategicMergeError> {
    let mut items = lists.iter().flat_map(|list| list.iter());
    let Some(first) = items.next() else {
        return Err(StrategicMergeError::OrderEmptyList);
    };
    let kind = kind_of(first);
    if kind == Kind::Array {
        return Err(StrategicMergeError::MergeListOfLists);
    }
    if items.any(|item| kind_of(item) != kind) {
        let lists: Vec<String> = lists.iter().map(|list| go_format_list(list)).collect();
        return Err(StrategicMergeError::MergeMixedList {
            lists: format!("[{}]", lists.join(" ")),
        });
    }
    Ok(kind)
}

fn merge_key_value<'v>(item: &'v Value, merge_key: &str) -> Option<&'v Value> {
    item.as_object().and_then(|map| map.get(merge_key))
}

/// The field a `$deleteFromPrimitiveList/<field>` or `$setElementOrder/<field>` key names.
fn directive_target<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    let (head, field) = key.split_once('/')?;
    (head == prefix).then_some(field)
}

fn child_path<'p>(path: &[&'p str], field: &'p str) -> Vec<&'p str> {
    let mut child = Vec::with_capacity(path.len() + 1);
    child.extend_from_slice(path);
    child.push(field);
    child
}

/// Stores a patch value that has no live counterpart, without its directives and nulls.
fn set_cleaned(merged: &mut Map<String, Value>, key: &str, patch_value: &Value) {
    match clean(patch_value) {
        Some(value) => {
            merged.insert(key.to_string(), value);
        }
        None => {
            merged.remove(key);
        }
    }
}

/// A patch value as it is stored when there is nothing to merge it with: `null` fields and
/// directive keys dropped, list items carrying `$patch` dropped, a map with `$patch: replace`
/// kept without the marker, and a map with any other `$patch` dropped (`None`).
fn clean(value: &Value) -> Option<Value> {
    match value {
        Value::Object(map) => match map.get(DIRECTIVE_MARKER) {
            None => Some(Value::Object(clean_map(map))),
            Some(directive) if directive.as_str() == Some(REPLACE_DIRECTIVE) => {
                Some(Value::Object(clean_map(map)))
            }
            Some(_) => None,
        },
        Value::Array(items) => Some(Value::Array(clean_list(items))),
        scalar => Some(scalar.clone()),
    }
}

fn clean_map(map: &Map<String, Value>) -> Map<String, Value> {
    let mut cleaned = Map::new();
    for (key, value) in map {
        let is_directive = key == DIRECTIVE_MARKER
            || key == RETAIN_KEYS_DIRECTIVE
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX);
        if is_directive || value.is_null() {
            continue;
        }
        if let Some(value) = clean(value) {
            cleaned.insert(key.clone(), value);
        }
    }
    cleaned
}

fn clean_list(items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .filter(|item| {
            !item
                .as_object()
                .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
        })
        .filter_map(clean)
        .collect()
}

fn unknown_directive(directive: &Value, map: &Map<String, Value>) -> StrategicMergeError {
    // Go prints the directive with %s, which marks a non-string with its type.
    let directive = match directive {
        Value::String(directive) => directive.clone(),
        Value::Null => "%!s(<nil>)".to_string(),
        Value::Bool(flag) => format!("%!s(bool={flag})"),
        Value::Number(number) => format!("%!s({}={number})", go_type_name(directive)),
        other => go_format(other),
    };
    StrategicMergeError::UnknownPatchDirective {
        directive,
        map: go_format_map(map),
    }
}

fn missing_merge_key(map: &Map<String, Value>, merge_key: &str) -> StrategicMergeError {
    StrategicMergeError::MissingMergeKey {
        map: go_format_map(map),
        merge_key: merge_key.to_string(),
    }
}

fn missing_merge_key_in(item: &Value, merge_key: &str) -> StrategicMergeError {
    match item {
        Value::Object(map) => missing_merge_key(map, merge_key),
        other => unexpected_type("map[string]interface {}", other),
    }
}

fn unexpected_type(expected: &'static str, actual: &Value) -> StrategicMergeError {
    StrategicMergeError::UnexpectedType {
        expected,
        actual: go_type_name(actual),
    }
}

/// The Go type a decoded JSON value has, as `reflect.TypeOf(v)` prints with `%s`.
fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Prints a JSON value the way Go's `%v` prints the decoded value: `map[a:1 b:[x y]]`,
/// strings unquoted, `<nil>` for null.
fn go_format(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => text.clone(),
        Value::Array(items) => go_format_list(items),
        Value::Object(map) => go_format_map(map),
    }
}

fn go_format_list(items: &[Value]) -> String {
    let items: Vec<String> = items.iter().map(go_format).collect();
    format!("[{}]", items.join(" "))
}

fn go_format_map(map: &Map<String, Value>) -> String {
    // Go prints map keys sorted, whatever order serde_json keeps.
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let entries: Vec<String> = entries
        .into_iter()
        .map(|(key, value)| format!("{key}:{}", go_format(value)))
        .collect();
    format!("map[{}]", entries.join(" "))
}
