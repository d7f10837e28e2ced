//! ServiceAccount tokens, as kube-apiserver issues and checks them: `TokenRequest` on
//! `serviceaccounts/<name>/token` (`kubectl create token`) signs a JWT (ES256, with the key of
//! `--service-account-signing-key-file`) naming the account's namespace, name and uid, the
//! audiences asked for (the API server's own by default) and an expiry (an hour by default, at
//! least ten minutes); a bearer token that is such a JWT authenticates as
//! `system:serviceaccount:<namespace>:<name>` in `system:serviceaccounts` and
//! `system:serviceaccounts:<namespace>` while its signature, issuer, audience and expiry hold
//! AND the account still exists with the uid the token names — a deleted account's tokens stop
//! working, even if an account of the same name is created again.
//!
//! As kube-apiserver caches what its token authenticators answer, a token that authenticated
//! is trusted again without a signature check or a store read for [`SUCCESS_TTL`] (kube's
//! `TokenSuccessCacheTTL`, 10 s) or until it expires, if sooner; refusals are not cached (kube's
//! `TokenFailureCacheTTL` is 0). So a deleted account's tokens stop working within 10 s. The
//! cache holds SHA-256 digests of tokens, never the tokens.
//!
//! Every namespace gets its `default` ServiceAccount when created (kube-controller-manager's
//! serviceaccounts controller), on servers that issue tokens.
//!
//! So that a token can be verified elsewhere, the server publishes kube-apiserver's OIDC
//! discovery documents: `/.well-known/openid-configuration` (issuer, `jwks_uri`) and
//! `/openid/v1/jwks` (the public key as a JWK, `kid` = base64url SHA-256 of its
//! SubjectPublicKeyInfo, which every token's header names), readable by whom the
//! `system:service-account-issuer-discovery` ClusterRole is bound to (every ServiceAccount).
//!
//! A token may be bound to a Secret of the account's namespace (`boundObjectRef`, `kubectl
//! create token --bound-object-kind Secret`): it then also stops working when that Secret is
//! deleted (or replaced: its uid is in the token), within the cache's 10 s.
//!
//! Not done: tokens bound to a Pod or Node (refused), legacy Secret-based tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::UserInfo;
use crate::error::{ApiError, Cause};
use crate::object;
use crate::rest::Target;
use crate::server::ApiState;

/// kubeadm's `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The groups of every ServiceAccount.
pub const ALL_GROUP: &str = "system:serviceaccounts";
/// A token's lifetime when the request does not say (kube's default).
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a request may ask for (kube's).
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (kube's `--service-account-max-token-expiration` is unset by default; a day
/// keeps stolen tokens short-lived).
const MAX_EXPIRATION_SECONDS: i64 = 48 * 3600;

/// How long a token that authenticated is trusted without checking it again.
pub const SUCCESS_TTL: Duration = Duration::from_secs(10);
/// At most this many tokens are remembered (kube's cache holds 4096 per stripe of 32).
const CACHE_ENTRIES: usize = 4096;

/// Tokens that authenticated recently, by their SHA-256, with their user and until when.
#[derive(Default)]
struct TokenCache {
    entries: Mutex<HashMap<[u8; 32], CachedToken>>,
}

/// A cached token's user, and until when it is trusted.
type CachedToken = (Arc<UserInfo>, Instant);

impl TokenCache {
    fn key(token: &str) -> [u8; 32] {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        digest.as_ref().try_into().expect("SHA-256 is 32 bytes")
    }

    fn get(&self, key: &[u8; 32], now: Instant) -> Option<Arc<UserInfo>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(key)
            .filter(|(_, until)| *until > now)
            .map(|(user, _)| user.clone())
    }

    fn insert(&self, key: [u8; 32], user: Arc<UserInfo>, until: Instant, now: Instant) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= CACHE_ENTRIES {
            entries.retain(|_, (_, until)| *until > now);
            if entries.len() >= CACHE_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (user, until));
    }
}

