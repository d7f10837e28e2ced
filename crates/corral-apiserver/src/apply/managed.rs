//! `metadata.managedFields`: which manager owns which fields, and the two operations that
//! change ownership. An update (create, PUT, any PATCH but apply) takes what it changed from
//! everyone else; an apply owns exactly its configuration, conflicts with other owners of
//! the values it changes, and prunes what it stopped applying.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fields_v1;
use super::fieldset::{FieldSet, Path};
use super::merge::{self, TypeError};
use super::schema::Schema;
use crate::object::fields_text;

/// kube-apiserver's `DefaultMaxUpdateManagers`: older update entries are merged into one
/// "ancient-changes" entry per apiVersion beyond this.
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The fields nobody owns: type information and the metadata the server sets.
const STRIP: &[&[&str]] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "creationTimestamp"],
    &["metadata", "selfLink"],
    &["metadata", "uid"],
    &["metadata", "clusterName"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "resourceVersion"],
];

/// [`STRIP`] as `FieldsV1` keys (`f:metadata`, `f:name`), made once: every create and update
/// strips them from the fields its writer takes.
static STRIP_KEYS: std::sync::LazyLock<Vec<Vec<String>>> = std::sync::LazyLock::new(|| {
    STRIP
        .iter()
        .map(|path| path.iter().map(|field| format!("f:{field}")).collect())
        .collect()
});

/// The operation of a managedFields entry. The order is kube-apiserver's entry order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who owns a set of fields. Entries of the same manager are separate per operation and
/// subresource, and for updates per apiVersion (an applier is one manager in every version).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ManagerId {
    pub manager: String,
    pub operation: Operation,
    /// Empty for `Apply`.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    pub fn new(
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: Option<&str>,
    ) -> ManagerId {
        ManagerId {
            manager: manager.to_string(),
            operation,
            api_version: match operation {
                Operation::Apply => String::new(),
                Operation::Update => api_version.to_string(),
            },
            subresource: subresource.unwrap_or("").to_string(),
        }
    }

    /// How kube-apiserver names a manager in conflict messages:
    /// `"kubectl-client-side-apply" using example.com/v1`, `"ctl" with subresource "status"`.
    pub fn describe(&self) -> String {
        let mut text = Value::String(self.manager.clone()).to_string();
        if !self.subresource.is_empty() {
            text.push_str(&format!(
                " with subresource {}",
                Value::String(self.subresource.clone())
            ));
        }
        if self.operation == Operation::Update {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }
}

/// One entry's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub api_version: String,
    pub time: Option<String>,
    pub fields: FieldSet,
}

/// All entries of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managed {
    pub entries: BTreeMap<ManagerId, Entry>,
}

