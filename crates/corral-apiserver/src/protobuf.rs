//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded into
//! the JSON object the same Go object would marshal to.
//!
//! client-go's typed clientsets send built-in kinds as protobuf, and so do kubectl's typed
//! commands (`kubectl create configmap`, `create namespace`, `create secret ...`). Their
//! `Accept` headers list `application/json` as well, so only request bodies need this module;
//! responses stay JSON.
//!
//! A body is the four bytes `k8s\0` followed by a `runtime.Unknown` message: `typeMeta` (1:
//! `apiVersion` 1, `kind` 2), `raw` (2: the object's own message), `contentEncoding` (3) and
//! `contentType` (4). The object's message carries no type meta; `apiVersion` and `kind` come
//! from the envelope.
//!
//! The wire format is decoded here without a protobuf library. Each supported message is a
//! table of fields with the numbers of the upstream `generated.proto` files, the JSON name, the
//! type and what Go's `encoding/json` does with the field's zero value (`omitempty` leaves out
//! empty strings, numbers, maps and lists but never a struct, a pointer is written whenever it
//! was set). Unknown fields of every wire type are skipped, occurrences of a message field
//! merge, a later scalar replaces an earlier one, as in Go.
//!
//! Supported: `v1` ConfigMap, Secret, Namespace and Event, `events.k8s.io/v1` Event,
//! `coordination.k8s.io/v1` Lease, ServiceAccount and TokenRequest, the `rbac.authorization.k8s.io/v1` kinds, the
//! `authorization.k8s.io/v1` reviews, and DeleteOptions of any group version. Anything else is
//! [`ProtobufError::UnsupportedKind`], which the server answers with 415.

#[cfg(test)]
mod tests;

use base64::Engine as _;
use chrono::{DateTime, Datelike};
use serde_json::{Map, Value};

/// The media type of a Kubernetes protobuf body.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The magic number that starts every Kubernetes protobuf body.
const PREFIX: &[u8] = b"k8s\0";

/// How deep groups (wire types 3 and 4, which Kubernetes never sends) may nest in a skipped
/// field; the protobuf libraries' recursion limit.
const MAX_GROUP_DEPTH: usize = 100;