/// Issues and checks tokens with one key.
pub struct ServiceAccountTokens {
    signing: EcdsaKeyPair,
    /// The public key, uncompressed, for verification.
    public: Vec<u8>,
    /// The key's id: base64url SHA-256 of its SubjectPublicKeyInfo, as kube-apiserver's.
    key_id: String,
    /// The `jwks_uri` of the discovery document (`--service-account-jwks-uri`); by default
    /// `https://<the request's host>/openid/v1/jwks`.
    pub jwks_uri: Option<String>,
    /// `iss` of issued tokens, required of presented ones.
    pub issuer: String,
    /// The API server's audiences (`--api-audiences`): a token must name one of them.
    pub audiences: Vec<String>,
    rng: SystemRandom,
    /// How long a token that authenticated is trusted again unchecked ([`SUCCESS_TTL`];
    /// zero turns the cache off).
    pub success_ttl: Duration,
    cache: TokenCache,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("issuer", &self.issuer)
            .field("audiences", &self.audiences)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountTokens {
    /// From a PEM P-256 private key (PKCS#8, as `corral up` and kubeadm's `sa.key` hold it).
    pub fn new(
        private_key_pem: &str,
        issuer: impl Into<String>,
        audiences: Vec<String>,
    ) -> Result<ServiceAccountTokens, String> {
        let key = rcgen::KeyPair::from_pem(private_key_pem)
            .map_err(|error| format!("not a PEM private key: {error}"))?;
        let rng = SystemRandom::new();
        let signing = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &key.serialize_der(),
            &rng,
        )
        .map_err(|_| "the service account signing key must be an ECDSA P-256 key".to_owned())?;
        let public = signing.public_key().as_ref().to_vec();
        use rcgen::PublicKeyData as _;
        let key_id = URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            &key.subject_public_key_info(),
        ));
        let issuer = issuer.into();
        let audiences = if audiences.is_empty() {
            vec![issuer.clone()]
        } else {
            audiences
        };
        Ok(ServiceAccountTokens {
            signing,
            public,
            key_id,
            jwks_uri: None,
            issuer,
            audiences,
            rng,
            success_ttl: SUCCESS_TTL,
            cache: TokenCache::default(),
        })
    }

    /// A signed token for the account, valid from `now` for `seconds`.
    pub fn issue(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        audiences: &[String],
        seconds: i64,
        now: OffsetDateTime,
    ) -> String {
        self.issue_bound(namespace, name, uid, None, audiences, seconds, now)
    }

    /// As [`Self::issue`], bound to the Secret (name, uid) when given: the token then works
    /// only while that Secret exists.
    #[allow(clippy::too_many_arguments)]
    pub fn issue_bound(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        secret: Option<(&str, &str)>,
        audiences: &[String],
        seconds: i64,
        now: OffsetDateTime,
    ) -> String {
        let issued = now.unix_timestamp();
        let mut claims = json!({
            "iss": self.issuer,
            "sub": format!("system:serviceaccount:{namespace}:{name}"),
            "aud": audiences,
            "exp": issued + seconds,
            "iat": issued,
            "nbf": issued,
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": {
                "namespace": namespace,
                "serviceaccount": {"name": name, "uid": uid},
            },
        });
        if let Some((secret, secret_uid)) = secret {
            claims["kubernetes.io"]["secret"] = json!({"name": secret, "uid": secret_uid});
        }
        let header = URL_SAFE_NO_PAD
            .encode(json!({"alg": "ES256", "kid": self.key_id, "typ": "JWT"}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{payload}");
        let signature = self
            .signing
            .sign(&self.rng, input.as_bytes())
            .expect("signing with a valid key does not fail");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }

    /// `/.well-known/openid-configuration`, as kube-apiserver's; `host` is where the request
    /// reached this server, for the default `jwks_uri`.
    pub fn openid_configuration(&self, host: &str) -> Value {
        let jwks_uri = self
            .jwks_uri
            .clone()
            .unwrap_or_else(|| format!("https://{host}/openid/v1/jwks"));
        json!({
            "issuer": self.issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    }

    /// `/openid/v1/jwks`: the verification key as a JWK set.
    pub fn jwks(&self) -> Value {
        // Uncompressed point: 0x04, x (32 bytes), y (32 bytes).
        let (x, y) = self.public[1..].split_at(32);
        json!({"keys": [{
            "use": "sig",
            "kty": "EC",
            "kid": self.key_id,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        }]})
    }

    /// The claims of a token this server issued and that is valid at `now`, or why not.
    fn verify(&self, token: &str, now: OffsetDateTime) -> Result<Claims, &'static str> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("not a JWT");
        };
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| "the signature is not base64url")?;
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &self.public)
            .verify(format!("{header}.{payload}").as_bytes(), &signature)
            .map_err(|_| "the signature does not verify")?;
        let claims: Value = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or("the claims are not JSON")?;
        if claims["iss"] != self.issuer.as_str() {
            return Err("another issuer");
        }
        let audiences: Vec<&str> = match &claims["aud"] {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences
            .iter()
            .any(|audience| self.audiences.iter().any(|own| own == audience))
        {
            return Err("no audience of this server");
        }
        let now = now.unix_timestamp();
        if claims["exp"].as_i64().is_none_or(|exp| exp <= now) {
            return Err("expired");
        }
        if claims["nbf"].as_i64().is_some_and(|nbf| nbf > now + 60) {
            return Err("not valid yet");
        }
        let account = &claims["kubernetes.io"];
        let field = |pointer: &str| {
            account
                .pointer(pointer)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        Ok(Claims {
            expires: claims["exp"].as_i64().unwrap_or(now),
            namespace: field("/namespace").ok_or("no namespace")?,
            name: field("/serviceaccount/name").ok_or("no service account")?,
            uid: field("/serviceaccount/uid").ok_or("no service account uid")?,
            secret: field("/secret/name").zip(field("/secret/uid")),
        })
    }
}

