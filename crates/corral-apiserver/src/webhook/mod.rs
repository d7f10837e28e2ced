//! Admission webhooks (`admissionregistration.k8s.io/v1`): the Validating- and
//! MutatingWebhookConfigurations a server keeps compiled, and the calls admission makes to
//! them, with kube-apiserver's semantics (`k8s.io/apiserver/pkg/admission/plugin/webhook`).
//!
//! - Configurations are built-in, cluster-scoped resources. their strategy (`strategy/kinds.rs`) defaults and
//!   validates them on write ([`config`]) and tells [`Webhooks`] about every stored change,
//!   so a write admitted after a configuration was written sees it; a watch keeps the cache
//!   in step with other servers sharing the store. Nothing lists the store per request.
//! - [`mutate`] runs before schema defaulting and validation, [`validate`] after it (both
//!   from `admission::admit`); [`admit_delete`] runs on deletes (from `rest::delete`).
//!   Webhooks are taken in configuration-name order, then in the order listed. Mutating
//!   webhooks run one after the other, each seeing the previous one's patch; when a patch
//!   changed the object, earlier webhooks with `reinvocationPolicy: IfNeeded` run once more.
//!   Validating webhooks run concurrently; the first refusal in configuration order wins.
//! - A webhook is called when its `namespaceSelector` matches the labels of the object's
//!   namespace (or of a Namespace itself), its `objectSelector` the new or old object, a rule
//!   the request (or, with `matchPolicy: Equivalent`, another version of the resource, which
//!   it is then sent in), and all its `matchConditions` (CEL, feature `cel`) hold.
//! - A denial becomes the webhook's status (`admission webhook "<name>" denied the request:
//!   <message>`). A call that fails (timeout, refused connection, TLS, non-2xx, an answer
//!   that is not an AdmissionReview for this request) is ignored under `failurePolicy:
//!   Ignore` and is a 500 under `Fail`: `failed calling webhook "<name>": <reason>`.
//!
//! Not supported: AdmissionReview `v1beta1`, `authorizer` in match conditions, audit
//! annotations (there is no audit log), Warning headers for DELETE (a delete answers without
//! them). Requests on the configurations themselves never go to webhooks, as upstream. The
//! scale subresource reaches webhooks as the whole object, not as an `autoscaling/v1 Scale`.

mod client;
pub mod config;
pub mod openapi;
mod review;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, RwLock};

use corral_store::{EventKind, RangeRequest, Revision};
use serde_json::{Map, Value, json};

use crate::admission;
use crate::error::{ApiError, Cause, Subject};
use crate::registry::ResourceInfo;
use crate::rest::{DeleteOptions, Target};
use crate::server::ApiState;
use crate::{conversion, object};

pub use config::Kind;
use config::{Attributes, ConditionInput, Webhook};

// ---------------------------------------------------------------------------------------
// The configurations, compiled
// ---------------------------------------------------------------------------------------

/// Every webhook of a server's configurations, in calling order.
#[derive(Default)]
struct Snapshot {
    mutating: Vec<Arc<Webhook>>,
    validating: Vec<Arc<Webhook>>,
}

/// A configuration as last seen: the revision it was seen at and its webhooks (`None` once
/// deleted, so that older news of it is not taken for newer).
type Seen = (Revision, Option<Vec<Arc<Webhook>>>);

#[derive(Default)]
struct Inner {
    configurations: BTreeMap<(Kind, String), Seen>,
    snapshot: Arc<Snapshot>,
}

/// The compiled webhook configurations of a server, kept in step with the store.
#[derive(Default)]
pub struct Webhooks {
    inner: RwLock<Inner>,
}

