//! Reads: `get` and `range`, now and at past revisions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use corral_store::{DynStore, Error, KeyValue, RangeRequest, Revision};

use super::{bytes, kv};
use crate::assert_err;

fn range_at(prefix: &str, revision: Option<Revision>) -> RangeRequest {
    RangeRequest {
        prefix: prefix.into(),
        revision,
        ..Default::default()
    }
}

fn keys(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key.as_str()).collect()
}

pub async fn get_at_past_revisions(store: DynStore) {
    assert_eq!(store.create("/a", bytes("v1")).await.unwrap(), 2);
    assert_eq!(store.update("/a", bytes("v2"), 2).await.unwrap(), 3);
    assert_eq!(store.create("/other", bytes("o")).await.unwrap(), 4);
    assert_eq!(store.delete("/a", 3).await.unwrap().0, 5);
    assert_eq!(store.create("/a", bytes("v3")).await.unwrap(), 6);

    let expected = [
        (1, None),
        (2, Some(kv("/a", "v1", 2, 2))),
        (3, Some(kv("/a", "v2", 2, 3))),
        // A write to another key leaves this one as it was.
        (4, Some(kv("/a", "v2", 2, 3))),
        (5, None),
        (6, Some(kv("/a", "v3", 6, 6))),
    ];
    for (revision, value) in expected {
        assert_eq!(
            store.get("/a", Some(revision)).await.unwrap(),
            value,
            "get at revision {revision}"
        );
    }
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "v3", 6, 6))
    );
}

pub async fn range_at_past_revisions(store: DynStore) {
    assert_eq!(store.create("/r/a", bytes("a1")).await.unwrap(), 2);
    assert_eq!(store.create("/r/b", bytes("b1")).await.unwrap(), 3);
    assert_eq!(store.update("/r/a", bytes("a2"), 2).await.unwrap(), 4);
    assert_eq!(store.delete("/r/b", 3).await.unwrap().0, 5);
    assert_eq!(store.create("/r/c", bytes("c1")).await.unwrap(), 6);
    assert_eq!(store.create("/r/b", bytes("b2")).await.unwrap(), 7);

    let expected: Vec<(Revision, Vec<KeyValue>)> = vec![
        (1, vec![]),
        (2, vec![kv("/r/a", "a1", 2, 2)]),
        (3, vec![kv("/r/a", "a1", 2, 2), kv("/r/b", "b1", 3, 3)]),
        (4, vec![kv("/r/a", "a2", 2, 4), kv("/r/b", "b1", 3, 3)]),
        (5, vec![kv("/r/a", "a2", 2, 4)]),
        (6, vec![kv("/r/a", "a2", 2, 4), kv("/r/c", "c1", 6, 6)]),
        (
            7,
            vec![
                kv("/r/a", "a2", 2, 4),
                kv("/r/b", "b2", 7, 7),
                kv("/r/c", "c1", 6, 6),
            ],
        ),
    ];
    for (revision, kvs) in expected {
        let response = store.range(range_at("/r/", Some(revision))).await.unwrap();
        assert_eq!(response.kvs, kvs, "range at revision {revision}");
        assert_eq!(response.revision, revision);
        assert!(!response.more);
    }
    let now = store.range(range_at("/r/", None)).await.unwrap();
    assert_eq!(now.revision, 7);
    assert_eq!(keys(&now.kvs), ["/r/a", "/r/b", "/r/c"]);
}

pub async fn future_revisions_are_refused(store: DynStore) {
    store.create("/a", bytes("a")).await.unwrap();
    assert_err!(
        store.get("/a", Some(3)).await,
        Error::FutureRevision {
            requested: 3,
            current: 2
        }
    );
    assert_err!(
        store.range(range_at("/", Some(3))).await,
        Error::FutureRevision {
            requested: 3,
            current: 2
        }
    );
    assert_eq!(
        store.get("/a", Some(2)).await.unwrap(),
        Some(kv("/a", "a", 2, 2))
    );
    assert_eq!(
        store.range(range_at("/", Some(2))).await.unwrap().revision,
        2
    );
}

