//! `corral provider local`, the local provider as a plugin, called as Corral calls providers
//! (the SDK's client over gRPC): a cluster's endpoint, a control plane machine that bootstraps
//! for real, idempotent creates, a machine whose bootstrap data is bad reported FAILED with
//! the agent's reason, a restart of the plugin that loses nothing, and deletes that leave
//! nothing. Needs root, iproute2 and etcd (CI has them).

use std::process::Stdio;
use std::time::Duration;

use corral_kubeadm::bootstrap::cloud_init::KubeadmCommand;
use corral_provider_local::host::Host;
use corral_provider_sdk::{Client, ClientConfig, v1};
use k8s_openapi::api::core::v1::Node;
use tokio::io::AsyncBufReadExt;

use crate::node_agent::{Cleanup, bootstrap_data, cluster_cas, require_root};

/// The plugin, serving on a free port; its address from the line it prints.
async fn start_plugin(state: &std::path::Path) -> (tokio::process::Child, String) {
    let etcd = corral_store::testing::EtcdProcess::find_binary()
        .expect("etcd is needed (apt-get install etcd-server, or set CORRAL_ETCD_BIN)");
    let mut plugin = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "provider",
            "local",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
        ])
        .arg(state)
        .arg("--etcd")
        .arg(etcd)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(plugin.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().expect("the serving line");
    let endpoint = line
        .strip_prefix("Serving the local provider on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    (plugin, endpoint)
}

fn machine_ref(cluster: &str, name: &str, uid: &str) -> v1::MachineRef {
    v1::MachineRef {
        namespace: "default".into(),
        name: name.into(),
        uid: uid.into(),
        cluster_name: cluster.into(),
        version: "v1.33.0".into(),
        ..Default::default()
    }
}

async fn state_of(client: &Client, machine: &v1::MachineRef) -> v1::Machine {
    client
        .get_machine(v1::GetMachineRequest {
            machine: Some(machine.clone()),
            provider_id: String::new(),
        })
        .await
        .unwrap()
}

async fn until_settled(client: &Client, machine: &v1::MachineRef) -> v1::Machine {
    for _ in 0..600 {
        let answer = state_of(client, machine).await;
        if answer.state() != v1::MachineState::Pending {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("machine {} stayed PENDING for 60 s", machine.name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_plugin_runs_real_machines_and_survives_its_restart() {
    require_root();
    let state = tempfile::tempdir().unwrap();
    let cluster = format!("plugin-{}", std::process::id());
    let _cleanup = Cleanup {
        host: Host::new(state.path(), 77).unwrap(),
        cluster: cluster.clone(),
    };
    let (plugin, endpoint) = start_plugin(state.path()).await;
    let client = Client::new(&ClientConfig::new(format!("{endpoint}"))).unwrap();
    let info = client.get_info(v1::GetInfoRequest {}).await.unwrap();
    assert_eq!(info.name, "local");
    assert_eq!(info.contract_versions, ["v1"]);

    let cluster_ref = v1::ClusterRef {
        namespace: "default".into(),
        name: cluster.clone(),
        uid: uuid::Uuid::new_v4().to_string(),
    };
    let reconciled = client
        .reconcile_cluster(v1::ReconcileClusterRequest {
            cluster: Some(cluster_ref.clone()),
            config: None,
        })
        .await
        .unwrap();
    assert!(reconciled.ready);
    let api = reconciled.control_plane_endpoint.unwrap();
    assert_eq!(api.port, 6443);
    let api_endpoint = format!("{}:{}", api.host, api.port);

    // A control plane machine, created twice (a repeated call): one machine, bootstrapped.
    let cas = cluster_cas();
    let control_plane = machine_ref(
        &cluster,
        &format!("{cluster}-cp-1"),
        &uuid::Uuid::new_v4().to_string(),
    );
    let create = v1::CreateMachineRequest {
        machine: Some(control_plane.clone()),
        config: None,
        bootstrap_data: bootstrap_data(&cas, &api_endpoint, KubeadmCommand::Init).into_bytes(),
        bootstrap_format: "cloud-config".into(),
    };
    let created = client.create_machine(create.clone()).await.unwrap();
    assert_eq!(
        created.provider_id,
        format!("local://{cluster}/{}", control_plane.name)
    );
    let again = client.create_machine(create).await.unwrap();
    assert_eq!(again.provider_id, created.provider_id);
    assert_eq!(again.addresses, created.addresses);
    let running = until_settled(&client, &control_plane).await;
    assert_eq!(running.state(), v1::MachineState::Running, "{running:?}");

    // The workload cluster answers through the endpoint the plugin serves.
    let host = Host::new(state.path(), 77).unwrap();
    let root = host.machine_dir(&control_plane.uid).join("root");
    let admin = std::fs::read_to_string(root.join("etc/kubernetes/admin.conf")).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&admin).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        config.cluster_url.to_string(),
        format!("https://{api_endpoint}/")
    );
    let nodes = kube::Api::<Node>::all(kube::Client::try_from(config).unwrap());
    let node = nodes.get(&control_plane.name).await.unwrap();
    assert_eq!(
        node.spec.unwrap().provider_id,
        Some(created.provider_id.clone())
    );

    // Bad bootstrap data: the machine fails, saying why.
    let broken = machine_ref(
        &cluster,
        &format!("{cluster}-broken"),
        &uuid::Uuid::new_v4().to_string(),
    );
    client
        .create_machine(v1::CreateMachineRequest {
            machine: Some(broken.clone()),
            config: None,
            bootstrap_data: b"{\"ignition\": {}}".to_vec(),
            bootstrap_format: "cloud-config".into(),
        })
        .await
        .unwrap();
    let failed = until_settled(&client, &broken).await;
    assert_eq!(failed.state(), v1::MachineState::Failed);
    assert!(failed.message.contains("not a #cloud-config"), "{failed:?}");

    // The plugin restarts: the machines are found again, the endpoint comes back.
    drop(plugin);
    let (_plugin, endpoint) = start_plugin(state.path()).await;
    let client = Client::new(&ClientConfig::new(endpoint)).unwrap();
    let listed = client
        .list_machines(v1::ListMachinesRequest {
            cluster_name: cluster.clone(),
        })
        .await
        .unwrap();
    assert_eq!(listed.machines.len(), 2, "{listed:?}");
    assert_eq!(
        state_of(&client, &control_plane).await.state(),
        v1::MachineState::Running
    );
    client
        .reconcile_cluster(v1::ReconcileClusterRequest {
            cluster: Some(cluster_ref.clone()),
            config: None,
        })
        .await
        .unwrap();
    assert!(
        nodes.get(&control_plane.name).await.is_ok(),
        "the endpoint is back"
    );

    // Deleting: the machine is gone, and so is the cluster's network.
    for machine in [&control_plane, &broken] {
        let deleted = client
            .delete_machine(v1::DeleteMachineRequest {
                machine: Some(machine.clone()),
                provider_id: String::new(),
            })
            .await
            .unwrap();
        assert!(deleted.deleted);
        let gone = client
            .get_machine(v1::GetMachineRequest {
                machine: Some(machine.clone()),
                provider_id: String::new(),
            })
            .await
            .unwrap_err();
        assert!(gone.is_not_found(), "{gone:?}");
    }
    let deleted = client
        .delete_cluster(v1::DeleteClusterRequest {
            cluster: Some(cluster_ref),
            config: None,
        })
        .await
        .unwrap();
    assert!(deleted.deleted);
    assert_eq!(host.machines().await.unwrap(), vec![]);
}

/// Runs `kubectl apply -f -` with `manifest` against the management plane, again while its
/// CRDs are still being installed (`corral up` writes the kubeconfig before them).
async fn kubectl_apply(kubeconfig: &std::path::Path, manifest: &str) {
    use std::io::Write;
    let kubectl = crate::support::kubectl().expect("kubectl is needed to apply the manifests");
    let mut last = None;
    for _ in 0..300 {
        let mut apply = std::process::Command::new(&kubectl)
            .args(["apply", "-f", "-", "--kubeconfig"])
            .arg(kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        apply
            .stdin
            .take()
            .unwrap()
            .write_all(manifest.as_bytes())
            .unwrap();
        let output = apply.wait_with_output().unwrap();
        if output.status.success() {
            return;
        }
        last = Some(output);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("kubectl apply kept failing: {last:?}");
}

/// The whole stack on real machines: `corral up` (the core controllers, the kubeadm providers,
/// the plugin provider), `corral provider local` registered with a ProviderPlugin, and a cluster
/// from `corral generate cluster --infrastructure plugin:local` with three control plane
/// machines. The KubeadmControlPlane reads the members of the cluster's real etcd and the
/// Cluster becomes Available; deleting it leaves no machine on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_cluster_on_the_local_provider_becomes_available() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let state = dir.path().join("local");
    let cluster = format!("real-{}", std::process::id());
    let _cleanup = Cleanup {
        host: Host::new(&state, 77).unwrap(),
        cluster: cluster.clone(),
    };
    let log = std::fs::File::create(dir.path().join("up.log")).unwrap();
    let _up = tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "up",
            "--listen",
            "127.0.0.1:0",
            "--log-to-stderr",
            "--data-dir",
        ])
        .arg(&data)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_plugin, endpoint) = start_plugin(&state).await;
    let kubeconfig = data.join("kubeconfig");
    for _ in 0..600 {
        if kubeconfig.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let client = kube::Client::try_from(crate::support::client_config(&kubeconfig).await).unwrap();
    kubectl_apply(
        &kubeconfig,
        &format!(
            "apiVersion: corral.dev/v1alpha1\nkind: ProviderPlugin\nmetadata:\n  name: local\nspec:\n  endpoint: {endpoint}\n"
        ),
    )
    .await;
    let generated = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "generate",
            "cluster",
            &cluster,
            "--infrastructure",
            "plugin:local",
        ])
        .args(["--kubernetes-version", "v1.33.0"])
        .args([
            "--control-plane-machine-count",
            "3",
            "--worker-machine-count",
            "0",
        ])
        .output()
        .unwrap();
    assert!(generated.status.success(), "{generated:?}");
    kubectl_apply(&kubeconfig, &String::from_utf8(generated.stdout).unwrap()).await;

    let clusters: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource {
            group: "cluster.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "cluster.x-k8s.io/v1beta2".into(),
            kind: "Cluster".into(),
            plural: "clusters".into(),
        },
    );
    let available = |object: &kube::api::DynamicObject| {
        object.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|condition| condition["type"] == "Available" && condition["status"] == "True")
    };
    let control_planes: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource {
            group: "controlplane.cluster.x-k8s.io".into(),
            version: "v1beta2".into(),
            api_version: "controlplane.cluster.x-k8s.io/v1beta2".into(),
            kind: "KubeadmControlPlane".into(),
            plural: "kubeadmcontrolplanes".into(),
        },
    );
    let control_plane = format!("{cluster}-control-plane");
    let mut last = None;
    for _ in 0..1800 {
        let ready = control_planes
            .get(&control_plane)
            .await
            .ok()
            .and_then(|kcp| kcp.data["status"]["readyReplicas"].as_i64());
        last = clusters.get(&cluster).await.ok();
        if ready == Some(3) && last.as_ref().is_some_and(available) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let last = last.expect("the Cluster");
    let kcp = control_planes.get(&control_plane).await.unwrap();
    assert!(
        available(&last) && kcp.data["status"]["readyReplicas"] == 3,
        "the Cluster did not become Available with three Ready control plane machines in 180 s: {:#} {:#}",
        last.data["status"],
        kcp.data["status"]
    );
    let host = Host::new(&state, 77).unwrap();
    assert_eq!(host.machines().await.unwrap().len(), 3);

    clusters
        .delete(&cluster, &Default::default())
        .await
        .unwrap();
    for _ in 0..1200 {
        if clusters.get_opt(&cluster).await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        clusters.get_opt(&cluster).await.unwrap().is_none(),
        "the Cluster was not deleted"
    );
    assert_eq!(
        host.machines().await.unwrap(),
        vec![],
        "machines left on the host"
    );
}
