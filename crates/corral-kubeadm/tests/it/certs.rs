//! Cluster certificates and the admin kubeconfig, checked with a real X.509 parser
//! (x509-parser): signatures, CA flags, key usages, subjects and validity; and their Secrets
//! through a real API server.

use std::collections::BTreeMap;

use corral_kubeadm::certs::{self, KeyAlgorithm, KeyMaterial, Purpose};
use corral_kubeadm::kubeconfig;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::ParsedExtension;
use x509_parser::pem::parse_x509_pem;

/// The DER of a PEM certificate.
fn der(pem: &str) -> Vec<u8> {
    let (_, block) = parse_x509_pem(pem.as_bytes()).unwrap();
    assert_eq!(block.label, "CERTIFICATE");
    block.contents
}

fn common_name(certificate: &X509Certificate<'_>) -> String {
    certificate
        .subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string()
}

fn seconds_between(a: OffsetDateTime, b: OffsetDateTime) -> i64 {
    (b - a).whole_seconds()
}

#[test]
fn generated_cas_are_self_signed_certificate_authorities_valid_for_ten_years() {
    let now = OffsetDateTime::now_utc();
    for (purpose, name) in [
        (Purpose::ClusterCa, "kubernetes"),
        (Purpose::EtcdCa, "etcd-ca"),
        (Purpose::FrontProxyCa, "front-proxy-ca"),
    ] {
        let material = certs::generate(purpose, KeyAlgorithm::EcdsaP256, now).unwrap();
        let der = der(&material.certificate_pem);
        let (_, ca) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert_eq!(common_name(&ca), name);
        assert!(ca.is_ca(), "{name} is a CA");
        let constraints = ca.basic_constraints().unwrap().unwrap().value;
        assert!(constraints.ca);
        let usage = ca.key_usage().unwrap().unwrap().value;
        assert!(usage.key_cert_sign() && usage.digital_signature() && usage.key_encipherment());
        ca.verify_signature(None).expect("self-signed");
        // ECDSA P-256 (id-ecPublicKey with the prime256v1 curve).
        assert_eq!(
            ca.public_key().algorithm.algorithm.to_id_string(),
            "1.2.840.10045.2.1"
        );
        let validity = ca.validity();
        let not_after = validity.not_after.to_datetime();
        let not_before = validity.not_before.to_datetime();
        assert!(not_before <= now);
        let ten_years = seconds_between(now, not_after);
        assert!((ten_years - 3650 * 86_400).abs() < 60, "{ten_years}");
        certs::check(purpose, &material).expect("the generated material checks");
    }
    // The service-account pair: a public key PEM and its private key.
    let pair = certs::generate(Purpose::ServiceAccount, KeyAlgorithm::EcdsaP256, now).unwrap();
    assert!(
        pair.certificate_pem
            .starts_with("-----BEGIN PUBLIC KEY-----")
    );
    certs::check(Purpose::ServiceAccount, &pair).unwrap();
}

#[test]
fn the_admin_client_certificate_is_signed_by_the_cluster_ca_for_a_year() {
    let now = OffsetDateTime::now_utc();
    let ca = certs::generate(Purpose::ClusterCa, KeyAlgorithm::EcdsaP256, now).unwrap();
    let (certificate_pem, _key) = kubeconfig::admin_client_certificate(&ca, now).unwrap();
    let (ca_der, client_der) = (der(&ca.certificate_pem), der(&certificate_pem));
    let (_, ca_certificate) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
    let (_, client) = x509_parser::parse_x509_certificate(&client_der).unwrap();
    client
        .verify_signature(Some(ca_certificate.public_key()))
        .expect("signed by the cluster CA");
    assert_eq!(client.issuer(), ca_certificate.subject());
    assert!(!client.is_ca());
    assert_eq!(common_name(&client), "kubernetes-admin");
    let organization = client
        .subject()
        .iter_organization()
        .next()
        .unwrap()
        .as_str()
        .unwrap();
    assert_eq!(organization, "system:masters");
    let extended = client.extended_key_usage().unwrap().unwrap().value;
    assert!(extended.client_auth && !extended.server_auth);
    let usage = client.key_usage().unwrap().unwrap().value;
    assert!(usage.digital_signature() && !usage.key_cert_sign());
    let has_authority_key_id = client.extensions().iter().any(|extension| {
        matches!(
            extension.parsed_extension(),
            ParsedExtension::AuthorityKeyIdentifier(_)
        )
    });
    assert!(has_authority_key_id);
    let year = seconds_between(now, client.validity().not_after.to_datetime());
    assert!((year - 365 * 86_400).abs() < 60, "{year}");

    // A certificate from another CA does not verify against this one.
    let other = certs::generate(Purpose::ClusterCa, KeyAlgorithm::EcdsaP256, now).unwrap();
    let other_der = der(&other.certificate_pem);
    let (_, other_ca) = x509_parser::parse_x509_certificate(&other_der).unwrap();
    assert!(
        client
            .verify_signature(Some(other_ca.public_key()))
            .is_err()
    );
}

