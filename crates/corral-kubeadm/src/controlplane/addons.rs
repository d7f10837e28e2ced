//! kube-proxy and CoreDNS in the workload cluster follow the control plane (upstream
//! `controlplane/kubeadm/pkg/workload_cluster.go` `UpdateKubeProxyImageInfo` and
//! `workload_cluster_coredns.go` `UpdateCoreDNS`). As upstream, this runs once the control
//! plane has nothing to roll out or scale, that is after an upgrade has replaced every machine:
//!
//! - **kube-proxy**: the `kube-system/kube-proxy` DaemonSet's `kube-proxy` container gets the
//!   image tag `spec.version` (characters an OCI tag cannot hold become `_`), in
//!   `clusterConfiguration.imageRepository` when that is set.
//! - **CoreDNS**: only when the KubeadmControlPlane has a `clusterConfiguration`. The
//!   `kube-system/coredns` Deployment's `coredns` container moves to `dns.imageTag` (or keeps its
//!   tag) in `dns.imageRepository`, else `imageRepository`, else its current repository, with
//!   upstream's rename of `coredns` to `coredns/coredns` from 1.8.0 on `registry.k8s.io` and
//!   `k8s.gcr.io`. A lower CoreDNS version than the running one, or a running version CoreDNS's
//!   Corefile migration does not know, is refused with a Warning Event `FailedUpdateCoreDNS`
//!   naming both tags (`FailedUpdateKubeProxy` for a kube-proxy image pinned by digest), and the
//!   rest of the reconcile, the status included, goes on. The
//!   `kubeadm-config` ConfigMap's `dns` records the new image, and the `coredns` ConfigMap keeps
//!   the previous Corefile under `Corefile-backup`. Upstream, and KCP itself, never derive the
//!   CoreDNS version from the Kubernetes version: it changes only when `dns.imageTag` or a
//!   repository says so.
//!
//! The annotations `controlplane.cluster.x-k8s.io/skip-kube-proxy` and `.../skip-coredns` on the
//! KubeadmControlPlane leave the one they name alone. Missing objects (a workload cluster without
//! kube-proxy or CoreDNS) are not an error.
//!
//! Corral differs from upstream in two ways. The Corefile is carried over unchanged: there is
//! no port of CoreDNS's corefile-migration library, whose rules rewrite plugins and options
//! retired before CoreDNS 1.8 (`proxy`, `upstream`, `resyncperiod`), so an upgrade from a CoreDNS
//! older than 1.8.0 is refused with an error saying so, and the Deployment is not pointed at
//! the backup key in between (with an unchanged Corefile there is nothing to protect). And the
//! workload cluster is read only when what decides the result changed (the version, the image
//! settings, the skip annotations) or [`super::Config::poll_interval`] passed since it was last
//! made current, rather than on every reconcile (three reads per reconcile of every settled
//! control plane otherwise).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use corral_api::annotations::{KCP_SKIP_COREDNS, KCP_SKIP_KUBE_PROXY};
use corral_runtime::cluster_cache::ClusterKey;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{ConfigMap, Container};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::EventType;
use serde_json::json;

use super::{Context, Scope};
use crate::api::admission::KNOWN_COREDNS_VERSIONS;
use crate::api::bootstrap::ClusterConfiguration;
use crate::api::controlplane::KubeadmControlPlane;

#[cfg(test)]
mod tests;

const KUBE_SYSTEM: &str = "kube-system";
const KUBE_PROXY: &str = "kube-proxy";
const COREDNS: &str = "coredns";
const COREFILE: &str = "Corefile";
const COREFILE_BACKUP: &str = "Corefile-backup";
const COREDNS_VOLUME: &str = "config-volume";
const KUBEADM_CONFIG: &str = "kubeadm-config";

