use base64::Engine;
use serde_json::{Value, json};

use super::config::{self, Attributes, Kind, Rule};
use super::review;

fn webhook(overrides: Value) -> Value {
    let mut webhook = json!({
        "name": "deny.example.com",
        "clientConfig": {"url": "https://127.0.0.1:8443/deny"},
        "rules": [{
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["configmaps"],
        }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (key, value) in overrides.as_object().unwrap() {
        if value.is_null() {
            webhook.as_object_mut().unwrap().remove(key);
        } else {
            webhook[key] = value.clone();
        }
    }
    webhook
}

fn configuration(webhooks: Vec<Value>) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "policy"},
        "webhooks": webhooks,
    })
}

/// The (field, message) of every cause.
fn errors(kind: Kind, object: &Value) -> Vec<(String, String)> {
    config::validate(kind, object)
        .into_iter()
        .map(|cause| (cause.field, cause.message))
        .collect()
}

#[test]
fn a_complete_webhook_is_valid() {
    let object = configuration(vec![webhook(json!({}))]);
    assert_eq!(errors(Kind::Validating, &object), vec![]);
    assert_eq!(errors(Kind::Mutating, &object), vec![]);
}

#[test]
fn defaults_are_kube_apiservers() {
    let mut object = configuration(vec![webhook(json!({
        "clientConfig": {"service": {"namespace": "system", "name": "hooks"}},
    }))]);
    config::set_defaults(Kind::Mutating, &mut object);
    let defaulted = &object["webhooks"][0];
    assert_eq!(defaulted["failurePolicy"], "Fail");
    assert_eq!(defaulted["matchPolicy"], "Equivalent");
    assert_eq!(defaulted["timeoutSeconds"], 10);
    assert_eq!(defaulted["namespaceSelector"], json!({}));
    assert_eq!(defaulted["objectSelector"], json!({}));
    assert_eq!(defaulted["reinvocationPolicy"], "Never");
    assert_eq!(defaulted["rules"][0]["scope"], "*");
    assert_eq!(defaulted["clientConfig"]["service"]["port"], 443);

    let mut validating = configuration(vec![webhook(json!({"failurePolicy": "Ignore"}))]);
    config::set_defaults(Kind::Validating, &mut validating);
    assert_eq!(validating["webhooks"][0]["failurePolicy"], "Ignore");
    assert!(
        validating["webhooks"][0]
            .get("reinvocationPolicy")
            .is_none()
    );
}

#[test]
fn every_field_error_is_reported_with_its_path() {
    let object = configuration(vec![
        webhook(json!({
            "name": "short",
            "sideEffects": null,
            "admissionReviewVersions": ["v1beta1"],
            "timeoutSeconds": 31,
            "failurePolicy": "Sometimes",
            "clientConfig": {"url": "http://user@host/path?query#fragment"},
        })),
        webhook(json!({"sideEffects": "Some", "clientConfig": {}})),
        webhook(json!({})),
    ]);
    let found = errors(Kind::Validating, &object);
    let expected = [
        (
            "webhooks[0].name",
            "Invalid value: \"short\": should be a domain with at least three segments separated by dots",
        ),
        (
            "webhooks[0].failurePolicy",
            "Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
        ),
        (
            "webhooks[0].sideEffects",
            "Required value: must specify one of None, NoneOnDryRun",
        ),
        (
            "webhooks[0].timeoutSeconds",
            "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        ),
        (
            "webhooks[0].clientConfig.url",
            "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
        ),
        (
            "webhooks[0].clientConfig.url",
            "Invalid value: \"user\": user information is not permitted in the URL",
        ),
        (
            "webhooks[0].clientConfig.url",
            "Invalid value: \"fragment\": fragments are not permitted in the URL",
        ),
        (
            "webhooks[0].clientConfig.url",
            "Invalid value: \"query\": query parameters are not permitted in the URL",
        ),
        (
            "webhooks[0].admissionReviewVersions",
            "Invalid value: [\"v1beta1\"]: must include at least one of v1",
        ),
        (
            "webhooks[1].sideEffects",
            "Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
        ),
        (
            "webhooks[1].clientConfig",
            "Required value: exactly one of url or service is required",
        ),
        ("webhooks[2].name", "Duplicate value: \"deny.example.com\""),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn rules_are_validated_like_upstream() {
    let object = configuration(vec![webhook(json!({
        "rules": [
            {"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": [""],
             "resources": ["*", "pods"], "scope": "Everywhere"},
            {"operations": ["PATCH"], "apiGroups": ["*"], "apiVersions": ["*"],
             "resources": ["*/*", "pods"]},
        ],
    }))]);
    let fields: Vec<String> = errors(Kind::Mutating, &object)
        .into_iter()
        .map(|(field, message)| format!("{field}: {message}"))
        .collect();
    assert_eq!(
        fields,
        [
            "webhooks[0].rules[0].operations: Invalid value: [\"*\",\"CREATE\"]: if '*' is present, must not specify other operations",
            "webhooks[0].rules[0].apiGroups: Required value",
            "webhooks[0].rules[0].apiVersions[0]: Required value",
            "webhooks[0].rules[0].resources: Invalid value: [\"*\",\"pods\"]: if '*' is present, must not specify other resources without subresources",
            "webhooks[0].rules[0].scope: Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            "webhooks[0].rules[1].operations[0]: Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
            "webhooks[0].rules[1].resources: Invalid value: [\"*/*\",\"pods\"]: if '*/*' is present, must not specify other resources",
        ]
    );
}

#[test]
fn services_selectors_and_reinvocation_are_validated() {
    let object = configuration(vec![webhook(json!({
        "clientConfig": {"service": {"namespace": "", "name": "hooks", "port": 0, "path": "no-slash"}},
        "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Near"}]},
        "reinvocationPolicy": "Always",
    }))]);
    let fields: Vec<String> = errors(Kind::Mutating, &object)
        .into_iter()
        .map(|(field, _)| field)
        .collect();
    assert_eq!(
        fields,
        [
            "webhooks[0].namespaceSelector",
            "webhooks[0].reinvocationPolicy",
            "webhooks[0].clientConfig.service.namespace",
            "webhooks[0].clientConfig.service.port",
            "webhooks[0].clientConfig.service.path",
        ]
    );
    // Validating webhooks have no reinvocation policy to check.
    assert_eq!(errors(Kind::Validating, &object).len(), 4);
}

