//! The certificates a management plane issues for itself: a CA, the API server's serving
//! certificate and client certificates (CN = user, O = groups), all ECDSA P-256 as
//! corral-kubeadm's cluster certificates (a key takes well under a millisecond to generate).
//! Also the PEM reading the TLS settings need.

use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use time::OffsetDateTime;

/// How long a generated CA is valid (kubeadm's: 10 years).
pub const CA_VALIDITY: Duration = Duration::from_secs(3650 * 24 * 3600);

/// How long a generated serving or client certificate is valid (kubeadm's: 1 year).
pub const CERTIFICATE_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot generate a key: {0}")]
    GenerateKey(String),
    #[error("cannot sign a certificate: {0}")]
    Sign(String),
    #[error("the CA does not parse: {0}")]
    ParseCa(String),
    #[error("{what} holds no PEM {expected}")]
    NoPem {
        what: String,
        expected: &'static str,
    },
    // The I/O error is in the message, not a source, so that a chain prints it once.
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
}

/// A certificate and its private key, PEM-encoded.
#[derive(Clone)]
pub struct KeyMaterial {
    pub certificate_pem: String,
    pub private_key_pem: String,
}

impl std::fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("KeyMaterial").finish_non_exhaustive()
    }
}

fn generate_key() -> Result<KeyPair, Error> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|e| Error::GenerateKey(e.to_string()))
}

/// A random positive serial number of 16 bytes, as RFC 5280 wants them unpredictable.
fn random_serial() -> rcgen::SerialNumber {
    let mut bytes: [u8; 16] = rand::random();
    bytes[0] &= 0x7f;
    rcgen::SerialNumber::from_slice(&bytes)
}

fn subject(common_name: &str, organizations: &[&str]) -> DistinguishedName {
    let mut subject = DistinguishedName::new();
    for organization in organizations {
        subject.push(DnType::OrganizationName, *organization);
    }
    subject.push(DnType::CommonName, common_name);
    subject
}

/// A self-signed CA named `common_name`, valid for [`CA_VALIDITY`].
pub fn generate_ca(common_name: &str) -> Result<KeyMaterial, Error> {
    let key = generate_key()?;
    let now = OffsetDateTime::now_utc();
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(common_name, &[]);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + CA_VALIDITY;
    params.serial_number = Some(random_serial());
    let certificate = params
        .self_signed(&key)
        .map_err(|e| Error::Sign(e.to_string()))?;
    Ok(KeyMaterial {
        certificate_pem: certificate.pem(),
        private_key_pem: key.serialize_pem(),
    })
}

/// What a leaf certificate is for.
enum Leaf<'a> {
    /// A server certificate for these DNS names and IP addresses.
    Serving(&'a [String]),
    /// A client certificate for a user in groups.
    Client(&'a str, &'a [&'a str]),
}

fn issue(ca: &KeyMaterial, leaf: Leaf<'_>, validity: Duration) -> Result<KeyMaterial, Error> {
    let ca_key =
        KeyPair::from_pem(&ca.private_key_pem).map_err(|e| Error::ParseCa(e.to_string()))?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca.certificate_pem, ca_key)
        .map_err(|e| Error::ParseCa(e.to_string()))?;
    let key = generate_key()?;
    let now = OffsetDateTime::now_utc();
    let mut params = CertificateParams::default();
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    match leaf {
        Leaf::Serving(names) => {
            params.distinguished_name = subject("corral-apiserver", &[]);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            params.subject_alt_names = names
                .iter()
                .map(|name| match name.parse::<std::net::IpAddr>() {
                    Ok(ip) => Ok(SanType::IpAddress(ip)),
                    Err(_) => name
                        .as_str()
                        .try_into()
                        .map(SanType::DnsName)
                        .map_err(|_| Error::Sign(format!("{name:?} is not a DNS name"))),
                })
                .collect::<Result<_, _>>()?;
        }
        Leaf::Client(user, groups) => {
            params.distinguished_name = subject(user, groups);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        }
    }
    // Short-lived certificates (tests of renewal) start now; others a little earlier, for
    // clocks slightly behind.
    let backdate = if validity < Duration::from_secs(3600) {
        time::Duration::ZERO
    } else {
        time::Duration::minutes(5)
    };
    params.not_before = now - backdate;
    params.not_after = now + validity;
    params.serial_number = Some(random_serial());
    params.use_authority_key_identifier_extension = true;
    let certificate = params
        .signed_by(&key, &issuer)
        .map_err(|e| Error::Sign(e.to_string()))?;
    Ok(KeyMaterial {
        certificate_pem: certificate.pem(),
        private_key_pem: key.serialize_pem(),
    })
}

/// A serving certificate signed by `ca` for `names` (DNS names and IP addresses), valid for
/// `validity`.
pub fn issue_serving(
    ca: &KeyMaterial,
    names: &[String],
    validity: Duration,
) -> Result<KeyMaterial, Error> {
    issue(ca, Leaf::Serving(names), validity)
}

/// A client certificate signed by `ca` for `user` in `groups` (kube-apiserver's x509
/// authentication: CN is the user, each O a group), valid for `validity`.
pub fn issue_client(
    ca: &KeyMaterial,
    user: &str,
    groups: &[&str],
    validity: Duration,
) -> Result<KeyMaterial, Error> {
    issue(ca, Leaf::Client(user, groups), validity)
}

/// Every certificate of a PEM bundle; `what` names it in errors.
pub fn parse_certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certificates: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect();
    if certificates.is_empty() {
        return Err(Error::NoPem {
            what: what.into(),
            expected: "certificate",
        });
    }
    Ok(certificates)
}

/// The private key of a PEM file (PKCS#8, SEC1 or PKCS#1); `what` names it in errors.
pub fn parse_private_key(pem: &[u8], what: &str) -> Result<PrivateKeyDer<'static>, Error> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|_| Error::NoPem {
        what: what.into(),
        expected: "private key",
    })
}

/// The end of validity of a DER certificate, if it parses.
pub fn not_after(certificate: &CertificateDer<'_>) -> Option<std::time::SystemTime> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    let seconds = parsed.validity().not_after.timestamp();
    Some(std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).ok()?))
}

/// Reads a file for the TLS settings.
pub(crate) fn read(path: &std::path::Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|error| Error::Read {
        path: path.display().to_string(),
        error,
    })
}
