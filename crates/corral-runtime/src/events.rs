//! Events (`events.k8s.io/v1`), written as client-go's `events` broadcaster writes them: the
//! first occurrence creates an Event named `<object>.<nanoseconds in hex>`; the first repeat
//! within six minutes (same object, type, action, reason, reporter and related object) starts
//! that Event's `series` (count 2, last observed time), written at once; later repeats only
//! count in memory, and a flusher writes each series whose count moved at most once every
//! [`FLUSH_EVERY`] (client-go refreshes its series every 30 minutes and writes a series'
//! final count once it has not been observed for six minutes). The first note is kept.
//!
//! So a MachineSet that creates 10,000 Machines writes two Events about it and a series update
//! every few seconds, not 10,000 patches of one Event that every reconcile would wait for; what
//! `kubectl get events` shows lags the truth by at most [`FLUSH_EVERY`]. Counts not yet written
//! when the process stops are lost, as client-go's.
//!
//! Why not kube-runtime's `Recorder`: it patches the series on every repeat, and it scans its
//! whole cache of recent Events, under a lock every publish waits for, on each publish, so
//! publishing costs O(Events of the last six minutes). Here expired entries are swept at most
//! once a minute and ignored when found, and the lock is never held across a request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::{Client, ResourceExt};

/// How long a repeat joins the series of an earlier Event (client-go's and kube-runtime's).
const SERIES_TTL: SignedDuration = SignedDuration::from_mins(6);

/// How often expired entries are dropped from the cache.
const SWEEP_EVERY: SignedDuration = SignedDuration::from_mins(1);

/// How often the series counted since their last write are written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(10);

/// What makes two Events the same Event (client-go `getKey`): not the note.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    type_: &'static str,
    action: String,
    reason: String,
    regarding: Reference,
    related: Option<Reference>,
}

/// The identifying fields of an `ObjectReference`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Reference {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    field_path: Option<String>,
}

impl From<&ObjectReference> for Reference {
    fn from(reference: &ObjectReference) -> Self {
        Reference {
            api_version: reference.api_version.clone(),
            kind: reference.kind.clone(),
            namespace: reference.namespace.clone(),
            name: reference.name.clone(),
            uid: reference.uid.clone(),
            field_path: reference.field_path.clone(),
        }
    }
}

fn type_name(type_: EventType) -> &'static str {
    match type_ {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// When an Event was last seen: its series' last observation, else its time.
fn last_seen(event: &K8sEvent) -> Option<Timestamp> {
    match &event.series {
        Some(series) => Some(series.last_observed_time.0),
        None => event.event_time.as_ref().map(|time| time.0),
    }
}

/// An Event as this recorder last wrote or counted it.
struct Entry {
    event: K8sEvent,
    /// Its series counted repeats that are not written yet.
    unwritten: bool,
    /// A write of its series is under way: the next waits for it, so that an older count
    /// never lands after a newer one.
    writing: bool,
}

#[derive(Default)]
struct Cache {
    events: HashMap<Key, Entry>,
    swept: Option<Timestamp>,
    /// Whether the task writing unwritten series runs.
    flushing: bool,
}

/// What a publish does once the cache has seen it.
enum Step {
    /// A first occurrence: create the Event.
    Create,
    /// The first repeat: write the series the cache now holds (count 2).
    StartSeries(Box<K8sEvent>),
    /// A later repeat, counted in the cache only.
    Counted,
}

impl Cache {
    /// Records an occurrence of `key` at `now` and says what to write for it; sweeps expired
    /// entries now and then (those with unwritten counts wait for the flusher).
    fn observe(&mut self, key: &Key, now: Timestamp) -> Step {
        let fresh = |event: &K8sEvent| last_seen(event).is_none_or(|seen| seen + SERIES_TTL > now);
        if self.swept.is_none_or(|swept| swept + SWEEP_EVERY <= now) {
            self.events
                .retain(|_, entry| entry.unwritten || fresh(&entry.event));
            self.swept = Some(now);
        }
        let Some(entry) = self.events.get_mut(key).filter(|entry| fresh(&entry.event)) else {
            return Step::Create;
        };
        let counted = entry.event.series.is_some();
        let count = entry
            .event
            .series
            .as_ref()
            .map_or(2, |series| series.count + 1);
        entry.event.series = Some(EventSeries {
            count,
            last_observed_time: MicroTime(now),
        });
        match counted {
            true => {
                entry.unwritten = true;
                Step::Counted
            }
            false => {
                entry.writing = true;
                Step::StartSeries(Box::new(entry.event.clone()))
            }
        }
    }

    /// The series with unwritten counts and no write under way, now marked as being written.
    fn take_unwritten(&mut self) -> Vec<(Key, K8sEvent)> {
        self.events
            .iter_mut()
            .filter(|(_, entry)| entry.unwritten && !entry.writing)
            .map(|(key, entry)| {
                entry.unwritten = false;
                entry.writing = true;
                (key.clone(), entry.event.clone())
            })
            .collect()
    }

    /// Ends the write of `key`'s series; a failed one is tried again by the flusher.
    fn written(&mut self, key: &Key, failed: bool) {
        if let Some(entry) = self.events.get_mut(key) {
            entry.writing = false;
            entry.unwritten |= failed;
        }
    }
}

/// Publishes Events for the controllers of a process; cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    cache: Arc<Mutex<Cache>>,
    flush_every: Duration,
}

