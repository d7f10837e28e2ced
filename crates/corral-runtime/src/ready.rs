//! Waiting for a controller's caches from any number of reconciles at once.
//!
//! kube-runtime's `Store::wait_until_ready` keeps a single waker per store (its `DelayedInit`
//! polls one shared oneshot receiver): when two reconciles wait at the same time, only the one
//! that polled last is woken when the store fills, and the other waits forever. kube-runtime
//! runs one reconcile per object at a time, so that object is never reconciled again. This
//! showed after a restart: the first reconciles start before the caches are filled and wait
//! together. [`CachesReady`] waits on each store once, in one shared future, which wakes every
//! waiter.

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use kube::runtime::reflector::{Lookup, Store};

/// The readiness of a controller's caches; cheap to clone, awaitable by many at once.
#[derive(Clone)]
pub struct CachesReady(Shared<BoxFuture<'static, ()>>);

impl CachesReady {
    /// Ready once every one of `waits` (see [`CachesReady::store`]) has finished.
    pub fn new(waits: Vec<BoxFuture<'static, ()>>) -> Self {
        CachesReady(
            futures::future::join_all(waits)
                .map(|_| ())
                .boxed()
                .shared(),
        )
    }

    /// Waiting for one store. A dropped writer (shutdown) counts as ready: waiting longer is
    /// pointless then.
    pub fn store<K>(store: &Store<K>) -> BoxFuture<'static, ()>
    where
        K: Lookup + Clone + Send + Sync + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
    {
        let store = store.clone();
        async move {
            let _ = store.wait_until_ready().await;
        }
        .boxed()
    }

    /// Resolves once the caches are filled.
    pub async fn wait(&self) {
        self.0.clone().await;
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    use kube::runtime::reflector::store;
    use kube::runtime::watcher;

    use super::*;
    use corral_api::MachineSet;

    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Counter>, Waker) {
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        (counter.clone(), Waker::from(counter))
    }

    /// Two reconciles wait for the cache at once (the first reconciles after a restart); when
    /// it fills, both are woken and both finish. Awaiting `Store::wait_until_ready` directly,
    /// the first waiter is never woken.
    #[test]
    fn every_waiter_is_woken_when_the_caches_fill() {
        let (reader, mut writer) = store::<MachineSet>();
        let ready = CachesReady::new(vec![CachesReady::store(&reader)]);
        let (first_woken, first_waker) = counting();
        let (second_woken, second_waker) = counting();
        let mut first = pin!(ready.wait());
        let mut second = pin!(ready.wait());
        assert!(
            first
                .as_mut()
                .poll(&mut Context::from_waker(&first_waker))
                .is_pending()
        );
        assert!(
            second
                .as_mut()
                .poll(&mut Context::from_waker(&second_waker))
                .is_pending()
        );

        writer.apply_watcher_event(&watcher::Event::InitDone);

        assert_eq!(
            first_woken.0.load(Ordering::SeqCst),
            1,
            "the first waiter is woken"
        );
        assert_eq!(
            second_woken.0.load(Ordering::SeqCst),
            1,
            "the second waiter is woken"
        );
        assert_eq!(
            first.as_mut().poll(&mut Context::from_waker(&first_waker)),
            Poll::Ready(())
        );
        assert_eq!(
            second
                .as_mut()
                .poll(&mut Context::from_waker(&second_waker)),
            Poll::Ready(())
        );
    }

    /// What the fix works around, kept so that a kube-runtime that fixes it shows here.
    #[test]
    fn store_wait_until_ready_wakes_only_the_last_waiter() {
        let (reader, mut writer) = store::<MachineSet>();
        let (first_woken, first_waker) = counting();
        let (second_woken, second_waker) = counting();
        let mut first = pin!(reader.wait_until_ready());
        let mut second = pin!(reader.wait_until_ready());
        assert!(
            first
                .as_mut()
                .poll(&mut Context::from_waker(&first_waker))
                .is_pending()
        );
        assert!(
            second
                .as_mut()
                .poll(&mut Context::from_waker(&second_waker))
                .is_pending()
        );

        writer.apply_watcher_event(&watcher::Event::InitDone);

        assert_eq!(
            first_woken.0.load(Ordering::SeqCst),
            0,
            "the first waiter is lost"
        );
        assert_eq!(second_woken.0.load(Ordering::SeqCst), 1);
    }
}
