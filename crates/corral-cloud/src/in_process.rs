//! The cloud inside the management plane's process.
//!
//! Each VM has a driver task that moves its boot along in real time: it sleeps until the next
//! step is due (or until its faults change), then does the step's effect in the workload
//! cluster. An effect that fails (the workload API server refused a write) is retried a second
//! later; the step counts as done only once its effect is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use corral_api::{MachineAddress, MachineAddressType};
use k8s_openapi::jiff::Timestamp;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::boot::{Boot, BootPlan, Progress, Step};
use super::workload::{SimulatedNode, WorkloadCluster};
use super::{
    Cloud, CloudError, ClusterKey, Faults, StepStatus, Vm, VmKey, VmSpec, WorkloadEndpoint,
};

/// How long a driver waits before retrying an effect that failed.
const RETRY: Duration = Duration::from_secs(1);

/// The simulated cloud, in this process. See the [module docs](super).
pub struct InProcessCloud {
    clusters: tokio::sync::Mutex<HashMap<ClusterKey, Arc<ClusterEntry>>>,
    /// The last VM address handed out, as a number under 10.0.0.0/8.
    last_address: AtomicU32,
}

impl Default for InProcessCloud {
    fn default() -> Self {
        InProcessCloud {
            clusters: Default::default(),
            last_address: AtomicU32::new(0),
        }
    }
}

struct ClusterEntry {
    workload: Arc<WorkloadCluster>,
    vms: Mutex<HashMap<String, Arc<VmEntry>>>,
}

struct VmEntry {
    key: VmKey,
    node: SimulatedNode,
    /// The same moment on both clocks, to report the boot's times in wall-clock time.
    anchor: (Instant, Timestamp),
    state: Mutex<VmState>,
    wake: Notify,
    driver: Mutex<Option<JoinHandle<()>>>,
}

struct VmState {
    boot: Boot,
    faults: Faults,
    /// The Ready status the registered Node has, once registered.
    node_ready: Option<bool>,
    stopping: bool,
}

impl InProcessCloud {
    pub fn new() -> InProcessCloud {
        InProcessCloud::default()
    }

    /// Removes every workload cluster and VM.
    pub async fn shutdown(&self) {
        let clusters: Vec<ClusterKey> = self.clusters.lock().await.keys().cloned().collect();
        for cluster in clusters {
            let _ = self.delete_cluster(&cluster).await;
        }
    }

    async fn cluster(&self, key: &ClusterKey) -> Option<Arc<ClusterEntry>> {
        self.clusters.lock().await.get(key).cloned()
    }

    fn next_address(&self) -> String {
        let n = self.last_address.fetch_add(1, Ordering::Relaxed) + 1;
        format!("10.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
    }
}

#[async_trait::async_trait]
impl Cloud for InProcessCloud {
    async fn ensure_cluster(
        &self,
        cluster: &ClusterKey,
        port: Option<u16>,
    ) -> Result<WorkloadEndpoint, CloudError> {
        let mut clusters = self.clusters.lock().await;
        if let Some(entry) = clusters.get(cluster) {
            return Ok(entry.workload.endpoint.clone());
        }
        tracing::info!(cluster = %cluster, ?port, "Starting simulated workload cluster");
        let workload = WorkloadCluster::start(cluster.clone(), port).await?;
        let endpoint = workload.endpoint.clone();
        clusters.insert(
            cluster.clone(),
            Arc::new(ClusterEntry {
                workload: Arc::new(workload),
                vms: Mutex::new(HashMap::new()),
            }),
        );
        Ok(endpoint)
    }

    async fn delete_cluster(&self, cluster: &ClusterKey) -> Result<(), CloudError> {
        let Some(entry) = self.clusters.lock().await.remove(cluster) else {
            return Ok(());
        };
        tracing::info!(cluster = %cluster, "Stopping simulated workload cluster");
        let vms: Vec<Arc<VmEntry>> = entry
            .vms
            .lock()
            .unwrap()
            .drain()
            .map(|(_, vm)| vm)
            .collect();
        for vm in vms {
            vm.stop().await;
        }
        entry.workload.shutdown().await;
        Ok(())
    }

