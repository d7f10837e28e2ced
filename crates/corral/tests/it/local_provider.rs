//! `corral provider local`, the local provider as a plugin, called as Corral calls providers
//! (the SDK's client over gRPC): a cluster's endpoint, a control plane machine that bootstraps
//! for real, idempotent creates, a machine whose bootstrap data is bad reported FAILED with
//! the agent's reason, a restart of the plugin that loses nothing, and deletes that leave
//! nothing. Needs root, iproute2 and etcd (CI has them).

use std::time::Duration;

use corral_kubeadm::bootstrap::cloud_init::KubeadmCommand;
use corral_provider_local::host::Host;
use corral_provider_sdk::{Client, ClientConfig, v1};
use k8s_openapi::api::core::v1::Node;

use crate::local_cluster::{LocalCluster, Options, start_plugin};
use crate::node_agent::{Cleanup, bootstrap_data, cluster_cas, require_root};

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
    let (plugin, endpoint) = start_plugin(state.path(), &[]).await;
    let client = Client::new(&ClientConfig::new(endpoint.to_string())).unwrap();
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
    let (_plugin, endpoint) = start_plugin(state.path(), &[]).await;
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

/// The whole stack on real machines: `corral up` (the core controllers, the kubeadm providers,
/// the plugin provider), `corral provider local` registered with a ProviderPlugin, and a cluster
/// from `corral generate cluster --infrastructure plugin:local` with three control plane
/// machines. The KubeadmControlPlane reads the members of the cluster's real etcd and the
/// Cluster becomes Available; deleting it leaves nothing on the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_cluster_on_the_local_provider_becomes_available() {
    let cluster = LocalCluster::create(Options {
        prefix: "real",
        control_planes: 3,
        version: "v1.33.0",
        plugin_args: &[],
    })
    .await;
    cluster
        .until_converged(3, "v1.33.0", Duration::from_secs(180))
        .await;
    assert_eq!(cluster.track().await.len(), 3);
    assert_eq!(cluster.etcd_members().await.len(), 3);
    cluster.delete().await;
}
