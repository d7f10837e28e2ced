//! The provider contract: typed reads and writes of the fields core uses on provider objects,
//! which core only ever handles as unstructured JSON (upstream `internal/contract/*.go`, book
//! `developer/providers/contracts/*.md`).
//!
//! Core never imports a provider's Rust types: an infrastructure cluster is any object whose CRD
//! says it implements the contract, and core reads `status.initialization.provisioned` from it
//! through [`InfrastructureCluster`]. That keeps providers written in other languages, or
//! reached over gRPC or HTTP, first-class.
//!
//! Each view wraps the object's JSON (anything that borrows a [`serde_json::Value`]: a `Value`,
//! `&Value`, `&mut Value`; for a `kube::api::DynamicObject`, its `data`) and the contract version
//! the object's CRD implements, which [`ContractVersion::from_crd_labels`] finds. Reads return
//! `Ok(None)` for an absent or null field and an error for a field of the wrong shape, which is
//! a provider bug the caller should surface as a condition. Writes create missing parents.
//!
//! Until upstream stops serving v1beta1, v1beta2 core also accepts providers implementing the
//! v1beta1 contract; the views read and write the v1beta1 field where it differs (for example
//! `status.ready` instead of `status.initialization.provisioned`).

use std::borrow::{Borrow, BorrowMut};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::common::{
    ApiEndpoint, ContractVersionedObjectReference, FailureDomain, MachineAddress, StatusVersion,
};
use crate::{GROUP, conditions};

#[cfg(test)]
mod tests;

/// A version of the provider contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContractVersion {
    /// The contract of Cluster API v1.0 to v1.10, still accepted.
    V1Beta1,
    /// The contract of Cluster API v1.11 onwards.
    V1Beta2,
}

impl ContractVersion {
    /// The contract this version of core implements.
    pub const CURRENT: ContractVersion = ContractVersion::V1Beta2;

    /// The version as in labels: `v1beta1` or `v1beta2`.
    pub fn as_str(self) -> &'static str {
        match self {
            ContractVersion::V1Beta1 => "v1beta1",
            ContractVersion::V1Beta2 => "v1beta2",
        }
    }

    /// The label a provider's CRD carries to say which of its API versions implement this
    /// contract: `cluster.x-k8s.io/v1beta2`.
    pub fn crd_label(self) -> String {
        format!("{GROUP}/{}", self.as_str())
    }

    /// Finds which contract a provider's CRD implements and the API version to use for it, from
    /// the CRD's labels, as upstream's `GetLatestContractAndAPIVersionFromContract` does.
    ///
    /// The newest compatible contract with a non-empty label wins; its value lists API versions
    /// separated by `_` (`v1beta1_v1beta2`), and the highest in Kubernetes order
    /// ([`compare_kube_versions`]) is the one to use.
    pub fn from_crd_labels(
        labels: &BTreeMap<String, String>,
    ) -> Result<(ContractVersion, String), ContractError> {
        for contract in [ContractVersion::V1Beta2, ContractVersion::V1Beta1] {
            let Some(versions) = labels.get(&contract.crd_label()) else {
                continue;
            };
            let latest = versions
                .split('_')
                .filter(|version| !version.is_empty())
                .max_by(|a, b| compare_kube_versions(a, b));
            if let Some(latest) = latest {
                return Ok((contract, latest.to_owned()));
            }
        }
        Err(ContractError::ResolveContractVersion)
    }
}

