//! The clusterctl-equivalent operations of Corral as a library: install the providers into a
//! management plane (`init`), run their controllers with leader election (`controllers`),
//! render cluster templates (`generate`), show a cluster's object tree (`describe`), and the
//! day-two verbs (`get`, `scale`, `rollout`, `delete`).
//!
//! The `corral` binary is a thin layer over this crate: it parses flags and reads the
//! environment, then calls one function here with explicit arguments. Everything here talks to
//! a management plane only through `kube::Client`, so it works against a Corral API server and
//! against any Kubernetes-compatible one alike. Failures are [`Error`]s whose messages are one
//! line a person can act on.

pub mod apply;
pub mod client;
pub mod components;
pub mod delete;
pub mod describe;
mod error;
pub mod generate;
pub mod get;
pub mod leader;
pub mod mover;
pub mod resource;
pub mod roles;
pub mod rollout;
pub mod scale;

pub use client::{Connection, KubeconfigSource};
pub use error::Error;

/// The field manager of everything the CLI writes.
pub const FIELD_MANAGER: &str = "corral";

/// Corral's version, as the CLI and the provider inventory report it (`v<crate version>`).
pub const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));