impl Webhooks {
    fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.read().unwrap().snapshot.clone()
    }

    /// The configurations of a kind that currently exist.
    fn names(&self, kind: Kind) -> Vec<String> {
        let inner = self.inner.read().unwrap();
        inner
            .configurations
            .iter()
            .filter(|((k, _), (_, webhooks))| *k == kind && webhooks.is_some())
            .map(|((_, name), _)| name.clone())
            .collect()
    }

    /// Records the state of a configuration at `revision` (`None`: deleted). News older
    /// than what was already seen of that configuration is ignored.
    fn observe(&self, kind: Kind, name: &str, revision: Revision, object: Option<&Value>) {
        let webhooks = object.map(|object| {
            config::compile(kind, object)
                .into_iter()
                .map(Arc::new)
                .collect::<Vec<_>>()
        });
        let mut inner = self.inner.write().unwrap();
        let key = (kind, name.to_string());
        if let Some((seen, _)) = inner.configurations.get(&key)
            && *seen >= revision
        {
            return;
        }
        tracing::debug!(
            kind = kind.kind(),
            name,
            revision,
            deleted = webhooks.is_none(),
            "Updating the webhook configuration cache"
        );
        inner.configurations.insert(key, (revision, webhooks));
        let mut snapshot = Snapshot::default();
        for ((kind, _), (_, webhooks)) in &inner.configurations {
            let list = match kind {
                Kind::Mutating => &mut snapshot.mutating,
                Kind::Validating => &mut snapshot.validating,
            };
            list.extend(webhooks.iter().flatten().cloned());
        }
        inner.snapshot = Arc::new(snapshot);
    }
}

/// Loads the stored configurations and follows their changes (made by this server or any
/// other sharing the store) until the state is dropped.
pub async fn start(state: &Arc<ApiState>) -> Result<(), ApiError> {
    for kind in [Kind::Mutating, Kind::Validating] {
        let subscription = load(state, kind).await?;
        tokio::spawn(crate::follow::follow(
            Arc::downgrade(state),
            "webhook configurations",
            subscription,
            move |state, event| {
                let name = object::name(&event.object).unwrap_or("");
                let object = (event.kind == EventKind::Put).then_some(&*event.object);
                state.webhooks.observe(kind, name, event.revision, object);
            },
            Box::new(move |state| Box::pin(async move { load(&state, kind).await })),
        ));
    }
    Ok(())
}

/// Reads every configuration of a kind into the cache and subscribes to the changes after
/// that read. A configuration the read no longer finds counts as deleted then.
async fn load(
    state: &ApiState,
    kind: Kind,
) -> Result<Option<crate::watch_cache::Subscription>, ApiError> {
    let prefix = kind.key_prefix();
    // The cacher first: it replays history from before the read, so no change between the
    // read and the subscription is missed.
    let cacher = state.hub.cacher(&prefix).await?;
    let page = state
        .store
        .range(RangeRequest {
            prefix: prefix.clone(),
            ..Default::default()
        })
        .await?;
    let mut listed = HashSet::new();
    for kv in &page.kvs {
        let configuration = object::decode_stored(kv)?;
        let name = object::name(&configuration).unwrap_or("").to_string();
        state
            .webhooks
            .observe(kind, &name, kv.mod_revision, Some(&configuration));
        listed.insert(name);
    }
    for name in state.webhooks.names(kind) {
        if !listed.contains(&name) {
            state.webhooks.observe(kind, &name, page.revision, None);
        }
    }
    match cacher.subscribe(page.revision) {
        Ok(subscription) => Ok(Some(subscription)),
        Err(error) => {
            tracing::warn!(
                prefix,
                requested = error.requested,
                oldest = error.oldest,
                "Subscribing to webhook configuration changes failed"
            );
            Ok(None)
        }
    }
}

// ---------------------------------------------------------------------------------------
// The configuration resources (called by their strategy, `strategy/kinds.rs`)
// ---------------------------------------------------------------------------------------

/// Which configuration resource a request addresses, if any.
pub fn configuration_kind(target: &Target) -> Option<Kind> {
    let resource = &target.resource;
    if resource.builtin && resource.group == config::GROUP {
        Kind::from_plural(&resource.plural)
    } else {
        None
    }
}