/// The largest field number protobuf allows.
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// `time.Time{}.Unix()`: Go's zero time, which `metav1.Time` marshals as JSON `null`.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Why a protobuf body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("the body does not start with the kubernetes protobuf prefix \"k8s\\x00\"")]
    MissingPrefix,
    #[error("unexpected end of data in {message}")]
    Truncated { message: &'static str },
    #[error("a varint in {message} is longer than 10 bytes")]
    VarintTooLong { message: &'static str },
    #[error("invalid wire type {wire_type} in {message}")]
    InvalidWireType {
        message: &'static str,
        wire_type: u8,
    },
    #[error("invalid field number {number} in {message}")]
    InvalidFieldNumber { message: &'static str, number: u64 },
    #[error("wrong wire type {wire_type} for field {field} ({number}) of {message}")]
    WrongWireType {
        message: &'static str,
        field: &'static str,
        number: u32,
        wire_type: u8,
    },
    #[error("unmatched end of group in {message}")]
    UnmatchedEndGroup { message: &'static str },
    #[error("groups nest more than {} levels deep in {message}", MAX_GROUP_DEPTH)]
    TooDeep { message: &'static str },
    #[error("the protobuf envelope does not name the object's kind")]
    MissingKind,
    #[error("unsupported content encoding {0:?} in the protobuf envelope")]
    UnsupportedContentEncoding(String),
    #[error("unsupported content type {0:?} in the protobuf envelope")]
    UnsupportedContentType(String),
    #[error(
        "protobuf is not supported for kind {kind:?} of apiVersion {api_version:?}; send it as application/json"
    )]
    UnsupportedKind { api_version: String, kind: String },
    #[error("field {field} of {message} is out of range: {seconds} seconds")]
    TimeOutOfRange {
        message: &'static str,
        field: &'static str,
        seconds: i64,
    },
    #[error("fieldsV1 of a managedFields entry is not valid json: {0}")]
    InvalidFieldsV1(String),
}

type Result<T, E = ProtobufError> = std::result::Result<T, E>;

/// Decodes a Kubernetes protobuf body into the JSON object of the same object, with
/// `apiVersion` and `kind`.
pub fn decode(bytes: &[u8]) -> Result<Value> {
    let body = bytes
        .strip_prefix(PREFIX)
        .ok_or(ProtobufError::MissingPrefix)?;
    let mut type_meta = Vec::new();
    let mut raw: &[u8] = &[];
    let mut content_encoding = String::new();
    let mut content_type = String::new();
    let mut reader = Reader::new(body, "Unknown");
    while let Some((number, wire)) = reader.next_field()? {
        let at = |field| At {
            message: "Unknown",
            field,
            number,
        };
        match number {
            1 => type_meta.push(wire.bytes(at("typeMeta"))?),
            2 => raw = wire.bytes(at("raw"))?,
            3 => content_encoding = string(wire.bytes(at("contentEncoding"))?),
            4 => content_type = string(wire.bytes(at("contentType"))?),
            _ => {}
        }
    }
    if !content_encoding.is_empty() {
        return Err(ProtobufError::UnsupportedContentEncoding(content_encoding));
    }
    if !content_type.is_empty() && content_type != MEDIA_TYPE {
        return Err(ProtobufError::UnsupportedContentType(content_type));
    }
    let type_meta = decode_message(&TYPE_META, &type_meta)?;
    let field = |name| match type_meta.get(name) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if kind.is_empty() {
        return Err(ProtobufError::MissingKind);
    }
    let message = match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap") => &CONFIG_MAP,
        ("v1", "Secret") => &SECRET,
        ("v1", "Namespace") => &NAMESPACE,
        ("v1", "Event") => &CORE_EVENT,
        ("events.k8s.io/v1", "Event") => &EVENTS_EVENT,
        ("coordination.k8s.io/v1", "Lease") => &LEASE,
        ("v1", "ServiceAccount") => &SERVICE_ACCOUNT,
        ("authentication.k8s.io/v1", "TokenRequest") => &TOKEN_REQUEST,
        ("rbac.authorization.k8s.io/v1", "Role") => &ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => &CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => &ROLE_BINDING,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => &SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => {
            &SUBJECT_ACCESS_REVIEW
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => &SELF_SUBJECT_RULES_REVIEW,
        // Every group version registers metav1.DeleteOptions; typed clients send it with
        // their own.
        (_, "DeleteOptions") => &DELETE_OPTIONS,
        _ => return Err(ProtobufError::UnsupportedKind { api_version, kind }),
    };
    let mut object = decode_message(message, &[raw])?;
    if !api_version.is_empty() {
        object.insert("apiVersion".to_string(), Value::String(api_version));
    }
    object.insert("kind".to_string(), Value::String(kind));
    Ok(Value::Object(object))
}

// ---------------------------------------------------------------------------------------------
// Schemas.

/// The type of a field, on the wire and in JSON.
#[derive(Clone, Copy)]
enum Type {
    String,
    Bool,
    Int32,
    Int64,
    /// `metav1.Time`: `{seconds 1, nanos 2}`, in JSON RFC 3339 to the second.
    Time,
    /// `metav1.MicroTime`: the same message, in JSON RFC 3339 with six fractional digits.
    MicroTime,
    /// `map<string, string>`.
    StringMap,
    /// `map<string, bytes>`: base64 in JSON.
    BytesMap,
    /// `repeated string`.
    Strings,
    Message(&'static Message),
    /// `repeated` message.
    Messages(&'static Message),
    /// `metav1.FieldsV1`: `{Raw 1}`, the raw bytes being JSON.
    FieldsV1,
}

/// When Go's `encoding/json` leaves the field out, from its Go type and JSON tag.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Omit {
    /// A value with `omitempty`: left out when it is an empty string, zero, false or an empty
    /// map or list. A struct is never left out (a zero time is `null`).
    IfEmpty,
    /// A value without `omitempty`: always written.
    Never,
    /// A value with `omitzero`: left out when zero.
    IfZero,
    /// A pointer: written when the field was on the wire, left out otherwise.
    IfNil,
}

struct Field {
    number: u32,
    name: &'static str,
    ty: Type,
    omit: Omit,
}

struct Message {
    name: &'static str,
    fields: &'static [Field],
}

const fn field(number: u32, name: &'static str, ty: Type, omit: Omit) -> Field {
    Field {
        number,
        name,
        ty,
        omit,
    }
}

/// A string with `omitempty`, the commonest field.
const fn text(number: u32, name: &'static str) -> Field {
    field(number, name, Type::String, Omit::IfEmpty)
}

static TYPE_META: Message = Message {
    name: "TypeMeta",
    fields: &[text(1, "apiVersion"), text(2, "kind")],
};

static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
        text(1, "name"),
        text(2, "generateName"),
        text(3, "namespace"),
        text(4, "selfLink"),
        text(5, "uid"),
        text(6, "resourceVersion"),
        field(7, "generation", Type::Int64, Omit::IfEmpty),
        field(8, "creationTimestamp", Type::Time, Omit::IfZero),
        field(9, "deletionTimestamp", Type::Time, Omit::IfNil),
        field(10, "deletionGracePeriodSeconds", Type::Int64, Omit::IfNil),
        field(11, "labels", Type::StringMap, Omit::IfEmpty),
        field(12, "annotations", Type::StringMap, Omit::IfEmpty),
        field(
            13,
            "ownerReferences",
            Type::Messages(&OWNER_REFERENCE),
            Omit::IfEmpty,
        ),
        field(14, "finalizers", Type::Strings, Omit::IfEmpty),
        field(
            17,
            "managedFields",
            Type::Messages(&MANAGED_FIELDS_ENTRY),
            Omit::IfEmpty,
        ),
    ],
};

static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        field(1, "kind", Type::String, Omit::Never),
        field(3, "name", Type::String, Omit::Never),
        field(4, "uid", Type::String, Omit::Never),
        field(5, "apiVersion", Type::String, Omit::Never),
        field(6, "controller", Type::Bool, Omit::IfNil),
        field(7, "blockOwnerDeletion", Type::Bool, Omit::IfNil),
    ],
};

