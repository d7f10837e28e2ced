use super::*;
use crate::api::bootstrap::kubeadm::Dns;

fn configuration(
    repository: Option<&str>,
    dns_repository: Option<&str>,
    tag: Option<&str>,
) -> ClusterConfiguration {
    ClusterConfiguration {
        image_repository: repository.map(str::to_string),
        dns: Dns {
            image_repository: dns_repository.map(str::to_string),
            image_tag: tag.map(str::to_string),
        },
        ..Default::default()
    }
}

#[test]
fn images_split_as_upstream_and_print_back() {
    let image = Image::parse("registry.k8s.io/kube-proxy:v1.35.0").unwrap();
    assert_eq!(
        (
            image.repository.as_str(),
            image.name.as_str(),
            image.tag.as_deref()
        ),
        ("registry.k8s.io", "kube-proxy", Some("v1.35.0"))
    );
    assert_eq!(image.to_string(), "registry.k8s.io/kube-proxy:v1.35.0");
    let image = Image::parse("localhost:5000/a/coredns/coredns:v1.12.0").unwrap();
    assert_eq!(image.repository, "localhost:5000/a/coredns");
    assert_eq!(
        Image::parse("busybox").unwrap().to_string(),
        "docker.io/library/busybox"
    );
    assert_eq!(
        Image::parse("example/busybox:1").unwrap().to_string(),
        "docker.io/example/busybox:1"
    );
    assert!(Image::parse("").is_err());
    assert!(Image::parse("registry.k8s.io/kube-proxy:").is_err());
}

#[test]
fn kube_proxy_is_retagged_to_the_version_and_moved_to_the_repository() {
    assert_eq!(
        modify_image_tag("registry.k8s.io/kube-proxy:v1.35.0", "v1.36.1").unwrap(),
        "registry.k8s.io/kube-proxy:v1.36.1"
    );
    assert_eq!(
        modify_image_tag("registry.k8s.io/kube-proxy:v1.35.0", "v1.36.0+build.1").unwrap(),
        "registry.k8s.io/kube-proxy:v1.36.0_build.1"
    );
    assert!(modify_image_tag("registry.k8s.io/kube-proxy@sha256:abc", "v1.36.0").is_err());
    assert_eq!(
        modify_image_repository(
            "registry.k8s.io/kube-proxy:v1.36.0",
            "mirror.example.com/k8s/"
        )
        .unwrap(),
        "mirror.example.com/k8s/kube-proxy:v1.36.0"
    );
}

#[test]
fn coredns_follows_the_dns_image_settings_with_upstreams_rename() {
    let from = "registry.k8s.io/coredns/coredns:v1.12.0";
    // Nothing asked: the same image.
    let target = compute_coredns_image(from, &configuration(None, None, None)).unwrap();
    assert_eq!(target.image, from);
    let target = compute_coredns_image(from, &configuration(None, None, Some("v1.12.1"))).unwrap();
    assert_eq!(target.image, "registry.k8s.io/coredns/coredns:v1.12.1");
    assert_eq!(
        (target.from_tag.as_str(), target.to_tag.as_str()),
        ("v1.12.0", "v1.12.1")
    );
    // dns.imageRepository wins over imageRepository.
    let target = compute_coredns_image(
        from,
        &configuration(Some("mirror.example.com"), Some("dns.example.com/"), None),
    )
    .unwrap();
    assert_eq!(target.image, "dns.example.com/coredns:v1.12.0");
    // Upstream's vectors: the old name in kubeadm's registry is renamed from 1.8.0 on, not in
    // another repository.
    let target = compute_coredns_image(
        "k8s.gcr.io/coredns:1.7.0",
        &configuration(None, None, Some("v1.8.0")),
    )
    .unwrap();
    assert_eq!(target.image, "k8s.gcr.io/coredns/coredns:v1.8.0");
    let target = compute_coredns_image(
        "k8s.gcr.io/coredns:1.6.7",
        &configuration(None, None, Some("1.7.0")),
    )
    .unwrap();
    assert_eq!(target.image, "k8s.gcr.io/coredns:1.7.0");
    let target = compute_coredns_image(
        "k8s.gcr.io/some-repo/coredns:1.7.0",
        &configuration(None, None, Some("1.8.0")),
    )
    .unwrap();
    assert_eq!(target.image, "k8s.gcr.io/some-repo/coredns:1.8.0");
    assert!(
        compute_coredns_image(
            "registry.k8s.io/coredns/coredns",
            &configuration(None, None, None)
        )
        .is_err()
    );
}

#[test]
fn coredns_is_never_downgraded_and_starts_from_a_known_version() {
    assert!(validate_coredns_upgrade("v1.12.0", "v1.12.1").is_ok());
    assert!(validate_coredns_upgrade("v1.12.0", "v1.12.0").is_ok());
    let error = validate_coredns_upgrade("v1.12.0", "v1.11.1")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("v1.12.0") && error.contains("v1.11.1"),
        "{error}"
    );
    let error = validate_coredns_upgrade("v1.8.2", "v1.9.0")
        .unwrap_err()
        .to_string();
    assert!(error.contains("1.8.2 is not a CoreDNS version"), "{error}");
    assert!(validate_coredns_upgrade("1.7.0", "v1.8.0").is_err());
    assert_eq!(parse_image_tag_version("v1.8.0-rc.1"), Some((1, 8, 0)));
    assert_eq!(parse_image_tag_version("1.7"), Some((1, 7, 0)));
    assert_eq!(parse_image_tag_version("latest"), None);
}

#[test]
fn the_kubeadm_config_records_the_dns_image_and_version_and_is_untouched_when_it_agrees() {
    let text = "apiVersion: kubeadm.k8s.io/v1beta4\ndns: {}\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.0\n";
    let updated = with_dns(text, &configuration(None, None, Some("v1.12.1")), "v1.36.0").unwrap();
    let parsed: serde_yaml::Value = serde_yaml::from_str(&updated).unwrap();
    assert_eq!(parsed["dns"]["imageTag"], "v1.12.1");
    assert_eq!(parsed["kubernetesVersion"], "v1.36.0");
    assert_eq!(parsed["kind"], "ClusterConfiguration");
    assert_eq!(
        with_dns(
            &updated,
            &configuration(None, None, Some("v1.12.1")),
            "1.36.0"
        )
        .unwrap(),
        updated
    );
    assert_eq!(
        with_dns(text, &configuration(None, None, None), "v1.35.0").unwrap(),
        text
    );
    assert!(with_dns("- a list", &configuration(None, None, None), "v1.35.0").is_err());
}