impl fmt::Display for ContractVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Orders Kubernetes API versions by priority, as apimachinery's
/// `CompareKubeAwareVersionStrings`: GA above beta above alpha, then by major, then by the
/// alpha/beta number (`v2 > v1 > v2beta1 > v1beta2 > v1alpha1`). Versions not of that form
/// come below all that are, and among themselves in reverse alphabetical order.
pub fn compare_kube_versions(a: &str, b: &str) -> Ordering {
    match (parse_kube_version(a), parse_kube_version(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

/// `v<major>[(alpha|beta)<minor>]` as (stability, major, minor), which orders as Kubernetes
/// does.
fn parse_kube_version(version: &str) -> Option<(u8, u64, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major = number(&rest[..digits])?;
    let (stability, minor) = match &rest[digits..] {
        "" => return Some((2, major, 0)),
        rest => match (rest.strip_prefix("alpha"), rest.strip_prefix("beta")) {
            (Some(minor), _) => (0, number(minor)?),
            (_, Some(minor)) => (1, number(minor)?),
            _ => return None,
        },
    };
    Some((stability, major, minor))
}

fn number(digits: &str) -> Option<u64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A field of a provider object that is not what the contract says.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// A field, or one of its parents, has the wrong JSON type.
    #[error("cannot read {path}: it is {found}, expected {expected}")]
    ReadField {
        /// The field, as `.status.initialization.provisioned`.
        path: String,
        /// The JSON type the contract wants.
        expected: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// A structured field does not decode as the contract's type.
    #[error("cannot decode {path} as {expected}")]
    DecodeField {
        /// The field.
        path: String,
        /// The type the contract wants.
        expected: &'static str,
        /// What was wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A parent of the field to write exists and is not an object.
    #[error("cannot write {path}: {parent} is {found}, not an object")]
    WriteField {
        /// The field to write.
        path: String,
        /// The parent in the way.
        parent: String,
        /// Its JSON type.
        found: &'static str,
    },
    /// The CRD has no usable contract label.
    #[error(
        "cannot find the contract version: the CRD has no non-empty cluster.x-k8s.io/v1beta2 or cluster.x-k8s.io/v1beta1 label"
    )]
    ResolveContractVersion,
}

/// A condition as a provider reports it. Looser than `metav1.Condition`: v1beta1 providers
/// leave `reason` out on True conditions, and core only needs these fields.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCondition {
    /// The condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The reason for the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A message for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// The generation the condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// An infrastructure cluster: the provider's object behind `Cluster.spec.infrastructureRef`
/// (contract `infra-cluster.md`).
#[derive(Clone, Debug)]
pub struct InfrastructureCluster<O> {
    object: O,
    contract: ContractVersion,
}

impl<O> InfrastructureCluster<O> {
    /// A view of `object`, whose CRD implements `contract`.
    pub fn new(object: O, contract: ContractVersion) -> Self {
        InfrastructureCluster { object, contract }
    }

    /// The wrapped object.
    pub fn into_inner(self) -> O {
        self.object
    }
}

impl<O: Borrow<Value>> InfrastructureCluster<O> {
    /// Whether the infrastructure is provisioned: `status.initialization.provisioned`
    /// (v1beta1: `status.ready`).
    pub fn provisioned(&self) -> Result<Option<bool>, ContractError> {
        get_bool(self.object.borrow(), provisioned_path(self.contract))
    }

    /// `spec.controlPlaneEndpoint`, when the provider provides the endpoint.
    pub fn control_plane_endpoint(&self) -> Result<Option<ApiEndpoint>, ContractError> {
        control_plane_endpoint(self.object.borrow())
    }

    /// `status.failureDomains`, sorted by name, with `controlPlane` false where unset (v1beta1:
    /// a map from name to failure domain).
    pub fn failure_domains(&self) -> Result<Option<Vec<FailureDomain>>, ContractError> {
        let object = self.object.borrow();
        let path = &["status", "failureDomains"];
        let mut domains = match self.contract {
            ContractVersion::V1Beta2 => {
                let Some(domains) = decode::<Vec<FailureDomain>>(object, path, "failure domains")?
                else {
                    return Ok(None);
                };
                domains
            }
            ContractVersion::V1Beta1 => {
                let Some(domains) = decode::<BTreeMap<String, V1Beta1FailureDomain>>(
                    object,
                    path,
                    "failure domains",
                )?
                else {
                    return Ok(None);
                };
                domains
                    .into_iter()
                    .map(|(name, domain)| FailureDomain {
                        name,
                        control_plane: Some(domain.control_plane),
                        attributes: domain.attributes,
                    })
                    .collect()
            }
        };
        for domain in &mut domains {
            domain.control_plane.get_or_insert(false);
        }
        // A stable order, so that copying them to the Cluster does not cause endless updates.
        domains.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Some(domains))
    }

    /// The provider's Ready condition, mirrored to the Cluster's InfrastructureReady.
    pub fn ready_condition(&self) -> Result<Option<ProviderCondition>, ContractError> {
        condition(self.object.borrow(), conditions::READY)
    }

    /// The v1beta1 `status.failureReason`, copied to the Cluster's deprecated status.
    pub fn failure_reason(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "failureReason"])
    }

    /// The v1beta1 `status.failureMessage`, copied to the Cluster's deprecated status.
    pub fn failure_message(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "failureMessage"])
    }
}