/// A failed update of kube-proxy or CoreDNS in a workload cluster.
#[derive(Debug, thiserror::Error)]
pub enum AddonsError {
    #[error("cannot reach the workload cluster to update kube-proxy and CoreDNS")]
    Connect(#[source] corral_runtime::cluster_cache::Error),
    #[error("cannot read {what} in the workload cluster")]
    Get {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("cannot update {what} in the workload cluster")]
    Update {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("cannot update image {image:?} of {what}: {reason}")]
    Image {
        what: &'static str,
        image: String,
        reason: String,
    },
    #[error("the coredns ConfigMap in the workload cluster has no Corefile")]
    NoCorefile,
    #[error("the coredns Deployment in the workload cluster has no container named coredns")]
    NoCoreDnsContainer,
    #[error("cannot upgrade CoreDNS from {from} to {to}: {reason}")]
    CoreDnsVersion {
        from: String,
        to: String,
        reason: String,
    },
    #[error("the ClusterConfiguration in the kubeadm-config ConfigMap cannot be read: {0}")]
    KubeadmConfig(String),
}

impl AddonsError {
    /// The spec asks for what cannot be done (as opposed to a failed request, which a retry
    /// may fix).
    fn is_refusal(&self) -> bool {
        matches!(
            self,
            AddonsError::Image { .. }
                | AddonsError::NoCorefile
                | AddonsError::NoCoreDnsContainer
                | AddonsError::CoreDnsVersion { .. }
                | AddonsError::KubeadmConfig(_)
        )
    }
}

/// What the last successful update was computed from, per KubeadmControlPlane uid.
#[derive(Default)]
pub(super) struct Applied(Mutex<HashMap<String, (Instant, String)>>);

impl Applied {
    pub(super) fn forget(&self, uid: &str) {
        self.0.lock().expect("addons lock").remove(uid);
    }
}

/// What decides the update: when it is unchanged and recent, the workload cluster is not read.
fn inputs(kcp: &KubeadmControlPlane) -> String {
    let configuration = &kcp.spec.kubeadm_config_spec.cluster_configuration;
    serde_json::to_string(&(
        &kcp.spec.version,
        &configuration.image_repository,
        &configuration.dns,
        configuration == &ClusterConfiguration::default(),
        kcp.annotations().contains_key(KCP_SKIP_KUBE_PROXY),
        kcp.annotations().contains_key(KCP_SKIP_COREDNS),
    ))
    .expect("serializes")
}

/// Brings kube-proxy and CoreDNS to the control plane's version and image settings (see the
/// module documentation); called when the control plane has nothing else to do.
pub(super) async fn reconcile_addons(context: &Context, scope: &Scope) -> Result<(), super::Error> {
    if scope.workload_error.is_some() {
        return Ok(());
    }
    let kcp = &scope.kcp;
    let uid = kcp.uid().unwrap_or_default();
    let inputs = inputs(kcp);
    let current = context
        .addons
        .0
        .lock()
        .expect("addons lock")
        .get(&uid)
        .is_some_and(|(when, applied)| {
            *applied == inputs && when.elapsed() < context.config.poll_interval
        });
    if current {
        return Ok(());
    }
    let key = ClusterKey::new(&scope.namespace, &scope.cluster.name_any());
    let client = context
        .cache
        .client(&key)
        .await
        .map_err(AddonsError::Connect)?;
    let mut settled = true;
    for (reason, result) in [
        (
            "FailedUpdateKubeProxy",
            update_kube_proxy(&client, kcp).await,
        ),
        ("FailedUpdateCoreDNS", update_coredns(&client, kcp).await),
    ] {
        match result {
            Ok(done) => settled &= done,
            // What the spec asks cannot be done: said in a Warning Event, and not tried again
            // until the inputs change or the poll interval passes, so that the control plane's
            // status keeps being written (an error would end every reconcile before it).
            Err(error) if error.is_refusal() => {
                let message = corral_runtime::error_chain(&error);
                tracing::warn!(%message, "Not updating the workload cluster's add-on");
                context
                    .event(kcp, EventType::Warning, reason, message)
                    .await;
            }
            Err(error) => return Err(error.into()),
        }
    }
    // Remembered only once both exist (or are skipped): a cluster still coming up is looked at
    // again on the next reconcile.
    if settled {
        context
            .addons
            .0
            .lock()
            .expect("addons lock")
            .insert(uid, (Instant::now(), inputs));
    }
    Ok(())
}

async fn get_opt<K>(api: &Api<K>, name: &str, what: &'static str) -> Result<Option<K>, AddonsError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await
        .map_err(|source| AddonsError::Get { what, source })
}

/// Upstream `UpdateKubeProxyImageInfo`. Returns whether kube-proxy is current (or skipped);
/// false when the cluster has no kube-proxy DaemonSet yet.
async fn update_kube_proxy(
    client: &kube::Client,
    kcp: &KubeadmControlPlane,
) -> Result<bool, AddonsError> {
    if kcp.annotations().contains_key(KCP_SKIP_KUBE_PROXY) {
        return Ok(true);
    }
    let what = "the kube-proxy DaemonSet";
    let daemon_sets: Api<DaemonSet> = Api::namespaced(client.clone(), KUBE_SYSTEM);
    let Some(daemon_set) = get_opt(&daemon_sets, KUBE_PROXY, what).await? else {
        return Ok(false);
    };
    let Some(mut containers) = daemon_set
        .spec
        .template
        .spec
        .as_ref()
        .map(|spec| spec.containers.clone())
    else {
        return Ok(true);
    };
    let Some(container) = containers.iter_mut().find(|c| c.name == KUBE_PROXY) else {
        return Ok(true);
    };
    let image = container.image.clone().unwrap_or_default();
    let image_error = |reason: String| AddonsError::Image {
        what,
        image: image.clone(),
        reason,
    };
    let mut desired = modify_image_tag(&image, &kcp.spec.version).map_err(image_error)?;
    if let Some(repository) = kcp
        .spec
        .kubeadm_config_spec
        .cluster_configuration
        .image_repository
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        desired = modify_image_repository(&desired, repository).map_err(image_error)?;
    }
    if desired == image {
        return Ok(true);
    }
    tracing::info!(from = %image, to = %desired, "Updating the kube-proxy image");
    container.image = Some(desired);
    patch_containers(&daemon_sets, &daemon_set, containers, None, what).await?;
    Ok(true)
}