static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        text(1, "manager"),
        text(2, "operation"),
        text(3, "apiVersion"),
        field(4, "time", Type::Time, Omit::IfNil),
        text(6, "fieldsType"),
        field(7, "fieldsV1", Type::FieldsV1, Omit::IfNil),
        text(8, "subresource"),
    ],
};

/// `metadata` of most kinds: a struct with `omitempty`, so always written.
const fn metadata() -> Field {
    field(1, "metadata", Type::Message(&OBJECT_META), Omit::IfEmpty)
}

static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        metadata(),
        field(2, "data", Type::StringMap, Omit::IfEmpty),
        field(3, "binaryData", Type::BytesMap, Omit::IfEmpty),
        field(4, "immutable", Type::Bool, Omit::IfNil),
    ],
};

static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        metadata(),
        field(2, "data", Type::BytesMap, Omit::IfEmpty),
        text(3, "type"),
        field(4, "stringData", Type::StringMap, Omit::IfEmpty),
        field(5, "immutable", Type::Bool, Omit::IfNil),
    ],
};

static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        metadata(),
        field(2, "spec", Type::Message(&NAMESPACE_SPEC), Omit::IfEmpty),
        field(3, "status", Type::Message(&NAMESPACE_STATUS), Omit::IfEmpty),
    ],
};

static NAMESPACE_SPEC: Message = Message {
    name: "NamespaceSpec",
    fields: &[field(1, "finalizers", Type::Strings, Omit::IfEmpty)],
};

static NAMESPACE_STATUS: Message = Message {
    name: "NamespaceStatus",
    fields: &[
        text(1, "phase"),
        field(
            2,
            "conditions",
            Type::Messages(&NAMESPACE_CONDITION),
            Omit::IfEmpty,
        ),
    ],
};

static NAMESPACE_CONDITION: Message = Message {
    name: "NamespaceCondition",
    fields: &[
        field(1, "type", Type::String, Omit::Never),
        field(2, "status", Type::String, Omit::Never),
        field(4, "lastTransitionTime", Type::Time, Omit::IfEmpty),
        text(5, "reason"),
        text(6, "message"),
    ],
};

static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        text(1, "kind"),
        text(2, "namespace"),
        text(3, "name"),
        text(4, "uid"),
        text(5, "apiVersion"),
        text(6, "resourceVersion"),
        text(7, "fieldPath"),
    ],
};

static EVENT_SOURCE: Message = Message {
    name: "EventSource",
    fields: &[text(1, "component"), text(2, "host")],
};

/// `v1` Event, the core group's.
static CORE_EVENT: Message = Message {
    name: "Event",
    fields: &[
        field(1, "metadata", Type::Message(&OBJECT_META), Omit::Never),
        field(
            2,
            "involvedObject",
            Type::Message(&OBJECT_REFERENCE),
            Omit::Never,
        ),
        text(3, "reason"),
        text(4, "message"),
        field(5, "source", Type::Message(&EVENT_SOURCE), Omit::IfEmpty),
        field(6, "firstTimestamp", Type::Time, Omit::IfEmpty),
        field(7, "lastTimestamp", Type::Time, Omit::IfEmpty),
        field(8, "count", Type::Int32, Omit::IfEmpty),
        text(9, "type"),
        field(10, "eventTime", Type::MicroTime, Omit::IfEmpty),
        field(11, "series", Type::Message(&CORE_EVENT_SERIES), Omit::IfNil),
        text(12, "action"),
        field(13, "related", Type::Message(&OBJECT_REFERENCE), Omit::IfNil),
        field(14, "reportingComponent", Type::String, Omit::Never),
        field(15, "reportingInstance", Type::String, Omit::Never),
    ],
};

