//! `corral up`: the whole management plane in one process — the API server, the Cluster API
//! CRDs, the core controllers and the in-memory infrastructure provider — and, with `--demo`,
//! a demo cluster whose machines come up on screen.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

/// The field manager of everything `corral up` writes.
const FIELD_MANAGER: &str = "corral-up";

/// `corral up`: starts the API server on the data dir, installs the providers (CRDs and
/// inventory, as `corral init`), runs the controllers (as `corral controllers`, without an
/// election: this process owns its store) until SIGINT or SIGTERM.
pub async fn run(args: crate::UpArgs) -> anyhow::Result<()> {
    let server = crate::start_apiserver(&args.server).await?;
    let connection = corral_cli::Connection::for_url(&server.url())?;
    let client = connection.client.clone();
    corral_cli::components::init(&connection).await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let shutdown = async move {
        let mut stopped = stopped;
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let shutdown = futures::FutureExt::shared(Box::pin(shutdown));
    let cloud = args.cloud.open().await?;
    let controllers = corral_cli::components::start_controllers(client.clone(), cloud, shutdown);
    println!(
        "Corral is up. To use it:\n  export KUBECONFIG={}",
        args.server.data_dir.join("kubeconfig").display()
    );
    if args.demo {
        create_demo(&client, "demo").await?;
        tokio::select! {
            result = show_until_ready(&client, "demo") => result?,
            _ = crate::shutdown_signal() => {
                let _ = stop.send(true);
                let _ = controllers.await;
                server.shutdown().await;
                return Ok(());
            }
        }
        println!("Try: kubectl get clusters,machinedeployments,machines");
    }
    crate::shutdown_signal().await;
    tracing::info!("Shutting down");
    let _ = stop.send(true);
    let _ = controllers.await;
    server.shutdown().await;
    Ok(())
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The demo cluster: in-memory infrastructure, three control plane machines and a
/// MachineDeployment of three workers. Until a control plane provider exists, the control plane
/// is machine-based (Machines labelled as control plane, as upstream supports without a
/// `controlPlaneRef`), and bootstrap data is a fixed Secret.
fn demo_objects(name: &str) -> Vec<(ApiResource, Value)> {
    let infra = "infrastructure.cluster.x-k8s.io";
    let core = "cluster.x-k8s.io";
    let version = "v1.32.0";
    let machine_provisioning = json!({
        "vm": {"provisioning": {"startupDuration": "2s", "startupJitter": "0.2"}},
        "node": {"provisioning": {"startupDuration": "1s", "startupJitter": "0.2"}},
        "apiServer": {"provisioning": {"startupDuration": "1s", "startupJitter": "0.2"}},
        "etcd": {"provisioning": {"startupDuration": "1s", "startupJitter": "0.2"}},
    });
    let mut objects = vec![
        (
            resource("", "v1", "Secret", "secrets"),
            json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": format!("{name}-bootstrap"),
                             "labels": {"cluster.x-k8s.io/cluster-name": name}},
                "type": "cluster.x-k8s.io/secret",
                "stringData": {"value": "#cloud-config\n# simulated machines boot without bootstrap data\n", "format": "cloud-config"},
            }),
        ),
        (
            resource(infra, "v1beta2", "DevCluster", "devclusters"),
            json!({
                "apiVersion": format!("{infra}/v1beta2"), "kind": "DevCluster",
                "metadata": {"name": name},
                "spec": {"backend": {"inMemory": {}}},
            }),
        ),
        (
            resource(core, "v1beta2", "Cluster", "clusters"),
            json!({
                "apiVersion": format!("{core}/v1beta2"), "kind": "Cluster",
                "metadata": {"name": name},
                "spec": {
                    "clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}},
                    "infrastructureRef": {"apiGroup": infra, "kind": "DevCluster", "name": name},
                },
            }),
        ),
        (
            resource(
                infra,
                "v1beta2",
                "DevMachineTemplate",
                "devmachinetemplates",
            ),
            json!({
                "apiVersion": format!("{infra}/v1beta2"), "kind": "DevMachineTemplate",
                "metadata": {"name": format!("{name}-md-0")},
                "spec": {"template": {"spec": {"backend": {"inMemory": machine_provisioning}}}},
            }),
        ),
        (
            resource(core, "v1beta2", "MachineDeployment", "machinedeployments"),
            json!({
                "apiVersion": format!("{core}/v1beta2"), "kind": "MachineDeployment",
                "metadata": {"name": format!("{name}-md-0")},
                "spec": {
                    "clusterName": name,
                    "replicas": 3,
                    "selector": {"matchLabels": {"demo.corral.dev/pool": "md-0"}},
                    "template": {
                        "metadata": {"labels": {"demo.corral.dev/pool": "md-0"}},
                        "spec": {
                            "clusterName": name,
                            "version": version,
                            "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
                            "infrastructureRef": {"apiGroup": infra, "kind": "DevMachineTemplate", "name": format!("{name}-md-0")},
                        },
                    },
                },
            }),
        ),
    ];
    for index in 0..3 {
        let machine = format!("{name}-control-plane-{index}");
        objects.push((
            resource(infra, "v1beta2", "DevMachine", "devmachines"),
            json!({
                "apiVersion": format!("{infra}/v1beta2"), "kind": "DevMachine",
                "metadata": {"name": machine, "labels": {"cluster.x-k8s.io/cluster-name": name}},
                "spec": {"backend": {"inMemory": machine_provisioning}},
            }),
        ));
        objects.push((
            resource(core, "v1beta2", "Machine", "machines"),
            json!({
                "apiVersion": format!("{core}/v1beta2"), "kind": "Machine",
                "metadata": {"name": machine, "labels": {
                    "cluster.x-k8s.io/cluster-name": name,
                    "cluster.x-k8s.io/control-plane": "",
                }},
                "spec": {
                    "clusterName": name,
                    "version": version,
                    "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
                    "infrastructureRef": {"apiGroup": infra, "kind": "DevMachine", "name": machine},
                },
            }),
        ));
    }
    objects
}

