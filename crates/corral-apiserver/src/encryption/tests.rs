use bytes::Bytes;

use super::config::parse;
use super::*;

const KEY_32: &str = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyE/Pz8="; // 32 bytes
const KEY_16: &str = "MDEyMzQ1Njc4OWFiY2RlZg=="; // 16 bytes
const OTHER_32: &str = "b3RoZXIga2V5IG9mIHRoaXJ0eS10d28gYnl0ZXMhISE="; // 32 bytes

fn config(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
{providers}"
    )
}

fn one(kind: &str, name: &str, secret: &str) -> String {
    format!(
        "      - {kind}:\n          keys:\n            - name: {name}\n              secret: {secret}\n"
    )
}

const SECRET_KEY: &str = "/registry/core/secrets/default/db";
const PLAINTEXT: &[u8] = br#"{"data":{"password":"aHVudGVyMg=="}}"#;

#[test]
fn every_provider_round_trips_with_kube_prefix() {
    for (kind, secret) in [
        ("aescbc", KEY_32),
        ("aescbc", KEY_16),
        ("aesgcm", KEY_32),
        ("aesgcm", KEY_16),
        ("secretbox", KEY_32),
    ] {
        let encryption = parse(&config(&one(kind, "key1", secret)), "test").unwrap();
        let stored = encryption
            .encrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
            .unwrap();
        let prefix = format!("k8s:enc:{kind}:v1:key1:");
        assert!(stored.starts_with(prefix.as_bytes()), "{kind}");
        assert!(!stored.windows(8).any(|w| w == b"password"), "{kind}");
        let (plaintext, stale) = encryption.decrypt(SECRET_KEY, stored.clone()).unwrap();
        assert_eq!(&plaintext[..], PLAINTEXT, "{kind}");
        assert!(!stale);
        // A fresh nonce each time.
        let again = encryption
            .encrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
            .unwrap();
        assert_ne!(stored, again, "{kind}");
    }
}

#[test]
fn other_resources_pass_through() {
    let encryption = parse(&config(&one("secretbox", "key1", KEY_32)), "test").unwrap();
    let key = "/registry/core/configmaps/default/db";
    let stored = encryption
        .encrypt(key, Bytes::from_static(PLAINTEXT))
        .unwrap();
    assert_eq!(&stored[..], PLAINTEXT);
}

#[test]
fn wrong_key_is_an_error_not_garbage() {
    let writer = parse(&config(&one("secretbox", "key1", KEY_32)), "test").unwrap();
    let stored = writer
        .encrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
        .unwrap();
    // Same key name, other key material.
    let reader = parse(&config(&one("secretbox", "key1", OTHER_32)), "test").unwrap();
    let error = reader.decrypt(SECRET_KEY, stored.clone()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to decrypt data with secretbox key \"key1\" (wrong key or corrupt data)"
    );
    // No key of that name.
    let reader = parse(&config(&one("secretbox", "key2", KEY_32)), "test").unwrap();
    let error = reader.decrypt(SECRET_KEY, stored).unwrap_err();
    assert_eq!(error.to_string(), "no matching prefix found");
}

#[test]
fn aesgcm_binds_the_value_to_its_key() {
    let encryption = parse(&config(&one("aesgcm", "key1", KEY_32)), "test").unwrap();
    let stored = encryption
        .encrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
        .unwrap();
    let moved = "/registry/core/secrets/default/other";
    assert!(encryption.decrypt(moved, stored).is_err());
}

#[test]
fn identity_reads_plaintext_and_marks_it_stale() {
    let providers = one("aescbc", "key1", KEY_32) + "      - identity: {}\n";
    let encryption = parse(&config(&providers), "test").unwrap();
    let (plaintext, stale) = encryption
        .decrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
        .unwrap();
    assert_eq!(&plaintext[..], PLAINTEXT);
    assert!(stale);
    // Without identity, plaintext is refused.
    let strict = parse(&config(&one("aescbc", "key1", KEY_32)), "test").unwrap();
    assert!(
        strict
            .decrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
            .is_err()
    );
}

