//! The object graph on a cluster shaped as upstream's `mover_test.go` "Cluster with
//! MachineDeployment" case: what moves, and the creation order by owner depth.

use kube::api::ApiResource;
use serde_json::{Value, json};

use super::{ObjectGraph, ObjectType};

fn object_type(group: &str, kind: &str) -> ObjectType {
    ObjectType {
        resource: ApiResource {
            group: group.into(),
            version: "v1beta2".into(),
            api_version: format!("{group}/v1beta2"),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        },
        status_subresource: true,
        move_all: false,
        hierarchy_root: false,
    }
}

const CORE: &str = "cluster.x-k8s.io";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";

fn types() -> Vec<ObjectType> {
    vec![
        object_type(CORE, "Cluster"),
        object_type(CORE, "MachineDeployment"),
        object_type(CORE, "MachineSet"),
        object_type(CORE, "Machine"),
        object_type(INFRA, "DevCluster"),
        object_type(INFRA, "DevMachine"),
        object_type(INFRA, "DevMachineTemplate"),
        object_type("", "Secret"),
        object_type("", "ConfigMap"),
        object_type(CORE, "MachineHealthCheck"),
    ]
}

fn object(name: &str, uid: &str, owners: &[&str], labels: Value, spec: Value) -> Value {
    let owner_references: Vec<Value> = owners
        .iter()
        .map(|owner| json!({ "apiVersion": "x/v1", "kind": "Owner", "name": "o", "uid": owner }))
        .collect();
    json!({
        "metadata": {
            "name": name, "namespace": "ns", "uid": uid,
            "ownerReferences": owner_references, "labels": labels,
        },
        "spec": spec,
    })
}

fn sequence(graph: &ObjectGraph) -> Vec<Vec<String>> {
    graph
        .groups()
        .into_iter()
        .map(|group| {
            group
                .into_iter()
                .map(|node| format!("{}/{}", node.key.kind, node.key.name))
                .collect()
        })
        .collect()
}

#[test]
fn a_cluster_with_a_machine_deployment_moves_owners_first() {
    let cluster_label = json!({ "cluster.x-k8s.io/cluster-name": "c" });
    let objects = vec![
        (
            5,
            object(
                "m1",
                "devmachine",
                &["machine"],
                cluster_label.clone(),
                json!({}),
            ),
        ),
        (
            3,
            object(
                "m1",
                "machine",
                &["ms"],
                cluster_label.clone(),
                json!({
                    "clusterName": "c",
                    "bootstrap": { "dataSecretName": "bootstrap-data" },
                    "infrastructureRef": { "apiGroup": INFRA, "kind": "DevMachine", "name": "m1" },
                }),
            ),
        ),
        (
            2,
            object("ms", "ms", &["md"], cluster_label.clone(), json!({})),
        ),
        (
            1,
            object(
                "md",
                "md",
                &["cluster"],
                cluster_label.clone(),
                json!({ "template": { "spec": {
                    "infrastructureRef": { "apiGroup": INFRA, "kind": "DevMachineTemplate", "name": "tpl" },
                } } }),
            ),
        ),
        (
            0,
            object(
                "c",
                "cluster",
                &[],
                json!({}),
                json!({ "infrastructureRef": { "apiGroup": INFRA, "kind": "DevCluster", "name": "c" } }),
            ),
        ),
        (
            4,
            object("c", "devcluster", &["cluster"], json!({}), json!({})),
        ),
        // Referenced from the MachineDeployment only; no owner.
        (6, object("tpl", "tpl", &[], json!({}), json!({}))),
        // Soft-owned by name (the kubeconfig), by label, and referenced by dataSecretName.
        (
            7,
            object("c-kubeconfig", "kubeconfig", &[], json!({}), Value::Null),
        ),
        (
            7,
            object("bootstrap-data", "bootstrap", &[], json!({}), Value::Null),
        ),
        (
            8,
            object("addons", "addons", &[], cluster_label.clone(), Value::Null),
        ),
        // Not linked to any Cluster: left behind, as upstream does.
        (
            7,
            object("unrelated", "unrelated", &[], json!({}), Value::Null),
        ),
        (
            7,
            object("cc-kubeconfig", "other-prefix", &[], json!({}), Value::Null),
        ),
        // Named by spec.clusterName only, as a MachineHealthCheck may be.
        (
            9,
            object("mhc", "mhc", &[], json!({}), json!({ "clusterName": "c" })),
        ),
        // The move label makes a root of anything.
        (
            8,
            object(
                "labelled",
                "labelled",
                &[],
                json!({ "clusterctl.cluster.x-k8s.io/move": "" }),
                Value::Null,
            ),
        ),
    ];
    let graph = ObjectGraph::build(types(), objects);
    assert_eq!(
        sequence(&graph),
        vec![
            vec![
                "Cluster/c",
                "ConfigMap/labelled",
                "DevMachineTemplate/tpl",
                "Secret/bootstrap-data",
            ],
            vec![
                "ConfigMap/addons",
                "DevCluster/c",
                "MachineDeployment/md",
                "MachineHealthCheck/mhc",
                "Secret/c-kubeconfig",
            ],
            vec!["MachineSet/ms"],
            vec!["Machine/m1"],
            vec!["DevMachine/m1"],
        ]
    );
    assert_eq!(graph.clusters().count(), 1);
}

#[test]
fn an_owner_cycle_does_not_hang_and_moves_both() {
    let objects = vec![
        (0, object("c", "cluster", &[], json!({}), json!({}))),
        (
            3,
            object(
                "a",
                "a",
                &["b"],
                json!({ "cluster.x-k8s.io/cluster-name": "c" }),
                json!({}),
            ),
        ),
        (3, object("b", "b", &["a"], json!({}), json!({}))),
    ];
    let graph = ObjectGraph::build(types(), objects);
    let names: Vec<&str> = graph
        .nodes
        .iter()
        .map(|node| node.key.name.as_str())
        .collect();
    assert_eq!(names.len(), 3);
    assert!(names.contains(&"a") && names.contains(&"b"));
}
