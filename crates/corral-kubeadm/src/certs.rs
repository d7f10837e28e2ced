//! A cluster's certificates: the cluster CA, the etcd CA, the front-proxy CA and the
//! service-account key pair, kept as Secrets in the cluster's namespace with upstream's names,
//! type, keys and label (`util/secret/certificates.go`):
//!
//! | purpose | Secret | keys |
//! |---|---|---|
//! | cluster CA | `<cluster>-ca` | `tls.crt`, `tls.key` |
//! | etcd CA | `<cluster>-etcd` | `tls.crt`, `tls.key` |
//! | front-proxy CA | `<cluster>-proxy` | `tls.crt`, `tls.key` |
//! | service accounts | `<cluster>-sa` | `tls.crt` (the public key), `tls.key` |
//!
//! all of type `cluster.x-k8s.io/secret` with the `cluster.x-k8s.io/cluster-name` label.
//!
//! [`lookup_or_generate`] reads each Secret and generates only the missing ones, once: a key is
//! never generated again while its Secret exists, so reconciles cost a read, not a key
//! generation (upstream generated four RSA keys per KubeadmControlPlane reconcile until its PR
//! #8617). A Secret a user created is used as it is; one that does not hold a parseable
//! certificate and matching key is an [`Error::InvalidSecret`] that names the Secret and says
//! why, for the caller's condition.
//!
//! Keys are ECDSA P-256 unless the ClusterConfiguration's `encryptionAlgorithm` asks for
//! ECDSA-P384 (kubeadm accepts both for its CAs and for service-account keys). Upstream
//! generates RSA-2048 by default; Corral prefers P-256 because generating one takes well under a
//! millisecond where RSA takes tens, and every Kubernetes component accepts it. The RSA
//! algorithms cannot be generated here (ring, the workspace's crypto library, signs with RSA keys
//! but does not generate them): asking for them is an [`Error::UnsupportedAlgorithm`]; RSA CAs
//! supplied as Secrets are used as they are.
//!
//! CAs are valid for 10 years from generation, as upstream's; their subjects use kubeadm's
//! common names (`kubernetes`, `etcd-ca`, `front-proxy-ca`).
//!
//! The Secrets are read through [`SecretReader`]: from the process's [`ClusterCache`] Secret
//! watch when it has them, so that a reconcile costs no request, else with a GET.

use std::collections::BTreeMap;
use std::sync::Arc;

use corral_runtime::cluster_cache::ClusterCache;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384,
    PublicKeyData, SanType, SignatureAlgorithm,
};
use time::{Duration, OffsetDateTime};

use crate::api::bootstrap::EncryptionAlgorithmType;

/// The key of a Secret holding the certificate (or, for the service-account key pair, the
/// public key), PEM-encoded.
pub const CERTIFICATE_KEY: &str = "tls.crt";

/// The key of a Secret holding the private key, PEM-encoded.
pub const PRIVATE_KEY_KEY: &str = "tls.key";

/// How long a generated CA is valid (upstream: 10 years).
pub const CA_VALIDITY: Duration = Duration::days(3650);

/// Reads a cluster's certificate and kubeconfig Secrets: from the Secret watch of the
/// process's [`ClusterCache`] when it has them (see [`ClusterCache::cluster_secret`]), else with
/// a GET (no cache, the watch has not listed yet, or the Secret is missing, unlabelled or just
/// written). Writes go through the client. Cheap to clone.
#[derive(Clone)]
pub struct SecretReader {
    client: kube::Client,
    cache: Option<ClusterCache>,
}

impl SecretReader {
    /// A reader that GETs every Secret.
    pub fn new(client: kube::Client) -> Self {
        SecretReader {
            client,
            cache: None,
        }
    }

    /// A reader that looks in `cache` first.
    pub fn cached(client: kube::Client, cache: ClusterCache) -> Self {
        SecretReader {
            client,
            cache: Some(cache),
        }
    }

