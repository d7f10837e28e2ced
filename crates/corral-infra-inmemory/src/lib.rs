//! The in-memory infrastructure provider.

pub mod api;

pub use api::crds;
pub mod cloud;
