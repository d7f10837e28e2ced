//! The OpenAPI component schemas of `admissionregistration.k8s.io/v1` webhook configurations,
//! named as kube-apiserver names them, for `kubectl explain` and for the strategic-merge
//! metadata kubectl's client-side apply reads (`webhooks` merge on `name`, as
//! `strategic_merge::BuiltinPatchMeta` applies). `openapi/schemas.rs` adds them to its
//! library.

use serde_json::{Map, Value, json};

/// The package of the component names.
pub const PACKAGE: &str = "io.k8s.api.admissionregistration.v1";

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

fn reference(name: &str, description: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}"), "description": description})
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn strings(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string", "default": ""}, "description": description,
           "x-kubernetes-list-type": "atomic"})
}

fn object(description: &str, properties: Vec<(&str, Value)>) -> Value {
    let properties: Map<String, Value> = properties
        .into_iter()
        .map(|(name, schema)| (name.to_string(), schema))
        .collect();
    json!({"type": "object", "description": description, "properties": properties})
}

fn label_selector(description: &str) -> Value {
    object(
        description,
        vec![
            (
                "matchLabels",
                json!({"type": "object", "additionalProperties": {"type": "string", "default": ""},
                       "description": "Labels that must all be present with these values."}),
            ),
            (
                "matchExpressions",
                json!({"type": "array", "description": "Requirements that must all hold.",
                "x-kubernetes-list-type": "atomic",
                "items": object("A label requirement.", vec![
                    ("key", string("The label key.")),
                    ("operator", string("In, NotIn, Exists or DoesNotExist.")),
                    ("values", strings("The values, for In and NotIn.")),
                ])}),
            ),
        ],
    )
}

/// The properties both webhook types share.
fn webhook_fields() -> Vec<(&'static str, Value)> {
    vec![
        (
            "name",
            string(
                "The webhook's name, a fully qualified domain name, unique in its configuration.",
            ),
        ),
        (
            "clientConfig",
            reference(
                &format!("{PACKAGE}.WebhookClientConfig"),
                "How to reach the webhook.",
            ),
        ),
        (
            "rules",
            json!({"type": "array", "description": "The operations and resources the webhook is called for; a request matching any rule is sent.",
                   "x-kubernetes-list-type": "atomic",
                   "items": {"$ref": format!("#/components/schemas/{PACKAGE}.RuleWithOperations")}}),
        ),
        (
            "failurePolicy",
            string(
                "Fail (the default) refuses a request whose webhook call fails; Ignore lets it through.",
            ),
        ),
        (
            "matchPolicy",
            string(
                "Equivalent (the default) also sends requests to other versions of a resource a rule names, converted; Exact does not.",
            ),
        ),
        (
            "namespaceSelector",
            label_selector(
                "Which namespaces' objects are sent, by the namespace's labels. Empty: all.",
            ),
        ),
        (
            "objectSelector",
            label_selector("Which objects are sent, by their new or old labels. Empty: all."),
        ),
        (
            "sideEffects",
            string(
                "None or NoneOnDryRun: whether calling the webhook changes anything elsewhere. Required.",
            ),
        ),
        (
            "timeoutSeconds",
            json!({"type": "integer", "format": "int32",
                   "description": "How long a call may take, 1 to 30 seconds (default 10)."}),
        ),
        (
            "admissionReviewVersions",
            strings(
                "The AdmissionReview versions the webhook understands, in preference order; must include v1.",
            ),
        ),
        (
            "matchConditions",
            json!({"type": "array", "description": "CEL expressions over object, oldObject and request that must all be true for the webhook to be called.",
                   "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                   "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge",
                   "items": {"$ref": format!("#/components/schemas/{PACKAGE}.MatchCondition")}}),
        ),
    ]
}

fn configuration(kind: &str, webhook: &str, description: &str) -> Value {
    let mut schema = object(
        description,
        vec![
            (
                "apiVersion",
                string("APIVersion is the versioned schema of this representation of an object."),
            ),
            (
                "kind",
                string("Kind is the type of this object, in CamelCase."),
            ),
            (
                "metadata",
                reference(&format!("{META}.ObjectMeta"), "Standard object metadata."),
            ),
            (
                "webhooks",
                json!({"type": "array", "description": "The webhooks, called in this order.",
                       "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                       "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge",
                       "items": {"$ref": format!("#/components/schemas/{PACKAGE}.{webhook}")}}),
            ),
        ],
    );
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": "admissionregistration.k8s.io", "version": "v1", "kind": kind}]);
    schema
}

