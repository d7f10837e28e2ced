//! Hand-written component schemas: the `meta.k8s.io` types every document refers to, and the
//! built-in kinds this server serves, named as kube-apiserver names them
//! (`io.k8s.api.core.v1.ConfigMap`) so that kubectl finds them by their
//! `x-kubernetes-group-version-kind`.
//!
//! The schemas describe the fields clients write and read, with short descriptions for
//! `kubectl explain`, and the strategic-merge metadata (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`) kubectl needs to compute client-side apply patches for
//! built-in kinds. They match what `strategic_merge::BuiltinPatchMeta` applies.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::{Map, Value, json};

pub const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";
pub const CORE: &str = "io.k8s.api.core.v1";
pub const EVENTS: &str = "io.k8s.api.events.v1";
pub const COORDINATION: &str = "io.k8s.api.coordination.v1";
pub const AUTOSCALING: &str = "io.k8s.api.autoscaling.v1";
pub const APIEXTENSIONS: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1";

pub const API_VERSION_DESCRIPTION: &str = "APIVersion is the versioned schema of this representation of an object, such as v1 or example.com/v1. Servers convert recognized schemas to the version a client asks for.";
pub const KIND_DESCRIPTION: &str =
    "Kind is the type of this object, in CamelCase, such as ConfigMap. It cannot be updated.";
pub const METADATA_DESCRIPTION: &str = "Standard object metadata: the name, namespace, labels and annotations a client sets, and the fields the server maintains.";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata: the resourceVersion the list was read at, and the continue token of a paged list.";

/// `#/components/schemas/<name>`.
pub fn schema_ref(name: &str) -> String {
    format!("#/components/schemas/{name}")
}

/// A property that refers to a named schema.
pub fn reference(name: &str, description: &str) -> Value {
    json!({"$ref": schema_ref(name), "description": description})
}

pub(crate) fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn int32(description: &str) -> Value {
    json!({"type": "integer", "format": "int32", "description": description})
}

fn int64(description: &str) -> Value {
    json!({"type": "integer", "format": "int64", "description": description})
}

fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

fn time(description: &str) -> Value {
    reference(&format!("{META}.Time"), description)
}

fn micro_time(description: &str) -> Value {
    reference(&format!("{META}.MicroTime"), description)
}

fn string_map(description: &str) -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string", "default": ""}, "description": description})
}

pub(crate) fn string_list(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string", "default": ""}, "description": description})
}

pub(crate) fn list_of(name: &str, description: &str) -> Value {
    json!({"type": "array", "items": {"$ref": schema_ref(name)}, "description": description})
}

/// Any JSON value (no type).
fn any(description: &str) -> Value {
    json!({"description": description})
}

/// An object schema with these properties.
pub(crate) fn object(description: &str, properties: Vec<(&str, Value)>) -> Value {
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema))
        .collect();
    json!({"type": "object", "description": description, "properties": properties})
}

fn with(mut schema: Value, key: &str, value: Value) -> Value {
    schema[key] = value;
    schema
}

pub(crate) fn required(schema: Value, fields: &[&str]) -> Value {
    with(schema, "required", json!(fields))
}

/// The `x-kubernetes-group-version-kind` list of a component schema.
pub fn group_version_kinds(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "version": version, "kind": kind}])
}

/// The schema of a top-level kind: `apiVersion`, `kind`, `metadata` and `fields`.
pub(crate) fn kind(
    description: &str,
    (group, version, kind): (&str, &str, &str),
    fields: Vec<(&str, Value)>,
) -> Value {
    let mut properties = vec![
        ("apiVersion", string(API_VERSION_DESCRIPTION)),
        ("kind", string(KIND_DESCRIPTION)),
        (
            "metadata",
            reference(&format!("{META}.ObjectMeta"), METADATA_DESCRIPTION),
        ),
    ];
    properties.extend(fields);
    with(
        object(description, properties),
        "x-kubernetes-group-version-kind",
        group_version_kinds(group, version, kind),
    )
}

/// The schema of a list kind whose items are `item`.
pub fn list(item: &str, group: &str, version: &str, list_kind: &str, kind: &str) -> Value {
    let schema = object(
        &format!("{list_kind} is a list of {kind} objects."),
        vec![
            ("apiVersion", string(API_VERSION_DESCRIPTION)),
            ("items", list_of(item, &format!("The {kind} objects."))),
            ("kind", string(KIND_DESCRIPTION)),
            (
                "metadata",
                reference(&format!("{META}.ListMeta"), LIST_METADATA_DESCRIPTION),
            ),
        ],
    );
    with(
        required(schema, &["items"]),
        "x-kubernetes-group-version-kind",
        group_version_kinds(group, version, list_kind),
    )
}

/// Every hand-written schema, by component name.
pub fn library() -> &'static BTreeMap<String, Value> {
    static LIBRARY: LazyLock<BTreeMap<String, Value>> = LazyLock::new(|| {
        let mut schemas = BTreeMap::new();
        meta(&mut schemas);
        core(&mut schemas);
        events(&mut schemas);
        coordination(&mut schemas);
        autoscaling(&mut schemas);
        apiextensions(&mut schemas);
        schemas.extend(crate::webhook::openapi::schemas());
        schemas.extend(crate::rbac::openapi::schemas());
        schemas
    });
    &LIBRARY
}