impl Managed {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Reads `metadata.managedFields` with kube-apiserver's rules; absent means none.
    pub fn decode(list: Option<&Value>) -> Result<Managed, String> {
        let mut managed = Managed::default();
        let entries = match list {
            None | Some(Value::Null) => return Ok(managed),
            Some(Value::Array(entries)) => entries,
            Some(_) => return Err("managedFields must be a list".into()),
        };
        for (index, entry) in entries.iter().enumerate() {
            let text = |field: &str| entry.get(field).and_then(Value::as_str).unwrap_or("");
            let operation = match text("operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err("operation must be `Apply` or `Update`".into()),
            };
            let api_version = text("apiVersion");
            if api_version.is_empty() {
                return Err("apiVersion must not be empty".into());
            }
            match text("fieldsType") {
                "FieldsV1" => {}
                "" => {
                    return Err(format!(
                        "missing fieldsType in managed fields entry {index}"
                    ));
                }
                other => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {index}"
                    ));
                }
            }
            let fields = match entry.get("fieldsV1") {
                None | Some(Value::Null) => FieldSet::new(),
                Some(fields) => FieldSet::from_fields_v1(&fields_text::tree(fields))?,
            };
            let subresource = text("subresource");
            let id = ManagerId::new(
                text("manager"),
                operation,
                api_version,
                (!subresource.is_empty()).then_some(subresource),
            );
            let time = entry
                .get("time")
                .and_then(Value::as_str)
                .map(str::to_string);
            managed.entries.insert(
                id,
                Entry {
                    api_version: api_version.to_string(),
                    time,
                    fields,
                },
            );
        }
        Ok(managed)
    }

    /// `metadata.managedFields`, in kube-apiserver's order: applies first, then oldest first,
    /// then by manager, apiVersion and subresource.
    pub fn encode(&self) -> Value {
        let mut entries: Vec<(&ManagerId, &Entry)> = self.entries.iter().collect();
        entries.sort_by_cached_key(|(id, entry)| {
            order_key(id, entry.time.as_deref(), &entry.api_version)
        });
        let list = entries
            .into_iter()
            .map(|(id, entry)| {
                encode_entry(
                    id,
                    &entry.api_version,
                    entry.time.as_deref(),
                    fields_text::wrap_tree(&entry.fields.to_fields_v1()),
                )
            })
            .collect();
        Value::Array(list)
    }

    /// The union of every entry's fields.
    fn owned(&self) -> FieldSet {
        self.entries
            .values()
            .fold(FieldSet::new(), |all, entry| all.union(&entry.fields))
    }

    fn drop_empty(&mut self) {
        self.entries.retain(|_, entry| !entry.fields.is_empty());
    }

    /// Merges the oldest update entries into one "ancient-changes" entry per apiVersion
    /// until at most `max` update entries remain (kube-apiserver's `capManagersManager`).
    pub fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<ManagerId> = self
            .entries
            .keys()
            .filter(|id| id.operation == Operation::Update)
            .cloned()
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort_by_key(|id| {
            let seconds = self.entries[id]
                .time
                .as_deref()
                .map(unix_seconds)
                .unwrap_or(0);
            (seconds, id.clone())
        });
        let mut remaining = updaters.len();
        let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
        for id in updaters {
            if remaining <= max {
                break;
            }
            let Some(entry) = self.entries.get(&id).cloned() else {
                continue;
            };
            let bucket = ManagerId::new(
                "ancient-changes",
                Operation::Update,
                &entry.api_version,
                None,
            );
            match first_of_version.get(&entry.api_version) {
                Some(first) => {
                    if !self.entries.contains_key(&bucket)
                        && let Some(first_entry) = self.entries.remove(first)
                    {
                        self.entries.insert(bucket.clone(), first_entry);
                    }
                    self.entries.remove(&id);
                    let merged = self.entries.get_mut(&bucket).expect("bucket exists");
                    merged.fields.add(&entry.fields);
                    // The bucket carries the time of the newest update merged into it.
                    merged.time = entry.time.clone();
                    remaining -= 1;
                }
                None => {
                    first_of_version.insert(entry.api_version.clone(), id);
                }
            }
        }
    }
}

/// Where an entry goes in `metadata.managedFields` (see [`Managed::encode`]).
fn order_key(
    id: &ManagerId,
    time: Option<&str>,
    api_version: &str,
) -> (Operation, i64, String, String, String) {
    (
        id.operation,
        time.map(unix_seconds).unwrap_or(0),
        id.manager.clone(),
        api_version.to_string(),
        id.subresource.clone(),
    )
}

/// One entry of `metadata.managedFields`; `fields_v1` as the entry holds it (see
/// `object::fields_text`).
fn encode_entry(id: &ManagerId, api_version: &str, time: Option<&str>, fields_v1: Value) -> Value {
    let mut out = Map::new();
    if !id.manager.is_empty() {
        out.insert("manager".into(), json!(id.manager));
    }
    out.insert("operation".into(), json!(id.operation.as_str()));
    out.insert("apiVersion".into(), json!(api_version));
    if let Some(time) = time {
        out.insert("time".into(), json!(time));
    }
    out.insert("fieldsType".into(), json!("FieldsV1"));
    out.insert("fieldsV1".into(), fields_v1);
    if !id.subresource.is_empty() {
        out.insert("subresource".into(), json!(id.subresource));
    }
    Value::Object(out)
}

fn unix_seconds(time: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(time)
        .map(|t| t.timestamp())
        .unwrap_or(0)
}

fn strip(set: &mut FieldSet) {
    set.remove_paths(STRIP);
}

/// What an operation needs to know besides the objects.
pub struct Context<'a> {
    pub schema: Schema<'a>,
    /// The top-level fields the request may change at all (kube-apiserver's reset fields:
    /// e.g. not `status` on the main resource, only `status` on `/status`).
    pub keep: &'a dyn Fn(&str) -> bool,
    /// The apiVersion of the request, recorded in the entries it writes.
    pub api_version: &'a str,
    pub now: &'a str,
}

/// What the writer of an update owns afterwards: it takes every field it changed (modified
/// or added) from everyone, everyone loses what it removed, and the time of its entry moves
/// only when it took something.
pub fn record_update(
    managed: Managed,
    old: &Value,
    new: &Value,
    cx: &Context<'_>,
    writer: &ManagerId,
) -> Managed {
    let changes = UpdateChanges::between(old, new, cx);
    record_changes(managed, changes.changed, &changes.removed, cx, writer)
}