/// Sets kube-apiserver's defaults on a configuration being written.
pub fn prepare(kind: Kind, object: &mut Value) {
    config::set_defaults(kind, object);
}

/// The field errors of a configuration being written.
pub fn validate_configuration(kind: Kind, object: &Value) -> Vec<Cause> {
    config::validate(kind, object)
}

fn revision_of(object: &Value) -> Revision {
    object::resource_version(object)
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// A configuration was stored (created, updated, marked for deletion).
pub fn after_write(state: &ApiState, kind: Kind, object: &Value) {
    let name = object::name(object).unwrap_or("");
    state
        .webhooks
        .observe(kind, name, revision_of(object), Some(object));
}

/// A configuration was deleted.
pub fn after_delete(state: &ApiState, kind: Kind, object: &Value) {
    let name = object::name(object).unwrap_or("");
    state
        .webhooks
        .observe(kind, name, revision_of(object), None);
}

// ---------------------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------------------

/// Why a webhook call did not yield an answer.
enum Failure {
    /// The call failed or the answer is unusable: the failure policy decides. The reason
    /// follows `failed calling webhook "<name>": `.
    Calling(String),
    /// The request is refused whatever the failure policy.
    Refused(Box<ApiError>),
}

fn refused(error: ApiError) -> Failure {
    Failure::Refused(Box::new(error))
}

/// The resource and version a webhook is sent the request in: the request's own, or an
/// equivalent one its rules name.
#[derive(Clone)]
struct Invocation {
    resource: Arc<ResourceInfo>,
    version: String,
}

/// One admission request as webhooks see it.
struct Dispatch<'a> {
    state: &'a ApiState,
    target: &'a Target,
    operation: &'static str,
    subresource: &'a str,
    name: String,
    /// The request's namespace: empty for cluster-scoped objects, the namespace's own name
    /// for requests on a namespace (as kube-apiserver's request info has it).
    namespace: String,
    dry_run: bool,
    /// The Create/Update/DeleteOptions of the request.
    options: Value,
    /// Labels of the request's namespace, read once if a namespaceSelector needs them.
    namespace_labels: Option<Result<Map<String, Value>, ApiError>>,
    /// Other versions of the resource and resources stored with it, found once if an
    /// `Equivalent` match needs them.
    equivalents: Option<Vec<Invocation>>,
}

fn is_namespaces(resource: &ResourceInfo) -> bool {
    resource.builtin && resource.group.is_empty() && resource.plural == "namespaces"
}

fn labels_of(object: Option<&Value>) -> Option<&Map<String, Value>> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    object.map(|object| object::labels(object).unwrap_or(&EMPTY))
}

fn options(kind: &str, query: &crate::query::Query) -> Value {
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if query.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(manager) = &query.field_manager {
        options["fieldManager"] = json!(manager);
    }
    if let Some(validation) = &query.field_validation {
        options["fieldValidation"] = json!(validation);
    }
    options
}

