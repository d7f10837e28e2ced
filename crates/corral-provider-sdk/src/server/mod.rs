//! Serving a [`Provider`] over either transport of the contract, on a listener the caller
//! bound: [`serve_grpc`] (tonic, the service `corral.provider.v1.InfrastructureProvider`) and
//! [`serve_http`] (`POST /<Method>` with canonical JSON bodies). Both run until `shutdown`
//! resolves. They serve plain HTTP/2 and HTTP/1.1; a provider reached over `grpcs://` or
//! `https://` sits behind a TLS-terminating proxy for now.

mod grpc;
mod http;

pub use self::grpc::serve_grpc;
pub use self::http::{router, serve_http};

/// A server that stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("serving gRPC")]
    Grpc(#[source] tonic::transport::Error),
    #[error("serving HTTP")]
    Http(#[source] std::io::Error),
}
