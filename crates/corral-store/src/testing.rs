//! Test support: a fresh store of each backend, cleaned up when dropped.
//!
//! Compiled with the `testing` feature; used by this crate's conformance suite and by the API
//! server's tests, so that every test gets its own store and can run in parallel.

use std::any::Any;

use crate::DynStore;

/// A store for one test, and whatever keeps it alive (a temp dir, an etcd process).
pub struct TestStore {
    pub store: DynStore,
    _guard: Box<dyn Any + Send + Sync>,
}

impl TestStore {
    pub fn new(store: DynStore, guard: impl Any + Send + Sync) -> Self {
        TestStore {
            store,
            _guard: Box::new(guard),
        }
    }
}

/// A fresh in-memory store.
pub async fn memory() -> TestStore {
    TestStore::new(std::sync::Arc::new(crate::memory::MemoryStore::new()), ())
}