/// Replaces the containers (and volumes) of a workload's Pod template, guarded by the
/// resourceVersion read.
async fn patch_containers<K>(
    api: &Api<K>,
    object: &K,
    containers: Vec<Container>,
    volumes: Option<Vec<k8s_openapi::api::core::v1::Volume>>,
    what: &'static str,
) -> Result<(), AddonsError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut pod_spec = json!({ "containers": containers });
    if let Some(volumes) = volumes {
        pod_spec["volumes"] = json!(volumes);
    }
    let patch = json!({
        "metadata": { "resourceVersion": object.resource_version() },
        "spec": { "template": { "spec": pod_spec } },
    });
    api.patch(
        &object.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
    .map_err(|source| AddonsError::Update { what, source })
}

/// Upstream `UpdateCoreDNS`. Returns whether CoreDNS is current (or skipped); false when the
/// cluster has no CoreDNS yet.
async fn update_coredns(
    client: &kube::Client,
    kcp: &KubeadmControlPlane,
) -> Result<bool, AddonsError> {
    let configuration = &kcp.spec.kubeadm_config_spec.cluster_configuration;
    if kcp.annotations().contains_key(KCP_SKIP_COREDNS)
        || *configuration == ClusterConfiguration::default()
    {
        return Ok(true);
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), KUBE_SYSTEM);
    let Some(config_map) = get_opt(&config_maps, COREDNS, "the coredns ConfigMap").await? else {
        return Ok(false);
    };
    let corefile = config_map
        .data
        .as_ref()
        .and_then(|data| data.get(COREFILE))
        .cloned()
        .ok_or(AddonsError::NoCorefile)?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), KUBE_SYSTEM);
    let what = "the coredns Deployment";
    let Some(deployment) = get_opt(&deployments, COREDNS, what).await? else {
        return Ok(false);
    };
    let pod_spec = deployment.spec.template.spec.clone().unwrap_or_default();
    let mut containers = pod_spec.containers.clone();
    let container = containers
        .iter_mut()
        .find(|c| c.name == COREDNS)
        .ok_or(AddonsError::NoCoreDnsContainer)?;
    let from_image = container.image.clone().unwrap_or_default();
    let target = compute_coredns_image(&from_image, configuration)?;
    if target.image == from_image {
        return Ok(true);
    }
    validate_coredns_upgrade(&target.from_tag, &target.to_tag)?;

    tracing::info!(from = %from_image, to = %target.image, "Updating CoreDNS");
    update_kubeadm_config_dns(client, configuration, &kcp.spec.version).await?;
    // The Corefile, unchanged (see the module documentation), with the previous one kept.
    let patch = json!({ "data": { COREFILE: corefile, COREFILE_BACKUP: corefile } });
    config_maps
        .patch(COREDNS, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| AddonsError::Update {
            what: "the coredns ConfigMap",
            source,
        })?;
    container.image = Some(target.image);
    // The Deployment reads the Corefile key (upstream flips it back from the backup key).
    let mut volumes = pod_spec.volumes.clone();
    let mut volumes_changed = false;
    for volume in volumes.iter_mut().flatten() {
        if volume.name != COREDNS_VOLUME {
            continue;
        }
        if let Some(source) = volume.config_map.as_mut().filter(|c| c.name == COREDNS) {
            for item in source.items.iter_mut().flatten() {
                if item.key == COREFILE_BACKUP {
                    item.key = COREFILE.to_string();
                    volumes_changed = true;
                }
            }
        }
    }
    let volumes = volumes.filter(|_| volumes_changed);
    patch_containers(&deployments, &deployment, containers, volumes, what).await?;
    Ok(true)
}

