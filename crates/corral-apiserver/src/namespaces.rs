//! Namespace lifecycle: the namespaces that always exist, and the cleanup that empties a
//! deleted namespace before it goes away (kube-controller-manager's namespace controller).

use std::sync::Arc;
use std::time::Duration;

use corral_store::RangeRequest;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::object;
use crate::rest::{self, DeleteOptions, Target};
use crate::server::ApiState;

/// Namespaces kube-apiserver creates at start.
pub const INITIAL: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The storage key of a namespace.
pub fn key(name: &str) -> String {
    format!("/registry/core/namespaces/{name}")
}

fn namespace_target(state: &ApiState, subresource: Option<&str>) -> Target {
    Target {
        resource: state
            .registry
            .get("", "namespaces")
            .expect("namespaces are built in"),
        version: "v1".into(),
        namespace: None,
        name: None,
        subresource: subresource.map(str::to_string),
    }
}

/// Creates the initial namespaces that do not exist yet.
pub async fn ensure_initial(state: &ApiState) -> Result<(), ApiError> {
    let target = namespace_target(state, None);
    for name in INITIAL {
        if state.store.get(&key(name), None).await?.is_some() {
            continue;
        }
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        match rest::create(state, &target, &Default::default(), object).await {
            Ok(_) => {}
            Err(error) if error.reason == "AlreadyExists" => {}
            Err(error) => return Err(error),
        }
    }
    let issues_tokens = state
        .config
        .authentication
        .as_ref()
        .is_some_and(|authentication| authentication.service_accounts.is_some());
    if issues_tokens {
        for name in INITIAL {
            crate::auth::service_account::ensure_default(state, name).await?;
        }
    }
    Ok(())
}

/// Resumes the cleanup of namespaces that were being deleted when the server stopped.
pub async fn resume_cleanups(state: &Arc<ApiState>) -> Result<(), ApiError> {
    let page = state
        .store
        .range(RangeRequest {
            prefix: "/registry/core/namespaces/".into(),
            ..Default::default()
        })
        .await?;
    for kv in page.kvs {
        let namespace = object::decode_stored(&kv)?;
        if object::deletion_timestamp(&namespace).is_some()
            && let Some(name) = object::name(&namespace)
        {
            start_cleanup(state.clone(), name.to_string());
        }
    }
    Ok(())
}

/// Deletes everything in a terminating namespace, then removes its `kubernetes` finalizer
/// so that the namespace itself goes away. Runs until done; safe to start twice.
pub fn start_cleanup(state: Arc<ApiState>, namespace: String) {
    if !state.cleanups.lock().unwrap().insert(namespace.clone()) {
        return;
    }
    tokio::spawn(async move {
        let mut delay = Duration::from_millis(100);
        loop {
            match cleanup_pass(&state, &namespace).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(namespace, %error, "Cleaning up a terminating namespace failed; retrying")
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        state.cleanups.lock().unwrap().remove(&namespace);
    });
}

/// One pass: delete what is left; when nothing is, finalize. Returns whether it is done.
async fn cleanup_pass(state: &Arc<ApiState>, namespace: &str) -> Result<bool, ApiError> {
    let mut remaining = 0;
    // A resource stored as another is cleaned up through that one.
    let owners = state
        .registry
        .all()
        .into_iter()
        .filter(|r| r.namespaced && r.stored_as.is_none());
    for resource in owners {
        let target = Target {
            resource: resource.clone(),
            version: resource.storage_version().to_string(),
            namespace: Some(namespace.to_string()),
            name: None,
            subresource: None,
        };
        let page = state
            .store
            .range(RangeRequest {
                prefix: target.collection_prefix(),
                ..Default::default()
            })
            .await?;
        for kv in page.kvs {
            remaining += 1;
            let object = object::decode_stored(&kv)?;
            let Some(name) = object::name(&object) else {
                continue;
            };
            if object::deletion_timestamp(&object).is_some() {
                continue;
            }
            match rest::delete(state, &target, name, &DeleteOptions::default()).await {
                Ok(_) => {}
                Err(error) if error.code == http::StatusCode::NOT_FOUND => {}
                Err(error) => return Err(error),
            }
        }
    }
    if remaining > 0 {
        return Ok(false);
    }
    let target = namespace_target(state, Some("finalize"));
    let finalize = rest::Change::Patch(Box::new(|current: &Value| {
        let mut new = current.clone();
        if let Some(list) = new
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f != "kubernetes");
        }
        Ok(new)
    }));
    match rest::update(state, &target, namespace, &Default::default(), finalize).await {
        Ok(_) => Ok(true),
        Err(error) if error.code == http::StatusCode::NOT_FOUND => Ok(true),
        Err(error) => Err(error),
    }
}

/// Which namespaces exist and whether they are terminating, as kube-apiserver's
/// NamespaceLifecycle admission knows them from an informer: creates check it instead of
/// reading the store. Fed by this server's own namespace writes at once and by a watch of the
/// namespace resource (writes by other servers sharing the store). A name it does not know is
/// looked up in the store, so a namespace created elsewhere a moment ago is never refused.
#[derive(Default)]
pub struct Cache {
    /// Name → terminating.
    entries: std::sync::RwLock<std::collections::HashMap<String, bool>>,
}

impl Cache {
    /// `Some(terminating)` for a known namespace.
    pub fn lookup(&self, name: &str) -> Option<bool> {
        self.entries.read().unwrap().get(name).copied()
    }

    /// Records a namespace as stored.
    pub fn record(&self, namespace: &Value) {
        if let Some(name) = object::name(namespace) {
            let terminating = object::deletion_timestamp(namespace).is_some();
            self.entries
                .write()
                .unwrap()
                .insert(name.to_string(), terminating);
        }
    }

    pub fn forget(&self, name: &str) {
        self.entries.write().unwrap().remove(name);
    }
}

/// Fills the namespace cache and keeps it in step with the store.
pub async fn follow(state: &Arc<ApiState>) -> Result<(), ApiError> {
    let prefix = "/registry/core/namespaces/";
    let cacher = state.hub.cacher(prefix).await?;
    let page = state
        .store
        .range(RangeRequest {
            prefix: prefix.into(),
            ..Default::default()
        })
        .await?;
    for kv in &page.kvs {
        state.namespace_cache.record(&object::decode_stored(kv)?);
    }
    let Ok(mut subscription) = cacher.subscribe(page.revision) else {
        return Ok(());
    };
    let weak = Arc::downgrade(state);
    tokio::spawn(async move {
        while let Some(event) = subscription.receiver.recv().await {
            let Some(state) = weak.upgrade() else { return };
            match event.kind {
                corral_store::EventKind::Put => state.namespace_cache.record(&event.object),
                corral_store::EventKind::Delete => {
                    // A delete event may arrive after this server created the name again.
                    let name = object::name(&event.object).unwrap_or("").to_string();
                    if !matches!(state.store.get(&key(&name), None).await, Ok(Some(_))) {
                        state.namespace_cache.forget(&name);
                    }
                }
            }
        }
    });
    Ok(())
}
