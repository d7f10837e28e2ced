//! The first five minutes, as a person sees them: `corral up --demo` on a terminal (a
//! pseudo-terminal from util-linux's `script`) and without one (a pipe into a file), the log
//! in the data directory instead of on the screen, `corral describe cluster --watch`, one
//! process per data directory, and stopping with Ctrl-C or SIGTERM.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::cli::{Process, corral_ok, eventually, start_up, text};

/// How long a process may take to exit once told to, or to fail at once. A deadline against
/// hanging, not a measure: CI machines are busy compiling.
const EXIT_DEADLINE: Duration = Duration::from_secs(120);

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("corral-first-run-")
        .tempdir()
        .unwrap()
}

/// Waits for `child` to exit; kills it and fails if it does not within [`EXIT_DEADLINE`].
async fn wait_exit(child: &mut Child, what: &str) -> ExitStatus {
    let deadline = tokio::time::Instant::now() + EXIT_DEADLINE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if tokio::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not exit within {EXIT_DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `text` without its ANSI escape sequences (CSI `ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The lines of `output` that a tracing subscriber wrote (a level between spaces).
fn log_lines(output: &str) -> Vec<String> {
    strip_ansi(output)
        .lines()
        .filter(|line| {
            [" TRACE ", " DEBUG ", " INFO ", " WARN ", " ERROR "]
                .iter()
                .any(|level| line.contains(level))
        })
        .map(String::from)
        .collect()
}

/// The log file of `data_dir`: it must hold the controllers' reconcile lines, and no secret.
fn assert_log_file_has_the_reconciles(data_dir: &Path) {
    let path = data_dir.join("corral.log");
    let log = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    assert!(
        log.lines()
            .any(|line| line.contains(" INFO ") && line.contains("reconcile{")),
        "no reconcile line in {}:\n{log}",
        path.display()
    );
    assert!(
        log.contains("Creating MachineSet default/demo-md-0"),
        "{log}"
    );
    for secret in ["PRIVATE KEY", "client-key-data", "token:"] {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
    assert!(
        !log.contains('\x1b'),
        "escape codes in the log file:\n{log}"
    );
}

/// The `script` of util-linux, which runs a command on a pseudo-terminal; the test fails when
/// it is missing rather than pass without a terminal.
fn script() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("script"))
                .find(|candidate| candidate.is_file())
        })
        .expect("`script` (util-linux) is needed to run corral on a pseudo-terminal: install util-linux")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_demo_on_a_terminal_draws_the_tree_and_logs_only_to_the_data_dir() {
    let dir = scratch();
    let data = dir.path().join("data");
    let screen = dir.path().join("screen");
    let command = format!(
        "exec '{}' up --demo --data-dir '{}' --listen 127.0.0.1:0",
        env!("CARGO_BIN_EXE_corral"),
        data.display()
    );
    // -q quiet, -f flush at once, -e exit with the child's status, -c the command; the
    // typescript file is not wanted: what the terminal shows is script's standard output.
    // `exec`: script runs the command with $SHELL, else /bin/sh; a shell left waiting (dash
    // does not exec a lone command) gets the Ctrl-C too and exits 130 whatever corral did.
    let mut terminal = Command::new(script())
        .args(["-qfec", &command, "/dev/null"])
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::from(std::fs::File::create(&screen).unwrap()))
        .stderr(Stdio::from(
            std::fs::File::create(dir.path().join("script.err")).unwrap(),
        ))
        .spawn()
        .expect("running script");
    let read_screen = || std::fs::read_to_string(&screen).unwrap_or_default();
    eventually("the demo to end with the Try lines", || {
        let exited = terminal.try_wait().ok().flatten();
        let shown = read_screen();
        async move {
            if let Some(status) = exited {
                panic!("corral up exited with {status}:\n{shown}");
            }
            shown
                .contains("corral scale md/demo-md-0 --replicas 5")
                .then_some(())
        }
    })
    .await;
    describe_watch_on_a_terminal_leaves_it_clean_on_ctrl_c(&data.join("kubeconfig"), dir.path())
        .await;

    // Ctrl-C, typed: the terminal sends SIGINT to corral.
    let mut keyboard = terminal.stdin.take().unwrap();
    keyboard.write_all(b"\x03").unwrap();
    keyboard.flush().unwrap();
    let status = wait_exit(&mut terminal, "corral up after Ctrl-C").await;
    let shown = read_screen();
    assert!(status.success(), "corral up exited with {status}:\n{shown}");

    // The checklist, the tree drawn in colour and redrawn in place, then what to try.
    let plain = strip_ansi(&shown);
    for step in ["✓ Store opened", "✓ Controllers started", "✓ Logging to"] {
        assert!(plain.contains(step), "no {step:?} on the screen:\n{plain}");
    }
    assert!(
        shown.contains("\x1b[?25l"),
        "the cursor was not hidden:\n{shown:?}"
    );
    assert!(
        shown.contains("A\x1b[J"),
        "the tree was not redrawn in place:\n{shown:?}"
    );
    assert!(shown.contains("\x1b[32m"), "no colour:\n{shown:?}");
    let available = plain.find("Cluster demo is available.").expect(&plain);
    let try_lines = plain
        .find("Try:\r\n  corral describe cluster demo --watch")
        .expect(&plain);
    assert!(available < try_lines, "{plain}");
    // The terminal is left clean: cursor shown and wrapping back on after the live view, and
    // the last line says where everything is kept.
    assert!(
        shown.rfind("\x1b[?25h") > shown.rfind("\x1b[?25l"),
        "the cursor is left hidden:\n{shown:?}"
    );
    assert!(
        shown.rfind("\x1b[?7h") > shown.rfind("\x1b[?7l"),
        "{shown:?}"
    );
    // The `^C` the terminal echoed is overwritten: the line starts over with a carriage
    // return and is cleared before it is written.
    let last = plain.trim_end().lines().last().unwrap_or("");
    let last = last.rsplit('\r').next().unwrap_or("");
    assert_eq!(
        last,
        format!(
            "Stopped; everything is kept in {} — `corral up --data-dir {}` resumes",
            data.display(),
            data.display()
        )
    );
    // No log line on the screen; the reconciles are in the data directory's log.
    assert_eq!(log_lines(&shown), Vec::<String>::new(), "{plain}");
    assert_log_file_has_the_reconciles(&data);
}

/// `corral describe cluster demo --watch` on a pseudo-terminal: the tree drawn, then Ctrl-C
/// exits 0 with the cursor shown, wrapping back on and no half line (the echoed `^C` cleared).
async fn describe_watch_on_a_terminal_leaves_it_clean_on_ctrl_c(kubeconfig: &Path, dir: &Path) {
    let screen = dir.join("watch-screen");
    let command = format!(
        "exec '{}' describe cluster demo --watch",
        env!("CARGO_BIN_EXE_corral")
    );
    let mut terminal = Command::new(script())
        .args(["-qfec", &command, "/dev/null"])
        .env("KUBECONFIG", kubeconfig)
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::from(std::fs::File::create(&screen).unwrap()))
        .stderr(Stdio::null())
        .spawn()
        .expect("running script");
    let read_screen = || std::fs::read_to_string(&screen).unwrap_or_default();
    eventually("describe --watch to draw the tree", || {
        let exited = terminal.try_wait().ok().flatten();
        let shown = read_screen();
        async move {
            if let Some(status) = exited {
                panic!("describe --watch exited with {status}:\n{shown}");
            }
            strip_ansi(&shown).contains("Cluster/demo").then_some(())
        }
    })
    .await;
    let mut keyboard = terminal.stdin.take().unwrap();
    keyboard.write_all(b"\x03").unwrap();
    keyboard.flush().unwrap();
    let status = wait_exit(&mut terminal, "describe --watch after Ctrl-C").await;
    let shown = read_screen();
    assert!(
        status.success(),
        "describe --watch exited with {status}:\n{shown:?}"
    );
    assert!(shown.starts_with("\x1b[?7l\x1b[?25l"), "{shown:?}");
    assert!(shown.ends_with("\r\x1b[K\x1b[?7h\x1b[?25h"), "{shown:?}");
    assert_eq!(log_lines(&shown), Vec::<String>::new(), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_demo_without_a_terminal_prints_one_line_per_change_and_stops_on_sigterm() {
    let dir = scratch();
    let data = dir.path().join("data");
    let output = dir.path().join("up.out");
    // As in CI or a pipe into tee: standard output and error to a file, RUST_LOG set.
    let mut up = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["up", "--demo", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::fs::File::create(&output).unwrap()))
        .stderr(Stdio::from(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&output)
                .unwrap(),
        ))
        .spawn()
        .expect("spawning corral up");
    let read = || std::fs::read_to_string(&output).unwrap_or_default();
    eventually("the demo cluster to be created", || async {
        read()
            .contains("Created the demo cluster demo")
            .then_some(())
    })
    .await;

    // describe --watch follows the same cluster, one line per change.
    let kubeconfig = data.join("kubeconfig");
    let watch_output = dir.path().join("watch.out");
    let mut watch = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["describe", "cluster", "demo", "--watch"])
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::fs::File::create(&watch_output).unwrap()))
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning corral describe --watch");

    eventually("the Try lines", || {
        let exited = up.try_wait().ok().flatten();
        let shown = read();
        async move {
            if let Some(status) = exited {
                panic!("corral up exited with {status}:\n{shown}");
            }
            shown
                .contains("corral scale md/demo-md-0 --replicas 5")
                .then_some(())
        }
    })
    .await;
    let shown = read();
    assert!(!shown.contains('\x1b'), "escape codes:\n{shown:?}");
    assert_eq!(log_lines(&shown), Vec::<String>::new(), "{shown}");
    // After the checklist: one line per state of the demo cluster, none twice in a row, the
    // last one available, then what to try.
    let after_created = shown
        .split_once("(a KubeadmControlPlane of 3 machines, 3 workers, in-memory):\n")
        .expect(&shown)
        .1;
    let (states, try_lines) = after_created.split_once("Try:\n").expect(&shown);
    let states: Vec<&str> = states.lines().collect();
    assert!(!states.is_empty(), "{shown}");
    for state in &states {
        assert!(
            state.starts_with("demo: ") && state.contains(" machines ready, ")
                || state.starts_with("demo: no machines yet"),
            "not a state line: {state:?} in:\n{shown}"
        );
    }
    for pair in states.windows(2) {
        assert_ne!(pair[0], pair[1], "a line repeated:\n{shown}");
    }
    assert_eq!(states.last(), Some(&"demo: 6/6 machines ready, available"));
    assert_eq!(
        try_lines,
        "  corral describe cluster demo --watch\n  corral get kubeconfig demo\n  corral scale md/demo-md-0 --replicas 5\n"
    );

    // The watch saw the cluster become available too, one line per change, and stops on
    // Ctrl-C (SIGINT) with exit 0.
    let watched = || std::fs::read_to_string(&watch_output).unwrap_or_default();
    eventually("describe --watch to show the cluster available", || async {
        watched()
            .contains("demo: 6/6 machines ready, available\n")
            .then_some(())
    })
    .await;
    let _ = Command::new("kill")
        .args(["-INT", &watch.id().to_string()])
        .status();
    let status = wait_exit(&mut watch, "describe --watch after SIGINT").await;
    let mut errors = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut errors).unwrap();
    assert!(status.success(), "describe --watch: {status}: {errors}");
    assert_eq!(errors, "");
    let watched = watched();
    assert!(!watched.contains('\x1b'), "{watched:?}");
    let lines: Vec<&str> = watched.lines().collect();
    assert!(
        lines.iter().all(|line| line.starts_with("demo: ")),
        "{watched}"
    );
    for pair in lines.windows(2) {
        assert_ne!(pair[0], pair[1], "a line repeated:\n{watched}");
    }

    // SIGTERM: a clean shutdown, one line, exit 0; the reconciles went to the log file.
    let _ = Command::new("kill")
        .args(["-TERM", &up.id().to_string()])
        .status();
    let status = wait_exit(&mut up, "corral up after SIGTERM").await;
    let shown = read();
    assert!(status.success(), "corral up exited with {status}:\n{shown}");
    assert_eq!(
        shown.trim_end().lines().last(),
        Some(
            format!(
                "Stopped; everything is kept in {} — `corral up --data-dir {}` resumes",
                data.display(),
                data.display()
            )
            .as_str()
        ),
        "{shown}"
    );
    assert_eq!(log_lines(&shown), Vec::<String>::new(), "{shown}");
    assert_log_file_has_the_reconciles(&data);
}

/// Runs `corral ARGS` on a data dir in use, which must fail at once with exit 1 and one line
/// naming the process that holds it, `pid` at `url`.
async fn assert_refused(args: &[&str], data: &Path, pid: u32, url: &str) {
    let mut second = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_exit(&mut second, &format!("a second corral {args:?}")).await;
    let output = second.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(status.code(), Some(1), "corral {args:?}: {stderr}");
    assert_eq!(
        text(&output.stdout),
        "",
        "corral {args:?} printed on stdout"
    );
    assert_eq!(
        stderr,
        format!(
            "error: {} is in use by corral (pid {pid}, listening on {url}); stop it first, or use another --data-dir\n",
            data.display()
        )
    );
}

/// The `server:` URL of a kubeconfig.
fn server_url(kubeconfig: &Path) -> String {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    text.lines()
        .find_map(|line| line.trim().strip_prefix("server:"))
        .map(|url| url.trim().to_string())
        .unwrap_or_else(|| panic!("no server in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_per_data_dir_and_kill_9_leaves_no_stale_lock() {
    let dir = scratch();
    let data = dir.path().join("data");
    let (first, kubeconfig) = start_up(&data, dir.path().join("up.log")).await;
    let url = server_url(&kubeconfig);

    assert_refused(&["up"], &data, first.pid(), &url).await;
    assert_refused(&["apiserver"], &data, first.pid(), &url).await;
    // The refused ones neither wrote into the data dir nor took it over: the first keeps
    // serving at its address, with its kubeconfig.
    assert_eq!(server_url(&kubeconfig), url);
    let providers = corral_ok(&kubeconfig, &["get", "providers"]);
    assert!(providers.contains("cluster-api"), "{providers}");
    let up_log = first.log();
    assert!(!up_log.contains("error"), "{up_log}");

    // kill -9: the kernel drops the lock with the process, and a new server starts at once.
    first.kill_9();
    let second = Process::spawn(
        &[
            "apiserver",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        dir.path().join("apiserver.log"),
    );
    eventually("the new server's kubeconfig", || async {
        (data.join("kubeconfig").exists() && server_url(&data.join("kubeconfig")) != url)
            .then_some(())
    })
    .await;
    // What the first one made is served by the new one.
    let providers = corral_ok(&kubeconfig, &["get", "providers"]);
    assert!(providers.contains("cluster-api"), "{providers}");
    assert_refused(&["up"], &data, second.pid(), &server_url(&kubeconfig)).await;

    // SIGTERM: the API server stops cleanly, saying where everything is kept.
    let status = second.terminate();
    let said = std::fs::read_to_string(dir.path().join("apiserver.log")).unwrap();
    assert!(
        status.success(),
        "corral apiserver exited with {status}:\n{said}"
    );
    assert_eq!(
        said.trim_end().lines().last(),
        Some(
            format!(
                "Stopped; everything is kept in {} — `corral apiserver --data-dir {}` resumes",
                data.display(),
                data.display()
            )
            .as_str()
        ),
        "{said}"
    );
}