impl<O: BorrowMut<Value>> InfrastructureCluster<O> {
    /// Sets whether the infrastructure is provisioned.
    pub fn set_provisioned(&mut self, provisioned: bool) -> Result<(), ContractError> {
        let path = provisioned_path(self.contract);
        set(self.object.borrow_mut(), path, Value::Bool(provisioned))
    }

    /// Sets `spec.controlPlaneEndpoint`.
    pub fn set_control_plane_endpoint(
        &mut self,
        endpoint: &ApiEndpoint,
    ) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["spec", "controlPlaneEndpoint"],
            to_value(endpoint),
        )
    }

    /// Sets `status.failureDomains`, in the contract's shape.
    pub fn set_failure_domains(&mut self, domains: &[FailureDomain]) -> Result<(), ContractError> {
        let value = match self.contract {
            ContractVersion::V1Beta2 => to_value(domains),
            ContractVersion::V1Beta1 => Value::Object(
                domains
                    .iter()
                    .map(|domain| {
                        let v1beta1 = V1Beta1FailureDomain {
                            control_plane: domain.control_plane.unwrap_or(false),
                            attributes: domain.attributes.clone(),
                        };
                        (domain.name.clone(), to_value(&v1beta1))
                    })
                    .collect(),
            ),
        };
        set(
            self.object.borrow_mut(),
            &["status", "failureDomains"],
            value,
        )
    }
}

/// A failure domain in the v1beta1 contract, keyed by name in a map.
#[derive(Serialize, Deserialize, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct V1Beta1FailureDomain {
    #[serde(default)]
    control_plane: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    attributes: BTreeMap<String, String>,
}

/// An infrastructure machine: the provider's object behind `Machine.spec.infrastructureRef`
/// (contract `infra-machine.md`).
#[derive(Clone, Debug)]
pub struct InfrastructureMachine<O> {
    object: O,
    contract: ContractVersion,
}

impl<O> InfrastructureMachine<O> {
    /// A view of `object`, whose CRD implements `contract`.
    pub fn new(object: O, contract: ContractVersion) -> Self {
        InfrastructureMachine { object, contract }
    }

    /// The wrapped object.
    pub fn into_inner(self) -> O {
        self.object
    }
}

impl<O: Borrow<Value>> InfrastructureMachine<O> {
    /// Whether the machine's infrastructure is provisioned: `status.initialization.provisioned`
    /// (v1beta1: `status.ready`).
    pub fn provisioned(&self) -> Result<Option<bool>, ContractError> {
        get_bool(self.object.borrow(), provisioned_path(self.contract))
    }

    /// `spec.providerID`, which core copies to the Machine once the infrastructure is
    /// provisioned and uses to find the Node. An empty string counts as unset.
    pub fn provider_id(&self) -> Result<Option<String>, ContractError> {
        let id = get_string(self.object.borrow(), &["spec", "providerID"])?;
        Ok(id.filter(|id| !id.is_empty()))
    }

    /// `status.addresses`.
    pub fn addresses(&self) -> Result<Option<Vec<MachineAddress>>, ContractError> {
        decode(
            self.object.borrow(),
            &["status", "addresses"],
            "machine addresses",
        )
    }

    /// `status.failureDomain`: where the machine actually is.
    pub fn failure_domain(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "failureDomain"])
    }

    /// The v1beta1 `spec.failureDomain`, which in that contract overrides the Machine's.
    pub fn v1beta1_spec_failure_domain(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["spec", "failureDomain"])
    }

    /// The provider's Ready condition, mirrored to the Machine's InfrastructureReady.
    pub fn ready_condition(&self) -> Result<Option<ProviderCondition>, ContractError> {
        condition(self.object.borrow(), conditions::READY)
    }

    /// The v1beta1 `status.failureReason`, copied to the Machine's deprecated status.
    pub fn failure_reason(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "failureReason"])
    }

    /// The v1beta1 `status.failureMessage`, copied to the Machine's deprecated status.
    pub fn failure_message(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "failureMessage"])
    }
}

impl<O: BorrowMut<Value>> InfrastructureMachine<O> {
    /// Sets whether the machine's infrastructure is provisioned.
    pub fn set_provisioned(&mut self, provisioned: bool) -> Result<(), ContractError> {
        let path = provisioned_path(self.contract);
        set(self.object.borrow_mut(), path, Value::Bool(provisioned))
    }

