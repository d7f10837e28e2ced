//! The Rust types read upstream-shaped objects and write them back unchanged, and typed objects
//! serialize the way upstream's Go types do (empty optional parts left out).

use corral_api::{
    Bootstrap, ClusterPhase, ContractVersionedObjectReference, Machine, MachineDeployment,
    MachineHealthCheck, MachinePhase, MachineSet, MachineSpec,
};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Reads `object` as `T` and writes it back; nothing may be lost or added.
fn round_trip<T: Serialize + DeserializeOwned>(object: Value) -> T {
    let typed: T = serde_json::from_value(object.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), object);
    typed
}

fn condition(type_: &str, status: &str, reason: &str) -> Value {
    json!({ "type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": "2026-03-01T10:00:00Z", "observedGeneration": 2 })
}

#[test]
fn cluster_round_trips() {
    let cluster: corral_api::Cluster = round_trip(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": { "name": "dev", "namespace": "default" },
        "spec": {
            "clusterNetwork": { "pods": { "cidrBlocks": ["192.168.0.0/16"] }, "services": { "cidrBlocks": ["10.128.0.0/12"] }, "serviceDomain": "cluster.local", "apiServerPort": 6443 },
            "controlPlaneEndpoint": { "host": "10.0.0.1", "port": 6443 },
            "controlPlaneRef": { "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": "dev" },
            "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevCluster", "name": "dev" },
            "availabilityGates": [{ "conditionType": "example.com/Healthy", "polarity": "Negative" }],
            "topology": {
                "classRef": { "name": "quick-start", "namespace": "classes" },
                "version": "v1.36.0",
                "controlPlane": {
                    "replicas": 3,
                    "metadata": { "labels": { "tier": "cp" } },
                    "healthCheck": { "enabled": true, "checks": { "nodeStartupTimeoutSeconds": 900 }, "remediation": { "triggerIf": { "unhealthyLessThanOrEqualTo": 1 } } },
                    "deletion": { "nodeDrainTimeoutSeconds": 300 },
                    "variables": { "overrides": [{ "name": "image", "value": { "repository": "registry.example.com" } }] },
                },
                "workers": {
                    "machineDeployments": [{
                        "class": "default-worker",
                        "name": "md-0",
                        "replicas": 2,
                        "rollout": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 0 } } },
                        "deletion": { "order": "Oldest", "nodeDeletionTimeoutSeconds": 20 },
                        "healthCheck": { "remediation": { "maxInFlight": "10%" } },
                        "taints": [{ "key": "dedicated", "value": "gpu", "effect": "NoSchedule", "propagation": "Always" }],
                    }],
                    "machinePools": [{ "class": "pool", "name": "mp-0", "failureDomains": ["zone-a"] }],
                },
                "variables": [{ "name": "region", "value": "eu-west-1" }, { "name": "replicas", "value": 3 }],
            },
        },
        "status": {
            "conditions": [condition("Available", "True", "Available")],
            "initialization": { "infrastructureProvisioned": true, "controlPlaneInitialized": true },
            "controlPlane": { "desiredReplicas": 3, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "upToDateReplicas": 3, "versions": [{ "version": "v1.36.0", "replicas": 3 }] },
            "workers": { "desiredReplicas": 2, "replicas": 2, "upgradePlan": [{ "version": "v1.36.0" }] },
            "failureDomains": [{ "name": "zone-a", "controlPlane": true, "attributes": { "region": "eu" } }],
            "phase": "Provisioned",
            "observedGeneration": 2,
            "deprecated": { "v1beta1": { "conditions": [{ "type": "Ready", "status": "True", "lastTransitionTime": "2026-03-01T10:00:00Z" }] } },
        },
    }));
    let status = cluster.status.unwrap();
    assert_eq!(status.phase, Some(ClusterPhase::Provisioned));
    assert_eq!(status.initialization.control_plane_initialized, Some(true));
    assert!(cluster.spec.control_plane_endpoint.is_valid());
    let topology = cluster.spec.topology.unwrap();
    assert_eq!(
        topology.workers.machine_deployments[0]
            .deletion
            .node_deletion_timeout_seconds,
        Some(20)
    );
}

