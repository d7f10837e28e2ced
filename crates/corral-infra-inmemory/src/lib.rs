//! The in-memory infrastructure provider.

pub mod api;
pub mod cloud;
mod controllers;

pub use api::crds;
pub use controllers::{Error, run};
