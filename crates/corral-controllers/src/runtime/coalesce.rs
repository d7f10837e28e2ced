//! Holding back the reconciles that other objects' changes ask for, so that a burst of them
//! brings one reconcile instead of one each.
//!
//! A Cluster's status sums up its Machines, MachineSets and MachineDeployments; while a
//! cluster comes up they change dozens of times within a second, and a reconcile for each
//! change writes the Cluster's status each time, a little more up to date than the last
//! (replica counters, then a condition, then another). [`coalesce`] delays a request by a
//! window; requests for the same object arriving meanwhile join it. The window does not move
//! with later requests (unlike kube-runtime's debounce), so a stream of changes never starves
//! the reconcile: it runs at most one window after the first change it did not see.
//!
//! A change of the object itself (its spec, a user's edit) is reconciled at once; only its
//! controller's own writes, whose watch events bring a reconcile that mostly finds nothing
//! new, are held back with the rest ([`coalesce_marked`]).

use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FusedStream, FuturesUnordered};
use futures::{FutureExt, Stream, StreamExt};
use kube::Resource;
use kube::runtime::controller::ReconcileRequest;
use kube::runtime::reflector::ObjectRef;

/// `requests`, each held back by `window`, with requests for an object already held back
/// dropped. A zero window passes them through unchanged.
pub fn coalesce<K, E, S>(
    requests: S,
    window: Duration,
) -> Pin<Box<dyn Stream<Item = Result<ReconcileRequest<K>, E>> + Send>>
where
    K: Resource + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
    E: Send + 'static,
    S: Stream<Item = Result<ReconcileRequest<K>, E>> + Send + 'static,
{
    coalesce_marked(
        requests.map(|request| request.map(|request| (request, true))),
        window,
    )
}

/// Like [`coalesce`] for requests marked to be held back (`true`) or passed on at once.
pub fn coalesce_marked<K, E, S>(
    requests: S,
    window: Duration,
) -> Pin<Box<dyn Stream<Item = Result<ReconcileRequest<K>, E>> + Send>>
where
    K: Resource + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
    E: Send + 'static,
    S: Stream<Item = Result<(ReconcileRequest<K>, bool), E>> + Send + 'static,
{
    if window.is_zero() {
        return requests
            .map(|request| request.map(|(request, _)| request))
            .boxed();
    }
    Coalesce {
        requests: requests.boxed().fuse(),
        held: HashMap::new(),
        timers: FuturesUnordered::new(),
        window,
    }
    .boxed()
}

struct Coalesce<K: Resource, E> {
    requests: futures::stream::Fuse<
        Pin<Box<dyn Stream<Item = Result<(ReconcileRequest<K>, bool), E>> + Send>>,
    >,
    /// Requests held back, by object.
    held: HashMap<ObjectRef<K>, ReconcileRequest<K>>,
    /// One timer per held request, resolving to its object.
    timers: FuturesUnordered<BoxFuture<'static, ObjectRef<K>>>,
    window: Duration,
}

// No field is pinned structurally: the input stream and the timers are boxed.
impl<K: Resource, E> Unpin for Coalesce<K, E> {}

impl<K, E> Stream for Coalesce<K, E>
where
    K: Resource + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
{
    type Item = Result<ReconcileRequest<K>, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        while !this.requests.is_terminated() {
            match this.requests.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok((request, false)))) => return Poll::Ready(Some(Ok(request))),
                Poll::Ready(Some(Ok((request, true)))) => {
                    if this.held.contains_key(&request.obj_ref) {
                        continue;
                    }
                    let object = request.obj_ref.clone();
                    this.held.insert(object.clone(), request);
                    let window = this.window;
                    this.timers.push(
                        async move {
                            tokio::time::sleep(window).await;
                            object
                        }
                        .boxed(),
                    );
                }
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error))),
                Poll::Ready(None) | Poll::Pending => break,
            }
        }
        match this.timers.poll_next_unpin(cx) {
            Poll::Ready(Some(object)) => match this.held.remove(&object) {
                Some(request) => Poll::Ready(Some(Ok(request))),
                None => {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            },
            Poll::Ready(None) if this.requests.is_terminated() => Poll::Ready(None),
            _ => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use corral_api::Cluster;
    use futures::channel::mpsc;

    use super::*;

    fn request(name: &str) -> Result<ReconcileRequest<Cluster>, ()> {
        Ok(ReconcileRequest::from(ObjectRef::new(name).within("ns")))
    }

    fn names(requests: &[Result<ReconcileRequest<Cluster>, ()>]) -> Vec<String> {
        requests
            .iter()
            .map(|r| r.as_ref().unwrap().obj_ref.name.clone())
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn requests_for_one_object_within_the_window_become_one() {
        let (tx, rx) = mpsc::unbounded();
        let mut out = coalesce(rx, Duration::from_millis(200));
        for name in ["a", "b", "a", "a", "b"] {
            tx.unbounded_send(request(name)).unwrap();
        }
        drop(tx);
        let all: Vec<_> = out.by_ref().collect().await;
        assert_eq!(names(&all), ["a", "b"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_after_the_window_runs_again_and_a_stream_of_them_never_starves() {
        let (tx, rx) = mpsc::unbounded();
        let mut out = coalesce(rx, Duration::from_millis(200));
        let started = tokio::time::Instant::now();
        tx.unbounded_send(request("a")).unwrap();
        // Requests keep coming every 50 ms; the first reconcile still comes after 200 ms.
        let feeder = tokio::spawn(async move {
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                tx.unbounded_send(request("a")).unwrap();
            }
        });
        let first = out.next().await.unwrap();
        assert_eq!(first.unwrap().obj_ref.name, "a");
        assert_eq!(started.elapsed(), Duration::from_millis(200));
        let rest: Vec<_> = out.collect().await;
        feeder.await.unwrap();
        // Requests at 250..500 ms, after the first window: windows from 250 and 500 ms.
        assert_eq!(rest.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn unmarked_requests_pass_at_once_beside_held_ones() {
        let (tx, rx) = mpsc::unbounded();
        let mut out = coalesce_marked(rx, Duration::from_millis(200));
        let started = tokio::time::Instant::now();
        tx.unbounded_send(request("a").map(|r| (r, true))).unwrap();
        tx.unbounded_send(request("b").map(|r| (r, false))).unwrap();
        let first = out.next().await.unwrap().unwrap();
        assert_eq!(
            (first.obj_ref.name.as_str(), started.elapsed()),
            ("b", Duration::ZERO)
        );
        let second = out.next().await.unwrap().unwrap();
        assert_eq!(
            (second.obj_ref.name.as_str(), started.elapsed()),
            ("a", Duration::from_millis(200))
        );
    }

    #[tokio::test]
    async fn a_zero_window_passes_everything_through() {
        let (tx, rx) = mpsc::unbounded();
        let out = coalesce(rx, Duration::ZERO);
        for name in ["a", "a"] {
            tx.unbounded_send(request(name)).unwrap();
        }
        drop(tx);
        let all: Vec<_> = out.collect().await;
        assert_eq!(names(&all), ["a", "a"]);
    }
}
