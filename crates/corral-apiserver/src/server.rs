//! The server: shared state, request routing with authentication, and the listener (plain HTTP,
//! or HTTPS with `tls.rs`) with graceful shutdown.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use corral_store::{DynStore, Revision};
use http::{Method, StatusCode};
use serde_json::Value;

use crate::auth::{Authenticator, Credential, UserInfo};
use crate::error::ApiError;
use crate::patch::{Patch, PatchType};
use crate::query::Query;
use crate::registry::Registry;
use crate::rest::{self, Change, DeleteOptions, Target, json_response};
use crate::watch::WatchTimings;
use crate::watch_cache::{WatchCacheConfig, WatchHub};
use crate::{body, crd, discovery, namespaces, object, render, watch};

/// Settings of a server.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub watch_cache: WatchCacheConfig,
    pub watch: WatchTimings,
    /// How often the store's history is compacted, each time up to the revision seen one
    /// interval earlier (kube-apiserver compacts every 5 minutes the same way); `None` never.
    pub compaction_interval: Option<std::time::Duration>,
    /// HTTPS; `None` serves plain HTTP (the library's default, for tests on loopback).
    pub tls: Option<crate::tls::TlsConfig>,
    /// How requests are authenticated (see `auth/`); `None` authenticates nothing and every
    /// request is [`UserInfo::unsecured`]. Client certificates need [`ServerConfig::tls`] with
    /// a client CA.
    pub authentication: Option<crate::auth::AuthenticationConfig>,
    /// RBAC authorization (see `rbac/`): requests are authorized, and the bootstrap policy is
    /// created at start; off (the library's default, for tests) authorizes everything.
    pub rbac: bool,
    /// The kinds' own admission rules (upstream's defaulting and validating webhooks), run on
    /// every write of those kinds; see `admission.rs`.
    pub admission: corral_admission::RuleSet,
    /// Encryption at rest (`--encryption-provider-config`, see `encryption.rs`): the store is
    /// wrapped so that configured resources are stored encrypted; `None` stores plaintext.
    pub encryption: Option<Arc<crate::encryption::Encryption>>,
    /// The audit log (`--audit-policy-file`, `--audit-log-path`, see `audit.rs`); `None`
    /// records nothing.
    pub audit: Option<Arc<crate::audit::Auditor>>,
    /// In-flight requests, watches per user, slow clients (see `limits.rs`).
    pub limits: crate::limits::LimitsConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            watch_cache: WatchCacheConfig::default(),
            watch: WatchTimings::default(),
            compaction_interval: Some(std::time::Duration::from_secs(300)),
            tls: None,
            authentication: None,
            rbac: false,
            admission: Default::default(),
            encryption: None,
            audit: None,
            limits: Default::default(),
        }
    }
}

/// What every request handler shares.
pub struct ApiState {
    pub store: DynStore,
    pub registry: Registry,
    /// The OpenAPI documents of the registry's current state; see `openapi.rs`.
    pub(crate) openapi: crate::openapi::Cache,
    pub hub: WatchHub,
    pub config: ServerConfig,
    /// Namespaces whose cleanup is running.
    pub(crate) cleanups: Mutex<HashSet<String>>,
    /// Which namespaces exist; see `namespaces::Cache`.
    pub(crate) namespace_cache: namespaces::Cache,
    /// The garbage collector; see `gc.rs`.
    pub(crate) gc: crate::gc::Collector,
    /// The admission webhook configurations, compiled; see `webhook/`.
    pub(crate) webhooks: crate::webhook::Webhooks,
    /// The RBAC objects, compiled for the authorizer; see `rbac/`.
    pub(crate) rbac: crate::rbac::Rbac,
    /// The in-flight and watch counters; see `limits.rs`.
    pub(crate) limits: crate::limits::Limits,
    /// Set by [`Server::shutdown`]: background work whose watch ends stops instead of reading
    /// again (the shutdown closes every watch).
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    this: Weak<ApiState>,
}

