//! HTTPS: the rustls settings of a server (HTTP/2 and HTTP/1.1 by ALPN, client certificates
//! verified against the client CA but optional, so that token and anonymous requests still
//! reach the authenticator) and a serving certificate that changes without a restart.
//!
//! The serving certificate is held by [`ReloadingCertificate`], the rustls
//! `ResolvesServerCert` of the server: each handshake takes the current one. A background task
//! replaces it — from files that changed (`--tls-cert-file`, as kube-apiserver reloads them),
//! or, for a certificate the server issues itself from a CA, with a new one once it is within
//! `renew_before` of its expiry (written to its files too, for other readers).

use std::path::PathBuf;
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, SystemTime};

use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;

use crate::pki::{self, KeyMaterial};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(transparent)]
    Pki(#[from] pki::Error),
    #[error("the serving certificate and key do not go together: {0}")]
    Key(String),
    // The I/O error is in the message, not a source, so that a chain prints it once.
    #[error("cannot write {path}: {error}")]
    Write { path: String, error: std::io::Error },
    #[error("the client CA cannot verify certificates: {0}")]
    ClientCa(String),
}

/// HTTPS settings of a server.
#[derive(Clone, Debug)]
pub struct TlsConfig {
    pub serving: ServingCertificate,
    /// The CA certificates (PEM) whose client certificates authenticate their user
    /// (`--client-ca-file`); without it, clients present none.
    pub client_ca_pem: Option<String>,
    /// How often the serving certificate is checked for a change or renewal.
    pub check_interval: Duration,
}

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum ServingCertificate {
    /// PEM files (`--tls-cert-file`, `--tls-private-key-file`), read again when they change.
    Files { certificate: PathBuf, key: PathBuf },
    /// Issued by `ca` for `names` (DNS names and IP addresses), valid for `validity`, and
    /// issued again once less than `renew_before` is left; each one is written to `write_to`
    /// (certificate, key) when given.
    Issued {
        ca: KeyMaterial,
        names: Vec<String>,
        validity: Duration,
        renew_before: Duration,
        write_to: Option<(PathBuf, PathBuf)>,
    },
}

/// The current serving certificate, as rustls asks for it at each handshake.
#[derive(Debug)]
pub struct ReloadingCertificate {
    current: RwLock<Current>,
    source: ServingCertificate,
}

#[derive(Debug)]
struct Current {
    key: Arc<CertifiedKey>,
    not_after: Option<SystemTime>,
    /// The files' modification times when read (for [`ServingCertificate::Files`]).
    modified: Option<(SystemTime, SystemTime)>,
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().expect("not poisoned").key.clone())
    }
}

impl ReloadingCertificate {
    /// Loads or issues the first certificate.
    pub fn new(source: ServingCertificate) -> Result<ReloadingCertificate, TlsError> {
        let current = load(&source)?;
        Ok(ReloadingCertificate {
            current: RwLock::new(current),
            source,
        })
    }

    /// The end of validity of the current certificate.
    pub fn not_after(&self) -> Option<SystemTime> {
        self.current.read().expect("not poisoned").not_after
    }

    /// Replaces the certificate if its files changed or it is due for renewal.
    fn refresh(&self) -> Result<bool, TlsError> {
        let due = match &self.source {
            ServingCertificate::Files { certificate, key } => {
                let modified = modified(certificate, key);
                modified.is_some()
                    && modified != self.current.read().expect("not poisoned").modified
            }
            ServingCertificate::Issued { renew_before, .. } => {
                let not_after = self.not_after();
                not_after.is_none_or(|end| {
                    end.duration_since(SystemTime::now()).unwrap_or_default() < *renew_before
                })
            }
        };
        if !due {
            return Ok(false);
        }
        let current = load(&self.source)?;
        *self.current.write().expect("not poisoned") = current;
        Ok(true)
    }
}

fn modified(
    certificate: &std::path::Path,
    key: &std::path::Path,
) -> Option<(SystemTime, SystemTime)> {
    let time = |path: &std::path::Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    Some((time(certificate)?, time(key)?))
}

fn load(source: &ServingCertificate) -> Result<Current, TlsError> {
    let (certificate_pem, key_pem, modified_at) = match source {
        ServingCertificate::Files { certificate, key } => {
            // The times first: a change while reading is seen at the next check.
            let modified_at = modified(certificate, key);
            (pki::read(certificate)?, pki::read(key)?, modified_at)
        }
        ServingCertificate::Issued {
            ca,
            names,
            validity,
            write_to,
            ..
        } => {
            let issued = pki::issue_serving(ca, names, *validity)?;
            if let Some((certificate, key)) = write_to {
                write_private(key, issued.private_key_pem.as_bytes())?;
                write_private(certificate, issued.certificate_pem.as_bytes())?;
            }
            (
                issued.certificate_pem.into_bytes(),
                issued.private_key_pem.into_bytes(),
                None,
            )
        }
    };
    let chain = pki::parse_certificates(&certificate_pem, "the serving certificate")?;
    let key = pki::parse_private_key(&key_pem, "the serving key")?;
    let provider = rustls::crypto::ring::default_provider();
    let certified =
        CertifiedKey::from_der(chain, key, &provider).map_err(|e| TlsError::Key(e.to_string()))?;
    let not_after = certified.end_entity_cert().ok().and_then(pki::not_after);
    Ok(Current {
        key: Arc::new(certified),
        not_after,
        modified: modified_at,
    })
}

/// Writes a file readable by its owner only (keys; certificates too, harmlessly), through a
/// temporary file and a rename so that a reader never sees half of it.
pub fn write_private(path: &std::path::Path, contents: &[u8]) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let error = |error| TlsError::Write {
        path: path.display().to_string(),
        error,
    };
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(error)?;
    file.write_all(contents).map_err(error)?;
    file.sync_all().map_err(error)?;
    std::fs::rename(&temporary, path).map_err(error)
}

/// The rustls settings of `config`, with its certificate resolver (which the caller keeps
/// fresh with [`keep_fresh`]).
pub(crate) fn server_config(
    config: &TlsConfig,
) -> Result<(rustls::ServerConfig, Arc<ReloadingCertificate>), TlsError> {
    let resolver = Arc::new(ReloadingCertificate::new(config.serving.clone())?);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Key(e.to_string()))?;
    let builder = match &config.client_ca_pem {
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in pki::parse_certificates(pem.as_bytes(), "the client CA")? {
                roots
                    .add(certificate)
                    .map_err(|e| TlsError::ClientCa(e.to_string()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::ClientCa(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut server_config = builder.with_cert_resolver(resolver.clone());
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((server_config, resolver))
}

/// Checks the certificate every `interval` until the resolver is dropped.
pub(crate) fn keep_fresh(resolver: &Arc<ReloadingCertificate>, interval: Duration) {
    let weak: Weak<ReloadingCertificate> = Arc::downgrade(resolver);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let Some(resolver) = weak.upgrade() else {
                return;
            };
            match resolver.refresh() {
                Ok(true) => tracing::info!(
                    not_after = ?resolver.not_after(),
                    "Serving certificate replaced"
                ),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(%error, "Replacing the serving certificate failed; keeping the current one")
                }
            }
        }
    });
}
