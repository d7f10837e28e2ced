//! The etcd backend against a real etcd: what the conformance suite does not reach (prefixes,
//! etcd's own refusals, compaction by another client, watch cancellation) plus a quick pass over
//! the basics. Each test starts its own etcd, or is skipped when there is no etcd binary.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::pb::kv_client::KvClient;
use super::{EtcdStore, pb, range_end};
use crate::testing::EtcdProcess;
use crate::{Error, Event, EventKind, KeyValue, RangeRequest, Store, WatchStream};

/// How long a test waits for something that should happen promptly; a passing run never waits
/// for it.
const DEADLINE: Duration = Duration::from_secs(60);

async fn start(prefix: &str) -> Option<(EtcdProcess, EtcdStore)> {
    let process = EtcdProcess::start_or_skip().await?;
    let store = EtcdStore::connect(&process.endpoints(), prefix)
        .await
        .expect("connecting to the test etcd");
    Some((process, store))
}

/// etcd's KV service itself, without the store around it.
async fn raw_client(process: &EtcdProcess) -> KvClient<tonic::transport::Channel> {
    KvClient::connect(process.endpoint().to_string())
        .await
        .expect("connecting a raw etcd client")
}

async fn raw_compact(process: &EtcdProcess, revision: i64) {
    raw_client(process)
        .await
        .compact(pb::CompactionRequest {
            revision,
            physical: false,
        })
        .await
        .expect("compacting through a raw client");
}

fn bytes(value: &str) -> Bytes {
    Bytes::copy_from_slice(value.as_bytes())
}

fn kv(key: &str, value: &str, create_revision: i64, mod_revision: i64) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: bytes(value),
        create_revision,
        mod_revision,
    }
}

async fn next_item(stream: &mut WatchStream) -> Option<crate::Result<Event>> {
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("nothing from the watch before the deadline")
}

async fn next_event(stream: &mut WatchStream) -> Event {
    next_item(stream)
        .await
        .expect("the watch ended")
        .expect("the watch failed")
}

fn keys(kvs: &[KeyValue]) -> Vec<&str> {
    kvs.iter().map(|kv| kv.key.as_str()).collect()
}

#[test]
fn range_end_bumps_the_last_byte_below_0xff() {
    assert_eq!(range_end(b"/a/"), b"/a0".to_vec());
    assert_eq!(range_end(b"a\xff\xff"), b"b".to_vec());
    // No end: etcd's "to the end of the key space".
    assert_eq!(range_end(b""), vec![0]);
    assert_eq!(range_end(b"\xff"), vec![0]);
}

#[tokio::test]
async fn writes_follow_etcd_revisions() {
    let Some((_etcd, store)) = start("/corral/").await else {
        return;
    };
    assert_eq!(store.current_revision().await.unwrap(), 1);
    assert_eq!(store.create("/a", bytes("1")).await.unwrap(), 2);
    assert_eq!(store.update("/a", bytes("2"), 2).await.unwrap(), 3);
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "2", 2, 3))
    );
    assert_eq!(
        store.get("/a", Some(2)).await.unwrap(),
        Some(kv("/a", "1", 2, 2))
    );
    assert_eq!(
        store.delete("/a", 3).await.unwrap(),
        (4, kv("/a", "2", 2, 3))
    );
    assert_eq!(store.get("/a", None).await.unwrap(), None);
    assert_eq!(store.create("/a", bytes("3")).await.unwrap(), 5);
    assert_eq!(
        store.get("/a", None).await.unwrap(),
        Some(kv("/a", "3", 5, 5))
    );
}

