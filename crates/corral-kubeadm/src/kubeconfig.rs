//! The admin kubeconfig of a workload cluster: Secret `<cluster>-kubeconfig` in the cluster's
//! namespace, type `cluster.x-k8s.io/secret`, label `cluster.x-k8s.io/cluster-name`, key
//! `value`, with a client certificate for `kubernetes-admin` (organization `system:masters`)
//! signed by the cluster CA, valid for a year and renewed when less than six months are left
//! (upstream `util/kubeconfig`, `docs/book/src/tasks/control-plane/kubeadm-control-plane.md`).
//!
//! In upstream the control plane provider owns this Secret (core's Cluster controller writes it
//! only for Clusters without a control plane reference); [`ensure`] is what the
//! KubeadmControlPlane controller calls. It takes over a Secret the Cluster or the in-memory
//! provider wrote (replacing their controller reference, as upstream's KCP adopts the Cluster's
//! Secret), and leaves alone one that has no controller or another one: that is a user's.
//!
//! The server is `https://<host>:<port>` of the Cluster's `spec.controlPlaneEndpoint`, except
//! for clusters on the in-memory provider (infrastructure kind `DevCluster`): their simulated
//! API servers are Corral API servers that serve plain HTTP on loopback without authentication,
//! so the server is `http://`, and the CA data and client certificate ride along unused, so that
//! kubectl and every client still reach the simulated cluster with the same file.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use corral_api::Cluster;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use time::{Duration, OffsetDateTime};

use crate::certs::{self, KeyMaterial};

/// The key of the kubeconfig in its Secret.
pub const DATA_KEY: &str = "value";

/// How long a generated admin client certificate is valid.
pub const CLIENT_CERTIFICATE_VALIDITY: Duration = Duration::days(365);

/// A client certificate with less than this left is renewed (upstream: half a year).
pub const RENEW_BEFORE: Duration = Duration::days(365 / 2);

/// The annotation of the in-memory provider's simulated kubeconfig (see
/// `corral_infra_inmemory::api::annotations::SIMULATED_KUBECONFIG`); a Secret carrying it is
/// taken over, and the annotation removed so that the in-memory provider leaves it alone.
pub const SIMULATED_KUBECONFIG_ANNOTATION: &str =
    "inmemory.infrastructure.cluster.x-k8s.io/simulated-kubeconfig";

/// The name of a cluster's kubeconfig Secret.
pub fn secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// A failure to build or write the kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the Cluster has no spec.controlPlaneEndpoint yet")]
    NoEndpoint,
    #[error(transparent)]
    Certificates(#[from] certs::Error),
    #[error("cannot read Secret {name}")]
    Read {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot write Secret {name}")]
    Write {
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// What [`ensure`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Created,
    /// The Secret was rewritten: its certificate was due for renewal, or it pointed elsewhere,
    /// or it was another controller's.
    Renewed,
    Unchanged,
    /// The Secret has no controller or another one: a user's, left alone.
    UserProvided,
}

/// The URL of a Cluster's API server, from its `spec.controlPlaneEndpoint`.
pub fn server_url(cluster: &Cluster) -> Option<String> {
    let endpoint = &cluster.spec.control_plane_endpoint;
    if !endpoint.is_valid() {
        return None;
    }
    let host = endpoint.host.as_deref()?;
    let port = endpoint.port?;
    let in_memory = cluster
        .spec
        .infrastructure_ref
        .as_ref()
        .is_some_and(|reference| {
            reference.kind == "DevCluster"
                && reference.api_group == "infrastructure.cluster.x-k8s.io"
        });
    let scheme = if in_memory { "http" } else { "https" };
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    Some(format!("{scheme}://{host}:{port}"))
}

/// A client certificate for `kubernetes-admin` in `system:masters`, signed by `ca`, valid from
/// `now` for [`CLIENT_CERTIFICATE_VALIDITY`]; as (certificate PEM, key PEM).
pub fn admin_client_certificate(
    ca: &KeyMaterial,
    now: OffsetDateTime,
) -> Result<(String, String), Error> {
    let leaf = certs::Leaf {
        common_name: "kubernetes-admin",
        organizations: &["system:masters"],
        client: true,
        validity: CLIENT_CERTIFICATE_VALIDITY,
        ..certs::Leaf::default()
    };
    let issued = certs::issue(ca, &leaf, now)?;
    Ok((issued.certificate_pem, issued.private_key_pem))
}

/// A kubeconfig in upstream's naming: cluster `<cluster>`, user `<cluster>-admin`, context
/// `<cluster>-admin@<cluster>`.
pub fn render(
    cluster: &str,
    server: &str,
    ca_pem: &str,
    client_certificate_pem: &str,
    client_key_pem: &str,
) -> String {
    render_for(
        &format!("{cluster}-admin"),
        cluster,
        server,
        ca_pem,
        client_certificate_pem,
        client_key_pem,
    )
}

/// A kubeconfig for `user` (kubeadm's kubelet.conf names its user `system:node:<node>`), with
/// context `<user>@<cluster>`.
pub fn render_for(
    user: &str,
    cluster: &str,
    server: &str,
    ca_pem: &str,
    client_certificate_pem: &str,
    client_key_pem: &str,
) -> String {
    let context = format!("{user}@{cluster}");
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": cluster,
            "cluster": {
                "server": server,
                "certificate-authority-data": BASE64.encode(ca_pem),
            },
        }],
        "contexts": [{
            "name": context,
            "context": { "cluster": cluster, "user": user },
        }],
        "current-context": context,
        "preferences": {},
        "users": [{
            "name": user,
            "user": {
                "client-certificate-data": BASE64.encode(client_certificate_pem),
                "client-key-data": BASE64.encode(client_key_pem),
            },
        }],
    });
    serde_yaml::to_string(&config).expect("a kubeconfig serializes")
}