/// A new signing key: PEM PKCS#8 ECDSA P-256.
pub fn generate_key() -> Result<String, rcgen::Error> {
    Ok(rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?.serialize_pem())
}

/// Whom a valid token names.
#[derive(Debug, PartialEq, Eq)]
struct Claims {
    /// `exp`, Unix seconds.
    expires: i64,
    namespace: String,
    name: String,
    uid: String,
    /// The Secret (name, uid) the token is bound to, if any.
    secret: Option<(String, String)>,
}

/// Whether a bearer token looks like a JWT (three base64url parts), which only service
/// account tokens are here.
pub fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && token.starts_with("eyJ")
}

/// The user of a ServiceAccount token, or `None` when the token does not authenticate.
pub(crate) async fn authenticate(
    state: &ApiState,
    tokens: &ServiceAccountTokens,
    token: &str,
) -> Option<Arc<UserInfo>> {
    let cache_key = TokenCache::key(token);
    let started = Instant::now();
    if let Some(user) = tokens.cache.get(&cache_key, started) {
        return Some(user);
    }
    let now = OffsetDateTime::now_utc();
    let claims = match tokens.verify(token, now) {
        Ok(claims) => claims,
        Err(reason) => {
            tracing::debug!(reason, "ServiceAccount token refused");
            return None;
        }
    };
    let accounts = state.registry.lookup("", "v1", "serviceaccounts")?;
    let key = accounts.key(Some(&claims.namespace), &claims.name);
    let account = match state.store.get(&key, None).await {
        Ok(Some(kv)) => object::decode_stored(&kv).ok()?,
        Ok(None) => {
            tracing::debug!(namespace = %claims.namespace, name = %claims.name, "The token's ServiceAccount does not exist");
            return None;
        }
        Err(error) => {
            tracing::warn!(%error, "Cannot read a token's ServiceAccount");
            return None;
        }
    };
    if object::uid(&account) != Some(claims.uid.as_str())
        || object::deletion_timestamp(&account).is_some()
    {
        tracing::debug!(namespace = %claims.namespace, name = %claims.name, "The token's ServiceAccount was replaced or is being deleted");
        return None;
    }
    if let Some((secret, secret_uid)) = &claims.secret {
        let secrets = state.registry.lookup("", "v1", "secrets")?;
        let key = secrets.key(Some(&claims.namespace), secret);
        let bound = match state.store.get(&key, None).await {
            Ok(Some(kv)) => object::decode_stored(&kv).ok()?,
            Ok(None) => {
                tracing::debug!(namespace = %claims.namespace, %secret, "The token's Secret does not exist");
                return None;
            }
            Err(error) => {
                tracing::warn!(%error, "Cannot read a token's Secret");
                return None;
            }
        };
        if object::uid(&bound) != Some(secret_uid.as_str())
            || object::deletion_timestamp(&bound).is_some()
        {
            tracing::debug!(namespace = %claims.namespace, %secret, "The token's Secret was replaced or is being deleted");
            return None;
        }
    }
    let user = Arc::new(UserInfo::authenticated(
        format!("system:serviceaccount:{}:{}", claims.namespace, claims.name),
        claims.uid,
        vec![
            ALL_GROUP.to_owned(),
            format!("{ALL_GROUP}:{}", claims.namespace),
        ],
    ));
    let left =
        Duration::from_secs(u64::try_from(claims.expires - now.unix_timestamp()).unwrap_or(0));
    let trusted = tokens.success_ttl.min(left);
    if !trusted.is_zero() {
        tokens
            .cache
            .insert(cache_key, user.clone(), started + trusted, started);
    }
    Some(user)
}