impl<'a> Dispatch<'a> {
    fn new(
        state: &'a ApiState,
        target: &'a Target,
        operation: &'static str,
        name: &str,
        dry_run: bool,
        options: Value,
    ) -> Dispatch<'a> {
        let namespace = if is_namespaces(&target.resource) {
            target.name.clone().unwrap_or_default()
        } else {
            target.namespace.clone().unwrap_or_default()
        };
        Dispatch {
            state,
            target,
            operation,
            subresource: target.subresource.as_deref().unwrap_or(""),
            name: name.to_string(),
            namespace,
            dry_run,
            options,
            namespace_labels: None,
            equivalents: None,
        }
    }

    fn for_write(
        state: &'a ApiState,
        request: &admission::Request<'a>,
        object: &Value,
    ) -> Dispatch<'a> {
        let (operation, options_kind) = match request.operation {
            admission::Operation::Create => ("CREATE", "CreateOptions"),
            admission::Operation::Update => ("UPDATE", "UpdateOptions"),
        };
        Dispatch::new(
            state,
            request.target,
            operation,
            object::name(object).unwrap_or(""),
            request.query.dry_run,
            options(options_kind, request.query),
        )
    }

    fn request_invocation(&self) -> Invocation {
        Invocation {
            resource: self.target.resource.clone(),
            version: self.target.version.clone(),
        }
    }

    fn attributes<'b>(&'b self, invocation: &'b Invocation) -> Attributes<'b> {
        Attributes {
            operation: self.operation,
            group: &invocation.resource.group,
            version: &invocation.version,
            resource: &invocation.resource.plural,
            subresource: self.subresource,
            namespace: &self.namespace,
        }
    }

    fn equivalents(&mut self) -> &[Invocation] {
        let target = self.target;
        let state = self.state;
        self.equivalents.get_or_insert_with(|| {
            let mut found = Vec::new();
            let prefix = target.resource.key_prefix();
            let mut resources = vec![target.resource.clone()];
            resources.extend(state.registry.all().into_iter().filter(|r| {
                r.key_prefix() == prefix
                    && (r.group != target.resource.group || r.plural != target.resource.plural)
            }));
            for resource in resources {
                for version in resource.versions.iter().filter(|v| v.served) {
                    let same =
                        Arc::ptr_eq(&resource, &target.resource) && version.name == target.version;
                    if !same {
                        found.push(Invocation {
                            resource: resource.clone(),
                            version: version.name.clone(),
                        });
                    }
                }
            }
            found
        })
    }

    /// Upstream's `MatchNamespaceSelector`.
    async fn namespace_matches(
        &mut self,
        webhook: &Webhook,
        object: Option<&Value>,
    ) -> Result<bool, ApiError> {
        let namespaces = is_namespaces(&self.target.resource);
        if self.namespace.is_empty() && !namespaces {
            return Ok(true);
        }
        if webhook.namespace_selector.is_everything() {
            return Ok(true);
        }
        let own_labels = namespaces
            && self.subresource.is_empty()
            && matches!(self.operation, "CREATE" | "UPDATE");
        if own_labels {
            return Ok(labels_of(object).is_some_and(|l| webhook.namespace_selector.matches(l)));
        }
        if self.namespace_labels.is_none() {
            let key = crate::namespaces::key(&self.namespace);
            let labels = match self.state.store.get(&key, None).await {
                Ok(Some(kv)) => object::decode_stored(&kv)
                    .map(|ns| object::labels(&ns).cloned().unwrap_or_default()),
                Ok(None) => Err(ApiError::not_found(Subject {
                    resource: "namespaces",
                    group: "",
                    name: &self.namespace,
                })),
                Err(error) => Err(ApiError::internal(format!(
                    "Internal error occurred: {}",
                    ApiError::from(error).message
                ))),
            };
            self.namespace_labels = Some(labels);
        }
        match self.namespace_labels.as_ref().expect("just read") {
            Ok(labels) => Ok(webhook.namespace_selector.matches(labels)),
            Err(error) => Err(error.clone()),
        }
    }

    /// Upstream's `ShouldCallHook`: selectors, rules (with equivalents), then match
    /// conditions. `object` is in storage shape, `old` in the request's shape.
    async fn should_call(
        &mut self,
        webhook: &Webhook,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Option<Invocation>, ApiError> {
        let namespace_match = self.namespace_matches(webhook, object).await;
        if matches!(namespace_match, Ok(false)) {
            return Ok(None);
        }
        if !webhook.object_selector.is_everything() {
            let selected = [object, old]
                .into_iter()
                .any(|o| labels_of(o).is_some_and(|l| webhook.object_selector.matches(l)));
            if !selected {
                return Ok(None);
            }
        }
        let request = self.request_invocation();
        let mut invocation = webhook
            .matches_rules(&self.attributes(&request))
            .then_some(request);
        if invocation.is_none() && webhook.equivalent {
            let equivalents = self.equivalents().to_vec();
            'rules: for rule in &webhook.rules {
                for equivalent in &equivalents {
                    if rule.matches(&self.attributes(equivalent)) {
                        invocation = Some(equivalent.clone());
                        break 'rules;
                    }
                }
            }
        }
        let Some(invocation) = invocation else {
            return Ok(None);
        };
        namespace_match?;
        if webhook.match_conditions.is_empty() {
            return Ok(Some(invocation));
        }
        let versioned_object = object.map(|o| self.versioned(&invocation, o));
        let versioned_old = old.map(|o| self.versioned_old(&invocation, o));
        let request = self.review_request("", &invocation, &Value::Null, &Value::Null);
        let input = ConditionInput {
            object: versioned_object.as_ref().unwrap_or(&Value::Null),
            old_object: versioned_old.as_ref().unwrap_or(&Value::Null),
            request: &request,
        };
        let mut errors = Vec::new();
        for condition in &webhook.match_conditions {
            match condition.evaluate(&input) {
                Ok(true) => {}
                Ok(false) => {
                    tracing::debug!(
                        webhook = webhook.name,
                        condition = condition.name,
                        "Skipping webhook: a match condition is false"
                    );
                    return Ok(None);
                }
                Err(error) => errors.push(error),
            }
        }
        if errors.is_empty() {
            return Ok(Some(invocation));
        }
        if webhook.fail_open {
            return Ok(None);
        }
        let error = if errors.len() == 1 {
            errors.remove(0)
        } else {
            format!("[{}]", errors.join(", "))
        };
        tracing::warn!(
            webhook = webhook.name,
            error,
            "Failed evaluating match conditions, failing closed"
        );
        Err(ApiError::forbidden(self.target.subject(&self.name), &error))
    }

    /// An object in storage shape, as the invocation's resource and version serve it.
    fn versioned(&self, invocation: &Invocation, object: &Value) -> Value {
        let mut object = object.clone();
        conversion::from_storage(&invocation.resource, &mut object);
        if let Some(map) = object.as_object_mut() {
            map.insert(
                "apiVersion".into(),
                json!(invocation.resource.api_version(&invocation.version)),
            );
            map.insert("kind".into(), json!(invocation.resource.kind));
        }
        object
    }

    /// The old object (in the request's shape), as the invocation serves it.
    fn versioned_old(&self, invocation: &Invocation, old: &Value) -> Value {
        let mut old = old.clone();
        conversion::to_storage(&self.target.resource, &mut old);
        self.versioned(invocation, &old)
    }

    /// A patched object back in storage shape.
    fn unversioned(&self, invocation: &Invocation, mut object: Value) -> Value {
        conversion::to_storage(&invocation.resource, &mut object);
        let (api_version, kind) = conversion::storage_type(&self.target.resource);
        if let Some(map) = object.as_object_mut() {
            map.insert("apiVersion".into(), json!(api_version));
            map.insert("kind".into(), json!(kind));
        }
        object
    }

    /// The `request` of an AdmissionReview.
    fn review_request(
        &self,
        uid: &str,
        invocation: &Invocation,
        object: &Value,
        old: &Value,
    ) -> Value {
        let request_resource = &self.target.resource;
        let mut request = json!({
            "uid": uid,
            "kind": {
                "group": invocation.resource.group,
                "version": invocation.version,
                "kind": invocation.resource.kind,
            },
            "resource": {
                "group": invocation.resource.group,
                "version": invocation.version,
                "resource": invocation.resource.plural,
            },
            "requestKind": {
                "group": request_resource.group,
                "version": self.target.version,
                "kind": request_resource.kind,
            },
            "requestResource": {
                "group": request_resource.group,
                "version": self.target.version,
                "resource": request_resource.plural,
            },
            "operation": self.operation,
            "userInfo": review::user_info(),
            "object": object,
            "oldObject": old,
            "dryRun": self.dry_run,
            "options": self.options,
        });
        for (field, value) in [
            ("subResource", self.subresource),
            ("requestSubResource", self.subresource),
            ("name", self.name.as_str()),
            ("namespace", self.namespace.as_str()),
        ] {
            if !value.is_empty() {
                request[field] = json!(value);
            }
        }
        request
    }

    /// Calls one webhook with the versioned objects (`null` where there is none).
    async fn call(
        &self,
        webhook: &Webhook,
        invocation: &Invocation,
        object: &Value,
        old: &Value,
    ) -> Result<review::Answer, Failure> {
        if self.dry_run && !matches!(webhook.side_effects.as_str(), "None" | "NoneOnDryRun") {
            return Err(refused(ApiError::bad_request(format!(
                "admission webhook \"{}\" does not support dry run",
                webhook.name
            ))));
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let review = json!({
            "apiVersion": review::API_VERSION,
            "kind": "AdmissionReview",
            "request": self.review_request(&uid, invocation, object, old),
        });
        let body = crate::object::fields_text::to_vec(&review);
        tracing::debug!(
            webhook = webhook.name,
            configuration = webhook.configuration,
            operation = self.operation,
            resource = invocation.resource.plural,
            name = self.name,
            "Calling admission webhook"
        );
        let answer = webhook
            .client
            .post(body.into(), webhook.timeout)
            .await
            .and_then(|bytes| review::verify(&uid, webhook.kind == Kind::Mutating, &bytes))
            .map_err(Failure::Calling)?;
        if !answer.allowed {
            return Err(refused(review::denial(
                &webhook.name,
                answer.status.as_ref(),
            )));
        }
        Ok(answer)
    }

    /// What a failure becomes: `None` to go on (failure policy Ignore), or the refusal.
    fn fail(&self, webhook: &Webhook, failure: Failure) -> Option<ApiError> {
        match failure {
            Failure::Refused(error) => {
                tracing::debug!(webhook = webhook.name, %error, "Rejected by webhook");
                Some(*error)
            }
            Failure::Calling(reason) => {
                let error = format!("failed calling webhook \"{}\": {reason}", webhook.name);
                if webhook.fail_open {
                    tracing::warn!(error, "Failed calling webhook, failing open");
                    None
                } else {
                    tracing::warn!(error, "Failed calling webhook, failing closed");
                    Some(ApiError::internal(format!(
                        "Internal error occurred: {error}"
                    )))
                }
            }
        }
    }

    /// Applies a mutating webhook's patch to the versioned object; returns the new object.
    fn apply_patch(
        &self,
        webhook: &Webhook,
        versioned: &Value,
        patch: &[u8],
    ) -> Result<Value, Failure> {
        let patch: json_patch::Patch = serde_json::from_slice(patch).map_err(|e| {
            Failure::Calling(format!(
                "received undecodable patch in webhook response: {e}"
            ))
        })?;
        let mut patched = versioned.clone();
        if patch.0.is_empty() {
            return Ok(patched);
        }
        if versioned.is_null() {
            return Err(refused(ApiError::internal(format!(
                "Internal error occurred: admission webhook \"{}\" attempted to modify the object, which is not supported for this operation",
                webhook.name
            ))));
        }
        json_patch::patch(&mut patched, &patch)
            .map_err(|e| refused(ApiError::internal(format!("Internal error occurred: {e}"))))?;
        let same_type = patched.get("apiVersion") == versioned.get("apiVersion")
            && patched.get("kind") == versioned.get("kind");
        if !patched.is_object() || !same_type {
            return Err(refused(ApiError::internal(format!(
                "Internal error occurred: admission webhook \"{}\" patched the object into something else: its apiVersion and kind must stay",
                webhook.name
            ))));
        }
        Ok(patched)
    }
}