/// A new admin kubeconfig for `cluster` at `server`.
pub fn generate(
    cluster: &str,
    server: &str,
    ca: &KeyMaterial,
    now: OffsetDateTime,
) -> Result<String, Error> {
    let (certificate, key) = admin_client_certificate(ca, now)?;
    Ok(render(
        cluster,
        server,
        &ca.certificate_pem,
        &certificate,
        &key,
    ))
}

/// Why an existing kubeconfig must be rewritten, or `None` when it is current: it points at
/// `server`, trusts `ca`, and holds a client certificate issued by `ca` with more than
/// [`RENEW_BEFORE`] left at `now`.
pub fn needs_renewal(
    kubeconfig: &[u8],
    server: &str,
    ca: &KeyMaterial,
    now: OffsetDateTime,
) -> Option<String> {
    let config: serde_json::Value = match serde_yaml::from_slice(kubeconfig) {
        Ok(config) => config,
        Err(error) => return Some(format!("it does not parse: {error}")),
    };
    let cluster = &config["clusters"][0]["cluster"];
    if cluster["server"].as_str() != Some(server) {
        return Some(format!("it does not point at {server}"));
    }
    let decode = |value: &serde_json::Value| {
        value
            .as_str()
            .and_then(|text| BASE64.decode(text).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok())
    };
    if decode(&cluster["certificate-authority-data"]).as_deref()
        != Some(ca.certificate_pem.as_str())
    {
        return Some("it does not trust the cluster CA".into());
    }
    let Some(client_certificate) = decode(&config["users"][0]["user"]["client-certificate-data"])
    else {
        return Some("it has no client certificate".into());
    };
    match client_certificate_expiry(&client_certificate, &ca.certificate_pem) {
        Err(reason) => Some(reason),
        Ok(not_after) if not_after - now < RENEW_BEFORE => {
            Some(format!("its client certificate expires at {not_after}"))
        }
        Ok(_) => None,
    }
}

/// The end of validity of a client certificate, if `ca` signed it.
fn client_certificate_expiry(
    certificate_pem: &str,
    ca_pem: &str,
) -> Result<OffsetDateTime, String> {
    let parse = |pem: &str| -> Result<Vec<u8>, String> {
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
            .map_err(|error| format!("a certificate does not parse: {error}"))?;
        Ok(block.contents)
    };
    let (certificate_der, ca_der) = (parse(certificate_pem)?, parse(ca_pem)?);
    let (_, certificate) = x509_parser::parse_x509_certificate(&certificate_der)
        .map_err(|error| format!("the client certificate does not parse: {error}"))?;
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der)
        .map_err(|error| format!("the CA certificate does not parse: {error}"))?;
    certificate
        .verify_signature(Some(ca.public_key()))
        .map_err(|_| "its client certificate was not issued by the cluster CA".to_string())?;
    Ok(certificate.validity().not_after.to_datetime())
}

