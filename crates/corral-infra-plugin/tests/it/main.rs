//! corral-infra-plugin's integration tests: the checked-in CRDs, and end to end with the core
//! controllers and the example providers of `examples/` running as processes (`e2e.rs`), and
//! the admission webhook of `spec.config` through kubectl (`validation.rs`), and the
//! conformance suite of `corral provider test` against the examples (`conformance.rs`).

mod admission;
mod conformance;
mod crds;
mod e2e;
mod validation;

use std::future::Future;
use std::time::Duration;

/// How long a test waits for the controllers: long enough for a loaded machine, short enough
/// to fail a stuck test in reasonable time.
const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `check` until it returns `Some`.
async fn eventually<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    corral_testenv::eventually(PATIENCE, what, check).await
}