/// The component names of a built-in kind and its list, by (group, plural).
pub fn builtin_models(group: &str, plural: &str) -> Option<(String, String)> {
    let (package, kind) = match (group, plural) {
        ("", "namespaces") => (CORE, "Namespace"),
        ("", "configmaps") => (CORE, "ConfigMap"),
        ("", "secrets") => (CORE, "Secret"),
        ("", "events") => (CORE, "Event"),
        ("events.k8s.io", "events") => (EVENTS, "Event"),
        ("coordination.k8s.io", "leases") => (COORDINATION, "Lease"),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            (APIEXTENSIONS, "CustomResourceDefinition")
        }
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => (
            crate::webhook::openapi::PACKAGE,
            "ValidatingWebhookConfiguration",
        ),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => (
            crate::webhook::openapi::PACKAGE,
            "MutatingWebhookConfiguration",
        ),
        (crate::rbac::GROUP, "roles") => (crate::rbac::openapi::PACKAGE, "Role"),
        (crate::rbac::GROUP, "clusterroles") => (crate::rbac::openapi::PACKAGE, "ClusterRole"),
        (crate::rbac::GROUP, "rolebindings") => (crate::rbac::openapi::PACKAGE, "RoleBinding"),
        (crate::rbac::GROUP, "clusterrolebindings") => {
            (crate::rbac::openapi::PACKAGE, "ClusterRoleBinding")
        }
        _ => return None,
    };
    Some((format!("{package}.{kind}"), format!("{package}.{kind}List")))
}

fn add(schemas: &mut BTreeMap<String, Value>, package: &str, name: &str, schema: Value) {
    schemas.insert(format!("{package}.{name}"), schema);
}

