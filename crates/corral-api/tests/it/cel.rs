//! The schema defaults and CEL rules that stand in for upstream's webhooks, evaluated with
//! kube-cel the way an API server evaluates them: defaults first, then the rules, with the old
//! object for transition rules. Each case cites the upstream webhook check it mirrors.

use serde_json::{Value, json};

use super::generated_schema;

/// The messages of the rules `object` breaks, as an update of `old` when given.
fn broken_rules(plural: &str, object: &Value, old: Option<&Value>) -> Vec<String> {
    let schema = generated_schema(plural);
    match kube_cel::Validator::new().validate(&schema, object, old) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.iter().map(|error| error.message.clone()).collect(),
    }
}

fn assert_rejected(plural: &str, object: &Value, old: Option<&Value>, message: &str) {
    let broken = broken_rules(plural, object, old);
    assert!(
        broken.iter().any(|broken| broken.contains(message)),
        "{object} should break a rule saying {message:?}, broke {broken:?}"
    );
}

#[test]
fn every_rule_compiles_and_uses_only_self_and_old_self() {
    // A rule that does not compile is an error only when an object reaches it; find them all now.
    // The inventory's Provider CRD (clusterctl.cluster.x-k8s.io) has no rules, as upstream's.
    let core = super::generated_crds()
        .into_iter()
        .filter(|(file, _)| file.starts_with("cluster.x-k8s.io_"));
    for (file, crd) in core {
        let schema = super::schema_of(&crd, "v1beta2");
        let compiled = kube_cel::compile_schema(schema);
        let errors: Vec<String> = compiled
            .compilation_errors()
            .iter()
            .map(|error| error.to_string())
            .collect();
        assert!(errors.is_empty(), "{file}: {errors:?}");
        let mut rules = Vec::new();
        collect_rules(schema, &mut rules);
        for rule in rules {
            let warnings = kube_cel::check_rule_scope(&rule, kube_cel::ScopeContext::CrdValidation);
            assert!(warnings.is_empty(), "{file}: {rule}: {warnings:?}");
        }
    }
}

fn collect_rules(schema: &Value, rules: &mut Vec<String>) {
    match schema {
        Value::Object(fields) => {
            for (key, value) in fields {
                if key == "x-kubernetes-validations" {
                    let listed = value.as_array().unwrap();
                    rules.extend(
                        listed
                            .iter()
                            .map(|rule| rule["rule"].as_str().unwrap().to_owned()),
                    );
                } else {
                    collect_rules(value, rules);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_rules(item, rules)),
        _ => {}
    }
}

fn defaulted(plural: &str, object: &Value) -> Value {
    kube_cel::apply_defaults(&generated_schema(plural), object)
}

fn machine_health_check(spec: Value) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": { "name": "workers", "namespace": "default" },
        "spec": spec,
    })
}

fn mhc_spec() -> Value {
    json!({ "clusterName": "dev", "selector": { "matchLabels": { "nodepool": "a" } } })
}

#[test]
fn machine_health_check_node_startup_timeout_defaults_to_600() {
    // machinehealthcheck.go Default: nodeStartupTimeoutSeconds = 600 when unset.
    let object = defaulted("machinehealthchecks", &machine_health_check(mhc_spec()));
    assert_eq!(
        object["spec"]["checks"],
        json!({ "nodeStartupTimeoutSeconds": 600 })
    );

    let mut spec = mhc_spec();
    spec["checks"] = json!({ "unhealthyNodeConditions": [{ "type": "Ready", "status": "False", "timeoutSeconds": 300 }] });
    let object = defaulted("machinehealthchecks", &machine_health_check(spec));
    assert_eq!(object["spec"]["checks"]["nodeStartupTimeoutSeconds"], 600);
    assert_eq!(
        object["spec"]["checks"]["unhealthyNodeConditions"][0]["timeoutSeconds"],
        300
    );

    let mut spec = mhc_spec();
    spec["checks"] = json!({ "nodeStartupTimeoutSeconds": 0 });
    let object = defaulted("machinehealthchecks", &machine_health_check(spec));
    assert_eq!(
        object["spec"]["checks"]["nodeStartupTimeoutSeconds"], 0,
        "0 is kept: it disables the check"
    );
}

