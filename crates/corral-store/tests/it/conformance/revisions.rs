//! The global revision: where it starts and how it moves.

use corral_store::{DynStore, Error, RangeRequest, RangeResponse};

use super::{bytes, kv};
use crate::assert_err;

pub async fn revision_starts_at_one(store: DynStore) {
    assert_eq!(store.current_revision().await.unwrap(), 1);
    let response = store.range(RangeRequest::default()).await.unwrap();
    assert_eq!(
        response,
        RangeResponse {
            kvs: vec![],
            revision: 1,
            more: false
        }
    );
    assert_eq!(store.get("/a", None).await.unwrap(), None);
    assert_eq!(store.get("/a", Some(1)).await.unwrap(), None);
    assert_eq!(store.create("/a", bytes("1")).await.unwrap(), 2);
}

pub async fn every_write_adds_exactly_one(store: DynStore) {
    assert_eq!(store.create("/a", bytes("a1")).await.unwrap(), 2);
    assert_eq!(store.current_revision().await.unwrap(), 2);
    assert_eq!(store.update("/a", bytes("a2"), 2).await.unwrap(), 3);
    assert_eq!(store.current_revision().await.unwrap(), 3);
    // The revision is global: a write to another key takes the next one.
    assert_eq!(store.create("/b", bytes("b1")).await.unwrap(), 4);
    assert_eq!(store.current_revision().await.unwrap(), 4);
    let (revision, deleted) = store.delete("/a", 3).await.unwrap();
    assert_eq!((revision, deleted), (5, kv("/a", "a2", 2, 3)));
    assert_eq!(store.current_revision().await.unwrap(), 5);
    assert_eq!(store.update("/b", bytes("b2"), 4).await.unwrap(), 6);
    assert_eq!(store.current_revision().await.unwrap(), 6);
}

pub async fn failed_writes_leave_the_revision_alone(store: DynStore) {
    assert_eq!(store.create("/a", bytes("a")).await.unwrap(), 2);
    assert_err!(
        store.create("/a", bytes("again")).await,
        Error::AlreadyExists { key } if key == "/a"
    );
    assert_err!(
        store.update("/a", bytes("stale"), 1).await,
        Error::Conflict { .. }
    );
    assert_err!(store.delete("/a", 7).await, Error::Conflict { .. });
    assert_err!(
        store.update("/missing", bytes("x"), 2).await,
        Error::NotFound { .. }
    );
    assert_err!(store.delete("/missing", 2).await, Error::NotFound { .. });
    let too_large = bytes::Bytes::from(vec![0u8; 3 * 1024 * 1024 + 1]);
    assert_err!(
        store.create("/large", too_large.clone()).await,
        Error::ValueTooLarge { .. }
    );
    assert_err!(
        store.update("/a", too_large, 2).await,
        Error::ValueTooLarge { .. }
    );
    assert_eq!(store.current_revision().await.unwrap(), 2);
    // No revision was used up by the failures: the next write is the very next revision.
    assert_eq!(store.create("/b", bytes("b")).await.unwrap(), 3);
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "a", 2, 2))
    );
    assert_eq!(store.get("/large", None).await.unwrap(), None);
}

pub async fn reads_report_the_current_revision(store: DynStore) {
    store.create("/a/1", bytes("1")).await.unwrap();
    store.create("/b/1", bytes("1")).await.unwrap();
    store.create("/b/2", bytes("2")).await.unwrap();
    // The answer is served at the store's revision, not at the newest key it returns.
    let response = store
        .range(RangeRequest {
            prefix: "/a/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(response.revision, 4);
    assert_eq!(response.kvs, vec![kv("/a/1", "1", 2, 2)]);
    let empty = store
        .range(RangeRequest {
            prefix: "/nothing/".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(empty.revision, 4);
    assert!(empty.kvs.is_empty() && !empty.more);
}