static CORE_EVENT_SERIES: Message = Message {
    name: "EventSeries",
    fields: &[
        field(1, "count", Type::Int32, Omit::IfEmpty),
        field(2, "lastObservedTime", Type::MicroTime, Omit::IfEmpty),
    ],
};

/// `events.k8s.io/v1` Event.
static EVENTS_EVENT: Message = Message {
    name: "Event",
    fields: &[
        field(1, "metadata", Type::Message(&OBJECT_META), Omit::Never),
        field(2, "eventTime", Type::MicroTime, Omit::Never),
        field(
            3,
            "series",
            Type::Message(&EVENTS_EVENT_SERIES),
            Omit::IfNil,
        ),
        text(4, "reportingController"),
        text(5, "reportingInstance"),
        text(6, "action"),
        text(7, "reason"),
        field(
            8,
            "regarding",
            Type::Message(&OBJECT_REFERENCE),
            Omit::IfEmpty,
        ),
        field(9, "related", Type::Message(&OBJECT_REFERENCE), Omit::IfNil),
        text(10, "note"),
        text(11, "type"),
        field(
            12,
            "deprecatedSource",
            Type::Message(&EVENT_SOURCE),
            Omit::IfEmpty,
        ),
        field(13, "deprecatedFirstTimestamp", Type::Time, Omit::IfEmpty),
        field(14, "deprecatedLastTimestamp", Type::Time, Omit::IfEmpty),
        field(15, "deprecatedCount", Type::Int32, Omit::IfEmpty),
    ],
};

static EVENTS_EVENT_SERIES: Message = Message {
    name: "EventSeries",
    fields: &[
        field(1, "count", Type::Int32, Omit::Never),
        field(2, "lastObservedTime", Type::MicroTime, Omit::Never),
    ],
};

static SERVICE_ACCOUNT: Message = Message {
    name: "ServiceAccount",
    fields: &[
        metadata(),
        field(
            2,
            "secrets",
            Type::Messages(&OBJECT_REFERENCE),
            Omit::IfEmpty,
        ),
        field(
            3,
            "imagePullSecrets",
            Type::Messages(&LOCAL_OBJECT_REFERENCE),
            Omit::IfEmpty,
        ),
        field(4, "automountServiceAccountToken", Type::Bool, Omit::IfNil),
    ],
};

static LOCAL_OBJECT_REFERENCE: Message = Message {
    name: "LocalObjectReference",
    fields: &[field(1, "name", Type::String, Omit::IfEmpty)],
};

static TOKEN_REQUEST: Message = Message {
    name: "TokenRequest",
    fields: &[
        metadata(),
        field(2, "spec", Type::Message(&TOKEN_REQUEST_SPEC), Omit::Never),
    ],
};

static TOKEN_REQUEST_SPEC: Message = Message {
    name: "TokenRequestSpec",
    fields: &[
        field(1, "audiences", Type::Strings, Omit::Never),
        field(
            3,
            "boundObjectRef",
            Type::Message(&BOUND_OBJECT_REFERENCE),
            Omit::IfNil,
        ),
        field(4, "expirationSeconds", Type::Int64, Omit::IfNil),
    ],
};

static BOUND_OBJECT_REFERENCE: Message = Message {
    name: "BoundObjectReference",
    fields: &[
        field(1, "kind", Type::String, Omit::IfEmpty),
        field(2, "apiVersion", Type::String, Omit::IfEmpty),
        field(3, "name", Type::String, Omit::IfEmpty),
        field(4, "uid", Type::String, Omit::IfEmpty),
    ],
};

static LEASE: Message = Message {
    name: "Lease",
    fields: &[
        metadata(),
        field(2, "spec", Type::Message(&LEASE_SPEC), Omit::IfEmpty),
    ],
};

static LEASE_SPEC: Message = Message {
    name: "LeaseSpec",
    fields: &[
        field(1, "holderIdentity", Type::String, Omit::IfNil),
        field(2, "leaseDurationSeconds", Type::Int32, Omit::IfNil),
        field(3, "acquireTime", Type::MicroTime, Omit::IfNil),
        field(4, "renewTime", Type::MicroTime, Omit::IfNil),
        field(5, "leaseTransitions", Type::Int32, Omit::IfNil),
        field(6, "strategy", Type::String, Omit::IfNil),
        field(7, "preferredHolder", Type::String, Omit::IfNil),
    ],
};

static POLICY_RULE: Message = Message {
    name: "PolicyRule",
    fields: &[
        field(1, "verbs", Type::Strings, Omit::Never),
        field(2, "apiGroups", Type::Strings, Omit::IfEmpty),
        field(3, "resources", Type::Strings, Omit::IfEmpty),
        field(4, "resourceNames", Type::Strings, Omit::IfEmpty),
        field(5, "nonResourceURLs", Type::Strings, Omit::IfEmpty),
    ],
};