pub async fn range_is_in_byte_order_within_the_prefix(store: DynStore) {
    let all = [
        "/k/b",
        "/k/a",
        "/k/B",
        "/k/é",
        "/k/z",
        "/k/a/b",
        "/k",
        "/k0",
        "/j/a",
        "/k/\u{7f}",
        "/k/0",
        "/k/",
        "/k/日本",
        "/l/x",
    ];
    for key in all {
        store.create(key, bytes(key)).await.unwrap();
    }
    let mut expected: Vec<&str> = all
        .iter()
        .copied()
        .filter(|k| k.starts_with("/k/"))
        .collect();
    // Rust orders strings by their UTF-8 bytes, which is the order the contract promises.
    expected.sort();
    let response = store.range(range_at("/k/", None)).await.unwrap();
    assert_eq!(keys(&response.kvs), expected);
    for kv in &response.kvs {
        assert_eq!(kv.value, bytes(&kv.key));
    }
}

pub async fn range_prefixes_ending_in_high_bytes(store: DynStore) {
    // The end of a prefix range is found by bumping its last byte; these prefixes end in bytes
    // whose bumped value is not valid UTF-8 on its own.
    let all = [
        "/p\u{7f}",
        "/p\u{7f}1",
        "/p\u{80}",
        "/p\u{7f}\u{7f}",
        "/q¿",
        "/q¿x",
        "/qÀ",
        "/q¿\u{10ffff}",
        "/r\u{10ffff}",
        "/r\u{10ffff}a",
        "/s",
    ];
    for key in all {
        store.create(key, bytes(key)).await.unwrap();
    }
    for prefix in ["/p\u{7f}", "/q¿", "/r\u{10ffff}"] {
        let mut expected: Vec<&str> = all
            .iter()
            .copied()
            .filter(|k| k.starts_with(prefix))
            .collect();
        expected.sort();
        let response = store.range(range_at(prefix, None)).await.unwrap();
        assert_eq!(keys(&response.kvs), expected, "range of prefix {prefix:?}");
    }
}

pub async fn range_with_an_empty_prefix_returns_everything(store: DynStore) {
    for key in ["/b", "/a/x", "z", "/a"] {
        store.create(key, bytes(key)).await.unwrap();
    }
    let response = store.range(range_at("", None)).await.unwrap();
    assert_eq!(keys(&response.kvs), ["/a", "/a/x", "/b", "z"]);
}

