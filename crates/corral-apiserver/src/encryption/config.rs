//! kube-apiserver's `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`), the file of
//! `--encryption-provider-config`: which resources are encrypted, and with which providers
//! and keys. Parsed and validated here into [`Encryption`]; errors name the field as
//! kube-apiserver's validation does, and never show a key.

use std::path::Path;

use base64::Engine;
use serde::Deserialize;

use super::{Encryption, Provider, ProviderKind, Rule};

#[derive(Debug, thiserror::Error)]
pub enum EncryptionConfigError {
    // The I/O error is in the message, not a source, so that a chain prints it once.
    #[error("cannot read the encryption provider config {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("encryption provider config {path}: {message}")]
    Parse { path: String, message: String },
    /// A field-level error, worded as kube-apiserver's `field.Error`.
    #[error("encryption provider config {path}: {field}: {message}")]
    Invalid {
        path: String,
        field: String,
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    resources: Vec<ResourceConfiguration>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceConfiguration {
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    providers: Vec<ProviderConfiguration>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderConfiguration {
    aesgcm: Option<KeysConfiguration>,
    aescbc: Option<KeysConfiguration>,
    secretbox: Option<KeysConfiguration>,
    identity: Option<serde_json::Value>,
    kms: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct KeysConfiguration {
    #[serde(default)]
    keys: Vec<KeyConfiguration>,
}

#[derive(Deserialize)]
struct KeyConfiguration {
    #[serde(default)]
    name: String,
    #[serde(default)]
    secret: String,
}

pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
pub const KIND: &str = "EncryptionConfiguration";

/// Reads and validates the file of `--encryption-provider-config`.
pub fn load(path: &Path) -> Result<Encryption, EncryptionConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| EncryptionConfigError::Read {
        path: path.display().to_string(),
        error,
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses an `EncryptionConfiguration`; `path` only names it in errors.
pub fn parse(text: &str, path: &str) -> Result<Encryption, EncryptionConfigError> {
    let file: File =
        serde_saphyr::from_str(text).map_err(|error| EncryptionConfigError::Parse {
            path: path.into(),
            message: error.to_string(),
        })?;
    let invalid = |field: String, message: String| EncryptionConfigError::Invalid {
        path: path.into(),
        field,
        message,
    };
    if file.kind.as_deref() != Some(KIND) || file.api_version.as_deref() != Some(API_VERSION) {
        return Err(EncryptionConfigError::Parse {
            path: path.into(),
            message: format!(
                "no kind \"{}\" is registered for version \"{}\": want kind {KIND} of {API_VERSION}",
                file.kind.unwrap_or_default(),
                file.api_version.unwrap_or_default()
            ),
        });
    }
    if file.resources.is_empty() {
        return Err(invalid(
            "resources".into(),
            "Required value: at least one resourceConfiguration is required".into(),
        ));
    }
    let mut rules = Vec::new();
    for (index, resource_config) in file.resources.into_iter().enumerate() {
        let base = format!("resources[{index}]");
        if resource_config.resources.is_empty() {
            return Err(invalid(
                format!("{base}.resources"),
                "Required value: at least one resource is required".into(),
            ));
        }
        if resource_config.providers.is_empty() {
            return Err(invalid(
                format!("{base}.providers"),
                "Required value: at least one provider is required".into(),
            ));
        }
        let mut providers = Vec::new();
        for (provider_index, provider) in resource_config.providers.into_iter().enumerate() {
            let field = format!("{base}.providers[{provider_index}]");
            providers.extend(compile_provider(provider, &field).map_err(|(f, m)| invalid(f, m))?);
        }
        for (resource_index, resource) in resource_config.resources.iter().enumerate() {
            let prefix = key_prefix(resource).ok_or_else(|| {
                invalid(
                    format!("{base}.resources[{resource_index}]"),
                    format!("Invalid value: \"{resource}\": resource name must be lower case, a plural resource name, optionally with its group (\"deployments.apps\"), or a wildcard (\"*.apps\", \"*.*\")"),
                )
            })?;
            rules.push(Rule {
                prefix,
                specificity: specificity(resource),
                providers: providers.clone().into(),
            });
        }
    }
    // kube-apiserver: an exact resource wins over its group's wildcard, which wins over
    // `*.*`; among equals, the first listed.
    rules.sort_by_key(|rule| std::cmp::Reverse(rule.specificity));
    Ok(Encryption::new(rules))
}

/// The store key prefix of a resource name as the configuration spells it (`secrets`,
/// `deployments.apps`, `*.apps`, `*.` for the core group, `*.*`).
fn key_prefix(resource: &str) -> Option<String> {
    if resource.is_empty() || resource != resource.to_lowercase() || resource.contains('/') {
        return None;
    }
    if resource == "*.*" {
        return Some("/registry/".into());
    }
    let (name, group) = match resource.split_once('.') {
        Some((name, group)) => (name, group),
        None => (resource, ""),
    };
    let group = if group.is_empty() { "core" } else { group };
    if group.contains('*') || (name.contains('*') && name != "*") {
        return None;
    }
    if name == "*" {
        return Some(format!("/registry/{group}/"));
    }
    Some(format!("/registry/{group}/{name}/"))
}

fn specificity(resource: &str) -> u8 {
    match resource {
        "*.*" => 0,
        _ if resource.starts_with("*.") => 1,
        _ => 2,
    }
}

fn compile_provider(
    provider: ProviderConfiguration,
    field: &str,
) -> Result<Vec<Provider>, (String, String)> {
    let given = [
        provider.aesgcm.is_some(),
        provider.aescbc.is_some(),
        provider.secretbox.is_some(),
        provider.identity.is_some(),
        provider.kms.is_some(),
    ]
    .into_iter()
    .filter(|given| *given)
    .count();
    if given != 1 {
        let message = if given == 0 {
            "Required value: provider does not contain any of the expected providers: KMS, secretbox, aesgcm, aescbc, identity"
        } else {
            "Invalid value: more than one provider specified in a single element, should split into different list elements"
        };
        return Err((field.into(), message.into()));
    }
    if provider.kms.is_some() {
        return Err((
            format!("{field}.kms"),
            "Unsupported value: Corral has no KMS plugins; use aescbc, aesgcm or secretbox".into(),
        ));
    }
    if provider.identity.is_some() {
        return Ok(vec![Provider::identity()]);
    }
    let (kind, keys, sizes): (_, _, &[usize]) = if let Some(keys) = provider.aesgcm {
        (ProviderKind::AesGcm, keys, &[16, 24, 32])
    } else if let Some(keys) = provider.aescbc {
        (ProviderKind::AesCbc, keys, &[16, 24, 32])
    } else {
        (ProviderKind::Secretbox, provider.secretbox.unwrap(), &[32])
    };
    let field = format!("{field}.{}", kind.name());
    if keys.keys.is_empty() {
        return Err((
            format!("{field}.keys"),
            "Required value: at least one key is required".into(),
        ));
    }
    let mut compiled = Vec::new();
    for (index, key) in keys.keys.into_iter().enumerate() {
        let key_field = format!("{field}.keys[{index}]");
        if key.name.is_empty() {
            return Err((
                format!("{key_field}.name"),
                "Required value: key name is required".into(),
            ));
        }
        if key.name.contains(':') {
            return Err((
                format!("{key_field}.name"),
                format!("Invalid value: \"{}\": should not contain ':'", key.name),
            ));
        }
        if compiled
            .iter()
            .any(|existing: &Provider| existing.key_name == key.name)
        {
            return Err((
                format!("{key_field}.name"),
                format!("Duplicate value: \"{}\"", key.name),
            ));
        }
        if key.secret.is_empty() {
            return Err((
                format!("{key_field}.secret"),
                "Required value: secret is required".into(),
            ));
        }
        let secret = base64::engine::general_purpose::STANDARD
            .decode(key.secret.trim())
            .map_err(|_| {
                (
                    format!("{key_field}.secret"),
                    "Invalid value: \"REDACTED\": secret is not a valid base64 string".into(),
                )
            })?;
        if !sizes.contains(&secret.len()) {
            return Err((
                format!("{key_field}.secret"),
                format!(
                    "Invalid value: \"REDACTED\": secret is not of the expected length, got {}, expected one of {sizes:?}",
                    secret.len()
                ),
            ));
        }
        compiled.push(Provider::new(kind, key.name, &secret));
    }
    Ok(compiled)
}

/// An `EncryptionConfiguration` for Secrets with one new random 32-byte `secretbox` key named
/// `key1`, and `identity` to read what was written before encryption was on: what `corral up`
/// writes into a data directory that has none.
pub fn generate_for_secrets() -> String {
    let mut key = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut key);
    let secret = base64::engine::general_purpose::STANDARD.encode(key);
    format!(
        "apiVersion: {API_VERSION}
kind: {KIND}
resources:
  - resources:
      - secrets
    providers:
      - secretbox:
          keys:
            - name: key1
              secret: {secret}
      - identity: {{}}
"
    )
}
