//! The Kubernetes-compatible API server.
