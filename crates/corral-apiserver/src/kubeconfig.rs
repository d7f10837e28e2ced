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