fn exempt(target: &Target) -> bool {
    configuration_kind(target).is_some()
}

/// Runs the mutating webhooks over a create or update (object in storage shape), applying
/// their patches. Returns their warnings.
pub async fn mutate(
    state: &ApiState,
    request: &admission::Request<'_>,
    object: &mut Value,
) -> Result<Vec<String>, ApiError> {
    let snapshot = state.webhooks.snapshot();
    if snapshot.mutating.is_empty() || exempt(request.target) {
        return Ok(Vec::new());
    }
    let mut dispatch = Dispatch::for_write(state, request, object);
    let before = object.clone();
    let mut warnings = Vec::new();
    // Upstream's reinvocation context: webhooks with `IfNeeded` that ran since the last
    // change, and those to run again in the second round.
    let mut invoked_since_change: HashSet<usize> = HashSet::new();
    let mut reinvoke: HashSet<usize> = HashSet::new();
    let mut changed_any = false;
    for round in 0..2 {
        if round == 1 && (!changed_any || reinvoke.is_empty()) {
            break;
        }
        for (index, webhook) in snapshot.mutating.iter().enumerate() {
            let Some(invocation) = dispatch
                .should_call(webhook, Some(object), request.old)
                .await?
            else {
                continue;
            };
            if round == 1 && !reinvoke.contains(&index) {
                continue;
            }
            let versioned = dispatch.versioned(&invocation, object);
            let old = request
                .old
                .map(|old| dispatch.versioned_old(&invocation, old))
                .unwrap_or(Value::Null);
            let outcome = match dispatch.call(webhook, &invocation, &versioned, &old).await {
                Ok(answer) => {
                    warnings.extend(answer.warnings);
                    match answer.patch {
                        Some(patch) => dispatch.apply_patch(webhook, &versioned, &patch),
                        None => Ok(versioned.clone()),
                    }
                }
                Err(failure) => Err(failure),
            };
            let failure = match outcome {
                Ok(patched) => {
                    if patched != versioned {
                        *object = dispatch.unversioned(&invocation, patched);
                        changed_any = true;
                        reinvoke.extend(invoked_since_change.drain());
                    }
                    None
                }
                Err(failure) => Some(failure),
            };
            if webhook.reinvoke_if_needed {
                invoked_since_change.insert(index);
            }
            if let Some(failure) = failure
                && let Some(error) = dispatch.fail(webhook, failure)
            {
                return Err(error);
            }
        }
    }
    if *object != before {
        keep_server_fields(request, &before, object)?;
    }
    Ok(warnings)
}