    async fn ensure_vm(&self, key: &VmKey, spec: &VmSpec) -> Result<Vm, CloudError> {
        let cluster = self
            .cluster(&key.cluster)
            .await
            .ok_or_else(|| CloudError::ClusterNotFound(key.cluster.clone()))?;
        let vm = {
            let mut vms = cluster.vms.lock().unwrap();
            match vms.get(&key.name) {
                Some(vm) => vm.clone(),
                None => {
                    let vm = VmEntry::new(key.clone(), spec, self.next_address());
                    tracing::info!(vm = %key, "Creating simulated VM");
                    vm.start(cluster.workload.clone());
                    vms.insert(key.name.clone(), vm.clone());
                    vm
                }
            }
        };
        vm.set_faults(&spec.faults);
        Ok(vm.view())
    }

    async fn get_vm(&self, key: &VmKey) -> Result<Option<Vm>, CloudError> {
        let Some(cluster) = self.cluster(&key.cluster).await else {
            return Ok(None);
        };
        let vm = cluster.vms.lock().unwrap().get(&key.name).cloned();
        Ok(vm.map(|vm| vm.view()))
    }

    async fn delete_vm(&self, key: &VmKey) -> Result<(), CloudError> {
        let Some(cluster) = self.cluster(&key.cluster).await else {
            return Ok(());
        };
        let vm = cluster.vms.lock().unwrap().remove(&key.name);
        if let Some(vm) = vm {
            tracing::info!(vm = %key, "Deleting simulated VM");
            vm.stop().await;
        }
        // Also when the VM was not known: a Node may survive a VM that an earlier attempt
        // removed, if deleting the Node failed then.
        cluster.workload.remove_machine(&key.name).await
    }
}

impl VmEntry {
    fn new(key: VmKey, spec: &VmSpec, internal_ip: String) -> Arc<VmEntry> {
        let now = Instant::now();
        let plan = BootPlan::sample(&spec.timings, spec.control_plane, rand::random::<f64>);
        let node = SimulatedNode {
            name: key.name.clone(),
            provider_id: crate::provider_id(&key.name),
            internal_ip,
            control_plane: spec.control_plane,
            version: spec.version.clone(),
        };
        Arc::new(VmEntry {
            key,
            node,
            anchor: (now, Timestamp::now()),
            state: Mutex::new(VmState {
                boot: Boot::new(plan, now),
                faults: spec.faults.clone(),
                node_ready: None,
                stopping: false,
            }),
            wake: Notify::new(),
            driver: Mutex::new(None),
        })
    }

    fn start(self: &Arc<Self>, workload: Arc<WorkloadCluster>) {
        let task = tokio::spawn(drive(workload, self.clone()));
        *self.driver.lock().unwrap() = Some(task);
    }

