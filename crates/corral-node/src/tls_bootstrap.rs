//! `kubeadm join` of a worker, done by the agent: discovery with the bootstrap token, then the
//! kubelet's TLS bootstrap.
//!
//! 1. **Discovery** (`discovery.bootstrapToken`): cluster-info is read anonymously from
//!    `apiServerEndpoint` without trusting its serving certificate yet; its kubeconfig must carry
//!    a valid signature by the token (`jws-kubeconfig-<id>`, added by the control plane's
//!    bootstrap signer, so only someone holding the token could have written it), and its CA's
//!    public key must match one of `caCertHashes` (unless `unsafeSkipCAVerification`). Asked
//!    again until [`DISCOVERY_TIMEOUT`]: the signature appears a moment after the token.
//! 2. **TLS bootstrap**: a new key and a CertificateSigningRequest for `system:node:<name>` in
//!    `system:nodes` (signer `kubernetes.io/kube-apiserver-client-kubelet`), sent with the token
//!    over TLS verified by the discovered CA; once the control plane approves and signs it, the
//!    certificate and key are written to `/var/lib/kubelet/pki/kubelet-client-current.pem` and
//!    `/etc/kubernetes/kubelet.conf` is the kubelet's kubeconfig from then on.
//!
//! A restarted agent whose kubelet.conf exists uses it again (its token may have expired).

use std::path::{Path, PathBuf};
use std::time::Duration;

use corral_kubeadm::bootstrap::token::BootstrapToken;
use corral_kubeadm::certs;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use serde_json::Value;

use crate::Options;
use crate::cloud_config::under_root;
use crate::cluster_info;
use crate::control_plane::KubeadmFacts;
use crate::controller_manager::KUBELET_CLIENT_SIGNER;

/// How long discovery may take.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the client certificate may take to be approved and signed.
pub const CERTIFICATE_TIMEOUT: Duration = Duration::from_secs(120);

const KUBELET_CONF: &str = "/etc/kubernetes/kubelet.conf";
const CLIENT_CERTIFICATE: &str = "/var/lib/kubelet/pki/kubelet-client-current.pem";

/// What joining could not do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read kubeadm's configuration {path}: {reason}")]
    Configuration { path: String, reason: String },
    #[error("discovery through {endpoint} failed (after {seconds} s): {reason}")]
    Discovery {
        endpoint: String,
        seconds: u64,
        reason: String,
    },
    #[error("the client certificate request {name} was not signed within {seconds} s: {reason}")]
    Certificate {
        name: String,
        seconds: u64,
        reason: String,
    },
    #[error("cannot ask for a client certificate: {0}")]
    Request(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the kubelet's kubeconfig does not work: {0}")]
    Client(String),
}

/// What the JoinConfiguration's token discovery says.
struct Discovery {
    endpoint: String,
    token: BootstrapToken,
    ca_cert_hashes: Vec<String>,
    skip_ca_verification: bool,
}

