//! Executions on a remote runner (`serve --runner`): a `toolweave runner` started as a command
//! and one listening on TCP with a token run the code while the gateway keeps the tools; a
//! runner killed mid-execution is named and the next execution connects again; a runner of
//! another protocol version, and one that lies (`tests/runner/lying_runner.py`), cannot move
//! the gateway's verdicts or stop it serving. The guest cases and the hostile guest corpus run
//! on a runner too (`cases.rs`, `tests/corpus/guest.rs`).

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use toolweave_testkit::harness::{Toolweave, fixture_config};

use super::{repo_root, toolweave};

/// A token long enough for a runner to take it.
const TOKEN: &str = "runner-test-token-0123456789";

/// The program every runner here runs: calls of both kinds at once, and a log line.
const PROGRAM: &str = "const [a, b] = await Promise.all([tools.fixture.add({ a: 1, b: 2 }), \
                       tools.fixture.add({ a: 3, b: 4 })]); console.log('sum', Number(a) + Number(b)); return a * b;";

fn runner_command() -> String {
    format!("{} runner", toolweave().display())
}

fn lying_runner(mode: &str) -> String {
    format!(
        "python3 {} {mode}",
        repo_root().join("tests/runner/lying_runner.py").display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_command_runs_javascript_and_python_and_the_gateway_keeps_the_tools() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let runner = runner_command();
    let server = Toolweave::start(toolweave(), &config, &["--runner", &runner])
        .await
        .unwrap();
    let execution = server.execute(PROGRAM, "javascript").await.unwrap();
    assert_eq!(execution.value().unwrap(), &json!(21), "{}", execution.text);
    assert!(
        execution.text.contains("--- console ---\nsum 10"),
        "{}",
        execution.text
    );
    let execution = server
        .execute(
            "import asyncio\na, b = await asyncio.gather(tools.fixture.add(a=2, b=5), tools.fixture.add(a=1, b=1))\nint(a) * int(b)",
            "python",
        )
        .await
        .unwrap();
    assert_eq!(execution.value().unwrap(), &json!(14), "{}", execution.text);
    // The runner's workers are the runner's: the gateway started none of its own.
    let gateway = server.process_id().unwrap();
    assert!(
        super::worker_processes(gateway).is_empty(),
        "the gateway started workers of its own: {:?}",
        super::worker_processes(gateway)
    );
    server.stop().await.unwrap();
}

/// `toolweave runner --listen 127.0.0.1:0 --token-env ...`, and the address it listens on.
async fn tcp_runner() -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(toolweave())
        .env("XDG_CONFIG_HOME", toolweave_testkit::harness::config_home())
        .args([
            "runner",
            "--listen",
            "127.0.0.1:0",
            "--token-env",
            "RUNNER_TOKEN",
        ])
        .env("RUNNER_TOKEN", TOKEN)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(address) = line.strip_prefix("toolweave runner: listening on ") {
                return address.to_owned();
            }
        }
        panic!("the runner ended before it listened");
    })
    .await
    .unwrap_or_else(|_| panic!("the runner did not listen within 20 s"));
    // The rest of its stderr is read (and dropped) so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, address)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_runner_takes_only_its_token() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let (_runner, address) = tcp_runner().await;
    let url = format!("tcp://{address}");
    let server = Toolweave::start_with_env(
        toolweave(),
        &config,
        &[
            "--runner",
            &url,
            "--runner-token-env",
            "GATEWAY_RUNNER_TOKEN",
        ],
        &[("GATEWAY_RUNNER_TOKEN", TOKEN)],
    )
    .await
    .unwrap();
    let execution = server.execute(PROGRAM, "javascript").await.unwrap();
    assert_eq!(execution.value().unwrap(), &json!(21), "{}", execution.text);
    server.stop().await.unwrap();

    let wrong = Toolweave::start_with_env(
        toolweave(),
        &config,
        &[
            "--runner",
            &url,
            "--runner-token-env",
            "GATEWAY_RUNNER_TOKEN",
        ],
        &[("GATEWAY_RUNNER_TOKEN", "not-the-token-at-all-0000")],
    )
    .await
    .unwrap();
    let execution = wrong.execute("return 1", "javascript").await.unwrap();
    assert!(execution.is_error);
    assert!(
        execution.text.contains("refused the connection")
            && execution.text.contains("token is missing or wrong"),
        "{}",
        execution.text
    );
    wrong.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_killed_mid_execution_is_named_and_the_next_execution_connects_again() {
    let (dir, config) = fixture_config(&["fixture"]).unwrap();
    let pids = dir.path().join("runner-pids");
    let runner = format!(
        "sh -c 'echo $$ >> {}; exec {} runner'",
        pids.display(),
        toolweave().display()
    );
    let server = Toolweave::start(
        toolweave(),
        &config,
        &["--runner", &runner, "--timeout-ms", "20000"],
    )
    .await
    .unwrap();
    assert_eq!(
        server
            .execute("return 1", "javascript")
            .await
            .unwrap()
            .value()
            .unwrap(),
        &json!(1)
    );
    let busy = server.execute("while (true) {}", "javascript");
    let kill = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        for pid in std::fs::read_to_string(&pids).unwrap().split_whitespace() {
            let pid = nix::unistd::Pid::from_raw(pid.parse().unwrap());
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    };
    let (execution, ()) = tokio::join!(busy, kill);
    let execution = execution.unwrap();
    assert_eq!(
        execution.error_kind(),
        Some("Internal"),
        "{}",
        execution.text
    );
    assert!(
        execution.text.contains("runner") && execution.text.contains("signal: 9"),
        "{}",
        execution.text
    );
    let execution = server.execute(PROGRAM, "javascript").await.unwrap();
    assert_eq!(execution.value().unwrap(), &json!(21), "{}", execution.text);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_of_another_version_is_named() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let runner = lying_runner("version");
    let server = Toolweave::start(toolweave(), &config, &["--runner", &runner])
        .await
        .unwrap();
    let execution = server.execute("return 1", "javascript").await.unwrap();
    assert!(
        execution
            .text
            .contains("speaks execution protocol version 99")
            && execution.text.contains("same toolweave version"),
        "{}",
        execution.text
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_runner_cannot_move_the_gateways_verdicts() {
    let (_dir, config) = fixture_config(&["fixture"]).unwrap();
    let runner = lying_runner("liar");
    let server = Toolweave::start(
        toolweave(),
        &config,
        &[
            "--runner",
            &runner,
            "--deny",
            "fixture.crash",
            "--timeout-ms",
            "2000",
            "--max-log-bytes",
            "100000",
        ],
    )
    .await
    .unwrap();
    // A timeout long before the deadline is not taken.
    let execution = server.execute("FORGE_TIMEOUT", "javascript").await.unwrap();
    assert_eq!(
        execution.error_kind(),
        Some("Internal"),
        "{}",
        execution.text
    );
    assert!(
        execution.text.contains("reported a timeout")
            && execution.text.contains("does not take that report"),
        "{}",
        execution.text
    );
    // A call the policy keeps out is refused here, whoever asks.
    let execution = server
        .execute("CALL:fixture.crash", "javascript")
        .await
        .unwrap();
    let answer = execution.value().unwrap();
    let refusal = answer["Err"].as_str().unwrap_or_default();
    assert!(refusal.contains("fixture.crash"), "{answer}");
    assert!(
        refusal.contains("denied") || refusal.contains("policy"),
        "{answer}"
    );
    // A call that is allowed goes through, answered by the real server.
    let execution = server
        .execute("CALL:fixture.add", "javascript")
        .await
        .unwrap();
    assert_eq!(execution.value().unwrap(), &json!({"Ok": "3"}));
    // More console output than the limit ends the execution at the gateway's limit.
    let execution = server.execute("FLOOD_LOG", "javascript").await.unwrap();
    assert_eq!(
        execution.error_kind(),
        Some("LogLimit"),
        "{}",
        execution.text
    );
    // A result over --max-result-bytes is the gateway's to keep: it becomes a result handle
    // in this session, as a local worker's would.
    let execution = server.execute("HUGE_RESULT", "javascript").await.unwrap();
    let answer = execution.value().unwrap();
    assert!(answer["handle"].is_string(), "{}", execution.text);
    assert_eq!(answer["bytes"], json!(4_000_002), "{}", execution.text);
    // A runner that says nothing ends at the gateway's deadline, and the gateway goes on.
    let started = std::time::Instant::now();
    let execution = server.execute("SILENT", "javascript").await.unwrap();
    assert_eq!(
        execution.error_kind(),
        Some("Timeout"),
        "{}",
        execution.text
    );
    assert!(started.elapsed() >= Duration::from_millis(2000));
    let execution = server.execute("return 7", "javascript").await.unwrap();
    assert_eq!(execution.value().unwrap(), &json!(7));
    server.stop().await.unwrap();
}