    /// Sets `spec.providerID`.
    pub fn set_provider_id(&mut self, provider_id: &str) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["spec", "providerID"],
            provider_id.into(),
        )
    }

    /// Sets `status.addresses`.
    pub fn set_addresses(&mut self, addresses: &[MachineAddress]) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["status", "addresses"],
            to_value(addresses),
        )
    }

    /// Sets `status.failureDomain`.
    pub fn set_failure_domain(&mut self, failure_domain: &str) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["status", "failureDomain"],
            failure_domain.into(),
        )
    }
}

/// A bootstrap config: the provider's object behind `Machine.spec.bootstrap.configRef`
/// (contract `bootstrap-config.md`).
#[derive(Clone, Debug)]
pub struct BootstrapConfig<O> {
    object: O,
    contract: ContractVersion,
}

impl<O> BootstrapConfig<O> {
    /// A view of `object`, whose CRD implements `contract`.
    pub fn new(object: O, contract: ContractVersion) -> Self {
        BootstrapConfig { object, contract }
    }

    /// The wrapped object.
    pub fn into_inner(self) -> O {
        self.object
    }
}

impl<O: Borrow<Value>> BootstrapConfig<O> {
    /// Whether the bootstrap data Secret exists: `status.initialization.dataSecretCreated`
    /// (v1beta1: `status.ready`).
    pub fn data_secret_created(&self) -> Result<Option<bool>, ContractError> {
        get_bool(
            self.object.borrow(),
            data_secret_created_path(self.contract),
        )
    }

    /// `status.dataSecretName`: the Secret, in the object's namespace, holding the bootstrap
    /// data under the key `value`. An empty string counts as unset.
    pub fn data_secret_name(&self) -> Result<Option<String>, ContractError> {
        let name = get_string(self.object.borrow(), &["status", "dataSecretName"])?;
        Ok(name.filter(|name| !name.is_empty()))
    }

    /// The provider's Ready condition, mirrored to the Machine's BootstrapConfigReady.
    pub fn ready_condition(&self) -> Result<Option<ProviderCondition>, ContractError> {
        condition(self.object.borrow(), conditions::READY)
    }

    /// The v1beta1 `status.failureReason`, copied to the Machine's deprecated status.
    pub fn failure_reason(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "failureReason"])
    }

    /// The v1beta1 `status.failureMessage`, copied to the Machine's deprecated status.
    pub fn failure_message(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "failureMessage"])
    }
}

impl<O: BorrowMut<Value>> BootstrapConfig<O> {
    /// Sets whether the bootstrap data Secret exists.
    pub fn set_data_secret_created(&mut self, created: bool) -> Result<(), ContractError> {
        let path = data_secret_created_path(self.contract);
        set(self.object.borrow_mut(), path, Value::Bool(created))
    }

    /// Sets `status.dataSecretName`.
    pub fn set_data_secret_name(&mut self, name: &str) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["status", "dataSecretName"],
            name.into(),
        )
    }
}

/// A control plane: the provider's object behind `Cluster.spec.controlPlaneRef` (contract
/// `control-plane.md`). The replica fields apply to control planes made of Machines.
#[derive(Clone, Debug)]
pub struct ControlPlane<O> {
    object: O,
    contract: ContractVersion,
}

impl<O> ControlPlane<O> {
    /// A view of `object`, whose CRD implements `contract`.
    pub fn new(object: O, contract: ContractVersion) -> Self {
        ControlPlane { object, contract }
    }

    /// The wrapped object.
    pub fn into_inner(self) -> O {
        self.object
    }
}

impl<O: Borrow<Value>> ControlPlane<O> {
    /// Whether the control plane is initialized (its API server accepts requests):
    /// `status.initialization.controlPlaneInitialized` (v1beta1: `status.initialized`).
    pub fn initialized(&self) -> Result<Option<bool>, ContractError> {
        get_bool(self.object.borrow(), initialized_path(self.contract))
    }

    /// `spec.controlPlaneEndpoint`, when the control plane provides the endpoint.
    pub fn control_plane_endpoint(&self) -> Result<Option<ApiEndpoint>, ContractError> {
        control_plane_endpoint(self.object.borrow())
    }

