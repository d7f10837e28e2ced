//! The code checked in under `src/generated/` is what `proto/corral/provider/v1/provider.proto`
//! (at the repository root) generates: the prost messages with the tonic client and server
//! (`corral.provider.v1.rs`) and their canonical JSON mapping from pbjson-build
//! (`corral.provider.v1.serde.rs`). Building needs no protobuf compiler because the code is
//! checked in; this test regenerates it with protox, and fails when the copy has drifted.
//! `CORRAL_UPDATE_GENERATED=1 cargo nextest run -p corral-provider-sdk -E 'test(generated_code)'`
//! rewrites the checked-in copy.

use std::path::Path;

use prost::Message;

const FILES: [&str; 2] = ["corral.provider.v1.rs", "corral.provider.v1.serde.rs"];

#[test]
fn generated_code_matches_the_proto() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let proto_root = crate_dir.join("../../proto");
    let descriptors = protox::compile(["corral/provider/v1/provider.proto"], [&proto_root])
        .unwrap_or_else(|e| panic!("compiling proto/corral/provider/v1/provider.proto: {e}"));
    let encoded = descriptors.encode_to_vec();
    let out = tempfile::tempdir().expect("a temporary directory");
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        // google.protobuf.Struct with its canonical JSON (a plain object).
        .extern_path(".google.protobuf.Struct", "::pbjson_types::Struct")
        .out_dir(out.path())
        .compile_fds(descriptors)
        .expect("generating the messages and services");
    pbjson_build::Builder::new()
        .register_descriptors(&encoded)
        .expect("reading the descriptors")
        .out_dir(out.path())
        .build(&[".corral.provider.v1"])
        .expect("generating the JSON mapping");

    let update = std::env::var_os("CORRAL_UPDATE_GENERATED").is_some();
    for file in FILES {
        let generated = std::fs::read_to_string(out.path().join(file))
            .unwrap_or_else(|e| panic!("the generated {file}: {e}"));
        let checked_in_path = crate_dir.join("src/generated").join(file);
        if update {
            std::fs::write(&checked_in_path, &generated)
                .unwrap_or_else(|e| panic!("writing src/generated/{file}: {e}"));
            continue;
        }
        let checked_in = std::fs::read_to_string(&checked_in_path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "src/generated/{file} is not what provider.proto generates; run \
             `CORRAL_UPDATE_GENERATED=1 cargo nextest run -p corral-provider-sdk -E 'test(generated_code)'` \
             and commit the result"
        );
    }
}
