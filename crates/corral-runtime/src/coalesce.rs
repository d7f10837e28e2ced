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
//!
//! # A window that grows with the work
//!
//! A reconcile that sums up N Machines costs O(N), and Machines change at a rate that grows
//! with N too: with a fixed window a MachineDeployment of 10,000 replicas had its MachineSets
//! and its Cluster sum up 10,000 Machines five times a second each. A [`Window`] may depend on
//! the object: [`Window::scaled`] holds requests for an object that sums up N Machines for
//! `base × (1 + N / 1,000)`, at most five times `base` (1 s with the default 200 ms), which
//! keeps the share of CPU such reconciles take about constant as N grows. A status a little
//! staler is the price, for big objects only; a change of the object itself is still
//! reconciled at once.
//!
//! The window grows with the backlog too: while many objects are held at once (a thousand
//! clusters coming up), each is held a step longer per hundred held, again at most five times
//! `base` in all, so that a busy controller joins more changes into each write; when the
//! burst is over the window is back to `base`.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{FusedStream, FuturesUnordered};
use futures::{FutureExt, Stream, StreamExt};
use kube::Resource;
use kube::runtime::controller::ReconcileRequest;
use kube::runtime::reflector::ObjectRef;

/// Machines per step of [`Window::scaled`].
const MACHINES_PER_STEP: usize = 1_000;

/// Objects held at once per step of a window's growth with the backlog.
const HELD_PER_STEP: usize = 100;

/// At most this many times the base window: 1 s by default. A MachineDeployment's rollout
/// waits for its MachineSets' and its own reconciles at every step; with 2 s (10 steps) a
/// rollout of 10,000 left a core idle for a fifth of its time, with 1 s it keeps both busy
/// for the same CPU (each object's own writes and descendants' changes share one window).
const MAX_STEPS: u32 = 5;

/// How long requests for an object are held: the same for every object, or growing with the
/// number of Machines it sums up ([`Window::scaled`]).
pub struct Window<K: Resource> {
    base: Duration,
    weight: Option<Weight<K>>,
}

/// How many Machines an object sums up, for [`Window::scaled`].
type Weight<K> = Arc<dyn Fn(&ObjectRef<K>) -> usize + Send + Sync>;

/// A stream of reconcile requests, each marked whether to hold it back (see [`coalesce_marked`]).
type Requests<K, E> = futures::stream::Fuse<
    Pin<Box<dyn Stream<Item = Result<(ReconcileRequest<K>, bool), E>> + Send>>,
>;

impl<K: Resource> Clone for Window<K> {
    fn clone(&self) -> Self {
        Window {
            base: self.base,
            weight: self.weight.clone(),
        }
    }
}

impl<K: Resource> From<Duration> for Window<K> {
    fn from(base: Duration) -> Self {
        Window { base, weight: None }
    }
}

impl<K: Resource> Window<K> {
    /// `base × (1 + N / 1,000)`, at most `5 × base`, where `machines` tells N, the number
    /// of Machines a reconcile of the object sums up.
    pub fn scaled(
        base: Duration,
        machines: impl Fn(&ObjectRef<K>) -> usize + Send + Sync + 'static,
    ) -> Self {
        Window {
            base,
            weight: Some(Arc::new(machines)),
        }
    }

    /// The window for `object` while `held` objects are held.
    pub fn of(&self, object: &ObjectRef<K>, held: usize) -> Duration {
        let machines = self.weight.as_ref().map_or(0, |machines| machines(object));
        scaled(self.base, machines, held)
    }
}

/// `base × (1 + machines / 1,000 + held / 100)`, at most `5 × base`.
pub fn scaled(base: Duration, machines: usize, held: usize) -> Duration {
    let steps = (machines / MACHINES_PER_STEP).saturating_add(held / HELD_PER_STEP);
    let steps = u32::try_from(steps)
        .unwrap_or(u32::MAX)
        .saturating_add(1)
        .min(MAX_STEPS);
    base * steps
}

/// `requests`, each held back by `window`, with requests for an object already held back
/// dropped. A zero window passes them through unchanged.
pub fn coalesce<K, E, S>(
    requests: S,
    window: impl Into<Window<K>>,
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
    window: impl Into<Window<K>>,
) -> Pin<Box<dyn Stream<Item = Result<ReconcileRequest<K>, E>> + Send>>
where
    K: Resource + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Send + Sync,
    E: Send + 'static,
    S: Stream<Item = Result<(ReconcileRequest<K>, bool), E>> + Send + 'static,
{
    let window = window.into();
    if window.base.is_zero() {
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
    requests: Requests<K, E>,
    /// Requests held back, by object.
    held: HashMap<ObjectRef<K>, ReconcileRequest<K>>,
    /// One timer per held request, resolving to its object.
    timers: FuturesUnordered<BoxFuture<'static, ObjectRef<K>>>,
    window: Window<K>,
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
                    let window = this.window.of(&object, this.held.len());
                    this.held.insert(object.clone(), request);
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

    #[tokio::test(start_paused = true)]
    async fn a_backlog_holds_the_later_requests_longer() {
        let (tx, rx) = mpsc::unbounded();
        let mut out = coalesce(rx, Duration::from_millis(200));
        let started = tokio::time::Instant::now();
        for index in 0..150 {
            tx.unbounded_send(request(&format!("c{index:03}"))).unwrap();
        }
        drop(tx);
        let mut released = Vec::new();
        while let Some(request) = out.next().await {
            released.push((request.unwrap().obj_ref.name, started.elapsed()));
        }
        // The first hundred arrived with fewer than a hundred held; the rest with more.
        assert_eq!(released.len(), 150);
        assert!(
            released[..100]
                .iter()
                .all(|(_, at)| *at == Duration::from_millis(200))
        );
        assert!(
            released[100..]
                .iter()
                .all(|(_, at)| *at == Duration::from_millis(400))
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

    #[test]
    fn a_window_grows_a_step_per_thousand_machines_and_per_hundred_held_up_to_five() {
        let base = Duration::from_millis(200);
        assert_eq!(scaled(base, 0, 0), base);
        assert_eq!(scaled(base, 999, 99), base);
        assert_eq!(scaled(base, 1_000, 0), base * 2);
        assert_eq!(scaled(base, 3_210, 0), base * 4);
        assert_eq!(scaled(base, 4_321, 0), base * 5);
        assert_eq!(scaled(base, 10_000, 0), base * 5);
        assert_eq!(scaled(base, usize::MAX, 0), base * 5);
        // The backlog adds a step per hundred objects held.
        assert_eq!(scaled(base, 0, 100), base * 2);
        assert_eq!(scaled(base, 1_000, 250), base * 4);
        assert_eq!(scaled(base, 0, usize::MAX), base * 5);
    }

    #[tokio::test(start_paused = true)]
    async fn each_object_is_held_for_its_own_window() {
        let (tx, rx) = mpsc::unbounded();
        let window = Window::scaled(Duration::from_millis(200), |object: &ObjectRef<Cluster>| {
            if object.name == "big" { 5_000 } else { 10 }
        });
        let mut out = coalesce(rx, window);
        let started = tokio::time::Instant::now();
        tx.unbounded_send(request("big")).unwrap();
        tx.unbounded_send(request("small")).unwrap();
        let first = out.next().await.unwrap().unwrap();
        assert_eq!(
            (first.obj_ref.name.as_str(), started.elapsed()),
            ("small", Duration::from_millis(200))
        );
        let second = out.next().await.unwrap().unwrap();
        assert_eq!(
            (second.obj_ref.name.as_str(), started.elapsed()),
            ("big", Duration::from_millis(1_000))
        );
    }
}