impl ApiState {
    /// Prepares the store (initial namespaces, CRDs) and starts the background work, without
    /// a listener: for embedding several API servers behind one listener, with
    /// [`serve_request`]. The background work stops when the last handle is dropped.
    pub async fn start(store: DynStore, config: ServerConfig) -> Result<Arc<ApiState>, ApiError> {
        let store: DynStore = match &config.encryption {
            Some(encryption) => Arc::new(crate::encryption::EncryptedStore::new(
                store,
                encryption.clone(),
            )),
            None => store,
        };
        let state = Arc::new_cyclic(|this| ApiState {
            hub: WatchHub::new(store.clone(), config.watch_cache.clone()),
            store,
            limits: crate::limits::Limits::new(config.limits.clone()),
            registry: Registry::with_builtins(),
            openapi: Default::default(),
            config,
            cleanups: Mutex::new(HashSet::new()),
            namespace_cache: Default::default(),
            gc: crate::gc::Collector::new(),
            webhooks: Default::default(),
            rbac: Default::default(),
            stopping: Default::default(),
            this: this.clone(),
        });
        namespaces::ensure_initial(&state).await?;
        namespaces::follow(&state).await?;
        load_crds(&state).await?;
        namespaces::resume_cleanups(&state).await?;
        follow_crds(&state).await?;
        crate::webhook::start(&state).await?;
        crate::rbac::start(&state).await?;
        crate::gc::start(&state);
        if let Some(interval) = state.config.compaction_interval {
            tokio::spawn(compact_periodically(Arc::downgrade(&state), interval));
        }
        Ok(state)
    }

    /// Ends every open watch, e.g. before the state is dropped.
    pub fn close_watches(&self) {
        self.hub.close_all();
    }

    pub fn self_handle(&self) -> Arc<ApiState> {
        self.this
            .upgrade()
            .expect("the state outlives its requests")
    }
}

/// A running server.
pub struct Server {
    state: Arc<ApiState>,
    local_addr: SocketAddr,
    https: bool,
    /// The identity of in-process clients, shared by their requests.
    in_process_user: Arc<UserInfo>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Prepares the store (initial namespaces, CRDs) and serves on `listener` until shut down.
    pub async fn start(
        listener: tokio::net::TcpListener,
        store: DynStore,
        config: ServerConfig,
    ) -> Result<Server, ApiError> {
        // Certificates first: a bad file fails the start before the store is touched.
        let tls = match &config.tls {
            Some(tls) => Some(
                crate::tls::server_config(tls)
                    .map_err(|e| ApiError::internal(format!("cannot serve HTTPS: {e}")))?,
            ),
            None => None,
        };
        let state = ApiState::start(store, config).await?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| ApiError::internal(format!("listener has no address: {e}")))?;
        let gate = match &state.config.authentication {
            Some(authentication) => {
                Gate::Authenticate(Arc::new(Authenticator::new(authentication.clone())))
            }
            None => Gate::Fixed(Arc::new(UserInfo::unsecured())),
        };
        let app = router(state.clone(), gate);
        let (shutdown, shutdown_signal) = tokio::sync::oneshot::channel::<()>();
        let https = tls.is_some();
        let task = match tls {
            Some((server_config, resolver)) => {
                let check_interval = state
                    .config
                    .tls
                    .as_ref()
                    .map_or(std::time::Duration::from_secs(60), |t| t.check_interval);
                crate::tls::keep_fresh(&resolver, check_interval);
                let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));
                let header_read_timeout = state.limits.header_read_timeout();
                tokio::spawn(serve_https(
                    listener,
                    acceptor,
                    app,
                    header_read_timeout,
                    shutdown_signal,
                ))
            }
            None => tokio::spawn(async move {
                // Without TCP_NODELAY, small writes such as watch events wait behind the peer's
                // delayed ACK (tens of milliseconds).
                let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                    let _ = tcp.set_nodelay(true);
                });
                let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                    let _ = shutdown_signal.await;
                });
                if let Err(error) = serve.await {
                    tracing::error!(%error, "Serving failed");
                }
            }),
        };
        Ok(Server {
            state,
            local_addr,
            https,
            in_process_user: Arc::new(UserInfo::controllers()),
            shutdown: Some(shutdown),
            task,
        })
    }

    /// The server as a tower service, for clients in the same process: `kube::Client::new(
    /// server.in_process(), "default")` sends its requests straight to the handler, without a
    /// socket, HTTP/1 framing or the kernel's loopback on either side. The requests are the same
    /// (same routes, same answers, same watches); only the wire is gone. In `corral up` and the
    /// scale benchmarks the controllers talk to their own server this way: the loopback TCP
    /// and hyper on both ends were about a quarter of the management plane's CPU.
    ///
    /// In-process clients are trusted without credentials, as [`UserInfo::controllers`].
    pub fn in_process(&self) -> axum::Router {
        router(
            self.state.clone(),
            Gate::Fixed(self.in_process_user.clone()),
        )
    }

    /// Like [`Server::in_process`], with the requests made as `user` (authorized as its
    /// requests over the wire would be).
    pub fn in_process_as(&self, user: UserInfo) -> axum::Router {
        router(self.state.clone(), Gate::Fixed(Arc::new(user)))
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// `https://ADDRESS` or `http://ADDRESS`, with the address listened on.
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.local_addr)
    }

    pub fn state(&self) -> &Arc<ApiState> {
        &self.state
    }

    /// Compacts the store at its current revision and expires the watch caches with it, so
    /// that watches resuming from an older resourceVersion get 410 Expired.
    pub async fn compact(&self) -> Result<Revision, ApiError> {
        let revision = self.state.store.current_revision().await?;
        self.state.store.compact(revision).await?;
        self.state.hub.expire(revision);
        Ok(revision)
    }

    /// Stops accepting requests and waits for open ones; open watches end.
    pub async fn shutdown(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.state.gc.stop();
        self.state
            .stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // Watches would keep a graceful shutdown waiting for their full length. A client whose
        // watch just ended may start another on its kept-alive connection before that
        // connection hears of the shutdown, so watches are closed until the server is done:
        // closing once left a workload cluster's server, and the deletion of its Cluster,
        // waiting until the ClusterCache gave the connection up (~50 s).
        loop {
            self.state.hub.close_all();
            tokio::select! {
                _ = &mut self.task => break,
                _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {}
            }
        }
    }
}

