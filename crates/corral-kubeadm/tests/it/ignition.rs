//! `spec.format: ignition` end to end: the first control plane machine of a Cluster without a
//! control plane provider gets an Ignition config (upstream's v2.3 shape) in its data Secret
//! and comes up on the in-memory provider; a worker whose KubeadmConfig asks for what Corral
//! cannot render (a Container Linux Config to merge) gets a condition naming the field.

use corral_api::Machine;
use corral_kubeadm::api::bootstrap::KubeadmConfig;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::{Value, json};

use crate::plane::{INFRA_GROUP, Plane, eventually};

/// The bytes of a `data:,` URL.
fn decode_data_url(url: &str) -> String {
    let encoded = url.strip_prefix("data:,").expect("a data URL");
    let mut out = Vec::new();
    let mut index = 0;
    while index < encoded.len() {
        if &encoded[index..index + 1] == "%" {
            out.push(u8::from_str_radix(&encoded[index + 1..index + 3], 16).unwrap());
            index += 3;
        } else {
            out.push(encoded.as_bytes()[index]);
            index += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The decoded contents of each file of an Ignition config, by path.
fn files(ignition: &Value) -> std::collections::BTreeMap<String, String> {
    ignition["storage"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            (
                file["path"].as_str().unwrap().to_string(),
                decode_data_url(file["contents"]["source"].as_str().unwrap()),
            )
        })
        .collect()
}

async fn machine(plane: &Plane, name: &str, control_plane: bool, config: Value) {
    let labels = if control_plane {
        json!({ "cluster.x-k8s.io/control-plane": "" })
    } else {
        json!({})
    };
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevMachine",
            "metadata": { "name": name },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2", "kind": "KubeadmConfig",
            "metadata": { "name": name },
            "spec": config,
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": { "name": name, "labels": labels },
            "spec": {
                "clusterName": "ign",
                "version": "v1.35.0",
                "bootstrap": { "configRef": {
                    "apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": name } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevMachine", "name": name },
            },
        }))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignition_machine_gets_an_ignition_config_and_what_corral_cannot_render_is_named() {
    let plane = Plane::start().await;
    plane
        .create(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DevCluster",
            "metadata": { "name": "ign" },
            "spec": { "backend": { "inMemory": {} } },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": { "name": "ign" },
            "spec": {
                "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] } },
                "infrastructureRef": { "apiGroup": INFRA_GROUP, "kind": "DevCluster", "name": "ign" },
            },
        }))
        .await;
    plane
        .create(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": { "name": "motd" },
            "stringData": { "text": "welcome to ignition" },
        }))
        .await;
    machine(
        &plane,
        "ign-cp-0",
        true,
        json!({
            "format": "ignition",
            "clusterConfiguration": { "apiServer": { "certSANs": ["localhost"] } },
            "files": [
                { "path": "/etc/motd", "contentFrom": { "secret": { "name": "motd", "key": "text" } } },
                { "path": "/etc/flag", "encoding": "base64", "content": "b24=", "permissions": "0600" },
            ],
            "users": [{ "name": "core", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"], "sudo": "ALL=(ALL) NOPASSWD:ALL" }],
            "preKubeadmCommands": ["echo before"],
        }),
    )
    .await;

    let secrets: Api<Secret> = plane.api();
    let secret = eventually("the ignition data Secret", || async {
        secrets.get_opt("ign-cp-0").await.unwrap()
    })
    .await;
    let data = secret.data.unwrap();
    assert_eq!(data["format"].0, b"ignition");
    let ignition: Value = serde_json::from_slice(&data["value"].0).expect("the value is JSON");
    assert_eq!(ignition["ignition"]["version"], "2.3.0");
    let written = files(&ignition);
    let kubeadm = &written["/etc/kubeadm.yml"];
    assert!(
        kubeadm.starts_with("---\n") && !kubeadm.starts_with("---\n---"),
        "{kubeadm}"
    );
    assert!(
        kubeadm.contains("kind: ClusterConfiguration")
            && kubeadm.contains("kind: InitConfiguration")
            && kubeadm.contains("- localhost"),
        "{kubeadm}"
    );
    assert!(written["/etc/kubeadm.sh"].contains("kubeadm init --config /etc/kubeadm.yml"));
    assert_eq!(written["/etc/motd"], "welcome to ignition");
    assert_eq!(written["/etc/flag"], "on");
    assert!(written["/etc/kubernetes/pki/ca.crt"].starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(
        written["/etc/sudoers.d/core"],
        "core ALL=(ALL) NOPASSWD:ALL\n"
    );
    assert_eq!(ignition["passwd"]["users"][0]["name"], "core");
    assert_eq!(
        ignition["passwd"]["users"][0]["sshAuthorizedKeys"],
        json!(["ssh-ed25519 AAAA"])
    );
    assert_eq!(ignition["systemd"]["units"][0]["name"], "kubeadm.service");

    // The machine boots with it (the in-memory provider only needs the data to exist).
    let machines: Api<Machine> = plane.api();
    eventually("the ignition machine to have a Node", || async {
        machines.get("ign-cp-0").await.unwrap().status?.node_ref
    })
    .await;

    // A worker with a Container Linux Config to merge: refused, with the field named.
    machine(
        &plane,
        "ign-worker-0",
        false,
        json!({
            "format": "ignition",
            "ignition": { "containerLinuxConfig": { "additionalConfig": "storage:\n  files: []\n" } },
        }),
    )
    .await;
    let configs: Api<KubeadmConfig> = plane.api();
    let message = eventually("DataSecretAvailable False", || async {
        let config = configs.get("ign-worker-0").await.unwrap();
        let condition = config
            .status?
            .conditions
            .into_iter()
            .find(|c| c.type_ == "DataSecretAvailable")?;
        (condition.status == "False" && condition.message.contains("additionalConfig"))
            .then_some(condition.message)
    })
    .await;
    assert!(
        message.starts_with("spec.ignition.containerLinuxConfig.additionalConfig"),
        "{message}"
    );
    assert!(secrets.get_opt("ign-worker-0").await.unwrap().is_none());

    plane.stop().await;
}