#[tokio::test]
async fn refused_writes_say_why_and_use_no_revision() {
    let Some((_etcd, store)) = start("/corral/").await else {
        return;
    };
    store.create("/a", bytes("1")).await.unwrap();
    assert!(matches!(
        store.create("/a", bytes("x")).await,
        Err(Error::AlreadyExists { key }) if key == "/a"
    ));
    match store.update("/a", bytes("x"), 7).await {
        Err(Error::Conflict {
            key,
            expected,
            current,
        }) => {
            assert_eq!((key.as_str(), expected), ("/a", 7));
            assert_eq!(*current, kv("/a", "1", 2, 2));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(matches!(
        store.delete("/a", 1).await,
        Err(Error::Conflict { current, .. }) if current.mod_revision == 2
    ));
    // Expecting revision 0 of an absent key must not create it.
    assert!(matches!(
        store.update("/missing", bytes("x"), 0).await,
        Err(Error::NotFound { key }) if key == "/missing"
    ));
    assert!(matches!(
        store.delete("/missing", 0).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(store.current_revision().await.unwrap(), 2);
    assert_eq!(store.get("/missing", None).await.unwrap(), None);
}

#[tokio::test]
async fn stores_on_one_etcd_keep_to_their_prefixes() {
    let Some((etcd, one)) = start("/one/").await else {
        return;
    };
    let two = EtcdStore::connect(&etcd.endpoints(), "/two/")
        .await
        .unwrap();
    let mut watch_two = two.watch("", 1).await.unwrap();
    one.create("x", bytes("from one")).await.unwrap();
    two.create("x", bytes("from two")).await.unwrap();

    let raw = raw_client(&etcd)
        .await
        .range(pb::RangeRequest {
            key: bytes("/one/x"),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .kvs[0]
        .value
        .to_vec();
    assert_eq!(raw, b"from one");
    let listed = one.range(RangeRequest::default()).await.unwrap();
    assert_eq!(listed.kvs, vec![kv("x", "from one", 2, 2)]);
    assert_eq!(listed.revision, 3, "the revision is etcd's, shared by both");
    // The watch of `two` sees only its own write, with the prefix stripped.
    assert_eq!(
        next_event(&mut watch_two).await.kv,
        kv("x", "from two", 3, 3)
    );
}

#[tokio::test]
async fn an_empty_prefix_is_the_whole_key_space() {
    let Some((_etcd, store)) = start("").await else {
        return;
    };
    store.create("b", bytes("b")).await.unwrap();
    store.create("a", bytes("a")).await.unwrap();
    let listed = store.range(RangeRequest::default()).await.unwrap();
    assert_eq!(keys(&listed.kvs), ["a", "b"]);
    assert_eq!(
        store.get("a", None).await.unwrap(),
        Some(kv("a", "a", 3, 3))
    );
}

#[tokio::test]
async fn range_pages_at_one_revision() {
    let Some((_etcd, store)) = start("/corral/").await else {
        return;
    };
    for key in ["/r/a", "/r/b", "/r/c", "/r/d", "/r/e", "/s/a"] {
        store.create(key, bytes(key)).await.unwrap();
    }
    let first = store
        .range(RangeRequest {
            prefix: "/r/".into(),
            limit: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (keys(&first.kvs), first.more, first.revision),
        (vec!["/r/a", "/r/b"], true, 7)
    );
    // Writes between pages do not show in the next pages, read at the first page's revision.
    store.create("/r/bb", bytes("late")).await.unwrap();
    store.delete("/r/d", 5).await.unwrap();
    let second = store
        .range(RangeRequest {
            prefix: "/r/".into(),
            start: Some("/r/b\0".into()),
            limit: 2,
            revision: Some(first.revision),
        })
        .await
        .unwrap();
    assert_eq!(
        (keys(&second.kvs), second.more, second.revision),
        (vec!["/r/c", "/r/d"], true, 7)
    );
    let last = store
        .range(RangeRequest {
            prefix: "/r/".into(),
            start: Some("/r/d\0".into()),
            limit: 2,
            revision: Some(first.revision),
        })
        .await
        .unwrap();
    assert_eq!((keys(&last.kvs), last.more), (vec!["/r/e"], false));
    assert!(matches!(
        store
            .range(RangeRequest {
                prefix: "/r/".into(),
                start: Some("/s/".into()),
                ..Default::default()
            })
            .await,
        Err(Error::InvalidRequest(_))
    ));
}

#[tokio::test]
async fn reads_outside_the_history_are_refused() {
    let Some((_etcd, store)) = start("/corral/").await else {
        return;
    };
    store.create("/a", bytes("1")).await.unwrap();
    assert!(matches!(
        store.get("/a", Some(9)).await,
        Err(Error::FutureRevision {
            requested: 9,
            current: 2
        })
    ));
    assert!(matches!(
        store.get("/a", Some(0)).await,
        Err(Error::InvalidRequest(_))
    ));
    for value in ["2", "3", "4"] {
        let current = store.get("/a", None).await.unwrap().unwrap();
        store
            .update("/a", bytes(value), current.mod_revision)
            .await
            .unwrap();
    }
    assert_eq!(store.compacted_revision().await.unwrap(), 0);
    store.compact(4).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), 4);
    assert!(matches!(
        store.get("/a", Some(3)).await,
        Err(Error::Compacted {
            requested: 3,
            compacted: 4
        })
    ));
    assert!(matches!(
        store
            .range(RangeRequest {
                revision: Some(2),
                ..Default::default()
            })
            .await,
        Err(Error::Compacted {
            requested: 2,
            compacted: 4
        })
    ));
    assert_eq!(
        store.get("/a", Some(4)).await.unwrap(),
        Some(kv("/a", "3", 2, 4))
    );
    // Compacting at or below an earlier compaction is a no-op (etcd refuses it).
    store.compact(4).await.unwrap();
    store.compact(2).await.unwrap();
    assert_eq!(store.compacted_revision().await.unwrap(), 4);
    assert!(matches!(
        store.compact(99).await,
        Err(Error::FutureRevision {
            requested: 99,
            current: 5
        })
    ));
    assert_eq!(
        store.current_revision().await.unwrap(),
        5,
        "compaction is not a write"
    );
}

#[tokio::test]
async fn compaction_by_another_client_is_found() {
    let Some((etcd, store)) = start("/corral/").await else {
        return;
    };
    for n in 0..20 {
        store.create(&format!("/k{n}"), bytes("v")).await.unwrap();
    }
    raw_compact(&etcd, 13).await;
    assert_eq!(store.compacted_revision().await.unwrap(), 13);
    assert!(matches!(
        store.get("/k0", Some(12)).await,
        Err(Error::Compacted {
            requested: 12,
            compacted: 13
        })
    ));
    raw_compact(&etcd, 17).await;
    assert!(matches!(
        store.watch("", 15).await.unwrap().next().await,
        Some(Err(Error::Compacted {
            requested: 15,
            compacted: 17
        }))
    ));
    assert_eq!(store.compacted_revision().await.unwrap(), 17);
}

#[tokio::test]
async fn watch_replays_then_follows_live_changes() {
    let Some((_etcd, store)) = start("/corral/").await else {
        return;
    };
    store.create("/w/a", bytes("a1")).await.unwrap();
    store.create("/other", bytes("x")).await.unwrap();
    store.update("/w/a", bytes("a2"), 2).await.unwrap();
    let mut watch = store.watch("/w/", 1).await.unwrap();
    assert_eq!(
        next_event(&mut watch).await,
        Event {
            kind: EventKind::Put,
            kv: kv("/w/a", "a1", 2, 2),
            prev: None
        }
    );
    assert_eq!(
        next_event(&mut watch).await,
        Event {
            kind: EventKind::Put,
            kv: kv("/w/a", "a2", 2, 4),
            prev: Some(kv("/w/a", "a1", 2, 2))
        }
    );
    store.delete("/w/a", 4).await.unwrap();
    store.create("/w/b", bytes("b")).await.unwrap();
    assert_eq!(
        next_event(&mut watch).await,
        Event {
            kind: EventKind::Delete,
            kv: kv("/w/a", "a2", 2, 5),
            prev: Some(kv("/w/a", "a2", 2, 4))
        }
    );
    assert_eq!(next_event(&mut watch).await.kv, kv("/w/b", "b", 6, 6));

    // Starting after a revision leaves that revision out.
    let mut later = store.watch("/w/", 4).await.unwrap();
    assert_eq!(next_event(&mut later).await.revision(), 5);
}

#[tokio::test]
async fn watch_below_the_compaction_fails_and_at_it_replays() {
    let Some((_etcd, store)) = start("/corral/").await else {
        return;
    };
    for n in 0..5 {
        store.create(&format!("/k{n}"), bytes("v")).await.unwrap();
    }
    // Revisions 2..=6 are written; keep 4 and later.
    store.compact(4).await.unwrap();
    let mut refused = store.watch("/", 3).await.unwrap();
    assert!(matches!(
        next_item(&mut refused).await,
        Some(Err(Error::Compacted {
            requested: 3,
            compacted: 4
        }))
    ));
    assert!(
        next_item(&mut refused).await.is_none(),
        "a failed watch ends"
    );

    let mut replay = store.watch("/", 4).await.unwrap();
    assert_eq!(next_event(&mut replay).await.revision(), 5);
    assert_eq!(next_event(&mut replay).await.revision(), 6);
}

/// Reads etcd's gauge of open watchers from its metrics, served on the client URL.
async fn watchers(etcd: &EtcdProcess) -> u64 {
    let address = etcd.endpoint().trim_start_matches("http://");
    let mut connection = tokio::net::TcpStream::connect(address).await.unwrap();
    connection
        .write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    connection.read_to_string(&mut text).await.unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("etcd_debugging_mvcc_watcher_total "))
        .expect("etcd reports its watchers")
        .trim()
        .parse::<f64>()
        .unwrap() as u64
}

#[tokio::test]
async fn a_dropped_watch_ends_in_etcd() {
    let Some((etcd, store)) = start("/corral/").await else {
        return;
    };
    let watch = store.watch("/", 1).await.unwrap();
    assert_eq!(watchers(&etcd).await, 1);
    drop(watch);
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while watchers(&etcd).await != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "etcd still has the watcher"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_watch_fails_once_when_etcd_goes_away() {
    let Some((etcd, store)) = start("/corral/").await else {
        return;
    };
    let mut watch = store.watch("/", 1).await.unwrap();
    store.create("/a", bytes("a")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.revision(), 2);
    drop(etcd);
    assert!(matches!(
        next_item(&mut watch).await,
        Some(Err(Error::Backend { .. }))
    ));
    assert!(next_item(&mut watch).await.is_none());
}

#[tokio::test]
async fn values_up_to_the_limit_fit_in_one_etcd_request() {
    let Some((_etcd, store)) = start("/corral/").await else {
        return;
    };
    let key = "/a/rather/long/key/to/show/that/the/limit/leaves/room/for/it";
    let limit = store.max_value_bytes(key);
    assert!(limit > 1_500_000, "the limit is close to etcd's 1.5 MiB");
    // The largest allowed value really is accepted by etcd: the room kept is enough.
    assert_eq!(
        store
            .create(key, Bytes::from(vec![1u8; limit]))
            .await
            .unwrap(),
        2
    );
    let too_large = Bytes::from(vec![1u8; limit + 1]);
    assert!(matches!(
        store.update(key, too_large.clone(), 2).await,
        Err(Error::ValueTooLarge { size, limit: refused_at }) if size == limit + 1 && refused_at == limit
    ));
    // A store told of a larger etcd limit than the real one still refuses, through etcd.
    let optimistic = store.clone().with_max_request_bytes(4 * 1024 * 1024);
    let refused = optimistic
        .create("/b", Bytes::from(vec![1u8; 2 * 1024 * 1024]))
        .await;
    assert!(
        matches!(refused, Err(Error::ValueTooLarge { .. })),
        "{refused:?}"
    );
    assert_eq!(store.current_revision().await.unwrap(), 2);
}

#[tokio::test]
async fn a_dropped_etcd_is_stopped_and_its_data_removed() {
    let Some(etcd) = EtcdProcess::start_or_skip().await else {
        return;
    };
    let dir = etcd.dir().to_path_buf();
    let address = etcd.endpoint().trim_start_matches("http://").to_string();
    assert!(dir.join("data").is_dir());
    drop(etcd);
    assert!(!dir.exists());
    // The supervisor waited for etcd to exit, so its port is closed by now.
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
}

/// Not a check: measures writes per second of 1 KiB values at 1 and 64 concurrent writers,
/// through the backend's create and through etcd-client directly (the same conditional
/// transaction, and a plain put), on a fresh etcd whose data is on tmpfs. Run it in release
/// mode: `cargo test --release -p corral-store --lib -- --ignored --nocapture
/// put_throughput`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check"]
async fn put_throughput() {
    #[derive(Clone, Copy, Debug)]
    enum Way {
        StoreCreate,
        RawCreateTxn,
        RawPut,
    }
    let Some((etcd, store)) = start("/bench/").await else {
        return;
    };
    let raw = raw_client(&etcd).await;
    let value = Bytes::from(vec![b'x'; 1024]);
    const WRITES: usize = 6400;
    for writers in [1, 64] {
        for way in [Way::StoreCreate, Way::RawCreateTxn, Way::RawPut] {
            let started = std::time::Instant::now();
            let tasks: Vec<_> = (0..writers)
                .map(|writer| {
                    let store = store.clone();
                    let mut raw = raw.clone();
                    let value = value.clone();
                    tokio::spawn(async move {
                        for n in 0..WRITES / writers {
                            let key = format!("/{way:?}/{writers}/{writer}/{n}");
                            match way {
                                Way::StoreCreate => {
                                    store.create(&key, value.clone()).await.unwrap();
                                }
                                Way::RawCreateTxn => {
                                    let key = format!("/raw{key}");
                                    let key = bytes(&key);
                                    let txn = pb::TxnRequest {
                                        compare: vec![super::compare_mod(&key, 0)],
                                        success: vec![super::put(&key, value.clone())],
                                        failure: vec![],
                                    };
                                    assert!(raw.txn(txn).await.unwrap().into_inner().succeeded);
                                }
                                Way::RawPut => {
                                    let put = pb::PutRequest {
                                        key: bytes(&format!("/raw{key}")),
                                        value: value.clone(),
                                        ..Default::default()
                                    };
                                    raw.put(put).await.unwrap();
                                }
                            }
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
            let rate = WRITES as f64 / started.elapsed().as_secs_f64();
            eprintln!("{way:?} with {writers} writers: {rate:.0} writes/s");
        }
    }
}

/// PEM files of a test CA and what it signed: an etcd serving certificate for 127.0.0.1 and a
/// client certificate.
struct TlsFiles {
    dir: tempfile::TempDir,
}

impl TlsFiles {
    fn generate() -> TlsFiles {
        let dir = tempfile::tempdir().unwrap();
        let ca = |name: &str| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, name);
            let certificate = params.self_signed(&key).unwrap();
            (certificate.pem(), rcgen::Issuer::new(params, key))
        };
        let (ca_pem, issuer) = ca("corral etcd test CA");
        let (other_ca_pem, _) = ca("some other CA");
        let write = |name: &str, contents: &str| {
            std::fs::write(dir.path().join(name), contents).unwrap();
        };
        write("ca.pem", &ca_pem);
        write("other-ca.pem", &other_ca_pem);
        for (name, sans) in [
            ("server", vec!["127.0.0.1".to_string()]),
            ("client", vec![]),
        ] {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(sans).unwrap();
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, name);
            params.extended_key_usages = vec![
                rcgen::ExtendedKeyUsagePurpose::ServerAuth,
                rcgen::ExtendedKeyUsagePurpose::ClientAuth,
            ];
            let certificate = params.signed_by(&key, &issuer).unwrap();
            write(&format!("{name}.pem"), &certificate.pem());
            write(&format!("{name}-key.pem"), &key.serialize_pem());
        }
        TlsFiles { dir }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn tls(&self, ca: &str, client: bool) -> super::EtcdTls {
        super::EtcdTls::from_files(
            Some(&self.path(ca)),
            client.then(|| self.path("client.pem")).as_deref(),
            client.then(|| self.path("client-key.pem")).as_deref(),
        )
        .unwrap()
    }
}

/// kube-apiserver's `--etcd-cafile`, `--etcd-certfile` and `--etcd-keyfile`: a member that
/// serves TLS and asks for client certificates is used with them, and refused without the
/// client certificate or with another CA.
#[tokio::test]
async fn tls_members_with_client_certificates() {
    let Some(binary) = EtcdProcess::find_binary() else {
        // Says why, or panics when etcd is required.
        EtcdProcess::start_or_skip().await;
        return;
    };
    let files = TlsFiles::generate();
    let data = tempfile::tempdir().unwrap();
    let [client_port, peer_port] = crate::testing::etcd_process::free_ports().unwrap();
    let spec = crate::testing::etcd_process::MemberSpec {
        name: "tls".into(),
        dir: data.path().to_path_buf(),
        client_port,
        peer_port,
        initial_cluster: format!("tls=http://127.0.0.1:{peer_port}"),
        token: format!("tls-{peer_port}"),
        tls: Some(crate::testing::etcd_process::MemberTls {
            cert: files.path("server.pem"),
            key: files.path("server-key.pem"),
            client_ca: files.path("ca.pem"),
        }),
    };
    // Closing stdin (at the end of the test) makes the supervisor kill etcd.
    let (_supervisor, _stdin) = spec.spawn(&binary).unwrap();
    let endpoints = vec![spec.endpoint()];
    assert!(endpoints[0].starts_with("https://"));
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let store = loop {
        match EtcdStore::connect_with(&endpoints, "/tls/", &files.tls("ca.pem", true)).await {
            Ok(store) => break store,
            Err(e) if tokio::time::Instant::now() < deadline => {
                eprintln!("waiting for the TLS etcd: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("the TLS etcd never answered: {e}"),
        }
    };
    assert_eq!(store.create("/a", bytes("over TLS")).await.unwrap(), 2);
    assert_eq!(
        store.get("/a", None).await.unwrap().unwrap().value,
        bytes("over TLS")
    );
    // Endpoints without a scheme are https:// once TLS files are given.
    let bare = vec![format!("127.0.0.1:{client_port}")];
    let same = EtcdStore::connect_with(&bare, "/tls/", &files.tls("ca.pem", true))
        .await
        .unwrap();
    assert_eq!(same.current_revision().await.unwrap(), 2);

    let without_certificate =
        EtcdStore::connect_with(&endpoints, "/tls/", &files.tls("ca.pem", false)).await;
    assert!(
        matches!(without_certificate, Err(Error::Backend { .. })),
        "no client certificate: {:?}",
        without_certificate.err()
    );
    let other_ca =
        EtcdStore::connect_with(&endpoints, "/tls/", &files.tls("other-ca.pem", true)).await;
    assert!(
        matches!(other_ca, Err(Error::Backend { .. })),
        "a CA that did not sign the member's certificate: {:?}",
        other_ca.err()
    );
    // TLS files with an http:// endpoint are a mistake, said before anything is tried.
    let plain = vec![format!("http://127.0.0.1:{client_port}")];
    assert!(matches!(
        EtcdStore::connect_with(&plain, "/tls/", &files.tls("ca.pem", true)).await,
        Err(Error::InvalidRequest(_))
    ));
}
