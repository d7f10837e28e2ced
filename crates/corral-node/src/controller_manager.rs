//! The parts of kube-controller-manager that joining machines need, run by the agent on every
//! control plane machine (each pass is idempotent, so several machines may run them at once;
//! writes carry the resourceVersion they were computed from):
//!
//! - the **bootstrap signer**: cluster-info carries a signature for each bootstrap token that
//!   may sign (`usage-bootstrap-signing`) and has not expired, and none for others
//!   ([`crate::cluster_info`]);
//! - the **token cleaner**: expired bootstrap token Secrets are deleted;
//! - the **CSR approver** (`csrapproving`): a kubelet's request for a client certificate
//!   (signer `kubernetes.io/kube-apiserver-client-kubelet`, subject `system:node:<name>` in
//!   `system:nodes`, client usages) is approved when a SubjectAccessReview says its requester may
//!   `create` `certificatesigningrequests/nodeclient` (or `selfnodeclient` for a Node renewing
//!   its own) — what kubeadm's bindings grant bootstrap tokens and Nodes;
//! - the **CSR signer** (`csrsigning`): approved kubelet client requests are signed by the
//!   cluster CA for a year (`--cluster-signing-duration`'s default); an approved request that
//!   is not a kubelet client request gets the `Failed` condition.
//!
//! Each pass lists what it needs (a workload cluster has a handful of tokens and requests);
//! the agent runs one every [`PERIOD`].

use std::collections::BTreeMap;
use std::time::Duration;

use corral_kubeadm::certs::{self, KeyMaterial};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cluster_info;

/// How often the controllers look.
pub const PERIOD: Duration = Duration::from_secs(1);

/// The signer of kubelets' client certificates.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

/// How long signed certificates are valid (kube-controller-manager's default).
const SIGNED_VALIDITY: time::Duration = time::Duration::days(365);

const TOKEN_NAMESPACE: &str = "kube-system";
const TOKEN_SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";

/// Runs the controllers until the task is dropped.
pub async fn run(client: kube::Client, cluster_ca: KeyMaterial) {
    let mut timer = tokio::time::interval(PERIOD);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let now = OffsetDateTime::now_utc();
        if let Err(error) = tokens(&client, now).await {
            tracing::debug!(%error, "Bootstrap signer / token cleaner pass failed");
        }
        if let Err(error) = requests(&client, &cluster_ca, now).await {
            tracing::debug!(%error, "CSR approver / signer pass failed");
        }
    }
}

/// A bootstrap token Secret's fields.
struct Token {
    id: String,
    secret: String,
    expired: bool,
    signs: bool,
}

fn token_of(secret: &Secret, now: OffsetDateTime) -> Option<Token> {
    if secret.type_.as_deref() != Some(TOKEN_SECRET_TYPE) {
        return None;
    }
    let data = secret.data.as_ref()?;
    let field = |key: &str| {
        data.get(key)
            .and_then(|value| String::from_utf8(value.0.clone()).ok())
    };
    let expired = field("expiration")
        .and_then(|text| OffsetDateTime::parse(&text, &Rfc3339).ok())
        .is_some_and(|expiration| expiration <= now);
    Some(Token {
        id: field("token-id")?,
        secret: field("token-secret")?,
        expired,
        signs: field("usage-bootstrap-signing").as_deref() == Some("true"),
    })
}

/// The bootstrap signer and the token cleaner.
async fn tokens(client: &kube::Client, now: OffsetDateTime) -> Result<(), kube::Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), TOKEN_NAMESPACE);
    let mut signing = Vec::new();
    for secret in secrets.list(&ListParams::default()).await?.items {
        let Some(token) = token_of(&secret, now) else {
            continue;
        };
        if token.expired {
            let name = secret.metadata.name.clone().unwrap_or_default();
            tracing::info!(token = %token.id, "Deleting an expired bootstrap token");
            match secrets.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        } else if token.signs {
            signing.push(token);
        }
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), cluster_info::NAMESPACE);
    let Some(cluster_info) = config_maps.get_opt(cluster_info::NAME).await? else {
        return Ok(());
    };
    let data = cluster_info.data.clone().unwrap_or_default();
    let Some(payload) = data.get(cluster_info::KUBECONFIG_KEY) else {
        return Ok(());
    };
    let wanted: BTreeMap<String, String> = signing
        .iter()
        .map(|token| {
            (
                format!("{}{}", cluster_info::SIGNATURE_PREFIX, token.id),
                cluster_info::sign(payload, &token.id, &token.secret),
            )
        })
        .collect();
    let present: BTreeMap<&String, &String> = data
        .iter()
        .filter(|(key, _)| key.starts_with(cluster_info::SIGNATURE_PREFIX))
        .collect();
    let unchanged = present.len() == wanted.len()
        && wanted
            .iter()
            .all(|(key, value)| present.get(key) == Some(&value));
    if unchanged {
        return Ok(());
    }
    let mut changes = serde_json::Map::new();
    for key in present.keys() {
        if !wanted.contains_key(*key) {
            changes.insert((*key).clone(), serde_json::Value::Null);
        }
    }
    for (key, value) in wanted {
        changes.insert(key, json!(value));
    }
    let patch = json!({
        "metadata": {"resourceVersion": cluster_info.metadata.resource_version},
        "data": changes,
    });
    match config_maps
        .patch(
            cluster_info::NAME,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Another control plane machine signed first; the next pass sees its work.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

fn has_condition(request: &CertificateSigningRequest, kind: &str) -> bool {
    request
        .status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == kind))
}