#[test]
fn a_badly_typed_webhook_is_one_type_error() {
    let object = configuration(vec![webhook(json!({"timeoutSeconds": "ten"}))]);
    let found = config::validate(Kind::Validating, &object);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].field, "webhooks[0]");
    assert_eq!(found[0].reason, "FieldValueTypeInvalid");
}

#[cfg(feature = "cel")]
#[test]
fn match_conditions_must_parse_and_be_named_once() {
    let object = configuration(vec![webhook(json!({
        "matchConditions": [
            {"name": "only-labelled", "expression": "has(object.metadata.labels)"},
            {"name": "only-labelled", "expression": "object.metadata.("},
            {"expression": ""},
        ],
    }))]);
    let fields: Vec<String> = errors(Kind::Validating, &object)
        .into_iter()
        .map(|(field, _)| field)
        .collect();
    assert_eq!(
        fields,
        [
            "webhooks[0].matchConditions[1].expression",
            "webhooks[0].matchConditions[1].name",
            "webhooks[0].matchConditions[2].expression",
            "webhooks[0].matchConditions[2].name",
        ]
    );
}

fn rule(resources: &[&str], scope: &str) -> Rule {
    Rule {
        operations: vec!["CREATE".into(), "UPDATE".into()],
        api_groups: vec!["".into()],
        api_versions: vec!["*".into()],
        resources: resources.iter().map(|r| r.to_string()).collect(),
        scope: scope.into(),
    }
}

fn attributes<'a>(resource: &'a str, subresource: &'a str, namespace: &'a str) -> Attributes<'a> {
    Attributes {
        operation: "CREATE",
        group: "",
        version: "v1",
        resource,
        subresource,
        namespace,
    }
}

#[test]
fn rules_match_resources_subresources_and_scopes() {
    let all = rule(&["*"], "*");
    assert!(all.matches(&attributes("configmaps", "", "default")));
    assert!(
        !all.matches(&attributes("configmaps", "status", "default")),
        "* does not match subresources"
    );
    assert!(rule(&["*/*"], "*").matches(&attributes("configmaps", "status", "default")));
    assert!(rule(&["*/status"], "*").matches(&attributes("widgets", "status", "default")));
    assert!(!rule(&["*/status"], "*").matches(&attributes("widgets", "", "default")));
    assert!(rule(&["pods/*"], "*").matches(&attributes("pods", "log", "default")));
    assert!(!rule(&["configmaps"], "*").matches(&attributes("secrets", "", "default")));

    let namespaced = rule(&["*"], "Namespaced");
    assert!(namespaced.matches(&attributes("configmaps", "", "default")));
    assert!(!namespaced.matches(&attributes("nodes", "", "")));
    assert!(
        !namespaced.matches(&attributes("namespaces", "", "default")),
        "a namespace is cluster-scoped even though its requests carry its name"
    );
    let cluster = rule(&["*"], "Cluster");
    assert!(cluster.matches(&attributes("namespaces", "", "default")));
    assert!(!cluster.matches(&attributes("configmaps", "", "default")));

    let mut delete = attributes("configmaps", "", "default");
    delete.operation = "DELETE";
    assert!(!all.matches(&delete));
    let mut other_group = attributes("configmaps", "", "default");
    other_group.group = "apps";
    assert!(!all.matches(&other_group));
}

#[test]
fn urls_are_split_without_a_url_library() {
    let parts = config::split_url("https://user:pw@host:8443/a/b?x=1#top").unwrap();
    assert_eq!(parts.scheme, "https");
    assert_eq!(parts.userinfo, Some("user:pw"));
    assert_eq!(parts.host, "host:8443");
    assert_eq!(parts.query, Some("x=1"));
    assert_eq!(parts.fragment, Some("top"));
    assert!(config::split_url("no scheme").is_none());
}

