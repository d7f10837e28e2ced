//! Integration tests of the core controllers against a real (in-process) API server, with
//! generic test provider kinds whose provider is the test itself (as upstream's
//! `util/test/builder` generic providers), and a second API server as the workload cluster.

mod cluster;
mod cluster_cache;
mod machine;
mod machine_deployment;
mod machine_health_check;
mod machine_set;
mod support;
