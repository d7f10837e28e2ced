//! Infrastructure providers in any language (provider name `plugin`): a provider is a server
//! that answers `corral.provider.v1` over gRPC or HTTP/JSON (`docs/provider-protocol.md`,
//! `corral-provider-sdk`), registered with a `ProviderPlugin`; the infrastructure kinds
//! `PluginCluster` and `PluginMachine` (with their templates) name it in `spec.plugin`, and
//! the generic controllers here call it, so that a plugin machine is a first-class
//! infrastructure machine for core (v1beta2 contract).
//!
//! - [`api`]: the kinds and [`crds()`], checked in under `crds/`.
//! - [`run`] / [`run_with_caches`]: the ProviderPlugin, PluginCluster and PluginMachine
//!   controllers.
//! - [`admission`]: the validating webhook that checks `spec.config` against the plugin's
//!   published schema and its ValidateConfig.
//!
//! # Map of the crate
//!
//! Infrastructure providers in any language (provider `plugin`). `api/` is `ProviderPlugin`
//! (`corral.dev/v1alpha1`, cluster-scoped: endpoint, caBundle, timeout, insecure; status: the last
//! GetInfo, transport, `Ready`) and `PluginCluster`, `PluginMachine` and their templates
//! (`infrastructure.corral.dev/v1alpha1`, v1beta2 contract label: `spec.plugin`, free-form
//! `spec.config`, the contract fields), CRDs checked in under `crds/`. `controllers/` calls the
//! plugins through `corral-provider-sdk`'s `Client`, on `corral-runtime`: `provider_plugin.rs`
//! probes GetInfo on registration, spec change and every minute (a plugin not listing contract `v1`
//! is Ready False, never called); `plugin_cluster.rs` ReconcileCluster / DeleteCluster;
//! `plugin_machine.rs` CreateMachine (bootstrap data from the Machine's Secret, keyed by the
//! Machine's uid), GetMachine with a backoff until RUNNING or FAILED (copied to the Machine's
//! failure), DeleteMachine; `plugins.rs` holds one client per ProviderPlugin; `orphans.rs`, at each
//! probe of a plugin with `ListMachines`, reports the machines no Machine uid or PluginMachine
//! providerID claims (`status.orphans`, `OrphansFound`, an Event) and deletes them under
//! `orphanPolicy: Delete` after a grace period. A plugin's failure is the object's `Ready`
//! condition naming the plugin; calls retry after its retry-after or a per-object backoff.
//! `admission/` is the validating webhook of `spec.config` (the plugin's schema through
//! `corral_apiserver::schema::check`, then ValidateConfig), served over HTTPS with a certificate it
//! issues itself by the process running the controllers and registered in the
//! ValidatingWebhookConfiguration `corral-plugin-config` that `corral init` creates empty; so it
//! works alike on Corral's API server and a real one. `examples/` at the root holds a Python
//! provider over HTTP (standard library) and a Rust one over gRPC (built as this crate's example
//! `rust-grpc-provider`); `tests/it/e2e.rs` runs both as processes with the core controllers:
//! create, scale, roll out, delete, faults, restarts.

pub mod admission;
pub mod api;
mod controllers;

pub use api::crds;
pub use controllers::{PROBE_INTERVAL, run, run_with_caches};
