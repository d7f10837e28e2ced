//! Authentication: who sent a request. As kube-apiserver's authenticators: an x509 client
//! certificate verified against the client CA during the TLS handshake (`x509.rs`: CN is the
//! user, each O a group), else a bearer token of the static token file (`tokens.rs`, as
//! `--token-auth-file`) or a bootstrap token (`bootstrap_token.rs`, as
//! `--enable-bootstrap-token-auth`) or a ServiceAccount token (`service_account.rs`), else
//! `system:anonymous` when anonymous requests are allowed. A
//! request with none of them, or with a token that is not in the file, is answered 401 with
//! kube-apiserver's `Status` (reason `Unauthorized`, message `Unauthorized`), whatever its
//! path: as in kube-apiserver with anonymous authentication off, `/healthz`, `/livez`,
//! `/readyz` and `/version` need credentials too.
//!
//! The user of every request that passes is in its extensions as an `Arc<UserInfo>` (see
//! [`user`]), for the authorizer. A server without authentication settings gives every request
//! [`UserInfo::unsecured`] (kube-apiserver's insecure port did the same); in-process clients
//! ([`crate::Server::in_process`]) are [`UserInfo::controllers`], or whom
//! [`crate::Server::in_process_as`] names.

pub mod bootstrap_token;
pub mod service_account;
mod tokens;
pub(crate) mod x509;

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::ApiError;
pub use tokens::{TokenFile, TokenFileError};

/// The group of every authenticated user (added by kube-apiserver to each, except anonymous).
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of anonymous requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The user of anonymous requests.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group that every authorizer lets do anything.
pub const MASTERS_GROUP: &str = "system:masters";
/// The user of in-process clients: the controllers of `corral up`.
pub const CONTROLLERS_USER: &str = "system:corral-controllers";
/// Their group, which `corral init` binds the controllers' and providers' least-privilege
/// ClusterRoles to (`corral_cli::roles::CONTROLLERS_GROUP`).
pub const CONTROLLERS_GROUP: &str = "system:corral-controllers";
/// The user of every request of a server without authentication.
pub const UNSECURED_USER: &str = "system:unsecured";

/// Who sent a request: kube-apiserver's `user.Info` without `extra`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    /// An authenticated user: `groups` and `system:authenticated`.
    pub fn authenticated(
        name: impl Into<String>,
        uid: impl Into<String>,
        groups: Vec<String>,
    ) -> Self {
        let mut groups = groups;
        if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            groups.push(AUTHENTICATED_GROUP.to_string());
        }
        UserInfo {
            name: name.into(),
            uid: uid.into(),
            groups,
        }
    }

    /// `system:anonymous` in `system:unauthenticated`.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            uid: String::new(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
        }
    }

    /// The identity of in-process clients: with RBAC on, they may do what the ClusterRoles
    /// bound to [`CONTROLLERS_GROUP`] grant.
    pub fn controllers() -> Self {
        UserInfo::authenticated(CONTROLLERS_USER, "", vec![CONTROLLERS_GROUP.into()])
    }

    /// The identity of every request to a server without authentication.
    pub fn unsecured() -> Self {
        UserInfo::authenticated(UNSECURED_USER, "", vec![MASTERS_GROUP.into()])
    }
}

/// The user of a request that passed authentication.
pub fn user<B>(request: &http::Request<B>) -> Option<&UserInfo> {
    request
        .extensions()
        .get::<Arc<UserInfo>>()
        .map(|user| &**user)
}

/// How requests are authenticated. Client certificates are verified by the TLS layer
/// ([`crate::tls::TlsConfig::client_ca`]); what this adds is tokens and anonymous requests.
#[derive(Clone, Debug, Default)]
pub struct AuthenticationConfig {
    /// Bearer tokens (`--token-auth-file`).
    pub tokens: Option<Arc<TokenFile>>,
    /// Whether requests without credentials pass as `system:anonymous` (`--anonymous-auth`).
    pub anonymous: bool,
    /// Whether bootstrap tokens authenticate (`--enable-bootstrap-token-auth`).
    pub bootstrap_tokens: bool,
    /// ServiceAccount tokens: issued on `serviceaccounts/<name>/token` and authenticated
    /// (`--service-account-signing-key-file`).
    pub service_accounts: Option<Arc<service_account::ServiceAccountTokens>>,
}

/// Who a request is from, as far as [`Authenticator::authenticate`] can tell without the store.
pub(crate) enum Credential {
    User(Arc<UserInfo>),
    /// A bearer token of a bootstrap token's shape, to be checked against its Secret
    /// ([`bootstrap_token::authenticate`]).
    BootstrapToken(String),
    /// A JWT, to be checked as a ServiceAccount token ([`service_account::authenticate`]).
    ServiceAccountToken(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::User(user) => f.debug_tuple("User").field(user).finish(),
            // A credential: never printed.
            Credential::BootstrapToken(_) => f.write_str("BootstrapToken(<redacted>)"),
            Credential::ServiceAccountToken(_) => f.write_str("ServiceAccountToken(<redacted>)"),
        }
    }
}

/// What the TLS layer learnt of the client's certificate, in the request's extensions.
#[derive(Clone, Debug)]
pub(crate) enum ClientCertificate {
    /// Verified against the client CA: its user.
    User(Arc<UserInfo>),
    /// Verified, but it names no user (an empty CN).
    Unusable,
}

/// Decides who sent a request; `Err` is the response (401).
pub(crate) struct Authenticator {
    config: AuthenticationConfig,
    anonymous: Arc<UserInfo>,
}

impl Authenticator {
    pub(crate) fn new(config: AuthenticationConfig) -> Self {
        Authenticator {
            config,
            anonymous: Arc::new(UserInfo::anonymous()),
        }
    }

    /// kube-apiserver's order: the client certificate, then a bearer token; a token that is
    /// not known fails the request even with anonymous requests allowed (its `FailOnError`
    /// union); with neither, anonymous if allowed.
    pub(crate) fn authenticate<B>(
        &self,
        request: &http::Request<B>,
    ) -> Result<Credential, Response> {
        if let Some(ClientCertificate::User(user)) = request.extensions().get::<ClientCertificate>()
        {
            return Ok(Credential::User(user.clone()));
        }
        let certificate_unusable = matches!(
            request.extensions().get::<ClientCertificate>(),
            Some(ClientCertificate::Unusable)
        );
        if let Some(token) = bearer_token(request.headers()) {
            if let Some(user) = self
                .config
                .tokens
                .as_ref()
                .and_then(|tokens| tokens.user(token))
            {
                return Ok(Credential::User(user));
            }
            if self.config.bootstrap_tokens && bootstrap_token::parse(token).is_some() {
                return Ok(Credential::BootstrapToken(token.to_string()));
            }
            if self.config.service_accounts.is_some() && service_account::looks_like_jwt(token) {
                return Ok(Credential::ServiceAccountToken(token.to_string()));
            }
            return Err(unauthorized());
        }
        if certificate_unusable {
            return Err(unauthorized());
        }
        if self.config.anonymous {
            return Ok(Credential::User(self.anonymous.clone()));
        }
        Err(unauthorized())
    }
}

/// The token of an `Authorization: Bearer TOKEN` header; none for other schemes or an empty
/// token (kube-apiserver then treats the request as without a token).
fn bearer_token(headers: &http::HeaderMap) -> Option<&str> {
    let value = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty()).then_some(token)
}

/// kube-apiserver's answer to a request it cannot authenticate.
pub(crate) fn unauthorized() -> Response {
    ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized").into_response()
}

#[cfg(test)]
mod tests;