#[test]
fn rotation_reads_old_key_as_stale_and_writes_with_the_first() {
    let old = parse(&config(&one("aescbc", "key1", KEY_32)), "test").unwrap();
    let stored = old
        .encrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
        .unwrap();
    let rotated = config(&format!(
        "      - aescbc:\n          keys:\n            - name: key2\n              secret: {OTHER_32}\n            - name: key1\n              secret: {KEY_32}\n"
    ));
    let new = parse(&rotated, "test").unwrap();
    let (plaintext, stale) = new.decrypt(SECRET_KEY, stored).unwrap();
    assert_eq!(&plaintext[..], PLAINTEXT);
    assert!(stale);
    let rewritten = new.encrypt(SECRET_KEY, plaintext).unwrap();
    assert!(rewritten.starts_with(b"k8s:enc:aescbc:v1:key2:"));
}

#[test]
fn exact_resources_win_over_wildcards() {
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ['*.*']
    providers:
      - identity: {{}}
  - resources: [secrets, deployments.apps]
    providers:
{}",
        one("secretbox", "key1", KEY_32)
    );
    let encryption = parse(&text, "test").unwrap();
    for key in [SECRET_KEY, "/registry/apps/deployments/default/web"] {
        let stored = encryption
            .encrypt(key, Bytes::from_static(PLAINTEXT))
            .unwrap();
        assert!(stored.starts_with(b"k8s:enc:secretbox:v1:key1:"), "{key}");
    }
    let stored = encryption
        .encrypt(
            "/registry/core/configmaps/a/b",
            Bytes::from_static(PLAINTEXT),
        )
        .unwrap();
    assert_eq!(&stored[..], PLAINTEXT);
}

#[test]
fn invalid_configurations_name_the_field_and_hide_the_key() {
    let cases = [
        (
            config(&one("aescbc", "key1", "c2hvcnQ=")),
            "encryption provider config test: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [16, 24, 32]",
        ),
        (
            config(&one("secretbox", "key1", KEY_16)),
            "encryption provider config test: resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 16, expected one of [32]",
        ),
        (
            config(&one("aesgcm", "key1", "not base64!")),
            "encryption provider config test: resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secret is not a valid base64 string",
        ),
        (
            config("      - kms:\n          name: vault\n"),
            "encryption provider config test: resources[0].providers[0].kms: Unsupported value: Corral has no KMS plugins; use aescbc, aesgcm or secretbox",
        ),
        (
            config(&(one("aescbc", "key1", KEY_32) + "        identity: {}\n")),
            "encryption provider config test: resources[0].providers[0]: Invalid value: more than one provider specified in a single element, should split into different list elements",
        ),
    ];
    for (text, expected) in cases {
        let error = parse(&text, "test").expect_err(expected).to_string();
        assert_eq!(error, expected);
    }
}

#[test]
fn generated_configuration_encrypts_secrets_with_secretbox() {
    let encryption = parse(&config::generate_for_secrets(), "generated").unwrap();
    let stored = encryption
        .encrypt(SECRET_KEY, Bytes::from_static(PLAINTEXT))
        .unwrap();
    assert!(stored.starts_with(b"k8s:enc:secretbox:v1:key1:"));
    let debug = format!("{encryption:?}");
    assert_eq!(
        debug,
        r#"[/registry/core/secrets/ ["secretbox:key1", "identity"]]"#
    );
}

/// The cost of encryption per Secret write and read, printed (no assertion on time):
/// `cargo nextest run -p corral-apiserver --run-ignored only --no-capture -E 'test(/measure_encryption/)'`.
#[test]
#[ignore = "a measurement, run by hand for BENCHMARKS.md"]
fn measure_encryption_cost() {
    // A kubeconfig Secret as the kubeadm provider writes it: about 5.5 kB of JSON.
    let value = Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"c1-kubeconfig","namespace":"default"}},"data":{{"value":"{}"}}}}"#,
        "A".repeat(5400)
    ));
    for (kind, secret) in [
        ("aescbc", KEY_32),
        ("aesgcm", KEY_32),
        ("secretbox", KEY_32),
    ] {
        let encryption = parse(&config(&one(kind, "key1", secret)), "test").unwrap();
        let rounds = 2000;
        let start = std::time::Instant::now();
        let mut stored = Bytes::new();
        for _ in 0..rounds {
            stored = encryption.encrypt(SECRET_KEY, value.clone()).unwrap();
        }
        let encrypt = start.elapsed() / rounds;
        let start = std::time::Instant::now();
        for _ in 0..rounds {
            encryption.decrypt(SECRET_KEY, stored.clone()).unwrap();
        }
        let decrypt = start.elapsed() / rounds;
        eprintln!(
            "{kind}: {} bytes, encrypt {encrypt:?}, decrypt {decrypt:?}",
            value.len()
        );
    }
}
