use serde_json::{Value, json};

use super::{ProtobufError, decode};

// A tiny protobuf encoder for building bodies by hand.

#[derive(Default)]
struct Pb(Vec<u8>);

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

impl Pb {
    fn new() -> Pb {
        Pb::default()
    }

    fn key(mut self, number: u32, wire_type: u8) -> Pb {
        put_varint(&mut self.0, (u64::from(number) << 3) | u64::from(wire_type));
        self
    }

    fn varint(self, number: u32, value: u64) -> Pb {
        let mut pb = self.key(number, 0);
        put_varint(&mut pb.0, value);
        pb
    }

    /// A signed integer as Go writes int32 and int64: sign-extended to 64 bits.
    fn int(self, number: u32, value: i64) -> Pb {
        self.varint(number, value as u64)
    }

    fn bytes(self, number: u32, bytes: impl AsRef<[u8]>) -> Pb {
        let bytes = bytes.as_ref();
        let mut pb = self.key(number, 2);
        put_varint(&mut pb.0, bytes.len() as u64);
        pb.0.extend_from_slice(bytes);
        pb
    }

    fn str(self, number: u32, value: &str) -> Pb {
        self.bytes(number, value)
    }

    fn msg(self, number: u32, message: Pb) -> Pb {
        self.bytes(number, message.0)
    }

    /// A map entry: key 1, value 2.
    fn entry(self, number: u32, key: &str, value: impl AsRef<[u8]>) -> Pb {
        self.msg(number, Pb::new().str(1, key).bytes(2, value))
    }

    fn time(self, number: u32, seconds: i64, nanos: i32) -> Pb {
        self.msg(number, Pb::new().int(1, seconds).int(2, i64::from(nanos)))
    }

    fn fixed64(self, number: u32) -> Pb {
        let mut pb = self.key(number, 1);
        pb.0.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        pb
    }

    fn fixed32(self, number: u32) -> Pb {
        let mut pb = self.key(number, 5);
        pb.0.extend_from_slice(&[1, 2, 3, 4]);
        pb
    }

    fn raw(mut self, bytes: &[u8]) -> Pb {
        self.0.extend_from_slice(bytes);
        self
    }
}

/// A whole body: the prefix and a `runtime.Unknown` around the object, as client-go writes it.
fn envelope(api_version: &str, kind: &str, object: Pb) -> Vec<u8> {
    let unknown = Pb::new()
        .msg(1, Pb::new().str(1, api_version).str(2, kind))
        .msg(2, object)
        .str(3, "")
        .str(4, "");
    let mut body = b"k8s\0".to_vec();
    body.extend_from_slice(&unknown.0);
    body
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn error(bytes: &[u8]) -> ProtobufError {
    decode(bytes).expect_err("decoding should fail")
}

/// ObjectMeta as client-go writes a new object's: every non-pointer field, empty.
fn new_metadata(name: &str) -> Pb {
    Pb::new()
        .str(1, name)
        .str(2, "")
        .str(3, "")
        .str(4, "")
        .str(5, "")
        .str(6, "")
        .varint(7, 0)
        .bytes(8, [])
}

// Bodies captured from kubectl 1.32.

#[test]
fn kubectl_create_configmap() {
    // kubectl create configmap c --from-literal=a=b --from-literal=empty=
    let body = hex(
        "6b3873000a0f0a0276311209436f6e6669674d617012260a110a016312001a0022002a0032003800420012060a016112016212090a05656d70747912001a002200",
    );
    assert_eq!(
        decode(&body).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c"},
            "data": {"a": "b", "empty": ""},
        })
    );
}

#[test]
fn kubectl_create_configmap_from_binary_file() {
    // kubectl create configmap cb --from-file=binfile, the file holding "bin\xff\x00"
    let body = hex(
        "6b3873000a0f0a0276311209436f6e6669674d617012260a120a02636212001a0022002a003200380042001a100a0762696e66696c65120562696eff001a002200",
    );
    assert_eq!(
        decode(&body).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cb"},
            "binaryData": {"binfile": "Ymlu/wA="},
        })
    );
}

#[test]
fn kubectl_create_namespace() {
    // kubectl create namespace foo
    let body = hex(
        "6b3873000a0f0a02763112094e616d657370616365121b0a130a03666f6f12001a0022002a0032003800420012001a020a001a002200",
    );
    assert_eq!(
        decode(&body).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "foo"},
            "spec": {},
            "status": {},
        })
    );
}

