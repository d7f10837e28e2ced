//! `kubeadm init`'s work on the first control plane machine, done by the agent: kubeadm's
//! configuration read, the leaf certificates issued from the CAs the bootstrap data carries
//! (`/etc/kubernetes/pki/ca.*`, `etcd/ca.*`), an etcd member and a Corral API server started
//! as the agent's children (each restarted when it exits, as a kubelet restarts static Pods),
//! and `/etc/kubernetes/admin.conf` written; done when the API server answers. Then
//! `/etc/kubernetes/kubelet.conf` is written with the kubelet's own client certificate
//! (`system:node:<node name>` in `system:nodes`), with which the machine's Node and Lease are
//! kept, as on workers.
//!
//! etcd gets the timings of members that share one host ([`LOCAL_ETCD_TIMINGS`]) and, over
//! them, the ClusterConfiguration's `etcd.local.extraArgs`; a joining machine takes those from
//! the cluster's `kube-system/kubeadm-config`, as `kubeadm join` takes the ClusterConfiguration.
//!
//! The programs' output goes to `<root>/var/log/<program>.log`; etcd keeps its data in
//! `<root>/var/lib/etcd`.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use corral_kubeadm::certs::{self, KeyMaterial, Leaf};
use serde_json::Value;
use time::OffsetDateTime;

use crate::Options;
use crate::cloud_config::under_root;

/// How long issued leaf certificates are valid (kubeadm's default, a year).
const LEAF_VALIDITY: time::Duration = time::Duration::days(365);

/// How long the etcd member and the API server get to start answering.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The etcd timings the agent gives its member unless `etcd.local.extraArgs` says otherwise
/// (milliseconds). etcd's defaults (100 ms heartbeats, 1 s election timeout) are made for
/// members on different hosts; the local provider's members share one host, whose round trip
/// is well under a millisecond, so a dead leader is replaced after 300–600 ms (etcd randomizes
/// the timeout between one and two times the setting) instead of 1–2 s, which keeps the
/// workload API's errors while a control plane machine dies under a second. Six heartbeats per
/// election timeout leave room for a busy host's scheduling delays (etcd asks for at least
/// five); pre-vote (etcd 3.5's default) keeps a member that was cut off from deposing a
/// working leader when it comes back.
const LOCAL_ETCD_TIMINGS: [(&str, &str); 3] = [
    ("heartbeat-interval", "50"),
    ("election-timeout", "300"),
    ("pre-vote", "true"),
];

const ETCD_CLIENT_PORT: u16 = 2379;
const ETCD_PEER_PORT: u16 = 2380;

/// What `kubeadm init` could not do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read kubeadm's configuration {path}: {reason}")]
    Configuration { path: String, reason: String },
    #[error(
        "cannot read {path} (the bootstrap data must carry the cluster's certificates): {source}"
    )]
    ReadCertificate {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot issue the {what} certificate: {source}")]
    Issue {
        what: &'static str,
        #[source]
        source: Box<certs::Error>,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {program}: {source}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} did not start answering within {seconds} s; see {log}")]
    NotAnswering {
        what: &'static str,
        seconds: u64,
        log: PathBuf,
    },
    #[error("the admin kubeconfig does not work: {0}")]
    Client(String),
    #[error("etcd: {0}")]
    Etcd(String),
    #[error("the JoinConfiguration has no controlPlane: the machine is a worker")]
    NotAControlPlane,
}

/// What kubeadm's configuration documents say that the agent uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeadmFacts {
    pub node_name: String,
    pub cluster_name: String,
    pub kubernetes_version: Option<String>,
    /// `host:port`: the ClusterConfiguration's `controlPlaneEndpoint`, or where a joining
    /// machine discovers the cluster (`discovery.bootstrapToken.apiServerEndpoint`).
    pub control_plane_endpoint: Option<String>,
    pub cert_sans: Vec<String>,
    pub bind_port: u16,
    /// The machine runs a control plane: it initializes the cluster, or its JoinConfiguration
    /// has `controlPlane`.
    pub control_plane: bool,
    /// The ClusterConfiguration's `etcd.local.extraArgs`, in order: they override the agent's
    /// etcd flags of the same name and add the others, as kubeadm's do.
    pub etcd_extra_args: Vec<(String, String)>,
}