    /// The client writes go through.
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The Secret, or `None` when it does not exist.
    pub async fn get(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Secret>>, kube::Error> {
        if let Some(secret) = self
            .cache
            .as_ref()
            .and_then(|cache| cache.cluster_secret(namespace, name))
        {
            return Ok(Some(secret));
        }
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        Ok(secrets.get_opt(name).await?.map(Arc::new))
    }

    /// The Secret read again from the API server, bypassing the cache (after a write lost to
    /// another writer).
    async fn get_fresh(&self, namespace: &str, name: &str) -> Result<Option<Secret>, kube::Error> {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        secrets.get_opt(name).await
    }
}

/// What a cluster certificate Secret is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// The cluster CA: signs the API server's serving certificate and client certificates,
    /// among them the admin kubeconfig's.
    ClusterCa,
    /// The etcd CA: etcd's serving and peer certificates and the API server's etcd client.
    EtcdCa,
    /// The front-proxy CA: the API server's aggregation-layer client.
    FrontProxyCa,
    /// The key pair that signs and verifies service-account tokens.
    ServiceAccount,
}

impl Purpose {
    /// Every purpose, in the order upstream lists them.
    pub const ALL: [Purpose; 4] = [
        Purpose::ClusterCa,
        Purpose::EtcdCa,
        Purpose::FrontProxyCa,
        Purpose::ServiceAccount,
    ];

    /// The suffix of the Secret's name: `<cluster>-<suffix>`.
    pub fn suffix(self) -> &'static str {
        match self {
            Purpose::ClusterCa => "ca",
            Purpose::EtcdCa => "etcd",
            Purpose::FrontProxyCa => "proxy",
            Purpose::ServiceAccount => "sa",
        }
    }

    /// The name of the cluster's Secret for this purpose.
    pub fn secret_name(self, cluster: &str) -> String {
        format!("{cluster}-{}", self.suffix())
    }

    /// The common name of a generated CA, kubeadm's.
    fn common_name(self) -> &'static str {
        match self {
            Purpose::ClusterCa => "kubernetes",
            Purpose::EtcdCa => "etcd-ca",
            Purpose::FrontProxyCa => "front-proxy-ca",
            Purpose::ServiceAccount => "service-accounts",
        }
    }

    /// Where kubeadm expects the certificate (or public key) and the key on a control plane
    /// machine, under `/etc/kubernetes/pki`.
    pub fn host_paths(self) -> (&'static str, &'static str) {
        match self {
            Purpose::ClusterCa => ("/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki/ca.key"),
            Purpose::EtcdCa => (
                "/etc/kubernetes/pki/etcd/ca.crt",
                "/etc/kubernetes/pki/etcd/ca.key",
            ),
            Purpose::FrontProxyCa => (
                "/etc/kubernetes/pki/front-proxy-ca.crt",
                "/etc/kubernetes/pki/front-proxy-ca.key",
            ),
            Purpose::ServiceAccount => ("/etc/kubernetes/pki/sa.pub", "/etc/kubernetes/pki/sa.key"),
        }
    }
}

/// A certificate (or public key) and its private key, PEM-encoded.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyMaterial {
    /// The certificate; for the service-account key pair, the public key.
    pub certificate_pem: String,
    /// The private key. Never logged.
    pub private_key_pem: String,
}

impl std::fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyMaterial")
            .field("certificate_pem", &self.certificate_pem)
            .field("private_key_pem", &"<redacted>")
            .finish()
    }
}

/// The four sets of key material of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterCertificates {
    pub cluster_ca: KeyMaterial,
    pub etcd_ca: KeyMaterial,
    pub front_proxy_ca: KeyMaterial,
    pub service_account: KeyMaterial,
}

impl ClusterCertificates {
    /// The key material for a purpose.
    pub fn get(&self, purpose: Purpose) -> &KeyMaterial {
        match purpose {
            Purpose::ClusterCa => &self.cluster_ca,
            Purpose::EtcdCa => &self.etcd_ca,
            Purpose::FrontProxyCa => &self.front_proxy_ca,
            Purpose::ServiceAccount => &self.service_account,
        }
    }

    /// kubeadm's discovery hash of the cluster CA (`sha256:<hex>` of its SubjectPublicKeyInfo),
    /// which joining nodes use to pin the CA.
    pub fn ca_cert_hash(&self) -> Result<String, String> {
        ca_cert_hash(&self.cluster_ca.certificate_pem)
    }
}