/// What an update changes, as its field manager sees it.
pub struct UpdateChanges {
    /// Modified or added, within the fields the request may change.
    pub changed: FieldSet,
    /// Removed, within the fields the request may change.
    pub removed: FieldSet,
    /// Whether the two objects differ at all (before the reset-fields filter).
    pub differ: bool,
}

impl UpdateChanges {
    pub fn between(old: &Value, new: &Value, cx: &Context<'_>) -> UpdateChanges {
        UpdateChanges::of(merge::compare(old, new, cx.schema), cx)
    }

    pub fn of(comparison: merge::Comparison, cx: &Context<'_>) -> UpdateChanges {
        let differ = !(comparison.added.is_empty()
            && comparison.modified.is_empty()
            && comparison.removed.is_empty());
        let (changed, removed) = comparison.retain_top_level(cx.keep).into_changed();
        UpdateChanges {
            changed,
            removed,
            differ,
        }
    }
}

/// [`record_update`] with the changes already computed.
pub fn record_changes(
    mut managed: Managed,
    changed: FieldSet,
    removed: &FieldSet,
    cx: &Context<'_>,
    writer: &ManagerId,
) -> Managed {
    for entry in managed.entries.values_mut() {
        entry.fields = entry.fields.difference(&changed).difference(removed);
    }
    let mut taken = changed;
    strip(&mut taken);
    if !taken.is_empty() {
        let entry = managed
            .entries
            .entry(writer.clone())
            .or_insert_with(|| Entry {
                api_version: cx.api_version.to_string(),
                time: None,
                fields: FieldSet::new(),
            });
        match entry.fields.is_empty() {
            true => entry.fields = taken,
            false => entry.fields.add(&taken),
        }
        entry.api_version = cx.api_version.to_string();
        entry.time = Some(cx.now.to_string());
    }
    managed.drop_empty();
    managed
}

