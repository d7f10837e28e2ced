//! `corral up --demo --infrastructure local`: the management plane serves the local provider
//! itself and the demo cluster — three control plane machines and two workers — runs on real
//! machines of this host. The cluster becomes Available with five Ready Nodes that answer
//! `kubectl get nodes` from the cluster's own API servers over TLS (through `corral get
//! kubeconfig`), its etcd has three members, a killed worker is remediated by a
//! MachineHealthCheck and replaced, and deleting the cluster leaves nothing on the host. Needs
//! root, iproute2 and etcd (CI has them); fails saying so without them.

use std::process::Stdio;
use std::time::{Duration, Instant};

use corral_kubeadm::certs::{self, KeyMaterial, Leaf};
use corral_provider_local::host::Host;
use kube::api::{ApiResource, DynamicObject};

use crate::local_cluster::{has_condition, kubectl_apply};
use crate::node_agent::{Cleanup, require_root};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(unsafe_code)]
async fn the_demo_on_local_infrastructure_runs_three_control_plane_machines_and_two_workers() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let _cleanup = Cleanup {
        host: Host::new(data.join("local"), 77).unwrap(),
        cluster: "demo".into(),
    };
    let log_path = dir.path().join("up.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let started = Instant::now();
    let mut up = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "up",
            "--demo",
            "--infrastructure",
            "local",
            "--listen",
            "127.0.0.1:0",
            "--log-to-stderr",
            "--data-dir",
        ])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let kubeconfig = data.join("kubeconfig");
    for _ in 0..600 {
        if kubeconfig.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let said = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let client = kube::Client::try_from(crate::support::client_config(&kubeconfig).await).unwrap();
    let clusters: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::erase::<corral_api::Cluster>(&()),
    );
    let deployments: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::erase::<corral_api::MachineDeployment>(&()),
    );
    let control_planes: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        "default",
        &corral_cli::resource::Kind::KubeadmControlPlane.resource(),
    );
    let mut available_after = None;
    for _ in 0..3000 {
        if let Ok(Some(status)) = up.try_wait() {
            panic!("corral up exited with {status}:\n{}", said());
        }
        let cluster = clusters.get_opt("demo").await.ok().flatten();
        let workers = deployments
            .get_opt("demo-md-0")
            .await
            .ok()
            .flatten()
            .and_then(|md| md.data["status"]["readyReplicas"].as_i64());
        let control_plane_machines = control_planes
            .get_opt("demo-control-plane")
            .await
            .ok()
            .flatten()
            .and_then(|kcp| kcp.data["status"]["readyReplicas"].as_i64());
        if cluster
            .as_ref()
            .is_some_and(|c| has_condition(c, "Available", "True"))
            && workers == Some(2)
            && control_plane_machines == Some(3)
        {
            available_after = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let last_status = clusters
        .get_opt("demo")
        .await
        .ok()
        .flatten()
        .map(|c| c.data["status"].clone())
        .unwrap_or_default();
    let available_after = available_after.unwrap_or_else(|| {
        panic!(
            "the demo cluster did not become Available with 3 Ready control plane machines and 2 Ready workers in 300 s: {last_status:#}\ncorral up said:\n{}",
            said()
        )
    });
    eprintln!(
        "measure: corral up --demo --infrastructure local: 3+2 Available {:.1} s after start",
        available_after.as_secs_f64()
    );

    // kubectl against the cluster's own API servers, with the kubeconfig Corral keeps for it.
    let workload_kubeconfig = dir.path().join("demo.kubeconfig");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["get", "kubeconfig", "demo", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    std::fs::write(&workload_kubeconfig, &output.stdout).unwrap();
    let nodes = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&workload_kubeconfig)
        .args(["get", "nodes", "-o", "json"])
        .output()
        .expect("kubectl");
    assert!(nodes.status.success(), "{nodes:?}");
    let nodes: serde_json::Value = serde_json::from_slice(&nodes.stdout).unwrap();
    let items = nodes["items"].as_array().unwrap();
    let names: Vec<&str> = items
        .iter()
        .filter_map(|node| node["metadata"]["name"].as_str())
        .collect();
    assert_eq!(items.len(), 5, "{names:?}");
    for node in items {
        let ready = node["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        assert!(ready, "{node:#}");
        assert!(
            node["spec"]["providerID"]
                .as_str()
                .is_some_and(|id| id.starts_with("local://")),
            "{node:#}"
        );
    }
    let server = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(server.contains("server: https://"), "{server}");

    // etcd through the cluster's etcd CA: three members.
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(client.clone(), "default");
    let etcd_ca = secrets.get("demo-etcd").await.unwrap();
    let data_of =
        |key: &str| String::from_utf8(etcd_ca.data.as_ref().unwrap()[key].0.clone()).unwrap();
    let ca = KeyMaterial {
        certificate_pem: data_of("tls.crt"),
        private_key_pem: data_of("tls.key"),
    };
    let client_certificate = certs::issue(
        &ca,
        &Leaf {
            common_name: "test-etcd-client",
            client: true,
            validity: time::Duration::hours(1),
            ..Leaf::default()
        },
        time::OffsetDateTime::now_utc(),
    )
    .unwrap();
    let pki = dir.path().join("etcd-client");
    std::fs::create_dir_all(&pki).unwrap();
    std::fs::write(pki.join("ca.crt"), &ca.certificate_pem).unwrap();
    std::fs::write(pki.join("client.crt"), &client_certificate.certificate_pem).unwrap();
    std::fs::write(pki.join("client.key"), &client_certificate.private_key_pem).unwrap();
    let tls = corral_store::etcd::EtcdTls::from_files(
        Some(&pki.join("ca.crt")),
        Some(&pki.join("client.crt")),
        Some(&pki.join("client.key")),
    )
    .unwrap();
    let control_plane = items
        .iter()
        .find(|node| {
            node["metadata"]["labels"]
                .get("node-role.kubernetes.io/control-plane")
                .is_some()
        })
        .unwrap();
    let address = control_plane["status"]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["type"] == "InternalIP")
        .unwrap()["address"]
        .as_str()
        .unwrap()
        .to_owned();
    let channel = corral_store::etcd::channel(&format!("https://{address}:2379"), &tls).unwrap();
    let members = corral_store::etcd::pb::cluster_client::ClusterClient::new(channel)
        .member_list(corral_store::etcd::pb::MemberListRequest { linearizable: true })
        .await
        .unwrap()
        .into_inner()
        .members;
    assert_eq!(members.len(), 3, "{members:?}");

    // A worker dies (every process of the machine, killed): its Node goes Ready=Unknown once
    // the control plane's grace period passes, a MachineHealthCheck remediates it, and a new
    // machine joins in its place; the dead machine's namespace is gone.
    let host = Host::new(data.join("local"), 77).unwrap();
    let health_check = "apiVersion: cluster.x-k8s.io/v1beta2\nkind: MachineHealthCheck\n\
        metadata:\n  name: demo-workers\n  namespace: default\n\
        spec:\n  clusterName: demo\n  selector:\n    matchLabels:\n      \
        cluster.x-k8s.io/deployment-name: demo-md-0\n  checks:\n    \
        unhealthyNodeConditions:\n    - type: Ready\n      status: Unknown\n      \
        timeoutSeconds: 5\n    - type: Ready\n      status: \"False\"\n      timeoutSeconds: 5\n";
    kubectl_apply(&kubeconfig, health_check).await;
    let workers = host
        .machines()
        .await
        .unwrap()
        .into_iter()
        .filter(|machine| machine.name.starts_with("demo-md-0"))
        .collect::<Vec<_>>();
    assert_eq!(workers.len(), 2, "{workers:?}");
    let victim = workers[0].clone();
    let killed_at = Instant::now();
    for pid in host.cgroup(&victim.uid).processes().unwrap() {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let machines: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::erase::<corral_api::Machine>(&()),
    );
    let mut replaced_after = None;
    for _ in 0..1800 {
        let victim_gone = machines
            .get_opt(&victim.name)
            .await
            .ok()
            .flatten()
            .is_none();
        let ready = deployments
            .get_opt("demo-md-0")
            .await
            .ok()
            .flatten()
            .and_then(|md| md.data["status"]["readyReplicas"].as_i64());
        let namespace_gone = !std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).contains(&victim.netns))
            .unwrap_or(true);
        if victim_gone && ready == Some(2) && namespace_gone {
            replaced_after = Some(killed_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let replaced_after = replaced_after.unwrap_or_else(|| {
        panic!(
            "the killed worker {} was not remediated and replaced in 180 s:\n{}",
            victim.name,
            said()
        )
    });
    eprintln!(
        "measure: a killed worker replaced (MachineHealthCheck, new machine Ready) {:.1} s after the kill (grace period 40 s, timeout 5 s)",
        replaced_after.as_secs_f64()
    );
    let workers_now: Vec<String> = host
        .machines()
        .await
        .unwrap()
        .into_iter()
        .filter(|machine| machine.name.starts_with("demo-md-0"))
        .map(|machine| machine.name)
        .collect();
    assert_eq!(workers_now.len(), 2, "{workers_now:?}");
    assert!(!workers_now.contains(&victim.name), "{workers_now:?}");

    // Deleting the cluster leaves nothing on the host.
    clusters.delete("demo", &Default::default()).await.unwrap();
    for _ in 0..1200 {
        if clusters.get_opt("demo").await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        clusters.get_opt("demo").await.unwrap().is_none(),
        "the demo cluster was not deleted:\n{}",
        said()
    );
    let host = Host::new(data.join("local"), 77).unwrap();
    assert_eq!(
        host.machines().await.unwrap(),
        vec![],
        "machines left on the host"
    );
}