/// The key algorithm of generated keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyAlgorithm {
    /// ECDSA on P-256 with SHA-256, Corral's default.
    #[default]
    EcdsaP256,
    /// ECDSA on P-384 with SHA-384.
    EcdsaP384,
}

impl KeyAlgorithm {
    /// The algorithm a ClusterConfiguration's `encryptionAlgorithm` asks for: unset means
    /// Corral's default, P-256.
    pub fn from_encryption_algorithm(
        algorithm: Option<EncryptionAlgorithmType>,
    ) -> Result<KeyAlgorithm, Error> {
        match algorithm {
            None | Some(EncryptionAlgorithmType::EcdsaP256) => Ok(KeyAlgorithm::EcdsaP256),
            Some(EncryptionAlgorithmType::EcdsaP384) => Ok(KeyAlgorithm::EcdsaP384),
            Some(other) => Err(Error::UnsupportedAlgorithm(format!("{other:?}"))),
        }
    }

    fn signature_algorithm(self) -> &'static SignatureAlgorithm {
        match self {
            KeyAlgorithm::EcdsaP256 => &PKCS_ECDSA_P256_SHA256,
            KeyAlgorithm::EcdsaP384 => &PKCS_ECDSA_P384_SHA384,
        }
    }

    /// A new key pair.
    pub fn generate_key(self) -> Result<KeyPair, Error> {
        KeyPair::generate_for(self.signature_algorithm())
            .map_err(|error| Error::Generate(error.to_string()))
    }
}

/// A failure to find, check or create a cluster's certificates.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Secret exists but does not hold usable key material; says which and why.
    #[error("Secret {secret} is not a usable {purpose}: {reason}")]
    InvalidSecret {
        secret: String,
        purpose: &'static str,
        reason: String,
    },
    #[error(
        "encryptionAlgorithm {0} cannot be generated by Corral; use ECDSA-P256 or ECDSA-P384, or supply the certificate Secrets"
    )]
    UnsupportedAlgorithm(String),
    #[error("cannot generate a key or certificate: {0}")]
    Generate(String),
    #[error("cannot read Secret {name}")]
    Read {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot create Secret {name}")]
    Create {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot make {owner} the controller of Secret {name}")]
    Own {
        name: String,
        owner: String,
        #[source]
        source: kube::Error,
    },
}

/// Upstream's `ensureCertificatesOwnerRef`: a certificate Secret of the cluster type (Corral's
/// or a user's) is controlled by `owner`, whoever controlled it before; so an owner reference
/// stripped from it comes back. Other Secrets are left as they are.
async fn ensure_controlled_by(
    secrets: &SecretReader,
    secret: &Secret,
    owner: &OwnerReference,
) -> Result<(), Error> {
    if secret.type_.as_deref() != Some(corral_api::CLUSTER_SECRET_TYPE) {
        return Ok(());
    }
    let current = secret.metadata.owner_references.clone().unwrap_or_default();
    if current.iter().any(|existing| existing == owner) {
        return Ok(());
    }
    let mut owners: Vec<OwnerReference> = current
        .into_iter()
        .filter(|existing| existing.controller != Some(true) && existing.uid != owner.uid)
        .collect();
    owners.push(owner.clone());
    let name = secret.metadata.name.clone().unwrap_or_default();
    let namespace = secret.metadata.namespace.clone().unwrap_or_default();
    tracing::info!(secret = %name, "Making {} {} the controller of Secret {name}", owner.kind, owner.name);
    let patch = serde_json::json!({ "metadata": {
        "ownerReferences": owners,
        "resourceVersion": secret.metadata.resource_version,
    }});
    let api: Api<Secret> = Api::namespaced(secrets.client().clone(), &namespace);
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| Error::Own {
            name,
            owner: format!("{} {}", owner.kind, owner.name),
            source,
        })?;
    Ok(())
}

impl Purpose {
    fn describe(self) -> &'static str {
        match self {
            Purpose::ClusterCa => "cluster CA",
            Purpose::EtcdCa => "etcd CA",
            Purpose::FrontProxyCa => "front-proxy CA",
            Purpose::ServiceAccount => "service-account key pair",
        }
    }
}