#[test]
fn kubectl_create_secret_generic() {
    // kubectl create secret generic s --from-literal=k=v
    let body = hex(
        "6b3873000a0c0a0276311206536563726574121d0a110a017312001a0022002a0032003800420012060a016b1201761a001a002200",
    );
    assert_eq!(
        decode(&body).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "data": {"k": "dg=="},
        })
    );
}

// Every kind, every field.

fn full_metadata() -> Pb {
    Pb::new()
        .str(1, "c")
        .str(2, "c-")
        .str(3, "default")
        .str(4, "/api/v1/namespaces/default/configmaps/c")
        .str(5, "6f1b0c2a-8d5e-4a51-9a51-0d7c9e1f2a3b")
        .str(6, "42")
        .varint(7, 3)
        .time(8, 1_700_000_000, 999_999_999)
        .time(9, 1_700_000_060, 0)
        .int(10, 30)
        .entry(11, "app", "web")
        .entry(11, "tier", "")
        .entry(12, "note", "hello")
        .msg(
            13,
            Pb::new()
                .str(1, "Deployment")
                .str(3, "web")
                .str(4, "uid-1")
                .str(5, "apps/v1")
                .varint(6, 1)
                .varint(7, 0),
        )
        .msg(13, Pb::new().str(1, "Thing"))
        .str(14, "example.com/one")
        .str(14, "example.com/two")
        .msg(
            17,
            Pb::new()
                .str(1, "kubectl")
                .str(2, "Update")
                .str(3, "v1")
                .time(4, 1_700_000_000, 0)
                .str(6, "FieldsV1")
                .msg(7, Pb::new().str(1, r#"{"f:data":{"f:a":{}}}"#))
                .str(8, ""),
        )
}

fn full_metadata_json() -> Value {
    json!({
        "name": "c",
        "generateName": "c-",
        "namespace": "default",
        "selfLink": "/api/v1/namespaces/default/configmaps/c",
        "uid": "6f1b0c2a-8d5e-4a51-9a51-0d7c9e1f2a3b",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2023-11-14T22:13:20Z",
        "deletionTimestamp": "2023-11-14T22:14:20Z",
        "deletionGracePeriodSeconds": 30,
        "labels": {"app": "web", "tier": ""},
        "annotations": {"note": "hello"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "uid": "uid-1",
                "controller": true,
                "blockOwnerDeletion": false,
            },
            {"apiVersion": "", "kind": "Thing", "name": "", "uid": ""},
        ],
        "finalizers": ["example.com/one", "example.com/two"],
        "managedFields": [{
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2023-11-14T22:13:20Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}},
        }],
    })
}

#[test]
fn config_map_with_every_field() {
    let object = Pb::new()
        .msg(1, full_metadata())
        .entry(2, "a", "b")
        .entry(2, "empty", "")
        .entry(3, "bin", [0, 1, 2, 255])
        .varint(4, 0);
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": full_metadata_json(),
            "data": {"a": "b", "empty": ""},
            "binaryData": {"bin": "AAEC/w=="},
            "immutable": false,
        })
    );
}

#[test]
fn config_map_without_fields_has_metadata_only() {
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", Pb::new())).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    );
}

#[test]
fn secret_with_every_field() {
    let object = Pb::new()
        .msg(1, new_metadata("s").str(3, "default"))
        .entry(2, "password", "hunter2")
        .entry(2, "empty", "")
        .str(3, "kubernetes.io/basic-auth")
        .entry(4, "username", "admin")
        .varint(5, 1);
    assert_eq!(
        decode(&envelope("v1", "Secret", object)).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"},
            "data": {"password": "aHVudGVyMg==", "empty": ""},
            "type": "kubernetes.io/basic-auth",
            "stringData": {"username": "admin"},
            "immutable": true,
        })
    );
}

#[test]
fn namespace_with_spec_and_status() {
    let object = Pb::new()
        .msg(1, new_metadata("foo"))
        .msg(2, Pb::new().str(1, "kubernetes"))
        .msg(
            3,
            Pb::new().str(1, "Terminating").msg(
                2,
                Pb::new()
                    .str(1, "NamespaceDeletionContentFailure")
                    .str(2, "False")
                    .time(4, 1_700_000_000, 0)
                    .str(5, "ContentDeleted")
                    .str(6, "All content successfully deleted"),
            ),
        );
    assert_eq!(
        decode(&envelope("v1", "Namespace", object)).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "foo"},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {
                "phase": "Terminating",
                "conditions": [{
                    "type": "NamespaceDeletionContentFailure",
                    "status": "False",
                    "lastTransitionTime": "2023-11-14T22:13:20Z",
                    "reason": "ContentDeleted",
                    "message": "All content successfully deleted",
                }],
            },
        })
    );
}