pub async fn range_limit_and_more(store: DynStore) {
    for i in 0..10 {
        store.create(&format!("/l/{i}"), bytes("x")).await.unwrap();
    }
    store.create("/m/0", bytes("outside")).await.unwrap();
    let cases = [
        (3, 3, true),
        (9, 9, true),
        (10, 10, false),
        (11, 10, false),
        (0, 10, false),
    ];
    for (limit, count, more) in cases {
        let response = store
            .range(RangeRequest {
                prefix: "/l/".into(),
                limit,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(response.kvs.len(), count, "limit {limit}");
        assert_eq!(response.more, more, "limit {limit}");
        assert_eq!(response.kvs[0].key, "/l/0");
        assert_eq!(response.revision, 12);
    }
}

pub async fn range_limit_counts_only_live_keys(store: DynStore) {
    for i in 0..5 {
        store.create(&format!("/d/{i}"), bytes("x")).await.unwrap();
    }
    store.delete("/d/1", 3).await.unwrap();
    store.delete("/d/2", 4).await.unwrap();
    store.delete("/d/4", 6).await.unwrap();
    let page = |limit| RangeRequest {
        prefix: "/d/".into(),
        limit,
        ..Default::default()
    };
    let response = store.range(page(2)).await.unwrap();
    assert_eq!(keys(&response.kvs), ["/d/0", "/d/3"]);
    // Only deleted keys remain after the page, so there is nothing more to read.
    assert!(!response.more);
    let response = store.range(page(1)).await.unwrap();
    assert_eq!(keys(&response.kvs), ["/d/0"]);
    assert!(response.more);
}

pub async fn range_start_must_be_inside_the_prefix(store: DynStore) {
    for key in ["/s/a", "/s/b", "/s/c"] {
        store.create(key, bytes(key)).await.unwrap();
    }
    let from = |start: &str| RangeRequest {
        prefix: "/s/".into(),
        start: Some(start.into()),
        ..Default::default()
    };
    // `start` is inclusive, and need not be an existing key.
    let response = store.range(from("/s/b")).await.unwrap();
    assert_eq!(keys(&response.kvs), ["/s/b", "/s/c"]);
    let response = store.range(from("/s/b\0")).await.unwrap();
    assert_eq!(keys(&response.kvs), ["/s/c"]);
    assert_err!(store.range(from("/r/z")).await, Error::InvalidRequest(_));
    assert_err!(store.range(from("/t")).await, Error::InvalidRequest(_));
}

pub async fn range_pages_at_a_fixed_revision_while_writes_continue(store: DynStore) {
    let mut snapshot = Vec::new();
    for i in 0..25 {
        let key = format!("/page/{i:02}");
        let revision = store.create(&key, bytes("original")).await.unwrap();
        snapshot.push(kv(&key, "original", revision, revision));
    }

    // Something else keeps writing under the prefix the whole time.
    let stop = Arc::new(AtomicBool::new(false));
    let background = tokio::spawn({
        let store = store.clone();
        let stop = stop.clone();
        async move {
            let mut written = 0;
            while !stop.load(Ordering::Relaxed) && written < 10_000 {
                let key = format!("/page/{:02}-background-{written}", written % 25);
                store.create(&key, bytes("new")).await.unwrap();
                written += 1;
            }
            written
        }
    });

    let mut request = RangeRequest {
        prefix: "/page/".into(),
        limit: 7,
        ..Default::default()
    };
    let mut pages = 0;
    let mut read = Vec::new();
    let mut pinned = None;
    loop {
        let response = store.range(request.clone()).await.unwrap();
        let revision = *pinned.get_or_insert(response.revision);
        assert_eq!(response.revision, revision);
        pages += 1;
        let last = response.kvs.last().map(|kv| kv.key.clone());
        read.extend(response.kvs);

        // Change the store between pages in every way that could leak into later pages.
        let next = pages * 7;
        if next < 25 {
            let key = &snapshot[next].key;
            let current = store.get(key, None).await.unwrap().unwrap();
            let updated = store
                .update(key, bytes("updated"), current.mod_revision)
                .await
                .unwrap();
            if next + 1 < 25 {
                let key = &snapshot[next + 1].key;
                store
                    .delete(key, snapshot[next + 1].mod_revision)
                    .await
                    .unwrap();
            }
            store.delete(key, updated).await.unwrap();
            store
                .create(&format!("{}-inserted", snapshot[next].key), bytes("new"))
                .await
                .unwrap();
        }

        if !response.more {
            break;
        }
        let mut start = last.expect("a page with more keys after it is not empty");
        // The smallest key after the last one read.
        start.push('\0');
        request.start = Some(start);
        request.revision = Some(revision);
    }
    stop.store(true, Ordering::Relaxed);
    background.await.unwrap();

    assert!(pages >= 4, "{pages} pages");
    let pinned = pinned.unwrap();
    // The first page was read before any of the changes made here, after some of the
    // background ones; every page must show the store exactly as it was then.
    let expected = store
        .range(RangeRequest {
            prefix: "/page/".into(),
            revision: Some(pinned),
            ..Default::default()
        })
        .await
        .unwrap()
        .kvs;
    assert_eq!(read, expected);
    let originals: Vec<&KeyValue> = read.iter().filter(|kv| kv.value == "original").collect();
    assert_eq!(originals, snapshot.iter().collect::<Vec<_>>());
    assert!(read.iter().all(|kv| kv.mod_revision <= pinned));
}