static ROLE: Message = Message {
    name: "Role",
    fields: &[
        metadata(),
        field(2, "rules", Type::Messages(&POLICY_RULE), Omit::Never),
    ],
};

static CLUSTER_ROLE: Message = Message {
    name: "ClusterRole",
    fields: &[
        metadata(),
        field(2, "rules", Type::Messages(&POLICY_RULE), Omit::Never),
        field(
            3,
            "aggregationRule",
            Type::Message(&AGGREGATION_RULE),
            Omit::IfNil,
        ),
    ],
};

static AGGREGATION_RULE: Message = Message {
    name: "AggregationRule",
    fields: &[field(
        1,
        "clusterRoleSelectors",
        Type::Messages(&LABEL_SELECTOR),
        Omit::IfEmpty,
    )],
};

static LABEL_SELECTOR: Message = Message {
    name: "LabelSelector",
    fields: &[
        field(1, "matchLabels", Type::StringMap, Omit::IfEmpty),
        field(
            2,
            "matchExpressions",
            Type::Messages(&LABEL_SELECTOR_REQUIREMENT),
            Omit::IfEmpty,
        ),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "LabelSelectorRequirement",
    fields: &[
        field(1, "key", Type::String, Omit::Never),
        field(2, "operator", Type::String, Omit::Never),
        field(3, "values", Type::Strings, Omit::IfEmpty),
    ],
};

/// RoleBinding and ClusterRoleBinding.
static ROLE_BINDING: Message = Message {
    name: "RoleBinding",
    fields: &[
        metadata(),
        field(2, "subjects", Type::Messages(&SUBJECT), Omit::IfEmpty),
        field(3, "roleRef", Type::Message(&ROLE_REF), Omit::Never),
    ],
};

static SUBJECT: Message = Message {
    name: "Subject",
    fields: &[
        field(1, "kind", Type::String, Omit::Never),
        text(2, "apiGroup"),
        field(3, "name", Type::String, Omit::Never),
        text(4, "namespace"),
    ],
};

static ROLE_REF: Message = Message {
    name: "RoleRef",
    fields: &[
        field(1, "apiGroup", Type::String, Omit::Never),
        field(2, "kind", Type::String, Omit::Never),
        field(3, "name", Type::String, Omit::Never),
    ],
};

static SELF_SUBJECT_ACCESS_REVIEW: Message = Message {
    name: "SelfSubjectAccessReview",
    fields: &[
        metadata(),
        field(
            2,
            "spec",
            Type::Message(&SELF_SUBJECT_ACCESS_REVIEW_SPEC),
            Omit::Never,
        ),
    ],
};

static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SelfSubjectAccessReviewSpec",
    fields: &[
        field(
            1,
            "resourceAttributes",
            Type::Message(&RESOURCE_ATTRIBUTES),
            Omit::IfNil,
        ),
        field(
            2,
            "nonResourceAttributes",
            Type::Message(&NON_RESOURCE_ATTRIBUTES),
            Omit::IfNil,
        ),
    ],
};

/// SubjectAccessReview and LocalSubjectAccessReview.
static SUBJECT_ACCESS_REVIEW: Message = Message {
    name: "SubjectAccessReview",
    fields: &[
        metadata(),
        field(
            2,
            "spec",
            Type::Message(&SUBJECT_ACCESS_REVIEW_SPEC),
            Omit::Never,
        ),
    ],
};

static SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SubjectAccessReviewSpec",
    fields: &[
        field(
            1,
            "resourceAttributes",
            Type::Message(&RESOURCE_ATTRIBUTES),
            Omit::IfNil,
        ),
        field(
            2,
            "nonResourceAttributes",
            Type::Message(&NON_RESOURCE_ATTRIBUTES),
            Omit::IfNil,
        ),
        text(3, "user"),
        field(4, "groups", Type::Strings, Omit::IfEmpty),
        text(6, "uid"),
    ],
};

static RESOURCE_ATTRIBUTES: Message = Message {
    name: "ResourceAttributes",
    fields: &[
        text(1, "namespace"),
        text(2, "verb"),
        text(3, "group"),
        text(4, "version"),
        text(5, "resource"),
        text(6, "subresource"),
        text(7, "name"),
    ],
};

static NON_RESOURCE_ATTRIBUTES: Message = Message {
    name: "NonResourceAttributes",
    fields: &[text(1, "path"), text(2, "verb")],
};

static SELF_SUBJECT_RULES_REVIEW: Message = Message {
    name: "SelfSubjectRulesReview",
    fields: &[
        metadata(),
        field(
            2,
            "spec",
            Type::Message(&SELF_SUBJECT_RULES_REVIEW_SPEC),
            Omit::Never,
        ),
    ],
};