#[test]
fn core_event_with_every_field() {
    let reference = |name: &str| {
        Pb::new()
            .str(1, "Pod")
            .str(2, "default")
            .str(3, name)
            .str(4, "uid-2")
            .str(5, "v1")
            .str(6, "7")
            .str(7, "spec.containers{web}")
    };
    let object = Pb::new()
        .msg(1, new_metadata("web.1").str(3, "default"))
        .msg(2, reference("web"))
        .str(3, "Started")
        .str(4, "Started container web")
        .msg(5, Pb::new().str(1, "kubelet").str(2, "node-1"))
        .time(6, 1_700_000_000, 0)
        .time(7, 1_700_000_001, 0)
        .varint(8, 2)
        .str(9, "Normal")
        .time(10, 1_700_000_000, 123_456_789)
        .msg(11, Pb::new().varint(1, 5).time(2, 1_700_000_002, 1_000))
        .str(12, "Start")
        .msg(13, reference("other"))
        .str(14, "kubelet")
        .str(15, "node-1");
    let reference_json = |name: &str| {
        json!({
            "kind": "Pod",
            "namespace": "default",
            "name": name,
            "uid": "uid-2",
            "apiVersion": "v1",
            "resourceVersion": "7",
            "fieldPath": "spec.containers{web}",
        })
    };
    assert_eq!(
        decode(&envelope("v1", "Event", object)).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": reference_json("web"),
            "reason": "Started",
            "message": "Started container web",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2023-11-14T22:13:20Z",
            "lastTimestamp": "2023-11-14T22:13:21Z",
            "count": 2,
            "type": "Normal",
            "eventTime": "2023-11-14T22:13:20.123456Z",
            "series": {"count": 5, "lastObservedTime": "2023-11-14T22:13:22.000001Z"},
            "action": "Start",
            "related": reference_json("other"),
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1",
        })
    );
}

#[test]
fn core_event_zero_values_are_written_as_go_writes_them() {
    // Go writes every non-pointer field; zero times are empty messages.
    let object = Pb::new()
        .msg(1, new_metadata("e"))
        .msg(2, Pb::new())
        .str(3, "")
        .str(4, "")
        .msg(5, Pb::new().str(1, "").str(2, ""))
        .bytes(6, [])
        .bytes(7, [])
        .varint(8, 0)
        .str(9, "")
        .bytes(10, [])
        .str(12, "")
        .str(14, "")
        .str(15, "");
    let expected = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "involvedObject": {},
        "source": {},
        "firstTimestamp": null,
        "lastTimestamp": null,
        "eventTime": null,
        "reportingComponent": "",
        "reportingInstance": "",
    });
    assert_eq!(decode(&envelope("v1", "Event", object)).unwrap(), expected);
    // Absent fields read as zero values too.
    let object = Pb::new().msg(1, Pb::new().str(1, "e"));
    assert_eq!(decode(&envelope("v1", "Event", object)).unwrap(), expected);
}

#[test]
fn events_k8s_io_event() {
    let object = Pb::new()
        .msg(1, new_metadata("e").str(3, "default"))
        .time(2, 1_700_000_000, 5_000)
        .msg(3, Pb::new().varint(1, 0).bytes(2, []))
        .str(4, "example.com/controller")
        .str(5, "controller-1")
        .str(6, "Reconcile")
        .str(7, "Synced")
        .msg(8, Pb::new().str(1, "Widget").str(3, "w"))
        .msg(9, Pb::new().str(1, "Gadget"))
        .str(10, "synced the widget")
        .str(11, "Normal")
        .msg(12, Pb::new())
        .bytes(13, [])
        .time(14, 1_700_000_000, 0)
        .int(15, 4);
    assert_eq!(
        decode(&envelope("events.k8s.io/v1", "Event", object)).unwrap(),
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2023-11-14T22:13:20.000005Z",
            "series": {"count": 0, "lastObservedTime": null},
            "reportingController": "example.com/controller",
            "reportingInstance": "controller-1",
            "action": "Reconcile",
            "reason": "Synced",
            "regarding": {"kind": "Widget", "name": "w"},
            "related": {"kind": "Gadget"},
            "note": "synced the widget",
            "type": "Normal",
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": "2023-11-14T22:13:20Z",
            "deprecatedCount": 4,
        })
    );
}

