//! The official Python client (`pip install kubernetes`) against the real server: runs
//! tests/python/test_client.py, which holds the checks, and requires it to succeed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::support::{TestEnv, tool_available};

backend_tests!(python_client_script);

/// How long the whole script may take; it needs a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(180);

async fn python_client_script(env: TestEnv) {
    let has_client = Command::new("python3")
        .args(["-c", "import kubernetes"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|status| status.success());
    if !tool_available(
        has_client,
        "the Python kubernetes client",
        "CORRAL_REQUIRE_PYTHON_CLIENT",
        "python3 -m pip install kubernetes",
    ) {
        return;
    }
    let server = env.start_server().await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/test_client.py");
    let run = Command::new("python3")
        .arg(&script)
        .arg(server.kubeconfig())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(SCRIPT_DEADLINE, run).await {
        Ok(output) => output.expect("running python3"),
        Err(_) => panic!(
            "{} did not finish within {SCRIPT_DEADLINE:?}",
            script.display()
        ),
    };
    assert!(
        output.status.success(),
        "{} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