fn configuration_list(kind: &str) -> Value {
    let list_kind = format!("{kind}List");
    let mut schema = object(
        &format!("A list of {kind}s."),
        vec![
            (
                "apiVersion",
                string("APIVersion is the versioned schema of this representation of an object."),
            ),
            (
                "items",
                json!({"type": "array", "description": format!("The {kind} objects."),
                       "items": {"$ref": format!("#/components/schemas/{PACKAGE}.{kind}")}}),
            ),
            (
                "kind",
                string("Kind is the type of this object, in CamelCase."),
            ),
            (
                "metadata",
                reference(&format!("{META}.ListMeta"), "Standard list metadata."),
            ),
        ],
    );
    schema["required"] = json!(["items"]);
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": "admissionregistration.k8s.io", "version": "v1", "kind": list_kind}]);
    schema
}

/// Every component schema, by name.
pub fn schemas() -> Vec<(String, Value)> {
    let mut mutating_fields = webhook_fields();
    mutating_fields.push((
        "reinvocationPolicy",
        string("IfNeeded calls the webhook once more when a later webhook changed the object; Never (the default) does not."),
    ));
    let named = |name: &str, schema: Value| (format!("{PACKAGE}.{name}"), schema);
    let mut validating = object(
        "A webhook called to accept or refuse requests.",
        webhook_fields(),
    );
    validating["required"] = json!([
        "name",
        "clientConfig",
        "sideEffects",
        "admissionReviewVersions"
    ]);
    let mut mutating = object(
        "A webhook called to change or refuse requests, before validation.",
        mutating_fields,
    );
    mutating["required"] = validating["required"].clone();
    vec![
        named(
            "ValidatingWebhookConfiguration",
            configuration(
                "ValidatingWebhookConfiguration",
                "ValidatingWebhook",
                "Webhooks that accept or refuse requests, after schema validation.",
            ),
        ),
        named(
            "ValidatingWebhookConfigurationList",
            configuration_list("ValidatingWebhookConfiguration"),
        ),
        named(
            "MutatingWebhookConfiguration",
            configuration(
                "MutatingWebhookConfiguration",
                "MutatingWebhook",
                "Webhooks that change or refuse requests, before schema validation.",
            ),
        ),
        named(
            "MutatingWebhookConfigurationList",
            configuration_list("MutatingWebhookConfiguration"),
        ),
        named("ValidatingWebhook", validating),
        named("MutatingWebhook", mutating),
        named(
            "WebhookClientConfig",
            object(
                "Where the webhook is: a URL, or a Service reference, and the CAs to trust.",
                vec![
                    (
                        "url",
                        string("An https URL without user information, query or fragment."),
                    ),
                    (
                        "service",
                        reference(
                            &format!("{PACKAGE}.ServiceReference"),
                            "A Service, called at https://<name>.<namespace>.svc:<port><path>.",
                        ),
                    ),
                    (
                        "caBundle",
                        json!({"type": "string", "format": "byte",
                               "description": "PEM certificates that sign the webhook's certificate; the system's roots when empty."}),
                    ),
                ],
            ),
        ),
        named(
            "ServiceReference",
            object(
                "A reference to a Service.",
                vec![
                    ("namespace", string("The Service's namespace. Required.")),
                    ("name", string("The Service's name. Required.")),
                    ("path", string("The URL path requests are sent to.")),
                    (
                        "port",
                        json!({"type": "integer", "format": "int32",
                               "description": "The port, 1 to 65535 (default 443)."}),
                    ),
                ],
            ),
        ),
        named(
            "RuleWithOperations",
            object(
                "Operations and resources a webhook is called for.",
                vec![
                    (
                        "operations",
                        strings("CREATE, UPDATE, DELETE, CONNECT, or * for all."),
                    ),
                    (
                        "apiGroups",
                        strings("API groups, or * for all; \"\" is the core group."),
                    ),
                    ("apiVersions", strings("API versions, or * for all.")),
                    (
                        "resources",
                        strings(
                            "Resources: * (no subresources), */* (everything), */status, pods/*, configmaps.",
                        ),
                    ),
                    ("scope", string("Cluster, Namespaced or * (the default).")),
                ],
            ),
        ),
        named(
            "MatchCondition",
            object(
                "A CEL expression that must be true for the webhook to be called.",
                vec![
                    (
                        "name",
                        string("The condition's name, unique in the webhook."),
                    ),
                    (
                        "expression",
                        string(
                            "A CEL expression over object, oldObject and request; must evaluate to a bool.",
                        ),
                    ),
                ],
            ),
        ),
    ]
}
