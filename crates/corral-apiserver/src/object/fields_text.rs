//! `fieldsV1` held as its JSON text.
//!
//! A managedFields entry's `fieldsV1` is a tree as big as the fields its manager owns; a
//! Machine carries three or four of them, more nodes than the rest of the object. Every copy,
//! comparison, drop and serialization of an object walked those trees, and the field manager
//! reads only the entries an update touches. So, as kube-apiserver keeps `FieldsV1` as raw
//! bytes, the server's objects hold `metadata.managedFields[*].fieldsV1` as a string: the
//! JSON text behind a marker ([`wrap`], [`text`]). The marker carries a part drawn at random
//! when the process starts, so no string a client sends can pass for one.
//!
//! Two rules keep the text invisible outside the server:
//! - every serialization of an object goes through [`Json`] ([`to_vec`], [`to_writer`]),
//!   which writes a marked string's text as it is (serde_json's raw-value token), and writes
//!   everything else as `Value` would;
//! - every reader of `fieldsV1` takes [`tree`], which parses a marked string and passes a tree
//!   through, so code that meets either form reads the same set.
//!
//! Where the marked form comes from: stored objects decode with [`from_slice`], which takes
//! the entry's text as the store holds it (this server wrote it); the field manager writes
//! the entries it edits with [`wrap_tree`] and captures whatever a request brought in tree
//! form with [`capture`] (parsed and written again, so that equal sets have equal text).

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// The marker: a control character no Kubernetes field holds, a name, and a random part.
static MARK: LazyLock<String> =
    LazyLock::new(|| format!("\u{1}fieldsV1:{}:", uuid::Uuid::new_v4().simple()));

/// serde_json's name for a raw value's struct and field: serializing a struct of this name
/// with a string field writes the string as it is.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A `fieldsV1` in the marked form: `json` must be the JSON text of an object.
pub fn wrap(json: &str) -> Value {
    let mark = MARK.as_str();
    let mut out = String::with_capacity(mark.len() + json.len());
    out.push_str(mark);
    out.push_str(json);
    Value::String(out)
}

/// A `fieldsV1` tree in the marked form, written in serde_json's compact form (keys sorted).
pub fn wrap_tree(tree: &Value) -> Value {
    let mut bytes = Vec::with_capacity(MARK.len() + 128);
    bytes.extend_from_slice(MARK.as_bytes());
    serde_json::to_writer(&mut bytes, tree).expect("JSON values serialize");
    Value::String(String::from_utf8(bytes).expect("serde_json writes UTF-8"))
}

/// The JSON text of a marked `fieldsV1`; `None` for anything else.
pub fn text(value: &Value) -> Option<&str> {
    match value {
        Value::String(string) => marked(string),
        _ => None,
    }
}

fn marked(string: &str) -> Option<&str> {
    // The first byte rules out nearly every string without comparing the whole marker.
    if string.as_bytes().first() != Some(&1) {
        return None;
    }
    string.strip_prefix(MARK.as_str())
}

/// A `fieldsV1` as a tree: a marked one parsed, any other value as it is.
pub fn tree(value: &Value) -> Cow<'_, Value> {
    match text(value) {
        // The text is this server's writing or was checked as JSON when it was read.
        Some(json) => Cow::Owned(serde_json::from_str(json).unwrap_or(Value::Null)),
        None => Cow::Borrowed(value),
    }
}

/// Serializes a value as the JSON it stands for: marked `fieldsV1` strings as their text.
pub struct Json<'a>(pub &'a Value);

impl serde::Serialize for Json<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(string) => match marked(string) {
                Some(json) => {
                    let mut raw = serializer.serialize_struct(RAW_VALUE_TOKEN, 1)?;
                    raw.serialize_field(RAW_VALUE_TOKEN, json)?;
                    raw.end()
                }
                None => serializer.serialize_str(string),
            },
            Value::Array(items) => serializer.collect_seq(items.iter().map(Json)),
            Value::Object(map) => serializer.collect_map(map.iter().map(|(k, v)| (k, Json(v)))),
            other => other.serialize(serializer),
        }
    }
}

/// A value's JSON (see [`Json`]).
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    to_writer(&mut out, value);
    out
}

/// Appends a value's JSON (see [`Json`]).
pub fn to_writer(out: &mut Vec<u8>, value: &Value) {
    serde_json::to_writer(out, &Json(value)).expect("JSON values serialize");
}

/// The managedFields entries of an object, when it has a list of them.
fn entries_mut(object: &mut Value) -> Option<&mut Vec<Value>> {
    object
        .get_mut("metadata")?
        .get_mut("managedFields")?
        .as_array_mut()
}

/// Puts every `fieldsV1` object of the object's managedFields into the marked form, written
/// as [`wrap_tree`] writes it. Entries already marked, and values that are no object (which
/// validation reports), stay as they are.
pub fn capture(object: &mut Value) {
    let Some(entries) = entries_mut(object) else {
        return;
    };
    for entry in entries {
        if let Some(fields) = entry.get_mut("fieldsV1")
            && fields.is_object()
        {
            *fields = wrap_tree(fields);
        }
    }
}

