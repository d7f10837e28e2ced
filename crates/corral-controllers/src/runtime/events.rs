//! Events (`events.k8s.io/v1`), written as kube-runtime's `Recorder` and client-go's event
//! recorder write them: the first occurrence creates an Event named `<object>.<nanoseconds in
//! hex>`; a repeat within six minutes (same object, type, action, reason, reporter and related
//! object) patches that Event's `series` (count, last observed time) instead of creating
//! another, keeping the first note.
//!
//! Why not kube-runtime's `Recorder`: it scans its whole cache of recent Events, under a lock
//! every publish waits for, on each publish, so publishing costs O(Events of the last six
//! minutes) — a rollout of 10,000 Machines publishes about 30,000. Here expired entries are
//! swept at most once a minute and ignored when found, and the lock is never held across a
//! request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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

#[derive(Default)]
struct Cache {
    events: HashMap<Key, K8sEvent>,
    swept: Option<Timestamp>,
}

impl Cache {
    /// The Event a repeat at `now` joins, if any; sweeps expired entries now and then.
    fn recent(&mut self, key: &Key, now: Timestamp) -> Option<K8sEvent> {
        let fresh = |event: &K8sEvent| last_seen(event).is_none_or(|seen| seen + SERIES_TTL > now);
        if self.swept.is_none_or(|swept| swept + SWEEP_EVERY <= now) {
            self.events.retain(|_, event| fresh(event));
            self.swept = Some(now);
        }
        self.events.get(key).filter(|event| fresh(event)).cloned()
    }
}

/// Publishes Events for the controllers of a process; cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    cache: Arc<Mutex<Cache>>,
}

impl Recorder {
    /// A recorder reporting as `reporter`.
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Recorder {
            client,
            reporter,
            cache: Arc::default(),
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
        let recent = self
            .cache
            .lock()
            .expect("event cache lock")
            .recent(&key, now);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let written = match recent {
            Some(mut earlier) => {
                let count = earlier.series.as_ref().map_or(2, |series| series.count + 1);
                earlier.series = Some(EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                });
                api.patch(
                    &earlier.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&earlier),
                )
                .await?;
                earlier
            }
            None => {
                let new = self.new_event(event, regarding, now);
                api.create(&PostParams::default(), &new).await?;
                new
            }
        };
        self.cache
            .lock()
            .expect("event cache lock")
            .events
            .insert(key, written);
        Ok(())
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

    #[tokio::test]
    async fn repeats_join_the_first_events_series_and_other_reasons_get_their_own() {
        let env = corral_testenv::TestEnv::start().await;
        let recorder = Recorder::new(
            env.client.clone(),
            Reporter {
                controller: "corral".into(),
                instance: None,
            },
        );
        let mut map = ConfigMap::default();
        map.metadata.name = Some("subject".into());
        map.metadata.namespace = Some("default".into());
        let regarding = map.object_ref(&());
        recorder
            .publish(&event("Failed", "first"), &regarding)
            .await
            .unwrap();
        recorder
            .publish(&event("Failed", "second"), &regarding)
            .await
            .unwrap();
        recorder
            .publish(&event("Failed", "third"), &regarding)
            .await
            .unwrap();
        recorder
            .publish(&event("Other", "other"), &regarding)
            .await
            .unwrap();

        let api: Api<K8sEvent> = Api::namespaced(env.client.clone(), "default");
        let mut events = api.list(&Default::default()).await.unwrap().items;
        events.sort_by_key(|event| event.reason.clone());
        assert_eq!(events.len(), 2, "{events:?}");
        let failed = &events[0];
        assert_eq!(failed.reason.as_deref(), Some("Failed"));
        assert_eq!(
            failed.note.as_deref(),
            Some("first"),
            "a series keeps the first note"
        );
        assert_eq!(failed.series.as_ref().map(|series| series.count), Some(3));
        assert_eq!(failed.type_.as_deref(), Some("Warning"));
        assert_eq!(failed.reporting_controller.as_deref(), Some("corral"));
        assert_eq!(
            failed.regarding.as_ref().and_then(|r| r.name.as_deref()),
            Some("subject")
        );
        let other = &events[1];
        assert_eq!(other.note.as_deref(), Some("other"));
        assert!(other.series.is_none());
    }

    #[test]
    fn expired_events_start_a_new_series_and_are_swept() {
        let mut cache = Cache::default();
        let key = Key {
            type_: "Normal",
            action: "A".into(),
            reason: "R".into(),
            regarding: (&ObjectReference::default()).into(),
            related: None,
        };
        let start = Timestamp::now();
        let event = K8sEvent {
            event_time: Some(MicroTime(start)),
            ..Default::default()
        };
        cache.events.insert(key.clone(), event);
        assert!(
            cache
                .recent(&key, start + SignedDuration::from_mins(5))
                .is_some()
        );
        let later = start + SignedDuration::from_mins(7);
        assert!(cache.recent(&key, later).is_none(), "past the series TTL");
        assert!(cache.events.is_empty(), "swept once a minute has passed");
    }
}
