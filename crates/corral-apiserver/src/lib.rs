//! A Kubernetes-compatible API server over a `corral-store` backend.
//!
//! It serves built-in resources (namespaces, secrets, configmaps, events, leases, CRDs) and
//! every resource a CRD defines, with kube-apiserver's REST semantics, so that kubectl,
//! kube-rs and the official client libraries work against it unchanged. Objects are untyped
//! JSON; what is particular to a built-in kind lives in `hooks.rs`.
//!
//! Entry point: [`Server::start`].

pub mod admission;
mod apply;
pub mod auth;
mod body;
mod builtin_fields;
mod certificates;
mod conversion;
pub mod crd;
mod discovery;
pub mod error;
mod follow;
pub mod gc;
mod hooks;
pub mod kubeconfig;
pub mod names;
mod namespaces;
pub mod object;
mod openapi;
mod patch;
pub mod pki;
mod protobuf;
pub mod query;
pub mod rbac;
pub mod registry;
mod render;
pub mod rest;
mod scale;
pub mod schema;
pub mod selector;
mod server;
pub mod strategic_merge;
mod table;
pub mod tls;
mod watch;
pub mod watch_cache;
mod webhook;

pub use auth::{AuthenticationConfig, UserInfo};
pub use error::ApiError;
pub use server::{ApiState, Server, ServerConfig, serve_request};
pub use tls::{ServingCertificate, TlsConfig};
pub use watch::WatchTimings;
pub use watch_cache::WatchCacheConfig;