    /// `spec.version`: the Kubernetes version wanted.
    pub fn version(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["spec", "version"])
    }

    /// `status.versions`: the Kubernetes versions the control plane runs, oldest first.
    pub fn status_versions(&self) -> Result<Option<Vec<StatusVersion>>, ContractError> {
        decode(
            self.object.borrow(),
            &["status", "versions"],
            "status versions",
        )
    }

    /// `status.version`, deprecated by `status.versions`: the oldest version the control plane
    /// runs.
    pub fn status_version(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "version"])
    }

    /// `spec.replicas`.
    pub fn replicas(&self) -> Result<Option<i32>, ContractError> {
        get_i32(self.object.borrow(), &["spec", "replicas"])
    }

    /// `status.replicas`.
    pub fn status_replicas(&self) -> Result<Option<i32>, ContractError> {
        get_i32(self.object.borrow(), &["status", "replicas"])
    }

    /// `status.readyReplicas`: Machines whose Ready condition is True (v1beta1: whose Node is
    /// Ready).
    pub fn ready_replicas(&self) -> Result<Option<i32>, ContractError> {
        get_i32(self.object.borrow(), &["status", "readyReplicas"])
    }

    /// `status.availableReplicas`: Machines whose Available condition is True. The v1beta1
    /// contract has no such field (see [`Self::v1beta1_unavailable_replicas`]).
    pub fn available_replicas(&self) -> Result<Option<i32>, ContractError> {
        match self.contract {
            ContractVersion::V1Beta2 => {
                get_i32(self.object.borrow(), &["status", "availableReplicas"])
            }
            ContractVersion::V1Beta1 => Ok(None),
        }
    }

    /// The v1beta1 `status.unavailableReplicas`.
    pub fn v1beta1_unavailable_replicas(&self) -> Result<Option<i32>, ContractError> {
        get_i32(self.object.borrow(), &["status", "unavailableReplicas"])
    }

    /// `status.upToDateReplicas` (v1beta1: `status.updatedReplicas`).
    pub fn up_to_date_replicas(&self) -> Result<Option<i32>, ContractError> {
        let field = match self.contract {
            ContractVersion::V1Beta2 => "upToDateReplicas",
            ContractVersion::V1Beta1 => "updatedReplicas",
        };
        get_i32(self.object.borrow(), &["status", field])
    }

    /// `status.selector`: the label selector of the control plane's Machines, as a string.
    pub fn selector(&self) -> Result<Option<String>, ContractError> {
        get_string(self.object.borrow(), &["status", "selector"])
    }

    /// `spec.rollout.after`: a rollout is forced once this time has passed.
    pub fn rollout_after(&self) -> Result<Option<Time>, ContractError> {
        decode(
            self.object.borrow(),
            &["spec", "rollout", "after"],
            "a time",
        )
    }

    /// `spec.machineTemplate.spec.infrastructureRef`: the infrastructure machine template of a
    /// control plane made of Machines.
    pub fn machine_template_infrastructure_ref(
        &self,
    ) -> Result<Option<ContractVersionedObjectReference>, ContractError> {
        let path = &["spec", "machineTemplate", "spec", "infrastructureRef"];
        decode(self.object.borrow(), path, "an object reference")
    }

    /// The provider's Available condition, mirrored to the Cluster's ControlPlaneAvailable.
    pub fn available_condition(&self) -> Result<Option<ProviderCondition>, ContractError> {
        condition(self.object.borrow(), conditions::AVAILABLE)
    }
}

impl<O: BorrowMut<Value>> ControlPlane<O> {
    /// Sets whether the control plane is initialized.
    pub fn set_initialized(&mut self, initialized: bool) -> Result<(), ContractError> {
        let path = initialized_path(self.contract);
        set(self.object.borrow_mut(), path, Value::Bool(initialized))
    }

    /// Sets `spec.controlPlaneEndpoint`.
    pub fn set_control_plane_endpoint(
        &mut self,
        endpoint: &ApiEndpoint,
    ) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["spec", "controlPlaneEndpoint"],
            to_value(endpoint),
        )
    }

    /// Sets `spec.version`.
    pub fn set_version(&mut self, version: &str) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["spec", "version"],
            version.into(),
        )
    }

    /// Sets `spec.replicas`.
    pub fn set_replicas(&mut self, replicas: i32) -> Result<(), ContractError> {
        set(
            self.object.borrow_mut(),
            &["spec", "replicas"],
            replicas.into(),
        )
    }
}

fn provisioned_path(contract: ContractVersion) -> &'static [&'static str] {
    match contract {
        ContractVersion::V1Beta2 => &["status", "initialization", "provisioned"],
        ContractVersion::V1Beta1 => &["status", "ready"],
    }
}

fn data_secret_created_path(contract: ContractVersion) -> &'static [&'static str] {
    match contract {
        ContractVersion::V1Beta2 => &["status", "initialization", "dataSecretCreated"],
        ContractVersion::V1Beta1 => &["status", "ready"],
    }
}

