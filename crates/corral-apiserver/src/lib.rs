//! A Kubernetes-compatible API server over a `corral-store` backend.
//!
//! It serves built-in resources (namespaces, secrets, configmaps, events, leases, CRDs) and
//! every resource a CRD defines, with kube-apiserver's REST semantics, so that kubectl,
//! kube-rs and the official client libraries work against it unchanged. Objects are untyped
//! JSON; what is particular to a built-in kind is its strategy (`strategy/`).
//!
//! Entry point: [`Server::start`].
//!
//! # Map of the crate
//!
//! The Kubernetes-compatible API server. `server.rs` owns the shared state (`ApiState`), routing
//! and the listener. `registry.rs` knows which resources are served (built-ins plus CRD-defined
//! ones, added and removed by `crd.rs`). `rest/` implements the verbs (a module per verb)
//! generically over untyped JSON objects: server-owned metadata, optimistic concurrency,
//! finalizers, the status subresource; `strategy/` is what is particular to a resource: a
//! `Strategy` each resource carries in its `ResourceInfo` (namespaces, CRDs, Secrets, ConfigMaps,
//! webhook configurations, RBAC, CSRs; `GENERIC` for the rest). `watch_cache.rs` is one fan-out per
//! resource: a single store watch feeds every API watch, with a history for resumption bounded by
//! events and bytes (kept in stored form, decoded again for a watcher that resumes; an evicted
//! revision is 410 Expired), and drops watchers that do not keep up; `watch.rs` turns it into the
//! watch wire format (an event converted for one watcher — read-time defaulting, another version —
//! keeps the result for the next watchers of the same definition and version,
//! `CachedEvent::served`; a write's own answer in the storage version is that result for its
//! definition, since admission defaulted it with the schema a read applies; an event's previous
//! state is decoded only for a watcher with a field filter, a label filter reads only its stored
//! labels, `watch_cache::Previous`; a delete's object is the cacher's decoded previous copy). Each
//! cacher also keeps the current state of every key it has seen change (stored bytes, modification
//! revision, the decoded object it shared with watchers; one entry per live key, at most 64 MiB of
//! stored bytes per resource, `WatchCacheConfig::current_bytes`, the least recently written
//! forgotten first; all forgotten when the store watch lost events), plus the writes this server
//! made that its feed has not delivered yet (`Cacher::record_write`, up to 8 per key for a feed
//! that lags: the feed takes their object and JSON instead of decoding and serializing the event
//! again; since the feed may get an event before its writer has heard back, it waits at most 100 ms
//! for a write in flight on that key, `Cacher::begin_write`). `rest::update` and `rest::delete`
//! start from that copy instead of a store read and decode (see the invariants in ARCHITECTURE.md);
//! a copy this server wrote in the storage version is marked as already pruned and defaulted by its
//! CRD definition (`Current::shaped`), so an update of that definition skips a read's copy and walk
//! of it. `discovery.rs`, `patch.rs` (with `strategic_merge.rs`), `selector.rs`, `names.rs`,
//! `query.rs` and `body.rs` are the pure pieces. `object.rs` is the object as the server holds it;
//! `object/fields_text.rs` keeps every managedFields entry's `fieldsV1` as its JSON text behind a
//! per-process marker (as kube-apiserver keeps `FieldsV1` raw), so copies, drops and serializations
//! of objects do not walk those trees: stored objects decode with `fields_text::from_slice`,
//! everything that writes an object's JSON goes through `fields_text::Json` (see the invariant),
//! and what reads an entry's set parses it with `fields_text::tree`. `render.rs` answers reads in
//! the form the Accept header asks for: JSON, a `Table` of printer columns (`table.rs`, for
//! `kubectl get`) or `PartialObjectMetadata`. `openapi.rs` generates the OpenAPI v3 documents
//! kubectl needs for apply, create and explain (and an empty Swagger 2.0 `/openapi/v2`, protobuf
//! for client-go, which kubectl asks for to validate a `List`); `scale.rs` maps a CRD's scale
//! subresource onto its objects. `schema/` enforces CRD schemas on custom resources as
//! apiextensions does: pruning and defaulting on writes (through `admission.rs`) and on reads,
//! validation with every field error in one 422, and CEL rules (feature `cel`;
//! `schema/cel/direct.rs` evaluates the common rule forms over the JSON itself and defers the rest,
//! failures and messages to the `cel` interpreter). `apply/` is server-side apply and
//! `metadata.managedFields`, with structured-merge-diff's semantics: `rest/` calls `apply::track`
//! on every create and update to record who changed which fields (an update edits the stored
//! entries in their `FieldsV1` form, `apply/fields_v1.rs`, decoding them into field sets only when
//! it must; an entry whose text names none of the changed top-level fields is not even parsed; a
//! create's entry is written as `FieldsV1` text straight from the object,
//! `merge::created_fields_v1`), and apply patches merge through `rest::update` with `Change::Apply`
//! (or `rest::create_applied` when the object is absent). `namespaces.rs` runs the namespace
//! lifecycle (initial namespaces, cleanup of a terminating namespace). `gc/` is
//! kube-controller-manager's garbage collector run in-process: an owner→dependents index fed by
//! every resource's watch cache, a work queue, and the Background/Foreground/Orphan propagation
//! that `rest::delete` records as finalizers. `admission.rs` also runs the kinds' own rules
//! (`ServerConfig::admission`: defaulting between the schema's defaults and its validation,
//! validation after it, on the object, not its subresources) and refuses a negative
//! `specReplicasPath` of any CRD with a scale subresource. `webhook/` is admission webhooks:
//! Validating- and MutatingWebhookConfigurations compiled into a cache kept in step by every write
//! and a watch, and called over HTTPS (rustls) from `admission::admit` and `rest::delete` with
//! AdmissionReview v1. Errors are `ApiError`, which renders a Kubernetes `Status`. `/healthz` and
//! `/readyz` answer 500 with kube-apiserver's check listing while the store cannot serve
//! (`Store::ready`: an etcd store with no member in its rotation); `/livez` does not look at the
//! store. `tls.rs` serves HTTPS when `ServerConfig::tls` is set (the library's default is plain
//! HTTP without authentication, for tests): rustls with HTTP/2 and HTTP/1.1 by ALPN, client
//! certificates verified against the client CA but optional, and a `ResolvesServerCert` whose
//! certificate a background task replaces when its files change or, issued from a CA, before it
//! expires; the accept loop (`server::serve_https`) puts each connection's verified client
//! certificate into its requests' extensions. `auth/` is authentication
//! (`ServerConfig::authentication`): x509 (CN user, O groups, `auth/x509.rs`), the static token
//! file (`auth/tokens.rs`), bootstrap tokens against their kube-system Secrets
//! (`auth/bootstrap_token.rs`), ServiceAccount JWTs (`auth/service_account.rs`: TokenRequest, a 10
//! s cache of successes as kube's, the OIDC discovery documents), `system:anonymous` when allowed,
//! else kube-apiserver's 401 `Status`; every request that passes carries an `Arc<UserInfo>` in its
//! extensions (`auth::user`), in-process clients as `system:corral-controllers` (or whom
//! `Server::in_process_as` names). `rbac/` is authorization (`ServerConfig::rbac`) with
//! kube-apiserver's semantics: the four RBAC kinds are built-ins (`validate.rs`, `openapi.rs`),
//! compiled by `index.rs` into an immutable snapshot replaced on every change (hooks and a watch
//! per kind, `follow.rs` as for the webhook configurations), which `rbac::authorize` reads for
//! every request after authentication and impersonation (`impersonation.rs`) from kube's request
//! attributes (`rules.rs`: `RequestInfoFactory`, rule matching and covering); `system:masters`
//! bypasses; a refusal is kube's 403; before RBAC, `node_restriction.rs` (kube's NodeRestriction)
//! lets a node identity (`system:node:<name>` in `system:nodes`) modify only its own Node and
//! Lease. `escalation.rs` refuses role and binding writes beyond the writer's own rules unless it
//! may `escalate`/`bind` (the writer is the task-local `rbac::requester`); `bootstrap.rs` creates
//! kube's default roles and bindings at start, `aggregation.rs` fills aggregated ClusterRoles,
//! `review.rs` answers the `authorization.k8s.io` reviews (`kubectl auth can-i`). `certificates.rs`
//! is CertificateSigningRequests' strategy (requester recorded, spec immutable, `/approval` and
//! `/status` each owning their part of the status). `pki.rs` issues the certificates (a CA, serving
//! and client certificates, ECDSA P-256 with rcgen). `encryption/` is encryption at rest
//! (`ServerConfig::encryption`, kube's `EncryptionConfiguration`: aescbc, aesgcm, secretbox,
//! identity, RustCrypto's ciphers): `ApiState::start` wraps the store in `EncryptedStore`, so every
//! value of a configured resource is encrypted on its way in and decrypted on its way out (reads,
//! write answers, conflicts, watch events; the watch cache holds plaintext), with kube's
//! `k8s:enc:<provider>:v1:<key>:` prefix; a value read with an older key is *stale* and an
//! unchanged update still rewrites it (`rest::update`), which is how key rotation moves Secrets.
//! `audit/` is the audit log (`ServerConfig::audit`): kube's `audit.k8s.io/v1` Policy decides each
//! request's level in `server::handle` once the user is known, and Events go as JSON lines through
//! a bounded queue to a writer thread, which rotates the file as lumberjack
//! (`--audit-log-maxsize/-maxbackup/-maxage`, `audit/writer.rs`). `limits.rs` holds the in-flight
//! limits (kube's 429 with `Retry-After`, watches and `system:masters` not counted, in-process
//! clients never), watches per user, and the header read and body idle timeouts against slow
//! clients (`serve_https`); `body.rs` has the 3 MiB body limit. `tests/it` drives a real server
//! with kube-rs on every backend; `tls.rs` and `authn.rs` there drive HTTPS with kube-rs and hyper
//! over rustls; `limits.rs` and `hostile.rs` (10,000 generated hostile requests against RBAC) drive
//! raw sockets.

pub mod admission;
mod apply;
pub mod audit;
pub mod auth;
mod body;
mod builtin_fields;
mod certificates;
mod conversion;
pub mod crd;
mod discovery;
pub mod encryption;
pub mod error;
mod follow;
pub mod gc;
pub mod kubeconfig;
pub mod limits;
pub mod names;
mod namespaces;
pub mod object;
mod openapi;
mod patch;
pub mod pki;
mod protobuf;
pub mod query;
pub mod rbac;
pub mod registry;
mod render;
pub mod rest;
mod scale;
pub mod schema;
pub mod selector;
mod server;
pub mod strategic_merge;
pub mod strategy;
mod table;
pub mod tls;
mod watch;
pub mod watch_cache;
mod webhook;

pub use auth::{AuthenticationConfig, UserInfo};
pub use error::ApiError;
pub use server::{ApiState, Server, ServerConfig, serve_request};
pub use tls::{ServingCertificate, TlsConfig};
pub use watch::WatchTimings;
pub use watch_cache::WatchCacheConfig;
