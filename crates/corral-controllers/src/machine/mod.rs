//! The Machine controller (upstream `core/reconcilers/machine`).

use std::sync::Arc;

use crate::runtime::{Context, Shutdown};

/// Starts the Machine controller; returns at shutdown.
pub(crate) async fn run(_ctx: Arc<Context>, shutdown: Shutdown) {
    shutdown.await;
}
