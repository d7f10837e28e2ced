//! Set operations on a `FieldsV1` object itself, without decoding it into a [`FieldSet`].
//!
//! An update asks of every managedFields entry whether it owns something the update changed,
//! takes those fields from their owners, and gives them to the writer, whose entry gains the
//! fields it did not hold yet (a condition type a Machine gets for the first time). Decoding
//! each such entry into a field set, taking the difference, adding and encoding it again
//! costs a path element and a tree node per field of the entry, and listing the changed
//! paths with their keys one per path; a Machine's first status write changes ~80 paths. Here
//! the changed set is encoded once, and each entry is compared with it and edited along its
//! nodes only ([`intersects`], [`contains_all`], [`subtract`], [`add`]).
//!
//! # The normal form
//!
//! Every operation keeps the form [`FieldSet::to_fields_v1`] writes: every node is an object;
//! `{}` is a member without children; a node with children holds `"."` exactly when it is a
//! member itself; no node is `{".": {}}` alone, and no node that is not a member is without
//! children. Keys are the canonical path element keys ([`PathElement::fields_v1_key`]), so a
//! path's keys find its node by string equality. The map is ordered by key either way
//! (`serde_json::Map` without `preserve_order`), so the result encodes byte for byte as the
//! decoded route's would. Entries this server stored were written by `to_fields_v1`; a node
//! that is not an object means the entry is not in that form, and the caller falls back to
//! decoding it.
//!
//! [`FieldSet`]: super::fieldset::FieldSet
//! [`FieldSet::to_fields_v1`]: super::fieldset::FieldSet::to_fields_v1
//! [`PathElement::fields_v1_key`]: super::fieldset::PathElement::fields_v1_key

use serde_json::{Map, Value};

/// The key of a member that has children.
const SELF: &str = ".";

/// Not the normal form: a node that is not an object.
#[derive(Debug, PartialEq, Eq)]
pub struct NotNormal;

/// Whether the path given by its `FieldsV1` keys is a member of the set.
pub fn contains_path(map: &Map<String, Value>, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match map.get(first.as_str()) {
        Some(Value::Object(node)) if rest.is_empty() => is_member(node),
        Some(Value::Object(node)) => contains_path(node, rest),
        _ => false,
    }
}

/// Removes the path given by its `FieldsV1` keys from the set (its membership only: its
/// children stay, as [`FieldSet::difference`] removes paths, not subtrees). Nodes left
/// without members or children go.
///
/// [`FieldSet::difference`]: super::fieldset::FieldSet::difference
pub fn remove(map: &mut Map<String, Value>, path: &[String]) -> Result<(), NotNormal> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(());
    };
    let Some(node) = map.get_mut(first.as_str()) else {
        return Ok(());
    };
    let Value::Object(node) = node else {
        return Err(NotNormal);
    };
    if rest.is_empty() {
        if node.is_empty() {
            map.remove(first.as_str());
        } else {
            node.remove(SELF);
        }
        return Ok(());
    }
    if node.is_empty() {
        // A member without children: nothing below it.
        return Ok(());
    }
    remove(node, rest)?;
    if node.is_empty() {
        // Not a member, and its last child went.
        map.remove(first.as_str());
    } else if node.len() == 1 && node.contains_key(SELF) {
        // A member whose last child went.
        node.clear();
    }
    Ok(())
}

/// Adds the path given by its `FieldsV1` keys to the set.
pub fn insert(map: &mut Map<String, Value>, path: &[String]) -> Result<(), NotNormal> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(());
    };
    match map.get_mut(first.as_str()) {
        None => {
            let mut node = Map::new();
            insert(&mut node, rest)?;
            map.insert(first.clone(), Value::Object(node));
        }
        Some(Value::Object(node)) => {
            if rest.is_empty() {
                if !node.is_empty() && !node.contains_key(SELF) {
                    node.insert(SELF.into(), Value::Object(Map::new()));
                }
            } else {
                if node.is_empty() {
                    // A member without children gets its first: it says so with `.`.
                    node.insert(SELF.into(), Value::Object(Map::new()));
                }
                insert(node, rest)?;
            }
        }
        Some(_) => return Err(NotNormal),
    }
    Ok(())
}

