use std::os::unix::fs::PermissionsExt;

use super::*;

#[test]
fn the_serving_certificate_names_the_listen_address_loopback_and_the_extra_names() {
    assert_eq!(
        serving_names(
            "10.0.0.5:6443".parse().unwrap(),
            &["api.example.com".into(), "127.0.0.1".into()]
        ),
        [
            "10.0.0.5",
            "localhost",
            "127.0.0.1",
            "::1",
            "api.example.com"
        ]
    );
    // A wildcard address is no name.
    assert_eq!(
        serving_names("0.0.0.0:6443".parse().unwrap(), &[]),
        ["localhost", "127.0.0.1", "::1"]
    );
}

#[test]
fn clients_reach_a_wildcard_address_on_loopback() {
    assert_eq!(
        client_url("0.0.0.0:6443".parse().unwrap(), true),
        "https://127.0.0.1:6443"
    );
    assert_eq!(
        client_url("[::]:6443".parse().unwrap(), true),
        "https://[::1]:6443"
    );
    assert_eq!(
        client_url("10.0.0.5:1".parse().unwrap(), false),
        "http://10.0.0.5:1"
    );
}

#[test]
fn the_data_directory_ca_is_made_once_and_its_key_kept_private() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    let first = ensure_ca(&pki).unwrap();
    let again = ensure_ca(&pki).unwrap();
    assert_eq!(first.certificate_pem, again.certificate_pem);
    let mode = |name: &str| {
        std::fs::metadata(pki.join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("ca.key"), 0o600);
    assert_eq!(
        std::fs::metadata(&pki).unwrap().permissions().mode() & 0o777,
        0o700
    );
}
