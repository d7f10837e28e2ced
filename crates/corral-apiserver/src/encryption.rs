//! Encryption at rest, as kube-apiserver's `--encryption-provider-config`: the values of
//! configured resources (Secrets, typically) are encrypted on their way into the store and
//! decrypted on their way out, so that a copy of the SQLite file or of etcd's keyspace holds
//! no Secret in clear.
//!
//! `config.rs` reads the `EncryptionConfiguration`; `store.rs` is [`EncryptedStore`], a
//! `Store` around the backend, which `ApiState::start` puts in front of every read, write and
//! watch: the rest of the server, the watch cache included, sees plaintext only.
//!
//! A stored value carries kube's prefix `k8s:enc:<provider>:v1:<key name>:` then the
//! provider's output: `aescbc` a 16-byte IV then AES-CBC with PKCS#7 padding, `aesgcm` a
//! 12-byte nonce then AES-GCM with the storage key as additional data, `secretbox` a 24-byte
//! nonce then XSalsa20-Poly1305. The first provider of a resource encrypts (`identity` writes
//! plaintext); every provider decrypts what carries its prefix, `identity` what carries none.
//! A value read with anything but the first provider is *stale*: an update that changes
//! nothing still rewrites it (`is_stale`), which is how `kubectl replace` of every Secret
//! moves them to a new key, as in kube.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use aes_gcm::aead::{Aead, KeyInit, Payload};
use bytes::{BufMut, Bytes, BytesMut};
use corral_store::Revision;

pub mod config;
mod store;
#[cfg(test)]
mod tests;

pub use config::EncryptionConfigError;
pub use store::EncryptedStore;