impl Recorder {
    /// A recorder reporting as `reporter`.
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Recorder {
            client,
            reporter,
            cache: Arc::default(),
            flush_every: FLUSH_EVERY,
        }
    }

    /// Publishes an Event about `object` whose action is its reason, as the controllers'
    /// Events are. Events are for people: a failure to publish one is logged, not returned,
    /// so it never fails a reconcile.
    pub async fn note<K: kube::Resource<DynamicType = ()>>(
        &self,
        object: &K,
        type_: kube::runtime::events::EventType,
        reason: &str,
        note: String,
    ) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: reason.into(),
            secondary: None,
        };
        if let Err(error) = self.publish(&event, &object.object_ref(&())).await {
            tracing::warn!(%error, reason, "Publishing an Event failed");
        }
    }

    /// Creates the Event about `regarding`, or counts a repeat in the series of the first.
    /// Events of cluster-scoped objects go to the `default` namespace.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = Key {
            type_: type_name(event.type_),
            action: event.action.clone(),
            reason: event.reason.clone(),
            regarding: regarding.into(),
            related: event.secondary.as_ref().map(Reference::from),
        };
        let step = {
            let mut cache = self.cache.lock().expect("event cache lock");
            let step = cache.observe(&key, now);
            if matches!(step, Step::Counted) {
                self.start_flusher(&mut cache);
            }
            step
        };
        match step {
            Step::Counted => Ok(()),
            Step::StartSeries(earlier) => {
                let written = write_series(&self.client, &earlier).await;
                let mut cache = self.cache.lock().expect("event cache lock");
                cache.written(&key, written.is_err());
                if written.is_err() {
                    // Left for the flusher to write, even if the series never repeats again.
                    self.start_flusher(&mut cache);
                }
                written
            }
            Step::Create => {
                let new = self.new_event(event, regarding, now);
                let namespace = regarding.namespace.as_deref().unwrap_or("default");
                let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
                api.create(&PostParams::default(), &new).await?;
                self.cache.lock().expect("event cache lock").events.insert(
                    key,
                    Entry {
                        event: new,
                        unwritten: false,
                        writing: false,
                    },
                );
                Ok(())
            }
        }
    }

    /// Starts the task that writes unwritten series, unless it runs.
    fn start_flusher(&self, cache: &mut Cache) {
        if !cache.flushing {
            cache.flushing = true;
            tokio::spawn(flush_every(
                self.client.clone(),
                Arc::downgrade(&self.cache),
                self.flush_every,
            ));
        }
    }

    /// Writes the series counted since their last write now, instead of at the flusher's next
    /// round.
    pub async fn flush(&self) {
        flush(&self.client, &self.cache).await;
    }

    fn new_event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let controller = &self.reporter.controller;
        K8sEvent {
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_deref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..Default::default()
            },
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            type_: Some(type_name(event.type_).to_owned()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| controller.clone()),
            ),
            ..Default::default()
        }
    }
}

/// Patches `event`'s series onto the stored Event.
async fn write_series(client: &Client, event: &K8sEvent) -> Result<(), kube::Error> {
    let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), namespace);
    let patch = serde_json::json!({ "series": event.series });
    api.patch(
        &event.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(drop)
}

/// Writes every series with unwritten counts; one that fails is tried again next time, unless
/// its Event is gone.
async fn flush(client: &Client, cache: &Mutex<Cache>) {
    let unwritten = cache.lock().expect("event cache lock").take_unwritten();
    for (key, event) in unwritten {
        let failed = match write_series(client, &event).await {
            Ok(()) => false,
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                tracing::debug!(event = event.name_any(), "The Event of a series is gone");
                false
            }
            Err(error) => {
                tracing::debug!(%error, event = event.name_any(), "Failed to write an Event series");
                true
            }
        };
        cache
            .lock()
            .expect("event cache lock")
            .written(&key, failed);
    }
}

