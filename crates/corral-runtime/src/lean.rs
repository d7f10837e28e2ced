//! Decoding watched objects without the managedFields no controller reads.
//!
//! Every object the API server sends carries `metadata.managedFields`: an entry per field
//! manager, each with a tree of every field it set. For a Machine that is often more JSON than
//! the rest of the object, and decoding it built a `serde_json::Value` tree per entry for
//! every watch event, only for the shared caches to drop all but one entry
//! ([`super::shared::trim_managed_fields`]). [`Lean`] decodes an object as `K` does, except
//! that the entries of managers not in [`KEPT_MANAGERS`] are only parsed, never built.
//!
//! It works on the deserializer, not on `K`: the object's map and its `metadata` map are read
//! through wrappers that hand every other key and value to `K`'s own `Deserialize` untouched.
//! Nothing else changes: an object that is not a map, or a bad value anywhere, fails as it
//! would for `K`.

use std::fmt;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The managers whose managedFields entries are decoded: the MachineSet's, which says what
/// it propagated to its Machines (see `corral_api::field_managers`).
pub const KEPT_MANAGERS: &[&str] = &[corral_api::field_managers::MACHINE_SET];

/// `K`, decoded without the managedFields entries of managers not in [`KEPT_MANAGERS`].
#[derive(Clone, Debug)]
pub struct Lean<K>(pub K);

/// A watch event of [`Lean`] objects as one of the objects themselves.
pub fn unwrap_event<K>(
    event: kube::runtime::watcher::Event<Lean<K>>,
) -> kube::runtime::watcher::Event<K> {
    use kube::runtime::watcher::Event;
    match event {
        Event::Apply(Lean(object)) => Event::Apply(object),
        Event::Delete(Lean(object)) => Event::Delete(object),
        Event::Init => Event::Init,
        Event::InitApply(Lean(object)) => Event::InitApply(object),
        Event::InitDone => Event::InitDone,
    }
}

/// The API resource of `K`: a watch of `Lean<K>` is a watch of `K`.
impl<K: kube::Resource> kube::Resource for Lean<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::version(dt)
    }

    fn api_version(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::api_version(dt)
    }

    fn plural(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::plural(dt)
    }

    fn url_path(dt: &Self::DynamicType, namespace: Option<&str>) -> String {
        K::url_path(dt, namespace)
    }

    fn meta(&self) -> &kube::api::ObjectMeta {
        self.0.meta()
    }

    fn meta_mut(&mut self) -> &mut kube::api::ObjectMeta {
        self.0.meta_mut()
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Lean<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Wrapped {
            inner: deserializer,
            level: Level::Object,
        })
        .map(Lean)
    }
}

/// Which map a wrapper reads: the object (whose `metadata` it wraps) or its metadata (whose
/// `managedFields` it filters).
#[derive(Clone, Copy)]
enum Level {
    Object,
    Metadata,
}

/// A deserializer whose maps are read through [`WrappedMap`].
struct Wrapped<D> {
    inner: D,
    level: Level,
}

/// Forwards `deserialize_*` methods to the inner deserializer with the visitor wrapped, so
/// that each keeps its own meaning (`deserialize_option` tells null from a value).
macro_rules! forward_wrapped {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method($($arg,)* WrappedVisitor {
                inner: visitor,
                level: self.level,
            })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Wrapped<D> {
    type Error = D::Error;

    forward_wrapped! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }
}

