//! The admin kubeconfig a server writes for its clients.

/// A kubeconfig for a plain-HTTP server on loopback. Without authentication there are no
/// credentials to write; the user entry exists because clients require one.
pub fn render(server_url: &str, name: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server_url}
users:
- name: {name}-admin
  user: {{}}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}-admin
    namespace: default
current-context: {name}
preferences: {{}}
"
    )
}

/// A kubeconfig for an HTTPS server: the CA that signed its serving certificate (`None`
/// leaves verification to the client's system roots) and a client certificate and key, all
/// PEM. It holds a private key: write it readable by its owner only.
pub fn render_tls(
    server_url: &str,
    name: &str,
    ca_pem: Option<&str>,
    client_certificate_pem: &str,
    client_key_pem: &str,
) -> String {
    use base64::Engine;
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let authority = ca_pem
        .map(|pem| format!("\n    certificate-authority-data: {}", encode(pem)))
        .unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server_url}{authority}
users:
- name: {name}-admin
  user:
    client-certificate-data: {certificate}
    client-key-data: {key}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}-admin
    namespace: default
current-context: {name}
preferences: {{}}
",
        certificate = encode(client_certificate_pem),
        key = encode(client_key_pem),
    )
}
