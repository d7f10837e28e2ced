//! Keeping a server's in-memory state (webhook configurations, the RBAC index) in step with
//! a prefix of the store: each change a watch-cache subscription delivers is applied; when the
//! subscription ends while the server lives (the cacher dropped or expired it), everything is
//! read again and a new subscription taken, after a pause if that failed.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use crate::error::ApiError;
use crate::server::ApiState;
use crate::watch_cache::{CachedEvent, Subscription};

/// What reads everything again and subscribes to the changes after that read.
pub type Reload = Box<
    dyn Fn(
            Arc<ApiState>,
        ) -> Pin<Box<dyn Future<Output = Result<Option<Subscription>, ApiError>> + Send>>
        + Send
        + Sync,
>;

/// Applies every event of `subscription` with `apply`, reloading with `reload` when it ends,
/// until the server is dropped or shut down. `what` names the state in logs.
pub async fn follow(
    state: Weak<ApiState>,
    what: &'static str,
    mut subscription: Option<Subscription>,
    apply: impl Fn(&ApiState, &CachedEvent),
    reload: Reload,
) {
    let retry = std::time::Duration::from_secs(1);
    loop {
        if let Some(mut current) = subscription.take() {
            let backlog = std::mem::take(&mut current.backlog);
            let mut backlog = backlog.into_iter();
            loop {
                let event = match backlog.next() {
                    Some(event) => event,
                    None => match current.receiver.recv().await {
                        Some(event) => event,
                        None => break,
                    },
                };
                let Some(state) = state.upgrade() else { return };
                apply(&state, &event);
            }
        } else {
            tokio::time::sleep(retry).await;
        }
        let Some(state) = state.upgrade() else { return };
        // The shutdown closed the watch: nothing to follow any more.
        if state.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        tracing::debug!(what, "Reading again: the watch ended");
        match reload(state).await {
            Ok(resubscribed) => subscription = resubscribed,
            Err(error) => tracing::warn!(what, %error, "Reading again failed"),
        }
    }
}