/// Hands a map to the visitor through [`WrappedMap`]; anything else as it is.
struct WrappedVisitor<V> {
    inner: V,
    level: Level,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for WrappedVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(WrappedMap {
            inner: map,
            level: self.level,
            next: Next::AsIs,
        })
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_some<D2: Deserializer<'de>>(self, deserializer: D2) -> Result<V::Value, D2::Error> {
        self.inner.visit_some(Wrapped {
            inner: deserializer,
            level: self.level,
        })
    }

    fn visit_newtype_struct<D2: Deserializer<'de>>(
        self,
        deserializer: D2,
    ) -> Result<V::Value, D2::Error> {
        self.inner.visit_newtype_struct(Wrapped {
            inner: deserializer,
            level: self.level,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(data)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<V::Value, E> {
        self.inner.visit_i128(v)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<V::Value, E> {
        self.inner.visit_u128(v)
    }

    fn visit_char<E: de::Error>(self, v: char) -> Result<V::Value, E> {
        self.inner.visit_char(v)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<V::Value, E> {
        self.inner.visit_bytes(v)
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<V::Value, E> {
        self.inner.visit_borrowed_bytes(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<V::Value, E> {
        self.inner.visit_byte_buf(v)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<V::Value, E> {
        self.inner.visit_bool(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.inner.visit_i64(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.inner.visit_u64(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.inner.visit_f64(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.inner.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.inner.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.inner.visit_string(v)
    }
}

/// What the value after the key just read is.
enum Next {
    /// Handed to `K` as it is.
    AsIs,
    /// The object's metadata: read through a wrapper.
    Metadata,
    /// The managedFields entries kept, already read.
    Kept(Value),
}

struct WrappedMap<A> {
    inner: A,
    level: Level,
    next: Next,
}

/// A string (a map key, a managedFields entry's field), borrowed from the input when it can
/// be.
enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Text<'_> {
    fn as_str(&self) -> &str {
        match self {
            Text::Borrowed(text) => text,
            Text::Owned(text) => text,
        }
    }

    fn into_string(self) -> String {
        match self {
            Text::Borrowed(text) => text.to_owned(),
            Text::Owned(text) => text,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text::Owned(v))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WrappedMap<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key::<Text<'de>>()? else {
                return Ok(None);
            };
            self.next = match (self.level, key.as_str()) {
                (Level::Object, "metadata") => Next::Metadata,
                (Level::Metadata, "managedFields") => {
                    match self.inner.next_value::<KeptEntries>()?.0 {
                        // Nothing kept: as if the object had no managedFields.
                        None => continue,
                        Some(kept) => Next::Kept(kept),
                    }
                }
                _ => Next::AsIs,
            };
            return match key {
                Text::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
                Text::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        match std::mem::replace(&mut self.next, Next::AsIs) {
            Next::AsIs => self.inner.next_value_seed(seed),
            Next::Metadata => self.inner.next_value_seed(MetadataSeed(seed)),
            Next::Kept(kept) => seed.deserialize(kept).map_err(de::Error::custom),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// Reads the metadata map through a wrapper that filters its managedFields.
struct MetadataSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for MetadataSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Wrapped {
            inner: deserializer,
            level: Level::Metadata,
        })
    }
}

/// The managedFields entries of the managers in [`KEPT_MANAGERS`], as JSON; `None` when
/// there are none (or managedFields is null).
struct KeptEntries(Option<Value>);

impl<'de> Deserialize<'de> for KeptEntries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries: Option<Vec<Entry<'de>>> = Option::deserialize(deserializer)?;
        let kept: Vec<Value> = entries
            .into_iter()
            .flatten()
            .filter(|entry| {
                entry
                    .manager
                    .as_ref()
                    .is_some_and(|manager| KEPT_MANAGERS.contains(&manager.as_str()))
            })
            .map(Entry::into_value)
            .collect::<Result<_, _>>()
            .map_err(de::Error::custom)?;
        Ok(KeptEntries(
            (!kept.is_empty()).then_some(Value::Array(kept)),
        ))
    }
}

/// A managedFields entry's field tree, as text when the deserializer can hand it over, else
/// as a value.
///
/// `serde_json` reading bytes hands over a value's text for `RawValue` (a newtype struct of a
/// private name, answered with a map of one entry holding the text). Anything else (serde's
/// buffered content, when the event's `object` came before its `type`, or a `serde_json` that
/// changed that name) answers the newtype struct as any other: the tree is then decoded, which
/// is slower and as correct.
enum Fields<'de> {
    Text(Text<'de>),
    Value(Value),
}

/// `serde_json`'s name for `RawValue`'s newtype struct.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;

        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields<'de>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a fieldsV1 object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                // The text's one entry, borrowed from the input when it is a slice: the
                // entries of managers not kept are never copied.
                let _: Option<de::IgnoredAny> = map.next_key()?;
                map.next_value().map(Fields::Text)
            }

            fn visit_newtype_struct<D2: Deserializer<'de>>(
                self,
                deserializer: D2,
            ) -> Result<Fields<'de>, D2::Error> {
                Value::deserialize(deserializer).map(Fields::Value)
            }
        }

        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, FieldsVisitor)
    }
}

/// One managedFields entry, its field tree kept as text until it is known to be wanted (the
/// fields of `ManagedFieldsEntry`; anything else is skipped, as decoding one would).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    #[serde(borrow)]
    api_version: Option<Text<'a>>,
    #[serde(borrow)]
    fields_type: Option<Text<'a>>,
    #[serde(borrow)]
    fields_v1: Option<Fields<'a>>,
    #[serde(borrow)]
    manager: Option<Text<'a>>,
    #[serde(borrow)]
    operation: Option<Text<'a>>,
    #[serde(borrow)]
    subresource: Option<Text<'a>>,
    #[serde(borrow)]
    time: Option<Text<'a>>,
}

impl Entry<'_> {
    fn into_value(self) -> Result<Value, serde_json::Error> {
        let mut map = serde_json::Map::new();
        let mut text = |name: &str, value: Option<Text<'_>>| {
            if let Some(value) = value {
                map.insert(name.to_owned(), Value::String(value.into_string()));
            }
        };
        text("apiVersion", self.api_version);
        text("fieldsType", self.fields_type);
        text("manager", self.manager);
        text("operation", self.operation);
        text("subresource", self.subresource);
        text("time", self.time);
        match self.fields_v1 {
            Some(Fields::Text(text)) => {
                map.insert("fieldsV1".into(), serde_json::from_str(text.as_str())?);
            }
            Some(Fields::Value(value)) => {
                map.insert("fieldsV1".into(), value);
            }
            None => {}
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_api::Machine;
    use serde_json::json;

    fn machine_json() -> Value {
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {
                "name": "m-1",
                "namespace": "default",
                "labels": {"a": "b"},
                "managedFields": [
                    {"apiVersion": "cluster.x-k8s.io/v1beta2", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:spec": {"f:clusterName": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}},
                     "manager": corral_api::field_managers::MACHINE_SET, "operation": "Update",
                     "time": "2026-11-30T10:00:00Z"},
                    {"apiVersion": "cluster.x-k8s.io/v1beta2", "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {}}}},
                     "manager": "corral", "operation": "Update", "subresource": "status",
                     "time": "2026-11-30T10:00:01Z"}
                ],
                "resourceVersion": "7"
            },
            "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "s"},
                     "infrastructureRef": {"apiGroup": "x", "kind": "Y", "name": "z"}},
            "status": {"phase": "Running"}
        })
    }

    #[test]
    fn an_object_decodes_as_itself_less_the_entries_of_other_managers() {
        let text = serde_json::to_string(&machine_json()).unwrap();
        let Lean(lean) = serde_json::from_str::<Lean<Machine>>(&text).unwrap();
        let mut full: Machine = serde_json::from_str(&text).unwrap();
        super::super::shared::trim_managed_fields(&mut full, KEPT_MANAGERS);
        assert_eq!(lean, full);
        assert_eq!(lean.metadata.managed_fields.as_ref().map(Vec::len), Some(1));
        // The kept entry's tree read as text (`type` first) or from serde's buffer (`object`
        // first) is the same.
        for event in [
            format!(r#"{{"type":"ADDED","object":{text}}}"#),
            format!(r#"{{"object":{text},"type":"ADDED"}}"#),
        ] {
            let event: kube::core::WatchEvent<Lean<Machine>> =
                serde_json::from_str(&event).unwrap();
            let kube::core::WatchEvent::Added(Lean(decoded)) = event else {
                panic!("an ADDED event")
            };
            assert_eq!(decoded, full);
        }
    }

    #[test]
    fn without_kept_entries_there_are_no_managed_fields() {
        let mut object = machine_json();
        object["metadata"]["managedFields"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        let text = serde_json::to_string(&object).unwrap();
        let Lean(lean) = serde_json::from_str::<Lean<Machine>>(&text).unwrap();
        assert_eq!(lean.metadata.managed_fields, None);
        assert_eq!(lean.metadata.name.as_deref(), Some("m-1"));
        assert_eq!(lean.spec.cluster_name, "c");

        let mut null = machine_json();
        null["metadata"]["managedFields"] = Value::Null;
        let text = serde_json::to_string(&null).unwrap();
        let Lean(lean) = serde_json::from_str::<Lean<Machine>>(&text).unwrap();
        assert_eq!(lean.metadata.managed_fields, None);
    }

    /// k8s-openapi's kinds have hand-written `Deserialize` impls that read fields as options;
    /// a watch decodes them inside `WatchEvent`, a list inside `ObjectList`.
    #[test]
    fn built_in_kinds_decode_in_watch_events_and_lists() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "managedFields": [
                {"manager": "x", "operation": "Update", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:data": {}}}]},
            "data": {"k": "v"}});
        let mut expected: ConfigMap = serde_json::from_value(object.clone()).unwrap();
        expected.metadata.managed_fields = None;

        // As kube-client decodes them: from the bytes (`serde_json::from_slice`).
        let decode = |value: &Value| serde_json::to_string(value).unwrap();
        let Lean(decoded) = serde_json::from_str::<Lean<ConfigMap>>(&decode(&object)).unwrap();
        assert_eq!(decoded, expected);
        // `type` first, as API servers write events, and `object` first (serde buffers it).
        for event in [
            format!(r#"{{"type":"MODIFIED","object":{}}}"#, decode(&object)),
            format!(r#"{{"object":{},"type":"MODIFIED"}}"#, decode(&object)),
        ] {
            let event: kube::core::WatchEvent<Lean<ConfigMap>> =
                serde_json::from_str(&event).unwrap();
            let kube::core::WatchEvent::Modified(Lean(decoded)) = event else {
                panic!("a MODIFIED event")
            };
            assert_eq!(decoded, expected);
        }
        let list = json!({"apiVersion": "v1", "kind": "ConfigMapList",
            "metadata": {"resourceVersion": "5"}, "items": [object]});
        let list: kube::core::ObjectList<Lean<ConfigMap>> =
            serde_json::from_str(&decode(&list)).unwrap();
        assert_eq!(
            list.items
                .into_iter()
                .map(|Lean(map)| map)
                .collect::<Vec<_>>(),
            [expected]
        );
    }

    /// Provider objects are read as `DynamicObject`s, whose fields besides metadata are
    /// flattened into one value.
    #[test]
    fn dynamic_objects_keep_everything_but_the_managed_fields() {
        let object = machine_json();
        let text = serde_json::to_string(&object).unwrap();
        let Lean(lean) = serde_json::from_str::<Lean<kube::api::DynamicObject>>(&text).unwrap();
        let mut full: kube::api::DynamicObject = serde_json::from_str(&text).unwrap();
        super::super::shared::trim_managed_fields(&mut full, KEPT_MANAGERS);
        assert_eq!(lean, full);
        assert_eq!(lean.data["spec"]["clusterName"], "c");
    }

    #[test]
    fn bad_input_fails_as_it_would_without_the_filter() {
        for bad in [
            json!([1, 2]),
            json!({"metadata": {"name": 5}, "spec": {}}),
            json!({"metadata": {"managedFields": [{"manager": 5}]}, "spec": {}}),
            json!({"metadata": {"managedFields": "x"}, "spec": {}}),
        ] {
            let text = serde_json::to_string(&bad).unwrap();
            assert!(
                serde_json::from_str::<Lean<Machine>>(&text).is_err(),
                "{bad}"
            );
        }
    }
}
