//! The API server driven by kube-rs, a real client, over real HTTP on loopback.
//!
//! Every test runs once per store backend (memory, SQLite and, with the `etcd` feature, a
//! fresh etcd process), each against its own server on a free port.

/// Generates, for each listed `async fn(TestServer)` of the calling module, one test per
/// backend: `<module>::memory::<test>`, `<module>::sqlite::<test>`, `<module>::etcd::<test>`.
macro_rules! backend_tests {
    ($($test:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::support::run(crate::support::Backend::Memory, super::$test).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::support::run(crate::support::Backend::Sqlite, super::$test).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::support::run(crate::support::Backend::Etcd, super::$test).await;
                }
            )*
        }
    };
}

mod support;

mod apply;
mod authn;
mod crud;
mod custom_resources;
mod errors;
mod etcd_member_loss;
mod gc;
mod hostile;
mod kind_rules;
mod limits;
mod machinery;
mod rbac;
mod runtime;
mod schema;
mod tls;
mod watch;
mod webhooks;
mod write_cache;