#[test]
fn lease_with_every_field() {
    let object = Pb::new()
        .msg(1, new_metadata("leader").str(3, "kube-system"))
        .msg(
            2,
            Pb::new()
                .str(1, "node-1_5a3c")
                .int(2, 15)
                .time(3, 1_700_000_000, 123_456_999)
                .time(4, 1_700_000_010, 0)
                .int(5, 3)
                .str(6, "OldestEmulationVersion")
                .str(7, "node-2"),
        );
    assert_eq!(
        decode(&envelope("coordination.k8s.io/v1", "Lease", object)).unwrap(),
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "node-1_5a3c",
                "leaseDurationSeconds": 15,
                "acquireTime": "2023-11-14T22:13:20.123456Z",
                "renewTime": "2023-11-14T22:13:30.000000Z",
                "leaseTransitions": 3,
                "strategy": "OldestEmulationVersion",
                "preferredHolder": "node-2",
            },
        })
    );
}

#[test]
fn lease_pointer_fields_are_written_when_set_even_if_zero() {
    let object = Pb::new()
        .msg(1, new_metadata("l"))
        .msg(2, Pb::new().str(1, "").int(2, 0).int(5, 0));
    assert_eq!(
        decode(&envelope("coordination.k8s.io/v1", "Lease", object)).unwrap(),
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 0, "leaseTransitions": 0},
        })
    );
    let object = Pb::new().msg(1, new_metadata("l"));
    assert_eq!(
        decode(&envelope("coordination.k8s.io/v1", "Lease", object)).unwrap(),
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l"},
            "spec": {},
        })
    );
}

#[test]
fn delete_options_in_any_group_version() {
    let object = Pb::new()
        .int(1, 0)
        .msg(2, Pb::new().str(1, "uid-1").str(2, "9"))
        .varint(3, 0)
        .str(4, "Foreground")
        .str(5, "All")
        .varint(6, 1);
    let expected = |api_version: &str| {
        json!({
            "apiVersion": api_version,
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "uid-1", "resourceVersion": "9"},
            "orphanDependents": false,
            "propagationPolicy": "Foreground",
            "dryRun": ["All"],
            "ignoreStoreReadErrorWithClusterBreakingPotential": true,
        })
    };
    for api_version in ["v1", "meta.k8s.io/v1", "coordination.k8s.io/v1"] {
        let object = Pb(object.0.clone());
        assert_eq!(
            decode(&envelope(api_version, "DeleteOptions", object)).unwrap(),
            expected(api_version)
        );
    }
    assert_eq!(
        decode(&envelope("v1", "DeleteOptions", Pb::new())).unwrap(),
        json!({"apiVersion": "v1", "kind": "DeleteOptions"})
    );
}

// Wire-format details.

#[test]
fn unknown_fields_of_every_wire_type_are_skipped() {
    let unknown = || {
        Pb::new()
            .varint(90, 7)
            .fixed64(91)
            .bytes(92, b"junk")
            .fixed32(93)
            // A group holding a field and a nested group.
            .key(94, 3)
            .varint(1, 1)
            .key(95, 3)
            .bytes(2, b"x")
            .key(95, 4)
            .key(94, 4)
    };
    let metadata = unknown().str(1, "c").raw(&unknown().0);
    let object = unknown()
        .msg(1, metadata)
        .msg(2, unknown().str(1, "a").raw(&unknown().0).str(2, "b"))
        .raw(&unknown().0);
    let unknown_envelope = unknown()
        .msg(1, unknown().str(1, "v1").str(2, "ConfigMap"))
        .msg(2, object)
        .raw(&unknown().0);
    let mut body = b"k8s\0".to_vec();
    body.extend_from_slice(&unknown_envelope.0);
    assert_eq!(
        decode(&body).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c"},
            "data": {"a": "b"},
        })
    );
}

#[test]
fn repeated_occurrences_merge_as_in_go() {
    // Two metadata messages merge; a later scalar wins; lists append; a later map entry
    // replaces an earlier one with the same key.
    let object = Pb::new()
        .msg(
            1,
            Pb::new()
                .str(1, "first")
                .str(3, "ns")
                .entry(11, "a", "1")
                .str(14, "f1"),
        )
        .msg(
            1,
            Pb::new()
                .str(1, "second")
                .entry(11, "a", "2")
                .entry(11, "b", "3")
                .str(14, "f2"),
        )
        .entry(2, "k", "old")
        .entry(2, "k", "new")
        .varint(4, 1)
        .varint(4, 0);
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "second",
                "namespace": "ns",
                "labels": {"a": "2", "b": "3"},
                "finalizers": ["f1", "f2"],
            },
            "data": {"k": "new"},
            "immutable": false,
        })
    );
}