/// `GET /.well-known/openid-configuration` and `GET /openid/v1/jwks`; 404 on a server that
/// issues no tokens (as kube-apiserver without a signing key).
pub(crate) fn discovery(
    state: &ApiState,
    jwks: bool,
    headers: &http::HeaderMap,
) -> Result<Response, ApiError> {
    use axum::response::IntoResponse as _;
    let Some(tokens) = state
        .config
        .authentication
        .as_ref()
        .and_then(|authentication| authentication.service_accounts.as_ref())
    else {
        return Err(ApiError::no_route());
    };
    let (document, content_type) = if jwks {
        (tokens.jwks(), "application/jwk-set+json")
    } else {
        let host = headers
            .get(http::header::HOST)
            .and_then(|host| host.to_str().ok())
            .unwrap_or("localhost");
        (tokens.openid_configuration(host), "application/json")
    };
    Ok((
        StatusCode::OK,
        [
            (http::header::CONTENT_TYPE, content_type),
            (http::header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        document.to_string(),
    )
        .into_response())
}

/// `POST …/serviceaccounts/<name>/token`: a TokenRequest answered with a token.
pub(crate) async fn token_request(
    state: &ApiState,
    target: &Target,
    name: &str,
    body: Value,
) -> Result<Response, ApiError> {
    let Some(tokens) = state
        .config
        .authentication
        .as_ref()
        .and_then(|authentication| authentication.service_accounts.clone())
    else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server does not issue ServiceAccount tokens (no --service-account-signing-key-file)",
        ));
    };
    let mut account_target = target.clone();
    account_target.subresource = None;
    let account = crate::rest::get(state, &account_target, name).await?;
    let namespace = target.namespace.clone().unwrap_or_default();
    let invalid = |field: &str, message: String| {
        ApiError::invalid(
            crate::error::Subject {
                resource: "tokenrequests",
                group: "authentication.k8s.io",
                name,
            },
            "TokenRequest",
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message,
                field: field.into(),
            }],
        )
    };
    if body["kind"] != "TokenRequest" && !body["kind"].is_null() {
        return Err(ApiError::bad_request(format!(
            "the body must be a TokenRequest, not {}",
            body["kind"]
        )));
    }
    let spec = &body["spec"];
    let seconds = match &spec["expirationSeconds"] {
        Value::Null => DEFAULT_EXPIRATION_SECONDS,
        value => value.as_i64().ok_or_else(|| {
            invalid(
                "spec.expirationSeconds",
                format!("Invalid value: {value}: must be an integer"),
            )
        })?,
    };
    if seconds < MIN_EXPIRATION_SECONDS {
        return Err(invalid(
            "spec.expirationSeconds",
            format!("Invalid value: {seconds}: may not specify a duration less than 10 minutes"),
        ));
    }
    let seconds = seconds.min(MAX_EXPIRATION_SECONDS);
    let bound = &spec["boundObjectRef"];
    let secret = if bound.is_null() {
        None
    } else {
        if bound["kind"] != "Secret" || !matches!(bound["apiVersion"].as_str(), None | Some("v1")) {
            return Err(invalid(
                "spec.boundObjectRef.kind",
                format!(
                    "Unsupported value: {}: Corral binds tokens to Secrets (v1) only",
                    bound["kind"]
                ),
            ));
        }
        let secret_name = bound["name"].as_str().unwrap_or_default().to_owned();
        let mut secret_target = account_target.clone();
        secret_target.resource = state
            .registry
            .lookup("", "v1", "secrets")
            .ok_or_else(ApiError::no_route)?;
        let object = crate::rest::get(state, &secret_target, &secret_name).await?;
        let uid = object::uid(&object).unwrap_or_default().to_owned();
        if let Some(wanted) = bound["uid"].as_str().filter(|uid| !uid.is_empty())
            && wanted != uid
        {
            return Err(invalid(
                "spec.boundObjectRef.uid",
                format!(
                    "Invalid value: {wanted:?}: the UID in the bound object reference ({wanted}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
                ),
            ));
        }
        Some((secret_name, uid))
    };
    let audiences: Vec<String> = match spec["audiences"].as_array() {
        Some(list) if !list.is_empty() => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => tokens.audiences.clone(),
    };
    let now = OffsetDateTime::now_utc();
    let uid = object::uid(&account).unwrap_or_default();
    let token = tokens.issue_bound(
        &namespace,
        name,
        uid,
        secret
            .as_ref()
            .map(|(secret, uid)| (secret.as_str(), uid.as_str())),
        &audiences,
        seconds,
        now,
    );
    let bound_object_ref = secret.as_ref().map(
        |(secret, uid)| json!({"kind": "Secret", "apiVersion": "v1", "name": secret, "uid": uid}),
    );
    let expiration = (now + time::Duration::seconds(seconds))
        .replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .expect("UTC formats as RFC 3339");
    tracing::info!(%namespace, account = name, seconds, "Issued a ServiceAccount token");
    Ok(crate::rest::json_response(
        StatusCode::CREATED,
        &json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "creationTimestamp": object::now_rfc3339(),
            },
            "spec": {
                "audiences": audiences,
                "expirationSeconds": seconds,
                "boundObjectRef": bound_object_ref,
            },
            "status": {"token": token, "expirationTimestamp": expiration},
        }),
    ))
}

