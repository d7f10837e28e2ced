//! [`Plugins`]: one `corral_provider_sdk::Client` per ProviderPlugin, made again when its
//! spec changes, and the check that a plugin may be called (its ProviderPlugin exists and is
//! Ready: reachable and speaking contract `v1`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corral_provider_sdk::{Client, ClientConfig, EndpointError};
use corral_runtime::SharedCache;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::api::{ProviderPlugin, ProviderPluginSpec};

/// The clients of the plugins, over the ProviderPlugins' shared cache.
pub struct Plugins {
    cache: SharedCache<ProviderPlugin>,
    clients: Mutex<HashMap<String, (ProviderPluginSpec, Client)>>,
    /// When each ProviderPlugin (by uid) is to be probed next, for the generation probed.
    next_probe: Mutex<HashMap<String, (Option<i64>, Instant)>>,
    /// The call slots of each plugin, by name.
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// How many calls one plugin may have in flight from one controller's reconciles.
pub const CALLS_PER_PLUGIN: usize = 16;

/// A plugin to call, and the call slot held while calling it.
pub(crate) struct PluginCall {
    pub client: Client,
    _slot: OwnedSemaphorePermit,
}

/// Why a plugin is not called now.
pub(crate) enum NotCallable {
    /// Missing, not Ready or incompatible: the message says which.
    NotReady(String),
    /// Every call slot is taken.
    Busy,
}

impl Plugins {
    pub(crate) fn new(cache: SharedCache<ProviderPlugin>) -> Self {
        Plugins {
            cache,
            clients: Mutex::new(HashMap::new()),
            next_probe: Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn cache(&self) -> &SharedCache<ProviderPlugin> {
        &self.cache
    }

    /// The client of `plugin`'s current spec.
    pub(crate) fn client(&self, plugin: &ProviderPlugin) -> Result<Client, EndpointError> {
        let name = kube::ResourceExt::name_any(plugin);
        let mut clients = self.clients.lock().expect("plugin clients lock");
        if let Some((spec, client)) = clients.get(&name)
            && *spec == plugin.spec
        {
            return Ok(client.clone());
        }
        let client = Client::new(&client_config(&plugin.spec))?;
        clients.insert(name, (plugin.spec.clone(), client.clone()));
        Ok(client)
    }

    /// The client of the plugin named `name` and one of its call slots, when it may be
    /// called.
    pub(crate) fn call(&self, name: &str) -> Result<PluginCall, NotCallable> {
        let client = self.ready_client(name).map_err(NotCallable::NotReady)?;
        let slots = self
            .slots
            .lock()
            .expect("plugin slots lock")
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(CALLS_PER_PLUGIN)))
            .clone();
        let slot = slots.try_acquire_owned().map_err(|_| NotCallable::Busy)?;
        Ok(PluginCall {
            client,
            _slot: slot,
        })
    }

    /// The client of the plugin named `name`, when it may be called; else why not, for a
    /// condition's message.
    fn ready_client(&self, name: &str) -> Result<Client, String> {
        let Some(plugin) = self.cache.get(&ObjectRef::new(name)) else {
            return Err(format!("ProviderPlugin {name} does not exist"));
        };
        if !plugin.is_ready() {
            let why = plugin
                .status
                .as_ref()
                .and_then(|status| {
                    corral_runtime::conditions::get(
                        &status.conditions,
                        crate::api::conditions::READY,
                    )
                })
                .map(|ready| ready.message.clone())
                .filter(|message| !message.is_empty())
                .unwrap_or_else(|| "not probed yet".to_owned());
            return Err(format!("ProviderPlugin {name} is not Ready: {why}"));
        }
        self.client(&plugin)
            .map_err(|error| format!("ProviderPlugin {name}: {error}"))
    }

    /// How long until the ProviderPlugin `uid` at `generation` is to be probed; `None`: now.
    pub(crate) fn probe_wait(&self, uid: &str, generation: Option<i64>) -> Option<Duration> {
        let next = self.next_probe.lock().expect("probe times lock");
        let (probed, at) = next.get(uid)?;
        (*probed == generation)
            .then(|| at.checked_duration_since(Instant::now()))
            .flatten()
    }

    /// Records a probe of the ProviderPlugin `uid` at `generation`, the next due `after`.
    pub(crate) fn probed(&self, uid: &str, generation: Option<i64>, after: Duration) {
        self.next_probe
            .lock()
            .expect("probe times lock")
            .insert(uid.to_owned(), (generation, Instant::now() + after));
    }

    /// Forgets the client of a deleted ProviderPlugin.
    pub(crate) fn forget(&self, name: &str) {
        self.clients
            .lock()
            .expect("plugin clients lock")
            .remove(name);
    }
}

/// The client settings of a ProviderPlugin's spec.
pub(crate) fn client_config(spec: &ProviderPluginSpec) -> ClientConfig {
    ClientConfig {
        endpoint: spec.endpoint.clone(),
        ca_bundle: spec.ca_bundle.clone(),
        timeout: spec
            .timeout_seconds
            .filter(|seconds| *seconds > 0)
            .map(|seconds| Duration::from_secs(seconds as u64))
            .unwrap_or(corral_provider_sdk::client::DEFAULT_TIMEOUT),
        insecure: spec.insecure == Some(true),
    }
}