#[test]
fn map_entries_without_key_or_value_read_as_empty() {
    let object = Pb::new()
        .msg(2, Pb::new().str(2, "no key"))
        .msg(2, Pb::new().str(1, "no value"))
        .msg(3, Pb::new().str(1, "no bytes"));
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap(),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {},
            "data": {"": "no key", "no value": ""},
            "binaryData": {"no bytes": ""},
        })
    );
}

#[test]
fn negative_numbers_are_sign_extended_varints() {
    let object = Pb::new()
        .msg(1, Pb::new().str(1, "l").int(10, -1))
        .msg(2, Pb::new().int(2, -5).int(5, i64::from(i32::MIN)));
    assert_eq!(
        decode(&envelope("coordination.k8s.io/v1", "Lease", object)).unwrap(),
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "l", "deletionGracePeriodSeconds": -1},
            "spec": {"leaseDurationSeconds": -5, "leaseTransitions": i32::MIN},
        })
    );
}

#[test]
fn invalid_utf8_in_strings_is_replaced() {
    let object = Pb::new().msg(1, Pb::new().bytes(1, b"a\xffb"));
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap()["metadata"]["name"],
        "a\u{fffd}b"
    );
}

fn creation_timestamp(seconds: i64, nanos: i32) -> Value {
    let object = Pb::new().msg(1, Pb::new().time(8, seconds, nanos));
    decode(&envelope("v1", "ConfigMap", object)).unwrap()["metadata"]
        .get("creationTimestamp")
        .cloned()
        .unwrap_or(Value::Null)
}

fn lease_renew_time(time: Pb) -> Value {
    let object = Pb::new().msg(2, Pb::new().msg(4, time));
    decode(&envelope("coordination.k8s.io/v1", "Lease", object)).unwrap()["spec"]["renewTime"]
        .clone()
}

#[test]
fn times() {
    // Time keeps whole seconds.
    assert_eq!(creation_timestamp(1_700_000_000, 0), "2023-11-14T22:13:20Z");
    assert_eq!(
        creation_timestamp(1_700_000_000, 999_999_999),
        "2023-11-14T22:13:20Z"
    );
    // An explicit zero is the epoch, not Go's zero time.
    assert_eq!(creation_timestamp(0, 0), "1970-01-01T00:00:00Z");
    assert_eq!(creation_timestamp(-1, 0), "1969-12-31T23:59:59Z");
    assert_eq!(
        creation_timestamp(253_402_300_799, 0),
        "9999-12-31T23:59:59Z"
    );
    // Go's zero time, however written, leaves creationTimestamp out.
    assert_eq!(creation_timestamp(-62_135_596_800, 0), Value::Null);
    let object = Pb::new().msg(1, Pb::new().str(1, "c").bytes(8, []));
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap()["metadata"],
        json!({"name": "c"})
    );
    // MicroTime truncates to microseconds.
    assert_eq!(
        lease_renew_time(Pb::new().int(1, 1_700_000_000).int(2, 999_999_999)),
        "2023-11-14T22:13:20.999999Z"
    );
    assert_eq!(
        lease_renew_time(Pb::new().int(1, 1_700_000_000)),
        "2023-11-14T22:13:20.000000Z"
    );
    assert_eq!(
        lease_renew_time(Pb::new().int(2, 1_500_000)),
        "1970-01-01T00:00:00.001500Z"
    );
    // Nanoseconds out of range carry into the seconds, as time.Unix does.
    assert_eq!(
        lease_renew_time(Pb::new().int(1, 10).int(2, -1_000)),
        "1970-01-01T00:00:09.999999Z"
    );
    // A pointer time that is set but empty is Go's zero time: null.
    assert_eq!(lease_renew_time(Pb::new()), Value::Null);
    // The last occurrence of a time wins.
    let object = Pb::new().msg(1, Pb::new().time(8, 1, 0).time(8, 2, 0));
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap()["metadata"]["creationTimestamp"],
        "1970-01-01T00:00:02Z"
    );
}

#[test]
fn times_out_of_range_are_errors() {
    for seconds in [253_402_300_800, -62_167_219_201, i64::MAX, i64::MIN] {
        let object = Pb::new().msg(1, Pb::new().time(8, seconds, 0));
        assert_eq!(
            error(&envelope("v1", "ConfigMap", object)),
            ProtobufError::TimeOutOfRange {
                message: "ObjectMeta",
                field: "creationTimestamp",
                seconds,
            }
        );
    }
}