/// Creates (or re-applies) the demo cluster in the `default` namespace.
pub async fn create_demo(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    for (resource, object) in demo_objects(name) {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let object_name = object["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        api.patch(
            &object_name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&object),
        )
        .await
        .with_context(|| format!("creating the demo {} {object_name}", resource.kind))?;
    }
    Ok(())
}

/// One line per machine of the cluster: name, phase, and the node it became.
async fn machine_lines(
    client: &kube::Client,
    cluster: &str,
) -> anyhow::Result<(Vec<String>, bool)> {
    let machines: Api<corral_api::Machine> = Api::namespaced(client.clone(), "default");
    let list = machines
        .list(
            &kube::api::ListParams::default()
                .labels(&format!("cluster.x-k8s.io/cluster-name={cluster}")),
        )
        .await
        .context("listing machines")?;
    let mut rows = BTreeMap::new();
    let mut all_running = !list.items.is_empty();
    for machine in &list.items {
        let name = machine.metadata.name.clone().unwrap_or_default();
        let status = serde_json::to_value(&machine.status).unwrap_or(Value::Null);
        let phase = status["phase"].as_str().unwrap_or("Pending").to_string();
        let node = status["nodeRef"]["name"].as_str().unwrap_or("").to_string();
        all_running &= phase == "Running";
        let role = if machine
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("cluster.x-k8s.io/control-plane"))
        {
            "control plane"
        } else {
            "worker"
        };
        rows.insert(
            name.clone(),
            format!("  {name:<32} {role:<14} {phase:<12} {node}"),
        );
    }
    Ok((rows.into_values().collect(), all_running))
}

/// Prints the demo cluster's machines as they change, until all are Running.
pub async fn show_until_ready(client: &kube::Client, cluster: &str) -> anyhow::Result<()> {
    let mut last = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    loop {
        let (lines, ready) = machine_lines(client, cluster).await?;
        if lines != last {
            println!("Cluster {cluster}:");
            println!("  {:<32} {:<14} {:<12} NODE", "MACHINE", "ROLE", "PHASE");
            for line in &lines {
                println!("{line}");
            }
            last = lines;
        }
        if ready {
            println!("Cluster {cluster} is up: every machine is Running.");
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!(
                "the demo cluster was not ready after 5 minutes; see `kubectl get machines`"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