/// The flusher: every `period` until the recorder is dropped.
async fn flush_every(client: Client, cache: Weak<Mutex<Cache>>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(cache) = cache.upgrade() else {
            return;
        };
        flush(&client, &cache).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Resource;

    fn event(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(note.into()),
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    fn recorder(env: &corral_testenv::TestEnv, flush_every: Duration) -> Recorder {
        let mut recorder = Recorder::new(
            env.client.clone(),
            Reporter {
                controller: "corral".into(),
                instance: None,
            },
        );
        recorder.flush_every = flush_every;
        recorder
    }

    async fn events(env: &corral_testenv::TestEnv) -> Vec<K8sEvent> {
        let api: Api<K8sEvent> = Api::namespaced(env.client.clone(), "default");
        let mut events = api.list(&Default::default()).await.unwrap().items;
        events.sort_by_key(|event| event.reason.clone());
        events
    }

    /// A reference to the ConfigMap `default/subject`, what the tests' Events are about.
    fn subject() -> ObjectReference {
        let mut map = ConfigMap::default();
        map.metadata.name = Some("subject".into());
        map.metadata.namespace = Some("default".into());
        map.object_ref(&())
    }

    fn count(event: &K8sEvent) -> Option<i32> {
        event.series.as_ref().map(|series| series.count)
    }

    #[tokio::test]
    async fn repeats_join_the_first_events_series_and_other_reasons_get_their_own() {
        let env = corral_testenv::TestEnv::start().await;
        // No flusher round during the test: what is written is what `publish` and `flush` wrote.
        let recorder = recorder(&env, Duration::from_secs(3600));
        let regarding = subject();
        for note in ["first", "second", "third", "fourth"] {
            recorder
                .publish(&event("Failed", note), &regarding)
                .await
                .unwrap();
        }
        recorder
            .publish(&event("Other", "other"), &regarding)
            .await
            .unwrap();

        let events = events(&env).await;
        assert_eq!(events.len(), 2, "{events:?}");
        let failed = &events[0];
        assert_eq!(failed.reason.as_deref(), Some("Failed"));
        assert_eq!(
            failed.note.as_deref(),
            Some("first"),
            "a series keeps the first note"
        );
        assert_eq!(
            count(failed),
            Some(2),
            "the first repeat starts the series at once, later ones are only counted"
        );
        assert_eq!(failed.type_.as_deref(), Some("Warning"));
        assert_eq!(failed.reporting_controller.as_deref(), Some("corral"));
        assert_eq!(
            failed.regarding.as_ref().and_then(|r| r.name.as_deref()),
            Some("subject")
        );
        let other = &events[1];
        assert_eq!(other.note.as_deref(), Some("other"));
        assert!(other.series.is_none());

        recorder.flush().await;
        let events = self::events(&env).await;
        assert_eq!(
            count(&events[0]),
            Some(4),
            "a flush writes the counted repeats"
        );
        let version = events[0].resource_version();
        recorder.flush().await;
        assert_eq!(
            self::events(&env).await[0].resource_version(),
            version,
            "nothing counted since, nothing written"
        );
    }

    #[tokio::test]
    async fn the_flusher_writes_counted_repeats_on_its_own() {
        let env = corral_testenv::TestEnv::start().await;
        let recorder = recorder(&env, Duration::from_millis(100));
        let regarding = subject();
        for _ in 0..5 {
            recorder
                .publish(&event("Failed", "again"), &regarding)
                .await
                .unwrap();
        }
        let mut counts = Vec::new();
        for _ in 0..100 {
            counts.push(events(&env).await.first().and_then(count));
            if counts.last() == Some(&Some(5)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the series never reached 5: {counts:?}");
    }

    fn key() -> Key {
        Key {
            type_: "Normal",
            action: "A".into(),
            reason: "R".into(),
            regarding: (&ObjectReference::default()).into(),
            related: None,
        }
    }

    fn entry(time: Timestamp) -> Entry {
        Entry {
            event: K8sEvent {
                event_time: Some(MicroTime(time)),
                ..Default::default()
            },
            unwritten: false,
            writing: false,
        }
    }

    #[test]
    fn expired_events_start_a_new_series_and_are_swept() {
        let mut cache = Cache::default();
        let start = Timestamp::now();
        cache.events.insert(key(), entry(start));
        assert!(matches!(
            cache.observe(&key(), start + SignedDuration::from_mins(5)),
            Step::StartSeries(_)
        ));
        let mut cache = Cache::default();
        cache.events.insert(key(), entry(start));
        let later = start + SignedDuration::from_mins(7);
        assert!(
            matches!(cache.observe(&key(), later), Step::Create),
            "past the series TTL"
        );
        assert!(cache.events.is_empty(), "swept once a minute has passed");
    }

    #[test]
    fn a_series_being_written_is_not_written_twice_at_once_and_unwritten_counts_outlive_the_sweep()
    {
        let mut cache = Cache::default();
        let start = Timestamp::now();
        cache.events.insert(key(), entry(start));
        let Step::StartSeries(first) = cache.observe(&key(), start) else {
            panic!("the first repeat starts the series");
        };
        assert_eq!(count(&first), Some(2));
        assert!(matches!(cache.observe(&key(), start), Step::Counted));
        assert!(
            cache.take_unwritten().is_empty(),
            "the series' first write is under way"
        );
        cache.written(&key(), false);
        let taken = cache.take_unwritten();
        assert_eq!(taken.len(), 1);
        assert_eq!(count(&taken[0].1), Some(3));
        cache.written(&key(), true);
        // A failed write is tried again, even once the series has expired.
        let later = start + SignedDuration::from_mins(7);
        assert!(matches!(cache.observe(&other_key(), later), Step::Create));
        assert_eq!(cache.events.len(), 1, "kept until written");
        assert_eq!(cache.take_unwritten().len(), 1);
    }

    fn other_key() -> Key {
        Key {
            reason: "Other".into(),
            ..key()
        }
    }
}
