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

pub mod admission;
pub mod api;
mod controllers;

pub use api::crds;
pub use controllers::{PROBE_INTERVAL, run, run_with_caches};
