//! The API server's TLS and authentication, from the flags and the data directory.
//!
//! By default the server serves HTTPS with a certificate issued by the data directory's own CA
//! (`<data-dir>/pki/ca.crt` and `ca.key`, made on first start and kept; the serving certificate
//! `pki/apiserver.crt`/`.key` is issued again at each start, for the names of the flags, and
//! renewed while running before it expires), or with `--tls-cert-file` and
//! `--tls-private-key-file`. Client certificates of the data directory's CA and of
//! `--client-ca-file` authenticate; so do the tokens of `--token-auth-file`; anonymous
//! requests only with `--anonymous-auth`. The admin kubeconfig holds a client certificate of
//! `corral-admin` in `system:masters`, issued at each start.
//!
//! `--insecure-http` serves plain HTTP without authentication, on loopback only.
//!
//! Encryption at rest is `--encryption-provider-config`; without it `corral up` encrypts
//! Secrets with a key it generates once into `<data-dir>/encryption-config.yaml` (mode 0600).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use corral_apiserver::auth::service_account::ServiceAccountTokens;
use corral_apiserver::auth::{MASTERS_GROUP, TokenFile};
use corral_apiserver::pki::{self, KeyMaterial};
use corral_apiserver::{AuthenticationConfig, ServingCertificate, TlsConfig};

use crate::ApiserverArgs;

/// The admin user of the kubeconfig `corral up` and `corral apiserver` write.
pub const ADMIN_USER: &str = "corral-admin";

/// How often the serving certificate is checked for a change of its files or a renewal.
const CHECK_INTERVAL: Duration = Duration::from_secs(60);

/// What the server is started with, and what its kubeconfig needs.
pub struct Security {
    pub tls: Option<TlsConfig>,
    pub authentication: Option<AuthenticationConfig>,
    /// The CA clients verify the server with (none with `--tls-cert-file`: the client's own
    /// roots then), and the admin's client certificate; `None` for plain HTTP.
    admin: Option<(Option<String>, KeyMaterial)>,
}

/// Refuses what cannot be served safely: plain HTTP off loopback.
pub fn check_listen(args: &ApiserverArgs) -> anyhow::Result<()> {
    if args.insecure_http && !args.listen.ip().is_loopback() {
        bail!(
            "refusing to listen on {} with --insecure-http: plain HTTP without authentication is allowed on loopback only (use 127.0.0.1 or ::1, or drop --insecure-http to serve HTTPS with authentication)",
            args.listen
        );
    }
    Ok(())
}

/// Prepares the certificates and the authentication of `args`.
pub fn prepare(args: &ApiserverArgs) -> anyhow::Result<Security> {
    if args.insecure_http {
        return Ok(Security {
            tls: None,
            authentication: None,
            admin: None,
        });
    }
    let pki_dir = args.data_dir.join("pki");
    let ca = ensure_ca(&pki_dir)?;
    let serving = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(certificate), Some(key)) => {
            let files = ServingCertificate::Files {
                certificate: certificate.clone(),
                key: key.clone(),
            };
            // Read once here, for an error that names the flags rather than the server's.
            corral_apiserver::tls::ReloadingCertificate::new(files.clone()).with_context(|| {
                format!(
                    "cannot use --tls-cert-file {} with --tls-private-key-file {}",
                    certificate.display(),
                    key.display()
                )
            })?;
            files
        }
        _ => ServingCertificate::Issued {
            ca: ca.clone(),
            names: serving_names(args.listen, &args.tls_san),
            validity: pki::CERTIFICATE_VALIDITY,
            renew_before: pki::CERTIFICATE_VALIDITY / 3,
            write_to: Some((pki_dir.join("apiserver.crt"), pki_dir.join("apiserver.key"))),
        },
    };
    let mut client_ca_pem = ca.certificate_pem.clone();
    if let Some(path) = &args.client_ca_file {
        let bundle = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --client-ca-file {}", path.display()))?;
        pki::parse_certificates(
            bundle.as_bytes(),
            &format!("--client-ca-file {}", path.display()),
        )?;
        client_ca_pem.push_str(&bundle);
    }
    let tokens = match &args.token_auth_file {
        Some(path) => Some(Arc::new(TokenFile::read(path)?)),
        None => None,
    };
    let service_account_key = match &args.service_account_signing_key_file {
        Some(path) => std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read --service-account-signing-key-file {}",
                path.display()
            )
        })?,
        None => ensure_service_account_key(&pki_dir)?,
    };
    let mut service_accounts = ServiceAccountTokens::new(
        &service_account_key,
        args.service_account_issuer.clone(),
        args.api_audiences.clone(),
    )
    .map_err(|reason| anyhow::anyhow!("cannot sign ServiceAccount tokens: {reason}"))?;
    service_accounts.jwks_uri = args.service_account_jwks_uri.clone();
    let admin = pki::issue_client(&ca, ADMIN_USER, &[MASTERS_GROUP], pki::CERTIFICATE_VALIDITY)?;
    let server_ca = args
        .tls_cert_file
        .is_none()
        .then(|| ca.certificate_pem.clone());
    Ok(Security {
        tls: Some(TlsConfig {
            serving,
            client_ca_pem: Some(client_ca_pem),
            check_interval: CHECK_INTERVAL,
        }),
        authentication: Some(AuthenticationConfig {
            tokens,
            anonymous: args.anonymous_auth,
            bootstrap_tokens: args.enable_bootstrap_token_auth,
            service_accounts: Some(Arc::new(service_accounts)),
        }),
        admin: Some((server_ca, admin)),
    })
}

