//! What `kubeadm init` publishes for machines to join with a bootstrap token (its
//! `bootstrap-token` phase), and the signature that lets a joining machine trust it:
//!
//! - the ConfigMap `kube-public/cluster-info`, a kubeconfig naming the cluster's endpoint and CA,
//!   readable by `system:anonymous` (Role and RoleBinding `kubeadm:bootstrap-signer-clusterinfo`);
//! - kubeadm's ClusterRoleBindings: the bootstrap tokens' group may create
//!   CertificateSigningRequests (`kubeadm:kubelet-bootstrap`) that are approved automatically
//!   (`kubeadm:node-autoapprove-bootstrap`), Nodes may renew theirs
//!   (`kubeadm:node-autoapprove-certificate-rotation`); and, since Corral has no Node
//!   authorizer, `system:nodes` is bound to the `system:node` ClusterRole (`corral:nodes`).
//!
//! The bootstrap signer (in [`crate::controller_manager`]) adds to cluster-info, for each token
//! allowed to sign, a detached JWS (`jws-kubeconfig-<token id>`: HS256 keyed by the token's
//! secret over the kubeconfig), which a joining machine checks ([`verify`]) before it believes
//! the CA the kubeconfig names.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

pub const NAMESPACE: &str = "kube-public";
pub const NAME: &str = "cluster-info";
/// The key of cluster-info's kubeconfig.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// The prefix of its signatures' keys, followed by the token id.
pub const SIGNATURE_PREFIX: &str = "jws-kubeconfig-";
/// The group kubeadm's join tokens authenticate in.
pub const TOKEN_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";
/// The group of the Nodes' client certificates.
pub const NODES_GROUP: &str = "system:nodes";

/// The kubeconfig cluster-info holds: the cluster's server and CA, no user.
pub fn kubeconfig(server: &str, ca_pem: &str) -> String {
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "",
            "cluster": {
                "certificate-authority-data":
                    base64::engine::general_purpose::STANDARD.encode(ca_pem),
                "server": server,
            },
        }],
        "contexts": [],
        "current-context": "",
        "preferences": {},
        "users": [],
    });
    serde_yaml::to_string(&config).expect("JSON values serialize as YAML")
}

/// The server and CA (PEM) of a cluster-info kubeconfig.
pub fn read_kubeconfig(kubeconfig: &str) -> Result<(String, String), String> {
    let config: Value =
        serde_yaml::from_str(kubeconfig).map_err(|error| format!("not YAML: {error}"))?;
    let cluster = &config["clusters"][0]["cluster"];
    let server = cluster["server"]
        .as_str()
        .ok_or("it names no server")?
        .to_owned();
    let ca = cluster["certificate-authority-data"]
        .as_str()
        .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
        .and_then(|pem| String::from_utf8(pem).ok())
        .ok_or("it has no certificate-authority-data")?;
    Ok((server, ca))
}

/// The detached JWS of `payload` for a token: `<header>..<signature>`, HS256 keyed by the
/// token's secret, the header naming the token id.
pub fn sign(payload: &str, token_id: &str, token_secret: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "HS256", "kid": token_id}).to_string());
    let signature = mac(&header, payload, token_secret);
    format!("{header}..{signature}")
}

/// Whether `detached` is a valid signature of `payload` by the token.
pub fn verify(payload: &str, detached: &str, token_id: &str, token_secret: &str) -> bool {
    let Some((header, signature)) = detached.split_once("..") else {
        return false;
    };
    let header_fields: Option<Value> = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let names_the_token =
        header_fields.is_some_and(|fields| fields["alg"] == "HS256" && fields["kid"] == token_id);
    let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token_secret.as_bytes());
    names_the_token
        && ring::hmac::verify(&key, signing_input(header, payload).as_bytes(), &signature).is_ok()
}

fn signing_input(header: &str, payload: &str) -> String {
    format!("{header}.{}", URL_SAFE_NO_PAD.encode(payload))
}

fn mac(header: &str, payload: &str, secret: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    URL_SAFE_NO_PAD.encode(ring::hmac::sign(
        &key,
        signing_input(header, payload).as_bytes(),
    ))
}

/// The objects `kubeadm init` creates for joining machines, as JSON to create when missing.
pub fn objects(server: &str, ca_pem: &str) -> Vec<Value> {
    let rbac = "rbac.authorization.k8s.io";
    let cluster_role_binding = |name: &str, role: &str, group: &str| {
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": rbac, "kind": "Group", "name": group}],
        })
    };
    vec![
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "data": {KUBECONFIG_KEY: kubeconfig(server, ca_pem)},
        }),
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "Role",
            "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": NAMESPACE},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                       "resourceNames": [NAME], "verbs": ["get"]}],
        }),
        json!({
            "apiVersion": format!("{rbac}/v1"),
            "kind": "RoleBinding",
            "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": NAMESPACE},
            "roleRef": {"apiGroup": rbac, "kind": "Role",
                        "name": "kubeadm:bootstrap-signer-clusterinfo"},
            "subjects": [{"apiGroup": rbac, "kind": "User", "name": "system:anonymous"}],
        }),
        cluster_role_binding(
            "kubeadm:kubelet-bootstrap",
            "system:node-bootstrapper",
            TOKEN_GROUP,
        ),
        cluster_role_binding(
            "kubeadm:node-autoapprove-bootstrap",
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            TOKEN_GROUP,
        ),
        cluster_role_binding(
            "kubeadm:node-autoapprove-certificate-rotation",
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            NODES_GROUP,
        ),
        cluster_role_binding("corral:nodes", "system:node", NODES_GROUP),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_for_its_token_and_payload() {
        let config = kubeconfig("https://10.0.0.1:6443", "-----BEGIN CERTIFICATE-----\n");
        let signature = sign(&config, "abcdef", "0123456789abcdef");
        assert!(verify(&config, &signature, "abcdef", "0123456789abcdef"));
        assert!(!verify(&config, &signature, "abcdef", "0123456789abcdeX"));
        assert!(!verify(&config, &signature, "abcdeX", "0123456789abcdef"));
        assert!(!verify(
            &format!("{config}\n"),
            &signature,
            "abcdef",
            "0123456789abcdef"
        ));
        assert_eq!(
            read_kubeconfig(&config).unwrap(),
            (
                "https://10.0.0.1:6443".to_owned(),
                "-----BEGIN CERTIFICATE-----\n".to_owned()
            )
        );
    }
}