impl KubeadmFacts {
    /// Reads the InitConfiguration or JoinConfiguration document, and the
    /// ClusterConfiguration where there is one.
    pub fn read(text: &str, machine_name: &str) -> Result<KubeadmFacts, String> {
        let mut node = Value::Null;
        let mut cluster = Value::Null;
        let mut joining = false;
        for document in serde_yaml::Deserializer::from_str(text) {
            let value: Value = serde::Deserialize::deserialize(document)
                .map_err(|error| format!("not YAML: {error}"))?;
            match value.get("kind").and_then(Value::as_str) {
                Some("InitConfiguration") => node = value,
                Some("JoinConfiguration") => {
                    node = value;
                    joining = true;
                }
                Some("ClusterConfiguration") => cluster = value,
                _ => {}
            }
        }
        let text_at = |value: &Value, pointer: &str| {
            value
                .pointer(pointer)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let (endpoint_pointer, port_pointer) = if joining {
            (
                "/controlPlane/localAPIEndpoint/bindPort",
                "controlPlane.localAPIEndpoint.bindPort",
            )
        } else {
            ("/localAPIEndpoint/bindPort", "localAPIEndpoint.bindPort")
        };
        let bind_port = match node.pointer(endpoint_pointer) {
            None | Some(Value::Null) => 6443,
            Some(port) => port
                .as_u64()
                .and_then(|port| u16::try_from(port).ok())
                .filter(|port| *port != 0)
                .ok_or_else(|| format!("{port_pointer} {port} is not a port"))?,
        };
        Ok(KubeadmFacts {
            node_name: text_at(&node, "/nodeRegistration/name")
                .unwrap_or_else(|| machine_name.to_owned()),
            cluster_name: text_at(&cluster, "/clusterName")
                .unwrap_or_else(|| "kubernetes".to_owned()),
            kubernetes_version: text_at(&cluster, "/kubernetesVersion"),
            control_plane_endpoint: text_at(&cluster, "/controlPlaneEndpoint")
                .or_else(|| text_at(&node, "/discovery/bootstrapToken/apiServerEndpoint")),
            cert_sans: cluster
                .pointer("/apiServer/certSANs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            bind_port,
            control_plane: !joining || node.get("controlPlane").is_some_and(|v| !v.is_null()),
            etcd_extra_args: etcd_extra_args(&cluster)?,
        })
    }
}

/// A ClusterConfiguration's `etcd.local.extraArgs`: kubeadm v1beta4's list of `name`/`value`
/// pairs, or v1beta3's map.
pub(crate) fn etcd_extra_args(cluster: &Value) -> Result<Vec<(String, String)>, String> {
    const FIELD: &str = "etcd.local.extraArgs";
    let text = |value: &Value, what: &str| {
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{FIELD}: {what} must be a string"))
    };
    match cluster.pointer("/etcd/local/extraArgs") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(arguments)) => arguments
            .iter()
            .map(|argument| {
                let name = text(&argument["name"], "name")?;
                if name.is_empty() {
                    return Err(format!("{FIELD}: name must not be empty"));
                }
                Ok((name, text(&argument["value"], "value")?))
            })
            .collect(),
        Some(Value::Object(arguments)) => arguments
            .iter()
            .map(|(name, value)| Ok((name.clone(), text(value, "value")?)))
            .collect(),
        Some(other) => Err(format!(
            "{FIELD}: {other} is neither a list of name/value pairs nor a map"
        )),
    }
}

/// A running control plane machine: what the kubelet side needs.
pub struct ControlPlane {
    pub facts: KubeadmFacts,
    /// The machine initialized the cluster (`kubeadm init`), rather than joined it.
    pub initialized: bool,
    /// A client of the machine's own API server, as the admin.
    pub client: kube::Client,
    /// The kubelet's client of the machine's own API server, as `system:node:<node name>` in
    /// `system:nodes` (`/etc/kubernetes/kubelet.conf`).
    pub kubelet_client: kube::Client,
    /// The cluster CA, which signs kubelets' client certificates.
    pub cluster_ca: KeyMaterial,
    /// Supervises the etcd member and the API server; they stop with it.
    _processes: Vec<tokio_util::task::AbortOnDropHandle<()>>,
}