/// What webhooks may not change: the identity and server-owned metadata of the object.
/// kube-apiserver sets these after mutating admission; here they were set before it, so
/// they are put back, and a changed namespace (or name, on updates) is refused as
/// kube-apiserver refuses it.
fn keep_server_fields(
    request: &admission::Request<'_>,
    before: &Value,
    object: &mut Value,
) -> Result<(), ApiError> {
    let target = request.target;
    if object::namespace(object) != object::namespace(before) {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let name = object::name(before).unwrap_or("").to_string();
    if request.operation == admission::Operation::Update
        && object::name(object) != object::name(before)
    {
        let new_name = object::name(object).unwrap_or("");
        return Err(ApiError::invalid(
            target.subject(&name),
            &target.resource.kind,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: field is immutable",
                    crate::selector::go_quote(new_name)
                ),
                field: "metadata.name".into(),
            }],
        ));
    }
    let before_meta = object::metadata(before).cloned().unwrap_or_default();
    let metadata = object::metadata_mut(object);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
    ] {
        match before_meta.get(field) {
            Some(value) => {
                metadata.insert(field.into(), value.clone());
            }
            None => {
                metadata.remove(field);
            }
        }
    }
    // A webhook's change to the spec counts for `generation` like the client's.
    if let Some(old) = request.old
        && target.resource.tracks_generation
        && object::same_spec_part(before, old)
        && !object::same_spec_part(object, old)
    {
        let generation = object::generation(old) + 1;
        object::metadata_mut(object).insert("generation".into(), json!(generation));
    }
    Ok(())
}