static SELF_SUBJECT_RULES_REVIEW_SPEC: Message = Message {
    name: "SelfSubjectRulesReviewSpec",
    fields: &[text(1, "namespace")],
};

static DELETE_OPTIONS: Message = Message {
    name: "DeleteOptions",
    fields: &[
        field(1, "gracePeriodSeconds", Type::Int64, Omit::IfNil),
        field(
            2,
            "preconditions",
            Type::Message(&PRECONDITIONS),
            Omit::IfNil,
        ),
        field(3, "orphanDependents", Type::Bool, Omit::IfNil),
        field(4, "propagationPolicy", Type::String, Omit::IfNil),
        field(5, "dryRun", Type::Strings, Omit::IfEmpty),
        field(
            6,
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            Type::Bool,
            Omit::IfNil,
        ),
    ],
};

static PRECONDITIONS: Message = Message {
    name: "Preconditions",
    fields: &[
        field(1, "uid", Type::String, Omit::IfNil),
        field(2, "resourceVersion", Type::String, Omit::IfNil),
    ],
};

// ---------------------------------------------------------------------------------------------
// Decoding by schema.

/// What has been read of one field of a message.
enum Slot<'a> {
    /// A scalar: the last occurrence wins.
    Scalar(Value),
    /// A message: its occurrences merge, which is decoding them one after the other.
    Parts(Vec<&'a [u8]>),
    Map(Map<String, Value>),
    List(Vec<Value>),
}

/// Decodes the occurrences of a message (usually one) into its JSON object. Recursion follows
/// the schema, so its depth is bounded whatever the input.
fn decode_message(message: &'static Message, parts: &[&[u8]]) -> Result<Map<String, Value>> {
    let mut slots: Vec<Option<Slot<'_>>> = message.fields.iter().map(|_| None).collect();
    for part in parts {
        let mut reader = Reader::new(part, message.name);
        while let Some((number, wire)) = reader.next_field()? {
            let Some(index) = message.fields.iter().position(|f| f.number == number) else {
                continue;
            };
            let field = &message.fields[index];
            let at = At {
                message: message.name,
                field: field.name,
                number,
            };
            let slot = &mut slots[index];
            match field.ty {
                Type::String => *slot = Some(Slot::Scalar(Value::String(string(wire.bytes(at)?)))),
                Type::Bool => *slot = Some(Slot::Scalar(Value::Bool(wire.varint(at)? != 0))),
                // A negative int32 arrives sign-extended to 64 bits; Go keeps the low 32.
                Type::Int32 => *slot = Some(Slot::Scalar((wire.varint(at)? as i32).into())),
                Type::Int64 => *slot = Some(Slot::Scalar((wire.varint(at)? as i64).into())),
                Type::Time | Type::MicroTime | Type::Message(_) | Type::FieldsV1 => {
                    let bytes = wire.bytes(at)?;
                    match slot {
                        Some(Slot::Parts(parts)) => parts.push(bytes),
                        _ => *slot = Some(Slot::Parts(vec![bytes])),
                    }
                }
                Type::StringMap | Type::BytesMap => {
                    let (key, value) = decode_map_entry(wire.bytes(at)?, field.ty)?;
                    match slot {
                        Some(Slot::Map(map)) => {
                            map.insert(key, value);
                        }
                        _ => *slot = Some(Slot::Map(Map::from_iter([(key, value)]))),
                    }
                }
                Type::Strings | Type::Messages(_) => {
                    let bytes = wire.bytes(at)?;
                    let item = match field.ty {
                        Type::Messages(inner) => Value::Object(decode_message(inner, &[bytes])?),
                        _ => Value::String(string(bytes)),
                    };
                    match slot {
                        Some(Slot::List(list)) => list.push(item),
                        _ => *slot = Some(Slot::List(vec![item])),
                    }
                }
            }
        }
    }

    let mut object = Map::new();
    for (field, slot) in message.fields.iter().zip(slots) {
        if field.omit == Omit::IfNil && slot.is_none() {
            continue;
        }
        let (value, is_zero) = match (field.ty, slot) {
            (_, Some(Slot::Scalar(value))) => {
                let is_zero = match &value {
                    Value::String(s) => s.is_empty(),
                    Value::Bool(b) => !b,
                    Value::Number(n) => n.as_i64() == Some(0),
                    _ => false,
                };
                (value, is_zero)
            }
            (Type::String, None) => (Value::String(String::new()), true),
            (Type::Bool, None) => (Value::Bool(false), true),
            (Type::Int32 | Type::Int64, None) => (Value::from(0), true),
            (Type::Time | Type::MicroTime, slot) => {
                let micro = matches!(field.ty, Type::MicroTime);
                let last = match slot {
                    // Time.Unmarshal replaces the whole time, so the last occurrence wins.
                    Some(Slot::Parts(parts)) => parts.last().copied().unwrap_or_default(),
                    _ => &[],
                };
                match decode_time(last, micro, message.name, field.name)? {
                    Some(time) => (Value::String(time), false),
                    None => (Value::Null, true),
                }
            }
            (Type::Message(inner), slot) => {
                let parts = match slot {
                    Some(Slot::Parts(parts)) => parts,
                    _ => Vec::new(),
                };
                (Value::Object(decode_message(inner, &parts)?), false)
            }
            (Type::FieldsV1, slot) => {
                let parts = match slot {
                    Some(Slot::Parts(parts)) => parts,
                    _ => Vec::new(),
                };
                (decode_fields_v1(&parts)?, false)
            }
            (_, Some(Slot::Map(map))) => {
                let is_zero = map.is_empty();
                (Value::Object(map), is_zero)
            }
            (Type::StringMap | Type::BytesMap, _) => (Value::Object(Map::new()), true),
            (_, Some(Slot::List(list))) => {
                let is_zero = list.is_empty();
                (Value::Array(list), is_zero)
            }
            (Type::Strings | Type::Messages(_), _) => (Value::Array(Vec::new()), true),
            // Every type's slot is one of the above; nothing reaches here.
            (_, Some(Slot::Parts(_))) => continue,
        };
        let omit = match field.omit {
            Omit::IfNil | Omit::Never => false,
            Omit::IfZero => is_zero,
            Omit::IfEmpty => {
                is_zero
                    && !matches!(
                        field.ty,
                        Type::Time | Type::MicroTime | Type::Message(_) | Type::FieldsV1
                    )
            }
        };
        if !omit {
            object.insert(field.name.to_string(), value);
        }
    }
    Ok(object)
}

