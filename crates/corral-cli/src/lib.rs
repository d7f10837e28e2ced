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
//!
//! # Map of the crate
//!
//! clusterctl's operations as a library, over `kube::Client` only, so they work against any
//! Kubernetes-compatible server; each failure is an `Error` whose message is one line saying what
//! to do. `client.rs` resolves the kubeconfig as kubectl (`--kubeconfig`, `KUBECONFIG`,
//! `~/.kube/config`) into a `Connection`. `components.rs` is the one list of built-in providers
//! (CRDs and upstream's inventory entry: `cluster-api`, `bootstrap-kubeadm`,
//! `control-plane-kubeadm`, `infrastructure-in-memory`) that `init` installs, with each one's
//! least-privilege ClusterRole from `roles.rs` (bound to the component's ServiceAccount, upstream's
//! `<prefix>-manager`, to `corral-system/corral-controllers` that `corral controllers` runs as, to
//! `system:corral:<label>` and to the group of `corral up`'s in-process controllers; `corral
//! kubeconfig` writes a kubeconfig with a `tokenFile` for one of those ServiceAccounts), and
//! `run_controllers`, the one place every controller is started (`start_plugin_webhook` serves and
//! registers the plugin kinds' admission webhook beside them, in `corral up` and in every `corral
//! controllers` replica, leader or not). `leader.rs` is client-go's Lease election for `corral
//! controllers`. `generate/` renders the templates embedded from
//! `templates/<provider>/cluster-template[-<flavor>].yaml` with clusterctl's substitution
//! (`envsubst.rs`). `describe/` reads a cluster into upstream's tree (`mod.rs`) and renders it
//! (`tree.rs`, pure: grouping, columns, colours); `watch.rs` is the one live view, for `describe
//! --watch` and `up --demo`: on a terminal the tree redrawn in place (the terminal restored however
//! it ends), elsewhere one state line per change. `get.rs`, `scale.rs`, `rollout.rs`, `delete.rs`
//! and `apply.rs` are the day-two verbs; `resource.rs` parses `md/NAME`. `mover/` is `corral move`
//! (`graph.rs` the object graph; `directory.rs` `--to-directory` and `--from-directory`; the
//! cluster-scoped ProviderPlugins moved objects name are copied to the target first, not through a
//! directory). `tests/it` runs them against an in-process API server.

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