/// Compacts the store every `interval`, up to the revision seen at the previous tick, so that
/// history stays bounded while watches of the last interval can still resume.
async fn compact_periodically(state: Weak<ApiState>, interval: std::time::Duration) {
    let mut previous: Option<Revision> = None;
    loop {
        tokio::time::sleep(interval).await;
        let Some(state) = state.upgrade() else { return };
        let current = match state.store.current_revision().await {
            Ok(current) => current,
            Err(error) => {
                tracing::warn!(%error, "Reading the revision for compaction failed");
                continue;
            }
        };
        if let Some(revision) = previous {
            match state.store.compact(revision).await {
                Ok(()) => tracing::debug!(revision, "Compacted the store"),
                Err(error) => tracing::warn!(%error, revision, "Compacting the store failed"),
            }
        }
        previous = Some(current);
    }
}

/// Registers the resources of every stored CRD.
async fn load_crds(state: &ApiState) -> Result<(), ApiError> {
    let page = state
        .store
        .range(corral_store::RangeRequest {
            prefix: "/registry/apiextensions.k8s.io/customresourcedefinitions/".into(),
            ..Default::default()
        })
        .await?;
    for kv in page.kvs {
        let crd = object::decode_stored(&kv)?;
        if object::deletion_timestamp(&crd).is_none() {
            if let Some(resource) = crd::resource_info(&crd) {
                state.registry.insert(resource);
            }
        } else {
            // Deleted while the server was down: finish the cleanup.
            crd::start_cleanup(state.self_handle(), crd);
        }
    }
    Ok(())
}