/// A map entry: a message with the key as field 1 and the value as field 2.
fn decode_map_entry(bytes: &[u8], ty: Type) -> Result<(String, Value)> {
    const MESSAGE: &str = "map entry";
    let mut key = String::new();
    let mut value: &[u8] = &[];
    let mut reader = Reader::new(bytes, MESSAGE);
    while let Some((number, wire)) = reader.next_field()? {
        let at = |field| At {
            message: MESSAGE,
            field,
            number,
        };
        match number {
            1 => key = string(wire.bytes(at("key"))?),
            2 => value = wire.bytes(at("value"))?,
            _ => {}
        }
    }
    let value = match ty {
        Type::BytesMap => base64::engine::general_purpose::STANDARD.encode(value),
        _ => string(value),
    };
    Ok((key, Value::String(value)))
}

/// A `metav1.Time` or `metav1.MicroTime` in RFC 3339, or `None` for Go's zero time (an empty
/// message, as Go writes it, or the zero time's seconds).
fn decode_time(
    bytes: &[u8],
    micro: bool,
    message: &'static str,
    field: &'static str,
) -> Result<Option<String>> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let name = if micro { "MicroTime" } else { "Time" };
    let mut seconds: i64 = 0;
    let mut nanos: i32 = 0;
    let mut reader = Reader::new(bytes, name);
    while let Some((number, wire)) = reader.next_field()? {
        let at = |field| At {
            message: name,
            field,
            number,
        };
        match number {
            1 => seconds = wire.varint(at("seconds"))? as i64,
            2 => nanos = wire.varint(at("nanos"))? as i32,
            _ => {}
        }
    }
    // Time keeps whole seconds; MicroTime truncates toward zero to microseconds. Then
    // time.Unix normalizes nanoseconds outside [0, 1e9).
    let nanos = if micro {
        i128::from(nanos) - i128::from(nanos) % 1000
    } else {
        0
    };
    let total = i128::from(seconds) * 1_000_000_000 + nanos;
    let whole = total.div_euclid(1_000_000_000);
    let fraction = total.rem_euclid(1_000_000_000) as u32;
    if whole == i128::from(GO_ZERO_TIME_UNIX) && fraction == 0 {
        return Ok(None);
    }
    let time = i64::try_from(whole)
        .ok()
        .and_then(|whole| DateTime::from_timestamp(whole, fraction))
        .filter(|time| (0..=9999).contains(&time.year()))
        .ok_or(ProtobufError::TimeOutOfRange {
            message,
            field,
            seconds,
        })?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Some(time.format(format).to_string()))
}