/// Generates the key material for a purpose: a self-signed CA valid for [`CA_VALIDITY`] from
/// `now`, or a key pair for service accounts.
pub fn generate(
    purpose: Purpose,
    algorithm: KeyAlgorithm,
    now: OffsetDateTime,
) -> Result<KeyMaterial, Error> {
    let key = algorithm.generate_key()?;
    if purpose == Purpose::ServiceAccount {
        return Ok(KeyMaterial {
            certificate_pem: key.public_key_pem(),
            private_key_pem: key.serialize_pem(),
        });
    }
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, purpose.common_name());
    params.distinguished_name = subject;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.not_before = now - Duration::minutes(5);
    params.not_after = now + CA_VALIDITY;
    params.serial_number = Some(random_serial());
    let certificate = params
        .self_signed(&key)
        .map_err(|error| Error::Generate(error.to_string()))?;
    Ok(KeyMaterial {
        certificate_pem: certificate.pem(),
        private_key_pem: key.serialize_pem(),
    })
}

/// A certificate a cluster's CA signs for one of its parts: kubeadm's leaf certificates (the
/// API server's serving certificate, etcd's serving and peer certificates, client certificates
/// of the admin and of the API server towards etcd).
#[derive(Clone, Debug, Default)]
pub struct Leaf<'a> {
    pub common_name: &'a str,
    /// The subject's organizations: a client certificate's groups.
    pub organizations: &'a [&'a str],
    /// The names a serving certificate is valid for: IP addresses or DNS names.
    pub names: &'a [String],
    /// Valid for serving (TLS server authentication).
    pub server: bool,
    /// Valid as a client certificate.
    pub client: bool,
    pub validity: Duration,
}

/// Issues `leaf` with a new P-256 key, signed by `ca`, valid from five minutes before `now`.
pub fn issue(ca: &KeyMaterial, leaf: &Leaf<'_>, now: OffsetDateTime) -> Result<KeyMaterial, Error> {
    let ca_key = KeyPair::from_pem(&ca.private_key_pem)
        .map_err(|error| Error::Generate(format!("the CA key does not parse: {error}")))?;
    let issuer = Issuer::from_ca_cert_pem(&ca.certificate_pem, ca_key)
        .map_err(|error| Error::Generate(format!("the CA certificate does not parse: {error}")))?;
    let key = KeyAlgorithm::EcdsaP256.generate_key()?;
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    for organization in leaf.organizations {
        subject.push(DnType::OrganizationName, *organization);
    }
    subject.push(DnType::CommonName, leaf.common_name);
    params.distinguished_name = subject;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    if leaf.server {
        params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
    }
    if leaf.client {
        params
            .extended_key_usages
            .push(ExtendedKeyUsagePurpose::ClientAuth);
    }
    for name in leaf.names {
        params.subject_alt_names.push(match name.parse() {
            Ok(address) => SanType::IpAddress(address),
            Err(_) => SanType::DnsName(
                name.clone()
                    .try_into()
                    .map_err(|_| Error::Generate(format!("{name:?} is not a DNS name")))?,
            ),
        });
    }
    params.not_before = now - Duration::minutes(5);
    params.not_after = now + leaf.validity;
    params.serial_number = Some(random_serial());
    params.use_authority_key_identifier_extension = true;
    let certificate = params
        .signed_by(&key, &issuer)
        .map_err(|error| Error::Generate(error.to_string()))?;
    Ok(KeyMaterial {
        certificate_pem: certificate.pem(),
        private_key_pem: key.serialize_pem(),
    })
}

/// A certificate signing request (PEM) for a client certificate of `common_name` in
/// `organizations`, with its new P-256 private key (PEM): what a kubelet sends to get its
/// client certificate.
pub fn client_request(
    common_name: &str,
    organizations: &[&str],
) -> Result<(String, String), Error> {
    let key = KeyAlgorithm::EcdsaP256.generate_key()?;
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    for organization in organizations {
        subject.push(DnType::OrganizationName, *organization);
    }
    subject.push(DnType::CommonName, common_name);
    params.distinguished_name = subject;
    let request = params
        .serialize_request(&key)
        .map_err(|error| Error::Generate(error.to_string()))?;
    let pem = request
        .pem()
        .map_err(|error| Error::Generate(error.to_string()))?;
    Ok((pem, key.serialize_pem()))
}