/// [`record_changes`] on `metadata.managedFields` as stored, giving the same list: the
/// entries the change does not concern are kept as they are (moved, neither decoded nor
/// encoded again), and the writer's entry, when it already owns what it changed, only gets
/// its new time. A controller's status update of a Machine changes a few fields that its own
/// entry owns already; decoding every entry into field sets and encoding them all again for
/// that was most of what tracking cost. An entry that loses or gains fields is edited in its
/// `FieldsV1` form too ([`fields_v1`]): only the nodes on the changed paths are touched.
///
/// `None` when the list is not exactly what [`Managed::encode`] writes (an entry it would
/// read differently, a manager twice) or when the result needs more than the reading of
/// single entries (more update managers than [`MAX_UPDATE_MANAGERS`]): the caller then
/// decodes the list and calls [`record_changes`].
pub fn record_changes_in_place(
    list: Vec<Value>,
    changed: &FieldSet,
    removed: &FieldSet,
    cx: &Context<'_>,
    writer: &ManagerId,
) -> Option<Value> {
    // The sets in `FieldsV1` form, made once for all entries; each entry is then compared
    // and edited along their nodes only.
    let as_map = |value: Value| match value {
        Value::Object(map) => map,
        _ => unreachable!("to_fields_v1 returns an object"),
    };
    let changed_v1 = as_map(changed.to_fields_v1());
    let removed_v1 = as_map(removed.to_fields_v1());
    // What the writer takes: what it changed but the stripped fields, which it loses like
    // everyone.
    let mut taken_v1 = changed_v1.clone();
    let mut untaken_v1 = Map::new();
    for keys in STRIP_KEYS.iter() {
        if fields_v1::contains_path(&changed_v1, keys) {
            fields_v1::remove(&mut taken_v1, keys).ok()?;
            fields_v1::insert(&mut untaken_v1, keys).ok()?;
        }
    }
    // An entry held as text whose top level has none of these keys (as its text writes
    // them) cannot intersect the changed or removed set: it is kept without being parsed.
    let needles: Vec<String> = changed_v1
        .keys()
        .chain(removed_v1.keys())
        .map(|key| format!("{}:", Value::String(key.clone())))
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(list.len() + 1);
    let mut writer_seen = false;
    for mut raw in list {
        let (id, api_version, time, fields_v1) = read_entry(&raw)?;
        if !ids.insert(id.clone()) {
            return None;
        }
        if id != *writer
            && let Some(text) = fields_text::text(fields_v1)
            && !needles.iter().any(|needle| text.contains(needle.as_str()))
        {
            if text != "{}" {
                out.push((order_key(&id, time, api_version), id, raw));
            }
            continue;
        }
        let entry_fields = fields_text::tree(fields_v1);
        let fields_v1 = entry_fields.as_object()?;
        let takes = id == *writer && !taken_v1.is_empty();
        // What becomes of the entry: kept as it is, a new time, or its fields edited.
        let edit = if takes {
            writer_seen = true;
            // (E - changed - removed) + taken is E when E holds what it took and neither
            // what it changed but may not own (stripped fields) nor what was removed.
            let same_fields = fields_v1::contains_all(fields_v1, &taken_v1).ok()?
                && !fields_v1::intersects(fields_v1, &removed_v1).ok()?
                && !fields_v1::intersects(fields_v1, &untaken_v1).ok()?;
            !same_fields
        } else if fields_v1::intersects(fields_v1, &changed_v1).ok()?
            || fields_v1::intersects(fields_v1, &removed_v1).ok()?
        {
            true
        } else {
            if fields_v1.keys().all(|key| key == ".") {
                continue;
            }
            false
        };
        let (time, api_version) = match takes {
            true => (Some(cx.now), cx.api_version),
            false => (time, api_version),
        };
        let key = order_key(&id, time, api_version);
        let edited = match edit {
            true => {
                // E - changed - removed (+ taken), on the entry's `FieldsV1` itself.
                let Value::Object(mut fields_v1) = entry_fields.into_owned() else {
                    unreachable!("checked to be an object")
                };
                fields_v1::subtract(&mut fields_v1, &changed_v1).ok()?;
                fields_v1::subtract(&mut fields_v1, &removed_v1).ok()?;
                if takes {
                    fields_v1::add(&mut fields_v1, &taken_v1).ok()?;
                } else if fields_v1.is_empty() {
                    continue;
                }
                Some(fields_text::wrap_tree(&Value::Object(fields_v1)))
            }
            false => None,
        };
        if let Some(edited) = edited {
            raw["fieldsV1"] = edited;
        }
        if takes {
            let entry = raw.as_object_mut().expect("read_entry checked");
            entry.insert("time".into(), json!(cx.now));
            entry.insert("apiVersion".into(), json!(cx.api_version));
        }
        out.push((key, id, raw));
    }
    if !writer_seen && !taken_v1.is_empty() {
        let value = encode_entry(
            writer,
            cx.api_version,
            Some(cx.now),
            fields_text::wrap_tree(&Value::Object(taken_v1)),
        );
        out.push((
            order_key(writer, Some(cx.now), cx.api_version),
            writer.clone(),
            value,
        ));
    }
    let updaters = out
        .iter()
        .filter(|(_, id, _)| id.operation == Operation::Update)
        .count();
    if updaters > MAX_UPDATE_MANAGERS {
        return None;
    }
    // The order of `Managed::encode`: by key, ties in the order of the ids.
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    Some(Value::Array(
        out.into_iter().map(|(_, _, value)| value).collect(),
    ))
}

/// The managedFields of a create that brings none: what [`record_changes`] makes from no
/// ownership and encodes, written straight from the created object `new` (in the shape the
/// comparison sees, its type `hidden`) by [`merge::created_fields_v1`], without a field set
/// or a `FieldsV1` tree in between. An empty list when the writer owns nothing; `None` when
/// `new` is not a map.
pub fn record_create(
    new: &Value,
    hidden: &[&str],
    cx: &Context<'_>,
    writer: &ManagerId,
) -> Option<Value> {
    // `metadata`'s own membership is stripped by `created_fields_v1`, its fields kept.
    let top = |name: &str| {
        !hidden.contains(&name)
            && (name == "metadata" || !STRIP.contains(&&[name][..]))
            && (cx.keep)(name)
    };
    let metadata_field = |name: &str| !STRIP.contains(&&["metadata", name][..]);
    let fields = merge::created_fields_v1(new, cx.schema, &top, &metadata_field)?;
    if fields == "{}" {
        return Some(Value::Array(Vec::new()));
    }
    Some(Value::Array(vec![encode_entry(
        writer,
        cx.api_version,
        Some(cx.now),
        fields_text::wrap(&fields),
    )]))
}