#[test]
fn a_kubeconfig_is_renewed_when_less_than_six_months_are_left_or_it_points_elsewhere() {
    let now = OffsetDateTime::now_utc();
    let ca = certs::generate(Purpose::ClusterCa, KeyAlgorithm::EcdsaP256, now).unwrap();
    let server = "https://10.0.0.1:6443";
    let fresh = kubeconfig::generate("dev", server, &ca, now).unwrap();
    assert_eq!(
        kubeconfig::needs_renewal(fresh.as_bytes(), server, &ca, now),
        None
    );
    // Seven months later, five are left.
    let later = now + Duration::days(7 * 30);
    let reason = kubeconfig::needs_renewal(fresh.as_bytes(), server, &ca, later).unwrap();
    assert!(reason.contains("expires"), "{reason}");
    let reason =
        kubeconfig::needs_renewal(fresh.as_bytes(), "https://10.0.0.2:6443", &ca, now).unwrap();
    assert!(reason.contains("does not point"), "{reason}");
    let other = certs::generate(Purpose::ClusterCa, KeyAlgorithm::EcdsaP256, now).unwrap();
    assert!(kubeconfig::needs_renewal(fresh.as_bytes(), server, &other, now).is_some());
}

#[test]
fn rsa_cannot_be_generated_and_says_what_to_use() {
    use corral_kubeadm::api::bootstrap::EncryptionAlgorithmType;
    let error = KeyAlgorithm::from_encryption_algorithm(Some(EncryptionAlgorithmType::Rsa2048))
        .unwrap_err();
    assert!(error.to_string().contains("use ECDSA-P256"), "{error}");
    assert_eq!(
        KeyAlgorithm::from_encryption_algorithm(None).unwrap(),
        KeyAlgorithm::EcdsaP256
    );
}

#[tokio::test]
async fn cluster_certificates_are_created_once_with_upstreams_names_type_and_label() {
    let env = corral_testenv::TestEnv::start().await;
    let client = env.client.clone();
    let first = certs::lookup_or_generate(
        &certs::SecretReader::new(client.clone()),
        "default",
        "dev",
        KeyAlgorithm::EcdsaP256,
        None,
    )
    .await
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let listed = secrets
        .list(&ListParams::default().labels("cluster.x-k8s.io/cluster-name=dev"))
        .await
        .unwrap();
    let mut names: Vec<String> = listed
        .items
        .iter()
        .map(|secret| secret.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["dev-ca", "dev-etcd", "dev-proxy", "dev-sa"]);
    for secret in &listed.items {
        assert_eq!(secret.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
        let keys: Vec<&String> = secret.data.as_ref().unwrap().keys().collect();
        assert_eq!(keys, ["tls.crt", "tls.key"]);
    }
    // A second call reads what the first wrote: no key is generated again.
    let second = certs::lookup_or_generate(
        &certs::SecretReader::new(client.clone()),
        "default",
        "dev",
        KeyAlgorithm::EcdsaP256,
        None,
    )
    .await
    .unwrap();
    assert_eq!(first, second);
    assert_eq!(
        certs::lookup(&certs::SecretReader::new(client.clone()), "default", "dev")
            .await
            .unwrap(),
        Some(first)
    );
}

#[tokio::test]
async fn a_user_ca_that_does_not_parse_is_an_error_that_names_the_secret_and_why() {
    let env = corral_testenv::TestEnv::start().await;
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "default");
    let bad = Secret {
        metadata: ObjectMeta {
            name: Some("byo-ca".into()),
            ..Default::default()
        },
        type_: Some("cluster.x-k8s.io/secret".into()),
        data: Some(BTreeMap::from([
            (
                "tls.crt".to_string(),
                ByteString(b"not a certificate".to_vec()),
            ),
            ("tls.key".to_string(), ByteString(b"not a key".to_vec())),
        ])),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &bad).await.unwrap();
    let error = certs::lookup_or_generate(
        &certs::SecretReader::new(env.client.clone()),
        "default",
        "byo",
        KeyAlgorithm::EcdsaP256,
        None,
    )
    .await
    .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("Secret byo-ca"), "{message}");
    assert!(message.contains("cluster CA"), "{message}");
    assert!(
        message.contains("tls.key is not a PEM private key"),
        "{message}"
    );

    // A user CA that parses is used as it is.
    let now = OffsetDateTime::now_utc();
    let user_ca: KeyMaterial =
        certs::generate(Purpose::ClusterCa, KeyAlgorithm::EcdsaP384, now).unwrap();
    secrets
        .create(
            &PostParams::default(),
            &certs::secret("default", "mine", Purpose::ClusterCa, &user_ca, None),
        )
        .await
        .unwrap();
    let found = certs::lookup_or_generate(
        &certs::SecretReader::new(env.client.clone()),
        "default",
        "mine",
        KeyAlgorithm::EcdsaP256,
        None,
    )
    .await
    .unwrap();
    assert_eq!(found.cluster_ca, user_ca);
}