/// Keeps the registry in step with CRDs written by other servers sharing the store.
async fn follow_crds(state: &Arc<ApiState>) -> Result<(), ApiError> {
    let prefix = "/registry/apiextensions.k8s.io/customresourcedefinitions/";
    let cacher = state.hub.cacher(prefix).await?;
    let after = state.store.current_revision().await?;
    let Ok(mut subscription) = cacher.subscribe(after) else {
        return Ok(());
    };
    let weak = Arc::downgrade(state);
    tokio::spawn(async move {
        while let Some(event) = subscription.receiver.recv().await {
            let Some(state) = weak.upgrade() else { return };
            let deleted = event.kind == corral_store::EventKind::Delete;
            let Some(resource) = crd::resource_info(&event.object) else {
                continue;
            };
            if deleted {
                // The event may arrive after the CRD was created again (by this server, which
                // registered it at once): only a CRD that is still gone stops being served.
                let key = format!("{prefix}{}", object::name(&event.object).unwrap_or(""));
                if matches!(state.store.get(&key, None).await, Ok(Some(_))) {
                    continue;
                }
                if state
                    .registry
                    .remove(&resource.group, &resource.plural)
                    .is_some()
                {
                    state.hub.remove(&resource.key_prefix());
                }
            } else if object::deletion_timestamp(&event.object).is_some() {
                // Being deleted (by any server sharing the store): no longer served, unless
                // the event arrives after the CRD was deleted and created again.
                let key = format!("{prefix}{}", object::name(&event.object).unwrap_or(""));
                let stored = state.store.get(&key, None).await;
                let recreated = match &stored {
                    Ok(Some(kv)) => object::decode_stored(kv)
                        .is_ok_and(|crd| object::uid(&crd) != object::uid(&event.object)),
                    _ => false,
                };
                if recreated {
                    continue;
                }
                if state
                    .registry
                    .remove(&resource.group, &resource.plural)
                    .is_some()
                {
                    state.hub.remove(&resource.key_prefix());
                }
            } else if object::deletion_timestamp(&event.object).is_none() {
                state.registry.insert(resource);
            }
        }
    });
    Ok(())
}

/// How the requests of a router get their user.
#[derive(Clone)]
enum Gate {
    /// All are this user: in-process clients, or a server without authentication.
    Fixed(Arc<UserInfo>),
    Authenticate(Arc<Authenticator>),
}

/// What a router's requests share.
#[derive(Clone)]
struct Front {
    state: Arc<ApiState>,
    gate: Gate,
}

/// The routes of a server over `state`: every request goes to [`handle`].
fn router(state: Arc<ApiState>, gate: Gate) -> axum::Router {
    axum::Router::new()
        .fallback(handle)
        .with_state(Front { state, gate })
}

/// Every request comes here: authenticated, then the path decides what it is.
async fn handle(State(front): State<Front>, request: Request) -> Response {
    match &front.state.config.audit {
        None => authenticated(front, request, None).await,
        Some(auditor) => {
            let mut pending = auditor.begin(&request);
            let response = authenticated(front, request, Some(&mut pending)).await;
            pending.finish(response).await
        }
    }
}

async fn authenticated(
    front: Front,
    mut request: Request,
    mut audit: Option<&mut crate::audit::Pending>,
) -> Response {
    let user = match &front.gate {
        Gate::Fixed(user) => user.clone(),
        Gate::Authenticate(authenticator) => match authenticator.authenticate(&request) {
            Ok(Credential::User(user)) => user,
            Ok(Credential::BootstrapToken(token)) => {
                match crate::auth::bootstrap_token::authenticate(&front.state, &token).await {
                    Some(user) => user,
                    None => return crate::auth::unauthorized(),
                }
            }
            Ok(Credential::ServiceAccountToken(token)) => {
                let tokens = front
                    .state
                    .config
                    .authentication
                    .as_ref()
                    .and_then(|authentication| authentication.service_accounts.clone());
                let user = match tokens {
                    Some(tokens) => {
                        crate::auth::service_account::authenticate(&front.state, &tokens, &token)
                            .await
                    }
                    None => None,
                };
                match user {
                    Some(user) => user,
                    None => return crate::auth::unauthorized(),
                }
            }
            Err(response) => {
                tracing::debug!(method = %request.method(), path = request.uri().path(), "Request unauthenticated");
                return response;
            }
        },
    };
    let authenticated = user.clone();
    let user = match crate::rbac::impersonate(&front.state, user, request.headers()) {
        Ok(user) => user,
        Err(error) => return error.into_response(),
    };
    if let Some(audit) = audit.as_deref_mut() {
        let impersonated = (!Arc::ptr_eq(&authenticated, &user)).then_some(&*user);
        audit.authenticated(&authenticated, impersonated);
    }
    // The limits protect against clients over the network; in-process clients (the
    // controllers of `corral up`) and unauthenticated test servers are not limited.
    let slot = match &front.gate {
        Gate::Fixed(_) => crate::limits::Slot::None,
        Gate::Authenticate(_) => match front.state.limits.admit(&user, &request) {
            Ok(slot) => slot,
            Err(error) => return error.into_response(),
        },
    };
    let authorized = crate::rbac::authorize_request(&front.state, &user, &request);
    if let Some(audit) = audit {
        if front.state.config.rbac {
            audit.authorized(authorized.is_ok());
        }
        request = match audit.capture_request(request).await {
            Ok(request) => request,
            Err(response) => return response,
        };
    }
    if let Err(error) = authorized {
        return error.into_response();
    }
    request.extensions_mut().insert(user.clone());
    let request = front.state.limits.limit_body(request);
    let response = crate::rbac::serving(user, serve_request(front.state, request)).await;
    crate::limits::hold(slot, response)
}