#[test]
fn managed_fields_without_fields_v1_raw() {
    let object = Pb::new().msg(
        1,
        Pb::new()
            .msg(17, Pb::new().str(1, "m").msg(7, Pb::new()))
            .msg(17, Pb::new().str(1, "n")),
    );
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap()["metadata"],
        json!({"managedFields": [{"manager": "m", "fieldsV1": null}, {"manager": "n"}]})
    );
    let object = Pb::new().msg(
        1,
        Pb::new().msg(17, Pb::new().msg(7, Pb::new().str(1, "{not json"))),
    );
    assert!(matches!(
        error(&envelope("v1", "ConfigMap", object)),
        ProtobufError::InvalidFieldsV1(_)
    ));
}

// The envelope.

#[test]
fn unsupported_kinds() {
    for (api_version, kind) in [
        ("apps/v1", "Deployment"),
        ("v1", "Pod"),
        ("example.com/v1", "Widget"),
        ("", "ConfigMap"),
        ("v2", "Secret"),
    ] {
        assert_eq!(
            error(&envelope(api_version, kind, Pb::new())),
            ProtobufError::UnsupportedKind {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            }
        );
    }
    assert_eq!(
        error(&envelope("apps/v1", "Deployment", Pb::new())).to_string(),
        "protobuf is not supported for kind \"Deployment\" of apiVersion \"apps/v1\"; send it as application/json"
    );
}

#[test]
fn envelope_errors() {
    assert_eq!(error(b""), ProtobufError::MissingPrefix);
    assert_eq!(error(b"k8s"), ProtobufError::MissingPrefix);
    assert_eq!(
        error(b"{\"kind\":\"ConfigMap\"}"),
        ProtobufError::MissingPrefix
    );
    assert_eq!(error(b"k8s\0"), ProtobufError::MissingKind);
    assert_eq!(
        error(&envelope("v1", "", Pb::new())),
        ProtobufError::MissingKind
    );

    let with = |extra: Pb| {
        let mut body = envelope("v1", "ConfigMap", Pb::new());
        body.extend_from_slice(&extra.0);
        body
    };
    assert_eq!(
        error(&with(Pb::new().str(3, "gzip"))),
        ProtobufError::UnsupportedContentEncoding("gzip".to_string())
    );
    assert_eq!(
        error(&with(Pb::new().str(4, "application/json"))),
        ProtobufError::UnsupportedContentType("application/json".to_string())
    );
    assert!(
        decode(&with(
            Pb::new().str(4, "application/vnd.kubernetes.protobuf")
        ))
        .is_ok()
    );
}

// Malformed input.