/// Makes the Cluster's kubeconfig Secret current: creates it when missing, and rewrites it,
/// with a new client certificate, when it is due for renewal ([`needs_renewal`]) or another
/// controller wrote it. `owner` becomes its controller (the KubeadmControlPlane). The Secret is
/// read through `secrets` (a cache, usually): a rewrite is guarded by the resourceVersion read.
pub async fn ensure(
    secrets: &crate::certs::SecretReader,
    cluster: &Cluster,
    ca: &KeyMaterial,
    owner: OwnerReference,
) -> Result<Outcome, Error> {
    let namespace = cluster.namespace().unwrap_or_default();
    let cluster_name = cluster.name_any();
    let name = secret_name(&cluster_name);
    let server = server_url(cluster).ok_or(Error::NoEndpoint)?;
    let existing = secrets
        .get(&namespace, &name)
        .await
        .map_err(|source| Error::Read {
            name: name.clone(),
            source,
        })?;
    let now = OffsetDateTime::now_utc();
    let api: Api<Secret> = Api::namespaced(secrets.client().clone(), &namespace);
    let write_error = |source| Error::Write {
        name: name.clone(),
        source,
    };
    let Some(existing) = existing else {
        let value = generate(&cluster_name, &server, ca, now)?;
        tracing::info!(secret = %name, "Creating the admin kubeconfig of cluster {cluster_name}");
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                labels: Some(BTreeMap::from([(
                    corral_api::labels::CLUSTER_NAME.to_string(),
                    cluster_name.clone(),
                )])),
                owner_references: Some(vec![owner]),
                ..Default::default()
            },
            type_: Some(corral_api::CLUSTER_SECRET_TYPE.to_string()),
            data: Some(BTreeMap::from([(
                DATA_KEY.to_string(),
                ByteString(value.into_bytes()),
            )])),
            ..Default::default()
        };
        return match api.create(&PostParams::default(), &secret).await {
            Ok(_) => Ok(Outcome::Created),
            // Written meanwhile; the next reconcile looks at it.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Outcome::Unchanged),
            Err(source) => Err(write_error(source)),
        };
    };

    let controller = existing
        .owner_references()
        .iter()
        .find(|reference| reference.controller == Some(true))
        .cloned();
    let simulated = existing
        .annotations()
        .contains_key(SIMULATED_KUBECONFIG_ANNOTATION);
    let ours = controller.as_ref().is_some_and(|c| c.uid == owner.uid);
    let clusters = controller
        .as_ref()
        .is_some_and(|c| c.kind == "Cluster" && c.uid == cluster.uid().unwrap_or_default());
    if !(ours || clusters || simulated) {
        return Ok(Outcome::UserProvided);
    }
    let current = existing
        .data
        .as_ref()
        .and_then(|data| data.get(DATA_KEY))
        .map(|value| value.0.as_slice())
        .unwrap_or_default();
    let reason = if ours && !simulated {
        needs_renewal(current, &server, ca, now)
    } else {
        Some("another controller wrote it".to_string())
    };
    let Some(reason) = reason else {
        return Ok(Outcome::Unchanged);
    };
    tracing::info!(secret = %name, %reason, "Renewing the admin kubeconfig of cluster {cluster_name}");
    let value = generate(&cluster_name, &server, ca, now)?;
    let mut owners: Vec<OwnerReference> = existing
        .owner_references()
        .iter()
        .filter(|reference| reference.controller != Some(true) && reference.uid != owner.uid)
        .cloned()
        .collect();
    owners.push(owner);
    let patch = json!({
        "metadata": {
            "resourceVersion": existing.resource_version(),
            "ownerReferences": owners,
            "annotations": { SIMULATED_KUBECONFIG_ANNOTATION: null },
            "labels": { corral_api::labels::CLUSTER_NAME: cluster_name },
        },
        "type": corral_api::CLUSTER_SECRET_TYPE,
        "data": { DATA_KEY: BASE64.encode(value) },
    });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(write_error)?;
    Ok(Outcome::Renewed)
}

#[cfg(test)]
mod tests;
