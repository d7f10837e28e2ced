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
pub const INITIAL: [&str; 3] = ["default", "kube-system", "kube-public"];

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
        if object::deletion_timestamp(&namespace).is_some() {
            if let Some(name) = object::name(&namespace) {
                start_cleanup(state.clone(), name.to_string());
            }
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