impl Security {
    /// The admin kubeconfig for a server at `url`.
    pub fn kubeconfig(&self, url: &str) -> String {
        match &self.admin {
            Some((ca, admin)) => corral_apiserver::kubeconfig::render_tls(
                url,
                "corral",
                ca.as_deref(),
                &admin.certificate_pem,
                &admin.private_key_pem,
            ),
            None => corral_apiserver::kubeconfig::render(url, "corral"),
        }
    }
}

/// The URL clients use for a server listening on `address`: a wildcard address is reached
/// on loopback, whose names the certificate holds.
pub fn client_url(address: SocketAddr, https: bool) -> String {
    let scheme = if https { "https" } else { "http" };
    let ip = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("{scheme}://{}", SocketAddr::new(ip, address.port()))
}

/// The names of the issued serving certificate: the listen address (unless a wildcard),
/// loopback's, and `--tls-san`.
fn serving_names(listen: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    if !listen.ip().is_unspecified() {
        names.push(listen.ip().to_string());
    }
    names.extend(["localhost".to_string(), "127.0.0.1".into(), "::1".into()]);
    names.extend(extra.iter().map(|name| name.trim().to_string()));
    let mut unique = Vec::new();
    for name in names {
        if !name.is_empty() && !unique.contains(&name) {
            unique.push(name);
        }
    }
    unique
}

/// The data directory's CA, made on first use.
fn ensure_ca(pki_dir: &Path) -> anyhow::Result<KeyMaterial> {
    let certificate: PathBuf = pki_dir.join("ca.crt");
    let key = pki_dir.join("ca.key");
    if certificate.exists() || key.exists() {
        let read = |path: &Path| {
            std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
        };
        return Ok(KeyMaterial {
            certificate_pem: read(&certificate)?,
            private_key_pem: read(&key)?,
        });
    }
    create_private_dir(pki_dir)?;
    let ca = pki::generate_ca("corral-ca")?;
    corral_apiserver::tls::write_private(&key, ca.private_key_pem.as_bytes())?;
    corral_apiserver::tls::write_private(&certificate, ca.certificate_pem.as_bytes())?;
    Ok(ca)
}

/// The key that signs ServiceAccount tokens, `<data-dir>/pki/sa.key`, made on first use.
fn ensure_service_account_key(pki_dir: &Path) -> anyhow::Result<String> {
    let path = pki_dir.join("sa.key");
    if path.exists() {
        return std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()));
    }
    create_private_dir(pki_dir)?;
    let pem = corral_apiserver::auth::service_account::generate_key()
        .context("cannot generate the ServiceAccount signing key")?;
    corral_apiserver::tls::write_private(&path, pem.as_bytes())?;
    Ok(pem)
}

fn create_private_dir(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

#[cfg(test)]
mod tests;

/// What is encrypted at rest without `--encryption-provider-config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultEncryption {
    /// Nothing (`corral apiserver`).
    None,
    /// Secrets, with the data directory's own key (`corral up`).
    Secrets,
}

/// The data directory's encryption configuration, written by `corral up` on first start.
pub const ENCRYPTION_CONFIG_FILE: &str = "encryption-config.yaml";

/// The encryption at rest of `args`: its `--encryption-provider-config`, or by default the
/// data directory's own (generated on first start).
pub fn encryption(
    args: &ApiserverArgs,
    default: DefaultEncryption,
) -> anyhow::Result<Option<Arc<corral_apiserver::encryption::Encryption>>> {
    let path = match (&args.encryption_provider_config, default) {
        (Some(path), _) => path.clone(),
        (None, DefaultEncryption::None) => return Ok(None),
        (None, DefaultEncryption::Secrets) => {
            let path = args.data_dir.join(ENCRYPTION_CONFIG_FILE);
            if !path.exists() {
                tracing::info!(path = %path.display(), "Generating the key that encrypts Secrets at rest");
                let text = corral_apiserver::encryption::config::generate_for_secrets();
                corral_apiserver::tls::write_private(&path, text.as_bytes())?;
            }
            path
        }
    };
    let encryption = corral_apiserver::encryption::Encryption::load(&path)?;
    tracing::info!(path = %path.display(), resources = ?encryption, "Encrypting at rest");
    Ok(Some(Arc::new(encryption)))
}

/// The audit log of `--audit-policy-file` and `--audit-log-path`, if given.
pub fn audit(
    args: &ApiserverArgs,
) -> anyhow::Result<Option<Arc<corral_apiserver::audit::Auditor>>> {
    let (Some(policy), Some(log)) = (&args.audit_policy_file, &args.audit_log_path) else {
        return Ok(None);
    };
    let policy = corral_apiserver::audit::Policy::load(policy)?;
    let rotation = corral_apiserver::audit::Rotation {
        max_size_mb: args.audit_log_maxsize,
        max_backups: args.audit_log_maxbackup,
        max_age_days: args.audit_log_maxage,
    };
    let auditor = corral_apiserver::audit::Auditor::new(policy, log, rotation)
        .with_context(|| format!("cannot open --audit-log-path {}", log.display()))?;
    Ok(Some(Arc::new(auditor)))
}
