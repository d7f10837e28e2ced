//! End-to-end tests: the real `corral` binary, started as a child process, driven by real
//! clients — kubectl, the official Python client and kube-rs — over loopback HTTPS, with the
//! kubeconfig the binary writes.
//!
//! Every test runs once per store backend: SQLite and, with the `etcd` feature, a fresh etcd
//! process. Each test gets its own data dir, its own server on a free port and, for etcd, its
//! own etcd.

/// Generates, for each listed `async fn(TestEnv)` of the calling module, one test per backend:
/// `<module>::sqlite::<test>` and, with the `etcd` feature, `<module>::etcd::<test>`.
/// Attributes written before a test name (such as `#[ignore = "..."]`) go on both.
macro_rules! backend_tests {
    ($($(#[$attribute:meta])* $test:ident),* $(,)?) => {
        mod sqlite {
            $(
                $(#[$attribute])*
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::support::run(crate::support::Backend::Sqlite, super::$test).await;
                }
            )*
        }
        mod etcd {
            $(
                $(#[$attribute])*
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::support::run(crate::support::Backend::Etcd, super::$test).await;
                }
            )*
        }
    };
}

mod support;

mod audit;
mod cli;
mod durability;
mod encryption;
mod first_run;
mod kubectl;
mod kubectl_machinery;
mod layering;
mod local_cluster;
mod local_demo;
mod local_drills;
mod local_provider;
mod move_clusters;
mod node_agent;
mod owner_references;
mod python_client;
mod rbac;
mod security;