#[test]
fn machine_health_check_keeps_upstreams_own_rule_on_machine_conditions() {
    let mut spec = mhc_spec();
    spec["checks"] = json!({ "unhealthyMachineConditions": [{ "type": "Ready", "status": "False", "timeoutSeconds": 60 }] });
    assert_rejected(
        "machinehealthchecks",
        &machine_health_check(spec),
        None,
        "type must not be one of",
    );
}

fn machine(spec: Value) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "worker-1", "namespace": "default" },
        "spec": spec,
    })
}

fn machine_spec() -> Value {
    json!({
        "clusterName": "dev",
        "bootstrap": { "dataSecretName": "worker-1-bootstrap" },
        "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": "worker-1" },
    })
}

#[test]
fn machine_node_deletion_timeout_defaults_to_10() {
    // machine.go Default: nodeDeletionTimeoutSeconds = 10 when unset.
    let object = defaulted("machines", &machine(machine_spec()));
    assert_eq!(
        object["spec"]["deletion"],
        json!({ "nodeDeletionTimeoutSeconds": 10 })
    );

    let mut spec = machine_spec();
    spec["deletion"] = json!({ "nodeDrainTimeoutSeconds": 60 });
    let object = defaulted("machines", &machine(spec));
    assert_eq!(
        object["spec"]["deletion"],
        json!({ "nodeDrainTimeoutSeconds": 60, "nodeDeletionTimeoutSeconds": 10 })
    );

    let mut spec = machine_spec();
    spec["deletion"] = json!({ "nodeDeletionTimeoutSeconds": 0 });
    let object = defaulted("machines", &machine(spec));
    assert_eq!(
        object["spec"]["deletion"]["nodeDeletionTimeoutSeconds"], 0,
        "0 is kept: retry for ever"
    );
}

#[test]
fn machine_templates_are_not_defaulted() {
    // Upstream defaults Machines only; MachineSet and MachineDeployment templates stay as written.
    let set = json!({ "spec": { "clusterName": "dev", "selector": {}, "template": { "spec": machine_spec() } } });
    let object = defaulted("machinesets", &set);
    assert_eq!(object["spec"]["template"]["spec"].get("deletion"), None);
}

fn machine_set_spec() -> Value {
    json!({
        "clusterName": "dev",
        "replicas": 3,
        "selector": { "matchLabels": { "nodepool": "a" } },
        "template": { "metadata": { "labels": { "nodepool": "a" } }, "spec": machine_spec() },
    })
}

fn machine_deployment(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineDeployment",
        "metadata": { "name": name, "namespace": "default" },
        "spec": spec,
    })
}

#[test]
fn machine_deployment_rollout_defaults_to_rolling_update_1_0() {
    // machinedeployment.go Default: strategy RollingUpdate, maxSurge 1, maxUnavailable 0.
    let rolling_update =
        json!({ "type": "RollingUpdate", "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } });
    let object = defaulted(
        "machinedeployments",
        &machine_deployment("md", machine_set_spec()),
    );
    assert_eq!(
        object["spec"]["rollout"],
        json!({ "strategy": rolling_update })
    );

    let mut spec = machine_set_spec();
    spec["rollout"] = json!({ "after": "2026-05-01T00:00:00Z" });
    let object = defaulted("machinedeployments", &machine_deployment("md", spec));
    assert_eq!(object["spec"]["rollout"]["strategy"], rolling_update);

    let mut spec = machine_set_spec();
    spec["rollout"] =
        json!({ "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%" } } });
    let object = defaulted("machinedeployments", &machine_deployment("md", spec));
    assert_eq!(
        object["spec"]["rollout"]["strategy"]["rollingUpdate"],
        json!({ "maxSurge": "25%", "maxUnavailable": 0 })
    );

    let mut spec = machine_set_spec();
    spec["rollout"] = json!({ "strategy": { "type": "OnDelete" } });
    let object = defaulted("machinedeployments", &machine_deployment("md", spec));
    assert_eq!(
        object["spec"]["rollout"]["strategy"],
        json!({ "type": "OnDelete" }),
        "OnDelete gets no bounds"
    );
}
