//! [`EncryptedStore`]: a `Store` that encrypts values on the way into its backend and
//! decrypts them on the way out (reads, the answers of writes, conflicts, watch events).

use std::sync::Arc;

use bytes::Bytes;
use corral_store::{
    DynStore, Error, KeyValue, RangeRequest, RangeResponse, Result, Revision, Store, WatchStream,
};
use futures::StreamExt;

use super::{Encryption, TransformError};

pub struct EncryptedStore {
    inner: DynStore,
    encryption: Arc<Encryption>,
}

impl EncryptedStore {
    pub fn new(inner: DynStore, encryption: Arc<Encryption>) -> Self {
        EncryptedStore { inner, encryption }
    }

    fn encrypt(&self, key: &str, value: Bytes) -> Result<Bytes> {
        self.encryption
            .encrypt(key, value)
            .map_err(|error| transform_failed(key, error))
    }

    fn decrypt(&self, kv: &mut KeyValue) -> Result<()> {
        decrypt(&self.encryption, kv)
    }

    /// A `Conflict` carries the key as it is now: decrypted too.
    fn decrypt_error(&self, mut error: Error) -> Error {
        if let Error::Conflict { current, .. } = &mut error
            && let Err(failed) = self.decrypt(current)
        {
            return failed;
        }
        error
    }
}

fn decrypt(encryption: &Encryption, kv: &mut KeyValue) -> Result<()> {
    let value = std::mem::take(&mut kv.value);
    let (plaintext, stale) = encryption
        .decrypt(&kv.key, value)
        .map_err(|error| transform_failed(&kv.key, error))?;
    kv.value = plaintext;
    encryption.note_stale(&kv.key, kv.mod_revision, stale);
    Ok(())
}

fn transform_failed(key: &str, error: TransformError) -> Error {
    tracing::error!(key, %error, "Cannot transform a stored value; check the encryption provider config");
    Error::backend(format!("unable to transform key {key:?}: {error}"), error)
}

#[async_trait::async_trait]
impl Store for EncryptedStore {
    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let mut found = self.inner.get(key, revision).await?;
        if let Some(kv) = &mut found {
            self.decrypt(kv)?;
        }
        Ok(found)
    }

    async fn range(&self, request: RangeRequest) -> Result<RangeResponse> {
        let covered = self.encryption.covers_prefix(&request.prefix);
        let mut response = self.inner.range(request).await?;
        if covered {
            for kv in &mut response.kvs {
                self.decrypt(kv)?;
            }
        }
        Ok(response)
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        let value = self.encrypt(key, value)?;
        let revision = self.inner.create(key, value).await?;
        self.encryption.forget(key);
        Ok(revision)
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        let value = self.encrypt(key, value)?;
        match self.inner.update(key, value, expected).await {
            Ok(revision) => {
                self.encryption.forget(key);
                Ok(revision)
            }
            Err(error) => Err(self.decrypt_error(error)),
        }
    }

    async fn delete(&self, key: &str, expected: Revision) -> Result<(Revision, KeyValue)> {
        match self.inner.delete(key, expected).await {
            Ok((revision, mut kv)) => {
                self.decrypt(&mut kv)?;
                self.encryption.forget(key);
                Ok((revision, kv))
            }
            Err(error) => Err(self.decrypt_error(error)),
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        let stream = self.inner.watch(prefix, after).await?;
        if !self.encryption.covers_prefix(prefix) {
            return Ok(stream);
        }
        let encryption = self.encryption.clone();
        // An event whose value cannot be decrypted is left out (and logged by `decrypt`), as
        // kube's watch cache skips what it cannot decode: ending the stream would have the
        // cache reopen the watch at that same event again and again, and passing it on as
        // stored would put ciphertext in the cache. Reads of the key still fail with the error.
        Ok(Box::pin(stream.filter_map(move |event| {
            let result = match event {
                Ok(mut event) => {
                    let decrypted =
                        decrypt(&encryption, &mut event.kv).and_then(|()| match &mut event.prev {
                            Some(prev) => decrypt(&encryption, prev),
                            None => Ok(()),
                        });
                    decrypted.ok().map(|()| Ok(event))
                }
                Err(error) => Some(Err(error)),
            };
            std::future::ready(result)
        })))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.inner.compacted_revision().await
    }
}