fn initialized_path(contract: ContractVersion) -> &'static [&'static str] {
    match contract {
        ContractVersion::V1Beta2 => &["status", "initialization", "controlPlaneInitialized"],
        ContractVersion::V1Beta1 => &["status", "initialized"],
    }
}

fn control_plane_endpoint(object: &Value) -> Result<Option<ApiEndpoint>, ContractError> {
    decode(object, &["spec", "controlPlaneEndpoint"], "an API endpoint")
}

/// The condition of type `type_` in `status.conditions`.
fn condition(object: &Value, type_: &str) -> Result<Option<ProviderCondition>, ContractError> {
    let path = &["status", "conditions"];
    let Some(conditions) = decode::<Vec<ProviderCondition>>(object, path, "conditions")? else {
        return Ok(None);
    };
    Ok(conditions
        .into_iter()
        .find(|condition| condition.type_ == type_))
}

fn display_path(path: &[&str]) -> String {
    if path.is_empty() {
        return "the object".to_owned();
    }
    path.iter().map(|segment| format!(".{segment}")).collect()
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The value at `path`; `None` when it or a parent is absent or null.
fn lookup<'a>(object: &'a Value, path: &[&str]) -> Result<Option<&'a Value>, ContractError> {
    let mut current = object;
    for (depth, segment) in path.iter().enumerate() {
        current = match current {
            Value::Null => return Ok(None),
            Value::Object(fields) => match fields.get(*segment) {
                Some(value) => value,
                None => return Ok(None),
            },
            other => {
                return Err(ContractError::ReadField {
                    path: display_path(&path[..depth]),
                    expected: "an object",
                    found: json_type(other),
                });
            }
        };
    }
    Ok((!current.is_null()).then_some(current))
}

fn get_bool(object: &Value, path: &[&str]) -> Result<Option<bool>, ContractError> {
    match lookup(object, path)? {
        None => Ok(None),
        Some(Value::Bool(value)) => Ok(Some(*value)),
        Some(other) => Err(wrong_type(path, "a boolean", other)),
    }
}

fn get_string(object: &Value, path: &[&str]) -> Result<Option<String>, ContractError> {
    match lookup(object, path)? {
        None => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone())),
        Some(other) => Err(wrong_type(path, "a string", other)),
    }
}

fn get_i32(object: &Value, path: &[&str]) -> Result<Option<i32>, ContractError> {
    match lookup(object, path)? {
        None => Ok(None),
        Some(value) => value
            .as_i64()
            .and_then(|value| i32::try_from(value).ok())
            .map(Some)
            .ok_or_else(|| wrong_type(path, "a 32-bit integer", value)),
    }
}

fn decode<T: DeserializeOwned>(
    object: &Value,
    path: &[&str],
    expected: &'static str,
) -> Result<Option<T>, ContractError> {
    let Some(value) = lookup(object, path)? else {
        return Ok(None);
    };
    T::deserialize(value)
        .map(Some)
        .map_err(|source| ContractError::DecodeField {
            path: display_path(path),
            expected,
            source,
        })
}

fn wrong_type(path: &[&str], expected: &'static str, found: &Value) -> ContractError {
    ContractError::ReadField {
        path: display_path(path),
        expected,
        found: json_type(found),
    }
}

fn to_value<T: Serialize + ?Sized>(value: &T) -> Value {
    serde_json::to_value(value).expect("contract types serialize to JSON")
}

/// Writes `value` at `path`, creating missing or null parents as objects.
fn set(object: &mut Value, path: &[&str], value: Value) -> Result<(), ContractError> {
    let (field, parents) = path.split_last().expect("contract paths are not empty");
    let mut current = object;
    for (depth, segment) in parents.iter().enumerate() {
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
        let found = json_type(current);
        let Value::Object(fields) = current else {
            return Err(ContractError::WriteField {
                path: display_path(path),
                parent: display_path(&path[..depth]),
                found,
            });
        };
        current = fields.entry(*segment).or_insert(Value::Null);
    }
    if current.is_null() {
        *current = Value::Object(Map::new());
    }
    let found = json_type(current);
    let Value::Object(fields) = current else {
        return Err(ContractError::WriteField {
            path: display_path(path),
            parent: display_path(parents),
            found,
        });
    };
    fields.insert((*field).to_owned(), value);
    Ok(())
}
