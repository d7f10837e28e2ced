//! Writes and their preconditions: create-if-absent and compare-and-swap on `mod_revision`.

use bytes::Bytes;
use corral_store::{DynStore, Error};

use super::{bytes, kv};
use crate::assert_err;

pub async fn create_fails_if_the_key_exists(store: DynStore) {
    assert_eq!(store.create("/a", bytes("first")).await.unwrap(), 2);
    assert_err!(
        store.create("/a", bytes("second")).await,
        Error::AlreadyExists { key } if key == "/a"
    );
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "first", 2, 2))
    );
    // Keys are exact: a longer key with the same start is another key.
    assert_eq!(store.create("/a/b", bytes("child")).await.unwrap(), 3);
    assert_eq!(store.create("/ab", bytes("sibling")).await.unwrap(), 4);
}

pub async fn update_checks_the_mod_revision(store: DynStore) {
    assert_eq!(store.create("/a", bytes("v1")).await.unwrap(), 2);
    assert_eq!(store.update("/a", bytes("v2"), 2).await.unwrap(), 3);
    // The create revision is no longer the mod revision: updating against it is stale.
    match store.update("/a", bytes("stale"), 2).await {
        Err(Error::Conflict {
            key,
            expected,
            current,
        }) => {
            assert_eq!(key, "/a");
            assert_eq!(expected, 2);
            assert_eq!(*current, kv("/a", "v2", 2, 3));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(store.update("/a", bytes("v3"), 3).await.unwrap(), 4);
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "v3", 2, 4))
    );
}

pub async fn delete_checks_the_mod_revision_and_returns_the_last_value(store: DynStore) {
    assert_eq!(store.create("/a", bytes("v1")).await.unwrap(), 2);
    assert_eq!(store.update("/a", bytes("v2"), 2).await.unwrap(), 3);
    match store.delete("/a", 2).await {
        Err(Error::Conflict {
            key,
            expected,
            current,
        }) => {
            assert_eq!(key, "/a");
            assert_eq!(expected, 2);
            assert_eq!(*current, kv("/a", "v2", 2, 3));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    let (revision, deleted) = store.delete("/a", 3).await.unwrap();
    assert_eq!(revision, 4);
    assert_eq!(deleted, kv("/a", "v2", 2, 3));
    assert_eq!(store.get("/a", None).await.unwrap(), None);
}

pub async fn missing_keys_are_not_found(store: DynStore) {
    assert_err!(
        store.update("/never", bytes("x"), 1).await,
        Error::NotFound { key } if key == "/never"
    );
    assert_err!(
        store.delete("/never", 1).await,
        Error::NotFound { key } if key == "/never"
    );
    assert_eq!(store.create("/gone", bytes("x")).await.unwrap(), 2);
    assert_eq!(store.delete("/gone", 2).await.unwrap().0, 3);
    // A deleted key is missing even when the caller names the revision it last had.
    assert_err!(
        store.update("/gone", bytes("y"), 2).await,
        Error::NotFound { .. }
    );
    assert_err!(store.delete("/gone", 2).await, Error::NotFound { .. });
    assert_err!(store.delete("/gone", 3).await, Error::NotFound { .. });
    assert_eq!(store.current_revision().await.unwrap(), 3);
}

pub async fn recreate_after_delete_gets_a_new_create_revision(store: DynStore) {
    assert_eq!(store.create("/a", bytes("first life")).await.unwrap(), 2);
    assert_eq!(store.create("/b", bytes("b")).await.unwrap(), 3);
    assert_eq!(store.delete("/a", 2).await.unwrap().0, 4);
    assert_eq!(store.create("/a", bytes("second life")).await.unwrap(), 5);
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "second life", 5, 5))
    );
    assert_eq!(store.update("/a", bytes("updated"), 5).await.unwrap(), 6);
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "updated", 5, 6))
    );
    // The old life is still there in the past.
    assert_eq!(
        store.get("/a", Some(3)).await.unwrap(),
        Some(kv("/a", "first life", 2, 2))
    );
    // A precondition from the first life does not match the second.
    assert_err!(store.delete("/a", 2).await, Error::Conflict { .. });
}

pub async fn values_round_trip(store: DynStore) {
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let large = Bytes::from(vec![0xa5u8; 1024 * 1024]);
    let values = [
        ("/empty", Bytes::new()),
        ("/zeros", Bytes::from_static(b"\0\0a\0")),
        ("/binary", Bytes::from(binary)),
        ("/large", large),
    ];
    for (key, value) in &values {
        let revision = store.create(key, value.clone()).await.unwrap();
        let read = store.get(key, None).await.unwrap().unwrap();
        assert_eq!(read.value, *value, "{key}");
        assert_eq!(read.mod_revision, revision);
    }
    let revision = store.current_revision().await.unwrap();
    store
        .update("/empty", Bytes::from_static(b"now full"), 2)
        .await
        .unwrap();
    store.update("/zeros", Bytes::new(), 3).await.unwrap();
    assert_eq!(
        store.get("/empty", None).await.unwrap().unwrap().value,
        "now full"
    );
    assert_eq!(store.get("/zeros", None).await.unwrap().unwrap().value, "");
    assert_eq!(
        store
            .get("/empty", Some(revision))
            .await
            .unwrap()
            .unwrap()
            .value,
        ""
    );
}

pub async fn oversized_values_are_refused(store: DynStore) {
    // Every backend accepts a few hundred KiB (Kubernetes objects are at most about 1.5 MiB in
    // etcd) and refuses anything above 3 MiB; the exact limit is the backend's.
    let fine = Bytes::from(vec![7u8; 512 * 1024]);
    let too_large = Bytes::from(vec![7u8; 3 * 1024 * 1024 + 1]);
    assert_eq!(store.create("/a", fine.clone()).await.unwrap(), 2);
    match store.create("/b", too_large.clone()).await {
        Err(Error::ValueTooLarge { size, limit }) => {
            assert_eq!(size, too_large.len());
            assert!(limit < size);
        }
        other => panic!("expected ValueTooLarge, got {other:?}"),
    }
    assert_err!(
        store.update("/a", too_large, 2).await,
        Error::ValueTooLarge { .. }
    );
    assert_eq!(store.get("/a", None).await.unwrap().unwrap().value, fine);
    assert_eq!(store.get("/b", None).await.unwrap(), None);
    assert_eq!(store.current_revision().await.unwrap(), 2);
}