impl Discovery {
    fn read(text: &str) -> Result<Discovery, String> {
        let join = serde_yaml::Deserializer::from_str(text)
            .filter_map(|document| {
                let value: Value = serde::Deserialize::deserialize(document).ok()?;
                (value["kind"] == "JoinConfiguration").then_some(value)
            })
            .next()
            .ok_or("it has no JoinConfiguration")?;
        let discovery = &join["discovery"]["bootstrapToken"];
        let endpoint = discovery["apiServerEndpoint"]
            .as_str()
            .filter(|endpoint| !endpoint.is_empty())
            .ok_or("discovery.bootstrapToken.apiServerEndpoint is not set")?
            .to_owned();
        let token = discovery["token"]
            .as_str()
            .ok_or("discovery.bootstrapToken.token is not set")?;
        let token = BootstrapToken::parse(token)
            .ok_or("discovery.bootstrapToken.token is not a bootstrap token (<6>.<16>)")?;
        let ca_cert_hashes: Vec<String> = discovery["caCertHashes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let skip_ca_verification = discovery["unsafeSkipCAVerification"] == true;
        if ca_cert_hashes.is_empty() && !skip_ca_verification {
            return Err(
                "discovery.bootstrapToken has neither caCertHashes nor unsafeSkipCAVerification"
                    .into(),
            );
        }
        Ok(Discovery {
            endpoint,
            token,
            ca_cert_hashes,
            skip_ca_verification,
        })
    }
}

/// Joins the cluster as a worker; returns the kubelet's client of the cluster.
pub async fn join(
    options: &Options,
    config: &str,
    facts: &KubeadmFacts,
) -> Result<kube::Client, Error> {
    let kubelet_conf =
        under_root(&options.root, KUBELET_CONF).map_err(|error| Error::Configuration {
            path: config.into(),
            reason: error.to_string(),
        })?;
    if let Ok(text) = std::fs::read_to_string(&kubelet_conf) {
        tracing::info!(path = %kubelet_conf.display(), "Using the kubelet's kubeconfig of an earlier start");
        return client(&text).await;
    }
    let unreadable = |reason: String| Error::Configuration {
        path: config.into(),
        reason,
    };
    let path = under_root(&options.root, config).map_err(|error| unreadable(error.to_string()))?;
    let text = std::fs::read_to_string(&path).map_err(|error| unreadable(error.to_string()))?;
    let discovery = Discovery::read(&text).map_err(unreadable)?;
    let (server, ca_pem) = discover(&discovery).await?;
    tracing::info!(%server, "Discovered the cluster; asking for the kubelet's client certificate");
    let (certificate, key) = client_certificate(&discovery, &server, &ca_pem, facts).await?;
    let kubeconfig = corral_kubeadm::kubeconfig::render(
        &facts.cluster_name,
        &server,
        &ca_pem,
        &certificate,
        &key,
    );
    let pem_path = under_root(&options.root, CLIENT_CERTIFICATE).expect("a fixed path");
    write(&pem_path, &format!("{certificate}{key}"))?;
    write(&kubelet_conf, &kubeconfig)?;
    client(&kubeconfig).await
}

/// Reads and checks cluster-info; the server and CA it names.
async fn discover(discovery: &Discovery) -> Result<(String, String), Error> {
    let deadline = tokio::time::Instant::now() + DISCOVERY_TIMEOUT;
    let mut last_reason;
    loop {
        match discover_once(discovery).await {
            Ok(found) => return Ok(found),
            Err(Failure::Fatal(reason)) => {
                return Err(Error::Discovery {
                    endpoint: discovery.endpoint.clone(),
                    seconds: 0,
                    reason,
                });
            }
            Err(Failure::Retry(reason)) => last_reason = reason,
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Discovery {
                endpoint: discovery.endpoint.clone(),
                seconds: DISCOVERY_TIMEOUT.as_secs(),
                reason: last_reason,
            });
        }
        tracing::debug!(reason = %last_reason, "Discovery not yet done");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Why discovery did not succeed yet: worth asking again (the server is not up, the signature
/// not there yet), or not (the cluster is not the one pinned).
enum Failure {
    Retry(String),
    Fatal(String),
}

impl From<String> for Failure {
    fn from(reason: String) -> Failure {
        Failure::Retry(reason)
    }
}

impl From<&str> for Failure {
    fn from(reason: &str) -> Failure {
        Failure::Retry(reason.to_owned())
    }
}

async fn discover_once(discovery: &Discovery) -> Result<(String, String), Failure> {
    // Not trusting the serving certificate yet: what is read is checked by its signature.
    let mut config = kube::Config::new(
        format!("https://{}", discovery.endpoint)
            .parse()
            .map_err(|error| format!("the endpoint is not a URL: {error}"))?,
    );
    config.accept_invalid_certs = true;
    let anonymous = kube::Client::try_from(config).map_err(|error| error.to_string())?;
    let config_maps: Api<ConfigMap> = Api::namespaced(anonymous, cluster_info::NAMESPACE);
    let cluster_info = config_maps
        .get(cluster_info::NAME)
        .await
        .map_err(|error| format!("cannot read {}: {error}", cluster_info::NAME))?;
    let data = cluster_info.data.unwrap_or_default();
    let kubeconfig = data
        .get(cluster_info::KUBECONFIG_KEY)
        .ok_or("cluster-info has no kubeconfig")?;
    let signature = data
        .get(&format!(
            "{}{}",
            cluster_info::SIGNATURE_PREFIX,
            discovery.token.id
        ))
        .ok_or_else(|| {
            format!(
                "cluster-info has no signature for token {} yet",
                discovery.token.id
            )
        })?;
    if !cluster_info::verify(
        kubeconfig,
        signature,
        &discovery.token.id,
        &discovery.token.secret,
    ) {
        return Err(Failure::Retry(format!(
            "cluster-info's signature for token {} does not verify",
            discovery.token.id
        )));
    }
    let (server, ca_pem) = cluster_info::read_kubeconfig(kubeconfig)?;
    if !discovery.skip_ca_verification {
        let hash = certs::ca_cert_hash(&ca_pem)?;
        if !discovery.ca_cert_hashes.contains(&hash) {
            return Err(Failure::Fatal(format!(
                "the cluster CA's public key ({hash}) matches none of caCertHashes"
            )));
        }
    }
    Ok((server, ca_pem))
}

/// The TLS bootstrap: a CertificateSigningRequest with the token, until it is signed.
async fn client_certificate(
    discovery: &Discovery,
    server: &str,
    ca_pem: &str,
    facts: &KubeadmFacts,
) -> Result<(String, String), Error> {
    let common_name = format!("system:node:{}", facts.node_name);
    let (request_pem, key_pem) = certs::client_request(&common_name, &[cluster_info::NODES_GROUP])
        .map_err(|error| Error::Request(error.to_string()))?;
    let mut config = kube::Config::new(
        server
            .parse()
            .map_err(|error| Error::Request(format!("the server is not a URL: {error}")))?,
    );
    config.root_cert = Some(vec![
        certs::certificate_der(ca_pem).map_err(Error::Request)?,
    ]);
    config.auth_info.token = Some(discovery.token.to_string().into());
    let bootstrap =
        kube::Client::try_from(config).map_err(|error| Error::Request(error.to_string()))?;
    let requests: Api<CertificateSigningRequest> = Api::all(bootstrap);
    let request = CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some("csr-".into()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request_pem.into_bytes()),
            signer_name: KUBELET_CLIENT_SIGNER.into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            ..Default::default()
        },
        status: None,
    };
    let created = requests
        .create(&PostParams::default(), &request)
        .await
        .map_err(|error| Error::Request(error.to_string()))?;
    let name = created.metadata.name.unwrap_or_default();
    tracing::info!(request = %name, "Waiting for the client certificate request to be approved and signed");
    let deadline = tokio::time::Instant::now() + CERTIFICATE_TIMEOUT;
    let mut last_reason = "not approved yet".to_owned();
    loop {
        match requests.get(&name).await {
            Ok(current) => {
                let status = current.status.unwrap_or_default();
                let conditions = status.conditions.unwrap_or_default();
                if let Some(refused) = conditions
                    .iter()
                    .find(|c| c.type_ == "Denied" || c.type_ == "Failed")
                {
                    return Err(Error::Certificate {
                        name,
                        seconds: CERTIFICATE_TIMEOUT.as_secs(),
                        reason: format!(
                            "{}: {}",
                            refused.type_,
                            refused.message.clone().unwrap_or_default()
                        ),
                    });
                }
                if let Some(certificate) = status.certificate {
                    let certificate = String::from_utf8(certificate.0).map_err(|_| {
                        Error::Request("the signed certificate is not PEM text".into())
                    })?;
                    return Ok((certificate, key_pem));
                }
                if conditions.iter().any(|c| c.type_ == "Approved") {
                    last_reason = "approved, not signed yet".into();
                }
            }
            Err(error) => last_reason = error.to_string(),
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Certificate {
                name,
                seconds: CERTIFICATE_TIMEOUT.as_secs(),
                reason: last_reason,
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn client(kubeconfig: &str) -> Result<kube::Client, Error> {
    crate::control_plane::client_of(kubeconfig)
        .await
        .map_err(Error::Client)
}

fn write(path: &Path, content: &str) -> Result<(), Error> {
    let write = || -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().expect("a file has a directory"))?;
        std::fs::write(path, content)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
    };
    write().map_err(|source| Error::Write {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_needs_an_endpoint_a_token_and_a_ca_pin() {
        let join = |discovery: &str| {
            format!(
                "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n{discovery}"
            )
        };
        let read = Discovery::read(&join(
            "    apiServerEndpoint: 10.0.0.1:6443\n    token: abcdef.0123456789abcdef\n    caCertHashes: [\"sha256:00\"]\n",
        ))
        .unwrap();
        assert_eq!(read.endpoint, "10.0.0.1:6443");
        assert_eq!(read.token.id, "abcdef");
        assert_eq!(
            Discovery::read(&join(
                "    apiServerEndpoint: 10.0.0.1:6443\n    token: abcdef.0123456789abcdef\n"
            ))
            .err()
            .unwrap(),
            "discovery.bootstrapToken has neither caCertHashes nor unsafeSkipCAVerification"
        );
        assert!(Discovery::read(&join("    apiServerEndpoint: 10.0.0.1:6443\n    token: nope\n    unsafeSkipCAVerification: true\n")).is_err());
    }
}