/// A node of a `FieldsV1` map, as a map.
fn node(value: &Value) -> Result<&Map<String, Value>, NotNormal> {
    value.as_object().ok_or(NotNormal)
}

/// Whether a node (in normal form) is a member itself.
fn is_member(node: &Map<String, Value>) -> bool {
    node.is_empty() || node.contains_key(SELF)
}

/// Whether a node has children (keys other than `.`).
fn has_children(node: &Map<String, Value>) -> bool {
    node.keys().any(|key| key != SELF)
}

/// Whether some member of `b` is a member of `a` ([`FieldSet::intersection`] not empty).
///
/// [`FieldSet::intersection`]: super::fieldset::FieldSet::intersection
pub fn intersects(a: &Map<String, Value>, b: &Map<String, Value>) -> Result<bool, NotNormal> {
    for (key, b_node) in b {
        if key == SELF {
            continue;
        }
        let Some(a_node) = a.get(key) else {
            continue;
        };
        let (a_node, b_node) = (node(a_node)?, node(b_node)?);
        if is_member(a_node) && is_member(b_node) {
            return Ok(true);
        }
        if has_children(a_node) && has_children(b_node) && intersects(a_node, b_node)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether every member of `b` is a member of `a`.
pub fn contains_all(a: &Map<String, Value>, b: &Map<String, Value>) -> Result<bool, NotNormal> {
    for (key, b_node) in b {
        if key == SELF {
            continue;
        }
        let b_node = node(b_node)?;
        let Some(a_node) = a.get(key) else {
            return Ok(false);
        };
        let a_node = node(a_node)?;
        if is_member(b_node) && !is_member(a_node) {
            return Ok(false);
        }
        if has_children(b_node) && !contains_all(a_node, b_node)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Removes every member of `b` from `a` ([`FieldSet::difference`]: paths, not subtrees).
///
/// [`FieldSet::difference`]: super::fieldset::FieldSet::difference
pub fn subtract(a: &mut Map<String, Value>, b: &Map<String, Value>) -> Result<(), NotNormal> {
    for (key, b_node) in b {
        if key == SELF {
            continue;
        }
        let b_node = node(b_node)?;
        let Some(a_node) = a.get_mut(key.as_str()) else {
            continue;
        };
        let Value::Object(a_node) = a_node else {
            return Err(NotNormal);
        };
        let gone = if a_node.is_empty() {
            // A member without children: it goes if `b` has it.
            is_member(b_node)
        } else {
            if has_children(b_node) {
                subtract(a_node, b_node)?;
            }
            if is_member(b_node) {
                a_node.remove(SELF);
            }
            if a_node.len() == 1 && a_node.contains_key(SELF) {
                // A member whose last child went.
                a_node.clear();
                false
            } else {
                // Not a member, and its last child went.
                a_node.is_empty()
            }
        };
        if gone {
            a.remove(key.as_str());
        }
    }
    Ok(())
}

/// Adds every member of `b` to `a` ([`FieldSet::add`]).
///
/// [`FieldSet::add`]: super::fieldset::FieldSet::add
pub fn add(a: &mut Map<String, Value>, b: &Map<String, Value>) -> Result<(), NotNormal> {
    for (key, b_node) in b {
        if key == SELF {
            continue;
        }
        let b_node = node(b_node)?;
        match a.get_mut(key.as_str()) {
            None => {
                a.insert(key.clone(), Value::Object(b_node.clone()));
            }
            Some(Value::Object(a_node)) => {
                if has_children(b_node) {
                    if a_node.is_empty() {
                        // A member without children gets its first: it says so with `.`.
                        a_node.insert(SELF.into(), Value::Object(Map::new()));
                    }
                    add(a_node, b_node)?;
                }
                if is_member(b_node) && !a_node.is_empty() && !a_node.contains_key(SELF) {
                    a_node.insert(SELF.into(), Value::Object(Map::new()));
                }
            }
            Some(_) => return Err(NotNormal),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::fieldset::{FieldSet, Path, PathElement};
    use super::*;

    /// A small deterministic generator (no dependency for a test's randomness).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Paths over a few elements of every kind, so that sets share prefixes often.
    fn random_path(rng: &mut Rng) -> Path {
        let depth = 1 + rng.below(4) as usize;
        (0..depth)
            .map(|_| match rng.below(6) {
                0 => PathElement::Key(vec![(
                    "type".to_string(),
                    format!("\"{}\"", ["Ready", "Available"][rng.below(2) as usize]),
                )]),
                1 => PathElement::Value(format!("\"{}\"", ["a", "b"][rng.below(2) as usize])),
                _ => PathElement::Field(["spec", "status", "x", "y"][rng.below(4) as usize].into()),
            })
            .collect()
    }

    fn random_set(rng: &mut Rng, most: u64) -> FieldSet {
        let mut set = FieldSet::new();
        for _ in 0..rng.below(most + 1) {
            set.insert(&random_path(rng));
        }
        set
    }

    fn keys(set: &FieldSet) -> Vec<Vec<String>> {
        set.paths()
            .iter()
            .map(|path| path.iter().map(PathElement::fields_v1_key).collect())
            .collect()
    }

    #[test]
    fn edits_in_place_equal_decoding_taking_the_difference_and_adding() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..3000 {
            let entry = random_set(&mut rng, 12);
            let changed = random_set(&mut rng, 6);
            let removed = random_set(&mut rng, 3);
            let taken = match round % 3 {
                0 => changed.clone(),
                1 => FieldSet::new(),
                _ => changed.intersection(&random_set(&mut rng, 8)),
            };
            let mut decoded = entry.difference(&changed).difference(&removed);
            decoded.add(&taken);

            let Value::Object(mut map) = entry.to_fields_v1() else {
                unreachable!("to_fields_v1 returns an object")
            };
            for path in keys(&changed).iter().chain(&keys(&removed)) {
                remove(&mut map, path).unwrap();
            }
            for path in &keys(&taken) {
                insert(&mut map, path).unwrap();
            }
            assert_eq!(
                Value::Object(map),
                decoded.to_fields_v1(),
                "round {round}: entry {entry:?}, changed {changed:?}, removed {removed:?}"
            );
        }
    }

    fn map_of(set: &FieldSet) -> Map<String, Value> {
        match set.to_fields_v1() {
            Value::Object(map) => map,
            _ => unreachable!("to_fields_v1 returns an object"),
        }
    }

    #[test]
    fn set_operations_on_fields_v1_equal_those_on_field_sets() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..3000 {
            let a = random_set(&mut rng, 12);
            let b = match round % 4 {
                0 => a.intersection(&random_set(&mut rng, 12)),
                _ => random_set(&mut rng, 8),
            };
            let (a_map, b_map) = (map_of(&a), map_of(&b));
            let context = format!("round {round}: a {a:?}, b {b:?}");
            assert_eq!(
                intersects(&a_map, &b_map).unwrap(),
                !a.intersection(&b).is_empty(),
                "intersects, {context}"
            );
            assert_eq!(
                contains_all(&a_map, &b_map).unwrap(),
                b.difference(&a).is_empty(),
                "contains_all, {context}"
            );
            let mut subtracted = a_map.clone();
            subtract(&mut subtracted, &b_map).unwrap();
            assert_eq!(subtracted, map_of(&a.difference(&b)), "subtract, {context}");
            let mut added = a_map.clone();
            add(&mut added, &b_map).unwrap();
            assert_eq!(added, map_of(&a.union(&b)), "add, {context}");
        }
    }

    #[test]
    fn a_node_that_is_not_an_object_is_not_the_normal_form() {
        let Value::Object(mut map) = serde_json::json!({"f:spec": {"f:x": 1}}) else {
            unreachable!()
        };
        let path = vec!["f:spec".to_string(), "f:x".to_string(), "f:y".to_string()];
        assert_eq!(remove(&mut map, &path), Err(NotNormal));
        assert_eq!(insert(&mut map, &path), Err(NotNormal));
    }
}
