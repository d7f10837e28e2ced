//! The etcd client code checked in as `src/etcd/etcdserverpb.rs` is what `proto/etcd.proto`
//! generates. Building Corral needs no protobuf compiler because the generated code is checked
//! in; this test regenerates it with protox (a protobuf compiler written in Rust, a
//! dev-dependency only) and tonic's generator, and fails when the copy has drifted.
//! `CORRAL_UPDATE_GENERATED=1 cargo nextest run -p corral-store -E 'test(generated_code)'`
//! rewrites the checked-in copy.

use std::path::Path;

#[test]
fn generated_code_matches_the_proto() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let descriptors = protox::compile(["etcd.proto"], [crate_dir.join("proto")])
        .unwrap_or_else(|e| panic!("compiling proto/etcd.proto: {e}"));
    let out = tempfile::tempdir().expect("a temporary directory");
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        // Keys and values as `bytes::Bytes`: a value read from etcd is handed to the caller
        // without a copy.
        .bytes(".")
        .out_dir(out.path())
        .compile_fds(descriptors)
        .expect("generating the etcd client");
    let generated = std::fs::read_to_string(out.path().join("etcdserverpb.rs"))
        .expect("the generated etcdserverpb.rs");
    let checked_in_path = crate_dir.join("src/etcd/etcdserverpb.rs");
    if std::env::var_os("CORRAL_UPDATE_GENERATED").is_some() {
        std::fs::write(&checked_in_path, &generated).expect("writing src/etcd/etcdserverpb.rs");
        return;
    }
    let checked_in = std::fs::read_to_string(&checked_in_path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "src/etcd/etcdserverpb.rs is not what proto/etcd.proto generates; run \
         `CORRAL_UPDATE_GENERATED=1 cargo nextest run -p corral-store -E 'test(generated_code)'` \
         and commit the result"
    );
}