/// Runs the validating webhooks over a create or update (object in storage shape, after
/// schema defaulting and validation), concurrently. Returns their warnings.
pub async fn validate(
    state: &ApiState,
    request: &admission::Request<'_>,
    object: &Value,
) -> Result<Vec<String>, ApiError> {
    let snapshot = state.webhooks.snapshot();
    if snapshot.validating.is_empty() || exempt(request.target) {
        return Ok(Vec::new());
    }
    let mut dispatch = Dispatch::for_write(state, request, object);
    run_validating(&mut dispatch, &snapshot, Some(object), request.old).await
}

async fn run_validating(
    dispatch: &mut Dispatch<'_>,
    snapshot: &Snapshot,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<Vec<String>, ApiError> {
    let mut invocations = Vec::new();
    for webhook in &snapshot.validating {
        if let Some(invocation) = dispatch.should_call(webhook, object, old).await? {
            let versioned = object
                .map(|o| dispatch.versioned(&invocation, o))
                .unwrap_or(Value::Null);
            let versioned_old = old
                .map(|o| dispatch.versioned_old(&invocation, o))
                .unwrap_or(Value::Null);
            invocations.push((webhook, invocation, versioned, versioned_old));
        }
    }
    let dispatch = &*dispatch;
    let results = futures::future::join_all(invocations.iter().map(
        |(webhook, invocation, versioned, old)| async move {
            (
                webhook,
                dispatch.call(webhook, invocation, versioned, old).await,
            )
        },
    ))
    .await;
    let mut warnings = Vec::new();
    let mut refusal = None;
    for (webhook, result) in results {
        match result {
            Ok(answer) => warnings.extend(answer.warnings),
            Err(failure) => {
                if let Some(error) = dispatch.fail(webhook, failure) {
                    refusal.get_or_insert(error);
                }
            }
        }
    }
    match refusal {
        Some(error) => Err(error),
        None => Ok(warnings),
    }
}

/// Runs the webhooks whose rules include DELETE over a delete of `current` (in the
/// request's shape): the mutating ones see neither object (as upstream, which calls them
/// before reading the object), the validating ones see it as `oldObject`.
pub async fn admit_delete(
    state: &ApiState,
    target: &Target,
    name: &str,
    current: &Value,
    delete_options: &DeleteOptions,
) -> Result<(), ApiError> {
    let snapshot = state.webhooks.snapshot();
    let no_webhooks = snapshot.mutating.is_empty() && snapshot.validating.is_empty();
    if no_webhooks || exempt(target) {
        return Ok(());
    }
    let mut options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if delete_options.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let Some(policy) = delete_options.propagation_policy {
        options["propagationPolicy"] = json!(policy.as_str());
    }
    let mut preconditions = Map::new();
    if let Some(uid) = &delete_options.uid {
        preconditions.insert("uid".into(), json!(uid));
    }
    if let Some(rv) = &delete_options.resource_version {
        preconditions.insert("resourceVersion".into(), json!(rv));
    }
    if !preconditions.is_empty() {
        options["preconditions"] = Value::Object(preconditions);
    }
    let mut dispatch = Dispatch::new(
        state,
        target,
        "DELETE",
        name,
        delete_options.dry_run,
        options,
    );
    for webhook in &snapshot.mutating {
        let Some(invocation) = dispatch.should_call(webhook, None, None).await? else {
            continue;
        };
        let outcome = match dispatch
            .call(webhook, &invocation, &Value::Null, &Value::Null)
            .await
        {
            Ok(answer) => match answer.patch {
                Some(patch) => dispatch
                    .apply_patch(webhook, &Value::Null, &patch)
                    .map(|_| ()),
                None => Ok(()),
            },
            Err(failure) => Err(failure),
        };
        if let Err(failure) = outcome
            && let Some(error) = dispatch.fail(webhook, failure)
        {
            return Err(error);
        }
    }
    run_validating(&mut dispatch, &snapshot, None, Some(current))
        .await
        .map(|_| ())
}