/// The value with every marked `fieldsV1` parsed back into a tree: for what reads an object
/// as a client would (CEL expressions) and for tests.
pub fn expanded(value: &Value) -> Value {
    match value {
        Value::String(_) => tree(value).into_owned(),
        Value::Array(items) => Value::Array(items.iter().map(expanded).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), expanded(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Decodes an object's JSON, taking each managedFields entry's `fieldsV1` object as its text
/// (checked as JSON, not built): what stored objects decode with.
pub fn from_slice(bytes: &[u8]) -> serde_json::Result<Value> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Seed(Level::Object).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Where in an object the decoder is.
#[derive(Clone, Copy)]
enum Level {
    Object,
    Metadata,
    Entries,
    Entry,
    /// Anywhere else: decoded as `Value` decodes.
    Other,
}

struct Seed(Level);

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.0 {
            Level::Other => serde::Deserialize::deserialize(deserializer),
            _ => deserializer.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Seed {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let items = match self.0 {
            Level::Entries => Level::Entry,
            _ => Level::Other,
        };
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(Seed(items))? {
            out.push(item);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match (self.0, key.as_str()) {
                (Level::Object, "metadata") => map.next_value_seed(Seed(Level::Metadata))?,
                (Level::Metadata, "managedFields") => map.next_value_seed(Seed(Level::Entries))?,
                (Level::Entry, "fieldsV1") => {
                    let raw: &RawValue = map.next_value()?;
                    let json = raw.get();
                    match json.starts_with('{') {
                        true => wrap(json),
                        false => serde_json::from_str(json).map_err(serde::de::Error::custom)?,
                    }
                }
                _ => map.next_value_seed(Seed(Level::Other))?,
            };
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "a",
                "managedFields": [
                    {"manager": "m", "fieldsV1": {"f:data": {"f:b": {}, "f:a": {}}}},
                    {"manager": "n", "fieldsV1": null},
                ],
            },
            "data": {"fieldsV1": {"x": "y"}, "s": "\u{1}fieldsV1:forged:{}"},
        })
    }

    #[test]
    fn decoding_marks_entries_and_serializing_writes_the_same_json() {
        let bytes = serde_json::to_vec(&object()).unwrap();
        let decoded = from_slice(&bytes).unwrap();
        let fields = &decoded["metadata"]["managedFields"][0]["fieldsV1"];
        assert_eq!(text(fields), Some(r#"{"f:data":{"f:a":{},"f:b":{}}}"#));
        assert_eq!(
            decoded["metadata"]["managedFields"][1]["fieldsV1"],
            Value::Null
        );
        // Only entries' fieldsV1 are taken as text.
        assert_eq!(decoded["data"]["fieldsV1"], json!({"x": "y"}));
        assert_eq!(to_vec(&decoded), bytes);
        assert_eq!(expanded(&decoded), object());
        assert_eq!(*tree(fields), json!({"f:data": {"f:a": {}, "f:b": {}}}));
    }

    #[test]
    fn capture_marks_trees_in_compact_form() {
        let mut value = object();
        capture(&mut value);
        let fields = &value["metadata"]["managedFields"][0]["fieldsV1"];
        assert_eq!(text(fields), Some(r#"{"f:data":{"f:a":{},"f:b":{}}}"#));
        assert_eq!(to_vec(&value), serde_json::to_vec(&object()).unwrap());
        let again = value.clone();
        capture(&mut value);
        assert_eq!(value, again);
    }

    #[test]
    fn a_string_a_client_sends_is_never_written_raw() {
        let value = json!({"metadata": {"managedFields": [{"fieldsV1": "\u{1}fieldsV1:x:{}"}]}});
        let written = to_vec(&value);
        assert_eq!(written, serde_json::to_vec(&value).unwrap());
        let decoded = from_slice(&written).unwrap();
        assert_eq!(decoded, value);
        assert!(text(&decoded["metadata"]["managedFields"][0]["fieldsV1"]).is_none());
    }

    #[test]
    fn bad_json_is_refused() {
        assert!(from_slice(br#"{"metadata": {"managedFields": [{"fieldsV1": {"a": }]}}"#).is_err());
        assert!(from_slice(br#"{"a": 1} x"#).is_err());
    }

    /// Every serialization in the server's code is of an object through [`Json`], or says
    /// on the lines just above it, after `// fields_text:`, why what it writes holds no
    /// marked `fieldsV1`. Unit-test code is not looked at.
    #[test]
    fn every_serialization_goes_through_json_or_says_why_not() {
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs")
                    && !path.ends_with("tests.rs")
                    && !path.ends_with("fields_text.rs")
                {
                    out.push(path);
                }
            }
        }
        let mut paths = Vec::new();
        files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut paths,
        );
        let calls = [
            "serde_json::to_vec(",
            "serde_json::to_writer(",
            "serde_json::to_string(",
        ];
        let mut unexplained = Vec::new();
        for path in &paths {
            let source = std::fs::read_to_string(path).unwrap();
            let code = source.split("\n#[cfg(test)]\nmod tests {").next().unwrap();
            let lines: Vec<&str> = code.lines().collect();
            for (index, line) in lines.iter().enumerate() {
                if calls.iter().any(|call| line.contains(call))
                    && !lines[index.saturating_sub(3)..=index]
                        .iter()
                        .any(|line| line.contains("// fields_text:"))
                {
                    unexplained.push(format!("{}:{}", path.display(), index + 1));
                }
            }
        }
        assert!(paths.len() > 20, "the sources were found");
        assert!(
            unexplained.is_empty(),
            "serialized without `Json`: {unexplained:?}"
        );
    }
}
