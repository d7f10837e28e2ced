//! The SDK's integration tests: the generated code against the proto, and every call over both
//! transports between the SDK's servers and its client, on loopback.

mod generated_code;
mod transports;