/// Creates the namespace's `default` ServiceAccount when it has none. (Boxed: it writes
/// through `rest::create`, whose namespace strategy starts it for new namespaces.)
pub(crate) fn ensure_default<'a>(
    state: &'a ApiState,
    namespace: &'a str,
) -> futures::future::BoxFuture<'a, Result<(), ApiError>> {
    Box::pin(ensure_default_now(state, namespace))
}

async fn ensure_default_now(state: &ApiState, namespace: &str) -> Result<(), ApiError> {
    let Some(resource) = state.registry.lookup("", "v1", "serviceaccounts") else {
        return Ok(());
    };
    if state
        .store
        .get(&resource.key(Some(namespace), "default"), None)
        .await?
        .is_some()
    {
        return Ok(());
    }
    let target = Target {
        resource,
        version: "v1".into(),
        namespace: Some(namespace.to_owned()),
        name: None,
        subresource: None,
    };
    let account = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": namespace},
    });
    match crate::rest::create(state, &target, &Default::default(), account).await {
        Ok(_) => Ok(()),
        Err(error) if error.reason == "AlreadyExists" => Ok(()),
        // The namespace went away meanwhile.
        Err(error)
            if error.code == StatusCode::NOT_FOUND || error.code == StatusCode::FORBIDDEN =>
        {
            Ok(())
        }
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(audiences: Vec<String>) -> ServiceAccountTokens {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        ServiceAccountTokens::new(&key.serialize_pem(), DEFAULT_ISSUER, audiences).unwrap()
    }

    #[test]
    fn an_issued_token_verifies_until_it_expires_and_only_for_this_server() {
        let server = tokens(vec![]);
        let now = OffsetDateTime::now_utc();
        let token = server.issue("a", "robot", "uid-1", &server.audiences.clone(), 600, now);
        assert!(looks_like_jwt(&token));
        assert_eq!(
            server.verify(&token, now).unwrap(),
            Claims {
                expires: now.unix_timestamp() + 600,
                namespace: "a".into(),
                name: "robot".into(),
                uid: "uid-1".into(),
                secret: None,
            }
        );
        assert_eq!(
            server.verify(&token, now + time::Duration::seconds(601)),
            Err("expired")
        );
        let elsewhere = server.issue("a", "robot", "uid-1", &["vault".into()], 600, now);
        assert_eq!(
            server.verify(&elsewhere, now),
            Err("no audience of this server")
        );
        // Another key's token, and a token whose claims were changed.
        let other = tokens(vec![]);
        let forged = other.issue("a", "robot", "uid-1", &other.audiences.clone(), 600, now);
        assert_eq!(
            server.verify(&forged, now),
            Err("the signature does not verify")
        );
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        parts[1] = URL_SAFE_NO_PAD.encode(
            json!({"iss": DEFAULT_ISSUER, "aud": [DEFAULT_ISSUER], "exp": now.unix_timestamp() + 600,
                   "kubernetes.io": {"namespace": "kube-system",
                                     "serviceaccount": {"name": "admin", "uid": "x"}}})
            .to_string(),
        );
        assert_eq!(
            server.verify(&parts.join("."), now),
            Err("the signature does not verify")
        );
    }

    /// A server with the `default` ServiceAccount of `default` and a token of it.
    async fn server_with_token(
        success_ttl: Duration,
    ) -> (Arc<ApiState>, Arc<ServiceAccountTokens>, String) {
        let mut tokens = tokens(vec![]);
        tokens.success_ttl = success_ttl;
        let tokens = Arc::new(tokens);
        let config = crate::ServerConfig {
            authentication: Some(crate::AuthenticationConfig {
                service_accounts: Some(tokens.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let store = Arc::new(corral_store::memory::MemoryStore::new());
        let state = ApiState::start(store, config).await.unwrap();
        ensure_default_now(&state, "default").await.unwrap();
        let accounts = state.registry.lookup("", "v1", "serviceaccounts").unwrap();
        let stored = state
            .store
            .get(&accounts.key(Some("default"), "default"), None)
            .await
            .unwrap()
            .unwrap();
        let account = object::decode_stored(&stored).unwrap();
        let uid = object::uid(&account).unwrap().to_owned();
        let token = tokens.issue(
            "default",
            "default",
            &uid,
            &tokens.audiences.clone(),
            3600,
            OffsetDateTime::now_utc(),
        );
        (state, tokens, token)
    }

    #[tokio::test]
    async fn a_deleted_accounts_token_is_trusted_at_most_the_cache_ttl() {
        let (state, tokens, token) = server_with_token(SUCCESS_TTL).await;
        let user = authenticate(&state, &tokens, &token).await.unwrap();
        assert_eq!(user.name, "system:serviceaccount:default:default");
        let accounts = state.registry.lookup("", "v1", "serviceaccounts").unwrap();
        let key = accounts.key(Some("default"), "default");
        let stored = state.store.get(&key, None).await.unwrap().unwrap();
        state.store.delete(&key, stored.mod_revision).await.unwrap();
        // Within the TTL the cached answer stands, as in kube-apiserver; past it (here: a
        // cache entry that has run out), the token is refused.
        assert!(authenticate(&state, &tokens, &token).await.is_some());
        let cache_key = TokenCache::key(&token);
        tokens
            .cache
            .entries
            .lock()
            .unwrap()
            .get_mut(&cache_key)
            .unwrap()
            .1 = Instant::now();
        assert!(authenticate(&state, &tokens, &token).await.is_none());
        // A refusal is not cached, and a forged token is never in the cache.
        assert!(tokens.cache.get(&cache_key, Instant::now()).is_none());
    }

    /// The cost of authenticating a request's ServiceAccount token, without and with the
    /// cache. `cargo nextest run -p corral-apiserver --lib --release --run-ignored only -E
    /// 'test(service_account_token_cost)' --no-capture`; results in BENCHMARKS.md.
    #[tokio::test]
    #[ignore]
    async fn service_account_token_cost() {
        let rounds = 20_000u32;
        for (label, ttl) in [("uncached", Duration::ZERO), ("cached", SUCCESS_TTL)] {
            let (state, tokens, token) = server_with_token(ttl).await;
            let started = Instant::now();
            for _ in 0..rounds {
                assert!(authenticate(&state, &tokens, &token).await.is_some());
            }
            let per = started.elapsed() / rounds;
            println!("ServiceAccount token authentication, {label}: {per:?} per request");
        }
    }
}