/// How long a client may take over the TLS handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves HTTPS on `listener` until `shutdown`, then waits for open connections. Each
/// connection's verified client certificate goes into its requests' extensions, for the
/// authenticator.
async fn serve_https(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: axum::Router,
    header_read_timeout: std::time::Duration,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    // A client that does not finish its headers in time, or stays idle between requests that
    // long, is disconnected (slowloris).
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(%error, "Accepting a connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // Without TCP_NODELAY, small writes such as watch events wait behind the peer's
        // delayed ACK (tens of milliseconds).
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let app = app.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let certificate =
                crate::auth::x509::client_certificate(stream.get_ref().1.peer_certificates());
            let service = hyper::service::service_fn(
                move |mut request: http::Request<hyper::body::Incoming>| {
                    if let Some(certificate) = &certificate {
                        request.extensions_mut().insert(certificate.clone());
                    }
                    request
                        .extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                    tower_service::Service::call(&mut app.clone(), request)
                },
            );
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            if let Err(error) = watcher.watch(connection.into_owned()).await {
                tracing::debug!(%peer, %error, "Connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Answers one request against `state`: what the listener of a [`Server`] does, for callers
/// that route requests to several API servers themselves.
pub async fn serve_request(state: Arc<ApiState>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let result = route(state, request).await;
    match result {
        Ok(response) => response,
        Err(error) => {
            if error.code.is_server_error() {
                tracing::warn!(%method, path, %error, "Request failed");
            } else {
                tracing::debug!(%method, path, %error, "Request refused");
            }
            error.into_response()
        }
    }
}

/// `/healthz` and `/readyz`: "ok", or, when the store cannot serve (kube-apiserver's `etcd`
/// check), 500 with kube-apiserver's listing of the checks, the reason withheld as there.
fn health(state: &ApiState, check: &str) -> Response {
    match state.store.ready() {
        Ok(()) => text("ok"),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("[+]ping ok\n[-]etcd failed: reason withheld\n{check} check failed\n"),
        )
            .into_response(),
    }
}

fn text(body: &'static str) -> Response {
    (
        StatusCode::OK,
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn route(state: Arc<ApiState>, request: Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let ["apis", crate::rbac::review::GROUP, "v1", rest @ ..] = segments.as_slice()
        && parts.method == Method::POST
    {
        let unsecured = Arc::new(UserInfo::unsecured());
        let user = parts
            .extensions
            .get::<Arc<UserInfo>>()
            .unwrap_or(&unsecured);
        if let Some(answer) =
            crate::rbac::review::serve(&state, user, rest, &parts.headers, body).await
        {
            return answer;
        }
        return Err(ApiError::no_route());
    }
    let accept = parts
        .headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let is_get = parts.method == Method::GET;
    match segments.as_slice() {
        ["livez", ..] if is_get => return Ok(text("ok")),
        [check @ ("healthz" | "readyz"), ..] if is_get => return Ok(health(&state, check)),
        ["version"] if is_get => return Ok(json_response(StatusCode::OK, &discovery::version())),
        [".well-known", "openid-configuration"] if is_get => {
            return crate::auth::service_account::discovery(&state, false, &parts.headers);
        }
        ["openid", "v1", "jwks"] if is_get => {
            return crate::auth::service_account::discovery(&state, true, &parts.headers);
        }
        ["openapi", "v2"] if is_get => return Ok(crate::openapi::v2(&parts.headers)),
        ["openapi", "v3"] if is_get => return Ok(crate::openapi::index(&state, &parts.headers)),
        ["openapi", "v3", document @ ..] if is_get => {
            let path = document.join("/");
            return crate::openapi::document(&state, &path, parts.uri.query(), &parts.headers);
        }
        ["api"] if is_get => {
            if discovery::wants_aggregated(&accept) {
                return Ok(aggregated_response(discovery::aggregated(
                    &state.registry,
                    true,
                )));
            }
            let address = parts
                .headers
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("")
                .to_string();
            return Ok(json_response(
                StatusCode::OK,
                &discovery::core_versions(&address),
            ));
        }
        ["apis"] if is_get => {
            if discovery::wants_aggregated(&accept) {
                return Ok(aggregated_response(discovery::aggregated(
                    &state.registry,
                    false,
                )));
            }
            return Ok(json_response(
                StatusCode::OK,
                &discovery::group_list(&state.registry),
            ));
        }
        ["api", "v1"] if is_get => {
            let list = discovery::resource_list(&state.registry, "", "v1")
                .ok_or_else(ApiError::no_route)?;
            return Ok(json_response(StatusCode::OK, &list));
        }
        ["apis", group] if is_get => {
            let group = discovery::group(&state.registry, group).ok_or_else(ApiError::no_route)?;
            return Ok(json_response(StatusCode::OK, &group));
        }
        ["apis", group, version] if is_get => {
            let list = discovery::resource_list(&state.registry, group, version)
                .ok_or_else(ApiError::no_route)?;
            return Ok(json_response(StatusCode::OK, &list));
        }
        _ => {}
    }
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => ("", *version, rest),
        ["apis", group, version, rest @ ..] if !rest.is_empty() => (*group, *version, rest),
        _ => return Err(ApiError::no_route()),
    };
    let target = parse_target(&state, group, version, rest)?;
    let query = Query::parse(parts.uri.query())?;
    resource_request(state, target, parts.method, parts.headers, query, body).await
}

fn aggregated_response(value: Value) -> Response {
    // fields_text: discovery.
    let body = serde_json::to_vec(&value).expect("JSON values serialize");
    (
        StatusCode::OK,
        [(
            http::header::CONTENT_TYPE,
            discovery::AGGREGATED_CONTENT_TYPE,
        )],
        body,
    )
        .into_response()
}

/// Parses `[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]]` against the registry.
fn parse_target(
    state: &ApiState,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Target, ApiError> {
    let namespace_subresources = ["status", "finalize"];
    let (namespace, rest) = match rest {
        // `namespaces/NAME/status` addresses the namespace itself in the core group.
        ["namespaces", _, sub] if group.is_empty() && namespace_subresources.contains(sub) => {
            (None, rest)
        }
        ["namespaces", namespace, tail @ ..] if !tail.is_empty() => (Some(*namespace), tail),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some(*name), None),
        [plural, name, subresource] => (*plural, Some(*name), Some(*subresource)),
        _ => return Err(ApiError::no_route()),
    };
    let resource = state
        .registry
        .lookup(group, version, plural)
        .ok_or_else(ApiError::no_route)?;
    if namespace.is_some() && !resource.namespaced {
        return Err(ApiError::no_route());
    }
    if let Some(subresource) = subresource {
        let served = match subresource {
            "status" => resource.status_subresource,
            "scale" => resource.scale.is_some(),
            "token" => {
                resource.builtin
                    && resource.group.is_empty()
                    && resource.plural == "serviceaccounts"
            }
            "approval" => {
                resource.builtin
                    && resource.group == crate::certificates::GROUP
                    && resource.plural == "certificatesigningrequests"
            }
            "finalize" => {
                resource.builtin && resource.group.is_empty() && resource.plural == "namespaces"
            }
            _ => false,
        };
        if !served {
            return Err(ApiError::no_route());
        }
    }
    if let Some(namespace) = namespace
        && namespace.is_empty()
    {
        return Err(ApiError::no_route());
    }
    Ok(Target {
        resource,
        version: version.to_string(),
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
    })
}

async fn resource_request(
    state: Arc<ApiState>,
    target: Target,
    method: Method,
    headers: http::HeaderMap,
    query: Query,
    request_body: Body,
) -> Result<Response, ApiError> {
    let namespaced_path_missing =
        target.resource.namespaced && target.namespace.is_none() && target.name.is_some();
    if namespaced_path_missing {
        return Err(ApiError::no_route());
    }
    let query = crate::apply::request_options(&method, &headers, query)?;
    let deprecation = target
        .resource
        .version(&target.version)
        .filter(|v| v.deprecated)
        .map(|v| {
            v.deprecation_warning.clone().unwrap_or_else(|| {
                format!(
                    "{} is deprecated",
                    target.resource.api_version(&target.version)
                )
            })
        });
    let mut response = match (method.clone(), target.name.clone()) {
        (method, Some(name)) if target.subresource.as_deref() == Some("scale") => {
            crate::scale::serve(
                &state,
                &target,
                &name,
                &method,
                &headers,
                &query,
                request_body,
            )
            .await?
        }
        (Method::GET, None) if query.watch => {
            let encoder = render::watch_encoder(&target, &headers, &query)?;
            watch::watch(state, target, query, encoder).await?
        }
        (Method::GET, None) => render::list(
            &target,
            &headers,
            &query,
            &rest::list(&state, &target, &query).await?,
        ),
        (Method::GET, Some(name)) => render::object(
            &target,
            &headers,
            &query,
            &rest::get(&state, &target, &name).await?,
        ),
        (Method::POST, Some(name)) if target.subresource.as_deref() == Some("token") => {
            let bytes = body::read(request_body).await?;
            let object = body::decode_object(&body::content_type(&headers), &bytes)?;
            crate::auth::service_account::token_request(&state, &target, &name, object).await?
        }
        (Method::POST, None) => {
            if target.resource.namespaced && target.namespace.is_none() {
                return Err(ApiError::method_not_allowed(
                    "a namespaced resource is created through its namespace's path",
                ));
            }
            let bytes = body::read(request_body).await?;
            let object = body::decode_object(&body::content_type(&headers), &bytes)?;
            rest::create(&state, &target, &query, object).await?
        }
        (Method::PUT, Some(name)) => {
            let bytes = body::read(request_body).await?;
            let object = body::decode_object(&body::content_type(&headers), &bytes)?;
            rest::update(&state, &target, &name, &query, Change::Replace(object)).await?
        }
        (Method::PATCH, Some(name)) => {
            let patch_type = PatchType::from_content_type(
                &body::content_type(&headers),
                &target.resource,
                &target.version,
            )?;
            let bytes = body::read(request_body).await?;
            if patch_type == PatchType::Apply {
                crate::apply::patch(&state, &target, &name, &query, &bytes).await?
            } else {
                let patch = Patch::decode(patch_type, &bytes)?;
                let change = Change::Patch(Box::new(move |current: &Value| patch.apply(current)));
                rest::update(&state, &target, &name, &query, change).await?
            }
        }
        (Method::DELETE, Some(name)) => {
            let bytes = body::read(request_body).await?;
            let options = DeleteOptions::parse(&query, &body::content_type(&headers), &bytes)?;
            let deleted = rest::delete(&state, &target, &name, &options).await?;
            rest::delete_response(&target, deleted, &options)
        }
        (Method::DELETE, None) => {
            let bytes = body::read(request_body).await?;
            let options = DeleteOptions::parse(&query, &body::content_type(&headers), &bytes)?;
            json_response(
                StatusCode::OK,
                &rest::delete_collection(&state, &target, &query, &options).await?,
            )
        }
        (method, _) => {
            return Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {method}"
            )));
        }
    };
    if let Some(warning) = deprecation
        && let Ok(value) = http::HeaderValue::from_str(&format!("299 - {warning:?}"))
    {
        response.headers_mut().append("Warning", value);
    }
    Ok(response)
}
