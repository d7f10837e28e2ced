//! Bootstrap tokens (`--enable-bootstrap-token-auth`): kube-apiserver's authenticator for the
//! tokens `kubeadm token create` writes, with which a joining machine's kubelet asks for its
//! client certificate. A bearer token `<id>.<secret>` (six and sixteen characters of
//! `[a-z0-9]`) is checked against the Secret `kube-system/bootstrap-token-<id>` of type
//! `bootstrap.kubernetes.io/token`: its `token-secret` must match, `usage-bootstrap-authentication`
//! be `true`, `expiration` (RFC 3339) not be past and the Secret not be being deleted. The user is
//! `system:bootstrap:<id>` in `system:bootstrappers` and the groups of `auth-extra-groups`
//! (each must start with `system:bootstrappers:`). Anything else fails the request (401), as
//! kube-apiserver's authenticator does, without saying why to the client; the reason is logged
//! at debug level, never the secret.
//!
//! The Secret is read from the store per request: only joining machines present such tokens,
//! a few requests each.

use std::sync::Arc;

use base64::Engine;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::UserInfo;
use crate::object;
use crate::server::ApiState;

/// The namespace of bootstrap token Secrets.
pub const NAMESPACE: &str = "kube-system";
/// Their type.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// The group of every bootstrap token's user.
pub const BOOTSTRAPPERS_GROUP: &str = "system:bootstrappers";

/// `<id>.<secret>` split, when `token` has a bootstrap token's shape.
pub fn parse(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let valid = |part: &str, length: usize| {
        part.len() == length
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (valid(id, 6) && valid(secret, 16)).then_some((id, secret))
}

/// The user of a bootstrap token, or `None` when the token does not authenticate.
pub(crate) async fn authenticate(state: &ApiState, token: &str) -> Option<Arc<UserInfo>> {
    let (id, secret) = parse(token)?;
    let name = format!("bootstrap-token-{id}");
    let secrets = state.registry.lookup("", "v1", "secrets")?;
    let key = secrets.key(Some(NAMESPACE), &name);
    let stored = match state.store.get(&key, None).await {
        Ok(Some(kv)) => object::decode_stored(&kv).ok()?,
        Ok(None) => {
            tracing::debug!(token = id, "No Secret for the bootstrap token");
            return None;
        }
        Err(error) => {
            tracing::warn!(token = id, %error, "Cannot read a bootstrap token's Secret");
            return None;
        }
    };
    match user_of(&stored, id, secret, OffsetDateTime::now_utc()) {
        Ok(user) => Some(Arc::new(user)),
        Err(reason) => {
            tracing::debug!(token = id, reason, "Bootstrap token refused");
            None
        }
    }
}

/// The user `secret` (a bootstrap token Secret) authenticates for token `<id>.<token_secret>`
/// at `now`, or why it does not.
fn user_of(
    secret: &Value,
    id: &str,
    token_secret: &str,
    now: OffsetDateTime,
) -> Result<UserInfo, &'static str> {
    if secret["type"] != SECRET_TYPE {
        return Err("the Secret is not of type bootstrap.kubernetes.io/token");
    }
    if object::deletion_timestamp(secret).is_some() {
        return Err("the Secret is being deleted");
    }
    let data = |key: &str| -> Option<String> {
        let encoded = secret["data"][key].as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        String::from_utf8(bytes).ok()
    };
    if data("token-id").as_deref() != Some(id) {
        return Err("the Secret's token-id differs");
    }
    let stored_secret = data("token-secret").ok_or("the Secret has no token-secret")?;
    if !constant_time_eq(stored_secret.as_bytes(), token_secret.as_bytes()) {
        return Err("wrong token secret");
    }
    if data("usage-bootstrap-authentication").as_deref() != Some("true") {
        return Err("the token is not for authentication");
    }
    if let Some(expiration) = data("expiration") {
        let expiration = OffsetDateTime::parse(&expiration, &Rfc3339)
            .map_err(|_| "the Secret's expiration is not RFC 3339")?;
        if expiration <= now {
            return Err("the token has expired");
        }
    }
    let mut groups = vec![BOOTSTRAPPERS_GROUP.to_string()];
    if let Some(extra) = data("auth-extra-groups") {
        for group in extra.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            if !valid_extra_group(group) {
                return Err("auth-extra-groups names a group outside system:bootstrappers:");
            }
            groups.push(group.to_string());
        }
    }
    Ok(UserInfo::authenticated(
        format!("system:bootstrap:{id}"),
        "",
        groups,
    ))
}

/// kube's rule for extra groups: `system:bootstrappers:` then `[a-z0-9:-]`, not ending in `:`
/// or `-`.
fn valid_extra_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    !rest.is_empty()
        && rest.len() <= 256
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
        && rest
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    fn secret(expiration: &str, extra_groups: &str) -> Value {
        json!({
            "type": SECRET_TYPE,
            "metadata": {"name": "bootstrap-token-abcdef", "namespace": NAMESPACE},
            "data": {
                "token-id": b64("abcdef"),
                "token-secret": b64("0123456789abcdef"),
                "usage-bootstrap-authentication": b64("true"),
                "expiration": b64(expiration),
                "auth-extra-groups": b64(extra_groups),
            }
        })
    }

    #[test]
    fn a_valid_token_is_its_bootstrap_user() {
        let now = OffsetDateTime::parse("2026-01-01T00:00:00Z", &Rfc3339).unwrap();
        let user = user_of(
            &secret(
                "2026-01-01T00:15:00Z",
                "system:bootstrappers:kubeadm:default-node-token",
            ),
            "abcdef",
            "0123456789abcdef",
            now,
        )
        .unwrap();
        assert_eq!(user.name, "system:bootstrap:abcdef");
        assert_eq!(
            user.groups,
            [
                "system:bootstrappers",
                "system:bootstrappers:kubeadm:default-node-token",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn expired_wrong_or_misused_tokens_fail() {
        let now = OffsetDateTime::parse("2026-01-01T00:00:00Z", &Rfc3339).unwrap();
        let good = secret("2026-01-01T00:15:00Z", "");
        assert!(user_of(&good, "abcdef", "0123456789abcdeX", now).is_err());
        assert!(
            user_of(
                &secret("2025-12-31T23:59:59Z", ""),
                "abcdef",
                "0123456789abcdef",
                now
            )
            .is_err()
        );
        assert!(
            user_of(
                &secret("2026-01-01T00:15:00Z", "system:masters"),
                "abcdef",
                "0123456789abcdef",
                now
            )
            .is_err()
        );
        let mut not_for_authentication = good.clone();
        not_for_authentication["data"]["usage-bootstrap-authentication"] = json!(b64("false"));
        assert!(user_of(&not_for_authentication, "abcdef", "0123456789abcdef", now).is_err());
        let mut opaque = good;
        opaque["type"] = json!("Opaque");
        assert!(user_of(&opaque, "abcdef", "0123456789abcdef", now).is_err());
        assert_eq!(
            parse("abcdef.0123456789abcdef"),
            Some(("abcdef", "0123456789abcdef"))
        );
        assert_eq!(parse("ABCDEF.0123456789abcdef"), None);
        assert_eq!(parse("abcdef0123456789abcdef"), None);
    }
}