fn meta(schemas: &mut BTreeMap<String, Value>) {
    let timestamp = |description: &str| json!({"type": "string", "format": "date-time", "description": description});
    add(
        schemas,
        META,
        "Time",
        timestamp(
            "A point in time, serialized as RFC 3339 with second precision (2006-01-02T15:04:05Z).",
        ),
    );
    add(
        schemas,
        META,
        "MicroTime",
        timestamp(
            "A point in time with microsecond precision, serialized as RFC 3339 (2006-01-02T15:04:05.000000Z).",
        ),
    );
    add(
        schemas,
        META,
        "FieldsV1",
        json!({"type": "object", "description": "The set of fields a manager owns, as a trie of field paths (fieldsType FieldsV1)."}),
    );
    let finalizers = with(
        with(
            string_list(
                "Finalizers must be empty before the object is deleted from storage. Each entry names a controller that has cleanup to do; while any remain, a deleted object only gets a deletionTimestamp.",
            ),
            "x-kubernetes-list-type",
            json!("set"),
        ),
        "x-kubernetes-patch-strategy",
        json!("merge"),
    );
    let mut owner_references = list_of(
        &format!("{META}.OwnerReference"),
        "The objects this object depends on. When all owners are deleted, the garbage collector deletes this object. At most one owner may be the managing controller.",
    );
    owner_references["x-kubernetes-list-type"] = json!("map");
    owner_references["x-kubernetes-list-map-keys"] = json!(["uid"]);
    owner_references["x-kubernetes-patch-merge-key"] = json!("uid");
    owner_references["x-kubernetes-patch-strategy"] = json!("merge");
    add(
        schemas,
        META,
        "ObjectMeta",
        object(
            "ObjectMeta is the metadata every persisted object has: identity, labels and annotations set by clients, and the fields the server maintains.",
            vec![
                (
                    "annotations",
                    string_map(
                        "Annotations are arbitrary string metadata for tools and controllers. They are not queryable; use labels for that.",
                    ),
                ),
                (
                    "creationTimestamp",
                    time("When the server created the object. Set by the server, read-only."),
                ),
                (
                    "deletionGracePeriodSeconds",
                    int64(
                        "Seconds the object is given to terminate gracefully once deleted. Set by the server, read-only.",
                    ),
                ),
                (
                    "deletionTimestamp",
                    time(
                        "When the object was asked to be deleted. Set by the server when a deletion is requested while finalizers remain; read-only.",
                    ),
                ),
                ("finalizers", finalizers),
                (
                    "generateName",
                    string(
                        "A prefix the server uses to generate a unique name when name is empty: it appends a random suffix.",
                    ),
                ),
                (
                    "generation",
                    int64(
                        "A sequence number of the desired state, incremented by the server when the spec changes. Read-only.",
                    ),
                ),
                (
                    "labels",
                    string_map(
                        "Labels are string key/value pairs used to organize and select objects (label selectors).",
                    ),
                ),
                (
                    "managedFields",
                    list_of(
                        &format!("{META}.ManagedFieldsEntry"),
                        "Which manager owns which fields, maintained for server-side apply. Clients rarely edit it.",
                    ),
                ),
                (
                    "name",
                    string(
                        "Name must be unique within a namespace (or cluster-wide for cluster-scoped objects). It is required when creating, unless generateName is set, and cannot be changed.",
                    ),
                ),
                (
                    "namespace",
                    string(
                        "The namespace the object lives in; empty for cluster-scoped objects. It cannot be changed.",
                    ),
                ),
                ("ownerReferences", owner_references),
                (
                    "resourceVersion",
                    string(
                        "An opaque value that changes whenever the object changes. Clients pass it back unmodified for optimistic concurrency and to start watches.",
                    ),
                ),
                ("selfLink", string("Deprecated and not set.")),
                (
                    "uid",
                    string(
                        "The unique identifier of this object in time and space, set by the server on creation. Read-only.",
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        META,
        "OwnerReference",
        with(
            required(
                object(
                    "OwnerReference identifies an owner of an object, in the owner's namespace or cluster-wide.",
                    vec![
                        ("apiVersion", string("API version of the owner.")),
                        (
                            "blockOwnerDeletion",
                            boolean(
                                "If true, a foreground deletion of the owner waits until this reference is removed.",
                            ),
                        ),
                        (
                            "controller",
                            boolean(
                                "If true, the owner is the managing controller of this object.",
                            ),
                        ),
                        ("kind", string("Kind of the owner.")),
                        ("name", string("Name of the owner.")),
                        ("uid", string("UID of the owner.")),
                    ],
                ),
                &["apiVersion", "kind", "name", "uid"],
            ),
            "x-kubernetes-map-type",
            json!("atomic"),
        ),
    );
    add(
        schemas,
        META,
        "ManagedFieldsEntry",
        object(
            "ManagedFieldsEntry records which fields one manager set, in which version, by which operation.",
            vec![
                (
                    "apiVersion",
                    string("The version of the resource the fields are written in."),
                ),
                (
                    "fieldsType",
                    string("The format of fieldsV1; the only value is FieldsV1."),
                ),
                (
                    "fieldsV1",
                    reference(&format!("{META}.FieldsV1"), "The owned fields."),
                ),
                (
                    "manager",
                    string("The name of the manager (the fieldManager of its requests)."),
                ),
                (
                    "operation",
                    string("Apply or Update: how the fields were last written."),
                ),
                (
                    "subresource",
                    string(
                        "The subresource the fields were written through, such as status; empty for the main resource.",
                    ),
                ),
                ("time", time("When the manager last changed these fields.")),
            ],
        ),
    );
    add(
        schemas,
        META,
        "ListMeta",
        object(
            "ListMeta is the metadata of a list.",
            vec![
                (
                    "continue",
                    string(
                        "Set when more items exist: pass it as the continue parameter to read the next page of the same list.",
                    ),
                ),
                (
                    "remainingItemCount",
                    int64("An estimate of the items after this page, when known."),
                ),
                (
                    "resourceVersion",
                    string(
                        "The resourceVersion the list was read at; a watch started from it sees every later change.",
                    ),
                ),
                ("selfLink", string("Deprecated and not set.")),
            ],
        ),
    );
    add(
        schemas,
        META,
        "Status",
        with(
            object(
                "Status is the answer of calls that return no object, and of every failure.",
                vec![
                    ("apiVersion", string(API_VERSION_DESCRIPTION)),
                    ("code", int32("The HTTP status code.")),
                    (
                        "details",
                        reference(
                            &format!("{META}.StatusDetails"),
                            "More about the failure; its shape depends on the reason.",
                        ),
                    ),
                    ("kind", string(KIND_DESCRIPTION)),
                    (
                        "message",
                        string("A human-readable description of the outcome."),
                    ),
                    (
                        "metadata",
                        reference(&format!("{META}.ListMeta"), LIST_METADATA_DESCRIPTION),
                    ),
                    (
                        "reason",
                        string(
                            "A machine-readable CamelCase reason, such as NotFound or Conflict.",
                        ),
                    ),
                    ("status", string("Success or Failure.")),
                ],
            ),
            "x-kubernetes-group-version-kind",
            group_version_kinds("", "v1", "Status"),
        ),
    );
    add(
        schemas,
        META,
        "StatusDetails",
        object(
            "StatusDetails names the object a Status is about, and the causes of a failure.",
            vec![
                (
                    "causes",
                    list_of(
                        &format!("{META}.StatusCause"),
                        "The individual problems, such as invalid fields.",
                    ),
                ),
                ("group", string("The API group of the object.")),
                ("kind", string("The kind (or resource) of the object.")),
                ("name", string("The name of the object.")),
                (
                    "retryAfterSeconds",
                    int32("How long to wait before retrying, when set."),
                ),
                ("uid", string("The UID of the object.")),
            ],
        ),
    );
    add(
        schemas,
        META,
        "StatusCause",
        object(
            "StatusCause is one problem behind a failure.",
            vec![
                (
                    "field",
                    string("The field at fault, such as spec.replicas."),
                ),
                ("message", string("A human-readable description.")),
                (
                    "reason",
                    string("A machine-readable reason, such as FieldValueInvalid."),
                ),
            ],
        ),
    );
    add(
        schemas,
        META,
        "DeleteOptions",
        object(
            "DeleteOptions may accompany a deletion.",
            vec![
                ("apiVersion", string(API_VERSION_DESCRIPTION)),
                (
                    "dryRun",
                    string_list("When it contains All, the deletion is checked but not persisted."),
                ),
                (
                    "gracePeriodSeconds",
                    int64(
                        "Seconds the object is given before it is deleted; zero deletes immediately.",
                    ),
                ),
                ("kind", string(KIND_DESCRIPTION)),
                (
                    "orphanDependents",
                    boolean("Deprecated: use propagationPolicy."),
                ),
                (
                    "preconditions",
                    reference(
                        &format!("{META}.Preconditions"),
                        "Conditions the object must meet to be deleted; otherwise the server answers 409 Conflict.",
                    ),
                ),
                (
                    "propagationPolicy",
                    string(
                        "How dependents are garbage collected: Orphan, Background or Foreground.",
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        META,
        "Preconditions",
        object(
            "Preconditions must hold for an operation to proceed.",
            vec![
                (
                    "resourceVersion",
                    string("The resourceVersion the object must have."),
                ),
                ("uid", string("The UID the object must have.")),
            ],
        ),
    );
    add(
        schemas,
        META,
        "Patch",
        json!({"type": "object", "description": "A patch body: a JSON patch, a JSON merge patch, a strategic merge patch or an apply configuration, as the Content-Type says."}),
    );
}

fn core(schemas: &mut BTreeMap<String, Value>) {
    add(
        schemas,
        CORE,
        "ConfigMap",
        kind(
            "ConfigMap holds configuration data for other objects to consume.",
            ("", "v1", "ConfigMap"),
            vec![
                (
                    "binaryData",
                    json!({"type": "object", "additionalProperties": {"type": "string", "format": "byte"}, "description": "Binary values, base64-encoded. Keys must consist of alphanumeric characters, '-', '_' or '.', and must not also appear in data."}),
                ),
                (
                    "data",
                    string_map(
                        "The configuration data: UTF-8 string values. Keys must consist of alphanumeric characters, '-', '_' or '.'; binary values belong in binaryData.",
                    ),
                ),
                (
                    "immutable",
                    boolean(
                        "If true, data and binaryData cannot be changed; only metadata can. It cannot be unset.",
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        CORE,
        "Secret",
        kind(
            "Secret holds secret data, such as passwords, tokens or keys.",
            ("", "v1", "Secret"),
            vec![
                (
                    "data",
                    json!({"type": "object", "additionalProperties": {"type": "string", "format": "byte"}, "description": "The secret data: base64-encoded values. Keys must consist of alphanumeric characters, '-', '_' or '.'."}),
                ),
                (
                    "immutable",
                    boolean(
                        "If true, data cannot be changed; only metadata can. It cannot be unset.",
                    ),
                ),
                (
                    "stringData",
                    string_map(
                        "Write-only convenience: string values that are merged into data on write, overriding data for the same keys. It is never returned.",
                    ),
                ),
                (
                    "type",
                    string(
                        "The type of the secret, which tells tools how to read its data, such as Opaque or kubernetes.io/tls. Defaults to Opaque.",
                    ),
                ),
            ],
        ),
    );
    let mut conditions = list_of(
        &format!("{CORE}.NamespaceCondition"),
        "The latest observations of the namespace's state.",
    );
    conditions["x-kubernetes-list-type"] = json!("map");
    conditions["x-kubernetes-list-map-keys"] = json!(["type"]);
    conditions["x-kubernetes-patch-merge-key"] = json!("type");
    conditions["x-kubernetes-patch-strategy"] = json!("merge");
    add(
        schemas,
        CORE,
        "Namespace",
        kind(
            "Namespace provides a scope for names; most objects live in one.",
            ("", "v1", "Namespace"),
            vec![
                (
                    "spec",
                    reference(
                        &format!("{CORE}.NamespaceSpec"),
                        "The desired state of the namespace.",
                    ),
                ),
                (
                    "status",
                    reference(
                        &format!("{CORE}.NamespaceStatus"),
                        "The observed state of the namespace.",
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        CORE,
        "NamespaceSpec",
        object(
            "NamespaceSpec is the desired state of a namespace.",
            vec![(
                "finalizers",
                with(
                    string_list(
                        "Finalizers that must be removed (through the finalize subresource) before a deleted namespace is removed from storage.",
                    ),
                    "x-kubernetes-list-type",
                    json!("atomic"),
                ),
            )],
        ),
    );
    add(
        schemas,
        CORE,
        "NamespaceStatus",
        object(
            "NamespaceStatus is the observed state of a namespace.",
            vec![
                ("conditions", conditions),
                (
                    "phase",
                    with(
                        string("The lifecycle phase: Active, or Terminating once deleted."),
                        "enum",
                        json!(["Active", "Terminating"]),
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        CORE,
        "NamespaceCondition",
        required(
            object(
                "NamespaceCondition is one observation of a namespace's state.",
                vec![
                    (
                        "lastTransitionTime",
                        time("When the condition last changed status."),
                    ),
                    ("message", string("A human-readable explanation.")),
                    (
                        "reason",
                        string("A CamelCase reason for the last transition."),
                    ),
                    ("status", string("True, False or Unknown.")),
                    ("type", string("The type of the condition.")),
                ],
            ),
            &["type", "status"],
        ),
    );
    add(
        schemas,
        CORE,
        "Event",
        required(
            kind(
                "Event is a report of something that happened to an object, for people and tools to read.",
                ("", "v1", "Event"),
                vec![
                    (
                        "action",
                        string("What was done, or failed to be done, to the object."),
                    ),
                    ("count", int32("How many times the event has occurred.")),
                    (
                        "eventTime",
                        micro_time("When the event was first observed, with microseconds."),
                    ),
                    ("firstTimestamp", time("When the event was first recorded.")),
                    (
                        "involvedObject",
                        reference(
                            &format!("{CORE}.ObjectReference"),
                            "The object the event is about.",
                        ),
                    ),
                    (
                        "lastTimestamp",
                        time("When the most recent occurrence was recorded."),
                    ),
                    (
                        "message",
                        string("A human-readable description of the event."),
                    ),
                    (
                        "reason",
                        string("A short, machine-readable CamelCase reason for the event."),
                    ),
                    (
                        "related",
                        reference(
                            &format!("{CORE}.ObjectReference"),
                            "A secondary object, if any.",
                        ),
                    ),
                    (
                        "reportingComponent",
                        string(
                            "The controller that reported the event, such as example.com/widget-controller.",
                        ),
                    ),
                    (
                        "reportingInstance",
                        string("The instance of the controller that reported the event."),
                    ),
                    (
                        "series",
                        reference(
                            &format!("{CORE}.EventSeries"),
                            "Data about an event series, if this event repeats.",
                        ),
                    ),
                    (
                        "source",
                        reference(
                            &format!("{CORE}.EventSource"),
                            "The component that reported the event (older clients).",
                        ),
                    ),
                    ("type", string("Normal or Warning.")),
                ],
            ),
            &["metadata", "involvedObject"],
        ),
    );
    add(
        schemas,
        CORE,
        "EventSeries",
        object(
            "EventSeries describes a repeating event.",
            vec![
                (
                    "count",
                    int32("How many times the event occurred in the series."),
                ),
                (
                    "lastObservedTime",
                    micro_time("When the last occurrence was observed."),
                ),
            ],
        ),
    );
    add(
        schemas,
        CORE,
        "EventSource",
        object(
            "EventSource names the reporter of an event.",
            vec![
                (
                    "component",
                    string("The component that reported the event."),
                ),
                ("host", string("The node where the event was reported.")),
            ],
        ),
    );
    add(
        schemas,
        CORE,
        "ObjectReference",
        with(
            object(
                "ObjectReference points to an object, or a part of it.",
                vec![
                    ("apiVersion", string("API version of the referent.")),
                    (
                        "fieldPath",
                        string(
                            "A part of the object, such as spec.containers{name}, rather than the whole object.",
                        ),
                    ),
                    ("kind", string("Kind of the referent.")),
                    ("name", string("Name of the referent.")),
                    ("namespace", string("Namespace of the referent.")),
                    (
                        "resourceVersion",
                        string("The resourceVersion of the referent the reference was made for."),
                    ),
                    ("uid", string("UID of the referent.")),
                ],
            ),
            "x-kubernetes-map-type",
            json!("atomic"),
        ),
    );
    for (kind, list) in [
        ("ConfigMap", "ConfigMapList"),
        ("Secret", "SecretList"),
        ("Namespace", "NamespaceList"),
        ("Event", "EventList"),
    ] {
        add(
            schemas,
            CORE,
            list,
            self::list(&format!("{CORE}.{kind}"), "", "v1", list, kind),
        );
    }
}

fn events(schemas: &mut BTreeMap<String, Value>) {
    add(
        schemas,
        EVENTS,
        "Event",
        required(
            kind(
                "Event is a report of something that happened to an object (events.k8s.io, the newer Event API; the same events are served by core v1).",
                ("events.k8s.io", "v1", "Event"),
                vec![
                    (
                        "action",
                        string("What was done, or failed to be done, to the regarding object."),
                    ),
                    ("deprecatedCount", int32("The count of the core v1 Event.")),
                    (
                        "deprecatedFirstTimestamp",
                        time("The firstTimestamp of the core v1 Event."),
                    ),
                    (
                        "deprecatedLastTimestamp",
                        time("The lastTimestamp of the core v1 Event."),
                    ),
                    (
                        "deprecatedSource",
                        reference(
                            &format!("{CORE}.EventSource"),
                            "The source of the core v1 Event.",
                        ),
                    ),
                    (
                        "eventTime",
                        micro_time("When the event was first observed. Required."),
                    ),
                    ("note", string("A human-readable description of the event.")),
                    ("reason", string("Why the action was taken, in CamelCase.")),
                    (
                        "regarding",
                        reference(
                            &format!("{CORE}.ObjectReference"),
                            "The object the event is about.",
                        ),
                    ),
                    (
                        "related",
                        reference(
                            &format!("{CORE}.ObjectReference"),
                            "A secondary object, if any.",
                        ),
                    ),
                    (
                        "reportingController",
                        string(
                            "The controller that emitted the event, such as example.com/widget-controller.",
                        ),
                    ),
                    (
                        "reportingInstance",
                        string("The instance of the controller that emitted the event."),
                    ),
                    (
                        "series",
                        reference(
                            &format!("{EVENTS}.EventSeries"),
                            "Data about an event series, if this event repeats.",
                        ),
                    ),
                    ("type", string("Normal or Warning.")),
                ],
            ),
            &["eventTime"],
        ),
    );
    add(
        schemas,
        EVENTS,
        "EventSeries",
        required(
            object(
                "EventSeries describes a repeating event.",
                vec![
                    (
                        "count",
                        int32("How many times the event occurred in the series."),
                    ),
                    (
                        "lastObservedTime",
                        micro_time("When the last occurrence was observed."),
                    ),
                ],
            ),
            &["count", "lastObservedTime"],
        ),
    );
    add(
        schemas,
        EVENTS,
        "EventList",
        list(
            &format!("{EVENTS}.Event"),
            "events.k8s.io",
            "v1",
            "EventList",
            "Event",
        ),
    );
}

fn coordination(schemas: &mut BTreeMap<String, Value>) {
    add(
        schemas,
        COORDINATION,
        "Lease",
        kind(
            "Lease is a lease held by one holder at a time, such as a leader-election lock.",
            ("coordination.k8s.io", "v1", "Lease"),
            vec![(
                "spec",
                reference(
                    &format!("{COORDINATION}.LeaseSpec"),
                    "The lease's holder and timing.",
                ),
            )],
        ),
    );
    add(
        schemas,
        COORDINATION,
        "LeaseSpec",
        object(
            "LeaseSpec is the holder and timing of a lease.",
            vec![
                (
                    "acquireTime",
                    micro_time("When the current holder acquired the lease."),
                ),
                (
                    "holderIdentity",
                    string("The identity of the current holder."),
                ),
                (
                    "leaseDurationSeconds",
                    int32(
                        "How long candidates wait after the last renewal before they may take the lease over.",
                    ),
                ),
                (
                    "leaseTransitions",
                    int32("How many times the lease has changed holders."),
                ),
                (
                    "preferredHolder",
                    string("A holder that should take the lease over when possible."),
                ),
                (
                    "renewTime",
                    micro_time("When the current holder last renewed the lease."),
                ),
                (
                    "strategy",
                    string(
                        "How the holder is chosen among candidates, for coordinated leader election.",
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        COORDINATION,
        "LeaseList",
        list(
            &format!("{COORDINATION}.Lease"),
            "coordination.k8s.io",
            "v1",
            "LeaseList",
            "Lease",
        ),
    );
}

fn autoscaling(schemas: &mut BTreeMap<String, Value>) {
    add(
        schemas,
        AUTOSCALING,
        "Scale",
        kind(
            "Scale is the scale subresource of an object: its desired and observed replicas.",
            ("autoscaling", "v1", "Scale"),
            vec![
                (
                    "spec",
                    reference(&format!("{AUTOSCALING}.ScaleSpec"), "The desired scale."),
                ),
                (
                    "status",
                    reference(
                        &format!("{AUTOSCALING}.ScaleStatus"),
                        "The observed scale. Read-only.",
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        AUTOSCALING,
        "ScaleSpec",
        object(
            "ScaleSpec is the desired scale of an object.",
            vec![("replicas", int32("The desired number of replicas."))],
        ),
    );
    add(
        schemas,
        AUTOSCALING,
        "ScaleStatus",
        required(
            object(
                "ScaleStatus is the observed scale of an object.",
                vec![
                    ("replicas", int32("The observed number of replicas.")),
                    (
                        "selector",
                        string(
                            "The label selector of the replicas, in the string form of kubectl's -l.",
                        ),
                    ),
                ],
            ),
            &["replicas"],
        ),
    );
}

fn apiextensions(schemas: &mut BTreeMap<String, Value>) {
    let name = |kind: &str| format!("{APIEXTENSIONS}.{kind}");
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceDefinition",
        required(
            kind(
                "CustomResourceDefinition defines a resource the server serves: its group, names, versions and their schemas.",
                ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
                vec![
                    (
                        "spec",
                        reference(
                            &name("CustomResourceDefinitionSpec"),
                            "The resource to serve.",
                        ),
                    ),
                    (
                        "status",
                        reference(
                            &name("CustomResourceDefinitionStatus"),
                            "Whether the resource is served, and under which names.",
                        ),
                    ),
                ],
            ),
            &["spec"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceDefinitionList",
        list(
            &name("CustomResourceDefinition"),
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinitionList",
            "CustomResourceDefinition",
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceDefinitionSpec",
        required(
            object(
                "CustomResourceDefinitionSpec describes the resource.",
                vec![
                    (
                        "conversion",
                        reference(
                            &name("CustomResourceConversion"),
                            "How objects are converted between versions; None changes only apiVersion.",
                        ),
                    ),
                    (
                        "group",
                        string(
                            "The API group of the resource, a DNS subdomain with at least one dot, such as example.com. The CRD must be named <plural>.<group>.",
                        ),
                    ),
                    (
                        "names",
                        reference(
                            &name("CustomResourceDefinitionNames"),
                            "The names of the resource and its kind.",
                        ),
                    ),
                    (
                        "preserveUnknownFields",
                        boolean(
                            "Deprecated: keep fields the schema does not mention. Use x-kubernetes-preserve-unknown-fields in the schema instead.",
                        ),
                    ),
                    ("scope", string("Namespaced or Cluster.")),
                    (
                        "versions",
                        with(
                            list_of(
                                &name("CustomResourceDefinitionVersion"),
                                "The served versions. Exactly one is the storage version.",
                            ),
                            "x-kubernetes-list-type",
                            json!("atomic"),
                        ),
                    ),
                ],
            ),
            &["group", "names", "scope", "versions"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceDefinitionNames",
        required(
            object(
                "CustomResourceDefinitionNames are the names a resource is known by.",
                vec![
                    (
                        "categories",
                        string_list(
                            "Groups of resources this one belongs to, such as all (kubectl get all).",
                        ),
                    ),
                    (
                        "kind",
                        string("The CamelCase kind of the objects, such as Widget."),
                    ),
                    (
                        "listKind",
                        string("The kind of lists; defaults to <kind>List."),
                    ),
                    (
                        "plural",
                        string("The lower-case plural name used in URLs, such as widgets."),
                    ),
                    (
                        "shortNames",
                        string_list("Short aliases for kubectl, such as wd."),
                    ),
                    (
                        "singular",
                        string("The lower-case singular name; defaults to the lower-cased kind."),
                    ),
                ],
            ),
            &["plural", "kind"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceDefinitionVersion",
        required(
            object(
                "CustomResourceDefinitionVersion describes one version of the resource.",
                vec![
                    (
                        "additionalPrinterColumns",
                        with(
                            list_of(
                                &name("CustomResourceColumnDefinition"),
                                "Extra columns for kubectl get; without any, an Age column is shown.",
                            ),
                            "x-kubernetes-list-type",
                            json!("atomic"),
                        ),
                    ),
                    (
                        "deprecated",
                        boolean("Whether requests to this version get a deprecation warning."),
                    ),
                    (
                        "deprecationWarning",
                        string("The warning sent instead of the default one."),
                    ),
                    ("name", string("The version name, such as v1 or v1beta1.")),
                    (
                        "schema",
                        reference(
                            &name("CustomResourceValidation"),
                            "The schema of objects in this version.",
                        ),
                    ),
                    (
                        "selectableFields",
                        with(
                            list_of(
                                &name("SelectableField"),
                                "Fields usable in field selectors.",
                            ),
                            "x-kubernetes-list-type",
                            json!("atomic"),
                        ),
                    ),
                    ("served", boolean("Whether this version is served.")),
                    (
                        "storage",
                        boolean(
                            "Whether objects are stored in this version. Exactly one version is.",
                        ),
                    ),
                    (
                        "subresources",
                        reference(
                            &name("CustomResourceSubresources"),
                            "The status and scale subresources of this version.",
                        ),
                    ),
                ],
            ),
            &["name", "served", "storage"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceColumnDefinition",
        required(
            object(
                "CustomResourceColumnDefinition is a column of kubectl get.",
                vec![
                    (
                        "description",
                        string("A human-readable description of the column."),
                    ),
                    (
                        "format",
                        string("An optional OpenAPI format hint, such as name."),
                    ),
                    (
                        "jsonPath",
                        string(
                            "A simple JSONPath evaluated against each object, such as .spec.replicas or .status.conditions[?(@.type==\"Ready\")].status.",
                        ),
                    ),
                    ("name", string("The column header.")),
                    (
                        "priority",
                        int32(
                            "0 shows the column by default; higher priorities are shown with -o wide.",
                        ),
                    ),
                    (
                        "type",
                        string("integer, number, string, boolean or date (shown as an age)."),
                    ),
                ],
            ),
            &["name", "type", "jsonPath"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceValidation",
        object(
            "CustomResourceValidation holds the schema of a version.",
            vec![(
                "openAPIV3Schema",
                reference(
                    &name("JSONSchemaProps"),
                    "The OpenAPI v3 schema objects of this version are validated and pruned with.",
                ),
            )],
        ),
    );
    let props = || name("JSONSchemaProps");
    add(
        schemas,
        APIEXTENSIONS,
        "JSONSchemaProps",
        object(
            "JSONSchemaProps is a JSON Schema (OpenAPI v3 subset) of a value, with Kubernetes extensions.",
            vec![
                (
                    "additionalProperties",
                    any("The schema of map values, or false. Exclusive with properties."),
                ),
                (
                    "allOf",
                    list_of(&props(), "Schemas the value must all match."),
                ),
                (
                    "anyOf",
                    list_of(&props(), "Schemas the value must match at least one of."),
                ),
                (
                    "default",
                    any("The default of the value, applied when it is absent."),
                ),
                (
                    "description",
                    string("A human-readable description of the value (kubectl explain shows it)."),
                ),
                (
                    "enum",
                    json!({"type": "array", "items": {}, "description": "The allowed values."}),
                ),
                ("example", any("An example value.")),
                (
                    "format",
                    string("A format hint, such as date-time, int32 or byte."),
                ),
                ("items", any("The schema of list items.")),
                ("maxItems", int64("The most items a list may have.")),
                ("maxLength", int64("The longest a string may be.")),
                ("maxProperties", int64("The most keys a map may have.")),
                (
                    "maximum",
                    json!({"type": "number", "format": "double", "description": "The largest allowed number."}),
                ),
                ("minItems", int64("The fewest items a list may have.")),
                ("minLength", int64("The shortest a string may be.")),
                ("minProperties", int64("The fewest keys a map may have.")),
                (
                    "minimum",
                    json!({"type": "number", "format": "double", "description": "The smallest allowed number."}),
                ),
                (
                    "not",
                    reference(&props(), "A schema the value must not match."),
                ),
                ("nullable", boolean("Whether null is allowed (and kept).")),
                (
                    "oneOf",
                    list_of(&props(), "Schemas the value must match exactly one of."),
                ),
                (
                    "pattern",
                    string("A regular expression strings must match."),
                ),
                (
                    "properties",
                    json!({"type": "object", "additionalProperties": {"$ref": schema_ref(&props())}, "description": "The schemas of the fields of an object."}),
                ),
                ("required", string_list("Fields an object must have.")),
                ("title", string("A title of the value.")),
                (
                    "type",
                    string("object, array, string, integer, number or boolean."),
                ),
                ("uniqueItems", boolean("Whether list items must be unique.")),
                (
                    "x-kubernetes-embedded-resource",
                    boolean(
                        "The value is a Kubernetes object, with apiVersion, kind and metadata.",
                    ),
                ),
                (
                    "x-kubernetes-int-or-string",
                    boolean("The value may be an integer or a string."),
                ),
                (
                    "x-kubernetes-list-map-keys",
                    string_list("The keys that identify items of a list of type map."),
                ),
                (
                    "x-kubernetes-list-type",
                    string("atomic, set or map: how a list is merged by server-side apply."),
                ),
                (
                    "x-kubernetes-map-type",
                    string("granular or atomic: how a map is merged by server-side apply."),
                ),
                (
                    "x-kubernetes-preserve-unknown-fields",
                    boolean("Keep fields the schema does not mention instead of pruning them."),
                ),
                (
                    "x-kubernetes-validations",
                    list_of(&name("ValidationRule"), "CEL rules the value must satisfy."),
                ),
            ],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "ValidationRule",
        required(
            object(
                "ValidationRule is a CEL validation rule.",
                vec![
                    (
                        "fieldPath",
                        string("The field reported when the rule fails."),
                    ),
                    (
                        "message",
                        string("The message reported when the rule fails."),
                    ),
                    (
                        "messageExpression",
                        string("A CEL expression that computes the message."),
                    ),
                    (
                        "optionalOldSelf",
                        boolean("Evaluate the rule on creation too, with oldSelf absent."),
                    ),
                    ("reason", string("The reason reported when the rule fails.")),
                    ("rule", string("The CEL expression; self is the value.")),
                ],
            ),
            &["rule"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "SelectableField",
        required(
            object(
                "SelectableField is a field usable in field selectors.",
                vec![(
                    "jsonPath",
                    string("A simple JSONPath to a string, integer or boolean field."),
                )],
            ),
            &["jsonPath"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceSubresources",
        object(
            "CustomResourceSubresources enables the status and scale subresources.",
            vec![
                (
                    "scale",
                    reference(
                        &name("CustomResourceSubresourceScale"),
                        "Enables /scale, mapping an autoscaling/v1 Scale onto the object.",
                    ),
                ),
                (
                    "status",
                    reference(
                        &name("CustomResourceSubresourceStatus"),
                        "Enables /status: status is then written only through it.",
                    ),
                ),
            ],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceSubresourceScale",
        required(
            object(
                "CustomResourceSubresourceScale maps the Scale onto the object.",
                vec![
                    (
                        "labelSelectorPath",
                        string(
                            "The path of the label selector string in status, such as .status.selector.",
                        ),
                    ),
                    (
                        "specReplicasPath",
                        string("The path of the desired replicas, such as .spec.replicas."),
                    ),
                    (
                        "statusReplicasPath",
                        string("The path of the observed replicas, such as .status.replicas."),
                    ),
                ],
            ),
            &["specReplicasPath", "statusReplicasPath"],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceSubresourceStatus",
        json!({"type": "object", "description": "Enables the status subresource; it has no fields."}),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceConversion",
        required(
            object(
                "CustomResourceConversion says how objects are converted between versions.",
                vec![
                    (
                        "strategy",
                        string("None (only apiVersion changes) or Webhook."),
                    ),
                    (
                        "webhook",
                        any("The conversion webhook, for the Webhook strategy."),
                    ),
                ],
            ),
            &["strategy"],
        ),
    );
    let mut conditions = list_of(
        &name("CustomResourceDefinitionCondition"),
        "The latest observations of the definition's state, such as Established.",
    );
    conditions["x-kubernetes-list-type"] = json!("map");
    conditions["x-kubernetes-list-map-keys"] = json!(["type"]);
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceDefinitionStatus",
        object(
            "CustomResourceDefinitionStatus is the observed state of a definition.",
            vec![
                (
                    "acceptedNames",
                    reference(
                        &name("CustomResourceDefinitionNames"),
                        "The names the resource is served under.",
                    ),
                ),
                ("conditions", conditions),
                (
                    "storedVersions",
                    string_list("Every version objects have been stored in."),
                ),
            ],
        ),
    );
    add(
        schemas,
        APIEXTENSIONS,
        "CustomResourceDefinitionCondition",
        required(
            object(
                "CustomResourceDefinitionCondition is one observation of a definition's state.",
                vec![
                    (
                        "lastTransitionTime",
                        time("When the condition last changed status."),
                    ),
                    ("message", string("A human-readable explanation.")),
                    (
                        "reason",
                        string("A CamelCase reason for the last transition."),
                    ),
                    ("status", string("True, False or Unknown.")),
                    ("type", string("Established, NamesAccepted, and so on.")),
                ],
            ),
            &["type", "status"],
        ),
    );
}