/// Why a request is not a kubelet's client certificate request, if it is not.
fn not_a_kubelet_client_request(request: &CertificateSigningRequest) -> Option<String> {
    let spec = &request.spec;
    let pem = String::from_utf8(spec.request.0.clone()).ok()?;
    let requested = match certs::read_request(&pem) {
        Ok(requested) => requested,
        Err(reason) => return Some(reason),
    };
    if !requested.common_name.starts_with("system:node:") {
        return Some(format!(
            "the subject's common name {:?} does not start with system:node:",
            requested.common_name
        ));
    }
    if requested.organizations != [cluster_info::NODES_GROUP] {
        return Some(format!(
            "the subject's organizations {:?} are not [system:nodes]",
            requested.organizations
        ));
    }
    if requested.has_names {
        return Some("a client certificate request names no DNS names or addresses".into());
    }
    let allowed = ["digital signature", "key encipherment", "client auth"];
    let usages = &spec.usages.clone().unwrap_or_default();
    if !usages.iter().any(|usage| usage == "client auth")
        || usages
            .iter()
            .any(|usage| !allowed.contains(&usage.as_str()))
    {
        return Some(format!(
            "usages {usages:?} are not those of a client certificate"
        ));
    }
    None
}

/// The CSR approver and signer.
async fn requests(
    client: &kube::Client,
    cluster_ca: &KeyMaterial,
    now: OffsetDateTime,
) -> Result<(), kube::Error> {
    let api: Api<CertificateSigningRequest> = Api::all(client.clone());
    for request in api.list(&ListParams::default()).await?.items {
        if request.spec.signer_name != KUBELET_CLIENT_SIGNER || has_condition(&request, "Failed") {
            continue;
        }
        let name = request.metadata.name.clone().unwrap_or_default();
        let approved = has_condition(&request, "Approved");
        if !approved && !has_condition(&request, "Denied") {
            if not_a_kubelet_client_request(&request).is_none()
                && may_request(client, &request).await?
            {
                tracing::info!(request = %name, user = ?request.spec.username, "Approving a kubelet's client certificate request");
                let patch = json!({
                    "metadata": {"resourceVersion": request.metadata.resource_version},
                    "status": {"conditions": [condition(
                        "Approved",
                        "AutoApproved",
                        "Auto approving kubelet client certificate after SubjectAccessReview.",
                        now,
                    )]},
                });
                if let Err(error) = api
                    .patch_approval(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    tracing::debug!(request = %name, %error, "Approving failed");
                }
            }
            continue;
        }
        let signed = request
            .status
            .as_ref()
            .is_some_and(|status| status.certificate.is_some());
        if !approved || signed {
            continue;
        }
        let status = match not_a_kubelet_client_request(&request) {
            Some(reason) => json!({"conditions": [condition(
                "Failed",
                "SignerValidationFailure",
                &format!("invalid kubelet client certificate request: {reason}"),
                now,
            )]}),
            None => {
                let pem = String::from_utf8_lossy(&request.spec.request.0).into_owned();
                match certs::sign_client_request(cluster_ca, &pem, SIGNED_VALIDITY, now) {
                    Ok(certificate) => {
                        use base64::Engine;
                        tracing::info!(request = %name, "Signing a kubelet's client certificate");
                        json!({
                            "certificate": base64::engine::general_purpose::STANDARD.encode(certificate),
                        })
                    }
                    Err(error) => json!({"conditions": [condition(
                        "Failed",
                        "SignerFailure",
                        &error.to_string(),
                        now,
                    )]}),
                }
            }
        };
        // The approval conditions stay as they are: `/status` does not change them.
        let mut status = status;
        if let Some(conditions) = request.status.as_ref().and_then(|s| s.conditions.as_ref()) {
            let mut all = serde_json::to_value(conditions).unwrap_or_default();
            if let (Some(all), Some(new)) = (
                all.as_array_mut(),
                status.get("conditions").and_then(|c| c.as_array()),
            ) {
                all.extend(new.iter().cloned());
            }
            status["conditions"] = all;
        }
        let patch = json!({
            "metadata": {"resourceVersion": request.metadata.resource_version},
            "status": status,
        });
        if let Err(error) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(request = %name, %error, "Signing failed");
        }
    }
    Ok(())
}

/// Whether the request's requester may ask for a kubelet client certificate: for a bootstrap
/// token, `create certificatesigningrequests/nodeclient`; for a Node renewing its own,
/// `…/selfnodeclient`.
async fn may_request(
    client: &kube::Client,
    request: &CertificateSigningRequest,
) -> Result<bool, kube::Error> {
    let spec = &request.spec;
    let requested = String::from_utf8(spec.request.0.clone())
        .ok()
        .and_then(|pem| certs::read_request(&pem).ok());
    let renewing =
        requested.is_some_and(|requested| spec.username.as_deref() == Some(&requested.common_name));
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: spec.username.clone(),
            uid: spec.uid.clone(),
            groups: spec.groups.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".into()),
                resource: Some("certificatesigningrequests".into()),
                subresource: Some(
                    if renewing {
                        "selfnodeclient"
                    } else {
                        "nodeclient"
                    }
                    .into(),
                ),
                verb: Some("create".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let answer = reviews.create(&PostParams::default(), &review).await?;
    Ok(answer.status.is_some_and(|status| status.allowed))
}

fn condition(kind: &str, reason: &str, message: &str, now: OffsetDateTime) -> serde_json::Value {
    let now = now
        .replace_nanosecond(0)
        .unwrap_or(now)
        .format(&Rfc3339)
        .expect("UTC formats as RFC 3339");
    json!({
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    })
}