/// An entry of a stored managedFields list, if it is exactly as [`encode_entry`] writes
/// entries that [`Managed::decode`] accepts: its id, apiVersion, time and `fieldsV1`.
fn read_entry(raw: &Value) -> Option<(ManagerId, &str, Option<&str>, &Value)> {
    let map = raw.as_object()?;
    let text = |field: &str| match map.get(field) {
        None => Some(""),
        Some(Value::String(text)) if !text.is_empty() => Some(text.as_str()),
        Some(_) => None,
    };
    let known = [
        "manager",
        "operation",
        "apiVersion",
        "time",
        "fieldsType",
        "fieldsV1",
        "subresource",
    ];
    if map.keys().any(|key| !known.contains(&key.as_str())) {
        return None;
    }
    let operation = match text("operation")? {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return None,
    };
    let api_version = text("apiVersion")?;
    if api_version.is_empty() || text("fieldsType")? != "FieldsV1" {
        return None;
    }
    let time = Some(text("time")?).filter(|time| !time.is_empty());
    let fields_v1 = map.get("fieldsV1")?;
    if !fields_v1.is_object() && fields_text::text(fields_v1).is_none() {
        return None;
    }
    let subresource = text("subresource")?;
    let id = ManagerId::new(
        text("manager")?,
        operation,
        api_version,
        (!subresource.is_empty()).then_some(subresource),
    );
    Some((id, api_version, time, fields_v1))
}

/// Why an apply failed.
#[derive(Debug)]
pub enum ApplyError {
    /// The configuration does not fit the schema.
    Invalid(TypeError),
    /// Fields whose values would change are owned by other managers (sorted).
    Conflicts(Vec<(ManagerId, Path)>),
}

impl From<TypeError> for ApplyError {
    fn from(error: TypeError) -> Self {
        ApplyError::Invalid(error)
    }
}

/// Applies `config` to `live` for `applier` (structured-merge-diff's `Updater.Apply` with
/// kube-apiserver's field stripping and timestamps). Returns the new object (without
/// managedFields) and the new ownership.
pub fn apply(
    live: &Value,
    config: &Value,
    mut managed: Managed,
    cx: &Context<'_>,
    applier: &ManagerId,
    force: bool,
) -> Result<(Value, Managed), ApplyError> {
    let merged = merge::merge(live, config, cx.schema)?;
    let mut applied = merge::field_set(config, cx.schema, true)?;
    applied.keep_top_level(cx.keep);
    let previous = managed.entries.remove(applier);
    managed.entries.insert(
        applier.clone(),
        Entry {
            api_version: cx.api_version.to_string(),
            time: previous.as_ref().and_then(|p| p.time.clone()),
            fields: applied,
        },
    );
    let merged = match &previous {
        Some(previous) => merge::prune(&merged, &previous.fields, &managed.owned(), cx.schema),
        None => merged,
    };

    let comparison = merge::compare(live, &merged, cx.schema).retain_top_level(cx.keep);
    let changed = comparison.changed();
    let mut conflicts = Vec::new();
    for (id, entry) in &managed.entries {
        if id == applier {
            continue;
        }
        let taken = entry.fields.intersection(&changed);
        conflicts.extend(taken.paths().into_iter().map(|path| (id.clone(), path)));
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort();
        return Err(ApplyError::Conflicts(conflicts));
    }
    for (id, entry) in managed.entries.iter_mut() {
        if id != applier {
            entry.fields = entry
                .fields
                .difference(&changed)
                .difference(&comparison.removed);
        }
    }
    if let Some(entry) = managed.entries.get_mut(applier) {
        strip(&mut entry.fields);
        let fields_changed = previous.as_ref().is_none_or(|p| p.fields != entry.fields);
        if merged != *live || fields_changed || entry.time.is_none() {
            entry.time = Some(cx.now.to_string());
        }
    }
    managed.drop_empty();
    Ok((merged, managed))
}

/// The fields whose conflicts `kubectl apply --server-side` may take over because
/// client-side apply set them to what they are now: the last-applied-configuration
/// annotation's fields that still have the value it recorded (kube-apiserver's
/// `lastAppliedManager`, for moving from client-side to server-side apply).
pub fn last_applied_fields(
    live: &Value,
    schema: Schema<'_>,
    api_version: &str,
) -> Option<FieldSet> {
    let text = live
        .pointer("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()
        .filter(|t| !t.is_empty())?;
    let last_applied: Value = serde_json::from_str(text).ok()?;
    if last_applied.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let fields = merge::field_set(&last_applied, schema, true).ok()?;
    let comparison = merge::compare(&last_applied, live, schema);
    Some(
        fields
            .difference(&comparison.modified)
            .difference(&comparison.added)
            .difference(&comparison.removed),
    )
}

pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