#[test]
fn malformed_wire_data() {
    let body = |unknown: Pb| {
        let mut body = b"k8s\0".to_vec();
        body.extend_from_slice(&unknown.0);
        body
    };
    let cases: Vec<(Pb, ProtobufError)> = vec![
        // A key cut off in the middle of its varint.
        (
            Pb::new().raw(&[0x80]),
            ProtobufError::Truncated { message: "Unknown" },
        ),
        // A varint value cut off.
        (
            Pb::new().key(9, 0).raw(&[0xff, 0xff]),
            ProtobufError::Truncated { message: "Unknown" },
        ),
        // Eleven bytes of varint.
        (
            Pb::new().key(9, 0).raw(&[0xff; 10]).raw(&[0x01]),
            ProtobufError::VarintTooLong { message: "Unknown" },
        ),
        // A length past the end.
        (
            Pb::new().key(2, 2).raw(&[0x05, 1, 2]),
            ProtobufError::Truncated { message: "Unknown" },
        ),
        // The largest length there is.
        (
            Pb::new()
                .key(2, 2)
                .raw(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            ProtobufError::Truncated { message: "Unknown" },
        ),
        // Fixed-width values cut off.
        (
            Pb::new().key(9, 1).raw(&[1, 2, 3]),
            ProtobufError::Truncated { message: "Unknown" },
        ),
        (
            Pb::new().key(9, 5).raw(&[1, 2, 3]),
            ProtobufError::Truncated { message: "Unknown" },
        ),
        // Wire types 6 and 7 do not exist.
        (
            Pb::new().key(9, 6),
            ProtobufError::InvalidWireType {
                message: "Unknown",
                wire_type: 6,
            },
        ),
        (
            Pb::new().key(9, 7),
            ProtobufError::InvalidWireType {
                message: "Unknown",
                wire_type: 7,
            },
        ),
        // Field number zero, and one past the largest.
        (
            Pb::new().raw(&[0x02, 0x00]),
            ProtobufError::InvalidFieldNumber {
                message: "Unknown",
                number: 0,
            },
        ),
        (
            Pb::new().varint(0, 0),
            ProtobufError::InvalidFieldNumber {
                message: "Unknown",
                number: 0,
            },
        ),
        (
            Pb::new().raw(&[0x80, 0x80, 0x80, 0x80, 0x10, 0x00]),
            ProtobufError::InvalidFieldNumber {
                message: "Unknown",
                number: 1 << 29,
            },
        ),
        // Groups: an end without a start, a start without an end, mismatched ends.
        (
            Pb::new().key(9, 4),
            ProtobufError::UnmatchedEndGroup { message: "Unknown" },
        ),
        (
            Pb::new().key(9, 3).varint(1, 1),
            ProtobufError::Truncated { message: "Unknown" },
        ),
        (
            Pb::new().key(9, 3).key(8, 4),
            ProtobufError::UnmatchedEndGroup { message: "Unknown" },
        ),
        (
            Pb::new().key(9, 3).key(9, 6),
            ProtobufError::InvalidWireType {
                message: "Unknown",
                wire_type: 6,
            },
        ),
        // A known field with the wrong wire type.
        (
            Pb::new().varint(2, 1),
            ProtobufError::WrongWireType {
                message: "Unknown",
                field: "raw",
                number: 2,
                wire_type: 0,
            },
        ),
    ];
    for (unknown, expected) in cases {
        assert_eq!(error(&body(unknown)), expected);
    }
}

#[test]
fn malformed_nested_messages() {
    // The object's own message is checked too, down to map entries and times.
    let cases: Vec<(&str, &str, Pb, ProtobufError)> = vec![
        (
            "v1",
            "ConfigMap",
            Pb::new().msg(1, Pb::new().varint(1, 5)),
            ProtobufError::WrongWireType {
                message: "ObjectMeta",
                field: "name",
                number: 1,
                wire_type: 0,
            },
        ),
        (
            "v1",
            "ConfigMap",
            Pb::new().str(4, "yes"),
            ProtobufError::WrongWireType {
                message: "ConfigMap",
                field: "immutable",
                number: 4,
                wire_type: 2,
            },
        ),
        (
            "v1",
            "ConfigMap",
            Pb::new().msg(2, Pb::new().varint(1, 1)),
            ProtobufError::WrongWireType {
                message: "map entry",
                field: "key",
                number: 1,
                wire_type: 0,
            },
        ),
        (
            "v1",
            "ConfigMap",
            Pb::new().msg(2, Pb::new().raw(&[0x0a, 0x09, b'a'])),
            ProtobufError::Truncated {
                message: "map entry",
            },
        ),
        (
            "v1",
            "ConfigMap",
            Pb::new().msg(1, Pb::new().msg(8, Pb::new().str(1, "now"))),
            ProtobufError::WrongWireType {
                message: "Time",
                field: "seconds",
                number: 1,
                wire_type: 2,
            },
        ),
        (
            "coordination.k8s.io/v1",
            "Lease",
            Pb::new().msg(2, Pb::new().msg(3, Pb::new().raw(&[0x08]))),
            ProtobufError::Truncated {
                message: "MicroTime",
            },
        ),
        (
            "v1",
            "Namespace",
            Pb::new().msg(2, Pb::new().varint(1, 1)),
            ProtobufError::WrongWireType {
                message: "NamespaceSpec",
                field: "finalizers",
                number: 1,
                wire_type: 0,
            },
        ),
        (
            "v1",
            "Event",
            Pb::new().msg(2, Pb::new().key(1, 4)),
            ProtobufError::UnmatchedEndGroup {
                message: "ObjectReference",
            },
        ),
        (
            "v1",
            "ConfigMap",
            Pb::new().msg(
                1,
                Pb::new().msg(17, Pb::new().msg(7, Pb::new().varint(1, 1))),
            ),
            ProtobufError::WrongWireType {
                message: "FieldsV1",
                field: "Raw",
                number: 1,
                wire_type: 0,
            },
        ),
    ];
    for (api_version, kind, object, expected) in cases {
        assert_eq!(error(&envelope(api_version, kind, object)), expected);
    }
}

#[test]
fn deeply_nested_groups() {
    let nested = |depth: usize| {
        let mut pb = Pb::new();
        for _ in 0..depth {
            pb = pb.key(9, 3);
        }
        for _ in 0..depth {
            pb = pb.key(9, 4);
        }
        let mut body = envelope("v1", "ConfigMap", Pb::new());
        body.extend_from_slice(&pb.0);
        body
    };
    assert!(decode(&nested(100)).is_ok());
    assert_eq!(
        error(&nested(101)),
        ProtobufError::TooDeep { message: "Unknown" }
    );
    // Far deeper nesting fails the same way, without recursion.
    assert_eq!(
        error(&nested(1_000_000)),
        ProtobufError::TooDeep { message: "Unknown" }
    );
}

#[test]
fn deeply_nested_length_delimited_fields_are_not_followed() {
    // Unknown length-delimited fields are skipped whole, however they nest.
    let mut pb = Pb::new().str(1, "deep");
    for _ in 0..1_000 {
        pb = Pb::new().msg(99, pb);
    }
    let object = Pb::new().msg(1, pb);
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", object)).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    );
}

#[test]
fn every_truncation_and_corruption_is_handled_without_panicking() {
    let body = envelope(
        "v1",
        "Event",
        Pb::new()
            .msg(1, full_metadata())
            .msg(2, Pb::new().str(1, "Pod").str(3, "web"))
            .time(6, 1_700_000_000, 0)
            .time(10, 1_700_000_000, 5)
            .msg(11, Pb::new().varint(1, 2).time(2, 1, 1))
            .str(14, "kubelet"),
    );
    assert!(decode(&body).is_ok());
    for len in 0..body.len() {
        let _ = decode(&body[..len]);
    }
    // Flip bytes with a fixed pseudo-random sequence.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..20_000 {
        let mut corrupt = body.clone();
        for _ in 0..3 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let index = 4 + (state as usize) % (corrupt.len() - 4);
            corrupt[index] = (state >> 32) as u8;
        }
        let _ = decode(&corrupt);
    }
}

