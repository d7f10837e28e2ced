//! The CRDs of the Dev* kinds, generated from the Rust types.
//!
//! As in `corral-api`, kube's derive produces most of each CRD and [`finish`] turns it into what
//! upstream serves: optional fields are not nullable, the root lists `apiVersion`, `kind` and
//! `metadata`, and `listKind` is explicit. It also adds the labels a provider's CRDs carry: the
//! contract label `cluster.x-k8s.io/v1beta2: v1beta2`, by which core finds the API version of a
//! referenced kind, and the labels clusterctl puts on what it installs.
//!
//! The checked-in copies under `crates/corral-infra-inmemory/crds/` are regenerated with
//! `CORRAL_UPDATE_CRDS=1 cargo test -p corral-infra-inmemory`; a test fails while they are
//! stale.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::{
    DevCluster, DevClusterTemplate, DevMachine, DevMachineTemplate, PROVIDER_LABEL_VALUE, VERSION,
};

/// The CRDs of the four kinds, in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        finish(DevCluster::crd()),
        finish(DevClusterTemplate::crd()),
        finish(DevMachine::crd()),
        finish(DevMachineTemplate::crd()),
    ]
}

fn finish(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(crd).expect("a CRD serializes");
    let labels = json!({
        corral_api::contract::ContractVersion::V1Beta2.crd_label(): VERSION,
        corral_api::labels::CLUSTERCTL: "",
        corral_api::labels::PROVIDER_NAME: PROVIDER_LABEL_VALUE,
    });
    crd["metadata"]["labels"] = labels;
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
    }
    serde_json::from_value(crd).expect("the finished CRD is still a CRD")
}

/// Fixes what the derive writes differently from upstream, in every schema of a tree:
///
/// - It puts `nullable: true` on every `Option`. Upstream's schemas never allow null: an API
///   server prunes a null in a non-nullable field, so a client sending one gets the field unset,
///   as with upstream.
/// - Its structural rewrite empties the `anyOf` of an int-or-string to `[{}, {}]`; upstream
///   writes the two alternatives.
fn walk_schemas(schema: &mut Value) {
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