/// Records the CoreDNS image in the `dns` of `kube-system/kubeadm-config`'s ClusterConfiguration
/// (upstream `updateCoreDNSImageInfoInKubeadmConfigMap` through `UpdateClusterConfiguration`,
/// which also sets `kubernetesVersion` to the control plane's), so that machines joining later
/// and `kubeadm upgrade` agree with it.
async fn update_kubeadm_config_dns(
    client: &kube::Client,
    configuration: &ClusterConfiguration,
    version: &str,
) -> Result<(), AddonsError> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), KUBE_SYSTEM);
    let what = "the kubeadm-config ConfigMap";
    let Some(config_map) = get_opt(&config_maps, KUBEADM_CONFIG, what).await? else {
        return Err(AddonsError::KubeadmConfig(
            "kube-system/kubeadm-config does not exist".into(),
        ));
    };
    let text = config_map
        .data
        .as_ref()
        .and_then(|data| data.get("ClusterConfiguration"))
        .ok_or_else(|| AddonsError::KubeadmConfig("it has no ClusterConfiguration key".into()))?;
    let updated = with_dns(text, configuration, version)?;
    if updated == *text {
        return Ok(());
    }
    let patch = json!({
        "metadata": { "resourceVersion": config_map.resource_version() },
        "data": { "ClusterConfiguration": updated },
    });
    config_maps
        .patch(
            KUBEADM_CONFIG,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map(|_| ())
        .map_err(|source| AddonsError::Update { what, source })
}

