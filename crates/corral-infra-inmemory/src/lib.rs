//! The in-memory infrastructure provider (provider name `in-memory`): upstream's DevCluster and
//! DevMachine kinds with the `inMemory` backend, over a simulated cloud whose workload clusters
//! are simulated too. For development, tests and scale runs, where no real Kubernetes can run.
//!
//! - [`api`]: the `infrastructure.cluster.x-k8s.io/v1beta2` types in upstream's shape and
//!   [`crds()`], checked in under `crds/` and compared with upstream's in the tests.
//! - the simulated cloud is crate `corral-cloud`: its `Cloud` trait, which the controllers
//!   drive, and `InProcessCloud`: VMs that boot through upstream's simulated steps, and one
//!   workload cluster per DevCluster, a Corral API server on its own loopback port where each
//!   VM's Node registers with `spec.providerID: in-memory://<devmachine>`; `CloudServer` serves
//!   a cloud over HTTP and `RemoteCloud` reaches it, so that several management planes share
//!   one cloud (`corral cloud`, `--cloud URL`).
//! - [`run`]: the DevCluster and DevMachine controllers, which implement the v1beta2
//!   InfraCluster and InfraMachine contracts.
//!
//! A management plane starts the provider with:
//!
//! ```no_run
//! # async fn start(client: kube::Client) {
//! use std::sync::Arc;
//! use corral_cloud::InProcessCloud;
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
//! The controllers reach the management plane only through `kube::Client` and the cloud only
//! through its trait; only `corral-cloud` imports the API server, to run the simulated workload
//! clusters.
//!
//! # Map of the crate
//!
//! The in-memory infrastructure provider (`in-memory`): upstream's DevCluster, DevClusterTemplate,
//! DevMachine and DevMachineTemplate (`infrastructure.cluster.x-k8s.io/v1beta2`) with the
//! `inMemory` backend, for development, tests and scale runs. `api/` holds the types in upstream's
//! shape and the CRDs generated from them (checked in under `crds/`, with the contract and
//! clusterctl labels); a CEL rule refuses `backend.docker`. The simulated cloud is crate
//! `corral-cloud`. `controllers/` are the DevCluster controller (endpoint, provisioned, failure
//! domains, and the `<cluster>-kubeconfig` Secret as a simulation convenience for Clusters without
//! a `controlPlaneRef`) and the DevMachine controller (waits for the Cluster's infrastructure and
//! the Machine's bootstrap data, then providerID `in-memory://<name>`, addresses, conditions, the
//! fail-boot and node-not-ready annotations; a due boot step gets a moment to complete before the
//! status is written, so that at zero delay a DevMachine is provisioned in two writes: finalizer
//! with providerID, one status; deleted in one, the finalizer's removal), reconciling over
//! `kube::Client` only and skipping copies that their own writes replaced
//! (`corral_runtime::own_writes`), woken by Machines and Clusters only when what they read changed
//! (`corral_runtime::changes`); they are written on `corral-runtime` (never on
//! `corral-controllers`) and read through the process's shared caches (`corral_runtime::Caches`)
//! when started with `run_with_caches` (as `corral` and `corral-bench` do); the API server and the
//! store are imported only by `corral-cloud`, to run the simulated workload clusters. `tests/it`
//! compares the CRDs with upstream's, applies upstream-shaped manifests, and runs the controllers
//! against an in-process management plane, the test playing the core controllers; `tests/it/e2e.rs`
//! runs them with the core controllers, end to end (issue 4's integration test).

pub mod api;
/// The simulated cloud the controllers drive, crate `corral-cloud`.
use corral_cloud as cloud;
mod controllers;

pub use api::crds;
pub use controllers::{reconcile_counts, run, run_with_caches};
