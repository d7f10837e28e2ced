//! [`Provider`]: the one trait a provider written in Rust implements.

use async_trait::async_trait;

use crate::ProviderError;
use crate::v1;

/// An infrastructure provider: the calls of `corral.provider.v1.InfrastructureProvider`, with
/// the semantics `docs/provider-protocol.md` describes. [`crate::server`] serves an
/// implementation over gRPC or HTTP/JSON.
///
/// Every call may be repeated (after a timeout, a lost answer, a restart of either side), so
/// each is idempotent: `create_machine` returns the machine already created for
/// `machine.uid`, `delete_machine` of a machine that is gone says `deleted`.
///
/// The optional methods (`validate_config`, `list_machines`, `reboot_machine`) answer
/// `INTERNAL` unless implemented; a provider that implements one lists it in
/// [`v1::GetInfoResponse::capabilities`] ([`crate::capabilities`]).
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// The provider's name, version, contract versions (must include
    /// [`crate::CONTRACT_VERSION`]), capabilities and configuration schemas.
    async fn get_info(
        &self,
        request: v1::GetInfoRequest,
    ) -> Result<v1::GetInfoResponse, ProviderError>;

    /// Semantic checks of a configuration (capability `ValidateConfig`).
    async fn validate_config(
        &self,
        _request: v1::ValidateConfigRequest,
    ) -> Result<v1::ValidateConfigResponse, ProviderError> {
        Err(ProviderError::unimplemented("ValidateConfig"))
    }

    /// Brings the cluster's shared infrastructure up; called until `ready`.
    async fn reconcile_cluster(
        &self,
        request: v1::ReconcileClusterRequest,
    ) -> Result<v1::ReconcileClusterResponse, ProviderError>;

    /// Deletes the cluster's shared infrastructure; called until `deleted`.
    async fn delete_cluster(
        &self,
        request: v1::DeleteClusterRequest,
    ) -> Result<v1::DeleteClusterResponse, ProviderError>;

    /// Creates the machine, or returns the one already created for `machine.uid`.
    async fn create_machine(
        &self,
        request: v1::CreateMachineRequest,
    ) -> Result<v1::Machine, ProviderError>;

    /// The machine's state, or `NOT_FOUND`.
    async fn get_machine(
        &self,
        request: v1::GetMachineRequest,
    ) -> Result<v1::Machine, ProviderError>;

    /// Deletes the machine; called until `deleted`. A machine that is gone is deleted.
    async fn delete_machine(
        &self,
        request: v1::DeleteMachineRequest,
    ) -> Result<v1::DeleteMachineResponse, ProviderError>;

    /// Every machine held, of one cluster or all (capability `ListMachines`).
    async fn list_machines(
        &self,
        _request: v1::ListMachinesRequest,
    ) -> Result<v1::ListMachinesResponse, ProviderError> {
        Err(ProviderError::unimplemented("ListMachines"))
    }

    /// Reboots the machine (capability `RebootMachine`).
    async fn reboot_machine(
        &self,
        _request: v1::RebootMachineRequest,
    ) -> Result<v1::RebootMachineResponse, ProviderError> {
        Err(ProviderError::unimplemented("RebootMachine"))
    }
}
