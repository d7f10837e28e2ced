//! `corral node` in a real machine of the local provider (a network namespace with its own
//! cgroup): bootstrap data as the kubeadm bootstrap provider renders it for the first control
//! plane machine brings up a real etcd member and a Corral API server on it, reachable from
//! the host over TLS with the admin kubeconfig kubeadm would write, and a Ready Node that
//! heartbeats. Needs root, iproute2 and etcd (CI has them); fails saying so without them.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use corral_kubeadm::bootstrap::cloud_init::{self, CloudConfig, KubeadmCommand, WriteFile};
use corral_kubeadm::certs::{self, KeyAlgorithm, Purpose};
use corral_provider_local::host::{Host, MachineRequest};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::Api;

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "the node agent's tests run machines in network namespaces: run them as root, as CI does"
    );
}

/// The first control plane machine's bootstrap data: the cluster's four CAs (as the control
/// plane provider puts them in), and kubeadm's configuration with the endpoint on the machine.
fn bootstrap_data(endpoint: &str) -> String {
    let now = time::OffsetDateTime::now_utc();
    let mut files = Vec::new();
    for purpose in Purpose::ALL {
        let material = certs::generate(purpose, KeyAlgorithm::EcdsaP256, now).unwrap();
        let (certificate, key) = purpose.host_paths();
        files.push(WriteFile::root(certificate, material.certificate_pem));
        files.push(WriteFile {
            permissions: "0600".into(),
            ..WriteFile::root(key, material.private_key_pem)
        });
    }
    files.push(WriteFile::root(
        cloud_init::INIT_CONFIG_PATH,
        format!(
            "apiVersion: kubeadm.k8s.io/v1beta4\n\
             kind: ClusterConfiguration\n\
             clusterName: agent\n\
             kubernetesVersion: v1.33.0\n\
             controlPlaneEndpoint: {endpoint}\n\
             ---\n\
             apiVersion: kubeadm.k8s.io/v1beta4\n\
             kind: InitConfiguration\n\
             nodeRegistration:\n  name: '{{{{ ds.meta_data.local_hostname }}}}'\n"
        ),
    ));
    cloud_init::render(
        &CloudConfig {
            files,
            ..Default::default()
        },
        KubeadmCommand::Init,
    )
}

async fn eventually<T>(what: &str, log: &Path, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..600 {
        if let Some(value) = probe().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "{what} did not happen in 60 s; the agent said:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_control_plane_machine_runs_etcd_and_an_api_server_and_registers_its_node() {
    require_root();
    let etcd = corral_store::testing::EtcdProcess::find_binary()
        .expect("etcd is needed (apt-get install etcd-server, or set CORRAL_ETCD_BIN)");
    let state = tempfile::tempdir().unwrap();
    let host = Host::new(state.path(), 77).expect("a cgroup hierarchy");
    let cluster = format!("agent-{}", std::process::id());
    let machine = host
        .create_machine(&MachineRequest {
            uid: uuid(),
            namespace: "default".into(),
            name: format!("{cluster}-cp-1"),
            cluster_name: cluster.clone(),
        })
        .await
        .unwrap();
    let dir = host.machine_dir(&machine.uid);
    let root = dir.join("root");
    let endpoint = format!("{}:6443", machine.address);
    std::fs::write(dir.join("bootstrap-data"), bootstrap_data(&endpoint)).unwrap();
    let log = dir.join("agent.log");
    let output = std::fs::File::create(&log).unwrap();
    let mut agent = host
        .spawn(
            &machine,
            tokio::process::Command::new(env!("CARGO_BIN_EXE_corral"))
                .arg("node")
                .arg("--bootstrap-data")
                .arg(dir.join("bootstrap-data"))
                .arg("--root")
                .arg(&root)
                .args(["--machine-name", &machine.name])
                .args(["--provider-id", &machine.provider_id])
                .args(["--address", &machine.address.to_string()])
                .arg("--etcd")
                .arg(&etcd)
                .env("RUST_LOG", "info")
                .stdout(output.try_clone().unwrap())
                .stderr(output)
                .stdin(Stdio::null())
                .kill_on_drop(true),
        )
        .unwrap();

    // kubeadm's sentinel says the bootstrap succeeded.
    let sentinel = root.join("run/cluster-api/bootstrap-success.complete");
    eventually("the bootstrap sentinel", &log, async || {
        if let Ok(Some(status)) = agent.try_wait() {
            panic!(
                "the agent exited with {status}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        sentinel.exists().then_some(())
    })
    .await;

    // From the host, through the machine's address, with the admin.conf kubeadm writes.
    let admin = std::fs::read_to_string(root.join("etc/kubernetes/admin.conf")).unwrap();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&admin).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        config.cluster_url.to_string(),
        format!("https://{endpoint}/")
    );
    let client = kube::Client::try_from(config).unwrap();
    let node = Api::<Node>::all(client.clone())
        .get(&machine.name)
        .await
        .unwrap();
    let spec = node.spec.unwrap();
    assert_eq!(
        spec.provider_id.as_deref(),
        Some(machine.provider_id.as_str())
    );
    let status = node.status.unwrap();
    let ready = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|condition| condition.type_ == "Ready")
        .expect("a Ready condition");
    assert_eq!(ready.status, "True");
    let internal_ip = status
        .addresses
        .unwrap_or_default()
        .into_iter()
        .find(|address| address.type_ == "InternalIP")
        .map(|address| address.address);
    assert_eq!(internal_ip, Some(machine.address.to_string()));
    assert_eq!(status.node_info.unwrap().kubelet_version, "v1.33.0");
    let lease = Api::<Lease>::namespaced(client.clone(), "kube-node-lease")
        .get(&machine.name)
        .await
        .unwrap();
    assert_eq!(
        lease.spec.unwrap().holder_identity.as_deref(),
        Some(machine.name.as_str())
    );
    // The API server keeps its objects in the machine's etcd member.
    assert!(root.join("var/lib/etcd/member").is_dir());

    // The agent, etcd and the API server are all the machine's; deleting it ends them all.
    let processes = host.cgroup(&machine.uid).processes().unwrap();
    assert!(processes.len() >= 3, "{processes:?}");
    assert!(host.delete_machine(&machine.uid).await.unwrap());
    let _ = agent.wait().await;
    for pid in processes {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        assert!(
            matches!(state, None | Some('Z') | Some('X')),
            "process {pid} outlived its machine: {stat}"
        );
    }
    assert!(host.delete_network("default", &cluster).await.unwrap());
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
