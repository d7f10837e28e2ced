//! The CustomResourceDefinitions of the `cluster.x-k8s.io` kinds, generated from the Rust types.
//!
//! `kube`'s derive produces most of each CRD; [`finish`] turns it into what upstream serves:
//! optional fields are not nullable (upstream's API server drops a `null` instead of storing it),
//! the root lists `apiVersion`, `kind` and `metadata`, and `listKind` is explicit. The few
//! rules that belong to one kind's root and cannot be written on a Rust type are added here too.
//!
//! Providers finish their own CRDs the same way, with the labels a provider's CRDs carry
//! ([`finish_provider`]).
//!
//! The checked-in copies under `crates/corral-api/crds/` are regenerated with
//! `CORRAL_UPDATE_CRDS=1 cargo test -p corral-api`; a test fails while they are stale.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Value, json};

use crate::machine::DEFAULT_NODE_DELETION_TIMEOUT_SECONDS;
use crate::{Cluster, Machine, MachineDeployment, MachineHealthCheck, MachineSet};

/// The CRDs of the five `cluster.x-k8s.io/v1beta2` kinds Corral implements, then clusterctl's
/// provider inventory (`providers.clusterctl.cluster.x-k8s.io`), in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        finish(Cluster::crd(), |_| {}),
        finish(Machine::crd(), machine_defaults),
        finish(MachineDeployment::crd(), |_| {}),
        finish(MachineHealthCheck::crd(), |_| {}),
        finish(MachineSet::crd(), |_| {}),
        crate::clusterctl::provider_crd(),
    ]
}

/// Turns the derive's CRD into what upstream serves: `listKind` explicit, every schema fixed by
/// [`walk_schemas`], the root without a title and with `apiVersion`, `kind` and `metadata`, and
/// an empty `subresources` for a kind without a status (as upstream writes); then
/// `kind_rules` applies the kind's own changes to each version's `openAPIV3Schema`.
pub fn finish(
    crd: CustomResourceDefinition,
    kind_rules: impl Fn(&mut Value),
) -> CustomResourceDefinition {
    let crd = serde_json::to_value(crd).expect("a CRD serializes");
    finish_value(crd, &kind_rules)
}

/// [`finish`] for a provider's CRD: also labelled with the contract label
/// (`cluster.x-k8s.io/v1beta2: <version>`, by which core finds the API version of a referenced
/// kind) and the labels clusterctl puts on what it installs (`clusterctl.cluster.x-k8s.io` and
/// `cluster.x-k8s.io/provider: <provider>`).
pub fn finish_provider(
    crd: CustomResourceDefinition,
    version: &str,
    provider: &str,
    kind_rules: impl Fn(&mut Value),
) -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(crd).expect("a CRD serializes");
    crd["metadata"]["labels"] = json!({
        crate::contract::ContractVersion::V1Beta2.crd_label(): version,
        crate::labels::CLUSTERCTL: "",
        crate::labels::PROVIDER_NAME: provider,
    });
    finish_value(crd, &kind_rules)
}

fn finish_value(mut crd: Value, kind_rules: &dyn Fn(&mut Value)) -> CustomResourceDefinition {
    crd["spec"]["names"]["listKind"] = json!(format!(
        "{}List",
        crd["spec"]["names"]["kind"]
            .as_str()
            .expect("the derive sets a kind")
    ));
    for version in crd["spec"]["versions"]
        .as_array_mut()
        .expect("the derive sets versions")
    {
        let root = &mut version["schema"]["openAPIV3Schema"];
        walk_schemas(root);
        let root = root.as_object_mut().expect("a root schema is an object");
        root.remove("title");
        let properties = root["properties"]
            .as_object_mut()
            .expect("the root has properties");
        properties.insert("apiVersion".into(), json!({
            "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.",
            "type": "string",
        }));
        properties.insert("kind".into(), json!({
            "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase.",
            "type": "string",
        }));
        properties.insert("metadata".into(), json!({ "type": "object" }));
        // Upstream writes an empty subresources object for kinds without a status.
        if version.get("subresources").is_none_or(Value::is_null) {
            version["subresources"] = json!({});
        }
        kind_rules(&mut version["schema"]["openAPIV3Schema"]);
    }
    serde_json::from_value(crd).expect("the finished CRD is still a CRD")
}

/// Fixes what the derive writes differently from upstream, in every schema of a tree:
///
/// - It puts `nullable: true` on every `Option`. Upstream's schemas never allow null: an API
///   server prunes a null in a non-nullable field, so a client sending one gets the field unset,
///   as with upstream.
/// - Its structural rewrite empties the `anyOf` of an int-or-string to `[{}, {}]`; upstream
///   writes the two alternatives, which is what a reader of the schema wants to see.
pub fn walk_schemas(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            object.remove("nullable");
            if object.get("x-kubernetes-int-or-string") == Some(&json!(true)) {
                object.insert(
                    "anyOf".into(),
                    json!([{ "type": "integer" }, { "type": "string" }]),
                );
            }
            object.values_mut().for_each(walk_schemas);
        }
        Value::Array(items) => items.iter_mut().for_each(walk_schemas),
        _ => {}
    }
}

/// The default of upstream's Machine webhook (`core/webhooks/admission/machine.go`) that a
/// schema can say: `spec.deletion.nodeDeletionTimeoutSeconds` defaults to 10. The MachineSpec
/// type is shared with the templates of MachineSets and MachineDeployments, where upstream does
/// not default it, so this is done on the Machine's CRD rather than on the type. The webhook's
/// validation is `admission::machine`.
fn machine_defaults(root: &mut Value) {
    let spec = &mut root["properties"]["spec"];
    let timeout = DEFAULT_NODE_DELETION_TIMEOUT_SECONDS;
    let deletion = &mut spec["properties"]["deletion"];
    deletion["default"] = json!({ "nodeDeletionTimeoutSeconds": timeout });
    deletion["properties"]["nodeDeletionTimeoutSeconds"]["default"] = json!(timeout);
}

/// Adds an `x-kubernetes-validations` rule to a JSON schema (for a CRD's schema after the
/// derive; [`crate::schema::add_rule`] is the same on a `schemars::Schema`).
pub fn add_rule(schema: &mut Value, rule: &str, message: &str) {
    let rules = schema
        .as_object_mut()
        .expect("rules go on object schemas")
        .entry("x-kubernetes-validations")
        .or_insert_with(|| json!([]));
    rules
        .as_array_mut()
        .expect("x-kubernetes-validations is a list")
        .push(json!({ "rule": rule, "message": message }));
}