/// Does `kubeadm init --config <config>`'s work; returns once the API server answers.
pub async fn init(options: &Options, config: &str) -> Result<ControlPlane, Error> {
    let facts = read_facts(options, config)?;
    let pki = Pki::read(options)?;
    pki.issue(options, &facts)?;
    let peer_url = peer_url(options.address);
    let initial_cluster = format!("{}={peer_url}", facts.node_name);
    start(options, facts, &pki, &initial_cluster, "new", true).await
}

/// Does `kubeadm join --config <config>`'s work on a control plane machine: this machine's
/// member is added to the cluster's etcd (the members are the control plane Nodes' addresses,
/// asked through the endpoint), then its etcd and API server start as on the first machine.
/// Adding again after a restart finds the member added before.
pub async fn join(options: &Options, config: &str) -> Result<ControlPlane, Error> {
    let facts = read_facts(options, config)?;
    if !facts.control_plane {
        return Err(Error::NotAControlPlane);
    }
    let pki = Pki::read(options)?;
    pki.issue(options, &facts)?;
    let endpoint = facts
        .control_plane_endpoint
        .clone()
        .ok_or_else(|| Error::Configuration {
            path: config.into(),
            reason: "discovery.bootstrapToken.apiServerEndpoint is not set".into(),
        })?;
    let cluster = pki
        .admin_client(&facts, &format!("https://{endpoint}"))
        .await?;
    // kubeadm join takes the ClusterConfiguration from the cluster, as the first machine
    // published it; before the member is added, which leaves etcd without quorum until the
    // new member runs.
    let mut facts = facts;
    if let Some(extra_args) = published_etcd_extra_args(&cluster).await? {
        facts.etcd_extra_args = extra_args;
    }
    let initial_cluster = add_etcd_member(options, &facts, &pki, &cluster).await?;
    start(options, facts, &pki, &initial_cluster, "existing", false).await
}

/// `kube-system/kubeadm-config` as the first machine publishes it (kubeadm's upload-config
/// phase): [`corral_workload::kubeadm_config`] with the ClusterConfiguration's
/// `etcd.local.extraArgs`, so that joining machines start their members alike.
pub(crate) fn kubeadm_config(
    facts: &KubeadmFacts,
    endpoint: &str,
) -> k8s_openapi::api::core::v1::ConfigMap {
    let mut config_map = corral_workload::kubeadm_config(
        &facts.cluster_name,
        endpoint,
        facts.kubernetes_version.as_deref(),
    );
    if facts.etcd_extra_args.is_empty() {
        return config_map;
    }
    let Some(text) = config_map
        .data
        .as_mut()
        .and_then(|data| data.get_mut(CLUSTER_CONFIGURATION))
    else {
        return config_map;
    };
    let Ok(mut document) = serde_yaml::from_str::<Value>(text) else {
        return config_map;
    };
    document["etcd"]["local"]["extraArgs"] = facts
        .etcd_extra_args
        .iter()
        .map(|(name, value)| serde_json::json!({ "name": name, "value": value }))
        .collect();
    if let Ok(written) = serde_yaml::to_string(&document) {
        *text = written;
    }
    config_map
}

/// The key of the ClusterConfiguration in `kube-system/kubeadm-config`.
const CLUSTER_CONFIGURATION: &str = "ClusterConfiguration";

