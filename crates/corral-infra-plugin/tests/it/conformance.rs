//! The conformance suite of `corral provider test` (`corral_provider_sdk::conformance`)
//! against the example providers as processes: both pass every check; the Python one started
//! to break the contract (`--misbehave`) fails the checks it breaks, with lines saying why.

use corral_provider_sdk::conformance::{self, Check, Outcome, Settings};

use super::e2e::ProviderProcess;

async fn lines(provider: &ProviderProcess) -> (Vec<Check>, Vec<String>) {
    let settings = Settings {
        wait: std::time::Duration::from_secs(30),
        ..Settings::default()
    };
    let mut lines = Vec::new();
    let checks = conformance::run(&provider.client(), &settings, |check| {
        lines.push(check.to_string())
    })
    .await;
    (checks, lines)
}

fn failed(checks: &[Check]) -> Vec<&'static str> {
    checks
        .iter()
        .filter(|check| matches!(check.outcome, Outcome::Fail(_)))
        .map(|check| check.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_examples_pass() {
    for provider in [
        ProviderProcess::python(&[]).await,
        ProviderProcess::rust().await,
    ] {
        let (checks, lines) = lines(&provider).await;
        assert!(failed(&checks).is_empty(), "{lines:#?}");
        for expected in [
            "PASS GetInfo shape",
            "PASS GetInfo contract v1",
            "PASS CreateMachine idempotent by uid",
            "PASS GetMachine until RUNNING or FAILED",
            "PASS GetMachine NOT_FOUND after delete",
            "PASS DeleteMachine idempotent",
            "PASS GetMachine of an unknown machine is NOT_FOUND",
            "PASS DeleteCluster until deleted",
        ] {
            assert!(
                lines.iter().any(|line| line == expected),
                "{expected}: {lines:#?}"
            );
        }
        assert!(
            provider.machine_uids().await.is_empty(),
            "the suite leaves nothing behind"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_makes_duplicates_fails() {
    let provider = ProviderProcess::python(&["--misbehave", "duplicates"]).await;
    let (checks, lines) = lines(&provider).await;
    assert_eq!(
        failed(&checks),
        [
            "CreateMachine idempotent by uid",
            "ListMachines lists the machine once",
            "ListMachines forgets the deleted machine",
        ],
        "{lines:#?}"
    );
    let line = lines
        .iter()
        .find(|line| line.starts_with("FAIL CreateMachine idempotent by uid: "))
        .unwrap();
    assert!(line.contains("a second machine"), "{line}");
    assert!(
        lines.contains(&"PASS GetInfo shape".to_owned()),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_answers_garbage_fails() {
    let provider = ProviderProcess::python(&["--misbehave", "garbage"]).await;
    let (checks, lines) = lines(&provider).await;
    assert_eq!(
        failed(&checks),
        ["GetMachine until RUNNING or FAILED"],
        "{lines:#?}"
    );
    let line = lines
        .iter()
        .find(|line| line.starts_with("FAIL GetMachine until RUNNING or FAILED: "))
        .unwrap();
    assert!(line.contains("GetMachine: answered garbage"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_of_another_contract_fails_at_get_info() {
    let provider = ProviderProcess::python(&["--contract", "v2"]).await;
    let (checks, lines) = lines(&provider).await;
    assert_eq!(failed(&checks), ["GetInfo contract v1"], "{lines:#?}");
    assert_eq!(checks.len(), 3, "nothing else is called: {lines:#?}");
}