/// What a certificate signing request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requested {
    pub common_name: String,
    pub organizations: Vec<String>,
    /// Whether it asks for subject alternative names (a client certificate does not).
    pub has_names: bool,
}

/// Reads a PEM certificate signing request, checking its signature.
pub fn read_request(request_pem: &str) -> Result<Requested, String> {
    let params = rcgen::CertificateSigningRequestParams::from_pem(request_pem)
        .map_err(|error| format!("not a certificate request: {error}"))?;
    let subject = &params.params.distinguished_name;
    let text = |value: &rcgen::DnValue| match value {
        rcgen::DnValue::Utf8String(text) => text.clone(),
        rcgen::DnValue::PrintableString(text) => text.as_str().to_owned(),
        other => format!("{other:?}"),
    };
    let common_name = subject
        .get(&DnType::CommonName)
        .map(text)
        .unwrap_or_default();
    let organizations = subject
        .iter()
        .filter(|(kind, _)| **kind == DnType::OrganizationName)
        .map(|(_, value)| text(value))
        .collect();
    Ok(Requested {
        common_name,
        organizations,
        has_names: !params.params.subject_alt_names.is_empty(),
    })
}

/// Signs a certificate signing request as a client certificate by `ca`, valid from five
/// minutes before `now` for `validity` (kube-controller-manager's signer; the request's
/// subject is kept, its extensions are not).
pub fn sign_client_request(
    ca: &KeyMaterial,
    request_pem: &str,
    validity: Duration,
    now: OffsetDateTime,
) -> Result<String, Error> {
    let ca_key = KeyPair::from_pem(&ca.private_key_pem)
        .map_err(|error| Error::Generate(format!("the CA key does not parse: {error}")))?;
    let issuer = Issuer::from_ca_cert_pem(&ca.certificate_pem, ca_key)
        .map_err(|error| Error::Generate(format!("the CA certificate does not parse: {error}")))?;
    let mut request = rcgen::CertificateSigningRequestParams::from_pem(request_pem)
        .map_err(|error| Error::Generate(format!("not a certificate request: {error}")))?;
    let params = &mut request.params;
    params.subject_alt_names.clear();
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.not_before = now - Duration::minutes(5);
    params.not_after = now + validity;
    params.serial_number = Some(random_serial());
    params.use_authority_key_identifier_extension = true;
    let certificate = request
        .signed_by(&issuer)
        .map_err(|error| Error::Generate(error.to_string()))?;
    Ok(certificate.pem())
}

/// A random positive serial number of 16 bytes, as RFC 5280 wants them unpredictable.
pub(crate) fn random_serial() -> rcgen::SerialNumber {
    let mut bytes: [u8; 16] = rand::random();
    bytes[0] &= 0x7f;
    rcgen::SerialNumber::from_slice(&bytes)
}

/// Checks key material read from a Secret: a CA must be a parseable CA certificate whose
/// public key is the private key's; the service-account pair must be a parseable key whose
/// public half is the stored public key.
pub fn check(purpose: Purpose, material: &KeyMaterial) -> Result<(), String> {
    let key = KeyPair::from_pem(&material.private_key_pem)
        .map_err(|error| format!("{PRIVATE_KEY_KEY} is not a PEM private key ({error})"))?;
    if purpose == Purpose::ServiceAccount {
        let stored = pem_contents(&material.certificate_pem, CERTIFICATE_KEY)?;
        if stored != key.subject_public_key_info() {
            return Err(format!(
                "{CERTIFICATE_KEY} is not the public key of {PRIVATE_KEY_KEY}"
            ));
        }
        return Ok(());
    }
    let der = pem_contents(&material.certificate_pem, CERTIFICATE_KEY)?;
    let (_, certificate) = x509_parser::parse_x509_certificate(&der)
        .map_err(|error| format!("{CERTIFICATE_KEY} is not an X.509 certificate ({error})"))?;
    if !certificate.is_ca() {
        return Err(format!("{CERTIFICATE_KEY} is not a CA certificate"));
    }
    if certificate.public_key().subject_public_key.data.as_ref() != key.public_key_raw() {
        return Err(format!(
            "{CERTIFICATE_KEY} does not belong to the private key in {PRIVATE_KEY_KEY}"
        ));
    }
    Ok(())
}