/// The `etcd.local.extraArgs` of the cluster's `kube-system/kubeadm-config`; `None` when it
/// has none. Asked again while the endpoint does not answer, up to [`START_TIMEOUT`].
async fn published_etcd_extra_args(
    cluster: &kube::Client,
) -> Result<Option<Vec<(String, String)>>, Error> {
    let config_maps: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(cluster.clone(), corral_workload::KUBE_SYSTEM);
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    let config_map = loop {
        match config_maps.get_opt("kubeadm-config").await {
            Ok(config_map) => break config_map,
            Err(error) if tokio::time::Instant::now() > deadline => {
                return Err(Error::Client(format!(
                    "cannot read kube-system/kubeadm-config: {error}"
                )));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    let Some(text) = config_map
        .as_ref()
        .and_then(|config_map| config_map.data.as_ref()?.get(CLUSTER_CONFIGURATION))
    else {
        return Ok(None);
    };
    let unreadable = |reason: String| Error::Configuration {
        path: "kube-system/kubeadm-config".into(),
        reason,
    };
    let document: Value =
        serde_yaml::from_str(text).map_err(|error| unreadable(error.to_string()))?;
    let extra_args = etcd_extra_args(&document).map_err(unreadable)?;
    Ok((!extra_args.is_empty()).then_some(extra_args))
}

pub(crate) fn read_facts(options: &Options, config: &str) -> Result<KubeadmFacts, Error> {
    let unreadable = |reason: String| Error::Configuration {
        path: config.into(),
        reason,
    };
    let path = under_root(&options.root, config).map_err(|error| unreadable(error.to_string()))?;
    let text = std::fs::read_to_string(&path).map_err(|error| unreadable(error.to_string()))?;
    let mut facts = KubeadmFacts::read(&text, &options.machine_name).map_err(unreadable)?;
    if facts.kubernetes_version.is_none() {
        facts.kubernetes_version = options.kubernetes_version.clone();
    }
    Ok(facts)
}

/// The machine's `/etc/kubernetes/pki`, with the CAs the bootstrap data carried.
struct Pki {
    dir: PathBuf,
    cluster_ca: KeyMaterial,
    etcd_ca: KeyMaterial,
}

impl Pki {
    fn read(options: &Options) -> Result<Pki, Error> {
        let dir = options.root.join("etc/kubernetes/pki");
        Ok(Pki {
            cluster_ca: read_pair(&dir, "ca")?,
            etcd_ca: read_pair(&dir, "etcd/ca")?,
            dir,
        })
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// kubeadm's leaf certificates: the API server's serving certificate names every way the
    /// API server is reached; etcd's name the member's address and loopback.
    fn issue(&self, options: &Options, facts: &KubeadmFacts) -> Result<(), Error> {
        let now = OffsetDateTime::now_utc();
        let address = options.address.to_string();
        let mut apiserver_names = vec![
            facts.node_name.clone(),
            "kubernetes".into(),
            "kubernetes.default".into(),
            "kubernetes.default.svc".into(),
            "kubernetes.default.svc.cluster.local".into(),
            "localhost".into(),
            "127.0.0.1".into(),
            address.clone(),
        ];
        if let Some(endpoint) = &facts.control_plane_endpoint {
            apiserver_names.push(host_of(endpoint).to_owned());
        }
        apiserver_names.extend(facts.cert_sans.iter().cloned());
        apiserver_names.sort();
        apiserver_names.dedup();
        let etcd_names = vec![
            facts.node_name.clone(),
            "localhost".into(),
            "127.0.0.1".into(),
            address,
        ];
        let issued = [
            (
                "apiserver",
                &self.cluster_ca,
                Leaf {
                    common_name: "kube-apiserver",
                    names: &apiserver_names,
                    server: true,
                    ..leaf()
                },
            ),
            (
                "apiserver-etcd-client",
                &self.etcd_ca,
                Leaf {
                    common_name: "kube-apiserver-etcd-client",
                    client: true,
                    ..leaf()
                },
            ),
            (
                "etcd/server",
                &self.etcd_ca,
                Leaf {
                    common_name: &facts.node_name,
                    names: &etcd_names,
                    server: true,
                    client: true,
                    ..leaf()
                },
            ),
            (
                "etcd/peer",
                &self.etcd_ca,
                Leaf {
                    common_name: &facts.node_name,
                    names: &etcd_names,
                    server: true,
                    client: true,
                    ..leaf()
                },
            ),
        ];
        for (name, ca, leaf) in issued {
            let material = certs::issue(ca, &leaf, now).map_err(|source| Error::Issue {
                what: name,
                source: Box::new(source),
            })?;
            write(
                &self.dir.join(format!("{name}.crt")),
                &material.certificate_pem,
                0o644,
            )?;
            write(
                &self.dir.join(format!("{name}.key")),
                &material.private_key_pem,
                0o600,
            )?;
        }
        // admin.conf, as kubeadm writes it: through the endpoint where there is one.
        let server = facts
            .control_plane_endpoint
            .as_ref()
            .map(|endpoint| format!("https://{endpoint}"))
            .unwrap_or_else(|| local_server(options, facts));
        write(
            &options.root.join("etc/kubernetes/admin.conf"),
            &self.admin_kubeconfig(facts, &server)?,
            0o600,
        )
    }

    fn admin_kubeconfig(&self, facts: &KubeadmFacts, server: &str) -> Result<String, Error> {
        corral_kubeadm::kubeconfig::generate(
            &facts.cluster_name,
            server,
            &self.cluster_ca,
            OffsetDateTime::now_utc(),
        )
        .map_err(|error| Error::Client(error.to_string()))
    }

    /// A client of `server` as the cluster's admin.
    async fn admin_client(
        &self,
        facts: &KubeadmFacts,
        server: &str,
    ) -> Result<kube::Client, Error> {
        client_of(&self.admin_kubeconfig(facts, server)?)
            .await
            .map_err(Error::Client)
    }

    /// kubeadm init's `/etc/kubernetes/kubelet.conf`: a client certificate for
    /// `system:node:<node name>` in `system:nodes` signed by the cluster CA, for `server` (the
    /// machine's own API server, as kubeadm's `ControlPlaneKubeletLocalMode` has it); the
    /// kubelet's client from it.
    async fn kubelet_client(
        &self,
        options: &Options,
        facts: &KubeadmFacts,
        server: &str,
    ) -> Result<kube::Client, Error> {
        let user = format!("system:node:{}", facts.node_name);
        let issued = certs::issue(
            &self.cluster_ca,
            &Leaf {
                common_name: &user,
                organizations: &[crate::cluster_info::NODES_GROUP],
                client: true,
                ..leaf()
            },
            OffsetDateTime::now_utc(),
        )
        .map_err(|source| Error::Issue {
            what: "kubelet client",
            source: Box::new(source),
        })?;
        let kubeconfig = corral_kubeadm::kubeconfig::render_for(
            &user,
            &facts.cluster_name,
            server,
            &self.cluster_ca.certificate_pem,
            &issued.certificate_pem,
            &issued.private_key_pem,
        );
        write(
            &options.root.join("etc/kubernetes/kubelet.conf"),
            &kubeconfig,
            0o600,
        )?;
        client_of(&kubeconfig)
            .await
            .map_err(|error| Error::Client(format!("kubelet.conf: {error}")))
    }

    /// The etcd client TLS of the API server, which any member accepts.
    fn etcd_tls(&self) -> Result<corral_store::etcd::EtcdTls, Error> {
        corral_store::etcd::EtcdTls::from_files(
            Some(self.dir.join("etcd/ca.crt").as_path()),
            Some(self.dir.join("apiserver-etcd-client.crt").as_path()),
            Some(self.dir.join("apiserver-etcd-client.key").as_path()),
        )
        .map_err(|error| Error::Etcd(error.to_string()))
    }
}

/// A client from a kubeconfig's text.
pub(crate) async fn client_of(kubeconfig: &str) -> Result<kube::Client, String> {
    let parsed =
        kube::config::Kubeconfig::from_yaml(kubeconfig).map_err(|error| error.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
        .await
        .map_err(|error| error.to_string())?;
    kube::Client::try_from(config).map_err(|error| error.to_string())
}

fn local_server(options: &Options, facts: &KubeadmFacts) -> String {
    format!(
        "https://{}",
        SocketAddr::new(options.address, facts.bind_port)
    )
}

fn peer_url(address: IpAddr) -> String {
    format!("https://{}:{ETCD_PEER_PORT}", url_host(address))
}

/// Adds this machine's member to the cluster's etcd (unless a restart finds it added) and
/// returns etcd's `--initial-cluster` for it.
async fn add_etcd_member(
    options: &Options,
    facts: &KubeadmFacts,
    pki: &Pki,
    cluster: &kube::Client,
) -> Result<String, Error> {
    use corral_store::etcd::pb;
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(cluster.clone());
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    let control_plane_nodes = loop {
        let listed = nodes
            .list(&kube::api::ListParams::default().labels("node-role.kubernetes.io/control-plane"))
            .await;
        match listed {
            Ok(list) if !list.items.is_empty() => break list.items,
            _ if tokio::time::Instant::now() > deadline => {
                return Err(Error::Etcd(format!(
                    "no control plane Node answered through {} within {} s",
                    facts.control_plane_endpoint.as_deref().unwrap_or_default(),
                    START_TIMEOUT.as_secs()
                )));
            }
            _ => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    let endpoints: Vec<String> = control_plane_nodes
        .iter()
        .filter(|node| node.metadata.name.as_deref() != Some(facts.node_name.as_str()))
        .filter_map(|node| {
            let addresses = node.status.as_ref()?.addresses.as_ref()?;
            let internal = addresses.iter().find(|a| a.type_ == "InternalIP")?;
            let address: IpAddr = internal.address.parse().ok()?;
            Some(format!("https://{}:{ETCD_CLIENT_PORT}", url_host(address)))
        })
        .collect();
    if endpoints.is_empty() {
        return Err(Error::Etcd(
            "no other control plane Node has an InternalIP to find etcd at".into(),
        ));
    }
    let tls = pki.etcd_tls()?;
    let own_peer_url = peer_url(options.address);
    let mut last_error = String::new();
    // etcd refuses to add a member while a member started a moment ago is not yet fully
    // connected ("unhealthy cluster"): asked again until the deadline.
    let attempts = std::iter::repeat(endpoints).flatten();
    for endpoint in attempts {
        if tokio::time::Instant::now() > deadline {
            break;
        }
        let channel = corral_store::etcd::channel(&endpoint, &tls)
            .map_err(|error| Error::Etcd(error.to_string()))?;
        let mut members = pb::cluster_client::ClusterClient::new(channel);
        let listed = match members
            .member_list(pb::MemberListRequest { linearizable: true })
            .await
        {
            Ok(response) => response.into_inner().members,
            Err(status) => {
                last_error = format!("{endpoint}: {}", status.message());
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let added_before = listed
            .iter()
            .any(|member| member.peer_ur_ls.contains(&own_peer_url));
        let members_now = if added_before {
            listed
        } else {
            tracing::info!(%endpoint, peer = %own_peer_url, "Adding this machine's etcd member");
            match members
                .member_add(pb::MemberAddRequest {
                    peer_ur_ls: vec![own_peer_url.clone()],
                    is_learner: false,
                })
                .await
            {
                Ok(response) => response.into_inner().members,
                Err(status) => {
                    last_error = format!("{endpoint}: {}", status.message());
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
        };
        // Every started member by its name; this one (not started: no name yet) by ours.
        let initial_cluster = members_now
            .iter()
            .flat_map(|member| {
                let name = if member.peer_ur_ls.contains(&own_peer_url) {
                    facts.node_name.clone()
                } else {
                    member.name.clone()
                };
                member
                    .peer_ur_ls
                    .iter()
                    .map(move |url| format!("{name}={url}"))
            })
            .collect::<Vec<_>>()
            .join(",");
        return Ok(initial_cluster);
    }
    Err(Error::Etcd(format!(
        "cannot add this machine's etcd member: {last_error}"
    )))
}

/// Starts the etcd member and the API server; returns once the API server answers.
async fn start(
    options: &Options,
    facts: KubeadmFacts,
    pki: &Pki,
    initial_cluster: &str,
    initial_cluster_state: &str,
    initialized: bool,
) -> Result<ControlPlane, Error> {
    let logs = options.root.join("var/log");
    let etcd_log = logs.join("etcd.log");
    let etcd = supervise(
        "etcd",
        &options.etcd,
        etcd_arguments(
            options,
            &facts.node_name,
            pki,
            initial_cluster,
            initial_cluster_state,
            &facts.etcd_extra_args,
        ),
        &etcd_log,
    )?;
    wait_for_port(
        SocketAddr::new(options.address, ETCD_CLIENT_PORT),
        "etcd",
        &etcd_log,
    )
    .await?;
    let apiserver_log = logs.join("apiserver.log");
    let apiserver = supervise(
        "apiserver",
        &options.corral,
        vec![
            "apiserver".into(),
            "--workload-cluster".into(),
            "--data-dir".into(),
            options
                .root
                .join("var/lib/corral-apiserver")
                .display()
                .to_string(),
            "--listen".into(),
            SocketAddr::new(options.address, facts.bind_port).to_string(),
            "--tls-cert-file".into(),
            pki.path("apiserver.crt"),
            "--tls-private-key-file".into(),
            pki.path("apiserver.key"),
            "--client-ca-file".into(),
            pki.path("ca.crt"),
            // kube-apiserver's defaults, which joining machines rely on: cluster-info is read
            // anonymously (as are the health endpoints the cluster's load balancer checks),
            // the kubelet's certificate asked for with a bootstrap token.
            "--anonymous-auth=true".into(),
            "--enable-bootstrap-token-auth".into(),
            // Every control plane machine signs ServiceAccount tokens with the cluster's key.
            "--service-account-signing-key-file".into(),
            pki.path("sa.key"),
            "--store".into(),
            "etcd".into(),
            "--etcd-endpoints".into(),
            format!("https://127.0.0.1:{ETCD_CLIENT_PORT}"),
            "--etcd-cafile".into(),
            pki.path("etcd/ca.crt"),
            "--etcd-certfile".into(),
            pki.path("apiserver-etcd-client.crt"),
            "--etcd-keyfile".into(),
            pki.path("apiserver-etcd-client.key"),
        ],
        &apiserver_log,
    )?;

    // The agent's own client talks to its machine's API server, not through the endpoint.
    let client = pki
        .admin_client(&facts, &local_server(options, &facts))
        .await?;
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    while client.apiserver_version().await.is_err() {
        if tokio::time::Instant::now() > deadline {
            return Err(Error::NotAnswering {
                what: "the API server",
                seconds: START_TIMEOUT.as_secs(),
                log: apiserver_log,
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tracing::info!(node = %facts.node_name, "The control plane answers");
    let kubelet_client = pki
        .kubelet_client(options, &facts, &local_server(options, &facts))
        .await?;
    Ok(ControlPlane {
        facts,
        initialized,
        client,
        kubelet_client,
        cluster_ca: pki.cluster_ca.clone(),
        _processes: vec![
            tokio_util::task::AbortOnDropHandle::new(etcd),
            tokio_util::task::AbortOnDropHandle::new(apiserver),
        ],
    })
}

fn leaf() -> Leaf<'static> {
    Leaf {
        validity: LEAF_VALIDITY,
        ..Leaf::default()
    }
}

fn etcd_arguments(
    options: &Options,
    node_name: &str,
    pki: &Pki,
    initial_cluster: &str,
    initial_cluster_state: &str,
    extra_args: &[(String, String)],
) -> Vec<String> {
    let address = url_host(options.address);
    let peer_url = peer_url(options.address);
    let arguments: Vec<(String, String)> = [
        ("name", node_name.to_owned()),
        (
            "data-dir",
            options.root.join("var/lib/etcd").display().to_string(),
        ),
        (
            "listen-client-urls",
            format!("https://127.0.0.1:{ETCD_CLIENT_PORT},https://{address}:{ETCD_CLIENT_PORT}"),
        ),
        (
            "advertise-client-urls",
            format!("https://{address}:{ETCD_CLIENT_PORT}"),
        ),
        ("listen-peer-urls", peer_url.clone()),
        ("initial-advertise-peer-urls", peer_url),
        ("initial-cluster", initial_cluster.to_owned()),
        ("initial-cluster-state", initial_cluster_state.to_owned()),
        ("client-cert-auth", "true".into()),
        ("trusted-ca-file", pki.path("etcd/ca.crt")),
        ("cert-file", pki.path("etcd/server.crt")),
        ("key-file", pki.path("etcd/server.key")),
        ("peer-client-cert-auth", "true".into()),
        ("peer-trusted-ca-file", pki.path("etcd/ca.crt")),
        ("peer-cert-file", pki.path("etcd/peer.crt")),
        ("peer-key-file", pki.path("etcd/peer.key")),
        ("listen-metrics-urls", "http://127.0.0.1:2381".into()),
    ]
    .into_iter()
    .map(|(flag, value)| (flag.to_owned(), value))
    .chain(
        LOCAL_ETCD_TIMINGS
            .iter()
            .map(|(flag, value)| ((*flag).to_owned(), (*value).to_owned())),
    )
    .collect();
    with_extra_args(arguments, extra_args)
        .into_iter()
        .map(|(flag, value)| format!("--{flag}={value}"))
        .collect()
}

/// kubeadm's rule for a component's `extraArgs`: each replaces the argument of the same name,
/// or is added after the others.
fn with_extra_args(
    mut arguments: Vec<(String, String)>,
    extra_args: &[(String, String)],
) -> Vec<(String, String)> {
    for (name, value) in extra_args {
        match arguments.iter_mut().find(|(flag, _)| flag == name) {
            Some(argument) => argument.1.clone_from(value),
            None => arguments.push((name.clone(), value.clone())),
        }
    }
    arguments
}

pub(crate) fn url_host(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn host_of(endpoint: &str) -> &str {
    endpoint
        .rsplit_once(':')
        .map_or(endpoint, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']')
}

fn read_pair(pki: &Path, name: &str) -> Result<KeyMaterial, Error> {
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).map_err(|source| Error::ReadCertificate { path, source })
    };
    Ok(KeyMaterial {
        certificate_pem: read(pki.join(format!("{name}.crt")))?,
        private_key_pem: read(pki.join(format!("{name}.key")))?,
    })
}

fn write(path: &Path, content: &str, mode: u32) -> Result<(), Error> {
    let write = || -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().expect("a file has a directory"))?;
        std::fs::write(path, content)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    };
    write().map_err(|source| Error::Write {
        path: path.to_owned(),
        source,
    })
}

/// Runs the program, and again whenever it exits (after a pause growing to 10 s), its output
/// appended to `log`, until the returned task is dropped or aborted.
fn supervise(
    name: &'static str,
    program: &Path,
    arguments: Vec<String>,
    log: &Path,
) -> Result<tokio::task::JoinHandle<()>, Error> {
    std::fs::create_dir_all(log.parent().expect("a log has a directory")).map_err(|source| {
        Error::Write {
            path: log.to_owned(),
            source,
        }
    })?;
    let open_log = {
        let log = log.to_owned();
        move || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
        }
    };
    let start = {
        let program = program.to_owned();
        move || -> std::io::Result<tokio::process::Child> {
            let output = open_log()?;
            tokio::process::Command::new(&program)
                .args(&arguments)
                .stdin(std::process::Stdio::null())
                .stdout(output.try_clone()?)
                .stderr(output)
                .kill_on_drop(true)
                .spawn()
        }
    };
    // The first start's failure (no such program) is the caller's error; later ones are
    // retried.
    let mut child = start().map_err(|source| Error::Start {
        program: program.display().to_string(),
        source,
    })?;
    Ok(tokio::spawn(async move {
        let mut pause = Duration::from_secs(1);
        loop {
            let status = child.wait().await;
            tracing::warn!(program = name, ?status, "Restarting {name}, which exited");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(10));
            match start() {
                Ok(next) => child = next,
                Err(error) => {
                    tracing::warn!(program = name, %error, "Cannot restart {name}");
                    continue;
                }
            }
        }
    }))
}

async fn wait_for_port(address: SocketAddr, what: &'static str, log: &Path) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    while tokio::net::TcpStream::connect(address).await.is_err() {
        if tokio::time::Instant::now() > deadline {
            return Err(Error::NotAnswering {
                what,
                seconds: START_TIMEOUT.as_secs(),
                log: log.to_owned(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