#[test]
fn error_messages_are_lowercase() {
    let errors = [
        ProtobufError::MissingPrefix,
        ProtobufError::Truncated { message: "Unknown" },
        ProtobufError::VarintTooLong { message: "Unknown" },
        ProtobufError::InvalidWireType {
            message: "Unknown",
            wire_type: 6,
        },
        ProtobufError::InvalidFieldNumber {
            message: "Unknown",
            number: 0,
        },
        ProtobufError::WrongWireType {
            message: "ObjectMeta",
            field: "name",
            number: 1,
            wire_type: 0,
        },
        ProtobufError::UnmatchedEndGroup { message: "Unknown" },
        ProtobufError::TooDeep { message: "Unknown" },
        ProtobufError::MissingKind,
        ProtobufError::UnsupportedContentEncoding("gzip".to_string()),
        ProtobufError::UnsupportedContentType("text/plain".to_string()),
        ProtobufError::UnsupportedKind {
            api_version: "apps/v1".to_string(),
            kind: "Deployment".to_string(),
        },
        ProtobufError::TimeOutOfRange {
            message: "ObjectMeta",
            field: "creationTimestamp",
            seconds: i64::MAX,
        },
        ProtobufError::InvalidFieldsV1("eof".to_string()),
    ];
    for error in errors {
        let message = error.to_string();
        assert!(
            message.starts_with(|c: char| c.is_ascii_lowercase()),
            "{message}"
        );
    }
    assert_eq!(
        ProtobufError::WrongWireType {
            message: "ObjectMeta",
            field: "name",
            number: 1,
            wire_type: 0,
        }
        .to_string(),
        "wrong wire type 0 for field name (1) of ObjectMeta"
    );
}

#[test]
fn request_bodies_map_to_api_errors() {
    use super::MEDIA_TYPE;
    use crate::body::decode_object;
    assert_eq!(
        decode_object(MEDIA_TYPE, &envelope("v1", "ConfigMap", Pb::new())).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    );
    let unsupported =
        decode_object(MEDIA_TYPE, &envelope("apps/v1", "Deployment", Pb::new())).unwrap_err();
    assert_eq!(unsupported.code, http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(unsupported.reason, "UnsupportedMediaType");
    let malformed = decode_object(MEDIA_TYPE, b"k8s\0\x80").unwrap_err();
    assert_eq!(malformed.code, http::StatusCode::BAD_REQUEST);
    assert_eq!(
        malformed.message,
        "the request body is not valid kubernetes protobuf: unexpected end of data in Unknown"
    );
}