/// The DER of a PEM certificate (its first block), e.g. a CA to trust.
pub fn certificate_der(certificate_pem: &str) -> Result<Vec<u8>, String> {
    pem_contents(certificate_pem, "the certificate")
}

/// The DER contents of the first PEM block of `text`.
fn pem_contents(text: &str, key: &str) -> Result<Vec<u8>, String> {
    let block = rustls_pki_pem(text).ok_or_else(|| format!("{key} holds no PEM block"))?;
    Ok(block)
}

/// Decodes the first PEM block (`-----BEGIN ...-----`) of a text.
fn rustls_pki_pem(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start..];
    let body_start = rest.find('\n')? + 1;
    let end = rest.find("-----END ")?;
    let body: String = rest[body_start..end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

/// kubeadm's discovery hash of a CA certificate: `sha256:` and the hex SHA-256 of its
/// SubjectPublicKeyInfo.
pub fn ca_cert_hash(certificate_pem: &str) -> Result<String, String> {
    let der = pem_contents(certificate_pem, CERTIFICATE_KEY)?;
    let (_, certificate) = x509_parser::parse_x509_certificate(&der)
        .map_err(|error| format!("not an X.509 certificate ({error})"))?;
    let digest = ring::digest::digest(&ring::digest::SHA256, certificate.public_key().raw);
    let hex: String = digest
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Ok(format!("sha256:{hex}"))
}

/// The key material a Secret holds, if it has both keys as UTF-8.
fn material_of(secret: &Secret) -> Result<KeyMaterial, String> {
    let data = secret.data.as_ref();
    let field = |key: &str| -> Result<String, String> {
        let bytes = data
            .and_then(|data| data.get(key))
            .ok_or_else(|| format!("it has no {key} key"))?;
        String::from_utf8(bytes.0.clone()).map_err(|_| format!("{key} is not text"))
    };
    Ok(KeyMaterial {
        certificate_pem: field(CERTIFICATE_KEY)?,
        private_key_pem: field(PRIVATE_KEY_KEY)?,
    })
}

/// The Secret of a generated purpose, with upstream's type and label.
pub fn secret(
    namespace: &str,
    cluster: &str,
    purpose: Purpose,
    material: &KeyMaterial,
    owner: Option<OwnerReference>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(purpose.secret_name(cluster)),
            namespace: Some(namespace.to_string()),
            labels: Some(BTreeMap::from([(
                corral_api::labels::CLUSTER_NAME.to_string(),
                cluster.to_string(),
            )])),
            owner_references: owner.map(|owner| vec![owner]),
            ..Default::default()
        },
        type_: Some(corral_api::CLUSTER_SECRET_TYPE.to_string()),
        data: Some(BTreeMap::from([
            (
                CERTIFICATE_KEY.to_string(),
                ByteString(material.certificate_pem.clone().into_bytes()),
            ),
            (
                PRIVATE_KEY_KEY.to_string(),
                ByteString(material.private_key_pem.clone().into_bytes()),
            ),
        ])),
        ..Default::default()
    }
}

/// Reads the cluster's four certificate Secrets from `namespace`, creating each missing one
/// with newly generated key material (owned by `owner`, if given) and checking each existing
/// one. Existing Secrets are never changed.
///
/// A Secret that another writer creates between the read and the create is read again and used,
/// so concurrent callers end up with the same key material.
pub async fn lookup_or_generate(
    secrets: &SecretReader,
    namespace: &str,
    cluster: &str,
    algorithm: KeyAlgorithm,
    owner: Option<OwnerReference>,
) -> Result<ClusterCertificates, Error> {
    let mut found = Vec::with_capacity(4);
    for purpose in Purpose::ALL {
        found.push(
            lookup_or_generate_one(secrets, namespace, cluster, purpose, algorithm, &owner).await?,
        );
    }
    let [cluster_ca, etcd_ca, front_proxy_ca, service_account]: [KeyMaterial; 4] =
        found.try_into().expect("one per purpose");
    Ok(ClusterCertificates {
        cluster_ca,
        etcd_ca,
        front_proxy_ca,
        service_account,
    })
}