/// `metav1.FieldsV1`, whose `Raw` (field 1) is written into the JSON as it is.
fn decode_fields_v1(parts: &[&[u8]]) -> Result<Value> {
    const MESSAGE: &str = "FieldsV1";
    let mut raw: &[u8] = &[];
    for part in parts {
        let mut reader = Reader::new(part, MESSAGE);
        while let Some((number, wire)) = reader.next_field()? {
            if number == 1 {
                raw = wire.bytes(At {
                    message: MESSAGE,
                    field: "Raw",
                    number,
                })?;
            }
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|e| ProtobufError::InvalidFieldsV1(e.to_string()))
}

/// Protobuf strings are not checked for UTF-8 by Go; its JSON encoder replaces invalid bytes.
fn string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------------------------------------
// The wire format.

/// Where a field is, for error messages.
#[derive(Clone, Copy)]
struct At {
    message: &'static str,
    field: &'static str,
    number: u32,
}

/// One field's value as it came on the wire. Groups are skipped by the reader.
enum Wire<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

impl<'a> Wire<'a> {
    fn wire_type(&self) -> u8 {
        match self {
            Wire::Varint(_) => 0,
            Wire::Fixed64 => 1,
            Wire::Bytes(_) => 2,
            Wire::Fixed32 => 5,
        }
    }

    fn wrong(&self, at: At) -> ProtobufError {
        ProtobufError::WrongWireType {
            message: at.message,
            field: at.field,
            number: at.number,
            wire_type: self.wire_type(),
        }
    }

    fn varint(self, at: At) -> Result<u64> {
        match self {
            Wire::Varint(value) => Ok(value),
            other => Err(other.wrong(at)),
        }
    }

    fn bytes(self, at: At) -> Result<&'a [u8]> {
        match self {
            Wire::Bytes(bytes) => Ok(bytes),
            other => Err(other.wrong(at)),
        }
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    message: &'static str,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8], message: &'static str) -> Self {
        Reader {
            data,
            pos: 0,
            message,
        }
    }

    fn truncated(&self) -> ProtobufError {
        ProtobufError::Truncated {
            message: self.message,
        }
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for index in 0..10 {
            let byte = *self.data.get(self.pos).ok_or_else(|| self.truncated())?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(ProtobufError::VarintTooLong {
            message: self.message,
        })
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&end| end <= self.data.len())
            .ok_or_else(|| self.truncated())?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn length_delimited(&mut self) -> Result<&'a [u8]> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| self.truncated())?;
        self.take(len)
    }

    /// A field's key: its number and wire type.
    fn key(&mut self) -> Result<(u32, u8)> {
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 || number > MAX_FIELD_NUMBER {
            return Err(ProtobufError::InvalidFieldNumber {
                message: self.message,
                number,
            });
        }
        Ok((number as u32, (key & 7) as u8))
    }

    /// The next field, skipping groups; `None` at the end of the message.
    fn next_field(&mut self) -> Result<Option<(u32, Wire<'a>)>> {
        loop {
            if self.pos == self.data.len() {
                return Ok(None);
            }
            let (number, wire_type) = self.key()?;
            let wire = match wire_type {
                0 => Wire::Varint(self.varint()?),
                1 => {
                    self.take(8)?;
                    Wire::Fixed64
                }
                2 => Wire::Bytes(self.length_delimited()?),
                3 => {
                    self.skip_group(number)?;
                    continue;
                }
                4 => {
                    return Err(ProtobufError::UnmatchedEndGroup {
                        message: self.message,
                    });
                }
                5 => {
                    self.take(4)?;
                    Wire::Fixed32
                }
                wire_type => {
                    return Err(ProtobufError::InvalidWireType {
                        message: self.message,
                        wire_type,
                    });
                }
            };
            return Ok(Some((number, wire)));
        }
    }

    /// Skips a group whose start (field `number`) has been read, up to its matching end,
    /// without recursion.
    fn skip_group(&mut self, number: u32) -> Result<()> {
        let mut open = vec![number];
        while let Some(&innermost) = open.last() {
            if self.pos == self.data.len() {
                return Err(self.truncated());
            }
            let (number, wire_type) = self.key()?;
            match wire_type {
                0 => {
                    self.varint()?;
                }
                1 => {
                    self.take(8)?;
                }
                2 => {
                    self.length_delimited()?;
                }
                3 if open.len() >= MAX_GROUP_DEPTH => {
                    return Err(ProtobufError::TooDeep {
                        message: self.message,
                    });
                }
                3 => open.push(number),
                4 if number == innermost => {
                    open.pop();
                }
                4 => {
                    return Err(ProtobufError::UnmatchedEndGroup {
                        message: self.message,
                    });
                }
                5 => {
                    self.take(4)?;
                }
                wire_type => {
                    return Err(ProtobufError::InvalidWireType {
                        message: self.message,
                        wire_type,
                    });
                }
            }
        }
        Ok(())
    }
}