/// The ClusterConfiguration YAML with `dns.imageRepository` and `dns.imageTag` set as the
/// KubeadmControlPlane says (removed when it leaves them unset) and `kubernetesVersion` set to
/// `version` (with upstream's leading `v`); the text itself when nothing changes.
pub(super) fn with_dns(
    text: &str,
    configuration: &ClusterConfiguration,
    version: &str,
) -> Result<String, AddonsError> {
    use serde_yaml::{Mapping, Value};
    let mut document: Value = serde_yaml::from_str(text)
        .map_err(|error| AddonsError::KubeadmConfig(error.to_string()))?;
    let Some(root) = document.as_mapping_mut() else {
        return Err(AddonsError::KubeadmConfig(
            "it is not a YAML mapping".into(),
        ));
    };
    let version = Value::from(format!("v{}", version.trim_start_matches('v')));
    let version_changed = root.get("kubernetesVersion") != Some(&version);
    root.insert(Value::from("kubernetesVersion"), version);
    let dns = root
        .entry(Value::from("dns"))
        .or_insert_with(|| Value::Mapping(Mapping::new()));
    if !dns.is_mapping() {
        *dns = Value::Mapping(Mapping::new());
    }
    let dns = dns.as_mapping_mut().expect("a mapping");
    let before = dns.clone();
    for (key, value) in [
        ("imageRepository", &configuration.dns.image_repository),
        ("imageTag", &configuration.dns.image_tag),
    ] {
        match value {
            Some(value) => {
                dns.insert(Value::from(key), Value::from(value.as_str()));
            }
            None => {
                dns.remove(key);
            }
        }
    }
    if *dns == before && !version_changed {
        return Ok(text.to_string());
    }
    serde_yaml::to_string(&document).map_err(|error| AddonsError::KubeadmConfig(error.to_string()))
}

/// A container image reference split as upstream's `container.ImageFromString` does:
/// `<repository>/<name>[:<tag>][@<digest>]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Image {
    pub repository: String,
    pub name: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

impl Image {
    /// Parses a reference, normalised as Docker does (`busybox` is
    /// `docker.io/library/busybox`).
    pub(super) fn parse(image: &str) -> Result<Image, String> {
        let image = image.trim();
        if image.is_empty() {
            return Err("the image is empty".into());
        }
        let (rest, digest) = match image.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest.to_string())),
            None => (image, None),
        };
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (path, tag) = match rest[last_slash..].rfind(':') {
            Some(colon) => (
                &rest[..last_slash + colon],
                Some(rest[last_slash + colon + 1..].to_string()),
            ),
            None => (rest, None),
        };
        if tag.as_deref() == Some("") || path.is_empty() || path.ends_with('/') {
            return Err("not a valid image reference".into());
        }
        let first = path.split('/').next().unwrap_or_default();
        let has_registry = path.contains('/')
            && (first.contains('.') || first.contains(':') || first == "localhost");
        let full = match (has_registry, path.contains('/')) {
            (true, _) => path.to_string(),
            (false, true) => format!("docker.io/{path}"),
            (false, false) => format!("docker.io/library/{path}"),
        };
        let (repository, name) = full.rsplit_once('/').expect("has a registry");
        Ok(Image {
            repository: repository.to_string(),
            name: name.to_string(),
            tag,
            digest,
        })
    }
}