/// Every encrypted value starts with this (kube's `k8s:enc:`).
const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// Why a value could not be encrypted or decrypted. Names the provider and key, never data.
#[derive(Debug, thiserror::Error)]
pub enum TransformError {
    #[error("no matching prefix found")]
    NoMatchingPrefix,
    #[error("identity transformer tried to read encrypted data")]
    IdentityReadEncrypted,
    #[error("failed to decrypt data with {provider} key {key:?} (wrong key or corrupt data)")]
    Decrypt { provider: &'static str, key: String },
    #[error("failed to encrypt data with {provider} key {key:?}")]
    Encrypt { provider: &'static str, key: String },
}

/// The compiled configuration: which keys are encrypted by which providers.
pub struct Encryption {
    /// Most specific first (exact resources, then group wildcards, then `*.*`).
    rules: Vec<Rule>,
    /// Keys last read with a provider other than the first, at that revision.
    stale: Mutex<HashMap<String, Revision>>,
}

struct Rule {
    /// The store key prefix of the resource (`/registry/core/secrets/`).
    prefix: String,
    specificity: u8,
    providers: Arc<[Provider]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProviderKind {
    Identity,
    AesGcm,
    AesCbc,
    Secretbox,
}

impl ProviderKind {
    fn name(self) -> &'static str {
        match self {
            ProviderKind::Identity => "identity",
            ProviderKind::AesGcm => "aesgcm",
            ProviderKind::AesCbc => "aescbc",
            ProviderKind::Secretbox => "secretbox",
        }
    }
}

/// One key of one provider (a provider with three keys is three of these, in order).
#[derive(Clone)]
struct Provider {
    kind: ProviderKind,
    key_name: String,
    /// `k8s:enc:<provider>:v1:<key name>:`; empty for identity.
    prefix: Vec<u8>,
    cipher: Arc<Cipher>,
}

enum Cipher {
    Identity,
    AesGcm128(aes_gcm::Aes128Gcm),
    AesGcm192(aes_gcm::AesGcm<aes::Aes192, aes_gcm::aead::consts::U12>),
    AesGcm256(aes_gcm::Aes256Gcm),
    AesCbc(Vec<u8>),
    Secretbox(crypto_secretbox::XSalsa20Poly1305),
}

const GCM_NONCE: usize = 12;
const CBC_IV: usize = 16;
const SECRETBOX_NONCE: usize = 24;

impl Provider {
    fn identity() -> Self {
        Provider {
            kind: ProviderKind::Identity,
            key_name: String::new(),
            prefix: Vec::new(),
            cipher: Arc::new(Cipher::Identity),
        }
    }

    /// `secret` has a length the kind accepts (checked by `config.rs`).
    fn new(kind: ProviderKind, key_name: String, secret: &[u8]) -> Self {
        let cipher = match (kind, secret.len()) {
            (ProviderKind::AesGcm, 16) => {
                Cipher::AesGcm128(aes_gcm::Aes128Gcm::new_from_slice(secret).unwrap())
            }
            (ProviderKind::AesGcm, 24) => {
                Cipher::AesGcm192(aes_gcm::AesGcm::new_from_slice(secret).unwrap())
            }
            (ProviderKind::AesGcm, _) => {
                Cipher::AesGcm256(aes_gcm::Aes256Gcm::new_from_slice(secret).unwrap())
            }
            (ProviderKind::AesCbc, _) => Cipher::AesCbc(secret.to_vec()),
            (ProviderKind::Secretbox, _) => Cipher::Secretbox(
                crypto_secretbox::XSalsa20Poly1305::new_from_slice(secret).unwrap(),
            ),
            (ProviderKind::Identity, _) => Cipher::Identity,
        };
        Provider {
            kind,
            prefix: format!("k8s:enc:{}:v1:{key_name}:", kind.name()).into_bytes(),
            key_name,
            cipher: Arc::new(cipher),
        }
    }

    fn encrypt(&self, key: &str, plaintext: &[u8]) -> Result<Bytes, TransformError> {
        let failed = || TransformError::Encrypt {
            provider: self.kind.name(),
            key: self.key_name.clone(),
        };
        let mut out = BytesMut::with_capacity(self.prefix.len() + 40 + plaintext.len());
        out.put_slice(&self.prefix);
        match &*self.cipher {
            Cipher::Identity => return Ok(Bytes::copy_from_slice(plaintext)),
            Cipher::AesGcm128(cipher) => seal_gcm(cipher, key, plaintext, &mut out),
            Cipher::AesGcm192(cipher) => seal_gcm(cipher, key, plaintext, &mut out),
            Cipher::AesGcm256(cipher) => seal_gcm(cipher, key, plaintext, &mut out),
            Cipher::AesCbc(secret) => {
                let iv: [u8; CBC_IV] = random();
                out.put_slice(&iv);
                out.put_slice(&cbc_encrypt(secret, &iv, plaintext));
                Ok(())
            }
            Cipher::Secretbox(cipher) => {
                let nonce: [u8; SECRETBOX_NONCE] = random();
                out.put_slice(&nonce);
                cipher
                    .encrypt(&nonce.into(), plaintext)
                    .map(|sealed| out.put_slice(&sealed))
                    .map_err(|_| ())
            }
        }
        .map_err(|()| failed())?;
        Ok(out.freeze())
    }

    /// Decrypts what follows this provider's prefix.
    fn decrypt(&self, key: &str, data: &[u8]) -> Result<Vec<u8>, TransformError> {
        let failed = || TransformError::Decrypt {
            provider: self.kind.name(),
            key: self.key_name.clone(),
        };
        match &*self.cipher {
            Cipher::Identity => Ok(data.to_vec()),
            Cipher::AesGcm128(cipher) => open_gcm(cipher, key, data),
            Cipher::AesGcm192(cipher) => open_gcm(cipher, key, data),
            Cipher::AesGcm256(cipher) => open_gcm(cipher, key, data),
            Cipher::AesCbc(secret) => {
                if data.len() < CBC_IV {
                    return Err(failed());
                }
                let (iv, ciphertext) = data.split_at(CBC_IV);
                cbc_decrypt(secret, iv, ciphertext)
            }
            Cipher::Secretbox(cipher) => {
                if data.len() < SECRETBOX_NONCE {
                    return Err(failed());
                }
                let (nonce, sealed) = data.split_at(SECRETBOX_NONCE);
                cipher
                    .decrypt(crypto_secretbox::Nonce::from_slice(nonce), sealed)
                    .map_err(|_| ())
            }
        }
        .map_err(|()| failed())
    }
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    bytes
}

fn seal_gcm<C>(cipher: &C, key: &str, plaintext: &[u8], out: &mut BytesMut) -> Result<(), ()>
where
    C: Aead + aes_gcm::AeadCore<NonceSize = aes_gcm::aead::consts::U12>,
{
    let nonce: [u8; GCM_NONCE] = random();
    let sealed = cipher
        .encrypt(
            &nonce.into(),
            Payload {
                msg: plaintext,
                aad: key.as_bytes(),
            },
        )
        .map_err(|_| ())?;
    out.put_slice(&nonce);
    out.put_slice(&sealed);
    Ok(())
}

fn open_gcm<C>(cipher: &C, key: &str, data: &[u8]) -> Result<Vec<u8>, ()>
where
    C: Aead + aes_gcm::AeadCore<NonceSize = aes_gcm::aead::consts::U12>,
{
    if data.len() < GCM_NONCE {
        return Err(());
    }
    let (nonce, sealed) = data.split_at(GCM_NONCE);
    cipher
        .decrypt(
            aes_gcm::Nonce::from_slice(nonce),
            Payload {
                msg: sealed,
                aad: key.as_bytes(),
            },
        )
        .map_err(|_| ())
}

fn cbc_encrypt(secret: &[u8], iv: &[u8], plaintext: &[u8]) -> Vec<u8> {
    use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
    // Key and IV lengths were checked: `new_from_slices` cannot fail.
    match secret.len() {
        16 => cbc::Encryptor::<aes::Aes128>::new_from_slices(secret, iv)
            .unwrap()
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
        24 => cbc::Encryptor::<aes::Aes192>::new_from_slices(secret, iv)
            .unwrap()
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
        _ => cbc::Encryptor::<aes::Aes256>::new_from_slices(secret, iv)
            .unwrap()
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
    }
}

fn cbc_decrypt(secret: &[u8], iv: &[u8], ciphertext: &[u8]) -> Result<Vec<u8>, ()> {
    use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::Pkcs7};
    match secret.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(secret, iv)
            .map_err(|_| ())?
            .decrypt_padded_vec_mut::<Pkcs7>(ciphertext),
        24 => cbc::Decryptor::<aes::Aes192>::new_from_slices(secret, iv)
            .map_err(|_| ())?
            .decrypt_padded_vec_mut::<Pkcs7>(ciphertext),
        _ => cbc::Decryptor::<aes::Aes256>::new_from_slices(secret, iv)
            .map_err(|_| ())?
            .decrypt_padded_vec_mut::<Pkcs7>(ciphertext),
    }
    .map_err(|_| ())
}