#[test]
fn machine_round_trips() {
    let machine: Machine = round_trip(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": "worker-1", "namespace": "default", "labels": { "cluster.x-k8s.io/cluster-name": "dev" } },
        "spec": {
            "clusterName": "dev",
            "bootstrap": { "configRef": { "apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": "worker-1" }, "dataSecretName": "worker-1" },
            "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": "worker-1" },
            "version": "v1.36.0",
            "providerID": "in-memory://worker-1",
            "failureDomain": "zone-a",
            "minReadySeconds": 10,
            "readinessGates": [{ "conditionType": "example.com/Ready" }],
            "deletion": { "nodeDrainTimeoutSeconds": 0, "nodeVolumeDetachTimeoutSeconds": 60, "nodeDeletionTimeoutSeconds": 10 },
            "taints": [{ "key": "example.com/t", "effect": "NoExecute", "propagation": "OnInitialization" }],
        },
        "status": {
            "conditions": [condition("Ready", "False", "NotReady")],
            "initialization": { "infrastructureProvisioned": true, "bootstrapDataSecretCreated": true },
            "nodeRef": { "name": "worker-1" },
            "nodeInfo": {
                "architecture": "amd64", "bootID": "b", "containerRuntimeVersion": "containerd://2.0.0", "kernelVersion": "6.1.0",
                "kubeProxyVersion": "", "kubeletVersion": "v1.36.0", "machineID": "m", "operatingSystem": "linux",
                "osImage": "Debian", "systemUUID": "s", "swap": { "capacity": 0 },
            },
            "lastUpdated": "2026-03-01T10:00:00Z",
            "failureDomain": "zone-a",
            "addresses": [{ "type": "InternalIP", "address": "10.0.0.5" }, { "type": "InternalDNS", "address": "worker-1.local" }],
            "phase": "Running",
            "certificatesExpiryDate": "2027-03-01T10:00:00Z",
            "observedGeneration": 1,
            "deletion": { "nodeDrainStartTime": "2026-03-02T10:00:00Z" },
            "deprecated": { "v1beta1": { "failureReason": "InvalidConfiguration", "failureMessage": "gone" } },
        },
    }));
    assert_eq!(
        machine.status.as_ref().unwrap().phase,
        Some(MachinePhase::Running)
    );
    assert_eq!(
        machine.spec.deletion.node_drain_timeout_seconds,
        Some(0),
        "0 is kept apart from unset"
    );
}

#[test]
fn machine_set_and_deployment_round_trip() {
    let template = json!({
        "metadata": { "labels": { "nodepool": "a" }, "annotations": { "example.com/a": "b" } },
        "spec": {
            "clusterName": "dev",
            "bootstrap": { "dataSecretName": "data" },
            "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "workers" },
        },
    });
    let status = json!({
        "conditions": [condition("MachinesReady", "True", "Ready")],
        "selector": "nodepool=a",
        "replicas": 3, "readyReplicas": 3, "availableReplicas": 2, "upToDateReplicas": 3,
        "versions": [{ "version": "v1.36.0", "replicas": 3 }],
        "observedGeneration": 4,
    });
    round_trip::<MachineSet>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineSet",
        "metadata": { "name": "workers-x7kq9", "namespace": "default" },
        "spec": {
            "clusterName": "dev",
            "replicas": 3,
            "selector": { "matchLabels": { "nodepool": "a" }, "matchExpressions": [{ "key": "tier", "operator": "In", "values": ["w"] }] },
            "template": template,
            "machineNaming": { "template": "{{ .machineSet.name }}-{{ .random }}" },
            "deletion": { "order": "Newest" },
        },
        "status": status,
    }));
    let mut deployment_status = status;
    deployment_status["phase"] = json!("ScalingUp");
    deployment_status["deprecated"] =
        json!({ "v1beta1": { "updatedReplicas": 1, "unavailableReplicas": 2 } });
    let deployment: MachineDeployment = round_trip(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineDeployment",
        "metadata": { "name": "workers", "namespace": "default" },
        "spec": {
            "clusterName": "dev",
            "replicas": 3,
            "rollout": { "after": "2026-05-01T00:00:00Z", "strategy": { "type": "OnDelete" } },
            "selector": { "matchLabels": { "nodepool": "a" } },
            "template": template,
            "remediation": { "maxInFlight": 1 },
            "deletion": { "order": "Random" },
            "paused": false,
        },
        "status": deployment_status,
    }));
    let strategy = deployment.spec.rollout.strategy.unwrap();
    assert_eq!(
        strategy.type_,
        corral_api::MachineDeploymentRolloutStrategyType::OnDelete
    );
}

