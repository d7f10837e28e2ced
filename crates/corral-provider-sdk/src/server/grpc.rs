//! The gRPC server: tonic's generated service over a [`Provider`].

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

use super::ServeError;
use crate::Provider;
use crate::v1;
use crate::v1::infrastructure_provider_server::{
    InfrastructureProvider, InfrastructureProviderServer,
};

/// Serves `provider` over gRPC on `listener` until `shutdown` resolves.
pub async fn serve_grpc<P: Provider>(
    provider: Arc<P>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    tonic::transport::Server::builder()
        .add_service(InfrastructureProviderServer::new(Grpc(provider)))
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await
        .map_err(ServeError::Grpc)
}

/// The generated service's trait, forwarded to a [`Provider`].
struct Grpc<P>(Arc<P>);

/// One forwarding method per call: the message in, the answer or the error's status out.
macro_rules! forward {
    ($($method:ident($request:ty) -> $response:ty;)*) => {
        #[tonic::async_trait]
        impl<P: Provider> InfrastructureProvider for Grpc<P> {
            $(
                async fn $method(
                    &self,
                    request: Request<$request>,
                ) -> Result<Response<$response>, Status> {
                    self.0
                        .$method(request.into_inner())
                        .await
                        .map(Response::new)
                        .map_err(|error| error.to_status())
                }
            )*
        }
    };
}

forward! {
    validate_config(v1::ValidateConfigRequest) -> v1::ValidateConfigResponse;
    reconcile_cluster(v1::ReconcileClusterRequest) -> v1::ReconcileClusterResponse;
    delete_cluster(v1::DeleteClusterRequest) -> v1::DeleteClusterResponse;
    create_machine(v1::CreateMachineRequest) -> v1::Machine;
    get_machine(v1::GetMachineRequest) -> v1::Machine;
    delete_machine(v1::DeleteMachineRequest) -> v1::DeleteMachineResponse;
    list_machines(v1::ListMachinesRequest) -> v1::ListMachinesResponse;
    reboot_machine(v1::RebootMachineRequest) -> v1::RebootMachineResponse;
    get_info(v1::GetInfoRequest) -> v1::GetInfoResponse;
}