impl Encryption {
    fn new(rules: Vec<Rule>) -> Self {
        Encryption {
            rules,
            stale: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the file of `--encryption-provider-config`.
    pub fn load(path: &std::path::Path) -> Result<Self, EncryptionConfigError> {
        config::load(path)
    }

    fn providers(&self, key: &str) -> Option<&[Provider]> {
        self.rules
            .iter()
            .find(|rule| key.starts_with(&rule.prefix))
            .map(|rule| &*rule.providers)
    }

    /// Whether values under `prefix` may be transformed (a watch of another resource's
    /// prefix passes its events through untouched).
    fn covers_prefix(&self, prefix: &str) -> bool {
        self.rules
            .iter()
            .any(|rule| rule.prefix.starts_with(prefix) || prefix.starts_with(&rule.prefix))
    }

    /// The value to store for `key`.
    pub fn encrypt(&self, key: &str, value: Bytes) -> Result<Bytes, TransformError> {
        match self.providers(key) {
            Some([first, ..]) if first.kind != ProviderKind::Identity => first.encrypt(key, &value),
            _ => Ok(value),
        }
    }

    /// The plaintext of a stored value of `key`, and whether it was read with another
    /// provider than the first (so that a rewrite would change what is stored).
    pub fn decrypt(&self, key: &str, value: Bytes) -> Result<(Bytes, bool), TransformError> {
        let Some(providers) = self.providers(key) else {
            return Ok((value, false));
        };
        for (index, provider) in providers.iter().enumerate() {
            if provider.kind == ProviderKind::Identity {
                continue;
            }
            if let Some(data) = value.strip_prefix(provider.prefix.as_slice()) {
                let plaintext = provider.decrypt(key, data)?;
                return Ok((Bytes::from(plaintext), index != 0));
            }
        }
        if value.starts_with(ENCRYPTED_PREFIX) {
            return Err(
                if providers.iter().any(|p| p.kind == ProviderKind::Identity) {
                    TransformError::IdentityReadEncrypted
                } else {
                    TransformError::NoMatchingPrefix
                },
            );
        }
        match providers
            .iter()
            .position(|p| p.kind == ProviderKind::Identity)
        {
            Some(index) => Ok((value, index != 0)),
            None => Err(TransformError::NoMatchingPrefix),
        }
    }

    fn note_stale(&self, key: &str, revision: Revision, stale: bool) {
        let mut map = self.stale.lock().unwrap();
        if stale {
            map.insert(key.to_string(), revision);
        } else if !map.is_empty() {
            map.remove(key);
        }
    }

    fn forget(&self, key: &str) {
        let mut map = self.stale.lock().unwrap();
        if !map.is_empty() {
            map.remove(key);
        }
    }

    /// Whether `key` at `revision` was read with another provider than the first: an
    /// update that changes nothing must still be written, to store it with the first.
    pub fn is_stale(&self, key: &str, revision: Revision) -> bool {
        self.stale.lock().unwrap().get(key) == Some(&revision)
    }
}

impl fmt::Debug for Encryption {
    // Resource prefixes, providers and key names; never a key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for rule in &self.rules {
            let providers: Vec<String> = rule
                .providers
                .iter()
                .map(|p| match p.kind {
                    ProviderKind::Identity => "identity".to_string(),
                    kind => format!("{}:{}", kind.name(), p.key_name),
                })
                .collect();
            list.entry(&format_args!("{} {:?}", rule.prefix, providers));
        }
        list.finish()
    }
}