impl std::fmt::Display for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.repository, self.name)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// A version as an OCI image tag: characters a tag cannot hold become `_` (upstream
/// `SemverToOCIImageTag`: `v1.35.0+build` is tagged `v1.35.0_build`).
pub(super) fn semver_to_image_tag(version: &str) -> String {
    version
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The image with its tag replaced by `version` (upstream `ModifyImageTag`; an image pinned
/// by digest cannot be retagged).
pub(super) fn modify_image_tag(image: &str, version: &str) -> Result<String, String> {
    let mut parsed = Image::parse(image)?;
    if parsed.digest.is_some() {
        return Err("image uses digest as version, cannot update tag".into());
    }
    parsed.tag = Some(semver_to_image_tag(version));
    Ok(parsed.to_string())
}

/// The image moved to another repository, keeping its name and tag (upstream
/// `ModifyImageRepository`).
pub(super) fn modify_image_repository(image: &str, repository: &str) -> Result<String, String> {
    let parsed = Image::parse(image)?;
    if parsed.tag.is_none() {
        return Err("image must be tagged".into());
    }
    Ok(Image {
        repository: repository.trim_end_matches('/').to_string(),
        digest: None,
        ..parsed
    }
    .to_string())
}

/// The CoreDNS image a KubeadmControlPlane asks for (upstream `getCoreDNSInfo`).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct CoreDnsTarget {
    pub image: String,
    pub from_tag: String,
    pub to_tag: String,
}

pub(super) fn compute_coredns_image(
    from_image: &str,
    configuration: &ClusterConfiguration,
) -> Result<CoreDnsTarget, AddonsError> {
    let image_error = |reason: String| AddonsError::Image {
        what: "the coredns Deployment",
        image: from_image.to_string(),
        reason,
    };
    let parsed = Image::parse(from_image).map_err(image_error)?;
    let mut repository = parsed.repository.clone();
    for explicit in [
        &configuration.image_repository,
        &configuration.dns.image_repository,
    ]
    .into_iter()
    .flatten()
    .filter(|r| !r.is_empty())
    {
        repository = explicit.trim_end_matches('/').to_string();
    }
    let from_tag = parsed
        .tag
        .clone()
        .ok_or_else(|| image_error("it has no image tag".into()))?;
    let to_tag = configuration
        .dns
        .image_tag
        .clone()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| from_tag.clone());
    parse_image_tag_version(&from_tag)
        .ok_or_else(|| image_error("its tag is not a version".into()))?;
    let target = parse_image_tag_version(&to_tag).ok_or_else(|| AddonsError::CoreDnsVersion {
        from: from_tag.clone(),
        to: to_tag.clone(),
        reason: "spec.kubeadmConfigSpec.clusterConfiguration.dns.imageTag is not a version".into(),
    })?;
    // Upstream's rename of the image in kubeadm's registries from CoreDNS 1.8.0.
    let mut name = parsed.name.clone();
    if (repository == "registry.k8s.io" || repository == "k8s.gcr.io")
        && name == "coredns"
        && target >= (1, 8, 0)
    {
        name = "coredns/coredns".into();
    }
    Ok(CoreDnsTarget {
        image: format!("{repository}/{name}:{to_tag}"),
        from_tag,
        to_tag,
    })
}

/// The major, minor and patch of an image tag such as `v1.12.0`, `1.7.0` or `v1.8.0-rc.1`
/// (upstream `version.ParseTolerantImageTag`; pre-release and build are ignored).
pub(super) fn parse_image_tag_version(tag: &str) -> Option<(u64, u64, u64)> {
    let tag = tag.strip_prefix('v').unwrap_or(tag);
    let core = tag.split(['-', '+', '_']).next()?;
    let mut parts = core.split('.').map(|part| part.parse::<u64>().ok());
    let version = (
        parts.next()??,
        parts.next().unwrap_or(Some(0))?,
        parts.next().unwrap_or(Some(0))?,
    );
    parts.next().is_none().then_some(version)
}

/// Upstream `validateCoreDNSImageTag`, plus Corral's limit of an unchanged Corefile (see the
/// module documentation).
pub(super) fn validate_coredns_upgrade(from_tag: &str, to_tag: &str) -> Result<(), AddonsError> {
    let refuse = |reason: String| AddonsError::CoreDnsVersion {
        from: from_tag.to_string(),
        to: to_tag.to_string(),
        reason,
    };
    let from = parse_image_tag_version(from_tag)
        .ok_or_else(|| refuse("the current tag is not a version".into()))?;
    let to = parse_image_tag_version(to_tag)
        .ok_or_else(|| refuse("the target tag is not a version".into()))?;
    if from > to {
        return Err(refuse(
            "the target version must be greater than or equal to the current one".into(),
        ));
    }
    if !KNOWN_COREDNS_VERSIONS.contains(&format!("{}.{}.{}", from.0, from.1, from.2).as_str()) {
        return Err(refuse(format!(
            "the current version {}.{}.{} is not a CoreDNS version the Corefile migration knows",
            from.0, from.1, from.2
        )));
    }
    if from < (1, 8, 0) && from != to {
        return Err(refuse(
            "Corral does not migrate Corefiles of CoreDNS older than 1.8.0; upgrade CoreDNS with kubeadm first"
                .into(),
        ));
    }
    Ok(())
}
