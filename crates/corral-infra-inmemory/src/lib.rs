//! The in-memory infrastructure provider (provider name `in-memory`): upstream's DevCluster and
//! DevMachine kinds with the `inMemory` backend, over a simulated cloud whose workload clusters
//! are simulated too. For development, tests and scale runs, where no real Kubernetes can run.
//!
//! - [`api`]: the `infrastructure.cluster.x-k8s.io/v1beta2` types in upstream's shape and
//!   [`crds()`], checked in under `crds/` and compared with upstream's in the tests.
//! - [`cloud`]: the [`cloud::Cloud`] trait and [`cloud::InProcessCloud`]: VMs that boot through
//!   upstream's simulated steps, and one workload cluster per DevCluster, a Corral API server
//!   on its own loopback port where each VM's Node registers with `spec.providerID:
//!   in-memory://<devmachine>`. [`cloud::CloudServer`] serves a cloud over HTTP and
//!   [`cloud::RemoteCloud`] reaches it, so that several management planes share one cloud
//!   (`corral cloud`, `--cloud URL`).
//! - [`run`]: the DevCluster and DevMachine controllers, which implement the v1beta2
//!   InfraCluster and InfraMachine contracts.
//!
//! A management plane starts the provider with:
//!
//! ```no_run
//! # async fn start(client: kube::Client) {
//! use std::sync::Arc;
//! use corral_infra_inmemory::cloud::InProcessCloud;
//!
//! let cloud = Arc::new(InProcessCloud::new());
//! corral_infra_inmemory::run(client, cloud, std::future::pending()).await;
//! # }
//! ```
//!
//! after installing [`crds()`] and the core CRDs.
//!
//! # Failure injection
//!
//! Annotations on a DevMachine ([`api::annotations`]), read on every reconcile:
//!
//! - `inmemory.infrastructure.cluster.x-k8s.io/fail-boot: "true"`: the VM never finishes
//!   booting; `VMProvisioned` is False with reason `BootFailed` and the machine is never
//!   provisioned. Removing the annotation lets the VM boot from the start.
//! - `inmemory.infrastructure.cluster.x-k8s.io/node-not-ready: "true"`: the machine's Node
//!   reports `Ready=False` (reason `KubeletNotReady`) until the annotation goes.
//!
//! # What is simulated
//!
//! Everything here is a simulation and says so: a workload cluster is an API server in which
//! nothing runs; its Nodes and control plane Pods are objects written by the simulation. As a
//! convenience until a control plane provider exists, the DevCluster controller writes the
//! `<cluster>-kubeconfig` Secret for the simulated endpoint (see its module docs).
//!
//! The controllers reach the management plane only through `kube::Client`; only the cloud
//! imports the API server, to run the simulated workload clusters.

pub mod api;
pub mod cloud;
mod controllers;

pub use api::crds;
pub use controllers::{reconcile_counts, run, run_with_caches};