    /// Stops the driver and waits until it has, so that no write of it reaches the workload
    /// cluster afterwards.
    async fn stop(&self) {
        self.state.lock().unwrap().stopping = true;
        self.wake.notify_one();
        let task = self.driver.lock().unwrap().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    fn set_faults(&self, faults: &Faults) {
        let mut state = self.state.lock().unwrap();
        if state.faults != *faults {
            tracing::info!(vm = %self.key, ?faults, "Changing the faults of simulated VM");
            state.faults = faults.clone();
            self.wake.notify_one();
        }
    }

    fn wall_clock(&self, instant: Instant) -> Timestamp {
        let (anchor, anchor_wall) = self.anchor;
        if instant >= anchor {
            anchor_wall + (instant - anchor)
        } else {
            anchor_wall - (anchor - instant)
        }
    }

    fn view(&self) -> Vm {
        let state = self.state.lock().unwrap();
        // The driver moves the VM step along only when it wakes; report it as of now.
        let mut boot = state.boot.clone();
        boot.advance(Instant::now(), state.faults.fail_boot);
        let status = |step: Step| match boot.progress(step) {
            Progress::Waiting => StepStatus::Waiting,
            Progress::Underway { due } => StepStatus::InProgress {
                until: self.wall_clock(due),
            },
            Progress::Done { at } => StepStatus::Done {
                at: self.wall_clock(at),
            },
            Progress::Failed => StepStatus::Failed {
                message: "the VM does not boot: the fail-boot fault is injected".into(),
            },
        };
        let control_plane = boot.control_plane();
        Vm {
            key: self.key.clone(),
            provider_id: self.node.provider_id.clone(),
            addresses: vec![
                MachineAddress {
                    type_: MachineAddressType::InternalIp,
                    address: self.node.internal_ip.clone(),
                },
                MachineAddress {
                    type_: MachineAddressType::Hostname,
                    address: self.node.name.clone(),
                },
            ],
            vm: status(Step::Vm),
            node: status(Step::Node),
            etcd: control_plane.then(|| status(Step::Etcd)),
            api_server: control_plane.then(|| status(Step::ApiServer)),
            node_ready: state.node_ready,
        }
    }
}

/// What a driver is to do next.
struct Work {
    steps: Vec<Step>,
    /// The Ready status the Node should have, when the registered Node does not have it.
    node_ready: Option<bool>,
    /// Whether the Node should be Ready when it registers.
    ready_at_registration: bool,
    deadline: Option<Instant>,
}

/// Moves a VM's boot along until the VM is stopped.
async fn drive(workload: Arc<WorkloadCluster>, vm: Arc<VmEntry>) {
    loop {
        let now = Instant::now();
        let work = {
            let mut state = vm.state.lock().unwrap();
            if state.stopping {
                return;
            }
            let fail_boot = state.faults.fail_boot;
            state.boot.advance(now, fail_boot);
            let ready = !state.faults.node_not_ready;
            let registered = matches!(state.boot.progress(Step::Node), Progress::Done { .. });
            Work {
                steps: state.boot.due_steps(now),
                node_ready: (registered && state.node_ready != Some(ready)).then_some(ready),
                ready_at_registration: ready,
                deadline: state.boot.next_deadline(now),
            }
        };

        let mut progressed = false;
        let mut failed = false;
        for step in work.steps {
            let result = match step {
                Step::Node => {
                    workload
                        .register_node(&vm.node, work.ready_at_registration)
                        .await
                }
                Step::Etcd => {
                    workload
                        .start_etcd_member(&vm.node, work.ready_at_registration)
                        .await
                }
                Step::ApiServer => {
                    workload
                        .start_control_plane_components(&vm.node, work.ready_at_registration)
                        .await
                }
                Step::Vm => Ok(()),
            };
            match result {
                Ok(()) => {
                    let mut state = vm.state.lock().unwrap();
                    state.boot.complete(step, Instant::now());
                    if step == Step::Node {
                        state.node_ready = Some(work.ready_at_registration);
                    }
                    progressed = true;
                }
                Err(error) => {
                    tracing::warn!(vm = %vm.key, ?step, error = %error, "Simulated boot step failed; retrying");
                    failed = true;
                    break;
                }
            }
        }
        if let Some(ready) = work.node_ready {
            match workload.set_node_ready(&vm.node.name, ready).await {
                Ok(()) => {
                    vm.state.lock().unwrap().node_ready = Some(ready);
                    progressed = true;
                }
                Err(error) => {
                    tracing::warn!(vm = %vm.key, error = %error, "Setting simulated Node readiness failed; retrying");
                    failed = true;
                }
            }
        }
        if progressed && !failed {
            // A completed step can make the next one due at once.
            continue;
        }

        let wake_at = if failed {
            Some(Instant::now() + RETRY)
        } else {
            work.deadline
        };
        match wake_at {
            Some(at) => {
                tokio::select! {
                    _ = vm.wake.notified() => {}
                    _ = tokio::time::sleep_until(at) => {}
                }
            }
            None => vm.wake.notified().await,
        }
    }
}
