//! Two candidates on one Lease: only one acts; the other takes over when the leader dies or
//! steps down.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use corral_cli::Connection;
use corral_cli::leader::{LeaderElection, run_as_leader};
use corral_testenv::{TestEnv, eventually};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;

const DEADLINE: Duration = Duration::from_secs(60);

/// Who is acting, and the most that ever acted at once.
#[derive(Default)]
struct Acting {
    now: AtomicUsize,
    most: AtomicUsize,
    leaders: std::sync::Mutex<Vec<String>>,
}

fn election(identity: &str) -> LeaderElection {
    LeaderElection {
        namespace: "corral-system".into(),
        name: "test-controllers".into(),
        identity: identity.into(),
        // Short, so that a take-over after a crash happens within the test.
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(200),
    }
}

/// A candidate whose work counts itself as acting until told to stop; stops when `stop`
/// fires.
fn candidate(
    env: &TestEnv,
    identity: &'static str,
    acting: Arc<Acting>,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<Result<(), corral_cli::Error>> {
    let connection = Connection::for_url(&env.url()).unwrap();
    tokio::spawn(async move {
        run_as_leader(
            &connection,
            &election(identity),
            async move {
                let _ = stop.await;
            },
            |_| {},
            move |lost| async move {
                let now = acting.now.fetch_add(1, Ordering::SeqCst) + 1;
                acting.most.fetch_max(now, Ordering::SeqCst);
                acting.leaders.lock().unwrap().push(identity.to_string());
                lost.await;
                acting.now.fetch_sub(1, Ordering::SeqCst);
            },
        )
        .await
    })
}

async fn holder(env: &TestEnv) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), "corral-system");
    leases
        .get_opt("test-controllers")
        .await
        .unwrap()
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_of_two_candidates_acts_and_the_other_takes_over_when_it_dies() {
    let env = TestEnv::start().await;
    let acting = Arc::new(Acting::default());
    let (_stop_a, stop_a) = tokio::sync::oneshot::channel();
    let (_stop_b, stop_b) = tokio::sync::oneshot::channel();
    let a = candidate(&env, "a", acting.clone(), stop_a);
    let b = candidate(&env, "b", acting.clone(), stop_b);

    let first = eventually(DEADLINE, "a leader", || async {
        (acting.now.load(Ordering::SeqCst) == 1).then(|| acting.leaders.lock().unwrap()[0].clone())
    })
    .await;
    assert_eq!(holder(&env).await.as_deref(), Some(first.as_str()));

    // The leader dies without releasing: its task is gone, its Lease is no longer renewed.
    let (dead, survivor, survivor_name) = if first == "a" {
        (a, b, "b")
    } else {
        (b, a, "a")
    };
    dead.abort();
    let _ = dead.await;
    eventually(DEADLINE, "the other candidate to take over", || async {
        (holder(&env).await.as_deref() == Some(survivor_name)
            && acting.now.load(Ordering::SeqCst) == 1)
            .then_some(())
    })
    .await;
    assert_eq!(
        *acting.leaders.lock().unwrap(),
        vec![first.clone(), survivor_name.to_string()]
    );
    assert_eq!(
        acting.most.load(Ordering::SeqCst),
        1,
        "two candidates acted at once"
    );
    survivor.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_shuts_down_releases_the_lease() {
    let env = TestEnv::start().await;
    let acting = Arc::new(Acting::default());
    let (stop_a, stop_a_rx) = tokio::sync::oneshot::channel();
    let a = candidate(&env, "a", acting.clone(), stop_a_rx);
    eventually(DEADLINE, "a to lead", || async {
        (holder(&env).await.as_deref() == Some("a")).then_some(())
    })
    .await;
    let (_stop_b, stop_b_rx) = tokio::sync::oneshot::channel();
    let b = candidate(&env, "b", acting.clone(), stop_b_rx);

    stop_a.send(()).unwrap();
    a.await.unwrap().expect("a shuts down cleanly");
    // Released: no holder until b takes it, and b takes it.
    eventually(DEADLINE, "b to lead", || async {
        (holder(&env).await.as_deref() == Some("b")).then_some(())
    })
    .await;
    eventually(DEADLINE, "b to act", || async {
        (acting.leaders.lock().unwrap().as_slice() == ["a", "b"]).then_some(())
    })
    .await;
    assert_eq!(
        acting.most.load(Ordering::SeqCst),
        1,
        "two candidates acted at once"
    );
    b.abort();
}