/// Reads the cluster's certificate Secrets without creating any: `None` while one is missing.
pub async fn lookup(
    secrets: &SecretReader,
    namespace: &str,
    cluster: &str,
) -> Result<Option<ClusterCertificates>, Error> {
    let mut found = Vec::with_capacity(4);
    for purpose in Purpose::ALL {
        let Some(material) = lookup_one(secrets, namespace, purpose, cluster).await? else {
            return Ok(None);
        };
        found.push(material);
    }
    let [cluster_ca, etcd_ca, front_proxy_ca, service_account]: [KeyMaterial; 4] =
        found.try_into().expect("one per purpose");
    Ok(Some(ClusterCertificates {
        cluster_ca,
        etcd_ca,
        front_proxy_ca,
        service_account,
    }))
}

/// Reads only the cluster CA Secret (`<cluster>-ca`), without creating it: `None` while it is
/// missing. A worker joins with the CA's hash alone, so it reads no other certificate (upstream
/// `NewCertificatesForWorker`).
pub async fn lookup_cluster_ca(
    secrets: &SecretReader,
    namespace: &str,
    cluster: &str,
) -> Result<Option<KeyMaterial>, Error> {
    lookup_one(secrets, namespace, Purpose::ClusterCa, cluster).await
}

/// Reads only the etcd CA Secret (`<cluster>-etcd`), without creating it: `None` while it is
/// missing. The control plane provider's client certificate for a real etcd is issued from it.
pub async fn lookup_etcd_ca(
    secrets: &SecretReader,
    namespace: &str,
    cluster: &str,
) -> Result<Option<KeyMaterial>, Error> {
    lookup_one(secrets, namespace, Purpose::EtcdCa, cluster).await
}

/// Reads and checks the cluster's Secret for `purpose`: `None` while it is missing.
async fn lookup_one(
    secrets: &SecretReader,
    namespace: &str,
    purpose: Purpose,
    cluster: &str,
) -> Result<Option<KeyMaterial>, Error> {
    let name = purpose.secret_name(cluster);
    let Some(existing) = secrets
        .get(namespace, &name)
        .await
        .map_err(|source| Error::Read {
            name: name.clone(),
            source,
        })?
    else {
        return Ok(None);
    };
    checked(purpose, &name, &existing).map(Some)
}

fn checked(purpose: Purpose, name: &str, secret: &Secret) -> Result<KeyMaterial, Error> {
    let invalid = |reason: String| Error::InvalidSecret {
        secret: name.to_string(),
        purpose: purpose.describe(),
        reason,
    };
    let material = material_of(secret).map_err(invalid)?;
    check(purpose, &material).map_err(invalid)?;
    Ok(material)
}

async fn lookup_or_generate_one(
    secrets: &SecretReader,
    namespace: &str,
    cluster: &str,
    purpose: Purpose,
    algorithm: KeyAlgorithm,
    owner: &Option<OwnerReference>,
) -> Result<KeyMaterial, Error> {
    let name = purpose.secret_name(cluster);
    let read = |source| Error::Read {
        name: name.clone(),
        source,
    };
    if let Some(existing) = secrets.get(namespace, &name).await.map_err(read)? {
        let material = checked(purpose, &name, &existing)?;
        // Only a controller takes Secrets over (the KubeadmControlPlane); a plain owner (the
        // Cluster, for a KubeadmConfig's init) is given to new Secrets only.
        if let Some(owner) = owner
            .as_ref()
            .filter(|owner| owner.controller == Some(true))
        {
            ensure_controlled_by(secrets, &existing, owner).await?;
        }
        return Ok(material);
    }
    let material = generate(purpose, algorithm, OffsetDateTime::now_utc())?;
    tracing::info!(secret = %name, "Creating the {} of cluster {cluster}", purpose.describe());
    let secret = secret(namespace, cluster, purpose, &material, owner.clone());
    let api: Api<Secret> = Api::namespaced(secrets.client().clone(), namespace);
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(material),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let existing = secrets
                .get_fresh(namespace, &name)
                .await
                .map_err(|source| Error::Read {
                    name: name.clone(),
                    source,
                })?
                .ok_or_else(|| Error::InvalidSecret {
                    secret: name.clone(),
                    purpose: purpose.describe(),
                    reason: "it was created and deleted while being read".into(),
                })?;
            checked(purpose, &name, &existing)
        }
        Err(source) => Err(Error::Create { name, source }),
    }
}