fn answer(uid: &str, response: Value) -> Vec<u8> {
    let mut response = response;
    response["uid"] = json!(uid);
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    }))
    .unwrap()
}

#[test]
fn answers_are_checked_like_upstream() {
    let ok = review::verify(
        "u1",
        false,
        &answer("u1", json!({"allowed": true, "warnings": ["careful"]})),
    )
    .unwrap();
    assert!(ok.allowed);
    assert_eq!(ok.warnings, ["careful"]);

    let wrong_uid = review::verify("u1", false, &answer("u2", json!({"allowed": true})));
    assert_eq!(
        wrong_uid.unwrap_err(),
        "received invalid webhook response: expected response.uid=\"u1\", got \"u2\""
    );
    let garbage = review::verify("u1", false, b"<html>");
    assert!(garbage.unwrap_err().starts_with("failed to call webhook: "));
    let absent = review::verify(
        "u1",
        false,
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
    );
    assert_eq!(
        absent.unwrap_err(),
        "received invalid webhook response: webhook response was absent"
    );
    let wrong_kind =
        br#"{"apiVersion":"v1","kind":"Status","response":{"uid":"u1","allowed":true}}"#;
    assert_eq!(
        review::verify("u1", false, wrong_kind).unwrap_err(),
        "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /v1, Kind=Status"
    );

    let patch = base64::engine::general_purpose::STANDARD
        .encode(br#"[{"op":"add","path":"/x","value":1}]"#);
    let validating_patch = review::verify(
        "u1",
        false,
        &answer(
            "u1",
            json!({"allowed": true, "patch": patch, "patchType": "JSONPatch"}),
        ),
    );
    assert_eq!(
        validating_patch.unwrap_err(),
        "received invalid webhook response: validating webhook may not return response.patch"
    );
    let untyped_patch = review::verify(
        "u1",
        true,
        &answer("u1", json!({"allowed": true, "patch": patch})),
    );
    assert_eq!(
        untyped_patch.unwrap_err(),
        "received invalid webhook response: webhook returned response.patch but not response.patchType"
    );
    let mutating = review::verify(
        "u1",
        true,
        &answer(
            "u1",
            json!({"allowed": true, "patch": patch, "patchType": "JSONPatch"}),
        ),
    )
    .unwrap();
    assert_eq!(
        mutating.patch.as_deref(),
        Some(&br#"[{"op":"add","path":"/x","value":1}]"#[..])
    );
}

#[test]
fn denials_keep_the_webhooks_status() {
    let error = review::denial(
        "deny.example.com",
        Some(&json!({"code": 403, "reason": "Forbidden", "message": "labelled deny"})),
    );
    assert_eq!(error.code.as_u16(), 403);
    assert_eq!(error.reason, "Forbidden");
    assert_eq!(
        error.message,
        "admission webhook \"deny.example.com\" denied the request: labelled deny"
    );

    let bare = review::denial("deny.example.com", None);
    assert_eq!(bare.code.as_u16(), 400, "codes below 400 become 400");
    assert_eq!(
        bare.message,
        "admission webhook \"deny.example.com\" denied the request without explanation"
    );
    let reason_only = review::denial(
        "deny.example.com",
        Some(&json!({"code": 200, "reason": "Invalid"})),
    );
    assert_eq!(reason_only.code.as_u16(), 400);
    assert_eq!(
        reason_only.message,
        "admission webhook \"deny.example.com\" denied the request: Invalid"
    );
}

#[cfg(feature = "cel")]
#[test]
fn match_conditions_see_object_old_object_and_request() {
    let object = configuration(vec![webhook(json!({
        "matchConditions": [
            {"name": "labelled", "expression": "'team' in object.metadata.labels"},
            {"name": "creating", "expression": "request.operation == 'CREATE' && oldObject == null"},
        ],
    }))]);
    let compiled = config::compile(Kind::Validating, &object);
    let conditions = &compiled[0].match_conditions;
    let labelled = json!({"metadata": {"labels": {"team": "a"}}});
    let request = json!({"operation": "CREATE"});
    let input = config::ConditionInput {
        object: &labelled,
        old_object: &Value::Null,
        request: &request,
    };
    assert_eq!(conditions[0].evaluate(&input), Ok(true));
    assert_eq!(conditions[1].evaluate(&input), Ok(true));

    let unlabelled = json!({"metadata": {}});
    let input = config::ConditionInput {
        object: &unlabelled,
        old_object: &Value::Null,
        request: &request,
    };
    let error = conditions[0].evaluate(&input).unwrap_err();
    assert!(
        error.starts_with("expression ''team' in object.metadata.labels' resulted in error: "),
        "{error}"
    );
}

#[test]
fn services_map_to_cluster_dns_names() {
    let spec: config::ClientConfigSpec = serde_json::from_value(json!({
        "service": {"namespace": "hooks", "name": "policy", "port": 8443, "path": "/validate"},
    }))
    .unwrap();
    let client = super::client::Client::new(&spec);
    assert_eq!(
        client.url_with_timeout(std::time::Duration::from_millis(1500)),
        "https://policy.hooks.svc:8443/validate?timeout=2s"
    );
}