#[test]
fn machine_health_check_round_trips() {
    round_trip::<MachineHealthCheck>(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineHealthCheck",
        "metadata": { "name": "workers", "namespace": "default" },
        "spec": {
            "clusterName": "dev",
            "selector": { "matchLabels": { "nodepool": "a" } },
            "checks": {
                "nodeStartupTimeoutSeconds": 600,
                "unhealthyNodeConditions": [{ "type": "Ready", "status": "Unknown", "timeoutSeconds": 300 }],
                "unhealthyMachineConditions": [{ "type": "example.com/Broken", "status": "True", "timeoutSeconds": 0 }],
            },
            "remediation": {
                "triggerIf": { "unhealthyLessThanOrEqualTo": "40%", "unhealthyInRange": "[1-3]" },
                "templateRef": { "apiVersion": "remediation.example.com/v1", "kind": "RebootTemplate", "name": "reboot" },
            },
        },
        "status": {
            "conditions": [condition("RemediationAllowed", "False", "TooManyUnhealthy")],
            "expectedMachines": 3, "currentHealthy": 1, "remediationsAllowed": 0, "observedGeneration": 1,
            "targets": ["worker-1", "worker-2", "worker-3"],
        },
    }));
}

#[test]
fn typed_objects_leave_out_empty_optional_parts() {
    // Upstream's omitzero: an unset struct is absent, never `{}`, which the schemas' minProperties
    // would reject.
    let machine = Machine::new(
        "worker-1",
        MachineSpec {
            cluster_name: "dev".into(),
            bootstrap: Bootstrap {
                data_secret_name: Some("data".into()),
                ..Bootstrap::default()
            },
            infrastructure_ref: ContractVersionedObjectReference {
                api_group: "infrastructure.cluster.x-k8s.io".into(),
                kind: "DevMachine".into(),
                name: "worker-1".into(),
            },
            ..MachineSpec::default()
        },
    );
    assert_eq!(
        serde_json::to_value(&machine).unwrap(),
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": { "name": "worker-1" },
            "spec": {
                "clusterName": "dev",
                "bootstrap": { "dataSecretName": "data" },
                "infrastructureRef": { "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": "worker-1" },
            },
        })
    );
    let status = corral_api::MachineStatus {
        phase: Some(MachinePhase::Pending),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        json!({ "phase": "Pending" })
    );
    assert_eq!(Machine::group(&()), corral_api::GROUP);
    assert_eq!(Machine::version(&()), corral_api::VERSION);
}

#[test]
fn phases_spell_as_upstream() {
    for phase in [
        MachinePhase::Pending,
        MachinePhase::Provisioning,
        MachinePhase::Provisioned,
        MachinePhase::Running,
        MachinePhase::Updating,
        MachinePhase::Deleting,
        MachinePhase::Deleted,
        MachinePhase::Failed,
        MachinePhase::Unknown,
    ] {
        assert_eq!(serde_json::to_value(phase).unwrap(), json!(phase.as_str()));
    }
    for phase in [
        ClusterPhase::Pending,
        ClusterPhase::Provisioning,
        ClusterPhase::Provisioned,
        ClusterPhase::Deleting,
        ClusterPhase::Failed,
        ClusterPhase::Unknown,
    ] {
        assert_eq!(serde_json::to_value(phase).unwrap(), json!(phase.as_str()));
    }
    use corral_api::MachineDeploymentPhase as Phase;
    for phase in [
        Phase::ScalingUp,
        Phase::ScalingDown,
        Phase::Running,
        Phase::Failed,
        Phase::Unknown,
    ] {
        assert_eq!(serde_json::to_value(phase).unwrap(), json!(phase.as_str()));
    }
    assert!(serde_json::from_value::<MachinePhase>(json!("Terminating")).is_err());
}
